/*
 * tests/unit/test_snapshot.c - `simulate --from-cluster`'s pure conversion (sim/snapshot.c,
 * sim_load_snapshot) and the what-if answer of `explain --what-if` (cmd/whatif.h).
 *
 * tests/fixtures/simulate-snapshot/basic/ holds API lists in the wire format (items as the API
 * serves them: managedFields, statuses, no kind on core items): 3 nodes of 8 GPUs (n1, n2 in
 * rack r0, n3 in r1) and a Node without allocatable; bound pods a-0 (8 GPUs on n1, run time 2h
 * by annotation, started 30 min before the snapshot), b-0 (4 on n2, activeDeadlineSeconds 3600,
 * started 10 min before), c-0 (2 on n3, nothing declared), ghost-0 on a node that is not there,
 * done-0 Succeeded; the gang g (PodGroup minMember 2, run time 30m, one member gated by Kueue) of
 * two pending 8-GPU pods; a pending pod with a ResourceClaim; a pending pod naming a PodGroup that
 * does not exist; a PodGroup without pods; ResourceSlices (one without a node) and a claim;
 * TrainJobs g (has pods), norunt (its runtime is missing) and old (Complete); PodGroup ran whose
 * only pod Succeeded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/whatif.h"
#include "common/arena.h"
#include "sim/sim.h"
#include "testutil.h"

#define NOW_MS 1796731200000LL /* 2026-12-08T12:00:00Z */
#define MIN 60000LL

struct snap {
    json_t *lists[6];
    struct sim_snapshot s;
    struct common_arena *a;
    struct sim_loader *l;
    struct sim_input in;
};

static const char *const files[6] = {"nodes.json",          "pods.json",
                                     "podgroups.json",      "resourceslices.json",
                                     "resourceclaims.json", "trainjobs.json"};

