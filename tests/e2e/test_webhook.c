/*
 * tests/e2e/test_webhook.c - the real kube-apiserver of the test bed calls trainsched's admission
 * webhooks (webhook/server.h, docs/webhook.md) over TLS.
 *
 * Suite setup (an unchecked fixture, once, in the runner process):
 *   - two namespaces labelled trainsched.io/e2e-webhook=<run id> (only this run's namespaces
 *     carry it) with a TrainingRuntime "rt" each, and "elsewhere" in the second only;
 *   - `trainsched certs --ip 127.0.0.1` into <tmp>/certs, and a second serving pair from the same
 *     CA (--ca-cert/--ca-key) into <tmp>/certs2;
 *   - daemon "main": `trainsched serve --components webhook --tls-reload-seconds 1`, and daemon
 *     "sched": the same with --gang-scheduler-name, on its own ports and certificate files;
 *     both as trainsched's ServiceAccount (the shipped RBAC), ready once /readyz says 200;
 *   - the Mutating and Validating configurations of manifests/webhook/webhooks.yaml, with each
 *     clientConfig.service turned into url https://127.0.0.1:<port><path> and caBundle the base64
 *     of ca.crt, uniquely named, and limited to this run: a namespaceSelector matchLabels on the
 *     run's label merged into each namespaced webhook, an objectSelector matchLabels for the
 *     cluster-scoped ClusterTrainingRuntime webhook. The pod webhook of the "main" configuration
 *     takes namespaces labelled trainsched.io/e2e-webhook-pods=main (the first); one more
 *     MutatingWebhookConfiguration (the manifest's pod webhook alone, pointed at daemon "sched")
 *     takes =sched (the second);
 *   - probes (dry-run creates) until every webhook of every configuration answers;
 *   - a third namespace (ns3) labelled trainsched.io/e2e-webhook=<run id>-boot, which none of the
 *     configurations above selects, with its TrainingRuntime "rt", for bootstrap_converges.
 * The unchecked teardown deletes the configurations first (failurePolicy Fail), whatever the
 * tests did; main() runs it again when the setup itself failed (Check skips the teardown then).
 * It also SIGKILLs the daemons and drops the namespaces; when a test failed the daemons' logs
 * are echoed and the temp dir is kept.
 *
 * Tests (run in this order, each in its own process, sharing the daemons):
 *   invalid_trainjob_denied        runtimePatch on an unknown replicated job; a TrainingRuntime
 *                                  that exists only in another namespace (case 71): 403 with our
 *                                  message naming the field
 *   valid_trainjob_defaulted       runtimePatches[0].time stamped, suspend/managedBy/apiGroup/kind
 *                                  set; an UPDATE keeps the time
 *   runtime_and_trainjob_created_together  a new TrainingRuntime and at once a TrainJob naming
 *                                  it, 100 times: every TrainJob admitted; prints how often the
 *                                  daemon's cache had not seen the runtime yet (on an idle bed
 *                                  the watch usually wins: the next test makes the race certain)
 *   runtime_missing_from_the_cache_is_read_from_the_api_server  webhook_server in this process
 *                                  with a lookup that never holds the runtime and the bed's API
 *                                  as its client: a TrainJob on the existing "rt" is admitted, one
 *                                  on a runtime that does not exist refused with Trainer's message
 *   runtime_policy_denied          TrainingRuntime / ClusterTrainingRuntime with an ancestor job of
 *                                  2 replicas (case 86) denied; an unknown backend annotation and
 *                                  one contradicting podGroupPolicy denied naming the fields;
 * webhook-validation=disabled is not sent (the daemon's counter does not move)
 *   runtime_update_union_and_timeout_cap  a TrainingRuntime UPDATE to replicas 2 is denied like
 *                                  its CREATE; coscheduling with volcano is 422 at
 *                                  spec.podGroupPolicy; scheduleTimeoutSeconds 3000 on a runtime
 *                                  and a TrainJob on it: admitted with a warning (cap 628 s)
 *   gang_pods_mutated              gang pod gets trainsched.io/gang in requests and limits, a
 *                                  plain pod is untouched, the "sched" daemon sets schedulerName
 *   gang_pods_unrouted_while_unwired  a daemon with webhook.extenderWired false and the shipped
 *                                  pod webhook at it: a gang pod is admitted unchanged (no
 *                                  trainsched.io/gang) and kubectl prints the webhook's warning
 *   dry_run_mutates_stores_nothing dryRun=All returns the mutated object, GET is 404; invalid
 *                                  dry-runs are denied; every webhook says sideEffects None
 *   bootstrap_converges            case C58: the shipped configurations registered as shipped
 *                                  (service trainsched-controller.trainsched-system, which does
 *                                  not exist, caBundle "") and limited to ns3: a plain pod (the
 *                                  controller Deployment's labels) is not sent, a gang pod is sent
 *                                  and refused (failurePolicy Fail), a gang pod with the marks of
 *                                  the reconciler's templates is not sent and is created as it
 *                                  was, a TrainJob is refused with the call error naming the
 *                                  webhook; once the clientConfig points at
 *                                  daemon "main" the TrainJob is admitted and gang pods mutated.
 *                                  These configurations are deleted by the test, by the checked
 *                                  teardown (CK_FORK=no) and by the runner's teardown
 *   certificate_reload             tls.crt/tls.key replaced by a pair from the same CA while
 *                                  TrainJobs are created in a loop: the new serial is served on
 *                                  new connections within the reload period, zero failures
 *   daemons_stop_cleanly           SIGTERM: both daemons exit 0 (no sanitizer report)
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/certs.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/log.h"
#include "common/httpd.h"
#include "common/yaml.h"
#include "e2eutil.h"
#include "webhook/server.h"

#define RUN_LABEL "trainsched.io/e2e-webhook"
#define POD_LABEL "trainsched.io/e2e-webhook-pods"
#define GANG_LABEL "scheduling.x-k8s.io/pod-group"
#define GANG_RESOURCE "trainsched.io/gang"
#define GANG_MARKED_LABEL "trainsched.io/gang-marked"
#define GANG_SCHEDULER "trainsched-e2e-gang"
#define ANCESTOR_LABEL "trainer.kubeflow.org/trainjob-ancestor-step"
#define PATCH_MANAGER "e2e.trainsched.io/webhook-test"
#define RELOAD_S 1

static const struct common_kube_resource mwcs = {"admissionregistration.k8s.io", "v1",
                                                 "mutatingwebhookconfigurations", 0};
static const struct common_kube_resource vwcs = {"admissionregistration.k8s.io", "v1",
                                                 "validatingwebhookconfigurations", 0};

/* suite state: set by the runner's setup, read by the tests (forked after it) */
static struct common_kube *admin;
static char tmpdir[256];
static char run_id[64];
static char ns[128], ns2[128];
static char kubeconfig[512];
static char certdir[512], certdir2[512];
static char cfg_name[128], cfg_sched[128], cfg_unwired[128];
static int cfg_made;       /* setup got as far as naming the configurations */
static char ns3[128];      /* bootstrap_converges' namespace */
static char boot_id[80];   /* its RUN_LABEL value: "<run id>-boot" */
static char cfg_boot[128]; /* bootstrap_converges' configurations (both kinds) */
static int boot_made;      /* this process created them (checked teardown, CK_FORK=no) */
static int cleaned;

struct daemon {
    pid_t pid; /* 0: never started or reaped */
    int https_port, http_port;
    char name[32];
    char log[600];
};
static struct daemon dmain, dsched, dunwired; /* dunwired: gang_pods_unrouted_while_unwired */

/* ---- small helpers ---- */

static int connect_local(int port, int timeout_s)
{
    struct sockaddr_in a;
    struct timeval tv = {timeout_s, 0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The sum of the series of family `name` in a Prometheus text whose labels contain `labels`
 * (NULL: any), or 0 when there is none (a counter not yet incremented). */
static double metric(const char *text, const char *name, const char *labels)
{
    double v = e2e_metric(text, name, labels);
    return isnan(v) ? 0 : v;
}

/* family `name` on daemon d's /metrics, its series whose labels contain key="value" */
static double daemon_metric(const struct daemon *d, const char *name, const char *key,
                            const char *value)
{
    char *body = NULL, lab[128];
    double v;
    int code = e2e_http_get(d->http_port, "/metrics", &body);
    ck_assert_msg(code == 200 && body, "%s /metrics: %d", d->name, code);
    snprintf(lab, sizeof(lab), "%s=\"%s\"", key, value);
    v = metric(body, name, lab);
    free(body);
    return v;
}

/* trainsched_webhook_requests_total of one webhook (every result) on daemon d */
static double webhook_requests(const struct daemon *d, const char *webhook)
{
    return daemon_metric(d, "trainsched_webhook_requests_total", "webhook", webhook);
}

/* ---- child processes ---- */

/* run TS_BINARY to its end (at most secs, then SIGKILL); returns the wait status */
static int run_to_exit(char *const argv[], const char *log, double secs)
{
    pid_t pid = e2e_spawn(argv, log);
    double end = e2e_now_s() + secs;
    for (;;) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return st;
        if (e2e_now_s() >= end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            ck_abort_msg("trainsched %s still running after %.0f s; see %s", argv[1], secs, log);
        }
        e2e_nap(20);
    }
}

/* `trainsched certs` into dir; with ca_dir, signed by the CA in ca_dir (--force: replace) */
static void make_certs(const char *dir, const char *ca_dir)
{
    char log[600], ca_cert[600], ca_key[600], *out;
    int st;
    snprintf(log, sizeof(log), "%s/certs.log", tmpdir);
    snprintf(ca_cert, sizeof(ca_cert), "%s/ca.crt", ca_dir ? ca_dir : "");
    snprintf(ca_key, sizeof(ca_key), "%s/ca.key", ca_dir ? ca_dir : "");
    {
        char *argv[] = {"trainsched",  "certs",
                        "--service",   "trainsched-controller",
                        "--namespace", "trainsched-system",
                        "--out",       (char *)dir,
                        "--ip",        "127.0.0.1",
                        "--force",     ca_dir ? "--ca-cert" : NULL,
                        ca_cert,       "--ca-key",
                        ca_key,        NULL};
        st = run_to_exit(argv, log, 30);
    }
    out = e2e_read_text(log);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "trainsched certs --out %s: %s: %s", dir,
                  e2e_exit_text(st), out);
    free(out);
}

/* start a webhook-only daemon on two free ports (wired: --webhook-extender-wired); does not wait
 * for it */
static void start_daemon(struct daemon *d, const char *name, const char *dir, const char *sched,
                         int wired)
{
    char https[64], http[64], cert[600], key[600], reload[16];
    char *argv[] = {"trainsched",
                    "serve",
                    "--components",
                    "webhook",
                    "--kubeconfig",
                    kubeconfig,
                    "--https-address",
                    https,
                    "--http-address",
                    http,
                    "--tls-cert-file",
                    cert,
                    "--tls-key-file",
                    key,
                    "--tls-reload-seconds",
                    reload,
                    "--log-level",
                    "debug",
                    wired ? "--webhook-extender-wired" : "--webhook-extender-wired=false",
                    sched ? "--gang-scheduler-name" : NULL,
                    (char *)sched,
                    NULL};
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", name);
    snprintf(d->log, sizeof(d->log), "%s/%s.log", tmpdir, name);
    d->https_port = e2e_free_port();
    do
        d->http_port = e2e_free_port();
    while (d->http_port == d->https_port);
    snprintf(https, sizeof(https), "127.0.0.1:%d", d->https_port);
    snprintf(http, sizeof(http), "127.0.0.1:%d", d->http_port);
    snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    snprintf(reload, sizeof(reload), "%d", RELOAD_S);
    d->pid = e2e_spawn(argv, d->log);
}

static void wait_ready(struct daemon *d, double secs)
{
    double end = e2e_now_s() + secs;
    int code = -1;
    for (;;) {
        int st;
        if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
            d->pid = 0;
            ck_abort_msg("daemon %s exited before it was ready (%s); see %s", d->name,
                         e2e_exit_text(st), d->log);
        }
        code = e2e_http_get(d->http_port, "/readyz", NULL);
        if (code == 200)
            return;
        ck_assert_msg(e2e_now_s() < end, "daemon %s: /readyz %d after %.0f s; see %s", d->name,
                      code, secs, d->log);
        e2e_nap(100);
    }
}

