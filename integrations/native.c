/*
 * integrations/native.c - kube-scheduler's own gang scheduling, in the API version the cluster
 * serves (in->native_api; the reconciler discovers it, render takes --kube-version). Every pod
 * of the gang is tied to its group by spec.schedulingGroup.podGroupName in its JobSet pod
 * template, and the group is named after the TrainJob.
 *
 * Kubernetes 1.37, scheduling.k8s.io/v1beta1 (beta; gate GenericWorkload, runtime-config
 * scheduling.k8s.io/v1beta1=true), laid out as 1.37's Job controller lays its own out through
 * k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder:
 *   Workload <trainjob>   spec.controllerRef = the TrainJob (trainer.kubeflow.org), one
 *                         podGroupTemplate NATIVE_TEMPLATE per gang (a TrainJob has one):
 *                         schedulingPolicy.gang.minCount, and where the TrainJob asks for them
 *                         schedulingConstraints.topology[0].key, resourceClaims, disruptionMode,
 *                         priorityClassName;
 *   PodGroup <trainjob>   spec.workloadRef {workloadName, templateName} and the template's
 *                         fields copied, as workloadbuilder's newPodGroup copies them.
 * Both are owned by the TrainJob (controller), as the JobSet is. What the TrainJob asks for:
 *   minCount              the gang's members' pods (gang_role: initializers out, an MPI launcher
 *                         tied to the group beyond minCount), as on 1.36;
 *   topology[0].key       a required topology level (docs/topology.md), when it is the whole
 *                         request; a preferred level, a required level with a preferred one
 *                         inside it (multi-level) and slices have no field: the required level
 *                         alone is carried and the rest is a note (struct backend_notes), never
 *                         dropped silently (gate TopologyAwareWorkloadScheduling, alpha);
 *   resourceClaims        each pod claim {name, resourceClaimName} that every member's pod
 *                         template has, the same (at most 4); the pods keep their claim of the
 *                         same name, which is how 1.37 ties a pod to the group's claim (gate
 *                         DRAWorkloadResourceClaims, beta); per-pod claims from templates stay
 *                         the pods' own;
 *   disruptionMode        {all: {}} when the JobSet's failurePolicy restarts the whole JobSet
 *                         on a failure (maxRestarts > 0, or a RestartJobSet... rule, and no
 *                         RecreateJob rule); else unset (single);
 *   priorityClassName     the members' pod templates' (they must agree).
 * Source: k8s.io/api v0.37.2 scheduling/v1beta1 types.go, k8s.io/kubernetes v1.37.2
 * pkg/controller/job/job_scheduling_manager.go, component-helpers v0.37.2 workloadbuilder.
 *
 * Kubernetes 1.36, scheduling.k8s.io/v1alpha2 (alpha; gates GenericWorkload, GangScheduling):
 * one PodGroup with spec.schedulingPolicy.gang.minCount and nothing else, no Workload (a
 * PodGroup without podGroupTemplateRef is valid and the scheduler needs nothing more). What 1.37
 * would carry (topology, shared claims) is a note here. Shapes: k8s.io/api v0.36 scheduling/
 * v1alpha2 types.go and core/v1 PodSpec.SchedulingGroup.
 *
 * The jobs that run before the gang (initializers) are not tied to it (were they members,
 * kube-scheduler's PreEnqueue would hold them until minCount pods exist, and the trainer pods
 * are only created after them).
 */
#include <string.h>

#include "integrations/backend.h"
#include "integrations/gang_members.h"
#include "topology/topology.h"

const struct common_kube_resource backend_native_podgroups = {"scheduling.k8s.io", "v1alpha2",
                                                              "podgroups", 1};
const struct common_kube_resource backend_native_podgroups_v1beta1 = {"scheduling.k8s.io",
                                                                      "v1beta1", "podgroups", 1};
const struct common_kube_resource backend_native_workloads_v1beta1 = {"scheduling.k8s.io",
                                                                      "v1beta1", "workloads", 1};

