/*
 * gang/dra.c - the DRA policy of the placement pipeline: a gang is planned with its devices.
 *
 * The view (gang_dra_set) gives every pod's ResourceClaims and the cluster's devices
 * (dra/view.h). While plan.c places members, a node takes a member only while the member's
 * unallocated claims can be allocated there with the devices other gangs hold or plan and the
 * devices given to the members already placed there (gdra_cap; per pod shape, the first member
 * of the shape stands for all); when the resources fit, every member's claims are allocated on
 * its node together, in member order (gdra_verify), so the plan holds only when all of them
 * fit at once. A gang whose PodGroup carries GANG_DRA_MATCH_ANNOTATION is planned once per
 * value of that attribute (sorted), with only the devices carrying the value, until one places
 * the whole gang. A member whose claims are already allocated (by kube-scheduler's PreBind, by
 * trainsched, before a restart) is pinned to the allocation's node and its devices are in use
 * for everyone through the snapshot. Reasons name the claim, the request and the counts.
 */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "gang/gang_int.h"

#define CAP_MAX DRA_MAX_RESULTS /* copies of a claim set counted per node, at most */

struct mem {
    const struct dra_pod_claims *pc;
    /* claims not yet allocated that this member allocates: un[0..n_cap) its own, then the
     * claims it shares with later members (it is their owner: the first member naming them) */
    const struct dra_claim **un;
    size_t n_un, n_cap;
    /* claims not yet allocated that an earlier member owns: allocated once, by the owner */
    const struct dra_claim **follow;
    uint32_t *owner; /* per follow[]: the member index of its owner */
    size_t n_follow;
    int32_t pin; /* -1 none, -2 unknown node, else the slot of the allocation's node */
};

struct scap {
    const struct gshape *sh;
    uint32_t rep;
    int32_t *cap; /* per node, -1 unknown */
};

struct gdra_ctx {
    struct gang_state *s;
    struct gang *g;
    struct gpod *const *e;
    uint32_t n_e;
    struct common_arena *a;
    struct mem *m;
    struct dra_result *base; /* devices other gangs hold or plan, and this gang's held */
    size_t n_base;
    const struct dra_attr **vals;
    size_t n_vals;
    const char *mdom, *mname;
    size_t round;
    struct scap *sc;
    size_t n_sc;
    int32_t *assigned;            /* per node: members with claims placed there in this attempt */
    struct dra_claim_alloc **res; /* per member: verified results */
    int verified;
    int limited;                    /* the devices cut some node's room for a member */
    char why[GANG_REASON_MAX];      /* an error that no node can fix (class, CEL, limits) */
    char conflict[GANG_REASON_MAX]; /* the first node's reason a member's claims did not fit */
    char shared[GANG_REASON_MAX];   /* why members sharing a claim could not share a node */
    struct common_arena *scratch;   /* node_copies' memory (scratch()) */
    uint32_t scratch_uses;
};

void gdra_free(struct gdra *d)
{
    if (!d)
        return;
    common_arena_destroy(d->a);
    common_free(d);
}

void gang_dra_set(struct gang_state *s, const struct dra_view *v)
{
    s->dra = v;
    s->resv_epoch++; /* plans that are not reserved are made again with the new devices */
    s->ug_all = 1;   /* claims or devices changed: gated gangs may be placeable now */
}

static const struct dra_pod_claims *claims_of(const struct gang_state *s, const struct gpod *p)
{
    return s->dra ? dra_view_pod(s->dra, p->uid) : NULL;
}

/* 1 when every claim of pc is known and allocated */
static int all_allocated(const struct dra_pod_claims *pc)
{
    for (size_t i = 0; i < pc->n_refs; i++)
        if (!pc->refs[i].claim || !pc->refs[i].claim->is_allocated)
            return 0;
    return pc->n_refs > 0;
}

/* a pod's planned devices count while they are planned or held where planned, and its claims
 * are not allocated yet (then the snapshot has the real ones) */
static int counts(const struct gang_state *s, const struct gpod *p)
{
    const struct dra_pod_claims *pc;
    if (!p->dra || (p->held != p->dra->node && p->planned != p->dra->node))
        return 0;
    pc = claims_of(s, p);
    return pc && !all_allocated(pc);
}

static int add_base(struct gdra_ctx *d, const struct gpod *p, size_t *cap)
{
    for (size_t i = 0; i < p->dra->n_claims; i++)
        for (size_t k = 0; k < p->dra->claims[i].n_results; k++) {
            if (d->n_base == *cap) {
                size_t nc = *cap ? *cap * 2 : 64;
                struct dra_result *nb = common_arena_alloc(d->a, nc * sizeof(*nb));
                if (!nb)
                    return -1;
                if (d->n_base)
                    memcpy(nb, d->base, d->n_base * sizeof(*nb));
                d->base = nb;
                *cap = nc;
            }
            d->base[d->n_base++] = p->dra->claims[i].results[k];
        }
    return 0;
}

