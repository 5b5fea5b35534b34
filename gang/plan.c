/*
 * gang/plan.c - place a whole gang onto nodes.
 *
 * Capacity for the gang on a node is allocatable - used - reserved (other gangs' holds and
 * plans, and this gang's held members), plus this gang's own current plan when it is
 * reserved. Order of placement, all deterministic:
 *   1. the pinned member (a bind on a given node);
 *   2. sticky: members keep their planned node while it fits and is not excluded;
 *   3. the restricted member (a filter) on the best of its candidates: most siblings there,
 *      then the tightest fit, then the name;
 *   4. the rest, one pod shape at a time (largest shape first): nodes sorted by how many pods
 *      of the shape they hold (most first, then name); while the remainder does not fit on one
 *      node, fill the node that holds the most; the remainder goes on the tightest node that
 *      holds all of it. So a gang lands on the fewest nodes, and its tail on a node it fills.
 * The plan succeeds when held + planned >= minMember - bound - released - phased done; on
 * failure nothing changes and the limiting resource is reported. Greedy, not optimal for mixed
 * shapes; O(members log members + shapes x nodes log nodes). A dry run (gang_preempt) plans the
 * same way with some pods' requests handed back to their nodes and commits nothing.
 *
 * Scopes (the placement pipeline, pipeline.c): the policies give an ordered list of node sets
 * (topology domains, best fit first; or the whole cluster) and the plan above runs in each in
 * turn until one places the gang. Inside a topology scope, step 4 orders nodes by the rank of
 * their sub-domain first (fullest-free sub-domain first, so the gang spans the fewest), and the
 * tail goes on the tightest node of the sub-domain being filled. With slices, step 2 is skipped
 * and step 4 runs per slice (members by name, slice-size at a time), each slice in the
 * best-fit domain of the slice level inside the scope. The committed scope is the gang's sticky
 * domain, tried first next time.
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "gang/gang_int.h"

struct pctx {
    struct gang_state *s;
    struct gang *g;
    struct gpod **e; /* eligible members, by name */
    int32_t *assign;
    uint32_t n_e;
    int ids[NRES]; /* resource id -> column, -1 */
    uint32_t u;
    int64_t *avail; /* n_nodes x u */
    uint8_t *usable;
    const struct gshape **tried;
    uint32_t n_tried;
    int32_t *rank;        /* per node inside a topology scope, NULL: all equal */
    const uint8_t *chunk; /* members step 4 may place (a slice), NULL: all */
    struct gdra_ctx *dra; /* the members' devices (dra.c), NULL when none has claims */
    int dra_off;          /* copies() counts resources only (a member pinned by its claims) */
};

#define SKIP (-2) /* assign: the restricted member that fits none of its candidates */

struct cand {
    int32_t node;
    int32_t rank;
    int64_t fits;
    const char *name;
};

static int cmp_pod(const void *a, const void *b)
{
    const struct gpod *x = *(struct gpod *const *)a, *y = *(struct gpod *const *)b;
    int c = strcmp(x->name, y->name);

    return c ? c : strcmp(x->uid, y->uid);
}

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;

    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->fits != y->fits)
        return x->fits > y->fits ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int64_t *av(const struct pctx *c, int32_t node)
{
    return c->avail + (size_t)node * c->u;
}

/* copies of shape sh that fit on node (capped at cap), 0 when it does not match */
static int64_t copies(const struct pctx *c, const struct gshape *sh, int32_t node, int64_t cap)
{
    const int64_t *a;
    int64_t f = cap;

    if (!c->usable[node] || fit_static(sh, c->s->nodes[node]) ||
        pipeline_node_fit(c->s, sh, c->s->nodes[node]))
        return 0;
    a = av(c, node);
    for (uint32_t i = 0; i < sh->n_req && f > 0; i++) {
        int64_t v = sh->req[i].v, q;
        if (v <= 0)
            continue;
        q = a[c->ids[sh->req[i].id]];
        q = q > 0 ? q / v : 0;
        if (q < f)
            f = q;
    }
    if (c->dra && !c->dra_off && f > 0)
        f = gdra_cap(c->dra, sh, node, f);
    return f;
}