#define DEFAULT_SCHEDULER "default-scheduler"
/* the one podGroupTemplate of a TrainJob's Workload (a DNS label) */
#define NATIVE_TEMPLATE "gang"
#define MAX_CLAIMS 4 /* PodGroupSpec.resourceClaims: +k8s:maxItems=4 */
#define MAX_ANN 64
#define JOB_FIELD "spec.template.spec.replicatedJobs[%s].template.spec.template.spec."

const char *backend_native_api_version(enum backend_native_api api)
{
    return api == BACKEND_NATIVE_V1ALPHA2 ? "scheduling.k8s.io/v1alpha2"
                                          : "scheduling.k8s.io/v1beta1";
}

enum common_rc backend_native_kube_version(const char *field, const char *v,
                                           enum backend_native_api *out, struct common_error *err)
{
    const char *p = v && v[0] == 'v' ? v + 1 : v;
    size_t n = p ? strlen(p) : 0;

    /* "1.36" or "1.36.<patch>" */
    if (p && n >= 4 && strncmp(p, "1.3", 3) == 0 && (p[3] == '6' || p[3] == '7') &&
        (p[4] == '\0' || (p[4] == '.' && p[5] && strspn(p + 5, "0123456789") == strlen(p + 5)))) {
        *out = p[3] == '6' ? BACKEND_NATIVE_V1ALPHA2 : BACKEND_NATIVE_V1BETA1;
        return COMMON_OK;
    }
    return common_error_set(
        err, COMMON_EINVAL,
        "%s: Unsupported value: \"%s\": supported values: " BACKEND_KUBE_VERSIONS
        " (the Kubernetes version whose scheduling.k8s.io API the native "
        "backend writes: 1.36 v1alpha2, 1.37 v1beta1)",
        field, v ? v : "");
}

/* one schedulerName for the whole gang: the configured one, else the templates' own, which must
 * agree */
static enum common_rc check_schedulers(const char *sched, const json_t *rjobs,
                                       struct common_error *err)
{
    const char *first_job = NULL, *first_sched = NULL;
    const json_t *rj;
    size_t i;

    json_array_foreach(rjobs, i, rj)
    {
        const char *rname = json_string_value(json_object_get(rj, "name"));
        json_t *tmpl =
            json_object_get(json_object_get(json_object_get(rj, "template"), "spec"), "template");
        json_t *ps = json_object_get(tmpl, "spec");
        const char *s = json_string_value(json_object_get(ps, "schedulerName"));

        if (!rname || !json_is_object(ps) || gang_role(rjobs, rname) == GANG_BEFORE)
            continue;
        if (!s || !*s)
            s = DEFAULT_SCHEDULER;
        if (!sched && first_sched && strcmp(first_sched, s) != 0)
            return common_error_set(err, COMMON_EINVAL,
                                    JOB_FIELD "schedulerName: Invalid value: \"%s\": the native "
                                              "backend needs one schedulerName for every pod of "
                                              "a PodGroup, and replicated job %s uses \"%s\"",
                                    rname, s, first_job, first_sched);
        if (!first_sched) {
            first_sched = s;
            first_job = rname;
        }
    }
    return COMMON_OK;
}

/* What the members of the gang ask for, gathered once. */
struct gang_asks {
    json_int_t min_count;
    const char *priority_class, *pc_job;
    const json_t *claims[MAX_ANN]; /* the first member's claims that every member has */
    size_t nclaims;
    int members;
};

/* 1 when the pod claim c (an entry of spec.resourceClaims) is in list, the same */
static int has_claim(const json_t *list, const json_t *c)
{
    size_t i;
    const json_t *o;

    json_array_foreach(list, i, o)
    {
        if (json_equal(json_object_get(o, "name"), json_object_get(c, "name")) &&
            json_equal(json_object_get(o, "resourceClaimName"),
                       json_object_get(c, "resourceClaimName")) &&
            !json_object_get(o, "resourceClaimTemplateName"))
            return 1;
    }
    return 0;
}

