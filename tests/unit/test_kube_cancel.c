/*
 * tests/unit/test_kube_cancel.c - common_kube_cancel_after (common/kube.h): a client whose API
 * server does not answer (a closed port on 127.0.0.1: every connection refused) holds a caller
 * in its retries and backoffs for as long as its deadline allows; a cutoff set from another
 * thread ends the call within about the cutoff, and every later call fails at once. No cluster.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/kube.h"
#include "testutil.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* a client of https://127.0.0.1:<a port no one listens on>, 60 s per call, retries retries */
static struct common_kube *unreachable_client(int retries)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char server[64];
    struct common_kubeconfig kc;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_error err;
    struct common_kube *k;

    ck_assert_int_ge(fd, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    snprintf(server, sizeof(server), "https://127.0.0.1:%d", (int)ntohs(a.sin_port));
    memset(&kc, 0, sizeof(kc));
    kc.server = server;
    kc.insecure = 1;
    o.timeout_ms = 60000;
    o.max_retries = retries;
    k = common_kube_client_create(&kc, &o, &err);
    ck_assert_msg(k != NULL, "%s", err.msg);
    return k;
}

struct later {
    struct common_kube *k;
    long after_ms, cutoff_ms;
};

static void *cancel_later(void *arg)
{
    struct later *l = arg;
    struct timespec ts = {l->after_ms / 1000, (l->after_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    common_kube_cancel_after(l->k, l->cutoff_ms);
    return NULL;
}

/* common_kube_served retries for its whole timeout (60 s here) without a cutoff */
START_TEST(a_cutoff_ends_the_retries_of_a_call_in_progress)
{
    struct common_kube *k = unreachable_client(20);
    struct later l = {k, 300, 200};
    struct common_error err;
    pthread_t t;
    int served = -1;
    double t0 = now_s(), took;
    enum common_rc rc;

    ck_assert_int_eq(common_kube_canceled(k), 0);
    ck_assert_int_eq(pthread_create(&t, NULL, cancel_later, &l), 0);
    rc = common_kube_served(k, "/apis/x.example/v1/things?limit=1", 60000, &served, &err);
    took = now_s() - t0;
    pthread_join(t, NULL);
    ck_assert_int_ne(rc, COMMON_OK);
    ck_assert_int_eq(served, -1);
    /* the cutoff is 0.5 s after the start; allow a loaded machine 5 s more */
    ck_assert_msg(took < 5.5, "the call ended %.1f s after its start", took);
    ck_assert_int_eq(common_kube_canceled(k), 1);
    common_kube_client_destroy(k);
}
END_TEST

/* past the cutoff a call fails at once, saying why; a later cutoff lets calls through again */
START_TEST(past_the_cutoff_calls_fail_at_once)
{
    struct common_kube *k = unreachable_client(1);
    struct common_error err;
    json_t *o = NULL;
    double t0;
    enum common_rc rc;

    common_kube_cancel_after(k, 0);
    t0 = now_s();
    rc = common_kube_get(k, &common_kube_leases, "default", "x", &o, &err);
    ck_assert_int_eq(rc, COMMON_ETIMEOUT);
    ck_assert_msg(strstr(err.msg, "cancelled") != NULL, "%s", err.msg);
    ck_assert_msg(now_s() - t0 < 1.0, "took %.2f s", now_s() - t0);
    ck_assert_ptr_null(o);
    /* a cutoff 60 s away: the call is made again (and fails on the closed port as usual) */
    common_kube_cancel_after(k, 60000);
    ck_assert_int_eq(common_kube_canceled(k), 0);
    rc = common_kube_get(k, &common_kube_leases, "default", "x", &o, &err);
    ck_assert_int_ne(rc, COMMON_OK);
    ck_assert_msg(strstr(err.msg, "cancelled") == NULL, "%s", err.msg);
    common_kube_cancel_after(NULL, 0); /* a no-op */
    ck_assert_int_eq(common_kube_canceled(NULL), 0);
    common_kube_client_destroy(k);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kube cancel");
    TCase *tc = tcase_create("cancel");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_cutoff_ends_the_retries_of_a_call_in_progress);
    tcase_add_test(tc, past_the_cutoff_calls_fail_at_once);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
