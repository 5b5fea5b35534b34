/*
 * dra/alloc.c - the allocator of dra/dra.h: pools of one node, devices in use, and a
 * depth-first search with backtracking (claim -> request -> device), as the structured
 * allocator of k8s.io/dynamic-resource-allocation does it.
 */
#include <stdlib.h>
#include <string.h>

#include "dra/dra.h"

/* Upstream bounds the search with the scheduler's filter timeout; a pure core bounds steps. */
#define DRA_MAX_STEPS 2000000

struct cand {
    const struct dra_slice *slice;
    const struct dra_device *dev;
    int in_use;
    int taken;       /* claim index + 1 of a non-admin pick in this attempt, else 0 */
    int admin_taken; /* claim index + 1 of an adminAccess pick in this attempt, else 0 */
};

struct pick {
    size_t cand;
    const char *request;
    int admin;
};

struct cstate {
    const struct dra_attr *value;
    int count;
};

struct st {
    struct common_arena *a;
    const struct dra_snapshot *snap;
    const struct dra_index *ix;
    const char *node;
    const struct dra_claim *claims;
    size_t n_claims;
    struct cand *c;
    size_t n_c;
    size_t n_incomplete, n_invalid;
    signed char *match;   /* [alt index * n_c + cand]: 0 unknown, 1 match, 2 no */
    size_t *alt_base;     /* per claim: index of its first alt in match rows */
    struct cstate **cons; /* per claim, per constraint */
    struct pick *picks;
    size_t n_picks, *claim_picks;
    long steps;
    /* the furthest request reached without success, for the reason */
    size_t far_claim, far_req;
    int far_set;
    struct common_error *err;
    enum common_rc abort_rc; /* set when the search must stop with an error */
    const struct dra_alloc_opts *o;
    const struct dra_result **extra; /* o->extra_used, in_use_cmp order */
};

/* ---- pools of the node ---- */

static int slice_cmp(const void *x, const void *y)
{
    const struct dra_slice *a = *(const struct dra_slice *const *)x;
    const struct dra_slice *b = *(const struct dra_slice *const *)y;
    int c = strcmp(a->driver, b->driver);
    if (!c)
        c = strcmp(a->pool, b->pool);
    if (!c)
        c = strcmp(a->name, b->name);
    return c;
}

/* usable slices by node ("" for allNodes), then driver, pool, name */
static const char *node_key(const struct dra_slice *s)
{
    return s->all_nodes ? "" : s->node_name;
}

static int node_slice_cmp(const void *x, const void *y)
{
    const struct dra_slice *a = *(const struct dra_slice *const *)x;
    const struct dra_slice *b = *(const struct dra_slice *const *)y;
    int c = strcmp(node_key(a), node_key(b));
    return c ? c : slice_cmp(x, y);
}

static int in_use_cmp(const void *x, const void *y)
{
    const struct dra_result *a = *(const struct dra_result *const *)x;
    const struct dra_result *b = *(const struct dra_result *const *)y;
    int c = strcmp(a->driver, b->driver);
    if (!c)
        c = strcmp(a->pool, b->pool);
    if (!c)
        c = strcmp(a->device, b->device);
    return c;
}

struct pool_info {
    const char *driver, *pool;
    int64_t gen;
    int incomplete, invalid;
    size_t first, n; /* its slices in all_sorted (every generation, node selectors included) */
};

/* the usable slices of one node key: ix->slices[lo, hi) */
struct node_slot {
    const char *key; /* NULL: an empty slot */
    size_t lo, hi;
};

/*
 * Besides the sorted arrays that answer every query by binary search on names (the plain way,
 * dra_index_build_plain), the tables below answer the per-node questions of an allocation
 * without a string comparison per step: a gang plan asks them for every node of the cluster.
 * They give the same answers (test_dra's random comparison of both).
 */
struct dra_index {
    const struct dra_snapshot *snap;
    const struct dra_slice **slices; /* usable slices, node_slice_cmp order */
    size_t n_slices;
    struct pool_info *pools; /* driver, pool order */
    size_t n_pools;
    const struct dra_result **used; /* in_use_cmp order */
    size_t n_used;
    const struct dra_slice **all_sorted; /* every slice, slice_cmp order */
    /* the tables, NULL in a plain index */
    const struct pool_info **pool_of; /* per snap->slices[i]: its pool */
    size_t *dev_off;                  /* per snap->slices[i]: its first flag in dev_used */
    unsigned char *dev_used;          /* per device: 1 when an allocated result names it */
    struct node_slot *nodes;          /* open addressing by node key, n_nodes a power of 2 */
    size_t n_nodes;
};

static int pool_cmp(const void *x, const void *y)
{
    const struct pool_info *a = x, *b = y;
    int c = strcmp(a->driver, b->driver);
    return c ? c : strcmp(a->pool, b->pool);
}

