/*
 * tests/e2e/test_certrotation.c - `serve --tls-managed` (cmd/certmgr.c) rotating the webhook's
 * certificates under load, against the test bed.
 *
 *   rotation_under_load  two replicas (webhook component, managed TLS, leader-elected) with
 *                        2-minute serving certificates and a 4-minute CA (renewed at 85 % of
 *                        their life, publish and switch graces 10 s, files checked every
 *                        second). Mutating and validating configurations derived from
 *                        manifests/webhook/webhooks.yaml (the TrainJob webhooks only, url
 *                        clientConfigs to replica A on 127.0.0.1, failurePolicy Fail, scoped to
 *                        the test's namespace) are created with an empty caBundle. TrainJobs are
 *                        created at 5 per second until replica A has served at least two new
 *                        serving certificates and the CA has been rotated completely (bundle
 *                        {old} -> {old, new} -> {new}). Asserts: every create answered 201;
 *                        every certificate A served (OpenSSL client, a new connection every
 *                        second) verified against the caBundle the configurations held then;
 *                        the bundle went through exactly those phases; the Secret ends valid
 *                        and published; replica B's files equal the Secret. A timeline goes to
 *                        stderr.
 *
 * The daemons run as the bed's admin (the Secret lives in the test namespace);
 * manifests/rbac/webhook-rbac.yaml is applied and checked with trainsched's ServiceAccount
 * (allowed: the Secret and the `trainsched` configurations; refused: other configurations).
 *
 * Cleanup: an unchecked fixture in the runner process kills the daemons and deletes the two
 * webhook configurations and the namespace whatever the test did (a failed assertion _exits
 * the test's child), so a failure never leaves a failing-closed webhook behind.
 */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
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
#include "common/log.h"
#include "common/yaml.h"
#include "e2eutil.h"

#define SECRET "webhook-certs"
#define LEASE "certrot"
#define LOAD_PER_S 5
#define DEADLINE_S 300 /* from the first certificate */

static const struct common_kube_resource mutating_res = {"admissionregistration.k8s.io", "v1",
                                                         "mutatingwebhookconfigurations", 0};
static const struct common_kube_resource validating_res = {"admissionregistration.k8s.io", "v1",
                                                           "validatingwebhookconfigurations", 0};
static const struct common_kube_resource roles = {"rbac.authorization.k8s.io", "v1", "roles", 1};
static const struct common_kube_resource rolebindings = {"rbac.authorization.k8s.io", "v1",
                                                         "rolebindings", 1};
static const struct common_kube_resource clusterroles = {"rbac.authorization.k8s.io", "v1",
                                                         "clusterroles", 0};
static const struct common_kube_resource clusterrolebindings = {"rbac.authorization.k8s.io", "v1",
                                                                "clusterrolebindings", 0};

static struct common_kube *admin;
static char ns[128];
static char cfgname[200]; /* both webhook configurations: "trainsched-<ns>" */
static char tmpdir[256];
static double t_start;

struct replica {
    pid_t pid; /* 0: not running (reaped) */
    int port;  /* plain HTTP */
    int https;
    int status;
    char identity[64];
    char log[512];
    char certdir[512];
};

#define MAX_REPLICAS 2
static struct replica replicas[MAX_REPLICAS];
static int nreplicas;

static void record_pid(pid_t pid);

/* fork/exec TS_BINARY with argv (argv[0] is ignored); output to log. Returns the pid. */
static pid_t spawn(char *const argv[], const char *log)
{
    pid_t pid;
    e2e_write_file(log, ""); /* there to count lines in from the start */
    pid = e2e_spawn(argv, log);
    record_pid(pid);
    return pid;
}

/* reap r when it has exited (or wait up to secs for it to); 1 when it is gone */
static int reap(struct replica *r, double secs)
{
    double end = e2e_now_s() + secs;
    if (!r->pid)
        return 1;
    for (;;) {
        int st;
        pid_t w = waitpid(r->pid, &st, WNOHANG);
        if (w == r->pid) {
            r->status = st;
            r->pid = 0;
            return 1;
        }
        if (e2e_now_s() >= end)
            return 0;
        e2e_nap(20);
    }
}

static int alive(struct replica *r)
{
    return !reap(r, 0);
}

/* ---- fixture (as tests/e2e/test_serve.c) ---- */

static void tmp_path(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", tmpdir, name);
}

static void mark(const char *name)
{
    char p[600];
    tmp_path(p, sizeof(p), name);
    e2e_write_file(p, "1\n");
}

static int marked(const char *name)
{
    char p[600];
    tmp_path(p, sizeof(p), name);
    return access(p, F_OK) == 0;
}

static void record_pid(pid_t pid)
{
    char p[600];
    FILE *f;
    tmp_path(p, sizeof(p), "pids");
    f = fopen(p, "a");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%ld\n", (long)pid);
    fclose(f);
}

