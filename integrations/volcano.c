/*
 * integrations/volcano.c - the volcano backend (integrations/volcano.h). trainjob_render writes
 * the PodGroup and the pods' group annotation as Kubeflow Trainer does (trainjob/podgroup.c:
 * name = TrainJob name, minMember and minResources over every pod, queue from the runtime's
 * annotation, priorityClassName from the pod templates, networkTopology from the runtime's
 * podGroupPolicy). translate then adds what Trainer leaves out:
 *
 *   queue            the TrainJob's own scheduling.volcano.sh/queue-name annotation wins over
 *                    the runtime's; with neither, the serve config's backends.volcano.queue;
 *                    with none of the three the field stays unset and Volcano uses "default".
 *                    With a cluster to ask (opts->exists, kind "Queue"), a named queue that
 *                    does not exist is an error naming where the name came from (Volcano's
 *                    own "default", which Volcano creates at start, is not looked up).
 *   networkTopology  when the runtime's podGroupPolicy gives none: from the gang's topology
 *                    request (docs/topology.md): required -> mode hard, preferred -> mode soft,
 *                    highestTierAllowed = the level's tier (backends.volcano.tiers, else
 *                    VOLCANO_DEFAULT_TIERS); a level without a tier is an error naming the
 *                    annotation. Slices have no Volcano spelling here and are refused.
 *   schedulerName    "volcano" in every pod template that names no scheduler.
 *   gang members     unlike Trainer, minMember, minResources and minTaskMember count the
 *                    gang's members alone (trainjob_gang_stage): not the initializers, which run
 *                    and end before the trainers exist (their pods get neither the group
 *                    annotation nor schedulerName), nor an MPI launcher, created once the workers
 *                    are Ready (its pods join the group beyond the minimum). Volcano's gang
 *                    plugin refuses a group with fewer existing pods than minMember, or fewer of
 *                    a task than its minTaskMember ("Not enough valid tasks for
 *                    gang-scheduling"), so counting them held the gang for ever.
 *   minTaskMember    {replicated job: its pods} and the pod annotation volcano.sh/task-spec,
 *                    for runtimes that choose Volcano without Trainer's podGroupPolicy.volcano
 *                    (the trainsched.io/backend annotation, the config default, render
 *                    --backend): a runtime written for Trainer gets Trainer's objects, plus only
 *                    fields Trainer leaves empty.
 *
 * Pure: no I/O except the injected opts->exists lookup, no clock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"
#include "integrations/backend.h"
#include "integrations/gang_members.h"
#include "integrations/volcano.h"
#include "topology/topology.h"

const struct common_kube_resource volcano_queues = {"scheduling.volcano.sh", "v1beta1", "queues",
                                                    0};
const struct common_kube_resource volcano_podgroups = {"scheduling.volcano.sh", "v1beta1",
                                                       "podgroups", 1};

#define QUEUE_FIELD "metadata.annotations[\"" VOLCANO_QUEUE_ANNOTATION "\"]"
#define MAX_TIER 1000000
#define MAX_ANN 64

/* ---- the tier mapping ---- */

/* the next item of a "K=V,K=V" list at *p: key and value trimmed into buffers; 0 at the end,
 * -1 when an item has no '=' or does not fit */
static int next_item(const char **p, char *key, size_t nk, char *val, size_t nv)
{
    const char *s = *p, *e, *eq;
    size_t kl, vl;

    while (*s == ' ' || *s == ',')
        s++;
    if (!*s)
        return 0;
    e = strchr(s, ',');
    if (!e)
        e = s + strlen(s);
    eq = memchr(s, '=', (size_t)(e - s));
    *p = e;
    if (!eq)
        return -1;
    while (eq > s && eq[-1] == ' ')
        eq--;
    kl = (size_t)(eq - s);
    while (*eq == ' ' || *eq == '=')
        eq++;
    vl = (size_t)(e - eq);
    while (vl && eq[vl - 1] == ' ')
        vl--;
    if (kl >= nk || vl >= nv)
        return -1;
    memcpy(key, s, kl);
    key[kl] = '\0';
    memcpy(val, eq, vl);
    val[vl] = '\0';
    return 1;
}

