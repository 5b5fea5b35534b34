/*
 * reconciler/queue.c - see queue.h. One mutex guards everything; one condition variable
 * (CLOCK_MONOTONIC) wakes getters.
 *
 * Every key the queue knows has one entry, found through an open-addressing hash table
 * (linear probing, backward-shift deletion, load <= 1/2). An entry is in up to two places:
 *  - the ready FIFO (an intrusive singly linked list), exactly when dirty && !processing;
 *  - the delay heap (a binary min-heap by due time, then by add order), when heap_idx != NONE.
 * "dirty" means "needs processing": set by an add, cleared when rc_queue_get hands the key out.
 * An entry is freed as soon as it is in neither place, not processing and has no failures, so
 * rc_queue_forget drops a key's failure count with it.
 *
 * Like client-go, an immediate add of a key that is also waiting in the heap queues it now and
 * leaves the delayed add in place: when it falls due it is an add like any other (a no-op while
 * the key is still queued, a re-queue after it has been processed). There is no timer thread:
 * rc_queue_get (and rc_queue_stats) move due keys from the heap to the FIFO, and a getter with
 * nothing ready sleeps until the earlier of its own deadline and the heap's first due time.
 *
 * Wake-ups: an add that queues a key, or that makes the heap's first due time earlier, signals
 * one getter; a getter leaving rc_queue_get while work is left (ready keys or a non-empty heap)
 * and other getters wait signals one more, so no ready key and no due time is left without a
 * waiter watching it. rc_queue_shutdown broadcasts.
 *
 * Costs (n keys known, d delayed): add O(1) expected, add_after and add_rate_limited
 * O(log d), get O(1) plus O(log d) per key falling due, done/forget/failures O(1) expected.
 */
#include "reconciler/queue.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/intmath.h"

#define HEAP_NONE SIZE_MAX
#define DEFAULT_BASE_MS 5
#define DEFAULT_MAX_MS 300000
#define HT_MIN_CAP 64
#define HEAP_MIN_CAP 16
/* a getter re-checks at least this often, so huge timeouts never reach timedwait */
#define MAX_SLEEP_MS 3600000LL

struct qent {
    uint64_t hash;
    struct qent *next; /* ready FIFO link */
    int64_t due;       /* monotonic ms; valid while heap_idx != HEAP_NONE */
    uint64_t seq;      /* heap tie-break: delayed keys due together leave in add order */
    size_t heap_idx;
    unsigned failures;
    unsigned char dirty;      /* needs processing (queued, or to re-queue at done) */
    unsigned char processing; /* handed out, not yet done */
    char key[];
};

struct rc_queue {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    long base_ms, max_ms;
    int64_t (*clock_ms)(void *ctx);
    void *clock_ctx;

    struct qent **slots; /* hash table; cap is a power of two */
    size_t cap, used;

    struct qent *head, *tail; /* ready FIFO */
    size_t depth;

    struct qent **heap; /* delayed keys */
    size_t heap_len, heap_cap;
    uint64_t seq;

    size_t processing, waiters;
    uint64_t adds, retries;
    int shutdown;
};

/* ---- time ---- */

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t q_now(const struct rc_queue *q)
{
    return q->clock_ms ? q->clock_ms(q->clock_ctx) : now_ms();
}

/* ---- backoff ---- */

long rc_queue_backoff_ms(long base_ms, long max_ms, unsigned failures)
{
    long d;

    if (base_ms <= 0)
        return max_ms < 0 ? max_ms : 0;
    d = base_ms;
    /* d doubles at most ~63 times before passing max; the loop stops there */
    for (unsigned i = 0; i < failures; i++) {
        if (d > max_ms / 2)
            return max_ms;
        d *= 2;
    }
    return d < max_ms ? d : max_ms;
}

/* ---- hash table ---- */

