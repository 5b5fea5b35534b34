/*
 * topology/topology.c - levels, requests, the domain tree and the scope order (topology.h).
 *
 * Domains are found by sorting the nodes by their value path once per level and giving each
 * run of equal paths one id; ids therefore follow path order, which makes every tie-break
 * deterministic. Capacities are summed per domain from the per-node capacity the planner hands
 * in (pods of the gang that fit), so the order reflects every reservation the books know.
 */
#define _GNU_SOURCE /* qsort_r: sort with a context, no globals */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/names.h"
#include "topology/topology.h"

/* ---- annotations and levels ---- */

static const char *const known_keys[] = {
    TOPO_ANN_TOPOLOGY,        TOPO_ANN_REQUIRED,   TOPO_ANN_PREFERRED,    TOPO_ANN_UNCONSTRAINED,
    TOPO_ANN_SLICE,           TOPO_ANN_SLICE_SIZE, TOPO_KUEUE_REQUIRED,   TOPO_KUEUE_PREFERRED,
    TOPO_KUEUE_UNCONSTRAINED, TOPO_KUEUE_SLICE,    TOPO_KUEUE_SLICE_SIZE, TOPO_KAI_TOPOLOGY,
    TOPO_KAI_REQUIRED,        TOPO_KAI_PREFERRED,
};

int topo_is_annotation(const char *key)
{
    for (size_t i = 0; key && i < sizeof(known_keys) / sizeof(known_keys[0]); i++)
        if (strcmp(key, known_keys[i]) == 0)
            return 1;
    return 0;
}

enum common_rc topo_levels_check(const char *what, const char *const *keys, size_t n,
                                 struct common_error *err)
{
    if (n == 0 || n > TOPO_MAX_LEVELS)
        return common_error_set(err, COMMON_EINVAL, "%s: needs 1 to %d levels, has %zu", what,
                                TOPO_MAX_LEVELS, n);
    for (size_t i = 0; i < n; i++) {
        const char *bad;
        if (!keys[i] || !*keys[i])
            return common_error_set(err, COMMON_EINVAL, "%s: level %zu is empty", what, i);
        /* a level is a node label key (the nodeLabel pattern of Kueue's and KAI's Topology) */
        if ((bad = common_names_qualified_name(keys[i])))
            return common_error_set(err, COMMON_EINVAL,
                                    "%s: level %zu \"%s\" is not a node label key: %s", what, i,
                                    keys[i], bad);
        for (size_t j = 0; j < i; j++)
            if (strcmp(keys[i], keys[j]) == 0)
                return common_error_set(err, COMMON_EINVAL, "%s: level %zu \"%s\" is listed twice",
                                        what, i, keys[i]);
        if (strcmp(keys[i], TOPO_HOSTNAME) == 0 && i + 1 != n)
            return common_error_set(err, COMMON_EINVAL,
                                    "%s: " TOPO_HOSTNAME " must be the last level (it is level "
                                    "%zu of %zu)",
                                    what, i, n);
    }
    return COMMON_OK;
}

static size_t trim(const char **p, size_t n)
{
    while (n && (**p == ' ' || **p == '\t')) {
        (*p)++;
        n--;
    }
    while (n && ((*p)[n - 1] == ' ' || (*p)[n - 1] == '\t'))
        n--;
    return n;
}

enum common_rc topo_spec_parse(const char *spec, struct topo_spec *out, struct common_error *err)
{
    const char *eq = spec ? strchr(spec, '=') : NULL, *p, *name = spec;
    size_t nl, used = 0;
    char what[300];

