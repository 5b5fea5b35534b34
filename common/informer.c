/*
 * common/informer.c - see informer.h. One thread per informer runs list-then-watch; the pmap
 * is written only by that thread.
 */
#include "common/informer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/log.h"

#define KEY_MAX 512

struct common_informer {
    struct common_kube *kube;
    struct common_informer_ops ops;
    struct common_informer_handlers h;
    struct common_informer_opts opts;
    char *ns, *label_selector, *field_selector;
    struct common_pmap *map;
    pthread_t thread;
    int running;
    volatile int stop;
    pthread_mutex_t lock; /* guards synced, rv, stats; cond for wait_synced */
    pthread_cond_t cond;
    int synced;
    char rv[128];
    struct common_informer_stats stats;
    /* changes applied but not yet published: handlers run after the publish, so a handler that
     * queues work sees the change in any snapshot taken from then on */
    struct pending_change {
        void *old, *item; /* old NULL: add; item NULL: delete */
    } * pend;
    size_t npend, cappend;
    struct common_pmap_snap *hold; /* keeps the old items alive until the handlers ran */
};

/* ---- ops for pods, nodes, JSON ---- */

static void pod_key(const void *item, char *buf, size_t size)
{
    const struct common_pod *p = item;
    snprintf(buf, size, "%s/%s", p->namespace, p->name);
}
static const char *pod_rv(const void *item)
{
    return ((const struct common_pod *)item)->resource_version;
}
static void pod_release(void *item)
{
    common_pod_free(item);
}
static void node_key(const void *item, char *buf, size_t size)
{
    snprintf(buf, size, "%s", ((const struct common_node *)item)->name);
}
static const char *node_rv(const void *item)
{
    return ((const struct common_node *)item)->resource_version;
}
static void node_release(void *item)
{
    common_node_free(item);
}

const struct common_informer_ops common_informer_pods = {
    .name = "pods",
    .resource = &common_kube_pods,
    .pb_kind = COMMON_KIND_POD,
    .from_json = NULL,
    .key = pod_key,
    .resource_version = pod_rv,
    .release = pod_release,
};

const struct common_informer_ops common_informer_nodes = {
    .name = "nodes",
    .resource = &common_kube_nodes,
    .pb_kind = COMMON_KIND_NODE,
    .from_json = NULL,
    .key = node_key,
    .resource_version = node_rv,
    .release = node_release,
};

