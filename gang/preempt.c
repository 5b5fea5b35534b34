/*
 * gang/preempt.c - the preempt verb: which of kube-scheduler's preemption candidates (a node
 * and the victims it would evict there) the extender keeps. Rules R1-R4 in gang.h and
 * docs/gang.md "Preemption"; source: issue 5 item 7 and protocols.md section 1.4 "Preempt".
 *
 * Per node, one pass over the victims marks them (a uid counted once) and counts, per gang, the
 * alive members evicted (R1 stops at the first in-flight bind); a second pass judges each gang
 * once against its census (alive and quorum counts, taken once per call). R3 runs first and
 * once: the pods a preemption at the preemptor's priority could evict are handed to a dry run
 * of the gang planner. Before both, R0 runs the filter's gates (pipeline_gate): a preemptor they
 * would not let through vetoes every node. Reasons go into one growing buffer of the state,
 * NUL-separated, and are pointed to at the end (the buffer may move while it grows).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "gang/gang_int.h"

#define KEPT SIZE_MAX

/* one candidate while deciding */
struct nrank {
    size_t off;       /* its reason in s->pre_why, KEPT while kept */
    uint32_t partial; /* gangs left partially evicted (R4 a) */
    uint32_t victims; /* distinct victims (R4 b) */
};

static int terminal(const struct gpod *p)
{
    return p->phase == PH_SUCCEEDED || p->phase == PH_FAILED;
}

/* holds a place on a node now: bound or released, not terminal, not deleting */
static int alive(const struct gpod *p)
{
    return !p->deleting && !terminal(p) && (p->node >= 0 || p->released >= 0);
}

/* the per-call census of gang h (R2, R3), taken once per call */
static void census(const struct gang_state *s, struct gang *h, int32_t prio)
{
    if (h->q_mark == s->pre_call)
        return;
    h->q_mark = s->pre_call;
    h->q_alive = 0;
    h->q_quorum = 0;
    h->q_low = 1;
    for (uint32_t i = 0; i < h->n_members; i++) {
        const struct gpod *m = h->members[i];
        if (alive(m)) {
            h->q_alive++;
            h->q_quorum++;
            if (m->node < 0 || m->priority >= prio)
                h->q_low = 0;
        } else if ((m->a_flags & F_PHASED) && m->phase == PH_SUCCEEDED && !m->deleting) {
            h->q_quorum++;
        }
    }
}

