/*
 * tests/unit/test_status.c - trainjob/status.c: one runner for every case under
 * tests/fixtures/status/, plus a few direct checks (time formatting, change detection, the
 * deadline helper, allocation failure).
 *
 * A case is a folder whose name reads as a sentence. It holds:
 *   trainjob.yaml   the TrainJob as read (with its current status)
 *   jobset.yaml     the JobSet it owns as read; absent = the API server answered NotFound
 *   now             the reconcile time, RFC 3339 ("2026-01-01T00:00:10Z")
 *   expect.yaml     what one reconcile (steps 5-8 of trainer.md §2.1) must give:
 *     error: NotFound          # trainjob_status_derive fails with this code (NotFound,
 *                              # Invalid); nothing else is checked then
 *     deadline: {action: requeue, requeueAfter: 5}   # trainjob_deadline (none|requeue|fail)
 *     finished: true           # out.finished of trainjob_status_derive (after a deadline fail:
 *                              # of the final status)
 *     changed: true            # trainjob_status_changed(old status, final status)
 *     status: {...}            # the final status, deep-equal: the derived one, and on deadline
 *                              # fail after trainjob_status_deadline_exceeded
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "common/yaml.h"
#include "testutil.h"
#include "trainjob/status.h"

#define MAX_CASES 256
static char *cases[MAX_CASES];
static int ncases;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_cases(void)
{
    DIR *d = opendir(testutil_path("status"));
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) && ncases < MAX_CASES)
        if (e->d_name[0] != '.')
            cases[ncases++] = strdup(e->d_name);
    closedir(d);
    qsort(cases, (size_t)ncases, sizeof(cases[0]), cmp_str);
}

/* The single document of dir/file (new ref), or NULL when the file does not exist. */
static json_t *load_doc(const char *dir, const char *file)
{
    char path[4096];
    struct common_yaml_docs d;
    struct common_error e;
    json_t *v;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    f = fopen(path, "r");
    if (!f)
        return NULL;
    fclose(f);
    memset(&d, 0, sizeof(d));
    ck_assert_msg(common_yaml_load_file(path, NULL, &d, &e) == 0, "%s: %s", path, e.msg);
    ck_assert_msg(d.n == 1, "%s: must hold one document", path);
    v = json_incref(d.docs[0]);
    common_yaml_docs_free(&d);
    return v;
}

static int64_t load_now(const char *dir)
{
    char path[4096], *text, *end;
    int64_t t;

    snprintf(path, sizeof(path), "%s/now", dir);
    text = testutil_read(path);
    end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\r'))
        *--end = '\0';
    ck_assert_msg(trainjob_parse_time(text, &t) == 0, "%s: not RFC 3339: %s", path, text);
    free(text);
    return t;
}

static enum common_rc rc_named(const char *name)
{
    static const struct {
        const char *name;
        enum common_rc rc;
    } names[] = {{"NotFound", COMMON_ENOTFOUND}, {"Invalid", COMMON_EINVAL}, {"OK", COMMON_OK}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(names[i].name, name) == 0)
            return names[i].rc;
    ck_abort_msg("unknown error name %s", name);
    return COMMON_OK;
}

static enum trainjob_deadline_action action_named(const char *name)
{
    if (strcmp(name, "none") == 0)
        return TRAINJOB_DEADLINE_NONE;
    if (strcmp(name, "requeue") == 0)
        return TRAINJOB_DEADLINE_REQUEUE;
    if (strcmp(name, "fail") == 0)
        return TRAINJOB_DEADLINE_FAIL;
    ck_abort_msg("unknown deadline action %s", name);
    return TRAINJOB_DEADLINE_NONE;
}

static char *dump(const json_t *v)
{
    return v ? json_dumps(v, JSON_SORT_KEYS | JSON_INDENT(2)) : strdup("(null)");
}

