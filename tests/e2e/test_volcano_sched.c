/*
 * tests/e2e/test_volcano_sched.c - TrainJobs on the volcano backend scheduled by Volcano's real
 * scheduler and controller manager (github.com/volcano-sh/volcano at VOLCANO_VERSION of
 * tests/e2e/testbed/versions.env, built from its fetched source and started by
 * tests/e2e/testbed/up.sh with TESTBED_VOLCANO=1: gang, priority, proportion and
 * network-topology-aware plugins), with trainsched's reconciler in this process writing the JobSet
 * and the Volcano PodGroup, the real JobSet controller making the pods, and nodes made by the
 * test. Nothing here binds a pod but Volcano.
 *
 * Each test has its own namespace, its own Volcano Queue named after it (opened by Volcano's
 * queue controller), and its own nodes labelled trainsched.io/vc-pool=<ns> with one CPU each; the
 * pods ask for one CPU and select that label, so a gang of 4 needs 4 nodes, one pod on each.
 *
 * Nodes: kwok runs the pods of nodes made with kwok 1 (they run and succeed). A gang that must
 * keep its capacity or quota while another waits uses nodes no kubelet and no kwok manage (Ready
 * written at creation): Volcano binds the pods there and they stay bound, holding what they
 * asked for until the test deletes them.
 *
 * Scenarios:
 *   gang_of_4_is_bound_whole_one_pod_per_node: with 3 nodes Volcano binds none (and writes its
 *     verdict on the PodGroup), with the 4th all four; the TrainJob completes.
 *   second_gang_over_the_queue_capability_waits_whole: Queue spec.capability cpu 4, 8 nodes: the
 *     holder is bound, the waiter none (Volcano's "queue resource quota insufficient"), until the
 *     holder is deleted.
 *   required_rack_is_honoured_on_hypernodes: trainsched.io/topology-required rack -> the
 *     PodGroup's networkTopology {hard, highestTierAllowed 1}; two tier-1 HyperNodes (racks) of 3
 *     nodes under a tier-2 one: 6 free nodes, no rack with 4, so none is bound; a 4th node in
 *     rack b: all four there.
 *   min_task_member_holds_the_gang_until_each_task_fits: two replicated jobs, ps (1 pod, on a
 *     node labelled role=ps) and worker (3 pods); minTaskMember {ps: 1, worker: 3}: with 4 worker
 *     nodes and no ps node none is bound; a ps node appears: all four, each on its role's node.
 *     Volcano (pkg/scheduler/api/job_info.go of v1.15.1) counts a task's pods by their
 *     volcano.sh/task-spec annotation and, as minMember equals the sum of minTaskMember here,
 *     checks each task's minimum (CheckTaskValid, IsReady): had trainsched's keys and
 *     annotations differed, the gang would never be bound ("Not enough valid pods of each
 *     task"). With minMember equal to the pods of the gang, the waiting half alone would also
 *     hold under minMember; what is checked is that Volcano takes the per-task minimums as
 *     trainsched writes them and places each task's pods.
 *   higher_priority_class_is_bound_first_and_the_other_waits_whole: PodGroup priorityClassName
 *     from the pods' (PriorityClasses 10 and 1000); the low gang submitted first; 4 nodes: the
 *     high gang is bound whole, the low one none, until the high one is deleted.
 *   closed_queue_holds_the_gang_and_trainsched_says_why: the Queue closed by a bus.volcano.sh
 *     Command (as vcctl queue operate --action close does): the PodGroup and pods are written,
 *     none bound, and a Warning Event VolcanoQueueNotOpen names the queue and its state; the
 *     queue is opened: the gang is bound whole.
 *
 * The suite is labelled "volcano" and runs on a bed started with TESTBED_VOLCANO=1
 * TESTBED_JOBSET=1 TESTBED_KWOK=1 (scripts/test.sh starts one after the KAI bed). On a bed
 * without them it prints SKIP and passes, unless TS_REQUIRE_VOLCANO=1, then it fails.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/events.h"
#include "common/kube.h"
#include "e2eutil.h"
#include "integrations/volcano.h"
#include "reconciler/reconciler.h"

#define POOL_LABEL "trainsched.io/vc-pool"
#define RACK_LABEL "cloud.provider.com/topology-rack"
#define MAX_NODES 10
#define WAIT_S 180

static const struct common_kube_resource hypernodes = {"topology.volcano.sh", "v1alpha1",
                                                       "hypernodes", 0};
static const struct common_kube_resource commands = {"bus.volcano.sh", "v1alpha1", "commands", 1};
static const struct common_kube_resource core_events = {"", "v1", "events", 1};
static const struct common_kube_resource priorityclasses = {"scheduling.k8s.io", "v1",
                                                            "priorityclasses", 0};

static struct common_kube *admin, *tsk;
static struct common_events *events;
static struct rc_reconciler *rec;
static char ns[128];
static char nodes[MAX_NODES][200];
static int nnodes;
static char hns[3][200]; /* HyperNodes made, deleted at teardown */
static int nhns;
static char pcs[2][200]; /* PriorityClasses made */
static int npcs;

