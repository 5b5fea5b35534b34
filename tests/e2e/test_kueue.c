/*
 * tests/e2e/test_kueue.c - TrainJobs queued by the real Kueue (sigs.k8s.io/kueue's controller
 * manager at the test bed's KUEUE_VERSION, v0.19.0, started by tests/e2e/testbed/up.sh with
 * TESTBED_KUEUE=1, its webhooks on 127.0.0.1, frameworks trainer.kubeflow.org/trainjob and
 * jobset.x-k8s.io/jobset), with trainsched's reconciler in this process as the TrainJob
 * controller, the real JobSet controller, kube-scheduler and kwok nodes.
 *
 * What Kubeflow Trainer does under Kueue, and so what trainsched must do: Kueue's webhook
 * suspends a TrainJob labelled kueue.x-k8s.io/queue-name and adds a runtimePatches entry of
 * manager kueue.x-k8s.io/manager; Kueue makes a Workload; on admission it writes the flavor's
 * node selector into that entry and unsuspends the TrainJob; the JobSet the reconciler makes
 * then carries it. Eviction suspends the TrainJob again and empties the entry, and the JobSet
 * loses the injected fields.
 *
 * Each test has its own namespace, ResourceFlavor (node label trainsched.io/kueue-pool=<ns>),
 * ClusterQueue (8 nvidia.com/gpu, namespaceSelector on that namespace) and LocalQueue; kwok
 * nodes with 8 GPUs and that label are created when a test wants its pods to run.
 *
 * Scenarios: second_trainjob_waits_for_the_quota_of_the_first (admission, pending Workload, the
 * next one admitted after completion; the Workload preview of integrations/kueue.c matches
 * Kueue's), higher_priority_evicts_and_the_injected_fields_go (WorkloadPriorityClass
 * preemption), eviction_with_empty_maps_in_the_runtime_removes_the_injected_fields (the same
 * with `annotations: {}` and `nodeSelector: {}` in the runtime's pod template),
 * runtime_edited_after_admission_keeps_the_snapshot,
 * multikueue_trainjob_is_left_to_multikueue, and
 * queued_coscheduling_trainjob_is_admitted_then_gang_scheduled (Kueue admits, then trainsched's
 * extender, which main() wires into the bed's kube-scheduler, binds the gang), and
 * kueue_tas_placement_is_kept_by_the_gang_extender (Kueue's topology-aware scheduling assigns
 * hosts and ungates the pods; the extender binds the gang exactly there),
 * kueue_multi_layer_tas_block_with_racks_is_kept_by_the_gang_extender (the same with Kueue
 * v0.19's multi-layer request: a block, racks of 4 pods and hosts of 2 inside it),
 * dra_devices_count_in_the_queue_quota (Kueue v0.19 counts DRA devices of the pods' claim
 * templates in quota), and render_previews_kueues_workload_field_for_field (`trainsched render
 * --backend kueue` previews the Workload Kueue makes, for 29 TrainJobs over every built-in
 * runtime, the examples, each topology request and 18 replicated jobs).
 *
 * The suite is labelled "kueue" and runs on a bed started with TESTBED_KUEUE=1 (scripts/test.sh
 * starts one after the other e2e suites). On a bed without Kueue it prints SKIP and passes,
 * unless TS_REQUIRE_KUEUE=1, then it fails.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/events.h"
#include "common/httpd.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/yaml.h"
#include "e2eutil.h"
#include "extender/server.h"
#include "integrations/kueue.h"
#include "reconciler/core.h"
#include "reconciler/reconciler.h"
#include "trainjob/builtin.h"
#include "trainjob/status.h"

#define KQ_GROUP "kueue.x-k8s.io"
#define POOL_LABEL "trainsched.io/kueue-pool"
#define QUEUE_LABEL "kueue.x-k8s.io/queue-name"
#define KUEUE_MANAGER "kueue.x-k8s.io/manager"
#define BIND_TIMEOUT_S 30

static const struct common_kube_resource rflavors = {KQ_GROUP, "v1beta2", "resourceflavors", 0},
                                         cqueues = {KQ_GROUP, "v1beta2", "clusterqueues", 0},
                                         lqueues = {KQ_GROUP, "v1beta2", "localqueues", 1},
                                         workloads = {KQ_GROUP, "v1beta2", "workloads", 1},
                                         wpcs = {KQ_GROUP, "v1beta2", "workloadpriorityclasses", 0},
                                         topologies = {KQ_GROUP, "v1beta2", "topologies", 0};

static struct common_kube *admin, *tsk;
static struct rc_reconciler *rec;
static struct common_events *events;
static char ns[128];
static int nodes_made;
static int ext_port; /* the extender the bed's kube-scheduler calls (main sets it up) */

/* ---- helpers ---- */

static void create(const struct common_kube_resource *r, json_t *obj)
{
    e2e_create(admin, r, ns, obj);
}

static json_t *get(const struct common_kube_resource *r, const char *name)
{
    return e2e_get(admin, r, ns, name);
}

static void merge_patch(const struct common_kube_resource *r, const char *name, const char *body)
{
    struct common_error err;
    enum common_rc rc = common_kube_patch(admin, r, r->namespaced ? ns : NULL, name,
                                          COMMON_KUBE_MERGE_PATCH, body, NULL, NULL, &err);
    ck_assert_msg(rc == COMMON_OK, "patch %s %s: %s", r->resource, name, err.msg);
}

static void del(const struct common_kube_resource *r, const char *name)
{
    struct common_error err;
    common_kube_delete(admin, r, r->namespaced ? ns : NULL, name, NULL, NULL, NULL, &err);
}

typedef e2e_named_fn pred_fn;
static json_t *wait_for(double secs, pred_fn pred, const char *name, const void *arg,
                        const char *what)
{
    return e2e_wait_named(secs, 200, pred, name, arg, what, ns);
}

static const json_t *at(const json_t *o, const char *path)
{
    return e2e_at(o, path);
}

static int suspended(const json_t *o)
{
    return json_is_true(at(o, "spec.suspend"));
}

/* the Kueue-owned runtimePatches entry of TrainJob tj, or NULL */
static const json_t *kueue_patch(const json_t *tj)
{
    size_t i;
    const json_t *p;
    json_array_foreach(at(tj, "spec.runtimePatches"), i, p)
    {
        const char *m = json_string_value(json_object_get(p, "manager"));
        if (m && strcmp(m, KUEUE_MANAGER) == 0)
            return p;
    }
    return NULL;
}

/* the nodeSelector value of POOL_LABEL in the JobSet's first replicated job (NULL: none) */
static const char *jobset_pool(const json_t *js)
{
    return json_string_value(json_object_get(
        at(js, "spec.replicatedJobs.0.template.spec.template.spec.nodeSelector"), POOL_LABEL));
}

static json_t *tj_suspend_is(const char *name, const void *arg)
{
    json_t *tj = get(&common_kube_trainjobs, name);
    if (tj && suspended(tj) == *(const int *)arg)
        return tj;
    json_decref(tj);
    return NULL;
}

/* the TrainJob `name` once it is suspended with Kueue's runtimePatches entry emptied */
static json_t *tj_evicted(const char *name, const void *arg)
{
    json_t *tj = get(&common_kube_trainjobs, name);
    (void)arg;
    if (tj && suspended(tj) && kueue_patch(tj) &&
        !at(kueue_patch(tj), "trainingRuntimeSpec.template.spec.replicatedJobs.0"))
        return tj;
    json_decref(tj);
    return NULL;
}

/* the JobSet `name` once it is unsuspended and carries the flavor's node selector */
static json_t *js_admitted(const char *name, const void *arg)
{
    json_t *js = get(&common_kube_jobsets, name);
    (void)arg;
    if (js && !suspended(js) && jobset_pool(js) && strcmp(jobset_pool(js), ns) == 0)
        return js;
    json_decref(js);
    return NULL;
}

/* the JobSet `name` once it is suspended and carries no node selector of Kueue's */
static json_t *js_evicted(const char *name, const void *arg)
{
    json_t *js = get(&common_kube_jobsets, name);
    (void)arg;
    if (js && suspended(js) && !jobset_pool(js))
        return js;
    json_decref(js);
    return NULL;
}

/* the Workload Kueue made for TrainJob `name` (found by its job-uid label) */
static json_t *workload_of(const char *name, const void *arg)
{
    json_t *tj = get(&common_kube_trainjobs, name), *items = NULL, *wl = NULL;
    struct common_kube_list_opts lo = {0};
    struct common_error err;
    char sel[256];
    (void)arg;
    if (!tj)
        return NULL;
    snprintf(sel, sizeof(sel), "kueue.x-k8s.io/job-uid=%s",
             json_string_value(at(tj, "metadata.uid")));
    lo.label_selector = sel;
    ck_assert_msg(common_kube_list(admin, &workloads, ns, &lo, &items, NULL, &err) == COMMON_OK,
                  "list workloads: %s", err.msg);
    if (json_array_size(items) == 1)
        wl = json_incref(json_array_get(items, 0));
    json_decref(items);
    json_decref(tj);
    return wl;
}

