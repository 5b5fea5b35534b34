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
 *   missing_queue_is_a_condition_and_an_event_until_the_queue_exists
 *                        a Queue that does not exist: ResourcesCreated=False naming spec.queue
 *                        and where the name came from, a Warning Event, no JobSet, no PodGroup,
 *                        no snapshot; once the Queue is created the TrainJob is built
 *   missing_priority_class_is_a_condition_and_nothing_is_written
 *   resize_while_suspended_updates_the_volcano_podgroup
 *   resize_while_suspended_updates_the_coscheduling_podgroup
 *                        numNodes 2 -> 4 on a suspended TrainJob: the gang object follows
 *                        (minMember, minTaskMember, minResources), it is not "created once,
 *                        never updated"
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/events.h"
#include "common/kube.h"
#include "common/log.h"
#include "e2eutil.h"
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

/* a Warning Event on TrainJob name whose message holds want; a new reference or NULL */
struct want_event {
    const char *tj, *want;
};

static json_t *has_event(const void *arg)
{
    const struct want_event *w = arg;
    struct common_error err;
    struct common_kube_list_opts lo = {0};
    json_t *items = NULL, *it;
    char sel[300];
    size_t i;

    snprintf(sel, sizeof(sel), "involvedObject.name=%s,involvedObject.kind=TrainJob", w->tj);
    lo.field_selector = sel;
    ck_assert_msg(common_kube_list(admin, &core_events, ns, &lo, &items, NULL, &err) == COMMON_OK,
                  "%s", err.msg);
    json_array_foreach(items, i, it)
    {
        const char *m = str(it, "message"), *t = str(it, "type");
        if (m && t && strcmp(t, "Warning") == 0 && strstr(m, w->want)) {
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

START_TEST(podgroup_and_pods_carry_queue_priority_tasks_and_topology)
{
    struct e2e_obj_ref pgref = {admin, ns, &volcano_pgs, "full"};
    struct pods_want pw = {"full", 2};
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
    pods = wait_for(120, pods_are, &pw, "2 pods");
    json_array_foreach(pods, i, p)
    {
        ck_assert_str_eq(str(p, "spec.schedulerName"), VOLCANO_SCHEDULER);
        ck_assert_str_eq(json_string_value(json_object_get(at(p, "metadata.annotations"),
                                                           VOLCANO_GROUP_ANNOTATION)),
                         "full");
        ck_assert_str_eq(json_string_value(json_object_get(at(p, "metadata.annotations"),
                                                           VOLCANO_TASK_ANNOTATION)),
                         "node");
        ck_assert_str_eq(str(p, "spec.priorityClassName"), pc_name);
    }
    json_decref(pods);
}
END_TEST

START_TEST(missing_queue_is_a_condition_and_an_event_until_the_queue_exists)
{
    struct want_cond bad = {"noq", "False", RC_REASON_INVALID_TRAINJOB};
    struct want_event ev = {"noq", "Volcano Queue"};
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
    struct want_event ev = {"nopc", "doesn't exist"};
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

static void resize(const char *backend, const struct common_kube_resource *r, int volcano)
{
    struct pg_size two = {r, "resize", 2}, four = {r, "resize", 4};
    struct want_cond refused = {"resize", "False", RC_REASON_CREATION_FAILED};
    json_t *pg;

    e2e_create(admin, &common_kube_trainingruntimes, ns, runtime("rrt", backend, "", "", NULL));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("resize", "rrt", NULL, 1));
    pg = wait_for(60, pg_sized, &two, "the PodGroup of 2");
    ck_assert_str_eq(str(pg, "spec.minResources.cpu"), "2");
    if (volcano)
        ck_assert_int_eq(json_integer_value(at(pg, "spec.minTaskMember.node")), 2);
    json_decref(pg);
    /* JobSet's webhook keeps a JobSet's replicated jobs immutable, so the JobSet must go for
     * the new size to be written (the reconciler writes it again, then the gang object). The
     * JobSet is deleted only once the reconciler has seen numNodes 4 (its JobSet write was
     * refused): deleted before, a reconcile of the cached numNodes 2 could write it back with
     * the old size, which is then immutable in its turn. */
    e2e_tj_set_nodes(admin, ns, "resize", 4);
    json_decref(wait_for(60, has_cond, &refused, "the JobSet write of 4 pods refused"));
    e2e_drop_jobset(admin, ns, "resize");
    pg = wait_for(90, pg_sized, &four, "the PodGroup resized to 4");
    ck_assert_str_eq(str(pg, "spec.minResources.cpu"), "4");
    ck_assert_str_eq(str(pg, "spec.minResources.memory"), "4Gi");
    if (volcano)
        ck_assert_int_eq(json_integer_value(at(pg, "spec.minTaskMember.node")), 4);
    json_decref(pg);
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
    add(s, "missing_queue_is_a_condition_and_an_event_until_the_queue_exists",
        missing_queue_is_a_condition_and_an_event_until_the_queue_exists);
    add(s, "missing_priority_class_is_a_condition_and_nothing_is_written",
        missing_priority_class_is_a_condition_and_nothing_is_written);
    add(s, "resize_while_suspended_updates_the_volcano_podgroup",
        resize_while_suspended_updates_the_volcano_podgroup);
    add(s, "resize_while_suspended_updates_the_coscheduling_podgroup",
        resize_while_suspended_updates_the_coscheduling_podgroup);
    failed = e2e_run_suite(s);
    return failed ? 1 : 0;
}
