/*
 * extender/dra_glue.c - DRA glue (docs/dra.md): watches of resource.k8s.io/v1 ResourceSlices,
 * DeviceClasses and ResourceClaims (only when the API is served); the DRA view rebuilt by the
 * timer thread when one of them or a gang pod with claims changed, and handed to the books;
 * the claim allocations written before a member's Binding and cleared for the members of a
 * gang whose attempt ended; metrics (devices per driver, pool and state; gangs waiting for
 * devices).
 *
 * Threads: watch handlers set x->dra_dirty (x->mu); the timer thread builds the view without
 * x->mu and swaps it in under x->mu (the books borrow it); binder threads write claims with
 * x->mu held only to copy the plan out.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/pmap.h"
#include "dra/status.h"
#include "dra/sweep.h"
#include "dra/view.h"
#include "extender/server_int.h"

static const struct common_kube_resource dra_res[3] = {
    {"resource.k8s.io", "v1", "resourceslices", 0},
    {"resource.k8s.io", "v1", "deviceclasses", 0},
    {"resource.k8s.io", "v1", "resourceclaims", 1},
};
static const char *const dra_what[3] = {"resourceslices", "deviceclasses", "resourceclaims"};

/* x->dra_dirty bits: the claims (or gang pods) changed; the devices (slices, classes) changed */
#define DIRTY_CLAIMS 1
#define DIRTY_DEVICES 2

static void dra_changed(struct extender_server *x, int what)
{
    pthread_mutex_lock(&x->mu);
    x->dra_dirty |= what;
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void on_add(void *ctx, const void *item)
{
    (void)item;
    dra_changed(ctx, DIRTY_CLAIMS);
}

static void on_update(void *ctx, const void *old_item, const void *new_item)
{
    (void)old_item;
    (void)new_item;
    dra_changed(ctx, DIRTY_CLAIMS);
}

static void on_delete(void *ctx, const void *old_item)
{
    (void)old_item;
    dra_changed(ctx, DIRTY_CLAIMS);
}

static void on_dev_add(void *ctx, const void *item)
{
    (void)item;
    dra_changed(ctx, DIRTY_CLAIMS | DIRTY_DEVICES);
}

static void on_dev_update(void *ctx, const void *old_item, const void *new_item)
{
    (void)old_item;
    (void)new_item;
    dra_changed(ctx, DIRTY_CLAIMS | DIRTY_DEVICES);
}

static void on_dev_delete(void *ctx, const void *old_item)
{
    (void)old_item;
    dra_changed(ctx, DIRTY_CLAIMS | DIRTY_DEVICES);
}

void extender_dra_pod_changed(struct extender_server *x, const struct common_pod *p)
{
    /* a bound pod's claims are allocated: the claims' own events carry what changes */
    if (x->dra_inf[2] && p->n_resource_claims && extender_pod_group_of(p) &&
        !(p->node_name && *p->node_name))
        x->dra_dirty |= DIRTY_CLAIMS;
}

/* *served = 1 when resource.k8s.io/v1 serves resourceclaims, 0 when the API server answers
 * 404; an API server that cannot be asked is an error, never "DRA off" */
static enum common_rc dra_served(struct extender_server *x, int *served, struct common_error *err)
{
    return common_kube_served(x->kube, "/apis/resource.k8s.io/v1/resourceclaims?limit=1", 60000,
                              served, err);
}

enum common_rc extender_dra_watch(struct extender_server *x, struct common_error *err)
{
    struct common_informer_handlers hc = {on_add, on_update, on_delete, x};
    struct common_informer_handlers hd = {on_dev_add, on_dev_update, on_dev_delete, x};
    int served = 0;
    enum common_rc rc;

    if ((rc = dra_served(x, &served, err)))
        return rc;
    if (!served) {
        common_log(COMMON_LOG_INFO, "extender: resource.k8s.io/v1 not served; DRA is off", NULL);
        return COMMON_OK;
    }
    for (int k = 0; k < 3; k++) {
        common_informer_json_ops(&x->dra_ops[k], dra_what[k], &dra_res[k]);
        if (common_informer_create(x->kube, &x->dra_ops[k], k == 2 ? &hc : &hd, NULL,
                                   &x->dra_inf[k], err) ||
            common_informer_start(x->dra_inf[k], err))
            return err ? err->code : COMMON_ENOMEM;
    }
    common_log(COMMON_LOG_INFO,
               "extender: watching ResourceSlices, DeviceClasses and "
               "ResourceClaims (resource.k8s.io/v1)",
               NULL);
    return COMMON_OK;
}

void extender_dra_stop(struct extender_server *x)
{
    for (int k = 0; k < 3; k++)
        if (x->dra_inf[k])
            common_informer_request_stop(x->dra_inf[k]);
    for (int k = 0; k < 3; k++)
        if (x->dra_inf[k])
            common_informer_stop(x->dra_inf[k]);
}

void extender_dra_destroy(struct extender_server *x)
{
    for (int k = 0; k < 3; k++)
        common_informer_destroy(x->dra_inf[k]);
    common_arena_destroy(x->dra_arena);
    x->dra_arena = NULL;
    common_arena_destroy(x->dra_dev_arena);
    x->dra_dev_arena = NULL;
    json_decref(x->dra_stale);
    x->dra_stale = NULL;
}

/* the finalizer kube-scheduler puts on a claim it allocates, and our mark on the claims whose
 * allocation trainsched wrote (the pod uid it was written for) */
#define DELETE_PROTECTION "resource.kubernetes.io/delete-protection"

/* the stale-allocation sweep (below): how often, and how long an allocation must stay stale */
#define SWEEP_PERIOD_MS 2000
#define SWEEP_GRACE_MS 10000
static void sweep_stale(struct extender_server *x, int64_t now);

/* ---- the view ---- */

struct collect {
    struct common_arena *a;
    const void **items;
    size_t n, cap;
    int pods; /* keep only gang pods with claims */
};

static int collect_one(const char *key, void *item, void *ctx)
{
    struct collect *c = ctx;
    (void)key;
    if (c->pods) {
        const struct common_pod *p = item;
        if (!p->n_resource_claims || !extender_pod_group_of(p))
            return 0;
    }
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 256;
        const void **ni = common_arena_alloc(c->a, nc * sizeof(*ni));
        if (!ni)
            return 1;
        if (c->n)
            memcpy(ni, c->items, c->n * sizeof(*ni));
        c->items = ni;
        c->cap = nc;
    }
    c->items[c->n++] = item;
    return 0;
}