static int split_attr(struct common_arena *a, const char *q, const char **dom, const char **name)
{
    const char *slash = strchr(q, '/');
    if (!slash || slash == q || !slash[1])
        return -1;
    *dom = common_arena_strndup(a, q, (size_t)(slash - q));
    *name = common_arena_strdup(a, slash + 1);
    return *dom && *name ? 0 : -1;
}

/* a value of an attribute as text, for reasons */
static const char *attr_text(const struct dra_attr *at, char *buf, size_t size)
{
    switch (at->type) {
    case DRA_ATTR_INT:
        snprintf(buf, size, "%lld", (long long)at->i);
        return buf;
    case DRA_ATTR_BOOL:
        return at->b ? "true" : "false";
    default:
        snprintf(buf, size, "\"%s\"", at->s ? at->s : "");
        return buf;
    }
}

/*
 * The gang asks one value of d->mdom/d->mname and some members' claims are allocated already
 * (pinned): their devices decide the value. Only that value's round is kept; devices without
 * the attribute or with two values among them make the gang wait with a reason (d->why).
 */
static void pinned_value(struct gdra_ctx *d)
{
    const struct dra_attr *pv = NULL;
    const char *pv_where = NULL;
    char b1[128], b2[128];

    for (uint32_t i = 0; i < d->n_e; i++) {
        const struct mem *m = &d->m[i];
        if (m->pin == -1 || !m->pc)
            continue;
        for (size_t k = 0; k < m->pc->n_refs; k++) {
            const struct dra_claim *c = m->pc->refs[k].claim;
            if (!c || !c->is_allocated)
                continue;
            for (size_t r = 0; r < c->n_allocated; r++) {
                const struct dra_attr *at = dra_device_attr(d->s->dra->ix, c->alloc_node,
                                                            &c->allocated[r], d->mdom, d->mname);
                if (!at) {
                    set_why(d->why,
                            "PodGroup %s asks that its devices agree on %s, but claim %s/%s of "
                            "pod %s/%s is allocated with device %s/%s, which has no such "
                            "attribute",
                            d->g->key, d->g->dra_match, c->ns, c->name, d->e[i]->ns, d->e[i]->name,
                            c->allocated[r].pool, c->allocated[r].device);
                    return;
                }
                if (!pv) {
                    pv = at;
                    pv_where = c->name;
                } else if (!dra_attr_equal(pv, at)) {
                    set_why(d->why,
                            "PodGroup %s asks that its devices agree on %s, but its allocated "
                            "claims already differ: %s in claim %s, %s in claim %s/%s",
                            d->g->key, d->g->dra_match, attr_text(pv, b1, sizeof(b1)), pv_where,
                            attr_text(at, b2, sizeof(b2)), c->ns, c->name);
                    return;
                }
            }
        }
    }
    if (!pv)
        return;
    for (size_t v = 0; v < d->n_vals; v++)
        if (dra_attr_equal(d->vals[v], pv)) {
            d->vals = &d->vals[v];
            d->n_vals = 1;
            return;
        }
    set_why(d->why,
            "PodGroup %s asks that its devices agree on %s; its allocated claims hold %s, which "
            "no usable device has any more",
            d->g->key, d->g->dra_match, attr_text(pv, b1, sizeof(b1)));
}

struct cref {
    const struct dra_claim *c;
    uint32_t member;
};

static int cref_cmp(const void *x, const void *y)
{
    const struct cref *a = x, *b = y;
    if (a->c != b->c)
        return (uintptr_t)a->c < (uintptr_t)b->c ? -1 : 1;
    return a->member < b->member ? -1 : a->member > b->member;
}

/* the first member (by index) whose un names claim c, UINT32_MAX when only one does */
static uint32_t first_sharer(const struct cref *r, size_t n, const struct dra_claim *c,
                             uint32_t member, int *later)
{
    size_t lo = 0, hi = n;
    *later = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)r[mid].c < (uintptr_t)c)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo + 1 >= n || r[lo + 1].c != c)
        return UINT32_MAX; /* named by one member only */
    for (size_t k = lo; k < n && r[k].c == c; k++)
        *later |= r[k].member > member;
    return r[lo].member;
}

/*
 * A claim named by several members (resourceClaimName in each, or any other way to one claim)
 * is planned and allocated once, by its owner (the first member naming it); the others follow
 * it. Each member's un becomes its own claims, then the shared ones it owns (n_cap counts its
 * own: the per-node room of a shape counts those alone).
 */
