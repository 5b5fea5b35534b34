/*
 * tests/unit/test_dra.c - the DRA core (dra/cel.h, dra/dra.h).
 *
 * The CEL subset is checked as a table (expression, the device below, expected outcome). The
 * allocator rules are data: every tests/fixtures/dra/<case>/case.json holds the node, the
 * ResourceSlices, DeviceClasses, claims already allocated ("inUse") and the claims of one pod
 * ("claims"), and what must come out: "expect": {"results": [[{request, pool, device}...] per
 * claim]} or {"error": "<common_rc_name>", "message": "<substring>"}. A case whose objects
 * must be refused while decoding says {"decodeError": ..., "message": ...} instead.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "dra/cel.h"
#include "dra/dra.h"
#include "dra/status.h"
#include "dra/sweep.h"
#include "dra/view.h"
#include "testutil.h"

/* ---- CEL ---- */

enum want { MATCH = 1, NOMATCH = 0, RUNTIME = -1, UNSUPPORTED = -2, INVALID = -3 };

static const struct {
    const char *expr;
    enum want want;
    const char *msg; /* substring of the error, for errors */
} cel_cases[] = {
    {"device.driver == 'gpu.example.com'", MATCH, NULL},
    {"device.driver != \"gpu.example.com\"", NOMATCH, NULL},
    {"device.attributes['gpu.example.com'].model == 'H100'", MATCH, NULL},
    {"device.attributes[\"gpu.example.com\"].model == 'A100'", NOMATCH, NULL},
    {"device.attributes['gpu.example.com'].index >= 3 && "
     "device.attributes['gpu.example.com'].index < 4",
     MATCH, NULL},
    {"device.attributes['gpu.example.com'].index > 3", NOMATCH, NULL},
    {"device.attributes['gpu.example.com'].index <= -1", NOMATCH, NULL},
    {"!device.attributes['gpu.example.com'].mig", MATCH, NULL},
    {"device.attributes['gpu.example.com'].mig || device.driver == 'x'", NOMATCH, NULL},
    {"(device.attributes['gpu.example.com'].model in ['A100', 'H100'])", MATCH, NULL},
    {"device.attributes['gpu.example.com'].model in ['A100']", NOMATCH, NULL},
    {"'model' in device.attributes['gpu.example.com']", MATCH, NULL},
    {"'clique' in device.attributes['gpu.example.com']", NOMATCH, NULL},
    {"'resource.kubernetes.io' in device.attributes", MATCH, NULL},
    {"has(device.attributes['gpu.example.com'].clique)", NOMATCH, NULL},
    {"has(device.attributes['gpu.example.com'].model)", MATCH, NULL},
    {"device.attributes['resource.kubernetes.io'].pcieRoot.startsWith('pci')", MATCH, NULL},
    {"device.attributes['gpu.example.com'].model.endsWith('100')", MATCH, NULL},
    {"device.attributes['gpu.example.com'].model.contains('X')", NOMATCH, NULL},
    {"device.capacity['gpu.example.com'].memory.compareTo(quantity('80Gi')) >= 0", MATCH, NULL},
    {"device.capacity['gpu.example.com'].memory.compareTo(quantity('81Gi')) >= 0", NOMATCH, NULL},
    {"device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('40Gi'))", MATCH, NULL},
    {"device.capacity['gpu.example.com'].memory == quantity('81920Mi')", MATCH, NULL},
    {"device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('550.0.0'))", MATCH,
     NULL},
    {"device.attributes['gpu.example.com'].driverVersion.compareTo(semver('550.54.15')) == 0",
     MATCH, NULL},
    {"device.attributes['gpu.example.com'].driverVersion.isLessThan(semver('550.54.15-rc.1'))",
     NOMATCH, NULL},
    /* a missing key is a runtime error, unless && / || decide without it */
    {"device.attributes['gpu.example.com'].clique == 'a'", RUNTIME, "no such key: clique"},
    {"device.capacity['gpu.example.com'].cores.isGreaterThan(quantity('1'))", RUNTIME,
     "no such key: cores"},
    {"device.attributes['other.com'].x == 1", RUNTIME, "no such key: x"},
    {"false && device.attributes['gpu.example.com'].clique == 'a'", NOMATCH, NULL},
    {"device.attributes['gpu.example.com'].clique == 'a' || true", MATCH, NULL},
    {"device.attributes['gpu.example.com'].model > 3", RUNTIME, "no such overload"},
    /* heterogeneous equality is false, as in Kubernetes' CEL */
    {"device.attributes['gpu.example.com'].model == 3", NOMATCH, NULL},
    /* refused at parse time, naming the construct */
    {"device.attributes['gpu.example.com'].model.matches('H.*')", UNSUPPORTED, "matches()"},
    {"device.attributes['gpu.example.com'].index + 1 == 4", UNSUPPORTED, "arithmetic"},
    {"device.driver == 'a' ? true : false", UNSUPPORTED, "conditional operator"},
    {"size(device.driver) > 2", UNSUPPORTED, "size()"},
    {"device.allowMultipleAllocations", UNSUPPORTED, "device field allowMultipleAllocations"},
    {"['a'].all(x, x == 'a')", UNSUPPORTED, "all()"},
    {"device.attributes['gpu.example.com'].index == 1.0", UNSUPPORTED, "double literal"},
    {"request.name == 'x'", UNSUPPORTED, "identifier request"},
    {"device.capacity['gpu.example.com'].memory >= quantity('80Gi')", INVALID, "compareTo"},
    {"device.driver ==", INVALID, "unexpected end"},
    {"device.driver", INVALID, "must evaluate to bool"},
    {"quantity('80 Gi').isGreaterThan(quantity('1'))", INVALID, "80 Gi"},
    {"'unterminated", INVALID, "unterminated"},
};

