/*
 * trainjob/build.c - the render pipeline: validate, build the runtime info, run the ML and
 * gang policies, write the JobSet and the other objects.
 *
 * Source: ../shared/reference/trainer.md §2.2-2.9 (pipeline, JobSet), §3.1-3.3 (PodGroups).
 */
#include <openssl/evp.h>
#include <string.h>

#include "common/yaml.h"
#include "trainjob/trainjob_int.h"

/* Deterministic placeholder uid for a TrainJob without metadata.uid: the SHA-256 of
 * "trainsched-render/<namespace>/<name>" shaped as a version-5-style UUID. */
static const char *placeholder_uid(struct common_arena *a, const char *ns, const char *name)
{
    unsigned char md[32];
    unsigned int len = 0;
    char *in = common_arena_printf(a, "trainsched-render/%s/%s", ns, name);

    if (!in || !EVP_Digest(in, strlen(in), md, &len, EVP_sha256(), NULL))
        return NULL;
    md[6] = (unsigned char)((md[6] & 0x0f) | 0x50);
    md[8] = (unsigned char)((md[8] & 0x3f) | 0x80);
    return common_arena_printf(a,
                               "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
                               "%02x%02x%02x%02x%02x%02x",
                               md[0], md[1], md[2], md[3], md[4], md[5], md[6], md[7], md[8], md[9],
                               md[10], md[11], md[12], md[13], md[14], md[15]);
}

enum common_rc trainjob_runtime_ref(const json_t *trainjob, const char *default_namespace,
                                    struct trainjob_ref *ref, struct common_error *err)
{
    const json_t *r = tj_get(trainjob, "spec.runtimeRef");

    memset(ref, 0, sizeof(*ref));
    ref->name = tj_str(r, "name");
    ref->kind = tj_str(r, "kind") ? tj_str(r, "kind") : "ClusterTrainingRuntime";
    ref->api_group = tj_str(r, "apiGroup") ? tj_str(r, "apiGroup") : TJ_GROUP;
    ref->namespace = tj_str(trainjob, "metadata.namespace");
    if (!ref->namespace)
        ref->namespace = default_namespace ? default_namespace : "default";
    if (strcmp(ref->kind, "ClusterTrainingRuntime") == 0)
        ref->namespace = NULL;
    if (!ref->name)
        return common_error_set(err, COMMON_EINVAL,
                                "spec.runtimeRef.name: Required value: the TrainJob must name "
                                "its runtime");
    return COMMON_OK;
}

/* ---- context ---- */

static int32_t int_or(const json_t *v, int32_t dflt)
{
    return json_is_integer(v) ? (int32_t)json_integer_value(v) : dflt;
}

static enum common_rc load_ctx(struct tj_ctx *c, const json_t *tj, const json_t *rt)
{
    const json_t *trainer = tj_get(tj, "spec.trainer");
    const json_t *ml = tj_get(rt, "spec.mlPolicy");
    const json_t *mpi;

