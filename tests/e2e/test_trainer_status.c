/*
 * tests/e2e/test_trainer_status.c - `serve --trainjob-status` (Kubeflow Trainer's TrainJobStatus
 * feature) against the real kube-apiserver of the test bed, with the upstream Trainer CRDs.
 *
 * The daemon (TS_BINARY) runs as trainsched's ServiceAccount (the shipped RBAC: tokenreviews
 * create, trainjobs/status patch) with the reconciler for one namespace and the status server
 * on 127.0.0.1. The test is the training process, without a pod: it asks the TokenRequest API
 * for a token of a ServiceAccount with the TrainJob's audience, as the projected volume the
 * reconciler writes into the trainer pods would hold it, and POSTs progress over TLS, trusting
 * the CA the reconciler copied into <name>-tls-config.
 *
 *   report_progress  the JobSet's trainer pods carry Trainer's env and projected token volume;
 *                    a report is answered 200 and shows in status.trainerStatus, written by
 *                    field manager trainer-status; a token of another namespace's
 *                    ServiceAccount (403), a token for another TrainJob (403) and a body over
 *                    64 KiB (413) write nothing; a report the CRD refuses gets 422 with exactly
 *                    the message the API server gives for the same status (three rules); the
 *                    reconciler's own status writes (a suspend)
 *                    leave trainerStatus alone; /metrics counts the answers by code
 *   ca_from_the_certificate_secret
 *                    without --trainjob-status-ca-file the CA comes from the certificate
 *                    Secret (tls.secretName in tls.secretNamespace, read with the shipped
 *                    webhook-rbac Role's rule): while it is missing the TrainJob gets no JobSet
 *                    (the reconcile fails and is retried, as in Trainer); once it exists, the
 *                    ConfigMap <name>-tls-config holds its ca-bundle.crt
 */
#include <check.h>
#include <curl/curl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "common/kube.h"
#include "common/yaml.h"
#include "common/arena.h"
#include "common/certs.h"
#include "e2eutil.h"

static struct common_kube *admin;
static char ns[128], other_ns[128], tmpdir[256], kubeconfig[600], ca_file[600];

/* ---- helpers ---- */

static void create(const struct common_kube_resource *r, const char *in_ns, json_t *obj)
{
    struct common_kube_write_opts wo = {.strict = 1};
    struct common_error err;
    enum common_rc rc = common_kube_create(admin, r, in_ns, obj, &wo, NULL, &err);
    ck_assert_msg(rc == COMMON_OK, "create %s: %s", r->resource, err.msg);
    json_decref(obj);
}

static json_t *get(const struct common_kube_resource *r, const char *name)
{
    json_t *o = NULL;
    struct common_error err;
    enum common_rc rc = common_kube_get(admin, r, ns, name, &o, &err);
    if (rc == COMMON_ENOTFOUND)
        return NULL;
    ck_assert_msg(rc == COMMON_OK, "get %s %s: %s", r->resource, name, err.msg);
    return o;
}

static size_t collect(char *data, size_t size, size_t n, void *ctx)
{
    struct common_buf *b = ctx;
    return common_buf_append(b, data, size * n, NULL) == COMMON_OK ? size * n : 0;
}

/* POST body to https://127.0.0.1:port<path> with the token (NULL: none), trusting ca; the HTTP
 * status, and the answer into *answer (malloc'd) */
