/*
 * fuzz/fuzz_extender_preempt.c - libFuzzer target for extender_decode_preempt_args and
 * extender_encode_preempt_result.
 *
 * Every input is decoded with small caps: a failure must be COMMON_EINVAL or COMMON_ETOOBIG
 * with a message and no result; a success must hold the invariants of struct
 * extender_preempt_args (distinct node names, UIDs non-empty, full victims' UIDs equal to
 * their pods' uids, counts >= 0). Then an answer keeping nodes and victims drawn from the
 * input is encoded, parsed back with jansson and checked: exactly the kept nodes, each with
 * exactly its kept victims' UIDs in request order and its NumPDBViolations. Any broken
 * property aborts. Seeds: fuzz/corpus/extender_preempt, e.g.
 *   ./fuzz_extender_preempt -max_len=65536 corpus-dir ../fuzz/corpus/extender_preempt
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "extender/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            abort();                                                                               \
    } while (0)

static void check_answer(const struct extender_preempt_args *x, const uint8_t *data, size_t size)
{
    struct extender_preempt_choice ch;
    uint8_t *keep_node = calloc(x->n_nodes + 1, 1);
    uint8_t **keep_victim = calloc(x->n_nodes + 1, sizeof(uint8_t *));
    struct common_buf b;
    struct common_error err;
    json_t *j, *map;
    size_t kept = 0;
    uint32_t i, v;

    CHECK(keep_node && keep_victim);
    for (i = 0; i < x->n_nodes; i++) {
        uint8_t h = size ? data[(i * 5u) % size] : 0;
        keep_node[i] = (h + i) % 3 != 0;
        kept += keep_node[i];
        if (h & 1) {
            keep_victim[i] = calloc(x->nodes[i].n_pods + 1, 1);
            CHECK(keep_victim[i]);
            for (v = 0; v < x->nodes[i].n_pods; v++)
                keep_victim[i][v] = (uint8_t)((h >> 1) + v) % 2;
        }
    }
    ch.keep_node = keep_node;
    ch.keep_victim = (const uint8_t *const *)keep_victim;
    ch.pdb = NULL;
    common_buf_init(&b, (size_t)1 << 26);
    CHECK(extender_encode_preempt_result(&b, x, &ch, &err) == COMMON_OK);
    j = json_loadb(b.data, b.len, 0, NULL);
    CHECK(json_is_object(j) && json_object_size(j) == 1);
    map = json_object_get(j, "NodeNameToMetaVictims");
    CHECK(json_is_object(map) && json_object_size(map) == kept);
    for (i = 0; i < x->n_nodes; i++) {
        json_t *mv = json_object_get(map, x->nodes[i].node), *pods;
        size_t k = 0;

        if (!keep_node[i]) {
            CHECK(mv == NULL); /* node names are distinct, so absent */
            continue;
        }
        CHECK(json_is_object(mv) && json_object_size(mv) == 2);
        CHECK(json_integer_value(json_object_get(mv, "NumPDBViolations")) ==
              x->nodes[i].num_pdb_violations);
        pods = json_object_get(mv, "Pods");
        CHECK(json_is_array(pods));
        for (v = 0; v < x->nodes[i].n_pods; v++) {
            json_t *p;
            if (keep_victim[i] && !keep_victim[i][v])
                continue;
            p = json_array_get(pods, k++);
            CHECK(json_object_size(p) == 1);
            CHECK(strcmp(json_string_value(json_object_get(p, "UID")), x->nodes[i].uids[v]) == 0);
        }
        CHECK(json_array_size(pods) == k);
    }
    json_decref(j);
    common_buf_free(&b);
    for (i = 0; i < x->n_nodes; i++)
        free(keep_victim[i]);
    free(keep_victim);
    free(keep_node);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    struct extender_limits lim = {1 << 20, 256, 32};
    struct extender_preempt_args *x = (struct extender_preempt_args *)&lim;
    struct common_arena *a;
    struct common_error err;
    enum common_rc rc;
    uint32_t i, v;

    if (!ready) {
        common_alloc_init();
        ready = 1;
    }
    a = common_arena_create(0);
    CHECK(a);
    rc = extender_decode_preempt_args(a, (const char *)data, size, &lim, &x, &err);
    if (rc != COMMON_OK) {
        CHECK(rc == COMMON_EINVAL || rc == COMMON_ETOOBIG);
        CHECK(err.code == rc && err.msg[0] && x == NULL);
    } else {
        CHECK(x && x->pod && x->pod_group && x->nodes && x->n_nodes <= lim.max_nodes);
        CHECK(x->pod->name[0] && x->pod->namespace[0] && x->pod->uid[0]);
        CHECK(extender_json_check((const char *)data, size, &err) == COMMON_OK);
        for (i = 0; i < x->n_nodes; i++) {
            const struct extender_victims *vi = &x->nodes[i];
            CHECK(vi->node && vi->node[0] && strlen(vi->node) <= EXTENDER_NAME_MAX);
            CHECK(vi->n_pods <= lim.max_victims && vi->uids && vi->num_pdb_violations >= 0);
            CHECK(x->cache_capable ? vi->pods == NULL : vi->pods != NULL);
            for (v = 0; v < vi->n_pods; v++) {
                CHECK(vi->uids[v] && vi->uids[v][0]);
                if (!x->cache_capable)
                    CHECK(vi->pods[v] && strcmp(vi->pods[v]->uid, vi->uids[v]) == 0);
            }
            for (v = 0; v < i; v++)
                CHECK(strcmp(x->nodes[v].node, vi->node) != 0);
        }
        check_answer(x, data, size);
    }
    common_arena_destroy(a);
    return 0;
}
