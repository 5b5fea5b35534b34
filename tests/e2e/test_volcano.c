/*
 * tests/e2e/test_volcano.c - the volcano backend (integrations/volcano.h) against the real test
 * bed: the reconciler runs in this process as trainsched's ServiceAccount (the shipped RBAC),
 * one fresh namespace per test, every child written with fieldValidation=Strict against the
 * Volcano CRDs the bed generates from volcano.sh/apis (PodGroup, Queue). Volcano's scheduler
 * and controllers are not in the bed (volcano.sh/volcano is not served by the Go module proxy),
 * so nothing here is scheduled: the tests check the objects, the pods' keys, the refusals, and
 * that a suspended TrainJob's resize reaches the gang object (Volcano's and coscheduling's).
 *
 *   podgroup_and_pods_carry_queue_priority_tasks_and_topology
 *                        a TrainJob naming a Queue, a runtime with a PriorityClass and a
 *                        topology request: the PodGroup has queue, priorityClassName, minMember,
 *                        minTaskMember, minResources, networkTopology; the pods (made by the
 *                        JobSet and Job controllers) carry group-name, task-spec, schedulerName
 *   mpi_gang_is_valid_for_volcano_with_the_pods_made_before_it_runs
 *                        an MPI runtime (the launcher dependsOn the workers being Ready): the
 *                        PodGroup's minMember and minTaskMember are met by the worker pods the
 *                        JobSet controller makes before the gang runs, as Volcano's gang plugin
 *                        requires; the launcher's template joins the group
 *   missing_queue_is_a_condition_and_an_event_until_the_queue_exists
 *                        a Queue that does not exist: ResourcesCreated=False naming spec.queue
 *                        and where the name came from, a Warning Event, no JobSet, no PodGroup,
 *                        no snapshot; once the Queue is created the TrainJob is built
 *   missing_priority_class_is_a_condition_and_nothing_is_written
 *   resize_while_suspended_updates_the_volcano_podgroup
 *   resize_while_suspended_updates_the_coscheduling_podgroup
 *                        numNodes 2 -> 4 on a suspended TrainJob: the gang object follows
 *                        (minMember, minTaskMember, minResources), it is not "created once,
 *                        never updated"; the reconciler replaces the JobSet itself (Event
 *                        JobSetReplaced), whose replicated jobs JobSet's webhook keeps immutable
 *   suspended_jobset_written_before_the_volcano_keys_is_replaced_and_resumes
 *                        an upgrade: the suspended JobSet of a TrainJob was written by an
 *                        older trainsched (no schedulerName, task-spec or group-name in its pod
 *                        templates); JobSet's webhook refuses the new templates (schedulerName
 *                        is immutable), so the reconciler deletes and recreates the JobSet
 *                        (Event JobSetReplaced) and the resumed TrainJob runs with the keys
 *   running_jobset_written_before_the_volcano_keys_is_suspended_then_replaced
 *                        the same JobSet running: left alone while the TrainJob runs; when the
 *                        TrainJob is suspended, the JobSet is suspended alone (its templates
 *                        cannot change), then replaced
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/events.h"
#include "common/kube.h"
#include "common/log.h"
#include "e2eutil.h"
#include "integrations/backend.h"
#include "integrations/volcano.h"
#include "reconciler/core.h"
#include "reconciler/reconciler.h"
#include "trainjob/status.h"

static struct common_kube *admin, *tsk;
static struct common_events *events;
static struct rc_reconciler *rec;
static char ns[128];
static const struct common_kube_resource volcano_pgs = {"scheduling.volcano.sh", "v1beta1",
                                                        "podgroups", 1};
static const struct common_kube_resource priorityclasses = {"scheduling.k8s.io", "v1",
                                                            "priorityclasses", 0};
static const struct common_kube_resource core_events = {"", "v1", "events", 1};

static int volcano_served(void)
{
    json_t *items = NULL;
    struct common_error err;
    struct common_kube_list_opts lo = {.limit = 1};
    enum common_rc rc = common_kube_list(admin, &volcano_queues, NULL, &lo, &items, NULL, &err);
    json_decref(items);
    return rc == COMMON_OK;
}

static json_t *get(const struct common_kube_resource *r, const char *name)
{
    return e2e_get(admin, r, ns, name);
}

static json_t *at(const json_t *o, const char *path)
{
    return e2e_at(o, path);
}

static const char *str(const json_t *o, const char *path)
{
    return json_string_value(at(o, path));
}

/* poll fn(arg) every 200 ms until it returns non-NULL (a new reference) or secs pass */
static json_t *wait_for(double secs, e2e_poll_fn fn, const void *arg, const char *what)
{
    return e2e_wait_for(secs, fn, arg, what, ns);
}

