/*
 * tests/unit/test_serve_ready.c - serve's /readyz decision for the reconciler
 * (cmd/serveready.h), one row per state: a standby is ready; a replica that must reconcile is
 * ready only once its reconciler runs with synced caches, and says why not otherwise.
 */
#include <check.h>
#include <string.h>

#include "cmd/serveready.h"
#include "testutil.h"

static const struct {
    const char *name;
    struct serve_reconciler_state st;
    int not_ready;
    const char *why; /* a part of the reason; NULL when ready */
} rows[] = {
    {"a standby of leader election is ready (it serves what needs no Lease)",
     {0, 0, 0, NULL},
     0,
     NULL},
    {"a standby whose last start failed is still ready: another replica leads",
     {0, 0, 0, "GET /apis: connection refused"},
     0,
     NULL},
    {"running with synced caches is ready", {1, 1, 1, NULL}, 0, NULL},
    {"should run but has not started yet is not ready: starting",
     {1, 0, 0, NULL},
     1,
     "reconciler is not running yet: starting"},
    {"should run but the start failed is not ready, with the error",
     {1, 0, 0, "cannot tell whether the API server serves /apis/x"},
     1,
     "reconciler is not running: its start failed (retried every second): cannot tell whether "
     "the API server serves /apis/x"},
    {"an empty start error counts as none", {1, 0, 0, ""}, 1, "not running yet: starting"},
    {"running but not synced is not ready",
     {1, 1, 0, NULL},
     1,
     "reconciler caches are not synced yet"},
    {"synced caches without a running reconciler do not count",
     {1, 0, 1, NULL},
     1,
     "not running yet"},
};

START_TEST(reconciler_readiness)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char why[256] = "";
        int rc = serve_ready_reconciler(&rows[i].st, why, sizeof(why));
        ck_assert_msg(rc == rows[i].not_ready, "%s: got %d (%s)", rows[i].name, rc, why);
        if (rows[i].why)
            ck_assert_msg(strstr(why, rows[i].why) != NULL, "%s: why \"%s\"", rows[i].name, why);
    }
}
END_TEST

/* the reason is cut to the buffer, never past it */
START_TEST(reason_fits_the_buffer)
{
    struct serve_reconciler_state st = {1, 0, 0, "a long error message that does not fit"};
    char why[16];
    memset(why, 'x', sizeof(why));
    ck_assert_int_eq(serve_ready_reconciler(&st, why, sizeof(why)), 1);
    ck_assert_uint_eq(strlen(why), sizeof(why) - 1);
    ck_assert_int_eq(serve_ready_reconciler(&st, NULL, 0), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("serve ready");
    TCase *tc = tcase_create("reconciler");
    tcase_add_test(tc, reconciler_readiness);
    tcase_add_test(tc, reason_fits_the_buffer);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
