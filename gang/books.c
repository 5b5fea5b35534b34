/*
 * gang/books.c - the extender's books: state lifetime, the cluster feed (nodes, pods,
 * PodGroups), the accounting of every pod (pod_attach / pod_detach), gang attempts (activate,
 * fail, release helpers) and the queue of bind answers, and gang_check.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "gang/gang_int.h"

void set_why(char *buf, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, GANG_REASON_MAX, fmt, ap);
    va_end(ap);
}

static void copy_str(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src ? src : "");

    if (n >= size)
        n = size - 1;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

/* ---- configuration and lifetime ---- */

void gang_config_default(struct gang_config *c)
{
    memset(c, 0, sizeof(*c));
}

enum common_rc gang_state_create(const struct gang_config *cfg, struct gang_state **out,
                                 struct common_error *err)
{
    struct gang_state *s;
    struct gang_config c;
    static const char *const base[RES_FIRST_EXT] = {"cpu", "memory", "ephemeral-storage", "pods"};

    *out = NULL;
    if (cfg)
        c = *cfg;
    else
        gang_config_default(&c);
    if (c.default_timeout_ms < 0 || c.bind_http_timeout_ms < 0 || c.hold_margin_ms < 0 ||
        c.backoff_initial_ms < 0 || c.backoff_max_ms < 0)
        return common_error_set(err, COMMON_EINVAL, "gang config: times must not be negative");
    if (!c.default_timeout_ms)
        c.default_timeout_ms = 60000;
    if (!c.bind_http_timeout_ms)
        c.bind_http_timeout_ms = 5000;
    if (!c.hold_margin_ms)
        c.hold_margin_ms = 2000;
    if (!c.backoff_initial_ms)
        c.backoff_initial_ms = 10000;
    if (!c.backoff_max_ms)
        c.backoff_max_ms = 300000;
    if (c.backoff_max_ms < c.backoff_initial_ms)
        return common_error_set(err, COMMON_EINVAL,
                                "gang config: backoff_max_ms %lld is below backoff_initial_ms %lld",
                                (long long)c.backoff_max_ms, (long long)c.backoff_initial_ms);
    s = common_calloc(1, sizeof(*s));
    if (!s)
        goto oom;
    s->cfg = c;
    s->ug_retry_at = INT64_MAX;
    s->eff_margin = c.hold_margin_ms > c.bind_http_timeout_ms / 2 ? c.bind_http_timeout_ms / 2
                                                                  : c.hold_margin_ms;
    if (c.n_ignored_resources) {
        s->ignored = common_calloc(c.n_ignored_resources, sizeof(char *));
        if (!s->ignored)
            goto oom;
        for (size_t i = 0; i < c.n_ignored_resources; i++) {
            s->ignored[i] = common_strdup(c.ignored_resources[i] ? c.ignored_resources[i] : "");
            if (!s->ignored[i])
                goto oom;
            s->n_ignored = i + 1;
        }
    }
    s->cfg.ignored_resources = NULL;
    s->cfg.n_ignored_resources = 0;
    for (int i = 0; i < RES_FIRST_EXT; i++)
        if (res_id(s, base[i], 1) != i)
            goto oom;
    s->res_short[NRES - 1] = common_strdup("Insufficient resources (more distinct resource "
                                           "names than trainsched tracks)");
    if (!s->res_short[NRES - 1])
        goto oom;
    *out = s;
    return COMMON_OK;
oom:
    gang_state_destroy(s);
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

static void node_free(struct gnode *n)
{
    if (!n)
        return;
    common_free(n->name);
    common_free(n->block);
    common_free(n);
}

static void gang_free(struct gang *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; i < g->n_phased; i++)
        common_free(g->phased[i]);
    common_free(g->phased);
    common_free(g->min_res);
    common_free(g->members);
    imap_free(&g->place);
    gang_topo_clear(g);
    common_free(g->dra_match);
    common_free(g->key);
    common_free(g);
}

#define SAME_STR(a, b) (((a) == NULL && (b) == NULL) || ((a) && (b) && strcmp((a), (b)) == 0))

void gang_state_destroy(struct gang_state *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->pod_by_uid.cap; i++) {
        struct gpod *p = s->pod_by_uid.e[i].hash ? s->pod_by_uid.e[i].val : NULL;
        if (p) {
            if (p->shape && !--p->shape->refs)
                common_free(p->shape);
            gdra_free(p->dra);
            common_free(p);
        }
    }
    for (size_t i = 0; i < s->gang_by_key.cap; i++)
        if (s->gang_by_key.e[i].hash)
            gang_free(s->gang_by_key.e[i].val);
    for (uint32_t i = 0; i < s->n_nodes; i++)
        node_free(s->nodes[i]);
    for (int i = 0; i < NRES; i++) {
        common_free(s->res_names[i]);
        common_free(s->res_short[i]);
    }
    for (size_t i = 0; i < s->n_ignored; i++)
        common_free(s->ignored[i]);
    common_free(s->ignored);
    common_free(s->nodes);
    common_free(s->free_slots);
    common_free(s->gc);
    common_free(s->active);
    common_free(s->ug_dirty);
    common_free(s->pending);
    common_free(s->out);
    common_free(s->binds);
    common_free(s->pre_why);
    gdra_reasons_reset(s);
    common_free(s->dra_why);
    topos_free(s);
    prio_memo_free(s);
    gmap_free(&s->node_by_name);
    gmap_free(&s->pod_by_uid);
    gmap_free(&s->gang_by_key);
    gmap_free(&s->shape_by_key);
    common_free(s);
}

/* ---- lookups ---- */

int32_t node_slot_find(const struct gang_state *s, const char *name)
{
    struct gnode *n = name && *name ? gmap_get(&s->node_by_name, name, strlen(name)) : NULL;

    return n ? n->idx : -1;
}

struct gpod *pod_find(const struct gang_state *s, const char *uid)
{
    return uid && *uid ? gmap_get(&s->pod_by_uid, uid, strlen(uid)) : NULL;
}

int gang_pod_known(const struct gang_state *s, const char *uid)
{
    return pod_find(s, uid) != NULL;
}

struct gang *gang_find(const struct gang_state *s, const char *ns, const char *name)
{
    char key[320];

    snprintf(key, sizeof(key), "%s/%s", ns, name);
    return gmap_get(&s->gang_by_key, key, strlen(key));
}

static struct gang *gang_get(struct gang_state *s, const char *ns, const char *name)
{
    struct gang *g = gang_find(s, ns, name);
    size_t nl = strlen(ns), ml = strlen(name);

    if (g)
        return g;
    if (gmap_reserve(&s->gang_by_key))
        return NULL;
    g = common_calloc(1, sizeof(*g));
    if (g) /* "ns/name\0ns\0name\0" */
        g->key = common_malloc(2 * (nl + ml) + 4);
    if (!g || !g->key) {
        gang_free(g);
        return NULL;
    }
    memcpy(g->key, ns, nl);
    g->key[nl] = '/';
    memcpy(g->key + nl + 1, name, ml + 1);
    g->ns = g->key + nl + ml + 2;
    memcpy(g->ns, ns, nl + 1);
    g->name = g->ns + nl + 1;
    memcpy(g->name, name, ml + 1);
    g->active_idx = -1;
    g->seq = ++s->gang_seq;
    gmap_put(&s->gang_by_key, g->key, nl + ml + 1, g);
    return g;
}

