/*
 * integrations/kueue.c - the Workload Kueue makes for a TrainJob (see kueue.h).
 *
 * Sources (sigs.k8s.io/kueue v0.19.0): pkg/controller/jobframework/workload_names.go (name),
 * pkg/controller/jobframework/{interface.go NewWorkload, reconciler.go ConstructWorkload and
 * ExtractPriority, tas.go}, pkg/controller/jobs/jobset/jobset_controller.go (PodSets,
 * PodsCountPerReplica), pkg/controller/jobs/trainjob/trainjob_controller.go (PodSets from the
 * JobSet Trainer would build), pkg/util/priority/priority.go.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/names.h"
#include "integrations/backend.h"
#include "integrations/kueue.h"

#define HASH_LEN 5

static const json_t *get2(const json_t *o, const char *a, const char *b)
{
    o = json_object_get(o, a);
    return b ? json_object_get(o, b) : o;
}

static const char *str2(const json_t *o, const char *a, const char *b)
{
    return json_string_value(get2(o, a, b));
}

enum common_rc kueue_workload_name(const char *kind, const char *group, const char *owner_name,
                                   const char *owner_uid, int short_names, char *out, size_t size,
                                   struct common_error *err)
{
    size_t max = short_names ? KUEUE_WORKLOAD_NAME_SHORT_MAX : KUEUE_WORKLOAD_NAME_MAX;
    size_t maxprefix = max - 1 - HASH_LEN, n = 0, i;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = NULL;
    enum common_rc rc = COMMON_OK;
    static const char hex[] = "0123456789abcdef";

    if (!kind || !*kind)
        return common_error_set(err, COMMON_EINVAL, "workload name: the owner's kind is empty");
    if (!group)
        return common_error_set(err, COMMON_EINVAL, "workload name: the owner's group is missing");
    if (!owner_name || !*owner_name)
        return common_error_set(err, COMMON_EINVAL, "workload name: metadata.name is empty");
    if (!owner_uid)
        return common_error_set(err, COMMON_EINVAL, "workload name: metadata.uid is missing");
    if (size < max + 1)
        return common_error_set(err, COMMON_EINVAL, "workload name: buffer of %zu bytes < %zu",
                                size, max + 1);
    /* prefix: strings.ToLower(kind) + "-" + name, cut to maxprefix bytes (Go's s[:n]) */
    for (i = 0; kind[i] && n < maxprefix; i++)
        out[n++] = (char)tolower((unsigned char)kind[i]);
    if (n < maxprefix)
        out[n++] = '-';
    for (i = 0; owner_name[i] && n < maxprefix; i++)
        out[n++] = owner_name[i];

    ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) ||
        !EVP_DigestUpdate(ctx, kind, strlen(kind)) || !EVP_DigestUpdate(ctx, "\n", 1) ||
        !EVP_DigestUpdate(ctx, group, strlen(group)) || !EVP_DigestUpdate(ctx, "\n", 1) ||
        !EVP_DigestUpdate(ctx, owner_name, strlen(owner_name)) || !EVP_DigestUpdate(ctx, "\n", 1) ||
        !EVP_DigestUpdate(ctx, owner_uid, strlen(owner_uid)) ||
        !EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen < 3) {
        rc = common_error_set(err, COMMON_ENOMEM, "workload name: SHA-1 failed");
        goto out;
    }
    out[n++] = '-';
    for (i = 0; i < HASH_LEN; i++)
        out[n++] = hex[(md[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
    out[n] = '\0';
out:
    EVP_MD_CTX_free(ctx);
    return rc;
}

const char *kueue_queue_name(const json_t *trainjob)
{
    const char *q =
        json_string_value(json_object_get(get2(trainjob, "metadata", "labels"), KUEUE_QUEUE_LABEL));
    return q && *q ? q : NULL;
}

int kueue_has_runtime_patch(const json_t *trainjob)
{
    size_t i;
    const json_t *p;
    json_array_foreach(get2(trainjob, "spec", "runtimePatches"), i, p)
    {
        const char *m = json_string_value(json_object_get(p, "manager"));
        if (m && strcmp(m, KUEUE_RUNTIME_PATCH_MANAGER) == 0)
            return 1;
    }
    return 0;
}

/* an integer field of obj, or def when absent; -1 (with err) when present but not an int32 */
static long long int_field(const json_t *obj, const char *key, long long def)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return def;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return -1;
    return json_integer_value(v);
}

/* a class among o->classes with kind (apiVersion group grp) and name, or NULL */
static const json_t *find_class(const json_t *classes, const char *grp, const char *kind,
                                const char *name)
{
    size_t i, glen = strlen(grp);
    const json_t *c;
    json_array_foreach(classes, i, c)
    {
        const char *api = json_string_value(json_object_get(c, "apiVersion"));
        const char *k = json_string_value(json_object_get(c, "kind"));
        const char *n = str2(c, "metadata", "name");
        if (api && k && n && strncmp(api, grp, glen) == 0 && api[glen] == '/' &&
            strcmp(k, kind) == 0 && (!name || strcmp(n, name) == 0))
            return c;
    }
    return NULL;
}

/* the priorityClassRef/priority of spec (Kueue's ExtractPriority, see kueue.h) */
static enum common_rc set_priority(json_t *spec, const json_t *trainjob, const json_t *podsets,
                                   const json_t *classes, const char **note,
                                   struct common_error *err)
{
    const char *wpc = json_string_value(
        json_object_get(get2(trainjob, "metadata", "labels"), KUEUE_PRIORITY_LABEL));
    const char *pc = NULL, *grp = "scheduling.k8s.io", *kind = "PriorityClass";
    const json_t *cls = NULL, *ps;
    size_t i;

    if (wpc && *wpc) {
        grp = "kueue.x-k8s.io";
        kind = "WorkloadPriorityClass";
        pc = wpc;
    } else {
        json_array_foreach(podsets, i, ps)
        {
            const char *n = str2(get2(ps, "template", "spec"), "priorityClassName", NULL);
            if (n && *n) {
                pc = n;
                break;
            }
        }
    }
    if (pc) {
        cls = find_class(classes, grp, kind, pc);
    } else {
        /* the global default PriorityClass with the lowest value, if any */
        const json_t *c;
        json_array_foreach(classes, i, c)
        {
            const char *api = json_string_value(json_object_get(c, "apiVersion"));
            const char *k = json_string_value(json_object_get(c, "kind"));
            if (!api || !k || strncmp(api, "scheduling.k8s.io/", 18) != 0 ||
                strcmp(k, "PriorityClass") != 0 ||
                !json_is_true(json_object_get(c, "globalDefault")))
                continue;
            if (!cls || json_integer_value(json_object_get(c, "value")) <
                            json_integer_value(json_object_get(cls, "value")))
                cls = c;
        }
        if (!cls)
            return json_object_set_new(spec, "priority", json_integer(0)) ? COMMON_ENOMEM
                                                                          : COMMON_OK;
        pc = str2(cls, "metadata", "name");
    }
    if (json_object_set_new(spec, "priorityClassRef",
                            json_pack("{s:s, s:s, s:s}", "group", grp, "kind", kind, "name", pc)))
        return common_error_set(err, COMMON_ENOMEM, "workload: out of memory");
    if (!cls) {
        *note = wpc && *wpc ? "the WorkloadPriorityClass named by the label "
                              "kueue.x-k8s.io/priority-class was not given: priority left out "
                              "(Kueue reads its value from the cluster)"
                            : "the PriorityClass named by spec.priorityClassName was not given: "
                              "priority left out (Kueue reads its value from the cluster)";
        return COMMON_OK;
    }
    if (!json_is_integer(json_object_get(cls, "value")))
        return common_error_set(err, COMMON_EINVAL, "%s %s: value is not an integer", kind, pc);
    return json_object_set_new(spec, "priority",
                               json_integer(json_integer_value(json_object_get(cls, "value"))))
               ? common_error_set(err, COMMON_ENOMEM, "workload: out of memory")
               : COMMON_OK;
}

/* the podsetSliceRequiredTopologyConstraints of annotation text (a JSON array of 1 to 3
 * {topology, size}); *out a new array; an error names the annotation under `where` */
static enum common_rc multi_layer(const char *text, const char *where, json_t **out,
                                  struct common_error *err)
{
    json_error_t je;
    json_t *in = json_loads(text, JSON_DECODE_ANY, &je), *arr = json_array(), *l;
    size_t i;

    *out = NULL;
    if (!arr)
        goto oom;
    if (!json_is_array(in) || json_array_size(in) < 1 || json_array_size(in) > 3) {
        json_decref(in);
        json_decref(arr);
        return common_error_set(err, COMMON_EINVAL,
                                "%s.annotations[" KUEUE_SLICE_LAYERS_ANN "]: \"%s\" is not a JSON "
                                "array of 1 to 3 {topology, size}",
                                where, text);
    }
    json_array_foreach(in, i, l)
    {
        const char *topo = json_string_value(json_object_get(l, "topology"));
        const json_t *size = json_object_get(l, "size");
        json_t *o;
        if (!json_is_object(l) || !topo || !*topo || !json_is_integer(size) ||
            json_integer_value(size) < 1 || json_integer_value(size) > INT32_MAX) {
            json_decref(in);
            json_decref(arr);
            return common_error_set(err, COMMON_EINVAL,
                                    "%s.annotations[" KUEUE_SLICE_LAYERS_ANN "][%zu]: needs a "
                                    "topology (a node label) and a size (an int32 >= 1)",
                                    where, i);
        }
        o = json_pack("{s:s, s:I}", "topology", topo, "size", json_integer_value(size));
        if (!o || json_array_append_new(arr, o))
            goto oom;
    }
    json_decref(in);
    *out = arr;
    return COMMON_OK;
oom:
    json_decref(in);
    json_decref(arr);
    return common_error_set(err, COMMON_ENOMEM, "workload: out of memory");
}

/* topologyRequest of a podSet (jobframework/tas.go Build with the JobSet's index labels) */
static enum common_rc topology_request(const json_t *annotations, long long replicas,
                                       const char *where, json_t **out, struct common_error *err)
{
    const char *req =
        json_string_value(json_object_get(annotations, "kueue.x-k8s.io/podset-required-topology"));
    const char *pref =
        json_string_value(json_object_get(annotations, "kueue.x-k8s.io/podset-preferred-topology"));
    const char *unc = json_string_value(
        json_object_get(annotations, "kueue.x-k8s.io/podset-unconstrained-topology"));
    const char *slice = json_string_value(
        json_object_get(annotations, "kueue.x-k8s.io/podset-slice-required-topology"));
    const char *size =
        json_string_value(json_object_get(annotations, "kueue.x-k8s.io/podset-slice-size"));
    const char *group =
        json_string_value(json_object_get(annotations, "kueue.x-k8s.io/podset-group-name"));
    const char *layers = json_string_value(json_object_get(annotations, KUEUE_SLICE_LAYERS_ANN));
    json_t *t = json_object();
    enum common_rc rc;
    int bad = 0;

    if (!t)
        goto oom;
    if (req)
        bad |= json_object_set_new(t, "required", json_string(req));
    else if (pref)
        bad |= json_object_set_new(t, "preferred", json_string(pref));
    else if (unc) {
        /* strconv.ParseBool */
        static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True", NULL};
        static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False", NULL};
        int v = -1;
        for (int i = 0; yes[i]; i++)
            if (strcmp(unc, yes[i]) == 0)
                v = 1;
        for (int i = 0; no[i]; i++)
            if (strcmp(unc, no[i]) == 0)
                v = 0;
        if (v < 0) {
            json_decref(t);
            return common_error_set(err, COMMON_EINVAL,
                                    "%s.annotations[kueue.x-k8s.io/podset-unconstrained-topology]"
                                    ": \"%s\" is not a boolean",
                                    where, unc);
        }
        bad |= json_object_set_new(t, "unconstrained", json_boolean(v));
    }
    if (layers) {
        /* Kueue v0.17 on (TASMultiLayerTopology: alpha, beta and on by default in v0.19):
         * json.Unmarshal into []{topology, size}, 1 to 3 layers; it takes the place of the
         * two-level slice fields */
        json_t *arr = NULL;
        rc = multi_layer(layers, where, &arr, err);
        if (rc) {
            json_decref(t);
            return rc;
        }
        bad |= json_object_set_new(t, "podsetSliceRequiredTopologyConstraints", arr);
    } else if (slice && size) {
        char *end = NULL;
        long long n;
        errno = 0;
        n = strtoll(size, &end, 10);
        if (errno || !*size || *end || n < INT32_MIN || n > INT32_MAX) {
            json_decref(t);
            return common_error_set(err, COMMON_EINVAL,
                                    "%s.annotations[kueue.x-k8s.io/podset-slice-size]: \"%s\" is "
                                    "not an int32",
                                    where, size);
        }
        bad |= json_object_set_new(t, "podSetSliceRequiredTopology", json_string(slice));
        bad |= json_object_set_new(t, "podSetSliceSize", json_integer(n));
    }
    bad |= json_object_set_new(t, "podIndexLabel",
                               json_string("batch.kubernetes.io/job-completion-index"));
    bad |= json_object_set_new(t, "subGroupCount", json_integer(replicas));
    bad |=
        json_object_set_new(t, "subGroupIndexLabel", json_string("jobset.sigs.k8s.io/job-index"));
    if (group && (req || pref))
        bad |= json_object_set_new(t, "podSetGroupName", json_string(group));
    if (bad)
        goto oom;
    *out = t;
    return COMMON_OK;
oom:
    json_decref(t);
    return common_error_set(err, COMMON_ENOMEM, "workload: out of memory");
}

/* every container and init container of pod spec ps without resources gets `resources: {}`,
 * as Kueue's Go types write a Container (ResourceRequirements is a struct, never left out);
 * 0, or -1 out of memory */
static int empty_resources(json_t *ps)
{
    static const char *const lists[] = {"initContainers", "containers"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(ps, lists[l]), i, c)
        {
            if (json_is_object(c) && !json_object_get(c, "resources") &&
                json_object_set_new(c, "resources", json_object()))
                return -1;
        }
    }
    return 0;
}

