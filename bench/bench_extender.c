/*
 * bench/bench_extender.c - the scheduler extender's filter and prioritize verbs over HTTP on
 * loopback at 5,000 nodes and 50,000 pods, beside an empty handler on the same server and
 * beside the floor of decoding and encoding the same bodies, all in one process and one run.
 *
 * The extender is the real one (extender/server.h): extender_server_create with the options
 * cmd/serve.c passes by default (a Kubernetes client that is never called: nothing is started),
 * its four routes installed on a common_httpd (plain HTTP, 4 threads, as cmd/serve.c gives the
 * extender, 64 MiB body cap) by extender_server_install, and its books fed through
 * extender_server_feed_node / _pod / _podgroup, which run the informers' own add handlers. So
 * filter and prioritize run routes.c's handlers, metrics, stats and dirty marks included.
 *
 * The cluster (decoded from API JSON with common_*_from_json as the informers decode it): --nodes
 * nodes (cpu 64, memory 256Gi, nvidia.com/gpu 8, pods 110, trainsched.io/gang 110; 9 labels, a GPU
 * NoSchedule taint); --pods pods bound and Running, --pods / --nodes per node, each cpu 4, memory
 * 16Gi, and on even nodes the first 8 take 1 GPU each (odd nodes keep 8 GPUs free); those pods form
 * admitted gangs of 8, one PodGroup (minMember 8) per 8 pods. Then pending gangs of 8 pods (cpu 16,
 * memory 64Gi, 8 GPUs, required node affinity and tolerations, about 3.5 KB of Pod JSON each): one
 * "steady" gang whose plan exists (planned once at setup), a pool of fresh gangs, one per planning
 * request, and one gang never filtered.
 *
 * Requests, as kube-scheduler sends them with nodeCacheCapable: true (ExtenderArgs with the
 * Pod and NodeNames of every node, about 100 KB):
 *   filter-steady    filter for member 3 of the steady gang: the plan exists
 *   filter-plan      filter for member 0 of a fresh gang each request: plans the whole gang
 *   filter-nongang   filter for a pod without the PodGroup label (no mutex, no core)
 *   prio-steady      prioritize for member 3 of the steady gang
 *   prio-plan        prioritize for member 0 of the never-filtered gang (no plan: prioritize
 *                    never plans, so the same body serves every request)
 *   prio-nongang     prioritize for the pod without the label
 *   empty            POST /empty with the filter-steady body: reads it, answers a fixed small
 *                    ExtenderFilterResult (what HTTP + routing cost with this request size)
 *   echo             POST /echo with the same body: answers the precomputed filter-steady
 *                    answer bytes (what HTTP costs with this request AND this answer size)
 * Every answer is checked (HTTP 200, size and first bytes of the expected answer).
 *
 * Load generator (as bench/bench_webhook.c): libcurl multi on the main thread, --conns
 * keep-alive HTTP/1.1 connections, no pipelining. Open loop: request i is scheduled at
 * t0 + i / --rate (filter-plan: --plan-rate, it costs milliseconds) and its latency runs from
 * the scheduled time to the complete answer, so waiting for a free connection or for the
 * generator counts (no coordinated omission); also shown: the same timed from the actual send.
 * Closed loop: every connection always busy, requests/s (filter-plan stops early if its pool
 * of fresh gangs, 500 per closed-loop second, runs out). Warm-up: 1 s per variant first.
 * Floors, no HTTP, in this thread, 1 s each, timed in thread CPU time
 * (CLOCK_THREAD_CPUTIME_ID: time the thread spends descheduled on a shared machine does not
 * count): the handler itself (the route's handler through extender_server_answer); the codec alone
 * (extender_decode_args_meta, as the route decodes a pod its books know, + the encoder with the
 * verdicts or scores of the expected answer); the decode alone; jansson (json_loadb of the request
 * + json_dumps of the answer's tree, what a plain jansson service would do at least).
 *
 * Run: ./build-bext/bench/bench_extender [--nodes N] [--pods P] [--seconds D] [--conns C]
 *      [--rate R] [--plan-rate Q]   (Release build; progress on stderr, figures on stdout; see
 *      docs/benchmarks-extender.md)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/coretypes.h"
#include "common/httpd.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/metrics.h"
#include "common/log.h"
#include "extender/answer.h"
#include "extender/codec.h"
#include "extender/server.h"
#include "gang/gang.h"

#define MAX_CONNS 64
#define SERVER_THREADS 4 /* what cmd/serve.c gives the extender's server */
#define JSON_CT "application/json"
#define MAX_BODY ((size_t)64 << 20)                  /* extender_server's default body cap */
#define ARENA_MAX (MAX_BODY * 4 + ((size_t)1 << 20)) /* as extender_server_create sets it */
#define NS "ml"

static struct {
    long nodes, pods, seconds, conns, rate, plan_rate;
    int floors_only;
} cfg = {5000, 50000, 5, 4, 200, 50, 0};

/* ---- clocks, /proc ---- */

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_extender: %s: %s\n", what, msg ? msg : "");
    exit(1);
}

/* ---- samples ---- */

struct samples {
    double *v; /* µs */
    size_t n, cap;
};

static void samples_add(struct samples *s, double us)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        double *v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            die("samples", "out of memory");
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = us;
}

/* nearest-rank percentile of sorted v[0..n) */
static double pct(const struct samples *s, double q)
{
    size_t k;

    if (!s->n)
        return NAN;
    k = (size_t)ceil(q * (double)s->n);
    if (k < 1)
        k = 1;
    if (k > s->n)
        k = s->n;
    return s->v[k - 1];
}

static void samples_sort(struct samples *s)
{
    if (s->n)
        qsort(s->v, s->n, sizeof(double), bench_cmp_double);
}

static double samples_max(const struct samples *s)
{
    return s->n ? s->v[s->n - 1] : NAN;
}

/* ---- text ---- */

static void put(struct common_buf *b, const char *s)
{
    struct common_error err;

    if (common_buf_puts(b, s, &err))
        die("buffer", err.msg);
}

static void node_name(char *out, size_t n, long i)
{
    snprintf(out, n, "gpu-b%02ld-r%02ld-n%05ld", i / 500, (i / 50) % 10, i);
}