static int32_t node_slot_get(struct gang_state *s, const char *name)
{
    int32_t idx = node_slot_find(s, name);
    struct gnode *n;

    if (idx >= 0)
        return idx;
    if (gmap_reserve(&s->node_by_name))
        return -1;
    if (!s->n_free && s->n_nodes == s->cap_nodes) {
        uint32_t cap = s->cap_nodes ? s->cap_nodes * 2 : 64;
        int32_t *fs = common_realloc(s->free_slots, cap * sizeof(*fs)), *gc;
        struct gnode **nn;
        if (!fs)
            return -1;
        s->free_slots = fs;
        gc = common_realloc(s->gc, cap * sizeof(*gc));
        if (!gc)
            return -1;
        s->gc = gc;
        nn = common_realloc(s->nodes, cap * sizeof(*nn));
        if (!nn)
            return -1;
        s->nodes = nn;
        if (node_gen_reserve(s, cap))
            return -1;
        s->cap_nodes = s->cap_free = s->cap_gc = cap;
    }
    n = common_calloc(1, sizeof(*n));
    if (n)
        n->name = common_strdup(name);
    if (!n || !n->name) {
        node_free(n);
        return -1;
    }
    if (s->n_free)
        idx = s->free_slots[--s->n_free];
    else
        idx = (int32_t)s->n_nodes++;
    n->idx = idx;
    s->nodes[idx] = n;
    gmap_put(&s->node_by_name, n->name, strlen(n->name), n);
    node_touch(s, idx);
    s->names_gen++;
    return idx;
}

/* free slots that nothing refers to and that are not in the cluster */
void node_gc(struct gang_state *s)
{
    for (uint32_t i = 0; i < s->n_gc; i++) {
        struct gnode *n = s->gc[i] >= 0 ? s->nodes[s->gc[i]] : NULL;
        if (!n)
            continue;
        n->in_gc = 0;
        if (n->refs || n->present)
            continue;
        gmap_del(&s->node_by_name, n->name, strlen(n->name));
        node_touch(s, n->idx);
        s->names_gen++;
        s->nodes[n->idx] = NULL;
        s->free_slots[s->n_free++] = n->idx;
        node_free(n);
    }
    s->n_gc = 0;
}

/* queue a slot for node_gc; the list has room for every slot (grown with them) */
static void gc_push(struct gang_state *s, struct gnode *n)
{
    if (n->in_gc || n->refs || n->present || s->n_gc >= s->cap_gc)
        return;
    n->in_gc = 1;
    s->gc[s->n_gc++] = n->idx;
}

/* ---- membership helpers ---- */

int pod_is_phased(const struct gang *g, const struct gpod *p)
{
    if (!p->rjob[0])
        return 0;
    for (uint32_t i = 0; i < g->n_phased; i++)
        if (strcmp(g->phased[i], p->rjob) == 0)
            return 1;
    return 0;
}

int gang_admitted(const struct gang *g)
{
    return g->c.bound + g->c.released > 0;
}

uint32_t gang_progress(const struct gang *g)
{
    return g->c.held + g->c.bound + g->c.released + g->c.done;
}

int gang_completable(const struct gang *g)
{
    uint64_t could =
        (uint64_t)gang_progress(g) + g->c.eligible + g->c.gated + (g->c.phased_known - g->c.done);

    return could >= (uint64_t)(g->min_member > 0 ? g->min_member : 0);
}

static uint32_t member_flags(const struct gang *g, const struct gpod *p)
{
    uint32_t f = F_MEMBER;
    int known = !p->deleting && p->phase != PH_FAILED;

    if (p->phase == PH_RUNNING)
        f |= F_RUNNING;
    else if (p->phase == PH_SUCCEEDED)
        f |= F_SUCCEEDED;
    else if (p->phase == PH_FAILED)
        f |= F_FAILED;
    if (known)
        f |= F_KNOWN;
    if (known && p->node < 0 && p->phase != PH_SUCCEEDED && p->gates == COMMON_GATE_TRAINSCHED &&
        !p->ungating)
        f |= F_OURS;
    if (pod_is_phased(g, p)) {
        f |= F_PHASED;
        if (known)
            f |= F_PHASED_KNOWN;
        if (known && (p->node >= 0 || p->released >= 0 || p->phase == PH_SUCCEEDED))
            f |= F_DONE;
        return f;
    }
    if (!known)
        return f;
    if (p->node >= 0)
        f |= F_BOUND;
    else if (p->released >= 0)
        f |= F_RELEASED;
    else if (p->held >= 0)
        f |= F_HELD;
    else if (p->phase != PH_SUCCEEDED && p->gate)
        f |= F_GATED;
    else if (p->phase != PH_SUCCEEDED) {
        f |= F_ELIGIBLE;
        if (p->planned >= 0)
            f |= F_PLANNED;
    }
    return f;
}

static void counts_apply(struct gcounts *c, uint32_t f, int sign)
{
#define C(flag, field)                                                                             \
    if (f & (flag))                                                                                \
    c->field = (uint32_t)((int64_t)c->field + sign)
    C(F_MEMBER, members);
    C(F_KNOWN, known);
    C(F_PHASED_KNOWN, phased_known);
    C(F_BOUND, bound);
    C(F_RELEASED, released);
    C(F_HELD, held);
    C(F_PLANNED, planned);
    C(F_DONE, done);
    C(F_ELIGIBLE, eligible);
    C(F_RUNNING, running);
    C(F_SUCCEEDED, succeeded);
    C(F_FAILED, failed);
    C(F_GATED, gated);
    C(F_OURS, ours);
#undef C
}

static void decl_apply(struct gang *g, int32_t v, int sign)
{
    int free_slot = -1;

    if (v < 0)
        return;
    for (int i = 0; i < DECL_SLOTS; i++) {
        if (g->decl_cnt[i] && g->decl_val[i] == v) {
            g->decl_cnt[i] = (uint32_t)((int64_t)g->decl_cnt[i] + sign);
            return;
        }
        if (!g->decl_cnt[i] && free_slot < 0)
            free_slot = i;
    }
    if (sign > 0 && free_slot >= 0) {
        g->decl_val[free_slot] = v;
        g->decl_cnt[free_slot] = 1;
    } else {
        g->decl_overflow = (uint32_t)((int64_t)g->decl_overflow + sign);
    }
}

static void vec_apply(struct gang_state *s, int32_t idx, const struct gpod *p, int sign, int resv)
{
    struct gnode *n;

    if (idx < 0)
        return;
    n = s->nodes[idx];
    node_touch(s, idx);
    for (uint32_t i = 0; i < p->n_req; i++) {
        int64_t v = sign * p->req[i].v;
        uint16_t id = p->req[i].id;
        if (resv) {
            n->resv[id] += v;
            if (n->present)
                s->tot_resv[id] += v;
        } else {
            n->used[id] += v;
            if (n->present)
                s->tot_used[id] += v;
        }
    }
}

