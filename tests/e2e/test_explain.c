/*
 * tests/e2e/test_explain.c - `trainsched explain` against the test bed (tests/e2e/testbed/up.sh
 * with TESTBED_JOBSET=1 TESTBED_KWOK=1; KUBECONFIG from its env file).
 *
 * main() restarts the bed's kube-scheduler with the shipped extender config pointed at an
 * in-process extender (as tests/e2e/test_extender_flow.c does), and restores it afterwards.
 * The reconciler runs in-process as trainsched's ServiceAccount with the gang marks on, so the
 * JobSet's pods reach the extender without the pod webhook.
 *
 *   a_gang_that_cannot_fit_is_explained
 *       2 kwok nodes of 1 CPU, a coscheduling TrainJob of 3 pods of 1 CPU: the gang waits (the
 *       extender's GangWaiting Event: only 2 of the 3 pods fit); `trainsched explain` (the real
 *       binary) exits 0, its text names the cause (quorum or minResources, whichever the
 *       extender reported) and its numbers, its -o json carries
 *       the same (wait.cause, wait.numbers.fit/need, unblock, gang counts, backend and why);
 *       an unknown TrainJob exits 2 naming namespace/name; an account without read rights
 *       (the namespace's default ServiceAccount) exits 1 naming the verb and the resource;
 *       bound to the shipped manifests/rbac/explain-rbac.yaml it gets the whole answer.
 *       The wait is read from the PodGroup's verdict annotation trainsched.io/verdict (the
 *       test asserts the extender wrote it), the Events by regarding.name still list the
 *       extender's GangWaiting.
 *   a_cluster_without_the_trainjob_crd_is_named
 *       through tests/e2e/faultproxy.py hiding /apis/trainer.kubeflow.org: exit 1 saying the
 *       Trainer CRDs are not installed; unhidden, the same name exits 2 (no such TrainJob); a
 *       TrainJob that exists: every Event list in the proxy's record of requests has the
 *       field selector regarding.name (no list of the whole namespace's Events).
 *   a_gang_waiting_for_a_rack_is_explained
 *       4 kwok nodes of 1 CPU, 2 per rack; 3 one-CPU pods asking for one rack: cause topology,
 *       level, need 3, the largest rack and its room 2, "room for 2 of 3 (1 short)".
 *   a_gang_waiting_for_devices_is_explained
 *       2 kwok nodes with a ResourceSlice of 4 GPUs each; 3 pods claiming 4 GPUs each: cause
 *       dra, 2 of the 3 fit with their devices; the pods' 3 claims, request gpu of 4 devices of
 *       this run's DeviceClass (numbers.claims).
 *   a_gang_in_backoff_after_a_timeout_is_explained (an extender backing off 60 s)
 *       3 pods created gated, 2 ungated: their binds held, the gang times out after 5 s: cause
 *       timeout, 2 of minMember 3 held, backoff 60 s (failure 1), backoffUntil in the verdict and
 *       the seconds left (1..60) in the story.
 * Every explain run is echoed to stderr (docs/explain-examples.md shows these outputs).
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
#include "common/kubeconfig.h"
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
static char ns[96], run[32];
#define MAX_NODES 8
static char nodes[MAX_NODES][96];
static int n_nodes;
static char cls[128]; /* the DRA case's DeviceClass, "" when none */
/* the extender's backoff after a failed attempt: short, long in the backoff case */
static int64_t backoff_ms = 2000;

#define BLOCK_LABEL "e2e.trainsched.io/block"
#define RACK_LABEL "e2e.trainsched.io/rack"
#define DRIVER "gpu.example.com"
/* the extender knows one topology; only gangs that ask for a level use it */
static const char *const topologies[] = {"default=" BLOCK_LABEL "," RACK_LABEL};
static const struct common_kube_resource r_slices = {"resource.k8s.io", "v1", "resourceslices", 0};
static const struct common_kube_resource r_classes = {"resource.k8s.io", "v1", "deviceclasses", 0};

