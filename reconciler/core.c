/*
 * reconciler/core.c - the pure decisions of one TrainJob reconcile (see core.h).
 */
#include <stdint.h>
#include <string.h>

#include "common/yaml.h"
#include "integrations/kueue.h"
#include "reconciler/core.h"
#include "trainjob/status.h"

static const char *str_at(const json_t *obj, const char *k1, const char *k2)
{
    const json_t *v = json_object_get(obj, k1);
    if (k2)
        v = json_object_get(v, k2);
    return json_string_value(v);
}

int rc_queue_without_kueue(const json_t *trainjob, char *msg, size_t size)
{
    const char *q = kueue_queue_name(trainjob);
    int suspended = json_is_true(json_object_get(json_object_get(trainjob, "spec"), "suspend"));
    if (!q || kueue_has_runtime_patch(trainjob))
        return 0;
    /* Kueue's webhook suspends a queued TrainJob; from v0.17 it also adds its runtimePatches
     * entry. Suspended without the entry: most likely a Kueue older than v0.17, which wrote
     * spec.podSpecOverrides (gone from Trainer v2.2 on) instead */
    snprintf(msg, size,
             "metadata.labels[" KUEUE_QUEUE_LABEL "]: \"%s\" names a Kueue LocalQueue, but Kueue "
             "did not take this TrainJob: spec.runtimePatches has no entry of "
             "manager " KUEUE_RUNTIME_PATCH_MANAGER ", which Kueue's webhook adds from Kueue "
             "v0.17 on. %s Nothing is created; install Kueue v0.17 or later (tested with "
             "v" KUEUE_TESTED_VERSION ") with the trainer.kubeflow.org/trainjob framework and "
             "recreate the TrainJob, or remove the label",
             q,
             suspended ? "The TrainJob is suspended, as Kueue's webhook leaves it: a Kueue older "
                         "than v0.17 suspends a queued TrainJob without writing the field "
                         "spec.runtimePatches (it writes spec.podSpecOverrides, which Trainer "
                         "v2.2 removed)."
                       : "Kueue is not installed, runs without the trainer.kubeflow.org/trainjob "
                         "framework, or is older than v0.17.");
    return 1;
}

int rc_managed(const json_t *trainjob)
{
    const json_t *mb = json_object_get(json_object_get(trainjob, "spec"), "managedBy");
    if (!mb || json_is_null(mb))
        return 1;
    return json_is_string(mb) && strcmp(json_string_value(mb), RC_MANAGED_BY) == 0;
}

static int group_of(const char *api_version, const char *group, size_t glen)
{
    /* "trainer.kubeflow.org/v1alpha1" has group "trainer.kubeflow.org" */
    const char *slash;
    if (!api_version)
        return 0;
    slash = strchr(api_version, '/');
    return slash && (size_t)(slash - api_version) == glen && memcmp(api_version, group, glen) == 0;
}

int rc_controller_owner(const json_t *obj, const char **name, const char **uid)
{
    const json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
    size_t i;
    const json_t *r;

    json_array_foreach(refs, i, r)
    {
        const char *kind = json_string_value(json_object_get(r, "kind"));
        if (!json_is_true(json_object_get(r, "controller")) || !kind ||
            strcmp(kind, "TrainJob") != 0 ||
            !group_of(json_string_value(json_object_get(r, "apiVersion")), "trainer.kubeflow.org",
                      strlen("trainer.kubeflow.org")))
            continue;
        if (!json_string_value(json_object_get(r, "name")))
            continue;
        if (name)
            *name = json_string_value(json_object_get(r, "name"));
        if (uid)
            *uid = json_string_value(json_object_get(r, "uid"));
        return 1;
    }
    return 0;
}

enum common_rc rc_snapshot_runtime(const json_t *trainjob, const json_t *cm, json_t **runtime,
                                   struct common_error *err)
{
    const char *ns = str_at(cm, "metadata", "namespace");
    const char *cmname = str_at(cm, "metadata", "name");
    const char *tjuid = str_at(trainjob, "metadata", "uid");
    const char *ouid = NULL, *data, *sname, *skind, *sapi;
    struct trainjob_ref ref;
    struct common_yaml_docs docs;
    enum common_rc rc;
    const char *slash;

