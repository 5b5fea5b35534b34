/*
 * extender/server.c - the scheduler extender's glue around the gang core (see server.h).
 *
 * Locks: x->mu guards the gang core, the held-request table, the dirty sets and the timer's
 * flags; x->qmu guards the binder queue. Never both at once except mu then nothing: the queue
 * is filled after mu is dropped. Status and Event bookkeeping (pgrecs) belongs to the timer
 * thread alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/informer.h"
#include "common/log.h"
#include "extender/answer.h"
#include "extender/codec.h"
#include "extender/server.h"
#include "topology/topology.h"
#include "gang/gang.h"

#define JSON_CT "application/json"
#define ARENA_FACTOR 4
#define DEFAULT_MAX_BODY ((size_t)64 << 20)
#define STATUS_PERIOD_MS 2000
#define NODE_RETRY_MS 5000
#define KEY_MAX 320

/* Held requests: common_httpd_hold in the handler (the connection is suspended once it
 * returns), common_httpd_release from a binder or the timer, exactly once. */
static struct common_httpd_hold *xhold_take(const struct common_httpd_request *req,
                                            struct common_httpd_response *resp)
{
    return common_httpd_hold(req, resp);
}

static void xhold_release(struct common_httpd_hold *h, int status, const char *body, size_t len)
{
    (void)common_httpd_release(h, status, JSON_CT, body, len);
}

struct held {
    char uid[64];
    struct common_httpd_hold *h;
};

struct job {
    struct job *next;
    struct gang_answer a;
    /* a touch instead of an answer: annotate pod a.namespace/a.name (uid a.uid) with
     * EXTENDER_PODGROUP_ANNOTATION = touch, so kube-scheduler requeues it */
    char touch[64];
};

struct node_todo {
    char name[254];
    int64_t not_before;
};

/* what the timer last wrote for one PodGroup */
struct pgrec {
    char key[KEY_MAX];
    int written;
    char phase[16];
    int32_t running, succeeded, failed;
    char occupied_by[320];
    int has_start;
    int64_t start;
    char reason[2 * GANG_REASON_MAX];
    int gone;
};

enum verb { V_FILTER, V_PRIORITIZE, V_BIND, V_PREEMPT, V_COUNT };
static const char *const verb_names[V_COUNT] = {"filter", "prioritize", "bind", "preempt"};

struct extender_server {
    struct extender_server_opts o;
    struct common_kube *kube;
    struct gang_state *gs;
    struct extender_limits lim;
    size_t arena_max;

    struct common_informer *nodes_inf, *pods_inf, *pg_inf;
    struct common_informer_ops pg_ops;
    /* Kueue Topology objects as level sources (docs/topology.md), when the CRD is served */
    struct common_informer *topo_inf[2]; /* per topo_sources entry, NULL when not served */
    struct common_informer_ops topo_ops[2];
    struct common_kube_resource topo_res[2];

    pthread_mutex_t mu;
    pthread_cond_t cv; /* timer wakeup (CLOCK_MONOTONIC) */
    int tick_req, stopping, started, stopped;
    struct held *holds;
    size_t n_holds, cap_holds;
    char **dirty; /* gang keys "ns/name" */
    size_t n_dirty, cap_dirty;
    struct node_todo *todo;
    size_t n_todo, cap_todo;
    struct extender_server_stats st;

    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    struct job *qhead, *qtail;
    int qstop;

    pthread_t timer;
    pthread_t *binders;
    unsigned n_binders;

    /* timer thread only */
    struct pgrec *recs;
    size_t n_recs, cap_recs;
    int64_t last_metrics;

    struct common_metric *m_requests, *m_duration, *m_bindings, *m_held, *m_gangs, *m_cache;
    struct common_metric *m_topo_waiting, *m_topo_placed; /* topology (docs/topology.md) */
};

static const double duration_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                          0.01,   0.025,   0.05,   0.1,   0.25,   1};

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void copy_str(char *dst, size_t size, const char *src)
{
    size_t n = src ? strlen(src) : 0;

    if (n >= size)
        n = size - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

static void count(struct extender_server *x, enum verb v, const char *result, double t0)
{
    const char *lv[] = {verb_names[v], result};
    const char *dv[] = {verb_names[v]};

    common_metric_add(x->m_requests, lv, 1);
    common_metric_observe(x->m_duration, dv, mono_s() - t0);
}

/* ------------------------------------------------------------ dirty sets (x->mu held) -- */

static void mark_dirty(struct extender_server *x, const char *ns, const char *name)
{
    char key[KEY_MAX];

    if (!ns || !name || !*name)
        return;
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    for (size_t i = 0; i < x->n_dirty; i++)
        if (strcmp(x->dirty[i], key) == 0)
            return;
    if (x->n_dirty == x->cap_dirty) {
        size_t nc = x->cap_dirty ? x->cap_dirty * 2 : 16;
        char **nd = common_realloc(x->dirty, nc * sizeof(*nd));
        if (!nd)
            return;
        x->dirty = nd;
        x->cap_dirty = nc;
    }
    if ((x->dirty[x->n_dirty] = common_strdup(key)))
        x->n_dirty++;
}

static const char *pod_group_of(const struct common_pod *p)
{
    for (uint32_t i = 0; i < p->n_labels; i++)
        if (strcmp(p->labels[i].key, GANG_POD_GROUP_LABEL) == 0)
            return p->labels[i].value;
    return NULL;
}

static void node_todo_add(struct extender_server *x, const char *name, int64_t not_before)
{
    for (size_t i = 0; i < x->n_todo; i++)
        if (strcmp(x->todo[i].name, name) == 0)
            return;
    if (x->n_todo == x->cap_todo) {
        size_t nc = x->cap_todo ? x->cap_todo * 2 : 16;
        struct node_todo *nt = common_realloc(x->todo, nc * sizeof(*nt));
        if (!nt)
            return;
        x->todo = nt;
        x->cap_todo = nc;
    }
    copy_str(x->todo[x->n_todo].name, sizeof(x->todo[0].name), name);
    x->todo[x->n_todo].not_before = not_before;
    x->n_todo++;
}

/* ------------------------------------------------------------- held requests (mu held) -- */

static int holds_add(struct extender_server *x, const char *uid, struct common_httpd_hold *h)
{
    if (x->n_holds == x->cap_holds) {
        size_t nc = x->cap_holds ? x->cap_holds * 2 : 64;
        struct held *nh = common_realloc(x->holds, nc * sizeof(*nh));
        if (!nh)
            return -1;
        x->holds = nh;
        x->cap_holds = nc;
    }
    copy_str(x->holds[x->n_holds].uid, sizeof(x->holds[0].uid), uid);
    x->holds[x->n_holds].h = h;
    x->n_holds++;
    x->st.held_now = x->n_holds;
    common_metric_set(x->m_held, NULL, (double)x->n_holds);
    return 0;
}

static long holds_find(struct extender_server *x, const char *uid)
{
    for (size_t i = 0; i < x->n_holds; i++)
        if (strcmp(x->holds[i].uid, uid) == 0)
            return (long)i;
    return -1;
}

static struct common_httpd_hold *holds_take(struct extender_server *x, const char *uid)
{
    long i = holds_find(x, uid);
    struct common_httpd_hold *h;

    if (i < 0)
        return NULL;
    h = x->holds[i].h;
    x->holds[i] = x->holds[x->n_holds - 1];
    x->n_holds--;
    x->st.held_now = x->n_holds;
    common_metric_set(x->m_held, NULL, (double)x->n_holds);
    return h;
}

/* answer a held request with {"Error": msg} ("" = bound) */
static void answer_hold(struct common_httpd_hold *h, const char *msg)
{
    struct common_buf b;

    common_buf_init(&b, 1 << 16);
    if (extender_encode_bind_result(&b, msg, NULL) != COMMON_OK) {
        common_buf_reset(&b);
        (void)extender_encode_bind_result(&b, "extender: cannot encode the answer", NULL);
    }
    xhold_release(h, 200, b.data ? b.data : "", b.len);
    common_buf_free(&b);
}

/* --------------------------------------------------------------------- binder queue -- */

static void queue_push(struct extender_server *x, struct job *head, struct job *tail)
{
    if (!head)
        return;
    pthread_mutex_lock(&x->qmu);
    if (x->qtail)
        x->qtail->next = head;
    else
        x->qhead = head;
    x->qtail = tail;
    pthread_cond_broadcast(&x->qcv);
    pthread_mutex_unlock(&x->qmu);
}

/* copy answers into a job list (x->mu held: the answers die at the next core call) */
static void jobs_from_answers(const struct gang_answer *a, size_t n, struct job **head,
                              struct job **tail)
{
    for (size_t i = 0; i < n; i++) {
        struct job *j = common_calloc(1, sizeof(*j));
        if (!j) {
            common_log(COMMON_LOG_ERROR, "extender: no memory for a bind answer", "pod", a[i].name,
                       NULL);
            continue;
        }
        j->a = a[i];
        if (*tail)
            (*tail)->next = j;
        else
            *head = j;
        *tail = j;
    }
}

static enum common_rc create_binding(struct extender_server *x, const struct gang_answer *a,
                                     struct common_error *err)
{
    struct common_kube_write_opts wo = {0};
    json_t *obj;
    enum common_rc rc;

    obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind",
                    "Binding", "metadata", "name", a->name, "namespace", a->namespace, "uid",
                    a->uid, "target", "apiVersion", "v1", "kind", "Node", "name", a->node);
    if (!obj)
        return common_error_set(err, COMMON_ENOMEM, "no memory for a Binding");
    wo.subresource = "binding";
    rc = common_kube_create(x->kube, &common_kube_pods, a->namespace, obj, &wo, NULL, err);
    json_decref(obj);
    if (rc == COMMON_EEXISTS ||
        (rc == COMMON_ECONFLICT && err && strstr(err->msg, "already assigned")))
        rc = COMMON_OK; /* already bound: what we wanted (C29) */
    return rc;
}