static void node_json(struct common_buf *b, long i)
{
    struct common_error err;
    char name[64];

    node_name(name, sizeof(name), i);
    if (common_buf_printf(
            b, &err,
            "{\"metadata\":{\"name\":\"%s\",\"uid\":\"d3e778a9-34df-4c9e-9fe8-%012ld\","
            "\"resourceVersion\":\"%ld\",\"labels\":{\"kubernetes.io/arch\":\"amd64\","
            "\"kubernetes.io/hostname\":\"%s\",\"kubernetes.io/os\":\"linux\","
            "\"node.kubernetes.io/instance-type\":\"a3-highgpu-8g\","
            "\"nvidia.com/gpu.present\":\"true\",\"topology.kubernetes.io/region\":\"region-1\","
            "\"topology.kubernetes.io/zone\":\"zone-%ld\",\"cloud.google.com/gce-topology-block\":"
            "\"b%02ld\",\"cloud.google.com/gce-topology-subblock\":\"r%02ld\"}},"
            "\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":"
            "\"NoSchedule\"}]},\"status\":{\"capacity\":{\"cpu\":\"64\",\"memory\":\"256Gi\","
            "\"nvidia.com/gpu\":\"8\",\"pods\":\"110\",\"trainsched.io/gang\":\"110\"},"
            "\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"nvidia.com/gpu\":\"8\","
            "\"pods\":\"110\",\"trainsched.io/gang\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
            "\"status\":\"True\"}]}}",
            name, i, 1000 + i, name, 1 + i % 2, i / 500, (i / 50) % 10))
        die("node", err.msg);
}

/*
 * A pod as the Job controller creates it (about 3.5 KB). group NULL: no PodGroup label (a pod
 * not ours). node NULL: pending. gpu, cpu, mem: requests of the main container.
 */
static void pod_json(struct common_buf *b, const char *name, const char *uid, const char *group,
                     const char *node, int gpu, int cpu, int mem_gi)
{
    struct common_error err;
    char glabel[200] = "";

    if (group)
        snprintf(glabel, sizeof(glabel), ",\"scheduling.x-k8s.io/pod-group\":\"%s\"", group);
    if (common_buf_printf(
            b, &err,
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"" NS "\",\"uid\":\"%s\","
            "\"resourceVersion\":\"1234567\",\"creationTimestamp\":\"2026-11-29T16:36:06Z\","
            "\"labels\":{\"batch.kubernetes.io/controller-uid\":"
            "\"6d1c3e0a-4e35-4a8e-9d1f-0a8f2b7c9e11\",\"batch.kubernetes.io/job-name\":"
            "\"%s-trainer-0\",\"jobset.sigs.k8s.io/jobset-name\":\"%s\","
            "\"jobset.sigs.k8s.io/replicatedjob-name\":\"trainer\"%s,"
            "\"trainer.kubeflow.org/trainjob-ancestor-step\":\"trainer\"},\"annotations\":{"
            "\"jobset.sigs.k8s.io/global-replicas\":\"8\"},\"ownerReferences\":[{\"apiVersion\":"
            "\"batch/v1\",\"kind\":\"Job\",\"name\":\"%s-trainer-0\",\"uid\":"
            "\"6d1c3e0a-4e35-4a8e-9d1f-0a8f2b7c9e11\",\"controller\":true,"
            "\"blockOwnerDeletion\":true}],\"finalizers\":[\"batch.kubernetes.io/job-tracking\"]},"
            "\"spec\":{\"volumes\":[{\"name\":\"dshm\",\"emptyDir\":{\"medium\":\"Memory\"}},"
            "{\"name\":\"kube-api-access-psg5t\",\"projected\":{\"sources\":[{"
            "\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},{"
            "\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":"
            "\"ca.crt\"}]}}],\"defaultMode\":420}}],\"initContainers\":[{\"name\":\"log-shipper\","
            "\"image\":\"fluent/fluent-bit:3.1\",\"resources\":{\"requests\":{\"cpu\":\"100m\","
            "\"memory\":\"64Mi\"}},\"restartPolicy\":\"Always\",\"imagePullPolicy\":"
            "\"IfNotPresent\"}],\"containers\":[{\"name\":\"node\",\"image\":"
            "\"pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime\",\"command\":[\"torchrun\"],"
            "\"args\":[\"--nnodes=8\",\"--nproc-per-node=8\",\"/workspace/train.py\"],\"ports\":"
            "[{\"containerPort\":29500,\"protocol\":\"TCP\"}],\"env\":[{\"name\":\"PET_NNODES\","
            "\"value\":\"8\"},{\"name\":\"PET_NODE_RANK\",\"valueFrom\":{\"fieldRef\":{"
            "\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.annotations['batch.kubernetes.io/"
            "job-completion-index']\"}}},{\"name\":\"PET_MASTER_PORT\",\"value\":\"29500\"}],"
            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"%d\",\"trainsched.io/gang\":\"1\"},"
            "\"requests\":{\"cpu\":\"%d\",\"memory\":\"%dGi\",\"nvidia.com/gpu\":\"%d\","
            "\"trainsched.io/gang\":\"1\"}},\"volumeMounts\":[{\"name\":\"dshm\",\"mountPath\":"
            "\"/dev/shm\"},{\"name\":\"kube-api-access-psg5t\",\"readOnly\":true,\"mountPath\":"
            "\"/var/run/secrets/kubernetes.io/serviceaccount\"}],\"imagePullPolicy\":"
            "\"IfNotPresent\"}],\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":30,"
            "\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":\"default\",%s%s%s"
            "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
            "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.present\","
            "\"operator\":\"Exists\"},{\"key\":\"topology.kubernetes.io/zone\",\"operator\":"
            "\"In\",\"values\":[\"zone-1\",\"zone-2\"]}]}]}}},\"schedulerName\":"
            "\"default-scheduler\",\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":"
            "\"Exists\",\"effect\":\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\","
            "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{"
            "\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":"
            "\"NoExecute\",\"tolerationSeconds\":300}],\"priority\":100000,"
            "\"preemptionPolicy\":\"PreemptLowerPriority\"},\"status\":{\"phase\":\"%s\","
            "\"qosClass\":\"Burstable\"}}",
            name, uid, group ? group : "solo", group ? group : "solo", glabel,
            group ? group : "solo", gpu, cpu, mem_gi, gpu, node ? "\"nodeName\":\"" : "",
            node ? node : "", node ? "\"," : "", node ? "Running" : "Pending"))
        die("pod", err.msg);
}

/* ---- the extender: extender/server.h, its real routes, fed without an API server ---- */

static struct extender_server *xs;
static struct common_kube *kube;       /* never called: the server is never started */
static struct common_metrics *metrics; /* as cmd/serve.c gives the extender */
static const struct extender_limits lim = {MAX_BODY, 0, 0};

/* the route for path answers body into out, in this thread, as over HTTP (routes.c's handler
 * through extender_server_answer). Returns 0 for HTTP 200, -1 otherwise (out: the message). */
