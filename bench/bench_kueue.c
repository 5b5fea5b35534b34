/*
 * bench/bench_kueue.c - Kueue admission of N small TrainJobs (through trainsched's reconciler)
 * against N plain JobSets, side by side in one run, on the test bed started with
 * TESTBED_KUEUE=1 (Kueue's real controller manager; best without TESTBED_JOBSET and kwok, so
 * nothing acts on the admitted JobSets).
 *
 * Setup (not timed): two fresh namespaces, a ResourceFlavor, a ClusterQueue whose quota holds
 * every job at once (so admission is never waiting for quota, only for Kueue's own work) and a
 * LocalQueue in each namespace; a TrainingRuntime (1 node, cpu 100m, memory 64Mi) and
 * trainsched's reconciler (in this process, W workers) watching the TrainJob namespace.
 *
 * Phase "jobsets": N JobSets labelled kueue.x-k8s.io/queue-name (one replicated job, one pod of
 * cpu 100m) are created from W threads. Kueue's webhook suspends each, Kueue makes a Workload,
 * admits it and unsuspends the JobSet. Timed from the first create until every JobSet of the
 * namespace has spec.suspend false (listed every 250 ms). For TrainJobs the moment every
 * TrainJob was unsuspended by Kueue is printed too: what trainsched adds after Kueue is the
 * difference.
 * Phase "trainjobs": N TrainJobs labelled the same way are created from W threads. Kueue
 * suspends each (and adds its runtimePatches entry), trainsched makes the runtime snapshot and
 * a suspended JobSet, Kueue makes the Workload from the TrainJob (rendering Trainer's JobSet),
 * admits it, writes its runtimePatches entry and unsuspends the TrainJob, and trainsched applies
 * the JobSet unsuspended. Timed the same way, on the JobSets trainsched wrote.
 * Per job the benchmark stamps when its create returned and when its polls (every 250 ms) first
 * saw Kueue's Workload, the Workload Admitted, the owner (TrainJob or JobSet) unsuspended and
 * the JobSet unsuspended; printed per phase and stage: when the last job got there and the
 * median per-job time from the stage before, which shows where the time goes.
 * The order of the phases alternates between rounds. Printed per phase: wall time, CPU seconds
 * of kueue-controller, kube-apiserver and etcd (from /proc, pids from $TESTBED_RUN/pids/) and of
 * this process (trainsched's reconciler); then the ratio trainjobs/jobsets.
 *
 * Run: . $TRAINSCHED_TESTBED_RUN/env; build/bench/bench_kueue [--jobs N] [--workers W]
 *      [--rounds R]   (defaults 1000, 8, 1)
 */
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/log.h"
#include "reconciler/reconciler.h"

#define KQ "kueue.x-k8s.io"
static const struct common_kube_resource rflavors = {KQ, "v1beta2", "resourceflavors", 0},
                                         cqueues = {KQ, "v1beta2", "clusterqueues", 0},
                                         lqueues = {KQ, "v1beta2", "localqueues", 1},
                                         workloads = {KQ, "v1beta2", "workloads", 1};

