/*
 * tests/e2e/test_extender.c - gang scheduling through the HTTP extender with the real
 * kube-scheduler of the test bed (tests/e2e/testbed/up.sh; KUBECONFIG from its env file).
 *
 * `trainsched serve` has no extender component yet, so each test runs extender/server.h
 * in-process on a plain-HTTP common_httpd at 127.0.0.1:PORT (one port for the whole run).
 * main() restarts the bed's kube-scheduler with a KubeSchedulerConfiguration whose extender
 * points there (tests/e2e/testbed/scheduler-ctl.sh; enableHTTPS false, nodeCacheCapable,
 * managedResources trainsched.io/gang ignoredByScheduler) and restores the bed's own config
 * after the run, whatever the result.
 *
 * Nodes: created per test with a label of the test's own (pods select it with nodeSelector, so
 * tests never see each other's nodes), as kwok nodes (annotation kwok.x-k8s.io/node=fake) when
 * TESTBED_KWOK_RUNNING=1, else plain Node objects: without a kubelet, bound pods stay Pending,
 * which is fine, the tests assert spec.nodeName. Gang pods request trainsched.io/gang: 1
 * themselves here; in a real install the pod webhook adds it (webhook/, mutate-pod).
 *
 * Scenarios: a gang of 8 on 8 free nodes is bound whole; a gang of 8 with room for 6 binds
 * nothing while the PodGroup's status and Event say why, and binds whole once 2 nodes are
 * added; pods without the gang resource never reach the extender and schedule as before; two
 * gangs of 12 x 1 GPU interleaved on 2 nodes x 8 GPUs: one is bound whole, the other not at all;
 * a high-priority gang pod preempts: the extender vetoes the nodes whose victims would leave a
 * running gang below minMember, so kube-scheduler evicts plain pods instead; a preemption that
 * could never place the whole gang is vetoed and evicts nothing, and so is one for a pod whose
 * PodGroup does not exist (the three on kwok beds only); a PodGroup timeout above the bind
 * httpTimeout is said in the PodGroup's Events; a gang holding 3 of 4 binds whose 4th member's
 * only node is taken by a plain pod answers its holds at once (not at its timeout), and binds
 * whole once the node is free again; pods parked by kube-scheduler bind within seconds once
 * their PodGroup's minMember is lowered; a high-priority gang whose members each fit alone gets
 * one low-priority pod preempted and binds whole (kwok beds only).
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/events.h"
#include "common/httpd.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/metrics.h"
#include "e2eutil.h"
#include "extender/server.h"

#define GANG_LABEL "scheduling.x-k8s.io/pod-group"
#define RUN_LABEL "trainsched.io/e2e-run"
#define BIND_TIMEOUT_S 30

static int port;                 /* the extender's, chosen by main */
static struct common_kube *kube; /* admin: the test's view and the extender's client */
static struct common_events *events;
static struct common_metrics *metrics;
static struct extender_server *ext;
static struct common_httpd *httpd;
static char ns[96];
static char run[32]; /* the label value of this test's nodes */
static char nodes[32][96];
static int n_nodes;

static int kwok(void)
{
    const char *k = getenv("TESTBED_KWOK_RUNNING");
    return k && strcmp(k, "1") == 0;
}

static int bound(const char *gang, int *total);

static void setup(void)
{
    struct extender_server_opts o = {0};
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct common_error err;
    char addr[64];

    srand((unsigned)getpid() ^ (unsigned)time(NULL));
    kube = e2e_client(10000, 0);
    e2e_make_ns(kube, "ext", ns, sizeof(ns));
    snprintf(run, sizeof(run), "r%lx%lx", (unsigned long)getpid() & 0xffff,
             (unsigned long)time(NULL) & 0xffff);
    n_nodes = 0;
    events = common_events_create(kube, "e2e-extender", NULL, &err);
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
    ext = extender_server_create(&o, &err);
    ck_assert_msg(ext != NULL, "%s", err.msg);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ho.address = addr;
    ho.threads = 4;
    httpd = common_httpd_create(&ho, &err);
    ck_assert_msg(httpd != NULL, "%s", err.msg);
    ck_assert_int_eq(extender_server_install(ext, httpd, &err), COMMON_OK);
    ck_assert_msg(extender_server_start(ext, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_msg(extender_server_wait_ready(ext, 30000), "extender caches not synced in 30 s");
    ck_assert_msg(common_httpd_start(httpd, &err) == COMMON_OK, "%s", err.msg);
}

/* delete every pod of the namespace at once (grace 0) and wait until they are gone (30 s), so
 * that the scheduler stops retrying them against the next test's extender */
static void drop_pods(void)
{
    double t0 = e2e_now_s();

    (void)e2e_delete_pods_now(kube, ns, NULL);
    while (e2e_now_s() - t0 < 30) {
        int total = 0;
        (void)bound(NULL, &total);
        if (!total)
            break;
        usleep(200 * 1000);
    }
}

static void teardown(void)
{
    struct common_error err;

    extender_server_stop(ext);
    common_httpd_destroy(httpd);
    extender_server_destroy(ext);
    common_events_destroy(events);
    common_metrics_destroy(metrics);
    drop_pods();
    for (int i = 0; i < n_nodes; i++)
        common_kube_delete(kube, &common_kube_nodes, NULL, nodes[i], NULL, NULL, NULL, &err);
    e2e_drop_ns(kube, ns);
    common_kube_client_destroy(kube);
}

/* a node with cpu cores, gpus nvidia.com/gpu (0: none) and 110 pods, labelled RUN_LABEL=label */
static void make_node_labelled(int cpu, int gpus, const char *label)
{
    struct common_error err;
    char cpus[16], gp[16];
    json_t *n, *res;
    enum common_rc rc;

    ck_assert_int_lt(n_nodes, 32);
    snprintf(nodes[n_nodes], sizeof(nodes[0]), "ext-%s-%d", run, n_nodes);
    snprintf(cpus, sizeof(cpus), "%d", cpu);
    snprintf(gp, sizeof(gp), "%d", gpus);
    res = json_pack("{s:s, s:s, s:s}", "cpu", cpus, "memory", "64Gi", "pods", "110");
    if (gpus)
        json_object_set_new(res, "nvidia.com/gpu", json_string(gp));
    n = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:O, s:O}}", "apiVersion", "v1", "kind", "Node",
                  "metadata", "name", nodes[n_nodes], "labels", RUN_LABEL, label, "status",
                  "capacity", res, "allocatable", res);
    if (kwok())
        json_object_set_new(json_object_get(n, "metadata"), "annotations",
                            json_pack("{s:s}", "kwok.x-k8s.io/node", "fake"));
    json_decref(res);
    rc = common_kube_create(kube, &common_kube_nodes, NULL, n, NULL, NULL, &err);
    json_decref(n);
    ck_assert_msg(rc == COMMON_OK, "node %s: %s", nodes[n_nodes], err.msg);
    n_nodes++;
}

