/*
 * common/events.h - an events.k8s.io/v1 Event recorder, after client-go's tools/events.
 *
 * common_events_record never blocks on the API server: it updates an in-memory cache and puts a
 * write on a bounded queue that one background thread sends. Repeats are aggregated as the new
 * events API does: an occurrence with the same regarding object, reason, action, type and
 * (truncated) note as one seen less than the series window (6 min) before is not a new Event;
 * the first Event gets series {count, lastObservedTime} (count 2 from the second occurrence),
 * sent as a merge PATCH, or folded into a write still waiting in the queue. A PATCH that finds
 * the Event gone (404) creates it again, series included, as client-go does. The cache is an
 * LRU bounded to cache_max keys (4096).
 *
 * Writes per regarding object pass a token bucket (client-go's spam filter: burst 25, one token
 * back every 5 min, LRU of cache_max objects); a write over the limit, or one that finds the
 * queue full, is dropped and counted, while the occurrence still counts in its series, so the
 * next write that goes through carries the right count. Failed writes are not retried beyond
 * the client's own retries (common/kube.h); they are counted.
 *
 * Event names are "<regarding name>.<16 hex random>" (the name cut so the whole fits 253
 * bytes); the Event's namespace is the regarding object's, or "default" for cluster-scoped
 * objects (API validation requires that). reportingController defaults to "trainsched";
 * reportingInstance is the identity given at create (e.g. common_leader_identity's).
 */
#ifndef COMMON_EVENTS_H
#define COMMON_EVENTS_H

#include <stddef.h>

#include "common/error.h"

struct common_kube;
struct common_events;

/* the largest note kept, in bytes (events.k8s.io validation); longer ones end in "..." */
#define COMMON_EVENTS_NOTE_MAX 1024
/* the largest reason, action, reportingController and reportingInstance, in bytes */
#define COMMON_EVENTS_FIELD_MAX 128

/* The object an Event is about (an ObjectReference); strings borrowed for the call. kind and
 * name are required; namespace NULL or "" for cluster-scoped objects; uid may be NULL. */
struct common_event_ref {
    const char *api_version; /* "v1", "trainer.kubeflow.org/v1alpha1" */
    const char *kind;
    const char *namespace;
    const char *name;
    const char *uid;
};

enum common_event_type { COMMON_EVENT_NORMAL, COMMON_EVENT_WARNING };

struct common_events_opts {
    const char *reporting_controller; /* default "trainsched" */
    size_t queue_max;                 /* writes waiting; default 1000 (client-go maxQueuedEvents) */
    size_t cache_max;                 /* aggregation keys and rate-limited objects; default 4096 */
    int burst;                        /* writes per object at once; default 25 */
    double refill_s;                  /* seconds per token regained; default 300 */
    double series_window_s;           /* repeats closer than this aggregate; default 360 */
    long drain_ms;                    /* destroy sends queued writes for up to this; default 5000 */
};

/* Counters since create (all monotonic). */
struct common_events_stats {
    unsigned long recorded;     /* calls accepted by common_events_record */
    unsigned long aggregated;   /* of them, repeats counted into a series */
    unsigned long coalesced;    /* of them, folded into a write still queued */
    unsigned long created;      /* Events created (POST) */
    unsigned long patched;      /* series updates sent (PATCH) */
    unsigned long rate_limited; /* writes dropped by the per-object limit */
    unsigned long queue_full;   /* writes dropped because the queue was full */
    unsigned long failed;       /* writes the API server refused or that failed in transport */
    unsigned long abandoned;    /* writes still queued when destroy's drain time ran out */
};

/* common_events_opts_default - the defaults listed above. */
struct common_events_opts common_events_opts_default(void);

/*
 * common_events_create - a recorder writing through kube (borrowed; must outlive the
 * recorder) as reporting_instance (copied; 1..128 bytes). opts NULL = defaults (zero fields
 * also take the default). Starts the writer thread. Returns NULL with err set: COMMON_EINVAL
 * (bad instance or controller), COMMON_ENOMEM, COMMON_EIO (no thread).
 */
struct common_events *common_events_create(struct common_kube *kube, const char *reporting_instance,
                                           const struct common_events_opts *opts,
                                           struct common_error *err);

/*
 * common_events_record - record one occurrence; never waits for the API server (only for the
 * recorder's lock). reason and action: 1..128 bytes; note may be NULL; a note over 1024 bytes
 * is cut to 1021 bytes at a UTF-8 boundary plus "..."; invalid UTF-8 bytes become '?'.
 * Returns COMMON_OK when the occurrence was counted (its write may still be dropped by the
 * rate limit or a full queue: see common_events_stats), COMMON_EINVAL (missing kind/name,
 * empty or over-long reason/action, fields over 253 bytes; message names the field), or
 * COMMON_ENOMEM.
 */
enum common_rc common_events_record(struct common_events *ev, const struct common_event_ref *reg,
                                    enum common_event_type type, const char *reason,
                                    const char *action, const char *note, struct common_error *err);

/*
 * common_events_flush - wait until the queue is empty and no write is in flight, for at most
 * timeout_ms. Returns COMMON_OK or COMMON_ETIMEOUT.
 */
enum common_rc common_events_flush(struct common_events *ev, long timeout_ms);

/* common_events_stats - a consistent copy of the counters into *out. */
void common_events_stats(struct common_events *ev, struct common_events_stats *out);

/*
 * common_events_destroy - stop the writer: queued writes are sent for up to opts.drain_ms (an
 * API call in flight is waited for), the rest are dropped; then free everything. NULL is a
 * no-op. No common_events_record may be running or start afterwards.
 */
void common_events_destroy(struct common_events *ev);

/*
 * common_events_note - the note as it is sent: in (NULL = "") with invalid UTF-8 bytes
 * replaced by '?' and, when longer than COMMON_EVENTS_NOTE_MAX bytes, cut at a character
 * boundary to leave room for "...". out must hold COMMON_EVENTS_NOTE_MAX + 1 bytes. Returns
 * the length written. Pure.
 */
size_t common_events_note(const char *in, char *out);

#endif