static void consume(struct pctx *c, uint32_t e, int32_t node)
{
    const struct gshape *sh = c->e[e]->shape;
    int64_t *a = av(c, node);

    for (uint32_t i = 0; i < sh->n_req; i++)
        a[c->ids[sh->req[i].id]] -= sh->req[i].v;
    c->assign[e] = node;
    if (c->dra)
        gdra_assign(c->dra, e, node, 1);
}

static uint32_t find_e(const struct pctx *c, const struct gpod *p)
{
    for (uint32_t i = 0; i < c->n_e; i++)
        if (c->e[i] == p)
            return i;
    return UINT32_MAX;
}

static int64_t shape_weight(const struct gshape *sh, int id)
{
    for (uint32_t i = 0; i < sh->n_req; i++)
        if (sh->req[i].id == id)
            return sh->req[i].v;
    return 0;
}

/* larger shapes first: extended resources, then cpu, then memory, then the key bytes */
static int cmp_shape(const struct gshape *a, const struct gshape *b)
{
    int64_t xa = 0, xb = 0;

    for (uint32_t i = 0; i < a->n_req; i++)
        if (a->req[i].id >= RES_FIRST_EXT)
            xa += a->req[i].v;
    for (uint32_t i = 0; i < b->n_req; i++)
        if (b->req[i].id >= RES_FIRST_EXT)
            xb += b->req[i].v;
    if (xa != xb)
        return xa > xb ? -1 : 1;
    if (shape_weight(a, RES_CPU) != shape_weight(b, RES_CPU))
        return shape_weight(a, RES_CPU) > shape_weight(b, RES_CPU) ? -1 : 1;
    if (shape_weight(a, RES_MEMORY) != shape_weight(b, RES_MEMORY))
        return shape_weight(a, RES_MEMORY) > shape_weight(b, RES_MEMORY) ? -1 : 1;
    if (a->key_len != b->key_len)
        return a->key_len < b->key_len ? -1 : 1;
    return memcmp(a->key, b->key, a->key_len);
}

/* the resource of sh with the fewest copies over the usable matching nodes */
static void shortage(const struct pctx *c, const struct gshape *sh, struct plan_out *out)
{
    int64_t best = INT64_MAX;
    int matched = 0;

    for (uint32_t i = 0; i < sh->n_req; i++) {
        int64_t total = 0, v = sh->req[i].v;
        if (v <= 0)
            continue;
        for (uint32_t n = 0; n < c->s->n_nodes; n++) {
            int64_t q;
            if (!c->usable[n] || fit_static(sh, c->s->nodes[n]))
                continue;
            matched = 1;
            q = av(c, (int32_t)n)[c->ids[sh->req[i].id]];
            total += q > 0 ? q / v : 0;
        }
        if (total < best) {
            best = total;
            out->short_res = sh->req[i].id;
        }
    }
    out->no_node = !matched;
}

