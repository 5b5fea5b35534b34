/*
 * bench/bench_memory.c - memory soak of a running `trainsched serve` (reconciler, extender and
 * webhook in one process) against the test bed's real kube-apiserver: its RSS with caches of
 * NODES Nodes, PODS Pods and TRAINJOBS TrainJobs, then during MINUTES minutes of churn (pods and
 * TrainJobs deleted and created continuously, the live counts kept), sampled every SAMPLE
 * seconds from /proc/PID/status (VmRSS). Prints the series and the growth between the middle
 * and the end of the churn (the 5th and the 10th minute at the defaults). Not a test: nothing
 * is asserted; scripts/bench-memory.sh starts the daemon and runs this.
 *
 * The objects, in namespace trainsched-bench-mem:
 *  - Nodes bmem-node-NNNNN (64 cpu, 512Gi, 110 pods, Ready, no kubelet; with --kwok annotated
 *    kwok.x-k8s.io/node=fake so that kwok heartbeats them);
 *  - one TrainingRuntime (torch, 1 node, a coscheduling podGroupPolicy) and TrainJobs
 *    bmem-tj-NNNNNN, suspended, so the reconciler writes each one's snapshot ConfigMap, JobSet
 *    and PodGroup and nothing runs;
 *  - Pods bmem-NNNNNNN with schedulerName trainsched-bench-unscheduled (no scheduler takes
 *    them: they stay Pending, as fast to create as a pod can be), one in eight labelled
 *    scheduling.x-k8s.io/pod-group with a TrainJob's name so the gang books track them.
 * Churn: every second, up to CHURN of the oldest pods are deleted (grace 0) and as many new
 * ones created, and one TrainJob in 20 of those seconds is replaced the same way; when the API
 * server is slower the loop simply runs behind (the achieved rates are printed).
 *
 * Run: . $TRAINSCHED_TESTBED_RUN/env; bench_memory --pid PID [--nodes N] [--pods P]
 *      [--trainjobs T] [--minutes M] [--sample S] [--churn C] [--threads W] [--kwok] [--keep]
 */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>

#include "benchutil.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/yaml.h"

#define NS "trainsched-bench-mem"
#define RUNTIME "bmem-torch"
#define MAX_SAMPLES 4096

static struct {
    long pid, nodes, pods, trainjobs, minutes, sample_s, churn, threads;
    int kwok, keep;
} cfg = {0, 5000, 50000, 1000, 10, 30, 20, 4, 0, 0};

static struct common_kube *kube;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const struct common_error *err)
{
    fprintf(stderr, "bench_memory: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

/* ---- objects ---- */

static json_t *yaml1(const char *text)
{
    struct common_yaml_docs d = {0};
    struct common_error err;
    json_t *o;
    if (common_yaml_load(text, strlen(text), "inline", NULL, &d, &err) != COMMON_OK || d.n != 1)
        die("yaml", &err);
    o = json_incref(d.docs[0]);
    common_yaml_docs_free(&d);
    return o;
}

static enum common_rc create_node(long i, struct common_error *err)
{
    char name[64];
    json_t *r = json_pack("{s:s, s:s, s:s}", "cpu", "64", "memory", "512Gi", "pods", "110");
    json_t *obj = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s, s:s}, s:{}}, s:{s:O, s:O, s:[{s:s, s:s, s:s}]}}", "apiVersion",
        "v1", "kind", "Node", "metadata", "name", "", "labels", "trainsched.io/bench", "memory",
        "type", "kwok", "annotations", "status", "capacity", r, "allocatable", r, "conditions",
        "type", "Ready", "status", "True", "reason", "KubeletReady");
    json_t *md = json_object_get(obj, "metadata");
    enum common_rc rc;

    snprintf(name, sizeof(name), "bmem-node-%05ld", i);
    json_object_set_new(md, "name", json_string(name));
    json_object_set_new(json_object_get(md, "labels"), "kubernetes.io/hostname", json_string(name));
    if (cfg.kwok)
        json_object_set_new(json_object_get(md, "annotations"), "kwok.x-k8s.io/node",
                            json_string("fake"));
    rc = common_kube_create(kube, &common_kube_nodes, NULL, obj, NULL, NULL, err);
    json_decref(r);
    json_decref(obj);
    return rc;
}