    c->trainjob = tj;
    c->runtime = rt;
    c->name = tj_str(tj, "metadata.name");
    c->ns = tj_str(tj, "metadata.namespace");
    if (!c->ns)
        c->ns = c->opts && c->opts->default_namespace ? c->opts->default_namespace : "default";
    c->uid = tj_str(tj, "metadata.uid");
    if (!c->uid || !*c->uid)
        c->uid = c->opts && c->opts->placeholder_uid ? c->opts->placeholder_uid
                                                     : placeholder_uid(c->arena, c->ns, c->name);
    if (!c->uid)
        return COMMON_ENOMEM;
    c->trainer = json_is_object(trainer) ? trainer : NULL;
    c->has_num_nodes = json_is_integer(json_object_get(trainer, "numNodes"));
    c->num_nodes = int_or(json_object_get(trainer, "numNodes"), 1);
    c->has_nppn = json_is_integer(json_object_get(trainer, "numProcPerNode"));
    c->nppn = int_or(json_object_get(trainer, "numProcPerNode"), 1);
    c->resources = json_is_object(json_object_get(trainer, "resourcesPerNode"))
                       ? json_object_get(trainer, "resourcesPerNode")
                       : NULL;
    c->suspend = json_is_true(tj_get(tj, "spec.suspend"));
    c->ml_policy = json_is_object(ml) ? ml : NULL;
    c->rt_num_nodes = int_or(json_object_get(ml, "numNodes"), 1);
    c->ml = TJ_ML_PLAIN;
    if (json_is_object(json_object_get(ml, "torch")))
        c->ml = TJ_ML_TORCH;
    else if (json_is_object(json_object_get(ml, "mpi")))
        c->ml = TJ_ML_MPI;
    else if (json_is_object(json_object_get(ml, "jax")))
        c->ml = TJ_ML_JAX;
    else if (json_is_object(json_object_get(ml, "xgboost")))
        c->ml = TJ_ML_XGBOOST;
    else if (json_is_object(json_object_get(ml, "flux")))
        c->ml = TJ_ML_FLUX;
    mpi = json_object_get(ml, "mpi");
    c->mpi_nppn = int_or(json_object_get(mpi, "numProcPerNode"), 1);
    c->mpi_impl = tj_str(mpi, "mpiImplementation") ? tj_str(mpi, "mpiImplementation") : "OpenMPI";
    c->mpi_ssh_path =
        tj_str(mpi, "sshAuthMountPath") ? tj_str(mpi, "sshAuthMountPath") : "/root/.ssh";
    c->mpi_launcher_as_node = json_is_true(json_object_get(mpi, "runLauncherAsNode"));
    c->flux_nppn = int_or(tj_get(ml, "flux.numProcPerNode"), 1);
    c->gangs = 0;
    if (json_is_object(tj_get(rt, "spec.podGroupPolicy.coscheduling")))
        c->gangs |= 1u << TJ_GANG_COSCHEDULING;
    if (json_is_object(tj_get(rt, "spec.podGroupPolicy.volcano")))
        c->gangs |= 1u << TJ_GANG_VOLCANO;
    if (c->opts && c->opts->gang == TRAINJOB_GANG_NONE)
        c->gangs = 0;
    else if (c->opts && c->opts->gang == TRAINJOB_GANG_COSCHEDULING)
        c->gangs = 1u << TJ_GANG_COSCHEDULING;
    else if (c->opts && c->opts->gang == TRAINJOB_GANG_VOLCANO)
        c->gangs = 1u << TJ_GANG_VOLCANO;
    return COMMON_OK;
}

/* ---- the node container's resources once resourcesPerNode is merged over them ---- */

#define MERGED_NOTE                                                                                \
    " (resourcesPerNode is merged over the resources of the runtime's node container)"

/* where the runtime's value of <list>[<name>] of PodSet ps's node container was written, for a
 * message: "<path in the runtime> of <Kind> <namespace>/<name>", or, when the runtime as given
 * holds another value there (a runtime patch set it), the replicated job after the patches */
static const char *runtime_side(struct tj_ctx *c, const struct tj_podset *ps, const char *list,
                                const char *name, const struct common_quantity *q)
{
    const json_t *doc = c->runtime_doc ? c->runtime_doc : c->runtime;
    const json_t *rjobs = tj_get(doc, "spec.template.spec.replicatedJobs");
    const char *kind = tj_str(doc, "kind") ? tj_str(doc, "kind") : "runtime";
    const char *rns = tj_str(doc, "metadata.namespace");
    const char *rname = tj_str(doc, "metadata.name") ? tj_str(doc, "metadata.name") : "";
    size_t i, j;
    json_t *rj, *ct;

    json_array_foreach(rjobs, i, rj)
    {
        if (!json_is_object(rj) || !tj_str(rj, "name") || strcmp(tj_str(rj, "name"), ps->name))
            continue;
        json_array_foreach(tj_get(rj, "template.spec.template.spec.containers"), j, ct)
        {
            const json_t *v;
            struct common_quantity rq;
            if (!json_is_object(ct) || !tj_str(ct, "name") || strcmp(tj_str(ct, "name"), "node"))
                continue;
            v = json_object_get(tj_get(ct, "resources"), list);
            v = json_object_get(v, name);
            if (!v || tj_quantity(v, &rq, NULL) || common_quantity_cmp(&rq, q) != 0)
                break;
            return common_arena_printf(
                c->arena,
                "spec.template.spec.replicatedJobs[%zu].template.spec.template.spec.containers[%zu]"
                ".resources.%s[%s] of %s %s%s%s",
                i, j, list, name, kind, rns ? rns : "", rns ? "/" : "", rname);
        }
    }
    return common_arena_printf(c->arena,
                               "%s[%s] of the node container of replicated job %s of %s %s%s%s "
                               "after spec.runtimePatches",
                               list, name, ps->name, kind, rns ? rns : "", rns ? "/" : "", rname);
}

