/*
 * bench/bench_scheduler.c - the test bed's real kube-scheduler with and without trainsched as
 * its HTTP extender (docs/benchmarks-scheduler.md), side by side in one run:
 *
 * (b) throughput: P pods (default 5,000) on N Nodes (default 5,000), both scheduler configs
 *     with percentageOfNodesToScore 100:
 *       A  plain   the scheduler restarted with a config WITHOUT the extender; pods without the
 *                  gang label and without the trainsched.io/gang request;
 *       B  gang    the scheduler restarted WITH the extender config (plain HTTP to
 *                  `trainsched serve --components extender`, started by the script); P/8
 *                  PodGroups (minMember 8) created and seen by the extender first, then P pods
 *                  labelled scheduling.x-k8s.io/pod-group and requesting trainsched.io/gang: 1;
 *     each measured from the first pod create to the last pod bound (a pod informer stamps the
 *     moment spec.nodeName appears), R rounds (default 2), the order alternated each round,
 *     the pods deleted between variants. Pods/s of each and the ratio B/A (median of rounds).
 * (c) G gangs of 8 (default 500): time until all are bound, with the gangs' pods created in
 *     order (gang after gang) and interleaved (member 0 of every gang, then member 1, ...);
 *     what kube-scheduler's retry backoff takes of it, from its own metrics sampled every
 *     0.5 s (scheduler_pending_pods{queue}, scheduler_schedule_attempts_total{result},
 *     scheduler_queue_incoming_pods_total{queue}), the extender's (held binds, requests) and
 *     the timeline of binds (gaps).
 *
 * (p) the peers (--only p): G gangs of 8 (--peer-gangs, default 200) per workload, each run by
 *     A plain kube-scheduler, B kube-scheduler + trainsched's extender (coscheduling PodGroups),
 *     C scheduler-plugins' kube-scheduler with Coscheduling (--schedplugins BIN; same PodGroups),
 *     D kube-scheduler's own gang scheduling (scheduling.k8s.io/v1beta1 PodGroups on 1.37,
 *     v1alpha2 on 1.36; needs a bed with TESTBED_NATIVE_GANG=1), E trainsched's extender on C's
 *     binary (scheduler-plugins' build of kube-scheduler 1.34.7, Coscheduling off: the
 * like-for-like comparison with C on one kube-scheduler version), one scheduler at a time on the
 * bed's port; gang pods of B and E are created with the scheduling gate trainsched.io/gang, as
 * trainsched's pod webhook creates them (--gate off: without it, the fallback held-bind path);
 * workloads gang, interleaved, mixed (80 % plain pods), contended (whole-Node pods, a pool for half
 * of them, created interleaved; a gang's pods are deleted 1 s after its last bind). Per run:
 * pods/s, time to all bound, attempts per pod, partial gangs, CPU per pod; a run stops as stalled
 * after --stall S (30) without binds or scheduling progress.
 *
 * Every scheduler config raises clientConnection qps/burst (--sched-qps, default 1000): at the
 * default 50/100 both variants measure client-go's rate limiter on Bindings, not scheduling.
 * Both use podInitialBackoffSeconds 1, podMaxBackoffSeconds 5 (the shipped config's values).
 *
 * The scheduler is restarted with tests/e2e/testbed/scheduler-ctl.sh before each variant and
 * restored (the bed's own config) at the end, failure included.
 *
 * Run: . $TESTBED_RUN/env; bench_scheduler --extender http://127.0.0.1:PORT
 *      --extender-metrics http://127.0.0.1:PORT2/metrics [--nodes N] [--pods P] [--rounds R]
 *      [--gangs-c G] [--threads T] [--sched-qps Q] [--only b,c,p] [--c-order gang|interleaved]
 *      [--schedplugins BIN] [--variants ABCDE] [--gate on|off]
 *      [--workloads gang,interleaved,mixed,contended]
 *      [--peer-gangs G] [--stall S]
 *      [--ns NAME] [--cleanup-nodes]
 *      (scripts/bench-scheduler.sh does it all)
 */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/coretypes.h"
#include "common/informer.h"
#include "common/kube.h"
#include "common/kubeconfig.h"

#define GANG_LABEL "scheduling.x-k8s.io/pod-group"
#define RUN_LABEL "trainsched.io/bench-sched"
#define NODE_LABEL "trainsched-bench-sched"
#define MAX_PODS 20000
#define MAX_SAMPLES 8192
#define GANG 8
#define MAX_GANGS (MAX_PODS / GANG)
#define GANG_NAME_LABEL "trainsched.io/bench-gang"
#define BLOCK_LABEL "trainsched-bench-sched-block" /* Node index / 100: the contended pool */
#define BLOCK 100

static struct {
    const char *ns, *ext_url, *ext_metrics, *sched_ctl, *only, *c_order;
    long nodes, pods, rounds, gangs_c, threads, sched_qps, timeout_s;
    int cleanup_nodes;
    /* (p) the peers */
    const char *schedplugins, *variants, *workloads;
    long peer_gangs, stall_s;
    /* gang pods are created with trainsched's scheduling gate, as its pod webhook creates them
     * (--gate off: without, the held-bind path of pods that arrive ungated) */
    int gate;
} cfg = {"trainsched-bench-sched",
         NULL,
         NULL,
         NULL,
         NULL,
         NULL,
         5000,
         5000,
         2,
         500,
         4,
         1000,
         900,
         0,
         NULL,
         "ABCD",
         "gang,interleaved,mixed,contended",
         200,
         30,
         1};

/* the variants whose gang pods go through trainsched's extender */
#define EXTENDER_VARIANT(v) ((v) == 'B' || (v) == 'E')

static struct common_kube *kube;
static char sched_metrics_url[512];
static char cfg_plain[] = "/tmp/bench-sched-plain-XXXXXX";
static char cfg_gang[] = "/tmp/bench-sched-gang-XXXXXX";
static char cfg_cosched[] = "/tmp/bench-sched-cosched-XXXXXX";
/* kube-scheduler's own gang scheduling: scheduling.k8s.io/v1beta1 on Kubernetes 1.37 (beta),
 * v1alpha2 on 1.36 (alpha); native_served() picks the one the bed serves, v1beta1 first */
static const struct common_kube_resource native_v1beta1 = {"scheduling.k8s.io", "v1beta1",
                                                           "podgroups", 1};
static const struct common_kube_resource native_v1alpha2 = {"scheduling.k8s.io", "v1alpha2",
                                                            "podgroups", 1};
static const struct common_kube_resource *native_podgroups = &native_v1alpha2;
static int restored;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const struct common_error *err);

/* ---- the bed's scheduler ---- */

/* scheduler-ctl.sh VERB [FILE [BINARY]] (BINARY: another kube-scheduler build in place of the
 * bed's, same flags) */
static int sched_ctl_bin(const char *verb, const char *file, const char *bin)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s' %s %s %s >&2", cfg.sched_ctl, verb, file ? file : "",
             bin ? bin : "");
    return system(cmd);
}

static int sched_ctl(const char *verb, const char *file)
{
    return sched_ctl_bin(verb, file, NULL);
}

static void restore_scheduler(void)
{
    if (restored || !cfg.sched_ctl)
        return;
    restored = 1;
    if (sched_ctl("restore", NULL) != 0)
        fprintf(stderr, "bench_scheduler: could not restore the bed's kube-scheduler config\n");
    unlink(cfg_plain);
    unlink(cfg_gang);
    unlink(cfg_cosched);
}

static void die(const char *what, const struct common_error *err)
{
    fprintf(stderr, "bench_scheduler: %s: %s\n", what, err ? err->msg : "");
    restore_scheduler();
    exit(1);
}

static void on_signal(int sig)
{
    (void)sig;
    restore_scheduler();
    _exit(1);
}

/* with_extender: 0 plain (A, and D: GangScheduling is in the default profile once its gate is
 * on), 1 trainsched as extender (B), 2 scheduler-plugins' Coscheduling (C) */
