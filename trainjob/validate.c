/*
 * trainjob/validate.c - ObjectMeta, CEL rules and the general webhook checks (field errors are
 * in errors.c, schema defaults in defaults.c).
 *
 * Source: ../shared/reference/trainer.md §1 (schema and CEL), §5.0 (defaults), §5.1 checks 3-14
 * (TrainJob), §5.2 (runtimes), and JobSet's generated-name length rule (cases.md C56).
 * Policy-specific checks (torch, torchtune, mpi, xgboost, volcano) live with their policy.
 */
#include <regex.h>
#include <ctype.h>
#include <string.h>

#include "common/names.h"
#include "trainjob/trainjob_int.h"

#define DEPRECATION_URL                                                                            \
    "https://trainer.kubeflow.org/en/latest/operator-guides/"                                      \
    "runtime.html#runtime-deprecation-policy"

/* ---- ObjectMeta, as the API server validates it for every object ---- */

#define ANNOTATIONS_MAX (256 * 1024) /* total bytes of keys and values */

void tj_object_meta(const json_t *obj, int namespaced, struct trainjob_errors *e)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const json_t *v = json_object_get(meta, "namespace");
    const json_t *labels = json_object_get(meta, "labels");
    const json_t *ann = json_object_get(meta, "annotations");
    const char *k, *why;
    json_t *val;
    size_t total = 0;
    char path[600];

    if (namespaced && json_is_string(v) && (why = common_names_dns1123_label(json_string_value(v))))
        tj_err(e, obj, v, "Invalid", "metadata.namespace", "Invalid value: \"%s\": %s",
               json_string_value(v), why);
    json_object_foreach((json_t *)labels, k, val)
    {
        snprintf(path, sizeof(path), "metadata.labels[%s]", k);
        if ((why = common_names_qualified_name(k)))
            tj_err(e, obj, val, "Invalid", path, "Invalid value: \"%s\": %s", k, why);
        else if (json_is_string(val) && (why = common_names_label_value(json_string_value(val))))
            tj_err(e, obj, val, "Invalid", path, "Invalid value: \"%s\": %s",
                   json_string_value(val), why);
    }
    json_object_foreach((json_t *)ann, k, val)
    {
        snprintf(path, sizeof(path), "metadata.annotations[%s]", k);
        if ((why = common_names_qualified_name(k)))
            tj_err(e, obj, val, "Invalid", path, "Invalid value: \"%s\": %s", k, why);
        total += strlen(k) + (json_is_string(val) ? json_string_length(val) : 0);
    }
    if (total > ANNOTATIONS_MAX)
        tj_err(e, obj, ann, "TooLong", "metadata.annotations",
               "Too long: may not be more than %d bytes (annotations total %zu bytes)",
               ANNOTATIONS_MAX, total);
}

/* ---- CEL rules (§1.2, §1.5) ---- */

static int uri_ok(const char *s)
{
    /* "" or ^[A-Za-z][A-Za-z0-9+.-]*://.+$ */
    const char *p = s;

    if (!*s)
        return 1;
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
        return 0;
    for (p++; *p && *p != ':'; p++) {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '+' || *p == '.' || *p == '-'))
            return 0;
    }
    return strncmp(p, "://", 3) == 0 && p[3] != '\0' && p[3] != '\n';
}