/* 1 when the items of tiers before position stop already name key */
static int listed_before(const char *tiers, const char *stop, const char *key)
{
    const char *p = tiers;
    char k[320], v[32];

    while (p < stop && next_item(&p, k, sizeof(k), v, sizeof(v)) > 0)
        if (p < stop && strcmp(k, key) == 0)
            return 1;
    return 0;
}

/* walk tiers: check it, and when level is given find it (*tier); 1 found, 0 not, -1 bad */
static int walk_tiers(const char *field, const char *tiers, const char *level, int64_t *tier,
                      struct common_error *err)
{
    const char *p = tiers;
    char key[320], val[32];
    int r, found = 0;

    while ((r = next_item(&p, key, sizeof(key), val, sizeof(val))) != 0) {
        char *end;
        long long t;

        if (r < 0 || !key[0]) {
            common_error_set(err, COMMON_EINVAL,
                             "%s: Invalid value: \"%s\": want LEVEL=TIER,LEVEL=TIER,... (a node "
                             "label key and a Volcano HyperNode tier)",
                             field, tiers);
            return -1;
        }
        errno = 0;
        t = strtoll(val, &end, 10);
        if (errno || end == val || *end || t < 1 || t > MAX_TIER) {
            common_error_set(err, COMMON_EINVAL,
                             "%s: Invalid value: \"%s=%s\": tier must be an integer from 1 to %d",
                             field, key, val, MAX_TIER);
            return -1;
        }
        if (listed_before(tiers, p, key)) {
            common_error_set(err, COMMON_EINVAL,
                             "%s: Invalid value: \"%s\": level \"%s\" is listed twice", field,
                             tiers, key);
            return -1;
        }
        if (level && strcmp(key, level) == 0) {
            *tier = t;
            found = 1;
        }
    }
    return found;
}

enum common_rc volcano_tiers_check(const char *field, const char *tiers, struct common_error *err)
{
    int64_t t;
    return walk_tiers(field, tiers ? tiers : "", NULL, &t, err) < 0 ? COMMON_EINVAL : COMMON_OK;
}

enum common_rc volcano_tier(const char *tiers, const char *level, int64_t *tier,
                            struct common_error *err)
{
    int r;

    if (!tiers || !*tiers)
        tiers = VOLCANO_DEFAULT_TIERS;
    r = walk_tiers("backends.volcano.tiers", tiers, level, tier, err);
    if (r < 0)
        return COMMON_EINVAL;
    if (r == 0)
        return common_error_set(err, COMMON_ENOTFOUND, "level \"%s\" has no tier in \"%s\"", level,
                                tiers);
    return COMMON_OK;
}

/* ---- translate ---- */

static json_t *find(json_t *objects, const char *api_prefix, const char *kind)
{
    size_t i;
    json_t *o;

    json_array_foreach(objects, i, o)
    {
        const char *api = json_string_value(json_object_get(o, "apiVersion"));
        const char *k = json_string_value(json_object_get(o, "kind"));
        if (api && k && strcmp(k, kind) == 0 && strncmp(api, api_prefix, strlen(api_prefix)) == 0)
            return o;
    }
    return NULL;
}

static json_t *at(const json_t *o, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    if (c)
        v = json_object_get(v, c);
    return v;
}

/* the queue: the TrainJob's annotation, else what trainjob_render took from the runtime, else
 * the config; checked against the cluster when the caller can look Queues up */
static enum common_rc set_queue(const struct backend_in *in, json_t *spec, struct common_error *err)
{
    const json_t *tq = at(in->trainjob, "metadata", "annotations", NULL);
    const char *cfg = in->opts ? in->opts->volcano_queue : NULL;
    const char *queue, *from;
    struct common_error e = {0};
    enum common_rc rc;