    memset(out, 0, sizeof(*out));
    if (!eq)
        return common_error_set(err, COMMON_EINVAL,
                                "topology spec \"%s\": want NAME=LEVEL,LEVEL,...",
                                spec ? spec : "");
    nl = trim(&name, (size_t)(eq - spec));
    if (!nl || nl >= sizeof(out->name))
        return common_error_set(err, COMMON_EINVAL,
                                "topology spec \"%s\": want NAME=LEVEL,LEVEL,... (a name of 1 to "
                                "253 characters)",
                                spec);
    memcpy(out->name, name, nl);
    for (p = eq + 1;;) {
        const char *e = strchr(p, ','), *l = p;
        size_t len = trim(&l, e ? (size_t)(e - p) : strlen(p));
        if (out->n_levels == TOPO_MAX_LEVELS || used + len + 1 > sizeof(out->buf))
            return common_error_set(err, COMMON_EINVAL, "topology \"%s\": more than %d levels",
                                    out->name, TOPO_MAX_LEVELS);
        memcpy(out->buf + used, l, len);
        out->buf[used + len] = '\0';
        out->levels[out->n_levels++] = out->buf + used;
        used += len + 1;
        if (!e)
            break;
        p = e + 1;
    }
    snprintf(what, sizeof(what), "topology \"%s\"", out->name);
    return topo_levels_check(what, out->levels, out->n_levels, err);
}

/* set *slot (from annotation src) to v unless another spelling set a different value */
static enum common_rc agree(const char **slot, const char **slot_src, const char *v,
                            const char *src, struct common_error *err)
{
    if (!*v)
        return common_error_set(err, COMMON_EINVAL, "annotation %s: empty level", src);
    if (*slot && strcmp(*slot, v) != 0)
        return common_error_set(err, COMMON_EINVAL,
                                "annotations %s: \"%s\" and %s: \"%s\" ask for different levels",
                                *slot_src, *slot, src, v);
    *slot = v;
    *slot_src = src;
    return COMMON_OK;
}

static enum common_rc bool_ann(const char *key, const char *v, int *out, struct common_error *err)
{
    if (strcmp(v, "true") == 0)
        *out = 1;
    else if (strcmp(v, "false") != 0)
        return common_error_set(err, COMMON_EINVAL, "annotation %s: \"%s\" is not true or false",
                                key, v);
    return COMMON_OK;
}

static enum common_rc size_ann(const char *key, const char *v, int32_t *out,
                               struct common_error *err)
{
    int64_t x = 0;
    const char *p = v;

    if (!*p)
        goto bad;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || x > 100000000)
            goto bad;
        x = x * 10 + (*p - '0');
    }
    if (x <= 0)
        goto bad;
    if (*out && *out != (int32_t)x)
        return common_error_set(err, COMMON_EINVAL,
                                "annotation %s: %lld disagrees with the slice size %d given before",
                                key, (long long)x, *out);
    *out = (int32_t)x;
    return COMMON_OK;
bad:
    return common_error_set(err, COMMON_EINVAL, "annotation %s: \"%s\" is not a positive integer",
                            key, v);
}

