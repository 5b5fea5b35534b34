#include "e2eutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/events.h"
#include "common/httpd.h"
#include "common/kubeconfig.h"
#include "common/log.h"
#include "common/yaml.h"
#include "extender/server.h"
#include "reconciler/reconciler.h"
#include "trainjob/status.h"

static const struct common_kube_resource serviceaccounts = {"", "v1", "serviceaccounts", 1};
static const struct common_kube_resource clusterroles = {"rbac.authorization.k8s.io", "v1",
                                                         "clusterroles", 0};
static const struct common_kube_resource rolebindings = {"rbac.authorization.k8s.io", "v1",
                                                         "rolebindings", 1};
static const struct common_kube_resource clusterrolebindings = {"rbac.authorization.k8s.io", "v1",
                                                                "clusterrolebindings", 0};

static const struct common_kube_resource *resource_of(const char *kind)
{
    if (strcmp(kind, "Namespace") == 0)
        return &common_kube_namespaces;
    if (strcmp(kind, "ServiceAccount") == 0)
        return &serviceaccounts;
    if (strcmp(kind, "ClusterRole") == 0)
        return &clusterroles;
    if (strcmp(kind, "ClusterRoleBinding") == 0)
        return &clusterrolebindings;
    if (strcmp(kind, "RoleBinding") == 0)
        return &rolebindings;
    return NULL;
}

/* apply manifests/rbac/rbac.yaml, mint a token, write it to a file; returns the file's path */
static const char *trainsched_token(struct common_kube *admin)
{
    static char path[256];
    struct common_yaml_docs docs;
    struct common_error err;
    struct common_kube_write_opts wo = {.field_manager = "trainsched-e2e", .force = 1};
    json_t *req, *resp = NULL;
    const char *token;
    char file[512];
    FILE *f;

    if (path[0])
        return path;
    snprintf(file, sizeof(file), "%s/manifests/rbac/rbac.yaml", TS_SOURCE_DIR);
    memset(&docs, 0, sizeof(docs));
    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &err) == COMMON_OK, "%s", err.msg);
    for (size_t i = 0; i < docs.n; i++) {
        const char *kind = json_string_value(json_object_get(docs.docs[i], "kind"));
        const char *ns = json_string_value(
            json_object_get(json_object_get(docs.docs[i], "metadata"), "namespace"));
        const struct common_kube_resource *r = kind ? resource_of(kind) : NULL;
        ck_assert_msg(r != NULL, "rbac.yaml: unexpected kind %s", kind ? kind : "?");
        ck_assert_msg(common_kube_apply(admin, r, ns, docs.docs[i], &wo, NULL, &err) == COMMON_OK,
                      "applying rbac.yaml: %s", err.msg);
    }
    common_yaml_docs_free(&docs);
    req = json_pack("{s:s, s:s, s:{s:i}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                    "TokenRequest", "spec", "expirationSeconds", 3600);
    {
        struct common_kube_write_opts sub = {.subresource = "token"};
        json_t *sa = json_pack("{s:{s:s}}", "metadata", "name", "trainsched");
        json_object_update(req, sa);
        json_decref(sa);
        ck_assert_msg(common_kube_create(admin, &serviceaccounts, "trainsched-system", req, &sub,
                                         &resp, &err) == COMMON_OK,
                      "TokenRequest: %s", err.msg);
    }
    token = json_string_value(json_object_get(json_object_get(resp, "status"), "token"));
    ck_assert_ptr_nonnull(token);
    snprintf(path, sizeof(path), "/tmp/trainsched-e2e-token-%d", (int)getpid());
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(token, f);
    fclose(f);
    json_decref(req);
    json_decref(resp);
    return path;
}

struct common_kube *e2e_client(long timeout_ms, int as_trainsched)
{
    struct common_kubeconfig cfg;
    struct common_error err;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_kube *k;
    const char *path = getenv("KUBECONFIG");

    ck_assert_msg(path != NULL, "KUBECONFIG is not set: start the test bed first "
                                "(tests/e2e/testbed/up.sh, then source its env file)");
    memset(&cfg, 0, sizeof(cfg));
    ck_assert_msg(common_kubeconfig_load(path, NULL, &cfg, &err) == COMMON_OK, "%s", err.msg);
    if (timeout_ms > 0)
        o.timeout_ms = timeout_ms;
    if (as_trainsched) {
        struct common_kube *admin = common_kube_client_create(&cfg, NULL, &err);
        ck_assert_msg(admin != NULL, "%s", err.msg);
        /* keep the server and CA, drop the admin certificate, use the token */
        free(cfg.cert_data);
        free(cfg.key_data);
        free(cfg.cert_file);
        free(cfg.key_file);
        cfg.cert_data = cfg.key_data = cfg.cert_file = cfg.key_file = NULL;
        cfg.cert_data_len = cfg.key_data_len = 0;
        cfg.token_file = strdup(trainsched_token(admin));
        common_kube_client_destroy(admin);
    }
    k = common_kube_client_create(&cfg, &o, &err);
    common_kubeconfig_free(&cfg);
    ck_assert_msg(k != NULL, "%s", err.msg);
    return k;
}

