/*
 * tests/e2e/test_reconciler.c - the TrainJob reconciler (reconciler/reconciler.h) against the
 * real kube-apiserver of the test bed, with the upstream JobSet, Trainer and coscheduling CRDs
 * and, when the bed runs them (TESTBED_JOBSET_RUNNING, TESTBED_KWOK_RUNNING), the real JobSet
 * controller, kube-controller-manager's Job controller, kube-scheduler and kwok nodes, so a
 * TrainJob runs to Complete without any status written by the test.
 *
 * The reconciler runs in this process as trainsched's ServiceAccount (the shipped RBAC), watching
 * one fresh namespace per test. Every child is written with fieldValidation=Strict.
 * Source of the expected behaviour: ../shared/reference/trainer.md §2, §4 and cases 58-70.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/events.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/sshkey.h"
#include "common/yaml.h"
#include "e2eutil.h"
#include "reconciler/core.h"
#include "reconciler/reconciler.h"
#include "trainjob/status.h"
#include "trainjob/trainjob.h"

static struct common_kube *admin, *tsk;
static struct rc_reconciler *rec;
static struct common_events *events; /* the reconciler's Event recorder (as trainsched's SA) */
static char ns[128];

/* ---- helpers ---- */

static void create(const struct common_kube_resource *r, json_t *obj)
{
    struct common_kube_write_opts wo = {.strict = 1};
    struct common_error err;
    const char *ons =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace"));
    enum common_rc rc = common_kube_create(admin, r, ons ? ons : ns, obj, &wo, NULL, &err);
    ck_assert_msg(rc == COMMON_OK, "create %s: %s", r->resource, err.msg);
    json_decref(obj);
}

static json_t *get(const struct common_kube_resource *r, const char *name)
{
    return e2e_get(admin, r, ns, name);
}

static void merge_patch(const struct common_kube_resource *r, const char *name, const char *body)
{
    struct common_error err;
    enum common_rc rc =
        common_kube_patch(admin, r, ns, name, COMMON_KUBE_MERGE_PATCH, body, NULL, NULL, &err);
    ck_assert_msg(rc == COMMON_OK, "patch %s %s: %s", r->resource, name, err.msg);
}

/* wait up to secs for pred(ctx) to return a non-NULL object (returned, a new reference) */
typedef e2e_named_fn pred_fn;
static json_t *wait_for(double secs, pred_fn pred, const char *name, const void *arg,
                        const char *what)
{
    return e2e_wait_named(secs, 100, pred, name, arg, what, ns);
}

static json_t *jobset_exists(const char *name, const void *arg)
{
    (void)arg;
    return get(&common_kube_jobsets, name);
}

static const json_t *cond(const json_t *tj, const char *type)
{
    return trainjob_status_condition(json_object_get(tj, "status"), type);
}

struct want_cond {
    const char *type, *status, *reason;
};

static json_t *tj_has_cond(const char *name, const void *arg)
{
    const struct want_cond *w = arg;
    return e2e_tj_cond(admin, ns, name, w->type, w->status, w->reason);
}

static json_t *wait_cond(const char *name, const char *type, const char *status, const char *reason,
                         double secs)
{
    struct want_cond w = {type, status, reason};
    char what[256];
    snprintf(what, sizeof(what), "condition %s=%s%s%s", type, status, reason ? " reason " : "",
             reason ? reason : "");
    return wait_for(secs, tj_has_cond, name, &w, what);
}

/* 1 when every field of want has the same value in have (objects recursively, arrays item by
 * item with equal length); the path of the first difference goes to where. */
static int subset(const json_t *want, const json_t *have, char *where, size_t size,
                  const char *path)
{
    char sub[1024];
    if (json_is_object(want)) {
        const char *k;
        json_t *v;
        if (!json_is_object(have)) {
            snprintf(where, size, "%s: not an object in the cluster", path);
            return 0;
        }
        json_object_foreach((json_t *)want, k, v)
        {
            snprintf(sub, sizeof(sub), "%s.%s", path, k);
            if (!subset(v, json_object_get(have, k), where, size, sub))
                return 0;
        }
        return 1;
    }
    if (json_is_array(want)) {
        size_t i;
        json_t *v;
        if (!json_is_array(have) || json_array_size(have) != json_array_size(want)) {
            snprintf(where, size, "%s: array length %zu, cluster has %zu", path,
                     json_array_size(want), json_is_array(have) ? json_array_size(have) : 0);
            return 0;
        }
        json_array_foreach(want, i, v)
        {
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            if (!subset(v, json_array_get(have, i), where, size, sub))
                return 0;
        }
        return 1;
    }
    if (!have || !json_equal((json_t *)want, (json_t *)have)) {
        char *a = json_dumps(want, JSON_ENCODE_ANY),
             *b = have ? json_dumps(have, JSON_ENCODE_ANY) : NULL;
        snprintf(where, size, "%s: render has %s, cluster has %s", path, a ? a : "?",
                 b ? b : "(nothing)");
        free(a);
        free(b);
        return 0;
    }
    return 1;
}

/* metadata.labels[key] of obj (a string, or "" when missing) */
static const char *label_of(const json_t *obj, const char *key)
{
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), key));
    return v ? v : "";
}

/* 1 when obj's managedFields has an entry of manager with operation */
static int managed_by(const json_t *obj, const char *manager, const char *operation)
{
    const json_t *mf = json_object_get(json_object_get(obj, "metadata"), "managedFields");
    size_t i;
    const json_t *e;
    json_array_foreach(mf, i, e)
    {
        const char *m = json_string_value(json_object_get(e, "manager"));
        const char *op = json_string_value(json_object_get(e, "operation"));
        if (m && op && strcmp(m, manager) == 0 && strcmp(op, operation) == 0)
            return 1;
    }
    return 0;
}

