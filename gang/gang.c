/*
 * gang/gang.c - the decisions: filter, prioritize, bind, tick, PodGroup status, introspection.
 * The rules are in gang.h and docs/gang.md.
 */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/quantity.h"
#include "gang/gang_int.h"

static const char *const R_UNKNOWN_NODE = "node unknown to trainsched's cache";

/* ---- the gang policy's gate (pipeline.c runs the gates of every policy) ---- */

static int declared_mismatch(const struct gang *g, int32_t *seen)
{
    for (int i = 0; i < DECL_SLOTS; i++)
        if (g->decl_cnt[i] && g->decl_val[i] != g->min_member) {
            *seen = g->decl_val[i];
            return 1;
        }
    if (g->decl_overflow) {
        *seen = -1;
        return 1;
    }
    return 0;
}

static const char *first_gate(const struct gang *g)
{
    for (uint32_t i = 0; i < g->n_members; i++)
        if (g->members[i]->a_flags & F_GATED)
            return g->members[i]->gate;
    return "";
}

enum gate gang_quorum_gate(struct gang_state *s, struct gang *g, const struct gpod *p, int64_t now,
                           const char **why)
{
    int32_t seen;
    uint32_t pending_phased;

    *why = g->why;
    if (!g->has_pg) {
        set_why(g->why, "PodGroup %s not found", g->key);
        return GATE_WAIT;
    }
    if (g->min_member <= 0 || (p->a_flags & F_PHASED) || gang_admitted(g))
        return GATE_ALONE;
    if (g->backoff_until > now) {
        set_why(s->why, "gang %s backing off for %lld ms more after failure %u: %s", g->key,
                (long long)(g->backoff_until - now), g->failures, g->why);
        *why = s->why;
        return GATE_WAIT;
    }
    if (declared_mismatch(g, &seen)) {
        if (seen >= 0)
            set_why(g->why,
                    "PodGroup %s has minMember %d but member pods were created for %d: waiting "
                    "for the PodGroup and its pods to agree",
                    g->key, g->min_member, seen);
        else
            set_why(g->why,
                    "PodGroup %s has minMember %d but member pods were created for several "
                    "other values: waiting for the PodGroup and its pods to agree",
                    g->key, g->min_member);
        return GATE_WAIT;
    }
    if (g->c.known < (uint32_t)g->min_member) {
        set_why(g->why, "waiting for pods: %u of minMember %d exist", g->c.known, g->min_member);
        return GATE_WAIT;
    }
    if (g->c.gated && (uint64_t)gang_progress(g) + g->c.eligible < (uint64_t)g->min_member) {
        /* kube-scheduler places a gated pod only once its gates are gone, and Kueue's
         * topology-aware scheduling writes the pod's domain (nodeSelector) as it ungates it:
         * a plan made before would place those members blind */
        const char *gate = first_gate(g);
        set_why(g->why,
                "waiting for %u member pod(s) with scheduling gate %s to be ungated%s: %u of "
                "minMember %d can be placed now",
                g->c.gated, gate,
                strcmp(gate, GANG_KUEUE_TOPOLOGY_GATE) == 0
                    ? " (Kueue's topology-aware scheduling assigns their domain)"
                    : "",
                gang_progress(g) + g->c.eligible, g->min_member);
        return GATE_WAIT;
    }
    pending_phased = g->c.phased_known - g->c.done;
    if ((uint64_t)gang_progress(g) + g->c.eligible < (uint64_t)g->min_member && pending_phased) {
        set_why(g->why,
                "waiting for %u phased pod(s) (%s) to be placed: %u of minMember %d can be "
                "placed now",
                pending_phased, GANG_PHASED_ANNOTATION, gang_progress(g) + g->c.eligible,
                g->min_member);
        return GATE_WAIT;
    }
    return GATE_PASS;
}

/* ---- filter ---- */

static void all_verdict(struct gang_node_verdict *out, size_t n, enum gang_verdict v,
                        const char *reason)
{
    for (size_t i = 0; i < n; i++) {
        out[i].verdict = v;
        out[i].reason = v == GANG_NODE_OK ? NULL : reason;
    }
}

/*
 * only_node - node (a books index) is the pod's only place: OK where the candidate is its name,
 * UNRESOLVABLE with `other` elsewhere. at >= 0 is the candidate index already known to match
 * (the fast path found it). Unknown candidate names get R_UNKNOWN_NODE only when no candidate
 * matches: when one does, the extender leaves the others out of its answer (extender/answer.h)
 * and 5,000 lookups would be spent on reasons nobody reads.
 */
static size_t only_node(const struct gang_state *s, const char *const *nodes, size_t n,
                        int32_t node, const char *other, ptrdiff_t at,
                        struct gang_node_verdict *out)
{
    const char *name = s->nodes[node]->name;
    size_t ok = 0;

