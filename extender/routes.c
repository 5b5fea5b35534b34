/*
 * extender/routes.c - the HTTP handlers of the four extender verbs (filter, prioritize, bind,
 * preempt) under EXTENDER_URL_PREFIX: decode (codec.h), ask the gang core under x->mu, encode
 * the answer; a bind the gang holds is suspended and answered later by a binder or the timer.
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

enum verb { V_FILTER, V_PRIORITIZE, V_BIND, V_PREEMPT, V_COUNT };
static const char *const verb_names[V_COUNT] = {"filter", "prioritize", "bind", "preempt"};

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void count(struct extender_server *x, enum verb v, const char *result, double t0)
{
    const char *lv[] = {verb_names[v], result};
    const char *dv[] = {verb_names[v]};

    common_metric_add(x->m_requests, lv, 1);
    common_metric_observe(x->m_duration, dv, mono_s() - t0);
}

/* one verb request's shared state: its clock, arena, error and answer buffer */
struct verb_req {
    struct extender_server *x;
    enum verb v;
    double t0;
    struct common_arena *a; /* NULL when out of memory (verb_begin said so) */
    struct common_error e;
    struct common_buf b; /* the JSON answer, bounded by the response's limit */
};

/*
 * verb_begin - the prologue of every verb handler: starts the clock, counts the request in
 * x->st, makes the request's arena and an empty answer buffer. COMMON_OK, or COMMON_ENOMEM with
 * r->e set ("no memory") when the arena cannot be made; verb_end must follow either way.
 */
static enum common_rc verb_begin(struct verb_req *r, struct extender_server *x, enum verb v,
                                 const struct common_httpd_response *resp)
{
    uint64_t *n = v == V_FILTER       ? &x->st.filter
                  : v == V_PRIORITIZE ? &x->st.prioritize
                  : v == V_BIND       ? &x->st.bind
                                      : &x->st.preempt;

    memset(r, 0, sizeof(*r));
    r->x = x;
    r->v = v;
    r->t0 = mono_s();
    __atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
    common_buf_init(&r->b, resp->body.max);
    r->a = common_arena_create(x->arena_max);
    return r->a ? COMMON_OK : common_error_set(&r->e, COMMON_ENOMEM, "no memory");
}

/* verb_end - the epilogue: frees the answer buffer and the arena, counts the request under
 * result ("ok", "error", "wait", "held", "rejected") with its duration. */
static void verb_end(struct verb_req *r, const char *result)
{
    common_buf_free(&r->b);
    common_arena_destroy(r->a);
    count(r->x, r->v, result, r->t0);
}

static void answer_json(struct common_httpd_response *resp, const struct common_buf *b)
{
    resp->status = 200;
    resp->content_type = JSON_CT;
    (void)common_buf_append(&resp->body, b->data ? b->data : "", b->len, NULL);
}

/*
 * verb_finish - the end of the prioritize and preempt handlers: rc 0 answers the JSON in r->b
 * (200); otherwise 400 for bad input (COMMON_EINVAL, COMMON_ETOOBIG) or 500, with r->e's message
 * as plain text and a warning in the log (no Error field: any non-200 makes kube-scheduler
 * ignore this extender's answer for the verb). Then verb_end, as "ok" or "error".
 */
static void verb_finish(struct verb_req *r, struct common_httpd_response *resp, enum common_rc rc)
{
    if (!rc) {
        answer_json(resp, &r->b);
    } else {
        char what[64];
        snprintf(what, sizeof(what), "extender: %s failed", verb_names[r->v]);
        common_log(COMMON_LOG_WARN, what, "error", r->e.msg, NULL);
        (void)common_httpd_respondf(resp, rc == COMMON_EINVAL || rc == COMMON_ETOOBIG ? 400 : 500,
                                    "%s\n", r->e.msg);
    }
    verb_end(r, rc ? "error" : "ok");
}

/*
 * args_for_core - decode an ExtenderArgs body for filter or prioritize: the Pod's metadata only
 * (extender_decode_args_meta), then, for a gang pod the books do not know yet (the informer
 * has not seen it), the whole Pod, which the core adds to its books. Known pods and pods
 * without the PodGroup label never need more than their identity and labels here.
 */
