/*
 * tests/e2e/test_leader_events.c - leader election (common/leader.h) and the Event recorder
 * (common/events.h) against the real kube-apiserver of the test bed (tests/e2e/testbed/up.sh;
 * KUBECONFIG points at its admin kubeconfig). Two candidates run in this one process, each with
 * its own client and identity, as two replicas would. Each test works in a namespace of its own.
 * Takeover times are printed on standard error ("takeover after crash: 16.1 s").
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/events.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/leader.h"
#include "e2eutil.h"

#define LEASE "trainsched-e2e"
#define SLACK_S 3.0

static struct common_kube *kube; /* the test's own view of the API (admin) */
static struct common_kube *tsk;  /* trainsched's ServiceAccount: what the recorder writes with */

static struct common_kube *client(void)
{
    struct common_kubeconfig cfg;
    struct common_error err;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_kube *k;
    const char *path = getenv("KUBECONFIG");

    ck_assert_msg(path != NULL, "KUBECONFIG is not set: start the test bed first "
                                "(tests/e2e/testbed/up.sh, then source its env file)");
    memset(&cfg, 0, sizeof(cfg));
    ck_assert_msg(common_kubeconfig_load(path, NULL, &cfg, &err) == COMMON_OK, "%s", err.msg);
    o.timeout_ms = 5000; /* below the renew deadline, as leader.h asks */
    k = common_kube_client_create(&cfg, &o, &err);
    common_kubeconfig_free(&cfg);
    ck_assert_msg(k != NULL, "%s", err.msg);
    return k;
}

static void setup(void)
{
    kube = client();
    tsk = e2e_client(5000, 1);
}

static void teardown(void)
{
    common_kube_client_destroy(tsk);
    common_kube_client_destroy(kube);
    kube = NULL;
    tsk = NULL;
}

/* ---- leader election ---- */

struct cand {
    struct common_kube *kube;
    struct common_leader *le;
    char id[COMMON_LEADER_IDENTITY_MAX + 1];
    pthread_mutex_t mu;
    int started, stopped, new_leaders;
    char last_new[COMMON_LEADER_IDENTITY_MAX + 1];
};

static void on_started(void *ctx)
{
    struct cand *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->started++;
    pthread_mutex_unlock(&c->mu);
}

static void on_stopped(void *ctx)
{
    struct cand *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->stopped++;
    pthread_mutex_unlock(&c->mu);
}

static void on_new(void *ctx, const char *id)
{
    struct cand *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->new_leaders++;
    snprintf(c->last_new, sizeof(c->last_new), "%s", id);
    pthread_mutex_unlock(&c->mu);
}

static void cand_start(struct cand *c, const char *ns)
{
    struct common_error err;
    struct common_leader_callbacks cb = {on_started, on_stopped, on_new, c};

    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->kube = e2e_client(5000, 1); /* as trainsched's ServiceAccount */
    ck_assert_int_eq(common_leader_identity(c->id, sizeof(c->id), &err), COMMON_OK);
    c->le = common_leader_start(c->kube, ns, LEASE, c->id, &cb, NULL, &err);
    ck_assert_msg(c->le != NULL, "%s", err.msg);
}

static void cand_stop(struct cand *c, enum common_leader_stop_mode mode)
{
    if (!c->le)
        return;
    common_leader_stop(c->le, mode);
    c->le = NULL;
}

static void cand_free(struct cand *c)
{
    cand_stop(c, COMMON_LEADER_RELEASE);
    common_kube_client_destroy(c->kube);
    c->kube = NULL;
    pthread_mutex_destroy(&c->mu);
}

static int cand_get(struct cand *c, int *field)
{
    int v;
    pthread_mutex_lock(&c->mu);
    v = *field;
    pthread_mutex_unlock(&c->mu);
    return v;
}

/* wait until t0 + timeout_s for c to lead; returns the seconds since t0, or -1 */
static double wait_leader(struct cand *c, double t0, double timeout_s)
{
    while (e2e_now_s() - t0 < timeout_s) {
        if (c->le && common_leader_is_leader(c->le))
            return e2e_now_s() - t0;
        usleep(20000);
    }
    return -1;
}

