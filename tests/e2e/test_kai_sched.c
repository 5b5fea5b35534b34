/*
 * tests/e2e/test_kai_sched.c - TrainJobs on the kai backend scheduled by KAI Scheduler's real
 * scheduler and binder (github.com/NVIDIA/KAI-scheduler v0.12.0, built from its Go module and
 * started by tests/e2e/testbed/up.sh with TESTBED_KAI=1), with trainsched's reconciler in this
 * process writing the JobSet and the KAI PodGroup, the real JobSet controller making the pods,
 * and nodes made by the test. Nothing here binds a pod but KAI.
 *
 * Each test has its own namespace, a top-level KAI Queue named after it and leaf queues under
 * it (KAI v0.12 only schedules queues that have a parent: docs/backends.md), and its own nodes
 * labelled trainsched.io/kai-pool=<ns> with one CPU each; the pods ask for one CPU and select
 * that label, so a gang of 4 needs 4 nodes, one pod on each.
 *
 * Nodes: the gang of the first test runs on kwok nodes (its pods run and succeed, and the
 * TrainJob completes). A gang that must keep its capacity or quota while another waits cannot:
 * kwok's pod stage completes Job pods as soon as they run, which hands the resources back. Those
 * tests use nodes that no kubelet and no kwok manage (Ready written at creation): KAI binds the
 * pods there and they stay bound, holding what they asked for until the test deletes them.
 *
 * Scenarios: gang_of_4_is_bound_whole_one_pod_per_node (with 3 nodes KAI binds none, with the
 * 4th all four); gang_over_its_queue_limit_waits_whole_until_the_holder_is_deleted (Queue
 * spec.resources.cpu.limit); higher_priority_queue_is_bound_first_and_the_other_waits_whole
 * (Queue spec.priority: the low-priority gang is submitted first; with equal priorities KAI
 * would take it first).
 *
 * The suite is labelled "kai" and runs on a bed started with TESTBED_KAI=1 TESTBED_JOBSET=1
 * TESTBED_KWOK=1 (scripts/test.sh starts one after the Kueue bed). On a bed without them it
 * prints SKIP and passes, unless TS_REQUIRE_KAI=1, then it fails.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kube.h"
#include "e2eutil.h"
#include "integrations/kai.h"
#include "reconciler/reconciler.h"
#include "trainjob/status.h"

#define POOL_LABEL "trainsched.io/kai-pool"
#define MAX_NODES 8
#define WAIT_S 180

static const struct common_kube_resource jobs = {"batch", "v1", "jobs", 1};

static struct common_kube *admin, *tsk;
static struct rc_reconciler *rec;
static char ns[128];
static char nodes[MAX_NODES][200];
static int nnodes;
static char queues[4][200]; /* leaves first, the parent last (deleted in that order) */
static int nqueues;

static const json_t *at(const json_t *o, const char *path)
{
    return e2e_at(o, path);
}

static json_t *wait_for(double secs, e2e_poll_fn fn, const void *arg, const char *what)
{
    return e2e_wait_for(secs, fn, arg, what, ns);
}

/* ---- queues, nodes, runtime, TrainJobs ---- */

/* KAI Queue name (cluster-scoped) under parent (NULL: top level), with priority (0: unset) and
 * the YAML of its spec.resources.cpu; remembered for teardown */
static void make_queue(const char *name, const char *parent, int priority, const char *cpu)
{
    char par[260] = "", prio[64] = "";

    if (parent)
        snprintf(par, sizeof(par), "  parentQueue: %s\n", parent);
    if (priority)
        snprintf(prio, sizeof(prio), "  priority: %d\n", priority);
    e2e_create(admin, &backend_kai_queues, NULL,
               e2e_yamlf("apiVersion: scheduling.run.ai/v2\n"
                         "kind: Queue\n"
                         "metadata: {name: %s}\n"
                         "spec:\n"
                         "%s%s"
                         "  resources:\n"
                         "    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n"
                         "    cpu: %s\n"
                         "    memory: {quota: -1, limit: -1, overQuotaWeight: 1}\n",
                         name, par, prio, cpu));
    ck_assert_int_lt(nqueues, 4);
    snprintf(queues[nqueues++], sizeof(queues[0]), "%s", name);
}