char *e2e_sa_token(struct common_kube *admin, const char *ns, const char *sa, const char *audience,
                   int seconds)
{
    struct common_kube_write_opts sub = {.subresource = "token"};
    struct common_error err;
    json_t *req =
        json_pack("{s:s, s:s, s:{s:s}, s:{s:i}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                  "TokenRequest", "metadata", "name", sa, "spec", "expirationSeconds", seconds);
    json_t *resp = NULL;
    const char *token;
    char *out;

    if (audience)
        json_object_set_new(json_object_get(req, "spec"), "audiences", json_pack("[s]", audience));
    ck_assert_msg(common_kube_create(admin, &serviceaccounts, ns, req, &sub, &resp, &err) ==
                      COMMON_OK,
                  "TokenRequest for %s/%s: %s", ns, sa, err.msg);
    token = json_string_value(json_object_get(json_object_get(resp, "status"), "token"));
    ck_assert_ptr_nonnull(token);
    out = strdup(token);
    json_decref(req);
    json_decref(resp);
    return out;
}

void e2e_sa_kubeconfig(struct common_kube *admin, const char *path)
{
    const char *server = getenv("TESTBED_SERVER"), *ca = getenv("TESTBED_CA");
    struct common_kube *tsk;
    char text[4096], *token;

    ck_assert_msg(server && ca, "TESTBED_SERVER / TESTBED_CA not set: source the test bed's env");
    tsk = e2e_client(20000, 1); /* applies manifests/rbac/rbac.yaml */
    common_kube_client_destroy(tsk);
    token = e2e_sa_token(admin, "trainsched-system", "trainsched", NULL, 3600);
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\n"
             "clusters:\n- name: bed\n  cluster: {server: \"%s\", certificate-authority: \"%s\"}\n"
             "users:\n- name: trainsched\n  user: {token: \"%s\"}\n"
             "contexts:\n- name: trainsched\n  context: {cluster: bed, user: trainsched}\n"
             "current-context: trainsched\n",
             server, ca, token);
    e2e_write_file(path, text);
    chmod(path, 0600);
    free(token);
}

void e2e_make_ns(struct common_kube *admin, const char *prefix, char *out, size_t size)
{
    struct common_error err;
    json_t *ns, *sa, *rb;
    enum common_rc rc;

    /* the pid too: suites started in the same second share rand()'s unseeded sequence */
    snprintf(out, size, "%s-%ld-%d-%d", prefix, (long)time(NULL) % 100000, (int)getpid() % 100000,
             rand() % 10000);
    ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                   "name", out);
    ck_assert_msg(common_kube_create(admin, &common_kube_namespaces, NULL, ns, NULL, NULL, &err) ==
                      COMMON_OK,
                  "%s", err.msg);
    json_decref(ns);
    /* the "default" ServiceAccount, which kube-controller-manager would add, so that pods are
     * admitted whether or not it runs */
    sa = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata",
                   "name", "default");
    rc = common_kube_create(admin, &serviceaccounts, out, sa, NULL, NULL, &err);
    ck_assert_msg(rc == COMMON_OK || rc == COMMON_EEXISTS, "%s", err.msg);
    json_decref(sa);
    /* trainsched may hold Leases here, as the shipped RoleBinding lets it in trainsched-system */
    rb = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s}]}", "apiVersion",
                   "rbac.authorization.k8s.io/v1", "kind", "RoleBinding", "metadata", "name",
                   "trainsched-leader-election", "roleRef", "apiGroup", "rbac.authorization.k8s.io",
                   "kind", "ClusterRole", "name", "trainsched-leader-election", "subjects", "kind",
                   "ServiceAccount", "name", "trainsched", "namespace", "trainsched-system");
    rc = common_kube_create(admin, &rolebindings, out, rb, NULL, NULL, &err);
    ck_assert_msg(rc == COMMON_OK || rc == COMMON_EEXISTS, "%s", err.msg);
    json_decref(rb);
}

void e2e_drop_ns(struct common_kube *admin, const char *ns)
{
    struct common_error err;
    common_kube_delete(admin, &common_kube_namespaces, NULL, ns, NULL, NULL, NULL, &err);
}

/* ---- generic helpers ---- */

