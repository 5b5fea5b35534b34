/*
 * tests/e2e/test_faults.c - the Kubernetes client and the watch cache under faults, against the
 * real kube-apiserver of the test bed.
 *
 * Stream faults go through tests/e2e/faultproxy.py, a TLS-terminating HTTP/1.1 proxy in front of
 * the real API server (started per test; its serving certificate is signed by the bed's CA):
 * a watch cut in the middle of an event, a line of invalid JSON, a stalled stream, an event over
 * the client's max_watch_event. The other faults need no proxy: the API server stopped for 20 s
 * and started again (tests/e2e/testbed/apiserver-ctl.sh), a watch resumed from a version the
 * restarted server no longer has (410 Gone), and a bearer token revoked and replaced in the
 * token file.
 *
 * Each test runs a JSON informer of ConfigMaps in a namespace of its own, writes through a
 * direct client while the fault happens, and asserts that the informer recovers: afterwards the
 * cache equals a fresh list (keys and resourceVersions), the handlers saw each object's final
 * state, and no object was added twice without a delete in between.
 *
 * Needs the bed's env (source $TESTBED_RUN/env): KUBECONFIG, TESTBED_SERVER, TESTBED_CA,
 * TESTBED_RUN, and python3 + openssl for the proxy. The API server restarts (two tests) make
 * this suite unsuitable for a bed shared with tests running in parallel.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/informer.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "e2eutil.h"

#define APISERVER_CTL TS_SOURCE_DIR "/tests/e2e/testbed/apiserver-ctl.sh"
#define EVENT_CAP (64 * 1024) /* max_watch_event of the proxied client */

static const struct common_kube_resource serviceaccounts = {"", "v1", "serviceaccounts", 1};
static const struct common_kube_resource roles = {"rbac.authorization.k8s.io", "v1", "roles", 1};
static const struct common_kube_resource rolebindings = {"rbac.authorization.k8s.io", "v1",
                                                         "rolebindings", 1};

static struct common_kube *kube; /* direct, admin */
static char ns[64];
static char workdir[128];
static pid_t proxy_pid;
static int proxy_port, control_port;
static int saved_stderr = -1;
static char log_path[256];

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* ---- the informer's log (common_log writes to stderr): captured into a file per test ---- */

static void log_capture(void)
{
    int fd;
    snprintf(log_path, sizeof(log_path), "%s/test.log", workdir);
    fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    saved_stderr = fcntl(2, F_DUPFD_CLOEXEC, 3); /* not inherited by the processes we start */
    dup2(fd, 2);
    close(fd);
}

/* the captured log so far (common_malloc'd) */
static char *log_text(void)
{
    struct common_buf b;
    struct common_error err;
    char *s;
    fflush(stderr);
    common_buf_init(&b, 8 << 20);
    if (common_buf_read_file(&b, log_path, &err) != COMMON_OK || !b.data) {
        common_buf_free(&b);
        return common_strdup("");
    }
    s = common_strdup(b.data);
    common_buf_free(&b);
    return s;
}

static int log_has(const char *needle)
{
    char *s = log_text();
    int found = s && strstr(s, needle) != NULL;
    common_free(s);
    return found;
}

/* put stderr back and echo the captured log (prefixed) so ctest --output-on-failure shows it */
static void log_release(void)
{
    char *s;
    if (saved_stderr < 0)
        return;
    s = log_text();
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    saved_stderr = -1;
    for (char *line = s; line && *line;) {
        size_t n = strcspn(line, "\n");
        fprintf(stderr, "  [%s] %.*s\n", ns, (int)n, line);
        line += n + (line[n] == '\n');
    }
    common_free(s);
}

/* ---- the proxy ---- */

static void proxy_start(void)
{
    e2e_proxy_start(workdir, &proxy_pid, &proxy_port, &control_port);
}

static void proxy_stop(void)
{
    e2e_proxy_stop(&proxy_pid);
}

/* GET path on the proxy's control port; returns the JSON answer (new reference) */
static json_t *ctl(const char *fmt, ...)
{
    char path[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    return e2e_proxy_ctl(control_port, path);
}

static void ctl_do(const char *fmt, const char *arg)
{
    json_decref(ctl(fmt, arg));
}

/* the last fault record applied to a watch of our namespace, or NULL (new reference) */
static json_t *applied_fault(void)
{
    json_t *st = ctl("/state"), *a = json_object_get(st, "applied"), *it, *found = NULL;
    size_t i;
    json_array_foreach(a, i, it)
    {
        const char *path = json_string_value(json_object_get(it, "path"));
        if (path && strstr(path, ns))
            found = it;
    }
    if (found)
        json_incref(found);
    json_decref(st);
    return found;
}

/* wait (up to timeout_ms) until the last applied fault's field has a true value */
static json_t *wait_fault(const char *field, long timeout_ms)
{
    double t0 = e2e_now_s();
    for (;;) {
        json_t *f = applied_fault();
        if (f && json_is_true(json_object_get(f, field)))
            return f;
        if ((e2e_now_s() - t0) * 1000 > timeout_ms)
            return f;
        json_decref(f);
        sleep_ms(50);
    }
}

/* the resourceVersion of the watch request that followed the one at fault_path ("" if none) */
static void watch_after(const char *fault_path, char *rv, size_t size)
{
    json_t *st = ctl("/state"), *it;
    size_t i;
    int next = 0;
    rv[0] = '\0';
    json_array_foreach(json_object_get(st, "recent_watches"), i, it)
    {
        const char *p = json_string_value(it), *q;
        if (!p || !strstr(p, ns))
            continue;
        if (next) {
            q = strstr(p, "resourceVersion=");
            snprintf(rv, size, "%.*s", q ? (int)strcspn(q + 16, "&") : 0, q ? q + 16 : "");
            next = 0;
        }
        if (strcmp(p, fault_path) == 0)
            next = 1;
    }
    json_decref(st);
}

/* a client of the proxy: the bed's CA, no credentials (the proxy adds the admin's) */
static struct common_kube *proxy_client(size_t max_watch_event)
{
    return e2e_proxy_client(proxy_port, max_watch_event);
}

/* ---- fixture ---- */

static void setup(void)
{
    struct common_kubeconfig cfg;
    struct common_error err;
    const char *path = getenv("KUBECONFIG");
    json_t *obj;

    ck_assert_msg(path != NULL, "KUBECONFIG is not set: start the test bed first");
    memset(&cfg, 0, sizeof(cfg));
    ck_assert_msg(common_kubeconfig_load(path, NULL, &cfg, &err) == COMMON_OK, "%s", err.msg);
    kube = common_kube_client_create(&cfg, NULL, &err);
    common_kubeconfig_free(&cfg);
    ck_assert_msg(kube != NULL, "%s", err.msg);
    snprintf(ns, sizeof(ns), "faults-%ld-%ld", (long)time(NULL) % 100000, (long)getpid());
    obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                    "name", ns);
    ck_assert_int_eq(common_kube_create(kube, &common_kube_namespaces, NULL, obj, NULL, NULL, &err),
                     COMMON_OK);
    json_decref(obj);
    /* the controller-manager adds kube-root-ca.crt to every namespace: wait for it, so that it
     * does not land in the middle of a test's events */
    for (int i = 0; i < 100; i++) {
        obj = NULL;
        if (common_kube_get(kube, &common_kube_configmaps, ns, "kube-root-ca.crt", &obj, &err) ==
            COMMON_OK) {
            json_decref(obj);
            break;
        }
        sleep_ms(100);
    }
    snprintf(workdir, sizeof(workdir), "/tmp/faults-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(workdir));
    log_capture();
}

static void rm_workdir(void)
{
    static const char *const files[] = {"ready",  "proxy.log", "proxy.crt", "proxy.key",
                                        "ca.srl", "test.log",  "token",     NULL};
    char p[256];
    for (int i = 0; files[i]; i++) {
        snprintf(p, sizeof(p), "%s/%s", workdir, files[i]);
        unlink(p);
    }
    rmdir(workdir);
}

static void teardown(void)
{
    struct common_error err;
    log_release();
    proxy_stop();
    if (kube)
        common_kube_delete(kube, &common_kube_namespaces, NULL, ns, NULL, NULL, NULL, &err);
    common_kube_client_destroy(kube);
    kube = NULL;
    rm_workdir();
}

/* ---- writes through the direct client ---- */

static const char *item_name(const void *item)
{
    const char *n = json_string_value(
        json_object_get(json_object_get((const json_t *)item, "metadata"), "name"));
    return n ? n : "";
}

static const char *item_rv(const void *item)
{
    const char *rv = json_string_value(
        json_object_get(json_object_get((const json_t *)item, "metadata"), "resourceVersion"));
    return rv ? rv : "";
}

/* create name with data.v = value, or patch it to that value; returns its new resourceVersion
 * (a static buffer) */
static const char *cm_put(const char *name, const char *value)
{
    static char rv[64];
    struct common_error err;
    char patch[256];
    json_t *out = NULL;
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                            "metadata", "name", name, "data", "v", value);
    enum common_rc rc =
        common_kube_create(kube, &common_kube_configmaps, ns, obj, NULL, &out, &err);
    json_decref(obj);
    if (rc == COMMON_EEXISTS) {
        snprintf(patch, sizeof(patch), "{\"data\":{\"v\":\"%s\"}}", value);
        rc = common_kube_patch(kube, &common_kube_configmaps, ns, name, COMMON_KUBE_MERGE_PATCH,
                               patch, NULL, &out, &err);
    }
    ck_assert_msg(rc == COMMON_OK, "put %s: %s", name, err.msg);
    snprintf(rv, sizeof(rv), "%s", item_rv(out));
    json_decref(out);
    return rv;
}

