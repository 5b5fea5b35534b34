/*
 * tests/unit/test_backends.c - the backend table (integrations/backends.c) and the selection
 * of a runtime's backend, one case per folder under tests/fixtures/backends/:
 *
 *   case.yaml:
 *     runtime: {...}          # the TrainingRuntime / ClusterTrainingRuntime (may be absent)
 *     override: native        # optional: `render --backend`
 *     default: volcano        # optional: the serve config default
 *     expect:
 *       backend: native       # the chosen backend, and where it came from:
 *       from: annotation      #   override | annotation | policy | default
 *       error: [text, ...]    # or: selection fails (COMMON_EINVAL) and the message has each
 */
#include <stdlib.h>
#include <string.h>

#include "common/yaml.h"
#include "integrations/backend.h"
#include "testutil.h"

#define MAX_CASES 128
static char *cases[MAX_CASES];
static int ncases;

static const char *const sources[] = {"override", "annotation", "policy", "default"};

START_TEST(select_case)
{
    char rel[600];
    struct common_yaml_docs docs;
    struct common_error err = {0};
    const struct backend *b = NULL;
    enum backend_source from = BACKEND_FROM_DEFAULT;
    json_t *c, *expect, *errs, *v;
    enum common_rc rc;
    size_t i;

    snprintf(rel, sizeof(rel), "backends/%s/case.yaml", cases[_i]);
    ck_assert_int_eq(common_yaml_load_file(testutil_path(rel), NULL, &docs, &err), COMMON_OK);
    ck_assert_uint_eq(docs.n, 1);
    c = docs.docs[0];
    expect = json_object_get(c, "expect");
    ck_assert_msg(json_is_object(expect), "%s: no expect", cases[_i]);
    rc = backend_select(json_object_get(c, "runtime"),
                        json_string_value(json_object_get(c, "override")),
                        json_string_value(json_object_get(c, "default")), &b, &from, &err);
    errs = json_object_get(expect, "error");
    if (errs) {
        ck_assert_msg(rc == COMMON_EINVAL, "%s: selection did not fail (rc %d, backend %s)",
                      cases[_i], rc, b ? b->name : "-");
        ck_assert_ptr_null(b);
        json_array_foreach(errs, i, v)
        {
            ck_assert_msg(strstr(err.msg, json_string_value(v)) != NULL,
                          "%s: message \"%s\" lacks \"%s\"", cases[_i], err.msg,
                          json_string_value(v));
        }
    } else {
        ck_assert_msg(rc == COMMON_OK, "%s: %s", cases[_i], err.msg);
        ck_assert_str_eq(b->name, json_string_value(json_object_get(expect, "backend")));
        ck_assert(b->built);
        ck_assert_str_eq(sources[from], json_string_value(json_object_get(expect, "from")));
    }
    common_yaml_docs_free(&docs);
}
END_TEST

/* every name once, lookup finds each, unknown names are not found */
START_TEST(table_names_are_unique_and_found)
{
    size_t n, i, j;
    const struct backend *const *t = backend_table(&n);
    static const char *const want[] = {"coscheduling", "volcano", "kai", "kueue",
                                       "native",       "slurm",   "none"};

    ck_assert_uint_eq(n, sizeof(want) / sizeof(want[0]));
    for (i = 0; i < n; i++) {
        ck_assert_ptr_eq(backend_lookup(want[i]), t[i]);
        ck_assert_str_eq(t[i]->name, want[i]);
        ck_assert_ptr_nonnull(strstr(backend_names(), want[i]));
        for (j = 0; j < i; j++)
            ck_assert_str_ne(t[i]->name, t[j]->name);
    }
    ck_assert_ptr_null(backend_lookup("Coscheduling"));
    ck_assert_ptr_null(backend_lookup(""));
    ck_assert_ptr_null(backend_lookup(NULL));
}
END_TEST

/* an unbuilt backend cannot render */
/* Every built backend but none writes objects the cluster must know (a gang object, or Kueue's
 * queueing): each names the API it requires and how to get it, so that the reconciler refuses a
 * TrainJob on it (BackendUnavailable) before writing half of its objects. */
START_TEST(every_backend_but_none_names_the_api_it_requires)
{
    size_t n;
    const struct backend *const *t = backend_table(&n);

    for (size_t i = 0; i < n; i++) {
        if (!t[i]->built || strcmp(t[i]->name, "none") == 0)
            continue;
        ck_assert_msg(t[i]->requires && t[i]->requires[0], "%s names no API it requires",
                      t[i]->name);
        ck_assert_msg(t[i]->install && *t[i]->install, "%s says not how to get its API",
                      t[i]->name);
        for (size_t k = 0; t[i]->requires[k]; k++)
            ck_assert_msg(t[i]->requires[k] -> group[0] && t[i] -> requires[k] -> version[0] && t[i]
                          -> requires[k] -> resource[0],
                          "%s: requires[%zu] incomplete", t[i]->name, k);
    }
}
END_TEST

START_TEST(render_refuses_an_unbuilt_backend)
{
    static const struct backend unbuilt = {.name = "x", .built = 0};
    struct common_error err = {0};
    struct trainjob_output out = {0};
    json_t *preview = NULL;

    ck_assert_int_eq(backend_render(&unbuilt, NULL, NULL, NULL, NULL, NULL, &out, &preview, &err),
                     COMMON_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "\"x\" is not built"));
    ck_assert_ptr_null(out.objects);
    ck_assert_ptr_null(preview);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("backends");
    TCase *tc = tcase_create("select");

    ncases = testutil_cases("backends", cases, MAX_CASES);
    tcase_add_test(tc, table_names_are_unique_and_found);
    tcase_add_test(tc, render_refuses_an_unbuilt_backend);
    tcase_add_test(tc, every_backend_but_none_names_the_api_it_requires);
    tcase_add_loop_test(tc, select_case, 0, ncases);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
