/*
 * bench/bench_topology.c - topology-aware gang placement with the extender's own gang core.
 *
 * Cluster: 5,000 nodes of 8 GPUs in 4 levels (2 zones x 2 blocks x 5 racks x 250 nodes, then the
 * hostname), with hostnames that do not follow the racks (node-NNNNN in a shuffled order, as
 * cloud hostnames are), and a seeded share of nodes partly used by other pods.
 *
 * 1. Timing: a 1,000-pod gang (1 GPU each) that requires one rack: the first member's filter
 *    (the whole-gang plan over 5,000 candidates) and every member's filter once planned (the
 *    fast path), as p50/p99 over ROUNDS runs; then the same gang without a topology request
 *    (the floor: the same planner with one whole-cluster scope).
 * 2. Placement quality: the same seeded sequence of gangs (8..256 pods of 1, 2, 4 or 8 GPUs)
 *    placed on the same cluster two ways, side by side: trainsched with a preferred rack level
 *    (filter, bind, bound: the extender protocol), and a first-fit placer without topology
 *    (each pod on the first node by name with room, as a scheduler that knows no racks). For
 *    each: gangs placed, the share that landed in a single rack, and racks used per gang.
 *
 * Run: ./build-rel/bench/bench_topology [--rounds N] [--gangs N] [--seed N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "common/coretypes.h"
#include "gang/gang.h"

#define ZONES 2
#define BLOCKS 2
#define RACKS 5
#define PER_RACK 250
#define NODES (ZONES * BLOCKS * RACKS * PER_RACK)
#define GPUS 8

static uint64_t rng_state = 1;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)((rng_state >> 33) % n);
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct cluster {
    char names[NODES][16];
    int rack[NODES]; /* global rack index */
    int used[NODES]; /* GPUs used by other pods at the start */
    const char *cands[NODES];
    int order[NODES]; /* node indices by name (first fit's order) */
};

static void die(const char *what, const struct common_error *e)
{
    fprintf(stderr, "bench_topology: %s: %s\n", what, e ? e->msg : "");
    exit(1);
}

static void build_cluster(struct cluster *c)
{
    int perm[NODES];

    for (int i = 0; i < NODES; i++)
        perm[i] = i;
    for (int i = NODES - 1; i > 0; i--) {
        int j = (int)rnd((uint32_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < NODES; i++) {
        snprintf(c->names[i], sizeof(c->names[i]), "node-%05d", perm[i]);
        c->rack[i] = i / PER_RACK;
        c->used[i] = rnd(10) < 3 ? (int)rnd(GPUS) + 1 : 0; /* 30% of nodes partly used */
        c->order[perm[i]] = i;
        c->cands[i] = c->names[i];
    }
}

static void feed(struct gang_state *s, const struct cluster *c)
{
    char buf[512];
    struct common_error e;

    for (int i = 0; i < NODES; i++) {
        int r = c->rack[i];
        json_t *n;
        struct common_node *cn = NULL;
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"example.com/zone\":\"z%d\","
                 "\"example.com/block\":\"b%d\",\"example.com/rack\":\"r%d\","
                 "\"kubernetes.io/hostname\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":\"128\","
                 "\"memory\":\"1Ti\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"}}}",
                 c->names[i], r / (BLOCKS * RACKS), (r / RACKS) % BLOCKS, r % RACKS, c->names[i],
                 GPUS);
        n = json_loads(buf, 0, NULL);
        if (!n || common_node_from_json(n, &cn, &e) || gang_node_upsert(s, cn, &e))
            die("node", &e);
        common_node_free(cn);
        json_decref(n);
        if (c->used[i]) {
            struct common_pod *cp = NULL;
            snprintf(
                buf, sizeof(buf),
                "{\"metadata\":{\"name\":\"busy-%d\",\"namespace\":\"other\",\"uid\":\"busy-%d\"},"
                "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{"
                "\"requests\":{\"nvidia.com/gpu\":\"%d\"}}}]},\"status\":{\"phase\":\"Running\"}}",
                i, i, c->names[i], c->used[i]);
            n = json_loads(buf, 0, NULL);
            if (!n || common_pod_from_json(n, &cp, &e) || gang_pod_upsert(s, cp, &e))
                die("busy pod", &e);
            common_pod_free(cp);
            json_decref(n);
        }
    }
}