    *runtime = NULL;
    if (!ns)
        ns = "";
    if (!cmname)
        cmname = "";
    if (!rc_controller_owner(cm, NULL, &ouid) || !ouid || !tjuid || strcmp(ouid, tjuid) != 0)
        return common_error_set(err, COMMON_EINVAL,
                                "runtime snapshot %s/%s: not controlled by TrainJob uid %s", ns,
                                cmname, tjuid ? tjuid : "(none)");
    data = json_string_value(json_object_get(json_object_get(cm, "data"), "runtime"));
    if (!data)
        return common_error_set(err, COMMON_EINVAL,
                                "runtime snapshot %s/%s: data.runtime is missing", ns, cmname);
    rc = common_yaml_load(data, strlen(data), "data.runtime", NULL, &docs, err);
    if (rc == COMMON_ENOMEM) {
        common_yaml_docs_free(&docs);
        return rc;
    }
    if (rc != COMMON_OK || docs.n != 1 || !json_is_object(docs.docs[0])) {
        char why[512];
        snprintf(why, sizeof(why), "%s", rc ? err->msg : "not one object");
        common_yaml_docs_free(&docs);
        return common_error_set(err, COMMON_EINVAL,
                                "runtime snapshot %s/%s: data.runtime does not parse: %s", ns,
                                cmname, why);
    }
    rc = trainjob_runtime_ref(trainjob, ns, &ref, err);
    if (rc) {
        common_yaml_docs_free(&docs);
        return rc;
    }
    sname = str_at(docs.docs[0], "metadata", "name");
    skind = json_string_value(json_object_get(docs.docs[0], "kind"));
    sapi = json_string_value(json_object_get(docs.docs[0], "apiVersion"));
    if (!sname || strcmp(sname, ref.name) != 0) {
        common_error_set(err, COMMON_EINVAL,
                         "runtime snapshot %s/%s: holds runtime \"%s\", spec.runtimeRef.name is "
                         "\"%s\"",
                         ns, cmname, sname ? sname : "", ref.name);
        common_yaml_docs_free(&docs);
        return COMMON_EINVAL;
    }
    if (!skind || strcmp(skind, ref.kind) != 0) {
        common_error_set(err, COMMON_EINVAL,
                         "runtime snapshot %s/%s: holds kind \"%s\", spec.runtimeRef.kind is "
                         "\"%s\"",
                         ns, cmname, skind ? skind : "", ref.kind);
        common_yaml_docs_free(&docs);
        return COMMON_EINVAL;
    }
    slash = sapi ? strchr(sapi, '/') : NULL;
    if (!slash || strlen(ref.api_group) != (size_t)(slash - sapi) ||
        memcmp(sapi, ref.api_group, strlen(ref.api_group)) != 0) {
        common_error_set(
            err, COMMON_EINVAL,
            "runtime snapshot %s/%s: holds apiVersion \"%s\", spec.runtimeRef.apiGroup "
            "is \"%s\"",
            ns, cmname, sapi ? sapi : "", ref.api_group);
        common_yaml_docs_free(&docs);
        return COMMON_EINVAL;
    }
    *runtime = json_incref(docs.docs[0]);
    common_yaml_docs_free(&docs);
    return COMMON_OK;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

enum rc_child_kind rc_child_kind_of(const json_t *obj)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *name = str_at(obj, "metadata", "name");

    if (!api || !kind)
        return RC_CHILD_OTHER;
    if (strcmp(api, "v1") == 0 && strcmp(kind, "ConfigMap") == 0)
        return name && ends_with(name, "-runtime-snapshot") ? RC_CHILD_SNAPSHOT
                                                            : RC_CHILD_CONFIGMAP;
    if (strcmp(api, "v1") == 0 && strcmp(kind, "Secret") == 0)
        return RC_CHILD_SECRET;
    if (strcmp(kind, "JobSet") == 0 && strncmp(api, "jobset.x-k8s.io/", 16) == 0)
        return RC_CHILD_JOBSET;
    if (strcmp(kind, "PodGroup") == 0 && (strncmp(api, "scheduling.x-k8s.io/", 20) == 0 ||
                                          strncmp(api, "scheduling.volcano.sh/", 22) == 0 ||
                                          strcmp(api, "scheduling.run.ai/v2alpha2") == 0 ||
                                          strcmp(api, "scheduling.k8s.io/v1alpha2") == 0 ||
                                          strcmp(api, "scheduling.k8s.io/v1beta1") == 0))
        return RC_CHILD_PODGROUP;
    if (strcmp(kind, "Workload") == 0 && strcmp(api, "scheduling.k8s.io/v1beta1") == 0)
        return RC_CHILD_PODGROUP; /* the native gang's Workload: written as its PodGroup is */
    return RC_CHILD_OTHER;
}