static void cel_device(struct dra_cel_device *d, struct dra_attr *at, struct dra_capacity *cap)
{
    memset(at, 0, 5 * sizeof(*at));
    at[0] = (struct dra_attr){
        .domain = "gpu.example.com", .name = "model", .type = DRA_ATTR_STRING, .s = "H100"};
    at[1] = (struct dra_attr){
        .domain = "gpu.example.com", .name = "index", .type = DRA_ATTR_INT, .i = 3};
    at[2] = (struct dra_attr){
        .domain = "gpu.example.com", .name = "mig", .type = DRA_ATTR_BOOL, .b = 0};
    at[3] = (struct dra_attr){.domain = "gpu.example.com",
                              .name = "driverVersion",
                              .type = DRA_ATTR_VERSION,
                              .s = "550.54.15"};
    ck_assert_int_eq(dra_semver_parse(at[3].s, &at[3].v, NULL), COMMON_OK);
    at[4] = (struct dra_attr){.domain = "resource.kubernetes.io",
                              .name = "pcieRoot",
                              .type = DRA_ATTR_STRING,
                              .s = "pci0000:00"};
    cap->domain = "gpu.example.com";
    cap->name = "memory";
    ck_assert_int_eq(common_quantity_parse("80Gi", &cap->value, NULL), COMMON_OK);
    *d = (struct dra_cel_device){"gpu.example.com", at, 5, cap, 1};
}

START_TEST(cel_subset_table)
{
    struct dra_attr at[5];
    struct dra_capacity cap;
    struct dra_cel_device dev;
    struct common_arena *a = common_arena_create(0);
    cel_device(&dev, at, &cap);
    for (size_t i = 0; i < sizeof(cel_cases) / sizeof(cel_cases[0]); i++) {
        struct dra_cel_prog p;
        struct common_error e;
        int m = -1;
        enum common_rc rc = dra_cel_parse(a, cel_cases[i].expr, &p, &e);
        if (cel_cases[i].want == UNSUPPORTED || cel_cases[i].want == INVALID) {
            ck_assert_msg(
                rc == (cel_cases[i].want == UNSUPPORTED ? COMMON_EUNSUPPORTED : COMMON_EINVAL),
                "%s: parse rc %d (%s)", cel_cases[i].expr, rc, e.msg);
            ck_assert_msg(strstr(e.msg, cel_cases[i].msg) != NULL, "%s: message %s",
                          cel_cases[i].expr, e.msg);
            /* the message quotes the expression */
            ck_assert_msg(strstr(e.msg, cel_cases[i].expr) != NULL, "%s", e.msg);
            continue;
        }
        ck_assert_msg(rc == COMMON_OK, "%s: %s", cel_cases[i].expr, e.msg);
        rc = dra_cel_eval(&p, &dev, &m, &e);
        if (cel_cases[i].want == RUNTIME) {
            ck_assert_msg(rc == COMMON_EINVAL, "%s: eval rc %d match %d", cel_cases[i].expr, rc, m);
            ck_assert_msg(strstr(e.msg, cel_cases[i].msg) != NULL, "%s: %s", cel_cases[i].expr,
                          e.msg);
        } else {
            ck_assert_msg(rc == COMMON_OK, "%s: %s", cel_cases[i].expr, e.msg);
            ck_assert_msg(m == (int)cel_cases[i].want, "%s: got %d", cel_cases[i].expr, m);
        }
    }
    common_arena_destroy(a);
}
END_TEST

START_TEST(semver_precedence)
{
    const char *order[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                           "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                           "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                           "1.10.0",      "2.0.0"};
    size_t n = sizeof(order) / sizeof(order[0]);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            struct dra_semver a, b;
            ck_assert_int_eq(dra_semver_parse(order[i], &a, NULL), COMMON_OK);
            ck_assert_int_eq(dra_semver_parse(order[j], &b, NULL), COMMON_OK);
            ck_assert_msg(dra_semver_cmp(&a, &b) == (i < j ? -1 : i > j), "%s vs %s", order[i],
                          order[j]);
        }
    {
        struct dra_semver v;
        struct common_error e;
        ck_assert_int_eq(dra_semver_parse("1.0.0+build.5", &v, NULL), COMMON_OK);
        ck_assert_int_eq(dra_semver_parse("1.0", &v, &e), COMMON_EINVAL);
        ck_assert_ptr_nonnull(strstr(e.msg, "\"1.0\""));
        ck_assert_int_eq(dra_semver_parse("01.0.0", &v, NULL), COMMON_EINVAL);
    }
}
END_TEST

/* ---- fixtures ---- */

static enum common_rc decode_list(struct common_arena *a, const json_t *list, size_t size,
                                  void **out, size_t *n, int kind, struct common_error *e)
{
    *n = 0;
    if (!(*out = common_arena_alloc(a, (json_array_size(list) + 1) * size)))
        return common_error_set(e, COMMON_ENOMEM, "out of memory");
    for (size_t i = 0; i < json_array_size(list); i++) {
        char *p = (char *)*out + i * size;
        const json_t *o = json_array_get(list, i);
        enum common_rc rc = kind == 0   ? dra_slice_decode(a, o, (struct dra_slice *)p, e)
                            : kind == 1 ? dra_class_decode(a, o, (struct dra_class *)p, e)
                                        : dra_claim_decode(a, o, (struct dra_claim *)p, e);
        if (rc != COMMON_OK)
            return rc;
        (*n)++;
    }
    return COMMON_OK;
}

/* what one case produced: decoding failed (*decoded 0) or the allocator's answer */
struct outcome {
    int decoded;
    struct dra_claim_alloc *out;
    size_t n_claims;
};

/* decode the case's objects and allocate; no assertions, so an allocation failure walk can
 * call it (everything lives in arena a) */
static enum common_rc decode_and_allocate(struct common_arena *a, const json_t *root,
                                          struct outcome *o, struct common_error *e)
{
    struct dra_snapshot snap;
    struct dra_slice *slices;
    struct dra_class *classes;
    struct dra_claim *inuse, *claims;
    enum common_rc rc;

