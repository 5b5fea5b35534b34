/*
 * tests/e2e/test_kube_client.c - the Kubernetes client against the real kube-apiserver of the
 * test bed (tests/e2e/testbed/up.sh; KUBECONFIG points at its admin kubeconfig). Each test
 * works in a namespace of its own.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "e2eutil.h"

static struct common_kube *kube;

static void setup(void)
{
    struct common_kubeconfig cfg;
    struct common_error err;
    const char *path = getenv("KUBECONFIG");

    ck_assert_msg(path != NULL, "KUBECONFIG is not set: start the test bed first "
                                "(tests/e2e/testbed/up.sh, then source its env file)");
    memset(&cfg, 0, sizeof(cfg));
    ck_assert_msg(common_kubeconfig_load(path, NULL, &cfg, &err) == COMMON_OK, "%s", err.msg);
    kube = common_kube_client_create(&cfg, NULL, &err);
    common_kubeconfig_free(&cfg);
    ck_assert_msg(kube != NULL, "%s", err.msg);
}

static void teardown(void)
{
    common_kube_client_destroy(kube);
    kube = NULL;
}

static json_t *configmap(const char *name, const char *value)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "name", name, "data", "k", value);
}

START_TEST(crud_and_errors)
{
    char ns[64];
    struct common_error err;
    json_t *cm = configmap("a", "1"), *got = NULL, *stale;
    struct common_kube_write_opts strict = {.strict = 1};

    e2e_make_ns(kube, "client-crud", ns, sizeof(ns));
    ck_assert_int_eq(common_kube_create(kube, &common_kube_configmaps, ns, cm, NULL, &got, &err),
                     COMMON_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "data"), "k")), "1");
    stale = json_deep_copy(got);
    json_decref(got);

    /* create again: AlreadyExists */
    ck_assert_int_eq(common_kube_create(kube, &common_kube_configmaps, ns, cm, NULL, NULL, &err),
                     COMMON_EEXISTS);
    ck_assert_msg(strstr(err.msg, "409") && strstr(err.msg, "AlreadyExists"), "%s", err.msg);

    /* update, then an update with the stale resourceVersion conflicts */
    json_object_set_new(json_object_get(stale, "data"), "k", json_string("2"));
    ck_assert_int_eq(common_kube_update(kube, &common_kube_configmaps, ns, stale, NULL, &got, &err),
                     COMMON_OK);
    json_decref(got);
    json_object_set_new(json_object_get(stale, "data"), "k", json_string("3"));
    ck_assert_int_eq(common_kube_update(kube, &common_kube_configmaps, ns, stale, NULL, NULL, &err),
                     COMMON_ECONFLICT);
    ck_assert_msg(strstr(err.msg, "Conflict"), "%s", err.msg);

    /* merge patch and JSON patch */
    ck_assert_int_eq(common_kube_patch(kube, &common_kube_configmaps, ns, "a",
                                       COMMON_KUBE_MERGE_PATCH, "{\"data\":{\"m\":\"x\"}}", NULL,
                                       &got, &err),
                     COMMON_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "data"), "m")), "x");
    json_decref(got);
    ck_assert_int_eq(
        common_kube_patch(kube, &common_kube_configmaps, ns, "a", COMMON_KUBE_JSON_PATCH,
                          "[{\"op\":\"replace\",\"path\":\"/data/k\",\"value\":\"9\"}]", NULL, &got,
                          &err),
        COMMON_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "data"), "k")), "9");
    json_decref(got);

    /* strict field validation names the unknown field */
    {
        json_t *bad = configmap("b", "1");
        json_object_set_new(bad, "dta", json_object());
        ck_assert_int_eq(
            common_kube_create(kube, &common_kube_configmaps, ns, bad, &strict, NULL, &err),
            COMMON_EINVAL);
        ck_assert_msg(strstr(err.msg, "dta"), "%s", err.msg);
        json_decref(bad);
    }

    /* delete with a wrong uid precondition conflicts; then delete; then not found */
    ck_assert_int_eq(common_kube_delete(kube, &common_kube_configmaps, ns, "a",
                                        "00000000-0000-0000-0000-000000000000", NULL, NULL, &err),
                     COMMON_ECONFLICT);
    ck_assert_int_eq(
        common_kube_delete(kube, &common_kube_configmaps, ns, "a", NULL, NULL, NULL, &err),
        COMMON_OK);
    ck_assert_int_eq(common_kube_get(kube, &common_kube_configmaps, ns, "a", &got, &err),
                     COMMON_ENOTFOUND);
    ck_assert_msg(strstr(err.msg, "404") && strstr(err.msg, "\"a\""), "%s", err.msg);
    json_decref(cm);
    json_decref(stale);
    e2e_drop_ns(kube, ns);
}
END_TEST