/* a node of this test (RUN_LABEL=run) */
static void make_node(int cpu, int gpus)
{
    make_node_labelled(cpu, gpus, run);
}

static void make_podgroup(const char *name, int min_member)
{
    struct common_error err;
    json_t *pg =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i, s:i}}", "apiVersion",
                  "scheduling.x-k8s.io/v1alpha1", "kind", "PodGroup", "metadata", "name", name,
                  "namespace", ns, "spec", "minMember", min_member, "scheduleTimeoutSeconds", 20);
    enum common_rc rc = common_kube_create(kube, &common_kube_podgroups, ns, pg, NULL, NULL, &err);

    json_decref(pg);
    ck_assert_msg(rc == COMMON_OK, "PodGroup %s: %s", name, err.msg);
}

/* a pod of gang (NULL: none, and no trainsched.io/gang request) asking cpu and gpus, with
 * priorityClassName pc (NULL: none), selecting nodes labelled RUN_LABEL=label (NULL: run), with
 * a scheduling gate when gated */
static void make_pod_x(const char *name, const char *gang, const char *cpu, int gpus,
                       const char *pc, const char *label, int gated)
{
    struct common_error err;
    json_t *req = json_pack("{s:s}", "cpu", cpu), *lim = json_object();
    json_t *p;
    enum common_rc rc;

    if (gang) {
        json_object_set_new(req, "trainsched.io/gang", json_string("1"));
        json_object_set_new(lim, "trainsched.io/gang", json_string("1"));
    }
    if (gpus) {
        char g[16];
        snprintf(g, sizeof(g), "%d", gpus);
        json_object_set_new(req, "nvidia.com/gpu", json_string(g));
        json_object_set_new(lim, "nvidia.com/gpu", json_string(g));
    }
    p = json_pack("{s:s, s:s, s:{s:s, s:s, s:{}}, s:{s:{s:s}, s:[{s:s, s:s, s:{s:o, s:o}}], "
                  "s:[{s:s, s:s, s:s}]}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", ns,
                  "labels", "spec", "nodeSelector", RUN_LABEL, label ? label : run, "containers",
                  "name", "c", "image", "registry.k8s.io/pause:3.10", "resources", "requests", req,
                  "limits", lim, "tolerations", "key", "kwok.x-k8s.io/node", "operator", "Exists",
                  "effect", "NoSchedule");
    ck_assert_ptr_nonnull(p);
    if (gang)
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"), GANG_LABEL,
                            json_string(gang));
    if (pc)
        json_object_set_new(json_object_get(p, "spec"), "priorityClassName", json_string(pc));
    if (gated)
        json_object_set_new(json_object_get(p, "spec"), "schedulingGates",
                            json_pack("[{s:s}]", "name", "trainsched.io/e2e-later"));
    rc = common_kube_create(kube, &common_kube_pods, ns, p, NULL, NULL, &err);
    json_decref(p);
    ck_assert_msg(rc == COMMON_OK, "pod %s: %s", name, err.msg);
}

static void make_pod_pc(const char *name, const char *gang, const char *cpu, int gpus,
                        const char *pc)
{
    make_pod_x(name, gang, cpu, gpus, pc, NULL, 0);
}

static void make_pod(const char *name, const char *gang, const char *cpu, int gpus)
{
    make_pod_pc(name, gang, cpu, gpus, NULL);
}

