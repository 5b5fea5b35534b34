/*
 * tests/unit/test_gang.c - the pure gang core (gang/gang.h).
 *
 * Fixture cases: tests/fixtures/gang/<case>/case.yaml and tests/fixtures/topology/<case>/case.yaml
 * (topology-aware placement through the same planner), one document each (format in
 * tests/fixtures/gang/README.md): a cluster (Nodes, PodGroups, Pods as the API server returns
 * them), then a script of steps (filter, bind, tick, prioritize, preempt, status, info, and feed
 * events) each with the decisions expected. The runner decodes Pods and Nodes with the product's
 * own decoders (common/coretypes.h), runs every step at its time and checks the books with
 * gang_check after each one. Every case carries a `rule:`.
 *
 * Direct tests: random interleavings of two 12-GPU gangs on 16 GPUs against a model of
 * kube-scheduler (never both holding, one released whole), a 5,000-node / 1,000-pod gang timing
 * of the filter fast path, allocation failure at every step of a gang's life, PodGroup decoding
 * errors and configuration errors.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/coretypes.h"
#include "common/yaml.h"
#include "dra/view.h"
#include "gang/gang.h"
#include "testutil.h"

#define MAX_CASES 256

static char *cases[MAX_CASES];
static int n_cases;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_area(const char *area)
{
    char path[4096];
    DIR *d;
    struct dirent *e;
    int first = n_cases;

    snprintf(path, sizeof(path), "%s/%s", TS_FIXTURES, area);
    d = opendir(path);
    if (!d)
        return;
    while ((e = readdir(d)) && n_cases < MAX_CASES) {
        char sub[4096];
        DIR *s;
        if (e->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        s = opendir(sub);
        if (!s)
            continue;
        closedir(s);
        snprintf(sub, sizeof(sub), "%s/%s", area, e->d_name);
        cases[n_cases++] = strdup(sub);
    }
    closedir(d);
    qsort(cases + first, (size_t)(n_cases - first), sizeof(cases[0]), cmp_str);
}

static void collect(void)
{
    collect_area("gang");
    collect_area("topology");
    collect_area("gang-dra");
}

/* ---- {i} expansion ---- */

static json_t *subst(const json_t *v, const char *var, long i);

static char *subst_str(const char *s, const char *var, long i)
{
    char num[32], pat[16];
    size_t cap = strlen(s) * 2 + 64, n = 0, pl, nl;
    char *out = malloc(cap);

    snprintf(num, sizeof(num), "%ld", i);
    snprintf(pat, sizeof(pat), "{%s}", var);
    pl = strlen(pat);
    nl = strlen(num);
    ck_assert_ptr_nonnull(out);
    while (*s) {
        if (strncmp(s, pat, pl) == 0) {
            if (n + nl + 1 > cap) {
                cap = (n + nl + 1) * 2;
                out = realloc(out, cap);
                ck_assert_ptr_nonnull(out);
            }
            memcpy(out + n, num, nl);
            n += nl;
            s += pl;
        } else {
            if (n + 2 > cap) {
                cap *= 2;
                out = realloc(out, cap);
                ck_assert_ptr_nonnull(out);
            }
            out[n++] = *s++;
        }
    }
    out[n] = '\0';
    return out;
}

static json_t *subst(const json_t *v, const char *var, long i)
{
    json_t *r;
    const char *k;
    json_t *x;
    size_t idx;

    if (json_is_string(v)) {
        char *s = subst_str(json_string_value(v), var, i);
        r = json_string(s);
        free(s);
        return r;
    }
    if (json_is_object(v)) {
        r = json_object();
        json_object_foreach((json_t *)v, k, x)
        {
            char *kk = subst_str(k, var, i);
            json_object_set_new(r, kk, subst(x, var, i));
            free(kk);
        }
        return r;
    }
    if (json_is_array(v)) {
        r = json_array();
        json_array_foreach(v, idx, x) json_array_append_new(r, subst(x, var, i));
        return r;
    }
    return json_deep_copy(v);
}

/*
 * expand - a new array from list: an item {x-count: N, x-from: F, x-var: V, x-item: ITEM} (or
 * x-items: [..]) becomes ITEM(s) for i = F..F+N-1 with "{V}" (default "{i}") replaced by i.
 * Nested counts expand too.
 */
static json_t *expand(const json_t *list)
{
    json_t *out = json_array(), *it;
    size_t idx;

    if (!list)
        return out;
    ck_assert_msg(json_is_array(list), "expected a list");
    json_array_foreach(list, idx, it)
    {
        const json_t *cnt = json_object_get(it, "x-count");
        if (!cnt) {
            json_array_append(out, it);
            continue;
        }
        {
            long from = (long)json_integer_value(json_object_get(it, "x-from"));
            const char *var = json_string_value(json_object_get(it, "x-var"));
            const json_t *item = json_object_get(it, "x-item");
            const json_t *items = json_object_get(it, "x-items");
            if (!var)
                var = "i";
            for (long i = from; i < from + (long)json_integer_value(cnt); i++) {
                json_t *body = json_array(), *sub, *ex;
                size_t j;
                json_t *y;
                if (item)
                    json_array_append(body, (json_t *)item);
                json_array_foreach(items, j, y) json_array_append(body, y);
                sub = subst(body, var, i);
                ex = expand(sub);
                json_array_extend(out, ex);
                json_decref(body);
                json_decref(sub);
                json_decref(ex);
            }
        }
    }
    return out;
}

/* ---- the runner ---- */

struct run {
    const char *name;
    struct gang_state *s;
    json_t *pods;   /* "ns/name" -> Pod object (current) */
    json_t *nodes;  /* node names in fixture order */
    json_t *chosen; /* "ns/name" -> the first node its last filter kept */
    int64_t now;
    int step;
    /* DRA (fixture keys resourceSlices, deviceClasses, resourceClaims) */
    int has_dra;
    json_t *slices, *classes, *claims; /* name or "ns/name" -> object */
    struct common_arena *dra_a;
    /* for restart: the document and the configuration */
    const json_t *doc;
    struct gang_config cfg;
};

/* build the DRA view from the fixture's objects and every pod, hand it to the books, then
 * drop the previous one */
static void dra_refresh(struct run *r)
{
    struct common_arena *a;
    struct dra_view *v;
    struct dra_view_input in;
    const json_t **sl, **cl, **cm;
    const struct common_pod **po;
    const char *k;
    json_t *x;
    size_t n;
    struct common_error e;

    if (!r->has_dra)
        return;
    a = common_arena_create(0);
    ck_assert(a != NULL);
    v = common_arena_alloc(a, sizeof(*v));
    sl = common_arena_alloc(a, (json_object_size(r->slices) + 1) * sizeof(*sl));
    cl = common_arena_alloc(a, (json_object_size(r->classes) + 1) * sizeof(*cl));
    cm = common_arena_alloc(a, (json_object_size(r->claims) + 1) * sizeof(*cm));
    po = common_arena_alloc(a, (json_object_size(r->pods) + 1) * sizeof(*po));
    memset(&in, 0, sizeof(in));
    n = 0;
    json_object_foreach(r->slices, k, x) sl[n++] = x;
    in.slices = sl;
    in.n_slices = n;
    n = 0;
    json_object_foreach(r->classes, k, x) cl[n++] = x;
    in.classes = cl;
    in.n_classes = n;
    n = 0;
    json_object_foreach(r->claims, k, x) cm[n++] = x;
    in.claims = cm;
    in.n_claims = n;
    n = 0;
    json_object_foreach(r->pods, k, x)
    {
        struct common_pod *cp = NULL;
        ck_assert_msg(common_pod_from_json(x, &cp, &e) == COMMON_OK, "%s: %s", r->name, e.msg);
        po[n++] = cp;
    }
    in.pods = po;
    in.n_pods = n;
    ck_assert_msg(dra_view_build(a, &in, v, &e) == COMMON_OK, "%s: DRA view: %s", r->name, e.msg);
    for (size_t i = 0; i < n; i++)
        common_pod_free((struct common_pod *)po[i]);
    gang_dra_set(r->s, v);
    common_arena_destroy(r->dra_a);
    r->dra_a = a;
}

static void dra_put(json_t *map, const json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    char key[600];

    snprintf(key, sizeof(key), "%s%s%s", ns ? ns : "", ns ? "/" : "", name ? name : "");
    json_object_set_new(map, key, json_deep_copy(obj));
}

static const char *ns_of(const char *key, char *buf, size_t size, const char **name)
{
    const char *sl = strchr(key, '/');

    ck_assert_msg(sl != NULL, "pod reference %s is not namespace/name", key);
    snprintf(buf, size, "%.*s", (int)(sl - key), key);
    *name = sl + 1;
    return buf;
}

static json_t *pod_json(struct run *r, const char *key)
{
    json_t *p = json_object_get(r->pods, key);

    ck_assert_msg(p != NULL, "%s step %d: no pod %s in the fixture", r->name, r->step, key);
    return p;
}

/* devices: {pod: ns/name} -> expect {node, devices: ["pool/device", ..] in claim and result
 * order, count} */
static void step_devices(struct run *r, const json_t *op, const json_t *exp)
{
    const char *key = json_string_value(json_object_get(op, "pod"));
    json_t *pj = pod_json(r, key);
    const char *uid = json_string_value(json_object_get(json_object_get(pj, "metadata"), "uid"));
    struct gang_dra_claim c[8];
    size_t n = gang_dra_planned(r->s, uid, c, 8);
    json_t *got = json_array();
    const json_t *w;

    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < c[i].n_results; k++) {
            char b[600];
            snprintf(b, sizeof(b), "%s/%s", c[i].results[k].pool, c[i].results[k].device);
            json_array_append_new(got, json_string(b));
        }
    if ((w = json_object_get(exp, "count")))
        ck_assert_msg(json_array_size(got) == (size_t)json_integer_value(w),
                      "%s step %d: %s has %zu planned devices, want %lld", r->name, r->step, key,
                      json_array_size(got), (long long)json_integer_value(w));
    if ((w = json_object_get(exp, "node")))
        ck_assert_msg(n > 0 && strcmp(c[0].node, json_string_value(w)) == 0,
                      "%s step %d: %s devices on %s, want %s", r->name, r->step, key,
                      n ? c[0].node : "(none)", json_string_value(w));
    if ((w = json_object_get(exp, "devices"))) {
        char *g = json_dumps(got, JSON_COMPACT), *x = json_dumps(w, JSON_COMPACT);
        ck_assert_msg(json_equal(got, w), "%s step %d: %s devices %s, want %s", r->name, r->step,
                      key, g, x);
        free(g);
        free(x);
    }
    if ((w = json_object_get(exp, "firstFitDiffers"))) /* the filter-time write's test */
        ck_assert_msg(gang_dra_first_fit_differs(r->s, uid) == json_is_true(w),
                      "%s step %d: %s: kube-scheduler's first fit %s the plan, want %s", r->name,
                      r->step, key, json_is_true(w) ? "is" : "is not",
                      json_is_true(w) ? "not" : "the same");
    if ((w = json_object_get(exp, "prefix"))) /* every device name starts with it */
        for (size_t i = 0; i < json_array_size(got); i++) {
            const char *d = strchr(json_string_value(json_array_get(got, i)), '/') + 1;
            ck_assert_msg(strncmp(d, json_string_value(w), strlen(json_string_value(w))) == 0,
                          "%s step %d: %s got device %s, want only %s*", r->name, r->step, key, d,
                          json_string_value(w));
        }
    json_decref(got);
}

