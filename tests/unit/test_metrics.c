/*
 * tests/unit/test_metrics.c - common/metrics: the Prometheus text exposition of counters,
 * gauges and histograms (exact text, escaping, number formatting, order), the registration
 * rules, concurrent updates from several threads, the process collector and allocation failure
 * at every allocation.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/metrics.h"
#include "testutil.h"

/* the whole exposition of m as a malloc'd string */
static char *render(struct common_metrics *m)
{
    struct common_buf b;
    char *s;

    common_buf_init(&b, 1 << 20);
    ck_assert_int_eq(common_metrics_render(m, &b), COMMON_OK);
    s = strdup(b.data ? b.data : "");
    common_buf_free(&b);
    return s;
}

START_TEST(test_exact_exposition)
{
    struct common_metrics *m = common_metrics_create();
    const char *const req_labels[] = {"method", "code", NULL};
    const char *const verb[] = {"verb", NULL};
    const double bounds[] = {0.25, 1, 2.5};
    struct common_metric *c, *g, *h;
    char *text;
    const char *want = "# HELP http_requests_total Requests by method\\nand \\\\code.\n"
                       "# TYPE http_requests_total counter\n"
                       "http_requests_total{method=\"GET\",code=\"200\"} 3\n"
                       "http_requests_total{method=\"POST\",code=\"a\\\"b\\\\c\\nd\"} 1.5\n"
                       "# HELP latency_seconds Latency of extender verbs.\n"
                       "# TYPE latency_seconds histogram\n"
                       "latency_seconds_bucket{verb=\"bind\",le=\"0.25\"} 0\n"
                       "latency_seconds_bucket{verb=\"bind\",le=\"1\"} 0\n"
                       "latency_seconds_bucket{verb=\"bind\",le=\"2.5\"} 1\n"
                       "latency_seconds_bucket{verb=\"bind\",le=\"+Inf\"} 1\n"
                       "latency_seconds_sum{verb=\"bind\"} 2.5\n"
                       "latency_seconds_count{verb=\"bind\"} 1\n"
                       "latency_seconds_bucket{verb=\"filter\",le=\"0.25\"} 1\n"
                       "latency_seconds_bucket{verb=\"filter\",le=\"1\"} 3\n"
                       "latency_seconds_bucket{verb=\"filter\",le=\"2.5\"} 3\n"
                       "latency_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 4\n"
                       "latency_seconds_sum{verb=\"filter\"} 5.125\n"
                       "latency_seconds_count{verb=\"filter\"} 4\n"
                       "# HELP queue_depth Items waiting.\n"
                       "# TYPE queue_depth gauge\n"
                       "queue_depth -2.75\n"
                       "# TYPE up gauge\n"
                       "up 1\n";

    ck_assert_ptr_nonnull(m);
    /* registered out of order: the output is sorted by name */
    g = common_metrics_gauge(m, "queue_depth", "Items waiting.", NULL);
    h = common_metrics_histogram(m, "latency_seconds", "Latency of extender verbs.", verb, bounds,
                                 3);
    c = common_metrics_counter(m, "http_requests_total", "Requests by method\nand \\code.",
                               req_labels);
    ck_assert_ptr_nonnull(common_metrics_gauge(m, "up", NULL, NULL));
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(c);

    common_metric_add(c, (const char *const[]){"POST", "a\"b\\c\nd"}, 1.5);
    common_metric_add(c, (const char *const[]){"GET", "200"}, 1);
    common_metric_add(c, (const char *const[]){"GET", "200"}, 2);
    common_metric_add(c, (const char *const[]){"GET", "200"}, -5); /* counters never go down */
    common_metric_add(c, (const char *const[]){"GET", "200"}, NAN);
    common_metric_set(c, (const char *const[]){"GET", "200"}, 100); /* not a gauge: ignored */
    common_metric_set(g, NULL, 1);
    common_metric_add(g, NULL, -3.75);
    common_metric_set(common_metrics_gauge(m, "up", NULL, NULL), NULL, 1);
    common_metric_observe(h, (const char *const[]){"filter"}, 0.125);
    common_metric_observe(h, (const char *const[]){"filter"}, 0.5);
    common_metric_observe(h, (const char *const[]){"filter"}, 0.5);
    common_metric_observe(h, (const char *const[]){"filter"}, 4);
    common_metric_observe(h, (const char *const[]){"bind"}, 2.5); /* le is inclusive */
    common_metric_observe(h, NULL, 1);                            /* labels missing: ignored */

    text = render(m);
    ck_assert_str_eq(text, want);
    free(text);
    ck_assert(common_metric_value(c, (const char *const[]){"GET", "200"}) == 3);
    ck_assert(isnan(common_metric_value(c, (const char *const[]){"PUT", "200"})));
    ck_assert(common_metric_value(h, (const char *const[]){"filter"}) == 4);
    common_metrics_destroy(m);
}
END_TEST