/* a PriorityClass (cluster-scoped; kept if it exists, the tests reuse it) */
static void ensure_priority_class(const char *name, int value)
{
    struct common_error err;
    struct common_buf resp;
    long status = 0;
    char *body;
    json_t *pc = json_pack("{s:s, s:s, s:{s:s}, s:i, s:s}", "apiVersion", "scheduling.k8s.io/v1",
                           "kind", "PriorityClass", "metadata", "name", name, "value", value,
                           "preemptionPolicy", "PreemptLowerPriority");

    body = json_dumps(pc, JSON_COMPACT);
    json_decref(pc);
    common_buf_init(&resp, 1 << 20);
    (void)common_kube_request(kube, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                              "application/json", body, strlen(body), NULL, &resp, &status, &err);
    ck_assert_msg(status == 201 || status == 409, "PriorityClass %s: HTTP %ld %s", name, status,
                  err.msg);
    common_buf_free(&resp);
    free(body);
}

/* the pod's spec.nodeName ("" when unbound; NULL when the pod is gone); *deleting when it has
 * a deletionTimestamp. The string is static until the next call. */
static const char *pod_node(const char *name, int *deleting)
{
    static char node[256];
    struct common_error err;
    json_t *p = NULL;
    const char *nn;

    *deleting = 0;
    if (common_kube_get(kube, &common_kube_pods, ns, name, &p, &err) != COMMON_OK)
        return NULL;
    nn = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
    snprintf(node, sizeof(node), "%s", nn ? nn : "");
    *deleting = json_object_get(json_object_get(p, "metadata"), "deletionTimestamp") != NULL;
    json_decref(p);
    return node;
}

/* pods of gang (NULL: every pod of the namespace) with spec.nodeName set; *total gets all */
static int bound(const char *gang, int *total)
{
    struct common_kube_list_opts lo = {0};
    struct common_error err;
    char sel[256];
    json_t *items = NULL, *it;
    size_t i;
    int n = 0;

    if (gang) {
        snprintf(sel, sizeof(sel), GANG_LABEL "=%s", gang);
        lo.label_selector = sel;
    }
    ck_assert_msg(common_kube_list(kube, &common_kube_pods, ns, &lo, &items, NULL, &err) ==
                      COMMON_OK,
                  "%s", err.msg);
    json_array_foreach(items, i, it)
    {
        const char *nn =
            json_string_value(json_object_get(json_object_get(it, "spec"), "nodeName"));
        if (nn && *nn)
            n++;
    }
    if (total)
        *total = (int)json_array_size(items);
    json_decref(items);
    return n;
}

/* wait up to timeout_s for gang to have want pods bound; returns the seconds it took */
static double wait_bound(const char *gang, int want, double timeout_s)
{
    double t0 = e2e_now_s();
    int n = 0;

    while (e2e_now_s() - t0 < timeout_s) {
        n = bound(gang, NULL);
        if (n >= want)
            return e2e_now_s() - t0;
        usleep(250 * 1000);
    }
    ck_abort_msg("gang %s: %d of %d pods bound after %.0f s", gang ? gang : "(none)", n, want,
                 timeout_s);
    return 0;
}

static json_t *get_podgroup(const char *name)
{
    struct common_error err;
    json_t *pg = NULL;

    ck_assert_msg(common_kube_get(kube, &common_kube_podgroups, ns, name, &pg, &err) == COMMON_OK,
                  "%s", err.msg);
    return pg;
}

/* the note of an Event on PodGroup name (e2e_event_note: found by the PodGroup's uid) */
static char *event_note(const char *name, const char *reason, const char *want)
{
    return e2e_event_note(kube, ns, name, reason, want);
}

static uint64_t extender_requests(void)
{
    struct extender_server_stats st;

    extender_server_stats(ext, &st);
    return st.filter + st.prioritize + st.bind + st.preempt;
}

START_TEST(gang_of_8_on_8_free_nodes_is_bound_whole)
{
    struct extender_server_stats st;
    char name[32];
    double t;

    for (int i = 0; i < 8; i++)
        make_node(4, 0);
    make_podgroup("g8", 8);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "g8-%d", i);
        make_pod(name, "g8", "3", 0);
    }
    t = wait_bound("g8", 8, 60);
    extender_server_stats(ext, &st);
    fprintf(stderr,
            "gang of 8 on 8 free nodes: bound whole after %.1f s (filter %llu, bind %llu, held "
            "%llu, released %llu, rejected %llu, bindings %llu, node patches %llu)\n",
            t, (unsigned long long)st.filter, (unsigned long long)st.bind,
            (unsigned long long)st.held, (unsigned long long)st.released,
            (unsigned long long)st.rejected, (unsigned long long)st.bindings_ok,
            (unsigned long long)st.node_patches);
    ck_assert_uint_ge(st.held, 7);
    ck_assert_uint_eq(st.bindings_ok, 8);
    ck_assert_uint_ge(st.node_patches, 8);
    /* one pod per node */
    {
        struct common_error err;
        json_t *items = NULL, *it;
        size_t i;
        char seen[8][96];
        int ns_seen = 0;
        ck_assert_int_eq(common_kube_list(kube, &common_kube_pods, ns, NULL, &items, NULL, &err),
                         COMMON_OK);
        json_array_foreach(items, i, it)
        {
            const char *nn =
                json_string_value(json_object_get(json_object_get(it, "spec"), "nodeName"));
            for (int j = 0; j < ns_seen; j++)
                ck_assert_str_ne(seen[j], nn);
            snprintf(seen[ns_seen++], sizeof(seen[0]), "%s", nn);
        }
        json_decref(items);
    }
    /* the virtual resource is advertised on the nodes */
    {
        struct common_error err;
        json_t *n = NULL;
        ck_assert_int_eq(common_kube_get(kube, &common_kube_nodes, NULL, nodes[0], &n, &err),
                         COMMON_OK);
        ck_assert_str_eq(json_string_value(json_object_get(
                             json_object_get(json_object_get(n, "status"), "allocatable"),
                             EXTENDER_GANG_RESOURCE)),
                         "110");
        json_decref(n);
    }
}
END_TEST

