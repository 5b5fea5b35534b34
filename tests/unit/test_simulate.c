/*
 * tests/unit/test_simulate.c - `trainsched simulate` (sim/ and cmd/simulate.c).
 *
 * Parts:
 *  - fixtures: every folder under tests/fixtures/simulate/ (README.md there gives the format):
 *    the cluster and jobs are loaded with sim/'s loader, simulated twice (the two JSON reports
 *    must be byte-identical: deterministic), and the report is compared with expect.yaml;
 *  - the extender's verbs: the placements the simulator makes at time 0 for a trace equal what
 *    the gang core decides when the same pods go through the extender's wire codec
 *    (ExtenderArgs decoded by extender_decode_args, gang_filter, extender_filter_answer,
 *    ExtenderBindingArgs decoded by extender_decode_bind_args, gang_bind), as the extender
 *    serves them, on books configured as serve configures them (a trace without topology, and
 *    one with topology requests and serve's --extender-topology);
 *  - bad input: every folder under tests/fixtures/simulate-bad/ runs `simulate` in-process and
 *    must exit 2 with one "error: " line naming what expect.yaml says, nothing on stdout;
 *  - the command line: the built-in cluster with an example, -o json/yaml/text, --svg, --help,
 *    bad usage, and the real binary's exit status and byte-identical output on two runs.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/yaml.h"
#include "extender/answer.h"
#include "extender/codec.h"
#include "extender/server.h"
#include "sim/sim.h"
#include "sim/sim_int.h"
#include "testutil.h"
#include "topology/topology.h"

/* ---- helpers ---- */

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

struct loaded {
    struct common_arena *a;
    struct sim_loader *l;
    struct common_yaml_docs files[3];
    size_t n;
    struct sim_input in;
};

static void loaded_free(struct loaded *x)
{
    sim_loader_destroy(x->l);
    for (size_t i = 0; i < x->n; i++)
        common_yaml_docs_free(&x->files[i]);
    common_arena_destroy(x->a);
}