void e2e_create(struct common_kube *k, const struct common_kube_resource *r, const char *ns,
                json_t *obj)
{
    struct common_kube_write_opts wo = {.strict = 1};
    struct common_error err;
    double end = e2e_now_s() + 20;
    enum common_rc rc;

    /* Kueue's TrainJob webhook reads the runtime from its own cache, which may not hold a
     * runtime created a moment ago: that one refusal ("runtime 'x' not found") is retried */
    while ((rc = common_kube_create(k, r, r->namespaced ? ns : NULL, obj, &wo, NULL, &err)) !=
               COMMON_OK &&
           r == &common_kube_trainjobs && strstr(err.msg, "runtime '") &&
           strstr(err.msg, "' not found") && e2e_now_s() < end)
        e2e_nap(500);
    ck_assert_msg(rc == COMMON_OK, "create %s: %s", r->resource, err.msg);
    json_decref(obj);
}

json_t *e2e_get(struct common_kube *k, const struct common_kube_resource *r, const char *ns,
                const char *name)
{
    json_t *o = NULL;
    struct common_error err;
    enum common_rc rc = common_kube_get(k, r, ns, name, &o, &err);
    if (rc == COMMON_ENOTFOUND)
        return NULL;
    ck_assert_msg(rc == COMMON_OK, "get %s %s: %s", r->resource, name, err.msg);
    return o;
}

void e2e_kwok_node(struct common_kube *k, const char *name, const char *label, const char *cpu)
{
    e2e_create(k, &common_kube_nodes, NULL,
               e2e_yamlf("apiVersion: v1\nkind: Node\n"
                         "metadata:\n  name: %s\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                         "  labels: {type: kwok%s%s}\n"
                         "status:\n  allocatable: {cpu: '%s', memory: 64Gi, pods: '110'}\n"
                         "  capacity: {cpu: '%s', memory: 64Gi, pods: '110'}\n",
                         name, label ? ", " : "", label ? label : "", cpu, cpu));
}

void e2e_log_level_from_env(void)
{
    enum common_log_level level;
    if (getenv("E2E_LOG_LEVEL") && common_log_parse_level(getenv("E2E_LOG_LEVEL"), &level) == 0)
        common_log_set_level(level);
}

double e2e_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void e2e_nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

json_t *e2e_yaml1(const char *text)
{
    struct common_yaml_docs d;
    struct common_error err;
    json_t *o;
    ck_assert_msg(common_yaml_load(text, strlen(text), "inline", NULL, &d, &err) == COMMON_OK, "%s",
                  err.msg);
    ck_assert_uint_eq(d.n, 1);
    o = json_incref(d.docs[0]);
    common_yaml_docs_free(&d);
    return o;
}

json_t *e2e_yamlf(const char *fmt, ...)
{
    char buf[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return e2e_yaml1(buf);
}

void e2e_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

char *e2e_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    size_t len = 0, cap = 4096, n;
    char *s = malloc(cap), *bigger;
    if (!s) {
        if (f)
            fclose(f);
        return NULL;
    }
    if (f) {
        while ((n = fread(s + len, 1, cap - len - 1, f)) > 0) {
            len += n;
            if (cap - len < 2) {
                bigger = realloc(s, cap * 2);
                if (!bigger)
                    break;
                s = bigger;
                cap *= 2;
            }
        }
        fclose(f);
    }
    s[len] = 0;
    return s;
}

char *e2e_read_text(const char *path)
{
    char *s = e2e_slurp(path);
    ck_assert_ptr_nonnull(s);
    return s;
}

int e2e_free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;
    ck_assert_int_ge(fd, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

int e2e_free_port_or_exit(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), p;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        perror("free port");
        exit(1);
    }
    p = ntohs(sa.sin_port);
    close(fd);
    return p;
}

int e2e_http_get(int port, const char *path, char **body)
{
    struct sockaddr_in a;
    struct timeval tv = {5, 0};
    char req[256], *buf = NULL, *p;
    size_t len = 0, cap = 0;
    ssize_t n;
    int fd, code = -1;

    if (body)
        *body = NULL;
    fd = socket(AF_INET, SOCK_STREAM, 0);
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
    snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
        close(fd);
        return -1;
    }
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 16384;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (!buf)
        return -1;
    buf[len] = 0;
    if (strncmp(buf, "HTTP/1.", 7) == 0 && len > 12) {
        char *end;
        long c = strtol(buf + 9, &end, 10);
        if (end != buf + 9 && c >= 100 && c < 600)
            code = (int)c;
    }
    if (body && code > 0 && (p = strstr(buf, "\r\n\r\n")) != NULL) {
        *body = strdup(p + 4);
        ck_assert_ptr_nonnull(*body);
    }
    free(buf);
    return code;
}