/* step 4 for the unassigned members of shape sh; returns -1 when out of memory */
static int place_shape(struct pctx *c, const struct gshape *sh)
{
    uint32_t k = 0, nc = 0, j = 0, i = 0;
    struct cand *cs;

    for (uint32_t e = 0; e < c->n_e; e++)
        k += c->e[e]->shape == sh && c->assign[e] == -1 && (!c->chunk || c->chunk[e]);
    if (!k)
        return 0;
    cs = common_malloc((c->s->n_nodes ? c->s->n_nodes : 1) * sizeof(*cs));
    if (!cs)
        return -1;
    for (uint32_t n = 0; n < c->s->n_nodes; n++) {
        int64_t f = copies(c, sh, (int32_t)n, k);
        if (f > 0)
            cs[nc++] = (struct cand){(int32_t)n, c->rank ? c->rank[n] : 0, f, c->s->nodes[n]->name};
    }
    qsort(cs, nc, sizeof(*cs), cmp_cand);
    while (k > 0 && i < nc) {
        int32_t node;
        int64_t take;
        if (cs[i].fits >= k) {
            /* the tightest node of the same sub-domain holding all of the remainder, the first
             * in order among equals (without topology: the last run with fits >= k, first by
             * name inside it) */
            uint32_t best = i;
            for (uint32_t q = i + 1; q < nc && cs[q].rank == cs[i].rank; q++)
                if (cs[q].fits >= k && cs[q].fits < cs[best].fits)
                    best = q;
            node = cs[best].node;
            take = k;
        } else {
            node = cs[i].node;
            take = cs[i].fits;
            i++;
        }
        for (; j < c->n_e && take > 0; j++)
            if (c->e[j]->shape == sh && c->assign[j] == -1 && (!c->chunk || c->chunk[j])) {
                consume(c, j, node);
                take--;
                k--;
            }
        if (take > 0)
            break;
    }
    common_free(cs);
    return 0;
}

/* the largest shape among members not yet assigned (in chunk when set), NULL when none */
static const struct gshape *largest_open(const struct pctx *c)
{
    const struct gshape *best = NULL;

    for (uint32_t e = 0; e < c->n_e; e++)
        if (c->assign[e] == -1 && (!c->chunk || c->chunk[e]) &&
            (!best || cmp_shape(c->e[e]->shape, best) < 0))
            best = c->e[e]->shape;
    return best;
}

/* step 4: the members not yet assigned, each shape once, largest first. -1 out of memory */
static int place_rest(struct pctx *c)
{
    c->n_tried = 0;
    for (;;) {
        const struct gshape *next = NULL;
        for (uint32_t e = 0; e < c->n_e; e++) {
            const struct gshape *sh = c->e[e]->shape;
            int tried = 0;
            if (c->assign[e] != -1 || (c->chunk && !c->chunk[e]))
                continue;
            for (uint32_t t = 0; t < c->n_tried && !tried; t++)
                tried = c->tried[t] == sh;
            if (!tried && (!next || cmp_shape(sh, next) < 0))
                next = sh;
        }
        if (!next)
            return 0;
        c->tried[c->n_tried++] = next;
        if (place_shape(c, next))
            return -1;
    }
}

static void unconsume(struct pctx *c, uint32_t e)
{
    const struct gshape *sh = c->e[e]->shape;

    for (uint32_t k = 0; k < sh->n_req; k++)
        av(c, c->assign[e])[c->ids[sh->req[k].id]] += sh->req[k].v;
    if (c->dra)
        gdra_assign(c->dra, e, c->assign[e], -1);
    c->assign[e] = -1;
}

/* pods of shape sh that fit per node (usable nodes only), capped at cap */
static void caps_of(const struct pctx *c, const struct gshape *sh, int64_t cap, int64_t *out)
{
    for (uint32_t n = 0; n < c->s->n_nodes; n++)
        out[n] = sh ? copies(c, sh, (int32_t)n, cap) : 0;
}

/*
 * slices: members by name, slice_size at a time, each slice in the best-fit domain of the
 * slice level inside scope. Returns -1 out of memory, else 0 (members of a slice that found
 * no domain stay unassigned).
 */
