/*
 * tests/e2e/test_kai.c - the kai backend (integrations/kai.c) against the real test bed: the
 * reconciler runs in this process as trainsched's ServiceAccount (the shipped RBAC), one fresh
 * namespace per test, every child written with fieldValidation=Strict, so the API server checks
 * each KAI PodGroup against the real KAI CRDs (NVIDIA/KAI-scheduler v0.12.0
 * deployments/kai-scheduler/crds, installed by up.sh).
 *
 * What runs here is checked against the CRDs only, on the main bed (no KAI scheduler there;
 * tests/e2e/test_kai_sched.c runs TrainJobs under KAI's real scheduler and binder on a bed of
 * its own). Covered: the PodGroup's fields and the pod template keys; the pods the JobSet
 * controller creates carry them; a top-level queue (no spec.parentQueue) gets a Warning Event
 * naming it, a leaf queue none; resize while suspended updates the PodGroup; a queue or a
 * priority class that does not exist gives a condition and an Event naming the field, and
 * nothing is written.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kube.h"
#include "e2eutil.h"
#include "integrations/kai.h"
#include "reconciler/core.h"
#include "reconciler/reconciler.h"
#include "trainjob/status.h"

static struct common_kube *admin, *tsk;
static struct rc_reconciler *rec;
static struct common_events *events;
static char ns[128], queue[200], parent[200];
static const struct common_kube_resource priorityclasses = {"scheduling.k8s.io", "v1",
                                                            "priorityclasses", 0};

static json_t *get(const struct common_kube_resource *r, const char *name)
{
    return e2e_get(admin, r, ns, name);
}

static const json_t *at(const json_t *o, const char *path)
{
    return e2e_at(o, path);
}

/* poll fn(arg) every 200 ms until it returns non-NULL (a new reference) or secs pass */
static json_t *wait_for(double secs, e2e_poll_fn fn, const void *arg, const char *what)
{
    return e2e_wait_for(secs, fn, arg, what, ns);
}

static json_t *kai_pg(const void *arg)
{
    return get(&backend_kai_podgroups, arg);
}

struct want_cond {
    const char *tj, *reason;
};

static json_t *has_cond(const void *arg)
{
    const struct want_cond *w = arg;
    return e2e_tj_cond(admin, ns, w->tj, RC_COND_CREATED, "False", w->reason);
}

struct want_event {
    const char *reason, *text;
};

/* an Event of ours in ns with the reason whose text has want->text */
static json_t *has_event_of(const void *arg)
{
    const struct want_event *want = arg;
    struct common_error err;
    json_t *items = NULL, *it, *found = NULL;
    size_t i;

    ck_assert_int_eq(common_events_flush(events, 20000), COMMON_OK);
    ck_assert_msg(common_kube_list(admin, &common_kube_events, ns, NULL, &items, NULL, &err) ==
                      COMMON_OK,
                  "%s", err.msg);
    json_array_foreach(items, i, it)
    {
        char *text = json_dumps(it, JSON_COMPACT);
        if (text && strstr(text, want->reason) && strstr(text, want->text))
            found = json_incref(it);
        free(text);
        if (found)
            break;
    }
    json_decref(items);
    return found;
}

/* an Event of ours in ns with reason InvalidTrainJob whose text has want */
static json_t *has_event(const void *want)
{
    struct want_event w = {RC_REASON_INVALID_TRAINJOB, want};
    return has_event_of(&w);
}

struct pods_want {
    const char *jobset;
    size_t count;
};

static json_t *pods_are(const void *arg)
{
    const struct pods_want *w = arg;
    json_t *items = e2e_jobset_pods(admin, ns, w->jobset);
    if (json_array_size(items) == w->count)
        return items;
    json_decref(items);
    return NULL;
}

static void start_reconciler(void)
{
    struct rc_opts o;
    struct common_error err;

    e2e_rc_opts(&o, tsk, ns);
    events = common_events_create(tsk, "e2e-kai", NULL, &err);
    ck_assert_msg(events != NULL, "%s", err.msg);
    o.events = events;
    rec = e2e_rc_start(&o);
}