static void start_reconciler(void)
{
    struct rc_opts o;
    struct common_error err;

    e2e_rc_opts(&o, tsk, ns);
    events = common_events_create(tsk, "e2e-reconciler", NULL, &err);
    ck_assert_msg(events != NULL, "%s", err.msg);
    o.events = events;
    rec = e2e_rc_start(&o);
}

static void setup(void)
{
    enum common_log_level level;
    if (getenv("E2E_LOG_LEVEL") && common_log_parse_level(getenv("E2E_LOG_LEVEL"), &level) == 0)
        common_log_set_level(level);
    admin = e2e_client(20000, 0);
    tsk = e2e_client(20000, 1);
    e2e_make_ns(admin, "rec", ns, sizeof(ns));
    start_reconciler();
}

static void drop_status_policy(void);

static void teardown(void)
{
    drop_status_policy();
    rc_destroy(rec);
    rec = NULL;
    common_events_destroy(events);
    events = NULL;
    e2e_drop_ns(admin, ns);
    common_kube_client_destroy(tsk);
    common_kube_client_destroy(admin);
}

/* A namespaced runtime with one replicated job `node` (ancestor trainer), a coscheduling
 * PodGroup, and a label marker; pods sleep briefly (kwok completes Job pods anyway). */
static json_t *plain_runtime(const char *name, const char *marker)
{
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainingRuntime\n"
                     "metadata: {name: %s, namespace: %s}\n"
                     "spec:\n"
                     "  mlPolicy: {numNodes: 1}\n"
                     "  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 60}}\n"
                     "  template:\n"
                     "    metadata: {labels: {snapshot-test-marker: %s}}\n"
                     "    spec:\n"
                     "      replicatedJobs:\n"
                     "      - name: node\n"
                     "        template:\n"
                     "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: "
                     "trainer}}\n"
                     "          spec:\n"
                     "            template:\n"
                     "              spec:\n"
                     "                containers:\n"
                     "                - name: node\n"
                     "                  image: busybox:1.36\n"
                     "                  command: [sh, -c, 'sleep 1']\n"
                     "                  resources: {requests: {cpu: 100m, memory: 64Mi}}\n",
                     name, ns, marker);
}

/* plain_runtime whose pods can never be scheduled (a nodeSelector no node has), so its JobSet
 * stays active: for activeDeadlineSeconds */
static json_t *stuck_runtime(const char *name)
{
    json_t *rt = plain_runtime(name, "stuck");
    json_t *v = json_object_get(json_object_get(rt, "spec"), "template");
    v = json_array_get(json_object_get(json_object_get(v, "spec"), "replicatedJobs"), 0);
    v = json_object_get(json_object_get(json_object_get(v, "template"), "spec"), "template");
    v = json_object_get(v, "spec");
    ck_assert(json_is_object(v));
    json_object_set_new(v, "nodeSelector", json_pack("{s:s}", "trainsched.io/e2e", "nowhere"));
    return rt;
}

static json_t *trainjob(const char *name, const char *kind, const char *runtime,
                        const char *extra_spec)
{
    return e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\n"
                     "kind: TrainJob\n"
                     "metadata: {name: %s, namespace: %s}\n"
                     "spec:\n"
                     "  runtimeRef: {name: %s, kind: %s}\n"
                     "%s",
                     name, ns, runtime, kind, extra_spec ? extra_spec : "");
}

/* the child objects render makes for TrainJob `name` as the cluster has it, with runtime */
static json_t *render_for(const json_t *tj, const json_t *runtime)
{
    struct common_arena *a = common_arena_create(0);
    struct trainjob_output out = {0};
    struct trainjob_options o = {.keygen = common_sshkey_ecdsa_p521};
    struct common_error err;
    enum common_rc rc;
    trainjob_errors_init(&out.errors, a);
    rc = trainjob_render(a, tj, runtime, &o, &out, &err);
    ck_assert_msg(rc == COMMON_OK && out.objects, "render: %s", err.msg);
    common_arena_destroy(a);
    return out.objects;
}

static const struct common_kube_resource *res_of(const json_t *obj)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (strcmp(kind, "ConfigMap") == 0)
        return &common_kube_configmaps;
    if (strcmp(kind, "Secret") == 0)
        return &common_kube_secrets;
    if (strcmp(kind, "JobSet") == 0)
        return &common_kube_jobsets;
    if (strcmp(kind, "PodGroup") == 0)
        return &common_kube_podgroups;
    ck_abort_msg("unexpected kind %s", kind);
    return NULL;
}

/* every rendered object is in the cluster with every field render set (server defaults may
 * add more); Secrets' key material is random per render, so only their shape is compared */
static void assert_cluster_matches_render(const json_t *tj, const json_t *runtime)
{
    json_t *objs = render_for(tj, runtime);
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        json_t *have = get(res_of(o), name);
        char where[2048] = "";
        ck_assert_msg(have != NULL, "%s %s/%s is not in the cluster",
                      json_string_value(json_object_get(o, "kind")), ns, name);
        if (strcmp(json_string_value(json_object_get(o, "kind")), "Secret") == 0) {
            json_t *w = json_deep_copy(o);
            json_object_del(w, "data");
            json_object_del(w, "stringData");
            ck_assert_msg(subset(w, have, where, sizeof(where), "Secret"), "%s", where);
            ck_assert(json_object_get(json_object_get(have, "data"), "ssh-privatekey") != NULL);
            json_decref(w);
        } else {
            ck_assert_msg(subset(o, have, where, sizeof(where),
                                 json_string_value(json_object_get(o, "kind"))),
                          "%s differs from render: %s", name, where);
        }
        json_decref(have);
    }
    json_decref(objs);
}

/* ---- tests ---- */

/* One TrainJob per built-in runtime (installed as ClusterTrainingRuntimes from
 * manifests/runtimes): the objects in the cluster are render's. */
