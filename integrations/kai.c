/*
 * integrations/kai.c - NVIDIA's KAI Scheduler: one scheduling.run.ai/v2alpha2 PodGroup per
 * TrainJob, created by the reconciler, and the keys KAI reads on the gang's pods.
 *
 * KAI (github.com/NVIDIA/KAI-scheduler, now kai-scheduler/KAI-Scheduler) groups pods by the
 * pod annotation `pod-group-name` (its scheduler's pod_info.getPodGroupID, constant
 * PodGroupAnnotationForPod) and schedules a PodGroup whole once minMember of its pods fit, in the
 * PodGroup's spec.queue (a scheduling.run.ai/v2 Queue). Its pod grouper normally writes those
 * PodGroups itself; we write ours, named after the TrainJob, with:
 *   spec.minMember          the pods of every replicated job no other one dependsOn, each
 *                           counted replicas x min(parallelism, completions)
 *   spec.queue              the TrainJob label kai.scheduler/queue, else the runtime's label,
 *                           else the serve setting backends.kai.queue, else "default-queue"
 *   spec.priorityClassName  the TrainJob label priorityClassName (KAI's own key), else the gang
 *                           pod templates' spec.priorityClassName (they must agree); else unset
 *                           (KAI then uses the cluster default)
 *   spec.topologyConstraint the gang's topology request (docs/topology.md: ours, Kueue's and
 *                           KAI's annotations are synonyms): topology = the named Topology,
 *                           requiredTopologyLevel / preferredTopologyLevel = the levels
 * and on each member pod template: spec.schedulerName kai-scheduler, annotation pod-group-name,
 * label kai.scheduler/queue, and annotation kai.scheduler/skip-podgrouper "true" (read by the
 * pod grouper from v0.15; v0.12 has no such key: run the pod grouper with a namespace selector
 * that leaves these namespaces out, or not at all - docs/backends.md).
 * Shapes: KAI v0.12.0 pkg/apis/scheduling/v2alpha2/podgroup_types.go (PodGroupSpec,
 * TopologyConstraint), pkg/common/constants/constants.go.
 */
#include <stdio.h>
#include <string.h>

#include "common/names.h"
#include "integrations/backend.h"
#include "integrations/gang_members.h"
#include "integrations/kai.h"
#include "topology/topology.h"

const struct common_kube_resource backend_kai_podgroups = {"scheduling.run.ai", "v2alpha2",
                                                           "podgroups", 1};
const struct common_kube_resource backend_kai_queues = {"scheduling.run.ai", "v2", "queues", 0};

#define KAI_MAX_ANN 32

static const char *label_of(const json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), key));
}

/* the queue of the gang and the field it came from (for messages) */
static const char *kai_queue(const struct backend_in *in, const char **field)
{
    const char *q = label_of(in->trainjob, KAI_QUEUE_LABEL);

    if (q) {
        *field = "metadata.labels[\"" KAI_QUEUE_LABEL "\"]";
        return q;
    }
    q = label_of(in->runtime, KAI_QUEUE_LABEL);
    if (q) {
        *field = "runtime metadata.labels[\"" KAI_QUEUE_LABEL "\"]";
        return q;
    }
    if (in->opts && in->opts->kai_default_queue && *in->opts->kai_default_queue) {
        *field = "backends.kai.queue";
        return in->opts->kai_default_queue;
    }
    *field = "the KAI default queue";
    return KAI_DEFAULT_QUEUE;
}

/* the topology annotations of the TrainJob and the member pod templates, as one request */
struct kai_topo {
    struct common_kv kv[KAI_MAX_ANN];
    size_t n;
};

static enum common_rc topo_collect(struct kai_topo *t, const json_t *ann, struct common_error *err)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)ann, k, v)
    {
        int dup = 0;
        if (!topo_is_annotation(k) || !json_is_string(v))
            continue;
        for (size_t i = 0; i < t->n; i++) {
            if (strcmp(t->kv[i].key, k) != 0)
                continue;
            if (strcmp(t->kv[i].value, json_string_value(v)) != 0)
                return common_error_set(err, COMMON_EINVAL,
                                        "metadata.annotations[\"%s\"]: Invalid value: \"%s\": the "
                                        "gang asks for \"%s\" elsewhere; one KAI PodGroup has one "
                                        "topology constraint",
                                        k, json_string_value(v), t->kv[i].value);
            dup = 1;
        }
        if (dup)
            continue;
        if (t->n == KAI_MAX_ANN)
            return common_error_set(err, COMMON_EINVAL, "too many topology annotations");
        t->kv[t->n].key = k;
        t->kv[t->n].value = json_string_value(v);
        t->n++;
    }
    return COMMON_OK;
}

/* spec.topologyConstraint from the request, or NULL in *out when none is asked */
static enum common_rc topo_constraint(const struct kai_topo *t, json_t **out,
                                      struct common_error *err)
{
    struct topo_request rq;
    enum common_rc rc;

