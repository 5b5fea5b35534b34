/*
 * tests/tools/claimdiff/claimstatus/claimstatus.c - test tool (never part of trainsched): the claim
 * status trainsched writes, for the differential test of claimdiff (README.md).
 *
 * stdin: a JSON array of cases {"slices": [ResourceSlice], "classes": [DeviceClass], "claim":
 * ResourceClaim, "node": "n1", "pod": {"name", "uid"}, "time": <epoch seconds>}. stdout: a JSON
 * array with, per case, {"claim": <the claim with the status trainsched's binder PUTs>} or
 * {"error": "<reason>"} when trainsched's allocator does not place the claim on the node.
 * The path is the product's: the DRA view decodes the objects (dra_view_build), the allocator
 * picks the devices (dra_allocate_indexed), dra_device_node_local and dra_status_allocation
 * build status.allocation, and reservedFor names the pod as extender/dra_glue.c writes it.
 */
#include <stdio.h>
#include <string.h>

#include "common/arena.h"
#include "dra/status.h"
#include "dra/view.h"

struct classes {
    const json_t *list;
};

static const json_t *class_of(void *ctx, const char *name)
{
    const struct classes *c = ctx;
    const json_t *o;
    size_t i;
    json_array_foreach(c->list, i, o)
    {
        const char *n = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        if (n && strcmp(n, name) == 0)
            return o;
    }
    return NULL;
}

static json_t *one_case(const json_t *in)
{
    struct common_arena *a = common_arena_create(0);
    const json_t *slices = json_object_get(in, "slices"), *classes = json_object_get(in, "classes");
    const json_t *claim = json_object_get(in, "claim"), *pod = json_object_get(in, "pod");
    const char *node = json_string_value(json_object_get(in, "node"));
    const json_t **sl = NULL, **cl = NULL;
    struct dra_view_input vin = {0};
    struct dra_view v;
    const struct dra_view_claim *vc;
    struct dra_claim_alloc out;
    struct common_error err = {0};
    struct classes cc = {classes};
    json_t *res = NULL, *alloc, *obj, *st;
    char ts[32];
    int local = 0;

    if (!a || !node || !json_is_object(claim))
        goto bad;
    sl = common_arena_alloc(a, (json_array_size(slices) + 1) * sizeof(*sl));
    cl = common_arena_alloc(a, (json_array_size(classes) + 1) * sizeof(*cl));
    if (!sl || !cl)
        goto bad;
    for (size_t i = 0; i < json_array_size(slices); i++)
        sl[i] = json_array_get(slices, i);
    for (size_t i = 0; i < json_array_size(classes); i++)
        cl[i] = json_array_get(classes, i);
    vin.slices = sl;
    vin.n_slices = json_array_size(slices);
    vin.classes = cl;
    vin.n_classes = json_array_size(classes);
    vin.claims = &claim;
    vin.n_claims = 1;
    if (dra_view_build(a, &vin, &v, &err) != COMMON_OK)
        goto bad;
    if (v.n_bad) {
        res = json_pack("{s:s++}", "error", v.bad[0].name, ": ", v.bad[0].reason);
        goto out;
    }
    vc = &v.claims[0];
    if (dra_allocate_indexed(a, v.ix, node, &vc->claim, 1, &out, &err) != COMMON_OK) {
        res = json_pack("{s:s}", "error", err.msg);
        goto out;
    }
    for (size_t k = 0; k < out.n_results && !local; k++)
        local = dra_device_node_local(v.ix, node, &out.results[k]);
    dra_status_timestamp((long long)json_integer_value(json_object_get(in, "time")), ts,
                         sizeof(ts));
    if (!(alloc = dra_status_allocation(claim, class_of, &cc, out.results, out.n_results, node,
                                        local, ts, &err))) {
        res = json_pack("{s:s}", "error", err.msg);
        goto out;
    }
    obj = json_deep_copy(claim);
    st = json_object();
    json_object_set_new(st, "allocation", alloc);
    json_object_set_new(st, "reservedFor",
                        json_pack("[{s:s, s:s, s:s}]", "resource", "pods", "name",
                                  json_string_value(json_object_get(pod, "name")), "uid",
                                  json_string_value(json_object_get(pod, "uid"))));
    json_object_set_new(obj, "status", st);
    res = json_pack("{s:o}", "claim", obj);
    goto out;
bad:
    res = json_pack("{s:s}", "error", err.msg[0] ? err.msg : "bad case");
out:
    common_arena_destroy(a);
    return res;
}

int main(void)
{
    json_error_t je;
    json_t *in = json_loadf(stdin, 0, &je), *out = json_array(), *c;
    size_t i;

    if (!json_is_array(in)) {
        fprintf(stderr, "claimstatus: stdin: %s\n", in ? "not a JSON array" : je.text);
        return 2;
    }
    json_array_foreach(in, i, c) json_array_append_new(out, one_case(c));
    json_dumpf(out, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(in);
    json_decref(out);
    return 0;
}
