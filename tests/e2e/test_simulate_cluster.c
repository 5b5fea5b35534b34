/*
 * tests/e2e/test_simulate_cluster.c - `trainsched simulate --from-cluster` and `trainsched
 * explain --what-if` against the test bed (tests/e2e/testbed/up.sh with TESTBED_JOBSET=1
 * TESTBED_KWOK=1; KUBECONFIG from its env file).
 *
 * main() restarts the bed's kube-scheduler with the shipped extender config pointed at an
 * in-process extender and runs the reconciler in-process with the gang marks on, as
 * tests/e2e/test_explain.c does.
 *
 *   the_snapshot_places_the_waiting_gang_where_the_extender_does
 *       3 kwok nodes of 1 CPU: s0, s1 and s2, which a pod bound to it by name fills (the
 *       blocker: it declares no run time, so it runs for --assume-run-time 10h). Gang first (a
 *       coscheduling PodGroup of 2 one-CPU plain pods that declare trainsched.io/sim-run-time
 *       10m: kwok ends the pods of Jobs at once, plain pods keep running) runs on s0 and s1;
 *       TrainJob second (a coscheduling gang of the same two pods) waits. The snapshot predicts
 * that second starts when first's pods end (within 10 min of now) on s0 and s1; explain --what-if
 *       says the same for second. first's pods are then deleted and the extender really places
 * second: on the same nodes, s0 and s1. The nodes are compared one for one: no tie is possible (s2
 * stays full, so the only two nodes with room are the two first frees).
 *       On the way, common_kube_list's item and page hooks (what the snapshot trims and counts
 *       with) over the namespace's 3 pods in pages of 1.
 *   a_forbidden_list_names_the_permission
 *       the namespace's default ServiceAccount (no rights): exit 1 naming list on nodes; bound
 *       cluster-wide to the shipped manifests/rbac/explain-rbac.yaml, it gets a snapshot.
 *   a_cluster_without_the_crds_is_named
 *       through tests/e2e/faultproxy.py hiding /apis/trainer.kubeflow.org: simulate
 *       --from-cluster still answers (exit 0; it says TrainJobs are not served), explain
 *       --what-if exits 1 saying the Trainer CRDs are not installed, as explain does.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/events.h"
#include "common/kube.h"
#include "common/metrics.h"
#include "common/yaml.h"
#include "e2eutil.h"
#include "extender/server.h"
#include "reconciler/reconciler.h"

#define RUN_LABEL "trainsched.io/e2e-run"
#define BIND_TIMEOUT_S 30

static int port;
static char tmpdir[256];
static struct common_kube *kube, *tsk;
static struct common_events *events;
static struct common_metrics *metrics;
static struct e2e_ext served;
static struct rc_reconciler *rec;
static char ns[96], run[32], nodes[3][96], crb[128];

static const struct common_kube_resource clusterroles = {"rbac.authorization.k8s.io", "v1",
                                                         "clusterroles", 0};
static const struct common_kube_resource clusterrolebindings = {"rbac.authorization.k8s.io", "v1",
                                                                "clusterrolebindings", 0};

static void setup(void)
{
    struct common_error err;
    struct extender_server_opts o = {0};
    struct rc_opts ro;

    kube = e2e_client(20000, 0);
    e2e_make_ns(kube, "simcl", ns, sizeof(ns));
    snprintf(run, sizeof(run), "s%lx%lx", (unsigned long)getpid() & 0xffff,
             (unsigned long)time(NULL) & 0xffff);
    events = common_events_create(kube, "e2e-simulate", NULL, &err);
    ck_assert_msg(events != NULL, "%s", err.msg);
    metrics = common_metrics_create();
    ck_assert_ptr_nonnull(metrics);
    o.kube = kube;
    o.events = events;
    o.metrics = metrics;
    o.bind_http_timeout_ms = BIND_TIMEOUT_S * 1000;
    o.default_schedule_timeout_s = 20;
    o.backoff_initial_ms = 2000;
    o.backoff_max_ms = 4000;
    e2e_ext_start(&served, &o, port);
    tsk = e2e_client(20000, 1);
    e2e_rc_opts(&ro, tsk, ns);
    ro.gang_marks = 1;
    rec = e2e_rc_start(&ro);
}

static void teardown(void)
{
    struct common_error err;

    if (rec)
        rc_destroy(rec);
    rec = NULL;
    common_kube_client_destroy(tsk);
    tsk = NULL;
    e2e_ext_stop(&served);
    common_metrics_destroy(metrics);
    common_events_destroy(events);
    (void)e2e_delete_pods_now(kube, ns, NULL);
    for (int i = 0; i < 3; i++)
        if (nodes[i][0])
            common_kube_delete(kube, &common_kube_nodes, NULL, nodes[i], NULL, NULL, NULL, &err);
    if (crb[0])
        common_kube_delete(kube, &clusterrolebindings, NULL, crb, NULL, NULL, NULL, &err);
    e2e_drop_ns(kube, ns);
    common_kube_client_destroy(kube);
}

/* run `trainsched args...` (a shell word list) with kubeconfig kc: the exit status; stdout and
 * stderr into *out and *err (malloc'd) */