/* the leaf queue <ns>-<suffix> under the test's top-level queue <ns> */
static const char *leaf(const char *suffix, int priority, const char *cpu)
{
    static char name[4][200];
    static int n;
    char *q = name[n++ % 4];

    snprintf(q, sizeof(name[0]), "%s-%s", ns, suffix);
    make_queue(q, ns, priority, cpu);
    return q;
}

/* one more 1-CPU node of the pool: run by kwok (kwok 1) or by nobody (kwok 0: Ready written at
 * creation, pods bound there stay bound) */
static void make_node(int kwok)
{
    char label[260];
    char *name;

    ck_assert_int_lt(nnodes, MAX_NODES);
    name = nodes[nnodes];
    snprintf(name, sizeof(nodes[0]), "%s-n%d", ns, nnodes);
    nnodes++;
    snprintf(label, sizeof(label), "%s: %s", POOL_LABEL, ns);
    if (kwok) {
        e2e_kwok_node(admin, name, label, "1");
        return;
    }
    e2e_create(admin, &common_kube_nodes, NULL,
               e2e_yamlf("apiVersion: v1\nkind: Node\n"
                         "metadata:\n  name: %s\n  labels: {%s}\n"
                         "status:\n"
                         "  allocatable: {cpu: '1', memory: 64Gi, pods: '110'}\n"
                         "  capacity: {cpu: '1', memory: 64Gi, pods: '110'}\n"
                         "  conditions: [{type: Ready, status: 'True', reason: KubeletReady, "
                         "message: held by the test}]\n",
                         name, label));
}

static int is_pool_node(const char *name)
{
    for (int i = 0; i < nnodes; i++)
        if (strcmp(nodes[i], name) == 0)
            return 1;
    return 0;
}

/* a kai TrainingRuntime "rt" of 4 nodes; each pod asks for one CPU of this test's pool */
static void make_runtime(void)
{
    e2e_create(admin, &common_kube_trainingruntimes, ns,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                         "kind: TrainingRuntime\n"
                         "metadata: {name: rt, namespace: %s, annotations: {trainsched.io/backend: "
                         "kai}}\n"
                         "spec:\n"
                         "  mlPolicy: {numNodes: 4}\n" E2E_RT_NODE_JOB "              spec:\n"
                         "                nodeSelector: {%s: %s}\n"
                         "                tolerations: [{key: kwok.x-k8s.io/node, operator: "
                         "Exists}]\n"
                         "                containers:\n"
                         "                - name: node\n"
                         "                  image: busybox:1.36\n"
                         "                  command: [sh, -c, 'sleep 1']\n"
                         "                  resources: {requests: {cpu: '1'}}\n",
                         ns, POOL_LABEL, ns));
}

static void make_trainjob(const char *name, const char *queue)
{
    e2e_create(admin, &common_kube_trainjobs, ns,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                         "kind: TrainJob\n"
                         "metadata: {name: %s, namespace: %s, labels: {%s: %s}}\n"
                         "spec:\n"
                         "  runtimeRef: {name: rt, kind: TrainingRuntime}\n",
                         name, ns, KAI_QUEUE_LABEL, queue));
}

/* ---- what KAI did ---- */

/* the number of pods of gang `name` with spec.nodeName; *total := how many pods it has */
static size_t bound_pods(const char *name, size_t *total)
{
    json_t *pods = e2e_jobset_pods(admin, ns, name), *p;
    size_t i, n = 0;

    json_array_foreach(pods, i, p)
    {
        if (json_string_value(at(p, "spec.nodeName")))
            n++;
    }
    *total = json_array_size(pods);
    json_decref(pods);
    return n;
}

/* fail the test when any pod of gang `name` is bound: it must wait whole */
static void assert_none_bound(const char *name)
{
    size_t total, n = bound_pods(name, &total);
    ck_assert_msg(n == 0, "%zu of the %zu pods of gang %s are bound while it must wait whole", n,
                  total, name);
}

/* status.schedulingConditions of the PodGroup `name` as compact JSON (malloc'd), or NULL when
 * KAI has written none (or there is no PodGroup yet) */
