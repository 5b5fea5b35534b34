/*
 * gang/pipeline.c - the placement pipeline: one const table of placement policies that the
 * gang planner consults, in the table's order (DESIGN.md "The placement pipeline"):
 *   1. gang     - quorum, holds, timeouts, backoff, phased pods (the gate in gang.c; holds and
 *                 timeouts are books.c, packing is plan.c);
 *   2. topology - which topology domains a gang may use and in which order (topology/ core:
 *                 levels, domains, best fit), and why a gang waits for one;
 *   3. dra      - devices: members' ResourceClaims allocated with the gang (dra.c).
 * Also the topology records of the books: named level lists (gang_topology_set/_delete) and
 * each gang's topology request, read from its PodGroup's annotations.
 */
#include <string.h>

#include "common/alloc.h"
#include "gang/gang_int.h"

/* ---- the topology policy ---- */

const struct gtopo *topo_of(const struct gang_state *s, const struct gang *g)
{
    if (!s->n_topos)
        return NULL;
    if (!g->topo.topology)
        return &s->topos[0];
    for (uint32_t i = 0; i < s->n_topos; i++)
        if (strcmp(s->topos[i].name, g->topo.topology) == 0)
            return &s->topos[i];
    return NULL;
}

const char *gang_domain_level(const struct gang_state *s, const struct gang *g)
{
    const struct gtopo *t = g->dom_path[0] ? topo_of(s, g) : NULL;

    return t && g->dom_level >= 0 && (uint32_t)g->dom_level < t->n_levels ? t->levels[g->dom_level]
                                                                          : "";
}

int gang_node_in_domain(const struct gang_state *s, const struct gang *g, const struct gnode *n)
{
    const struct gtopo *t = g->dom_path[0] ? topo_of(s, g) : NULL;
    const char *p = g->dom_path;

    if (!t || g->dom_level < 0 || (uint32_t)g->dom_level >= t->n_levels)
        return -1;
    /* the node's values of levels 0..dom_level, '/'-joined, against the domain's path */
    for (int32_t l = 0; l <= g->dom_level; l++) {
        const char *v = fit_label(n, t->levels[l]);
        size_t len = v ? strlen(v) : 0;
        if (!v || strncmp(p, v, len) != 0)
            return 0;
        p += len;
        if (l < g->dom_level && *p++ != '/')
            return 0;
    }
    return *p == '\0';
}

int gang_topology_required(const struct gang *g)
{
    return !g->topo_err[0] && g->topo.required != NULL;
}

int64_t gang_pods(const struct gang *g)
{
    int64_t n = (int64_t)g->min_member - g->c.phased_known;

    return n > 0 ? n : g->min_member;
}

/* resolve g's request; 0 with *want, or -1 with the reason in buf */
static int topo_resolve(const struct gang_state *s, const struct gang *g, const struct gtopo **tp,
                        struct topo_want *want, char *buf)
{
    const struct gtopo *t = topo_of(s, g);
    struct common_error e;

    *tp = t;
    if (g->topo_err[0]) {
        set_why(buf, "PodGroup %s: %s", g->key, g->topo_err);
        return -1;
    }
    if (!t && g->topo.topology) {
        set_why(buf, "PodGroup %s asks for topology \"%s\", which trainsched does not know", g->key,
                g->topo.topology);
        return -1;
    }
    if (!t) {
        set_why(buf,
                "PodGroup %s asks for a topology level but no topology is configured "
                "(serve config topologies, or a Kueue or KAI Topology object)",
                g->key);
        return -1;
    }
    if (topo_request_resolve(&g->topo, t->name, (const char *const *)t->levels, t->n_levels,
                             gang_pods(g), want, &e)) {
        set_why(buf, "PodGroup %s: %s", g->key, e.msg);
        return -1;
    }
    return 0;
}

/*
 * kueue_placed - the first member whose domain Kueue's topology-aware scheduling chose: labelled
 * with Kueue's podset and with a nodeSelector on a level of the gang's topology or on
 * kubernetes.io/hostname (what Kueue's topology ungater writes as it ungates the pod); NULL
 * when none. *sel is that nodeSelector entry. Source: sigs.k8s.io/kueue v0.17
 * pkg/controller/tas/topology_ungater.go.
 */