static int name_cmp(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* the pool's newest generation, completeness and duplicate device names, over all slices
 * (all_sorted: every slice in slice_cmp order; [i, j) is one pool) */
static enum common_rc pool_scan(struct common_arena *a, const struct dra_slice **all, size_t i,
                                size_t j, struct pool_info *p)
{
    int64_t count = 0, want = 0;
    size_t n_names = 0, k;
    const char **names;
    p->driver = all[i]->driver;
    p->pool = all[i]->pool;
    p->gen = INT64_MIN;
    p->first = i;
    p->n = j - i;
    for (k = i; k < j; k++)
        if (all[k]->generation > p->gen)
            p->gen = all[k]->generation;
    for (k = i; k < j; k++)
        if (all[k]->generation == p->gen) {
            count++;
            want = all[k]->slice_count;
            n_names += all[k]->n_devices;
        }
    p->incomplete = count < want;
    if (!(names = common_arena_alloc(a, (n_names + 1) * sizeof(*names))))
        return COMMON_ENOMEM;
    n_names = 0;
    for (k = i; k < j; k++)
        if (all[k]->generation == p->gen)
            for (size_t d = 0; d < all[k]->n_devices; d++)
                names[n_names++] = all[k]->devices[d].name;
    qsort(names, n_names, sizeof(*names), name_cmp);
    for (k = 1; k < n_names && !p->invalid; k++)
        p->invalid = strcmp(names[k - 1], names[k]) == 0;
    return COMMON_OK;
}

/* FNV-1a of a node key */
static size_t key_hash(const char *k)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ULL;
    return (size_t)h;
}

/* the tables of struct dra_index; 0 ok, -1 out of memory */
static int index_tables(struct common_arena *a, struct dra_index *ix)
{
    const struct dra_snapshot *sn = ix->snap;
    size_t n_dev = 0, keys = 0;

    if (!(ix->pool_of = common_arena_alloc(a, (sn->n_slices + 1) * sizeof(*ix->pool_of))) ||
        !(ix->dev_off = common_arena_alloc(a, (sn->n_slices + 1) * sizeof(*ix->dev_off))))
        return -1;
    for (size_t p = 0; p < ix->n_pools; p++)
        for (size_t k = ix->pools[p].first; k < ix->pools[p].first + ix->pools[p].n; k++)
            ix->pool_of[ix->all_sorted[k] - sn->slices] = &ix->pools[p];
    for (size_t i = 0; i < sn->n_slices; i++) {
        ix->dev_off[i] = n_dev;
        n_dev += sn->slices[i].n_devices;
    }
    if (!(ix->dev_used = common_arena_alloc(a, n_dev + 1)))
        return -1;
    memset(ix->dev_used, 0, n_dev + 1);
    /* a result in use marks every device of that name in its pool's slices */
    for (size_t u = 0; u < ix->n_used; u++) {
        struct pool_info key = {ix->used[u]->driver, ix->used[u]->pool, 0, 0, 0, 0, 0};
        const struct pool_info *p =
            bsearch(&key, ix->pools, ix->n_pools, sizeof(*ix->pools), pool_cmp);
        if (!p || (u > 0 && in_use_cmp(&ix->used[u - 1], &ix->used[u]) == 0))
            continue;
        for (size_t k = p->first; k < p->first + p->n; k++) {
            const struct dra_slice *sl = ix->all_sorted[k];
            for (size_t d = 0; d < sl->n_devices; d++)
                if (strcmp(sl->devices[d].name, ix->used[u]->device) == 0)
                    ix->dev_used[ix->dev_off[sl - sn->slices] + d] = 1;
        }
    }
    for (size_t i = 0; i < ix->n_slices; i++)
        keys += i == 0 || strcmp(node_key(ix->slices[i - 1]), node_key(ix->slices[i])) != 0;
    for (ix->n_nodes = 16; ix->n_nodes < 2 * keys; ix->n_nodes *= 2)
        ;
    if (!(ix->nodes = common_arena_alloc(a, ix->n_nodes * sizeof(*ix->nodes))))
        return -1;
    memset(ix->nodes, 0, ix->n_nodes * sizeof(*ix->nodes));
    for (size_t i = 0; i < ix->n_slices;) {
        const char *k = node_key(ix->slices[i]);
        size_t j = i + 1, h = key_hash(k) & (ix->n_nodes - 1);
        while (j < ix->n_slices && strcmp(node_key(ix->slices[j]), k) == 0)
            j++;
        while (ix->nodes[h].key)
            h = (h + 1) & (ix->n_nodes - 1);
        ix->nodes[h] = (struct node_slot){k, i, j};
        i = j;
    }
    return 0;
}