/* ---- the ServiceAccount kubeconfig (as tests/e2e/test_serve.c) ---- */

static void write_sa_kubeconfig(void)
{
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/trainsched.kubeconfig", tmpdir);
    e2e_sa_kubeconfig(admin, kubeconfig);
}

/* ---- cluster objects ---- */

/* a TrainingRuntime (ClusterTrainingRuntime when namespace is NULL) with one replicated job
 * "node" of `replicas` replicas whose ancestor label is `trainer`; labels: extra YAML flow-map
 * entries for metadata.labels ("" for none); policy: spec.podGroupPolicy as a YAML flow
 * mapping (NULL: none) */
static json_t *runtime_pgp(const char *name, const char *namespace, int replicas,
                           const char *labels, const char *policy)
{
    char meta[512], pgp[256] = "";
    if (namespace)
        snprintf(meta, sizeof(meta), "{name: %s, namespace: %s, labels: {%s}}", name, namespace,
                 labels);
    else
        snprintf(meta, sizeof(meta), "{name: %s, labels: {%s}}", name, labels);
    if (policy)
        snprintf(pgp, sizeof(pgp), "  podGroupPolicy: %s\n", policy);
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: %s\n"
                     "metadata: %s\n"
                     "spec:\n"
                     "  mlPolicy: {numNodes: 1}\n"
                     "%s"
                     "  template:\n"
                     "    spec:\n"
                     "      replicatedJobs:\n"
                     "      - name: node\n"
                     "        replicas: %d\n"
                     "        template:\n"
                     "          metadata: {labels: {" ANCESTOR_LABEL ": trainer}}\n"
                     "          spec:\n"
                     "            template:\n"
                     "              spec:\n"
                     "                containers:\n"
                     "                - name: node\n"
                     "                  image: busybox:1.36\n"
                     "                  command: [sh, -c, 'sleep 1']\n",
                     namespace ? "TrainingRuntime" : "ClusterTrainingRuntime", meta, pgp, replicas);
}

static json_t *runtime(const char *name, const char *namespace, int replicas, const char *labels)
{
    return runtime_pgp(name, namespace, replicas, labels, NULL);
}

/* a TrainJob on TrainingRuntime rt (no apiGroup, no suspend, no managedBy: left to defaulting)
 * with one runtimePatch (no time) adding a nodeSelector to replicated job `job`; job NULL: no
 * runtimePatches */
static json_t *trainjob(const char *name, const char *namespace, const char *rt, const char *job)
{
    char patches[1024] = "";
    if (job)
        snprintf(patches, sizeof(patches),
                 "  runtimePatches:\n"
                 "  - manager: " PATCH_MANAGER "\n"
                 "    trainingRuntimeSpec:\n"
                 "      template:\n"
                 "        spec:\n"
                 "          replicatedJobs:\n"
                 "          - name: %s\n"
                 "            template:\n"
                 "              spec:\n"
                 "                template:\n"
                 "                  spec:\n"
                 "                    nodeSelector: {e2e.trainsched.io/pool: webhook}\n",
                 job);
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainJob\n"
                     "metadata: {name: %s, namespace: %s}\n"
                     "spec:\n"
                     "  runtimeRef: {name: %s, kind: TrainingRuntime}\n"
                     "%s",
                     name, namespace, rt, patches);
}

/* a Pod with two containers, the first with cpu requests and limits; gang: the pod-group label */
static json_t *pod(const char *name, const char *namespace, int gang)
{
    return e2e_yamlf("apiVersion: v1\n"
                     "kind: Pod\n"
                     "metadata:\n"
                     "  name: %s\n"
                     "  namespace: %s\n"
                     "  labels: {app: e2e-webhook%s}\n"
                     "spec:\n"
                     "  containers:\n"
                     "  - name: main\n"
                     "    image: busybox:1.36\n"
                     "    command: [sleep, '3600']\n"
                     "    resources:\n"
                     "      requests: {cpu: 100m, memory: 16Mi}\n"
                     "      limits: {cpu: 200m, memory: 16Mi}\n"
                     "  - name: side\n"
                     "    image: busybox:1.36\n"
                     "    command: [sleep, '3600']\n"
                     "    resources:\n"
                     "      requests: {cpu: 50m}\n",
                     name, namespace, gang ? ", " GANG_LABEL ": g" : "");
}

/* create (dry_run: dryRun=All) through c; returns the code, the created object into *out (when
 * not NULL), the API's message into err */
static enum common_rc try_create(struct common_kube *c, const struct common_kube_resource *r,
                                 const char *namespace, json_t *obj, int dry_run, json_t **out,
                                 struct common_error *err)
{
    struct common_kube_write_opts wo = {.strict = 1, .dry_run = dry_run};
    enum common_rc rc;
    if (out)
        *out = NULL;
    rc = common_kube_create(c, r, namespace, obj, &wo, out, err);
    json_decref(obj);
    return rc;
}

static json_t *create_ok(const struct common_kube_resource *r, const char *namespace, json_t *obj,
                         int dry_run)
{
    struct common_error err;
    json_t *out = NULL;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    char what[300];
    snprintf(what, sizeof(what), "%s %s", r->resource, name ? name : "?");
    ck_assert_msg(try_create(admin, r, namespace, obj, dry_run, &out, &err) == COMMON_OK,
                  "create %s%s: %s", what, dry_run ? " (dry run)" : "", err.msg);
    ck_assert_ptr_nonnull(out);
    return out;
}

/* create must be denied by webhook `webhook` (403) with a message containing every needle (NULL
 * terminated); returns nothing, asserts */
static void create_denied(const struct common_kube_resource *r, const char *namespace, json_t *obj,
                          int dry_run, const char *webhook, ...)
{
    struct common_error err;
    enum common_rc rc;
    char prefix[256];
    const char *needle;
    va_list ap;

    rc = try_create(admin, r, namespace, obj, dry_run, NULL, &err);
    ck_assert_msg(rc == COMMON_EUNAUTHORIZED, "create %s: want 403 from webhook %s, got %s: %s",
                  r->resource, webhook, common_rc_name(rc), rc ? err.msg : "(created)");
    ck_assert_msg(strstr(err.msg, "403") != NULL, "not a 403: %s", err.msg);
    snprintf(prefix, sizeof(prefix), "admission webhook \"%s\" denied the request: ", webhook);
    ck_assert_msg(strstr(err.msg, prefix) != NULL, "not denied by webhook %s: %s", webhook,
                  err.msg);
    va_start(ap, webhook);
    while ((needle = va_arg(ap, const char *)) != NULL)
        ck_assert_msg(strstr(err.msg, needle) != NULL, "the message lacks \"%s\": %s", needle,
                      err.msg);
    va_end(ap);
}

static json_t *get_obj(const struct common_kube_resource *r, const char *namespace,
                       const char *name)
{
    json_t *o = NULL;
    struct common_error err;
    enum common_rc rc = common_kube_get(admin, r, namespace, name, &o, &err);
    if (rc == COMMON_ENOTFOUND)
        return NULL;
    ck_assert_msg(rc == COMMON_OK, "get %s %s: %s", r->resource, name, err.msg);
    return o;
}

static json_t *path_get(const json_t *o, const char *path)
{
    char key[128];
    const char *p = path;
    while (o && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        char *end;
        long idx;
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        idx = strtol(key, &end, 10);
        if (json_is_array(o) && *end == 0 && end != key)
            o = json_array_get(o, (size_t)idx);
        else
            o = json_object_get(o, key);
        p = dot ? dot + 1 : p + n;
    }
    return (json_t *)o;
}

static const char *path_str(const json_t *o, const char *path)
{
    const char *s = json_string_value(path_get(o, path));
    return s ? s : "(none)";
}

/* "2026-11-29T20:03:28Z" (optionally with fractional seconds) as Unix seconds, -1 if not */
static long long rfc3339(const char *s)
{
    struct tm tm;
    int y, mo, d, h, mi, sec, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || !n)
        return -1;
    s += n;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            ;
    if (strcmp(s, "Z") != 0)
        return -1;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    return (long long)timegm(&tm);
}

/* ---- webhook configurations from manifests/webhook/webhooks.yaml ---- */

static void add_match_label(json_t *wh, const char *selector, const char *key, const char *value)
{
    json_t *sel = json_object_get(wh, selector), *ml;
    if (!json_is_object(sel)) {
        sel = json_object();
        json_object_set_new(wh, selector, sel);
    }
    ml = json_object_get(sel, "matchLabels");
    if (!json_is_object(ml)) {
        ml = json_object();
        json_object_set_new(sel, "matchLabels", ml);
    }
    json_object_set_new(ml, key, json_string(value));
}

static int cluster_scoped(const json_t *wh)
{
    const json_t *rule, *res;
    size_t i, j;
    json_array_foreach(json_object_get(wh, "rules"), i, rule)
    {
        const char *scope = json_string_value(json_object_get(rule, "scope"));
        if (scope && strcmp(scope, "Cluster") == 0)
            return 1;
        json_array_foreach(json_object_get(rule, "resources"), j, res)
        {
            if (json_string_value(res) &&
                strcmp(json_string_value(res), "clustertrainingruntimes") == 0)
                return 1;
        }
    }
    return 0;
}

/* clientConfig.service of one webhook -> url https://127.0.0.1:<port><its path> and caBundle;
 * the path goes into path */
static void point_at(json_t *wh, int port, const char *ca_b64, char *path, size_t size)
{
    json_t *cc = json_object_get(wh, "clientConfig");
    const char *p = json_string_value(path_get(cc, "service.path"));
    char url[600];
    ck_assert_msg(p != NULL, "webhooks.yaml: webhook %s has no clientConfig.service.path",
                  path_str(wh, "name"));
    snprintf(path, size, "%s", p);
    snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, path);
    json_object_del(cc, "service");
    json_object_set_new(cc, "url", json_string(url));
    json_object_set_new(cc, "caBundle", json_string(ca_b64));
}

/* Turn one shipped webhook into this run's: url to port, caBundle, selectors. pod_label: the
 * POD_LABEL value for the pod webhook. Its clientConfig.service.path goes into path. */
static void localize(json_t *wh, int port, const char *ca_b64, const char *pod_label, char *path,
                     size_t size)
{
    point_at(wh, port, ca_b64, path, size);
    if (cluster_scoped(wh)) {
        add_match_label(wh, "objectSelector", RUN_LABEL, run_id);
    } else {
        add_match_label(wh, "namespaceSelector", RUN_LABEL, run_id);
        if (strcmp(path, "/mutate-pod") == 0)
            add_match_label(wh, "namespaceSelector", POD_LABEL, pod_label);
    }
}

static void name_config(json_t *cfg, const char *name)
{
    json_t *meta = json_object_get(cfg, "metadata"), *labels;
    json_object_set_new(meta, "name", json_string(name));
    labels = json_object_get(meta, "labels");
    if (!json_is_object(labels)) {
        labels = json_object();
        json_object_set_new(meta, "labels", labels);
    }
    json_object_set_new(labels, "trainsched.io/e2e", json_string("webhook"));
}

/* the base64 of the CA that signed the daemons' certificates (in a) */
static char *ca_bundle(struct common_arena *a)
{
    char file[600], *ca, *b64;
    snprintf(file, sizeof(file), "%s/ca.crt", certdir);
    ca = e2e_read_text(file);
    ck_assert_msg(strstr(ca, "BEGIN CERTIFICATE") != NULL, "%s: no certificate", file);
    b64 = common_certs_base64(a, ca, strlen(ca));
    ck_assert_ptr_nonnull(b64);
    free(ca);
    return b64;
}

/* Create MutatingWebhookConfiguration `name`: the pod webhook of mutating (the shipped
 * configuration, left as it is) alone, at the daemon on https_port, for namespaces labelled
 * POD_LABEL=pod_label of this run */
