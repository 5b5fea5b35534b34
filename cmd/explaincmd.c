/*
 * cmd/explaincmd.c - `trainsched explain TRAINJOB`: the glue of cmd/explain.h. It reads the API
 * (GET and LIST only) into one snapshot, hands it to explain_story and prints the story.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "cmd/explain.h"
#include "cmd/snapshot.h"
#include "cmd/whatif.h"
#include "common/alloc.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/leader.h"
#include "integrations/backend.h"
#include "integrations/kai.h"
#include "integrations/kueue.h"
#include "integrations/volcano.h"

static void usage(FILE *f)
{
    fputs("Usage: trainsched explain TRAINJOB [-n NAMESPACE] [--kubeconfig FILE] [--context NAME]\n"
          "                          [-o text|json] [--what-if [--assume-run-time DURATION]\n"
          "                          [--topology NAME=LEVEL,...]...]\n"
          "       kubectl trainsched explain TRAINJOB ... (installed as kubectl-trainsched)\n\n"
          "Why a TrainJob waits, from the API alone (read-only: get/list): its state and\n"
          "conditions, its runtime and backend and why that backend, the JobSet and gang objects\n"
          "it became, per gang the members created / gated / bound / running, the current wait\n"
          "reason with its numbers (the extender's verdict annotation trainsched.io/verdict on\n"
          "the PodGroup, else its GangWaiting Events; Kueue's Workload conditions; Volcano/KAI\n"
          "PodGroup conditions), what would unblock it, and the last Events about them.\n\n"
          "Options:\n"
          "  -n, --namespace NS   the TrainJob's namespace (default: the context's, else default)\n"
          "  --kubeconfig FILE    kubeconfig (default: in-cluster, else $KUBECONFIG or\n"
          "                       ~/.kube/config)\n"
          "  --context NAME       kubeconfig context (default: current-context)\n"
          "  -o, --output FORMAT  text (default) or json (the story, docs/explain.md)\n"
          "  --what-if            also predict when and where it starts: a read-only snapshot\n"
          "                       of the cluster simulated from now (simulate --from-cluster)\n"
          "  --assume-run-time D  with --what-if: how much longer a running pod runs when\n"
          "                       nothing declares it (default 1h)\n"
          "  --topology SPEC      with --what-if: NAME=LEVEL,... as serve's --extender-topology\n"
          "  -h, --help           this help\n\n"
          "Exit status: 0 an answer; 1 the API could not be read (a forbidden read names the\n"
          "permission; a cluster without the TrainJob CRD says so); 2 bad usage, or the TrainJob\n"
          "does not exist.\n",
          f);
}

/* "trainjobs.trainer.kubeflow.org" or "pods" */
static void resource_name(const struct common_kube_resource *r, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", r->resource, r->group[0] ? "." : "", r->group);
}

/* the message of a forbidden read: the verb, the resource and the namespace */
static void forbidden(const char *verb, const struct common_kube_resource *r, const char *ns,
                      const char *detail, char *buf, size_t n)
{
    char res[200];
    resource_name(r, res, sizeof(res));
    snprintf(buf, n,
             "cannot %s %s in namespace %s: the account needs %s on %s (docs/explain.md lists "
             "the read-only ClusterRole trainsched-explain): %s",
             verb, res, ns, verb, res, detail);
}

struct fetch {
    struct common_kube *k;
    const char *ns;
    json_t *snap, *notes;
};

/* list r in the namespace into snap[key] (appended); a resource the cluster does not serve is
 * skipped, a forbidden or failed list becomes a note */
static void list_into(struct fetch *f, const char *key, const struct common_kube_resource *r,
                      const char *selector, const char *field_selector)
{
    struct common_kube_list_opts lo = {0};
    struct common_error e = {0};
    json_t *items = NULL, *dst;
    char msg[1400], res[200];
    enum common_rc rc;

    lo.label_selector = selector;
    lo.field_selector = field_selector;
    rc = common_kube_list(f->k, r, f->ns, &lo, &items, NULL, &e);
    if (rc == COMMON_ENOTFOUND)
        return; /* not served: that backend is not installed */
    if (rc == COMMON_EUNAUTHORIZED) {
        forbidden("list", r, f->ns, e.msg, msg, sizeof(msg));
        json_array_append_new(f->notes, json_string(msg));
        return;
    }
    if (rc != COMMON_OK) {
        resource_name(r, res, sizeof(res));
        snprintf(msg, sizeof(msg), "%s could not be listed: %s", res, e.msg);
        json_array_append_new(f->notes, json_string(msg));
        return;
    }
    dst = json_object_get(f->snap, key);
    if (!dst) {
        dst = json_array();
        json_object_set_new(f->snap, key, dst);
    }
    json_array_extend(dst, items);
    json_decref(items);
}