static struct common_pod *pod_decode(struct run *r, const char *key)
{
    struct common_pod *cp = NULL;
    struct common_error e;

    ck_assert_msg(common_pod_from_json(pod_json(r, key), &cp, &e) == COMMON_OK, "%s: pod %s: %s",
                  r->name, key, e.msg);
    return cp;
}

static void feed_pod(struct run *r, json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    char key[600];
    struct common_pod *cp = NULL;
    struct common_error e;

    ck_assert_msg(ns && name, "%s: a pod needs metadata.namespace and name", r->name);
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (!json_object_get(meta, "uid")) {
        char uid[700];
        snprintf(uid, sizeof(uid), "uid-%s-%s", ns, name);
        json_object_set_new(meta, "uid", json_string(uid));
    }
    json_object_set(r->pods, key, obj);
    ck_assert_msg(common_pod_from_json(obj, &cp, &e) == COMMON_OK, "%s: pod %s: %s", r->name, key,
                  e.msg);
    ck_assert_msg(gang_pod_upsert(r->s, cp, &e) == COMMON_OK, "%s: upsert %s: %s", r->name, key,
                  e.msg);
    common_pod_free(cp);
}

static void feed_node(struct run *r, const json_t *obj)
{
    struct common_node *cn = NULL;
    struct common_error e;

    ck_assert_msg(common_node_from_json(obj, &cn, &e) == COMMON_OK, "%s: node: %s", r->name, e.msg);
    ck_assert_msg(gang_node_upsert(r->s, cn, &e) == COMMON_OK, "%s: node upsert: %s", r->name,
                  e.msg);
    {
        size_t i;
        json_t *x;
        int seen = 0;
        json_array_foreach(r->nodes, i, x) seen |= strcmp(json_string_value(x), cn->name) == 0;
        if (!seen)
            json_array_append_new(r->nodes, json_string(cn->name));
    }
    common_node_free(cn);
}

static void feed_pg(struct run *r, const json_t *obj)
{
    struct gang_podgroup pg;
    struct common_error e;

    ck_assert_msg(gang_podgroup_from_json(obj, &pg, &e) == COMMON_OK, "%s: PodGroup: %s", r->name,
                  e.msg);
    ck_assert_msg(gang_podgroup_upsert(r->s, &pg, &e) == COMMON_OK, "%s: PodGroup upsert: %s",
                  r->name, e.msg);
}

static int contains(const char *hay, const char *needle)
{
    return hay && needle && strstr(hay, needle) != NULL;
}

/* the candidate list of a step: its `nodes`, or every node of the fixture */
static const char **cand_list(struct run *r, const json_t *op, size_t *n)
{
    const json_t *nodes = json_object_get(op, "nodes");
    const char **v;
    size_t i;
    json_t *x;

    if (!nodes)
        nodes = r->nodes;
    *n = json_array_size(nodes);
    v = calloc(*n ? *n : 1, sizeof(*v));
    ck_assert_ptr_nonnull(v);
    json_array_foreach(nodes, i, x) v[i] = json_string_value(x);
    return v;
}

static const char *verdict_name(enum gang_verdict v)
{
    return v == GANG_NODE_OK ? "ok" : v == GANG_NODE_FAILED ? "failed" : "unresolvable";
}

/* names with verdict v, in candidate order, against want (a list) */
static void check_verdicts(struct run *r, const char *const *nodes, size_t n,
                           const struct gang_node_verdict *out, enum gang_verdict v,
                           const json_t *want)
{
    json_t *got = json_array();
    char *g, *w;

    if (!want) {
        json_decref(got);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (out[i].verdict == v)
            json_array_append_new(got, json_string(nodes[i]));
    if (json_equal(got, want)) {
        json_decref(got);
        return;
    }
    g = json_dumps(got, JSON_COMPACT);
    w = json_dumps(want, JSON_COMPACT);
    ck_abort_msg("%s step %d: %s nodes %s, want %s", r->name, r->step, verdict_name(v), g, w);
}

static void step_filter(struct run *r, const json_t *op, const json_t *exp)
{
    size_t n;
    const char **nodes = cand_list(r, op, &n);
    struct gang_node_verdict *out = calloc(n ? n : 1, sizeof(*out));
    struct gang_filter_result res;
    struct common_error e;
    struct common_pod *cp = pod_decode(r, json_string_value(json_object_get(op, "pod")));
    const json_t *reasons = json_object_get(exp, "reasons");
    const char *k;
    json_t *v;

    ck_assert_msg(gang_filter(r->s, cp, nodes, n, r->now, out, &res, &e) == COMMON_OK,
                  "%s step %d: filter: %s", r->name, r->step, e.msg);
    json_object_del(r->chosen, json_string_value(json_object_get(op, "pod")));
    for (size_t i = 0; i < n; i++)
        if (out[i].verdict == GANG_NODE_OK) {
            json_object_set_new(r->chosen, json_string_value(json_object_get(op, "pod")),
                                json_string(nodes[i]));
            break;
        }
    check_verdicts(r, nodes, n, out, GANG_NODE_OK, json_object_get(exp, "ok"));
    check_verdicts(r, nodes, n, out, GANG_NODE_FAILED, json_object_get(exp, "failed"));
    check_verdicts(r, nodes, n, out, GANG_NODE_UNRESOLVABLE, json_object_get(exp, "unresolvable"));
    if (json_object_get(exp, "okCount"))
        ck_assert_msg(res.n_ok == (size_t)json_integer_value(json_object_get(exp, "okCount")),
                      "%s step %d: %zu nodes ok", r->name, r->step, res.n_ok);
    {
        size_t ok = 0;
        for (size_t i = 0; i < n; i++) {
            ok += out[i].verdict == GANG_NODE_OK;
            ck_assert_msg((out[i].verdict == GANG_NODE_OK) == (out[i].reason == NULL),
                          "%s step %d: node %s: a reason exactly when not ok", r->name, r->step,
                          nodes[i]);
        }
        ck_assert_uint_eq(ok, res.n_ok);
    }
    if (json_object_get(exp, "reason"))
        ck_assert_msg(contains(res.reason, json_string_value(json_object_get(exp, "reason"))),
                      "%s step %d: reason \"%s\" lacks \"%s\"", r->name, r->step, res.reason,
                      json_string_value(json_object_get(exp, "reason")));
    json_object_foreach((json_t *)reasons, k, v)
    {
        size_t i;
        for (i = 0; i < n && strcmp(nodes[i], k) != 0; i++)
            ;
        ck_assert_msg(i < n, "%s step %d: %s is not a candidate", r->name, r->step, k);
        ck_assert_msg(contains(out[i].reason, json_string_value(v)),
                      "%s step %d: reason for %s \"%s\" lacks \"%s\"", r->name, r->step, k,
                      out[i].reason ? out[i].reason : "(none)", json_string_value(v));
    }
    if (json_object_get(exp, "answersPending"))
        ck_assert_int_eq(res.answers_pending, json_is_true(json_object_get(exp, "answersPending")));
    if (json_object_get(exp, "retry"))
        ck_assert_msg(res.retry == json_is_true(json_object_get(exp, "retry")),
                      "%s step %d: retry %d", r->name, r->step, res.retry);
    /* a retry answer (an Error to the scheduler) only when no node is kept */
    ck_assert_msg(!res.retry || (res.n_ok == 0 && res.reason[0]),
                  "%s step %d: retry with %zu nodes ok", r->name, r->step, res.n_ok);
    common_pod_free(cp);
    free(out);
    free(nodes);
}

static const char *action_name(enum gang_bind_action a)
{
    return a == GANG_BIND_HOLD ? "hold" : a == GANG_BIND_RELEASE ? "release" : "reject";
}

/* "ns/name@node" strings of answers, sorted */
static json_t *answer_keys(const struct gang_answer *a, size_t n, int with_bind)
{
    json_t *v = json_array();
    char **tmp = calloc(n ? n : 1, sizeof(*tmp));
    size_t i;

    for (i = 0; i < n; i++) {
        size_t len = strlen(a[i].namespace) + strlen(a[i].name) + strlen(a[i].node) + 16;
        tmp[i] = malloc(len);
        snprintf(tmp[i], len, "%s/%s@%s%s", a[i].namespace, a[i].name, a[i].node,
                 with_bind ? (a[i].bind ? " bind" : " error") : "");
    }
    qsort(tmp, n, sizeof(*tmp), cmp_str);
    for (i = 0; i < n; i++) {
        json_array_append_new(v, json_string(tmp[i]));
        free(tmp[i]);
    }
    free(tmp);
    return v;
}

static void check_list(struct run *r, const char *what, json_t *got, const json_t *want_in)
{
    json_t *want = json_array();
    char **tmp;
    size_t i, n = json_array_size(want_in);
    json_t *x;

    tmp = calloc(n ? n : 1, sizeof(*tmp));
    json_array_foreach(want_in, i, x) tmp[i] = (char *)json_string_value(x);
    qsort(tmp, n, sizeof(*tmp), cmp_str);
    for (i = 0; i < n; i++)
        json_array_append_new(want, json_string(tmp[i]));
    free(tmp);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
        ck_abort_msg("%s step %d: %s %s, want %s", r->name, r->step, what, g, w);
    }
    json_decref(want);
}