static const char *qtext(struct tj_ctx *c, const struct common_quantity *q)
{
    char buf[80];

    if (common_quantity_format(q, buf, sizeof(buf)) < 0)
        return "?";
    return common_arena_strdup(c->arena, buf);
}

/*
 * The API server's request <= limit rules (and an extended resource's request == limit) on
 * merged, the node container of PodSet ps after resourcesPerNode was merged over it. Each side
 * passed tj_check_resources alone, so a problem here pairs a TrainJob value with the runtime's
 * (or two runtime values a runtime patch brought together). The error is at the field of the
 * TrainJob (its limit, else its request) and names the runtime container's value by its path in
 * the runtime; with no TrainJob value in the pair, at the runtime's path.
 */
static void check_merged_resources(struct tj_ctx *c, const struct tj_podset *ps,
                                   const json_t *merged)
{
    const json_t *limits = json_object_get(merged, "limits");
    const json_t *tj_req = json_object_get(c->resources, "requests");
    const json_t *tj_lim = json_object_get(c->resources, "limits");
    const char *k;
    json_t *v;

    json_object_foreach(json_object_get(merged, "requests"), k, v)
    {
        const json_t *lv = json_object_get(limits, k);
        int req_tj = json_object_get(tj_req, k) != NULL,
            lim_tj = json_object_get(tj_lim, k) != NULL;
        int extended = tj_resource_is_extended(k);
        struct common_quantity rq, lq;
        int cmp;
        char path[700];
        const char *bad;

        if (!lv || tj_quantity(v, &rq, NULL) || tj_quantity(lv, &lq, NULL))
            continue; /* a request without a limit comes from one side: checked alone */
        cmp = common_quantity_cmp(&rq, &lq);
        if (cmp <= 0 && !(extended && cmp != 0))
            continue;
        bad = cmp > 0 ? "" : " (an extended resource cannot be overcommitted)";
        if (lim_tj && !req_tj) { /* the TrainJob's limit against the runtime's request */
            snprintf(path, sizeof(path), "spec.trainer.resourcesPerNode.limits[%s]", k);
            tj_err(c->errs, c->trainjob, json_object_get(tj_lim, k), "Invalid", path,
                   "Invalid value: \"%s\": must be %s %s request of %s at %s%s" MERGED_NOTE,
                   qtext(c, &lq), cmp > 0 ? "greater than or equal to" : "equal to", k,
                   qtext(c, &rq), runtime_side(c, ps, "requests", k, &rq), bad);
        } else if (req_tj && !lim_tj) { /* the TrainJob's request against the runtime's limit */
            snprintf(path, sizeof(path), "spec.trainer.resourcesPerNode.requests[%s]", k);
            tj_err(c->errs, c->trainjob, json_object_get(tj_req, k), "Invalid", path,
                   "Invalid value: \"%s\": must be %s %s limit of %s at %s%s" MERGED_NOTE,
                   qtext(c, &rq), cmp > 0 ? "less than or equal to" : "equal to", k, qtext(c, &lq),
                   runtime_side(c, ps, "limits", k, &lq), bad);
        } else if (!req_tj && !lim_tj) { /* both the runtime's, brought together by a patch */
            tj_err(c->errs, c->trainjob, v, "Invalid", "spec.runtimePatches",
                   "Invalid value: \"%s\": the request at %s must be %s %s limit of %s at %s%s",
                   qtext(c, &rq), runtime_side(c, ps, "requests", k, &rq),
                   cmp > 0 ? "less than or equal to" : "equal to", k, qtext(c, &lq),
                   runtime_side(c, ps, "limits", k, &lq), bad);
        }
        /* both the TrainJob's: refused by tj_check_resources_trainjob before the build */
    }
}

/* §2.3: JobSet metadata, runtime patches, PodSets, resource merge */
static enum common_rc runtime_info(struct tj_ctx *c, struct common_error *err)
{
    const json_t *patches = tj_get(c->trainjob, "spec.runtimePatches");
    const json_t *tmeta = tj_get(c->runtime, "spec.template.metadata");
    json_t *rjobs, *it, *p;
    size_t i;

