/*
 * tests/e2e/test_informer.c - watch caches against the real kube-apiserver of the test bed:
 * pods over protobuf, ConfigMaps over JSON. After every change the cache must equal a fresh
 * list, and the handlers must have seen each add, update and delete once.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/informer.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "e2eutil.h"

static struct common_kube *kube; /* admin: sets the scene */
static struct common_kube *ts;   /* trainsched's ServiceAccount: what the informers use */
static char ns[64];

static void setup(void)
{
    struct common_kubeconfig cfg;
    struct common_error err;
    const char *path = getenv("KUBECONFIG");
    json_t *obj;
    static const struct common_kube_resource sa = {"", "v1", "serviceaccounts", 1};

    (void)path;
    (void)cfg;
    kube = e2e_client(0, 0);
    ts = e2e_client(0, 1);
    snprintf(ns, sizeof(ns), "informer-%ld-%d", (long)time(NULL) % 100000, rand() % 10000);
    obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                    "name", ns);
    ck_assert_int_eq(common_kube_create(kube, &common_kube_namespaces, NULL, obj, NULL, NULL, &err),
                     COMMON_OK);
    json_decref(obj);
    obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata",
                    "name", "default");
    common_kube_create(kube, &sa, ns, obj, NULL, NULL, &err);
    json_decref(obj);
}

static void teardown(void)
{
    struct common_error err;
    common_kube_delete(kube, &common_kube_namespaces, NULL, ns, NULL, NULL, NULL, &err);
    common_kube_client_destroy(ts);
    common_kube_client_destroy(kube);
}

struct seen {
    int adds, updates, deletes;
};

static void on_add(void *ctx, const void *item)
{
    (void)item;
    __atomic_add_fetch(&((struct seen *)ctx)->adds, 1, __ATOMIC_SEQ_CST);
}
static void on_update(void *ctx, const void *o, const void *n)
{
    (void)o;
    (void)n;
    __atomic_add_fetch(&((struct seen *)ctx)->updates, 1, __ATOMIC_SEQ_CST);
}
static void on_delete(void *ctx, const void *item)
{
    (void)item;
    __atomic_add_fetch(&((struct seen *)ctx)->deletes, 1, __ATOMIC_SEQ_CST);
}

static json_t *pod(const char *name, const char *cpu)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s}}}]}}",
                     "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "labels", "app",
                     "informer-test", "spec", "schedulerName", "nobody", "containers", "name", "c",
                     "image", "busybox", "resources", "requests", "cpu", cpu);
}

struct cmp {
    struct common_pmap_snap *snap;
    int missing;
};

static int compare_rv(const char *key, void *item, void *ctx)
{
    (void)key;
    (void)item;
    (void)ctx;
    return 0;
}

/* the cache's keys and resourceVersions equal a fresh list's */
static int cache_equals_list(struct common_informer *inf)
{
    struct common_error err;
    json_t *items = NULL, *it;
    size_t i;
    struct common_pmap_snap *snap = common_informer_snapshot(inf);
    int ok = 1;

    ck_assert_int_eq(common_kube_list(kube, &common_kube_pods, ns, NULL, &items, NULL, &err),
                     COMMON_OK);
    if (common_pmap_snap_size(snap) != json_array_size(items))
        ok = 0;
    json_array_foreach(items, i, it)
    {
        char key[300];
        const json_t *meta = json_object_get(it, "metadata");
        const struct common_pod *p;
        snprintf(key, sizeof(key), "%s/%s", json_string_value(json_object_get(meta, "namespace")),
                 json_string_value(json_object_get(meta, "name")));
        p = common_pmap_snap_get(snap, key);
        if (!p || strcmp(p->resource_version,
                         json_string_value(json_object_get(meta, "resourceVersion"))) != 0)
            ok = 0;
    }
    common_pmap_snap_foreach(snap, compare_rv, NULL);
    common_pmap_snap_release(snap);
    json_decref(items);
    return ok;
}

static int wait_equal(struct common_informer *inf)
{
    for (int i = 0; i < 100; i++) {
        if (cache_equals_list(inf))
            return 1;
        usleep(100000);
    }
    return 0;
}