    for (size_t i = 0; i < n; i++) {
        if (at >= 0 ? (ptrdiff_t)i == at : strcmp(nodes[i], name) == 0) {
            out[i].verdict = GANG_NODE_OK;
            out[i].reason = NULL;
            ok++;
        } else {
            out[i].verdict = GANG_NODE_UNRESOLVABLE;
            out[i].reason = other;
        }
    }
    if (!ok)
        for (size_t i = 0; i < n; i++)
            if (node_slot_find(s, nodes[i]) < 0)
                out[i].reason = R_UNKNOWN_NODE;
    return ok;
}

/* per-node fit of p alone; capacity shortfalls are FAILED, everything else UNRESOLVABLE */
/* the reason p's ResourceClaims cannot be allocated on nd, kept in the state's per-call
 * reason store (gdra_node_reason), NULL when they can or p has none */
static const char *dra_reason(const struct gang_state *s, const struct gpod *p,
                              const struct gnode *nd)
{
    char buf[GANG_REASON_MAX];
    const char *r;

    if (!s->dra || !(r = gdra_node_reason(s, p, nd, buf, sizeof(buf))))
        return NULL;
    return gang_reason_keep((struct gang_state *)s, r);
}

static size_t fit_each(const struct gang_state *s, const struct gpod *p, const char *const *nodes,
                       size_t n, const char *capacity_reason, struct gang_node_verdict *out)
{
    size_t ok = 0;

    for (size_t i = 0; i < n; i++) {
        int32_t idx = node_slot_find(s, nodes[i]);
        const struct gnode *nd = idx >= 0 ? s->nodes[idx] : NULL;
        const char *r;
        if (!nd || !nd->present) {
            out[i].verdict = GANG_NODE_UNRESOLVABLE;
            out[i].reason = R_UNKNOWN_NODE;
        } else if ((r = fit_static(p->shape, nd)) != NULL) {
            out[i].verdict = GANG_NODE_UNRESOLVABLE;
            out[i].reason = r;
        } else if (!capacity_reason && (r = fit_capacity(s, p->req, p->n_req, nd)) != NULL) {
            out[i].verdict = GANG_NODE_FAILED;
            out[i].reason = r;
        } else if ((r = dra_reason(s, p, nd)) != NULL) {
            out[i].verdict = GANG_NODE_FAILED;
            out[i].reason = r;
        } else if (capacity_reason) {
            out[i].verdict = GANG_NODE_FAILED;
            out[i].reason = capacity_reason;
        } else {
            out[i].verdict = GANG_NODE_OK;
            out[i].reason = NULL;
            ok++;
        }
    }
    return ok;
}

/* a member of an admitted gang that requires a topology level stays in the gang's domain: OK
 * nodes outside it become UNRESOLVABLE; returns how many */
static size_t outside_domain(struct gang_state *s, const struct gang *g, const char *const *nodes,
                             size_t n, struct gang_node_verdict *out)
{
    size_t k = 0;

    set_why(s->why2, "outside the gang's topology domain %s %s", gang_domain_level(s, g),
            g->dom_path);
    for (size_t i = 0; i < n; i++) {
        int32_t idx;
        if (out[i].verdict != GANG_NODE_OK)
            continue;
        idx = node_slot_find(s, nodes[i]);
        if (idx >= 0 && gang_node_in_domain(s, g, s->nodes[idx]) == 0) {
            out[i].verdict = GANG_NODE_UNRESOLVABLE;
            out[i].reason = s->why2;
            k++;
        }
    }
    return k;
}

static void add_excl(struct gang *g, int32_t node)
{
    const uint32_t cap = sizeof(g->excl) / sizeof(g->excl[0]);

    for (uint32_t i = 0; i < g->n_excl; i++)
        if (g->excl[i] == node)
            return;
    if (g->n_excl == cap) { /* forget the oldest */
        memmove(g->excl, g->excl + 1, (cap - 1) * sizeof(g->excl[0]));
        g->n_excl--;
    }
    g->excl[g->n_excl++] = node;
}

void plan_failure_why(const struct gang_state *s, struct gang *g, const struct plan_out *po)
{
    if (po->why[0])
        set_why(g->why, "gang %s: %s", g->key, po->why);
    else if (po->no_node)
        set_why(g->why, "gang %s: no node matches the pods' nodeSelector, affinity and tolerations",
                g->key);
    else
        set_why(g->why,
                "gang %s: only %u of the %u pods it needs fit at once (after other gangs' "
                "reservations)%s%s",
                g->key, po->placed, po->need, po->short_res >= 0 ? "; short of " : "",
                po->short_res >= 0
                    ? s->res_names[po->short_res] ? s->res_names[po->short_res] : "a resource"
                    : "");
}