static enum common_rc index_build(struct common_arena *a, const struct dra_snapshot *sn, int plain,
                                  struct dra_index **out, struct common_error *err)
{
    struct dra_index *ix = common_arena_alloc(a, sizeof(*ix));
    const struct dra_slice **all;
    size_t total = 0;
    *out = NULL;
    if (ix)
        memset(ix, 0, sizeof(*ix));
    if (!ix || !(all = common_arena_alloc(a, (sn->n_slices + 1) * sizeof(*all))) ||
        !(ix->slices = common_arena_alloc(a, (sn->n_slices + 1) * sizeof(*ix->slices))) ||
        !(ix->pools = common_arena_alloc(a, (sn->n_slices + 1) * sizeof(*ix->pools))))
        goto nomem;
    ix->snap = sn;
    for (size_t i = 0; i < sn->n_slices; i++) {
        all[i] = &sn->slices[i];
        if (!sn->slices[i].node_selector)
            ix->slices[ix->n_slices++] = &sn->slices[i];
    }
    qsort(all, sn->n_slices, sizeof(*all), slice_cmp);
    qsort(ix->slices, ix->n_slices, sizeof(*ix->slices), node_slice_cmp);
    for (size_t i = 0; i < sn->n_slices;) {
        size_t j = i;
        while (j < sn->n_slices && strcmp(all[j]->driver, all[i]->driver) == 0 &&
               strcmp(all[j]->pool, all[i]->pool) == 0)
            j++;
        if (pool_scan(a, all, i, j, &ix->pools[ix->n_pools++]) != COMMON_OK)
            goto nomem;
        i = j;
    }
    for (size_t i = 0; i < sn->n_allocated; i++)
        total += sn->allocated[i].n_allocated;
    if (!(ix->used = common_arena_alloc(a, (total + 1) * sizeof(*ix->used))))
        goto nomem;
    for (size_t i = 0; i < sn->n_allocated; i++)
        for (size_t k = 0; k < sn->allocated[i].n_allocated; k++)
            if (!sn->allocated[i].allocated[k].admin_access)
                ix->used[ix->n_used++] = &sn->allocated[i].allocated[k];
    qsort(ix->used, ix->n_used, sizeof(*ix->used), in_use_cmp);
    ix->all_sorted = all;
    if (!plain && index_tables(a, ix))
        goto nomem;
    *out = ix;
    return COMMON_OK;
nomem:
    return common_error_set(err, COMMON_ENOMEM, "out of memory indexing DRA devices");
}

enum common_rc dra_index_build(struct common_arena *a, const struct dra_snapshot *sn,
                               struct dra_index **out, struct common_error *err)
{
    return index_build(a, sn, 0, out, err);
}

enum common_rc dra_index_build_plain(struct common_arena *a, const struct dra_snapshot *sn,
                                     struct dra_index **out, struct common_error *err)
{
    return index_build(a, sn, 1, out, err);
}

/* the pool of sl, a slice of ix's snapshot (NULL when none: not indexed) */
static const struct pool_info *pool_of(const struct dra_index *ix, const struct dra_slice *sl)
{
    const struct dra_snapshot *sn = ix->snap;
    struct pool_info key = {sl->driver, sl->pool, 0, 0, 0, 0, 0};
    if (ix->pool_of && sl >= sn->slices && sl < sn->slices + sn->n_slices)
        return ix->pool_of[sl - sn->slices];
    return bsearch(&key, ix->pools, ix->n_pools, sizeof(*ix->pools), pool_cmp);
}

/* 1 when device d of sl (a slice of ix's snapshot) is in an allocated claim's results */
static int dev_in_use(const struct dra_index *ix, const struct dra_slice *sl, size_t d)
{
    const struct dra_snapshot *sn = ix->snap;
    struct dra_result rk = {NULL, sl->driver, sl->pool, sl->devices[d].name, 0};
    const struct dra_result *kp = &rk;
    if (ix->dev_used && sl >= sn->slices && sl < sn->slices + sn->n_slices)
        return ix->dev_used[ix->dev_off[sl - sn->slices] + d];
    return bsearch(&kp, ix->used, ix->n_used, sizeof(*ix->used), in_use_cmp) != NULL;
}

static const struct dra_attr *find_attr(const struct dra_device *d, const char *dom,
                                        const char *name)
{
    for (size_t i = 0; i < d->cel.n_attrs; i++)
        if (strcmp(d->cel.attrs[i].domain, dom) == 0 && strcmp(d->cel.attrs[i].name, name) == 0)
            return &d->cel.attrs[i];
    return NULL;
}

/* the range of ix->slices whose node key is key */
static void node_range(const struct dra_index *ix, const char *key, size_t *lo, size_t *hi)
{
    size_t l = 0, h = ix->n_slices;
    if (ix->nodes) {
        for (h = key_hash(key) & (ix->n_nodes - 1); ix->nodes[h].key;
             h = (h + 1) & (ix->n_nodes - 1))
            if (strcmp(ix->nodes[h].key, key) == 0) {
                *lo = ix->nodes[h].lo;
                *hi = ix->nodes[h].hi;
                return;
            }
        *lo = *hi = 0;
        return;
    }
    while (l < h) {
        size_t m = l + (h - l) / 2;
        if (strcmp(node_key(ix->slices[m]), key) < 0)
            l = m + 1;
        else
            h = m;
    }
    *lo = l;
    while (l < ix->n_slices && strcmp(node_key(ix->slices[l]), key) == 0)
        l++;
    *hi = l;
}

static enum common_rc gather(struct st *st)
{
    const struct dra_index *ix = st->ix;
    const struct dra_slice **rel;
    size_t n_rel = 0, total = 0, lo[2], hi[2];

