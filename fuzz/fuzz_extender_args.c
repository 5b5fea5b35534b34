/*
 * fuzz/fuzz_extender_args.c - libFuzzer target for extender_decode_args (filter and prioritize
 * bodies) and the two encoders that answer them.
 *
 * Every input is decoded with small caps. A failure must be COMMON_EINVAL or COMMON_ETOOBIG
 * with a message and no result (COMMON_ENOMEM without an injected failure is a finding: it is
 * how a disagreement between the scanner and jansson would surface). A success must hold the
 * invariants of struct extender_args, and then a filter answer (verdicts drawn from the input)
 * and a prioritize answer are encoded, parsed back with jansson and checked: every name or
 * node object in them is the request's own, in request order, in the right list, and the
 * null/empty rules hold. Last, the scanner alone (extender_json_check) is compared with
 * jansson on the raw input (jansson is laxer in one way: it reads a NUL byte as the end). Any
 * broken property aborts. Seeds: fuzz/corpus/extender_args (the filter and prioritize fixtures),
 * e.g.
 *   ./fuzz_extender_args -max_len=65536 corpus-dir ../fuzz/corpus/extender_args
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

/* nesting - deepest bracket nesting of a valid JSON text (strings skipped). */
static int nesting(const uint8_t *p, size_t n)
{
    int depth = 0, max = 0, in_str = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        if (in_str) {
            if (p[i] == '\\')
                i++;
            else if (p[i] == '"')
                in_str = 0;
        } else if (p[i] == '"') {
            in_str = 1;
        } else if (p[i] == '[' || p[i] == '{') {
            if (++depth > max)
                max = depth;
        } else if (p[i] == ']' || p[i] == '}') {
            depth--;
        }
    }
    return max;
}

/* The scanner and jansson agree, except where jansson is stricter than JSON or the nesting
 * is over our cap. */
static void differential(const uint8_t *data, size_t size)
{
    struct common_error err;
    json_error_t je;
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    enum common_rc rc = extender_json_check((const char *)data, size, &err);

    if (j) {
        /* jansson also stops at a NUL byte as if the input ended there */
        CHECK(rc == COMMON_OK || nesting(data, size) > EXTENDER_JSON_MAX_DEPTH ||
              memchr(data, 0, size) != NULL);
        json_decref(j);
    } else if (rc == COMMON_OK) {
        enum json_error_code code = json_error_code(&je);
        CHECK(code == json_error_null_character || code == json_error_null_byte_in_key ||
              code == json_error_numeric_overflow);
    }
}

static const char *const reasons[] = {"", "gang llama: block b1 cannot host 8 more pods",
                                      "quote \" and \\ and \n", "bad \xff byte", "\xe2\x82"};

static void check_filter(const struct extender_args *x, const uint8_t *data, size_t size)
{
    struct common_buf b;
    struct common_error err;
    uint8_t *verdict = calloc(x->n_nodes + 1, 1);
    const char **reason = calloc(x->n_nodes + 1, sizeof(char *));
    json_t *j, *nodes, *names, *failed, *unres;
    size_t pass = 0, k = 0;
    uint32_t i;

    CHECK(verdict && reason);
    for (i = 0; i < x->n_nodes; i++) {
        uint8_t h = data[(i * 7u) % size];
        verdict[i] = (uint8_t)((h + i) % 4);
        reason[i] = reasons[(h >> 2) % 5];
        pass += verdict[i] == EXTENDER_PASS;
    }
    common_buf_init(&b, (size_t)1 << 26);
    CHECK(extender_encode_filter_result(&b, x, verdict, reason, &err) == COMMON_OK);
    j = json_loadb(b.data, b.len, 0, NULL);
    CHECK(j && json_object_size(j) == 5);
    nodes = json_object_get(j, "Nodes");
    names = json_object_get(j, "NodeNames");
    failed = json_object_get(j, "FailedNodes");
    unres = json_object_get(j, "FailedAndUnresolvableNodes");
    CHECK(json_is_object(failed) && json_is_object(unres));
    CHECK(json_is_string(json_object_get(j, "Error")));
    CHECK(json_string_length(json_object_get(j, "Error")) == 0);
    if (x->cache_capable) {
        CHECK(json_is_null(nodes) && json_is_array(names) && json_array_size(names) == pass);
    } else {
        CHECK(json_is_null(names) && json_is_object(nodes));
        names = json_object_get(nodes, "items");
        CHECK(json_is_array(names) && json_array_size(names) == pass);
    }
    for (i = 0; i < x->n_nodes; i++) {
        if (verdict[i] == EXTENDER_PASS) {
            json_t *item = json_array_get(names, k++);
            if (x->cache_capable) {
                CHECK(json_is_string(item) &&
                      strcmp(json_string_value(item), x->node_names[i]) == 0);
            } else {
                json_t *orig = json_loadb(x->nodes_json[i].data, x->nodes_json[i].len, 0, NULL);
                CHECK(orig && json_equal(orig, item));
                json_decref(orig);
            }
        } else if (verdict[i] != EXTENDER_DROP) {
            /* a name repeated in the request may appear in both maps: look it up */
            json_t *m = verdict[i] == EXTENDER_FAIL ? failed : unres;
            CHECK(json_is_string(json_object_get(m, x->node_names[i])));
        }
    }
    /* nothing in the failure maps that the request did not hold */
    {
        const char *key;
        json_t *v;
        json_object_foreach(failed, key, v)
        {
            CHECK(extender_args_node_index(x, key) >= 0);
        }
        json_object_foreach(unres, key, v)
        {
            CHECK(extender_args_node_index(x, key) >= 0);
        }
    }
    json_decref(j);
    common_buf_free(&b);
    free(verdict);
    free(reason);
}

