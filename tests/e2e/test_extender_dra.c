/*
 * tests/e2e/test_extender_dra.c - gangs whose pods claim GPUs through DRA, with the real
 * kube-scheduler (its DynamicResources plugin, on by default in 1.36) and the real
 * kube-controller-manager (its resourceclaim controller makes each pod's ResourceClaim from the
 * ResourceClaimTemplate) of the test bed (tests/e2e/testbed/up.sh; KUBECONFIG from its env
 * file). The extender runs in-process on plain HTTP, as in test_extender.c (in a child process
 * for the kill case); main() restarts the bed's kube-scheduler with the shipped extender config
 * pointed at it and restores it after.
 *
 * The test publishes what a DRA driver would: one ResourceSlice per node (driver
 * gpu.example.com, pool = node, 8 GPUs with attribute productName, H100 or A100 by node, nodes
 * labelled nvidia.com/gpu.clique), a DeviceClass and a ResourceClaimTemplate for 8 GPUs.
 *
 * Scenarios:
 *   a_gang_of_8_gpu_pods_binds_whole_with_its_claims_allocated_on_its_nodes
 *       three pods each claiming 8 GPUs on four nodes, one of which has a GPU taken by another
 *       claim: every member bound, each claim's status.allocation on the pod's node (its
 *       nodeSelector and its 8 devices from the node's pool), never on the busy node;
 *   a_gang_asking_for_one_gpu_model_never_mixes_models
 *       nodes alternate H100 and A100 in name order; the PodGroup asks
 *       trainsched.io/dra-match-attribute: gpu.example.com/productName: both members' devices
 *       are of one model;
 *   on_nodes_mixing_two_models_the_claims_get_the_planned_devices
 *       two nodes each list four h100 then four a100 GPUs; a gang of two 4-GPU pods asks
 *       dra-match-attribute productName: the plan takes "a100" (values in order), kube-scheduler's
 *       own first fit would take the h100 listed first; every claim's status.allocation holds
 *       the node's four a100 (trainsched writes the plan's devices when its filter answers the
 *       planned node, before kube-scheduler's Reserve/PreBind);
 *   a_gang_short_of_a_member_holds_no_device_after_its_timeout
 *       a gang of 3 whose third pod is gated: two binds are held (kube-scheduler's PreBind has
 *       allocated their claims), the gang times out, and within seconds no claim of the gang
 *       is allocated and no pod is bound;
 *   two_gangs_racing_for_the_same_gpus_never_both_hold
 *       two gangs of 2 x 8 GPUs created at once on 3 nodes x 8 GPUs: one binds whole, the
 *       other binds nothing and none of its claims is allocated;
 *   a_restart_mid_gang_rebuilds_from_the_claims
 *       the same gang held, the extender replaced by a new instance, the third pod ungated: all
 *       three bound, each claim allocated on its pod's node;
 *   a_claim_shared_by_two_members_binds_whole_ten_times_of_ten
 *       ten rounds of a gang of two pods naming one ResourceClaim (resourceClaimName): each
 *       binds whole, both pods on one node, the claim allocated once (2 devices) on that node
 *       and reserved for both;
 *   a_kill_mid_gang_with_claims_written_early_binds_whole_and_leaks_nothing
 *       the extender runs in a child process (fork; the same start code and port, its
 *       /metrics on a port of its own); two of three 4-GPU members held on nodes mixing two
 *       models (2 held binds by its /metrics, their claims written by trainsched at filter
 *       time by the annotation trainsched.io/dra-allocated-for), then the child killed with
 *       SIGKILL: kube-scheduler's binds fail and its own Unreserve runs, nothing is released
 *       by hand; a new in-process extender, the third pod ungated: bound whole within one gang
 *       timeout plus its backoff, and no claim stays allocated without a bound pod reserving
 *       it;
 *   a_claim_trainsched_allocated_is_released_once_its_gang_is_deleted
 *       a standalone claim trainsched allocated for a gang that then times out (reserved for
 *       nobody, still allocated), then the gang deleted: the sweep frees the allocation
 *       (trainsched_extender_dra_allocations_total{event="leaked_freed"}, and the Events
 *       DeviceAllocationWritten and LeakedAllocationFreed regarding the claim).
 */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/events.h"
#include "common/health.h"
#include "common/httpd.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/metrics.h"
#include "e2eutil.h"
#include "extender/server.h"

#define GANG_LABEL "scheduling.x-k8s.io/pod-group"
#define RUN_LABEL "trainsched.io/e2e-run"
#define BIND_TIMEOUT_S 30
#define DRIVER "gpu.example.com"

static const struct common_kube_resource r_slices = {"resource.k8s.io", "v1", "resourceslices", 0};
static const struct common_kube_resource r_classes = {"resource.k8s.io", "v1", "deviceclasses", 0};
static const struct common_kube_resource r_claims = {"resource.k8s.io", "v1", "resourceclaims", 1};
static const struct common_kube_resource r_templates = {"resource.k8s.io", "v1",
                                                        "resourceclaimtemplates", 1};

static int port;
static struct common_kube *kube;
static struct common_events *events;
static struct common_metrics *metrics;
static struct extender_server *ext;
static char ns[96];
static char run[32];
static char cls[128]; /* this test's DeviceClass */
static char nodes[8][96];
static int n_nodes;

static struct e2e_ext served;

static void start_extender(void)
{
    struct extender_server_opts o = {0};

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
    ext = served.ext;
}

static void stop_extender(void)
{
    if (!ext)
        return;
    e2e_ext_stop(&served);
    common_metrics_destroy(metrics);
    ext = NULL;
    metrics = NULL;
}

/* the kill case's extender process while it runs, else 0 */
static pid_t child;

static void kill_child(void)
{
    int st;

    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, &st, 0);
    }
    child = 0;
}

static void create(const struct common_kube_resource *r, const char *in_ns, json_t *obj)
{
    struct common_kube_write_opts wo = {.strict = 1};
    struct common_error err;
    enum common_rc rc = common_kube_create(kube, r, in_ns, obj, &wo, NULL, &err);

    ck_assert_msg(rc == COMMON_OK, "create %s: %s", r->resource, err.msg);
    json_decref(obj);
}