static const json_t *wl_cond(const json_t *wl, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(at(wl, "status.conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

struct want_wl {
    const char *type, *status;
};

static json_t *workload_cond_is(const char *name, const void *arg)
{
    const struct want_wl *w = arg;
    json_t *wl = workload_of(name, NULL);
    const json_t *c = wl_cond(wl, w->type);
    if (c && strcmp(json_string_value(json_object_get(c, "status")), w->status) == 0)
        return wl;
    json_decref(wl);
    return NULL;
}

static json_t *tj_complete(const char *name, const void *arg)
{
    json_t *tj = get(&common_kube_trainjobs, name);
    const json_t *c = trainjob_status_condition(json_object_get(tj, "status"), "Complete");
    (void)arg;
    if (c && strcmp(json_string_value(json_object_get(c, "status")), "True") == 0)
        return tj;
    json_decref(tj);
    return NULL;
}

/* ClusterQueue `cq` on flavor `cq` (gpus GPUs, 8 CPUs and 32Gi per GPU; `extra` more spec
 * lines) for this namespace, and LocalQueue `lq` pointing at it */
static void make_cq_lq(const char *cq, const char *lq, int gpus, const char *extra)
{
    create(&cqueues, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
                               "metadata: {name: %s}\n"
                               "spec:\n"
                               "  namespaceSelector:\n"
                               "    matchLabels: {kubernetes.io/metadata.name: %s}\n"
                               "%s"
                               "  resourceGroups:\n"
                               "  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
                               "    flavors:\n"
                               "    - name: %s\n"
                               "      resources:\n"
                               "      - {name: cpu, nominalQuota: '%d'}\n"
                               "      - {name: memory, nominalQuota: %dGi}\n"
                               "      - {name: nvidia.com/gpu, nominalQuota: '%d'}\n",
                               cq, ns, extra, cq, gpus * 8, gpus * 32, gpus));
    create(&lqueues, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
                               "metadata: {name: %s, namespace: %s}\n"
                               "spec: {clusterQueue: %s}\n",
                               lq, ns, cq));
}

/* ResourceFlavor, ClusterQueue (8 GPUs; preemption of lower priorities) and LocalQueue `lq` */
static void make_queues(void)
{
    create(&rflavors, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                                "metadata: {name: %s}\n"
                                "spec: {nodeLabels: {%s: %s}}\n",
                                ns, POOL_LABEL, ns));
    make_cq_lq(ns, "lq", 8, "  preemption: {withinClusterQueue: LowerPriority}\n");
}

/* a kwok node with 8 GPUs in this test's flavor (pool label value `pool`, plus the labels of
 * `extra`, a YAML flow-map body such as "a: b, " or ""); its name */
static const char *make_node_in(const char *pool, const char *extra)
{
    static char name[160];
    struct common_error err;
    json_t *n;
    enum common_rc rc;
    snprintf(name, sizeof(name), "kq-%s-%d", ns, nodes_made++);
    n = e2e_yamlf("apiVersion: v1\nkind: Node\n"
                  "metadata:\n  name: %s\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                  "  labels: {%stype: kwok, kubernetes.io/hostname: %s, %s: %s}\n"
                  "status:\n"
                  "  allocatable: {cpu: '32', memory: 256Gi, pods: '110', nvidia.com/gpu: '8'}\n"
                  "  capacity: {cpu: '32', memory: 256Gi, pods: '110', nvidia.com/gpu: '8'}\n",
                  name, extra, name, POOL_LABEL, pool);
    rc = common_kube_create(admin, &common_kube_nodes, NULL, n, NULL, NULL, &err);
    ck_assert_msg(rc == COMMON_OK, "node %s: %s", name, err.msg);
    json_decref(n);
    return name;
}

static void make_node(void)
{
    make_node_in(ns, "");
}

/* a TrainingRuntime whose one pod asks for 8 GPUs, with pod template metadata `meta` (a YAML
 * flow map) and `spec` (more pod spec lines, each indented by 16 spaces, or "") */
static json_t *gpu_runtime_with(const char *name, const char *meta, const char *spec)
{
    return e2e_yamlf(
        "apiVersion: trainer.kubeflow.org/v1alpha1\n"
        "kind: TrainingRuntime\n"
        "metadata: {name: %s, namespace: %s}\n"
        "spec:\n"
        "  mlPolicy: {numNodes: 1}\n" E2E_RT_NODE_JOB "              metadata: %s\n"
        "              spec:\n"
        "%s"
        "                containers:\n"
        "                - name: node\n"
        "                  image: busybox:1.36\n"
        "                  command: [sh, -c, 'sleep 1']\n"
        "                  resources:\n"
        "                    requests: {cpu: 100m, memory: 64Mi, nvidia.com/gpu: '8'}\n"
        "                    limits: {nvidia.com/gpu: '8'}\n",
        name, ns, meta, spec);
}

/* a TrainingRuntime whose one pod asks for 8 GPUs; marker goes into its pod-template labels */
static json_t *gpu_runtime(const char *name, const char *marker)
{
    char meta[200];
    snprintf(meta, sizeof(meta), "{labels: {kueue-test-marker: %s}}", marker);
    return gpu_runtime_with(name, meta, "");
}

static json_t *queued_trainjob(const char *name, const char *runtime, const char *priority)
{
    char prio[160] = "";
    if (priority)
        snprintf(prio, sizeof(prio), ", kueue.x-k8s.io/priority-class: %s", priority);
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainJob\n"
                     "metadata: {name: %s, namespace: %s, labels: {%s: lq%s}}\n"
                     "spec:\n"
                     "  runtimeRef: {name: %s, kind: TrainingRuntime}\n",
                     name, ns, QUEUE_LABEL, prio, runtime);
}

/* a TrainJob `name` of TrainingRuntime rt, queued on LocalQueue lq (not setup's lq) */
static void create_queued_on(const char *name, const char *rt, const char *lq)
{
    json_t *o = queued_trainjob(name, rt, NULL);
    json_object_set_new(json_object_get(at(o, "metadata"), "labels"), QUEUE_LABEL, json_string(lq));
    create(&common_kube_trainjobs, o);
}

/* the Workload of TrainJob `name` once Kueue admitted it with a topology assignment; *ta the
 * assignment of its first podSet (borrowed from the Workload) */
static json_t *admitted_with_topology(const char *name, const json_t **ta)
{
    int no = 0;
    char what[200];
    json_t *o, *wl;
    snprintf(what, sizeof(what), "TrainJob %s admitted by Kueue", name);
    o = wait_for(90, tj_suspend_is, name, &no, what);
    json_decref(o);
    wl = workload_of(name, NULL);
    *ta = at(wl, "status.admission.podSetAssignments.0.topologyAssignment");
    ck_assert_msg(*ta != NULL, "Kueue admitted %s without a topology assignment", name);
    return wl;
}

static void start_reconciler(void)
{
    struct rc_opts o;
    struct common_error err;

    e2e_rc_opts(&o, tsk, ns);
    events = common_events_create(tsk, "e2e-kueue", NULL, &err);
    ck_assert_msg(events != NULL, "%s", err.msg);
    o.events = events;
    o.gang_marks = 1; /* coscheduling JobSets reach the extender without the pod webhook */
    rec = e2e_rc_start(&o);
}

static void setup(void)
{
    enum common_log_level level;
    if (getenv("E2E_LOG_LEVEL") && common_log_parse_level(getenv("E2E_LOG_LEVEL"), &level) == 0)
        common_log_set_level(level);
    admin = e2e_client(20000, 0);
    tsk = e2e_client(20000, 1);
    e2e_make_ns(admin, "kq", ns, sizeof(ns));
    nodes_made = 0;
    make_queues();
    start_reconciler();
}

static void teardown(void)
{
    char name[160];
    rc_destroy(rec);
    rec = NULL;
    common_events_destroy(events);
    events = NULL;
    for (int i = 0; i < nodes_made; i++) {
        snprintf(name, sizeof(name), "kq-%s-%d", ns, i);
        del(&common_kube_nodes, name);
    }
    e2e_drop_ns(admin, ns);
    del(&cqueues, ns);
    del(&rflavors, ns);
    snprintf(name, sizeof(name), "%s-tas", ns); /* the topology test's queue, flavor, topology */
    del(&cqueues, name);
    del(&rflavors, name);
    del(&topologies, name);
    snprintf(name, sizeof(name), "%s-dra", ns); /* the DRA quota test's queue */
    del(&cqueues, name);
    snprintf(name, sizeof(name), "%s-low", ns);
    del(&wpcs, name);
    snprintf(name, sizeof(name), "%s-high", ns);
    del(&wpcs, name);
    common_kube_client_destroy(tsk);
    common_kube_client_destroy(admin);
}

/* the Workload integrations/kueue.c previews for TrainJob tj (from the JobSet trainsched made)
 * asks what Kueue's own Workload asks: name, queue, priority, the job-uid label, the owner, and
 * per podSet its name, count and topology request */