    *out = NULL;
    rc = topo_request_parse(t->kv, t->n, &rq, err);
    if (rc)
        return rc;
    if (rq.slice)
        return common_error_set(err, COMMON_EINVAL,
                                "metadata.annotations[\"%s\"]: Unsupported value: \"%s\": KAI "
                                "v0.12 has no per-slice placement (its segment annotations came "
                                "later); ask for a required or preferred level instead",
                                rq.slice_src ? rq.slice_src : TOPO_ANN_SLICE, rq.slice);
    if (!rq.required && !rq.preferred)
        return COMMON_OK;
    if (!rq.topology)
        return common_error_set(
            err, COMMON_EINVAL,
            "metadata.annotations[\"" TOPO_KAI_TOPOLOGY "\"]: Required value: the gang asks for "
            "the level \"%s\" (%s), and KAI applies a topology constraint only with the name of "
            "its Topology object (kai.scheduler/v1alpha1); set " TOPO_KAI_TOPOLOGY
            " or " TOPO_ANN_TOPOLOGY,
            rq.required ? rq.required : rq.preferred,
            rq.required ? rq.required_src : rq.preferred_src);
    *out = json_pack("{s:s}", "topology", rq.topology);
    if (!*out ||
        (rq.required &&
         json_object_set_new(*out, "requiredTopologyLevel", json_string(rq.required))) ||
        (rq.preferred &&
         json_object_set_new(*out, "preferredTopologyLevel", json_string(rq.preferred)))) {
        json_decref(*out);
        *out = NULL;
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

static json_t *obj_at(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);

    if (!json_is_object(o)) {
        o = json_object();
        if (!o || json_object_set_new(parent, key, o))
            return NULL;
    }
    return o;
}

/* the member pod template (in place): scheduler, PodGroup annotation, queue label, marker */
static enum common_rc mark_pod(json_t *tmpl, const char *pg, const char *queue,
                               struct common_error *err)
{
    json_t *meta = obj_at(tmpl, "metadata"), *ann = meta ? obj_at(meta, "annotations") : NULL;
    json_t *labels = meta ? obj_at(meta, "labels") : NULL;

    if (!ann || !labels ||
        json_object_set_new(json_object_get(tmpl, "spec"), "schedulerName",
                            json_string(KAI_SCHEDULER_NAME)) ||
        json_object_set_new(ann, KAI_PODGROUP_ANNOTATION, json_string(pg)) ||
        json_object_set_new(ann, KAI_SKIP_PODGROUPER_ANNOTATION, json_string("true")) ||
        json_object_set_new(labels, KAI_QUEUE_LABEL, json_string(queue)))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

static enum common_rc kai_translate(const struct backend_in *in, json_t *objects, json_t *preview,
                                    struct common_error *err)
{
    json_t *meta, *rjobs, *rj, *pg = NULL, *spec, *tc = NULL;
    const char *name, *qfield, *queue = kai_queue(in, &qfield), *bad;
    const char *pc = label_of(in->trainjob, KAI_PRIORITY_LABEL), *pc_job = NULL;
    struct kai_topo topo = {.n = 0};
    json_int_t min_member = 0;
    enum common_rc rc;
    size_t i;

    (void)preview;
    rc = gang_jobset_parts(objects, &meta, &name, &rjobs, err);
    if (rc)
        return rc == COMMON_ENOTFOUND ? COMMON_OK : rc; /* no JobSet: nothing to gang */
    bad = common_names_dns1123_subdomain(queue);
    if (bad)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: Invalid value: \"%s\": a KAI Queue name: %s", qfield, queue,
                                bad);
    rc = topo_collect(
        &topo, json_object_get(json_object_get(in->trainjob, "metadata"), "annotations"), err);
    if (rc)
        return rc;
    json_array_foreach(rjobs, i, rj)
    {
        const char *rname = json_string_value(json_object_get(rj, "name"));
        json_t *jspec = json_object_get(json_object_get(rj, "template"), "spec");
        json_t *tmpl = json_object_get(jspec, "template");
        json_t *ps = json_object_get(tmpl, "spec");
        json_int_t par, comp, pods;
        const char *tpc = json_string_value(json_object_get(ps, "priorityClassName"));

        enum gang_role role = gang_role(rjobs, rname);

        if (!rname || !json_is_object(ps) || role == GANG_BEFORE)
            continue;
        if (role == GANG_AFTER) { /* the same PodGroup and scheduler, beyond minMember */
            rc = mark_pod(tmpl, name, queue, err);
            if (rc)
                return rc;
            continue;
        }
        par = gang_int_or(json_object_get(jspec, "parallelism"), 1);
        comp = gang_int_or(json_object_get(jspec, "completions"), par);
        pods = gang_int_or(json_object_get(rj, "replicas"), 1) * (comp < par ? comp : par);
        if (pods <= 0)
            continue;
        min_member += pods;
        if (tpc && !label_of(in->trainjob, KAI_PRIORITY_LABEL)) {
            if (pc && strcmp(pc, tpc) != 0)
                return common_error_set(
                    err, COMMON_EINVAL,
                    "spec.template.spec.replicatedJobs[%s].template.spec.template.spec."
                    "priorityClassName: Invalid value: \"%s\": one KAI PodGroup has one priority, "
                    "and replicated job %s uses \"%s\"",
                    rname, tpc, pc_job, pc);
            pc = tpc;
            pc_job = rname;
        }
        rc = topo_collect(&topo, json_object_get(json_object_get(tmpl, "metadata"), "annotations"),
                          err);
        if (!rc)
            rc = mark_pod(tmpl, name, queue, err);
        if (rc)
            return rc;
    }
    if (min_member == 0)
        return COMMON_OK;
    if (min_member > INT32_MAX)
        return common_error_set(err, COMMON_EINVAL,
                                "PodGroup %s: spec.minMember: %lld pods is more than an int32",
                                name, (long long)min_member);
    rc = topo_constraint(&topo, &tc, err);
    if (rc)
        return rc;
    pg = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:I, s:s}}", "apiVersion", KAI_PODGROUP_API,
                   "kind", "PodGroup", "metadata", "name", name, "labels", KAI_QUEUE_LABEL, queue,
                   "spec", "minMember", min_member, "queue", queue);
    if (!pg)
        goto oom;
    spec = json_object_get(pg, "spec");
    if ((pc && json_object_set_new(spec, "priorityClassName", json_string(pc))) ||
        (tc && json_object_set_new(spec, "topologyConstraint", json_incref(tc))) ||
        gang_object_meta(pg, meta, err))
        goto oom;
    json_decref(tc);
    if (json_array_append_new(objects, pg))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
