/*
 * cmd/render.c - `trainsched render`: read TrainJobs and runtimes from files, print what the
 * reconciler would create, as one Kubernetes v1 List, with no cluster.
 *
 * Glue only: loading (common/yaml), runtime lookup (given files, then the built-ins) and
 * printing; the decisions are trainjob_render's. Output is written only when every TrainJob
 * rendered, so a failure never leaves partial output.
 */
#include <dirent.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "cmd/trainerstatus.h"
#include "common/alloc.h"
#include "common/arena.h"
#include "common/certs.h"
#include "common/names.h"
#include "common/sshkey.h"
#include "common/yaml.h"
#include "integrations/backend.h"
#include "integrations/volcano.h"
#include "reconciler/core.h"
#include "trainjob/builtin.h"
#include "trainjob/lookup.h"
#include "trainjob/trainjob.h"

#define MAX_FILES 256
/* serve's defaults: tls.serviceName in tls.secretNamespace, trainerStatus.address's port */
#define RENDER_STATUS_URL "https://trainsched-controller.trainsched-system.svc:10443"

static const char usage[] =
    "Usage: trainsched render -f FILE [-f FILE]... [--runtime FILE]... [-o yaml|json]\n"
    "                         [-n NAMESPACE] [--existing FILE]... [--backend NAME]\n"
    "                         [--kube-version 1.36|1.37]\n"
    "                         [--extender-wired=true|false] [--volcano-queue NAME]\n"
    "                         [--volcano-tiers LEVEL=TIER,...] [--kai-queue NAME]\n"
    "                         [--trainjob-status\n"
    "                         [--trainjob-status-url URL] [--trainjob-status-ca-file FILE]]\n"
    "       trainsched render --list-builtin\n"
    "\n"
    "Print every object the trainsched reconciler would create for the TrainJobs in FILE:\n"
    "the runtime snapshot ConfigMap, the MPI Secret and hostfile ConfigMap or the Flux\n"
    "entrypoint ConfigMap and CURVE Secret, the JobSet and the gang object (a\n"
    "coscheduling, Volcano, KAI or native scheduling.k8s.io PodGroup, or a preview of the\n"
    "Kueue Workload or Slurm job), as one v1 List. No cluster is needed.\n"
    "\n"
    "Files may hold several YAML or JSON documents: TrainJobs, TrainingRuntimes and\n"
    "ClusterTrainingRuntimes together. A TrainJob's runtime is looked up among the given\n"
    "runtimes first, then among the runtimes built in (the ones Kubeflow Trainer ships).\n"
    "WorkloadPriorityClass and PriorityClass documents give the Kueue Workload its priority.\n"
    "\n"
    "Options:\n"
    "  -f, --filename FILE   input file, or a folder: its .yaml, .yml and .json files in name\n"
    "                        order, as kubectl reads one (\"-\" reads standard input, once);\n"
    "                        repeatable, required\n"
    "      --runtime FILE    a file of TrainingRuntimes/ClusterTrainingRuntimes; repeatable\n"
    "      --existing FILE   objects already in the cluster (e.g. `kubectl get -o yaml`), a file\n"
    "                        or a folder as for -f:\n"
    "                        what Trainer would leave alone is not printed (an existing\n"
    "                        runtime snapshot, MPI Secret, running JobSet, or PodGroup of an\n"
    "                        unsuspended TrainJob), and an existing snapshot's runtime is\n"
    "                        used instead of the live one; repeatable\n"
    "  -o, --output FORMAT   yaml (default) or json\n"
    "  -n, --namespace NS    namespace for TrainJobs that name none (default \"default\")\n"
    "      --list-builtin    print the names of the built-in runtimes and exit\n"
    "      --extender-wired=true|false\n"
    "                        render for a daemon whose kube-scheduler calls the extender (serve's\n"
    "                        webhook.extenderWired): coscheduling pod templates carry the gang\n"
    "                        marks (trainsched.io/gang request, gang-marked label); false leaves\n"
    "                        them out (default true)\n"
    "      --backend NAME    render for this backend instead of each runtime's own (the\n"
    "                        trainsched.io/backend annotation, else spec.podGroupPolicy, else\n"
    "                        none): coscheduling, volcano, kai, kueue, native, slurm or none\n"
    "                        (see docs/backends.md); what only the backend's own controller\n"
    "                        creates (a Kueue Workload, a Slurm job) is printed as a preview\n"
    "      --kube-version 1.36|1.37\n"
    "                        the Kubernetes version of the cluster, for the native backend: 1.37\n"
    "                        writes a scheduling.k8s.io/v1beta1 Workload and PodGroup (topology,\n"
    "                        shared claims, disruptionMode, priority), 1.36 a v1alpha2 PodGroup\n"
    "                        (minCount only); what the version cannot carry is a note (default\n"
    "                        1.37, the newest; serve discovers what the cluster serves)\n"
    "      --volcano-queue NAME\n"
    "                        the volcano backend's queue for TrainJobs whose TrainJob and runtime\n"
    "                        name none (serve's backends.volcano.queue; default: none, Volcano\n"
    "                        uses \"default\")\n"
    "      --volcano-tiers LEVEL=TIER,...\n"
    "                        the Volcano HyperNode tier of each topology level (serve's\n"
    "                        backends.volcano.tiers; default: docs/backends.md \"volcano\")\n"
    "      --kai-queue NAME  the kai backend's queue for TrainJobs whose TrainJob and runtime\n"
    "                        name none (serve's backends.kai.queue; default \"default-queue\")\n"
    "      --trainjob-status render for a daemon serving Kubeflow Trainer's TrainJobStatus\n"
    "                        feature (serve --trainjob-status): trainer containers get the status\n"
    "                        server's URL, CA and token (env and a projected volume) and the\n"
    "                        ConfigMap <name>-tls-config holds the CA\n"
    "      --trainjob-status-url URL\n"
    "                        the status server as the pods reach it (default\n"
    "                        " RENDER_STATUS_URL ")\n"
    "      --trainjob-status-ca-file FILE\n"
    "                        the CA for <name>-tls-config (PEM); without it the ConfigMap is\n"
    "                        not shown\n"
    "  -h, --help            this help\n"
    "\n"
    "Exit status: 0 rendered; 2 bad usage or invalid input (the message names the file,\n"
    "line:column and field); 1 internal error.\n";