static void setup(void)
{
    struct common_error err;

    srand((unsigned)getpid() ^ (unsigned)time(NULL));
    kube = e2e_client(20000, 0);
    e2e_make_ns(kube, "dra", ns, sizeof(ns));
    snprintf(run, sizeof(run), "d%lx%lx", (unsigned long)getpid() & 0xffff,
             (unsigned long)time(NULL) & 0xffff);
    snprintf(cls, sizeof(cls), "gpu-%s.example.com", run);
    n_nodes = 0;
    events = common_events_create(kube, "e2e-extender-dra", NULL, &err);
    ck_assert_msg(events != NULL, "%s", err.msg);
    create(&r_classes, NULL,
           e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\n"
                     "metadata: {name: %s}\n"
                     "spec: {selectors: [{cel: {expression: \"device.driver == '%s'\"}}]}\n",
                     cls, DRIVER));
    create(&r_templates, ns,
           e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
                     "metadata: {name: gpu-8, namespace: %s}\n"
                     "spec:\n  spec:\n    devices:\n      requests:\n"
                     "      - name: gpu\n"
                     "        exactly: {deviceClassName: %s, allocationMode: ExactCount, "
                     "count: 8}\n",
                     ns, cls));
    create(&r_templates, ns,
           e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
                     "metadata: {name: gpu-4, namespace: %s}\n"
                     "spec:\n  spec:\n    devices:\n      requests:\n"
                     "      - name: gpu\n"
                     "        exactly: {deviceClassName: %s, allocationMode: ExactCount, "
                     "count: 4}\n",
                     ns, cls));
    start_extender();
}

static void drop_pods(void)
{
    double t0 = e2e_now_s();
    struct common_error err;

    (void)e2e_delete_pods_now(kube, ns, NULL);
    while (e2e_now_s() - t0 < 30) {
        json_t *items = NULL;
        size_t n;
        if (common_kube_list(kube, &common_kube_pods, ns, NULL, &items, NULL, &err) != COMMON_OK)
            break;
        n = json_array_size(items);
        json_decref(items);
        if (!n)
            break;
        e2e_nap(200);
    }
}

static void teardown(void)
{
    struct common_error err;
    char name[160];

    kill_child();
    stop_extender();
    common_events_destroy(events);
    drop_pods();
    for (int i = 0; i < n_nodes; i++) {
        snprintf(name, sizeof(name), "%s-gpus", nodes[i]);
        common_kube_delete(kube, &r_slices, NULL, name, NULL, NULL, NULL, &err);
        common_kube_delete(kube, &common_kube_nodes, NULL, nodes[i], NULL, NULL, NULL, &err);
    }
    common_kube_delete(kube, &r_classes, NULL, cls, NULL, NULL, NULL, &err);
    e2e_drop_ns(kube, ns);
    common_kube_client_destroy(kube);
}

/* a kwok node in clique c and its ResourceSlice: 8 GPUs, named <model>-<i>; the first four
 * of model, the last four of model2 (model when NULL), listed in that order */
static void make_node(const char *model, const char *model2, const char *clique)
{
    struct common_error err;
    json_t *n, *devs = json_array();
    enum common_rc rc;

    ck_assert_int_lt(n_nodes, 8);
    snprintf(nodes[n_nodes], sizeof(nodes[0]), "dra-%s-%d", run, n_nodes);
    n = e2e_yamlf("apiVersion: v1\nkind: Node\n"
                  "metadata:\n  name: %s\n"
                  "  labels: {%s: %s, nvidia.com/gpu.clique: '%s'}\n"
                  "  annotations: {kwok.x-k8s.io/node: fake}\n"
                  "status:\n  allocatable: {cpu: '64', memory: 512Gi, pods: '110'}\n"
                  "  capacity: {cpu: '64', memory: 512Gi, pods: '110'}\n",
                  nodes[n_nodes], RUN_LABEL, run, clique);
    rc = common_kube_create(kube, &common_kube_nodes, NULL, n, NULL, NULL, &err);
    json_decref(n);
    ck_assert_msg(rc == COMMON_OK, "node %s: %s", nodes[n_nodes], err.msg);
    for (int d = 0; d < 8; d++) {
        const char *m = d >= 4 && model2 ? model2 : model;
        char dn[32];
        snprintf(dn, sizeof(dn), "%s-%d", m, d);
        json_array_append_new(devs, json_pack("{s:s, s:{s:{s:s}}, s:{s:{s:s}}}", "name", dn,
                                              "attributes", "productName", "string", m, "capacity",
                                              "memory", "value", "80Gi"));
    }
    n = e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\n"
                  "metadata: {name: %s-gpus}\n"
                  "spec:\n  driver: %s\n  nodeName: %s\n"
                  "  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n",
                  nodes[n_nodes], DRIVER, nodes[n_nodes], nodes[n_nodes]);
    json_object_set_new(json_object_get(n, "spec"), "devices", devs);
    n_nodes++;
    create(&r_slices, NULL, n);
}

static void make_gpu_node(const char *model, const char *clique)
{
    make_node(model, NULL, clique);
}

