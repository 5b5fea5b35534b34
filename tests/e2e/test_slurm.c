/*
 * tests/e2e/test_slurm.c - the Slurm backend end to end: a real Slurm 22.05 (slurmctld, four
 * slurmd n1..n4 of 2 CPUs, slurmrestd with JWT; tests/tools/slurm/slurm-up.sh on private ports)
 * and the test bed (tests/e2e/testbed/up.sh with TESTBED_JOBSET=1 TESTBED_KWOK=1; KUBECONFIG
 * from its env file) with four kwok nodes named n1..n4 like the slurmd nodes (4 GPUs each), and
 * four more, gpu-node-1..4, named apart and labelled with the Slurm names (node-label mapping).
 *
 *   TrainJob (runtime annotation trainsched.io/backend: slurm) -> the reconciler (in-process,
 *   as trainsched's ServiceAccount, with the Slurm backend) -> one Slurm job through slurmrestd
 *   + JobSet + PodGroup carrying the job's nodes -> the real kube-scheduler calls the extender
 *   (in-process) -> the pods bind to exactly the Slurm job's nodes.
 *
 * main() starts Slurm and restarts the bed's kube-scheduler with an extender config; after the
 * run, whatever the result, Slurm is stopped, the nodes deleted and the scheduler restored.
 * The slurmd nodes declare 4 GPUs each as GRES (gres.conf File= lines naming fake character
 * devices, see slurm-up.sh): the TrainJob's 4 GPUs per node reach Slurm as `gres: gpu:4`.
 *
 * Scenarios:
 *   two_nodes_run_on_the_nodes_slurm_chose   2 nodes x 4 GPUs: one Slurm job (one per comment),
 *                                            RUNNING on 2 nodes with 4 GPUs allocated on each
 *                                            (gres_detail); the 2 pods bound to exactly
 *                                            those; the TrainJob completes and the Slurm job is
 *                                            cancelled;
 *   a_full_partition_waits_and_a_restart_submits_nothing_twice
 *                                            a 4-node job fills Slurm: the TrainJob's job is
 *                                            PENDING, condition SlurmJob names it, no pod
 *                                            bound; the reconciler restarted: still one Slurm
 *                                            job; the blocker cancelled: the pods bind to the
 *                                            nodes of the TrainJob's job;
 *   nodes_named_apart_from_slurm_map_through_a_node_label
 *                                            the extender with slurm_node_label: kwok nodes
 *                                            gpu-node-1..4 labelled with the Slurm names
 *                                            n1..n4; the pods bind to the gpu-node-K whose
 *                                            label names the job's Slurm nodes;
 *   scancel_by_an_admin_stops_the_trainjob   the pending job cancelled behind trainsched's back:
 *                                            Failed=True reason SlurmJobEnded naming CANCELLED;
 *   a_deleted_trainjob_cancels_its_slurm_job the TrainJob deleted while its job is pending: the
 *                                            Slurm job ends CANCELLED, then the TrainJob goes;
 *   a_trainjob_deleted_while_trainsched_is_down_has_its_job_cancelled_at_the_next_start
 *                                            the reconciler stopped, the TrainJob deleted: it
 *                                            stays (finalizer trainsched.io/slurm-job) and so
 *                                            does its pending job; the reconciler started: the
 *                                            job is CANCELLED and the TrainJob gone;
 *   a_trainsched_without_the_slurm_backend_lets_a_deleted_trainjob_go
 *                                            a reconciler without slurmrestd removes the
 *                                            finalizer of a deleted TrainJob (its job stays for
 *                                            an admin): nothing is stranded;
 *   slurmrestd_stopped_for_20_s_loses_and_duplicates_nothing
 *                                            slurmrestd frozen (SIGSTOP) for 20 s while a
 *                                            TrainJob is created: condition SlurmError
 *                                            (timeout) while it is down, then
 *                                            exactly one Slurm job and both pods bound to it.
 */
#define _GNU_SOURCE
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/events.h"
#include "common/httpd.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/metrics.h"
#include "e2eutil.h"
#include "extender/server.h"
#include "integrations/slurm_sync.h"
#include "reconciler/reconciler.h"
#include "slurmbed.h"

#define RUN_LABEL "trainsched.io/e2e-slurm"
#define GANG_LABEL "scheduling.x-k8s.io/pod-group"
#define BIND_TIMEOUT_S 30
#define NODES 4
/* the node label holding a Slurm node name (extender option slurm_node_label) on the kwok nodes
 * MAPPED_PREFIX1..4, named apart from the slurmd nodes; they carry RUN_LABEL=<run>-m */
#define SLURM_NAME_LABEL "e2e.trainsched.io/slurm-node"
#define MAPPED_PREFIX "gpu-node-"

/* suite state (main) */
static int port;
static char tmpdir[256], slurm_dir[256], slurm_url[128], slurm_jwt[4096], run[32];
static struct common_kube *admin;