struct loaded {
    struct common_yaml_docs files[MAX_FILES];
    size_t nfiles;
    json_t *runtimes; /* array of runtime objects (borrowed from files) */
    json_t *trainjobs;
    json_t *existing;    /* objects already in the cluster (--existing; borrowed from files) */
    json_t *classes;     /* WorkloadPriorityClass and PriorityClass documents of -f (borrowed): the
                            kueue backend's Workload preview takes its priority from them */
    const char *backend; /* --backend, or NULL: each runtime's own (integrations/backend.h) */
    const char *ns;      /* -n: the namespace of TrainJobs and TrainingRuntimes naming none */
    const char *kai_queue; /* --kai-queue (serve's backends.kai.queue), or NULL */
    const struct trainjob_status_server *status_server; /* --trainjob-status, or NULL */
    const char *volcano_queue, *volcano_tiers; /* --volcano-queue, --volcano-tiers, or NULL */
    enum backend_native_api native_api;        /* --kube-version */
};

static void where(struct loaded *l, const json_t *node, const json_t *doc, char *buf, size_t n)
{
    int line, col;

    buf[0] = '\0';
    for (size_t i = 0; i < l->nfiles; i++) {
        if ((node && common_yaml_locate(&l->files[i], node, &line, &col) == 0) ||
            (doc && common_yaml_locate(&l->files[i], doc, &line, &col) == 0)) {
            snprintf(buf, n, "%s:%d:%d: ", l->files[i].name, line, col);
            return;
        }
    }
}

/* "file:line:col: " where key was written in object parent, else as where() */
static void where_key(struct loaded *l, json_t *parent, const char *key, const json_t *node,
                      const json_t *doc, char *buf, size_t n)
{
    int line, col;

    for (size_t i = 0; parent && key && i < l->nfiles; i++) {
        if (common_yaml_locate_key(&l->files[i], parent, key, &line, &col) == 0) {
            snprintf(buf, n, "%s:%d:%d: ", l->files[i].name, line, col);
            return;
        }
    }
    where(l, node, doc, buf, n);
}

static const char *kind_of(const json_t *doc)
{
    const char *k = json_string_value(json_object_get(doc, "kind"));
    return k ? k : "";
}

static int is_runtime_kind(const char *k)
{
    return strcmp(k, "TrainingRuntime") == 0 || strcmp(k, "ClusterTrainingRuntime") == 0;
}

static int oom(FILE *err)
{
    fprintf(err, "error: out of memory\n");
    return 1;
}

/* "file:line:col: " of node, else "file:line: " of the document */
static void doc_where(const struct common_yaml_docs *f, size_t i, const json_t *node, char *buf,
                      size_t n)
{
    int line, col;

    if (node && common_yaml_locate(f, node, &line, &col) == 0)
        snprintf(buf, n, "%s:%d:%d: ", f->name, line, col);
    else
        snprintf(buf, n, "%s:%d: ", f->name, f->doc_line[i]);
}