void tj_cel_trainjob(const json_t *tj, struct trainjob_errors *e)
{
    const json_t *name = tj_get(tj, "metadata.name");
    const json_t *v;
    static const char *const inits[] = {"dataset", "model"};

    if (!name || json_is_null(name)) {
        tj_err(e, tj, name ? name : tj, "Required", "metadata.name",
               "Required value: name is required");
    } else if (json_is_string(name)) {
        const char *s = json_string_value(name);
        if (strlen(s) > 63)
            tj_err(e, tj, name, "Invalid", "metadata.name",
                   "Invalid value: \"%s\": must be no more than 63 characters", s);
        else if (common_names_rfc1035_label(s))
            tj_err(e, tj, name, "Invalid", "metadata.name",
                   "Invalid value: \"%s\": must match RFC 1035 DNS label format "
                   "(^[a-z]([-a-z0-9]*[a-z0-9])?$)",
                   s);
    }
    for (int i = 0; i < 2; i++) {
        char path[64];
        snprintf(path, sizeof(path), "spec.initializer.%s.storageUri", inits[i]);
        v = tj_get(tj, path);
        if (json_is_string(v) && !uri_ok(json_string_value(v)))
            tj_err(e, tj, v, "Invalid", path,
                   "Invalid value: \"%s\": storageUri must be empty or a URI like scheme://path",
                   json_string_value(v));
    }
    v = tj_get(tj, "spec.trainer.numProcPerNode");
    if (json_is_integer(v) && json_integer_value(v) < 1)
        tj_err(e, tj, v, "Invalid", "spec.trainer.numProcPerNode",
               "Invalid value: %lld: numProcPerNode must be greater than or equal to 1",
               (long long)json_integer_value(v));
    v = tj_get(tj, "spec.managedBy");
    if (json_is_string(v) && strcmp(json_string_value(v), TJ_CONTROLLER) != 0 &&
        strcmp(json_string_value(v), "kueue.x-k8s.io/multikueue") != 0)
        tj_err(e, tj, v, "Invalid", "spec.managedBy",
               "Invalid value: \"%s\": managedBy must be one of \"%s\" or "
               "\"kueue.x-k8s.io/multikueue\"",
               json_string_value(v), TJ_CONTROLLER);
    if (json_is_object(tj_get(tj, "spec")) && json_object_size(tj_get(tj, "spec")) == 0)
        tj_err(e, tj, tj_get(tj, "spec"), "Required", "spec.runtimeRef", "Required value");
}

/* a union member is set: present and not null */
static int set_member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return v && !json_is_null(v);
}