    c->labels = tj_own(c->arena, json_is_object(json_object_get(tmeta, "labels"))
                                     ? json_deep_copy(json_object_get(tmeta, "labels"))
                                     : json_object());
    c->annotations = tj_own(c->arena, json_is_object(json_object_get(tmeta, "annotations"))
                                          ? json_deep_copy(json_object_get(tmeta, "annotations"))
                                          : json_object());
    c->spec = tj_own(c->arena, json_is_object(tj_get(c->runtime, "spec.template.spec"))
                                   ? json_deep_copy(tj_get(c->runtime, "spec.template.spec"))
                                   : json_object());
    c->extra = tj_own(c->arena, json_array());
    if (!c->labels || !c->annotations || !c->spec || !c->extra)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");

    json_array_foreach(patches, i, p)
    {
        const json_t *pm = tj_get(p, "trainingRuntimeSpec.template.metadata");
        const json_t *ps = tj_get(p, "trainingRuntimeSpec.template.spec");
        if (json_is_object(json_object_get(pm, "labels")) &&
            json_object_update(c->labels, json_object_get(pm, "labels")))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        if (json_is_object(json_object_get(pm, "annotations")) &&
            json_object_update(c->annotations, json_object_get(pm, "annotations")))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        if (json_is_object(ps) && tj_strategic_merge(c->spec, ps))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }

    rjobs = json_object_get(c->spec, "replicatedJobs");
    c->npodsets = json_array_size(rjobs);
    c->podsets = common_arena_alloc(c->arena, (c->npodsets + 1) * sizeof(*c->podsets));
    if (!c->podsets)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    json_array_foreach(rjobs, i, it)
    {
        struct tj_podset *ps = &c->podsets[i];
        json_t *labels = tj_get(it, "template.metadata.labels");
        json_t *par = tj_get(it, "template.spec.parallelism");

        ps->name = tj_str(it, "name") ? tj_str(it, "name") : "";
        ps->ancestor = json_string_value(json_object_get(labels, TJ_ANCESTOR_LABEL));
        ps->rjob = it;
        ps->podspec = tj_get(it, "template.spec.template.spec");
        if (!json_is_object(ps->podspec)) {
            json_t *tmpl = tj_obj(tj_obj(tj_obj(it, "template"), "spec"), "template");
            ps->podspec = tmpl ? tj_obj(tmpl, "spec") : NULL;
            if (!ps->podspec)
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        ps->count = int_or(par, 1);
        if (ps->ancestor && strcmp(ps->ancestor, "trainer") == 0 && c->ml_policy)
            ps->count = c->rt_num_nodes;
        if (ps->count < 1)
            ps->count = 1;
    }

    /* the runtime's own trainer resources, for GPU detection when the TrainJob has none */
    {
        struct tj_podset *tp = tj_trainer_podset(c);
        json_t *node = tp ? tj_container(tp->podspec, "node") : NULL;
        c->runtime_trainer_resources = node ? json_object_get(node, "resources") : NULL;
        if (c->runtime_trainer_resources)
            c->runtime_trainer_resources =
                tj_own(c->arena, json_deep_copy(c->runtime_trainer_resources));
    }

    /* merge TrainJob resourcesPerNode into container node */
    if (c->resources) {
        for (i = 0; i < c->npodsets; i++) {
            struct tj_podset *ps = &c->podsets[i];
            int is_trainer = ps->ancestor && strcmp(ps->ancestor, "trainer") == 0;
            int is_mpi_node =
                c->ml == TJ_ML_MPI && c->mpi_launcher_as_node && strcmp(ps->name, "node") == 0;
            json_t *node, *res;
            if (!((is_trainer && c->ml_policy) || is_mpi_node))
                continue;
            node = tj_container(ps->podspec, "node");
            if (!node)
                continue;
            res = tj_obj(node, "resources");
            if (!res || tj_strategic_merge(res, c->resources))
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
            /* each side passed alone; merged, a runtime request may exceed a TrainJob limit */
            check_merged_resources(c, ps, res);
            tj_check_resources_claims(c->trainjob, c->resources, ps->podspec,
                                      "spec.trainer.resourcesPerNode", c->errs);
        }
    }
    return COMMON_OK;
}

/* §2.5: parallelism/completions, initializers, trainer job, suspend */
static enum common_rc build_jobset(struct tj_ctx *c, json_t **out, struct common_error *err)
{
    json_t *js, *meta;
    size_t i;