/* per test */
static struct common_kube *kube, *tsk;
static struct common_events *events;
static struct common_metrics *metrics;
static struct extender_server *ext;
static struct common_httpd *httpd;
static struct rc_reconciler *rec;
static struct slurm_sync *sync_;
static struct slurmrest *rest; /* the test's own view of slurmrestd (an admin's) */
static char ns[96];

static const char *jstr(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

/* ---- Slurm ---- */

static struct slurmbed bed;

static int slurm_up(void)
{
    if (slurmbed_up(&bed, "ts-e2e-slurm", 23000 + (int)(getpid() % 300) * 10, NODES, 2) != 0)
        return -1;
    snprintf(slurm_dir, sizeof(slurm_dir), "%s", bed.dir);
    snprintf(slurm_url, sizeof(slurm_url), "%s", bed.url);
    snprintf(slurm_jwt, sizeof(slurm_jwt), "%s", bed.jwt);
    return 0;
}

static void slurm_down(void)
{
    slurmbed_down(&bed);
}

static struct slurmrest_opts rest_opts(void)
{
    struct slurmrest_opts o = {0};
    o.url = slurm_url;
    o.user = "root";
    o.token = slurm_jwt;
    o.timeout_ms = 20000;
    return o;
}

/* a job that holds all NODES nodes (both CPUs of each): the partition is full */
static int64_t submit_blocker(void)
{
    json_t *body =
        e2e_yaml1("script: \"#!/bin/sh\\nexec sleep infinity\\n\"\n"
                  "job: {name: blocker, nodes: 4, tasks: 4, tasks_per_node: 1,\n"
                  "      cpus_per_task: 2, environment: {PATH: /bin},\n"
                  "      current_working_directory: /tmp, standard_output: /dev/null}\n");
    struct common_error err = {0};
    int64_t id = 0;

    ck_assert_msg(slurmrest_submit(rest, body, &id, &err) == COMMON_OK, "%s", err.msg);
    json_decref(body);
    return id;
}

/* the state of Slurm job id, polled until want (phase) or timeout; returns the last state */
static struct slurm_job_state job_state(struct common_arena *a, int64_t id, int want,
                                        double timeout_s)
{
    struct slurm_job_state st;
    struct common_error err = {0};
    double t0 = e2e_now_s();

    for (;;) {
        ck_assert_msg(slurmrest_job(rest, a, id, &st, &err) == COMMON_OK, "job %lld: %s",
                      (long long)id, err.msg);
        if (want < 0 || ((int)st.phase == want && strcmp(st.state, "COMPLETING") != 0))
            return st;
        ck_assert_msg(e2e_now_s() - t0 < timeout_s, "job %lld: %s after %.0f s, wanted %s",
                      (long long)id, st.summary, timeout_s,
                      slurm_phase_name((enum slurm_phase)want));
        e2e_nap(250);
    }
}

/* how many Slurm jobs (any state) carry this TrainJob's comment */
static int jobs_with_comment(const char *name, const char *uid)
{
    char comment[512];
    json_t *answer = NULL, *j;
    struct common_error err = {0};
    size_t i;
    int n = 0;

    snprintf(comment, sizeof(comment), SLURM_COMMENT_PREFIX "%s/%s/%s", ns, name, uid);
    ck_assert_msg(slurmrest_call(rest, "GET", "/jobs", NULL, &answer, &err) == COMMON_OK, "%s",
                  err.msg);
    json_array_foreach(json_object_get(answer, "jobs"), i, j)
    {
        const char *c = jstr(j, "comment", NULL);
        if (c && strcmp(c, comment) == 0)
            n++;
    }
    json_decref(answer);
    return n;
}

/* Slurm's own view of job id's GPUs: tres_per_node (what was asked) and gres_detail (what each
 * node allocated, e.g. "gpu:4(IDX:0-3)"), each node's joined with " " into detail */
static void job_gres(int64_t id, char *per_node, size_t pn_len, char *detail, size_t d_len)
{
    char path[64];
    json_t *answer = NULL, *job, *g;
    struct common_error err = {0};
    size_t i, off = 0;

    snprintf(path, sizeof(path), "/job/%lld", (long long)id);
    ck_assert_msg(slurmrest_call(rest, "GET", path, NULL, &answer, &err) == COMMON_OK, "%s",
                  err.msg);
    job = json_array_get(json_object_get(answer, "jobs"), 0);
    snprintf(per_node, pn_len, "%s",
             jstr(job, "tres_per_node", NULL) ? jstr(job, "tres_per_node", NULL) : "");
    detail[0] = '\0';
    json_array_foreach(json_object_get(job, "gres_detail"), i, g) off +=
        (size_t)snprintf(detail + off, off < d_len ? d_len - off : 0, "%s%s", i ? " " : "",
                         json_string_value(g) ? json_string_value(g) : "?");
    json_decref(answer);
}

/* ---- trainsched in-process ---- */

static const char *node_label; /* start_extender: the extender's slurm_node_label */

static void start_extender(void)
{
    struct extender_server_opts o = {0};
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct common_error err;
    char addr[64];
    enum common_rc rc = COMMON_EIO;

    metrics = common_metrics_create();
    o.kube = kube;
    o.events = events;
    o.metrics = metrics;
    o.bind_http_timeout_ms = BIND_TIMEOUT_S * 1000;
    o.default_schedule_timeout_s = 20;
    o.backoff_initial_ms = 1000;
    o.backoff_max_ms = 2000;
    o.slurm_node_label = node_label;
    ext = extender_server_create(&o, &err);
    ck_assert_msg(ext != NULL, "%s", err.msg);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ho.address = addr;
    ho.threads = 4;
    ho.drain_ms = 2000;
    httpd = common_httpd_create(&ho, &err);
    ck_assert_msg(httpd != NULL, "%s", err.msg);
    ck_assert_int_eq(extender_server_install(ext, httpd, &err), COMMON_OK);
    ck_assert_msg(extender_server_start(ext, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_msg(extender_server_wait_ready(ext, 30000), "extender caches not synced in 30 s");
    for (int i = 0; i < 50 && (rc = common_httpd_start(httpd, &err)) != COMMON_OK; i++)
        e2e_nap(100);
    ck_assert_msg(rc == COMMON_OK, "%s", err.msg);
}

static int without_slurm; /* start_reconciler: as a trainsched started without --slurm-url */

static void start_reconciler(void)
{
    struct rc_opts o;

    e2e_rc_opts(&o, tsk, ns);
    o.gang_marks = 1; /* this bed's kube-scheduler calls the extender */
    o.slurm = without_slurm ? NULL : sync_;
    rec = e2e_rc_start(&o);
}

static void cancel_all_jobs(void)
{
    json_t *answer = NULL, *j;
    struct common_error err = {0};
    size_t i;

    if (slurmrest_call(rest, "GET", "/jobs", NULL, &answer, &err) != COMMON_OK)
        return;
    json_array_foreach(json_object_get(answer, "jobs"), i, j)
    {
        const char *st = jstr(j, "job_state", NULL);
        if (st && (strcmp(st, "PENDING") == 0 || strcmp(st, "RUNNING") == 0))
            (void)slurmrest_cancel(rest, json_integer_value(json_object_get(j, "job_id")), &err);
    }
    json_decref(answer);
}

static void setup(void)
{
    struct slurm_sync_opts so = {0};
    struct slurmrest_opts ro = rest_opts();
    struct common_error err;

    kube = e2e_client(20000, 0);
    tsk = e2e_client(20000, 1);
    e2e_make_ns(kube, "slurm", ns, sizeof(ns));
    events = common_events_create(kube, "e2e-slurm", NULL, &err);
    ck_assert_msg(events != NULL, "%s", err.msg);
    rest = slurmrest_create(&ro, &err);
    ck_assert_msg(rest != NULL, "%s", err.msg);
    cancel_all_jobs(); /* a failed test exits before its teardown */
    so.rest = rest_opts();
    so.rest.timeout_ms = 5000; /* a frozen slurmrestd shows within one freeze (last test) */
    sync_ = slurm_sync_create(&so, &err);
    ck_assert_msg(sync_ != NULL, "%s", err.msg);
    start_extender();
    start_reconciler();
}

static void stop_extender(void)
{
    if (ext) {
        extender_server_stop(ext);
        common_httpd_destroy(httpd);
        extender_server_destroy(ext);
        common_metrics_destroy(metrics);
        ext = NULL;
    }
}

static void teardown(void)
{
    without_slurm = 0;
    node_label = NULL;
    if (rec)
        rc_destroy(rec);
    rec = NULL;
    stop_extender();
    slurm_sync_destroy(sync_);
    sync_ = NULL;
    cancel_all_jobs();
    slurmrest_destroy(rest);
    rest = NULL;
    common_events_destroy(events);
    (void)e2e_delete_pods_now(kube, ns, NULL);
    e2e_drop_ns(kube, ns);
    common_kube_client_destroy(tsk);
    common_kube_client_destroy(kube);
}

/* ---- cluster objects ---- */

static void create_obj(const struct common_kube_resource *r, json_t *obj)
{
    struct common_kube_write_opts wo = {.strict = 1};
    struct common_error err;
    enum common_rc rc = common_kube_create(kube, r, ns, obj, &wo, NULL, &err);

    ck_assert_msg(rc == COMMON_OK, "create %s: %s", r->resource, err.msg);
    json_decref(obj);
}

static json_t *get_obj(const struct common_kube_resource *r, const char *name)
{
    struct common_error err;
    json_t *o = NULL;
    enum common_rc rc = common_kube_get(kube, r, ns, name, &o, &err);

    if (rc == COMMON_ENOTFOUND)
        return NULL;
    ck_assert_msg(rc == COMMON_OK, "get %s %s: %s", r->resource, name, err.msg);
    return o;
}

/* a TrainingRuntime on the Slurm backend and a TrainJob of num_nodes x 4 GPUs using it, its
 * pods on the nodes labelled RUN_LABEL=sel */
static void make_trainjob_on(const char *name, int num_nodes, const char *sel)
{
    create_obj(&common_kube_trainingruntimes,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                         "kind: TrainingRuntime\n"
                         "metadata:\n  name: %s-rt\n  namespace: %s\n"
                         "  annotations: {trainsched.io/backend: slurm}\n"
                         "spec:\n"
                         "  mlPolicy: {numNodes: 1}\n" E2E_RT_NODE_JOB "              spec:\n"
                         "                nodeSelector: {%s: '%s'}\n"
                         "                tolerations: [{key: kwok.x-k8s.io/node, operator: "
                         "Exists, effect: NoSchedule}]\n"
                         "                containers:\n"
                         "                - name: node\n"
                         "                  image: busybox:1.36\n"
                         "                  command: [sh, -c, 'sleep 1']\n",
                         name, ns, RUN_LABEL, sel));
    create_obj(&common_kube_trainjobs,
               e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                         "metadata: {name: %s, namespace: %s}\n"
                         "spec:\n  runtimeRef: {name: %s-rt, kind: TrainingRuntime}\n"
                         "  trainer:\n    numNodes: %d\n"
                         "    resourcesPerNode:\n"
                         "      requests: {cpu: '1', memory: 64Mi, nvidia.com/gpu: '4'}\n"
                         "      limits: {nvidia.com/gpu: '4'}\n",
                         name, ns, name, num_nodes));
}

static void make_trainjob(const char *name, int num_nodes)
{
    make_trainjob_on(name, num_nodes, run);
}

/* the TrainJob's recorded Slurm job id, waiting for it; *uid gets its uid (static buffer) */
static int64_t wait_job_id(const char *name, const char **uid, double timeout_s)
{
    static char uidbuf[64];
    double t0 = e2e_now_s();

    for (;;) {
        json_t *tj = get_obj(&common_kube_trainjobs, name);
        const json_t *ann = json_object_get(json_object_get(tj, "metadata"), "annotations");
        const char *id = json_string_value(json_object_get(ann, SLURM_ANNOTATION_JOB_ID));
        int64_t v = id ? strtoll(id, NULL, 10) : 0;
        snprintf(uidbuf, sizeof(uidbuf), "%s", tj ? jstr(tj, "metadata", "uid") : "");
        json_decref(tj);
        if (v > 0) {
            if (uid)
                *uid = uidbuf;
            return v;
        }
        ck_assert_msg(e2e_now_s() - t0 < timeout_s, "TrainJob %s: no Slurm job id after %.0f s",
                      name, timeout_s);
        e2e_nap(250);
    }
}

/* the condition type of TrainJob name once its reason is reason (NULL: any) (waits); a new
 * reference */
static json_t *wait_condition(const char *name, const char *type, const char *reason,
                              double timeout_s)
{
    double t0 = e2e_now_s();

    for (;;) {
        json_t *tj = get_obj(&common_kube_trainjobs, name), *c;
        size_t i;
        json_array_foreach(json_object_get(json_object_get(tj, "status"), "conditions"), i, c)
        {
            const char *t = jstr(c, "type", NULL), *r = jstr(c, "reason", NULL);
            if (t && r && strcmp(t, type) == 0 && (!reason || strcmp(r, reason) == 0)) {
                json_incref(c);
                json_decref(tj);
                return c;
            }
        }
        json_decref(tj);
        ck_assert_msg(e2e_now_s() - t0 < timeout_s,
                      "TrainJob %s: no %s with reason %s after %.0f s", name, type,
                      reason ? reason : "(any)", timeout_s);
        e2e_nap(250);
    }
}

/* the pods of gang name: how many, and their nodes (bound ones) into nodes[] */
static int gang_pods(const char *name, char nodes[][64], int max, int *bound)
{
    struct common_kube_list_opts lo = {0};
    struct common_error err;
    json_t *items = NULL, *it;
    char sel[256];
    size_t i;
    int n = 0;

    snprintf(sel, sizeof(sel), GANG_LABEL "=%s", name);
    lo.label_selector = sel;
    ck_assert_msg(common_kube_list(kube, &common_kube_pods, ns, &lo, &items, NULL, &err) ==
                      COMMON_OK,
                  "%s", err.msg);
    *bound = 0;
    json_array_foreach(items, i, it)
    {
        const char *nn = jstr(it, "spec", "nodeName");
        if (nn && *nn && *bound < max)
            snprintf(nodes[(*bound)++], 64, "%s", nn);
        n++;
    }
    json_decref(items);
    return n;
}

/* wait until want pods of gang name are bound; their nodes into nodes[] */
static void wait_bound(const char *name, int want, char nodes[][64], double timeout_s)
{
    double t0 = e2e_now_s();
    int bound = 0;

    for (;;) {
        (void)gang_pods(name, nodes, NODES, &bound);
        if (bound >= want)
            return;
        ck_assert_msg(e2e_now_s() - t0 < timeout_s, "gang %s: %d of %d pods bound after %.0f s",
                      name, bound, want, timeout_s);
        e2e_nap(250);
    }
}

static int in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

static int has_finalizer(const char *name)
{
    json_t *tj = get_obj(&common_kube_trainjobs, name);
    int has = tj && slurm_has_finalizer(tj);
    json_decref(tj);
    return has;
}

static void wait_trainjob_gone(const char *name, double timeout_s)
{
    double t0 = e2e_now_s();
    json_t *tj;

    while ((tj = get_obj(&common_kube_trainjobs, name))) {
        json_decref(tj);
        ck_assert_msg(e2e_now_s() - t0 < timeout_s, "TrainJob %s still there after %.0f s", name,
                      timeout_s);
        e2e_nap(250);
    }
}

/* ---- scenarios ---- */

START_TEST(two_nodes_run_on_the_nodes_slurm_chose)
{
    struct common_arena *a = common_arena_create(0);
    struct slurm_job_state st;
    char nodes[NODES][64], per_node[64], detail[256];
    const char *uid = NULL;
    int64_t id;

    make_trainjob("two", 2);
    id = wait_job_id("two", &uid, 60);
    st = job_state(a, id, SLURM_RUNNING, 60);
    ck_assert_uint_eq(st.nnodes, 2);
    /* the gang's GPUs are Slurm's: 4 per node asked, and 4 allocated on each of the 2 nodes */
    job_gres(id, per_node, sizeof(per_node), detail, sizeof(detail));
    ck_assert_str_eq(per_node, "gres:gpu:4");
    ck_assert_str_eq(detail, "gpu:4(IDX:0-3) gpu:4(IDX:0-3)");
    wait_bound("two", 2, nodes, 90);
    for (int i = 0; i < 2; i++)
        ck_assert_msg(in_list(nodes[i], st.nodes, st.nnodes),
                      "pod bound to %s, not one of Slurm job %lld's nodes (%s)", nodes[i],
                      (long long)id, st.summary);
    ck_assert_str_ne(nodes[0], nodes[1]);
    ck_assert_int_eq(jobs_with_comment("two", uid), 1);
    /* kwok runs the pods to completion: the finished TrainJob's Slurm job is cancelled */
    json_decref(wait_condition("two", "Complete", NULL, 120));
    st = job_state(a, id, SLURM_ENDED, 60);
    ck_assert_str_eq(st.state, "CANCELLED");
    common_arena_destroy(a);
}
END_TEST

START_TEST(a_full_partition_waits_and_a_restart_submits_nothing_twice)
{
    struct common_arena *a = common_arena_create(0);
    struct slurm_job_state st;
    struct common_error err = {0};
    char nodes[NODES][64], want[64];
    const char *uid = NULL;
    int64_t blocker = submit_blocker(), id, id2;
    json_t *cond;
    int bound = 0;

    (void)job_state(a, blocker, SLURM_RUNNING, 60);
    make_trainjob("waits", 2);
    id = wait_job_id("waits", &uid, 60);
    cond = wait_condition("waits", SLURM_CONDITION, SLURM_REASON_PENDING, 60);
    snprintf(want, sizeof(want), "Slurm job %lld is pending", (long long)id);
    ck_assert_msg(strstr(jstr(cond, "message", NULL), want), "condition: %s",
                  jstr(cond, "message", NULL));
    json_decref(cond);
    ck_assert_int_eq(gang_pods("waits", nodes, NODES, &bound), 2);
    ck_assert_int_eq(bound, 0);

    /* trainsched restarted while the job is pending: no second submission */
    rc_destroy(rec);
    rec = NULL;
    start_reconciler();
    e2e_nap(8000); /* more than one pending poll interval */
    id2 = wait_job_id("waits", NULL, 10);
    ck_assert_int_eq(id2, id);
    ck_assert_int_eq(jobs_with_comment("waits", uid), 1);
    (void)gang_pods("waits", nodes, NODES, &bound);
    ck_assert_int_eq(bound, 0);

    /* the blocker ends: the TrainJob's job runs and the pods bind to its nodes */
    ck_assert_msg(slurmrest_cancel(rest, blocker, &err) == COMMON_OK, "%s", err.msg);
    st = job_state(a, id, SLURM_RUNNING, 60);
    wait_bound("waits", 2, nodes, 90);
    for (int i = 0; i < 2; i++)
        ck_assert_msg(in_list(nodes[i], st.nodes, st.nnodes), "pod bound to %s, not in %s",
                      nodes[i], st.summary);
    ck_assert_int_eq(jobs_with_comment("waits", uid), 1);
    common_arena_destroy(a);
}
END_TEST

START_TEST(nodes_named_apart_from_slurm_map_through_a_node_label)
{
    struct common_arena *a = common_arena_create(0);
    struct slurm_job_state st;
    char nodes[NODES][64], sel[48];
    int64_t id;

    /* the extender maps a node to Slurm through its label SLURM_NAME_LABEL */
    stop_extender();
    node_label = SLURM_NAME_LABEL;
    start_extender();
    snprintf(sel, sizeof(sel), "%s-m", run);
    make_trainjob_on("mapped", 2, sel);
    id = wait_job_id("mapped", NULL, 60);
    st = job_state(a, id, SLURM_RUNNING, 60);
    ck_assert_uint_eq(st.nnodes, 2);
    wait_bound("mapped", 2, nodes, 90);
    for (int i = 0; i < 2; i++) {
        /* MAPPED_PREFIX<k> carries SLURM_NAME_LABEL=n<k> */
        char slurm_name[64];
        ck_assert_msg(strncmp(nodes[i], MAPPED_PREFIX, strlen(MAPPED_PREFIX)) == 0,
                      "pod bound to %s, not a node named apart from Slurm", nodes[i]);
        snprintf(slurm_name, sizeof(slurm_name), "n%s", nodes[i] + strlen(MAPPED_PREFIX));
        ck_assert_msg(in_list(slurm_name, st.nodes, st.nnodes),
                      "pod bound to %s (Slurm node %s), not one of Slurm job %lld's nodes (%s)",
                      nodes[i], slurm_name, (long long)id, st.summary);
    }
    ck_assert_str_ne(nodes[0], nodes[1]);
    common_arena_destroy(a);
}
END_TEST

START_TEST(scancel_by_an_admin_stops_the_trainjob)
{
    struct common_arena *a = common_arena_create(0);
    struct common_error err = {0};
    int64_t blocker = submit_blocker(), id;
    json_t *cond;
    char nodes[NODES][64];
    int bound = 0;

    (void)job_state(a, blocker, SLURM_RUNNING, 60);
    make_trainjob("scancel", 2);
    id = wait_job_id("scancel", NULL, 60);
    json_decref(wait_condition("scancel", SLURM_CONDITION, SLURM_REASON_PENDING, 60));
    ck_assert_msg(slurmrest_cancel(rest, id, &err) == COMMON_OK, "%s", err.msg);
    cond = wait_condition("scancel", "Failed", SLURM_REASON_ENDED, 60);
    ck_assert_str_eq(jstr(cond, "status", NULL), "True");
    ck_assert_msg(strstr(jstr(cond, "message", NULL), "CANCELLED"), "%s",
                  jstr(cond, "message", NULL));
    json_decref(cond);
    /* the JobSet is deleted with its pods; none was ever bound */
    for (int i = 0; i < 120 && get_obj(&common_kube_jobsets, "scancel"); i++)
        e2e_nap(250);
    (void)gang_pods("scancel", nodes, NODES, &bound);
    ck_assert_int_eq(bound, 0);
    ck_assert_ptr_null(get_obj(&common_kube_jobsets, "scancel"));
    common_arena_destroy(a);
}
END_TEST

/* a full partition (the blocker) and TrainJob name of 2 nodes whose Slurm job is pending and
 * that holds the finalizer; returns that job's id */
static int64_t pending_trainjob(struct common_arena *a, const char *name)
{
    int64_t id;

    (void)job_state(a, submit_blocker(), SLURM_RUNNING, 60);
    make_trainjob(name, 2);
    id = wait_job_id(name, NULL, 60);
    (void)job_state(a, id, SLURM_PENDING, 10);
    ck_assert_msg(has_finalizer(name), "TrainJob %s has a Slurm job but no finalizer %s", name,
                  SLURM_FINALIZER);
    return id;
}

/* delete TrainJob name */
static void delete_trainjob(const char *name)
{
    struct common_error err = {0};
    ck_assert_msg(common_kube_delete(kube, &common_kube_trainjobs, ns, name, NULL, NULL, NULL,
                                     &err) == COMMON_OK,
                  "%s", err.msg);
}

/* Slurm job id ends CANCELLED, then TrainJob name goes (its finalizer removed) */
static void cancelled_and_gone(struct common_arena *a, int64_t id, const char *name)
{
    ck_assert_str_eq(job_state(a, id, SLURM_ENDED, 60).state, "CANCELLED");
    wait_trainjob_gone(name, 60);
}

START_TEST(a_deleted_trainjob_cancels_its_slurm_job)
{
    struct common_arena *a = common_arena_create(0);
    int64_t id = pending_trainjob(a, "gone");

    delete_trainjob("gone");
    cancelled_and_gone(a, id, "gone");
    common_arena_destroy(a);
}
END_TEST

START_TEST(a_trainjob_deleted_while_trainsched_is_down_has_its_job_cancelled_at_the_next_start)
{
    struct common_arena *a = common_arena_create(0);
    int64_t id = pending_trainjob(a, "down");
    json_t *tj;

    rc_destroy(rec); /* trainsched is down */
    rec = NULL;
    delete_trainjob("down");
    e2e_nap(3000);
    tj = get_obj(&common_kube_trainjobs, "down");
    ck_assert_msg(tj && json_object_get(json_object_get(tj, "metadata"), "deletionTimestamp"),
                  "the deleted TrainJob should wait for trainsched (finalizer)");
    json_decref(tj);
    ck_assert_int_eq(job_state(a, id, -1, 10).phase, SLURM_PENDING);

    start_reconciler(); /* trainsched is back: the job is cancelled, then the TrainJob goes */
    cancelled_and_gone(a, id, "down");
    common_arena_destroy(a);
}
END_TEST

START_TEST(a_trainsched_without_the_slurm_backend_lets_a_deleted_trainjob_go)
{
    struct common_arena *a = common_arena_create(0);
    int64_t id = pending_trainjob(a, "nobackend");

    /* trainsched restarted without --slurm-url: the finalizer must not strand the TrainJob */
    rc_destroy(rec);
    rec = NULL;
    without_slurm = 1;
    start_reconciler();
    delete_trainjob("nobackend");
    wait_trainjob_gone("nobackend", 60);
    /* nobody could cancel it: the job stays for an admin (the Warning Event names it) */
    ck_assert_int_eq(job_state(a, id, -1, 10).phase, SLURM_PENDING);
    common_arena_destroy(a);
}
END_TEST

START_TEST(slurmrestd_stopped_for_20_s_loses_and_duplicates_nothing)
{
    struct common_arena *a = common_arena_create(0);
    struct slurm_job_state st;
    char path[400], nodes[NODES][64];
    const char *uid = NULL;
    char *pidtext;
    pid_t pid;
    int64_t id;
    double t0;
    json_t *cond;

    snprintf(path, sizeof(path), "%s/run/slurmrestd.pid", slurm_dir);
    pidtext = e2e_read_text(path);
    pid = (pid_t)strtol(pidtext, NULL, 10);
    free(pidtext);
    ck_assert_int_gt(pid, 1);
    ck_assert_int_eq(kill(pid, SIGSTOP), 0);
    t0 = e2e_now_s();
    make_trainjob("frozen", 2);
    /* trainsched's calls time out (5 s here): the TrainJob says so while slurmrestd is down */
    cond = wait_condition("frozen", SLURM_CONDITION, SLURM_REASON_ERROR, 15);
    ck_assert_msg(strstr(jstr(cond, "message", NULL), "Timeout"), "%s",
                  jstr(cond, "message", NULL));
    json_decref(cond);
    while (e2e_now_s() - t0 < 20)
        e2e_nap(250);
    ck_assert_int_eq(kill(pid, SIGCONT), 0);
    id = wait_job_id("frozen", &uid, 120);
    st = job_state(a, id, SLURM_RUNNING, 60);
    wait_bound("frozen", 2, nodes, 120);
    for (int i = 0; i < 2; i++)
        ck_assert_msg(in_list(nodes[i], st.nodes, st.nnodes), "pod bound to %s, not in %s",
                      nodes[i], st.summary);
    ck_assert_int_eq(jobs_with_comment("frozen", uid), 1);
    common_arena_destroy(a);
}
END_TEST

/* ---- main ---- */

static struct common_kube *main_client(void)
{
    struct common_kubeconfig kc;
    struct common_error err;
    struct common_kube_opts o = common_kube_opts_default();
    struct common_kube *k;

    memset(&kc, 0, sizeof(kc));
    if (common_kubeconfig_load(getenv("KUBECONFIG"), NULL, &kc, &err) != COMMON_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return NULL;
    }
    o.timeout_ms = 20000;
    k = common_kube_client_create(&kc, &o, &err);
    common_kubeconfig_free(&kc);
    if (!k)
        fprintf(stderr, "%s\n", err.msg);
    return k;
}

/* kwok node name labelled RUN_LABEL=sel (and SLURM_NAME_LABEL=slurm_name unless NULL), 2 CPUs
 * and 4 GPUs */
static int make_node(const char *name, const char *sel, const char *slurm_name)
{
    struct common_error err;
    json_t *n;
    enum common_rc rc;

    n = json_pack("{s:s,s:s,s:{s:s,s:{s:s},s:{s:s}},s:{s:{s:s,s:s,s:s,s:s},s:{s:s,s:s,s:s,"
                  "s:s}}}",
                  "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels", RUN_LABEL,
                  sel, "annotations", "kwok.x-k8s.io/node", "fake", "status", "allocatable", "cpu",
                  "2", "memory", "64Gi", "pods", "110", "nvidia.com/gpu", "4", "capacity", "cpu",
                  "2", "memory", "64Gi", "pods", "110", "nvidia.com/gpu", "4");
    if (n && slurm_name)
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"),
                            SLURM_NAME_LABEL, json_string(slurm_name));
    rc = common_kube_create(admin, &common_kube_nodes, NULL, n, NULL, NULL, &err);
    json_decref(n);
    if (rc != COMMON_OK) {
        fprintf(stderr, "node %s: %s\n", name, err.msg);
        return -1;
    }
    return 0;
}