void tj_cel_runtime(const json_t *rt, struct trainjob_errors *e)
{
    static const char *const sources[] = {"torch", "mpi", "jax", "xgboost", "flux"};
    const json_t *ml = tj_get(rt, "spec.mlPolicy");
    const json_t *spec = tj_get(rt, "spec");
    const json_t *v, *targets, *rjobs, *pgp;
    int nsrc = 0;
    size_t i;
    json_t *it;

    if (json_is_object(spec) && json_object_size(spec) == 0)
        tj_err(e, rt, spec, "Invalid", "spec", "should have at least 1 properties");
    if (json_is_object(tj_get(rt, "spec.template")) &&
        json_object_size(tj_get(rt, "spec.template")) == 0)
        tj_err(e, rt, tj_get(rt, "spec.template"), "Invalid", "spec.template",
               "should have at least 1 properties");
    for (int k = 0; k < 5; k++)
        nsrc += set_member(ml, sources[k]);
    if (nsrc > 1)
        tj_err(e, rt, ml, "Invalid", "spec.mlPolicy", "Only one of the policy can be configured");
    /* PodGroupPolicySource: "Only one of its members may be specified" (Trainer's API doc; its
     * CRD has no rule, so a runtime with both makes two PodGroups there). The message is the
     * one Trainer's CEL gives the same union on mlPolicy. */
    pgp = tj_get(rt, "spec.podGroupPolicy");
    if (set_member(pgp, "coscheduling") && set_member(pgp, "volcano"))
        tj_err(e, rt, pgp, "Invalid", "spec.podGroupPolicy",
               "Only one of the policy can be configured: coscheduling and volcano are both set");
    v = tj_get(rt, "spec.mlPolicy.mpi.numProcPerNode");
    if (json_is_integer(v) && json_integer_value(v) < 1)
        tj_err(e, rt, v, "Invalid", "spec.mlPolicy.mpi.numProcPerNode",
               "Invalid value: %lld: NumProcPerNode in mpiPolicy must be >= 1",
               (long long)json_integer_value(v));
    v = tj_get(rt, "spec.mlPolicy.flux.numProcPerNode");
    if (json_is_integer(v) && json_integer_value(v) < 1)
        tj_err(e, rt, v, "Invalid", "spec.mlPolicy.flux.numProcPerNode",
               "Invalid value: %lld: numProcPerNode in fluxPolicy must be >= 1",
               (long long)json_integer_value(v));
    targets = tj_get(rt, "spec.mlPolicy.torch.envInjection.targets");
    json_array_foreach(targets, i, it)
    {
        size_t j;
        json_t *cn;
        json_array_foreach(json_object_get(it, "containerNames"), j, cn)
        {
            if (json_is_string(cn) && strcmp(json_string_value(cn), "node") == 0) {
                char path[128];
                snprintf(path, sizeof(path),
                         "spec.mlPolicy.torch.envInjection.targets[%zu].containerNames", i);
                tj_err(e, rt, cn, "Invalid", path,
                       "containerNames must not contain \"node\": PET environment variables are "
                       "always injected into the node container");
            }
        }
        if (json_array_size(json_object_get(it, "containerNames")) == 0) {
            char path[128];
            snprintf(path, sizeof(path),
                     "spec.mlPolicy.torch.envInjection.targets[%zu].containerNames", i);
            tj_err(e, rt, it, "Invalid", path, "should have at least 1 items");
        }
    }
    /* JobSet: InOrder startup and dependsOn are mutually exclusive */
    rjobs = tj_get(rt, "spec.template.spec.replicatedJobs");
    v = tj_get(rt, "spec.template.spec.startupPolicy.startupPolicyOrder");
    if (json_is_string(v) && strcmp(json_string_value(v), "InOrder") == 0) {
        json_array_foreach(rjobs, i, it)
        {
            if (json_array_size(json_object_get(it, "dependsOn")) > 0) {
                tj_err(e, rt, it, "Invalid", "spec.template.spec",
                       "StartupPolicy and DependsOn APIs are mutually exclusive");
                break;
            }
        }
    }
    /* dependsOn must name an earlier replicated job */
    json_array_foreach(rjobs, i, it)
    {
        size_t j;
        json_t *d;
        json_array_foreach(json_object_get(it, "dependsOn"), j, d)
        {
            const char *dn = tj_str(d, "name");
            int found = 0;
            for (size_t k = 0; dn && k < i; k++)
                if (json_is_string(tj_get(json_array_get(rjobs, k), "name")) &&
                    strcmp(tj_str(json_array_get(rjobs, k), "name"), dn) == 0)
                    found = 1;
            if (dn && !found) {
                char path[128];
                snprintf(path, sizeof(path), "spec.template.spec.replicatedJobs[%zu].dependsOn", i);
                tj_err(e, rt, d, "Invalid", path,
                       "dependsOn must name a replicated job listed before this one: \"%s\"", dn);
            }
        }
    }
}

/* ---- runtime webhook (§5.2) ---- */

static const char *required_container(const char *ancestor)
{
    if (!ancestor)
        return NULL;
    if (strcmp(ancestor, "trainer") == 0)
        return "node";
    if (strcmp(ancestor, "dataset-initializer") == 0 || strcmp(ancestor, "model-initializer") == 0)
        return ancestor;
    return NULL;
}