static int ts(const char *kc, const char *args, char **out, char **err)
{
    return e2e_trainsched(kc, args, tmpdir, out, err);
}

static void contains(const char *text, const char *want)
{
    ck_assert_msg(text && strstr(text, want) != NULL, "no \"%s\" in:\n%s", want,
                  text ? text : "(null)");
}

static int bed_ready(void)
{
    if (!getenv("TESTBED_JOBSET_RUNNING") || !getenv("TESTBED_KWOK_RUNNING") ||
        strcmp(getenv("TESTBED_JOBSET_RUNNING"), "1") != 0 ||
        strcmp(getenv("TESTBED_KWOK_RUNNING"), "1") != 0) {
        fprintf(stderr, "SKIP: the bed runs no JobSet controller / kwok\n");
        return 0;
    }
    return 1;
}

/* the nodes the pods of ns labelled key=value are bound to, sorted, as "a,b" into buf; how many
 * pods are bound */
static size_t bound_nodes(const char *key, const char *value, char *buf, size_t n)
{
    struct common_kube_list_opts lo = {0};
    struct common_error e;
    char sel[300];
    json_t *pods = NULL, *p;
    const char *v[8];
    size_t i, k = 0;

    snprintf(sel, sizeof(sel), "%s=%s", key, value);
    lo.label_selector = sel;
    ck_assert_msg(common_kube_list(kube, &common_kube_pods, ns, &lo, &pods, NULL, &e) == COMMON_OK,
                  "list pods: %s", e.msg);
    json_array_foreach(pods, i, p)
    {
        const char *node = json_string_value(e2e_at(p, "spec.nodeName"));
        if (node && *node && k < 8)
            v[k++] = node;
    }
    for (size_t a = 1; a < k; a++) /* insertion sort: a few names */
        for (size_t b = a; b > 0 && strcmp(v[b - 1], v[b]) > 0; b--) {
            const char *t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    buf[0] = '\0';
    for (size_t a = 0; a < k; a++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", a ? "," : "", v[a]);
    json_decref(pods);
    return k;
}

/* the simulated nodes of JSON array arr as "a,b" (in name order, as the report lists them) */
static void joined(const json_t *arr, char *buf, size_t n)
{
    const json_t *v;
    size_t i;

    buf[0] = '\0';
    json_array_foreach((json_t *)arr, i, v)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? "," : "", json_string_value(v));
}

/* common_kube_list's hooks, as the snapshot uses them: each item trimmed before it is kept, a
 * call after each page with the items so far */
struct hooks {
    size_t items, pages, last;
};

static void hook_item(void *ctx, json_t *it)
{
    ((struct hooks *)ctx)->items++;
    json_object_del(json_object_get(it, "metadata"), "managedFields");
}

static void hook_page(void *ctx, size_t n)
{
    struct hooks *h = ctx;
    ck_assert_msg(n == h->last + 1 || (n == h->last && n > 0), "page %zu: %zu items after %zu",
                  h->pages, n, h->last); /* pages of 1 (a last one may be empty) */
    h->last = n;
    h->pages++;
}

static void paged_list_hooks(void)
{
    struct hooks h = {0};
    struct common_kube_list_opts lo = {.limit = 1, .item = hook_item, .page = hook_page, .ctx = &h};
    struct common_error e;
    json_t *items = NULL, *it;
    size_t i;

    ck_assert_msg(common_kube_list(kube, &common_kube_pods, ns, &lo, &items, NULL, &e) == COMMON_OK,
                  "%s", e.msg);
    ck_assert_uint_eq(json_array_size(items), 3);
    ck_assert_uint_eq(h.items, 3);
    ck_assert_uint_ge(h.pages, 3);
    json_array_foreach(items, i, it) ck_assert_ptr_null(e2e_at(it, "metadata.managedFields"));
    json_decref(items);
}

static void make_nodes(void)
{
    for (int i = 0; i < 3; i++) {
        snprintf(nodes[i], sizeof(nodes[i]), "simcl-%s-%d", run, i);
        e2e_create(kube, &common_kube_nodes, NULL,
                   e2e_yamlf("apiVersion: v1\nkind: Node\n"
                             "metadata:\n  name: %s\n  labels: {%s: %s}\n"
                             "  annotations: {kwok.x-k8s.io/node: fake}\n"
                             "status:\n  allocatable: {cpu: '1', memory: 64Gi, pods: '110'}\n"
                             "  capacity: {cpu: '1', memory: 64Gi, pods: '110'}\n",
                             nodes[i], RUN_LABEL, run));
    }
}

static void make_runtime_and_nodes(void)
{
    make_nodes();
    e2e_create(
        kube, &common_kube_trainingruntimes, ns,
        e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                  "kind: TrainingRuntime\n"
                  "metadata: {name: rt2, namespace: %s}\n"
                  "spec:\n"
                  "  mlPolicy: {numNodes: 2}\n"
                  "  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 20}}\n" E2E_RT_NODE_JOB
                  "              metadata:\n"
                  "                annotations: {trainsched.io/sim-run-time: 10m}\n"
                  "              spec:\n"
                  "                nodeSelector: {%s: '%s'}\n"
                  "                tolerations: [{key: kwok.x-k8s.io/node, operator: "
                  "Exists, effect: NoSchedule}]\n"
                  "                containers:\n"
                  "                - name: node\n"
                  "                  image: busybox:1.36\n"
                  "                  resources: {requests: {cpu: '1', memory: 64Mi}}\n",
                  ns, RUN_LABEL, run));
}