    memset(&snap, 0, sizeof(snap));
    memset(o, 0, sizeof(*o));
    if ((rc = decode_list(a, json_object_get(root, "slices"), sizeof(*slices), (void **)&slices,
                          &snap.n_slices, 0, e)) ||
        (rc = decode_list(a, json_object_get(root, "classes"), sizeof(*classes), (void **)&classes,
                          &snap.n_classes, 1, e)) ||
        (rc = decode_list(a, json_object_get(root, "inUse"), sizeof(*inuse), (void **)&inuse,
                          &snap.n_allocated, 2, e)) ||
        (rc = decode_list(a, json_object_get(root, "claims"), sizeof(*claims), (void **)&claims,
                          &o->n_claims, 2, e)))
        return rc;
    o->decoded = 1;
    snap.slices = slices;
    snap.classes = classes;
    snap.allocated = inuse;
    if (!(o->out = common_arena_alloc(a, (o->n_claims + 1) * sizeof(*o->out))))
        return common_error_set(e, COMMON_ENOMEM, "out of memory");
    return dra_allocate(a, &snap, json_string_value(json_object_get(root, "node")), claims,
                        o->n_claims, o->out, e);
}

static json_t *load_case(const char *name)
{
    char rel[512];
    char *text;
    json_t *root;
    json_error_t jerr;
    snprintf(rel, sizeof(rel), "dra/%s/case.json", name);
    text = testutil_read(testutil_path(rel));
    root = json_loads(text, 0, &jerr);
    free(text);
    ck_assert_msg(root != NULL, "%s: %s", name, jerr.text);
    return root;
}

static void run_case(const char *name)
{
    json_t *root = load_case(name), *expect = json_object_get(root, "expect");
    struct common_arena *a = common_arena_create(0);
    struct common_error e;
    struct outcome o;
    const char *want_msg = json_string_value(json_object_get(expect, "message"));
    enum common_rc rc = decode_and_allocate(a, root, &o, &e);

    if (json_object_get(expect, "decodeError")) {
        ck_assert_msg(!o.decoded, "%s: decoding should fail", name);
        ck_assert_str_eq(common_rc_name(rc),
                         json_string_value(json_object_get(expect, "decodeError")));
        ck_assert_msg(strstr(e.msg, want_msg) != NULL, "%s: message %s", name, e.msg);
        goto out;
    }
    ck_assert_msg(o.decoded, "%s: decode: %s", name, e.msg);
    if (json_object_get(expect, "error")) {
        ck_assert_msg(rc != COMMON_OK, "%s: allocation should fail", name);
        ck_assert_str_eq(common_rc_name(rc), json_string_value(json_object_get(expect, "error")));
        ck_assert_msg(strstr(e.msg, want_msg) != NULL, "%s: message %s", name, e.msg);
        goto out;
    }
    ck_assert_msg(rc == COMMON_OK, "%s: allocate: %s", name, e.msg);
    {
        const json_t *res = json_object_get(expect, "results");
        ck_assert_uint_eq(json_array_size(res), o.n_claims);
        for (size_t ci = 0; ci < o.n_claims; ci++) {
            const json_t *want = json_array_get(res, ci);
            ck_assert_msg(json_array_size(want) == o.out[ci].n_results,
                          "%s: claim %zu: %zu results", name, ci, o.out[ci].n_results);
            for (size_t k = 0; k < o.out[ci].n_results; k++) {
                const json_t *w = json_array_get(want, k);
                const struct dra_result *r = &o.out[ci].results[k];
                ck_assert_msg(
                    strcmp(r->request, json_string_value(json_object_get(w, "request"))) == 0 &&
                        strcmp(r->pool, json_string_value(json_object_get(w, "pool"))) == 0 &&
                        strcmp(r->device, json_string_value(json_object_get(w, "device"))) == 0 &&
                        r->admin_access == json_is_true(json_object_get(w, "adminAccess")),
                    "%s: claim %zu result %zu is %s %s/%s admin=%d", name, ci, k, r->request,
                    r->pool, r->device, r->admin_access);
            }
        }
    }
out:
    json_decref(root);
    common_arena_destroy(a);
}

/* every allocation failing in turn gives COMMON_ENOMEM (or, once none fails, the answer), no
 * crash and no leak (the sanitizer build checks leaks) */
START_TEST(allocation_failures_are_clean)
{
    static const char *cases[] = {
        "match-attribute-across-two-requests-backtracks-the-earlier-request",
        "first-available-falls-back-to-the-next-subrequest-in-order",
        "allocation-mode-all-takes-every-matching-device",
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        json_t *root = load_case(cases[c]);
        int done = 0;
        unsigned long n;
        for (n = 1; !done && n < 100000; n++) {
            struct common_arena *a;
            struct common_error e;
            struct outcome o;
            enum common_rc rc;
            common_alloc_fail_at(n);
            a = common_arena_create(0);
            rc = decode_and_allocate(a, root, &o, &e);
            done = !common_alloc_failed();
            common_alloc_fail_at(0);
            if (done)
                ck_assert_msg(rc == COMMON_OK, "%s: %s", cases[c], e.msg);
            else
                ck_assert_msg(rc == COMMON_ENOMEM, "%s: failing allocation %lu gave %s: %s",
                              cases[c], n, common_rc_name(rc), e.msg);
            common_arena_destroy(a);
        }
        ck_assert_msg(done, "%s: never completed", cases[c]);
        /* at least one allocation was made to fail before the run that completed */
        ck_assert_msg(n > 2, "%s: no allocation failed", cases[c]);
        json_decref(root);
    }
}
END_TEST

START_TEST(allocator_fixtures)
{
    DIR *dir = opendir(testutil_path("dra"));
    struct dirent *de;
    int n = 0;
    ck_assert_ptr_nonnull(dir);
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.')
            continue;
        run_case(de->d_name);
        n++;
    }
    closedir(dir);
    ck_assert_int_ge(n, 12);
}
END_TEST