START_TEST(test_empty_families)
{
    struct common_metrics *m = common_metrics_create();
    const char *const labels[] = {"pod", NULL};
    const double bounds[] = {1, INFINITY};
    char *text;

    /* a labelled family with no series prints nothing; unlabelled ones print zeros */
    ck_assert_ptr_nonnull(common_metrics_counter(m, "binds_total", "Binds.", labels));
    ck_assert_ptr_nonnull(common_metrics_counter(m, "errors_total", "", NULL));
    ck_assert_ptr_nonnull(common_metrics_histogram(m, "wait_seconds", "Wait.", NULL, bounds, 2));
    text = render(m);
    ck_assert_str_eq(text, "# TYPE errors_total counter\n"
                           "errors_total 0\n"
                           "# HELP wait_seconds Wait.\n"
                           "# TYPE wait_seconds histogram\n"
                           "wait_seconds_bucket{le=\"1\"} 0\n"
                           "wait_seconds_bucket{le=\"+Inf\"} 0\n"
                           "wait_seconds_sum 0\n"
                           "wait_seconds_count 0\n");
    free(text);
    common_metrics_destroy(m);
}
END_TEST

START_TEST(test_format_value)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {0, "0"},
        {-0.0, "0"},
        {1, "1"},
        {-1, "-1"},
        {42, "42"},
        {1e6, "1000000"},
        {1e15, "1000000000000000"},
        {9007199254740991.0, "9007199254740991"},
        {9007199254740992.0, "9007199254740992"},
        {1e17, "1e+17"},
        {1e300, "1e+300"},
        {0.1, "0.1"},
        {1.5, "1.5"},
        {-2.75, "-2.75"},
        {1e-7, "1e-07"},
        {1.0 / 3.0, "0.3333333333333333"},
        {123456789.25, "123456789.25"},
        {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"},
        {NAN, "NaN"},
    };
    char out[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        common_metrics_format_value(cases[i].v, out, sizeof(out));
        ck_assert_msg(strcmp(out, cases[i].want) == 0, "case %zu: got %s, want %s", i, out,
                      cases[i].want);
        if (isfinite(cases[i].v))
            ck_assert(strtod(out, NULL) == cases[i].v);
    }
}
END_TEST

START_TEST(test_escaping_and_utf8)
{
    struct common_metrics *m = common_metrics_create();
    const char *const labels[] = {"v", NULL};
    struct common_metric *g = common_metrics_gauge(m, "g", "a \"quoted\" help\\", labels);
    char *text;

    common_metric_set(g, (const char *const[]){"caf\xc3\xa9 \xe2\x9c\x93"}, 1); /* valid */
    common_metric_set(g, (const char *const[]){"bad\xff\xc3("}, 2);             /* invalid */
    common_metric_set(g, (const char *const[]){"\xed\xa0\x80"}, 3);             /* surrogate */
    common_metric_set(g, (const char *const[]){""}, 4);
    text = render(m);
    /* HELP escapes backslash and newline only; label values also the double quote */
    ck_assert_str_eq(text, "# HELP g a \"quoted\" help\\\\\n"
                           "# TYPE g gauge\n"
                           "g{v=\"\"} 4\n"
                           "g{v=\"bad?"
                           "?(\"} 2\n"
                           "g{v=\"caf\xc3\xa9 \xe2\x9c\x93\"} 1\n"
                           "g{v=\"???\"} 3\n");
    free(text);
    common_metrics_destroy(m);
}
END_TEST