static void cm_big(const char *name, size_t size)
{
    struct common_error err;
    char *pad = common_malloc(size + 1);
    json_t *obj;
    ck_assert_ptr_nonnull(pad);
    memset(pad, 'y', size);
    pad[size] = '\0';
    obj = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                    "metadata", "name", name, "data", "v", pad);
    common_free(pad);
    ck_assert_msg(common_kube_create(kube, &common_kube_configmaps, ns, obj, NULL, NULL, &err) ==
                      COMMON_OK,
                  "create %s: %s", name, err.msg);
    json_decref(obj);
}

static void cm_del(const char *name)
{
    struct common_error err;
    ck_assert_msg(common_kube_delete(kube, &common_kube_configmaps, ns, name, NULL, NULL, NULL,
                                     &err) == COMMON_OK,
                  "delete %s: %s", name, err.msg);
}

/* the namespace's list resourceVersion (a point before the next writes) */
static char *list_rv(void)
{
    struct common_error err;
    json_t *items = NULL;
    char *rv = NULL;
    ck_assert_int_eq(common_kube_list(kube, &common_kube_configmaps, ns, NULL, &items, &rv, &err),
                     COMMON_OK);
    json_decref(items);
    ck_assert_ptr_nonnull(rv);
    return rv;
}

/* ---- what the handlers saw ---- */

#define MAXOBJ 64

struct obj_rec {
    char name[128];
    int present, adds, updates, deletes;
    char rv[32];
};

struct rec {
    pthread_mutex_t mu;
    struct obj_rec o[MAXOBJ];
    int n;
    int dup_adds, orphan_updates, orphan_deletes, stale_old;
    char why[512];
};

static struct obj_rec *rec_get(struct rec *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->o[i].name, name) == 0)
            return &r->o[i];
    if (r->n == MAXOBJ)
        return NULL;
    memset(&r->o[r->n], 0, sizeof(r->o[r->n]));
    snprintf(r->o[r->n].name, sizeof(r->o[r->n].name), "%s", name);
    return &r->o[r->n++];
}

/* the first handler-order problem, for the failure message */
#define note(r, ...)                                                                               \
    do {                                                                                           \
        if (!(r)->why[0])                                                                          \
            snprintf((r)->why, sizeof((r)->why), __VA_ARGS__);                                     \
    } while (0)

static void on_add(void *ctx, const void *item)
{
    struct rec *r = ctx;
    struct obj_rec *o;
    pthread_mutex_lock(&r->mu);
    o = rec_get(r, item_name(item));
    if (o) {
        if (o->present) {
            r->dup_adds++;
            note(r, "add of %s while present (rv %s)", o->name, item_rv(item));
        }
        o->present = 1;
        o->adds++;
        snprintf(o->rv, sizeof(o->rv), "%s", item_rv(item));
    }
    pthread_mutex_unlock(&r->mu);
}

static void on_update(void *ctx, const void *old_item, const void *new_item)
{
    struct rec *r = ctx;
    struct obj_rec *o;
    pthread_mutex_lock(&r->mu);
    o = rec_get(r, item_name(new_item));
    if (o) {
        if (!o->present) {
            r->orphan_updates++;
            note(r, "update of %s without an add (rv %s)", o->name, item_rv(new_item));
        } else if (strcmp(o->rv, item_rv(old_item)) != 0) {
            r->stale_old++;
            note(r, "update of %s: old rv %s is not the last one handlers saw", o->name,
                 item_rv(old_item));
        }
        o->present = 1;
        o->updates++;
        snprintf(o->rv, sizeof(o->rv), "%s", item_rv(new_item));
    }
    pthread_mutex_unlock(&r->mu);
}

static void on_delete(void *ctx, const void *old_item)
{
    struct rec *r = ctx;
    struct obj_rec *o;
    pthread_mutex_lock(&r->mu);
    o = rec_get(r, item_name(old_item));
    if (o) {
        if (!o->present) {
            r->orphan_deletes++;
            note(r, "delete of %s without an add (rv %s)", o->name, item_rv(old_item));
        } else if (strcmp(o->rv, item_rv(old_item)) != 0) {
            r->stale_old++;
            note(r, "delete of %s: old rv %s is not the last one handlers saw", o->name,
                 item_rv(old_item));
        }
        o->present = 0;
        o->deletes++;
    }
    pthread_mutex_unlock(&r->mu);
}

static void rec_init(struct rec *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
}

/* a copy of one object's record (zeroed when never seen) */
static struct obj_rec rec_of(struct rec *r, const char *name)
{
    struct obj_rec c;
    memset(&c, 0, sizeof(c));
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->o[i].name, name) == 0)
            c = r->o[i];
    pthread_mutex_unlock(&r->mu);
    return c;
}

/*
 * Does the informer agree with a fresh list? The cache must hold exactly the listed keys at the
 * listed resourceVersions, and the handlers' view must be the same (each object's last rv, and
 * deleted ones deleted); no handler call may have been out of order. why gets the first
 * difference.
 */