START_TEST(builtin_runtimes_match_render)
{
    struct common_error err;
    const char *const *names = e2e_builtin_runtimes;
    size_t n = E2E_N_BUILTIN_RUNTIMES;

    e2e_apply_builtin_runtimes(admin);
    for (size_t i = 0; i < n; i++) {
        char tjname[64];
        snprintf(tjname, sizeof(tjname), "tj%zu", i);
        create(&common_kube_trainjobs, trainjob(tjname, "ClusterTrainingRuntime", names[i], NULL));
    }
    for (size_t i = 0; i < n; i++) {
        char tjname[64];
        json_t *js, *tj, *rt = NULL;
        snprintf(tjname, sizeof(tjname), "tj%zu", i);
        js = wait_for(30, jobset_exists, tjname, NULL, "the JobSet");
        tj = get(&common_kube_trainjobs, tjname);
        ck_assert(common_kube_get(admin, &common_kube_clustertrainingruntimes, NULL, names[i], &rt,
                                  &err) == COMMON_OK);
        assert_cluster_matches_render(tj, rt);
        /* written by trainsched's field manager, with server-side apply */
        ck_assert_msg(managed_by(js, "trainsched", "Apply"), "JobSet %s not applied by trainsched",
                      tjname);
        json_decref(js);
        json_decref(tj);
        json_decref(rt);
    }
}
END_TEST

/* JobSet status becomes TrainJob conditions and jobsStatus: with the real JobSet controller,
 * Job controller, scheduler and kwok nodes when the bed has them (the pods run and succeed),
 * else through the JobSet status subresource written by the test. */
START_TEST(jobset_status_flows_back)
{
    int real = getenv("TESTBED_JOBSET_RUNNING") &&
               strcmp(getenv("TESTBED_JOBSET_RUNNING"), "1") == 0 &&
               getenv("TESTBED_KWOK_RUNNING") && strcmp(getenv("TESTBED_KWOK_RUNNING"), "1") == 0;
    json_t *tj, *js;
    const json_t *c, *jst;

    create(&common_kube_trainingruntimes, plain_runtime("plain", "v1"));
    if (real) {
        char node[128];
        snprintf(node, sizeof(node), "kwok-%s", ns);
        json_t *n = e2e_yamlf("apiVersion: v1\nkind: Node\n"
                              "metadata:\n  name: %s\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                              "  labels: {type: kwok}\n"
                              "status:\n  allocatable: {cpu: '32', memory: 256Gi, pods: '110'}\n"
                              "  capacity: {cpu: '32', memory: 256Gi, pods: '110'}\n",
                              node);
        struct common_error err;
        enum common_rc rc =
            common_kube_create(admin, &common_kube_nodes, NULL, n, NULL, NULL, &err);
        ck_assert_msg(rc == COMMON_OK || rc == COMMON_EEXISTS, "%s", err.msg);
        json_decref(n);
    }
    create(&common_kube_trainjobs, trainjob("run", "TrainingRuntime", "plain", NULL));
    js = wait_for(30, jobset_exists, "run", NULL, "the JobSet");
    json_decref(js);
    if (!real) {
        merge_patch(&common_kube_jobsets, "run",
                    "{\"status\":{\"conditions\":[{\"type\":\"Completed\",\"status\":\"True\","
                    "\"reason\":\"AllJobsCompleted\",\"message\":\"jobset completed "
                    "successfully\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}],"
                    "\"replicatedJobsStatus\":[{\"name\":\"node\",\"ready\":0,\"succeeded\":1,"
                    "\"failed\":0,\"active\":0,\"suspended\":0}]}}");
    }
    fprintf(stderr, "jobset_status_flows_back: %s\n",
            real ? "real JobSet controller, Job controller, scheduler and kwok"
                 : "JobSet status written by the test");
    tj = wait_cond("run", "Complete", "True", "AllJobsCompleted", 120);
    c = cond(tj, "Complete");
    ck_assert_str_eq(json_string_value(json_object_get(c, "message")),
                     "jobset completed successfully");
    jst = json_array_get(json_object_get(json_object_get(tj, "status"), "jobsStatus"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(jst, "name")), "node");
    ck_assert_int_eq(json_integer_value(json_object_get(jst, "succeeded")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(jst, "failed")), 0);
    /* a never-suspended job has no Suspended condition (trainer.md §4.1) */
    ck_assert(cond(tj, "Suspended") == NULL);
    ck_assert(cond(tj, RC_COND_CREATED) == NULL);
    json_decref(tj);
}
END_TEST

static json_t *jobset_suspend_is(const char *name, const void *arg)
{
    json_t *js = get(&common_kube_jobsets, name);
    int want = *(const int *)arg;
    if (js && json_is_true(json_object_get(json_object_get(js, "spec"), "suspend")) == want)
        return js;
    json_decref(js);
    return NULL;
}

/* Created suspended: JobSet suspend=true and Suspended=True; resumed: JobSet suspend=false and
 * Suspended=False Resumed (cases 58). A runtime edited meanwhile does not reach the JobSet
 * (case 67); the PodGroup edited by hand while suspended is put back (C22). */