    tq = json_object_get(tq, VOLCANO_QUEUE_ANNOTATION);
    if (tq) {
        if (!json_is_string(tq) || json_string_length(tq) == 0)
            return common_error_set(err, COMMON_EINVAL,
                                    QUEUE_FIELD ": Invalid value: must name a Volcano queue "
                                                "(scheduling.volcano.sh/v1beta1 Queue)");
        if (json_object_set(spec, "queue", (json_t *)tq))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        from = "the TrainJob's " QUEUE_FIELD;
    } else if (json_is_string(json_object_get(spec, "queue"))) {
        from = "the runtime's " QUEUE_FIELD;
    } else if (cfg && *cfg) {
        if (json_object_set_new(spec, "queue", json_string(cfg)))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        from = "the serve config's backends.volcano.queue";
    } else {
        return COMMON_OK; /* Volcano's own "default", which Volcano creates: not checked */
    }
    queue = json_string_value(json_object_get(spec, "queue"));
    /* a Queue is a cluster-scoped object: a name that is no DNS-1123 subdomain never exists */
    if (queue && common_names_dns1123_subdomain(queue))
        return common_error_set(
            err, COMMON_EINVAL, "%s: Invalid value: \"%s\": a Volcano Queue name: %s",
            tq ? QUEUE_FIELD : "spec.queue", queue, common_names_dns1123_subdomain(queue));
    if (!queue || !in->opts || !in->opts->exists)
        return COMMON_OK;
    rc = in->opts->exists(in->opts->exists_ctx, "Queue", queue, &e);
    if (rc == COMMON_ENOTFOUND)
        return common_error_set(err, COMMON_EINVAL,
                                "spec.queue: Invalid value: \"%s\": Volcano Queue \"%s\" does not "
                                "exist (queues.scheduling.volcano.sh \"%s\" not found); the name "
                                "comes from %s",
                                queue, queue, queue, from);
    return COMMON_OK; /* exists, or cannot tell: Volcano holds the group until the queue exists */
}

static enum common_rc set_topology(const struct backend_in *in, const json_t *rjobs, json_t *spec,
                                   struct common_error *err)
{
    struct common_kv kv[MAX_ANN];
    struct topo_request rq;
    const char *tiers = in->opts ? in->opts->volcano_tiers : NULL;
    const char *level, *src, *mode;
    int64_t tier = 0;
    size_t n;
    enum common_rc rc;

