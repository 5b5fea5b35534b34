/*
 * tests/e2e/test_helm.c - the Helm chart charts/trainsched against the manifests and the real
 * API server of the test bed, with helm built from its Go module (helm.sh/helm/v3, the bed's
 * optional binary $TESTBED_BIN/helm: tests/e2e/testbed/build.sh; when it is not built the tests
 * say SKIP).
 *
 *   same_objects_as_kustomize  `helm lint`; `helm template -n trainsched-system` with the default
 *                              values renders exactly the objects of manifests/kustomization.yaml
 *                              but its Namespaces (Helm's --create-namespace makes the release's)
 *                              and the Kubeflow SDK's public objects in kubeflow-system (values
 *                              sdkPublic, off by default; with it on, those too): same kinds and
 *                              names, equal JSON, the settings ConfigMap compared as parsed YAML
 *                              and the pod template's config checksum annotation aside. With
 *                              components.webhook=true: also manifests/webhook/
 *                              webhooks.yaml and manifests/rbac/webhook-rbac.yaml, and the
 *                              settings say webhook and tls.managed. backends.default (kueue;
 *                              slurm with backends.slurm) lands in the settings, which
 *                              `serve --check-config` accepts. certificates.mode=provided
 *                              without a caBundle is refused, naming the value.
 *   api_server_accepts_them    a real `helm install --create-namespace --skip-crds` of the default
 *                              values into trainsched-system on a bed without the namespace
 *                              kubeflow-system (as a cluster without Kubeflow: deleted first when
 *                              an earlier test made it), as the README says to install (the
 *                              manifests' copies of the same objects, applied by the e2e helpers,
 *                              are deleted first: Helm adopts nothing it did not make), whose
 *                              objects carry Helm's managed-by label, and `helm uninstall`; the
 *                              manifests' RBAC is applied again (also by the runner's teardown
 *                              when the test failed midway). Then, kubeflow-system made, the
 *                              default, SDK-public, webhook (managed) and provided-certificate
 *                              renderings pass `kubectl apply --dry-run=server --validate=strict`
 *                              (the real API server's validation, unknown fields refused).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/kube.h"
#include "common/yaml.h"
#include "e2eutil.h"

#define CHART TS_SOURCE_DIR "/charts/trainsched"
#define NS "trainsched-system"

static char tmpdir[256];
static char helm[1024];
static int installed; /* api_server_accepts_them made release trainsched-e2e */

static int have_helm(const char *test)
{
    if (helm[0] && access(helm, X_OK) == 0)
        return 1;
    fprintf(stderr,
            "SKIP %s: no helm in $TESTBED_BIN (tests/e2e/testbed/build.sh builds it from "
            "helm.sh/helm/v3; see build-status.txt or helm.failed there)\n",
            test);
    return 0;
}

/* run a shell command, stdout into out_file (may be NULL), stderr into err_file; the status */
static int run(const char *cmd, const char *out_file, const char *err_file)
{
    char full[8192];
    snprintf(full, sizeof(full), "%s > '%s' 2> '%s'", cmd, out_file ? out_file : "/dev/null",
             err_file);
    return system(full);
}

/* helm template with extra args into <tmpdir>/name.yaml; fails the test on error */
static void render(const char *name, const char *args, char *file, size_t size)
{
    char cmd[4096], err[600];
    int st;
    snprintf(file, size, "%s/%s.yaml", tmpdir, name);
    snprintf(err, sizeof(err), "%s/%s.err", tmpdir, name);
    snprintf(cmd, sizeof(cmd), "'%s' template trainsched '%s' --namespace %s %s", helm, CHART, NS,
             args);
    st = run(cmd, file, err);
    if (st != 0) {
        char *e = e2e_read_text(err);
        ck_abort_msg("helm template %s: status %d: %s", args, st, e);
    }
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    const char *s = json_string_value(json_object_get(json_object_get(o, a), b));
    return s ? s : "";
}