/* load dir/cluster.yaml (or the built-in cluster) and dir/jobs.yaml */
static void load_case(const char *dir, struct loaded *x)
{
    char p[2048];
    struct common_error e;

    memset(x, 0, sizeof(*x));
    x->a = common_arena_create(0);
    x->l = sim_loader_create(x->a, NULL);
    ck_assert_ptr_nonnull(x->l);
    snprintf(p, sizeof(p), "%s/cluster.yaml", dir);
    if (exists(p))
        ck_assert_msg(common_yaml_load_file(p, NULL, &x->files[x->n++], &e) == COMMON_OK, "%s",
                      e.msg);
    else
        ck_assert(common_yaml_load(sim_default_cluster_yaml, strlen(sim_default_cluster_yaml),
                                   "builtin", NULL, &x->files[x->n++], &e) == COMMON_OK);
    ck_assert_msg(sim_load_cluster(x->l, &x->files[0], &e) == COMMON_OK, "%s", e.msg);
    snprintf(p, sizeof(p), "%s/jobs.yaml", dir);
    ck_assert_msg(common_yaml_load_file(p, NULL, &x->files[x->n++], &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(sim_load_jobs(x->l, &x->files[1], &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(sim_loader_finish(x->l, &x->in, &e) == COMMON_OK, "%s", e.msg);
}

/* one simulation as JSON text (malloc'd) and object (new reference) */
static char *simulate_json(struct loaded *x, const struct sim_options *opts, json_t **obj)
{
    struct sim_result r;
    struct common_error e;
    json_t *j;
    char *s;

    ck_assert_msg(sim_run(&x->in, opts, x->a, &r, &e) == COMMON_OK, "%s", e.msg);
    j = sim_report_json(&x->in, &r);
    ck_assert_ptr_nonnull(j);
    s = json_dumps(j, JSON_PRESERVE_ORDER | JSON_INDENT(1));
    ck_assert_ptr_nonnull(s);
    if (obj)
        *obj = j;
    else
        json_decref(j);
    return s;
}

static json_t *job_named(json_t *report, const char *name)
{
    size_t i;
    json_t *j;

    json_array_foreach(json_object_get(report, "jobs"), i, j)
    {
        if (strcmp(json_string_value(json_object_get(j, "name")), name) == 0)
            return j;
    }
    return NULL;
}

/* every key of want equals got's (reason, note: a substring) */
static void check_fields(const char *where, json_t *want, json_t *got)
{
    const char *k;
    json_t *v;

    json_object_foreach(want, k, v)
    {
        json_t *g = json_object_get(got, k);
        char *ws = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        char *gs = g ? json_dumps(g, JSON_ENCODE_ANY | JSON_COMPACT) : strdup("(absent)");
        if (strcmp(k, "reason") == 0 || strcmp(k, "note") == 0)
            ck_assert_msg(g && strstr(json_string_value(g), json_string_value(v)),
                          "%s: %s %s lacks %s", where, k, gs, ws);
        else if (json_is_number(v) && json_is_number(g))
            ck_assert_msg(json_number_value(v) == json_number_value(g), "%s: %s is %s, want %s",
                          where, k, gs, ws);
        else
            ck_assert_msg(g && json_equal(v, g), "%s: %s is %s, want %s", where, k, gs, ws);
        free(ws);
        free(gs);
    }
}

/* jobs in a and b start, end and run on the same nodes */
static void same_placements(const char *what, json_t *a, json_t *b)
{
    static const char *const keys[] = {"name", "start", "end", "nodes", "state", NULL};
    json_t *ja = json_object_get(a, "jobs"), *jb = json_object_get(b, "jobs");

    ck_assert_uint_eq(json_array_size(ja), json_array_size(jb));
    for (size_t i = 0; i < json_array_size(ja); i++)
        for (int k = 0; keys[k]; k++)
            ck_assert_msg(json_equal(json_object_get(json_array_get(ja, i), keys[k]),
                                     json_object_get(json_array_get(jb, i), keys[k])),
                          "%s: job %zu: %s differs when every filter is called", what, i, keys[k]);
}

/* ---- fixtures ---- */

START_TEST(fixtures)
{
    const char *root = testutil_path("simulate");
    DIR *d = opendir(root);
    struct dirent *de;
    int cases = 0;

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d))) {
        char dir[2048], p[2100];
        struct loaded x;
        struct common_yaml_docs ex;
        struct common_error e;
        struct sim_options opts;
        json_t *report, *want, *o, *v;
        char *first, *second;
        const char *k;

        if (de->d_name[0] == '.')
            continue;
        snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
        snprintf(p, sizeof(p), "%s/expect.yaml", dir);
        if (!exists(p))
            continue;
        cases++;
        ck_assert_msg(common_yaml_load_file(p, NULL, &ex, &e) == COMMON_OK, "%s", e.msg);
        want = ex.docs[0];
        ck_assert_msg(json_is_string(json_object_get(want, "rule")), "%s: no rule", de->d_name);
        load_case(dir, &x);
        memset(&opts, 0, sizeof(opts));
        o = json_object_get(want, "options");
        if (json_object_get(o, "until"))
            ck_assert(sim_parse_duration(json_string_value(json_object_get(o, "until")),
                                         &opts.until_ms, &e) == COMMON_OK);
        first = simulate_json(&x, &opts, &report);
        second = simulate_json(&x, &opts, NULL);
        ck_assert_msg(strcmp(first, second) == 0, "%s: two runs differ", de->d_name);
        free(second);
        /* cohorts (followers retried with their leader) change nothing in the report */
        opts.retry_each_pod = 1;
        second = simulate_json(&x, &opts, NULL);
        opts.retry_each_pod = 0;
        ck_assert_msg(strcmp(first, second) == 0, "%s: retrying each pod alone differs:\n%s\n%s",
                      de->d_name, first, second);
        {
            /* the saved filter calls change no placement */
            json_t *every;
            char *third;
            opts.call_every_filter = 1;
            third = simulate_json(&x, &opts, &every);
            same_placements(de->d_name, report, every);
            opts.call_every_filter = 0;
            free(third);
            json_decref(every);
        }
        json_object_foreach(json_object_get(want, "jobs"), k, v)
        {
            json_t *got = job_named(report, k);
            char where[600];
            snprintf(where, sizeof(where), "%s: job %s", de->d_name, k);
            ck_assert_msg(got != NULL, "%s: missing", where);
            check_fields(where, v, got);
        }
        if (json_object_get(want, "summary"))
            check_fields(de->d_name, json_object_get(want, "summary"),
                         json_object_get(report, "summary"));
        free(first);
        free(second);
        json_decref(report);
        common_yaml_docs_free(&ex);
        loaded_free(&x);
    }
    closedir(d);
    ck_assert_int_ge(cases, 4);
}
END_TEST

/* A busy random trace (gangs of 1-8 pods, 2-8 GPUs, some plain pods, arrivals faster than the
 * cluster drains) gives the same placements with and without the saved filter calls. */
START_TEST(saved_filters_change_no_placement_on_a_busy_trace)
{
    uint64_t r = 12345;
    struct common_buf b;
    struct common_yaml_docs cf, jf;
    struct common_error e;
    struct common_arena *a = common_arena_create(0);
    struct sim_loader *l = sim_loader_create(a, NULL);
    struct sim_input in;
    struct sim_options opts;
    json_t *x, *y;
    char *sx, *sy;
    static const char cluster[] = "apiVersion: trainsched.io/v1alpha1\nkind: SimCluster\n"
                                  "metadata: {name: gpu}\n"
                                  "spec: {blocks: 2, racksPerBlock: 3, nodesPerRack: 4}\n";

    common_buf_init(&b, (size_t)1 << 26);
    for (int i = 0; i < 150; i++) {
        int pods, gpus, plain;
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        pods = 1 + (int)(r % 8);
        gpus = 2 << (int)((r >> 8) % 3);
        plain = (r >> 16) % 5 == 0;
        if (!plain)
            common_buf_printf(&b, NULL,
                              "---\napiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                              "metadata: {name: g%d, namespace: ml, annotations: "
                              "{trainsched.io/sim-arrival: %ds, trainsched.io/sim-run-time: "
                              "%dm}}\nspec: {minMember: %d}\n",
                              i, i * 40, 20 + (int)((r >> 24) % 100), pods);
        common_buf_printf(&b, NULL, "---\napiVersion: v1\nkind: List\nitems:\n");
        for (int k = 0; k < (plain ? 1 : pods); k++) {
            char meta[160];
            if (plain)
                snprintf(meta, sizeof(meta), "annotations: {trainsched.io/sim-run-time: 45m}");
            else
                snprintf(meta, sizeof(meta), "labels: {scheduling.x-k8s.io/pod-group: g%d}", i);
            common_buf_printf(&b, NULL,
                              "- {apiVersion: v1, kind: Pod, metadata: {name: g%d-%d, namespace: "
                              "ml, %s}, spec: {containers: [{name: c, resources: {limits: "
                              "{nvidia.com/gpu: %d}}}]}}\n",
                              i, k, meta, gpus);
        }
    }
    ck_assert(common_yaml_load(cluster, strlen(cluster), "cluster", NULL, &cf, &e) == COMMON_OK);
    ck_assert_msg(common_yaml_load(b.data, b.len, "trace", NULL, &jf, &e) == COMMON_OK, "%s",
                  e.msg);
    ck_assert(sim_load_cluster(l, &cf, &e) == COMMON_OK);
    ck_assert_msg(sim_load_jobs(l, &jf, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(sim_loader_finish(l, &in, &e) == COMMON_OK, "%s", e.msg);
    memset(&opts, 0, sizeof(opts));
    {
        struct loaded lx = {.in = in};
        lx.a = a;
        char *se;
        sx = simulate_json(&lx, &opts, &x);
        opts.retry_each_pod = 1;
        se = simulate_json(&lx, &opts, NULL);
        opts.retry_each_pod = 0;
        ck_assert_msg(strcmp(sx, se) == 0, "busy trace: retrying each pod alone differs");
        free(se);
        opts.call_every_filter = 1;
        sy = simulate_json(&lx, &opts, &y);
    }
    same_placements("busy trace", x, y);
    ck_assert_int_gt(
        json_integer_value(json_object_get(json_object_get(x, "summary"), "filtersSaved")), 0);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(y, "summary"), "filtersSaved")), 0);
    ck_assert_int_gt(
        json_integer_value(json_object_get(json_object_get(x, "summary"), "jobsCompleted")), 100);
    free(sx);
    free(sy);
    json_decref(x);
    json_decref(y);
    sim_loader_destroy(l);
    common_yaml_docs_free(&cf);
    common_yaml_docs_free(&jf);
    common_buf_free(&b);
    common_arena_destroy(a);
}
END_TEST

/* A TrainJob placed pod by pod with many more pods than the cluster runs at once (8 GPUs
 * each on the built-in 32 nodes of 8): each pod's run frees capacity, and the waiting pods are
 * retried. The engine's work per pod (pod_steps: scheduling cycles, queue moves and events it
 * handled one pod at a time) stays flat from 320 to 3,200 pods (it grew with the pods when every
 * waiting pod was retried on its own each time), and the report is the same byte for byte as
 * with every pod retried on its own. */
START_TEST(a_wide_pod_by_pod_job_costs_the_same_work_per_pod_at_ten_times_the_pods)
{
    static const long sizes[] = {320, 3200};
    double per_pod[2];

    for (int k = 0; k < 2; k++) {
        char yaml[1024];
        struct common_yaml_docs cf, jf;
        struct common_error e;
        struct common_arena *a = common_arena_create(0);
        struct sim_loader *l = sim_loader_create(a, NULL);
        struct sim_input in;
        struct sim_options opts;
        struct sim_result r;

        snprintf(yaml, sizeof(yaml),
                 "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                 "metadata: {name: wide, namespace: ml}\n"
                 "spec:\n  runtimeRef: {apiGroup: trainer.kubeflow.org, kind: "
                 "ClusterTrainingRuntime, name: torch-distributed}\n"
                 "  trainer: {numNodes: %ld, resourcesPerNode: {limits: {nvidia.com/gpu: 8}}}\n",
                 sizes[k]);
        ck_assert(common_yaml_load(sim_default_cluster_yaml, strlen(sim_default_cluster_yaml),
                                   "builtin", NULL, &cf, &e) == COMMON_OK);
        ck_assert_msg(common_yaml_load(yaml, strlen(yaml), "job", NULL, &jf, &e) == COMMON_OK, "%s",
                      e.msg);
        ck_assert(sim_load_cluster(l, &cf, &e) == COMMON_OK);
        ck_assert_msg(sim_load_jobs(l, &jf, &e) == COMMON_OK, "%s", e.msg);
        ck_assert_msg(sim_loader_finish(l, &in, &e) == COMMON_OK, "%s", e.msg);
        memset(&opts, 0, sizeof(opts));
        ck_assert_msg(sim_run(&in, &opts, a, &r, &e) == COMMON_OK, "%s", e.msg);
        ck_assert_uint_eq(in.n_jobs, 1);
        ck_assert_int_eq(r.jobs[0].state, SIM_JOB_COMPLETED);
        ck_assert_uint_eq(r.binds, (uint64_t)sizes[k]);
        per_pod[k] = (double)r.pod_steps / (double)sizes[k];
        if (k == 0) {
            struct loaded lx = {.in = in, .a = a};
            char *cohorts = simulate_json(&lx, &opts, NULL), *each;
            opts.retry_each_pod = 1;
            each = simulate_json(&lx, &opts, NULL);
            ck_assert_msg(strcmp(cohorts, each) == 0, "retrying each pod alone differs");
            free(cohorts);
            free(each);
        }
        sim_loader_destroy(l);
        common_yaml_docs_free(&cf);
        common_yaml_docs_free(&jf);
        common_arena_destroy(a);
    }
    ck_assert_msg(per_pod[1] < 1.5 * per_pod[0], "steps per pod: %.1f at %ld pods, %.1f at %ld",
                  per_pod[0], sizes[0], per_pod[1], sizes[1]);
}
END_TEST

/* ---- the extender's verbs give the same placements ---- */

/* Pod JSON for the extender (what kube-scheduler sends): the pod as the simulator decoded it
 * is re-read from the fixture file by name, with the loader's uid */
static json_t *pod_json(struct loaded *x, const struct common_pod *cp)
{
    json_t *items = json_object_get(x->files[1].docs[x->files[1].n - 1], "items"), *p;
    size_t i;

    json_array_foreach(items, i, p)
    {
        json_t *meta = json_object_get(p, "metadata");
        if (strcmp(json_string_value(json_object_get(meta, "name")), cp->name) == 0) {
            json_t *c = json_deep_copy(p);
            json_t *res = json_object_get(
                json_array_get(json_object_get(json_object_get(c, "spec"), "containers"), 0),
                "resources");
            json_t *lim = json_object_get(res, "limits");
            const char *k;
            json_t *v;
            json_object_set_new(json_object_get(c, "metadata"), "uid", json_string(cp->uid));
            /* the API server's defaulting: requests from limits, quantities as strings */
            json_object_set_new(res, "requests", json_object());
            json_object_foreach(lim, k, v)
            {
                char buf[32];
                snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
                json_object_set_new(json_object_get(res, "requests"), k, json_string(buf));
            }
            json_object_del(res, "limits");
            return c;
        }
    }
    return NULL;
}

/*
 * Replay the pods of case dir at time 0 through the extender's wire codec and the gang core's
 * verbs, on books built as `trainsched serve` builds them (its gang configuration, and
 * topology, when given, as the flag --extender-topology spells it), and require the placements
 * the simulator made at time 0.
 */
/* what serve leaves out of fit (extender/server.c): the pod webhook's virtual resource */
static const char *const ignored_resources[] = {EXTENDER_GANG_RESOURCE};

/* gated: the simulation with --gang-gate, and the extender's books with every member of a
 * coscheduling gang created at the gang gate and one ungating pass (gang_ungate, as the timer
 * runs it) at time 0 before the queue: only the members it hands out (their gate removed, as
 * the watch then shows them) are offered to the queue */
static void same_as_extender_gate(const char *case_name, const char *serve_topology, int gated)
{
    char dir[2048];
    struct loaded x;
    struct sim_result r;
    struct sim_options so;
    struct common_error e;
    uint8_t *at_gate;
    size_t n_all = 0, n_ungated = 0;
    struct gang_config cfg;
    struct gang_state *s = NULL;
    size_t total_sim = 0, total_ext = 0, nnodes;
    uint32_t *sim_count, *ext_count;

    snprintf(dir, sizeof(dir), "%s", testutil_path(case_name));
    load_case(dir, &x);
    memset(&so, 0, sizeof(so));
    so.gang_gate = gated;
    ck_assert(sim_run(&x.in, &so, x.a, &r, &e) == COMMON_OK);
    nnodes = x.in.n_nodes;
    sim_count = calloc(x.in.n_jobs * nnodes, sizeof(*sim_count));
    ext_count = calloc(x.in.n_jobs * nnodes, sizeof(*ext_count));
    for (size_t i = 0; i < r.n_intervals; i++)
        if (r.intervals[i].start == 0) {
            sim_count[r.intervals[i].job * nnodes + r.intervals[i].node]++;
            total_sim++;
        }

    /* the extender's books: serve's gang configuration (the webhook's virtual resource left
     * out of fit, the shipped bind timeout) and topologies, then nodes, PodGroups and pods as
     * the watch caches feed them */
    gang_config_default(&cfg);
    cfg.bind_http_timeout_ms = x.in.gang.bind_http_timeout_ms;
    cfg.ignored_resources = ignored_resources;
    cfg.n_ignored_resources = 1;
    ck_assert(gang_state_create(&cfg, &s, &e) == COMMON_OK);
    if (serve_topology) {
        struct topo_spec ts;
        ck_assert(topo_spec_parse(serve_topology, &ts, &e) == COMMON_OK);
        ck_assert(gang_topology_set(s, ts.name, ts.levels, ts.n_levels, &e) == COMMON_OK);
    }
    for (size_t i = 0; i < nnodes; i++)
        ck_assert(gang_node_upsert(s, x.in.nodes[i], &e) == COMMON_OK);
    for (size_t j = 0; j < x.in.n_jobs; j++)
        ck_assert(gang_podgroup_upsert(s, &x.in.jobs[j].pg, &e) == COMMON_OK);
    for (size_t j = 0; j < x.in.n_jobs; j++)
        n_all += x.in.jobs[j].n_pods;
    at_gate = calloc(n_all + 1, 1);
    for (size_t j = 0, q = 0; j < x.in.n_jobs; j++)
        for (size_t k = 0; k < x.in.jobs[j].n_pods; k++, q++) {
            struct common_pod cp = *x.in.jobs[j].pods[k];
            if (gated && x.in.jobs[j].gang && x.in.jobs[j].pg.min_member > 0) {
                cp.n_scheduling_gates = 1; /* the webhook's gate */
                cp.first_scheduling_gate = GANG_SCHEDULING_GATE;
                cp.scheduling_gates = COMMON_GATE_TRAINSCHED;
                cp.trainsched_gate_index = 0;
                at_gate[q] = 1;
            }
            ck_assert(gang_pod_upsert(s, &cp, &e) == COMMON_OK);
        }
    if (gated) { /* the ungating pass: the handed-out members lose the gate */
        struct gang_ungate *ug = calloc(n_all + 1, sizeof(*ug));
        struct gang_ungate_result ur;
        ck_assert(gang_ungate(s, 0, ug, n_all, &ur, &e) == COMMON_OK);
        for (size_t i = 0; i < ur.n; i++)
            for (size_t j = 0, q = 0; j < x.in.n_jobs; j++)
                for (size_t k = 0; k < x.in.jobs[j].n_pods; k++, q++)
                    if (strcmp(x.in.jobs[j].pods[k]->uid, ug[i].pod.uid) == 0) {
                        ck_assert(gang_pod_upsert(s, x.in.jobs[j].pods[k], &e) == COMMON_OK);
                        at_gate[q] = 0;
                        n_ungated++;
                    }
        ck_assert_uint_gt(n_ungated, 0);
        free(ug);
    }
    /* kube-scheduler's queue at time 0: jobs in order, pods in order (gated ones left out) */
    for (size_t j = 0, q = 0; j < x.in.n_jobs; j++)
        for (size_t k = 0; k < x.in.jobs[j].n_pods; k++, q++) {
            const struct common_pod *cp = x.in.jobs[j].pods[k];
            if (at_gate[q])
                continue;
            struct common_arena *a = common_arena_create(0);
            json_t *args = json_object(), *names = json_array();
            struct extender_args *ea;
            struct extender_bind_args *ba;
            struct gang_node_verdict *gv = calloc(nnodes, sizeof(*gv));
            uint8_t *verdict = calloc(nnodes, 1);
            const char **reason = calloc(nnodes, sizeof(*reason)), *error_out = NULL;
            struct gang_filter_result fr;
            struct gang_bind_result br;
            const char *node = NULL;
            char *body;

            for (size_t i = 0; i < nnodes; i++)
                json_array_append_new(names, json_string(x.in.nodes[i]->name));
            json_object_set_new(args, "Pod", pod_json(&x, cp));
            json_object_set_new(args, "NodeNames", names);
            body = json_dumps(args, JSON_COMPACT);
            ck_assert(extender_decode_args(a, body, strlen(body), NULL, &ea, &e) == COMMON_OK);
            free(body);
            ck_assert(gang_filter(s, ea->pod, ea->node_names, ea->n_nodes, 0, gv, &fr, &e) ==
                      COMMON_OK);
            ck_assert(extender_filter_answer(a, gv, nnodes, &fr, verdict, reason, &error_out) ==
                      COMMON_OK);
            for (size_t i = 0; i < nnodes && !error_out && !node; i++)
                if (verdict[i] == EXTENDER_PASS)
                    node = ea->node_names[i]; /* planned members pass on one node */
            if (node && fr.n_ok > 1) {        /* kube-scheduler weighs prioritize */
                int64_t *scores = calloc(nnodes, sizeof(*scores));
                const char **ok = calloc(nnodes, sizeof(*ok));
                size_t n_ok = 0, best = 0;
                for (size_t i = 0; i < nnodes; i++)
                    if (verdict[i] == EXTENDER_PASS)
                        ok[n_ok++] = ea->node_names[i];
                ck_assert(gang_prioritize(s, ea->pod, ok, n_ok, scores, &e) == COMMON_OK);
                for (size_t i = 1; i < n_ok; i++)
                    if (scores[i] > scores[best])
                        best = i;
                node = ok[best];
                free(scores);
                free(ok);
            }
            if (node) {
                json_t *b = json_pack("{s:s, s:s, s:s, s:s}", "PodName", cp->name, "PodNamespace",
                                      cp->namespace, "PodUID", cp->uid, "Node", node);
                body = json_dumps(b, JSON_COMPACT);
                json_decref(b);
                ck_assert(extender_decode_bind_args(a, body, strlen(body), NULL, &ba, &e) ==
                          COMMON_OK);
                free(body);
                ck_assert(gang_bind(s, ba->pod_namespace, ba->pod_name, ba->pod_uid, ba->node, 0,
                                    &br, &e) == COMMON_OK);
                if (br.action == GANG_BIND_RELEASE)
                    for (size_t i = 0; i < br.n_binds; i++) {
                        struct common_pod bound;
                        size_t jj, kk, ni;
                        for (jj = 0; jj < x.in.n_jobs; jj++) {
                            for (kk = 0; kk < x.in.jobs[jj].n_pods; kk++)
                                if (strcmp(x.in.jobs[jj].pods[kk]->uid, br.binds[i].uid) == 0)
                                    break;
                            if (kk < x.in.jobs[jj].n_pods)
                                break;
                        }
                        ck_assert(jj < x.in.n_jobs);
                        for (ni = 0; ni < nnodes; ni++)
                            if (strcmp(x.in.nodes[ni]->name, br.binds[i].node) == 0)
                                break;
                        ext_count[jj * nnodes + ni]++;
                        total_ext++;
                        bound = *x.in.jobs[jj].pods[kk];
                        bound.node_name = x.in.nodes[ni]->name;
                        bound.phase = "Running";
                        ck_assert(gang_pod_upsert(s, &bound, &e) == COMMON_OK);
                    }
            }
            json_decref(args);
            free(gv);
            free(verdict);
            free(reason);
            common_arena_destroy(a);
        }
    ck_assert_uint_gt(total_sim, 0);
    ck_assert_uint_eq(total_sim, total_ext);
    for (size_t i = 0; i < x.in.n_jobs * nnodes; i++)
        ck_assert_msg(sim_count[i] == ext_count[i], "job %s node %s: simulate %u, extender %u",
                      x.in.jobs[i / nnodes].name, x.in.nodes[i % nnodes]->name, sim_count[i],
                      ext_count[i]);
    free(sim_count);
    free(ext_count);
    free(at_gate);
    gang_state_destroy(s);
    loaded_free(&x);
}

static void same_as_extender(const char *case_name, const char *serve_topology)
{
    same_as_extender_gate(case_name, serve_topology, 0);
}

START_TEST(extender_verbs_decide_the_same_placements)
{
    same_as_extender("simulate/gangs-arriving-together-are-placed-as-the-extender-places-them",
                     NULL);
}
END_TEST

/* the same with topology requests: the extender configured as serve
 * --extender-topology default=<the SimCluster's block and rack labels>,kubernetes.io/hostname */
START_TEST(extender_verbs_decide_the_same_topology_placements)
{
    same_as_extender("simulate/gangs-asking-for-racks-arriving-together-are-placed-as-the-"
                     "extender-places-them",
                     "default=cloud.provider.com/topology-block,cloud.provider.com/topology-rack,"
                     "kubernetes.io/hostname");
}
END_TEST

/* the same with the gang gate: members created gated (as the pod webhook gates them) reach the
 * queue when the ungating pass releases their gang, in the simulator as in the extender */
START_TEST(extender_verbs_decide_the_same_placements_behind_the_gang_gate)
{
    same_as_extender_gate("simulate/gangs-arriving-together-are-placed-as-the-extender-places-them",
                          NULL, 1);
    same_as_extender_gate("simulate/gangs-asking-for-racks-arriving-together-are-placed-as-the-"
                          "extender-places-them",
                          "default=cloud.provider.com/topology-block,cloud.provider.com/"
                          "topology-rack,kubernetes.io/hostname",
                          1);
}
END_TEST

/* ---- the command ---- */

struct run {
    int status;
    char *out, *err;
    size_t outlen, errlen;
};

static void run_cmd(struct run *r, const char *const *args)
{
    char *argv[64];
    int argc = 0;
    FILE *o, *e;

    argv[argc++] = "simulate";
    for (; args[argc - 1] && argc < 63; argc++)
        argv[argc] = (char *)args[argc - 1];
    argv[argc] = NULL;
    memset(r, 0, sizeof(*r));
    o = open_memstream(&r->out, &r->outlen);
    e = open_memstream(&r->err, &r->errlen);
    r->status = cmd_simulate(argc, argv, o, e);
    fclose(o);
    fclose(e);
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

START_TEST(bad_input)
{
    const char *root = testutil_path("simulate-bad");
    DIR *d = opendir(root);
    struct dirent *de;
    int cases = 0;

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d))) {
        char dir[2048], p[2100], cl[2100], jobs[2100], jobdir[2100];
        json_int_t lines;
        struct common_yaml_docs ex;
        struct common_error e;
        const char *args[16];
        int n = 0;
        struct run r;
        json_t *says, *v;
        size_t i;

        if (de->d_name[0] == '.')
            continue;
        snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
        snprintf(p, sizeof(p), "%s/expect.yaml", dir);
        if (!exists(p))
            continue;
        cases++;
        ck_assert_msg(common_yaml_load_file(p, NULL, &ex, &e) == COMMON_OK, "%s", e.msg);
        snprintf(cl, sizeof(cl), "%s/cluster.yaml", dir);
        snprintf(jobs, sizeof(jobs), "%s/jobs.yaml", dir);
        if (exists(cl)) {
            args[n++] = "--cluster";
            args[n++] = cl;
        }
        snprintf(jobdir, sizeof(jobdir), "%s/jobs", dir);
        args[n++] = "-f";
        /* jobs/: a folder of job files, read in name order (objects in two files) */
        args[n++] = exists(jobs)     ? jobs
                    : exists(jobdir) ? jobdir
                                     : TS_SOURCE_DIR "/examples/torch-gpu.yaml";
        args[n] = NULL;
        run_cmd(&r, args);
        ck_assert_msg(r.status == 2, "%s: exit %d, stderr %s", de->d_name, r.status, r.err);
        ck_assert_msg(r.outlen == 0, "%s: output on stdout", de->d_name);
        /* one "error: " line, or lines: N of them (every field error of a TrainJob, as render
         * prints them) */
        lines = json_integer_value(json_object_get(ex.docs[0], "lines"));
        if (lines < 1)
            lines = 1;
        {
            json_int_t got = 0;
            for (const char *q = r.err; q && *q; q = strchr(q, '\n') ? strchr(q, '\n') + 1 : NULL) {
                ck_assert_msg(strncmp(q, "error: ", 7) == 0, "%s: a line without error: %s",
                              de->d_name, r.err);
                got++;
            }
            ck_assert_msg(got == lines && r.errlen && r.err[r.errlen - 1] == '\n',
                          "%s: %lld error lines, want %lld: %s", de->d_name, (long long)got,
                          (long long)lines, r.err);
        }
        says = json_object_get(ex.docs[0], "says");
        ck_assert_msg(json_array_size(says) > 0, "%s: expect.yaml has no says", de->d_name);
        json_array_foreach(says, i, v)
        {
            const char *want = json_string_value(v), *at;
            char expanded[2400];
            size_t len = 0;
            /* {dir} anywhere: the case folder */
            while ((at = strstr(want, "{dir}")) && len < sizeof(expanded)) {
                len += (size_t)snprintf(expanded + len, sizeof(expanded) - len, "%.*s%s",
                                        (int)(at - want), want, dir);
                want = at + 5;
            }
            if (len && len < sizeof(expanded)) {
                snprintf(expanded + len, sizeof(expanded) - len, "%s", want);
                want = expanded;
            }
            ck_assert_msg(strstr(r.err, want), "%s: message lacks \"%s\": %s", de->d_name, want,
                          r.err);
        }
        run_free(&r);
        common_yaml_docs_free(&ex);
    }
    closedir(d);
    ck_assert_int_ge(cases, 8);
}
END_TEST

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* -f and --cluster take folders as render's -f does: their .yaml, .yml and .json files in name
 * order (a folder was "read failed: Is a directory" before) */
