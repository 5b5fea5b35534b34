/*
 * bench/bench_slurm.c - the Slurm backend against submitting to slurmrestd directly.
 *
 * A real Slurm 22.05 (tests/tools/slurm/slurm-up.sh: 4 slurmd nodes of 64 CPUs each, on private
 * ports) and the test bed's API server (KUBECONFIG: source the bed's env; run as root).
 *   A "direct":     N one-node, one-CPU placeholder jobs POSTed to /job/submit one after the
 *                   other, then GET /jobs every 100 ms until all are RUNNING;
 *   B "trainsched": the reconciler (in-process, 4 workers, the Slurm backend, gang marks on)
 *                   and the extender (in-process; the bed's kube-scheduler restarted to call it,
 *                   restored at the end) with kwok nodes n1..n4 of 64 CPUs named like the
 *                   slurmd nodes, and N TrainJobs of one node and one CPU on a runtime
 *                   annotated trainsched.io/backend: slurm, until every TrainJob's pod is bound
 *                   (kube-scheduler -> extender filter on the Slurm job's node -> Binding); the
 *                   moment every TrainJob had SlurmJob=True (job RUNNING, PodGroup annotated
 *                   with its node) is printed too.
 * Prints the times, the ratio (pods bound / direct), slurmrestd requests per TrainJob (from the
 * client's trainsched_slurmrest_request_seconds histogram) and the machine's load average.
 * Usage: bench_slurm [--trainjobs N] (100).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/log.h"
#include "common/metrics.h"
#include "e2eutil.h"
#include "common/httpd.h"
#include "extender/server.h"
#include "integrations/slurm_sync.h"
#include "reconciler/reconciler.h"
#include "slurmbed.h"

#define NODES 4
#define NODE_LABEL "trainsched.io/bench-slurm"

static char url[128], jwt[4096], ns[64], sched_cfg[128];
static struct common_kube *kube;
static int sched_restarted, nodes_made;

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

/* the kwok nodes n1..n4 (the slurmd names), 64 CPUs each, labelled NODE_LABEL */
static int make_nodes(void)
{
    for (int i = 1; i <= NODES; i++) {
        struct common_error err;
        char name[16];
        json_t *n;
        enum common_rc rc;

        snprintf(name, sizeof(name), "n%d", i);
        n = json_pack("{s:s,s:s,s:{s:s,s:{s:s},s:{s:s}},s:{s:{s:s,s:s,s:s},s:{s:s,s:s,s:s}}}",
                      "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
                      NODE_LABEL, "1", "annotations", "kwok.x-k8s.io/node", "fake", "status",
                      "allocatable", "cpu", "64", "memory", "256Gi", "pods", "110", "capacity",
                      "cpu", "64", "memory", "256Gi", "pods", "110");
        rc = common_kube_create(kube, &common_kube_nodes, NULL, n, NULL, NULL, &err);
        json_decref(n);
        if (rc != COMMON_OK && rc != COMMON_EEXISTS) {
            fprintf(stderr, "bench_slurm: node %s: %s\n", name, err.msg);
            return -1;
        }
        nodes_made = 1;
    }
    return 0;
}

/* what main set up in the bed: kube-scheduler's config restored, the nodes deleted */
static void bed_restore(void)
{
    struct common_error err;
    if (sched_restarted && e2e_sched_ctl("restore") != 0)
        fprintf(stderr, "bench_slurm: could not restore the bed's kube-scheduler config\n");
    sched_restarted = 0;
    for (int i = 1; nodes_made && i <= NODES; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        common_kube_delete(kube, &common_kube_nodes, NULL, name, NULL, NULL, NULL, &err);
    }
    nodes_made = 0;
    if (sched_cfg[0])
        unlink(sched_cfg);
}