static void create_pod_config(const json_t *mutating, const char *name, int https_port,
                              const char *ca_b64, const char *pod_label)
{
    struct common_error err;
    json_t *cfg = json_deep_copy(mutating), *keep = json_array(), *wh, *out = NULL;
    char path[256];
    size_t j;

    ck_assert_ptr_nonnull(cfg);
    json_array_foreach(json_object_get(cfg, "webhooks"), j, wh)
    {
        if (strcmp(path_str(wh, "clientConfig.service.path"), "/mutate-pod") == 0)
            json_array_append(keep, wh);
    }
    ck_assert_int_eq(json_array_size(keep), 1);
    json_object_set_new(cfg, "webhooks", keep);
    name_config(cfg, name);
    localize(json_array_get(keep, 0), https_port, ca_b64, pod_label, path, sizeof(path));
    ck_assert_msg(common_kube_create(admin, &mwcs, NULL, cfg, NULL, &out, &err) == COMMON_OK,
                  "create MutatingWebhookConfiguration %s: %s", name, err.msg);
    json_decref(out);
    json_decref(cfg);
}

static void create_configs(void)
{
    struct common_yaml_docs docs;
    struct common_error err;
    struct common_arena *a = common_arena_create(0);
    char file[600], *ca_b64;
    int seen_paths = 0, nmut = 0, nval = 0;
    json_t *sched = NULL;
    static const char *const want_paths[] = {"/validate-trainjob", "/validate-trainingruntime",
                                             "/validate-clustertrainingruntime", "/mutate-trainjob",
                                             "/mutate-pod"};

    ck_assert_ptr_nonnull(a);
    ca_b64 = ca_bundle(a);

    snprintf(file, sizeof(file), "%s/manifests/webhook/webhooks.yaml", TS_SOURCE_DIR);
    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_msg(docs.n == 2, "%s: %zu documents, want 2", file, docs.n);
    for (size_t i = 0; i < docs.n; i++) {
        json_t *cfg = docs.docs[i], *wh, *out = NULL;
        const char *kind = json_string_value(json_object_get(cfg, "kind"));
        int mutating = kind && strcmp(kind, "MutatingWebhookConfiguration") == 0;
        size_t j;
        ck_assert_msg(mutating || (kind && strcmp(kind, "ValidatingWebhookConfiguration") == 0),
                      "%s: unexpected kind %s", file, kind ? kind : "?");
        mutating ? nmut++ : nval++;
        if (mutating) {
            /* the "sched" configuration: the shipped pod webhook alone, at daemon "sched" */
            sched = json_deep_copy(cfg);
            ck_assert_ptr_nonnull(sched);
        }
        name_config(cfg, cfg_name);
        json_array_foreach(json_object_get(cfg, "webhooks"), j, wh)
        {
            char path[256];
            localize(wh, dmain.https_port, ca_b64, "main", path, sizeof(path));
            for (size_t k = 0; k < sizeof(want_paths) / sizeof(want_paths[0]); k++)
                if (strcmp(path, want_paths[k]) == 0) {
                    ck_assert_msg(!(seen_paths & (1 << k)), "%s: two webhooks at %s", file, path);
                    seen_paths |= 1 << k;
                }
        }
        ck_assert_msg(common_kube_create(admin, mutating ? &mwcs : &vwcs, NULL, cfg, NULL, &out,
                                         &err) == COMMON_OK,
                      "create %s %s: %s", kind, cfg_name, err.msg);
        json_decref(out);
    }
    ck_assert_msg(nmut == 1 && nval == 1, "%s: %d mutating, %d validating configurations", file,
                  nmut, nval);
    ck_assert_msg(seen_paths == 0x1f, "%s: not every webhook path is configured (mask %#x)", file,
                  seen_paths);

    /* the "sched" configuration: the shipped pod webhook alone, at daemon "sched" */
    create_pod_config(sched, cfg_sched, dsched.https_port, ca_b64, "sched");
    json_decref(sched);
    common_yaml_docs_free(&docs);
    common_arena_destroy(a);
}

/* delete one configuration (gone already is fine), retrying; no Check calls. Returns the last
 * code (COMMON_ENOTFOUND as COMMON_OK), the message into err. */
static enum common_rc delete_config(struct common_kube *c, const struct common_kube_resource *r,
                                    const char *name, struct common_error *err)
{
    enum common_rc rc = COMMON_OK;
    for (int attempt = 0; attempt < 5; attempt++) {
        rc = common_kube_delete(c, r, NULL, name, NULL, NULL, NULL, err);
        if (rc == COMMON_OK || rc == COMMON_ENOTFOUND)
            return COMMON_OK;
        fprintf(stderr, "deleting %s %s: %s (retrying)\n", r->resource, name, err->msg);
        e2e_nap(1000);
    }
    return rc;
}

/* every configuration of this run, bootstrap_converges' included (it may have failed before
 * deleting them) */
static void delete_configs(struct common_kube *c)
{
    const struct common_kube_resource *rs[] = {&vwcs, &mwcs, &mwcs, &vwcs, &mwcs, &mwcs};
    const char *names[] = {cfg_name, cfg_name, cfg_sched, cfg_boot, cfg_boot, cfg_unwired};
    for (int i = 0; i < 6; i++) {
        struct common_error err;
        if (names[i][0])
            delete_config(c, rs[i], names[i], &err);
    }
}

/* Probe every webhook once with dry-run creates (the API server picks up new configurations,
 * and namespace labels, within about a second): what does not answer yet into why, "" when
 * every webhook did. */
static void probe_once(char *why, size_t size)
{
    struct common_error err;
    json_t *out = NULL;
    enum common_rc rc;
    char prefix[200];

    why[0] = 0;
    /* validate-trainjob: a missing runtime is denied */
    rc = try_create(admin, &common_kube_trainjobs, ns, trainjob("probe", ns, "no-such-rt", NULL), 1,
                    NULL, &err);
    snprintf(prefix, sizeof(prefix), "admission webhook \"validate-trainjob.trainsched.io\"");
    if (rc != COMMON_EUNAUTHORIZED || !strstr(err.msg, prefix)) {
        snprintf(why, size, "validate-trainjob: %s", rc ? err.msg : "admitted");
        return;
    }
    /* mutate-trainjob: time stamped; validate-trainjob admits (rt is in the daemon's cache) */
    rc = try_create(admin, &common_kube_trainjobs, ns, trainjob("probe", ns, "rt", "node"), 1, &out,
                    &err);
    if (rc != COMMON_OK || !json_is_string(path_get(out, "spec.runtimePatches.0.time"))) {
        snprintf(why, size, "mutate-trainjob: %s", rc ? err.msg : "no time stamped");
        json_decref(out);
        return;
    }
    json_decref(out);
    /* validate-trainingruntime, validate-clustertrainingruntime: 2 replicas denied */
    rc = try_create(admin, &common_kube_trainingruntimes, ns, runtime("probe", ns, 2, ""), 1, NULL,
                    &err);
    if (rc != COMMON_EUNAUTHORIZED || !strstr(err.msg, "validate-trainingruntime.trainsched.io")) {
        snprintf(why, size, "validate-trainingruntime: %s", rc ? err.msg : "admitted");
        return;
    }
    {
        char labels[200];
        snprintf(labels, sizeof(labels), "%s: %s", RUN_LABEL, run_id);
        rc = try_create(admin, &common_kube_clustertrainingruntimes, NULL,
                        runtime(cfg_name, NULL, 2, labels), 1, NULL, &err);
    }
    if (rc != COMMON_EUNAUTHORIZED ||
        !strstr(err.msg, "validate-clustertrainingruntime.trainsched.io")) {
        snprintf(why, size, "validate-clustertrainingruntime: %s", rc ? err.msg : "admitted");
        return;
    }
    /* mutate-pod on both daemons */
    for (int i = 0; i < 2; i++) {
        rc = try_create(admin, &common_kube_pods, i ? ns2 : ns, pod("probe", i ? ns2 : ns, 1), 1,
                        &out, &err);
        if (rc != COMMON_OK ||
            !json_is_string(json_object_get(path_get(out, "spec.containers.0.resources.limits"),
                                            GANG_RESOURCE)) ||
            (i && strcmp(path_str(out, "spec.schedulerName"), GANG_SCHEDULER) != 0)) {
            snprintf(why, size, "mutate-pod (%s): %s", i ? "sched" : "main",
                     rc ? err.msg : "not mutated");
            json_decref(out);
            return;
        }
        json_decref(out);
    }
}

static void wait_configs_effective(double secs)
{
    double t0 = e2e_now_s();
    char why[1200];
    for (;;) {
        probe_once(why, sizeof(why));
        if (!why[0])
            break;
        ck_assert_msg(e2e_now_s() - t0 < secs, "webhooks not in effect after %.0f s: %s", secs,
                      why);
        e2e_nap(200);
    }
    fprintf(stderr, "webhook: configurations in effect %.2f s after their creation\n",
            e2e_now_s() - t0);
}

/* ---- TLS: the serial of the certificate the daemon serves ---- */

static void serial_hex(X509 *x, char *out, size_t size)
{
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    snprintf(out, size, "%s", hex ? hex : "");
    OPENSSL_free(hex);
    BN_free(bn);
}

static void file_serial(const char *path, char *out, size_t size)
{
    struct common_error err;
    char *pem = e2e_read_text(path);
    X509 *x = common_certs_x509_from_pem(pem, path, &err);
    ck_assert_msg(x != NULL, "%s", err.msg);
    serial_hex(x, out, size);
    X509_free(x);
    free(pem);
}

/* A new TLS connection to 127.0.0.1:port, verified against ca_file for IP 127.0.0.1 (as the API
 * server does): the served certificate's serial into out. Returns 0, or -1 with the reason in
 * out. */
static int served_serial(int port, const char *ca_file, char *out, size_t size)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = NULL;
    X509 *peer = NULL;
    int fd = -1, rc = -1;

    snprintf(out, size, "no TLS context");
    if (!ctx)
        goto done;
    if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
        snprintf(out, size, "cannot load %s", ca_file);
        goto done;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_CTX_get0_param(ctx), "127.0.0.1");
    fd = connect_local(port, 5);
    if (fd < 0) {
        snprintf(out, size, "connect: %s", strerror(errno));
        goto done;
    }
    ssl = SSL_new(ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1)
        goto done;
    if (SSL_connect(ssl) != 1) {
        char e[256];
        ERR_error_string_n(ERR_get_error(), e, sizeof(e));
        snprintf(out, size, "handshake: %s (verify: %s)", e,
                 X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
        goto done;
    }
    peer = SSL_get1_peer_certificate(ssl);
    if (!peer) {
        snprintf(out, size, "no peer certificate");
        goto done;
    }
    serial_hex(peer, out, size);
    rc = 0;
    SSL_shutdown(ssl);
done:
    X509_free(peer);
    SSL_free(ssl);
    if (fd >= 0)
        close(fd);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return rc;
}

/* ---- fixtures ---- */

static void mark_passed(void)
{
    char p[600];
    FILE *f;
    snprintf(p, sizeof(p), "%s/passed", tmpdir);
    f = fopen(p, "a");
    ck_assert_ptr_nonnull(f);
    fputs("1\n", f);
    fclose(f);
}

#define NTESTS 12

static int passed_count(void)
{
    char p[600], *s;
    int n = 0;
    snprintf(p, sizeof(p), "%s/passed", tmpdir);
    s = e2e_slurp(p);
    for (char *c = s; c && *c; c++)
        n += *c == '\n';
    free(s);
    return n;
}

/* RUN_LABEL=run and (pods not NULL) POD_LABEL=pods on namespace name */
static void label_ns(const char *name, const char *run, const char *pods)
{
    struct common_error err;
    char body[512];
    json_t *out = NULL;
    if (pods)
        snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":{\"%s\":\"%s\",\"%s\":\"%s\"}}}",
                 RUN_LABEL, run, POD_LABEL, pods);
    else
        snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":{\"%s\":\"%s\"}}}", RUN_LABEL, run);
    ck_assert_msg(common_kube_patch(admin, &common_kube_namespaces, NULL, name,
                                    COMMON_KUBE_MERGE_PATCH, body, NULL, &out, &err) == COMMON_OK,
                  "label namespace %s: %s", name, err.msg);
    json_decref(out);
}

