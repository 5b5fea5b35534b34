/*
 * extender/informers.c - the watch handlers that feed the gang core's books: nodes, pods,
 * PodGroups, and the Kueue and KAI Topology objects as topology level sources. Each takes x->mu,
 * updates the books, marks the gang dirty and wakes the timer; PodGroup changes that unblock a
 * gang queue touches of its waiting pods for the binders.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extender/server_int.h"

static int64_t res_value(const struct common_resources *r, const char *name, int *found)
{
    for (uint32_t i = 0; i < r->n_extended; i++)
        if (strcmp(r->extended[i].name, name) == 0) {
            *found = 1;
            return r->extended[i].value;
        }
    *found = 0;
    return 0;
}

static void node_upsert(struct extender_server *x, const struct common_node *n)
{
    struct common_error e = {0};
    int fc, fa;
    int64_t want = extender_node_gang_want(n);
    int64_t vc = res_value(&n->capacity, EXTENDER_GANG_RESOURCE, &fc);
    int64_t va = res_value(&n->allocatable, EXTENDER_GANG_RESOURCE, &fa);

    pthread_mutex_lock(&x->mu);
    if (gang_node_upsert(x->gs, n, &e) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: node not in the books", "node", n->name, "error",
                   e.msg, NULL);
    if (x->o.advertise_resource > 0 && (!fc || !fa || vc != want || va != want))
        extender_node_todo_add(x, n->name, 0);
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void on_node_add(void *ctx, const void *item)
{
    node_upsert(ctx, item);
}

static void on_node_update(void *ctx, const void *old_item, const void *new_item)
{
    (void)old_item;
    node_upsert(ctx, new_item);
}

static void on_node_delete(void *ctx, const void *old_item)
{
    struct extender_server *x = ctx;
    const struct common_node *n = old_item;

    pthread_mutex_lock(&x->mu);
    gang_node_delete(x->gs, n->name);
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void pod_upsert(struct extender_server *x, const struct common_pod *p)
{
    struct common_error e = {0};
    const char *pg = extender_pod_group_of(p);

    pthread_mutex_lock(&x->mu);
    if (gang_pod_upsert(x->gs, p, &e) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: pod not in the books", "pod", p->name, "namespace",
                   p->namespace, "error", e.msg, NULL);
    extender_dra_pod_changed(x, p);
    if (pg) {
        extender_mark_dirty(x, p->namespace, pg);
        x->tick_req = 1;
        pthread_cond_signal(&x->cv);
    } else if (x->n_holds) {
        x->tick_req = 1; /* a non-gang pod may take a planned node */
        pthread_cond_signal(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
}

static void on_pod_add(void *ctx, const void *item)
{
    pod_upsert(ctx, item);
}

static void on_pod_update(void *ctx, const void *old_item, const void *new_item)
{
    (void)old_item;
    pod_upsert(ctx, new_item);
}