static void die(const char *what, const struct common_error *e)
{
    fprintf(stderr, "bench_slurm: %s: %s\n", what, e ? e->msg : "");
    bed_restore();
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

/* the extender with o, served on plain HTTP at 127.0.0.1:port (4 threads) */
static void start_extender(const struct extender_server_opts *o, int port,
                           struct extender_server **xs, struct common_httpd **xh)
{
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct common_error err = {0};
    char addr[64];

    *xs = extender_server_create(o, &err);
    if (!*xs)
        die("extender", &err);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ho.address = addr;
    ho.threads = 4;
    ho.drain_ms = 2000;
    *xh = common_httpd_create(&ho, &err);
    if (!*xh || extender_server_install(*xs, *xh, &err) != COMMON_OK ||
        extender_server_start(*xs, &err) != COMMON_OK)
        die("extender", &err);
    if (!extender_server_wait_ready(*xs, 60000))
        die("extender caches not synced in 60 s", NULL);
    if (common_httpd_start(*xh, &err) != COMMON_OK)
        die("extender port", &err);
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
    struct common_error err = {0};
    struct slurmrest_opts ro = {0};
    struct slurmrest *rest;
    struct common_metrics *m;
    struct slurm_sync_opts so = {0};
    struct slurm_sync *sync_;
    struct rc_opts o = {0};
    struct rc_reconciler *rec;
    struct extender_server_opts xo = {0};
    struct common_metrics *xm;
    struct extender_server *xs = NULL;
    struct common_httpd *xh = NULL;
    double t0, t_direct, t_ts = 0, t_bound = 0;
    static char seen[251]; /* TrainJob tj-<k> had SlurmJob=True */
    double requests = 0;
    int total = 0, polls = 0, port;
    char load_before[64], load_after[64], args[200];
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
    /* the extender in-process, the bed's kube-scheduler calling it, kwok nodes named like Slurm's
     */
    port = e2e_free_port_or_exit();
    snprintf(sched_cfg, sizeof(sched_cfg), "/tmp/bench-slurm-%d-scheduler.yaml", (int)getpid());
    {
        FILE *f = fopen(sched_cfg, "w");
        if (!f)
            die("scheduler config", NULL);
        e2e_sched_config(f, port, 30);
        fclose(f);
    }
    if (make_nodes() != 0)
        die("nodes", NULL);
    snprintf(args, sizeof(args), "restart %s", sched_cfg);
    if (e2e_sched_ctl(args) != 0)
        die("kube-scheduler restart with the extender", NULL);
    sched_restarted = 1;
    xm = common_metrics_create();
    xo.kube = kube;
    xo.metrics = xm;
    xo.bind_http_timeout_ms = 30000;
    xo.default_schedule_timeout_s = 60;
    xo.backoff_initial_ms = 1000;
    xo.backoff_max_ms = 2000;
    start_extender(&xo, port, &xs, &xh);

    m = common_metrics_create();
    so.rest = ro;
    so.rest.metrics = m;
    sync_ = slurm_sync_create(&so, &err);
    if (!sync_)
        die("slurm_sync", &err);
    o.kube = kube;
    o.namespace = ns;
    o.workers = 4;
    o.gang_marks = 1; /* kube-scheduler calls the extender */
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
            "\"trainer\"}},\"spec\":{\"template\":{\"spec\":{\"nodeSelector\":{\"" NODE_LABEL
            "\":\"1\"},\"tolerations\":[{\"key\":\"kwok.x-k8s.io/node\",\"operator\":"
            "\"Exists\",\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"node\","
            "\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}]}}}}",
            ns);
        if (common_kube_create(kube, &common_kube_trainingruntimes, ns, rt, NULL, NULL, &err))
            die("runtime", &err);
        json_decref(rt);
    }
    bench_loadavg(load_before, sizeof(load_before));
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
        int ok = 0, bound = 0;
        if (!t_ts) {
            /* once True counts: a TrainJob whose pod ran to completion has its job cancelled */
            if (common_kube_list(kube, &common_kube_trainjobs, ns, NULL, &items, NULL, &err))
                die("list", &err);
            json_array_foreach(items, i, it)
            {
                const char *nm =
                    json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
                long k = nm && strncmp(nm, "tj-", 3) == 0 ? strtol(nm + 3, NULL, 10) : -1;
                if (k >= 0 && k < n && slurm_job_true(it))
                    seen[k] = 1;
            }
            json_decref(items);
            for (long k = 0; k < n; k++)
                ok += seen[k];
            if (ok >= n)
                t_ts = now_s() - t0;
        }
        items = NULL;
        if (common_kube_list(kube, &common_kube_pods, ns, NULL, &items, NULL, &err))
            die("list pods", &err);
        json_array_foreach(items, i, it)
        {
            const char *node =
                json_string_value(json_object_get(json_object_get(it, "spec"), "nodeName"));
            bound += node && *node;
        }
        json_decref(items);
        if (bound >= n) {
            t_bound = now_s() - t0;
            if (!t_ts)
                t_ts = t_bound; /* bound needs the job RUNNING: SlurmJob=True came first */
            break;
        }
        if (now_s() - t0 > 900)
            die("pods not all bound in 900 s", NULL);
        nap_ms(100);
    }
    bench_loadavg(load_after, sizeof(load_after));
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
    printf("  trainsched: %ld TrainJobs to SlurmJob=True %.2f s, to pods bound %.2f s\n", n, t_ts,
           t_bound);
    printf("  ratio trainsched (pods bound) / direct: %.2f (SlurmJob=True / direct: %.2f)\n",
           t_bound / t_direct, t_ts / t_direct);
    printf("  slurmrestd requests per TrainJob: %.2f (submit, lookups, discovery)\n",
           requests / (double)n);
    printf("  load average before / after the trainsched part: %s / %s\n", load_before, load_after);
    printf("  reproduce: . $TRAINSCHED_TESTBED_RUN/env; ./build-rel/bench/bench_slurm "
           "--trainjobs %ld\n",
           n);

    rc_destroy(rec);
    extender_server_stop(xs);
    common_httpd_destroy(xh);
    extender_server_destroy(xs);
    common_metrics_destroy(xm);
    slurm_sync_destroy(sync_);
    common_metrics_destroy(m);
    cancel_all(rest);
    slurmrest_destroy(rest);
    common_kube_delete(kube, &common_kube_namespaces, NULL, ns, NULL, NULL, NULL, &err);
    bed_restore();
    common_kube_client_destroy(kube);
    slurm_down();
    return 0;
}
