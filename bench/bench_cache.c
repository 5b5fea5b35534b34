/*
 * bench/bench_cache.c - the watch caches (common/informer.h) against a real kube-apiserver that
 * already holds the Nodes and pods of bench_kube (run `bench_kube --keep` first).
 *
 * 1. Memory: common_informer_nodes, then common_informer_pods (all namespaces), each started
 *    and waited for until synced; the process's VmRSS (/proc/self/status) before and after each,
 *    and the live heap (glibc mallinfo2, all arenas), give the growth for the Nodes and for the
 *    pods, and bytes per pod; then the same after malloc_trim (what the list's transient
 *    buffers left behind), and what one cached pod is made of: its decoded block (pod->bytes)
 *    and the map's node, entry and key. Target: under 150 MB for 5,000 Nodes + 50,000 pods.
 * 2. Watch throughput: with the pod informer running, W more pods (default 10,000) are created
 *    from T threads (default 4) through a second client (its own connections, as another
 *    process would have) as fast as the server takes them; the informer's counters are
 *    polled every millisecond until W more events are applied. Reports events per second
 *    applied to the cache, the largest backlog (created but not yet in the cache) and the lag
 *    after the last create, and the CPU time of the informer's thread per event. The API server
 *    is the limit there, so the same W events are then replayed, in the same run, from the
 *    server's watch cache (a protobuf watch from the resourceVersion before the burst) through
 *    what the informer does per event (decode the frame, set in a persistent map of the same
 *    size, publish): the ceiling of the client side.
 * 3. Publish cost against cache size: maps of 1k, 10k and 50k of the real cached pods, 1,000
 *    single-change publishes each (set one key, publish, as the informer does per event):
 *    time per publish and tree nodes built per publish (common_pmap_stats), which grow with
 *    log n, not with n; for contrast, copying an array of n pointers (an O(n) publish).
 *
 * Run: . /tmp/tb-bench/env; ./build-rel/bench/bench_cache [--ns NAME] [--watch-pods W]
 *      [--threads T]                      (scripts/bench-kube.sh runs it after bench_kube --keep)
 */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "benchutil.h"
#include "common/alloc.h"
#include "common/coretypes.h"
#include "common/informer.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/pmap.h"

#define SHARDS 50 /* as bench_kube: trainsched.io/shard=sNN, so its cleanup deletes these too */
#define PUBLISHES 1000
#define MAX_TIDS 256

static struct {
    const char *ns;
    long watch_pods, threads;
} cfg = {"trainsched-bench", 10000, 4};

static struct common_kube *kube;   /* the informers' client */
static struct common_kube *writer; /* the creators' client: another process, in effect */

/* ---- clocks, /proc, heap ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* bytes handed out by malloc, every arena, mmapped chunks included */
static double heap_bytes(void)
{
#ifdef __GLIBC__
    struct mallinfo2 mi = mallinfo2();
    return (double)mi.uordblks + (double)mi.hblkhd;
#else
    return 0;
#endif
}

static void trim(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* the thread ids of this process */
static int tids(long *out, int max)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) && n < max)
        if (e->d_name[0] != '.')
            out[n++] = strtol(e->d_name, NULL, 10);
    closedir(d);
    return n;
}