static enum common_rc create_pod(long i, struct common_error *err)
{
    char name[64], gang[64];
    json_t *p = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:b, s:i, s:[{s:s, s:s, s:{s:{s:s, s:s}}}]}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "name", "", "labels", "trainsched.io/bench",
        "memory", "spec", "schedulerName", "trainsched-bench-unscheduled",
        "automountServiceAccountToken", 0, "terminationGracePeriodSeconds", 0, "containers", "name",
        "c", "image", "registry.k8s.io/pause:3.10", "resources", "requests", "cpu", "100m",
        "memory", "128Mi");
    json_t *md = json_object_get(p, "metadata");
    enum common_rc rc;

    snprintf(name, sizeof(name), "bmem-%07ld", i);
    json_object_set_new(md, "name", json_string(name));
    if (i % 8 == 0 && cfg.trainjobs > 0) {
        snprintf(gang, sizeof(gang), "bmem-tj-%06ld", (i / 8) % cfg.trainjobs);
        json_object_set_new(json_object_get(md, "labels"), "scheduling.x-k8s.io/pod-group",
                            json_string(gang));
    }
    rc = common_kube_create(kube, &common_kube_pods, NS, p, NULL, NULL, err);
    json_decref(p);
    return rc;
}

static enum common_rc create_trainjob(long i, struct common_error *err)
{
    char buf[1024];
    json_t *o;
    enum common_rc rc;
    snprintf(buf, sizeof(buf),
             "apiVersion: trainer.kubeflow.org/v1alpha1\n"
             "kind: TrainJob\n"
             "metadata: {name: bmem-tj-%06ld, labels: {trainsched.io/bench: memory}}\n"
             "spec:\n"
             "  runtimeRef: {name: " RUNTIME ", kind: TrainingRuntime}\n"
             "  suspend: true\n"
             "  trainer:\n"
             "    numNodes: 2\n"
             "    command: [torchrun, /workspace/train.py]\n"
             "    resourcesPerNode: {requests: {cpu: '4', memory: 16Gi}}\n",
             i);
    o = yaml1(buf);
    rc = common_kube_create(kube, &common_kube_trainjobs, NS, o, NULL, NULL, err);
    json_decref(o);
    return rc;
}

static enum common_rc delete_one(const struct common_kube_resource *r, const char *name,
                                 struct common_error *err)
{
    static const char opts[] = "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                               "\"gracePeriodSeconds\":0}";
    char path[512];
    struct common_buf resp;
    long status = 0;
    enum common_rc rc;
    common_kube_path(r, NS, name, NULL, path, sizeof(path));
    common_buf_init(&resp, (size_t)1 << 24);
    rc = common_kube_request(kube, "DELETE", path, "application/json", opts, strlen(opts), NULL,
                             &resp, &status, err);
    common_buf_free(&resp);
    if (rc == COMMON_OK && status == 404)
        return COMMON_OK;
    return rc;
}

static enum common_rc delete_pod(long i, struct common_error *err)
{
    char name[64];
    snprintf(name, sizeof(name), "bmem-%07ld", i);
    return delete_one(&common_kube_pods, name, err);
}

static enum common_rc delete_trainjob(long i, struct common_error *err)
{
    char name[64];
    snprintf(name, sizeof(name), "bmem-tj-%06ld", i);
    return delete_one(&common_kube_trainjobs, name, err);
}