/* the items of informer inf into c (snapshot kept in *snap until the view is built) */
static void collect_all(struct common_informer *inf, struct collect *c,
                        struct common_pmap_snap **snap)
{
    *snap = common_informer_snapshot(inf);
    if (*snap)
        common_pmap_snap_foreach(*snap, collect_one, c);
}

/*
 * The devices (slices, classes) are decoded again only when one of them changed; a claim or
 * gang pod change builds the claims, the pods' claims and the index on the devices decoded
 * before (dra_view_build_on), which is what changes while gangs are placed.
 */
void extender_dra_refresh(struct extender_server *x)
{
    struct common_arena *a, *old, *dev_a = NULL, *old_dev = NULL;
    struct dra_view *v;
    struct dra_view_devices *dev = NULL;
    struct dra_view_input in;
    struct collect c[4];
    struct common_pmap_snap *snaps[4] = {NULL, NULL, NULL, NULL};
    struct common_error e = {0};
    int dirty, decode;

    if (!x->dra_inf[2])
        return;
    {
        int64_t now = extender_mono_ms();
        if (now - x->dra_sweep_at >= SWEEP_PERIOD_MS) {
            x->dra_sweep_at = now;
            sweep_stale(x, now);
        }
    }
    pthread_mutex_lock(&x->mu);
    dirty = x->dra_dirty;
    x->dra_dirty = 0;
    pthread_mutex_unlock(&x->mu);
    if (!dirty)
        return;
    /* the timer thread alone sets dra_dev and dra_dev_arena: read without x->mu */
    decode = (dirty & DIRTY_DEVICES) || !x->dra_dev;
    if (!(a = common_arena_create(0)) || !(v = common_arena_alloc(a, sizeof(*v)))) {
        common_arena_destroy(a);
        goto retry;
    }
    memset(c, 0, sizeof(c));
    for (int k = decode ? 0 : 2; k < 3; k++) {
        c[k].a = a;
        collect_all(x->dra_inf[k], &c[k], &snaps[k]);
    }
    c[3].a = a;
    c[3].pods = 1;
    collect_all(x->pods_inf, &c[3], &snaps[3]);
    memset(&in, 0, sizeof(in));
    in.slices = (const json_t *const *)c[0].items;
    in.n_slices = c[0].n;
    in.classes = (const json_t *const *)c[1].items;
    in.n_classes = c[1].n;
    in.claims = (const json_t *const *)c[2].items;
    in.n_claims = c[2].n;
    in.pods = (const struct common_pod *const *)c[3].items;
    in.n_pods = c[3].n;
    if (decode) {
        if (!(dev_a = common_arena_create(0)) || !(dev = common_arena_alloc(dev_a, sizeof(*dev))) ||
            dra_view_devices_decode(dev_a, &in, dev, &e) != COMMON_OK) {
            common_arena_destroy(dev_a);
            dev_a = NULL;
            dev = NULL;
        }
    } else {
        dev = x->dra_dev;
    }
    if (!dev || dra_view_build_on(a, &in, dev, v, &e) != COMMON_OK) {
        common_log(COMMON_LOG_WARN, "extender: DRA view not built", "error",
                   e.msg[0] ? e.msg : "no memory", NULL);
        common_arena_destroy(a);
        common_arena_destroy(dev_a);
        a = NULL;
    }
    for (int k = 0; k < 4; k++)
        if (snaps[k])
            common_pmap_snap_release(snaps[k]);
    if (!a)
        goto retry;
    if (decode)
        for (size_t i = 0; i < dev->n_bad; i++)
            common_log(COMMON_LOG_WARN, "extender: DRA object left out", "kind", dev->bad[i].kind,
                       "name", dev->bad[i].name, "error", dev->bad[i].reason, NULL);
    for (size_t i = dev->n_bad; i < v->n_bad; i++)
        common_log(COMMON_LOG_WARN, "extender: DRA object left out", "kind", v->bad[i].kind, "name",
                   v->bad[i].name, "error", v->bad[i].reason, NULL);
    {
        char b[160];
        snprintf(b, sizeof(b), "%zu slices, %zu classes, %zu claims, %zu pods with claims%s",
                 v->snap.n_slices, v->snap.n_classes, v->n_claims, v->n_pods,
                 decode ? " (devices decoded)" : "");
        common_log(COMMON_LOG_DEBUG, "extender: DRA view", "objects", b, NULL);
    }
    pthread_mutex_lock(&x->mu);
    gang_dra_set(x->gs, v);
    old = x->dra_arena;
    x->dra_arena = a;
    if (decode) {
        old_dev = x->dra_dev_arena;
        x->dra_dev_arena = dev_a;
        x->dra_dev = dev;
    }
    x->tick_req = 1;
    pthread_mutex_unlock(&x->mu);
    common_arena_destroy(old); /* the old view first: it borrows the old devices */
    common_arena_destroy(old_dev);
    extender_dra_metrics(x, v);
    return;
retry:
    pthread_mutex_lock(&x->mu);
    x->dra_dirty |= dirty; /* try again on the next pass */
    pthread_mutex_unlock(&x->mu);
}