/* kind/name of an object */
static void key_of(const json_t *o, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", json_string_value(json_object_get(o, "kind")),
             str_at(o, "metadata", "name"));
}

/* every object of a YAML file appended to arr (null documents skipped) */
static void load_into(json_t *arr, const char *file)
{
    struct common_yaml_docs docs;
    struct common_error err;
    ck_assert_msg(common_yaml_load_file(file, NULL, &docs, &err) == COMMON_OK, "%s: %s", file,
                  err.msg);
    for (size_t i = 0; i < docs.n; i++)
        if (json_is_object(docs.docs[i]))
            json_array_append(arr, docs.docs[i]);
    common_yaml_docs_free(&docs);
}

#define SDK_NS "kubeflow-system" /* values sdkPublic: the Kubeflow SDK's public objects */

/* the objects of manifests/kustomization.yaml's resources, without the Namespaces; with_public
 * 0: also without the objects in SDK_NS (the chart's sdkPublic, off by default) */
static json_t *kustomize_objects(int with_public)
{
    json_t *k, *res, *all = json_array(), *out = json_array(), *o;
    struct common_yaml_docs docs;
    struct common_error err;
    size_t i;
    ck_assert_msg(common_yaml_load_file(TS_SOURCE_DIR "/manifests/kustomization.yaml", NULL, &docs,
                                        &err) == COMMON_OK,
                  "%s", err.msg);
    k = docs.docs[0];
    res = json_object_get(k, "resources");
    ck_assert_msg(json_array_size(res) > 0, "manifests/kustomization.yaml lists no resources");
    json_array_foreach(res, i, o)
    {
        char file[1024];
        snprintf(file, sizeof(file), "%s/manifests/%s", TS_SOURCE_DIR, json_string_value(o));
        load_into(all, file);
    }
    common_yaml_docs_free(&docs);
    json_array_foreach(all, i, o)
    {
        if (strcmp(json_string_value(json_object_get(o, "kind")), "Namespace") != 0 &&
            (with_public || strcmp(str_at(o, "metadata", "namespace"), SDK_NS) != 0))
            json_array_append(out, o);
    }
    json_decref(all);
    return out;
}

/* the config.yaml of a trainsched-config ConfigMap, parsed (new reference) */
static json_t *settings_of(const json_t *cm)
{
    const char *text = str_at(cm, "data", "config.yaml");
    ck_assert_msg(text[0], "ConfigMap %s has no data.config.yaml", str_at(cm, "metadata", "name"));
    return e2e_yaml1(text);
}

/* o with what may differ between the installs taken out: the settings text (compared parsed by
 * the caller) and the chart's checksum annotation on the pod template (a copy) */
static json_t *normalized(const json_t *o)
{
    json_t *c = json_deep_copy(o);
    json_t *tmeta =
        json_object_get(json_object_get(json_object_get(c, "spec"), "template"), "metadata");
    json_t *ann = json_object_get(tmeta, "annotations");
    if (json_is_object(ann)) {
        json_object_del(ann, "trainsched.io/config-sha256");
        if (json_object_size(ann) == 0)
            json_object_del(tmeta, "annotations");
    }
    if (strcmp(json_string_value(json_object_get(c, "kind")), "ConfigMap") == 0)
        json_object_del(json_object_get(c, "data"), "config.yaml");
    return c;
}