START_TEST(the_snapshot_places_the_waiting_gang_where_the_extender_does)
{
    const char *kc = getenv("KUBECONFIG");
    char args[600], *out, *err, sim_nodes[300], real[300], first_nodes[300], key[200];
    json_t *report, *j, *second = NULL, *story, *w;
    json_error_t je;
    size_t i;

    if (!bed_ready())
        return;
    make_runtime_and_nodes();
    /* s2 is full: a pod bound to it by name, declaring no run time */
    e2e_create(kube, &common_kube_pods, ns,
               e2e_yamlf("apiVersion: v1\nkind: Pod\nmetadata: {name: blocker, namespace: %s}\n"
                         "spec:\n  nodeName: %s\n"
                         "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: "
                         "NoSchedule}]\n"
                         "  containers: [{name: c, image: busybox:1.36, resources: {requests: "
                         "{cpu: '1'}}}]\n",
                         ns, nodes[2]));
    /* first: a coscheduling gang of plain pods (kwok ends the pods of Jobs at once; these
     * keep running), declaring a run time of 10 min */
    e2e_create(kube, &common_kube_podgroups, ns,
               e2e_yamlf("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                         "metadata: {name: first, namespace: %s}\n"
                         "spec: {minMember: 2, scheduleTimeoutSeconds: 20}\n",
                         ns));
    for (int k = 0; k < 2; k++)
        e2e_create(kube, &common_kube_pods, ns,
                   e2e_yamlf("apiVersion: v1\nkind: Pod\n"
                             "metadata:\n  name: first-%d\n  namespace: %s\n"
                             "  labels: {scheduling.x-k8s.io/pod-group: first}\n"
                             "  annotations: {trainsched.io/sim-run-time: 10m}\n"
                             "spec:\n  nodeSelector: {%s: '%s'}\n"
                             "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, "
                             "effect: NoSchedule}]\n"
                             "  containers: [{name: c, image: busybox:1.36, resources: "
                             "{requests: {cpu: '1'}}}]\n",
                             k, ns, RUN_LABEL, run));
    for (double end = e2e_now_s() + 120; bound_nodes("scheduling.x-k8s.io/pod-group", "first",
                                                     first_nodes, sizeof(first_nodes)) < 2;
         e2e_nap(500))
        ck_assert_msg(e2e_now_s() < end, "TrainJob first was not placed in 120 s");
    snprintf(args, sizeof(args), "%s,%s", nodes[0], nodes[1]);
    ck_assert_str_eq(first_nodes, args); /* s2 is full */
    paged_list_hooks();                  /* blocker, first-0, first-1 */
    e2e_create(kube, &common_kube_trainjobs, ns,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                         "metadata: {name: second, namespace: %s}\n"
                         "spec:\n  runtimeRef: {name: rt2, kind: TrainingRuntime}\n",
                         ns));
    /* second's gang exists and waits: both pods created, none bound */
    for (double end = e2e_now_s() + 90;; e2e_nap(500)) {
        size_t total = 0, b = e2e_bound_pods(kube, ns, "second", &total);
        json_t *pg = e2e_get(kube, &common_kube_podgroups, ns, "second");
        ck_assert_uint_eq(b, 0);
        json_decref(pg);
        if (total == 2 && pg)
            break;
        ck_assert_msg(e2e_now_s() < end, "TrainJob second's 2 pods were not created in 90 s");
    }

    /* the snapshot, simulated */
    ck_assert_int_eq(ts(kc, "simulate --from-cluster --assume-run-time 10h -o json", &out, &err),
                     0);
    contains(err, "simulate: snapshot: nodes: ");
    contains(err, "simulate: snapshot: pods: ");
    report = json_loads(out, 0, &je);
    ck_assert_msg(report != NULL, "-o json is no JSON: %s", je.text);
    snprintf(key, sizeof(key), "%s/second", ns);
    json_array_foreach(json_object_get(report, "jobs"), i, j)
    {
        const char *tj = json_string_value(json_object_get(j, "trainJob"));
        if (tj && strcmp(tj, key) == 0)
            second = j;
    }
    ck_assert_msg(second != NULL, "no simulated job for TrainJob %s", key);
    ck_assert_str_eq(json_string_value(json_object_get(second, "kind")), "PodGroup");
    ck_assert_int_eq(json_integer_value(json_object_get(second, "pods")), 2);
    /* it starts when first's pods end, 10 min after they started: first was bound less than 5
     * min before the snapshot (the waits above are 120 + 90 s), so between 5 and 10 min from
     * now */
    {
        json_t *st = json_object_get(second, "start");
        double s = json_is_integer(st) ? (double)json_integer_value(st) : json_real_value(st);
        ck_assert_msg(json_is_number(st) && s > 300 && s <= 600, "second starts at %g s", s);
    }
    joined(json_object_get(second, "nodes"), sim_nodes, sizeof(sim_nodes));
    ck_assert_str_eq(sim_nodes, first_nodes);
    ck_assert_int_ge(json_integer_value(e2e_at(report, "snapshot.runningPods")), 3);
    free(out);
    free(err);

    /* explain --what-if: the same prediction for TrainJob second */
    snprintf(args, sizeof(args), "explain second -n %s --what-if --assume-run-time 10h -o json",
             ns);
    ck_assert_int_eq(ts(kc, args, &out, &err), 0);
    story = json_loads(out, 0, &je);
    ck_assert_msg(story != NULL, "-o json is no JSON: %s", je.text);
    w = json_object_get(story, "whatIf");
    ck_assert_int_eq(json_is_true(json_object_get(w, "found")), 1);
    joined(json_object_get(w, "nodes"), real, sizeof(real));
    ck_assert_str_eq(real, sim_nodes);
    ck_assert_ptr_nonnull(json_string_value(json_object_get(w, "startTime")));
    json_decref(story);
    free(out);
    free(err);
    snprintf(args, sizeof(args), "explain second -n %s --what-if --assume-run-time 10h", ns);
    ck_assert_int_eq(ts(kc, args, &out, &err), 0);
    contains(out, "What if (simulated from a snapshot taken ");
    snprintf(args, sizeof(args), " on %s, %s\n", nodes[0], nodes[1]);
    contains(out, args);
    free(out);
    free(err);

    /* what the extender really does once first ends */
    for (int k = 0; k < 2; k++) {
        char pod[32];
        snprintf(pod, sizeof(pod), "first-%d", k);
        ck_assert_int_eq(e2e_delete_pods_now(kube, ns, pod), 200);
    }
    for (double end = e2e_now_s() + 120;
         bound_nodes("jobset.sigs.k8s.io/jobset-name", "second", real, sizeof(real)) < 2;
         e2e_nap(500))
        ck_assert_msg(e2e_now_s() < end, "TrainJob second was not placed in 120 s after first");
    ck_assert_str_eq(real, sim_nodes);
    json_decref(report);
}
END_TEST