/* a claim of another pod holding device <dev> of node i's pool */
static void take_device(int i, const char *dev)
{
    json_t *c = e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
                          "metadata: {name: busy-%d, namespace: %s}\n"
                          "spec: {devices: {requests: [{name: gpu, exactly: "
                          "{deviceClassName: %s}}]}}\n",
                          i, ns, cls);
    json_t *got = NULL;
    struct common_error err;
    char path[512], *body;
    struct common_buf resp;
    long status = 0;
    enum common_rc rc;

    ck_assert_msg(common_kube_create(kube, &r_claims, ns, c, NULL, &got, &err) == COMMON_OK, "%s",
                  err.msg);
    json_decref(c);
    json_object_set_new(
        got, "status",
        e2e_yamlf("allocation:\n  devices: {results: [{request: gpu, driver: %s, pool: %s, "
                  "device: %s}]}\n"
                  "  nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, "
                  "operator: In, values: [%s]}]}]}\n",
                  DRIVER, nodes[i], dev, nodes[i]));
    body = json_dumps(got, JSON_COMPACT);
    snprintf(path, sizeof(path),
             "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/busy-%d/status", ns, i);
    common_buf_init(&resp, (size_t)1 << 20);
    rc = common_kube_request(kube, "PUT", path, "application/json", body, strlen(body), NULL, &resp,
                             &status, &err);
    common_buf_free(&resp);
    free(body);
    json_decref(got);
    ck_assert_msg(rc == COMMON_OK, "allocate busy-%d: %s", i, err.msg);
}

static void make_podgroup(const char *name, int min_member, int timeout_s, const char *match)
{
    json_t *pg = e2e_yamlf("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                           "metadata: {name: %s, namespace: %s}\n"
                           "spec: {minMember: %d, scheduleTimeoutSeconds: %d}\n",
                           name, ns, min_member, timeout_s);
    if (match)
        json_object_set_new(json_object_get(pg, "metadata"), "annotations",
                            json_pack("{s:s}", "trainsched.io/dra-match-attribute", match));
    create(&common_kube_podgroups, ns, pg);
}

static void make_pod_claiming(const char *name, const char *gang, int gated, const char *tmpl)
{
    create(&common_kube_pods, ns,
           e2e_yamlf("apiVersion: v1\nkind: Pod\n"
                     "metadata: {name: %s, namespace: %s, labels: {%s: %s}}\n"
                     "spec:\n"
                     "  nodeSelector: {%s: '%s'}\n"
                     "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, "
                     "effect: NoSchedule}]\n"
                     "  resourceClaims: [{name: gpu, resourceClaimTemplateName: %s}]\n"
                     "  containers:\n"
                     "  - name: c\n"
                     "    image: registry.k8s.io/pause:3.10\n"
                     "    resources:\n"
                     "      requests: {cpu: '1', trainsched.io/gang: '1'}\n"
                     "      limits: {trainsched.io/gang: '1'}\n"
                     "      claims: [{name: gpu}]\n"
                     "%s",
                     name, ns, GANG_LABEL, gang, RUN_LABEL, run, tmpl,
                     gated ? "  schedulingGates: [{name: trainsched.io/e2e-later}]\n" : ""));
}

static void make_pod(const char *name, const char *gang, int gated)
{
    make_pod_claiming(name, gang, gated, "gpu-8");
}

