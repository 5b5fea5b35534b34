/*
 * bench/bench_kube.c - the Kubernetes client against a real kube-apiserver (the test bed of
 * tests/e2e/testbed): creating objects, and listing and decoding 50,000 pods as JSON and as
 * protobuf, side by side in one run.
 *
 * 1. Setup: a namespace with its default ServiceAccount, N Nodes (capacity, allocatable, a
 *    Ready condition, six labels; default 5,000) and P pods (default 50,000: schedulerName
 *    "nobody" so nothing binds them, three labels, one container with cpu and memory
 *    requests), created with common_kube_create: the first 1,000 pods from one thread (the
 *    latency of one create), 2,000 from 8 threads (more than the 5 connections libcurl keeps:
 *    see docs/benchmarks-kube.md), the rest from T threads (default 4). Reports objects per
 *    second and the CPU seconds kube-apiserver, etcd, kube-scheduler, this client and the
 *    whole machine spent (from /proc), which shows where the limit is.
 * 2. Lists: R rounds (default 5) of three ways to list and decode every pod of the namespace
 *    in pages of 500, the order rotated each round:
 *      json-list  common_kube_list (pages gathered into one JSON array), then
 *                 common_pod_from_json per item: what a JSON client of our API does;
 *      json-page  GET each page as JSON, json_loadb, common_pod_from_json per item, page
 *                 dropped before the next (the same bytes, without holding the whole list);
 *      protobuf   GET each page with Accept: application/vnd.kubernetes.protobuf and
 *                 common_pod_list_from_protobuf (each item handed over as it is decoded).
 *    For each: wall seconds (median and best of the rounds), its split into GET (server +
 *    transfer; for json-list also the jansson parse) and client-side parse/decode, the CPU
 *    seconds of this process, kube-apiserver and etcd, response bytes (uncompressed: the client
 *    does not ask for gzip) and the peak RSS growth; the API server's own counters (GET
 *    /metrics) say where it served the pages from. Then the ratios JSON/protobuf. Every
 *    variant must decode the same pods with the same requests (a checksum is compared).
 *    Then protobuf lists with pages of 500, 5,000 and unpaged: what the page size costs the
 *    server (its watch cache walks every object from the continue key on, for each page).
 * 3. Cleanup (unless --keep): pods deleted by label shard (deletecollection, T at a time),
 *    Nodes likewise, the ServiceAccount and the namespace (finalized by hand when no namespace
 *    controller runs, as with TESTBED_KCM=0).
 *
 * Objects that already exist are counted, not recreated, so a run can resume on a bed that
 * holds them. --keep leaves them for bench_cache; --cleanup only cleans up.
 *
 * Run: . /tmp/tb-bench/env; ./build-rel/bench/bench_kube [--pods P] [--nodes N] [--threads T]
 *      [--rounds R] [--page N] [--ns NAME] [--keep | --cleanup]
 *      (scripts/bench-kube.sh does it all)
 */
#include <jansson.h>
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
#else
#define malloc_trim(x) ((void)0)
#endif

#include "benchutil.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/coretypes.h"
#include "common/kube.h"
#include "common/kubeconfig.h"

#define SHARDS 50      /* pods carry trainsched.io/shard=sNN: deletion in parallel chunks */
#define NODE_SHARDS 10 /* nodes carry trainsched-bench-shard=sNN */
#define SERIAL_PODS 1000
#define CLIFF_PODS 2000 /* created from CLIFF_THREADS threads, when --threads is fewer */
#define CLIFF_THREADS 8
#define NVARIANTS 3

static struct {
    const char *ns;
    long pods, nodes, threads, rounds, page;
    int keep, cleanup_only;
} cfg = {"trainsched-bench", 50000, 5000, 4, 5, 500, 0, 0};

static struct common_kube *kube;

/* ---- clocks, /proc ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* CPU of the server side: kube-apiserver, etcd, kube-scheduler (which watches every pod) */
enum { P_APISERVER, P_ETCD, P_SCHEDULER, NPROCS };
static const char *const proc_names[NPROCS] = {"kube-apiserver", "etcd", "kube-scheduler"};
static long proc_pids[NPROCS];

struct cpu_mark {
    double wall, self, procs[NPROCS], machine;
};

static void mark(struct cpu_mark *m)
{
    m->wall = now();
    m->self = cpu_self();
    m->machine = bench_machine_busy();
    for (int i = 0; i < NPROCS; i++)
        m->procs[i] = bench_proc_cpu(proc_pids[i]);
}