/* ---- metrics ---- */

int extender_dra_metrics_register(struct extender_server *x, struct common_metrics *m)
{
    static const char *const dev_labels[] = {"driver", "pool", "state", NULL};
    static const char *const alloc_labels[] = {"event", NULL};

    x->m_dra_devices = common_metrics_gauge(
        m, "trainsched_extender_dra_devices",
        "DRA devices of the newest complete generation of each pool, by driver, pool and state "
        "(free, allocated: in a ResourceClaim's status.allocation).",
        dev_labels);
    x->m_dra_waiting = common_metrics_gauge(
        m, "trainsched_extender_gangs_waiting_for_devices",
        "Gangs not holding nor admitted whose reason is their ResourceClaims (a claim missing or "
        "malformed, or not enough free devices for every member at once).",
        NULL);
    x->m_dra_allocs = common_metrics_counter(
        m, "trainsched_extender_dra_allocations_total",
        "ResourceClaim allocations trainsched wrote or released, by event: written (status."
        "allocation written for a planned member), refused (a write or release the API server "
        "refused, conflicts aside), released (a member's gang attempt ended), leaked_freed (the "
        "sweep freed an allocation of ours that no gang plans, holds or runs).",
        alloc_labels);
    return x->m_dra_devices && x->m_dra_waiting && x->m_dra_allocs ? 0 : -1;
}

/* one allocation event: the counter, and an Event regarding the claim (ns/name, uid may be
 * NULL) with reason and note */
static void alloc_event(struct extender_server *x, const char *what, const char *ns,
                        const char *name, const char *uid, int warning, const char *reason,
                        const char *note)
{
    struct common_event_ref ref = {"resource.k8s.io/v1", "ResourceClaim", ns, name, uid};
    const char *lv[1] = {what};
    struct common_error e = {0};

    if (x->m_dra_allocs)
        common_metric_add(x->m_dra_allocs, lv, 1);
    if (x->o.events && common_events_record(x->o.events, &ref,
                                            warning ? COMMON_EVENT_WARNING : COMMON_EVENT_NORMAL,
                                            reason, "Scheduling", note, &e) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: Event not recorded", "claim", name, "error", e.msg,
                   NULL);
}