static int place_slices(struct pctx *c, const struct plan_scopes *ps, const struct topo_scope *sc,
                        int64_t *cap, uint8_t *chunk, uint8_t *mask)
{
    uint32_t e = 0;
    struct common_error err;

    while (e < c->n_e) {
        uint32_t got = 0;
        const struct gshape *sh;
        int32_t d;
        struct topo_scope sub;
        memset(chunk, 0, c->n_e);
        for (; e < c->n_e && got < (uint32_t)ps->want.slice_size; e++)
            if (c->assign[e] == -1) {
                chunk[e] = 1;
                got++;
            }
        if (!got)
            break;
        c->chunk = chunk;
        sh = largest_open(c);
        caps_of(c, sh, got, cap);
        d = topo_best_domain(&ps->dom, ps->want.slice, sc, cap, got);
        if (d == -2) {
            c->chunk = NULL;
            return -1;
        }
        if (d < 0) {
            c->chunk = NULL;
            continue; /* this slice fits nowhere: its members stay unassigned */
        }
        sub = (struct topo_scope){ps->want.slice, d, 0};
        memcpy(mask, c->usable, c->s->n_nodes);
        for (uint32_t n = 0; n < c->s->n_nodes; n++)
            c->usable[n] = c->usable[n] && topo_in_scope(&ps->dom, &sub, n);
        if (topo_node_rank(&ps->dom, &sub, ps->pack_levels, cap, c->rank, &err) || place_rest(c)) {
            c->chunk = NULL;
            return -1;
        }
        /* a slice is whole or not at all */
        for (uint32_t k = 0; k < c->n_e; k++)
            if (chunk[k] && c->assign[k] < 0)
                for (uint32_t j = 0; j < c->n_e; j++)
                    if (chunk[j] && c->assign[j] >= 0)
                        unconsume(c, j);
        memcpy(c->usable, mask, c->s->n_nodes);
        c->chunk = NULL;
    }
    return 0;
}

/*
 * one attempt inside scope sc: steps 1-4 (or slices). Returns -1 out of memory, else 0 with
 * *failed_shape set when some member could not go where it had to.
 */
/* 1 when node n may take member e as the current request allows (the restricted member stays
 * on its candidates; a member whose claims are allocated stays on their node) */
static int may_move(const struct pctx *c, const struct plan_req *rq, uint32_t e, int32_t n)
{
    int32_t pin = gdra_pin(c->dra, e);
    if (pin != -1)
        return pin == n;
    if (rq && rq->pin && c->e[e] == rq->pin)
        return rq->pin_node == n;
    if (rq && rq->restrict_pod && c->e[e] == rq->restrict_pod) {
        for (size_t i = 0; i < rq->n_cands; i++)
            if (rq->cands[i] == n)
                return 1;
        return 0;
    }
    return 1;
}

/*
 * step 5: members sharing a ResourceClaim go to one node when they can (its owner's, else a
 * sharer's), since a device of a node's own slice is reachable from that node alone
 * (gdra_verify refuses a plan that splits them over such a device). -1 out of memory.
 */
static int colocate(struct pctx *c, const struct plan_req *rq)
{
    int32_t *was;

    if (!c->dra)
        return 0;
    if (!(was = common_malloc(((size_t)c->n_e + 1) * sizeof(*was))))
        return -1;
    for (uint32_t o = 0; o < c->n_e; o++) {
        int split = 0, done = 0;
        if (c->assign[o] < 0)
            continue;
        for (uint32_t e = 0; e < c->n_e; e++)
            split |=
                gdra_owner(c->dra, e) == o && c->assign[e] >= 0 && c->assign[e] != c->assign[o];
        if (!split)
            continue;
        /* candidate nodes: the owner's, then each sharer's */
        for (uint32_t t = o; t < c->n_e && !done; t++) {
            int32_t n;
            int ok = 1;
            if (t != o && gdra_owner(c->dra, t) != o)
                continue;
            if ((n = c->assign[t]) < 0 || (t != o && n == c->assign[o]))
                continue;
            for (uint32_t e = 0; e < c->n_e; e++) {
                was[e] = c->assign[e];
                if ((e == o || gdra_owner(c->dra, e) == o) && c->assign[e] >= 0 &&
                    c->assign[e] != n)
                    unconsume(c, e);
            }
            for (uint32_t e = 0; e < c->n_e && ok; e++)
                if ((e == o || gdra_owner(c->dra, e) == o) && was[e] >= 0 && c->assign[e] == -1) {
                    ok = may_move(c, rq, e, n) && copies(c, c->e[e]->shape, n, 1) >= 1;
                    if (ok)
                        consume(c, e, n);
                }
            if (ok) {
                done = 1;
                continue;
            }
            /* undo: back where they were */
            for (uint32_t e = 0; e < c->n_e; e++)
                if (c->assign[e] != was[e] && c->assign[e] >= 0)
                    unconsume(c, e);
            for (uint32_t e = 0; e < c->n_e; e++)
                if (was[e] >= 0 && c->assign[e] == -1)
                    consume(c, e, was[e]);
        }
    }
    common_free(was);
    return 0;
}