static double answer(void *ctx)
{
    return *(double *)ctx;
}

START_TEST(test_registration_rules)
{
    struct common_metrics *m = common_metrics_create();
    const char *const ab[] = {"a", "b", NULL};
    const char *const ba[] = {"b", "a", NULL};
    const char *const five[] = {"a", "b", "c", "d", "e", NULL};
    const char *const dup[] = {"a", "a", NULL};
    const char *const reserved[] = {"__name", NULL};
    const char *const le[] = {"le", NULL};
    const char *const bad_label[] = {"a-b", NULL};
    const double up[] = {1, 2}, down[] = {2, 1}, nan_b[] = {1, NAN}, other[] = {1, 3};
    double v = 7;
    struct common_metric *c, *h, *f;
    char *text;

    c = common_metrics_counter(m, "ns:requests_total", "x", ab);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_eq(common_metrics_counter(m, "ns:requests_total", "other help", ab), c);
    ck_assert_ptr_null(common_metrics_counter(m, "ns:requests_total", "x", ba));
    ck_assert_ptr_null(common_metrics_counter(m, "ns:requests_total", "x", NULL));
    ck_assert_ptr_null(common_metrics_gauge(m, "ns:requests_total", "x", ab));
    ck_assert_ptr_null(common_metrics_counter(m, "1abc", "x", NULL));
    ck_assert_ptr_null(common_metrics_counter(m, "a-b", "x", NULL));
    ck_assert_ptr_null(common_metrics_counter(m, "", "x", NULL));
    ck_assert_ptr_null(common_metrics_counter(m, NULL, "x", NULL));
    ck_assert_ptr_null(common_metrics_counter(m, "x", "x", five));
    ck_assert_ptr_null(common_metrics_counter(m, "x", "x", dup));
    ck_assert_ptr_null(common_metrics_counter(m, "x", "x", reserved));
    ck_assert_ptr_null(common_metrics_counter(m, "x", "x", bad_label));
    ck_assert_ptr_nonnull(common_metrics_counter(m, "y", "x", le)); /* only histograms reserve le */
    ck_assert_ptr_null(common_metrics_histogram(m, "h", "x", le, up, 2));
    ck_assert_ptr_null(common_metrics_histogram(m, "h", "x", NULL, down, 2));
    ck_assert_ptr_null(common_metrics_histogram(m, "h", "x", NULL, nan_b, 2));
    h = common_metrics_histogram(m, "h", "x", NULL, up, 2);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_eq(common_metrics_histogram(m, "h", "x", NULL, up, 2), h);
    ck_assert_ptr_null(common_metrics_histogram(m, "h", "x", NULL, other, 2));
    ck_assert_ptr_null(common_metrics_histogram(m, "h", "x", NULL, up, 1));
    f = common_metrics_gauge_func(m, "answer", "The answer.", answer, &v);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(common_metrics_gauge_func(m, "answer", "", answer, &v), f);
    ck_assert_ptr_null(common_metrics_counter_func(m, "answer", "", answer, &v));
    ck_assert_ptr_null(common_metrics_gauge(m, "answer", "", NULL));
    ck_assert_ptr_null(common_metrics_gauge_func(m, "nofn", "", NULL, NULL));
    /* updates of the wrong kind or with NULL pointers are no-ops */
    common_metric_add(NULL, NULL, 1);
    common_metric_observe(c, ab, 1);
    common_metric_add(c, NULL, 1);
    common_metric_add(c, (const char *const[]){"x", NULL}, 1);
    common_metric_add(f, NULL, 1);
    v = 42.5;
    text = render(m);
    ck_assert_ptr_nonnull(strstr(text, "# HELP answer The answer.\n# TYPE answer gauge\n"
                                       "answer 42.5\n"));
    ck_assert_ptr_null(strstr(text, "ns:requests_total{"));
    free(text);
    common_metrics_destroy(m);
}
END_TEST