/* "kube-apiserver 1.52 cores, etcd 0.31, kube-scheduler 0.05, this client 0.20" */
static void print_cores(const char *indent, const struct cpu_mark *a, const struct cpu_mark *b)
{
    double w = b->wall - a->wall, ours = b->self - a->self;
    printf("%sCPU used (cores busy):", indent);
    for (int i = 0; i < NPROCS; i++)
        if (a->procs[i] >= 0 && b->procs[i] >= 0) {
            printf(" %s %.2f,", proc_names[i], (b->procs[i] - a->procs[i]) / w);
            ours += b->procs[i] - a->procs[i];
        }
    printf(" this client %.2f; whole machine %.2f of %ld (other processes %.2f)\n",
           (b->self - a->self) / w, (b->machine - a->machine) / w, sysconf(_SC_NPROCESSORS_ONLN),
           (b->machine - a->machine - ours) / w);
}

static void die(const char *what, const struct common_error *err)
{
    fprintf(stderr, "bench_kube: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

/* The API server's own counters of the pod lists it served (GET /metrics): how many were
 * served from the watch cache and how many objects it walked for them. -1 when unavailable. */
struct list_metrics {
    double cache_lists, cache_fetched, storage_lists;
};

static double metric_sum(const char *text, const char *name)
{
    size_t n = strlen(name);
    double sum = -1;

    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *end = strchr(l, '\n'), *sp;
        char labels[512];
        if (strncmp(l, name, n) != 0 || l[n] != '{')
            continue;
        sp = strchr(l, '}');
        if (!sp || (end && sp > end))
            continue;
        if ((size_t)(sp - l) >= sizeof(labels))
            continue;
        memcpy(labels, l, (size_t)(sp - l));
        labels[sp - l] = '\0';
        if (!strstr(labels, "resource=\"pods\""))
            continue;
        sum = (sum < 0 ? 0 : sum) + strtod(sp + 1, NULL);
    }
    return sum;
}

static void list_metrics(struct list_metrics *m)
{
    struct common_buf body;
    struct common_error err;
    long status;

    m->cache_lists = m->cache_fetched = m->storage_lists = -1;
    common_buf_init(&body, (size_t)64 << 20);
    if (common_kube_request(kube, "GET", "/metrics", NULL, NULL, 0, "text/plain", &body, &status,
                            &err) == COMMON_OK &&
        body.data) {
        m->cache_lists = metric_sum(body.data, "apiserver_cache_list_total");
        m->cache_fetched = metric_sum(body.data, "apiserver_cache_list_fetched_objects_total");
        m->storage_lists = metric_sum(body.data, "apiserver_storage_list_total");
    }
    common_buf_free(&body);
}

/* ---- objects ---- */

static json_t *pod_object(const char *prefix, long i)
{
    char name[64], shard[16], job[32];
    snprintf(name, sizeof(name), "%s-%06ld", prefix, i);
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

static json_t *resources(const char *cpu, const char *mem, const char *eph)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "cpu", cpu, "memory", mem, "pods", "110",
                     "ephemeral-storage", eph, "nvidia.com/gpu", "8");
}

static json_t *node_status(void)
{
    return json_pack("{s:o, s:o, s:[{s:s, s:s, s:s, s:s}]}", "capacity",
                     resources("64", "512Gi", "1Ti"), "allocatable",
                     resources("63500m", "500Gi", "900Gi"), "conditions", "type", "Ready", "status",
                     "True", "reason", "KubeletReady", "message", "bench node");
}

static json_t *node_object(long i)
{
    char name[64], shard[16], zone[16];
    snprintf(name, sizeof(name), "bench-node-%05ld", i);
    snprintf(shard, sizeof(shard), "s%02ld", i % NODE_SHARDS);
    snprintf(zone, sizeof(zone), "zone-%c", (char)('a' + i % 4));
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s}}, s:o}", "apiVersion",
                     "v1", "kind", "Node", "metadata", "name", name, "labels", "trainsched-bench",
                     "kube", "trainsched-bench-shard", shard, "kubernetes.io/hostname", name,
                     "kubernetes.io/os", "linux", "topology.kubernetes.io/zone", zone,
                     "node.kubernetes.io/instance-type", "gpu-8x", "status", node_status());
}

/* ---- many requests from several threads ---- */

struct par {
    long from, to;
    long next;
    long ok, exists, failed;
    enum common_rc (*one)(long i, struct common_error *err);
    pthread_mutex_t lock;
    char first_err[COMMON_ERROR_MSG_MAX];
};

