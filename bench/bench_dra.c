/*
 * bench/bench_dra.c - the DRA core at cluster scale: decode, index, and allocate on every node.
 *
 * Cluster: NODES nodes, each with one ResourceSlice of 8 GPUs (driver gpu.example.com, two
 * models by node parity, an NVLink clique attribute shared by pairs of GPUs, 80Gi memory), one
 * DeviceClass with a driver selector, and a pod claim for COUNT GPUs of model H100 with at
 * least 80Gi that must share a clique (so the search backtracks). A seeded share of GPUs is
 * already in use by other claims.
 *
 * Figures: time to decode the slices from JSON, to build the index, and to allocate the claim
 * on every node once (what one gang-planning sweep over the cluster costs), as the median of
 * ROUNDS runs, plus the share of nodes where the claim fits.
 *
 * Gang figures (--gang P, default 64; 0 skips them): a PodGroup of P pods, each claiming 8 GPUs
 * through its own ResourceClaim (as made from a ResourceClaimTemplate), on the same NODES nodes
 * (64 CPUs each; every third node has one GPU in use): the time to build the DRA view from the
 * JSON objects (decode, index, each pod's claims: once per informer change), the time of the
 * gang plan (the first member's gang_filter with every node a candidate), and the filter of a
 * planned member (its p99 over every member); then the same gang planned without claims (pods
 * asking for the extended resource nvidia.com/gpu: 8 on nodes that advertise 8, no view). The
 * ratio of the two plans is printed from the same run.
 *
 * Run: ./build-rel/bench/bench_dra [--nodes N] [--count N] [--rounds N] [--gang P]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "common/arena.h"
#include "common/coretypes.h"
#include "dra/dra.h"
#include "dra/view.h"
#include "gang/gang.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_t *slice_json(long node)
{
    json_t *devs = json_array();
    char name[64];
    for (int g = 0; g < 8; g++) {
        char dev[16], clique[16];
        snprintf(dev, sizeof(dev), "gpu-%d", g);
        snprintf(clique, sizeof(clique), "c%d", g / 2);
        json_array_append_new(devs,
                              json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:i}}, s:{s:{s:s}}}", "name",
                                        dev, "attributes", "model", "string",
                                        node % 2 ? "A100" : "H100", "clique", "string", clique,
                                        "index", "int", g, "capacity", "memory", "value", "80Gi"));
    }
    snprintf(name, sizeof(name), "node-%05ld", node);
    return json_pack("{s:{s:s+}, s:{s:s, s:{s:s, s:i, s:i}, s:s, s:o}}", "metadata", "name", name,
                     "-gpus", "spec", "driver", "gpu.example.com", "pool", "name", name,
                     "generation", 1, "resourceSliceCount", 1, "nodeName", name, "devices", devs);
}

/* ---- the gang plan with and without claims ---- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static json_t *node_json(long n, int gpus)
{
    char name[32];
    json_t *alloc = json_pack("{s:s, s:s, s:s}", "cpu", "64", "memory", "512Gi", "pods", "110");
    snprintf(name, sizeof(name), "node-%05ld", n);
    if (gpus)
        json_object_set_new(alloc, "nvidia.com/gpu", json_string("8"));
    return json_pack("{s:{s:s}, s:{s:o}}", "metadata", "name", name, "status", "allocatable",
                     alloc);
}

static json_t *pod_json(long i, int claims)
{
    char name[32], uid[48];
    json_t *req = json_pack("{s:s, s:s}", "cpu", "8", "memory", "64Gi");
    json_t *c = json_pack("{s:s, s:s, s:{s:o}}", "name", "node", "image", "x", "resources",
                          "requests", req);
    json_t *p;
    snprintf(name, sizeof(name), "w-%03ld", i);
    snprintf(uid, sizeof(uid), "uid-w-%03ld", i);
    if (!claims)
        json_object_set_new(req, "nvidia.com/gpu", json_string("8"));
    p = json_pack("{s:{s:s, s:s, s:s, s:{s:s}}, s:{s:[o]}, s:{s:s}}", "metadata", "name", name,
                  "namespace", "ml", "uid", uid, "labels", GANG_POD_GROUP_LABEL, "job", "spec",
                  "containers", c, "status", "phase", "Pending");
    if (claims)
        json_object_set_new(
            json_object_get(p, "spec"), "resourceClaims",
            json_pack("[{s:s, s:s}]", "name", "gpu", "resourceClaimTemplateName", "gpu-8"));
    return p;
}

static json_t *claim_json(long i)
{
    char name[48], pod[32], uid[48];
    snprintf(name, sizeof(name), "w-%03ld-gpu-x", i);
    snprintf(pod, sizeof(pod), "w-%03ld", i);
    snprintf(uid, sizeof(uid), "uid-w-%03ld", i);
    return json_pack("{s:{s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s}]}, "
                     "s:{s:{s:[{s:s, s:{s:s, s:i}}]}}}",
                     "metadata", "name", name, "namespace", "ml", "annotations",
                     DRA_POD_CLAIM_NAME_ANNOTATION, "gpu", "ownerReferences", "apiVersion", "v1",
                     "kind", "Pod", "name", pod, "uid", uid, "spec", "devices", "requests", "name",
                     "gpu", "exactly", "deviceClassName", "gpu.example.com", "count", 8);
}

/* a claim of another pod holding gpu-0 of node n */
static json_t *busy_json(long n)
{
    char name[32], pool[32];
    snprintf(name, sizeof(name), "busy-%05ld", n);
    snprintf(pool, sizeof(pool), "node-%05ld", n);
    return json_pack("{s:{s:s, s:s}, s:{s:{s:[{s:s, s:{s:s}}]}}, "
                     "s:{s:{s:{s:[{s:s, s:s, s:s, s:s}]}}}}",
                     "metadata", "name", name, "namespace", "other", "spec", "devices", "requests",
                     "name", "gpu", "exactly", "deviceClassName", "gpu.example.com", "status",
                     "allocation", "devices", "results", "request", "gpu", "driver",
                     "gpu.example.com", "pool", pool, "device", "gpu-0");
}