static int converged(struct common_informer *inf, struct rec *r, char *why, size_t size)
{
    struct common_error err;
    json_t *items = NULL, *it;
    struct common_pmap_snap *snap;
    size_t i;
    int ok = 1, present = 0;

    why[0] = '\0';
    if (common_kube_list(kube, &common_kube_configmaps, ns, NULL, &items, NULL, &err)) {
        snprintf(why, size, "list: %s", err.msg);
        return 0;
    }
    snap = common_informer_snapshot(inf);
    pthread_mutex_lock(&r->mu);
    if (r->dup_adds || r->orphan_updates || r->orphan_deletes || r->stale_old) {
        snprintf(why, size, "handler order: %s", r->why);
        ok = 0;
    }
    if (ok && common_pmap_snap_size(snap) != json_array_size(items)) {
        snprintf(why, size, "cache holds %zu objects, the list %zu", common_pmap_snap_size(snap),
                 json_array_size(items));
        ok = 0;
    }
    json_array_foreach(items, i, it)
    {
        char key[300];
        const json_t *cached;
        const char *name = item_name(it), *rv = item_rv(it);
        struct obj_rec *o = NULL;
        if (!ok)
            break;
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        cached = common_pmap_snap_get(snap, key);
        if (!cached || strcmp(item_rv(cached), rv) != 0) {
            snprintf(why, size, "cache: %s at rv %s, the list: %s", name,
                     cached ? item_rv(cached) : "(missing)", rv);
            ok = 0;
            break;
        }
        for (int j = 0; j < r->n; j++)
            if (strcmp(r->o[j].name, name) == 0)
                o = &r->o[j];
        if (!o || !o->present || strcmp(o->rv, rv) != 0) {
            snprintf(why, size, "handlers: %s last seen at rv %s, the list: %s", name,
                     o && o->present ? o->rv : "(absent)", rv);
            ok = 0;
        }
    }
    for (int j = 0; ok && j < r->n; j++)
        present += r->o[j].present;
    if (ok && (size_t)present != json_array_size(items)) {
        snprintf(why, size, "handlers: %d objects present, the list %zu", present,
                 json_array_size(items));
        ok = 0;
    }
    pthread_mutex_unlock(&r->mu);
    common_pmap_snap_release(snap);
    json_decref(items);
    return ok;
}

/* wait up to timeout_ms for convergence; returns the seconds it took, or fails the test */
static double wait_converged(struct common_informer *inf, struct rec *r, long timeout_ms,
                             const char *what)
{
    char why[600];
    double t0 = e2e_now_s();
    for (;;) {
        if (converged(inf, r, why, sizeof(why)))
            return e2e_now_s() - t0;
        if ((e2e_now_s() - t0) * 1000 > timeout_ms)
            break;
        sleep_ms(100);
    }
    ck_abort_msg("%s: informer not equal to a fresh list after %ld ms: %s (log: %s)", what,
                 timeout_ms, why, log_path);
    return -1;
}

struct run {
    struct common_informer *inf;
    struct common_informer_ops ops;
    struct rec rec;
};

static void informer_start(struct run *run, struct common_kube *k, int watch_timeout)
{
    struct common_error err;
    struct common_informer_handlers h = {on_add, on_update, on_delete, &run->rec};
    struct common_informer_opts o = {.namespace = ns, .watch_timeout_seconds = watch_timeout};

    rec_init(&run->rec);
    common_informer_json_ops(&run->ops, "configmaps", &common_kube_configmaps);
    ck_assert_int_eq(common_informer_create(k, &run->ops, &h, &o, &run->inf, &err), COMMON_OK);
    ck_assert_int_eq(common_informer_start(run->inf, &err), COMMON_OK);
    ck_assert_msg(common_informer_wait_synced(run->inf, 15000), "informer did not sync");
}

static void informer_end(struct run *run)
{
    common_informer_destroy(run->inf);
    run->inf = NULL;
    pthread_mutex_destroy(&run->rec.mu);
}

static size_t applied_count(void)
{
    json_t *st = ctl("/state");
    size_t n = json_array_size(json_object_get(st, "applied"));
    json_decref(st);
    return n;
}

/*
 * Arm a fault (the /arm query, after "fault=") for the informer's next watch, and make its
 * current watch end now (the proxy sends the chunked terminator, as a server timeout does), so
 * that the informer's next watch takes the fault. Kicks again until it did (a watch whose
 * response had not started yet escapes a kick). Returns the fault's record.
 */
static json_t *kick_into_fault(const char *fault)
{
    size_t n0 = applied_count();
    double t0 = e2e_now_s();

    json_decref(ctl("/arm?match=%s&fault=%s", ns, fault));
    while (e2e_now_s() - t0 < 10) {
        ctl_do("/kick%s", "");
        for (int i = 0; i < 10; i++) {
            if (applied_count() > n0)
                return applied_fault();
            sleep_ms(30);
        }
    }
    ck_abort_msg("the informer's next watch did not take the fault %s", fault);
    return NULL;
}

/* ---- a client-level watch through the proxy ---- */

struct wcount {
    int events;
    int stop_after; /* 0: never */
    char last_name[128];
};

static int count_events(void *ctx, const char *type, const json_t *obj, const void *raw, size_t len)
{
    struct wcount *w = ctx;
    (void)type;
    (void)raw;
    (void)len;
    w->events++;
    snprintf(w->last_name, sizeof(w->last_name), "%s", item_name(obj));
    return w->stop_after && w->events >= w->stop_after;
}

static enum common_rc proxied_watch(struct common_kube *pk, const char *rv, long stall_ms,
                                    struct wcount *w, struct common_error *err)
{
    struct common_kube_watch_opts wo;
    memset(&wo, 0, sizeof(wo));
    wo.resource_version = rv;
    wo.timeout_seconds = 5;
    wo.stall_ms = stall_ms;
    return common_kube_watch(pk, &common_kube_configmaps, ns, &wo, count_events, w, err);
}

/* ======================================================================== stream faults */

/* The proxy closes the connection in the middle of an event line. The client reports a
 * transport failure (COMMON_EIO) after the whole events; the informer resumes from the last
 * resourceVersion it saw and gets the cut event again. */
START_TEST(watch_cut_mid_event)
{
    struct common_error err;
    struct common_kube *pk;
    struct wcount w = {0};
    struct run run;
    struct common_informer_stats st;
    json_t *f;
    char *rv0, last[1024], rvq[64], want[64], cut[64];
    enum common_rc rc;
    double t;

    proxy_start();
    pk = proxy_client(0);

    /* client level: four events pending, the cut falls on the third */
    rv0 = list_rv();
    cm_put("a0", "1");
    cm_put("a1", "1");
    cm_put("a2", "1");
    cm_put("a3", "1");
    ctl_do("/arm?fault=cut&after=2&match=%s", ns);
    rc = proxied_watch(pk, rv0, 0, &w, &err);
    common_free(rv0);
    ck_assert_msg(rc == COMMON_EIO, "a cut watch: rc %d (%s), want COMMON_EIO", rc, err.msg);
    ck_assert_int_eq(w.events, 2);
    f = applied_fault();
    ck_assert_msg(strstr(json_string_value(json_object_get(f, "outcome")), "cut a ADDED"), "%s",
                  json_string_value(json_object_get(f, "outcome")));
    json_decref(f);

    /* informer: its watch is cut at the second event of a burst of writes */
    informer_start(&run, pk, 60);
    json_decref(kick_into_fault("cut&after=1"));
    snprintf(want, sizeof(want), "%s", cm_put("a0", "2"));
    snprintf(cut, sizeof(cut), "%s", cm_put("a4", "1"));
    cm_del("a1");
    cm_put("a2", "2");
    cm_put("a0", "3");
    f = wait_fault("done", 10000);
    ck_assert_msg(f && json_is_true(json_object_get(f, "done")), "the cut did not happen");
    ck_assert_msg(strstr(json_string_value(json_object_get(f, "outcome")), "cut a ADDED"), "%s",
                  json_string_value(json_object_get(f, "outcome")));
    snprintf(last, sizeof(last), "%s", json_string_value(json_object_get(f, "path")));
    json_decref(f);
    t = wait_converged(run.inf, &run.rec, 20000, "after a cut");
    fprintf(stdout, "watch_cut_mid_event: converged %.2f s after the writes\n", t);

    /* it resumed (no relist) from the version of the last whole event: a0's second one (or a
     * bookmark after it), before the cut event a4 */
    common_informer_stats(run.inf, &st);
    ck_assert_int_eq(st.lists, 1);
    ck_assert_int_ge(st.errors, 1);
    watch_after(last, rvq, sizeof(rvq));
    ck_assert_msg(rvq[0] && strtoull(rvq, NULL, 10) >= strtoull(want, NULL, 10) &&
                      strtoull(rvq, NULL, 10) < strtoull(cut, NULL, 10),
                  "the watch after the cut resumed from \"%s\", want a0's version %s (the cut "
                  "event a4 is at %s)",
                  rvq, want, cut);
    {
        struct obj_rec a0 = rec_of(&run.rec, "a0");
        ck_assert_int_eq(a0.adds, 1);
        ck_assert_int_eq(a0.updates, 2);
    }
    ck_assert_int_eq(rec_of(&run.rec, "a1").deletes, 1);
    ck_assert_int_eq(rec_of(&run.rec, "a4").adds, 1);
    ck_assert_msg(log_has("watch failed"), "no 'watch failed' in the log");
    informer_end(&run);
    common_kube_client_destroy(pk);
}
END_TEST