/* one index serves many nodes: each node sees its own slices plus the allNodes ones */
START_TEST(one_index_serves_every_node)
{
    json_t *root = load_case("only-the-newest-generation-of-a-pool-counts-and-pools-are-used-in-"
                             "name-order");
    struct common_arena *a = common_arena_create(0);
    struct common_error e;
    struct dra_snapshot snap;
    struct dra_slice *slices;
    struct dra_class *classes;
    struct dra_claim *claims;
    struct dra_index *ix;
    struct dra_claim_alloc out;
    size_t n_claims;
    static const struct {
        const char *node, *pool0, *dev0, *pool1, *dev1;
    } want[] = {{"n1", "a", "new0", "b", "b0"}, {"n2", "b", "b0", "n2", "x0"}};

    memset(&snap, 0, sizeof(snap));
    ck_assert_int_eq(decode_list(a, json_object_get(root, "slices"), sizeof(*slices),
                                 (void **)&slices, &snap.n_slices, 0, &e),
                     COMMON_OK);
    ck_assert_int_eq(decode_list(a, json_object_get(root, "classes"), sizeof(*classes),
                                 (void **)&classes, &snap.n_classes, 1, &e),
                     COMMON_OK);
    ck_assert_int_eq(decode_list(a, json_object_get(root, "claims"), sizeof(*claims),
                                 (void **)&claims, &n_claims, 2, &e),
                     COMMON_OK);
    snap.slices = slices;
    snap.classes = classes;
    ck_assert_int_eq(dra_index_build(a, &snap, &ix, &e), COMMON_OK);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(dra_allocate_indexed(a, ix, want[i].node, claims, 1, &out, &e), COMMON_OK);
        ck_assert_uint_eq(out.n_results, 2);
        ck_assert_str_eq(out.results[0].pool, want[i].pool0);
        ck_assert_str_eq(out.results[0].device, want[i].dev0);
        ck_assert_str_eq(out.results[1].pool, want[i].pool1);
        ck_assert_str_eq(out.results[1].device, want[i].dev1);
    }
    /* pools with devices for a node (kube-scheduler's first fit is foretold only with one):
     * n1 and n2 have their own pool and the allNodes one, n3 only the allNodes one */
    ck_assert_uint_eq(dra_node_pools(ix, "n1"), 2);
    ck_assert_uint_eq(dra_node_pools(ix, "n2"), 2);
    ck_assert_uint_eq(dra_node_pools(ix, "n3"), 1);
    /* a node with no slices of its own has only the allNodes pool: 1 device, 2 wanted */
    ck_assert_int_eq(dra_allocate_indexed(a, ix, "n3", claims, 1, &out, &e), COMMON_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(e.msg, "node n3 has 1 matching"));
    json_decref(root);
    common_arena_destroy(a);
}
END_TEST

/* ---- the index's lookup tables answer as the plain index ---- */

#define IT_NODES 4

/* a random slice: node n's own (n < IT_NODES), allNodes (n == IT_NODES) or nodeSelector (n >
 * IT_NODES); pool "p<pool>" of 1 or 2 slices; devices d0.. with a model, mostly a clique */
static json_t *it_slice(unsigned *seed, int i, int n, int pool, int gen, int count)
{
    json_t *devs = json_array(), *spec, *o;
    char name[16], node[8], pl[8];
    int n_dev = 1 + rand_r(seed) % 5;
    for (int d = 0; d < n_dev; d++) {
        char dev[8];
        json_t *attrs = json_pack("{s:{s:s}}", "model", "string", rand_r(seed) % 3 ? "a" : "b");
        /* two slices of a pool with the same parity repeat names: the pool is invalid */
        snprintf(dev, sizeof(dev), "d%d", d + (i % 2) * 5);
        if (rand_r(seed) % 6)
            json_object_set_new(attrs, "clique",
                                json_pack("{s:s}", "string", rand_r(seed) % 2 ? "c0" : "c1"));
        json_array_append_new(devs, json_pack("{s:s, s:o}", "name", dev, "attributes", attrs));
    }
    snprintf(name, sizeof(name), "s%d", i);
    snprintf(node, sizeof(node), "n%d", n);
    snprintf(pl, sizeof(pl), "p%d", pool);
    spec = json_pack("{s:s, s:{s:s, s:i, s:i}, s:o}", "driver",
                     rand_r(seed) % 8 ? "x.example.com" : "y.example.com", "pool", "name", pl,
                     "generation", gen, "resourceSliceCount", count, "devices", devs);
    if (n < IT_NODES)
        json_object_set_new(spec, "nodeName", json_string(node));
    else if (n == IT_NODES)
        json_object_set_new(spec, "allNodes", json_true());
    else
        json_object_set_new(spec, "nodeSelector",
                            json_pack("{s:[{s:[{s:s, s:s, s:[s]}]}]}", "nodeSelectorTerms",
                                      "matchFields", "key", "metadata.name", "operator", "In",
                                      "values", "n0"));
    o = json_pack("{s:{s:s}, s:o}", "metadata", "name", name, "spec", spec);
    return o;
}

/* a random request (exactly, All, firstAvailable; adminAccess now and then) */
static json_t *it_request(unsigned *seed, const char *name)
{
    json_t *x = json_pack("{s:s}", "deviceClassName", rand_r(seed) % 2 ? "any" : "x");
    int k = rand_r(seed) % 10;
    if (k == 0)
        json_object_set_new(x, "allocationMode", json_string("All"));
    else
        json_object_set_new(x, "count", json_integer(1 + rand_r(seed) % 3));
    if (rand_r(seed) % 3 == 0)
        json_object_set_new(x, "selectors",
                            json_pack("[{s:{s:s}}]", "cel", "expression",
                                      "device.attributes['x.example.com'].model == 'a'"));
    if (rand_r(seed) % 12 == 0)
        json_object_set_new(x, "adminAccess", json_true());
    if (k == 1) {
        json_object_set_new(x, "name", json_string("first"));
        return json_pack("{s:s, s:[o, {s:s, s:s, s:i}]}", "name", name, "firstAvailable", x, "name",
                         "then", "deviceClassName", "any", "count", 1);
    }
    return json_pack("{s:s, s:o}", "name", name, "exactly", x);
}

/* a random claim of one or two requests, maybe with a matchAttribute on the clique; with
 * allocated: its results name n_res random devices (some absent) */