/* One manifest (a document, or an item of a v1 List in document i). */
static int add_object(struct loaded *l, const struct common_yaml_docs *f, size_t i,
                      const json_t *doc, const char *what, int runtimes_only, int in_list,
                      FILE *err)
{
    const json_t *kindv = json_object_get(doc, "kind");
    const json_t *apiv = json_object_get(doc, "apiVersion");
    const char *kind, *api;
    char pos[600];

    doc_where(f, i, doc, pos, sizeof(pos));
    if (!json_is_object(doc)) {
        fprintf(err, "error: %s%s is not an object (a Kubernetes manifest)\n", pos, what);
        return 2;
    }
    if (!apiv || !kindv) {
        fprintf(err, "error: %s%s has no %s: every manifest needs apiVersion and kind\n", pos, what,
                !apiv ? "apiVersion" : "kind");
        return 2;
    }
    if (!json_is_string(kindv) || !json_is_string(apiv)) {
        doc_where(f, i, !json_is_string(kindv) ? kindv : apiv, pos, sizeof(pos));
        fprintf(err, "error: %s%s: %s must be a string\n", pos, what,
                !json_is_string(kindv) ? "kind" : "apiVersion");
        return 2;
    }
    kind = json_string_value(kindv);
    api = json_string_value(apiv);
    if (strcmp(kind, "List") == 0 && !in_list) {
        size_t j;
        json_t *it;
        char item[64];
        const json_t *items = json_object_get(doc, "items");
        if (!json_is_array(items)) {
            fprintf(err, "error: %s%s: a List needs an items array\n", pos, what);
            return 2;
        }
        json_array_foreach(items, j, it)
        {
            int rc;
            snprintf(item, sizeof(item), "List item %zu", j);
            if ((rc = add_object(l, f, i, it, item, runtimes_only, 1, err)))
                return rc;
        }
        return 0;
    }
    if ((is_runtime_kind(kind) || strcmp(kind, "TrainJob") == 0) &&
        strcmp(api, "trainer.kubeflow.org/v1alpha1") != 0) {
        doc_where(f, i, apiv, pos, sizeof(pos));
        fprintf(err,
                "error: %s%s: apiVersion \"%s\" is not served for %s; use "
                "trainer.kubeflow.org/v1alpha1\n",
                pos, what, api, kind);
        return 2;
    }
    if (is_runtime_kind(kind))
        return json_array_append(l->runtimes, (json_t *)doc) ? oom(err) : 0;
    if (strcmp(kind, "TrainJob") == 0 && !runtimes_only)
        return json_array_append(l->trainjobs, (json_t *)doc) ? oom(err) : 0;
    if (!runtimes_only &&
        ((strcmp(kind, "WorkloadPriorityClass") == 0 && strncmp(api, "kueue.x-k8s.io/", 15) == 0) ||
         (strcmp(kind, "PriorityClass") == 0 && strncmp(api, "scheduling.k8s.io/", 18) == 0)))
        return json_array_append(l->classes, (json_t *)doc) ? oom(err) : 0;
    doc_where(f, i, kindv, pos, sizeof(pos));
    if (runtimes_only)
        fprintf(err,
                "error: %s%s: kind: --runtime takes TrainingRuntime and "
                "ClusterTrainingRuntime documents, not %s (give it with -f)\n",
                pos, what, kind);
    else
        fprintf(err,
                "error: %s%s: kind: \"%s\" is not something render reads: give TrainJob, "
                "TrainingRuntime or ClusterTrainingRuntime documents (and WorkloadPriorityClass "
                "or PriorityClass ones for the Kueue Workload's priority)\n",
                pos, what, kind);
    return 2;
}

static int add_doc(struct loaded *l, const struct common_yaml_docs *f, size_t i, int runtimes_only,
                   FILE *err)
{
    char what[64];

    snprintf(what, sizeof(what), "document %zu", i + 1);
    return add_object(l, f, i, f->docs[i], what, runtimes_only, 0, err);
}

/* read path into the next slot of l->files (*f); returns an exit status */
static int load_file(struct loaded *l, const char *path, struct common_yaml_docs **f, FILE *err)
{
    struct common_error e;

    if (l->nfiles >= MAX_FILES) {
        fprintf(err, "error: more than %d input files\n", MAX_FILES);
        return 2;
    }
    *f = &l->files[l->nfiles++];
    memset(*f, 0, sizeof(**f));
    if (common_yaml_load_file(path, NULL, *f, &e)) {
        fprintf(err, "error: %s\n", e.msg);
        return e.code == COMMON_ENOMEM ? 1 : 2;
    }
    return 0;
}

static int load(struct loaded *l, const char *path, int runtimes_only, FILE *err)
{
    struct common_yaml_docs *f;
    int rc;

    if ((rc = load_file(l, path, &f, err)))
        return rc;
    if (f->n == 0) {
        fprintf(err, "error: %s: no documents: the file is empty\n",
                strcmp(path, "-") ? path : "<stdin>");
        return 2;
    }
    for (size_t i = 0; i < f->n; i++)
        if ((rc = add_doc(l, f, i, runtimes_only, err)))
            return rc;
    return 0;
}

static const json_t *find_runtime(struct loaded *l, const struct trainjob_ref *ref)
{
    size_t i;
    json_t *rt;

    json_array_foreach(l->runtimes, i, rt)
    {
        if (trainjob_lookup_matches(rt, ref, l->ns))
            return rt;
    }
    return NULL;
}

/* The built-in runtime called name: *out is NULL when there is none. Returns 0, or the exit
 * status (1) after printing why it could not be loaded. */
static int builtin_runtime(struct loaded *l, const char *name, const json_t **out, FILE *err)
{
    const struct trainjob_builtin *b = trainjob_builtin_find(name);
    struct common_yaml_docs *f;
    struct common_error e;
    char label[300];

    *out = NULL;
    if (!b)
        return 0;
    if (l->nfiles >= MAX_FILES) {
        fprintf(err, "error: more than %d input files\n", MAX_FILES);
        return 2;
    }
    f = &l->files[l->nfiles++];
    memset(f, 0, sizeof(*f));
    snprintf(label, sizeof(label), "builtin:%s", name);
    if (common_yaml_load(b->yaml, b->len, label, NULL, f, &e) || f->n != 1) {
        fprintf(err, "error: built-in runtime %s does not load: %s\n", name, e.msg);
        return 1;
    }
    if (json_array_append(l->runtimes, f->docs[0])) {
        fprintf(err, "error: out of memory\n");
        return 1;
    }
    *out = f->docs[0];
    return 0;
}

static int list_builtins(FILE *out)
{
    for (const struct trainjob_builtin *b = trainjob_builtins; b->name; b++)
        fprintf(out, "%s\n", b->name);
    return 0;
}