struct want_cond {
    const char *tj, *status, *reason;
};

static json_t *has_cond(const void *arg)
{
    const struct want_cond *w = arg;
    return e2e_tj_cond(admin, ns, w->tj, RC_COND_CREATED, w->status, w->reason);
}

/* an Event of type on TrainJob tj, of reason (NULL: any), whose message holds want (NULL: any
 * message); a new reference or NULL */
struct want_event {
    const char *tj, *type, *reason, *want;
};

static json_t *has_event(const void *arg)
{
    const struct want_event *w = arg;
    struct common_error err;
    struct common_kube_list_opts lo = {0};
    json_t *items = NULL, *it;
    char sel[300];
    size_t i;

    snprintf(sel, sizeof(sel), "involvedObject.name=%s,involvedObject.kind=TrainJob%s%s", w->tj,
             w->reason ? ",reason=" : "", w->reason ? w->reason : "");
    lo.field_selector = sel;
    ck_assert_msg(common_kube_list(admin, &core_events, ns, &lo, &items, NULL, &err) == COMMON_OK,
                  "%s", err.msg);
    json_array_foreach(items, i, it)
    {
        const char *m = str(it, "message"), *t = str(it, "type");
        if (m && t && strcmp(t, w->type) == 0 && (!w->want || strstr(m, w->want))) {
            json_incref(it);
            json_decref(items);
            return it;
        }
    }
    json_decref(items);
    return NULL;
}

static void start_reconciler(void)
{
    struct rc_opts o;

    e2e_rc_opts(&o, tsk, ns);
    o.events = events;
    rec = e2e_rc_start(&o);
}

static char pc_name[200], queue_name[200];

static void setup(void)
{
    struct common_error err;

    e2e_log_level_from_env();
    admin = e2e_client(20000, 0);
    tsk = e2e_client(20000, 1);
    e2e_make_ns(admin, "volcano", ns, sizeof(ns));
    /* cluster-scoped names of this test's own */
    snprintf(pc_name, sizeof(pc_name), "%s-high", ns);
    snprintf(queue_name, sizeof(queue_name), "%s-q", ns);
    events = common_events_create(tsk, "e2e-volcano", NULL, &err);
    ck_assert_msg(events != NULL, "%s", err.msg);
    ck_assert_msg(volcano_served(), "the bed serves no scheduling.volcano.sh/v1beta1 queues: "
                                    "build.sh generates the Volcano CRDs, up.sh installs them");
    start_reconciler();
}

static void teardown(void)
{
    struct common_error err;
    rc_destroy(rec);
    rec = NULL;
    common_events_destroy(events);
    events = NULL;
    common_kube_delete(admin, &priorityclasses, NULL, pc_name, NULL, NULL, NULL, &err);
    common_kube_delete(admin, &volcano_queues, NULL, queue_name, NULL, NULL, NULL, &err);
    e2e_drop_ns(admin, ns);
    common_kube_client_destroy(tsk);
    common_kube_client_destroy(admin);
}

static void make_queue(const char *name)
{
    e2e_create(admin, &volcano_queues, NULL,
               e2e_yamlf("apiVersion: scheduling.volcano.sh/v1beta1\n"
                         "kind: Queue\n"
                         "metadata: {name: %s}\n"
                         "spec: {weight: 1, reclaimable: true}\n",
                         name));
}

static void make_priority_class(const char *name)
{
    e2e_create(admin, &priorityclasses, NULL,
               e2e_yamlf("apiVersion: scheduling.k8s.io/v1\n"
                         "kind: PriorityClass\n"
                         "metadata: {name: %s}\n"
                         "value: 1000\n",
                         name));
}

