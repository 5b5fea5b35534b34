/*
 * integrations/native.c - kube-scheduler's own gang scheduling (Kubernetes 1.36, alpha; the
 * API group scheduling.k8s.io/v1alpha2 and the gates GenericWorkload and GangScheduling are
 * off by default): one PodGroup per gang with spec.schedulingPolicy.gang.minCount, and every
 * pod of the gang tied to it by spec.schedulingGroup.podGroupName in its JobSet pod template.
 * No Workload object: a PodGroup without podGroupTemplateRef is valid and the scheduler needs
 * nothing more. Shapes: k8s.io/api v0.36 scheduling/v1alpha2 types.go (PodGroupSpec,
 * PodGroupSchedulingPolicy, GangSchedulingPolicy) and core/v1 PodSpec.SchedulingGroup.
 *
 * The gang's stages are gang_role's (gang_members.h): the jobs that run before (initializers)
 * are not tied to the PodGroup (were they members, kube-scheduler's PreEnqueue would hold them
 * until minCount pods exist, and the trainer pods are only created after them); a job that comes
 * after (an MPI launcher, created once the workers are Ready) is tied to it but not counted in
 * minCount.
 */
#include <string.h>

#include "integrations/backend.h"
#include "integrations/gang_members.h"

const struct common_kube_resource backend_native_podgroups = {"scheduling.k8s.io", "v1alpha2",
                                                              "podgroups", 1};

#define NATIVE_API "scheduling.k8s.io/v1alpha2"
#define DEFAULT_SCHEDULER "default-scheduler"

static enum common_rc native_translate(const struct backend_in *in, json_t *objects,
                                       json_t *preview, struct common_error *err)
{
    json_t *meta, *rjobs, *rj, *pg;
    const char *name,
        *sched = in->scheduler_name && *in->scheduler_name ? in->scheduler_name : NULL;
    const char *first_job = NULL, *first_sched = NULL;
    json_int_t min_count = 0;
    size_t i;

    enum common_rc rc = gang_jobset_parts(objects, &meta, &name, &rjobs, err);

    (void)preview;
    if (rc)
        return rc == COMMON_ENOTFOUND ? COMMON_OK : rc; /* no JobSet: nothing to gang */
    /* one schedulerName for the whole gang: the configured one, else the templates' own,
     * which must agree */
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
            return common_error_set(
                err, COMMON_EINVAL,
                "spec.template.spec.replicatedJobs[%s].template.spec.template.spec.schedulerName: "
                "Invalid value: \"%s\": the native backend needs one schedulerName for every pod "
                "of a PodGroup, and replicated job %s uses \"%s\"",
                rname, s, first_job, first_sched);
        if (!first_sched) {
            first_sched = s;
            first_job = rname;
        }
    }
    json_array_foreach(rjobs, i, rj)
    {
        const char *rname = json_string_value(json_object_get(rj, "name"));
        json_t *jspec = json_object_get(json_object_get(rj, "template"), "spec");
        json_t *ps = json_object_get(json_object_get(jspec, "template"), "spec");
        enum gang_role role = gang_role(rjobs, rname);
        json_int_t pods;

        if (!rname || !json_is_object(ps) || role == GANG_BEFORE)
            continue;
        pods = gang_int_or(json_object_get(rj, "replicas"), 1) *
               gang_int_or(json_object_get(jspec, "parallelism"), 1);
        if (pods <= 0)
            continue;
        /* a later stage (GANG_AFTER: created once the gang is Ready) joins the PodGroup beyond
         * minCount: kube-scheduler lets it through once minCount pods are scheduled */
        if (role == GANG_MEMBER)
            min_count += pods;
        if (json_object_set_new(ps, "schedulingGroup", json_pack("{s:s}", "podGroupName", name)) ||
            (sched && json_object_set_new(ps, "schedulerName", json_string(sched))))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    if (min_count == 0)
        return COMMON_OK;
    if (min_count > INT32_MAX)
        return common_error_set(err, COMMON_EINVAL,
                                "PodGroup %s: spec.schedulingPolicy.gang.minCount: %lld pods is "
                                "more than an int32",
                                name, (long long)min_count);
    pg = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:I}}}}", "apiVersion", NATIVE_API, "kind",
                   "PodGroup", "metadata", "name", name, "spec", "schedulingPolicy", "gang",
                   "minCount", min_count);
    if (!pg)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = gang_object_meta(pg, meta, err);
    if (rc) {
        json_decref(pg);
        return rc;
    }
    if (json_array_append_new(objects, pg))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

static const struct common_kube_resource *const native_requires[] = {&backend_native_podgroups,
                                                                     NULL};

const struct backend backend_native = {
    .name = "native",
    .built = 1,
    .what = "kube-scheduler's GangScheduling (scheduling.k8s.io/v1alpha2 PodGroup)",
    .core_gang = TRAINJOB_GANG_NONE,
    .requires = native_requires,
    .install = "kube-apiserver --runtime-config=scheduling.k8s.io/v1alpha2=true and the "
               "GenericWorkload feature gate",
    .translate = native_translate,
};