static int suspended(const json_t *obj)
{
    return json_is_true(json_object_get(json_object_get(obj, "spec"), "suspend"));
}

enum rc_action rc_child_action(const json_t *trainjob, enum rc_child_kind kind,
                               const json_t *existing)
{
    if (!existing)
        return (kind == RC_CHILD_SNAPSHOT || kind == RC_CHILD_SECRET) ? RC_CREATE : RC_APPLY;
    switch (kind) {
    case RC_CHILD_SNAPSHOT:
    case RC_CHILD_SECRET:
        return RC_SKIP;
    case RC_CHILD_JOBSET:
        return suspended(trainjob) || suspended(existing) ? RC_APPLY : RC_SKIP;
    case RC_CHILD_PODGROUP:
        return suspended(trainjob) ? RC_APPLY : RC_SKIP;
    case RC_CHILD_CONFIGMAP:
    case RC_CHILD_OTHER:
        break;
    }
    return RC_APPLY;
}

/* a and b equal, a missing field (or JSON null: the API server writes a template's unset
 * schedulingConstraints as null) the same as dflt (NULL: missing) */
static int same_or(const json_t *a, const json_t *b, const json_t *dflt)
{
    if (!a || json_is_null(a))
        a = dflt;
    if (!b || json_is_null(b))
        b = dflt;
    return (!a && !b) || (a && b && json_equal(a, b));
}

/* the immutable fields trainsched writes in a v1beta1 PodGroup spec or podGroupTemplate */
static int same_immutable(const json_t *r, const json_t *e)
{
    static const char *const fields[] = {"workloadRef", "schedulingConstraints", "resourceClaims",
                                         NULL};
    json_t *single = json_pack("{s:{}}", "single");
    json_t *empty = json_string("");
    const json_t *rp = json_object_get(r, "schedulingPolicy");
    const json_t *ep = json_object_get(e, "schedulingPolicy");
    int same = single && empty &&
               same_or(json_object_get(r, "disruptionMode"), json_object_get(e, "disruptionMode"),
                       single) &&
               same_or(json_object_get(r, "priorityClassName"),
                       json_object_get(e, "priorityClassName"), empty) &&
               !json_object_get(rp, "gang") == !json_object_get(ep, "gang") &&
               !json_object_get(rp, "basic") == !json_object_get(ep, "basic");

    for (size_t i = 0; same && fields[i]; i++)
        same = same_or(json_object_get(r, fields[i]), json_object_get(e, fields[i]), NULL);
    json_decref(single);
    json_decref(empty);
    return same;
}

static int is_native_beta(const json_t *obj, const char *kind)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    const char *k = json_string_value(json_object_get(obj, "kind"));
    return api && k && strcmp(api, "scheduling.k8s.io/v1beta1") == 0 &&
           (kind ? strcmp(k, kind) == 0
                 : (strcmp(k, "PodGroup") == 0 || strcmp(k, "Workload") == 0));
}

/* the template of list named like t, or NULL */
static const json_t *template_named(const json_t *list, const json_t *t)
{
    size_t i;
    const json_t *o;

    json_array_foreach(list, i, o)
    {
        if (json_equal(json_object_get(o, "name"), json_object_get(t, "name")))
            return o;
    }
    return NULL;
}