static int answer(const char *path, const char *body, size_t len, struct common_buf *out)
{
    struct common_httpd_response resp;
    struct common_error err = {0};
    int ret;

    memset(&resp, 0, sizeof(resp));
    common_buf_init(&resp.body, MAX_BODY);
    if (extender_server_answer(xs, path, body, len, &resp, &err))
        die(path, err.msg);
    ret = resp.status == 0 || resp.status == 200 ? 0 : -1;
    if (common_buf_append(out, resp.body.data ? resp.body.data : "", resp.body.len, NULL))
        die(path, "answer too big");
    common_buf_free(&resp.body);
    common_buf_free(&resp.headers);
    return ret;
}

static int do_filter(const char *body, size_t len, struct common_buf *out)
{
    return answer(EXTENDER_URL_PREFIX "/filter", body, len, out);
}

static int do_prioritize(const char *body, size_t len, struct common_buf *out)
{
    return answer(EXTENDER_URL_PREFIX "/prioritize", body, len, out);
}

static const char empty_answer[] =
    "{\"NodeNames\":[],\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}";
static struct common_buf echo_answer; /* the filter-steady answer, made at setup */

static void h_empty(void *ctx, const struct common_httpd_request *req,
                    struct common_httpd_response *resp)
{
    (void)ctx;
    (void)req;
    resp->content_type = JSON_CT;
    (void)common_buf_append(&resp->body, empty_answer, sizeof(empty_answer) - 1, NULL);
}

static void h_echo(void *ctx, const struct common_httpd_request *req,
                   struct common_httpd_response *resp)
{
    (void)ctx;
    (void)req;
    resp->content_type = JSON_CT;
    (void)common_buf_append(&resp->body, echo_answer.data, echo_answer.len, NULL);
}

/* ---- the cluster ---- */

static void feed_node(long i, struct common_buf *b)
{
    struct common_error err = {0};
    struct common_node *n = NULL;
    json_error_t je;
    json_t *j;

    common_buf_reset(b);
    node_json(b, i);
    j = json_loadb(b->data, b->len, 0, &je);
    if (!j)
        die("node JSON", je.text);
    if (common_node_from_json(j, &n, &err))
        die("node", err.msg);
    extender_server_feed_node(xs, n);
    common_node_free(n);
    json_decref(j);
}

static void feed_pod(struct common_buf *b, const char *name, const char *group, const char *node,
                     int gpu, int cpu, int mem)
{
    struct common_error err = {0};
    struct common_pod *p = NULL;
    char uid[128];
    json_error_t je;
    json_t *j;

    snprintf(uid, sizeof(uid), "uid-%s", name);
    common_buf_reset(b);
    pod_json(b, name, uid, group, node, gpu, cpu, mem);
    j = json_loadb(b->data, b->len, 0, &je);
    if (!j)
        die("pod JSON", je.text);
    if (common_pod_from_json(j, &p, &err))
        die("pod", err.msg);
    extender_server_feed_pod(xs, p);
    common_pod_free(p);
    json_decref(j);
}

static void feed_podgroup(const char *name, int min_member)
{
    json_t *pg =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:i}}", "apiVersion",
                  "scheduling.x-k8s.io/v1alpha1", "kind", "PodGroup", "metadata", "name", name,
                  "namespace", NS, "resourceVersion", "1", "spec", "minMember", min_member);

    if (!pg)
        die("podgroup", "no memory");
    extender_server_feed_podgroup(xs, pg);
    json_decref(pg);
}

/* a pending gang of 8 */
static void feed_gang(struct common_buf *b, const char *group)
{
    char name[128];

    feed_podgroup(group, 8);
    for (int m = 0; m < 8; m++) {
        snprintf(name, sizeof(name), "%s-%d", group, m);
        feed_pod(b, name, group, NULL, 8, 16, 64);
    }
}

static long plan_gangs; /* fresh gangs for filter-plan */

static void build_cluster(void)
{
    struct common_kubeconfig kc = {0};
    struct extender_server_opts xo = {0};
    struct common_error err = {0};
    struct common_buf b;
    long per_node = cfg.pods / cfg.nodes, k = 0;
    char name[128], group[64], node[64];
    double t0 = mono();

    /* the options cmd/serve.c passes by default; the client is never used (nothing starts) */
    kc.server = "https://127.0.0.1:9";
    kc.insecure = 1;
    if (!(kube = common_kube_client_create(&kc, NULL, &err)))
        die("kube client", err.msg);
    if (!(metrics = common_metrics_create()))
        die("metrics", "no memory");
    xo.kube = kube;
    xo.metrics = metrics;
    xo.max_body = MAX_BODY;
    if (!(xs = extender_server_create(&xo, &err)))
        die("extender server", err.msg);
    common_buf_init(&b, 1 << 20);
    for (long i = 0; i < cfg.nodes; i++)
        feed_node(i, &b);
    fprintf(stderr, "bench_extender: %ld nodes in the books (%.1f s)\n", cfg.nodes, mono() - t0);
    for (long g = 0; g * 8 < cfg.pods; g++) {
        snprintf(group, sizeof(group), "bound-%05ld", g);
        feed_podgroup(group, 8);
    }
    for (long i = 0; i < cfg.nodes; i++) {
        node_name(node, sizeof(node), i);
        for (long j = 0; j < per_node + (i < cfg.pods % cfg.nodes); j++, k++) {
            snprintf(group, sizeof(group), "bound-%05ld", k / 8);
            snprintf(name, sizeof(name), "%s-%ld", group, k % 8);
            feed_pod(&b, name, group, node, i % 2 == 0 && j < 8 ? 1 : 0, 4, 16);
        }
    }
    fprintf(stderr, "bench_extender: %ld bound pods in %ld PodGroups (%.1f s)\n", k, (k + 7) / 8,
            mono() - t0);
    feed_gang(&b, "steady");
    feed_gang(&b, "noplan");
    for (long g = 0; g < plan_gangs; g++) {
        snprintf(group, sizeof(group), "fresh-%06ld", g);
        feed_gang(&b, group);
    }
    fprintf(stderr, "bench_extender: %ld pending gangs of 8 (%.1f s)\n", plan_gangs + 2,
            mono() - t0);
    common_buf_free(&b);
}

/* ---- the requests ---- */

enum kind { K_FILTER, K_PRIO, K_EMPTY, K_ECHO };

struct variant {
    const char *name;
    const char *path;
    enum kind kind;
    int fresh;                    /* filter-plan: a fresh gang per request */
    struct common_buf body;       /* the request (for fresh: the one the floors use) */
    struct common_buf want;       /* the expected answer */
    int fixed_len;                /* every answer has want's length */
    long n_ok, n_failed, n_unres; /* of want (filter) */
    /* open loop */
    struct samples lat, svc;
    long n, errors;
    double wall, cpu, cpu_client, others;
    /* closed loop */
    int closed;
    struct samples closed_lat;
    long closed_n, closed_errors;
    double closed_rate, closed_cpu, closed_cpu_client;
    /* floors, µs per request */
    struct samples pure, codec, decode, decode_full, jans;
};