static void setup(void)
{
    struct common_error err;
    struct extender_server_opts o = {0};
    struct rc_opts ro;

    kube = e2e_client(20000, 0);
    n_nodes = 0;
    cls[0] = '\0';
    e2e_make_ns(kube, "explain", ns, sizeof(ns));
    snprintf(run, sizeof(run), "x%lx%lx", (unsigned long)getpid() & 0xffff,
             (unsigned long)time(NULL) & 0xffff);
    events = common_events_create(kube, "e2e-explain", NULL, &err);
    ck_assert_msg(events != NULL, "%s", err.msg);
    metrics = common_metrics_create();
    ck_assert_ptr_nonnull(metrics);
    o.kube = kube;
    o.events = events;
    o.metrics = metrics;
    o.bind_http_timeout_ms = BIND_TIMEOUT_S * 1000;
    o.default_schedule_timeout_s = 20;
    o.backoff_initial_ms = backoff_ms;
    o.backoff_max_ms = 2 * backoff_ms;
    o.topologies = topologies;
    o.n_topologies = 1;
    e2e_ext_start(&served, &o, port);
    tsk = e2e_client(20000, 1);
    e2e_rc_opts(&ro, tsk, ns);
    ro.gang_marks = 1; /* this bed's kube-scheduler calls the extender */
    rec = e2e_rc_start(&ro);
}

/* the backoff case: a backoff long enough to be seen with time left */
static void setup_long_backoff(void)
{
    backoff_ms = 60000;
    setup();
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
    for (int i = 0; i < n_nodes; i++) {
        char slice[160];
        snprintf(slice, sizeof(slice), "%s-gpus", nodes[i]);
        if (cls[0])
            common_kube_delete(kube, &r_slices, NULL, slice, NULL, NULL, NULL, &err);
        common_kube_delete(kube, &common_kube_nodes, NULL, nodes[i], NULL, NULL, NULL, &err);
    }
    if (cls[0])
        common_kube_delete(kube, &r_classes, NULL, cls, NULL, NULL, NULL, &err);
    e2e_drop_ns(kube, ns);
    common_kube_client_destroy(kube);
}

static int explain(const char *kc, const char *args, char **out, char **err)
{
    return e2e_explain(kc, args, tmpdir, out, err);
}

static const struct common_kube_resource clusterroles = {"rbac.authorization.k8s.io", "v1",
                                                         "clusterroles", 0};
static const struct common_kube_resource rolebindings = {"rbac.authorization.k8s.io", "v1",
                                                         "rolebindings", 1};

/* the shipped manifests/rbac/explain-rbac.yaml, applied (server-side, so a second run finds it) */
static void apply_explain_role(void)
{
    struct common_yaml_docs docs;
    struct common_error err;
    struct common_kube_write_opts wo = {.field_manager = "e2e-explain", .force = 1};
    const char *file = TS_SOURCE_DIR "/manifests/rbac/explain-rbac.yaml";

    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &err) == COMMON_OK, "%s: %s", file,
                  err.msg);
    ck_assert_uint_eq(docs.n, 1);
    ck_assert_msg(common_kube_apply(kube, &clusterroles, NULL, docs.docs[0], &wo, NULL, &err) ==
                      COMMON_OK,
                  "%s: %s", file, err.msg);
    common_yaml_docs_free(&docs);
}

static void contains(const char *text, const char *want)
{
    ck_assert_msg(strstr(text, want) != NULL, "no \"%s\" in:\n%s", want, text);
}

/* a kwok node of cpu CPUs with this run's label and the labels of extra (a YAML flow-map body
 * such as "a: b, " or ""); its index in nodes[] */
static int make_node(int cpu, const char *extra)
{
    ck_assert_int_lt(n_nodes, MAX_NODES);
    snprintf(nodes[n_nodes], sizeof(nodes[0]), "explain-%s-%d", run, n_nodes);
    e2e_create(kube, &common_kube_nodes, NULL,
               e2e_yamlf("apiVersion: v1\nkind: Node\n"
                         "metadata:\n  name: %s\n  labels: {%s%s: %s}\n"
                         "  annotations: {kwok.x-k8s.io/node: fake}\n"
                         "status:\n  allocatable: {cpu: '%d', memory: 64Gi, pods: '110'}\n"
                         "  capacity: {cpu: '%d', memory: 64Gi, pods: '110'}\n",
                         nodes[n_nodes], extra, RUN_LABEL, run, cpu, cpu));
    return n_nodes++;
}

/* TrainingRuntime name: numNodes pods of 1 CPU on this run's kwok nodes, the coscheduling
 * backend with scheduleTimeoutSeconds timeout_s; meta is the pod template's metadata (a YAML
 * flow map), more are extra pod spec lines (indented by 16 spaces, "" for none); claim: the
 * container uses the pod's ResourceClaim "gpu" */
