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
 * Run: ./build-rel/bench/bench_dra [--nodes N] [--count N] [--rounds N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "common/arena.h"
#include "dra/dra.h"

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

int main(int argc, char **argv)
{
    long nodes = 5000, count = 2, rounds = 5;
    double t_dec[64], t_idx[64], t_all[64];
    long fits = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodes") == 0)
            nodes = bench_flag_long(argv[0], argc, argv, &i, 1, 100000);
        else if (strcmp(argv[i], "--count") == 0)
            count = bench_flag_long(argv[0], argc, argv, &i, 1, 8);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = bench_flag_long(argv[0], argc, argv, &i, 1, 64);
        else {
            fprintf(stderr, "usage: %s [--nodes N] [--count N] [--rounds N]\n", argv[0]);
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
    printf("run: ./build-rel/bench/bench_dra --nodes %ld --count %ld --rounds %ld\n", nodes, count,
           rounds);
    return 0;
}
