/*
 * trainjob/status.h - the TrainJob status a reconcile writes, and the activeDeadlineSeconds check.
 *
 * The pure core of steps 5-8 of Trainer's reconcile loop (../shared/reference/trainer.md §2.1):
 * from the TrainJob as read, the JobSet it owns (or its absence) and an explicit `now`, it
 * derives the new `status` object, decides whether the deadline has passed, and whether a status
 * write is needed. The reconciler does the I/O around it: read both objects, call
 * trainjob_status_derive, then trainjob_deadline (on deadline FAIL: trainjob_status_deadline_
 * exceeded and delete the JobSet), then merge-patch `status` when trainjob_status_changed.
 *
 * Rules (trainer.md §4.1, §4.2, §2.10):
 *  - conditions are a list-map by `type`: upserted, never removed; an upsert changes
 *    lastTransitionTime only when `status` changes (as Kubernetes' meta.SetStatusCondition);
 *  - Suspended: True/Suspended/"TrainJob is suspended" on every reconcile while spec.suspend;
 *    False/Resumed/"TrainJob is resumed" when spec.suspend is false and the condition was True;
 *    never added for a job that was never suspended;
 *  - Complete / Failed: copied from the JobSet's Completed=True / Failed=True (reason, message,
 *    lastTransitionTime); a Failed=True condition with reason DeadlineExceeded is kept as is;
 *  - jobsStatus: replaced wholesale by the JobSet's status.replicatedJobsStatus (name, ready,
 *    succeeded, failed, active, suspended; a missing counter is 0); none -> no jobsStatus key;
 *  - everything else in the status (trainerStatus, written by the status server) is kept.
 *
 * Times: `now` and every duration are whole seconds (seconds since the Unix epoch, UTC).
 * Condition times are RFC 3339 strings, "2006-01-02T15:04:05Z". No I/O, no clock, no globals.
 */
#ifndef TRAINJOB_STATUS_H
#define TRAINJOB_STATUS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"

#define TRAINJOB_DEADLINE_REASON "DeadlineExceeded"
#define TRAINJOB_DEADLINE_MESSAGE "TrainJob exceeded its active deadline"

/* Room for an RFC 3339 second-precision time, "2006-01-02T15:04:05Z" plus NUL (and years > 9999
 * just in case). */
#define TRAINJOB_TIME_MAX 32

/*
 * trainjob_format_time - t (seconds since the epoch) as "2006-01-02T15:04:05Z" into buf.
 * Returns 0, or -1 when size < TRAINJOB_TIME_MAX or t is out of range (buf is "" then).
 */
int trainjob_format_time(int64_t t, char *buf, size_t size);

/*
 * trainjob_parse_time - an RFC 3339 time (fraction and +hh:mm offsets allowed) into seconds
 * since the epoch, the fraction dropped. Returns 0, or -1 when s is NULL or not such a time.
 */
int trainjob_parse_time(const char *s, int64_t *t);

/*
 * trainjob_is_finished - whether status (a TrainJob `status` object, may be NULL) has
 * Complete=True or Failed=True.
 */
int trainjob_is_finished(const json_t *status);

struct trainjob_status_result {
    json_t *status;  /* new reference: the whole new `status` object (never NULL on COMMON_OK) */
    int finished;    /* the new status has Complete=True or Failed=True */
    int jobset_gone; /* the TrainJob was finished and its JobSet is gone: status is a copy of the
                        old one (JobSet TTL deletion is tolerated) */
};

/*
 * trainjob_status_derive - the status after steps 5 and 6 of the reconcile (§2.1, §4).
 * In: trainjob = the TrainJob as read (borrowed, not modified); jobset = the JobSet it owns as
 * read, or NULL when the API server answered NotFound; now = seconds since the epoch (the
 * lastTransitionTime of a changed condition, and of a JobSet condition without one).
 * a is reserved for scratch data and may be NULL: the result does not live in it.
 * Out: *out (zeroed here); release out->status with json_decref.
 * Returns COMMON_OK; COMMON_ENOTFOUND when jobset is NULL and the TrainJob is not finished (the
 * caller requeues; out->status is NULL); COMMON_EINVAL when trainjob is not an object or
 * `status`/`status.conditions` has the wrong type; COMMON_ENOMEM. err says which.
 */