static struct common_kube *kube;
static long njobs = 1000, nworkers = 8;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const struct common_error *err)
{
    fprintf(stderr, "bench_kueue: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

static json_t *yaml_obj(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *yaml_obj(const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    json_t *o;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    o = json_loads(buf, 0, NULL);
    if (!o) {
        fprintf(stderr, "bench_kueue: bad object %s\n", buf);
        exit(1);
    }
    return o;
}

static void create(const struct common_kube_resource *r, const char *ns, json_t *obj)
{
    struct common_error err;
    struct common_kube_write_opts wo = {.strict = 1};
    if (common_kube_create(kube, r, ns, obj, &wo, NULL, &err) != COMMON_OK)
        die(r->resource, &err);
    json_decref(obj);
}

struct phase {
    const char *ns, *kind; /* "jobsets" or "trainjobs" */
    atomic_long next;
    double t0;
};

/* Per job (index = the number in its name), seconds after the phase started when the benchmark
 * first saw each stage: created (the create call returned), Workload made by Kueue, Workload
 * Admitted, owner (TrainJob or JobSet) unsuspended by Kueue, JobSet unsuspended. 0: not yet. */
enum { ST_CREATED, ST_WORKLOAD, ST_ADMITTED, ST_OWNER, ST_JOBSET, NSTAGES };
static const char *const stage_names[NSTAGES] = {"created", "Workload created", "Workload Admitted",
                                                 "owner unsuspended", "JobSet unsuspended"};
static double (*stage_t)[NSTAGES];

static void *creator(void *arg)
{
    struct phase *p = arg;
    long i;
    while ((i = atomic_fetch_add(&p->next, 1)) < njobs) {
        char name[64];
        json_t *o;
        snprintf(name, sizeof(name), "j%05ld", i);
        if (strcmp(p->kind, "jobsets") == 0)
            o = yaml_obj(
                "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
                "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"" KQ
                "/queue-name\":\"lq\"}},\"spec\":{\"replicatedJobs\":[{\"name\":\"node\","
                "\"replicas\":1,\"template\":{\"spec\":{\"parallelism\":1,\"completions\":1,"
                "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":"
                "\"node\",\"image\":\"busybox:1.36\",\"resources\":{\"requests\":{\"cpu\":"
                "\"100m\",\"memory\":\"64Mi\"}}}]}}}}}]}}",
                name, p->ns);
        else
            o = yaml_obj("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
                         "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"" KQ
                         "/queue-name\":\"lq\"}},\"spec\":{\"runtimeRef\":{\"name\":\"small\","
                         "\"kind\":\"TrainingRuntime\"}}}",
                         name, p->ns);
        create(strcmp(p->kind, "jobsets") == 0 ? &common_kube_jobsets : &common_kube_trainjobs,
               p->ns, o);
        stage_t[i][ST_CREATED] = now_s() - p->t0;
    }
    return NULL;
}

/* the job index of name "j%05ld", -1 for anything else */
static long job_index(const char *name)
{
    char *end;
    long i;
    if (!name || name[0] != 'j')
        return -1;
    i = strtol(name + 1, &end, 10);
    return *end == '\0' && i >= 0 && i < njobs ? i : -1;
}

/* objects of resource r in ns with spec.suspend false (or unset); stage st of their jobs is
 * stamped with t when first seen */
static long admitted(const struct common_kube_resource *r, const char *ns, int st, double t)
{
    json_t *items = NULL, *it;
    struct common_error err;
    size_t i;
    long n = 0;
    if (common_kube_list(kube, r, ns, NULL, &items, NULL, &err) != COMMON_OK)
        die(r->resource, &err);
    json_array_foreach(items, i, it)
    {
        const json_t *s = json_object_get(json_object_get(it, "spec"), "suspend");
        long j =
            job_index(json_string_value(json_object_get(json_object_get(it, "metadata"), "name")));
        if (json_is_false(s) || !s) {
            n++;
            if (j >= 0 && !stage_t[j][st])
                stage_t[j][st] = t;
        }
    }
    json_decref(items);
    return n;
}

/* Kueue's Workloads in ns: stamp Workload created and Admitted (condition Admitted True) on
 * the job that owns each */
static void workloads_seen(const char *ns, double t)
{
    json_t *items = NULL, *it, *c;
    struct common_error err;
    size_t i, k;
    if (common_kube_list(kube, &workloads, ns, NULL, &items, NULL, &err) != COMMON_OK)
        die("workloads", &err);
    json_array_foreach(items, i, it)
    {
        const json_t *owner =
            json_array_get(json_object_get(json_object_get(it, "metadata"), "ownerReferences"), 0);
        long j = job_index(json_string_value(json_object_get(owner, "name")));
        if (j < 0)
            continue;
        if (!stage_t[j][ST_WORKLOAD])
            stage_t[j][ST_WORKLOAD] = t;
        json_array_foreach(json_object_get(json_object_get(it, "status"), "conditions"), k, c)
        {
            const char *type = json_string_value(json_object_get(c, "type"));
            const char *status = json_string_value(json_object_get(c, "status"));
            if (type && status && strcmp(type, "Admitted") == 0 && strcmp(status, "True") == 0 &&
                !stage_t[j][ST_ADMITTED])
                stage_t[j][ST_ADMITTED] = t;
        }
    }
    json_decref(items);
}

/* per stage: when the last job reached it, and the median per-job time from the stage before */
static void print_stages(const char *kind)
{
    double *d = malloc((size_t)njobs * sizeof(*d));
    if (!d)
        die("stages", NULL);
    for (int st = 0; st < NSTAGES; st++) {
        double last = 0;
        long n = 0;
        for (long j = 0; j < njobs; j++) {
            double a = st ? stage_t[j][st - 1] : 0, b = stage_t[j][st];
            if (b > last)
                last = b;
            if (b)
                d[n++] = b - a;
        }
        printf("  %-9s %-20s all %ld by %7.2f s; median per job %6.2f s after %s\n", kind,
               stage_names[st], n, last, n ? bench_median(d, n) : 0.0,
               st ? stage_names[st - 1] : "the phase start");
    }
    free(d);
}

static const char *const procs[] = {"kueue-controller", "kube-apiserver", "etcd"};
#define NPROCS 3

/* *t_owner: for trainjobs, when every TrainJob was unsuspended by Kueue (before trainsched
 * unsuspended their JobSets); for jobsets the same as the result */
static double run_phase(const char *ns, const char *kind, double cpu[NPROCS + 1], double *t_owner)
{
    struct phase p = {.ns = ns, .kind = kind};
    pthread_t th[64];
    double t0, before[NPROCS + 1], t;
    long n = 0, last = -1;
    int tj = strcmp(kind, "trainjobs") == 0;

    for (int k = 0; k < NPROCS; k++)
        before[k] = bench_proc_cpu(bench_bed_pid(procs[k]));
    before[NPROCS] = bench_process_cpu();
    atomic_init(&p.next, 0);
    memset(stage_t, 0, (size_t)njobs * sizeof(*stage_t));
    t0 = now_s();
    p.t0 = t0;
    for (long w = 0; w < nworkers; w++)
        pthread_create(&th[w], NULL, creator, &p);
    for (long w = 0; w < nworkers; w++)
        pthread_join(th[w], NULL);
    *t_owner = 0;
    for (;;) {
        t = now_s() - t0;
        workloads_seen(ns, t);
        n = admitted(&common_kube_jobsets, ns, ST_JOBSET, t);
        /* the owners' list, in both phases (the same polling cost) */
        if (admitted(tj ? &common_kube_trainjobs : &common_kube_jobsets, ns, ST_OWNER, t) >=
                njobs &&
            !*t_owner)
            *t_owner = t;
        if (n >= njobs)
            break;
        if (n != last) {
            fprintf(stderr, "  %s: %ld/%ld admitted after %.1f s\n", kind, n, njobs, t);
            last = n;
        }
        if (t > 1800) {
            fprintf(stderr, "bench_kueue: %s: only %ld of %ld admitted after 30 min\n", kind, n,
                    njobs);
            exit(1);
        }
        usleep(250000);
    }
    for (int k = 0; k < NPROCS; k++)
        cpu[k] = bench_proc_cpu(bench_bed_pid(procs[k])) - before[k];
    cpu[NPROCS] = bench_process_cpu() - before[NPROCS];
    print_stages(kind);
    return t;
}

static void drop(const struct common_kube_resource *r, const char *ns, const char *name)
{
    struct common_error err;
    common_kube_delete(kube, r, ns, name, NULL, NULL, "Background", &err);
}

int main(int argc, char **argv)
{
    struct common_kubeconfig kc;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;
    long rounds = 1;
    unsigned tag = (unsigned)getpid() % 100000;
    double ratios[16];
    char load0[64];

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--jobs") == 0)
            njobs = bench_flag_long("bench_kueue", argc, argv, &i, 1, 20000);
        else if (strcmp(argv[i], "--workers") == 0)
            nworkers = bench_flag_long("bench_kueue", argc, argv, &i, 1, 64);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = bench_flag_long("bench_kueue", argc, argv, &i, 1, 16);
        else {
            fprintf(stderr, "usage: bench_kueue [--jobs N] [--workers W] [--rounds R]\n");
            return 2;
        }
    }
    if (!getenv("TESTBED_KUEUE_RUNNING") || strcmp(getenv("TESTBED_KUEUE_RUNNING"), "1") != 0) {
        fprintf(stderr, "bench_kueue: the bed runs no Kueue (up.sh with TESTBED_KUEUE=1)\n");
        return 1;
    }
    common_log_set_level(COMMON_LOG_WARN);
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
    stage_t = calloc((size_t)njobs, sizeof(*stage_t));
    if (!stage_t)
        die("stages", NULL);
    bench_loadavg(load0, sizeof(load0));
    printf("bench_kueue: %ld jobs per phase, %ld creating threads, %ld round(s), %ld cores, "
           "load average %s\n",
           njobs, nworkers, rounds, sysconf(_SC_NPROCESSORS_ONLN), load0);

    for (long r = 0; r < rounds; r++) {
        char nsj[64], nst[64], cq[64], load[64];
        const char *order[2];
        double t[2], town[2], cpu[2][NPROCS + 1];
        struct rc_reconciler *rec;
        struct rc_opts ro = {0};
        int tj_first = (int)(r % 2);

        snprintf(nsj, sizeof(nsj), "kqb-%u-%ld-jobsets", tag, r);
        snprintf(nst, sizeof(nst), "kqb-%u-%ld-trainjobs", tag, r);
        snprintf(cq, sizeof(cq), "kqb-%u-%ld", tag, r);
        create(&common_kube_namespaces, NULL,
               yaml_obj("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":"
                        "\"%s\"}}",
                        nsj));
        create(&common_kube_namespaces, NULL,
               yaml_obj("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":"
                        "\"%s\"}}",
                        nst));
        create(&rflavors, NULL,
               yaml_obj("{\"apiVersion\":\"" KQ "/v1beta2\",\"kind\":\"ResourceFlavor\","
                        "\"metadata\":{\"name\":\"%s\"}}",
                        cq));
        create(&cqueues, NULL,
               yaml_obj("{\"apiVersion\":\"" KQ "/v1beta2\",\"kind\":\"ClusterQueue\","
                        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaceSelector\":{"
                        "\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\","
                        "\"operator\":\"In\",\"values\":[\"%s\",\"%s\"]}]},\"resourceGroups\":[{"
                        "\"coveredResources\":[\"cpu\",\"memory\"],\"flavors\":[{\"name\":\"%s\","
                        "\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":\"100000\"},{\"name\":"
                        "\"memory\",\"nominalQuota\":\"100000Gi\"}]}]}]}}",
                        cq, nsj, nst, cq));
        for (int k = 0; k < 2; k++)
            create(&lqueues, k ? nst : nsj,
                   yaml_obj("{\"apiVersion\":\"" KQ "/v1beta2\",\"kind\":\"LocalQueue\","
                            "\"metadata\":{\"name\":\"lq\",\"namespace\":\"%s\"},\"spec\":{"
                            "\"clusterQueue\":\"%s\"}}",
                            k ? nst : nsj, cq));
        create(&common_kube_trainingruntimes, nst,
               yaml_obj("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":"
                        "\"TrainingRuntime\",\"metadata\":{\"name\":\"small\",\"namespace\":"
                        "\"%s\"},\"spec\":{\"mlPolicy\":{\"numNodes\":1},\"template\":{\"spec\":{"
                        "\"replicatedJobs\":[{\"name\":\"node\",\"template\":{\"metadata\":{"
                        "\"labels\":{\"trainer.kubeflow.org/trainjob-ancestor-step\":"
                        "\"trainer\"}},\"spec\":{\"template\":{\"spec\":{\"containers\":[{"
                        "\"name\":\"node\",\"image\":\"busybox:1.36\",\"resources\":{"
                        "\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}]}}}}}]}}}}",
                        nst));
        ro.kube = kube;
        ro.namespace = nst;
        ro.workers = (int)nworkers;
        rec = rc_create(&ro, &err);
        if (!rec || rc_start(rec, &err) != COMMON_OK)
            die("reconciler", &err);
        sleep(3); /* Kueue sees the queues; the reconciler's informers sync */

        order[0] = tj_first ? "trainjobs" : "jobsets";
        order[1] = tj_first ? "jobsets" : "trainjobs";
        for (int k = 0; k < 2; k++) {
            int is_tj = strcmp(order[k], "trainjobs") == 0;
            t[is_tj] = run_phase(is_tj ? nst : nsj, order[k], cpu[is_tj], &town[is_tj]);
        }
        bench_loadavg(load, sizeof(load));
        for (int k = 0; k < 2; k++)
            printf("round %ld %-9s %5ld admitted in %7.2f s (%6.2f ms each); CPU s: "
                   "kueue-controller %.1f, kube-apiserver %.1f, etcd %.1f, this process "
                   "(trainsched reconciler) %.1f\n",
                   r + 1, k ? "trainjobs" : "jobsets", njobs, t[k], 1000 * t[k] / (double)njobs,
                   cpu[k][0], cpu[k][1], cpu[k][2], cpu[k][3]);
        printf("round %ld trainjobs: every TrainJob unsuspended by Kueue after %.2f s, every "
               "JobSet unsuspended by trainsched after %.2f s\n",
               r + 1, town[1], t[1]);
        ratios[r] = t[1] / t[0];
        printf("round %ld ratio trainjobs/jobsets %.2f (order: %s first; load average %s)\n", r + 1,
               ratios[r], order[0], load);
        fflush(stdout);
        rc_destroy(rec);
        drop(&common_kube_namespaces, NULL, nsj);
        drop(&common_kube_namespaces, NULL, nst);
        sleep(2);
        drop(&cqueues, NULL, cq);
        drop(&rflavors, NULL, cq);
    }
    if (rounds > 1)
        printf("median ratio trainjobs/jobsets over %ld rounds: %.2f\n", rounds,
               bench_median(ratios, rounds));
    printf("command: . $TRAINSCHED_TESTBED_RUN/env; bench/bench_kueue --jobs %ld --workers %ld "
           "--rounds %ld\n",
           njobs, nworkers, rounds);
    common_kube_client_destroy(kube);
    free(stage_t);
    return 0;
}