static json_t *list(const struct common_kube_resource *r)
{
    struct common_error err;
    json_t *items = NULL;

    ck_assert_msg(common_kube_list(kube, r, ns, NULL, &items, NULL, &err) == COMMON_OK, "%s",
                  err.msg);
    return items;
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* pods of gang bound */
static int bound(const char *gang)
{
    json_t *items = list(&common_kube_pods), *p;
    size_t i;
    int n = 0;

    json_array_foreach(items, i, p)
    {
        const char *g = str_at(json_object_get(p, "metadata"), "labels", GANG_LABEL);
        const char *nn = str_at(p, "spec", "nodeName");
        n += g && strcmp(g, gang) == 0 && nn && *nn;
    }
    json_decref(items);
    return n;
}

/* wait until want pods of gang are bound; the Bindings of a release go out one by one, so a
 * part may be seen for a moment, never for 5 s */
static void wait_bound(const char *gang, int want, double secs)
{
    double t0 = e2e_now_s(), part_since = -1;
    int n = 0;

    while (e2e_now_s() - t0 < secs) {
        n = bound(gang);
        if (n > 0 && n < want && part_since < 0)
            part_since = e2e_now_s();
        ck_assert_msg(part_since < 0 || n >= want || e2e_now_s() - part_since < 5,
                      "gang %s partly bound for 5 s: %d of %d", gang, n, want);
        if (n >= want)
            return;
        e2e_nap(250);
    }
    ck_abort_msg("gang %s: %d of %d pods bound after %.0f s", gang, n, want, secs);
}

/* the claims of pods of gang: each must be allocated on its pod's node with 8 devices of the
 * node's pool; models[] gets each claim's device-name prefix (the model); returns how many */
static int check_claims_n(const char *gang, char models[][16], int max, size_t want_devices)
{
    json_t *pods = list(&common_kube_pods), *claims = list(&r_claims), *p, *c;
    size_t i, k;
    int n = 0;

    json_array_foreach(pods, i, p)
    {
        const char *g = str_at(json_object_get(p, "metadata"), "labels", GANG_LABEL);
        const char *uid = str_at(p, "metadata", "uid");
        const char *node = str_at(p, "spec", "nodeName");
        int found = 0;
        if (!g || strcmp(g, gang) != 0)
            continue;
        json_array_foreach(claims, k, c)
        {
            const json_t *own = json_array_get(
                json_object_get(json_object_get(c, "metadata"), "ownerReferences"), 0);
            const json_t *alloc = json_object_get(json_object_get(c, "status"), "allocation");
            const json_t *res = json_object_get(json_object_get(alloc, "devices"), "results");
            const json_t *term = json_array_get(
                json_object_get(json_object_get(alloc, "nodeSelector"), "nodeSelectorTerms"), 0);
            const json_t *mf = json_array_get(json_object_get(term, "matchFields"), 0);
            size_t r;
            const json_t *x;
            if (!own || strcmp(json_string_value(json_object_get(own, "uid")), uid) != 0)
                continue;
            found = 1;
            ck_assert_msg(alloc != NULL, "claim of %s not allocated",
                          str_at(p, "metadata", "name"));
            ck_assert_msg(json_array_size(res) == want_devices,
                          "claim of %s has %zu devices, want %zu", str_at(p, "metadata", "name"),
                          json_array_size(res), want_devices);
            ck_assert_str_eq(json_string_value(json_array_get(json_object_get(mf, "values"), 0)),
                             node);
            json_array_foreach(res, r, x)
            {
                const char *dev = json_string_value(json_object_get(x, "device"));
                ck_assert_str_eq(json_string_value(json_object_get(x, "pool")), node);
                if (n < max && r == 0)
                    snprintf(models[n], sizeof(models[0]), "%.*s", (int)strcspn(dev, "-"), dev);
                /* one model per claim: every device has the first one's name prefix */
                ck_assert_msg(n >= max || strncmp(dev, models[n], strlen(models[n])) == 0,
                              "claim of %s mixes models: %s and %s", str_at(p, "metadata", "name"),
                              models[n], dev);
            }
        }
        ck_assert_msg(found, "pod %s has no claim", str_at(p, "metadata", "name"));
        n++;
    }
    json_decref(pods);
    json_decref(claims);
    return n;
}

static int check_claims(const char *gang, char models[][16], int max)
{
    return check_claims_n(gang, models, max, 8);
}

/* claims of the namespace that are allocated, other than busy-* */
static int allocated_claims(void)
{
    json_t *claims = list(&r_claims), *c;
    size_t k;
    int n = 0;

    json_array_foreach(claims, k, c)
    {
        const char *name = str_at(c, "metadata", "name");
        n += strncmp(name, "busy-", 5) != 0 &&
             json_object_get(json_object_get(c, "status"), "allocation") != NULL;
    }
    json_decref(claims);
    return n;
}

START_TEST(a_gang_of_8_gpu_pods_binds_whole_with_its_claims_allocated_on_its_nodes)
{
    char models[4][16];
    json_t *pods;
    size_t i;
    const json_t *p;

    make_gpu_node("h100", "c1.A");
    make_gpu_node("h100", "c1.A");
    make_gpu_node("h100", "c1.B");
    make_gpu_node("h100", "c1.B");
    take_device(0, "h100-3"); /* node 0 cannot hold a whole 8-GPU member */
    make_podgroup("g", 3, 30, NULL);
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof(name), "g-%d", k);
        make_pod(name, "g", 0);
    }
    wait_bound("g", 3, 90);
    ck_assert_int_eq(check_claims("g", models, 4), 3);
    pods = list(&common_kube_pods);
    json_array_foreach(pods, i, p) ck_assert_str_ne(str_at(p, "spec", "nodeName"), nodes[0]);
    json_decref(pods);
    /* the device metrics follow the claims: 1 allocated on node 0, 8 on each member's node */
    {
        double t0 = e2e_now_s(), busy = 0, total = 0;
        char lab[256];
        while (e2e_now_s() - t0 < 20) {
            struct common_buf b;
            common_buf_init(&b, (size_t)8 << 20);
            ck_assert_int_eq(common_metrics_render(metrics, &b), COMMON_OK);
            snprintf(lab, sizeof(lab), "pool=\"%s\",state=\"allocated\"", nodes[0]);
            busy = e2e_metric(b.data, "trainsched_extender_dra_devices", lab);
            total = 0;
            for (int k = 0; k < n_nodes; k++) {
                snprintf(lab, sizeof(lab), "pool=\"%s\",state=\"allocated\"", nodes[k]);
                total += e2e_metric(b.data, "trainsched_extender_dra_devices", lab);
            }
            common_buf_free(&b);
            if (busy == 1 && total == 25)
                break;
            e2e_nap(250);
        }
        ck_assert_msg(busy == 1 && total == 25,
                      "trainsched_extender_dra_devices allocated: %g on the busy node, %g in all "
                      "(want 1 and 25)",
                      busy, total);
    }
}
END_TEST

START_TEST(a_gang_asking_for_one_gpu_model_never_mixes_models)
{
    char models[4][16];

    make_gpu_node("h100", "c1.A");
    make_gpu_node("a100", "c1.A");
    make_gpu_node("h100", "c1.B");
    make_gpu_node("a100", "c1.B");
    make_podgroup("m", 2, 30, DRIVER "/productName");
    make_pod("m-0", "m", 0);
    make_pod("m-1", "m", 0);
    wait_bound("m", 2, 90);
    ck_assert_int_eq(check_claims("m", models, 4), 2);
    ck_assert_str_eq(models[0], models[1]);
    fprintf(stderr, "one model: both members on %s\n", models[0]);
}
END_TEST

START_TEST(on_nodes_mixing_two_models_the_claims_get_the_planned_devices)
{
    char models[4][16];
    struct extender_server_stats st;
    double t0, took;
    uint64_t filters0;

    /* each node lists four h100 then four a100: kube-scheduler's first fit takes h100-0..3;
     * the gang's plan tries productName values in order, "a100" first, and it fits (4 a100 on
     * each node), so the plan gives each member the four a100 of its node */
    make_node("h100", "a100", "c1.A");
    make_node("h100", "a100", "c1.A");
    make_podgroup("x", 2, 30, DRIVER "/productName");
    extender_server_stats(ext, &st);
    filters0 = st.filter;
    t0 = e2e_now_s();
    make_pod_claiming("x-0", "x", 0, "gpu-4");
    make_pod_claiming("x-1", "x", 0, "gpu-4");
    wait_bound("x", 2, 90);
    ck_assert_int_eq(check_claims_n("x", models, 4, 4), 2);
    took = e2e_now_s() - t0;
    /* the figures of the note: kube-scheduler's PreBind finds each claim allocated by
     * trainsched's filter-time write, fails the cycle ("got allocated elsewhere in the
     * meantime") and retries the pod after its backoff: a second filter call per member */
    extender_server_stats(ext, &st);
    fprintf(stderr,
            "mixed models: bound in %.1f s; claims written by trainsched: %llu; filter calls "
            "for the 2 members: %llu; models %s %s\n",
            took, (unsigned long long)st.dra_claims_written,
            (unsigned long long)(st.filter - filters0), models[0], models[1]);
    ck_assert_msg(strcmp(models[0], "a100") == 0 && strcmp(models[1], "a100") == 0,
                  "claims hold %s and %s devices; the plan gave a100 (kube-scheduler's own "
                  "first fit would take h100)",
                  models[0], models[1]);
}
END_TEST

