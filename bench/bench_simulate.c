/*
 * bench/bench_simulate.c - `trainsched simulate` at scale, and its placement quality against a
 * first-fit baseline on the same trace, in one program.
 *
 * The trace is generated (a fixed seed: the same trace every run): --gangs coscheduling gangs
 * (PodGroups with their pods, as `simulate -f` reads them) arriving at random over time on a
 * SimCluster of --nodes nodes with 8 GPUs each (10 blocks, racks of 20 nodes). Gang sizes: a
 * mix of 1-4 pods of 2 or 4 GPUs and 1-32 whole nodes (8 GPUs per pod); run times 30 minutes to
 * 4 hours; arrivals spaced to offer about --load percent of the GPUs. The trace goes through the
 * same loader and engine as the command (YAML in memory, sim_loader_*, sim_run).
 *
 * Printed: trace size, load time, simulation wall time, events and events per second, peak
 * resident memory (VmHWM), and placement quality side by side for three placers on the same
 * trace: trainsched's gang core with no topology request, the same with every multi-pod gang
 * preferring one rack (trainsched.io/topology-preferred: the topology core picks the rack, else
 * the narrowest wider level that holds the gang), and the baseline: GPU utilisation, average
 * and maximum wait, the share of multi-pod gangs inside one rack and one block, and the
 * distinct racks a multi-pod gang spans on average. The baseline is the simplest all-or-nothing
 * placer: at every arrival or completion, waiting gangs in arrival order each try to place every
 * pod on the first node (by name) with room for its GPUs and CPUs; a gang that does not fit whole
 * waits (later gangs may pass it). It has no plan, no packing and no backoff.
 *
 * Wide job (--wide-job N,N,...: only this): one TrainJob placed pod by pod (the built-in
 * torch-distributed runtime, no gang) of N pods of 8 GPUs on the built-in cluster (32 nodes of
 * 8 GPUs), so 32 run at a time for 1 hour and the rest wait, retried as capacity frees: per
 * size, the simulation's wall and CPU time, CPU time per pod and its ratio to the first size's
 * (1.0: time grows linearly with pods), events, and the pods the engine handled one at a time
 * per pod (pod_steps). --retry-each-pod runs the engine with every waiting pod retried on its
 * own (sim_options.retry_each_pod: the same report, the cost before cohorts).
 *
 * Usage: bench_simulate [--gangs N] [--nodes N] [--load PERCENT] [--seed N]
 *        bench_simulate --wide-job N[,N...] [--retry-each-pod]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/yaml.h"
#include "sim/sim.h"

struct gang {
    int pods, gpus; /* per pod */
    int64_t arrival, run;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void make_trace(struct gang *g, long n, long nodes, long load)
{
    static const int whole[] = {1, 2, 2, 4, 4, 8, 8, 16, 32};
    double mean_gpu_s = 0, gap;
    int64_t t = 0;

    for (long i = 0; i < n; i++) {
        if (next() % 10 < 4) { /* small: 1-4 pods of 2 or 4 GPUs */
            g[i].pods = 1 + (int)(next() % 4);
            g[i].gpus = next() % 2 ? 2 : 4;
        } else {
            g[i].pods = whole[next() % (sizeof(whole) / sizeof(whole[0]))];
            g[i].gpus = 8;
        }
        g[i].run = (int64_t)(1800 + next() % (4 * 3600 - 1800)) * 1000;
        mean_gpu_s += (double)g[i].pods * g[i].gpus * (double)g[i].run / 1000.0;
    }
    mean_gpu_s /= (double)n;
    /* offered load = mean GPU-seconds per gang / gap / cluster GPUs */
    gap = mean_gpu_s / ((double)load / 100.0 * (double)nodes * 8.0);
    for (long i = 0; i < n; i++) {
        g[i].arrival = t;
        t += (int64_t)(gap * 1000.0 * (0.5 + (double)(next() % 1000) / 1000.0));
    }
}