void pod_attach(struct gang_state *s, struct gpod *p)
{
    struct gang *g = p->gang;
    int terminal = p->phase == PH_SUCCEEDED || p->phase == PH_FAILED;
    int32_t used = -1, resv = -1, place = -1;
    int32_t refs[4] = {p->node, p->planned, p->held, p->released};

    if (!terminal)
        used = p->node >= 0 ? p->node : p->released;
    p->a_flags = 0;
    p->a_declared = -1;
    if (g) {
        p->a_flags = member_flags(g, p);
        if (p->held >= 0)
            resv = p->held;
        else if (g->active && (p->a_flags & F_PLANNED))
            resv = p->planned;
        if (used >= 0)
            place = used;
        else if (p->a_flags & (F_HELD | F_PLANNED))
            place = p->held >= 0 ? p->held : p->planned;
        counts_apply(&g->c, p->a_flags, 1);
        if ((p->a_flags & F_OURS) && g->c.ours == 1)
            s->n_ours_gangs++;
        if (p->a_flags & F_KNOWN)
            p->a_declared = p->declared_min;
        decl_apply(g, p->a_declared, 1);
        if (place >= 0)
            imap_add(&g->place, (uint32_t)place, 1); /* room reserved by the caller */
    }
    vec_apply(s, used, p, 1, 0);
    vec_apply(s, resv, p, 1, 1);
    for (int i = 0; i < 4; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= refs[j] == refs[i];
        if (dup)
            refs[i] = -1;
        if (refs[i] >= 0)
            s->nodes[refs[i]]->refs++;
        p->a_refs[i] = refs[i];
    }
    p->a_used = used;
    p->a_resv = resv;
    p->a_place = place;
    p->a_gang = g;
    p->attached = 1;
}

void pod_detach(struct gang_state *s, struct gpod *p)
{
    struct gang *g = p->a_gang;

    if (!p->attached)
        return;
    if (g) {
        counts_apply(&g->c, p->a_flags, -1);
        if ((p->a_flags & F_OURS) && g->c.ours == 0)
            s->n_ours_gangs--;
        decl_apply(g, p->a_declared, -1);
        if (p->a_place >= 0)
            imap_add(&g->place, (uint32_t)p->a_place, -1);
    }
    vec_apply(s, p->a_used, p, -1, 0);
    vec_apply(s, p->a_resv, p, -1, 1);
    for (int i = 0; i < 4; i++)
        if (p->a_refs[i] >= 0) {
            struct gnode *n = s->nodes[p->a_refs[i]];
            n->refs--;
            gc_push(s, n);
        }
    p->attached = 0;
}

/* ---- answers ---- */

int answers_reserve(struct gang_state *s, size_t pending_more, size_t binds_need)
{
    size_t need = s->n_pending + s->n_held_total + pending_more;

    if (need > s->cap_pending) {
        size_t cap = s->cap_pending ? s->cap_pending : 16;
        struct gang_answer *a;
        while (cap < need)
            cap *= 2;
        a = common_realloc(s->pending, cap * sizeof(*a));
        if (!a)
            return -1;
        s->pending = a;
        s->cap_pending = cap;
    }
    if (binds_need > s->cap_binds) {
        size_t cap = s->cap_binds ? s->cap_binds : 16;
        struct gang_answer *a;
        while (cap < binds_need)
            cap *= 2;
        a = common_realloc(s->binds, cap * sizeof(*a));
        if (!a)
            return -1;
        s->binds = a;
        s->cap_binds = cap;
    }
    return 0;
}

static void answer_fill(struct gang_answer *a, const struct gpod *p, int32_t node, int bind,
                        const char *reason, const struct gang_state *s)
{
    copy_str(a->uid, sizeof(a->uid), p->uid);
    copy_str(a->namespace, sizeof(a->namespace), p->ns);
    copy_str(a->name, sizeof(a->name), p->name);
    copy_str(a->node, sizeof(a->node), node >= 0 ? s->nodes[node]->name : "");
    copy_str(a->gang, sizeof(a->gang), p->gang ? p->gang->key : "");
    a->bind = bind;
    copy_str(a->reason, sizeof(a->reason), reason);
}

void answer_queue(struct gang_state *s, const struct gpod *p, int32_t node, int bind,
                  const char *reason)
{
    /* capacity: one slot per held pod is kept free (answers_reserve at hold time) */
    if (s->n_pending < s->cap_pending)
        answer_fill(&s->pending[s->n_pending++], p, node, bind, reason, s);
}

void answer_bind(struct gang_state *s, const struct gpod *p, int32_t node)
{
    if (s->n_binds < s->cap_binds)
        answer_fill(&s->binds[s->n_binds++], p, node, 1, "", s);
}

/* drop p's hold (it is still attached: detach/attach around) with an error answer */
void drop_hold(struct gang_state *s, struct gpod *p, const char *reason)
{
    answer_queue(s, p, p->held, 0, reason);
    p->held = -1;
    s->n_held_total--;
}

/* ---- gang attempts ---- */

static void active_remove(struct gang_state *s, struct gang *g)
{
    if (g->active_idx < 0)
        return;
    s->active[g->active_idx] = s->active[--s->n_active];
    s->active[g->active_idx]->active_idx = g->active_idx;
    g->active_idx = -1;
}

int active_reserve(struct gang_state *s)
{
    if (s->n_active < s->cap_active)
        return 0;
    {
        uint32_t cap = s->cap_active ? s->cap_active * 2 : 16;
        struct gang **a = common_realloc(s->active, cap * sizeof(*a));
        if (!a)
            return -1;
        s->active = a;
        s->cap_active = cap;
    }
    return 0;
}

int64_t gang_timeout_cap_ms(const struct gang_config *cfg)
{
    int64_t http = cfg && cfg->bind_http_timeout_ms ? cfg->bind_http_timeout_ms : 5000;
    int64_t margin = cfg && cfg->hold_margin_ms ? cfg->hold_margin_ms : 2000;

    return http - (margin > http / 2 ? http / 2 : margin);
}

int64_t gang_asked_timeout(const struct gang_state *s, const struct gang *g)
{
    return g->has_timeout && g->timeout_s > 0 ? (int64_t)g->timeout_s * 1000
                                              : s->cfg.default_timeout_ms;
}

static int64_t eff_timeout(const struct gang_state *s, const struct gang *g)
{
    int64_t t = gang_asked_timeout(s, g);
    int64_t cap = gang_timeout_cap_ms(&s->cfg);

    return t < cap ? t : cap;
}

void gang_activate(struct gang_state *s, struct gang *g, int64_t now)
{
    g->active = 1;
    for (uint32_t i = 0; i < g->n_members; i++) {
        struct gpod *p = g->members[i];
        if (p->planned >= 0 && p->held < 0) {
            pod_detach(s, p);
            pod_attach(s, p);
        }
    }
    g->active_idx = (int32_t)s->n_active;
    s->active[s->n_active++] = g; /* room reserved by the caller */
    g->hold_start = now;
    g->deadline = now + eff_timeout(s, g);
    g->has_start = 1;
    g->last_start = now;
    s->resv_epoch++;
}