static char *pg_verdict(const char *name)
{
    json_t *pg = e2e_get(admin, &backend_kai_podgroups, ns, name);
    const json_t *c = at(pg, "status.schedulingConditions");
    char *text = json_array_size(c) ? json_dumps(c, JSON_COMPACT) : NULL;

    json_decref(pg);
    return text;
}

struct waiting {
    const char *gang;   /* the gang that must wait whole */
    const char *want;   /* text KAI's verdict must contain ("" for any) */
    const char *before; /* a verdict it must differ from (NULL: any) */
    const char *other;  /* another gang that must stay unbound meanwhile (NULL: none) */
};

/* the gang's 4 pods exist, none bound (checked at every poll, also the other gang's), and KAI
 * has written a verdict on its PodGroup containing want (and other than before): a new string */
static json_t *kai_says_waiting(const void *arg)
{
    const struct waiting *w = arg;
    size_t total;
    char *v;
    json_t *out = NULL;

    assert_none_bound(w->gang);
    if (w->other)
        assert_none_bound(w->other);
    bound_pods(w->gang, &total);
    if (total != 4)
        return NULL;
    v = pg_verdict(w->gang);
    if (v && strstr(v, w->want) && (!w->before || strcmp(v, w->before) != 0))
        out = json_string(v);
    free(v);
    return out;
}

static char *wait_waiting(const char *gang, const char *want, const char *before, const char *other,
                          const char *what)
{
    struct waiting w = {gang, want, before, other};
    json_t *v = wait_for(WAIT_S, kai_says_waiting, &w, what);
    char *text = strdup(json_string_value(v));

    json_decref(v);
    ck_assert_ptr_nonnull(text);
    fprintf(stderr, "kai_sched %s: %s waits, KAI says %s\n", ns, gang, text);
    return text;
}

struct bound {
    const char *gang;  /* the gang to be bound */
    const char *other; /* a gang that must stay unbound meanwhile (NULL: none) */
};

/* every pod of the gang (4) bound, the other gang none: the pods (a new array) */
static json_t *all_bound(const void *arg)
{
    const struct bound *b = arg;
    size_t total;

    if (b->other)
        assert_none_bound(b->other);
    if (bound_pods(b->gang, &total) != 4 || total != 4)
        return NULL;
    return e2e_jobset_pods(admin, ns, b->gang);
}

/* wait until gang is bound whole (other stays unbound meanwhile); then its 4 pods are on 4
 * different nodes of this test's pool */
static void wait_bound_one_per_node(const char *gang, const char *other, const char *what)
{
    struct bound b = {gang, other};
    json_t *pods = wait_for(WAIT_S, all_bound, &b, what), *p;
    const char *seen[4];
    size_t i;

    json_array_foreach(pods, i, p)
    {
        const char *node = json_string_value(at(p, "spec.nodeName"));
        ck_assert_msg(is_pool_node(node), "pod %s is on %s, not a node of this test",
                      json_string_value(at(p, "metadata.name")), node);
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(strcmp(seen[j], node) != 0, "two pods of gang %s on node %s", gang, node);
        ck_assert_str_eq(json_string_value(at(p, "spec.schedulerName")), KAI_SCHEDULER_NAME);
        seen[i] = node;
    }
    json_decref(pods);
}

/* ---- deleting a gang whose pods no kubelet will stop ---- */

static json_t *gone(const void *arg)
{
    const struct e2e_obj_ref *r = arg;
    json_t *o = e2e_get(r->k, r->res, r->ns, r->name);

    if (o) {
        json_decref(o);
        return NULL;
    }
    return json_true();
}

static json_t *no_jobs_of(const void *arg)
{
    struct common_kube_list_opts lo = {0};
    struct common_error err;
    json_t *items = NULL;
    char sel[300];
    size_t n;

    snprintf(sel, sizeof(sel), "jobset.sigs.k8s.io/jobset-name=%s", (const char *)arg);
    lo.label_selector = sel;
    ck_assert_msg(common_kube_list(admin, &jobs, ns, &lo, &items, NULL, &err) == COMMON_OK,
                  "list jobs: %s", err.msg);
    n = json_array_size(items);
    json_decref(items);
    return n ? NULL : json_true();
}