    node_range(ix, "", &lo[0], &hi[0]);
    node_range(ix, st->node, &lo[1], &hi[1]);
    if (!(rel = common_arena_alloc(st->a, (hi[0] - lo[0] + hi[1] - lo[1] + 1) * sizeof(*rel))))
        return common_error_set(st->err, COMMON_ENOMEM, "out of memory allocating devices");
    for (int r = 0; r < (st->node[0] ? 2 : 1); r++)
        for (size_t i = lo[r]; i < hi[r]; i++)
            rel[n_rel++] = ix->slices[i];
    /* one node key's slices are in slice_cmp order already */
    if (st->node[0] && hi[0] > lo[0] && hi[1] > lo[1])
        qsort(rel, n_rel, sizeof(*rel), slice_cmp);
    for (size_t i = 0; i < n_rel; i++)
        total += rel[i]->n_devices;
    if (!(st->c = common_arena_alloc(st->a, (total + 1) * sizeof(*st->c))))
        return common_error_set(st->err, COMMON_ENOMEM, "out of memory allocating devices");

    for (size_t i = 0; i < n_rel;) {
        const struct pool_info *p = pool_of(ix, rel[i]);
        size_t j = i;
        while (j < n_rel && strcmp(rel[j]->driver, rel[i]->driver) == 0 &&
               strcmp(rel[j]->pool, rel[i]->pool) == 0)
            j++;
        if (!p || p->incomplete || p->invalid) {
            st->n_incomplete += !p || p->incomplete;
            st->n_invalid += p && !p->incomplete && p->invalid;
            i = j;
            continue;
        }
        for (size_t k = i; k < j; k++)
            if (rel[k]->generation == p->gen)
                for (size_t d = 0; d < rel[k]->n_devices; d++) {
                    struct cand *c;
                    struct dra_result rk = {NULL, rel[k]->driver, rel[k]->pool,
                                            rel[k]->devices[d].name, 0};
                    const struct dra_result *kp = &rk;
                    const struct dra_alloc_opts *o = st->o;
                    if (o && o->match_name) {
                        const struct dra_attr *at =
                            find_attr(&rel[k]->devices[d], o->match_domain, o->match_name);
                        if (!at || !dra_attr_equal(at, o->match_value))
                            continue;
                    }
                    c = &st->c[st->n_c++];
                    c->slice = rel[k];
                    c->dev = &rel[k]->devices[d];
                    c->in_use = dev_in_use(ix, rel[k], d) ||
                                (o && o->n_extra_used &&
                                 bsearch(&kp, st->extra, o->n_extra_used, sizeof(*st->extra),
                                         in_use_cmp) != NULL);
                }
        i = j;
    }
    return COMMON_OK;
}

/* ---- selectors ---- */

static const struct dra_class *find_class(const struct dra_snapshot *sn, const char *name)
{
    for (size_t i = 0; i < sn->n_classes; i++)
        if (strcmp(sn->classes[i].name, name) == 0)
            return &sn->classes[i];
    return NULL;
}

/* the row of alternative alt of request ri of claim ci in st->match */
static size_t alt_row(const struct st *st, size_t ci, size_t ri, size_t alt)
{
    size_t row = st->alt_base[ci] + alt;
    for (size_t i = 0; i < ri; i++)
        row += st->claims[ci].requests[i].n_alts;
    return row;
}

/* 1 match, 0 not, -1 error (st->abort_rc set) */
static int matches(struct st *st, size_t ci, const struct dra_exact *x, size_t row, size_t k)
{
    signed char *m = &st->match[row * st->n_c + k];
    const struct dra_class *cls;
    int ok = 1;
    if (*m)
        return *m == 1;
    if (!(cls = find_class(st->snap, x->class_name))) {
        st->abort_rc =
            common_error_set(st->err, COMMON_ENOTFOUND,
                             "claim %s/%s: request \"%s\": DeviceClass \"%s\" does not exist",
                             st->claims[ci].ns, st->claims[ci].name, x->name, x->class_name);
        return -1;
    }
    for (size_t s = 0; ok && s < cls->n_selectors + x->n_selectors; s++) {
        const struct dra_cel_prog *p =
            s < cls->n_selectors ? &cls->selectors[s] : &x->selectors[s - cls->n_selectors];
        if (dra_cel_eval(p, &st->c[k].dev->cel, &ok, st->err) != COMMON_OK) {
            common_error_prefix(st->err, "claim %s/%s: request \"%s\": device %s/%s/%s: %s",
                                st->claims[ci].ns, st->claims[ci].name, x->name,
                                st->c[k].slice->driver, st->c[k].slice->pool, st->c[k].dev->name,
                                s < cls->n_selectors ? "class selector" : "request selector");
            st->abort_rc = COMMON_EINVAL;
            if (st->err)
                st->err->code = COMMON_EINVAL;
            return -1;
        }
    }
    *m = ok ? 1 : 2;
    return ok;
}

/* ---- constraints ---- */