static uint64_t hash_key(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, then a final mix for the low bits */

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

/* slot of key, or of the empty slot where it would go */
static size_t ht_slot(const struct rc_queue *q, const char *key, uint64_t h)
{
    size_t mask = q->cap - 1, i = (size_t)h & mask;

    while (q->slots[i] && (q->slots[i]->hash != h || strcmp(q->slots[i]->key, key) != 0))
        i = (i + 1) & mask;
    return i;
}

static struct qent *ht_find(const struct rc_queue *q, const char *key, uint64_t h)
{
    return q->slots[ht_slot(q, key, h)];
}

/* make room for one more entry; -1 on no memory (table unchanged) */
static int ht_reserve(struct rc_queue *q)
{
    size_t ncap = q->cap * 2;
    struct qent **ns;

    if ((q->used + 1) * 2 <= q->cap)
        return 0;
    ns = common_calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    for (size_t i = 0; i < q->cap; i++) {
        struct qent *e = q->slots[i];
        size_t j;

        if (!e)
            continue;
        for (j = (size_t)e->hash & (ncap - 1); ns[j]; j = (j + 1) & (ncap - 1))
            ;
        ns[j] = e;
    }
    common_free(q->slots);
    q->slots = ns;
    q->cap = ncap;
    return 0;
}

/* remove the entry at slot i, shifting later members of its probe run back */
static void ht_remove_at(struct rc_queue *q, size_t i)
{
    size_t mask = q->cap - 1, j = i;

    q->slots[i] = NULL;
    q->used--;
    for (;;) {
        size_t home;

        j = (j + 1) & mask;
        if (!q->slots[j])
            return;
        home = (size_t)q->slots[j]->hash & mask;
        /* slots[j] may move to the hole i unless its home lies cyclically in (i, j] */
        if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
            q->slots[i] = q->slots[j];
            q->slots[j] = NULL;
            i = j;
        }
    }
}

/* ---- delay heap ---- */

static int heap_less(const struct qent *a, const struct qent *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_set(struct rc_queue *q, size_t i, struct qent *e)
{
    q->heap[i] = e;
    e->heap_idx = i;
}

static void heap_up(struct rc_queue *q, size_t i)
{
    struct qent *e = q->heap[i];

    while (i > 0) {
        size_t p = (i - 1) / 2;

        if (!heap_less(e, q->heap[p]))
            break;
        heap_set(q, i, q->heap[p]);
        i = p;
    }
    heap_set(q, i, e);
}

static void heap_down(struct rc_queue *q, size_t i)
{
    struct qent *e = q->heap[i];

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= q->heap_len)
            break;
        if (c + 1 < q->heap_len && heap_less(q->heap[c + 1], q->heap[c]))
            c++;
        if (!heap_less(q->heap[c], e))
            break;
        heap_set(q, i, q->heap[c]);
        i = c;
    }
    heap_set(q, i, e);
}

/* make room for one more delayed key; -1 on no memory (heap unchanged) */
static int heap_reserve(struct rc_queue *q)
{
    size_t ncap;
    struct qent **nh;

    if (q->heap_len < q->heap_cap)
        return 0;
    ncap = q->heap_cap ? q->heap_cap * 2 : HEAP_MIN_CAP;
    nh = common_realloc(q->heap, ncap * sizeof(*nh));
    if (!nh)
        return -1;
    q->heap = nh;
    q->heap_cap = ncap;
    return 0;
}

static struct qent *heap_pop(struct rc_queue *q)
{
    struct qent *top = q->heap[0];

    q->heap_len--;
    if (q->heap_len > 0) {
        heap_set(q, 0, q->heap[q->heap_len]);
        heap_down(q, 0);
    }
    top->heap_idx = HEAP_NONE;
    return top;
}

/*
 * Delay e until due (keeping an earlier due time it already has). Room must be reserved.
 * Returns 1 if anything changed.
 */
static int delay_ent(struct rc_queue *q, struct qent *e, int64_t due)
{
    if (e->heap_idx != HEAP_NONE) {
        if (due >= e->due)
            return 0;
        e->due = due;
        heap_up(q, e->heap_idx);
    } else {
        e->due = due;
        e->seq = q->seq++;
        heap_set(q, q->heap_len++, e);
        heap_up(q, e->heap_idx);
    }
    if (e->heap_idx == 0)
        pthread_cond_signal(&q->cond); /* a sleeping getter may need to wake earlier */
    return 1;
}