static void step_bind(struct run *r, const json_t *op, const json_t *exp)
{
    const char *key = json_string_value(json_object_get(op, "pod"));
    const char *node = json_string_value(json_object_get(op, "node"));
    json_t *pj = pod_json(r, key);
    const char *uid = json_string_value(json_object_get(json_object_get(pj, "metadata"), "uid"));
    const char *name;
    char ns[300];
    struct gang_bind_result res;
    struct common_error e;
    const char *want = json_string_value(json_object_get(exp, "action"));

    ns_of(key, ns, sizeof(ns), &name);
    if (!node) /* the node the pod's last filter kept, as kube-scheduler would pick */
        node = json_string_value(json_object_get(r->chosen, key));
    ck_assert_msg(node != NULL, "%s step %d: bind of %s: no node and no filter kept one", r->name,
                  r->step, key);
    ck_assert_msg(gang_bind(r->s, ns, name, uid, node, r->now, &res, &e) == COMMON_OK,
                  "%s step %d: bind: %s", r->name, r->step, e.msg);
    if (want)
        ck_assert_msg(strcmp(action_name(res.action), want) == 0,
                      "%s step %d: bind %s on %s: %s (%s), want %s", r->name, r->step, key, node,
                      action_name(res.action), res.reason, want);
    if (json_object_get(exp, "reason"))
        ck_assert_msg(contains(res.reason, json_string_value(json_object_get(exp, "reason"))),
                      "%s step %d: reason \"%s\" lacks \"%s\"", r->name, r->step, res.reason,
                      json_string_value(json_object_get(exp, "reason")));
    if (res.action == GANG_BIND_RELEASE) {
        int self = 0;
        for (size_t i = 0; i < res.n_binds; i++) {
            ck_assert_int_eq(res.binds[i].bind, 1);
            self |= strcmp(res.binds[i].uid, uid) == 0 && strcmp(res.binds[i].node, node) == 0;
        }
        ck_assert_msg(self, "%s step %d: a release includes the pod itself", r->name, r->step);
    } else {
        ck_assert_uint_eq(res.n_binds, 0);
    }
    if (json_object_get(exp, "binds")) {
        json_t *got = answer_keys(res.binds, res.n_binds, 0);
        check_list(r, "binds", got, json_object_get(exp, "binds"));
        json_decref(got);
    }
    if (json_object_get(exp, "nBinds"))
        ck_assert_msg(res.n_binds == (size_t)json_integer_value(json_object_get(exp, "nBinds")),
                      "%s step %d: %zu binds", r->name, r->step, res.n_binds);
    if (json_object_get(exp, "deadline"))
        ck_assert_msg(res.deadline == json_integer_value(json_object_get(exp, "deadline")),
                      "%s step %d: deadline %lld", r->name, r->step, (long long)res.deadline);
    if (json_object_get(exp, "answersPending"))
        ck_assert_int_eq(res.answers_pending, json_is_true(json_object_get(exp, "answersPending")));
}

static void step_tick(struct run *r, const json_t *exp)
{
    const struct gang_answer *a;
    size_t n;
    struct common_error e;
    const json_t *reason = json_object_get(exp, "reason");

    ck_assert_msg(gang_tick(r->s, r->now, &a, &n, &e) == COMMON_OK, "%s step %d: tick: %s", r->name,
                  r->step, e.msg);
    if (json_object_get(exp, "answers")) {
        json_t *got = answer_keys(a, n, 1);
        check_list(r, "answers", got, json_object_get(exp, "answers"));
        json_decref(got);
    }
    if (json_object_get(exp, "nAnswers"))
        ck_assert_msg(n == (size_t)json_integer_value(json_object_get(exp, "nAnswers")),
                      "%s step %d: %zu answers", r->name, r->step, n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(a[i].bind || a[i].reason[0], "%s step %d: an error answer has a reason",
                      r->name, r->step);
        if (reason && !a[i].bind)
            ck_assert_msg(contains(a[i].reason, json_string_value(reason)),
                          "%s step %d: answer reason \"%s\" lacks \"%s\"", r->name, r->step,
                          a[i].reason, json_string_value(reason));
    }
}

static void step_prioritize(struct run *r, const json_t *op, const json_t *exp)
{
    size_t n;
    const char **nodes = cand_list(r, op, &n);
    int64_t *scores = calloc(n ? n : 1, sizeof(*scores));
    struct common_pod *cp = pod_decode(r, json_string_value(json_object_get(op, "pod")));
    struct common_error e;
    const json_t *want = json_object_get(exp, "scores");

    ck_assert_msg(gang_prioritize(r->s, cp, nodes, n, scores, &e) == COMMON_OK,
                  "%s step %d: prioritize: %s", r->name, r->step, e.msg);
    for (size_t i = 0; i < n; i++) {
        const json_t *w = json_object_get(want, nodes[i]);
        ck_assert_msg(scores[i] >= 0 && scores[i] <= 10, "%s step %d: score %lld out of 0..10",
                      r->name, r->step, (long long)scores[i]);
        if (w)
            ck_assert_msg(scores[i] == json_integer_value(w),
                          "%s step %d: score of %s %lld, want %lld", r->name, r->step, nodes[i],
                          (long long)scores[i], (long long)json_integer_value(w));
    }
    common_pod_free(cp);
    free(scores);
    free(nodes);
}

static void step_status(struct run *r, const json_t *op, const json_t *exp)
{
    const char *key = json_string_value(json_object_get(op, "podGroup")), *name;
    char ns[300];
    struct gang_status st;
    struct common_error e;
    enum common_rc rc;

    ns_of(key, ns, sizeof(ns), &name);
    rc = gang_podgroup_status(r->s, ns, name, &st, &e);
    if (json_is_false(json_object_get(exp, "exists"))) {
        ck_assert_int_eq(rc, COMMON_ENOTFOUND);
        return;
    }
    ck_assert_msg(rc == COMMON_OK, "%s step %d: status: %s", r->name, r->step, e.msg);
    if (json_object_get(exp, "phase"))
        ck_assert_msg(strcmp(st.phase, json_string_value(json_object_get(exp, "phase"))) == 0,
                      "%s step %d: phase %s", r->name, r->step, st.phase);
#define NUM(field, key)                                                                            \
    if (json_object_get(exp, key))                                                                 \
    ck_assert_msg(st.field == json_integer_value(json_object_get(exp, key)),                       \
                  "%s step %d: %s %lld", r->name, r->step, key, (long long)st.field)
    NUM(running, "running");
    NUM(succeeded, "succeeded");
    NUM(failed, "failed");
    NUM(schedule_start, "scheduleStart");
#undef NUM
    if (json_object_get(exp, "occupiedBy"))
        ck_assert_msg(
            strcmp(st.occupied_by, json_string_value(json_object_get(exp, "occupiedBy"))) == 0,
            "%s step %d: occupiedBy %s", r->name, r->step, st.occupied_by);
}

static void step_info(struct run *r, const json_t *op, const json_t *exp)
{
    const char *key = json_string_value(json_object_get(op, "gang")), *name;
    char ns[300];
    struct gang_info in;
    struct common_error e;
    enum common_rc rc;

    ns_of(key, ns, sizeof(ns), &name);
    rc = gang_info(r->s, ns, name, &in, &e);
    if (json_is_false(json_object_get(exp, "exists"))) {
        ck_assert_msg(rc == COMMON_ENOTFOUND, "%s step %d: gang %s exists", r->name, r->step, key);
        return;
    }
    ck_assert_msg(rc == COMMON_OK, "%s step %d: info: %s", r->name, r->step, e.msg);
#define NUM(field, key)                                                                            \
    if (json_object_get(exp, key))                                                                 \
    ck_assert_msg((long long)in.field == (long long)json_integer_value(json_object_get(exp, key)), \
                  "%s step %d: %s %lld, want %lld (%s)", r->name, r->step, key,                    \
                  (long long)in.field, (long long)json_integer_value(json_object_get(exp, key)),   \
                  in.reason)
#define BOOL(field, key)                                                                           \
    if (json_object_get(exp, key))                                                                 \
    ck_assert_msg((in.field != 0) == json_is_true(json_object_get(exp, key)),                      \
                  "%s step %d: %s %d (%s)", r->name, r->step, key, in.field, in.reason)
    NUM(min_member, "minMember");
    NUM(members, "members");
    NUM(known, "known");
    NUM(bound, "bound");
    NUM(released, "released");
    NUM(held, "held");
    NUM(planned, "planned");
    NUM(phased_done, "phasedDone");
    NUM(deadline, "deadline");
    NUM(backoff_until, "backoffUntil");
    NUM(failures, "failures");
    NUM(podgroup_unblocks, "podgroupUnblocks");
    NUM(timeout_ms, "timeoutMs");
    NUM(gated_ours, "gatedOurs");
    BOOL(active, "active");
    BOOL(admitted, "admitted");
    BOOL(has_podgroup, "hasPodGroup");
#undef NUM
#undef BOOL
    if (json_object_get(exp, "reason"))
        ck_assert_msg(contains(in.reason, json_string_value(json_object_get(exp, "reason"))),
                      "%s step %d: reason \"%s\" lacks \"%s\"", r->name, r->step, in.reason,
                      json_string_value(json_object_get(exp, "reason")));
    if (json_object_get(exp, "timeoutNote")) {
        const char *want = json_string_value(json_object_get(exp, "timeoutNote"));
        ck_assert_msg(want && (*want ? contains(in.timeout_note, want) : !in.timeout_note[0]),
                      "%s step %d: timeoutNote \"%s\", want \"%s\"", r->name, r->step,
                      in.timeout_note, want ? want : "(not a string)");
    }
    if (json_object_get(exp, "topologyNote")) {
        const char *want = json_string_value(json_object_get(exp, "topologyNote"));
        ck_assert_msg(want && (*want ? contains(in.topology_note, want) : !in.topology_note[0]),
                      "%s step %d: topologyNote \"%s\", want \"%s\"", r->name, r->step,
                      in.topology_note, want ? want : "(not a string)");
    }
#define STR(field, key)                                                                            \
    if (json_object_get(exp, key))                                                                 \
    ck_assert_msg(strcmp(in.field, json_string_value(json_object_get(exp, key))) == 0,             \
                  "%s step %d: %s \"%s\", want \"%s\" (%s)", r->name, r->step, key, in.field,      \
                  json_string_value(json_object_get(exp, key)), in.reason)
    STR(domain, "domain");
    STR(domain_level, "domainLevel");
#undef STR
    if (json_object_get(exp, "topologyError"))
        ck_assert_msg(
            contains(in.topology_error, json_string_value(json_object_get(exp, "topologyError"))),
            "%s step %d: topologyError \"%s\" lacks \"%s\"", r->name, r->step, in.topology_error,
            json_string_value(json_object_get(exp, "topologyError")));
}

/*
 * topology: {name, levels: [..]}: gang_topology_set; expect `error` (a substring of the
 * message; absent: must succeed).
 */
