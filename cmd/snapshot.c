/*
 * cmd/snapshot.c - list the cluster for a simulation (cmd/snapshot.h). Each item is trimmed as
 * its page arrives (managedFields, container commands and environments, volumes, node images,
 * pod statuses but phase and startTime): 50,000 pods fit in well under 1 GB.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/snapshot.h"
#include "common/arena.h"
#include "integrations/backend.h"

static const struct common_kube_resource resourceslices = {"resource.k8s.io", "v1",
                                                           "resourceslices", 0};
static const struct common_kube_resource resourceclaims = {"resource.k8s.io", "v1",
                                                           "resourceclaims", 1};

enum common_rc cmd_kubeconfig(const char *path, const char *context, struct common_kubeconfig *kc,
                              struct common_error *e)
{
    if (path)
        return common_kubeconfig_load(path, context, kc, e);
    if (getenv("KUBERNETES_SERVICE_HOST") && !context)
        return common_kubeconfig_in_cluster(NULL, kc, e);
    return common_kubeconfig_load(NULL, context, kc, e);
}

int64_t cmd_snapshot_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct lister {
    FILE *progress;
    const char *prog, *what;
    double start, last;
};

/* keep of object o only the members named (NULL-ended) */
static void keep_only(json_t *o, const char *const *keys)
{
    const char *k;
    json_t *v;
    void *tmp;

    json_object_foreach_safe(o, tmp, k, v)
    {
        size_t i;
        for (i = 0; keys[i] && strcmp(keys[i], k); i++)
            ;
        if (!keys[i])
            json_object_del(o, k);
    }
}

static void trim(void *ctx, json_t *it)
{
    static const char *const pod_status[] = {"phase", "startTime", NULL};
    static const char *const container[] = {"name", "resources", "restartPolicy", NULL};
    static const char *const lists[] = {"containers", "initContainers"};
    json_t *spec = json_object_get(it, "spec"), *status = json_object_get(it, "status"), *c;
    size_t i;

    (void)ctx;
    json_object_del(json_object_get(it, "metadata"), "managedFields");
    json_object_del(status, "images");
    if (json_object_get(spec, "containers")) { /* a Pod */
        keep_only(status, pod_status);
        json_object_del(spec, "volumes");
        for (int l = 0; l < 2; l++)
            json_array_foreach(json_object_get(spec, lists[l]), i, c) keep_only(c, container);
    }
}

static void page(void *ctx, size_t n)
{
    struct lister *l = ctx;
    double now = mono_s();

    if (now - l->last < 1.0)
        return;
    l->last = now;
    fprintf(l->progress, "%s: snapshot: %s: %zu read so far (%.1f s)\n", l->prog, l->what, n,
            now - l->start);
}

/* "pods" or "trainjobs.trainer.kubeflow.org" */
static void res_name(const struct common_kube_resource *r, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", r->resource, r->group[0] ? "." : "", r->group);
}

int cmd_snapshot_take(struct common_kube *k, int64_t now_ms, int64_t assume_run_ms,
                      const char *prog, FILE *progress, FILE *err, struct cmd_snapshot *out)
{
    const struct common_kube_resource *kinds[8] = {&common_kube_nodes,
                                                   &common_kube_pods,
                                                   &common_kube_podgroups,
                                                   &resourceslices,
                                                   &resourceclaims,
                                                   &common_kube_trainjobs,
                                                   &common_kube_trainingruntimes,
                                                   &common_kube_clustertrainingruntimes};
    struct lister l = {progress, prog, NULL, mono_s(), 0};

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < 8; i++) {
        struct common_kube_list_opts lo = {0};
        struct common_error e = {0};
        char res[200];
        enum common_rc rc;

        res_name(kinds[i], res, sizeof(res));
        l.what = res;
        l.last = mono_s();
        lo.limit = 500;
        lo.item = trim;
        lo.page = page;
        lo.ctx = &l;
        rc = common_kube_list(k, kinds[i], NULL, &lo, &out->lists[i], NULL, &e);
        if (rc == COMMON_ENOTFOUND && i >= 2) {
            fprintf(progress,
                    "%s: snapshot: %s: not served by this cluster (its CRDs are not "
                    "installed): none read\n",
                    prog, res);
            continue;
        }
        if (rc == COMMON_EUNAUTHORIZED) {
            fprintf(err,
                    "%s: cannot list %s in all namespaces: the account needs list on %s "
                    "(docs/explain.md lists the read-only ClusterRole trainsched-explain): %s\n",
                    prog, res, res, e.msg);
            return 1;
        }
        if (rc != COMMON_OK) {
            fprintf(err, "%s: %s could not be listed: %s\n", prog, res, e.msg);
            return 1;
        }
        fprintf(progress, "%s: snapshot: %s: %zu read (%.1f s)\n", prog, res,
                json_array_size(out->lists[i]), mono_s() - l.start);
    }
    out->snap.nodes = out->lists[0];
    out->snap.pods = out->lists[1];
    out->snap.pod_groups = out->lists[2];
    out->snap.resource_slices = out->lists[3];
    out->snap.resource_claims = out->lists[4];
    out->snap.train_jobs = out->lists[5];
    out->snap.training_runtimes = out->lists[6];
    out->snap.cluster_training_runtimes = out->lists[7];
    out->snap.now_ms = now_ms;
    out->snap.assume_run_ms = assume_run_ms;
    return 0;
}

void cmd_snapshot_free(struct cmd_snapshot *s)
{
    for (size_t i = 0; i < 8; i++)
        json_decref(s->lists[i]);
    memset(s, 0, sizeof(*s));
}

int cmd_snapshot_report(struct common_kube *k, int64_t assume_run_ms, const char *const *topos,
                        size_t nt, const char *prog, FILE *err, json_t **report)
{
    struct cmd_snapshot snap;
    struct common_arena *a = common_arena_create(0);
    struct sim_loader *l = a ? sim_loader_create(a, NULL) : NULL;
    struct sim_input in;
    struct sim_result res;
    struct common_error e;
    enum common_rc rc = COMMON_OK;
    int status;

    *report = NULL;
    if (!l) {
        fprintf(err, "%s: out of memory\n", prog);
        common_arena_destroy(a);
        return 1;
    }
    status = cmd_snapshot_take(k, cmd_snapshot_now_ms(), assume_run_ms, prog, err, err, &snap);
    if (status)
        goto out;
    for (size_t i = 0; i < nt && rc == COMMON_OK; i++)
        rc = sim_loader_add_topology(l, topos[i], &e);
    if (rc == COMMON_OK && (rc = sim_load_snapshot(l, &snap.snap, &e)) == COMMON_OK &&
        (rc = sim_loader_finish(l, &in, &e)) == COMMON_OK)
        rc = sim_run(&in, NULL, a, &res, &e);
    if (rc != COMMON_OK) {
        fprintf(err, "%s: simulation: %s\n", prog, e.msg);
        status = rc == COMMON_EINVAL ? 2 : 1;
        goto out;
    }
    if (!(*report = sim_report_json(&in, &res))) {
        fprintf(err, "%s: out of memory\n", prog);
        status = 1;
    }
out:
    sim_loader_destroy(l);
    common_arena_destroy(a);
    cmd_snapshot_free(&snap);
    return status;
}