static void snap_load(struct snap *x, const char *name, int64_t assume)
{
    struct common_error e;

    memset(x, 0, sizeof(*x));
    for (int i = 0; i < 6; i++) {
        json_t *doc = testutil_load_json("simulate-snapshot", name, files[i]);
        x->lists[i] = json_incref(json_object_get(doc, "items"));
        json_decref(doc);
    }
    x->s.nodes = x->lists[0];
    x->s.pods = x->lists[1];
    x->s.pod_groups = x->lists[2];
    x->s.resource_slices = x->lists[3];
    x->s.resource_claims = x->lists[4];
    x->s.train_jobs = x->lists[5];
    x->s.now_ms = NOW_MS;
    x->s.assume_run_ms = assume;
    x->a = common_arena_create(0);
    x->l = sim_loader_create(x->a, NULL);
    ck_assert_ptr_nonnull(x->l);
    ck_assert_msg(sim_load_snapshot(x->l, &x->s, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(sim_loader_finish(x->l, &x->in, &e) == COMMON_OK, "%s", e.msg);
}

static void snap_free(struct snap *x)
{
    sim_loader_destroy(x->l);
    common_arena_destroy(x->a);
    for (int i = 0; i < 6; i++)
        json_decref(x->lists[i]);
}

static int has_note(const struct sim_input *in, const char *want)
{
    for (size_t i = 0; i < in->n_notes; i++)
        if (strstr(in->notes[i], want))
            return 1;
    return 0;
}

static void note(const struct sim_input *in, const char *want)
{
    if (!has_note(in, want)) {
        for (size_t i = 0; i < in->n_notes; i++)
            fprintf(stderr, "note: %s\n", in->notes[i]);
        ck_abort_msg("no note with \"%s\"", want);
    }
}

static const struct sim_load *load_of(const struct sim_input *in, const char *name)
{
    for (size_t i = 0; i < in->n_load; i++)
        if (strcmp(in->load[i].pod->name, name) == 0)
            return &in->load[i];
    return NULL;
}

static size_t job_of(const struct sim_input *in, const char *name)
{
    for (size_t i = 0; i < in->n_jobs; i++)
        if (strcmp(in->jobs[i].name, name) == 0)
            return i;
    ck_abort_msg("no job %s", name);
    return 0;
}

START_TEST(the_snapshot_becomes_nodes_load_and_waiting_jobs)
{
    struct snap x;
    const struct sim_load *ld;
    char buf[200];
    size_t g;

    snap_load(&x, "basic", 20 * MIN);
    /* the Node without allocatable is left out, named */
    ck_assert_uint_eq(x.in.n_nodes, 3);
    ck_assert_str_eq(x.in.nodes[0]->name, "n1");
    ck_assert_str_eq(x.in.nodes[2]->name, "n3");
    note(&x.in, "Node broken is left out");
    note(&x.in, "status.allocatable");
    /* bound pods that have not ended are load for their remaining time */
    ck_assert_uint_eq(x.in.n_load, 3);
    ld = load_of(&x.in, "a-0"); /* 2h annotation, 30 min run */
    ck_assert_ptr_nonnull(ld);
    ck_assert_int_eq(ld->end_ms, 90 * MIN);
    ck_assert_str_eq(ld->pod->node_name, "n1");
    ld = load_of(&x.in, "b-0"); /* activeDeadlineSeconds 3600, 10 min run */
    ck_assert_ptr_nonnull(ld);
    ck_assert_int_eq(ld->end_ms, 50 * MIN);
    ld = load_of(&x.in, "c-0"); /* nothing declared: --assume-run-time */
    ck_assert_ptr_nonnull(ld);
    ck_assert_int_eq(ld->end_ms, 20 * MIN);
    ck_assert_ptr_null(load_of(&x.in, "done-0"));
    ck_assert_ptr_null(load_of(&x.in, "ghost-0"));
    note(&x.in, "Pod default/ghost-0 runs on node gone, which the snapshot does not hold");
    /* the gang's pending members with their PodGroup; the PodGroup's run time */
    ck_assert_uint_eq(x.in.n_jobs, 2);
    g = job_of(&x.in, "default/g");
    ck_assert_str_eq(x.in.jobs[g].kind, "PodGroup");
    ck_assert_uint_eq(x.in.jobs[g].n_pods, 2);
    ck_assert_int_eq(x.in.jobs[g].pg.min_member, 2);
    ck_assert_int_eq(x.in.jobs[g].gang, 1);
    ck_assert_int_eq(x.in.jobs[g].run_ms, 30 * MIN);
    ck_assert_int_eq(x.in.jobs[g].gpus, 16);
    ck_assert_str_eq(sim_job_trainjob(&x.in.jobs[g], buf, sizeof(buf)), "default/g");
    note(&x.in, "PodGroup default/g: 1 of its pending pods carry schedulingGates other than "
                "trainsched.io/gang");
    /* a pod naming a missing PodGroup is simulated alone, its run time assumed */
    g = job_of(&x.in, "default/orphan-0");
    ck_assert_str_eq(x.in.jobs[g].kind, "Pod");
    ck_assert_int_eq(x.in.jobs[g].run_ms, 20 * MIN);
    note(&x.in, "Pod default/orphan-0 names PodGroup missing, which the snapshot does not hold");
    /* what is not modelled, named */
    note(&x.in, "PodGroup default/empty has no pods");
    ck_assert_int_eq(has_note(&x.in, "default/ran"), 0); /* its pod Succeeded: it ran */
    note(&x.in, "Pod default/claimer-0 is not simulated: ");
    note(&x.in, "spec.resourceClaims: Forbidden: simulate does not model DRA");
    note(&x.in, "ResourceSlice orphan-slice names no node");
    note(&x.in, "DRA is not modelled: 2 ResourceSlice(s) with 3 device(s) and 1 ResourceClaim(s)");
    note(&x.in, "TrainJob default/norunt is not simulated: ");
    ck_assert_int_eq(has_note(&x.in, "default/old"), 0); /* finished: not waiting */
    ck_assert_int_eq(x.in.epoch_ms, NOW_MS);
    snap_free(&x);
}
END_TEST

/* the simulation over the snapshot: the gang starts when b-0 frees n2 (50 min; n3 freed at 20
 * min), on n2 and n3 */
START_TEST(the_waiting_gang_starts_when_the_load_frees_two_nodes)
{
    struct snap x;
    struct sim_result r;
    struct common_error e;
    size_t g;

    snap_load(&x, "basic", 20 * MIN);
    ck_assert_msg(sim_run(&x.in, NULL, x.a, &r, &e) == COMMON_OK, "%s", e.msg);
    g = job_of(&x.in, "default/g");
    ck_assert_int_eq(r.jobs[g].start_ms, 50 * MIN);
    ck_assert_uint_eq(r.jobs[g].n_nodes, 2);
    ck_assert_str_eq(r.jobs[g].nodes[0], "n2");
    ck_assert_str_eq(r.jobs[g].nodes[1], "n3");
    /* with the unknown run times assumed at 2 h, n3 frees last: the gang waits for it */
    snap_free(&x);
    snap_load(&x, "basic", 120 * MIN);
    ck_assert_msg(sim_run(&x.in, NULL, x.a, &r, &e) == COMMON_OK, "%s", e.msg);
    g = job_of(&x.in, "default/g");
    ck_assert_int_eq(r.jobs[g].start_ms, 90 * MIN); /* a-0 frees n1 at 90 min */
    ck_assert_str_eq(r.jobs[g].nodes[0], "n1");
    ck_assert_str_eq(r.jobs[g].nodes[1], "n2");
    snap_free(&x);
}
END_TEST

/* empty or missing lists are no error: no nodes is the loader's message, nothing waiting is a
 * result */
START_TEST(partly_missing_lists_never_crash)
{
    struct common_arena *a = common_arena_create(0);
    struct sim_loader *l = sim_loader_create(a, NULL);
    struct sim_snapshot s = {0};
    struct sim_input in;
    struct sim_result r;
    struct common_error e;
    json_t *nodes = json_loads("[{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":"
                               "{\"cpu\":\"4\"}}}, 7, {\"metadata\":{}}]",
                               0, NULL);
    json_t *pods = json_loads("[{\"metadata\":{\"name\":\"p\",\"namespace\":\"x\"},\"spec\":"
                              "{\"nodeName\":\"n\",\"containers\":[{\"name\":\"c\",\"resources\":"
                              "{\"requests\":{\"cpu\":\"8\"}}}]},\"status\":{}}, null]",
                              0, NULL);

    s.nodes = nodes;
    s.pods = pods;
    s.now_ms = NOW_MS;
    s.assume_run_ms = 60000;
    ck_assert_msg(sim_load_snapshot(l, &s, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(sim_loader_finish(l, &in, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_uint_eq(in.n_nodes, 1);
    ck_assert_uint_eq(in.n_jobs, 0);
    ck_assert_uint_eq(in.n_load, 1); /* overcommitted is still load */
    note(&in, "nodes[1] has no metadata.name");
    note(&in, "nodes[2] has no metadata.name");
    ck_assert_msg(sim_run(&in, NULL, a, &r, &e) == COMMON_OK, "%s", e.msg);
    sim_loader_destroy(l);
    /* nodes and nothing else: nothing runs or waits, an empty report */
    l = sim_loader_create(a, NULL);
    s.pods = NULL;
    ck_assert_msg(sim_load_snapshot(l, &s, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(sim_loader_finish(l, &in, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(sim_run(&in, NULL, a, &r, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_uint_eq(r.n_samples, 0);
    {
        json_t *rep = sim_report_json(&in, &r);
        ck_assert_ptr_nonnull(rep);
        ck_assert_uint_eq(json_array_size(json_object_get(rep, "jobs")), 0);
        json_decref(rep);
    }
    sim_loader_destroy(l);
    /* no list at all: the loader's "no nodes" */
    l = sim_loader_create(a, NULL);
    memset(&s, 0, sizeof(s));
    ck_assert_int_eq(sim_load_snapshot(l, &s, &e), COMMON_OK);
    ck_assert_int_eq(sim_loader_finish(l, &in, &e), COMMON_EINVAL);
    ck_assert_msg(strstr(e.msg, "the cluster has no nodes") != NULL, "%s", e.msg);
    sim_loader_destroy(l);
    common_arena_destroy(a);
    json_decref(nodes);
    json_decref(pods);
}
END_TEST

/* explain --what-if: the TrainJob's job picked out of the report, as JSON and text */
START_TEST(what_if_names_the_trainjobs_start_and_nodes)
{
    struct snap x;
    struct sim_result r;
    struct common_error e;
    json_t *report, *w;
    char *text = NULL;
    size_t len = 0;
    FILE *f;

    snap_load(&x, "basic", 20 * MIN);
    ck_assert_msg(sim_run(&x.in, NULL, x.a, &r, &e) == COMMON_OK, "%s", e.msg);
    report = sim_report_json(&x.in, &r);
    ck_assert_ptr_nonnull(report);
    w = whatif_answer(report, "default", "g");
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(json_is_true(json_object_get(w, "found")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(w, "state")), "Completed");
    ck_assert_int_eq(json_integer_value(json_object_get(w, "startIn")), 50 * 60);
    ck_assert_str_eq(json_string_value(json_object_get(w, "startTime")), "2026-12-08T12:50:00Z");
    ck_assert_str_eq(json_string_value(json_object_get(w, "snapshotTime")), "2026-12-08T12:00:00Z");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(w, "nodes"), 0)), "n2");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(w, "nodes"), 1)), "n3");
    ck_assert_int_eq(json_integer_value(json_object_get(w, "runningPods")), 3);
    f = open_memstream(&text, &len);
    ck_assert_int_eq(whatif_text(w, f), 0);
    fclose(f);
    ck_assert_msg(strstr(text, "What if (simulated from a snapshot taken 2026-12-08T12:00:00Z, "
                               "3 running pods as load):\n") != NULL,
                  "%s", text);
    ck_assert_msg(strstr(text, "  starts in 50m (at 2026-12-08T12:50:00Z) on n2, n3\n") != NULL,
                  "%s", text);
    free(text);
    json_decref(w);
    /* a TrainJob with no waiting job: said so */
    w = whatif_answer(report, "default", "a");
    ck_assert_int_eq(json_is_false(json_object_get(w, "found")), 1);
    text = NULL;
    f = open_memstream(&text, &len);
    ck_assert_int_eq(whatif_text(w, f), 0);
    fclose(f);
    ck_assert_msg(strstr(text, "TrainJob default/a has no waiting pod") != NULL, "%s", text);
    free(text);
    json_decref(w);
    json_decref(report);
    snap_free(&x);
}
END_TEST

/* the command line: --from-cluster's flags and what they conflict with, exit 2 naming them */
static int run_cmd(int (*cmd)(int, char **, FILE *, FILE *), const char *const *args, char **errt)
{
    char *argv[16], *o = NULL;
    size_t n = 0, olen = 0, elen = 0;
    FILE *out = open_memstream(&o, &olen), *err = open_memstream(errt, &elen);
    int st;

    while (args[n]) {
        argv[n] = (char *)args[n];
        n++;
    }
    argv[n] = NULL;
    st = cmd((int)n, argv, out, err);
    fclose(out);
    fclose(err);
    free(o);
    return st;
}

START_TEST(from_cluster_flags_are_checked)
{
    static const char *const a1[] = {"simulate", "--from-cluster", "--cluster", "c.yaml", NULL};
    static const char *const a2[] = {"simulate", "-f", "j.yaml", "--kubeconfig", "k", NULL};
    static const char *const a3[] = {"simulate", "--from-cluster", "--assume-run-time", "soon",
                                     NULL};
    static const char *const a4[] = {"explain", "tj", "--topology", "t=a", NULL};
    char *e;

    ck_assert_int_eq(run_cmd(cmd_simulate, a1, &e), 2);
    ck_assert_msg(strstr(e, "--cluster: the cluster comes from the API with --from-cluster"), "%s",
                  e);
    free(e);
    ck_assert_int_eq(run_cmd(cmd_simulate, a2, &e), 2);
    ck_assert_msg(strstr(e, "--kubeconfig: only with --from-cluster"), "%s", e);
    free(e);
    ck_assert_int_eq(run_cmd(cmd_simulate, a3, &e), 2);
    ck_assert_msg(strstr(e, "--assume-run-time: \"soon\": must be a duration"), "%s", e);
    free(e);
    ck_assert_int_eq(run_cmd(cmd_explain, a4, &e), 2);
    ck_assert_msg(strstr(e, "--topology: only with --what-if"), "%s", e);
    free(e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("simulate --from-cluster");
    TCase *tc = tcase_create("snapshot");

    tcase_add_test(tc, the_snapshot_becomes_nodes_load_and_waiting_jobs);
    tcase_add_test(tc, the_waiting_gang_starts_when_the_load_frees_two_nodes);
    tcase_add_test(tc, partly_missing_lists_never_crash);
    tcase_add_test(tc, what_if_names_the_trainjobs_start_and_nodes);
    tcase_add_test(tc, from_cluster_flags_are_checked);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