static enum common_rc json_from(const json_t *obj, void **item, struct common_error *err)
{
    const json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_string(json_object_get(meta, "name")))
        return common_error_set(err, COMMON_EINVAL, "object without metadata.name");
    *item = json_incref((json_t *)obj);
    return COMMON_OK;
}
static void json_key(const void *item, char *buf, size_t size)
{
    const json_t *meta = json_object_get((const json_t *)item, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (ns && *ns)
        snprintf(buf, size, "%s/%s", ns, name ? name : "");
    else
        snprintf(buf, size, "%s", name ? name : "");
}
static const char *json_rv(const void *item)
{
    const char *rv = json_string_value(
        json_object_get(json_object_get((const json_t *)item, "metadata"), "resourceVersion"));
    return rv ? rv : "";
}
static void json_release(void *item)
{
    json_decref(item);
}

void common_informer_json_ops(struct common_informer_ops *ops, const char *name,
                              const struct common_kube_resource *r)
{
    memset(ops, 0, sizeof(*ops));
    ops->name = name;
    ops->resource = r;
    ops->pb_kind = 0;
    ops->from_json = json_from;
    ops->key = json_key;
    ops->resource_version = json_rv;
    ops->release = json_release;
}

/* ---- lifecycle ---- */

static void release_cb(void *item, void *ctx)
{
    struct common_informer *inf = ctx;
    inf->ops.release(item);
}

static char *dup_opt(const char *s, int *fail)
{
    char *d;
    if (!s)
        return NULL;
    d = common_strdup(s);
    if (!d)
        *fail = 1;
    return d;
}

enum common_rc common_informer_create(struct common_kube *k, const struct common_informer_ops *ops,
                                      const struct common_informer_handlers *handlers,
                                      const struct common_informer_opts *opts,
                                      struct common_informer **out, struct common_error *err)
{
    struct common_informer *inf = common_calloc(1, sizeof(*inf));
    int fail = 0;

    *out = NULL;
    if (!inf)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    inf->kube = k;
    inf->ops = *ops;
    if (handlers)
        inf->h = *handlers;
    if (opts)
        inf->opts = *opts;
    inf->ns = dup_opt(inf->opts.namespace, &fail);
    inf->label_selector = dup_opt(inf->opts.label_selector, &fail);
    inf->field_selector = dup_opt(inf->opts.field_selector, &fail);
    pthread_mutex_init(&inf->lock, NULL);
    pthread_cond_init(&inf->cond, NULL);
    if (fail || common_pmap_create(release_cb, inf, &inf->map)) {
        common_informer_destroy(inf);
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    *out = inf;
    return COMMON_OK;
}

void common_informer_destroy(struct common_informer *inf)
{
    if (!inf)
        return;
    common_informer_stop(inf);
    if (inf->hold)
        common_pmap_snap_release(inf->hold);
    common_free(inf->pend);
    common_pmap_destroy(inf->map);
    common_free(inf->ns);
    common_free(inf->label_selector);
    common_free(inf->field_selector);
    pthread_mutex_destroy(&inf->lock);
    pthread_cond_destroy(&inf->cond);
    common_free(inf);
}

int common_informer_synced(const struct common_informer *inf)
{
    int s;
    if (!inf)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&inf->lock);
    s = inf->synced;
    pthread_mutex_unlock((pthread_mutex_t *)&inf->lock);
    return s;
}

int common_informer_wait_synced(struct common_informer *inf, long timeout_ms)
{
    struct timespec until;
    int s;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&inf->lock);
    while (!inf->synced && !common_kube_canceled(inf->kube)) {
        /* in slices of at most 100 ms: a client cancelled meanwhile (common_kube_cancel_after)
         * never lets it sync, so stop waiting */
        struct timespec slice;
        clock_gettime(CLOCK_REALTIME, &slice);
        slice.tv_nsec += 100 * 1000000L;
        if (slice.tv_nsec >= 1000000000L) {
            slice.tv_sec++;
            slice.tv_nsec -= 1000000000L;
        }
        if (slice.tv_sec > until.tv_sec ||
            (slice.tv_sec == until.tv_sec && slice.tv_nsec > until.tv_nsec))
            slice = until;
        if (pthread_cond_timedwait(&inf->cond, &inf->lock, &slice) == ETIMEDOUT &&
            (slice.tv_sec == until.tv_sec && slice.tv_nsec == until.tv_nsec))
            break;
    }
    s = inf->synced;
    pthread_mutex_unlock(&inf->lock);
    return s;
}

struct common_pmap_snap *common_informer_snapshot(struct common_informer *inf)
{
    return common_pmap_snapshot(inf->map);
}

void common_informer_stats(struct common_informer *inf, struct common_informer_stats *out)
{
    pthread_mutex_lock(&inf->lock);
    *out = inf->stats;
    pthread_mutex_unlock(&inf->lock);
}

void common_informer_last_rv(struct common_informer *inf, char *buf, size_t size)
{
    pthread_mutex_lock(&inf->lock);
    snprintf(buf, size, "%s", inf->rv);
    pthread_mutex_unlock(&inf->lock);
}

static void set_rv(struct common_informer *inf, const char *rv)
{
    if (!rv || !*rv)
        return;
    pthread_mutex_lock(&inf->lock);
    snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
    pthread_mutex_unlock(&inf->lock);
}

static void count(struct common_informer *inf, uint64_t *field)
{
    pthread_mutex_lock(&inf->lock);
    (*field)++;
    inf->stats.size = common_pmap_size(inf->map);
    pthread_mutex_unlock(&inf->lock);
}

/* ---- applying changes (informer thread only) ---- */

/* remember a change for the handlers; call before the map changes (the first call of a batch
 * takes the snapshot that keeps old items alive). Returns 0, -1 on no memory. */
