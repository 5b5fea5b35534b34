/*
 * bench/bench_reconciler.c - 1,000 TrainJobs to their JobSets against the real kube-apiserver
 * of the test bed: the in-process reconciler (reconciler/reconciler.h) against writing the same
 * objects directly with the same client, side by side in one run.
 *
 * Each TrainJob names a namespaced TrainingRuntime (torch, 2 nodes, a coscheduling
 * podGroupPolicy), so it becomes a snapshot ConfigMap, a JobSet and a PodGroup. TrainJobs are
 * created `suspend: true` (default; --no-suspend for the other case): every first reconcile
 * then also writes the status (Suspended=True), the fourth write the requirement lists, and the
 * JobSet stays suspended, so nothing would run even with a JobSet controller. The bed runs
 * without the JobSet controller and kwok: the objects stay as written.
 *
 * Per round, in two fresh namespaces, with the phase order alternated (A then B, B then A):
 *  - N TrainJobs are created from W threads (NOT timed), then the machine is left to settle
 *    (kube-apiserver, etcd and kube-controller-manager idle again, at most 30 s) before the
 *    clock starts;
 *  - A "direct": every TrainJob (as the API server returned it, with its uid) is rendered with
 *    trainjob_render against the runtime and its status patch is derived with
 *    trainjob_status_derive + rc_status_patch, exactly the calls a reconcile makes. This
 *    preparation is timed separately and NOT counted. Timed: W threads write each TrainJob's
 *    objects as the reconciler writes them: reconciler/core.h's rc_child_action for an absent
 *    child (create the snapshot ConfigMap, server-side apply JobSet and PodGroup), with the
 *    reconciler's write options (fieldManager trainsched, force, fieldValidation=Strict; apply
 *    answers decoded as the reconciler does), then the merge patch of the status subresource;
 *  - B "reconciler": rc_create + rc_start on that namespace (rc_opts.namespace) with W
 *    workers and the same client (one client, qps/burst set so that neither phase is throttled).
 *    The clock runs from rc_start (informers' first lists included) until the reconciler has
 *    written every object AND is idle: rc_get_stats is polled every 2 ms; "written" is
 *    creates, applies and status writes at least the direct phase's totals (a status write
 *    comes last in a successful reconcile, after the children were written and answered); the
 *    clock stops at the last moment the queue went idle (nothing ready, delayed or in process,
 *    no reconcile finished since the previous poll) once the objects are written, confirmed by
 *    1 s of continued idleness that is not counted. So the follow-up reconciles the
 *    reconciler's own watch events cause are inside the time. The time until the objects were
 *    written ("written") is shown as well.
 *  After each phase (untimed) the namespace is listed: every TrainJob must have its ConfigMap,
 *  JobSet and PodGroup, and (suspended) Suspended=True and no ResourcesCreated condition, or
 *  the benchmark fails. After both phases a sample of the JobSets, PodGroups and snapshots of
 *  the two namespaces is compared: the same spec, the same snapshotted runtime (its namespace,
 *  uid, resourceVersion and creationTimestamp aside): the same work.
 *
 * Reported per phase: wall time, CPU seconds of this process, kube-apiserver, etcd,
 * kube-controller-manager and kube-scheduler (from /proc/<pid>/stat of $TESTBED_RUN/pids/),
 * peak RSS (getrusage ru_maxrss: peak of the whole process so far; /proc/self/status VmHWM:
 * peak of this phase, reset at its start through /proc/self/clear_refs), the API writes by
 * verb (rc_get_stats for B; counted for A) and the requests the API server counted by verb and
 * resource (apiserver_request_total from GET /metrics, before and after the phase), per
 * TrainJob. Then the ratio reconciler/direct per round, medians and best over R rounds.
 * Cleanup: the namespaces are emptied (deletecollection, children before their owners, so
 * kube-controller-manager's garbage collector has no cascade whose retries would reach into
 * the next round) and deleted, finalized by hand when no namespace controller runs; --keep
 * leaves them.
 *
 * Run: . /tmp/tb-bench2/env; ./build-bench/bench/bench_reconciler [--trainjobs N]
 *      [--workers W] [--rounds R] [--no-suspend] [--keep]   (scripts/bench-reconciler.sh)
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
#include "common/arena.h"
#include "common/buf.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/log.h"
#include "common/yaml.h"
#include "reconciler/core.h"
#include "reconciler/reconciler.h"
#include "trainjob/status.h"
#include "trainjob/trainjob.h"

#define MAX_ROUNDS 32
#define FIELD_MANAGER "trainsched" /* the reconciler's default */
#define RUNTIME_NAME "bench-torch"
#define SETTLE_S 1.0 /* idle this long (not counted) before the reconciler is called done */

static struct {
    long trainjobs, workers, rounds;
    int keep, suspend;
} cfg = {1000, 4, 3, 0, 1};

static struct common_kube *kube;

/* ---- clocks, /proc (as bench_kube) ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double cpu_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

enum { P_APISERVER, P_ETCD, P_KCM, P_SCHEDULER, NPROCS };
static const char *const proc_names[NPROCS] = {"kube-apiserver", "etcd", "kube-controller-manager",
                                               "kube-scheduler"};
static const char *const proc_short[NPROCS] = {"apiserver", "etcd", "kcm", "sched"};
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

static double loadavg1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* Wait until the API server, etcd and the controller-manager are idle (below 0.15 core in
 * two consecutive 0.5 s windows), at most max_s: what the previous step started (watch
 * fan-out, garbage collector, namespace deletion) must not run into the measurement. Returns
 * the seconds waited. */
static double wait_quiet(double max_s)
{
    double t0 = now();
    int quiet = 0;
    for (;;) {
        struct cpu_mark a, b;
        double used = 0;
        mark(&a);
        nap_ms(500);
        mark(&b);
        for (int i = 0; i < NPROCS; i++)
            if (a.procs[i] >= 0 && b.procs[i] >= 0)
                used += b.procs[i] - a.procs[i];
        quiet = used / (b.wall - a.wall) < 0.15 ? quiet + 1 : 0;
        if (quiet >= 2 || now() - t0 > max_s)
            return now() - t0;
    }
}

