/*
 * extender/slurm.c - the filter for gangs on the Slurm backend (docs/slurm.md): a pod whose
 * PodGroup carries trainsched.io/slurm-job-id may only go to the Kubernetes nodes that match the
 * Slurm nodes its job got (trainsched.io/slurm-nodes; a node matches by name, or by the value of
 * the node label the serve config names). Until the job runs, the pod waits (an Error answer, so
 * kube-scheduler retries it) with the job's state as the reason. The other nodes are
 * FailedNodes naming the job; the gang core then plans over the matching nodes only.
 */
#include <string.h>

#include "common/pmap.h"
#include "extender/server_int.h"
#include "integrations/slurm_sync.h"

static const char *label_of(const struct common_node *n, const char *key)
{
    for (uint32_t i = 0; n && i < n->n_labels; i++)
        if (strcmp(n->labels[i].key, key) == 0)
            return n->labels[i].value;
    return NULL;
}

enum common_rc extender_slurm_filter(struct extender_server *x, struct common_arena *a,
                                     const struct extender_args *args, uint8_t *verdict,
                                     const char **reason, const char **wait_msg, int *handled,
                                     struct common_error *e)
{
    struct common_pmap_snap *pgs = x->pg_inf ? common_informer_snapshot(x->pg_inf) : NULL;
    struct common_pmap_snap *nodes = NULL;
    const json_t *pg, *ann;
    const char *job, *list, *state, *label = x->o.slurm_node_label, *why;
    const char **names;
    size_t *idx, n = 0;
    struct gang_node_verdict *gv;
    struct gang_filter_result res = {0};
    uint8_t *sub_verdict;
    const char **sub_reason;
    char key[600];
    enum common_rc rc = COMMON_OK;

    *handled = 0;
    snprintf(key, sizeof(key), "%s/%s", args->pod->namespace, args->pod_group);
    pg = pgs ? common_pmap_snap_get(pgs, key) : NULL;
    ann = json_object_get(json_object_get(pg, "metadata"), "annotations");
    job = json_string_value(json_object_get(ann, SLURM_PG_JOB_ID));
    if (!job)
        goto out;
    *handled = 1;
    list = json_string_value(json_object_get(ann, SLURM_PG_NODES));
    state = json_string_value(json_object_get(ann, SLURM_PG_STATE));
    if (!*job || !list || !*list) {
        *wait_msg = common_arena_printf(a, "waiting for Slurm: %s",
                                        state && *state ? state : "no Slurm job yet");
        if (!*wait_msg)
            rc = common_error_set(e, COMMON_ENOMEM, "no memory");
        goto out;
    }
    why = common_arena_printf(a, "not one of the nodes of Slurm job %s (%s)", job, list);
    names = common_arena_alloc(a, (args->n_nodes + 1) * sizeof(*names));
    idx = common_arena_alloc(a, (args->n_nodes + 1) * sizeof(*idx));
    gv = common_arena_alloc(a, (args->n_nodes + 1) * sizeof(*gv));
    sub_verdict = common_arena_alloc(a, args->n_nodes + 1);
    sub_reason = common_arena_alloc(a, (args->n_nodes + 1) * sizeof(*sub_reason));
    if (!why || !names || !idx || !gv || !sub_verdict || !sub_reason) {
        rc = common_error_set(e, COMMON_ENOMEM, "no memory");
        goto out;
    }
    if (label && *label)
        nodes = common_informer_snapshot(x->nodes_inf);
    for (size_t i = 0; i < args->n_nodes; i++) {
        const char *slurm_name = args->node_names[i];
        if (label && *label)
            slurm_name =
                label_of(nodes ? common_pmap_snap_get(nodes, args->node_names[i]) : NULL, label);
        if (slurm_node_in(slurm_name, list)) {
            names[n] = args->node_names[i];
            idx[n++] = i;
        } else {
            verdict[i] = EXTENDER_FAIL;
            reason[i] = why;
        }
    }
    if (n == 0)
        goto out; /* every candidate failed with the reason above */
    memset(sub_verdict, EXTENDER_PASS, n);
    memset(sub_reason, 0, n * sizeof(*sub_reason));
    pthread_mutex_lock(&x->mu);
    rc = gang_filter(x->gs, args->pod, names, n, extender_mono_ms(), gv, &res, e);
    if (rc == COMMON_OK) {
        if (extender_filter_answer(a, gv, n, &res, sub_verdict, sub_reason, wait_msg))
            rc = common_error_set(e, COMMON_ENOMEM, "no memory");
        if (res.answers_pending)
            x->tick_req = 1;
        extender_mark_dirty(x, args->pod->namespace, args->pod_group);
        pthread_cond_signal(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
    for (size_t k = 0; rc == COMMON_OK && k < n; k++) {
        verdict[idx[k]] = sub_verdict[k];
        reason[idx[k]] = sub_reason[k];
    }
out:
    if (nodes)
        common_pmap_snap_release(nodes);
    if (pgs)
        common_pmap_snap_release(pgs);
    return rc;
}