/* the claims of the first member by name (resourceClaimName), kept while every member has them */
static void shared_claims(struct gang_asks *g, const json_t *ps)
{
    const json_t *list = json_object_get(ps, "resourceClaims");
    size_t i, k = 0;
    const json_t *c;

    if (g->members == 0) {
        json_array_foreach(list, i, c)
        {
            if (json_is_string(json_object_get(c, "resourceClaimName")) &&
                json_is_string(json_object_get(c, "name")) && g->nclaims < MAX_ANN)
                g->claims[g->nclaims++] = c;
        }
        return;
    }
    for (i = 0; i < g->nclaims; i++)
        if (has_claim(list, g->claims[i]))
            g->claims[k++] = g->claims[i];
    g->nclaims = k;
}

/* tie every pod template of the gang to its group; gather what the members ask for */
static enum common_rc mark_members(const struct backend_in *in, const char *name,
                                   const json_t *rjobs, struct gang_asks *g,
                                   struct common_error *err)
{
    const char *sched = in->scheduler_name && *in->scheduler_name ? in->scheduler_name : NULL;
    const json_t *rj;
    size_t i;

    json_array_foreach(rjobs, i, rj)
    {
        const char *rname = json_string_value(json_object_get(rj, "name"));
        json_t *jspec = json_object_get(json_object_get(rj, "template"), "spec");
        json_t *ps = json_object_get(json_object_get(jspec, "template"), "spec");
        enum gang_role role = gang_role(rjobs, rname);
        const char *pc = json_string_value(json_object_get(ps, "priorityClassName"));
        json_int_t pods;

        if (!rname || !json_is_object(ps) || role == GANG_BEFORE)
            continue;
        pods = gang_int_or(json_object_get(rj, "replicas"), 1) *
               gang_int_or(json_object_get(jspec, "parallelism"), 1);
        if (pods <= 0)
            continue;
        /* a later stage (GANG_AFTER: created once the gang is Ready) joins the PodGroup beyond
         * minCount: kube-scheduler lets it through once minCount pods are scheduled */
        if (role == GANG_MEMBER) {
            g->min_count += pods;
            if (pc && *pc && g->priority_class && strcmp(pc, g->priority_class) != 0)
                return common_error_set(err, COMMON_EINVAL,
                                        JOB_FIELD "priorityClassName: Invalid value: \"%s\": one "
                                                  "native PodGroup has one priority, and "
                                                  "replicated job %s uses \"%s\"",
                                        rname, pc, g->pc_job, g->priority_class);
            if (pc && *pc && !g->priority_class) {
                g->priority_class = pc;
                g->pc_job = rname;
            }
            shared_claims(g, ps);
            g->members++;
        }
        if (json_object_set_new(ps, "schedulingGroup", json_pack("{s:s}", "podGroupName", name)) ||
            (sched && json_object_set_new(ps, "schedulerName", json_string(sched))))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

/*
 * The topology key 1.37 carries (*key, NULL: none), and a note for each part of the request it
 * cannot carry. v1alpha2 (as trainsched writes it) carries none: every part is a note.
 */
static enum common_rc topology_key(const struct backend_in *in, const json_t *rjobs,
                                   const char **key, struct common_error *err)
{
    struct common_kv kv[MAX_ANN];
    struct topo_request rq;
    size_t n;
    int beta = in->native_api == BACKEND_NATIVE_V1BETA1;
    const char *api = backend_native_api_version(in->native_api);
    enum common_rc rc;

    *key = NULL;
    rc = gang_topology_annotations(in->trainjob, rjobs, kv, MAX_ANN, &n, err);
    if (!rc)
        rc = topo_request_parse(kv, n, &rq, err);
    if (rc)
        return rc;
    if (rq.required && beta)
        *key = rq.required;
    else if (rq.required)
        backend_notes_add(in->notes, "TopologyNotExpressible",
                          "metadata.annotations[\"%s\"]: the required topology level \"%s\" is not "
                          "carried: trainsched's %s PodGroup (Kubernetes 1.36) has no topology; on "
                          "1.37 it becomes schedulingConstraints.topology[0].key",
                          rq.required_src, rq.required, api);
    if (rq.preferred)
        backend_notes_add(
            in->notes, "TopologyNotExpressible",
            "metadata.annotations[\"%s\"]: the preferred topology level \"%s\" is not "
            "carried: %s PodGroups have no preferred placement (schedulingConstraints."
            "topology is one required key)%s",
            rq.preferred_src, rq.preferred, api,
            *key ? "; only the required level is carried" : "; the gang has no topology");
    if (rq.slice)
        backend_notes_add(
            in->notes, "TopologyNotExpressible",
            "metadata.annotations[\"%s\"]: the slices of %d pods in one \"%s\" each are "
            "not carried: %s PodGroups place the whole gang, not slices of it%s",
            rq.slice_src ? rq.slice_src : TOPO_ANN_SLICE, (int)rq.slice_size, rq.slice, api,
            *key ? "; the required level alone is" : "");
    return COMMON_OK;
}

/* the JobSet's failurePolicy restarts the whole JobSet on a failure */
static int restarts_whole(const json_t *jobset_spec)
{
    const json_t *fp = json_object_get(jobset_spec, "failurePolicy");
    const json_t *rule;
    int restarts = gang_int_or(json_object_get(fp, "maxRestarts"), 0) > 0;
    size_t i;

    json_array_foreach(json_object_get(fp, "rules"), i, rule)
    {
        const char *action = json_string_value(json_object_get(rule, "action"));
        if (!action)
            continue;
        if (strcmp(action, "RecreateJob") == 0)
            return 0; /* some failures restart one Job alone */
        if (strncmp(action, "RestartJobSet", 13) == 0)
            restarts = 1;
    }
    return restarts;
}

/* a podGroupTemplate's fields (v1beta1), without its name */
static json_t *template_fields(const struct gang_asks *g, const char *key, int all)
{
    json_t *t = json_pack("{s:{s:{s:I}}}", "schedulingPolicy", "gang", "minCount", g->min_count);
    int bad = !t;

    if (!bad && key)
        bad = json_object_set_new(t, "schedulingConstraints",
                                  json_pack("{s:[{s:s}]}", "topology", "key", key)) != 0;
    if (!bad && g->nclaims) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < g->nclaims && i < MAX_CLAIMS; i++)
            bad |= json_array_append_new(
                list,
                json_pack("{s:O, s:O}", "name", json_object_get(g->claims[i], "name"),
                          "resourceClaimName", json_object_get(g->claims[i], "resourceClaimName")));
        bad |= !list || json_object_set_new(t, "resourceClaims", list);
    }
    if (!bad && all)
        bad = json_object_set_new(t, "disruptionMode", json_pack("{s:{}}", "all")) != 0;
    if (!bad && g->priority_class)
        bad = json_object_set_new(t, "priorityClassName", json_string(g->priority_class)) != 0;
    if (bad) {
        json_decref(t);
        return NULL;
    }
    return t;
}

