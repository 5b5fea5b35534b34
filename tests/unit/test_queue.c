/*
 * tests/unit/test_queue.c - reconciler/queue: the work queue with client-go workqueue semantics.
 *
 * Single-threaded tests pin down the rules (backoff values, de-duplication, dirty-while-
 * processing, delayed adds, rate limiting, FIFO order, stats, allocation failure); threaded
 * tests check that shutdown wakes blocked getters even with far-off due times, and run 4
 * producers against 4 workers asserting that no key is ever held by two workers and that no
 * add is lost (each key's last add is followed by a processing). Run under ASan and TSan.
 * Timing checks only use lower bounds plus generous upper bounds; no sleep is over 200 ms.
 */
#include <check.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "reconciler/queue.h"
#include "testutil.h"

/* ---- helpers ---- */

static long mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static struct rc_queue *new_queue(long base, long max)
{
    struct rc_queue_opts o = {base, max};
    struct common_error err;
    struct rc_queue *q = rc_queue_create(&o, &err);

    ck_assert_ptr_nonnull(q);
    return q;
}

/* How long a get waits for a key the test expects: a get returns as soon as a key is ready, so
 * this only bounds a failing run; generous, so a busy machine never fails a test (no upper
 * bounds on how long a delay took: only that it was not cut short). */
#define WAIT_MS 30000

/* get with timeout; asserts the result is key (or a timeout when key is NULL) */
static void expect_get(struct rc_queue *q, long timeout_ms, const char *key)
{
    char *got = NULL;
    int rc = rc_queue_get(q, timeout_ms, &got);

    if (!key) {
        ck_assert_msg(rc == 0, "expected a timeout, got %d (%s)", rc, got ? got : "-");
        ck_assert_ptr_null(got);
        return;
    }
    ck_assert_msg(rc == 1, "expected %s, got rc %d", key, rc);
    ck_assert_str_eq(got, key);
    common_free(got);
}

static struct rc_queue_stats stats(struct rc_queue *q)
{
    struct rc_queue_stats s;

    rc_queue_stats(q, &s);
    return s;
}

/* ---- backoff ---- */

START_TEST(test_backoff)
{
    long want = 5;

    for (unsigned f = 0; f < 16; f++, want *= 2)
        ck_assert_int_eq(rc_queue_backoff_ms(5, 300000, f), want);
    ck_assert_int_eq(rc_queue_backoff_ms(5, 300000, 15), 163840);
    ck_assert_int_eq(rc_queue_backoff_ms(5, 300000, 16), 300000); /* 327680 capped */
    ck_assert_int_eq(rc_queue_backoff_ms(5, 300000, 17), 300000);
    ck_assert_int_eq(rc_queue_backoff_ms(5, 300000, 63), 300000);
    ck_assert_int_eq(rc_queue_backoff_ms(5, 300000, 64), 300000);
    ck_assert_int_eq(rc_queue_backoff_ms(5, 300000, 1000), 300000);
    ck_assert_int_eq(rc_queue_backoff_ms(5, 300000, UINT_MAX), 300000);
    /* exact cap and odd caps */
    ck_assert_int_eq(rc_queue_backoff_ms(5, 10, 1), 10);
    ck_assert_int_eq(rc_queue_backoff_ms(5, 11, 1), 10);
    ck_assert_int_eq(rc_queue_backoff_ms(5, 11, 2), 11);
    /* base above the cap */
    ck_assert_int_eq(rc_queue_backoff_ms(500, 100, 0), 100);
    /* no overflow near LONG_MAX (UBSan would catch one) */
    ck_assert_int_eq(rc_queue_backoff_ms(LONG_MAX / 2 + 1, LONG_MAX, 1), LONG_MAX);
    ck_assert_int_eq(rc_queue_backoff_ms(LONG_MAX / 4, LONG_MAX, 1), LONG_MAX / 4 * 2);
    ck_assert_int_eq(rc_queue_backoff_ms(1, LONG_MAX, 62), 1L << 62);
    ck_assert_int_eq(rc_queue_backoff_ms(1, LONG_MAX, 63), LONG_MAX);
    ck_assert_int_eq(rc_queue_backoff_ms(1, LONG_MAX, UINT_MAX), LONG_MAX);
    ck_assert_int_eq(rc_queue_backoff_ms(LONG_MAX, LONG_MAX, UINT_MAX), LONG_MAX);
    /* no base, no backoff */
    ck_assert_int_eq(rc_queue_backoff_ms(0, 300000, 7), 0);
}
END_TEST