enum common_rc trainjob_status_derive(struct common_arena *a, const json_t *trainjob,
                                      const json_t *jobset, int64_t now,
                                      struct trainjob_status_result *out, struct common_error *err);

enum trainjob_deadline_action {
    TRAINJOB_DEADLINE_NONE,    /* no deadline applies: unset/0, finished or suspended */
    TRAINJOB_DEADLINE_REQUEUE, /* not yet: reconcile again after requeue_after seconds */
    TRAINJOB_DEADLINE_FAIL     /* passed: set Failed=True DeadlineExceeded, delete the JobSet */
};

struct trainjob_deadline_result {
    enum trainjob_deadline_action action;
    int64_t requeue_after; /* seconds, >= 1, with TRAINJOB_DEADLINE_REQUEUE; else 0 */
    int64_t deadline;      /* start + activeDeadlineSeconds (seconds since the epoch), or 0 */
};

/*
 * trainjob_deadline - the activeDeadlineSeconds check (§2.10, step 7 of §2.1).
 * In: trainjob (borrowed); status = the status to judge (the one trainjob_status_derive
 * returned), or NULL to use trainjob's own `status`; now in seconds since the epoch.
 * Skipped (NONE) when spec.activeDeadlineSeconds is unset or 0, the status is finished, or
 * spec.suspend is true. Start = the lastTransitionTime of a Suspended=False condition (the last
 * resume) when there is one, else metadata.creationTimestamp. now > start + deadline gives
 * FAIL; otherwise REQUEUE after max(1, start + deadline - now).
 * Returns COMMON_OK, or COMMON_EINVAL (err names the field) when activeDeadlineSeconds is not a
 * non-negative integer or the start time is missing or not RFC 3339 (out->action is NONE then).
 */
enum common_rc trainjob_deadline(const json_t *trainjob, const json_t *status, int64_t now,
                                 struct trainjob_deadline_result *out, struct common_error *err);

/*
 * trainjob_status_deadline_exceeded - upsert Failed=True, reason DeadlineExceeded, message
 * "TrainJob exceeded its active deadline" into status (an object, modified in place; its
 * `conditions` array is created when missing); lastTransitionTime = now unless Failed was
 * already True. Every `jobsStatus` entry gets active 0 and ready 0: the JobSet is deleted with
 * its Jobs, and, gone, it never reports that (the other counters are kept). Returns COMMON_OK,
 * COMMON_EINVAL (status not an object, conditions not an array), COMMON_ENOMEM.
 */
enum common_rc trainjob_status_deadline_exceeded(json_t *status, int64_t now,
                                                 struct common_error *err);

/*
 * trainjob_status_set_condition - upsert condition `type` into status (an object, modified in
 * place; `conditions` is created when missing) as Kubernetes' meta.SetStatusCondition does:
 * lastTransitionTime = now (seconds since the epoch) when the condition is new or its status
 * changes, else kept; reason and message always replaced (message NULL = ""). cstatus is
 * "True", "False" or "Unknown". Returns COMMON_OK, COMMON_EINVAL (status not an object,
 * conditions not an array, type/cstatus/reason NULL), COMMON_ENOMEM.
 */
enum common_rc trainjob_status_set_condition(json_t *status, const char *type, const char *cstatus,
                                             const char *reason, const char *message, int64_t now,
                                             struct common_error *err);

/*
 * trainjob_status_remove_condition - drop condition `type` from status (modified in place; an
 * emptied `conditions` key is removed). Returns 1 when one was removed, else 0.
 */
int trainjob_status_remove_condition(json_t *status, const char *type);

/* trainjob_status_condition - condition `type` of status (borrowed), or NULL. */
const json_t *trainjob_status_condition(const json_t *status, const char *type);

/*
 * trainjob_status_changed - 1 when new_status differs from old_status (deep JSON equality,
 * object key order ignored) so that a status write is needed, else 0. NULL counts as an empty
 * object on either side.
 */
int trainjob_status_changed(const json_t *old_status, const json_t *new_status);

#endif