static const json_t *at(const json_t *o, const char *path)
{
    return e2e_at(o, path);
}

static json_t *wait_for(double secs, e2e_poll_fn fn, const void *arg, const char *what)
{
    return e2e_wait_for(secs, fn, arg, what, ns);
}

/* ---- queue, nodes, runtime, TrainJobs ---- */

/* the test's Queue (named ns), with the YAML of spec.capability ("" for none) */
static void make_queue(const char *capability)
{
    e2e_create(admin, &volcano_queues, NULL,
               e2e_yamlf("apiVersion: scheduling.volcano.sh/v1beta1\n"
                         "kind: Queue\n"
                         "metadata: {name: %s}\n"
                         "spec:\n"
                         "  weight: 1\n"
                         "  reclaimable: false\n"
                         "%s%s\n",
                         ns, *capability ? "  capability: " : "", capability));
}

/* one more 1-CPU node of the pool with the extra labels (YAML map items, "" for none): run by
 * kwok (kwok 1) or by nobody (kwok 0: Ready written at creation, pods bound there stay bound) */
static const char *make_node(int kwok, const char *labels)
{
    char label[600];
    char *name;

    ck_assert_int_lt(nnodes, MAX_NODES);
    name = nodes[nnodes];
    snprintf(name, sizeof(nodes[0]), "%s-n%d", ns, nnodes);
    nnodes++;
    snprintf(label, sizeof(label), "%s: %s%s%s", POOL_LABEL, ns, *labels ? ", " : "", labels);
    if (kwok) {
        e2e_kwok_node(admin, name, label, "1");
        return name;
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
    return name;
}

/* the node's label value (NULL: no such node or label) */
static char *node_label(const char *node, const char *key)
{
    json_t *n = e2e_get(admin, &common_kube_nodes, NULL, node);
    const char *v = json_string_value(json_object_get(at(n, "metadata.labels"), key));
    char *out = v ? strdup(v) : NULL;

    json_decref(n);
    return out;
}

/* a HyperNode of tier whose members are the nodes with label RACK_LABEL=rack (rack non-NULL) or
 * the HyperNodes named in children (NULL-terminated) */
static void make_hypernode(const char *name, int tier, const char *rack,
                           const char *const *children)
{
    char members[800] = "";
    size_t used = 0;

    if (rack)
        snprintf(members, sizeof(members),
                 "  - type: Node\n"
                 "    selector: {labelMatch: {matchLabels: {%s: %s}}}\n",
                 RACK_LABEL, rack);
    for (; children && *children; children++) {
        used = strlen(members);
        snprintf(members + used, sizeof(members) - used,
                 "  - type: HyperNode\n"
                 "    selector: {exactMatch: {name: %s}}\n",
                 *children);
    }
    e2e_create(admin, &hypernodes, NULL,
               e2e_yamlf("apiVersion: topology.volcano.sh/v1alpha1\n"
                         "kind: HyperNode\n"
                         "metadata: {name: %s}\n"
                         "spec:\n"
                         "  tier: %d\n"
                         "  members:\n%s",
                         name, tier, members));
    ck_assert_int_lt(nhns, 3);
    snprintf(hns[nhns++], sizeof(hns[0]), "%s", name);
}

static void make_priority_class(const char *name, int value)
{
    e2e_create(admin, &priorityclasses, NULL,
               e2e_yamlf("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                         "metadata: {name: %s}\nvalue: %d\n",
                         name, value));
    ck_assert_int_lt(npcs, 2);
    snprintf(pcs[npcs++], sizeof(pcs[0]), "%s", name);
}

/* the YAML of one pod template's metadata and spec (indent 14, after "template:") asking for one
 * CPU of this test's pool, with the extra nodeSelector items and the priority class (NULL: none) */
static char *pod_template(const char *select, const char *pc)
{
    char pcl[260] = "";
    size_t n = 1500;
    char *out = malloc(n);

    ck_assert_ptr_nonnull(out);
    if (pc)
        snprintf(pcl, sizeof(pcl), "                priorityClassName: %s\n", pc);
    if (snprintf(out, n,
                 "              spec:\n"
                 "                nodeSelector: {%s: %s%s%s}\n"
                 "%s"
                 "                tolerations: [{key: kwok.x-k8s.io/node, operator: Exists}]\n"
                 "                containers:\n"
                 "                - name: node\n"
                 "                  image: busybox:1.36\n"
                 "                  command: [sh, -c, 'sleep 1']\n"
                 "                  resources: {requests: {cpu: '1'}}\n",
                 POOL_LABEL, ns, *select ? ", " : "", select, pcl) >= (int)n)
        ck_abort_msg("pod template longer than %zu", n);
    return out;
}

/* a volcano TrainingRuntime `name` of 4 nodes (one replicated job "node"), pods with priority
 * class pc (NULL: none) */
static void make_runtime(const char *name, const char *pc)
{
    char *pod = pod_template("", pc);

    e2e_create(admin, &common_kube_trainingruntimes, ns,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                         "kind: TrainingRuntime\n"
                         "metadata: {name: %s, namespace: %s, annotations: {trainsched.io/backend: "
                         "volcano}}\n"
                         "spec:\n"
                         "  mlPolicy: {numNodes: 4}\n" E2E_RT_NODE_JOB "%s",
                         name, ns, pod));
    free(pod);
}