START_TEST(suspend_resume_and_snapshot)
{
    int yes = 1, no = 0;
    json_t *tj, *js, *pg, *rt;
    const json_t *c;

    create(&common_kube_trainingruntimes, plain_runtime("rt", "snapshot-v1"));
    create(&common_kube_trainjobs, trainjob("sus", "TrainingRuntime", "rt", "  suspend: true\n"));
    js = wait_for(30, jobset_suspend_is, "sus", &yes, "a suspended JobSet");
    json_decref(js);
    tj = wait_cond("sus", "Suspended", "True", "Suspended", 30);
    c = cond(tj, "Suspended");
    ck_assert_str_eq(json_string_value(json_object_get(c, "message")), "TrainJob is suspended");
    json_decref(tj);

    /* the PodGroup is kept at the desired counts while suspended */
    pg = get(&common_kube_podgroups, "sus");
    ck_assert(pg != NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(pg, "spec"), "minMember")),
                     1);
    json_decref(pg);
    merge_patch(&common_kube_podgroups, "sus", "{\"spec\":{\"minMember\":7}}");
    /* edit the runtime: existing TrainJobs keep their snapshot */
    merge_patch(&common_kube_trainingruntimes, "rt",
                "{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"snapshot-test-marker\":"
                "\"snapshot-v2\"}}}}}");
    /* the PodGroup change queues the TrainJob; while suspended it is re-applied */
    for (double end = e2e_now_s() + 20;; e2e_nap(100)) {
        pg = get(&common_kube_podgroups, "sus");
        if (json_integer_value(json_object_get(json_object_get(pg, "spec"), "minMember")) == 1)
            break;
        json_decref(pg);
        ck_assert_msg(e2e_now_s() < end, "PodGroup minMember was not put back to 1");
    }
    json_decref(pg);

    merge_patch(&common_kube_trainjobs, "sus", "{\"spec\":{\"suspend\":false}}");
    js = wait_for(30, jobset_suspend_is, "sus", &no, "a resumed JobSet");
    ck_assert_str_eq(label_of(js, "snapshot-test-marker"), "snapshot-v1");
    json_decref(js);
    tj = wait_cond("sus", "Suspended", "False", "Resumed", 30);
    c = cond(tj, "Suspended");
    ck_assert_str_eq(json_string_value(json_object_get(c, "message")), "TrainJob is resumed");
    json_decref(tj);
    /* the snapshot still holds v1 while the live runtime says v2 */
    rt = get(&common_kube_trainingruntimes, "rt");
    ck_assert_str_eq(
        label_of(json_object_get(json_object_get(rt, "spec"), "template"), "snapshot-test-marker"),
        "snapshot-v2");
    json_decref(rt);
    {
        json_t *cm = get(&common_kube_configmaps, "sus-runtime-snapshot");
        const char *data =
            json_string_value(json_object_get(json_object_get(cm, "data"), "runtime"));
        ck_assert(data && strstr(data, "snapshot-v1") && !strstr(data, "snapshot-v2"));
        json_decref(cm);
    }
}
END_TEST

/* A JobSet deleted by hand comes back; a deleted snapshot is recreated (case 68). */
START_TEST(deleted_children_come_back)
{
    struct common_error err;
    json_t *js, *js2;
    char uid[128];

    create(&common_kube_trainingruntimes, plain_runtime("rt", "m"));
    create(&common_kube_trainjobs, trainjob("back", "TrainingRuntime", "rt", "  suspend: true\n"));
    js = wait_for(30, jobset_exists, "back", NULL, "the JobSet");
    snprintf(uid, sizeof(uid), "%s",
             json_string_value(json_object_get(json_object_get(js, "metadata"), "uid")));
    json_decref(js);
    ck_assert(common_kube_delete(admin, &common_kube_jobsets, ns, "back", NULL, NULL, "Background",
                                 &err) == COMMON_OK);
    for (double end = e2e_now_s() + 30;; e2e_nap(100)) {
        js2 = get(&common_kube_jobsets, "back");
        if (js2 &&
            strcmp(json_string_value(json_object_get(json_object_get(js2, "metadata"), "uid")),
                   uid) != 0)
            break;
        json_decref(js2);
        ck_assert_msg(e2e_now_s() < end, "the deleted JobSet did not come back");
    }
    json_decref(js2);
    ck_assert(common_kube_delete(admin, &common_kube_configmaps, ns, "back-runtime-snapshot", NULL,
                                 NULL, NULL, &err) == COMMON_OK);
    for (double end = e2e_now_s() + 30;; e2e_nap(100)) {
        json_t *cm = get(&common_kube_configmaps, "back-runtime-snapshot");
        if (cm && json_object_get(json_object_get(cm, "data"), "runtime")) {
            json_decref(cm);
            break;
        }
        json_decref(cm);
        ck_assert_msg(e2e_now_s() < end, "the deleted snapshot was not recreated");
    }
}
END_TEST

static uint64_t reconciles_now(void)
{
    struct rc_stats s;
    rc_get_stats(rec, &s);
    return s.reconciles;
}

/* Bad input that slipped past admission: ResourcesCreated=False naming the field, no crash, no
 * retry storm; a missing runtime is retried when it appears. */
