/*
 * tests/unit/test_volcano.c - the volcano backend's level -> HyperNode tier mapping
 * (integrations/volcano.h volcano_tier, volcano_tiers_check), one case per folder under
 * tests/fixtures/volcano/:
 *
 *   case.yaml:
 *     tiers: "a=1,b=2"      # the mapping (absent: the built-in one)
 *     level: b              # the level looked up
 *     expect:
 *       tier: 2             # found at this tier
 *       missing: true       # or: the mapping has no such level (COMMON_ENOTFOUND)
 *       error: [text, ...]  # or: the mapping is refused (COMMON_EINVAL, by both functions)
 *
 * What translate makes of a tier (networkTopology) is tested through render
 * (tests/fixtures/render/volcano-*).
 */
#include <stdlib.h>
#include <string.h>

#include "common/yaml.h"
#include "integrations/volcano.h"
#include "testutil.h"

#define MAX_CASES 64
static char *cases[MAX_CASES];
static int ncases;

START_TEST(tier_case)
{
    char rel[600];
    struct common_yaml_docs docs;
    struct common_error err = {0};
    json_t *c, *expect, *errs, *v;
    const char *tiers, *level;
    int64_t tier = -1;
    enum common_rc rc;
    size_t i;

    snprintf(rel, sizeof(rel), "volcano/%s/case.yaml", cases[_i]);
    ck_assert_int_eq(common_yaml_load_file(testutil_path(rel), NULL, &docs, &err), COMMON_OK);
    c = docs.docs[0];
    tiers = json_string_value(json_object_get(c, "tiers"));
    level = json_string_value(json_object_get(c, "level"));
    expect = json_object_get(c, "expect");
    ck_assert_msg(level && json_is_object(expect), "%s: want level and expect", cases[_i]);
    rc = volcano_tier(tiers, level, &tier, &err);
    errs = json_object_get(expect, "error");
    if (errs) {
        ck_assert_msg(rc == COMMON_EINVAL, "%s: rc %d", cases[_i], rc);
        json_array_foreach(errs, i, v)
        {
            ck_assert_msg(strstr(err.msg, json_string_value(v)) != NULL,
                          "%s: message \"%s\" lacks \"%s\"", cases[_i], err.msg,
                          json_string_value(v));
        }
        ck_assert_int_eq(volcano_tiers_check("backends.volcano.tiers", tiers, &err), COMMON_EINVAL);
    } else if (json_is_true(json_object_get(expect, "missing"))) {
        ck_assert_msg(rc == COMMON_ENOTFOUND, "%s: rc %d (tier %lld)", cases[_i], rc,
                      (long long)tier);
    } else {
        ck_assert_msg(rc == COMMON_OK, "%s: %s", cases[_i], err.msg);
        ck_assert_int_eq(tier, json_integer_value(json_object_get(expect, "tier")));
        ck_assert_int_eq(volcano_tiers_check("backends.volcano.tiers", tiers, &err), COMMON_OK);
    }
    common_yaml_docs_free(&docs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("volcano");
    TCase *tc = tcase_create("tiers");

    ncases = testutil_cases("volcano", cases, MAX_CASES);
    tcase_add_loop_test(tc, tier_case, 0, ncases);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