static void step_topology(struct run *r, const json_t *op, const json_t *exp)
{
    const json_t *lv = json_object_get(op, "levels");
    const char *levels[20];
    size_t i, n = json_array_size(lv) < 20 ? json_array_size(lv) : 20;
    struct common_error e;
    enum common_rc rc;
    json_t *x;

    common_error_clear(&e);
    json_array_foreach(lv, i, x) if (i < n) levels[i] = json_string_value(x);
    rc = gang_topology_set(r->s, json_string_value(json_object_get(op, "name")), levels, n, &e);
    if (json_object_get(exp, "error")) {
        ck_assert_msg(rc == COMMON_EINVAL, "%s step %d: topology accepted, want an error", r->name,
                      r->step);
        ck_assert_msg(contains(e.msg, json_string_value(json_object_get(exp, "error"))),
                      "%s step %d: error \"%s\" lacks \"%s\"", r->name, r->step, e.msg,
                      json_string_value(json_object_get(exp, "error")));
    } else {
        ck_assert_msg(rc == COMMON_OK, "%s step %d: topology: %s", r->name, r->step, e.msg);
    }
}

/* gang_waiting_pods: the pods as a sorted list of "ns/name" */
static void step_waiting(struct run *r, const json_t *op, const json_t *exp)
{
    const char *key = json_string_value(json_object_get(op, "gang")), *name;
    char ns[300], **keys;
    struct gang_pod_ref *refs;
    size_t n, m;
    json_t *got = json_array();

    ns_of(key, ns, sizeof(ns), &name);
    n = gang_waiting_pods(r->s, ns, name, NULL, 0);
    refs = calloc(n ? n : 1, sizeof(*refs));
    keys = calloc(n ? n : 1, sizeof(*keys));
    ck_assert_ptr_nonnull(refs);
    ck_assert_ptr_nonnull(keys);
    m = gang_waiting_pods(r->s, ns, name, refs, n);
    ck_assert_uint_eq(m, n);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(refs[i].namespace) + strlen(refs[i].name) + 2;
        keys[i] = malloc(len);
        ck_assert_ptr_nonnull(keys[i]);
        snprintf(keys[i], len, "%s/%s", refs[i].namespace, refs[i].name);
        ck_assert_msg(refs[i].uid[0], "%s step %d: waiting pod %s without uid", r->name, r->step,
                      keys[i]);
    }
    qsort(keys, n, sizeof(*keys), cmp_str);
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(got, json_string(keys[i]));
        free(keys[i]);
    }
    check_list(r, "waiting pods", got, json_object_get(exp, "pods"));
    json_decref(got);
    free(keys);
    free(refs);
}

/* set spec.nodeName and/or status.phase of a fixture pod and feed it */
static void step_pod_change(struct run *r, const json_t *op)
{
    const char *key = json_string_value(json_object_get(op, "pod"));
    json_t *pj = json_deep_copy(pod_json(r, key));
    const char *node = json_string_value(json_object_get(op, "node"));
    const char *phase = json_string_value(json_object_get(op, "phase"));

    if (node) {
        if (!json_object_get(pj, "spec"))
            json_object_set_new(pj, "spec", json_object());
        json_object_set_new(json_object_get(pj, "spec"), "nodeName", json_string(node));
    }
    if (phase) {
        if (!json_object_get(pj, "status"))
            json_object_set_new(pj, "status", json_object());
        json_object_set_new(json_object_get(pj, "status"), "phase", json_string(phase));
    }
    if (json_is_true(json_object_get(op, "deleting")))
        json_object_set_new(json_object_get(pj, "metadata"), "deletionTimestamp",
                            json_string("2025-01-01T00:00:00Z"));
    if (json_object_get(op, "gates")) { /* spec.schedulingGates, by name ([]: none) */
        json_t *gl = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(op, "gates"), i, x)
            json_array_append_new(gl, json_pack("{s:O}", "name", x));
        if (!json_object_get(pj, "spec"))
            json_object_set_new(pj, "spec", json_object());
        json_object_set_new(json_object_get(pj, "spec"), "schedulingGates", gl);
    }
    if (json_object_get(op, "labels")) {
        json_t *meta = json_object_get(pj, "metadata");
        if (!json_object_get(meta, "labels"))
            json_object_set_new(meta, "labels", json_object());
        json_object_update(json_object_get(meta, "labels"), json_object_get(op, "labels"));
    }
    feed_pod(r, pj);
    json_decref(pj);
}

/* restart: new books (the same configuration and topologies) fed the fixture's nodes and
 * podGroups and every pod as it is now, as the extender rebuilds them from its informers */
static void step_restart(struct run *r)
{
    struct common_error e;
    json_t *list, *x, *pods = json_deep_copy(r->pods);
    const char *k;
    size_t i;

    gang_state_destroy(r->s);
    ck_assert_msg(gang_state_create(&r->cfg, &r->s, &e) == COMMON_OK, "%s: %s", r->name, e.msg);
    list = json_object_get(json_object_get(r->doc, "config"), "topologies");
    json_array_foreach(list, i, x) step_topology(r, x, NULL);
    json_array_clear(r->nodes);
    list = expand(json_object_get(r->doc, "nodes"));
    json_array_foreach(list, i, x) feed_node(r, x);
    json_decref(list);
    list = expand(json_object_get(r->doc, "podGroups"));
    json_array_foreach(list, i, x) feed_pg(r, x);
    json_decref(list);
    json_object_foreach(pods, k, x)
    {
        json_t *c = json_deep_copy(x);
        feed_pod(r, c);
        json_decref(c);
    }
    json_decref(pods);
    dra_refresh(r);
}

/*
 * ungate: {cap: N}: gang_ungate (cap defaults to 4096); expect `pods` (exact list, any order,
 * "ns/name"), `placed`/`preempt`/`alone` (sub-lists by why), `gangs`, `waiting`, `more`,
 * `gateIndex: {pod: index}`, `pending` (gang_ungate_pending before the call)
 */
static void step_ungate(struct run *r, const json_t *op, const json_t *exp)
{
    size_t cap =
        json_object_get(op, "cap") ? (size_t)json_integer_value(json_object_get(op, "cap")) : 4096;
    struct gang_ungate *out = calloc(cap ? cap : 1, sizeof(*out));
    struct gang_ungate_result res;
    struct common_error e;
    json_t *all = json_array(), *by[4];
    static const char *const why_key[4] = {NULL, "placed", "preempt", "alone"};
    char **keys = calloc(cap ? cap : 1, sizeof(*keys));
    int pending = gang_ungate_pending(r->s, r->now);

    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(keys);
    if (json_object_get(exp, "pending"))
        ck_assert_msg((pending != 0) == json_is_true(json_object_get(exp, "pending")),
                      "%s step %d: pending %d", r->name, r->step, pending);
    ck_assert_msg(gang_ungate(r->s, r->now, out, cap, &res, &e) == COMMON_OK, "%s step %d: %s",
                  r->name, r->step, e.msg);
    for (int k = 1; k < 4; k++)
        by[k] = json_array();
    for (size_t i = 0; i < res.n; i++) {
        size_t len = strlen(out[i].pod.namespace) + strlen(out[i].pod.name) + 2;
        keys[i] = malloc(len);
        ck_assert_ptr_nonnull(keys[i]);
        snprintf(keys[i], len, "%s/%s", out[i].pod.namespace, out[i].pod.name);
        ck_assert_msg(out[i].pod.uid[0] && out[i].gang[0], "%s step %d: entry %zu incomplete",
                      r->name, r->step, i);
        ck_assert_msg(out[i].why >= GANG_UNGATE_PLACED && out[i].why <= GANG_UNGATE_ALONE,
                      "%s step %d: why %d", r->name, r->step, (int)out[i].why);
        if (json_object_get(json_object_get(exp, "gateIndex"), keys[i]))
            ck_assert_msg(out[i].gate_index == (uint32_t)json_integer_value(json_object_get(
                                                   json_object_get(exp, "gateIndex"), keys[i])),
                          "%s step %d: gate index of %s %u", r->name, r->step, keys[i],
                          out[i].gate_index);
    }
    {
        struct gang_ungate *sorted = out;
        for (size_t i = 0; i < res.n; i++)
            for (size_t j = i + 1; j < res.n; j++)
                if (strcmp(keys[j], keys[i]) < 0) {
                    char *t = keys[i];
                    struct gang_ungate u = sorted[i];
                    keys[i] = keys[j];
                    keys[j] = t;
                    sorted[i] = sorted[j];
                    sorted[j] = u;
                }
    }
    for (size_t i = 0; i < res.n; i++) {
        json_array_append_new(all, json_string(keys[i]));
        json_array_append_new(by[out[i].why], json_string(keys[i]));
        free(keys[i]);
    }
    if (json_object_get(exp, "pods"))
        check_list(r, "ungated pods", all, json_object_get(exp, "pods"));
    for (int k = 1; k < 4; k++) {
        if (json_object_get(exp, why_key[k]))
            check_list(r, why_key[k], by[k], json_object_get(exp, why_key[k]));
        json_decref(by[k]);
    }
#define RES(field, key)                                                                            \
    if (json_object_get(exp, key))                                                                 \
    ck_assert_msg((long long)res.field ==                                                          \
                      (long long)json_integer_value(json_object_get(exp, key)),                    \
                  "%s step %d: %s %lld", r->name, r->step, key, (long long)res.field)
    RES(gangs, "gangs");
    RES(waiting, "waiting");
#undef RES
    if (json_object_get(exp, "more"))
        ck_assert_msg((res.more != 0) == json_is_true(json_object_get(exp, "more")),
                      "%s step %d: more %d", r->name, r->step, res.more);
    json_decref(all);
    free(keys);
    free(out);
}

/* the uid of a victim reference: a fixture pod key, or "uid:<x>" taken as is */
static const char *victim_uid(struct run *r, const char *ref)
{
    if (strncmp(ref, "uid:", 4) == 0)
        return ref + 4;
    return json_string_value(json_object_get(json_object_get(pod_json(r, ref), "metadata"), "uid"));
}

/* names kept (keep != 0) or vetoed, in candidate order, against want (a list) */
static void check_kept(struct run *r, const struct gang_preempt_node *nodes, size_t n,
                       const struct gang_preempt_choice *out, int keep, const json_t *want)
{
    json_t *got = json_array();

    if (want) {
        for (size_t i = 0; i < n; i++)
            if ((out[i].keep != 0) == keep)
                json_array_append_new(got, json_string(nodes[i].node));
        if (!json_equal(got, want)) {
            char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
            ck_abort_msg("%s step %d: %s %s, want %s", r->name, r->step, keep ? "kept" : "vetoed",
                         g, w);
        }
    }
    json_decref(got);
}

