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
 *
 * queue_state: volcano_queue_of and volcano_queue_not_open (the reconciler's Warning Event
 * VolcanoQueueNotOpen), over Queues in each state Volcano's queue controller writes.
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

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);

    ck_assert_msg(v != NULL, "%s: %s", text, je.text);
    return v;
}

/* the PodGroup's queue, "default" when it names none, NULL without a Volcano PodGroup */
START_TEST(queue_of_the_podgroup)
{
    json_t *named = parse("[{\"apiVersion\": \"jobset.x-k8s.io/v1alpha2\", \"kind\": \"JobSet\"},"
                          " {\"apiVersion\": \"scheduling.volcano.sh/v1beta1\", \"kind\": "
                          "\"PodGroup\", \"spec\": {\"queue\": \"team-a\"}}]");
    json_t *unset = parse("[{\"apiVersion\": \"scheduling.volcano.sh/v1beta1\", \"kind\": "
                          "\"PodGroup\", \"spec\": {\"minMember\": 2}}]");
    json_t *other = parse("[{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": "
                          "\"PodGroup\", \"spec\": {\"queue\": \"x\"}}]");

    ck_assert_str_eq(volcano_queue_of(named), "team-a");
    ck_assert_str_eq(volcano_queue_of(unset), VOLCANO_DEFAULT_QUEUE);
    ck_assert_ptr_null(volcano_queue_of(other));
    json_decref(named);
    json_decref(unset);
    json_decref(other);
}
END_TEST

static const struct {
    const char *queue; /* the Queue as JSON, NULL: unknown */
    int held;          /* volcano_queue_not_open's answer */
} queue_cases[] = {
    {"{\"status\": {\"state\": \"Closed\"}}", 1},
    {"{\"status\": {\"state\": \"Closing\"}}", 1},
    {"{\"status\": {\"state\": \"Unknown\"}}", 1},
    {"{\"status\": {\"state\": \"Open\"}}", 0},
    {"{\"status\": {}}", 0}, /* not seen by the queue controller yet: it opens it */
    {"{\"spec\": {\"weight\": 1}}", 0},
    {NULL, 0},
};

START_TEST(queue_state)
{
    json_t *q = queue_cases[_i].queue ? parse(queue_cases[_i].queue) : NULL;
    char msg[600] = "";
    int held = volcano_queue_not_open("team-a", q, msg, sizeof(msg));

    ck_assert_msg(held == queue_cases[_i].held, "%s: %d", queue_cases[_i].queue, held);
    if (held) {
        const char *state =
            json_string_value(json_object_get(json_object_get(q, "status"), "state"));
        ck_assert_msg(strstr(msg, "Volcano Queue \"team-a\" is ") != NULL, "%s", msg);
        ck_assert_msg(strstr(msg, state) != NULL, "%s lacks %s", msg, state);
        ck_assert_msg(strstr(msg, "spec.queue") == msg, "%s", msg);
    }
    json_decref(q);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("volcano");
    TCase *tc = tcase_create("tiers");
    TCase *tq = tcase_create("queue");

    ncases = testutil_cases("volcano", cases, MAX_CASES);
    tcase_add_loop_test(tc, tier_case, 0, ncases);
    suite_add_tcase(s, tc);
    tcase_add_test(tq, queue_of_the_podgroup);
    tcase_add_loop_test(tq, queue_state, 0, (int)(sizeof(queue_cases) / sizeof(queue_cases[0])));
    suite_add_tcase(s, tq);
    return testutil_run_suite(s);
}
