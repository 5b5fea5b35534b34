/*
 * gang/score.c - what makes gang_prioritize cheap at thousands of nodes, without changing a
 * score: the slots of the last NodeNames list (kube-scheduler sends its node list in the same
 * order to every call, so the names are compared in one sequential pass instead of hashed and
 * looked up one by one), and the least-allocated part of the score per request vector and
 * node slot, recomputed only for the slots whose node changed (s->node_gen) since. Both live
 * in the state and are dropped with it; a memo that cannot get memory is simply not used.
 */
#include <string.h>

#include "common/alloc.h"
#include "gang/gang_int.h"

void node_touch(struct gang_state *s, int32_t idx)
{
    if (idx >= 0 && (uint32_t)idx < s->cap_gen)
        s->node_gen[idx] = ++s->node_clock;
}

int node_gen_reserve(struct gang_state *s, uint32_t cap)
{
    uint64_t *g;

    if (cap <= s->cap_gen)
        return 0;
    g = common_realloc(s->node_gen, cap * sizeof(*g));
    if (!g)
        return -1;
    memset(g + s->cap_gen, 0, (cap - s->cap_gen) * sizeof(*g));
    s->node_gen = g;
    s->cap_gen = cap;
    return 0;
}

/* 0..4: mean over the requested resources (pods left out) of the room left after the pod */
int64_t least_allocated(const struct gnode *n, const struct gang_rq *req, uint32_t n_req)
{
    __int128 sum = 0;
    int64_t k = 0;

    for (uint32_t i = 0; i < n_req; i++) {
        uint16_t id = req[i].id;
        int64_t alloc = n->alloc[id], left;
        if (id == RES_PODS || req[i].v <= 0)
            continue;
        k++;
        if (alloc <= 0)
            continue;
        left = alloc - n->used[id] - n->resv[id] - req[i].v;
        if (left <= 0)
            continue;
        if (left > alloc)
            left = alloc;
        sum += (__int128)left * 4000 / alloc;
    }
    return k ? (int64_t)(sum / k / 1000) : 0;
}

const int32_t *prio_slots(struct gang_state *s, const char *const *nodes, size_t n_nodes)
{
    struct names_memo *m = &s->names;
    int valid = m->gen == s->names_gen && m->ok;
    size_t len = 0, off = 0;
    int miss = 0;

    if (n_nodes > m->cap_slots) {
        int32_t *sl = common_realloc(m->slots, n_nodes * sizeof(*sl));
        if (!sl)
            return NULL;
        m->slots = sl;
        m->cap_slots = n_nodes;
        valid = 0;
    }
    /* names equal to the memo's, in order, keep their slot: the name map has not changed */
    for (size_t i = 0; i < n_nodes; i++) {
        const char *name = nodes[i] ? nodes[i] : "";
        if (valid && i < m->n && off < m->len && strcmp(name, m->blob + off) == 0) {
            off += strlen(m->blob + off) + 1;
            continue;
        }
        if (valid && i < m->n && off < m->len)
            off += strlen(m->blob + off) + 1;
        m->slots[i] = node_slot_find(s, name);
        miss = 1;
    }
    if (!miss && valid && n_nodes == m->n)
        return m->slots;
    /* keep this list for the next call */
    for (size_t i = 0; i < n_nodes; i++)
        len += strlen(nodes[i] ? nodes[i] : "") + 1;
    m->ok = 0;
    if (len > m->cap) {
        char *b = common_realloc(m->blob, len);
        if (!b)
            return m->slots; /* the slots are right; only the memo is lost */
        m->blob = b;
        m->cap = len;
    }
    off = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        const char *name = nodes[i] ? nodes[i] : "";
        size_t l = strlen(name) + 1;
        memcpy(m->blob + off, name, l);
        off += l;
    }
    m->len = len;
    m->n = n_nodes;
    m->gen = s->names_gen;
    m->ok = 1;
    return m->slots;
}

static int req_equal(const struct la_memo *m, const struct gang_rq *req, uint32_t n_req)
{
    if (m->n_req != n_req)
        return 0;
    for (uint32_t i = 0; i < n_req; i++)
        if (m->req[i].id != req[i].id || m->req[i].v != req[i].v)
            return 0;
    return 1;
}

struct la_memo *prio_memo(struct gang_state *s, const struct gang_rq *req, uint32_t n_req)
{
    struct la_memo *m = NULL;

    for (uint32_t i = 0; i < LA_MEMOS; i++)
        if (s->la[i].score && req_equal(&s->la[i], req, n_req)) {
            m = &s->la[i];
            break;
        }
    if (!m) {
        struct gang_rq *rq = common_malloc((n_req ? n_req : 1) * sizeof(*rq));
        m = &s->la[s->la_next];
        if (!rq)
            return NULL;
        s->la_next = (s->la_next + 1) % LA_MEMOS;
        common_free(m->req);
        m->req = rq;
        memcpy(rq, req, n_req * sizeof(*rq));
        m->n_req = n_req;
        if (m->score)
            memset(m->gen, 0, m->cap * sizeof(*m->gen));
    }
    if (m->cap < s->cap_gen) {
        uint64_t *g = common_realloc(m->gen, s->cap_gen * sizeof(*g));
        int8_t *sc;
        if (g)
            m->gen = g;
        sc = g ? common_realloc(m->score, s->cap_gen) : NULL;
        if (!g || !sc) {
            m->n_req = UINT32_MAX; /* matches no request: rebuilt next time */
            return NULL;
        }
        m->score = sc;
        memset(m->gen + m->cap, 0, (s->cap_gen - m->cap) * sizeof(*m->gen));
        m->cap = s->cap_gen;
    }
    return m;
}

int64_t prio_la(const struct gang_state *s, struct la_memo *m, int32_t idx)
{
    uint64_t gen = s->node_gen[idx];

    if (m->gen[idx] != gen) {
        const struct gnode *n = s->nodes[idx];
        m->score[idx] = (int8_t)(n && n->present ? least_allocated(n, m->req, m->n_req) : -1);
        m->gen[idx] = gen;
    }
    return m->score[idx];
}

void prio_memo_free(struct gang_state *s)
{
    for (uint32_t i = 0; i < LA_MEMOS; i++) {
        common_free(s->la[i].req);
        common_free(s->la[i].gen);
        common_free(s->la[i].score);
    }
    memset(s->la, 0, sizeof(s->la));
    common_free(s->names.blob);
    common_free(s->names.slots);
    memset(&s->names, 0, sizeof(s->names));
    common_free(s->node_gen);
    s->node_gen = NULL;
    s->cap_gen = 0;
}