/* ---- create / defaults ---- */

START_TEST(test_defaults)
{
    struct common_error err;
    struct rc_queue *q = rc_queue_create(NULL, &err);
    struct rc_queue_stats s;
    long t0;

    ck_assert_ptr_nonnull(q);
    s = stats(q);
    ck_assert_uint_eq(s.depth, 0);
    ck_assert_uint_eq(s.delayed, 0);
    ck_assert_uint_eq(s.processing, 0);
    ck_assert_uint_eq(s.adds, 0);
    ck_assert_uint_eq(s.retries, 0);
    ck_assert_uint_eq(rc_queue_failures(q, "ns/a"), 0);
    expect_get(q, 0, NULL);
    /* the default base is 5 ms: the first rate-limited add is ready soon, not at once */
    t0 = mono_ms();
    ck_assert_int_eq(rc_queue_add_rate_limited(q, "ns/a"), 0);
    expect_get(q, WAIT_MS, "ns/a");
    ck_assert_int_ge(mono_ms() - t0, 4);
    rc_queue_done(q, "ns/a");
    ck_assert_uint_eq(rc_queue_failures(q, "ns/a"), 1);
    rc_queue_forget(q, "ns/a");
    ck_assert_uint_eq(rc_queue_failures(q, "ns/a"), 0);
    rc_queue_destroy(q);
    rc_queue_destroy(NULL);
}
END_TEST

/* ---- de-duplication and dirty-while-processing ---- */

START_TEST(test_dedup)
{
    struct rc_queue *q = new_queue(0, 0);
    struct rc_queue_stats s;

    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(rc_queue_add(q, "ns/a"), 0);
    s = stats(q);
    ck_assert_uint_eq(s.depth, 1);
    ck_assert_uint_eq(s.adds, 1);
    expect_get(q, 0, "ns/a");
    expect_get(q, 0, NULL);

    /* added while processing: not handed out until done, then exactly once */
    ck_assert_int_eq(rc_queue_add(q, "ns/a"), 0);
    ck_assert_int_eq(rc_queue_add(q, "ns/a"), 0);
    s = stats(q);
    ck_assert_uint_eq(s.depth, 0);
    ck_assert_uint_eq(s.processing, 1);
    ck_assert_uint_eq(s.adds, 2);
    expect_get(q, 20, NULL);
    rc_queue_done(q, "ns/a");
    s = stats(q);
    ck_assert_uint_eq(s.depth, 1);
    ck_assert_uint_eq(s.processing, 0);
    expect_get(q, 0, "ns/a");
    expect_get(q, 0, NULL);
    rc_queue_done(q, "ns/a");
    expect_get(q, 0, NULL);

    /* done for a key not being processed is ignored */
    rc_queue_done(q, "ns/a");
    rc_queue_done(q, "ns/unknown");
    s = stats(q);
    ck_assert_uint_eq(s.depth, 0);
    ck_assert_uint_eq(s.processing, 0);

    /* keys are copied in */
    {
        char buf[16];

        snprintf(buf, sizeof(buf), "ns/b");
        ck_assert_int_eq(rc_queue_add(q, buf), 0);
        memset(buf, 'x', sizeof(buf) - 1);
        expect_get(q, 0, "ns/b");
        rc_queue_done(q, "ns/b");
    }
    rc_queue_destroy(q);
}
END_TEST

/* ---- delayed adds ---- */