static void check_priorities(const struct extender_args *x, const uint8_t *data, size_t size)
{
    struct common_buf b;
    struct common_error err;
    int64_t *score = calloc(x->n_nodes + 1, sizeof(int64_t));
    size_t want = 0, k = 0;
    uint32_t i;
    json_t *j;

    CHECK(score);
    for (i = 0; i < x->n_nodes; i++) {
        score[i] = (int64_t)((data[(i * 13u) % size] + i) % 12) - 1; /* -1 omits */
        want += score[i] != EXTENDER_SCORE_OMIT;
    }
    common_buf_init(&b, (size_t)1 << 26);
    CHECK(extender_encode_priorities(&b, x, score, &err) == COMMON_OK);
    j = json_loadb(b.data, b.len, 0, NULL);
    CHECK(json_is_array(j) && json_array_size(j) == want);
    for (i = 0; i < x->n_nodes; i++) {
        json_t *e;
        if (score[i] == EXTENDER_SCORE_OMIT)
            continue;
        e = json_array_get(j, k++);
        CHECK(json_object_size(e) == 2);
        CHECK(strcmp(json_string_value(json_object_get(e, "Host")), x->node_names[i]) == 0);
        CHECK(json_integer_value(json_object_get(e, "Score")) == score[i]);
    }
    json_decref(j);
    /* a score out of range is refused and the buffer left alone */
    if (x->n_nodes) {
        size_t len = b.len;
        score[0] = EXTENDER_MAX_SCORE + 1;
        CHECK(extender_encode_priorities(&b, x, score, &err) == COMMON_EINVAL);
        CHECK(b.len == len);
    }
    common_buf_free(&b);
    free(score);
}

/* the metadata-first decode (then the rest of the Pod) accepts exactly what the full decode
 * accepts (full_rc), with the same pod identity */
static void meta_first(const uint8_t *data, size_t size, const struct extender_limits *lim,
                       enum common_rc full_rc)
{
    struct common_arena *a = common_arena_create(0);
    struct extender_args *x = NULL;
    struct common_error err;
    enum common_rc rc;

    CHECK(a);
    rc = extender_decode_args_meta(a, (const char *)data, size, lim, &x, &err);
    if (rc == COMMON_OK) {
        CHECK(x && x->pod && x->pod_meta_only && x->pod->uid[0]);
        rc = extender_decode_args_pod(a, x, &err);
    }
    CHECK((rc == COMMON_OK) == (full_rc == COMMON_OK));
    if (rc == COMMON_OK)
        CHECK(!x->pod_meta_only && x->pod->name[0] && x->pod->namespace[0]);
    common_arena_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    struct extender_limits lim = {1 << 20, 512, 64};
    struct extender_args *x = (struct extender_args *)&lim;
    struct common_arena *a;
    struct common_error err;
    enum common_rc rc;
    uint32_t i;

    if (!ready) {
        common_alloc_init();
        ready = 1;
    }
    a = common_arena_create(0);
    CHECK(a);
    rc = extender_decode_args(a, (const char *)data, size, &lim, &x, &err);
    if (rc != COMMON_OK) {
        CHECK(rc == COMMON_EINVAL || rc == COMMON_ETOOBIG);
        CHECK(err.code == rc && err.msg[0] && x == NULL);
    } else {
        CHECK(x && x->pod && x->pod_group && x->node_names && x->n_nodes <= lim.max_nodes);
        CHECK(x->pod->name[0] && x->pod->namespace[0] && x->pod->uid[0]);
        CHECK(extender_json_check((const char *)data, size, &err) == COMMON_OK);
        for (i = 0; i < x->n_nodes; i++) {
            size_t n = strlen(x->node_names[i]);
            CHECK(n > 0 && n <= EXTENDER_NAME_MAX);
        }
        if (x->cache_capable) {
            CHECK(!x->nodes && !x->nodes_json);
        } else {
            CHECK(x->nodes && x->nodes_json);
            for (i = 0; i < x->n_nodes; i++) {
                CHECK(x->nodes[i] && strcmp(x->nodes[i]->name, x->node_names[i]) == 0);
                CHECK(x->nodes_json[i].len && x->nodes_json[i].data[0] == '{');
                CHECK(extender_json_check(x->nodes_json[i].data, x->nodes_json[i].len, &err) ==
                      COMMON_OK);
            }
        }
        if (size) {
            check_filter(x, data, size);
            check_priorities(x, data, size);
        }
    }
    common_arena_destroy(a);
    meta_first(data, size, &lim, rc);
    differential(data, size);
    return 0;
}