static long post(int port, const char *path, const char *token, const char *body, char **answer)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    struct common_buf b;
    char url[700], auth[4096];
    long code = 0;
    CURLcode cc;

    ck_assert_ptr_nonnull(c);
    common_buf_init(&b, 1u << 20);
    snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, path);
    h = curl_slist_append(h, "Content-Type: application/json");
    if (token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    cc = curl_easy_perform(c);
    ck_assert_msg(cc == CURLE_OK, "POST %s: %s", url, curl_easy_strerror(cc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    *answer = strdup(b.data ? b.data : "");
    common_buf_free(&b);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return code;
}

static const json_t *trainer_status(json_t *tj)
{
    return json_object_get(json_object_get(tj, "status"), "trainerStatus");
}

/* a report to job1 with a token of sa_ns/default for ns/aud_name's audience; the HTTP status */
static long report(int port, const char *sa_ns, const char *aud_name, const char *body,
                   char **answer)
{
    char aud[400], path[400];
    char *token;
    long code;

    snprintf(aud, sizeof(aud), "trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s/status",
             ns, aud_name);
    snprintf(path, sizeof(path),
             "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/job1/status", ns);
    token = e2e_sa_token(admin, sa_ns, "default", aud, 600);
    code = post(port, path, token, body, answer);
    free(token);
    return code;
}

/* ---- fixture: namespaces and files made and dropped in the runner (unchecked) ---- */

static void write_sa_kubeconfig(void)
{
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/trainsched.kubeconfig", tmpdir);
    e2e_sa_kubeconfig(admin, kubeconfig);
}

static void outer_setup(void)
{
    char *argv[] = {"certs",
                    "--service",
                    "trainsched-controller",
                    "--namespace",
                    "trainsched-system",
                    "--ip",
                    "127.0.0.1",
                    "--out",
                    tmpdir,
                    "--force",
                    NULL};
    FILE *devnull = fopen("/dev/null", "w");

    snprintf(tmpdir, sizeof(tmpdir), "/tmp/trainsched-tstatus-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    ck_assert_int_eq(cmd_certs(10, argv, devnull, stderr), 0);
    fclose(devnull);
    snprintf(ca_file, sizeof(ca_file), "%s/ca.crt", tmpdir);
    admin = e2e_client(20000, 0);
    write_sa_kubeconfig();
    e2e_make_ns(admin, "tstatus", ns, sizeof(ns));
    e2e_make_ns(admin, "tstatus-other", other_ns, sizeof(other_ns));
    common_kube_client_destroy(admin);
    admin = NULL;
}

static void outer_teardown(void)
{
    char cmd[400];
    admin = e2e_client(20000, 0);
    e2e_drop_ns(admin, ns);
    e2e_drop_ns(admin, other_ns);
    common_kube_client_destroy(admin);
    admin = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* ---- the test ---- */

static const struct common_kube_resource roles = {"rbac.authorization.k8s.io", "v1", "roles", 1};
static const struct common_kube_resource rolebindings = {"rbac.authorization.k8s.io", "v1",
                                                         "rolebindings", 1};

/* start a daemon with the TrainJobStatus feature and extra arguments; its pid */
static pid_t start_daemon(const char *log, char *const *extra, int nextra, int *status_port,
                          int *http_port)
{
    static char http_s[64], status_s[64], cert[600], key[600];
    char *argv[32] = {"trainsched",
                      "serve",
                      "--kubeconfig",
                      kubeconfig,
                      "--leader-elect=false",
                      "--namespace",
                      ns,
                      "--http-address",
                      http_s,
                      "--tls-cert-file",
                      cert,
                      "--tls-key-file",
                      key,
                      "--trainjob-status",
                      "--trainjob-status-address",
                      status_s,
                      "--log-level",
                      "debug"};
    int n = 18;

    *status_port = e2e_free_port();
    *http_port = e2e_free_port();
    snprintf(http_s, sizeof(http_s), "127.0.0.1:%d", *http_port);
    snprintf(status_s, sizeof(status_s), "127.0.0.1:%d", *status_port);
    snprintf(cert, sizeof(cert), "%s/tls.crt", tmpdir);
    snprintf(key, sizeof(key), "%s/tls.key", tmpdir);
    for (int i = 0; i < nextra; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    return e2e_spawn(argv, log);
}

/* a TrainingRuntime `runtime` with one trainer job and a TrainJob `job` using it (nothing runs
 * them: no pod is needed) */
static void create_job(const char *runtime, const char *job)
{
    create(&common_kube_trainingruntimes, ns,
           e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
                     "metadata: {name: %s, namespace: %s}\n"
                     "spec:\n  mlPolicy: {numNodes: 1}\n  template:\n    spec:\n"
                     "      replicatedJobs:\n      - name: node\n        template:\n"
                     "          metadata:\n            labels:\n"
                     "              trainer.kubeflow.org/trainjob-ancestor-step: trainer\n"
                     "          spec:\n            template:\n              spec:\n"
                     "                containers:\n                - name: node\n"
                     "                  image: busybox:1.36\n",
                     runtime, ns));
    create(&common_kube_trainjobs, ns,
           e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                     "metadata: {name: %s, namespace: %s}\n"
                     "spec:\n  runtimeRef: {name: %s, kind: TrainingRuntime}\n",
                     job, ns, runtime));
}

/* wait up to secs for the JobSet `job` and ConfigMap `job`-tls-config; both into *js, *cm
 * (the log's tail is echoed and the test fails when they do not come) */
static void wait_built(const char *job, double secs, const char *log, json_t **js, json_t **cm)
{
    char cm_name[300];
    double deadline = e2e_now_s() + secs;

    snprintf(cm_name, sizeof(cm_name), "%s-tls-config", job);
    *js = *cm = NULL;
    while (e2e_now_s() < deadline && !(*js && *cm)) {
        if (!*js)
            *js = get(&common_kube_jobsets, job);
        if (!*cm)
            *cm = get(&common_kube_configmaps, cm_name);
        if (!(*js && *cm))
            e2e_nap(300);
    }
    if (!(*js && *cm))
        e2e_echo_tail(log, 30);
    ck_assert_msg(*js && *cm, "no JobSet or ConfigMap %s after %.0f s", cm_name, secs);
}

START_TEST(report_progress)
{
    char log[700], *answer = NULL, *metrics = NULL;
    char *extra[] = {"--trainjob-status-ca-file", ca_file};
    int port, http_port;
    json_t *tj = NULL, *js = NULL, *cm = NULL, *v;
    const json_t *ts;
    double deadline;
    long code;
    pid_t pid;
    size_t i;
    int found_manager = 0;

    admin = e2e_client(30000, 0);
    snprintf(log, sizeof(log), "%s/serve.log", tmpdir);
    pid = start_daemon(log, extra, 2, &port, &http_port);
    create_job("plain", "job1");

    /* the reconciler: JobSet with Trainer's env and token volume, and the CA ConfigMap */
    wait_built("job1", 120, log, &js, &cm);
    {
        char *want_ca = e2e_read_text(ca_file), want_url[300];
        json_t *pod = json_object_get(
            json_object_get(
                json_object_get(
                    json_object_get(
                        json_object_get(
                            json_array_get(
                                json_object_get(json_object_get(js, "spec"), "replicatedJobs"), 0),
                            "template"),
                        "spec"),
                    "template"),
                "spec"),
            "containers");
        json_t *env = json_object_get(json_array_get(pod, 0), "env");
        int has_url = 0;
        snprintf(want_url, sizeof(want_url),
                 "https://trainsched-controller.trainsched-system.svc:%d/apis/"
                 "trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/job1/status",
                 port, ns);
        json_array_foreach(env, i, v)
        {
            if (strcmp(json_string_value(json_object_get(v, "name")),
                       "KUBEFLOW_TRAINER_SERVER_URL") == 0)
                has_url = strcmp(json_string_value(json_object_get(v, "value")), want_url) == 0;
        }
        ck_assert_msg(has_url, "the trainer container lacks KUBEFLOW_TRAINER_SERVER_URL=%s",
                      want_url);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(cm, "data"), "ca.crt")),
                         want_ca);
        free(want_ca);
    }

    /* a report from the namespace's ServiceAccount with the TrainJob's audience */
    /* the first report of a token asks for a TokenReview; the next one within 30 s does not */
    {
        char aud[400], path[400], *token;
        snprintf(aud, sizeof(aud),
                 "trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/job1/status", ns);
        snprintf(path, sizeof(path), "/apis/%s", aud);
        token = e2e_sa_token(admin, ns, "default", aud, 600);
        code = post(port, path, token,
                    "{\"trainerStatus\":{\"progressPercentage\":30,"
                    "\"lastUpdatedTime\":\"2026-03-01T12:29:00Z\"}}",
                    &answer);
        ck_assert_msg(code == 200, "first report: %ld %s", code, answer);
        free(answer);
        code = post(port, path, token,
                    "{\"trainerStatus\":{\"progressPercentage\":40,\"estimatedRemainingSeconds\":"
                    "600,\"metrics\":[{\"name\":\"loss\",\"value\":\"0.25\"}],"
                    "\"lastUpdatedTime\":\"2026-03-01T12:30:45+02:00\"}}",
                    &answer);
        free(token);
    }
    if (code != 200)
        e2e_echo_tail(log, 30);
    ck_assert_msg(code == 200, "report: %ld %s", code, answer);
    free(answer);
    tj = get(&common_kube_trainjobs, "job1");
    ts = trainer_status(tj);
    ck_assert_msg(ts != NULL, "no status.trainerStatus after a 200");
    ck_assert_int_eq(json_integer_value(json_object_get(ts, "progressPercentage")), 40);
    ck_assert_int_eq(json_integer_value(json_object_get(ts, "estimatedRemainingSeconds")), 600);
    ck_assert_str_eq(json_string_value(json_object_get(ts, "lastUpdatedTime")),
                     "2026-03-01T10:30:45Z");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(ts, "metrics"), 0), "value")),
                     "0.25");
    json_array_foreach(json_object_get(json_object_get(tj, "metadata"), "managedFields"), i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "manager")), "trainer-status") == 0 &&
            json_string_value(json_object_get(v, "subresource")) &&
            strcmp(json_string_value(json_object_get(v, "subresource")), "status") == 0 &&
            strcmp(json_string_value(json_object_get(v, "operation")), "Apply") == 0)
            found_manager = 1;
    }
    ck_assert_msg(found_manager, "no Apply of field manager trainer-status on the status");
    json_decref(tj);

    /* a ServiceAccount of another namespace, even with the TrainJob's audience: 403 */
    code = report(port, other_ns, "job1",
                  "{\"trainerStatus\":{\"progressPercentage\":99,"
                  "\"lastUpdatedTime\":\"2026-03-01T12:31:00Z\"}}",
                  &answer);
    ck_assert_msg(code == 403, "other namespace: %ld %s", code, answer);
    ck_assert_msg(strstr(answer, "\"reason\":\"Forbidden\"") != NULL, "answer: %s", answer);
    free(answer);
    /* the namespace's own ServiceAccount, with another TrainJob's audience: 403 */
    code = report(port, ns, "job2",
                  "{\"trainerStatus\":{\"progressPercentage\":98,"
                  "\"lastUpdatedTime\":\"2026-03-01T12:31:00Z\"}}",
                  &answer);
    ck_assert_msg(code == 403, "another TrainJob's audience: %ld %s", code, answer);
    free(answer);
    /* a report the CRD refuses is refused before it is sent, in the API server's own words:
     * the same status written by the admin gets the same message from the API server */
    {
        /* the report, and the same status as a merge patch of what job1 holds now */
        static const char *bad[][2] = {
            {"{\"trainerStatus\":{\"progressPercentage\":150,"
             "\"lastUpdatedTime\":\"2026-03-01T12:31:00Z\"}}",
             "{\"status\":{\"trainerStatus\":{\"progressPercentage\":150}}}"},
            {"{\"trainerStatus\":{\"metrics\":[{\"name\":\"loss\",\"value\":\"\"}],"
             "\"lastUpdatedTime\":\"2026-03-01T12:31:00Z\"}}",
             "{\"status\":{\"trainerStatus\":{\"metrics\":[{\"name\":\"loss\",\"value\":"
             "\"\"}]}}}"},
            {"{\"trainerStatus\":{\"progressPercentage\":10}}",
             "{\"status\":{\"trainerStatus\":{\"progressPercentage\":10,"
             "\"lastUpdatedTime\":null}}}"}};
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            struct common_error err;
            json_t *out = NULL, *ours;
            const char *api_msg;
            enum common_rc rc;

            rc = common_kube_patch(
                admin, &common_kube_trainjobs, ns, "job1", COMMON_KUBE_MERGE_PATCH, bad[i][1],
                &(struct common_kube_write_opts){.subresource = "status"}, &out, &err);
            ck_assert_msg(rc == COMMON_EINVAL, "the API server took %s: %s", bad[i][1], err.msg);
            json_decref(out);
            api_msg = strstr(err.msg, ": 422 Invalid: ");
            ck_assert_msg(api_msg != NULL, "%s", err.msg);
            api_msg += strlen(": 422 Invalid: ");
            code = report(port, ns, "job1", bad[i][0], &answer);
            ck_assert_msg(code == 422, "%s: %ld %s", bad[i][0], code, answer);
            ours = json_loads(answer, 0, NULL);
            ck_assert_str_eq(json_string_value(json_object_get(ours, "message")), api_msg);
            json_decref(ours);
            free(answer);
        }
    }

    /* a body over 64 KiB: 413 before anything else */
    {
        size_t n = 70000;
        char *big = malloc(n + 1), path[400];
        char aud[400], *token;
        memset(big, ' ', n);
        memcpy(big, "{\"trainerStatus\":{\"progressPercentage\":97,", 42);
        big[n] = 0;
        snprintf(aud, sizeof(aud),
                 "trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/job1/status", ns);
        snprintf(path, sizeof(path), "/apis/%s", aud);
        token = e2e_sa_token(admin, ns, "default", aud, 600);
        code = post(port, path, token, big, &answer);
        ck_assert_msg(code == 413, "70000-byte body: %ld %s", code, answer);
        ck_assert_msg(strstr(answer, "RequestEntityTooLarge") != NULL, "answer: %s", answer);
        free(answer);
        free(token);
        free(big);
    }
    tj = get(&common_kube_trainjobs, "job1");
    ck_assert_int_eq(json_integer_value(json_object_get(trainer_status(tj), "progressPercentage")),
                     40);
    json_decref(tj);

    /* the reconciler writes the status (Suspended) and leaves trainerStatus as it is */
    {
        struct common_error err;
        json_t *out = NULL;
        ck_assert_msg(common_kube_patch(admin, &common_kube_trainjobs, ns, "job1",
                                        COMMON_KUBE_MERGE_PATCH, "{\"spec\":{\"suspend\":true}}",
                                        NULL, &out, &err) == COMMON_OK,
                      "suspend: %s", err.msg);
        json_decref(out);
    }
    deadline = e2e_now_s() + 120;
    for (;;) {
        const json_t *c;
        int suspended = 0;
        tj = get(&common_kube_trainjobs, "job1");
        json_array_foreach(json_object_get(json_object_get(tj, "status"), "conditions"), i, c)
        {
            if (strcmp(json_string_value(json_object_get(c, "type")), "Suspended") == 0 &&
                strcmp(json_string_value(json_object_get(c, "status")), "True") == 0)
                suspended = 1;
        }
        if (suspended)
            break;
        json_decref(tj);
        ck_assert_msg(e2e_now_s() < deadline, "no Suspended condition after 120 s");
        e2e_nap(300);
    }
    ts = trainer_status(tj);
    ck_assert_msg(ts != NULL, "the reconciler's status write dropped trainerStatus");
    ck_assert_int_eq(json_integer_value(json_object_get(ts, "progressPercentage")), 40);
    json_decref(tj);

    /* answers by code */
    ck_assert_int_eq(e2e_http_get(http_port, "/metrics", &metrics), 200);
    ck_assert_msg(e2e_metric(metrics, "trainsched_trainer_status_requests_total", "code=\"200\"") >=
                      1,
                  "no 200 counted");
    ck_assert_msg(e2e_metric(metrics, "trainsched_trainer_status_requests_total", "code=\"403\"") >=
                      2,
                  "403s not counted");
    ck_assert_msg(e2e_metric(metrics, "trainsched_trainer_status_requests_total", "code=\"413\"") >=
                      1,
                  "413 not counted");
    /* the second report of one token needed no TokenReview; the two refused tokens did */
    ck_assert_msg(e2e_metric(metrics, "trainsched_trainer_status_token_reviews_total",
                             "result=\"cached\"") >= 1,
                  "the second report of a token asked for a TokenReview again");
    ck_assert_msg(e2e_metric(metrics, "trainsched_trainer_status_token_reviews_total",
                             "result=\"refused\"") >= 2,
                  "refused tokens not counted");
    free(metrics);

    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    json_decref(js);
    json_decref(cm);
    common_kube_client_destroy(admin);
    admin = NULL;
}
END_TEST