/* CPU seconds of one thread of this process (-1 if gone) */
static double thread_cpu(long tid)
{
    char path[96], buf[2048], *p;
    FILE *f;
    size_t n;
    unsigned long ut = 0, st = 0;

    snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", tid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU of the test bed's process name ($TESTBED_RUN/pids/NAME.pid), -1 when unknown */
static double bed_cpu(const char *name)
{
    const char *run = getenv("TESTBED_RUN");
    char path[1024], buf[2048], *p;
    FILE *f;
    long pid = 0;
    size_t n;
    unsigned long ut = 0, st = 0;

    if (!run)
        return -1;
    snprintf(path, sizeof(path), "%s/pids/%s.pid", run, name);
    f = fopen(path, "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (pid <= 0 || !(f = fopen(path, "r")))
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double cpu_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void die(const char *what, const struct common_error *err)
{
    fprintf(stderr, "bench_cache: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

/* ---- 1. memory ---- */

struct mem {
    long rss_kb, hwm_kb;
    double heap;
};

static void mem_now(struct mem *m)
{
    m->rss_kb = bench_status_kb("VmRSS");
    m->hwm_kb = bench_status_kb("VmHWM");
    m->heap = heap_bytes();
}

struct walk {
    double obj_bytes, key_bytes;
    long n;
};

static int walk_pod(const char *key, void *item, void *ctx)
{
    struct walk *w = ctx;
    w->obj_bytes += ((const struct common_pod *)item)->bytes;
    w->key_bytes += (double)strlen(key) + 1;
    w->n++;
    return 0;
}

static int walk_node(const char *key, void *item, void *ctx)
{
    struct walk *w = ctx;
    w->obj_bytes += ((const struct common_node *)item)->bytes;
    w->key_bytes += (double)strlen(key) + 1;
    w->n++;
    return 0;
}

static struct common_informer *start_informer(const struct common_informer_ops *ops, double *sync_s)
{
    struct common_informer *inf;
    struct common_error err;
    double t0 = now();

    if (common_informer_create(kube, ops, NULL, NULL, &inf, &err) ||
        common_informer_start(inf, &err))
        die("informer", &err);
    if (!common_informer_wait_synced(inf, 600000)) {
        fprintf(stderr, "bench_cache: the %s informer did not sync in 600 s\n", ops->name);
        exit(1);
    }
    *sync_s = now() - t0;
    return inf;
}

static void print_growth(const char *what, const struct mem *a, const struct mem *b, long n)
{
    printf("  %-22s RSS %+7.1f MB, live heap %+7.1f MB, peak RSS during sync %+7.1f MB;"
           " per object: RSS %5.0f B, heap %5.0f B\n",
           what, (double)(b->rss_kb - a->rss_kb) / 1024.0, (b->heap - a->heap) / 1048576.0,
           (double)(b->hwm_kb - a->rss_kb) / 1024.0,
           n ? 1024.0 * (double)(b->rss_kb - a->rss_kb) / (double)n : 0,
           n ? (b->heap - a->heap) / (double)n : 0);
}

/* ---- 2. watch throughput ---- */

static struct {
    char prefix[32];
    long next, ok, failed;
    char first_err[COMMON_ERROR_MSG_MAX];
    pthread_mutex_t lock;
} burst = {.lock = PTHREAD_MUTEX_INITIALIZER};

static json_t *pod_object(long i)
{
    char name[64], shard[16], job[32];
    snprintf(name, sizeof(name), "%s-%06ld", burst.prefix, i);
    snprintf(shard, sizeof(shard), "s%02ld", i % SHARDS);
    snprintf(job, sizeof(job), "job-%05ld", i / 8);
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}},"
                     " s:{s:s, s:[{s:s, s:s, s:{s:{s:s, s:s}}}]}}",
                     "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "labels", "app",
                     "trainsched-bench", "trainsched.io/shard", shard, "trainsched.io/job", job,
                     "spec", "schedulerName", "nobody", "containers", "name", "main", "image",
                     "registry.k8s.io/pause:3.10", "resources", "requests", "cpu", "500m", "memory",
                     "1Gi");
}

static void *creator(void *arg)
{
    (void)arg;
    for (;;) {
        long i = __atomic_fetch_add(&burst.next, 1, __ATOMIC_RELAXED);
        struct common_error err;
        json_t *obj;
        if (i >= cfg.watch_pods)
            break;
        obj = pod_object(i);
        if (common_kube_create(writer, &common_kube_pods, cfg.ns, obj, NULL, NULL, &err) ==
            COMMON_OK) {
            __atomic_add_fetch(&burst.ok, 1, __ATOMIC_RELAXED);
        } else {
            pthread_mutex_lock(&burst.lock);
            if (burst.failed++ == 0)
                snprintf(burst.first_err, sizeof(burst.first_err), "%s", err.msg);
            pthread_mutex_unlock(&burst.lock);
        }
        json_decref(obj);
    }
    return NULL;
}

/* the replay: what the informer does per pod event, on a map of the same size */
struct replay {
    struct common_pmap *map;
    struct common_pod **pods; /* decoded here, freed at the end (the map does not own items) */
    long n, want, frames;
    double t_first;
    struct common_error err;
    enum common_rc rc;
};

static int replay_event(void *ctx, const char *type, const json_t *obj, const void *raw, size_t len)
{
    struct replay *r = ctx;
    struct common_watch_event ev;
    char key[512];

    (void)type;
    (void)obj;
    if (!raw)
        return 0;
    if (r->frames++ == 0)
        r->t_first = now();
    r->rc = common_watch_decode_frame(raw, len, COMMON_KIND_POD, &ev, &r->err);
    if (r->rc)
        return 1;
    if (ev.pod && (ev.type == COMMON_WATCH_ADDED || ev.type == COMMON_WATCH_MODIFIED)) {
        snprintf(key, sizeof(key), "%s/%s", ev.pod->namespace, ev.pod->name);
        (void)common_pmap_get(r->map, key); /* the informer compares resourceVersions */
        if (common_pmap_set(r->map, key, ev.pod) || common_pmap_publish(r->map)) {
            r->rc = COMMON_ENOMEM;
            common_watch_event_clear(&ev);
            return 1;
        }
        r->pods[r->n++] = ev.pod;
        ev.pod = NULL;
    }
    common_watch_event_clear(&ev);
    return r->n >= r->want;
}

static int add_to_map(const char *key, void *item, void *ctx)
{
    return common_pmap_set(ctx, key, item) != COMMON_OK;
}

static void watch_throughput(struct common_informer *pods, long pod_tid)
{
    struct common_informer_stats st0, st;
    struct common_pmap_snap *before = common_informer_snapshot(pods);
    pthread_t th[64];
    long threads = cfg.threads > 64 ? 64 : cfg.threads, max_backlog = 0, applied = 0;
    double t0, t_created = 0, t_applied = 0, cpu0, cpu1, srv0, srv1, self0, self1, etcd0, etcd1, m0,
               m1;
    char rv0[128];

    printf("\nwatch throughput: %ld pods created from %ld threads while the pod informer runs "
           "(cache holds %zu pods)\n",
           cfg.watch_pods, threads, common_pmap_snap_size(before));
    common_informer_last_rv(pods, rv0, sizeof(rv0));
    common_informer_stats(pods, &st0);
    cpu0 = pod_tid ? thread_cpu(pod_tid) : -1;
    srv0 = bed_cpu("kube-apiserver");
    etcd0 = bed_cpu("etcd");
    m0 = bench_machine_busy();
    self0 = cpu_self();
    t0 = now();
    for (long t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, creator, NULL);
    for (;;) {
        long created = __atomic_load_n(&burst.ok, __ATOMIC_RELAXED);
        long done = __atomic_load_n(&burst.next, __ATOMIC_RELAXED) >= cfg.watch_pods + threads;
        common_informer_stats(pods, &st);
        applied = (long)(st.events - st0.events);
        if (created - applied > max_backlog)
            max_backlog = created - applied;
        if (done && !t_created)
            t_created = now();
        if (applied >= cfg.watch_pods - burst.failed && done) {
            t_applied = now();
            break;
        }
        if (now() - t0 > 600) {
            printf("  gave up after 600 s: %ld events applied, %ld created\n", applied, created);
            break;
        }
        usleep(1000);
    }
    self1 = cpu_self();
    srv1 = bed_cpu("kube-apiserver");
    etcd1 = bed_cpu("etcd");
    m1 = bench_machine_busy();
    cpu1 = pod_tid ? thread_cpu(pod_tid) : -1;
    for (long t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    if (burst.failed)
        printf("  %ld creates failed: %s\n", burst.failed, burst.first_err);
    if (t_applied) {
        printf("  created: %ld pods in %.2f s = %.0f pods/s\n", burst.ok, t_created - t0,
               (double)burst.ok / (t_created - t0));
        printf("  applied to the cache: %ld events in %.2f s = %.0f events/s; largest backlog %ld "
               "events; last event in the cache %.0f ms after the last create returned\n",
               applied, t_applied - t0, (double)applied / (t_applied - t0), max_backlog,
               1000.0 * (t_applied - t_created));
        if (cpu0 >= 0 && cpu1 >= 0)
            printf("  informer thread CPU: %.2f s = %.0f us per event (%.0f%% of one core while "
                   "the burst lasted)\n",
                   cpu1 - cpu0, 1e6 * (cpu1 - cpu0) / (double)applied,
                   100.0 * (cpu1 - cpu0) / (t_applied - t0));
        if (srv0 >= 0) {
            double w = t_applied - t0;
            printf("  CPU busy meanwhile (cores): kube-apiserver %.2f, etcd %.2f, this process "
                   "%.2f (creators + informers); whole machine %.2f of %ld (other processes "
                   "%.2f)\n",
                   (srv1 - srv0) / w, (etcd1 - etcd0) / w, (self1 - self0) / w, (m1 - m0) / w,
                   sysconf(_SC_NPROCESSORS_ONLN),
                   (m1 - m0 - (srv1 - srv0) - (etcd1 - etcd0) - (self1 - self0)) / w);
        }
    }

    /* the same events again, from the server's watch cache, through the informer's per-event
     * work: how fast the client side goes when the server is not the limit */
    {
        struct replay r;
        struct common_kube_watch_opts wo;
        struct common_pmap_stats ps0, ps1;
        struct common_error err;
        enum common_rc rc;
        double t1, t2, c1, c2;

        memset(&r, 0, sizeof(r));
        r.want = applied;
        r.pods = calloc((size_t)(applied + 1), sizeof(*r.pods));
        if (common_pmap_create(NULL, NULL, &r.map) ||
            common_pmap_snap_foreach(before, add_to_map, r.map) || common_pmap_publish(r.map)) {
            fprintf(stderr, "bench_cache: out of memory\n");
            exit(1);
        }
        common_pmap_stats(r.map, &ps0);
        memset(&wo, 0, sizeof(wo));
        wo.resource_version = rv0;
        wo.timeout_seconds = 120;
        wo.protobuf = 1;
        t1 = now();
        c1 = cpu_self();
        rc = common_kube_watch(kube, &common_kube_pods, NULL, &wo, replay_event, &r, &err);
        t2 = now();
        c2 = cpu_self();
        common_pmap_stats(r.map, &ps1);
        if (rc || r.rc) {
            printf("  replay from resourceVersion %s failed: %s\n", rv0, rc ? err.msg : r.err.msg);
        } else if (r.n < r.want) {
            printf("  replay ended after %ld of %ld events\n", r.n, r.want);
        } else {
            printf("  replay of the same %ld events from the server's watch cache (protobuf watch "
                   "from the resourceVersion before the burst; decode + map set + publish per "
                   "event): %.3f s = %.0f events/s (%.0f events/s from the first frame; this "
                   "process's CPU %.0f us per event), %.1f tree nodes built per publish at %zu "
                   "keys\n",
                   r.n, t2 - t1, (double)r.n / (t2 - t1), (double)r.n / (t2 - r.t_first),
                   1e6 * (c2 - c1) / (double)r.n,
                   (double)(ps1.nodes_created - ps0.nodes_created) / (double)r.n, ps1.size);
            printf("  ratio replay/live: %.1fx (live is bounded by how fast the server creates "
                   "pods)\n",
                   ((double)r.n / (t2 - t1)) / ((double)applied / (t_applied - t0)));
        }
        common_pmap_destroy(r.map);
        for (long i = 0; i < r.n; i++)
            common_pod_free(r.pods[i]);
        free(r.pods);
    }
    common_pmap_snap_release(before);
}

/* ---- 3. publish cost against size ---- */

struct kv {
    const char **keys;
    void **items;
    long n;
};

static int collect(const char *key, void *item, void *ctx)
{
    struct kv *kv = ctx;
    kv->keys[kv->n] = key;
    kv->items[kv->n] = item;
    kv->n++;
    return 0;
}

static uint64_t rnd_state = 7;

static uint64_t rnd(void)
{
    uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void publish_cost(struct common_informer *pods)
{
    static const long sizes[] = {1000, 10000, 50000};
    struct common_pmap_snap *snap = common_informer_snapshot(pods);
    struct kv all;
    static double t[PUBLISHES], tc[PUBLISHES];

    all.n = 0;
    all.keys = calloc(common_pmap_snap_size(snap) + 1, sizeof(*all.keys));
    all.items = calloc(common_pmap_snap_size(snap) + 1, sizeof(*all.items));
    common_pmap_snap_foreach(snap, collect, &all);
    printf("\npublish cost against cache size: %d publishes of one changed pod each (set + "
           "publish, as the informer does per event), real cached pods\n",
           PUBLISHES);
    printf("  %8s %6s %14s %12s %12s %16s %18s\n", "keys", "height", "nodes/publish", "us/publish",
           "us mean", "us / log2(n)", "O(n) array copy us");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        long n = sizes[s] < all.n ? sizes[s] : all.n;
        struct common_pmap *m;
        struct common_pmap_stats a, b;
        const char **keys = calloc((size_t)n, sizeof(*keys));
        void **items = calloc((size_t)n, sizeof(*items));
        void **copy = malloc((size_t)n * 2 * sizeof(void *));
        double mean = 0;
        long k = 0;

        if (n < sizes[s])
            printf("  (only %ld pods cached)\n", all.n);
        if (common_pmap_create(NULL, NULL, &m)) {
            fprintf(stderr, "bench_cache: out of memory\n");
            exit(1);
        }
        /* n keys spread over the whole key range */
        for (long i = 0; i < n; i++) {
            long j = (long)((double)i * (double)all.n / (double)n);
            keys[k] = all.keys[j];
            items[k++] = all.items[j];
            if (common_pmap_set(m, all.keys[j], all.items[j])) {
                fprintf(stderr, "bench_cache: out of memory\n");
                exit(1);
            }
        }
        common_pmap_publish(m);
        common_pmap_stats(m, &a);
        for (int i = 0; i < PUBLISHES; i++) {
            long j = (long)(rnd() % (uint64_t)n);
            double t0 = now();
            /* an update of a pod (MODIFIED) */
            if (common_pmap_set(m, keys[j], items[j]) || common_pmap_publish(m)) {
                fprintf(stderr, "bench_cache: out of memory\n");
                exit(1);
            }
            t[i] = now() - t0;
            mean += t[i] / PUBLISHES;
        }
        common_pmap_stats(m, &b);
        for (int i = 0; i < PUBLISHES; i++) {
            double t0 = now();
            for (long x = 0; x < n; x++) {
                copy[2 * x] = (void *)keys[x];
                copy[2 * x + 1] = items[x];
            }
            __asm__ volatile("" : : "r"(copy) : "memory");
            tc[i] = now() - t0;
        }
        qsort(t, PUBLISHES, sizeof(double), bench_cmp_double);
        qsort(tc, PUBLISHES, sizeof(double), bench_cmp_double);
        printf("  %8ld %6u %14.1f %12.2f %12.2f %16.3f %18.1f\n", n, b.height,
               (double)(b.nodes_created - a.nodes_created) / PUBLISHES, 1e6 * t[PUBLISHES / 2],
               1e6 * mean, 1e6 * t[PUBLISHES / 2] / log2((double)n), 1e6 * tc[PUBLISHES / 2]);
        common_pmap_destroy(m);
        free(keys);
        free(items);
        free(copy);
    }
    printf("  (us/publish = median; nodes/publish from common_pmap_stats: the path copied from "
           "the published version, about the height)\n");
    free(all.keys);
    free(all.items);
    common_pmap_snap_release(snap);
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    struct common_kubeconfig kc;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;
    struct common_informer *nodes, *pods;
    struct common_informer_stats sn, sp;
    struct mem m0, m1, m2, m3;
    struct walk wn = {0, 0, 0}, wp = {0, 0, 0};
    struct common_pmap_snap *snap;
    struct common_pmap *probe;
    struct common_pmap_stats ps;
    double sync_nodes, sync_pods;
    long before[MAX_TIDS], after[MAX_TIDS], pod_tid = 0;
    int nb, na;
    json_t *ns = NULL;

    common_alloc_init();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--watch-pods") == 0)
            cfg.watch_pods = bench_flag_long("bench_cache", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--threads") == 0)
            cfg.threads = bench_flag_long("bench_cache", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--ns") == 0 && i + 1 < argc)
            cfg.ns = argv[++i];
        else {
            fprintf(stderr, "usage: bench_cache [--ns NAME] [--watch-pods W] [--threads T]\n"
                            "  needs KUBECONFIG and the objects of `bench_kube --keep`\n");
            return 2;
        }
    }
    if (cfg.threads < 1)
        cfg.threads = 1;
    snprintf(burst.prefix, sizeof(burst.prefix), "bw%05ld", (long)time(NULL) % 100000);

    memset(&kc, 0, sizeof(kc));
    if (common_kubeconfig_load(NULL, NULL, &kc, &err))
        die("kubeconfig", &err);
    o.qps = 1e9;
    o.burst = 1000000;
    o.timeout_ms = 300000;
    kube = common_kube_client_create(&kc, &o, &err);
    writer = kube ? common_kube_client_create(&kc, &o, &err) : NULL;
    common_kubeconfig_free(&kc);
    if (!writer)
        die("client", &err);
    /* warm up TLS and the connection cache before the baseline; the namespace must exist */
    if (common_kube_get(kube, &common_kube_namespaces, NULL, cfg.ns, &ns, &err))
        die("namespace (run bench_kube --keep first)", &err);
    json_decref(ns);

    printf("bench_cache: server %s, %ld cores\n", getenv("KUBECONFIG"),
           sysconf(_SC_NPROCESSORS_ONLN));
    printf("\nmemory of the watch caches (informers over protobuf, all namespaces):\n");
    trim();
    bench_reset_peak();
    mem_now(&m0);
    nodes = start_informer(&common_informer_nodes, &sync_nodes);
    mem_now(&m1);
    bench_reset_peak();
    m1.rss_kb = bench_status_kb("VmRSS");
    nb = tids(before, MAX_TIDS);
    pods = start_informer(&common_informer_pods, &sync_pods);
    mem_now(&m2);
    na = tids(after, MAX_TIDS);
    for (int i = 0; i < na; i++) {
        int old = 0;
        for (int j = 0; j < nb; j++)
            old |= after[i] == before[j];
        if (!old)
            pod_tid = after[i];
    }
    common_informer_stats(nodes, &sn);
    common_informer_stats(pods, &sp);
    snap = common_informer_snapshot(nodes);
    common_pmap_snap_foreach(snap, walk_node, &wn);
    common_pmap_snap_release(snap);
    snap = common_informer_snapshot(pods);
    common_pmap_snap_foreach(snap, walk_pod, &wp);
    common_pmap_snap_release(snap);
    printf("  synced: %zu Nodes in %.2f s, %zu pods in %.2f s (%.0f pods/s: list pages of 500 "
           "over protobuf, decode, insert)\n",
           sn.size, sync_nodes, sp.size, sync_pods, (double)sp.size / sync_pods);
    print_growth("Nodes:", &m0, &m1, (long)sn.size);
    print_growth("pods:", &m1, &m2, (long)sp.size);
    {
        struct mem total = m2;
        total.hwm_kb = m2.hwm_kb > m1.hwm_kb ? m2.hwm_kb : m1.hwm_kb;
        print_growth("Nodes + pods:", &m0, &total, (long)(sn.size + sp.size));
        printf("  => RSS growth for %zu Nodes + %zu pods: %.1f MB (target: under 150 MB): %s\n",
               sn.size, sp.size, (double)(m2.rss_kb - m0.rss_kb) / 1024.0,
               (double)(m2.rss_kb - m0.rss_kb) / 1024.0 < 150 ? "met" : "NOT met");
    }
    trim();
    mem_now(&m3);
    printf("  after malloc_trim(0): RSS growth %.1f MB, live heap %.1f MB (the list's transient "
           "buffers returned)\n",
           (double)(m3.rss_kb - m0.rss_kb) / 1024.0, (m3.heap - m0.heap) / 1048576.0);
    common_pmap_create(NULL, NULL, &probe);
    common_pmap_stats(probe, &ps);
    common_pmap_destroy(probe);
    if (wp.n)
        printf("  one cached pod: decoded block %.0f B + key %.0f B + map entry %zu B + tree "
               "node %zu B = %.0f B before malloc's per-block overhead (heap measured: %.0f "
               "B)\n",
               wp.obj_bytes / (double)wp.n, wp.key_bytes / (double)wp.n, ps.entry_bytes,
               ps.node_bytes,
               (wp.obj_bytes + wp.key_bytes) / (double)wp.n + (double)ps.entry_bytes +
                   (double)ps.node_bytes,
               (m2.heap - m1.heap) / (double)wp.n);
    if (wn.n)
        printf("  one cached Node: decoded block %.0f B + key %.0f B + entry + node (heap "
               "measured: %.0f B)\n",
               wn.obj_bytes / (double)wn.n, wn.key_bytes / (double)wn.n,
               (m1.heap - m0.heap) / (double)wn.n);
    fflush(stdout);

    if (cfg.watch_pods > 0)
        watch_throughput(pods, pod_tid);
    fflush(stdout);
    publish_cost(pods);

    common_informer_stats(nodes, &sn);
    common_informer_stats(pods, &sp);
    printf("\ninformer counters: pods lists %llu watches %llu events %llu errors %llu size %zu; "
           "nodes lists %llu watches %llu errors %llu size %zu\n",
           (unsigned long long)sp.lists, (unsigned long long)sp.watches,
           (unsigned long long)sp.events, (unsigned long long)sp.errors, sp.size,
           (unsigned long long)sn.lists, (unsigned long long)sn.watches,
           (unsigned long long)sn.errors, sn.size);
    common_informer_destroy(pods);
    common_informer_destroy(nodes);
    common_kube_client_destroy(writer);
    common_kube_client_destroy(kube);
    printf("\ncommand: . $TESTBED_RUN/env; %s --ns %s --watch-pods %ld --threads %ld   (after "
           "bench_kube --keep)\n",
           argv[0], cfg.ns, cfg.watch_pods, cfg.threads);
    return 0;
}