START_TEST(pods_over_protobuf_follow_the_server)
{
    struct common_error err;
    struct common_informer *inf;
    struct seen seen = {0, 0, 0};
    struct common_informer_handlers h = {on_add, on_update, on_delete, &seen};
    struct common_informer_opts o = {.namespace = ns, .page_size = 2};
    struct common_informer_stats st;
    struct common_pmap_snap *snap;
    const struct common_pod *p;
    char key[200];

    for (int i = 0; i < 5; i++) {
        char name[16];
        json_t *obj;
        snprintf(name, sizeof(name), "p%d", i);
        obj = pod(name, "250m");
        ck_assert_int_eq(common_kube_create(kube, &common_kube_pods, ns, obj, NULL, NULL, &err),
                         COMMON_OK);
        json_decref(obj);
    }
    ck_assert_int_eq(common_informer_create(ts, &common_informer_pods, &h, &o, &inf, &err),
                     COMMON_OK);
    ck_assert_int_eq(common_informer_start(inf, &err), COMMON_OK);
    ck_assert_msg(common_informer_wait_synced(inf, 10000), "informer did not sync");
    ck_assert_int_eq(seen.adds, 5);
    ck_assert(cache_equals_list(inf));

    /* decoded over protobuf: the request is in millicores */
    snap = common_informer_snapshot(inf);
    snprintf(key, sizeof(key), "%s/p3", ns);
    p = common_pmap_snap_get(snap, key);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->requests.milli_cpu, 250);

    /* add, update, delete while watching */
    {
        json_t *obj = pod("late", "1");
        ck_assert_int_eq(common_kube_create(kube, &common_kube_pods, ns, obj, NULL, NULL, &err),
                         COMMON_OK);
        json_decref(obj);
    }
    ck_assert_int_eq(common_kube_patch(kube, &common_kube_pods, ns, "p0", COMMON_KUBE_MERGE_PATCH,
                                       "{\"metadata\":{\"labels\":{\"v\":\"2\"}}}", NULL, NULL,
                                       &err),
                     COMMON_OK);
    ck_assert_int_eq(common_kube_delete(kube, &common_kube_pods, ns, "p1", NULL, NULL, NULL, &err),
                     COMMON_OK);
    ck_assert_msg(wait_equal(inf), "cache differs from a fresh list");
    ck_assert_int_eq(seen.adds, 6);
    ck_assert_int_ge(seen.updates, 1);
    ck_assert_int_ge(seen.deletes, 1);

    /* the snapshot taken earlier did not change */
    snprintf(key, sizeof(key), "%s/late", ns);
    ck_assert_ptr_null(common_pmap_snap_get(snap, key));
    ck_assert_int_eq(common_pmap_snap_size(snap), 5);
    common_pmap_snap_release(snap);

    common_informer_stats(inf, &st);
    ck_assert_int_eq(st.lists, 1);
    ck_assert_int_ge(st.events, 3);
    common_informer_destroy(inf);
}
END_TEST

START_TEST(configmaps_over_json)
{
    struct common_error err;
    struct common_informer *inf;
    struct common_informer_ops ops;
    struct seen seen = {0, 0, 0};
    struct common_informer_handlers h = {on_add, on_update, on_delete, &seen};
    struct common_informer_opts o = {.namespace = ns};
    struct common_pmap_snap *snap;
    char key[200];
    const json_t *cm;
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                            "metadata", "name", "c1", "data", "k", "v");

    common_informer_json_ops(&ops, "configmaps", &common_kube_configmaps);
    ck_assert_int_eq(common_informer_create(ts, &ops, &h, &o, &inf, &err), COMMON_OK);
    ck_assert_int_eq(common_informer_start(inf, &err), COMMON_OK);
    ck_assert(common_informer_wait_synced(inf, 10000));
    ck_assert_int_eq(common_kube_create(kube, &common_kube_configmaps, ns, obj, NULL, NULL, &err),
                     COMMON_OK);
    snprintf(key, sizeof(key), "%s/c1", ns);
    for (int i = 0; i < 100; i++) {
        snap = common_informer_snapshot(inf);
        cm = common_pmap_snap_get(snap, key);
        if (cm)
            break;
        common_pmap_snap_release(snap);
        snap = NULL;
        usleep(100000);
    }
    ck_assert_ptr_nonnull(snap);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(cm, "data"), "k")), "v");
    common_pmap_snap_release(snap);
    json_decref(obj);
    common_informer_destroy(inf);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("informer (real API server)");
    TCase *tc = tcase_create("informer");
    SRunner *sr;
    int failed;

    common_alloc_init();
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, pods_over_protobuf_follow_the_server);
    tcase_add_test(tc, configmaps_over_json);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