static void kill_if_ours(pid_t pid)
{
    char link[64], exe[4096];
    ssize_t n;
    snprintf(link, sizeof(link), "/proc/%ld/exe", (long)pid);
    n = readlink(link, exe, sizeof(exe) - 1);
    if (n <= 0)
        return;
    exe[n] = 0;
    if (strncmp(exe, TS_BINARY, strlen(TS_BINARY)) != 0)
        return;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void outer_setup(void)
{
    struct common_kube *sa;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/trainsched-certrot-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    admin = e2e_client(20000, 0);
    /* rbac.yaml (trainsched-system, the ServiceAccount) for the RBAC check */
    sa = e2e_client(20000, 1);
    common_kube_client_destroy(sa);
    e2e_make_ns(admin, "certrot", ns, sizeof(ns));
    snprintf(cfgname, sizeof(cfgname), "trainsched-%s", ns);
    common_kube_client_destroy(admin);
    admin = NULL;
}

static void outer_teardown(void)
{
    char p[600], *pids, *line, *end;
    int ok = marked("passed");
    struct common_error err;

    tmp_path(p, sizeof(p), "pids");
    pids = e2e_read_text(p);
    for (line = pids; *line; line = end) {
        long pid = strtol(line, &end, 10);
        if (end == line)
            break;
        if (pid > 0)
            kill_if_ours((pid_t)pid);
        while (*end == '\n')
            end++;
    }
    free(pids);
    if (!ok) {
        DIR *d = opendir(tmpdir);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            size_t n = strlen(e->d_name);
            if (n > 4 && strcmp(e->d_name + n - 4, ".log") == 0) {
                tmp_path(p, sizeof(p), e->d_name);
                e2e_echo_tail(p, 60);
            }
        }
        if (d)
            closedir(d);
        fprintf(stderr, "test failed: daemon logs kept in %s\n", tmpdir);
    }
    admin = e2e_client(20000, 0);
    /* the configurations fail closed: they go first, whatever happened */
    if (common_kube_delete(admin, &mutating_res, NULL, cfgname, NULL, NULL, NULL, &err) &&
        err.code != COMMON_ENOTFOUND)
        fprintf(stderr, "delete MutatingWebhookConfiguration %s: %s\n", cfgname, err.msg);
    if (common_kube_delete(admin, &validating_res, NULL, cfgname, NULL, NULL, NULL, &err) &&
        err.code != COMMON_ENOTFOUND)
        fprintf(stderr, "delete ValidatingWebhookConfiguration %s: %s\n", cfgname, err.msg);
    e2e_drop_ns(admin, ns);
    common_kube_client_destroy(admin);
    admin = NULL;
    if (ok) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
}

static void setup(void)
{
    enum common_log_level level;
    if (getenv("E2E_LOG_LEVEL") && common_log_parse_level(getenv("E2E_LOG_LEVEL"), &level) == 0)
        common_log_set_level(level);
    nreplicas = 0;
    admin = e2e_client(20000, 0);
}

static void teardown(void)
{
    for (int i = 0; i < nreplicas; i++) {
        struct replica *r = &replicas[i];
        if (r->pid) {
            kill(r->pid, SIGKILL);
            waitpid(r->pid, NULL, 0);
            r->pid = 0;
        }
    }
    nreplicas = 0;
    common_kube_client_destroy(admin);
    admin = NULL;
}

/* ---- cluster objects ---- */

static void tl(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* one timeline line on stderr: seconds since the test started */
static void tl(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "[%6.1f s] ", e2e_now_s() - t_start);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static json_t *runtime(const char *name)
{
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainingRuntime\n"
                     "metadata: {name: %s, namespace: %s}\n"
                     "spec:\n"
                     "  mlPolicy: {numNodes: 1}\n" E2E_RT_NODE_JOB "              spec:\n"
                     "                containers:\n"
                     "                - name: node\n"
                     "                  image: busybox:1.36\n"
                     "                  command: [sh, -c, 'sleep 1']\n",
                     name, ns);
}

static json_t *trainjob(const char *name)
{
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainJob\n"
                     "metadata: {name: %s, namespace: %s}\n"
                     "spec:\n"
                     "  runtimeRef: {name: rt, kind: TrainingRuntime}\n"
                     "  suspend: true\n",
                     name, ns);
}

/*
 * The TrainJob webhooks of manifests/webhook/webhooks.yaml as configurations named cfgname: url
 * clientConfigs to 127.0.0.1:https_port (same paths), no caBundle, only this namespace.
 */
