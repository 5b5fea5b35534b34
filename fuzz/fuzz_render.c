/*
 * fuzz/fuzz_render.c - libFuzzer target for the renderer: the input is a YAML/JSON file of
 * TrainJobs and runtimes; every TrainJob is rendered against a runtime from the same input (or
 * a built-in one). Any outcome but a crash, a sanitizer report or a leak is fine; an error must
 * come with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/yaml.h"
#include "trainjob/builtin.h"
#include "trainjob/trainjob.h"

static enum common_rc fake_keygen(struct common_arena *a, char **priv, char **pub,
                                  struct common_error *err)
{
    (void)err;
    *priv =
        common_arena_strdup(a, "-----BEGIN EC PRIVATE KEY-----\n-----END EC PRIVATE KEY-----\n");
    *pub = common_arena_strdup(a, "ecdsa-sha2-nistp521 AAAA");
    return *priv && *pub ? COMMON_OK : COMMON_ENOMEM;
}

static const json_t *pick_runtime(const struct common_yaml_docs *d, const char *name,
                                  struct common_yaml_docs *builtin)
{
    const struct trainjob_builtin *b;

    for (size_t i = 0; i < d->n; i++) {
        const char *k = json_string_value(json_object_get(d->docs[i], "kind"));
        const char *n =
            json_string_value(json_object_get(json_object_get(d->docs[i], "metadata"), "name"));
        if (k && strstr(k, "TrainingRuntime") && n && name && strcmp(n, name) == 0)
            return d->docs[i];
    }
    b = name ? trainjob_builtin_find(name) : NULL;
    if (!b)
        b = trainjob_builtin_find("torch-distributed");
    if (!b || common_yaml_load(b->yaml, b->len, "builtin", NULL, builtin, NULL) || builtin->n != 1)
        return NULL;
    return builtin->docs[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct common_yaml_docs d;
    struct common_error err;
    static int init;

    if (!init) {
        common_alloc_init();
        init = 1;
    }
    memset(&d, 0, sizeof(d));
    if (common_yaml_load((const char *)data, size, "fuzz", NULL, &d, &err) == COMMON_OK) {
        for (size_t i = 0; i < d.n; i++) {
            struct common_yaml_docs builtin;
            struct common_arena *a;
            struct trainjob_output out;
            struct trainjob_options opts = {"default", NULL, fake_keygen, NULL, NULL};
            const json_t *rt;
            const char *k = json_string_value(json_object_get(d.docs[i], "kind"));
            const char *rn = json_string_value(json_object_get(
                json_object_get(json_object_get(d.docs[i], "spec"), "runtimeRef"), "name"));
            enum common_rc rc;

            if (!k || strcmp(k, "TrainJob") != 0)
                continue;
            memset(&builtin, 0, sizeof(builtin));
            rt = pick_runtime(&d, rn, &builtin);
            a = common_arena_create(0);
            if (rt && a) {
                rc = trainjob_render(a, d.docs[i], rt, &opts, &out, &err);
                if (rc != COMMON_OK && err.msg[0] == '\0')
                    abort(); /* every failure must say why */
                json_decref(out.objects);
            }
            common_arena_destroy(a);
            common_yaml_docs_free(&builtin);
        }
    }
    common_yaml_docs_free(&d);
    return 0;
}