static json_t *it_claim(unsigned *seed, int i, int n_res)
{
    char name[16];
    json_t *reqs = json_array(), *devices, *o;
    int n_req = 1 + rand_r(seed) % 2;
    for (int r = 0; r < n_req; r++)
        json_array_append_new(reqs, it_request(seed, r ? "r1" : "r0"));
    devices = json_pack("{s:o}", "requests", reqs);
    if (rand_r(seed) % 3 == 0)
        json_object_set_new(devices, "constraints",
                            json_pack("[{s:s}]", "matchAttribute", "x.example.com/clique"));
    snprintf(name, sizeof(name), "c%d", i);
    o = json_pack("{s:{s:s, s:s}, s:{s:o}}", "metadata", "name", name, "namespace", "ml", "spec",
                  "devices", devices);
    if (n_res) {
        json_t *res = json_array();
        for (int k = 0; k < n_res; k++) {
            char pl[8], dev[8];
            snprintf(pl, sizeof(pl), "p%d", rand_r(seed) % 7);
            snprintf(dev, sizeof(dev), "d%d", rand_r(seed) % 11);
            json_array_append_new(res, json_pack("{s:s, s:s, s:s, s:s, s:b}", "request", "r0",
                                                 "driver", "x.example.com", "pool", pl, "device",
                                                 dev, "adminAccess", rand_r(seed) % 8 == 0));
        }
        json_object_set_new(o, "status",
                            json_pack("{s:{s:{s:o}}}", "allocation", "devices", "results", res));
    }
    return o;
}

/* one answer of an index as text: an allocation's devices or its error */
static void it_alloc(struct common_arena *a, const struct dra_index *ix, const char *node,
                     const struct dra_claim *cl, size_t n, const struct dra_alloc_opts *o,
                     json_t *into)
{
    struct dra_claim_alloc out[2];
    struct common_error e;
    enum common_rc rc = dra_allocate_opts(a, ix, node, cl, n, o, out, &e);
    json_t *got = json_array();
    if (rc != COMMON_OK) {
        json_array_append_new(into, json_pack("[s, s]", common_rc_name(rc), e.msg));
        json_decref(got);
        return;
    }
    for (size_t c = 0; c < n; c++)
        for (size_t r = 0; r < out[c].n_results; r++)
            json_array_append_new(got, json_pack("[s, s, s, b]", out[c].results[r].request,
                                                 out[c].results[r].pool, out[c].results[r].device,
                                                 out[c].results[r].admin_access));
    json_array_append_new(into, got);
}

/* everything an index answers for the snapshot, as text */
static char *it_dump(struct common_arena *a, const struct dra_index *ix,
                     const struct dra_snapshot *sn, const struct dra_claim *cl, size_t n_cl,
                     const struct dra_result *extra, size_t n_extra)
{
    json_t *o = json_array();
    const struct dra_attr **vals;
    size_t n_vals;
    struct common_error e;
    char *txt;

    ck_assert_int_eq(dra_attr_values(a, ix, "x.example.com", "clique", &vals, &n_vals, &e),
                     COMMON_OK);
    json_array_append_new(o, json_integer((json_int_t)n_vals));
    for (int n = -1; n <= IT_NODES; n++) { /* "" (allNodes only) and a node without slices */
        char node[8] = "";
        struct dra_alloc_opts opt;
        if (n >= 0)
            snprintf(node, sizeof(node), "n%d", n);
        memset(&opt, 0, sizeof(opt));
        json_array_append_new(o,
                              json_pack("[s, I, I]", node, (json_int_t)dra_node_devices(ix, node),
                                        (json_int_t)dra_node_pools(ix, node)));
        for (size_t c = 0; c < n_cl; c++)
            it_alloc(a, ix, node, &cl[c], 1, NULL, o);
        if (n_cl >= 2)
            it_alloc(a, ix, node, cl, 2, NULL, o);
        opt.extra_used = extra;
        opt.n_extra_used = n_extra;
        for (size_t v = 0; v <= n_vals && n_cl; v++) {
            if (v < n_vals) {
                opt.match_domain = "x.example.com";
                opt.match_name = "clique";
                opt.match_value = vals[v];
            }
            it_alloc(a, ix, node, cl, 1, &opt, o);
        }
        for (size_t s = 0; s < sn->n_slices; s++)
            for (size_t d = 0; d < sn->slices[s].n_devices; d++) {
                struct dra_result r = {"r0", sn->slices[s].driver, sn->slices[s].pool,
                                       sn->slices[s].devices[d].name, 0};
                const struct dra_attr *at =
                    dra_device_attr(ix, n >= 0 ? node : NULL, &r, "x.example.com", "clique");
                json_array_append_new(
                    o, json_pack("[s, i, i]", at ? at->s : "-", dra_device_node_local(ix, node, &r),
                                 dra_device_in_use(ix, r.driver, r.pool, r.device)));
            }
    }
    for (size_t s = 0; s < sn->n_slices; s++)
        json_array_append_new(o, json_integer(dra_slice_current(ix, &sn->slices[s])));
    txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return txt;
}

