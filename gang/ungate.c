/*
 * gang/ungate.c - the ungating pass: which members at trainsched's scheduling gate
 * (GANG_SCHEDULING_GATE) to ungate now, whole gangs at a time. The rules are in gang.h
 * ("the gang gate") and docs/gang.md "The gang gate".
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "gang/gang_int.h"

void ug_mark(struct gang_state *s, struct gang *g)
{
    if (!g || g->ug_dirty)
        return;
    if (s->n_ug_dirty == s->cap_ug_dirty) {
        uint32_t cap = s->cap_ug_dirty ? s->cap_ug_dirty * 2 : 16;
        struct gang **d = common_realloc(s->ug_dirty, cap * sizeof(*d));
        if (!d) {
            s->ug_all = 1; /* look at every gang instead */
            return;
        }
        s->ug_dirty = d;
        s->cap_ug_dirty = cap;
    }
    g->ug_dirty = 1;
    s->ug_dirty[s->n_ug_dirty++] = g;
}

void ug_forget(struct gang_state *s, struct gang *g)
{
    if (!g->ug_dirty)
        return;
    for (uint32_t i = 0; i < s->n_ug_dirty; i++)
        if (s->ug_dirty[i] == g) {
            s->ug_dirty[i] = s->ug_dirty[--s->n_ug_dirty];
            break;
        }
    g->ug_dirty = 0;
}

int gang_ungate_pending(const struct gang_state *s, int64_t now)
{
    if (s->n_ours_gangs && (s->ug_all || now >= s->ug_retry_at))
        return 1;
    for (uint32_t i = 0; i < s->n_ug_dirty; i++)
        if (s->ug_dirty[i]->c.ours)
            return 1;
    return 0;
}

void gang_ungate_failed(struct gang_state *s, const char *uid)
{
    struct gpod *p = pod_find(s, uid);

    if (!p || !p->ungating)
        return;
    pod_detach(s, p);
    p->ungating = 0;
    pod_attach(s, p);
    ug_mark(s, p->gang);
}

struct ug_cand {
    struct gang *g;
    int32_t prio;
};

static int cmp_cand(const void *a, const void *b)
{
    const struct ug_cand *x = a, *y = b;

    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    return x->g->seq < y->g->seq ? -1 : x->g->seq > y->g->seq;
}

static int32_t gang_priority(const struct gang *g)
{
    int32_t p = INT32_MIN;

    for (uint32_t i = 0; i < g->n_members; i++)
        if ((g->members[i]->a_flags & F_KNOWN) && g->members[i]->priority > p)
            p = g->members[i]->priority;
    return p;
}

static void copy_to(char *dst, size_t n, const char *src)
{
    size_t l = strlen(src);

    if (l >= n)
        l = n - 1;
    memcpy(dst, src, l);
    dst[l] = '\0';
}

/* hand p out: it is no longer at our gate in the books */
static void emit(struct gang_state *s, struct gpod *p, enum gang_ungate_why why,
                 struct gang_ungate *out, struct gang_ungate_result *res)
{
    struct gang_ungate *u = &out[res->n++];

    memset(u, 0, sizeof(*u));
    copy_to(u->pod.uid, sizeof(u->pod.uid), p->uid);
    copy_to(u->pod.namespace, sizeof(u->pod.namespace), p->ns);
    copy_to(u->pod.name, sizeof(u->pod.name), p->name);
    copy_to(u->gang, sizeof(u->gang), p->gang->key);
    u->gate_index = p->gate_index;
    u->why = why;
    pod_detach(s, p);
    p->ungating = 1;
    pod_attach(s, p);
}

/* every member at our gate (phased ones only when phased_only) */
static uint32_t emit_all(struct gang_state *s, struct gang *g, enum gang_ungate_why why,
                         int phased_only, struct gang_ungate *out, struct gang_ungate_result *res)
{
    uint32_t k = 0;

    /* emit re-attaches the member in place: the member list keeps its order */
    for (uint32_t i = 0; i < g->n_members; i++) {
        struct gpod *p = g->members[i];
        if (!(p->a_flags & F_OURS) || (phased_only && !(p->a_flags & F_PHASED)))
            continue;
        emit(s, p, why, out, res);
        k++;
    }
    return k;
}

/* members that can be placed now toward quorum: what holds or is bound, plus the pending
 * members with no gate but ours */
static uint32_t placeable(const struct gang *g)
{
    uint32_t n = gang_progress(g);

    for (uint32_t i = 0; i < g->n_members; i++) {
        const struct gpod *p = g->members[i];
        if ((p->a_flags & F_ELIGIBLE) && !(p->gates & ~COMMON_GATE_TRAINSCHED))
            n++;
    }
    return n;
}

/* the member a preemption for g would be run for: the highest priority at our gate */
static struct gpod *preemptor_of(const struct gang *g)
{
    struct gpod *best = NULL;

    for (uint32_t i = 0; i < g->n_members; i++) {
        struct gpod *p = g->members[i];
        if ((p->a_flags & F_OURS) && !(p->a_flags & F_PHASED) &&
            (!best || p->priority > best->priority))
            best = p;
    }
    return best;
}