static json_t *get_lease(const char *ns)
{
    struct common_error err;
    json_t *l = NULL;
    ck_assert_msg(common_kube_get(kube, &common_kube_leases, ns, LEASE, &l, &err) == COMMON_OK,
                  "%s", err.msg);
    return l;
}

static const char *spec_str(const json_t *lease, const char *f)
{
    return json_string_value(json_object_get(json_object_get(lease, "spec"), f));
}

static long spec_int(const json_t *lease, const char *f)
{
    return (long)json_integer_value(json_object_get(json_object_get(lease, "spec"), f));
}

START_TEST(one_leader_then_takeover_after_crash_and_after_release)
{
    char ns[64];
    struct cand a, b, c;
    struct cand *leader = NULL, *other = NULL;
    double t0, took;
    long trans0;
    json_t *l;

    e2e_make_ns(kube, "leader", ns, sizeof(ns));
    cand_start(&a, ns);
    cand_start(&b, ns);

    /* exactly one leads, and keeps leading through several renewals */
    t0 = e2e_now_s();
    while (!leader && e2e_now_s() - t0 < 10) {
        if (common_leader_is_leader(a.le))
            leader = &a, other = &b;
        else if (common_leader_is_leader(b.le))
            leader = &b, other = &a;
        else
            usleep(20000);
    }
    ck_assert_msg(leader != NULL, "nobody leads after 10 s");
    for (int i = 0; i < 60; i++) { /* 6 s: three renewals */
        int la = common_leader_is_leader(a.le), lb = common_leader_is_leader(b.le);
        ck_assert_msg(la + lb == 1, "leaders: a=%d b=%d", la, lb);
        usleep(100000);
    }
    l = get_lease(ns);
    ck_assert_str_eq(spec_str(l, "holderIdentity"), leader->id);
    ck_assert_int_eq(spec_int(l, "leaseDurationSeconds"), 15);
    ck_assert_ptr_nonnull(spec_str(l, "renewTime"));
    ck_assert_ptr_nonnull(spec_str(l, "acquireTime"));
    trans0 = spec_int(l, "leaseTransitions");
    json_decref(l);
    ck_assert_int_eq(cand_get(leader, &leader->started), 1);
    ck_assert_int_eq(cand_get(other, &other->started), 0);
    /* both were told who leads */
    ck_assert_int_ge(cand_get(other, &other->new_leaders), 1);
    pthread_mutex_lock(&other->mu);
    ck_assert_str_eq(other->last_new, leader->id);
    pthread_mutex_unlock(&other->mu);

    /* crash: the leader's thread ends without releasing; the other waits out the lease */
    t0 = e2e_now_s();
    cand_stop(leader, COMMON_LEADER_ABANDON);
    took = wait_leader(other, t0, 30);
    fprintf(stderr, "takeover after crash: %.2f s (bound %.0f s + %.0f s slack)\n", took,
            COMMON_LEADER_LEASE_DURATION_S + COMMON_LEADER_RETRY_PERIOD_S, SLACK_S);
    ck_assert_msg(took >= 0, "no takeover within 30 s");
    ck_assert_msg(took <= COMMON_LEADER_LEASE_DURATION_S + COMMON_LEADER_RETRY_PERIOD_S + SLACK_S,
                  "takeover took %.2f s", took);
    /* not before the lease could have expired: last renewal >= crash - retry period */
    ck_assert_msg(took >= COMMON_LEADER_LEASE_DURATION_S - COMMON_LEADER_RETRY_PERIOD_S - 1.0,
                  "takeover after %.2f s: before the lease expired", took);
    l = get_lease(ns);
    ck_assert_str_eq(spec_str(l, "holderIdentity"), other->id);
    ck_assert_int_eq(spec_int(l, "leaseTransitions"), trans0 + 1);
    json_decref(l);
    ck_assert_int_eq(cand_get(other, &other->started), 1);

    /* a new candidate (a restarted replica); the leader shuts down cleanly and releases */
    cand_start(&c, ns);
    sleep(3);
    ck_assert(!common_leader_is_leader(c.le));
    ck_assert(common_leader_is_leader(other->le));
    t0 = e2e_now_s();
    cand_stop(other, COMMON_LEADER_RELEASE);
    ck_assert_int_eq(cand_get(other, &other->stopped), 1);
    took = wait_leader(&c, t0, 30);
    fprintf(stderr, "takeover after release: %.2f s (from the stop call)\n", took);
    ck_assert_msg(took >= 0, "no takeover within 30 s");
    /* one retry period (jittered by up to 0.2) after the release */
    ck_assert_msg(took <= COMMON_LEADER_RETRY_PERIOD_S * 1.2 + 1.0, "takeover took %.2f s", took);
    l = get_lease(ns);
    ck_assert_str_eq(spec_str(l, "holderIdentity"), c.id);
    ck_assert_int_eq(spec_int(l, "leaseTransitions"), trans0 + 2);
    ck_assert_int_eq(spec_int(l, "leaseDurationSeconds"), 15);
    json_decref(l);

    /* the last one releases: holder empty, duration 1, as client-go's ReleaseOnCancel */
    cand_stop(&c, COMMON_LEADER_RELEASE);
    ck_assert_int_eq(cand_get(&c, &c.started), 1);
    ck_assert_int_eq(cand_get(&c, &c.stopped), 1);
    l = get_lease(ns);
    ck_assert_str_eq(spec_str(l, "holderIdentity"), "");
    ck_assert_int_eq(spec_int(l, "leaseDurationSeconds"), 1);
    ck_assert_int_eq(spec_int(l, "leaseTransitions"), trans0 + 2);
    json_decref(l);

    cand_free(&a);
    cand_free(&b);
    cand_free(&c);
    e2e_drop_ns(kube, ns);
}
END_TEST