static int share_claims(struct gdra_ctx *d)
{
    struct cref *r;
    size_t n = 0, dup = 0;

    for (uint32_t i = 0; i < d->n_e; i++)
        n += d->m[i].n_un;
    if (n < 2)
        return 0;
    if (!(r = common_arena_alloc(d->a, n * sizeof(*r))))
        return -1;
    n = 0;
    for (uint32_t i = 0; i < d->n_e; i++)
        for (size_t k = 0; k < d->m[i].n_un; k++)
            r[n++] = (struct cref){d->m[i].un[k], i};
    qsort(r, n, sizeof(*r), cref_cmp);
    for (size_t k = 1; k < n && !dup; k++)
        dup = r[k].c == r[k - 1].c;
    if (!dup)
        return 0;
    for (uint32_t i = 0; i < d->n_e; i++) {
        struct mem *m = &d->m[i];
        const struct dra_claim **own, **shared;
        size_t n_own = 0, n_shared = 0;
        if (!m->n_un)
            continue;
        own = common_arena_alloc(d->a, (m->n_un + 1) * sizeof(*own));
        shared = common_arena_alloc(d->a, (m->n_un + 1) * sizeof(*shared));
        m->follow = common_arena_alloc(d->a, (m->n_un + 1) * sizeof(*m->follow));
        m->owner = common_arena_alloc(d->a, (m->n_un + 1) * sizeof(*m->owner));
        if (!own || !shared || !m->follow || !m->owner)
            return -1;
        for (size_t k = 0; k < m->n_un; k++) {
            int later;
            uint32_t first = first_sharer(r, n, m->un[k], i, &later);
            if (first == UINT32_MAX) {
                own[n_own++] = m->un[k];
            } else if (first < i) {
                m->follow[m->n_follow] = m->un[k];
                m->owner[m->n_follow++] = first;
            } else {
                shared[n_shared++] = m->un[k];
            }
        }
        memcpy(own + n_own, shared, n_shared * sizeof(*own));
        m->un = own;
        m->n_un = n_own + n_shared;
        m->n_cap = n_own;
    }
    return 0;
}

uint32_t gdra_owner(const struct gdra_ctx *d, uint32_t e)
{
    return d && d->m[e].pc && d->m[e].n_follow ? d->m[e].owner[0] : UINT32_MAX;
}

/*
 * After every member's claims are allocated: a member that follows a shared claim must reach
 * its devices from its own node. A device of a node's own slice (spec.nodeName) is reachable
 * from that node alone, so then every member sharing the claim must be on the owner's node.
 * 0 ok, 1 not (d->conflict names the claim, the pods and the node).
 */
static int shared_reachable(struct gdra_ctx *d, const int32_t *assign)
{
    for (uint32_t i = 0; i < d->n_e; i++) {
        const struct mem *m = &d->m[i];
        for (size_t f = 0; f < m->n_follow; f++) {
            uint32_t o = m->owner[f];
            const struct mem *om = &d->m[o];
            size_t k = om->n_cap;
            if (assign[i] < 0 || assign[o] < 0 || assign[i] == assign[o] || !d->res[o])
                continue;
            while (k < om->n_un && om->un[k] != m->follow[f])
                k++;
            if (k == om->n_un)
                continue;
            for (size_t r = 0; r < d->res[o][k].n_results; r++) {
                const struct dra_result *x = &d->res[o][k].results[r];
                if (!dra_device_node_local(d->s->dra->ix, d->s->nodes[assign[o]]->name, x))
                    continue;
                set_why(d->shared,
                        "claim %s/%s is shared by pods %s/%s and %s/%s; its device %s/%s is "
                        "local to node %s, so every pod sharing it must run there",
                        m->follow[f]->ns, m->follow[f]->name, d->e[o]->ns, d->e[o]->name,
                        d->e[i]->ns, d->e[i]->name, x->pool, x->device,
                        d->s->nodes[assign[o]]->name);
                d->limited = 1;
                return 1;
            }
        }
    }
    return 0;
}

int gdra_begin(struct gang_state *s, struct gang *g, struct gpod *const *e, uint32_t n_e,
               struct gdra_ctx **out)
{
    struct gdra_ctx *d;
    int any = 0;
    size_t cap = 0;
    struct common_error err;

