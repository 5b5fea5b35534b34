/*
 * bench/bench_snapshot.c - `trainsched simulate --from-cluster` on a large cluster: how long
 * the snapshot takes and how much memory it needs (docs/simulate.md "From the cluster").
 *
 * --bed (the test bed of tests/e2e/testbed, KUBECONFIG from its env): creates N kwok-style
 *     Nodes (annotation kwok.x-k8s.io/node: fake, 8 GPUs, 96 CPUs, hostname/rack/block labels;
 *     default 10,000) and P pods bound to them by spec.nodeName (default 0; 1 CPU and 1 GPU
 *     each, round-robin over the nodes, in namespace NS) from T threads (objects that exist
 *     are counted, not recreated), then runs the real binary `trainsched simulate
 *     --from-cluster -o json` and reports its wall seconds, its peak RSS (wait4) and its
 *     progress lines. --cleanup deletes the pods, the namespace and the Nodes.
 * --pure: the same cluster as API lists generated in memory (the wire format of the lists the
 *     snapshot reads), through sim_load_snapshot, sim_loader_finish and sim_run in this
 *     process: wall seconds of each and the peak RSS.
 *
 * Run: . $TRAINSCHED_TESTBED_RUN/env; build-rel/bench/bench_snapshot --bed --nodes 10000
 *      build-rel/bench/bench_snapshot --bed --nodes 5000 --pods 50000
 *      build-rel/bench/bench_snapshot --pure --nodes 5000 --pods 50000
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "common/arena.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "sim/sim.h"

static long n_nodes = 10000, n_pods = 0, threads = 4;
static const char *ns = "trainsched-snap-bench";
static struct common_kube *kube;
static const struct common_kube_resource sa_r = {"", "v1", "serviceaccounts", 1};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static json_t *node_json(long i)
{
    char name[64], rack[32], block[32];

    snprintf(name, sizeof(name), "snap-node-%05ld", i);
    snprintf(rack, sizeof(rack), "r%ld", i / 16);
    snprintf(block, sizeof(block), "b%ld", i / 256);
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s}}, s:{s:{s:s, s:s, s:s, s:s},"
                     " s:{s:s, s:s, s:s, s:s}, s:[{s:s, s:s}]}}",
                     "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
                     "kubernetes.io/hostname", name, "cloud.provider.com/topology-rack", rack,
                     "cloud.provider.com/topology-block", block, "annotations",
                     "kwok.x-k8s.io/node", "fake", "status", "capacity", "cpu", "96", "memory",
                     "1Ti", "pods", "110", "nvidia.com/gpu", "8", "allocatable", "cpu", "96",
                     "memory", "1Ti", "pods", "110", "nvidia.com/gpu", "8", "conditions", "type",
                     "Ready", "status", "True");
}

static json_t *pod_json(long i)
{
    char name[64], node[64], uid[64];

    snprintf(name, sizeof(name), "p-%06ld", i);
    snprintf(node, sizeof(node), "snap-node-%05ld", i % n_nodes);
    snprintf(uid, sizeof(uid), "uid-%06ld", i);
    /* an extended resource needs its limit (the API server's pod validation) */
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s, "
                     "s:s}, s:{s:s}}}], s:[{s:s, s:s}]}, s:{s:s}}",
                     "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", ns,
                     "uid", uid, "labels", "app", "snap-bench", "spec", "nodeName", node,
                     "containers", "name", "c", "image", "busybox:1.36", "resources", "requests",
                     "cpu", "1", "nvidia.com/gpu", "1", "limits", "nvidia.com/gpu", "1",
                     "tolerations", "key", "kwok.x-k8s.io/node", "operator", "Exists", "status",
                     "phase", "Running");
}

static int create_node(long i, void *ctx, struct common_error *err)
{
    json_t *n = node_json(i);
    enum common_rc rc = common_kube_create(kube, &common_kube_nodes, NULL, n, NULL, NULL, err);
    (void)ctx;
    json_decref(n);
    return rc;
}

static int create_pod(long i, void *ctx, struct common_error *err)
{
    json_t *p = pod_json(i);
    enum common_rc rc;
    (void)ctx;
    json_object_del(p, "status");
    json_object_del(json_object_get(p, "metadata"), "uid");
    rc = common_kube_create(kube, &common_kube_pods, ns, p, NULL, NULL, err);
    json_decref(p);
    return rc;
}

static int delete_node(long i, void *ctx, struct common_error *err)
{
    char name[64];
    (void)ctx;
    snprintf(name, sizeof(name), "snap-node-%05ld", i);
    enum common_rc rc =
        common_kube_delete(kube, &common_kube_nodes, NULL, name, NULL, NULL, NULL, err);
    return rc == COMMON_ENOTFOUND ? COMMON_OK : rc;
}

static void make(long to, int (*one)(long, void *, struct common_error *), const char *what)
{
    long ok = 0, failed = 0;
    char first[600];
    double s = bench_parallel(0, to, threads, one, NULL, &ok, &failed, first, sizeof(first));

    printf("%s: %ld created or present, %ld failed in %.1f s (%.0f/s)%s%s\n", what, ok, failed, s,
           (double)to / (s > 0 ? s : 1), failed ? "; first: " : "", failed ? first : "");
    fflush(stdout);
}