START_TEST(bad_input_conditions)
{
    json_t *tj;
    const json_t *c;
    const char *msg;
    uint64_t before;

    create(&common_kube_trainingruntimes, plain_runtime("rt", "m"));
    /* a runtime patch naming a replicated job the runtime does not have (webhook-only rule) */
    create(&common_kube_trainjobs,
           trainjob("badpatch", "TrainingRuntime", "rt",
                    "  runtimePatches:\n"
                    "  - manager: example.com/tool\n"
                    "    trainingRuntimeSpec:\n"
                    "      template:\n"
                    "        spec:\n"
                    "          replicatedJobs:\n"
                    "          - name: nosuchjob\n"
                    "            template: {spec: {template: {spec: {nodeSelector: {a: b}}}}}\n"));
    tj = wait_cond("badpatch", RC_COND_CREATED, "False", RC_REASON_INVALID_TRAINJOB, 30);
    msg = json_string_value(json_object_get(cond(tj, RC_COND_CREATED), "message"));
    ck_assert_msg(strstr(msg, "spec.runtimePatches") != NULL, "message: %s", msg);
    json_decref(tj);
    ck_assert(get(&common_kube_jobsets, "badpatch") == NULL);

    /* no retry storm: a few seconds later the failed keys were not reconciled again */
    e2e_nap(1000);
    before = reconciles_now();
    e2e_nap(3000);
    ck_assert_msg(reconciles_now() - before <= 2, "%llu reconciles in 3 s of quiet",
                  (unsigned long long)(reconciles_now() - before));

    /* a Flux runtime (Trainer v2.2+): the JobSet, the entrypoint ConfigMap and the CURVE
     * Secret, owned by the TrainJob (suspended: no pods, so its JobSet stays quiet; after the
     * retry-storm check, whose quiet window its creation would disturb) */
    create(&common_kube_trainingruntimes,
           e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
                     "metadata: {name: fluxrt, namespace: %s}\n"
                     "spec:\n  mlPolicy: {numNodes: 1, flux: {numProcPerNode: 1}}\n"
                     "  template:\n    spec:\n      replicatedJobs:\n      - name: node\n"
                     "        template:\n          metadata: {labels: "
                     "{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
                     "          spec: {template: {spec: {containers: [{name: node, image: x}]}}}\n",
                     ns));
    create(&common_kube_trainjobs, trainjob("flux", "TrainingRuntime", "fluxrt",
                                            "  suspend: true\n  trainer: {numNodes: 2}\n"));
    json_decref(wait_for(30, jobset_exists, "flux", NULL, "the Flux TrainJob's JobSet"));
    {
        json_t *cm = get(&common_kube_configmaps, "flux-flux-entrypoint");
        json_t *sec = get(&common_kube_secrets, "flux-flux-curve");
        ck_assert_msg(
            cm && json_is_string(json_object_get(json_object_get(cm, "data"), "entrypoint.sh")),
            "ConfigMap flux-flux-entrypoint with entrypoint.sh");
        ck_assert_msg(
            sec && json_is_string(json_object_get(json_object_get(sec, "data"), "curve.cert")),
            "Secret flux-flux-curve with curve.cert");
        json_decref(cm);
        json_decref(sec);
    }

    /* missing runtime: a condition, then the JobSet once the runtime exists */
    create(&common_kube_trainjobs, trainjob("later", "TrainingRuntime", "notyet", NULL));
    tj = wait_cond("later", RC_COND_CREATED, "False", RC_REASON_RUNTIME_NOT_FOUND, 30);
    msg = json_string_value(json_object_get(cond(tj, RC_COND_CREATED), "message"));
    ck_assert_msg(strstr(msg, "notyet") != NULL, "message: %s", msg);
    json_decref(tj);
    create(&common_kube_trainingruntimes, plain_runtime("notyet", "m"));
    json_decref(wait_for(30, jobset_exists, "later", NULL, "the JobSet once the runtime exists"));
    for (double end = e2e_now_s() + 20;; e2e_nap(100)) {
        tj = get(&common_kube_trainjobs, "later");
        c = cond(tj, RC_COND_CREATED);
        json_decref(tj);
        if (!c)
            break;
        ck_assert_msg(e2e_now_s() < end, "ResourcesCreated was not cleared");
    }
}
END_TEST

/* A TrainJob labelled kueue.x-k8s.io/queue-name on a cluster whose Kueue did not take it (this
 * bed runs no Kueue: no runtimePatches entry of kueue.x-k8s.io/manager) gets a condition naming
 * the label and nothing built, so it does not run outside its queue's quota; without the label
 * it is built as usual. */
START_TEST(queue_label_without_kueue)
{
    json_t *tj;
    const char *msg;

    if (getenv("TESTBED_KUEUE_RUNNING") && strcmp(getenv("TESTBED_KUEUE_RUNNING"), "1") == 0) {
        fprintf(stderr, "queue_label_without_kueue: SKIP (this bed runs Kueue, whose webhook "
                        "takes the TrainJob; tests/e2e/test_kueue.c covers that)\n");
        return;
    }
    create(&common_kube_trainingruntimes, plain_runtime("rt", "m"));
    create(&common_kube_trainjobs,
           e2e_yamlf("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                     "metadata: {name: queued, namespace: %s, labels: "
                     "{kueue.x-k8s.io/queue-name: team-queue}}\n"
                     "spec:\n  runtimeRef: {name: rt, kind: TrainingRuntime}\n",
                     ns));
    tj = wait_cond("queued", RC_COND_CREATED, "False", RC_REASON_QUEUE_WITHOUT_KUEUE, 30);
    msg = json_string_value(json_object_get(cond(tj, RC_COND_CREATED), "message"));
    ck_assert_msg(strstr(msg, "metadata.labels[kueue.x-k8s.io/queue-name]") &&
                      strstr(msg, "team-queue") && strstr(msg, "kueue.x-k8s.io/manager"),
                  "message: %s", msg);
    json_decref(tj);
    ck_assert(get(&common_kube_jobsets, "queued") == NULL);
    ck_assert(get(&common_kube_configmaps, "queued-runtime-snapshot") == NULL);
    merge_patch(&common_kube_trainjobs, "queued",
                "{\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":null}}}");
    json_decref(wait_for(30, jobset_exists, "queued", NULL, "the JobSet once the label is gone"));
}
END_TEST

/* A ConfigMap <name>-runtime-snapshot made by hand before the TrainJob blocks it
 * (InvalidRuntimeSnapshot); deleting that ConfigMap lets the TrainJob go on. */
START_TEST(handmade_snapshot_blocks_until_deleted)
{
    struct common_error err;
    json_t *tj;
    const char *msg;

    create(&common_kube_trainingruntimes, plain_runtime("rt", "m"));
    create(&common_kube_configmaps,
           e2e_yamlf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hm-runtime-snapshot, "
                     "namespace: %s}\ndata: {runtime: 'not a runtime'}\n",
                     ns));
    create(&common_kube_trainjobs, trainjob("hm", "TrainingRuntime", "rt", NULL));
    tj = wait_cond("hm", RC_COND_CREATED, "False", RC_REASON_INVALID_SNAPSHOT, 30);
    msg = json_string_value(json_object_get(cond(tj, RC_COND_CREATED), "message"));
    ck_assert_msg(strstr(msg, "hm-runtime-snapshot") && strstr(msg, "not controlled"),
                  "message: %s", msg);
    json_decref(tj);
    ck_assert(get(&common_kube_jobsets, "hm") == NULL);
    ck_assert(common_kube_delete(admin, &common_kube_configmaps, ns, "hm-runtime-snapshot", NULL,
                                 NULL, NULL, &err) == COMMON_OK);
    json_decref(wait_for(30, jobset_exists, "hm", NULL, "the JobSet once the ConfigMap is gone"));
}
END_TEST