/*
 * preempt: {pod, nodes: {node: [victim, ..]}, noUid, allocFailures}: gang_preempt over the
 * candidates in map order. pod is a fixture pod key, or a Pod object the books have not seen
 * (decoded, not fed); victims are fixture pod keys or "uid:<x>". noUid decodes the preemptor
 * without metadata.uid; allocFailures first fails each allocation of the call in turn (a clean
 * COMMON_ENOMEM, the books adding up) before the call that is checked.
 */
static void step_preempt(struct run *r, const json_t *op, const json_t *exp)
{
    const json_t *map = json_object_get(op, "nodes");
    size_t n = json_object_size(map), i = 0;
    struct gang_preempt_node *nodes = calloc(n ? n : 1, sizeof(*nodes));
    struct gang_preempt_choice *out = calloc(n ? n : 1, sizeof(*out));
    const char ***uids = calloc(n ? n : 1, sizeof(*uids));
    const json_t *reasons = json_object_get(exp, "reasons");
    struct gang_preempt_result res;
    struct common_pod *cp = NULL;
    struct common_error e;
    enum common_rc rc;
    const char *k;
    json_t *v;

    ck_assert_ptr_nonnull(nodes);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(uids);
    json_object_foreach((json_t *)map, k, v)
    {
        size_t j;
        json_t *x;
        uids[i] = calloc(json_array_size(v) + 1, sizeof(**uids));
        ck_assert_ptr_nonnull(uids[i]);
        json_array_foreach(v, j, x) uids[i][j] = victim_uid(r, json_string_value(x));
        nodes[i].node = k;
        nodes[i].n_victims = (uint32_t)json_array_size(v);
        nodes[i].uids = uids[i];
        i++;
    }
    {
        const json_t *pod = json_object_get(op, "pod");
        json_t *pj =
            json_deep_copy(json_is_object(pod) ? pod : pod_json(r, json_string_value(pod)));
        json_t *meta = json_object_get(pj, "metadata");
        if (json_is_true(json_object_get(op, "noUid"))) {
            json_object_del(meta, "uid");
        } else if (!json_object_get(meta, "uid")) {
            char uid[700];
            snprintf(uid, sizeof(uid), "uid-%s-%s",
                     json_string_value(json_object_get(meta, "namespace")),
                     json_string_value(json_object_get(meta, "name")));
            json_object_set_new(meta, "uid", json_string(uid));
        }
        ck_assert_msg(common_pod_from_json(pj, &cp, &e) == COMMON_OK, "%s step %d: %s", r->name,
                      r->step, e.msg);
        json_decref(pj);
    }
    for (unsigned long f = 1; json_is_true(json_object_get(op, "allocFailures")); f++) {
        common_alloc_fail_at(f);
        rc = gang_preempt(r->s, cp, nodes, n, r->now, out, &res, &e);
        common_alloc_fail_at(0);
        if (rc == COMMON_OK && !common_alloc_failed())
            break;
        ck_assert_msg(rc == COMMON_OK || rc == COMMON_ENOMEM, "%s step %d: fail at %lu: %s",
                      r->name, r->step, f, common_rc_name(rc));
        ck_assert_msg(gang_check(r->s, &e) == COMMON_OK, "%s step %d: fail at %lu: books: %s",
                      r->name, r->step, f, e.msg);
        ck_assert_msg(f < 1000, "%s step %d: preempt never ran without a failure", r->name,
                      r->step);
    }
    rc = gang_preempt(r->s, cp, nodes, n, r->now, out, &res, &e);
    if (json_object_get(exp, "error")) {
        ck_assert_msg(
            strcmp(common_rc_name(rc), json_string_value(json_object_get(exp, "error"))) == 0,
            "%s step %d: preempt: %s, want %s", r->name, r->step, common_rc_name(rc),
            json_string_value(json_object_get(exp, "error")));
        goto out;
    }
    ck_assert_msg(rc == COMMON_OK, "%s step %d: preempt: %s", r->name, r->step, e.msg);
    check_kept(r, nodes, n, out, 1, json_object_get(exp, "kept"));
    check_kept(r, nodes, n, out, 0, json_object_get(exp, "vetoed"));
    {
        size_t kept = 0;
        for (i = 0; i < n; i++) {
            kept += out[i].keep != 0;
            ck_assert_msg((out[i].keep != 0) == (out[i].reason == NULL),
                          "%s step %d: node %s: a reason exactly when vetoed", r->name, r->step,
                          nodes[i].node);
        }
        ck_assert_uint_eq(kept, res.n_kept);
        ck_assert_msg(res.reason && (kept == 0) == (res.reason[0] != '\0'),
                      "%s step %d: a result reason exactly when every node is vetoed", r->name,
                      r->step);
    }
    if (json_object_get(exp, "reason"))
        ck_assert_msg(contains(res.reason, json_string_value(json_object_get(exp, "reason"))),
                      "%s step %d: reason \"%s\" lacks \"%s\"", r->name, r->step, res.reason,
                      json_string_value(json_object_get(exp, "reason")));
    json_object_foreach((json_t *)reasons, k, v)
    {
        for (i = 0; i < n && strcmp(nodes[i].node, k) != 0; i++)
            ;
        ck_assert_msg(i < n, "%s step %d: %s is not a candidate", r->name, r->step, k);
        ck_assert_msg(contains(out[i].reason, json_string_value(v)),
                      "%s step %d: reason for %s \"%s\" lacks \"%s\"", r->name, r->step, k,
                      out[i].reason ? out[i].reason : "(kept)", json_string_value(v));
    }
out:
    for (i = 0; i < n; i++)
        free(uids[i]);
    free(uids);
    free(nodes);
    free(out);
    common_pod_free(cp);
}

static void run_step(struct run *r, const json_t *st)
{
    const json_t *exp = json_object_get(st, "expect");
    const json_t *op;
    struct common_error e;

    if (json_object_get(st, "at"))
        r->now = json_integer_value(json_object_get(st, "at"));
    if (json_object_get(st, "advance"))
        r->now += json_integer_value(json_object_get(st, "advance"));
    if ((op = json_object_get(st, "filter"))) {
        step_filter(r, op, exp);
    } else if ((op = json_object_get(st, "bind"))) {
        step_bind(r, op, exp);
    } else if ((op = json_object_get(st, "tick"))) {
        step_tick(r, exp);
    } else if ((op = json_object_get(st, "prioritize"))) {
        step_prioritize(r, op, exp);
    } else if ((op = json_object_get(st, "preempt"))) {
        step_preempt(r, op, exp);
    } else if ((op = json_object_get(st, "status"))) {
        step_status(r, op, exp);
    } else if ((op = json_object_get(st, "info"))) {
        step_info(r, op, exp);
    } else if ((op = json_object_get(st, "waiting"))) {
        step_waiting(r, op, exp);
    } else if ((op = json_object_get(st, "restart"))) {
        step_restart(r);
    } else if ((op = json_object_get(st, "ungate"))) {
        step_ungate(r, op, exp);
    } else if ((op = json_object_get(st, "ungateFailed"))) {
        json_t *pj = pod_json(r, json_string_value(op));
        gang_ungate_failed(
            r->s, json_string_value(json_object_get(json_object_get(pj, "metadata"), "uid")));
    } else if ((op = json_object_get(st, "addPod"))) {
        json_t *c = json_deep_copy(op);
        feed_pod(r, c);
        json_decref(c);
        dra_refresh(r);
    } else if ((op = json_object_get(st, "podChange"))) {
        step_pod_change(r, op);
        dra_refresh(r);
    } else if ((op = json_object_get(st, "devices"))) {
        step_devices(r, op, exp);
    } else if ((op = json_object_get(st, "claim"))) {
        dra_put(r->claims, op);
        dra_refresh(r);
    } else if ((op = json_object_get(st, "deleteClaim"))) {
        json_object_del(r->claims, json_string_value(op));
        dra_refresh(r);
    } else if ((op = json_object_get(st, "slice"))) {
        dra_put(r->slices, op);
        dra_refresh(r);
    } else if ((op = json_object_get(st, "deletePod"))) {
        json_t *pj = pod_json(r, json_string_value(op));
        gang_pod_delete(r->s,
                        json_string_value(json_object_get(json_object_get(pj, "metadata"), "uid")));
        json_object_del(r->pods, json_string_value(op));
    } else if ((op = json_object_get(st, "addNode"))) {
        feed_node(r, op);
    } else if ((op = json_object_get(st, "deleteNode"))) {
        gang_node_delete(r->s, json_string_value(op));
    } else if ((op = json_object_get(st, "podGroup"))) {
        feed_pg(r, op);
    } else if ((op = json_object_get(st, "deletePodGroup"))) {
        const char *name;
        char ns[300];
        ns_of(json_string_value(op), ns, sizeof(ns), &name);
        gang_podgroup_delete(r->s, ns, name);
    } else if ((op = json_object_get(st, "topology"))) {
        step_topology(r, op, exp);
    } else if ((op = json_object_get(st, "deleteTopology"))) {
        gang_topology_delete(r->s, json_string_value(op));
    } else if ((op = json_object_get(st, "bindFailed"))) {
        json_t *pj = pod_json(r, json_string_value(op));
        gang_bind_failed(
            r->s, json_string_value(json_object_get(json_object_get(pj, "metadata"), "uid")));
    } else if ((op = json_object_get(st, "nextDeadline"))) {
        int64_t d = gang_next_deadline(r->s);
        const json_t *w = json_object_get(exp, "value");
        if (json_is_string(w))
            ck_assert_msg(d == INT64_MAX, "%s step %d: next deadline %lld, want none", r->name,
                          r->step, (long long)d);
        else
            ck_assert_msg(d == json_integer_value(w), "%s step %d: next deadline %lld", r->name,
                          r->step, (long long)d);
    } else {
        char *d = json_dumps(st, JSON_COMPACT);
        ck_abort_msg("%s step %d: unknown step %s", r->name, r->step, d);
    }
    ck_assert_msg(gang_check(r->s, &e) == COMMON_OK, "%s step %d: books: %s", r->name, r->step,
                  e.msg);
}