double e2e_metric(const char *text, const char *name, const char *labels)
{
    double sum = NAN;
    size_t nl = strlen(name);
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t ll = eol ? (size_t)(eol - line) : strlen(line);
        if (line[0] != '#' && ll > nl && strncmp(line, name, nl) == 0 &&
            (line[nl] == ' ' || line[nl] == '{')) {
            const char *v = line + nl;
            int match = 1;
            if (*v == '{') {
                const char *close = memchr(v, '}', ll - nl);
                if (!close)
                    goto next;
                if (labels) {
                    char lab[512];
                    snprintf(lab, sizeof(lab), "%.*s", (int)(close - v), v);
                    match = strstr(lab, labels) != NULL;
                }
                v = close + 1;
            } else if (labels) {
                match = 0;
            }
            if (match) {
                char *end;
                double d = strtod(v, &end);
                if (end != v)
                    sum = isnan(sum) ? d : sum + d;
            }
        }
    next:
        line = eol ? eol + 1 : NULL;
    }
    return sum;
}

const char *e2e_exit_text(int st)
{
    static char s[64];
    if (WIFEXITED(st))
        snprintf(s, sizeof(s), "exit %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(s, sizeof(s), "signal %d", WTERMSIG(st));
    else
        snprintf(s, sizeof(s), "status %d", st);
    return s;
}

void e2e_echo_tail(const char *path, int lines)
{
    char *s = e2e_slurp(path), *p, *san;
    int seen = 0;
    if (!s)
        return;
    san = strstr(s, "ERROR: AddressSanitizer");
    if (!san)
        san = strstr(s, "runtime error:");
    if (!san)
        san = strstr(s, "ERROR: LeakSanitizer");
    if (san) {
        while (san > s && san[-1] != '\n')
            san--;
        for (p = san; *p && seen < lines; p++)
            seen += *p == '\n';
        fprintf(stderr, "---- %s (sanitizer report) ----\n%.*s\n", path, (int)(p - san), san);
        free(s);
        return;
    }
    for (p = s + strlen(s); p > s; p--)
        if (p[-1] == '\n' && p[0] && ++seen > lines)
            break;
    fprintf(stderr, "---- %s (last %d lines) ----\n%s\n", path, lines, p);
    free(s);
}

pid_t e2e_spawn(char *const argv[], const char *log)
{
    pid_t pid;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        fd = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, 0);
            close(fd);
        }
        execv(TS_BINARY, argv);
        _exit(127);
    }
    return pid;
}

void e2e_sched_config(FILE *f, int port, int bind_timeout_s)
{
    fprintf(f,
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "percentageOfNodesToScore: 100\n"
            "podInitialBackoffSeconds: 1\n"
            "podMaxBackoffSeconds: 2\n"
            "profiles:\n"
            "- schedulerName: default-scheduler\n"
            "extenders:\n"
            "- urlPrefix: http://127.0.0.1:%d/scheduler\n"
            "  filterVerb: filter\n"
            "  prioritizeVerb: prioritize\n"
            "  preemptVerb: preempt\n"
            "  bindVerb: bind\n"
            "  weight: 1\n"
            "  enableHTTPS: false\n"
            "  httpTimeout: %ds\n"
            "  nodeCacheCapable: true\n"
            "  ignorable: false\n"
            "  managedResources:\n"
            "  - name: trainsched.io/gang\n"
            "    ignoredByScheduler: true\n",
            port, bind_timeout_s);
}

void e2e_device_class(struct common_kube *k, const char *name, const char *driver)
{
    static const struct common_kube_resource classes = {"resource.k8s.io", "v1", "deviceclasses",
                                                        0};
    e2e_create(k, &classes, NULL,
               e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\n"
                         "metadata: {name: %s}\n"
                         "spec: {selectors: [{cel: {expression: \"device.driver == '%s'\"}}]}\n",
                         name, driver));
}

void e2e_claim_template(struct common_kube *k, const char *ns, const char *name, const char *cls,
                        int count)
{
    static const struct common_kube_resource templates = {"resource.k8s.io", "v1",
                                                          "resourceclaimtemplates", 1};
    e2e_create(k, &templates, ns,
               e2e_yamlf("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
                         "metadata: {name: %s, namespace: %s}\n"
                         "spec:\n  spec:\n    devices:\n      requests:\n"
                         "      - name: gpu\n"
                         "        exactly: {deviceClassName: %s, allocationMode: ExactCount, "
                         "count: %d}\n",
                         name, ns, cls, count));
}