/* A runtime `name` on backend (the trainsched.io/backend annotation) with podGroupPolicy
 * policy (YAML or ""), numNodes 2 pods of 1 CPU on a `node` job, pod template annotations
 * ann ("" or YAML flow entries) and priorityClassName pc (NULL: none). */
static json_t *runtime(const char *name, const char *backend, const char *policy, const char *ann,
                       const char *pc)
{
    char pcl[300] = "";
    if (pc)
        snprintf(pcl, sizeof(pcl), "                priorityClassName: %s\n", pc);
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainingRuntime\n"
                     "metadata: {name: %s, namespace: %s, annotations: {trainsched.io/backend: "
                     "%s}}\n"
                     "spec:\n"
                     "  mlPolicy: {numNodes: 2}\n"
                     "%s" E2E_RT_NODE_JOB "              metadata: {annotations: {%s}}\n"
                     "              spec:\n"
                     "%s"
                     "                nodeSelector: {trainsched.io/e2e-ns: %s}\n"
                     "                containers:\n"
                     "                - name: node\n"
                     "                  image: busybox:1.36\n"
                     "                  command: [sh, -c, 'sleep 3600']\n"
                     "                  resources: {requests: {cpu: '1', memory: 1Gi}}\n",
                     name, ns, backend, policy, ann, pcl, ns);
}

static json_t *trainjob(const char *name, const char *rt, const char *queue, int suspend)
{
    char ann[300] = "";
    if (queue)
        snprintf(ann, sizeof(ann), ", annotations: {scheduling.volcano.sh/queue-name: %s}", queue);
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainJob\n"
                     "metadata: {name: %s, namespace: %s%s}\n"
                     "spec:\n"
                     "  runtimeRef: {name: %s, kind: TrainingRuntime}\n"
                     "  suspend: %s\n",
                     name, ns, ann, rt, suspend ? "true" : "false");
}

/* the pods of JobSet name once there are n of them; a new list's items */
struct pods_want {
    const char *jobset;
    size_t n;
};

static json_t *pods_are(const void *arg)
{
    const struct pods_want *w = arg;
    json_t *items = e2e_jobset_pods(admin, ns, w->jobset);
    if (json_array_size(items) == w->n)
        return items;
    json_decref(items);
    return NULL;
}

/* The n pods of JobSet name (made by the JobSet and Job controllers), once there, checked for
 * the keys Volcano's scheduler reads: schedulerName volcano, group-name = the PodGroup's (the
 * TrainJob's) name, task-spec = the replicated job's (node). Returns them (a new array). */
static json_t *pods_with_volcano_keys(const char *name, size_t n)
{
    struct pods_want pw = {name, n};
    json_t *pods = wait_for(120, pods_are, &pw, "the pods"), *p;
    size_t i;

    json_array_foreach(pods, i, p)
    {
        const json_t *ann = at(p, "metadata.annotations");
        ck_assert_str_eq(str(p, "spec.schedulerName"), VOLCANO_SCHEDULER);
        ck_assert_str_eq(json_string_value(json_object_get(ann, VOLCANO_GROUP_ANNOTATION)), name);
        ck_assert_str_eq(json_string_value(json_object_get(ann, VOLCANO_TASK_ANNOTATION)), "node");
    }
    return pods;
}