static void make_runtime(const char *name, int num_nodes, int timeout_s, const char *meta,
                         const char *more, int claim)
{
    e2e_create(
        kube, &common_kube_trainingruntimes, ns,
        e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                  "kind: TrainingRuntime\n"
                  "metadata: {name: %s, namespace: %s}\n"
                  "spec:\n"
                  "  mlPolicy: {numNodes: %d}\n"
                  "  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: %d}}\n" E2E_RT_NODE_JOB
                  "              metadata: %s\n"
                  "              spec:\n"
                  "                nodeSelector: {%s: '%s'}\n"
                  "                tolerations: [{key: kwok.x-k8s.io/node, operator: "
                  "Exists, effect: NoSchedule}]\n"
                  "%s"
                  "                containers:\n"
                  "                - name: node\n"
                  "                  image: busybox:1.36\n"
                  "                  resources: {requests: {cpu: '1', memory: 64Mi}%s}\n",
                  name, ns, num_nodes, timeout_s, meta, RUN_LABEL, run, more,
                  claim ? ", claims: [{name: gpu}]" : ""));
}

/* TrainJob name of TrainingRuntime runtime (e2e_create retries Kueue's cache-lag refusal) */
static void make_trainjob(const char *name, const char *runtime)
{
    e2e_create(kube, &common_kube_trainjobs, ns,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                         "metadata: {name: %s, namespace: %s}\n"
                         "spec:\n  runtimeRef: {name: %s, kind: TrainingRuntime}\n",
                         name, ns, runtime));
}

/* 1 when text holds one of the '|'-separated alternatives of want */
static int has_any(const char *text, const char *want)
{
    char alt[512];

    while (text && *want) {
        size_t n = strcspn(want, "|");
        snprintf(alt, sizeof(alt), "%.*s", (int)n, want);
        if (strstr(text, alt))
            return 1;
        want += n + (want[n] == '|');
    }
    return 0;
}

/* the extender's verdict annotation on PodGroup pg once its message holds want (or one of its
 * '|'-separated alternatives) within secs, parsed; fails the test naming what it last saw */
static json_t *wait_verdict(const char *pg, const char *want, double secs)
{
    char last[2048] = "(no PodGroup)";
    double end = e2e_now_s() + secs;

    for (;; e2e_nap(500)) {
        json_t *o = e2e_get(kube, &common_kube_podgroups, ns, pg), *v = NULL;
        const char *text = json_string_value(
            json_object_get(e2e_at(o, "metadata.annotations"), "trainsched.io/verdict"));
        if (o)
            snprintf(last, sizeof(last), "%s", text ? text : "(no verdict annotation)");
        v = text ? json_loads(text, 0, NULL) : NULL;
        json_decref(o);
        if (v && has_any(json_string_value(json_object_get(v, "message")), want)) {
            fprintf(stderr, "PodGroup %s trainsched.io/verdict: %s\n", pg, last);
            return v;
        }
        json_decref(v);
        ck_assert_msg(e2e_now_s() < end, "PodGroup %s: no verdict with \"%s\" in %.0f s; last: %s",
                      pg, want, secs, last);
    }
}

/* explain name as text (*text, malloc'd) and as JSON (returned): both exit 0 */
static json_t *story_of(const char *name, char **text)
{
    const char *kc = getenv("KUBECONFIG");
    char args[300], *out, *err;
    json_error_t je;
    json_t *story;

    snprintf(args, sizeof(args), "%s -n %s", name, ns);
    ck_assert_int_eq(explain(kc, args, text, &err), 0);
    free(err);
    snprintf(args, sizeof(args), "%s -n %s -o json", name, ns);
    ck_assert_int_eq(explain(kc, args, &out, &err), 0);
    story = json_loads(out, 0, &je);
    ck_assert_msg(story != NULL, "-o json is no JSON: %s", je.text);
    free(out);
    free(err);
    return story;
}

static json_int_t num(const json_t *story, const char *key)
{
    const json_t *v = json_object_get(e2e_at(story, "wait.numbers"), key);
    ck_assert_msg(json_is_integer(v), "wait.numbers.%s is no integer", key);
    return json_integer_value(v);
}

static const char *numstr(const json_t *story, const char *key)
{
    const char *v = json_string_value(json_object_get(e2e_at(story, "wait.numbers"), key));
    ck_assert_msg(v != NULL, "wait.numbers.%s is no string", key);
    return v;
}