static void *par_worker(void *arg)
{
    struct par *p = arg;
    for (;;) {
        long i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        struct common_error err;
        enum common_rc rc;
        if (i >= p->to)
            break;
        rc = p->one(i, &err);
        if (rc == COMMON_OK) {
            __atomic_add_fetch(&p->ok, 1, __ATOMIC_RELAXED);
        } else if (rc == COMMON_EEXISTS) {
            __atomic_add_fetch(&p->exists, 1, __ATOMIC_RELAXED);
        } else {
            pthread_mutex_lock(&p->lock);
            if (p->failed++ == 0)
                snprintf(p->first_err, sizeof(p->first_err), "%s", err.msg);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

/* run one(i) for i in [from, to) on threads threads; returns the wall seconds */
static double run_parallel(struct par *p, long from, long to, long threads,
                           enum common_rc (*one)(long, struct common_error *))
{
    pthread_t th[64];
    double t0 = now();

    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
    p->from = p->next = from;
    p->to = to;
    p->one = one;
    if (threads > 64)
        threads = 64;
    for (long t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, par_worker, p);
    for (long t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&p->lock);
    return now() - t0;
}

static enum common_rc create_pod(long i, struct common_error *err)
{
    json_t *obj = pod_object("bp", i);
    enum common_rc rc = common_kube_create(kube, &common_kube_pods, cfg.ns, obj, NULL, NULL, err);
    json_decref(obj);
    return rc;
}

static int node_status_patch; /* the server dropped status on create: write it as well */

static enum common_rc create_node(long i, struct common_error *err)
{
    json_t *obj = node_object(i);
    enum common_rc rc = common_kube_create(kube, &common_kube_nodes, NULL, obj, NULL, NULL, err);
    if ((rc == COMMON_OK || rc == COMMON_EEXISTS) && node_status_patch) {
        json_t *st = json_pack("{s:O}", "status", json_object_get(obj, "status"));
        char *body = json_dumps(st, JSON_COMPACT);
        struct common_kube_write_opts wo = {.subresource = "status"};
        enum common_rc prc = common_kube_patch(
            kube, &common_kube_nodes, NULL,
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")),
            COMMON_KUBE_MERGE_PATCH, body, &wo, NULL, err);
        free(body);
        json_decref(st);
        if (prc)
            rc = prc;
    }
    json_decref(obj);
    return rc;
}

static void report_par(const char *what, const struct par *p, double secs, long threads,
                       const struct cpu_mark *a, const struct cpu_mark *b)
{
    long n = p->to - p->from;
    printf("  %-34s %6ld in %7.2f s = %7.0f /s with %ld thread%s", what, n, secs,
           (double)p->ok / secs, threads, threads == 1 ? "" : "s");
    if (p->ok)
        printf(" (%.2f ms each)", 1000.0 * secs * (double)threads / (double)n);
    printf("\n");
    if (p->exists || p->failed)
        printf("    created %ld, already there %ld, failed %ld%s%s\n", p->ok, p->exists, p->failed,
               p->failed ? ": " : "", p->first_err);
    if (a && b)
        print_cores("    ", a, b);
    if (a && b && p->ok && a->procs[P_APISERVER] >= 0)
        printf("    per object: kube-apiserver %.0f us CPU, etcd %.0f us, this client %.0f us\n",
               1e6 * (b->procs[P_APISERVER] - a->procs[P_APISERVER]) / (double)p->ok,
               1e6 * (b->procs[P_ETCD] - a->procs[P_ETCD]) / (double)p->ok,
               1e6 * (b->self - a->self) / (double)p->ok);
}

static void ensure_namespace(void)
{
    struct common_error err;
    static const struct common_kube_resource sa = {"", "v1", "serviceaccounts", 1};
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                            "metadata", "name", cfg.ns);
    enum common_rc rc =
        common_kube_create(kube, &common_kube_namespaces, NULL, obj, NULL, NULL, &err);
    json_decref(obj);
    if (rc && rc != COMMON_EEXISTS)
        die("create namespace", &err);
    /* the ServiceAccount admission plugin wants "default"; without a controller-manager
     * nobody else makes it */
    obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata",
                    "name", "default");
    rc = common_kube_create(kube, &sa, cfg.ns, obj, NULL, NULL, &err);
    json_decref(obj);
    if (rc && rc != COMMON_EEXISTS)
        die("create ServiceAccount", &err);
}

static void setup(void)
{
    struct par p;
    struct cpu_mark a, b;
    struct common_error err;
    double secs;
    long serial = cfg.pods < SERIAL_PODS ? cfg.pods : SERIAL_PODS;

    printf("setup: %ld Nodes, %ld pods in namespace %s\n", cfg.nodes, cfg.pods, cfg.ns);
    ensure_namespace();

    /* does the server keep status on create? (then one request per node, else two) */
    if (cfg.nodes > 0) {
        json_t *obj = node_object(0), *out = NULL;
        enum common_rc rc =
            common_kube_create(kube, &common_kube_nodes, NULL, obj, NULL, &out, &err);
        json_decref(obj);
        if (rc == COMMON_EEXISTS)
            rc = common_kube_get(kube, &common_kube_nodes, NULL, "bench-node-00000", &out, &err);
        if (rc)
            die("create the first Node", &err);
        node_status_patch =
            json_object_size(json_object_get(json_object_get(out, "status"), "allocatable")) == 0;
        json_decref(out);
        mark(&a);
        secs = run_parallel(&p, node_status_patch ? 0 : 1, cfg.nodes, cfg.threads, create_node);
        mark(&b);
        report_par(node_status_patch ? "Nodes (create + status patch):" : "Nodes (create):", &p,
                   secs, cfg.threads, &a, &b);
    }
    mark(&a);
    secs = run_parallel(&p, 0, serial, 1, create_pod);
    mark(&b);
    report_par("pods, one at a time:", &p, secs, 1, &a, &b);
    if (cfg.threads < CLIFF_THREADS && cfg.pods >= serial + 4 * CLIFF_PODS) {
        /* more threads than libcurl keeps connections for (5 by default): see the docs */
        mark(&a);
        secs = run_parallel(&p, serial, serial + CLIFF_PODS, CLIFF_THREADS, create_pod);
        mark(&b);
        report_par("pods, concurrently:", &p, secs, CLIFF_THREADS, &a, &b);
        serial += CLIFF_PODS;
    }
    if (cfg.pods > serial) {
        mark(&a);
        secs = run_parallel(&p, serial, cfg.pods, cfg.threads, create_pod);
        mark(&b);
        report_par("pods, concurrently:", &p, secs, cfg.threads, &a, &b);
    }
}

/* ---- listing ---- */

struct sums {
    long items;
    int64_t milli_cpu, memory;
    uint64_t names; /* a hash of the names, order-independent */
};

static void account(struct sums *s, const struct common_pod *p)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = p->name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    s->items++;
    s->milli_cpu += p->requests.milli_cpu;
    s->memory += p->requests.memory;
    s->names += h;
}