/* the cluster-scoped KAI Queue name under parent_name (NULL: a top-level queue) */
static void make_queue_under(const char *name, const char *parent_name)
{
    char par[260] = "";
    if (parent_name)
        snprintf(par, sizeof(par), "  parentQueue: %s\n", parent_name);
    e2e_create(admin, &backend_kai_queues, NULL,
               e2e_yamlf("apiVersion: scheduling.run.ai/v2\n"
                         "kind: Queue\n"
                         "metadata: {name: %s}\n"
                         "spec:\n"
                         "%s"
                         "  resources:\n"
                         "    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n"
                         "    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n"
                         "    memory: {quota: -1, limit: -1, overQuotaWeight: 1}\n",
                         name, par));
}

/* the KAI Queue of this test (named after its namespace): a top-level queue, which KAI v0.12
 * accepts but does not schedule from (the reconciler warns) */
static void make_queue(void)
{
    make_queue_under(queue, NULL);
}

/* the queue of this test as a leaf under a parent queue of its own, as KAI schedules */
static void make_leaf_queue(void)
{
    make_queue_under(parent, NULL);
    make_queue_under(queue, parent);
}

static void setup(void)
{
    e2e_log_level_from_env();
    admin = e2e_client(20000, 0);
    tsk = e2e_client(20000, 1);
    e2e_make_ns(admin, "kai", ns, sizeof(ns));
    snprintf(queue, sizeof(queue), "q-%s", ns);
    snprintf(parent, sizeof(parent), "p-%s", ns);
    start_reconciler();
}

static void teardown(void)
{
    struct common_error err;
    rc_destroy(rec);
    rec = NULL;
    char pc[200];
    common_kube_delete(admin, &backend_kai_queues, NULL, queue, NULL, NULL, NULL, &err);
    common_kube_delete(admin, &backend_kai_queues, NULL, parent, NULL, NULL, NULL, &err);
    snprintf(pc, sizeof(pc), "pc-%s", ns);
    common_kube_delete(admin, &priorityclasses, NULL, pc, NULL, NULL, NULL, &err);
    e2e_drop_ns(admin, ns);
    common_kube_client_destroy(tsk);
    common_kube_client_destroy(admin);
}

/* A kai runtime of nodes pods, each with priorityClassName pc when not NULL; the pods tolerate
 * kwok nodes and select none (they need not run: KAI is not there to bind them). */
static json_t *runtime(const char *name, int nodes, const char *pc)
{
    char pcl[200] = "";
    if (pc)
        snprintf(pcl, sizeof(pcl), "                priorityClassName: %s\n", pc);
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainingRuntime\n"
                     "metadata: {name: %s, namespace: %s, annotations: {trainsched.io/backend: "
                     "kai}}\n"
                     "spec:\n"
                     "  mlPolicy: {numNodes: %d}\n" E2E_RT_NODE_JOB
                     "              metadata: {annotations: {kai.scheduler/topology: fabric, "
                     "kai.scheduler/topology-required-placement: example.com/rack}}\n"
                     "              spec:\n"
                     "%s"
                     "                tolerations: [{key: kwok.x-k8s.io/node, operator: Exists}]\n"
                     "                containers:\n"
                     "                - name: node\n"
                     "                  image: busybox:1.36\n"
                     "                  command: [sh, -c, 'sleep 3600']\n"
                     "                  resources: {requests: {cpu: '1'}}\n",
                     name, ns, nodes, pcl);
}

/* a TrainJob of runtime rt labelled kai.scheduler/queue: q (NULL: no label) */
static json_t *trainjob(const char *name, const char *rt, const char *q, int suspend)
{
    char labels[300] = "";
    if (q)
        snprintf(labels, sizeof(labels), ", labels: {kai.scheduler/queue: %s}", q);
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainJob\n"
                     "metadata: {name: %s, namespace: %s%s}\n"
                     "spec:\n"
                     "  runtimeRef: {name: %s, kind: TrainingRuntime}\n"
                     "  suspend: %s\n",
                     name, ns, labels, rt, suspend ? "true" : "false");
}

/* The PodGroup the reconciler writes (strictly) is accepted by KAI's CRD with every field as
 * rendered; the JobSet's pod template and the pods the JobSet controller creates carry the keys
 * KAI reads. */