/* one line per field error: "error: file:line:col: Kind ns/name: path: Type: detail";
 * returns the exit status (2, or 1 when out of memory) */
static int print_errors(struct loaded *l, const json_t *tj, const struct trainjob_errors *errs,
                        const char *ns, FILE *err)
{
    char pos[600];

    for (size_t i = 0; i < errs->n; i++) {
        const struct trainjob_field_error *fe = &errs->items[i];
        const char *what = fe->doc == tj ? "TrainJob" : kind_of(fe->doc);
        const json_t *meta = json_object_get(fe->doc, "metadata");
        const char *oname = json_string_value(json_object_get(meta, "name"));
        const char *ons = json_string_value(json_object_get(meta, "namespace"));
        const char *text = trainjob_errors_format(errs, i);

        if (!text)
            return oom(err);
        where_key(l, (json_t *)fe->parent, fe->key, fe->node, fe->doc, pos, sizeof(pos));
        if (fe->doc == tj && !ons)
            ons = ns;
        fprintf(err, "error: %s%s %s%s%s: %s\n", pos, what, ons ? ons : "", ons ? "/" : "",
                oname ? oname : "?", text);
    }
    return 2;
}

/* ---- --existing: objects already in the cluster ---- */

static int load_existing(struct loaded *l, const char *path, FILE *err)
{
    struct common_yaml_docs *f;
    int rc;

    if ((rc = load_file(l, path, &f, err)))
        return rc;
    for (size_t i = 0; i < f->n; i++) {
        const json_t *d = f->docs[i];
        const json_t *items = json_object_get(d, "items");
        const char *kind = json_string_value(json_object_get(d, "kind"));
        size_t j;
        json_t *it;

        if (!json_is_object(d) || !kind) {
            char pos[600];
            doc_where(f, i, d, pos, sizeof(pos));
            fprintf(err, "error: %s--existing document %zu: an object with a kind is needed\n", pos,
                    i + 1);
            return 2;
        }
        if (strcmp(kind, "List") == 0 || (json_is_array(items) && strstr(kind, "List"))) {
            json_array_foreach(items, j, it)
            {
                if (json_array_append(l->existing, it))
                    return oom(err);
            }
        } else if (json_array_append(l->existing, (json_t *)d)) {
            return oom(err);
        }
    }
    return 0;
}

static void release_json(void *p)
{
    json_decref((json_t *)p);
}

static const char *meta_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

/* the API group of an apiVersion ("" for the core group), into buf */
static const char *api_group(const json_t *obj, char *buf, size_t n)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    const char *slash = api ? strchr(api, '/') : NULL;

    snprintf(buf, n, "%.*s", slash ? (int)(slash - api) : 0, api ? api : "");
    return buf;
}

/* the existing object with obj's group, kind, namespace (ns when it names none) and name */
static const json_t *find_existing(struct loaded *l, const json_t *obj, const char *ns)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *name = meta_str(obj, "name");
    const char *ons = meta_str(obj, "namespace") ? meta_str(obj, "namespace") : ns;
    char g1[256], g2[256];
    size_t i;
    json_t *e;

    api_group(obj, g1, sizeof(g1));
    json_array_foreach(l->existing, i, e)
    {
        const char *ek = json_string_value(json_object_get(e, "kind"));
        const char *en = meta_str(e, "name");
        const char *ens = meta_str(e, "namespace") ? meta_str(e, "namespace") : ns;
        if (ek && en && kind && name && strcmp(ek, kind) == 0 && strcmp(en, name) == 0 &&
            strcmp(ens, ons) == 0 && strcmp(api_group(e, g2, sizeof(g2)), g1) == 0)
            return e;
    }
    return NULL;
}

/*
 * An existing runtime snapshot <name>-runtime-snapshot: Trainer builds from the runtime stored
 * in it, not from the live runtime. *rt is set to a new reference (kept alive by the arena) or
 * left alone when there is no snapshot. Returns an exit status (2: the snapshot is unusable).
 */
static int snapshot_runtime(struct loaded *l, struct common_arena *a, const json_t *tj,
                            const struct trainjob_ref *ref, const char *ns, const json_t **rt,
                            FILE *err)
{
    const char *name = meta_str(tj, "name");
    char *cmname = common_arena_printf(a, "%s-runtime-snapshot", name ? name : "");
    json_t *probe, *copy, *spec, *r, *stored = NULL;
    const json_t *cm;
    const char *uid = NULL;
    struct common_error e;
    enum common_rc rc;

    if (!cmname)
        return oom(err);
    probe = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                      "metadata", "name", cmname, "namespace", ns);
    if (!probe)
        return oom(err);
    cm = find_existing(l, probe, ns);
    json_decref(probe);
    if (!cm)
        return 0;
    /* the TrainJob as the API server holds it: runtimeRef defaulted; render's own placeholder
     * uid stands in for a missing metadata.uid, so take the snapshot owner's then */
    copy = json_deep_copy(tj);
    spec = json_object_get(copy, "spec");
    r = json_object_get(spec, "runtimeRef");
    if (!copy || !json_is_object(r) || json_object_set_new(r, "kind", json_string(ref->kind)) ||
        json_object_set_new(r, "apiGroup", json_string(ref->api_group))) {
        json_decref(copy);
        return oom(err);
    }
    if (!meta_str(tj, "uid") && rc_controller_owner(cm, NULL, &uid) && uid)
        json_object_set_new(json_object_get(copy, "metadata"), "uid", json_string(uid));
    rc = rc_snapshot_runtime(copy, cm, &stored, &e);
    json_decref(copy);
    if (rc == COMMON_ENOMEM)
        return oom(err);
    if (rc) {
        fprintf(err, "error: --existing: %s\n", e.msg);
        return 2;
    }
    if (common_arena_on_destroy(a, release_json, stored)) {
        json_decref(stored);
        return oom(err);
    }
    fprintf(err,
            "note: TrainJob %s/%s: built from the runtime in the existing snapshot %s/%s, "
            "as Trainer does\n",
            ns, name, ns, cmname);
    *rt = stored;
    return 0;
}