/* the claims of gang's pods (by name prefix "<gang>-"): fn(claim, arg) for each; the sum */
static int each_gang_claim(const char *gang, int (*fn)(const json_t *c, const char *name))
{
    json_t *claims = list(&r_claims), *c;
    size_t k, len = strlen(gang);
    int n = 0;

    json_array_foreach(claims, k, c)
    {
        const char *name = str_at(c, "metadata", "name");
        if (strncmp(name, gang, len) == 0 && name[len] == '-')
            n += fn(c, name);
    }
    json_decref(claims);
    return n;
}

static int is_allocated(const json_t *c, const char *name)
{
    (void)name;
    return json_object_get(json_object_get(c, "status"), "allocation") != NULL;
}

/* claims of gang's pods that are allocated */
static int gang_claims_allocated(const char *gang)
{
    return each_gang_claim(gang, is_allocated);
}

static void dump_claims(void);

START_TEST(two_gangs_racing_for_the_same_gpus_never_both_hold)
{
    double t0;
    const char *winner = NULL, *loser = NULL;

    for (int k = 0; k < 3; k++)
        make_gpu_node("h100", "c1.A");
    make_podgroup("a", 2, 30, NULL);
    make_podgroup("b", 2, 30, NULL);
    make_pod("a-0", "a", 0);
    make_pod("b-0", "b", 0);
    make_pod("a-1", "a", 0);
    make_pod("b-1", "b", 0);
    t0 = e2e_now_s();
    while (!winner) {
        int na = bound("a"), nb = bound("b");
        ck_assert_msg(!(na && nb), "both gangs have bound pods: a %d, b %d", na, nb);
        if (na == 2 || nb == 2) {
            winner = na == 2 ? "a" : "b";
            loser = na == 2 ? "b" : "a";
        }
        ck_assert_msg(e2e_now_s() - t0 < 90, "no gang bound whole after 90 s (a %d, b %d)", na, nb);
        e2e_nap(250);
    }
    /* the loser keeps nothing while the winner runs */
    t0 = e2e_now_s();
    while (e2e_now_s() - t0 < 10) {
        ck_assert_int_eq(bound(loser), 0);
        ck_assert_int_eq(bound(winner), 2);
        e2e_nap(500);
    }
    /* and no device: a claim of the loser that an attempt allocated (kube-scheduler's PreBind,
     * or trainsched's early write) is released by kube-scheduler's Unreserve or the stale
     * sweep (its grace included) well inside 60 s; a leak stays for good */
    t0 = e2e_now_s();
    while (gang_claims_allocated(loser) != 0) {
        if (e2e_now_s() - t0 > 60)
            dump_claims();
        ck_assert_msg(e2e_now_s() - t0 <= 60, "gang %s still has %d claims allocated after 60 s",
                      loser, gang_claims_allocated(loser));
        ck_assert_int_eq(bound(loser), 0);
        e2e_nap(500);
    }
    fprintf(stderr, "race: loser's claims free %.1f s after the 10 s watch\n", e2e_now_s() - t0);
    ck_assert_int_eq(gang_claims_allocated(winner), 2);
    fprintf(stderr, "race: gang %s bound whole, gang %s holds nothing\n", winner, loser);
}
END_TEST

/* on a failure: every claim of the namespace with its allocation's node and reservations */
static void dump_claims(void)
{
    json_t *claims = list(&r_claims), *c;
    size_t k;

    json_array_foreach(claims, k, c)
    {
        json_t *st = json_object_get(c, "status");
        char *d = json_dumps(st ? st : json_null(), JSON_COMPACT);
        fprintf(stderr, "claim %s: %.600s\n", str_at(c, "metadata", "name"), d ? d : "");
        free(d);
    }
    json_decref(claims);
}

/* a gang of three members, the third gated. mixed: 4-GPU members on nodes listing four h100
 * then four a100, the gang asking one productName, so the plan takes a100 and trainsched writes
 * each claim at filter time; else 8-GPU members on h100 nodes */
static void make_gang_of_three(const char *gang, int timeout_s, int mixed)
{
    for (int k = 0; k < 3; k++)
        make_node("h100", mixed ? "a100" : NULL, "c1.A");
    make_podgroup(gang, 3, timeout_s, mixed ? DRIVER "/productName" : NULL);
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof(name), "%s-%d", gang, k);
        make_pod_claiming(name, gang, k == 2, mixed ? "gpu-4" : "gpu-8");
    }
}

/* two of three 8-GPU members held by the in-process extender (the third is gated); returns
 * when it holds 2 */
static void hold_two(const char *gang, int timeout_s)
{
    struct extender_server_stats st;
    double t0 = e2e_now_s();

    make_gang_of_three(gang, timeout_s, 0);
    for (;;) {
        extender_server_stats(ext, &st);
        if (st.held_now == 2)
            break;
        ck_assert_int_eq(bound(gang), 0);
        if (e2e_now_s() - t0 >= 60)
            dump_claims();
        ck_assert_msg(e2e_now_s() - t0 < 60, "%zu binds held after 60 s, want 2", st.held_now);
        e2e_nap(200);
    }
}

START_TEST(a_gang_short_of_a_member_holds_no_device_after_its_timeout)
{
    struct extender_server_stats st;
    double t0;
    int n = -1;

    hold_two("t", 8);
    fprintf(stderr, "timeout: 2 held with %d claims allocated\n", allocated_claims());
    t0 = e2e_now_s();
    while (e2e_now_s() - t0 < 40) {
        extender_server_stats(ext, &st);
        ck_assert_int_eq(bound("t"), 0);
        if (st.held_now == 0 && (n = allocated_claims()) == 0)
            break;
        e2e_nap(250);
    }
    extender_server_stats(ext, &st);
    fprintf(stderr,
            "timeout: no claim allocated %.1f s after holding; released by trainsched: %llu\n",
            e2e_now_s() - t0, (unsigned long long)st.dra_claims_released);
    ck_assert_msg(n == 0, "%d claims of the timed-out gang still allocated", n);
    ck_assert_int_eq(bound("t"), 0);
}
END_TEST

