/*
 * tests/unit/test_extender_routes.c - the extender's filter and prioritize routes driven without
 * an API server: books fed through extender_server_feed_*, requests answered in-process through
 * extender_server_answer (the handlers of extender/routes.c). Checks which decode a route runs:
 * a gang pod the books know is read from its metadata only (a spec the full decode refuses does
 * not matter), an unknown one is decoded whole (the same spec is refused, named by its path).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/httpd.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/log.h"
#include "extender/server.h"
#include "testutil.h"

static struct common_kube *kube;
static struct extender_server *xs;

static void feed_node(const char *name)
{
    json_t *j = json_pack("{s:{s:s}, s:{s:{s:s, s:s, s:s, s:s, s:s}}}", "metadata", "name", name,
                          "status", "allocatable", "cpu", "8", "memory", "32Gi", "pods", "110",
                          "nvidia.com/gpu", "1", EXTENDER_GANG_RESOURCE, "110");
    struct common_node *n = NULL;
    struct common_error e;

    json_object_set(json_object_get(j, "status"), "capacity",
                    json_object_get(json_object_get(j, "status"), "allocatable"));
    ck_assert_msg(common_node_from_json(j, &n, &e) == COMMON_OK, "%s", e.msg);
    extender_server_feed_node(xs, n);
    common_node_free(n);
    json_decref(j);
}

/* a pending member of PodGroup ml/g asking for cpu (a quantity string, maybe a bad one) */
static json_t *pod_json(const char *name, const char *cpu)
{
    char uid[64];

    snprintf(uid, sizeof(uid), "uid-%s", name);
    return json_pack("{s:{s:s, s:s, s:s, s:{s:s}}, s:{s:[{s:s, s:{s:{s:s, s:s, s:s}}}]}, "
                     "s:{s:s}}",
                     "metadata", "name", name, "namespace", "ml", "uid", uid, "labels",
                     "scheduling.x-k8s.io/pod-group", "g", "spec", "containers", "name", "c",
                     "resources", "requests", "cpu", cpu, "nvidia.com/gpu", "1",
                     EXTENDER_GANG_RESOURCE, "1", "status", "phase", "Pending");
}

static void setup(void)
{
    struct common_kubeconfig kc = {0};
    struct extender_server_opts o = {0};
    struct common_error e;
    json_t *pg;

    common_alloc_init();
    common_log_set_level(COMMON_LOG_ERROR);
    kc.server = "https://127.0.0.1:9"; /* never called: the server is not started */
    kc.insecure = 1;
    kube = common_kube_client_create(&kc, NULL, &e);
    ck_assert_msg(kube != NULL, "%s", e.msg);
    o.kube = kube;
    xs = extender_server_create(&o, &e);
    ck_assert_msg(xs != NULL, "%s", e.msg);
    feed_node("n1");
    feed_node("n2");
    feed_node("n3");
    pg = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:i}}", "apiVersion",
                   "scheduling.x-k8s.io/v1alpha1", "kind", "PodGroup", "metadata", "name", "g",
                   "namespace", "ml", "resourceVersion", "1", "spec", "minMember", 2);
    extender_server_feed_podgroup(xs, pg);
    json_decref(pg);
    for (int i = 0; i < 2; i++) {
        char name[16];
        json_t *j;
        struct common_pod *p = NULL;
        snprintf(name, sizeof(name), "g-%d", i);
        j = pod_json(name, "1");
        ck_assert_msg(common_pod_from_json(j, &p, &e) == COMMON_OK, "%s", e.msg);
        extender_server_feed_pod(xs, p);
        common_pod_free(p);
        json_decref(j);
    }
}

static void teardown(void)
{
    extender_server_destroy(xs);
    common_kube_client_destroy(kube);
}