static void create_configs(int https_port)
{
    struct common_yaml_docs docs;
    struct common_error err;
    char file[512];

    snprintf(file, sizeof(file), "%s/manifests/webhook/webhooks.yaml", TS_SOURCE_DIR);
    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &err) == COMMON_OK, "%s", err.msg);
    for (size_t i = 0; i < docs.n; i++) {
        json_t *doc = docs.docs[i], *hooks = json_array(), *h;
        const char *kind = json_string_value(json_object_get(doc, "kind"));
        const struct common_kube_resource *r =
            strcmp(kind, "MutatingWebhookConfiguration") == 0 ? &mutating_res : &validating_res;
        struct common_kube_write_opts wo = {.strict = 1};
        size_t j;
        json_object_set_new(json_object_get(doc, "metadata"), "name", json_string(cfgname));
        json_array_foreach(json_object_get(doc, "webhooks"), j, h)
        {
            const char *name = json_string_value(json_object_get(h, "name"));
            const char *path = json_string_value(json_object_get(
                json_object_get(json_object_get(h, "clientConfig"), "service"), "path"));
            char url[256];
            if (!strstr(name, "-trainjob."))
                continue;
            snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", https_port, path);
            json_object_set_new(h, "clientConfig", json_pack("{s:s}", "url", url));
            json_object_set_new(
                h, "namespaceSelector",
                json_pack("{s:{s:s}}", "matchLabels", "kubernetes.io/metadata.name", ns));
            json_array_append(hooks, h);
        }
        ck_assert_int_eq(json_array_size(hooks), 1);
        json_object_set_new(doc, "webhooks", hooks);
        ck_assert_msg(common_kube_create(admin, r, NULL, doc, &wo, NULL, &err) == COMMON_OK,
                      "create %s %s: %s", kind, cfgname, err.msg);
    }
    ck_assert_int_eq(docs.n, 2);
    common_yaml_docs_free(&docs);
}

/* apply manifests/rbac/webhook-rbac.yaml; check it with trainsched's ServiceAccount */
static void check_rbac(void)
{
    struct common_yaml_docs docs;
    struct common_error err;
    struct common_kube_write_opts wo = {.field_manager = "trainsched-e2e", .force = 1};
    struct common_kube *sa;
    json_t *o = NULL;
    enum common_rc rc;
    char file[512];

    snprintf(file, sizeof(file), "%s/manifests/rbac/webhook-rbac.yaml", TS_SOURCE_DIR);
    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &err) == COMMON_OK, "%s", err.msg);
    for (size_t i = 0; i < docs.n; i++) {
        const char *kind = json_string_value(json_object_get(docs.docs[i], "kind"));
        const char *dns = json_string_value(
            json_object_get(json_object_get(docs.docs[i], "metadata"), "namespace"));
        const struct common_kube_resource *r = strcmp(kind, "Role") == 0          ? &roles
                                               : strcmp(kind, "RoleBinding") == 0 ? &rolebindings
                                               : strcmp(kind, "ClusterRole") == 0 ? &clusterroles
                                                                                  : NULL;
        if (strcmp(kind, "ClusterRoleBinding") == 0)
            r = &clusterrolebindings;
        ck_assert_msg(r != NULL, "webhook-rbac.yaml: unexpected kind %s", kind);
        ck_assert_msg(common_kube_apply(admin, r, dns, docs.docs[i], &wo, NULL, &err) == COMMON_OK,
                      "applying webhook-rbac.yaml: %s", err.msg);
    }
    ck_assert_int_eq(docs.n, 4);
    common_yaml_docs_free(&docs);
    sa = e2e_client(20000, 1);
    /* allowed (found or not): the Secret, the `trainsched` configurations */
    for (double end = e2e_now_s() + 10;; e2e_nap(200)) { /* RBAC caches: a moment */
        rc = common_kube_get(sa, &common_kube_secrets, "trainsched-system",
                             "trainsched-webhook-certs", &o, &err);
        if (rc != COMMON_EUNAUTHORIZED || e2e_now_s() > end)
            break;
    }
    ck_assert_msg(rc == COMMON_OK || rc == COMMON_ENOTFOUND, "SA get Secret: %s", err.msg);
    json_decref(o);
    o = NULL;
    rc = common_kube_get(sa, &mutating_res, NULL, "trainsched", &o, &err);
    ck_assert_msg(rc == COMMON_OK || rc == COMMON_ENOTFOUND, "SA get mutating trainsched: %s",
                  err.msg);
    json_decref(o);
    o = NULL;
    rc = common_kube_get(sa, &validating_res, NULL, "trainsched", &o, &err);
    ck_assert_msg(rc == COMMON_OK || rc == COMMON_ENOTFOUND, "SA get validating trainsched: %s",
                  err.msg);
    json_decref(o);
    o = NULL;
    /* refused: another configuration, another namespace's Secret */
    rc = common_kube_get(sa, &mutating_res, NULL, cfgname, &o, &err);
    ck_assert_msg(rc == COMMON_EUNAUTHORIZED, "SA may read configuration %s (%d)", cfgname, rc);
    json_decref(o);
    o = NULL;
    rc = common_kube_get(sa, &common_kube_secrets, ns, SECRET, &o, &err);
    ck_assert_msg(rc == COMMON_EUNAUTHORIZED, "SA may read Secrets in %s (%d)", ns, rc);
    json_decref(o);
    common_kube_client_destroy(sa);
}