START_TEST(start_refuses_bad_arguments)
{
    struct common_error err;
    struct common_leader_timing bad = {10, 10, 2};
    char longid[COMMON_LEADER_IDENTITY_MAX + 2];

    memset(longid, 'x', sizeof(longid) - 1);
    longid[sizeof(longid) - 1] = '\0';
    ck_assert_ptr_null(common_leader_start(kube, "default", "x", "id", NULL, &bad, &err));
    ck_assert_int_eq(err.code, COMMON_EINVAL);
    ck_assert_ptr_null(common_leader_start(kube, "default", "x", longid, NULL, NULL, &err));
    ck_assert_int_eq(err.code, COMMON_EINVAL);
    ck_assert_ptr_null(common_leader_start(kube, "", "x", "id", NULL, NULL, &err));
    ck_assert_int_eq(err.code, COMMON_EINVAL);
}
END_TEST

/* ---- events ---- */

/* our Events in ns (reportingController trainsched), as a new array */
static json_t *our_events(const char *ns)
{
    struct common_error err;
    json_t *items = NULL, *out = json_array(), *it;
    size_t i;

    ck_assert_msg(common_kube_list(kube, &common_kube_events, ns, NULL, &items, NULL, &err) ==
                      COMMON_OK,
                  "%s", err.msg);
    json_array_foreach(items, i, it)
    {
        const char *rc = json_string_value(json_object_get(it, "reportingController"));
        if (rc && strcmp(rc, "trainsched") == 0)
            json_array_append(out, it);
    }
    json_decref(items);
    return out;
}

static const json_t *event_with_reason(const json_t *evs, const char *reason)
{
    size_t i;
    const json_t *it;
    const json_t *found = NULL;
    int n = 0;

    json_array_foreach(evs, i, it)
    {
        const char *r = json_string_value(json_object_get(it, "reason"));
        if (r && strcmp(r, reason) == 0) {
            found = it;
            n++;
        }
    }
    ck_assert_msg(n == 1, "%d Events with reason %s", n, reason);
    return found;
}