static int note_change(struct common_informer *inf, void *old, void *item)
{
    if (!inf->h.on_add && !inf->h.on_update && !inf->h.on_delete)
        return 0;
    if (!inf->hold)
        inf->hold = common_pmap_snapshot(inf->map);
    if (inf->npend == inf->cappend) {
        size_t cap = inf->cappend ? inf->cappend * 2 : 64;
        struct pending_change *p = common_realloc(inf->pend, cap * sizeof(*p));
        if (!p)
            return -1;
        inf->pend = p;
        inf->cappend = cap;
    }
    inf->pend[inf->npend].old = old;
    inf->pend[inf->npend].item = item;
    inf->npend++;
    return 0;
}

/* publish the map, then run the handlers of the changes noted since the last publish */
static int publish(struct common_informer *inf)
{
    int rc = common_pmap_publish(inf->map);
    for (size_t i = 0; i < inf->npend; i++) {
        struct pending_change *c = &inf->pend[i];
        if (!c->old && inf->h.on_add)
            inf->h.on_add(inf->h.ctx, c->item);
        else if (c->old && c->item && inf->h.on_update)
            inf->h.on_update(inf->h.ctx, c->old, c->item);
        else if (c->old && !c->item && inf->h.on_delete)
            inf->h.on_delete(inf->h.ctx, c->old);
    }
    inf->npend = 0;
    if (inf->hold) {
        common_pmap_snap_release(inf->hold);
        inf->hold = NULL;
    }
    return rc;
}

/* upsert item (ownership passes in); handlers see the change after the next publish */
static enum common_rc apply_upsert(struct common_informer *inf, void *item,
                                   struct common_error *err)
{
    char key[KEY_MAX];
    void *old;
    enum common_rc rc;

    inf->ops.key(item, key, sizeof(key));
    old = common_pmap_get(inf->map, key);
    if (old && strcmp(inf->ops.resource_version(old), inf->ops.resource_version(item)) == 0) {
        inf->ops.release(item); /* nothing changed (a relist of an unchanged object) */
        return COMMON_OK;
    }
    if (note_change(inf, old, item) != 0) {
        inf->ops.release(item);
        return common_error_set(err, COMMON_ENOMEM, "%s cache: out of memory", inf->ops.name);
    }
    rc = common_pmap_set(inf->map, key, item);
    if (rc) {
        inf->npend--;
        inf->ops.release(item);
        return common_error_set(err, rc, "%s cache: out of memory", inf->ops.name);
    }
    return COMMON_OK;
}

static enum common_rc apply_delete(struct common_informer *inf, const char *key,
                                   struct common_error *err)
{
    void *old = common_pmap_get(inf->map, key);
    enum common_rc rc;

    if (!old)
        return COMMON_OK;
    if (note_change(inf, old, NULL) != 0)
        return common_error_set(err, COMMON_ENOMEM, "%s cache: out of memory", inf->ops.name);
    rc = common_pmap_del(inf->map, key);
    return rc ? common_error_set(err, rc, "%s cache: out of memory", inf->ops.name) : COMMON_OK;
}

/* ---- list ---- */

struct list_state {
    struct common_informer *inf;
    struct common_pmap *seen; /* keys in the new list (no items) */
    enum common_rc rc;
};

static enum common_rc list_add(void *ctx, void *item, struct common_error *err)
{
    struct list_state *ls = ctx;
    char key[KEY_MAX];
    static char present;

    ls->inf->ops.key(item, key, sizeof(key));
    if (common_pmap_set(ls->seen, key, &present)) {
        ls->inf->ops.release(item);
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return apply_upsert(ls->inf, item, err);
}

static enum common_rc pod_cb(void *ctx, struct common_pod *pod, struct common_error *err)
{
    return list_add(ctx, pod, err);
}

static enum common_rc node_cb(void *ctx, struct common_node *node, struct common_error *err)
{
    return list_add(ctx, node, err);
}

static void query(char *buf, size_t size, const char *key, const char *value)
{
    size_t len = strlen(buf);
    char *esc;

    if (!value || !*value)
        return;
    esc = common_kube_escape(value);
    snprintf(buf + len, size - len, "%c%s=%s", strchr(buf, '?') ? '&' : '?', key,
             esc ? esc : value);
    common_free(esc);
}

/* one page of a protobuf list */
static enum common_rc list_page_pb(struct common_informer *inf, struct list_state *ls,
                                   const char *cont, char **next, char **rv,
                                   struct common_error *err)
{
    char path[4096], limit[32];
    struct common_buf body;
    struct common_list_meta meta;
    long status;
    enum common_rc rc;