/* ---- TLS probe ---- */

/* A new TLS connection to 127.0.0.1:port: the served certificate's PEM (malloc'ed) or NULL. */
static char *served_pem(int port)
{
    struct sockaddr_in a;
    struct timeval tv = {5, 0};
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = NULL;
    X509 *cert = NULL;
    char *pem = NULL;
    int fd;

    ck_assert_ptr_nonnull(ctx);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        goto out;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1)
        goto out;
    cert = SSL_get1_peer_certificate(ssl);
    if (cert) {
        struct common_arena *ar = common_arena_create(0);
        char *p = common_certs_x509_to_pem(ar, cert);
        pem = p ? strdup(p) : NULL;
        common_arena_destroy(ar);
    }
    SSL_shutdown(ssl);
out:
    X509_free(cert);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return pem;
}

/* serial (upper-case hex) of a PEM certificate into out */
static void pem_serial(const char *pem, char *out, size_t size)
{
    struct common_arena *ar = common_arena_create(0);
    struct common_certs_info info;
    struct common_error err;
    ck_assert_msg(common_certs_info(ar, pem, &info, &err) == COMMON_OK, "%s", err.msg);
    snprintf(out, size, "%s", info.serial);
    common_arena_destroy(ar);
}

static void pem_issuer(const char *pem, char *out, size_t size)
{
    struct common_arena *ar = common_arena_create(0);
    struct common_certs_info info;
    struct common_error err;
    ck_assert_msg(common_certs_info(ar, pem, &info, &err) == COMMON_OK, "%s", err.msg);
    snprintf(out, size, "%s", info.issuer);
    common_arena_destroy(ar);
}

/* ---- the bundle ---- */

/* base64 -> text (malloc'ed, NUL-terminated); "" for "" */
static char *unbase64(const char *b64)
{
    size_t n = strlen(b64);
    unsigned char *out = malloc(n / 4 * 3 + 4);
    int len;
    ck_assert_ptr_nonnull(out);
    if (n == 0) {
        out[0] = 0;
        return (char *)out;
    }
    len = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n);
    ck_assert_int_ge(len, 0);
    while (n > 0 && b64[n - 1] == '=') {
        len--;
        n--;
    }
    out[len] = 0;
    return (char *)out;
}

/* the caBundle (decoded PEM, malloc'ed; "" when empty) of a configuration; when its webhooks
 * disagree, fails the test */
static char *config_bundle(const struct common_kube_resource *r)
{
    json_t *o = NULL, *h;
    struct common_error err;
    const char *first = NULL;
    size_t i;
    char *text;
    ck_assert_msg(common_kube_get(admin, r, NULL, cfgname, &o, &err) == COMMON_OK, "%s", err.msg);
    json_array_foreach(json_object_get(o, "webhooks"), i, h)
    {
        const char *cb =
            json_string_value(json_object_get(json_object_get(h, "clientConfig"), "caBundle"));
        if (!cb)
            cb = "";
        if (!first)
            first = cb;
        ck_assert_msg(strcmp(first, cb) == 0, "the webhooks of %s disagree on caBundle",
                      r->resource);
    }
    text = unbase64(first ? first : "");
    json_decref(o);
    return text;
}

static int count_certs(const char *pem)
{
    int n = 0;
    for (const char *p = pem; (p = strstr(p, "-----BEGIN CERTIFICATE-----")) != NULL; p++)
        n++;
    return n;
}

/* the i-th CERTIFICATE block of pem (malloc'ed) */
static char *cert_block(const char *pem, int i)
{
    const char *p = pem, *e;
    for (int k = 0; k <= i; k++, p++) {
        p = strstr(p, "-----BEGIN CERTIFICATE-----");
        ck_assert_ptr_nonnull(p);
        if (k == i)
            break;
    }
    e = strstr(p, "-----END CERTIFICATE-----");
    ck_assert_ptr_nonnull(e);
    e += strlen("-----END CERTIFICATE-----");
    return strndup(p, (size_t)(e - p));
}

/* ---- the Secret ---- */

static json_t *get_secret(void)
{
    json_t *o = NULL;
    struct common_error err;
    enum common_rc rc = common_kube_get(admin, &common_kube_secrets, ns, SECRET, &o, &err);
    if (rc == COMMON_ENOTFOUND)
        return NULL;
    ck_assert_msg(rc == COMMON_OK, "get Secret: %s", err.msg);
    return o;
}

/* ---- the daemons ---- */