/* TrainJob name on runtime rt in the test's queue, with extra annotations (YAML map items) */
static void make_trainjob(const char *name, const char *rt, const char *extra)
{
    e2e_create(admin, &common_kube_trainjobs, ns,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                         "kind: TrainJob\n"
                         "metadata: {name: %s, namespace: %s, annotations: {%s: %s%s%s}}\n"
                         "spec:\n"
                         "  runtimeRef: {name: %s, kind: TrainingRuntime}\n",
                         name, ns, VOLCANO_QUEUE_ANNOTATION, ns, *extra ? ", " : "", extra, rt));
}

/* ---- what Volcano did ---- */

static int is_pool_node(const char *name)
{
    for (int i = 0; i < nnodes; i++)
        if (name && strcmp(nodes[i], name) == 0)
            return 1;
    return 0;
}

static size_t bound_pods(const char *name, size_t *total)
{
    return e2e_bound_pods(admin, ns, name, total);
}

/* fail the test when any pod of gang `name` is bound: it must wait whole */
static void assert_none_bound(const char *name)
{
    size_t total, n = bound_pods(name, &total);
    ck_assert_msg(n == 0, "%zu of the %zu pods of gang %s are bound while it must wait whole", n,
                  total, name);
}

/* Volcano's verdict on the PodGroup: its status.conditions of type Unschedulable as compact
 * JSON (malloc'd), or NULL when it has written none */