static int bed(int cleanup)
{
    struct common_kubeconfig kc = {0};
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;
    char cmd[1200];

    if (common_kubeconfig_load(NULL, NULL, &kc, &err)) {
        fprintf(stderr, "bench_snapshot: kubeconfig: %s\n", err.msg);
        return 1;
    }
    o.qps = 5000;
    o.burst = 5000;
    kube = common_kube_client_create(&kc, &o, &err);
    if (!kube) {
        fprintf(stderr, "bench_snapshot: %s\n", err.msg);
        return 1;
    }
    if (cleanup) {
        struct common_kube_resource ns_r = common_kube_namespaces;
        common_kube_delete(kube, &ns_r, NULL, ns, NULL, NULL, NULL, &err);
        make(n_nodes, delete_node, "nodes deleted");
    } else {
        json_t *nso = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                                "metadata", "name", ns);
        common_kube_create(kube, &common_kube_namespaces, NULL, nso, NULL, NULL, &err);
        json_decref(nso);
        /* no ServiceAccount controller on a bed without kube-controller-manager: the pods'
         * admission needs the default ServiceAccount */
        nso = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                        "metadata", "name", "default", "namespace", ns);
        common_kube_create(kube, &sa_r, ns, nso, NULL, NULL, &err);
        json_decref(nso);
        make(n_nodes, create_node, "nodes");
        if (n_pods)
            make(n_pods, create_pod, "pods");
        {
            struct rusage ru;
            int st;
            pid_t pid;
            double t0 = now_s();
            snprintf(cmd, sizeof(cmd), "%s/build-rel/trainsched", TS_SOURCE_DIR);
            if (getenv("TRAINSCHED"))
                snprintf(cmd, sizeof(cmd), "%s", getenv("TRAINSCHED"));
            printf("$ %s simulate --from-cluster -o json > /dev/null\n", cmd);
            fflush(stdout);
            pid = fork();
            if (pid == 0) {
                if (!freopen("/dev/null", "w", stdout))
                    _exit(127);
                dup2(1, 1);
                execl(cmd, cmd, "simulate", "--from-cluster", "-o", "json", (char *)NULL);
                _exit(127);
            }
            if (pid < 0 || wait4(pid, &st, 0, &ru) < 0) {
                perror("bench_snapshot");
                return 1;
            }
            printf("snapshot + simulation of %ld nodes, %ld pods: exit %d, %.1f s wall, peak RSS "
                   "%.0f MiB (%ld KiB)\n",
                   n_nodes, n_pods, WIFEXITED(st) ? WEXITSTATUS(st) : -1, now_s() - t0,
                   (double)ru.ru_maxrss / 1024.0, ru.ru_maxrss);
        }
    }
    common_kube_client_destroy(kube);
    common_kubeconfig_free(&kc);
    return 0;
}

static int pure(void)
{
    json_t *nodes = json_array(), *pods = json_array();
    struct common_arena *a = common_arena_create(0);
    struct sim_loader *l = sim_loader_create(a, NULL);
    struct sim_snapshot s = {0};
    struct sim_input in;
    struct sim_result r;
    struct common_error e;
    struct rusage ru;
    double t0 = now_s(), t1, t2, t3, t4;

    for (long i = 0; i < n_nodes; i++)
        json_array_append_new(nodes, node_json(i));
    for (long i = 0; i < n_pods; i++) {
        json_t *p = pod_json(i);
        /* list items carry no kind */
        json_object_del(p, "kind");
        json_object_del(p, "apiVersion");
        json_array_append_new(pods, p);
    }
    t1 = now_s();
    s.nodes = nodes;
    s.pods = pods;
    s.now_ms = 1796731200000LL;
    s.assume_run_ms = 3600000;
    if (sim_load_snapshot(l, &s, &e) || sim_loader_finish(l, &in, &e)) {
        fprintf(stderr, "bench_snapshot: %s\n", e.msg);
        return 1;
    }
    t2 = now_s();
    if (sim_run(&in, NULL, a, &r, &e)) {
        fprintf(stderr, "bench_snapshot: %s\n", e.msg);
        return 1;
    }
    t3 = now_s();
    getrusage(RUSAGE_SELF, &ru);
    t4 = now_s();
    printf("pure: %ld nodes, %ld pods as API lists: generated in %.1f s; sim_load_snapshot + "
           "finish %.2f s (%zu nodes, %zu running pods); sim_run %.2f s; peak RSS %.0f MiB "
           "(lists included)\n",
           n_nodes, n_pods, t1 - t0, t2 - t1, in.n_nodes, in.n_load, t3 - t2,
           (double)ru.ru_maxrss / 1024.0);
    (void)t4;
    sim_loader_destroy(l);
    common_arena_destroy(a);
    json_decref(nodes);
    json_decref(pods);
    return 0;
}

int main(int argc, char **argv)
{
    int mode = 0; /* 1 bed, 2 pure, 3 cleanup */

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodes") == 0)
            n_nodes = bench_flag_long("bench_snapshot", argc, argv, &i, 1, 20000);
        else if (strcmp(argv[i], "--pods") == 0)
            n_pods = bench_flag_long("bench_snapshot", argc, argv, &i, 0, 500000);
        else if (strcmp(argv[i], "--threads") == 0)
            threads = bench_flag_long("bench_snapshot", argc, argv, &i, 1, 64);
        else if (strcmp(argv[i], "--bed") == 0)
            mode = 1;
        else if (strcmp(argv[i], "--pure") == 0)
            mode = 2;
        else if (strcmp(argv[i], "--cleanup") == 0)
            mode = 3;
        else {
            fprintf(stderr, "usage: bench_snapshot --bed|--pure|--cleanup [--nodes N] [--pods P] "
                            "[--threads T]\n");
            return 2;
        }
    }
    if (mode == 2)
        return pure();
    if (mode == 1 || mode == 3)
        return bed(mode == 3);
    fprintf(stderr, "bench_snapshot: give --bed, --pure or --cleanup\n");
    return 2;
}