static void config_of(const json_t *c, struct gang_config *cfg, const char **ign, size_t max)
{
    const json_t *ir = json_object_get(c, "ignoredResources");
    size_t i;
    json_t *x;

    gang_config_default(cfg);
    cfg->default_timeout_ms = json_integer_value(json_object_get(c, "defaultTimeoutMs"));
    cfg->bind_http_timeout_ms = json_integer_value(json_object_get(c, "bindHttpTimeoutMs"));
    cfg->hold_margin_ms = json_integer_value(json_object_get(c, "holdMarginMs"));
    cfg->backoff_initial_ms = json_integer_value(json_object_get(c, "backoffInitialMs"));
    cfg->backoff_max_ms = json_integer_value(json_object_get(c, "backoffMaxMs"));
    cfg->ungate_max_plans = (uint32_t)json_integer_value(json_object_get(c, "ungateMaxPlans"));
    json_array_foreach(ir, i, x) if (i < max) ign[i] = json_string_value(x);
    cfg->ignored_resources = ign;
    cfg->n_ignored_resources = json_array_size(ir) < max ? json_array_size(ir) : max;
}

START_TEST(fixture_case)
{
    struct run r;
    char path[4096];
    struct common_yaml_docs d;
    struct common_error e;
    json_t *doc, *list, *steps;
    struct gang_config cfg;
    const char *ign[8];
    size_t i;
    json_t *x;

    memset(&r, 0, sizeof(r));
    r.name = cases[_i];
    snprintf(path, sizeof(path), "%s/%s/case.yaml", TS_FIXTURES, r.name);
    memset(&d, 0, sizeof(d));
    ck_assert_msg(common_yaml_load_file(path, NULL, &d, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(d.n == 1, "%s: one document", path);
    doc = d.docs[0];
    ck_assert_msg(json_string_length(json_object_get(doc, "rule")) > 0,
                  "%s: no rule: says what the case checks", r.name);
    config_of(json_object_get(doc, "config"), &cfg, ign, 8);
    r.doc = doc;
    r.cfg = cfg;
    ck_assert_msg(gang_state_create(&cfg, &r.s, &e) == COMMON_OK, "%s: %s", r.name, e.msg);
    list = json_object_get(json_object_get(doc, "config"), "topologies");
    json_array_foreach(list, i, x) step_topology(&r, x, NULL);
    r.pods = json_object();
    r.nodes = json_array();
    r.chosen = json_object();
    list = expand(json_object_get(doc, "nodes"));
    json_array_foreach(list, i, x) feed_node(&r, x);
    json_decref(list);
    list = expand(json_object_get(doc, "podGroups"));
    json_array_foreach(list, i, x) feed_pg(&r, x);
    json_decref(list);
    list = expand(json_object_get(doc, "pods"));
    json_array_foreach(list, i, x)
    {
        json_t *c = json_deep_copy(x);
        feed_pod(&r, c);
        json_decref(c);
    }
    json_decref(list);
    r.slices = json_object();
    r.classes = json_object();
    r.claims = json_object();
    {
        static const char *const keys[] = {"resourceSlices", "deviceClasses", "resourceClaims"};
        json_t *maps[] = {r.slices, r.classes, r.claims};
        for (int k = 0; k < 3; k++) {
            r.has_dra |= json_object_get(doc, keys[k]) != NULL;
            list = expand(json_object_get(doc, keys[k]));
            json_array_foreach(list, i, x) dra_put(maps[k], x);
            json_decref(list);
        }
    }
    dra_refresh(&r);
    ck_assert_msg(gang_check(r.s, &e) == COMMON_OK, "%s: books after the feed: %s", r.name, e.msg);
    steps = expand(json_object_get(doc, "steps"));
    ck_assert_msg(json_array_size(steps) > 0, "%s: no steps", r.name);
    json_array_foreach(steps, i, x)
    {
        r.step = (int)i;
        run_step(&r, x);
    }
    json_decref(steps);
    gang_state_destroy(r.s);
    common_arena_destroy(r.dra_a);
    json_decref(r.slices);
    json_decref(r.classes);
    json_decref(r.claims);
    json_decref(r.pods);
    json_decref(r.nodes);
    json_decref(r.chosen);
    common_yaml_docs_free(&d);
}
END_TEST

/* ---- helpers for the direct tests ---- */

static void add_node(struct gang_state *s, const char *name, int gpus, int cpu)
{
    json_t *n = json_pack("{s:{s:s}, s:{s:{s:s, s:s, s:s, s:s}}}", "metadata", "name", name,
                          "status", "allocatable", "cpu", "64", "memory", "512Gi", "pods", "110",
                          "nvidia.com/gpu", "0");
    char g[16], c[16];
    struct common_node *cn = NULL;
    struct common_error e;

    snprintf(g, sizeof(g), "%d", gpus);
    snprintf(c, sizeof(c), "%d", cpu);
    json_object_set_new(json_object_get(json_object_get(n, "status"), "allocatable"),
                        "nvidia.com/gpu", json_string(g));
    json_object_set_new(json_object_get(json_object_get(n, "status"), "allocatable"), "cpu",
                        json_string(c));
    ck_assert_msg(common_node_from_json(n, &cn, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(gang_node_upsert(s, cn, &e) == COMMON_OK, "%s", e.msg);
    common_node_free(cn);
    json_decref(n);
}

static struct common_pod *make_pod(const char *ns, const char *name, const char *group, int gpus)
{
    char uid[300], g[16];
    json_t *p;
    struct common_pod *cp = NULL;
    struct common_error e;

    snprintf(uid, sizeof(uid), "uid-%s-%s", ns, name);
    snprintf(g, sizeof(g), "%d", gpus);
    p = json_pack("{s:{s:s, s:s, s:s, s:{s:s}}, s:{s:[{s:s, s:{s:{s:s, s:s}}}]}, s:{s:s}}",
                  "metadata", "name", name, "namespace", ns, "uid", uid, "labels",
                  GANG_POD_GROUP_LABEL, group, "spec", "containers", "name", "c", "resources",
                  "requests", "cpu", "1", "nvidia.com/gpu", g, "status", "phase", "Pending");
    ck_assert_msg(common_pod_from_json(p, &cp, &e) == COMMON_OK, "%s", e.msg);
    json_decref(p);
    return cp;
}

static void add_pg(struct gang_state *s, const char *ns, const char *name, int min, int timeout)
{
    struct gang_podgroup pg;
    struct common_error e;

    memset(&pg, 0, sizeof(pg));
    pg.namespace = ns;
    pg.name = name;
    pg.min_member = min;
    pg.has_timeout = timeout > 0;
    pg.timeout_seconds = timeout;
    pg.phased_jobs = "";
    pg.min_resources.extended = pg.min_extended;
    ck_assert_msg(gang_podgroup_upsert(s, &pg, &e) == COMMON_OK, "%s", e.msg);
}

/* ---- two gangs interleaved at random against a model of kube-scheduler ---- */

struct model_pod {
    struct common_pod *cp;
    int gang;      /* 0 = a, 1 = b */
    int state;     /* 0 pending, 1 bind in flight (node chosen), 2 held, 3 released */
    int64_t retry; /* backoff of the scheduler's queue */
    char node[16];
};

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rng >> 33) % n);
}

START_TEST(interleaved_gangs_never_deadlock)
{
    const char *nodes[2] = {"n1", "n2"};
    struct gang_node_verdict out[2];
    struct model_pod pods[24];
    struct gang_state *s = NULL;
    struct gang_config cfg;
    struct common_error e;
    int64_t now = 0;
    int released[2] = {0, 0};

    rng = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);
    gang_config_default(&cfg);
    cfg.bind_http_timeout_ms = 600000;
    ck_assert_int_eq(gang_state_create(&cfg, &s, &e), COMMON_OK);
    add_node(s, "n1", 8, 64);
    add_node(s, "n2", 8, 64);
    add_pg(s, "ml", "a", 12, 30);
    add_pg(s, "ml", "b", 12, 30);
    for (int i = 0; i < 24; i++) {
        char name[16];
        snprintf(name, sizeof(name), "%c-%d", i % 2 ? 'b' : 'a', i / 2);
        memset(&pods[i], 0, sizeof(pods[i]));
        pods[i].gang = i % 2;
        pods[i].cp = make_pod("ml", name, i % 2 ? "b" : "a", 1);
        ck_assert_int_eq(gang_pod_upsert(s, pods[i].cp, &e), COMMON_OK);
    }
    for (int round = 0; round < 20000 && released[0] + released[1] < 12; round++) {
        struct model_pod *mp = &pods[rnd(24)];
        struct gang_info ia, ib;
        int op = (int)rnd(20);
        if (op == 0) { /* time passes, the timer fires */
            const struct gang_answer *a;
            size_t n;
            now += rnd(2000);
            ck_assert_int_eq(gang_tick(s, now, &a, &n, &e), COMMON_OK);
            for (size_t k = 0; k < n; k++)
                for (int j = 0; j < 24; j++)
                    if (strcmp(pods[j].cp->uid, a[k].uid) == 0) {
                        ck_assert_int_eq(pods[j].state, 2);
                        pods[j].state = a[k].bind ? 3 : 0;
                        released[pods[j].gang] += a[k].bind;
                        pods[j].retry = now + 1000;
                    }
        } else if (mp->state == 0 && now >= mp->retry) { /* a scheduling cycle */
            struct gang_filter_result res;
            ck_assert_int_eq(gang_filter(s, mp->cp, nodes, 2, now, out, &res, &e), COMMON_OK);
            if (res.n_ok) {
                int k = out[0].verdict == GANG_NODE_OK ? 0 : 1;
                snprintf(mp->node, sizeof(mp->node), "%s", nodes[k]);
                mp->state = 1;
            } else {
                mp->retry = now + 1000 + rnd(9000);
            }
        } else if (mp->state == 1) { /* its bind arrives */
            struct gang_bind_result br;
            ck_assert_int_eq(gang_bind(s, "ml", mp->cp->name, mp->cp->uid, mp->node, now, &br, &e),
                             COMMON_OK);
            if (br.action == GANG_BIND_HOLD) {
                mp->state = 2;
            } else if (br.action == GANG_BIND_REJECT) {
                mp->state = 0;
                mp->retry = now + 1000;
            } else {
                for (size_t k = 0; k < br.n_binds; k++)
                    for (int j = 0; j < 24; j++)
                        if (strcmp(pods[j].cp->uid, br.binds[k].uid) == 0) {
                            ck_assert(pods[j].state == 2 || &pods[j] == mp);
                            pods[j].state = 3;
                            released[pods[j].gang]++;
                        }
            }
        }
        ck_assert_msg(gang_check(s, &e) == COMMON_OK, "%s", e.msg);
        ck_assert_int_eq(gang_info(s, "ml", "a", &ia, &e), COMMON_OK);
        ck_assert_int_eq(gang_info(s, "ml", "b", &ib, &e), COMMON_OK);
        /* never both holding: that is the 8 + 8 deadlock */
        ck_assert_msg(!(ia.active && ib.active), "round %d: both gangs hold (%u + %u)", round,
                      ia.held, ib.held);
        ck_assert_uint_le(ia.held + ib.held, 16);
    }
    ck_assert_msg(
        (released[0] == 12 && released[1] == 0) || (released[0] == 0 && released[1] == 12),
        "released a %d, b %d: one gang whole, the other nothing", released[0], released[1]);
    for (int i = 0; i < 24; i++)
        common_pod_free(pods[i].cp);
    gang_state_destroy(s);
}
END_TEST