START_TEST(podgroup_and_pods_carry_queue_priority_tasks_and_topology)
{
    struct e2e_obj_ref pgref = {admin, ns, &volcano_pgs, "full"};
    json_t *pg, *pods, *p;
    size_t i;

    make_queue(queue_name);
    make_priority_class(pc_name);
    e2e_create(admin, &common_kube_trainingruntimes, ns,
               runtime("vrt", "volcano", "",
                       "trainsched.io/topology-required: cloud.provider.com/topology-rack",
                       pc_name));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("full", "vrt", queue_name, 0));
    pg = wait_for(90, e2e_exists, &pgref, "the Volcano PodGroup");
    /* Trainer's fields */
    ck_assert_int_eq(json_integer_value(at(pg, "spec.minMember")), 2);
    ck_assert_str_eq(str(pg, "spec.minResources.cpu"), "2");
    ck_assert_str_eq(str(pg, "spec.minResources.memory"), "2Gi");
    ck_assert_str_eq(str(pg, "spec.priorityClassName"), pc_name);
    ck_assert_str_eq(str(pg, "metadata.ownerReferences.0.kind"), "TrainJob");
    /* ours */
    ck_assert_str_eq(str(pg, "spec.queue"), queue_name);
    ck_assert_int_eq(json_integer_value(at(pg, "spec.minTaskMember.node")), 2);
    ck_assert_uint_eq(json_object_size(at(pg, "spec.minTaskMember")), 1);
    ck_assert_str_eq(str(pg, "spec.networkTopology.mode"), "hard");
    ck_assert_int_eq(json_integer_value(at(pg, "spec.networkTopology.highestTierAllowed")), 1);
    json_decref(pg);
    /* the pods the JobSet and Job controllers made carry the keys Volcano's scheduler reads */
    pods = pods_with_volcano_keys("full", 2);
    json_array_foreach(pods, i, p)
    {
        ck_assert_str_eq(str(p, "spec.priorityClassName"), pc_name);
    }
    json_decref(pods);
}
END_TEST

START_TEST(missing_queue_is_a_condition_and_an_event_until_the_queue_exists)
{
    struct want_cond bad = {"noq", "False", RC_REASON_INVALID_TRAINJOB};
    struct want_event ev = {"noq", "Warning", NULL, "Volcano Queue"};
    struct e2e_obj_ref pgref = {admin, ns, &volcano_pgs, "noq"};
    const json_t *c;
    const char *msg;
    json_t *tj, *o;
    char want[300];

    e2e_create(admin, &common_kube_trainingruntimes, ns, runtime("vrt", "volcano", "", "", NULL));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("noq", "vrt", queue_name, 0));
    tj = wait_for(60, has_cond, &bad, "ResourcesCreated=False InvalidTrainJob");
    c = trainjob_status_condition(json_object_get(tj, "status"), RC_COND_CREATED);
    msg = json_string_value(json_object_get(c, "message"));
    snprintf(want, sizeof(want), "spec.queue: Invalid value: \"%s\"", queue_name);
    ck_assert_msg(strstr(msg, want) != NULL, "%s", msg);
    ck_assert_msg(strstr(msg, "the TrainJob's metadata.annotations[\"scheduling.volcano.sh/"
                              "queue-name\"]") != NULL,
                  "%s", msg);
    json_decref(tj);
    o = wait_for(30, has_event, &ev, "a Warning Event naming the Queue");
    ck_assert_msg(strstr(str(o, "message"), want) != NULL, "%s", str(o, "message"));
    json_decref(o);
    /* nothing half-created */
    ck_assert_ptr_null(o = get(&common_kube_jobsets, "noq"));
    ck_assert_ptr_null(o = get(&volcano_pgs, "noq"));
    ck_assert_ptr_null(o = get(&common_kube_configmaps, "noq-runtime-snapshot"));
    /* the Queue appears: the TrainJob is built without being touched */
    make_queue(queue_name);
    o = wait_for(60, e2e_exists, &pgref, "the PodGroup once the Queue exists");
    ck_assert_str_eq(str(o, "spec.queue"), queue_name);
    json_decref(o);
}
END_TEST

START_TEST(missing_priority_class_is_a_condition_and_nothing_is_written)
{
    struct want_cond bad = {"nopc", "False", NULL};
    struct want_event ev = {"nopc", "Warning", NULL, "doesn't exist"};
    const json_t *c;
    const char *msg;
    json_t *tj, *o;
    char want[300];

    e2e_create(admin, &common_kube_trainingruntimes, ns,
               runtime("vrt", "volcano", "", "", pc_name));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("nopc", "vrt", NULL, 0));
    tj = wait_for(60, has_cond, &bad, "ResourcesCreated=False");
    c = trainjob_status_condition(json_object_get(tj, "status"), RC_COND_CREATED);
    msg = json_string_value(json_object_get(c, "message"));
    snprintf(want, sizeof(want), "PriorityClass \"%s\" doesn't exist", pc_name);
    ck_assert_msg(strstr(msg, want) != NULL, "%s", msg);
    ck_assert_msg(strstr(msg, "priorityClassName") != NULL, "%s", msg);
    json_decref(tj);
    o = wait_for(30, has_event, &ev, "a Warning Event naming the PriorityClass");
    json_decref(o);
    ck_assert_ptr_null(o = get(&common_kube_jobsets, "nopc"));
    ck_assert_ptr_null(o = get(&volcano_pgs, "nopc"));
    ck_assert_ptr_null(o = get(&common_kube_configmaps, "nopc-runtime-snapshot"));
}
END_TEST