static void assert_preview_matches(const json_t *tj, const json_t *wl)
{
    json_t *js = get(&common_kube_jobsets, json_string_value(at(tj, "metadata.name"))), *pv = NULL;
    const char *note = NULL, *keys[] = {"metadata.name",
                                        "metadata.namespace",
                                        "metadata.labels",
                                        "metadata.ownerReferences.0.uid",
                                        "metadata.ownerReferences.0.kind",
                                        "spec.queueName",
                                        "spec.priority",
                                        "spec.podSets.0.name",
                                        "spec.podSets.0.count",
                                        "spec.podSets.0.topologyRequest",
                                        "spec.podSets.1"};
    struct common_error err;

    ck_assert_msg(js != NULL, "no JobSet for the preview");
    ck_assert_msg(kueue_workload_preview(tj, js, NULL, &pv, &note, &err) == COMMON_OK, "%s",
                  err.msg);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char *want = json_dumps(at(wl, keys[i]), JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
        char *have = json_dumps(at(pv, keys[i]), JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_msg((!want && !have) || (want && have && strcmp(want, have) == 0),
                      "%s: Kueue's Workload has %s, the preview %s", keys[i],
                      want ? want : "(nothing)", have ? have : "(nothing)");
        free(want);
        free(have);
    }
    json_decref(pv);
    json_decref(js);
}

/* ---- tests ---- */

/* Two TrainJobs of 8 GPUs on a ClusterQueue of 8: the first is admitted (Kueue's node selector
 * in its runtimePatches entry and in its JobSet, which runs), the second stays suspended with
 * its Workload pending; the Workload's name is the one integrations/kueue.c computes. Once a
 * node appears the first runs to Complete and the second is admitted and completes too. */
/* `trainsched explain name` of a TrainJob whose Workload waits for the 8 GPUs the first one
 * holds: the cause quota, the resource, the flavor and the amount, in the text and the JSON */
static void explain_waits_for_quota(const char *name)
{
    char dir[] = "/tmp/ts-kueue-explain-XXXXXX", args[300], want[400], *out, *err;
    json_t *story;
    json_error_t je;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(args, sizeof(args), "%s -n %s", name, ns);
    ck_assert_int_eq(e2e_explain(getenv("KUBECONFIG"), args, dir, &out, &err), 0);
    ck_assert_msg(strstr(out, "Waiting (quota): "), "no quota wait in:\n%s", out);
    snprintf(want, sizeof(want),
             "insufficient unused quota for nvidia.com/gpu in flavor %s, 8 more needed", ns);
    ck_assert_msg(strstr(out, want), "no \"%s\" in:\n%s", want, out);
    snprintf(want, sizeof(want),
             "Would unblock: needs 8 more nvidia.com/gpu of unused quota in flavor %s", ns);
    ck_assert_msg(strstr(out, want), "no \"%s\" in:\n%s", want, out);
    ck_assert_msg(strstr(out, "Backend: ") && strstr(out, "Workload "), "%s", out);
    free(out);
    free(err);
    snprintf(args, sizeof(args), "%s -n %s -o json", name, ns);
    ck_assert_int_eq(e2e_explain(getenv("KUBECONFIG"), args, dir, &out, &err), 0);
    story = json_loads(out, 0, &je);
    ck_assert_msg(story != NULL, "-o json is no JSON: %s", je.text);
    ck_assert_str_eq(json_string_value(at(story, "wait.cause")), "quota");
    ck_assert_str_eq(json_string_value(at(story, "wait.numbers.resource")), "nvidia.com/gpu");
    ck_assert_str_eq(json_string_value(at(story, "wait.numbers.flavor")), ns);
    ck_assert_str_eq(json_string_value(at(story, "wait.numbers.moreNeeded")), "8");
    json_decref(story);
    free(out);
    free(err);
    snprintf(args, sizeof(args), "rm -rf '%s'", dir);
    (void)system(args);
}

START_TEST(second_trainjob_waits_for_the_quota_of_the_first)
{
    int no = 0;
    struct want_wl pending = {"QuotaReserved", "False"}, admitted = {"Admitted", "True"};
    json_t *a, *b, *js, *wl;
    const json_t *p;
    char want_name[KUEUE_WORKLOAD_NAME_MAX + 1];
    struct common_error err;

    create(&common_kube_trainingruntimes, gpu_runtime("gpu8", "v1"));
    create(&common_kube_trainjobs, queued_trainjob("first", "gpu8", NULL));
    a = wait_for(60, tj_suspend_is, "first", &no, "TrainJob first unsuspended by Kueue");
    p = kueue_patch(a);
    ck_assert_msg(p != NULL, "no runtimePatches entry of %s", KUEUE_MANAGER);
    ck_assert_str_eq(json_string_value(json_object_get(
                         at(p, "trainingRuntimeSpec.template.spec.replicatedJobs.0.template.spec."
                               "template.spec.nodeSelector"),
                         POOL_LABEL)),
                     ns);
    js = wait_for(60, js_admitted, "first", NULL, "JobSet first unsuspended with the flavor");
    json_decref(js);
    wl = wait_for(30, workload_cond_is, "first", &admitted, "Workload of first Admitted");
    ck_assert_msg(kueue_workload_name("TrainJob", "trainer.kubeflow.org",
                                      json_string_value(at(a, "metadata.name")),
                                      json_string_value(at(a, "metadata.uid")), 0, want_name,
                                      sizeof(want_name), &err) == COMMON_OK,
                  "%s", err.msg);
    ck_assert_str_eq(json_string_value(at(wl, "metadata.name")), want_name);
    assert_preview_matches(a, wl);
    json_decref(wl);
    json_decref(a);

    create(&common_kube_trainjobs, queued_trainjob("second", "gpu8", NULL));
    wl = wait_for(60, workload_cond_is, "second", &pending, "Workload of second pending");
    json_decref(wl);
    explain_waits_for_quota("second");
    b = get(&common_kube_trainjobs, "second");
    ck_assert_msg(suspended(b), "second runs without quota");
    ck_assert_msg(kueue_patch(b) != NULL, "second has no runtimePatches entry of Kueue's");
    ck_assert(at(kueue_patch(b), "trainingRuntimeSpec.template.spec.replicatedJobs.0") == NULL);
    json_decref(b);
    js = wait_for(30, js_evicted, "second", NULL, "JobSet second suspended, no node selector");
    json_decref(js);

    /* room to run: first completes, then second is admitted and completes */
    make_node();
    a = wait_for(180, tj_complete, "first", NULL, "TrainJob first Complete");
    json_decref(a);
    b = wait_for(120, tj_suspend_is, "second", &no, "TrainJob second admitted");
    json_decref(b);
    js = wait_for(60, js_admitted, "second", NULL, "JobSet second with the flavor");
    json_decref(js);
    b = wait_for(180, tj_complete, "second", NULL, "TrainJob second Complete");
    json_decref(b);
}
END_TEST

/* the first kueue.x-k8s.io/ annotation of the JobSet's first pod template, or NULL */
static const char *jobset_kueue_annotation(const json_t *js)
{
    const char *k;
    json_t *v;
    json_object_foreach(
        (json_t *)at(js, "spec.replicatedJobs.0.template.spec.template.metadata.annotations"), k, v)
    {
        if (strncmp(k, KQ_GROUP "/", strlen(KQ_GROUP) + 1) == 0)
            return k;
    }
    return NULL;
}

/* the JobSet `name` once it is suspended and carries neither the flavor's node selector nor an
 * annotation of Kueue's */
static json_t *js_evicted_clean(const char *name, const void *arg)
{
    json_t *js = js_evicted(name, arg);
    if (js && !jobset_kueue_annotation(js))
        return js;
    json_decref(js);
    return NULL;
}

/* TrainJob "low" of runtime rt admitted (its pods wait: no node yet), then evicted by "high"
 * (WorkloadPriorityClass): low is suspended, Kueue's runtimePatches entry is emptied, and its
 * JobSet is suspended and passes evicted (js_evicted: without the flavor's node selector); high
 * is admitted. Returns low's JobSet as evicted (a new reference). */
static json_t *evict_low_by_high(const char *rt, pred_fn evicted)
{
    int no = 0;
    json_t *l, *h, *js, *out;
    char low[160], high[160];

    snprintf(low, sizeof(low), "%s-low", ns);
    snprintf(high, sizeof(high), "%s-high", ns);
    create(&wpcs, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
                            "metadata: {name: %s}\nvalue: 10\n",
                            low));
    create(&wpcs, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
                            "metadata: {name: %s}\nvalue: 1000\n",
                            high));
    create(&common_kube_trainjobs, queued_trainjob("low", rt, low));
    js = wait_for(60, js_admitted, "low", NULL, "JobSet low admitted");
    json_decref(js);

    create(&common_kube_trainjobs, queued_trainjob("high", rt, high));
    /* Kueue suspends first, then (once the TrainJob's status.jobsStatus counts no active Job,
     * which trainsched writes from the suspended JobSet) empties its runtimePatches entry */
    l = wait_for(90, tj_evicted, "low", NULL,
                 "TrainJob low suspended and Kueue's runtimePatches entry emptied");
    ck_assert_msg(kueue_patch(l) != NULL, "low lost Kueue's runtimePatches entry");
    json_decref(l);
    out = wait_for(60, evicted, "low", NULL, "JobSet low suspended without Kueue's fields");
    h = wait_for(60, tj_suspend_is, "high", &no, "TrainJob high admitted");
    json_decref(h);
    js = wait_for(60, js_admitted, "high", NULL, "JobSet high admitted");
    json_decref(js);
    return out;
}

/* A low-priority TrainJob admitted is evicted by a high-priority one: its JobSet is suspended
 * without the flavor's node selector; the high one is admitted. */
START_TEST(higher_priority_evicts_and_the_injected_fields_go)
{
    create(&common_kube_trainingruntimes, gpu_runtime("gpu8", "v1"));
    json_decref(evict_low_by_high("gpu8", js_evicted));
}
END_TEST