/* managedBy another controller: nothing created, status untouched (case 4). */
START_TEST(managed_by_other)
{
    json_t *tj;
    create(&common_kube_trainingruntimes, plain_runtime("rt", "m"));
    create(&common_kube_trainjobs,
           trainjob("mk", "TrainingRuntime", "rt", "  managedBy: kueue.x-k8s.io/multikueue\n"));
    create(&common_kube_trainjobs, trainjob("ours", "TrainingRuntime", "rt", NULL));
    json_decref(wait_for(30, jobset_exists, "ours", NULL, "the JobSet of a TrainJob we manage"));
    e2e_nap(1000);
    ck_assert(get(&common_kube_jobsets, "mk") == NULL);
    ck_assert(get(&common_kube_configmaps, "mk-runtime-snapshot") == NULL);
    tj = get(&common_kube_trainjobs, "mk");
    ck_assert(json_object_get(tj, "status") == NULL ||
              json_object_size(json_object_get(tj, "status")) == 0);
    json_decref(tj);
}
END_TEST

static json_t *jobset_gone(const char *name, const void *arg)
{
    json_t *js = get(&common_kube_jobsets, name);
    (void)arg;
    if (js) {
        /* a JobSet being deleted (foreground finalizers) counts as gone */
        int deleting =
            json_object_get(json_object_get(js, "metadata"), "deletionTimestamp") != NULL;
        json_decref(js);
        return deleting ? json_true() : NULL;
    }
    return json_true();
}

/* 1 when no status.jobsStatus entry of tj shows an active or ready Job */
static int no_active_jobs_in(const json_t *tj)
{
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(json_object_get(tj, "status"), "jobsStatus"), i, j)
    {
        if (json_integer_value(json_object_get(j, "active")) != 0 ||
            json_integer_value(json_object_get(j, "ready")) != 0)
            return 0;
    }
    return 1;
}

static json_t *no_active_jobs(const char *name, const void *arg)
{
    json_t *tj = get(&common_kube_trainjobs, name);
    (void)arg;
    if (tj && no_active_jobs_in(tj))
        return tj;
    json_decref(tj);
    return NULL;
}

/* how many times obj's Events with reason happened: Event objects found by involvedObject.uid
 * (so an Event without regarding.uid is not counted), each counting its `count` (a series) */
static long count_events(const json_t *obj, const char *reason)
{
    const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
    json_t *items, *it;
    size_t i;
    long n = 0;

    ck_assert_int_eq(common_events_flush(events, 20000), COMMON_OK);
    items = e2e_events_of(admin, ns, uid, reason);
    json_array_foreach(items, i, it)
    {
        /* repeats of an events.k8s.io Event are a series: the core view keeps the count in
         * series.count ("count" is the old API's deprecatedCount) */
        json_int_t cnt = json_integer_value(json_object_get(it, "count"));
        json_int_t ser =
            json_integer_value(json_object_get(json_object_get(it, "series"), "count"));
        if (ser > cnt)
            cnt = ser;
        n += cnt > 1 ? (long)cnt : 1;
    }
    json_decref(items);
    return n;
}

/* activeDeadlineSeconds: Failed=True DeadlineExceeded and the JobSet deleted (case 62). */
START_TEST(active_deadline)
{
    json_t *tj;
    create(&common_kube_trainingruntimes, stuck_runtime("rt"));
    create(&common_kube_trainjobs,
           trainjob("dl", "TrainingRuntime", "rt", "  activeDeadlineSeconds: 2\n"));
    tj = wait_cond("dl", "Failed", "True", TRAINJOB_DEADLINE_REASON, 30);
    ck_assert_str_eq(json_string_value(json_object_get(cond(tj, "Failed"), "message")),
                     TRAINJOB_DEADLINE_MESSAGE);
    json_decref(tj);
    json_decref(wait_for(30, jobset_gone, "dl", NULL, "the JobSet to be deleted"));
    /* settled: no Job shown active or ready any more (once the JobSet's foreground deletion has
     * finished: how long that takes depends on the machine, so it is waited for), the JobSet
     * stays gone, one Failed Event */
    json_decref(wait_for(120, no_active_jobs, "dl", NULL, "jobsStatus without active Jobs"));
    e2e_nap(2000);
    tj = get(&common_kube_trainjobs, "dl");
    ck_assert_msg(no_active_jobs_in(tj), "a Job shows active again after DeadlineExceeded");
    ck_assert_int_eq(count_events(tj, "Failed"), 1);
    json_decref(tj);
    ck_assert_msg(jobset_gone("dl", NULL) != NULL, "the JobSet came back after the deadline");
}
END_TEST

/*
 * Many TrainJobs past activeDeadlineSeconds at once, each announced Failed exactly once. The
 * reconcile that fails a TrainJob deletes its JobSet, records the Event and then writes the
 * status; the JobSet's deletion queues the TrainJob again at once, and that reconcile may read a
 * cached TrainJob that does not show the Failed condition yet. Without the reconciler's record of
 * what it announced, that second reconcile announced Failed again (the duplicate Event a user
 * saw). Several TrainJobs and two workers give the race its chances.
 */
