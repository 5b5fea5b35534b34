/*
 * tests/unit/test_leader_core.c - the pure leader-election core of common/leader.h, one table
 * row per case (client-go tryAcquireOrRenew semantics), plus the MicroTime codec, the timing
 * checks, the release record and identities.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/leader.h"
#include "testutil.h"

#define ME "me_1_00000000000000aa"
#define OTHER "other_2_00000000000000bb"
#define T0 1700000000000000LL /* a wall time, us */
#define NOW 1000.0            /* the local monotonic clock in every row */

struct decide_case {
    const char *name;
    enum common_leader_seen seen;
    const char *holder;
    int duration;     /* observed leaseDurationSeconds */
    int64_t acquired; /* observed acquireTime */
    int64_t renewed;  /* observed renewTime (never used for expiry) */
    int transitions;
    double observed_ago; /* NOW - observed_time */
    int leading;
    double renewed_ago; /* NOW - last_renew */
    /* expected */
    enum common_leader_action action;
    int want_transitions;
    int64_t want_acquired; /* 0 = the wall clock of the row (T0 + 5 s) */
};

#define WALL (T0 + 5000000)

static const struct decide_case decide_cases[] = {
    {"an absent lease is created with zero transitions", COMMON_LEADER_SEEN_ABSENT, NULL, 0, 0, 0,
     0, 0, 0, 0, COMMON_LEADER_CREATE, 0, 0},
    {"a follower that cannot read the lease waits", COMMON_LEADER_SEEN_ERROR, NULL, 0, 0, 0, 0, 0,
     0, 0, COMMON_LEADER_WAIT, 0, 0},
    {"a leader that cannot read the lease within the renew deadline waits",
     COMMON_LEADER_SEEN_ERROR, NULL, 0, 0, 0, 0, 0, 1, 9.9, COMMON_LEADER_WAIT, 0, 0},
    {"a leader that has not renewed for the renew deadline loses though the lease is ours",
     COMMON_LEADER_SEEN_LEASE, ME, 15, T0, T0, 3, 0, 1, 10.0, COMMON_LEADER_LOST, 0, 0},
    {"a leader that cannot read the lease past the renew deadline loses", COMMON_LEADER_SEEN_ERROR,
     NULL, 0, 0, 0, 0, 0, 1, 12, COMMON_LEADER_LOST, 0, 0},
    {"a leader just inside the renew deadline renews keeping acquireTime and transitions",
     COMMON_LEADER_SEEN_LEASE, ME, 15, T0, T0, 3, 0, 1, 9.99, COMMON_LEADER_RENEW, 3, T0},
    {"our own lease seen while not leading is renewed without a transition",
     COMMON_LEADER_SEEN_LEASE, ME, 15, T0, T0, 4, 20, 0, 0, COMMON_LEADER_RENEW, 4, T0},
    {"our own lease without acquireTime gets the current time", COMMON_LEADER_SEEN_LEASE, ME, 15, 0,
     0, 0, 0, 1, 2, COMMON_LEADER_RENEW, 0, 0},
    {"a follower waits while another holder's lease is valid", COMMON_LEADER_SEEN_LEASE, OTHER, 15,
     T0, T0, 1, 14.9, 0, 0, COMMON_LEADER_WAIT, 0, 0},
    {"a lease expires exactly at observed time plus its duration", COMMON_LEADER_SEEN_LEASE, OTHER,
     15, T0, T0, 1, 15, 0, 0, COMMON_LEADER_ACQUIRE, 2, 0},
    {"an expired lease of another holder is taken over with one more transition",
     COMMON_LEADER_SEEN_LEASE, OTHER, 15, T0, T0, 7, 40, 0, 0, COMMON_LEADER_ACQUIRE, 8, 0},
    {"expiry follows our observation time, not the holder's old renewTime",
     COMMON_LEADER_SEEN_LEASE, OTHER, 15, T0 - 3600000000LL, T0 - 3600000000LL, 1, 1, 0, 0,
     COMMON_LEADER_WAIT, 0, 0},
    {"expiry follows our observation time, not a renewTime in the future", COMMON_LEADER_SEEN_LEASE,
     OTHER, 15, T0 + 3600000000LL, T0 + 3600000000LL, 1, 16, 0, 0, COMMON_LEADER_ACQUIRE, 2, 0},
    {"the observed lease duration decides expiry, not ours", COMMON_LEADER_SEEN_LEASE, OTHER, 60,
     T0, T0, 1, 30, 0, 0, COMMON_LEADER_WAIT, 0, 0},
    {"a lease duration of zero is expired at once", COMMON_LEADER_SEEN_LEASE, OTHER, 0, T0, T0, 1,
     0, 0, 0, COMMON_LEADER_ACQUIRE, 2, 0},
    {"a released lease (empty holder) is acquired at once with one more transition",
     COMMON_LEADER_SEEN_LEASE, "", 1, T0, T0, 5, 0, 0, 0, COMMON_LEADER_ACQUIRE, 6, 0},
    {"a lease without holderIdentity counts as released", COMMON_LEADER_SEEN_LEASE, NULL, 15, T0,
     T0, 0, 0, 0, 0, COMMON_LEADER_ACQUIRE, 1, 0},
    {"a leader that finds another holder loses", COMMON_LEADER_SEEN_LEASE, OTHER, 15, T0, T0, 2, 0,
     1, 2, COMMON_LEADER_LOST, 0, 0},
    {"a leader that finds the lease released under it loses", COMMON_LEADER_SEEN_LEASE, "", 1, T0,
     T0, 2, 0, 1, 2, COMMON_LEADER_LOST, 0, 0},
    {"a leader that finds the lease deleted creates it again", COMMON_LEADER_SEEN_ABSENT, NULL, 0,
     0, 0, 0, 0, 1, 2, COMMON_LEADER_CREATE, 0, 0},
};