/* one podSet from replicatedJobs[i] */
static enum common_rc podset(const json_t *rj, size_t i, int tas, json_t **out,
                             struct common_error *err)
{
    char where[96], lname[64];
    const char *name = str2(rj, "name", NULL);
    const json_t *jspec = get2(rj, "template", "spec"), *tmpl = json_object_get(jspec, "template");
    const json_t *meta = json_object_get(tmpl, "metadata");
    long long replicas = int_field(rj, "replicas", 1), par = int_field(jspec, "parallelism", 1),
              comp;
    json_t *ps = NULL, *t = NULL, *tm = NULL, *topo = NULL;
    enum common_rc rc;
    size_t n;

    snprintf(where, sizeof(where), "spec.replicatedJobs[%zu]", i);
    if (!name || !*name || strlen(name) >= sizeof(lname))
        return common_error_set(err, COMMON_EINVAL, "%s.name: missing or longer than 63", where);
    for (n = 0; name[n]; n++)
        lname[n] = (char)tolower((unsigned char)name[n]);
    lname[n] = '\0';
    comp = int_field(jspec, "completions", par);
    if (replicas < 0 || par < 0 || comp < 0)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: replicas, parallelism and completions must be int32 >= 0",
                                where);
    if (!json_is_object(json_object_get(tmpl, "spec")))
        return common_error_set(err, COMMON_EINVAL, "%s.template.spec.template.spec: missing",
                                where);
    if (comp < par)
        par = comp;
    if (replicas * par > INT32_MAX)
        return common_error_set(err, COMMON_EINVAL, "%s: replicas x pods per Job exceeds int32",
                                where);
    tm = json_object();
    t = json_pack("{s:o, s:o}", "metadata", tm, "spec",
                  json_deep_copy(json_object_get(tmpl, "spec")));
    if (!tm || !t || empty_resources(json_object_get(t, "spec")))
        goto oom;
    if (json_object_get(meta, "labels") &&
        json_object_set(tm, "labels", json_object_get(meta, "labels")))
        goto oom;
    if (json_object_get(meta, "annotations") &&
        json_object_set(tm, "annotations", json_object_get(meta, "annotations")))
        goto oom;
    ps = json_pack("{s:s, s:I, s:O}", "name", lname, "count", (json_int_t)(replicas * par),
                   "template", t);
    json_decref(t);
    t = NULL;
    if (!ps)
        goto oom;
    if (tas) {
        snprintf(where, sizeof(where), "spec.replicatedJobs[%zu].template.spec.template.metadata",
                 i);
        rc = topology_request(json_object_get(meta, "annotations"), replicas, where, &topo, err);
        if (rc) {
            json_decref(ps);
            return rc;
        }
        if (json_object_set_new(ps, "topologyRequest", topo))
            goto oom;
    }
    *out = ps;
    return COMMON_OK;