START_TEST(podgroup_accepted_strictly_and_pods_carry_the_keys)
{
    struct pods_want want = {"llm", 3};
    char pc[200];
    json_t *pg, *js, *pods;
    const json_t *spec, *tmpl, *p;
    size_t i;

    make_queue();
    snprintf(pc, sizeof(pc), "pc-%s", ns);
    e2e_create(admin, &priorityclasses, NULL,
               e2e_yamlf("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                         "metadata: {name: %s}\nvalue: 50\n",
                         pc));
    e2e_create(admin, &common_kube_trainingruntimes, ns, runtime("kai-rt", 3, pc));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("llm", "kai-rt", queue, 0));
    pg = wait_for(60, kai_pg, "llm", "the KAI PodGroup");
    spec = json_object_get(pg, "spec");
    ck_assert_int_eq(json_integer_value(json_object_get(spec, "minMember")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(spec, "queue")), queue);
    ck_assert_str_eq(json_string_value(json_object_get(spec, "priorityClassName")), pc);
    ck_assert_str_eq(json_string_value(at(spec, "topologyConstraint.topology")), "fabric");
    ck_assert_str_eq(json_string_value(at(spec, "topologyConstraint.requiredTopologyLevel")),
                     "example.com/rack");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(at(pg, "metadata.ownerReferences"), 0), "kind")),
                     "TrainJob");
    json_decref(pg);
    {
        /* the queue has no parent: written, with a Warning naming it (KAI v0.12 would leave
         * the gang unscheduled) */
        struct want_event w = {KAI_REASON_QUEUE_WITHOUT_PARENT, queue};
        json_t *ev = wait_for(30, has_event_of, &w, "a Warning Event naming the top-level queue");
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(ev, "note")),
                                     "is a top-level KAI Queue (no spec.parentQueue)"));
        ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "Warning");
        json_decref(ev);
    }
    js = get(&common_kube_jobsets, "llm");
    ck_assert_ptr_nonnull(js);
    tmpl = json_object_get(at(json_array_get(at(js, "spec.replicatedJobs"), 0), "template.spec"),
                           "template");
    ck_assert_str_eq(json_string_value(at(tmpl, "spec.schedulerName")), KAI_SCHEDULER_NAME);
    json_decref(js);
    if (!getenv("TESTBED_JOBSET_RUNNING") || strcmp(getenv("TESTBED_JOBSET_RUNNING"), "1") != 0) {
        fprintf(stderr, "podgroup_accepted_strictly_and_pods_carry_the_keys: no JobSet "
                        "controller on this bed; the pods are not checked\n");
        return;
    }
    pods = wait_for(90, pods_are, &want, "the 3 pods of the JobSet");
    json_array_foreach(pods, i, p)
    {
        const json_t *ann = at(p, "metadata.annotations");
        ck_assert_str_eq(json_string_value(at(p, "spec.schedulerName")), KAI_SCHEDULER_NAME);
        ck_assert_str_eq(json_string_value(json_object_get(ann, KAI_PODGROUP_ANNOTATION)), "llm");
        ck_assert_str_eq(json_string_value(json_object_get(ann, KAI_SKIP_PODGROUPER_ANNOTATION)),
                         "true");
        ck_assert_str_eq(
            json_string_value(json_object_get(at(p, "metadata.labels"), KAI_QUEUE_LABEL)), queue);
        /* no kai-scheduler on this bed (and KAI v0.12 would not schedule from this top-level
         * queue either): the pods stay unbound */
        ck_assert_ptr_null(json_string_value(at(p, "spec.nodeName")));
    }
    json_decref(pods);
}
END_TEST

/* numNodes 2 -> 4 while suspended: the KAI PodGroup (same object, its fields are mutable) is
 * updated to minMember 4. JobSet keeps a JobSet's parallelism immutable, so the reconciler
 * deletes the suspended JobSet and writes it again, as for every backend. */
START_TEST(resize_while_suspended_updates_the_podgroup)
{
    struct want_event w = {KAI_REASON_QUEUE_WITHOUT_PARENT, queue};
    json_t *pg;
    char *uid;
    double end;

    make_leaf_queue();
    e2e_create(admin, &common_kube_trainingruntimes, ns, runtime("kai-rt", 2, NULL));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("resize", "kai-rt", queue, 1));
    pg = wait_for(60, kai_pg, "resize", "the KAI PodGroup");
    ck_assert_int_eq(json_integer_value(at(pg, "spec.minMember")), 2);
    uid = strdup(json_string_value(at(pg, "metadata.uid")));
    json_decref(pg);
    e2e_tj_set_nodes(admin, ns, "resize", 4);
    end = e2e_now_s() + 90;
    for (;;) {
        pg = get(&backend_kai_podgroups, "resize");
        if (pg && json_integer_value(at(pg, "spec.minMember")) == 4)
            break;
        json_decref(pg);
        ck_assert_msg(e2e_now_s() < end, "the PodGroup's minMember did not become 4 in 90 s");
        e2e_nap(200);
    }
    ck_assert_str_eq(json_string_value(at(pg, "metadata.uid")), uid);
    json_decref(pg);
    free(uid);
    /* a leaf queue: no warning about it (has_event_of flushes the recorder first) */
    ck_assert_ptr_null(has_event_of(&w));
}
END_TEST