static struct replica *start_replica(const char *identity, int http_port, int https_port)
{
    struct replica *r;
    char addr[64], saddr[64];
    const char *kc = getenv("KUBECONFIG");
    ck_assert_msg(kc != NULL, "KUBECONFIG not set: source the test bed's env");
    ck_assert_int_lt(nreplicas, MAX_REPLICAS);
    r = &replicas[nreplicas++];
    memset(r, 0, sizeof(*r));
    snprintf(r->identity, sizeof(r->identity), "%s", identity);
    snprintf(r->log, sizeof(r->log), "%s/%s.log", tmpdir, identity);
    snprintf(r->certdir, sizeof(r->certdir), "%s/%s-certs", tmpdir, identity);
    r->port = http_port;
    r->https = https_port;
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", http_port);
    snprintf(saddr, sizeof(saddr), "127.0.0.1:%d", https_port);
    {
        char *argv[] = {"trainsched",
                        "serve",
                        "--kubeconfig",
                        (char *)kc,
                        "--components",
                        "webhook",
                        "--http-address",
                        addr,
                        "--https-address",
                        saddr,
                        "--leader-elect-namespace",
                        ns,
                        "--leader-elect-lease-name",
                        LEASE,
                        "--leader-elect-lease-duration",
                        "4",
                        "--leader-elect-renew-deadline",
                        "3",
                        "--leader-elect-retry-period",
                        "0.5",
                        "--identity",
                        r->identity,
                        "--tls-managed",
                        "--tls-cert-dir",
                        r->certdir,
                        "--tls-secret-namespace",
                        ns,
                        "--tls-secret-name",
                        SECRET,
                        "--tls-extra-ips",
                        "127.0.0.1",
                        "--tls-webhook-configurations",
                        cfgname,
                        "--tls-ca-lifetime",
                        "4m",
                        "--tls-serving-lifetime",
                        "2m",
                        "--tls-renew-fraction",
                        "0.85",
                        "--tls-publish-grace",
                        "10s",
                        "--tls-switch-grace",
                        "10s",
                        "--tls-reload-seconds",
                        "1",
                        NULL};
        r->pid = spawn(argv, r->log);
    }
    return r;
}

static int count_in_file(const char *path, const char *needle)
{
    char *s = e2e_read_text(path);
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
        n++;
    free(s);
    return n;
}

/* ---- the test ---- */

#define MAX_FAIL_MSGS 5

