/*
 * bench/bench_pmap.c - the cost of publishing a watch-cache version with common/pmap.
 *
 * For maps of 1k, 10k, 100k and 1M keys ("ns-NNN/pod-NNNNNNN", 100 namespaces), applies
 * ROUNDS batches of 100 changes (90 updates or re-inserts, 10 deletes, at random keys), each
 * followed by publish and a snapshot that is held until the next round, as a reader would.
 * Prints, per size: the time of one batch (100 changes + publish + snapshot) and that time
 * divided by log2 n, which stays roughly flat when the cost grows as log n; the tree nodes
 * built per publish; the time to release the previous snapshot (which frees what only it held);
 * the heap bytes per key (glibc mallinfo2, keys and nodes, items are not counted); and, for
 * contrast, the time of the cheapest O(n) publish: copying an array of n key and item pointers.
 *
 * Run: ./build/bench/bench_pmap [ROUNDS]   (default 1000; build with -DCMAKE_BUILD_TYPE=Release)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "benchutil.h"
#include "common/pmap.h"

#define CHANGES 100
#define KEYLEN 24

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_in_use(void)
{
#ifdef __GLIBC__
    return mallinfo2().uordblks;
#else
    return 0;
#endif
}

static uint64_t rnd_state = 1;

static uint64_t rnd(void)
{
    uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void *item_of(size_t i)
{
    return (void *)(uintptr_t)(i + 1); /* opaque and never dereferenced: no release needed */
}

static int run(size_t n, int rounds)
{
    char(*keys)[KEYLEN] = malloc(n * KEYLEN);
    unsigned char *present = calloc(n, 1);
    double *batch = malloc((size_t)rounds * sizeof(*batch));
    void **flat = malloc(2 * n * sizeof(*flat)), **flat2 = malloc(2 * n * sizeof(*flat2));
    struct common_pmap *m = NULL;
    struct common_pmap_snap *held;
    struct common_pmap_stats st0, st1;
    double t0, t_build, t_release = 0, t_copy, sum = 0;
    size_t heap0, heap1;
    int rc = 1;

    if (!keys || !present || !batch || !flat || !flat2)
        goto out;
    for (size_t i = 0; i < n; i++)
        snprintf(keys[i], KEYLEN, "ns-%03zu/pod-%07zu", i % 100, i);

    heap0 = heap_in_use();
    if (common_pmap_create(NULL, NULL, &m) != COMMON_OK)
        goto out;
    t0 = now();
    for (size_t j = 0; j < n; j++) {
        size_t i = (size_t)(rnd() % n); /* random order, like a list response's hash order */

        if (!present[i] && common_pmap_set(m, keys[i], item_of(i)) != COMMON_OK)
            goto out;
        present[i] = 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!present[i] && common_pmap_set(m, keys[i], item_of(i)) != COMMON_OK)
            goto out;
    memset(present, 1, n);
    if (common_pmap_publish(m) != COMMON_OK)
        goto out;
    t_build = now() - t0;
    heap1 = heap_in_use();
    held = common_pmap_snapshot(m);

    common_pmap_stats(m, &st0);
    for (int r = 0; r < rounds; r++) {
        struct common_pmap_snap *s;
        double t1;

        t0 = now();
        for (int c = 0; c < CHANGES; c++) {
            size_t i = (size_t)(rnd() % n);
            enum common_rc e;

            if (c % 10 == 0 && present[i]) {
                e = common_pmap_del(m, keys[i]);
                present[i] = 0;
            } else {
                e = common_pmap_set(m, keys[i], item_of(i));
                present[i] = 1;
            }
            if (e != COMMON_OK)
                goto out;
        }
        if (common_pmap_publish(m) != COMMON_OK)
            goto out;
        s = common_pmap_snapshot(m);
        t1 = now();
        batch[r] = t1 - t0;
        sum += batch[r];
        common_pmap_snap_release(held);
        t_release += now() - t1;
        held = s;
    }
    common_pmap_stats(m, &st1);
    common_pmap_snap_release(held);

    /* the floor of an O(n) publish: copy n (key, item) pointer pairs */
    for (size_t i = 0; i < n; i++) {
        flat[2 * i] = keys[i];
        flat[2 * i + 1] = item_of(i);
    }
    t0 = now();
    for (int r = 0; r < 10; r++) {
        memcpy(flat2, flat, 2 * n * sizeof(*flat));
        flat[r] = flat2[n - 1 - (size_t)r];
    }
    t_copy = (now() - t0) / 10;

    qsort(batch, (size_t)rounds, sizeof(*batch), bench_cmp_double);
    printf("%8zu %6u %9.1f %9.1f %9.2f %10.1f %9.1f %9.1f %9.1f %9.2f\n", n, st1.height,
           batch[rounds / 2] * 1e6, sum / rounds * 1e6, batch[rounds / 2] * 1e6 / log2((double)n),
           (double)(st1.nodes_created - st0.nodes_created) / rounds, t_release / rounds * 1e6,
           (double)(heap1 - heap0) / (double)n, t_copy * 1e6, t_build);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "bench_pmap: out of memory at n = %zu\n", n);
    common_pmap_destroy(m);
    free(flat2);
    free(flat);
    free(batch);
    free(present);
    free(keys);
    return rc;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1000, 10000, 100000, 1000000};
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
    struct common_pmap_stats st;
    struct common_pmap *m;

    if (rounds < 1 || rounds > 1000000) {
        fprintf(stderr, "usage: bench_pmap [ROUNDS]   (1..1000000, default 1000)\n");
        return 2;
    }
    if (common_pmap_create(NULL, NULL, &m) != COMMON_OK)
        return 1;
    common_pmap_stats(m, &st);
    common_pmap_destroy(m);
    printf("bench_pmap: %ld rounds of %d changes + publish + snapshot per size; node %zu B, "
           "entry %zu B + key\n",
           rounds, CHANGES, st.node_bytes, st.entry_bytes);
    printf("%8s %6s %9s %9s %9s %10s %9s %9s %9s %9s\n", "n", "height", "med_us", "mean_us",
           "us/log2n", "nodes/pub", "free_us", "B/key", "copy_us", "build_s");
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (run(sizes[i], (int)rounds))
            return 1;
    printf("med_us/mean_us: one batch (100 changes + publish + snapshot); free_us: releasing "
           "the previous snapshot;\ncopy_us: copying n pointer pairs, the floor of any O(n) "
           "publish. Reproduce: ./build-pm/bench/bench_pmap %ld\n",
           rounds);
    return 0;
}