int e2e_trainsched(const char *kc, const char *args, const char *dir, char **out, char **err)
{
    char cmd[2048], errpath[600];
    int st;
    FILE *p;
    size_t n = 0, cap = 1 << 22;

    snprintf(errpath, sizeof(errpath), "%s/trainsched.err", dir);
    snprintf(cmd, sizeof(cmd), "'%s' %s --kubeconfig '%s' 2>'%s'", TS_BINARY, args, kc, errpath);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    *out = calloc(1, cap);
    ck_assert_ptr_nonnull(*out);
    n = fread(*out, 1, cap - 1, p);
    (*out)[n] = '\0';
    st = pclose(p);
    *err = e2e_read_text(errpath);
    fprintf(stderr, "$ trainsched %s -> %s\n%s%s", args, e2e_exit_text(st), *out, *err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int e2e_explain(const char *kc, const char *args, const char *dir, char **out, char **err)
{
    char full[1800];

    snprintf(full, sizeof(full), "explain %s", args);
    return e2e_trainsched(kc, full, dir, out, err);
}

int e2e_sched_ctl(const char *args)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "%s %s >&2", TS_SOURCE_DIR "/tests/e2e/testbed/scheduler-ctl.sh",
             args);
    return system(cmd);
}

int e2e_sched_extender_up(const char *dir, int port, int bind_timeout_s)
{
    char cfg[600], args[700];
    FILE *f;

    snprintf(cfg, sizeof(cfg), "%s/scheduler-config.yaml", dir);
    f = fopen(cfg, "w");
    if (!f) {
        perror(cfg);
        return -1;
    }
    e2e_sched_config(f, port, bind_timeout_s);
    fclose(f);
    snprintf(args, sizeof(args), "restart %s", cfg);
    if (e2e_sched_ctl(args) != 0) {
        fprintf(stderr, "cannot restart kube-scheduler with %s\n", cfg);
        e2e_sched_ctl("restore");
        return -1;
    }
    return 0;
}

char *e2e_event_note(struct common_kube *k, const char *ns, const char *name, const char *reason,
                     const char *want)
{
    /* Events as `kubectl describe` reads them: core v1, by field selector on the object's uid */
    static const struct common_kube_resource core_events = {"", "v1", "events", 1};
    struct common_error err;
    struct common_kube_list_opts lo = {0};
    json_t *items = NULL, *it, *pg = NULL;
    const char *uid;
    char sel[256];
    size_t i;
    char *note = NULL;

    ck_assert_msg(common_kube_get(k, &common_kube_podgroups, ns, name, &pg, &err) == COMMON_OK,
                  "PodGroup %s/%s: %s", ns, name, err.msg);
    uid = json_string_value(json_object_get(json_object_get(pg, "metadata"), "uid"));
    ck_assert_ptr_nonnull(uid);
    snprintf(sel, sizeof(sel), "involvedObject.uid=%s,involvedObject.kind=PodGroup", uid);
    lo.field_selector = sel;
    ck_assert_msg(common_kube_list(k, &core_events, ns, &lo, &items, NULL, &err) == COMMON_OK, "%s",
                  err.msg);
    json_array_foreach(items, i, it)
    {
        const char *r = json_string_value(json_object_get(it, "reason"));
        const char *n =
            json_string_value(json_object_get(json_object_get(it, "involvedObject"), "name"));
        const char *nt = json_string_value(json_object_get(it, "message"));
        if (r && n && nt && strcmp(r, reason) == 0 && strcmp(n, name) == 0 && strstr(nt, want)) {
            free(note);
            note = strdup(nt);
        }
    }
    json_decref(items);
    json_decref(pg);
    return note;
}

json_t *e2e_events_of(struct common_kube *k, const char *ns, const char *uid, const char *reason)
{
    static const struct common_kube_resource core_events = {"", "v1", "events", 1};
    struct common_kube_list_opts lo = {0};
    struct common_error err;
    json_t *items = NULL;
    char sel[256];

    ck_assert_ptr_nonnull(uid);
    snprintf(sel, sizeof(sel), "involvedObject.uid=%s,reason=%s", uid, reason);
    lo.field_selector = sel;
    ck_assert_msg(common_kube_list(k, &core_events, ns, &lo, &items, NULL, &err) == COMMON_OK, "%s",
                  err.msg);
    return items;
}

long e2e_delete_pods_now(struct common_kube *k, const char *ns, const char *name)
{
    static const char opts[] = "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                               "\"gracePeriodSeconds\":0}";
    struct common_error err;
    struct common_buf resp;
    char path[512];
    long status = 0;

    common_buf_init(&resp, 64 << 20);
    common_kube_path(&common_kube_pods, ns, name, NULL, path, sizeof(path));
    (void)common_kube_request(k, "DELETE", path, "application/json", opts, strlen(opts), NULL,
                              &resp, &status, &err);
    common_buf_free(&resp);
    return status;
}