void tj_webhook_runtime(const json_t *rt, struct trainjob_errors *e)
{
    const json_t *rjobs = tj_get(rt, "spec.template.spec.replicatedJobs");
    const char *kind = tj_str(rt, "kind");
    size_t i;
    json_t *it;

    json_array_foreach(rjobs, i, it)
    {
        const json_t *labels = tj_get(it, "template.metadata.labels");
        const char *anc = json_string_value(json_object_get(labels, TJ_ANCESTOR_LABEL));
        const char *need;
        const json_t *rep = json_object_get(it, "replicas");
        char path[160];

        need = required_container(anc);
        if (!need)
            continue;
        if (json_is_integer(rep) && json_integer_value(rep) != 1) {
            snprintf(path, sizeof(path), "spec.template.spec.replicatedJobs[%zu].replicas", i);
            tj_err(e, rt, rep, "Invalid", path, "Invalid value: %lld: always must be 1",
                   (long long)json_integer_value(rep));
        }
        if (!tj_container(tj_get(it, "template.spec.template.spec"), need)) {
            snprintf(path, sizeof(path),
                     "spec.template.spec.replicatedJobs[%zu].template.spec.template.spec."
                     "containers",
                     i);
            const json_t *cts = tj_get(it, "template.spec.template.spec.containers");
            tj_err_value(e, rt, cts, tj_containers_value(e->arena, cts), "Invalid", path,
                         "must contain the required container for the ancestor: %s", anc);
        }
    }
    if (kind && strcmp(kind, "ClusterTrainingRuntime") == 0) {
        const char *sup = json_string_value(
            json_object_get(tj_get(rt, "metadata.labels"), "trainer.kubeflow.org/support"));
        if (sup && strcmp(sup, "deprecated") == 0)
            tj_warn(e,
                    "ClusterTrainingRuntime \"%s\" is deprecated and will be removed in a future "
                    "release of Kubeflow Trainer. See runtime deprecation policy: " DEPRECATION_URL,
                    tj_str(rt, "metadata.name") ? tj_str(rt, "metadata.name") : "");
    }
}

/* ---- TrainJob webhook, general checks (§5.1: 3-14) ---- */

/* Trainer's check of a runtime patch's manager: apimachinery's IsDomainPrefixedPath (v0.36
 * pkg/util/validation), its errors and words, at path */
#define HTTP_PATH_FMT "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"

static void check_manager(struct tj_ctx *c, const json_t *node, const char *path)
{
    const char *m = json_string_value(node);
    const char *slash = strchr(m, '/');
    const char *why, *p;
    char *host;

    if (!*m) {
        tj_err(c->errs, c->trainjob, node, "Required", path, "Required value");
        return;
    }
    if (!slash || slash == m || slash[1] == '\0') {
        tj_err(c->errs, c->trainjob, node, "Invalid", path,
               "must be a domain-prefixed path (such as \"acme.io/foo\")");
        return;
    }
    host = common_arena_strndup(c->arena, m, (size_t)(slash - m));
    if (!host) {
        c->errs->oom = 1;
        return;
    }
    if ((why = common_names_dns1123_subdomain(host)))
        tj_err_value(c->errs, c->trainjob, node, tj_own(c->arena, json_string(host)), "Invalid",
                     path, "%s", why);
    for (p = slash + 1; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("/-._~%!$&'()*+,;=:", *p))
            break;
    if (*p)
        tj_err_value(c->errs, c->trainjob, node, tj_own(c->arena, json_string(slash + 1)),
                     "Invalid", path, "%s",
                     "Invalid path (regex used for validation is '" HTTP_PATH_FMT "')");
}