#define DEADLINE_JOBS 12
START_TEST(active_deadline_announces_failed_once_per_trainjob)
{
    char name[32];
    long total = 0;
    create(&common_kube_trainingruntimes, stuck_runtime("rt"));
    for (int i = 0; i < DEADLINE_JOBS; i++) {
        snprintf(name, sizeof(name), "dl-%02d", i);
        create(&common_kube_trainjobs,
               trainjob(name, "TrainingRuntime", "rt", "  activeDeadlineSeconds: 2\n"));
    }
    for (int i = 0; i < DEADLINE_JOBS; i++) {
        snprintf(name, sizeof(name), "dl-%02d", i);
        json_decref(wait_cond(name, "Failed", "True", TRAINJOB_DEADLINE_REASON, 60));
        json_decref(wait_for(60, jobset_gone, name, NULL, "the JobSet to be deleted"));
    }
    e2e_nap(5000); /* settled: every requeue has run */
    for (int i = 0; i < DEADLINE_JOBS; i++) {
        json_t *tj;
        long n;
        snprintf(name, sizeof(name), "dl-%02d", i);
        tj = get(&common_kube_trainjobs, name);
        n = count_events(tj, "Failed");
        json_decref(tj);
        if (n != 1)
            fprintf(stderr, "%s: %ld Failed Events\n", name, n);
        total += n;
    }
    ck_assert_int_eq(total, DEADLINE_JOBS);
}
END_TEST

static const struct common_kube_resource vaps = {"admissionregistration.k8s.io", "v1",
                                                 "validatingadmissionpolicies", 0};
static const struct common_kube_resource vap_bindings = {"admissionregistration.k8s.io", "v1",
                                                         "validatingadmissionpolicybindings", 0};

/* delete the policy and binding of the test below (cluster-scoped: teardown calls it too) */
static void drop_status_policy(void)
{
    char pname[200];
    struct common_error err;
    snprintf(pname, sizeof(pname), "hold-failed-%s", ns);
    common_kube_delete(admin, &vap_bindings, NULL, pname, NULL, NULL, NULL, &err);
    common_kube_delete(admin, &vaps, NULL, pname, NULL, NULL, NULL, &err);
}

/*
 * The reconcile that fails a TrainJob past its deadline records the Failed Event before it
 * writes the status; when that write is refused (here by a ValidatingAdmissionPolicy on
 * trainjobs/status, as an API server error or timeout would), the TrainJob is retried with the
 * cached TrainJob still not Failed. Each retry must not announce Failed again: exactly one Event
 * once the write goes through.
 */
START_TEST(active_deadline_failed_event_once_when_the_status_write_is_retried)
{
    char pname[200];
    json_t *tj;
    long n;

    snprintf(pname, sizeof(pname), "hold-failed-%s", ns);
    create(&vaps,
           e2e_yamlf("apiVersion: admissionregistration.k8s.io/v1\n"
                     "kind: ValidatingAdmissionPolicy\n"
                     "metadata: {name: %s}\n"
                     "spec:\n"
                     "  failurePolicy: Fail\n"
                     "  matchConstraints:\n"
                     "    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}\n"
                     "    resourceRules:\n"
                     "    - apiGroups: [trainer.kubeflow.org]\n"
                     "      apiVersions: ['*']\n"
                     "      operations: [UPDATE]\n"
                     "      resources: [trainjobs/status]\n"
                     "  validations:\n"
                     "  - expression: \"!has(object.status) || !has(object.status.conditions) "
                     "|| !object.status.conditions.exists(c, c.type == 'Failed')\"\n"
                     "    message: the test holds the Failed status back\n",
                     pname, ns));
    create(&vap_bindings, e2e_yamlf("apiVersion: admissionregistration.k8s.io/v1\n"
                                    "kind: ValidatingAdmissionPolicyBinding\n"
                                    "metadata: {name: %s}\n"
                                    "spec: {policyName: %s, validationActions: [Deny]}\n",
                                    pname, pname));
    e2e_nap(3000); /* the API server loads the policy */
    create(&common_kube_trainingruntimes, stuck_runtime("rt"));
    create(&common_kube_trainjobs,
           trainjob("dlr", "TrainingRuntime", "rt", "  activeDeadlineSeconds: 3\n"));
    /* the Event comes first; the status write is refused and retried (backoff at most 2 s) */
    for (double end = e2e_now_s() + 60;; e2e_nap(500)) {
        tj = get(&common_kube_trainjobs, "dlr");
        if (count_events(tj, "Failed") >= 1)
            break;
        json_decref(tj);
        ck_assert_msg(e2e_now_s() < end, "no Failed Event in 60 s");
    }
    json_decref(tj);
    e2e_nap(6000);
    tj = get(&common_kube_trainjobs, "dlr");
    ck_assert_msg(cond(tj, "Failed") == NULL, "the policy did not hold the status back");
    json_decref(tj);
    drop_status_policy();
    tj = wait_cond("dlr", "Failed", "True", TRAINJOB_DEADLINE_REASON, 60);
    e2e_nap(3000); /* settled */
    n = count_events(tj, "Failed");
    json_decref(tj);
    ck_assert_int_eq(n, 1);
}
END_TEST

/* A JobSet whose Jobs the API server refuses (a volume mount naming no volume: pod validation
 * that neither Trainer's webhook nor the CRD checks) makes the JobSet controller record
 * JobCreationFailed Events and nothing else; the TrainJob says so in ResourcesCreated=False. */