static const struct gpod *kueue_placed(const struct gang_state *s, const struct gang *g,
                                       const struct common_kv **sel)
{
    const struct gtopo *t = topo_of(s, g);

    for (uint32_t i = 0; i < g->n_members; i++) {
        const struct gpod *p = g->members[i];
        if (!p->kueue_podset || !p->shape || !(p->a_flags & F_KNOWN))
            continue;
        for (uint32_t k = 0; k < p->shape->n_selector; k++) {
            const char *key = p->shape->selector[k].key;
            int level = strcmp(key, TOPO_HOSTNAME) == 0;
            for (uint32_t l = 0; t && !level && l < t->n_levels; l++)
                level = strcmp(key, t->levels[l]) == 0;
            if (level) {
                *sel = &p->shape->selector[k];
                return p;
            }
        }
    }
    return NULL;
}

/* Kueue placed g's members: its own topology request is set aside (Kueue's placement wins,
 * the members' nodeSelectors keep them in their domains) and g->topo_note says so; 1 then */
static int kueue_wins(const struct gang_state *s, struct gang *g)
{
    const struct common_kv *sel = NULL;
    const struct gpod *p = kueue_placed(s, g, &sel);

    if (!p) {
        g->topo_note[0] = '\0';
        return 0;
    }
    set_why(g->topo_note,
            "PodGroup %s: its topology request is not applied: Kueue's topology-aware "
            "scheduling placed the members (pod %s has nodeSelector %s=%s) and Kueue's "
            "placement wins",
            g->key, p->name, sel->key, sel->value);
    return 1;
}

static enum gate topo_gate(struct gang_state *s, struct gang *g, const struct gpod *p, int64_t now,
                           const char **why)
{
    const struct gtopo *t;
    struct topo_want want;

    (void)p;
    (void)now;
    if (!g->topo_err[0] && topo_request_empty(&g->topo))
        return GATE_PASS;
    if (kueue_wins(s, g))
        return GATE_PASS;
    if (topo_resolve(s, g, &t, &want, g->why)) {
        *why = g->why;
        return GATE_WAIT;
    }
    return GATE_PASS;
}

static int topo_scopes_hook(struct gang_state *s, struct gang *g, const int64_t *cap, int64_t need,
                            struct plan_scopes *out)
{
    const struct gtopo *t;
    const char **values = NULL;
    struct common_error e;
    int32_t sticky = -1;
    int rc = -1;

    if (!g->topo_err[0] && topo_request_empty(&g->topo)) {
        g->topo_note[0] = '\0';
        return 0;
    }
    if (kueue_wins(s, g))
        return 0; /* the whole cluster: each member's nodeSelector keeps it where Kueue put it */
    out->topo = 1;
    out->n = 0;
    if (topo_resolve(s, g, &t, &out->want, out->why))
        return 0; /* no scope: the plan fails with the reason */
    out->t = t;
    values = common_malloc(((size_t)s->n_nodes * t->n_levels + 1) * sizeof(*values));
    if (!values)
        return -1;
    for (uint32_t n = 0; n < s->n_nodes; n++) {
        const struct gnode *nd = s->nodes[n];
        for (uint32_t l = 0; l < t->n_levels; l++)
            values[(size_t)n * t->n_levels + l] =
                nd && nd->present ? fit_label(nd, t->levels[l]) : NULL;
    }
    if (topo_domains_build(values, s->n_nodes, t->n_levels, &out->dom, &e))
        goto out;
    out->list = common_malloc((out->dom.n_domains + 1) * sizeof(*out->list));
    if (!out->list)
        goto out;
    if (g->dom_path[0])
        sticky = topo_domain_find(&out->dom, g->dom_level, g->dom_path);
    if (topo_scopes(&out->dom, &out->want, cap, need, sticky, out->list, &out->n, &e))
        goto out;
    if (!out->n) {
        int32_t l = out->want.required >= 0 ? out->want.required : out->want.preferred;
        char r[GANG_REASON_MAX];
        topo_wait_reason(&out->dom, t->levels[l], l, cap, need, r, sizeof(r));
        set_why(out->why, "required topology: %s", r);
    }
    out->pack_levels = t->n_levels;
    if (t->n_levels && strcmp(t->levels[t->n_levels - 1], TOPO_HOSTNAME) == 0)
        out->pack_levels = t->n_levels - 1;
    rc = 0;
out:
    common_free(values);
    return rc;
}

/* ---- the table ---- */

static const struct gang_policy policy_gang = {
    .name = "gang",
    .gate = gang_quorum_gate,
    .scopes = NULL,
    .node_fit = NULL,
};