static long series_count(const json_t *e)
{
    const json_t *s = json_object_get(e, "series");
    return s ? (long)json_integer_value(json_object_get(s, "count")) : 0;
}

START_TEST(events_aggregate_into_series)
{
    char ns[64], id[COMMON_LEADER_IDENTITY_MAX + 1], uid[64], longnote[2100];
    struct common_error err;
    struct common_events *ev;
    struct common_events_stats st;
    struct common_event_ref ref;
    json_t *cm, *got = NULL, *evs;
    const json_t *e;
    const char *name, *note;

    e2e_make_ns(kube, "events", ns, sizeof(ns));
    cm = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                   "name", "subject");
    ck_assert_int_eq(common_kube_create(kube, &common_kube_configmaps, ns, cm, NULL, &got, &err),
                     COMMON_OK);
    snprintf(uid, sizeof(uid), "%s",
             json_string_value(json_object_get(json_object_get(got, "metadata"), "uid")));
    json_decref(got);
    json_decref(cm);
    ref = (struct common_event_ref){"v1", "ConfigMap", ns, "subject", uid};

    ck_assert_int_eq(common_leader_identity(id, sizeof(id), &err), COMMON_OK);
    ev = common_events_create(tsk, id, NULL, &err);
    ck_assert_msg(ev != NULL, "%s", err.msg);

    /* the first occurrence: one Event, no series */
    ck_assert_int_eq(common_events_record(ev, &ref, COMMON_EVENT_NORMAL, "Admitted", "Admit",
                                          "gang of 4 admitted", &err),
                     COMMON_OK);
    ck_assert_int_eq(common_events_flush(ev, 20000), COMMON_OK);
    evs = our_events(ns);
    ck_assert_int_eq(json_array_size(evs), 1);
    e = event_with_reason(evs, "Admitted");
    ck_assert_ptr_null(json_object_get(e, "series"));
    json_decref(evs);

    /* four more: the same Event, series.count 5 */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(common_events_record(ev, &ref, COMMON_EVENT_NORMAL, "Admitted", "Admit",
                                              "gang of 4 admitted", &err),
                         COMMON_OK);
    ck_assert_int_eq(common_events_flush(ev, 20000), COMMON_OK);
    evs = our_events(ns);
    ck_assert_int_eq(json_array_size(evs), 1);
    e = event_with_reason(evs, "Admitted");
    ck_assert_int_eq(series_count(e), 5);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(e, "series"), "lastObservedTime"));
    ck_assert_str_eq(json_string_value(json_object_get(e, "type")), "Normal");
    ck_assert_str_eq(json_string_value(json_object_get(e, "action")), "Admit");
    ck_assert_str_eq(json_string_value(json_object_get(e, "note")), "gang of 4 admitted");
    ck_assert_str_eq(json_string_value(json_object_get(e, "reportingInstance")), id);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "regarding"), "uid")),
                     uid);
    name = json_string_value(json_object_get(json_object_get(e, "metadata"), "name"));
    ck_assert_msg(strncmp(name, "subject.", 8) == 0 && strlen(name) == 8 + 16, "name %s", name);
    json_decref(evs);

    /* another reason: a second Event */
    ck_assert_int_eq(common_events_record(ev, &ref, COMMON_EVENT_WARNING, "Preempted", "Preempt",
                                          "evicted by a higher priority gang", &err),
                     COMMON_OK);
    /* a long note: cut to 1024 bytes ending in "..." */
    memset(longnote, 'n', sizeof(longnote) - 1);
    longnote[sizeof(longnote) - 1] = '\0';
    ck_assert_int_eq(
        common_events_record(ev, &ref, COMMON_EVENT_WARNING, "TooLong", "Report", longnote, &err),
        COMMON_OK);
    ck_assert_int_eq(common_events_flush(ev, 20000), COMMON_OK);
    evs = our_events(ns);
    ck_assert_int_eq(json_array_size(evs), 3);
    e = event_with_reason(evs, "Preempted");
    ck_assert_str_eq(json_string_value(json_object_get(e, "type")), "Warning");
    ck_assert_ptr_null(json_object_get(e, "series"));
    e = event_with_reason(evs, "TooLong");
    note = json_string_value(json_object_get(e, "note"));
    ck_assert_uint_eq(strlen(note), COMMON_EVENTS_NOTE_MAX);
    ck_assert_str_eq(note + COMMON_EVENTS_NOTE_MAX - 3, "...");
    json_decref(evs);

    common_events_stats(ev, &st);
    ck_assert_uint_eq(st.recorded, 7);
    ck_assert_uint_eq(st.aggregated, 4);
    ck_assert_uint_eq(st.created, 3);
    ck_assert_uint_eq(st.failed, 0);
    ck_assert_uint_eq(st.rate_limited + st.queue_full, 0);

    /* bad input is refused */
    ck_assert_int_eq(common_events_record(ev, &ref, COMMON_EVENT_NORMAL, "", "Admit", NULL, &err),
                     COMMON_EINVAL);
    ck_assert_int_eq(common_events_record(ev, &ref, COMMON_EVENT_NORMAL, "R", NULL, NULL, &err),
                     COMMON_EINVAL);
    common_events_destroy(ev);
    e2e_drop_ns(kube, ns);
}
END_TEST