oom:
    json_decref(t);
    json_decref(ps);
    return common_error_set(err, COMMON_ENOMEM, "workload: out of memory");
}

enum common_rc kueue_workload_preview(const json_t *trainjob, const json_t *jobset,
                                      const struct kueue_preview_opts *o, json_t **workload,
                                      const char **note, struct common_error *err)
{
    static const struct kueue_preview_opts defaults = {0};
    const char *name = str2(trainjob, "metadata", "name"),
               *ns = str2(trainjob, "metadata", "namespace"),
               *uid = str2(trainjob, "metadata", "uid");
    const char *api = json_string_value(json_object_get(trainjob, "apiVersion"));
    const json_t *rjs = get2(jobset, "spec", "replicatedJobs"), *rj, *v;
    const json_t *labels = get2(trainjob, "metadata", "labels");
    char wlname[KUEUE_WORKLOAD_NAME_MAX + 1];
    json_t *wl = NULL, *podsets = NULL, *ann = NULL, *spec, *ps = NULL;
    const char *k, *q;
    enum common_rc rc;
    size_t i;

    *workload = NULL;
    if (note)
        *note = NULL;
    if (!o)
        o = &defaults;
    if (!ns)
        ns = "default";
    if (!uid || !*uid)
        return common_error_set(err, COMMON_EINVAL,
                                "metadata.uid: missing (the Workload name hashes it)");
    rc = kueue_workload_name("TrainJob", "trainer.kubeflow.org", name, uid, o->short_names, wlname,
                             sizeof(wlname), err);
    if (rc)
        return rc;
    if (!json_is_array(rjs) || json_array_size(rjs) == 0)
        return common_error_set(err, COMMON_EINVAL, "JobSet spec.replicatedJobs: empty");
    if (json_array_size(rjs) > 18)
        return common_error_set(err, COMMON_EINVAL,
                                "JobSet spec.replicatedJobs: %zu, a Workload holds at most 18 "
                                "podSets",
                                json_array_size(rjs));
    podsets = json_array();
    ann = json_object();
    if (!podsets || !ann)
        goto oom;
    json_array_foreach(rjs, i, rj)
    {
        rc = podset(rj, i, !o->no_tas, &ps, err);
        if (rc)
            goto fail;
        if (json_array_append_new(podsets, ps))
            goto oom;
    }
    json_object_foreach((json_t *)get2(trainjob, "metadata", "annotations"), k,
                        v) if (strncmp(k, "provreq.kueue.x-k8s.io/", 23) == 0 &&
                               json_object_set(ann, k, (json_t *)v)) goto oom;
    wl = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:[s], s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}}",
                   "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name",
                   wlname, "namespace", ns, "labels", "kueue.x-k8s.io/job-uid", uid, "finalizers",
                   "kueue.x-k8s.io/resource-in-use", "ownerReferences", "apiVersion",
                   api ? api : "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "name", name,
                   "uid", uid, "controller", 1, "blockOwnerDeletion", 1);
    spec = json_object();
    if (!wl || !spec || json_object_set_new(wl, "spec", spec))
        goto oom;
    /* Kueue leaves the job-uid label out when the uid is no valid label value */
    if (common_names_label_value(uid))
        json_object_del(json_object_get(wl, "metadata"), "labels");
    if (json_object_size(ann) &&
        json_object_set(json_object_get(wl, "metadata"), "annotations", ann))
        goto oom;
    q = kueue_queue_name(trainjob);
    if (q && json_object_set_new(spec, "queueName", json_string(q)))
        goto oom;
    if (json_object_set(spec, "podSets", podsets))
        goto oom;
    /* the Workload CRD's default, which Kueue's Workload carries */
    if (json_object_set_new(spec, "active", json_true()))
        goto oom;
    rc = set_priority(spec, trainjob, podsets, o->classes, note, err);
    if (rc)
        goto fail;
    {
        /* label kueue.x-k8s.io/max-exec-time-seconds: a positive int32, else ignored */
        const char *s =
            json_string_value(json_object_get(labels, "kueue.x-k8s.io/max-exec-time-seconds"));
        char *end = NULL;
        long long n;
        if (s && *s) {
            errno = 0;
            n = strtoll(s, &end, 10);
            if (!errno && !*end && n > 0 && n <= INT32_MAX &&
                json_object_set_new(spec, "maximumExecutionTimeSeconds", json_integer(n)))
                goto oom;
        }
    }
    json_decref(podsets);
    json_decref(ann);
    *workload = wl;
    return COMMON_OK;