static int applies(const struct dra_constraint *c, const char *req, const char *full)
{
    if (c->n_requests == 0)
        return 1;
    for (size_t i = 0; i < c->n_requests; i++)
        if (strcmp(c->requests[i], req) == 0 || strcmp(c->requests[i], full) == 0)
            return 1;
    return 0;
}

int dra_attr_equal(const struct dra_attr *a, const struct dra_attr *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case DRA_ATTR_INT:
        return a->i == b->i;
    case DRA_ATTR_BOOL:
        return a->b == b->b;
    case DRA_ATTR_STRING:
        return strcmp(a->s, b->s) == 0;
    case DRA_ATTR_VERSION:
        return dra_semver_cmp(&a->v, &b->v) == 0;
    }
    return 0;
}

/* try to add device k for request (req, full) of claim ci: 1 added, 0 violates */
static int cons_add(struct st *st, size_t ci, const char *req, const char *full, size_t k)
{
    const struct dra_claim *cl = &st->claims[ci];
    size_t j;
    for (j = 0; j < cl->n_constraints; j++) {
        const struct dra_constraint *c = &cl->constraints[j];
        const struct dra_attr *at;
        if (!applies(c, req, full))
            continue;
        at = find_attr(st->c[k].dev, c->attr_domain, c->attr_name);
        if (!at || (st->cons[ci][j].count > 0 && !dra_attr_equal(at, st->cons[ci][j].value)))
            break;
    }
    if (j < cl->n_constraints)
        return 0;
    for (j = 0; j < cl->n_constraints; j++)
        if (applies(&cl->constraints[j], req, full)) {
            if (st->cons[ci][j].count++ == 0)
                st->cons[ci][j].value = find_attr(st->c[k].dev, cl->constraints[j].attr_domain,
                                                  cl->constraints[j].attr_name);
        }
    return 1;
}

static void cons_undo(struct st *st, size_t ci, const char *req, const char *full)
{
    const struct dra_claim *cl = &st->claims[ci];
    for (size_t j = 0; j < cl->n_constraints; j++)
        if (applies(&cl->constraints[j], req, full) && --st->cons[ci][j].count == 0)
            st->cons[ci][j].value = NULL;
}

/* ---- search ---- */

static int search(struct st *st, size_t ci, size_t ri);

static int usable(const struct st *st, size_t ci, size_t k, int admin)
{
    const struct cand *c = &st->c[k];
    int me = (int)ci + 1;
    if (admin)
        return c->taken != me && c->admin_taken != me;
    return !c->in_use && !c->taken && c->admin_taken != me;
}

static int take(struct st *st, size_t ci, const struct dra_request *r, const struct dra_exact *x,
                size_t k, int *prev_admin)
{
    if (st->claim_picks[ci] >= DRA_MAX_RESULTS || !cons_add(st, ci, r->name, x->name, k))
        return 0;
    st->claim_picks[ci]++;
    *prev_admin = st->c[k].admin_taken;
    if (x->admin_access)
        st->c[k].admin_taken = (int)ci + 1;
    else
        st->c[k].taken = (int)ci + 1;
    st->picks[st->n_picks].cand = k;
    st->picks[st->n_picks].request = x->name;
    st->picks[st->n_picks++].admin = x->admin_access;
    return 1;
}

static void untake(struct st *st, size_t ci, const struct dra_request *r, const struct dra_exact *x,
                   size_t k, int prev_admin)
{
    st->n_picks--;
    st->claim_picks[ci]--;
    if (x->admin_access)
        st->c[k].admin_taken = prev_admin;
    else
        st->c[k].taken = 0;
    cons_undo(st, ci, r->name, x->name);
}

/* pick `need` more devices for alt `alt` of request ri, from candidate index `from` on */
static int pick_n(struct st *st, size_t ci, size_t ri, size_t alt, int64_t need, size_t from)
{
    const struct dra_request *r = &st->claims[ci].requests[ri];
    const struct dra_exact *x = &r->alts[alt];
    if (need == 0)
        return search(st, ci, ri + 1);
    for (size_t k = from; k < st->n_c; k++) {
        int m, prev, rc;
        if (++st->steps > DRA_MAX_STEPS) {
            st->abort_rc = common_error_set(st->err, COMMON_ETIMEOUT,
                                            "claim %s/%s: device search stopped after %d steps",
                                            st->claims[ci].ns, st->claims[ci].name, DRA_MAX_STEPS);
            return -1;
        }
        if (!usable(st, ci, k, x->admin_access))
            continue;
        if ((m = matches(st, ci, x, alt_row(st, ci, ri, alt), k)) < 0)
            return -1;
        if (!m || !take(st, ci, r, x, k, &prev))
            continue;
        rc = pick_n(st, ci, ri, alt, need - 1, k + 1);
        if (rc != 0)
            return rc;
        untake(st, ci, r, x, k, prev);
    }
    return 0;
}