START_TEST(gang_of_8_with_room_for_6_waits_then_binds_when_room_is_added)
{
    char name[32], *note;
    json_t *pg;
    const char *phase;
    double t;

    for (int i = 0; i < 6; i++)
        make_node(4, 0);
    make_podgroup("w8", 8);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "w8-%d", i);
        make_pod(name, "w8", "3", 0);
    }
    /* none bound for a while */
    for (int i = 0; i < 32; i++) {
        ck_assert_int_eq(bound("w8", NULL), 0);
        usleep(250 * 1000);
    }
    ck_assert_int_eq(common_events_flush(events, 5000), COMMON_OK);
    note = event_note("w8", "GangWaiting", "6 of the 8");
    ck_assert_msg(note != NULL, "no GangWaiting Event on PodGroup w8 (by involvedObject.uid, as "
                                "kubectl describe looks) saying \"6 of the 8\"");
    fprintf(stderr, "gang of 8 with room for 6: Event GangWaiting: %s\n", note);
    free(note);
    pg = get_podgroup("w8");
    phase = json_string_value(json_object_get(json_object_get(pg, "status"), "phase"));
    ck_assert_msg(phase && strcmp(phase, "Scheduling") == 0, "status.phase %s",
                  phase ? phase : "(none)");
    json_decref(pg);

    make_node(4, 0);
    make_node(4, 0);
    t = wait_bound("w8", 8, 60);
    fprintf(stderr, "gang of 8 with room for 6: bound whole %.1f s after 2 nodes were added\n", t);
}
END_TEST

START_TEST(pods_without_the_gang_resource_never_reach_the_extender)
{
    uint64_t before;
    char name[32];
    double t;

    make_node(4, 0);
    make_node(4, 0);
    before = extender_requests();
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "plain-%d", i);
        make_pod(name, NULL, "1", 0);
    }
    t = wait_bound(NULL, 4, 60);
    fprintf(stderr, "4 pods without a gang: bound by the default binder in %.1f s\n", t);
    ck_assert_uint_eq(extender_requests(), before);
}
END_TEST

START_TEST(two_gangs_of_12_gpus_interleaved_one_bound_whole_the_other_none)
{
    char name[32];
    int a, b;

    make_node(64, 8);
    make_node(64, 8);
    make_podgroup("ga", 12);
    make_podgroup("gb", 12);
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof(name), "ga-%d", i);
        make_pod(name, "ga", "1", 1);
        snprintf(name, sizeof(name), "gb-%d", i);
        make_pod(name, "gb", "1", 1);
    }
    {
        double t0 = e2e_now_s();
        for (;;) {
            a = bound("ga", NULL);
            b = bound("gb", NULL);
            ck_assert_msg(!(a > 0 && b > 0), "both gangs partly bound: %d and %d", a, b);
            if (a == 12 || b == 12)
                break;
            ck_assert_msg(e2e_now_s() - t0 < 60, "no gang bound whole after 60 s: %d and %d", a, b);
            usleep(250 * 1000);
        }
        fprintf(stderr, "two gangs of 12 GPUs interleaved: gang %s bound whole after %.1f s\n",
                a == 12 ? "ga" : "gb", e2e_now_s() - t0);
    }
    /* and the other stays unbound */
    for (int i = 0; i < 20; i++) {
        a = bound("ga", NULL);
        b = bound("gb", NULL);
        ck_assert_msg((a == 12 && b == 0) || (a == 0 && b == 12), "ga %d bound, gb %d bound", a, b);
        usleep(250 * 1000);
    }
}
END_TEST

/* C32 and issue 5 item 7 with the real preemption: a gang pod of high priority needs a whole
 * node; two nodes run one member each of a low-priority gang (minMember 2), the third two
 * low-priority plain pods. kube-scheduler alone would evict a gang member (one victim beats two:
 * smallest priority sum); the extender vetoes those nodes (the gang would drop below minMember),
 * so the two plain pods go and the gang keeps running. */