struct gang_fig {
    double view, view_on, plan, filter_p99;
    size_t placed;
};

/* one round: books with nodes and the gang, (with claims: the view), then the plan */
static int gang_round(long nodes, long pods, int claims, struct gang_fig *f)
{
    struct gang_state *gs = NULL;
    struct common_error e;
    struct common_arena *a = common_arena_create((size_t)4 << 30);
    struct common_pod **cps = calloc((size_t)pods, sizeof(*cps));
    const char **names = calloc((size_t)nodes, sizeof(*names));
    struct gang_node_verdict *out = calloc((size_t)nodes, sizeof(*out));
    double *ft = calloc((size_t)pods, sizeof(*ft));
    json_t *pg = json_pack("{s:{s:s, s:s}, s:{s:i, s:i}}", "metadata", "name", "job", "namespace",
                           "ml", "spec", "minMember", (int)pods, "scheduleTimeoutSeconds", 600);
    struct gang_podgroup *gp = calloc(1, sizeof(*gp));
    static const char *const ign[] = {"trainsched.io/gang"};
    struct gang_config cfg;
    struct dra_view *v = NULL;
    const json_t **keep_sl = NULL, **keep_cl = NULL;
    json_t *keep_cls = NULL;
    long n_keep_cl = 0;
    double t0;
    int rc = 1;

    gang_config_default(&cfg);
    cfg.ignored_resources = ign;
    cfg.n_ignored_resources = 1;
    if (!a || !cps || !names || !out || !ft || !gp || gang_state_create(&cfg, &gs, &e))
        goto out;
    for (long n = 0; n < nodes; n++) {
        json_t *j = node_json(n, !claims);
        struct common_node *cn = NULL;
        if (common_node_from_json(j, &cn, &e) || gang_node_upsert(gs, cn, &e))
            goto out;
        names[n] = common_arena_strdup(a, cn->name);
        common_node_free(cn);
        json_decref(j);
    }
    if (gang_podgroup_from_json(pg, gp, &e) || gang_podgroup_upsert(gs, gp, &e))
        goto out;
    for (long i = 0; i < pods; i++) {
        json_t *j = pod_json(i, claims);
        if (common_pod_from_json(j, &cps[i], &e) || gang_pod_upsert(gs, cps[i], &e))
            goto out;
        json_decref(j);
    }
    if (claims) {
        struct dra_view_input in = {0};
        long n_busy = (nodes + 2) / 3;
        const json_t **sl = calloc((size_t)nodes, sizeof(*sl));
        const json_t **cl = calloc((size_t)(pods + n_busy), sizeof(*cl));
        json_t *cls =
            json_pack("{s:{s:s}, s:{s:[{s:{s:s}}]}}", "metadata", "name", "gpu.example.com", "spec",
                      "selectors", "cel", "expression", "device.driver == 'gpu.example.com'");
        for (long n = 0; n < nodes; n++)
            sl[n] = slice_json(n);
        for (long i = 0; i < pods; i++)
            cl[i] = claim_json(i);
        for (long k = 0; k < n_busy; k++)
            cl[pods + k] = busy_json(k * 3);
        /* the objects stay alive until the round ends, as they do in the extender's watch
         * caches: freeing them before the plan made the plan's first malloc of 1 KiB or more
         * pay glibc's malloc_consolidate of the million small chunks just freed (80% of the
         * timed plan before this) */
        keep_sl = sl;
        keep_cl = cl;
        keep_cls = cls;
        n_keep_cl = pods + n_busy;
        in.slices = sl;
        in.n_slices = (size_t)nodes;
        in.classes = (const json_t *const *)&cls;
        in.n_classes = 1;
        in.claims = cl;
        in.n_claims = (size_t)(pods + n_busy);
        in.pods = (const struct common_pod *const *)cps;
        in.n_pods = (size_t)pods;
        v = common_arena_alloc(a, sizeof(*v));
        t0 = now_s();
        if (!v || dra_view_build(a, &in, v, &e)) {
            fprintf(stderr, "view: %s\n", e.msg);
            goto out;
        }
        f->view = now_s() - t0;
        {
            /* what the extender does when only a claim or pod changed: claims, pods and the
             * index built on the devices decoded before */
            struct dra_view_devices *dev = common_arena_alloc(a, sizeof(*dev));
            struct dra_view *v2 = common_arena_alloc(a, sizeof(*v2));
            if (!dev || !v2 || dra_view_devices_decode(a, &in, dev, &e)) {
                fprintf(stderr, "devices: %s\n", e.msg);
                goto out;
            }
            t0 = now_s();
            if (dra_view_build_on(a, &in, dev, v2, &e)) {
                fprintf(stderr, "view: %s\n", e.msg);
                goto out;
            }
            f->view_on = now_s() - t0;
        }
        gang_dra_set(gs, v);
    }
    {
        struct gang_filter_result res;
        t0 = now_s();
        if (gang_filter(gs, cps[0], names, (size_t)nodes, 1000, out, &res, &e))
            goto out;
        f->plan = now_s() - t0;
        if (res.n_ok != 1) {
            fprintf(stderr, "gang not planned: %s\n", res.reason);
            goto out;
        }
        for (long i = 0; i < pods; i++) {
            t0 = now_s();
            if (gang_filter(gs, cps[i], names, (size_t)nodes, 1000, out, &res, &e))
                goto out;
            ft[i] = now_s() - t0;
            f->placed += res.n_ok == 1;
        }
        qsort(ft, (size_t)pods, sizeof(*ft), cmp_d);
        f->filter_p99 = ft[(size_t)((double)(pods - 1) * 0.99)];
    }
    rc = 0;
out:
    gang_state_destroy(gs);
    for (long n = 0; keep_sl && n < nodes; n++)
        json_decref((json_t *)keep_sl[n]);
    for (long i = 0; keep_cl && i < n_keep_cl; i++)
        json_decref((json_t *)keep_cl[i]);
    json_decref(keep_cls);
    free(keep_sl);
    free(keep_cl);
    for (long i = 0; cps && i < pods; i++)
        common_pod_free(cps[i]);
    free(cps);
    free(names);
    free(out);
    free(ft);
    free(gp);
    json_decref(pg);
    common_arena_destroy(a);
    return rc;
}