START_TEST(test_series_cap)
{
    struct common_metrics *m = common_metrics_create();
    const char *const labels[] = {"id", NULL};
    struct common_metric *c = common_metrics_counter(m, "ids_total", "", labels);
    char id[32];

    for (int i = 0; i < COMMON_METRICS_SERIES_MAX + 50; i++) {
        snprintf(id, sizeof(id), "%d", i);
        common_metric_add(c, (const char *const[]){id}, 1);
    }
    ck_assert(common_metric_value(c, (const char *const[]){"0"}) == 1);
    snprintf(id, sizeof(id), "%d", COMMON_METRICS_SERIES_MAX - 1);
    ck_assert(common_metric_value(c, (const char *const[]){id}) == 1);
    snprintf(id, sizeof(id), "%d", COMMON_METRICS_SERIES_MAX);
    ck_assert(isnan(common_metric_value(c, (const char *const[]){id})));
    common_metrics_destroy(m);
}
END_TEST

START_TEST(test_render_cap)
{
    struct common_metrics *m = common_metrics_create();
    struct common_buf b;

    ck_assert_ptr_nonnull(common_metrics_counter(m, "a_long_metric_name_total", "help", NULL));
    common_buf_init(&b, 20);
    ck_assert_int_eq(common_metrics_render(m, &b), COMMON_ETOOBIG);
    common_buf_free(&b);
    common_metrics_destroy(m);
}
END_TEST

/* ---- concurrency ---- */

#define NTHREADS 8
#define NITER 20000

struct worker {
    struct common_metric *c, *g, *h;
    int id;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    const char *const shard[] = {w->id % 2 ? "odd" : "even"};
    char mine[16];

    snprintf(mine, sizeof(mine), "t%d", w->id);
    for (int i = 0; i < NITER; i++) {
        common_metric_add(w->c, shard, 1);
        common_metric_add(w->c, (const char *const[]){mine}, 0.5);
        common_metric_add(w->g, NULL, 1);
        common_metric_observe(w->h, NULL, (double)(i % 4));
    }
    return NULL;
}

START_TEST(test_concurrent_updates)
{
    struct common_metrics *m = common_metrics_create();
    const char *const labels[] = {"shard", NULL};
    const double bounds[] = {0, 1, 2};
    struct worker w[NTHREADS];
    pthread_t t[NTHREADS];
    char *text, want[128];
    double total = 0;

    for (int i = 0; i < NTHREADS; i++) {
        w[i].c = common_metrics_counter(m, "ops_total", "", labels);
        w[i].g = common_metrics_gauge(m, "level", "", NULL);
        w[i].h = common_metrics_histogram(m, "sizes", "", NULL, bounds, 3);
        w[i].id = i;
        ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    /* render while they run: must not crash or tear */
    for (int i = 0; i < 20; i++)
        free(render(m));
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);

    ck_assert(common_metric_value(w[0].c, (const char *const[]){"even"}) ==
              (double)NTHREADS / 2 * NITER);
    ck_assert(common_metric_value(w[0].c, (const char *const[]){"odd"}) ==
              (double)NTHREADS / 2 * NITER);
    for (int i = 0; i < NTHREADS; i++) {
        char mine[16];
        snprintf(mine, sizeof(mine), "t%d", i);
        total += common_metric_value(w[0].c, (const char *const[]){mine});
    }
    ck_assert(total == (double)NTHREADS * NITER * 0.5);
    ck_assert(common_metric_value(w[0].g, NULL) == (double)NTHREADS * NITER);
    text = render(m);
    snprintf(want, sizeof(want), "sizes_bucket{le=\"0\"} %d\n", NTHREADS * NITER / 4);
    ck_assert_ptr_nonnull(strstr(text, want));
    snprintf(want, sizeof(want), "sizes_bucket{le=\"+Inf\"} %d\n", NTHREADS * NITER);
    ck_assert_ptr_nonnull(strstr(text, want));
    snprintf(want, sizeof(want), "sizes_sum %d\n", NTHREADS * NITER / 4 * 6);
    ck_assert_ptr_nonnull(strstr(text, want));
    free(text);
    common_metrics_destroy(m);
}
END_TEST

/* ---- the process collector ---- */