    for (i = 0; i < c->npodsets; i++) {
        struct tj_podset *ps = &c->podsets[i];
        json_t *jspec = tj_obj(tj_obj(ps->rjob, "template"), "spec");
        const char *anc = ps->ancestor;

        if (!jspec || tj_set(jspec, "parallelism", json_integer(ps->count)) ||
            tj_set(jspec, "completions", json_integer(ps->count)))
            goto nomem;
        if (!anc)
            continue;
        if (strcmp(anc, "dataset-initializer") == 0 || strcmp(anc, "model-initializer") == 0) {
            const json_t *init = tj_get(c->trainjob, strcmp(anc, "dataset-initializer") == 0
                                                         ? "spec.initializer.dataset"
                                                         : "spec.initializer.model");
            json_t *ct;
            if (tj_set(ps->rjob, "replicas", json_integer(1)))
                goto nomem;
            ct = tj_container(ps->podspec, anc);
            if (!json_is_object(init) || !ct)
                continue;
            if (tj_str(init, "storageUri")) {
                json_t *env = tj_arr(ct, "env");
                if (!env ||
                    tj_upsert(env, "name", tj_env_value("STORAGE_URI", tj_str(init, "storageUri"))))
                    goto nomem;
            }
            if (tj_upsert_env(ct, json_object_get(init, "env")))
                goto nomem;
            if (json_is_object(json_object_get(init, "secretRef"))) {
                json_t *ef = tj_arr(ct, "envFrom");
                const char *sn = tj_str(init, "secretRef.name");
                if (!ef || json_array_append_new(
                               ef, json_pack("{s:{s:s}}", "secretRef", "name", sn ? sn : "")))
                    goto nomem;
            }
        } else if (strcmp(anc, "trainer") == 0) {
            json_t *ct;
            if (tj_set(ps->rjob, "replicas", json_integer(1)))
                goto nomem;
            ct = tj_container(ps->podspec, "node");
            if (!ct || !c->trainer)
                continue;
            if (tj_str(c->trainer, "image") &&
                tj_set(ct, "image", json_string(tj_str(c->trainer, "image"))))
                goto nomem;
            if (c->command && tj_set(ct, "command", json_deep_copy(c->command)))
                goto nomem;
            if (c->args && tj_set(ct, "args", json_deep_copy(c->args)))
                goto nomem;
            if (tj_upsert_env(ct, json_object_get(c->trainer, "env")))
                goto nomem;
        }
    }
    if (c->ml == TJ_ML_MPI && c->mpi_launcher_as_node && c->trainer) {
        struct tj_podset *ps = tj_podset(c, "node");
        json_t *ct = ps ? tj_container(ps->podspec, "node") : NULL;
        if (ct && tj_upsert_env(ct, json_object_get(c->trainer, "env")))
            goto nomem;
    }
    if (tj_set(c->spec, "suspend", json_boolean(c->suspend)) || tj_normalize_quantities(c->spec))
        goto nomem;

    meta = tj_owner_meta(c, c->name);
    if (!meta)
        goto nomem;
    /* name, namespace, labels, annotations, ownerReferences */
    if (json_object_size(c->labels) || json_object_size(c->annotations)) {
        json_t *owners = json_incref(json_object_get(meta, "ownerReferences"));
        json_object_del(meta, "ownerReferences");
        if (json_object_size(c->labels))
            json_object_set(meta, "labels", c->labels);
        if (json_object_size(c->annotations))
            json_object_set(meta, "annotations", c->annotations);
        json_object_set_new(meta, "ownerReferences", owners);
    }
    js = json_pack("{s:s, s:s, s:o, s:O}", "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind",
                   "JobSet", "metadata", meta, "spec", c->spec);
    if (!js)
        goto nomem;
    *out = js;
    return COMMON_OK;
nomem:
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

static const char *first_error(struct trainjob_errors *e, struct common_error *err);

#define TJ_CONFIGMAP_MAX 1048576 /* bytes of ConfigMap data (Kubernetes core.MaxSecretSize) */

/* the snapshot's data: runtime (defaulted; its spec's quantities are normalized in place)
 * without status and managedFields, as YAML into yaml (initialised here; the caller frees it) */
static enum common_rc snapshot_yaml(const json_t *runtime, struct common_buf *yaml,
                                    struct common_error *err)
{
    json_t *obj = json_object();
    const char *k;
    json_t *v;
    enum common_rc rc;