START_TEST(rotation_under_load)
{
    struct replica *a, *b;
    int ha = e2e_free_port(), sa = e2e_free_port(), hb = e2e_free_port(), sb = e2e_free_port();
    char *bundle = NULL, *first_ca = NULL, *both = NULL, serial[128] = "", issuer[256];
    int created = 0, failed = 0, serving_changes = 0, probes = 0, probe_fail = 0, verify_fail = 0,
        phase = 0; /* 0 {old}, 1 {old,new}, 2 {new} */
    double t_first = 0, t_drop = 0, next_create, next_probe = 0;
    char fail_msgs[MAX_FAIL_MSGS][512];
    struct common_error err;

    t_start = e2e_now_s();
    {
        struct common_kube_write_opts wo = {.strict = 1};
        json_t *rt = runtime("rt");
        ck_assert_msg(common_kube_create(admin, &common_kube_trainingruntimes, ns, rt, &wo, NULL,
                                         &err) == COMMON_OK,
                      "create runtime: %s", err.msg);
        json_decref(rt);
    }
    check_rbac();
    tl("RBAC of webhook-rbac.yaml checked with trainsched's ServiceAccount");
    create_configs(sa);
    tl("webhook configurations %s created (url https://127.0.0.1:%d, caBundle empty)", cfgname, sa);
    a = start_replica("replica-a", ha, sa);
    b = start_replica("replica-b", hb, sb);

    /* both ready: certificate loaded, HTTPS serving, caches synced; bundle published */
    for (double end = e2e_now_s() + 60;; e2e_nap(200)) {
        json_t *s;
        int ra = e2e_http_get(a->port, "/readyz", NULL),
            rb = e2e_http_get(b->port, "/readyz", NULL);
        const char *pub = NULL;
        ck_assert_msg(alive(a) && alive(b), "a replica exited: a %s, b %s",
                      alive(a) ? "running" : e2e_exit_text(a->status),
                      alive(b) ? "running" : e2e_exit_text(b->status));
        s = get_secret();
        if (s)
            pub = json_string_value(
                json_object_get(json_object_get(json_object_get(s, "metadata"), "annotations"),
                                COMMON_CERTS_ANN_PUBLISHED_AT));
        if (ra == 200 && rb == 200 && pub) {
            json_decref(s);
            break;
        }
        json_decref(s);
        ck_assert_msg(e2e_now_s() < end, "not ready after 60 s: /readyz a %d b %d, published %s",
                      ra, rb, pub ? pub : "(no)");
    }
    bundle = config_bundle(&mutating_res);
    ck_assert_int_eq(count_certs(bundle), 1);
    first_ca = cert_block(bundle, 0);
    {
        char *pem = served_pem(a->https);
        ck_assert_ptr_nonnull(pem);
        ck_assert_msg(common_certs_verify(pem, bundle, "127.0.0.1", (int64_t)time(NULL), &err) ==
                          COMMON_OK,
                      "A's first certificate: %s", err.msg);
        pem_serial(pem, serial, sizeof(serial));
        pem_issuer(pem, issuer, sizeof(issuer));
        free(pem);
    }
    t_first = e2e_now_s();
    tl("both replicas ready; CA bundle published (1 CA); A serves serial %s from %s", serial,
       issuer);

    /* load: LOAD_PER_S creates a second; a probe of A and the configurations every second */
    next_create = e2e_now_s();
    for (;;) {
        double t = e2e_now_s();
        ck_assert_msg(alive(a) && alive(b), "a replica exited: a %s, b %s",
                      alive(a) ? "running" : e2e_exit_text(a->status),
                      alive(b) ? "running" : e2e_exit_text(b->status));
        if (t >= next_create) {
            struct common_kube_write_opts wo = {0};
            char name[32];
            json_t *tj;
            enum common_rc rc;
            snprintf(name, sizeof(name), "tj-%05d", created + failed);
            tj = trainjob(name);
            rc = common_kube_create(admin, &common_kube_trainjobs, ns, tj, &wo, NULL, &err);
            json_decref(tj);
            if (rc == COMMON_OK) {
                created++;
            } else {
                if (failed < MAX_FAIL_MSGS)
                    snprintf(fail_msgs[failed], sizeof(fail_msgs[0]), "%s: %s", name, err.msg);
                failed++;
                tl("FAILED admission of %s: %s", name, err.msg);
            }
            next_create += 1.0 / LOAD_PER_S;
            if (next_create < t - 1)
                next_create = t; /* a slow create: no burst to catch up */
        }
        if (t >= next_probe) {
            char *pem = served_pem(a->https), *nb, *nv, s2[128];
            next_probe = t + 1;
            probes++;
            nb = config_bundle(&mutating_res);
            nv = config_bundle(&validating_res);
            if (strcmp(nb, bundle) != 0) {
                int n = count_certs(nb);
                tl("caBundle changed: %d CA(s)%s", n,
                   n == 2   ? " (old + new)"
                   : n == 1 ? " (new only)"
                            : "");
                if (phase == 0 && n == 2) {
                    ck_assert_msg(strstr(nb, first_ca) != NULL,
                                  "the two-CA bundle lacks the first CA");
                    both = strdup(nb);
                    phase = 1;
                } else if (phase == 1 && n == 1) {
                    ck_assert_msg(strstr(nb, first_ca) == NULL,
                                  "the old CA was kept and the new one dropped");
                    char *newca = cert_block(nb, 0);
                    ck_assert_msg(strstr(both, newca) != NULL,
                                  "the one-CA bundle is not the new CA of the two-CA bundle");
                    free(newca);
                    phase = 2;
                    t_drop = t;
                } else {
                    ck_assert_msg(0, "unexpected bundle change in phase %d: %d CAs", phase, n);
                }
                free(bundle);
                bundle = nb;
            } else {
                free(nb);
            }
            if (strcmp(nv, bundle) != 0)
                tl("the validating configuration lags the mutating one (%d CAs)", count_certs(nv));
            free(nv);
            if (!pem) {
                probe_fail++;
                tl("TLS probe of A failed");
            } else {
                if (common_certs_verify(pem, bundle, "127.0.0.1", (int64_t)time(NULL), &err) !=
                    COMMON_OK) {
                    verify_fail++;
                    tl("A's certificate does not verify against the published bundle: %s", err.msg);
                }
                pem_serial(pem, s2, sizeof(s2));
                if (strcmp(s2, serial) != 0) {
                    pem_issuer(pem, issuer, sizeof(issuer));
                    serving_changes++;
                    snprintf(serial, sizeof(serial), "%s", s2);
                    tl("A serves a new certificate: serial %s from %s (change %d; %d TrainJobs "
                       "admitted so far)",
                       serial, issuer, serving_changes, created);
                }
                free(pem);
            }
        }
        if (phase == 2 && serving_changes >= 2 && t - t_drop >= 10)
            break;
        ck_assert_msg(t - t_first < DEADLINE_S,
                      "after %d s: %d serving changes, bundle phase %d (want 2 and phase 2)",
                      DEADLINE_S, serving_changes, phase);
        {
            double wake = next_create < next_probe ? next_create : next_probe;
            if (wake > e2e_now_s())
                e2e_nap((int)((wake - e2e_now_s()) * 1000) + 1);
        }
    }
    tl("load stopped: %d TrainJobs admitted, %d failed; %d probes (%d failed, %d not verified); "
       "%d serving changes",
       created, failed, probes, probe_fail, verify_fail, serving_changes);
    for (int i = 0; i < failed && i < MAX_FAIL_MSGS; i++)
        fprintf(stderr, "  failure: %s\n", fail_msgs[i]);
    ck_assert_msg(failed == 0, "%d of %d admissions failed; first: %s", failed, created + failed,
                  fail_msgs[0]);
    ck_assert_int_eq(probe_fail, 0);
    ck_assert_int_eq(verify_fail, 0);
    ck_assert_int_ge(serving_changes, 2);
    ck_assert_int_ge(created, 100);

    /* the Secret: valid, published, steady; B's files equal it; A serves it */
    {
        json_t *s = get_secret();
        struct common_arena *ar = common_arena_create(0);
        struct common_certs_secret sec;
        struct common_certs_view v;
        struct common_certs_decision d;
        struct common_certs_policy p;
        struct common_certs_names names = {"trainsched-controller", ns, NULL, 0, NULL, 0};
        const char *ips[] = {"127.0.0.1"};
        char path[600], want[128], got[128];
        char *pem;
        struct stat st;
        int64_t now = (int64_t)time(NULL);

        names.ips = ips;
        names.nips = 1;
        ck_assert_ptr_nonnull(s);
        ck_assert_msg(common_certs_secret_from_json(ar, s, &sec, &err) == COMMON_OK, "%s", err.msg);
        ck_assert_int_eq(count_certs(sec.ca_bundle), 1);
        ck_assert_str_eq(sec.ca_bundle, bundle);
        ck_assert_msg(sec.bundle_published_at != 0, "the final bundle is not marked published");
        ck_assert_msg(common_certs_verify(sec.tls_crt, sec.ca_bundle, "127.0.0.1", now, &err) ==
                          COMMON_OK,
                      "Secret tls.crt: %s", err.msg);
        ck_assert_msg(common_certs_observe(&sec, &names, &v, &err) == COMMON_OK, "%s", err.msg);
        common_certs_policy_default(&p);
        p.ca_lifetime_s = 240;
        p.serving_lifetime_s = 120;
        p.renew_num = 850;
        p.renew_den = 1000;
        p.publish_grace_s = p.switch_grace_s = 10;
        ck_assert_msg(v.ca_ok && v.ca_in_bundle && v.old_cas == 0 &&
                          v.serving_issuer == COMMON_CERTS_ISSUER_CA && v.serving_names_ok,
                      "final view: ca_ok %d in_bundle %d old_cas %d issuer %d names %d", v.ca_ok,
                      v.ca_in_bundle, v.old_cas, (int)v.serving_issuer, v.serving_names_ok);
        common_certs_decide(&v, &p, now, &d);
        tl("final Secret: 1 CA, published, serving certificate verifies for 127.0.0.1; next "
           "decision %s (%s)",
           common_certs_action_name(d.action), d.reason);
        /* B's files (it syncs every second) */
        snprintf(path, sizeof(path), "%s/tls.crt", b->certdir);
        for (double end = e2e_now_s() + 5;; e2e_nap(200)) {
            char *crt = e2e_read_text(path);
            int eq = strcmp(crt, sec.tls_crt) == 0;
            free(crt);
            if (eq)
                break;
            ck_assert_msg(e2e_now_s() < end, "replica B's %s differs from the Secret's tls.crt",
                          path);
        }
        {
            char *key;
            snprintf(path, sizeof(path), "%s/tls.key", b->certdir);
            key = e2e_read_text(path);
            ck_assert_msg(strcmp(key, sec.tls_key) == 0, "replica B's tls.key differs");
            free(key);
            ck_assert_int_eq(stat(path, &st), 0);
            ck_assert_int_eq(st.st_mode & 0777, 0600);
        }
        /* what A and B serve now is the Secret's (unless it rotated this very second) */
        pem_serial(sec.tls_crt, want, sizeof(want));
        for (int k = 0; k < 2; k++) {
            struct replica *r = k ? b : a;
            for (double end = e2e_now_s() + 5;; e2e_nap(200)) {
                pem = served_pem(r->https);
                ck_assert_ptr_nonnull(pem);
                pem_serial(pem, got, sizeof(got));
                free(pem);
                if (strcmp(got, want) == 0)
                    break;
                ck_assert_msg(e2e_now_s() < end, "%s serves %s, the Secret has %s", r->identity,
                              got, want);
            }
        }
        common_arena_destroy(ar);
        json_decref(s);
    }
    /* the leader logged the protocol's actions (leadership may have moved: both logs) */
    {
        const char *actions[] = {"\"create\"", "\"renew-serving\"", "\"rotate-ca-add\"",
                                 "\"switch-serving\"", "\"drop-old-ca\""};
        for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
            int n = count_in_file(a->log, actions[i]) + count_in_file(b->log, actions[i]);
            ck_assert_msg(n >= 1, "no %s in the leader's log", actions[i]);
        }
    }
    /* A answered the admissions (mutating and validating) */
    {
        char *m = NULL;
        double allowed;
        ck_assert_int_eq(e2e_http_get(a->port, "/metrics", &m), 200);
        allowed = e2e_metric(m, "trainsched_webhook_requests_total", "result=\"allowed\"");
        free(m);
        tl("replica A: trainsched_webhook_requests_total{result=\"allowed\"} %g", allowed);
        ck_assert_msg(allowed >= 2.0 * created, "A allowed %g reviews for %d TrainJobs", allowed,
                      created);
    }
    free(bundle);
    free(first_ca);
    free(both);
    mark("passed");
}
END_TEST