/* The same eviction with a runtime whose pod template has `labels: {}`, `annotations: {}` and
 * `nodeSelector: {}` (as Helm and kustomize write them): Kueue's node selector and annotations
 * leave the JobSet, and no reconcile fails. Before rc_apply_body, server-side apply turned the
 * {} the reconciler sent into null once Kueue's keys were gone, and every apply of the JobSet
 * was refused (422 "template.metadata.annotations: Invalid value: \"null\" ... must be of type
 * object"). */
START_TEST(eviction_with_empty_maps_in_the_runtime_removes_the_injected_fields)
{
    json_t *l;
    const json_t *c;

    create(&common_kube_trainingruntimes,
           gpu_runtime_with("empty-maps", "{labels: {}, annotations: {}}",
                            "                nodeSelector: {}\n"));
    json_decref(evict_low_by_high("empty-maps", js_evicted_clean));
    /* no reconcile of low failed on the way */
    l = get(&common_kube_trainjobs, "low");
    c = trainjob_status_condition(json_object_get(l, "status"), RC_COND_CREATED);
    ck_assert_msg(c == NULL, "low: %s", json_string_value(json_object_get(c, "message")));
    json_decref(l);
}
END_TEST

/* A TrainJob admitted by Kueue keeps its runtime snapshot when the runtime is edited: the JobSet
 * still has the old pod-template label, and the Workload stays admitted. */
START_TEST(runtime_edited_after_admission_keeps_the_snapshot)
{
    struct want_wl admitted = {"Admitted", "True"};
    json_t *js, *wl;

    create(&common_kube_trainingruntimes, gpu_runtime("gpu8", "before"));
    create(&common_kube_trainjobs, queued_trainjob("snap", "gpu8", NULL));
    js = wait_for(60, js_admitted, "snap", NULL, "JobSet snap admitted");
    json_decref(js);
    merge_patch(&common_kube_trainingruntimes, "gpu8",
                "{\"spec\":{\"template\":{\"spec\":{\"replicatedJobs\":[{\"name\":\"node\","
                "\"template\":{\"metadata\":{\"labels\":{\"trainer.kubeflow.org/"
                "trainjob-ancestor-step\":\"trainer\"}},\"spec\":{\"template\":{\"metadata\":{"
                "\"labels\":{\"kueue-test-marker\":\"after\"}},\"spec\":{\"containers\":[{"
                "\"name\":\"node\",\"image\":\"busybox:1.36\",\"command\":[\"sh\",\"-c\","
                "\"sleep 1\"],\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":"
                "\"64Mi\",\"nvidia.com/gpu\":\"8\"},\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]}}}}}]"
                "}}}}");
    /* a change of the TrainJob queues a reconcile against the edited runtime */
    merge_patch(&common_kube_trainjobs, "snap",
                "{\"metadata\":{\"annotations\":{\"kueue-test/touch\":\"1\"}}}");
    e2e_nap(3000);
    js = get(&common_kube_jobsets, "snap");
    ck_assert_str_eq(json_string_value(json_object_get(
                         at(js, "spec.replicatedJobs.0.template.spec.template.metadata.labels"),
                         "kueue-test-marker")),
                     "before");
    ck_assert_str_eq(jobset_pool(js), ns);
    json_decref(js);
    wl = wait_for(30, workload_cond_is, "snap", &admitted, "Workload of snap still Admitted");
    json_decref(wl);
}
END_TEST

/* A queued TrainJob with spec.managedBy kueue.x-k8s.io/multikueue belongs to MultiKueue (its
 * JobSet is made in a worker cluster): trainsched makes nothing for it here, while a queued
 * TrainJob beside it is built and admitted as usual. */
START_TEST(multikueue_trainjob_is_left_to_multikueue)
{
    json_t *tj, *js;

    create(&common_kube_trainingruntimes, gpu_runtime("gpu8", "v1"));
    /* the local one first: the MultiKueue one's Workload would take the quota of 8 GPUs */
    create(&common_kube_trainjobs, queued_trainjob("local", "gpu8", NULL));
    js = wait_for(60, js_admitted, "local", NULL, "JobSet local admitted");
    json_decref(js);
    tj = queued_trainjob("remote", "gpu8", NULL);
    json_object_set_new(json_object_get(tj, "spec"), "managedBy",
                        json_string("kueue.x-k8s.io/multikueue"));
    create(&common_kube_trainjobs, tj);
    /* the reconciler sees the TrainJob within a second */
    e2e_nap(3000);
    ck_assert_msg(get(&common_kube_jobsets, "remote") == NULL, "a JobSet for the MultiKueue one");
    ck_assert_msg(get(&common_kube_configmaps, "remote-runtime-snapshot") == NULL,
                  "a runtime snapshot for the MultiKueue one");
    tj = get(&common_kube_trainjobs, "remote");
    ck_assert_str_eq(json_string_value(at(tj, "spec.managedBy")), "kueue.x-k8s.io/multikueue");
    ck_assert_msg(trainjob_status_condition(json_object_get(tj, "status"), "ResourcesCreated") ==
                      NULL,
                  "trainsched wrote a condition on the MultiKueue TrainJob");
    json_decref(tj);
}
END_TEST

/* a TrainingRuntime with a coscheduling PodGroup: num_nodes pods of gpus GPUs each, the pod
 * template annotated with `ann` (a YAML flow-map body, "" for none) */
static json_t *gang_runtime(const char *name, int num_nodes, int gpus, const char *ann)
{
    return e2e_yamlf(
        "apiVersion: trainer.kubeflow.org/v1alpha1\n"
        "kind: TrainingRuntime\n"
        "metadata: {name: %s, namespace: %s}\n"
        "spec:\n"
        "  mlPolicy: {numNodes: %d}\n"
        "  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 30}}\n" E2E_RT_NODE_JOB
        "              metadata: {annotations: {%s}}\n"
        "              spec:\n"
        "                containers:\n"
        "                - name: node\n"
        "                  image: busybox:1.36\n"
        "                  command: [sh, -c, 'sleep 1']\n"
        "                  resources:\n"
        "                    requests: {cpu: 100m, memory: 64Mi, nvidia.com/gpu: "
        "'%d'}\n"
        "                    limits: {nvidia.com/gpu: '%d'}\n",
        name, ns, num_nodes, ann, gpus, gpus);
}

/* trainsched's extender on ext_port, where the bed's kube-scheduler calls it (main) */
struct ext_run {
    struct extender_server *ext;
    struct common_metrics *metrics;
    struct common_httpd *httpd;
};

