/*
 * dra/sweep.c - the stale-allocation decision (dra/sweep.h).
 */
#include <string.h>

#include "dra/sweep.h"

static int any(const struct dra_sweep_claim *c, enum dra_sweep_pod p)
{
    for (size_t i = 0; i < c->n_reserved; i++)
        if (c->reserved[i] == p)
            return 1;
    return 0;
}

enum dra_sweep_verdict dra_sweep_decide(const struct dra_sweep_claim *c, const char **why)
{
    const char *w;
    enum dra_sweep_verdict v;

    if (!c->allocated) {
        v = DRA_SWEEP_LEAVE;
        w = "not allocated";
    } else if (!c->writer_uid || !c->writer_uid[0]) {
        v = DRA_SWEEP_LEAVE;
        w = "allocated by kube-scheduler (no trainsched.io/dra-allocated-for annotation)";
    } else if (any(c, DRA_SWEEP_POD_BOUND)) {
        v = DRA_SWEEP_KEEP;
        w = "reserved for a bound pod";
    } else if (c->writer == DRA_SWEEP_POD_PLACED || any(c, DRA_SWEEP_POD_PLACED)) {
        v = DRA_SWEEP_KEEP;
        w = "its gang is planned or held on the allocation's node";
    } else if (c->writer == DRA_SWEEP_POD_BOUND) {
        v = DRA_SWEEP_KEEP;
        w = "written for a bound pod";
    } else if (c->writer == DRA_SWEEP_POD_OTHER || any(c, DRA_SWEEP_POD_OTHER)) {
        v = DRA_SWEEP_KEEP;
        w = "reserved for a pod that is no gang member";
    } else if (c->writer == DRA_SWEEP_POD_GONE && !any(c, DRA_SWEEP_POD_ENDED)) {
        v = DRA_SWEEP_RELEASE;
        w = "the pods it was written and reserved for no longer exist";
    } else {
        v = DRA_SWEEP_RELEASE;
        w = "its gang is no longer planned or held";
    }
    if (why)
        *why = w;
    return v;
}

const char *dra_sweep_verdict_name(enum dra_sweep_verdict v)
{
    static const char *const n[] = {"leave", "keep", "release"};
    return (unsigned)v < sizeof(n) / sizeof(n[0]) ? n[v] : 0;
}

const char *dra_sweep_pod_name(enum dra_sweep_pod p)
{
    static const char *const n[] = {"gone", "bound", "placed", "ended", "other"};
    return (unsigned)p < sizeof(n) / sizeof(n[0]) ? n[p] : 0;
}

enum dra_sweep_verdict dra_sweep_decide_json(const json_t *claim, dra_sweep_pod_of pod_of,
                                             void *ctx, const char **why)
{
    const json_t *md = json_object_get(claim, "metadata"), *st = json_object_get(claim, "status");
    const json_t *rf = json_object_get(st, "reservedFor"), *r;
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    enum dra_sweep_pod pods[256];
    struct dra_sweep_claim c = {0};
    size_t i;

    c.allocated = json_is_object(json_object_get(st, "allocation"));
    c.writer_uid = json_string_value(
        json_object_get(json_object_get(md, "annotations"), DRA_WRITER_ANNOTATION));
    c.writer =
        c.writer_uid && c.allocated ? pod_of(ctx, ns, NULL, c.writer_uid) : DRA_SWEEP_POD_GONE;
    c.reserved = pods;
    json_array_foreach(rf, i, r)
    {
        const char *res = json_string_value(json_object_get(r, "resource"));
        const char *grp = json_string_value(json_object_get(r, "apiGroup"));
        const char *name = json_string_value(json_object_get(r, "name"));
        const char *uid = json_string_value(json_object_get(r, "uid"));
        enum dra_sweep_pod p = DRA_SWEEP_POD_OTHER;
        if (c.n_reserved == sizeof(pods) / sizeof(pods[0]))
            break;
        if (c.allocated && c.writer_uid && res && strcmp(res, "pods") == 0 && (!grp || !grp[0]) &&
            name && uid)
            p = pod_of(ctx, ns, name, uid);
        pods[c.n_reserved++] = p;
    }
    if (json_array_size(rf) > c.n_reserved && c.n_reserved)
        pods[c.n_reserved - 1] = DRA_SWEEP_POD_OTHER;
    return dra_sweep_decide(&c, why);
}