static enum common_rc append_owned(json_t *objects, json_t *obj, const json_t *meta,
                                   struct common_error *err)
{
    enum common_rc rc;

    if (!obj)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = gang_object_meta(obj, meta, err);
    if (rc) {
        json_decref(obj);
        return rc;
    }
    if (json_array_append_new(objects, obj))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

static enum common_rc native_translate(const struct backend_in *in, json_t *objects,
                                       json_t *preview, struct common_error *err)
{
    json_t *meta, *rjobs, *tmpl, *pg, *wl, *spec;
    const char *name, *key = NULL, *api = backend_native_api_version(in->native_api);
    const char *tj_name =
        json_string_value(json_object_get(json_object_get(in->trainjob, "metadata"), "name"));
    struct gang_asks g = {0};
    enum common_rc rc = gang_jobset_parts(objects, &meta, &name, &rjobs, err);

    (void)preview;
    if (rc)
        return rc == COMMON_ENOTFOUND ? COMMON_OK : rc; /* no JobSet: nothing to gang */
    if ((rc = check_schedulers(
             in->scheduler_name && *in->scheduler_name ? in->scheduler_name : NULL, rjobs, err)) ||
        (rc = mark_members(in, name, rjobs, &g, err)))
        return rc;
    if (g.min_count == 0)
        return COMMON_OK;
    if (g.min_count > INT32_MAX)
        return common_error_set(err, COMMON_EINVAL,
                                "PodGroup %s: spec.schedulingPolicy.gang.minCount: %lld pods is "
                                "more than an int32",
                                name, (long long)g.min_count);
    if ((rc = topology_key(in, rjobs, &key, err)))
        return rc;
    if (in->native_api == BACKEND_NATIVE_V1ALPHA2) {
        for (size_t i = 0; i < g.nclaims; i++)
            backend_notes_add(
                in->notes, "ClaimNotCarried",
                "spec.resourceClaims[%s]: the ResourceClaim %s every member shares is "
                "not carried: trainsched's %s PodGroup (Kubernetes 1.36) has no "
                "resourceClaims; on 1.37 it becomes a PodGroup resourceClaim",
                json_string_value(json_object_get(g.claims[i], "name")),
                json_string_value(json_object_get(g.claims[i], "resourceClaimName")), api);
        pg = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:I}}}}", "apiVersion", api, "kind",
                       "PodGroup", "metadata", "name", name, "spec", "schedulingPolicy", "gang",
                       "minCount", g.min_count);
        return append_owned(objects, pg, meta, err);
    }
    for (size_t i = MAX_CLAIMS; i < g.nclaims; i++)
        backend_notes_add(
            in->notes, "ClaimNotCarried",
            "spec.resourceClaims[%s]: the ResourceClaim %s every member shares is not "
            "carried: a PodGroup holds at most %d resourceClaims",
            json_string_value(json_object_get(g.claims[i], "name")),
            json_string_value(json_object_get(g.claims[i], "resourceClaimName")), MAX_CLAIMS);
    tmpl =
        template_fields(&g, key, restarts_whole(json_object_get(gang_jobset_of(objects), "spec")));
    if (!tmpl)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    /* the PodGroup: the template's fields, as workloadbuilder's newPodGroup copies them */
    spec = json_deep_copy(tmpl);
    if (!spec || json_object_set_new(spec, "workloadRef",
                                     json_pack("{s:s, s:s}", "workloadName", name, "templateName",
                                               NATIVE_TEMPLATE))) {
        json_decref(spec);
        json_decref(tmpl);
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    {
        /* the template's name first, as the API server prints it */
        json_t *named = json_pack("{s:s}", "name", NATIVE_TEMPLATE);
        if (!named || json_object_update(named, tmpl)) {
            json_decref(named);
            json_decref(spec);
            json_decref(tmpl);
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        json_decref(tmpl);
        tmpl = named;
    }
    wl = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s, s:s, s:s}, s:[o]}}", "apiVersion", api, "kind",
                   "Workload", "metadata", "name", name, "spec", "controllerRef", "apiGroup",
                   "trainer.kubeflow.org", "kind", "TrainJob", "name", tj_name ? tj_name : name,
                   "podGroupTemplates", tmpl);
    if ((rc = append_owned(objects, wl, meta, err))) {
        json_decref(spec);
        return rc;
    }
    pg = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", api, "kind", "PodGroup", "metadata",
                   "name", name, "spec", spec);
    return append_owned(objects, pg, meta, err);
}

/* the newest API (Kubernetes 1.37); the reconciler takes the v1alpha2 PodGroups of 1.36 instead
 * where only they are served (reconciler.c native_discover) */
static const struct common_kube_resource *const native_requires[] = {
    &backend_native_workloads_v1beta1, &backend_native_podgroups_v1beta1, NULL};

const struct backend backend_native = {
    .name = "native",
    .built = 1,
    .what = "kube-scheduler's own gang scheduling (scheduling.k8s.io/v1beta1 Workload and "
            "PodGroup on Kubernetes 1.37, v1alpha2 PodGroup on 1.36)",
    .core_gang = TRAINJOB_GANG_NONE,
    .requires = native_requires,
    .install = "Kubernetes 1.37: kube-apiserver --runtime-config=scheduling.k8s.io/v1beta1=true "
               "and the GenericWorkload feature gate (plus TopologyAwareWorkloadScheduling and "
               "DRAWorkloadResourceClaims for topology and shared claims); Kubernetes 1.36: "
               "--runtime-config=scheduling.k8s.io/v1alpha2=true and the gates GenericWorkload "
               "and GangScheduling",
    .translate = native_translate,
};