START_TEST(ca_from_the_certificate_secret)
{
    char log[700], *bundle, *ca;
    char *extra[] = {"--tls-secret-namespace", ns};
    json_t *js = NULL, *cm = NULL, *secret;
    int port, http_port;
    pid_t pid;
    struct common_error err;
    struct common_yaml_docs docs;
    size_t i;

    admin = e2e_client(30000, 0);
    snprintf(log, sizeof(log), "%s/serve-secret.log", tmpdir);
    pid = start_daemon(log, extra, 2, &port, &http_port);
    create_job("plain2", "job3");
    /* no Secret yet: nothing is built (a few reconciles fail meanwhile) */
    e2e_nap(3000);
    js = get(&common_kube_jobsets, "job3");
    ck_assert_msg(js == NULL, "a JobSet was built without the status server's CA");
    ck_assert_ptr_null(get(&common_kube_configmaps, "job3-tls-config"));

    /* the shipped Role's rule (get on the certificate Secret by name), here in the test's
     * namespace, and the Secret: ca.crt and a bundle of it and an old CA */
    memset(&docs, 0, sizeof(docs));
    ck_assert_msg(common_yaml_load_file(TS_SOURCE_DIR "/manifests/rbac/webhook-rbac.yaml", NULL,
                                        &docs, &err) == COMMON_OK,
                  "%s", err.msg);
    for (i = 0; i < docs.n; i++) {
        const char *kind = json_string_value(json_object_get(docs.docs[i], "kind"));
        json_t *o = json_deep_copy(docs.docs[i]);
        json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
        if (strcmp(kind, "Role") == 0)
            create(&roles, ns, o);
        else if (strcmp(kind, "RoleBinding") == 0)
            create(&rolebindings, ns, o);
        else
            json_decref(o);
    }
    common_yaml_docs_free(&docs);
    ca = e2e_read_text(ca_file);
    {
        char *other;
        size_t n;
        other = e2e_read_text(TS_SOURCE_DIR "/tests/fixtures/render/"
                                            "trainjob-status-gives-every-trainer-container-the-"
                                            "status-server-url-ca-and-token/ca.crt");
        n = strlen(ca) + strlen(other) + 1;
        bundle = malloc(n);
        snprintf(bundle, n, "%s%s", ca, other);
        free(other);
    }
    {
        /* Opaque: the keys the CA is read from (a kubernetes.io/tls Secret needs a pair too) */
        struct common_arena *a = common_arena_create(0);
        ck_assert_ptr_nonnull(a);
        secret = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}}", "apiVersion", "v1", "kind",
                           "Secret", "metadata", "name", "trainsched-webhook-certs", "namespace",
                           ns, "data", "ca.crt", common_certs_base64(a, ca, strlen(ca)),
                           "ca-bundle.crt", common_certs_base64(a, bundle, strlen(bundle)));
        ck_assert_ptr_nonnull(secret);
        create(&common_kube_secrets, ns, secret);
        common_arena_destroy(a);
    }

    wait_built("job3", 180, log, &js, &cm);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(cm, "data"), "ca.crt")),
                     bundle);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    free(ca);
    free(bundle);
    json_decref(js);
    json_decref(cm);
    (void)port;
    (void)http_port;
    common_kube_client_destroy(admin);
    admin = NULL;
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e_trainer_status");
    TCase *tc = tcase_create("serve");
    SRunner *sr;
    int failed;

    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    curl_global_init(CURL_GLOBAL_DEFAULT);
    tcase_add_unchecked_fixture(tc, outer_setup, outer_teardown);
    tcase_add_test(tc, report_progress);
    tcase_add_test(tc, ca_from_the_certificate_secret);
    tcase_set_timeout(tc, 600); /* a busy machine: daemon start, watches, token requests */
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