int64_t gang_min_res_need(const struct gang *g, uint32_t i)
{
    uint16_t id = g->min_res[i].id;
    int64_t v = g->min_res[i].v;

    if (!g->c.done)
        return v;
    for (uint32_t j = 0; j < g->n_members; j++) {
        const struct gpod *m = g->members[j];
        if (!(m->a_flags & F_DONE))
            continue;
        for (uint32_t k = 0; k < m->n_req; k++)
            if (m->req[k].id == id)
                v -= m->req[k].v;
    }
    return v > 0 ? v : 0;
}

/* minResources (less the finished phase) against the cluster-wide free sum; 0 when it fits */
const char *gang_amount_text(uint16_t id, int64_t v, char *buf, size_t n)
{
    struct common_quantity q;

    if (id != RES_CPU && id != RES_MEMORY && id != RES_EPHEMERAL) {
        snprintf(buf, n, "%lld", (long long)v);
        return buf;
    }
    /* millicores and bytes to nano-units; the canonical text Kubernetes prints */
    q.nano = (__int128)v * (id == RES_CPU ? 1000000 : 1000000000);
    q.format = id == RES_CPU ? COMMON_QTY_DECIMAL_SI : COMMON_QTY_BINARY_SI;
    if (common_quantity_format(&q, buf, n) < 0)
        snprintf(buf, n, "%lld%s", (long long)v, id == RES_CPU ? "m" : "");
    return buf;
}

int min_resources_short(const struct gang_state *s, struct gang *g)
{
    for (uint32_t i = 0; i < g->n_min_res; i++) {
        uint16_t id = g->min_res[i].id;
        __int128 free = s->tot_alloc[id] - s->tot_used[id] - s->tot_resv[id];
        int64_t need = gang_min_res_need(g, i);
        if (need > free) {
            char nb[64], fb[64];
            set_why(g->why,
                    "gang %s: minResources needs %s %s%s, the cluster has %s free (after "
                    "other gangs' reservations)",
                    g->key, s->res_names[id] ? s->res_names[id] : "an untracked resource",
                    gang_amount_text(id, need, nb, sizeof(nb)),
                    need != g->min_res[i].v ? " (its phased pods done)" : "",
                    gang_amount_text(id, gang_amount64(free), fb, sizeof(fb)));
            return 1;
        }
    }
    return 0;
}

/* whole_gang_short (R3 of the preempt verb) for a call of our own: a fresh census epoch */
static int short_even_with_preemption(struct gang_state *s, struct gang *g, const struct gpod *p)
{
    s->pre_call = ++s->pre_epoch;
    return whole_gang_short(s, g, p);
}

/*
 * plan_for_preemption - the gang does not fit in free capacity. If it would with every pod that
 * a preemption at p's priority may evict gone (R3 of gang_preempt), commit the part of the plan
 * that fits now, the member rq is about included, and mark the gang preempting: its binds hold
 * what fits, and its other members then fail kube-scheduler's own filters, so the scheduler
 * runs its preemption for them (and asks gang_preempt, whose rules still apply). Without this,
 * a gang whose members each fit alone never preempts: DefaultPreemption offers no candidate for
 * a pod that fits without victims, and the extender is never asked. The partial hold lasts at
 * most the gang's timeout. 1 planned (partly), 0 not, -1 out of memory.
 */
static int plan_for_preemption(struct gang_state *s, struct gang *g, struct gpod *p,
                               struct plan_req *rq, struct plan_out *po)
{
    int r;

    /* priority 0 or less (no PriorityClass, the usual case) is left out: the check walks every
     * pod of the cluster, and would run on each retry of each member of a gang that waits */
    if (po->no_node || po->pod_unplaced || p->priority <= 0)
        return 0;
    r = short_even_with_preemption(s, g, p);
    if (r)
        return r < 0 ? -1 : 0;
    rq->partial = 1;
    if (plan_gang(s, g, rq, po))
        return -1;
    if (!po->ok)
        return 0;
    g->preempting = po->partial;
    if (po->partial)
        set_why(g->why,
                "gang %s: %u of the %u pods it needs fit now; holding them while kube-scheduler "
                "preempts lower-priority pods for the rest",
                g->key, po->placed, po->need);
    return 1;
}

enum common_rc gang_filter(struct gang_state *s, const struct common_pod *pod,
                           const char *const *nodes, size_t n_nodes, int64_t now,
                           struct gang_node_verdict *out, struct gang_filter_result *res,
                           struct common_error *err)
{
    struct gpod *p;
    struct gang *g;
    const char *why;
    enum common_rc rc;
    int32_t *cands = NULL;
    struct plan_out po;
    struct plan_req rq;
    int found = 0;
    ptrdiff_t at = -1; /* the candidate index of the planned node, when the fast path saw it */