/* Volcano's gang plugin accepts a group only when its existing pods (pending ones included)
 * reach minMember and, per task, minTaskMember ("Not enough valid tasks for gang-scheduling"
 * otherwise: the group is never scheduled). An MPI runtime's launcher dependsOn the workers
 * being Ready, so before Volcano schedules the gang the JobSet controller makes the 2 worker
 * pods alone: the PodGroup written on the bed must be valid with exactly those pods. It was not
 * (minMember 3, minTaskMember {launcher: 1, node: 2}). */
START_TEST(mpi_gang_is_valid_for_volcano_with_the_pods_made_before_it_runs)
{
    struct e2e_obj_ref pgref = {admin, ns, &volcano_pgs, "mpi"};
    json_t *pg, *pods, *p;
    const char *task;
    json_t *min;
    size_t i;

    e2e_create(
        admin, &common_kube_trainingruntimes, ns,
        e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                  "kind: TrainingRuntime\n"
                  "metadata: {name: mpi, namespace: %s, annotations: {trainsched.io/backend: "
                  "volcano}}\n"
                  "spec:\n"
                  "  mlPolicy: {numNodes: 2}\n" E2E_RT_NODE_JOB "              spec:\n"
                  "                containers:\n"
                  "                - {name: node, image: busybox:1.36, command: [sleep, "
                  "'3600'], resources: {requests: {cpu: '1', memory: 1Gi}}}\n"
                  "      - name: launcher\n"
                  "        dependsOn: [{name: node, status: Ready}]\n"
                  "        template:\n"
                  "          spec:\n"
                  "            template:\n"
                  "              spec:\n"
                  "                containers:\n"
                  "                - {name: launcher, image: busybox:1.36, command: [sleep, "
                  "'3600'], resources: {requests: {cpu: 300m, memory: 1Gi}}}\n",
                  ns));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("mpi", "mpi", NULL, 0));
    pg = wait_for(90, e2e_exists, &pgref, "the Volcano PodGroup");
    /* the pods the JobSet and Job controllers made: the workers (no Volcano here runs them, so
     * they never become Ready and the launcher is never created) */
    pods = pods_with_volcano_keys("mpi", 2);
    ck_assert_msg(json_integer_value(at(pg, "spec.minMember")) <= (json_int_t)json_array_size(pods),
                  "minMember %lld with %zu pods: Volcano refuses the group",
                  (long long)json_integer_value(at(pg, "spec.minMember")), json_array_size(pods));
    json_object_foreach(at(pg, "spec.minTaskMember"), task, min)
    {
        json_int_t have = 0;
        json_array_foreach(pods, i, p)
        {
            const char *t = json_string_value(
                json_object_get(at(p, "metadata.annotations"), VOLCANO_TASK_ANNOTATION));
            have += t && strcmp(t, task) == 0;
        }
        ck_assert_msg(have >= json_integer_value(min),
                      "minTaskMember[%s] %lld with %lld such pods: Volcano refuses the group", task,
                      (long long)json_integer_value(min), (long long)have);
    }
    /* the gang is the workers: their 2 pods and requests */
    ck_assert_int_eq(json_integer_value(at(pg, "spec.minMember")), 2);
    ck_assert_str_eq(str(pg, "spec.minResources.cpu"), "2");
    /* the launcher's template joins the group when it comes */
    {
        json_t *js = get(&common_kube_jobsets, "mpi"), *rj;
        int seen = 0;
        json_array_foreach(at(js, "spec.replicatedJobs"), i, rj)
        {
            const json_t *tm = at(rj, "template.spec.template");
            if (strcmp(str(rj, "name"), "launcher") != 0)
                continue;
            seen = 1;
            ck_assert_str_eq(str(tm, "spec.schedulerName"), VOLCANO_SCHEDULER);
            ck_assert_str_eq(json_string_value(json_object_get(at(tm, "metadata.annotations"),
                                                               VOLCANO_GROUP_ANNOTATION)),
                             "mpi");
        }
        ck_assert_msg(seen, "the JobSet has no launcher");
        json_decref(js);
    }
    json_decref(pods);
    json_decref(pg);
}
END_TEST