static double sample(const char *text, const char *name)
{
    char key[128];
    const char *p;

    snprintf(key, sizeof(key), "\n%s ", name);
    p = strstr(text, key);
    ck_assert_msg(p != NULL, "%s missing", name);
    return strtod(p + strlen(key), NULL);
}

START_TEST(test_process_collector)
{
    struct common_metrics *m = common_metrics_create();
    char *text;
    double start, now = (double)time(NULL);

    ck_assert_int_eq(common_metrics_process(m), COMMON_OK);
    ck_assert_int_eq(common_metrics_process(m), COMMON_OK); /* twice is harmless */
    text = render(m);
    ck_assert_ptr_nonnull(strstr(text, "# TYPE process_cpu_seconds_total counter\n"));
    ck_assert_ptr_nonnull(strstr(text, "# TYPE process_open_fds gauge\n"));
    ck_assert(sample(text, "process_cpu_seconds_total") >= 0);
    ck_assert(sample(text, "process_resident_memory_bytes") > 1024 * 1024);
    ck_assert(sample(text, "process_virtual_memory_bytes") >=
              sample(text, "process_resident_memory_bytes"));
    ck_assert(sample(text, "process_open_fds") >= 3);
    ck_assert(sample(text, "process_max_fds") >= sample(text, "process_open_fds"));
    start = sample(text, "process_start_time_seconds");
    ck_assert_msg(start > now - 3600 && start <= now + 2, "start %f now %f", start, now);
    free(text);
    common_metrics_destroy(m);
}
END_TEST

/* ---- allocation failure at every allocation ---- */

static enum common_rc build_and_render(void)
{
    struct common_metrics *m = common_metrics_create();
    const char *const labels[] = {"a", "b", NULL};
    const double bounds[] = {1, 2};
    struct common_metric *c, *h;
    struct common_buf b;
    enum common_rc rc = COMMON_ENOMEM;

    common_buf_init(&b, 1 << 16);
    if (!m)
        goto out;
    c = common_metrics_counter(m, "c_total", "help", labels);
    h = common_metrics_histogram(m, "h", "help", labels, bounds, 2);
    if (!c || !h || common_metrics_process(m) != COMMON_OK)
        goto out;
    for (int i = 0; i < 20; i++) {
        char v[8];
        snprintf(v, sizeof(v), "%d", i);
        common_metric_add(c, (const char *const[]){v, "x"}, 1);
        common_metric_observe(h, (const char *const[]){"x", v}, i);
    }
    rc = common_metrics_render(m, &b);
    if (rc == COMMON_OK && (!strstr(b.data, "c_total{a=\"19\",b=\"x\"} 1\n") ||
                            !strstr(b.data, "h_count{a=\"x\",b=\"9\"} 1\n")))
        rc = COMMON_ENOMEM; /* an update was dropped for want of memory */
out:
    common_buf_free(&b);
    common_metrics_destroy(m);
    return rc;
}

START_TEST(test_alloc_failure)
{
    unsigned long n;

    ck_assert_int_eq(build_and_render(), COMMON_OK);
    for (n = 1; n < 10000; n++) {
        enum common_rc rc;
        int failed;
        common_alloc_fail_at(n);
        rc = build_and_render();
        failed = common_alloc_failed();
        common_alloc_fail_at(0);
        if (!failed) {
            ck_assert_int_eq(rc, COMMON_OK);
            break;
        }
        ck_assert(rc == COMMON_OK || rc == COMMON_ENOMEM);
    }
    ck_assert_uint_gt(n, 50);
    ck_assert_uint_lt(n, 10000);
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_exact_exposition);
    tcase_add_test(tc, test_empty_families);
    tcase_add_test(tc, test_format_value);
    tcase_add_test(tc, test_escaping_and_utf8);
    tcase_add_test(tc, test_registration_rules);
    tcase_add_test(tc, test_series_cap);
    tcase_add_test(tc, test_render_cap);
    tcase_add_test(tc, test_concurrent_updates);
    tcase_add_test(tc, test_process_collector);
    tcase_add_test(tc, test_alloc_failure);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return testutil_run_suite(metrics_suite());
}