    memset(res, 0, sizeof(*res));
    res->reason = "";
    gdra_reasons_reset(s);
    p = pod_find(s, pod->uid);
    if (!p) {
        if ((rc = gang_pod_upsert(s, pod, err)) != COMMON_OK)
            return rc;
        p = pod_find(s, pod->uid);
    }
    g = p->gang;
    if (!g) {
        all_verdict(out, n_nodes, GANG_NODE_OK, NULL);
        res->n_ok = n_nodes;
        return COMMON_OK;
    }
    if (g->has_pg && (p->held >= 0 || p->released >= 0 || p->node >= 0)) {
        int32_t on = p->node >= 0 ? p->node : p->released >= 0 ? p->released : p->held;
        set_why(s->why2, "pod is already held or bound on %s", s->nodes[on]->name);
        res->n_ok = only_node(s, nodes, n_nodes, on, s->why2, -1, out);
        goto done;
    }
    switch (pipeline_gate(s, g, p, now, &why)) {
    case GATE_WAIT:
        all_verdict(out, n_nodes, GANG_NODE_UNRESOLVABLE, why);
        res->reason = why;
        res->retry = 1;
        goto done;
    case GATE_ALONE:
        res->n_ok = fit_each(s, p, nodes, n_nodes, NULL, out);
        if (!(p->a_flags & F_PHASED) && gang_topology_required(g) && g->dom_path[0])
            res->n_ok -= outside_domain(s, g, nodes, n_nodes, out);
        if (!res->n_ok) {
            set_why(s->why, "no candidate node fits pod %s/%s", p->ns, p->name);
            res->reason = s->why;
        }
        goto done;
    case GATE_PASS:
        break;
    }
    if (!(p->a_flags & F_ELIGIBLE)) {
        set_why(s->why, "pod %s/%s is not pending", p->ns, p->name);
        all_verdict(out, n_nodes, GANG_NODE_UNRESOLVABLE, s->why);
        res->reason = s->why;
        goto done;
    }
    if (!g->active && g->has_min_res && min_resources_short(s, g)) {
        gang_drop_plan(s, g);
        res->n_ok = fit_each(s, p, nodes, n_nodes, g->why, out);
        res->reason = g->why;
        goto done;
    }
    /* the fast path: the plan stands and names one of the candidates */
    if (p->planned >= 0 && (g->active || (g->plan_valid && g->plan_epoch == s->resv_epoch))) {
        const char *name = s->nodes[p->planned]->name;
        for (size_t i = 0; i < n_nodes && !found; i++)
            if (strcmp(nodes[i], name) == 0) {
                found = 1;
                at = (ptrdiff_t)i;
            }
        if (!found) /* the scheduler's own filters ruled the planned node out */
            add_excl(g, p->planned);
    }
    if (!found) {
        cands = common_malloc((n_nodes ? n_nodes : 1) * sizeof(*cands));
        if (!cands)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        for (size_t i = 0; i < n_nodes; i++) {
            int32_t idx = node_slot_find(s, nodes[i]);
            cands[i] = idx >= 0 && s->nodes[idx]->present ? idx : -1;
        }
        memset(&rq, 0, sizeof(rq));
        rq.restrict_pod = p;
        rq.cands = cands;
        rq.n_cands = n_nodes;
        if (plan_gang(s, g, &rq, &po)) {
            common_free(cands);
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        if (!po.ok && (!g->active || g->preempting)) {
            struct plan_out first = po;
            int pre = plan_for_preemption(s, g, p, &rq, &po);
            if (pre < 0) {
                common_free(cands);
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
            }
            if (!pre)
                po = first;
        } else if (po.ok && !po.partial) {
            g->preempting = 0; /* the whole gang fits now */
        }
        common_free(cands);
        if (!po.ok && g->active && g->preempting) {
            /* this member waits for the preemption that makes room for it. kube-scheduler
             * calls the filter only when its own filters pass somewhere: then the room is
             * there for it but not (yet) for us (a victim's deletion not seen yet, another
             * gang's reservation). Rejected nodes would park the pod until some cluster event
             * (its preemption finds no victim either), so it is answered with an Error and
             * retried after the scheduler's error backoff. */
            set_why(s->why,
                    "gang %s: no room for %s/%s yet; waiting for lower-priority pods to be "
                    "preempted",
                    g->key, p->ns, p->name);
            all_verdict(out, n_nodes, GANG_NODE_UNRESOLVABLE, s->why);
            res->reason = s->why;
            res->retry = 1;
            goto done;
        }
        if (!po.ok) {
            plan_failure_why(s, g, &po);
            if (g->active)
                gang_fail(s, g, now, 1, g->why);
            else
                gang_drop_plan(s, g);
            res->n_ok = fit_each(s, p, nodes, n_nodes, g->why, out);
            res->reason = g->why;
            goto done;
        }
    }
    if (p->planned < 0) { /* the gang completes without this member: it waits */
        set_why(s->why,
                "gang %s: no candidate node has room for %s/%s (the gang can reach "
                "minMember %d without it)",
                g->key, p->ns, p->name, g->min_member);
        res->n_ok = fit_each(s, p, nodes, n_nodes, s->why, out);
        res->reason = s->why;
        goto done;
    }
    set_why(s->why2, "the gang plan of %s places this pod on %s", g->key,
            s->nodes[p->planned]->name);
    res->n_ok = only_node(s, nodes, n_nodes, p->planned, s->why2, at, out);
    if (!g->active && !g->preempting)
        set_why(g->why, "gang %s planned: %u of minMember %d placed, nothing held yet%s%s%s%s",
                g->key, g->c.planned + gang_progress(g), g->min_member,
                g->dom_path[0] ? "; topology domain " : "", gang_domain_level(s, g),
                g->dom_path[0] ? " " : "", g->dom_path);
done:
    if (!res->n_ok && !res->reason[0])
        res->reason = g->why;
    res->answers_pending = s->n_pending > 0;
    return COMMON_OK;
}

/* ---- prioritize ---- */

/* the pod of a prioritize call, added to the books when its uid is unknown */
static enum common_rc prio_pod(struct gang_state *s, const struct common_pod *pod,
                               struct gpod **out, struct common_error *err)
{
    enum common_rc rc;

