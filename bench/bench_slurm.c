/*
 * bench/bench_slurm.c - the Slurm backend against submitting to slurmrestd directly.
 *
 * A real Slurm 22.05 (tests/tools/slurm/slurm-up.sh: 4 slurmd nodes of 64 CPUs each, on private
 * ports) and the test bed's API server (KUBECONFIG: source the bed's env; run as root).
 *   A "direct":     N one-node, one-CPU placeholder jobs POSTed to /job/submit one after the
 *                   other, then GET /jobs every 100 ms until all are RUNNING;
 *   B "trainsched": the reconciler (in-process, 4 workers, the Slurm backend) and N TrainJobs of
 *                   one node and one CPU on a runtime annotated trainsched.io/backend: slurm,
 *                   until every TrainJob has SlurmJob=True (its Slurm job RUNNING, the PodGroup
 *                   annotated with its node: from then on the extender binds the pod there).
 * Prints both times, their ratio, and slurmrestd requests per TrainJob (from the client's
 * trainsched_slurmrest_request_seconds histogram). Usage: bench_slurm [--trainjobs N] (100).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/log.h"
#include "common/metrics.h"
#include "integrations/slurm_sync.h"
#include "reconciler/reconciler.h"
#include "slurmbed.h"

static char url[128], jwt[4096], ns[64];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static struct slurmbed bed;

static int slurm_up(void)
{
    if (slurmbed_up(&bed, "ts-bench-slurm", 25000 + (int)(getpid() % 300) * 10, 4, 64) != 0)
        return -1;
    snprintf(url, sizeof(url), "%s", bed.url);
    snprintf(jwt, sizeof(jwt), "%s", bed.jwt);
    return 0;
}

static void slurm_down(void)
{
    slurmbed_down(&bed);
}

static void die(const char *what, const struct common_error *e)
{
    fprintf(stderr, "bench_slurm: %s: %s\n", what, e ? e->msg : "");
    slurm_down();
    exit(1);
}

/* jobs of /jobs in state RUNNING whose name starts with prefix */
static int running(struct slurmrest *s, const char *prefix, int *total)
{
    struct common_error err = {0};
    json_t *answer = NULL, *j;
    size_t i;
    int n = 0;

    if (slurmrest_call(s, "GET", "/jobs", NULL, &answer, &err) != COMMON_OK)
        die("GET /jobs", &err);
    *total = 0;
    json_array_foreach(json_object_get(answer, "jobs"), i, j)
    {
        const char *name = json_string_value(json_object_get(j, "name"));
        const char *st = json_string_value(json_object_get(j, "job_state"));
        if (!name || strncmp(name, prefix, strlen(prefix)) != 0)
            continue;
        (*total)++;
        if (st && strcmp(st, "RUNNING") == 0)
            n++;
    }
    json_decref(answer);
    return n;
}

static void cancel_all(struct slurmrest *s)
{
    struct common_error err = {0};
    json_t *answer = NULL, *j;
    size_t i;

    if (slurmrest_call(s, "GET", "/jobs", NULL, &answer, &err) != COMMON_OK)
        return;
    json_array_foreach(json_object_get(answer, "jobs"), i, j)
    {
        const char *st = json_string_value(json_object_get(j, "job_state"));
        if (st && (strcmp(st, "RUNNING") == 0 || strcmp(st, "PENDING") == 0))
            (void)slurmrest_cancel(s, json_integer_value(json_object_get(j, "job_id")), &err);
    }
    json_decref(answer);
}

static int slurm_job_true(const json_t *tj)
{
    const json_t *c;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(tj, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (t && st && strcmp(t, SLURM_CONDITION) == 0 && strcmp(st, "True") == 0)
            return 1;
    }
    return 0;
}

static json_t *yaml_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *yaml_json(const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    json_error_t je;
    json_t *v;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    v = json_loads(buf, 0, &je);
    if (!v) {
        fprintf(stderr, "bench_slurm: bad JSON: %s\n", je.text);
        exit(1);
    }
    return v;
}