/*
 * DRA (docs/dra.md): a note per replicated job of the rendered JobSets whose pod template has
 * spec.resourceClaims, naming the ResourceClaimTemplates (kube-controller-manager makes one
 * ResourceClaim per pod from each) and the shared ResourceClaims the pods use.
 */
static void note_claims(const json_t *objs, const char *ns, const char *name, FILE *err)
{
    size_t i, r, c;
    const json_t *o, *rj, *cl;

    json_array_foreach(objs, i, o)
    {
        if (!json_is_string(json_object_get(o, "kind")) ||
            strcmp(json_string_value(json_object_get(o, "kind")), "JobSet") != 0)
            continue;
        json_array_foreach(json_object_get(json_object_get(o, "spec"), "replicatedJobs"), r, rj)
        {
            const json_t *tspec = json_object_get(json_object_get(rj, "template"), "spec");
            const json_t *pod = json_object_get(json_object_get(tspec, "template"), "spec");
            const char *job = json_string_value(json_object_get(rj, "name"));
            for (int pass = 0; pass < 2; pass++) {
                const char *field = pass ? "resourceClaimName" : "resourceClaimTemplateName";
                int k = 0;
                json_array_foreach(json_object_get(pod, "resourceClaims"), c, cl)
                {
                    const char *entry = json_string_value(json_object_get(cl, "name"));
                    const char *v = json_string_value(json_object_get(cl, field));
                    if (!v)
                        continue;
                    if (!k++)
                        fprintf(err,
                                "note: TrainJob %s/%s: the pods of replicated job %s %s the "
                                "%s ",
                                ns, name, job ? job : "?", pass ? "share" : "claim devices through",
                                pass ? "ResourceClaims" : "ResourceClaimTemplates");
                    else
                        fputs(", ", err);
                    fprintf(err, "%s (entry %s)", v, entry ? entry : "?");
                }
                if (k)
                    fputs(pass ? "\n"
                               : " (kube-controller-manager makes one ResourceClaim per pod from "
                                 "each)\n",
                          err);
            }
        }
    }
}

/* drop from objs what Trainer would leave as it is, with a note each (reconciler rules) */
static int drop_existing(struct loaded *l, const json_t *tj, const char *ns, json_t *objs,
                         FILE *err)
{
    for (size_t i = 0; i < json_array_size(objs);) {
        json_t *o = json_array_get(objs, i);
        const json_t *ex = find_existing(l, o, ns);
        if (ex && rc_child_action(tj, rc_child_kind_of(o), ex) == RC_SKIP) {
            fprintf(err,
                    "note: TrainJob %s/%s: %s %s/%s exists and Trainer leaves it as it is: "
                    "not printed\n",
                    ns, meta_str(tj, "name"), json_string_value(json_object_get(o, "kind")), ns,
                    meta_str(o, "name"));
            if (json_array_remove(objs, i))
                return oom(err);
            continue;
        }
        i++;
    }
    return 0;
}