static void die(const char *what, const struct common_error *err)
{
    fprintf(stderr, "bench_reconciler: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

/* ---- the API server's request counters (apiserver_request_total) ---- */

#define MAX_REQ_KEYS 64
struct req_counts {
    int n;
    struct {
        char key[96]; /* "VERB resource[/subresource]" */
        double v;
    } e[MAX_REQ_KEYS];
    int ok;
};

static const char *const our_resources[] = {"configmaps",       "jobsets",
                                            "podgroups",        "trainjobs",
                                            "trainingruntimes", "clustertrainingruntimes"};

/* the value of label name in a label set "{a="x",b="y"}" into out ("" when absent) */
static void label_value(const char *labels, size_t len, const char *name, char *out, size_t size)
{
    char pat[64];
    const char *p, *end = labels + len;
    size_t n;

    out[0] = '\0';
    snprintf(pat, sizeof(pat), "%s=\"", name);
    for (p = labels; p && p < end; p++) {
        p = strstr(p, pat);
        if (!p || p >= end)
            return;
        if (p == labels || p[-1] == '{' || p[-1] == ',')
            break;
    }
    if (!p || p >= end)
        return;
    p += strlen(pat);
    n = 0;
    while (p + n < end && p[n] != '"')
        n++;
    if (n >= size)
        n = size - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

static void req_add(struct req_counts *c, const char *key, double v)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->e[i].key, key) == 0) {
            c->e[i].v += v;
            return;
        }
    if (c->n < MAX_REQ_KEYS) {
        snprintf(c->e[c->n].key, sizeof(c->e[c->n].key), "%s", key);
        c->e[c->n].v = v;
        c->n++;
    }
}

static void scrape_requests(struct req_counts *c)
{
    struct common_buf body;
    struct common_error err;
    long status;
    static const char name[] = "apiserver_request_total{";

    memset(c, 0, sizeof(*c));
    common_buf_init(&body, (size_t)64 << 20);
    if (common_kube_request(kube, "GET", "/metrics", NULL, NULL, 0, "text/plain", &body, &status,
                            &err) == COMMON_OK &&
        body.data) {
        const char *l = body.data, *end_all = body.data + body.len;
        c->ok = 1;
        while (l < end_all) {
            const char *eol = memchr(l, '\n', (size_t)(end_all - l));
            const char *close;
            if (!eol)
                eol = end_all;
            if ((size_t)(eol - l) > sizeof(name) && strncmp(l, name, sizeof(name) - 1) == 0 &&
                (close = memchr(l, '}', (size_t)(eol - l))) != NULL) {
                char res[64], sub[64], verb[32], key[96];
                size_t len = (size_t)(close - l) + 1;
                label_value(l + sizeof(name) - 2, len - (sizeof(name) - 2), "resource", res,
                            sizeof(res));
                for (size_t i = 0; i < sizeof(our_resources) / sizeof(our_resources[0]); i++) {
                    if (strcmp(res, our_resources[i]) != 0)
                        continue;
                    label_value(l + sizeof(name) - 2, len - (sizeof(name) - 2), "subresource", sub,
                                sizeof(sub));
                    label_value(l + sizeof(name) - 2, len - (sizeof(name) - 2), "verb", verb,
                                sizeof(verb));
                    snprintf(key, sizeof(key), "%s %s%s%s", verb, res, sub[0] ? "/" : "", sub);
                    req_add(c, key, strtod(close + 1, NULL));
                    break;
                }
            }
            l = eol + 1;
        }
    }
    common_buf_free(&body);
}

/* after - before into d; the total into *total */
static void req_diff(const struct req_counts *before, const struct req_counts *after,
                     struct req_counts *d, double *total)
{
    memset(d, 0, sizeof(*d));
    *total = 0;
    d->ok = before->ok && after->ok;
    for (int i = 0; i < after->n; i++) {
        double v = after->e[i].v;
        for (int j = 0; j < before->n; j++)
            if (strcmp(before->e[j].key, after->e[i].key) == 0)
                v -= before->e[j].v;
        if (v > 0.5) {
            req_add(d, after->e[i].key, v);
            *total += v;
        }
    }
}

static void print_requests(const char *indent, const struct req_counts *d, long n)
{
    if (!d->ok) {
        printf("%sAPI server request counters: unavailable\n", indent);
        return;
    }
    printf("%sAPI server counted (apiserver_request_total, per TrainJob):", indent);
    for (int i = 0; i < d->n; i++)
        printf("%s %s %.0f (%.2f)", i ? "," : "", d->e[i].key, d->e[i].v, d->e[i].v / (double)n);
    printf("\n");
}

/* ---- objects ---- */

static json_t *yaml1(const char *text)
{
    struct common_yaml_docs d;
    struct common_error err;
    json_t *o;
    if (common_yaml_load(text, strlen(text), "inline", NULL, &d, &err) != COMMON_OK || d.n != 1)
        die("yaml", &err);
    o = json_incref(d.docs[0]);
    common_yaml_docs_free(&d);
    return o;
}

/* torch-distributed (manifests/runtimes) as a namespaced runtime, with a coscheduling gang */
static json_t *runtime_object(const char *ns)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "apiVersion: trainer.kubeflow.org/v1alpha1\n"
             "kind: TrainingRuntime\n"
             "metadata:\n"
             "  name: %s\n"
             "  namespace: %s\n"
             "  labels: {trainer.kubeflow.org/framework: torch}\n"
             "spec:\n"
             "  mlPolicy: {numNodes: 1, torch: {}}\n"
             "  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 120}}\n"
             "  template:\n"
             "    spec:\n"
             "      replicatedJobs:\n"
             "      - name: node\n"
             "        template:\n"
             "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: "
             "trainer}}\n"
             "          spec:\n"
             "            template:\n"
             "              spec:\n"
             "                containers:\n"
             "                - name: node\n"
             "                  image: pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime\n",
             RUNTIME_NAME, ns);
    return yaml1(buf);
}

static json_t *trainjob_object(const char *ns, long i)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "apiVersion: trainer.kubeflow.org/v1alpha1\n"
             "kind: TrainJob\n"
             "metadata:\n"
             "  name: tj-%05ld\n"
             "  namespace: %s\n"
             "  labels: {app: bench-reconciler}\n"
             "spec:\n"
             "  runtimeRef: {name: %s, kind: TrainingRuntime}\n"
             "  suspend: %s\n"
             "  trainer:\n"
             "    numNodes: 2\n"
             "    command: [torchrun, /workspace/train.py]\n"
             "    args: [--epochs, '3']\n"
             "    env: [{name: LR, value: '0.001'}]\n"
             "    resourcesPerNode: {requests: {cpu: '4', memory: 16Gi, nvidia.com/gpu: '1'}, "
             "limits: {nvidia.com/gpu: '1'}}\n",
             i, ns, RUNTIME_NAME, cfg.suspend ? "true" : "false");
    return yaml1(buf);
}