    if (!(*out = pod_find(s, pod->uid))) {
        if ((rc = gang_pod_upsert(s, pod, err)) != COMMON_OK)
            return rc;
        *out = pod_find(s, pod->uid);
    }
    return COMMON_OK;
}

/* the score of slot idx (present, la its least-allocated part) for member p of gang g: 10 on
 * its own node, 5 + la where siblings are (or in the gang's domain), la elsewhere */
static int64_t prio_score(const struct gang_state *s, const struct gang *g, const struct gpod *p,
                          int32_t idx, int64_t la)
{
    int32_t mine = p->held >= 0 ? p->held : p->planned;
    uint32_t sib;

    if (idx == mine)
        return 10;
    sib = imap_get(&g->place, (uint32_t)idx) - (p->a_place == idx ? 1 : 0);
    /* a node of the gang's topology domain ranks with the siblings' nodes */
    if (!sib && g->dom_path[0] && !(p->a_flags & F_PHASED) &&
        gang_node_in_domain(s, g, s->nodes[idx]) == 1)
        sib = 1;
    return (sib ? 5 : 0) + la;
}

enum common_rc gang_prioritize_plain(struct gang_state *s, const struct common_pod *pod,
                                     const char *const *nodes, size_t n_nodes, int64_t *scores,
                                     struct common_error *err)
{
    struct gpod *p;
    enum common_rc rc;

    if ((rc = prio_pod(s, pod, &p, err)) != COMMON_OK)
        return rc;
    for (size_t i = 0; i < n_nodes; i++) {
        int32_t idx = p->gang ? node_slot_find(s, nodes[i]) : -1;
        scores[i] =
            idx < 0 || !s->nodes[idx]->present
                ? 0
                : prio_score(s, p->gang, p, idx, least_allocated(s->nodes[idx], p->req, p->n_req));
    }
    return COMMON_OK;
}

enum common_rc gang_prioritize(struct gang_state *s, const struct common_pod *pod,
                               const char *const *nodes, size_t n_nodes, int64_t *scores,
                               struct common_error *err)
{
    struct gpod *p;
    const int32_t *slot;
    struct la_memo *m;
    enum common_rc rc;

    if ((rc = prio_pod(s, pod, &p, err)) != COMMON_OK)
        return rc;
    if (!p->gang) {
        memset(scores, 0, n_nodes * sizeof(*scores));
        return COMMON_OK;
    }
    /* the memos change no score (gang_prioritize_plain is the same without them); without
     * memory for them, the plain way */
    if (!(slot = prio_slots(s, nodes, n_nodes)) || !(m = prio_memo(s, p->req, p->n_req)))
        return gang_prioritize_plain(s, pod, nodes, n_nodes, scores, err);
    for (size_t i = 0; i < n_nodes; i++) {
        int64_t la = slot[i] < 0 ? -1 : prio_la(s, m, slot[i]);
        scores[i] = la < 0 ? 0 : prio_score(s, p->gang, p, slot[i], la);
    }
    return COMMON_OK;
}

/* ---- bind ---- */

static enum common_rc bind_reject(struct gang_state *s, struct gang_bind_result *res,
                                  const char *reason)
{
    if (reason != s->why)
        set_why(s->why, "%s", reason);
    res->action = GANG_BIND_REJECT;
    res->reason = s->why;
    res->answers_pending = s->n_pending > 0;
    return COMMON_OK;
}

/* bind p alone on node now */
static enum common_rc bind_alone(struct gang_state *s, struct gpod *p, int32_t node,
                                 struct gang_bind_result *res, struct common_error *err)
{
    if (answers_reserve(s, 0, 1) || (p->gang && imap_reserve(&p->gang->place, 1)))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    pod_detach(s, p);
    p->released = node;
    pod_attach(s, p);
    answer_bind(s, p, node);
    res->action = GANG_BIND_RELEASE;
    res->binds = s->binds;
    res->n_binds = s->n_binds;
    res->answers_pending = s->n_pending > 0;
    return COMMON_OK;
}

enum common_rc gang_bind(struct gang_state *s, const char *ns, const char *name, const char *uid,
                         const char *node, int64_t now, struct gang_bind_result *res,
                         struct common_error *err)
{
    struct gpod *p = pod_find(s, uid);
    struct gang *g;
    int32_t ni = node_slot_find(s, node);
    const char *why;
    struct plan_out po;
    struct plan_req rq;