    *out = NULL;
    if (!s->dra)
        return 0;
    for (uint32_t i = 0; i < n_e && !any; i++)
        any = claims_of(s, e[i]) != NULL;
    if (!any)
        return 0;
    d = common_calloc(1, sizeof(*d));
    if (!d || !(d->a = common_arena_create((size_t)1 << 30)))
        goto oom;
    d->s = s;
    d->g = g;
    d->e = e;
    d->n_e = n_e;
    d->m = common_arena_alloc(d->a, (n_e + 1) * sizeof(*d->m));
    d->assigned = common_arena_alloc(d->a, ((size_t)s->n_nodes + 1) * sizeof(*d->assigned));
    d->res = common_arena_alloc(d->a, (n_e + 1) * sizeof(*d->res));
    d->sc = common_arena_alloc(d->a, (n_e + 1) * sizeof(*d->sc));
    if (!d->m || !d->assigned || !d->res || !d->sc)
        goto oom;
    memset(d->assigned, 0, ((size_t)s->n_nodes + 1) * sizeof(*d->assigned));
    for (uint32_t i = 0; i < n_e; i++) {
        struct mem *m = &d->m[i];
        memset(m, 0, sizeof(*m));
        d->res[i] = NULL;
        m->pin = -1;
        m->pc = claims_of(s, e[i]);
        if (!m->pc)
            continue;
        if (!(m->un = common_arena_alloc(d->a, (m->pc->n_refs + 1) * sizeof(*m->un))))
            goto oom;
        for (size_t k = 0; k < m->pc->n_refs; k++) {
            const struct dra_claim *c = m->pc->refs[k].claim;
            if (!c)
                continue; /* the gate waits for it */
            if (!c->is_allocated) {
                m->un[m->n_un++] = c;
            } else if (m->pin == -1 && c->alloc_node) {
                /* an allocation without a node (allNodes devices) is reachable anywhere */
                m->pin = node_slot_find(s, c->alloc_node);
                if (m->pin < 0 || !s->nodes[m->pin]->present)
                    m->pin = -2;
            }
        }
    }
    for (uint32_t i = 0; i < n_e; i++)
        d->m[i].n_cap = d->m[i].n_un;
    if (share_claims(d))
        goto oom;
    /* devices held or planned by other active gangs, and by this gang's held members */
    for (uint32_t i = 0; i < s->n_active; i++) {
        const struct gang *o = s->active[i];
        for (uint32_t k = 0; k < o->n_members; k++) {
            const struct gpod *p = o->members[k];
            if (o == g && p->held < 0)
                continue;
            if (counts(s, p) && add_base(d, p, &cap))
                goto oom;
        }
    }
    if (!g->active)
        for (uint32_t k = 0; k < g->n_members; k++)
            if (g->members[k]->held >= 0 && counts(s, g->members[k]) &&
                add_base(d, g->members[k], &cap))
                goto oom;
    if (g->dra_match) {
        if (split_attr(d->a, g->dra_match, &d->mdom, &d->mname)) {
            set_why(d->why,
                    "PodGroup %s: annotation %s: \"%s\" is not a qualified attribute name "
                    "(domain/name)",
                    g->key, GANG_DRA_MATCH_ANNOTATION, g->dra_match);
        } else if (dra_attr_values(d->a, s->dra->ix, d->mdom, d->mname, &d->vals, &d->n_vals,
                                   &err)) {
            goto oom;
        } else if (!d->n_vals) {
            set_why(d->why, "PodGroup %s asks that its devices agree on %s, which no device has",
                    g->key, g->dra_match);
        } else {
            pinned_value(d);
        }
    }
    *out = d;
    return 0;
oom:
    if (d)
        common_arena_destroy(d->a);
    common_free(d);
    return -1;
}

void gdra_end(struct gdra_ctx *d)
{
    if (!d)
        return;
    common_arena_destroy(d->scratch);
    common_arena_destroy(d->a);
    common_free(d);
}

size_t gdra_rounds(const struct gdra_ctx *d)
{
    if (!d->g->dra_match)
        return 1;
    return d->mname && !d->why[0] ? d->n_vals : 0; /* why: set by gdra_begin, no value can do */
}

void gdra_round(struct gdra_ctx *d, size_t k)
{
    if (k != d->round)
        for (size_t i = 0; i < d->n_sc; i++)
            for (uint32_t n = 0; n < d->s->n_nodes; n++)
                d->sc[i].cap[n] = -1;
    d->round = k;
    d->verified = 0;
    memset(d->assigned, 0, ((size_t)d->s->n_nodes + 1) * sizeof(*d->assigned));
}

static void opts_of(const struct gdra_ctx *d, struct dra_alloc_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->extra_used = d->base;
    o->n_extra_used = d->n_base;
    if (d->mname && d->n_vals) {
        o->match_domain = d->mdom;
        o->match_name = d->mname;
        o->match_value = d->vals[d->round];
    }
}

static void keep_why(struct gdra_ctx *d, const char *msg)
{
    if (!d->why[0])
        set_why(d->why, "%s", msg);
}

/* scratch memory for node_copies, renewed every SCRATCH_NODES nodes */
#define SCRATCH_NODES 64

static struct common_arena *scratch(struct gdra_ctx *d)
{
    if (!d->scratch || ++d->scratch_uses >= SCRATCH_NODES) {
        common_arena_destroy(d->scratch);
        d->scratch = common_arena_create((size_t)1 << 28);
        d->scratch_uses = 0;
    }
    return d->scratch;
}

/* the most copies of m's claims the node's devices could hold (each ExactCount request needs
 * at least its count, or its smallest firstAvailable count; All at least one) */
