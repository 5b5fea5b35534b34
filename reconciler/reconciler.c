/*
 * reconciler/reconciler.c - the TrainJob controller glue (see reconciler.h): informers feed the
 * work queue, workers run one reconcile per key around the pure cores of trainjob/ and
 * reconciler/core.h.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/informer.h"
#include "common/log.h"
#include "common/sshkey.h"
#include "integrations/backend.h"
#include "integrations/kai.h"
#include "integrations/slurm_sync.h"
#include "integrations/volcano.h"
#include "reconciler/core.h"
#include "reconciler/reconciler.h"
#include "trainjob/status.h"

#define TJ_API "trainer.kubeflow.org/v1alpha1"
#define KEY_MAX 512
#define RC_MAX_BACKENDS 16

/* PriorityClasses (INF_PC) and Volcano Queues (INF_VQ, where served): what a gang object names
 * must exist before it is written (Trainer's Volcano rule; integrations/volcano.c) */
static const struct common_kube_resource priorityclasses = {"scheduling.k8s.io", "v1",
                                                            "priorityclasses", 0};

enum inf_kind {
    INF_TJ,
    INF_TR,
    INF_CTR,
    INF_JS,
    INF_CM,
    INF_PG,
    INF_VPG,
    INF_NPG,
    INF_KPG,
    INF_PC,
    INF_VQ,
    INF_N
};

/*
 * The memo of applies: per child ("kind/namespace/name"), a hash of the body last applied and
 * the resourceVersion the API server answered. While the cached child still has that
 * resourceVersion (nobody wrote it since) and the new body hashes the same, the apply would
 * change nothing, so it is skipped: Trainer's "re-apply while suspended" costs no request when
 * nothing changed. Lost on restart (one apply per child then).
 */
struct memo_entry {
    char *key; /* NULL: empty slot; MEMO_TOMB: deleted */
    uint64_t hash;
    char rv[48];
};
#define MEMO_TOMB ((char *)1)

struct memo {
    pthread_mutex_t mu;
    struct memo_entry *slots;
    size_t cap, used; /* used counts live keys and tombstones */
};

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* slot of key (or the free slot where it would go); the table is never full */
static struct memo_entry *memo_slot(struct memo *m, const char *key, int for_insert)
{
    size_t i = (size_t)fnv1a(key, strlen(key)) & (m->cap - 1);
    struct memo_entry *tomb = NULL;
    for (;;) {
        struct memo_entry *e = &m->slots[i];
        if (!e->key)
            return for_insert && tomb ? tomb : e;
        if (e->key == MEMO_TOMB) {
            if (!tomb)
                tomb = e;
        } else if (strcmp(e->key, key) == 0) {
            return e;
        }
        i = (i + 1) & (m->cap - 1);
    }
}

static int memo_grow(struct memo *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024, ocap = m->cap;
    struct memo_entry *old = m->slots, *n = common_calloc(ncap, sizeof(*n));
    if (!n)
        return -1;
    m->slots = n;
    m->cap = ncap;
    m->used = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key && old[i].key != MEMO_TOMB) {
            *memo_slot(m, old[i].key, 1) = old[i];
            m->used++;
        }
    common_free(old);
    return 0;
}

/* 1 when key was last applied with hash and answered rv (so an apply now changes nothing) */
static int memo_same(struct memo *m, const char *key, uint64_t hash, const char *rv)
{
    int same = 0;
    pthread_mutex_lock(&m->mu);
    if (m->cap) {
        struct memo_entry *e = memo_slot(m, key, 0);
        same = e->key && e->key != MEMO_TOMB && e->hash == hash && rv && strcmp(e->rv, rv) == 0;
    }
    pthread_mutex_unlock(&m->mu);
    return same;
}

static void memo_put(struct memo *m, const char *key, uint64_t hash, const char *rv)
{
    struct memo_entry *e;
    pthread_mutex_lock(&m->mu);
    if ((m->used + 1) * 2 > m->cap && memo_grow(m) != 0) {
        pthread_mutex_unlock(&m->mu);
        return; /* no memory: no memo, the next apply is simply sent */
    }
    e = memo_slot(m, key, 1);
    if (!e->key || e->key == MEMO_TOMB) {
        char *k = common_strdup(key);
        if (!k) {
            pthread_mutex_unlock(&m->mu);
            return;
        }
        if (!e->key)
            m->used++;
        e->key = k;
    }
    e->hash = hash;
    snprintf(e->rv, sizeof(e->rv), "%s", rv ? rv : "");
    pthread_mutex_unlock(&m->mu);
}

static void memo_del(struct memo *m, const char *key)
{
    pthread_mutex_lock(&m->mu);
    if (m->cap) {
        struct memo_entry *e = memo_slot(m, key, 0);
        if (e->key && e->key != MEMO_TOMB) {
            common_free(e->key);
            e->key = MEMO_TOMB;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

static void memo_free(struct memo *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key && m->slots[i].key != MEMO_TOMB)
            common_free(m->slots[i].key);
    common_free(m->slots);
    pthread_mutex_destroy(&m->mu);
}

/* "JobSet/ns/name" of an object */
static void memo_key(const json_t *obj, char *buf, size_t size)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    snprintf(buf, size, "%s/%s/%s/%s", api ? api : "", kind ? kind : "",
             json_string_value(json_object_get(meta, "namespace"))
                 ? json_string_value(json_object_get(meta, "namespace"))
                 : "",
             json_string_value(json_object_get(meta, "name"))
                 ? json_string_value(json_object_get(meta, "name"))
                 : "");
}

struct rc_reconciler;

struct inf_slot {
    struct rc_reconciler *r;
    enum inf_kind kind;
    struct common_informer_ops ops;
    struct common_informer *inf;
};

struct rc_reconciler {
    struct rc_opts o;
    char field_manager[128];
    char namespace[254];
    char gang_scheduler_name[254];
    char default_backend[64];
    char kai_default_queue[254];
    char trainer_status_url[512];
    char volcano_queue[254], volcano_tiers[1024];
    int kai_queues_served; /* scheduling.run.ai/v2 queues answered at start */
    /* the native backend: the API version the cluster serves (enum backend_native_api; -1:
     * neither), when it was last looked for (monotonic s), and the RC_NATIVE_* fields the API
     * server was seen to drop (their gates off); native_discover keeps them */
    atomic_int native_api;
    _Atomic double native_checked;
    atomic_uint native_dropped;
    /* per backend of backend_table (same index): the first API it requires that the cluster
     * did not serve at start, or NULL */
    const struct common_kube_resource *backend_missing[RC_MAX_BACKENDS];
    struct rc_queue *q;
    struct inf_slot inf[INF_N];
    pthread_t *threads;
    int nthreads;
    atomic_int synced, stopped;
    atomic_uint_fast64_t reconciles, errors, status_writes, creates, applies, deletes,
        applies_skipped;
    struct memo memo;
    struct common_metric *m_total, *m_duration, *m_writes;
};

/* ---------------------------------------------------------------------------------------- */
/* informers and the handlers that queue keys */

static void obj_key(const json_t *obj, char *buf, size_t size)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    snprintf(buf, size, "%s/%s", ns ? ns : "", name ? name : "");
}

static void enqueue_owner(struct rc_reconciler *r, const json_t *obj)
{
    const char *owner = NULL, *ns;
    char key[KEY_MAX];

    if (!obj || !rc_controller_owner(obj, &owner, NULL))
        return;
    ns = json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace"));
    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", owner);
    rc_queue_add(r->q, key);
}

struct waiting_scan {
    struct rc_reconciler *r;
    const char *kind, *name, *ns; /* the runtime that changed; ns NULL for cluster-scoped */
};

static int waiting_visit(const char *key, void *item, void *ctx)
{
    struct waiting_scan *s = ctx;
    const json_t *tj = item;
    const json_t *ref = json_object_get(json_object_get(tj, "spec"), "runtimeRef");
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    const json_t *cond = trainjob_status_condition(json_object_get(tj, "status"), RC_COND_CREATED);

    if (!kind)
        kind = "ClusterTrainingRuntime";
    if (!cond || !name || strcmp(name, s->name) != 0 || strcmp(kind, s->kind) != 0)
        return 0;
    if (s->ns) {
        const char *ns =
            json_string_value(json_object_get(json_object_get(tj, "metadata"), "namespace"));
        if (!ns || strcmp(ns, s->ns) != 0)
            return 0;
    }
    rc_queue_add(s->r->q, key);
    return 0;
}

/* A runtime appeared or changed: queue the TrainJobs that wait for it (ResourcesCreated set). */
static void runtime_changed(struct rc_reconciler *r, enum inf_kind kind, const json_t *rt)
{
    const json_t *meta = json_object_get(rt, "metadata");
    struct waiting_scan s = {r, kind == INF_TR ? "TrainingRuntime" : "ClusterTrainingRuntime",
                             json_string_value(json_object_get(meta, "name")),
                             kind == INF_TR ? json_string_value(json_object_get(meta, "namespace"))
                                            : NULL};
    struct common_pmap_snap *snap;

    if (!s.name || !r->inf[INF_TJ].inf)
        return;
    snap = common_informer_snapshot(r->inf[INF_TJ].inf);
    if (snap) {
        common_pmap_snap_foreach(snap, waiting_visit, &s);
        common_pmap_snap_release(snap);
    }
}

static int blocked_visit(const char *key, void *item, void *ctx)
{
    const json_t *cond =
        trainjob_status_condition(json_object_get(item, "status"), RC_COND_CREATED);
    const char *st = json_string_value(json_object_get(cond, "status"));
    if (st && strcmp(st, "False") == 0)
        rc_queue_add(((struct rc_reconciler *)ctx)->q, key);
    return 0;
}

/* A PriorityClass or a Volcano Queue appeared: queue the TrainJobs that could not be built
 * (ResourcesCreated=False), one of which may have named it. */
static void enqueue_blocked(struct rc_reconciler *r)
{
    struct common_pmap_snap *snap;

    if (!r->inf[INF_TJ].inf)
        return;
    snap = common_informer_snapshot(r->inf[INF_TJ].inf);
    if (snap) {
        common_pmap_snap_foreach(snap, blocked_visit, r);
        common_pmap_snap_release(snap);
    }
}

/* A ConfigMap named <name>-runtime-snapshot concerns TrainJob <name> whoever controls it: a
 * hand-made one blocks the TrainJob (InvalidRuntimeSnapshot) until it is deleted. */