/* A watch on a quiet resource (nothing changes in the namespace) with a short stall deadline:
 * each watch ends stalled without delivering anything, which is the steady state of a quiet
 * resource, not a failure: the informer says so once at info ("watch quiet") and never warns
 * "watch failed"; a change afterwards still arrives. */
START_TEST(quiet_watch_is_logged_once)
{
    struct common_error err;
    struct common_informer_handlers h;
    struct common_informer_opts o = {
        .namespace = ns, .watch_timeout_seconds = 60, .stall_ms = 1000};
    struct run run;
    char *text, *p;
    int quiet = 0;
    double t0;

    rec_init(&run.rec);
    h = (struct common_informer_handlers){on_add, on_update, on_delete, &run.rec};
    common_informer_json_ops(&run.ops, "configmaps", &common_kube_configmaps);
    ck_assert_int_eq(common_informer_create(kube, &run.ops, &h, &o, &run.inf, &err), COMMON_OK);
    ck_assert_int_eq(common_informer_start(run.inf, &err), COMMON_OK);
    ck_assert_msg(common_informer_wait_synced(run.inf, 15000), "informer did not sync");
    for (t0 = e2e_now_s(); e2e_now_s() - t0 < 8;)
        e2e_nap(200); /* several 1 s stalls (with the informer's backoff between them) */
    cm_put("late", "1");
    t0 = e2e_now_s();
    while (rec_of(&run.rec, "late").adds == 0) {
        ck_assert_msg(e2e_now_s() - t0 < 30, "a change after the quiet watches never arrived");
        e2e_nap(100);
    }
    text = log_text();
    for (p = text; p && (p = strstr(p, "watch quiet")) != NULL; p++)
        quiet++;
    fprintf(stdout, "quiet_watch_is_logged_once: %d info line(s) over 8 s of 1 s stalls\n", quiet);
    ck_assert_msg(quiet == 1, "\"watch quiet\" logged %d times, want once", quiet);
    ck_assert_msg(!strstr(text, "watch failed"), "a quiet watch was logged as a failure");
    common_free(text);
    informer_end(&run);
}
END_TEST

/* A line that is not JSON: the client ends that watch with COMMON_EINVAL, the informer
 * resumes. */
START_TEST(watch_invalid_json_line)
{
    struct common_error err;
    struct common_kube *pk;
    struct wcount w = {0};
    struct run run;
    struct common_informer_stats st;
    json_t *f;
    char *rv0;
    enum common_rc rc;
    double t;

    proxy_start();
    pk = proxy_client(0);

    rv0 = list_rv();
    cm_put("b0", "1");
    cm_put("b1", "1");
    ctl_do("/arm?fault=badjson&after=1&match=%s", ns);
    rc = proxied_watch(pk, rv0, 0, &w, &err);
    common_free(rv0);
    ck_assert_msg(rc == COMMON_EINVAL, "rc %d (%s), want COMMON_EINVAL", rc, err.msg);
    ck_assert_msg(strstr(err.msg, "not valid JSON"), "%s", err.msg);
    ck_assert_int_eq(w.events, 1);

    informer_start(&run, pk, 60);
    json_decref(kick_into_fault("badjson&after=1"));
    cm_put("b0", "2");
    cm_put("b2", "1");
    cm_del("b1");
    cm_put("b2", "2");
    f = wait_fault("done", 10000);
    ck_assert_msg(f && json_is_true(json_object_get(f, "done")), "no invalid line injected");
    json_decref(f);
    t = wait_converged(run.inf, &run.rec, 20000, "after an invalid JSON line");
    fprintf(stdout, "watch_invalid_json_line: converged %.2f s after the writes\n", t);
    common_informer_stats(run.inf, &st);
    ck_assert_int_ge(st.errors, 1);
    ck_assert_msg(log_has("event is not valid JSON"), "the informer's log lacks the EINVAL");
    ck_assert_int_eq(rec_of(&run.rec, "b1").deletes, 1);
    ck_assert_int_eq(rec_of(&run.rec, "b2").adds, 1);
    informer_end(&run);
    common_kube_client_destroy(pk);
}
END_TEST

/*
 * The stream stalls: no byte arrives, the connection stays open. A watch with stall_ms ends with
 * COMMON_ETIMEOUT after about stall_ms. The informer has no stall option of its own: its
 * watches use the client's default, timeoutSeconds + 30 s, so with watch_timeout_seconds 5 it
 * must give up after about 35 s and then resume.
 */
START_TEST(watch_stalled_stream)
{
    struct common_error err;
    struct common_kube *pk;
    struct wcount w = {0};
    struct run run;
    json_t *f;
    enum common_rc rc;
    double t0, took, t;
    char *rv0;

    proxy_start();
    pk = proxy_client(0);

    rv0 = list_rv();
    cm_put("s0", "1");
    ctl_do("/arm?fault=stall&after=1&match=%s", ns);
    t0 = e2e_now_s();
    rc = proxied_watch(pk, rv0, 1500, &w, &err);
    took = e2e_now_s() - t0;
    common_free(rv0);
    ck_assert_msg(rc == COMMON_ETIMEOUT, "rc %d (%s), want COMMON_ETIMEOUT", rc, err.msg);
    ck_assert_int_eq(w.events, 1);
    ck_assert_msg(took >= 1.4 && took < 4.0, "stall_ms 1500 ended the watch after %.2f s", took);
    fprintf(stdout, "watch_stalled_stream: stall_ms=1500 gave up after %.2f s\n", took);

    informer_start(&run, pk, 5);
    json_decref(kick_into_fault("stall&after=1"));
    t0 = e2e_now_s();
    cm_put("s0", "2");
    cm_put("s1", "1");
    cm_del("s0");
    cm_put("s2", "1");
    /* default stall deadline of the informer's watches: 5 + 30 s; allow scheduling slack */
    t = wait_converged(run.inf, &run.rec, 50000, "after a stall");
    f = applied_fault();
    fprintf(stdout, "watch_stalled_stream: informer converged %.1f s after the stall began (%s)\n",
            e2e_now_s() - t0, json_string_value(json_object_get(f, "outcome")));
    ck_assert_msg(json_is_true(json_object_get(f, "done")), "the stalled watch was not closed");
    ck_assert_msg(json_real_value(json_object_get(f, "stalled_s")) >= 30.0,
                  "the informer gave up a stalled watch after %.1f s",
                  json_real_value(json_object_get(f, "stalled_s")));
    json_decref(f);
    (void)t;
    ck_assert_msg(log_has("no data for"), "the informer's log lacks the stall timeout");
    ck_assert_int_eq(rec_of(&run.rec, "s0").deletes, 1);
    informer_end(&run);
    common_kube_client_destroy(pk);
}
END_TEST

/* One event line over the client's max_watch_event: COMMON_ETOOBIG for that watch, the informer
 * resumes and the injected object never reaches the cache. Then a real object over the cap: the
 * informer's watches fail on it until it relists, which is not capped by max_watch_event. */