static void outer_setup(void)
{
    double t0 = e2e_now_s();
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/trainsched-webhook-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(run_id, sizeof(run_id), "wh-%ld-%d", (long)time(NULL) % 100000, rand() % 100000);
    snprintf(cfg_name, sizeof(cfg_name), "trainsched-e2e-%s", run_id);
    snprintf(cfg_sched, sizeof(cfg_sched), "trainsched-e2e-%s-sched", run_id);
    snprintf(cfg_boot, sizeof(cfg_boot), "trainsched-e2e-%s-boot", run_id);
    snprintf(cfg_unwired, sizeof(cfg_unwired), "trainsched-e2e-%s-unwired", run_id);
    snprintf(boot_id, sizeof(boot_id), "%s-boot", run_id);
    snprintf(certdir, sizeof(certdir), "%s/certs", tmpdir);
    snprintf(certdir2, sizeof(certdir2), "%s/certs2", tmpdir);
    admin = e2e_client(20000, 0);
    write_sa_kubeconfig();
    e2e_make_ns(admin, "wh", ns, sizeof(ns));
    e2e_make_ns(admin, "wh2", ns2, sizeof(ns2));
    e2e_make_ns(admin, "whboot", ns3, sizeof(ns3));
    label_ns(ns, run_id, "main");
    label_ns(ns2, run_id, "sched");
    label_ns(ns3, boot_id, NULL);
    /* runtimes before the daemons, so their caches hold them once ready */
    json_decref(create_ok(&common_kube_trainingruntimes, ns, runtime("rt", ns, 1, ""), 0));
    json_decref(create_ok(&common_kube_trainingruntimes, ns2, runtime("rt", ns2, 1, ""), 0));
    json_decref(create_ok(&common_kube_trainingruntimes, ns2, runtime("elsewhere", ns2, 1, ""), 0));
    json_decref(create_ok(&common_kube_trainingruntimes, ns3, runtime("rt", ns3, 1, ""), 0));

    make_certs(certdir, NULL);
    make_certs(certdir2, certdir); /* same CA, so one caBundle serves both daemons */
    start_daemon(&dmain, "main", certdir, NULL, 1);
    start_daemon(&dsched, "sched", certdir2, GANG_SCHEDULER, 1);
    wait_ready(&dmain, 60);
    wait_ready(&dsched, 60);
    fprintf(stderr, "webhook: daemons ready %.2f s into the setup\n", e2e_now_s() - t0);

    cfg_made = 1;
    create_configs();
    wait_configs_effective(30);
    common_kube_client_destroy(admin);
    admin = NULL;
    fprintf(stderr, "webhook: setup took %.2f s\n", e2e_now_s() - t0);
}

static void stop_daemon(struct daemon *d)
{
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        d->pid = 0;
    }
}

/* an admin client without Check calls (cleanup_all may run after the runner has finished) */
static struct common_kube *cleanup_client(void)
{
    struct common_kubeconfig cfg;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;
    struct common_kube *k = NULL;
    const char *path = getenv("KUBECONFIG");
    if (!path)
        return NULL;
    memset(&cfg, 0, sizeof(cfg));
    o.timeout_ms = 20000;
    if (common_kubeconfig_load(path, NULL, &cfg, &err) == COMMON_OK)
        k = common_kube_client_create(&cfg, &o, &err);
    common_kubeconfig_free(&cfg);
    if (!k)
        fprintf(stderr, "webhook cleanup: no API client: %s\n", err.msg);
    return k;
}

/* The runner's teardown, also called by main() (Check skips the unchecked teardown when the
 * setup failed). Makes no Check calls. */
static void cleanup_all(void)
{
    struct common_kube *c;
    int ok;
    if (cleaned || !tmpdir[0])
        return;
    cleaned = 1;
    ok = passed_count() == NTESTS;
    if (admin) {
        common_kube_client_destroy(admin);
        admin = NULL;
    }
    c = cleanup_client();
    /* first: failurePolicy Fail must not outlive the daemons */
    if (cfg_made && c)
        delete_configs(c);
    stop_daemon(&dmain);
    stop_daemon(&dsched);
    stop_daemon(&dunwired);
    if (!ok) {
        if (dmain.log[0])
            e2e_echo_tail(dmain.log, 40);
        if (dsched.log[0])
            e2e_echo_tail(dsched.log, 40);
        fprintf(stderr, "webhook: a test failed: logs kept in %s\n", tmpdir);
    }
    if (ns[0] && c)
        e2e_drop_ns(c, ns);
    if (ns2[0] && c)
        e2e_drop_ns(c, ns2);
    if (ns3[0] && c)
        e2e_drop_ns(c, ns3);
    common_kube_client_destroy(c);
    if (ok) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
}

static void outer_teardown(void)
{
    cleanup_all();
}

static void setup(void)
{
    enum common_log_level level;
    if (getenv("E2E_LOG_LEVEL") && common_log_parse_level(getenv("E2E_LOG_LEVEL"), &level) == 0)
        common_log_set_level(level);
    admin = e2e_client(20000, 0);
}

static void teardown(void)
{
    struct common_error err;
    /* reached after a failure only with CK_FORK=no; with fork the runner's teardown does it */
    if (boot_made && admin) {
        delete_config(admin, &mwcs, cfg_boot, &err);
        delete_config(admin, &vwcs, cfg_boot, &err);
        boot_made = 0;
    }
    common_kube_client_destroy(admin);
    admin = NULL;
}

/* ---- tests ---- */

START_TEST(invalid_trainjob_denied)
{
    json_t *tj;

    /* a runtimePatch naming a replicated job the runtime does not have (rule 11, case 80) */
    create_denied(&common_kube_trainjobs, ns, trainjob("bad-patch", ns, "rt", "no-such-job"), 0,
                  "validate-trainjob.trainsched.io",
                  "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]",
                  "Invalid value: {\"name\":\"no-such-job\"",
                  "must not have replicated job that doesn't exist in the runtime job template",
                  NULL);
    ck_assert_ptr_null(get_obj(&common_kube_trainjobs, ns, "bad-patch"));

    /* case 71: the TrainingRuntime exists, but in another namespace */
    tj = create_ok(&common_kube_trainjobs, ns2, trainjob("uses-elsewhere", ns2, "elsewhere", NULL),
                   0);
    ck_assert_str_eq(path_str(tj, "spec.runtimeRef.name"), "elsewhere");
    json_decref(tj);
    create_denied(&common_kube_trainjobs, ns, trainjob("uses-elsewhere", ns, "elsewhere", NULL), 0,
                  "validate-trainjob.trainsched.io", "spec.runtimeRef: Invalid value: ",
                  "TrainingRuntime.trainer.kubeflow.org \"elsewhere\" not found",
                  "specified trainingRuntime must be created before the TrainJob is created", NULL);
    ck_assert_ptr_null(get_obj(&common_kube_trainjobs, ns, "uses-elsewhere"));
    mark_passed();
}
END_TEST

START_TEST(valid_trainjob_defaulted)
{
    long long t0 = (long long)time(NULL), t1, stamped;
    json_t *tj, *got, *out = NULL;
    struct common_error err;
    const char *time_s;
    char first_time[64];

    tj = create_ok(&common_kube_trainjobs, ns, trainjob("defaulted", ns, "rt", "node"), 0);
    t1 = (long long)time(NULL);
    json_decref(tj);
    got = get_obj(&common_kube_trainjobs, ns, "defaulted");
    ck_assert_ptr_nonnull(got);
    /* stamped by our mutating webhook (the CRD has no default for it) */
    time_s = json_string_value(path_get(got, "spec.runtimePatches.0.time"));
    ck_assert_msg(time_s != NULL, "runtimePatches[0].time not set: %s",
                  json_dumps(path_get(got, "spec.runtimePatches"), JSON_COMPACT));
    stamped = rfc3339(time_s);
    ck_assert_msg(stamped >= t0 - 2 && stamped <= t1 + 2,
                  "runtimePatches[0].time %s is not the time of the create (%lld..%lld)", time_s,
                  t0, t1);
    snprintf(first_time, sizeof(first_time), "%s", time_s);
    ck_assert_str_eq(path_str(got, "spec.runtimePatches.0.manager"), PATCH_MANAGER);
    {
        json_t *sel = path_get(got, "spec.runtimePatches.0.trainingRuntimeSpec.template.spec."
                                    "replicatedJobs.0.template.spec.template.spec.nodeSelector");
        ck_assert_str_eq(json_string_value(json_object_get(sel, "e2e.trainsched.io/pool")),
                         "webhook");
    }
    ck_assert_msg(json_is_false(path_get(got, "spec.suspend")), "spec.suspend: %s",
                  json_dumps(path_get(got, "spec"), JSON_COMPACT));
    ck_assert_str_eq(path_str(got, "spec.managedBy"), "trainer.kubeflow.org/trainjob-controller");
    ck_assert_str_eq(path_str(got, "spec.runtimeRef.apiGroup"), "trainer.kubeflow.org");
    ck_assert_str_eq(path_str(got, "spec.runtimeRef.kind"), "TrainingRuntime");
    json_decref(got);

    /* an UPDATE that leaves the patch alone keeps its time (a second later "now" differs) */
    e2e_nap(1100);
    ck_assert_msg(common_kube_patch(admin, &common_kube_trainjobs, ns, "defaulted",
                                    COMMON_KUBE_MERGE_PATCH,
                                    "{\"metadata\":{\"labels\":{\"touched\":\"yes\"}}}", NULL, &out,
                                    &err) == COMMON_OK,
                  "update: %s", err.msg);
    ck_assert_str_eq(path_str(out, "metadata.labels.touched"), "yes");
    ck_assert_str_eq(path_str(out, "spec.runtimePatches.0.time"), first_time);
    json_decref(out);
    mark_passed();
}
END_TEST

/* trainsched_webhook_runtime_reads_total{result="<result>"} on daemon d */
static double runtime_reads(const struct daemon *d, const char *result)
{
    return daemon_metric(d, "trainsched_webhook_runtime_reads_total", "result", result);
}

#define TOGETHER_ROUNDS 100

/* `kubectl apply -f` of one file holding a TrainingRuntime and a TrainJob on it: the TrainJob
 * reaches the webhook a moment after the runtime is stored, often before the runtime's watch
 * event reaches the webhook's cache. Each round creates a new runtime and at once a TrainJob
 * naming it: every TrainJob is admitted (the webhook reads a runtime its cache has not seen from
 * the API server; before, such a TrainJob was refused "... not found: specified trainingRuntime
 * must be created before the TrainJob is created"). The daemon's counter of those reads says
 * how often the race happened. */
START_TEST(runtime_and_trainjob_created_together)
{
    double reads0 = runtime_reads(&dmain, "found");
    int refused = 0;
    char first[1024] = "";

    for (int i = 0; i < TOGETHER_ROUNDS; i++) {
        char rt[64], tj[64];
        struct common_error err;
        enum common_rc rc;
        json_t *o;

        snprintf(rt, sizeof(rt), "together-%d", i);
        snprintf(tj, sizeof(tj), "together-%d", i);
        /* the runtime skips the runtime webhook (as Trainer's configuration lets it): its
         * create returns sooner, so the TrainJob follows it closer */
        o = create_ok(&common_kube_trainingruntimes, ns,
                      runtime(rt, ns, 1, "trainer.kubeflow.org/webhook-validation: disabled"), 0);
        json_decref(o);
        rc = try_create(admin, &common_kube_trainjobs, ns, trainjob(tj, ns, rt, NULL), 0, NULL,
                        &err);
        if (rc != COMMON_OK) {
            refused++;
            if (!first[0])
                snprintf(first, sizeof(first), "%s: %s", common_rc_name(rc), err.msg);
        }
    }
    fprintf(stderr,
            "runtime_and_trainjob_created_together: %d rounds, %.0f runtime(s) read from the API "
            "server on a cache miss, %d refused\n",
            TOGETHER_ROUNDS, runtime_reads(&dmain, "found") - reads0, refused);
    ck_assert_msg(refused == 0, "%d of %d TrainJobs refused; the first: %s", refused,
                  TOGETHER_ROUNDS, first);
    mark_passed();
}
END_TEST

/* a lookup whose cache never holds a runtime: the cache of a webhook that has not seen the watch
 * event of a runtime created a moment ago */