START_TEST(folders_are_read_as_render_reads_them)
{
    static const char fx[] =
        TS_SOURCE_DIR "/tests/fixtures/simulate/"
                      "a-gang-requiring-a-rack-waits-until-one-rack-frees-rather-than-spreading";
    char jobs[] = "/tmp/test-simulate-jobs-XXXXXX", cl[] = "/tmp/test-simulate-cl-XXXXXX";
    char p[300], src[300];
    struct run r, want;
    char *text;

    ck_assert_ptr_nonnull(mkdtemp(jobs));
    ck_assert_ptr_nonnull(mkdtemp(cl));
    snprintf(src, sizeof(src), "%s/jobs.yaml", fx);
    text = testutil_read(src);
    snprintf(p, sizeof(p), "%s/jobs.yaml", jobs);
    put_file(p, text);
    free(text);
    snprintf(src, sizeof(src), "%s/cluster.yaml", fx);
    text = testutil_read(src);
    snprintf(p, sizeof(p), "%s/cluster.yml", cl);
    put_file(p, text);
    free(text);
    snprintf(p, sizeof(p), "%s/notes.txt", cl); /* not a manifest: skipped */
    put_file(p, "not yaml: [");

    snprintf(src, sizeof(src), "%s/jobs.yaml", fx);
    snprintf(p, sizeof(p), "%s/cluster.yaml", fx);
    run_cmd(&want, (const char *[]){"-f", src, "--cluster", p, NULL});
    ck_assert_msg(want.status == 0, "%s", want.err);
    run_cmd(&r, (const char *[]){"-f", jobs, "--cluster", cl, NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_str_eq(r.out, want.out);
    run_free(&r);
    run_free(&want);

    snprintf(p, sizeof(p), "%s/cluster.yml", cl);
    unlink(p);
    run_cmd(&r, (const char *[]){"-f", jobs, "--cluster", cl, NULL});
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "no .yaml, .yml or .json file in the folder"), "%s", r.err);
    run_free(&r);
    snprintf(p, sizeof(p), "%s/notes.txt", cl);
    unlink(p);
    snprintf(p, sizeof(p), "%s/jobs.yaml", jobs);
    unlink(p);
    rmdir(cl);
    rmdir(jobs);
}
END_TEST