    *next = NULL;
    if (common_kube_path(inf->ops.resource, inf->ns, NULL, NULL, path, sizeof(path)))
        return common_error_set(err, COMMON_EINVAL, "path too long");
    snprintf(limit, sizeof(limit), "%ld", inf->opts.page_size > 0 ? inf->opts.page_size : 5000);
    query(path, sizeof(path), "limit", limit);
    query(path, sizeof(path), "labelSelector", inf->label_selector);
    query(path, sizeof(path), "fieldSelector", inf->field_selector);
    query(path, sizeof(path), "continue", cont);
    common_buf_init(&body, (size_t)1 << 30);
    rc = common_kube_request(inf->kube, "GET", path, NULL, NULL, 0,
                             "application/vnd.kubernetes.protobuf, application/json", &body,
                             &status, err);
    memset(&meta, 0, sizeof(meta));
    if (!rc) {
        if (inf->ops.pb_kind == COMMON_KIND_POD)
            rc = common_pod_list_from_protobuf(body.data, body.len, pod_cb, ls, &meta, err);
        else
            rc = common_node_list_from_protobuf(body.data, body.len, node_cb, ls, &meta, err);
    }
    common_buf_free(&body);
    if (!rc) {
        if (meta.continue_token && *meta.continue_token)
            *next = common_strdup(meta.continue_token);
        if (meta.resource_version && *meta.resource_version) {
            common_free(*rv);
            *rv = common_strdup(meta.resource_version);
        }
    }
    common_list_meta_clear(&meta);
    return rc;
}

static int drop_unseen(const char *key, void *item, void *ctx)
{
    struct list_state *ls = ctx;
    (void)item;
    if (!common_pmap_get(ls->seen, key) && apply_delete(ls->inf, key, NULL))
        return 1;
    return 0;
}

/* a full list, diffed into the cache; *rv gets the list's resourceVersion */
static enum common_rc relist(struct common_informer *inf, char **rv, struct common_error *err)
{
    struct list_state ls;
    struct common_pmap_snap *before;
    enum common_rc rc;