/*
 * touch_pod - annotate a gang member that waits in kube-scheduler's queue after its PodGroup
 * changed. kube-scheduler 1.36 parks a pod the extender rejected in its unschedulable pool
 * until a Pod or Node event (the Extender entry of UnschedulablePlugins is registered for every
 * Pod and Node event, pkg/scheduler/framework/runtime/framework.go), and a PodGroup update is
 * neither; an update of the pod itself is (PriorityQueue.Update: a Pod/Update event, so the pod
 * goes to the backoff or active queue at once). The patch carries the uid as a precondition, so
 * a pod deleted and recreated under the same name is left alone.
 */
static void touch_pod(struct extender_server *x, const struct job *j)
{
    struct common_error e = {0};
    json_t *patch = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "uid", j->a.uid, "annotations",
                              EXTENDER_PODGROUP_ANNOTATION, j->touch);
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    enum common_rc rc =
        body ? common_kube_patch(x->kube, &common_kube_pods, j->a.namespace, j->a.name,
                                 COMMON_KUBE_MERGE_PATCH, body, NULL, NULL, &e)
             : common_error_set(&e, COMMON_ENOMEM, "no memory for a pod patch");

    json_decref(patch);
    free(body);
    pthread_mutex_lock(&x->mu);
    if (rc == COMMON_OK)
        x->st.pod_touches++;
    pthread_mutex_unlock(&x->mu);
    if (rc != COMMON_OK && rc != COMMON_ENOTFOUND && rc != COMMON_ECONFLICT)
        common_log(COMMON_LOG_WARN, "extender: waiting gang pod not requeued", "pod", j->a.name,
                   "namespace", j->a.namespace, "error", e.msg, NULL);
}

static void carry_out(struct extender_server *x, struct job *j)
{
    struct common_error e = {0};
    char msg[COMMON_ERROR_MSG_MAX + 64];
    struct common_httpd_hold *h;

    msg[0] = '\0';
    if (j->touch[0]) {
        touch_pod(x, j);
        return;
    }
    if (j->a.bind) {
        enum common_rc rc = create_binding(x, &j->a, &e);
        const char *res = rc == COMMON_OK ? "bound" : "failed";
        const char *lv[] = {res};

        common_metric_add(x->m_bindings, lv, 1);
        if (rc != COMMON_OK) {
            snprintf(msg, sizeof(msg), "binding %s/%s to %s: %s", j->a.namespace, j->a.name,
                     j->a.node, e.msg);
            common_log(COMMON_LOG_WARN, "extender: binding failed", "pod", j->a.name, "namespace",
                       j->a.namespace, "node", j->a.node, "error", e.msg, NULL);
        }
        pthread_mutex_lock(&x->mu);
        if (rc != COMMON_OK) {
            gang_bind_failed(x->gs, j->a.uid);
            x->st.bindings_failed++;
        } else {
            x->st.bindings_ok++;
        }
        x->tick_req = 1;
        pthread_cond_signal(&x->cv);
        h = holds_take(x, j->a.uid);
        pthread_mutex_unlock(&x->mu);
    } else {
        copy_str(msg, sizeof(msg), j->a.reason[0] ? j->a.reason : "gang attempt ended");
        pthread_mutex_lock(&x->mu);
        h = holds_take(x, j->a.uid);
        pthread_mutex_unlock(&x->mu);
    }
    if (h)
        answer_hold(h, msg);
}

static void *binder_main(void *arg)
{
    struct extender_server *x = arg;

    for (;;) {
        struct job *j;

        pthread_mutex_lock(&x->qmu);
        while (!x->qhead && !x->qstop)
            pthread_cond_wait(&x->qcv, &x->qmu);
        j = x->qhead;
        if (!j) {
            pthread_mutex_unlock(&x->qmu);
            break;
        }
        x->qhead = j->next;
        if (!x->qhead)
            x->qtail = NULL;
        pthread_mutex_unlock(&x->qmu);
        carry_out(x, j);
        common_free(j);
    }
    return NULL;
}