oom:
    rc = common_error_set(err, COMMON_ENOMEM, "workload: out of memory");
fail:
    json_decref(podsets);
    json_decref(ann);
    json_decref(wl);
    return rc;
}

/* ---- the backend: Kueue queues the TrainJob; render previews the Workload ---- */

/*
 * translate: no gang object (Kueue admits the whole TrainJob, then pods schedule one by one);
 * when the caller keeps the preview (render), the Workload Kueue will create goes to it. Its
 * podSets come from the JobSet as Kueue renders it (trainjob_options.kueue_view: Kueue v0.19
 * builds it with Trainer's JobSet builder and leaves out the ML policy's env, ports, volumes
 * and mounts), rendered again here. A TrainJob given without metadata.uid (render of a file) is
 * previewed with the uid its rendered JobSet's owner reference carries, the placeholder
 * trainjob_render used. Priority classes come from opts->kueue_classes (render: the
 * WorkloadPriorityClass and PriorityClass documents of its input); a named class not among them
 * is shown by reference only (kueue_workload_preview's note), as Kueue reads it from the cluster.
 */
static enum common_rc kueue_translate(const struct backend_in *in, json_t *objects, json_t *preview,
                                      struct common_error *err)
{
    const json_t *js = NULL, *o, *kjs = NULL;
    json_t *tj = NULL, *wl = NULL;
    const char *note = NULL;
    struct kueue_preview_opts po = {0};
    struct trainjob_options to = {0};
    struct trainjob_output out = {0};
    struct common_arena *a = NULL;
    enum common_rc rc;
    size_t i;

