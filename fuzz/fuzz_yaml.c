/*
 * fuzz/fuzz_yaml.c - libFuzzer target for common/yaml.
 *
 * Loads the input as a YAML stream. When that succeeds, every document is emitted and the
 * output loaded again: it must give exactly one document equal (json_equal) to the original,
 * (compared so that keys with a NUL in them count too), or the target aborts. Loading may fail on
 * any input (that is an answer, not a bug); emitting a loaded document may only fail by hitting the
 * output cap (aliases can expand a small input a lot). ASan/UBSan catch the rest.
 *
 * Build (clang): cc -fsanitize=fuzzer,address,undefined -I. fuzz/fuzz_yaml.c common/yaml.c
 *   common/alloc.c common/buf.c common/error.c -lyaml -ljansson -lm
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/yaml.h"

#define OUT_CAP ((size_t)8 * 1024 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* json_equal, but also for object keys with a NUL in them (json_equal looks keys up with
 * strlen). */
static int same(json_t *a, json_t *b)
{
    const char *key;
    size_t klen, i;
    json_t *v;

    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_OBJECT:
        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_object_keylen_foreach(a, key, klen, v)
        {
            json_t *w = json_object_getn(b, key, klen);
            if (!w || !same(v, w))
                return 0;
        }
        return 1;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    default:
        return json_equal(a, b);
    }
}

static void die(const char *what, size_t doc, const char *text, const char *msg)
{
    fprintf(stderr, "fuzz_yaml: %s (document %zu): %s\n--- emitted ---\n%s\n", what, doc,
            msg ? msg : "", text ? text : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    struct common_yaml_limits lim = common_yaml_limits_default();
    struct common_yaml_limits relim;
    struct common_yaml_docs docs = {0};
    struct common_error err = {0};
    size_t i;

    if (!ready) {
        common_alloc_init();
        ready = 1;
    }
    lim.max_nodes = 100000; /* keep alias bombs quick */
    relim = lim;
    relim.max_doc_bytes = OUT_CAP + 1;
    if (common_yaml_load((const char *)data, size, "fuzz", &lim, &docs, &err) != COMMON_OK) {
        if (docs.n != 0)
            die("failed load left documents", 0, NULL, err.msg);
        common_yaml_docs_free(&docs);
        return 0;
    }
    for (i = 0; i < docs.n; i++) {
        struct common_buf out;
        struct common_yaml_docs again = {0};
        enum common_rc rc;

        common_buf_init(&out, OUT_CAP);
        rc = common_yaml_emit(docs.docs[i], &out, &err);
        if (rc == COMMON_ETOOBIG) {
            common_buf_free(&out);
            continue;
        }
        if (rc != COMMON_OK)
            die("emit failed", i, out.data, err.msg);
        rc = common_yaml_load(out.data, out.len, "emitted", &relim, &again, &err);
        if (rc != COMMON_OK)
            die("reload failed", i, out.data, err.msg);
        if (again.n != 1 || !same(again.docs[0], docs.docs[i]))
            die("round trip differs", i, out.data, NULL);
        common_yaml_docs_free(&again);
        common_buf_free(&out);
    }
    common_yaml_docs_free(&docs);
    return 0;
}