static enum common_rc lagging_cache(void *ctx, const char *kind, const char *namespace,
                                    const char *name, json_t **out, struct common_error *err)
{
    (void)ctx;
    (void)namespace;
    *out = NULL;
    if (strcmp(kind, "JobSet") == 0)
        return common_error_set(err, COMMON_EUNSUPPORTED, "no cache of JobSets");
    return common_error_set(err, COMMON_ENOTFOUND, "%s %s not in the cache", kind, name);
}

/* POST an AdmissionReview of a CREATE of TrainJob tj (consumed) to /validate-trainjob on the
 * plain-HTTP port; returns the response's "response" object (a new reference) */
static json_t *review_trainjob(int port, json_t *tj)
{
    json_t *review = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, "
        "s:s, s:s, s:o}}",
        "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid", "e2e-lag",
        "kind", "group", "trainer.kubeflow.org", "version", "v1alpha1", "kind", "TrainJob",
        "resource", "group", "trainer.kubeflow.org", "version", "v1alpha1", "resource", "trainjobs",
        "namespace", ns, "operation", "CREATE", "name",
        json_string_value(json_object_get(json_object_get(tj, "metadata"), "name")), "object", tj);
    char *body = json_dumps(review, JSON_COMPACT), head[256], buf[65536];
    size_t got = 0;
    ssize_t r;
    int fd = connect_local(port, 20);
    json_t *resp, *out;
    const char *split;

    ck_assert_ptr_nonnull(body);
    ck_assert_int_ge(fd, 0);
    snprintf(head, sizeof(head),
             "POST /validate-trainjob HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
             "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
             strlen(body));
    ck_assert(write(fd, head, strlen(head)) == (ssize_t)strlen(head));
    ck_assert(write(fd, body, strlen(body)) == (ssize_t)strlen(body));
    while (got < sizeof(buf) - 1 && (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd);
    free(body);
    json_decref(review);
    split = strstr(buf, "\r\n\r\n");
    ck_assert_msg(split != NULL, "no HTTP answer: %s", buf);
    resp = json_loads(split + 4, 0, NULL);
    ck_assert_msg(resp != NULL, "not JSON: %s", split + 4);
    out = json_incref(json_object_get(resp, "response"));
    json_decref(resp);
    ck_assert_ptr_nonnull(out);
    return out;
}

/* The same race made certain: the webhook's cache never holds the runtime (lagging_cache). A
 * TrainJob on TrainingRuntime "rt", which exists, is admitted: the webhook reads the runtime
 * through its API client before refusing (before, it was refused "... not found: specified
 * trainingRuntime must be created before the TrainJob is created"). A TrainJob on a runtime
 * that does not exist is still refused with that message, after the API server's 404. */
START_TEST(runtime_missing_from_the_cache_is_read_from_the_api_server)
{
    struct webhook_server_opts wo = {0};
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct common_metrics *m = common_metrics_create();
    struct common_kube *k = e2e_client(WEBHOOK_RUNTIME_GET_TIMEOUT_MS, 1);
    struct common_httpd *h;
    struct webhook_server *w;
    struct common_error err;
    json_t *resp;
    const char *msg;

    ck_assert_ptr_nonnull(m);
    wo.lookup = lagging_cache;
    wo.kube = k;
    wo.metrics = m;
    w = webhook_server_create(&wo, &err);
    ck_assert_msg(w != NULL, "%s", err.msg);
    ho.address = "127.0.0.1:0";
    h = common_httpd_create(&ho, &err);
    ck_assert_msg(h != NULL, "%s", err.msg);
    ck_assert_msg(webhook_server_install(w, h, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_msg(common_httpd_start(h, &err) == COMMON_OK, "%s", err.msg);

    resp = review_trainjob(common_httpd_port(h), trainjob("lagged", ns, "rt", NULL));
    ck_assert_msg(json_is_true(json_object_get(resp, "allowed")), "refused: %s",
                  json_dumps(resp, JSON_COMPACT));
    json_decref(resp);

    resp = review_trainjob(common_httpd_port(h), trainjob("lagged", ns, "no-such-rt", NULL));
    msg = json_string_value(json_object_get(json_object_get(resp, "status"), "message"));
    ck_assert_msg(json_is_false(json_object_get(resp, "allowed")) && msg &&
                      strstr(msg, "TrainingRuntime.trainer.kubeflow.org \"no-such-rt\" not "
                                  "found: specified trainingRuntime must be created before the "
                                  "TrainJob is created"),
                  "%s", json_dumps(resp, JSON_COMPACT));
    json_decref(resp);

    common_httpd_stop(h);
    common_httpd_destroy(h);
    webhook_server_destroy(w);
    common_metrics_destroy(m);
    common_kube_client_destroy(k);
    mark_passed();
}
END_TEST

START_TEST(runtime_policy_denied)
{
    double before, after;
    char labels[256];
    json_t *rt;

    /* case 86: an ancestor job with 2 replicas */
    create_denied(&common_kube_trainingruntimes, ns, runtime("two-replicas", ns, 2, ""), 0,
                  "validate-trainingruntime.trainsched.io",
                  "spec.template.spec.replicatedJobs[0].replicas", "Invalid value: 2",
                  "always must be 1", NULL);
    ck_assert_ptr_null(get_obj(&common_kube_trainingruntimes, ns, "two-replicas"));
    /* the backend annotation (docs/backends.md): an unknown value, and one that contradicts
     * spec.podGroupPolicy, are denied naming the fields */
    rt = runtime("unknown-backend", ns, 1, "");
    json_object_set_new(json_object_get(rt, "metadata"), "annotations",
                        json_pack("{s:s}", "trainsched.io/backend", "yunikorn"));
    create_denied(&common_kube_trainingruntimes, ns, rt, 0,
                  "validate-trainingruntime.trainsched.io",
                  "metadata.annotations[\"trainsched.io/backend\"]: Unsupported value: "
                  "\"yunikorn\"",
                  NULL);
    rt = runtime_pgp("two-backends", ns, 1, "", "{coscheduling: {}}");
    json_object_set_new(json_object_get(rt, "metadata"), "annotations",
                        json_pack("{s:s}", "trainsched.io/backend", "native"));
    create_denied(&common_kube_trainingruntimes, ns, rt, 0,
                  "validate-trainingruntime.trainsched.io",
                  "metadata.annotations[\"trainsched.io/backend\"]: Invalid value: \"native\"",
                  "spec.podGroupPolicy.coscheduling", NULL);
    ck_assert_ptr_null(get_obj(&common_kube_trainingruntimes, ns, "unknown-backend"));
    ck_assert_ptr_null(get_obj(&common_kube_trainingruntimes, ns, "two-backends"));
    /* the same as a ClusterTrainingRuntime (cluster-scoped: selected by this run's label) */
    snprintf(labels, sizeof(labels), "%s: %s", RUN_LABEL, run_id);
    create_denied(&common_kube_clustertrainingruntimes, NULL, runtime(cfg_name, NULL, 2, labels), 1,
                  "validate-clustertrainingruntime.trainsched.io",
                  "spec.template.spec.replicatedJobs[0].replicas", "always must be 1", NULL);

    /* labelled webhook-validation=disabled: never sent, so admitted as it is */
    before = webhook_requests(&dmain, "validate-trainingruntime");
    ck_assert_msg(before >= 2, "validate-trainingruntime answered %g requests, want >= 2", before);
    rt = create_ok(&common_kube_trainingruntimes, ns,
                   runtime("disabled", ns, 2, "trainer.kubeflow.org/webhook-validation: disabled"),
                   0);
    ck_assert_int_eq(
        json_integer_value(path_get(rt, "spec.template.spec.replicatedJobs.0.replicas")), 2);
    json_decref(rt);
    rt = get_obj(&common_kube_trainingruntimes, ns, "disabled");
    ck_assert_ptr_nonnull(rt);
    json_decref(rt);
    after = webhook_requests(&dmain, "validate-trainingruntime");
    ck_assert_msg(after == before,
                  "validate-trainingruntime requests went from %g to %g: the disabled runtime was "
                  "sent",
                  before, after);
    mark_passed();
}
END_TEST

/* Three gaps of the runtime rules, through the real API server:
 * - an UPDATE of a namespaced TrainingRuntime to `replicas: 2` on its trainer job is refused
 *   like the CREATE is (before, Trainer's rule let any UPDATE through);
 * - a runtime with both coscheduling and volcano in podGroupPolicy is invalid (422) at
 *   spec.podGroupPolicy (before, it was stored and a TrainJob got two PodGroups);
 * - a runtime asking scheduleTimeoutSeconds 3000, and a TrainJob on it, are admitted with a
 *   warning that the extender cuts it to 628 s (the daemon's --extender-bind-timeout default of
 *   630 s, as in the shipped scheduler config, less the 2 s hold margin); before, silently. */
START_TEST(runtime_update_union_and_timeout_cap)
{
    struct common_kube_write_opts wo = {.strict = 1};
    struct common_buf warn;
    struct common_error err;
    json_t *rt, *got;
    enum common_rc rc;
    double t0;

    /* UPDATE validated like CREATE */
    json_decref(create_ok(
        &common_kube_trainingruntimes, ns,
        runtime_pgp("upd", ns, 1, "", "{coscheduling: {scheduleTimeoutSeconds: 60}}"), 0));
    got = get_obj(&common_kube_trainingruntimes, ns, "upd");
    ck_assert_ptr_nonnull(got);
    rt = runtime_pgp("upd", ns, 2, "", "{coscheduling: {scheduleTimeoutSeconds: 60}}");
    json_object_set(json_object_get(rt, "metadata"), "resourceVersion",
                    path_get(got, "metadata.resourceVersion"));
    json_decref(got);
    rc = common_kube_update(admin, &common_kube_trainingruntimes, ns, rt, &wo, NULL, &err);
    json_decref(rt);
    ck_assert_msg(rc == COMMON_EUNAUTHORIZED && strstr(err.msg, "403") &&
                      strstr(err.msg,
                             "admission webhook \"validate-trainingruntime.trainsched.io\" "
                             "denied the request") &&
                      strstr(err.msg, "spec.template.spec.replicatedJobs[0].replicas") &&
                      strstr(err.msg, "always must be 1"),
                  "UPDATE to replicas 2: want 403 from validate-trainingruntime, got %s: %s",
                  common_rc_name(rc), rc ? err.msg : "(updated)");
    got = get_obj(&common_kube_trainingruntimes, ns, "upd");
    ck_assert_int_eq(
        json_integer_value(path_get(got, "spec.template.spec.replicatedJobs.0.replicas")), 1);
    json_decref(got);

    /* two gang policies: 422 at spec.podGroupPolicy */
    rc = try_create(
        admin, &common_kube_trainingruntimes, ns,
        runtime_pgp("both", ns, 1, "", "{coscheduling: {scheduleTimeoutSeconds: 60}, volcano: {}}"),
        0, NULL, &err);
    ck_assert_msg(rc == COMMON_EINVAL && strstr(err.msg, "422") &&
                      strstr(err.msg, "validate-trainingruntime.trainsched.io") &&
                      strstr(err.msg, "spec.podGroupPolicy: Invalid value: ") &&
                      strstr(err.msg, "Only one of the policy can be configured"),
                  "both policies: want 422 from validate-trainingruntime, got %s: %s",
                  common_rc_name(rc), rc ? err.msg : "(created)");
    ck_assert_ptr_null(get_obj(&common_kube_trainingruntimes, ns, "both"));

    /* a gang timeout above the cap: admitted with a warning, the runtime and a TrainJob on it */
    common_buf_init(&warn, 1 << 16);
    wo.warnings = &warn;
    rt = runtime_pgp("long", ns, 1, "", "{coscheduling: {scheduleTimeoutSeconds: 3000}}");
    rc = common_kube_create(admin, &common_kube_trainingruntimes, ns, rt, &wo, NULL, &err);
    json_decref(rt);
    ck_assert_msg(rc == COMMON_OK, "runtime long: %s", err.msg);
    ck_assert_msg(warn.data &&
                      strstr(warn.data, "spec.podGroupPolicy.coscheduling."
                                        "scheduleTimeoutSeconds: 3000 is above") &&
                      strstr(warn.data, "time out after 628 s"),
                  "runtime long: warnings %s", warn.data ? warn.data : "(none)");
    fprintf(stderr, "timeout cap: runtime warning: %s", warn.data);
    wo.dry_run = 1;
    for (t0 = e2e_now_s();; e2e_nap(200)) { /* until the daemon's runtime cache has it */
        json_t *tj = trainjob("long-tj", ns, "long", NULL);
        rc = common_kube_create(admin, &common_kube_trainjobs, ns, tj, &wo, NULL, &err);
        json_decref(tj);
        if (rc != COMMON_EUNAUTHORIZED || !strstr(err.msg, "not found") || e2e_now_s() - t0 > 20)
            break;
    }
    ck_assert_msg(rc == COMMON_OK, "TrainJob long-tj (dry run): %s", err.msg);
    ck_assert_msg(warn.data &&
                      strstr(warn.data, "PodGroup spec.scheduleTimeoutSeconds: 3000 is "
                                        "above") &&
                      strstr(warn.data, "time out after 628 s"),
                  "TrainJob long-tj: warnings %s", warn.data ? warn.data : "(none)");
    fprintf(stderr, "timeout cap: TrainJob warning: %s", warn.data);
    common_buf_free(&warn);
    mark_passed();
}
END_TEST

START_TEST(gang_pods_mutated)
{
    json_t *sent, *got, *out;
    const char *cname;
    size_t i;

    /* gang pod, "main" daemon (no scheduler name) */
    out = create_ok(&common_kube_pods, ns, pod("gang", ns, 1), 0);
    json_decref(out);
    got = get_obj(&common_kube_pods, ns, "gang");
    ck_assert_ptr_nonnull(got);
    sent = pod("gang", ns, 1);
    {
        json_t *req = path_get(got, "spec.containers.0.resources.requests");
        json_t *lim = path_get(got, "spec.containers.0.resources.limits");
        ck_assert_str_eq(json_string_value(json_object_get(req, GANG_RESOURCE)), "1");
        ck_assert_str_eq(json_string_value(json_object_get(lim, GANG_RESOURCE)), "1");
        /* what was there stays */
        ck_assert_str_eq(json_string_value(json_object_get(req, "cpu")), "100m");
        ck_assert_str_eq(json_string_value(json_object_get(lim, "cpu")), "200m");
        ck_assert_int_eq(json_object_size(req), 3);
        ck_assert_int_eq(json_object_size(lim), 3);
    }
    /* only the first container */
    ck_assert_msg(json_equal(path_get(got, "spec.containers.1.resources"),
                             path_get(sent, "spec.containers.1.resources")),
                  "second container changed: %s",
                  json_dumps(path_get(got, "spec.containers.1.resources"), JSON_COMPACT));
    ck_assert_str_eq(path_str(got, "spec.schedulerName"), "default-scheduler");
    json_decref(got);
    json_decref(sent);

    /* a pod without the label: resources as sent */
    out = create_ok(&common_kube_pods, ns, pod("plain", ns, 0), 0);
    json_decref(out);
    got = get_obj(&common_kube_pods, ns, "plain");
    ck_assert_ptr_nonnull(got);
    sent = pod("plain", ns, 0);
    json_array_foreach(path_get(sent, "spec.containers"), i, out)
    {
        json_t *gc = json_array_get(path_get(got, "spec.containers"), i);
        cname = path_str(out, "name");
        ck_assert_str_eq(path_str(gc, "name"), cname);
        ck_assert_msg(
            json_equal(json_object_get(gc, "resources"), json_object_get(out, "resources")),
            "container %s of the plain pod: resources %s, sent %s", cname,
            json_dumps(json_object_get(gc, "resources"), JSON_COMPACT),
            json_dumps(json_object_get(out, "resources"), JSON_COMPACT));
    }
    ck_assert_str_eq(path_str(got, "spec.schedulerName"), "default-scheduler");
    json_decref(got);
    json_decref(sent);

    /* gang pod in the second namespace: daemon "sched" (--gang-scheduler-name) */
    out = create_ok(&common_kube_pods, ns2, pod("gang", ns2, 1), 0);
    json_decref(out);
    got = get_obj(&common_kube_pods, ns2, "gang");
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(path_str(got, "spec.schedulerName"), GANG_SCHEDULER);
    ck_assert_str_eq(json_string_value(json_object_get(
                         path_get(got, "spec.containers.0.resources.limits"), GANG_RESOURCE)),
                     "1");
    ck_assert_str_eq(json_string_value(json_object_get(
                         path_get(got, "spec.containers.0.resources.requests"), GANG_RESOURCE)),
                     "1");
    json_decref(got);
    /* a plain pod there keeps its scheduler (the webhook never sees it) */
    out = create_ok(&common_kube_pods, ns2, pod("plain", ns2, 0), 0);
    ck_assert_str_eq(path_str(out, "spec.schedulerName"), "default-scheduler");
    ck_assert_ptr_null(
        json_object_get(path_get(out, "spec.containers.0.resources.limits"), GANG_RESOURCE));
    json_decref(out);
    mark_passed();
}
END_TEST

/*
 * The pod webhook of a daemon started with webhook.extenderWired false (the default, for a
 * kube-scheduler that does not call trainsched's extender): a gang pod is admitted as sent, no
 * trainsched.io/gang request, and the user creating it (kubectl) sees the webhook's warning.
 * The daemon "unwired" and its configuration (the shipped pod webhook alone) are made here, for
 * a namespace of this test only.
 */
START_TEST(gang_pods_unrouted_while_unwired)
{
    struct common_error err;
    struct common_arena *a = common_arena_create(0);
    struct common_yaml_docs docs;
    char file[600], ns4[128], podfile[600], errfile[600], cmd[2400], *warn;
    json_t *cfg = NULL, *out = NULL, *got, *sent;
    const char *kubectl = getenv("KUBECTL");
    double t0, before;
    int rc;

    ck_assert_msg(kubectl && *kubectl, "KUBECTL not set: source the test bed's env");
    start_daemon(&dunwired, "unwired", certdir, NULL, 0);
    wait_ready(&dunwired, 60);
    e2e_make_ns(admin, "whunwired", ns4, sizeof(ns4));
    label_ns(ns4, run_id, "unwired");

    /* the shipped pod webhook alone, at daemon "unwired", for namespaces labelled =unwired */
    snprintf(file, sizeof(file), "%s/manifests/webhook/webhooks.yaml", TS_SOURCE_DIR);
    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &err) == COMMON_OK, "%s", err.msg);
    for (size_t i = 0; i < docs.n; i++)
        if (strcmp(path_str(docs.docs[i], "kind"), "MutatingWebhookConfiguration") == 0)
            cfg = json_deep_copy(docs.docs[i]);
    common_yaml_docs_free(&docs);
    ck_assert_ptr_nonnull(cfg);
    create_pod_config(cfg, cfg_unwired, dunwired.https_port, ca_bundle(a), "unwired");
    json_decref(cfg);

    /* in effect once a dry-run gang pod reaches the daemon */
    t0 = e2e_now_s();
    before = webhook_requests(&dunwired, "mutate-pod");
    for (;; e2e_nap(200)) {
        out = NULL;
        try_create(admin, &common_kube_pods, ns4, pod("probe", ns4, 1), 1, &out, &err);
        json_decref(out);
        if (webhook_requests(&dunwired, "mutate-pod") > before)
            break;
        ck_assert_msg(e2e_now_s() - t0 < 30, "the unwired daemon's pod webhook is not called "
                                             "after 30 s");
    }

    /* kubectl create: admitted, the warning on stderr */
    snprintf(podfile, sizeof(podfile), "%s/unwired-pod.json", tmpdir);
    snprintf(errfile, sizeof(errfile), "%s/unwired-kubectl.err", tmpdir);
    sent = pod("gang", ns4, 1);
    {
        char *text = json_dumps(sent, JSON_COMPACT);
        e2e_write_file(podfile, text);
        free(text);
    }
    snprintf(cmd, sizeof(cmd), "'%s' create -f '%s' > /dev/null 2> '%s'", kubectl, podfile,
             errfile);
    rc = system(cmd);
    warn = e2e_read_text(errfile);
    ck_assert_msg(rc == 0, "kubectl create of the gang pod failed (%d): %s", rc, warn);
    ck_assert_msg(strstr(warn, "Warning: trainsched: gang pod of PodGroup") &&
                      strstr(warn, "webhook.extenderWired is false"),
                  "kubectl shows no warning about the unwired extender: \"%s\"", warn);
    free(warn);
    got = get_obj(&common_kube_pods, ns4, "gang");
    ck_assert_ptr_nonnull(got);
    ck_assert_msg(json_equal(path_get(got, "spec.containers.0.resources"),
                             path_get(sent, "spec.containers.0.resources")),
                  "the gang pod's resources changed: %s",
                  json_dumps(path_get(got, "spec.containers.0.resources"), JSON_COMPACT));
    ck_assert_ptr_null(
        json_object_get(path_get(got, "spec.containers.0.resources.limits"), GANG_RESOURCE));
    json_decref(got);
    json_decref(sent);

    ck_assert_msg(delete_config(admin, &mwcs, cfg_unwired, &err) == COMMON_OK, "%s", err.msg);
    e2e_drop_ns(admin, ns4);
    stop_daemon(&dunwired);
    common_arena_destroy(a);
    mark_passed();
}
END_TEST

