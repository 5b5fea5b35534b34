/*
 * trainjob/context.c - the build context's helpers, shared by the pipeline (build.c), the
 * policies (policy_*.c, podgroup.c) and the checks (validate.c): PodSet lookups, the owner
 * metadata every object carries, endpoint lists, and the steps several ML policies share.
 * Uses only podspec.c and errors.c below it, so the files of trainjob/ depend one way:
 * podspec, errors -> context, defaults, schema -> validate, policy_*, podgroup -> policies ->
 * build.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainjob/trainjob_int.h"

static void decref_cb(void *p)
{
    json_decref((json_t *)p);
}

/* keep a new reference alive until the arena dies; returns v (NULL stays NULL) */
json_t *tj_own(struct common_arena *a, json_t *v)
{
    if (v && common_arena_on_destroy(a, decref_cb, v))
        return NULL;
    return v;
}

json_t *own_json(struct tj_ctx *c, json_t *v)
{
    return tj_own(c->arena, v);
}

struct tj_podset *tj_podset(struct tj_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->npodsets; i++)
        if (strcmp(c->podsets[i].name, name) == 0)
            return &c->podsets[i];
    return NULL;
}

struct tj_podset *tj_trainer_podset(struct tj_ctx *c)
{
    for (size_t i = 0; i < c->npodsets; i++)
        if (c->podsets[i].ancestor && strcmp(c->podsets[i].ancestor, "trainer") == 0)
            return &c->podsets[i];
    return NULL;
}

const json_t *tj_gpu_resources(struct tj_ctx *c)
{
    struct tj_podset *ps;

    if (c->resources)
        return c->resources;
    ps = tj_trainer_podset(c);
    if (!ps || !c->runtime_trainer_resources)
        return NULL;
    return c->runtime_trainer_resources;
}

/* where the runtime (as given) holds its trainer node container's resources: *path gets
 * "spec.template.spec.replicatedJobs[i].template.spec.template.spec.containers[j].resources";
 * NULL when the runtime has none there */
static const json_t *runtime_gpu_resources(struct tj_ctx *c, char *path, size_t n)
{
    struct tj_podset *tp = tj_trainer_podset(c);
    const json_t *rjobs = tj_get(c->runtime_doc, "spec.template.spec.replicatedJobs");
    size_t i, j;
    json_t *rj, *ct;

    json_array_foreach(rjobs, i, rj)
    {
        if (!tp || !json_is_object(rj) || !tj_str(rj, "name") ||
            strcmp(tj_str(rj, "name"), tp->name) != 0)
            continue;
        json_array_foreach(tj_get(rj, "template.spec.template.spec.containers"), j, ct)
        {
            if (!json_is_object(ct) || !tj_str(ct, "name") || strcmp(tj_str(ct, "name"), "node"))
                continue;
            snprintf(path, n,
                     "spec.template.spec.replicatedJobs[%zu].template.spec.template.spec."
                     "containers[%zu].resources",
                     i, j);
            return json_object_get(ct, "resources");
        }
    }
    return NULL;
}

int64_t tj_gpu_count_int32(struct tj_ctx *c, int64_t pods, const char *what)
{
    const json_t *res = tj_gpu_resources(c);
    int64_t gpus = tj_gpu_count(res);
    const json_t *doc = c->trainjob, *node = NULL;
    const char *list = NULL, *key = NULL;
    char base[300], path[600];

    if (pods < 1)
        pods = 1;
    if (gpus <= INT32_MAX / pods)
        return gpus;
    snprintf(base, sizeof(base), "spec.trainer.resourcesPerNode");
    if (res != c->resources) { /* the runtime's own resources (a copy): name them there */
        doc = c->runtime_doc;
        res = runtime_gpu_resources(c, base, sizeof(base));
    }
    tj_gpu_find(res, &list, &key, &node);
    snprintf(path, sizeof(path), "%s.%s[%s]", base, list ? list : "limits", key ? key : "gpu");
    tj_err(c->errs, doc, node, "Invalid", path,
           "must be at most %lld GPUs: %s must fit a 32-bit integer (at most %d)",
           (long long)(INT32_MAX / pods), what, INT32_MAX);
    return -1;
}