static int jobset_and_kwok(void)
{
    if (!getenv("TESTBED_JOBSET_RUNNING") || !getenv("TESTBED_KWOK_RUNNING") ||
        strcmp(getenv("TESTBED_JOBSET_RUNNING"), "1") != 0 ||
        strcmp(getenv("TESTBED_KWOK_RUNNING"), "1") != 0) {
        fprintf(stderr, "SKIP: the bed runs no JobSet controller / kwok\n");
        return 0;
    }
    return 1;
}

START_TEST(a_gang_that_cannot_fit_is_explained)
{
    const char *kc = getenv("KUBECONFIG");
    char args[400], *out, *err, *note = NULL, nokc[320];
    int quorum;
    json_error_t je;
    json_t *story, *w, *g, *verdict;
    char *token;
    FILE *f;

    if (!getenv("TESTBED_JOBSET_RUNNING") || !getenv("TESTBED_KWOK_RUNNING") ||
        strcmp(getenv("TESTBED_JOBSET_RUNNING"), "1") != 0 ||
        strcmp(getenv("TESTBED_KWOK_RUNNING"), "1") != 0) {
        fprintf(stderr, "SKIP: the bed runs no JobSet controller / kwok\n");
        return;
    }
    for (int i = 0; i < 2; i++)
        make_node(1, "");
    e2e_create(
        kube, &common_kube_trainingruntimes, ns,
        e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                  "kind: TrainingRuntime\n"
                  "metadata: {name: rt3, namespace: %s}\n"
                  "spec:\n"
                  "  mlPolicy: {numNodes: 3}\n"
                  "  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 20}}\n" E2E_RT_NODE_JOB
                  "              spec:\n"
                  "                nodeSelector: {%s: '%s'}\n"
                  "                tolerations: [{key: kwok.x-k8s.io/node, operator: "
                  "Exists, effect: NoSchedule}]\n"
                  "                containers:\n"
                  "                - name: node\n"
                  "                  image: busybox:1.36\n"
                  "                  resources: {requests: {cpu: '1', memory: 64Mi}}\n",
                  ns, RUN_LABEL, run));
    make_trainjob("waits", "rt3");
    /* the extender says why the gang waits: 2 nodes of 1 CPU hold 2 of the 3 pods */
    for (double end = e2e_now_s() + 90; !note; e2e_nap(500)) {
        json_t *pg = e2e_get(kube, &common_kube_podgroups, ns, "waits");
        /* which of the two the extender reports first depends on its cache: the gang's
         * minResources against the cluster's free CPU (seen in CI, where the bed's other nodes
         * are gone or full), or the per-pod fit (seen on a fresh bed); both are true here */
        if (pg &&
            !(note = e2e_event_note(kube, ns, "waits", "GangWaiting", "only 2 of the 3 pods")))
            note = e2e_event_note(kube, ns, "waits", "GangWaiting", "minResources needs cpu 3");
        json_decref(pg);
        if (!note && e2e_now_s() >= end) {
            /* say what explain sees before failing */
            snprintf(args, sizeof(args), "waits -n %s", ns);
            (void)explain(kc, args, &out, &err);
            ck_abort_msg("no GangWaiting Event \"only 2 of the 3 pods\" or \"minResources needs "
                         "cpu 3\" on PodGroup waits in 90 s");
        }
    }
    fprintf(stderr, "GangWaiting: %s\n", note);
    free(note);
    /* the extender wrote its verdict on the PodGroup too, where it outlives the Event; explain
     * reads it first, so the cause asserted below is the verdict's */
    verdict = wait_verdict("waits", "only 2 of the 3 pods|minResources needs cpu 3", 30);
    quorum = strstr(json_string_value(json_object_get(verdict, "message")),
                    "only 2 of the 3 pods") != NULL;
    ck_assert_str_eq(json_string_value(json_object_get(verdict, "reason")), "GangWaiting");
    ck_assert_ptr_nonnull(json_string_value(json_object_get(verdict, "since")));
    json_decref(verdict);
    ck_assert_uint_eq(e2e_bound_pods(kube, ns, "waits", NULL), 0);

    snprintf(args, sizeof(args), "waits -n %s", ns);
    ck_assert_int_eq(explain(kc, args, &out, &err), 0);
    contains(out, "Backend: coscheduling, because the runtime's spec.podGroupPolicy.coscheduling");
    contains(out, "Gang PodGroup waits: minMember 3: 3 created, 0 gated, 0 bound, 0 running");
    if (quorum) {
        contains(out, "Waiting (quorum): gang ");
        contains(out, "only 2 of the 3 pods it needs fit at once");
        contains(out, "Would unblock: needs room for 1 more pod(s) at once: 2 of the 3 fit");
    } else {
        contains(out, "Waiting (minResources): gang ");
        contains(out, "minResources needs cpu 3, the cluster has 2 free");
        contains(out, "Would unblock: needs 3 cpu free at once; the cluster has 2");
    }
    /* the verdict from the PodGroup's annotation; the Events (read by regarding.name) still
     * list the extender's GangWaiting */
    contains(out, "  from PodGroup waits annotation trainsched.io/verdict (since ");
    contains(out, "GangWaiting PodGroup/waits");
    free(out);
    free(err);

    snprintf(args, sizeof(args), "waits -n %s -o json", ns);
    ck_assert_int_eq(explain(kc, args, &out, &err), 0);
    story = json_loads(out, 0, &je);
    ck_assert_msg(story != NULL, "-o json is no JSON: %s", je.text);
    w = json_object_get(story, "wait");
    if (quorum) {
        ck_assert_str_eq(json_string_value(json_object_get(w, "cause")), "quorum");
        ck_assert_int_eq(json_integer_value(e2e_at(w, "numbers.fit")), 2);
        ck_assert_int_eq(json_integer_value(e2e_at(w, "numbers.need")), 3);
        contains(json_string_value(json_object_get(story, "unblock")),
                 "needs room for 1 more pod(s)");
    } else {
        ck_assert_str_eq(json_string_value(json_object_get(w, "cause")), "minResources");
        ck_assert_str_eq(json_string_value(e2e_at(w, "numbers.resource")), "cpu");
        ck_assert_str_eq(json_string_value(e2e_at(w, "numbers.need")), "3");
        ck_assert_str_eq(json_string_value(e2e_at(w, "numbers.free")), "2");
        contains(json_string_value(json_object_get(story, "unblock")), "needs 3");
    }
    ck_assert_str_eq(json_string_value(e2e_at(story, "backend.name")), "coscheduling");
    ck_assert_str_eq(json_string_value(e2e_at(story, "backend.source")), "podGroupPolicy");
    g = json_array_get(json_object_get(story, "gangs"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(g, "created")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(g, "bound")), 0);
    json_decref(story);
    free(out);
    free(err);

    /* an unknown TrainJob: exit 2 naming it */
    snprintf(args, sizeof(args), "nope -n %s", ns);
    ck_assert_int_eq(explain(kc, args, &out, &err), 2);
    snprintf(args, sizeof(args), "TrainJob %s/nope not found", ns);
    contains(err, args);
    free(out);
    free(err);

    /* an account without read rights: exit 1 naming the verb and the resource */
    token = e2e_sa_token(kube, ns, "default", NULL, 3600);
    snprintf(nokc, sizeof(nokc), "%s/noaccess.kubeconfig", tmpdir);
    f = fopen(nokc, "w");
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
    snprintf(args, sizeof(args), "waits -n %s", ns);
    ck_assert_int_eq(explain(nokc, args, &out, &err), 1);
    snprintf(args, sizeof(args),
             "cannot get trainjobs.trainer.kubeflow.org in namespace %s: the account needs get on "
             "trainjobs.trainer.kubeflow.org",
             ns);
    contains(err, args);
    free(out);
    free(err);

    /* the shipped read-only ClusterRole is enough: the same account, bound to it, gets the
     * whole answer with nothing it could not read (RBAC caches take a moment: up to 20 s) */
    apply_explain_role();
    e2e_create(kube, &rolebindings, ns,
               e2e_yamlf("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
                         "metadata: {name: explain, namespace: %s}\n"
                         "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, "
                         "name: trainsched-explain}\n"
                         "subjects: [{kind: ServiceAccount, name: default, namespace: %s}]\n",
                         ns, ns));
    snprintf(args, sizeof(args), "waits -n %s", ns);
    for (double end = e2e_now_s() + 20;; e2e_nap(500)) {
        int st = explain(nokc, args, &out, &err);
        int whole = st == 0 && !strstr(out, "cannot list") && !strstr(out, "could not be");
        if (whole)
            break;
        ck_assert_msg(e2e_now_s() < end,
                      "bound to trainsched-explain, explain still exits %d or misses reads:\n%s%s",
                      st, out, err);
        free(out);
        free(err);
    }
    contains(out, quorum ? "Waiting (quorum): gang " : "Waiting (minResources): gang ");
    contains(out, "Runtime: TrainingRuntime rt3\n");
    free(out);
    free(err);
}
END_TEST