/* All: every matching device of the node, tried once */
static int pick_all(struct st *st, size_t ci, size_t ri, size_t alt)
{
    const struct dra_request *r = &st->claims[ci].requests[ri];
    const struct dra_exact *x = &r->alts[alt];
    size_t taken = 0, ok = 1, *idx, n = 0;
    int *prev, m, rc;
    if (st->n_incomplete > 0)
        return 0; /* an incomplete pool makes All impossible */
    if (!(idx = common_arena_alloc(st->a, (st->n_c + 1) * sizeof(*idx))) ||
        !(prev = common_arena_alloc(st->a, (st->n_c + 1) * sizeof(*prev)))) {
        st->abort_rc = common_error_set(st->err, COMMON_ENOMEM, "out of memory allocating devices");
        return -1;
    }
    for (size_t k = 0; k < st->n_c; k++) {
        if ((m = matches(st, ci, x, alt_row(st, ci, ri, alt), k)) < 0)
            return -1;
        if (m)
            idx[n++] = k;
    }
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n && ok; i++) {
        ok = usable(st, ci, idx[i], x->admin_access) && take(st, ci, r, x, idx[i], &prev[i]);
        taken += ok;
    }
    rc = ok ? search(st, ci, ri + 1) : 0;
    if (rc != 0)
        return rc;
    while (taken > 0) {
        taken--;
        untake(st, ci, r, x, idx[taken], prev[taken]);
    }
    return 0;
}