    memset(res, 0, sizeof(*res));
    res->reason = "";
    s->n_binds = 0;
    if (!p) {
        set_why(s->why, "pod %s/%s (uid %s) is not in trainsched's cache yet", ns, name, uid);
        return bind_reject(s, res, s->why);
    }
    if (strcmp(p->ns, ns) != 0 || strcmp(p->name, name) != 0) {
        set_why(s->why, "uid %s belongs to pod %s/%s, not %s/%s", uid, p->ns, p->name, ns, name);
        return bind_reject(s, res, s->why);
    }
    if (ni < 0 || !s->nodes[ni]->present) {
        set_why(s->why, "node %s is unknown to trainsched's cache", node);
        return bind_reject(s, res, s->why);
    }
    g = p->gang;
    if (p->node >= 0 || p->released >= 0) {
        int32_t at = p->node >= 0 ? p->node : p->released;
        if (at != ni) {
            set_why(s->why, "pod %s/%s is already bound to %s", ns, name, s->nodes[at]->name);
            return bind_reject(s, res, s->why);
        }
        /* a retry of a bind that went through: bind again (the API answers 409, success) */
        if (answers_reserve(s, 0, 1))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        answer_bind(s, p, ni);
        res->action = GANG_BIND_RELEASE;
        res->binds = s->binds;
        res->n_binds = s->n_binds;
        return COMMON_OK;
    }
    if (p->held >= 0)
        return bind_reject(s, res, "a bind of this pod is already held");
    if (!g)
        return bind_alone(s, p, ni, res, err);
    switch (pipeline_gate(s, g, p, now, &why)) {
    case GATE_WAIT:
        return bind_reject(s, res, why);
    case GATE_ALONE:
        return bind_alone(s, p, ni, res, err);
    case GATE_PASS:
        break;
    }
    if (!(p->a_flags & F_ELIGIBLE)) {
        set_why(s->why, "pod %s/%s is not pending", ns, name);
        return bind_reject(s, res, s->why);
    }
    if (answers_reserve(s, 1, (size_t)g->c.held + 1) || active_reserve(s) ||
        imap_reserve(&g->place, 1))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (!g->active && g->has_min_res && min_resources_short(s, g)) {
        gang_drop_plan(s, g);
        return bind_reject(s, res, g->why);
    }
    if (!g->active || p->planned != ni) {
        /* the first hold re-checks the whole gang against the reservations of now */
        memset(&rq, 0, sizeof(rq));
        rq.pin = p;
        rq.pin_node = ni;
        if (plan_gang(s, g, &rq, &po))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        if (!po.ok && g->preempting) {
            /* still only partly placeable, and still completable by preemption */
            int short_whole = short_even_with_preemption(s, g, p);
            if (short_whole < 0)
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
            rq.partial = !short_whole;
            if (rq.partial && plan_gang(s, g, &rq, &po))
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
        } else if (po.ok && !po.partial) {
            g->preempting = 0;
        }
        if (!po.ok) {
            plan_failure_why(s, g, &po);
            if (!g->active)
                gang_drop_plan(s, g);
            set_why(s->why, "%s: not holding %s/%s on %s", g->why, ns, name, node);
            return bind_reject(s, res, s->why);
        }
    }
    if (!g->active)
        gang_activate(s, g, now);
    else
        gang_hold_progress(s, g, now); /* the timeout counts from the latest new hold */
    pod_detach(s, p);
    p->held = ni;
    p->planned = ni;
    p->hold_since = now;
    pod_attach(s, p);
    s->n_held_total++;
    if (gang_progress(g) >= (uint32_t)g->min_member) {
        gang_release(s, g, 1);
        res->action = GANG_BIND_RELEASE;
        res->binds = s->binds;
        res->n_binds = s->n_binds;
    } else {
        set_why(g->why,
                "gang %s holding %u of minMember %d (%u bound); %u planned; times out in "
                "%lld s",
                g->key, g->c.held, g->min_member, g->c.bound + g->c.released + g->c.done,
                g->c.planned, (long long)((g->deadline - now) / 1000));
        res->action = GANG_BIND_HOLD;
        res->reason = g->why;
        res->deadline = g->deadline;
    }
    res->answers_pending = s->n_pending > 0;
    node_gc(s);
    return COMMON_OK;
}

/* ---- time ---- */

/* the first resource of p's requests that node n is over-committed on (a pod bound there behind
 * the extender's back, allocatable shrunk), as "Insufficient <name>"; NULL when none */
static const char *overcommitted(const struct gang_state *s, const struct gnode *n,
                                 const struct gpod *p)
{
    for (uint32_t i = 0; i < p->n_req; i++) {
        uint16_t id = p->req[i].id;
        if (p->req[i].v > 0 && n->alloc[id] - n->used[id] - n->resv[id] < 0)
            return s->res_short[id];
    }
    return NULL;
}

/*
 * plan_check - an active gang whose planned or held node can no longer take its member (a pod
 * bound there that kube-scheduler placed without seeing our reservation, a new taint, the node
 * gone, allocatable shrunk) is replanned now: held members on such a node lose their hold (an
 * error answer: kube-scheduler retries them), and the gang's plan is redone within free
 * capacity. When it no longer fits, the gang fails at once with backoff, as a member's filter
 * that finds no room does (C08), instead of waiting for its timeout. Returns 1 when the gang
 * failed (it left s->active), else 0.
 */
static int plan_check(struct gang_state *s, struct gang *g, int64_t now)
{
    char lost[GANG_REASON_MAX];
    int64_t need = (int64_t)g->min_member - g->c.bound - g->c.released - g->c.done;
    struct plan_out po;
    struct plan_req rq;
    int broken = 0;

    lost[0] = '\0';
    for (uint32_t i = 0; i < g->n_members; i++) {
        struct gpod *p = g->members[i];
        int32_t at = p->held >= 0 ? p->held : (p->a_flags & F_PLANNED) ? p->planned : -1;
        const struct gnode *n;
        const char *r;
        if (at < 0)
            continue;
        n = s->nodes[at];
        r = !n->present ? "the node is gone" : p->held < 0 ? fit_static(p->shape, n) : NULL;
        if (!r)
            r = overcommitted(s, n, p);
        if (!r)
            continue;
        if (!broken)
            set_why(lost, "node %s can no longer take %s/%s: %s", n->name, p->ns, p->name, r);
        broken = 1;
        if (p->held >= 0) {
            pod_detach(s, p);
            drop_hold(s, p, lost);
            p->planned = -1;
            pod_attach(s, p);
        }
    }
    if (!broken && (g->preempting || (int64_t)g->c.held + g->c.planned >= need))
        return 0; /* a preempting gang waits for evictions, bounded by its timeout */
    if (!broken)
        set_why(lost, "a planned node was lost");
    memset(&rq, 0, sizeof(rq));
    rq.partial = g->preempting;
    if (plan_gang(s, g, &rq, &po))
        return 0; /* out of memory: the next tick tries again */
    if (po.ok) {
        set_why(g->why, "gang %s replanned (%s): holding %u of minMember %d, %u planned", g->key,
                lost, g->c.held, g->min_member, g->c.planned);
        return 0;
    }
    plan_failure_why(s, g, &po);
    set_why(s->why, "%s; %s", g->why, lost);
    gang_fail(s, g, now, 1, s->why);
    return 1;
}

enum common_rc gang_tick(struct gang_state *s, int64_t now, const struct gang_answer **answers,
                         size_t *n, struct common_error *err)
{
    char why[GANG_REASON_MAX];

    *answers = NULL;
    *n = 0;
    for (uint32_t i = 0; i < s->n_active;) {
        struct gang *g = s->active[i];
        if (now >= g->deadline) {
            set_why(why, "gang %s timed out after %lld s: %u of minMember %d held or bound", g->key,
                    (long long)((now - g->hold_start) / 1000), gang_progress(g), g->min_member);
            gang_fail(s, g, now, 1, why);
            continue; /* the list moved its last gang here */
        }
        if (plan_check(s, g, now))
            continue;
        if (g->c.held && gang_progress(g) >= (uint32_t)g->min_member) {
            gang_release(s, g, 0);
            continue;
        }
        i++;
    }
    node_gc(s);
    if (s->n_pending > s->cap_out) {
        struct gang_answer *o = common_realloc(s->out, s->n_pending * sizeof(*o));
        if (!o)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        s->out = o;
        s->cap_out = s->n_pending;
    }
    if (s->n_pending)
        memcpy(s->out, s->pending, s->n_pending * sizeof(*s->out));
    s->n_out = s->n_pending;
    s->n_pending = 0;
    *answers = s->out;
    *n = s->n_out;
    return COMMON_OK;
}

int64_t gang_next_deadline(const struct gang_state *s)
{
    int64_t t = INT64_MAX;

    for (uint32_t i = 0; i < s->n_active; i++)
        if (s->active[i]->deadline < t)
            t = s->active[i]->deadline;
    return t;
}

/* ---- status and introspection ---- */

enum common_rc gang_podgroup_status(const struct gang_state *s, const char *ns, const char *name,
                                    struct gang_status *out, struct common_error *err)
{
    const struct gang *g = gang_find(s, ns, name);
    const struct gpod *first = NULL;
    int64_t min, rs;