START_TEST(a_restart_mid_gang_rebuilds_from_the_claims)
{
    char models[4][16];
    struct common_error err;

    hold_two("r", 60);
    stop_extender();
    ck_assert_int_eq(bound("r"), 0);
    start_extender();
    ck_assert_msg(common_kube_patch(kube, &common_kube_pods, ns, "r-2", COMMON_KUBE_JSON_PATCH,
                                    "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]",
                                    NULL, NULL, &err) == COMMON_OK,
                  "ungate r-2: %s", err.msg);
    wait_bound("r", 3, 90);
    ck_assert_int_eq(check_claims("r", models, 4), 3);
}
END_TEST

/* a pod of gang naming the standalone ResourceClaim claim (resourceClaimName) */
static void make_pod_sharing(const char *name, const char *gang, int gated, const char *claim)
{
    create(&common_kube_pods, ns,
           e2e_yamlf("apiVersion: v1\nkind: Pod\n"
                     "metadata: {name: %s, namespace: %s, labels: {%s: %s}}\n"
                     "spec:\n"
                     "  nodeSelector: {%s: '%s'}\n"
                     "  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, "
                     "effect: NoSchedule}]\n"
                     "  resourceClaims: [{name: gpu, resourceClaimName: %s}]\n"
                     "  containers:\n"
                     "  - name: c\n"
                     "    image: registry.k8s.io/pause:3.10\n"
                     "    resources:\n"
                     "      requests: {cpu: '1', trainsched.io/gang: '1'}\n"
                     "      limits: {trainsched.io/gang: '1'}\n"
                     "      claims: [{name: gpu}]\n"
                     "%s",
                     name, ns, GANG_LABEL, gang, RUN_LABEL, run, claim,
                     gated ? "  schedulingGates: [{name: trainsched.io/e2e-later}]\n" : ""));
}

static void make_claim(const char *name, int count)
{
    create(&r_claims, ns,
           e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
                     "metadata: {name: %s, namespace: %s}\n"
                     "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: %s, "
                     "allocationMode: ExactCount, count: %d}}]}}\n",
                     name, ns, cls, count));
}

static json_t *get_claim(const char *name)
{
    json_t *c = NULL;
    struct common_error err;
    ck_assert_msg(common_kube_get(kube, &r_claims, ns, name, &c, &err) == COMMON_OK,
                  "get claim %s: %s", name, err.msg);
    return c;
}

/* 1 when pod uid is in the claim's status.reservedFor */
static int reserved_for(const json_t *claim, const char *uid)
{
    const json_t *r;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(claim, "status"), "reservedFor"), i, r)
    {
        const char *u = json_string_value(json_object_get(r, "uid"));
        if (u && strcmp(u, uid) == 0)
            return 1;
    }
    return 0;
}

/* allocated claims of the namespace whose status.reservedFor names no bound pod: devices held
 * by nobody */
static int leaked_claims(void)
{
    json_t *claims = list(&r_claims), *pods = list(&common_kube_pods), *c, *p;
    size_t k, i;
    int n = 0;

    json_array_foreach(claims, k, c)
    {
        int used = 0;
        if (!json_object_get(json_object_get(c, "status"), "allocation") ||
            strncmp(str_at(c, "metadata", "name"), "busy-", 5) == 0)
            continue;
        json_array_foreach(pods, i, p)
        {
            const char *nn = str_at(p, "spec", "nodeName");
            used |= nn && *nn && reserved_for(c, str_at(p, "metadata", "uid"));
        }
        n += !used;
    }
    json_decref(claims);
    json_decref(pods);
    return n;
}

static double alloc_metric(const char *event)
{
    struct common_buf b;
    char lab[64];
    double v;
    common_buf_init(&b, (size_t)8 << 20);
    ck_assert_int_eq(common_metrics_render(metrics, &b), COMMON_OK);
    snprintf(lab, sizeof(lab), "event=\"%s\"", event);
    v = e2e_metric(b.data, "trainsched_extender_dra_allocations_total", lab);
    common_buf_free(&b);
    return v;
}

START_TEST(a_claim_shared_by_two_members_binds_whole_ten_times_of_ten)
{
    int whole = 0;

    make_gpu_node("h100", "c1.A");
    make_gpu_node("h100", "c1.A");
    for (int k = 0; k < 10; k++) {
        char gang[16], claim[32], p0[24], p1[24], node[96] = "";
        json_t *c, *pods, *p;
        size_t i;
        double t0 = e2e_now_s();
        int n = 0;
        snprintf(gang, sizeof(gang), "s%d", k);
        snprintf(claim, sizeof(claim), "shared-%d", k);
        snprintf(p0, sizeof(p0), "s%d-0", k);
        snprintf(p1, sizeof(p1), "s%d-1", k);
        make_claim(claim, 2);
        make_podgroup(gang, 2, 20, NULL);
        make_pod_sharing(p0, gang, 0, claim);
        make_pod_sharing(p1, gang, 0, claim);
        while (e2e_now_s() - t0 < 60 && (n = bound(gang)) < 2)
            e2e_nap(250);
        if (n < 2)
            dump_claims();
        ck_assert_msg(n == 2, "round %d: %d of 2 members sharing claim %s bound after 60 s", k, n,
                      claim);
        /* one allocation, on the node both run on, reserved for both */
        c = get_claim(claim);
        pods = list(&common_kube_pods);
        json_array_foreach(pods, i, p)
        {
            const char *g = str_at(json_object_get(p, "metadata"), "labels", GANG_LABEL);
            if (!g || strcmp(g, gang) != 0)
                continue;
            if (!node[0])
                snprintf(node, sizeof(node), "%s", str_at(p, "spec", "nodeName"));
            ck_assert_str_eq(str_at(p, "spec", "nodeName"), node);
            ck_assert_msg(reserved_for(c, str_at(p, "metadata", "uid")),
                          "claim %s is not reserved for %s", claim, str_at(p, "metadata", "name"));
        }
        {
            const json_t *alloc = json_object_get(json_object_get(c, "status"), "allocation");
            const json_t *term = json_array_get(
                json_object_get(json_object_get(alloc, "nodeSelector"), "nodeSelectorTerms"), 0);
            const json_t *mf = json_array_get(json_object_get(term, "matchFields"), 0);
            ck_assert_int_eq(
                json_array_size(json_object_get(json_object_get(alloc, "devices"), "results")), 2);
            ck_assert_str_eq(json_string_value(json_array_get(json_object_get(mf, "values"), 0)),
                             node);
        }
        json_decref(pods);
        json_decref(c);
        whole++;
        fprintf(stderr, "shared claim: round %d bound whole in %.1f s on %s\n", k, e2e_now_s() - t0,
                node);
        drop_pods();
        common_kube_delete(kube, &r_claims, ns, claim, NULL, NULL, NULL, NULL);
        common_kube_delete(kube, &common_kube_podgroups, ns, gang, NULL, NULL, NULL, NULL);
    }
    ck_assert_int_eq(whole, 10);
}
END_TEST