static void on_pod_delete(void *ctx, const void *old_item)
{
    struct extender_server *x = ctx;
    const struct common_pod *p = old_item;
    const char *pg = extender_pod_group_of(p);

    pthread_mutex_lock(&x->mu);
    gang_pod_delete(x->gs, p->uid);
    extender_dra_pod_changed(x, p);
    if (pg)
        extender_mark_dirty(x, p->namespace, pg);
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void pg_meta(const json_t *obj, const char **ns, const char **name)
{
    const json_t *md = json_object_get(obj, "metadata");

    *ns = json_string_value(json_object_get(md, "namespace"));
    *name = json_string_value(json_object_get(md, "name"));
}

/* jobs touching every member of gang ns/name that waits in kube-scheduler's queue (x->mu held);
 * rv, the PodGroup's resourceVersion, is the annotation's value */
static void touch_jobs(struct extender_server *x, const char *ns, const char *name, const char *rv,
                       struct job **head, struct job **tail)
{
    size_t n = gang_waiting_pods(x->gs, ns, name, NULL, 0);
    struct gang_pod_ref *refs = n ? common_calloc(n, sizeof(*refs)) : NULL;

    if (refs)
        n = gang_waiting_pods(x->gs, ns, name, refs, n);
    for (size_t i = 0; refs && i < n; i++) {
        struct job *j = common_calloc(1, sizeof(*j));
        if (!j)
            break;
        extender_copy_str(j->a.uid, sizeof(j->a.uid), refs[i].uid);
        extender_copy_str(j->a.namespace, sizeof(j->a.namespace), refs[i].namespace);
        extender_copy_str(j->a.name, sizeof(j->a.name), refs[i].name);
        extender_copy_str(j->touch, sizeof(j->touch), rv && *rv ? rv : "changed");
        if (*tail)
            (*tail)->next = j;
        else
            *head = j;
        *tail = j;
    }
    common_free(refs);
}

static void pg_upsert(struct extender_server *x, const json_t *obj)
{
    struct gang_podgroup *pg = common_calloc(1, sizeof(*pg)); /* large: keep off the stack */
    struct common_error e = {0};
    const char *ns, *name;
    struct gang_info before, after;
    int known;
    struct job *head = NULL, *tail = NULL;

    pg_meta(obj, &ns, &name);
    if (!pg)
        return;
    if (gang_podgroup_from_json(obj, pg, &e) != COMMON_OK) {
        common_log(COMMON_LOG_WARN, "extender: PodGroup ignored", "podgroup", name ? name : "",
                   "namespace", ns ? ns : "", "error", e.msg, NULL);
        common_free(pg);
        return;
    }
    pthread_mutex_lock(&x->mu);
    known = gang_info(x->gs, ns, name, &before, NULL) == COMMON_OK;
    if (gang_podgroup_upsert(x->gs, pg, &e) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: PodGroup not in the books", "podgroup",
                   name ? name : "", "error", e.msg, NULL);
    else if (known && gang_info(x->gs, ns, name, &after, NULL) == COMMON_OK &&
             after.podgroup_unblocks != before.podgroup_unblocks)
        touch_jobs(
            x, ns, name,
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion")),
            &head, &tail);
    extender_mark_dirty(x, ns, name);
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    extender_queue_push(x, head, tail);
    common_free(pg);
}

static void on_pg_add(void *ctx, const void *item)
{
    pg_upsert(ctx, item);
}

static void on_pg_update(void *ctx, const void *old_item, const void *new_item)
{
    (void)old_item;
    pg_upsert(ctx, new_item);
}

static void on_pg_delete(void *ctx, const void *old_item)
{
    struct extender_server *x = ctx;
    const char *ns, *name;

    pg_meta(old_item, &ns, &name);
    if (!ns || !name)
        return;
    pthread_mutex_lock(&x->mu);
    gang_podgroup_delete(x->gs, ns, name);
    extender_mark_dirty(x, ns, name);
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

void extender_server_feed_node(struct extender_server *x, const struct common_node *n)
{
    node_upsert(x, n);
}

void extender_server_feed_pod(struct extender_server *x, const struct common_pod *p)
{
    pod_upsert(x, p);
}

void extender_server_feed_podgroup(struct extender_server *x, const json_t *obj)
{
    pg_upsert(x, obj);
}

/* ---- Kueue and KAI Topology objects (spec.levels[].nodeLabel) ---- */

static void on_topo_upsert(void *ctx, const void *item)
{
    struct extender_server *x = ctx;
    const json_t *obj = item;
    const char *name =
        json_string_value(json_object_get(json_object_get((json_t *)obj, "metadata"), "name"));
    const json_t *lv = json_object_get(json_object_get((json_t *)obj, "spec"), "levels"), *l;
    const char *levels[TOPO_MAX_LEVELS + 1];
    size_t i, n = 0;
    struct common_error e;
    enum common_rc rc;

    if (!name)
        return;
    json_array_foreach(lv, i, l)
    {
        if (n <= TOPO_MAX_LEVELS)
            levels[n++] = json_string_value(json_object_get(l, "nodeLabel"));
    }
    pthread_mutex_lock(&x->mu);
    rc = gang_topology_set(x->gs, name, levels, n, &e);
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    if (rc != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: Topology object not used", "topology", name, "error",
                   e.msg, NULL);
}

static void on_topo_update(void *ctx, const void *old_item, const void *new_item)
{
    (void)old_item;
    on_topo_upsert(ctx, new_item);
}

static void on_topo_delete(void *ctx, const void *old_item)
{
    struct extender_server *x = ctx;
    const char *name =
        json_string_value(json_object_get(json_object_get((json_t *)old_item, "metadata"), "name"));

    if (!name)
        return;
    pthread_mutex_lock(&x->mu);
    gang_topology_delete(x->gs, name);
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

/* Topology objects read as level sources (spec.levels[].nodeLabel in both), each watched when
 * its CRD is served: Kueue's and KAI's. */
static const struct {
    const char *group, *what;
    const char *versions[2]; /* newest first; NULL ends */
} topo_sources[2] = {
    {"kueue.x-k8s.io", "kueue-topologies", {"v1beta2", "v1beta1"}},
    {"kai.scheduler", "kai-topologies", {"v1alpha1", NULL}},
};

/* the served version of topo_sources[k] with Topology objects, NULL when none */
static const char *topology_version(struct extender_server *x, size_t k)
{
    for (size_t i = 0; i < 2 && topo_sources[k].versions[i]; i++) {
        char path[128];
        struct common_buf resp;
        struct common_error e;
        long status = 0;
        int found;
        snprintf(path, sizeof(path), "/apis/%s/%s", topo_sources[k].group,
                 topo_sources[k].versions[i]);
        common_buf_init(&resp, (size_t)4 << 20);
        found = common_kube_request(x->kube, "GET", path, NULL, NULL, 0, NULL, &resp, &status,
                                    &e) == COMMON_OK &&
                status == 200 && resp.data && strstr(resp.data, "\"topologies\"") != NULL;
        common_buf_free(&resp);
        if (found)
            return topo_sources[k].versions[i];
    }
    return NULL;
}

/* the node, pod and PodGroup watches feeding the books (not started) */
enum common_rc extender_informers_create(struct extender_server *x, struct common_error *err)
{
    struct common_informer_handlers hn, hp, hg;
    enum common_rc rc;

    hn = (struct common_informer_handlers){on_node_add, on_node_update, on_node_delete, x};
    hp = (struct common_informer_handlers){on_pod_add, on_pod_update, on_pod_delete, x};
    hg = (struct common_informer_handlers){on_pg_add, on_pg_update, on_pg_delete, x};
    common_informer_json_ops(&x->pg_ops, "podgroups", &common_kube_podgroups);
    rc = common_informer_create(x->kube, &common_informer_nodes, &hn, NULL, &x->nodes_inf, err);
    if (rc == COMMON_OK)
        rc = common_informer_create(x->kube, &common_informer_pods, &hp, NULL, &x->pods_inf, err);
    if (rc == COMMON_OK)
        rc = common_informer_create(x->kube, &x->pg_ops, &hg, NULL, &x->pg_inf, err);
    return rc;
}

/* watch the Kueue and KAI Topology objects whose CRD is served (started at once) */
enum common_rc extender_topology_watch(struct extender_server *x, struct common_error *err)
{
    for (size_t k = 0; k < 2; k++) {
        /* Kueue and KAI Topology objects, watched when their CRD is served (not required) */
        const char *v = topology_version(x, k);
        struct common_informer_handlers ht = {on_topo_upsert, on_topo_update, on_topo_delete, x};
        if (!v)
            continue;
        x->topo_res[k] = (struct common_kube_resource){topo_sources[k].group, v, "topologies", 0};
        common_informer_json_ops(&x->topo_ops[k], topo_sources[k].what, &x->topo_res[k]);
        if (common_informer_create(x->kube, &x->topo_ops[k], &ht, NULL, &x->topo_inf[k], err) ||
            common_informer_start(x->topo_inf[k], err))
            return err ? err->code : COMMON_ENOMEM;
        common_log(COMMON_LOG_INFO, "extender: watching Topology objects", "group",
                   topo_sources[k].group, "version", v, NULL);
    }
    return COMMON_OK;
}