static struct sums reference; /* what every list must decode */

struct result {
    double wall, get, decode, self_cpu, server_cpu, apiserver_cpu, etcd_cpu;
    double cache_lists, cache_fetched, storage_lists;
    size_t bytes;
    long pages, peak_kb;
    struct sums sums;
};

static long page_limit; /* the page size of json-page and protobuf; 0 = one unpaged list */

static void list_path(char *path, size_t size, const char *cont)
{
    size_t len;

    common_kube_path(&common_kube_pods, cfg.ns, NULL, NULL, path, size);
    len = strlen(path);
    if (page_limit > 0)
        snprintf(path + len, size - len, "?limit=%ld", page_limit);
    if (cont && *cont) {
        char *esc = common_kube_escape(cont);
        len = strlen(path);
        snprintf(path + len, size - len, "&continue=%s", esc);
        common_free(esc);
    }
}

/* json-list: common_kube_list, then decode every item */
static void run_json_list(struct result *r)
{
    struct common_kube_list_opts lo = {.limit = cfg.page};
    struct common_error err;
    json_t *items = NULL, *it;
    size_t i;
    double t0 = now(), t1;

    if (common_kube_list(kube, &common_kube_pods, cfg.ns, &lo, &items, NULL, &err))
        die("common_kube_list", &err);
    t1 = now();
    r->get = t1 - t0;
    json_array_foreach(items, i, it)
    {
        struct common_pod *p;
        if (common_pod_from_json(it, &p, &err))
            die("common_pod_from_json", &err);
        account(&r->sums, p);
        common_pod_free(p);
    }
    json_decref(items);
    r->decode = now() - t1;
    r->pages = (r->sums.items + cfg.page - 1) / cfg.page;
}

