/*
 * extender/binder.c - the binder threads: they take answers of the gang core off the queue,
 * create Bindings (or annotate waiting pods so kube-scheduler requeues them) and answer the held
 * bind requests. Locks as in server.c: x->qmu for the queue, x->mu for the held table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "extender/server_int.h"

/* Held requests: common_httpd_hold in the handler (the connection is suspended once it
 * returns), common_httpd_release from a binder or the timer, exactly once. */
struct common_httpd_hold *extender_hold_take(const struct common_httpd_request *req,
                                             struct common_httpd_response *resp)
{
    return common_httpd_hold(req, resp);
}

void extender_hold_release(struct common_httpd_hold *h, int status, const char *body, size_t len)
{
    (void)common_httpd_release(h, status, JSON_CT, body, len);
}

/* ------------------------------------------------------------- held requests (mu held) -- */

int extender_holds_add(struct extender_server *x, const char *uid, struct common_httpd_hold *h)
{
    if (x->n_holds == x->cap_holds) {
        size_t nc = x->cap_holds ? x->cap_holds * 2 : 64;
        struct held *nh = common_realloc(x->holds, nc * sizeof(*nh));
        if (!nh)
            return -1;
        x->holds = nh;
        x->cap_holds = nc;
    }
    extender_copy_str(x->holds[x->n_holds].uid, sizeof(x->holds[0].uid), uid);
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

struct common_httpd_hold *extender_holds_take(struct extender_server *x, const char *uid)
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
void extender_answer_hold(struct common_httpd_hold *h, const char *msg)
{
    struct common_buf b;

    common_buf_init(&b, 1 << 16);
    if (extender_encode_bind_result(&b, msg, NULL) != COMMON_OK) {
        common_buf_reset(&b);
        (void)extender_encode_bind_result(&b, "extender: cannot encode the answer", NULL);
    }
    extender_hold_release(h, 200, b.data ? b.data : "", b.len);
    common_buf_free(&b);
}

/* --------------------------------------------------------------------- binder queue -- */

void extender_queue_push(struct extender_server *x, struct job *head, struct job *tail)
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
void extender_jobs_from_answers(const struct gang_answer *a, size_t n, struct job **head,
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

/* the index of GANG_SCHEDULING_GATE in pod's spec.schedulingGates, -1 when absent */
static long gate_index_of(const json_t *pod)
{
    const json_t *gates = json_object_get(json_object_get(pod, "spec"), "schedulingGates");
    size_t i;
    json_t *g;

    json_array_foreach(gates, i, g)
    {
        const char *n = json_string_value(json_object_get(g, "name"));
        if (n && strcmp(n, GANG_SCHEDULING_GATE) == 0)
            return (long)i;
    }
    return -1;
}

/* one JSON patch removing the gate at idx, testing the pod's uid and the gate's name first (a
 * second writer, or a pod recreated under the same name, fails the test instead of losing
 * another gate) */
static enum common_rc ungate_write(struct extender_server *x, const struct job *j, long idx,
                                   struct common_error *e)
{
    char path[64], gpath[64];
    json_t *patch;
    char *body;
    enum common_rc rc;

    snprintf(path, sizeof(path), "/spec/schedulingGates/%ld", idx);
    snprintf(gpath, sizeof(gpath), "/spec/schedulingGates/%ld/name", idx);
    patch = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s}]", "op", "test", "path",
                      "/metadata/uid", "value", j->a.uid, "op", "test", "path", gpath, "value",
                      GANG_SCHEDULING_GATE, "op", "remove", "path", path);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    rc = body ? common_kube_patch(x->kube, &common_kube_pods, j->a.namespace, j->a.name,
                                  COMMON_KUBE_JSON_PATCH, body, NULL, NULL, e)
              : common_error_set(e, COMMON_ENOMEM, "no memory for a pod patch");
    json_decref(patch);
    free(body);
    return rc;
}

/*
 * ungate_pod - remove trainsched's scheduling gate from member j (docs/gang.md "The gang gate"):
 * a JSON patch that tests the uid and the gate's name at the index the books saw, then removes
 * it. A failed test (422) or a conflict (409) re-reads the pod and tries again at the gate's
 * index now; a pod gone (404), recreated (another uid) or without the gate any more is done.
 * After the attempts, the books put the pod back at the gate (gang_ungate_failed) so a later
 * pass tries again.
 */
static void ungate_pod(struct extender_server *x, const struct job *j)
{
    struct common_error e = {0};
    long idx = (long)j->gate_index;
    enum common_rc rc = COMMON_EINVAL;
    int done = 0, wrote = 0, exit_now = 0;

    for (int attempt = 0; attempt < 4 && !done; attempt++) {
        json_t *pod = NULL;
        const char *uid;
        rc = ungate_write(x, j, idx, &e);
        if (rc == COMMON_OK || rc == COMMON_ENOTFOUND) {
            done = 1;
            wrote = rc == COMMON_OK;
            break;
        }
        if (rc != COMMON_EINVAL && rc != COMMON_ECONFLICT)
            continue; /* a transient error: the same write again */
        rc = common_kube_get(x->kube, &common_kube_pods, j->a.namespace, j->a.name, &pod, &e);
        if (rc == COMMON_ENOTFOUND) {
            done = 1;
            break;
        }
        if (rc != COMMON_OK)
            continue;
        uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        idx = gate_index_of(pod);
        if (!uid || strcmp(uid, j->a.uid) != 0 || idx < 0)
            done = 1; /* another pod now, or the gate is gone already */
        json_decref(pod);
    }
    pthread_mutex_lock(&x->mu);
    if (wrote) {
        x->st.ungated++;
        common_metric_add(x->m_ungated_pods, NULL, 1);
        exit_now = x->exit_after_ungates > 0 && ++x->ungates_done >= x->exit_after_ungates;
    } else if (!done) {
        gang_ungate_failed(x->gs, j->a.uid);
        x->st.ungate_failed++;
        x->tick_req = 1;
        pthread_cond_signal(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
    if (!done)
        common_log(COMMON_LOG_WARN, "extender: scheduling gate not removed", "pod", j->a.name,
                   "namespace", j->a.namespace, "error", e.msg, NULL);
    if (exit_now) {
        common_log(COMMON_LOG_WARN, "extender: TRAINSCHED_TEST_EXIT_AFTER_UNGATES reached; exiting",
                   "pod", j->a.name, NULL);
        _exit(3);
    }
}

static void carry_out(struct extender_server *x, struct job *j)
{
    struct common_error e = {0};
    char msg[COMMON_ERROR_MSG_MAX + 64];
    struct common_httpd_hold *h;

    msg[0] = '\0';
    if (j->ungate) {
        ungate_pod(x, j);
        return;
    }
    if (j->touch[0]) {
        touch_pod(x, j);
        return;
    }
    if (j->a.bind) {
        enum common_rc rc;
        extender_dra_before_bind(x, &j->a);
        rc = create_binding(x, &j->a, &e);
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
        h = extender_holds_take(x, j->a.uid);
        pthread_mutex_unlock(&x->mu);
    } else {
        extender_copy_str(msg, sizeof(msg), j->a.reason[0] ? j->a.reason : "gang attempt ended");
        extender_dra_release(x, &j->a);
        pthread_mutex_lock(&x->mu);
        h = extender_holds_take(x, j->a.uid);
        pthread_mutex_unlock(&x->mu);
    }
    if (h)
        extender_answer_hold(h, msg);
}

void *extender_binder_main(void *arg)
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