/* 4 kwok nodes of 1 CPU, two per rack; a TrainJob of 3 one-CPU pods asking Kueue-style for
 * one rack: no rack has room for 3, the largest has room for 2 */
START_TEST(a_gang_waiting_for_a_rack_is_explained)
{
    char *out, want[300];
    json_t *story, *v;

    if (!jobset_and_kwok())
        return;
    for (int i = 0; i < 4; i++) {
        char labels[200];
        snprintf(labels, sizeof(labels), "%s: b0, %s: r%d, ", BLOCK_LABEL, RACK_LABEL, i % 2);
        make_node(1, labels);
    }
    make_runtime("racked", 3, 20,
                 "{annotations: {kueue.x-k8s.io/podset-required-topology: " RACK_LABEL "}}", "", 0);
    make_trainjob("racked", "racked");
    v = wait_verdict("racked", "required topology: no " RACK_LABEL " domain has room", 90);
    json_decref(v);
    ck_assert_uint_eq(e2e_bound_pods(kube, ns, "racked", NULL), 0);

    story = story_of("racked", &out);
    contains(out, "Waiting (topology): ");
    contains(out,
             "no " RACK_LABEL " domain has room for the 3 pods the gang needs; the largest, b0/r");
    contains(out, ", has room for 2");
    contains(out, "  from PodGroup racked annotation trainsched.io/verdict (since ");
    contains(out, "Would unblock: needs room for 3 pods in one " RACK_LABEL
                  " domain; the largest, b0/r");
    contains(out, "has room for 2 of 3 (1 short)");
    ck_assert_str_eq(json_string_value(e2e_at(story, "wait.cause")), "topology");
    ck_assert_str_eq(numstr(story, "level"), RACK_LABEL);
    ck_assert_int_eq(num(story, "need"), 3);
    ck_assert_int_eq(num(story, "largestRoom"), 2);
    snprintf(want, sizeof(want), "the largest, %s, has room for 2 of 3", numstr(story, "largest"));
    contains(json_string_value(json_object_get(story, "unblock")), want);
    json_decref(story);
    free(out);
}
END_TEST