START_TEST(decide_table)
{
    const struct decide_case *c = &decide_cases[_i];
    struct common_leader_input in;
    struct common_leader_decision d;

    memset(&in, 0, sizeof(in));
    in.identity = ME;
    in.timing = common_leader_timing_default();
    in.seen = c->seen;
    in.rec.holder = c->holder;
    in.rec.lease_duration_s = c->duration;
    in.rec.acquire_time_us = c->acquired;
    in.rec.renew_time_us = c->renewed;
    in.rec.transitions = c->transitions;
    in.observed_time = NOW - c->observed_ago;
    in.leading = c->leading;
    in.last_renew = NOW - c->renewed_ago;
    in.now = NOW;
    in.wall_now_us = WALL;
    common_leader_decide(&in, &d);
    ck_assert_msg(d.action == c->action, "%s: got %s (%s), want %s", c->name,
                  common_leader_action_name(d.action), d.why ? d.why : "",
                  common_leader_action_name(c->action));
    ck_assert_msg(d.why != NULL, "%s: no reason given", c->name);
    if (c->action == COMMON_LEADER_CREATE || c->action == COMMON_LEADER_ACQUIRE ||
        c->action == COMMON_LEADER_RENEW) {
        ck_assert_msg(strcmp(d.rec.holder, ME) == 0, "%s: holder %s", c->name, d.rec.holder);
        ck_assert_msg(d.rec.lease_duration_s == COMMON_LEADER_LEASE_DURATION_S, "%s: duration %d",
                      c->name, d.rec.lease_duration_s);
        ck_assert_msg(d.rec.transitions == c->want_transitions, "%s: transitions %d, want %d",
                      c->name, d.rec.transitions, c->want_transitions);
        ck_assert_msg(d.rec.renew_time_us == WALL, "%s: renewTime", c->name);
        ck_assert_msg(d.rec.acquire_time_us == (c->want_acquired ? c->want_acquired : WALL),
                      "%s: acquireTime %lld", c->name, (long long)d.rec.acquire_time_us);
    }
}
END_TEST

struct timing_case {
    const char *name;
    int lease;
    double deadline, retry;
    enum common_rc want;
};

static const struct timing_case timing_cases[] = {
    {"client-go's defaults are valid", 15, 10, 2, COMMON_OK},
    {"a lease duration equal to the renew deadline is refused", 10, 10, 2, COMMON_EINVAL},
    {"a renew deadline of 1.2 retry periods is refused", 15, 2.4, 2, COMMON_EINVAL},
    {"a renew deadline just over 1.2 retry periods is valid", 15, 2.5, 2, COMMON_OK},
    {"a zero retry period is refused", 15, 10, 0, COMMON_EINVAL},
};

START_TEST(timing_table)
{
    const struct timing_case *c = &timing_cases[_i];
    struct common_leader_timing t = {c->lease, c->deadline, c->retry};
    struct common_error err;

    ck_assert_msg(common_leader_timing_check(&t, &err) == c->want, "%s", c->name);
}
END_TEST