START_TEST(the_index_tables_answer_as_the_plain_index)
{
    unsigned seed = 29;
    json_t *cls = json_pack("[{s:{s:s}, s:{s:[{s:{s:s}}]}}, {s:{s:s}}]", "metadata", "name", "x",
                            "spec", "selectors", "cel", "expression",
                            "device.driver == 'x.example.com'", "metadata", "name", "any");
    size_t allocs = 0, fits = 0;

    for (int round = 0; round < 300; round++) {
        struct common_arena *a = common_arena_create(0);
        struct common_error e;
        struct dra_snapshot sn;
        struct dra_slice *slices;
        struct dra_class *classes;
        struct dra_claim *inuse, *claims;
        struct dra_index *fast, *plain;
        struct dra_result extra[6];
        size_t n_claims, n_extra = (size_t)(rand_r(&seed) % 4);
        json_t *sl = json_array(), *iu = json_array(), *cl = json_array();
        char *fd, *pd;
        int n_sl = 1 + rand_r(&seed) % 10;

        for (int i = 0; i < n_sl; i++) {
            int pool = rand_r(&seed) % 6, count = 1 + rand_r(&seed) % 2;
            int n = pool < IT_NODES ? pool : rand_r(&seed) % (IT_NODES + 2);
            json_array_append_new(sl, it_slice(&seed, i, n, pool, 1 + rand_r(&seed) % 2, count));
        }
        for (int i = 0, k = rand_r(&seed) % 4; i < k; i++)
            json_array_append_new(iu, it_claim(&seed, 100 + i, 1 + rand_r(&seed) % 3));
        for (int i = 0; i < 2; i++)
            json_array_append_new(cl, it_claim(&seed, i, 0));
        memset(&sn, 0, sizeof(sn));
        ck_assert_msg(decode_list(a, sl, sizeof(*slices), (void **)&slices, &sn.n_slices, 0, &e) ==
                          COMMON_OK,
                      "%s", e.msg);
        ck_assert_int_eq(
            decode_list(a, cls, sizeof(*classes), (void **)&classes, &sn.n_classes, 1, &e),
            COMMON_OK);
        ck_assert_msg(decode_list(a, iu, sizeof(*inuse), (void **)&inuse, &sn.n_allocated, 2, &e) ==
                          COMMON_OK,
                      "%s", e.msg);
        ck_assert_msg(decode_list(a, cl, sizeof(*claims), (void **)&claims, &n_claims, 2, &e) ==
                          COMMON_OK,
                      "%s", e.msg);
        sn.slices = slices;
        sn.classes = classes;
        sn.allocated = inuse;
        for (size_t i = 0; i < n_extra; i++) {
            const struct dra_slice *s = &slices[rand_r(&seed) % (unsigned)sn.n_slices];
            extra[i] = (struct dra_result){"r0", s->driver, s->pool,
                                           s->devices[rand_r(&seed) % s->n_devices].name, 0};
        }
        ck_assert_int_eq(dra_index_build(a, &sn, &fast, &e), COMMON_OK);
        ck_assert_int_eq(dra_index_build_plain(a, &sn, &plain, &e), COMMON_OK);
        fd = it_dump(a, fast, &sn, claims, n_claims, extra, n_extra);
        pd = it_dump(a, plain, &sn, claims, n_claims, extra, n_extra);
        ck_assert_msg(strcmp(fd, pd) == 0, "round %d:\ntables %s\nplain  %s", round, fd, pd);
        allocs++;
        fits += strstr(fd, "\"d") != NULL;
        free(fd);
        free(pd);
        json_decref(sl);
        json_decref(iu);
        json_decref(cl);
        common_arena_destroy(a);
    }
    /* the inputs are varied enough that claims fit somewhere most rounds */
    ck_assert_uint_gt(fits, allocs / 2);
    json_decref(cls);
}
END_TEST

/* ---- a view built on devices decoded earlier equals a full rebuild ---- */

#define VN_NODES 4
#define VN_DEVS 4
#define VN_CLAIMS 6

/* slice of node n at generation gen; bad: a repeated device name (left out with a reason) */
static json_t *vn_slice(int n, int gen, int bad)
{
    json_t *devs = json_array();
    for (int d = 0; d < VN_DEVS; d++) {
        char name[16];
        snprintf(name, sizeof(name), "g%d", bad && d == 1 ? 0 : d);
        json_array_append_new(devs, json_pack("{s:s, s:{s:{s:s}}}", "name", name, "attributes",
                                              "model", "string", d % 2 ? "a" : "b"));
    }
    char node[8];
    snprintf(node, sizeof(node), "n%d", n);
    return json_pack("{s:{s:s}, s:{s:s, s:s, s:{s:s, s:i, s:i}, s:o}}", "metadata", "name", node,
                     "spec", "driver", "gpu.example.com", "nodeName", node, "pool", "name", node,
                     "generation", gen, "resourceSliceCount", 1, "devices", devs);
}

/* claim c: unallocated, or allocated on node n with devices d0 (and d0+1) */
static json_t *vn_claim(int c, int n, int d0, int two)
{
    char name[16], pod[16], uid[16], node[8], pool[8], dev[2][8];
    json_t *o;
    snprintf(name, sizeof(name), "c%d", c);
    snprintf(pod, sizeof(pod), "p%d", c);
    snprintf(uid, sizeof(uid), "uid-p%d", c);
    o = json_pack("{s:{s:s, s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s}]}, s:{s:{s:[{s:s, "
                  "s:{s:s, s:i}}]}}}",
                  "metadata", "name", name, "namespace", "ml", "uid", name, "annotations",
                  DRA_POD_CLAIM_NAME_ANNOTATION, "gpu", "ownerReferences", "kind", "Pod", "name",
                  pod, "uid", uid, "spec", "devices", "requests", "name", "gpu", "exactly",
                  "deviceClassName", "gpu.example.com", "count", two ? 2 : 1);
    if (n < 0)
        return o;
    snprintf(node, sizeof(node), "n%d", n);
    snprintf(pool, sizeof(pool), "n%d", n);
    snprintf(dev[0], sizeof(dev[0]), "g%d", d0);
    snprintf(dev[1], sizeof(dev[1]), "g%d", (d0 + 1) % VN_DEVS);
    json_t *res = json_array();
    for (int k = 0; k < (two ? 2 : 1); k++)
        json_array_append_new(res, json_pack("{s:s, s:s, s:s, s:s}", "request", "gpu", "driver",
                                             "gpu.example.com", "pool", pool, "device", dev[k]));
    json_object_set_new(o, "status",
                        json_pack("{s:{s:{s:o}, s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}", "allocation",
                                  "devices", "results", res, "nodeSelector", "nodeSelectorTerms",
                                  "matchFields", "key", "metadata.name", "operator", "In", "values",
                                  node));
    return o;
}

