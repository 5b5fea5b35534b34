/*
 * bench/bench_ungate.c - the CPU cost of the gang core's ungating pass (gang_ungate) with many
 * gated gangs, as the extender's timer thread runs it.
 *
 * Books: NODES nodes of 8 GPUs and 64 CPUs, and GANGS PodGroups of MEMBERS pods (minMember =
 * MEMBERS), each pod asking 8 GPUs and 8 CPUs (a whole node) and gated by trainsched.io/gang
 * alone, as the pod webhook leaves them. Figures, each the median of ROUNDS rounds on fresh
 * books:
 * - first pass, empty cluster: every gang is looked at in priority then age order; the first
 *   NODES / MEMBERS are placed whole (their plans reserved) and ungated, the rest stay gated;
 * - first pass, full cluster (a running pod on every node): every gang is looked at and none
 *   fits;
 * - a pass after one pod ends (one node freed) on the full cluster: room was freed, so every
 *   gated gang is looked at again (none fits: each needs MEMBERS nodes);
 * - a pass with nothing changed (gang_ungate_pending is 0: what the timer skips).
 * The time per gang looked at is printed beside each.
 *
 * Run: ./build-rel/bench/bench_ungate [--gangs N] [--members N] [--nodes N] [--rounds N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "common/coretypes.h"
#include "gang/gang.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* pod name in ns "ml" (gang >= 0: a gated member of PodGroup g<gang>; else a running pod on
 * node n) */
static json_t *pod_json(long gang, long k, long node)
{
    char name[48], uid[64], nn[32];
    json_t *req = json_pack("{s:s, s:s}", "cpu", "8", "nvidia.com/gpu", "8");
    json_t *c =
        json_pack("{s:s, s:s, s:{s:o}}", "name", "c", "image", "x", "resources", "requests", req);
    json_t *p;

    if (gang >= 0)
        snprintf(name, sizeof(name), "g%ld-%ld", gang, k);
    else
        snprintf(name, sizeof(name), "run-%ld", node);
    snprintf(uid, sizeof(uid), "uid-%s", name);
    p = json_pack("{s:{s:s, s:s, s:s, s:{}}, s:{s:[o]}, s:{s:s}}", "metadata", "name", name,
                  "namespace", "ml", "uid", uid, "labels", "spec", "containers", c, "status",
                  "phase", gang >= 0 ? "Pending" : "Running");
    if (gang >= 0) {
        char pg[32];
        snprintf(pg, sizeof(pg), "g%ld", gang);
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"),
                            GANG_POD_GROUP_LABEL, json_string(pg));
        json_object_set_new(json_object_get(p, "spec"), "schedulingGates",
                            json_pack("[{s:s}]", "name", GANG_SCHEDULING_GATE));
    } else {
        snprintf(nn, sizeof(nn), "node-%05ld", node);
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(nn));
    }
    return p;
}

static int upsert_pod(struct gang_state *gs, json_t *j, struct common_error *e)
{
    struct common_pod *cp = NULL;
    int rc = common_pod_from_json(j, &cp, e) || gang_pod_upsert(gs, cp, e);
    common_pod_free(cp);
    json_decref(j);
    return rc;
}

/* books with nodes, (full: a running pod on each), the gated gangs */
static struct gang_state *books(long nodes, long gangs, long members, int full)
{
    struct gang_state *gs = NULL;
    struct gang_config cfg;
    struct common_error e;

    gang_config_default(&cfg);
    if (gang_state_create(&cfg, &gs, &e))
        goto bad;
    for (long n = 0; n < nodes; n++) {
        char name[32];
        json_t *j;
        struct common_node *cn = NULL;
        snprintf(name, sizeof(name), "node-%05ld", n);
        j = json_pack("{s:{s:s}, s:{s:{s:s, s:s, s:s, s:s}}}", "metadata", "name", name, "status",
                      "allocatable", "cpu", "64", "memory", "512Gi", "pods", "110",
                      "nvidia.com/gpu", "8");
        if (common_node_from_json(j, &cn, &e) || gang_node_upsert(gs, cn, &e)) {
            json_decref(j);
            common_node_free(cn);
            goto bad;
        }
        common_node_free(cn);
        json_decref(j);
        if (full && upsert_pod(gs, pod_json(-1, 0, n), &e))
            goto bad;
    }
    for (long g = 0; g < gangs; g++) {
        char name[32];
        json_t *pg;
        struct gang_podgroup gp;
        int rc;
        snprintf(name, sizeof(name), "g%ld", g);
        pg = json_pack("{s:{s:s, s:s}, s:{s:i, s:i}}", "metadata", "name", name, "namespace", "ml",
                       "spec", "minMember", (int)members, "scheduleTimeoutSeconds", 600);
        memset(&gp, 0, sizeof(gp));
        rc = gang_podgroup_from_json(pg, &gp, &e) || gang_podgroup_upsert(gs, &gp, &e);
        json_decref(pg);
        if (rc)
            goto bad;
        for (long k = 0; k < members; k++)
            if (upsert_pod(gs, pod_json(g, k, 0), &e))
                goto bad;
    }
    return gs;
bad:
    fprintf(stderr, "bench_ungate: %s\n", e.msg);
    gang_state_destroy(gs);
    return NULL;
}