START_TEST(dry_run_mutates_stores_nothing)
{
    json_t *out, *cfg;
    double before, after;
    int nwebhooks = 0;

    before = webhook_requests(&dmain, "mutate-trainjob");
    out = create_ok(&common_kube_trainjobs, ns, trainjob("dry", ns, "rt", "node"), 1);
    after = webhook_requests(&dmain, "mutate-trainjob");
    ck_assert_msg(json_is_string(path_get(out, "spec.runtimePatches.0.time")),
                  "the dry-run answer is not mutated: %s",
                  json_dumps(path_get(out, "spec"), JSON_COMPACT));
    ck_assert_msg(rfc3339(path_str(out, "spec.runtimePatches.0.time")) > 0, "time %s",
                  path_str(out, "spec.runtimePatches.0.time"));
    ck_assert_str_eq(path_str(out, "metadata.name"), "dry");
    ck_assert_msg(after >= before + 1, "mutate-trainjob requests %g -> %g on a dry run", before,
                  after);
    json_decref(out);
    ck_assert_ptr_null(get_obj(&common_kube_trainjobs, ns, "dry"));
    /* the validating webhook is called on dry runs too */
    create_denied(&common_kube_trainjobs, ns, trainjob("dry-bad", ns, "rt", "no-such-job"), 1,
                  "validate-trainjob.trainsched.io",
                  "must not have replicated job that doesn't exist", NULL);
    ck_assert_ptr_null(get_obj(&common_kube_trainjobs, ns, "dry-bad"));

    /* what lets the API server call them on dry runs: sideEffects None, as shipped */
    for (int k = 0; k < 3; k++) {
        const json_t *wh;
        size_t i;
        cfg = get_obj(k == 1 ? &vwcs : &mwcs, NULL, k == 2 ? cfg_sched : cfg_name);
        ck_assert_ptr_nonnull(cfg);
        json_array_foreach(json_object_get(cfg, "webhooks"), i, wh)
        {
            ck_assert_msg(strcmp(path_str(wh, "sideEffects"), "None") == 0,
                          "webhook %s: sideEffects %s", path_str(wh, "name"),
                          path_str(wh, "sideEffects"));
            /* this run's label merged into the shipped selector, whose expressions stay */
            {
                int cluster = cluster_scoped(wh);
                const json_t *sel =
                    json_object_get(wh, cluster ? "objectSelector" : "namespaceSelector");
                const char *v = json_string_value(
                    json_object_get(json_object_get(sel, "matchLabels"), RUN_LABEL));
                ck_assert_msg(v && strcmp(v, run_id) == 0, "webhook %s: %s without %s=%s",
                              path_str(wh, "name"),
                              cluster ? "objectSelector" : "namespaceSelector", RUN_LABEL, run_id);
                ck_assert_msg(json_array_size(json_object_get(sel, "matchExpressions")) >= 1,
                              "webhook %s: the shipped matchExpressions are gone",
                              path_str(wh, "name"));
            }
            nwebhooks++;
        }
        json_decref(cfg);
    }
    ck_assert_int_eq(nwebhooks, 6);
    mark_passed();
}
END_TEST