/* everything the planner reads from a view, as text */
static char *vn_dump(const struct dra_view *v)
{
    struct common_arena *a = common_arena_create(0);
    json_t *o = json_object(), *bad = json_array(), *pods = json_array(), *nodes = json_object();
    char *txt;
    struct common_error e;

    json_object_set_new(o, "counts",
                        json_pack("[i, i, i, i]", (json_int_t)v->snap.n_slices,
                                  (json_int_t)v->snap.n_classes, (json_int_t)v->n_claims,
                                  (json_int_t)v->snap.n_allocated));
    for (size_t i = 0; i < v->n_bad; i++)
        json_array_append_new(
            bad, json_pack("[s, s, s]", v->bad[i].kind, v->bad[i].name, v->bad[i].reason));
    for (size_t i = 0; i < v->n_pods; i++)
        for (size_t k = 0; k < v->pods[i].n_refs; k++) {
            const struct dra_claim_ref *r = &v->pods[i].refs[k];
            json_array_append_new(pods, json_pack("[s, s, s]", v->pods[i].uid, r->entry,
                                                  r->claim ? r->claim->name : r->why));
        }
    for (int n = 0; n < VN_NODES; n++) {
        char node[8];
        struct dra_claim_alloc out;
        json_t *got = json_array();
        snprintf(node, sizeof(node), "n%d", n);
        /* a probe claim of two devices, and each device's in-use state */
        for (size_t c = 0; c < v->n_claims; c++)
            if (!v->claims[c].error && !v->claims[c].claim.is_allocated) {
                if (dra_allocate_indexed(a, v->ix, node, &v->claims[c].claim, 1, &out, &e) ==
                    COMMON_OK)
                    for (size_t r = 0; r < out.n_results; r++)
                        json_array_append_new(got, json_string(out.results[r].device));
                else
                    json_array_append_new(got, json_string(e.msg));
                break;
            }
        for (int d = 0; d < VN_DEVS; d++) {
            char dev[8];
            snprintf(dev, sizeof(dev), "g%d", d);
            json_array_append_new(
                got, json_integer(dra_device_in_use(v->ix, "gpu.example.com", node, dev)));
        }
        json_object_set_new(nodes, node, got);
    }
    json_object_set_new(o, "bad", bad);
    json_object_set_new(o, "pods", pods);
    json_object_set_new(o, "nodes", nodes);
    txt = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    common_arena_destroy(a);
    return txt;
}

START_TEST(a_view_on_devices_decoded_before_equals_a_full_rebuild)
{
    json_t *slices[VN_NODES], *claims[VN_CLAIMS];
    json_t *cls =
        json_pack("{s:{s:s}, s:{s:[{s:{s:s}}]}}", "metadata", "name", "gpu.example.com", "spec",
                  "selectors", "cel", "expression", "device.driver == 'gpu.example.com'");
    struct common_pod pods[VN_CLAIMS];
    struct common_pod_claim pc[VN_CLAIMS];
    char uids[VN_CLAIMS][16], names[VN_CLAIMS][16];
    const struct common_pod *pp[VN_CLAIMS];
    struct common_arena *dev_a = NULL;
    struct dra_view_devices dev;
    unsigned seed = 16;
    int decoded = 0, reused = 0;

    for (int n = 0; n < VN_NODES; n++)
        slices[n] = vn_slice(n, 1, 0);
    for (int c = 0; c < VN_CLAIMS; c++) {
        claims[c] = vn_claim(c, -1, 0, 0);
        memset(&pods[c], 0, sizeof(pods[c]));
        snprintf(uids[c], sizeof(uids[c]), "uid-p%d", c);
        snprintf(names[c], sizeof(names[c]), "p%d", c);
        pc[c].name = "gpu";
        pc[c].resource_claim_name = NULL;
        pc[c].resource_claim_template_name = "t";
        pods[c].uid = uids[c];
        pods[c].name = names[c];
        pods[c].namespace = "ml";
        pods[c].resource_claims = &pc[c];
        pods[c].n_resource_claims = 1;
        pp[c] = &pods[c];
    }
    for (int step = 0; step < 300; step++) {
        int r = rand_r(&seed) % 10, k;
        int devices_changed = 0;
        struct dra_view_input in;
        struct common_arena *fa = common_arena_create(0), *ia = common_arena_create(0);
        struct dra_view fv, iv;
        struct common_error e;
        char *fd, *id;

        if (r == 0) { /* a slice changes: new generation, or a repeated device name */
            k = rand_r(&seed) % VN_NODES;
            json_decref(slices[k]);
            slices[k] = vn_slice(k, 1 + rand_r(&seed) % 3, rand_r(&seed) % 4 == 0);
            devices_changed = 1;
        } else if (r < 8) { /* a claim is allocated or released */
            k = rand_r(&seed) % VN_CLAIMS;
            json_decref(claims[k]);
            claims[k] = vn_claim(k, rand_r(&seed) % 3 ? rand_r(&seed) % VN_NODES : -1,
                                 rand_r(&seed) % VN_DEVS, rand_r(&seed) % 2);
        } else { /* a pod names its claim directly, by template, or a missing one */
            k = rand_r(&seed) % VN_CLAIMS;
            pc[k].resource_claim_name =
                rand_r(&seed) % 2 ? (rand_r(&seed) % 2 ? "c0" : "nope") : NULL;
            pc[k].resource_claim_template_name = pc[k].resource_claim_name ? NULL : "t";
        }
        memset(&in, 0, sizeof(in));
        in.slices = (const json_t *const *)slices;
        in.n_slices = VN_NODES;
        in.classes = (const json_t *const *)&cls;
        in.n_classes = 1;
        in.claims = (const json_t *const *)claims;
        in.n_claims = VN_CLAIMS;
        in.pods = pp;
        in.n_pods = VN_CLAIMS;
        /* the extender's rule: decode the devices again only when a slice or class changed */
        if (!dev_a || devices_changed) {
            common_arena_destroy(dev_a);
            dev_a = common_arena_create(0);
            ck_assert_int_eq(dra_view_devices_decode(dev_a, &in, &dev, &e), COMMON_OK);
            decoded++;
        } else {
            reused++;
        }
        ck_assert_int_eq(dra_view_build(fa, &in, &fv, &e), COMMON_OK);
        ck_assert_int_eq(dra_view_build_on(ia, &in, &dev, &iv, &e), COMMON_OK);
        fd = vn_dump(&fv);
        id = vn_dump(&iv);
        ck_assert_msg(strcmp(fd, id) == 0, "step %d: full %s\nincremental %s", step, fd, id);
        free(fd);
        free(id);
        common_arena_destroy(fa);
        common_arena_destroy(ia);
    }
    ck_assert_int_gt(reused, 200); /* most steps built on the devices decoded before */
    ck_assert_int_gt(decoded, 10);
    for (int n = 0; n < VN_NODES; n++)
        json_decref(slices[n]);
    for (int c = 0; c < VN_CLAIMS; c++)
        json_decref(claims[c]);
    json_decref(cls);
    common_arena_destroy(dev_a);
}
END_TEST