json_t *tj_owner_meta(struct tj_ctx *c, const char *name)
{
    return json_pack("{s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}", "name", name, "namespace",
                     c->ns, "ownerReferences", "apiVersion", TJ_API_VERSION, "kind", "TrainJob",
                     "name", c->name, "uid", c->uid, "controller", 1, "blockOwnerDeletion", 1);
}

const json_t *tj_struct_value(struct common_arena *a, const json_t *obj, const char *const *keys)
{
    json_t *out;

    if (!json_is_object(obj) || !(out = tj_own(a, json_object())))
        return NULL;
    for (const char *const *k = keys; *k; k++) {
        json_t *v = json_object_get(obj, *k);
        if (v && json_object_set(out, *k, v))
            return NULL;
    }
    return out;
}

const json_t *tj_runtime_ref_value(struct common_arena *a, const json_t *tj)
{
    static const char *const keys[] = {"name", "apiGroup", "kind", NULL};
    json_t *v = (json_t *)tj_struct_value(a, tj_get(tj, "spec.runtimeRef"), keys);

    /* the CRD's defaults, which the API server writes before any webhook sees the TrainJob
     * (render reads it as given) */
    if (v && ((!json_object_get(v, "apiGroup") &&
               json_object_set_new(v, "apiGroup", json_string(TJ_GROUP))) ||
              (!json_object_get(v, "kind") &&
               json_object_set_new(v, "kind", json_string("ClusterTrainingRuntime")))))
        return NULL;
    return v ? tj_struct_value(a, v, keys) : NULL;
}