/* the gang's pods, deleted with grace period 0, until none is left */
static json_t *pods_gone(const void *arg)
{
    json_t *pods = e2e_jobset_pods(admin, ns, arg), *p;
    size_t i, n = json_array_size(pods);

    json_array_foreach(pods, i, p)
    {
        e2e_delete_pods_now(admin, ns, json_string_value(at(p, "metadata.name")));
    }
    json_decref(pods);
    return n ? NULL : json_true();
}

/* delete TrainJob `name`; once the garbage collector has removed its JobSet and Jobs (nothing
 * makes pods again), its pods are deleted at once: no kubelet would finish their deletion */
static void delete_gang(const char *name)
{
    struct common_error err;
    struct e2e_obj_ref js = {admin, ns, &common_kube_jobsets, name};

    ck_assert_msg(common_kube_delete(admin, &common_kube_trainjobs, ns, name, NULL, NULL,
                                     "Background", &err) == COMMON_OK,
                  "delete TrainJob %s: %s", name, err.msg);
    json_decref(wait_for(WAIT_S, gone, &js, "the JobSet to be garbage-collected"));
    json_decref(wait_for(WAIT_S, no_jobs_of, name, "the Jobs to be garbage-collected"));
    json_decref(wait_for(WAIT_S, pods_gone, name, "the pods to be deleted"));
}

/* ---- fixture ---- */

static void setup(void)
{
    struct rc_opts o;

    e2e_log_level_from_env();
    admin = e2e_client(20000, 0);
    tsk = e2e_client(20000, 1);
    e2e_make_ns(admin, "kaisched", ns, sizeof(ns));
    nnodes = nqueues = 0;
    e2e_rc_opts(&o, tsk, ns);
    rec = e2e_rc_start(&o);
}

static void teardown(void)
{
    struct common_error err;

    rc_destroy(rec);
    rec = NULL;
    e2e_drop_ns(admin, ns);
    e2e_delete_pods_now(admin, ns, NULL); /* pods on the nodes nobody runs */
    for (int i = 0; i < nnodes; i++)
        common_kube_delete(admin, &common_kube_nodes, NULL, nodes[i], NULL, NULL, NULL, &err);
    for (int i = 0; i < nqueues; i++)
        common_kube_delete(admin, &backend_kai_queues, NULL, queues[i], NULL, NULL, NULL, &err);
    common_kube_client_destroy(tsk);
    common_kube_client_destroy(admin);
}

/* the top-level queue of the test (KAI v0.12 schedules only queues with a parent) */
static void make_parent(void)
{
    make_queue(ns, NULL, 0, "{quota: -1, limit: -1, overQuotaWeight: 1}");
}

/* ---- tests ---- */

static json_t *tj_complete(const void *arg)
{
    return e2e_tj_cond(admin, ns, arg, "Complete", "True", NULL);
}

/* A gang of 4 on 3 nodes: KAI binds none of its pods (and says why on the PodGroup); a 4th node
 * appears: all four are bound, one per node, kwok runs them and the TrainJob completes. */
START_TEST(gang_of_4_is_bound_whole_one_pod_per_node)
{
    const char *q;
    char *verdict;

    make_parent();
    q = leaf("a", 0, "{quota: -1, limit: -1, overQuotaWeight: 1}");
    for (int i = 0; i < 3; i++)
        make_node(1);
    make_runtime();
    make_trainjob("gang", q);
    verdict = wait_waiting("gang", "", NULL, NULL,
                           "KAI's verdict on the gang of 4 with 3 nodes, none of its pods bound");
    free(verdict);
    make_node(1);
    wait_bound_one_per_node("gang", NULL, "the 4 pods bound by KAI once the 4th node is there");
    json_decref(wait_for(WAIT_S, tj_complete, "gang", "the TrainJob Complete"));
}
END_TEST

/* Queue limit 4 CPUs, 8 free nodes: the holder's 4 pods are bound; a second gang of 4 would
 * take the queue to 8 CPUs, so KAI leaves all of its pods unbound (OverLimit on its PodGroup);
 * the holder is deleted and the second gang is bound whole. */