    memset(out, 0, sizeof(*out));
    if (!g || !g->has_pg)
        return common_error_set(err, COMMON_ENOTFOUND, "PodGroup %s/%s not in the books", ns, name);
    min = g->min_member > 0 ? g->min_member : 1; /* minMember 0: as 1 (the CRD's minimum) */
    out->running = (int32_t)g->c.running;
    out->succeeded = (int32_t)g->c.succeeded;
    out->failed = (int32_t)g->c.failed;
    rs = (int64_t)g->c.running + g->c.succeeded;
    if ((int64_t)g->c.members < min) {
        out->phase = "Pending";
    } else {
        out->phase = rs < min ? "Scheduling" : "Running";
        if (g->c.failed && (int64_t)g->c.failed + rs >= min)
            out->phase = "Failed";
        if ((int64_t)g->c.succeeded >= min)
            out->phase = "Finished";
    }
    for (uint32_t i = 0; i < g->n_members; i++)
        if (!first || strcmp(g->members[i]->name, first->name) < 0)
            first = g->members[i];
    if (first && first->owner[0])
        snprintf(out->occupied_by, sizeof(out->occupied_by), "%s/%s", first->ns, first->owner);
    out->has_schedule_start = g->has_start;
    out->schedule_start = g->last_start;
    return COMMON_OK;
}

enum common_rc gang_info(const struct gang_state *s, const char *ns, const char *name,
                         struct gang_info *out, struct common_error *err)
{
    const struct gang *g = gang_find(s, ns, name);