START_TEST(test_add_after)
{
    struct rc_queue *q = new_queue(0, 0);
    struct rc_queue_stats s;
    long t0;

    /* not ready before the delay, ready after */
    t0 = mono_ms();
    ck_assert_int_eq(rc_queue_add_after(q, "ns/a", 100), 0);
    s = stats(q);
    ck_assert_uint_eq(s.depth, 0);
    ck_assert_uint_eq(s.delayed, 1);
    expect_get(q, 30, NULL);
    expect_get(q, WAIT_MS, "ns/a");
    ck_assert_int_ge(mono_ms() - t0, 99);
    s = stats(q);
    ck_assert_uint_eq(s.delayed, 0);
    rc_queue_done(q, "ns/a");

    /* delay <= 0 is now */
    ck_assert_int_eq(rc_queue_add_after(q, "ns/z", 0), 0);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/y", -5), 0);
    expect_get(q, 0, "ns/z");
    expect_get(q, 0, "ns/y");
    rc_queue_done(q, "ns/z");
    rc_queue_done(q, "ns/y");

    /* a shorter delay wins over a longer one, in either order */
    t0 = mono_ms();
    ck_assert_int_eq(rc_queue_add_after(q, "ns/b", 5000), 0);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/b", 40), 0);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/c", 40), 0);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/c", 5000), 0);
    s = stats(q);
    ck_assert_uint_eq(s.delayed, 2);
    ck_assert_uint_eq(s.adds, 6); /* a, z, y, b, b sooner, c; c later changed nothing */
    expect_get(q, WAIT_MS, "ns/b");
    expect_get(q, WAIT_MS, "ns/c");
    ck_assert_int_ge(mono_ms() - t0, 39);
    rc_queue_done(q, "ns/b");
    rc_queue_done(q, "ns/c");
    ck_assert_uint_eq(stats(q).delayed, 0);

    /* an immediate add of a delayed key makes it ready now; the delayed add stays (client-go) */
    t0 = mono_ms();
    ck_assert_int_eq(rc_queue_add_after(q, "ns/d", 60), 0);
    ck_assert_int_eq(rc_queue_add(q, "ns/d"), 0);
    s = stats(q);
    ck_assert_uint_eq(s.depth, 1);
    ck_assert_uint_eq(s.delayed, 1);
    expect_get(q, 0, "ns/d"); /* ready at once: a get that does not wait finds it */
    rc_queue_done(q, "ns/d");
    expect_get(q, WAIT_MS, "ns/d"); /* the delayed add falls due: processed again */
    ck_assert_int_ge(mono_ms() - t0, 59);
    rc_queue_done(q, "ns/d");
    s = stats(q);
    ck_assert_uint_eq(s.delayed, 0);
    ck_assert_uint_eq(s.depth, 0);

    /* a delayed key falling due while it is processed is re-queued at done */
    ck_assert_int_eq(rc_queue_add(q, "ns/e"), 0);
    expect_get(q, 0, "ns/e");
    ck_assert_int_eq(rc_queue_add_after(q, "ns/e", 10), 0);
    sleep_ms(30);
    expect_get(q, 0, NULL);
    s = stats(q);
    ck_assert_uint_eq(s.delayed, 0);
    ck_assert_uint_eq(s.depth, 0);
    rc_queue_done(q, "ns/e");
    expect_get(q, 0, "ns/e");
    rc_queue_done(q, "ns/e");

    /* keys due together leave in add order; earlier due times first */
    ck_assert_int_eq(rc_queue_add_after(q, "ns/late", 60), 0);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/early", 20), 0);
    expect_get(q, WAIT_MS, "ns/early");
    expect_get(q, WAIT_MS, "ns/late");
    rc_queue_done(q, "ns/early");
    rc_queue_done(q, "ns/late");
    rc_queue_destroy(q);
}
END_TEST

/* ---- rate limiting ---- */