static void ext_start(struct ext_run *r)
{
    struct extender_server_opts eo = {0};
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct common_error err;
    char addr[64];
    enum common_rc rc = COMMON_EIO;

    ck_assert_msg(ext_port > 0, "the bed's kube-scheduler has no extender config");
    r->metrics = common_metrics_create();
    eo.kube = admin;
    eo.events = events;
    eo.metrics = r->metrics;
    eo.bind_http_timeout_ms = BIND_TIMEOUT_S * 1000;
    eo.default_schedule_timeout_s = 20;
    eo.backoff_initial_ms = 2000;
    eo.backoff_max_ms = 4000;
    r->ext = extender_server_create(&eo, &err);
    ck_assert_msg(r->ext != NULL, "%s", err.msg);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ext_port);
    ho.address = addr;
    ho.threads = 4;
    r->httpd = common_httpd_create(&ho, &err);
    ck_assert_msg(r->httpd != NULL, "%s", err.msg);
    ck_assert_int_eq(extender_server_install(r->ext, r->httpd, &err), COMMON_OK);
    ck_assert_msg(extender_server_start(r->ext, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_msg(extender_server_wait_ready(r->ext, 30000), "extender caches not synced in 30 s");
    for (int i = 0; i < 50 && (rc = common_httpd_start(r->httpd, &err)) != COMMON_OK; i++)
        e2e_nap(100);
    ck_assert_msg(rc == COMMON_OK, "%s", err.msg);
}

static void ext_stop(struct ext_run *r)
{
    extender_server_stop(r->ext);
    common_httpd_destroy(r->httpd);
    extender_server_destroy(r->ext);
    common_metrics_destroy(r->metrics);
}

/* Kueue + coscheduling through the extender: two queued TrainJobs of 2 pods x 4 GPUs on a
 * ClusterQueue of 8 GPUs and two kwok nodes of 8: the first is admitted by Kueue, then its two
 * pods are bound together by trainsched's extender (held, then released as a gang); the second
 * waits in the queue and, once the first completes, is admitted and gang-bound the same way. */
START_TEST(queued_coscheduling_trainjob_is_admitted_then_gang_scheduled)
{
    struct extender_server_stats st;
    struct ext_run er;
    struct want_wl pending = {"QuotaReserved", "False"};
    int no = 0;
    json_t *o;

    ext_start(&er);
    make_node();
    make_node();
    create(&common_kube_trainingruntimes, gang_runtime("gang", 2, 4, ""));
    create(&common_kube_trainjobs, queued_trainjob("g1", "gang", NULL));
    o = wait_for(60, tj_suspend_is, "g1", &no, "TrainJob g1 admitted by Kueue");
    json_decref(o);
    create(&common_kube_trainjobs, queued_trainjob("g2", "gang", NULL));
    o = wait_for(60, workload_cond_is, "g2", &pending, "Workload of g2 pending");
    json_decref(o);
    o = get(&common_kube_podgroups, "g1");
    ck_assert_msg(o != NULL, "no PodGroup g1");
    ck_assert_int_eq(json_integer_value(at(o, "spec.minMember")), 2);
    json_decref(o);
    o = wait_for(180, tj_complete, "g1", NULL, "TrainJob g1 Complete");
    json_decref(o);
    extender_server_stats(er.ext, &st);
    fprintf(stderr, "kueue+coscheduling g1: held %llu released %llu bindings %llu\n",
            (unsigned long long)st.held, (unsigned long long)st.released,
            (unsigned long long)st.bindings_ok);
    ck_assert_uint_ge(st.held, 1);
    ck_assert_uint_ge(st.released, 1);
    ck_assert_uint_eq(st.bindings_ok, 2);
    o = wait_for(120, tj_complete, "g2", NULL, "TrainJob g2 Complete");
    json_decref(o);
    extender_server_stats(er.ext, &st);
    ck_assert_uint_eq(st.bindings_ok, 4);
    ck_assert_uint_eq(st.bindings_failed, 0);
    ext_stop(&er);
}
END_TEST

/* the pods of JobSet `name` once `*(int *)arg` of them are bound (the pod list, else NULL) */
static json_t *pods_bound(const char *name, const void *arg)
{
    json_t *items = NULL;
    struct common_kube_list_opts lo = {0};
    struct common_error err;
    char sel[256];
    size_t i, bound = 0;
    const json_t *p;
    snprintf(sel, sizeof(sel), "jobset.sigs.k8s.io/jobset-name=%s", name);
    lo.label_selector = sel;
    if (common_kube_list(admin, &common_kube_pods, ns, &lo, &items, NULL, &err) != COMMON_OK)
        return NULL;
    json_array_foreach(items, i, p) bound += json_string_value(at(p, "spec.nodeName")) != NULL;
    if (bound == json_array_size(items) && (int)bound == *(const int *)arg)
        return items;
    json_decref(items);
    return NULL;
}

/* an Event in the test namespace regarding PodGroup `name` whose note has `arg` in it */
static json_t *podgroup_event_with(const char *name, const void *arg)
{
    json_t *items = NULL;
    struct common_error err;
    size_t i;
    const json_t *e;
    if (common_kube_list(admin, &common_kube_events, ns, NULL, &items, NULL, &err) != COMMON_OK)
        return NULL;
    json_array_foreach(items, i, e)
    {
        const char *kind = json_string_value(at(e, "regarding.kind"));
        const char *who = json_string_value(at(e, "regarding.name"));
        const char *note = json_string_value(json_object_get(e, "note"));
        if (kind && who && note && strcmp(kind, "PodGroup") == 0 && strcmp(who, name) == 0 &&
            strstr(note, (const char *)arg)) {
            json_t *r = json_incref((json_t *)e);
            json_decref(items);
            return r;
        }
    }
    json_decref(items);
    return NULL;
}

/* node is a kubernetes.io/hostname value of Kueue's topology assignment ta (v1beta2: slices
 * whose valuesPerLevel give, per level, one universal value or prefix + root + suffix per
 * domain) */
static int assigned_host(const json_t *ta, const char *node)
{
    size_t lv, i, k;
    const json_t *l, *sl, *root;
    json_array_foreach(json_object_get(ta, "levels"), lv, l)
    {
        if (strcmp(json_string_value(l), "kubernetes.io/hostname") != 0)
            continue;
        json_array_foreach(json_object_get(ta, "slices"), i, sl)
        {
            const json_t *v = json_array_get(json_object_get(sl, "valuesPerLevel"), lv);
            const char *u = json_string_value(json_object_get(v, "universal"));
            const json_t *ind = json_object_get(v, "individual");
            const char *pre = json_string_value(json_object_get(ind, "prefix"));
            const char *suf = json_string_value(json_object_get(ind, "suffix"));
            if (u && strcmp(u, node) == 0)
                return 1;
            json_array_foreach(json_object_get(ind, "roots"), k, root)
            {
                char full[300];
                snprintf(full, sizeof(full), "%s%s%s", pre ? pre : "", json_string_value(root),
                         suf ? suf : "");
                if (strcmp(full, node) == 0)
                    return 1;
            }
        }
    }
    return 0;
}

/* the n pods of TrainJob `name` were bound through the extender of er as one gang (held, then
 * released, n bindings, none failed), each on the kubernetes.io/hostname its nodeSelector names
 * (Kueue's ungater writes it), inside Kueue's topology assignment ta */
static void assert_bound_where_kueue_put_them(const char *name, struct ext_run *er,
                                              const json_t *ta, const json_t *pods, size_t n)
{
    struct extender_server_stats st;
    char *dump = json_dumps(ta, JSON_COMPACT);
    size_t i;
    const json_t *p;

    extender_server_stats(er->ext, &st);
    fprintf(stderr, "kueue TAS %s: held %llu released %llu bindings %llu; assignment %s\n", name,
            (unsigned long long)st.held, (unsigned long long)st.released,
            (unsigned long long)st.bindings_ok, dump ? dump : "?");
    free(dump);
    ck_assert_uint_ge(st.held, 1);
    ck_assert_uint_ge(st.released, 1);
    ck_assert_uint_eq(st.bindings_ok, n);
    ck_assert_uint_eq(st.bindings_failed, 0);
    ck_assert_uint_eq(json_array_size(pods), n);
    json_array_foreach(pods, i, p)
    {
        const char *pod = json_string_value(at(p, "metadata.name"));
        const char *node = json_string_value(at(p, "spec.nodeName"));
        const char *want = json_string_value(
            json_object_get(at(p, "spec.nodeSelector"), "kubernetes.io/hostname"));
        ck_assert_msg(want != NULL, "pod %s was not ungated with a hostname by Kueue", pod);
        ck_assert_msg(strcmp(node, want) == 0, "pod %s on %s, Kueue assigned %s", pod, node, want);
        ck_assert_msg(assigned_host(ta, node), "pod %s on %s, outside Kueue's assignment", pod,
                      node);
    }
}

/* for the topology tests: `nodes` kwok nodes of 8 GPUs in the pool <ns>-tas, in blocks of 4
 * nodes (label trainsched.io/kq-block b0, b1, ...) of racks of 2 (trainsched.io/kq-rack b0-r0,
 * b0-r1, ...); a Topology <ns>-tas (block, rack, hostname); a ResourceFlavor <ns>-tas naming it
 * over the pool; ClusterQueue <ns>-tas with `gpus` GPUs on that flavor, and LocalQueue tlq */
static void make_tas_bed(int nodes, int gpus)
{
    char tas[160];
    snprintf(tas, sizeof(tas), "%s-tas", ns);
    for (int n = 0; n < nodes; n++) {
        char extra[200];
        snprintf(extra, sizeof(extra),
                 "trainsched.io/kq-block: b%d, trainsched.io/kq-rack: b%d-r%d, ", n / 4, n / 4,
                 (n / 2) % 2);
        make_node_in(tas, extra);
    }
    create(&topologies, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\n"
                                  "metadata: {name: %s}\n"
                                  "spec:\n"
                                  "  levels:\n"
                                  "  - {nodeLabel: trainsched.io/kq-block}\n"
                                  "  - {nodeLabel: trainsched.io/kq-rack}\n"
                                  "  - {nodeLabel: kubernetes.io/hostname}\n",
                                  tas));
    create(&rflavors, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                                "metadata: {name: %s}\n"
                                "spec: {nodeLabels: {%s: %s}, topologyName: %s}\n",
                                tas, POOL_LABEL, tas, tas));
    make_cq_lq(tas, "tlq", gpus, "");
}

/* Kueue's topology-aware scheduling + coscheduling through the extender. A Topology (block,
 * rack, hostname) and a ResourceFlavor naming it over four kwok nodes in two racks; a queued
 * TrainJob of 3 pods x 4 GPUs whose pod template asks Kueue for one rack. Kueue admits it with
 * a topology assignment, its pods are created gated (kueue.x-k8s.io/topology), Kueue ungates
 * them with a kubernetes.io/hostname nodeSelector each, and trainsched's extender binds the gang
 * whole: every pod on the host Kueue assigned it, inside the assignment. The PodGroup carries
 * the same request (copied by the reconciler) on a topology the extender does not know: the
 * extender sets it aside for Kueue's placement and the PodGroup's Event says so. */
START_TEST(kueue_tas_placement_is_kept_by_the_gang_extender)
{
    struct ext_run er;
    int three = 3;
    json_t *o, *wl, *pods;
    const json_t *ta;

    ext_start(&er);
    make_tas_bed(4, 32);
    create(&common_kube_trainingruntimes,
           gang_runtime("tas", 3, 4,
                        "kueue.x-k8s.io/podset-required-topology: trainsched.io/kq-rack"));
    /* setup's LocalQueue lq points at the ClusterQueue without topology: this one is tlq */
    create_queued_on("t1", "tas", "tlq");
    wl = admitted_with_topology("t1", &ta);
    pods = wait_for(180, pods_bound, "t1", &three, "the 3 pods of t1 bound");
    assert_bound_where_kueue_put_them("t1", &er, ta, pods, 3);
    json_decref(pods);
    json_decref(wl);
    o = wait_for(60, podgroup_event_with, "t1", "Kueue's placement wins",
                 "the PodGroup Event naming Kueue's placement");
    json_decref(o);
    o = wait_for(180, tj_complete, "t1", NULL, "TrainJob t1 Complete");
    json_decref(o);
    ext_stop(&er);
}
END_TEST