static char *pg_verdict(const char *name)
{
    json_t *pg = e2e_get(admin, &volcano_podgroups, ns, name);
    const json_t *conds = at(pg, "status.conditions"), *c;
    char *text = NULL;
    size_t i;

    json_array_foreach(conds, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && strcmp(type, "Unschedulable") == 0 && !text)
            text = json_dumps(c, JSON_COMPACT);
    }
    json_decref(pg);
    return text;
}

/* the message of a core v1 Event (as Volcano's recorder writes them) of reason `reason` on
 * Volcano PodGroup `name` whose message contains want (a new string), or NULL when none yet */
static char *pg_event(const char *name, const char *reason, const char *want)
{
    struct common_kube_list_opts lo = {0};
    struct common_error err;
    json_t *items = NULL, *it;
    char sel[400], *note = NULL;
    size_t i;

    snprintf(sel, sizeof(sel), "involvedObject.kind=PodGroup,involvedObject.name=%s,reason=%s",
             name, reason);
    lo.field_selector = sel;
    ck_assert_msg(common_kube_list(admin, &core_events, ns, &lo, &items, NULL, &err) == COMMON_OK,
                  "list events: %s", err.msg);
    json_array_foreach(items, i, it)
    {
        const char *m = json_string_value(json_object_get(it, "message"));
        if (!note && m && strstr(m, want))
            note = strdup(m);
    }
    json_decref(items);
    return note;
}

struct waiting {
    const char *gang;  /* the gang that must wait whole */
    const char *want;  /* text Volcano's verdict must contain ("" for any) */
    const char *other; /* another gang that must stay unbound meanwhile (NULL: none) */
};

/* the gang's 4 pods exist, none bound (checked at every poll, also the other gang's), and
 * Volcano has written an Unschedulable condition on its PodGroup containing want */
static json_t *volcano_says_waiting(const void *arg)
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
    if (v && strstr(v, w->want))
        out = json_string(v);
    free(v);
    return out;
}

static void wait_waiting(const char *gang, const char *want, const char *other, const char *what)
{
    struct waiting w = {gang, want, other};
    json_t *v = wait_for(WAIT_S, volcano_says_waiting, &w, what);

    fprintf(stderr, "volcano_sched %s: %s waits, Volcano says %s\n", ns, gang,
            json_string_value(v));
    json_decref(v);
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
 * different nodes of this test's pool, through schedulerName volcano: the pods (a new array) */
static json_t *wait_bound_one_per_node(const char *gang, const char *other, const char *what)
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
        ck_assert_str_eq(json_string_value(at(p, "spec.schedulerName")), VOLCANO_SCHEDULER);
        seen[i] = node;
    }
    return pods;
}

static void bound_whole(const char *gang, const char *other, const char *what)
{
    json_decref(wait_bound_one_per_node(gang, other, what));
}

/* delete the gang; its pods, which no kubelet will stop, are deleted at once */
static void delete_gang(const char *name)
{
    e2e_delete_gang(admin, ns, name, WAIT_S);
}

/* ---- the queue's state ---- */

static json_t *queue_state_is(const void *arg)
{
    json_t *q = e2e_get(admin, &volcano_queues, NULL, ns);
    const char *state = json_string_value(at(q, "status.state"));
    json_t *out = state && strcmp(state, arg) == 0 ? json_true() : NULL;

    json_decref(q);
    return out;
}

/* a bus.volcano.sh Command action (OpenQueue, CloseQueue) on the test's Queue, as vcctl queue
 * operate writes it; Volcano's queue controller carries it out and deletes it. Then wait for
 * status.state to become state. */