oom:
    json_decref(tc);
    json_decref(pg);
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

static const struct common_kube_resource *const kai_requires[] = {&backend_kai_podgroups, NULL};

const struct backend backend_kai = {
    .name = "kai",
    .built = 1,
    .what = "KAI Scheduler PodGroup (scheduling.run.ai/v2alpha2), gang and queue enforced by KAI",
    .core_gang = TRAINJOB_GANG_NONE,
    .requires = kai_requires,
    .install = "install KAI Scheduler, whose CRDs define it",
    .translate = kai_translate,
};

enum common_rc kai_check_refs(const struct kai_refs *refs, const json_t *queue_obj, int queue_known,
                              const json_t *priority_class_obj, int pc_known,
                              struct common_error *err)
{
    if (refs->queue && queue_known && !queue_obj)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: Not found: \"%s\": no KAI Queue (scheduling.run.ai/v2) of "
                                "that name; KAI would leave the gang unscheduled",
                                refs->queue_field, refs->queue);
    if (refs->queue && queue_obj &&
        json_array_size(json_object_get(json_object_get(queue_obj, "status"), "childQueues")))
        return common_error_set(err, COMMON_EINVAL,
                                "%s: Invalid value: \"%s\": a parent KAI Queue; only leaf queues "
                                "accept workloads",
                                refs->queue_field, refs->queue);
    if (refs->priority_class && pc_known && !priority_class_obj)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: Not found: \"%s\": no PriorityClass (scheduling.k8s.io/v1) "
                                "of that name",
                                refs->priority_class_field, refs->priority_class);
    return COMMON_OK;
}

int kai_queue_warning(const struct kai_refs *refs, const json_t *queue_obj, char *buf, size_t n)
{
    const char *parent =
        json_string_value(json_object_get(json_object_get(queue_obj, "spec"), "parentQueue"));

    if (!refs->queue || !queue_obj || (parent && *parent))
        return 0;
    snprintf(buf, n,
             "%s: \"%s\" is a top-level KAI Queue (no spec.parentQueue): KAI v0.12 and earlier "
             "leave the gangs of a top-level queue unscheduled (v0.13 schedules them); give the "
             "queue a parentQueue, as KAI's quick-start default-queue has default-parent-queue",
             refs->queue_field, refs->queue);
    return 1;
}

enum common_rc kai_refs_of(const json_t *objects, const json_t *trainjob, struct kai_refs *out)
{
    size_t i;
    const json_t *o;

    memset(out, 0, sizeof(*out));
    json_array_foreach(objects, i, o)
    {
        const char *api = json_string_value(json_object_get(o, "apiVersion"));
        const json_t *spec = json_object_get(o, "spec");
        if (!api || strcmp(api, KAI_PODGROUP_API) != 0)
            continue;
        out->name = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        out->queue = json_string_value(json_object_get(spec, "queue"));
        out->queue_field = label_of(trainjob, KAI_QUEUE_LABEL)
                               ? "metadata.labels[\"" KAI_QUEUE_LABEL "\"]"
                               : "PodGroup spec.queue";
        out->priority_class = json_string_value(json_object_get(spec, "priorityClassName"));
        out->priority_class_field = label_of(trainjob, KAI_PRIORITY_LABEL)
                                        ? "metadata.labels[\"" KAI_PRIORITY_LABEL "\"]"
                                        : "spec.priorityClassName of the gang's pod templates";
        return COMMON_OK;
    }
    return COMMON_ENOTFOUND;
}