enum common_rc topo_request_parse(const struct common_kv *ann, size_t n, struct topo_request *out,
                                  struct common_error *err)
{
    enum common_rc rc = COMMON_OK;
    const char *ign = NULL;
    int kueue_req = 0, kueue_pref = 0, has_unc = 0;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n && !rc; i++) {
        const char *k = ann[i].key, *v = ann[i].value ? ann[i].value : "";
        if (strcmp(k, TOPO_ANN_TOPOLOGY) == 0 || strcmp(k, TOPO_KAI_TOPOLOGY) == 0) {
            if (!*v)
                rc = common_error_set(err, COMMON_EINVAL, "annotation %s: empty topology name", k);
            else if (out->topology && strcmp(out->topology, v) != 0)
                rc = common_error_set(err, COMMON_EINVAL,
                                      "annotations name two topologies: \"%s\" and %s: \"%s\"",
                                      out->topology, k, v);
            out->topology = v;
        } else if (strcmp(k, TOPO_ANN_REQUIRED) == 0 || strcmp(k, TOPO_KUEUE_REQUIRED) == 0 ||
                   strcmp(k, TOPO_KAI_REQUIRED) == 0) {
            kueue_req |= strcmp(k, TOPO_KUEUE_REQUIRED) == 0;
            rc = agree(&out->required, &out->required_src, v, k, err);
        } else if (strcmp(k, TOPO_ANN_PREFERRED) == 0 || strcmp(k, TOPO_KUEUE_PREFERRED) == 0 ||
                   strcmp(k, TOPO_KAI_PREFERRED) == 0) {
            kueue_pref |= strcmp(k, TOPO_KUEUE_PREFERRED) == 0;
            rc = agree(&out->preferred, &out->preferred_src, v, k, err);
        } else if (strcmp(k, TOPO_ANN_UNCONSTRAINED) == 0 ||
                   strcmp(k, TOPO_KUEUE_UNCONSTRAINED) == 0) {
            rc = bool_ann(k, v, &out->unconstrained, err);
            has_unc = 1;
            ign = k;
        } else if (strcmp(k, TOPO_ANN_SLICE) == 0 || strcmp(k, TOPO_KUEUE_SLICE) == 0) {
            rc = agree(&out->slice, &out->slice_src, v, k, err);
        } else if (strcmp(k, TOPO_ANN_SLICE_SIZE) == 0 || strcmp(k, TOPO_KUEUE_SLICE_SIZE) == 0) {
            rc = size_ann(k, v, &out->slice_size, err);
        }
    }
    if (rc)
        return rc;
    if (kueue_req && kueue_pref)
        return common_error_set(err, COMMON_EINVAL,
                                "annotations " TOPO_KUEUE_REQUIRED " and " TOPO_KUEUE_PREFERRED
                                " exclude each other (Kueue); use " TOPO_ANN_REQUIRED
                                " with " TOPO_ANN_PREFERRED " to combine them");
    if (has_unc && out->unconstrained && (out->required || out->preferred || out->slice))
        return common_error_set(err, COMMON_EINVAL,
                                "annotation %s: true cannot be combined with a topology level",
                                ign);
    if (out->slice && !out->slice_size)
        return common_error_set(err, COMMON_EINVAL,
                                "annotation %s needs a slice size (" TOPO_KUEUE_SLICE_SIZE
                                " or " TOPO_ANN_SLICE_SIZE ")",
                                out->slice_src);
    if (!out->slice && out->slice_size)
        return common_error_set(err, COMMON_EINVAL,
                                "a slice size needs a slice level (" TOPO_KUEUE_SLICE
                                " or " TOPO_ANN_SLICE ")");
    return COMMON_OK;
}

int topo_request_empty(const struct topo_request *rq)
{
    return !rq->required && !rq->preferred && !rq->slice;
}

static int32_t level_of(const char *key, const char *const *levels, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(levels[i], key) == 0)
            return (int32_t)i;
    return -1;
}

static enum common_rc unknown_level(const char *src, const char *key, const char *topo,
                                    const char *const *levels, size_t n, struct common_error *err)
{
    char list[512];
    size_t len = 0;

    list[0] = '\0';
    for (size_t i = 0; i < n && len < sizeof(list); i++) {
        int w = snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", levels[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return common_error_set(err, COMMON_EINVAL,
                            "annotation %s: \"%s\" is not a level of topology \"%s\" (levels: %s)",
                            src, key, topo, list);
}

enum common_rc topo_request_resolve(const struct topo_request *rq, const char *topo_name,
                                    const char *const *levels, size_t n_levels, int64_t gang_pods,
                                    struct topo_want *out, struct common_error *err)
{
    out->required = out->preferred = out->slice = -1;
    out->slice_size = 0;
    if (rq->required && (out->required = level_of(rq->required, levels, n_levels)) < 0)
        return unknown_level(rq->required_src, rq->required, topo_name, levels, n_levels, err);
    if (rq->preferred && (out->preferred = level_of(rq->preferred, levels, n_levels)) < 0)
        return unknown_level(rq->preferred_src, rq->preferred, topo_name, levels, n_levels, err);
    if (rq->slice && (out->slice = level_of(rq->slice, levels, n_levels)) < 0)
        return unknown_level(rq->slice_src, rq->slice, topo_name, levels, n_levels, err);
    if (out->required >= 0 && out->preferred >= 0 && out->preferred < out->required)
        return common_error_set(err, COMMON_EINVAL,
                                "annotation %s: \"%s\" is wider than the required level \"%s\"",
                                rq->preferred_src, rq->preferred, rq->required);
    if (out->required >= 0 && out->slice >= 0 && out->slice < out->required)
        return common_error_set(err, COMMON_EINVAL,
                                "annotation %s: \"%s\" is wider than the required level \"%s\"",
                                rq->slice_src, rq->slice, rq->required);
    if (out->slice >= 0) {
        if (gang_pods > 0 && gang_pods % rq->slice_size != 0)
            return common_error_set(err, COMMON_EINVAL,
                                    "slice size %d does not divide the gang's %lld pods",
                                    rq->slice_size, (long long)gang_pods);
        out->slice_size = rq->slice_size;
    }
    return COMMON_OK;
}