static int slice_pool_cmp(const void *x, const void *y)
{
    const struct dra_slice *a = *(const struct dra_slice *const *)x;
    const struct dra_slice *b = *(const struct dra_slice *const *)y;
    int c = strcmp(a->driver, b->driver);
    return c ? c : strcmp(a->pool, b->pool);
}

void extender_dra_metrics(struct extender_server *x, const struct dra_view *v)
{
    const struct dra_slice **cur;
    size_t n = 0;

    if (!x->m_dra_devices || !(cur = common_malloc((v->snap.n_slices + 1) * sizeof(*cur))))
        return;
    /* the slices of each pool's newest generation, grouped by driver and pool */
    for (size_t i = 0; i < v->snap.n_slices; i++)
        if (dra_slice_current(v->ix, &v->snap.slices[i]))
            cur[n++] = &v->snap.slices[i];
    qsort(cur, n, sizeof(*cur), slice_pool_cmp);
    for (size_t i = 0; i < n;) {
        double fr = 0, al = 0;
        const char *lv[3];
        size_t j = i;
        for (; j < n && slice_pool_cmp(&cur[i], &cur[j]) == 0; j++)
            for (size_t d = 0; d < cur[j]->n_devices; d++) {
                if (dra_device_in_use(v->ix, cur[j]->driver, cur[j]->pool, cur[j]->devices[d].name))
                    al++;
                else
                    fr++;
            }
        lv[0] = cur[i]->driver;
        lv[1] = cur[i]->pool;
        lv[2] = "free";
        common_metric_set(x->m_dra_devices, lv, fr);
        lv[2] = "allocated";
        common_metric_set(x->m_dra_devices, lv, al);
        i = j;
    }
    common_free(cur);
}

void extender_dra_count_waiting(struct extender_server *x, double waiting)
{
    if (x->m_dra_waiting)
        common_metric_set(x->m_dra_waiting, NULL, waiting);
}

/* ---- claim writes ---- */

/* the claim ns/name from the watch cache (a new reference), NULL when absent */
static json_t *cached_claim(struct extender_server *x, const char *ns, const char *name)
{
    struct common_pmap_snap *snap;
    char key[KEY_MAX];
    json_t *obj = NULL;

    if (!x->dra_inf[2] || !(snap = common_informer_snapshot(x->dra_inf[2])))
        return NULL;
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    obj = common_pmap_snap_get(snap, key);
    if (obj)
        obj = json_deep_copy(obj);
    common_pmap_snap_release(snap);
    return obj;
}

/* PUT the claim (status: its status subresource) with obj, its metadata.resourceVersion the
 * precondition; *out (when out is set) gets the claim the API server returned */
static enum common_rc put_claim(struct extender_server *x, const char *ns, const char *name,
                                int status_sub, json_t *obj, json_t **out, struct common_error *e)
{
    char path[KEY_MAX + 96];
    char *body = json_dumps(obj, JSON_COMPACT);
    struct common_buf resp;
    long status = 0;
    enum common_rc rc;

    if (out)
        *out = NULL;
    if (!body)
        return common_error_set(e, COMMON_ENOMEM, "no memory for a claim");
    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s%s", ns,
             name, status_sub ? "/status" : "");
    common_buf_init(&resp, (size_t)4 << 20);
    rc = common_kube_request(x->kube, "PUT", path, "application/json", body, strlen(body), NULL,
                             &resp, &status, e);
    if (rc == COMMON_OK && out &&
        !(*out = json_loadb(resp.data ? resp.data : "", resp.len, 0, NULL)))
        rc = common_error_set(e, COMMON_EINVAL, "PUT %s: the answer is not JSON", path);
    common_buf_free(&resp);
    free(body);
    return rc;
}

static enum common_rc put_status(struct extender_server *x, const char *ns, const char *name,
                                 json_t *obj, struct common_error *e)
{
    return put_claim(x, ns, name, 1, obj, NULL, e);
}

/*
 * mark_claim - what kube-scheduler's PreBind does before it writes an allocation: the finalizer
 * resource.kubernetes.io/delete-protection (kube-controller-manager's resourceclaim controller
 * deallocates a claim whose reservedFor became empty only when it carries it), added with a
 * normal update; with it the annotation DRA_WRITER_ANNOTATION naming the pod the allocation is
 * for, so the stale-allocation sweep knows the allocations trainsched wrote. *obj is replaced
 * by the updated claim.
 */