    common_buf_init(yaml, 64u << 20);
    if (!obj)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    json_object_foreach((json_t *)runtime, k, v)
    {
        if (strcmp(k, "status") == 0)
            continue;
        json_object_set(obj, k, v);
    }
    if (json_is_object(json_object_get(obj, "metadata"))) {
        json_t *m = json_deep_copy(json_object_get(obj, "metadata"));
        json_object_del(m, "managedFields");
        json_object_set_new(obj, "metadata", m);
    }
    if (tj_normalize_quantities(json_object_get(obj, "spec"))) {
        json_decref(obj);
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    rc = common_yaml_emit(obj, yaml, err);
    json_decref(obj);
    return rc;
}

static enum common_rc build_snapshot(struct tj_ctx *c, json_t **out, struct common_error *err)
{
    struct common_buf yaml;
    json_t *cm = NULL;
    enum common_rc rc;
    char *name;

    rc = snapshot_yaml(c->runtime, &yaml, err);
    if (rc) {
        common_buf_free(&yaml);
        return rc;
    }
    name = common_arena_printf(c->arena, "%s-runtime-snapshot", c->name);
    if (name && yaml.len > TJ_CONFIGMAP_MAX) {
        /* the API server refuses a ConfigMap whose data values total more than 1 MiB
         * (ValidateConfigMap, core.MaxSecretSize): the TrainJob could never start */
        tj_err(c->errs, c->trainjob, tj_get(c->trainjob, "spec.runtimeRef"), "TooLong",
               "spec.runtimeRef",
               "Too long: %s \"%s\" is too large for its runtime snapshot: ConfigMap \"%s\" would "
               "hold %zu bytes of data, and may not hold more than %d bytes",
               tj_str(c->runtime, "kind") ? tj_str(c->runtime, "kind") : "runtime",
               tj_str(c->runtime, "metadata.name") ? tj_str(c->runtime, "metadata.name") : "", name,
               yaml.len, TJ_CONFIGMAP_MAX);
        common_buf_free(&yaml);
        return first_error(c->errs, err) ? COMMON_EINVAL : COMMON_ENOMEM;
    }
    if (name)
        cm = json_pack("{s:s, s:s, s:o, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                       "metadata", tj_owner_meta(c, name), "data", "runtime", yaml.data);
    common_buf_free(&yaml);
    if (!cm)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    *out = cm;
    return COMMON_OK;
}

static const char *first_error(struct trainjob_errors *e, struct common_error *err)
{
    const char *msg = trainjob_errors_format(e, 0);
    if (!msg) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    common_error_set(err, COMMON_EINVAL, "%s%s", msg ? msg : "invalid",
                     e->n > 1 ? " (and more errors)" : "");
    return msg;
}

enum common_rc trainjob_validate_trainjob(const json_t *trainjob, struct trainjob_errors *errs,
                                          struct common_error *err)
{
    const char *group = tj_str(trainjob, "spec.runtimeRef.apiGroup");