START_TEST(events_rate_limit_window_and_deleted_event)
{
    char ns[64];
    struct common_error err;
    struct common_events *ev;
    struct common_events_stats st;
    struct common_events_opts o = common_events_opts_default();
    struct common_event_ref pod = {"v1", "Pod", NULL, "p", NULL},
                            node = {"v1", "Node", NULL, "n1", NULL};
    json_t *evs;
    const json_t *e;

    e2e_make_ns(kube, "events-limit", ns, sizeof(ns));
    pod.namespace = ns;
    o.burst = 3;
    o.series_window_s = 1.5;
    ev = common_events_create(tsk, "e2e-instance", &o, &err);
    ck_assert_msg(ev != NULL, "%s", err.msg);

    /* five different events on one object with a burst of 3: three written */
    for (int i = 0; i < 5; i++) {
        char reason[32];
        snprintf(reason, sizeof(reason), "Reason%d", i);
        ck_assert_int_eq(
            common_events_record(ev, &pod, COMMON_EVENT_NORMAL, reason, "Act", NULL, &err),
            COMMON_OK);
    }
    ck_assert_int_eq(common_events_flush(ev, 20000), COMMON_OK);
    common_events_stats(ev, &st);
    ck_assert_uint_eq(st.created, 3);
    ck_assert_uint_eq(st.rate_limited, 2);
    evs = our_events(ns);
    ck_assert_int_eq(json_array_size(evs), 3);
    json_decref(evs);

    /* a cluster-scoped object's Events go to "default"; past the window a repeat is new */
    ck_assert_int_eq(
        common_events_record(ev, &node, COMMON_EVENT_NORMAL, "Windowed", "Act", "x", &err),
        COMMON_OK);
    ck_assert_int_eq(common_events_flush(ev, 20000), COMMON_OK);
    usleep(1700000);
    ck_assert_int_eq(
        common_events_record(ev, &node, COMMON_EVENT_NORMAL, "Windowed", "Act", "x", &err),
        COMMON_OK);
    ck_assert_int_eq(common_events_flush(ev, 20000), COMMON_OK);
    common_events_stats(ev, &st);
    ck_assert_uint_eq(st.created, 5);
    ck_assert_uint_eq(st.aggregated, 0);
    {
        json_t *all = our_events("default");
        size_t i;
        json_t *it;
        int n = 0;
        json_array_foreach(all, i, it)
        {
            const char *inst = json_string_value(json_object_get(it, "reportingInstance"));
            const char *r = json_string_value(json_object_get(it, "reason"));
            if (inst && strcmp(inst, "e2e-instance") == 0 && r && strcmp(r, "Windowed") == 0) {
                n++;
                ck_assert_ptr_null(json_object_get(it, "series"));
                common_kube_delete(
                    kube, &common_kube_events, "default",
                    json_string_value(json_object_get(json_object_get(it, "metadata"), "name")),
                    NULL, NULL, NULL, &err);
            }
        }
        ck_assert_int_eq(n, 2);
        json_decref(all);
    }

    /* a series whose Event was deleted is created again, series included */
    {
        struct common_event_ref cm = {"v1", "ConfigMap", ns, "gone", NULL};
        const char *name;
        ck_assert_int_eq(
            common_events_record(ev, &cm, COMMON_EVENT_NORMAL, "Again", "Act", "y", &err),
            COMMON_OK);
        ck_assert_int_eq(common_events_flush(ev, 20000), COMMON_OK);
        evs = our_events(ns);
        e = event_with_reason(evs, "Again");
        name = json_string_value(json_object_get(json_object_get(e, "metadata"), "name"));
        ck_assert_int_eq(
            common_kube_delete(kube, &common_kube_events, ns, name, NULL, NULL, NULL, &err),
            COMMON_OK);
        json_decref(evs);
        ck_assert_int_eq(
            common_events_record(ev, &cm, COMMON_EVENT_NORMAL, "Again", "Act", "y", &err),
            COMMON_OK);
        ck_assert_int_eq(common_events_flush(ev, 20000), COMMON_OK);
        evs = our_events(ns);
        e = event_with_reason(evs, "Again");
        ck_assert_int_eq(series_count(e), 2);
        json_decref(evs);
    }
    common_events_stats(ev, &st);
    ck_assert_uint_eq(st.failed, 0);
    common_events_destroy(ev);
    e2e_drop_ns(kube, ns);
}
END_TEST