/* numNodes 2 -> 4 on suspended TrainJob `name`: the gang object of resource r follows */
struct pg_size {
    const struct common_kube_resource *r;
    const char *name;
    int64_t n;
};

static json_t *pg_sized(const void *arg)
{
    const struct pg_size *w = arg;
    json_t *pg = get(w->r, w->name);
    if (pg && json_integer_value(at(pg, "spec.minMember")) == w->n)
        return pg;
    json_decref(pg);
    return NULL;
}

/* JobSet name once its replicated jobs all have parallelism n; a new reference or NULL */
static json_t *js_sized(const void *arg)
{
    const struct pg_size *w = arg;
    json_t *js = get(&common_kube_jobsets, w->name), *rj;
    size_t i;

    json_array_foreach(at(js, "spec.replicatedJobs"), i, rj)
    {
        if (json_integer_value(at(rj, "template.spec.parallelism")) != w->n) {
            json_decref(js);
            return NULL;
        }
    }
    return js;
}

static void resize(const char *backend, const struct common_kube_resource *r, int volcano)
{
    struct pg_size two = {r, "resize", 2}, four = {r, "resize", 4};
    struct want_event replaced = {"resize", "Normal", "JobSetReplaced", NULL};
    json_t *pg;

    e2e_create(admin, &common_kube_trainingruntimes, ns, runtime("rrt", backend, "", "", NULL));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("resize", "rrt", NULL, 1));
    pg = wait_for(60, pg_sized, &two, "the PodGroup of 2");
    ck_assert_str_eq(str(pg, "spec.minResources.cpu"), "2");
    if (volcano)
        ck_assert_int_eq(json_integer_value(at(pg, "spec.minTaskMember.node")), 2);
    json_decref(pg);
    /* JobSet's webhook keeps a JobSet's replicated jobs immutable: the reconciler deletes the
     * suspended JobSet and writes it again with 4 pods, then the gang object. Whatever the
     * order of the reconciles, the final state is both at 4. */
    e2e_tj_set_nodes(admin, ns, "resize", 4);
    pg = wait_for(120, pg_sized, &four, "the PodGroup resized to 4");
    ck_assert_str_eq(str(pg, "spec.minResources.cpu"), "4");
    ck_assert_str_eq(str(pg, "spec.minResources.memory"), "4Gi");
    if (volcano)
        ck_assert_int_eq(json_integer_value(at(pg, "spec.minTaskMember.node")), 4);
    json_decref(pg);
    four.r = &common_kube_jobsets;
    pg = wait_for(120, js_sized, &four, "the JobSet of 4 pods");
    ck_assert(json_is_true(at(pg, "spec.suspend")));
    json_decref(pg);
    json_decref(wait_for(60, has_event, &replaced, "the JobSetReplaced Event"));
}

START_TEST(resize_while_suspended_updates_the_volcano_podgroup)
{
    resize("volcano", &volcano_pgs, 1);
}
END_TEST

START_TEST(resize_while_suspended_updates_the_coscheduling_podgroup)
{
    resize("coscheduling", &common_kube_podgroups, 0);
}
END_TEST

/* the JobSet name once it is not the one of uid `old`, has spec.suspend as suspend and its pod
 * templates name schedulerName volcano; a new reference or NULL */
struct js_new {
    const char *name, *old_uid;
    int suspend;
};

static json_t *jobset_replaced(const void *arg)
{
    const struct js_new *w = arg;
    json_t *js = get(&common_kube_jobsets, w->name), *rj;
    size_t i;

    if (!js || !str(js, "metadata.uid") || strcmp(str(js, "metadata.uid"), w->old_uid) == 0 ||
        json_is_true(at(js, "spec.suspend")) != w->suspend)
        goto no;
    json_array_foreach(at(js, "spec.replicatedJobs"), i, rj)
    {
        const char *sn = str(rj, "template.spec.template.spec.schedulerName");
        if (!sn || strcmp(sn, VOLCANO_SCHEDULER) != 0)
            goto no;
    }
    return js;
no:
    json_decref(js);
    return NULL;
}

