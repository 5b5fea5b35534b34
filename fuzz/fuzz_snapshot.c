/*
 * fuzz/fuzz_snapshot.c - libFuzzer target for rc_snapshot_runtime (reconciler/core.h), the
 * decoder of a runtime snapshot ConfigMap (trainer.md §2.2).
 *
 * The input bytes become `data.runtime` of the ConfigMap alpha-runtime-snapshot in namespace
 * default, controlled by a fixed TrainJob (uid and ownerReference match, runtimeRef names the
 * ClusterTrainingRuntime torch-distributed), so every input reaches the YAML decoder and the
 * name/kind/group checks. Input that is not UTF-8 is passed as is (json_stringn_nocheck), as a
 * string the API server sent could not be, but the decoder must not care.
 *
 * Any answer is fine as long as it is consistent: COMMON_OK with the runtime the TrainJob names
 * (an object with that name, kind and group), or COMMON_EINVAL with a message that names the
 * snapshot and *runtime NULL; nothing else (COMMON_ENOMEM aside). A crash, a sanitizer report,
 * a leak or an inconsistent answer aborts. Seeds: fuzz/corpus/snapshot/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "reconciler/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TJ_UID "6f1c2a7e-3b9d-4e52-a8c0-1d2e3f405162"
#define PREFIX "runtime snapshot default/alpha-runtime-snapshot: "

static json_t *trainjob;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "fuzz_snapshot: %s: %s\n", what, msg ? msg : "");
    abort();
}

static json_t *new_trainjob(void)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:{s:s}, s:b}}", "apiVersion",
                     "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name",
                     "alpha", "namespace", "default", "uid", TJ_UID, "spec", "runtimeRef", "name",
                     "torch-distributed", "suspend", 0);
}

/* The snapshot ConfigMap with data.runtime = value (stolen), or NULL on no memory. */
static json_t *new_configmap(json_t *value)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:{s:o}}",
                     "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name",
                     "alpha-runtime-snapshot", "namespace", "default", "ownerReferences",
                     "apiVersion", "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "name",
                     "alpha", "uid", TJ_UID, "controller", 1, "blockOwnerDeletion", 1, "data",
                     "runtime", value);
}

static void check_accepted(const json_t *rt)
{
    const char *name, *kind, *api;

    if (!json_is_object(rt))
        die("accepted", "runtime is not an object");
    name = json_string_value(json_object_get(json_object_get(rt, "metadata"), "name"));
    kind = json_string_value(json_object_get(rt, "kind"));
    api = json_string_value(json_object_get(rt, "apiVersion"));
    if (!name || strcmp(name, "torch-distributed") != 0)
        die("accepted", "a runtime of another name");
    if (!kind || strcmp(kind, "ClusterTrainingRuntime") != 0)
        die("accepted", "a runtime of another kind");
    if (!api || strncmp(api, "trainer.kubeflow.org/", 21) != 0)
        die("accepted", "a runtime of another group");
    if (rt->refcount != 1)
        die("accepted", "the caller does not hold the only reference");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct common_error err;
    json_t *value, *cm, *rt = (json_t *)(uintptr_t)1;
    enum common_rc rc;

    if (!trainjob) {
        common_alloc_init();
        trainjob = new_trainjob();
        if (!trainjob)
            die("setup", "no memory");
    }
    value = json_stringn((const char *)data, size);
    if (!value)
        value = json_stringn_nocheck((const char *)data, size);
    if (!value)
        return 0;
    cm = new_configmap(value);
    if (!cm)
        return 0;
    common_error_clear(&err);
    rc = rc_snapshot_runtime(trainjob, cm, &rt, &err);
    switch (rc) {
    case COMMON_OK:
        check_accepted(rt);
        break;
    case COMMON_EINVAL:
        if (rt != NULL)
            die("rejected", "*runtime is not NULL");
        if (err.code != COMMON_EINVAL || strncmp(err.msg, PREFIX, strlen(PREFIX)) != 0 ||
            strlen(err.msg) <= strlen(PREFIX))
            die("rejected without naming the snapshot and the reason", err.msg);
        break;
    case COMMON_ENOMEM:
        if (rt != NULL)
            die("no memory", "*runtime is not NULL");
        break;
    default:
        die(common_rc_name(rc), err.msg);
    }
    json_decref(rt);
    json_decref(cm);
    return 0;
}
