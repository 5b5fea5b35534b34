/*
 * trainjob/podgroup.c - gang objects per podGroupPolicy: the coscheduling PodGroup
 * (scheduling.x-k8s.io/v1alpha1, as scheduler-plugins defines it) and the Volcano PodGroup
 * (scheduling.volcano.sh/v1beta1), with the pod label / annotation that ties pods to them.
 * Source: trainer.md §3.1-3.3, §5.1 check 29, §6 cases 52-56.
 */
#include <stdlib.h>
#include <string.h>

#include "topology/topology.h"
#include "trainjob/trainjob_int.h"

#define COSCHED_LABEL "scheduling.x-k8s.io/pod-group"
#define VOLCANO_ANNOTATION "scheduling.k8s.io/group-name"
#define VOLCANO_QUEUE "scheduling.volcano.sh/queue-name"
/* = GANG_PHASED_ANNOTATION of gang/gang.h (docs/gang.md "Phased gangs"): the replicated jobs
 * other replicated jobs dependsOn, whose pods the extender binds on their own */
#define PHASED_ANNOTATION "trainsched.io/phased-replicated-jobs"

static int ready_status(const json_t *dep)
{
    const char *st = json_string_value(json_object_get(dep, "status"));
    return st && strcmp(st, "Ready") == 0;
}

/* 1 when some replicated job of rjobs dependsOn name with a status other than Ready */
static int runs_before(const json_t *rjobs, const char *name)
{
    size_t i, k;
    const json_t *rj, *dep;

    json_array_foreach(rjobs, i, rj)
    {
        json_array_foreach(json_object_get(rj, "dependsOn"), k, dep)
        {
            const char *dn = json_string_value(json_object_get(dep, "name"));
            if (dn && strcmp(dn, name) == 0 && !ready_status(dep))
                return 1;
        }
    }
    return 0;
}

enum trainjob_stage trainjob_gang_stage(const json_t *rjobs, const char *name)
{
    size_t i, k;
    const json_t *rj, *dep;

    if (!name)
        return TRAINJOB_STAGE_MEMBER;
    if (runs_before(rjobs, name))
        return TRAINJOB_STAGE_BEFORE;
    json_array_foreach(rjobs, i, rj)
    {
        const char *rn = json_string_value(json_object_get(rj, "name"));
        if (!rn || strcmp(rn, name) != 0)
            continue;
        json_array_foreach(json_object_get(rj, "dependsOn"), k, dep)
        {
            const char *dn = json_string_value(json_object_get(dep, "name"));
            /* Ready on a job of the gang; Ready on a job that runs before is still a member */
            if (dn && ready_status(dep) && !runs_before(rjobs, dn))
                return TRAINJOB_STAGE_AFTER;
        }
    }
    return TRAINJOB_STAGE_MEMBER;
}

/* the gang stage of podset i of c (trainjob_gang_stage on the rendered JobSet) */
static enum trainjob_stage podset_stage(const struct tj_ctx *c, size_t i)
{
    return trainjob_gang_stage(json_object_get(c->spec, "replicatedJobs"), c->podsets[i].name);
}

enum common_rc tj_gang_totals(struct tj_ctx *c, int members_only, int64_t *min_member,
                              json_t **min_resources, struct common_error *err)
{
    json_t *total = json_object();
    enum common_rc rc = COMMON_OK;

    *min_member = 0;
    if (!total)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->npodsets && !rc; i++) {
        struct tj_podset *ps = &c->podsets[i];
        json_t *req = NULL;
        const char *k;
        json_t *v;

        if (members_only && podset_stage(c, i) != TRAINJOB_STAGE_MEMBER)
            continue;
        *min_member += ps->count;
        rc = tj_pod_requests(ps->podspec, &req, err);
        if (rc)
            break;
        json_object_foreach(req, k, v)
        {
            struct common_quantity q, acc;
            char buf[80];
            json_t *cur = json_object_get(total, k);

            rc = tj_quantity(v, &q, err);
            if (!rc)
                rc = common_quantity_mul(&q, ps->count, err);
            if (!rc && cur)
                rc = tj_quantity(cur, &acc, err);
            if (!rc && cur)
                rc = common_quantity_add(&acc, &q, err);
            else if (!rc)
                acc = q;
            if (rc)
                break;
            if (common_quantity_format(&acc, buf, sizeof(buf)) < 0 ||
                tj_set(total, k, json_string(buf))) {
                rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
                break;
            }
        }
        json_decref(req);
    }
    if (rc) {
        json_decref(total);
        return rc;
    }
    *min_resources = total;
    return COMMON_OK;
}