static int32_t max_copies(const struct gdra_ctx *d, const struct mem *m, int32_t node,
                          int64_t *need_out, size_t *have_out)
{
    int64_t need = 0;
    size_t have = dra_node_devices(d->s->dra->ix, d->s->nodes[node]->name);

    for (size_t c = 0; c < m->n_cap; c++)
        for (size_t r = 0; r < m->un[c]->n_requests; r++) {
            const struct dra_request *rq = &m->un[c]->requests[r];
            int64_t least = INT64_MAX;
            for (size_t x = 0; x < rq->n_alts; x++) {
                int64_t v = rq->alts[x].all ? 1 : rq->alts[x].count;
                if (rq->alts[x].admin_access)
                    v = 0; /* admin access takes devices in use too: no bound */
                if (v < least)
                    least = v;
            }
            need += least == INT64_MAX ? 0 : least;
        }
    *need_out = need;
    *have_out = have;
    if (need <= 0)
        return CAP_MAX;
    return (int64_t)have / need < CAP_MAX ? (int32_t)((int64_t)have / need) : CAP_MAX;
}

/* copies of member rep's unallocated claims that node takes, at most CAP_MAX */
static int32_t node_copies(struct gdra_ctx *d, uint32_t rep, int32_t node)
{
    const struct mem *m = &d->m[rep];
    struct common_arena *a = scratch(d);
    struct dra_alloc_opts o;
    struct dra_result *extra;
    struct dra_claim_alloc *out;
    struct dra_claim *cl;
    struct common_error err;
    size_t n_extra = d->n_base, cap = d->n_base + (size_t)4 * DRA_MAX_RESULTS * m->n_cap, have = 0;
    int64_t need = 0;
    int32_t k = 0, mx;

    if (!a)
        return 0;
    opts_of(d, &o);
    extra = common_arena_alloc(a, (cap + 1) * sizeof(*extra));
    out = common_arena_alloc(a, (m->n_cap + 1) * sizeof(*out));
    cl = common_arena_alloc(a, (m->n_cap + 1) * sizeof(*cl));
    if (!extra || !out || !cl)
        return 0;
    if (d->n_base)
        memcpy(extra, d->base, d->n_base * sizeof(*extra));
    for (size_t i = 0; i < m->n_cap; i++)
        cl[i] = *m->un[i];
    mx = max_copies(d, m, node, &need, &have);
    if (!mx && !d->conflict[0])
        set_why(d->conflict, "the claims of pod %s/%s need %lld device(s); node %s has %zu",
                d->e[rep]->ns, d->e[rep]->name, (long long)need, d->s->nodes[node]->name, have);
    for (; k < mx; k++) {
        enum common_rc rc;
        o.extra_used = extra;
        o.n_extra_used = n_extra;
        rc = dra_allocate_opts(a, d->s->dra->ix, d->s->nodes[node]->name, cl, m->n_cap, &o, out,
                               &err);
        if (rc != COMMON_OK) {
            if (rc != COMMON_ECONFLICT)
                keep_why(d, err.msg);
            else if (!d->conflict[0])
                set_why(d->conflict, "%s", err.msg);
            break;
        }
        for (size_t i = 0; i < m->n_cap; i++) {
            if (n_extra + out[i].n_results > cap) {
                struct dra_result *nx;
                cap = 2 * (n_extra + out[i].n_results);
                if (!(nx = common_arena_alloc(a, (cap + 1) * sizeof(*nx))))
                    return k;
                memcpy(nx, extra, n_extra * sizeof(*nx));
                extra = nx;
            }
            for (size_t r = 0; r < out[i].n_results; r++)
                extra[n_extra++] = out[i].results[r];
        }
    }
    return k;
}

int64_t gdra_cap(struct gdra_ctx *d, const struct gshape *sh, int32_t node, int64_t f)
{
    struct scap *c = NULL;
    int64_t left;

    for (size_t i = 0; i < d->n_sc && !c; i++)
        if (d->sc[i].sh == sh)
            c = &d->sc[i];
    if (!c) {
        uint32_t rep = UINT32_MAX;
        for (uint32_t i = 0; i < d->n_e && rep == UINT32_MAX; i++)
            if (d->e[i]->shape == sh && d->m[i].pc && d->m[i].pin == -1 && d->m[i].n_cap)
                rep = i;
        c = &d->sc[d->n_sc];
        c->sh = sh;
        c->rep = rep;
        c->cap = NULL;
        if (rep != UINT32_MAX) {
            c->cap = common_arena_alloc(d->a, ((size_t)d->s->n_nodes + 1) * sizeof(*c->cap));
            if (!c->cap)
                return 0;
            for (uint32_t n = 0; n < d->s->n_nodes; n++)
                c->cap[n] = -1;
        }
        d->n_sc++;
    }
    if (c->rep == UINT32_MAX)
        return f; /* no member of this shape has claims to allocate */
    if (c->cap[node] < 0)
        c->cap[node] = node_copies(d, c->rep, node);
    left = (int64_t)c->cap[node] - d->assigned[node];
    if (left < 0)
        left = 0;
    if (left < f)
        d->limited = 1;
    return left < f ? left : f;
}