START_TEST(command_line)
{
    struct run r;
    char svg[] = "/tmp/test-simulate-XXXXXX";
    int fd = mkstemp(svg);
    const char *ex = TS_SOURCE_DIR "/examples/torch-gpu.yaml";

    ck_assert_int_ge(fd, 0);
    close(fd);
    run_cmd(&r, (const char *[]){"-f", ex, NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert(strstr(r.out, "default/torch-gpu") && strstr(r.out, "Completed"));
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", ex, "-o", "json", "--svg", svg, NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    {
        json_error_t je;
        json_t *j = json_loads(r.out, 0, &je);
        char *s = testutil_read(svg);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(json_integer_value(json_object_get(
                             json_array_get(json_object_get(j, "jobs"), 0), "gpus")),
                         16);
        ck_assert(strstr(s, "<svg") && strstr(s, "</svg>") && strstr(s, "default/torch-gpu"));
        free(s);
        json_decref(j);
    }
    run_free(&r);
    unlink(svg);
    run_cmd(&r, (const char *[]){"-f", ex, "-o", "yaml", NULL});
    ck_assert_msg(r.status == 0 && strstr(r.out, "jobsCompleted: 1"), "%s%s", r.out, r.err);
    run_free(&r);
    /* -f=FILE, as render and kubectl take it (it was read as the file "=FILE") */
    {
        char eq[600];
        snprintf(eq, sizeof(eq), "-f=%s", ex);
        run_cmd(&r, (const char *[]){eq, NULL});
        ck_assert_msg(r.status == 0 && strstr(r.out, "default/torch-gpu"), "%s", r.err);
        run_free(&r);
    }
    run_cmd(&r, (const char *[]){"--help", NULL});
    ck_assert(r.status == 0 && strstr(r.out, "Usage: trainsched simulate"));
    run_free(&r);
    run_cmd(&r, (const char *[]){NULL});
    ck_assert(r.status == 2 && strstr(r.err, "no job files"));
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", ex, "-o", "xml", NULL});
    ck_assert(r.status == 2 && strstr(r.err, "unknown format"));
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", ex, "--until", "-5s", NULL});
    ck_assert(r.status == 2 && strstr(r.err, "--until: must not be negative"));
    run_free(&r);
    /* 0 is not "no limit" on the command line: refused naming the flag */
    run_cmd(&r, (const char *[]){"-f", ex, "--until", "0s", NULL});
    ck_assert_msg(r.status == 2 && strstr(r.err, "--until 0s: must be greater than 0") &&
                      r.outlen == 0,
                  "%s%s", r.out, r.err);
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", ex, "--gpu-resource", "", NULL});
    ck_assert_msg(r.status == 2 && strstr(r.err, "--gpu-resource: Invalid value: \"\"") &&
                      r.outlen == 0,
                  "%s%s", r.out, r.err);
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", "-", "-f", "-", NULL});
    ck_assert_msg(r.status == 2 && strstr(r.err, "-f -: \"-\" (standard input) is given twice"),
                  "%s", r.err);
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", "-", "--cluster", "-", NULL});
    ck_assert_msg(r.status == 2 &&
                      strstr(r.err, "--cluster -: \"-\" (standard input) is given twice"),
                  "%s", r.err);
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", ex, "--bogus", NULL});
    ck_assert(r.status == 2 && strstr(r.err, "unknown option --bogus"));
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", ex, "--until", "30m", NULL});
    ck_assert_msg(r.status == 0 && strstr(r.out, "Running"), "%s", r.out);
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", ex, "--topology", "x=a,,b", NULL});
    ck_assert_msg(r.status == 2 && strstr(r.err, "--topology x=a,,b") &&
                      strstr(r.err, "level 1 is empty"),
                  "%s", r.err);
    run_free(&r);
    /* a level is a node label key (Kueue's and KAI's Topology nodeLabel) */
    run_cmd(&r, (const char *[]){"-f", ex, "--topology", "x=example.com/rack,bad key", NULL});
    ck_assert_msg(r.status == 2 && strstr(r.err, "level 1 \"bad key\" is not a node label key"),
                  "%s", r.err);
    run_free(&r);
}
END_TEST

/* The report's forms: the text report says a distributed job never ran whole and lists its
 * waves, uses singular and plural, rounds waits to seconds and lists nodes in natural order;
 * JSON floats are short; -o=json is taken; --svg is checked before the run with the OS's
 * reason; the SVG's time ticks are round and waiting time is drawn. */
START_TEST(report_text_and_svg)
{
    static const char fx[] = TS_SOURCE_DIR "/tests/fixtures/simulate/";
    char cl[600], jobs[600], svg[] = "/tmp/test-simulate-svg-XXXXXX";
    struct run r;
    int fd = mkstemp(svg);

    ck_assert_int_ge(fd, 0);
    close(fd);
    /* a job of backend none on too small a cluster: Completed, but never whole */
    snprintf(cl, sizeof(cl), "%s%s/cluster.yaml", fx,
             "a-distributed-job-without-a-gang-that-never-ran-whole-shows-its-waves");
    snprintf(jobs, sizeof(jobs), "%s%s/jobs.yaml", fx,
             "a-distributed-job-without-a-gang-that-never-ran-whole-shows-its-waves");
    run_cmd(&r, (const char *[]){"--cluster", cl, "-f", jobs, "--svg", svg, NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "never ran whole: at most 2 of its 3 pods ran at once, in 2 waves "
                                "(2 at 0s, 1 at 1h)") &&
                      strstr(r.out, "Summary: 1 job: 1 completed (1 never ran whole), 0 running"),
                  "%s", r.out);
    {
        /* ends at 2h: ticks every 15m (not at tenths, 12m), the hour of waiting drawn */
        char *s = testutil_read(svg);
        ck_assert_msg(strstr(s, ">15m</text>") && strstr(s, ">1h45m</text>") &&
                          !strstr(s, ">12m</text>") &&
                          strstr(s, "fill=\"url(#waiting)\"><title>ml/big waited 1h</title>"),
                      "%s", s);
        free(s);
    }
    run_free(&r);
    /* waits rounded to seconds (59m49.6s), nodes n2 before n10, plurals */
    snprintf(cl, sizeof(cl), "%s%s/cluster.yaml", fx,
             "natural-node-order-and-waits-rounded-to-seconds");
    snprintf(jobs, sizeof(jobs), "%s%s/jobs.yaml", fx,
             "natural-node-order-and-waits-rounded-to-seconds");
    run_cmd(&r, (const char *[]){"--cluster", cl, "-f", jobs, NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "   59m50s       2h  Completed  n2,n10\n") &&
                      strstr(r.out, "wait: average 29m55s, max 59m50s\n") &&
                      strstr(r.out, "Cluster: 2 nodes,") && strstr(r.out, "Summary: 2 jobs:") &&
                      !strstr(r.out, "49.600s"),
                  "%s", r.out);
    run_free(&r);
    /* -o=json; ratios printed short (0.775, not 0.77500000000000002) */
    run_cmd(&r,
            (const char *[]){"-f", TS_SOURCE_DIR "/examples/simulate-queue.yaml", "-o=json", NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "\"gpuUtilisation\": 0.775,") && !strstr(r.out, "00000000") &&
                      !strstr(r.out, "99999999"),
                  "%s", r.out);
    run_free(&r);
    /* --svg where no file can be made: refused before anything is read or run, with the
     * reason; a bad job file behind it is not reached */
    run_cmd(&r, (const char *[]){"-f", "/nonexistent/jobs.yaml", "--svg",
                                 "/nonexistent-dir/timeline.svg", NULL});
    ck_assert_msg(r.status == 2 &&
                      strstr(r.err, "error: --svg /nonexistent-dir/timeline.svg: cannot create the "
                                    "file: No such file or directory\n") &&
                      r.outlen == 0,
                  "%s", r.err);
    run_free(&r);
    unlink(svg);
}
END_TEST

/* the topology example on the built-in cluster: its topology "default" (block, rack, hostname)
 * reaches the gang core, and the TrainJobs' requests place each gang in one domain; with the
 * default topology's levels replaced by --topology, the same requests name an unknown level */
START_TEST(command_line_topology_example)
{
    struct run r;
    const char *ex = TS_SOURCE_DIR "/examples/simulate-topology.yaml";
    json_error_t je;
    json_t *j, *jobs, *job;
    size_t i, placed = 0;

    run_cmd(&r, (const char *[]){"-f", ex, "-o", "json", NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    j = json_loads(r.out, 0, &je);
    ck_assert_ptr_nonnull(j);
    jobs = json_object_get(j, "jobs");
    ck_assert_uint_gt(json_array_size(jobs), 1);
    json_array_foreach(jobs, i, job)
    {
        json_t *td = json_object_get(job, "topologyDomain");
        const char *lvl = json_string_value(json_object_get(td, "level"));
        ck_assert_str_eq(json_string_value(json_object_get(job, "state")), "Completed");
        ck_assert_msg(lvl && strstr(lvl, "cloud.provider.com/topology-"), "%s: no domain",
                      json_string_value(json_object_get(job, "name")));
        /* every required level is met: one domain of it */
        if (strstr(lvl, "-rack") &&
            strstr(json_string_value(json_object_get(job, "name")), "finetune"))
            ck_assert_int_eq(
                json_integer_value(json_object_get(json_object_get(job, "domains"),
                                                   "cloud.provider.com/topology-rack")),
                1);
        placed++;
    }
    ck_assert_uint_eq(placed, json_array_size(jobs));
    json_decref(j);
    run_free(&r);
    run_cmd(&r, (const char *[]){"-f", ex, "--topology", "default=example.com/other", NULL});
    ck_assert_msg(r.status == 0 && strstr(r.out, "NeverFits") &&
                      strstr(r.out, "cloud.provider.com/topology-block"),
                  "%s%s", r.out, r.err);
    run_free(&r);
}
END_TEST

/* the shipped examples/ folder is one input: render and simulate take it whole (its TrainJob
 * and runtime names are unique across its files); render makes a JobSet for every TrainJob of
 * every file, and simulate runs every one to completion */
START_TEST(examples_folder_is_one_input)
{
    const char *root = TS_SOURCE_DIR "/examples";
    char *rout = NULL, *rerr = NULL;
    size_t rlen = 0, relen = 0, i, n_tj = 0;
    json_t *want = json_object(), *list, *obj, *rep, *job;
    const char *key;
    json_error_t je;
    DIR *d = opendir(root);
    struct dirent *de;
    struct run r;
    FILE *o, *e;
    int st;

    /* the TrainJobs of the folder's files, as "namespace/name" */
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d))) {
        char p[2048];
        struct common_yaml_docs f;
        struct common_error err;
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", root, de->d_name);
        ck_assert_msg(common_yaml_load_file(p, NULL, &f, &err) == COMMON_OK, "%s", err.msg);
        for (size_t k = 0; k < f.n; k++) {
            const char *kind = json_string_value(json_object_get(f.docs[k], "kind"));
            json_t *m = json_object_get(f.docs[k], "metadata");
            const char *ns = json_string_value(json_object_get(m, "namespace"));
            char id[600];
            if (!kind || strcmp(kind, "TrainJob") != 0)
                continue;
            snprintf(id, sizeof(id), "%s/%s", ns ? ns : "default",
                     json_string_value(json_object_get(m, "name")));
            ck_assert_msg(!json_object_get(want, id), "TrainJob %s twice in examples/", id);
            json_object_set_new(want, id, json_string(de->d_name));
            n_tj++;
        }
        common_yaml_docs_free(&f);
    }
    closedir(d);
    ck_assert_uint_ge(n_tj, 10);

    /* render -f examples/ -o json: exit 0, one JobSet per TrainJob */
    o = open_memstream(&rout, &rlen);
    e = open_memstream(&rerr, &relen);
    st = cmd_render(5, (char *[]){"render", "-f", (char *)root, "-o", "json", NULL}, o, e);
    fclose(o);
    fclose(e);
    ck_assert_msg(st == 0, "render -f examples/: exit %d: %s", st, rerr);
    list = json_loads(rout, 0, &je);
    ck_assert_ptr_nonnull(list);
    {
        size_t jobsets = 0;
        json_array_foreach(json_object_get(list, "items"), i, obj)
        {
            json_t *m = json_object_get(obj, "metadata");
            char id[600];
            if (strcmp(json_string_value(json_object_get(obj, "kind")), "JobSet") != 0)
                continue;
            snprintf(id, sizeof(id), "%s/%s", json_string_value(json_object_get(m, "namespace")),
                     json_string_value(json_object_get(m, "name")));
            ck_assert_msg(json_object_get(want, id), "render made JobSet %s of no TrainJob", id);
            jobsets++;
        }
        ck_assert_uint_eq(jobsets, n_tj);
    }
    json_decref(list);
    free(rout);
    free(rerr);

    /* simulate -f examples/ -o json: exit 0, every TrainJob Completed */
    run_cmd(&r, (const char *[]){"-f", root, "-o", "json", NULL});
    ck_assert_msg(r.status == 0, "simulate -f examples/: exit %d: %s", r.status, r.err);
    rep = json_loads(r.out, 0, &je);
    ck_assert_ptr_nonnull(rep);
    ck_assert_uint_eq(json_array_size(json_object_get(rep, "jobs")), n_tj);
    json_object_foreach(want, key, obj)
    {
        json_t *found = NULL;
        json_array_foreach(json_object_get(rep, "jobs"), i,
                           job) if (strcmp(json_string_value(json_object_get(job, "name")), key) ==
                                    0) found = job;
        ck_assert_msg(found, "simulate lacks %s (%s)", key, json_string_value(obj));
        ck_assert_str_eq(json_string_value(json_object_get(found, "state")), "Completed");
    }
    json_decref(rep);
    run_free(&r);
    json_decref(want);
}
END_TEST