static void queue_command(const char *action, const char *state)
{
    static int n;
    json_t *q = e2e_get(admin, &volcano_queues, NULL, ns);
    char what[200];

    ck_assert_ptr_nonnull(q);
    e2e_create(admin, &commands, ns,
               e2e_yamlf("apiVersion: bus.volcano.sh/v1alpha1\n"
                         "kind: Command\n"
                         "metadata: {name: q-%d, namespace: %s}\n"
                         "action: %s\n"
                         "target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, "
                         "name: %s, uid: %s, controller: true}\n",
                         n++, ns, action, ns, json_string_value(at(q, "metadata.uid"))));
    json_decref(q);
    snprintf(what, sizeof(what), "the Queue's status.state %s after the %s Command", state, action);
    json_decref(wait_for(WAIT_S, queue_state_is, state, what));
}

/* ---- fixture ---- */

static void setup(void)
{
    struct rc_opts o;
    struct common_error err;

    e2e_log_level_from_env();
    admin = e2e_client(20000, 0);
    tsk = e2e_client(20000, 1);
    e2e_make_ns(admin, "vcsched", ns, sizeof(ns));
    nnodes = nhns = npcs = 0;
    e2e_rc_opts(&o, tsk, ns);
    events = common_events_create(tsk, "e2e-volcano-sched", NULL, &err);
    ck_assert_msg(events != NULL, "%s", err.msg);
    o.events = events;
    rec = e2e_rc_start(&o);
}

static void teardown(void)
{
    struct common_error err;

    rc_destroy(rec);
    rec = NULL;
    common_events_destroy(events);
    events = NULL;
    e2e_drop_ns(admin, ns);
    e2e_delete_pods_now(admin, ns, NULL); /* pods on the nodes nobody runs */
    for (int i = 0; i < nnodes; i++)
        common_kube_delete(admin, &common_kube_nodes, NULL, nodes[i], NULL, NULL, NULL, &err);
    for (int i = nhns - 1; i >= 0; i--)
        common_kube_delete(admin, &hypernodes, NULL, hns[i], NULL, NULL, NULL, &err);
    for (int i = 0; i < npcs; i++)
        common_kube_delete(admin, &priorityclasses, NULL, pcs[i], NULL, NULL, NULL, &err);
    common_kube_delete(admin, &volcano_queues, NULL, ns, NULL, NULL, NULL, &err);
    common_kube_client_destroy(tsk);
    common_kube_client_destroy(admin);
}

/* ---- tests ---- */

static json_t *tj_complete(const void *arg)
{
    return e2e_tj_cond(admin, ns, arg, "Complete", "True", NULL);
}

/* A gang of 4 on 3 nodes: Volcano binds none of its pods (and says why on the PodGroup); a 4th
 * node appears: all four are bound, one per node, kwok runs them and the TrainJob completes. */
START_TEST(gang_of_4_is_bound_whole_one_pod_per_node)
{
    json_t *pg;

    make_queue("");
    for (int i = 0; i < 3; i++)
        make_node(1, "");
    make_runtime("rt", NULL);
    make_trainjob("gang", "rt", "");
    wait_waiting("gang", "", NULL, "Volcano's verdict on the gang of 4 with 3 nodes, none bound");
    pg = e2e_get(admin, &volcano_podgroups, ns, "gang");
    ck_assert_int_eq(json_integer_value(at(pg, "spec.minMember")), 4);
    ck_assert_str_eq(json_string_value(at(pg, "spec.queue")), ns);
    json_decref(pg);
    make_node(1, "");
    bound_whole("gang", NULL, "the 4 pods bound by Volcano once the 4th node is there");
    json_decref(wait_for(WAIT_S, tj_complete, "gang", "the TrainJob Complete"));
}
END_TEST

/* Queue capability 4 CPUs, 8 free nodes: the holder's 4 pods are bound; a second gang of 4
 * would take the queue to 8 CPUs, so Volcano leaves all of its pods unbound (its proportion
 * plugin keeps the PodGroup out of the queue: "queue resource quota insufficient"); the holder
 * is deleted and the second gang is bound whole. */