START_TEST(status_case)
{
    const char *name = cases[_i];
    char dir[2048];
    json_t *tj, *js, *exp, *v, *old;
    struct trainjob_status_result res;
    struct trainjob_deadline_result dl;
    struct common_error e;
    enum common_rc rc;
    int64_t now;

    snprintf(dir, sizeof(dir), "%s/status/%s", TS_FIXTURES, name);
    tj = load_doc(dir, "trainjob.yaml");
    ck_assert_msg(tj != NULL, "%s: trainjob.yaml missing", name);
    js = load_doc(dir, "jobset.yaml");
    exp = load_doc(dir, "expect.yaml");
    ck_assert_msg(exp != NULL, "%s: expect.yaml missing", name);
    now = load_now(dir);
    common_error_clear(&e);

    rc = trainjob_status_derive(NULL, tj, js, now, &res, &e);
    if ((v = json_object_get(exp, "error"))) {
        ck_assert_msg(rc == rc_named(json_string_value(v)), "%s: rc %s (%s), want %s", name,
                      common_rc_name(rc), e.msg, json_string_value(v));
        ck_assert_ptr_null(res.status);
        goto out;
    }
    ck_assert_msg(rc == COMMON_OK, "%s: %s: %s", name, common_rc_name(rc), e.msg);
    ck_assert_ptr_nonnull(res.status);

    rc = trainjob_deadline(tj, res.status, now, &dl, &e);
    ck_assert_msg(rc == COMMON_OK, "%s: deadline: %s", name, e.msg);
    if (dl.action == TRAINJOB_DEADLINE_FAIL) {
        ck_assert_int_eq(trainjob_status_deadline_exceeded(res.status, now, &e), COMMON_OK);
        res.finished = trainjob_is_finished(res.status);
    }
    if ((v = json_object_get(exp, "deadline"))) {
        json_t *ra = json_object_get(v, "requeueAfter");
        ck_assert_msg(dl.action == action_named(json_string_value(json_object_get(v, "action"))),
                      "%s: deadline action %d", name, (int)dl.action);
        if (ra)
            ck_assert_msg(dl.requeue_after == json_integer_value(ra),
                          "%s: requeueAfter %lld, want %lld", name, (long long)dl.requeue_after,
                          (long long)json_integer_value(ra));
    }
    if ((v = json_object_get(exp, "finished")))
        ck_assert_msg(res.finished == json_is_true(v), "%s: finished %d", name, res.finished);
    old = json_object_get(tj, "status");
    if ((v = json_object_get(exp, "changed")))
        ck_assert_msg(trainjob_status_changed(old, res.status) == json_is_true(v), "%s: changed %d",
                      name, trainjob_status_changed(old, res.status));
    if ((v = json_object_get(exp, "status"))) {
        if (!json_equal(v, res.status)) {
            char *got = dump(res.status), *want = dump(v);
            ck_abort_msg("%s: status\n--- got\n%s\n--- want\n%s", name, got, want);
        }
    }
    json_decref(res.status);
out:
    json_decref(tj);
    json_decref(js);
    json_decref(exp);
}
END_TEST