/* ---- domains ---- */

struct sort_ctx {
    const char *const *values;
    uint32_t n_levels, upto;
};

static int cmp_path(uint32_t a, uint32_t b, const struct sort_ctx *c)
{
    for (uint32_t l = 0; l <= c->upto; l++) {
        int x =
            strcmp(c->values[(size_t)a * c->n_levels + l], c->values[(size_t)b * c->n_levels + l]);
        if (x)
            return x;
    }
    return 0;
}

static int cmp_node(const void *a, const void *b, void *ctx)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = cmp_path(x, y, ctx);

    return c ? c : (x < y ? -1 : x > y);
}

enum common_rc topo_domains_build(const char *const *values, uint32_t n_nodes, uint32_t n_levels,
                                  struct topo_domains *out, struct common_error *err)
{
    uint32_t *order = NULL, n_in;
    size_t path_bytes = 0, cap_dom = 0, used = 0;

    memset(out, 0, sizeof(*out));
    out->n_nodes = n_nodes;
    out->n_levels = n_levels;
    out->dom = common_malloc(((size_t)n_nodes * n_levels + 1) * sizeof(*out->dom));
    order = common_malloc(((size_t)n_nodes + 1) * sizeof(*order));
    if (!out->dom || !order)
        goto oom;
    for (size_t i = 0; i < (size_t)n_nodes * n_levels; i++)
        out->dom[i] = -1;
    /* upper bound on domains and path bytes: one per node and level */
    for (uint32_t n = 0; n < n_nodes; n++) {
        size_t len = 0;
        for (uint32_t l = 0; l < n_levels; l++) {
            const char *v = values[(size_t)n * n_levels + l];
            if (!v)
                break;
            len += strlen(v) + 1;
            path_bytes += len;
            cap_dom++;
        }
    }
    out->level = common_malloc((cap_dom + 1) * sizeof(*out->level));
    out->parent = common_malloc((cap_dom + 1) * sizeof(*out->parent));
    out->path = common_malloc((cap_dom + 1) * sizeof(*out->path));
    out->paths = common_malloc(path_bytes + 1);
    if (!out->level || !out->parent || !out->path || !out->paths)
        goto oom;
    for (uint32_t l = 0; l < n_levels; l++) {
        n_in = 0;
        for (uint32_t n = 0; n < n_nodes; n++) {
            int all = 1;
            for (uint32_t k = 0; k <= l && all; k++)
                all = values[(size_t)n * n_levels + k] != NULL;
            if (all)
                order[n_in++] = n;
        }
        struct sort_ctx sctx = {values, n_levels, l};
        qsort_r(order, n_in, sizeof(*order), cmp_node, &sctx);
        for (uint32_t i = 0; i < n_in; i++) {
            uint32_t node = order[i];
            int32_t id;
            if (i == 0 || cmp_path(order[i - 1], node, &sctx) != 0) {
                char *p = out->paths + used;
                size_t len = 0;
                id = (int32_t)out->n_domains++;
                out->level[id] = (int32_t)l;
                out->parent[id] = l ? out->dom[(size_t)node * n_levels + l - 1] : -1;
                for (uint32_t k = 0; k <= l; k++) {
                    const char *v = values[(size_t)node * n_levels + k];
                    size_t vl = strlen(v);
                    if (k)
                        p[len++] = '/';
                    memcpy(p + len, v, vl);
                    len += vl;
                }
                p[len] = '\0';
                out->path[id] = p;
                used += len + 1;
            } else {
                id = out->dom[(size_t)order[i - 1] * n_levels + l];
            }
            out->dom[(size_t)node * n_levels + l] = id;
        }
    }
    common_free(order);
    return COMMON_OK;
oom:
    common_free(order);
    topo_domains_free(out);
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

void topo_domains_free(struct topo_domains *d)
{
    common_free(d->dom);
    common_free(d->level);
    common_free(d->parent);
    common_free(d->path);
    common_free(d->paths);
    memset(d, 0, sizeof(*d));
}

int32_t topo_domain_find(const struct topo_domains *d, int32_t level, const char *path)
{
    for (uint32_t i = 0; path && i < d->n_domains; i++)
        if (d->level[i] == level && strcmp(d->path[i], path) == 0)
            return (int32_t)i;
    return -1;
}

/* ---- placement ---- */

int topo_in_scope(const struct topo_domains *d, const struct topo_scope *scope, uint32_t node)
{
    if (scope->level < 0)
        return 1;
    return d->dom[(size_t)node * d->n_levels + scope->level] == scope->domain;
}

/* dcap[id] = the sum of cap over the domain's nodes; a new array or NULL */
static int64_t *domain_caps(const struct topo_domains *d, const int64_t *cap)
{
    int64_t *dc = common_calloc(d->n_domains + 1, sizeof(*dc));

    if (!dc)
        return NULL;
    for (uint32_t n = 0; n < d->n_nodes; n++)
        for (uint32_t l = 0; l < d->n_levels; l++) {
            int32_t id = d->dom[(size_t)n * d->n_levels + l];
            if (id >= 0)
                dc[id] += cap[n] > 0 ? cap[n] : 0;
        }
    return dc;
}

static int cmp_scope(const void *a, const void *b, void *ctx)
{
    const struct topo_scope *x = a, *y = b;
    const struct topo_domains *d = ctx;

    if (x->capacity != y->capacity)
        return x->capacity < y->capacity ? -1 : 1;
    return strcmp(d->path[x->domain], d->path[y->domain]);
}

/* append the domains of level l (inside domain `within` of level wl, when wl >= 0) that hold
 * need, best fit first */
static void add_level(const struct topo_domains *d, const int64_t *dc, int32_t l, int32_t wl,
                      int32_t within, int64_t need, struct topo_scope *out, size_t *n)
{
    size_t start = *n;

    for (uint32_t i = 0; i < d->n_domains; i++) {
        int32_t up = (int32_t)i;
        if (d->level[i] != l || dc[i] < need)
            continue;
        while (wl >= 0 && up >= 0 && d->level[up] > wl)
            up = d->parent[up];
        if (wl >= 0 && up != within)
            continue;
        out[(*n)++] = (struct topo_scope){l, (int32_t)i, dc[i]};
    }
    qsort_r(out + start, *n - start, sizeof(*out), cmp_scope, (void *)d);
}

enum common_rc topo_scopes(const struct topo_domains *d, const struct topo_want *want,
                           const int64_t *cap, int64_t need, int32_t sticky_dom,
                           struct topo_scope *out, size_t *n, struct common_error *err)
{
    int64_t *dc = domain_caps(d, cap);
    int32_t top;