static int gang_bench(long nodes, long pods, long rounds)
{
    double view[64], view_on[64], plan[64], p99[64], plain[64], plain99[64];
    struct gang_fig f;

    for (long r = 0; r < rounds; r++) {
        memset(&f, 0, sizeof(f));
        if (gang_round(nodes, pods, 1, &f))
            return 1;
        if (f.placed != (size_t)pods) {
            fprintf(stderr, "only %zu of %ld members planned\n", f.placed, pods);
            return 1;
        }
        view[r] = f.view;
        view_on[r] = f.view_on;
        plan[r] = f.plan;
        p99[r] = f.filter_p99;
        memset(&f, 0, sizeof(f));
        if (gang_round(nodes, pods, 0, &f))
            return 1;
        plain[r] = f.plan;
        plain99[r] = f.filter_p99;
    }
    printf("gang of %ld pods x 8 GPUs on %ld nodes x 8 GPUs (%ld rounds, medians)\n", pods, nodes,
           rounds);
    printf("  build the DRA view (decode, index, pods' claims)  %.1f ms\n",
           bench_median(view, rounds) * 1e3);
    printf("  rebuild after a claim change (devices kept)        %.1f ms\n",
           bench_median(view_on, rounds) * 1e3);
    printf("  gang plan with claims (first member's filter)      %.1f ms\n",
           bench_median(plan, rounds) * 1e3);
    printf("  gang plan without claims (nvidia.com/gpu: 8)       %.1f ms\n",
           bench_median(plain, rounds) * 1e3);
    printf("  ratio with / without claims                        %.2f\n",
           bench_median(plan, rounds) / bench_median(plain, rounds));
    printf("  filter of a planned member, p99: with claims %.3f ms, without %.3f ms\n",
           bench_median(p99, rounds) * 1e3, bench_median(plain99, rounds) * 1e3);
    return 0;
}