/* decide g; 0, or -1 out of memory (nothing of g handed out) */
static int ug_gang(struct gang_state *s, struct gang *g, int64_t now, struct gang_ungate *out,
                   struct gang_ungate_result *res, uint32_t *plans)
{
    struct plan_out po;
    struct plan_req rq;
    struct gpod *p;
    const char *why;
    uint32_t k;
    int r, counted;

    if (!g->has_pg) {
        set_why(g->why, "PodGroup %s not found", g->key);
        return 0;
    }
    k = emit_all(s, g, GANG_UNGATE_ALONE, 1, out, res); /* phased members go first, alone */
    res->gangs += k > 0; /* the gang counts once, whatever else goes below */
    p = preemptor_of(g);
    if (!p)
        return 0;
    if (g->min_member <= 0 || gang_admitted(g) || g->active) {
        emit_all(s, g, GANG_UNGATE_ALONE, 0, out, res);
        res->gangs += k == 0;
        return 0;
    }
    switch (pipeline_gate(s, g, p, now, &why)) {
    case GATE_WAIT:
        if (why != g->why)
            set_why(g->why, "%s", why);
        if (g->backoff_until > now && g->backoff_until < s->ug_retry_at)
            s->ug_retry_at = g->backoff_until;
        return 0;
    case GATE_ALONE:
        emit_all(s, g, GANG_UNGATE_ALONE, 0, out, res);
        res->gangs += k == 0;
        return 0;
    case GATE_PASS:
        break;
    }
    counted = k > 0;
    k = placeable(g);
    if (k < (uint32_t)g->min_member) {
        set_why(g->why,
                "waiting for member pods held by other scheduling gates: %u of minMember %d can "
                "be placed now",
                k, g->min_member);
        return 0;
    }
    if (g->has_min_res && min_resources_short(s, g))
        return 0;
    if (active_reserve(s) || answers_reserve(s, 0, 0))
        return -1;
    memset(&rq, 0, sizeof(rq));
    rq.ungate = 1;
    (*plans)++;
    if (plan_gang(s, g, &rq, &po))
        return -1;
    if (po.ok && !po.partial) {
        gang_activate(s, g, now);
        g->preempting = 0;
        emit_all(s, g, GANG_UNGATE_PLACED, 0, out, res);
        set_why(g->why,
                "ungated: the whole gang is placed (%u of minMember %d) and its plan reserved for "
                "%lld s",
                po.placed + g->c.bound + g->c.released + g->c.done, g->min_member,
                (long long)((g->deadline - now) / 1000));
        res->gangs += !counted;
        return 0;
    }
    if (!po.no_node && p->priority > 0) {
        s->pre_call = ++s->pre_epoch;
        r = whole_gang_short(s, g, p);
        if (r < 0)
            return -1;
        if (r == 0) {
            emit_all(s, g, GANG_UNGATE_PREEMPT, 0, out, res);
            set_why(g->why,
                    "ungated: gang %s fits only with lower-priority pods preempted; kube-scheduler "
                    "preempts for it",
                    g->key);
            res->gangs += !counted;
            return 0;
        }
    }
    plan_failure_why(s, g, &po);
    return 0;
}

enum common_rc gang_ungate(struct gang_state *s, int64_t now, struct gang_ungate *out, size_t cap,
                           struct gang_ungate_result *res, struct common_error *err)
{
    struct ug_cand *c;
    size_t n = 0, room;
    uint32_t plans = 0, max_plans = s->cfg.ungate_max_plans ? s->cfg.ungate_max_plans : 64;
    int all = s->ug_all || now >= s->ug_retry_at;
    enum common_rc rc = COMMON_OK;

    memset(res, 0, sizeof(*res));
    room = all ? s->gang_by_key.n : s->n_ug_dirty;
    c = common_malloc((room ? room : 1) * sizeof(*c));
    if (!c)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (all) {
        for (size_t i = 0; i < s->gang_by_key.cap; i++) {
            struct gang *g = s->gang_by_key.e[i].hash ? s->gang_by_key.e[i].val : NULL;
            if (g && g->c.ours)
                c[n++] = (struct ug_cand){g, gang_priority(g)};
        }
        s->ug_all = 0;
        s->ug_retry_at = INT64_MAX;
    } else {
        for (uint32_t i = 0; i < s->n_ug_dirty; i++) {
            struct gang *g = s->ug_dirty[i];
            if (g->c.ours)
                c[n++] = (struct ug_cand){g, gang_priority(g)};
        }
    }
    for (uint32_t i = 0; i < s->n_ug_dirty; i++)
        s->ug_dirty[i]->ug_dirty = 0;
    s->n_ug_dirty = 0;
    qsort(c, n, sizeof(*c), cmp_cand);
    for (size_t i = 0; i < n; i++) {
        struct gang *g = c[i].g;
        if (res->n + g->c.ours > cap || plans >= max_plans) {
            res->more = 1;
            for (size_t j = i; j < n; j++)
                ug_mark(s, c[j].g);
            break;
        }
        res->examined++;
        if (ug_gang(s, g, now, out, res, &plans)) {
            for (size_t j = i; j < n; j++)
                ug_mark(s, c[j].g);
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            break;
        }
    }
    res->waiting = s->n_ours_gangs;
    common_free(c);
    node_gc(s);
    return rc;
}