static enum common_rc args_for_core(struct extender_server *x, struct common_arena *a,
                                    const struct common_httpd_request *req,
                                    struct extender_args **args, struct common_error *e)
{
    enum common_rc rc = extender_decode_args_meta(a, req->body, req->body_len, &x->lim, args, e);
    int known;

    if (rc || !(*args)->pod_group[0])
        return rc;
    pthread_mutex_lock(&x->mu);
    known = gang_pod_known(x->gs, (*args)->pod->uid);
    pthread_mutex_unlock(&x->mu);
    return known ? COMMON_OK : extender_decode_args_pod(a, *args, e);
}

static void h_filter(void *ctx, const struct common_httpd_request *req,
                     struct common_httpd_response *resp)
{
    struct extender_server *x = ctx;
    struct verb_req r;
    struct extender_args *args = NULL;
    struct gang_node_verdict *gv;
    uint8_t *verdict;
    const char **reason;
    struct gang_filter_result res = {0};
    const char *result = "ok";
    const char *wait_msg = NULL;
    int slurm = 0;
    enum common_rc rc;

    rc = verb_begin(&r, x, V_FILTER, resp);
    if (rc)
        goto fail;
    rc = args_for_core(x, r.a, req, &args, &r.e);
    if (rc)
        goto fail;
    verdict = common_arena_alloc(r.a, args->n_nodes + 1);
    reason = common_arena_alloc(r.a, (args->n_nodes + 1) * sizeof(*reason));
    gv = common_arena_alloc(r.a, (args->n_nodes + 1) * sizeof(*gv));
    if (!verdict || !reason || !gv) {
        rc = common_error_set(&r.e, COMMON_ENOMEM, "no memory");
        goto fail;
    }
    memset(verdict, EXTENDER_PASS, args->n_nodes + 1);
    memset(reason, 0, (args->n_nodes + 1) * sizeof(*reason));
    if (args->pod_group[0]) {
        /* a gang on the Slurm backend: only its Slurm job's nodes (extender/slurm.c) */
        rc = extender_slurm_filter(x, r.a, args, verdict, reason, &wait_msg, &slurm, &r.e);
        if (rc)
            goto fail;
    }
    if (args->pod_group[0] && !slurm) {
        pthread_mutex_lock(&x->mu);
        rc = gang_filter(x->gs, args->pod, args->node_names, args->n_nodes, extender_mono_ms(), gv,
                         &res, &r.e);
        if (rc == COMMON_OK) {
            /* reasons live in the books: copy them before unlocking */
            if (extender_filter_answer(r.a, gv, args->n_nodes, &res, verdict, reason, &wait_msg))
                rc = common_error_set(&r.e, COMMON_ENOMEM, "no memory");
            if (res.answers_pending)
                x->tick_req = 1;
            extender_mark_dirty(x, args->pod->namespace, args->pod_group);
            pthread_cond_signal(&x->cv);
        }
        pthread_mutex_unlock(&x->mu);
        if (rc)
            goto fail;
        if (!wait_msg) /* a planned member: its claims get the planned devices now */
            extender_dra_at_filter(x, args->pod, args->node_names, verdict, args->n_nodes);
    }
    if (wait_msg) {
        /* an Error, not node lists: kube-scheduler retries it after its error backoff, where a
         * rejected pod would sleep until a cluster event (extender/answer.h) */
        result = "wait";
        if (extender_encode_filter_error(&r.b, wait_msg, &r.e) == COMMON_OK) {
            answer_json(resp, &r.b);
            goto out;
        }
        rc = r.e.code ? r.e.code : COMMON_ENOMEM;
        goto fail;
    }
    rc = extender_encode_filter_result(&r.b, args, verdict, reason, &r.e);
    if (rc)
        goto fail;
    answer_json(resp, &r.b);
    goto out;
fail:
    result = "error";
    common_buf_reset(&r.b);
    common_log(COMMON_LOG_WARN, "extender: filter failed", "error", r.e.msg, NULL);
    if (extender_encode_filter_error(&r.b, r.e.msg, NULL) == COMMON_OK)
        answer_json(resp, &r.b);
    else
        (void)common_httpd_respondf(resp, 500, "%s\n", r.e.msg);
out:
    verb_end(&r, result);
}