static void write_config(const char *path, int with_extender)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f,
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "percentageOfNodesToScore: 100\n"
            "podInitialBackoffSeconds: 1\n"
            "podMaxBackoffSeconds: 5\n"
            "clientConnection:\n"
            "  kubeconfig: %s\n"
            "  qps: %ld\n"
            "  burst: %ld\n"
            "profiles:\n"
            "- schedulerName: default-scheduler\n",
            /* Coscheduling reads PodGroups (a CRD), which system:kube-scheduler may not */
            getenv(with_extender == 2 ? "KUBECONFIG" : "TESTBED_SCHEDULER_KUBECONFIG"),
            cfg.sched_qps, cfg.sched_qps);
    /* scheduler-plugins' manifests/coscheduling/scheduler-config.yaml, as its docs give it */
    if (with_extender == 2)
        fprintf(f, "  plugins:\n"
                   "    multiPoint:\n"
                   "      enabled:\n"
                   "      - name: Coscheduling\n"
                   "    queueSort:\n"
                   "      enabled:\n"
                   "      - name: Coscheduling\n"
                   "      disabled:\n"
                   "      - name: \"*\"\n"
                   "  pluginConfig:\n"
                   "  - name: Coscheduling\n"
                   "    args:\n"
                   "      permitWaitingTimeSeconds: 10\n");
    if (with_extender == 1)
        fprintf(f,
                "extenders:\n"
                "- urlPrefix: %s/scheduler\n"
                "  filterVerb: filter\n"
                "  prioritizeVerb: prioritize\n"
                "  preemptVerb: preempt\n"
                "  bindVerb: bind\n"
                "  weight: 1\n"
                "  enableHTTPS: false\n"
                "  httpTimeout: 630s\n"
                "  nodeCacheCapable: true\n"
                "  ignorable: false\n"
                "  managedResources:\n"
                "  - name: trainsched.io/gang\n"
                "    ignoredByScheduler: true\n",
                cfg.ext_url);
    fclose(f);
}

/* ---- metrics: GET with curl (the scheduler's /metrics wants the admin client cert) ---- */

static char *scrape(const char *url, int certs)
{
    char cmd[2048];
    FILE *p;
    struct common_buf b;
    struct common_error err;
    enum common_rc rc;

    if (!url)
        return NULL;
    if (certs)
        snprintf(cmd, sizeof(cmd),
                 "curl -sS --max-time 10 --cacert '%s' --cert '%s' --key '%s' '%s' 2>/dev/null",
                 getenv("TESTBED_CA"), getenv("TESTBED_ADMIN_CERT"), getenv("TESTBED_ADMIN_KEY"),
                 url);
    else
        snprintf(cmd, sizeof(cmd), "curl -sS --max-time 10 '%s' 2>/dev/null", url);
    p = popen(cmd, "r");
    if (!p)
        return NULL;
    common_buf_init(&b, (size_t)64 << 20);
    rc = common_buf_read_stream(&b, p, "curl", &err);
    pclose(p);
    if (rc != COMMON_OK || b.len == 0) {
        common_buf_free(&b);
        return NULL;
    }
    return b.data; /* common_buf's memory: released with common_free */
}

/* the sum of every series of name whose labels contain want (NULL: all); -1 when none */
static double metric(const char *text, const char *name, const char *want)
{
    size_t n = strlen(name);
    double sum = -1;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *end = strchr(l, '\n'), *val;
        if (strncmp(l, name, n) != 0 || (l[n] != '{' && l[n] != ' '))
            continue;
        val = l + n;
        if (*val == '{') {
            const char *close = strchr(val, '}');
            if (!close || (end && close > end))
                continue;
            if (want) {
                const char *hit = strstr(val, want);
                if (!hit || hit > close)
                    continue;
            }
            val = close + 1;
        } else if (want) {
            continue;
        }
        sum = (sum < 0 ? 0 : sum) + strtod(val, NULL);
    }
    return sum;
}

static double mdelta(const char *a, const char *b, const char *name, const char *want)
{
    double x = metric(a, name, want), y = metric(b, name, want);
    if (y < 0)
        return 0;
    return y - (x < 0 ? 0 : x);
}

/* ---- the pod informer: when each pod got its node ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char cur_prefix[32];
static double bind_t[MAX_PODS], create_t[MAX_PODS];
static long n_bound, n_present;
static double last_bind;
/* per gang: members bound, first and last bind; gangs complete and not yet reaped (contended) */
static int gang_bound[MAX_GANGS];
static double gang_first[MAX_GANGS], gang_last[MAX_GANGS];
static long full_q[MAX_GANGS], full_n;
static long pod_gang(long i);

static void seen(const struct common_pod *p)
{
    size_t pl = strlen(cur_prefix);
    char *end;
    long i;
    if (!p->node_name || !*p->node_name || !pl || strncmp(p->name, cur_prefix, pl) != 0 ||
        p->name[pl] != '-')
        return;
    i = strtol(p->name + pl + 1, &end, 10);
    if (*end || i < 0 || i >= MAX_PODS)
        return;
    if (bind_t[i] == 0) {
        long g = pod_gang(i);
        bind_t[i] = last_bind = now();
        n_bound++;
        if (g >= 0 && g < MAX_GANGS) {
            if (gang_bound[g]++ == 0)
                gang_first[g] = bind_t[i];
            gang_last[g] = bind_t[i];
            if (gang_bound[g] == GANG && full_n < MAX_GANGS)
                full_q[full_n++] = g;
        }
    }
}

static void on_add(void *ctx, const void *item)
{
    (void)ctx;
    pthread_mutex_lock(&mu);
    n_present++;
    seen(item);
    pthread_mutex_unlock(&mu);
}

static void on_update(void *ctx, const void *o, const void *item)
{
    (void)ctx;
    (void)o;
    pthread_mutex_lock(&mu);
    seen(item);
    pthread_mutex_unlock(&mu);
}

static void on_delete(void *ctx, const void *item)
{
    (void)ctx;
    (void)item;
    pthread_mutex_lock(&mu);
    n_present--;
    pthread_mutex_unlock(&mu);
}

/* ---- sampling the queues ---- */

struct sample {
    double t, active, backoff, unsched, gated, held;
    long bound;
};

static struct sample samples[MAX_SAMPLES];
static int n_samples, sampling;
static double sample_every = 1.0;
static pthread_t sampler_th;

static void *sampler(void *arg)
{
    (void)arg;
    while (__atomic_load_n(&sampling, __ATOMIC_ACQUIRE)) {
        double t0 = now();
        char *s = scrape(sched_metrics_url, 1), *x = scrape(cfg.ext_metrics, 0);
        if (n_samples < MAX_SAMPLES) {
            struct sample *m = &samples[n_samples];
            m->t = t0;
            m->active = metric(s, "scheduler_pending_pods", "queue=\"active\"");
            m->backoff = metric(s, "scheduler_pending_pods", "queue=\"backoff\"");
            m->unsched = metric(s, "scheduler_pending_pods", "queue=\"unschedulable\"");
            m->gated = metric(s, "scheduler_pending_pods", "queue=\"gated\"");
            m->held = metric(x, "trainsched_extender_held_binds", NULL);
            pthread_mutex_lock(&mu);
            m->bound = n_bound;
            pthread_mutex_unlock(&mu);
            n_samples++;
        }
        common_free(s);
        common_free(x);
        while (__atomic_load_n(&sampling, __ATOMIC_ACQUIRE) && now() - t0 < sample_every)
            usleep(20000);
    }
    return NULL;
}

/* ---- objects ---- */

static json_t *node_status(void)
{
    json_t *r = json_pack("{s:s, s:s, s:s}", "cpu", "64", "memory", "512Gi", "pods", "110");
    json_t *st =
        json_pack("{s:O, s:O, s:[{s:s, s:s, s:s}]}", "capacity", r, "allocatable", r, "conditions",
                  "type", "Ready", "status", "True", "reason", "KubeletReady");
    json_decref(r);
    return st;
}

static int node_status_patch;

static enum common_rc create_node(long i, struct common_error *err)
{
    char name[64], zone[16], block[24];
    json_t *obj;
    enum common_rc rc;
    snprintf(name, sizeof(name), "bsched-node-%05ld", i);
    snprintf(zone, sizeof(zone), "zone-%c", (char)('a' + i % 4));
    snprintf(block, sizeof(block), "%ld", i / BLOCK);
    obj = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s, s:s}}, s:o}", "apiVersion", "v1", "kind",
                    "Node", "metadata", "name", name, "labels", NODE_LABEL, "1",
                    "kubernetes.io/hostname", name, "topology.kubernetes.io/zone", zone,
                    BLOCK_LABEL, block, "status", node_status());
    rc = common_kube_create(kube, &common_kube_nodes, NULL, obj, NULL, NULL, err);
    if ((rc == COMMON_OK || rc == COMMON_EEXISTS) && node_status_patch) {
        json_t *st = json_pack("{s:O}", "status", json_object_get(obj, "status"));
        char *body = json_dumps(st, JSON_COMPACT);
        struct common_kube_write_opts wo = {.subresource = "status"};
        rc = common_kube_patch(kube, &common_kube_nodes, NULL, name, COMMON_KUBE_MERGE_PATCH, body,
                               &wo, NULL, err);
        free(body);
        json_decref(st);
    }
    json_decref(obj);
    return rc;
}