/* A queue that does not exist: ResourcesCreated=False InvalidTrainJob, an Event, both naming
 * the label; no JobSet, no PodGroup. Once the queue exists the TrainJob is built. */
START_TEST(missing_queue_is_refused_naming_the_label_and_nothing_is_written)
{
    struct want_cond bad = {"noq", RC_REASON_INVALID_TRAINJOB};
    json_t *tj, *ev;
    const json_t *c;

    e2e_create(admin, &common_kube_trainingruntimes, ns, runtime("kai-rt", 2, NULL));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("noq", "kai-rt", queue, 0));
    tj = wait_for(60, has_cond, &bad, "ResourcesCreated=False InvalidTrainJob");
    c = trainjob_status_condition(json_object_get(tj, "status"), RC_COND_CREATED);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(c, "message")),
                                 "metadata.labels[\"kai.scheduler/queue\"]: Not found"));
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(c, "message")), queue));
    json_decref(tj);
    ev = wait_for(30, has_event, "kai.scheduler/queue", "an Event naming the queue label");
    json_decref(ev);
    ck_assert_ptr_null(get(&common_kube_jobsets, "noq"));
    ck_assert_ptr_null(get(&backend_kai_podgroups, "noq"));
    /* the queue appears: looked at again (within the 30 s recheck) and built */
    make_queue();
    ev = wait_for(90, kai_pg, "noq", "the KAI PodGroup once the queue exists");
    json_decref(ev);
}
END_TEST

/* A priority class that does not exist (the pod templates' spec.priorityClassName): refused
 * naming the field, nothing written. */
START_TEST(missing_priority_class_is_refused_naming_the_field)
{
    struct want_cond bad = {"nopc", RC_REASON_INVALID_TRAINJOB};
    char pc[200];
    json_t *tj, *ev;
    const json_t *c;

    make_queue();
    snprintf(pc, sizeof(pc), "pc-%s", ns);
    ck_assert_ptr_null(e2e_get(admin, &priorityclasses, NULL, pc));
    e2e_create(admin, &common_kube_trainingruntimes, ns, runtime("kai-rt", 2, pc));
    e2e_create(admin, &common_kube_trainjobs, ns, trainjob("nopc", "kai-rt", queue, 0));
    tj = wait_for(60, has_cond, &bad, "ResourcesCreated=False InvalidTrainJob");
    c = trainjob_status_condition(json_object_get(tj, "status"), RC_COND_CREATED);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(c, "message")),
                                 "spec.priorityClassName of the gang's pod templates: Not found"));
    json_decref(tj);
    ev = wait_for(30, has_event, "no PriorityClass", "an Event naming the priority class");
    json_decref(ev);
    ck_assert_ptr_null(get(&common_kube_jobsets, "nopc"));
    ck_assert_ptr_null(get(&backend_kai_podgroups, "nopc"));
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
    e2e_add_test(s, name, t, setup, teardown, 300);
}

int main(void)
{
    Suite *s = suite_create("kai");
    int failed;

    add(s, "podgroup_accepted_strictly_and_pods_carry_the_keys",
        podgroup_accepted_strictly_and_pods_carry_the_keys);
    add(s, "resize_while_suspended_updates_the_podgroup",
        resize_while_suspended_updates_the_podgroup);
    add(s, "missing_queue_is_refused_naming_the_label_and_nothing_is_written",
        missing_queue_is_refused_naming_the_label_and_nothing_is_written);
    add(s, "missing_priority_class_is_refused_naming_the_field",
        missing_priority_class_is_refused_naming_the_field);
    failed = e2e_run_suite(s);
    return failed ? 1 : 0;
}