/* 2 kwok nodes, each with a ResourceSlice of 4 GPUs (driver gpu.example.com); a TrainJob of 3
 * pods each claiming 4 GPUs of this run's DeviceClass: 2 of the 3 fit with their devices */
START_TEST(a_gang_waiting_for_devices_is_explained)
{
    char *out, want[300];
    json_t *story, *v;
    const json_t *cl;

    if (!jobset_and_kwok())
        return;
    snprintf(cls, sizeof(cls), "gpu-%s.example.com", run);
    e2e_device_class(kube, cls, DRIVER);
    e2e_claim_template(kube, ns, "gpu-4", cls, 4);
    for (int i = 0; i < 2; i++) {
        int k = make_node(8, "");
        json_t *slice = e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\n"
                                  "metadata: {name: %s-gpus}\n"
                                  "spec:\n  driver: %s\n  nodeName: %s\n"
                                  "  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n",
                                  nodes[k], DRIVER, nodes[k], nodes[k]);
        json_t *devs = json_array();
        for (int d = 0; d < 4; d++) {
            char dn[16];
            snprintf(dn, sizeof(dn), "gpu-%d", d);
            json_array_append_new(devs, json_pack("{s:s, s:{s:{s:s}}}", "name", dn, "attributes",
                                                  "productName", "string", "h100"));
        }
        json_object_set_new(json_object_get(slice, "spec"), "devices", devs);
        e2e_create(kube, &r_slices, NULL, slice);
    }
    make_runtime("gpus", 3, 20, "{}",
                 "                resourceClaims: [{name: gpu, resourceClaimTemplateName: "
                 "gpu-4}]\n",
                 1);
    make_trainjob("gpus", "gpus");
    v = wait_verdict("gpus", "ResourceClaim", 90);
    json_decref(v);
    ck_assert_uint_eq(e2e_bound_pods(kube, ns, "gpus", NULL), 0);

    story = story_of("gpus", &out);
    contains(out, "Waiting (dra): ");
    contains(out, "  from PodGroup gpus annotation trainsched.io/verdict (since ");
    ck_assert_str_eq(json_string_value(e2e_at(story, "wait.cause")), "dra");
    contains(out, "Would unblock: needs devices for 1 more pod(s) at once: 2 of the 3 fit");
    /* the pods' ResourceClaims: one request of 4 devices of this run's class per pod */
    snprintf(want, sizeof(want), "; request \"gpu\" of class %s: 4 device(s) per claim, ", cls);
    contains(out, want);
    ck_assert_int_eq(num(story, "fit"), 2);
    ck_assert_int_eq(num(story, "need"), 3);
    cl = json_array_get(e2e_at(story, "wait.numbers.claims"), 0);
    ck_assert_msg(cl != NULL, "no wait.numbers.claims");
    ck_assert_str_eq(json_string_value(json_object_get(cl, "request")), "gpu");
    ck_assert_str_eq(json_string_value(json_object_get(cl, "deviceClass")), cls);
    ck_assert_int_eq(json_integer_value(json_object_get(cl, "devices")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(cl, "claims")), 3);
    json_decref(story);
    free(out);
}
END_TEST