int32_t gdra_pin(const struct gdra_ctx *d, uint32_t e)
{
    return d->m[e].pc ? d->m[e].pin : -1;
}

void gdra_assign(struct gdra_ctx *d, uint32_t e, int32_t node, int delta)
{
    if (node >= 0 && d->m[e].pc && d->m[e].pin == -1 && d->m[e].n_cap)
        d->assigned[node] += delta;
}

int gdra_verify(struct gdra_ctx *d, const int32_t *assign)
{
    struct dra_alloc_opts o;
    struct dra_result *extra;
    size_t total = d->n_base;
    struct common_error err;

    for (uint32_t i = 0; i < d->n_e; i++)
        total += d->m[i].n_un * DRA_MAX_RESULTS;
    extra = common_arena_alloc(d->a, (total + 1) * sizeof(*extra));
    if (!extra)
        return -1;
    opts_of(d, &o);
    o.extra_used = extra;
    for (uint32_t i = 0; i < d->n_e; i++) {
        const struct mem *m = &d->m[i];
        size_t n_extra = d->n_base;
        enum common_rc rc;
        struct dra_claim *cl;
        d->res[i] = NULL;
        if (assign[i] < 0 || !m->pc || m->pin != -1 || !m->n_un)
            continue;
        if (d->n_base)
            memcpy(extra, d->base, d->n_base * sizeof(*extra));
        /* the devices of the members placed on the same node before this one */
        for (uint32_t j = 0; j < i; j++)
            if (assign[j] == assign[i] && d->res[j])
                for (size_t k = 0; k < d->m[j].n_un; k++)
                    for (size_t r = 0; r < d->res[j][k].n_results; r++)
                        extra[n_extra++] = d->res[j][k].results[r];
        o.n_extra_used = n_extra;
        cl = common_arena_alloc(d->a, (m->n_un + 1) * sizeof(*cl));
        d->res[i] = common_arena_alloc(d->a, (m->n_un + 1) * sizeof(*d->res[i]));
        if (!cl || !d->res[i])
            return -1;
        for (size_t k = 0; k < m->n_un; k++)
            cl[k] = *m->un[k];
        rc = dra_allocate_opts(d->a, d->s->dra->ix, d->s->nodes[assign[i]]->name, cl, m->n_un, &o,
                               d->res[i], &err);
        if (rc == COMMON_ENOMEM)
            return -1;
        if (rc != COMMON_OK) {
            d->res[i] = NULL;
            if (rc != COMMON_ECONFLICT)
                set_why(d->why, "devices for pod %s/%s: %s", d->e[i]->ns, d->e[i]->name, err.msg);
            else
                set_why(d->conflict, "devices for pod %s/%s: %s", d->e[i]->ns, d->e[i]->name,
                        err.msg);
            d->limited = 1;
            return 1;
        }
    }
    if (shared_reachable(d, assign))
        return 1;
    d->verified = 1;
    return 0;
}

int gdra_commit(struct gdra_ctx *d, const int32_t *assign)
{
    for (uint32_t i = 0; i < d->n_e; i++) {
        struct gpod *p = d->e[i];
        const struct mem *m = &d->m[i];
        struct gdra *g;
        gdra_free(p->dra);
        p->dra = NULL;
        if (!d->verified || assign[i] < 0 || !d->res[i])
            continue;
        g = common_calloc(1, sizeof(*g));
        if (!g || !(g->a = common_arena_create((size_t)1 << 24)) ||
            !(g->claims = common_arena_alloc(g->a, (m->n_un + 1) * sizeof(*g->claims)))) {
            gdra_free(g);
            return -1;
        }
        g->node = assign[i];
        g->n_claims = m->n_un;
        for (size_t k = 0; k < m->n_un; k++) {
            struct gdra_claim *c = &g->claims[k];
            c->ns = common_arena_strdup(g->a, m->un[k]->ns);
            c->name = common_arena_strdup(g->a, m->un[k]->name);
            c->n_results = d->res[i][k].n_results;
            c->results = common_arena_alloc(g->a, (c->n_results + 1) * sizeof(*c->results));
            if (!c->ns || !c->name || !c->results) {
                gdra_free(g);
                return -1;
            }
            for (size_t r = 0; r < c->n_results; r++) {
                const struct dra_result *x = &d->res[i][k].results[r];
                c->results[r].request = common_arena_strdup(g->a, x->request);
                c->results[r].driver = common_arena_strdup(g->a, x->driver);
                c->results[r].pool = common_arena_strdup(g->a, x->pool);
                c->results[r].device = common_arena_strdup(g->a, x->device);
                c->results[r].admin_access = x->admin_access;
                if (!c->results[r].request || !c->results[r].driver || !c->results[r].pool ||
                    !c->results[r].device) {
                    gdra_free(g);
                    return -1;
                }
            }
        }
        p->dra = g;
    }
    return 0;
}

