/*
 * gang/fit.c - does a pod fit a node: resource names, pod shapes (requests + constraints,
 * interned), and the checks kube-scheduler's NodeResourcesFit, NodeAffinity (nodeSelector and
 * required node affinity), TaintToleration and NodeUnschedulable make. Source: Kubernetes
 * component-helpers nodeaffinity and v1 helper ToleratesTaint semantics.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "gang/gang_int.h"

/* ---- packer ---- */

void *pk_take(struct packer *pk, size_t size)
{
    size_t off = (pk->off + 7) & ~(size_t)7;

    pk->off = off + size;
    return pk->base ? pk->base + off : NULL;
}

char *pk_str(struct packer *pk, const char *s)
{
    size_t n;
    char *d;

    if (!s)
        s = "";
    n = strlen(s) + 1;
    d = pk->base ? pk->base + pk->off : NULL;
    pk->off += n;
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ---- resource names ---- */

int res_ignored(const struct gang_state *s, const char *name)
{
    for (size_t i = 0; i < s->n_ignored; i++)
        if (strcmp(s->ignored[i], name) == 0)
            return 1;
    return 0;
}

int res_id(struct gang_state *s, const char *name, int intern)
{
    char *n, *sh;
    size_t len;

    for (uint32_t i = 0; i < s->n_res; i++)
        if (strcmp(s->res_names[i], name) == 0)
            return (int)i;
    /* the last slot stands for every name past the cap: nothing has it */
    if (!intern || s->n_res >= NRES - 1)
        return -1;
    len = strlen(name);
    n = common_strdup(name);
    sh = common_malloc(len + sizeof("Insufficient "));
    if (!n || !sh) {
        common_free(n);
        common_free(sh);
        return -2;
    }
    memcpy(sh, "Insufficient ", sizeof("Insufficient ") - 1);
    memcpy(sh + sizeof("Insufficient ") - 1, name, len + 1);
    s->res_names[s->n_res] = n;
    s->res_short[s->n_res] = sh;
    return (int)s->n_res++;
}

/* ---- static fit ---- */

static const char *kv_get(const struct common_kv *kv, uint32_t n, const char *key)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(kv[mid].key, key);
        if (c == 0)
            return kv[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *fit_label(const struct gnode *n, const char *key)
{
    return kv_get(n->labels, n->n_labels, key);
}

static int in_values(const struct common_node_selector_req *r, const char *v)
{
    for (uint32_t i = 0; i < r->n_values; i++)
        if (strcmp(r->values[i], v) == 0)
            return 1;
    return 0;
}

/* strconv.ParseInt(s, 10, 64) */
static int parse_i64(const char *s, long long *out)
{
    char *end;

    if (!*s || !(*s == '+' || *s == '-' || (*s >= '0' && *s <= '9')))
        return -1;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return errno || *end ? -1 : 0;
}

static int expr_match(const struct common_node_selector_req *r, const char *v)
{
    long long a, b;

    if (strcmp(r->op, "In") == 0)
        return v && in_values(r, v);
    if (strcmp(r->op, "NotIn") == 0)
        return !v || !in_values(r, v);
    if (strcmp(r->op, "Exists") == 0)
        return v != NULL;
    if (strcmp(r->op, "DoesNotExist") == 0)
        return v == NULL;
    if (strcmp(r->op, "Gt") == 0 || strcmp(r->op, "Lt") == 0) {
        if (!v || r->n_values != 1 || parse_i64(v, &a) || parse_i64(r->values[0], &b))
            return 0;
        return r->op[0] == 'G' ? a > b : a < b;
    }
    return 0;
}

static int term_match(const struct common_node_selector_term *t, const struct gnode *n)
{
    if (!t->n_match_expressions && !t->n_match_fields)
        return 0; /* an empty term matches no node */
    for (uint32_t i = 0; i < t->n_match_expressions; i++) {
        const struct common_node_selector_req *r = &t->match_expressions[i];
        if (!expr_match(r, kv_get(n->labels, n->n_labels, r->key)))
            return 0;
    }
    for (uint32_t i = 0; i < t->n_match_fields; i++) {
        const struct common_node_selector_req *r = &t->match_fields[i];
        if (strcmp(r->key, "metadata.name") != 0 ||
            (strcmp(r->op, "In") != 0 && strcmp(r->op, "NotIn") != 0) || !expr_match(r, n->name))
            return 0;
    }
    return 1;
}

int fit_toleration_tolerates(const struct common_toleration *t, const struct gtaint *taint)
{
    if (t->effect[0] && strcmp(t->effect, taint->effect) != 0)
        return 0;
    if (t->key[0] && strcmp(t->key, taint->key) != 0)
        return 0;
    if (!t->op[0] || strcmp(t->op, "Equal") == 0)
        return strcmp(t->value, taint->value) == 0;
    return strcmp(t->op, "Exists") == 0;
}

#define UNSCHEDULABLE_TAINT "node.kubernetes.io/unschedulable"

const char *fit_static(const struct gshape *sh, const struct gnode *n)
{
    for (uint32_t i = 0; i < sh->n_selector; i++) {
        const char *v = kv_get(n->labels, n->n_labels, sh->selector[i].key);
        if (!v || strcmp(v, sh->selector[i].value) != 0)
            return "node(s) didn't match Pod's node affinity/selector";
    }
    if (sh->n_terms) {
        uint32_t i;
        for (i = 0; i < sh->n_terms; i++)
            if (term_match(&sh->terms[i], n))
                break;
        if (i == sh->n_terms)
            return "node(s) didn't match Pod's node affinity/selector";
    }
    for (uint32_t i = 0; i < n->n_taints; i++) {
        const struct gtaint *t = &n->taints[i];
        uint32_t j;
        if (strcmp(t->effect, "NoSchedule") != 0 && strcmp(t->effect, "NoExecute") != 0)
            continue; /* PreferNoSchedule only scores */
        for (j = 0; j < sh->n_tols; j++)
            if (fit_toleration_tolerates(&sh->tols[j], t))
                break;
        if (j == sh->n_tols)
            return strcmp(t->key, UNSCHEDULABLE_TAINT) == 0 ? "node(s) were unschedulable"
                                                            : "node(s) had untolerated taint";
    }
    return NULL;
}

const char *fit_capacity(const struct gang_state *s, const struct gang_rq *req, uint32_t n_req,
                         const struct gnode *n)
{
    for (uint32_t i = 0; i < n_req; i++) {
        uint16_t id = req[i].id;
        if (req[i].v > 0 && req[i].v > n->alloc[id] - n->used[id] - n->resv[id])
            return s->res_short[id];
    }
    return NULL;
}

/* ---- shapes ---- */

static int kb_bytes(struct common_buf *b, const void *p, size_t n)
{
    return common_buf_append(b, p, n, NULL) == COMMON_OK ? 0 : -1;
}

static int kb_str(struct common_buf *b, const char *s)
{
    uint32_t n = (uint32_t)strlen(s ? s : "");

    return kb_bytes(b, &n, sizeof(n)) || kb_bytes(b, s ? s : "", n);
}

static int kb_u32(struct common_buf *b, uint32_t v)
{
    return kb_bytes(b, &v, sizeof(v));
}

static int kb_sel(struct common_buf *b, const struct common_node_selector_req *r, uint32_t n)
{
    int e = kb_u32(b, n);

    for (uint32_t i = 0; i < n && !e; i++) {
        e = kb_str(b, r[i].key) || kb_str(b, r[i].op) || kb_u32(b, r[i].n_values);
        for (uint32_t j = 0; j < r[i].n_values && !e; j++)
            e = kb_str(b, r[i].values[j]);
    }
    return e;
}

static int shape_key(struct common_buf *b, const struct common_pod *cp, const struct gang_rq *req,
                     uint32_t n_req)
{
    int e = kb_u32(b, n_req);

    for (uint32_t i = 0; i < n_req && !e; i++)
        e = kb_bytes(b, &req[i].id, sizeof(req[i].id)) || kb_bytes(b, &req[i].v, sizeof(req[i].v));
    e = e || kb_u32(b, cp->n_node_selector);
    for (uint32_t i = 0; i < cp->n_node_selector && !e; i++)
        e = kb_str(b, cp->node_selector[i].key) || kb_str(b, cp->node_selector[i].value);
    e = e || kb_u32(b, cp->n_tolerations);
    for (uint32_t i = 0; i < cp->n_tolerations && !e; i++) {
        const struct common_toleration *t = &cp->tolerations[i];
        e = kb_str(b, t->key) || kb_str(b, t->op) || kb_str(b, t->value) || kb_str(b, t->effect);
    }
    e = e || kb_u32(b, cp->n_affinity_terms);
    for (uint32_t i = 0; i < cp->n_affinity_terms && !e; i++)
        e = kb_sel(b, cp->affinity_terms[i].match_expressions,
                   cp->affinity_terms[i].n_match_expressions) ||
            kb_sel(b, cp->affinity_terms[i].match_fields, cp->affinity_terms[i].n_match_fields);
    return e;
}

static struct common_node_selector_req *
copy_sel(struct packer *pk, const struct common_node_selector_req *r, uint32_t n)
{
    struct common_node_selector_req *d = pk_take(pk, n * sizeof(*d));

    for (uint32_t i = 0; i < n; i++) {
        const char **v = pk_take(pk, r[i].n_values * sizeof(*v));
        char *key = pk_str(pk, r[i].key), *op = pk_str(pk, r[i].op);
        for (uint32_t j = 0; j < r[i].n_values; j++) {
            char *x = pk_str(pk, r[i].values[j]);
            if (v)
                v[j] = x;
        }
        if (d) {
            d[i].key = key;
            d[i].op = op;
            d[i].values = v;
            d[i].n_values = r[i].n_values;
        }
    }
    return d;
}

/* the shape's arrays and strings, packed after the struct itself */
static void shape_fill(struct packer *pk, struct gshape *sh, const struct common_pod *cp,
                       const struct gang_rq *req, uint32_t n_req, const void *key, size_t key_len)
{
    struct gang_rq *rq = pk_take(pk, n_req * sizeof(*rq));
    struct common_kv *sel = pk_take(pk, cp->n_node_selector * sizeof(*sel));
    struct common_toleration *tol = pk_take(pk, cp->n_tolerations * sizeof(*tol));
    struct common_node_selector_term *terms = pk_take(pk, cp->n_affinity_terms * sizeof(*terms));
    void *k = pk_take(pk, key_len);

    if (rq)
        memcpy(rq, req, n_req * sizeof(*rq));
    if (k)
        memcpy(k, key, key_len);
    for (uint32_t i = 0; i < cp->n_node_selector; i++) {
        char *a = pk_str(pk, cp->node_selector[i].key), *b = pk_str(pk, cp->node_selector[i].value);
        if (sel) {
            sel[i].key = a;
            sel[i].value = b;
        }
    }
    for (uint32_t i = 0; i < cp->n_tolerations; i++) {
        const struct common_toleration *t = &cp->tolerations[i];
        char *a = pk_str(pk, t->key), *b = pk_str(pk, t->op), *c = pk_str(pk, t->value),
             *d = pk_str(pk, t->effect);
        if (tol) {
            tol[i] = *t;
            tol[i].key = a;
            tol[i].op = b;
            tol[i].value = c;
            tol[i].effect = d;
        }
    }
    for (uint32_t i = 0; i < cp->n_affinity_terms; i++) {
        const struct common_node_selector_term *t = &cp->affinity_terms[i];
        struct common_node_selector_req *me =
            copy_sel(pk, t->match_expressions, t->n_match_expressions);
        struct common_node_selector_req *mf = copy_sel(pk, t->match_fields, t->n_match_fields);
        if (terms) {
            terms[i].match_expressions = me;
            terms[i].match_fields = mf;
            terms[i].n_match_expressions = t->n_match_expressions;
            terms[i].n_match_fields = t->n_match_fields;
        }
    }
    if (sh) {
        sh->req = rq;
        sh->n_req = n_req;
        sh->selector = sel;
        sh->n_selector = cp->n_node_selector;
        sh->tols = tol;
        sh->n_tols = cp->n_tolerations;
        sh->terms = terms;
        sh->n_terms = cp->n_affinity_terms;
        sh->key = k;
        sh->key_len = (uint32_t)key_len;
    }
}

struct gshape *shape_intern(struct gang_state *s, const struct common_pod *cp,
                            const struct gang_rq *req, uint32_t n_req)
{
    struct common_buf b;
    struct gshape *sh = NULL;
    struct packer pk = {NULL, 0};

    common_buf_init(&b, (size_t)1 << 24);
    if (shape_key(&b, cp, req, n_req) || gmap_reserve(&s->shape_by_key))
        goto out;
    sh = gmap_get(&s->shape_by_key, b.data, b.len);
    if (sh) {
        sh->refs++;
        goto out;
    }
    pk_take(&pk, sizeof(*sh));
    shape_fill(&pk, NULL, cp, req, n_req, b.data, b.len);
    sh = common_calloc(1, pk.off);
    if (!sh)
        goto out;
    pk.base = (char *)sh;
    pk.off = 0;
    pk_take(&pk, sizeof(*sh));
    shape_fill(&pk, sh, cp, req, n_req, b.data, b.len);
    sh->refs = 1;
    gmap_put(&s->shape_by_key, sh->key, sh->key_len, sh); /* reserved: cannot fail */
out:
    common_buf_free(&b);
    return sh;
}

void shape_unref(struct gang_state *s, struct gshape *sh)
{
    if (!sh || --sh->refs)
        return;
    gmap_del(&s->shape_by_key, sh->key, sh->key_len);
    common_free(sh);
}
