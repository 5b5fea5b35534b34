/*
 * common/events.c - see events.h. One lock guards the two LRU caches (aggregation keys and
 * per-object token buckets), the queue and the counters; the writer thread holds it only to
 * take a job off the queue and to count the result, never across an API call.
 */
#include "common/events.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/kube.h"
#include "common/leader.h"
#include "common/log.h"

#define NAME_MAX_LEN 253 /* DNS-1123 subdomain */
#define REF_FIELD_MAX 253
#define API_VERSION_MAX 317 /* group (253) "/" version (63) */
#define KEY_MAX 4096

/* ---- a bounded LRU of string keys (intrusive: entries start with a struct lru_node) ---- */

struct lru_node {
    struct lru_node *hnext;       /* bucket chain */
    struct lru_node *prev, *next; /* recency list; list.next is the newest */
    uint64_t hash;
    char *key;
};

struct lru {
    struct lru_node **buckets;
    size_t nbuckets; /* a power of two */
    size_t count, max;
    struct lru_node list;                        /* sentinel */
    void (*drop)(void *ctx, struct lru_node *n); /* frees an evicted or cleared entry */
    void *ctx;
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static int lru_init(struct lru *l, size_t max, void (*drop)(void *, struct lru_node *), void *ctx)
{
    size_t nb = 16;

    while (nb < max * 2)
        nb <<= 1;
    memset(l, 0, sizeof(*l));
    l->buckets = common_calloc(nb, sizeof(*l->buckets));
    if (!l->buckets)
        return -1;
    l->nbuckets = nb;
    l->max = max;
    l->list.prev = l->list.next = &l->list;
    l->drop = drop;
    l->ctx = ctx;
    return 0;
}

static void list_unlink(struct lru_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
}

static void list_push_front(struct lru *l, struct lru_node *n)
{
    n->next = l->list.next;
    n->prev = &l->list;
    l->list.next->prev = n;
    l->list.next = n;
}

/* the entry for key, made the newest; NULL when absent */
static struct lru_node *lru_find(struct lru *l, const char *key, uint64_t hash)
{
    struct lru_node *n = l->buckets[hash & (l->nbuckets - 1)];