static int plan_try(struct pctx *c, const struct plan_req *rq, const struct plan_scopes *ps,
                    const struct topo_scope *sc, int64_t *cap, uint8_t *chunk, uint8_t *mask,
                    const struct gshape **failed_shape, struct plan_out *out)
{
    struct gang_state *s = c->s;
    struct gang *g = c->g;
    int slices = ps->topo && ps->want.slice >= 0;
    struct common_error err;

    if (ps->topo && topo_node_rank(&ps->dom, sc, ps->pack_levels, cap, c->rank, &err))
        return -1;
    /* 1. pin */
    if (rq && rq->pin && !slices) {
        uint32_t e = find_e(c, rq->pin);
        if (e == UINT32_MAX)
            return 1;
        int32_t pin = c->dra ? gdra_pin(c->dra, e) : -1;
        int ok;
        /* a member whose claims are allocated has its devices there: resources only */
        c->dra_off = pin != -1;
        ok = rq->pin_node >= 0 && (pin < 0 || pin == rq->pin_node) &&
             copies(c, rq->pin->shape, rq->pin_node, 1) >= 1;
        c->dra_off = 0;
        if (!ok) {
            *failed_shape = rq->pin->shape;
            return 0;
        }
        consume(c, e, rq->pin_node);
    }
    /* 1b. members whose claims are allocated go to the allocation's node (devices are theirs) */
    for (uint32_t e = 0; c->dra && e < c->n_e; e++) {
        int32_t pin = gdra_pin(c->dra, e);
        int ok;
        if (pin == -1 || c->assign[e] != -1)
            continue;
        c->dra_off = 1;
        ok = pin >= 0 && copies(c, c->e[e]->shape, pin, 1) >= 1;
        c->dra_off = 0;
        if (ok) {
            consume(c, e, pin);
        } else {
            c->assign[e] = SKIP;
            *failed_shape = c->e[e]->shape;
            set_why(out->why,
                    "pod %s/%s: its ResourceClaims are allocated on a node that has no room for "
                    "it or that trainsched does not know",
                    c->e[e]->ns, c->e[e]->name);
        }
    }
    /* 2. sticky */
    for (uint32_t e = 0; e < c->n_e && !slices; e++) {
        int32_t old = c->e[e]->planned;
        if (c->assign[e] < 0 && old >= 0 && copies(c, c->e[e]->shape, old, 1) >= 1)
            consume(c, e, old);
    }
    if (slices) {
        if (place_slices(c, ps, sc, cap, chunk, mask))
            return -1;
        if (rq && rq->pin) {
            uint32_t e = find_e(c, rq->pin);
            if (e == UINT32_MAX)
                return 1;
            if (c->assign[e] != rq->pin_node) {
                *failed_shape = rq->pin->shape;
                return 0;
            }
        }
    }
    /* 3. restricted member on one of its candidates */
    if (rq && rq->restrict_pod) {
        uint32_t e = find_e(c, rq->restrict_pod);
        int32_t best = -1;
        uint32_t best_sib = 0;
        int64_t best_fits = 0;
        if (e == UINT32_MAX)
            return 1;
        if (c->assign[e] >= 0) {
            int in = 0;
            for (size_t i = 0; i < rq->n_cands && !in; i++)
                in = rq->cands[i] == c->assign[e];
            if (!in) /* sticky put it where the scheduler cannot: take it back */
                unconsume(c, e);
        }
        for (size_t i = 0; i < rq->n_cands && c->assign[e] == -1 && !slices; i++) {
            int32_t n = rq->cands[i];
            int64_t f;
            uint32_t sib;
            if (n < 0)
                continue;
            f = copies(c, c->e[e]->shape, n, INT64_MAX);
            if (f < 1)
                continue;
            sib = imap_get(&g->place, (uint32_t)n);
            /* most siblings, then the packing order of the scope (topology), then the
             * tightest fit, then the name */
            if (best < 0 || sib > best_sib || (sib == best_sib && c->rank[n] < c->rank[best]) ||
                (sib == best_sib && c->rank[n] == c->rank[best] && f < best_fits) ||
                (sib == best_sib && c->rank[n] == c->rank[best] && f == best_fits &&
                 strcmp(s->nodes[n]->name, s->nodes[best]->name) < 0)) {
                best = n;
                best_sib = sib;
                best_fits = f;
            }
        }
        if (c->assign[e] == -1 && best >= 0) {
            consume(c, e, best);
        } else if (c->assign[e] < 0) {
            /* no candidate has room: the gang may still complete without it (a member beyond
             * minMember); it must not be planned off its candidates */
            c->assign[e] = SKIP;
            out->pod_unplaced = 1;
            *failed_shape = c->e[e]->shape;
        }
    }
    /* 4. the rest, each shape once, largest first */
    if (!slices && place_rest(c))
        return -1;
    /* 5. members sharing a claim together */
    if (!slices && colocate(c, rq))
        return -1;
    return 0;
}