/* the pod's value of node label `key`, through the node it is bound to (NULL: none) */
static const char *node_label(json_t *nodes, const char *node, const char *key)
{
    json_t *n = json_object_get(nodes, node);
    if (!n) {
        struct common_error err;
        ck_assert_msg(common_kube_get(admin, &common_kube_nodes, NULL, node, &n, &err) == COMMON_OK,
                      "node %s: %s", node, err.msg);
        json_object_set_new(nodes, node, n);
    }
    const char *v = json_string_value(json_object_get(at(n, "metadata.labels"), key));
    ck_assert_msg(v != NULL, "node %s has no label %s", node, key);
    return v;
}

/* count[key] += 1 in the JSON object counts */
static void count_in(json_t *counts, const char *key)
{
    json_int_t n = json_integer_value(json_object_get(counts, key));
    json_object_set_new(counts, key, json_integer(n + 1));
}

/* every count in counts is a multiple of m (what: for the message) */
static void assert_multiples(const json_t *counts, json_int_t m, const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)counts, k, v)
    {
        ck_assert_msg(json_integer_value(v) % m == 0,
                      "%s %s holds %lld pods, not a multiple of the slice size %lld", what, k,
                      (long long)json_integer_value(v), (long long)m);
    }
}

/* Kueue v0.19's multi-layer topology-aware scheduling (TASMultiLayerTopology, beta and on by
 * default) + coscheduling through the extender. A Topology (block, rack, hostname) over eight
 * kwok nodes of 8 GPUs: two blocks of two racks of two nodes. A queued TrainJob of 8 pods x 4
 * GPUs (a whole block) asks Kueue for one block (podset-required-topology) with racks of 4 pods
 * and hosts of 2 pods inside it (podset-slice-required-topology-constraints). Kueue admits it
 * with a topology assignment; trainsched's extender binds the gang whole, every pod on the host
 * Kueue assigned it: all 8 in one block, 4 per rack, 2 per host, and the pods per host are those
 * of the assignment. */
START_TEST(kueue_multi_layer_tas_block_with_racks_is_kept_by_the_gang_extender)
{
    struct ext_run er;
    int eight = 8;
    size_t i;
    const json_t *p;
    json_t *o, *wl, *pods, *nodes = json_object(), *blocks = json_object(), *racks = json_object(),
                           *hosts = json_object();
    const json_t *ta, *tr;

    ext_start(&er);
    make_tas_bed(8, 64);
    create(&common_kube_trainingruntimes,
           gang_runtime("ml", 8, 4,
                        "kueue.x-k8s.io/podset-required-topology: trainsched.io/kq-block, "
                        "kueue.x-k8s.io/podset-slice-required-topology-constraints: "
                        "'[{\"topology\": \"trainsched.io/kq-rack\", \"size\": 4}, "
                        "{\"topology\": \"kubernetes.io/hostname\", \"size\": 2}]'"));
    create_queued_on("m1", "ml", "tlq");
    wl = admitted_with_topology("m1", &ta);
    /* Kueue read the layers (an older Kueue, or the gate off, drops them) */
    tr = at(wl, "spec.podSets.0.topologyRequest.podsetSliceRequiredTopologyConstraints");
    ck_assert_msg(json_array_size(tr) == 2, "Kueue's Workload has no multi-layer request");
    pods = wait_for(180, pods_bound, "m1", &eight, "the 8 pods of m1 bound");
    assert_bound_where_kueue_put_them("m1", &er, ta, pods, 8);
    json_array_foreach(pods, i, p)
    {
        const char *node = json_string_value(at(p, "spec.nodeName"));
        count_in(blocks, node_label(nodes, node, "trainsched.io/kq-block"));
        count_in(racks, node_label(nodes, node, "trainsched.io/kq-rack"));
        count_in(hosts, node);
    }
    ck_assert_msg(json_object_size(blocks) == 1, "the gang spans %zu blocks",
                  json_object_size(blocks));
    assert_multiples(racks, 4, "rack");
    assert_multiples(hosts, 2, "host");
    json_decref(pods);
    json_decref(wl);
    json_decref(nodes);
    json_decref(blocks);
    json_decref(racks);
    json_decref(hosts);
    o = wait_for(180, tj_complete, "m1", NULL, "TrainJob m1 Complete");
    json_decref(o);
    ext_stop(&er);
}
END_TEST

/* the DeviceClass and logical resource of up.sh's Kueue config (resources.deviceClassMappings) */
#define DRA_CLASS "gpu.e2e.trainsched.io"
#define DRA_RESOURCE "trainsched.io/e2e-gpu"
static const struct common_kube_resource dclasses = {"resource.k8s.io", "v1", "deviceclasses", 0},
                                         claimtpls = {"resource.k8s.io", "v1",
                                                      "resourceclaimtemplates", 1};

/* the Workload of TrainJob `name` once Kueue says it waits for DRA_RESOURCE quota */
static json_t *workload_waits_for_devices(const char *name, const void *arg)
{
    struct want_wl pending = {"QuotaReserved", "False"};
    json_t *wl = workload_cond_is(name, &pending);
    const char *msg = json_string_value(json_object_get(wl_cond(wl, "QuotaReserved"), "message"));
    (void)arg;
    if (msg && strstr(msg, DRA_RESOURCE))
        return wl;
    json_decref(wl);
    return NULL;
}

/* Kueue v0.19 counts DRA devices in quota (KueueDRAIntegration, on by default; the bed maps the
 * DeviceClass gpu.e2e.trainsched.io to the resource trainsched.io/e2e-gpu). A ClusterQueue of
 * 4 such devices; TrainJobs of 2 pods whose pod template claims 2 devices each through a
 * ResourceClaimTemplate: the first is admitted with 4 devices counted in its Workload, the
 * second waits for the device quota, the Workload's message naming the resource. */
START_TEST(dra_devices_count_in_the_queue_quota)
{
    struct want_wl admitted = {"Admitted", "True"};
    struct common_error err;
    char cq[160];
    json_t *wl, *dc;
    const char *used;
    enum common_rc rc;

    dc = e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\n"
                   "metadata: {name: " DRA_CLASS "}\n"
                   "spec: {selectors: [{cel: {expression: \"device.driver == '" DRA_CLASS
                   "'\"}}]}\n");
    rc = common_kube_create(admin, &dclasses, NULL, dc, NULL, NULL, &err);
    ck_assert_msg(rc == COMMON_OK || rc == COMMON_EEXISTS, "DeviceClass: %s", err.msg);
    json_decref(dc);
    create(&claimtpls, e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
                                 "metadata: {name: gpus-2, namespace: %s}\n"
                                 "spec:\n  spec:\n    devices:\n      requests:\n"
                                 "      - name: gpu\n"
                                 "        exactly: {deviceClassName: " DRA_CLASS
                                 ", allocationMode: ExactCount, count: 2}\n",
                                 ns));
    snprintf(cq, sizeof(cq), "%s-dra", ns);
    create(&cqueues, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
                               "metadata: {name: %s}\n"
                               "spec:\n"
                               "  namespaceSelector:\n"
                               "    matchLabels: {kubernetes.io/metadata.name: %s}\n"
                               "  resourceGroups:\n"
                               "  - coveredResources: [cpu, memory, " DRA_RESOURCE "]\n"
                               "    flavors:\n"
                               "    - name: %s\n"
                               "      resources:\n"
                               "      - {name: cpu, nominalQuota: '8'}\n"
                               "      - {name: memory, nominalQuota: 32Gi}\n"
                               "      - {name: " DRA_RESOURCE ", nominalQuota: '4'}\n",
                               cq, ns, ns));
    create(&lqueues, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
                               "metadata: {name: dlq, namespace: %s}\n"
                               "spec: {clusterQueue: %s}\n",
                               ns, cq));
    create(&common_kube_trainingruntimes,
           e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainingRuntime\n"
                     "metadata: {name: dra, namespace: %s}\n"
                     "spec:\n"
                     "  mlPolicy: {numNodes: 2}\n" E2E_RT_NODE_JOB "              spec:\n"
                     "                resourceClaims:\n"
                     "                - {name: gpu, resourceClaimTemplateName: gpus-2}\n"
                     "                containers:\n"
                     "                - name: node\n"
                     "                  image: busybox:1.36\n"
                     "                  command: [sh, -c, 'sleep 1']\n"
                     "                  resources:\n"
                     "                    requests: {cpu: 100m, memory: 64Mi}\n"
                     "                    claims: [{name: gpu}]\n",
                     ns));
    create_queued_on("d1", "dra", "dlq");
    wl = wait_for(90, workload_cond_is, "d1", &admitted, "Workload of d1 Admitted");
    used = json_string_value(json_object_get(
        at(wl, "status.admission.podSetAssignments.0.resourceUsage"), DRA_RESOURCE));
    {
        char *dump = json_dumps(at(wl, "status.admission"), JSON_COMPACT);
        fprintf(stderr, "kueue DRA quota d1: admission %s\n", dump ? dump : "?");
        free(dump);
    }
    ck_assert_msg(used != NULL, "Kueue admitted d1 without counting " DRA_RESOURCE);
    ck_assert_str_eq(used, "4");
    json_decref(wl);
    create_queued_on("d2", "dra", "dlq");
    wl = wait_for(90, workload_waits_for_devices, "d2", NULL,
                  "Workload of d2 waiting for " DRA_RESOURCE " quota");
    fprintf(stderr, "kueue DRA quota d2: %s\n",
            json_string_value(json_object_get(wl_cond(wl, "QuotaReserved"), "message")));
    json_decref(wl);
    wl = get(&common_kube_trainjobs, "d2");
    ck_assert_msg(suspended(wl), "d2 runs without device quota");
    json_decref(wl);
}
END_TEST

