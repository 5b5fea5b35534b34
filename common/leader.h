/*
 * common/leader.h - leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * tools/leaderelection does it (LeaseLock, ReleaseOnCancel).
 *
 * Two layers. The decision core (common_leader_decide) is a pure function: given the Lease
 * last read from the API server (or that it is absent, or that the read failed), our identity,
 * the local time at which the Lease's resourceVersion last changed, whether we lead and when we
 * last renewed, and now, it answers WAIT, CREATE, ACQUIRE, RENEW or LOST together with the
 * Lease fields to write. It does no I/O and reads no clock. The glue (common_leader_start) is a
 * thread that reads the Lease every retry period, asks the core, writes with optimistic
 * concurrency (the update carries the resourceVersion read; 409 means another candidate won
 * the race) and calls the callbacks.
 *
 * Expiry follows client-go: a Lease held by someone else is valid until observed_time +
 * leaseDurationSeconds, where observed_time is when *we* saw its resourceVersion change, on our
 * own monotonic clock; renewTime written by the holder is never compared with our clock, so
 * clock skew between candidates does not matter. Defaults are client-go's: lease duration 15 s,
 * renew deadline 10 s, retry period 2 s. A leader that has not renewed for the renew deadline
 * loses leadership (stopped_leading) and goes back to acquiring. common_leader_is_leader also
 * answers false once the renew deadline has passed, even while the glue thread is still stuck
 * in a slow request, so a leader never acts on an expired claim.
 */
#ifndef COMMON_LEADER_H
#define COMMON_LEADER_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct common_kube;

/* client-go defaults (leaderelection.LeaderElectionConfig as kube-scheduler sets it) */
#define COMMON_LEADER_LEASE_DURATION_S 15
#define COMMON_LEADER_RENEW_DEADLINE_S 10.0
#define COMMON_LEADER_RETRY_PERIOD_S 2.0
/* client-go's JitterFactor: renew deadline must exceed 1.2 x retry period */
#define COMMON_LEADER_JITTER_FACTOR 1.2
/* the largest identity common_leader_identity makes and common_leader_start accepts (bytes,
 * terminator excluded); events.k8s.io limits reportingInstance to 128 */
#define COMMON_LEADER_IDENTITY_MAX 128

struct common_leader_timing {
    int lease_duration_s;    /* leaseDurationSeconds written; default 15 */
    double renew_deadline_s; /* a leader that cannot renew for this long steps down; default 10 */
    double retry_period_s;   /* time between attempts; default 2 */
};

/* The LeaderElectionRecord part of a Lease's spec. Times are wall-clock microseconds since the
 * Unix epoch (MicroTime); 0 = not set. Strings are borrowed. */
struct common_leader_record {
    const char *holder; /* holderIdentity; NULL or "" = nobody */
    int lease_duration_s;
    int64_t acquire_time_us;
    int64_t renew_time_us;
    int transitions; /* leaseTransitions */
};

enum common_leader_seen {
    COMMON_LEADER_SEEN_LEASE,  /* the Lease was read; rec and observed_time are set */
    COMMON_LEADER_SEEN_ABSENT, /* the Lease does not exist (404) */
    COMMON_LEADER_SEEN_ERROR   /* the read failed: nothing is known */
};

struct common_leader_input {
    const char *identity;               /* ours */
    struct common_leader_timing timing; /* see common_leader_timing_default */
    enum common_leader_seen seen;       /* what the last read found */
    struct common_leader_record rec;    /* the Lease read, when seen == SEEN_LEASE */
    double observed_time;               /* local monotonic s when its resourceVersion changed */
    int leading;                        /* we lead now */
    double last_renew;                  /* local monotonic s our last acquire/renew started */
    double now;                         /* local monotonic s */
    int64_t wall_now_us;                /* wall clock for the times written, microseconds */
};

enum common_leader_action {
    COMMON_LEADER_WAIT,    /* not ours to take: try again after the retry period */
    COMMON_LEADER_CREATE,  /* no Lease: create it with out->rec */
    COMMON_LEADER_ACQUIRE, /* free, released or expired: take it over (update with out->rec) */
    COMMON_LEADER_RENEW,   /* ours: update with out->rec (new renewTime) */
    COMMON_LEADER_LOST     /* we led and no longer may: stop leading, then try again */
};

struct common_leader_decision {
    enum common_leader_action action;
    struct common_leader_record rec; /* to write, for CREATE, ACQUIRE and RENEW (holder is
                                        in->identity) */
    const char *why;                 /* a constant phrase for logs and tests */
};

/* common_leader_timing_default - 15 s / 10 s / 2 s. */
struct common_leader_timing common_leader_timing_default(void);

/*
 * common_leader_timing_check - client-go's checks: lease duration > renew deadline > 1.2 x
 * retry period > 0. Returns COMMON_OK or COMMON_EINVAL naming the rule broken.
 */
enum common_rc common_leader_timing_check(const struct common_leader_timing *t,
                                          struct common_error *err);