/* every object of want is in got, equal after normalization (ConfigMap settings parsed) */
static void check_contains(const json_t *got, const json_t *want, const char *what)
{
    size_t i, j;
    json_t *w, *g;
    json_array_foreach(want, i, w)
    {
        char kw[300], kg[300];
        int found = 0;
        key_of(w, kw, sizeof(kw));
        json_array_foreach(got, j, g)
        {
            json_t *nw, *ng;
            key_of(g, kg, sizeof(kg));
            if (strcmp(kw, kg) != 0)
                continue;
            found = 1;
            nw = normalized(w);
            ng = normalized(g);
            if (!json_equal(nw, ng)) {
                char *dg = json_dumps(ng, JSON_SORT_KEYS | JSON_COMPACT);
                char *dw = json_dumps(nw, JSON_SORT_KEYS | JSON_COMPACT);
                size_t at = 0;
                while (dg && dw && dg[at] && dg[at] == dw[at])
                    at++;
                at = at > 80 ? at - 80 : 0;
                /* Check's messages are short: from a little before the first difference */
                ck_abort_msg("%s: %s differs:\nchart:     ...%.600s\nmanifests: ...%.600s", what,
                             kw, dg ? dg + at : "?", dw ? dw + at : "?");
            }
            json_decref(nw);
            json_decref(ng);
            if (strcmp(json_string_value(json_object_get(w, "kind")), "ConfigMap") == 0 &&
                strcmp(str_at(w, "metadata", "name"), "trainsched-config") == 0) {
                json_t *sw = settings_of(w), *sg = settings_of(g);
                ck_assert_msg(json_equal(sw, sg), /* settings: a few hundred bytes */
                              "%s: the settings differ:\nchart:     %s\nmanifests: %s", what,
                              json_dumps(sg, JSON_SORT_KEYS | JSON_COMPACT),
                              json_dumps(sw, JSON_SORT_KEYS | JSON_COMPACT));
                json_decref(sw);
                json_decref(sg);
            }
        }
        ck_assert_msg(found, "%s: the chart renders no %s", what, kw);
    }
}

static const json_t *find(const json_t *objs, const char *kind, const char *name)
{
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o)
    {
        if (strcmp(json_string_value(json_object_get(o, "kind")), kind) == 0 &&
            strcmp(str_at(o, "metadata", "name"), name) == 0)
            return o;
    }
    return NULL;
}

/* `trainsched serve --check-config` accepts the settings of ConfigMap cm (addresses on free
 * local ports: the file's :8080/:9443 may be taken on this machine) */
static void check_config(const json_t *cm, const char *what)
{
    char file[600], log[600], cmd[2048];
    int st;
    snprintf(file, sizeof(file), "%s/config.yaml", tmpdir);
    snprintf(log, sizeof(log), "%s/check-config.log", tmpdir);
    e2e_write_file(file, str_at(cm, "data", "config.yaml"));
    snprintf(cmd, sizeof(cmd),
             "'%s' serve --config '%s' --check-config --http-address 127.0.0.1:%d "
             "--https-address 127.0.0.1:%d",
             TS_BINARY, file, e2e_free_port(), e2e_free_port());
    st = run(cmd, NULL, log);
    ck_assert_msg(st == 0, "%s: serve --check-config refuses the chart's settings: %s", what,
                  e2e_read_text(log));
}