static struct gang_state *state_new(const struct cluster *c)
{
    static const char *const ign[] = {"trainsched.io/gang"};
    static const char *const levels[] = {"example.com/zone", "example.com/block",
                                         "example.com/rack", "kubernetes.io/hostname"};
    struct gang_config cfg;
    struct gang_state *s = NULL;
    struct common_error e;

    gang_config_default(&cfg);
    cfg.ignored_resources = ign;
    cfg.n_ignored_resources = 1;
    cfg.bind_http_timeout_ms = 600000;
    if (gang_state_create(&cfg, &s, &e) ||
        gang_topology_set(s, "default", levels, sizeof(levels) / sizeof(levels[0]), &e))
        die("state", &e);
    feed(s, c);
    return s;
}

static void add_pg(struct gang_state *s, const char *name, int pods, const char *ann_key,
                   const char *level)
{
    struct gang_podgroup pg;
    struct common_error e;

    memset(&pg, 0, sizeof(pg));
    pg.namespace = "ml";
    pg.name = name;
    pg.min_member = pods;
    pg.phased_jobs = "";
    pg.min_resources.extended = pg.min_extended;
    if (ann_key) {
        pg.topology[0].key = ann_key;
        pg.topology[0].value = level;
        pg.n_topology = 1;
    }
    if (gang_podgroup_upsert(s, &pg, &e))
        die("podgroup", &e);
}

static struct common_pod *member(const char *gang, int i, int gpus, const char *node)
{
    char buf[700];
    json_t *j;
    struct common_pod *cp = NULL;
    struct common_error e;

    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s-%04d\",\"namespace\":\"ml\",\"uid\":\"%s-%04d\","
             "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"%s\"}},\"spec\":{%s%s%s"
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\","
             "\"nvidia.com/gpu\":\"%d\",\"trainsched.io/gang\":\"1\"}}}]},\"status\":{\"phase\":"
             "\"%s\"}}",
             gang, i, gang, i, gang, node ? "\"nodeName\":\"" : "", node ? node : "",
             node ? "\"," : "", gpus, node ? "Running" : "Pending");
    j = json_loads(buf, 0, NULL);
    if (!j || common_pod_from_json(j, &cp, &e))
        die("pod", &e);
    json_decref(j);
    return cp;
}

/* ---- 1. timing ---- */

static int cmp_d(const void *a, const void *b)
{
    return bench_cmp_double(a, b);
}