/* 3 kwok nodes of 1 CPU; a TrainJob of 3 pods created behind a scheduling gate, two ungated:
 * their binds are held, the third never comes, the gang times out after 5 s and backs off
 * 60 s (this case's extender): explain names the timeout, what was held and the time left */
START_TEST(a_gang_in_backoff_after_a_timeout_is_explained)
{
    char *out, name[300];
    json_t *story, *v, *pods;
    size_t i, ungated = 0;
    const json_t *p;
    struct common_error err;

    if (!jobset_and_kwok())
        return;
    for (int k = 0; k < 3; k++)
        make_node(1, "");
    make_runtime("later", 3, 5, "{}",
                 "                schedulingGates: [{name: trainsched.io/e2e-later}]\n", 0);
    make_trainjob("later", "later");
    for (double end = e2e_now_s() + 90;; e2e_nap(500)) {
        pods = e2e_jobset_pods(kube, ns, "later");
        if (json_array_size(pods) == 3)
            break;
        json_decref(pods);
        ck_assert_msg(e2e_now_s() < end, "the TrainJob's 3 pods not created in 90 s");
    }
    json_array_foreach(pods, i, p)
    {
        if (ungated == 2)
            break;
        snprintf(name, sizeof(name), "%s", json_string_value(e2e_at(p, "metadata.name")));
        ck_assert_msg(common_kube_patch(kube, &common_kube_pods, ns, name, COMMON_KUBE_JSON_PATCH,
                                        "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]",
                                        NULL, NULL, &err) == COMMON_OK,
                      "ungate %s: %s", name, err.msg);
        ungated++;
    }
    json_decref(pods);
    v = wait_verdict("later", "timed out after", 90);
    ck_assert_msg(json_string_value(json_object_get(v, "backoffUntil")) != NULL,
                  "the verdict of a gang backing off has no backoffUntil");
    json_decref(v);
    ck_assert_uint_eq(e2e_bound_pods(kube, ns, "later", NULL), 0);

    story = story_of("later", &out);
    contains(out, "Waiting (timeout): gang ");
    contains(out, " of minMember 3 held or bound; backing off 60 s (failure 1)");
    contains(out, "Would unblock: timed out after ");
    contains(out, "with 2 of minMember 3 held; tries again in ");
    contains(out, " s (backoff until ");
    ck_assert_str_eq(json_string_value(e2e_at(story, "wait.cause")), "timeout");
    ck_assert_int_eq(num(story, "held"), 2);
    ck_assert_int_eq(num(story, "minMember"), 3);
    ck_assert_int_eq(num(story, "backoffSeconds"), 60);
    ck_assert_int_eq(num(story, "failure"), 1);
    ck_assert_int_gt(num(story, "backoffLeftSeconds"), 0);
    ck_assert_int_le(num(story, "backoffLeftSeconds"), 60);
    ck_assert_ptr_nonnull(numstr(story, "backoffUntil"));
    json_decref(story);
    free(out);
}
END_TEST

