/*
 * extender/nodes.c - advertising the gang's virtual resource (EXTENDER_GANG_RESOURCE) in each
 * node's capacity and allocatable: the queue of nodes to patch and the status patch the timer
 * sends, retried after NODE_RETRY_MS.
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

#define NODE_RETRY_MS 5000

int64_t extender_node_gang_want(const struct common_node *n)
{
    return n->capacity.pods > 0 ? n->capacity.pods : 110;
}

void extender_node_todo_add(struct extender_server *x, const char *name, int64_t not_before)
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
    extender_copy_str(x->todo[x->n_todo].name, sizeof(x->todo[0].name), name);
    x->todo[x->n_todo].not_before = not_before;
    x->n_todo++;
}

void extender_patch_node(struct extender_server *x, const struct node_todo *t)
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
    want = extender_node_gang_want(n);
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
        extender_node_todo_add(x, t->name, extender_mono_ms() + NODE_RETRY_MS);
    pthread_mutex_unlock(&x->mu);
    if (rc != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: node resource not advertised", "node", t->name,
                   "error", e.msg, NULL);
}