static void timing(const struct cluster *c, long rounds, int topo)
{
    enum { PODS = 1000 };
    double *plan = calloc((size_t)rounds, sizeof(double));
    double *fast = calloc((size_t)rounds * PODS, sizeof(double));
    struct gang_node_verdict *out = calloc(NODES, sizeof(*out));
    size_t nf = 0;
    char dom[256] = "";

    if (!plan || !fast || !out)
        die("memory", NULL);
    for (long r = 0; r < rounds; r++) {
        struct gang_state *s = state_new(c);
        struct common_pod **pods = calloc(PODS, sizeof(*pods));
        struct gang_filter_result res;
        struct gang_info gi;
        struct common_error e;
        char name[32];
        double t0;

        snprintf(name, sizeof(name), "big%ld", r);
        add_pg(s, name, PODS, topo ? "kueue.x-k8s.io/podset-required-topology" : NULL,
               "example.com/rack");
        for (int i = 0; i < PODS; i++) {
            pods[i] = member(name, i, 1, NULL);
            if (gang_pod_upsert(s, pods[i], &e))
                die("member", &e);
        }
        t0 = now_ms();
        if (gang_filter(s, pods[0], c->cands, NODES, 1000, out, &res, &e) || res.n_ok != 1)
            die("first filter did not plan the gang", &e);
        plan[r] = now_ms() - t0;
        for (int i = 0; i < PODS; i++) {
            t0 = now_ms();
            if (gang_filter(s, pods[i], c->cands, NODES, 1000, out, &res, &e) || res.n_ok != 1)
                die("member filter", &e);
            fast[nf++] = now_ms() - t0;
        }
        if (gang_info(s, "ml", name, &gi, &e) == COMMON_OK)
            snprintf(dom, sizeof(dom), "%s %s", gi.domain_level, gi.domain);
        for (int i = 0; i < PODS; i++)
            common_pod_free(pods[i]);
        free(pods);
        gang_state_destroy(s);
    }
    qsort(plan, (size_t)rounds, sizeof(double), cmp_d);
    qsort(fast, nf, sizeof(double), cmp_d);
    printf("1,000-pod gang, %s, 5,000 nodes, 4 levels (%ld rounds): first filter "
           "(whole-gang plan) p50 %.2f ms, max %.2f ms; planned member filter p50 %.4f ms, p99 "
           "%.4f ms (domain: %s)\n",
           topo ? "required rack" : "no topology request", rounds, plan[rounds / 2],
           plan[rounds - 1], fast[nf / 2], fast[nf * 99 / 100], dom[0] && dom[1] ? dom : "none");
    free(plan);
    free(fast);
    free(out);
}

/* ---- 2. placement quality ---- */

struct gspec {
    int pods, gpus;
};

struct tally {
    int placed, single;
    long racks;
};

static int racks_of(const struct cluster *c, const int *nodes, int n)
{
    int seen[ZONES * BLOCKS * RACKS] = {0}, k = 0;

    for (int i = 0; i < n; i++)
        if (!seen[c->rack[nodes[i]]]++)
            k++;
    return k;
}

static void count(struct tally *t, const struct cluster *c, const int *nodes, int n)
{
    int k = racks_of(c, nodes, n);

    t->placed++;
    t->single += k == 1;
    t->racks += k;
}

static void with_trainsched(const struct cluster *c, const struct gspec *gs, int n, struct tally *t)
{
    struct gang_state *s = state_new(c);
    struct gang_node_verdict *out = calloc(NODES, sizeof(*out));

    for (int g = 0; g < n; g++) {
        char name[32];
        struct common_pod **pods = calloc((size_t)gs[g].pods, sizeof(*pods));
        int *nodes = calloc((size_t)gs[g].pods, sizeof(int)), ok = 1;
        struct common_error e;

        snprintf(name, sizeof(name), "g%03d", g);
        add_pg(s, name, gs[g].pods, "kueue.x-k8s.io/podset-preferred-topology", "example.com/rack");
        for (int i = 0; i < gs[g].pods; i++) {
            pods[i] = member(name, i, gs[g].gpus, NULL);
            if (gang_pod_upsert(s, pods[i], &e))
                die("member", &e);
        }
        for (int i = 0; i < gs[g].pods && ok; i++) {
            struct gang_filter_result res;
            struct gang_bind_result br;
            size_t k;
            if (gang_filter(s, pods[i], c->cands, NODES, 1000 + g, out, &res, &e))
                die("filter", &e);
            for (k = 0; k < NODES && out[k].verdict != GANG_NODE_OK; k++)
                ;
            if (k == NODES) {
                ok = 0;
                break;
            }
            nodes[i] = (int)k;
            if (gang_bind(s, "ml", pods[i]->name, pods[i]->uid, c->names[k], 1000 + g, &br, &e) ||
                br.action == GANG_BIND_REJECT)
                ok = 0;
        }
        for (int i = 0; i < gs[g].pods; i++) {
            if (ok) { /* bound: the API server's view */
                struct common_pod *b = member(name, i, gs[g].gpus, c->names[nodes[i]]);
                gang_pod_upsert(s, b, &e);
                common_pod_free(b);
            } else {
                gang_pod_delete(s, pods[i]->uid);
            }
            common_pod_free(pods[i]);
        }
        if (ok)
            count(t, c, nodes, gs[g].pods);
        free(pods);
        free(nodes);
    }
    free(out);
    gang_state_destroy(s);
}