/* POST path with ExtenderArgs {Pod: pod (stolen), NodeNames: n1..n3}; the answer's JSON */
static json_t *ask(const char *path, json_t *pod)
{
    json_t *args =
        json_pack("{s:o, s:n, s:[s, s, s]}", "Pod", pod, "Nodes", "NodeNames", "n1", "n2", "n3");
    char *body = json_dumps(args, JSON_COMPACT);
    struct common_httpd_response resp;
    struct common_error e;
    json_t *ans;

    ck_assert_ptr_nonnull(body);
    memset(&resp, 0, sizeof(resp));
    common_buf_init(&resp.body, 1 << 20);
    ck_assert_int_eq(extender_server_answer(xs, path, body, strlen(body), &resp, &e), COMMON_OK);
    ck_assert_msg(resp.status == 0 || resp.status == 200, "%s: HTTP %d: %.*s", path, resp.status,
                  (int)resp.body.len, resp.body.data);
    ans = json_loadb(resp.body.data, resp.body.len, 0, NULL);
    ck_assert_msg(ans != NULL, "%s: not JSON: %.*s", path, (int)resp.body.len, resp.body.data);
    common_buf_free(&resp.body);
    common_buf_free(&resp.headers);
    free(body);
    json_decref(args);
    return ans;
}

START_TEST(a_known_gang_pod_is_read_from_its_metadata)
{
    /* the books hold g-0 (cpu 1): a request whose copy carries an undecodable cpu is answered
     * from the books, as the full decode would have refused it */
    json_t *f = ask(EXTENDER_URL_PREFIX "/filter", pod_json("g-0", "lots"));
    json_t *names = json_object_get(f, "NodeNames");
    const char *planned;
    json_t *p, *h;
    size_t i;
    int tens = 0;

    ck_assert_str_eq(json_string_value(json_object_get(f, "Error")), "");
    ck_assert_int_eq(json_array_size(names), 1);
    planned = json_string_value(json_array_get(names, 0));
    ck_assert_ptr_nonnull(planned);
    /* prioritize: the planned node scores 10, the others less */
    p = ask(EXTENDER_URL_PREFIX "/prioritize", pod_json("g-0", "lots"));
    ck_assert_int_eq(json_array_size(p), 3);
    json_array_foreach(p, i, h)
    {
        int is_planned = strcmp(json_string_value(json_object_get(h, "Host")), planned) == 0;
        json_int_t score = json_integer_value(json_object_get(h, "Score"));
        ck_assert_int_eq(score == 10, is_planned);
        tens += score == 10;
    }
    ck_assert_int_eq(tens, 1);
    json_decref(p);
    json_decref(f);
}
END_TEST

START_TEST(an_unknown_gang_pod_is_decoded_whole)
{
    json_t *f = ask(EXTENDER_URL_PREFIX "/filter", pod_json("g-9", "lots"));
    const char *err = json_string_value(json_object_get(f, "Error"));

    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "Pod.spec") != NULL, "error names the field: %s", err);
    json_decref(f);
    /* with a good spec it is decoded and joins the books: prioritize scores every node */
    f = ask(EXTENDER_URL_PREFIX "/prioritize", pod_json("g-9", "1"));
    ck_assert_int_eq(json_array_size(f), 3);
    json_decref(f);
}
END_TEST

START_TEST(bind_has_no_route_without_http)
{
    struct common_httpd_response resp;
    struct common_error e;

    memset(&resp, 0, sizeof(resp));
    common_buf_init(&resp.body, 1 << 16);
    ck_assert_int_eq(extender_server_answer(xs, EXTENDER_URL_PREFIX "/bind", "{}", 2, &resp, &e),
                     COMMON_EINVAL);
    ck_assert_msg(strstr(e.msg, "/bind") != NULL, "%s", e.msg);
    common_buf_free(&resp.body);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("extender_routes");
    TCase *tc = tcase_create("routes");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_known_gang_pod_is_read_from_its_metadata);
    tcase_add_test(tc, an_unknown_gang_pod_is_decoded_whole);
    tcase_add_test(tc, bind_has_no_route_without_http);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