/* the workloads: the order and shape of the pods created */
enum workload { WL_GANG, WL_INTERLEAVED, WL_MIXED, WL_CONTENDED, WL_N };
static const char *const wl_name[WL_N] = {"gang", "interleaved", "mixed", "contended"};

/* which variant the pod workers create */
static struct {
    char prefix[32];
    char variant;    /* 'A' plain, 'B' trainsched, 'C' Coscheduling, 'D' native, 'E' trainsched on
                      * scheduler-plugins' kube-scheduler build with Coscheduling off */
    int gang;        /* 0: plain pods (A) */
    int interleaved; /* gang member order */
    enum workload wl;
    long pods, gangs, pool_blocks;
} job;

/* the gang of pod i, or -1 for a plain pod (mixed: every fifth block of 8 pods is a gang;
 * contended: interleaved, so that a scheduler without a gang rule fills the pool with parts of
 * every gang and none can finish) */
static long pod_gang(long i)
{
    switch (job.wl) {
    case WL_INTERLEAVED:
    case WL_CONTENDED:
        return job.gangs ? i % job.gangs : -1;
    case WL_MIXED:
        return (i / GANG) % 5 == 0 ? (i / GANG) / 5 : -1;
    default:
        return i / GANG;
    }
}

static void gang_of(long i, char *buf, size_t size)
{
    snprintf(buf, size, "%s-g%04ld", job.prefix, pod_gang(i));
}

static enum common_rc create_pod(long i, struct common_error *err)
{
    char name[64];
    json_t *req = json_pack("{s:s, s:s}", "cpu", "1", "memory", "1Gi"), *lim = json_object();
    json_t *p;
    enum common_rc rc;

    long g = pod_gang(i);

    snprintf(name, sizeof(name), "%s-%05ld", job.prefix, i);
    if (job.wl == WL_CONTENDED)
        json_object_set_new(req, "cpu", json_string("64")); /* a whole Node */
    if (EXTENDER_VARIANT(job.variant) && g >= 0) {
        json_object_set_new(req, "trainsched.io/gang", json_string("1"));
        json_object_set_new(lim, "trainsched.io/gang", json_string("1"));
    }
    p = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:b, s:i, s:[{s:s, s:s, s:{s:o, s:o}}]}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "labels", RUN_LABEL,
                  job.prefix, "spec", "automountServiceAccountToken", 0,
                  "terminationGracePeriodSeconds", 0, "containers", "name", "c", "image",
                  "registry.k8s.io/pause:3.10", "resources", "requests", req, "limits", lim);
    if (g >= 0) {
        char gn[64];
        json_t *labels = json_object_get(json_object_get(p, "metadata"), "labels");
        gang_of(i, gn, sizeof(gn));
        json_object_set_new(labels, GANG_NAME_LABEL, json_string(gn));
        if (EXTENDER_VARIANT(job.variant) || job.variant == 'C')
            json_object_set_new(labels, GANG_LABEL, json_string(gn));
        /* what trainsched's pod webhook adds to a gang pod (docs/gang.md "The gang gate"):
         * the extender removes it from the whole gang once the gang can be placed */
        if (EXTENDER_VARIANT(job.variant) && cfg.gate)
            json_object_set_new(json_object_get(p, "spec"), "schedulingGates",
                                json_pack("[{s:s}]", "name", "trainsched.io/gang"));
        else if (job.variant == 'D')
            json_object_set_new(json_object_get(p, "spec"), "schedulingGroup",
                                json_pack("{s:s}", "podGroupName", gn));
    }
    if (job.wl == WL_CONTENDED) { /* only the pool: the first pool_blocks blocks of Nodes */
        json_t *vals = json_array();
        for (long b = 0; b < job.pool_blocks; b++) {
            char v[24];
            snprintf(v, sizeof(v), "%ld", b);
            json_array_append_new(vals, json_string(v));
        }
        json_object_set_new(json_object_get(p, "spec"), "affinity",
                            json_pack("{s:{s:{s:[{s:[{s:s, s:s, s:o}]}]}}}", "nodeAffinity",
                                      "requiredDuringSchedulingIgnoredDuringExecution",
                                      "nodeSelectorTerms", "matchExpressions", "key", BLOCK_LABEL,
                                      "operator", "In", "values", vals));
    }
    create_t[i] = now();
    rc = common_kube_create(kube, &common_kube_pods, cfg.ns, p, NULL, NULL, err);
    json_decref(p);
    return rc;
}

static enum common_rc create_podgroup(long g, struct common_error *err)
{
    char name[64];
    json_t *pg;
    enum common_rc rc;
    snprintf(name, sizeof(name), "%s-g%04ld", job.prefix, g);
    if (job.variant ==
        'D') { /* k8s.io/api scheduling/v1alpha2 and v1beta1 PodGroupSpec: the
                  same gang policy; a PodGroup without workloadRef is valid in both */
        char api[64];
        snprintf(api, sizeof(api), "%s/%s", native_podgroups->group, native_podgroups->version);
        pg = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:{s:{s:i}}}}", "apiVersion", api,
                       "kind", "PodGroup", "metadata", "name", name, "namespace", cfg.ns, "labels",
                       RUN_LABEL, job.prefix, "spec", "schedulingPolicy", "gang", "minCount", GANG);
        rc = common_kube_create(kube, native_podgroups, cfg.ns, pg, NULL, NULL, err);
        json_decref(pg);
        return rc;
    }
    pg = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:i, s:i}}", "apiVersion",
                   "scheduling.x-k8s.io/v1alpha1", "kind", "PodGroup", "metadata", "name", name,
                   "namespace", cfg.ns, "labels", RUN_LABEL, job.prefix, "spec", "minMember", GANG,
                   "scheduleTimeoutSeconds", 120);
    rc = common_kube_create(kube, &common_kube_podgroups, cfg.ns, pg, NULL, NULL, err);
    json_decref(pg);
    return rc;
}

/* ---- many requests from several threads (as bench_kube) ---- */

struct par {
    long next, to, ok, failed;
    enum common_rc (*one)(long i, struct common_error *err);
    pthread_mutex_t lock;
    char first_err[COMMON_ERROR_MSG_MAX];
};

