#include "e2eutil.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/kubeconfig.h"
#include "common/yaml.h"

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

void e2e_make_ns(struct common_kube *admin, const char *prefix, char *out, size_t size)
{
    struct common_error err;
    json_t *ns, *sa, *rb;
    enum common_rc rc;

    snprintf(out, size, "%s-%ld-%d", prefix, (long)time(NULL) % 100000, rand() % 10000);
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