START_TEST(preemption_by_a_gang_pod_never_breaks_a_running_gang)
{
    struct extender_server_stats st;
    const char *nn;
    int deleting, gone = 0;
    double t0;
    char low_nodes[2][256];

    if (!kwok()) {
        fprintf(stderr, "SKIP preemption: victims only go away with kwok (no kubelet here)\n");
        return;
    }
    ensure_priority_class("trainsched-e2e-low", 10);
    ensure_priority_class("trainsched-e2e-high", 100000);
    for (int i = 0; i < 3; i++)
        make_node(4, 0);
    make_podgroup("low", 2);
    make_pod_pc("low-0", "low", "4", 0, "trainsched-e2e-low");
    make_pod_pc("low-1", "low", "4", 0, "trainsched-e2e-low");
    wait_bound("low", 2, 60);
    for (int i = 0; i < 2; i++) {
        nn = pod_node(i ? "low-1" : "low-0", &deleting);
        ck_assert_ptr_nonnull(nn);
        snprintf(low_nodes[i], sizeof(low_nodes[i]), "%s", nn);
    }
    make_pod_pc("plain-a", NULL, "2", 0, "trainsched-e2e-low");
    make_pod_pc("plain-b", NULL, "2", 0, "trainsched-e2e-low");
    wait_bound(NULL, 4, 60);
    make_podgroup("high", 1);
    t0 = e2e_now_s();
    make_pod_pc("high-0", "high", "4", 0, "trainsched-e2e-high");
    for (;;) {
        int pa, pb;
        nn = pod_node("high-0", &deleting);
        ck_assert_ptr_nonnull(nn);
        if (*nn)
            break;
        pa = pod_node("plain-a", &deleting) == NULL;
        pb = pod_node("plain-b", &deleting) == NULL;
        gone = pa + pb;
        ck_assert_msg(e2e_now_s() - t0 < 90, "high-0 not bound after 90 s (%d plain pods gone)",
                      gone);
        usleep(250 * 1000);
    }
    fprintf(stderr, "preemption: high-0 bound on %s after %.1f s\n", nn, e2e_now_s() - t0);
    ck_assert_msg(strcmp(nn, low_nodes[0]) != 0 && strcmp(nn, low_nodes[1]) != 0,
                  "high-0 took a node of the running gang");
    /* the gang is whole and not deleting; the plain pods were the victims */
    for (int i = 0; i < 2; i++) {
        const char *name = i ? "low-1" : "low-0";
        nn = pod_node(name, &deleting);
        ck_assert_msg(nn && strcmp(nn, low_nodes[i]) == 0 && !deleting,
                      "gang member %s was evicted or moved", name);
    }
    ck_assert_msg(pod_node("plain-a", &deleting) == NULL || deleting, "plain-a survived");
    ck_assert_msg(pod_node("plain-b", &deleting) == NULL || deleting, "plain-b survived");
    extender_server_stats(ext, &st);
    ck_assert_uint_ge(st.preempt, 1);
}
END_TEST

/* wait (60 s at most) until kube-scheduler has called the extender's preempt verb; the time
 * it did (e2e_now_s) */
static double wait_preempt_asked(void)
{
    struct extender_server_stats st;
    double t0 = e2e_now_s();

    for (;;) {
        extender_server_stats(ext, &st);
        if (st.preempt >= 1)
            return e2e_now_s();
        ck_assert_msg(e2e_now_s() - t0 < 60, "kube-scheduler never asked the extender to preempt");
        usleep(200 * 1000);
    }
}

/* issue 5 item 7, "veto preemption that cannot make the whole gang fit", with the real
 * preemption: a high-priority gang of 2 pods needs two whole nodes; one node runs a
 * low-priority pod, the other a pod of the gang's own priority (not evictable). Evicting the
 * low-priority pod would free one node, never two: kube-scheduler alone evicts it at once
 * (checked with the veto disabled), the extender vetoes every candidate, so nothing is evicted
 * and the gang waits whole. */
START_TEST(preemption_that_cannot_place_the_whole_gang_is_vetoed)
{
    struct extender_server_stats st;
    const char *nn;
    int deleting;
    double t0;

    if (!kwok()) {
        fprintf(stderr, "SKIP preemption veto: victims only go away with kwok (no kubelet here)\n");
        return;
    }
    ensure_priority_class("trainsched-e2e-low", 10);
    ensure_priority_class("trainsched-e2e-high", 100000);
    for (int i = 0; i < 2; i++)
        make_node(4, 0);
    make_pod_pc("low", NULL, "4", 0, "trainsched-e2e-low");
    make_pod_pc("peer", NULL, "4", 0, "trainsched-e2e-high");
    wait_bound(NULL, 2, 60);
    make_podgroup("pair", 2);
    make_pod_pc("pair-0", "pair", "4", 0, "trainsched-e2e-high");
    make_pod_pc("pair-1", "pair", "4", 0, "trainsched-e2e-high");
    /* preemption is asked for (and vetoed) ... */
    t0 = wait_preempt_asked();
    /* ... and nothing happens: 8 s more, ~25x what a granted preemption took above */
    while (e2e_now_s() - t0 < 8) {
        nn = pod_node("low", &deleting);
        ck_assert_msg(nn && *nn && !deleting, "the low-priority pod was evicted (%s)",
                      nn ? "deleting" : "gone");
        usleep(250 * 1000);
    }
    ck_assert_int_eq(bound("pair", NULL), 0);
    extender_server_stats(ext, &st);
    fprintf(stderr, "preemption veto: %llu preempt calls vetoed in %.0f s, nothing evicted\n",
            (unsigned long long)st.preempt, e2e_now_s() - t0);
}
END_TEST

/* A pod whose PodGroup does not exist, on three nodes full of low-priority pods: every node
 * fails kube-scheduler's own filters, so the extender's filter (which would answer "PodGroup
 * not found" everywhere) is never called, and kube-scheduler goes straight to preemption. The
 * extender vetoes every candidate (its gang rules would not place the pod whatever is evicted),
 * so nothing is evicted; before, a low-priority pod was evicted at once and the gang pod still
 * stayed Pending. */