int e2e_run_with_extender(struct Suite *s, int port, int bind_timeout_s)
{
    char cfg[] = "/tmp/ts-e2e-sched-XXXXXX";
    char args[128];
    int fd = mkstemp(cfg), failed;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

    if (!f) {
        perror(cfg);
        return 1;
    }
    e2e_sched_config(f, port, bind_timeout_s);
    fclose(f);
    snprintf(args, sizeof(args), "restart %s", cfg);
    if (e2e_sched_ctl(args) != 0) {
        fprintf(stderr, "cannot restart kube-scheduler with %s\n", cfg);
        e2e_sched_ctl("restore");
        unlink(cfg);
        return 1;
    }
    failed = e2e_run_suite(s);
    if (e2e_sched_ctl("restore") != 0) {
        fprintf(stderr, "could not restore the test bed's kube-scheduler config\n");
        failed++;
    }
    unlink(cfg);
    return failed;
}

void e2e_ext_start(struct e2e_ext *e, const struct extender_server_opts *o, int port)
{
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct common_error err;
    char addr[64];
    enum common_rc rc = COMMON_EIO;

    e->ext = extender_server_create(o, &err);
    ck_assert_msg(e->ext != NULL, "%s", err.msg);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ho.address = addr;
    ho.threads = 4;
    ho.connection_timeout_s = 3;
    ho.drain_ms = 2000;
    e->httpd = common_httpd_create(&ho, &err);
    ck_assert_msg(e->httpd != NULL, "%s", err.msg);
    ck_assert_int_eq(extender_server_install(e->ext, e->httpd, &err), COMMON_OK);
    ck_assert_msg(extender_server_start(e->ext, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_msg(extender_server_wait_ready(e->ext, 30000), "extender caches not synced in 30 s");
    /* the port of a previous instance may linger a moment */
    for (int i = 0; i < 50 && (rc = common_httpd_start(e->httpd, &err)) != COMMON_OK; i++)
        e2e_nap(100);
    ck_assert_msg(rc == COMMON_OK, "%s", err.msg);
}

void e2e_ext_stop(struct e2e_ext *e)
{
    if (!e->ext)
        return;
    extender_server_stop(e->ext);
    common_httpd_destroy(e->httpd);
    extender_server_destroy(e->ext);
    e->ext = NULL;
    e->httpd = NULL;
}

json_t *e2e_wait_for(double secs, e2e_poll_fn fn, const void *arg, const char *what, const char *ns)
{
    double end = e2e_now_s() + secs;
    for (;;) {
        json_t *o = fn(arg);
        if (o)
            return o;
        if (e2e_now_s() > end)
            ck_abort_msg("timed out after %.0f s waiting for %s in %s", secs, what, ns);
        e2e_nap(200);
    }
}

json_t *e2e_tj_cond(struct common_kube *k, const char *ns, const char *name, const char *type,
                    const char *status, const char *reason)
{
    json_t *tj = e2e_get(k, &common_kube_trainjobs, ns, name);
    const json_t *c = trainjob_status_condition(json_object_get(tj, "status"), type);
    if (c && strcmp(json_string_value(json_object_get(c, "status")), status) == 0 &&
        (!reason || strcmp(json_string_value(json_object_get(c, "reason")), reason) == 0))
        return tj;
    json_decref(tj);
    return NULL;
}

const char *const e2e_builtin_runtimes[E2E_N_BUILTIN_RUNTIMES] = {"deepspeed-distributed",
                                                                  "jax-distributed",
                                                                  "mlx-distributed",
                                                                  "torch-distributed",
                                                                  "torch-distributed-with-cache",
                                                                  "torchtune-llama3.2-1b",
                                                                  "torchtune-llama3.2-3b",
                                                                  "torchtune-qwen2.5-1.5b",
                                                                  "xgboost-distributed"};

void e2e_apply_builtin_runtimes(struct common_kube *k)
{
    struct common_yaml_docs d;
    struct common_error err;
    char path[1024];

    for (size_t i = 0; i < E2E_N_BUILTIN_RUNTIMES; i++) {
        struct common_kube_write_opts wo = {.field_manager = "e2e", .force = 1, .strict = 1};
        snprintf(path, sizeof(path), "%s/manifests/runtimes/%s.yaml", TS_SOURCE_DIR,
                 e2e_builtin_runtimes[i]);
        ck_assert_msg(common_yaml_load_file(path, NULL, &d, &err) == COMMON_OK, "%s", err.msg);
        ck_assert_msg(common_kube_apply(k, &common_kube_clustertrainingruntimes, NULL, d.docs[0],
                                        &wo, NULL, &err) == COMMON_OK,
                      "%s: %s", e2e_builtin_runtimes[i], err.msg);
        common_yaml_docs_free(&d);
    }
}

json_t *e2e_jobset_pods(struct common_kube *k, const char *ns, const char *jobset)
{
    json_t *items = NULL;
    struct common_error err;
    char sel[300];
    struct common_kube_list_opts lo = {0};

    snprintf(sel, sizeof(sel), "jobset.sigs.k8s.io/jobset-name=%s", jobset);
    lo.label_selector = sel;
    ck_assert_msg(common_kube_list(k, &common_kube_pods, ns, &lo, &items, NULL, &err) == COMMON_OK,
                  "list pods: %s", err.msg);
    return items;
}

size_t e2e_bound_pods(struct common_kube *k, const char *ns, const char *jobset, size_t *total)
{
    json_t *pods = e2e_jobset_pods(k, ns, jobset), *p;
    size_t i, n = 0;

    json_array_foreach(pods, i, p)
    {
        if (json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName")))
            n++;
    }
    if (total)
        *total = json_array_size(pods);
    json_decref(pods);
    return n;
}

struct gang_ref {
    struct common_kube *k;
    const char *ns, *name;
};

static json_t *jobset_gone(const void *arg)
{
    const struct gang_ref *g = arg;
    json_t *o = e2e_get(g->k, &common_kube_jobsets, g->ns, g->name);

    if (o) {
        json_decref(o);
        return NULL;
    }
    return json_true();
}

static json_t *jobs_gone(const void *arg)
{
    static const struct common_kube_resource jobs = {"batch", "v1", "jobs", 1};
    const struct gang_ref *g = arg;
    struct common_kube_list_opts lo = {0};
    struct common_error err;
    json_t *items = NULL;
    char sel[300];
    size_t n;

    snprintf(sel, sizeof(sel), "jobset.sigs.k8s.io/jobset-name=%s", g->name);
    lo.label_selector = sel;
    ck_assert_msg(common_kube_list(g->k, &jobs, g->ns, &lo, &items, NULL, &err) == COMMON_OK,
                  "list jobs: %s", err.msg);
    n = json_array_size(items);
    json_decref(items);
    return n ? NULL : json_true();
}

static json_t *gang_pods_gone(const void *arg)
{
    const struct gang_ref *g = arg;
    json_t *pods = e2e_jobset_pods(g->k, g->ns, g->name), *p;
    size_t i, n = json_array_size(pods);

    json_array_foreach(pods, i, p)
    {
        e2e_delete_pods_now(
            g->k, g->ns,
            json_string_value(json_object_get(json_object_get(p, "metadata"), "name")));
    }
    json_decref(pods);
    return n ? NULL : json_true();
}

void e2e_delete_gang(struct common_kube *k, const char *ns, const char *name, double secs)
{
    struct common_error err;
    struct gang_ref g = {k, ns, name};

    ck_assert_msg(common_kube_delete(k, &common_kube_trainjobs, ns, name, NULL, NULL, "Background",
                                     &err) == COMMON_OK,
                  "delete TrainJob %s: %s", name, err.msg);
    json_decref(e2e_wait_for(secs, jobset_gone, &g, "the JobSet to be garbage-collected", ns));
    json_decref(e2e_wait_for(secs, jobs_gone, &g, "the Jobs to be garbage-collected", ns));
    json_decref(e2e_wait_for(secs, gang_pods_gone, &g, "the pods to be deleted", ns));
}

json_t *e2e_event_with(struct common_kube *k, struct common_events *ev, const char *ns,
                       const char *reason, const char *text)
{
    struct common_error err;
    json_t *items = NULL, *it, *found = NULL;
    size_t i;

    if (ev)
        ck_assert_int_eq(common_events_flush(ev, 20000), COMMON_OK);
    ck_assert_msg(common_kube_list(k, &common_kube_events, ns, NULL, &items, NULL, &err) ==
                      COMMON_OK,
                  "list events: %s", err.msg);
    json_array_foreach(items, i, it)
    {
        char *dump = json_dumps(it, JSON_COMPACT);
        if (dump && strstr(dump, reason) && strstr(dump, text))
            found = json_incref(it);
        free(dump);
        if (found)
            break;
    }
    json_decref(items);
    return found;
}

void e2e_add_test(Suite *s, const char *name, const TTest *t, void (*setup)(void),
                  void (*teardown)(void), int timeout_s)
{
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, timeout_s);
    tcase_add_test(tc, t);
    suite_add_tcase(s, tc);
}

int e2e_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed;
}

void e2e_rc_opts(struct rc_opts *o, struct common_kube *kube, const char *ns)
{
    memset(o, 0, sizeof(*o));
    o->kube = kube;
    o->namespace = ns;
    o->workers = 2;
    o->queue.max_delay_ms = 2000; /* retries in seconds, not minutes, in tests */
}

struct rc_reconciler *e2e_rc_start(const struct rc_opts *o)
{
    struct common_error err;
    struct rc_reconciler *rec = rc_create(o, &err);
    ck_assert_msg(rec != NULL, "%s", err.msg);
    ck_assert_msg(rc_start(rec, &err) == COMMON_OK, "%s", err.msg);
    return rec;
}

json_t *e2e_exists(const void *arg)
{
    const struct e2e_obj_ref *r = arg;
    return e2e_get(r->k, r->res, r->ns, r->name);
}

json_t *e2e_at(const json_t *o, const char *path)
{
    char key[128];
    const char *p = path;
    json_t *v = (json_t *)o;

    while (v && p && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        v = json_is_array(v) ? json_array_get(v, (size_t)strtoul(key, NULL, 10))
                             : json_object_get(v, key);
        p = dot ? dot + 1 : p + n;
    }
    return v;
}

void e2e_tj_set_nodes(struct common_kube *k, const char *ns, const char *name, int nodes)
{
    struct common_error err;
    char body[96];

    snprintf(body, sizeof(body), "{\"spec\":{\"trainer\":{\"numNodes\":%d}}}", nodes);
    ck_assert_msg(common_kube_patch(k, &common_kube_trainjobs, ns, name, COMMON_KUBE_MERGE_PATCH,
                                    body, NULL, NULL, &err) == COMMON_OK,
                  "patch trainjob %s numNodes %d: %s", name, nodes, err.msg);
}

json_t *e2e_wait_named(double secs, int nap_ms, e2e_named_fn fn, const char *name, const void *arg,
                       const char *what, const char *ns)
{
    double end = e2e_now_s() + secs;
    for (;;) {
        json_t *o = fn(name, arg);
        if (o)
            return o;
        if (e2e_now_s() > end)
            ck_abort_msg("timed out after %.0f s waiting for %s (%s/%s)", secs, what, ns, name);
        e2e_nap(nap_ms);
    }
}

/* ---- tests/e2e/faultproxy.py ---- */

#define PROXY_PY TS_SOURCE_DIR "/tests/e2e/faultproxy.py"

void e2e_proxy_start(const char *workdir, pid_t *pid, int *port, int *control_port)
{
    char ready[200];
    json_t *j = NULL;
    double t0 = e2e_now_s();

    snprintf(ready, sizeof(ready), "%s/ready", workdir);
    *pid = fork();
    ck_assert_int_ge(*pid, 0);
    if (*pid == 0) {
        char plog[200];
        int fd;
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* also with CK_FORK=no and a failed test */
        snprintf(plog, sizeof(plog), "%s/proxy.log", workdir);
        fd = open(plog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execlp("python3", "python3", PROXY_PY, "--workdir", workdir, "--ready-file", ready,
               (char *)NULL);
        _exit(127);
    }
    while (e2e_now_s() - t0 < 20) {
        int status;
        if (access(ready, F_OK) == 0 && (j = json_load_file(ready, 0, NULL)) != NULL)
            break;
        ck_assert_msg(waitpid(*pid, &status, WNOHANG) == 0,
                      "faultproxy.py exited; see %s/proxy.log", workdir);
        e2e_nap(50);
    }
    ck_assert_msg(j != NULL, "faultproxy.py not ready after 20 s; see %s/proxy.log", workdir);
    *port = (int)json_integer_value(json_object_get(j, "port"));
    *control_port = (int)json_integer_value(json_object_get(j, "control_port"));
    json_decref(j);
    ck_assert_int_gt(*port, 0);
    ck_assert_int_gt(*control_port, 0);
}

void e2e_proxy_stop(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGTERM);
        waitpid(*pid, NULL, 0);
        *pid = 0;
    }
}