START_TEST(watch_event_over_the_cap)
{
    struct common_error err;
    struct common_kube *pk;
    struct wcount w = {0};
    struct run run;
    struct common_informer_stats st0, st;
    json_t *f;
    char *rv0, key[200];
    enum common_rc rc;
    double t;

    proxy_start();
    pk = proxy_client(EVENT_CAP);

    /* client level: an event just under the cap passes, one over it ends the watch */
    ctl_do("/arm?fault=big&after=0&size=%s&match=", "65000");
    w.stop_after = 1;
    rc = proxied_watch(pk, NULL, 0, &w, &err);
    ck_assert_msg(rc == COMMON_OK, "an event of 65000 bytes under a cap of 65536: rc %d (%s)", rc,
                  err.msg);
    ck_assert_str_eq(w.last_name, "faultproxy-big");
    rv0 = list_rv();
    cm_put("g0", "1");
    memset(&w, 0, sizeof(w));
    ctl_do("/arm?fault=big&after=1&size=%s&match=", "200000");
    rc = proxied_watch(pk, rv0, 0, &w, &err);
    common_free(rv0);
    ck_assert_msg(rc == COMMON_ETOOBIG, "rc %d (%s), want COMMON_ETOOBIG", rc, err.msg);
    ck_assert_int_eq(w.events, 1);

    /* informer: an injected event of 200 kB between real ones */
    informer_start(&run, pk, 60);
    json_decref(kick_into_fault("big&after=1&size=200000"));
    cm_put("g0", "2");
    cm_put("g1", "1");
    cm_del("g0");
    f = wait_fault("done", 10000);
    ck_assert_msg(f && json_is_true(json_object_get(f, "done")), "no big event injected");
    json_decref(f);
    t = wait_converged(run.inf, &run.rec, 20000, "after an injected event over the cap");
    fprintf(stdout, "watch_event_over_the_cap: converged %.2f s after the injection\n", t);
    ck_assert_msg(log_has("larger than the limit"), "the informer's log lacks the ETOOBIG");
    ck_assert_int_eq(rec_of(&run.rec, "faultproxy-big").adds, 0);
    snprintf(key, sizeof(key), "%s/faultproxy-big", ns);
    {
        struct common_pmap_snap *snap = common_informer_snapshot(run.inf);
        ck_assert_ptr_null(common_pmap_snap_get(snap, key));
        common_pmap_snap_release(snap);
    }

    /* a real 100 kB object over the 64 KiB cap, then small writes after it */
    common_informer_stats(run.inf, &st0);
    cm_big("huge", 100000);
    cm_put("g2", "1");
    t = wait_converged(run.inf, &run.rec, 40000, "after a real object over the cap");
    common_informer_stats(run.inf, &st);
    fprintf(stdout,
            "watch_event_over_the_cap: a real 100 kB object reached the cache after %.1f s "
            "(%llu failed watches, %llu relists)\n",
            t, (unsigned long long)(st.errors - st0.errors),
            (unsigned long long)(st.lists - st0.lists));
    ck_assert_int_ge(st.lists, st0.lists + 1);
    ck_assert_int_eq(rec_of(&run.rec, "huge").adds, 1);
    informer_end(&run);
    common_kube_client_destroy(pk);
}
END_TEST

/*
 * max_watch_event caps one event. A burst of small events (a watch resumed from an older
 * version, over HTTP/2 straight to the server, where many events share a read) must pass a cap
 * that each of them is far under; and an event of exactly the cap passes while one byte more
 * fails, with the cap named in the message.
 */
START_TEST(watch_cap_is_per_event)
{
    struct common_error err;
    struct common_kubeconfig cfg;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_kube *small, *pk;
    struct common_kube_watch_opts wo;
    struct wcount w = {0};
    char *rv0, want[64], size[32];
    enum common_rc rc;

    /* exactly the cap (the line's newline is not part of the event) */
    proxy_start();
    pk = proxy_client(EVENT_CAP);
    snprintf(size, sizeof(size), "%d", EVENT_CAP + 1);
    ctl_do("/arm?fault=big&after=0&size=%s", size);
    memset(&w, 0, sizeof(w));
    w.stop_after = 1;
    rc = proxied_watch(pk, NULL, 0, &w, &err);
    ck_assert_msg(rc == COMMON_OK, "an event of exactly max_watch_event bytes: rc %d (%s)", rc,
                  err.msg);
    snprintf(size, sizeof(size), "%d", EVENT_CAP + 2);
    ctl_do("/arm?fault=big&after=0&size=%s", size);
    memset(&w, 0, sizeof(w));
    w.stop_after = 1;
    rc = proxied_watch(pk, NULL, 0, &w, &err);
    ck_assert_msg(rc == COMMON_ETOOBIG, "an event of max_watch_event + 1 bytes: rc %d (%s)", rc,
                  rc ? err.msg : "delivered");
    snprintf(want, sizeof(want), "%d bytes", EVENT_CAP);
    ck_assert_msg(strstr(err.msg, want), "the message does not name the cap %d: %s", EVENT_CAP,
                  err.msg);
    common_kube_client_destroy(pk);

    /* a burst of small events, straight to the server */
    memset(&cfg, 0, sizeof(cfg));
    ck_assert_msg(common_kubeconfig_load(NULL, NULL, &cfg, &err) == COMMON_OK, "%s", err.msg);
    o.max_watch_event = 4096;
    small = common_kube_client_create(&cfg, &o, &err);
    common_kubeconfig_free(&cfg);
    ck_assert_msg(small != NULL, "%s", err.msg);
    rv0 = list_rv();
    for (int i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof(name), "m%d", i);
        cm_put(name, "1"); /* each event about 450 bytes */
    }
    memset(&wo, 0, sizeof(wo));
    memset(&w, 0, sizeof(w));
    wo.resource_version = rv0;
    wo.timeout_seconds = 2;
    rc = common_kube_watch(small, &common_kube_configmaps, ns, &wo, count_events, &w, &err);
    common_free(rv0);
    ck_assert_msg(rc == COMMON_OK,
                  "40 events of ~450 bytes under max_watch_event 4096: rc %d (%s) after %d events",
                  rc, err.msg, w.events);
    ck_assert_int_eq(w.events, 40);
    common_kube_client_destroy(small);
}
END_TEST

/* ======================================================================== API server faults */

static void apiserver_ctl(const char *verb)
{
    char cmd[600];
    int rc;
    fflush(stdout);
    fflush(stderr);
    snprintf(cmd, sizeof(cmd), "APISERVER_CTL_GRACE=5 '%s' %s </dev/null", APISERVER_CTL, verb);
    rc = system(cmd);
    ck_assert_msg(rc == 0, "%s %s failed (%d); see the test log %s", APISERVER_CTL, verb, rc,
                  log_path);
}

/* a client like the bed's admin kubeconfig */
static struct common_kube *admin_client(void)
{
    struct common_kubeconfig cfg;
    struct common_error err;
    struct common_kube *k;
    memset(&cfg, 0, sizeof(cfg));
    ck_assert_msg(common_kubeconfig_load(NULL, NULL, &cfg, &err) == COMMON_OK, "%s", err.msg);
    k = common_kube_client_create(&cfg, NULL, &err);
    common_kubeconfig_free(&cfg);
    ck_assert_msg(k != NULL, "%s", err.msg);
    return k;
}

/* The API server is stopped for 20 s and started again (same flags), with writes before and
 * after; the informer talks to it directly (HTTP/2). */