/* json-page: GET a page, parse, decode, drop; next page */
static void run_json_page(struct result *r)
{
    struct common_buf body;
    struct common_error err;
    char path[8192], *cont = NULL;
    long status;

    common_buf_init(&body, (size_t)1 << 30);
    do {
        double t0 = now(), t1;
        json_t *page, *it;
        json_error_t je;
        const char *c;
        size_t i;

        list_path(path, sizeof(path), cont);
        if (common_kube_request(kube, "GET", path, NULL, NULL, 0, "application/json", &body,
                                &status, &err))
            die("GET json page", &err);
        t1 = now();
        r->get += t1 - t0;
        r->bytes += body.len;
        r->pages++;
        page = json_loadb(body.data, body.len, 0, &je);
        if (!page) {
            fprintf(stderr, "bench_kube: page is not JSON: %s\n", je.text);
            exit(1);
        }
        json_array_foreach(json_object_get(page, "items"), i, it)
        {
            struct common_pod *p;
            if (common_pod_from_json(it, &p, &err))
                die("common_pod_from_json", &err);
            account(&r->sums, p);
            common_pod_free(p);
        }
        c = json_string_value(json_object_get(json_object_get(page, "metadata"), "continue"));
        common_free(cont);
        cont = c && *c ? common_strdup(c) : NULL;
        json_decref(page);
        r->decode += now() - t1;
    } while (cont);
    common_buf_free(&body);
}

static enum common_rc pb_item(void *ctx, struct common_pod *pod, struct common_error *err)
{
    (void)err;
    account(ctx, pod);
    common_pod_free(pod);
    return COMMON_OK;
}

/* protobuf: GET a page, decode it item by item; next page */
static void run_protobuf(struct result *r)
{
    struct common_buf body;
    struct common_error err;
    char path[8192], *cont = NULL;
    long status;

    common_buf_init(&body, (size_t)1 << 30);
    do {
        double t0 = now(), t1;
        struct common_list_meta meta;

        list_path(path, sizeof(path), cont);
        if (common_kube_request(kube, "GET", path, NULL, NULL, 0,
                                "application/vnd.kubernetes.protobuf", &body, &status, &err))
            die("GET protobuf page", &err);
        t1 = now();
        r->get += t1 - t0;
        r->bytes += body.len;
        r->pages++;
        if (common_pod_list_from_protobuf(body.data, body.len, pb_item, &r->sums, &meta, &err))
            die("common_pod_list_from_protobuf", &err);
        common_free(cont);
        cont =
            meta.continue_token && *meta.continue_token ? common_strdup(meta.continue_token) : NULL;
        common_list_meta_clear(&meta);
        r->decode += now() - t1;
    } while (cont);
    common_buf_free(&body);
}

static const struct {
    const char *name, *what;
    void (*run)(struct result *);
} variants[NVARIANTS] = {
    {"json-list", "common_kube_list + common_pod_from_json", run_json_list},
    {"json-page", "GET page (JSON) + json_loadb + common_pod_from_json", run_json_page},
    {"protobuf", "GET page (protobuf) + common_pod_list_from_protobuf", run_protobuf},
};

/* one measured run of variant v into x */
static void measure(int v, struct result *x)
{
    struct cpu_mark a, b;
    struct list_metrics ma, mb;
    long rss0;

    memset(x, 0, sizeof(*x));
    malloc_trim(0); /* what the previous run freed goes back: a fair peak */
    list_metrics(&ma);
    bench_reset_peak();
    rss0 = bench_status_kb("VmRSS");
    mark(&a);
    variants[v].run(x);
    mark(&b);
    list_metrics(&mb);
    x->wall = b.wall - a.wall;
    x->self_cpu = b.self - a.self;
    x->apiserver_cpu = a.procs[P_APISERVER] >= 0 ? b.procs[P_APISERVER] - a.procs[P_APISERVER] : -1;
    x->etcd_cpu = a.procs[P_ETCD] >= 0 ? b.procs[P_ETCD] - a.procs[P_ETCD] : -1;
    x->server_cpu = x->apiserver_cpu >= 0 ? x->apiserver_cpu + x->etcd_cpu : -1;
    x->cache_lists = ma.cache_lists >= 0 ? mb.cache_lists - ma.cache_lists : -1;
    x->cache_fetched = ma.cache_fetched >= 0 ? mb.cache_fetched - ma.cache_fetched : -1;
    x->storage_lists = ma.storage_lists >= 0 ? mb.storage_lists - ma.storage_lists : -1;
    x->peak_kb = bench_status_kb("VmHWM") - rss0;
}