static enum common_rc mark_claim(struct extender_server *x, const char *ns, const char *name,
                                 const char *pod_uid, json_t **obj, struct common_error *e)
{
    json_t *md = json_object_get(*obj, "metadata"), *fin, *ann, *f, *upd;
    size_t i;
    int has = 0;
    enum common_rc rc;

    if (!json_is_object(md))
        return common_error_set(e, COMMON_EINVAL, "claim %s/%s has no metadata", ns, name);
    fin = json_object_get(md, "finalizers");
    if (!json_is_array(fin)) {
        fin = json_array();
        json_object_set_new(md, "finalizers", fin);
    }
    json_array_foreach(fin, i, f) has |=
        json_is_string(f) && strcmp(json_string_value(f), DELETE_PROTECTION) == 0;
    if (!has)
        json_array_append_new(fin, json_string(DELETE_PROTECTION));
    ann = json_object_get(md, "annotations");
    if (!json_is_object(ann)) {
        ann = json_object();
        json_object_set_new(md, "annotations", ann);
    }
    json_object_set_new(ann, DRA_WRITER_ANNOTATION, json_string(pod_uid));
    rc = put_claim(x, ns, name, 0, *obj, &upd, e);
    if (rc == COMMON_OK) {
        json_decref(*obj);
        *obj = upd;
    }
    return rc;
}

/* a DeviceClass from the watch cache (dra_class_lookup over a snapshot) */
static const json_t *class_of(void *ctx, const char *name)
{
    return ctx ? common_pmap_snap_get(ctx, name) : NULL;
}

/* status.allocation for claim obj and c's devices, as kube-scheduler 1.36's DRA plugin writes
 * it (dra/status.h: configs, tolerations, nodeSelector, allocationTimestamp) */
static json_t *allocation_json(struct extender_server *x, const json_t *obj,
                               const struct gang_dra_claim *c, struct common_error *e)
{
    struct common_pmap_snap *cls = x->dra_inf[1] ? common_informer_snapshot(x->dra_inf[1]) : NULL;
    char ts[32];
    json_t *a;

    dra_status_timestamp((long long)time(NULL), ts, sizeof(ts));
    a = dra_status_allocation(obj, class_of, cls, c->results, c->n_results, c->node, c->node_local,
                              ts, e);
    if (cls)
        common_pmap_snap_release(cls);
    return a;
}

#define DRA_CLAIMS_MAX 16

/*
 * write_planned - status.allocation (the planned devices) and status.reservedFor (the pod) of
 * pod uid's claims that the plan covers and the claim cache shows unallocated, one status PUT
 * per claim with the cached resourceVersion as precondition. only_node (the filter's answer):
 * when set, nothing is written unless the plan's node is that one and kube-scheduler's own
 * first fit there would not be the planned devices. Returns how many claims were written.
 */