/* ---- notes (no server needed) ---- */

START_TEST(notes_are_cut_at_a_character_boundary)
{
    char out[COMMON_EVENTS_NOTE_MAX + 1], in[2048];
    size_t n;

    ck_assert_uint_eq(common_events_note(NULL, out), 0);
    ck_assert_uint_eq(common_events_note("short", out), 5);
    ck_assert_str_eq(out, "short");
    /* exactly 1024 bytes: kept whole */
    memset(in, 'a', 1024);
    in[1024] = '\0';
    ck_assert_uint_eq(common_events_note(in, out), 1024);
    ck_assert_int_eq(memcmp(out, in, 1024), 0);
    /* 1025 bytes: 1021 + "..." */
    memset(in, 'a', 1025);
    in[1025] = '\0';
    ck_assert_uint_eq(common_events_note(in, out), 1024);
    ck_assert_str_eq(out + 1021, "...");
    /* a 3-byte character straddling byte 1021 is not split */
    memset(in, 'a', 1020);
    memcpy(in + 1020, "\xe2\x82\xac", 3); /* euro sign at 1020..1022 */
    memset(in + 1023, 'b', 100);
    in[1123] = '\0';
    n = common_events_note(in, out);
    ck_assert_uint_eq(n, 1023);
    ck_assert_str_eq(out + 1020, "...");
    /* invalid UTF-8 becomes '?' */
    common_events_note("a\xff"
                       "b\xc3",
                       out);
    ck_assert_str_eq(out, "a?b?");
    common_events_note("\xed\xa0\x80", out); /* a UTF-16 surrogate */
    ck_assert_str_eq(out, "???");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("leader election and events (real API server)");
    TCase *tc = tcase_create("api");
    TCase *pure = tcase_create("pure");
    SRunner *sr;
    int failed;

    common_alloc_init();
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, one_leader_then_takeover_after_crash_and_after_release);
    tcase_add_test(tc, start_refuses_bad_arguments);
    tcase_add_test(tc, events_aggregate_into_series);
    tcase_add_test(tc, events_rate_limit_window_and_deleted_event);
    tcase_add_test(pure, notes_are_cut_at_a_character_boundary);
    suite_add_tcase(s, pure);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