static void *par_worker(void *arg)
{
    struct par *p = arg;
    for (;;) {
        long i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        struct common_error err;
        enum common_rc rc;
        if (i >= p->to)
            break;
        rc = p->one(i, &err);
        if (rc == COMMON_OK || rc == COMMON_EEXISTS) {
            __atomic_add_fetch(&p->ok, 1, __ATOMIC_RELAXED);
        } else {
            pthread_mutex_lock(&p->lock);
            if (p->failed++ == 0)
                snprintf(p->first_err, sizeof(p->first_err), "%s", err.msg);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

static double run_parallel(struct par *p, long from, long to,
                           enum common_rc (*one)(long, struct common_error *))
{
    pthread_t th[64];
    long threads = cfg.threads > 64 ? 64 : cfg.threads;
    double t0 = now();
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
    p->next = from;
    p->to = to;
    p->one = one;
    for (long t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, par_worker, p);
    for (long t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&p->lock);
    return now() - t0;
}

/* DELETE collection (grace 0: no kubelet finishes deletions) of r in ns with selector */
static void delete_collection(const struct common_kube_resource *r, const char *ns,
                              const char *selector)
{
    static const char opts[] = "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                               "\"gracePeriodSeconds\":0}";
    char path[1024], full[2048];
    char *esc = common_kube_escape(selector);
    struct common_buf resp;
    struct common_error err;
    long status = 0;
    common_kube_path(r, ns, NULL, NULL, path, sizeof(path));
    snprintf(full, sizeof(full), "%s?labelSelector=%s", path, esc ? esc : "");
    common_free(esc);
    common_buf_init(&resp, (size_t)1 << 30);
    if (common_kube_request(kube, "DELETE", full, "application/json", opts, strlen(opts), NULL,
                            &resp, &status, &err) != COMMON_OK)
        fprintf(stderr, "bench_scheduler: delete %s %s: %s\n", r->resource, selector, err.msg);
    common_buf_free(&resp);
}

/* ---- setup ---- */

static void ensure_nodes(void)
{
    struct common_error err;
    struct par p;
    json_t *out = NULL;
    double secs;
    char first[64];
    enum common_rc rc;

    snprintf(first, sizeof(first), "bsched-node-%05d", 0);
    rc = create_node(0, &err);
    if (rc && rc != COMMON_EEXISTS)
        die("create the first Node", &err);
    if (common_kube_get(kube, &common_kube_nodes, NULL, first, &out, &err))
        die("get the first Node", &err);
    node_status_patch =
        json_object_size(json_object_get(json_object_get(out, "status"), "allocatable")) == 0;
    json_decref(out);
    secs = run_parallel(&p, node_status_patch ? 0 : 1, cfg.nodes, create_node);
    printf("setup: %ld Nodes (64 cpu, 512Gi, 110 pods; no kubelet)%s in %.1f s%s%s\n", cfg.nodes,
           node_status_patch ? " created + status patched" : " created", secs,
           p.failed ? "; FAILED: " : "", p.failed ? p.first_err : "");
    if (p.failed)
        die("nodes", NULL);
}

static void ensure_namespace(void)
{
    struct common_error err;
    static const struct common_kube_resource sa = {"", "v1", "serviceaccounts", 1};
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                            "metadata", "name", cfg.ns);
    enum common_rc rc =
        common_kube_create(kube, &common_kube_namespaces, NULL, obj, NULL, NULL, &err);
    json_decref(obj);
    if (rc && rc != COMMON_EEXISTS)
        die("create namespace", &err);
    obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata",
                    "name", "default");
    rc = common_kube_create(kube, &sa, cfg.ns, obj, NULL, NULL, &err);
    json_decref(obj);
    if (rc && rc != COMMON_EEXISTS)
        die("create ServiceAccount", &err);
}

/* wait until the extender's cache holds want objects of kind (skipped without its metrics) */
static double wait_extender_cache(const char *kind, double want, double timeout_s)
{
    char sel[64];
    double t0 = now(), v = -1;
    if (!cfg.ext_metrics)
        return -1;
    snprintf(sel, sizeof(sel), "kind=\"%s\"", kind);
    while (now() - t0 < timeout_s) {
        char *x = scrape(cfg.ext_metrics, 0);
        v = metric(x, "trainsched_extender_cache_objects", sel);
        common_free(x);
        if (v == want)
            break;
        usleep(200000);
    }
    return v;
}

/* ---- one measured variant ---- */

/* forget the last run's binds (callers hold mu) */
static void reset_books(void)
{
    memset(bind_t, 0, sizeof(bind_t));
    memset(create_t, 0, sizeof(create_t));
    memset(gang_bound, 0, sizeof(gang_bound));
    memset(gang_first, 0, sizeof(gang_first));
    memset(gang_last, 0, sizeof(gang_last));
    n_bound = 0;
    full_n = 0;
    last_bind = 0;
}

struct result {
    double secs, pods_per_s, first_bind, sched_secs, p50, p99, max_lat;
    double gaps_1s, idle_backoff, idle_held, create_secs;
    double attempts_sched, attempts_unsched, attempts_err, to_backoff, to_unsched, to_active;
    double algo_avg_ms, attempts_per_pod;
    double ext_filter, ext_bind_held, ext_bind_rejected, ext_filter_err;
    double cpu_sched, cpu_api, cpu_etcd, cpu_ext, cpu_self;
    long bound, pods;
};

static double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void drop_pods(const char *prefix)
{
    char sel[96];
    double t0 = now();
    snprintf(sel, sizeof(sel), RUN_LABEL "=%s", prefix);
    delete_collection(&common_kube_pods, cfg.ns, sel);
    delete_collection(&common_kube_podgroups, cfg.ns, sel);
    if (job.variant == 'D')
        delete_collection(native_podgroups, cfg.ns, sel);
    for (;;) {
        long left;
        pthread_mutex_lock(&mu);
        left = n_present;
        pthread_mutex_unlock(&mu);
        if (left <= 0 || now() - t0 > 120)
            break;
        usleep(200000);
    }
    wait_extender_cache("pods", 0, 30);
    printf("    (pods deleted in %.1f s)\n", now() - t0);
}

static void run_variant(const char *prefix, int gang, int interleaved, long pods, double every,
                        struct result *r)
{
    struct par p;
    char *s0, *s1, *x0 = NULL, *x1 = NULL;
    long ext_pid = 0, pid_sched, pid_api = bench_bed_pid("kube-apiserver"),
         pid_etcd = bench_bed_pid("etcd");
    double c0[5], t_first, t_last, *lat;
    const char *e = getenv("EXTENDER_PID");
    long n;

    memset(r, 0, sizeof(*r));
    if (e)
        ext_pid = strtol(e, NULL, 10);
    snprintf(job.prefix, sizeof(job.prefix), "%s", prefix);
    job.gang = gang;
    job.variant = gang ? 'B' : 'A';
    job.interleaved = interleaved;
    job.wl = interleaved ? WL_INTERLEAVED : WL_GANG;
    job.pods = pods;
    job.gangs = pods / GANG;
    if (sched_ctl("restart", gang ? cfg_gang : cfg_plain) != 0)
        die("restart kube-scheduler", NULL);
    sleep(2); /* its informers have synced the Nodes once /healthz answers; let it settle */
    pid_sched = bench_bed_pid("kube-scheduler");
    /* /healthz may have been answered by another scheduler on the port: ours must be alive */
    if (pid_sched <= 0 || kill((pid_t)pid_sched, 0) != 0)
        die("kube-scheduler exited after the restart (port taken?); see its log", NULL);
    if (gang) {
        double t0 = now(), v;
        run_parallel(&p, 0, job.gangs, create_podgroup);
        if (p.failed) {
            fprintf(stderr, "PodGroups: %s\n", p.first_err);
            die("create PodGroups", NULL);
        }
        v = wait_extender_cache("podgroups", (double)job.gangs, 60);
        printf("    %ld PodGroups created in %.1f s, in the extender's cache: %.0f\n", job.gangs,
               now() - t0, v);
    }
    pthread_mutex_lock(&mu);
    snprintf(cur_prefix, sizeof(cur_prefix), "%s", prefix);
    reset_books();
    pthread_mutex_unlock(&mu);
    s0 = scrape(sched_metrics_url, 1);
    x0 = scrape(cfg.ext_metrics, 0);
    c0[0] = bench_proc_cpu(pid_sched);
    c0[1] = bench_proc_cpu(pid_api);
    c0[2] = bench_proc_cpu(pid_etcd);
    c0[3] = bench_proc_cpu(ext_pid);
    c0[4] = self_cpu();
    n_samples = 0;
    sample_every = every;
    __atomic_store_n(&sampling, 1, __ATOMIC_RELEASE);
    pthread_create(&sampler_th, NULL, sampler, NULL);

    r->create_secs = run_parallel(&p, 0, pods, create_pod);
    if (p.failed)
        fprintf(stderr, "bench_scheduler: %ld pod creates failed: %s\n", p.failed, p.first_err);
    for (;;) {
        long b;
        pthread_mutex_lock(&mu);
        b = n_bound;
        pthread_mutex_unlock(&mu);
        if (b >= p.ok || now() - create_t[0] > (double)cfg.timeout_s)
            break;
        usleep(50000);
    }
    __atomic_store_n(&sampling, 0, __ATOMIC_RELEASE);
    pthread_join(sampler_th, NULL);
    r->cpu_sched = bench_proc_cpu(pid_sched) - c0[0];
    r->cpu_api = bench_proc_cpu(pid_api) - c0[1];
    r->cpu_etcd = bench_proc_cpu(pid_etcd) - c0[2];
    r->cpu_ext = ext_pid ? bench_proc_cpu(ext_pid) - c0[3] : -1;
    r->cpu_self = self_cpu() - c0[4];
    s1 = scrape(sched_metrics_url, 1);
    x1 = scrape(cfg.ext_metrics, 0);

    pthread_mutex_lock(&mu);
    r->bound = n_bound;
    r->pods = pods;
    t_first = 1e300;
    t_last = 0;
    lat = calloc((size_t)pods + 1, sizeof(double));
    n = 0;
    {
        double first_bind = 1e300, *bt = calloc((size_t)pods + 1, sizeof(double));
        long nb = 0;
        for (long i = 0; i < pods; i++) {
            if (create_t[i] > 0 && create_t[i] < t_first)
                t_first = create_t[i];
            if (bind_t[i] > 0) {
                if (bind_t[i] > t_last)
                    t_last = bind_t[i];
                if (bind_t[i] < first_bind)
                    first_bind = bind_t[i];
                lat[n++] = bind_t[i] - create_t[i];
                bt[nb++] = bind_t[i];
            }
        }
        qsort(bt, (size_t)nb, sizeof(double), bench_cmp_double);
        for (long i = 1; i < nb; i++)
            if (bt[i] - bt[i - 1] > 1.0)
                r->gaps_1s += bt[i] - bt[i - 1];
        r->first_bind = nb ? first_bind - t_first : -1;
        r->sched_secs = nb ? t_last - first_bind : -1;
        free(bt);
    }
    pthread_mutex_unlock(&mu);
    qsort(lat, (size_t)n, sizeof(double), bench_cmp_double);
    r->secs = t_last - t_first;
    r->pods_per_s = r->secs > 0 ? (double)r->bound / r->secs : 0;
    r->p50 = n ? lat[n / 2] : -1;
    r->p99 = n ? lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] : -1;
    r->max_lat = n ? lat[n - 1] : -1;
    free(lat);
    for (int i = 1; i < n_samples; i++) {
        const struct sample *a = &samples[i - 1];
        double dt = samples[i].t - a->t;
        if (a->bound >= pods || a->active != 0)
            continue;
        if (a->backoff + a->unsched > 0)
            r->idle_backoff += dt;
        else if (a->held > 0)
            r->idle_held += dt;
    }
    r->attempts_sched = mdelta(s0, s1, "scheduler_schedule_attempts_total", "result=\"scheduled\"");
    r->attempts_unsched =
        mdelta(s0, s1, "scheduler_schedule_attempts_total", "result=\"unschedulable\"");
    r->attempts_err = mdelta(s0, s1, "scheduler_schedule_attempts_total", "result=\"error\"");
    r->to_backoff = mdelta(s0, s1, "scheduler_queue_incoming_pods_total", "queue=\"backoff\"");
    r->to_unsched =
        mdelta(s0, s1, "scheduler_queue_incoming_pods_total", "queue=\"unschedulable\"");
    r->to_active = mdelta(s0, s1, "scheduler_queue_incoming_pods_total", "queue=\"active\"");
    {
        double cnt = mdelta(s0, s1, "scheduler_scheduling_algorithm_duration_seconds_count", NULL);
        double sum = mdelta(s0, s1, "scheduler_scheduling_algorithm_duration_seconds_sum", NULL);
        double pc = mdelta(s0, s1, "scheduler_pod_scheduling_attempts_count", NULL);
        double ps = mdelta(s0, s1, "scheduler_pod_scheduling_attempts_sum", NULL);
        r->algo_avg_ms = cnt > 0 ? 1000 * sum / cnt : -1;
        r->attempts_per_pod = pc > 0 ? ps / pc : -1;
    }
    if (x0 && x1) {
        r->ext_filter = mdelta(x0, x1, "trainsched_extender_requests_total", "verb=\"filter\"");
        r->ext_filter_err = mdelta(x0, x1, "trainsched_extender_requests_total",
                                   "verb=\"filter\",result=\"error\"");
        r->ext_bind_held =
            mdelta(x0, x1, "trainsched_extender_requests_total", "verb=\"bind\",result=\"held\"");
        r->ext_bind_rejected = mdelta(x0, x1, "trainsched_extender_requests_total",
                                      "verb=\"bind\",result=\"rejected\"");
    }
    common_free(s0);
    common_free(s1);
    common_free(x0);
    common_free(x1);
    pthread_mutex_lock(&mu);
    cur_prefix[0] = '\0';
    pthread_mutex_unlock(&mu);

    printf("    %ld of %ld pods bound in %.2f s (first create -> last bind) = %.1f pods/s; "
           "creates took %.2f s; first bind after %.2f s, then %.2f s of binding\n",
           r->bound, pods, r->secs, r->pods_per_s, r->create_secs, r->first_bind, r->sched_secs);
    printf("    create->bind latency p50 %.2f s, p99 %.2f s, max %.2f s; gaps > 1 s between "
           "binds: %.1f s\n",
           r->p50, r->p99, r->max_lat, r->gaps_1s);
    printf("    kube-scheduler: attempts scheduled %.0f, unschedulable %.0f, error %.0f; "
           "attempts per scheduled pod %.2f; algorithm %.2f ms avg; queue entries: active %.0f, "
           "backoff %.0f, unschedulable %.0f\n",
           r->attempts_sched, r->attempts_unsched, r->attempts_err, r->attempts_per_pod,
           r->algo_avg_ms, r->to_active, r->to_backoff, r->to_unsched);
    if (gang)
        printf("    extender: filter %.0f (error %.0f), bind held %.0f, rejected %.0f; queue "
               "empty while pods sat in backoff/unschedulable: %.1f s, while only held binds "
               "waited: %.1f s (samples every %.1f s)\n",
               r->ext_filter, r->ext_filter_err, r->ext_bind_held, r->ext_bind_rejected,
               r->idle_backoff, r->idle_held, every);
    printf("    CPU s: kube-scheduler %.1f, kube-apiserver %.1f, etcd %.1f, extender %.1f, this "
           "client %.1f (over %.1f s)\n",
           r->cpu_sched, r->cpu_api, r->cpu_etcd, r->cpu_ext, r->cpu_self, r->secs);
    fflush(stdout);
}