static void first_fit(const struct cluster *c, const struct gspec *gs, int n, struct tally *t)
{
    int *freeg = calloc(NODES, sizeof(int));

    for (int i = 0; i < NODES; i++)
        freeg[i] = GPUS - c->used[i];
    for (int g = 0; g < n; g++) {
        int *nodes = calloc((size_t)gs[g].pods, sizeof(int)), *save = calloc(NODES, sizeof(int));
        int ok = 1;
        memcpy(save, freeg, NODES * sizeof(int));
        for (int i = 0; i < gs[g].pods && ok; i++) {
            int k;
            for (k = 0; k < NODES && freeg[c->order[k]] < gs[g].gpus; k++)
                ;
            if (k == NODES) {
                ok = 0;
                break;
            }
            nodes[i] = c->order[k];
            freeg[nodes[i]] -= gs[g].gpus;
        }
        if (ok)
            count(t, c, nodes, gs[g].pods);
        else
            memcpy(freeg, save, NODES * sizeof(int)); /* all or nothing, like a gang */
        free(nodes);
        free(save);
    }
    free(freeg);
}

int main(int argc, char **argv)
{
    static struct cluster c;
    long rounds = 3, gangs = 60, seed = 42;
    struct gspec *gs;
    struct tally ts = {0}, ff = {0};
    static const int sizes[] = {8, 16, 32, 64, 128, 256};
    static const int gpus[] = {1, 2, 4, 8};

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0)
            rounds = bench_flag_long("bench_topology", argc, argv, &i, 1, 1000);
        else if (strcmp(argv[i], "--gangs") == 0)
            gangs = bench_flag_long("bench_topology", argc, argv, &i, 1, 10000);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = bench_flag_long("bench_topology", argc, argv, &i, 1, 1L << 40);
        else {
            fprintf(stderr, "usage: bench_topology [--rounds N] [--gangs N] [--seed N]\n");
            return 2;
        }
    }
    rng_state = (uint64_t)seed;
    build_cluster(&c);
    timing(&c, rounds, 1);
    timing(&c, rounds, 0);
    gs = calloc((size_t)gangs, sizeof(*gs));
    for (long g = 0; g < gangs; g++) {
        gs[g].pods = sizes[rnd(sizeof(sizes) / sizeof(sizes[0]))];
        gs[g].gpus = gpus[rnd(sizeof(gpus) / sizeof(gpus[0]))];
    }
    with_trainsched(&c, gs, (int)gangs, &ts);
    first_fit(&c, gs, (int)gangs, &ff);
    printf("%ld gangs (8..256 pods of 1..8 GPUs) on the same cluster, 30%% of nodes partly used:\n",
           gangs);
    printf("%-44s %8s %14s %15s\n", "", "placed", "in one rack", "racks per gang");
    printf("%-44s %8d %13.0f%% %15.2f\n", "trainsched, preferred rack (best fit, packed)",
           ts.placed, ts.placed ? 100.0 * ts.single / ts.placed : 0.0,
           ts.placed ? (double)ts.racks / ts.placed : 0.0);
    printf("%-44s %8d %13.0f%% %15.2f\n", "first fit by node name, no topology", ff.placed,
           ff.placed ? 100.0 * ff.single / ff.placed : 0.0,
           ff.placed ? (double)ff.racks / ff.placed : 0.0);
    printf("Reproduce: ./build-rel/bench/bench_topology --rounds %ld --gangs %ld --seed %ld\n",
           rounds, gangs, seed);
    free(gs);
    return 0;
}