/* ---- case C58: the shipped configurations registered before the webhook is up ---- */

#define BOOT_SERVICE "trainsched-controller"
#define BOOT_SERVICE_NS "trainsched-system"
#define FAIL_OPEN "apiserver_admission_webhook_fail_open_count"

/* the sum of the series of `name` in the API server's own /metrics (0: none yet) */
static double apiserver_metric(const char *name, const char *labels)
{
    struct common_buf b;
    struct common_error err;
    long status = 0;
    double v;
    common_buf_init(&b, (size_t)64 << 20);
    ck_assert_msg(common_kube_request(admin, "GET", "/metrics", NULL, NULL, 0, "text/plain", &b,
                                      &status, &err) == COMMON_OK,
                  "GET /metrics of the API server: %s", err.msg);
    v = metric(b.data ? b.data : "", name, labels);
    common_buf_free(&b);
    return v;
}

/* the API server refused the write because it could not call `webhook` (not a denial) */
static int call_failed(enum common_rc rc, const struct common_error *err, const char *webhook)
{
    char needle[200];
    snprintf(needle, sizeof(needle), "failed calling webhook \"%s\"", webhook);
    return rc != COMMON_OK && strstr(err->msg, needle) != NULL;
}

/* The configurations of manifests/webhook/webhooks.yaml as shipped (clientConfig.service
 * trainsched-controller.trainsched-system, which the bed does not have, caBundle ""), named
 * cfg_boot and limited to ns3: RUN_LABEL=boot_id merged into the namespaceSelector of each
 * namespaced webhook, into the objectSelector of the cluster-scoped one. The API's copies into
 * created[0] (mutating) and created[1] (validating). */
static void create_boot_configs(json_t *created[2])
{
    struct common_yaml_docs docs;
    struct common_error err;
    char file[600];

    snprintf(file, sizeof(file), "%s/manifests/webhook/webhooks.yaml", TS_SOURCE_DIR);
    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_msg(docs.n == 2, "%s: %zu documents, want 2", file, docs.n);
    for (size_t i = 0; i < docs.n; i++) {
        json_t *cfg = docs.docs[i], *wh;
        const char *kind = json_string_value(json_object_get(cfg, "kind"));
        int idx = kind && strcmp(kind, "MutatingWebhookConfiguration") == 0 ? 0 : 1;
        size_t j;
        ck_assert_ptr_null(created[idx]);
        json_array_foreach(json_object_get(cfg, "webhooks"), j, wh)
        {
            const json_t *cc = json_object_get(wh, "clientConfig");
            /* what a fresh install registers: the Service, and no CA injected yet */
            ck_assert_msg(strcmp(path_str(cc, "service.name"), BOOT_SERVICE) == 0 &&
                              strcmp(path_str(cc, "service.namespace"), BOOT_SERVICE_NS) == 0 &&
                              !json_object_get(cc, "url"),
                          "%s: webhook %s is not served by Service %s/%s", file,
                          path_str(wh, "name"), BOOT_SERVICE_NS, BOOT_SERVICE);
            ck_assert_msg(strcmp(path_str(cc, "caBundle"), "") == 0, "%s: webhook %s: caBundle %s",
                          file, path_str(wh, "name"), path_str(cc, "caBundle"));
            add_match_label(wh, cluster_scoped(wh) ? "objectSelector" : "namespaceSelector",
                            RUN_LABEL, boot_id);
        }
        name_config(cfg, cfg_boot);
        boot_made = 1;
        ck_assert_msg(common_kube_create(admin, idx ? &vwcs : &mwcs, NULL, cfg, NULL, &created[idx],
                                         &err) == COMMON_OK,
                      "create %s %s as shipped: %s", kind ? kind : "?", cfg_boot, err.msg);
    }
    common_yaml_docs_free(&docs);
    ck_assert_msg(created[0] && created[1], "%s: want one configuration of each kind", file);
}

/* "the webhook comes up": every clientConfig of the two -> url of daemon "main" + caBundle */
static void point_boot_configs(json_t *created[2])
{
    struct common_arena *a = common_arena_create(0);
    char *ca_b64;
    ck_assert_ptr_nonnull(a);
    ca_b64 = ca_bundle(a);
    for (int i = 0; i < 2; i++) {
        struct common_error err;
        json_t *wh, *out = NULL;
        size_t j;
        json_array_foreach(json_object_get(created[i], "webhooks"), j, wh)
        {
            char path[256];
            point_at(wh, dmain.https_port, ca_b64, path, sizeof(path));
        }
        ck_assert_msg(common_kube_update(admin, i ? &vwcs : &mwcs, NULL, created[i], NULL, &out,
                                         &err) == COMMON_OK,
                      "update %s %s: %s", i ? vwcs.resource : mwcs.resource, cfg_boot, err.msg);
        json_decref(created[i]);
        created[i] = out;
    }
    common_arena_destroy(a);
}

/* the pod labels of the shipped controller Deployment (which serves the webhook) */
static json_t *controller_pod_labels(void)
{
    struct common_yaml_docs docs;
    struct common_error err;
    char file[600];
    json_t *labels = NULL;

    snprintf(file, sizeof(file), "%s/manifests/controller/deployment.yaml", TS_SOURCE_DIR);
    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &err) == COMMON_OK, "%s", err.msg);
    for (size_t i = 0; i < docs.n && !labels; i++)
        if (strcmp(path_str(docs.docs[i], "kind"), "Deployment") == 0)
            labels = json_deep_copy(path_get(docs.docs[i], "spec.template.metadata.labels"));
    common_yaml_docs_free(&docs);
    ck_assert_msg(json_object_size(labels) > 0, "%s: no Deployment pod labels", file);
    ck_assert_msg(!json_object_get(labels, GANG_LABEL), "%s: the controller's pods carry %s", file,
                  GANG_LABEL);
    return labels;
}

/* a pod created as sent: no trainsched.io/gang, resources and scheduler untouched */
static void assert_unmutated(const json_t *got, const json_t *sent, const char *what)
{
    const json_t *c;
    size_t i;
    json_array_foreach(path_get(sent, "spec.containers"), i, c)
    {
        const json_t *gc = json_array_get(path_get(got, "spec.containers"), i);
        ck_assert_msg(json_equal(json_object_get(gc, "resources"), json_object_get(c, "resources")),
                      "%s, container %s: resources %s, sent %s", what, path_str(c, "name"),
                      json_dumps(json_object_get(gc, "resources"), JSON_COMPACT),
                      json_dumps(json_object_get(c, "resources"), JSON_COMPACT));
    }
    ck_assert_str_eq(path_str(got, "spec.schedulerName"), "default-scheduler");
}

/* create pod `name` in ns3 (gang: the pod-group label; else the controller's own labels);
 * it must be admitted. Returns the created object, what was sent into *sent. */
static json_t *boot_pod(const char *name, int gang, json_t **sent, const char *why)
{
    struct common_error err;
    json_t *p = pod(name, ns3, gang), *out = NULL;
    enum common_rc rc;
    if (!gang)
        json_object_set_new(json_object_get(p, "metadata"), "labels", controller_pod_labels());
    *sent = json_deep_copy(p);
    rc = try_create(admin, &common_kube_pods, ns3, p, 0, &out, &err);
    ck_assert_msg(rc == COMMON_OK, "pod %s refused (%s): %s", name, why, err.msg);
    return out;
}

START_TEST(bootstrap_converges)
{
    const char *pod_hook = "name=\"mutate-pod.trainsched.io\"";
    json_t *created[2] = {NULL, NULL}, *got, *sent, *tj = NULL;
    struct common_error err;
    enum common_rc rc;
    double t0 = e2e_now_s(), t_effective, t_up, t_conv, fo0, fo1, fo2, before, after;
    int tries = 0;

    create_boot_configs(created);

    /* in effect within about a second: a dry-run TrainJob fails at the mutating configuration
     * (called first), a dry-run TrainingRuntime at the validating one */
    for (;;) {
        rc = try_create(admin, &common_kube_trainjobs, ns3, trainjob("probe", ns3, "rt", NULL), 1,
                        NULL, &err);
        if (call_failed(rc, &err, "mutate-trainjob.trainsched.io"))
            break;
        ck_assert_msg(rc == COMMON_OK || call_failed(rc, &err, "validate-trainjob.trainsched.io"),
                      "dry-run TrainJob in %s: %s", ns3, err.msg);
        ck_assert_msg(e2e_now_s() - t0 < 15, "%s %s not in effect after 15 s", mwcs.resource,
                      cfg_boot);
        e2e_nap(100);
    }
    for (;;) {
        rc = try_create(admin, &common_kube_trainingruntimes, ns3, runtime("probe", ns3, 1, ""), 1,
                        NULL, &err);
        if (call_failed(rc, &err, "validate-trainingruntime.trainsched.io"))
            break;
        ck_assert_msg(rc == COMMON_OK, "dry-run TrainingRuntime in %s: %s", ns3, err.msg);
        ck_assert_msg(e2e_now_s() - t0 < 15, "%s %s not in effect after 15 s", vwcs.resource,
                      cfg_boot);
        e2e_nap(100);
    }
    t_effective = e2e_now_s();

    /* (a) the webhook's own pods (no gang label): not sent (objectSelector), so created */
    fo0 = apiserver_metric(FAIL_OPEN, pod_hook);
    got = boot_pod("controller", 0, &sent, "the webhook blocks its own controller");
    fo1 = apiserver_metric(FAIL_OPEN, pod_hook);
    ck_assert_msg(fo1 == fo0,
                  "the controller's pod was sent to mutate-pod.trainsched.io (fail-open count %g "
                  "-> %g)",
                  fo0, fo1);
    assert_unmutated(got, sent, "the controller's pod");
    json_decref(got);
    json_decref(sent);

    /* (b) a gang pod of some other controller: sent, the call fails, failurePolicy Fail
     * refuses it (its controller retries), so it is never created without the gang resource */
    {
        json_t *p = pod("gang", ns3, 1);
        rc = try_create(admin, &common_kube_pods, ns3, p, 0, NULL, &err);
        ck_assert_msg(call_failed(rc, &err, "mutate-pod.trainsched.io"),
                      "gang pod with the webhook down: want the call error of "
                      "mutate-pod.trainsched.io, got %s: %s",
                      common_rc_name(rc), rc ? err.msg : "(admitted)");
        ck_assert_ptr_null(get_obj(&common_kube_pods, ns3, "gang"));
    }
    /* (b2) a gang pod that carries the marks already (the reconciler writes them into its
     * JobSets' pod templates): not sent (objectSelector), so created as it was */
    {
        json_t *p = pod("gang-marked", ns3, 1);
        json_object_set_new(path_get(p, "metadata.labels"), GANG_MARKED_LABEL, json_string("true"));
        sent = json_deep_copy(p);
        rc = try_create(admin, &common_kube_pods, ns3, p, 0, &got, &err);
        ck_assert_msg(rc == COMMON_OK, "marked gang pod refused with the webhook down: %s",
                      err.msg);
        assert_unmutated(got, sent, "the marked gang pod (webhook down)");
        json_decref(got);
        json_decref(sent);
    }
    fo2 = apiserver_metric(FAIL_OPEN, pod_hook);
    ck_assert_msg(fo2 == fo1, "mutate-pod.trainsched.io failed open (count %g -> %g)", fo1, fo2);

    /* (c) a TrainJob fails closed (failurePolicy Fail) with the call error */
    rc = try_create(admin, &common_kube_trainjobs, ns3, trainjob("boot", ns3, "rt", "node"), 0,
                    NULL, &err);
    ck_assert_msg(call_failed(rc, &err, "mutate-trainjob.trainsched.io"),
                  "TrainJob with the webhook down: want the call error of "
                  "mutate-trainjob.trainsched.io, got %s: %s",
                  common_rc_name(rc), rc ? err.msg : "(admitted)");
    ck_assert_msg(strstr(err.msg, BOOT_SERVICE) != NULL, "the error does not name Service %s: %s",
                  BOOT_SERVICE, err.msg);
    ck_assert_ptr_null(get_obj(&common_kube_trainjobs, ns3, "boot"));

    /* (d) the webhook comes up: the same TrainJob converges, gang pods are mutated */
    t_up = e2e_now_s();
    point_boot_configs(created);
    for (;;) {
        rc = try_create(admin, &common_kube_trainjobs, ns3, trainjob("boot", ns3, "rt", "node"), 0,
                        &tj, &err);
        tries++;
        if (rc == COMMON_OK)
            break;
        ck_assert_msg(call_failed(rc, &err, "mutate-trainjob.trainsched.io") ||
                          call_failed(rc, &err, "validate-trainjob.trainsched.io"),
                      "TrainJob after the webhook came up: %s", err.msg);
        ck_assert_msg(e2e_now_s() - t_up < 20,
                      "TrainJob still refused 20 s after the webhook came up (%d tries): %s", tries,
                      err.msg);
        e2e_nap(100);
    }
    t_conv = e2e_now_s();
    ck_assert_msg(json_is_string(path_get(tj, "spec.runtimePatches.0.time")),
                  "the admitted TrainJob is not mutated: %s",
                  json_dumps(path_get(tj, "spec"), JSON_COMPACT));
    ck_assert_str_eq(path_str(tj, "spec.managedBy"), "trainer.kubeflow.org/trainjob-controller");
    json_decref(tj);

    before = webhook_requests(&dmain, "mutate-pod");
    got = boot_pod("controller-2", 0, &sent, "webhook up");
    after = webhook_requests(&dmain, "mutate-pod");
    ck_assert_msg(after == before, "the controller's pod reached the daemon (%g -> %g requests)",
                  before, after);
    assert_unmutated(got, sent, "the controller's pod (webhook up)");
    json_decref(got);
    json_decref(sent);
    got = boot_pod("gang-2", 1, &sent, "webhook up");
    json_decref(sent);
    after = webhook_requests(&dmain, "mutate-pod");
    ck_assert_msg(after >= before + 1, "the gang pod did not reach the daemon (%g -> %g requests)",
                  before, after);
    ck_assert_str_eq(json_string_value(json_object_get(
                         path_get(got, "spec.containers.0.resources.limits"), GANG_RESOURCE)),
                     "1");
    ck_assert_str_eq(json_string_value(json_object_get(
                         path_get(got, "spec.containers.0.resources.requests"), GANG_RESOURCE)),
                     "1");
    json_decref(got);
    ck_assert_msg(apiserver_metric(FAIL_OPEN, pod_hook) == fo2,
                  "mutate-pod.trainsched.io failed open after the webhook came up");

    for (int i = 0; i < 2; i++) {
        const struct common_kube_resource *r = i ? &vwcs : &mwcs;
        json_t *left;
        ck_assert_msg(delete_config(admin, r, cfg_boot, &err) == COMMON_OK, "delete %s %s: %s",
                      r->resource, cfg_boot, err.msg);
        left = get_obj(r, NULL, cfg_boot);
        ck_assert_msg(left == NULL || path_get(left, "metadata.deletionTimestamp"),
                      "%s %s still there", r->resource, cfg_boot);
        json_decref(left);
        json_decref(created[i]);
    }
    boot_made = 0;
    fprintf(stderr,
            "bootstrap_converges: shipped configurations in effect %.2f s after their creation; "
            "webhook down: the plain and the marked gang pod admitted, the unmarked gang pod and "
            "the TrainJob refused; "
            "webhook up: the TrainJob admitted %.2f s (%d tries) after the clientConfig change; "
            "%.2f s in all\n",
            t_effective - t0, t_conv - t_up, tries, e2e_now_s() - t0);
    mark_passed();
}
END_TEST