const json_t *tj_containers_value(struct common_arena *a, const json_t *containers)
{
    /* corev1.Container's fields in declaration order (Kubernetes v1.36) */
    static const char *const keys[] = {"name",
                                       "image",
                                       "command",
                                       "args",
                                       "workingDir",
                                       "ports",
                                       "envFrom",
                                       "env",
                                       "resources",
                                       "resizePolicy",
                                       "restartPolicy",
                                       "restartPolicyRules",
                                       "volumeMounts",
                                       "volumeDevices",
                                       "livenessProbe",
                                       "readinessProbe",
                                       "startupProbe",
                                       "lifecycle",
                                       "terminationMessagePath",
                                       "terminationMessagePolicy",
                                       "imagePullPolicy",
                                       "securityContext",
                                       "stdin",
                                       "stdinOnce",
                                       "tty",
                                       NULL};
    json_t *out = tj_own(a, json_array());
    size_t i;
    json_t *ct;

    if (!out)
        return NULL;
    json_array_foreach(containers, i, ct)
    {
        json_t *v = ct;
        if (json_is_object(ct) && !json_object_get(ct, "resources")) {
            /* resources is a struct, which Go writes even when empty */
            v = tj_own(a, json_copy(ct));
            if (!v || json_object_set_new(v, "resources", json_object()))
                return NULL;
        }
        if (json_is_object(v) && !(v = (json_t *)tj_struct_value(a, v, keys)))
            return NULL;
        if (json_array_append(out, v))
            return NULL;
    }
    return out;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* a ResourceList with its names in Go's map order (sorted), into out[key]; 0, -1: no memory */
static int sorted_list(json_t *out, const char *key, const json_t *list, struct common_arena *a)
{
    size_t n = json_object_size(list), i = 0;
    const char **names;
    const char *k;
    json_t *v, *copy = json_object();

    if (!copy || json_object_set_new(out, key, copy))
        return -1;
    names = common_arena_alloc(a, n * sizeof(*names));
    if (!names)
        return -1;
    json_object_foreach((json_t *)list, k, v) names[i++] = k;
    qsort(names, n, sizeof(*names), cmp_str);
    for (i = 0; i < n; i++)
        if (json_object_set(copy, names[i], json_object_get(list, names[i])))
            return -1;
    return 0;
}

const json_t *tj_resources_value(struct common_arena *a, const json_t *res)
{
    json_t *out;

    if (!json_is_object(res))
        return tj_own(a, json_null());
    if (!(out = tj_own(a, json_object())))
        return NULL;
    /* omitempty: an empty map or list is left out as Go leaves it out */
    if ((json_object_size(json_object_get(res, "limits")) &&
         sorted_list(out, "limits", json_object_get(res, "limits"), a)) ||
        (json_object_size(json_object_get(res, "requests")) &&
         sorted_list(out, "requests", json_object_get(res, "requests"), a)) ||
        (json_array_size(json_object_get(res, "claims")) &&
         json_object_set(out, "claims", json_object_get(res, "claims"))) ||
        tj_normalize_quantities(out))
        return NULL;
    return out;
}

json_t *tj_endpoints(struct tj_ctx *c, const struct tj_podset *ps)
{
    const char *sub = tj_str(c->spec, "network.subdomain");
    json_int_t replicas = json_integer_value(json_object_get(ps->rjob, "replicas"));
    json_t *list = json_array();

    if (!list)
        return NULL;
    if (!sub || !*sub)
        sub = c->name;
    if (!json_is_integer(json_object_get(ps->rjob, "replicas")))
        replicas = 1;
    for (json_int_t r = 0; r < replicas; r++) {
        for (int32_t p = 0; p < ps->count; p++) {
            char buf[600];
            snprintf(buf, sizeof(buf), "%s-%s-%lld-%d.%s", c->name, ps->name, (long long)r, p, sub);
            if (json_array_append_new(list, json_string(buf))) {
                json_decref(list);
                return NULL;
            }
        }
    }
    return list;
}

int64_t tj_podset_replicas(const struct tj_podset *ps)
{
    const json_t *r = json_object_get(ps->rjob, "replicas");
    const char *anc = ps->ancestor;

    /* build_jobset forces these three to 1 */
    if (anc && (strcmp(anc, "dataset-initializer") == 0 || strcmp(anc, "model-initializer") == 0 ||
                strcmp(anc, "trainer") == 0))
        return 1;
    return json_is_integer(r) ? (int64_t)json_integer_value(r) : 1;
}

/* Shared by the policies whose count is spec.trainer.numNodes on the trainer PodSet (torch,
 * jax, xgboost, plain). */
enum common_rc tj_trainer_count(struct tj_ctx *c, struct common_error *err)
{
    struct tj_podset *ps = tj_trainer_podset(c);

    (void)err;
    if (ps && c->has_num_nodes)
        ps->count = c->num_nodes;
    return COMMON_OK;
}

/* Upsert the TrainJob's env into the trainer node container (PlainML and Torch do this). */
enum common_rc tj_trainer_env(struct tj_ctx *c, json_t *container, struct common_error *err)
{
    if (tj_upsert_env(container, json_object_get(c->trainer, "env")))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

/* Reserved env names in spec.trainer.env: one error listing the sorted offenders. */
/* an EnvVar list as Trainer's errors print it: each item's fields in corev1.EnvVar's order
 * (name, value, valueFrom); NULL (print env as given) when out of memory */
static const json_t *env_value(struct common_arena *a, const json_t *env)
{
    static const char *const keys[] = {"name", "value", "valueFrom", NULL};
    json_t *out = tj_own(a, json_array());
    size_t i;
    json_t *e;

    json_array_foreach(env, i, e)
    {
        json_t *v = json_is_object(e) ? (json_t *)tj_struct_value(a, e, keys) : e;
        if (!out || !v || json_array_append(out, v))
            return NULL;
        /* value is omitempty in Go */
        if (json_is_object(e) && json_is_string(json_object_get(v, "value")) &&
            !*json_string_value(json_object_get(v, "value")))
            json_object_del(v, "value");
    }
    return out;
}

void tj_reserved_env(struct tj_ctx *c, const char *const *reserved, const char *gist)
{
    const json_t *env = tj_get(c->trainjob, "spec.trainer.env");
    const char *found[16];
    size_t n = 0, i;
    json_t *e;
    char list[512] = "";

    json_array_foreach(env, i, e)
    {
        const char *name = tj_str(e, "name");
        for (const char *const *r = reserved; name && *r && n < 16; r++)
            if (strcmp(*r, name) == 0)
                found[n++] = name;
    }
    if (!n)
        return;
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && strcmp(found[b - 1], found[b]) > 0; b--) {
            const char *t = found[b];
            found[b] = found[b - 1];
            found[b - 1] = t;
        }
    for (i = 0; i < n; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof(list) - l, "%s%s", i ? " " : "", found[i]);
    }
    tj_err_value(c->errs, c->trainjob, env, env_value(c->arena, env), "Invalid", "spec.trainer.env",
                 "%s: [%s]", gist, list);
}

char *tj_b64(struct common_arena *a, const char *s)
{
    size_t n = strlen(s);
    char *out = common_arena_alloc(a, 4 * ((n + 2) / 3) + 1);

    if (out)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}