START_TEST(test_rate_limited)
{
    struct rc_queue *q = new_queue(20, 80);
    const long want[] = {20, 40, 80, 80};
    struct rc_queue_stats s;

    for (unsigned i = 0; i < 4; i++) {
        long t0 = mono_ms(), dt;

        ck_assert_uint_eq(rc_queue_failures(q, "ns/a"), i);
        ck_assert_int_eq(rc_queue_add_rate_limited(q, "ns/a"), 0);
        ck_assert_uint_eq(rc_queue_failures(q, "ns/a"), i + 1);
        s = stats(q);
        ck_assert_uint_eq(s.delayed, 1);
        ck_assert_uint_eq(s.retries, i + 1);
        expect_get(q, 0, NULL);
        expect_get(q, WAIT_MS, "ns/a");
        dt = mono_ms() - t0;
        ck_assert_msg(dt >= want[i] - 1, "failure %u: waited %ld ms", i, dt);
        rc_queue_done(q, "ns/a");
    }
    /* failures are per key */
    ck_assert_uint_eq(rc_queue_failures(q, "ns/b"), 0);
    /* forget resets: the next retry waits the base delay again */
    rc_queue_forget(q, "ns/a");
    ck_assert_uint_eq(rc_queue_failures(q, "ns/a"), 0);
    {
        long t0 = mono_ms(), dt;

        /* the delay is base * 2^failures with failures 0 (rc_queue_backoff_ms, checked on its
         * own): the count is what forget resets */
        ck_assert_int_eq(rc_queue_add_rate_limited(q, "ns/a"), 0);
        ck_assert_uint_eq(rc_queue_failures(q, "ns/a"), 1);
        expect_get(q, WAIT_MS, "ns/a");
        dt = mono_ms() - t0;
        ck_assert_msg(dt >= 19, "after forget: waited %ld ms", dt);
        rc_queue_done(q, "ns/a");
    }
    /* forget while processing keeps processing state */
    ck_assert_int_eq(rc_queue_add_rate_limited(q, "ns/a"), 0);
    expect_get(q, WAIT_MS, "ns/a");
    rc_queue_forget(q, "ns/a");
    ck_assert_uint_eq(stats(q).processing, 1);
    ck_assert_int_eq(rc_queue_add(q, "ns/a"), 0);
    rc_queue_done(q, "ns/a");
    expect_get(q, 0, "ns/a");
    rc_queue_done(q, "ns/a");
    /* forget of an unknown key is harmless */
    rc_queue_forget(q, "ns/unknown");
    s = stats(q);
    ck_assert_uint_eq(s.depth, 0);
    ck_assert_uint_eq(s.delayed, 0);
    ck_assert_uint_eq(s.processing, 0);
    rc_queue_destroy(q);
}
END_TEST

/* ---- FIFO ---- */

START_TEST(test_fifo)
{
    struct rc_queue *q = new_queue(0, 0);
    char key[32];

    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof(key), "ns-%d/job-%d", i % 7, i);
        ck_assert_int_eq(rc_queue_add(q, key), 0);
    }
    /* duplicates keep their first place */
    ck_assert_int_eq(rc_queue_add(q, "ns-0/job-0"), 0);
    ck_assert_int_eq(rc_queue_add(q, "ns-3/job-10"), 0);
    ck_assert_uint_eq(stats(q).depth, 500);
    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof(key), "ns-%d/job-%d", i % 7, i);
        expect_get(q, 0, key);
        if (i == 0) /* a re-queue at done goes to the back */
            ck_assert_int_eq(rc_queue_add(q, key), 0);
        rc_queue_done(q, key);
    }
    expect_get(q, 0, "ns-0/job-0");
    rc_queue_done(q, "ns-0/job-0");
    expect_get(q, 0, NULL);
    rc_queue_destroy(q);
}
END_TEST

/* ---- stats ---- */

START_TEST(test_stats)
{
    struct rc_queue *q = new_queue(1000, 5000);
    struct rc_queue_stats s;

    ck_assert_int_eq(rc_queue_add(q, "ns/a"), 0);
    ck_assert_int_eq(rc_queue_add(q, "ns/b"), 0);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/c", 10000), 0);
    s = stats(q);
    ck_assert_uint_eq(s.depth, 2);
    ck_assert_uint_eq(s.delayed, 1);
    ck_assert_uint_eq(s.processing, 0);
    ck_assert_uint_eq(s.adds, 3);
    ck_assert_uint_eq(s.retries, 0);

    expect_get(q, 0, "ns/a");
    s = stats(q);
    ck_assert_uint_eq(s.depth, 1);
    ck_assert_uint_eq(s.delayed, 1);
    ck_assert_uint_eq(s.processing, 1);

    ck_assert_int_eq(rc_queue_add(q, "ns/a"), 0); /* dirty, not ready */
    ck_assert_int_eq(rc_queue_add(q, "ns/b"), 0); /* no-op */
    s = stats(q);
    ck_assert_uint_eq(s.depth, 1);
    ck_assert_uint_eq(s.adds, 4);

    ck_assert_int_eq(rc_queue_add_rate_limited(q, "ns/d"), 0);
    ck_assert_int_eq(rc_queue_add_rate_limited(q, "ns/d"), 0); /* later due time: no change */
    s = stats(q);
    ck_assert_uint_eq(s.delayed, 2);
    ck_assert_uint_eq(s.adds, 5);
    ck_assert_uint_eq(s.retries, 2);
    ck_assert_uint_eq(rc_queue_failures(q, "ns/d"), 2);

    rc_queue_done(q, "ns/a");
    s = stats(q);
    ck_assert_uint_eq(s.depth, 2);
    ck_assert_uint_eq(s.processing, 0);
    expect_get(q, 0, "ns/b");
    expect_get(q, 0, "ns/a");
    s = stats(q);
    ck_assert_uint_eq(s.depth, 0);
    ck_assert_uint_eq(s.delayed, 2);
    ck_assert_uint_eq(s.processing, 2);
    rc_queue_done(q, "ns/a");
    rc_queue_done(q, "ns/b");
    ck_assert_uint_eq(stats(q).processing, 0);
    /* destroy with delayed keys and failure counts left: no leak (ASan) */
    rc_queue_destroy(q);
}
END_TEST