START_TEST(jobset_job_creation_failure_reaches_the_trainjob)
{
    json_t *rt, *tj, *c;
    const char *msg;

    if (!getenv("TESTBED_JOBSET_RUNNING") || strcmp(getenv("TESTBED_JOBSET_RUNNING"), "1") != 0) {
        fprintf(stderr, "skipped: needs the JobSet controller (TESTBED_JOBSET=1)\n");
        return;
    }
    rt = plain_runtime("rt", "m");
    c = json_object_get(json_object_get(rt, "spec"), "template");
    c = json_array_get(json_object_get(json_object_get(c, "spec"), "replicatedJobs"), 0);
    c = json_object_get(json_object_get(json_object_get(c, "template"), "spec"), "template");
    c = json_array_get(json_object_get(json_object_get(c, "spec"), "containers"), 0);
    ck_assert(json_is_object(c));
    json_object_set_new(c, "volumeMounts",
                        json_pack("[{s:s, s:s}]", "name", "nosuch", "mountPath", "/data"));
    create(&common_kube_trainingruntimes, rt);
    create(&common_kube_trainjobs, trainjob("jcf", "TrainingRuntime", "rt", NULL));
    tj = wait_cond("jcf", RC_COND_CREATED, "False", RC_REASON_JOB_CREATION_FAILED, 120);
    msg = json_string_value(json_object_get(cond(tj, RC_COND_CREATED), "message"));
    ck_assert_msg(msg && strstr(msg, "cannot create its Jobs") && strstr(msg, "nosuch"),
                  "message: %s", msg ? msg : "(none)");
    fprintf(stderr, "ResourcesCreated=False JobCreationFailed: %s\n", msg);
    ck_assert_int_ge(count_events(tj, RC_REASON_JOB_CREATION_FAILED), 1);
    json_decref(tj);
}
END_TEST

/* The shipped manifests (kustomizations: the CRDs apart, then RBAC, config, Deployment, PDB,
 * Service) are accepted by the real API server: a server-side dry run with strict field
 * validation. */
START_TEST(manifests_apply_dry_run)
{
    char cmd[2048], line[1024];
    const char *kubectl = getenv("KUBECTL");
    FILE *p;
    enum { NDIRS = 8 };
    int n[NDIRS] = {0}, status;
    /* the CRDs, the base, and the overlay per backend (docs/backends.md) */
    static const char *const dirs[NDIRS] = {"manifests/crds",
                                            "manifests",
                                            "manifests/overlays/coscheduling",
                                            "manifests/overlays/volcano",
                                            "manifests/overlays/native",
                                            "manifests/overlays/kueue",
                                            "manifests/overlays/kai",
                                            "manifests/overlays/none"};

    ck_assert_msg(kubectl != NULL, "KUBECTL is not set (source the test bed's env file)");
    /* a dry run creates no Namespace, so the objects in kubeflow-system (the Kubeflow SDK's
     * public ConfigMap, its Role and RoleBinding) need it to exist, as a real apply -k, which
     * applies the Namespace first, has it */
    {
        struct common_error err;
        json_t *nso = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                                "metadata", "name", "kubeflow-system");
        enum common_rc rc =
            common_kube_create(admin, &common_kube_namespaces, NULL, nso, NULL, NULL, &err);
        ck_assert_msg(rc == COMMON_OK || rc == COMMON_EEXISTS, "%s", err.msg);
        json_decref(nso);
    }
    for (int d = 0; d < NDIRS; d++) {
        snprintf(cmd, sizeof(cmd),
                 "'%s' apply --server-side --force-conflicts --field-manager=e2e-dry-run "
                 "--dry-run=server --validate=strict -k '%s/%s' 2>&1",
                 kubectl, TS_SOURCE_DIR, dirs[d]);
        p = popen(cmd, "r");
        ck_assert(p != NULL);
        while (fgets(line, sizeof(line), p)) {
            fprintf(stderr, "%s: %s", dirs[d], line);
            if (strstr(line, "(server dry run)"))
                n[d]++;
        }
        status = pclose(p);
        ck_assert_msg(status == 0, "kubectl apply --dry-run=server -k %s failed (status %d)",
                      dirs[d], status);
    }
    /* the 3 CRDs on their own (kept on uninstall); then Namespace, ServiceAccount, 2
     * ClusterRoles, ClusterRoleBinding, RoleBinding, ConfigMap, Deployment,
     * PodDisruptionBudget, Service; the extender's ClusterRole and ClusterRoleBinding; Namespace
     * kubeflow-system with ConfigMap, Role and RoleBinding kubeflow-trainer-public */
    ck_assert_int_eq(n[0], 3);
    ck_assert_int_eq(n[1], 16);
    for (int d = 2; d < NDIRS; d++)
        ck_assert_msg(n[d] == 16, "%s: %d objects, want the base's 16", dirs[d], n[d]);
}
END_TEST

/* one TCase per test, so CK_RUN_CASE=<test name> runs one */
static void add(Suite *s, const char *name, const TTest *t)
{
    e2e_add_test(s, name, t, setup, teardown, 240);
}

static Suite *suite(void)
{
    Suite *s = suite_create("reconciler");
    add(s, "builtin_runtimes_match_render", builtin_runtimes_match_render);
    add(s, "jobset_status_flows_back", jobset_status_flows_back);
    add(s, "suspend_resume_and_snapshot", suspend_resume_and_snapshot);
    add(s, "deleted_children_come_back", deleted_children_come_back);
    add(s, "bad_input_conditions", bad_input_conditions);
    add(s, "managed_by_other", managed_by_other);
    add(s, "queue_label_without_kueue", queue_label_without_kueue);
    add(s, "handmade_snapshot_blocks_until_deleted", handmade_snapshot_blocks_until_deleted);
    add(s, "active_deadline", active_deadline);
    add(s, "active_deadline_announces_failed_once_per_trainjob",
        active_deadline_announces_failed_once_per_trainjob);
    add(s, "active_deadline_failed_event_once_when_the_status_write_is_retried",
        active_deadline_failed_event_once_when_the_status_write_is_retried);
    add(s, "jobset_job_creation_failure_reaches_the_trainjob",
        jobset_job_creation_failure_reaches_the_trainjob);
    add(s, "manifests_apply_dry_run", manifests_apply_dry_run);
    return s;
}

int main(void)
{
    return e2e_run_suite(suite()) ? 1 : 0;
}