int main(int argc, char **argv)
{
    long n = 100;
    struct common_kubeconfig kc;
    struct common_kube_opts ko = common_kube_opts_default();
    struct common_kube *kube;
    struct common_error err = {0};
    struct slurmrest_opts ro = {0};
    struct slurmrest *rest;
    struct common_metrics *m;
    struct slurm_sync_opts so = {0};
    struct slurm_sync *sync_;
    struct rc_opts o = {0};
    struct rc_reconciler *rec;
    double t0, t_direct, t_ts;
    double requests = 0;
    int total = 0, polls = 0;
    static const char *const verbs[] = {"submit", "job", "jobs", "cancel", "openapi", "other"};

    signal(SIGPIPE, SIG_IGN);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trainjobs") == 0 && i + 1 < argc)
            n = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_slurm [--trainjobs N]\n  needs KUBECONFIG (source the "
                            "test bed's env) and root (Slurm is started)\n");
            return 2;
        }
    }
    if (n < 1 || n > 250 || !getenv("KUBECONFIG")) {
        fprintf(stderr, "bench_slurm: KUBECONFIG must be set; 1 <= N <= 250\n");
        return 2;
    }
    common_log_set_level(getenv("BENCH_LOG") ? COMMON_LOG_INFO : COMMON_LOG_WARN);
    memset(&kc, 0, sizeof(kc));
    if (common_kubeconfig_load(getenv("KUBECONFIG"), NULL, &kc, &err) != COMMON_OK)
        die("kubeconfig", &err);
    ko.qps = 500;
    ko.burst = 1000;
    kube = common_kube_client_create(&kc, &ko, &err);
    common_kubeconfig_free(&kc);
    if (!kube)
        die("client", &err);
    if (slurm_up() != 0)
        die("slurm-up.sh", NULL);
    ro.url = url;
    ro.user = "root";
    ro.token = jwt;
    rest = slurmrest_create(&ro, &err);
    if (!rest)
        die("slurmrest", &err);

    /* A: direct submissions */
    t0 = now_s();
    for (long i = 0; i < n; i++) {
        json_t *body = yaml_json(
            "{\"script\":\"#!/bin/sh\\nexec sleep infinity\\n\",\"job\":{\"name\":\"direct-%ld\","
            "\"nodes\":1,\"tasks\":1,\"tasks_per_node\":1,\"cpus_per_task\":1,"
            "\"environment\":{\"PATH\":\"/bin\"},\"current_working_directory\":\"/tmp\","
            "\"standard_output\":\"/dev/null\"}}",
            i);
        int64_t id;
        if (slurmrest_submit(rest, body, &id, &err) != COMMON_OK)
            die("submit", &err);
        json_decref(body);
    }
    while (running(rest, "direct-", &total) < n) {
        if (now_s() - t0 > 300)
            die("direct jobs not all RUNNING in 300 s", NULL);
        polls++;
        nap_ms(100);
    }
    t_direct = now_s() - t0;
    cancel_all(rest);
    while (running(rest, "direct-", &total) > 0)
        nap_ms(200);

    /* B: through trainsched */
    snprintf(ns, sizeof(ns), "bench-slurm-%d", (int)getpid());
    {
        json_t *nso = yaml_json("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{"
                                "\"name\":\"%s\"}}",
                                ns);
        if (common_kube_create(kube, &common_kube_namespaces, NULL, nso, NULL, NULL, &err))
            die("namespace", &err);
        json_decref(nso);
    }
    m = common_metrics_create();
    so.rest = ro;
    so.rest.metrics = m;
    sync_ = slurm_sync_create(&so, &err);
    if (!sync_)
        die("slurm_sync", &err);
    o.kube = kube;
    o.namespace = ns;
    o.workers = 4;
    o.slurm = sync_;
    rec = rc_create(&o, &err);
    if (!rec || rc_start(rec, &err) != COMMON_OK)
        die("reconciler", &err);
    {
        json_t *rt = yaml_json(
            "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainingRuntime\","
            "\"metadata\":{\"name\":\"rt\",\"namespace\":\"%s\",\"annotations\":{"
            "\"trainsched.io/backend\":\"slurm\"}},\"spec\":{\"mlPolicy\":{\"numNodes\":1},"
            "\"template\":{\"spec\":{\"replicatedJobs\":[{\"name\":\"node\",\"template\":{"
            "\"metadata\":{\"labels\":{\"trainer.kubeflow.org/trainjob-ancestor-step\":"
            "\"trainer\"}},\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"node\","
            "\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}]}}}}",
            ns);
        if (common_kube_create(kube, &common_kube_trainingruntimes, ns, rt, NULL, NULL, &err))
            die("runtime", &err);
        json_decref(rt);
    }
    t0 = now_s();
    for (long i = 0; i < n; i++) {
        json_t *tj = yaml_json("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":"
                               "\"TrainJob\",\"metadata\":{\"name\":\"tj-%ld\",\"namespace\":"
                               "\"%s\"},\"spec\":{\"runtimeRef\":{\"name\":\"rt\",\"kind\":"
                               "\"TrainingRuntime\"}}}",
                               i, ns);
        if (common_kube_create(kube, &common_kube_trainjobs, ns, tj, NULL, NULL, &err))
            die("trainjob", &err);
        json_decref(tj);
    }
    for (;;) {
        json_t *items = NULL, *it;
        size_t i;
        int ok = 0;
        if (common_kube_list(kube, &common_kube_trainjobs, ns, NULL, &items, NULL, &err))
            die("list", &err);
        json_array_foreach(items, i, it) ok += slurm_job_true(it);
        json_decref(items);
        if (ok >= n)
            break;
        if (now_s() - t0 > 600)
            die("TrainJobs not all SlurmJob=True in 600 s", NULL);
        nap_ms(100);
    }
    t_ts = now_s() - t0;
    for (size_t v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++) {
        double c = common_metric_value(
            common_metrics_histogram(
                m, "trainsched_slurmrest_request_seconds", NULL,
                (const char *const[]){"verb", NULL},
                (const double[]){0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}, 11),
            (const char *const[]){verbs[v], NULL});
        if (c == c) /* not NaN */
            requests += c;
    }
    printf("bench_slurm: %ld TrainJobs, Slurm 22.05 (4 nodes x 64 CPUs), reconciler 4 workers\n",
           n);
    printf("  direct: %ld submissions to RUNNING   %.2f s (%d polls of GET /jobs)\n", n, t_direct,
           polls);
    printf("  trainsched: %ld TrainJobs to SlurmJob=True %.2f s\n", n, t_ts);
    printf("  ratio trainsched / direct: %.2f\n", t_ts / t_direct);
    printf("  slurmrestd requests per TrainJob: %.2f (submit, lookups, discovery)\n",
           requests / (double)n);
    printf("  reproduce: . $TRAINSCHED_TESTBED_RUN/env; ./build-rel/bench/bench_slurm "
           "--trainjobs %ld\n",
           n);

    rc_destroy(rec);
    slurm_sync_destroy(sync_);
    common_metrics_destroy(m);
    cancel_all(rest);
    slurmrest_destroy(rest);
    common_kube_delete(kube, &common_kube_namespaces, NULL, ns, NULL, NULL, NULL, &err);
    common_kube_client_destroy(kube);
    slurm_down();
    return 0;
}