static int has_name(const json_t *names, const char *name)
{
    size_t i;
    const json_t *o;

    json_array_foreach(names, i, o) if (strcmp(json_string_value(o), name) == 0) return 1;
    return 0;
}

/* the names of snap[key]'s objects that an ownerReference ties to TrainJob tj, into names */
static void owned_names(const json_t *snap, const char *key, const char *tj, json_t *names)
{
    size_t i, k;
    const json_t *o, *r;

    json_array_foreach(json_object_get(snap, key), i, o)
    {
        const json_t *md = json_object_get(o, "metadata");
        const char *name = json_string_value(json_object_get(md, "name"));
        json_array_foreach(json_object_get(md, "ownerReferences"), k, r)
        {
            const char *kind = json_string_value(json_object_get(r, "kind"));
            const char *on = json_string_value(json_object_get(r, "name"));
            if (name && kind && on && strcmp(kind, "TrainJob") == 0 && strcmp(on, tj) == 0 &&
                !has_name(names, name))
                json_array_append_new(names, json_string(name));
        }
    }
}

/* the Events regarding the story's objects only: one list per distinct name (fieldSelector
 * regarding.name, events.k8s.io's name for involvedObject.name) of the TrainJob, the JobSets,
 * PodGroups and Workloads it owns, and its first EXPLAIN_EVENT_PODS pods; a note names the pods
 * left out. A failed list stops the rest (its note says why). */
#define EXPLAIN_EVENT_PODS 32
static void list_events(struct fetch *f, const char *tj)
{
    json_t *names = json_array();
    size_t i, pods = 0, skipped = 0, notes;
    const json_t *o;
    char sel[400];

    if (!names)
        return;
    json_array_append_new(names, json_string(tj));
    owned_names(f->snap, "jobSets", tj, names);
    owned_names(f->snap, "podGroups", tj, names);
    owned_names(f->snap, "workloads", tj, names);
    json_array_foreach(json_object_get(f->snap, "pods"), i, o)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        if (!name || has_name(names, name))
            continue;
        if (pods++ >= EXPLAIN_EVENT_PODS) {
            skipped++;
            continue;
        }
        json_array_append_new(names, json_string(name));
    }
    if (!json_object_get(f->snap, "events"))
        json_object_set_new(f->snap, "events", json_array());
    notes = json_array_size(f->notes);
    json_array_foreach(names, i, o)
    {
        snprintf(sel, sizeof(sel), "regarding.name=%s", json_string_value(o));
        list_into(f, "events", &common_kube_events, NULL, sel);
        if (json_array_size(f->notes) != notes)
            break;
    }
    if (skipped) {
        snprintf(sel, sizeof(sel), "the Events of %zu more pods were not read (the first %d were)",
                 skipped, EXPLAIN_EVENT_PODS);
        json_array_append_new(f->notes, json_string(sel));
    }
    json_decref(names);
}

static const struct common_kube_resource resource_claims = {"resource.k8s.io", "v1",
                                                            "resourceclaims", 1};
static const struct common_kube_resource kueue_workloads_v1beta1 = {"kueue.x-k8s.io", "v1beta1",
                                                                    "workloads", 1};