void gang_hold_progress(struct gang_state *s, struct gang *g, int64_t now)
{
    int64_t t = now + gang_asked_timeout(s, g);
    int64_t cap = g->hold_start + gang_timeout_cap_ms(&s->cfg);

    if (t > cap)
        t = cap;
    if (t > g->deadline)
        g->deadline = t;
}

void gang_drop_plan(struct gang_state *s, struct gang *g)
{
    for (uint32_t i = 0; i < g->n_members; i++) {
        struct gpod *p = g->members[i];
        if (p->planned >= 0 && p->held < 0) {
            pod_detach(s, p);
            p->planned = -1;
            pod_attach(s, p);
        }
    }
    g->plan_valid = 0;
    if (!g->active) {
        g->n_excl = 0;
        g->preempting = 0;
    }
}

void gang_fail(struct gang_state *s, struct gang *g, int64_t now, int backoff, const char *why)
{
    int was_active = g->active;
    char reason[GANG_REASON_MAX];

    copy_str(reason, sizeof(reason), why); /* why may be g->why */
    g->active = 0;
    active_remove(s, g);
    for (uint32_t i = 0; i < g->n_members; i++) {
        struct gpod *p = g->members[i];
        if (p->held < 0 && p->planned < 0)
            continue;
        pod_detach(s, p);
        if (p->held >= 0)
            drop_hold(s, p, reason);
        p->planned = -1;
        pod_attach(s, p);
    }
    g->plan_valid = 0;
    g->n_excl = 0;
    g->preempting = 0;
    if (was_active) {
        s->resv_epoch++;
        s->ug_all = 1; /* its reservation is free again */
    }
    if (backoff) {
        int64_t d = s->cfg.backoff_initial_ms;
        g->failures++;
        for (uint32_t i = 1; i < g->failures && d < s->cfg.backoff_max_ms; i++)
            d *= 2;
        if (d > s->cfg.backoff_max_ms)
            d = s->cfg.backoff_max_ms;
        g->backoff_until = now + d;
        set_why(g->why, "%s; backing off %lld s (failure %u)", reason, (long long)(d / 1000),
                g->failures);
    } else {
        set_why(g->why, "%s", reason);
    }
}

/* release: every held member binds now (written to s->binds when to_binds, else queued as
 * answers); unheld plans are dropped; the gang is admitted. */
void gang_release(struct gang_state *s, struct gang *g, int to_binds)
{
    g->active = 0;
    active_remove(s, g);
    for (uint32_t i = 0; i < g->n_members; i++) {
        struct gpod *p = g->members[i];
        if (p->held < 0 && p->planned < 0)
            continue;
        pod_detach(s, p);
        if (p->held >= 0) {
            if (to_binds)
                answer_bind(s, p, p->held);
            else
                answer_queue(s, p, p->held, 1, "");
            p->released = p->held;
            p->held = -1;
            s->n_held_total--;
        }
        p->planned = -1;
        pod_attach(s, p);
    }
    g->plan_valid = 0;
    g->n_excl = 0;
    g->preempting = 0;
    g->failures = 0;
    g->backoff_until = 0;
    s->resv_epoch++;
    set_why(g->why, "released: %u of minMember %d placed%s%s%s%s", gang_progress(g), g->min_member,
            g->dom_path[0] ? " in topology domain " : "", gang_domain_level(s, g),
            g->dom_path[0] ? " " : "", g->dom_path);
}

void gang_maybe_free(struct gang_state *s, struct gang *g)
{
    if (!g || g->n_members || g->has_pg || g->active)
        return;
    ug_forget(s, g);
    gmap_del(&s->gang_by_key, g->key, strlen(g->key));
    gang_free(g);
}

/* a holding gang that can no longer reach minMember ends its attempt (no backoff) */
static void gang_recheck(struct gang_state *s, struct gang *g, const char *what)
{
    char why[GANG_REASON_MAX];

    if (!g || !g->active || gang_completable(g))
        return;
    set_why(why, "gang %s cannot reach minMember %d any more (%s)", g->key, g->min_member, what);
    gang_fail(s, g, 0, 0, why);
}

/* ---- nodes ---- */

static void node_fill(struct packer *pk, struct gnode *n, const struct common_node *cn)
{
    uint32_t nt = cn->n_taints + (cn->unschedulable ? 1 : 0);
    struct common_kv *kv = pk_take(pk, cn->n_labels * sizeof(*kv));
    struct gtaint *t = pk_take(pk, nt * sizeof(*t));

    for (uint32_t i = 0; i < cn->n_labels; i++) {
        char *k = pk_str(pk, cn->labels[i].key), *v = pk_str(pk, cn->labels[i].value);
        if (kv) {
            kv[i].key = k;
            kv[i].value = v;
        }
    }
    for (uint32_t i = 0; i < cn->n_taints; i++) {
        char *k = pk_str(pk, cn->taints[i].key), *v = pk_str(pk, cn->taints[i].value),
             *e = pk_str(pk, cn->taints[i].effect);
        if (t) {
            t[i].key = k;
            t[i].value = v;
            t[i].effect = e;
        }
    }
    if (cn->unschedulable) {
        char *k = pk_str(pk, "node.kubernetes.io/unschedulable"), *v = pk_str(pk, ""),
             *e = pk_str(pk, "NoSchedule");
        if (t) {
            t[cn->n_taints].key = k;
            t[cn->n_taints].value = v;
            t[cn->n_taints].effect = e;
        }
    }
    if (n) {
        n->labels = kv;
        n->n_labels = cn->n_labels;
        n->taints = t;
        n->n_taints = nt;
    }
}

/* same labels and taints (what a plan's static fit reads) */
static int same_placement(const struct gnode *a, const struct gnode *b)
{
    if (a->n_labels != b->n_labels || a->n_taints != b->n_taints)
        return 0;
    for (uint32_t i = 0; i < a->n_labels; i++)
        if (strcmp(a->labels[i].key, b->labels[i].key) != 0 ||
            strcmp(a->labels[i].value, b->labels[i].value) != 0)
            return 0;
    for (uint32_t i = 0; i < a->n_taints; i++)
        if (!SAME_STR(a->taints[i].key, b->taints[i].key) ||
            !SAME_STR(a->taints[i].value, b->taints[i].value) ||
            !SAME_STR(a->taints[i].effect, b->taints[i].effect))
            return 0;
    return 1;
}

static void presence(struct gang_state *s, struct gnode *n, int sign)
{
    for (int i = 0; i < NRES; i++) {
        s->tot_alloc[i] += sign * (__int128)n->alloc[i];
        s->tot_used[i] += sign * (__int128)n->used[i];
        s->tot_resv[i] += sign * (__int128)n->resv[i];
    }
}

enum common_rc gang_node_upsert(struct gang_state *s, const struct common_node *cn,
                                struct common_error *err)
{
    int64_t alloc[NRES];
    struct packer pk = {NULL, 0};
    struct gnode tmp, *n;
    void *block;
    int32_t idx;