/* ---- entries ---- */

static void fifo_push(struct rc_queue *q, struct qent *e)
{
    e->next = NULL;
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
    q->depth++;
    pthread_cond_signal(&q->cond);
}

/* The add rule: mark e dirty; queue it unless it is being processed. 1 if anything changed. */
static int ready_ent(struct rc_queue *q, struct qent *e)
{
    if (e->dirty)
        return 0;
    e->dirty = 1;
    if (!e->processing)
        fifo_push(q, e);
    return 1;
}

/* free e if nothing refers to it any more */
static void maybe_drop(struct rc_queue *q, struct qent *e)
{
    if (e->dirty || e->processing || e->heap_idx != HEAP_NONE || e->failures)
        return;
    ht_remove_at(q, ht_slot(q, e->key, e->hash));
    common_free(e);
}

/* move every key due by now from the heap to the ready FIFO */
static void promote(struct rc_queue *q, int64_t now)
{
    while (q->heap_len > 0 && q->heap[0]->due <= now)
        ready_ent(q, heap_pop(q));
}

/* ---- create / destroy ---- */

struct rc_queue *rc_queue_create(const struct rc_queue_opts *opts, struct common_error *err)
{
    struct rc_queue *q = common_calloc(1, sizeof(*q));
    pthread_condattr_t ca;

    if (!q) {
        common_error_set(err, COMMON_ENOMEM, "queue: out of memory");
        return NULL;
    }
    q->cap = HT_MIN_CAP;
    q->slots = common_calloc(q->cap, sizeof(*q->slots));
    if (!q->slots) {
        common_free(q);
        common_error_set(err, COMMON_ENOMEM, "queue: out of memory");
        return NULL;
    }
    q->base_ms = opts && opts->base_delay_ms > 0 ? opts->base_delay_ms : DEFAULT_BASE_MS;
    q->max_ms = opts && opts->max_delay_ms > 0 ? opts->max_delay_ms : DEFAULT_MAX_MS;
    q->clock_ms = opts ? opts->clock_ms : NULL;
    q->clock_ctx = opts ? opts->clock_ctx : NULL;
    pthread_mutex_init(&q->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cond, &ca);
    pthread_condattr_destroy(&ca);
    return q;
}

void rc_queue_destroy(struct rc_queue *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->cap; i++)
        common_free(q->slots[i]);
    common_free(q->slots);
    common_free(q->heap);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    common_free(q);
}

/* ---- adds ---- */

/*
 * The one add path. delay_ms <= 0 queues now; rate_limited replaces delay_ms by the key's
 * backoff and counts a failure. Every allocation happens before the first change, so -1
 * leaves the queue as it was.
 */
static int add_key(struct rc_queue *q, const char *key, long delay_ms, int rate_limited)
{
    uint64_t h;
    struct qent *e;
    int changed;

    if (!q || !key)
        return -1;
    h = hash_key(key);
    pthread_mutex_lock(&q->lock);
    if (q->shutdown)
        goto fail;
    e = ht_find(q, key, h);
    if (rate_limited)
        delay_ms = rc_queue_backoff_ms(q->base_ms, q->max_ms, e ? e->failures : 0);
    if (delay_ms > 0 && (!e || e->heap_idx == HEAP_NONE) && heap_reserve(q) != 0)
        goto fail;
    if (!e) {
        size_t len = strlen(key);

        if (ht_reserve(q) != 0)
            goto fail;
        e = common_malloc(sizeof(*e) + len + 1);
        if (!e)
            goto fail;
        memset(e, 0, sizeof(*e));
        memcpy(e->key, key, len + 1);
        e->hash = h;
        e->heap_idx = HEAP_NONE;
        q->slots[ht_slot(q, key, h)] = e;
        q->used++;
    }
    if (delay_ms > 0)
        changed = delay_ent(q, e, common_add_sat(q_now(q), delay_ms));
    else
        changed = ready_ent(q, e);
    if (changed)
        q->adds++;
    if (rate_limited) {
        q->retries++;
        if (e->failures < UINT_MAX)
            e->failures++;
    }
    pthread_mutex_unlock(&q->lock);
    return 0;
fail:
    pthread_mutex_unlock(&q->lock);
    return -1;
}