    *n = 0;
    if (!dc)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (want->preferred >= 0) {
        top = want->required >= 0 ? want->required : 0;
        for (int32_t l = want->preferred; l >= top; l--)
            add_level(d, dc, l, -1, -1, need, out, n);
        if (want->required < 0) {
            int64_t all = 0;
            for (uint32_t i = 0; i < d->n_nodes; i++)
                all += cap[i] > 0 ? cap[i] : 0;
            out[(*n)++] = (struct topo_scope){-1, -1, all};
        }
    } else if (want->required >= 0) {
        add_level(d, dc, want->required, -1, -1, need, out, n);
    } else {
        int64_t all = 0;
        for (uint32_t i = 0; i < d->n_nodes; i++)
            all += cap[i] > 0 ? cap[i] : 0;
        out[(*n)++] = (struct topo_scope){-1, -1, all};
    }
    if (sticky_dom >= 0)
        for (size_t i = 0; i < *n; i++)
            if (out[i].domain == sticky_dom) {
                struct topo_scope t = out[i];
                memmove(out + 1, out, i * sizeof(*out));
                out[0] = t;
                break;
            }
    common_free(dc);
    return COMMON_OK;
}

int32_t topo_best_domain(const struct topo_domains *d, int32_t level,
                         const struct topo_scope *scope, const int64_t *cap, int64_t need)
{
    int64_t *dc = domain_caps(d, cap);
    int32_t best = -1;

    if (!dc)
        return -2;
    for (uint32_t i = 0; i < d->n_domains; i++) {
        int32_t up = (int32_t)i;
        if (d->level[i] != level || dc[i] < need)
            continue;
        while (scope->level >= 0 && up >= 0 && d->level[up] > scope->level)
            up = d->parent[up];
        if (scope->level >= 0 && up != scope->domain)
            continue;
        if (best < 0 || dc[i] < dc[best] ||
            (dc[i] == dc[best] && strcmp(d->path[i], d->path[best]) < 0))
            best = (int32_t)i;
    }
    common_free(dc);
    return best;
}

struct rank_ctx {
    const struct topo_domains *d;
    const int64_t *dc;
    uint32_t from, to; /* levels compared: from..to-1 */
};

/* sub-domains with more free capacity first, level by level, then by path (= id) */
static int cmp_group(uint32_t x, uint32_t y, const struct rank_ctx *c)
{
    const struct topo_domains *d = c->d;

    for (uint32_t l = c->from; l < c->to; l++) {
        int32_t dx = d->dom[(size_t)x * d->n_levels + l], dy = d->dom[(size_t)y * d->n_levels + l];
        int64_t cx = dx >= 0 ? c->dc[dx] : -1, cy = dy >= 0 ? c->dc[dy] : -1;
        if (cx != cy)
            return cx > cy ? -1 : 1;
        if (dx != dy)
            return dx < dy ? -1 : 1;
    }
    return 0;
}

static int cmp_rank(const void *a, const void *b, void *ctx)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = cmp_group(x, y, ctx);