static const struct gang_policy policy_topology = {
    .name = "topology",
    .gate = topo_gate,
    .scopes = topo_scopes_hook,
    .node_fit = NULL,
};

/* DRA (dra.c): the gate waits for members' claims that do not exist yet or cannot be used;
 * devices per node are counted by plan.c through gdra_cap and allocated for the whole gang by
 * gdra_verify (they depend on the members already placed, which a per-shape node_fit cannot
 * see), so node_fit stays NULL. */
static const struct gang_policy policy_dra = {
    .name = "dra",
    .gate = gdra_gate,
    .scopes = NULL,
    .node_fit = NULL,
};

static const struct gang_policy *const policies[] = {&policy_gang, &policy_topology, &policy_dra};

#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))

enum gate pipeline_gate(struct gang_state *s, struct gang *g, const struct gpod *p, int64_t now,
                        const char **why)
{
    for (size_t i = 0; i < N_POLICIES; i++) {
        enum gate r;
        if (!policies[i]->gate)
            continue;
        r = policies[i]->gate(s, g, p, now, why);
        if (r != GATE_PASS)
            return r;
    }
    return GATE_PASS;
}

int pipeline_scopes(struct gang_state *s, struct gang *g, const int64_t *cap, int64_t need,
                    struct plan_scopes *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < N_POLICIES; i++) {
        if (!policies[i]->scopes)
            continue;
        if (policies[i]->scopes(s, g, cap, need, out))
            goto oom;
        if (out->topo)
            return 0;
    }
    out->list = common_malloc(sizeof(*out->list));
    if (!out->list)
        goto oom;
    out->list[0] = (struct topo_scope){-1, -1, 0};
    out->n = 1;
    return 0;
oom:
    pipeline_scopes_free(out);
    return -1;
}

int pipeline_reads_capacity(const struct gang *g)
{
    /* only the topology policy's scopes read the per-node capacity */
    return g->topo_err[0] || !topo_request_empty(&g->topo);
}

void pipeline_scopes_free(struct plan_scopes *ps)
{
    topo_domains_free(&ps->dom);
    common_free(ps->list);
    ps->list = NULL;
    ps->n = 0;
}

const char *pipeline_node_fit(const struct gang_state *s, const struct gshape *sh,
                              const struct gnode *n)
{
    for (size_t i = 0; i < N_POLICIES; i++) {
        const char *r;
        if (policies[i]->node_fit && (r = policies[i]->node_fit(s, sh, n)) != NULL)
            return r;
    }
    return NULL;
}

/* ---- topology records ---- */

static void gtopo_free(struct gtopo *t)
{
    for (uint32_t i = 0; i < t->n_levels; i++)
        common_free(t->levels[i]);
    common_free(t->levels);
    common_free(t->name);
    memset(t, 0, sizeof(*t));
}

void topos_free(struct gang_state *s)
{
    for (uint32_t i = 0; i < s->n_topos; i++)
        gtopo_free(&s->topos[i]);
    common_free(s->topos);
    s->topos = NULL;
    s->n_topos = 0;
}

/* every gang that asks for topology t (by name, or the default when t is the first) */
static int uses(const struct gang_state *s, const struct gang *g, const char *name)
{
    if (topo_request_empty(&g->topo))
        return 0;
    if (g->topo.topology)
        return strcmp(g->topo.topology, name) == 0;
    return s->n_topos && strcmp(s->topos[0].name, name) == 0;
}

/* the levels of a topology changed or it went away: plans that used it are made again; a
 * holding gang that used it fails (no backoff) */
static void topo_changed(struct gang_state *s, const char *name, int deleted)
{
    char why[GANG_REASON_MAX];

    for (size_t i = 0; i < s->gang_by_key.cap; i++) {
        struct gang *g = s->gang_by_key.e[i].hash ? s->gang_by_key.e[i].val : NULL;
        if (!g || !uses(s, g, name))
            continue;
        g->dom_level = -1;
        g->dom_path[0] = '\0';
        if (g->active) {
            if (deleted)
                set_why(why, "topology \"%s\" was deleted", name);
            else
                set_why(why, "the levels of topology \"%s\" changed", name);
            gang_fail(s, g, 0, 0, why);
        } else {
            gang_drop_plan(s, g);
        }
    }
    node_gc(s);
}