#define NVARIANTS 8
static struct variant variants[NVARIANTS] = {
    {.name = "filter-steady", .path = EXTENDER_URL_PREFIX "/filter", .kind = K_FILTER, .closed = 1},
    {.name = "filter-plan",
     .path = EXTENDER_URL_PREFIX "/filter",
     .kind = K_FILTER,
     .fresh = 1,
     .closed = 1},
    {.name = "filter-nongang",
     .path = EXTENDER_URL_PREFIX "/filter",
     .kind = K_FILTER,
     .closed = 1},
    {.name = "prio-steady", .path = EXTENDER_URL_PREFIX "/prioritize", .kind = K_PRIO, .closed = 1},
    {.name = "prio-plan", .path = EXTENDER_URL_PREFIX "/prioritize", .kind = K_PRIO, .closed = 1},
    {.name = "prio-nongang",
     .path = EXTENDER_URL_PREFIX "/prioritize",
     .kind = K_PRIO,
     .closed = 1},
    {.name = "empty", .path = "/empty", .kind = K_EMPTY, .closed = 1},
    {.name = "echo", .path = "/echo", .kind = K_ECHO, .closed = 1},
};
enum { V_FSTEADY, V_FPLAN, V_FNON, V_PSTEADY, V_PPLAN, V_PNON, V_EMPTY, V_ECHO };

static struct common_buf names_buf; /* ",\"Nodes\":null,\"NodeNames\":[...]}" */
static const char *names_tail;
static size_t names_tail_len;
static long next_fresh;

/* the body of a request for pod name of group (NULL: no label) */
static void request_for(struct common_buf *b, const char *name, const char *group)
{
    char uid[128];

    snprintf(uid, sizeof(uid), "uid-%s", name);
    common_buf_reset(b);
    put(b, "{\"Pod\":");
    pod_json(b, name, uid, group, NULL, group ? 8 : 1, 16, 64);
    if (common_buf_append(b, names_tail, names_tail_len, NULL))
        die("body", "too big");
}

static void fresh_request(struct common_buf *b)
{
    char group[64], name[80];

    if (next_fresh >= plan_gangs)
        die("filter-plan", "the pool of fresh gangs is used up (raise --rate x --seconds pool)");
    snprintf(group, sizeof(group), "fresh-%06ld", next_fresh++);
    snprintf(name, sizeof(name), "%s-0", group);
    request_for(b, name, group);
}

static int serve(const struct variant *v, const char *body, size_t len, struct common_buf *out)
{
    common_buf_reset(out);
    switch (v->kind) {
    case K_FILTER:
        return do_filter(body, len, out);
    case K_PRIO:
        return do_prioritize(body, len, out);
    case K_EMPTY:
        return common_buf_append(out, empty_answer, sizeof(empty_answer) - 1, NULL) ? -1 : 0;
    case K_ECHO:
        return common_buf_append(out, echo_answer.data, echo_answer.len, NULL) ? -1 : 0;
    }
    return -1;
}

static long json_count(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_array(v)    ? (long)json_array_size(v)
           : json_is_object(v) ? (long)json_object_size(v)
                               : 0;
}

static void make_requests(void)
{
    struct common_buf *b = &names_buf;
    char name[64];

    common_buf_init(b, (size_t)1 << 30);
    put(b, ",\"Nodes\":null,\"NodeNames\":[");
    for (long i = 0; i < cfg.nodes; i++) {
        if (i)
            put(b, ",");
        put(b, "\"");
        node_name(name, sizeof(name), i);
        put(b, name);
        put(b, "\"");
    }
    put(b, "]}");
    names_tail = b->data;
    names_tail_len = b->len;
    for (int k = 0; k < NVARIANTS; k++) {
        common_buf_init(&variants[k].body, (size_t)1 << 30);
        common_buf_init(&variants[k].want, (size_t)1 << 30);
    }
    request_for(&variants[V_FSTEADY].body, "steady-3", "steady");
    fresh_request(&variants[V_FPLAN].body);
    request_for(&variants[V_FNON].body, "solo-0", NULL);
    request_for(&variants[V_PSTEADY].body, "steady-3", "steady");
    request_for(&variants[V_PPLAN].body, "noplan-0", "noplan");
    request_for(&variants[V_PNON].body, "solo-0", NULL);
    /* empty and echo get the filter-steady bytes */
    put(&variants[V_EMPTY].body, variants[V_FSTEADY].body.data);
    put(&variants[V_ECHO].body, variants[V_FSTEADY].body.data);
    /* plan the steady gang (its first filter), then the expected answers */
    if (do_filter(variants[V_FSTEADY].body.data, variants[V_FSTEADY].body.len,
                  &variants[V_FSTEADY].want))
        die("filter-steady", variants[V_FSTEADY].want.data);
    common_buf_init(&echo_answer, (size_t)1 << 30);
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        json_t *j;
        if (k == V_ECHO) {
            put(&echo_answer, variants[V_FSTEADY].want.data);
        }
        if (serve(v, v->body.data, v->body.len, &v->want))
            die(v->name, v->want.data ? v->want.data : "failed");
        v->fixed_len = !v->fresh;
        j = json_loadb(v->want.data, v->want.len, 0, NULL);
        if (!j)
            die(v->name, "answer is not JSON");
        if (v->kind == K_FILTER) {
            v->n_ok = json_count(j, "NodeNames");
            v->n_failed = json_count(j, "FailedNodes");
            v->n_unres = json_count(j, "FailedAndUnresolvableNodes");
        }
        json_decref(j);
        fprintf(stderr,
                "  %-15s request %6zu bytes, answer %6zu bytes (%ld pass, %ld failed, %ld "
                "unresolvable): %.120s\n",
                v->name, v->body.len, v->want.len, v->n_ok, v->n_failed, v->n_unres, v->want.data);
    }
    /* the filter-plan answer for its floor body was made above: the next request is fresh */
}

/* ---- floors: no HTTP, this thread ---- */

#define PURE_PLAN 200
#define CLOSED_PLAN_RATE                                                                           \
    500 /* fresh gangs per second of closed loop (the run stops early when                         \
           planning goes faster and the pool runs out) */