/* the group key on every pod template; with skip_before, not on the podsets that run before
 * the gang (TRAINJOB_STAGE_BEFORE) */
static enum common_rc tag_pods(struct tj_ctx *c, const char *where, const char *key,
                               int skip_before, struct common_error *err)
{
    for (size_t i = 0; i < c->npodsets; i++) {
        json_t *tmpl = tj_get(c->podsets[i].rjob, "template.spec.template");
        json_t *meta, *m;

        if (skip_before && podset_stage(c, i) == TRAINJOB_STAGE_BEFORE)
            continue;
        meta = tmpl ? tj_obj(tmpl, "metadata") : NULL;
        m = meta ? tj_obj(meta, where) : NULL;
        if (!m || tj_set(m, key, json_string(c->name)))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

static enum common_rc cosched_enforce(struct tj_ctx *c, struct common_error *err)
{
    return tag_pods(c, "labels", COSCHED_LABEL, 0, err);
}

/* the comma-separated names of the replicated jobs of the rendered JobSet that another one
 * dependsOn, in replicatedJobs order, each once; "" when none. A new string or NULL (no memory). */
static char *phased_jobs(const struct tj_ctx *c)
{
    const json_t *rjobs = json_object_get(c->spec, "replicatedJobs"), *rj;
    size_t i, len = 0, cap = 1;
    char *out;

    json_array_foreach(rjobs, i, rj)
    {
        const char *name = json_string_value(json_object_get(rj, "name"));
        cap += name ? strlen(name) + 1 : 0;
    }
    out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    json_array_foreach(rjobs, i, rj)
    {
        const char *name = json_string_value(json_object_get(rj, "name"));
        const json_t *other, *dep;
        size_t j, k, n;
        int needed = 0;

        if (!name || !*name)
            continue;
        json_array_foreach(rjobs, j, other)
        {
            json_array_foreach(json_object_get(other, "dependsOn"), k, dep)
            {
                const char *dn = json_string_value(json_object_get(dep, "name"));
                if (dn && strcmp(dn, name) == 0)
                    needed = 1;
            }
        }
        if (!needed)
            continue;
        if (len)
            out[len++] = ',';
        n = strlen(name);
        memcpy(out + len, name, n);
        len += n;
        out[len] = '\0';
    }
    return out;
}

/* 1 when name is one of the comma-separated names of list */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/*
 * the topology request the PodGroup carries (docs/topology.md): the topology annotations
 * (topo_is_annotation: ours, Kueue's, KAI's) of the gang's pod templates, phased replicated
 * jobs left out (their pods need not share the trainers' domain), and of the TrainJob itself.
 * Two templates with different values for one key are an error naming both jobs.
 */
static enum common_rc topology_annotations(struct tj_ctx *c, const char *phased, json_t *ann,
                                           struct common_error *err)
{
    const char *k, *from = NULL;
    json_t *v;

    json_object_foreach(tj_get(c->trainjob, "metadata.annotations"), k, v)
    {
        if (topo_is_annotation(k) && json_is_string(v) && tj_set(ann, k, json_deep_copy(v)))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < c->npodsets; i++) {
        const json_t *ta =
            tj_get(c->podsets[i].rjob, "template.spec.template.metadata.annotations");
        if (!c->podsets[i].name || listed(phased, c->podsets[i].name))
            continue;
        json_object_foreach((json_t *)ta, k, v)
        {
            const json_t *have = json_object_get(ann, k);
            if (!topo_is_annotation(k) || !json_is_string(v))
                continue;
            if (have && !json_equal(have, v) && from)
                return common_error_set(err, COMMON_EINVAL,
                                        "replicated jobs %s and %s ask for different topology: "
                                        "annotation %s is \"%s\" and \"%s\"",
                                        from, c->podsets[i].name, k, json_string_value(have),
                                        json_string_value(v));
            if (tj_set(ann, k, json_deep_copy(v)))
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        if (json_object_size(ta))
            from = c->podsets[i].name;
    }
    return COMMON_OK;
}

static enum common_rc cosched_build(struct tj_ctx *c, json_t **obj, struct common_error *err)
{
    int64_t mm;
    json_t *res = NULL;
    char *phased;
    const json_t *timeout =
        tj_get(c->runtime, "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds");
    enum common_rc rc = tj_gang_totals(c, 0, &mm, &res, err);

    if (rc)
        return rc;
    *obj = json_pack("{s:s, s:s, s:o, s:{s:I, s:o, s:I}}", "apiVersion",
                     "scheduling.x-k8s.io/v1alpha1", "kind", "PodGroup", "metadata",
                     tj_owner_meta(c, c->name), "spec", "minMember", (json_int_t)mm, "minResources",
                     res, "scheduleTimeoutSeconds",
                     (json_int_t)(json_is_integer(timeout) ? json_integer_value(timeout) : 60));
    if (!*obj)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    /* phased gang (initializers): the extender binds these jobs' pods alone */
    phased = phased_jobs(c);
    if (!phased || (*phased && tj_set(tj_obj(json_object_get(*obj, "metadata"), "annotations"),
                                      PHASED_ANNOTATION, json_string(phased)))) {
        free(phased);
        json_decref(*obj);
        *obj = NULL;
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    {
        json_t *ann = json_object();
        rc = ann ? topology_annotations(c, phased, ann, err)
                 : common_error_set(err, COMMON_ENOMEM, "out of memory");
        if (!rc && json_object_size(ann) &&
            json_object_update(tj_obj(json_object_get(*obj, "metadata"), "annotations"), ann))
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        json_decref(ann);
    }
    free(phased);
    if (rc) {
        json_decref(*obj);
        *obj = NULL;
    }
    return rc;
}

/* where topology annotation key comes from, for an error's path: the TrainJob's own
 * annotations, else the last runtime patch's template that sets it, else the runtime's template */
static const json_t *topology_source(struct tj_ctx *c, const char *key, const json_t **doc,
                                     char *path, size_t n)
{
    const json_t *patches = tj_get(c->trainjob, "spec.runtimePatches"), *v;
    size_t i, j;
    json_t *rj;

    *doc = c->trainjob;
    if ((v = json_object_get(tj_get(c->trainjob, "metadata.annotations"), key))) {
        snprintf(path, n, "metadata.annotations[%s]", key);
        return v;
    }
    for (i = json_array_size(patches); i-- > 0;)
        json_array_foreach(
            tj_get(json_array_get(patches, i), "trainingRuntimeSpec.template.spec.replicatedJobs"),
            j, rj)
        {
            if ((v = json_object_get(tj_get(rj, "template.spec.template.metadata.annotations"),
                                     key))) {
                snprintf(path, n,
                         "spec.runtimePatches[%zu].trainingRuntimeSpec.template.spec."
                         "replicatedJobs[%zu].template.spec.template.metadata.annotations[%s]",
                         i, j, key);
                return v;
            }
        }
    json_array_foreach(
        tj_get(c->runtime_doc ? c->runtime_doc : c->runtime, "spec.template.spec.replicatedJobs"),
        j, rj)
    {
        if ((v = json_object_get(tj_get(rj, "template.spec.template.metadata.annotations"), key))) {
            *doc = c->runtime_doc ? c->runtime_doc : c->runtime;
            snprintf(path, n,
                     "spec.template.spec.replicatedJobs[%zu].template.spec.template.metadata."
                     "annotations[%s]",
                     j, key);
            return v;
        }
    }
    snprintf(path, n, "metadata.annotations");
    return NULL;
}

/*
 * The topology request the PodGroup will carry, parsed as the extender parses it
 * (topo_request_parse): a request the extender can never serve (a slice size "0" or not an
 * integer, a slice level without a size or the reverse, two levels for one request, Kueue's
 * required with preferred, unconstrained with a level) is an error here instead of a gang that
 * waits forever (docs/topology.md: never a silent fallback). The topology name and the levels
 * are left to the extender: they may come from Topology objects created later.
 */
static void cosched_validate(struct tj_ctx *c)
{
    struct common_error e = {0};
    struct common_kv kv[32];
    struct topo_request rq;
    char *phased = phased_jobs(c);
    json_t *ann = json_object();
    const char *k;
    json_t *v;
    size_t n = 0;

    if (!phased || !ann) {
        c->errs->oom = 1;
        goto out;
    }
    if (topology_annotations(c, phased, ann, &e)) {
        if (e.code == COMMON_ENOMEM)
            c->errs->oom = 1;
        goto out; /* two templates disagree: the build reports it */
    }
    json_object_foreach(ann, k, v)
    {
        if (n < sizeof(kv) / sizeof(kv[0])) {
            kv[n].key = k;
            kv[n].value = json_string_value(v);
            n++;
        }
    }
    if (n && topo_request_parse(kv, n, &rq, &e) == COMMON_EINVAL) {
        const json_t *doc = c->trainjob, *node = NULL;
        char path[400] = "metadata.annotations";

        /* the path of the first annotation the message names */
        for (size_t i = 0; i < n && !node; i++)
            if (strstr(e.msg, kv[i].key))
                node = topology_source(c, kv[i].key, &doc, path, sizeof(path));
        tj_err(c->errs, doc, node, "Invalid", path,
               "Invalid value: \"%s\": the gang's topology request can never be served: %s",
               node && json_is_string(node) ? json_string_value(node) : "", e.msg);
    }
out:
    free(phased);
    json_decref(ann);
}

/* the gang marks of trainjob.h in every pod template: what the pod webhook would add */
static enum common_rc cosched_mark(struct tj_ctx *c, struct common_error *err)
{
    static const char *const maps[] = {"requests", "limits"};
    const char *sched = c->opts ? c->opts->gang_scheduler_name : NULL;

    if (c->opts && c->opts->no_gang_marks)
        return COMMON_OK;
    for (size_t i = 0; i < c->npodsets; i++) {
        json_t *tmpl = tj_get(c->podsets[i].rjob, "template.spec.template");
        json_t *meta = tmpl ? tj_obj(tmpl, "metadata") : NULL;
        json_t *labels = meta ? tj_obj(meta, "labels") : NULL;
        json_t *spec = tmpl ? tj_obj(tmpl, "spec") : NULL;
        json_t *ct = spec ? json_array_get(json_object_get(spec, "containers"), 0) : NULL;
        json_t *res = json_is_object(ct) ? tj_obj(ct, "resources") : NULL;

        if (!labels || !spec || tj_set(labels, TRAINJOB_GANG_MARKED_LABEL, json_string("true")))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        if (sched && *sched && tj_set(spec, "schedulerName", json_string(sched)))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        if (!json_is_object(ct))
            continue; /* no container: the API server refuses the pod anyway */
        for (int k = 0; k < 2; k++) {
            json_t *m = res ? tj_obj(res, maps[k]) : NULL;
            if (!m || (!json_object_get(m, TRAINJOB_GANG_RESOURCE) &&
                       tj_set(m, TRAINJOB_GANG_RESOURCE, json_string("1"))))
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
    }
    return COMMON_OK;
}

static enum common_rc volcano_enforce(struct tj_ctx *c, struct common_error *err)
{
    return tag_pods(c, "annotations", VOLCANO_ANNOTATION, 1, err);
}

static enum common_rc volcano_build(struct tj_ctx *c, json_t **obj, struct common_error *err)
{
    int64_t mm;
    json_t *res = NULL, *spec;
    const char *queue = json_string_value(json_object_get(c->annotations, VOLCANO_QUEUE));
    const char *prio = NULL;
    const json_t *topo = tj_get(c->runtime, "spec.podGroupPolicy.volcano.networkTopology");
    /* the gang's members only, unlike Trainer (docs/compatibility.md): Volcano refuses a group
     * whose existing pods are fewer than minMember ("Not enough valid tasks for
     * gang-scheduling"), and the initializers run, and the MPI launcher is created, while the
     * workers' pods alone exist */
    enum common_rc rc = tj_gang_totals(c, 1, &mm, &res, err);

    if (rc)
        return rc;
    for (size_t i = 0; i < c->npodsets; i++) {
        const char *p = tj_str(c->podsets[i].podspec, "priorityClassName");
        if (p && *p)
            prio = p;
    }
    spec = json_pack("{s:I, s:o}", "minMember", (json_int_t)mm, "minResources", res);
    if (!spec)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if ((queue && tj_set(spec, "queue", json_string(queue))) ||
        (prio && tj_set(spec, "priorityClassName", json_string(prio))) ||
        (json_is_object(topo) && tj_set(spec, "networkTopology", json_deep_copy(topo)))) {
        json_decref(spec);
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    *obj = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "scheduling.volcano.sh/v1beta1", "kind",
                     "PodGroup", "metadata", tj_owner_meta(c, c->name), "spec", spec);
    return *obj ? COMMON_OK : common_error_set(err, COMMON_ENOMEM, "out of memory");
}

/*
 * Trainer's Volcano rule: a pod template's priorityClassName must name an existing
 * PriorityClass. As Trainer's plugin does, the check stops at the first template naming one of
 * the two built-in system classes (system-cluster-critical, system-node-critical). Without a
 * way to look PriorityClasses up (render), or when the lookup cannot answer, a warning says
 * so instead.
 */
static void volcano_priority_classes(struct tj_ctx *c)
{
    for (size_t i = 0; i < c->npodsets; i++) {
        json_t *pcv = json_object_get(c->podsets[i].podspec, "priorityClassName");
        const char *pc = json_string_value(pcv);
        struct common_error e;
        enum common_rc rc;

        if (!pc)
            continue;
        if (strcmp(pc, "system-cluster-critical") == 0 || strcmp(pc, "system-node-critical") == 0)
            return;
        if (!c->opts || !c->opts->exists) {
            tj_warn(c->errs,
                    "PriorityClass \"%s\" (replicated job \"%s\") could not be checked: no "
                    "cluster to look it up in; Trainer's webhook refuses the TrainJob when it "
                    "does not exist",
                    pc, c->podsets[i].name);
            continue;
        }
        memset(&e, 0, sizeof(e));
        rc = c->opts->exists(c->opts->exists_ctx, "PriorityClass", pc, &e);
        if (rc == COMMON_ENOTFOUND)
            tj_err(c->errs, c->trainjob, pcv, "Invalid", "spec.templateSpec.priorityClassName",
                   "PriorityClass \"%s\" doesn't exist: priorityclasses.scheduling.k8s.io "
                   "\"%s\" not found",
                   pc, pc);
        else if (rc != COMMON_OK)
            tj_warn(c->errs,
                    "PriorityClass \"%s\" (replicated job \"%s\") could not be checked: %s", pc,
                    c->podsets[i].name, e.msg);
    }
}

static void volcano_validate(struct tj_ctx *c)
{
    json_t *q = json_object_get(c->annotations, VOLCANO_QUEUE);

    if (json_is_string(q) && json_string_length(q) == 0)
        tj_err(c->errs, c->trainjob, q, "Invalid", "spec.annotations[" VOLCANO_QUEUE "]",
               "Volcano queue name must not be empty");
    volcano_priority_classes(c);
}

static const struct tj_gang_policy coscheduling = {
    .name = "coscheduling",
    .kind = TJ_GANG_COSCHEDULING,
    .enforce = cosched_enforce,
    .build = cosched_build,
    .validate = cosched_validate,
    .mark = cosched_mark,
};

static const struct tj_gang_policy volcano = {
    .name = "volcano",
    .kind = TJ_GANG_VOLCANO,
    .enforce = volcano_enforce,
    .build = volcano_build,
    .validate = volcano_validate,
};

static const struct tj_gang_policy *const gang_policies[] = {&coscheduling, &volcano};

const struct tj_gang_policy *tj_gang_policy_for(enum tj_gang kind)
{
    for (size_t i = 0; i < sizeof(gang_policies) / sizeof(gang_policies[0]); i++)
        if (gang_policies[i]->kind == kind)
            return gang_policies[i];
    return NULL;
}