/* ---- shutdown ---- */

struct getter {
    struct rc_queue *q;
    long timeout_ms;
    int rc;
    long elapsed_ms;
    long end_ms; /* mono_ms() when the get returned */
};

static void *getter_main(void *arg)
{
    struct getter *g = arg;
    char *key = NULL;
    long t0 = mono_ms();

    g->rc = rc_queue_get(g->q, g->timeout_ms, &key);
    g->end_ms = mono_ms();
    g->elapsed_ms = g->end_ms - t0;
    common_free(key);
    return NULL;
}

START_TEST(test_shutdown)
{
    struct rc_queue *q = new_queue(0, 0);
    struct getter g[4];
    pthread_t th[4];
    char *key = (char *)1;

    /* a far-off due time must not keep getters asleep past shutdown */
    ck_assert_int_eq(rc_queue_add_after(q, "ns/far", 60L * 60 * 1000), 0);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/huge", LONG_MAX), 0);
    ck_assert_int_eq(rc_queue_add(q, "ns/busy"), 0);
    expect_get(q, 0, "ns/busy");
    for (int i = 0; i < 4; i++) {
        g[i] = (struct getter){q, i < 3 ? -1 : LONG_MAX, 99, 0, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, getter_main, &g[i]), 0);
    }
    sleep_ms(100);
    rc_queue_shutdown(q);
    /* every getter returns (a getter left asleep would hang the join until the test's
     * timeout): no bound on how fast, and on a busy machine a getter may even start only after
     * the shutdown, which it must see too */
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_int_eq(g[i].rc, -1);
    }

    /* after shutdown: no key is handed out, adds fail, done and shutdown are harmless */
    ck_assert_int_eq(rc_queue_get(q, 0, &key), -1);
    ck_assert_ptr_null(key);
    ck_assert_int_eq(rc_queue_get(q, -1, &key), -1);
    ck_assert_int_eq(rc_queue_add(q, "ns/x"), -1);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/x", 10), -1);
    ck_assert_int_eq(rc_queue_add_rate_limited(q, "ns/x"), -1);
    ck_assert_uint_eq(rc_queue_failures(q, "ns/x"), 0);
    rc_queue_done(q, "ns/busy");
    rc_queue_shutdown(q);
    ck_assert_uint_eq(stats(q).processing, 0);
    rc_queue_destroy(q);
}
END_TEST

START_TEST(test_shutdown_with_ready_keys)
{
    struct rc_queue *q = new_queue(0, 0);
    char *key = NULL;

    ck_assert_int_eq(rc_queue_add(q, "ns/a"), 0);
    ck_assert_int_eq(rc_queue_add(q, "ns/b"), 0);
    expect_get(q, 0, "ns/a");
    ck_assert_int_eq(rc_queue_add(q, "ns/a"), 0); /* dirty */
    rc_queue_shutdown(q);
    ck_assert_int_eq(rc_queue_get(q, 100, &key), -1);
    ck_assert_ptr_null(key);
    rc_queue_done(q, "ns/a");
    ck_assert_int_eq(rc_queue_get(q, 0, &key), -1);
    rc_queue_destroy(q);
}
END_TEST