static void delete_collection(const struct common_kube_resource *r)
{
    static const char opts[] = "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                               "\"gracePeriodSeconds\":0}";
    char path[1024];
    struct common_buf resp;
    struct common_error err;
    long status = 0;
    common_kube_path(r, NS, NULL, NULL, path, sizeof(path));
    common_buf_init(&resp, (size_t)1 << 30);
    if (common_kube_request(kube, "DELETE", path, "application/json", opts, strlen(opts), NULL,
                            &resp, &status, &err) != COMMON_OK)
        fprintf(stderr, "bench_memory: delete %s: %s\n", r->resource, err.msg);
    common_buf_free(&resp);
}

/* ---- many requests from several threads ---- */

struct par_fn {
    enum common_rc (*one)(long i, struct common_error *err);
};

static int par_one(long i, void *ctx, struct common_error *err)
{
    const struct par_fn *f = ctx;
    return f->one(i, err);
}

struct par {
    long ok, failed;
    char first_err[COMMON_ERROR_MSG_MAX];
};

static double run_parallel(struct par *p, long from, long to,
                           enum common_rc (*one)(long, struct common_error *))
{
    struct par_fn f = {one};
    return bench_parallel(from, to, cfg.threads, par_one, &f, &p->ok, &p->failed, p->first_err,
                          sizeof(p->first_err));
}

/* ---- RSS sampling ---- */

static struct {
    double t;
    long rss_kb, pods_live, trainjobs_live;
} samples[MAX_SAMPLES];
static int n_samples, sampling;
static double churn_t0;
static long pod_lo, pod_hi, tj_lo, tj_hi; /* live pods [pod_lo, pod_hi), TrainJobs likewise */

static void take_sample(void)
{
    if (n_samples >= MAX_SAMPLES)
        return;
    samples[n_samples].t = now() - churn_t0;
    samples[n_samples].rss_kb = bench_pid_status_kb(cfg.pid, "VmRSS");
    samples[n_samples].pods_live =
        __atomic_load_n(&pod_hi, __ATOMIC_RELAXED) - __atomic_load_n(&pod_lo, __ATOMIC_RELAXED);
    samples[n_samples].trainjobs_live =
        __atomic_load_n(&tj_hi, __ATOMIC_RELAXED) - __atomic_load_n(&tj_lo, __ATOMIC_RELAXED);
    printf("  %7.0f s  RSS %8.1f MiB  (pods %ld, TrainJobs %ld)\n", samples[n_samples].t,
           (double)samples[n_samples].rss_kb / 1024, samples[n_samples].pods_live,
           samples[n_samples].trainjobs_live);
    fflush(stdout);
    n_samples++;
}

static void *sampler(void *arg)
{
    double next = now();
    (void)arg;
    while (__atomic_load_n(&sampling, __ATOMIC_ACQUIRE)) {
        if (now() >= next) {
            take_sample();
            next += (double)cfg.sample_s;
        }
        usleep(100000);
    }
    return NULL;
}

/* the sample closest to t seconds into the churn; -1 when none */
static int sample_at(double t)
{
    int best = -1;
    for (int i = 0; i < n_samples; i++)
        if (best < 0 ||
            (samples[i].t - t) * (samples[i].t - t) < (samples[best].t - t) * (samples[best].t - t))
            best = i;
    return best;
}