static int search(struct st *st, size_t ci, size_t ri)
{
    const struct dra_claim *cl;
    if (ci == st->n_claims)
        return 1;
    cl = &st->claims[ci];
    if (ri == cl->n_requests)
        return search(st, ci + 1, 0);
    if (!st->far_set || ci > st->far_claim || (ci == st->far_claim && ri > st->far_req)) {
        st->far_set = 1;
        st->far_claim = ci;
        st->far_req = ri;
    }
    for (size_t alt = 0; alt < cl->requests[ri].n_alts; alt++) {
        const struct dra_exact *x = &cl->requests[ri].alts[alt];
        int rc = x->all ? pick_all(st, ci, ri, alt) : pick_n(st, ci, ri, alt, x->count, 0);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- the reason a claim does not fit ---- */

static enum common_rc no_fit(struct st *st)
{
    const struct dra_claim *cl = &st->claims[st->far_claim];
    const struct dra_request *r = &cl->requests[st->far_req];
    const struct dra_exact *x = &r->alts[0];
    size_t n_match = 0, n_busy = 0;
    char pools[160] = "";
    for (size_t k = 0; k < st->n_c; k++)
        if (matches(st, st->far_claim, x, alt_row(st, st->far_claim, st->far_req, 0), k) == 1) {
            n_match++;
            n_busy += !usable(st, st->far_claim, k, x->admin_access);
        }
    if (st->n_incomplete || st->n_invalid)
        snprintf(pools, sizeof(pools), " (%zu incomplete and %zu invalid pool(s) not used)",
                 st->n_incomplete, st->n_invalid);
    if (x->all)
        return common_error_set(st->err, COMMON_ECONFLICT,
                                "claim %s/%s: request \"%s\" wants all devices of class \"%s\"; "
                                "node %s has %zu matching, %zu of them in use%s",
                                cl->ns, cl->name, x->name, x->class_name, st->node, n_match, n_busy,
                                pools);
    if ((int64_t)(n_match - n_busy) >= x->count && cl->n_constraints > 0)
        return common_error_set(st->err, COMMON_ECONFLICT,
                                "claim %s/%s: request \"%s\": node %s has %zu free matching "
                                "device(s) of class \"%s\" but no choice meets the claim's "
                                "matchAttribute constraints%s",
                                cl->ns, cl->name, x->name, st->node, n_match - n_busy,
                                x->class_name, pools);
    return common_error_set(st->err, COMMON_ECONFLICT,
                            "claim %s/%s: request \"%s\" needs %lld device(s) of class \"%s\"%s; "
                            "node %s has %zu matching, %zu of them in use%s",
                            cl->ns, cl->name, x->name, (long long)x->count, x->class_name,
                            r->n_alts > 1 ? " (first of its firstAvailable choices)" : "", st->node,
                            n_match, n_busy, pools);
}

enum common_rc dra_allocate_indexed(struct common_arena *a, const struct dra_index *ix,
                                    const char *node, const struct dra_claim *claims, size_t n,
                                    struct dra_claim_alloc *out, struct common_error *err)
{
    return dra_allocate_opts(a, ix, node, claims, n, NULL, out, err);
}

enum common_rc dra_allocate_opts(struct common_arena *a, const struct dra_index *ix,
                                 const char *node, const struct dra_claim *claims, size_t n,
                                 const struct dra_alloc_opts *o, struct dra_claim_alloc *out,
                                 struct common_error *err)
{
    const struct dra_snapshot *snap = ix->snap;
    struct st st = {.a = a,
                    .snap = snap,
                    .ix = ix,
                    .node = node,
                    .claims = claims,
                    .n_claims = n,
                    .err = err,
                    .o = o};
    size_t n_alts = 0, max_picks = 0;
    enum common_rc rc;
    int found;

    if (o && o->n_extra_used) {
        if (!(st.extra = common_arena_alloc(a, o->n_extra_used * sizeof(*st.extra))))
            return common_error_set(err, COMMON_ENOMEM, "out of memory allocating devices");
        for (size_t i = 0; i < o->n_extra_used; i++)
            st.extra[i] = &o->extra_used[i];
        qsort(st.extra, o->n_extra_used, sizeof(*st.extra), in_use_cmp);
    }

    for (size_t ci = 0; ci < n; ci++) {
        int64_t min_total = 0;
        memset(&out[ci], 0, sizeof(out[ci]));
        for (size_t ri = 0; ri < claims[ci].n_requests; ri++) {
            int64_t least = INT64_MAX;
            for (size_t k = 0; k < claims[ci].requests[ri].n_alts; k++) {
                const struct dra_exact *x = &claims[ci].requests[ri].alts[k];
                if ((x->all ? 1 : x->count) < least)
                    least = x->all ? 1 : x->count;
            }
            min_total += least;
            n_alts += claims[ci].requests[ri].n_alts;
        }
        if (min_total > DRA_MAX_RESULTS)
            return common_error_set(err, COMMON_EINVAL,
                                    "claim %s/%s asks for at least %lld devices; a claim holds "
                                    "at most %d",
                                    claims[ci].ns, claims[ci].name, (long long)min_total,
                                    DRA_MAX_RESULTS);
        max_picks += DRA_MAX_RESULTS;
    }
    if ((rc = gather(&st)) != COMMON_OK)
        return rc;
    st.match = common_arena_alloc(a, (n_alts * st.n_c) + 1);
    st.alt_base = common_arena_alloc(a, (n + 1) * sizeof(*st.alt_base));
    st.cons = common_arena_alloc(a, (n + 1) * sizeof(*st.cons));
    st.claim_picks = common_arena_alloc(a, (n + 1) * sizeof(*st.claim_picks));
    st.picks = common_arena_alloc(a, (max_picks + 1) * sizeof(*st.picks));
    if (!st.match || !st.alt_base || !st.cons || !st.claim_picks || !st.picks)
        return common_error_set(err, COMMON_ENOMEM, "out of memory allocating devices");
    for (size_t ci = 0, base = 0; ci < n; ci++) {
        st.alt_base[ci] = base;
        for (size_t ri = 0; ri < claims[ci].n_requests; ri++)
            base += claims[ci].requests[ri].n_alts;
        if (!(st.cons[ci] =
                  common_arena_alloc(a, (claims[ci].n_constraints + 1) * sizeof(*st.cons[ci]))))
            return common_error_set(err, COMMON_ENOMEM, "out of memory allocating devices");
    }
    /* a class that does not exist is an error whatever the node has */
    for (size_t ci = 0; ci < n; ci++)
        for (size_t ri = 0; ri < claims[ci].n_requests; ri++)
            for (size_t k = 0; k < claims[ci].requests[ri].n_alts; k++)
                if (!find_class(snap, claims[ci].requests[ri].alts[k].class_name))
                    return common_error_set(err, COMMON_ENOTFOUND,
                                            "claim %s/%s: request \"%s\": DeviceClass \"%s\" does "
                                            "not exist",
                                            claims[ci].ns, claims[ci].name,
                                            claims[ci].requests[ri].alts[k].name,
                                            claims[ci].requests[ri].alts[k].class_name);

    found = search(&st, 0, 0);
    if (found < 0)
        return st.abort_rc;
    if (!found)
        return no_fit(&st);
    /* picks are in claim, request, device order; split them per claim */
    for (size_t i = 0, ci = 0; ci < n; ci++) {
        out[ci].n_results = st.claim_picks[ci];
        if (!(out[ci].results =
                  common_arena_alloc(a, (out[ci].n_results + 1) * sizeof(*out[ci].results))))
            return common_error_set(err, COMMON_ENOMEM, "out of memory allocating devices");
        for (size_t k = 0; k < out[ci].n_results; k++, i++) {
            const struct cand *c = &st.c[st.picks[i].cand];
            out[ci].results[k].request = st.picks[i].request;
            out[ci].results[k].driver = c->slice->driver;
            out[ci].results[k].pool = c->slice->pool;
            out[ci].results[k].device = c->dev->name;
            out[ci].results[k].admin_access = st.picks[i].admin;
        }
    }
    common_error_clear(err);
    return COMMON_OK;
}

enum common_rc dra_allocate(struct common_arena *a, const struct dra_snapshot *snap,
                            const char *node, const struct dra_claim *claims, size_t n,
                            struct dra_claim_alloc *out, struct common_error *err)
{
    struct dra_index *ix;
    enum common_rc rc = dra_index_build(a, snap, &ix, err);
    if (rc != COMMON_OK)
        return rc;
    return dra_allocate_indexed(a, ix, node, claims, n, out, err);
}

static int attr_cmp(const void *x, const void *y)
{
    const struct dra_attr *a = *(const struct dra_attr *const *)x;
    const struct dra_attr *b = *(const struct dra_attr *const *)y;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    switch (a->type) {
    case DRA_ATTR_INT:
        return a->i < b->i ? -1 : a->i > b->i;
    case DRA_ATTR_BOOL:
        return a->b - b->b;
    case DRA_ATTR_STRING:
        return strcmp(a->s, b->s);
    case DRA_ATTR_VERSION:
        return dra_semver_cmp(&a->v, &b->v);
    }
    return 0;
}

enum common_rc dra_attr_values(struct common_arena *a, const struct dra_index *ix,
                               const char *domain, const char *name, const struct dra_attr ***out,
                               size_t *n, struct common_error *err)
{
    size_t total = 0, k = 0;
    const struct dra_attr **v;

    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < ix->n_slices; i++)
        total += ix->slices[i]->n_devices;
    if (!(v = common_arena_alloc(a, (total + 1) * sizeof(*v))))
        return common_error_set(err, COMMON_ENOMEM, "out of memory listing attribute values");
    for (size_t i = 0; i < ix->n_slices; i++) {
        const struct dra_slice *sl = ix->slices[i];
        const struct pool_info *p = pool_of(ix, sl);
        if (!p || p->incomplete || p->invalid || sl->generation != p->gen)
            continue;
        for (size_t d = 0; d < sl->n_devices; d++) {
            const struct dra_attr *at = find_attr(&sl->devices[d], domain, name);
            if (at)
                v[k++] = at;
        }
    }
    qsort(v, k, sizeof(*v), attr_cmp);
    for (size_t i = 0; i < k; i++)
        if (!*n || attr_cmp(&v[*n - 1], &v[i]) != 0)
            v[(*n)++] = v[i];
    *out = v;
    return COMMON_OK;
}

size_t dra_node_devices(const struct dra_index *ix, const char *node)
{
    size_t lo[2], hi[2], n = 0;

    node_range(ix, "", &lo[0], &hi[0]);
    node_range(ix, node, &lo[1], &hi[1]);
    for (int r = 0; r < (node[0] ? 2 : 1); r++)
        for (size_t i = lo[r]; i < hi[r]; i++) {
            const struct dra_slice *sl = ix->slices[i];
            const struct pool_info *p = pool_of(ix, sl);
            if (p && !p->incomplete && !p->invalid && sl->generation == p->gen)
                n += sl->n_devices;
        }
    return n;
}

/* the device r names among the current slices of ix->slices[lo..hi), NULL when absent */
static const struct dra_device *device_in(const struct dra_index *ix, size_t lo, size_t hi,
                                          const struct dra_result *r)
{
    for (size_t i = lo; i < hi; i++) {
        const struct dra_slice *sl = ix->slices[i];
        if (strcmp(sl->driver, r->driver) != 0 || strcmp(sl->pool, r->pool) != 0 ||
            !dra_slice_current(ix, sl))
            continue;
        for (size_t d = 0; d < sl->n_devices; d++)
            if (strcmp(sl->devices[d].name, r->device) == 0)
                return &sl->devices[d];
    }
    return NULL;
}

const struct dra_attr *dra_device_attr(const struct dra_index *ix, const char *node,
                                       const struct dra_result *r, const char *domain,
                                       const char *name)
{
    size_t lo[2], hi[2];

    node_range(ix, "", &lo[0], &hi[0]);
    node_range(ix, node ? node : "", &lo[1], &hi[1]);
    for (int k = 0; k < (node && node[0] ? 2 : 1); k++) {
        const struct dra_device *dev = device_in(ix, lo[k], hi[k], r);
        if (dev)
            return find_attr(dev, domain, name);
    }
    return NULL;
}

size_t dra_node_pools(const struct dra_index *ix, const char *node)
{
    size_t lo[2], hi[2], n = 0;
    const struct pool_info *last = NULL;

    node_range(ix, "", &lo[0], &hi[0]);
    node_range(ix, node, &lo[1], &hi[1]);
    for (int r = 0; r < (node[0] ? 2 : 1); r++)
        for (size_t i = lo[r]; i < hi[r]; i++) {
            const struct dra_slice *sl = ix->slices[i];
            const struct pool_info *p = pool_of(ix, sl);
            if (p && !p->incomplete && !p->invalid && sl->generation == p->gen && p != last &&
                sl->n_devices) {
                n++;
                last = p;
            }
        }
    return n;
}

int dra_device_in_use(const struct dra_index *ix, const char *driver, const char *pool,
                      const char *device)
{
    struct dra_result rk = {NULL, driver, pool, device, 0};
    const struct dra_result *kp = &rk;
    return bsearch(&kp, ix->used, ix->n_used, sizeof(*ix->used), in_use_cmp) != NULL;
}

int dra_slice_current(const struct dra_index *ix, const struct dra_slice *sl)
{
    const struct pool_info *p = pool_of(ix, sl);
    return p && sl->generation == p->gen;
}

int dra_device_node_local(const struct dra_index *ix, const char *node, const struct dra_result *r)
{
    size_t lo, hi;

    if (!node || !node[0])
        return 0;
    node_range(ix, node, &lo, &hi);
    return device_in(ix, lo, hi, r) != NULL;
}