static void lists(void)
{
    static struct result res[NVARIANTS][16];
    long rounds = cfg.rounds > 16 ? 16 : cfg.rounds;
    double med_wall[NVARIANTS], med_self[NVARIANTS], med_server[NVARIANTS];
    size_t bytes_json;

    printf("\nlist + decode every pod of %s, pages of %ld, %ld rounds (order rotated each "
           "round):\n",
           cfg.ns, cfg.page, rounds);
    for (long r = 0; r < rounds; r++) {
        for (int k = 0; k < NVARIANTS; k++) {
            int v = (int)((k + r) % NVARIANTS);
            struct result *x = &res[v][r];

            page_limit = cfg.page;
            measure(v, x);
            printf("  round %ld %-10s %7.3f s  %ld pods\n", r + 1, variants[v].name, x->wall,
                   x->sums.items);
            fflush(stdout);
        }
    }
    /* the json-list variant does not see the bytes: json-page fetched the same JSON */
    bytes_json = res[1][0].bytes;
    for (long r = 0; r < rounds; r++)
        res[0][r].bytes = bytes_json;
    printf("\n  %-10s %9s %9s %8s %8s %10s %10s %8s %7s %9s\n", "", "wall med", "wall min", "GET",
           "decode", "client CPU", "apiserver", "etcd", "MB", "peak RSS");
    for (int v = 0; v < NVARIANTS; v++) {
        double w[16], s[16], sv[16], ap[16], et[16], mn = 1e30, get = 0, dec = 0;
        long peak = 0;
        for (long r = 0; r < rounds; r++) {
            w[r] = res[v][r].wall;
            s[r] = res[v][r].self_cpu;
            sv[r] = res[v][r].server_cpu;
            ap[r] = res[v][r].apiserver_cpu;
            et[r] = res[v][r].etcd_cpu;
            mn = res[v][r].wall < mn ? res[v][r].wall : mn;
            get += res[v][r].get / (double)rounds;
            dec += res[v][r].decode / (double)rounds;
            peak = res[v][r].peak_kb > peak ? res[v][r].peak_kb : peak;
        }
        med_wall[v] = bench_median(w, rounds);
        med_self[v] = bench_median(s, rounds);
        med_server[v] = bench_median(sv, rounds);
        printf("  %-10s %8.3fs %8.3fs %7.3fs %7.3fs %9.3fs %9.3fs %7.3fs %7.1f %6.0f MB\n",
               variants[v].name, med_wall[v], mn, get, dec, med_self[v], bench_median(ap, rounds),
               bench_median(et, rounds), (double)res[v][0].bytes / 1e6, (double)peak / 1024.0);
    }
    printf("  (medians of the rounds but wall min and GET/decode, which are means. GET = request "
           "to last byte,\n   server included; for json-list it also holds the jansson parse. "
           "apiserver, etcd = their CPU seconds.\n   MB = response bodies, uncompressed. %ld "
           "pages; the API server served %.0f of them from its watch cache\n   and %.0f from "
           "etcd, walking %.0f cached objects per list.)\n",
           res[2][0].pages, res[2][0].cache_lists, res[2][0].storage_lists,
           res[2][0].cache_fetched);
    for (int v = 0; v < NVARIANTS; v++)
        printf("  %-10s %s: %.0f pods/s, %.0f bytes/pod\n", variants[v].name, variants[v].what,
               (double)res[v][0].sums.items / med_wall[v],
               (double)res[v][0].bytes / (double)(res[v][0].sums.items ? res[v][0].sums.items : 1));
    printf("  ratio JSON/protobuf: wall %.2fx (json-list) %.2fx (json-page); client CPU %.2fx / "
           "%.2fx; server CPU %.2fx; bytes %.2fx\n",
           med_wall[0] / med_wall[2], med_wall[1] / med_wall[2], med_self[0] / med_self[2],
           med_self[1] / med_self[2], med_server[1] / med_server[2],
           (double)bytes_json / (double)res[2][0].bytes);
    {
        int same = 1;
        for (int v = 0; v < NVARIANTS; v++)
            for (long r = 0; r < rounds; r++)
                if (memcmp(&res[v][r].sums, &res[0][0].sums, sizeof(struct sums)) != 0)
                    same = 0;
        printf("  decoded pods identical across variants and rounds (count, summed requests, "
               "names): %s\n",
               same ? "yes" : "NO");
        if (!same)
            exit(1);
        reference = res[0][0].sums;
    }
}