int rc_child_replace(const json_t *rendered, const json_t *existing)
{
    const char *api = json_string_value(json_object_get(rendered, "apiVersion"));
    const char *kind = json_string_value(json_object_get(rendered, "kind"));
    const json_t *rs = json_object_get(rendered, "spec"), *es = json_object_get(existing, "spec");

    if (!existing || !api || !kind)
        return 0;
    if (is_native_beta(rendered, "PodGroup"))
        return !same_immutable(rs, es);
    if (is_native_beta(rendered, "Workload")) {
        const json_t *rt = json_object_get(rs, "podGroupTemplates");
        const json_t *et = json_object_get(es, "podGroupTemplates");
        size_t i;
        const json_t *t;

        if (!same_or(json_object_get(rs, "controllerRef"), json_object_get(es, "controllerRef"),
                     NULL) ||
            json_array_size(rt) != json_array_size(et))
            return 1;
        json_array_foreach(rt, i, t)
        {
            const json_t *old = template_named(et, t);
            if (!old || !same_immutable(t, old))
                return 1;
        }
        return 0;
    }
    if (strcmp(api, "scheduling.k8s.io/v1alpha2") != 0 || strcmp(kind, "PodGroup") != 0)
        return 0;
    /* the server adds no defaults inside schedulingPolicy; disruptionMode defaults to "Pod" */
    return !json_equal(json_object_get(rs, "schedulingPolicy"),
                       json_object_get(es, "schedulingPolicy"));
}

/* set: present and not JSON null */
static int set_in(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return v && !json_is_null(v);
}

/* the bits of one PodGroup spec or podGroupTemplate */
static unsigned fields_of(const json_t *spec)
{
    return (set_in(spec, "schedulingConstraints") ? RC_NATIVE_TOPOLOGY : 0) |
           (set_in(spec, "resourceClaims") ? RC_NATIVE_CLAIMS : 0);
}

unsigned rc_native_fields(const json_t *obj)
{
    const json_t *spec = json_object_get(obj, "spec"), *t;
    unsigned bits = 0;
    size_t i;

    if (is_native_beta(obj, "PodGroup"))
        return fields_of(spec);
    if (!is_native_beta(obj, "Workload"))
        return 0;
    json_array_foreach(json_object_get(spec, "podGroupTemplates"), i, t) bits |= fields_of(t);
    return bits;
}

unsigned rc_native_dropped(const json_t *sent, const json_t *stored)
{
    const json_t *ss = json_object_get(sent, "spec"), *st = json_object_get(stored, "spec"), *t;
    unsigned bits = 0;
    size_t i;

    if (!sent || !stored || !is_native_beta(sent, NULL))
        return 0;
    if (is_native_beta(sent, "PodGroup"))
        return fields_of(ss) & ~fields_of(st);
    json_array_foreach(json_object_get(ss, "podGroupTemplates"), i, t)
    {
        const json_t *kept = template_named(json_object_get(st, "podGroupTemplates"), t);
        if (kept)
            bits |= fields_of(t) & ~fields_of(kept);
    }
    return bits;
}

static void strip_fields(json_t *spec, unsigned bits)
{
    if (bits & RC_NATIVE_TOPOLOGY)
        json_object_del(spec, "schedulingConstraints");
    if (bits & RC_NATIVE_CLAIMS)
        json_object_del(spec, "resourceClaims");
}

void rc_native_strip(json_t *obj, unsigned bits)
{
    json_t *spec = json_object_get(obj, "spec"), *t;
    size_t i;

    if (is_native_beta(obj, "PodGroup"))
        strip_fields(spec, bits);
    else if (is_native_beta(obj, "Workload"))
        json_array_foreach(json_object_get(spec, "podGroupTemplates"), i, t) strip_fields(t, bits);
}

const char *rc_native_field_gate(unsigned bit, const char **gate)
{
    switch (bit) {
    case RC_NATIVE_TOPOLOGY:
        *gate = "TopologyAwareWorkloadScheduling";
        return "spec.schedulingConstraints";
    case RC_NATIVE_CLAIMS:
        *gate = "DRAWorkloadResourceClaims";
        return "spec.resourceClaims";
    default:
        return NULL;
    }
}

const char *const RC_EMPTY_MAP_FIELDS[] = {
    "labels",
    "annotations",
    "nodeSelector",
    "requests",
    "limits",
    "overhead",
    "data",
    "binaryData",
    "matchLabels",
    "volumeAttributes",
    "minResources",
    "minTaskMember",
    /* objects whose fields are all maps: a pod template's metadata, a container's resources */
    "metadata",
    "resources",
    NULL,
};