START_TEST(server_side_apply)
{
    char ns[64];
    struct common_error err;
    json_t *cm = configmap("applied", "1"), *got = NULL;
    struct common_kube_write_opts ours = {.field_manager = "trainsched", .force = 1};
    struct common_kube_write_opts theirs = {.field_manager = "someone-else"};
    json_t *mf;
    size_t i;
    json_t *it;
    int found = 0;

    e2e_make_ns(kube, "client-apply", ns, sizeof(ns));
    ck_assert_int_eq(common_kube_apply(kube, &common_kube_configmaps, ns, cm, &ours, &got, &err),
                     COMMON_OK);
    mf = json_object_get(json_object_get(got, "metadata"), "managedFields");
    json_array_foreach(mf, i, it) if (strcmp(json_string_value(json_object_get(it, "manager")),
                                             "trainsched") == 0) found = 1;
    ck_assert_msg(found, "managedFields has no trainsched manager");
    json_decref(got);
    /* another manager changing our field without force conflicts */
    json_object_set_new(json_object_get(cm, "data"), "k", json_string("2"));
    ck_assert_int_eq(common_kube_apply(kube, &common_kube_configmaps, ns, cm, &theirs, NULL, &err),
                     COMMON_ECONFLICT);
    /* we take it back with force */
    ck_assert_int_eq(common_kube_apply(kube, &common_kube_configmaps, ns, cm, &ours, &got, &err),
                     COMMON_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "data"), "k")), "2");
    json_decref(got);
    json_decref(cm);
    e2e_drop_ns(kube, ns);
}
END_TEST

START_TEST(list_pages)
{
    char ns[64];
    struct common_error err;
    struct common_kube_list_opts lo = {.limit = 7};
    json_t *items = NULL;
    char *rv = NULL;

    e2e_make_ns(kube, "client-list", ns, sizeof(ns));
    for (int i = 0; i < 23; i++) {
        char name[32];
        json_t *cm;
        snprintf(name, sizeof(name), "cm-%02d", i);
        cm = configmap(name, "v");
        ck_assert_int_eq(
            common_kube_create(kube, &common_kube_configmaps, ns, cm, NULL, NULL, &err), COMMON_OK);
        json_decref(cm);
    }
    ck_assert_int_eq(common_kube_list(kube, &common_kube_configmaps, ns, &lo, &items, &rv, &err),
                     COMMON_OK);
    /* 23 of ours + kube-root-ca.crt, which the controller-manager may or may not have added */
    ck_assert_int_ge(json_array_size(items), 23);
    ck_assert_int_le(json_array_size(items), 24);
    ck_assert_ptr_nonnull(rv);
    json_decref(items);
    common_free(rv);
    e2e_drop_ns(kube, ns);
}
END_TEST

struct watch_log {
    char types[64][16];
    char names[64][64];
    int n;
    char last_rv[64];
};

static int on_event(void *ctx, const char *type, const json_t *obj, const void *raw, size_t len)
{
    struct watch_log *w = ctx;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    (void)raw;
    (void)len;
    if (w->n < 64) {
        snprintf(w->types[w->n], sizeof(w->types[0]), "%s", type);
        snprintf(w->names[w->n], sizeof(w->names[0]), "%s", name ? name : "");
        w->n++;
    }
    if (rv)
        snprintf(w->last_rv, sizeof(w->last_rv), "%s", rv);
    /* stop after the DELETED event of "w" */
    return strcmp(type, "DELETED") == 0 && name && strcmp(name, "w") == 0;
}