START_TEST(preemption_for_a_pod_whose_podgroup_does_not_exist_evicts_nothing)
{
    struct extender_server_stats st;
    char name[32];
    double t0;

    if (!kwok()) {
        fprintf(stderr, "SKIP preemption without PodGroup: victims only go away with kwok\n");
        return;
    }
    ensure_priority_class("trainsched-e2e-low", 10);
    ensure_priority_class("trainsched-e2e-high", 100000);
    for (int i = 0; i < 3; i++) {
        make_node(4, 0);
        snprintf(name, sizeof(name), "low-%d", i);
        make_pod_pc(name, NULL, "4", 0, "trainsched-e2e-low");
    }
    wait_bound(NULL, 3, 60);
    make_pod_pc("ghost-0", "ghost", "4", 0, "trainsched-e2e-high");
    t0 = wait_preempt_asked();
    /* a granted preemption evicts within a second (the test above); watch 15 s */
    while (e2e_now_s() - t0 < 15) {
        for (int i = 0; i < 3; i++) {
            int deleting;
            const char *nn;
            snprintf(name, sizeof(name), "low-%d", i);
            nn = pod_node(name, &deleting);
            ck_assert_msg(nn && *nn && !deleting, "%s was evicted (%s)", name,
                          nn ? "deleting" : "gone");
        }
        usleep(250 * 1000);
    }
    ck_assert_int_eq(bound("ghost", NULL), 0);
    extender_server_stats(ext, &st);
    fprintf(stderr,
            "preemption without PodGroup: %llu preempt calls vetoed in %.0f s, nothing "
            "evicted\n",
            (unsigned long long)st.preempt, e2e_now_s() - t0);
}
END_TEST

/* A PodGroup asking scheduleTimeoutSeconds 3000 under a bind httpTimeout of BIND_TIMEOUT_S:
 * the extender cuts it to BIND_TIMEOUT_S - 2 s and says so in the PodGroup's Events, alone
 * while the group has no pods, then after the waiting reason. Before, the cut was silent. */
START_TEST(a_podgroup_timeout_above_the_bind_http_timeout_is_said_in_its_events)
{
    struct common_error err;
    char want[96], *note;
    json_t *pg;
    enum common_rc rc;
    double t0;

    make_node(4, 0);
    pg = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i, s:i}}", "apiVersion",
                   "scheduling.x-k8s.io/v1alpha1", "kind", "PodGroup", "metadata", "name", "long",
                   "namespace", ns, "spec", "minMember", 2, "scheduleTimeoutSeconds", 3000);
    rc = common_kube_create(kube, &common_kube_podgroups, ns, pg, NULL, NULL, &err);
    json_decref(pg);
    ck_assert_msg(rc == COMMON_OK, "PodGroup long: %s", err.msg);
    snprintf(want, sizeof(want), "scheduleTimeoutSeconds 3000 is cut to %d s", BIND_TIMEOUT_S - 2);
    for (t0 = e2e_now_s();; usleep(250 * 1000)) {
        ck_assert_int_eq(common_events_flush(events, 5000), COMMON_OK);
        if ((note = event_note("long", "GangWaiting", want)) != NULL)
            break;
        ck_assert_msg(e2e_now_s() - t0 < 30, "no GangWaiting Event on PodGroup long saying \"%s\"",
                      want);
    }
    fprintf(stderr, "timeout cap: Event GangWaiting: %s\n", note);
    free(note);
    make_pod("long-0", "long", "1", 0);
    for (t0 = e2e_now_s();; usleep(250 * 1000)) {
        ck_assert_int_eq(common_events_flush(events, 5000), COMMON_OK);
        note = event_note("long", "GangWaiting", "1 of minMember 2 exist");
        if (note && strstr(note, want))
            break;
        ck_assert_msg(e2e_now_s() - t0 < 30,
                      "no GangWaiting Event on PodGroup long saying both why it waits and \"%s\" "
                      "(last: %s)",
                      want, note ? note : "none");
        free(note);
    }
    fprintf(stderr, "timeout cap: Event GangWaiting: %s\n", note);
    free(note);
}
END_TEST

/* a plain pod created bound to node (spec.nodeName: no scheduler sees it first) asking cpu */
static void make_bound_pod(const char *name, const char *node, const char *cpu)
{
    struct common_error err;
    json_t *p = e2e_yamlf("apiVersion: v1\nkind: Pod\n"
                          "metadata: {name: %s, namespace: %s}\n"
                          "spec:\n  nodeName: %s\n"
                          "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists}]\n"
                          "  containers: [{name: c, image: registry.k8s.io/pause:3.10,"
                          " resources: {requests: {cpu: '%s'}}}]\n",
                          name, ns, node, cpu);
    enum common_rc rc = common_kube_create(kube, &common_kube_pods, ns, p, NULL, NULL, &err);

    json_decref(p);
    ck_assert_msg(rc == COMMON_OK, "pod %s: %s", name, err.msg);
}

/* delete pod name at once (grace 0) and wait (30 s) until it is gone */
static void delete_now(const char *name)
{
    double t0 = e2e_now_s();
    long status = e2e_delete_pods_now(kube, ns, name);
    int deleting;

    ck_assert_msg(status == 200 || status == 404, "delete pod %s: HTTP %ld", name, status);
    while (pod_node(name, &deleting)) {
        ck_assert_msg(e2e_now_s() - t0 < 30, "pod %s not gone after 30 s", name);
        usleep(200 * 1000);
    }
}