START_TEST(same_objects_as_kustomize)
{
    char file[600], cmd[2048], err[600];
    json_t *want, *got, *hooks, *settings;
    const json_t *cm;
    int st;

    if (!have_helm("same_objects_as_kustomize"))
        return;
    snprintf(err, sizeof(err), "%s/lint.err", tmpdir);
    snprintf(cmd, sizeof(cmd), "'%s' lint --strict '%s' --namespace %s", helm, CHART, NS);
    st = run(cmd, NULL, err);
    ck_assert_msg(st == 0, "helm lint --strict: status %d: %s", st, e2e_read_text(err));

    /* default values: exactly the kustomization's objects (but the Namespaces and the SDK's
     * public objects: nothing outside the release's namespace) */
    render("default", "", file, sizeof(file));
    got = json_array();
    load_into(got, file);
    want = kustomize_objects(0);
    check_contains(got, want, "default values");
    check_config(find(got, "ConfigMap", "trainsched-config"), "default values");
    ck_assert_msg(json_array_size(got) == json_array_size(want),
                  "default values: the chart renders %zu objects, the kustomization %zu",
                  json_array_size(got), json_array_size(want));
    {
        size_t i;
        json_t *o;
        json_array_foreach(got, i, o)
        {
            const char *ons = str_at(o, "metadata", "namespace");
            ck_assert_msg(!ons[0] || strcmp(ons, NS) == 0,
                          "default values: %s/%s goes to namespace %s, not the release's",
                          json_string_value(json_object_get(o, "kind")),
                          str_at(o, "metadata", "name"), ons);
        }
    }
    json_decref(got);
    /* sdkPublic.enabled=true: all of them (but the Namespaces) */
    {
        json_t *all = kustomize_objects(1);
        render("sdk-public", "--set sdkPublic.enabled=true", file, sizeof(file));
        got = json_array();
        load_into(got, file);
        check_contains(got, all, "sdkPublic.enabled=true");
        ck_assert_int_eq(json_array_size(got), json_array_size(all));
        ck_assert_int_gt(json_array_size(all), json_array_size(want));
        json_decref(got);
        json_decref(all);
    }

    /* the webhook: plus the shipped configurations and their RBAC; managed certificates */
    render("webhook", "--set components.webhook=true", file, sizeof(file));
    got = json_array();
    load_into(got, file);
    hooks = json_array();
    load_into(hooks, TS_SOURCE_DIR "/manifests/webhook/webhooks.yaml");
    load_into(hooks, TS_SOURCE_DIR "/manifests/rbac/webhook-rbac.yaml");
    check_contains(got, hooks, "components.webhook=true");
    ck_assert_int_eq(json_array_size(got), json_array_size(want) + json_array_size(hooks));
    cm = find(got, "ConfigMap", "trainsched-config");
    ck_assert_ptr_nonnull(cm);
    settings = settings_of(cm);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(settings, "components"), 1)),
                     "webhook");
    ck_assert(json_is_true(json_object_get(json_object_get(settings, "tls"), "managed")));
    json_decref(settings);
    check_config(cm, "components.webhook=true");
    json_decref(got);
    json_decref(hooks);
    json_decref(want);

    /* the default backend and the slurm backend's settings reach serve's settings */
    /* (check_config reads the token file: one is made here) */
    snprintf(err, sizeof(err), "%s/slurm-token", tmpdir);
    e2e_write_file(err, "x.y.z\n");
    snprintf(cmd, sizeof(cmd),
             "--set backends.default=slurm --set backends.slurm.url=http://slurmrestd.slurm:6820 "
             "--set backends.slurm.user=slurm --set backends.slurm.tokenFile=%s",
             err);
    render("backends", cmd, file, sizeof(file));
    got = json_array();
    load_into(got, file);
    cm = find(got, "ConfigMap", "trainsched-config");
    ck_assert_ptr_nonnull(cm);
    settings = settings_of(cm);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(settings, "backends"), "default")),
        "slurm");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(settings, "slurm"), "url")),
                     "http://slurmrestd.slurm:6820");
    json_decref(settings);
    check_config(cm, "backends.default=slurm");
    json_decref(got);
    render("kueue", "--set backends.default=kueue", file, sizeof(file));
    got = json_array();
    load_into(got, file);
    settings = settings_of(find(got, "ConfigMap", "trainsched-config"));
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(settings, "backends"), "default")),
        "kueue");
    ck_assert_ptr_null(json_object_get(settings, "slurm"));
    json_decref(settings);
    check_config(find(got, "ConfigMap", "trainsched-config"), "backends.default=kueue");
    json_decref(got);
    /* the Volcano and KAI backends' settings reach serve's settings, which serve accepts */
    render("kai",
           "--set backends.default=kai --set backends.kai.queue=team-a "
           "--set backends.volcano.queue=vq --set backends.volcano.tiers=rack=1",
           file, sizeof(file));
    got = json_array();
    load_into(got, file);
    settings = settings_of(find(got, "ConfigMap", "trainsched-config"));
    ck_assert_str_eq(json_string_value(e2e_at(settings, "backends.kai.queue")), "team-a");
    ck_assert_str_eq(json_string_value(e2e_at(settings, "backends.volcano.queue")), "vq");
    ck_assert_str_eq(json_string_value(e2e_at(settings, "backends.volcano.tiers")), "rack=1");
    json_decref(settings);
    check_config(find(got, "ConfigMap", "trainsched-config"), "backends.kai.queue=team-a");
    json_decref(got);

    /* provided certificates: the caBundle is required */
    snprintf(err, sizeof(err), "%s/provided.err", tmpdir);
    snprintf(cmd, sizeof(cmd),
             "'%s' template trainsched '%s' --namespace %s --set components.webhook=true "
             "--set certificates.mode=provided",
             helm, CHART, NS);
    st = run(cmd, NULL, err);
    {
        char *e = e2e_read_text(err);
        ck_assert_msg(st != 0 && strstr(e, "certificates.caBundle"),
                      "provided certificates without a caBundle: status %d, %s", st, e);
        free(e);
    }
}
END_TEST