/* the trace as YAML; request: a topology annotation every multi-pod gang carries ("" none) */
static void emit_trace(struct common_buf *b, const struct gang *g, long n, const char *request)
{
    char line[512];

    for (long i = 0; i < n; i++) {
        snprintf(line, sizeof(line),
                 "---\napiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                 "metadata: {name: g%ld, namespace: ml, annotations: "
                 "{trainsched.io/sim-arrival: %lldms, trainsched.io/sim-run-time: %lldms%s%s}}\n"
                 "spec: {minMember: %d}\n---\napiVersion: v1\nkind: List\nitems:\n",
                 i, (long long)g[i].arrival, (long long)g[i].run,
                 *request && g[i].pods > 1 ? ", " : "", g[i].pods > 1 ? request : "", g[i].pods);
        common_buf_append(b, line, strlen(line), NULL);
        for (int k = 0; k < g[i].pods; k++) {
            snprintf(
                line, sizeof(line),
                "- {apiVersion: v1, kind: Pod, metadata: {name: g%ld-%d, namespace: ml, "
                "labels: {scheduling.x-k8s.io/pod-group: g%ld}}, spec: {containers: "
                "[{name: c, resources: {requests: {cpu: \"%d\", nvidia.com/gpu: \"%d\"}}}]}}\n",
                i, k, i, g[i].gpus * 10, g[i].gpus);
            common_buf_append(b, line, strlen(line), NULL);
        }
    }
}

/* ---- the first-fit baseline ---- */

struct ff_event {
    int64_t t;
    long gang; /* completion of gang */
};

static int ff_cmp(const void *a, const void *b)
{
    const struct ff_event *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

struct quality {
    double util, wait_avg, wait_max, one_rack, one_block;
    double racks_per_gang; /* distinct racks a started multi-pod gang's nodes span, average */
    long placed;
};

static void baseline(const struct gang *g, long n, long nodes, long per_rack, long per_block,
                     struct quality *q)
{
    int *free_gpu = malloc((size_t)nodes * sizeof(int));
    int *free_cpu = malloc((size_t)nodes * sizeof(int));
    int **where = calloc((size_t)n, sizeof(int *));
    int64_t *start = malloc((size_t)n * sizeof(int64_t));
    struct ff_event *heap = malloc((size_t)n * sizeof(*heap));
    size_t nh = 0;
    long next_arrival = 0, first_wait = 0, multi = 0;
    int64_t now = 0, last = 0;
    double used_gpu_s = 0, waits = 0;
    long used = 0;

    memset(q, 0, sizeof(*q));
    for (long i = 0; i < nodes; i++) {
        free_gpu[i] = 8;
        free_cpu[i] = 96;
    }
    for (long i = 0; i < n; i++)
        start[i] = -1;
    for (;;) {
        /* next time: an arrival or a completion (kept sorted: small n of running gangs) */
        int64_t t = next_arrival < n ? g[next_arrival].arrival : INT64_MAX;
        if (nh && heap[0].t <= t)
            t = heap[0].t;
        if (t == INT64_MAX)
            break;
        used_gpu_s += (double)used * (double)(t - last) / 1000.0;
        last = now = t;
        while (nh && heap[0].t <= now) {
            long k = heap[0].gang;
            for (int p = 0; p < g[k].pods; p++) {
                free_gpu[where[k][p]] += g[k].gpus;
                free_cpu[where[k][p]] += g[k].gpus * 10;
            }
            used -= (long)g[k].pods * g[k].gpus;
            memmove(heap, heap + 1, (nh - 1) * sizeof(*heap));
            nh--;
        }
        while (next_arrival < n && g[next_arrival].arrival <= now)
            next_arrival++;
        while (first_wait < next_arrival && start[first_wait] >= 0)
            first_wait++;
        for (long k = first_wait; k < next_arrival; k++) {
            int ok = 1, *w;
            if (start[k] >= 0)
                continue;
            w = malloc((size_t)g[k].pods * sizeof(int));
            for (int p = 0; p < g[k].pods && ok; p++) {
                long nd;
                for (nd = 0; nd < nodes; nd++)
                    if (free_gpu[nd] >= g[k].gpus && free_cpu[nd] >= g[k].gpus * 10)
                        break;
                if (nd == nodes)
                    ok = 0;
                else {
                    w[p] = (int)nd;
                    free_gpu[nd] -= g[k].gpus;
                    free_cpu[nd] -= g[k].gpus * 10;
                }
                if (!ok)
                    for (int r = 0; r < p; r++) {
                        free_gpu[w[r]] += g[k].gpus;
                        free_cpu[w[r]] += g[k].gpus * 10;
                    }
            }
            if (!ok) {
                free(w);
                continue;
            }
            where[k] = w;
            start[k] = now;
            used += (long)g[k].pods * g[k].gpus;
            heap[nh].t = now + g[k].run;
            heap[nh++].gang = k;
            qsort(heap, nh, sizeof(*heap), ff_cmp);
        }
    }
    for (long k = 0; k < n; k++) {
        double w;
        if (start[k] < 0)
            continue;
        q->placed++;
        w = (double)(start[k] - g[k].arrival) / 1000.0;
        waits += w;
        if (w > q->wait_max)
            q->wait_max = w;
        if (g[k].pods > 1) {
            int rack = 1, block = 1;
            multi++;
            for (int p = 1; p < g[k].pods; p++) {
                int seen = 0;
                rack &= where[k][p] / per_rack == where[k][0] / per_rack;
                block &= where[k][p] / per_block == where[k][0] / per_block;
                for (int p2 = 0; p2 < p && !seen; p2++)
                    seen = where[k][p2] / per_rack == where[k][p] / per_rack;
                q->racks_per_gang += !seen;
            }
            q->racks_per_gang += 1;
            q->one_rack += rack;
            q->one_block += block;
        }
        free(where[k]);
    }
    q->util = used_gpu_s / ((double)last / 1000.0 * (double)nodes * 8.0);
    q->wait_avg = q->placed ? waits / (double)q->placed : 0;
    q->one_rack = multi ? q->one_rack / (double)multi : 0;
    q->one_block = multi ? q->one_block / (double)multi : 0;
    q->racks_per_gang = multi ? q->racks_per_gang / (double)multi : 0;
    free(free_gpu);
    free(free_cpu);
    free(where);
    free(start);
    free(heap);
}

static void progress(void *ctx, int64_t now, size_t done, size_t total)
{
    char d[32];
    double *t0 = ctx;
    fprintf(stderr, "  ... simulated %s, %zu of %zu gangs finished, %.0f s\n",
            sim_format_duration(now, d, sizeof(d)), done, total, now_s() - *t0);
}

/*
 * simulate - load cluster and trace through the command's loader and run the engine; fill *q
 * (placed, utilisation, waits, shares of multi-pod gangs in one rack and one block, racks per
 * gang). verbose: print load and run figures (time, events, memory). 0, or 1 on an error.
 */
static int simulate(const struct common_buf *cluster, const struct common_buf *trace, int verbose,
                    struct quality *q)
{
    struct common_yaml_docs cf, jf;
    struct common_arena *a;
    struct sim_loader *l;
    struct sim_input in;
    struct sim_result r;
    struct sim_options opts;
    struct common_error e;
    struct common_yaml_limits lim = common_yaml_limits_default();
    double t0, t1, t2, c0, c1, c2, racks = 0, waits = 0;
    char line[64];
    int rc = 0;

    memset(q, 0, sizeof(*q));
    memset(&cf, 0, sizeof(cf));
    memset(&jf, 0, sizeof(jf));
    t0 = now_s();
    c0 = bench_process_cpu();
    a = common_arena_create(0);
    l = sim_loader_create(a, NULL);
    lim.max_doc_bytes = (size_t)1 << 30;
    if (common_yaml_load(cluster->data, cluster->len, "cluster", NULL, &cf, &e) ||
        common_yaml_load(trace->data, trace->len, "trace", &lim, &jf, &e) ||
        sim_load_cluster(l, &cf, &e) || sim_load_jobs(l, &jf, &e) ||
        sim_loader_finish(l, &in, &e)) {
        fprintf(stderr, "bench_simulate: %s\n", e.msg);
        rc = 1;
        goto out;
    }
    t1 = now_s();
    c1 = bench_process_cpu();
    if (verbose)
        printf("  trace: %zu jobs, %.1f MB of YAML, loaded in %.2f s wall, %.2f s CPU; resident "
               "after loading (VmHWM) %.0f MB\n",
               in.n_jobs, (double)trace->len / 1e6, t1 - t0, c1 - c0,
               (double)bench_status_kb("VmHWM") / 1024);
    memset(&opts, 0, sizeof(opts));
    opts.progress = progress;
    opts.progress_ctx = &t1;
    if (sim_run(&in, &opts, a, &r, &e)) {
        fprintf(stderr, "bench_simulate: %s\n", e.msg);
        rc = 1;
        goto out;
    }
    t2 = now_s();
    c2 = bench_process_cpu();
    if (verbose) {
        printf("  simulate: %.2f s wall, %.2f s CPU for %s simulated; %llu events (%.0f events "
               "per CPU second), %llu filters (%llu more saved), %llu binds, %llu gang attempts "
               "failed\n",
               t2 - t1, c2 - c1, sim_format_duration(r.end_ms, line, sizeof(line)),
               (unsigned long long)r.events, (double)r.events / (c2 - c1),
               (unsigned long long)r.filters, (unsigned long long)r.filters_saved,
               (unsigned long long)r.binds, (unsigned long long)r.gang_failures);
        printf("  peak resident memory (VmHWM): %.0f MB\n",
               (double)bench_status_kb("VmHWM") / 1024);
    } else
        printf("  simulate with the topology request: %.2f s wall, %.2f s CPU; %llu events (%.0f "
               "per CPU second), %llu filters (%llu more saved), %llu gang attempts failed\n",
               t2 - t1, c2 - c1, (unsigned long long)r.events, (double)r.events / (c2 - c1),
               (unsigned long long)r.filters, (unsigned long long)r.filters_saved,
               (unsigned long long)r.gang_failures);
    for (size_t i = 0; i < in.n_jobs; i++) {
        if (r.jobs[i].start_ms < 0)
            continue;
        q->placed++;
        waits += (double)r.jobs[i].wait_ms / 1000;
        if (in.jobs[i].n_pods > 1 && in.n_levels > 1)
            racks += r.jobs[i].domains[1];
    }
    q->util = r.util_avg;
    q->wait_avg = q->placed ? waits / (double)q->placed : 0;
    q->wait_max = (double)r.wait_max_ms / 1000;
    if (r.multi_pod_jobs && in.n_levels > 1) {
        q->one_block = (double)r.jobs_in_one_domain[0] / r.multi_pod_jobs;
        q->one_rack = (double)r.jobs_in_one_domain[1] / r.multi_pod_jobs;
        q->racks_per_gang = racks / r.multi_pod_jobs;
    }
out:
    sim_loader_destroy(l);
    common_yaml_docs_free(&cf);
    common_yaml_docs_free(&jf);
    common_arena_destroy(a);
    return rc;
}

/* --wide-job: one pod-by-pod TrainJob of each size on the built-in cluster */
static int wide_jobs(const char *sizes, int each_pod)
{
    double first = 0;
    const char *p = sizes;

    printf("bench_simulate: one TrainJob placed pod by pod (torch-distributed, 8 GPUs a pod) on "
           "the built-in cluster (32 nodes x 8 GPUs)%s\n",
           each_pod ? ", every waiting pod retried on its own (--retry-each-pod)" : "");
    printf("  %8s %9s %9s %12s %8s %12s %10s\n", "pods", "wall s", "CPU s", "CPU us/pod", "ratio",
           "events", "steps/pod");
    while (*p) {
        char *end, yaml[1024];
        long n = strtol(p, &end, 10);
        struct common_yaml_docs cf, jf;
        struct common_error e;
        struct common_arena *a = common_arena_create(0);
        struct sim_loader *l = sim_loader_create(a, NULL);
        struct sim_input in;
        struct sim_options opts;
        struct sim_result r;
        double t0, c0, t1, c1;

        if (end == p || n < 1 || n > 500000 || (*end && *end != ',')) {
            fprintf(stderr, "bench_simulate: --wide-job: \"%s\" is not a list of pod counts\n",
                    sizes);
            return 2;
        }
        p = *end ? end + 1 : end;
        snprintf(yaml, sizeof(yaml),
                 "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                 "metadata: {name: wide, namespace: ml}\n"
                 "spec:\n  runtimeRef: {apiGroup: trainer.kubeflow.org, kind: "
                 "ClusterTrainingRuntime, name: torch-distributed}\n"
                 "  trainer: {numNodes: %ld, resourcesPerNode: {limits: {nvidia.com/gpu: 8}}}\n",
                 n);
        memset(&opts, 0, sizeof(opts));
        opts.retry_each_pod = each_pod;
        if (common_yaml_load(sim_default_cluster_yaml, strlen(sim_default_cluster_yaml), "builtin",
                             NULL, &cf, &e) ||
            common_yaml_load(yaml, strlen(yaml), "job", NULL, &jf, &e) ||
            sim_load_cluster(l, &cf, &e) || sim_load_jobs(l, &jf, &e) ||
            sim_loader_finish(l, &in, &e)) {
            fprintf(stderr, "bench_simulate: %s\n", e.msg);
            return 1;
        }
        t0 = now_s();
        c0 = bench_process_cpu();
        if (sim_run(&in, &opts, a, &r, &e)) {
            fprintf(stderr, "bench_simulate: %s\n", e.msg);
            return 1;
        }
        t1 = now_s();
        c1 = bench_process_cpu();
        if (first == 0)
            first = (c1 - c0) / (double)n;
        printf("  %8ld %9.2f %9.2f %12.1f %8.2f %12llu %10.1f\n", n, t1 - t0, c1 - c0,
               (c1 - c0) * 1e6 / (double)n, (c1 - c0) / (double)n / first,
               (unsigned long long)r.events, (double)r.pod_steps / (double)n);
        fflush(stdout);
        sim_loader_destroy(l);
        common_yaml_docs_free(&cf);
        common_yaml_docs_free(&jf);
        common_arena_destroy(a);
    }
    printf("\nreproduce: build-rel/bench/bench_simulate --wide-job %s%s\n", sizes,
           each_pod ? " --retry-each-pod" : "");
    return 0;
}

static void quality_row(const char *placer, const struct quality *q)
{
    printf("  %-34s %8.1f%% %9.0fs %9.0fs %9.1f%% %9.1f%% %8.2f %8ld\n", placer, q->util * 100,
           q->wait_avg, q->wait_max, q->one_rack * 100, q->one_block * 100, q->racks_per_gang,
           q->placed);
}

int main(int argc, char **argv)
{
    long gangs = 10000, nodes = 5000, load = 90, seed = 1;
    const char *wide = NULL;
    int each_pod = 0;
    struct gang *g;
    struct common_buf trace, cluster;
    struct quality plain, topo, ff;
    char line[256];
    const long per_rack = 20, blocks = 10;
    long rows_per_block;
    static const char request[] =
        "trainsched.io/topology-preferred: cloud.provider.com/topology-rack";

    common_alloc_init();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--gangs") == 0)
            gangs = bench_flag_long(argv[0], argc, argv, &i, 1, 1000000);
        else if (strcmp(argv[i], "--nodes") == 0)
            nodes = bench_flag_long(argv[0], argc, argv, &i, per_rack * blocks, SIM_MAX_NODES);
        else if (strcmp(argv[i], "--load") == 0)
            load = bench_flag_long(argv[0], argc, argv, &i, 1, 1000);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = bench_flag_long(argv[0], argc, argv, &i, 1, 1000000);
        else if (strcmp(argv[i], "--wide-job") == 0 && i + 1 < argc)
            wide = argv[++i];
        else if (strcmp(argv[i], "--retry-each-pod") == 0)
            each_pod = 1;
        else {
            fprintf(stderr,
                    "usage: %s [--gangs N] [--nodes N] [--load PERCENT] [--seed N]\n"
                    "       %s --wide-job N[,N...] [--retry-each-pod]\n",
                    argv[0], argv[0]);
            return 2;
        }
    }
    if (wide)
        return wide_jobs(wide, each_pod);
    nodes -= nodes % (per_rack * blocks);
    rows_per_block = nodes / blocks / per_rack;
    rng += (uint64_t)seed * 0x9e3779b97f4a7c15ull;
    g = calloc((size_t)gangs, sizeof(*g));
    make_trace(g, gangs, nodes, load);
    common_buf_init(&trace, (size_t)1 << 31);
    common_buf_init(&cluster, 4096);
    emit_trace(&trace, g, gangs, "");
    snprintf(line, sizeof(line),
             "apiVersion: trainsched.io/v1alpha1\nkind: SimCluster\nmetadata: {name: gpu}\n"
             "spec: {blocks: %ld, racksPerBlock: %ld, nodesPerRack: %ld, gpusPerNode: 8}\n",
             blocks, rows_per_block, per_rack);
    common_buf_append(&cluster, line, strlen(line), NULL);
    printf(
        "bench_simulate: %ld gangs on %ld nodes x 8 GPUs (%ld blocks x %ld racks x %ld), offered "
        "load %ld%%, seed %ld\n",
        gangs, nodes, blocks, rows_per_block, per_rack, load, seed);
    if (simulate(&cluster, &trace, 1, &plain))
        return 1;
    /* the same trace, every multi-pod gang preferring one rack (topology default: the
     * SimCluster's block, rack, hostname) */
    common_buf_free(&trace);
    common_buf_init(&trace, (size_t)1 << 31);
    emit_trace(&trace, g, gangs, request);
    if (simulate(&cluster, &trace, 0, &topo))
        return 1;
    baseline(g, gangs, nodes, per_rack, per_rack * rows_per_block, &ff);
    printf("\n  %-34s %9s %10s %10s %10s %10s %8s %8s\n", "placer", "GPU util", "wait avg",
           "wait max", "one rack", "one block", "racks", "placed");
    quality_row("trainsched, no topology request", &plain);
    quality_row("trainsched, preferred rack", &topo);
    quality_row("first-fit baseline", &ff);
    printf("  (one rack / one block: multi-pod gangs whose nodes lie in one; racks: distinct racks "
           "a multi-pod gang spans, average)\n");
    printf("\nreproduce: build-rel/bench/bench_simulate --gangs %ld --nodes %ld --load %ld --seed "
           "%ld\n",
           gangs, nodes, load, seed);
    common_buf_free(&trace);
    common_buf_free(&cluster);
    free(g);
    return 0;
}