START_TEST(apiserver_down_for_20s)
{
    struct common_error err;
    struct common_kube *dk = admin_client();
    struct run run;
    struct common_informer_stats st;
    json_t *obj = NULL;
    enum common_rc rc;
    double t_stop, t_start, t_get, t;

    ck_assert_ptr_nonnull(getenv("TESTBED_RUN"));
    cm_put("d0", "1");
    cm_put("d1", "1");
    cm_put("d2", "1");
    informer_start(&run, dk, 60);
    cm_put("d0", "2");
    cm_put("d3", "1");
    cm_del("d1");
    wait_converged(run.inf, &run.rec, 10000, "before the outage");

    t_stop = e2e_now_s();
    apiserver_ctl("stop");
    /* while it is down a read fails with a transport error in bounded time */
    t_get = e2e_now_s();
    rc = common_kube_get(dk, &common_kube_configmaps, ns, "d0", &obj, &err);
    t_get = e2e_now_s() - t_get;
    json_decref(obj);
    ck_assert_msg(rc == COMMON_EIO, "get while down: rc %d (%s), want COMMON_EIO", rc, err.msg);
    ck_assert_msg(t_get < 10, "get while down took %.1f s", t_get);
    while (e2e_now_s() - t_stop < 20)
        sleep_ms(200);
    apiserver_ctl("start");
    t_start = e2e_now_s();
    cm_put("d2", "2");
    cm_put("d4", "1");
    cm_del("d3");
    t = wait_converged(run.inf, &run.rec, 60000, "after the API server came back");
    common_informer_stats(run.inf, &st);
    fprintf(stdout,
            "apiserver_down_for_20s: down %.1f s; get while down failed after %.1f s; informer "
            "converged %.1f s after the restart (%.1f s after the last write); lists %llu, "
            "watches %llu, errors %llu; 410 seen: %s\n",
            t_start - t_stop, t_get, e2e_now_s() - t_start, t, (unsigned long long)st.lists,
            (unsigned long long)st.watches, (unsigned long long)st.errors,
            log_has("watch expired") ? "yes" : "no");
    ck_assert_int_ge(st.errors, 1);
    ck_assert_int_eq(rec_of(&run.rec, "d3").deletes, 1);
    ck_assert_int_eq(rec_of(&run.rec, "d4").adds, 1);
    informer_end(&run);
    common_kube_client_destroy(dk);
}
END_TEST

static int ignore_event(void *ctx, const char *type, const json_t *obj, const void *raw, size_t len)
{
    (void)type;
    (void)obj;
    (void)raw;
    (void)len;
    (*(int *)ctx)++;
    return 0;
}

/* a direct watch from rv: retried while the restarted server's cache is not ready */
static enum common_rc direct_watch(const char *rv, struct common_error *err)
{
    struct common_kube_watch_opts wo;
    enum common_rc rc = COMMON_OK;
    int n = 0;
    memset(&wo, 0, sizeof(wo));
    wo.resource_version = rv;
    wo.timeout_seconds = 1;
    for (int i = 0; i < 40; i++) {
        rc = common_kube_watch(kube, &common_kube_configmaps, ns, &wo, ignore_event, &n, err);
        if (rc == COMMON_EGONE || rc == COMMON_OK)
            break;
        sleep_ms(250);
    }
    return rc;
}

/*
 * 410 Gone. The informer's next watch is held in the proxy while objects are deleted, updated
 * and created; the API server restarts meanwhile, so its watch cache starts after those writes
 * and the informer's resourceVersion is too old for it. Released, the watch gets 410, and the
 * informer relists: the list diff emits the deletes, updates and adds it missed. (The informer
 * has no way to start from a preset resourceVersion; the held watch is how an old one reaches
 * the server.) Then the informer is stopped and started again with objects deleted in between:
 * the start relists and again emits the missed delete, with no duplicate adds.
 */
START_TEST(watch_gone_relists)
{
    struct common_error err;
    struct common_kube *pk;
    struct run run;
    struct common_informer_stats st;
    json_t *f;
    char r0[64];
    enum common_rc rc;
    double t;

    proxy_start();
    pk = proxy_client(0);
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "r%d", i);
        cm_put(name, "1");
    }
    informer_start(&run, pk, 60);
    wait_converged(run.inf, &run.rec, 10000, "at the start");
    json_decref(kick_into_fault("pass&hold=1"));
    f = wait_fault("held", 5000);
    ck_assert_msg(f && json_is_true(json_object_get(f, "held")), "the watch is not held");
    json_decref(f);
    common_informer_last_rv(run.inf, r0, sizeof(r0));

    cm_del("r0");
    cm_del("r1");
    cm_put("r2", "2");
    cm_put("r5", "1");
    apiserver_ctl("restart");

    /* client level: the same version is gone for a direct watch */
    rc = direct_watch(r0, &err);
    ck_assert_msg(rc == COMMON_EGONE, "watch from %s after the restart: rc %d (%s)", r0, rc,
                  err.msg);
    /* and so is "1" */
    rc = direct_watch("1", &err);
    ck_assert_msg(rc == COMMON_EGONE, "watch from 1 after the restart: rc %d (%s)", rc, err.msg);

    ctl_do("/release%s", "");
    t = wait_converged(run.inf, &run.rec, 30000, "after 410");
    common_informer_stats(run.inf, &st);
    fprintf(stdout, "watch_gone_relists: converged %.1f s after the release; lists %llu\n", t,
            (unsigned long long)st.lists);
    ck_assert_msg(log_has("watch expired, relisting"), "no 410 in the informer's log");
    ck_assert_int_eq(st.lists, 2);
    ck_assert_int_eq(rec_of(&run.rec, "r0").deletes, 1);
    ck_assert_int_eq(rec_of(&run.rec, "r1").deletes, 1);
    ck_assert_int_eq(rec_of(&run.rec, "r2").updates, 1);
    ck_assert_int_eq(rec_of(&run.rec, "r5").adds, 1);
    ck_assert_int_eq(rec_of(&run.rec, "r3").adds, 1);
    ck_assert_int_eq(rec_of(&run.rec, "r3").updates, 0);

    /* stopped and started again: a relist, with the missed delete and add */
    common_informer_stop(run.inf);
    cm_del("r2");
    cm_put("r6", "1");
    ck_assert_int_eq(common_informer_start(run.inf, &err), COMMON_OK);
    wait_converged(run.inf, &run.rec, 20000, "after a stop and start");
    ck_assert_int_eq(rec_of(&run.rec, "r2").deletes, 1);
    ck_assert_int_eq(rec_of(&run.rec, "r6").adds, 1);
    ck_assert_int_eq(rec_of(&run.rec, "r3").adds, 1);
    ck_assert_int_eq(rec_of(&run.rec, "r4").adds, 1);
    informer_end(&run);
    common_kube_client_destroy(pk);
}
END_TEST

/* ======================================================================== tokens */

static char *mint_token(const char *sa)
{
    struct common_error err;
    char path[300];
    struct common_buf resp;
    long status;
    const char *body = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
                       "\"spec\":{\"expirationSeconds\":3600}}";
    json_t *j;
    char *tok;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts/%s/token", ns, sa);
    common_buf_init(&resp, 1 << 20);
    ck_assert_msg(common_kube_request(kube, "POST", path, "application/json", body, strlen(body),
                                      NULL, &resp, &status, &err) == COMMON_OK,
                  "TokenRequest: %s", err.msg);
    j = json_loads(resp.data, 0, NULL);
    common_buf_free(&resp);
    ck_assert_ptr_nonnull(j);
    tok = common_strdup(json_string_value(json_object_get(json_object_get(j, "status"), "token")));
    json_decref(j);
    ck_assert_ptr_nonnull(tok);
    return tok;
}

static void make_sa(const char *sa)
{
    struct common_error err;
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                            "metadata", "name", sa);
    ck_assert_msg(common_kube_create(kube, &serviceaccounts, ns, obj, NULL, NULL, &err) ==
                      COMMON_OK,
                  "create sa: %s", err.msg);
    json_decref(obj);
}