/* ---- render's Workload preview against the Workload Kueue creates, field for field ---- */

struct diffs {
    char text[16384];
    size_t len;
    int n;
};

static void diff_add(struct diffs *d, const char *path, const json_t *kueue, const json_t *pv)
{
    char *a = kueue ? json_dumps(kueue, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char *b = pv ? json_dumps(pv, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    int w;
    d->n++;
    if (d->len < sizeof(d->text)) {
        w = snprintf(d->text + d->len, sizeof(d->text) - d->len,
                     "  %s: Kueue's Workload %.300s, render's preview %.300s\n", path,
                     a ? a : "(nothing)", b ? b : "(nothing)");
        d->len += w > 0 ? (size_t)w : 0;
    }
    free(a);
    free(b);
}

/* every path where Kueue's Workload and the preview differ: objects key by key (both ways),
 * arrays item by item */
static void wl_diff(const json_t *kueue, const json_t *pv, const char *path, struct diffs *d)
{
    char sub[1024];
    const char *k;
    json_t *v;
    if (json_is_object(kueue) && json_is_object(pv)) {
        json_object_foreach((json_t *)kueue, k, v)
        {
            snprintf(sub, sizeof(sub), "%s.%s", path, k);
            wl_diff(v, json_object_get(pv, k), sub, d);
        }
        json_object_foreach((json_t *)pv, k, v)
        {
            snprintf(sub, sizeof(sub), "%s.%s", path, k);
            if (!json_object_get(kueue, k))
                diff_add(d, sub, NULL, v);
        }
        return;
    }
    if (json_is_array(kueue) && json_is_array(pv) &&
        json_array_size(kueue) == json_array_size(pv)) {
        for (size_t i = 0; i < json_array_size(kueue); i++) {
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            wl_diff(json_array_get(kueue, i), json_array_get(pv, i), sub, d);
        }
        return;
    }
    if ((kueue || pv) && (!kueue || !pv || !json_equal((json_t *)kueue, (json_t *)pv)))
        diff_add(d, path, kueue, pv);
}

/* the Workload that `trainsched render -f <tj> [--runtime <rt>] --backend kueue -o json`
 * previews for TrainJob tj (as the API server holds it) on runtime rt (NULL: a built-in one);
 * the file holds the WorkloadPriorityClass the TrainJob's label names, when there is one */
static json_t *render_preview(const json_t *tj, const json_t *rt)
{
    const char *wpc =
        json_string_value(json_object_get(at(tj, "metadata.labels"), KUEUE_PRIORITY_LABEL));
    json_t *cls = wpc ? get(&wpcs, wpc) : NULL, *list;
    char tjf[] = "/tmp/ts-kq-tj-XXXXXX", rtf[] = "/tmp/ts-kq-rt-XXXXXX", cmd[1024];
    json_t *in = json_pack("{s:O, s:O, s:{s:O, s:O, s:O}, s:O}", "apiVersion",
                           json_object_get(tj, "apiVersion"), "kind", json_object_get(tj, "kind"),
                           "metadata", "name", at(tj, "metadata.name"), "namespace",
                           at(tj, "metadata.namespace"), "uid", at(tj, "metadata.uid"), "spec",
                           json_object_get(tj, "spec"));
    json_t *out, *items, *wl = NULL, *o;
    json_error_t je;
    FILE *f;
    char *text;
    size_t i;
    int fd;

    ck_assert(in != NULL);
    if (at(tj, "metadata.labels"))
        json_object_set(json_object_get(in, "metadata"), "labels",
                        (json_t *)at(tj, "metadata.labels"));
    if (at(tj, "metadata.annotations"))
        json_object_set(json_object_get(in, "metadata"), "annotations",
                        (json_t *)at(tj, "metadata.annotations"));
    list = json_pack("{s:s, s:s, s:[o]}", "apiVersion", "v1", "kind", "List", "items", in);
    ck_assert(list != NULL);
    if (cls)
        json_array_append_new(json_object_get(list, "items"), cls);
    fd = mkstemp(tjf);
    ck_assert_msg(fd >= 0 && json_dumpfd(list, fd, JSON_INDENT(1)) == 0, "write %s", tjf);
    close(fd);
    json_decref(list);
    if (rt) {
        json_t *r = json_pack(
            "{s:O, s:O, s:{s:O, s:O}, s:O}", "apiVersion", json_object_get(rt, "apiVersion"),
            "kind", json_object_get(rt, "kind"), "metadata", "name", at(rt, "metadata.name"),
            "namespace", at(rt, "metadata.namespace"), "spec", json_object_get(rt, "spec"));
        fd = mkstemp(rtf);
        ck_assert_msg(r && fd >= 0 && json_dumpfd(r, fd, JSON_INDENT(1)) == 0, "write %s", rtf);
        close(fd);
        json_decref(r);
    }
    snprintf(cmd, sizeof(cmd), "%s render -f %s%s%s --backend kueue -o json", TS_BINARY, tjf,
             rt ? " --runtime " : "", rt ? rtf : "");
    f = popen(cmd, "r");
    ck_assert_msg(f != NULL, "%s", cmd);
    out = json_loadf(f, 0, &je);
    ck_assert_msg(pclose(f) == 0 && out, "%s: %s", cmd, je.text);
    unlink(tjf);
    if (rt)
        unlink(rtf);
    items = json_is_array(out) ? out : json_object_get(out, "items");
    json_array_foreach(items, i, o)
    {
        const char *k = json_string_value(json_object_get(o, "kind"));
        if (k && strcmp(k, "Workload") == 0)
            wl = json_incref(o);
    }
    text = json_dumps(out, JSON_COMPACT);
    ck_assert_msg(wl != NULL, "render --backend kueue previewed no Workload: %.500s", text);
    free(text);
    json_decref(out);
    return wl;
}

/* the differences between the preview of TrainJob `name` and the Workload Kueue made for it
 * (the fields Kueue writes: metadata name, namespace, labels, annotations, finalizers, owner
 * references; the whole spec), into d; rt as for render_preview */
static void compare_with_kueue(const char *name, const json_t *rt, struct diffs *d)
{
    static const char *const meta[] = {"name",        "namespace",  "labels",
                                       "annotations", "finalizers", "ownerReferences"};
    json_t *tj = get(&common_kube_trainjobs, name), *wl, *pv;
    char path[256];

    ck_assert_msg(tj != NULL, "TrainJob %s", name);
    wl = wait_for(90, workload_of, name, NULL, "the Workload Kueue makes");
    pv = render_preview(tj, rt);
    for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++) {
        snprintf(path, sizeof(path), "%s: metadata.%s", name, meta[i]);
        wl_diff(json_object_get(json_object_get(wl, "metadata"), meta[i]),
                json_object_get(json_object_get(pv, "metadata"), meta[i]), path, d);
    }
    snprintf(path, sizeof(path), "%s: spec", name);
    wl_diff(json_object_get(wl, "spec"), json_object_get(pv, "spec"), path, d);
    json_decref(pv);
    json_decref(wl);
    json_decref(tj);
}

#define N_BUILTIN E2E_N_BUILTIN_RUNTIMES
#define builtin_runtimes e2e_builtin_runtimes
static const char *const example_trainjobs[] = {"torch-gpu", "jax", "mpi-deepspeed",
                                                "torchtune-lora", "xgboost"};
#define N_EXAMPLE (sizeof(example_trainjobs) / sizeof(example_trainjobs[0]))
/* namespaced runtimes: the pod template annotations of their one trainer job */
static const char *const topology_runtimes[] = {
    "kueue.x-k8s.io/podset-required-topology: example.com/rack, "
    "kueue.x-k8s.io/podset-group-name: g1",
    "kueue.x-k8s.io/podset-required-topology: example.com/block, "
    "kueue.x-k8s.io/podset-slice-required-topology-constraints: "
    "'[{\"topology\": \"example.com/rack\", \"size\": 2}]'",
    "kueue.x-k8s.io/podset-preferred-topology: example.com/rack",
    "kueue.x-k8s.io/podset-required-topology: example.com/block, "
    "kueue.x-k8s.io/podset-slice-required-topology: example.com/rack, "
    "kueue.x-k8s.io/podset-slice-size: '2'",
    "kueue.x-k8s.io/podset-unconstrained-topology: 'true'"};
#define N_TOPO (sizeof(topology_runtimes) / sizeof(topology_runtimes[0]))

/* 29 queued TrainJobs held in a stopped ClusterQueue (Kueue makes their Workloads and admits
 * none): two per built-in runtime (installed as ClusterTrainingRuntimes from manifests/runtimes:
 * the runtime's own settings; 2 nodes with GPUs and a WorkloadPriorityClass), the TrainJobs of
 * examples/, TrainingRuntimes with each of Kueue's topology requests, and one of 18 replicated
 * jobs (Kueue v0.19's most podSets per Workload; v0.17 held 8). For every one,
 * `trainsched render --backend kueue` of the TrainJob previews the Workload Kueue made, field
 * for field: the name, namespace, labels, annotations, finalizers and owner, and the whole spec
 * (queueName, priority, every podSet's name, count, template and topologyRequest). */
START_TEST(render_previews_kueues_workload_field_for_field)
{
    struct common_yaml_docs d;
    struct common_error err;
    struct diffs *df = calloc(1, sizeof(*df));
    char path[1024], tjname[64], high[160];
    size_t n = 0;

    ck_assert(df != NULL);
    snprintf(high, sizeof(high), "%s-high", ns);
    merge_patch(&cqueues, ns, "{\"spec\":{\"stopPolicy\":\"Hold\"}}");
    create(&wpcs, e2e_yamlf("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
                            "metadata: {name: %s}\nvalue: 1000\n",
                            high));
    /* every runtime trainsched has built in is among them */
    for (const struct trainjob_builtin *b = trainjob_builtins; b->name; b++) {
        size_t k = 0;
        while (k < N_BUILTIN && strcmp(builtin_runtimes[k], b->name) != 0)
            k++;
        ck_assert_msg(k < N_BUILTIN, "built-in runtime %s is not covered", b->name);
    }
    e2e_apply_builtin_runtimes(admin);
    for (size_t i = 0; i < N_BUILTIN; i++) {
        snprintf(tjname, sizeof(tjname), "b%zu", i);
        create(&common_kube_trainjobs,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                         "metadata: {name: %s, namespace: %s, labels: {%s: lq}}\n"
                         "spec:\n  runtimeRef: {name: %s}\n",
                         tjname, ns, QUEUE_LABEL, builtin_runtimes[i]));
        snprintf(tjname, sizeof(tjname), "g%zu", i);
        create(&common_kube_trainjobs,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                         "metadata: {name: %s, namespace: %s,\n"
                         "  labels: {%s: lq, kueue.x-k8s.io/priority-class: %s}}\n"
                         "spec:\n"
                         "  runtimeRef: {name: %s, kind: ClusterTrainingRuntime,"
                         " apiGroup: trainer.kubeflow.org}\n"
                         "  trainer:\n"
                         "    numNodes: 2\n"
                         "    resourcesPerNode: {limits: {nvidia.com/gpu: 2}}\n",
                         tjname, ns, QUEUE_LABEL, high, builtin_runtimes[i]));
        n += 2;
    }
    for (size_t i = 0; i < N_EXAMPLE; i++) {
        json_t *tj;
        snprintf(path, sizeof(path), "%s/examples/%s.yaml", TS_SOURCE_DIR, example_trainjobs[i]);
        ck_assert_msg(common_yaml_load_file(path, NULL, &d, &err) == COMMON_OK, "%s", err.msg);
        tj = json_deep_copy(d.docs[0]);
        common_yaml_docs_free(&d);
        snprintf(tjname, sizeof(tjname), "e%zu", i);
        json_object_set_new(json_object_get(tj, "metadata"), "name", json_string(tjname));
        json_object_set_new(json_object_get(tj, "metadata"), "namespace", json_string(ns));
        json_object_set_new(json_object_get(tj, "metadata"), "labels",
                            json_pack("{s:s}", QUEUE_LABEL, "lq"));
        create(&common_kube_trainjobs, tj);
        n++;
    }
    for (size_t i = 0; i < N_TOPO; i++) {
        char rt[32];
        snprintf(rt, sizeof(rt), "topo%zu", i);
        create(&common_kube_trainingruntimes, gang_runtime(rt, 4, 2, topology_runtimes[i]));
        snprintf(tjname, sizeof(tjname), "t%zu", i);
        create(&common_kube_trainjobs, queued_trainjob(tjname, rt, i == 0 ? high : NULL));
        n++;
    }
    {
        /* Kueue v0.19 holds 18 podSets in a Workload (8 before): a runtime of 18 replicated jobs */
        char rt[8192] = "";
        size_t len = 0;
        for (int j = 0; j < 18; j++)
            len += (size_t)snprintf(rt + len, sizeof(rt) - len,
                                    "      - name: j%d\n"
                                    "        template:\n"
                                    "          spec:\n"
                                    "            template:\n"
                                    "              spec:\n"
                                    "                containers:\n"
                                    "                - {name: c, image: busybox:1.36,"
                                    " resources: {requests: {cpu: 10m}}}\n",
                                    j);
        ck_assert_uint_lt(len, sizeof(rt));
        create(&common_kube_trainingruntimes,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
                         "metadata: {name: wide, namespace: %s}\n"
                         "spec:\n  template:\n    spec:\n      replicatedJobs:\n%s",
                         ns, rt));
        create(&common_kube_trainjobs, queued_trainjob("w18", "wide", NULL));
        n++;
    }
    ck_assert_uint_ge(n, 20);
    for (size_t i = 0; i < N_BUILTIN; i++) {
        snprintf(tjname, sizeof(tjname), "b%zu", i);
        compare_with_kueue(tjname, NULL, df);
        snprintf(tjname, sizeof(tjname), "g%zu", i);
        compare_with_kueue(tjname, NULL, df);
    }
    for (size_t i = 0; i < N_EXAMPLE; i++) {
        snprintf(tjname, sizeof(tjname), "e%zu", i);
        compare_with_kueue(tjname, NULL, df);
    }
    for (size_t i = 0; i < N_TOPO; i++) {
        char rt[32];
        json_t *r;
        snprintf(rt, sizeof(rt), "topo%zu", i);
        r = get(&common_kube_trainingruntimes, rt);
        snprintf(tjname, sizeof(tjname), "t%zu", i);
        compare_with_kueue(tjname, r, df);
        json_decref(r);
    }
    {
        json_t *r = get(&common_kube_trainingruntimes, "wide"), *wl;
        compare_with_kueue("w18", r, df);
        wl = workload_of("w18", NULL);
        ck_assert_uint_eq(json_array_size(at(wl, "spec.podSets")), 18);
        json_decref(wl);
        json_decref(r);
    }
    fprintf(stderr,
            "render --backend kueue against Kueue's Workloads: %zu TrainJobs, %d "
            "differences\n%s",
            n, df->n, df->text);
    ck_assert_msg(df->n == 0, "%d differences between render's preview and Kueue's Workloads",
                  df->n);
    free(df);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
    e2e_add_test(s, name, t, setup, teardown, 600);
}