static int render_one(struct loaded *l, const json_t *tj, const char *ns, int no_marks,
                      json_t *items, FILE *err)
{
    struct trainjob_ref ref;
    struct common_error e;
    struct common_arena *a = common_arena_create(0);
    struct trainjob_options opts = {.default_namespace = ns,
                                    .keygen = common_sshkey_ecdsa_p521,
                                    .no_gang_marks = no_marks,
                                    .status_server = l->status_server,
                                    .volcano_queue = l->volcano_queue,
                                    .volcano_tiers = l->volcano_tiers,
                                    .kai_default_queue = l->kai_queue,
                                    .kueue_classes = l->classes};
    struct trainjob_output out;
    struct backend_notes notes = {0};
    struct backend_target target = {.native_api = l->native_api, .notes = &notes};
    const struct backend *backend = NULL;
    json_t *preview = NULL;
    const json_t *rt;
    const char *name = json_string_value(json_object_get(json_object_get(tj, "metadata"), "name"));
    const char *tns =
        json_string_value(json_object_get(json_object_get(tj, "metadata"), "namespace"));
    char pos[600];
    int status = 0;
    enum common_rc rc;

    if (!a) {
        fprintf(err, "error: out of memory\n");
        return 1;
    }
    where(l, tj, NULL, pos, sizeof(pos));
    {
        /* the checks simulate shares (trainjob/lookup.h) */
        struct trainjob_errors errs;
        trainjob_errors_init(&errs, a);
        rc = trainjob_lookup_check(tj, ns, &errs, &ref, &e);
        if (rc == COMMON_ENOMEM) {
            status = oom(err);
            goto out;
        }
        if (rc && errs.n) {
            status = print_errors(l, tj, &errs, ns, err);
            goto out;
        }
        if (rc) {
            fprintf(err, "error: %sTrainJob %s/%s: %s\n", pos, tns ? tns : ns, name ? name : "?",
                    e.msg);
            status = 2;
            goto out;
        }
    }
    where(l, json_object_get(json_object_get(json_object_get(tj, "spec"), "runtimeRef"), "name"),
          tj, pos, sizeof(pos));
    rt = find_runtime(l, &ref);
    if ((status = snapshot_runtime(l, a, tj, &ref, tns ? tns : ns, &rt, err)))
        goto out;
    if (!rt && strcmp(ref.kind, "ClusterTrainingRuntime") == 0 &&
        (status = builtin_runtime(l, ref.name, &rt, err)))
        goto out;
    if (!rt) {
        char msg[1024];
        fprintf(err, "error: %sTrainJob %s/%s: %s\n", pos, tns ? tns : ns, name ? name : "?",
                trainjob_lookup_not_found(&ref, trainjob_runtime_ref_json(a, tj), "render",
                                          "give it with --runtime FILE or in the same file", msg,
                                          sizeof(msg)));
        status = 2;
        goto out;
    }
    rc = backend_select(rt, l->backend, NULL, &backend, NULL, &e);
    if (rc) {
        where(l,
              json_object_get(json_object_get(json_object_get(rt, "metadata"), "annotations"),
                              BACKEND_ANNOTATION),
              rt, pos, sizeof(pos));
        fprintf(err, "error: %sTrainJob %s/%s: runtime %s: %s\n", pos, tns ? tns : ns,
                name ? name : "?", ref.name, e.msg);
        status = 2;
        goto out;
    }
    memset(&out, 0, sizeof(out));
    rc = backend_render(backend, a, tj, rt, &opts, &target, &out, &preview, &e);
    for (size_t i = 0; i < out.errors.nwarn; i++)
        fprintf(err, "Warning: TrainJob %s/%s: %s\n", tns ? tns : ns, name ? name : "?",
                out.errors.warnings[i]);
    if (rc == COMMON_EINVAL && out.errors.n) {
        status = print_errors(l, tj, &out.errors, ns, err);
        goto out;
    }
    if (rc) {
        fprintf(err, "error: %sTrainJob %s/%s: %s\n", pos, tns ? tns : ns, name ? name : "?",
                e.msg);
        status = rc == COMMON_ENOMEM || rc == COMMON_EIO ? 1 : 2;
        goto out;
    }
    if (out.skipped) {
        fprintf(err, "note: %s\n", out.skipped);
        goto out;
    }
    if ((status = drop_existing(l, tj, tns ? tns : ns, out.objects, err))) {
        json_decref(out.objects);
        goto out;
    }
    note_claims(out.objects, tns ? tns : ns, name ? name : "?", err);
    /* what the backend's API cannot carry (the reconciler's condition and Event) */
    for (size_t i = 0; i < notes.n; i++)
        fprintf(err, "note: TrainJob %s/%s: %s: %s\n", tns ? tns : ns, name ? name : "?",
                notes.item[i].reason, notes.item[i].msg);
    if (notes.lost)
        fprintf(err, "note: TrainJob %s/%s: %zu more\n", tns ? tns : ns, name ? name : "?",
                notes.lost);
    {
        /* the reconciler's rule for a queue label that Kueue never saw (reconciler/core.h) */
        char qmsg[512];
        if (rc_queue_without_kueue(tj, qmsg, sizeof(qmsg)))
            fprintf(err,
                    "note: TrainJob %s/%s: %s. Offline, render cannot tell whether Kueue is "
                    "installed: the "
                    "objects below are what is created once Kueue has admitted it\n",
                    tns ? tns : ns, name ? name : "?", qmsg);
    }
    if (json_array_extend(items, out.objects) || json_array_extend(items, preview)) {
        fprintf(err, "error: out of memory\n");
        status = 1;
    }
    json_decref(out.objects);
out:
    json_decref(preview);
    common_arena_destroy(a);
    return status;
}

/* The same TrainJob twice would render every object twice, the same runtime twice would leave
 * which one counts to the order of the files: refuse both, naming both places
 * (trainjob_lookup_duplicate: one hash lookup per object). Returns 0 or the exit status after
 * printing why. */
static int check_duplicates(struct loaded *l, const char *ns, FILE *err)
{
    size_t nt = json_array_size(l->trainjobs), nr = json_array_size(l->runtimes);
    const json_t **v = common_malloc((nt + nr + 1) * sizeof(*v));
    struct trainjob_dup dup;
    struct common_error e;
    char pos[600], first[600], msg[1400];
    size_t len;

    if (!v)
        return oom(err);
    for (size_t i = 0; i < nt; i++)
        v[i] = json_array_get(l->trainjobs, i);
    for (size_t i = 0; i < nr; i++)
        v[nt + i] = json_array_get(l->runtimes, i);
    if (trainjob_lookup_duplicate(v, nt + nr, ns, &dup, &e) != COMMON_OK) {
        common_free(v);
        return oom(err);
    }
    common_free(v);
    if (!dup.second)
        return 0;
    where(l, json_object_get(json_object_get(dup.first, "metadata"), "name"), dup.first, first,
          sizeof(first));
    len = strlen(first);
    if (len >= 2) /* "file:line:col" without the ": " */
        first[len - 2] = '\0';
    where(l, json_object_get(json_object_get(dup.second, "metadata"), "name"), dup.second, pos,
          sizeof(pos));
    fprintf(err, "error: %s%s\n", pos,
            trainjob_lookup_duplicate_message(&dup, first, msg, sizeof(msg)));
    return 2;
}