    for (; n; n = n->hnext)
        if (n->hash == hash && strcmp(n->key, key) == 0) {
            list_unlink(n);
            list_push_front(l, n);
            return n;
        }
    return NULL;
}

/* take n out of l without dropping it */
static void lru_remove(struct lru *l, struct lru_node *n)
{
    struct lru_node **pp = &l->buckets[n->hash & (l->nbuckets - 1)];

    while (*pp && *pp != n)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = n->hnext;
    list_unlink(n);
    l->count--;
}

/* add n (key and hash set) as the newest; drops the oldest entry past max */
static void lru_insert(struct lru *l, struct lru_node *n)
{
    size_t b = n->hash & (l->nbuckets - 1);

    n->hnext = l->buckets[b];
    l->buckets[b] = n;
    list_push_front(l, n);
    l->count++;
    while (l->count > l->max) {
        struct lru_node *old = l->list.prev;
        lru_remove(l, old);
        l->drop(l->ctx, old);
    }
}

static void lru_free(struct lru *l)
{
    if (!l->buckets)
        return;
    while (l->list.next != &l->list) {
        struct lru_node *n = l->list.next;
        lru_remove(l, n);
        l->drop(l->ctx, n);
    }
    common_free(l->buckets);
    l->buckets = NULL;
}

/* ---- the recorder ---- */

struct job;

/* one aggregation key: the Event it became */
struct agg_entry {
    struct lru_node node; /* first */
    json_t *event;        /* the Event with its current series */
    long count;
    double last_seen;    /* monotonic s of the last occurrence */
    int posted;          /* a create was queued for this Event */
    struct job *pending; /* its write still in the queue, or NULL */
};

/* one regarding object's token bucket */
struct spam_entry {
    struct lru_node node; /* first */
    double tokens, last;
};

struct job {
    struct job *next;
    struct agg_entry *entry; /* while queued (NULL once evicted) */
    json_t *body;            /* the Event to send (our own copy) */
    int create;              /* POST; otherwise PATCH the series, POST on 404 */
};

struct common_events {
    struct common_kube *kube;
    struct common_events_opts opts;
    char controller[COMMON_EVENTS_FIELD_MAX + 1];
    char instance[COMMON_EVENTS_FIELD_MAX + 1];
    pthread_t thread;
    int thread_started;
    pthread_mutex_t lock;
    pthread_cond_t work, idle;
    /* under lock */
    struct lru agg, spam;
    struct job *head, *tail;
    size_t queued;
    int busy, stop;
    double drain_until;
    struct common_events_stats stats;
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void job_free(struct job *j)
{
    if (!j)
        return;
    json_decref(j->body);
    common_free(j);
}

static void drop_agg(void *ctx, struct lru_node *n)
{
    struct agg_entry *e = (struct agg_entry *)n;
    (void)ctx;
    if (e->pending)
        e->pending->entry = NULL; /* the queued write goes on without its entry */
    json_decref(e->event);
    common_free(e->node.key);
    common_free(e);
}

static void drop_spam(void *ctx, struct lru_node *n)
{
    (void)ctx;
    common_free(n->key);
    common_free(n);
}

struct common_events_opts common_events_opts_default(void)
{
    struct common_events_opts o;
    o.reporting_controller = "trainsched";
    o.queue_max = 1000;
    o.cache_max = 4096;
    o.burst = 25;
    o.refill_s = 300;
    o.series_window_s = 360;
    o.drain_ms = 5000;
    return o;
}

/* ---- notes ---- */

/* the length of the valid UTF-8 sequence at s, or 0 when s starts an invalid one */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

size_t common_events_note(const char *in, char *out)
{
    const unsigned char *p = (const unsigned char *)(in ? in : "");
    size_t len = 0, keep = 0; /* keep: the last boundary with room for "..." */

    while (*p) {
        size_t n = utf8_len(p);
        const unsigned char *src = p;
        static const unsigned char qm = '?';

        if (n == 0) {
            src = &qm;
            n = 1;
            p++;
        } else {
            p += n;
        }
        if (len + n > COMMON_EVENTS_NOTE_MAX) {
            memcpy(out + keep, "...", 3);
            out[keep + 3] = '\0';
            return keep + 3;
        }
        memcpy(out + len, src, n);
        len += n;
        if (len <= COMMON_EVENTS_NOTE_MAX - 3)
            keep = len;
    }
    out[len] = '\0';
    return len;
}

/* ---- create / destroy ---- */

static void *writer(void *arg);

static enum common_rc check_field(const char *what, const char *s, size_t max,
                                  struct common_error *err)
{
    if (!s || !*s)
        return common_error_set(err, COMMON_EINVAL, "events: %s is required", what);
    if (strlen(s) > max)
        return common_error_set(err, COMMON_EINVAL, "events: %s is longer than %zu bytes", what,
                                max);
    return COMMON_OK;
}

static void events_free(struct common_events *ev)
{
    struct job *j;

    if (!ev)
        return;
    while ((j = ev->head) != NULL) {
        ev->head = j->next;
        job_free(j);
    }
    lru_free(&ev->agg);
    lru_free(&ev->spam);
    pthread_cond_destroy(&ev->work);
    pthread_cond_destroy(&ev->idle);
    pthread_mutex_destroy(&ev->lock);
    common_free(ev);
}

struct common_events *common_events_create(struct common_kube *kube, const char *reporting_instance,
                                           const struct common_events_opts *opts,
                                           struct common_error *err)
{
    struct common_events_opts d = common_events_opts_default(), o = opts ? *opts : d;
    struct common_events *ev;
    pthread_condattr_t ca;