struct fig {
    double secs;
    struct gang_ungate_result res;
};

static int timed_pass(struct gang_state *gs, int64_t now, struct gang_ungate *out, size_t cap,
                      struct fig *f)
{
    struct common_error e;
    double t0 = bench_thread_cpu();
    if (gang_ungate(gs, now, out, cap, &f->res, &e)) {
        fprintf(stderr, "bench_ungate: %s\n", e.msg);
        return 1;
    }
    f->secs = bench_thread_cpu() - t0;
    return 0;
}

static void row(const char *what, const double *t, const struct fig *f, long rounds)
{
    double m = bench_median(t, rounds);
    printf("  %-46s %9.2f ms %8u %8u %8u %10.1f\n", what, m * 1e3, f->res.examined, f->res.gangs,
           f->res.waiting, f->res.examined ? m * 1e6 / f->res.examined : 0.0);
}

int main(int argc, char **argv)
{
    long gangs = 1000, members = 8, nodes = 1000, rounds = 5;
    double t_empty[64], t_full[64], t_freed[64], t_idle[64], t_build = 0;
    struct fig f_empty, f_full, f_freed, f_idle;
    struct gang_ungate *out;
    size_t cap;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--gangs") == 0)
            gangs = bench_flag_long(argv[0], argc, argv, &i, 1, 100000);
        else if (strcmp(argv[i], "--members") == 0)
            members = bench_flag_long(argv[0], argc, argv, &i, 1, 1000);
        else if (strcmp(argv[i], "--nodes") == 0)
            nodes = bench_flag_long(argv[0], argc, argv, &i, 1, 100000);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = bench_flag_long(argv[0], argc, argv, &i, 1, 64);
        else {
            fprintf(stderr, "usage: %s [--gangs N] [--members N] [--nodes N] [--rounds N]\n",
                    argv[0]);
            return 2;
        }
    }
    cap = (size_t)(gangs * members);
    out = calloc(cap, sizeof(*out));
    if (!out)
        return 1;
    for (long r = 0; r < rounds; r++) {
        struct gang_state *gs;
        struct common_error e;
        double t0 = now_s();
        /* empty cluster: the first pass places what fits */
        if (!(gs = books(nodes, gangs, members, 0)))
            return 1;
        t_build += now_s() - t0;
        if (timed_pass(gs, 1000, out, cap, &f_empty))
            return 1;
        t_empty[r] = f_empty.secs;
        gang_state_destroy(gs);
        /* full cluster: nothing fits; then one pod ends and every gated gang is looked at */
        if (!(gs = books(nodes, gangs, members, 1)))
            return 1;
        if (timed_pass(gs, 1000, out, cap, &f_full))
            return 1;
        t_full[r] = f_full.secs;
        {
            json_t *j = pod_json(-1, 0, 0);
            json_object_set_new(json_object_get(j, "status"), "phase", json_string("Succeeded"));
            if (upsert_pod(gs, j, &e)) {
                fprintf(stderr, "bench_ungate: %s\n", e.msg);
                return 1;
            }
        }
        if (!gang_ungate_pending(gs, 2000)) {
            fprintf(stderr, "bench_ungate: a pod ended but no pass is pending\n");
            return 1;
        }
        if (timed_pass(gs, 2000, out, cap, &f_freed))
            return 1;
        t_freed[r] = f_freed.secs;
        if (gang_ungate_pending(gs, 3000))
            fprintf(stderr, "bench_ungate: a pass is pending with nothing changed\n");
        if (timed_pass(gs, 3000, out, cap, &f_idle))
            return 1;
        t_idle[r] = f_idle.secs;
        gang_state_destroy(gs);
    }
    printf("bench_ungate: %ld gated gangs of %ld pods (8 GPUs, 8 CPUs each) on %ld nodes x 8 GPUs, "
           "%ld rounds, CPU medians (books built in %.0f ms a round)\n",
           gangs, members, nodes, rounds, t_build * 1e3 / (double)rounds);
    printf("  %-46s %12s %8s %8s %8s %10s\n", "pass", "CPU", "looked", "ungated", "gated",
           "us/gang");
    row("first pass, empty cluster", t_empty, &f_empty, rounds);
    row("first pass, full cluster (nothing fits)", t_full, &f_full, rounds);
    row("after one pod ends (every gated gang again)", t_freed, &f_freed, rounds);
    row("nothing changed", t_idle, &f_idle, rounds);
    printf("  (looked: gangs looked at; ungated: gangs handed out whole; gated: gangs left at the "
           "gate)\n");
    printf("run: ./build-rel/bench/bench_ungate --gangs %ld --members %ld --nodes %ld --rounds "
           "%ld\n",
           gangs, members, nodes, rounds);
    free(out);
    return 0;
}