static void enqueue_snapshot_name(struct rc_reconciler *r, const json_t *cm)
{
    static const char suffix[] = "-runtime-snapshot";
    const json_t *meta = json_object_get(cm, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    size_t n = name ? strlen(name) : 0, sl = sizeof(suffix) - 1;
    char key[KEY_MAX];

    if (n <= sl || strcmp(name + n - sl, suffix) != 0)
        return;
    snprintf(key, sizeof(key), "%s/%.*s", ns ? ns : "", (int)(n - sl), name);
    rc_queue_add(r->q, key);
}

static void on_add(void *ctx, const void *item)
{
    struct inf_slot *s = ctx;
    char key[KEY_MAX];

    switch (s->kind) {
    case INF_TJ:
        obj_key(item, key, sizeof(key));
        rc_queue_add(s->r->q, key);
        break;
    case INF_TR:
    case INF_CTR:
        runtime_changed(s->r, s->kind, item);
        break;
    case INF_CM:
        enqueue_snapshot_name(s->r, item);
        enqueue_owner(s->r, item);
        break;
    case INF_PC:
    case INF_VQ:
        enqueue_blocked(s->r);
        break;
    default:
        enqueue_owner(s->r, item);
    }
}

static void on_update(void *ctx, const void *old_item, const void *new_item)
{
    struct inf_slot *s = ctx;
    (void)old_item;
    if (s->kind == INF_PC || s->kind == INF_VQ)
        return; /* only appearing matters (a Queue's status changes often) */
    on_add(s, new_item);
}

static void on_delete(void *ctx, const void *old_item)
{
    struct inf_slot *s = ctx;
    /* a deleted TrainJob needs nothing (ownerReference GC removes its children); a deleted
     * child must come back; a deleted runtime changes nothing (snapshots) */
    if (s->kind == INF_TJ && s->r->o.slurm && slurm_sync_selected(old_item, NULL)) {
        struct common_error e = {0};
        if (slurm_sync_deleted(s->r->o.slurm, old_item, &e) != COMMON_OK)
            common_log(COMMON_LOG_WARN, "Slurm job of a deleted TrainJob not cancelled", "error",
                       e.msg, NULL);
    }
    if (s->kind == INF_CM)
        enqueue_snapshot_name(s->r, old_item);
    if (s->kind == INF_JS || s->kind == INF_PG || s->kind == INF_VPG || s->kind == INF_NPG ||
        s->kind == INF_KPG) {
        char mkey[KEY_MAX];
        memo_key(old_item, mkey, sizeof(mkey));
        memo_del(&s->r->memo, mkey);
    }
    if (s->kind != INF_TJ && s->kind != INF_TR && s->kind != INF_CTR && s->kind != INF_PC &&
        s->kind != INF_VQ)
        enqueue_owner(s->r, old_item);
}

/*
 * Every cached object without metadata.managedFields (nothing here reads them; they are about
 * half of a cached TrainJob, JobSet or PodGroup): a shallow copy sharing every other value.
 */
static enum common_rc strip_from_json(const json_t *obj, void **item, struct common_error *err)
{
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *copy, *mcopy;

    if (!json_is_string(json_object_get(meta, "name")))
        return common_error_set(err, COMMON_EINVAL, "object without metadata.name");
    if (!json_object_get(meta, "managedFields")) {
        *item = json_incref((json_t *)obj);
        return COMMON_OK;
    }
    copy = json_copy((json_t *)obj);
    mcopy = json_copy((json_t *)meta);
    if (!copy || !mcopy || json_object_del(mcopy, "managedFields") ||
        json_object_set_new(copy, "metadata", mcopy)) {
        json_decref(copy);
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    *item = copy;
    return COMMON_OK;
}

/*
 * ConfigMaps: every ConfigMap of the cluster passes through this watch, so only those a
 * TrainJob controls are kept whole; the others are kept as their bare metadata (name,
 * namespace, resourceVersion) so the cache stays small.
 */
static enum common_rc cm_from_json(const json_t *obj, void **item, struct common_error *err)
{
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *slim;

    if (!json_is_string(json_object_get(meta, "name")))
        return common_error_set(err, COMMON_EINVAL, "object without metadata.name");
    if (rc_controller_owner(obj, NULL, NULL))
        return strip_from_json(obj, item, err);
    slim = json_pack("{s:{s:O?, s:O?, s:O?}}", "metadata", "name", json_object_get(meta, "name"),
                     "namespace", json_object_get(meta, "namespace"), "resourceVersion",
                     json_object_get(meta, "resourceVersion"));
    if (!slim)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    *item = slim;
    return COMMON_OK;
}

/* *served = 1 when the CRD's resource is served (a list with limit=1 answers), 0 when the API
 * server answers 404; an API server that cannot be asked is an error (retried up to the
 * cache sync timeout), never taken for "not served" */
static enum common_rc resource_served(struct rc_reconciler *r,
                                      const struct common_kube_resource *res, int *served,
                                      struct common_error *err)
{
    char path[512];

    if (common_kube_path(res, NULL, NULL, NULL, path, sizeof(path) - 16) != 0)
        return common_error_set(err, COMMON_EINVAL, "reconciler: no path for %s", res->resource);
    strncat(path, "?limit=1", sizeof(path) - strlen(path) - 1);
    return common_kube_served(r->o.kube, path, r->o.sync_timeout_ms, served, err);
}

static double mono_s(void);

/* the native backend: while neither API is served it is looked for again this often; while one
 * is, no more often than NATIVE_REDISCOVER_S (an upgrade is also seen at once: an apply of the
 * old version answers 404) */
#define NATIVE_RECHECK_S 30
#define NATIVE_REDISCOVER_S 300

/*
 * Which API the native backend writes: scheduling.k8s.io/v1beta1 when the cluster serves its
 * workloads and podgroups (Kubernetes 1.37), else v1alpha2 podgroups (1.36), else neither (-1).
 * A change is logged and forgets the fields the old server dropped. Errors: as resource_served
 * (the API server did not answer), r->native_api untouched.
 */
static enum common_rc native_discover(struct rc_reconciler *r, struct common_error *err)
{
    int wl = 0, pg = 0, a2 = 0, api = -1, old;
    enum common_rc rc;

    if ((rc = resource_served(r, &backend_native_workloads_v1beta1, &wl, err)) ||
        (rc = resource_served(r, &backend_native_podgroups_v1beta1, &pg, err)))
        return rc;
    if (wl && pg)
        api = BACKEND_NATIVE_V1BETA1;
    else if ((rc = resource_served(r, &backend_native_podgroups, &a2, err)))
        return rc;
    else if (a2)
        api = BACKEND_NATIVE_V1ALPHA2;
    atomic_store(&r->native_checked, mono_s());
    old = atomic_exchange(&r->native_api, api);
    if (old != api) {
        atomic_store(&r->native_dropped, 0u);
        common_log(COMMON_LOG_INFO, "native backend: the scheduling.k8s.io API served", "version",
                   api < 0 ? "neither v1beta1 nor v1alpha2"
                           : backend_native_api_version((enum backend_native_api)api),
                   "before",
                   old < 0 ? "none" : backend_native_api_version((enum backend_native_api)old),
                   NULL);
    }
    return COMMON_OK;
}

/* native_discover again when it is due (see NATIVE_RECHECK_S); a failure is logged, and the
 * version known stays */
static void native_rediscover_due(struct rc_reconciler *r)
{
    double age = mono_s() - atomic_load(&r->native_checked);
    struct common_error err = {0};

    if (age < (atomic_load(&r->native_api) < 0 ? NATIVE_RECHECK_S : NATIVE_REDISCOVER_S))
        return;
    if (native_discover(r, &err) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "native backend: the served API not looked up", "error",
                   err.msg, NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* one reconcile */

struct rctx {
    struct rc_reconciler *r;
    struct common_arena *a;
    struct common_pmap_snap *snaps[INF_N];
    const json_t *tj;
    const char *ns, *name, *uid;
    int64_t now;
    json_t *status;      /* the new status being built (owned) */
    json_t *live_cm;     /* the snapshot read from the API server when the cache lagged (owned) */
    json_t *live_native; /* native v1beta1 objects read from the API server (owned array) */
    struct rc_result *res;
    struct slurm_sync_result slurm; /* the Slurm backend's step (docs/slurm.md) */
    /* what the backend could not carry (render's notes), for the condition and Event */
    struct backend_notes notes;
    unsigned native_fields; /* RC_NATIVE_* fields the rendered native objects set */
};

static const json_t *cache_get(struct rctx *c, enum inf_kind kind, const char *ns, const char *name)
{
    char key[KEY_MAX];
    if (!c->snaps[kind])
        return NULL;
    if (ns)
        snprintf(key, sizeof(key), "%s/%s", ns, name);
    else
        snprintf(key, sizeof(key), "%s", name);
    return common_pmap_snap_get(c->snaps[kind], key);
}

static void event(struct rctx *c, enum common_event_type type, const char *reason,
                  const char *action, const char *note)
{
    struct common_event_ref ref = {TJ_API, "TrainJob", c->ns, c->name, c->uid};
    struct common_error err;
    if (c->r->o.events)
        common_events_record(c->r->o.events, &ref, type, reason, action, note, &err);
}

static void count_write(struct rctx *c, const char *verb)
{
    const char *lv[] = {verb};
    if (c->r->m_writes)
        common_metric_add(c->r->m_writes, lv, 1);
}

/* status = a copy of the TrainJob's (or {}), for the paths that do not reach the JobSet. */
static enum common_rc status_copy(struct rctx *c, struct common_error *err)
{
    const json_t *old = json_object_get(c->tj, "status");
    c->status = json_is_object(old) ? json_deep_copy(old) : json_object();
    if (!c->status)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

/* Write c->status when it differs from the TrainJob's. */
static enum common_rc write_status(struct rctx *c, struct common_error *err)
{
    int nomem = 0;
    json_t *patch = rc_status_patch(json_object_get(c->tj, "status"), c->status, &nomem);
    struct common_kube_write_opts wo = {.subresource = "status"};
    enum common_rc rc;
    char *body;

    if (nomem)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (!patch)
        return COMMON_OK;
    body = json_dumps(patch, JSON_COMPACT);
    json_decref(patch);
    if (!body)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = common_kube_patch(c->r->o.kube, &common_kube_trainjobs, c->ns, c->name,
                           COMMON_KUBE_MERGE_PATCH, body, &wo, NULL, err);
    free(body);
    if (rc == COMMON_ENOTFOUND)
        return COMMON_OK; /* deleted meanwhile */
    if (rc == COMMON_OK) {
        c->res->status_written = 1;
        atomic_fetch_add(&c->r->status_writes, 1);
        count_write(c, "status");
    }
    return rc;
}

/*
 * Building failed: ResourcesCreated=False with reason and message, a Warning Event when the
 * condition is new or its message changed, and the status written. Returns the code to hand
 * the worker: `rc` when it is worth retrying, else COMMON_OK (wait for a change).
 */
static enum common_rc fail(struct rctx *c, const char *reason, const char *message,
                           enum common_rc rc, struct common_error *err)
{
    const json_t *old =
        trainjob_status_condition(json_object_get(c->tj, "status"), RC_COND_CREATED);
    const char *old_msg = json_string_value(json_object_get(old, "message"));
    struct common_error werr;
    char msg[1100];
    enum common_rc wrc;

    snprintf(msg, sizeof(msg), "%s", message ? message : "");
    if (!old || !old_msg || strcmp(old_msg, msg) != 0) {
        char note[1100];
        snprintf(note, sizeof(note), "TrainJob resources reconciliation failed: %s", msg);
        event(c, COMMON_EVENT_WARNING, reason, "Reconciling", note);
    }
    common_log(COMMON_LOG_WARN, "reconcile failed", "namespace", c->ns, "trainjob", c->name,
               "reason", reason, "error", msg, NULL);
    c->res->reason = reason;
    if (!c->status && status_copy(c, &werr) != COMMON_OK)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (trainjob_status_set_condition(c->status, RC_COND_CREATED, "False", reason, msg, c->now,
                                      &werr) != COMMON_OK)
        return common_error_set(err, werr.code, "%s", werr.msg);
    wrc = write_status(c, &werr);
    if (rc_transient(rc)) {
        common_error_set(err, rc, "%s", msg);
        return rc;
    }
    if (wrc != COMMON_OK) {
        common_error_set(err, wrc, "%s", werr.msg);
        return wrc;
    }
    return COMMON_OK;
}

static const struct common_kube_resource *resource_of(const json_t *obj)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    switch (rc_child_kind_of(obj)) {
    case RC_CHILD_SNAPSHOT:
    case RC_CHILD_CONFIGMAP:
        return &common_kube_configmaps;
    case RC_CHILD_SECRET:
        return &common_kube_secrets;
    case RC_CHILD_JOBSET:
        return &common_kube_jobsets;
    case RC_CHILD_PODGROUP:
        if (strcmp(api, "scheduling.k8s.io/v1beta1") == 0)
            return strcmp(json_string_value(json_object_get(obj, "kind")), "Workload") == 0
                       ? &backend_native_workloads_v1beta1
                       : &backend_native_podgroups_v1beta1;
        if (strncmp(api, "scheduling.k8s.io/", 18) == 0)
            return &backend_native_podgroups;
        if (strncmp(api, "scheduling.run.ai/", 18) == 0)
            return &backend_kai_podgroups;
        return strncmp(api, "scheduling.volcano.sh/", 22) == 0 ? &volcano_podgroups
                                                               : &common_kube_podgroups;
    case RC_CHILD_OTHER:
        break;
    }
    return NULL;
}

static const json_t *existing_of(struct rctx *c, const json_t *obj)
{
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    if (!name)
        return NULL;
    switch (rc_child_kind_of(obj)) {
    case RC_CHILD_SNAPSHOT:
        return cache_get(c, INF_CM, c->ns, name);
    case RC_CHILD_JOBSET:
        return cache_get(c, INF_JS, c->ns, name);
    case RC_CHILD_PODGROUP:
        if (strcmp(api, "scheduling.k8s.io/v1beta1") == 0)
            return NULL; /* not cached: read live (native_live) */
        if (strncmp(api, "scheduling.k8s.io/", 18) == 0)
            return cache_get(c, INF_NPG, c->ns, name);
        if (strncmp(api, "scheduling.run.ai/", 18) == 0)
            return cache_get(c, INF_KPG, c->ns, name);
        return cache_get(c, strncmp(api, "scheduling.volcano.sh/", 22) == 0 ? INF_VPG : INF_PG,
                         c->ns, name);
    default:
        return NULL; /* not cached: created (AlreadyExists is fine) or applied */
    }
}

/* An existing child that a different owner controls is not ours to take over. */
static int foreign(struct rctx *c, const json_t *existing)
{
    const char *uid = NULL;
    if (!existing || !json_object_get(existing, "spec"))
        return 0;
    return !rc_controller_owner(existing, NULL, &uid) || !uid || strcmp(uid, c->uid) != 0;
}

/*
 * Delete existing and create obj in its place, for a child the API server will not update:
 *  - a native PodGroup resized while its TrainJob is suspended (rc_child_replace: its spec is
 *    immutable); rv NULL;
 *  - a suspended JobSet whose apply JobSet's webhook refused for an immutable field
 *    (rc_jobset_refused); rv = the cached resourceVersion, so a JobSet that changed since (it
 *    may have been resumed) is not deleted: ECONFLICT, and the reconcile looks again.
 * The delete is conditioned on the existing uid (and rv); when the old object is still there (a
 * finalizer such as scheduling.k8s.io/podgroup-protection holds it), the create answers
 * AlreadyExists and the reconcile is retried (ECONFLICT, transient). An Event of reason says
 * why (the text `why`). *created (may be NULL) gets the new object.
 */
static enum common_rc replace_child(struct rctx *c, const struct common_kube_resource *res,
                                    const json_t *obj, const json_t *existing, const char *rv,
                                    const struct common_kube_write_opts *wo, const char *reason,
                                    const char *why, json_t **created, struct common_error *err)
{
    const json_t *meta = json_object_get(existing, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    enum common_rc rc;
    char note[900];

    rc = common_kube_delete(c->r->o.kube, res, c->ns, name, uid, rv, "Background", err);
    if (rc == COMMON_ECONFLICT && rv)
        return common_error_set(err, COMMON_ECONFLICT,
                                "changed since it was read (resourceVersion %s); not replaced, "
                                "looked at again",
                                rv);
    if (rc != COMMON_OK && rc != COMMON_ENOTFOUND && rc != COMMON_ECONFLICT)
        return rc;
    atomic_fetch_add(&c->r->deletes, 1);
    count_write(c, "delete");
    rc = common_kube_create(c->r->o.kube, res, c->ns, obj, wo, created, err);
    if (rc == COMMON_EEXISTS)
        return common_error_set(err, COMMON_ECONFLICT,
                                "the old object is still being deleted; it is created again "
                                "once it is gone");
    if (rc != COMMON_OK)
        return rc;
    c->res->created++;
    atomic_fetch_add(&c->r->creates, 1);
    count_write(c, "create");
    snprintf(note, sizeof(note), "Replaced %s %s/%s: %s",
             json_string_value(json_object_get(obj, "kind")), c->ns, name ? name : "", why);
    event(c, COMMON_EVENT_NORMAL, reason, "Replace", note);
    return COMMON_OK;
}

/*
 * The apply of the JobSet was refused (rc, err->msg): rc_jobset_refused says whether to replace
 * the suspended JobSet, suspend the running one first (a merge patch of spec.suspend alone, with
 * the cached resourceVersion), or report the refusal. Returns 0 for the last (the caller reports
 * rc as before); else 1 with *res the outcome (err set on an error) and, on success,
 * *jobset_out the JobSet as written.
 */
static int jobset_refused(struct rctx *c, const json_t *obj, const json_t *existing,
                          enum common_rc rc, const struct common_kube_write_opts *wo,
                          json_t **jobset_out, enum common_rc *res, struct common_error *err)
{
    const char *rv = json_string_value(
        json_object_get(json_object_get(existing, "metadata"), "resourceVersion"));
    json_t *out = NULL;
    char body[200];

    switch (rc_jobset_refused(c->tj, existing, rc, err->msg)) {
    case RC_REFUSED_FAIL:
        return 0;
    case RC_REFUSED_REPLACE:
        rc = replace_child(c, &common_kube_jobsets, obj, existing, rv, wo, "JobSetReplaced",
                           "JobSet's webhook refused to update the suspended JobSet because a "
                           "field it keeps immutable changed (the JobSet was written by an older "
                           "trainsched, or the TrainJob was resized while suspended); a "
                           "suspended JobSet runs no pods",
                           &out, err);
        break;
    case RC_REFUSED_SUSPEND:
        /* JobSet lets a running JobSet be suspended with its templates unchanged */
        snprintf(body, sizeof(body),
                 "{\"metadata\":{\"resourceVersion\":\"%s\"},"
                 "\"spec\":{\"suspend\":true}}",
                 rv ? rv : "");
        rc = common_kube_patch(c->r->o.kube, &common_kube_jobsets, c->ns, c->name,
                               COMMON_KUBE_MERGE_PATCH, body, NULL, &out, err);
        if (rc == COMMON_OK) {
            count_write(c, "patch");
            common_log(COMMON_LOG_INFO,
                       "JobSet suspended alone: its update was refused for an immutable field; "
                       "it is replaced once suspended",
                       "namespace", c->ns, "trainjob", c->name, NULL);
        }
        break;
    }
    if (rc == COMMON_OK) {
        json_decref(*jobset_out);
        *jobset_out = out;
    } else {
        json_decref(out);
    }
    *res = rc;
    return 1;
}

/*
 * Write the rendered children. *jobset gets the JobSet as the cluster has it (applied, or the
 * cached one when left alone; borrowed or owned per *jobset_owned).
 */
static enum common_rc write_sent(struct rctx *c, const json_t *objects, json_t **jobset_out,
                                 int snapshot_cached, struct common_error *err);

static enum common_rc write_children(struct rctx *c, const json_t *objects, json_t **jobset_out,
                                     int snapshot_cached, struct common_error *err)
{
    /* what is sent: no empty map fields, which server-side apply could turn into a null the
     * CRD refuses (rc_apply_body) */
    json_t *sent = rc_apply_body(objects);
    enum common_rc rc;

    if (!sent)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = write_sent(c, sent, jobset_out, snapshot_cached, err);
    json_decref(sent);
    return rc;
}

/*
 * A native v1beta1 Workload or PodGroup as the API server has it now, into *live (NULL when it
 * does not exist; borrowed: c->live_native holds it): they are not cached (the version served may
 * change under a running serve), and the read also shows what the server kept of the last write.
 * Errors: the GET's.
 */
static enum common_rc native_live(struct rctx *c, const struct common_kube_resource *res,
                                  const json_t *obj, json_t **live, struct common_error *err)
{
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    enum common_rc rc;

    *live = NULL;
    if (!c->live_native && !(c->live_native = json_array()))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = common_kube_get(c->r->o.kube, res, c->ns, name ? name : "", live, err);
    if (rc == COMMON_ENOTFOUND) {
        *live = NULL;
        return COMMON_OK;
    }
    if (rc == COMMON_OK && json_array_append_new(c->live_native, *live)) {
        *live = NULL;
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return rc;
}

/* the server's answer to a native write: the fields it dropped are remembered (its gates are
 * cluster-wide) and reported by native_report; never written again (native_strip_known) */
static void native_kept(struct rctx *c, const json_t *sent, const json_t *stored)
{
    unsigned d = rc_native_dropped(sent, stored);

    if (!d)
        return;
    if ((atomic_fetch_or(&c->r->native_dropped, d) & d) != d)
        common_log(COMMON_LOG_WARN,
                   "native backend: the API server dropped fields of a v1beta1 object (their "
                   "feature gates are off)",
                   "namespace", c->ns, "trainjob", c->name, "kind",
                   json_string_value(json_object_get(sent, "kind")), NULL);
}

/* a native write answered 404: the version it used is no longer served (an upgrade): look
 * again, and retry the reconcile (transient) with the version found */
static enum common_rc native_gone(struct rctx *c, const json_t *obj, struct common_error *err)
{
    struct common_error derr = {0};
    char was[600];

    snprintf(was, sizeof(was), "%s", err->msg);
    if (native_discover(c->r, &derr) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "native backend: the served API not looked up", "error",
                   derr.msg, NULL);
    return common_error_set(err, COMMON_ECONFLICT,
                            "%s: the API server answered not found (%s): the scheduling.k8s.io "
                            "version was looked for again and the TrainJob is built again",
                            json_string_value(json_object_get(obj, "apiVersion")), was);
}

static enum common_rc write_sent(struct rctx *c, const json_t *objects, json_t **jobset_out,
                                 int snapshot_cached, struct common_error *err)
{
    struct common_kube_write_opts wo = {
        .field_manager = c->r->field_manager, .force = 1, .strict = 1};
    size_t i;
    const json_t *obj;

    json_array_foreach(objects, i, obj)
    {
        enum rc_child_kind kind = rc_child_kind_of(obj);
        const struct common_kube_resource *res = resource_of(obj);
        const json_t *existing = existing_of(c, obj);
        json_t *live = NULL; /* a native v1beta1 object as the server has it (borrowed) */
        int beta =
            res == &backend_native_workloads_v1beta1 || res == &backend_native_podgroups_v1beta1;
        const char *kname = json_string_value(json_object_get(obj, "kind"));
        const char *oname =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        enum rc_action act;
        enum common_rc rc = COMMON_OK;
        json_t *out = NULL;
        char msg[1024];

        if (!res) {
            snprintf(msg, sizeof(msg), "%s %s/%s: no API resource known for apiVersion %s",
                     kname ? kname : "object", c->ns, oname ? oname : "",
                     json_string_value(json_object_get(obj, "apiVersion")));
            return fail(c, RC_REASON_CREATION_FAILED, msg, COMMON_EUNSUPPORTED, err);
        }
        if (kind == RC_CHILD_SNAPSHOT && snapshot_cached)
            continue;
        if (beta) {
            enum common_rc lrc = native_live(c, res, obj, &live, err);
            if (lrc != COMMON_OK)
                return lrc;
            existing = live;
        }
        if (foreign(c, existing)) {
            snprintf(msg, sizeof(msg), "%s %s/%s exists and is not controlled by this TrainJob",
                     kname, c->ns, oname);
            return fail(c, RC_REASON_CREATION_FAILED, msg, COMMON_EINVAL, err);
        }
        act = rc_child_action(c->tj, kind, existing);
        if (act == RC_SKIP) {
            if (kind == RC_CHILD_JOBSET)
                *jobset_out = json_incref((json_t *)existing);
            continue;
        }
        if (act == RC_CREATE) {
            rc = common_kube_create(c->r->o.kube, res, c->ns, obj, &wo, NULL, err);
            if (rc == COMMON_EEXISTS) {
                if (kind == RC_CHILD_SNAPSHOT) {
                    /* it exists (our cache lags): the stored one wins, the caller reads it */
                    return COMMON_EEXISTS;
                }
                rc = COMMON_OK;
            } else if (rc == COMMON_OK) {
                c->res->created++;
                atomic_fetch_add(&c->r->creates, 1);
                count_write(c, "create");
            }
        } else {
            char mkey[KEY_MAX];
            char *body = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
            uint64_t hash = body ? fnv1a(body, strlen(body)) : 0;
            int hashed = body != NULL;
            free(body);
            memo_key(obj, mkey, sizeof(mkey));
            if (rc_child_replace(obj, existing)) {
                json_t *created = NULL;
                rc = replace_child(c, res, obj, existing, NULL, &wo, "GangReplaced",
                                   "a field of its spec that the API server keeps immutable "
                                   "changed while the TrainJob was suspended",
                                   &created, err);
                if (rc == COMMON_ENOTFOUND && beta)
                    return native_gone(c, obj, err);
                if (rc != COMMON_OK) {
                    snprintf(msg, sizeof(msg), "%s %s/%s: %s", kname, c->ns, oname, err->msg);
                    return fail(c, RC_REASON_CREATION_FAILED, msg, rc, err);
                }
                if (beta)
                    native_kept(c, obj, created);
                json_decref(created);
                memo_del(&c->r->memo, mkey);
                continue;
            }
            if (existing && hashed &&
                memo_same(&c->r->memo, mkey, hash,
                          json_string_value(json_object_get(json_object_get(existing, "metadata"),
                                                            "resourceVersion")))) {
                atomic_fetch_add(&c->r->applies_skipped, 1);
                if (kind == RC_CHILD_JOBSET) {
                    json_decref(*jobset_out);
                    *jobset_out = json_incref((json_t *)existing);
                }
                continue;
            }
            rc = common_kube_apply(c->r->o.kube, res, c->ns, obj, &wo, &out, err);
            if (rc == COMMON_ENOTFOUND && kind == RC_CHILD_PODGROUP &&
                strncmp(res->group, "scheduling.k8s.io", 18) == 0)
                return native_gone(c, obj, err); /* v1alpha2 or v1beta1 no longer served */
            if (rc == COMMON_OK && beta)
                native_kept(c, obj, out);
            if (rc != COMMON_OK && kind == RC_CHILD_JOBSET) {
                /* refused for an immutable field: replaced, or suspended first */
                struct common_error jerr = *err;
                enum common_rc jrc;
                if (jobset_refused(c, obj, existing, rc, &wo, jobset_out, &jrc, &jerr)) {
                    memo_del(&c->r->memo, mkey);
                    if (jrc == COMMON_OK)
                        continue;
                    if (jrc == COMMON_ECONFLICT) {
                        /* changed meanwhile, or still being deleted: no failure to report,
                         * the reconcile is retried and decides again */
                        return common_error_set(err, jrc, "%s %s/%s: %s", kname, c->ns, oname,
                                                jerr.msg);
                    }
                    snprintf(msg, sizeof(msg), "%s %s/%s: %s", kname, c->ns, oname, jerr.msg);
                    return fail(c, RC_REASON_CREATION_FAILED, msg, jrc, err);
                }
            }
            if (rc == COMMON_OK && hashed)
                memo_put(&c->r->memo, mkey, hash,
                         json_string_value(
                             json_object_get(json_object_get(out, "metadata"), "resourceVersion")));
            if (rc == COMMON_OK) {
                c->res->applied++;
                atomic_fetch_add(&c->r->applies, 1);
                count_write(c, "apply");
                if (kind == RC_CHILD_JOBSET && !existing) {
                    char note[600];
                    snprintf(note, sizeof(note), "Created JobSet %s/%s", c->ns, oname);
                    event(c, COMMON_EVENT_NORMAL, "JobSetCreated", "Create", note);
                }
            }
        }
        if (rc != COMMON_OK) {
            json_decref(out);
            snprintf(msg, sizeof(msg), "%s %s/%s: %s", kname, c->ns, oname, err->msg);
            return fail(c, RC_REASON_CREATION_FAILED, msg, rc, err);
        }
        if (kind == RC_CHILD_JOBSET) {
            json_decref(*jobset_out);
            *jobset_out = out ? out : json_incref((json_t *)existing);
        } else {
            json_decref(out);
        }
    }
    return COMMON_OK;
}

/* Suspended / Resumed / Complete / Failed transitions as Events. */
static void transition_events(struct rctx *c)
{
    static const struct {
        const char *type, *status, *reason;
        enum common_event_type etype;
    } tr[] = {{"Suspended", "True", "Suspended", COMMON_EVENT_NORMAL},
              {"Suspended", "False", "Resumed", COMMON_EVENT_NORMAL},
              {"Complete", "True", "Completed", COMMON_EVENT_NORMAL},
              {"Failed", "True", "Failed", COMMON_EVENT_WARNING}};
    const json_t *old_status = json_object_get(c->tj, "status");

    for (size_t i = 0; i < sizeof(tr) / sizeof(tr[0]); i++) {
        const json_t *n = trainjob_status_condition(c->status, tr[i].type);
        const json_t *o = trainjob_status_condition(old_status, tr[i].type);
        const char *ns = json_string_value(json_object_get(n, "status"));
        const char *os = json_string_value(json_object_get(o, "status"));
        char key[KEY_MAX];
        uint64_t h;
        if (!ns || strcmp(ns, tr[i].status) != 0 || (os && strcmp(os, ns) == 0))
            continue;
        /* The TrainJob in the cache may not show our last status write yet (the deletion of
         * the JobSet after DeadlineExceeded queues it at once): a transition already announced
         * for this TrainJob is not announced again. The memo holds the condition status last
         * announced per uid and type, so a real flip back and forth still gets its Events. */
        snprintf(key, sizeof(key), "event/%s/%s", c->uid, tr[i].type);
        h = fnv1a(ns, strlen(ns));
        if (c->uid[0] && memo_same(&c->r->memo, key, h, ""))
            continue;
        event(c, tr[i].etype, tr[i].reason, "Reconciling",
              json_string_value(json_object_get(n, "message")));
        if (c->uid[0])
            memo_put(&c->r->memo, key, h, "");
    }
}

/* Events as the core v1 API serves them (every Event, whichever API wrote it), for the field
 * selectors on involvedObject */
static const struct common_kube_resource core_events = {"", "v1", "events", 1};

#define JOBSET_RECHECK_S 30 /* how often a JobSet without Jobs is looked at again */

/*
 * The JobSet exists but some of its Jobs do not: the JobSet controller records why only as an
 * Event (JobCreationFailed, with the API server's refusal), so read those Events and carry the
 * newest into ResourcesCreated=False reason JobCreationFailed; otherwise ResourcesCreated is
 * removed (the TrainJob's objects were built). Events do not queue the TrainJob, so while Jobs
 * are missing it is looked at again every JOBSET_RECHECK_S. A failed list is logged, not fatal.
 */
static enum common_rc jobset_failure(struct rctx *c, const json_t *jobset, struct common_error *err)
{
    const char *uid =
        json_string_value(json_object_get(json_object_get(jobset, "metadata"), "uid"));
    struct common_kube_list_opts lo = {0};
    struct common_error lerr = {0};
    json_t *items = NULL;
    const char *msg = NULL;
    char sel[300], text[1100];
    enum common_rc rc = COMMON_OK;

    if (!jobset || !uid || trainjob_is_finished(c->status) || !rc_jobset_without_jobs(jobset)) {
        trainjob_status_remove_condition(c->status, RC_COND_CREATED);
        return COMMON_OK;
    }
    if (c->res->requeue_after == 0 || c->res->requeue_after > JOBSET_RECHECK_S)
        c->res->requeue_after = JOBSET_RECHECK_S;
    snprintf(sel, sizeof(sel), "involvedObject.uid=%s,reason=%s", uid,
             RC_REASON_JOB_CREATION_FAILED);
    lo.field_selector = sel;
    if (common_kube_list(c->r->o.kube, &core_events, c->ns, &lo, &items, NULL, &lerr) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "JobSet Events not read", "namespace", c->ns, "trainjob",
                   c->name, "error", lerr.msg, NULL);
    else
        msg = rc_jobset_creation_failure(jobset, items);
    if (!msg) {
        trainjob_status_remove_condition(c->status, RC_COND_CREATED);
        goto out;
    }
    snprintf(text, sizeof(text), "JobSet %s/%s cannot create its Jobs: %s", c->ns, c->name, msg);
    {
        const json_t *old =
            trainjob_status_condition(json_object_get(c->tj, "status"), RC_COND_CREATED);
        const char *old_msg = json_string_value(json_object_get(old, "message"));
        if (!old_msg || strcmp(old_msg, text) != 0)
            event(c, COMMON_EVENT_WARNING, RC_REASON_JOB_CREATION_FAILED, "Reconciling", text);
    }
    c->res->reason = RC_REASON_JOB_CREATION_FAILED;
    if (trainjob_status_set_condition(c->status, RC_COND_CREATED, "False",
                                      RC_REASON_JOB_CREATION_FAILED, text, c->now,
                                      err) != COMMON_OK)
        rc = err->code;
out:
    json_decref(items);
    return rc;
}

/* how long a TrainJob whose KAI queue or priority class is missing waits before it is looked at
 * again (neither object is watched) */
#define KAI_RECHECK_S 30

/* A Warning Event on the TrainJob when its KAI queue is one KAI accepts but will not schedule
 * from (kai_queue_warning: a top-level queue); once per TrainJob uid and queue. */
static void kai_queue_warn(struct rctx *c, const struct kai_refs *refs, const json_t *queue)
{
    char note[700], key[KEY_MAX];
    uint64_t h;

    if (!kai_queue_warning(refs, queue, note, sizeof(note)))
        return;
    snprintf(key, sizeof(key), "kaiqueue/%s", c->uid);
    h = fnv1a(refs->queue, strlen(refs->queue));
    if (c->uid[0] && memo_same(&c->r->memo, key, h, ""))
        return;
    common_log(COMMON_LOG_WARN, "KAI queue without a parent", "namespace", c->ns, "trainjob",
               c->name, "queue", refs->queue, NULL);
    event(c, COMMON_EVENT_WARNING, KAI_REASON_QUEUE_WITHOUT_PARENT, "Reconciling", note);
    if (c->uid[0])
        memo_put(&c->r->memo, key, h, "");
}

/* A Warning Event on the TrainJob when the Volcano Queue its PodGroup names is not open
 * (volcano_queue_not_open: Volcano holds the gang and writes nothing on the PodGroup saying
 * why); from the Queue cache (INF_VQ, where served); once per TrainJob uid, queue and state.
 * The objects are written all the same: the gang waits in the queue until it is opened. */
static void volcano_queue_warn(struct rctx *c, const json_t *objects)
{
    const char *queue = volcano_queue_of(objects);
    const json_t *q, *state;
    char note[700], key[KEY_MAX], what[600];
    uint64_t h;

    if (!queue || !c->r->inf[INF_VQ].inf)
        return;
    q = cache_get(c, INF_VQ, NULL, queue);
    if (!volcano_queue_not_open(queue, q, note, sizeof(note)))
        return;
    state = json_object_get(json_object_get(q, "status"), "state");
    snprintf(what, sizeof(what), "%s/%s", queue, json_string_value(state));
    snprintf(key, sizeof(key), "vcqueue/%s", c->uid);
    h = fnv1a(what, strlen(what));
    if (c->uid[0] && memo_same(&c->r->memo, key, h, ""))
        return;
    common_log(COMMON_LOG_WARN, "Volcano queue not open", "namespace", c->ns, "trainjob", c->name,
               "queue", queue, "state", json_string_value(state), NULL);
    event(c, COMMON_EVENT_WARNING, VOLCANO_REASON_QUEUE_NOT_OPEN, "Reconciling", note);
    if (c->uid[0])
        memo_put(&c->r->memo, key, h, "");
}

/*
 * The kai backend's references, checked before anything is written (integrations/kai.h): the
 * Queue (when scheduling.run.ai/v2 is served; read from the API server, not cached) and the
 * PriorityClass its PodGroup names (from the PriorityClass cache). A missing one sets
 * ResourcesCreated=False, reason InvalidTrainJob, and an Event naming the field, and looks again in
 * KAI_RECHECK_S.
 */
static enum common_rc kai_refs_check(struct rctx *c, const json_t *objects,
                                     struct common_error *err)
{
    struct kai_refs refs;
    json_t *queue = NULL, *pc = NULL;
    int queue_known = 0, pc_known = 0;
    enum common_rc rc;

    if (kai_refs_of(objects, c->tj, &refs) != COMMON_OK)
        return COMMON_OK;
    /* a running gang's PodGroup is left as it is (rc_child_action): nothing to check */
    if (refs.name && cache_get(c, INF_KPG, c->ns, refs.name) &&
        !json_is_true(json_object_get(json_object_get(c->tj, "spec"), "suspend")))
        return COMMON_OK;
    if (refs.queue && c->r->kai_queues_served) {
        rc = common_kube_get(c->r->o.kube, &backend_kai_queues, NULL, refs.queue, &queue, err);
        if (rc != COMMON_OK && rc != COMMON_ENOTFOUND)
            return rc;
        queue_known = 1;
    }
    if (refs.priority_class) { /* the PriorityClass cache (INF_PC) the volcano rule uses too */
        const json_t *cached = cache_get(c, INF_PC, NULL, refs.priority_class);
        pc = cached ? json_incref((json_t *)cached) : NULL;
        pc_known = 1;
    }
    rc = kai_check_refs(&refs, queue, queue_known, pc, pc_known, err);
    if (rc == COMMON_OK)
        kai_queue_warn(c, &refs, queue);
    json_decref(queue);
    json_decref(pc);
    if (rc == COMMON_EINVAL) {
        char msg[700];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        if (c->res->requeue_after == 0 || c->res->requeue_after > KAI_RECHECK_S)
            c->res->requeue_after = KAI_RECHECK_S;
        return fail(c, RC_REASON_INVALID_TRAINJOB, msg, rc, err);
    }
    return rc;
}

/*
 * 1 when the cluster served, at start, every API resource backend b requires; else 0 with the
 * first missing one ("group/version resource") in what.
 */
static int backend_served(struct rc_reconciler *r, const struct backend *b, char *what, size_t n)
{
    size_t nb;
    const struct backend *const *table = backend_table(&nb);

    if (b == &backend_native) { /* either version (native_discover) */
        snprintf(what, n,
                 "scheduling.k8s.io/v1beta1 workloads and podgroups (Kubernetes 1.37) or "
                 "scheduling.k8s.io/v1alpha2 podgroups (Kubernetes 1.36)");
        return atomic_load(&r->native_api) >= 0;
    }
    for (size_t i = 0; i < nb && i < RC_MAX_BACKENDS; i++) {
        const struct common_kube_resource *res = r->backend_missing[i];
        if (table[i] != b || !res)
            continue;
        snprintf(what, n, "%s/%s %s", res->group, res->version, res->resource);
        return 0;
    }
    return 1;
}

/* the TrainJobStatus feature's settings for one reconcile: the URL, and the CA from the
 * caller (copied into the reconcile's arena) */
static enum common_rc trainer_status_opts(struct rctx *c, struct trainjob_status_server *tss,
                                          struct common_error *err)
{
    struct rc_reconciler *r = c->r;
    char *pem = NULL;
    enum common_rc rc;

    tss->url_base = r->o.trainer_status_url;
    if (!r->o.trainer_status_ca)
        return common_error_set(err, COMMON_EINVAL, "status server: no CA source");
    rc = r->o.trainer_status_ca(r->o.trainer_status_ca_ctx, &pem, err);
    if (rc) {
        common_error_prefix(err, "status server CA for %s/%s-tls-config", c->ns, c->name);
        return rc;
    }
    tss->ca_crt = common_arena_strdup(c->a, pem);
    common_free(pem);
    return tss->ca_crt ? COMMON_OK : common_error_set(err, COMMON_ENOMEM, "out of memory");
}

/* merge-patch metadata.annotations (null removes a key) of the TrainJob's object of kind r, named
 * as the TrainJob; a vanished object is fine */
static enum common_rc patch_annotations(struct rctx *c, const struct common_kube_resource *r,
                                        json_t *annotations, struct common_error *err)
{
    json_t *patch = json_pack("{s:{s:O}}", "metadata", "annotations", annotations);
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    enum common_rc rc;

    json_decref(patch);
    if (!body)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = common_kube_patch(c->r->o.kube, r, c->ns, c->name, COMMON_KUBE_MERGE_PATCH, body, NULL,
                           NULL, err);
    free(body);
    if (rc == COMMON_ENOTFOUND)
        rc = COMMON_OK;
    if (!rc)
        count_write(c, "patch");
    return rc;
}

/*
 * The Slurm backend's results (integrations/slurm_sync.h): the SlurmJob condition, the job id
 * annotation, and when Slurm ended the job, Failed=True reason SlurmJobEnded with the JobSet
 * deleted (its pods go with it).
 */
static enum common_rc slurm_after(struct rctx *c, const json_t *jobset, struct common_error *err)
{
    struct slurm_sync_result *sr = &c->slurm;
    enum common_rc rc = COMMON_OK;

    if (sr->cond_status)
        rc = trainjob_status_set_condition(c->status, SLURM_CONDITION, sr->cond_status,
                                           sr->cond_reason, sr->cond_message, c->now, err);
    if (!rc && sr->ended && !trainjob_is_finished(c->status)) {
        event(c, COMMON_EVENT_WARNING, SLURM_REASON_ENDED, "Stopping", sr->cond_message);
        rc = trainjob_status_set_condition(c->status, "Failed", "True", SLURM_REASON_ENDED,
                                           sr->cond_message, c->now, err);
        if (!rc && jobset) {
            rc = common_kube_delete(c->r->o.kube, &common_kube_jobsets, c->ns, c->name, NULL, NULL,
                                    NULL, err);
            if (rc == COMMON_ENOTFOUND)
                rc = COMMON_OK;
            if (!rc) {
                atomic_fetch_add(&c->r->deletes, 1);
                count_write(c, "delete");
            }
        }
    }
    if (!rc && sr->set_job_id) {
        json_t *ann = json_pack("{s:o}", SLURM_ANNOTATION_JOB_ID,
                                *sr->set_job_id ? json_string(sr->set_job_id) : json_null());
        rc = ann ? patch_annotations(c, &common_kube_trainjobs, ann, err)
                 : common_error_set(err, COMMON_ENOMEM, "out of memory");
        json_decref(ann);
    }
    if (!rc && sr->pg_annotations) {
        /* an existing PodGroup is not re-applied (rc_child_action): patch what changed */
        const json_t *pg = cache_get(c, INF_PG, c->ns, c->name);
        const json_t *have = json_object_get(json_object_get(pg, "metadata"), "annotations");
        const char *k;
        json_t *v, *diff = json_object();
        if (!diff)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        json_object_foreach((json_t *)sr->pg_annotations, k, v)
        {
            const json_t *h = json_object_get(have, k);
            if ((json_is_null(v) && h) || (!json_is_null(v) && !json_equal(h, v)))
                json_object_set(diff, k, v);
        }
        if (pg && json_object_size(diff))
            rc = patch_annotations(c, &common_kube_podgroups, diff, err);
        json_decref(diff);
    }
    if (!rc && sr->requeue_after > 0 &&
        (c->res->requeue_after == 0 || sr->requeue_after < c->res->requeue_after))
        c->res->requeue_after = sr->requeue_after;
    return rc;
}

/* trainjob_exists_fn over this reconcile's caches: PriorityClass, Queue (Volcano) */
static enum common_rc cached_exists(void *ctx, const char *kind, const char *name,
                                    struct common_error *err)
{
    struct rctx *c = ctx;
    enum inf_kind k;

    if (strcmp(kind, "PriorityClass") == 0)
        k = INF_PC;
    else if (strcmp(kind, "Queue") == 0)
        k = INF_VQ;
    else
        return common_error_set(err, COMMON_EUNSUPPORTED, "no cache of %s", kind);
    if (!c->r->inf[k].inf)
        return common_error_set(err, COMMON_EUNSUPPORTED, "no cache of %s (API not served)", kind);
    return cache_get(c, k, NULL, name) ? COMMON_OK : COMMON_ENOTFOUND;
}

/*
 * The TrainJob's finalizer SLURM_FINALIZER (integrations/slurm.h, slurm_finalizer_decide): the
 * list without it (remove) or with it (add), merge-patched with the TrainJob's resourceVersion
 * so that a concurrent change of the list is a conflict (retried), never lost.
 */
static enum common_rc slurm_finalizer_patch(struct rctx *c, int add, struct common_error *err)
{
    const json_t *meta = json_object_get(c->tj, "metadata"), *f;
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    json_t *list = json_array(), *patch;
    char *body;
    enum common_rc rc;
    size_t i;

    if (!list)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    json_array_foreach(json_object_get(meta, "finalizers"), i, f)
    {
        const char *v = json_string_value(f);
        if (v && strcmp(v, SLURM_FINALIZER) != 0)
            json_array_append(list, (json_t *)f);
    }
    if (add)
        json_array_append_new(list, json_string(SLURM_FINALIZER));
    patch = rv ? json_pack("{s:{s:s,s:o}}", "metadata", "resourceVersion", rv, "finalizers", list)
               : json_pack("{s:{s:o}}", "metadata", "finalizers", list);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    if (!body)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = common_kube_patch(c->r->o.kube, &common_kube_trainjobs, c->ns, c->name,
                           COMMON_KUBE_MERGE_PATCH, body, NULL, NULL, err);
    free(body);
    if (rc == COMMON_ENOTFOUND && !add)
        rc = COMMON_OK; /* gone already */
    if (!rc)
        count_write(c, "patch");
    return rc;
}

/*
 * A TrainJob being deleted that holds SLURM_FINALIZER: cancel its Slurm job (by the recorded
 * id, else by comment), then let it go. slurmrestd failing: a Warning Event and another try in
 * 30 s, until SLURM_RELEASE_GIVE_UP_S after the deletion, when the finalizer goes anyway with a
 * Warning Event naming the job to cancel by hand. Without a Slurm backend it goes at once.
 */
static enum common_rc slurm_release(struct rctx *c, struct common_error *err)
{
    struct slurm_finalizer_decision d;
    struct common_error e = {0};
    enum common_rc rc;

    rc = slurm_finalizer_decide(c->a, c->tj, 1, c->r->o.slurm != NULL, c->now,
                                c->r->o.slurm_give_up_s, &d, &e);
    if (rc == COMMON_ENOMEM)
        return common_error_set(err, rc, "%s", e.msg);
    if (rc) {
        /* a deletionTimestamp Kubernetes wrote is a time; never keep the TrainJob over it */
        d.action = SLURM_FINALIZER_REMOVE;
        d.why = e.msg;
    }
    if (d.action == SLURM_FINALIZER_RELEASE) {
        rc = slurm_sync_deleted(c->r->o.slurm, c->tj, &e);
        if (rc == COMMON_ENOTFOUND)
            rc = COMMON_OK; /* Slurm no longer knows the job: nothing left to cancel */
        if (rc == COMMON_ENOMEM)
            return common_error_set(err, rc, "%s", e.msg);
        if (rc) {
            event(c, COMMON_EVENT_WARNING, "SlurmCancelFailed", "Deleting", e.msg);
            common_log(COMMON_LOG_WARN, "Slurm job of a TrainJob being deleted not cancelled yet",
                       "trainjob", c->name, "error", e.msg, NULL);
            c->res->requeue_after = 30;
            return COMMON_OK;
        }
    } else if (d.action == SLURM_FINALIZER_REMOVE) {
        event(c, COMMON_EVENT_WARNING, "SlurmJobNotCancelled", "Deleting", d.why);
        common_log(COMMON_LOG_WARN, "Slurm finalizer removed", "trainjob", c->name, "why", d.why,
                   NULL);
    } else {
        return COMMON_OK;
    }
    return slurm_finalizer_patch(c, 0, err);
}

/* the fields the API server is known to drop are not sent (they would be dropped again, and a
 * suspended gang would be replaced for ever for a difference the server makes); which fields
 * the rendered native objects asked for is kept for native_report */
static void native_strip_known(struct rctx *c, json_t *objects)
{
    unsigned known = atomic_load(&c->r->native_dropped);
    size_t i;
    json_t *o;

    json_array_foreach(objects, i, o)
    {
        c->native_fields |= rc_native_fields(o);
        rc_native_strip(o, known);
    }
}

/* the TrainJob's condition RC_COND_GANG_CARRIED: False with what the backend could not carry
 * (c->notes) and the fields the API server dropped, with a Warning Event each time the message
 * changes; removed when everything was carried */
static enum common_rc native_report(struct rctx *c, struct common_error *err)
{
    unsigned dropped = c->native_fields & atomic_load(&c->r->native_dropped);
    char text[2048], key[KEY_MAX];
    size_t len = 0;
    const char *reason = NULL;
    uint64_t h;

    for (unsigned bit = 1; bit <= RC_NATIVE_CLAIMS; bit <<= 1) {
        const char *gate = NULL, *field = rc_native_field_gate(bit, &gate);
        if (dropped & bit)
            backend_notes_add(&c->notes, RC_REASON_FIELD_DROPPED,
                              "%s: the API server dropped it from the PodGroup and Workload it "
                              "was written to: the feature gate %s is off on kube-apiserver "
                              "(docs/backends.md); the gang is scheduled without it",
                              field, gate);
    }
    if (c->notes.n == 0) {
        trainjob_status_remove_condition(c->status, RC_COND_GANG_CARRIED);
        return COMMON_OK;
    }
    text[0] = '\0';
    for (size_t i = 0; i < c->notes.n && len < sizeof(text); i++) {
        int n =
            snprintf(text + len, sizeof(text) - len, "%s%s", i ? "; " : "", c->notes.item[i].msg);
        if (n > 0)
            len += (size_t)n;
        if (!reason || strcmp(c->notes.item[i].reason, RC_REASON_FIELD_DROPPED) == 0)
            reason = c->notes.item[i].reason;
    }
    if (trainjob_status_set_condition(c->status, RC_COND_GANG_CARRIED, "False", reason, text,
                                      c->now, err) != COMMON_OK)
        return err->code;
    snprintf(key, sizeof(key), "gangcarried/%s", c->uid);
    h = fnv1a(text, strlen(text));
    if (c->uid[0] && memo_same(&c->r->memo, key, h, ""))
        return COMMON_OK;
    event(c, COMMON_EVENT_WARNING, reason, "Reconciling", text);
    if (c->uid[0])
        memo_put(&c->r->memo, key, h, "");
    return COMMON_OK;
}

static enum common_rc reconcile_tj(struct rctx *c, struct common_error *err)
{
    struct rc_reconciler *r = c->r;
    struct trainjob_errors errs;
    struct trainjob_ref ref;
    struct trainjob_output out = {0};
    struct trainjob_options topts = {.keygen = r->o.keygen,
                                     .gang_scheduler_name = r->o.gang_scheduler_name,
                                     .no_gang_marks = !r->o.gang_marks,
                                     .volcano_queue = r->o.volcano_queue,
                                     .volcano_tiers = r->o.volcano_tiers,
                                     .kai_default_queue = r->o.kai_default_queue};
    struct trainjob_status_server tss = {0};
    struct trainjob_status_result sres = {0};
    struct trainjob_deadline_result dl;
    const json_t *runtime_live = NULL, *cm;
    json_t *runtime = NULL, *jobset = NULL;
    const struct backend *backend = NULL;
    char unserved[300];
    enum common_rc rc;
    int snapshot_cached = 0, past_deadline;

    if (!rc_managed(c->tj)) {
        c->res->skipped = 1;
        return COMMON_OK;
    }
    if (json_object_get(json_object_get(c->tj, "metadata"), "deletionTimestamp") &&
        slurm_has_finalizer(c->tj)) {
        /* nothing is built for a TrainJob being deleted: its Slurm job goes, then it goes */
        c->res->skipped = 1;
        return slurm_release(c, err);
    }
    trainjob_errors_init(&errs, c->a);
    rc = trainjob_validate_trainjob(c->tj, &errs, err);
    if (rc == COMMON_EINVAL)
        return fail(c, RC_REASON_INVALID_TRAINJOB, rc_first_error(&errs, err), rc, err);
    if (rc)
        return rc;
    rc = trainjob_runtime_ref(c->tj, c->ns, &ref, err);
    if (rc)
        return fail(c, RC_REASON_INVALID_TRAINJOB, err->msg, rc, err);
    {
        char qmsg[1024];
        if (rc_queue_without_kueue(c->tj, qmsg, sizeof(qmsg)))
            return fail(c, RC_REASON_QUEUE_WITHOUT_KUEUE, qmsg, COMMON_EINVAL, err);
    }

    /* A TrainJob past its deadline gets nothing built: when the cache has not yet seen the
     * Failed status written with the JobSet's deletion, building would bring the JobSet back. */
    if (trainjob_deadline(c->tj, NULL, c->now, &dl, err) != COMMON_OK)
        dl.action = TRAINJOB_DEADLINE_NONE; /* the status step logs a bad deadline */
    if (!trainjob_is_finished(json_object_get(c->tj, "status")) &&
        dl.action != TRAINJOB_DEADLINE_FAIL) {
        /* the runtime: the snapshot first (§2.2) */
        char snapname[300];
        int attempt = 0;
        snprintf(snapname, sizeof(snapname), "%s-runtime-snapshot", c->name);
        cm = cache_get(c, INF_CM, c->ns, snapname);
    again:
        if (cm && rc_controller_owner(cm, NULL, NULL)) {
            rc = rc_snapshot_runtime(c->tj, cm, &runtime, err);
            if (rc == COMMON_EINVAL)
                return fail(c, RC_REASON_INVALID_SNAPSHOT, err->msg, rc, err);
            if (rc)
                return rc;
            snapshot_cached = 1;
        } else if (cm) {
            char msg[600];
            snprintf(msg, sizeof(msg), "runtime snapshot %s/%s: not controlled by TrainJob uid %s",
                     c->ns, snapname, c->uid);
            return fail(c, RC_REASON_INVALID_SNAPSHOT, msg, COMMON_EINVAL, err);
        } else {
            if (strcmp(ref.kind, "TrainingRuntime") == 0)
                runtime_live = cache_get(c, INF_TR, c->ns, ref.name);
            else
                runtime_live = cache_get(c, INF_CTR, NULL, ref.name);
            if (!runtime_live) {
                char msg[700];
                snprintf(msg, sizeof(msg), "%s %s%s%s specified in TrainJob is not found", ref.kind,
                         strcmp(ref.kind, "TrainingRuntime") == 0 ? c->ns : "",
                         strcmp(ref.kind, "TrainingRuntime") == 0 ? "/" : "", ref.name);
                return fail(c, RC_REASON_RUNTIME_NOT_FOUND, msg, COMMON_EINVAL, err);
            }
            runtime = json_incref((json_t *)runtime_live);
        }

        if (r->o.trainer_status_url[0] && !topts.status_server) {
            rc = trainer_status_opts(c, &tss, err);
            if (rc) {
                json_decref(runtime);
                return rc;
            }
            topts.status_server = &tss;
        }
        trainjob_errors_init(&out.errors, c->a);
        /* the runtime's backend (integrations/backend.h); nothing is written unless the
         * cluster serves what it needs */
        rc = backend_select(runtime, NULL, r->o.default_backend, &backend, NULL, err);
        if (rc == COMMON_OK && backend == &backend_native)
            native_rediscover_due(r);
        if (rc == COMMON_OK && !backend_served(r, backend, unserved, sizeof(unserved))) {
            char msg[1100];
            if (backend == &backend_native) {
                snprintf(msg, sizeof(msg),
                         "backend \"native\" needs the API %s, and this cluster serves neither "
                         "(%s; trainsched looks again every %d s); nothing is written",
                         unserved, backend->install, NATIVE_RECHECK_S);
                c->res->requeue_after = NATIVE_RECHECK_S;
            } else {
                snprintf(msg, sizeof(msg),
                         "backend \"%s\" needs the API %s, which this cluster does not serve "
                         "(%s; trainsched looks at start: restart it once the API is served); "
                         "nothing is written",
                         backend->name, unserved,
                         backend->install ? backend->install : "install what defines it");
            }
            json_decref(runtime);
            return fail(c, RC_REASON_BACKEND_UNAVAILABLE, msg, COMMON_EUNSUPPORTED, err);
        }
        if (rc == COMMON_OK && backend == &backend_slurm && !r->o.slurm) {
            json_decref(runtime);
            return fail(c, RC_REASON_BACKEND_UNAVAILABLE,
                        "backend \"slurm\" needs slurmrestd, and this trainsched was started "
                        "without serve --slurm-url (docs/slurm.md)",
                        COMMON_EUNSUPPORTED, err);
        }
        if (rc) {
            rc = fail(c, RC_REASON_INVALID_RUNTIME, err->msg, rc, err);
            json_decref(runtime);
            return rc;
        }
        /* what the gang object names (PriorityClass, Volcano Queue) must exist before it is
         * written: checked while the JobSet does not exist yet or the TrainJob is suspended
         * (the gang object is then written anew), never against a running TrainJob */
        if (!cache_get(c, INF_JS, c->ns, c->name) ||
            json_is_true(json_object_get(json_object_get(c->tj, "spec"), "suspend"))) {
            topts.exists = cached_exists;
            topts.exists_ctx = c;
        }
        {
            struct backend_target target = {.native_api = atomic_load(&r->native_api) ==
                                                                  BACKEND_NATIVE_V1ALPHA2
                                                              ? BACKEND_NATIVE_V1ALPHA2
                                                              : BACKEND_NATIVE_V1BETA1,
                                            .notes = &c->notes};
            rc = backend_render(backend, c->a, c->tj, runtime, &topts, &target, &out, NULL, err);
        }
        if (rc == COMMON_OK && out.objects)
            native_strip_known(c, out.objects);
        if (rc == COMMON_EINVAL) {
            const char *reason = rc_error_doc_is_runtime(&out.errors, runtime)
                                     ? RC_REASON_INVALID_RUNTIME
                                     : RC_REASON_INVALID_TRAINJOB;
            rc = fail(c, reason, rc_first_error(&out.errors, err), rc, err);
            json_decref(runtime);
            return rc;
        }
        if (rc == COMMON_EUNSUPPORTED) {
            rc = fail(c, RC_REASON_UNSUPPORTED, err->msg, rc, err);
            json_decref(runtime);
            return rc;
        }
        if (rc) {
            json_decref(runtime);
            return rc;
        }
        if (out.skipped) {
            json_decref(runtime);
            c->res->skipped = 1;
            return COMMON_OK;
        }
        if (r->o.slurm && slurm_sync_selected(c->tj, runtime) && !slurm_has_finalizer(c->tj) &&
            !json_object_get(json_object_get(c->tj, "metadata"), "deletionTimestamp")) {
            /* the finalizer first: no Slurm job is submitted that a deletion while trainsched
             * is down could leak; the patch's watch event brings the TrainJob back */
            rc = slurm_finalizer_patch(c, 1, err);
            json_decref(out.objects);
            json_decref(runtime);
            return rc;
        }
        if (r->o.slurm && slurm_sync_selected(c->tj, runtime)) {
            /* before the children are written: the PodGroup carries the Slurm job's nodes */
            rc = slurm_sync_step(r->o.slurm, c->a, c->tj, runtime, out.objects, &c->slurm, err);
            if (rc) {
                json_decref(out.objects);
                json_decref(runtime);
                return rc;
            }
        }
        if (backend == &backend_kai) {
            /* nothing is written while the PodGroup names a queue or class that is not there */
            rc = kai_refs_check(c, out.objects, err);
            if (rc != COMMON_OK || c->res->reason) {
                json_decref(out.objects);
                json_decref(runtime);
                return rc;
            }
        }
        if (backend == &backend_volcano)
            volcano_queue_warn(c, out.objects);
        if (c->slurm.active && c->slurm.ended) {
            /* Slurm ended the job: nothing is (re)built. The cache may not have seen the Failed
             * status written with the JobSet's deletion yet; writing the children would bring
             * the JobSet back. The existing one, if any, is deleted below (slurm_after). */
            const json_t *js = cache_get(c, INF_JS, c->ns, c->name);
            if (js && !foreign(c, js))
                jobset = json_incref((json_t *)js);
            rc = COMMON_OK;
        } else {
            rc = write_children(c, out.objects, &jobset, snapshot_cached, err);
        }
        json_decref(out.objects);
        out.objects = NULL;
        json_decref(runtime);
        runtime = NULL;
        if (rc == COMMON_EEXISTS && attempt++ == 0) {
            /* the snapshot was created meanwhile and the cache has not seen it: read it */
            json_decref(jobset);
            jobset = NULL;
            rc = common_kube_get(r->o.kube, &common_kube_configmaps, c->ns, snapname, &c->live_cm,
                                 err);
            if (rc)
                return rc;
            cm = c->live_cm;
            snapshot_cached = 0;
            trainjob_errors_init(&out.errors, c->a);
            goto again;
        }
        if (rc == COMMON_EEXISTS)
            rc = common_error_set(err, COMMON_ECONFLICT, "runtime snapshot %s/%s: keeps changing",
                                  c->ns, snapname);
        if (rc != COMMON_OK || c->res->reason) {
            json_decref(jobset);
            return rc;
        }
    } else {
        const json_t *js = cache_get(c, INF_JS, c->ns, c->name);
        if (js && !foreign(c, js))
            jobset = json_incref((json_t *)js);
        if (r->o.slurm && slurm_sync_selected(c->tj, NULL)) {
            rc = slurm_sync_step(r->o.slurm, c->a, c->tj, NULL, NULL, &c->slurm, err);
            if (rc) {
                json_decref(jobset);
                return rc;
            }
        }
    }

    /* status (§4), deadline (§2.10) */
    past_deadline = dl.action == TRAINJOB_DEADLINE_FAIL;
    rc = trainjob_status_derive(c->a, c->tj, jobset, c->now, &sres, err);
    if (rc == COMMON_ENOTFOUND && (past_deadline || (c->slurm.active && c->slurm.ended))) {
        /* no JobSet (deleted, or never built): the deadline below, or slurm_after when Slurm
         * ended the job, still fails the TrainJob */
        rc = status_copy(c, err);
        sres.status = c->status;
        c->status = NULL;
    }
    if (rc == COMMON_ENOTFOUND) {
        /* the JobSet is not in the cache yet: the watch event will bring us back */
        json_decref(jobset);
        return common_error_set(err, COMMON_ENOTFOUND, "JobSet %s/%s not found yet", c->ns,
                                c->name);
    }
    if (rc) {
        json_decref(jobset);
        return rc;
    }
    c->status = sres.status;
    rc = native_report(c, err);
    if (!rc)
        rc = jobset_failure(c, jobset, err);
    if (!rc && c->slurm.active)
        rc = slurm_after(c, jobset, err);
    if (rc) {
        json_decref(jobset);
        return rc;
    }
    rc = trainjob_deadline(c->tj, c->status, c->now, &dl, err);
    if (rc == COMMON_OK && dl.action == TRAINJOB_DEADLINE_FAIL) {
        rc = trainjob_status_deadline_exceeded(c->status, c->now, err);
        if (rc == COMMON_OK && jobset) {
            enum common_rc drc = common_kube_delete(r->o.kube, &common_kube_jobsets, c->ns, c->name,
                                                    NULL, NULL, NULL, err);
            if (drc != COMMON_OK && drc != COMMON_ENOTFOUND) {
                json_decref(jobset);
                return drc;
            }
            atomic_fetch_add(&r->deletes, 1);
            count_write(c, "delete");
        }
    } else if (rc == COMMON_OK && dl.action == TRAINJOB_DEADLINE_REQUEUE) {
        if (c->res->requeue_after == 0 || dl.requeue_after < c->res->requeue_after)
            c->res->requeue_after = dl.requeue_after;
    } else if (rc == COMMON_EINVAL) {
        common_log(COMMON_LOG_WARN, "activeDeadlineSeconds not checked", "namespace", c->ns,
                   "trainjob", c->name, "error", err->msg, NULL);
        rc = COMMON_OK;
    }
    json_decref(jobset);
    if (rc)
        return rc;
    transition_events(c);
    return write_status(c, err);
}

enum common_rc rc_reconcile(struct rc_reconciler *r, const char *key, struct rc_result *res,
                            struct common_error *err)
{
    struct rctx c;
    char ns[KEY_MAX];
    const char *slash = strchr(key, '/');
    enum common_rc rc;

    memset(res, 0, sizeof(*res));
    memset(&c, 0, sizeof(c));
    if (!slash || (size_t)(slash - key) >= sizeof(ns))
        return common_error_set(err, COMMON_EINVAL, "bad key \"%s\"", key);
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = 0;
    c.r = r;
    c.res = res;
    c.now = r->o.now();
    for (int i = 0; i < INF_N; i++)
        if (r->inf[i].inf)
            c.snaps[i] = common_informer_snapshot(r->inf[i].inf);
    c.tj = c.snaps[INF_TJ] ? common_pmap_snap_get(c.snaps[INF_TJ], key) : NULL;
    if (!c.tj) {
        res->skipped = 1;
        rc = COMMON_OK;
        goto out;
    }
    c.ns = ns;
    c.name = slash + 1;
    c.uid = json_string_value(json_object_get(json_object_get(c.tj, "metadata"), "uid"));
    if (!c.uid)
        c.uid = "";
    c.a = common_arena_create(0);
    if (!c.a) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    rc = reconcile_tj(&c, err);
out:
    json_decref(c.status);
    json_decref(c.live_cm);
    json_decref(c.live_native);
    common_arena_destroy(c.a);
    for (int i = 0; i < INF_N; i++)
        if (c.snaps[i])
            common_pmap_snap_release(c.snaps[i]);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* workers */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    struct rc_reconciler *r = arg;
    char *key;

    while (rc_queue_get(r->q, -1, &key) == 1) {
        struct rc_result res;
        struct common_error err = {0};
        double t0 = mono_s();
        enum common_rc rc = rc_reconcile(r, key, &res, &err);
        const char *result;

        atomic_fetch_add(&r->reconciles, 1);
        if (rc == COMMON_OK) {
            rc_queue_forget(r->q, key);
            if (res.requeue_after > 0)
                rc_queue_add_after(r->q, key, (long)res.requeue_after * 1000);
            result = res.reason ? "failed" : res.skipped ? "skipped" : "success";
        } else {
            atomic_fetch_add(&r->errors, 1);
            common_log(rc == COMMON_ENOTFOUND ? COMMON_LOG_DEBUG : COMMON_LOG_WARN,
                       "reconcile error; retrying", "key", key, "error", err.msg, NULL);
            rc_queue_add_rate_limited(r->q, key);
            result = "error";
        }
        {
            char counts[96];
            snprintf(counts, sizeof(counts), "created=%d applied=%d status=%d requeue=%lld",
                     res.created, res.applied, res.status_written, (long long)res.requeue_after);
            common_log(COMMON_LOG_DEBUG, "reconciled", "key", key, "result", result, "writes",
                       counts, NULL);
        }
        if (r->m_total) {
            const char *lv[] = {result};
            common_metric_add(r->m_total, lv, 1);
        }
        if (r->m_duration)
            common_metric_observe(r->m_duration, NULL, mono_s() - t0);
        rc_queue_done(r->q, key);
        common_free(key);
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* lifecycle */

static int64_t wall_now(void)
{
    return (int64_t)time(NULL);
}

struct rc_reconciler *rc_create(const struct rc_opts *opts, struct common_error *err)
{
    struct rc_reconciler *r;

    if (!opts || !opts->kube) {
        common_error_set(err, COMMON_EINVAL, "reconciler: no API client");
        return NULL;
    }
    r = common_calloc(1, sizeof(*r));
    if (!r) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    r->o = *opts;
    snprintf(r->field_manager, sizeof(r->field_manager), "%s",
             opts->field_manager && *opts->field_manager ? opts->field_manager : "trainsched");
    r->o.field_manager = r->field_manager;
    if (opts->namespace && *opts->namespace) {
        snprintf(r->namespace, sizeof(r->namespace), "%s", opts->namespace);
        r->o.namespace = r->namespace;
    } else {
        r->o.namespace = NULL;
    }
    snprintf(r->gang_scheduler_name, sizeof(r->gang_scheduler_name), "%s",
             opts->gang_scheduler_name ? opts->gang_scheduler_name : "");
    r->o.gang_scheduler_name = r->gang_scheduler_name;
    snprintf(r->default_backend, sizeof(r->default_backend), "%s",
             opts->default_backend ? opts->default_backend : "");
    r->o.default_backend = r->default_backend;
    snprintf(r->kai_default_queue, sizeof(r->kai_default_queue), "%s",
             opts->kai_default_queue ? opts->kai_default_queue : "");
    r->o.kai_default_queue = r->kai_default_queue;
    snprintf(r->trainer_status_url, sizeof(r->trainer_status_url), "%s",
             opts->trainer_status_url ? opts->trainer_status_url : "");
    r->o.trainer_status_url = r->trainer_status_url;
    snprintf(r->volcano_queue, sizeof(r->volcano_queue), "%s",
             opts->volcano_queue ? opts->volcano_queue : "");
    r->o.volcano_queue = r->volcano_queue;
    snprintf(r->volcano_tiers, sizeof(r->volcano_tiers), "%s",
             opts->volcano_tiers ? opts->volcano_tiers : "");
    r->o.volcano_tiers = r->volcano_tiers;
    if (r->o.workers <= 0)
        r->o.workers = 4;
    if (!r->o.keygen)
        r->o.keygen = common_sshkey_ecdsa_p521;
    if (!r->o.now)
        r->o.now = wall_now;
    if (r->o.sync_timeout_ms <= 0)
        r->o.sync_timeout_ms = 60000;
    r->q = rc_queue_create(&r->o.queue, err);
    if (!r->q) {
        common_free(r);
        return NULL;
    }
    pthread_mutex_init(&r->memo.mu, NULL);
    if (r->o.metrics) {
        static const char *const result_label[] = {"result", NULL};
        static const char *const verb_label[] = {"verb", NULL};
        static const double buckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,  0.5,   1,    2.5,   5,    10};
        r->m_total = common_metrics_counter(
            r->o.metrics, "trainsched_reconcile_total",
            "TrainJob reconciles by result (success, failed: ResourcesCreated=False, skipped, "
            "error: retried with backoff)",
            result_label);
        r->m_duration = common_metrics_histogram(
            r->o.metrics, "trainsched_reconcile_duration_seconds", "Time of one TrainJob reconcile",
            NULL, buckets, sizeof(buckets) / sizeof(buckets[0]));
        r->m_writes = common_metrics_counter(
            r->o.metrics, "trainsched_reconcile_writes_total",
            "API writes by the reconciler (create, apply, status, delete)", verb_label);
    }
    return r;
}

static enum common_rc start_informer(struct rc_reconciler *r, enum inf_kind kind, const char *name,
                                     const struct common_kube_resource *res,
                                     struct common_error *err)
{
    struct inf_slot *s = &r->inf[kind];
    struct common_informer_handlers h = {on_add, on_update, on_delete, s};
    struct common_informer_opts io = {0};
    enum common_rc rc;

    s->r = r;
    s->kind = kind;
    common_informer_json_ops(&s->ops, name, res);
    s->ops.from_json = kind == INF_CM ? cm_from_json : strip_from_json;
    io.namespace = res->namespaced ? r->o.namespace : NULL;
    rc = common_informer_create(r->o.kube, &s->ops, &h, &io, &s->inf, err);
    if (rc)
        return rc;
    return common_informer_start(s->inf, err);
}

/* gang objects' and queues' informers: only for the APIs this cluster serves */
static const struct {
    int slot;
    const char *name;
    const struct common_kube_resource *res;
} opt_inf[] = {
    {INF_PG, "podgroups", &common_kube_podgroups},
    {INF_VPG, "volcano-podgroups", &volcano_podgroups},
    {INF_VQ, "volcano-queues", &volcano_queues},
    /* the native backend's PodGroups: only where the alpha API is switched on */
    {INF_NPG, "native-podgroups", &backend_native_podgroups},
    {INF_KPG, "kai-podgroups", &backend_kai_podgroups},
};

static int same_resource(const struct common_kube_resource *a, const struct common_kube_resource *b)
{
    return strcmp(a->group, b->group) == 0 && strcmp(a->version, b->version) == 0 &&
           strcmp(a->resource, b->resource) == 0;
}

/* whether the cluster serves res: its informer started (opt_inf), else whether discovery
 * lists its group/version (any authenticated user may read discovery: no RBAC rule for the
 * resource itself is needed, as none is for Kueue's Workloads) */
static enum common_rc required_served(struct rc_reconciler *r,
                                      const struct common_kube_resource *res, int *served,
                                      struct common_error *err)
{
    char path[300];

    for (size_t i = 0; i < sizeof(opt_inf) / sizeof(opt_inf[0]); i++)
        if (same_resource(opt_inf[i].res, res)) {
            *served = r->inf[opt_inf[i].slot].inf != NULL;
            return COMMON_OK;
        }
    if (res->group[0])
        snprintf(path, sizeof(path), "/apis/%s/%s", res->group, res->version);
    else
        snprintf(path, sizeof(path), "/api/%s", res->version);
    return common_kube_served(r->o.kube, path, r->o.sync_timeout_ms, served, err);
}

/* r->backend_missing: for every backend, the first API of its `requires` the cluster does not
 * serve, so that a TrainJob on it gets BackendUnavailable before anything is written */
static enum common_rc backends_check(struct rc_reconciler *r, struct common_error *err)
{
    size_t nb;
    const struct backend *const *table = backend_table(&nb);

    for (size_t i = 0; i < nb && i < RC_MAX_BACKENDS; i++) {
        const struct backend *b = table[i];
        r->backend_missing[i] = NULL;
        if (b == &backend_native) { /* one of two versions: native_discover */
            enum common_rc rc = native_discover(r, err);
            if (rc)
                return rc;
            continue;
        }
        for (size_t k = 0; b->built && b->requires && b->requires[k]; k++) {
            int served = 0;
            enum common_rc rc = required_served(r, b->requires[k], &served, err);
            if (rc)
                return rc;
            if (!served) {
                r->backend_missing[i] = b->requires[k];
                common_log(COMMON_LOG_INFO, "backend unavailable: an API it requires is not served",
                           "backend", b->name, "resource", b->requires[k] -> resource, "group",
                           b->requires[k] -> group, NULL);
                break;
            }
        }
    }
    return COMMON_OK;
}

enum common_rc rc_start(struct rc_reconciler *r, struct common_error *err)
{
    enum common_rc rc;
    double t0 = mono_s();

    if ((rc = start_informer(r, INF_TJ, "trainjobs", &common_kube_trainjobs, err)) ||
        (rc = start_informer(r, INF_TR, "trainingruntimes", &common_kube_trainingruntimes, err)) ||
        (rc = start_informer(r, INF_CTR, "clustertrainingruntimes",
                             &common_kube_clustertrainingruntimes, err)) ||
        (rc = start_informer(r, INF_JS, "jobsets", &common_kube_jobsets, err)) ||
        (rc = start_informer(r, INF_CM, "configmaps", &common_kube_configmaps, err)))
        goto fail;
    if ((rc = start_informer(r, INF_PC, "priorityclasses", &priorityclasses, err)))
        goto fail;
    {
        int served = 0;
        for (size_t i = 0; i < sizeof(opt_inf) / sizeof(opt_inf[0]); i++) {
            if ((rc = resource_served(r, opt_inf[i].res, &served, err)))
                goto fail;
            if (served &&
                (rc = start_informer(r, opt_inf[i].slot, opt_inf[i].name, opt_inf[i].res, err)))
                goto fail;
        }
        /* whether the kai backend's Queues can be checked */
        if ((rc = resource_served(r, &backend_kai_queues, &served, err)))
            goto fail;
        r->kai_queues_served = served;
    }
    if ((rc = backends_check(r, err)))
        goto fail;
    for (int i = 0; i < INF_N; i++) {
        long left = r->o.sync_timeout_ms - (long)((mono_s() - t0) * 1000);
        if (r->inf[i].inf && !common_informer_wait_synced(r->inf[i].inf, left > 0 ? left : 1)) {
            rc = common_error_set(err, COMMON_ETIMEOUT,
                                  "reconciler: the %s cache did not sync in %ld ms",
                                  r->inf[i].ops.name, r->o.sync_timeout_ms);
            goto fail;
        }
    }
    r->threads = common_calloc((size_t)r->o.workers, sizeof(pthread_t));
    if (!r->threads) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < r->o.workers; i++) {
        if (pthread_create(&r->threads[i], NULL, worker, r) != 0) {
            rc = common_error_set(err, COMMON_EIO, "reconciler: cannot start worker %d", i);
            goto fail;
        }
        r->nthreads++;
    }
    atomic_store(&r->synced, 1);
    common_log(COMMON_LOG_INFO, "reconciler started", "namespace",
               r->o.namespace ? r->o.namespace : "(all)", NULL);
    return COMMON_OK;
fail:
    rc_stop(r);
    return rc;
}

int rc_synced(struct rc_reconciler *r)
{
    return r && atomic_load(&r->synced);
}

void rc_stop(struct rc_reconciler *r)
{
    if (!r || atomic_exchange(&r->stopped, 1))
        return;
    atomic_store(&r->synced, 0);
    rc_queue_shutdown(r->q);
    for (int i = 0; i < r->nthreads; i++)
        pthread_join(r->threads[i], NULL);
    r->nthreads = 0;
    for (int i = 0; i < INF_N; i++)
        common_informer_request_stop(r->inf[i].inf);
    for (int i = 0; i < INF_N; i++)
        if (r->inf[i].inf)
            common_informer_stop(r->inf[i].inf);
}

void rc_destroy(struct rc_reconciler *r)
{
    if (!r)
        return;
    rc_stop(r);
    for (int i = 0; i < INF_N; i++)
        common_informer_destroy(r->inf[i].inf);
    common_free(r->threads);
    rc_queue_destroy(r->q);
    memo_free(&r->memo);
    common_free(r);
}

void rc_get_stats(struct rc_reconciler *r, struct rc_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->reconciles = atomic_load(&r->reconciles);
    out->errors = atomic_load(&r->errors);
    out->status_writes = atomic_load(&r->status_writes);
    out->creates = atomic_load(&r->creates);
    out->applies = atomic_load(&r->applies);
    out->deletes = atomic_load(&r->deletes);
    out->applies_skipped = atomic_load(&r->applies_skipped);
    rc_queue_stats(r->q, &out->queue);
}