    return c ? c : (x < y ? -1 : x > y);
}

enum common_rc topo_node_rank(const struct topo_domains *d, const struct topo_scope *scope,
                              uint32_t to_level, const int64_t *cap, int32_t *rank,
                              struct common_error *err)
{
    int64_t *dc = domain_caps(d, cap);
    uint32_t *order = common_malloc(((size_t)d->n_nodes + 1) * sizeof(*order)), k = 0;
    struct rank_ctx rc;
    int32_t r = 0;

    if (!dc || !order) {
        common_free(dc);
        common_free(order);
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    for (uint32_t n = 0; n < d->n_nodes; n++) {
        rank[n] = INT32_MAX;
        if (topo_in_scope(d, scope, n))
            order[k++] = n;
    }
    rc = (struct rank_ctx){d, dc, (uint32_t)(scope->level + 1),
                           to_level < d->n_levels ? to_level : d->n_levels};
    qsort_r(order, k, sizeof(*order), cmp_rank, &rc);
    for (uint32_t i = 0; i < k; i++) {
        if (i && cmp_group(order[i - 1], order[i], &rc) != 0)
            r++;
        rank[order[i]] = r;
    }
    common_free(dc);
    common_free(order);
    return COMMON_OK;
}

void topo_wait_reason(const struct topo_domains *d, const char *level_key, int32_t level,
                      const int64_t *cap, int64_t need, char *buf, size_t size)
{
    int64_t *dc = domain_caps(d, cap);
    int32_t best = -1;

    for (uint32_t i = 0; dc && i < d->n_domains; i++)
        if (d->level[i] == level && (best < 0 || dc[i] > dc[best]))
            best = (int32_t)i;
    if (!dc)
        snprintf(buf, size, "no %s domain has room for the %lld pods the gang needs", level_key,
                 (long long)need);
    else if (best < 0)
        snprintf(buf, size, "no node has the topology label %s", level_key);
    else
        snprintf(buf, size,
                 "no %s domain has room for the %lld pods the gang needs; the largest, %s, has "
                 "room for %lld",
                 level_key, (long long)need, d->path[best], (long long)dc[best]);
    common_free(dc);
}