/* protobuf lists with other page sizes: what the page size costs the server */
static void page_sweep(void)
{
    static const long limits[] = {500, 5000, 0};
    enum { NL = sizeof(limits) / sizeof(limits[0]) };
    static struct result res[NL][16];
    long rounds = cfg.rounds > 16 ? 16 : cfg.rounds;

    if (rounds > 3)
        rounds = 3;
    printf("\nprotobuf list + decode by page size (%ld rounds, order rotated):\n", rounds);
    for (long r = 0; r < rounds; r++)
        for (int k = 0; k < NL; k++) {
            int l = (int)((k + r) % NL);
            page_limit = limits[l];
            measure(2, &res[l][r]);
            if (memcmp(&res[l][r].sums, &reference, sizeof(reference)) != 0) {
                fprintf(stderr, "bench_kube: page size %ld decoded other pods\n", limits[l]);
                exit(1);
            }
        }
    printf("  %9s %6s %9s %10s %9s %10s %16s %9s\n", "page size", "pages", "wall med", "apiserver",
           "etcd", "client CPU", "cached objs walked", "peak RSS");
    for (int l = 0; l < NL; l++) {
        double w[16], ap[16], et[16], cl[16];
        long peak = 0;
        char name[32];
        for (long r = 0; r < rounds; r++) {
            w[r] = res[l][r].wall;
            ap[r] = res[l][r].apiserver_cpu;
            et[r] = res[l][r].etcd_cpu;
            cl[r] = res[l][r].self_cpu;
            peak = res[l][r].peak_kb > peak ? res[l][r].peak_kb : peak;
        }
        snprintf(name, sizeof(name), limits[l] ? "%ld" : "unpaged", limits[l]);
        printf("  %9s %6ld %8.3fs %9.3fs %8.3fs %9.3fs %16.0f %6.0f MB\n", name, res[l][0].pages,
               bench_median(w, rounds), bench_median(ap, rounds), bench_median(et, rounds),
               bench_median(cl, rounds), res[l][0].cache_fetched, (double)peak / 1024.0);
    }
    printf("  (cached objs walked = apiserver_cache_list_fetched_objects_total for one list: the "
           "server's work)\n");
}

/* ---- cleanup ---- */

static long deleted;

static enum common_rc delete_collection(const char *path, const char *selector,
                                        struct common_error *err)
{
    char full[4096];
    char *esc = common_kube_escape(selector);
    struct common_buf body;
    long status;
    enum common_rc rc;

    snprintf(full, sizeof(full), "%s?labelSelector=%s", path, esc ? esc : "");
    common_free(esc);
    common_buf_init(&body, (size_t)1 << 30);
    rc = common_kube_request(kube, "DELETE", full, NULL, NULL, 0, NULL, &body, &status, err);
    if (!rc) {
        /* the answer lists what was deleted */
        json_t *list = json_loadb(body.data, body.len, 0, NULL);
        __atomic_add_fetch(&deleted, (long)json_array_size(json_object_get(list, "items")),
                           __ATOMIC_RELAXED);
        json_decref(list);
    }
    common_buf_free(&body);
    return rc;
}

static enum common_rc delete_pod_shard(long i, struct common_error *err)
{
    char path[1024], sel[64];
    common_kube_path(&common_kube_pods, cfg.ns, NULL, NULL, path, sizeof(path));
    if (i < SHARDS)
        snprintf(sel, sizeof(sel), "trainsched.io/shard=s%02ld", i);
    else
        snprintf(sel, sizeof(sel), "app"); /* whatever is left */
    return delete_collection(path, sel, err);
}

static enum common_rc delete_node_shard(long i, struct common_error *err)
{
    char path[1024], sel[128];
    common_kube_path(&common_kube_nodes, NULL, NULL, NULL, path, sizeof(path));
    if (i < NODE_SHARDS)
        snprintf(sel, sizeof(sel), "trainsched-bench=kube,trainsched-bench-shard=s%02ld", i);
    else
        snprintf(sel, sizeof(sel), "trainsched-bench=kube");
    return delete_collection(path, sel, err);
}