    if (json_object_get(spec, "networkTopology"))
        return COMMON_OK; /* the runtime's podGroupPolicy.volcano.networkTopology, as Trainer */
    rc = gang_topology_annotations(in->trainjob, rjobs, kv, MAX_ANN, &n, err);
    if (!rc)
        rc = topo_request_parse(kv, n, &rq, err);
    if (rc)
        return rc;
    if (topo_request_empty(&rq))
        return COMMON_OK;
    if (rq.slice)
        return common_error_set(err, COMMON_EINVAL,
                                "metadata.annotations[\"%s\"]: Invalid value: \"%s\": the volcano "
                                "backend has no spelling for topology slices (Volcano's "
                                "networkTopology bounds the whole gang)",
                                rq.slice_src, rq.slice);
    if (rq.required) {
        level = rq.required;
        src = rq.required_src;
        mode = "hard";
    } else if (rq.preferred) {
        level = rq.preferred;
        src = rq.preferred_src;
        mode = "soft";
    } else {
        return COMMON_OK; /* unconstrained */
    }
    rc = volcano_tier(tiers, level, &tier, err);
    if (rc == COMMON_ENOTFOUND)
        return common_error_set(err, COMMON_EINVAL,
                                "metadata.annotations[\"%s\"]: Invalid value: \"%s\": level \"%s\" "
                                "has no Volcano HyperNode tier: backends.volcano.tiers (serve "
                                "--volcano-tiers, render --volcano-tiers) maps LEVEL=TIER and is "
                                "\"%s\"",
                                src, level, level, tiers && *tiers ? tiers : VOLCANO_DEFAULT_TIERS);
    if (rc)
        return rc;
    if (json_object_set_new(
            spec, "networkTopology",
            json_pack("{s:s, s:I}", "mode", mode, "highestTierAllowed", (json_int_t)tier)))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

static json_int_t int_or(const json_t *v, json_int_t dflt)
{
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* pod templates: schedulerName volcano where none is named; with per_task, the task-spec
 * annotation and spec.minTaskMember. By the gang's stages (gang_role): the replicated jobs that
 * run before the gang (initializers) are left alone, as trainjob_render left them out of the
 * PodGroup; one that comes after it (an MPI launcher) is scheduled by Volcano in the group but
 * has no minimum in minTaskMember, as it has none in minMember */
static enum common_rc mark_pods(const json_t *rjobs, json_t *pgspec, int per_task,
                                struct common_error *err)
{
    json_t *tasks = json_object(), *rj;
    size_t i;

    if (!tasks)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    json_array_foreach(rjobs, i, rj)
    {
        const char *name = json_string_value(json_object_get(rj, "name"));
        json_t *jspec = at(rj, "template", "spec", NULL);
        json_t *tmpl = json_object_get(jspec, "template");
        json_t *ps = json_object_get(tmpl, "spec"), *meta, *ann;
        json_int_t pods = int_or(json_object_get(jspec, "parallelism"), 1);
        enum gang_role role = gang_role(rjobs, name);

        if (!name || !json_is_object(ps) || role == GANG_BEFORE)
            continue;
        if (!json_is_string(json_object_get(ps, "schedulerName")) &&
            json_object_set_new(ps, "schedulerName", json_string(VOLCANO_SCHEDULER)))
            goto nomem;
        if (!per_task || pods <= 0)
            continue;
        meta = json_object_get(tmpl, "metadata");
        if (!json_is_object(meta) && json_object_set_new(tmpl, "metadata", meta = json_object()))
            goto nomem;
        ann = json_object_get(meta, "annotations");
        if (!json_is_object(ann) && json_object_set_new(meta, "annotations", ann = json_object()))
            goto nomem;
        if (json_object_set_new(ann, VOLCANO_TASK_ANNOTATION, json_string(name)) ||
            (role == GANG_MEMBER && json_object_set_new(tasks, name, json_integer(pods))))
            goto nomem;
    }
    if (pgspec && json_object_size(tasks) && json_object_set(pgspec, "minTaskMember", tasks))
        goto nomem;
    json_decref(tasks);
    return COMMON_OK;
nomem:
    json_decref(tasks);
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

static enum common_rc volcano_translate(const struct backend_in *in, json_t *objects,
                                        json_t *preview, struct common_error *err)
{
    json_t *js = find(objects, "jobset.x-k8s.io/", "JobSet");
    json_t *pg = find(objects, "scheduling.volcano.sh/", "PodGroup");
    json_t *pgspec = pg ? json_object_get(pg, "spec") : NULL;
    const json_t *rjobs = js ? at(js, "spec", "replicatedJobs", NULL) : NULL;
    /* a runtime written for Trainer (podGroupPolicy.volcano) keeps Trainer's fields as they are */
    int trainer_runtime = json_is_object(at(in->runtime, "spec", "podGroupPolicy", "volcano"));
    enum common_rc rc;

    (void)preview;
    if (pg && !json_is_object(pgspec))
        return common_error_set(err, COMMON_EINVAL, "Volcano PodGroup without spec");
    if (pgspec &&
        ((rc = set_queue(in, pgspec, err)) || (rc = set_topology(in, rjobs, pgspec, err))))
        return rc;
    if (js)
        return mark_pods(rjobs, pgspec, !trainer_runtime, err);
    return COMMON_OK;
}

const char *volcano_queue_of(const json_t *objects)
{
    const json_t *pg = find((json_t *)objects, "scheduling.volcano.sh/", "PodGroup");
    const char *q = json_string_value(at(pg, "spec", "queue", NULL));

    if (!pg)
        return NULL;
    return q && *q ? q : VOLCANO_DEFAULT_QUEUE;
}

int volcano_queue_not_open(const char *name, const json_t *queue_obj, char *buf, size_t n)
{
    const char *state = json_string_value(at(queue_obj, "status", "state", NULL));

    if (!name || !state || !*state || strcmp(state, "Open") == 0)
        return 0;
    snprintf(buf, n,
             "spec.queue: Volcano Queue \"%s\" is %s (status.state), not Open: Volcano's "
             "scheduler takes no PodGroup from it, so the gang waits, none of its pods bound, "
             "until the queue is opened (vcctl queue operate --action open --name %s)",
             name, state, name);
    return 1;
}

/* the PodGroup CRD: without it the JobSet's pods would wait for ever for a scheduler that is not
 * there */
static const struct common_kube_resource *const volcano_requires[] = {&volcano_podgroups, NULL};

const struct backend backend_volcano = {
    .name = "volcano",
    .built = 1,
    .what = "Volcano PodGroup (scheduling.volcano.sh/v1beta1), gang enforced by Volcano",
    .core_gang = TRAINJOB_GANG_VOLCANO,
    .requires = volcano_requires,
    .install = "install Volcano, whose CRDs define it, and its scheduler",
    .translate = volcano_translate,
};
