/*
 * fuzz/fuzz_coretypes.c - libFuzzer target for common/coretypes.
 *
 * Every input goes to every decoder: a single Pod / Node body, a PodList / NodeList body, one
 * watch frame of either kind (and common_watch_frame_size), and, when it parses as JSON, the
 * Pod and Node JSON decoders. A decoder must answer one of its documented codes, with a
 * message on failure and nothing returned; a decoded object must hold its invariants (strings
 * never NULL, maps sorted, array counts matching, the block at least the struct). Any broken
 * property aborts. Seed corpus: tests/fixtures/coretypes (real API server bodies), e.g.
 *   ./fuzz_coretypes -max_len=65536 corpus-dir ../tests/fixtures/coretypes
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/coretypes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_failed(enum common_rc rc, const struct common_error *err)
{
    if (rc != COMMON_EINVAL && rc != COMMON_EAPI && rc != COMMON_EUNSUPPORTED)
        abort();
    if (err->code != rc || err->msg[0] == '\0')
        abort();
}

static void check_str(const char *s)
{
    if (!s)
        abort();
    (void)strlen(s);
}

static void check_kvs(const struct common_kv *kv, uint32_t n)
{
    uint32_t i;

    if (n && !kv)
        abort();
    for (i = 0; i < n; i++) {
        check_str(kv[i].key);
        check_str(kv[i].value);
        if (i > 0 && strcmp(kv[i - 1].key, kv[i].key) >= 0)
            abort();
    }
}

static void check_res(const struct common_resources *r)
{
    uint32_t i;

    if (r->n_extended > COMMON_CORETYPES_MAX_RESOURCES || (r->n_extended && !r->extended))
        abort();
    for (i = 0; i < r->n_extended; i++) {
        check_str(r->extended[i].name);
        if (i > 0 && strcmp(r->extended[i - 1].name, r->extended[i].name) >= 0)
            abort();
    }
}

static void check_reqs(const struct common_node_selector_req *r, uint32_t n)
{
    uint32_t i, j;

    for (i = 0; i < n; i++) {
        check_str(r[i].key);
        check_str(r[i].op);
        for (j = 0; j < r[i].n_values; j++)
            check_str(r[i].values[j]);
    }
}

static void check_pod(const struct common_pod *p)
{
    uint32_t i;

    if (!p || p->bytes < sizeof(*p))
        abort();
    check_str(p->namespace);
    check_str(p->name);
    check_str(p->uid);
    check_str(p->resource_version);
    check_str(p->node_name);
    check_str(p->scheduler_name);
    check_str(p->phase);
    check_str(p->priority_class_name);
    check_str(p->controller.kind);
    check_str(p->controller.name);
    check_str(p->controller.uid);
    check_res(&p->requests);
    check_kvs(p->labels, p->n_labels);
    check_kvs(p->node_selector, p->n_node_selector);
    for (i = 0; i < p->n_tolerations; i++) {
        check_str(p->tolerations[i].key);
        check_str(p->tolerations[i].op);
        check_str(p->tolerations[i].value);
        check_str(p->tolerations[i].effect);
    }
    for (i = 0; i < p->n_affinity_terms; i++) {
        check_reqs(p->affinity_terms[i].match_expressions,
                   p->affinity_terms[i].n_match_expressions);
        check_reqs(p->affinity_terms[i].match_fields, p->affinity_terms[i].n_match_fields);
    }
    for (i = 0; i < p->n_resource_claims; i++) {
        check_str(p->resource_claims[i].name);
        check_str(p->resource_claims[i].resource_claim_name);
        check_str(p->resource_claims[i].resource_claim_template_name);
    }
}

static void check_node(const struct common_node *n)
{
    uint32_t i;

    if (!n || n->bytes < sizeof(*n) || n->ready > COMMON_NODE_READY_FALSE)
        abort();
    check_str(n->name);
    check_str(n->uid);
    check_str(n->resource_version);
    check_kvs(n->labels, n->n_labels);
    check_res(&n->capacity);
    check_res(&n->allocatable);
    for (i = 0; i < n->n_taints; i++) {
        check_str(n->taints[i].key);
        check_str(n->taints[i].value);
        check_str(n->taints[i].effect);
    }
}

static enum common_rc on_pod(void *ctx, struct common_pod *pod, struct common_error *err)
{
    (void)ctx;
    (void)err;
    check_pod(pod);
    common_pod_free(pod);
    return COMMON_OK;
}

static enum common_rc on_node(void *ctx, struct common_node *node, struct common_error *err)
{
    (void)ctx;
    (void)err;
    check_node(node);
    common_node_free(node);
    return COMMON_OK;
}

static void fuzz_watch(const uint8_t *data, size_t size, enum common_kind kind)
{
    struct common_watch_event ev;
    struct common_error err;
    enum common_rc rc = common_watch_decode_frame(data, size, kind, &ev, &err);

    if (rc != COMMON_OK) {
        check_failed(rc, &err);
        if (ev.pod || ev.node || ev.resource_version)
            abort();
        return;
    }
    if (ev.type < COMMON_WATCH_ADDED || ev.type > COMMON_WATCH_ERROR || !ev.resource_version)
        abort();
    if (ev.type == COMMON_WATCH_ERROR && (!ev.status_reason || !ev.status_message))
        abort();
    if (ev.type <= COMMON_WATCH_DELETED) {
        if (kind == COMMON_KIND_POD)
            check_pod(ev.pod);
        else
            check_node(ev.node);
    }
    common_watch_event_clear(&ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct common_error err;
    struct common_list_meta meta;
    struct common_pod *pod;
    struct common_node *node;
    enum common_rc rc;
    size_t frame;
    json_t *j;

    rc = common_pod_from_protobuf(data, size, &pod, &err);
    if (rc == COMMON_OK) {
        check_pod(pod);
        common_pod_free(pod);
    } else {
        check_failed(rc, &err);
        if (pod)
            abort();
    }
    rc = common_node_from_protobuf(data, size, &node, &err);
    if (rc == COMMON_OK) {
        check_node(node);
        common_node_free(node);
    } else {
        check_failed(rc, &err);
        if (node)
            abort();
    }
    rc = common_pod_list_from_protobuf(data, size, on_pod, NULL, &meta, &err);
    if (rc == COMMON_OK) {
        check_str(meta.resource_version);
        check_str(meta.continue_token);
        common_list_meta_clear(&meta);
    } else {
        check_failed(rc, &err);
    }
    rc = common_node_list_from_protobuf(data, size, on_node, NULL, NULL, &err);
    if (rc != COMMON_OK)
        check_failed(rc, &err);

    rc = common_watch_frame_size(data, size, &frame, &err);
    if (rc == COMMON_OK && size >= 4 && frame < 4)
        abort();
    if (rc != COMMON_OK)
        check_failed(rc, &err);
    fuzz_watch(data, size, COMMON_KIND_POD);
    fuzz_watch(data, size, COMMON_KIND_NODE);

    j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (j) {
        rc = common_pod_from_json(j, &pod, &err);
        if (rc == COMMON_OK) {
            check_pod(pod);
            common_pod_free(pod);
        } else {
            check_failed(rc, &err);
        }
        rc = common_node_from_json(j, &node, &err);
        if (rc == COMMON_OK) {
            check_node(node);
            common_node_free(node);
        } else {
            check_failed(rc, &err);
        }
        json_decref(j);
    }
    return 0;
}
