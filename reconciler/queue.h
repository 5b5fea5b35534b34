/*
 * reconciler/queue.h - the reconciler's work queue: de-duplicated keys, per-key exponential
 * backoff, delayed adds, and "one key never handled by two workers at once".
 *
 * Semantics follow client-go's workqueue (the rate-limiting, delaying queue that
 * controller-runtime uses):
 *  - a key is queued at most once: adding a queued key is a no-op;
 *  - a key being processed (handed out by rc_queue_get and not yet rc_queue_done) is never
 *    handed out again; adding it meanwhile marks it dirty and rc_queue_done re-queues it;
 *  - rc_queue_add_after keeps the earliest due time when a key is added again with a delay;
 *  - rc_queue_add_rate_limited delays by the key's backoff, rc_queue_backoff_ms(base, max,
 *    failures), and counts a failure; rc_queue_forget resets the count.
 * Keys are strings ("namespace/name"), copied in. Thread-safe; rc_queue_get blocks.
 * Times are milliseconds on CLOCK_MONOTONIC.
 */
#ifndef RECONCILER_QUEUE_H
#define RECONCILER_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct rc_queue;

struct rc_queue_opts {
    long base_delay_ms; /* first backoff; default 5 */
    long max_delay_ms;  /* backoff cap; default 300000 (5 min) */
    /* The queue's clock in milliseconds (monotonic); NULL: CLOCK_MONOTONIC. A test clock makes
     * due times and backoff exact to the millisecond, whatever the machine's speed; rc_queue_get
     * still sleeps on CLOCK_MONOTONIC, so with a test clock call it with timeout 0 only. */
    int64_t (*clock_ms)(void *ctx);
    void *clock_ctx;
};

/*
 * rc_queue_backoff_ms - base * 2^failures, capped at max (failures counts earlier failures:
 * 0 gives base). Pure; never overflows.
 */
long rc_queue_backoff_ms(long base_ms, long max_ms, unsigned failures);

/* rc_queue_create - an empty queue; opts NULL for defaults. NULL with err (COMMON_ENOMEM). */
struct rc_queue *rc_queue_create(const struct rc_queue_opts *opts, struct common_error *err);

/* rc_queue_destroy - free the queue; no thread may be using it (shut it down first). */
void rc_queue_destroy(struct rc_queue *q);

/* rc_queue_add - queue key now (de-duplicated; see above). Returns 0, -1 on no memory or after
 * shutdown. */
int rc_queue_add(struct rc_queue *q, const char *key);

/* rc_queue_add_after - queue key once delay_ms has passed (delay <= 0: now). 0 or -1. */
int rc_queue_add_after(struct rc_queue *q, const char *key, long delay_ms);

/* rc_queue_add_rate_limited - add_after the key's backoff, then count a failure. 0 or -1. */
int rc_queue_add_rate_limited(struct rc_queue *q, const char *key);

/* rc_queue_forget - reset key's failure count (after a success). */
void rc_queue_forget(struct rc_queue *q, const char *key);

/* rc_queue_failures - key's failure count. */
unsigned rc_queue_failures(struct rc_queue *q, const char *key);

/*
 * rc_queue_get - wait up to timeout_ms (< 0: forever) for a ready key. Returns 1 with *key
 * (common_malloc'd; the caller frees it and must call rc_queue_done), 0 on timeout or when the
 * copy of the key cannot be allocated (the key stays queued), -1 once the queue is shut down
 * (then no key is handed out).
 */
int rc_queue_get(struct rc_queue *q, long timeout_ms, char **key);

/* rc_queue_done - key's processing finished; re-queues it when it was added meanwhile. */
void rc_queue_done(struct rc_queue *q, const char *key);

struct rc_queue_stats {
    size_t depth;      /* keys ready now (the "queue depth" metric) */
    size_t delayed;    /* keys waiting for their due time */
    size_t processing; /* keys handed out and not yet done */
    uint64_t adds;     /* rc_queue_add* calls that queued or delayed something */
    uint64_t retries;  /* rc_queue_add_rate_limited calls */
    size_t waiters;    /* getters asleep in rc_queue_get */
};

/* rc_queue_stats - a consistent copy of the counters. */
void rc_queue_stats(struct rc_queue *q, struct rc_queue_stats *out);

/* rc_queue_shutdown - wake every waiter; rc_queue_get returns -1 from now on. Idempotent. */
void rc_queue_shutdown(struct rc_queue *q);

#endif