static void print_timeline(const struct result *r)
{
    double t0 = samples[0].t;
    (void)r;
    printf("    timeline (s since the first create; pending pods in kube-scheduler's queues, "
           "extender's held binds, pods bound):\n");
    printf("      %6s %7s %7s %7s %6s %6s\n", "t", "active", "backoff", "unsched", "held", "bound");
    for (int i = 0; i < n_samples; i++) {
        const struct sample *m = &samples[i];
        if (i % (n_samples / 40 + 1) && i != n_samples - 1)
            continue;
        printf("      %6.1f %7.0f %7.0f %7.0f %6.0f %6ld\n", m->t - t0, m->active, m->backoff,
               m->unsched, m->held, m->bound);
    }
}

/* ---- (p) the peers: A plain, B trainsched, C Coscheduling, D native, one workload at a time ----
 */

struct peer_result {
    int ran, stalled;
    long pods, bound, gangs, partial;
    double secs, pods_per_s, attempts, attempts_per_pod, max_spread, create_secs;
    double cpu_sched, cpu_ext, cpu_api, cpu_etcd;
    char why[160]; /* why it did not run */
};

#define NVAR 5
static const char *const variant_name[NVAR] = {
    "A plain kube-scheduler", "B trainsched extender", "C scheduler-plugins Coscheduling",
    "D kube-scheduler GangScheduling", "E trainsched extender on C's kube-scheduler"};

/* the contended workload: delete each gang's pods hold_s after its 8th bind (the job ended),
 * which frees its Nodes for the gangs still waiting */
static struct {
    int on;
    double hold_s;
    pthread_t th;
} reaper;

static void *reaper_main(void *arg)
{
    long done = 0;
    (void)arg;
    while (__atomic_load_n(&reaper.on, __ATOMIC_ACQUIRE)) {
        long g = -1;
        double t = 0;
        pthread_mutex_lock(&mu);
        if (done < full_n) {
            g = full_q[done];
            t = gang_last[g];
        }
        pthread_mutex_unlock(&mu);
        if (g < 0 || now() - t < reaper.hold_s) {
            usleep(50000);
            continue;
        }
        {
            char sel[128];
            snprintf(sel, sizeof(sel), GANG_NAME_LABEL "=%s-g%04ld", job.prefix, g);
            delete_collection(&common_kube_pods, cfg.ns, sel);
        }
        done++;
    }
    return NULL;
}

static void run_peer(char variant, enum workload wl, long gangs, const char *schedplugins,
                     struct peer_result *r)
{
    struct par p;
    char prefix[16], *s0, *s1;
    long ext_pid = 0, pid_sched, pid_api = bench_bed_pid("kube-apiserver"),
         pid_etcd = bench_bed_pid("etcd");
    double c0[4], t_first = 1e300, t_last = 0;
    const char *e = getenv("EXTENDER_PID");
    const char *conf = EXTENDER_VARIANT(variant) ? cfg_gang
                       : variant == 'C'          ? cfg_cosched
                                                 : cfg_plain;