static int empty_map_field(const char *key, const json_t *v)
{
    if (!json_is_object(v) || json_object_size(v) != 0)
        return 0;
    for (size_t i = 0; RC_EMPTY_MAP_FIELDS[i]; i++)
        if (strcmp(key, RC_EMPTY_MAP_FIELDS[i]) == 0)
            return 1;
    return 0;
}

/* drop the empty map fields of v (in place), depth first; 0 or -1 on no memory */
static int drop_empty_maps(json_t *v)
{
    size_t i;
    json_t *it;

    if (json_is_array(v)) {
        json_array_foreach(v, i, it)
        {
            if (drop_empty_maps(it))
                return -1;
        }
    } else if (json_is_object(v)) {
        const char *k;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, it)
        {
            if (drop_empty_maps(it))
                return -1;
            if (empty_map_field(k, it) && json_object_del(v, k))
                return -1;
        }
    }
    return 0;
}

json_t *rc_apply_body(const json_t *child)
{
    json_t *copy = child ? json_deep_copy(child) : NULL;

    if (copy && drop_empty_maps(copy)) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

enum rc_refused rc_jobset_refused(const json_t *trainjob, const json_t *existing,
                                  enum common_rc code, const char *msg)
{
    static const char *const immutable[] = {"field is immutable", "Value is immutable",
                                            "spec.replicatedJobs: Invalid value:"};
    const json_t *meta = json_object_get(existing, "metadata");
    int found = 0;

    if (code != COMMON_EINVAL || !msg || !json_is_string(json_object_get(meta, "uid")) ||
        !json_is_string(json_object_get(meta, "resourceVersion")) ||
        json_object_get(meta, "deletionTimestamp"))
        return RC_REFUSED_FAIL;
    for (size_t i = 0; i < sizeof(immutable) / sizeof(immutable[0]) && !found; i++)
        found = strstr(msg, immutable[i]) != NULL;
    if (!found)
        return RC_REFUSED_FAIL;
    if (suspended(existing))
        return RC_REFUSED_REPLACE;
    return suspended(trainjob) ? RC_REFUSED_SUSPEND : RC_REFUSED_FAIL;
}

/*
 * The RFC 7386 merge patch that turns object old into object new (either may be NULL = {}):
 * changed or added keys with their new value, removed keys with null, and for a key whose old
 * and new values are both objects, the merge patch between them (a merge patch merges objects
 * recursively, so sending the new object whole would keep fields it no longer has).
 * Returns a new object (empty when equal), or NULL on no memory.
 */
static json_t *merge_diff(const json_t *old, const json_t *new)
{
    json_t *diff = json_object(), *v;
    const char *k;

    if (!diff)
        return NULL;
    if (json_is_object(new))
        json_object_foreach((json_t *)new, k, v)
        {
            json_t *o = json_is_object(old) ? json_object_get(old, k) : NULL;
            if (o && json_equal(o, v))
                continue;
            if (json_is_object(o) && json_is_object(v)) {
                json_t *sub = merge_diff(o, v);
                if (!sub || json_object_set_new(diff, k, sub) != 0)
                    goto oom;
            } else if (json_object_set(diff, k, v) != 0) {
                goto oom;
            }
        }
    if (json_is_object(old))
        json_object_foreach((json_t *)old, k, v)
        {
            if (json_is_object(new) && json_object_get(new, k))
                continue;
            if (json_object_set_new(diff, k, json_null()) != 0)
                goto oom;
        }
    return diff;
oom:
    json_decref(diff);
    return NULL;
}

json_t *rc_status_patch(const json_t *old_status, const json_t *new_status, int *nomem)
{
    json_t *diff = merge_diff(old_status, new_status), *patch;

    *nomem = 0;
    if (!diff)
        goto oom;
    if (json_object_size(diff) == 0) {
        json_decref(diff);
        return NULL;
    }
    /* the CRD says status has minProperties 1: an emptied status keeps "conditions": [] */
    if (!json_is_object(new_status) || json_object_size(new_status) == 0)
        if (json_object_set_new(diff, "conditions", json_array()) != 0)
            goto oom;
    patch = json_object();
    if (!patch) {
        json_decref(diff);
        *nomem = 1;
        return NULL;
    }
    if (json_object_set_new(patch, "status", diff) != 0) { /* diff is released by jansson */
        json_decref(patch);
        *nomem = 1;
        return NULL;
    }
    return patch;
oom:
    json_decref(diff);
    *nomem = 1;
    return NULL;
}

const char *rc_first_error(const struct trainjob_errors *errs, const struct common_error *err)
{
    if (errs && errs->n > 0)
        return trainjob_errors_format(errs, 0);
    return err->msg;
}

int rc_error_doc_is_runtime(const struct trainjob_errors *errs, const json_t *runtime)
{
    return errs && errs->n > 0 && runtime && errs->items[0].doc == runtime;
}

int rc_transient(enum common_rc rc)
{
    switch (rc) {
    case COMMON_EINVAL:
    case COMMON_EUNSUPPORTED:
    case COMMON_ETOOBIG:
        return 0;
    default:
        return 1;
    }
}

/* ---- the JobSet that cannot create its Jobs ---- */

static int condition_true(const json_t *obj, const char *type)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (t && st && strcmp(t, type) == 0 && strcmp(st, "True") == 0)
            return 1;
    }
    return 0;
}

