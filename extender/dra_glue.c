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

#include "common/pmap.h"
#include "dra/view.h"
#include "extender/server_int.h"

static const struct common_kube_resource dra_res[3] = {
    {"resource.k8s.io", "v1", "resourceslices", 0},
    {"resource.k8s.io", "v1", "deviceclasses", 0},
    {"resource.k8s.io", "v1", "resourceclaims", 1},
};
static const char *const dra_what[3] = {"resourceslices", "deviceclasses", "resourceclaims"};

static void dra_changed(struct extender_server *x)
{
    pthread_mutex_lock(&x->mu);
    x->dra_dirty = 1;
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void on_add(void *ctx, const void *item)
{
    (void)item;
    dra_changed(ctx);
}

static void on_update(void *ctx, const void *old_item, const void *new_item)
{
    (void)old_item;
    (void)new_item;
    dra_changed(ctx);
}

static void on_delete(void *ctx, const void *old_item)
{
    (void)old_item;
    dra_changed(ctx);
}

void extender_dra_pod_changed(struct extender_server *x, const struct common_pod *p)
{
    /* a bound pod's claims are allocated: the claims' own events carry what changes */
    if (x->dra_inf[2] && p->n_resource_claims && extender_pod_group_of(p) &&
        !(p->node_name && *p->node_name))
        x->dra_dirty = 1;
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
    struct common_informer_handlers h = {on_add, on_update, on_delete, x};
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
        if (common_informer_create(x->kube, &x->dra_ops[k], &h, NULL, &x->dra_inf[k], err) ||
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
}

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

void extender_dra_refresh(struct extender_server *x)
{
    struct common_arena *a, *old;
    struct dra_view *v;
    struct dra_view_input in;
    struct collect c[4];
    struct common_pmap_snap *snaps[4] = {NULL, NULL, NULL, NULL};
    struct common_error e = {0};
    int dirty;

    if (!x->dra_inf[2])
        return;
    pthread_mutex_lock(&x->mu);
    dirty = x->dra_dirty;
    x->dra_dirty = 0;
    pthread_mutex_unlock(&x->mu);
    if (!dirty)
        return;
    if (!(a = common_arena_create(0)) || !(v = common_arena_alloc(a, sizeof(*v)))) {
        common_arena_destroy(a);
        return;
    }
    memset(c, 0, sizeof(c));
    for (int k = 0; k < 3; k++) {
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
    if (dra_view_build(a, &in, v, &e) != COMMON_OK) {
        common_log(COMMON_LOG_WARN, "extender: DRA view not built", "error", e.msg, NULL);
        common_arena_destroy(a);
        a = NULL;
        pthread_mutex_lock(&x->mu);
        x->dra_dirty = 1; /* try again on the next pass */
        pthread_mutex_unlock(&x->mu);
    }
    for (int k = 0; k < 4; k++)
        if (snaps[k])
            common_pmap_snap_release(snaps[k]);
    if (!a)
        return;
    for (size_t i = 0; i < v->n_bad; i++)
        common_log(COMMON_LOG_WARN, "extender: DRA object left out", "kind", v->bad[i].kind, "name",
                   v->bad[i].name, "error", v->bad[i].reason, NULL);
    {
        char b[128];
        snprintf(b, sizeof(b), "%zu slices, %zu classes, %zu claims, %zu pods with claims",
                 v->snap.n_slices, v->snap.n_classes, v->n_claims, v->n_pods);
        common_log(COMMON_LOG_DEBUG, "extender: DRA view", "objects", b, NULL);
    }
    pthread_mutex_lock(&x->mu);
    gang_dra_set(x->gs, v);
    old = x->dra_arena;
    x->dra_arena = a;
    x->tick_req = 1;
    pthread_mutex_unlock(&x->mu);
    common_arena_destroy(old);
    extender_dra_metrics(x, v);
}

/* ---- metrics ---- */

int extender_dra_metrics_register(struct extender_server *x, struct common_metrics *m)
{
    static const char *const dev_labels[] = {"driver", "pool", "state", NULL};

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
    return x->m_dra_devices && x->m_dra_waiting ? 0 : -1;
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

/* PUT the claim's status subresource with obj (its metadata.resourceVersion the precondition) */
static enum common_rc put_status(struct extender_server *x, const char *ns, const char *name,
                                 json_t *obj, struct common_error *e)
{
    char path[KEY_MAX + 96];
    char *body = json_dumps(obj, JSON_COMPACT);
    struct common_buf resp;
    long status = 0;
    enum common_rc rc;

    if (!body)
        return common_error_set(e, COMMON_ENOMEM, "no memory for a claim status");
    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s/status",
             ns, name);
    common_buf_init(&resp, (size_t)4 << 20);
    rc = common_kube_request(x->kube, "PUT", path, "application/json", body, strlen(body), NULL,
                             &resp, &status, e);
    common_buf_free(&resp);
    free(body);
    return rc;
}

/* status.allocation for results on node, as kube-scheduler's DRA plugin writes it */
static json_t *allocation_json(const struct gang_dra_claim *c)
{
    json_t *res = json_array();
    json_t *a;

    for (size_t i = 0; res && i < c->n_results; i++) {
        const struct dra_result *r = &c->results[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "request", r->request, "driver", r->driver,
                              "pool", r->pool, "device", r->device);
        if (o && r->admin_access)
            json_object_set_new(o, "adminAccess", json_true());
        json_array_append_new(res, o);
    }
    a = json_pack("{s:{s:o}, s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}", "devices", "results", res,
                  "nodeSelector", "nodeSelectorTerms", "matchFields", "key", "metadata.name",
                  "operator", "In", "values", c->node);
    return a;
}

#define DRA_CLAIMS_MAX 16

void extender_dra_before_bind(struct extender_server *x, const struct gang_answer *a)
{
    struct gang_dra_claim c[DRA_CLAIMS_MAX];
    json_t *allocs[DRA_CLAIMS_MAX];
    char ns[DRA_CLAIMS_MAX][64], name[DRA_CLAIMS_MAX][254];
    size_t n;

    if (!x->dra_inf[2])
        return;
    pthread_mutex_lock(&x->mu);
    n = gang_dra_planned(x->gs, a->uid, c, DRA_CLAIMS_MAX);
    for (size_t i = 0; i < n; i++) {
        allocs[i] = allocation_json(&c[i]);
        extender_copy_str(ns[i], sizeof(ns[i]), c[i].ns);
        extender_copy_str(name[i], sizeof(name[i]), c[i].name);
    }
    pthread_mutex_unlock(&x->mu);
    for (size_t i = 0; i < n; i++) {
        json_t *obj = cached_claim(x, ns[i], name[i]);
        json_t *st;
        struct common_error e = {0};
        enum common_rc rc;
        if (!obj || !allocs[i] || json_object_get(json_object_get(obj, "status"), "allocation")) {
            /* already allocated (kube-scheduler's PreBind runs before the extender's bind) or
             * unknown: nothing of ours to write */
            json_decref(obj);
            json_decref(allocs[i]);
            continue;
        }
        st = json_object_get(obj, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(obj, "status", st);
        }
        json_object_set_new(st, "allocation", allocs[i]);
        json_object_set_new(
            st, "reservedFor",
            json_pack("[{s:s, s:s, s:s}]", "resource", "pods", "name", a->name, "uid", a->uid));
        rc = put_status(x, ns[i], name[i], obj, &e);
        json_decref(obj);
        pthread_mutex_lock(&x->mu);
        if (rc == COMMON_OK)
            x->st.dra_claims_written++;
        pthread_mutex_unlock(&x->mu);
        if (rc != COMMON_OK)
            common_log(COMMON_LOG_WARN, "extender: claim allocation not written", "claim", name[i],
                       "namespace", ns[i], "pod", a->name, "error", e.msg, NULL);
    }
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
        if (rc != COMMON_OK && rc != COMMON_ENOTFOUND)
            common_log(COMMON_LOG_WARN, "extender: claim allocation not released", "claim", name,
                       "namespace", ns, "pod", a->name, "error", e.msg, NULL);
        else if (rc == COMMON_OK)
            common_log(COMMON_LOG_INFO,
                       "extender: claim allocation released (the member was not bound)", "claim",
                       name, "namespace", ns, "pod", a->name, NULL);
    }
    json_decref(o.found);
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