START_TEST(time_round_trip)
{
    char buf[TRAINJOB_TIME_MAX];
    int64_t t;

    ck_assert_int_eq(trainjob_format_time(0, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "1970-01-01T00:00:00Z");
    ck_assert_int_eq(trainjob_format_time(1798761610, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "2027-01-01T00:00:10Z");
    ck_assert_int_eq(trainjob_parse_time(buf, &t), 0);
    ck_assert_int_eq(t, 1798761610);
    ck_assert_int_eq(trainjob_parse_time("2027-01-01T01:00:10.75+01:00", &t), 0);
    ck_assert_int_eq(t, 1798761610);
    ck_assert_int_eq(trainjob_format_time(0, buf, 8), -1);
    ck_assert_int_eq(trainjob_parse_time("yesterday", &t), -1);
    ck_assert_int_eq(trainjob_parse_time(NULL, &t), -1);
}
END_TEST

START_TEST(changed_treats_null_as_empty)
{
    json_t *empty = json_object(), *some = json_pack("{s:[]}", "conditions");

    ck_assert_int_eq(trainjob_status_changed(NULL, NULL), 0);
    ck_assert_int_eq(trainjob_status_changed(NULL, empty), 0);
    ck_assert_int_eq(trainjob_status_changed(empty, NULL), 0);
    ck_assert_int_eq(trainjob_status_changed(NULL, some), 1);
    ck_assert_int_eq(trainjob_status_changed(some, some), 0);
    json_decref(empty);
    json_decref(some);
}
END_TEST

START_TEST(deadline_helper_on_empty_status_and_repeat_keeps_time)
{
    json_t *st = json_object();
    struct common_error e;
    json_t *c;

    ck_assert_int_eq(trainjob_status_deadline_exceeded(st, 100, &e), COMMON_OK);
    c = json_array_get(json_object_get(st, "conditions"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(c, "type")), "Failed");
    ck_assert_str_eq(json_string_value(json_object_get(c, "reason")), "DeadlineExceeded");
    ck_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")),
                     "1970-01-01T00:01:40Z");
    ck_assert_int_eq(trainjob_status_deadline_exceeded(st, 200, &e), COMMON_OK);
    ck_assert_int_eq(json_array_size(json_object_get(st, "conditions")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")),
                     "1970-01-01T00:01:40Z");
    ck_assert_int_eq(trainjob_status_deadline_exceeded(NULL, 200, &e), COMMON_EINVAL);
    json_decref(st);
}
END_TEST

START_TEST(bad_types_are_invalid)
{
    json_t *tj = json_pack("{s:{s:i}}", "status", "conditions", 3);
    json_t *js = json_object();
    struct trainjob_status_result res;
    struct trainjob_deadline_result dl;
    struct common_error e;

    ck_assert_int_eq(trainjob_status_derive(NULL, tj, js, 0, &res, &e), COMMON_EINVAL);
    ck_assert_ptr_null(res.status);
    json_decref(tj);
    tj = json_pack("{s:{s:s}}", "spec", "activeDeadlineSeconds", "10");
    ck_assert_int_eq(trainjob_deadline(tj, NULL, 0, &dl, &e), COMMON_EINVAL);
    json_decref(tj);
    tj = json_pack("{s:{s:i}}", "spec", "activeDeadlineSeconds", 10);
    ck_assert_int_eq(trainjob_deadline(tj, NULL, 0, &dl, &e), COMMON_EINVAL);
    ck_assert(strstr(e.msg, "creationTimestamp") != NULL);
    json_decref(tj);
    json_decref(js);
}
END_TEST

/* ---- allocation failure: fail the Nth jansson allocation in turn ---- */
static long fail_at, alloc_calls;

static void *failing_malloc(size_t n)
{
    if (fail_at > 0 && ++alloc_calls == fail_at)
        return NULL;
    return malloc(n);
}

START_TEST(allocation_failure_is_a_clean_error)
{
    const char *dir_name = "completed-jobset-marks-a-resumed-trainjob-complete";
    char dir[2048];
    json_t *tj, *js;
    int64_t now;
    long n;

    snprintf(dir, sizeof(dir), "%s/status/%s", TS_FIXTURES, dir_name);
    tj = load_doc(dir, "trainjob.yaml");
    js = load_doc(dir, "jobset.yaml");
    ck_assert_ptr_nonnull(tj);
    ck_assert_ptr_nonnull(js);
    now = load_now(dir);
    json_set_alloc_funcs(failing_malloc, free);
    for (n = 1; n < 10000; n++) {
        struct trainjob_status_result res;
        struct common_error e;
        enum common_rc rc;
        fail_at = n;
        alloc_calls = 0;
        rc = trainjob_status_derive(NULL, tj, js, now, &res, &e);
        fail_at = 0;
        if (rc == COMMON_OK) {
            json_decref(res.status);
            if (alloc_calls < n)
                break; /* no allocation failed: every point has been tried */
            continue;  /* the failed allocation was not fatal (e.g. an ignored cache) */
        }
        ck_assert_msg(rc == COMMON_ENOMEM, "allocation %ld: %s", n, common_rc_name(rc));
        ck_assert_ptr_null(res.status);
    }
    ck_assert_msg(n > 5, "only %ld allocations", n);
    json_set_alloc_funcs(malloc, free);
    json_decref(tj);
    json_decref(js);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("fixtures"), *unit = tcase_create("unit");

    collect_cases();
    if (ncases == 0) {
        fprintf(stderr, "no fixtures under %s/status\n", TS_FIXTURES);
        return 1;
    }
    tcase_add_loop_test(tc, status_case, 0, ncases);
    tcase_add_test(unit, time_round_trip);
    tcase_add_test(unit, changed_treats_null_as_empty);
    tcase_add_test(unit, deadline_helper_on_empty_status_and_repeat_keeps_time);
    tcase_add_test(unit, bad_types_are_invalid);
    tcase_add_test(unit, allocation_failure_is_a_clean_error);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, unit);
    return testutil_run_suite(s);
}