    if (!cn->name || !*cn->name)
        return common_error_set(err, COMMON_EINVAL, "node without a name");
    memset(alloc, 0, sizeof(alloc));
    alloc[RES_CPU] = cn->allocatable.milli_cpu;
    alloc[RES_MEMORY] = cn->allocatable.memory;
    alloc[RES_EPHEMERAL] = cn->allocatable.ephemeral_storage;
    alloc[RES_PODS] = cn->allocatable.pods;
    for (uint32_t i = 0; i < cn->allocatable.n_extended; i++) {
        const struct common_resource *r = &cn->allocatable.extended[i];
        int id;
        if (res_ignored(s, r->name))
            continue;
        id = res_id(s, r->name, 1);
        if (id == -2)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        if (id >= 0)
            alloc[id] = r->value;
    }
    node_fill(&pk, NULL, cn);
    block = common_malloc(pk.off ? pk.off : 1);
    if (!block)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    idx = node_slot_get(s, cn->name);
    if (idx < 0) {
        common_free(block);
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    n = s->nodes[idx];
    pk.base = block;
    pk.off = 0;
    node_fill(&pk, &tmp, cn);
    /* a new node, or room or placement rules changed: gated gangs may fit now */
    if (!n->present || memcmp(n->alloc, alloc, sizeof(alloc)) != 0 || !same_placement(n, &tmp))
        s->ug_all = 1;
    if (n->present) {
        for (int i = 0; i < NRES; i++)
            s->tot_alloc[i] -= n->alloc[i];
    } else {
        for (int i = 0; i < NRES; i++) {
            s->tot_used[i] += n->used[i];
            s->tot_resv[i] += n->resv[i];
        }
    }
    n->present = 1;
    node_touch(s, idx);
    memcpy(n->alloc, alloc, sizeof(alloc));
    for (int i = 0; i < NRES; i++)
        s->tot_alloc[i] += n->alloc[i];
    common_free(n->block);
    n->block = block;
    n->labels = tmp.labels;
    n->n_labels = tmp.n_labels;
    n->taints = tmp.taints;
    n->n_taints = tmp.n_taints;
    return COMMON_OK;
}

void gang_node_delete(struct gang_state *s, const char *name)
{
    int32_t idx = node_slot_find(s, name);
    struct gnode *n;
    char why[GANG_REASON_MAX];

    if (idx < 0)
        return;
    n = s->nodes[idx];
    set_why(why, "node %s was deleted", name);
    for (size_t i = 0; i < s->gang_by_key.cap; i++) {
        struct gang *g = s->gang_by_key.e[i].hash ? s->gang_by_key.e[i].val : NULL;
        int held_here = 0;
        if (!g)
            continue;
        for (uint32_t j = 0; j < g->n_members; j++)
            held_here |= g->members[j]->held == idx;
        if (held_here) {
            gang_fail(s, g, 0, 0, why);
            continue;
        }
        for (uint32_t j = 0; j < g->n_members; j++) {
            struct gpod *p = g->members[j];
            if (p->planned == idx && p->held < 0) {
                pod_detach(s, p);
                p->planned = -1;
                pod_attach(s, p);
                g->plan_valid = 0;
            }
        }
    }
    if (n->present)
        presence(s, n, -1);
    n->present = 0;
    node_touch(s, idx);
    gc_push(s, n);
    node_gc(s);
}

/* ---- pods ---- */

static uint8_t phase_of(const char *ph)
{
    if (!ph || !*ph || strcmp(ph, "Pending") == 0)
        return PH_PENDING;
    if (strcmp(ph, "Running") == 0)
        return PH_RUNNING;
    if (strcmp(ph, "Succeeded") == 0)
        return PH_SUCCEEDED;
    if (strcmp(ph, "Failed") == 0)
        return PH_FAILED;
    return PH_UNKNOWN;
}

static const char *label_of(const struct common_pod *cp, const char *key)
{
    for (uint32_t i = 0; i < cp->n_labels; i++)
        if (strcmp(cp->labels[i].key, key) == 0)
            return cp->labels[i].value;
    return NULL;
}

static int32_t parse_min(const char *v)
{
    int64_t x = 0;

    if (!v || !*v)
        return -1;
    for (; *v; v++) {
        if (*v < '0' || *v > '9' || x > 100000000)
            return -1;
        x = x * 10 + (*v - '0');
    }
    return (int32_t)x;
}

/* the pod's gates as COMMON_GATE_* bits: the decoder's, else (a pod built by hand) the first
 * gate's name */
static uint8_t pod_gates(const struct common_pod *cp)
{
    uint8_t b = cp->scheduling_gates;
    const char *f = cp->first_scheduling_gate;

    if (b || !cp->n_scheduling_gates)
        return b;
    if (f && strcmp(f, GANG_SCHEDULING_GATE) == 0)
        return COMMON_GATE_TRAINSCHED | (cp->n_scheduling_gates > 1 ? COMMON_GATE_OTHER : 0);
    if (f && strcmp(f, GANG_KUEUE_TOPOLOGY_GATE) == 0)
        return COMMON_GATE_KUEUE_TOPOLOGY | (cp->n_scheduling_gates > 1 ? COMMON_GATE_OTHER : 0);
    return COMMON_GATE_OTHER;
}

static void pod_fill(struct packer *pk, struct gpod *p, const struct common_pod *cp,
                     const char *gang_name, const char *rjob, const struct gang_rq *req,
                     uint32_t n_req)
{
    struct gang_rq *rq = pk_take(pk, n_req * sizeof(*rq));
    char *uid = pk_str(pk, cp->uid), *ns = pk_str(pk, cp->namespace), *name = pk_str(pk, cp->name);
    char *gn = gang_name ? pk_str(pk, gang_name) : NULL;
    char *rj = pk_str(pk, rjob), *ow = pk_str(pk, gang_name ? cp->controller.name : "");
    /* only Kueue's topology gate keeps a member out of the plan: Kueue writes the member's
     * domain as it ungates it, so a plan made before would place it blind. A pod held by any
     * other gate is planned like the rest (its holds end at the gang's timeout, as before). */
    uint8_t gates = pod_gates(cp);
    char *gate = gang_name && (gates & COMMON_GATE_KUEUE_TOPOLOGY)
                     ? pk_str(pk, GANG_KUEUE_TOPOLOGY_GATE)
                     : NULL;

    if (!p)
        return;
    memcpy(rq, req, n_req * sizeof(*rq));
    p->req = rq;
    p->n_req = n_req;
    p->uid = uid;
    p->ns = ns;
    p->name = name;
    p->gang_name = gn;
    p->rjob = rj;
    p->owner = ow;
    p->gate = gate;
    p->gates = gang_name ? gates : 0;
    p->gate_index = cp->trainsched_gate_index;
}

static int members_reserve(struct gang *g)
{
    if (g->n_members < g->cap_members)
        return 0;
    {
        uint32_t cap = g->cap_members ? g->cap_members * 2 : 8;
        struct gpod **m = common_realloc(g->members, cap * sizeof(*m));
        if (!m)
            return -1;
        g->members = m;
        g->cap_members = cap;
    }
    return 0;
}

static void member_remove(struct gang *g, struct gpod *p)
{
    uint32_t i = p->member_idx;

    g->members[i] = g->members[--g->n_members];
    g->members[i]->member_idx = i;
}

enum common_rc gang_pod_upsert(struct gang_state *s, const struct common_pod *cp,
                               struct common_error *err)
{
    struct gang_rq req[NRES + 4];
    uint32_t n_req = 0;
    struct gpod *old, *p = NULL;
    struct gang *g = NULL, *old_g;
    struct gshape *sh = NULL;
    struct packer pk = {NULL, 0};
    const char *gname, *rjob;
    int32_t node = -1;
    int held_dropped = 0;