/* ---- prioritize's memos change no score ---- */

/* a running pod without a PodGroup on node (NULL: deleted), cpu cores and gpus */
static void put_plain_pod(struct gang_state *s, int i, const char *node, int cpu, int gpus)
{
    char name[32], uid[48], c[16], g[16];
    struct common_pod *cp = NULL;
    struct common_error e;
    json_t *p;

    snprintf(name, sizeof(name), "plain-%d", i);
    snprintf(uid, sizeof(uid), "uid-ml-plain-%d", i);
    if (!node) {
        gang_pod_delete(s, uid);
        return;
    }
    snprintf(c, sizeof(c), "%d", cpu);
    snprintf(g, sizeof(g), "%d", gpus);
    p = json_pack("{s:{s:s, s:s, s:s}, s:{s:s, s:[{s:s, s:{s:{s:s, s:s, s:s}}}]}, s:{s:s}}",
                  "metadata", "name", name, "namespace", "ml", "uid", uid, "spec", "nodeName", node,
                  "containers", "name", "c", "resources", "requests", "cpu", c, "memory", "8Gi",
                  "nvidia.com/gpu", g, "status", "phase", "Running");
    ck_assert_msg(common_pod_from_json(p, &cp, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(gang_pod_upsert(s, cp, &e) == COMMON_OK, "%s", e.msg);
    common_pod_free(cp);
    json_decref(p);
}

/* Nodes come, change and go, plain pods are bound and deleted, gangs plan and hold, and node
 * lists repeat, shuffle, shrink and name unknown nodes: after each change gang_prioritize (with
 * its memos of the last list and of least-allocated scores) answers exactly what
 * gang_prioritize_plain computes from scratch. */
START_TEST(prioritize_memo_matches_plain)
{
    enum { NODES = 24, GANGS = 3, MEMBERS = 4, PLAIN = 40, LIST = 32 };
    static char names[NODES + 4][16];
    const char *list[LIST], *prev[LIST];
    struct common_pod *members[GANGS * MEMBERS];
    int64_t got[LIST], want[LIST];
    struct gang_node_verdict out[LIST];
    struct gang_state *s = NULL;
    struct common_error e;
    size_t n = 0, n_prev = 0;
    int64_t now = 0;

    rng = 0x243f6a8885a308d3ull * (uint64_t)(_i + 1);
    ck_assert_int_eq(gang_state_create(NULL, &s, &e), COMMON_OK);
    for (int i = 0; i < NODES + 4; i++) /* the last 4 never join the books */
        snprintf(names[i], sizeof(names[i]), "node-%02d", i);
    for (int i = 0; i < NODES; i++)
        add_node(s, names[i], 8, 64);
    for (int g = 0; g < GANGS; g++) {
        char gname[8];
        snprintf(gname, sizeof(gname), "g%d", g);
        add_pg(s, "ml", gname, MEMBERS, 600);
        for (int m = 0; m < MEMBERS; m++) {
            char pname[16];
            snprintf(pname, sizeof(pname), "g%d-%d", g, m);
            members[g * MEMBERS + m] = make_pod("ml", pname, gname, 1 + g % 2);
            ck_assert_int_eq(gang_pod_upsert(s, members[g * MEMBERS + m], &e), COMMON_OK);
        }
    }
    for (n = 0; n < NODES; n++)
        list[n] = names[n];
    for (int round = 0; round < 3000; round++) {
        int op = (int)rnd(12);
        struct common_pod *mp = members[rnd(GANGS * MEMBERS)];
        if (op == 0) { /* a node changes size */
            add_node(s, names[rnd(NODES)], (int)rnd(9), 16 + (int)rnd(64));
        } else if (op == 1 && rnd(3) == 0) { /* a node goes */
            gang_node_delete(s, names[rnd(NODES)]);
        } else if (op <= 4) { /* a plain pod is bound or deleted */
            int i = (int)rnd(PLAIN);
            put_plain_pod(s, i, rnd(4) ? names[rnd(NODES)] : NULL, 1 + (int)rnd(8), (int)rnd(3));
        } else if (op == 5) { /* a member's filter (plans its gang) */
            struct gang_filter_result res;
            ck_assert_int_eq(gang_filter(s, mp, (const char *const *)list, n, now, out, &res, &e),
                             COMMON_OK);
        } else if (op == 6) { /* a member's bind on some node (held, rejected or released) */
            struct gang_bind_result br;
            ck_assert_int_eq(gang_bind(s, "ml", mp->name, mp->uid, names[rnd(NODES)], now, &br, &e),
                             COMMON_OK);
        } else if (op == 7) { /* time passes */
            const struct gang_answer *a;
            size_t na;
            now += rnd(200000);
            ck_assert_int_eq(gang_tick(s, now, &a, &na, &e), COMMON_OK);
        } else if (op == 8) { /* a new list: some nodes, in some order, some unknown */
            n = 1 + rnd(LIST);
            for (size_t i = 0; i < n; i++)
                list[i] = names[rnd(NODES + 4)];
        } else if (op == 9 && n_prev) { /* the previous list again */
            n = n_prev;
            memcpy(list, prev, n * sizeof(*list));
        } else if (op == 10 && n > 1) { /* the same list, two names swapped */
            size_t a = rnd((uint32_t)n), b = rnd((uint32_t)n);
            const char *t = list[a];
            list[a] = list[b];
            list[b] = t;
        }
        ck_assert_msg(gang_check(s, &e) == COMMON_OK, "%s", e.msg);
        ck_assert_int_eq(gang_prioritize(s, mp, (const char *const *)list, n, got, &e), COMMON_OK);
        ck_assert_int_eq(gang_prioritize_plain(s, mp, (const char *const *)list, n, want, &e),
                         COMMON_OK);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(got[i] == want[i], "round %d op %d, pod %s, node %s: %lld, plain %lld",
                          round, op, mp->name, list[i], (long long)got[i], (long long)want[i]);
        memcpy(prev, list, n * sizeof(*list));
        n_prev = n;
    }
    for (int i = 0; i < GANGS * MEMBERS; i++)
        common_pod_free(members[i]);
    gang_state_destroy(s);
}
END_TEST

/* ---- scale: the filter with a plan at 5,000 nodes and a 1,000-pod gang ---- */

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;

    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

START_TEST(filter_fast_path_at_scale)
{
    enum { NODES = 5000, PODS = 1000 };
    char **names = calloc(NODES, sizeof(*names));
    struct common_pod **cps = calloc(PODS, sizeof(*cps));
    struct gang_node_verdict *out = calloc(NODES, sizeof(*out));
    struct gang_state *s = NULL;
    struct gang_filter_result res;
    struct gang_bind_result br;
    struct gang_config cfg;
    struct common_error e;
    struct timespec t0;
    double plan_ms, per_call;
    size_t ok = 0;

    gang_config_default(&cfg);
    cfg.bind_http_timeout_ms = 900000;
    ck_assert_int_eq(gang_state_create(&cfg, &s, &e), COMMON_OK);
    for (int i = 0; i < NODES; i++) {
        char n[32];
        snprintf(n, sizeof(n), "node-%05d", i);
        names[i] = strdup(n);
        add_node(s, n, 8, 96);
    }
    add_pg(s, "ml", "big", PODS, 600);
    for (int i = 0; i < PODS; i++) {
        char n[32];
        snprintf(n, sizeof(n), "w-%04d", i);
        cps[i] = make_pod("ml", n, "big", 1);
        ck_assert_int_eq(gang_pod_upsert(s, cps[i], &e), COMMON_OK);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(gang_filter(s, cps[0], (const char *const *)names, NODES, 0, out, &res, &e),
                     COMMON_OK);
    plan_ms = ms_since(&t0);
    ck_assert_uint_eq(res.n_ok, 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < PODS; i++) {
        ck_assert_int_eq(
            gang_filter(s, cps[i], (const char *const *)names, NODES, 1, out, &res, &e), COMMON_OK);
        ok += res.n_ok;
    }
    per_call = ms_since(&t0) / PODS;
    ck_assert_uint_eq(ok, PODS);
    /* 1,000 pods of 1 GPU on nodes of 8: exactly 125 nodes */
    {
        struct gang_info in;
        ck_assert_int_eq(gang_info(s, "ml", "big", &in, &e), COMMON_OK);
        ck_assert_uint_eq(in.planned, PODS);
    }
    fprintf(stderr, "gang filter at %d nodes, %d-pod gang: plan %.2f ms, planned filter %.4f ms\n",
            NODES, PODS, plan_ms, per_call);
    /* the fast path: a planned member's filter looks its node up instead of planning again, so
     * one call costs a small part of the plan (about 1/200 here; a replan per call would cost
     * about as much as the plan: both measured in this run, whatever the machine's speed) */
    ck_assert_msg(per_call * 10 < plan_ms,
                  "filter with a plan took %.3f ms per call, the plan %.3f ms", per_call, plan_ms);
    /* the bind of the first member reserves the plan; the last releases all 1,000 */
    for (int i = 0; i < PODS; i++) {
        ck_assert_int_eq(
            gang_filter(s, cps[i], (const char *const *)names, NODES, 2, out, &res, &e), COMMON_OK);
        for (int k = 0; k < NODES; k++)
            if (out[k].verdict == GANG_NODE_OK) {
                ck_assert_int_eq(
                    gang_bind(s, "ml", cps[i]->name, cps[i]->uid, names[k], 3, &br, &e), COMMON_OK);
                break;
            }
        ck_assert_int_eq(br.action, i == PODS - 1 ? GANG_BIND_RELEASE : GANG_BIND_HOLD);
    }
    ck_assert_uint_eq(br.n_binds, PODS);
    ck_assert_int_eq(gang_check(s, &e), COMMON_OK);
    for (int i = 0; i < NODES; i++)
        free(names[i]);
    for (int i = 0; i < PODS; i++)
        common_pod_free(cps[i]);
    free(names);
    free(cps);
    free(out);
    gang_state_destroy(s);
}
END_TEST

/* ---- allocation failure at every step ---- */

/* objects decoded before failure injection is armed */
struct life_input {
    struct common_node *nodes[3];
    struct common_pod *pods[3];
    json_t *pg;
};

static void life_input_make(struct life_input *in)
{
    const char *names[3] = {"n1", "n2", "n3"};
    struct common_error e;

    for (int i = 0; i < 3; i++) {
        char name[8];
        json_t *nj = json_pack("{s:{s:s, s:{s:s}}, s:{s:{s:s, s:s, s:s, s:s}}}", "metadata", "name",
                               names[i], "labels", "zone", "z1", "status", "allocatable", "cpu",
                               "8", "memory", "32Gi", "pods", "10", "nvidia.com/gpu", "2");
        ck_assert_int_eq(common_node_from_json(nj, &in->nodes[i], &e), COMMON_OK);
        json_decref(nj);
        snprintf(name, sizeof(name), "p%d", i);
        in->pods[i] = make_pod("ml", name, "g", 1);
    }
    /* the gang requires one zone (topology "default": [zone]): the topology policy's
     * allocations are part of the life too */
    in->pg = json_pack("{s:{s:s, s:s, s:{s:s, s:s}}, s:{s:i, s:i, s:{s:s}}}", "metadata", "name",
                       "g", "namespace", "ml", "annotations", GANG_PHASED_ANNOTATION, "init",
                       "trainsched.io/topology-required", "zone", "spec", "minMember", 3,
                       "scheduleTimeoutSeconds", 30, "minResources", "nvidia.com/gpu", "3");
}

static void life_input_free(struct life_input *in)
{
    for (int i = 0; i < 3; i++) {
        common_node_free(in->nodes[i]);
        common_pod_free(in->pods[i]);
    }
    json_decref(in->pg);
}

/* one gang's life: nodes, PodGroup, pods, filter, prioritize, holds, release, tick, deletes */
static enum common_rc life(const struct life_input *in, struct gang_state **sp,
                           struct common_error *e)
{
    struct gang_config cfg;
    const char *ign[1] = {"trainsched.io/gang"};
    const char *nodes[3] = {"n1", "n2", "n3"};
    struct gang_node_verdict out[3];
    struct gang_filter_result res;
    struct gang_bind_result br;
    const struct gang_answer *a;
    size_t n;
    struct gang_state *s;
    struct gang_podgroup pg;
    enum common_rc rc;
    int64_t scores[3];

    gang_config_default(&cfg);
    cfg.ignored_resources = ign;
    cfg.n_ignored_resources = 1;
    cfg.bind_http_timeout_ms = 120000;
    *sp = NULL;
    if ((rc = gang_state_create(&cfg, sp, e)))
        return rc;
    s = *sp;
    {
        static const char *const levels[] = {"zone"};
        if ((rc = gang_topology_set(s, "default", levels, 1, e)))
            return rc;
    }
    for (int i = 0; i < 3; i++)
        if ((rc = gang_node_upsert(s, in->nodes[i], e)))
            return rc;
    if ((rc = gang_podgroup_from_json(in->pg, &pg, e)) || (rc = gang_podgroup_upsert(s, &pg, e)))
        return rc;
    for (int i = 0; i < 3 && !rc; i++)
        rc = gang_pod_upsert(s, in->pods[i], e);
    for (int i = 0; i < 3 && !rc; i++) {
        const struct common_pod *cp = in->pods[i];
        rc = gang_filter(s, cp, nodes, 3, 10, out, &res, e);
        if (!rc)
            rc = gang_prioritize(s, cp, nodes, 3, scores, e);
        for (int k = 0; k < 3 && !rc; k++)
            if (out[k].verdict == GANG_NODE_OK) {
                rc = gang_bind(s, "ml", cp->name, cp->uid, nodes[k], 20, &br, e);
                break;
            }
    }
    if (!rc)
        rc = gang_tick(s, 100000, &a, &n, e);
    if (!rc) {
        gang_pod_delete(s, in->pods[1]->uid);
        gang_node_delete(s, "n3");
        gang_podgroup_delete(s, "ml", "g");
    }
    return rc;
}

START_TEST(allocation_failures_are_clean)
{
    unsigned long k;
    int passed = 0;
    struct life_input in;

    life_input_make(&in);
    for (k = 1; k < 2000 && !passed; k++) {
        struct gang_state *s = NULL;
        struct common_error e;
        enum common_rc rc;
        common_alloc_fail_at(k);
        rc = life(&in, &s, &e);
        common_alloc_fail_at(0);
        if (rc == COMMON_OK && !common_alloc_failed())
            passed = 1;
        else
            ck_assert_msg(rc == COMMON_OK || rc == COMMON_ENOMEM, "fail at %lu: %s (%s)", k,
                          common_rc_name(rc), e.msg);
        if (s)
            ck_assert_msg(gang_check(s, &e) == COMMON_OK, "fail at %lu: books: %s", k, e.msg);
        gang_state_destroy(s);
    }
    life_input_free(&in);
    ck_assert_msg(passed, "the life never ran without a failure");
    ck_assert_msg(k > 20, "only %lu allocations in a gang's life", k);
}
END_TEST

/* ---- PodGroup decoding and configuration ---- */

static const struct {
    const char *json;
    const char *msg;
} bad_pgs[] = {
    {"[]", "metadata: expected an object"},
    {"{\"metadata\":{\"name\":\"a\"}}", "metadata.namespace and metadata.name are required"},
    {"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"spec\":[]}", "spec: expected an object"},
    {"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"spec\":{\"minMember\":-1}}",
     "spec.minMember: -1 is out of range"},
    {"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"spec\":{\"minMember\":\"3\"}}",
     "spec.minMember: expected an integer"},
    {"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"spec\":{\"scheduleTimeoutSeconds\":"
     "4294967296}}",
     "spec.scheduleTimeoutSeconds: 4294967296 is out of range"},
    {"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"spec\":{\"minResources\":{\"cpu\":"
     "\"1x\"}}}",
     "spec.minResources[cpu]"},
    {"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"spec\":{\"minResources\":{\"cpu\":"
     "true}}}",
     "spec.minResources[cpu]: expected a quantity string"},
    {"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"spec\":{\"minResources\":{\"memory\":"
     "\"-1Gi\"}}}",
     "spec.minResources[memory]: must not be negative"},
};

START_TEST(podgroup_decode_errors)
{
    json_t *j = json_loads(bad_pgs[_i].json, JSON_DECODE_ANY, NULL);
    struct gang_podgroup pg;
    struct common_error e;

    ck_assert_ptr_nonnull(j);
    common_error_clear(&e);
    ck_assert_int_eq(gang_podgroup_from_json(j, &pg, &e), COMMON_EINVAL);
    ck_assert_msg(strstr(e.msg, bad_pgs[_i].msg) != NULL, "message \"%s\" lacks \"%s\"", e.msg,
                  bad_pgs[_i].msg);
    json_decref(j);
}
END_TEST

START_TEST(podgroup_decode_units)
{
    json_t *j = json_loads("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"annotations\":{"
                           "\"" GANG_PHASED_ANNOTATION "\":\"dataset-initializer\"}},\"spec\":{"
                           "\"minMember\":3,\"scheduleTimeoutSeconds\":120,\"minResources\":{"
                           "\"cpu\":\"1500m\",\"memory\":\"1Gi\",\"pods\":\"3\","
                           "\"nvidia.com/gpu\":\"16\"}}}",
                           0, NULL);
    struct gang_podgroup pg;
    struct common_error e;

    ck_assert_int_eq(gang_podgroup_from_json(j, &pg, &e), COMMON_OK);
    ck_assert_int_eq(pg.min_member, 3);
    ck_assert_int_eq(pg.has_timeout, 1);
    ck_assert_int_eq(pg.timeout_seconds, 120);
    ck_assert_int_eq(pg.has_min_resources, 1);
    ck_assert_int_eq(pg.min_resources.milli_cpu, 1500);
    ck_assert_int_eq(pg.min_resources.memory, 1073741824);
    ck_assert_int_eq(pg.min_resources.pods, 3);
    ck_assert_uint_eq(pg.min_resources.n_extended, 1);
    ck_assert_str_eq(pg.min_resources.extended[0].name, "nvidia.com/gpu");
    ck_assert_int_eq(pg.min_resources.extended[0].value, 16);
    ck_assert_str_eq(pg.phased_jobs, "dataset-initializer");
    json_decref(j);
}
END_TEST

START_TEST(config_errors)
{
    struct gang_config cfg;
    struct gang_state *s = (struct gang_state *)0x1;
    struct common_error e;

    gang_config_default(&cfg);
    cfg.default_timeout_ms = -1;
    ck_assert_int_eq(gang_state_create(&cfg, &s, &e), COMMON_EINVAL);
    ck_assert_ptr_null(s);
    gang_config_default(&cfg);
    cfg.backoff_initial_ms = 20000;
    cfg.backoff_max_ms = 10000;
    ck_assert_int_eq(gang_state_create(&cfg, &s, &e), COMMON_EINVAL);
    ck_assert_msg(strstr(e.msg, "backoff_max_ms") != NULL, "%s", e.msg);
    /* defaults: 60 s gang timeout cut to the 5 s httpTimeout minus the 2 s margin */
    ck_assert_int_eq(gang_state_create(NULL, &s, &e), COMMON_OK);
    ck_assert_int_eq(gang_next_deadline(s), INT64_MAX);
    gang_state_destroy(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gang");
    TCase *tc = tcase_create("fixtures");
    TCase *direct = tcase_create("direct");

    collect();
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, fixture_case, 0, n_cases);
    suite_add_tcase(s, tc);
    tcase_set_timeout(direct, 300);
    tcase_add_loop_test(direct, interleaved_gangs_never_deadlock, 0, 64);
    tcase_add_test(direct, filter_fast_path_at_scale);
    tcase_add_loop_test(direct, prioritize_memo_matches_plain, 0, 4);
    tcase_add_test(direct, allocation_failures_are_clean);
    tcase_add_loop_test(direct, podgroup_decode_errors, 0,
                        (int)(sizeof(bad_pgs) / sizeof(bad_pgs[0])));
    tcase_add_test(direct, podgroup_decode_units);
    tcase_add_test(direct, config_errors);
    suite_add_tcase(s, direct);
    return s;
}

int main(void)
{
    int rc;

    rc = testutil_run_suite(suite());
    for (int i = 0; i < n_cases; i++)
        free(cases[i]);
    return rc;
}