START_TEST(gang_over_its_queue_limit_waits_whole_until_the_holder_is_deleted)
{
    const char *q;
    char *verdict;

    make_parent();
    q = leaf("b", 0, "{quota: 0, limit: 4000, overQuotaWeight: 1}");
    for (int i = 0; i < 8; i++)
        make_node(0);
    make_runtime();
    make_trainjob("holder", q);
    wait_bound_one_per_node("holder", NULL, "the holder's 4 pods bound");
    make_trainjob("waiter", q);
    verdict = wait_waiting("waiter", "OverLimit", NULL, NULL,
                           "KAI's OverLimit verdict on the waiter, none of its pods bound");
    free(verdict);
    assert_none_bound("waiter");
    delete_gang("holder");
    wait_bound_one_per_node("waiter", NULL, "the waiter bound whole once the holder is gone");
}
END_TEST

/* Two leaf queues, priority 10 and 200, and no node yet: the low-priority gang is submitted
 * first, then the high-priority one; both wait whole. Four nodes appear, room for one gang: the
 * high-priority gang is bound whole while the low one stays unbound (also after KAI has looked
 * at it again with the nodes there). The high gang is deleted: the low one is bound whole. */
START_TEST(higher_priority_queue_is_bound_first_and_the_other_waits_whole)
{
    const char *lo, *hi;
    char *before, *after;

    make_parent();
    lo = leaf("low", 10, "{quota: 0, limit: -1, overQuotaWeight: 1}");
    hi = leaf("high", 200, "{quota: 0, limit: -1, overQuotaWeight: 1}");
    make_runtime();
    make_trainjob("low", lo);
    free(wait_waiting("low", "", NULL, NULL, "KAI's verdict on the low gang with no node"));
    make_trainjob("high", hi);
    before = wait_waiting("low", "", NULL, NULL, "KAI's verdict on the low gang again");
    free(wait_waiting("high", "", NULL, "low", "KAI's verdict on the high gang with no node"));
    for (int i = 0; i < 4; i++)
        make_node(0);
    wait_bound_one_per_node("high", "low", "the high-priority gang bound whole");
    after = wait_waiting("low", "4 node(s) didn't have enough resources", before, NULL,
                         "a new verdict on the low gang with the nodes taken, none bound");
    free(before);
    free(after);
    delete_gang("high");
    wait_bound_one_per_node("low", NULL, "the low-priority gang bound once the high one is gone");
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
    e2e_add_test(s, name, t, setup, teardown, 900);
}

static int on(const char *var)
{
    const char *v = getenv(var);
    return v && strcmp(v, "1") == 0;
}

int main(void)
{
    Suite *s;

    if (!on("TESTBED_KAI_RUNNING") || !on("TESTBED_JOBSET_RUNNING") ||
        !on("TESTBED_KWOK_RUNNING")) {
        if (on("TS_REQUIRE_KAI")) {
            fprintf(stderr, "kai_sched: TS_REQUIRE_KAI=1 but the bed does not run KAI, JobSet "
                            "and kwok (TESTBED_KAI_RUNNING, TESTBED_JOBSET_RUNNING, "
                            "TESTBED_KWOK_RUNNING are not all 1)\n");
            return 1;
        }
        printf("SKIP: the test bed runs no KAI scheduler (start it with TESTBED_KAI=1 "
               "TESTBED_JOBSET=1 TESTBED_KWOK=1)\n");
        return 0;
    }
    s = suite_create("kai_sched");
    add(s, "gang_of_4_is_bound_whole_one_pod_per_node", gang_of_4_is_bound_whole_one_pod_per_node);
    add(s, "gang_over_its_queue_limit_waits_whole_until_the_holder_is_deleted",
        gang_over_its_queue_limit_waits_whole_until_the_holder_is_deleted);
    add(s, "higher_priority_queue_is_bound_first_and_the_other_waits_whole",
        higher_priority_queue_is_bound_first_and_the_other_waits_whole);
    return e2e_run_suite(s) ? 1 : 0;
}