static int shows_a_job(const json_t *rjs)
{
    static const char *const counters[] = {"ready", "succeeded", "failed", "active", "suspended"};

    for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++)
        if (json_integer_value(json_object_get(rjs, counters[k])) > 0)
            return 1;
    return 0;
}

int rc_jobset_without_jobs(const json_t *jobset)
{
    const json_t *statuses =
        json_object_get(json_object_get(jobset, "status"), "replicatedJobsStatus");
    size_t i, j;
    json_t *rj, *st;

    if (!json_is_object(jobset) ||
        json_is_true(json_object_get(json_object_get(jobset, "spec"), "suspend")) ||
        condition_true(jobset, "Completed") || condition_true(jobset, "Failed"))
        return 0;
    json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i, rj)
    {
        const char *name = json_string_value(json_object_get(rj, "name"));
        int shown = 0;
        if (!name)
            continue;
        json_array_foreach(statuses, j, st)
        {
            const char *n = json_string_value(json_object_get(st, "name"));
            if (n && strcmp(n, name) == 0 && shows_a_job(st)) {
                shown = 1;
                break;
            }
        }
        if (!shown)
            return 1;
    }
    return 0;
}

/* seconds since the epoch of an Event, or -1 */
static int64_t event_time(const json_t *ev)
{
    static const char *const keys[] = {"eventTime", "lastTimestamp"};
    int64_t t;

    for (size_t k = 0; k < 2; k++)
        if (trainjob_parse_time(json_string_value(json_object_get(ev, keys[k])), &t) == 0)
            return t;
    if (trainjob_parse_time(json_string_value(json_object_get(json_object_get(ev, "metadata"),
                                                              "creationTimestamp")),
                            &t) == 0)
        return t;
    return -1;
}

const char *rc_jobset_creation_failure(const json_t *jobset, const json_t *events)
{
    const char *uid =
        json_string_value(json_object_get(json_object_get(jobset, "metadata"), "uid"));
    const char *best = NULL;
    int64_t best_t = INT64_MIN;
    size_t i;
    json_t *ev;

    if (!uid || !rc_jobset_without_jobs(jobset))
        return NULL;
    json_array_foreach(events, i, ev)
    {
        const json_t *about = json_object_get(ev, "involvedObject");
        const char *reason = json_string_value(json_object_get(ev, "reason"));
        const char *msg = json_string_value(json_object_get(ev, "message"));
        const char *euid;
        int64_t t;

        if (!about)
            about = json_object_get(ev, "regarding");
        if (!msg)
            msg = json_string_value(json_object_get(ev, "note"));
        euid = json_string_value(json_object_get(about, "uid"));
        if (!euid || strcmp(euid, uid) != 0 || !reason ||
            strcmp(reason, RC_REASON_JOB_CREATION_FAILED) != 0 || !msg)
            continue;
        t = event_time(ev);
        if (!best || t >= best_t) {
            best = msg;
            best_t = t;
        }
    }
    return best;
}