/* kwok nodes n1..n4 named like the slurmd nodes (RUN_LABEL=run), and MAPPED_PREFIX1..4 named
 * apart, labelled SLURM_NAME_LABEL=n1..n4 (RUN_LABEL=<run>-m) */
static int make_nodes(void)
{
    char sel[48];

    snprintf(sel, sizeof(sel), "%s-m", run);
    for (int i = 1; i <= NODES; i++) {
        char name[32], mapped[32];
        snprintf(name, sizeof(name), "n%d", i);
        snprintf(mapped, sizeof(mapped), MAPPED_PREFIX "%d", i);
        if (make_node(name, run, NULL) != 0 || make_node(mapped, sel, name) != 0)
            return -1;
    }
    return 0;
}

static void drop_nodes(void)
{
    for (int i = 1; i <= NODES; i++) {
        struct common_error err;
        char name[32];
        snprintf(name, sizeof(name), "n%d", i);
        common_kube_delete(admin, &common_kube_nodes, NULL, name, NULL, NULL, NULL, &err);
        snprintf(name, sizeof(name), MAPPED_PREFIX "%d", i);
        common_kube_delete(admin, &common_kube_nodes, NULL, name, NULL, NULL, NULL, &err);
    }
}

int main(void)
{
    char cfg[320], args[400], cmd[400];
    int failed = 0;
    FILE *f;
    Suite *s = suite_create("the Slurm backend, end to end");
    TCase *tc = tcase_create("slurm");
    SRunner *sr;

    signal(SIGPIPE, SIG_IGN);
    if (!getenv("KUBECONFIG")) {
        fprintf(stderr, "KUBECONFIG is not set: start the test bed first\n");
        return 1;
    }
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/ts-e2e-slurm-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror(tmpdir);
        return 1;
    }
    snprintf(run, sizeof(run), "s%lx%lx", (unsigned long)getpid() & 0xffff,
             (unsigned long)time(NULL) & 0xffff);
    admin = main_client();
    if (!admin)
        return 1;
    if (slurm_up() != 0) {
        fprintf(stderr, "slurm-up.sh failed (logs in %s/log)\n", bed.dir);
        slurm_down();
        return 1;
    }
    port = e2e_free_port_or_exit();
    snprintf(cfg, sizeof(cfg), "%s/scheduler-config.yaml", tmpdir);
    f = fopen(cfg, "w");
    if (!f) {
        perror(cfg);
        slurm_down();
        return 1;
    }
    e2e_sched_config(f, port, BIND_TIMEOUT_S);
    fclose(f);
    snprintf(args, sizeof(args), "restart %s", cfg);
    if (make_nodes() != 0 || e2e_sched_ctl(args) != 0) {
        fprintf(stderr, "cannot make the nodes or restart kube-scheduler with %s\n", cfg);
        e2e_sched_ctl("restore");
        drop_nodes();
        slurm_down();
        return 1;
    }
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, two_nodes_run_on_the_nodes_slurm_chose);
    tcase_add_test(tc, a_full_partition_waits_and_a_restart_submits_nothing_twice);
    tcase_add_test(tc, nodes_named_apart_from_slurm_map_through_a_node_label);
    tcase_add_test(tc, scancel_by_an_admin_stops_the_trainjob);
    tcase_add_test(tc, a_deleted_trainjob_cancels_its_slurm_job);
    tcase_add_test(
        tc, a_trainjob_deleted_while_trainsched_is_down_has_its_job_cancelled_at_the_next_start);
    tcase_add_test(tc, a_trainsched_without_the_slurm_backend_lets_a_deleted_trainjob_go);
    tcase_add_test(tc, slurmrestd_stopped_for_20_s_loses_and_duplicates_nothing);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (e2e_sched_ctl("restore") != 0) {
        fprintf(stderr, "could not restore the test bed's kube-scheduler config\n");
        failed++;
    }
    drop_nodes();
    slurm_down();
    common_kube_client_destroy(admin);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    (void)system(cmd);
    return failed ? 1 : 0;
}