    if (!in->preview_wanted)
        return COMMON_OK; /* the reconciler: Kueue makes the Workload */
    json_array_foreach(objects, i, o)
    {
        const char *k = json_string_value(json_object_get(o, "kind"));
        if (k && strcmp(k, "JobSet") == 0)
            js = o;
    }
    if (!js)
        return common_error_set(err, COMMON_EINVAL, "kueue: the TrainJob rendered no JobSet");
    if ((rc = backend_trainjob_as_created(in->trainjob, js, &tj, err)))
        return rc;
    /* the JobSet Kueue renders for its podSets: Trainer's builder without the ML policy's
     * merge, and no gang marks of trainsched's */
    if (in->opts)
        to = *in->opts;
    to.kueue_view = 1;
    to.no_gang_marks = 1;
    /* Kueue builds with Trainer's code, so the runtime's podGroupPolicy decides the gang pod
     * labels, whatever backend trainsched renders for */
    to.gang = TRAINJOB_GANG_FROM_RUNTIME;
    to.status_server = NULL;
    a = common_arena_create(0);
    if (!a) {
        json_decref(tj);
        return common_error_set(err, COMMON_ENOMEM, "kueue: out of memory");
    }
    rc = trainjob_render(a, tj, in->runtime, &to, &out, err);
    json_array_foreach(out.objects, i, o)
    {
        const char *k = json_string_value(json_object_get(o, "kind"));
        if (k && strcmp(k, "JobSet") == 0)
            kjs = o;
    }
    if (!rc && !kjs)
        rc = common_error_set(err, COMMON_EINVAL, "kueue: the TrainJob rendered no JobSet");
    po.classes = in->opts ? in->opts->kueue_classes : NULL;
    if (!rc)
        rc = kueue_workload_preview(tj, kjs, &po, &wl, &note, err);
    json_decref(out.objects);
    common_arena_destroy(a);
    json_decref(tj);
    if (rc)
        return rc;
    (void)note; /* the reference without a priority says it: Kueue reads the value */
    return json_array_append_new(preview, wl)
               ? common_error_set(err, COMMON_ENOMEM, "kueue: out of memory")
               : COMMON_OK;
}

const struct common_kube_resource kueue_workloads = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};

/* Kueue's Workloads (kueue.x-k8s.io/v1beta2, Kueue v0.15 on; trainsched needs v0.17 for the
 * runtimePatches handshake): without Kueue nothing would queue the TrainJob, which would run
 * outside any quota */
static const struct common_kube_resource *const kueue_requires[] = {&kueue_workloads, NULL};

const struct backend backend_kueue = {
    .name = "kueue",
    .built = 1,
    .what = "Kueue queues the TrainJob (label kueue.x-k8s.io/queue-name); no gang object",
    .core_gang = TRAINJOB_GANG_NONE,
    .requires = kueue_requires,
    .install = "install Kueue v0.17 or later (tested with v" KUEUE_TESTED_VERSION
               ") with the trainer.kubeflow.org/trainjob framework",
    .translate = kueue_translate,
};