/* the runtime the TrainJob names, into snap.runtime (or a note) */
static void get_runtime(struct fetch *f, const json_t *tj)
{
    const json_t *ref = json_object_get(json_object_get(tj, "spec"), "runtimeRef");
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const struct common_kube_resource *r = kind && strcmp(kind, "TrainingRuntime") == 0
                                               ? &common_kube_trainingruntimes
                                               : &common_kube_clustertrainingruntimes;
    struct common_error e = {0};
    json_t *rt = NULL;
    enum common_rc rc;
    char msg[1400];

    if (!name) {
        json_array_append_new(f->notes, json_string("the TrainJob has no spec.runtimeRef.name"));
        return;
    }
    rc = common_kube_get(f->k, r, f->ns, name, &rt, &e);
    if (rc == COMMON_OK) {
        json_object_set_new(f->snap, "runtime", rt);
        return;
    }
    if (rc == COMMON_EUNAUTHORIZED)
        forbidden("get", r, r->namespaced ? f->ns : "(cluster)", e.msg, msg, sizeof(msg));
    else
        snprintf(msg, sizeof(msg), "runtime %s %s: %s", kind ? kind : "ClusterTrainingRuntime",
                 name, e.msg);
    json_array_append_new(f->notes, json_string(msg));
}

int cmd_explain(int argc, char **argv, FILE *out, FILE *err)
{
    const char *name = NULL, *ns = NULL, *kcpath = NULL, *context = NULL, *format = "text";
    const char *assume_s = NULL, *topos[64];
    size_t nt = 0;
    int what_if = 0;
    int64_t assume = SIM_DEFAULT_RUN_MS;
    json_t *report = NULL, *answer = NULL;
    struct common_kubeconfig kc = {0};
    struct common_kube *k = NULL;
    struct common_error e = {0};
    struct fetch f = {0};
    json_t *tj = NULL, *story = NULL;
    char msg[1400], selector[400], now[40];
    struct timespec ts;
    int64_t now_us;
    int status = 1, have_kc = 0;
    enum common_rc rc;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(out);
            return 0;
        }
        if (strcmp(a, "--what-if") == 0) {
            what_if = 1;
            continue;
        }
        if (strcmp(a, "--topology") == 0) {
            if (i + 1 >= argc || nt >= sizeof(topos) / sizeof(topos[0])) {
                fprintf(err, "trainsched explain: --topology: Required value: a value must "
                             "follow (at most 64)\n");
                return 2;
            }
            topos[nt++] = argv[++i];
            continue;
        }
        if (strcmp(a, "-n") == 0 || strcmp(a, "--namespace") == 0)
            dst = &ns;
        else if (strcmp(a, "--assume-run-time") == 0)
            dst = &assume_s;
        else if (strcmp(a, "--kubeconfig") == 0)
            dst = &kcpath;
        else if (strcmp(a, "--context") == 0)
            dst = &context;
        else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0)
            dst = &format;
        if (dst) {
            if (i + 1 >= argc) {
                fprintf(err, "trainsched explain: %s: Required value: a value must follow\n", a);
                return 2;
            }
            *dst = argv[++i];
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(err, "trainsched explain: unknown flag %s\n\n", a);
            usage(err);
            return 2;
        }
        if (name) {
            fprintf(err, "trainsched explain: one TrainJob only: %s and %s\n", name, a);
            return 2;
        }
        name = a;
    }
    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
        fprintf(err,
                "trainsched explain: -o: Unsupported value: \"%s\": supported values: \"text\", "
                "\"json\"\n",
                format);
        return 2;
    }
    if (assume_s) {
        struct common_error pe;
        if (sim_parse_duration(assume_s, &assume, &pe) != COMMON_OK) {
            fprintf(err, "trainsched explain: --assume-run-time: %s\n", pe.msg);
            return 2;
        }
    }
    if (!what_if && (assume_s || nt)) {
        fprintf(err, "trainsched explain: %s: only with --what-if\n",
                assume_s ? "--assume-run-time" : "--topology");
        return 2;
    }
    if (!name || !*name) {
        fputs("trainsched explain: TRAINJOB: Required value: name the TrainJob\n\n", err);
        usage(err);
        return 2;
    }
    if (cmd_kubeconfig(kcpath, context, &kc, &e) != COMMON_OK) {
        fprintf(err, "trainsched explain: kubeconfig: %s\n", e.msg);
        return 1;
    }
    have_kc = 1;
    if (!ns)
        ns = kc.namespace && *kc.namespace ? kc.namespace : "default";
    k = common_kube_client_create(&kc, NULL, &e);
    if (!k) {
        fprintf(err, "trainsched explain: API client: %s\n", e.msg);
        goto out;
    }
    rc = common_kube_get(k, &common_kube_trainjobs, ns, name, &tj, &e);
    if (rc == COMMON_EUNAUTHORIZED) {
        forbidden("get", &common_kube_trainjobs, ns, e.msg, msg, sizeof(msg));
        fprintf(err, "trainsched explain: %s\n", msg);
        goto out;
    }
    if (rc == COMMON_ENOTFOUND) {
        char path[300];
        int served = 1;
        struct common_error e2 = {0};
        common_kube_path(&common_kube_trainjobs, ns, NULL, NULL, path, sizeof(path) - 8);
        snprintf(path + strlen(path), sizeof(path) - strlen(path), "?limit=1");
        if (common_kube_served(k, path, 5000, &served, &e2) == COMMON_OK && !served) {
            fprintf(err,
                    "trainsched explain: the cluster does not serve trainjobs.%s/%s: Kubeflow "
                    "Trainer's CRDs are not installed (docs/install.md)\n",
                    common_kube_trainjobs.group, common_kube_trainjobs.version);
            goto out;
        }
        fprintf(err, "trainsched explain: TrainJob %s/%s not found\n", ns, name);
        status = 2;
        goto out;
    }
    if (rc != COMMON_OK) {
        fprintf(err, "trainsched explain: TrainJob %s/%s: %s\n", ns, name, e.msg);
        goto out;
    }

    f.k = k;
    f.ns = ns;
    f.snap = json_object();
    f.notes = json_array();
    if (!f.snap || !f.notes) {
        fputs("trainsched explain: out of memory\n", err);
        goto out;
    }
    json_object_set(f.snap, "trainJob", tj);
    get_runtime(&f, tj);
    list_into(&f, "jobSets", &common_kube_jobsets, NULL, NULL);
    list_into(&f, "podGroups", &common_kube_podgroups, NULL, NULL);
    list_into(&f, "podGroups", &backend_native_podgroups, NULL, NULL);
    list_into(&f, "podGroups", &backend_native_podgroups_v1beta1, NULL, NULL);
    list_into(&f, "podGroups", &volcano_podgroups, NULL, NULL);
    list_into(&f, "podGroups", &backend_kai_podgroups, NULL, NULL);
    list_into(&f, "workloads", &kueue_workloads, NULL, NULL);
    if (!json_object_get(f.snap, "workloads"))
        list_into(&f, "workloads", &kueue_workloads_v1beta1, NULL, NULL);
    snprintf(selector, sizeof(selector), "jobset.sigs.k8s.io/jobset-name=%s", name);
    list_into(&f, "pods", &common_kube_pods, selector, NULL);
    list_into(&f, "resourceClaims", &resource_claims, NULL, NULL);
    list_events(&f, name);
    clock_gettime(CLOCK_REALTIME, &ts);
    now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    if (common_leader_format_microtime(now_us, now, sizeof(now)) == 0)
        json_object_set_new(f.snap, "now", json_string(now));
    json_object_set(f.snap, "notes", f.notes);

    if (explain_story(f.snap, &story, &e) != COMMON_OK) {
        fprintf(err, "trainsched explain: %s\n", e.msg);
        goto out;
    }
    if (what_if) { /* the prediction: the same snapshot and simulation as simulate's */
        int st = cmd_snapshot_report(k, assume, topos, nt, "trainsched explain", err, &report);
        if (st) {
            status = st;
            goto out;
        }
        if (!(answer = whatif_answer(report, ns, name)) ||
            json_object_set(story, "whatIf", answer)) {
            fputs("trainsched explain: out of memory\n", err);
            goto out;
        }
    }
    if (strcmp(format, "json") == 0) {
        if (json_dumpf(story, out, JSON_INDENT(2)) != 0 || fputc('\n', out) == EOF)
            goto out;
    } else if (explain_text(story, out) != 0 ||
               (answer && (fputc('\n', out) == EOF || whatif_text(answer, out) != 0))) {
        goto out;
    }
    status = fflush(out) == 0 ? 0 : 1;
out:
    json_decref(answer);
    json_decref(report);
    json_decref(story);
    json_decref(f.snap);
    json_decref(f.notes);
    json_decref(tj);
    common_kube_client_destroy(k);
    if (have_kc)
        common_kubeconfig_free(&kc);
    return status;
}