/* a getter waiting forever is woken by an add from another thread, and by a due time */
START_TEST(test_wakeup)
{
    struct rc_queue *q = new_queue(0, 0);
    struct getter g[2];
    pthread_t th[2];
    char *key = NULL;

    for (int i = 0; i < 2; i++) {
        g[i] = (struct getter){q, -1, 99, 0, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, getter_main, &g[i]), 0);
    }
    sleep_ms(30);
    ck_assert_int_eq(rc_queue_add(q, "ns/now"), 0);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/later", 50), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_int_eq(g[i].rc, 1);
    }
    ck_assert_uint_eq(stats(q).processing, 2);
    rc_queue_done(q, "ns/now");
    rc_queue_done(q, "ns/later");

    /* a getter with a short timeout leaves; the one waiting forever must still see the due key */
    g[0] = (struct getter){q, 10, 99, 0, 0};
    g[1] = (struct getter){q, -1, 99, 0, 0};
    ck_assert_int_eq(rc_queue_add_after(q, "ns/due", 1500), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, getter_main, &g[i]), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    ck_assert_int_eq(g[0].rc, 0);
    ck_assert_int_eq(g[1].rc, 1);
    rc_queue_done(q, "ns/due");
    ck_assert_int_eq(rc_queue_get(q, 0, &key), 0);
    rc_queue_destroy(q);
}
END_TEST

/*
 * Due times reach getters that went to sleep before the key was delayed: a lone getter must
 * wake earlier for a new first due time; and when the getter that was woken for it leaves on
 * its own timeout first, another waiting getter must take over the due time.
 */
START_TEST(test_wakeup_due_time)
{
    struct rc_queue *q = new_queue(0, 0);
    struct getter g[2];
    pthread_t th[2];
    long t_add;

    /* one getter asleep on an empty queue; a delayed add must shorten its sleep */
    g[0] = (struct getter){q, WAIT_MS, 99, 0, 0};
    ck_assert_int_eq(pthread_create(&th[0], NULL, getter_main, &g[0]), 0);
    sleep_ms(30);
    t_add = mono_ms();
    ck_assert_int_eq(rc_queue_add_after(q, "ns/a", 50), 0);
    ck_assert_int_eq(pthread_join(th[0], NULL), 0);
    ck_assert_int_eq(g[0].rc, 1);
    /* not before the due time, and woken for it, not at its own timeout (counted from the add:
     * on a busy machine the getter's thread may only start after it) */
    ck_assert_msg(g[0].end_ms - t_add >= 49 && g[0].elapsed_ms < WAIT_MS / 2,
                  "returned %ld ms after the add, %ld ms after it started", g[0].end_ms - t_add,
                  g[0].elapsed_ms);
    rc_queue_done(q, "ns/a");

    /* the first waiter (short timeout) is the one woken for the due time; it leaves before the
     * key is due, so the second must be woken to watch the due time */
    g[0] = (struct getter){q, 100, 99, 0, 0};
    g[1] = (struct getter){q, WAIT_MS, 99, 0, 0};
    ck_assert_int_eq(pthread_create(&th[0], NULL, getter_main, &g[0]), 0);
    sleep_ms(20);
    ck_assert_int_eq(pthread_create(&th[1], NULL, getter_main, &g[1]), 0);
    sleep_ms(20);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/b", 1500), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    ck_assert_int_eq(g[0].rc, 0);
    ck_assert_int_eq(g[1].rc, 1);
    ck_assert_msg(g[1].elapsed_ms < WAIT_MS / 2, "second getter waited %ld ms", g[1].elapsed_ms);
    rc_queue_done(q, "ns/b");
    rc_queue_destroy(q);
}
END_TEST

/* ---- allocation failure ---- */