enum common_rc gang_topology_set(struct gang_state *s, const char *name, const char *const *levels,
                                 size_t n_levels, struct common_error *err)
{
    struct gtopo t;
    char what[GANG_REASON_MAX];
    enum common_rc rc;
    uint32_t at;
    int same = 0;

    if (!name || !*name)
        return common_error_set(err, COMMON_EINVAL, "topology without a name");
    set_why(what, "topology \"%s\"", name);
    if ((rc = topo_levels_check(what, levels, n_levels, err)))
        return rc;
    memset(&t, 0, sizeof(t));
    t.name = common_strdup(name);
    t.levels = common_calloc(n_levels, sizeof(*t.levels));
    if (!t.name || !t.levels)
        goto oom;
    for (size_t i = 0; i < n_levels; i++) {
        if (!(t.levels[i] = common_strdup(levels[i])))
            goto oom;
        t.n_levels = (uint32_t)i + 1;
    }
    for (at = 0; at < s->n_topos && strcmp(s->topos[at].name, name) != 0; at++)
        ;
    if (at == s->n_topos) {
        struct gtopo *nt = common_realloc(s->topos, (s->n_topos + 1) * sizeof(*nt));
        if (!nt)
            goto oom;
        s->topos = nt;
        s->n_topos++;
    } else {
        same = s->topos[at].n_levels == t.n_levels;
        for (uint32_t i = 0; i < t.n_levels && same; i++)
            same = strcmp(s->topos[at].levels[i], t.levels[i]) == 0;
        gtopo_free(&s->topos[at]);
    }
    s->topos[at] = t;
    if (!same)
        topo_changed(s, name, 0);
    return COMMON_OK;
oom:
    gtopo_free(&t);
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

void gang_topology_delete(struct gang_state *s, const char *name)
{
    uint32_t at;

    for (at = 0; at < s->n_topos && strcmp(s->topos[at].name, name) != 0; at++)
        ;
    if (at == s->n_topos)
        return;
    /* gangs decide while the topology still exists which of them used it */
    topo_changed(s, name, 1);
    gtopo_free(&s->topos[at]);
    memmove(s->topos + at, s->topos + at + 1, (s->n_topos - at - 1) * sizeof(*s->topos));
    s->n_topos--;
}

void gang_topo_clear(struct gang *g)
{
    common_free(g->topo_block);
    g->topo_block = NULL;
    memset(&g->topo, 0, sizeof(g->topo));
    g->topo_err[0] = '\0';
}

/* the request's strings, pointing into block (copied in order) */
static char *req_copy(const struct common_kv *ann, uint32_t n, struct common_kv *kv)
{
    size_t len = 1;
    char *b, *p;

    for (uint32_t i = 0; i < n; i++)
        len += strlen(ann[i].key) + strlen(ann[i].value ? ann[i].value : "") + 2;
    b = p = common_malloc(len);
    if (!b)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        size_t kl = strlen(ann[i].key), vl = strlen(ann[i].value ? ann[i].value : "");
        memcpy(p, ann[i].key, kl + 1);
        kv[i].key = p;
        p += kl + 1;
        memcpy(p, ann[i].value ? ann[i].value : "", vl + 1);
        kv[i].value = p;
        p += vl + 1;
    }
    return b;
}

int gang_topo_assign(struct gang_state *s, struct gang *g, const struct common_kv *ann, uint32_t n,
                     int *changed)
{
    struct common_kv kv[GANG_MAX_TOPOLOGY_ANN];
    struct topo_request rq;
    struct common_error e;
    char *block;
    enum common_rc rc;

    (void)s;
    if (n > GANG_MAX_TOPOLOGY_ANN)
        n = GANG_MAX_TOPOLOGY_ANN;
    block = req_copy(ann, n, kv);
    if (!block)
        return -1;
    rc = topo_request_parse(kv, n, &rq, &e);
    *changed = 1;
    if (!rc && !g->topo_err[0]) {
        const struct topo_request *o = &g->topo;
#define SAME(a, b) (((a) == NULL && (b) == NULL) || ((a) && (b) && strcmp((a), (b)) == 0))
        *changed = !(SAME(o->topology, rq.topology) && SAME(o->required, rq.required) &&
                     SAME(o->preferred, rq.preferred) && SAME(o->slice, rq.slice) &&
                     o->slice_size == rq.slice_size && o->unconstrained == rq.unconstrained);
#undef SAME
    } else if (rc && g->topo_err[0]) {
        *changed = strcmp(g->topo_err, e.msg) != 0;
    }
    gang_topo_clear(g);
    g->topo_block = block;
    if (rc) {
        set_why(g->topo_err, "%s", e.msg);
    } else {
        g->topo = rq;
    }
    return 0;
}