struct writer_args {
    const char *ns;
};

static void *writer(void *p)
{
    struct writer_args *a = p;
    struct common_error err;
    json_t *cm = configmap("w", "1");
    usleep(300000);
    common_kube_create(kube, &common_kube_configmaps, a->ns, cm, NULL, NULL, &err);
    common_kube_patch(kube, &common_kube_configmaps, a->ns, "w", COMMON_KUBE_MERGE_PATCH,
                      "{\"data\":{\"k\":\"2\"}}", NULL, NULL, &err);
    common_kube_delete(kube, &common_kube_configmaps, a->ns, "w", NULL, NULL, NULL, &err);
    json_decref(cm);
    return NULL;
}

START_TEST(watch_events_in_order)
{
    char ns[64];
    struct common_error err;
    struct watch_log w;
    json_t *items = NULL;
    char *rv = NULL;
    pthread_t t;
    struct writer_args args;
    struct common_kube_watch_opts wo = {.timeout_seconds = 20, .bookmarks = 1};

    e2e_make_ns(kube, "client-watch", ns, sizeof(ns));
    ck_assert_int_eq(common_kube_list(kube, &common_kube_configmaps, ns, NULL, &items, &rv, &err),
                     COMMON_OK);
    json_decref(items);
    memset(&w, 0, sizeof(w));
    args.ns = ns;
    wo.resource_version = rv;
    pthread_create(&t, NULL, writer, &args);
    ck_assert_int_eq(common_kube_watch(kube, &common_kube_configmaps, ns, &wo, on_event, &w, &err),
                     COMMON_OK);
    pthread_join(t, NULL);
    {
        const char *want[] = {"ADDED", "MODIFIED", "DELETED"};
        int k = 0;
        for (int i = 0; i < w.n && k < 3; i++)
            if (strcmp(w.names[i], "w") == 0) {
                ck_assert_str_eq(w.types[i], want[k]);
                k++;
            }
        ck_assert_int_eq(k, 3);
    }
    common_free(rv);
    e2e_drop_ns(kube, ns);
}
END_TEST

static int count_event(void *ctx, const char *type, const json_t *obj, const void *raw, size_t len)
{
    (void)type;
    (void)obj;
    (void)raw;
    (void)len;
    (*(int *)ctx)++;
    return 0;
}

/* The test bed's kube-apiserver runs with --etcd-compaction-interval=10s and without a watch
 * cache for Secrets (--watch-cache-sizes=secrets#0), so a watch of Secrets from a version that
 * etcd has compacted away must end with 410 Gone. */
START_TEST(watch_from_a_compacted_version_is_gone)
{
    char ns[64];
    struct common_error err;
    int n = 0;
    json_t *items = NULL, *secret;
    char *rv = NULL;
    struct common_kube_watch_opts wo = {.timeout_seconds = 1};
    enum common_rc rc = COMMON_OK;

    e2e_make_ns(kube, "client-gone", ns, sizeof(ns));
    ck_assert_int_eq(common_kube_list(kube, &common_kube_secrets, ns, NULL, &items, &rv, &err),
                     COMMON_OK);
    json_decref(items);
    secret = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
                       "metadata", "name", "s", "stringData", "k", "v");
    ck_assert_int_eq(common_kube_create(kube, &common_kube_secrets, ns, secret, NULL, NULL, &err),
                     COMMON_OK);
    json_decref(secret);
    wo.resource_version = rv;
    for (int i = 0; i < 60; i++) {
        rc = common_kube_watch(kube, &common_kube_secrets, ns, &wo, count_event, &n, &err);
        if (rc == COMMON_EGONE)
            break;
        sleep(1);
    }
    ck_assert_msg(rc == COMMON_EGONE, "rc %d: %s (does the bed compact etcd?)", rc, err.msg);
    ck_assert_msg(strstr(err.msg, "410"), "%s", err.msg);
    common_free(rv);
    e2e_drop_ns(kube, ns);
}
END_TEST

