/*
 * trainjob/defaults.c - the objects as the API server stores them and as Trainer reads them.
 *
 * A runtime that Trainer builds from has been through two steps that change its text:
 *  1. The API server's structural defaulting: every `default:` of the CRD schema is written
 *     where the field is absent and its parent object exists (Kubernetes "Defaulting" for
 *     CustomResourceDefinitions). The table below lists every default of the Trainer v2.3.0
 *     (Cluster)TrainingRuntime CRD (ours carry the same ones); tests/unit/test_defaults.c
 *     checks the table against the CRD files.
 *  2. Trainer decodes the runtime into its Go types and writes the JobSet and the runtime
 *     snapshot from them, so a JobSet field tagged `omitempty` that holds its zero value is
 *     not written (for example `failurePolicy.maxRestarts: 0`).
 * tj_default_runtime applies both, so the JobSet and the snapshot are built from the runtime
 * Trainer would see. Only decoded JSON in and out: no I/O.
 */
#include <string.h>

#include "trainjob/trainjob_int.h"

/* Where a table row applies: the runtime object, each pod template's PodSpec, or each
 * container (regular, init and ephemeral) of those pod templates. */
enum tj_default_scope { TJ_AT_RUNTIME, TJ_AT_POD, TJ_AT_CONTAINER };

struct tj_default {
    enum tj_default_scope scope;
    const char *at;    /* dotted path of the parent object; "x[]" walks every item of list x */
    const char *key;   /* the field defaulted inside it */
    const char *value; /* the default as JSON text */
};

static const struct tj_default crd_defaults[] = {
    {TJ_AT_RUNTIME, "spec.mlPolicy.flux", "numProcPerNode", "1"},
    {TJ_AT_RUNTIME, "spec.mlPolicy.mpi", "mpiImplementation", "\"OpenMPI\""},
    {TJ_AT_RUNTIME, "spec.mlPolicy.mpi", "numProcPerNode", "1"},
    {TJ_AT_RUNTIME, "spec.mlPolicy.mpi", "runLauncherAsNode", "false"},
    {TJ_AT_RUNTIME, "spec.mlPolicy.mpi", "sshAuthMountPath", "\"/root/.ssh\""},
    {TJ_AT_RUNTIME, "spec.podGroupPolicy.coscheduling", "scheduleTimeoutSeconds", "60"},
    {TJ_AT_RUNTIME, "spec.podGroupPolicy.volcano.networkTopology", "highestTierAllowed", "1"},
    {TJ_AT_RUNTIME, "spec.podGroupPolicy.volcano.networkTopology", "mode", "\"hard\""},
    {TJ_AT_RUNTIME, "spec.template.spec.failurePolicy", "restartStrategy", "\"Recreate\""},
    {TJ_AT_RUNTIME, "spec.template.spec.replicatedJobs[]", "groupName", "\"default\""},
    {TJ_AT_RUNTIME, "spec.template.spec.replicatedJobs[]", "replicas", "1"},
    {TJ_AT_RUNTIME, "spec.template.spec.volumeClaimPolicies[].retentionPolicy", "whenDeleted",
     "\"Delete\""},
    {TJ_AT_POD, "imagePullSecrets[]", "name", "\"\""},
    {TJ_AT_POD, "volumes[].azureDisk", "fsType", "\"ext4\""},
    {TJ_AT_POD, "volumes[].azureDisk", "readOnly", "false"},
    {TJ_AT_POD, "volumes[].cephfs.secretRef", "name", "\"\""},
    {TJ_AT_POD, "volumes[].cinder.secretRef", "name", "\"\""},
    {TJ_AT_POD, "volumes[].configMap", "name", "\"\""},
    {TJ_AT_POD, "volumes[].csi.nodePublishSecretRef", "name", "\"\""},
    {TJ_AT_POD, "volumes[].flexVolume.secretRef", "name", "\"\""},
    {TJ_AT_POD, "volumes[].iscsi", "iscsiInterface", "\"default\""},
    {TJ_AT_POD, "volumes[].iscsi.secretRef", "name", "\"\""},
    {TJ_AT_POD, "volumes[].projected.sources[].configMap", "name", "\"\""},
    {TJ_AT_POD, "volumes[].projected.sources[].secret", "name", "\"\""},
    {TJ_AT_POD, "volumes[].rbd", "keyring", "\"/etc/ceph/keyring\""},
    {TJ_AT_POD, "volumes[].rbd", "pool", "\"rbd\""},
    {TJ_AT_POD, "volumes[].rbd", "user", "\"admin\""},
    {TJ_AT_POD, "volumes[].rbd.secretRef", "name", "\"\""},
    {TJ_AT_POD, "volumes[].scaleIO", "fsType", "\"xfs\""},
    {TJ_AT_POD, "volumes[].scaleIO", "storageMode", "\"ThinProvisioned\""},
    {TJ_AT_POD, "volumes[].scaleIO.secretRef", "name", "\"\""},
    {TJ_AT_POD, "volumes[].storageos.secretRef", "name", "\"\""},
    {TJ_AT_CONTAINER, "env[].valueFrom.configMapKeyRef", "name", "\"\""},
    {TJ_AT_CONTAINER, "env[].valueFrom.fileKeyRef", "optional", "false"},
    {TJ_AT_CONTAINER, "env[].valueFrom.secretKeyRef", "name", "\"\""},
    {TJ_AT_CONTAINER, "envFrom[].configMapRef", "name", "\"\""},
    {TJ_AT_CONTAINER, "envFrom[].secretRef", "name", "\"\""},
    {TJ_AT_CONTAINER, "livenessProbe.grpc", "service", "\"\""},
    {TJ_AT_CONTAINER, "readinessProbe.grpc", "service", "\"\""},
    {TJ_AT_CONTAINER, "startupProbe.grpc", "service", "\"\""},
    {TJ_AT_CONTAINER, "ports[]", "protocol", "\"TCP\""},
};