static void check_initializer(struct tj_ctx *c, const char *which, const char *job,
                              const char *what)
{
    const json_t *tj = c->trainjob;
    const json_t *ref = tj_get(tj, "spec.runtimeRef");
    const json_t *refv = tj_runtime_ref_value(c->arena, tj); /* printed: Trainer's order */
    char path[64];
    struct tj_podset *ps;
    json_t *ct;
    size_t i;
    json_t *m;
    int mounted = 0;

    snprintf(path, sizeof(path), "spec.initializer.%s", which);
    if (!json_is_object(tj_get(tj, path)))
        return;
    ps = tj_podset(c, job);
    if (!ps) {
        tj_err_value(c->errs, tj, ref, refv, "Invalid", "spec.runtimeRef",
                     "must have %s job when trainJob is configured with input %s", job, what);
        return;
    }
    ct = tj_any_container(ps->podspec, job);
    if (!ct) {
        tj_err_value(c->errs, tj, ref, refv, "Invalid", "spec.runtimeRef",
                     "must have container with name - %s in the %s job", job, job);
        return;
    }
    json_array_foreach(json_object_get(ct, "volumeMounts"), i, m)
    {
        if (json_is_string(json_object_get(m, "name")) &&
            strcmp(tj_str(m, "name"), "initializer") == 0)
            mounted = 1;
    }
    if (!mounted)
        tj_err_value(c->errs, tj, ref, refv, "Invalid", "spec.runtimeRef",
                     "must have volumeMount with name - initializer in container %s of the %s job",
                     job, job);
}

static int has_name(const json_t *arr, const char *name)
{
    return tj_find_named(arr, "name", name) != NULL;
}

void tj_webhook_trainjob(struct tj_ctx *c)
{
    const json_t *tj = c->trainjob;
    const json_t *patches = tj_get(tj, "spec.runtimePatches");
    size_t i;
    json_t *p;
    const char *kind = tj_str(c->runtime, "kind");
    const char *sup = json_string_value(
        json_object_get(tj_get(c->runtime, "metadata.labels"), "trainer.kubeflow.org/support"));

    if (kind && strcmp(kind, "ClusterTrainingRuntime") == 0 && sup &&
        strcmp(sup, "deprecated") == 0)
        tj_warn(
            c->errs,
            "Referenced ClusterTrainingRuntime \"%s\" is deprecated and will be removed in a "
            "future release of Kubeflow Trainer. See runtime deprecation policy: " DEPRECATION_URL,
            tj_str(c->runtime, "metadata.name"));

    check_initializer(c, "dataset", "dataset-initializer", "datasetConfig");
    check_initializer(c, "model", "model-initializer", "modelConfig");

    json_array_foreach(patches, i, p)
    {
        const char *mgr = tj_str(p, "manager");
        const json_t *rjobs = tj_get(p, "trainingRuntimeSpec.template.spec.replicatedJobs");
        size_t j;
        json_t *rj;
        char path[200];

        if (mgr) {
            snprintf(path, sizeof(path), "spec.runtimePatches[%zu].manager", i);
            check_manager(c, json_object_get(p, "manager"), path);
        }
        json_array_foreach(rjobs, j, rj)
        {
            /* names are checked against the runtime's own template, before any patch */
            const char *jn = tj_str(rj, "name");
            const json_t *orig =
                tj_find_named(tj_get(c->runtime, "spec.template.spec.replicatedJobs"), "name", jn);
            const json_t *orig_spec = tj_get(orig, "template.spec.template.spec");
            const json_t *ps_spec = tj_get(rj, "template.spec.template.spec");
            size_t k;
            json_t *ct;

            snprintf(
                path, sizeof(path),
                "spec.runtimePatches[%zu].trainingRuntimeSpec.template.spec.replicatedJobs[%zu]", i,
                j);
            if (!orig) {
                tj_err(c->errs, tj, rj, "Invalid", path,
                       "must not have replicated job that doesn't exist in the runtime job "
                       "template");
                continue;
            }
            json_array_foreach(json_object_get(ps_spec, "initContainers"), k, ct)
            {
                const char *cn = tj_str(ct, "name");
                if (cn && !has_name(json_object_get(orig_spec, "initContainers"), cn) &&
                    !has_name(json_object_get(orig_spec, "containers"), cn))
                    tj_err(c->errs, tj, ct, "Invalid", path,
                           "must not have initContainer that doesn't exist in the runtime job %s",
                           jn);
            }
            json_array_foreach(json_object_get(ps_spec, "containers"), k, ct)
            {
                const char *cn = tj_str(ct, "name");
                if (cn && !has_name(json_object_get(orig_spec, "containers"), cn)) {
                    tj_err(c->errs, tj, ct, "Invalid", path,
                           "must not have container that doesn't exist in the runtime job %s", jn);
                    continue;
                }
                if (cn && json_object_get(ct, "env") &&
                    (strcmp(cn, "node") == 0 || strcmp(cn, "dataset-initializer") == 0 ||
                     strcmp(cn, "model-initializer") == 0))
                    tj_err(c->errs, tj, ct, "Invalid", path,
                           "must not have envs for the dataset-initializer, model-initializer, "
                           "node containers");
            }
        }
    }
}