const char *gdra_why(const struct gdra_ctx *d)
{
    return d->why;
}

void gdra_fail_why(const struct gdra_ctx *d, uint32_t placed, uint32_t need, char *why)
{
    if (d->why[0])
        set_why(why, "ResourceClaims: %s", d->why);
    else if (d->shared[0])
        set_why(why, "ResourceClaims: %s", d->shared);
    else if (d->limited)
        set_why(why,
                "only %u of the %u pods it needs fit at once with the devices of their "
                "ResourceClaims (after other gangs' reservations)%s%s%s",
                placed, need, d->g->dra_match ? ", devices agreeing on " : "",
                d->g->dra_match ? d->g->dra_match : "", d->conflict[0] ? "; " : "");
    if (!d->why[0] && !d->shared[0] && d->limited && d->conflict[0]) {
        size_t l = strlen(why);
        snprintf(why + l, GANG_REASON_MAX - l, "%s", d->conflict);
    }
}

enum gate gdra_gate(struct gang_state *s, struct gang *g, const struct gpod *p, int64_t now,
                    const char **why)
{
    (void)now;
    if (!s->dra)
        return GATE_PASS;
    for (uint32_t i = 0; i <= g->n_members; i++) {
        const struct gpod *q = i < g->n_members ? g->members[i] : p;
        const struct dra_pod_claims *pc;
        if (i < g->n_members && (!(q->a_flags & F_ELIGIBLE) || q == p))
            continue;
        if (!(pc = claims_of(s, q))) {
            if (!q->has_claims)
                continue;
            /* the view is built from the caches after the pod arrived: not there yet */
            set_why(g->why, "gang %s waits: the ResourceClaims of pod %s/%s are not known yet",
                    g->key, q->ns, q->name);
            *why = g->why;
            return GATE_WAIT;
        }
        for (size_t k = 0; k < pc->n_refs; k++) {
            const struct dra_claim *c = pc->refs[k].claim;
            if (!c) {
                set_why(g->why, "gang %s waits: %s", g->key, pc->refs[k].why);
                *why = g->why;
                return GATE_WAIT;
            }
            for (size_t r = 0; r < c->n_requests; r++)
                for (size_t x = 0; x < c->requests[r].n_alts; x++) {
                    const char *ce =
                        dra_view_class_error(s->dra, c->requests[r].alts[x].class_name);
                    if (ce) {
                        set_why(g->why, "gang %s waits: ResourceClaim %s/%s: %s", g->key, c->ns,
                                c->name, ce);
                        *why = g->why;
                        return GATE_WAIT;
                    }
                }
        }
    }
    return GATE_PASS;
}

const char *gdra_node_reason(const struct gang_state *s, const struct gpod *p,
                             const struct gnode *n, char *buf, size_t len)
{
    const struct dra_pod_claims *pc = claims_of(s, p);
    const struct dra_claim **un;
    struct dra_claim *cl;
    struct dra_claim_alloc *out;
    struct common_arena *a;
    struct common_error err;
    size_t n_un = 0;
    const char *r = NULL;

    if (!pc)
        return NULL;
    if (!(a = common_arena_create((size_t)1 << 28)))
        return NULL;
    un = common_arena_alloc(a, (pc->n_refs + 1) * sizeof(*un));
    cl = common_arena_alloc(a, (pc->n_refs + 1) * sizeof(*cl));
    out = common_arena_alloc(a, (pc->n_refs + 1) * sizeof(*out));
    if (!un || !cl || !out)
        goto done;
    for (size_t k = 0; k < pc->n_refs; k++) {
        const struct dra_claim *c = pc->refs[k].claim;
        if (!c)
            continue;
        if (c->is_allocated) {
            if (c->alloc_node && strcmp(c->alloc_node, n->name) != 0) {
                snprintf(buf, len, "claim %s/%s is allocated on node %s", c->ns, c->name,
                         c->alloc_node);
                r = buf;
                goto done;
            }
            continue;
        }
        cl[n_un++] = *c;
    }
    if (n_un && dra_allocate_indexed(a, s->dra->ix, n->name, cl, n_un, out, &err) != COMMON_OK) {
        snprintf(buf, len, "%s", err.msg);
        r = buf;
    }
done:
    common_arena_destroy(a);
    return r;
}