    memset(&ls, 0, sizeof(ls));
    ls.inf = inf;
    *rv = NULL;
    if (common_pmap_create(NULL, NULL, &ls.seen))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    /* the published version equals the writer's: every change is published at once */
    before = common_pmap_snapshot(inf->map);
    if (inf->ops.pb_kind) {
        char *cont = NULL, *next = NULL;
        do {
            rc = list_page_pb(inf, &ls, cont, &next, rv, err);
            common_free(cont);
            cont = next;
        } while (!rc && cont && !inf->stop);
        common_free(cont);
    } else {
        struct common_kube_list_opts lo = {.label_selector = inf->label_selector,
                                           .field_selector = inf->field_selector,
                                           .limit = inf->opts.page_size > 0 ? inf->opts.page_size
                                                                            : 5000};
        json_t *items = NULL, *it;
        size_t i;
        rc = common_kube_list(inf->kube, inf->ops.resource, inf->ns, &lo, &items, rv, err);
        json_array_foreach(items, i, it)
        {
            void *item = NULL;
            if (rc)
                break;
            rc = inf->ops.from_json(it, &item, err);
            if (!rc)
                rc = list_add(&ls, item, err);
        }
        json_decref(items);
    }
    if (!rc && before && common_pmap_snap_foreach(before, drop_unseen, &ls))
        rc = common_error_set(err, COMMON_ENOMEM, "%s cache: out of memory", inf->ops.name);
    common_pmap_snap_release(before);
    common_pmap_destroy(ls.seen);
    if (publish(inf) && !rc)
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
    return rc;
}

/* ---- watch ---- */

struct watch_state {
    struct common_informer *inf;
    enum common_rc rc;
    struct common_error *err;
};

static int on_event(void *ctx, const char *type, const json_t *obj, const void *raw, size_t len)
{
    struct watch_state *ws = ctx;
    struct common_informer *inf = ws->inf;
    enum common_rc rc = COMMON_OK;
    const char *rv = NULL;
    char key[KEY_MAX];

    if (raw) {
        struct common_watch_event ev;
        void *item;
        rc = common_watch_decode_frame(raw, len, inf->ops.pb_kind, &ev, ws->err);
        if (rc) {
            ws->rc = rc;
            return 1;
        }
        if (ev.type == COMMON_WATCH_ERROR) {
            ws->rc = common_error_set(ws->err, ev.status_code == 410 ? COMMON_EGONE : COMMON_EAPI,
                                      "watch %s: %d %s", inf->ops.name, ev.status_code,
                                      ev.status_message ? ev.status_message : "");
            common_watch_event_clear(&ev);
            return 1;
        }
        set_rv(inf, ev.resource_version);
        item = inf->ops.pb_kind == COMMON_KIND_POD ? (void *)ev.pod : (void *)ev.node;
        ev.pod = NULL;
        ev.node = NULL;
        if (ev.type == COMMON_WATCH_BOOKMARK) {
            count(inf, &inf->stats.bookmarks);
        } else if (item && ev.type == COMMON_WATCH_DELETED) {
            inf->ops.key(item, key, sizeof(key));
            rc = apply_delete(inf, key, ws->err);
            inf->ops.release(item);
            count(inf, &inf->stats.events);
        } else if (item) {
            rc = apply_upsert(inf, item, ws->err);
            count(inf, &inf->stats.events);
        }
        common_watch_event_clear(&ev);
    } else {
        void *item = NULL;
        rv =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
        if (strcmp(type, "BOOKMARK") == 0) {
            set_rv(inf, rv);
            count(inf, &inf->stats.bookmarks);
            return 0;
        }
        rc = inf->ops.from_json(obj, &item, ws->err);
        if (!rc && strcmp(type, "DELETED") == 0) {
            inf->ops.key(item, key, sizeof(key));
            rc = apply_delete(inf, key, ws->err);
            inf->ops.release(item);
        } else if (!rc) {
            rc = apply_upsert(inf, item, ws->err);
        }
        if (!rc) {
            set_rv(inf, rv);
            count(inf, &inf->stats.events);
        }
    }
    if (publish(inf) && !rc)
        rc = common_error_set(ws->err, COMMON_ENOMEM, "out of memory");
    if (rc) {
        ws->rc = rc;
        return 1;
    }
    return inf->stop ? 1 : 0;
}

static void sleep_ms(struct common_informer *inf, long ms)
{
    while (ms > 0 && !inf->stop) {
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
        ms -= 100;
    }
}

static void *run(void *arg)
{
    struct common_informer *inf = arg;
    struct common_error err;
    long backoff = 1000;
    int need_list = 1, failures = 0;
    int quiet = 0;     /* the last watch ended stalled with nothing delivered: said once */
    int delivered = 0; /* the last watch delivered an event or a bookmark */
    uint64_t events_before = 0;

    while (!inf->stop) {
        enum common_rc rc;
        if (need_list) {
            char *rv = NULL;
            rc = relist(inf, &rv, &err);
            if (rc) {
                common_free(rv);
                count(inf, &inf->stats.errors);
                /* a client cut by a stopping process: expected, not a warning */
                common_log(common_kube_canceled(inf->kube) ? COMMON_LOG_DEBUG : COMMON_LOG_WARN,
                           "list failed", "informer", inf->ops.name, "error", err.msg, NULL);
                sleep_ms(inf, backoff);
                backoff = backoff * 2 > 30000 ? 30000 : backoff * 2;
                continue;
            }
            set_rv(inf, rv);
            common_free(rv);
            count(inf, &inf->stats.lists);
            pthread_mutex_lock(&inf->lock);
            inf->synced = 1;
            pthread_cond_broadcast(&inf->cond);
            pthread_mutex_unlock(&inf->lock);
            need_list = 0;
            failures = 0;
            backoff = 1000;
        }
        {
            char rv[128];
            struct watch_state ws = {inf, COMMON_OK, &err};
            struct common_kube_watch_opts wo;
            memset(&wo, 0, sizeof(wo));
            common_informer_last_rv(inf, rv, sizeof(rv));
            wo.resource_version = rv;
            wo.timeout_seconds =
                inf->opts.watch_timeout_seconds > 0 ? inf->opts.watch_timeout_seconds : 300;
            wo.bookmarks = 1;
            wo.protobuf = inf->ops.pb_kind != 0;
            wo.label_selector = inf->label_selector;
            wo.field_selector = inf->field_selector;
            wo.stop = &inf->stop;
            /* default: the watch's own timeout plus 30 s, at most two minutes */
            wo.stall_ms =
                inf->opts.stall_ms > 0 ? inf->opts.stall_ms : (wo.timeout_seconds + 30) * 1000L;
            if (inf->opts.stall_ms <= 0 && wo.stall_ms > 120000)
                wo.stall_ms = 120000;
            count(inf, &inf->stats.watches);
            pthread_mutex_lock(&inf->lock);
            events_before = inf->stats.events + inf->stats.bookmarks;
            pthread_mutex_unlock(&inf->lock);
            rc = common_kube_watch(inf->kube, inf->ops.resource, inf->ns, &wo, on_event, &ws, &err);
            if (!rc)
                rc = ws.rc;
        }
        if (inf->stop)
            break;
        {
            /* a watch that delivered something was healthy: its failure starts a new count */
            uint64_t events_after;
            pthread_mutex_lock(&inf->lock);
            events_after = inf->stats.events + inf->stats.bookmarks;
            pthread_mutex_unlock(&inf->lock);
            delivered = events_after != events_before;
            if (delivered) {
                failures = 0;
                backoff = 1000;
                quiet = 0;
            }
        }
        if (rc == COMMON_OK) {
            failures = 0;
            backoff = 1000;
            continue; /* the server ended the watch: resume from the last version */
        }
        count(inf, &inf->stats.errors);
        if (rc == COMMON_ETIMEOUT && !delivered) { /* stalled (common_kube_watch), silent */
            /* a watch on a quiet resource that delivered nothing before it stalled (no event,
             * no bookmark: the API server sends no bookmarks where its watch cache is off) is a
             * steady state, not news: said at info the first time, at debug while it stays so.
             * A stream that stalls after delivering something is a failure (below). */
            common_log(quiet ? COMMON_LOG_DEBUG : COMMON_LOG_INFO, "watch quiet, reconnecting",
                       "informer", inf->ops.name, "error", err.msg, NULL);
            quiet = 1;
        } else if (common_kube_canceled(inf->kube)) {
            common_log(COMMON_LOG_DEBUG, "watch cancelled", "informer", inf->ops.name, NULL);
        } else {
            common_log(rc == COMMON_EGONE ? COMMON_LOG_INFO : COMMON_LOG_WARN,
                       rc == COMMON_EGONE ? "watch expired, relisting" : "watch failed", "informer",
                       inf->ops.name, "error", err.msg, NULL);
        }
        if (rc == COMMON_EGONE || ++failures >= 3) {
            need_list = 1;
            if (rc == COMMON_EGONE)
                continue;
        }
        sleep_ms(inf, backoff);
        backoff = backoff * 2 > 30000 ? 30000 : backoff * 2;
    }
    return NULL;
}

enum common_rc common_informer_start(struct common_informer *inf, struct common_error *err)
{
    if (inf->running)
        return COMMON_OK;
    inf->stop = 0;
    if (pthread_create(&inf->thread, NULL, run, inf))
        return common_error_set(err, COMMON_ENOMEM, "cannot start the %s informer thread",
                                inf->ops.name);
    inf->running = 1;
    return COMMON_OK;
}

void common_informer_request_stop(struct common_informer *inf)
{
    if (inf)
        inf->stop = 1;
}

void common_informer_stop(struct common_informer *inf)
{
    if (!inf || !inf->running)
        return;
    inf->stop = 1;
    pthread_join(inf->thread, NULL);
    inf->running = 0;
}