/*
 * A Secret without ca-bundle.crt (made by hand, or by a version before the key existed: its
 * bundle is ca.crt alone) is steady: the leader publishes it, records the publication once and
 * then leaves the Secret and its log alone. Before, the record never stuck to such a Secret, so
 * every check (one a second after a publication) rewrote the Secret and logged "CA bundle
 * published" at info again.
 */
START_TEST(steady_secret_without_bundle_key_logs_publication_once)
{
    struct replica *a, *b;
    struct common_error err;
    const char *published = "certificates: CA bundle published";
    json_t *s, *data, *meta;
    char *rv;
    int n;

    t_start = e2e_now_s();
    create_configs(e2e_free_port());
    a = start_replica("replica-a", e2e_free_port(), e2e_free_port());
    for (double end = e2e_now_s() + 60; count_in_file(a->log, published) < 1; e2e_nap(200)) {
        ck_assert_msg(alive(a), "replica A exited: %s", e2e_exit_text(a->status));
        ck_assert_msg(e2e_now_s() < end, "A did not publish a bundle in 60 s");
    }
    kill(a->pid, SIGKILL);
    ck_assert(reap(a, 20));
    /* the same certificates with no ca-bundle.crt and no record of a publication */
    s = get_secret();
    ck_assert_ptr_nonnull(s);
    data = json_object_get(s, "data");
    meta = json_object_get(s, "metadata");
    ck_assert_int_eq(json_object_del(data, COMMON_CERTS_KEY_BUNDLE), 0);
    json_object_del(json_object_get(meta, "annotations"), COMMON_CERTS_ANN_PUBLISHED_AT);
    json_object_del(json_object_get(meta, "annotations"), COMMON_CERTS_ANN_PUBLISHED_SHA256);
    json_object_del(meta, "managedFields");
    ck_assert_msg(common_kube_update(admin, &common_kube_secrets, ns, s, NULL, NULL, &err) ==
                      COMMON_OK,
                  "update Secret: %s", err.msg);
    json_decref(s);
    tl("Secret rewritten without %s", COMMON_CERTS_KEY_BUNDLE);

    b = start_replica("replica-b", e2e_free_port(), e2e_free_port());
    for (double end = e2e_now_s() + 60; count_in_file(b->log, published) < 1; e2e_nap(200)) {
        ck_assert_msg(alive(b), "replica B exited: %s", e2e_exit_text(b->status));
        ck_assert_msg(e2e_now_s() < end, "B did not publish the bundle in 60 s");
    }
    e2e_nap(1000); /* the write that goes with the line */
    s = get_secret();
    rv = strdup(
        json_string_value(json_object_get(json_object_get(s, "metadata"), "resourceVersion")));
    ck_assert_ptr_null(json_object_get(json_object_get(s, "data"), COMMON_CERTS_KEY_BUNDLE));
    json_decref(s);
    tl("B published the bundle; watching for 10 s");
    /* the leader checks again a second after a publication (and every second while it does
     * not stick): ten seconds span several checks */
    e2e_nap(10000);
    ck_assert_msg(alive(b), "replica B exited: %s", e2e_exit_text(b->status));
    n = count_in_file(b->log, published);
    s = get_secret();
    meta = json_object_get(s, "metadata");
    tl("%d \"%s\" line(s); Secret resourceVersion %s -> %s", n, published, rv,
       json_string_value(json_object_get(meta, "resourceVersion")));
    ck_assert_int_eq(n, 1);
    ck_assert_msg(json_object_get(json_object_get(meta, "annotations"),
                                  COMMON_CERTS_ANN_PUBLISHED_AT) != NULL,
                  "the publication is not recorded in the Secret");
    ck_assert_str_eq(json_string_value(json_object_get(meta, "resourceVersion")), rv);
    json_decref(s);
    free(rv);
    mark("passed");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("certrotation");
    TCase *tc = tcase_create("rotation_under_load");
    tcase_add_unchecked_fixture(tc, outer_setup, outer_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 420);
    tcase_add_test(tc, rotation_under_load);
    suite_add_tcase(s, tc);
    tc = tcase_create("steady_state");
    tcase_add_unchecked_fixture(tc, outer_setup, outer_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, steady_secret_without_bundle_key_logs_publication_once);
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
    return failed ? 1 : 0;
}