/* the extender of the kill case, run by a child process: the options of start_extender on port
 * with its own API client, Events and metrics (the parent's connections stay the parent's), and
 * /metrics served on metrics_port as serve does; never returns (SIGKILL ends it, and so does the
 * death of the test process that forked it) */
static void serve_in_child(pid_t test_pid, int metrics_port)
{
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct common_httpd *mh;
    struct common_health *health = NULL;
    struct common_error err;
    char addr[64];

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != test_pid)
        _exit(1);
    kube = e2e_client(20000, 0);
    events = common_events_create(kube, "e2e-extender-dra", NULL, &err);
    if (!events)
        _exit(1);
    start_extender();
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", metrics_port);
    ho.address = addr;
    mh = common_httpd_create(&ho, &err);
    if (!mh || common_health_install(mh, metrics, &health, &err) != COMMON_OK ||
        common_httpd_start(mh, &err) != COMMON_OK)
        _exit(1);
    for (;;)
        pause();
}

/* 1 when claim c is allocated with trainsched's annotation (written by trainsched) */
static int written_by_trainsched(const json_t *c, const char *name)
{
    return is_allocated(c, name) &&
           json_object_get(json_object_get(json_object_get(c, "metadata"), "annotations"),
                           "trainsched.io/dra-allocated-for") != NULL;
}

/* 1 when claim c is reserved for some consumer */
static int is_reserved(const json_t *c, const char *name)
{
    (void)name;
    return json_array_size(json_object_get(json_object_get(c, "status"), "reservedFor")) > 0;
}

START_TEST(a_kill_mid_gang_with_claims_written_early_binds_whole_and_leaks_nothing)
{
    char models[4][16];
    struct common_error err;
    double t0, took, held = NAN, written = NAN;
    int early = 0, leaked = -1, st = 0, mport = e2e_free_port();
    pid_t test_pid = getpid();

    /* trainsched is the child process: the suite's extender leaves it the port */
    stop_extender();
    fflush(stdout);
    fflush(stderr);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0)
        serve_in_child(test_pid, mport);
    /* two of three 4-GPU members on mixed nodes held by it, their claims written by trainsched
     * at filter time: its /metrics says 2 binds held, the API the claims it wrote */
    make_gang_of_three("k", 30, 1);
    t0 = e2e_now_s();
    for (;;) {
        char *body = NULL;
        ck_assert_msg(waitpid(child, &st, WNOHANG) == 0, "the extender's process ended: %s",
                      e2e_exit_text(st));
        if (e2e_http_get(mport, "/metrics", &body) == 200) {
            held = e2e_metric(body, "trainsched_extender_held_binds", NULL);
            written =
                e2e_metric(body, "trainsched_extender_dra_allocations_total", "event=\"written\"");
        }
        free(body);
        ck_assert_int_eq(bound("k"), 0);
        if (held == 2)
            break;
        if (e2e_now_s() - t0 >= 60)
            dump_claims();
        ck_assert_msg(e2e_now_s() - t0 < 60, "%g binds held after 60 s, want 2", held);
        e2e_nap(200);
    }
    /* whose write lands first is a race: trainsched writes a claim at filter time when the
     * filter leaves one node, else kube-scheduler's DynamicResources writes it at PreBind (on
     * 1.36.3 trainsched wrote both in every run; on 1.37.2 kube-scheduler wrote one or both in
     * 2 of 3 runs); both claims are allocated before a bind is held, whoever wrote them, and
     * after the kill none may stay allocated to nobody (the leak check below) */
    early = each_gang_claim("k", written_by_trainsched);
    fprintf(stderr,
            "kill: 2 held, %d claims allocated, %d of them written by trainsched (written %g)\n",
            gang_claims_allocated("k"), early, written);
    ck_assert_int_eq(gang_claims_allocated("k"), 2);
    /* SIGKILL: nothing is answered nor released; kube-scheduler's held binds fail and its own
     * Unreserve runs; the claims stay allocated as trainsched wrote them */
    ck_assert_int_eq(kill(child, SIGKILL), 0);
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    child = 0;
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the extender's process: %s",
                  e2e_exit_text(st));
    ck_assert_int_eq(bound("k"), 0);
    fprintf(stderr, "kill: right after the kill %d claims of the gang allocated, %d reserved\n",
            gang_claims_allocated("k"), each_gang_claim("k", is_reserved));
    start_extender();
    ck_assert_msg(common_kube_patch(kube, &common_kube_pods, ns, "k-2", COMMON_KUBE_JSON_PATCH,
                                    "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]",
                                    NULL, NULL, &err) == COMMON_OK,
                  "ungate k-2: %s", err.msg);
    t0 = e2e_now_s();
    /* one gang timeout (30 s) plus its backoff (at most 4 s) */
    wait_bound("k", 3, 34);
    took = e2e_now_s() - t0;
    ck_assert_int_eq(check_claims_n("k", models, 4, 4), 3);
    t0 = e2e_now_s();
    while (e2e_now_s() - t0 < 20 && (leaked = leaked_claims()) != 0)
        e2e_nap(250);
    if (leaked)
        dump_claims();
    fprintf(stderr, "kill: bound whole %.1f s after the restart; claims allocated to nobody: %d\n",
            took, leaked);
    ck_assert_int_eq(leaked, 0);
}
END_TEST