static void cleanup(void)
{
    struct par p;
    struct common_error err;
    double t0 = now(), secs;
    static const struct common_kube_resource sa = {"", "v1", "serviceaccounts", 1};
    json_t *ns = NULL;

    printf("\ncleanup:\n");
    deleted = 0;
    secs = run_parallel(&p, 0, SHARDS, cfg.threads, delete_pod_shard);
    if (!p.failed)
        secs += run_parallel(&p, SHARDS, SHARDS + 1, 1, delete_pod_shard);
    printf("  %ld pods deleted by label shard (%d deletecollection calls, %ld at a time): %.1f s "
           "= %.0f /s%s%s\n",
           deleted, SHARDS + 1, cfg.threads, secs, (double)deleted / secs,
           p.failed ? "; failed: " : "", p.failed ? p.first_err : "");
    deleted = 0;
    secs = run_parallel(&p, 0, NODE_SHARDS, cfg.threads, delete_node_shard);
    if (!p.failed)
        secs += run_parallel(&p, NODE_SHARDS, NODE_SHARDS + 1, 1, delete_node_shard);
    printf("  %ld Nodes deleted by label (trainsched-bench=kube): %.1f s%s%s\n", deleted, secs,
           p.failed ? "; failed: " : "", p.failed ? p.first_err : "");
    common_kube_delete(kube, &sa, cfg.ns, "default", NULL, NULL, NULL, &err);
    if (common_kube_delete(kube, &common_kube_namespaces, NULL, cfg.ns, NULL, NULL, NULL, &err) &&
        err.code != COMMON_ENOTFOUND)
        printf("  delete namespace: %s\n", err.msg);
    /* without a namespace controller the namespace stays Terminating: it is empty now, so
     * finalize it as that controller would */
    for (int i = 0; i < 50; i++) {
        if (common_kube_get(kube, &common_kube_namespaces, NULL, cfg.ns, &ns, &err))
            break;
        if (i == 20) {
            char path[512];
            char *body;
            struct common_buf resp;
            long status;
            json_object_set_new(json_object_get(ns, "spec"), "finalizers", json_array());
            body = json_dumps(ns, JSON_COMPACT);
            snprintf(path, sizeof(path), "/api/v1/namespaces/%s/finalize", cfg.ns);
            common_buf_init(&resp, 1 << 24);
            if (common_kube_request(kube, "PUT", path, "application/json", body, strlen(body), NULL,
                                    &resp, &status, &err))
                printf("  finalize namespace: %s\n", err.msg);
            else
                printf("  namespace finalized by hand (no namespace controller running)\n");
            common_buf_free(&resp);
            free(body);
        }
        json_decref(ns);
        ns = NULL;
        usleep(100000);
    }
    if (ns) {
        printf("  namespace %s still present\n", cfg.ns);
        json_decref(ns);
    } else {
        printf("  namespace %s gone; cleanup took %.1f s\n", cfg.ns, now() - t0);
    }
}

int main(int argc, char **argv)
{
    struct common_kubeconfig kc;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;

    common_alloc_init();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pods") == 0)
            cfg.pods = bench_flag_long("bench_kube", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--nodes") == 0)
            cfg.nodes = bench_flag_long("bench_kube", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--threads") == 0)
            cfg.threads = bench_flag_long("bench_kube", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--rounds") == 0)
            cfg.rounds = bench_flag_long("bench_kube", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--page") == 0)
            cfg.page = bench_flag_long("bench_kube", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--ns") == 0 && i + 1 < argc)
            cfg.ns = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0)
            cfg.keep = 1;
        else if (strcmp(argv[i], "--cleanup") == 0)
            cfg.cleanup_only = 1;
        else {
            fprintf(stderr, "usage: bench_kube [--pods P] [--nodes N] [--threads T] [--rounds R] "
                            "[--page N] [--ns NAME] [--keep | --cleanup]\n"
                            "  needs KUBECONFIG (source the test bed's env); TESTBED_RUN adds "
                            "the server's CPU\n");
            return 2;
        }
    }
    if (cfg.threads < 1)
        cfg.threads = 1;
    if (cfg.page < 1)
        cfg.page = 500;
    for (int i = 0; i < NPROCS; i++)
        proc_pids[i] = bench_bed_pid(proc_names[i]);

    memset(&kc, 0, sizeof(kc));
    if (common_kubeconfig_load(NULL, NULL, &kc, &err))
        die("kubeconfig", &err);
    o.qps = 1e9; /* the benchmark measures the server and the client, not the rate limiter */
    o.burst = 1000000;
    o.timeout_ms = 300000;
    kube = common_kube_client_create(&kc, &o, &err);
    common_kubeconfig_free(&kc);
    if (!kube)
        die("client", &err);

    printf("bench_kube: server %s, %ld cores\n", getenv("KUBECONFIG"),
           sysconf(_SC_NPROCESSORS_ONLN));
    if (!cfg.cleanup_only) {
        setup();
        if (cfg.rounds > 0) {
            lists();
            page_sweep();
        }
    }
    if (!cfg.keep)
        cleanup();
    printf("\ncommand: . $TESTBED_RUN/env; %s --pods %ld --nodes %ld --threads %ld --rounds %ld "
           "--page %ld --ns %s%s%s\n",
           argv[0], cfg.pods, cfg.nodes, cfg.threads, cfg.rounds, cfg.page, cfg.ns,
           cfg.keep ? " --keep" : "", cfg.cleanup_only ? " --cleanup" : "");
    common_kube_client_destroy(kube);
    return 0;
}