static void h_prioritize(void *ctx, const struct common_httpd_request *req,
                         struct common_httpd_response *resp)
{
    struct extender_server *x = ctx;
    struct verb_req r;
    struct extender_args *args = NULL;
    int64_t *scores;
    enum common_rc rc;

    rc = verb_begin(&r, x, V_PRIORITIZE, resp);
    if (rc)
        goto out;
    rc = args_for_core(x, r.a, req, &args, &r.e);
    if (rc)
        goto out;
    scores = common_arena_alloc(r.a, (args->n_nodes + 1) * sizeof(*scores));
    if (!scores) {
        rc = common_error_set(&r.e, COMMON_ENOMEM, "no memory");
        goto out;
    }
    memset(scores, 0, (args->n_nodes + 1) * sizeof(*scores));
    if (args->pod_group[0]) {
        pthread_mutex_lock(&x->mu);
        rc = gang_prioritize(x->gs, args->pod, args->node_names, args->n_nodes, scores, &r.e);
        pthread_mutex_unlock(&x->mu);
        if (rc)
            goto out;
    }
    rc = extender_encode_priorities(&r.b, args, scores, &r.e);
out:
    verb_finish(&r, resp, rc);
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
    struct verb_req r;
    struct extender_bind_args *args = NULL;
    struct gang_bind_result res = {0};
    struct job *head = NULL, *tail = NULL;
    struct common_httpd_hold *h = NULL;
    char reason[GANG_REASON_MAX + 64], pg_name[254];
    const char *result;
    enum common_rc rc;

    reason[0] = '\0';
    rc = verb_begin(&r, x, V_BIND, resp);
    if (!rc)
        rc = extender_decode_bind_args(r.a, req->body, req->body_len, &x->lim, &args, &r.e);
    if (rc) {
        bind_answer(resp, r.e.msg);
        verb_end(&r, "error");
        return;
    }
    {
        /* the gang key for status and Events: the pod's label, from the pod cache */
        struct common_pmap_snap *snap = common_informer_snapshot(x->pods_inf);
        char key[KEY_MAX];
        const struct common_pod *p;

        snprintf(key, sizeof(key), "%s/%s", args->pod_namespace, args->pod_name);
        p = common_pmap_snap_get(snap, key);
        extender_copy_str(pg_name, sizeof(pg_name), p ? extender_pod_group_of(p) : NULL);
        common_pmap_snap_release(snap);
    }
    pthread_mutex_lock(&x->mu);
    if (x->stopping || !x->started) {
        pthread_mutex_unlock(&x->mu);
        bind_answer(resp, "trainsched extender is not running");
        verb_end(&r, "error");
        return;
    }
    rc = gang_bind(x->gs, args->pod_namespace, args->pod_name, args->pod_uid, args->node,
                   extender_mono_ms(), &res, &r.e);
    if (rc) {
        snprintf(reason, sizeof(reason), "extender: %s", r.e.msg);
        result = "error";
    } else if (res.action == GANG_BIND_REJECT) {
        extender_copy_str(reason, sizeof(reason),
                          res.reason && *res.reason ? res.reason : "rejected");
        result = "rejected";
        x->st.rejected++;
        extender_dra_release_job(x, args->pod_namespace, args->pod_name, args->pod_uid, &head,
                                 &tail);
    } else {
        h = extender_hold_take(req, resp);
        if (!h || extender_holds_add(x, args->pod_uid, h) != 0) {
            /* the core holds the pod; its answer (release or deadline) finds no request */
            extender_copy_str(reason, sizeof(reason), "extender: cannot hold the bind request");
            result = "error";
            if (h) {
                extender_hold_release(h, 200, "{\"Error\":\"extender: no memory\"}", 31);
                h = NULL;
            }
        } else if (res.action == GANG_BIND_RELEASE) {
            result = "ok";
            x->st.released++;
            extender_jobs_from_answers(res.binds, res.n_binds, &head, &tail);
        } else {
            result = "held";
            x->st.held++;
        }
        if (res.answers_pending)
            x->tick_req = 1;
    }
    if (pg_name[0])
        extender_mark_dirty(x, args->pod_namespace, pg_name);
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);

    extender_queue_push(x, head, tail);
    if (!h)
        bind_answer(resp, reason);
    verb_end(&r, result);
}