/* a kubeconfig of the namespace's default ServiceAccount (no rights of its own) */
static void sa_kubeconfig(char *path, size_t n)
{
    char *token = e2e_sa_token(kube, ns, "default", NULL, 3600);
    FILE *f;

    snprintf(path, n, "%s/sa.kubeconfig", tmpdir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\n"
            "clusters: [{name: bed, cluster: {server: '%s', certificate-authority: '%s'}}]\n"
            "users: [{name: sa, user: {token: '%s'}}]\n"
            "contexts: [{name: sa, context: {cluster: bed, user: sa}}]\n"
            "current-context: sa\n",
            getenv("TESTBED_SERVER"), getenv("TESTBED_CA"), token);
    fclose(f);
    free(token);
}

START_TEST(a_forbidden_list_names_the_permission)
{
    struct common_yaml_docs docs;
    struct common_error e;
    struct common_kube_write_opts wo = {.field_manager = "e2e-simulate", .force = 1};
    const char *file = TS_SOURCE_DIR "/manifests/rbac/explain-rbac.yaml";
    char kc[320], *out, *err;

    if (!bed_ready())
        return;
    make_nodes(); /* a bed of no other node: the snapshot needs one */
    sa_kubeconfig(kc, sizeof(kc));
    ck_assert_int_eq(ts(kc, "simulate --from-cluster", &out, &err), 1);
    contains(err, "simulate: cannot list nodes in all namespaces: the account needs list on "
                  "nodes (docs/explain.md lists the read-only ClusterRole trainsched-explain)");
    free(out);
    free(err);
    /* the shipped ClusterRole, bound cluster-wide: the whole snapshot (RBAC caches take a
     * moment: up to 20 s) */
    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(common_kube_apply(kube, &clusterroles, NULL, docs.docs[0], &wo, NULL, &e) ==
                      COMMON_OK,
                  "%s", e.msg);
    common_yaml_docs_free(&docs);
    snprintf(crb, sizeof(crb), "simcl-%s", run);
    e2e_create(kube, &clusterrolebindings, NULL,
               e2e_yamlf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
                         "metadata: {name: %s}\n"
                         "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, "
                         "name: trainsched-explain}\n"
                         "subjects: [{kind: ServiceAccount, name: default, namespace: %s}]\n",
                         crb, ns));
    for (double end = e2e_now_s() + 20;; e2e_nap(500)) {
        int st = ts(kc, "simulate --from-cluster", &out, &err);
        if (st == 0)
            break;
        ck_assert_msg(e2e_now_s() < end, "bound to trainsched-explain, simulate exits %d:\n%s", st,
                      err);
        free(out);
        free(err);
    }
    contains(err, "simulate: snapshot: resourceslices.resource.k8s.io: ");
    contains(err, "simulate: snapshot: clustertrainingruntimes.trainer.kubeflow.org: ");
    contains(out, "Snapshot: taken ");
    free(out);
    free(err);
}
END_TEST