/* helm uninstall trainsched-e2e (when installed) and the manifests' RBAC back (e2e_client) */
static void uninstall(void)
{
    char cmd[2048], err[600];
    struct common_kube *k;
    if (!installed)
        return;
    snprintf(err, sizeof(err), "%s/uninstall.err", tmpdir);
    snprintf(cmd, sizeof(cmd), "'%s' uninstall trainsched-e2e --namespace %s --wait", helm, NS);
    ck_assert_msg(run(cmd, NULL, err) == 0, "helm uninstall: %s", e2e_read_text(err));
    installed = 0;
    k = e2e_client(20000, 1);
    common_kube_client_destroy(k);
}

/* namespace SDK_NS absent (deleted, waited for, when an earlier test made it) */
static void drop_sdk_namespace(void)
{
    struct common_kube *admin = e2e_client(20000, 0);
    struct common_error kerr;
    double end = e2e_now_s() + 120;
    for (;;) {
        json_t *o = NULL;
        enum common_rc rc =
            common_kube_get(admin, &common_kube_namespaces, NULL, SDK_NS, &o, &kerr);
        json_decref(o);
        if (rc == COMMON_ENOTFOUND)
            break;
        ck_assert_msg(rc == COMMON_OK, "get namespace %s: %s", SDK_NS, kerr.msg);
        ck_assert_msg(e2e_now_s() < end, "namespace %s still there 120 s after its deletion",
                      SDK_NS);
        common_kube_delete(admin, &common_kube_namespaces, NULL, SDK_NS, NULL, NULL, NULL, &kerr);
        e2e_nap(500);
    }
    common_kube_client_destroy(admin);
}

