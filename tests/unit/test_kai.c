/*
 * tests/unit/test_kai.c - the kai backend's check of what its PodGroup names
 * (integrations/kai.h kai_check_refs), one case per folder under tests/fixtures/kai/:
 *
 *   case.yaml:
 *     trainjob: {...}              # the TrainJob (its labels say where the queue came from)
 *     podgroup: {...}              # the rendered scheduling.run.ai/v2alpha2 PodGroup
 *     queues-served: true          # scheduling.run.ai/v2 queues is served (default true)
 *     queue: {...}                 # the Queue of that name in the cluster; absent: none
 *     priorityclass: {...}         # the PriorityClass of that name; absent: none
 *     expect:
 *       ok: true                   # the PodGroup may be written
 *       warning: [text, ...]       # and a Warning Event is due (kai_queue_warning), its note
 *                                  # has each; without the key no warning is due
 *       error: [text, ...]         # or: refused (COMMON_EINVAL), the message has each
 *
 * How render builds the PodGroup is covered by tests/fixtures/render/kai-*.
 */
#include <string.h>

#include "common/yaml.h"
#include "integrations/kai.h"
#include "testutil.h"

#define MAX_CASES 64
static char *cases[MAX_CASES];
static int ncases;

START_TEST(refs_case)
{
    char rel[600];
    struct common_yaml_docs docs;
    struct common_error err = {0};
    struct kai_refs refs;
    json_t *c, *expect, *objects, *errs, *warns, *v;
    char note[700];
    const json_t *served;
    enum common_rc rc;
    size_t i;

    snprintf(rel, sizeof(rel), "kai/%s/case.yaml", cases[_i]);
    ck_assert_int_eq(common_yaml_load_file(testutil_path(rel), NULL, &docs, &err), COMMON_OK);
    ck_assert_uint_eq(docs.n, 1);
    c = docs.docs[0];
    expect = json_object_get(c, "expect");
    ck_assert_msg(json_is_object(expect), "%s: no expect", cases[_i]);
    objects = json_pack("[O]", json_object_get(c, "podgroup"));
    ck_assert_ptr_nonnull(objects);
    ck_assert_int_eq(kai_refs_of(objects, json_object_get(c, "trainjob"), &refs), COMMON_OK);
    served = json_object_get(c, "queues-served");
    rc = kai_check_refs(&refs, json_object_get(c, "queue"), !served || json_is_true(served),
                        json_object_get(c, "priorityclass"), 1, &err);
    errs = json_object_get(expect, "error");
    if (errs) {
        ck_assert_msg(rc == COMMON_EINVAL, "%s: not refused (rc %d)", cases[_i], rc);
        json_array_foreach(errs, i, v)
        {
            ck_assert_msg(strstr(err.msg, json_string_value(v)) != NULL,
                          "%s: message \"%s\" lacks \"%s\"", cases[_i], err.msg,
                          json_string_value(v));
        }
    } else {
        ck_assert_msg(json_is_true(json_object_get(expect, "ok")), "%s: expect ok or error",
                      cases[_i]);
        ck_assert_msg(rc == COMMON_OK, "%s: %s", cases[_i], err.msg);
        warns = json_object_get(expect, "warning");
        note[0] = '\0';
        ck_assert_int_eq(kai_queue_warning(&refs, json_object_get(c, "queue"), note, sizeof(note)),
                         warns != NULL);
        json_array_foreach(warns, i, v)
        {
            ck_assert_msg(strstr(note, json_string_value(v)) != NULL,
                          "%s: warning \"%s\" lacks \"%s\"", cases[_i], note, json_string_value(v));
        }
    }
    json_decref(objects);
    common_yaml_docs_free(&docs);
}
END_TEST

/* objects without a KAI PodGroup name nothing to check */
START_TEST(no_kai_podgroup_is_not_found)
{
    struct kai_refs refs;
    json_t *objects =
        json_pack("[{s:s, s:s}]", "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind", "JobSet");

    ck_assert_int_eq(kai_refs_of(objects, NULL, &refs), COMMON_ENOTFOUND);
    ck_assert_ptr_null(refs.queue);
    json_decref(objects);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kai");
    TCase *tc = tcase_create("refs");

    ncases = testutil_cases("kai", cases, MAX_CASES);
    tcase_add_test(tc, no_kai_podgroup_is_not_found);
    tcase_add_loop_test(tc, refs_case, 0, ncases);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