int main(int argc, char **argv)
{
    long nodes = 5000, count = 2, rounds = 5, gang = 64;
    double t_dec[64], t_idx[64], t_all[64];
    long fits = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodes") == 0)
            nodes = bench_flag_long(argv[0], argc, argv, &i, 1, 100000);
        else if (strcmp(argv[i], "--count") == 0)
            count = bench_flag_long(argv[0], argc, argv, &i, 1, 8);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = bench_flag_long(argv[0], argc, argv, &i, 1, 64);
        else if (strcmp(argv[i], "--gang") == 0)
            gang = bench_flag_long(argv[0], argc, argv, &i, 0, 1000);
        else {
            fprintf(stderr, "usage: %s [--nodes N] [--count N] [--rounds N] [--gang P]\n", argv[0]);
            return 2;
        }
    }
    for (long r = 0; r < rounds; r++) {
        struct common_arena *a = common_arena_create((size_t)4 << 30);
        struct common_error e;
        struct dra_snapshot snap = {0};
        struct dra_slice *slices = common_arena_alloc(a, (size_t)nodes * sizeof(*slices));
        struct dra_class cls;
        struct dra_claim claim, *busy;
        struct dra_index *ix;
        json_t **docs = calloc((size_t)nodes, sizeof(*docs));
        json_t *cj, *clj;
        double t0;
        const char *expr;
        long n_busy = 0;

        for (long n = 0; n < nodes; n++)
            docs[n] = slice_json(n);
        t0 = now_s();
        for (long n = 0; n < nodes; n++)
            if (dra_slice_decode(a, docs[n], &slices[n], &e) != COMMON_OK) {
                fprintf(stderr, "decode: %s\n", e.msg);
                return 1;
            }
        t_dec[r] = now_s() - t0;
        for (long n = 0; n < nodes; n++)
            json_decref(docs[n]);
        free(docs);

        clj =
            json_pack("{s:{s:s}, s:{s:[{s:{s:s}}]}}", "metadata", "name", "gpu.example.com", "spec",
                      "selectors", "cel", "expression", "device.driver == 'gpu.example.com'");
        expr = ("device.attributes['gpu.example.com'].model == 'H100' && "
                "device.capacity['gpu.example.com'].memory.compareTo("
                "quantity('80Gi')) >= 0");
        cj = json_pack("{s:{s:s, s:s}, s:{s:{s:[{s:s, s:{s:s, s:i, s:[{s:{s:s}}]}}], "
                       "s:[{s:s}]}}}",
                       "metadata", "name", "pod-0-gpus", "namespace", "team", "spec", "devices",
                       "requests", "name", "gpu", "exactly", "deviceClassName", "gpu.example.com",
                       "count", (json_int_t)count, "selectors", "cel", "expression", expr,
                       "constraints", "matchAttribute", "gpu.example.com/clique");
        if (dra_class_decode(a, clj, &cls, &e) || dra_claim_decode(a, cj, &claim, &e)) {
            fprintf(stderr, "decode: %s\n", e.msg);
            return 1;
        }
        json_decref(clj);
        json_decref(cj);

        /* every third node: its first GPU is in use (breaks clique c0) */
        busy = common_arena_alloc(a, (size_t)nodes * sizeof(*busy));
        for (long n = 0; n < nodes; n += 3) {
            struct dra_result *res = common_arena_alloc(a, sizeof(*res));
            res->request = "gpu";
            res->driver = "gpu.example.com";
            res->pool = slices[n].pool;
            res->device = "gpu-0";
            busy[n_busy].allocated = res;
            busy[n_busy].n_allocated = 1;
            busy[n_busy++].is_allocated = 1;
        }
        snap.slices = slices;
        snap.n_slices = (size_t)nodes;
        snap.classes = &cls;
        snap.n_classes = 1;
        snap.allocated = busy;
        snap.n_allocated = (size_t)n_busy;

        t0 = now_s();
        if (dra_index_build(a, &snap, &ix, &e) != COMMON_OK) {
            fprintf(stderr, "index: %s\n", e.msg);
            return 1;
        }
        t_idx[r] = now_s() - t0;
        fits = 0;
        t0 = now_s();
        for (long n = 0; n < nodes; n++) {
            struct dra_claim_alloc out;
            enum common_rc rc =
                dra_allocate_indexed(a, ix, slices[n].node_name, &claim, 1, &out, &e);
            if (rc == COMMON_OK)
                fits++;
            else if (rc != COMMON_ECONFLICT) {
                fprintf(stderr, "allocate: %s\n", e.msg);
                return 1;
            }
        }
        t_all[r] = now_s() - t0;
        common_arena_destroy(a);
    }
    printf("bench_dra: %ld nodes x 8 GPUs, claim for %ld H100 >= 80Gi in one clique, %ld rounds\n",
           nodes, count, rounds);
    printf("  decode %ld ResourceSlices      median %.1f ms\n", nodes,
           bench_median(t_dec, rounds) * 1e3);
    printf("  build the index                median %.2f ms\n", bench_median(t_idx, rounds) * 1e3);
    printf("  allocate on every node         median %.1f ms (%.2f us per node), fits on %ld\n",
           bench_median(t_all, rounds) * 1e3, bench_median(t_all, rounds) * 1e6 / (double)nodes,
           fits);
    if (gang && gang_bench(nodes, gang, rounds))
        return 1;
    printf("run: ./build-rel/bench/bench_dra --nodes %ld --count %ld --rounds %ld --gang %ld\n",
           nodes, count, rounds, gang);
    return 0;
}