START_TEST(api_server_accepts_them)
{
    const char *kubectl = getenv("KUBECTL");
    const char *renders[][2] = {{"default", ""},
                                {"sdk-public", "--set sdkPublic.enabled=true"},
                                {"webhook", "--set components.webhook=true"},
                                {"provided", "--set components.webhook=true --set "
                                             "certificates.mode=provided --set "
                                             "certificates.caBundle=Zm9v"}};
    char file[600], cmd[4096], err[600];
    struct common_kube *k;
    int st;

    if (!have_helm("api_server_accepts_them"))
        return;
    ck_assert_msg(kubectl && *kubectl, "KUBECTL not set: source the test bed's env");
    k = e2e_client(20000, 1); /* applies manifests/rbac/rbac.yaml: the namespace exists */
    common_kube_client_destroy(k);

    /* a real install of the default values, as the README says, on a cluster without
     * kubeflow-system (no Kubeflow): the objects the e2e tests applied from the manifests go
     * first (Helm adopts nothing it did not make), come back from the release, and the
     * manifests' copy is applied again afterwards. With sdkPublic on by default this failed:
     * namespaces "kubeflow-system" not found. */
    drop_sdk_namespace();
    render("default", "", file, sizeof(file));
    snprintf(err, sizeof(err), "%s/delete.err", tmpdir);
    snprintf(cmd, sizeof(cmd), "'%s' delete --ignore-not-found --wait=false -f '%s'", kubectl,
             file);
    st = run(cmd, NULL, err);
    ck_assert_msg(st == 0, "kubectl delete of the manifests' objects: %s", e2e_read_text(err));
    snprintf(err, sizeof(err), "%s/install.err", tmpdir);
    snprintf(cmd, sizeof(cmd),
             "'%s' install trainsched-e2e '%s' --namespace %s --create-namespace --skip-crds", helm,
             CHART, NS);
    st = run(cmd, NULL, err);
    installed = 1;
    ck_assert_msg(st == 0, "helm install --create-namespace without %s: status %d: %s", SDK_NS, st,
                  e2e_read_text(err));
    {
        char out[600], *text;
        snprintf(out, sizeof(out), "%s/managed-by.txt", tmpdir);
        snprintf(err, sizeof(err), "%s/get.err", tmpdir);
        snprintf(cmd, sizeof(cmd),
                 "'%s' get -n %s deployment/trainsched-controller serviceaccount/trainsched "
                 "clusterrole/trainsched configmap/trainsched-config -o "
                 "jsonpath='{range .items[*]}{.metadata.labels.app\\.kubernetes\\.io/"
                 "managed-by} {end}'",
                 kubectl, NS);
        st = run(cmd, out, err);
        text = e2e_read_text(out);
        ck_assert_msg(st == 0 && strcmp(text, "Helm Helm Helm Helm ") == 0,
                      "after helm install: \"%s\" (%s)", text, e2e_read_text(err));
        free(text);
    }
    uninstall();

    /* the renderings against the API server's validation; the SDK's public objects go to
     * kubeflow-system, which the chart does not create: made here (a dry run creates none) */
    {
        struct common_error kerr;
        json_t *nso = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                                "metadata", "name", SDK_NS);
        struct common_kube *admin = e2e_client(20000, 0);
        enum common_rc rc =
            common_kube_create(admin, &common_kube_namespaces, NULL, nso, NULL, NULL, &kerr);
        json_decref(nso);
        common_kube_client_destroy(admin);
        ck_assert_msg(rc == COMMON_OK || rc == COMMON_EEXISTS, "namespace %s: %s", SDK_NS,
                      kerr.msg);
    }
    for (size_t i = 0; i < sizeof(renders) / sizeof(renders[0]); i++) {
        render(renders[i][0], renders[i][1], file, sizeof(file));
        snprintf(err, sizeof(err), "%s/%s-apply.err", tmpdir, renders[i][0]);
        snprintf(cmd, sizeof(cmd), "'%s' apply --dry-run=server --validate=strict -f '%s'", kubectl,
                 file);
        st = run(cmd, NULL, err);
        ck_assert_msg(st == 0, "kubectl apply --dry-run=server of the %s rendering: status %d: %s",
                      renders[i][0], st, e2e_read_text(err));
    }
}
END_TEST

/* runner process: whatever the test did, no release is left and the manifests' RBAC is back */
static void teardown(void)
{
    char cmd[2048];
    const char *kubectl = getenv("KUBECTL");
    if (!helm[0] || access(helm, X_OK) != 0)
        return;
    snprintf(cmd, sizeof(cmd),
             "'%s' uninstall trainsched-e2e --namespace %s --ignore-not-found --wait >/dev/null "
             "2>&1",
             helm, NS);
    if (system(cmd) != 0)
        fprintf(stderr, "helm: teardown: %s failed\n", cmd);
    if (kubectl) {
        snprintf(cmd, sizeof(cmd), "'%s' apply -f '%s/manifests/rbac/rbac.yaml' >/dev/null 2>&1",
                 kubectl, TS_SOURCE_DIR);
        if (system(cmd) != 0)
            fprintf(stderr, "helm: teardown: %s failed\n", cmd);
    }
}

static void setup(void)
{
    const char *bin = getenv("TESTBED_BIN");
    if (bin && *bin)
        snprintf(helm, sizeof(helm), "%s/helm", bin);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/trainsched-helm-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

int main(void)
{
    Suite *s = suite_create("helm");
    TCase *tc = tcase_create("chart");
    SRunner *sr;
    int failed;
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, same_objects_as_kustomize);
    tcase_add_test(tc, api_server_accepts_them);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