/* through tests/e2e/faultproxy.py, which answers /apis/trainer.kubeflow.org as a server without
 * that group does: explain says the Trainer CRDs are missing (exit 1); the group shown again,
 * the same unknown name is a missing TrainJob (exit 2); for a TrainJob that exists, every
 * Event list explain sends has the field selector regarding.name */
START_TEST(a_cluster_without_the_trainjob_crd_is_named)
{
    char dir[300], kc[340], args[300], *out, *err;
    pid_t pid = 0;
    int pport = 0, control = 0;
    FILE *f;

    snprintf(dir, sizeof(dir), "%s/proxy", tmpdir);
    ck_assert_int_eq(mkdir(dir, 0700) == 0 || errno == EEXIST, 1);
    e2e_proxy_start(dir, &pid, &pport, &control);
    snprintf(kc, sizeof(kc), "%s/proxy.kubeconfig", tmpdir);
    f = fopen(kc, "w");
    ck_assert_ptr_nonnull(f);
    /* the proxy forwards as the bed's admin: no credentials of our own */
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
    snprintf(args, sizeof(args), "nope -n %s", ns);
    ck_assert_int_eq(explain(kc, args, &out, &err), 1);
    contains(err, "the cluster does not serve trainjobs.trainer.kubeflow.org/v1alpha1: Kubeflow "
                  "Trainer's CRDs are not installed");
    free(out);
    free(err);
    json_decref(e2e_proxy_ctl(control, "/unhide"));
    ck_assert_int_eq(explain(kc, args, &out, &err), 2);
    contains(err, "not found");
    free(out);
    free(err);

    /* a TrainJob that exists: explain lists Events only by regarding.name, never the whole
     * namespace's (the proxy's record of every request line) */
    make_runtime("seen", 1, 20, "{}", "", 0);
    make_trainjob("seen", "seen");
    json_decref(e2e_proxy_ctl(control, "/reset"));
    snprintf(args, sizeof(args), "seen -n %s", ns);
    ck_assert_int_eq(explain(kc, args, &out, &err), 0);
    free(out);
    free(err);
    {
        json_t *st = e2e_proxy_ctl(control, "/state");
        const json_t *r;
        size_t i, lists = 0;
        char path[300];
        snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", ns);
        json_array_foreach(json_object_get(st, "recent_requests"), i, r)
        {
            const char *line = json_string_value(r);
            if (!line || !strstr(line, path))
                continue;
            lists++;
            ck_assert_msg(strstr(line, "fieldSelector=regarding.name"),
                          "an Event list without fieldSelector regarding.name: %s", line);
        }
        ck_assert_msg(lists >= 1, "explain listed no Events through the proxy");
        fprintf(stderr, "explain seen: %zu Event lists, each by regarding.name\n", lists);
        json_decref(st);
    }
    e2e_proxy_stop(&pid);
}
END_TEST

int main(void)
{
    char cmd[400];
    int failed;
    Suite *s = suite_create("trainsched explain on the bed");
    TCase *tc = tcase_create("explain"), *tb = tcase_create("backoff");
    SRunner *sr;

    if (!getenv("KUBECONFIG")) {
        fprintf(stderr, "KUBECONFIG is not set: start the test bed first\n");
        return 1;
    }
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/ts-explain-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror(tmpdir);
        return 1;
    }
    port = e2e_free_port_or_exit();
    if (e2e_sched_extender_up(tmpdir, port, BIND_TIMEOUT_S) != 0)
        return 1;
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, a_gang_that_cannot_fit_is_explained);
    tcase_add_test(tc, a_cluster_without_the_trainjob_crd_is_named);
    tcase_add_test(tc, a_gang_waiting_for_a_rack_is_explained);
    tcase_add_test(tc, a_gang_waiting_for_devices_is_explained);
    suite_add_tcase(s, tc);
    tcase_add_checked_fixture(tb, setup_long_backoff, teardown);
    tcase_set_timeout(tb, 240);
    tcase_add_test(tb, a_gang_in_backoff_after_a_timeout_is_explained);
    suite_add_tcase(s, tb);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (e2e_sched_ctl("restore") != 0) {
        fprintf(stderr, "could not restore the test bed's kube-scheduler config\n");
        failed++;
    }
    if (!failed) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        (void)system(cmd);
    } else {
        fprintf(stderr, "logs kept in %s\n", tmpdir);
    }
    return failed ? 1 : 0;
}