static void write_token(const char *file, const char *tok, const struct timespec *keep_mtime)
{
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", tok);
    fclose(f);
    if (keep_mtime) {
        struct timespec ts[2] = {*keep_mtime, *keep_mtime};
        ck_assert_int_eq(utimensat(AT_FDCWD, file, ts, 0), 0);
    }
}

static enum common_rc list_with(struct common_kube *k, struct common_error *err)
{
    json_t *items = NULL;
    enum common_rc rc = common_kube_list(k, &common_kube_configmaps, ns, NULL, &items, NULL, err);
    json_decref(items);
    return rc;
}

/* ServiceAccount fault-sa with a Role allowing ConfigMaps only */
static void token_setup(void)
{
    struct common_error err;
    json_t *obj;

    make_sa("fault-sa");
    obj = json_pack("{s:s, s:s, s:{s:s}, s:[{s:[s], s:[s], s:[s,s,s,s,s,s,s]}]}", "apiVersion",
                    "rbac.authorization.k8s.io/v1", "kind", "Role", "metadata", "name",
                    "configmaps", "rules", "apiGroups", "", "resources", "configmaps", "verbs",
                    "get", "list", "watch", "create", "update", "patch", "delete");
    ck_assert_int_eq(common_kube_create(kube, &roles, ns, obj, NULL, NULL, &err), COMMON_OK);
    json_decref(obj);
    obj = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s}]}", "apiVersion",
                    "rbac.authorization.k8s.io/v1", "kind", "RoleBinding", "metadata", "name",
                    "fault-sa", "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind", "Role",
                    "name", "configmaps", "subjects", "kind", "ServiceAccount", "name", "fault-sa",
                    "namespace", ns);
    ck_assert_int_eq(common_kube_create(kube, &rolebindings, ns, obj, NULL, NULL, &err), COMMON_OK);
    json_decref(obj);
}

/* a client of the API server with a token file, or (file NULL) the inline token */
static struct common_kube *token_client(const char *file, const char *token)
{
    struct common_kubeconfig cfg;
    struct common_error err;
    struct common_kube *k;
    memset(&cfg, 0, sizeof(cfg));
    cfg.server = getenv("TESTBED_SERVER");
    cfg.ca_file = getenv("TESTBED_CA");
    ck_assert_msg(cfg.server && cfg.ca_file, "TESTBED_SERVER/TESTBED_CA not set");
    cfg.token_file = (char *)file;
    cfg.token = file ? NULL : (char *)token;
    k = common_kube_client_create(&cfg, NULL, &err);
    ck_assert_msg(k != NULL, "%s", err.msg);
    return k;
}

/* delete and create fault-sa again; wait until old (holding its old token) gets 401 */
static double revoke_sa(struct common_kube *old)
{
    struct common_error err;
    enum common_rc rc;
    double t0;

    ck_assert_int_eq(
        common_kube_delete(kube, &serviceaccounts, ns, "fault-sa", NULL, NULL, NULL, &err),
        COMMON_OK);
    make_sa("fault-sa");
    t0 = e2e_now_s();
    do {
        rc = list_with(old, &err);
        if (rc != COMMON_OK)
            break;
        sleep_ms(250);
    } while (e2e_now_s() - t0 < 30);
    ck_assert_msg(rc == COMMON_EUNAUTHORIZED, "old token after the revoke: rc %d (%s)", rc,
                  err.msg);
    ck_assert_msg(strstr(err.msg, "401"), "%s", err.msg);
    return e2e_now_s() - t0;
}

/* wait (up to 20 s) until the informer counted more failures than before */
static void wait_informer_error(struct common_informer *inf, uint64_t before)
{
    struct common_informer_stats st;
    double t0 = e2e_now_s();
    do {
        common_informer_stats(inf, &st);
        if (st.errors > before)
            return;
        sleep_ms(100);
    } while (e2e_now_s() - t0 < 20);
    ck_abort_msg("the informer saw no error after the token was revoked");
}

/*
 * A ServiceAccount token in a token file: revoked (the ServiceAccount deleted and created again,
 * so the old token's uid no longer matches: 401), then replaced in the file. The client re-reads
 * the file after a 401 and the next request works. An informer on its own client with the same
 * file (so that nothing else makes that client re-read it) recovers too: from a replacement that
 * keeps the file's mtime (only a 401 can reveal it) and from an ordinary one.
 */
START_TEST(token_revoked_and_replaced)
{
    struct common_error err;
    struct common_kube *tk, *ti, *old;
    struct common_informer_stats st;
    struct run run;
    char file[200];
    char *tok1, *tok2, *tok3;
    struct stat sb;
    enum common_rc rc;
    double t;

    token_setup();
    tok1 = mint_token("fault-sa");
    snprintf(file, sizeof(file), "%s/token", workdir);
    write_token(file, tok1, NULL);
    tk = token_client(file, NULL);
    ti = token_client(file, NULL);
    old = token_client(NULL, tok1);

    rc = list_with(tk, &err);
    ck_assert_msg(rc == COMMON_OK, "list with the token: %s", err.msg);
    {
        json_t *s = NULL;
        rc = common_kube_get(tk, &common_kube_secrets, ns, "nope", &s, &err);
        ck_assert_msg(rc == COMMON_EUNAUTHORIZED, "secrets with the SA token: rc %d (%s)", rc,
                      err.msg); /* RBAC: configmaps only, so this is not the admin */
    }
    cm_put("t0", "1");
    informer_start(&run, ti, 2);
    wait_converged(run.inf, &run.rec, 10000, "with the first token");

    common_informer_stats(run.inf, &st);
    t = revoke_sa(old);
    fprintf(stdout,
            "token_revoked_and_replaced: the old token was refused %.1f s after the "
            "revoke\n",
            t);
    rc = list_with(tk, &err);
    ck_assert_msg(rc == COMMON_EUNAUTHORIZED, "revoked token in the file: rc %d (%s)", rc, err.msg);
    wait_informer_error(run.inf, st.errors);
    cm_put("t1", "1");

    /* replace: a new token written into the file, keeping its mtime, so only a 401 tells a
     * client to read it again */
    ck_assert_int_eq(stat(file, &sb), 0);
    tok2 = mint_token("fault-sa");
    write_token(file, tok2, &sb.st_mtim);
    rc = list_with(tk, &err);
    ck_assert_msg(rc == COMMON_OK, "after the token was replaced (same mtime): rc %d (%s)", rc,
                  err.msg);
    t = wait_converged(run.inf, &run.rec, 60000, "after the token was replaced (same mtime)");
    fprintf(stdout,
            "token_revoked_and_replaced: informer converged %.1f s after the new token (same "
            "mtime)\n",
            t);
    ck_assert_int_eq(rec_of(&run.rec, "t1").adds, 1);

    /* revoke again and replace with a new mtime: read before any request, no 401 needed */
    common_kube_client_destroy(old);
    old = token_client(NULL, tok2);
    common_informer_stats(run.inf, &st);
    revoke_sa(old);
    wait_informer_error(run.inf, st.errors);
    cm_put("t2", "1");
    tok3 = mint_token("fault-sa");
    write_token(file, tok3, NULL);
    t = wait_converged(run.inf, &run.rec, 60000, "after the token was replaced (new mtime)");
    fprintf(stdout,
            "token_revoked_and_replaced: informer converged %.1f s after the new token (new "
            "mtime)\n",
            t);
    rc = list_with(tk, &err);
    ck_assert_msg(rc == COMMON_OK, "after the token was replaced (new mtime): rc %d (%s)", rc,
                  err.msg);

    informer_end(&run);
    common_kube_client_destroy(old);
    common_kube_client_destroy(ti);
    common_kube_client_destroy(tk);
    common_free(tok1);
    common_free(tok2);
    common_free(tok3);
}
END_TEST