int main(int argc, char **argv)
{
    struct common_kubeconfig kc;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;
    struct par p;
    pthread_t th;
    double secs, end, t_setup = now();
    long churned_pods = 0, churned_tj = 0, rss0, failed = 0;
    char la[64];

    common_alloc_init();
    setvbuf(stdout, NULL, _IOLBF, 0); /* the series is read while it runs */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pid") == 0)
            cfg.pid = bench_flag_long("bench_memory", argc, argv, &i, 1, LONG_MAX);
        else if (strcmp(argv[i], "--nodes") == 0)
            cfg.nodes = bench_flag_long("bench_memory", argc, argv, &i, 0, 99999);
        else if (strcmp(argv[i], "--pods") == 0)
            cfg.pods = bench_flag_long("bench_memory", argc, argv, &i, 0, 1000000);
        else if (strcmp(argv[i], "--trainjobs") == 0)
            cfg.trainjobs = bench_flag_long("bench_memory", argc, argv, &i, 0, 100000);
        else if (strcmp(argv[i], "--minutes") == 0)
            cfg.minutes = bench_flag_long("bench_memory", argc, argv, &i, 1, 10000);
        else if (strcmp(argv[i], "--sample") == 0)
            cfg.sample_s = bench_flag_long("bench_memory", argc, argv, &i, 1, 3600);
        else if (strcmp(argv[i], "--churn") == 0)
            cfg.churn = bench_flag_long("bench_memory", argc, argv, &i, 0, 100000);
        else if (strcmp(argv[i], "--threads") == 0)
            cfg.threads = bench_flag_long("bench_memory", argc, argv, &i, 1, 64);
        else if (strcmp(argv[i], "--kwok") == 0)
            cfg.kwok = 1;
        else if (strcmp(argv[i], "--keep") == 0)
            cfg.keep = 1;
        else {
            fprintf(stderr, "usage: bench_memory --pid PID [--nodes N] [--pods P] [--trainjobs T] "
                            "[--minutes M] [--sample S] [--churn C] [--threads W] [--kwok] "
                            "[--keep]\n  needs the test bed's env (KUBECONFIG)\n");
            return 2;
        }
    }
    if (!cfg.pid || !getenv("KUBECONFIG")) {
        fprintf(stderr, "bench_memory: needs --pid (trainsched serve) and the test bed's env\n");
        return 2;
    }
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
    bench_loadavg(la, sizeof(la));
    printf("bench_memory: trainsched serve pid %ld; %ld Nodes, %ld Pods, %ld TrainJobs; %ld min of "
           "churn (%ld pods/s, RSS every %ld s); load %s\n",
           cfg.pid, cfg.nodes, cfg.pods, cfg.trainjobs, cfg.minutes, cfg.churn, cfg.sample_s, la);
    printf("RSS at the start: %.1f MiB\n", (double)bench_pid_status_kb(cfg.pid, "VmRSS") / 1024);
    fflush(stdout);

    {
        json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                               "metadata", "name", NS);
        enum common_rc rc =
            common_kube_create(kube, &common_kube_namespaces, NULL, ns, NULL, NULL, &err);
        json_decref(ns);
        if (rc && rc != COMMON_EEXISTS)
            die("create namespace", &err);
        /* torch, one node, a coscheduling gang: the reconciler writes a PodGroup per TrainJob */
        ns = yaml1("{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainingRuntime, metadata: "
                   "{name: " RUNTIME ", labels: {trainer.kubeflow.org/framework: torch}}, spec: "
                   "{mlPolicy: {numNodes: 1, torch: {}}, podGroupPolicy: {coscheduling: "
                   "{scheduleTimeoutSeconds: 120}}, template: {spec: {replicatedJobs: [{name: "
                   "node, template: {metadata: {labels: "
                   "{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}, spec: {template: "
                   "{spec: {containers: [{name: node, image: "
                   "'pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime'}]}}}}}]}}}}\n");
        rc = common_kube_create(kube, &common_kube_trainingruntimes, NS, ns, NULL, NULL, &err);
        json_decref(ns);
        if (rc && rc != COMMON_EEXISTS)
            die("create TrainingRuntime", &err);
    }
    secs = run_parallel(&p, 0, cfg.nodes, create_node);
    printf("setup: %ld Nodes in %.1f s%s%s\n", p.ok, secs, p.failed ? "; failed: " : "",
           p.failed ? p.first_err : "");
    secs = run_parallel(&p, 0, cfg.trainjobs, create_trainjob);
    printf("setup: %ld TrainJobs in %.1f s%s%s\n", p.ok, secs, p.failed ? "; failed: " : "",
           p.failed ? p.first_err : "");
    secs = run_parallel(&p, 0, cfg.pods, create_pod);
    printf("setup: %ld Pods in %.1f s (%.0f/s)%s%s\n", p.ok, secs, (double)p.ok / secs,
           p.failed ? "; failed: " : "", p.failed ? p.first_err : "");
    pod_hi = cfg.pods;
    tj_hi = cfg.trainjobs;
    sleep(10); /* let the daemon's watches catch up before the first sample */
    rss0 = bench_pid_status_kb(cfg.pid, "VmRSS");
    printf("setup done in %.0f s; RSS with the caches filled: %.1f MiB\n", now() - t_setup,
           (double)rss0 / 1024);
    printf("churn (s since its start, RSS of trainsched serve):\n");
    fflush(stdout);

    churn_t0 = now();
    end = churn_t0 + 60.0 * (double)cfg.minutes;
    sampling = 1;
    pthread_create(&th, NULL, sampler, NULL);
    for (long tick = 0; now() < end; tick++) {
        double t0 = now();
        long k = cfg.churn;
        if (k > 0 && pod_hi - pod_lo >= k) {
            run_parallel(&p, pod_lo, pod_lo + k, delete_pod);
            failed += p.failed;
            __atomic_store_n(&pod_lo, pod_lo + k, __ATOMIC_RELAXED);
            run_parallel(&p, pod_hi, pod_hi + k, create_pod);
            failed += p.failed;
            __atomic_store_n(&pod_hi, pod_hi + k, __ATOMIC_RELAXED);
            churned_pods += k;
        }
        if (tick % 20 == 0 && tj_hi > tj_lo) {
            if (delete_trainjob(tj_lo, &err) == COMMON_OK)
                __atomic_store_n(&tj_lo, tj_lo + 1, __ATOMIC_RELAXED);
            if (create_trainjob(tj_hi, &err) == COMMON_OK)
                __atomic_store_n(&tj_hi, tj_hi + 1, __ATOMIC_RELAXED);
            churned_tj++;
        }
        if (bench_pid_status_kb(cfg.pid, "VmRSS") < 0)
            die("trainsched serve exited", NULL);
        if (now() - t0 < 1.0)
            usleep((useconds_t)((1.0 - (now() - t0)) * 1e6));
    }
    take_sample();
    __atomic_store_n(&sampling, 0, __ATOMIC_RELEASE);
    pthread_join(th, NULL);

    {
        double mid_t = 30.0 * (double)cfg.minutes;
        int a = sample_at(mid_t), b = n_samples - 1;
        long peak = 0;
        for (int i = 0; i < n_samples; i++)
            if (samples[i].rss_kb > peak)
                peak = samples[i].rss_kb;
        bench_loadavg(la, sizeof(la));
        printf("\nchurn: %ld pods and %ld TrainJobs replaced in %.0f s (%.1f pods/s; %ld requests "
               "failed); load %s\n",
               churned_pods, churned_tj, now() - churn_t0,
               (double)churned_pods / (now() - churn_t0), failed, la);
        printf("RSS: caches filled %.1f MiB; peak during churn %.1f MiB; VmHWM %.1f MiB\n",
               (double)rss0 / 1024, (double)peak / 1024,
               (double)bench_pid_status_kb(cfg.pid, "VmHWM") / 1024);
        if (a >= 0 && b > a)
            printf("growth from %.0f s to %.0f s of churn: %+.1f MiB (%+.2f %%)\n", samples[a].t,
                   samples[b].t, (double)(samples[b].rss_kb - samples[a].rss_kb) / 1024,
                   100.0 * (double)(samples[b].rss_kb - samples[a].rss_kb) /
                       (double)samples[a].rss_kb);
    }
    if (!cfg.keep) {
        delete_collection(&common_kube_pods);
        delete_collection(&common_kube_trainjobs);
    }
    common_kube_client_destroy(kube);
    return 0;
}