START_TEST(test_alloc_failure)
{
    struct common_error err;
    struct rc_queue *q;
    struct rc_queue_stats s;
    char key[32], *got = NULL;
    int n;

    for (unsigned long k = 1; k <= 2; k++) {
        common_alloc_fail_at(k);
        ck_assert_ptr_null(rc_queue_create(NULL, &err));
        ck_assert_int_eq(err.code, COMMON_ENOMEM);
        common_alloc_fail_at(0);
    }
    q = new_queue(0, 0);
    /* add: entry allocation fails, then a table grow fails (64 slots hold 32 keys) */
    for (n = 0; n < 32; n++) {
        snprintf(key, sizeof(key), "ns/k%d", n);
        common_alloc_fail_at(1);
        ck_assert_int_eq(rc_queue_add(q, key), -1);
        common_alloc_fail_at(0);
        ck_assert_uint_eq(stats(q).depth, (size_t)n);
        ck_assert_int_eq(rc_queue_add(q, key), 0);
    }
    snprintf(key, sizeof(key), "ns/k%d", n);
    common_alloc_fail_at(1); /* the grow */
    ck_assert_int_eq(rc_queue_add(q, key), -1);
    common_alloc_fail_at(2); /* the entry after a good grow */
    ck_assert_int_eq(rc_queue_add(q, key), -1);
    common_alloc_fail_at(0);
    ck_assert_uint_eq(stats(q).depth, 32);
    ck_assert_int_eq(rc_queue_add(q, key), 0);
    /* an existing key needs no memory */
    common_alloc_fail_at(1);
    ck_assert_int_eq(rc_queue_add(q, "ns/k0"), 0);
    common_alloc_fail_at(0);

    /* add_after: the heap allocation fails for a known and a new key */
    common_alloc_fail_at(1);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/k1", 10000), -1);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/new", 10000), -1);
    ck_assert_int_eq(rc_queue_add_rate_limited(q, "ns/new"), -1);
    common_alloc_fail_at(0);
    ck_assert_uint_eq(rc_queue_failures(q, "ns/new"), 0);
    s = stats(q);
    ck_assert_uint_eq(s.delayed, 0);
    ck_assert_uint_eq(s.depth, 33);
    ck_assert_uint_eq(s.retries, 0);
    ck_assert_int_eq(rc_queue_add_after(q, "ns/k1", 10000), 0);
    ck_assert_uint_eq(stats(q).delayed, 1);

    /* get: the copy fails; the key stays at the front */
    common_alloc_fail_at(1);
    ck_assert_int_eq(rc_queue_get(q, 0, &got), 0);
    ck_assert_ptr_null(got);
    common_alloc_fail_at(0);
    s = stats(q);
    ck_assert_uint_eq(s.depth, 33);
    ck_assert_uint_eq(s.processing, 0);
    expect_get(q, 0, "ns/k0");
    rc_queue_done(q, "ns/k0");
    rc_queue_destroy(q);
}
END_TEST

/* ---- many producers, many workers ---- */

#define C_KEYS 200
#define C_PRODUCERS 4
#define C_WORKERS 4
#define C_ADDS 10000

struct cshared {
    struct rc_queue *q;
    char keys[C_KEYS][32];
    atomic_int held[C_KEYS];          /* 1 while a worker processes the key */
    atomic_ullong last_add[C_KEYS];   /* ticket taken just before the latest add call */
    atomic_ullong last_start[C_KEYS]; /* ticket taken just after the latest get */
    atomic_ullong ticket;
    atomic_ulong double_held, bad_keys, add_errors, processed;
};

static unsigned long long ticket_next(struct cshared *c)
{
    return atomic_fetch_add(&c->ticket, 1) + 1;
}

static void atomic_max(atomic_ullong *v, unsigned long long x)
{
    unsigned long long cur = atomic_load(v);

    while (cur < x && !atomic_compare_exchange_weak(v, &cur, x))
        ;
}

struct cproducer {
    struct cshared *c;
    uint64_t rnd;
};

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void *producer_main(void *arg)
{
    struct cproducer *p = arg;
    struct cshared *c = p->c;

    for (int i = 0; i < C_ADDS; i++) {
        uint64_t r = xorshift(&p->rnd);
        int k = (int)(r % C_KEYS), kind = (int)((r >> 32) % 16), rc;

        atomic_max(&c->last_add[k], ticket_next(c));
        if (kind == 0)
            rc = rc_queue_add_after(c->q, c->keys[k], 1 + (long)((r >> 40) % 3));
        else if (kind == 1)
            rc = rc_queue_add_rate_limited(c->q, c->keys[k]);
        else
            rc = rc_queue_add(c->q, c->keys[k]);
        if (rc != 0)
            atomic_fetch_add(&c->add_errors, 1);
        if ((r >> 48) % 64 == 0)
            sched_yield();
    }
    return NULL;
}

static int key_index(const struct cshared *c, const char *key)
{
    char *end;
    long i;
    const char *p = strchr(key, '-');

    if (!p)
        return -1;
    i = strtol(p + 1, &end, 10);
    if (i < 0 || i >= C_KEYS || strcmp(c->keys[i], key) != 0)
        return -1;
    return (int)i;
}