/* remove the scheduling gates of pod name */
static void ungate(const char *name)
{
    struct common_error err;

    ck_assert_msg(common_kube_patch(kube, &common_kube_pods, ns, name, COMMON_KUBE_JSON_PATCH,
                                    "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]",
                                    NULL, NULL, &err) == COMMON_OK,
                  "ungate %s: %s", name, err.msg);
}

/* wait up to timeout_s until want binds are held, with nothing of gang bound meanwhile */
static void wait_held(const char *gang, size_t want, double timeout_s)
{
    struct extender_server_stats st;
    double t0 = e2e_now_s();

    for (;;) {
        extender_server_stats(ext, &st);
        if (st.held_now == want)
            return;
        ck_assert_int_eq(bound(gang, NULL), 0);
        ck_assert_msg(e2e_now_s() - t0 < timeout_s, "%zu binds held after %.0f s, want %zu",
                      st.held_now, timeout_s, want);
        usleep(200 * 1000);
    }
}

/* A gang of 4 holds 3 binds; the 4th member (gated, so kube-scheduler does not place it yet)
 * can only go on one node, where a plain pod is then bound directly. The gang cannot complete:
 * its holds must end at once because the node was taken, not at the 20 s timeout; the PodGroup
 * Event says so. With the plain pod gone and the gate removed, the gang binds whole. */
START_TEST(a_held_gang_whose_planned_node_is_taken_releases_its_holds_at_once)
{
    struct extender_server_stats st;
    char last[48], *note;
    double t0;

    snprintf(last, sizeof(last), "%s-last", run);
    for (int i = 0; i < 3; i++)
        make_node(2, 0);
    make_node_labelled(2, 0, last);
    make_podgroup("h4", 4);
    make_pod_x("h4-0", "h4", "2", 0, NULL, NULL, 0);
    make_pod_x("h4-1", "h4", "2", 0, NULL, NULL, 0);
    make_pod_x("h4-2", "h4", "2", 0, NULL, NULL, 0);
    make_pod_x("h4-3", "h4", "2", 0, NULL, last, 1);
    wait_held("h4", 3, 60);
    t0 = e2e_now_s();
    make_bound_pod("squatter", nodes[3], "1");
    for (;;) {
        extender_server_stats(ext, &st);
        ck_assert_int_eq(bound("h4", NULL), 0);
        if (st.held_now == 0)
            break;
        ck_assert_msg(e2e_now_s() - t0 < 60, "%zu binds still held after 60 s", st.held_now);
        usleep(100 * 1000);
    }
    fprintf(stderr, "held gang, planned node taken: holds answered %.1f s after the plain pod\n",
            e2e_now_s() - t0);
    ck_assert_int_eq(common_events_flush(events, 5000), COMMON_OK);
    note = event_note("h4", "GangWaiting", "timed out");
    ck_assert_msg(note == NULL, "the holds ended by the timeout: %s", note);
    note = event_note("h4", "GangWaiting", "can no longer take");
    ck_assert_msg(note != NULL, "no GangWaiting Event on PodGroup h4 saying the node was taken");
    fprintf(stderr, "held gang, planned node taken: Event GangWaiting: %s\n", note);
    free(note);
    /* the node freed and the 4th member let in: the gang binds whole */
    delete_now("squatter");
    ungate("h4-3");
    wait_bound("h4", 4, 60);
}
END_TEST

/* A PodGroup of minMember 4 with 4 pods on room for 2: none fits, kube-scheduler parks them
 * (the extender rejected them: only a Pod or Node event requeues them, else its 5-minute
 * flush). 2 pods are deleted and minMember lowered to 2: the extender annotates the 2 waiting
 * pods, which requeues them, and both bind within seconds; the PodGroup's Event follows the new
 * minMember. */
START_TEST(lowering_minmember_wakes_the_waiting_pods)
{
    struct extender_server_stats st;
    struct common_error err;
    char name[32], *note = NULL;
    double t0, t;

    make_node(2, 0);
    make_node(2, 0);
    make_podgroup("lm", 4);
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "lm-%d", i);
        make_pod(name, "lm", "2", 0);
    }
    for (t0 = e2e_now_s(); !note; usleep(250 * 1000)) {
        ck_assert_int_eq(common_events_flush(events, 5000), COMMON_OK);
        note = event_note("lm", "GangWaiting", "2 of the 4");
        ck_assert_msg(note || e2e_now_s() - t0 < 60, "no GangWaiting Event saying 2 of the 4");
    }
    free(note);
    e2e_nap(2000); /* the scheduler's own status writes settle: the pods are parked */
    ck_assert_int_eq(bound("lm", NULL), 0);
    delete_now("lm-2");
    delete_now("lm-3");
    e2e_nap(1000);
    ck_assert_int_eq(bound("lm", NULL), 0);
    ck_assert_msg(common_kube_patch(kube, &common_kube_podgroups, ns, "lm", COMMON_KUBE_MERGE_PATCH,
                                    "{\"spec\":{\"minMember\":2}}", NULL, NULL, &err) == COMMON_OK,
                  "patch PodGroup lm: %s", err.msg);
    t = wait_bound("lm", 2, 60);
    extender_server_stats(ext, &st);
    fprintf(
        stderr,
        "minMember lowered 4 -> 2: both waiting pods bound %.1f s after the PodGroup patch (%llu "
        "pods touched)\n",
        t, (unsigned long long)st.pod_touches);
    ck_assert_uint_ge(st.pod_touches, 2);
    ck_assert_int_eq(common_events_flush(events, 5000), COMMON_OK);
    note = event_note("lm", "GangReleased", "of minMember 2");
    ck_assert_msg(note != NULL, "no GangReleased Event on PodGroup lm naming minMember 2");
    fprintf(stderr, "minMember lowered: Event GangReleased: %s\n", note);
    free(note);
}
END_TEST