/*
 * common_leader_decide - the pure decision, in this order (client-go tryAcquireOrRenew, plus
 * the renew deadline of its renew loop):
 *   1. leading and now - last_renew >= renew deadline          -> LOST
 *   2. the read failed                                          -> WAIT
 *   3. no Lease                                                 -> CREATE, transitions 0
 *   4. holder is us                                             -> RENEW (acquireTime and
 *                                                                  transitions kept)
 *   5. leading, but the holder is someone else or nobody        -> LOST
 *   6. holder someone else and observed_time + its duration > now -> WAIT
 *   7. holder nobody (released) or expired                      -> ACQUIRE, transitions + 1
 * Written records get our identity, timing.lease_duration_s and renewTime = wall_now_us
 * (acquireTime too, except on RENEW). Never fails; in and out must not be NULL.
 */
void common_leader_decide(const struct common_leader_input *in, struct common_leader_decision *out);

/*
 * common_leader_release_record - the record client-go writes on release (ReleaseOnCancel):
 * holder "", leaseDurationSeconds 1, acquireTime = renewTime = wall_now_us, transitions kept,
 * so the next candidate acquires at once.
 */
struct common_leader_record common_leader_release_record(const struct common_leader_record *old,
                                                         int64_t wall_now_us);

/* common_leader_action_name - "wait", "create", "acquire", "renew" or "lost". */
const char *common_leader_action_name(enum common_leader_action a);

/*
 * common_leader_format_microtime - us (microseconds since the epoch, UTC) as a metav1.MicroTime
 * string, "2006-01-02T15:04:05.000000Z", into buf (at least 32 bytes). Returns 0, or -1 when
 * buf is too small or the time out of range.
 */
int common_leader_format_microtime(int64_t us, char *buf, size_t size);

/*
 * common_leader_parse_microtime - an RFC 3339 time (metav1.Time or MicroTime: optional
 * fraction of up to 9 digits, "Z" or a +hh:mm / -hh:mm offset) into microseconds since the
 * epoch (the fraction beyond microseconds is cut). Returns 0, or -1 when s is not such a time.
 */
int common_leader_parse_microtime(const char *s, int64_t *us);

/*
 * common_leader_identity - a holder identity unique to this process, as client-go builds it
 * from the hostname and a UUID: "<hostname>_<pid>_<16 hex random>", cut to fit size and
 * COMMON_LEADER_IDENTITY_MAX (the random part is always kept). size at least 32.
 * Returns COMMON_OK or COMMON_EINVAL (buf too small).
 */
enum common_rc common_leader_identity(char *buf, size_t size, struct common_error *err);

/* ---- the glue thread ---- */

struct common_leader;

/*
 * Callbacks run on the election thread, one at a time, and must return soon (start workers
 * from started_leading rather than working in it) and must not call common_leader_stop.
 * Any slot may be NULL. new_leader gets the new holder each time the observed holder changes
 * to a non-empty identity (ours included); the string is borrowed for the call.
 */
struct common_leader_callbacks {
    void (*started_leading)(void *ctx);
    void (*stopped_leading)(void *ctx);
    void (*new_leader)(void *ctx, const char *identity);
    void *ctx;
};

/*
 * common_leader_start - start electing on Lease ns/name with identity (copied; at most
 * COMMON_LEADER_IDENTITY_MAX bytes; make one with common_leader_identity) and cb (copied).
 * timing NULL = defaults. kube is borrowed and must outlive the elector; since a renew cannot
 * be cut short while a request is in flight, give kube a timeout_ms below the renew deadline
 * (is_leader is still safe without it). Returns the running elector, or NULL with err set
 * (COMMON_EINVAL: empty ns/name/identity, identity too long, bad timing; COMMON_ENOMEM;
 * COMMON_EIO: the thread could not be started).
 */
struct common_leader *common_leader_start(struct common_kube *kube, const char *ns,
                                          const char *name, const char *identity,
                                          const struct common_leader_callbacks *cb,
                                          const struct common_leader_timing *timing,
                                          struct common_error *err);

enum common_leader_stop_mode {
    COMMON_LEADER_RELEASE, /* give the Lease up, as ReleaseOnCancel (normal shutdown) */
    COMMON_LEADER_ABANDON  /* write nothing more: others wait for the Lease to expire (what a
                              crash looks like; for tests and fatal paths) */
};

/*
 * common_leader_stop - stop the thread (waits for an API call in flight to end), release the
 * Lease when mode is COMMON_LEADER_RELEASE and we lead, call stopped_leading if we led, and
 * free le. NULL is a no-op.
 */
void common_leader_stop(struct common_leader *le, enum common_leader_stop_mode mode);

/*
 * common_leader_is_leader - 1 while we hold the Lease and our last successful acquire/renew
 * started less than the renew deadline ago, else 0. Thread-safe; cheap (one lock).
 */
int common_leader_is_leader(struct common_leader *le);

/* common_leader_identity_of - le's identity (borrowed; valid until common_leader_stop). */
const char *common_leader_identity_of(const struct common_leader *le);

#endif