size_t gang_dra_planned(const struct gang_state *s, const char *uid, struct gang_dra_claim *out,
                        size_t cap)
{
    const struct gpod *p = pod_find(s, uid);
    size_t n = 0;

    if (!p || !p->dra ||
        (p->held != p->dra->node && p->planned != p->dra->node && p->released != p->dra->node))
        return 0;
    for (size_t i = 0; i < p->dra->n_claims && n < cap; i++, n++) {
        out[n].ns = p->dra->claims[i].ns;
        out[n].name = p->dra->claims[i].name;
        out[n].node = s->nodes[p->dra->node]->name;
        out[n].results = p->dra->claims[i].results;
        out[n].n_results = p->dra->claims[i].n_results;
        out[n].node_local = 0;
        for (size_t k = 0; s->dra && k < out[n].n_results && !out[n].node_local; k++)
            out[n].node_local = dra_device_node_local(s->dra->ix, out[n].node, &out[n].results[k]);
    }
    return n;
}

int gang_dra_pod_placed(const struct gang_state *s, const char *uid, const char *node)
{
    const struct gpod *p = pod_find(s, uid);
    int32_t slot;

    if (!p || !p->gang)
        return -1;
    if (p->node >= 0)
        return 1;
    if (!node) /* an allocation reachable from every node: any planned node will do */
        return p->planned >= 0 || p->held >= 0 || p->released >= 0;
    slot = node_slot_find(s, node);
    return slot >= 0 && (p->planned == slot || p->held == slot || p->released == slot);
}

/* 1 when the results a[0..n) and b[0..n) name the same devices (any order) */
static int same_devices(const struct dra_result *a, const struct dra_result *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < n &&
               !(strcmp(a[i].device, b[k].device) == 0 && strcmp(a[i].pool, b[k].pool) == 0 &&
                 strcmp(a[i].driver, b[k].driver) == 0))
            k++;
        if (k == n)
            return 0;
    }
    return 1;
}

int gang_dra_first_fit_differs(const struct gang_state *s, const char *uid)
{
    const struct gpod *p = pod_find(s, uid);
    struct common_arena *a;
    struct dra_claim *cl;
    struct dra_claim_alloc *out;
    struct common_error err;
    size_t n = 0;
    int differs = 1;

    if (!p || !p->dra || !s->dra || !p->dra->n_claims || p->dra->node < 0)
        return 0;
    /* several pools on the node: kube-scheduler visits them in Go map order, so its choice
     * cannot be foretold; write the plan */
    if (dra_node_pools(s->dra->ix, s->nodes[p->dra->node]->name) != 1)
        return 1;
    if (!(a = common_arena_create(0)))
        return 1;
    cl = common_arena_alloc(a, p->dra->n_claims * sizeof(*cl));
    out = common_arena_alloc(a, p->dra->n_claims * sizeof(*out));
    if (!cl || !out)
        goto out;
    for (size_t i = 0; i < p->dra->n_claims; i++) {
        const struct dra_view_claim *vc =
            dra_view_claim_find(s->dra, p->dra->claims[i].ns, p->dra->claims[i].name);
        if (!vc || vc->error)
            goto out;
        if (vc->claim.is_allocated)
            continue; /* written already: nothing for the scheduler to choose */
        cl[n++] = vc->claim;
    }
    if (dra_allocate_opts(a, s->dra->ix, s->nodes[p->dra->node]->name, cl, n, NULL, out, &err) !=
        COMMON_OK)
        goto out;
    differs = 0;
    for (size_t i = 0, k = 0; i < p->dra->n_claims && k < n && !differs; i++) {
        const struct gdra_claim *pc = &p->dra->claims[i];
        if (strcmp(pc->ns, cl[k].ns) != 0 || strcmp(pc->name, cl[k].name) != 0)
            continue;
        differs = out[k].n_results != pc->n_results ||
                  !same_devices(out[k].results, pc->results, pc->n_results);
        k++;
    }
out:
    common_arena_destroy(a);
    return differs;
}

#define DRA_WHY_MAX 20000 /* reasons kept per filter call; a generic one past it */

const char *gang_reason_keep(struct gang_state *s, const char *r)
{
    static const char generic[] = "the node's devices cannot satisfy the pod's ResourceClaims";
    char *c;

    if (s->n_dra_why == s->cap_dra_why) {
        size_t nc = s->cap_dra_why ? s->cap_dra_why * 2 : 64;
        char **n;
        if (nc > DRA_WHY_MAX || !(n = common_realloc(s->dra_why, nc * sizeof(*n))))
            return generic;
        s->dra_why = n;
        s->cap_dra_why = nc;
    }
    if (!(c = common_strdup(r)))
        return generic;
    s->dra_why[s->n_dra_why++] = c;
    return c;
}

void gdra_reasons_reset(struct gang_state *s)
{
    for (size_t i = 0; i < s->n_dra_why; i++)
        common_free(s->dra_why[i]);
    s->n_dra_why = 0;
}
