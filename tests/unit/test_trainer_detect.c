/*
 * tests/unit/test_trainer_detect.c - the decision of cmd/trainerdetect.h (is Kubeflow Trainer's
 * controller running?) on the cases of tests/fixtures/trainer-detect/: each folder has
 * input.json (what serve saw, `now`, whether the reconciler runs and the override) and
 * expected.json (verdict, refuse, warn, strings the message must contain).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/trainerdetect.h"
#include "common/leader.h"
#include "testutil.h"

#define MAX_CASES 64
static char *cases[MAX_CASES];
static int ncases;

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_cases(void)
{
    DIR *d = opendir(testutil_path("trainer-detect"));
    struct dirent *de;
    if (!d)
        return;
    while ((de = readdir(d)) && ncases < MAX_CASES)
        if (de->d_name[0] != '.')
            cases[ncases++] = strdup(de->d_name);
    closedir(d);
    qsort(cases, ncases, sizeof(cases[0]), by_name);
}

static json_t *load(const char *name, const char *file)
{
    char rel[512];
    json_error_t je;
    json_t *v;
    snprintf(rel, sizeof(rel), "trainer-detect/%s/%s", name, file);
    v = json_load_file(testutil_path(rel), 0, &je);
    ck_assert_msg(v != NULL, "%s/%s: %s", name, file, je.text);
    return v;
}

START_TEST(decide_case)
{
    const char *name = cases[_i];
    json_t *in = load(name, "input.json"), *exp = load(name, "expected.json"), *s;
    struct trainer_observed o = {0};
    struct trainer_decision d;
    int64_t now;
    size_t i;

    ck_assert_int_eq(
        common_leader_parse_microtime(json_string_value(json_object_get(in, "now")), &now), 0);
    o.now_us = now;
    o.lease_namespace = json_string_value(json_object_get(in, "lease_namespace"));
    o.lease_found = (int)json_integer_value(json_object_get(in, "lease_found"));
    o.lease = json_object_get(in, "lease");
    o.lease_error = json_string_value(json_object_get(in, "lease_error"));
    o.validating_found = (int)json_integer_value(json_object_get(in, "validating_found"));
    o.mutating_found = (int)json_integer_value(json_object_get(in, "mutating_found"));
    o.webhook_error = json_string_value(json_object_get(in, "webhook_error"));

    trainer_detect_decide(&o, json_is_true(json_object_get(in, "reconciler")),
                          json_is_true(json_object_get(in, "allow")), &d);

    ck_assert_msg(strcmp(trainer_verdict_name(d.verdict),
                         json_string_value(json_object_get(exp, "verdict"))) == 0,
                  "%s: verdict %s, want %s (%s)", name, trainer_verdict_name(d.verdict),
                  json_string_value(json_object_get(exp, "verdict")), d.message);
    ck_assert_msg(d.refuse == json_is_true(json_object_get(exp, "refuse")), "%s: refuse %d", name,
                  d.refuse);
    ck_assert_msg(d.warn == json_is_true(json_object_get(exp, "warn")), "%s: warn %d", name,
                  d.warn);
    json_array_foreach(json_object_get(exp, "message_contains"), i, s)
        ck_assert_msg(strstr(d.message, json_string_value(s)) != NULL,
                      "%s: message lacks \"%s\": %s", name, json_string_value(s), d.message);
    json_decref(in);
    json_decref(exp);
}
END_TEST

/* a Lease of the wrong shape is a holder-less Lease, never a crash */
START_TEST(odd_lease_shapes_do_not_crash)
{
    json_t *lease = json_pack("{s:{s:i, s:s}}", "spec", "holderIdentity", 3, "renewTime", "x");
    struct trainer_observed o = {.lease_namespace = NULL, .lease_found = 1, .lease = lease};
    struct trainer_decision d;
    trainer_detect_decide(&o, 1, 0, &d);
    ck_assert_int_eq(d.verdict, TRAINER_INSTALLED);
    ck_assert_int_eq(d.refuse, 0);
    json_decref(lease);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trainer_detect");
    TCase *tc = tcase_create("fixtures");

    collect_cases();
    if (ncases == 0) {
        fprintf(stderr, "no fixtures under %s\n", testutil_path("trainer-detect"));
        return 1;
    }
    tcase_add_loop_test(tc, decide_case, 0, ncases);
    tcase_add_test(tc, odd_lease_shapes_do_not_crash);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