    if (!cp->uid || !*cp->uid || !cp->namespace || !*cp->namespace || !cp->name || !*cp->name)
        return common_error_set(err, COMMON_EINVAL, "pod without uid, namespace or name");
    old = pod_find(s, cp->uid);
    /* requests: cpu, memory, ephemeral-storage, one pod, extended (ignored ones left out) */
    req[n_req++] = (struct gang_rq){RES_CPU, cp->requests.milli_cpu};
    req[n_req++] = (struct gang_rq){RES_MEMORY, cp->requests.memory};
    if (cp->requests.ephemeral_storage)
        req[n_req++] = (struct gang_rq){RES_EPHEMERAL, cp->requests.ephemeral_storage};
    req[n_req++] = (struct gang_rq){RES_PODS, 1};
    for (uint32_t i = 0; i < cp->requests.n_extended && n_req < NRES + 4; i++) {
        const struct common_resource *r = &cp->requests.extended[i];
        int id;
        if (res_ignored(s, r->name) || r->value <= 0)
            continue;
        id = res_id(s, r->name, 1);
        if (id == -2)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        req[n_req++] = (struct gang_rq){(uint16_t)(id < 0 ? NRES - 1 : id), r->value};
    }
    /* a pod of kube-scheduler's own gang (spec.schedulingGroup) is never an extender member,
     * whatever its labels say: a pod is ganged by one mechanism */
    gname = cp->scheduling_group ? NULL : label_of(cp, GANG_POD_GROUP_LABEL);
    if (gname && !*gname)
        gname = NULL;
    rjob = label_of(cp, GANG_REPLICATED_JOB_LABEL);
    if (gmap_reserve(&s->pod_by_uid))
        goto oom;
    if (cp->node_name && *cp->node_name) {
        node = node_slot_get(s, cp->node_name);
        if (node < 0)
            goto oom;
    }
    if (gname) {
        g = gang_get(s, cp->namespace, gname);
        if (!g || members_reserve(g) || imap_reserve(&g->place, 2))
            goto oom;
        sh = shape_intern(s, cp, req, n_req);
        if (!sh)
            goto oom;
    }
    pk_take(&pk, sizeof(*p));
    pod_fill(&pk, NULL, cp, gname, rjob ? rjob : "", req, n_req);
    p = common_calloc(1, pk.off);
    if (!p)
        goto oom;
    pk.base = (char *)p;
    pk.off = 0;
    pk_take(&pk, sizeof(*p));
    pod_fill(&pk, p, cp, gname, rjob ? rjob : "", req, n_req);
    p->declared_min = gname ? parse_min(label_of(cp, GANG_MIN_MEMBER_LABEL)) : -1;
    p->priority = cp->has_priority ? cp->priority : 0;
    p->has_claims = cp->n_resource_claims > 0;
    p->kueue_podset = label_of(cp, GANG_KUEUE_PODSET_LABEL) != NULL;
    p->phase = phase_of(cp->phase);
    p->deleting = cp->deleting;
    p->node = node;
    p->planned = p->held = p->released = -1;
    p->gang = g;
    p->shape = sh;
    /* --- no failure past this point --- */
    old_g = old ? old->gang : NULL;
    if (old) {
        pod_detach(s, old);
        if (old_g)
            member_remove(old_g, old);
        if (old_g == g) {
            p->planned = old->planned;
            p->held = old->held;
            p->released = old->released;
            p->hold_since = old->hold_since;
            /* handed out for ungating: until the pod shows our gate gone */
            p->ungating = old->ungating && (p->gates & COMMON_GATE_TRAINSCHED);
            p->dra = old->dra; /* the planned devices stay with the pod */
            old->dra = NULL;
        } else if (old->held >= 0) {
            answer_queue(s, old, old->held, 0, "pod left its gang");
            s->n_held_total--;
            held_dropped = 1;
        }
    }
    if (p->node >= 0) {
        p->released = -1; /* the API server confirms a bind */
        p->planned = -1;
    }
    if (p->held >= 0 &&
        (p->node >= 0 || p->deleting || p->phase == PH_SUCCEEDED || p->phase == PH_FAILED)) {
        drop_hold(s, p,
                  p->node >= 0 ? "pod was bound elsewhere while its bind was held"
                               : "pod is terminating or finished");
        held_dropped = 1;
    }
    if (p->deleting || p->phase == PH_SUCCEEDED || p->phase == PH_FAILED)
        p->planned = -1;
    if (g) {
        p->member_idx = g->n_members;
        g->members[g->n_members++] = p;
    }
    gmap_put(&s->pod_by_uid, p->uid, strlen(p->uid), p);
    if (!old)
        s->n_pods++;
    pod_attach(s, p);
    if (old && old->a_used >= 0 && p->a_used < 0)
        s->ug_all = 1; /* the pod ended: its room is free */
    ug_mark(s, old_g);
    ug_mark(s, g);
    if (old) {
        shape_unref(s, old->shape);
        gdra_free(old->dra);
        common_free(old);
    }
    /* a member that failed, left or lost its hold may leave a holding gang short */
    if (old_g != g)
        gang_recheck(s, old_g, "a member left the gang");
    gang_recheck(s, g, held_dropped ? "a member lost its hold" : "a member changed");
    if (old_g != g)
        gang_maybe_free(s, old_g);
    node_gc(s);
    return COMMON_OK;
oom:
    shape_unref(s, sh);
    if (g && g != (old ? old->gang : NULL))
        gang_maybe_free(s, g);
    if (node >= 0)
        gc_push(s, s->nodes[node]);
    node_gc(s);
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

void gang_pod_delete(struct gang_state *s, const char *uid)
{
    struct gpod *p = pod_find(s, uid);
    struct gang *g;

    if (!p)
        return;
    g = p->gang;
    if (p->a_used >= 0)
        s->ug_all = 1; /* its room is free */
    ug_mark(s, g);
    pod_detach(s, p);
    if (p->held >= 0)
        drop_hold(s, p, "pod was deleted while its bind was held");
    if (g)
        member_remove(g, p);
    gmap_del(&s->pod_by_uid, p->uid, strlen(p->uid));
    s->n_pods--;
    shape_unref(s, p->shape);
    gdra_free(p->dra);
    common_free(p);
    gang_recheck(s, g, "a member was deleted");
    gang_maybe_free(s, g);
    node_gc(s);
}

void gang_bind_failed(struct gang_state *s, const char *uid)
{
    struct gpod *p = pod_find(s, uid);

    if (!p || p->released < 0)
        return;
    pod_detach(s, p);
    p->released = -1;
    pod_attach(s, p);
    node_gc(s);
}

/* ---- PodGroups ---- */

static int phased_split(const char *list, char ***out, uint32_t *n)
{
    const char *p = list ? list : "";
    uint32_t cap = 0;
    char **v = NULL;

    *out = NULL;
    *n = 0;
    while (*p) {
        const char *e;
        size_t len;
        while (*p == ',' || *p == ' ')
            p++;
        e = p;
        while (*e && *e != ',')
            e++;
        len = (size_t)(e - p);
        while (len && p[len - 1] == ' ')
            len--;
        if (len) {
            if (*n == cap) {
                char **nv;
                cap = cap ? cap * 2 : 4;
                nv = common_realloc(v, cap * sizeof(*v));
                if (!nv)
                    goto oom;
                v = nv;
            }
            v[*n] = common_strndup(p, len);
            if (!v[*n])
                goto oom;
            (*n)++;
        }
        p = e;
    }
    *out = v;
    return 0;
oom:
    for (uint32_t i = 0; i < *n; i++)
        common_free(v[i]);
    common_free(v);
    *n = 0;
    return -1;
}

enum common_rc gang_podgroup_upsert(struct gang_state *s, const struct gang_podgroup *pg,
                                    struct common_error *err)
{
    struct gang *g;
    struct gang_rq rq[NRES + 4];
    uint32_t n_rq = 0, n_phased = 0;
    struct gang_rq *min_res = NULL;
    char **phased = NULL;
    int phased_changed, spec_changed, topo_changed = 0;