    if (!o.reporting_controller)
        o.reporting_controller = d.reporting_controller;
    if (o.queue_max == 0)
        o.queue_max = d.queue_max;
    if (o.cache_max == 0)
        o.cache_max = d.cache_max;
    if (o.burst <= 0)
        o.burst = d.burst;
    if (o.refill_s <= 0)
        o.refill_s = d.refill_s;
    if (o.series_window_s <= 0)
        o.series_window_s = d.series_window_s;
    if (o.drain_ms <= 0)
        o.drain_ms = d.drain_ms;
    if (!kube) {
        common_error_set(err, COMMON_EINVAL, "events: no Kubernetes client");
        return NULL;
    }
    if (check_field("reportingInstance", reporting_instance, COMMON_EVENTS_FIELD_MAX, err) ||
        check_field("reportingController", o.reporting_controller, COMMON_EVENTS_FIELD_MAX, err))
        return NULL;
    ev = common_calloc(1, sizeof(*ev));
    if (!ev) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    ev->kube = kube;
    ev->opts = o;
    snprintf(ev->controller, sizeof(ev->controller), "%s", o.reporting_controller);
    ev->opts.reporting_controller = ev->controller;
    snprintf(ev->instance, sizeof(ev->instance), "%s", reporting_instance);
    pthread_mutex_init(&ev->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ev->work, &ca);
    pthread_cond_init(&ev->idle, &ca);
    pthread_condattr_destroy(&ca);
    if (lru_init(&ev->agg, o.cache_max, drop_agg, ev) ||
        lru_init(&ev->spam, o.cache_max, drop_spam, ev)) {
        events_free(ev);
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    if (pthread_create(&ev->thread, NULL, writer, ev) != 0) {
        events_free(ev);
        common_error_set(err, COMMON_EIO, "events: cannot start the writer thread");
        return NULL;
    }
    ev->thread_started = 1;
    return ev;
}

void common_events_destroy(struct common_events *ev)
{
    if (!ev)
        return;
    pthread_mutex_lock(&ev->lock);
    ev->stop = 1;
    ev->drain_until = mono_now() + (double)ev->opts.drain_ms / 1000.0;
    pthread_cond_broadcast(&ev->work);
    pthread_mutex_unlock(&ev->lock);
    if (ev->thread_started)
        pthread_join(ev->thread, NULL);
    events_free(ev);
}

/* ---- record ---- */

/* key parts joined by the unit separator (not valid in any of them in practice) */
static int make_key(char *buf, size_t size, const char *const *parts, size_t n)
{
    size_t len = 0;

    for (size_t i = 0; i < n; i++) {
        const char *s = parts[i] ? parts[i] : "";
        size_t l = strlen(s);
        if (len + l + 2 > size)
            return -1;
        memcpy(buf + len, s, l);
        len += l;
        buf[len++] = '\x1f';
    }
    buf[len] = '\0';
    return 0;
}

static void random_hex16(char out[17])
{
    static const char hex[] = "0123456789abcdef";
    static uint64_t counter;
    unsigned char b[8];

    if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
        uint64_t x = (uint64_t)wall_now_us() ^ ((uint64_t)getpid() << 40) ^
                     __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED);
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        x ^= x >> 31;
        memcpy(b, &x, sizeof(b));
    }
    for (int i = 0; i < 8; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[16] = '\0';
}

static json_t *new_event(struct common_events *ev, const struct common_event_ref *reg,
                         enum common_event_type type, const char *reason, const char *action,
                         const char *note, const char *when)
{
    char name[NAME_MAX_LEN + 1], rnd[17];
    size_t nl = strlen(reg->name);
    json_t *regarding, *e;

    if (nl > NAME_MAX_LEN - 17)
        nl = NAME_MAX_LEN - 17;
    random_hex16(rnd);
    snprintf(name, sizeof(name), "%.*s.%s", (int)nl, reg->name, rnd);
    regarding = json_pack("{s:s, s:s}", "kind", reg->kind, "name", reg->name);
    if (!regarding)
        return NULL;
    if ((reg->api_version && *reg->api_version &&
         json_object_set_new(regarding, "apiVersion", json_string(reg->api_version))) ||
        (reg->namespace && *reg->namespace &&
         json_object_set_new(regarding, "namespace", json_string(reg->namespace))) ||
        (reg->uid && *reg->uid && json_object_set_new(regarding, "uid", json_string(reg->uid)))) {
        json_decref(regarding);
        return NULL;
    }
    e = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "apiVersion",
                  "events.k8s.io/v1", "kind", "Event", "metadata", "name", name, "namespace",
                  reg->namespace && *reg->namespace ? reg->namespace : "default", "eventTime", when,
                  "reportingController", ev->controller, "reportingInstance", ev->instance,
                  "action", action, "reason", reason, "type",
                  type == COMMON_EVENT_WARNING ? "Warning" : "Normal", "regarding", regarding);
    if (e && note[0] && json_object_set_new(e, "note", json_string(note))) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* one token from reg's bucket (under lock); 0 when empty, -1 on no memory */
static int take_token(struct common_events *ev, const char *key, double now)
{
    uint64_t h = fnv1a(key);
    struct spam_entry *s = (struct spam_entry *)lru_find(&ev->spam, key, h);

    if (!s) {
        s = common_calloc(1, sizeof(*s));
        if (!s || !(s->node.key = common_strdup(key))) {
            common_free(s);
            return -1;
        }
        s->node.hash = h;
        s->tokens = ev->opts.burst;
        s->last = now;
        lru_insert(&ev->spam, &s->node);
    }
    s->tokens += (now - s->last) / ev->opts.refill_s;
    if (s->tokens > ev->opts.burst)
        s->tokens = ev->opts.burst;
    s->last = now;
    if (s->tokens < 1)
        return 0;
    s->tokens -= 1;
    return 1;
}

enum common_rc common_events_record(struct common_events *ev, const struct common_event_ref *reg,
                                    enum common_event_type type, const char *reason,
                                    const char *action, const char *note, struct common_error *err)
{
    char clean[COMMON_EVENTS_NOTE_MAX + 1], key[KEY_MAX], okey[KEY_MAX], when[40];
    const char *tname = type == COMMON_EVENT_WARNING ? "Warning" : "Normal";
    struct agg_entry *e;
    struct job *j = NULL;
    uint64_t h;
    double now = mono_now();
    enum common_rc rc = COMMON_OK;
    int tok;

    if (!reg)
        return common_error_set(err, COMMON_EINVAL, "events: regarding is required");
    if ((rc = check_field("regarding.kind", reg->kind, REF_FIELD_MAX, err)) ||
        (rc = check_field("regarding.name", reg->name, REF_FIELD_MAX, err)) ||
        (rc = check_field("reason", reason, COMMON_EVENTS_FIELD_MAX, err)) ||
        (rc = check_field("action", action, COMMON_EVENTS_FIELD_MAX, err)))
        return rc;
    if ((reg->namespace && strlen(reg->namespace) > REF_FIELD_MAX) ||
        (reg->uid && strlen(reg->uid) > REF_FIELD_MAX) ||
        (reg->api_version && strlen(reg->api_version) > API_VERSION_MAX))
        return common_error_set(err, COMMON_EINVAL,
                                "events: regarding.namespace, .uid or .apiVersion is too long");
    if (type != COMMON_EVENT_NORMAL && type != COMMON_EVENT_WARNING)
        return common_error_set(err, COMMON_EINVAL, "events: type must be Normal or Warning");
    common_events_note(note, clean);
    {
        const char *op[] = {reg->api_version, reg->kind, reg->namespace, reg->name, reg->uid};
        const char *kp[] = {reg->api_version, reg->kind, reg->namespace, reg->name, reg->uid,
                            reason,           action,    tname,          clean};
        if (make_key(okey, sizeof(okey), op, 5) || make_key(key, sizeof(key), kp, 9))
            return common_error_set(err, COMMON_EINVAL, "events: key too long");
    }
    if (common_leader_format_microtime(wall_now_us(), when, sizeof(when)))
        return common_error_set(err, COMMON_EINVAL, "events: the clock is out of range");
    h = fnv1a(key);

    pthread_mutex_lock(&ev->lock);
    e = (struct agg_entry *)lru_find(&ev->agg, key, h);
    if (e && now - e->last_seen >= ev->opts.series_window_s) {
        /* the series ended: the next occurrence is a new Event */
        lru_remove(&ev->agg, &e->node);
        drop_agg(ev, &e->node);
        e = NULL;
    }
    if (e) {
        json_t *series =
            json_pack("{s:I, s:s}", "count", (json_int_t)(e->count + 1), "lastObservedTime", when);
        if (!series || json_object_set_new(e->event, "series", series)) {
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
        e->count++;
        ev->stats.aggregated++;
    } else {
        e = common_calloc(1, sizeof(*e));
        if (!e || !(e->node.key = common_strdup(key)) ||
            !(e->event = new_event(ev, reg, type, reason, action, clean, when))) {
            if (e)
                common_free(e->node.key);
            common_free(e);
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
        e->node.hash = h;
        e->count = 1;
        lru_insert(&ev->agg, &e->node);
    }
    e->last_seen = now;
    ev->stats.recorded++;

    if (e->pending) {
        /* a write of this Event is still queued: send the newest state with it */
        json_t *copy = json_deep_copy(e->event);
        if (copy) {
            json_decref(e->pending->body);
            e->pending->body = copy;
            ev->stats.coalesced++;
        }
        goto out;
    }
    tok = take_token(ev, okey, now);
    if (tok < 0) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    if (tok == 0) {
        ev->stats.rate_limited++;
        goto out;
    }
    if (ev->queued >= ev->opts.queue_max) {
        ev->stats.queue_full++;
        goto out;
    }
    j = common_calloc(1, sizeof(*j));
    if (!j || !(j->body = json_deep_copy(e->event))) {
        common_free(j);
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    j->create = !e->posted;
    e->posted = 1;
    j->entry = e;
    e->pending = j;
    if (ev->tail)
        ev->tail->next = j;
    else
        ev->head = j;
    ev->tail = j;
    ev->queued++;
    pthread_cond_signal(&ev->work);
out:
    pthread_mutex_unlock(&ev->lock);
    return rc;
}

/* ---- the writer ---- */

enum sent { SENT_CREATED, SENT_PATCHED, SENT_FAILED };

static enum sent send_job(struct common_events *ev, struct job *j)
{
    struct common_error err;
    const json_t *md = json_object_get(j->body, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    const json_t *series = json_object_get(j->body, "series");
    enum common_rc rc;

    if (!j->create && series) {
        json_t *p = json_pack("{s:O}", "series", series);
        char *text = p ? json_dumps(p, JSON_COMPACT) : NULL;
        json_decref(p);
        if (!text) {
            common_log(COMMON_LOG_WARN, "events: out of memory", "event", name, NULL);
            return SENT_FAILED;
        }
        rc = common_kube_patch(ev->kube, &common_kube_events, ns, name, COMMON_KUBE_MERGE_PATCH,
                               text, NULL, NULL, &err);
        common_free(text);
        if (rc == COMMON_OK)
            return SENT_PATCHED;
        if (rc != COMMON_ENOTFOUND) {
            common_log(COMMON_LOG_WARN, "events: cannot update the event", "event", name, "error",
                       err.msg, NULL);
            return SENT_FAILED;
        }
        /* the Event is gone (or its create failed): create it, series included */
    }
    rc = common_kube_create(ev->kube, &common_kube_events, ns, j->body, NULL, NULL, &err);
    if (rc == COMMON_OK)
        return SENT_CREATED;
    common_log(COMMON_LOG_WARN, "events: cannot create the event", "event", name, "error", err.msg,
               NULL);
    return SENT_FAILED;
}

static void *writer(void *arg)
{
    struct common_events *ev = arg;

    pthread_mutex_lock(&ev->lock);
    for (;;) {
        struct job *j;
        enum sent r;

        while (!ev->head && !ev->stop)
            pthread_cond_wait(&ev->work, &ev->lock);
        if (!ev->head)
            break;
        if (ev->stop && mono_now() > ev->drain_until)
            break; /* the rest are counted as abandoned by destroy */
        j = ev->head;
        ev->head = j->next;
        if (!ev->head)
            ev->tail = NULL;
        ev->queued--;
        if (j->entry)
            j->entry->pending = NULL;
        j->entry = NULL;
        ev->busy = 1;
        pthread_mutex_unlock(&ev->lock);

        r = send_job(ev, j);

        pthread_mutex_lock(&ev->lock);
        job_free(j);
        if (r == SENT_CREATED)
            ev->stats.created++;
        else if (r == SENT_PATCHED)
            ev->stats.patched++;
        else
            ev->stats.failed++;
        ev->busy = 0;
        pthread_cond_broadcast(&ev->idle);
    }
    for (struct job *j = ev->head; j; j = j->next) {
        ev->stats.abandoned++;
        if (j->entry)
            j->entry->pending = NULL;
        j->entry = NULL;
    }
    pthread_cond_broadcast(&ev->idle);
    pthread_mutex_unlock(&ev->lock);
    return NULL;
}

enum common_rc common_events_flush(struct common_events *ev, long timeout_ms)
{
    struct timespec ts;
    enum common_rc rc = COMMON_OK;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&ev->lock);
    while (ev->head || ev->busy) {
        if (pthread_cond_timedwait(&ev->idle, &ev->lock, &ts) == ETIMEDOUT) {
            rc = ev->head || ev->busy ? COMMON_ETIMEOUT : COMMON_OK;
            break;
        }
    }
    pthread_mutex_unlock(&ev->lock);
    return rc;
}

void common_events_stats(struct common_events *ev, struct common_events_stats *out)
{
    pthread_mutex_lock(&ev->lock);
    *out = ev->stats;
    pthread_mutex_unlock(&ev->lock);
}