static const char *name_of(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

/* ---- many requests from several threads ---- */

struct par {
    long to;
    long next;
    long ok, failed;
    enum common_rc (*one)(long i, void *ctx, struct common_error *err);
    void *ctx;
    const char *what; /* progress label, or NULL */
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
        rc = p->one(i, p->ctx, &err);
        if (rc == COMMON_OK) {
            long done = __atomic_add_fetch(&p->ok, 1, __ATOMIC_RELAXED);
            if (p->what && done % 250 == 0)
                fprintf(stderr, "  %s: %ld/%ld\n", p->what, done, p->to);
        } else {
            pthread_mutex_lock(&p->lock);
            if (p->failed++ == 0)
                snprintf(p->first_err, sizeof(p->first_err), "%s", err.msg);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

/* one(i, ctx) for i in [0, n) on threads threads; returns the wall seconds */
static double run_parallel(struct par *p, long n, long threads,
                           enum common_rc (*one)(long, void *, struct common_error *), void *ctx,
                           const char *what)
{
    pthread_t th[64];
    long started = 0;
    double t0 = now();

    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
    p->to = n;
    p->one = one;
    p->ctx = ctx;
    p->what = what;
    if (threads > 64)
        threads = 64;
    for (long t = 0; t < threads; t++)
        if (pthread_create(&th[started], NULL, par_worker, p) == 0)
            started++;
    if (started == 0)
        par_worker(p);
    for (long t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&p->lock);
    return now() - t0;
}

/* ---- namespaces ---- */

static void make_ns(const char *ns)
{
    struct common_error err;
    json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                          "metadata", "name", ns);
    if (common_kube_create(kube, &common_kube_namespaces, NULL, o, NULL, NULL, &err))
        die("create namespace", &err);
    json_decref(o);
}

static void delete_collection(const struct common_kube_resource *r, const char *ns)
{
    char path[1024];
    struct common_buf body;
    struct common_error err;
    long status;

    if (common_kube_path(r, ns, NULL, NULL, path, sizeof(path)))
        return;
    common_buf_init(&body, (size_t)1 << 30);
    if (common_kube_request(kube, "DELETE", path, NULL, NULL, 0, NULL, &body, &status, &err) &&
        err.code != COMMON_ENOTFOUND)
        fprintf(stderr, "bench_reconciler: deletecollection %s in %s: %s\n", r->resource, ns,
                err.msg);
    common_buf_free(&body);
}

/* empty and delete ns; without a namespace controller, finalize it by hand */
static void drop_ns(const char *ns)
{
    /* children before their owners: the garbage collector then has no cascade to run (its
     * retries would reach into the next measurement) */
    const struct common_kube_resource *const rs[] = {
        &common_kube_jobsets, &common_kube_podgroups, &common_kube_configmaps,
        &common_kube_trainjobs, &common_kube_trainingruntimes};
    struct common_error err;
    json_t *o = NULL;
    double t0 = now();

    for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++)
        delete_collection(rs[i], ns);
    if (common_kube_delete(kube, &common_kube_namespaces, NULL, ns, NULL, NULL, NULL, &err) &&
        err.code != COMMON_ENOTFOUND)
        fprintf(stderr, "bench_reconciler: delete namespace %s: %s\n", ns, err.msg);
    for (int i = 0; i < 1200; i++) {
        if (common_kube_get(kube, &common_kube_namespaces, NULL, ns, &o, &err))
            break;
        if (i == (proc_pids[P_KCM] > 0 ? 600 : 20)) {
            char path[512];
            char *body;
            struct common_buf resp;
            long status;
            json_object_set_new(json_object_get(o, "spec"), "finalizers", json_array());
            body = json_dumps(o, JSON_COMPACT);
            snprintf(path, sizeof(path), "/api/v1/namespaces/%s/finalize", ns);
            common_buf_init(&resp, 1 << 24);
            if (body && common_kube_request(kube, "PUT", path, "application/json", body,
                                            strlen(body), NULL, &resp, &status, &err))
                fprintf(stderr, "bench_reconciler: finalize namespace %s: %s\n", ns, err.msg);
            common_buf_free(&resp);
            common_free(body);
        }
        json_decref(o);
        o = NULL;
        nap_ms(100);
    }
    if (o) {
        fprintf(stderr, "bench_reconciler: namespace %s still present\n", ns);
        json_decref(o);
    } else {
        fprintf(stderr, "  namespace %s deleted (%.1f s)\n", ns, now() - t0);
    }
}

/* ---- the TrainJobs of one namespace ---- */

struct nsjobs {
    char ns[96];
    json_t *runtime; /* as the API server returned it */
    json_t **tj;     /* [n] as the API server returned them */
    long n;
};

static enum common_rc create_tj(long i, void *ctx, struct common_error *err)
{
    struct nsjobs *j = ctx;
    struct common_kube_write_opts wo = {.strict = 1};
    json_t *obj = trainjob_object(j->ns, i);
    enum common_rc rc =
        common_kube_create(kube, &common_kube_trainjobs, j->ns, obj, &wo, &j->tj[i], err);
    json_decref(obj);
    return rc;
}

static void setup_ns(struct nsjobs *j, const char *ns)
{
    struct common_error err;
    struct common_kube_write_opts wo = {.strict = 1};
    struct par p;
    json_t *rt;
    double secs;

    memset(j, 0, sizeof(*j));
    snprintf(j->ns, sizeof(j->ns), "%s", ns);
    j->n = cfg.trainjobs;
    j->tj = common_calloc((size_t)j->n, sizeof(json_t *));
    if (!j->tj)
        die("out of memory", NULL);
    make_ns(ns);
    rt = runtime_object(ns);
    if (common_kube_create(kube, &common_kube_trainingruntimes, ns, rt, &wo, &j->runtime, &err))
        die("create TrainingRuntime", &err);
    json_decref(rt);
    fprintf(stderr, "  creating %ld TrainJobs in %s (not timed)\n", j->n, ns);
    secs = run_parallel(&p, j->n, cfg.workers, create_tj, j, "TrainJobs created");
    if (p.failed) {
        fprintf(stderr, "bench_reconciler: %ld TrainJobs not created: %s\n", p.failed, p.first_err);
        exit(1);
    }
    fprintf(stderr, "  %ld TrainJobs created in %.1f s (%.0f /s)\n", j->n, secs,
            (double)j->n / secs);
}

static void free_ns(struct nsjobs *j)
{
    for (long i = 0; i < j->n; i++)
        json_decref(j->tj[i]);
    common_free(j->tj);
    json_decref(j->runtime);
    memset(j, 0, sizeof(*j));
}

/* ---- the objects a TrainJob becomes, ready to write ---- */

struct write {
    const struct common_kube_resource *res;
    enum rc_action act;
    const json_t *obj; /* borrowed from the plan's objects */
};

struct plan {
    json_t *objects; /* trainjob_render's output */
    struct write w[8];
    int nw;
    char *status_body; /* the merge patch of the status subresource, or NULL */
    const char *name;
};

static const struct common_kube_resource *resource_for(const json_t *obj)
{
    switch (rc_child_kind_of(obj)) {
    case RC_CHILD_SNAPSHOT:
    case RC_CHILD_CONFIGMAP:
        return &common_kube_configmaps;
    case RC_CHILD_SECRET:
        return &common_kube_secrets;
    case RC_CHILD_JOBSET:
        return &common_kube_jobsets;
    case RC_CHILD_PODGROUP:
        if (strncmp(json_string_value(json_object_get(obj, "apiVersion")), "scheduling.x-k8s.io/",
                    20) == 0)
            return &common_kube_podgroups;
        return NULL;
    default:
        return NULL;
    }
}

/* What one reconcile of a TrainJob with no children yet does, without the I/O: render,
 * rc_child_action per child (absent), status derived from the JobSet, the status patch. */
static void make_plan(const json_t *tj, const json_t *runtime, struct plan *p)
{
    struct common_arena *a = common_arena_create(0);
    struct trainjob_output out = {0};
    struct trainjob_status_result sres = {0};
    struct common_error err;
    const json_t *jobset = NULL, *obj;
    json_t *patch;
    size_t i;
    int nomem = 0;

    memset(p, 0, sizeof(*p));
    p->name = name_of(tj);
    if (!a)
        die("out of memory", NULL);
    trainjob_errors_init(&out.errors, a);
    if (trainjob_render(a, tj, runtime, NULL, &out, &err) != COMMON_OK || !out.objects)
        die("render", &err);
    p->objects = out.objects;
    json_array_foreach(p->objects, i, obj)
    {
        enum rc_child_kind kind = rc_child_kind_of(obj);
        if (p->nw == (int)(sizeof(p->w) / sizeof(p->w[0])))
            die("render gave too many objects", NULL);
        p->w[p->nw].res = resource_for(obj);
        if (!p->w[p->nw].res)
            die("render gave an object this benchmark does not write", NULL);
        p->w[p->nw].act = rc_child_action(tj, kind, NULL);
        p->w[p->nw].obj = obj;
        p->nw++;
        if (kind == RC_CHILD_JOBSET)
            jobset = obj;
    }
    if (trainjob_status_derive(a, tj, jobset, (int64_t)time(NULL), &sres, &err) != COMMON_OK)
        die("status", &err);
    trainjob_status_remove_condition(sres.status, RC_COND_CREATED);
    patch = rc_status_patch(json_object_get(tj, "status"), sres.status, &nomem);
    if (nomem)
        die("out of memory", NULL);
    if (patch) {
        p->status_body = json_dumps(patch, JSON_COMPACT);
        json_decref(patch);
    }
    json_decref(sres.status);
    common_arena_destroy(a);
}

static void free_plan(struct plan *p)
{
    json_decref(p->objects);
    common_free(p->status_body);
    memset(p, 0, sizeof(*p));
}

/* ---- phase A: direct writes ---- */

struct direct {
    const char *ns;
    struct plan *plans;
    long creates, applies, status_writes;
};

static enum common_rc write_one(long i, void *ctx, struct common_error *err)
{
    struct direct *d = ctx;
    const struct plan *p = &d->plans[i];
    /* the reconciler's options (reconciler.c write_children, write_status) */
    struct common_kube_write_opts wo = {.field_manager = FIELD_MANAGER, .force = 1, .strict = 1};
    struct common_kube_write_opts so = {.subresource = "status"};
    enum common_rc rc;

    for (int k = 0; k < p->nw; k++) {
        json_t *out = NULL;
        if (p->w[k].act == RC_CREATE) {
            rc = common_kube_create(kube, p->w[k].res, d->ns, p->w[k].obj, &wo, NULL, err);
            if (rc)
                return rc;
            __atomic_add_fetch(&d->creates, 1, __ATOMIC_RELAXED);
        } else if (p->w[k].act == RC_APPLY) {
            rc = common_kube_apply(kube, p->w[k].res, d->ns, p->w[k].obj, &wo, &out, err);
            json_decref(out);
            if (rc)
                return rc;
            __atomic_add_fetch(&d->applies, 1, __ATOMIC_RELAXED);
        }
    }
    if (p->status_body) {
        rc = common_kube_patch(kube, &common_kube_trainjobs, d->ns, p->name,
                               COMMON_KUBE_MERGE_PATCH, p->status_body, &so, NULL, err);
        if (rc)
            return rc;
        __atomic_add_fetch(&d->status_writes, 1, __ATOMIC_RELAXED);
    }
    return COMMON_OK;
}

/* ---- what one phase measured ---- */

struct phase_result {
    double wall;     /* the timed span */
    double written;  /* B: until the objects were written */
    double start;    /* B: rc_start (informers synced, workers started) */
    double prep;     /* A: render + status derivation (not counted) */
    double self_cpu; /* this process during the timed span */
    double procs[NPROCS];
    double machine; /* busy CPU seconds of the machine */
    long rss0_kb;   /* VmRSS at the start */
    long hwm_kb;    /* VmHWM after the phase (reset at its start) */
    long maxrss_kb; /* ru_maxrss after the phase */
    uint64_t creates, applies, status_writes, deletes, reconciles, errors, adds, retries;
    uint64_t applies_skipped; /* B: applies the reconciler found unnecessary (its memo) */
    struct req_counts req;
    double req_total;
    double load1;
};

static void take_cpu(struct phase_result *x, const struct cpu_mark *a, const struct cpu_mark *b)
{
    x->self_cpu = b->self - a->self;
    x->machine = b->machine - a->machine;
    for (int i = 0; i < NPROCS; i++)
        x->procs[i] = a->procs[i] >= 0 && b->procs[i] >= 0 ? b->procs[i] - a->procs[i] : -1;
}

static void print_phase(const char *name, const struct phase_result *x, long n)
{
    double ours = x->self_cpu;
    printf("    %-10s %8.3f s", name, x->wall);
    if (x->written > 0)
        printf(" (objects written at %.3f s; rc_start %.3f s)", x->written, x->start);
    if (x->prep > 0)
        printf(" (render + status, not counted: %.3f s)", x->prep);
    printf("\n      CPU s: this process %.2f", x->self_cpu);
    for (int i = 0; i < NPROCS; i++)
        if (x->procs[i] >= 0) {
            printf(", %s %.2f", proc_short[i], x->procs[i]);
            ours += x->procs[i];
        }
    printf("; machine busy %.2f of %.2f core-s, of which other processes %.2f\n", x->machine,
           x->wall * (double)sysconf(_SC_NPROCESSORS_ONLN), x->machine - ours);
    printf("      writes: create %llu, apply %llu, status %llu, delete %llu = %.2f per TrainJob",
           (unsigned long long)x->creates, (unsigned long long)x->applies,
           (unsigned long long)x->status_writes, (unsigned long long)x->deletes,
           (double)(x->creates + x->applies + x->status_writes + x->deletes) / (double)n);
    if (x->reconciles)
        printf("; reconciles %llu (%.2f per TrainJob), applies skipped (unchanged) %llu, errors "
               "%llu, queue adds %llu, retries %llu",
               (unsigned long long)x->reconciles, (double)x->reconciles / (double)n,
               (unsigned long long)x->applies_skipped, (unsigned long long)x->errors,
               (unsigned long long)x->adds, (unsigned long long)x->retries);
    printf("\n");
    print_requests("      ", &x->req, n);
    printf("      memory: VmRSS at start %.1f MB, VmHWM (peak of this phase) %.1f MB, ru_maxrss "
           "(process peak so far) %.1f MB; load average %.2f\n",
           (double)x->rss0_kb / 1024.0, (double)x->hwm_kb / 1024.0, (double)x->maxrss_kb / 1024.0,
           x->load1);
}

static void phase_begin(struct phase_result *x, struct req_counts *req0)
{
    memset(x, 0, sizeof(*x));
    malloc_trim(0);
    scrape_requests(req0);
    bench_reset_peak();
    x->rss0_kb = bench_status_kb("VmRSS");
}

static void phase_end(struct phase_result *x, const struct req_counts *req0)
{
    struct req_counts req1;
    x->hwm_kb = bench_status_kb("VmHWM");
    x->maxrss_kb = maxrss_kb();
    x->load1 = loadavg1();
    scrape_requests(&req1);
    req_diff(req0, &req1, &x->req, &x->req_total);
}

/* expected writes per TrainJob (from the direct plans: what one first reconcile writes) */
static long exp_creates, exp_applies, exp_status;

static void run_direct(struct nsjobs *j, struct phase_result *x)
{
    struct plan *plans = common_calloc((size_t)j->n, sizeof(*plans));
    struct direct d = {0};
    struct req_counts req0;
    struct cpu_mark a, b;
    struct par p;
    double t0;

    if (!plans)
        die("out of memory", NULL);
    phase_begin(x, &req0);
    t0 = now();
    for (long i = 0; i < j->n; i++)
        make_plan(j->tj[i], j->runtime, &plans[i]);
    x->prep = now() - t0;
    exp_creates = exp_applies = exp_status = 0;
    for (int k = 0; k < plans[0].nw; k++) {
        exp_creates += plans[0].w[k].act == RC_CREATE;
        exp_applies += plans[0].w[k].act == RC_APPLY;
    }
    exp_status = plans[0].status_body != NULL;
    d.ns = j->ns;
    d.plans = plans;
    fprintf(stderr, "  direct: writing the objects of %ld TrainJobs from %ld threads\n", j->n,
            cfg.workers);
    mark(&a);
    run_parallel(&p, j->n, cfg.workers, write_one, &d, "TrainJobs written directly");
    mark(&b);
    if (p.failed) {
        fprintf(stderr, "bench_reconciler: direct: %ld TrainJobs failed: %s\n", p.failed,
                p.first_err);
        exit(1);
    }
    x->wall = b.wall - a.wall;
    take_cpu(x, &a, &b);
    x->creates = (uint64_t)d.creates;
    x->applies = (uint64_t)d.applies;
    x->status_writes = (uint64_t)d.status_writes;
    phase_end(x, &req0);
    for (long i = 0; i < j->n; i++)
        free_plan(&plans[i]);
    common_free(plans);
}

/* ---- phase B: the reconciler ---- */

static void run_reconciler(struct nsjobs *j, struct phase_result *x)
{
    struct rc_opts o = {0};
    struct common_error err;
    struct rc_reconciler *rec;
    struct req_counts req0;
    struct cpu_mark a, idle_mark;
    struct rc_stats s, idle_stats;
    uint64_t last_reconciles = 0;
    double t0, t_idle = 0, t_written = 0, t_print, deadline;
    int busy_before = 1;
    uint64_t need_c = (uint64_t)(exp_creates * j->n), need_a = (uint64_t)(exp_applies * j->n),
             need_s = (uint64_t)(exp_status * j->n);

    phase_begin(x, &req0);
    o.kube = kube;
    o.namespace = j->ns;
    o.workers = (int)cfg.workers;
    o.field_manager = FIELD_MANAGER;
    rec = rc_create(&o, &err);
    if (!rec)
        die("rc_create", &err);
    fprintf(stderr, "  reconciler: %ld workers on %s\n", cfg.workers, j->ns);
    mark(&a);
    t0 = a.wall;
    if (rc_start(rec, &err) != COMMON_OK)
        die("rc_start", &err);
    x->start = now() - t0;
    memset(&idle_stats, 0, sizeof(idle_stats));
    idle_mark = a;
    t_print = now() + 1;
    deadline = now() + 900;
    for (;;) {
        double t;
        int busy, written;
        rc_get_stats(rec, &s);
        t = now();
        busy = s.queue.depth || s.queue.delayed || s.queue.processing ||
               s.reconciles != last_reconciles;
        last_reconciles = s.reconciles;
        written = s.creates >= need_c && s.applies >= need_a && s.status_writes >= need_s;
        if (written && t_written == 0)
            t_written = t;
        if (!busy && busy_before) {
            mark(&idle_mark); /* the candidate end: CPU up to here */
            t_idle = idle_mark.wall;
            idle_stats = s;
        }
        busy_before = busy;
        if (written && !busy && t - t_idle >= SETTLE_S)
            break;
        if (t > t_print) {
            fprintf(stderr,
                    "  reconciler: %.0f s: reconciles %llu, creates %llu, applies %llu, status "
                    "%llu; queue: %zu ready, %zu delayed, %zu in process\n",
                    t - t0, (unsigned long long)s.reconciles, (unsigned long long)s.creates,
                    (unsigned long long)s.applies, (unsigned long long)s.status_writes,
                    s.queue.depth, s.queue.delayed, s.queue.processing);
            t_print = t + 1;
        }
        if (t > deadline) {
            fprintf(stderr, "bench_reconciler: the reconciler did not finish in 900 s\n");
            exit(1);
        }
        nap_ms(2);
    }
    x->wall = t_idle - t0;
    x->written = t_written - t0;
    take_cpu(x, &a, &idle_mark);
    x->creates = idle_stats.creates;
    x->applies = idle_stats.applies;
    x->applies_skipped = idle_stats.applies_skipped;
    x->status_writes = idle_stats.status_writes;
    x->deletes = idle_stats.deletes;
    x->reconciles = idle_stats.reconciles;
    x->errors = idle_stats.errors;
    x->adds = idle_stats.queue.adds;
    x->retries = idle_stats.queue.retries;
    rc_destroy(rec); /* the watches end: the API server counts them now */
    phase_end(x, &req0);
}

/* ---- checks (not timed) ---- */

static int cond_is(const json_t *tj, const char *type, const char *status)
{
    const json_t *c = trainjob_status_condition(json_object_get(tj, "status"), type);
    const char *s = json_string_value(json_object_get(c, "status"));
    return c && (!status || (s && strcmp(s, status) == 0));
}

/* index of "tj-NNNNN[suffix]" names, or -1 */
static long tj_index(const char *name, const char *suffix)
{
    char *end;
    long i;
    if (!name || strncmp(name, "tj-", 3) != 0)
        return -1;
    i = strtol(name + 3, &end, 10);
    if (end != name + 8 || strcmp(end, suffix) != 0 || i < 0 || i >= cfg.trainjobs)
        return -1;
    return i;
}

/* every TrainJob of ns has its snapshot, JobSet, PodGroup and status: exits on a miss */
static void verify(const char *ns, const char *phase)
{
    static const struct {
        const struct common_kube_resource *res;
        const char *suffix;
    } kinds[] = {{&common_kube_configmaps, "-runtime-snapshot"},
                 {&common_kube_jobsets, ""},
                 {&common_kube_podgroups, ""}};
    struct common_error err;
    json_t *items;
    unsigned char *seen = common_calloc((size_t)cfg.trainjobs, 1);
    size_t k;
    const json_t *it;
    long bad_status = 0, missing = 0;

    if (!seen)
        die("out of memory", NULL);
    for (size_t r = 0; r < sizeof(kinds) / sizeof(kinds[0]); r++) {
        if (common_kube_list(kube, kinds[r].res, ns, NULL, &items, NULL, &err))
            die("verify: list", &err);
        json_array_foreach(items, k, it)
        {
            long i = tj_index(name_of(it), kinds[r].suffix);
            if (i >= 0 && rc_controller_owner(it, NULL, NULL))
                seen[i] |= (unsigned char)(1u << r);
        }
        json_decref(items);
    }
    if (common_kube_list(kube, &common_kube_trainjobs, ns, NULL, &items, NULL, &err))
        die("verify: list", &err);
    json_array_foreach(items, k, it)
    {
        long i = tj_index(name_of(it), "");
        if (i < 0)
            continue;
        seen[i] |= 8;
        if (cond_is(it, RC_COND_CREATED, NULL) ||
            (cfg.suspend && !cond_is(it, "Suspended", "True")))
            bad_status++;
    }
    json_decref(items);
    for (long i = 0; i < cfg.trainjobs; i++)
        if (seen[i] != 15)
            missing++;
    common_free(seen);
    if (missing || bad_status) {
        fprintf(stderr,
                "bench_reconciler: %s (%s): %ld TrainJobs lack an object, %ld have the wrong "
                "status\n",
                phase, ns, missing, bad_status);
        exit(1);
    }
}

/* what a child is compared by: spec, or for the snapshot its runtime with the fields that
 * name the source object (namespace, uid, resourceVersion, creationTimestamp) dropped */
static json_t *comparable(const json_t *obj, int snapshot)
{
    struct common_yaml_docs d;
    struct common_error err;
    const char *text;
    json_t *rt, *meta;

    if (!snapshot)
        return json_incref(json_object_get(obj, "spec"));
    text = json_string_value(json_object_get(json_object_get(obj, "data"), "runtime"));
    if (!text || common_yaml_load(text, strlen(text), "snapshot", NULL, &d, &err) != COMMON_OK ||
        d.n != 1) {
        if (text)
            common_yaml_docs_free(&d);
        return NULL;
    }
    rt = json_incref(d.docs[0]);
    common_yaml_docs_free(&d);
    meta = json_object_get(rt, "metadata");
    json_object_del(meta, "namespace");
    json_object_del(meta, "uid");
    json_object_del(meta, "resourceVersion");
    json_object_del(meta, "creationTimestamp");
    return rt;
}

/* the children of the two namespaces are the same work: a sample compared */
static int same_objects(const char *ns_a, const char *ns_b)
{
    static const struct {
        const struct common_kube_resource *res;
        const char *suffix;
    } kinds[] = {{&common_kube_configmaps, "-runtime-snapshot"},
                 {&common_kube_jobsets, ""},
                 {&common_kube_podgroups, ""}};
    int same = 1;
    for (long i = 0; i < cfg.trainjobs; i += cfg.trainjobs / 7 + 1)
        for (size_t r = 0; r < sizeof(kinds) / sizeof(kinds[0]); r++) {
            char name[64];
            json_t *x = NULL, *y = NULL, *cx, *cy;
            struct common_error err;
            snprintf(name, sizeof(name), "tj-%05ld%s", i, kinds[r].suffix);
            if (common_kube_get(kube, kinds[r].res, ns_a, name, &x, &err) ||
                common_kube_get(kube, kinds[r].res, ns_b, name, &y, &err))
                die("compare", &err);
            cx = comparable(x, r == 0);
            cy = comparable(y, r == 0);
            if (!cx || !cy || !json_equal(cx, cy)) {
                fprintf(stderr, "bench_reconciler: %s %s differs between %s and %s\n",
                        kinds[r].res->resource, name, ns_a, ns_b);
                same = 0;
            }
            json_decref(cx);
            json_decref(cy);
            json_decref(x);
            json_decref(y);
        }
    return same;
}

/* ---- statistics ---- */

static double minimum(const double *v, long n)
{
    double m = v[0];
    for (long i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_reconciler [--trainjobs N] [--workers W] [--rounds R] "
               "[--no-suspend] [--keep]\n"
               "  N TrainJobs (default 1000) to their snapshot ConfigMap, JobSet, PodGroup and "
               "status:\n"
               "  the in-process reconciler (W workers, default 4) against writing the same "
               "objects\n"
               "  directly with the same client from W threads; R rounds (default 3), the order "
               "alternated.\n"
               "  --no-suspend  TrainJobs not suspended (no status write)\n"
               "  --keep        leave the namespaces\n"
               "  needs KUBECONFIG (source the test bed's env); TESTBED_RUN adds the server's "
               "CPU.\n"
               "  The bed must not run the JobSet controller or kwok (start it without "
               "TESTBED_JOBSET/TESTBED_KWOK).\n");
}

int main(int argc, char **argv)
{
    struct common_kubeconfig kc;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;
    static struct phase_result ra[MAX_ROUNDS], rb[MAX_ROUNDS];
    double wa[MAX_ROUNDS], wb[MAX_ROUNDS], wbw[MAX_ROUNDS], ratio[MAX_ROUNDS], ratio_w[MAX_ROUNDS],
        ratio_cpu[MAX_ROUNDS];
    long hwm_a = 0, hwm_b = 0, grow_a = 0, grow_b = 0;
    int all_same = 1;
    unsigned tag;

    common_alloc_init();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trainjobs") == 0)
            cfg.trainjobs = bench_flag_long("bench_reconciler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--workers") == 0)
            cfg.workers = bench_flag_long("bench_reconciler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--rounds") == 0)
            cfg.rounds = bench_flag_long("bench_reconciler", argc, argv, &i, 0, LONG_MAX);
        else if (strcmp(argv[i], "--keep") == 0)
            cfg.keep = 1;
        else if (strcmp(argv[i], "--no-suspend") == 0)
            cfg.suspend = 0;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (cfg.rounds > MAX_ROUNDS)
        cfg.rounds = MAX_ROUNDS;
    if (cfg.trainjobs > 99999)
        cfg.trainjobs = 99999;
    if (cfg.workers > 64)
        cfg.workers = 64;
    for (int i = 0; i < NPROCS; i++)
        proc_pids[i] = bench_bed_pid(proc_names[i]);
    if (getenv("TESTBED_JOBSET_RUNNING") && strcmp(getenv("TESTBED_JOBSET_RUNNING"), "1") == 0)
        fprintf(stderr, "bench_reconciler: warning: the bed runs the JobSet controller; it will "
                        "act on the JobSets (start the bed without TESTBED_JOBSET)\n");
    common_log_set_level(COMMON_LOG_WARN);

    memset(&kc, 0, sizeof(kc));
    if (common_kubeconfig_load(NULL, NULL, &kc, &err))
        die("kubeconfig", &err);
    o.qps = 1e9; /* neither phase is throttled by the client's rate limiter */
    o.burst = 1000000;
    o.timeout_ms = 300000;
    kube = common_kube_client_create(&kc, &o, &err);
    common_kubeconfig_free(&kc);
    if (!kube)
        die("client", &err);

    tag = (unsigned)getpid() % 10000;
    printf("bench_reconciler: server %s, %ld cores, load average %.2f; %ld TrainJobs (%s), "
           "%ld workers, %ld rounds\n",
           getenv("KUBECONFIG"), sysconf(_SC_NPROCESSORS_ONLN), loadavg1(), cfg.trainjobs,
           cfg.suspend ? "suspended" : "not suspended", cfg.workers, cfg.rounds);
    printf("  each TrainJob: snapshot ConfigMap + JobSet + coscheduling PodGroup%s\n",
           cfg.suspend ? " + status (Suspended=True)" : "");
    fflush(stdout);
    for (long r = 0; r < cfg.rounds; r++) {
        struct nsjobs ja, jb;
        char nsa[64], nsb[64];
        int b_first = (int)(r % 2);
        snprintf(nsa, sizeof(nsa), "bench-rec-%u-r%ld-direct", tag, r + 1);
        snprintf(nsb, sizeof(nsb), "bench-rec-%u-r%ld-reconciler", tag, r + 1);
        fprintf(stderr, "round %ld/%ld (%s first)\n", r + 1, cfg.rounds,
                b_first ? "reconciler" : "direct");
        for (int k = 0; k < 2; k++) {
            if ((k == 0) != b_first) {
                setup_ns(&ja, nsa);
                fprintf(stderr, "  settling: %.1f s\n", wait_quiet(30));
                run_direct(&ja, &ra[r]);
                verify(nsa, "direct");
            } else {
                setup_ns(&jb, nsb);
                fprintf(stderr, "  settling: %.1f s\n", wait_quiet(30));
                if (!exp_creates && !exp_applies) {
                    /* the expected writes come from the plans: make one for TrainJob 0 */
                    struct plan p;
                    make_plan(jb.tj[0], jb.runtime, &p);
                    for (int w = 0; w < p.nw; w++) {
                        exp_creates += p.w[w].act == RC_CREATE;
                        exp_applies += p.w[w].act == RC_APPLY;
                    }
                    exp_status = p.status_body != NULL;
                    free_plan(&p);
                }
                run_reconciler(&jb, &rb[r]);
                verify(nsb, "reconciler");
            }
        }
        if (!same_objects(nsa, nsb))
            all_same = 0;
        wa[r] = ra[r].wall;
        wb[r] = rb[r].wall;
        wbw[r] = rb[r].written;
        ratio[r] = rb[r].wall / ra[r].wall;
        ratio_w[r] = rb[r].written / ra[r].wall;
        hwm_a = ra[r].hwm_kb > hwm_a ? ra[r].hwm_kb : hwm_a;
        hwm_b = rb[r].hwm_kb > hwm_b ? rb[r].hwm_kb : hwm_b;
        grow_a = ra[r].hwm_kb - ra[r].rss0_kb > grow_a ? ra[r].hwm_kb - ra[r].rss0_kb : grow_a;
        grow_b = rb[r].hwm_kb - rb[r].rss0_kb > grow_b ? rb[r].hwm_kb - rb[r].rss0_kb : grow_b;
        printf("\nround %ld (%s first): reconciler/direct = %.2f (until written: %.2f)\n", r + 1,
               b_first ? "reconciler" : "direct", ratio[r], ratio_w[r]);
        print_phase("direct", &ra[r], cfg.trainjobs);
        print_phase("reconciler", &rb[r], cfg.trainjobs);
        fflush(stdout);
        free_ns(&ja);
        free_ns(&jb);
        if (!cfg.keep) {
            drop_ns(nsa);
            drop_ns(nsb);
        }
    }

    printf("\nsummary over %ld rounds (%ld TrainJobs, %ld workers/threads, %s):\n", cfg.rounds,
           cfg.trainjobs, cfg.workers, cfg.suspend ? "suspended" : "not suspended");
    printf("  %-22s %9s %9s %14s\n", "", "median", "best", "TrainJobs/s (median)");
    printf("  %-22s %8.3fs %8.3fs %14.0f\n", "direct", bench_median(wa, cfg.rounds),
           minimum(wa, cfg.rounds), (double)cfg.trainjobs / bench_median(wa, cfg.rounds));
    printf("  %-22s %8.3fs %8.3fs %14.0f\n", "reconciler (idle)", bench_median(wb, cfg.rounds),
           minimum(wb, cfg.rounds), (double)cfg.trainjobs / bench_median(wb, cfg.rounds));
    printf("  %-22s %8.3fs %8.3fs %14.0f\n", "reconciler (written)", bench_median(wbw, cfg.rounds),
           minimum(wbw, cfg.rounds), (double)cfg.trainjobs / bench_median(wbw, cfg.rounds));
    printf("  ratio reconciler/direct: per round");
    for (long r = 0; r < cfg.rounds; r++)
        printf(" %.2f", ratio[r]);
    printf("; median %.2f, best %.2f (target <= 1.5: %s)\n", bench_median(ratio, cfg.rounds),
           minimum(ratio, cfg.rounds), bench_median(ratio, cfg.rounds) <= 1.5 ? "met" : "NOT met");
    printf("  ratio until the objects were written: median %.2f\n",
           bench_median(ratio_w, cfg.rounds));
    printf("  ratio of kube-apiserver CPU seconds reconciler/direct: per round");
    for (long r = 0; r < cfg.rounds; r++) {
        ratio_cpu[r] =
            ra[r].procs[P_APISERVER] > 0 ? rb[r].procs[P_APISERVER] / ra[r].procs[P_APISERVER] : 0;
        printf(" %.2f", ratio_cpu[r]);
    }
    printf("; median %.2f (less sensitive to other load on the machine than wall time)\n",
           bench_median(ratio_cpu, cfg.rounds));
    {
        double oa[MAX_ROUNDS], ob[MAX_ROUNDS];
        for (long r = 0; r < cfg.rounds; r++) {
            double sa = ra[r].self_cpu, sb = rb[r].self_cpu;
            for (int i = 0; i < NPROCS; i++) {
                sa += ra[r].procs[i] > 0 ? ra[r].procs[i] : 0;
                sb += rb[r].procs[i] > 0 ? rb[r].procs[i] : 0;
            }
            oa[r] = (ra[r].machine - sa) / ra[r].wall;
            ob[r] = (rb[r].machine - sb) / rb[r].wall;
        }
        printf("  other processes on the machine (cores, median): during direct %.2f, during "
               "reconciler %.2f\n",
               bench_median(oa, cfg.rounds), bench_median(ob, cfg.rounds));
    }
    {
        double ca[MAX_ROUNDS], cb[MAX_ROUNDS], ea[MAX_ROUNDS], eb[MAX_ROUNDS], sa[MAX_ROUNDS],
            sb[MAX_ROUNDS], qa[MAX_ROUNDS], qb[MAX_ROUNDS];
        for (long r = 0; r < cfg.rounds; r++) {
            ca[r] = ra[r].procs[P_APISERVER];
            cb[r] = rb[r].procs[P_APISERVER];
            ea[r] = ra[r].procs[P_ETCD];
            eb[r] = rb[r].procs[P_ETCD];
            sa[r] = ra[r].self_cpu;
            sb[r] = rb[r].self_cpu;
            qa[r] = ra[r].req_total;
            qb[r] = rb[r].req_total;
        }
        printf("  CPU s (median): kube-apiserver direct %.2f, reconciler %.2f; etcd %.2f, %.2f; "
               "this process %.2f, %.2f\n",
               bench_median(ca, cfg.rounds), bench_median(cb, cfg.rounds),
               bench_median(ea, cfg.rounds), bench_median(eb, cfg.rounds),
               bench_median(sa, cfg.rounds), bench_median(sb, cfg.rounds));
        printf("  requests the API server counted per TrainJob (median): direct %.2f, "
               "reconciler "
               "%.2f\n",
               bench_median(qa, cfg.rounds) / (double)cfg.trainjobs,
               bench_median(qb, cfg.rounds) / (double)cfg.trainjobs);
    }
    printf("  peak RSS (max over rounds): VmHWM direct %.1f MB, reconciler %.1f MB; growth over "
           "the phase's start: direct %.1f MB, reconciler %.1f MB; ru_maxrss %.1f MB (whole "
           "run)\n",
           (double)hwm_a / 1024.0, (double)hwm_b / 1024.0, (double)grow_a / 1024.0,
           (double)grow_b / 1024.0, (double)maxrss_kb() / 1024.0);
    printf("  objects identical in both namespaces (sampled): %s\n", all_same ? "yes" : "NO");
    printf("  load average at the end: %.2f\n", loadavg1());
    printf("\ncommand: . $TESTBED_RUN/env; %s --trainjobs %ld --workers %ld --rounds %ld%s%s\n",
           argv[0], cfg.trainjobs, cfg.workers, cfg.rounds, cfg.suspend ? "" : " --no-suspend",
           cfg.keep ? " --keep" : "");
    common_kube_client_destroy(kube);
    return all_same ? 0 : 1;
}