static void h_preempt(void *ctx, const struct common_httpd_request *req,
                      struct common_httpd_response *resp)
{
    struct extender_server *x = ctx;
    struct verb_req r;
    struct extender_preempt_args *args = NULL;
    struct extender_preempt_choice choice = {0};
    uint8_t *keep;
    enum common_rc rc;

    rc = verb_begin(&r, x, V_PREEMPT, resp);
    if (rc)
        goto out;
    rc = extender_decode_preempt_args(r.a, req->body, req->body_len, &x->lim, &args, &r.e);
    if (rc)
        goto out;
    keep = common_arena_alloc(r.a, args->n_nodes + 1);
    if (!keep) {
        rc = common_error_set(&r.e, COMMON_ENOMEM, "no memory");
        goto out;
    }
    memset(keep, 1, args->n_nodes + 1);
    if (args->n_nodes) {
        struct gang_preempt_node *pn = common_arena_alloc(r.a, args->n_nodes * sizeof(*pn));
        struct gang_preempt_choice *pc = common_arena_alloc(r.a, args->n_nodes * sizeof(*pc));
        struct gang_preempt_result pr = {0};
        const char *why = NULL;

        if (!pn || !pc) {
            rc = common_error_set(&r.e, COMMON_ENOMEM, "no memory");
            goto out;
        }
        for (uint32_t i = 0; i < args->n_nodes; i++) {
            pn[i].node = args->nodes[i].node;
            pn[i].n_victims = args->nodes[i].n_pods;
            pn[i].uids = args->nodes[i].uids;
        }
        pthread_mutex_lock(&x->mu);
        rc = gang_preempt(x->gs, args->pod, pn, args->n_nodes, extender_mono_ms(), pc, &pr, &r.e);
        if (rc == COMMON_OK) {
            for (uint32_t i = 0; i < args->n_nodes; i++)
                keep[i] = (uint8_t)(pc[i].keep != 0);
            if (!pr.n_kept && pr.reason && pr.reason[0])
                why = common_arena_strdup(r.a, pr.reason);
            extender_mark_dirty(x, args->pod->namespace, args->pod_group);
        }
        pthread_mutex_unlock(&x->mu);
        if (rc)
            goto out;
        if (why)
            common_log(COMMON_LOG_INFO, "extender: preemption vetoed", "pod", args->pod->name,
                       "namespace", args->pod->namespace, "reason", why, NULL);
    }
    choice.keep_node = keep;
    rc = extender_encode_preempt_result(&r.b, args, &choice, &r.e);
out:
    verb_finish(&r, resp, rc);
}

/* the routes, all POST under EXTENDER_URL_PREFIX; inline: may be answered without HTTP */
static const struct {
    const char *path;
    common_httpd_handler fn;
    int inline_ok; /* extender_server_answer may call it (bind holds its HTTP request) */
} routes[] = {
    {EXTENDER_URL_PREFIX "/filter", h_filter, 1},
    {EXTENDER_URL_PREFIX "/prioritize", h_prioritize, 1},
    {EXTENDER_URL_PREFIX "/bind", h_bind, 0},
    {EXTENDER_URL_PREFIX "/preempt", h_preempt, 1},
};

enum common_rc extender_server_install(struct extender_server *x, struct common_httpd *h,
                                       struct common_error *err)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        if (common_httpd_route(h, "POST", routes[i].path, routes[i].fn, x))
            return common_error_set(err, COMMON_EINVAL,
                                    "extender server: cannot add the " EXTENDER_URL_PREFIX
                                    "/* routes (server started, or a path taken)");
    return COMMON_OK;
}

enum common_rc extender_server_answer(struct extender_server *x, const char *path, const char *body,
                                      size_t len, struct common_httpd_response *resp,
                                      struct common_error *err)
{
    struct common_httpd_request req = {0};

    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        if (!routes[i].inline_ok || strcmp(routes[i].path, path) != 0)
            continue;
        req.method = "POST";
        req.path = path;
        req.content_type = JSON_CT;
        req.body = body;
        req.body_len = len;
        req.remote_addr = "inline";
        routes[i].fn(x, &req, resp);
        return COMMON_OK;
    }
    return common_error_set(err, COMMON_EINVAL,
                            "extender server: no route %s answers without HTTP (filter, "
                            "prioritize and preempt do)",
                            path ? path : "(null)");
}