/* spec.suspend of TrainJob name set to suspend */
static void tj_suspend(const char *name, int suspend)
{
    struct common_error err;
    ck_assert_msg(common_kube_patch(
                      admin, &common_kube_trainjobs, ns, name, COMMON_KUBE_MERGE_PATCH,
                      suspend ? "{\"spec\":{\"suspend\":true}}" : "{\"spec\":{\"suspend\":false}}",
                      NULL, NULL, &err) == COMMON_OK,
                  "suspend %s: %s", name, err.msg);
}

/* TrainJob name once it has no ResourcesCreated condition (its objects were built); a new
 * reference or NULL */
static json_t *no_created_cond(const void *arg)
{
    json_t *tj = get(&common_kube_trainjobs, arg);
    if (tj && !trainjob_status_condition(json_object_get(tj, "status"), RC_COND_CREATED))
        return tj;
    json_decref(tj);
    return NULL;
}

/*
 * The JobSet an older trainsched wrote for TrainJob tj (read from the cluster, with its uid) on
 * runtime rt: today's rendering without what the volcano backend added to the pod templates
 * since (schedulerName, the task-spec and group-name annotations), suspended or running as the
 * TrainJob is, created under the reconciler's field manager as that trainsched did. Returns its uid
 * (strdup'd).
 */
static char *write_old_jobset(const char *tj_name, const char *rt_name)
{
    struct common_kube_write_opts wo = {.field_manager = "trainsched", .strict = 1};
    struct common_arena *a = common_arena_create(0);
    struct trainjob_output out = {0};
    struct common_error err;
    json_t *tj = get(&common_kube_trainjobs, tj_name);
    json_t *rt = get(&common_kube_trainingruntimes, rt_name);
    json_t *o, *js = NULL, *made = NULL, *rj;
    char *uid;
    size_t i;

    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(tj);
    ck_assert_ptr_nonnull(rt);
    ck_assert_msg(backend_render(&backend_volcano, a, tj, rt, NULL, NULL, &out, NULL, &err) ==
                      COMMON_OK,
                  "%s", err.msg);
    json_array_foreach(out.objects, i, o)
    {
        if (strcmp(str(o, "kind"), "JobSet") == 0)
            js = o;
    }
    ck_assert_ptr_nonnull(js);
    json_array_foreach(at(js, "spec.replicatedJobs"), i, rj)
    {
        json_t *ann = at(rj, "template.spec.template.metadata.annotations");
        /* today's rendering has them: the test is about their absence */
        ck_assert_str_eq(str(rj, "template.spec.template.spec.schedulerName"), VOLCANO_SCHEDULER);
        ck_assert_ptr_nonnull(json_object_get(ann, VOLCANO_TASK_ANNOTATION));
        json_object_del(at(rj, "template.spec.template.spec"), "schedulerName");
        json_object_del(ann, VOLCANO_TASK_ANNOTATION);
        json_object_del(ann, VOLCANO_GROUP_ANNOTATION);
    }
    ck_assert_msg(common_kube_create(admin, &common_kube_jobsets, ns, js, &wo, &made, &err) ==
                      COMMON_OK,
                  "create the old JobSet: %s", err.msg);
    uid = strdup(str(made, "metadata.uid"));
    json_decref(made);
    json_decref(out.objects);
    json_decref(tj);
    json_decref(rt);
    common_arena_destroy(a);
    return uid;
}

/* An upgrade: the older trainsched (this test's reconciler stopped) left TrainJob name on a
 * volcano runtime, suspended or running, with its JobSet (write_old_jobset); then the new
 * trainsched starts. Returns the old JobSet's uid (strdup'd). */
static char *upgraded(const char *name, int suspend)
{
    char *uid;

    rc_destroy(rec);
    rec = NULL;
    e2e_create(admin, &common_kube_trainingruntimes, ns, runtime("vrt", "volcano", "", "", NULL));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob(name, "vrt", NULL, suspend));
    uid = write_old_jobset(name, "vrt");
    start_reconciler();
    return uid;
}