/* append a reason to s->pre_why; *off gets its offset. 0 or -1 (out of memory) */
static int why_add(struct gang_state *s, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int why_add(struct gang_state *s, size_t *off, const char *fmt, ...)
{
    char tmp[GANG_REASON_MAX];
    va_list ap;
    int n;
    size_t len;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    len = n < 0 ? 0 : (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1;
    tmp[len] = '\0';
    if (s->pre_len + len + 1 > s->pre_cap) {
        size_t cap = s->pre_cap ? s->pre_cap : 1024;
        char *b;
        while (cap < s->pre_len + len + 1)
            cap *= 2;
        b = common_realloc(s->pre_why, cap);
        if (!b)
            return -1;
        s->pre_why = b;
        s->pre_cap = cap;
    }
    memcpy(s->pre_why + s->pre_len, tmp, len + 1);
    *off = s->pre_len;
    s->pre_len += len + 1;
    return 0;
}

/* may a preemption at priority prio evict q (R3)? p's gang g is never evicted for it */
static int evictable(const struct gang_state *s, const struct gpod *q, const struct gang *g,
                     int32_t prio)
{
    struct gang *h = q->gang;

    if (q->node < 0 || terminal(q) || q->priority >= prio || (h && h == g))
        return 0;
    if (!h || h->min_member <= 0)
        return 1;
    census(s, h, prio);
    return h->q_low; /* whole lower-priority gangs only */
}

/*
 * R3: could g fit whole if every pod a preemption at p's priority could evict were gone? 0 yes,
 * 1 no (the reason in s->why2), -1 out of memory.
 */
int whole_gang_short(struct gang_state *s, struct gang *g, const struct gpod *p)
{
    const struct gpod **freed;
    size_t n = 0;
    __int128 give[NRES]; /* a sum over pods of int64 requests */
    struct plan_req rq;
    struct plan_out po;
    int32_t prio = p->priority;

    freed = common_malloc((s->n_pods ? s->n_pods : 1) * sizeof(*freed));
    if (!freed)
        return -1;
    memset(give, 0, sizeof(give));
    for (size_t i = 0; i < s->pod_by_uid.cap; i++) {
        const struct gpod *q = s->pod_by_uid.e[i].hash ? s->pod_by_uid.e[i].val : NULL;
        if (!q || !evictable(s, q, g, prio))
            continue;
        freed[n++] = q;
        if (q->a_used >= 0 && s->nodes[q->a_used]->present)
            for (uint32_t k = 0; k < q->n_req; k++)
                give[q->req[k].id] += q->req[k].v;
    }
    if (!g->active && g->has_min_res)
        for (uint32_t i = 0; i < g->n_min_res; i++) {
            uint16_t id = g->min_res[i].id;
            __int128 free = s->tot_alloc[id] - s->tot_used[id] - s->tot_resv[id] + give[id];
            int64_t need = gang_min_res_need(g, i);
            if (need > free) {
                char nb[64], fb[64];
                set_why(s->why2,
                        "gang %s: minResources needs %s %s, the cluster would have %s free "
                        "even with every pod of priority below %d evicted (%zu pods)",
                        g->key, s->res_names[id] ? s->res_names[id] : "an untracked resource",
                        gang_amount_text(id, need, nb, sizeof(nb)),
                        gang_amount_text(id, gang_amount64(free), fb, sizeof(fb)), prio, n);
                common_free(freed);
                return 1;
            }
        }
    memset(&rq, 0, sizeof(rq));
    rq.dry_run = 1;
    rq.freed = freed;
    rq.n_freed = n;
    if (plan_gang(s, g, &rq, &po)) {
        common_free(freed);
        return -1;
    }
    common_free(freed);
    if (po.ok)
        return 0;
    if (po.no_node)
        set_why(s->why2,
                "gang %s: no node matches the pods' nodeSelector, affinity and tolerations; "
                "no eviction can place the gang",
                g->key);
    else
        set_why(s->why2,
                "gang %s: only %u of the %u pods it needs would fit at once even with every "
                "pod of priority below %d evicted (%zu pods)%s%s",
                g->key, po.placed, po.need, prio, n, po.short_res >= 0 ? "; short of " : "",
                po.short_res >= 0
                    ? s->res_names[po.short_res] ? s->res_names[po.short_res] : "a resource"
                    : "");
    return 1;
}

/* R1 and R2 for one candidate: r->off stays KEPT or gets the veto's reason. 0 or -1 */
static int judge_node(struct gang_state *s, const struct gang_preempt_node *nd, int32_t prio,
                      struct nrank *r)
{
    uint64_t v = ++s->pre_epoch;

    r->off = KEPT;
    r->partial = 0;
    r->victims = 0;
    for (uint32_t j = 0; j < nd->n_victims; j++) {
        struct gpod *q = pod_find(s, nd->uids[j]);
        struct gang *h;
        if (!q) { /* unknown to the books: a plain pod */
            r->victims++;
            continue;
        }
        if (q->v_mark == v)
            continue;
        q->v_mark = v;
        r->victims++;
        h = q->gang;
        if (h && (q->held >= 0 || q->released >= 0))
            return why_add(s, &r->off,
                           "victim %s/%s is a %s member of gang %s: its bind is in flight", q->ns,
                           q->name, q->held >= 0 ? "held" : "released (not yet bound)", h->key);
        if (!h || h->min_member <= 0 || !alive(q))
            continue;
        if (h->v_mark != v) {
            h->v_mark = v;
            h->v_evicted = 0;
        }
        h->v_evicted++;
    }
    for (uint32_t j = 0; j < nd->n_victims; j++) {
        struct gpod *q = pod_find(s, nd->uids[j]);
        struct gang *h = q ? q->gang : NULL;
        if (!h || h->v_mark != v || h->v_done == v)
            continue;
        h->v_done = v;
        census(s, h, prio);
        if (h->v_evicted >= h->q_alive)
            continue; /* the whole gang goes */
        if (h->q_quorum - h->v_evicted < (uint32_t)h->min_member)
            return why_add(s, &r->off,
                           "evicting %u of the %u running members of gang %s leaves %u, below "
                           "its minMember %d (only the whole gang may go)",
                           h->v_evicted, h->q_alive, h->key, h->q_quorum - h->v_evicted,
                           h->min_member);
        r->partial++;
    }
    return 0;
}

/* R4: keep the best (fewest partial gangs, then fewest victims) of the kept nodes. 0 or -1 */
static int rank_nodes(struct gang_state *s, struct nrank *r, size_t n)
{
    uint32_t best_p = UINT32_MAX, best_v = UINT32_MAX;

    for (size_t i = 0; i < n; i++) {
        if (r[i].off != KEPT)
            continue;
        if (r[i].partial < best_p || (r[i].partial == best_p && r[i].victims < best_v)) {
            best_p = r[i].partial;
            best_v = r[i].victims;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (r[i].off != KEPT || (r[i].partial == best_p && r[i].victims == best_v))
            continue;
        if (r[i].partial != best_p) {
            if (why_add(s, &r[i].off,
                        "another candidate leaves fewer gangs partially evicted (%u instead of "
                        "%u)",
                        best_p, r[i].partial))
                return -1;
        } else if (why_add(s, &r[i].off, "another candidate evicts fewer pods (%u instead of %u)",
                           best_v, r[i].victims)) {
            return -1;
        }
    }
    return 0;
}

enum common_rc gang_preempt(struct gang_state *s, const struct common_pod *preemptor,
                            const struct gang_preempt_node *nodes, size_t n_nodes, int64_t now,
                            struct gang_preempt_choice *out, struct gang_preempt_result *res,
                            struct common_error *err)
{
    struct gpod *p;
    struct gang *g;
    struct nrank *r = NULL;
    enum common_rc rc;
    size_t all_off = KEPT;
    int short_whole = 0;

    memset(res, 0, sizeof(res[0]));
    res->reason = "";
    if (!preemptor->uid || !*preemptor->uid)
        return common_error_set(err, COMMON_EINVAL, "preemptor pod without uid");
    p = pod_find(s, preemptor->uid);
    if (!p) {
        if ((rc = gang_pod_upsert(s, preemptor, err)) != COMMON_OK)
            return rc;
        p = pod_find(s, preemptor->uid);
    }
    g = p->gang;
    s->pre_len = 0;
    s->pre_call = ++s->pre_epoch;
    r = common_malloc((n_nodes ? n_nodes : 1) * sizeof(*r));
    if (!r)
        goto oom;
    /* R0: the gates of the filter (no PodGroup, backoff, stale minMember, too few pods, a
     * phased pod not placed yet): a pod its gang rules would not place gets no eviction */
    if (g) {
        const char *why;
        enum gate gt = pipeline_gate(s, g, p, now, &why);
        if (gt == GATE_WAIT) {
            short_whole = 1;
            if (why_add(s, &all_off, "%s; no eviction can place pod %s/%s", why, p->ns, p->name))
                goto oom;
        } else if (gt == GATE_PASS) { /* R3: what the filter plans whole */
            short_whole = whole_gang_short(s, g, p);
            if (short_whole < 0 || (short_whole && why_add(s, &all_off, "%s", s->why2)))
                goto oom;
        }
    }
    for (size_t i = 0; i < n_nodes; i++) {
        if (short_whole) {
            r[i].off = all_off;
            continue;
        }
        if (judge_node(s, &nodes[i], p->priority, &r[i]))
            goto oom;
    }
    if (rank_nodes(s, r, n_nodes))
        goto oom;
    for (size_t i = 0; i < n_nodes; i++) {
        out[i].keep = r[i].off == KEPT;
        out[i].reason = out[i].keep ? NULL : s->pre_why + r[i].off;
        res->n_kept += (size_t)out[i].keep;
    }
    if (res->n_kept)
        goto done;
    if (short_whole)
        res->reason = s->pre_why + all_off;
    else if (!n_nodes)
        res->reason = "no candidate nodes";
    else {
        set_why(s->why, "every candidate node is vetoed; %s: %s",
                nodes[0].node ? nodes[0].node : "", out[0].reason);
        res->reason = s->why;
    }
done:
    common_free(r);
    return COMMON_OK;
oom:
    common_free(r);
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}