    if (!pg->namespace || !*pg->namespace || !pg->name || !*pg->name)
        return common_error_set(err, COMMON_EINVAL, "PodGroup without namespace or name");
    if (pg->min_member < 0)
        return common_error_set(err, COMMON_EINVAL, "PodGroup %s/%s: minMember must be >= 0",
                                pg->namespace, pg->name);
    if (pg->has_min_resources) {
        const struct common_resources *r = &pg->min_resources;
        if (r->milli_cpu)
            rq[n_rq++] = (struct gang_rq){RES_CPU, r->milli_cpu};
        if (r->memory)
            rq[n_rq++] = (struct gang_rq){RES_MEMORY, r->memory};
        if (r->ephemeral_storage)
            rq[n_rq++] = (struct gang_rq){RES_EPHEMERAL, r->ephemeral_storage};
        if (r->pods)
            rq[n_rq++] = (struct gang_rq){RES_PODS, r->pods};
        for (uint32_t i = 0; i < r->n_extended && n_rq < NRES + 4; i++) {
            int id;
            if (res_ignored(s, r->extended[i].name) || r->extended[i].value <= 0)
                continue;
            id = res_id(s, r->extended[i].name, 1);
            if (id == -2)
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
            rq[n_rq++] = (struct gang_rq){(uint16_t)(id < 0 ? NRES - 1 : id), r->extended[i].value};
        }
    }
    g = gang_get(s, pg->namespace, pg->name);
    if (!g)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (n_rq) {
        min_res = common_malloc(n_rq * sizeof(*min_res));
        if (!min_res)
            goto oom;
        memcpy(min_res, rq, n_rq * sizeof(*min_res));
    }
    if (phased_split(pg->phased_jobs, &phased, &n_phased))
        goto oom;
    if (gang_topo_assign(s, g, pg->topology, pg->n_topology, &topo_changed)) {
        for (uint32_t i = 0; i < n_phased; i++)
            common_free(phased[i]);
        common_free(phased);
        goto oom;
    }
    if (!SAME_STR(g->dra_match, pg->dra_match)) {
        char *m = pg->dra_match ? common_strdup(pg->dra_match) : NULL;
        if (pg->dra_match && !m) {
            for (uint32_t i = 0; i < n_phased; i++)
                common_free(phased[i]);
            common_free(phased);
            goto oom;
        }
        common_free(g->dra_match);
        g->dra_match = m;
        topo_changed = 1; /* the plan is made again, as for a new topology request */
    }
    if (topo_changed && g->active)
        gang_fail(s, g, 0, 0, "the PodGroup's topology request changed");
    if (topo_changed)
        g->dom_path[0] = '\0';
    phased_changed = n_phased != g->n_phased;
    for (uint32_t i = 0; i < n_phased && !phased_changed; i++)
        phased_changed = strcmp(phased[i], g->phased[i]) != 0;
    spec_changed = topo_changed || !g->has_pg || g->min_member != pg->min_member ||
                   g->n_min_res != n_rq ||
                   (n_rq && memcmp(g->min_res, min_res, n_rq * sizeof(*min_res)) != 0);
    /* what may let members that kube-scheduler parked go through: a lower minMember, other
     * minResources, other phased jobs (a new PodGroup is not: its members wait with an Error,
     * which kube-scheduler retries on its own) */
    if (g->has_pg && (pg->min_member < g->min_member || phased_changed || g->n_min_res != n_rq ||
                      (n_rq && memcmp(g->min_res, min_res, n_rq * sizeof(*min_res)) != 0)))
        g->unblocks++;
    if (phased_changed && g->active)
        gang_fail(s, g, 0, 0, "the PodGroup's phased replicated jobs changed");
    if (phased_changed) /* members' phased flag may change: re-account them */
        for (uint32_t i = 0; i < g->n_members; i++)
            pod_detach(s, g->members[i]);
    for (uint32_t i = 0; i < g->n_phased; i++)
        common_free(g->phased[i]);
    common_free(g->phased);
    g->phased = phased;
    g->n_phased = n_phased;
    if (phased_changed)
        for (uint32_t i = 0; i < g->n_members; i++)
            pod_attach(s, g->members[i]);
    common_free(g->min_res);
    g->min_res = min_res;
    g->n_min_res = n_rq;
    g->has_min_res = n_rq > 0;
    g->has_pg = 1;
    g->min_member = pg->min_member;
    g->has_timeout = pg->has_timeout;
    g->timeout_s = pg->timeout_seconds;
    if (spec_changed && !g->active)
        gang_drop_plan(s, g);
    else if (spec_changed)
        g->plan_valid = 0;
    if (spec_changed || phased_changed)
        ug_mark(s, g);
    gang_recheck(s, g, "the PodGroup changed");
    node_gc(s);
    return COMMON_OK;
oom:
    common_free(min_res);
    gang_maybe_free(s, g);
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

void gang_podgroup_delete(struct gang_state *s, const char *ns, const char *name)
{
    struct gang *g = gang_find(s, ns, name);
    char why[GANG_REASON_MAX];

    if (!g)
        return;
    if (g->active) {
        set_why(why, "PodGroup %s was deleted", g->key);
        gang_fail(s, g, 0, 0, why);
    } else {
        gang_drop_plan(s, g);
    }
    g->has_pg = 0;
    g->min_member = 0;
    gang_topo_clear(g);
    common_free(g->dra_match);
    g->dra_match = NULL;
    g->dom_path[0] = '\0';
    common_free(g->min_res);
    g->min_res = NULL;
    g->n_min_res = 0;
    g->has_min_res = 0;
    if (g->n_phased) {
        for (uint32_t i = 0; i < g->n_members; i++)
            pod_detach(s, g->members[i]);
        for (uint32_t i = 0; i < g->n_phased; i++)
            common_free(g->phased[i]);
        common_free(g->phased);
        g->phased = NULL;
        g->n_phased = 0;
        for (uint32_t i = 0; i < g->n_members; i++)
            pod_attach(s, g->members[i]);
    }
    ug_mark(s, g);
    gang_maybe_free(s, g);
    node_gc(s);
}

/* ---- gang_check ---- */

static enum common_rc vec_cmp(const char *what, const char *node, const int64_t *a,
                              const int64_t *b, struct common_error *err)
{
    for (int i = 0; i < NRES; i++)
        if (a[i] != b[i])
            return common_error_set(err, COMMON_ECONFLICT,
                                    "%s of %s[%d]: books %lld, recomputed %lld", what, node, i,
                                    (long long)a[i], (long long)b[i]);
    return COMMON_OK;
}

/* the same for the 128-bit cluster totals (printed by their low 64 bits) */
static enum common_rc tot_cmp(const char *what, const __int128 *a, const __int128 *b,
                              struct common_error *err)
{
    for (int i = 0; i < NRES; i++)
        if (a[i] != b[i])
            return common_error_set(err, COMMON_ECONFLICT,
                                    "%s of cluster[%d]: books %lld, recomputed %lld", what, i,
                                    (long long)a[i], (long long)b[i]);
    return COMMON_OK;
}

enum common_rc gang_check(const struct gang_state *s, struct common_error *err)
{
    int64_t(*used)[NRES] = NULL, (*resv)[NRES] = NULL;
    uint32_t *refs = NULL;
    __int128 ta[NRES], tu[NRES], tr[NRES];
    enum common_rc rc = COMMON_OK;
    size_t held = 0;
    uint64_t pods = 0;