static void floors(struct variant *v, double seconds)
{
    struct common_buf out, body;
    struct common_arena *a = common_arena_create(ARENA_MAX);
    struct extender_args *pre = NULL;
    struct common_error err = {0};
    uint8_t *verdict = NULL;
    const char **reason = NULL;
    int64_t *scores = NULL;
    json_t *ans;
    double t_end;

    common_buf_init(&out, (size_t)1 << 30);
    common_buf_init(&body, (size_t)1 << 30);
    /* 1. the handler itself */
    t_end = mono() + seconds;
    for (long i = 0; v->kind <= K_PRIO && mono() < t_end; i++) {
        double t0;
        if (v->fresh) {
            if (i >= PURE_PLAN)
                break;
            fresh_request(&body);
        } else if (!body.len) {
            put(&body, v->body.data);
        }
        t0 = bench_thread_cpu();
        if (serve(v, body.data, body.len, &out))
            die(v->name, "handler failed");
        samples_add(&v->pure, (bench_thread_cpu() - t0) * 1e6);
    }
    /* 2. the codec alone, with the decisions of the expected answer */
    if (!a || extender_decode_args(a, v->body.data, v->body.len, &lim, &pre, &err))
        die(v->name, err.msg);
    verdict = calloc(pre->n_nodes + 1, 1);
    reason = calloc(pre->n_nodes + 1, sizeof(*reason));
    scores = calloc(pre->n_nodes + 1, sizeof(*scores));
    ans = json_loadb(v->want.data, v->want.len, 0, NULL);
    if (!verdict || !reason || !scores || !ans)
        die(v->name, "no memory");
    if (v->kind == K_FILTER) {
        const char *k;
        json_t *val;
        size_t i;
        json_t *nn;
        /* nodes in no list are dropped (extender/answer.h) */
        memset(verdict, EXTENDER_DROP, pre->n_nodes + 1);
        json_array_foreach(json_object_get(ans, "NodeNames"), i, nn)
        {
            long idx = extender_args_node_index(pre, json_string_value(nn));
            if (idx >= 0)
                verdict[idx] = EXTENDER_PASS;
        }
        json_object_foreach(json_object_get(ans, "FailedNodes"), k, val)
        {
            long idx = extender_args_node_index(pre, k);
            if (idx >= 0) {
                verdict[idx] = EXTENDER_FAIL;
                reason[idx] = json_string_value(val);
            }
        }
        json_object_foreach(json_object_get(ans, "FailedAndUnresolvableNodes"), k, val)
        {
            long idx = extender_args_node_index(pre, k);
            if (idx >= 0) {
                verdict[idx] = EXTENDER_FAIL_UNRESOLVABLE;
                reason[idx] = json_string_value(val);
            }
        }
    } else if (v->kind == K_PRIO) {
        size_t i;
        json_t *hp;
        json_array_foreach(ans, i, hp)
        {
            long idx =
                extender_args_node_index(pre, json_string_value(json_object_get(hp, "Host")));
            if (idx >= 0)
                scores[idx] = json_integer_value(json_object_get(hp, "Score"));
        }
    }
    t_end = mono() + seconds;
    while (v->kind <= K_PRIO && mono() < t_end) {
        double t0 = bench_thread_cpu();
        struct common_arena *ra = common_arena_create(ARENA_MAX);
        struct extender_args *x = NULL;
        common_buf_reset(&out);
        if (!ra || extender_decode_args_meta(ra, v->body.data, v->body.len, &lim, &x, &err))
            die(v->name, err.msg);
        if ((v->kind == K_FILTER ? extender_encode_filter_result(&out, x, verdict, reason, &err)
                                 : extender_encode_priorities(&out, x, scores, &err)))
            die(v->name, err.msg);
        common_arena_destroy(ra);
        samples_add(&v->codec, (bench_thread_cpu() - t0) * 1e6);
        if (out.len != v->want.len)
            die(v->name, "the codec floor answers other bytes than the handler");
    }
    /* the decode alone, the route's (the Pod's metadata) and the whole Pod's, turn about */
    t_end = mono() + seconds;
    for (long i = 0; v->kind <= K_PRIO && mono() < t_end; i++) {
        double t0 = bench_thread_cpu();
        struct common_arena *ra = common_arena_create(ARENA_MAX);
        struct extender_args *x = NULL;
        if (!ra ||
            (i % 2 ? extender_decode_args(ra, v->body.data, v->body.len, &lim, &x, &err)
                   : extender_decode_args_meta(ra, v->body.data, v->body.len, &lim, &x, &err)))
            die(v->name, err.msg);
        common_arena_destroy(ra);
        samples_add(i % 2 ? &v->decode_full : &v->decode, (bench_thread_cpu() - t0) * 1e6);
    }
    /* 3. jansson: parse the request, dump the answer's tree */
    t_end = mono() + seconds;
    while (v->kind <= K_PRIO && mono() < t_end) {
        double t0 = bench_thread_cpu();
        json_t *j = json_loadb(v->body.data, v->body.len, 0, NULL);
        char *s;
        if (!j)
            die(v->name, "jansson refused the body");
        s = json_dumps(ans, JSON_COMPACT);
        free(s);
        json_decref(j);
        samples_add(&v->jans, (bench_thread_cpu() - t0) * 1e6);
    }
    samples_sort(&v->pure);
    samples_sort(&v->codec);
    samples_sort(&v->decode);
    samples_sort(&v->decode_full);
    samples_sort(&v->jans);
    json_decref(ans);
    free(verdict);
    free(reason);
    free(scores);
    common_arena_destroy(a);
    common_buf_free(&out);
    common_buf_free(&body);
}

/* ---- load generator (libcurl multi, as bench/bench_webhook.c) ---- */

struct slot {
    CURL *e;
    int busy;
    double sched, sent;
    struct common_buf req; /* fresh requests */
    char *resp;
    size_t len, cap;
    int overflow;
};

struct gen {
    CURLM *m;
    struct slot slots[MAX_CONNS];
    struct curl_slist *hdrs;
    int tfd;
    int port;
};

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    struct slot *s = ctx;
    size_t k = size * n;

    if (s->len + k >= s->cap) {
        s->overflow = 1;
        return k;
    }
    memcpy(s->resp + s->len, p, k);
    s->len += k;
    s->resp[s->len] = '\0';
    return k;
}