static size_t write_planned(struct extender_server *x, const char *uid, const char *pod_name,
                            const char *only_node, const char *when)
{
    struct gang_dra_claim c[DRA_CLAIMS_MAX];
    char ns[DRA_CLAIMS_MAX][64], name[DRA_CLAIMS_MAX][254];
    struct common_arena *a;
    size_t n, written = 0;

    if (!x->dra_inf[2] || !(a = common_arena_create(0)))
        return 0;
    pthread_mutex_lock(&x->mu);
    n = gang_dra_planned(x->gs, uid, c, DRA_CLAIMS_MAX);
    if (n && only_node &&
        (strcmp(c[0].node, only_node) != 0 || !gang_dra_first_fit_differs(x->gs, uid)))
        n = 0;
    /* the plan's strings belong to the books: copied out before x->mu is dropped */
    for (size_t i = 0; i < n; i++) {
        struct dra_result *r = common_arena_alloc(a, (c[i].n_results + 1) * sizeof(*r));
        extender_copy_str(ns[i], sizeof(ns[i]), c[i].ns);
        extender_copy_str(name[i], sizeof(name[i]), c[i].name);
        c[i].node = common_arena_strdup(a, c[i].node);
        for (size_t k = 0; r && k < c[i].n_results; k++) {
            r[k] = c[i].results[k];
            r[k].request = common_arena_strdup(a, r[k].request);
            r[k].driver = common_arena_strdup(a, r[k].driver);
            r[k].pool = common_arena_strdup(a, r[k].pool);
            r[k].device = common_arena_strdup(a, r[k].device);
            if (!r[k].request || !r[k].driver || !r[k].pool || !r[k].device)
                r = NULL;
        }
        c[i].results = r;
        c[i].ns = c[i].name = NULL;
    }
    pthread_mutex_unlock(&x->mu);
    for (size_t i = 0; i < n; i++) {
        json_t *obj = cached_claim(x, ns[i], name[i]);
        json_t *st, *alloc;
        struct common_error e = {0};
        enum common_rc rc;
        if (!obj || !c[i].results || !c[i].node ||
            json_object_get(json_object_get(obj, "status"), "allocation")) {
            /* already allocated (by an earlier write, or by kube-scheduler's PreBind) or
             * unknown: nothing of ours to write */
            json_decref(obj);
            continue;
        }
        if (!(alloc = allocation_json(x, obj, &c[i], &e))) {
            common_log(COMMON_LOG_WARN, "extender: claim allocation not written", "claim", name[i],
                       "namespace", ns[i], "pod", pod_name, "at", when, "error", e.msg, NULL);
            json_decref(obj);
            continue;
        }
        rc = mark_claim(x, ns[i], name[i], uid, &obj, &e);
        st = json_object_get(obj, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(obj, "status", st);
        }
        json_object_set_new(st, "allocation", alloc);
        json_object_set_new(
            st, "reservedFor",
            json_pack("[{s:s, s:s, s:s}]", "resource", "pods", "name", pod_name, "uid", uid));
        if (rc == COMMON_OK)
            rc = put_status(x, ns[i], name[i], obj, &e);
        {
            char cuid[128], note[COMMON_EVENTS_NOTE_MAX];
            extender_copy_str(
                cuid, sizeof(cuid),
                json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid")));
            json_decref(obj);
            pthread_mutex_lock(&x->mu);
            if (rc == COMMON_OK)
                x->st.dra_claims_written++;
            pthread_mutex_unlock(&x->mu);
            if (rc == COMMON_OK) {
                written++;
                common_log(COMMON_LOG_DEBUG, "extender: claim allocation written", "claim", name[i],
                           "namespace", ns[i], "pod", pod_name, "at", when, NULL);
                snprintf(note, sizeof(note),
                         "trainsched wrote the planned devices on node %s for pod %s (at %s)",
                         c[i].node, pod_name, when);
                alloc_event(x, "written", ns[i], name[i], cuid[0] ? cuid : NULL, 0,
                            "DeviceAllocationWritten", note);
            } else {
                /* a conflict: the cache lags an allocation written meanwhile (ours or the
                 * scheduler's); the next pass sees it */
                common_log(rc == COMMON_ECONFLICT ? COMMON_LOG_DEBUG : COMMON_LOG_WARN,
                           "extender: claim allocation not written", "claim", name[i], "namespace",
                           ns[i], "pod", pod_name, "at", when, "error", e.msg, NULL);
                if (rc != COMMON_ECONFLICT) {
                    snprintf(note, sizeof(note),
                             "the API server refused the allocation for pod %s: %s", pod_name,
                             e.msg);
                    alloc_event(x, "refused", ns[i], name[i], cuid[0] ? cuid : NULL, 1,
                                "DeviceAllocationRefused", note);
                }
            }
        }
    }
    common_arena_destroy(a);
    return written;
}

void extender_dra_before_bind(struct extender_server *x, const struct gang_answer *a)
{
    (void)write_planned(x, a->uid, a->name, NULL, "bind");
}

void extender_dra_at_filter(struct extender_server *x, const struct common_pod *pod,
                            const char *const *node_names, const uint8_t *verdict, size_t n)
{
    const char *only = NULL;

    if (!x->dra_inf[2] || !pod->uid || !pod->name)
        return;
    for (size_t i = 0; i < n; i++) {
        if (verdict[i] != EXTENDER_PASS)
            continue;
        if (only)
            return; /* more than one node left: the plan does not pin the pod */
        only = node_names[i];
    }
    if (only)
        (void)write_planned(x, pod->uid, pod->name, only, "filter");
}

struct owned {
    const char *uid;
    json_t *found; /* array of claim copies */
};

static int owned_one(const char *key, void *item, void *ctx)
{
    struct owned *o = ctx;
    const json_t *obj = item, *ref;
    size_t i;
    (void)key;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref)
    {
        const char *kind = json_string_value(json_object_get(ref, "kind"));
        const char *uid = json_string_value(json_object_get(ref, "uid"));
        if (kind && uid && strcmp(kind, "Pod") == 0 && strcmp(uid, o->uid) == 0) {
            json_array_append_new(o->found, json_deep_copy(obj));
            break;
        }
    }
    return 0;
}

/* 1 when status.reservedFor names no pod but uid */
static int reserved_only_for(const json_t *claim, const char *uid)
{
    const json_t *rf = json_object_get(json_object_get(claim, "status"), "reservedFor"), *r;
    size_t i;
    json_array_foreach(rf, i, r)
    {
        const char *u = json_string_value(json_object_get(r, "uid"));
        if (!u || strcmp(u, uid) != 0)
            return 0;
    }
    return 1;
}