int main(void)
{
    const char *running = getenv("TESTBED_KUEUE_RUNNING");
    const char *require = getenv("TS_REQUIRE_KUEUE");
    Suite *s;
    int failed;

    if (!running || strcmp(running, "1") != 0) {
        if (require && strcmp(require, "1") == 0) {
            fprintf(stderr, "kueue: TS_REQUIRE_KUEUE=1 but the bed runs no Kueue "
                            "(TESTBED_KUEUE_RUNNING is not 1)\n");
            return 1;
        }
        printf("SKIP: the test bed runs no Kueue (start it with TESTBED_KUEUE=1)\n");
        return 0;
    }
    {
        /* the bed's kube-scheduler calls an extender on ext_port (the coscheduling test starts
         * it); pods without the gang resource never reach it. Restored at the end. */
        char dir[] = "/tmp/ts-kueue-sched-XXXXXX", cmd[100];
        ext_port = e2e_free_port_or_exit();
        if (!mkdtemp(dir)) {
            perror(dir);
            return 1;
        }
        if (e2e_sched_extender_up(dir, ext_port, BIND_TIMEOUT_S) != 0)
            return 1;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        (void)system(cmd);
    }
    s = suite_create("kueue");
    add(s, "second_trainjob_waits_for_the_quota_of_the_first",
        second_trainjob_waits_for_the_quota_of_the_first);
    add(s, "higher_priority_evicts_and_the_injected_fields_go",
        higher_priority_evicts_and_the_injected_fields_go);
    add(s, "eviction_with_empty_maps_in_the_runtime_removes_the_injected_fields",
        eviction_with_empty_maps_in_the_runtime_removes_the_injected_fields);
    add(s, "runtime_edited_after_admission_keeps_the_snapshot",
        runtime_edited_after_admission_keeps_the_snapshot);
    add(s, "multikueue_trainjob_is_left_to_multikueue", multikueue_trainjob_is_left_to_multikueue);
    add(s, "queued_coscheduling_trainjob_is_admitted_then_gang_scheduled",
        queued_coscheduling_trainjob_is_admitted_then_gang_scheduled);
    add(s, "kueue_tas_placement_is_kept_by_the_gang_extender",
        kueue_tas_placement_is_kept_by_the_gang_extender);
    add(s, "kueue_multi_layer_tas_block_with_racks_is_kept_by_the_gang_extender",
        kueue_multi_layer_tas_block_with_racks_is_kept_by_the_gang_extender);
    add(s, "dra_devices_count_in_the_queue_quota", dra_devices_count_in_the_queue_quota);
    add(s, "render_previews_kueues_workload_field_for_field",
        render_previews_kueues_workload_field_for_field);
    failed = e2e_run_suite(s);
    if (e2e_sched_ctl("restore") != 0) {
        fprintf(stderr, "could not restore the test bed's kube-scheduler config\n");
        failed++;
    }
    return failed ? 1 : 0;
}