    tj_schema_check(TJ_SCHEMA_TRAINJOB, trainjob, errs);
    if (errs->n == 0) {
        tj_object_meta(trainjob, 1, errs);
        tj_cel_trainjob(trainjob, errs);
        tj_check_resources_trainjob(trainjob, errs);
        tj_check_pods_trainjob(trainjob, errs);
    }
    {
        const char *kind = tj_str(trainjob, "spec.runtimeRef.kind");
        if (!kind)
            kind = "ClusterTrainingRuntime";
        if (!group)
            group = TJ_GROUP;
        if (errs->n == 0 &&
            (strcmp(group, TJ_GROUP) != 0 ||
             (strcmp(kind, "TrainingRuntime") != 0 && strcmp(kind, "ClusterTrainingRuntime") != 0)))
            tj_err_value(errs, trainjob, tj_get(trainjob, "spec.runtimeRef"),
                         tj_runtime_ref_value(errs->arena, trainjob), "Invalid", "spec.runtimeRef",
                         "unsupported runtime: %s.%s", kind, group);
    }
    if (errs->oom)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (errs->n)
        return first_error(errs, err) ? COMMON_EINVAL : COMMON_ENOMEM;
    return COMMON_OK;
}

/* the runtime snapshot ConfigMap every TrainJob of this runtime gets must fit the API server's
 * limit on ConfigMap data; TooLong at spec otherwise, naming the runtime */
static void check_snapshot_size(const json_t *runtime, struct trainjob_errors *errs)
{
    json_t *rt = tj_default_runtime(runtime);
    struct common_buf yaml;
    struct common_error e = {0};

    if (!rt) {
        errs->oom = 1;
        return;
    }
    if (snapshot_yaml(rt, &yaml, &e) == COMMON_ENOMEM)
        errs->oom = 1;
    else if (yaml.len > TJ_CONFIGMAP_MAX)
        tj_err(errs, runtime, tj_get(runtime, "spec"), "TooLong", "spec",
               "Too long: %s \"%s\" is too large for the runtime snapshot ConfigMap of its "
               "TrainJobs: it would hold %zu bytes of data, and may not hold more than %d bytes",
               tj_str(runtime, "kind") ? tj_str(runtime, "kind") : "runtime",
               tj_str(runtime, "metadata.name") ? tj_str(runtime, "metadata.name") : "", yaml.len,
               TJ_CONFIGMAP_MAX);
    common_buf_free(&yaml);
    json_decref(rt);
}

enum common_rc trainjob_validate_runtime(const json_t *runtime, struct trainjob_errors *errs,
                                         struct common_error *err)
{
    const json_t *labels = tj_get(runtime, "metadata.labels");
    const char *wv =
        json_string_value(json_object_get(labels, "trainer.kubeflow.org/webhook-validation"));

    const char *kind = tj_str(runtime, "kind");

    tj_schema_check(TJ_SCHEMA_RUNTIME, runtime, errs);
    if (errs->n == 0) {
        tj_object_meta(runtime, kind && strcmp(kind, "TrainingRuntime") == 0, errs);
        tj_cel_runtime(runtime, errs);
        tj_check_resources_runtime(runtime, errs);
        tj_check_pods_runtime(runtime, errs);
        check_snapshot_size(runtime, errs);
    }
    if (errs->n == 0 && !(wv && strcmp(wv, "disabled") == 0))
        tj_webhook_runtime(runtime, errs);
    if (errs->oom)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (errs->n)
        return first_error(errs, err) ? COMMON_EINVAL : COMMON_ENOMEM;
    return COMMON_OK;
}

/* trainjob_options.kueue_view: ml's enforce step with every pod template put back as it was
 * before (env, ports, volumes, mounts), keeping c->command as the policy set it */
static enum common_rc kueue_view_enforce(struct tj_ctx *c, const struct tj_ml_policy *ml,
                                         struct common_error *err)
{
    json_t **saved = common_arena_alloc(c->arena, (c->npodsets + 1) * sizeof(*saved));
    enum common_rc rc;
    size_t i;

    if (!saved)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    for (i = 0; i < c->npodsets; i++) {
        saved[i] = tj_own(c->arena, json_deep_copy(c->podsets[i].podspec));
        if (!saved[i])
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    rc = ml->enforce(c, err);
    for (i = 0; !rc && i < c->npodsets; i++)
        if (json_object_clear(c->podsets[i].podspec) ||
            json_object_update(c->podsets[i].podspec, saved[i]))
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
    return rc;
}

enum common_rc trainjob_render(struct common_arena *a, const json_t *trainjob,
                               const json_t *runtime, const struct trainjob_options *opts,
                               struct trainjob_output *out, struct common_error *err)
{
    struct tj_ctx ctx;
    struct tj_ctx *c = &ctx;
    const struct tj_ml_policy *ml;
    json_t *objs = NULL, *gang_objs = NULL, *obj = NULL, *rt;
    enum common_rc rc;
    const char *managed;

    memset(c, 0, sizeof(*c));
    memset(out, 0, sizeof(*out));
    trainjob_errors_init(&out->errors, a);
    c->arena = a;
    c->opts = opts;
    c->errs = &out->errors;