/* the real binary: exit status and byte-identical output on two runs */
START_TEST(binary_is_deterministic)
{
    char cmd[4096], *a, *b;
    const char *dir = testutil_path(
        "simulate/a-late-member-makes-the-gang-time-out-and-back-off-on-a-fragmented-cluster");
    int st;

    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof(cmd),
                 "timeout 120 '%s' simulate --cluster '%s/cluster.yaml' -f '%s/jobs.yaml' -o json "
                 ">/tmp/test-simulate-%d-%d.json",
                 TS_BINARY, dir, dir, (int)getpid(), i);
        st = system(cmd);
        ck_assert_msg(st == 0, "run %d: status %d", i, st);
    }
    snprintf(cmd, sizeof(cmd), "/tmp/test-simulate-%d-0.json", (int)getpid());
    a = testutil_read(cmd);
    unlink(cmd);
    snprintf(cmd, sizeof(cmd), "/tmp/test-simulate-%d-1.json", (int)getpid());
    b = testutil_read(cmd);
    unlink(cmd);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    snprintf(cmd, sizeof(cmd), "timeout 120 '%s' simulate -f /nonexistent.yaml 2>/dev/null",
             TS_BINARY);
    st = system(cmd);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
}
END_TEST

START_TEST(durations)
{
    int64_t ms;
    char buf[32];

    ck_assert(sim_parse_duration("90s", &ms, NULL) == COMMON_OK && ms == 90000);
    ck_assert(sim_parse_duration("1h30m", &ms, NULL) == COMMON_OK && ms == 5400000);
    ck_assert(sim_parse_duration("250ms", &ms, NULL) == COMMON_OK && ms == 250);
    ck_assert(sim_parse_duration("600", &ms, NULL) == COMMON_OK && ms == 600000);
    ck_assert(sim_parse_duration("2d", &ms, NULL) == COMMON_OK && ms == 172800000);
    ck_assert(sim_parse_duration("-1s", &ms, NULL) == COMMON_EINVAL);
    ck_assert(sim_parse_duration("1x", &ms, NULL) == COMMON_EINVAL);
    ck_assert(sim_parse_duration("", &ms, NULL) == COMMON_EINVAL);
    ck_assert(sim_parse_duration("99999999999999999999s", &ms, NULL) == COMMON_EINVAL);
    ck_assert(sim_parse_duration("100000d", &ms, NULL) == COMMON_EINVAL);
    ck_assert_str_eq(sim_format_duration(5400000, buf, sizeof(buf)), "1h30m");
    ck_assert_str_eq(sim_format_duration(0, buf, sizeof(buf)), "0s");
    ck_assert_str_eq(sim_format_duration(1500, buf, sizeof(buf)), "1.500s");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("simulate");
    TCase *tc = tcase_create("simulate");

    common_alloc_init();
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, durations);
    tcase_add_test(tc, fixtures);
    tcase_add_test(tc, extender_verbs_decide_the_same_placements);
    tcase_add_test(tc, extender_verbs_decide_the_same_topology_placements);
    tcase_add_test(tc, extender_verbs_decide_the_same_placements_behind_the_gang_gate);
    tcase_add_test(tc, command_line_topology_example);
    tcase_add_test(tc, saved_filters_change_no_placement_on_a_busy_trace);
    tcase_add_test(tc, a_wide_pod_by_pod_job_costs_the_same_work_per_pod_at_ten_times_the_pods);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, command_line);
    tcase_add_test(tc, report_text_and_svg);
    tcase_add_test(tc, folders_are_read_as_render_reads_them);
    tcase_add_test(tc, binary_is_deterministic);
    tcase_add_test(tc, examples_folder_is_one_input);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