int plan_gang(struct gang_state *s, struct gang *g, const struct plan_req *rq, struct plan_out *out)
{
    struct pctx c;
    struct plan_scopes ps;
    int rc = -1, won = -1;
    size_t rounds;
    uint32_t placed = 0, n_new = 0;
    int64_t need, need_new, *avail0 = NULL, *cap = NULL;
    uint8_t *usable0 = NULL, *chunk = NULL, *mask = NULL;
    const struct gshape *failed_shape = NULL;
    size_t av_bytes;

    memset(out, 0, sizeof(*out));
    memset(&ps, 0, sizeof(ps));
    out->short_res = -1;
    memset(&c, 0, sizeof(c));
    c.s = s;
    c.g = g;
    need = (int64_t)g->min_member - g->c.bound - g->c.released - g->c.done;
    out->need = need > 0 ? (uint32_t)need : 0;
    for (int i = 0; i < NRES; i++)
        c.ids[i] = -1;
    c.e = common_malloc((g->n_members ? g->n_members : 1) * sizeof(*c.e));
    c.assign = common_malloc((g->n_members ? g->n_members : 1) * sizeof(*c.assign));
    c.tried = common_malloc((g->n_members ? g->n_members : 1) * sizeof(*c.tried));
    chunk = common_malloc(g->n_members ? g->n_members : 1);
    if (!c.e || !c.assign || !c.tried || !chunk)
        goto out;
    for (uint32_t i = 0; i < g->n_members; i++) {
        struct gpod *p = g->members[i];
        if (!(p->a_flags & F_ELIGIBLE))
            continue;
        if (rq && rq->ungate && (p->gates & ~COMMON_GATE_TRAINSCHED))
            continue; /* held by another gate: it does not come yet */
        c.assign[c.n_e] = -1;
        c.e[c.n_e++] = p;
        for (uint32_t k = 0; k < p->shape->n_req; k++)
            if (c.ids[p->shape->req[k].id] < 0)
                c.ids[p->shape->req[k].id] = (int)c.u++;
    }
    qsort(c.e, c.n_e, sizeof(*c.e), cmp_pod);
    if (gdra_begin(s, g, c.e, c.n_e, &c.dra))
        goto out;
    av_bytes = (size_t)(s->n_nodes ? s->n_nodes : 1) * (c.u ? c.u : 1) * sizeof(int64_t);
    c.avail = common_calloc(1, av_bytes);
    avail0 = common_malloc(av_bytes);
    c.usable = common_calloc(s->n_nodes ? s->n_nodes : 1, 1);
    usable0 = common_malloc(s->n_nodes ? s->n_nodes : 1);
    mask = common_malloc(s->n_nodes ? s->n_nodes : 1);
    cap = common_calloc(s->n_nodes ? s->n_nodes : 1, sizeof(*cap));
    c.rank = common_calloc(s->n_nodes ? s->n_nodes : 1, sizeof(*c.rank));
    if (!c.avail || !avail0 || !c.usable || !usable0 || !mask || !cap || !c.rank)
        goto out;
    for (uint32_t n = 0; n < s->n_nodes; n++) {
        const struct gnode *nd = s->nodes[n];
        int64_t *a = av(&c, (int32_t)n);
        if (!nd || !nd->present)
            continue;
        c.usable[n] = 1;
        for (int id = 0; id < NRES; id++)
            if (c.ids[id] >= 0)
                a[c.ids[id]] = nd->alloc[id] - nd->used[id] - nd->resv[id];
    }
    for (uint32_t i = 0; i < g->n_excl && !(rq && rq->dry_run); i++)
        if (g->excl[i] >= 0 && (uint32_t)g->excl[i] < s->n_nodes)
            c.usable[g->excl[i]] = 0;
    /* a dry run: the freed pods' requests return to their nodes */
    for (size_t i = 0; rq && rq->dry_run && i < rq->n_freed; i++) {
        const struct gpod *p = rq->freed[i];
        if (p->a_used < 0)
            continue;
        for (uint32_t k = 0; k < p->n_req; k++)
            if (c.ids[p->req[k].id] >= 0)
                av(&c, p->a_used)[c.ids[p->req[k].id]] += p->req[k].v;
    }
    /* this gang's own reserved plan is capacity it may rearrange */
    for (uint32_t e = 0; e < c.n_e; e++) {
        const struct gpod *p = c.e[e];
        if (p->a_resv < 0)
            continue;
        for (uint32_t k = 0; k < p->n_req; k++)
            av(&c, p->a_resv)[c.ids[p->req[k].id]] += p->req[k].v;
    }
    memcpy(avail0, c.avail, av_bytes);
    memcpy(usable0, c.usable, s->n_nodes ? s->n_nodes : 1);
    /* the scopes: pods still to place, and how many of the largest shape fit per node */
    need_new = need - (int64_t)g->c.held;
    if (need_new < 0)
        need_new = 0;
    if (pipeline_reads_capacity(g))
        caps_of(&c, largest_open(&c), c.n_e ? c.n_e : 1, cap);
    if (pipeline_scopes(s, g, cap, need_new, &ps))
        goto out;
    if (!ps.n) {
        set_why(out->why, "%s", ps.why);
        out->placed = g->c.held;
        goto fail_e;
    }
    rounds = c.dra ? gdra_rounds(c.dra) : 1;
    if (!rounds) {
        set_why(out->why, "%s", gdra_why(c.dra));
        out->placed = g->c.held;
        goto fail_e;
    }
    /* one round per value of the gang's DRA match attribute (else one), each over the scopes */
    for (size_t it = 0; it < rounds * ps.n && won < 0; it++) {
        size_t k = it % ps.n, rd = it / ps.n;
        const struct topo_scope *sc = &ps.list[k];
        int held_out = 0, r;
        if (c.dra)
            gdra_round(c.dra, rd);
        for (uint32_t i = 0; i < g->n_members && ps.topo && sc->level >= 0; i++)
            held_out |= g->members[i]->held >= 0 &&
                        !topo_in_scope(&ps.dom, sc, (uint32_t)g->members[i]->held);
        if (held_out)
            continue;
        memcpy(c.avail, avail0, av_bytes);
        for (uint32_t n = 0; n < s->n_nodes; n++)
            c.usable[n] = usable0[n] && (!ps.topo || topo_in_scope(&ps.dom, sc, n));
        for (uint32_t e = 0; e < c.n_e; e++)
            c.assign[e] = -1;
        failed_shape = NULL;
        out->pod_unplaced = 0;
        r = plan_try(&c, rq, &ps, sc, cap, chunk, mask, &failed_shape, out);
        if (r < 0)
            goto out;
        if (r > 0)
            goto fail_e;
        placed = g->c.held;
        n_new = 0;
        for (uint32_t e = 0; e < c.n_e; e++)
            if (c.assign[e] >= 0) {
                placed++;
                n_new++;
            }
        if ((int64_t)placed >= need && !(failed_shape && rq && rq->pin)) {
            int v = c.dra ? gdra_verify(c.dra, c.assign) : 0;
            if (v < 0)
                goto out;
            if (!v)
                won = (int)k;
        }
    }
    /* the preemption path (plan_req.partial): with no topology scope to keep, what fits is
     * committed and the rest waits for kube-scheduler's preemption */
    if (won < 0 && !ps.topo && ps.n == 1 && (int64_t)placed < need && rq && rq->partial &&
        !out->pod_unplaced && !rq->dry_run) {
        won = 0;
        out->partial = 1; /* commit what fits */
    }
    if (won < 0) {
        if (!failed_shape)
            for (uint32_t e = 0; e < c.n_e && !failed_shape; e++)
                if (c.assign[e] < 0)
                    failed_shape = c.e[e]->shape;
        if (ps.topo && ps.want.required >= 0 && ps.want.preferred < 0 && !(rq && rq->pin)) {
            char r[GANG_REASON_MAX];
            topo_wait_reason(&ps.dom, ps.t->levels[ps.want.required], ps.want.required, cap,
                             need_new, r, sizeof(r));
            set_why(out->why, "required topology: %s", r);
        }
        goto fail;
    }
    out->placed = placed;
    if (rq && rq->dry_run) {
        out->ok = 1;
        rc = 0;
        goto out;
    }
    /* commit */
    if (imap_reserve(&g->place, n_new))
        goto out;
    for (uint32_t e = 0; e < c.n_e; e++) {
        struct gpod *p = c.e[e];
        int32_t to = c.assign[e] >= 0 ? c.assign[e] : -1;
        if (p->planned == to)
            continue;
        pod_detach(s, p);
        p->planned = to;
        pod_attach(s, p);
    }
    if (c.dra && gdra_commit(c.dra, c.assign))
        goto out;
    if (g->active)
        s->resv_epoch++;
    g->plan_valid = 1;
    g->plan_epoch = s->resv_epoch;
    g->dom_level = ps.list[won].level;
    set_why(g->dom_path, "%s",
            ps.topo && ps.list[won].level >= 0 ? ps.dom.path[ps.list[won].domain] : "");
    out->ok = 1;
    node_gc(s);
    rc = 0;
    goto out;
fail:
    out->placed = g->c.held;
    for (uint32_t e = 0; e < c.n_e; e++)
        out->placed += c.assign[e] >= 0;
    if (c.dra && !out->why[0])
        gdra_fail_why(c.dra, out->placed, out->need, out->why);
    if (failed_shape)
        shortage(&c, failed_shape, out);
fail_e:
    out->ok = 0;
    rc = 0;
out:
    gdra_end(c.dra);
    pipeline_scopes_free(&ps);
    common_free(c.e);
    common_free(c.assign);
    common_free(c.tried);
    common_free(c.avail);
    common_free(c.usable);
    common_free(c.rank);
    common_free(avail0);
    common_free(usable0);
    common_free(mask);
    common_free(cap);
    common_free(chunk);
    return rc;
}