    /* 1. the API server: schema and CEL of both objects */
    trainjob_validate_trainjob(trainjob, c->errs, err);
    rc = trainjob_validate_runtime(runtime, c->errs, err);
    if (c->errs->oom)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (c->errs->n)
        return first_error(c->errs, err) ? COMMON_EINVAL : COMMON_ENOMEM;
    /* 2. runtime info, then the webhook checks that need it */
    rt = tj_own(a, tj_default_runtime(runtime));
    if (!rt)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    c->runtime_doc = runtime;
    rc = load_ctx(c, trainjob, rt);
    if (rc)
        return common_error_set(err, rc, "out of memory");
    rc = runtime_info(c, err);
    if (rc)
        return rc;
    tj_webhook_trainjob(c);
    if (c->errs->n == 0) /* after the patch names are known good */
        tj_check_mounts(c);
    ml = tj_ml_policy_for(c->ml);
    if (ml && ml->validate)
        ml->validate(c);
    for (int g = 1; g <= TJ_GANG_VOLCANO; g++) {
        const struct tj_gang_policy *gp = tj_gang_policy_for((enum tj_gang)g);
        if ((c->gangs & (1u << g)) && gp && gp->validate)
            gp->validate(c);
    }
    /* the final pod counts (the ML policy's numNodes), then the rule that needs them: JobSet's
     * webhook would refuse the JobSet when a generated pod name is over 63 characters */
    if (ml && ml->counts && (rc = ml->counts(c, err)))
        return rc;
    tj_webhook_generated_names(c);
    if (c->errs->oom)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (c->errs->n)
        return first_error(c->errs, err) ? COMMON_EINVAL : COMMON_ENOMEM;
    managed = tj_str(trainjob, "spec.managedBy");
    if (managed && strcmp(managed, TJ_CONTROLLER) != 0) {
        out->skipped = common_arena_printf(
            a, "TrainJob %s/%s is managed by \"%s\", not by %s: nothing is created", c->ns, c->name,
            managed, TJ_CONTROLLER);
        return out->skipped ? COMMON_OK : common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    if (!ml)
        return common_error_set(err, COMMON_EUNSUPPORTED, "unknown ML policy");

    /* 3. plugins (counts ran with the checks above): ML policy, gang labels */
    c->command = json_object_get(c->trainer, "command");
    c->args = json_object_get(c->trainer, "args");
    if (opts && opts->kueue_view) {
        /* Kueue's view: the policy's rewrite of the trainer command stays (Trainer's plugin
         * writes it into the TrainJob, which the builder reads), its pod template edits go */
        if (ml->enforce && (rc = kueue_view_enforce(c, ml, err)))
            return rc;
    } else {
        if (ml->enforce && (rc = ml->enforce(c, err)))
            return rc;
        if ((rc = tj_trainer_status(c, err)))
            return rc;
    }
    for (int g = 1; g <= TJ_GANG_VOLCANO; g++) {
        const struct tj_gang_policy *gp = tj_gang_policy_for((enum tj_gang)g);
        if ((c->gangs & (1u << g)) && (rc = gp->enforce(c, err)))
            return rc;
    }

    /* 4. objects in apply order; the gang objects are built first (from the templates as
     * Trainer writes them), then the gang marks go into the templates, then the JobSet */
    objs = json_array();
    gang_objs = json_array();
    if (!objs || !gang_objs)
        goto nomem;
    for (int g = 1; g <= TJ_GANG_VOLCANO; g++) {
        const struct tj_gang_policy *gp = tj_gang_policy_for((enum tj_gang)g);
        if (!(c->gangs & (1u << g)))
            continue;
        rc = gp->build(c, &obj, err);
        if (rc || json_array_append_new(gang_objs, obj))
            goto fail;
    }
    for (int g = 1; g <= TJ_GANG_VOLCANO; g++) {
        const struct tj_gang_policy *gp = tj_gang_policy_for((enum tj_gang)g);
        if ((c->gangs & (1u << g)) && gp->mark && (rc = gp->mark(c, err)))
            goto fail;
    }
    rc = build_snapshot(c, &obj, err);
    if (rc || json_array_append_new(objs, obj))
        goto fail;
    if (json_array_extend(objs, c->extra))
        goto nomem;
    rc = build_jobset(c, &obj, err);
    if (rc || json_array_append_new(objs, obj))
        goto fail;
    if (json_array_extend(objs, gang_objs))
        goto nomem;
    json_decref(gang_objs);
    out->objects = objs;
    return COMMON_OK;
nomem:
    rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
fail:
    if (!rc)
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
    json_decref(objs);
    json_decref(gang_objs);
    return rc;
}