static void gen_init(struct gen *g, size_t resp_cap)
{
    g->m = curl_multi_init();
    if (!g->m)
        die("curl", "curl_multi_init failed");
    curl_multi_setopt(g->m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)cfg.conns);
    curl_multi_setopt(g->m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)cfg.conns);
    curl_multi_setopt(g->m, CURLMOPT_MAXCONNECTS, (long)cfg.conns);
    curl_multi_setopt(g->m, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
    g->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    g->hdrs = curl_slist_append(g->hdrs, "Accept: application/json");
    g->hdrs = curl_slist_append(g->hdrs, "Expect:");
    g->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (g->tfd < 0 || !g->hdrs)
        die("timerfd", strerror(errno));
    for (long i = 0; i < cfg.conns; i++) {
        struct slot *s = &g->slots[i];
        s->e = curl_easy_init();
        s->cap = resp_cap;
        s->resp = malloc(resp_cap);
        if (!s->e || !s->resp)
            die("curl", "curl_easy_init failed");
        common_buf_init(&s->req, (size_t)1 << 30);
        curl_easy_setopt(s->e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(s->e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(s->e, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(s->e, CURLOPT_TIMEOUT_MS, 10000L);
        curl_easy_setopt(s->e, CURLOPT_HTTPHEADER, g->hdrs);
        curl_easy_setopt(s->e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(s->e, CURLOPT_WRITEDATA, s);
        curl_easy_setopt(s->e, CURLOPT_PRIVATE, s);
    }
}

static void gen_free(struct gen *g)
{
    for (long i = 0; i < cfg.conns; i++) {
        curl_easy_cleanup(g->slots[i].e);
        free(g->slots[i].resp);
        common_buf_free(&g->slots[i].req);
    }
    curl_multi_cleanup(g->m);
    curl_slist_free_all(g->hdrs);
    close(g->tfd);
}

static struct slot *free_slot(struct gen *g)
{
    for (long i = 0; i < cfg.conns; i++)
        if (!g->slots[i].busy)
            return &g->slots[i];
    return NULL;
}

static void issue(struct gen *g, struct slot *s, const struct variant *v, double sched)
{
    char url[256];
    const struct common_buf *body = &v->body;

    if (v->fresh) {
        fresh_request(&s->req);
        body = &s->req;
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", g->port, v->path);
    curl_easy_setopt(s->e, CURLOPT_URL, url);
    curl_easy_setopt(s->e, CURLOPT_POSTFIELDS, body->data);
    curl_easy_setopt(s->e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    s->len = 0;
    s->resp[0] = '\0';
    s->overflow = 0;
    s->sched = sched;
    s->busy = 1;
    s->sent = mono();
    if (curl_multi_add_handle(g->m, s->e) != CURLM_OK)
        die("curl", "curl_multi_add_handle failed");
}

static void arm(struct gen *g, double at)
{
    struct itimerspec its;

    memset(&its, 0, sizeof(its));
    if (at > 0) {
        its.it_value.tv_sec = (time_t)at;
        its.it_value.tv_nsec = (long)((at - (double)(time_t)at) * 1e9);
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1;
    }
    timerfd_settime(g->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* the answer is what the variant answers: HTTP 200, no Error, the expected size and start */
static int answer_ok(const struct variant *v, const struct slot *s, long status)
{
    if (status != 200 || s->overflow || s->len < 16 || memcmp(s->resp, v->want.data, 12) != 0)
        return 0;
    if (v->fixed_len && s->len != v->want.len)
        return 0;
    if (v->fresh && strstr(v->want.data, "\"Error\":\"\"") &&
        !memmem(s->resp, s->len, "\"Error\":\"\"", 10))
        return 0;
    return 1;
}

struct run_result {
    long n, errors;
    double first_sched, last_done;
};

/*
 * One run of v for `seconds`. Open loop (closed == 0): request i scheduled at t0 + i / rate;
 * lat = done - scheduled, svc = done - sent. Closed loop: every free connection sends at once;
 * lat = done - sent.
 */
static void run(struct gen *g, struct variant *v, double seconds, int closed, struct samples *lat,
                struct samples *svc, struct run_result *res)
{
    double rate = (double)(v->fresh ? cfg.plan_rate : cfg.rate);
    double period = 1.0 / rate;
    double t0 = mono() + 0.002;
    double t_stop = t0 + seconds;
    long total = closed ? -1 : (long)llround(seconds * rate);
    long issued = 0, inflight = 0;

    memset(res, 0, sizeof(*res));
    res->first_sched = t0;
    for (;;) {
        struct curl_waitfd wfd = {.fd = g->tfd, .events = CURL_WAIT_POLLIN};
        struct slot *s;
        CURLMsg *msg;
        int running, left;
        double now = mono();

        if (!closed) {
            long due = now < t0 ? 0 : (long)floor((now - t0) / period) + 1;
            if (due > total)
                due = total;
            while (issued < due && (s = free_slot(g)) != NULL) {
                issue(g, s, v, t0 + (double)issued * period);
                issued++;
                inflight++;
            }
            if (issued == total && inflight == 0)
                break;
        } else {
            while (now < t_stop && (!v->fresh || next_fresh < plan_gangs) &&
                   (s = free_slot(g)) != NULL) {
                issue(g, s, v, now);
                issued++;
                inflight++;
            }
            if ((now >= t_stop || (v->fresh && next_fresh >= plan_gangs)) && inflight == 0)
                break;
        }
        curl_multi_perform(g->m, &running);
        while ((msg = curl_multi_info_read(g->m, &left)) != NULL) {
            long status = 0;
            double done = mono();
            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            if (msg->data.result != CURLE_OK || !answer_ok(v, s, status)) {
                if (res->errors < 5)
                    fprintf(stderr, "  error on %s: curl %d (%s), HTTP %ld, %zu bytes: %.200s\n",
                            v->name, (int)msg->data.result, curl_easy_strerror(msg->data.result),
                            status, s->len, s->resp);
                res->errors++;
            }
            curl_multi_remove_handle(g->m, msg->easy_handle);
            res->n++;
            res->last_done = done;
            if (lat)
                samples_add(lat, (done - (closed ? s->sent : s->sched)) * 1e6);
            if (svc)
                samples_add(svc, (done - s->sent) * 1e6);
            s->busy = 0;
            inflight--;
        }
        if (!closed && issued < total && free_slot(g)) {
            double next = t0 + (double)issued * period;
            if (next <= mono())
                continue;
            arm(g, next);
        } else if (closed && inflight == 0) {
            continue;
        } else {
            arm(g, 0);
        }
        curl_multi_poll(g->m, &wfd, 1, 100, NULL);
        if (wfd.revents) {
            uint64_t x;
            if (read(g->tfd, &x, sizeof(x)) < 0 && errno != EAGAIN)
                perror("timerfd read");
        }
    }
    arm(g, 0);
}

/* ---- flags ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_extender [--nodes N] [--pods P] [--seconds D] [--conns C] [--rate R] "
            "[--plan-rate Q]\n"
            "  --nodes N    nodes in the books and in every request's NodeNames (default 5000)\n"
            "  --pods P     pods bound across them, in PodGroups of 8 (default 50000)\n"
            "  --seconds D  open-loop seconds per variant (default 5); closed loop max(2, D/2)\n"
            "  --conns C    keep-alive HTTP/1.1 connections of the load generator (default 4, "
            "max 64)\n"
            "  --rate R     open-loop requests per second (default 200)\n"
            "  --plan-rate Q  open-loop rate of filter-plan, one fresh gang per request (default "
            "50)\n"
            "  --floors-only  only the no-HTTP floors, one line per verb (to profile a change)\n"
            "Filter and prioritize of the extender's handler stack over HTTP on loopback, beside "
            "an\nempty handler on the same server and the codec / jansson floors; see "
            "docs/benchmarks-extender.md.\n");
}

static void parse_flags(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(argv[i], "--nodes") == 0) {
            cfg.nodes = bench_flag_long("bench_extender", argc, argv, &i, 1, 65536);
        } else if (strcmp(argv[i], "--pods") == 0) {
            cfg.pods = bench_flag_long("bench_extender", argc, argv, &i, 0, 2000000);
        } else if (strcmp(argv[i], "--seconds") == 0) {
            cfg.seconds = bench_flag_long("bench_extender", argc, argv, &i, 1, 3600);
        } else if (strcmp(argv[i], "--conns") == 0) {
            cfg.conns = bench_flag_long("bench_extender", argc, argv, &i, 1, MAX_CONNS);
        } else if (strcmp(argv[i], "--rate") == 0) {
            cfg.rate = bench_flag_long("bench_extender", argc, argv, &i, 1, 100000);
        } else if (strcmp(argv[i], "--floors-only") == 0) {
            cfg.floors_only = 1;
        } else if (strcmp(argv[i], "--plan-rate") == 0) {
            cfg.plan_rate = bench_flag_long("bench_extender", argc, argv, &i, 1, 100000);
        } else {
            fprintf(stderr, "bench_extender: unknown argument \"%s\"\n", argv[i]);
            usage(stderr);
            exit(2);
        }
    }
}

/* ---- report ---- */

static void report(const char *load_start, const char *load_end, double others_cores,
                   double total_s)
{
    struct variant *e = &variants[V_EMPTY];

    printf("\n# bench_extender: filter and prioritize over HTTP on loopback\n\n");
    printf("%ld nodes, %ld bound pods (gangs of 8), %ld pending gangs of 8; requests with "
           "NodeNames of all %ld nodes (nodeCacheCapable); server: common_httpd, plain HTTP, %d "
           "threads; generator: libcurl multi, %ld keep-alive connections; open loop %ld "
           "requests/s (filter-plan %ld/s) for %ld s per variant; load average at start %s, at end "
           "%s; other "
           "processes used %.2f cores during the open-loop runs; %.0f s in all\n\n",
           cfg.nodes, cfg.pods, plan_gangs + 2, cfg.nodes, SERVER_THREADS, cfg.conns, cfg.rate,
           cfg.plan_rate, cfg.seconds, load_start, load_end, others_cores, total_s);
    printf("| variant | request bytes | answer bytes | pass / failed / unresolvable |\n");
    printf("|---|---|---|---|\n");
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        printf("| %s | %zu | %zu | ", v->name, v->body.len, v->want.len);
        if (v->kind == K_FILTER)
            printf("%ld / %ld / %ld |\n", v->n_ok, v->n_failed, v->n_unres);
        else
            printf("- |\n");
    }

    printf("\n## Open loop: latency from the scheduled send to the complete answer (µs)\n\n");
    printf("| variant | requests | rate/s | p50 | p90 | p99 | max | p99 from the actual send | "
           "p99 / empty p99 | server CPU µs/request | errors |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        printf("| %s | %ld | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2fx | %.0f | %ld |\n",
               v->name, v->n, (double)v->n / v->wall, pct(&v->lat, 0.5), pct(&v->lat, 0.9),
               pct(&v->lat, 0.99), samples_max(&v->lat), pct(&v->svc, 0.99),
               pct(&v->lat, 0.99) / pct(&e->lat, 0.99),
               (v->cpu - v->cpu_client) / (double)(v->n ? v->n : 1) * 1e6, v->errors);
    }

    printf("\n## Closed loop: %ld connections always busy, %.0f s per variant\n\n", cfg.conns,
           cfg.seconds / 2.0 < 2 ? 2.0 : cfg.seconds / 2.0);
    printf("| variant | requests/s | / empty | / echo | p50 µs | p99 µs | server CPU µs/request | "
           "generator CPU µs/request | CPU / empty's | errors |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        if (!v->closed)
            continue;
        printf("| %s | %.0f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f | %.2f | %ld |\n", v->name,
               v->closed_rate, v->closed_rate / e->closed_rate,
               v->closed_rate / variants[V_ECHO].closed_rate, pct(&v->closed_lat, 0.5),
               pct(&v->closed_lat, 0.99),
               (v->closed_cpu - v->closed_cpu_client) / (double)v->closed_n * 1e6,
               v->closed_cpu_client / (double)v->closed_n * 1e6,
               (e->closed_cpu / (double)e->closed_n) / (v->closed_cpu / (double)v->closed_n),
               v->closed_errors);
    }
    printf("\n(CPU / empty's: the process CPU, server and generator, of one empty request over one "
           "of this variant: the throughput ratio when the run has the cores to itself and is "
           "CPU-bound, as the closed loop is on a quiet machine.)\n");

    printf("\n## Floors: the same bodies in one thread, no HTTP (thread CPU µs per request: p50 / "
           "p99)\n\n");
    printf(
        "| variant | handler (decode + core + encode) | codec (decode + encode) | decode | "
        "decode, whole Pod | jansson (parse request + dump answer) | core + mapping p50 (handler "
        "- codec) | encode p50 (codec - decode) | handler / jansson (p50) |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k <= V_PNON; k++) {
        struct variant *v = &variants[k];
        printf("| %s | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.0f "
               "| %.0f | %.2f |\n",
               v->name, pct(&v->pure, 0.5), pct(&v->pure, 0.99), pct(&v->codec, 0.5),
               pct(&v->codec, 0.99), pct(&v->decode, 0.5), pct(&v->decode, 0.99),
               pct(&v->decode_full, 0.5), pct(&v->decode_full, 0.99), pct(&v->jans, 0.5),
               pct(&v->jans, 0.99), pct(&v->pure, 0.5) - pct(&v->codec, 0.5),
               pct(&v->codec, 0.5) - pct(&v->decode, 0.5), pct(&v->pure, 0.5) / pct(&v->jans, 0.5));
    }
    printf("\nTargets: open-loop p99 filter-steady %.0f µs, prio-steady %.0f µs (target <= 1000; "
           "empty %.0f µs); closed-loop throughput filter-steady / empty %.2f, prio-steady / empty "
           "%.2f (target >= 0.5)\n",
           pct(&variants[V_FSTEADY].lat, 0.99), pct(&variants[V_PSTEADY].lat, 0.99),
           pct(&e->lat, 0.99), variants[V_FSTEADY].closed_rate / e->closed_rate,
           variants[V_PSTEADY].closed_rate / e->closed_rate);
    printf("\nRun: ./build-bext/bench/bench_extender --nodes %ld --pods %ld --seconds %ld --conns "
           "%ld --rate %ld --plan-rate %ld\n",
           cfg.nodes, cfg.pods, cfg.seconds, cfg.conns, cfg.rate, cfg.plan_rate);
}

int main(int argc, char **argv)
{
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct common_error err = {0};
    struct common_httpd *h;
    struct gen g;
    char load_start[64], load_end[64];
    double t_start, others = 0, timed = 0, cs;
    long errors = 0;

    parse_flags(argc, argv);
    cs = cfg.seconds / 2.0 < 2 ? 2.0 : cfg.seconds / 2.0;
    /* one fresh gang per filter-plan request: warm-up, open loop, floors, setup */
    plan_gangs = cfg.plan_rate * (cfg.seconds + 1) + PURE_PLAN + 16 + (long)(CLOSED_PLAN_RATE * cs);
    common_alloc_init();
    common_log_set_level(COMMON_LOG_WARN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    t_start = mono();
    bench_loadavg(load_start, sizeof(load_start));
    fprintf(stderr, "bench_extender: load average %s; building the cluster\n", load_start);
    build_cluster();
    make_requests();

    ho.address = "127.0.0.1:0";
    ho.max_body = MAX_BODY; /* as cmd/serve.c gives the extender */
    ho.threads = SERVER_THREADS;
    h = common_httpd_create(&ho, &err);
    if (!h || extender_server_install(xs, h, &err) ||
        common_httpd_route(h, "POST", "/empty", h_empty, NULL) ||
        common_httpd_route(h, "POST", "/echo", h_echo, NULL) || common_httpd_start(h, &err))
        die("server", err.msg);
    memset(&g, 0, sizeof(g));
    g.port = common_httpd_port(h);
    {
        size_t most = 0; /* room for the largest answer of any variant */
        for (int k = 0; k <= V_ECHO; k++)
            if (variants[k].want.len > most)
                most = variants[k].want.len;
        gen_init(&g, most * 2 + 65536);
    }
    fprintf(stderr, "bench_extender: serving http://127.0.0.1:%d\n", g.port);

    /* 1. floors */
    fprintf(stderr, "bench_extender: floors, 3.5 s per verb\n");
    for (int k = 0; k <= V_PNON; k++)
        floors(&variants[k], 1.0);
    if (cfg.floors_only) {
        for (int k = 0; k <= V_PNON; k++)
            printf("%-15s handler p50 %6.0f p99 %6.0f  codec p50 %6.0f  decode p50 %6.0f  whole "
                   "Pod %6.0f µs\n",
                   variants[k].name, pct(&variants[k].pure, 0.5), pct(&variants[k].pure, 0.99),
                   pct(&variants[k].codec, 0.5), pct(&variants[k].decode, 0.5),
                   pct(&variants[k].decode_full, 0.5));
        gen_free(&g);
        common_httpd_destroy(h);
        extender_server_destroy(xs);
        return 0;
    }

    /* 2. warm-up */
    fprintf(stderr, "bench_extender: warm-up, 1 s per variant\n");
    for (int k = 0; k < NVARIANTS; k++) {
        struct run_result rr;
        run(&g, &variants[k], 1.0, 0, NULL, NULL, &rr);
        if (rr.errors)
            die(variants[k].name, "fails during warm-up");
    }

    /* 3. open loop */
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        struct run_result rr;
        double c0 = bench_process_cpu(), tc0 = bench_thread_cpu(), m0 = bench_machine_busy(), c1,
               m1;

        run(&g, v, (double)cfg.seconds, 0, &v->lat, &v->svc, &rr);
        c1 = bench_process_cpu();
        m1 = bench_machine_busy();
        v->wall = rr.last_done - rr.first_sched;
        v->cpu = c1 - c0;
        v->cpu_client = bench_thread_cpu() - tc0;
        v->others = (m1 - m0) - (c1 - c0);
        others += v->others;
        timed += v->wall;
        v->n = rr.n;
        v->errors = rr.errors;
        errors += rr.errors;
        samples_sort(&v->lat);
        samples_sort(&v->svc);
        fprintf(stderr,
                "  open %-15s %6ld requests %7.1f/s  p50 %6.0f µs  p99 %6.0f µs  max %6.0f µs  "
                "errors %ld  others %.2f cores\n",
                v->name, rr.n, (double)rr.n / v->wall, pct(&v->lat, 0.5), pct(&v->lat, 0.99),
                samples_max(&v->lat), rr.errors, v->others / v->wall);
    }

    /* 4. closed loop */
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        struct run_result rr;
        double c0 = bench_process_cpu(), tc0 = bench_thread_cpu();

        if (!v->closed)
            continue;
        run(&g, v, cs, 1, &v->closed_lat, NULL, &rr);
        v->closed_cpu = bench_process_cpu() - c0;
        v->closed_cpu_client = bench_thread_cpu() - tc0;
        v->closed_rate = (double)rr.n / (rr.last_done - rr.first_sched);
        v->closed_n = rr.n;
        v->closed_errors = rr.errors;
        errors += rr.errors;
        samples_sort(&v->closed_lat);
        fprintf(stderr, "  closed %-15s %7.0f requests/s  errors %ld\n", v->name, v->closed_rate,
                rr.errors);
    }
    bench_loadavg(load_end, sizeof(load_end));
    report(load_start, load_end, timed > 0 ? others / timed : 0, mono() - t_start);

    gen_free(&g);
    common_httpd_destroy(h);
    extender_server_destroy(xs);
    common_metrics_destroy(metrics);
    common_kube_client_destroy(kube);
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        free(v->lat.v);
        free(v->svc.v);
        free(v->closed_lat.v);
        free(v->pure.v);
        free(v->codec.v);
        free(v->decode.v);
        free(v->decode_full.v);
        free(v->jans.v);
        common_buf_free(&v->body);
        common_buf_free(&v->want);
    }
    common_buf_free(&echo_answer);
    common_buf_free(&names_buf);
    curl_global_cleanup();
    return errors ? 1 : 0;
}