/* ----------------------------------------------------------------------- informers -- */

static int64_t node_gang_want(const struct common_node *n)
{
    return n->capacity.pods > 0 ? n->capacity.pods : 110;
}

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
    int64_t want = node_gang_want(n);
    int64_t vc = res_value(&n->capacity, EXTENDER_GANG_RESOURCE, &fc);
    int64_t va = res_value(&n->allocatable, EXTENDER_GANG_RESOURCE, &fa);

    pthread_mutex_lock(&x->mu);
    if (gang_node_upsert(x->gs, n, &e) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: node not in the books", "node", n->name, "error",
                   e.msg, NULL);
    if (x->o.advertise_resource > 0 && (!fc || !fa || vc != want || va != want))
        node_todo_add(x, n->name, 0);
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
    const char *pg = pod_group_of(p);

    pthread_mutex_lock(&x->mu);
    if (gang_pod_upsert(x->gs, p, &e) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: pod not in the books", "pod", p->name, "namespace",
                   p->namespace, "error", e.msg, NULL);
    if (pg) {
        mark_dirty(x, p->namespace, pg);
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
    const char *pg = pod_group_of(p);

    pthread_mutex_lock(&x->mu);
    gang_pod_delete(x->gs, p->uid);
    if (pg)
        mark_dirty(x, p->namespace, pg);
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
        copy_str(j->a.uid, sizeof(j->a.uid), refs[i].uid);
        copy_str(j->a.namespace, sizeof(j->a.namespace), refs[i].namespace);
        copy_str(j->a.name, sizeof(j->a.name), refs[i].name);
        copy_str(j->touch, sizeof(j->touch), rv && *rv ? rv : "changed");
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
    mark_dirty(x, ns, name);
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    queue_push(x, head, tail);
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
    mark_dirty(x, ns, name);
    x->tick_req = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
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

/* --------------------------------------------------------------------------- timer -- */

struct pg_view {
    char key[KEY_MAX];
    int found;
    struct gang_status s;
    char phase[16];
    char reason[2 * GANG_REASON_MAX]; /* the gang's reason, then its timeout note */
    char level[GANG_REASON_MAX];      /* the topology level of the gang's domain, "" when none */
};

static struct pgrec *rec_get(struct extender_server *x, const char *key)
{
    for (size_t i = 0; i < x->n_recs; i++)
        if (strcmp(x->recs[i].key, key) == 0)
            return &x->recs[i];
    if (x->n_recs == x->cap_recs) {
        size_t nc = x->cap_recs ? x->cap_recs * 2 : 16;
        struct pgrec *nr = common_realloc(x->recs, nc * sizeof(*nr));
        if (!nr)
            return NULL;
        x->recs = nr;
        x->cap_recs = nc;
    }
    memset(&x->recs[x->n_recs], 0, sizeof(x->recs[0]));
    copy_str(x->recs[x->n_recs].key, KEY_MAX, key);
    return &x->recs[x->n_recs++];
}

static void split_key(const char *key, char *ns, size_t nsz, char *name, size_t namesz)
{
    const char *slash = strchr(key, '/');
    size_t n = slash ? (size_t)(slash - key) : 0;

    if (n >= nsz)
        n = nsz - 1;
    memcpy(ns, key, n);
    ns[n] = '\0';
    copy_str(name, namesz, slash ? slash + 1 : key);
}

static void format_time(int64_t mono_start, char *out, size_t size)
{
    struct timespec rt;
    struct tm tm;
    time_t t;

    clock_gettime(CLOCK_REALTIME, &rt);
    t = rt.tv_sec - (time_t)((mono_ms() - mono_start) / 1000);
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The PodGroup's uid and its controlling TrainJob (name, uid; "" when none) from the watch
 * cache, so that its Events name it fully (kubectl describe finds Events by uid). */
static void podgroup_refs(struct extender_server *x, const char *key, char *uid, size_t uidsz,
                          char *tj, size_t tjsz, char *tjuid, size_t tjuidsz)
{
    struct common_pmap_snap *snap = x->pg_inf ? common_informer_snapshot(x->pg_inf) : NULL;
    const json_t *pg = snap ? common_pmap_snap_get(snap, key) : NULL;
    const json_t *meta = json_object_get(pg, "metadata");
    size_t i;
    json_t *o;

    uid[0] = tj[0] = tjuid[0] = '\0';
    if (json_is_string(json_object_get(meta, "uid")))
        copy_str(uid, uidsz, json_string_value(json_object_get(meta, "uid")));
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, o)
    {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        const char *api = json_string_value(json_object_get(o, "apiVersion"));
        if (json_is_true(json_object_get(o, "controller")) && kind && api &&
            strcmp(kind, "TrainJob") == 0 && strncmp(api, "trainer.kubeflow.org/", 21) == 0 &&
            json_is_string(json_object_get(o, "name"))) {
            copy_str(tj, tjsz, json_string_value(json_object_get(o, "name")));
            if (json_is_string(json_object_get(o, "uid")))
                copy_str(tjuid, tjuidsz, json_string_value(json_object_get(o, "uid")));
            break;
        }
    }
    if (snap)
        common_pmap_snap_release(snap);
}

/* A gang's new waiting or released reason as an Event regarding its PodGroup (uid included),
 * and the same regarding the TrainJob that controls it, so `kubectl describe podgroup` and
 * `kubectl describe trainjob` both show why the gang waits. */
static void gang_event(struct extender_server *x, const struct pg_view *v, const char *ns,
                       const char *name)
{
    char uid[128], tj[254], tjuid[128], note[COMMON_EVENTS_NOTE_MAX];
    struct common_event_ref ref = {"scheduling.x-k8s.io/v1alpha1", "PodGroup", ns, name, uid};
    struct common_event_ref tref = {"trainer.kubeflow.org/v1alpha1", "TrainJob", ns, tj, tjuid};
    int released = strncmp(v->reason, "released", 8) == 0;
    enum common_event_type type = released ? COMMON_EVENT_NORMAL : COMMON_EVENT_WARNING;
    const char *reason = released ? "GangReleased" : "GangWaiting";
    struct common_error e = {0};

    podgroup_refs(x, v->key, uid, sizeof(uid), tj, sizeof(tj), tjuid, sizeof(tjuid));
    if (common_events_record(x->o.events, &ref, type, reason, "Scheduling", v->reason, &e) !=
        COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: Event not recorded", "podgroup", v->key, "error",
                   e.msg, NULL);
    if (!tj[0])
        return;
    snprintf(note, sizeof(note), "PodGroup %s: %s", name, v->reason);
    if (common_events_record(x->o.events, &tref, type, reason, "Scheduling", note, &e) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: Event not recorded", "trainjob", tj, "error", e.msg,
                   NULL);
}

static void write_status(struct extender_server *x, const struct pg_view *v)
{
    struct pgrec *r = rec_get(x, v->key);
    char ns[64], name[254], start[40];
    struct common_error e = {0};
    struct common_kube_write_opts wo = {0};
    json_t *patch, *status;
    char *body;

    if (!r)
        return;
    if (!v->found) {
        r->gone = 1;
        r->written = 0;
        r->reason[0] = '\0';
        return;
    }
    r->gone = 0;
    split_key(v->key, ns, sizeof(ns), name, sizeof(name));
    if (x->o.write_podgroup_status > 0 &&
        (!r->written || strcmp(r->phase, v->phase) != 0 || r->running != v->s.running ||
         r->succeeded != v->s.succeeded || r->failed != v->s.failed ||
         strcmp(r->occupied_by, v->s.occupied_by) != 0 || r->has_start != v->s.has_schedule_start ||
         (v->s.has_schedule_start && r->start != v->s.schedule_start))) {
        status = json_pack("{s:s, s:i, s:i, s:i}", "phase", v->phase, "running", (int)v->s.running,
                           "succeeded", (int)v->s.succeeded, "failed", (int)v->s.failed);
        if (status && v->s.occupied_by[0])
            json_object_set_new(status, "occupiedBy", json_string(v->s.occupied_by));
        if (status && v->s.has_schedule_start) {
            format_time(v->s.schedule_start, start, sizeof(start));
            json_object_set_new(status, "scheduleStartTime", json_string(start));
        }
        patch = status ? json_pack("{s:o}", "status", status) : NULL;
        body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
        json_decref(patch);
        wo.subresource = "status";
        if (body && common_kube_patch(x->kube, &common_kube_podgroups, ns, name,
                                      COMMON_KUBE_MERGE_PATCH, body, &wo, NULL, &e) == COMMON_OK) {
            r->written = 1;
            copy_str(r->phase, sizeof(r->phase), v->phase);
            r->running = v->s.running;
            r->succeeded = v->s.succeeded;
            r->failed = v->s.failed;
            copy_str(r->occupied_by, sizeof(r->occupied_by), v->s.occupied_by);
            r->has_start = v->s.has_schedule_start;
            r->start = v->s.schedule_start;
            pthread_mutex_lock(&x->mu);
            x->st.status_patches++;
            pthread_mutex_unlock(&x->mu);
        } else if (body) {
            common_log(COMMON_LOG_WARN, "extender: PodGroup status not written", "podgroup", v->key,
                       "error", e.msg, NULL);
        }
        free(body);
    }
    if (x->o.events && v->reason[0] && strcmp(r->reason, v->reason) != 0) {
        if (strncmp(v->reason, "released", 8) == 0 && v->level[0]) {
            const char *lv[] = {v->level};
            common_metric_add(x->m_topo_placed, lv, 1);
        }
        gang_event(x, v, ns, name);
    }
    copy_str(r->reason, sizeof(r->reason), v->reason);
}

static void gang_metrics(struct extender_server *x, int64_t now)
{
    double waiting = 0, holding = 0, admitted = 0, backoff = 0, topo_waiting = 0;
    struct common_informer_stats is;
    static const char *const kinds[] = {"nodes", "pods", "podgroups"};
    struct common_informer *infs[3];

    pthread_mutex_lock(&x->mu);
    for (size_t i = 0; i < x->n_recs; i++) {
        struct gang_info gi;
        char ns[64], name[254];

        if (x->recs[i].gone)
            continue;
        split_key(x->recs[i].key, ns, sizeof(ns), name, sizeof(name));
        if (gang_info(x->gs, ns, name, &gi, NULL) != COMMON_OK)
            continue;
        if (!gi.active && !gi.admitted &&
            (gi.topology_error[0] || strstr(gi.reason, "topology") != NULL))
            topo_waiting++;
        if (gi.active)
            holding++;
        else if (gi.backoff_until > now)
            backoff++;
        else if (gi.admitted)
            admitted++;
        else
            waiting++;
    }
    pthread_mutex_unlock(&x->mu);
    {
        const char *lv[1];
        lv[0] = "waiting";
        common_metric_set(x->m_gangs, lv, waiting);
        lv[0] = "holding";
        common_metric_set(x->m_gangs, lv, holding);
        lv[0] = "admitted";
        common_metric_set(x->m_gangs, lv, admitted);
        lv[0] = "backoff";
        common_metric_set(x->m_gangs, lv, backoff);
        common_metric_set(x->m_topo_waiting, NULL, topo_waiting);
    }
    infs[0] = x->nodes_inf;
    infs[1] = x->pods_inf;
    infs[2] = x->pg_inf;
    for (int i = 0; i < 3; i++) {
        const char *lv[] = {kinds[i]};
        common_informer_stats(infs[i], &is);
        common_metric_set(x->m_cache, lv, (double)is.size);
    }
}

static void patch_node(struct extender_server *x, const struct node_todo *t)
{
    struct common_error e = {0};
    struct common_kube_write_opts wo = {0};
    struct common_pmap_snap *snap = common_informer_snapshot(x->nodes_inf);
    const struct common_node *n = common_pmap_snap_get(snap, t->name);
    char body[512];
    int64_t want;
    enum common_rc rc;

    if (!n) {
        common_pmap_snap_release(snap);
        return;
    }
    want = node_gang_want(n);
    common_pmap_snap_release(snap);
    snprintf(body, sizeof(body),
             "{\"status\":{\"capacity\":{\"" EXTENDER_GANG_RESOURCE "\":\"%" PRId64
             "\"},\"allocatable\":{\"" EXTENDER_GANG_RESOURCE "\":\"%" PRId64 "\"}}}",
             want, want);
    wo.subresource = "status";
    rc = common_kube_patch(x->kube, &common_kube_nodes, NULL, t->name, COMMON_KUBE_MERGE_PATCH,
                           body, &wo, NULL, &e);
    pthread_mutex_lock(&x->mu);
    if (rc == COMMON_OK)
        x->st.node_patches++;
    else if (rc != COMMON_ENOTFOUND)
        node_todo_add(x, t->name, mono_ms() + NODE_RETRY_MS);
    pthread_mutex_unlock(&x->mu);
    if (rc != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: node resource not advertised", "node", t->name,
                   "error", e.msg, NULL);
}

static void *timer_main(void *arg)
{
    struct extender_server *x = arg;

    pthread_mutex_lock(&x->mu);
    while (!x->stopping) {
        int64_t now = mono_ms(), next;
        struct job *head = NULL, *tail = NULL;
        struct pg_view *views = NULL;
        size_t n_views = 0;
        struct node_todo *todo = NULL;
        size_t n_todo = 0;

        if (x->tick_req || now >= gang_next_deadline(x->gs)) {
            const struct gang_answer *ans = NULL;
            size_t n = 0;
            struct common_error e = {0};

            x->tick_req = 0;
            if (gang_tick(x->gs, now, &ans, &n, &e) == COMMON_OK && n) {
                jobs_from_answers(ans, n, &head, &tail);
                /* a gang that failed or released here: its status and Event follow now */
                for (size_t i = 0; i < n; i++) {
                    const char *slash = strchr(ans[i].gang, '/');
                    if (slash)
                        mark_dirty(x, ans[i].namespace, slash + 1);
                }
            }
        }
        if (x->n_dirty) {
            views = common_calloc(x->n_dirty, sizeof(*views));
            for (size_t i = 0; i < x->n_dirty; i++) {
                if (views) {
                    struct pg_view *v = &views[n_views++];
                    struct gang_info gi;
                    char ns[64], name[254];

                    copy_str(v->key, sizeof(v->key), x->dirty[i]);
                    split_key(v->key, ns, sizeof(ns), name, sizeof(name));
                    v->found = gang_podgroup_status(x->gs, ns, name, &v->s, NULL) == COMMON_OK &&
                               gang_info(x->gs, ns, name, &gi, NULL) == COMMON_OK &&
                               gi.has_podgroup;
                    if (v->found) {
                        copy_str(v->phase, sizeof(v->phase), v->s.phase);
                        snprintf(v->reason, sizeof(v->reason), "%s%s%s", gi.reason,
                                 gi.reason[0] && gi.timeout_note[0] ? "; " : "", gi.timeout_note);
                        copy_str(v->level, sizeof(v->level), gi.domain_level);
                    }
                }
                common_free(x->dirty[i]);
            }
            x->n_dirty = 0;
        }
        if (x->n_todo) {
            size_t keep = 0;
            todo = common_calloc(x->n_todo, sizeof(*todo));
            for (size_t i = 0; i < x->n_todo; i++) {
                if (todo && x->todo[i].not_before <= now)
                    todo[n_todo++] = x->todo[i];
                else
                    x->todo[keep++] = x->todo[i];
            }
            x->n_todo = keep;
        }
        pthread_mutex_unlock(&x->mu);

        queue_push(x, head, tail);
        for (size_t i = 0; i < n_todo; i++)
            patch_node(x, &todo[i]);
        for (size_t i = 0; i < n_views; i++)
            write_status(x, &views[i]);
        common_free(todo);
        common_free(views);
        if (now - x->last_metrics >= STATUS_PERIOD_MS) {
            x->last_metrics = now;
            gang_metrics(x, now);
        }

        pthread_mutex_lock(&x->mu);
        if (x->stopping)
            break;
        if (x->tick_req || x->n_dirty)
            continue;
        next = gang_next_deadline(x->gs);
        if (next > now + STATUS_PERIOD_MS)
            next = now + STATUS_PERIOD_MS;
        for (size_t i = 0; i < x->n_todo; i++)
            if (x->todo[i].not_before < next)
                next = x->todo[i].not_before;
        if (next > mono_ms()) {
            struct timespec ts;
            ts.tv_sec = (time_t)(next / 1000);
            ts.tv_nsec = (long)(next % 1000) * 1000000L;
            pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        }
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* -------------------------------------------------------------------------- verbs -- */

static struct common_arena *req_arena(struct extender_server *x)
{
    return common_arena_create(x->arena_max);
}

static void answer_json(struct common_httpd_response *resp, const struct common_buf *b)
{
    resp->status = 200;
    resp->content_type = JSON_CT;
    (void)common_buf_append(&resp->body, b->data ? b->data : "", b->len, NULL);
}

static void h_filter(void *ctx, const struct common_httpd_request *req,
                     struct common_httpd_response *resp)
{
    struct extender_server *x = ctx;
    double t0 = mono_s();
    struct common_arena *a = req_arena(x);
    struct common_error e = {0};
    struct extender_args *args = NULL;
    struct gang_node_verdict *gv;
    uint8_t *verdict;
    const char **reason;
    struct gang_filter_result res = {0};
    struct common_buf b;
    const char *result = "ok";
    const char *wait_msg = NULL;
    enum common_rc rc;

    __atomic_add_fetch(&x->st.filter, 1, __ATOMIC_RELAXED);
    common_buf_init(&b, resp->body.max);
    if (!a) {
        rc = common_error_set(&e, COMMON_ENOMEM, "no memory");
        goto fail;
    }
    rc = extender_decode_args(a, req->body, req->body_len, &x->lim, &args, &e);
    if (rc)
        goto fail;
    verdict = common_arena_alloc(a, args->n_nodes + 1);
    reason = common_arena_alloc(a, (args->n_nodes + 1) * sizeof(*reason));
    gv = common_arena_alloc(a, (args->n_nodes + 1) * sizeof(*gv));
    if (!verdict || !reason || !gv) {
        rc = common_error_set(&e, COMMON_ENOMEM, "no memory");
        goto fail;
    }
    memset(verdict, EXTENDER_PASS, args->n_nodes + 1);
    memset(reason, 0, (args->n_nodes + 1) * sizeof(*reason));
    if (args->pod_group[0]) {
        pthread_mutex_lock(&x->mu);
        rc =
            gang_filter(x->gs, args->pod, args->node_names, args->n_nodes, mono_ms(), gv, &res, &e);
        if (rc == COMMON_OK) {
            /* reasons live in the books: copy them before unlocking */
            if (extender_filter_answer(a, gv, args->n_nodes, &res, verdict, reason, &wait_msg))
                rc = common_error_set(&e, COMMON_ENOMEM, "no memory");
            if (res.answers_pending)
                x->tick_req = 1;
            mark_dirty(x, args->pod->namespace, args->pod_group);
            pthread_cond_signal(&x->cv);
        }
        pthread_mutex_unlock(&x->mu);
        if (rc)
            goto fail;
    }
    if (wait_msg) {
        /* an Error, not node lists: kube-scheduler retries it after its error backoff, where a
         * rejected pod would sleep until a cluster event (extender/answer.h) */
        result = "wait";
        if (extender_encode_filter_error(&b, wait_msg, &e) == COMMON_OK) {
            answer_json(resp, &b);
            goto out;
        }
        rc = e.code ? e.code : COMMON_ENOMEM;
        goto fail;
    }
    rc = extender_encode_filter_result(&b, args, verdict, reason, &e);
    if (rc)
        goto fail;
    answer_json(resp, &b);
    goto out;
fail:
    result = "error";
    common_buf_reset(&b);
    common_log(COMMON_LOG_WARN, "extender: filter failed", "error", e.msg, NULL);
    if (extender_encode_filter_error(&b, e.msg, NULL) == COMMON_OK)
        answer_json(resp, &b);
    else
        (void)common_httpd_respondf(resp, 500, "%s\n", e.msg);
out:
    common_buf_free(&b);
    common_arena_destroy(a);
    count(x, V_FILTER, result, t0);
}

static void h_prioritize(void *ctx, const struct common_httpd_request *req,
                         struct common_httpd_response *resp)
{
    struct extender_server *x = ctx;
    double t0 = mono_s();
    struct common_arena *a = req_arena(x);
    struct common_error e = {0};
    struct extender_args *args = NULL;
    int64_t *scores;
    struct common_buf b;
    enum common_rc rc;

    __atomic_add_fetch(&x->st.prioritize, 1, __ATOMIC_RELAXED);
    common_buf_init(&b, resp->body.max);
    if (!a) {
        rc = common_error_set(&e, COMMON_ENOMEM, "no memory");
        goto fail;
    }
    rc = extender_decode_args(a, req->body, req->body_len, &x->lim, &args, &e);
    if (rc)
        goto fail;
    scores = common_arena_alloc(a, (args->n_nodes + 1) * sizeof(*scores));
    if (!scores) {
        rc = common_error_set(&e, COMMON_ENOMEM, "no memory");
        goto fail;
    }
    memset(scores, 0, (args->n_nodes + 1) * sizeof(*scores));
    if (args->pod_group[0]) {
        pthread_mutex_lock(&x->mu);
        rc = gang_prioritize(x->gs, args->pod, args->node_names, args->n_nodes, scores, &e);
        pthread_mutex_unlock(&x->mu);
        if (rc)
            goto fail;
    }
    rc = extender_encode_priorities(&b, args, scores, &e);
    if (rc)
        goto fail;
    answer_json(resp, &b);
    common_buf_free(&b);
    common_arena_destroy(a);
    count(x, V_PRIORITIZE, "ok", t0);
    return;
fail:
    /* no Error field: any non-200 makes the scheduler ignore this extender's scores */
    common_log(COMMON_LOG_WARN, "extender: prioritize failed", "error", e.msg, NULL);
    (void)common_httpd_respondf(resp, rc == COMMON_EINVAL || rc == COMMON_ETOOBIG ? 400 : 500,
                                "%s\n", e.msg);
    common_buf_free(&b);
    common_arena_destroy(a);
    count(x, V_PRIORITIZE, "error", t0);
}

static void bind_answer(struct common_httpd_response *resp, const char *msg)
{
    struct common_buf b;

    common_buf_init(&b, 1 << 16);
    if (extender_encode_bind_result(&b, msg, NULL) == COMMON_OK)
        answer_json(resp, &b);
    else
        (void)common_httpd_respondf(resp, 500, "cannot encode the bind answer\n");
    common_buf_free(&b);
}

static void h_bind(void *ctx, const struct common_httpd_request *req,
                   struct common_httpd_response *resp)
{
    struct extender_server *x = ctx;
    double t0 = mono_s();
    struct common_arena *a = req_arena(x);
    struct common_error e = {0};
    struct extender_bind_args *args = NULL;
    struct gang_bind_result res = {0};
    struct job *head = NULL, *tail = NULL;
    struct common_httpd_hold *h = NULL;
    char reason[GANG_REASON_MAX + 64], pg_name[254];
    const char *result;
    enum common_rc rc;

    __atomic_add_fetch(&x->st.bind, 1, __ATOMIC_RELAXED);
    reason[0] = '\0';
    if (!a) {
        rc = common_error_set(&e, COMMON_ENOMEM, "no memory");
    } else {
        rc = extender_decode_bind_args(a, req->body, req->body_len, &x->lim, &args, &e);
    }
    if (rc) {
        bind_answer(resp, e.msg);
        common_arena_destroy(a);
        count(x, V_BIND, "error", t0);
        return;
    }
    {
        /* the gang key for status and Events: the pod's label, from the pod cache */
        struct common_pmap_snap *snap = common_informer_snapshot(x->pods_inf);
        char key[KEY_MAX];
        const struct common_pod *p;

        snprintf(key, sizeof(key), "%s/%s", args->pod_namespace, args->pod_name);
        p = common_pmap_snap_get(snap, key);
        copy_str(pg_name, sizeof(pg_name), p ? pod_group_of(p) : NULL);
        common_pmap_snap_release(snap);
    }
    pthread_mutex_lock(&x->mu);
    if (x->stopping || !x->started) {
        pthread_mutex_unlock(&x->mu);
        bind_answer(resp, "trainsched extender is not running");
        common_arena_destroy(a);
        count(x, V_BIND, "error", t0);
        return;
    }
    rc = gang_bind(x->gs, args->pod_namespace, args->pod_name, args->pod_uid, args->node, mono_ms(),
                   &res, &e);
    if (rc) {
        snprintf(reason, sizeof(reason), "extender: %s", e.msg);
        result = "error";
    } else if (res.action == GANG_BIND_REJECT) {
        copy_str(reason, sizeof(reason), res.reason && *res.reason ? res.reason : "rejected");
        result = "rejected";
        x->st.rejected++;
    } else {
        h = xhold_take(req, resp);
        if (!h || holds_add(x, args->pod_uid, h) != 0) {
            /* the core holds the pod; its answer (release or deadline) finds no request */
            copy_str(reason, sizeof(reason), "extender: cannot hold the bind request");
            result = "error";
            if (h) {
                xhold_release(h, 200, "{\"Error\":\"extender: no memory\"}", 31);
                h = NULL;
            }
        } else if (res.action == GANG_BIND_RELEASE) {
            result = "ok";
            x->st.released++;
            jobs_from_answers(res.binds, res.n_binds, &head, &tail);
        } else {
            result = "held";
            x->st.held++;
        }
        if (res.answers_pending)
            x->tick_req = 1;
    }
    if (pg_name[0])
        mark_dirty(x, args->pod_namespace, pg_name);
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);

    queue_push(x, head, tail);
    if (!h)
        bind_answer(resp, reason);
    common_arena_destroy(a);
    count(x, V_BIND, result, t0);
}

static void h_preempt(void *ctx, const struct common_httpd_request *req,
                      struct common_httpd_response *resp)
{
    struct extender_server *x = ctx;
    double t0 = mono_s();
    struct common_arena *a = req_arena(x);
    struct common_error e = {0};
    struct extender_preempt_args *args = NULL;
    struct extender_preempt_choice choice = {0};
    uint8_t *keep;
    struct common_buf b;
    enum common_rc rc;

    __atomic_add_fetch(&x->st.preempt, 1, __ATOMIC_RELAXED);
    common_buf_init(&b, resp->body.max);
    if (!a) {
        rc = common_error_set(&e, COMMON_ENOMEM, "no memory");
        goto fail;
    }
    rc = extender_decode_preempt_args(a, req->body, req->body_len, &x->lim, &args, &e);
    if (rc)
        goto fail;
    keep = common_arena_alloc(a, args->n_nodes + 1);
    if (!keep) {
        rc = common_error_set(&e, COMMON_ENOMEM, "no memory");
        goto fail;
    }
    memset(keep, 1, args->n_nodes + 1);
    if (args->n_nodes) {
        struct gang_preempt_node *pn = common_arena_alloc(a, args->n_nodes * sizeof(*pn));
        struct gang_preempt_choice *pc = common_arena_alloc(a, args->n_nodes * sizeof(*pc));
        struct gang_preempt_result pr = {0};
        const char *why = NULL;

        if (!pn || !pc) {
            rc = common_error_set(&e, COMMON_ENOMEM, "no memory");
            goto fail;
        }
        for (uint32_t i = 0; i < args->n_nodes; i++) {
            pn[i].node = args->nodes[i].node;
            pn[i].n_victims = args->nodes[i].n_pods;
            pn[i].uids = args->nodes[i].uids;
        }
        pthread_mutex_lock(&x->mu);
        rc = gang_preempt(x->gs, args->pod, pn, args->n_nodes, mono_ms(), pc, &pr, &e);
        if (rc == COMMON_OK) {
            for (uint32_t i = 0; i < args->n_nodes; i++)
                keep[i] = (uint8_t)(pc[i].keep != 0);
            if (!pr.n_kept && pr.reason && pr.reason[0])
                why = common_arena_strdup(a, pr.reason);
            mark_dirty(x, args->pod->namespace, args->pod_group);
        }
        pthread_mutex_unlock(&x->mu);
        if (rc)
            goto fail;
        if (why)
            common_log(COMMON_LOG_INFO, "extender: preemption vetoed", "pod", args->pod->name,
                       "namespace", args->pod->namespace, "reason", why, NULL);
    }
    choice.keep_node = keep;
    rc = extender_encode_preempt_result(&b, args, &choice, &e);
    if (rc)
        goto fail;
    answer_json(resp, &b);
    common_buf_free(&b);
    common_arena_destroy(a);
    count(x, V_PREEMPT, "ok", t0);
    return;
fail:
    common_log(COMMON_LOG_WARN, "extender: preempt failed", "error", e.msg, NULL);
    (void)common_httpd_respondf(resp, rc == COMMON_EINVAL || rc == COMMON_ETOOBIG ? 400 : 500,
                                "%s\n", e.msg);
    common_buf_free(&b);
    common_arena_destroy(a);
    count(x, V_PREEMPT, "error", t0);
}

/* ------------------------------------------------------------------------ lifecycle -- */

struct extender_server *extender_server_create(const struct extender_server_opts *opts,
                                               struct common_error *err)
{
    static const char *const ignored[] = {EXTENDER_GANG_RESOURCE};
    static const char *const req_labels[] = {"verb", "result", NULL};
    static const char *const verb_label[] = {"verb", NULL};
    static const char *const result_label[] = {"result", NULL};
    static const char *const state_label[] = {"state", NULL};
    static const char *const kind_label[] = {"kind", NULL};
    static const char *const level_label[] = {"level", NULL};
    struct common_informer_handlers hn, hp, hg;
    struct gang_config gc;
    struct extender_server *x;
    pthread_condattr_t ca;

    if (!opts || !opts->kube) {
        common_error_set(err, COMMON_EINVAL, "extender server: a Kubernetes client is required");
        return NULL;
    }
    if (opts->bind_http_timeout_ms < 0 || opts->default_schedule_timeout_s < 0 ||
        opts->backoff_initial_ms < 0 || opts->backoff_max_ms < 0) {
        common_error_set(err, COMMON_EINVAL, "extender server: negative time");
        return NULL;
    }
    x = common_calloc(1, sizeof(*x));
    if (!x) {
        common_error_set(err, COMMON_ENOMEM, "no memory");
        return NULL;
    }
    x->o = *opts;
    x->kube = opts->kube;
    if (!x->o.binders)
        x->o.binders = 4;
    if (!x->o.advertise_resource)
        x->o.advertise_resource = 1;
    if (!x->o.write_podgroup_status)
        x->o.write_podgroup_status = 1;
    x->lim.max_body = opts->max_body ? opts->max_body : DEFAULT_MAX_BODY;
    x->arena_max = x->lim.max_body * ARENA_FACTOR + ((size_t)1 << 20);
    pthread_mutex_init(&x->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&x->qmu, NULL);
    pthread_cond_init(&x->qcv, NULL);

    gang_config_default(&gc);
    gc.default_timeout_ms = opts->default_schedule_timeout_s * 1000;
    gc.bind_http_timeout_ms = opts->bind_http_timeout_ms;
    gc.backoff_initial_ms = opts->backoff_initial_ms;
    gc.backoff_max_ms = opts->backoff_max_ms;
    if (gc.backoff_initial_ms && !gc.backoff_max_ms)
        gc.backoff_max_ms = gc.backoff_initial_ms > 300000 ? gc.backoff_initial_ms : 300000;
    gc.ignored_resources = ignored;
    gc.n_ignored_resources = 1;
    if (gang_state_create(&gc, &x->gs, err) != COMMON_OK)
        goto fail;
    for (size_t i = 0; i < opts->n_topologies; i++) {
        struct topo_spec ts;
        if (topo_spec_parse(opts->topologies[i], &ts, err) != COMMON_OK ||
            gang_topology_set(x->gs, ts.name, ts.levels, ts.n_levels, err) != COMMON_OK)
            goto fail;
    }
    x->o.topologies = NULL; /* borrowed for create only */
    x->o.n_topologies = 0;

    hn = (struct common_informer_handlers){on_node_add, on_node_update, on_node_delete, x};
    hp = (struct common_informer_handlers){on_pod_add, on_pod_update, on_pod_delete, x};
    hg = (struct common_informer_handlers){on_pg_add, on_pg_update, on_pg_delete, x};
    common_informer_json_ops(&x->pg_ops, "podgroups", &common_kube_podgroups);
    if (common_informer_create(x->kube, &common_informer_nodes, &hn, NULL, &x->nodes_inf, err) ||
        common_informer_create(x->kube, &common_informer_pods, &hp, NULL, &x->pods_inf, err) ||
        common_informer_create(x->kube, &x->pg_ops, &hg, NULL, &x->pg_inf, err))
        goto fail;

    if (opts->metrics) {
        struct common_metrics *m = opts->metrics;
        x->m_requests = common_metrics_counter(
            m, "trainsched_extender_requests_total",
            "Scheduler extender requests by verb and result (ok, error, held, rejected).",
            req_labels);
        x->m_duration = common_metrics_histogram(
            m, "trainsched_extender_duration_seconds",
            "Time to answer an extender request (held binds: until the hold is taken).", verb_label,
            duration_buckets, sizeof(duration_buckets) / sizeof(duration_buckets[0]));
        x->m_bindings = common_metrics_counter(
            m, "trainsched_extender_bindings_total",
            "Bindings created through the API server by result (bound, failed).", result_label);
        x->m_held = common_metrics_gauge(m, "trainsched_extender_held_binds",
                                         "Bind requests held right now.", NULL);
        x->m_gangs = common_metrics_gauge(
            m, "trainsched_extender_gangs",
            "PodGroups by state (waiting, holding, admitted, backoff).", state_label);
        x->m_cache = common_metrics_gauge(m, "trainsched_extender_cache_objects",
                                          "Objects in the extender's watch caches.", kind_label);
        x->m_topo_waiting = common_metrics_gauge(
            m, "trainsched_extender_gangs_waiting_for_topology",
            "Gangs not holding nor admitted whose reason is their topology request (a bad "
            "request, or no domain of the required level has room).",
            NULL);
        x->m_topo_placed = common_metrics_counter(
            m, "trainsched_extender_topology_placements_total",
            "Gangs released inside one topology domain, by the domain's level (node label key).",
            level_label);
        if (!x->m_requests || !x->m_duration || !x->m_bindings || !x->m_held || !x->m_gangs ||
            !x->m_cache || !x->m_topo_waiting || !x->m_topo_placed) {
            common_error_set(err, COMMON_ENOMEM, "extender server: cannot register metrics");
            goto fail;
        }
    }
    return x;
fail:
    extender_server_destroy(x);
    return NULL;
}

enum common_rc extender_server_install(struct extender_server *x, struct common_httpd *h,
                                       struct common_error *err)
{
    if (common_httpd_route(h, "POST", EXTENDER_URL_PREFIX "/filter", h_filter, x) ||
        common_httpd_route(h, "POST", EXTENDER_URL_PREFIX "/prioritize", h_prioritize, x) ||
        common_httpd_route(h, "POST", EXTENDER_URL_PREFIX "/bind", h_bind, x) ||
        common_httpd_route(h, "POST", EXTENDER_URL_PREFIX "/preempt", h_preempt, x))
        return common_error_set(err, COMMON_EINVAL,
                                "extender server: cannot add the " EXTENDER_URL_PREFIX
                                "/* routes (server started, or a path taken)");
    return COMMON_OK;
}

enum common_rc extender_server_start(struct extender_server *x, struct common_error *err)
{
    pthread_mutex_lock(&x->mu);
    if (x->started || x->stopped) {
        pthread_mutex_unlock(&x->mu);
        return common_error_set(err, COMMON_ECONFLICT, "extender server: already started");
    }
    x->started = 1;
    pthread_mutex_unlock(&x->mu);
    if (common_informer_start(x->nodes_inf, err) || common_informer_start(x->pods_inf, err) ||
        common_informer_start(x->pg_inf, err))
        return err ? err->code : COMMON_ENOMEM;
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
    x->binders = common_calloc(x->o.binders, sizeof(*x->binders));
    if (!x->binders)
        return common_error_set(err, COMMON_ENOMEM, "no memory");
    for (unsigned i = 0; i < x->o.binders; i++) {
        if (pthread_create(&x->binders[i], NULL, binder_main, x) != 0)
            return common_error_set(err, COMMON_EIO, "extender server: no binder thread");
        x->n_binders++;
    }
    if (pthread_create(&x->timer, NULL, timer_main, x) != 0)
        return common_error_set(err, COMMON_EIO, "extender server: no timer thread");
    pthread_mutex_lock(&x->mu);
    x->started = 2; /* the timer runs: joined at stop */
    x->tick_req = 1;
    pthread_mutex_unlock(&x->mu);
    return COMMON_OK;
}

int extender_server_ready(struct extender_server *x)
{
    return x && common_informer_synced(x->nodes_inf) && common_informer_synced(x->pods_inf) &&
           common_informer_synced(x->pg_inf);
}

int extender_server_wait_ready(struct extender_server *x, long timeout_ms)
{
    int64_t end = mono_ms() + timeout_ms;

    if (!common_informer_wait_synced(x->nodes_inf, timeout_ms))
        return 0;
    if (!common_informer_wait_synced(x->pods_inf, (long)(end - mono_ms())))
        return 0;
    return common_informer_wait_synced(x->pg_inf, (long)(end - mono_ms()));
}

void extender_server_stats(struct extender_server *x, struct extender_server_stats *out)
{
    pthread_mutex_lock(&x->mu);
    out->held = x->st.held;
    out->released = x->st.released;
    out->rejected = x->st.rejected;
    out->bindings_ok = x->st.bindings_ok;
    out->bindings_failed = x->st.bindings_failed;
    out->node_patches = x->st.node_patches;
    out->status_patches = x->st.status_patches;
    out->held_now = x->st.held_now;
    out->pod_touches = x->st.pod_touches;
    out->filter = __atomic_load_n(&x->st.filter, __ATOMIC_RELAXED);
    out->prioritize = __atomic_load_n(&x->st.prioritize, __ATOMIC_RELAXED);
    out->bind = __atomic_load_n(&x->st.bind, __ATOMIC_RELAXED);
    out->preempt = __atomic_load_n(&x->st.preempt, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&x->mu);
}

void extender_server_stop(struct extender_server *x)
{
    int timer_running;

    if (!x)
        return;
    pthread_mutex_lock(&x->mu);
    if (x->stopped) {
        pthread_mutex_unlock(&x->mu);
        return;
    }
    timer_running = x->started == 2;
    x->stopping = 1;
    x->stopped = 1;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    if (timer_running)
        pthread_join(x->timer, NULL);

    pthread_mutex_lock(&x->qmu);
    x->qstop = 1;
    pthread_cond_broadcast(&x->qcv);
    pthread_mutex_unlock(&x->qmu);
    for (unsigned i = 0; i < x->n_binders; i++)
        pthread_join(x->binders[i], NULL);
    x->n_binders = 0;

    for (;;) {
        struct common_httpd_hold *h = NULL;
        pthread_mutex_lock(&x->mu);
        if (x->n_holds)
            h = holds_take(x, x->holds[x->n_holds - 1].uid);
        pthread_mutex_unlock(&x->mu);
        if (!h)
            break;
        answer_hold(h, "trainsched extender stopping");
    }
    if (x->nodes_inf)
        common_informer_request_stop(x->nodes_inf);
    if (x->pods_inf)
        common_informer_request_stop(x->pods_inf);
    if (x->pg_inf)
        common_informer_request_stop(x->pg_inf);
    for (size_t k = 0; k < 2; k++)
        if (x->topo_inf[k])
            common_informer_request_stop(x->topo_inf[k]);
    if (x->nodes_inf)
        common_informer_stop(x->nodes_inf);
    if (x->pods_inf)
        common_informer_stop(x->pods_inf);
    if (x->pg_inf)
        common_informer_stop(x->pg_inf);
    for (size_t k = 0; k < 2; k++)
        if (x->topo_inf[k])
            common_informer_stop(x->topo_inf[k]);
}

void extender_server_destroy(struct extender_server *x)
{
    if (!x)
        return;
    extender_server_stop(x);
    common_informer_destroy(x->nodes_inf);
    common_informer_destroy(x->pods_inf);
    common_informer_destroy(x->pg_inf);
    common_informer_destroy(x->topo_inf[0]);
    common_informer_destroy(x->topo_inf[1]);
    gang_state_destroy(x->gs);
    while (x->qhead) {
        struct job *j = x->qhead;
        x->qhead = j->next;
        common_free(j);
    }
    for (size_t i = 0; i < x->n_dirty; i++)
        common_free(x->dirty[i]);
    common_free(x->dirty);
    common_free(x->todo);
    common_free(x->holds);
    common_free(x->recs);
    common_free(x->binders);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->qmu);
    pthread_cond_destroy(&x->qcv);
    common_free(x);
}