void extender_dra_release(struct extender_server *x, const struct gang_answer *a)
{
    struct owned o = {a->uid, json_array()};
    struct common_pmap_snap *snap;
    size_t i;
    json_t *obj;

    if (!x->dra_inf[2] || !o.found || !(snap = common_informer_snapshot(x->dra_inf[2]))) {
        json_decref(o.found);
        return;
    }
    common_pmap_snap_foreach(snap, owned_one, &o);
    common_pmap_snap_release(snap);
    json_array_foreach(o.found, i, obj)
    {
        json_t *st = json_object_get(obj, "status");
        const char *ns =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace"));
        const char *name =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        struct common_error e = {0};
        enum common_rc rc;
        if (!ns || !name || !json_object_get(st, "allocation") || !reserved_only_for(obj, a->uid))
            continue;
        json_object_del(st, "allocation");
        json_object_del(st, "reservedFor");
        json_object_del(st, "devices");
        rc = put_status(x, ns, name, obj, &e);
        pthread_mutex_lock(&x->mu);
        if (rc == COMMON_OK)
            x->st.dra_claims_released++;
        pthread_mutex_unlock(&x->mu);
        {
            const char *cuid =
                json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
            char note[COMMON_EVENTS_NOTE_MAX];
            if (rc != COMMON_OK && rc != COMMON_ENOTFOUND) {
                common_log(COMMON_LOG_WARN, "extender: claim allocation not released", "claim",
                           name, "namespace", ns, "pod", a->name, "error", e.msg, NULL);
                if (rc != COMMON_ECONFLICT) {
                    snprintf(note, sizeof(note), "the API server refused the release: %s", e.msg);
                    alloc_event(x, "refused", ns, name, cuid, 1, "DeviceAllocationRefused", note);
                }
            } else if (rc == COMMON_OK) {
                common_log(COMMON_LOG_INFO,
                           "extender: claim allocation released (the member was not bound)",
                           "claim", name, "namespace", ns, "pod", a->name, NULL);
                snprintf(note, sizeof(note),
                         "trainsched released the devices: pod %s was not bound (%s)", a->name,
                         a->reason[0] ? a->reason : "its gang attempt ended");
                alloc_event(x, "released", ns, name, cuid, 0, "DeviceAllocationReleased", note);
            }
        }
    }
    json_decref(o.found);
}

/* ---- stale allocations ---- */

/* the one node of status.allocation.nodeSelector (matchFields metadata.name In [node]), NULL
 * when the allocation has no nodeSelector (devices reachable from every node) */
static const char *alloc_node_of(const json_t *alloc)
{
    const json_t *term = json_array_get(
        json_object_get(json_object_get(alloc, "nodeSelector"), "nodeSelectorTerms"), 0);
    const json_t *mf = json_array_get(json_object_get(term, "matchFields"), 0);
    return json_string_value(json_array_get(json_object_get(mf, "values"), 0));
}

struct stale_ctx {
    struct extender_server *x;
    struct common_pmap_snap *pods;
    const char *node; /* the allocation's node of the claim being judged, or NULL */
    json_t *found;    /* array of [claim copy, reason] that look stale now */
};

/* the books' word on an unbound gang pod uid: planned, held or released on c->node */
static enum dra_sweep_pod books_state(struct stale_ctx *c, const char *uid)
{
    int placed;
    pthread_mutex_lock(&c->x->mu);
    placed = gang_dra_pod_placed(c->x->gs, uid, c->node);
    pthread_mutex_unlock(&c->x->mu);
    return placed > 0    ? DRA_SWEEP_POD_PLACED
           : placed == 0 ? DRA_SWEEP_POD_ENDED
                         : DRA_SWEEP_POD_GONE;
}

/* dra_sweep_pod_of over the pod cache and the books (dra/sweep.h) */
static enum dra_sweep_pod pod_state(void *ctx, const char *ns, const char *name, const char *uid)
{
    struct stale_ctx *c = ctx;
    const struct common_pod *p;
    char pkey[KEY_MAX];

    if (!name) {
        /* the writer: only its uid is recorded; trainsched writes for gang pods alone, and
         * the books know every gang pod of the pod cache, so one they do not know is gone */
        enum dra_sweep_pod b = books_state(c, uid);
        return b;
    }
    if (!ns)
        return DRA_SWEEP_POD_OTHER;
    snprintf(pkey, sizeof(pkey), "%s/%s", ns, name);
    p = common_pmap_snap_get(c->pods, pkey);
    if (!p || !p->uid || strcmp(p->uid, uid) != 0)
        return DRA_SWEEP_POD_GONE;
    if (p->node_name && *p->node_name)
        return DRA_SWEEP_POD_BOUND;
    if (!extender_pod_group_of(p))
        return DRA_SWEEP_POD_OTHER;
    {
        enum dra_sweep_pod b = books_state(c, uid);
        return b == DRA_SWEEP_POD_GONE ? DRA_SWEEP_POD_OTHER : b;
    }
}