START_TEST(second_gang_over_the_queue_capability_waits_whole)
{
    char *note;

    make_queue("{cpu: '4'}");
    for (int i = 0; i < 8; i++)
        make_node(0, "");
    make_runtime("rt", NULL);
    make_trainjob("holder", "rt", "");
    bound_whole("holder", NULL, "the holder's 4 pods bound");
    make_trainjob("waiter", "rt", "");
    /* the waiter's 4 pods exist, none bound, and Volcano says it lacks quota */
    for (double end = e2e_now_s() + WAIT_S;; e2e_nap(500)) {
        size_t total;
        assert_none_bound("waiter");
        bound_pods("waiter", &total);
        note = total == 4 ? pg_event("waiter", "Unschedulable", "queue resource quota") : NULL;
        if (note)
            break;
        ck_assert_msg(e2e_now_s() < end,
                      "no \"queue resource quota\" Event on the waiter's PodGroup in %d s", WAIT_S);
    }
    fprintf(stderr, "volcano_sched %s: waiter: %s\n", ns, note);
    free(note);
    assert_none_bound("waiter");
    delete_gang("holder");
    bound_whole("waiter", NULL, "the waiter bound whole once the holder is gone");
}
END_TEST

/* Racks a and b, tier-1 HyperNodes of 3 nodes each, under a tier-2 block: the gang asks for one
 * rack (trainsched.io/topology-required: the rack label, tier 1 in the built-in mapping). Six
 * nodes are free but no rack holds four: none is bound. A 4th node in rack b: the four pods are
 * bound there, on rack b's nodes alone. */
START_TEST(required_rack_is_honoured_on_hypernodes)
{
    char ra[200], rb[200], blk[200], lab[300];
    const char *kids[3];
    json_t *pg, *pods, *p;
    size_t i;

    make_queue("");
    snprintf(ra, sizeof(ra), "%s-a", ns);
    snprintf(rb, sizeof(rb), "%s-b", ns);
    snprintf(blk, sizeof(blk), "%s-blk", ns);
    make_hypernode(ra, 1, ra, NULL);
    make_hypernode(rb, 1, rb, NULL);
    kids[0] = ra;
    kids[1] = rb;
    kids[2] = NULL;
    make_hypernode(blk, 2, NULL, kids);
    for (int k = 0; k < 6; k++) {
        snprintf(lab, sizeof(lab), "%s: %s", RACK_LABEL, k % 2 ? rb : ra);
        make_node(1, lab);
    }
    make_runtime("rt", NULL);
    make_trainjob("gang", "rt", "trainsched.io/topology-required: " RACK_LABEL);
    wait_waiting("gang", "", NULL, "Volcano's verdict on the gang with no rack of 4, none bound");
    pg = e2e_get(admin, &volcano_podgroups, ns, "gang");
    ck_assert_str_eq(json_string_value(at(pg, "spec.networkTopology.mode")), "hard");
    ck_assert_int_eq(json_integer_value(at(pg, "spec.networkTopology.highestTierAllowed")), 1);
    json_decref(pg);
    snprintf(lab, sizeof(lab), "%s: %s", RACK_LABEL, rb);
    make_node(1, lab);
    pods = wait_bound_one_per_node("gang", NULL, "the 4 pods bound in rack b");
    json_array_foreach(pods, i, p)
    {
        char *rack = node_label(json_string_value(at(p, "spec.nodeName")), RACK_LABEL);
        ck_assert_msg(rack && strcmp(rack, rb) == 0, "pod %s is on %s in rack %s, not in %s",
                      json_string_value(at(p, "metadata.name")),
                      json_string_value(at(p, "spec.nodeName")), rack ? rack : "(none)", rb);
        free(rack);
    }
    json_decref(pods);
}
END_TEST

/* ps (1 pod, nodeSelector role=ps) and worker (3 pods, role=worker): the PodGroup asks
 * minMember 4 and minTaskMember {ps: 1, worker: 3}, the pods carry volcano.sh/task-spec. Four
 * worker nodes and no ps node: 4 nodes would hold 4 pods, but the ps task cannot have its one,
 * so Volcano binds none; a ps node appears: all four, each on a node of its role. */