/* ---- generated names: JobSet's webhook on the JobSet we write (cases.md C56) ----
 *
 * JobSet (pkg/webhooks/jobset_webhook.go, ValidateCreate; kubernetes-sigs/jobset #408/#409)
 * refuses a JobSet when, for some replicated job, the longest child name is not a DNS-1035
 * label: the Job "<jobset>-<rjob>-<replicas-1>" always, and for an Indexed Job with completions
 * set (JobSet defaults completionMode to Indexed; Trainer always sets completions) the pod
 * "<jobset>-<rjob>-<replicas-1>-<completions-1>" plus "-" and the 5-character random suffix the
 * API server appends. The pod name is the longer of the two, so it decides for Indexed Jobs.
 * Trainer names the JobSet after the TrainJob, so the field at fault is metadata.name; we report
 * the single longest derived name over every replicated job. Only the length is checked: the
 * TrainJob name is already an RFC 1035 label. */

#define TJ_NAME_MAX 63
#define TJ_POD_SUFFIX "-xxxxx" /* "-" + the 5 random characters (JobSet validates "-abcde") */

void tj_webhook_generated_names(struct tj_ctx *c)
{
    const json_t *name = tj_get(c->trainjob, "metadata.name");
    const char *longest = NULL, *rjob = NULL;
    size_t longest_len = 0;
    int longest_is_pod = 0;

    if (!c->name)
        return;
    for (size_t i = 0; i < c->npodsets; i++) {
        const struct tj_podset *ps = &c->podsets[i];
        const char *mode = tj_str(ps->rjob, "template.spec.completionMode");
        int indexed = !mode || strcmp(mode, "Indexed") == 0;
        long long max_job = (long long)tj_podset_replicas(ps) - 1;
        long long max_pod = (long long)ps->count - 1;
        const char *n;
        size_t len;

        n = indexed ? common_arena_printf(c->arena, "%s-%s-%lld-%lld" TJ_POD_SUFFIX, c->name,
                                          ps->name, max_job, max_pod)
                    : common_arena_printf(c->arena, "%s-%s-%lld", c->name, ps->name, max_job);
        if (!n) {
            c->errs->oom = 1;
            return;
        }
        len = strlen(n);
        if (len > longest_len) {
            longest = n;
            longest_len = len;
            rjob = ps->name;
            longest_is_pod = indexed;
        }
    }
    if (longest_len <= TJ_NAME_MAX)
        return;
    if (longest_is_pod)
        tj_err(c->errs, c->trainjob, name, "Invalid", "metadata.name",
               "Invalid value: \"%s\": TrainJob name is too long, pod names generated for its "
               "JobSet will exceed %d characters: the longest, \"%s\" (replicated job \"%s\"; "
               "xxxxx stands for the random suffix), is %zu characters",
               c->name, TJ_NAME_MAX, longest, rjob, longest_len);
    else
        tj_err(c->errs, c->trainjob, name, "Invalid", "metadata.name",
               "Invalid value: \"%s\": TrainJob name is too long, job names generated for its "
               "JobSet will exceed %d characters: the longest, \"%s\" (replicated job \"%s\"), is "
               "%zu characters",
               c->name, TJ_NAME_MAX, longest, rjob, longest_len);
}