    memset(r, 0, sizeof(*r));
    if (e && EXTENDER_VARIANT(variant))
        ext_pid = strtol(e, NULL, 10);
    snprintf(prefix, sizeof(prefix), "p%c%c", (char)(variant - 'A' + 'a'), wl_name[wl][0]);
    snprintf(job.prefix, sizeof(job.prefix), "%s", prefix);
    job.variant = variant;
    job.gang = variant != 'A';
    job.wl = wl;
    job.interleaved = wl == WL_INTERLEAVED;
    job.pods = gangs * GANG;
    job.gangs = wl == WL_MIXED ? (gangs + 4) / 5 : gangs;
    /* contended: the pool holds half the gang pods at once (one pod per Node) */
    job.pool_blocks = wl == WL_CONTENDED ? (gangs * GANG / 2 + BLOCK - 1) / BLOCK : 0;
    r->pods = job.pods;
    r->gangs = job.gangs;
    if (sched_ctl_bin("restart", conf, variant == 'C' || variant == 'E' ? schedplugins : NULL) != 0)
        die("restart kube-scheduler", NULL);
    sleep(2);
    pid_sched = bench_bed_pid("kube-scheduler");
    if (pid_sched <= 0 || kill((pid_t)pid_sched, 0) != 0)
        die("kube-scheduler exited after the restart (port taken?); see its log", NULL);
    if (variant != 'A') {
        run_parallel(&p, 0, job.gangs, create_podgroup);
        if (p.failed)
            die("create PodGroups", NULL);
        if (EXTENDER_VARIANT(variant))
            wait_extender_cache("podgroups", (double)job.gangs, 60);
        else
            sleep(1); /* the scheduler's PodGroup informer */
    }
    pthread_mutex_lock(&mu);
    snprintf(cur_prefix, sizeof(cur_prefix), "%s", prefix);
    reset_books();
    pthread_mutex_unlock(&mu);
    s0 = scrape(sched_metrics_url, 1);
    c0[0] = bench_proc_cpu(pid_sched);
    c0[1] = bench_proc_cpu(pid_api);
    c0[2] = bench_proc_cpu(pid_etcd);
    c0[3] = ext_pid ? bench_proc_cpu(ext_pid) : 0;
    if (wl == WL_CONTENDED) {
        reaper.hold_s = 1.0;
        __atomic_store_n(&reaper.on, 1, __ATOMIC_RELEASE);
        pthread_create(&reaper.th, NULL, reaper_main, NULL);
    }
    r->create_secs = run_parallel(&p, 0, job.pods, create_pod);
    if (p.failed)
        fprintf(stderr, "bench_scheduler: %ld pod creates failed: %s\n", p.failed, p.first_err);
    /* a stall: no bind and no scheduling progress for stall_s. Progress is a bind, a change of
     * the scheduler's attempts (a gang scheduler holding members at Permit or in the extender's
     * bind binds nothing until a gang is complete; interleaved, that is most of the run) or of
     * the extender's held binds, sampled every 2 s */
    {
        double progress_t = now(), probe_t = 0, last_sig = -1;
        for (;;) {
            long b;
            double lb, t = now();
            pthread_mutex_lock(&mu);
            b = n_bound;
            lb = last_bind;
            pthread_mutex_unlock(&mu);
            if (b >= p.ok)
                break;
            if (lb > progress_t)
                progress_t = lb;
            if (t - probe_t > 2.0) {
                char *m = scrape(sched_metrics_url, 1), *x = NULL;
                double sig = metric(m, "scheduler_schedule_attempts_total", NULL);
                if (EXTENDER_VARIANT(variant)) {
                    x = scrape(cfg.ext_metrics, 0);
                    sig += 1e6 * metric(x, "trainsched_extender_held_binds", NULL);
                }
                if (sig != last_sig)
                    progress_t = t;
                last_sig = sig;
                probe_t = t;
                common_free(m);
                common_free(x);
            }
            if (t - progress_t > (double)cfg.stall_s || t - create_t[0] > (double)cfg.timeout_s) {
                r->stalled = 1;
                break;
            }
            usleep(50000);
        }
    }
    if (wl == WL_CONTENDED) {
        __atomic_store_n(&reaper.on, 0, __ATOMIC_RELEASE);
        pthread_join(reaper.th, NULL);
    }
    r->cpu_sched = bench_proc_cpu(pid_sched) - c0[0];
    r->cpu_api = bench_proc_cpu(pid_api) - c0[1];
    r->cpu_etcd = bench_proc_cpu(pid_etcd) - c0[2];
    r->cpu_ext = ext_pid ? bench_proc_cpu(ext_pid) - c0[3] : 0;
    s1 = scrape(sched_metrics_url, 1);

    pthread_mutex_lock(&mu);
    r->bound = n_bound;
    for (long i = 0; i < job.pods; i++) {
        if (create_t[i] > 0 && create_t[i] < t_first)
            t_first = create_t[i];
        if (bind_t[i] > t_last)
            t_last = bind_t[i];
    }
    /* partial: some members bound while others were not, for longer than it takes to bind a
     * gang's 8 pods one after the other (5 s), or still at the end */
    for (long g = 0; g < job.gangs; g++) {
        double spread = gang_last[g] - gang_first[g];
        if (gang_bound[g] > 0 && gang_bound[g] < GANG)
            r->partial++;
        else if (gang_bound[g] == GANG && spread > 5.0)
            r->partial++;
        if (gang_bound[g] == GANG && spread > r->max_spread)
            r->max_spread = spread;
    }
    cur_prefix[0] = '\0';
    pthread_mutex_unlock(&mu);
    r->secs = t_last > t_first ? t_last - t_first : 0;
    r->pods_per_s = r->secs > 0 ? (double)r->bound / r->secs : 0;
    r->attempts = mdelta(s0, s1, "scheduler_schedule_attempts_total", NULL);
    r->attempts_per_pod = r->bound > 0 ? r->attempts / (double)r->bound : -1;
    common_free(s0);
    common_free(s1);
    r->ran = 1;
    printf("    %c %-34s %ld/%ld bound in %.1f s = %.1f pods/s%s; %.2f attempts/pod; partial "
           "gangs %ld (max spread %.1f s); CPU ms/pod: scheduler %.1f, extender %.1f, "
           "apiserver+etcd %.1f\n",
           variant, variant_name[variant - 'A'] + 2, r->bound, r->pods, r->secs, r->pods_per_s,
           r->stalled ? " (STALLED: no bind for the stall time)" : "", r->attempts_per_pod,
           r->partial, r->max_spread, 1000 * r->cpu_sched / (double)r->pods,
           1000 * r->cpu_ext / (double)r->pods,
           1000 * (r->cpu_api + r->cpu_etcd) / (double)r->pods);
    fflush(stdout);
    drop_pods(prefix);
}

static double ratio(double a, double b)
{
    return a > 0 && b > 0 ? a / b : 0;
}

static void print_peer_table(enum workload wl, long gangs, const struct peer_result *res)
{
    const struct peer_result *a = &res[0], *b = &res[1], *c = &res[2], *d = &res[3], *e = &res[4];
    long ng = wl == WL_MIXED ? (gangs + 4) / 5 : gangs;
    printf("\n  %s: %ld gangs of %d%s (%ld pods)%s:\n", wl_name[wl], ng, GANG,
           wl == WL_MIXED ? " among plain pods" : "", gangs * GANG,
           wl == WL_CONTENDED ? ", created interleaved, room for half of them at once" : "");
    printf("  | variant | pods/s | all bound after | attempts/pod | partial gangs | max spread | "
           "CPU ms/pod sched | ext | apiserver+etcd | total | pods/s vs A |\n");
    printf("  |---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int v = 0; v < NVAR; v++) {
        const struct peer_result *r = &res[v];
        double tot;
        if (!r->ran) {
            printf("  | %s | not run: %s |||||||||\n", variant_name[v], r->why);
            continue;
        }
        tot = r->cpu_sched + r->cpu_ext + r->cpu_api + r->cpu_etcd;
        if (r->stalled)
            printf("  | %s | - | stalled: %ld of %ld bound, none for %ld s", variant_name[v],
                   r->bound, r->pods, cfg.stall_s);
        else
            printf("  | %s | %.1f | %.1f s", variant_name[v], r->pods_per_s, r->secs);
        printf(" | %.2f | %ld | %.1f s | %.1f | %.1f | %.1f | %.1f |", r->attempts_per_pod,
               r->partial, r->max_spread, 1000 * r->cpu_sched / r->pods,
               1000 * r->cpu_ext / r->pods, 1000 * (r->cpu_api + r->cpu_etcd) / r->pods,
               1000 * tot / r->pods);
        if (a->ran && !a->stalled && !r->stalled)
            printf(" %.3f |\n", ratio(r->pods_per_s, a->pods_per_s));
        else
            printf(" - |\n");
    }
    printf("  ratios of pods/s (0: a side did not run or stalled): B/A %.3f (goal >= 0.95), "
           "B/C %.3f, B/D %.3f (goal >= 0.95), C/D %.3f, E/C %.3f (like for like on one "
           "kube-scheduler build, goal >= 1)\n",
           a->stalled || b->stalled ? 0 : ratio(b->pods_per_s, a->pods_per_s),
           c->stalled || b->stalled ? 0 : ratio(b->pods_per_s, c->pods_per_s),
           d->stalled || b->stalled ? 0 : ratio(b->pods_per_s, d->pods_per_s),
           d->stalled || c->stalled ? 0 : ratio(c->pods_per_s, d->pods_per_s),
           c->stalled || e->stalled ? 0 : ratio(e->pods_per_s, c->pods_per_s));
    fflush(stdout);
}