static void *worker_main(void *arg)
{
    struct cshared *c = arg;
    char *key;
    unsigned n = 0;

    while (rc_queue_get(c->q, -1, &key) == 1) {
        int k = key_index(c, key);

        if (k < 0) {
            atomic_fetch_add(&c->bad_keys, 1);
        } else {
            atomic_max(&c->last_start[k], ticket_next(c));
            if (atomic_exchange(&c->held[k], 1) != 0)
                atomic_fetch_add(&c->double_held, 1);
            if (++n % 8 == 0)
                sched_yield();
            if (n % 5 == 0)
                rc_queue_forget(c->q, key);
            atomic_store(&c->held[k], 0);
        }
        atomic_fetch_add(&c->processed, 1);
        rc_queue_done(c->q, key);
        common_free(key);
    }
    return NULL;
}

START_TEST(test_concurrency)
{
    static struct cshared c;
    struct cproducer prod[C_PRODUCERS];
    pthread_t pt[C_PRODUCERS], wt[C_WORKERS];
    struct rc_queue_stats s;
    long t0;

    memset(&c, 0, sizeof(c));
    c.q = new_queue(1, 4);
    for (int i = 0; i < C_KEYS; i++)
        snprintf(c.keys[i], sizeof(c.keys[i]), "job-%d/ns-%d", i, i % 9);
    for (int i = 0; i < C_WORKERS; i++)
        ck_assert_int_eq(pthread_create(&wt[i], NULL, worker_main, &c), 0);
    for (int i = 0; i < C_PRODUCERS; i++) {
        prod[i] = (struct cproducer){&c, 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1 + 8 * _i)};
        ck_assert_int_eq(pthread_create(&pt[i], NULL, producer_main, &prod[i]), 0);
    }
    for (int i = 0; i < C_PRODUCERS; i++)
        ck_assert_int_eq(pthread_join(pt[i], NULL), 0);
    /* drain: everything added must be processed without any further add */
    t0 = mono_ms();
    for (;;) {
        s = stats(c.q);
        if (s.depth == 0 && s.delayed == 0 && s.processing == 0)
            break;
        ck_assert_msg(mono_ms() - t0 < 5000,
                      "queue did not drain: depth %zu delayed %zu "
                      "processing %zu",
                      s.depth, s.delayed, s.processing);
        sleep_ms(2);
    }
    rc_queue_shutdown(c.q);
    for (int i = 0; i < C_WORKERS; i++)
        ck_assert_int_eq(pthread_join(wt[i], NULL), 0);

    ck_assert_uint_eq(atomic_load(&c.add_errors), 0);
    ck_assert_uint_eq(atomic_load(&c.bad_keys), 0);
    ck_assert_uint_eq(atomic_load(&c.double_held), 0);
    for (int k = 0; k < C_KEYS; k++) {
        unsigned long long a = atomic_load(&c.last_add[k]), st = atomic_load(&c.last_start[k]);

        ck_assert_msg(a == 0 || st > a,
                      "key %s: last add at ticket %llu, last processing "
                      "started at %llu (lost wakeup)",
                      c.keys[k], a, st);
    }
    s = stats(c.q);
    ck_assert_uint_le(atomic_load(&c.processed), s.adds);
    ck_assert_uint_le(s.adds, (uint64_t)C_PRODUCERS * C_ADDS);
    ck_assert_uint_gt(atomic_load(&c.processed), C_KEYS / 2);
    rc_queue_destroy(c.q);
}
END_TEST

static Suite *queue_suite(void)
{
    Suite *s = suite_create("queue");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 300); /* a failing run may wait WAIT_MS more than once */
    tcase_add_test(tc, test_backoff);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_dedup);
    tcase_add_test(tc, test_add_after);
    tcase_add_test(tc, test_rate_limited);
    tcase_add_test(tc, test_fifo);
    tcase_add_test(tc, test_stats);
    tcase_add_test(tc, test_shutdown);
    tcase_add_test(tc, test_shutdown_with_ready_keys);
    tcase_add_test(tc, test_wakeup);
    tcase_add_test(tc, test_wakeup_due_time);
    tcase_add_test(tc, test_alloc_failure);
    tcase_add_loop_test(tc, test_concurrency, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return testutil_run_suite(queue_suite());
}