/*
 * A claim allocation trainsched wrote (annotation DRA_WRITER_ANNOTATION) whose pods are all
 * gone or unbound gang members the books no longer plan, hold or release on the allocation's
 * node, whatever status.reservedFor holds: the attempt ended while kube-scheduler had the pod
 * in backoff, the gang was deleted, or trainsched restarted meanwhile (dra/sweep.h decides).
 */
static int stale_one(const char *key, void *item, void *ctx)
{
    struct stale_ctx *c = ctx;
    const json_t *obj = item,
                 *alloc = json_object_get(json_object_get(obj, "status"), "allocation");
    const char *why = NULL;
    (void)key;

    if (!alloc)
        return 0;
    c->node = alloc_node_of(alloc);
    if (dra_sweep_decide_json(obj, pod_state, c, &why) == DRA_SWEEP_RELEASE)
        json_array_append_new(c->found, json_pack("[o, s]", json_deep_copy(obj), why));
    return 0;
}

/* release (one status PUT) the allocations that stayed stale for SWEEP_GRACE_MS */
static void sweep_stale(struct extender_server *x, int64_t now)
{
    struct stale_ctx c = {x, NULL, NULL, json_array()};
    json_t *item;
    struct common_pmap_snap *snap;
    json_t *seen = json_object(), *obj;
    size_t i;

    if (!c.found || !seen || !(snap = common_informer_snapshot(x->dra_inf[2])))
        goto out;
    if ((c.pods = common_informer_snapshot(x->pods_inf)))
        common_pmap_snap_foreach(snap, stale_one, &c);
    if (c.pods)
        common_pmap_snap_release(c.pods);
    common_pmap_snap_release(snap);
    json_array_foreach(c.found, i, item)
    {
        const char *why = json_string_value(json_array_get(item, 1));
        const json_t *md = json_object_get(obj = json_array_get(item, 0), "metadata");
        const char *cuid = json_string_value(json_object_get(md, "uid"));
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        const char *name = json_string_value(json_object_get(md, "name"));
        json_t *st = json_object_get(obj, "status");
        json_int_t first;
        struct common_error e = {0};
        char note[COMMON_EVENTS_NOTE_MAX];
        enum common_rc rc;
        if (!cuid || !ns || !name)
            continue;
        first = x->dra_stale ? json_integer_value(json_object_get(x->dra_stale, cuid)) : 0;
        if (!first) {
            json_object_set_new(seen, cuid, json_integer(now));
            continue;
        }
        if (now - first < SWEEP_GRACE_MS) {
            json_object_set_new(seen, cuid, json_integer(first));
            continue;
        }
        json_object_del(st, "allocation");
        json_object_del(st, "reservedFor");
        json_object_del(st, "devices");
        if ((rc = put_status(x, ns, name, obj, &e)) == COMMON_OK) {
            pthread_mutex_lock(&x->mu);
            x->st.dra_claims_released++;
            x->st.dra_leaks_freed++;
            pthread_mutex_unlock(&x->mu);
            common_log(COMMON_LOG_INFO, "extender: leaked claim allocation freed", "claim", name,
                       "namespace", ns, "why", why, NULL);
            snprintf(note, sizeof(note),
                     "trainsched freed an allocation it wrote that nothing uses: %s", why);
            alloc_event(x, "leaked_freed", ns, name, cuid, 0, "LeakedAllocationFreed", note);
        } else {
            if (rc != COMMON_ENOTFOUND && rc != COMMON_ECONFLICT) {
                snprintf(note, sizeof(note), "the API server refused the release: %s", e.msg);
                alloc_event(x, "refused", ns, name, cuid, 1, "DeviceAllocationRefused", note);
            }
            json_object_set_new(seen, cuid, json_integer(first)); /* next sweep again */
        }
    }
out:
    json_decref(c.found);
    json_decref(x->dra_stale);
    x->dra_stale = seen;
}

void extender_dra_release_job(struct extender_server *x, const char *ns, const char *name,
                              const char *uid, struct job **head, struct job **tail)
{
    struct job *j;

    if (!x->dra_inf[2] || !uid || !*uid || !(j = common_calloc(1, sizeof(*j))))
        return;
    extender_copy_str(j->a.uid, sizeof(j->a.uid), uid);
    extender_copy_str(j->a.namespace, sizeof(j->a.namespace), ns);
    extender_copy_str(j->a.name, sizeof(j->a.name), name);
    extender_copy_str(j->a.reason, sizeof(j->a.reason), "bind rejected");
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
}