int rc_queue_add(struct rc_queue *q, const char *key)
{
    return add_key(q, key, 0, 0);
}

int rc_queue_add_after(struct rc_queue *q, const char *key, long delay_ms)
{
    return add_key(q, key, delay_ms, 0);
}

int rc_queue_add_rate_limited(struct rc_queue *q, const char *key)
{
    return add_key(q, key, 0, 1);
}

/* ---- failures ---- */

void rc_queue_forget(struct rc_queue *q, const char *key)
{
    struct qent *e;

    if (!q || !key)
        return;
    pthread_mutex_lock(&q->lock);
    e = ht_find(q, key, hash_key(key));
    if (e) {
        e->failures = 0;
        maybe_drop(q, e);
    }
    pthread_mutex_unlock(&q->lock);
}

unsigned rc_queue_failures(struct rc_queue *q, const char *key)
{
    struct qent *e;
    unsigned n;

    if (!q || !key)
        return 0;
    pthread_mutex_lock(&q->lock);
    e = ht_find(q, key, hash_key(key));
    n = e ? e->failures : 0;
    pthread_mutex_unlock(&q->lock);
    return n;
}

/* ---- get / done ---- */

static void to_timespec(int64_t ms, struct timespec *ts)
{
    ts->tv_sec = (time_t)(ms / 1000);
    ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

int rc_queue_get(struct rc_queue *q, long timeout_ms, char **key)
{
    int64_t deadline;
    int rc;

    if (!key)
        return -1;
    *key = NULL;
    if (!q)
        return -1;
    deadline = timeout_ms < 0 ? INT64_MAX : common_add_sat(q_now(q), timeout_ms);
    pthread_mutex_lock(&q->lock);
    for (;;) {
        int64_t now, wake;
        struct timespec ts;

        if (q->shutdown) {
            rc = -1;
            break;
        }
        now = q_now(q);
        promote(q, now);
        if (q->head) {
            struct qent *e = q->head;
            char *copy = common_strdup(e->key);

            if (!copy) {
                rc = 0; /* the key stays queued */
                break;
            }
            q->head = e->next;
            if (!q->head)
                q->tail = NULL;
            e->next = NULL;
            q->depth--;
            e->dirty = 0;
            e->processing = 1;
            q->processing++;
            *key = copy;
            rc = 1;
            break;
        }
        if (now >= deadline) {
            rc = 0;
            break;
        }
        wake = deadline;
        if (q->heap_len > 0 && q->heap[0]->due < wake)
            wake = q->heap[0]->due;
        if (wake - now > MAX_SLEEP_MS)
            wake = now + MAX_SLEEP_MS;
        to_timespec(wake, &ts);
        q->waiters++;
        pthread_cond_timedwait(&q->cond, &q->lock, &ts);
        q->waiters--;
    }
    /* pass the baton: ready keys or due times left need a waiter watching them */
    if (rc >= 0 && q->waiters > 0 && (q->head || q->heap_len > 0))
        pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

void rc_queue_done(struct rc_queue *q, const char *key)
{
    struct qent *e;

    if (!q || !key)
        return;
    pthread_mutex_lock(&q->lock);
    e = ht_find(q, key, hash_key(key));
    if (e && e->processing) {
        e->processing = 0;
        q->processing--;
        if (e->dirty)
            fifo_push(q, e);
        else
            maybe_drop(q, e);
    }
    pthread_mutex_unlock(&q->lock);
}

/* ---- stats / shutdown ---- */

void rc_queue_stats(struct rc_queue *q, struct rc_queue_stats *out)
{
    pthread_mutex_lock(&q->lock);
    if (!q->shutdown)
        promote(q, q_now(q));
    out->depth = q->depth;
    out->delayed = q->heap_len;
    out->processing = q->processing;
    out->adds = q->adds;
    out->retries = q->retries;
    out->waiters = q->waiters;
    pthread_mutex_unlock(&q->lock);
}

void rc_queue_shutdown(struct rc_queue *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->lock);
    q->shutdown = 1;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}