    if (s->n_nodes) {
        used = common_calloc(s->n_nodes, sizeof(*used));
        resv = common_calloc(s->n_nodes, sizeof(*resv));
        refs = common_calloc(s->n_nodes, sizeof(*refs));
        if (!used || !resv || !refs) {
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
    }
    for (size_t i = 0; i < s->pod_by_uid.cap; i++) {
        const struct gpod *p = s->pod_by_uid.e[i].hash ? s->pod_by_uid.e[i].val : NULL;
        if (!p)
            continue;
        pods++;
        if (!p->attached) {
            rc = common_error_set(err, COMMON_ECONFLICT, "pod %s/%s not attached", p->ns, p->name);
            goto out;
        }
        if (p->held >= 0) {
            held++;
            if (!p->gang || !p->gang->active) {
                rc = common_error_set(err, COMMON_ECONFLICT,
                                      "pod %s/%s held but its gang is not active", p->ns, p->name);
                goto out;
            }
        }
        for (int k = 0; k < 4; k++)
            if (p->a_refs[k] >= 0)
                refs[p->a_refs[k]]++;
        for (uint32_t k = 0; k < p->n_req; k++) {
            if (p->a_used >= 0)
                used[p->a_used][p->req[k].id] += p->req[k].v;
            if (p->a_resv >= 0)
                resv[p->a_resv][p->req[k].id] += p->req[k].v;
        }
    }
    {
        uint32_t og = 0;
        for (size_t i = 0; i < s->gang_by_key.cap; i++) {
            const struct gang *g = s->gang_by_key.e[i].hash ? s->gang_by_key.e[i].val : NULL;
            og += g && g->c.ours;
        }
        if (og != s->n_ours_gangs) {
            rc = common_error_set(err, COMMON_ECONFLICT, "gangs at our gate %u, recomputed %u",
                                  s->n_ours_gangs, og);
            goto out;
        }
    }
    if (pods != s->n_pods || held != s->n_held_total) {
        rc = common_error_set(err, COMMON_ECONFLICT, "pods %llu/%llu, held %zu/%zu",
                              (unsigned long long)pods, (unsigned long long)s->n_pods, held,
                              s->n_held_total);
        goto out;
    }
    memset(ta, 0, sizeof(ta));
    memset(tu, 0, sizeof(tu));
    memset(tr, 0, sizeof(tr));
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const struct gnode *n = s->nodes[i];
        if (!n)
            continue;
        if ((rc = vec_cmp("used", n->name, n->used, used[i], err)) ||
            (rc = vec_cmp("reserved", n->name, n->resv, resv[i], err)))
            goto out;
        if (n->refs != refs[i]) {
            rc = common_error_set(err, COMMON_ECONFLICT, "refs of %s: %u, recomputed %u", n->name,
                                  n->refs, refs[i]);
            goto out;
        }
        if (!n->present && !n->refs && !n->in_gc) {
            rc = common_error_set(err, COMMON_ECONFLICT, "slot of %s kept for nothing", n->name);
            goto out;
        }
        if (n->present)
            for (int k = 0; k < NRES; k++) {
                ta[k] += n->alloc[k];
                tu[k] += n->used[k];
                tr[k] += n->resv[k];
            }
    }
    if ((rc = tot_cmp("total allocatable", s->tot_alloc, ta, err)) ||
        (rc = tot_cmp("total used", s->tot_used, tu, err)) ||
        (rc = tot_cmp("total reserved", s->tot_resv, tr, err)))
        goto out;
    for (size_t i = 0; i < s->gang_by_key.cap; i++) {
        const struct gang *g = s->gang_by_key.e[i].hash ? s->gang_by_key.e[i].val : NULL;
        struct gcounts c;
        if (!g)
            continue;
        memset(&c, 0, sizeof(c));
        for (uint32_t k = 0; k < g->n_members; k++) {
            const struct gpod *p = g->members[k];
            if (p->gang != g || p->member_idx != k) {
                rc = common_error_set(err, COMMON_ECONFLICT, "gang %s member %u misfiled", g->key,
                                      k);
                goto out;
            }
            counts_apply(&c, member_flags(g, p), 1);
            if (p->a_flags != member_flags(g, p)) {
                rc = common_error_set(err, COMMON_ECONFLICT, "gang %s pod %s flags stale", g->key,
                                      p->name);
                goto out;
            }
        }
        if (memcmp(&c, &g->c, sizeof(c)) != 0) {
            rc = common_error_set(err, COMMON_ECONFLICT,
                                  "gang %s counters: held %u/%u planned %u/%u bound %u/%u "
                                  "known %u/%u eligible %u/%u",
                                  g->key, g->c.held, c.held, g->c.planned, c.planned, g->c.bound,
                                  c.bound, g->c.known, c.known, g->c.eligible, c.eligible);
            goto out;
        }
        if ((g->active != 0) != (g->active_idx >= 0) ||
            (g->active_idx >= 0 && s->active[g->active_idx] != g)) {
            rc = common_error_set(err, COMMON_ECONFLICT, "gang %s active list", g->key);
            goto out;
        }
        if (!g->active && g->c.held) {
            rc = common_error_set(err, COMMON_ECONFLICT, "gang %s holds while not active", g->key);
            goto out;
        }
    }
out:
    common_free(used);
    common_free(resv);
    common_free(refs);
    return rc;
}