/* 1 when an Event of reason about ResourceClaim claim exists in the namespace, within secs */
static int claim_event(const char *claim, const char *reason, double secs)
{
    double t0 = e2e_now_s();

    do {
        json_t *items = list(&common_kube_events), *e;
        size_t i;
        int found = 0;
        json_array_foreach(items, i, e)
        {
            const char *r = json_string_value(json_object_get(e, "reason"));
            found |= r && strcmp(r, reason) == 0 &&
                     strcmp(str_at(e, "regarding", "kind") ? str_at(e, "regarding", "kind") : "",
                            "ResourceClaim") == 0 &&
                     strcmp(str_at(e, "regarding", "name") ? str_at(e, "regarding", "name") : "",
                            claim) == 0;
        }
        json_decref(items);
        if (found)
            return 1;
        e2e_nap(250);
    } while (e2e_now_s() - t0 < secs);
    return 0;
}

START_TEST(a_claim_trainsched_allocated_is_released_once_its_gang_is_deleted)
{
    double t0;
    json_t *c = NULL;
    int state = 0;

    /* member 0 names a standalone claim; member 1 is gated, so the gang never completes */
    make_node("h100", "a100", "c1.A");
    make_node("h100", "a100", "c1.A");
    make_claim("keep", 4);
    make_podgroup("d", 2, 6, DRIVER "/productName");
    make_pod_sharing("d-0", "d", 0, "keep");
    make_pod_sharing("d-1", "d", 1, "keep");
    /* trainsched writes the claim (the plan's a100; the scheduler's first fit is h100); the
     * gang times out: kube-scheduler unreserves the pod, the allocation stays, reserved for
     * nobody (kube-controller-manager deallocates only a claim whose last reservation it
     * removed itself) */
    t0 = e2e_now_s();
    while (e2e_now_s() - t0 < 60 && state < 2) {
        const json_t *st, *md;
        json_decref(c);
        c = get_claim("keep");
        st = json_object_get(c, "status");
        md = json_object_get(c, "metadata");
        if (json_object_get(st, "allocation") &&
            json_object_get(json_object_get(md, "annotations"), "trainsched.io/dra-allocated-for"))
            state = json_array_size(json_object_get(st, "reservedFor")) == 0 ? 2 : 1;
        e2e_nap(100);
    }
    json_decref(c);
    if (state < 2)
        dump_claims();
    ck_assert_msg(state == 2, "claim keep: %s after 60 s",
                  state ? "allocated by trainsched, still reserved"
                        : "never allocated by trainsched");
    /* the gang goes away: nothing plans, holds or runs the allocation any more */
    drop_pods();
    common_kube_delete(kube, &common_kube_podgroups, ns, "d", NULL, NULL, NULL, NULL);
    t0 = e2e_now_s();
    while (e2e_now_s() - t0 < 30) {
        c = get_claim("keep");
        state = json_object_get(json_object_get(c, "status"), "allocation") != NULL;
        json_decref(c);
        if (!state)
            break;
        e2e_nap(250);
    }
    if (state)
        dump_claims();
    fprintf(stderr, "gang deleted: claim released %.1f s later; leaked_freed %g\n",
            e2e_now_s() - t0, alloc_metric("leaked_freed"));
    ck_assert_msg(!state, "claim keep still allocated 30 s after its gang was deleted");
    ck_assert_msg(alloc_metric("leaked_freed") >= 1,
                  "trainsched_extender_dra_allocations_total{event=\"leaked_freed\"} not counted");
    ck_assert_msg(alloc_metric("written") >= 1,
                  "trainsched_extender_dra_allocations_total{event=\"written\"} not counted");
    /* and Events regarding the claim say what happened */
    ck_assert_msg(claim_event("keep", "DeviceAllocationWritten", 15),
                  "no DeviceAllocationWritten Event regarding claim keep");
    ck_assert_msg(claim_event("keep", "LeakedAllocationFreed", 15),
                  "no LeakedAllocationFreed Event regarding claim keep");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gangs with DRA claims, real kube-scheduler and controller-manager");
    TCase *tc = tcase_create("dra");

    if (!getenv("KUBECONFIG")) {
        fprintf(stderr, "KUBECONFIG is not set: start the test bed first\n");
        return 1;
    }
    if (getenv("E2E_DEBUG"))
        common_log_set_level(COMMON_LOG_DEBUG);
    port = e2e_free_port_or_exit();
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, a_gang_of_8_gpu_pods_binds_whole_with_its_claims_allocated_on_its_nodes);
    tcase_add_test(tc, a_gang_asking_for_one_gpu_model_never_mixes_models);
    tcase_add_test(tc, on_nodes_mixing_two_models_the_claims_get_the_planned_devices);
    tcase_add_test(tc, a_gang_short_of_a_member_holds_no_device_after_its_timeout);
    tcase_add_test(tc, two_gangs_racing_for_the_same_gpus_never_both_hold);
    tcase_add_test(tc, a_restart_mid_gang_rebuilds_from_the_claims);
    tcase_add_test(tc, a_claim_shared_by_two_members_binds_whole_ten_times_of_ten);
    tcase_add_test(tc, a_kill_mid_gang_with_claims_written_early_binds_whole_and_leaks_nothing);
    tcase_add_test(tc, a_claim_trainsched_allocated_is_released_once_its_gang_is_deleted);
    suite_add_tcase(s, tc);
    return e2e_run_with_extender(s, port, BIND_TIMEOUT_S) ? 1 : 0;
}