int cmd_render(int argc, char **argv, FILE *out, FILE *err)
{
    static const struct option longopts[] = {
        {"filename", required_argument, NULL, 'f'},
        {"runtime", required_argument, NULL, 'r'},
        {"output", required_argument, NULL, 'o'},
        {"namespace", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {"list-builtin", no_argument, NULL, 'l'},
        {"existing", required_argument, NULL, 'x'},
        {"extender-wired", required_argument, NULL, 'w'},
        {"backend", required_argument, NULL, 'b'},
        {"trainjob-status", no_argument, NULL, 's'},
        {"trainjob-status-url", required_argument, NULL, 'u'},
        {"trainjob-status-ca-file", required_argument, NULL, 'c'},
        {"volcano-queue", required_argument, NULL, 'Q'},
        {"volcano-tiers", required_argument, NULL, 'T'},
        {"kai-queue", required_argument, NULL, 'q'},
        {"kube-version", required_argument, NULL, 'K'},
        {NULL, 0, NULL, 0}};
    const char *files[MAX_FILES], *rtfiles[MAX_FILES], *exfiles[MAX_FILES];
    char *paths[MAX_FILES], *rtpaths[MAX_FILES], *expaths[MAX_FILES];
    size_t nf = 0, nr = 0, nx = 0, np = 0, nrp = 0, nxp = 0;
    const char *format = "yaml", *ns = "default", *backend = NULL, *kai_queue = NULL;
    const char *volcano_queue = NULL, *volcano_tiers = NULL;
    enum backend_native_api native_api = BACKEND_NATIVE_V1BETA1; /* the newest */
    struct loaded *l = NULL;
    json_t *list = NULL, *items = NULL;
    int opt, status = 0, stdin_seen = 0, no_marks = 0, trainer_status = 0;
    const char *status_url = RENDER_STATUS_URL, *status_ca_file = NULL;
    int has_url = 0; /* --trainjob-status-url given */
    struct trainjob_status_server ss = {0};
    char *ca = NULL, why[128];
    size_t i;
    json_t *tj;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":f:o:n:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'f':
        case 'r':
            if (optarg[0] == '=' && optarg[1]) /* -f=FILE, as kubectl accepts */
                optarg++;
            if ((opt == 'f' ? nf : nr) >= MAX_FILES) {
                fprintf(err, "error: too many files (at most %d)\n", MAX_FILES);
                return 2;
            }
            if (opt == 'f')
                files[nf++] = optarg;
            else
                rtfiles[nr++] = optarg;
            break;
        case 'x':
            if (nx >= MAX_FILES) {
                fprintf(err, "error: too many files (at most %d)\n", MAX_FILES);
                return 2;
            }
            exfiles[nx++] = optarg;
            break;
        case 'o':
            format = optarg[0] == '=' ? optarg + 1 : optarg; /* -o=json, as kubectl accepts */
            break;
        case 'n':
            ns = optarg[0] == '=' && optarg[1] ? optarg + 1 : optarg; /* -n=NS, as kubectl */
            break;
        case 'w':
            if (strcmp(optarg, "true") != 0 && strcmp(optarg, "false") != 0) {
                fprintf(err, "error: --extender-wired \"%s\": use true or false\n", optarg);
                return 2;
            }
            no_marks = strcmp(optarg, "false") == 0;
            break;
        case 'b':
            if (!backend_lookup(optarg) || !backend_lookup(optarg)->built) {
                struct common_error e;
                const struct backend *b;
                backend_select(NULL, optarg, NULL, &b, NULL, &e);
                fprintf(err, "error: %s\n", e.msg);
                return 2;
            }
            backend = optarg;
            break;
        case 'Q':
            if (*optarg && common_names_dns1123_subdomain(optarg)) {
                fprintf(err, "error: --volcano-queue \"%s\": a Volcano Queue name: %s\n", optarg,
                        common_names_dns1123_subdomain(optarg));
                return 2;
            }
            volcano_queue = optarg;
            break;
        case 'T': {
            struct common_error e;
            if (volcano_tiers_check("--volcano-tiers", optarg, &e) != COMMON_OK) {
                fprintf(err, "error: %s\n", e.msg);
                return 2;
            }
            volcano_tiers = optarg;
            break;
        }
        case 'K': {
            struct common_error e;
            if (backend_native_kube_version("--kube-version", optarg, &native_api, &e)) {
                fprintf(err, "error: %s\n", e.msg);
                return 2;
            }
            break;
        }
        case 's':
            trainer_status = 1;
            break;
        case 'u':
            status_url = optarg;
            has_url = 1;
            break;
        case 'c':
            status_ca_file = optarg;
            break;
        case 'q':
            /* checked here as --volcano-queue is and as serve checks it (it was refused only on
             * a kai TrainJob, blamed on the TrainJob's file and line as backends.kai.queue) */
            if (*optarg && common_names_dns1123_subdomain(optarg)) {
                fprintf(err,
                        "error: --kai-queue: backends.kai.queue: Invalid value: \"%s\": a KAI "
                        "Queue name: %s\n",
                        optarg, common_names_dns1123_subdomain(optarg));
                return 2;
            }
            kai_queue = optarg;
            break;
        case 'h':
            fputs(usage, out);
            return 0;
        case 'l':
            return list_builtins(out);
        case ':':
            fprintf(err, "error: option %s needs a value\n%s", argv[optind - 1], usage);
            return 2;
        default:
            fprintf(err, "error: unknown option %s\n%s", argv[optind - 1], usage);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(err, "error: unexpected argument \"%s\" (input files go after -f)\n%s",
                argv[optind], usage);
        return 2;
    }
    if (nf == 0) {
        fprintf(err, "error: no input: give at least one -f FILE\n%s", usage);
        return 2;
    }
    if (common_names_dns1123_label(ns)) {
        fprintf(err, "error: --namespace \"%s\": %s\n", ns, common_names_dns1123_label(ns));
        return 2;
    }
    if (strcmp(format, "yaml") != 0 && strcmp(format, "json") != 0) {
        fprintf(err, "error: --output \"%s\": use yaml or json\n", format);
        return 2;
    }
    if ((status_ca_file || has_url) && !trainer_status) {
        fprintf(err, "error: %s%s%s need%s --trainjob-status\n",
                has_url ? "--trainjob-status-url" : "", has_url && status_ca_file ? " and " : "",
                status_ca_file ? "--trainjob-status-ca-file" : "",
                has_url && status_ca_file ? "" : "s");
        return 2;
    }
    if (trainer_status && trainer_status_check_url(status_url, why, sizeof(why))) {
        fprintf(err, "error: --trainjob-status-url \"%s\": %s\n", status_url, why);
        return 2;
    }
    l = common_calloc(1, sizeof(*l));
    if (!l) {
        fprintf(err, "error: out of memory\n");
        return 1;
    }
    l->backend = backend;
    l->ns = ns;
    l->volcano_queue = volcano_queue;
    l->volcano_tiers = volcano_tiers;
    l->native_api = native_api;
    l->kai_queue = kai_queue;
    if (trainer_status) {
        struct common_error e;
        ss.url_base = status_url;
        if (status_ca_file) {
            if (common_certs_ca_file_read(status_ca_file, &ca, &e) != COMMON_OK) {
                fprintf(err, "error: --trainjob-status-ca-file: %s\n", e.msg);
                status = 2;
                goto out;
            }
            ss.ca_crt = ca;
        }
        l->status_server = &ss;
    }
    l->runtimes = json_array();
    l->trainjobs = json_array();
    l->existing = json_array();
    l->classes = json_array();
    items = json_array();
    if (!l->runtimes || !l->trainjobs || !l->existing || !l->classes || !items) {
        fprintf(err, "error: out of memory\n");
        status = 1;
        goto out;
    }
    status = cli_expand_paths(rtfiles, nr, rtpaths, MAX_FILES, &nrp, &stdin_seen, err);
    if (!status)
        status = cli_expand_paths(files, nf, paths, MAX_FILES, &np, &stdin_seen, err);
    for (i = 0; i < nrp && !status; i++)
        status = load(l, rtpaths[i], 1, err);
    for (i = 0; i < np && !status; i++)
        status = load(l, paths[i], 0, err);
    if (!status)
        status = cli_expand_paths(exfiles, nx, expaths, MAX_FILES, &nxp, &stdin_seen, err);
    for (i = 0; i < nxp && !status; i++)
        status = load_existing(l, expaths[i], err);
    if (status)
        goto out;
    if (json_array_size(l->trainjobs) == 0) {
        fprintf(err,
                "error: no TrainJob in %s%s: render needs at least one document of kind "
                "TrainJob\n",
                files[0], nf > 1 ? " and the other -f files" : "");
        status = 2;
        goto out;
    }
    if ((status = check_duplicates(l, ns, err)))
        goto out;
    json_array_foreach(l->trainjobs, i, tj)
    {
        status = render_one(l, tj, ns, no_marks, items, err);
        if (status)
            goto out;
    }
    list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", items);
    if (!list) {
        fprintf(err, "error: out of memory\n");
        status = 1;
        goto out;
    }
    if (strcmp(format, "json") == 0) {
        if (json_dumpf(list, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ||
            fputc('\n', out) == EOF) {
            fprintf(err, "error: writing the output failed\n");
            status = 1;
        }
    } else {
        struct common_buf b;
        struct common_error e;
        common_buf_init(&b, (size_t)1 << 31);
        if (common_yaml_emit(list, &b, &e)) {
            fprintf(err, "error: %s\n", e.msg);
            status = 1;
        } else if (fwrite(b.data, 1, b.len, out) != b.len) {
            fprintf(err, "error: writing the output failed\n");
            status = 1;
        }
        common_buf_free(&b);
    }
    if (fflush(out) && !status) {
        fprintf(err, "error: writing the output failed\n");
        status = 1;
    }
out:
    common_free(ca);
    cli_free_paths(paths, np);
    cli_free_paths(rtpaths, nrp);
    cli_free_paths(expaths, nxp);
    json_decref(list);
    json_decref(items);
    if (l) {
        json_decref(l->runtimes);
        json_decref(l->trainjobs);
        json_decref(l->existing);
        json_decref(l->classes);
        for (i = 0; i < l->nfiles; i++)
            common_yaml_docs_free(&l->files[i]);
        common_free(l);
    }
    return status;
}