START_TEST(min_task_member_holds_the_gang_until_each_task_fits)
{
    char *ps = pod_template("role: ps", NULL), *worker = pod_template("role: worker", NULL);
    json_t *pg, *pods, *p;
    size_t i, nps = 0;

    make_queue("");
    e2e_create(
        admin, &common_kube_trainingruntimes, ns,
        e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                  "kind: TrainingRuntime\n"
                  "metadata: {name: rt, namespace: %s, annotations: {trainsched.io/backend: "
                  "volcano}}\n"
                  "spec:\n"
                  "  template:\n"
                  "    spec:\n"
                  "      replicatedJobs:\n"
                  "      - name: ps\n"
                  "        template:\n"
                  "          spec:\n"
                  "            parallelism: 1\n"
                  "            completions: 1\n"
                  "            template:\n%s"
                  "      - name: worker\n"
                  "        template:\n"
                  "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: "
                  "trainer}}\n"
                  "          spec:\n"
                  "            parallelism: 3\n"
                  "            completions: 3\n"
                  "            template:\n%s",
                  ns, ps, worker));
    free(ps);
    free(worker);
    for (int k = 0; k < 4; k++)
        make_node(1, "role: worker");
    make_trainjob("gang", "rt", "");
    wait_waiting("gang", "", NULL, "Volcano's verdict on the gang without a ps node, none bound");
    pg = e2e_get(admin, &volcano_podgroups, ns, "gang");
    ck_assert_int_eq(json_integer_value(at(pg, "spec.minMember")), 4);
    ck_assert_int_eq(json_integer_value(at(pg, "spec.minTaskMember.ps")), 1);
    ck_assert_int_eq(json_integer_value(at(pg, "spec.minTaskMember.worker")), 3);
    json_decref(pg);
    make_node(1, "role: ps");
    pods = wait_bound_one_per_node("gang", NULL, "the 4 pods bound once a ps node is there");
    json_array_foreach(pods, i, p)
    {
        const char *task = json_string_value(
            json_object_get(at(p, "metadata.annotations"), VOLCANO_TASK_ANNOTATION));
        char *role = node_label(json_string_value(at(p, "spec.nodeName")), "role");
        ck_assert_ptr_nonnull(task);
        ck_assert_msg(role && strcmp(role, task) == 0, "pod %s of task %s is on a %s node",
                      json_string_value(at(p, "metadata.name")), task, role ? role : "(none)");
        nps += strcmp(task, "ps") == 0;
        free(role);
    }
    ck_assert_int_eq(nps, 1);
    json_decref(pods);
}
END_TEST

/* PriorityClasses <ns>-low (10) and <ns>-high (1000), one runtime each; no node yet: the low
 * gang is submitted first, then the high one; both wait whole. Four nodes appear, room for one
 * gang: the high gang is bound whole while the low one stays unbound; the high gang is deleted:
 * the low one is bound whole. */
START_TEST(higher_priority_class_is_bound_first_and_the_other_waits_whole)
{
    char lo[200], hi[200];
    json_t *pg;

    snprintf(lo, sizeof(lo), "%s-low", ns);
    snprintf(hi, sizeof(hi), "%s-high", ns);
    make_priority_class(lo, 10);
    make_priority_class(hi, 1000);
    make_queue("");
    make_runtime("rt-low", lo);
    make_runtime("rt-high", hi);
    make_trainjob("low", "rt-low", "");
    wait_waiting("low", "", NULL, "Volcano's verdict on the low gang with no node");
    make_trainjob("high", "rt-high", "");
    wait_waiting("high", "", "low", "Volcano's verdict on the high gang with no node");
    pg = e2e_get(admin, &volcano_podgroups, ns, "high");
    ck_assert_str_eq(json_string_value(at(pg, "spec.priorityClassName")), hi);
    json_decref(pg);
    for (int i = 0; i < 4; i++)
        make_node(0, "");
    bound_whole("high", "low", "the high-priority gang bound whole");
    assert_none_bound("low");
    delete_gang("high");
    bound_whole("low", NULL, "the low-priority gang bound once the high one is gone");
}
END_TEST