/* 1 when the API server serves res (a list answers 200) */
static int served(const struct common_kube_resource *res)
{
    struct common_buf resp;
    struct common_error err;
    long status = 0;
    char path[512];
    common_kube_path(res, cfg.ns, NULL, NULL, path, sizeof(path));
    common_buf_init(&resp, (size_t)16 << 20);
    if (common_kube_request(kube, "GET", path, NULL, NULL, 0, NULL, &resp, &status, &err) !=
        COMMON_OK)
        status = 0;
    common_buf_free(&resp);
    return status == 200;
}

/* 1 when the API server serves native PodGroups (the bed's native switch); native_podgroups is
 * set to the version served, v1beta1 (1.37) before v1alpha2 (1.36) */
static int native_served(void)
{
    if (served(&native_v1beta1)) {
        native_podgroups = &native_v1beta1;
        return 1;
    }
    native_podgroups = &native_v1alpha2;
    return served(&native_v1alpha2);
}

static void run_peers(void)
{
    static struct peer_result res[WL_N][NVAR];
    int native = native_served(), have_sp = cfg.schedplugins && access(cfg.schedplugins, X_OK) == 0;
    long gangs = cfg.peer_gangs;

    printf("\n(p) peers: %ld gangs of %d per workload on %ld Nodes, one scheduler at a time "
           "(restarted per run), variants %s, workloads %s\n",
           gangs, GANG, cfg.nodes, cfg.variants, cfg.workloads);
    for (int w = 0; w < WL_N; w++) {
        if (!strstr(cfg.workloads, wl_name[w]))
            continue;
        if (w == WL_CONTENDED && (gangs * GANG / 2 + BLOCK - 1) / BLOCK * BLOCK > cfg.nodes) {
            printf("  contended: needs %ld Nodes in the pool, only %ld; skipped\n",
                   (gangs * GANG / 2 + BLOCK - 1) / BLOCK * BLOCK, cfg.nodes);
            continue;
        }
        printf("  workload %s:\n", wl_name[w]);
        fflush(stdout);
        for (int v = 0; v < NVAR; v++) {
            char variant = (char)('A' + v);
            if (!strchr(cfg.variants, variant)) {
                snprintf(res[w][v].why, sizeof(res[w][v].why), "not asked for");
                continue;
            }
            if ((variant == 'C' || variant == 'E') && !have_sp) {
                snprintf(res[w][v].why, sizeof(res[w][v].why),
                         "no scheduler-plugins build (--schedplugins)");
                continue;
            }
            if (variant == 'D' && !native) {
                snprintf(res[w][v].why, sizeof(res[w][v].why),
                         "the API server serves neither scheduling.k8s.io/v1beta1 nor "
                         "v1alpha2 PodGroups (bed without TESTBED_NATIVE_GANG=1)");
                continue;
            }
            run_peer(variant, (enum workload)w, gangs, cfg.schedplugins, &res[w][v]);
        }
        print_peer_table((enum workload)w, gangs, res[w]);
    }
    printf("\n(p) summary (pods/s; ratios):\n");
    for (int w = 0; w < WL_N; w++) {
        const struct peer_result *r = res[w];
        int any = 0, stalled = 0;
        double pps[NVAR];
        for (int v = 0; v < NVAR; v++) {
            any |= r[v].ran;
            stalled |= r[v].stalled;
            pps[v] = r[v].stalled ? 0 : r[v].pods_per_s; /* 0: did not run or stalled */
        }
        if (!any)
            continue;
        printf("  %-12s A %6.1f  B %6.1f  C %6.1f  D %6.1f  E %6.1f   B/A %.3f  B/D %.3f  "
               "E/C %.3f  attempts/pod B %.2f E %.2f  partial gangs B/C/D/E %ld/%ld/%ld/%ld "
               "(A %ld)%s\n",
               wl_name[w], pps[0], pps[1], pps[2], pps[3], pps[4], ratio(pps[1], pps[0]),
               ratio(pps[1], pps[3]), ratio(pps[4], pps[2]), r[1].attempts_per_pod,
               r[4].attempts_per_pod, r[1].partial, r[2].partial, r[3].partial, r[4].partial,
               r[0].partial, stalled ? " (0 pods/s: stalled, no bind for the stall time)" : "");
    }
    fflush(stdout);
}