START_TEST(release_record_frees_the_lease_at_once)
{
    struct common_leader_record old = {ME, 15, T0, T0 + 1, 9};
    struct common_leader_record r = common_leader_release_record(&old, WALL);

    ck_assert_str_eq(r.holder, "");
    ck_assert_int_eq(r.lease_duration_s, 1);
    ck_assert_int_eq(r.transitions, 9);
    ck_assert(r.acquire_time_us == WALL && r.renew_time_us == WALL);
}
END_TEST

struct time_case {
    const char *text;
    int ok;
    int64_t us;
};

static const struct time_case time_cases[] = {
    {"2023-11-14T22:13:20.000000Z", 1, 1700000000000000LL},
    {"2023-11-14T22:13:20Z", 1, 1700000000000000LL},
    {"2023-11-14T22:13:20.5Z", 1, 1700000000500000LL},
    {"2023-11-14T22:13:20.123456789Z", 1, 1700000000123456LL},
    {"2023-11-15T00:13:20.000001+02:00", 1, 1700000000000001LL},
    {"2023-11-14T21:43:20-00:30", 1, 1700000000000000LL},
    {"1970-01-01T00:00:00Z", 1, 0},
    {"2023-11-14 22:13:20Z", 0, 0},
    {"2023-11-14T22:13:20", 0, 0},
    {"2023-13-14T22:13:20Z", 0, 0},
    {"2023-11-14T22:13:20.Z", 0, 0},
    {"2023-11-14T22:13:20.1234567890Z", 0, 0},
    {"2023-11-14T22:13:20Zjunk", 0, 0},
    {"", 0, 0},
};

START_TEST(microtime_table)
{
    const struct time_case *c = &time_cases[_i];
    int64_t us = -1;
    int rc = common_leader_parse_microtime(c->text, &us);

    ck_assert_msg((rc == 0) == c->ok, "\"%s\": rc %d", c->text, rc);
    if (c->ok)
        ck_assert_msg(us == c->us, "\"%s\": %lld, want %lld", c->text, (long long)us,
                      (long long)c->us);
}
END_TEST

START_TEST(microtime_round_trip)
{
    char buf[40];
    int64_t back;
    const int64_t vals[] = {0, 1700000000123456LL, 1700000000000001LL, 253402300799999999LL};

    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        ck_assert_int_eq(common_leader_format_microtime(vals[i], buf, sizeof(buf)), 0);
        ck_assert_int_eq(common_leader_parse_microtime(buf, &back), 0);
        ck_assert_msg(back == vals[i], "%s", buf);
    }
    ck_assert_int_eq(common_leader_format_microtime(1700000000123456LL, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "2023-11-14T22:13:20.123456Z");
    ck_assert_int_eq(common_leader_format_microtime(0, buf, 10), -1);
}
END_TEST

static int is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

START_TEST(identities_are_unique_and_bounded)
{
    char a[256], b[256], small[40], pid[32];
    struct common_error err;
    size_t n;

    ck_assert_int_eq(common_leader_identity(a, sizeof(a), &err), COMMON_OK);
    ck_assert_int_eq(common_leader_identity(b, sizeof(b), &err), COMMON_OK);
    ck_assert_str_ne(a, b);
    n = strlen(a);
    ck_assert_uint_le(n, COMMON_LEADER_IDENTITY_MAX);
    ck_assert_msg(n > 17 && a[n - 17] == '_' && is_hex(a + n - 16, 16), "%s", a);
    snprintf(pid, sizeof(pid), "_%ld_", (long)getpid());
    ck_assert_msg(strstr(a, pid) != NULL, "%s lacks the pid", a);
    ck_assert_int_eq(common_leader_identity(small, sizeof(small), &err), COMMON_OK);
    n = strlen(small);
    ck_assert_uint_le(n, sizeof(small) - 1);
    ck_assert_msg(is_hex(small + n - 16, 16), "random part cut: %s", small);
    ck_assert_int_eq(common_leader_identity(small, 16, &err), COMMON_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("leader core");
    TCase *tc = tcase_create("core");

    tcase_add_loop_test(tc, decide_table, 0, (int)(sizeof(decide_cases) / sizeof(decide_cases[0])));
    tcase_add_loop_test(tc, timing_table, 0, (int)(sizeof(timing_cases) / sizeof(timing_cases[0])));
    tcase_add_loop_test(tc, microtime_table, 0, (int)(sizeof(time_cases) / sizeof(time_cases[0])));
    tcase_add_test(tc, release_record_frees_the_lease_at_once);
    tcase_add_test(tc, microtime_round_trip);
    tcase_add_test(tc, identities_are_unique_and_bounded);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