/* JobSet fields that Go's encoding/json leaves out when they hold their zero value (non-pointer
 * fields tagged `omitempty` in jobset.x-k8s.io/v1alpha2), relative to the runtime object. */
static const struct tj_default go_omitempty[] = {
    {TJ_AT_RUNTIME, "spec.template.spec.failurePolicy", "maxRestarts", "0"},
    {TJ_AT_RUNTIME, "spec.template.spec.failurePolicy", "restartStrategy", "\"\""},
    {TJ_AT_RUNTIME, "spec.template.spec.replicatedJobs[]", "groupName", "\"\""},
    {TJ_AT_RUNTIME, "spec.template.spec.replicatedJobs[]", "replicas", "0"},
    {TJ_AT_RUNTIME, "spec.template.spec.network", "subdomain", "\"\""},
};

#define POD_SPEC_PATH "spec.template.spec.replicatedJobs[].template.spec.template.spec"

static const char *const container_lists[] = {"containers", "initContainers",
                                              "ephemeralContainers"};

/* Call fn(obj, row) on every object that path (from node) reaches; -1 when fn fails. */
static int walk_path(json_t *node, const char *path, const struct tj_default *row,
                     int (*fn)(json_t *obj, const struct tj_default *row))
{
    char seg[128];
    const char *dot;
    size_t n;
    json_t *next;
    int list;

    if (!json_is_object(node))
        return 0;
    if (!*path)
        return fn(node, row);
    dot = strchr(path, '.');
    n = dot ? (size_t)(dot - path) : strlen(path);
    if (n >= sizeof(seg))
        return 0;
    memcpy(seg, path, n);
    seg[n] = '\0';
    list = n > 2 && strcmp(seg + n - 2, "[]") == 0;
    if (list)
        seg[n - 2] = '\0';
    next = json_object_get(node, seg);
    path = dot ? dot + 1 : path + n;
    if (list) {
        size_t i;
        json_t *it;
        json_array_foreach(next, i, it)
        {
            if (walk_path(it, path, row, fn))
                return -1;
        }
        return 0;
    }
    return walk_path(next, path, row, fn);
}

static int set_absent(json_t *obj, const struct tj_default *row)
{
    json_t *v;

    if (json_object_get(obj, row->key) && !json_is_null(json_object_get(obj, row->key)))
        return 0;
    v = json_loads(row->value, JSON_DECODE_ANY, NULL);
    return v ? json_object_set_new(obj, row->key, v) : -1;
}

static int drop_zero(json_t *obj, const struct tj_default *row)
{
    json_t *v = json_loads(row->value, JSON_DECODE_ANY, NULL);
    int eq;

    if (!v)
        return -1;
    eq = json_equal(json_object_get(obj, row->key), v);
    json_decref(v);
    if (eq)
        json_object_del(obj, row->key);
    return 0;
}

/* one row, from the runtime root: its scope says which objects it starts from */
static int apply_row(json_t *rt, const struct tj_default *row,
                     int (*fn)(json_t *obj, const struct tj_default *row))
{
    char path[512];

    if (row->scope == TJ_AT_RUNTIME)
        return walk_path(rt, row->at, row, fn);
    if (row->scope == TJ_AT_POD) {
        snprintf(path, sizeof(path), "%s.%s", POD_SPEC_PATH, row->at);
        return walk_path(rt, path, row, fn);
    }
    for (size_t i = 0; i < sizeof(container_lists) / sizeof(container_lists[0]); i++) {
        snprintf(path, sizeof(path), "%s.%s[].%s", POD_SPEC_PATH, container_lists[i], row->at);
        if (walk_path(rt, path, row, fn))
            return -1;
    }
    return 0;
}

int tj_crd_default_runtime(json_t *rt)
{
    for (size_t i = 0; i < sizeof(crd_defaults) / sizeof(crd_defaults[0]); i++)
        if (apply_row(rt, &crd_defaults[i], set_absent))
            return -1;
    return 0;
}

int tj_go_roundtrip_runtime(json_t *rt)
{
    for (size_t i = 0; i < sizeof(go_omitempty) / sizeof(go_omitempty[0]); i++)
        if (apply_row(rt, &go_omitempty[i], drop_zero))
            return -1;
    return 0;
}

json_t *tj_default_runtime(const json_t *rt)
{
    json_t *d = json_deep_copy(rt);

    if (d && (tj_crd_default_runtime(d) || tj_go_roundtrip_runtime(d))) {
        json_decref(d);
        return NULL;
    }
    return d;
}

static void set_default(json_t *obj, const char *key, json_t *value)
{
    if (!obj || json_object_get(obj, key)) {
        json_decref(value);
        return;
    }
    json_object_set_new(obj, key, value);
}

json_t *tj_default_trainjob(const json_t *tj, const char *default_ns)
{
    json_t *d = json_deep_copy(tj);
    json_t *spec, *ref, *meta;

    if (!d)
        return NULL;
    meta = json_object_get(d, "metadata");
    if (json_is_object(meta))
        set_default(meta, "namespace", json_string(default_ns ? default_ns : "default"));
    spec = json_object_get(d, "spec");
    if (!json_is_object(spec))
        return d;
    set_default(spec, "suspend", json_false());
    set_default(spec, "managedBy", json_string(TJ_CONTROLLER));
    ref = json_object_get(spec, "runtimeRef");
    if (json_is_object(ref)) {
        set_default(ref, "apiGroup", json_string(TJ_GROUP));
        set_default(ref, "kind", json_string("ClusterTrainingRuntime"));
    }
    return d;
}