START_TEST(bind_a_pod_through_the_binding_subresource)
{
    char ns[64], node[80];
    struct common_error err;
    json_t *n, *p, *b, *got = NULL;
    struct common_kube_write_opts sub = {.subresource = "binding"};

    e2e_make_ns(kube, "client-bind", ns, sizeof(ns));
    snprintf(node, sizeof(node), "node-%s", ns);
    n = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Node", "metadata", "name",
                  node);
    ck_assert_int_eq(common_kube_create(kube, &common_kube_nodes, NULL, n, NULL, NULL, &err),
                     COMMON_OK);
    /* a pod for a scheduler that does not exist, so nobody else binds it */
    p = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind", "Pod",
                  "metadata", "name", "p", "spec", "schedulerName", "nobody", "containers", "name",
                  "c", "image", "busybox");
    ck_assert_int_eq(common_kube_create(kube, &common_kube_pods, ns, p, NULL, NULL, &err),
                     COMMON_OK);
    b = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "Binding",
                  "metadata", "name", "p", "target", "kind", "Node", "name", node);
    ck_assert_msg(common_kube_create(kube, &common_kube_pods, ns, b, &sub, NULL, &err) == COMMON_OK,
                  "%s", err.msg);
    ck_assert_int_eq(common_kube_get(kube, &common_kube_pods, ns, "p", &got, &err), COMMON_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "spec"), "nodeName")),
                     node);
    json_decref(got);
    /* binding again conflicts */
    ck_assert_int_ne(common_kube_create(kube, &common_kube_pods, ns, b, &sub, NULL, &err),
                     COMMON_OK);
    common_kube_delete(kube, &common_kube_nodes, NULL, node, NULL, NULL, NULL, &err);
    json_decref(n);
    json_decref(p);
    json_decref(b);
    e2e_drop_ns(kube, ns);
}
END_TEST

/* A served resource is 1, a group the API server does not have is 0 (its 404), and a server that
 * cannot be reached is an error after the timeout, never "not served" (a startup check that took
 * a connection failure for "no such API" turned DRA off for the life of the process). */
START_TEST(served_tells_absent_apart_from_unreachable)
{
    struct common_kubeconfig cfg;
    struct common_error err;
    struct common_kube *dead;
    int served = -1;

    ck_assert_int_eq(common_kube_served(kube, "/api/v1/configmaps?limit=1", 30000, &served, &err),
                     COMMON_OK);
    ck_assert_int_eq(served, 1);
    served = -1;
    ck_assert_int_eq(common_kube_served(kube, "/apis/nothing.example.com/v1/things?limit=1", 30000,
                                        &served, &err),
                     COMMON_OK);
    ck_assert_int_eq(served, 0);

    memset(&cfg, 0, sizeof(cfg));
    cfg.server = "https://127.0.0.1:1";
    cfg.insecure = 1;
    dead = common_kube_client_create(&cfg, NULL, &err);
    ck_assert_msg(dead != NULL, "%s", err.msg);
    served = -1;
    ck_assert_int_ne(common_kube_served(dead, "/api/v1/configmaps?limit=1", 1000, &served, &err),
                     COMMON_OK);
    ck_assert_int_eq(served, -1);
    ck_assert_msg(strstr(err.msg, "/api/v1/configmaps?limit=1") != NULL, "%s", err.msg);
    common_kube_client_destroy(dead);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kube client (real API server)");
    TCase *tc = tcase_create("client");
    SRunner *sr;
    int failed;

    common_alloc_init();
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, crud_and_errors);
    tcase_add_test(tc, server_side_apply);
    tcase_add_test(tc, list_pages);
    tcase_add_test(tc, watch_events_in_order);
    tcase_add_test(tc, watch_from_a_compacted_version_is_gone);
    tcase_add_test(tc, bind_a_pod_through_the_binding_subresource);
    tcase_add_test(tc, served_tells_absent_apart_from_unreachable);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