/*
 * The same replacement seen by watches only: kube.h says the token file is re-read after a 401,
 * so after a watch got 401 the next watch must carry the new token, even when the file's mtime
 * did not change (a client that only watches never sends any other request).
 */
START_TEST(token_replaced_watch_rereads_after_401)
{
    struct common_error err;
    struct common_kube *tw, *old;
    struct common_kube_watch_opts wo;
    char file[200];
    char *tok1, *tok2;
    struct stat sb;
    enum common_rc rc;
    int n = 0;

    token_setup();
    tok1 = mint_token("fault-sa");
    snprintf(file, sizeof(file), "%s/token", workdir);
    write_token(file, tok1, NULL);
    tw = token_client(file, NULL);
    old = token_client(NULL, tok1);
    memset(&wo, 0, sizeof(wo));
    wo.timeout_seconds = 1;
    rc = common_kube_watch(tw, &common_kube_configmaps, ns, &wo, ignore_event, &n, &err);
    ck_assert_msg(rc == COMMON_OK, "watch with the token: rc %d (%s)", rc, err.msg);

    revoke_sa(old);
    rc = common_kube_watch(tw, &common_kube_configmaps, ns, &wo, ignore_event, &n, &err);
    ck_assert_msg(rc == COMMON_EUNAUTHORIZED, "watch with the revoked token: rc %d (%s)", rc,
                  err.msg);
    ck_assert_int_eq(stat(file, &sb), 0);
    tok2 = mint_token("fault-sa");
    write_token(file, tok2, &sb.st_mtim);
    rc = common_kube_watch(tw, &common_kube_configmaps, ns, &wo, ignore_event, &n, &err);
    ck_assert_msg(rc == COMMON_OK,
                  "a watch after a 401 with a new token in the file (same mtime): rc %d (%s)", rc,
                  err.msg);
    common_kube_client_destroy(old);
    common_kube_client_destroy(tw);
    common_free(tok1);
    common_free(tok2);
}
END_TEST

/* ======================================================================== the bed after */

static const struct common_kube_resource jobs = {"batch", "v1", "jobs", 1};

struct probe {
    const char *selector; /* of the probe's pod */
};

/* the probe's pod once the scheduler has looked at it (condition PodScheduled present) */
static json_t *probe_pod_seen(const void *arg)
{
    const struct probe *p = arg;
    struct common_kube_list_opts lo = {0};
    struct common_error err;
    json_t *items = NULL, *pod;
    const json_t *c;
    size_t i;

    lo.label_selector = p->selector;
    ck_assert_msg(common_kube_list(kube, &common_kube_pods, ns, &lo, &items, NULL, &err) ==
                      COMMON_OK,
                  "list pods: %s", err.msg);
    pod = json_array_get(items, 0);
    json_array_foreach(e2e_at(pod, "status.conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && strcmp(type, "PodScheduled") == 0) {
            json_incref(pod);
            json_decref(items);
            return pod;
        }
    }
    json_decref(items);
    return NULL;
}

/*
 * After the API server restarts above, the bed's own controllers must work again before the
 * next suite runs: their informers back off while the server is away (client-go waits up to a
 * minute between attempts) and the job controller refuses to sync while its pod cache is older
 * than its last write. A Job (and, with the JobSet controller, a JobSet) is created here; its pod
 * must appear (kube-controller-manager, and the JobSet controller) and be marked PodScheduled
 * (kube-scheduler; its nodeSelector matches no node). The namespace is made by the fixture without
 * a ServiceAccount, so the ServiceAccount controller is checked first. Generous: 300 s each.
 */
START_TEST(bed_controllers_work_after_the_restarts)
{
    struct probe jp = {"batch.kubernetes.io/job-name=probe-job"};
    struct probe sp = {"jobset.sigs.k8s.io/jobset-name=probe-js"};
    static const char pod_spec[] =
        "restartPolicy: Never\n"
        "      nodeSelector: {trainsched.io/probe: none}\n"
        "      containers: [{name: c, image: registry.k8s.io/pause:3.10}]\n";
    struct e2e_obj_ref sa = {kube, NULL, &serviceaccounts, "default"};
    double t0 = e2e_now_s();
    json_t *pod;

    /* kube-controller-manager's ServiceAccount controller gives this (new) namespace its
     * "default" ServiceAccount, without which no pod is admitted; waiting for it first keeps the
     * Job's own retries (which back off for minutes) out of the measure */
    sa.ns = ns;
    pod = e2e_wait_for(300, e2e_exists, &sa, "the namespace's default ServiceAccount", ns);
    json_decref(pod);
    fprintf(stdout,
            "bed_controllers_work_after_the_restarts: default ServiceAccount after %.1f s\n",
            e2e_now_s() - t0);
    t0 = e2e_now_s();
    e2e_create(kube, &jobs, ns,
               e2e_yamlf("apiVersion: batch/v1\nkind: Job\nmetadata: {name: probe-job}\n"
                         "spec:\n  template:\n    spec:\n      %s",
                         pod_spec));
    pod = e2e_wait_for(300, probe_pod_seen, &jp, "the probe Job's pod, scheduled or not", ns);
    json_decref(pod);
    fprintf(stdout,
            "bed_controllers_work_after_the_restarts: Job pod seen by the scheduler "
            "after %.1f s\n",
            e2e_now_s() - t0);
    if (!getenv("TESTBED_JOBSET_RUNNING") || strcmp(getenv("TESTBED_JOBSET_RUNNING"), "1") != 0)
        return;
    t0 = e2e_now_s();
    e2e_create(kube, &common_kube_jobsets, ns,
               e2e_yamlf("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n"
                         "metadata: {name: probe-js}\nspec:\n  replicatedJobs:\n"
                         "  - name: w\n    replicas: 1\n    template:\n      spec:\n"
                         "        template:\n          spec:\n            %s",
                         "restartPolicy: Never\n"
                         "            nodeSelector: {trainsched.io/probe: none}\n"
                         "            containers: [{name: c, image: registry.k8s.io/pause:3.10}]"
                         "\n"));
    pod = e2e_wait_for(300, probe_pod_seen, &sp, "the probe JobSet's pod", ns);
    json_decref(pod);
    fprintf(stdout, "bed_controllers_work_after_the_restarts: JobSet pod seen after %.1f s\n",
            e2e_now_s() - t0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("faults (real API server)");
    TCase *stream = tcase_create("stream");
    TCase *server = tcase_create("server");
    TCase *token = tcase_create("token");
    TCase *after = tcase_create("after");
    SRunner *sr;
    int failed;

    common_alloc_init();
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    signal(SIGPIPE, SIG_IGN);
    tcase_add_checked_fixture(stream, setup, teardown);
    tcase_add_checked_fixture(server, setup, teardown);
    tcase_add_checked_fixture(token, setup, teardown);
    tcase_set_timeout(stream, 90);
    tcase_set_timeout(server, 120);
    tcase_set_timeout(token, 120);
    tcase_add_checked_fixture(after, setup, teardown);
    tcase_set_timeout(after, 660);
    tcase_add_test(stream, watch_cut_mid_event);
    tcase_add_test(stream, watch_invalid_json_line);
    tcase_add_test(stream, watch_stalled_stream);
    tcase_add_test(stream, quiet_watch_is_logged_once);
    tcase_add_test(stream, watch_event_over_the_cap);
    tcase_add_test(stream, watch_cap_is_per_event);
    tcase_add_test(token, token_revoked_and_replaced);
    tcase_add_test(token, token_replaced_watch_rereads_after_401);
    tcase_add_test(server, apiserver_down_for_20s);
    tcase_add_test(server, watch_gone_relists);
    suite_add_tcase(s, stream);
    suite_add_tcase(s, token);
    suite_add_tcase(s, server);
    /* last: the bed is left working for the suites that follow */
    suite_add_tcase(s, after);
    tcase_add_test(after, bed_controllers_work_after_the_restarts);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