/* --only LIST (comma-separated parts b, c, p; default b,c) names part */
static int want_part(const char *part)
{
    const char *list = cfg.only ? cfg.only : "b,c";
    size_t n = strlen(part);
    for (const char *x = list; x && *x; x = strchr(x, ',') ? strchr(x, ',') + 1 : NULL)
        if (strncmp(x, part, n) == 0 && (x[n] == ',' || x[n] == '\0'))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    struct common_kubeconfig kc;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;
    struct common_informer *inf = NULL;
    struct common_informer_handlers h = {on_add, on_update, on_delete, NULL};
    struct common_informer_opts io = {0};
    const char *hz = getenv("TESTBED_SCHEDULER_HEALTHZ");
    static struct result ra[16], rb[16], rc[2];
    double t_start = now();
    int fd;

    common_alloc_init();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodes") == 0)
            cfg.nodes = bench_flag_long("bench_scheduler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--pods") == 0)
            cfg.pods = bench_flag_long("bench_scheduler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--rounds") == 0)
            cfg.rounds = bench_flag_long("bench_scheduler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--gangs-c") == 0)
            cfg.gangs_c = bench_flag_long("bench_scheduler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--threads") == 0)
            cfg.threads = bench_flag_long("bench_scheduler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--sched-qps") == 0)
            cfg.sched_qps = bench_flag_long("bench_scheduler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--timeout") == 0)
            cfg.timeout_s = bench_flag_long("bench_scheduler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--ns") == 0 && i + 1 < argc)
            cfg.ns = argv[++i];
        else if (strcmp(argv[i], "--extender") == 0 && i + 1 < argc)
            cfg.ext_url = argv[++i];
        else if (strcmp(argv[i], "--extender-metrics") == 0 && i + 1 < argc)
            cfg.ext_metrics = argv[++i];
        else if (strcmp(argv[i], "--sched-ctl") == 0 && i + 1 < argc)
            cfg.sched_ctl = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            cfg.only = argv[++i];
        else if (strcmp(argv[i], "--c-order") == 0 && i + 1 < argc)
            cfg.c_order = argv[++i];
        else if (strcmp(argv[i], "--cleanup-nodes") == 0)
            cfg.cleanup_nodes = 1;
        else if (strcmp(argv[i], "--schedplugins") == 0 && i + 1 < argc)
            cfg.schedplugins = argv[++i];
        else if (strcmp(argv[i], "--gate") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "on") == 0 || strcmp(argv[i + 1], "off") == 0))
            cfg.gate = strcmp(argv[++i], "on") == 0;
        else if (strcmp(argv[i], "--variants") == 0 && i + 1 < argc)
            cfg.variants = argv[++i];
        else if (strcmp(argv[i], "--workloads") == 0 && i + 1 < argc)
            cfg.workloads = argv[++i];
        else if (strcmp(argv[i], "--peer-gangs") == 0)
            cfg.peer_gangs = bench_flag_long("bench_scheduler", argc, argv, &i, 1, MAX_GANGS);
        else if (strcmp(argv[i], "--stall") == 0)
            cfg.stall_s = bench_flag_long("bench_scheduler", argc, argv, &i, 1, LONG_MAX);
        else {
            fprintf(stderr,
                    "usage: bench_scheduler --extender http://127.0.0.1:PORT [--extender-metrics "
                    "URL] [--sched-ctl PATH] [--nodes N] [--pods P] [--rounds R] [--gangs-c G] "
                    "[--threads T] [--sched-qps Q] [--timeout S] [--only b|c|p] [--c-order "
                    "gang|interleaved] [--schedplugins BIN] [--variants ABCDE] [--gate on|off] "
                    "[--workloads "
                    "gang,interleaved,mixed,contended] [--peer-gangs G] [--stall S] "
                    "[--ns NAME] "
                    "[--cleanup-nodes]\n  needs the test bed's env (KUBECONFIG, TESTBED_*)\n");
            return 2;
        }
    }
    if (!cfg.ext_url || !getenv("KUBECONFIG") || !hz || !getenv("TESTBED_SCHEDULER_KUBECONFIG")) {
        fprintf(stderr, "bench_scheduler: needs --extender and the test bed's env\n");
        return 2;
    }
    if (cfg.pods > MAX_PODS || cfg.gangs_c * GANG > MAX_PODS || cfg.rounds > 16) {
        fprintf(stderr, "bench_scheduler: at most %d pods and 16 rounds\n", MAX_PODS);
        return 2;
    }
    if (!cfg.sched_ctl)
        cfg.sched_ctl = "tests/e2e/testbed/scheduler-ctl.sh";
    snprintf(sched_metrics_url, sizeof(sched_metrics_url), "%.*s/metrics",
             (int)(strlen(hz) - strlen("/healthz")), hz);
    fd = mkstemp(cfg_plain);
    if (fd >= 0)
        close(fd);
    fd = mkstemp(cfg_gang);
    if (fd >= 0)
        close(fd);
    write_config(cfg_plain, 0);
    write_config(cfg_gang, 1);
    fd = mkstemp(cfg_cosched);
    if (fd >= 0)
        close(fd);
    write_config(cfg_cosched, 2);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    memset(&kc, 0, sizeof(kc));
    if (common_kubeconfig_load(NULL, NULL, &kc, &err))
        die("kubeconfig", &err);
    o.qps = 1e9;
    o.burst = 1000000;
    o.timeout_ms = 300000;
    kube = common_kube_client_create(&kc, &o, &err);
    common_kubeconfig_free(&kc);
    if (!kube)
        die("client", &err);

    printf("bench_scheduler: %ld Nodes, %ld pods (gangs of %d), %ld rounds; (c) %ld gangs; "
           "kube-scheduler qps/burst %ld; %ld create threads; %ld cores, load %s",
           cfg.nodes, cfg.pods, GANG, cfg.rounds, cfg.gangs_c, cfg.sched_qps, cfg.threads,
           sysconf(_SC_NPROCESSORS_ONLN), "");
    fflush(stdout);
    {
        FILE *f = fopen("/proc/loadavg", "r");
        char la[128] = "";
        if (f) {
            if (!fgets(la, sizeof(la), f))
                la[0] = '\0';
            fclose(f);
        }
        printf("%s", la[0] ? la : "\n");
    }
    ensure_namespace();
    ensure_nodes();
    io.namespace = cfg.ns;
    if (common_informer_create(kube, &common_informer_pods, &h, &io, &inf, &err) ||
        common_informer_start(inf, &err))
        die("pod informer", &err);
    if (!common_informer_wait_synced(inf, 60000))
        die("pod informer not synced", NULL);
    printf("extender's cache: %.0f Nodes\n", wait_extender_cache("nodes", (double)cfg.nodes, 120));

    if (want_part("p"))
        run_peers();
    if (want_part("b")) {
        double pa[16], pb[16], ratio[16];
        printf("\n(b) %ld pods on %ld Nodes, percentageOfNodesToScore 100: A plain (no extender) "
               "vs B gang (extender, %ld PodGroups of %d)\n",
               cfg.pods, cfg.nodes, cfg.pods / GANG, GANG);
        for (long r = 0; r < cfg.rounds; r++) {
            for (int k = 0; k < 2; k++) {
                int gang = (int)((k + r) % 2);
                char prefix[16];
                snprintf(prefix, sizeof(prefix), "%s%ld", gang ? "b" : "a", r + 1);
                printf("  round %ld, %s:\n", r + 1, gang ? "B gang + extender" : "A plain");
                fflush(stdout);
                run_variant(prefix, gang, 0, cfg.pods, 1.0, gang ? &rb[r] : &ra[r]);
                drop_pods(prefix);
            }
            pa[r] = ra[r].pods_per_s;
            pb[r] = rb[r].pods_per_s;
            ratio[r] = pa[r] > 0 ? pb[r] / pa[r] : 0;
            printf("  round %ld: A %.1f pods/s, B %.1f pods/s, B/A %.3f\n", r + 1, pa[r], pb[r],
                   ratio[r]);
        }
        printf("\n(b) summary: A plain %.1f pods/s, B gang %.1f pods/s (medians of %ld rounds); "
               "ratio B/A %.3f (median of the rounds' ratios; target >= 0.85)\n",
               bench_median(pa, cfg.rounds), bench_median(pb, cfg.rounds), cfg.rounds,
               bench_median(ratio, cfg.rounds));
        for (long r = 0; r < cfg.rounds; r++)
            printf("  round %ld: A %.1f pods/s (%.2f s, sched CPU %.1f s), B %.1f pods/s (%.2f s, "
                   "sched CPU %.1f s, extender CPU %.1f s), ratio %.3f\n",
                   r + 1, ra[r].pods_per_s, ra[r].secs, ra[r].cpu_sched, rb[r].pods_per_s,
                   rb[r].secs, rb[r].cpu_sched, rb[r].cpu_ext, ratio[r]);
        fflush(stdout);
    }
    if (want_part("c")) {
        long pods = cfg.gangs_c * GANG;
        printf("\n(c) %ld gangs of %d (%ld pods) on %ld Nodes, with the extender:\n", cfg.gangs_c,
               GANG, pods, cfg.nodes);
        for (int k = 0; k < 2; k++) {
            char prefix[16];
            if (cfg.c_order && strcmp(cfg.c_order, k ? "interleaved" : "gang") != 0)
                continue;
            snprintf(prefix, sizeof(prefix), "c%d", k + 1);
            printf("  pods created %s:\n",
                   k ? "interleaved (member 0 of every gang, then member 1, ...)"
                     : "gang after gang");
            fflush(stdout);
            run_variant(prefix, 1, k, pods, 0.5, &rc[k]);
            print_timeline(&rc[k]);
            printf("    => all %ld bound after %.2f s; retry backoff: %.0f extender rejections "
                   "(%.0f unschedulable attempts), queue idle on backoff %.1f s = %.0f%% of the "
                   "time, bind gaps > 1 s %.1f s = %.0f%%\n",
                   rc[k].bound, rc[k].secs, rc[k].attempts_unsched, rc[k].attempts_unsched,
                   rc[k].idle_backoff, rc[k].secs > 0 ? 100 * rc[k].idle_backoff / rc[k].secs : 0,
                   rc[k].gaps_1s, rc[k].secs > 0 ? 100 * rc[k].gaps_1s / rc[k].secs : 0);
            drop_pods(prefix);
        }
    }
    restore_scheduler();
    common_informer_destroy(inf);
    if (cfg.cleanup_nodes) {
        delete_collection(&common_kube_nodes, NULL, NODE_LABEL "=1");
        printf("\nNodes deleted\n");
    }
    printf("\nbench_scheduler: done in %.0f s\n", now() - t_start);
    printf("command: . $TESTBED_RUN/env; %s --extender %s%s%s --nodes %ld --pods %ld --rounds %ld "
           "--gangs-c %ld --threads %ld --sched-qps %ld%s%s%s%s\n",
           argv[0], cfg.ext_url, cfg.ext_metrics ? " --extender-metrics " : "",
           cfg.ext_metrics ? cfg.ext_metrics : "", cfg.nodes, cfg.pods, cfg.rounds, cfg.gangs_c,
           cfg.threads, cfg.sched_qps, cfg.only ? " --only " : "", cfg.only ? cfg.only : "",
           cfg.c_order ? " --c-order " : "", cfg.c_order ? cfg.c_order : "");
    common_kube_client_destroy(kube);
    return 0;
}