START_TEST(suspended_jobset_written_before_the_volcano_keys_is_replaced_and_resumes)
{
    struct want_event ev = {"old", "Normal", "JobSetReplaced", NULL};
    struct js_new jw = {"old", NULL, 0};
    json_t *js, *p, *tj;
    char *old_uid;

    old_uid = upgraded("old", 1);
    jw.old_uid = old_uid;
    /* the user resumes the TrainJob */
    tj_suspend("old", 0);
    js = wait_for(120, jobset_replaced, &jw,
                  "a new running JobSet whose pod templates name schedulerName volcano");
    json_decref(js);
    p = wait_for(60, has_event, &ev, "the JobSetReplaced Event");
    ck_assert_msg(strstr(str(p, "message"), "immutable") != NULL, "%s", str(p, "message"));
    json_decref(p);
    /* the pods the JobSet and Job controllers made carry the keys Volcano's scheduler reads */
    json_decref(pods_with_volcano_keys("old", 2));
    /* and the TrainJob reports no failure to create its objects */
    tj = wait_for(60, no_created_cond, "old", "no ResourcesCreated condition on the TrainJob");
    json_decref(tj);
    free(old_uid);
}
END_TEST

START_TEST(running_jobset_written_before_the_volcano_keys_is_suspended_then_replaced)
{
    struct e2e_obj_ref pgref = {admin, ns, &volcano_pgs, "old"};
    struct want_event ev = {"old", "Normal", "JobSetReplaced", NULL};
    struct js_new jw = {"old", NULL, 1};
    json_t *js;
    char *old_uid;

    old_uid = upgraded("old", 0);
    jw.old_uid = old_uid;
    /* running, both: the JobSet is left as it is (only the PodGroup is written) */
    json_decref(wait_for(60, e2e_exists, &pgref, "the PodGroup"));
    js = get(&common_kube_jobsets, "old");
    ck_assert_str_eq(str(js, "metadata.uid"), old_uid);
    ck_assert_ptr_null(at(js, "spec.replicatedJobs.0.template.spec.template.spec.schedulerName"));
    json_decref(js);
    /* suspended (as Kueue does on preemption): the JobSet's update is refused, so it is
     * suspended alone, then replaced */
    tj_suspend("old", 1);
    js = wait_for(120, jobset_replaced, &jw,
                  "a new suspended JobSet whose pod templates name schedulerName volcano");
    json_decref(js);
    json_decref(wait_for(60, has_event, &ev, "the JobSetReplaced Event"));
    free(old_uid);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
    e2e_add_test(s, name, t, setup, teardown, 400);
}

int main(void)
{
    Suite *s = suite_create("volcano");
    int failed;

    add(s, "podgroup_and_pods_carry_queue_priority_tasks_and_topology",
        podgroup_and_pods_carry_queue_priority_tasks_and_topology);
    add(s, "mpi_gang_is_valid_for_volcano_with_the_pods_made_before_it_runs",
        mpi_gang_is_valid_for_volcano_with_the_pods_made_before_it_runs);
    add(s, "missing_queue_is_a_condition_and_an_event_until_the_queue_exists",
        missing_queue_is_a_condition_and_an_event_until_the_queue_exists);
    add(s, "missing_priority_class_is_a_condition_and_nothing_is_written",
        missing_priority_class_is_a_condition_and_nothing_is_written);
    add(s, "resize_while_suspended_updates_the_volcano_podgroup",
        resize_while_suspended_updates_the_volcano_podgroup);
    add(s, "resize_while_suspended_updates_the_coscheduling_podgroup",
        resize_while_suspended_updates_the_coscheduling_podgroup);
    add(s, "suspended_jobset_written_before_the_volcano_keys_is_replaced_and_resumes",
        suspended_jobset_written_before_the_volcano_keys_is_replaced_and_resumes);
    add(s, "running_jobset_written_before_the_volcano_keys_is_suspended_then_replaced",
        running_jobset_written_before_the_volcano_keys_is_suspended_then_replaced);
    failed = e2e_run_suite(s);
    return failed ? 1 : 0;
}