START_TEST(certificate_reload)
{
    char ca[600], crt[600], serial0[256], file0[256], file1[256] = "", got[256] = "";
    char certs_log[600];
    double t0, t_swap = -1, t_written = -1, t_seen = -1, end;
    pid_t certs = 0;
    int ok = 0, failed = 0, n = 0, certs_status = -1;
    char first_failure[1100] = "";

    snprintf(ca, sizeof(ca), "%s/ca.crt", certdir);
    snprintf(crt, sizeof(crt), "%s/tls.crt", certdir);
    snprintf(certs_log, sizeof(certs_log), "%s/certs-reload.log", tmpdir);
    file_serial(crt, file0, sizeof(file0));
    ck_assert_msg(served_serial(dmain.https_port, ca, serial0, sizeof(serial0)) == 0,
                  "TLS to the daemon: %s", serial0);
    ck_assert_str_eq(serial0, file0);

    /* TrainJobs created in a loop; after ~1 s the pair is replaced (same CA) by a child process
     * while the loop goes on; it ends 3 s after the new serial was first served */
    t0 = e2e_now_s();
    end = t0 + 40;
    while (e2e_now_s() < end) {
        struct common_error err;
        char name[32];
        enum common_rc rc;
        json_t *out = NULL;

        if (certs == 0 && e2e_now_s() - t0 >= 1.0) {
            char ca_key[600];
            char *argv[] = {"trainsched",
                            "certs",
                            "--service",
                            "trainsched-controller",
                            "--namespace",
                            "trainsched-system",
                            "--out",
                            certdir,
                            "--ip",
                            "127.0.0.1",
                            "--force",
                            "--ca-cert",
                            ca,
                            "--ca-key",
                            ca_key,
                            NULL};
            snprintf(ca_key, sizeof(ca_key), "%s/ca.key", certdir);
            t_swap = e2e_now_s();
            certs = e2e_spawn(argv, certs_log);
        }
        if (certs > 0 && certs_status < 0) {
            int st;
            if (waitpid(certs, &st, WNOHANG) == certs) {
                certs_status = st;
                t_written = e2e_now_s();
                ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "trainsched certs: %s",
                              e2e_exit_text(st));
                file_serial(crt, file1, sizeof(file1));
                ck_assert_str_ne(file1, file0);
            }
        }
        snprintf(name, sizeof(name), "swap-%03d", n++);
        rc = try_create(admin, &common_kube_trainjobs, ns, trainjob(name, ns, "rt", "node"), 0,
                        &out, &err);
        if (rc == COMMON_OK && json_is_string(path_get(out, "spec.runtimePatches.0.time"))) {
            ok++;
        } else {
            failed++;
            if (!first_failure[0])
                snprintf(first_failure, sizeof(first_failure), "%s at %.2f s: %s", name,
                         e2e_now_s() - t0, rc ? err.msg : "not mutated");
        }
        json_decref(out);
        if (certs_status >= 0 && t_seen < 0) {
            ck_assert_msg(served_serial(dmain.https_port, ca, got, sizeof(got)) == 0,
                          "TLS to the daemon after the swap: %s", got);
            if (strcmp(got, file1) == 0)
                t_seen = e2e_now_s();
            else
                ck_assert_str_eq(got, serial0); /* the old one until the reload */
        }
        if (t_seen > 0 && e2e_now_s() - t_seen >= 3)
            break;
    }
    fprintf(stderr,
            "certificate_reload: %d TrainJobs admitted, %d failed; new pair written %.2f s after "
            "the swap began, served on new connections %.2f s after it was written (reload "
            "period %d s)\n",
            ok, failed, t_written - t_swap, t_seen - t_written, RELOAD_S);
    ck_assert_msg(certs_status >= 0, "trainsched certs did not finish");
    ck_assert_msg(t_seen > 0, "the new serial %s was not served within %.0f s (still %s)", file1,
                  end - t_written, got);
    ck_assert_msg(t_seen - t_written <= RELOAD_S + 2.5,
                  "the new certificate was served %.2f s after it was written (reload every %d s)",
                  t_seen - t_written, RELOAD_S);
    ck_assert_msg(failed == 0, "%d of %d admissions failed across the swap; first: %s", failed,
                  ok + failed, first_failure);
    ck_assert_msg(ok >= 10, "only %d admissions across the swap", ok);
    {
        char *log = e2e_read_text(dmain.log);
        ck_assert_msg(strstr(log, "serving certificate reloaded") != NULL,
                      "no \"serving certificate reloaded\" in %s", dmain.log);
        free(log);
    }
    mark_passed();
}
END_TEST

/* state and exit code of a process from /proc/<pid>/stat (a zombie keeps them until reaped):
 * returns the state letter, 0 when gone; *code gets the wait status (field 52) */
static char proc_state(pid_t pid, int *code)
{
    char path[64], *s, *p, *last;
    char state;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    s = e2e_read_text(path);
    p = strrchr(s, ')');
    if (!p || p[1] != ' ') {
        free(s);
        return 0;
    }
    state = p[2];
    last = strrchr(p, ' ');
    while (last && last > p && last[1] == 0) { /* trailing newline/space */
        *last = 0;
        last = strrchr(p, ' ');
    }
    *code = last ? (int)strtol(last + 1, NULL, 10) : -1;
    free(s);
    return state;
}

START_TEST(daemons_stop_cleanly)
{
    struct daemon *ds[] = {&dmain, &dsched};
    static const char *const endpoints[] = {"validate-trainjob", "validate-trainingruntime",
                                            "validate-clustertrainingruntime", "mutate-trainjob",
                                            "mutate-pod"};

    /* the API server called every endpoint of "main", and "sched" only for pods */
    for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++) {
        double m = webhook_requests(&dmain, endpoints[i]),
               s = webhook_requests(&dsched, endpoints[i]);
        int pods = strcmp(endpoints[i], "mutate-pod") == 0;
        ck_assert_msg(m > 0, "daemon main answered no %s request", endpoints[i]);
        ck_assert_msg(pods ? s > 0 : s == 0, "daemon sched answered %g %s requests", s,
                      endpoints[i]);
    }
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(kill(ds[i]->pid, SIGTERM), 0);
    for (int i = 0; i < 2; i++) {
        double end = e2e_now_s() + 20;
        int code = -1, st;
        char state;
        /* with CK_FORK=no the daemons are our children: reap; else watch the zombie */
        for (;;) {
            if (waitpid(ds[i]->pid, &st, WNOHANG) == ds[i]->pid) {
                ds[i]->pid = 0;
                code = st;
                break;
            }
            state = proc_state(ds[i]->pid, &code);
            if (state == 'Z')
                break;
            ck_assert_msg(e2e_now_s() < end,
                          "daemon %s still running 20 s after SIGTERM (state %c)", ds[i]->name,
                          state ? state : '-');
            e2e_nap(50);
        }
        {
            char *log = e2e_read_text(ds[i]->log);
            ck_assert_msg(!strstr(log, "Sanitizer") && !strstr(log, "runtime error:"),
                          "daemon %s: sanitizer report in %s", ds[i]->name, ds[i]->log);
            ck_assert_msg(strstr(log, "signal received; stopping") != NULL,
                          "daemon %s did not log its stop", ds[i]->name);
            free(log);
        }
        ck_assert_msg(code == 0, "daemon %s after SIGTERM: %s, want exit 0; see %s", ds[i]->name,
                      e2e_exit_text(code), ds[i]->log);
    }
    mark_passed();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("webhook");
    TCase *tc = tcase_create("webhook");
    tcase_add_unchecked_fixture(tc, outer_setup, outer_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, invalid_trainjob_denied);
    tcase_add_test(tc, valid_trainjob_defaulted);
    tcase_add_test(tc, runtime_and_trainjob_created_together);
    tcase_add_test(tc, runtime_missing_from_the_cache_is_read_from_the_api_server);
    tcase_add_test(tc, runtime_policy_denied);
    tcase_add_test(tc, runtime_update_union_and_timeout_cap);
    tcase_add_test(tc, gang_pods_mutated);
    tcase_add_test(tc, gang_pods_unrouted_while_unwired);
    tcase_add_test(tc, dry_run_mutates_stores_nothing);
    tcase_add_test(tc, bootstrap_converges);
    tcase_add_test(tc, certificate_reload);
    tcase_add_test(tc, daemons_stop_cleanly);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    /* Check skips the unchecked teardown when the setup failed: the configurations must go */
    cleanup_all();
    return failed ? 1 : 0;
}