/* The Queue is opened by Volcano's queue controller, then closed by a Command. A TrainJob in it:
 * its PodGroup and 4 pods are written, 4 nodes are free, none is bound, and trainsched records a
 * Warning Event VolcanoQueueNotOpen naming the queue and its state (Volcano writes nothing on the
 * PodGroup). The queue is opened again: the gang is bound whole. */
START_TEST(closed_queue_holds_the_gang_and_trainsched_says_why)
{
    char want[300];
    json_t *ev = NULL;
    size_t total;

    make_queue("");
    json_decref(
        wait_for(WAIT_S, queue_state_is, "Open", "Volcano's queue controller opening the queue"));
    queue_command("CloseQueue", "Closed");
    for (int i = 0; i < 4; i++)
        make_node(1, "");
    make_runtime("rt", NULL);
    make_trainjob("gang", "rt", "");
    snprintf(want, sizeof(want), "Volcano Queue \\\"%s\\\" is Closed", ns);
    for (double end = e2e_now_s() + WAIT_S;
         !(ev = e2e_event_with(admin, events, ns, VOLCANO_REASON_QUEUE_NOT_OPEN, want));
         e2e_nap(300))
        ck_assert_msg(e2e_now_s() < end, "no Warning Event %s naming the closed queue in %d s",
                      VOLCANO_REASON_QUEUE_NOT_OPEN, WAIT_S);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "Warning");
    fprintf(stderr, "volcano_sched %s: %s\n", ns, json_string_value(json_object_get(ev, "note")));
    json_decref(ev);
    /* the gang is there, whole, and waits */
    for (double end = e2e_now_s() + WAIT_S; bound_pods("gang", &total), total != 4; e2e_nap(300)) {
        assert_none_bound("gang");
        ck_assert_msg(e2e_now_s() < end, "the gang's 4 pods were not made in %d s", WAIT_S);
    }
    assert_none_bound("gang");
    queue_command("OpenQueue", "Open");
    bound_whole("gang", NULL, "the gang bound whole once the queue is open");
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

    if (!on("TESTBED_VOLCANO_RUNNING") || !on("TESTBED_JOBSET_RUNNING") ||
        !on("TESTBED_KWOK_RUNNING")) {
        if (on("TS_REQUIRE_VOLCANO")) {
            fprintf(stderr, "volcano_sched: TS_REQUIRE_VOLCANO=1 but the bed does not run "
                            "Volcano, JobSet and kwok (TESTBED_VOLCANO_RUNNING, "
                            "TESTBED_JOBSET_RUNNING, TESTBED_KWOK_RUNNING are not all 1)\n");
            return 1;
        }
        printf("SKIP: the test bed runs no Volcano scheduler (start it with TESTBED_VOLCANO=1 "
               "TESTBED_JOBSET=1 TESTBED_KWOK=1)\n");
        return 0;
    }
    s = suite_create("volcano_sched");
    add(s, "gang_of_4_is_bound_whole_one_pod_per_node", gang_of_4_is_bound_whole_one_pod_per_node);
    add(s, "second_gang_over_the_queue_capability_waits_whole",
        second_gang_over_the_queue_capability_waits_whole);
    add(s, "required_rack_is_honoured_on_hypernodes", required_rack_is_honoured_on_hypernodes);
    add(s, "min_task_member_holds_the_gang_until_each_task_fits",
        min_task_member_holds_the_gang_until_each_task_fits);
    add(s, "higher_priority_class_is_bound_first_and_the_other_waits_whole",
        higher_priority_class_is_bound_first_and_the_other_waits_whole);
    add(s, "closed_queue_holds_the_gang_and_trainsched_says_why",
        closed_queue_holds_the_gang_and_trainsched_says_why);
    return e2e_run_suite(s) ? 1 : 0;
}