START_TEST(a_cluster_without_the_crds_is_named)
{
    char dir[300], kc[340], args[300], *out, *err;
    pid_t pid = 0;
    int pport = 0, control = 0;
    FILE *f;

    if (!bed_ready())
        return;
    make_nodes(); /* a bed of no other node: the snapshot needs one */
    snprintf(dir, sizeof(dir), "%s/proxy", tmpdir);
    ck_assert_int_eq(mkdir(dir, 0700) == 0 || errno == EEXIST, 1);
    e2e_proxy_start(dir, &pid, &pport, &control);
    snprintf(kc, sizeof(kc), "%s/proxy.kubeconfig", tmpdir);
    f = fopen(kc, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\n"
            "clusters: [{name: p, cluster: {server: 'https://127.0.0.1:%d', "
            "certificate-authority: '%s'}}]\n"
            "users: [{name: none, user: {}}]\n"
            "contexts: [{name: p, context: {cluster: p, user: none}}]\n"
            "current-context: p\n",
            pport, getenv("TESTBED_CA"));
    fclose(f);
    json_decref(e2e_proxy_ctl(control, "/hide?prefix=/apis/trainer.kubeflow.org"));
    ck_assert_int_eq(ts(kc, "simulate --from-cluster", &out, &err), 0);
    contains(err, "simulate: snapshot: trainjobs.trainer.kubeflow.org: not served by this cluster "
                  "(its CRDs are not installed): none read");
    free(out);
    free(err);
    snprintf(args, sizeof(args), "explain nope -n %s --what-if", ns);
    ck_assert_int_eq(ts(kc, args, &out, &err), 1);
    contains(err, "the cluster does not serve trainjobs.trainer.kubeflow.org/v1alpha1: Kubeflow "
                  "Trainer's CRDs are not installed");
    free(out);
    free(err);
    json_decref(e2e_proxy_ctl(control, "/unhide"));
    e2e_proxy_stop(&pid);
}
END_TEST

int main(void)
{
    char cmd[400];
    int failed;
    Suite *s = suite_create("trainsched simulate --from-cluster on the bed");

    if (!getenv("KUBECONFIG")) {
        fprintf(stderr, "KUBECONFIG is not set: start the test bed first\n");
        return 1;
    }
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/ts-simcl-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror(tmpdir);
        return 1;
    }
    port = e2e_free_port_or_exit();
    e2e_add_test(s, "snapshot", the_snapshot_places_the_waiting_gang_where_the_extender_does, setup,
                 teardown, 400);
    e2e_add_test(s, "forbidden", a_forbidden_list_names_the_permission, setup, teardown, 400);
    e2e_add_test(s, "no-crds", a_cluster_without_the_crds_is_named, setup, teardown, 400);
    failed = e2e_run_with_extender(s, port, BIND_TIMEOUT_S);
    if (!failed) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        (void)system(cmd);
    } else {
        fprintf(stderr, "logs kept in %s\n", tmpdir);
    }
    return failed ? 1 : 0;
}