/* fn(name, case) for every tests/fixtures/<area>/<name>/case.json (README.md left out); at
 * least min cases */
static void each_case(const char *area, int min, void (*fn)(const char *name, const json_t *c))
{
    char *names[64];
    int n = testutil_cases(area, names, 64), cases = 0;
    for (int i = 0; i < n; i++) {
        char rel[512];
        char *text;
        json_t *c;
        json_error_t je;
        if (strcmp(names[i], "README.md") != 0) {
            snprintf(rel, sizeof(rel), "%s/%s/case.json", area, names[i]);
            text = testutil_read(testutil_path(rel));
            c = json_loads(text, 0, &je);
            free(text);
            ck_assert_msg(c != NULL, "%s: %s", rel, je.text);
            fn(names[i], c);
            json_decref(c);
            cases++;
        }
        free(names[i]);
    }
    ck_assert_int_ge(cases, min);
}

/* ---- the stale-allocation sweep's decision: tests/fixtures/dra-sweep/<case>/case.json ---- */

static enum dra_sweep_pod sweep_pod_of(void *ctx, const char *ns, const char *name, const char *uid)
{
    const char *s = json_string_value(json_object_get(ctx, uid));
    (void)ns;
    (void)name;
    if (!s)
        return DRA_SWEEP_POD_GONE;
    for (int p = DRA_SWEEP_POD_GONE; p <= DRA_SWEEP_POD_OTHER; p++)
        if (strcmp(dra_sweep_pod_name((enum dra_sweep_pod)p), s) == 0)
            return (enum dra_sweep_pod)p;
    ck_abort_msg("unknown pod state %s", s);
    return DRA_SWEEP_POD_GONE;
}

static void sweep_case(const char *name, const json_t *c)
{
    const char *why = NULL;
    enum dra_sweep_verdict v = dra_sweep_decide_json(json_object_get(c, "claim"), sweep_pod_of,
                                                     (void *)json_object_get(c, "pods"), &why);
    const char *exp = json_string_value(json_object_get(c, "expect"));
    const char *want_why = json_string_value(json_object_get(c, "why"));
    ck_assert_msg(exp && strcmp(dra_sweep_verdict_name(v), exp) == 0, "%s: %s, want %s (%s)", name,
                  dra_sweep_verdict_name(v), exp, why);
    ck_assert_msg(why && want_why && strstr(why, want_why), "%s: reason \"%s\" lacks \"%s\"", name,
                  why, want_why);
}

START_TEST(sweep_fixtures)
{
    each_case("dra-sweep", 12, sweep_case);
}
END_TEST

/* ---- status.allocation as kube-scheduler writes it: tests/fixtures/dra-status ---- */

static const json_t *status_class_of(void *ctx, const char *name)
{
    const json_t *o;
    size_t i;
    json_array_foreach((json_t *)ctx, i, o)
    {
        const char *n = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        if (n && strcmp(n, name) == 0)
            return o;
    }
    return NULL;
}

static void status_case(const char *name, const json_t *c)
{
    struct dra_result res[DRA_MAX_RESULTS];
    size_t nr = 0, k;
    struct common_error e = {0};
    const json_t *rj;
    json_t *got;
    char *got_s, *want_s;

    json_array_foreach(json_object_get(c, "results"), k, rj)
    {
        res[nr].request = json_string_value(json_object_get(rj, "request"));
        res[nr].driver = json_string_value(json_object_get(rj, "driver"));
        res[nr].pool = json_string_value(json_object_get(rj, "pool"));
        res[nr].device = json_string_value(json_object_get(rj, "device"));
        res[nr].admin_access = json_is_true(json_object_get(rj, "adminAccess"));
        nr++;
    }
    got = dra_status_allocation(json_object_get(c, "claim"), status_class_of,
                                (void *)json_object_get(c, "classes"), res, nr,
                                json_string_value(json_object_get(c, "node")),
                                json_is_true(json_object_get(c, "nodeLocal")),
                                json_string_value(json_object_get(c, "timestamp")), &e);
    if (json_object_get(c, "error")) {
        ck_assert_msg(got == NULL && strstr(e.msg, json_string_value(json_object_get(c, "error"))),
                      "%s: error \"%s\"", name, e.msg);
        return;
    }
    ck_assert_msg(got != NULL, "%s: %s", name, e.msg);
    got_s = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
    want_s = json_dumps(json_object_get(c, "expect"), JSON_SORT_KEYS | JSON_COMPACT);
    ck_assert_msg(json_equal(got, json_object_get(c, "expect")), "%s:\n got %s\nwant %s", name,
                  got_s, want_s);
    free(got_s);
    free(want_s);
    json_decref(got);
}

START_TEST(status_fixtures)
{
    each_case("dra-status", 3, status_case);
}
END_TEST

START_TEST(status_timestamp_is_rfc3339_utc)
{
    char b[32];
    ck_assert_str_eq(dra_status_timestamp(0, b, sizeof(b)), "1970-01-01T00:00:00Z");
    ck_assert_str_eq(dra_status_timestamp(1796668200LL, b, sizeof(b)), "2026-12-07T18:30:00Z");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dra");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, cel_subset_table);
    tcase_add_test(tc, semver_precedence);
    tcase_add_test(tc, allocator_fixtures);
    tcase_add_test(tc, allocation_failures_are_clean);
    tcase_add_test(tc, one_index_serves_every_node);
    tcase_add_test(tc, the_index_tables_answer_as_the_plain_index);
    tcase_add_test(tc, a_view_on_devices_decoded_before_equals_a_full_rebuild);
    tcase_add_test(tc, sweep_fixtures);
    tcase_add_test(tc, status_fixtures);
    tcase_add_test(tc, status_timestamp_is_rfc3339_utc);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