json_t *e2e_proxy_ctl(int control_port, const char *path)
{
    char req[700], buf[1 << 16];
    struct sockaddr_in a;
    struct timeval tv = {10, 0};
    size_t len = 0;
    ssize_t n;
    int fd;
    char *body;
    json_t *j;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)control_port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "control port: %s",
                  strerror(errno));
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
             path);
    ck_assert(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    buf[len] = '\0';
    body = strstr(buf, "\r\n\r\n");
    ck_assert_msg(body != NULL, "control %s: no answer", path);
    j = json_loads(body + 4, 0, NULL);
    ck_assert_msg(j != NULL, "control %s: %s", path, buf);
    return j;
}

struct common_kube *e2e_proxy_client(int port, size_t max_watch_event)
{
    struct common_kubeconfig cfg;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;
    struct common_kube *k;
    char server[64];

    memset(&cfg, 0, sizeof(cfg));
    snprintf(server, sizeof(server), "https://127.0.0.1:%d", port);
    cfg.server = server;
    cfg.ca_file = getenv("TESTBED_CA");
    ck_assert_msg(cfg.ca_file != NULL, "TESTBED_CA is not set: source the test bed's env");
    if (max_watch_event)
        o.max_watch_event = max_watch_event;
    k = common_kube_client_create(&cfg, &o, &err);
    ck_assert_msg(k != NULL, "%s", err.msg);
    return k;
}