    memset(out, 0, sizeof(*out));
    if (!g)
        return common_error_set(err, COMMON_ENOTFOUND, "gang %s/%s not in the books", ns, name);
    out->has_podgroup = g->has_pg;
    out->min_member = g->min_member;
    out->members = g->c.members;
    out->known = g->c.known;
    out->bound = g->c.bound;
    out->released = g->c.released;
    out->held = g->c.held;
    out->planned = g->c.planned;
    out->phased_done = g->c.done;
    out->active = g->active;
    out->admitted = gang_admitted(g);
    out->deadline = g->active ? g->deadline : 0;
    out->backoff_until = g->backoff_until;
    out->failures = g->failures;
    out->reason = g->why;
    {
        int64_t asked = gang_asked_timeout(s, g), cap = gang_timeout_cap_ms(&s->cfg);
        out->timeout_ms = asked < cap ? asked : cap;
        if (g->has_pg && asked > cap)
            snprintf(out->timeout_note, sizeof(out->timeout_note),
                     "%s %g%s is cut to %g s: a held bind cannot outlast the bind extender's "
                     "httpTimeout (%g s) less a %g s margin",
                     g->has_timeout && g->timeout_s > 0 ? "scheduleTimeoutSeconds"
                                                        : "the default gang timeout",
                     (double)asked / 1000, g->has_timeout && g->timeout_s > 0 ? "" : " s",
                     (double)cap / 1000, (double)s->cfg.bind_http_timeout_ms / 1000,
                     (double)(s->cfg.bind_http_timeout_ms - cap) / 1000);
    }
    out->domain = g->dom_path;
    out->domain_level = gang_domain_level(s, g);
    out->topology_error = g->topo_err;
    out->topology_note = g->topo_note;
    out->podgroup_unblocks = g->unblocks;
    out->gated_ours = g->c.ours;
    return COMMON_OK;
}

size_t gang_waiting_pods(const struct gang_state *s, const char *ns, const char *name,
                         struct gang_pod_ref *out, size_t cap)
{
    const struct gang *g = gang_find(s, ns, name);
    size_t n = 0;

    for (uint32_t i = 0; g && i < g->n_members; i++) {
        const struct gpod *p = g->members[i];
        if (p->node >= 0 || p->released >= 0 || p->held >= 0 || p->deleting ||
            p->phase != PH_PENDING)
            continue;
        if (n < cap) {
            snprintf(out[n].uid, sizeof(out[n].uid), "%s", p->uid);
            snprintf(out[n].namespace, sizeof(out[n].namespace), "%s", p->ns);
            snprintf(out[n].name, sizeof(out[n].name), "%s", p->name);
        }
        n++;
    }
    return n;
}