/* One node of 9 cpu runs 8 low-priority 1-cpu pods of a gang (minMember 3); a high-priority gang
 * of 2 x 1 cpu arrives with 1 cpu free. Each member fits alone, so kube-scheduler's preemption
 * would never find a victim for it; the extender holds the member that fits, the second fails
 * the scheduler's own filters, its preemption (through the extender's preempt verb) evicts one
 * low-priority pod (7 >= 3 stay), and the high gang binds whole, never left 1 of 2. */
START_TEST(a_gang_whose_members_fit_alone_preempts_for_the_rest)
{
    struct extender_server_stats st;
    char name[32];
    double t0, partial_since = 0;
    int n;

    if (!kwok()) {
        fprintf(stderr, "SKIP gang preemption: victims only go away with kwok (no kubelet)\n");
        return;
    }
    ensure_priority_class("trainsched-e2e-low", 10);
    ensure_priority_class("trainsched-e2e-high", 100000);
    make_node(9, 0);
    make_podgroup("lo", 3);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "lo-%d", i);
        make_pod_pc(name, "lo", "1", 0, "trainsched-e2e-low");
    }
    wait_bound("lo", 8, 60);
    make_podgroup("hi", 2);
    make_pod_pc("hi-0", "hi", "1", 0, "trainsched-e2e-high");
    make_pod_pc("hi-1", "hi", "1", 0, "trainsched-e2e-high");
    for (t0 = e2e_now_s();; usleep(100 * 1000)) {
        n = bound("hi", NULL);
        /* the binder releases a gang's held binds one Binding after another, so a poll may see
         * the first member bound before the second; a gang left partial stays so */
        if (n == 1 && partial_since == 0)
            partial_since = e2e_now_s();
        ck_assert_msg(n != 1 || e2e_now_s() - partial_since < 30, "gang hi: 1 of 2 bound for 30 s");
        if (n == 2)
            break;
        ck_assert_msg(e2e_now_s() - t0 < 90, "gang hi not bound after 90 s");
    }
    extender_server_stats(ext, &st);
    fprintf(stderr,
            "gang preemption: hi bound whole %.1f s after its pods were created (%llu "
            "preempt calls)\n",
            e2e_now_s() - t0, (unsigned long long)st.preempt);
    ck_assert_uint_ge(st.preempt, 1);
    n = 0;
    for (int i = 0; i < 8; i++) {
        int deleting;
        const char *nn;
        snprintf(name, sizeof(name), "lo-%d", i);
        nn = pod_node(name, &deleting);
        n += nn && *nn && !deleting;
    }
    ck_assert_msg(n == 7, "%d of the 8 low-priority pods left, want 7 (one evicted)", n);
}
END_TEST

int main(void)
{
    int failed;
    Suite *s = suite_create("scheduler extender with the real kube-scheduler");
    TCase *tc = tcase_create("gang");

    if (!getenv("KUBECONFIG")) {
        fprintf(stderr, "KUBECONFIG is not set: start the test bed first\n");
        return 1;
    }
    port = e2e_free_port_or_exit();
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gang_of_8_on_8_free_nodes_is_bound_whole);
    tcase_add_test(tc, gang_of_8_with_room_for_6_waits_then_binds_when_room_is_added);
    tcase_add_test(tc, pods_without_the_gang_resource_never_reach_the_extender);
    tcase_add_test(tc, two_gangs_of_12_gpus_interleaved_one_bound_whole_the_other_none);
    tcase_add_test(tc, preemption_by_a_gang_pod_never_breaks_a_running_gang);
    tcase_add_test(tc, preemption_that_cannot_place_the_whole_gang_is_vetoed);
    tcase_add_test(tc, preemption_for_a_pod_whose_podgroup_does_not_exist_evicts_nothing);
    tcase_add_test(tc, a_podgroup_timeout_above_the_bind_http_timeout_is_said_in_its_events);
    tcase_add_test(tc, a_held_gang_whose_planned_node_is_taken_releases_its_holds_at_once);
    tcase_add_test(tc, lowering_minmember_wakes_the_waiting_pods);
    tcase_add_test(tc, a_gang_whose_members_fit_alone_preempts_for_the_rest);
    suite_add_tcase(s, tc);
    /* the shipped manifests/scheduler/scheduler-config.yaml, with plain HTTP to the test's
     * port, a 30 s bind timeout and short pod backoffs */
    failed = e2e_run_with_extender(s, port, BIND_TIMEOUT_S);
    return failed ? 1 : 0;
}
