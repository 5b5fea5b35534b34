/*
 * gang/gang_int.h - the records behind struct gang_state, shared by the files of gang/.
 *
 * Books: nodes live in slots (index = slot number, stable while any pod refers to the node);
 * pods are keyed by uid, gangs by "namespace/name", node slots by name (open-addressing hash
 * maps, map.c). Every number derived from a pod (node usage, node reservations, cluster totals,
 * gang counters, the gang's per-node sibling counts, node references) is added by pod_attach
 * and removed by pod_detach from what the pod recorded when attached, so a change is always
 * detach, mutate, attach (books.c). gang_check recomputes them all.
 */
#ifndef GANG_GANG_INT_H
#define GANG_GANG_INT_H

#include <stdint.h>

#include "gang/gang.h"
#include "dra/view.h"
#include "topology/topology.h"

#define NRES GANG_MAX_RESOURCES
enum { RES_CPU = 0, RES_MEMORY, RES_EPHEMERAL, RES_PODS, RES_FIRST_EXT };

/* ---- maps (map.c) ---- */

struct gmap_entry {
    const void *key; /* borrowed from the value's own record */
    uint32_t len;
    uint32_t hash;
    void *val;
};

/* string (or byte) key -> pointer; linear probing with backward-shift deletion */
struct gmap {
    struct gmap_entry *e;
    size_t cap, n; /* cap a power of two, or 0 */
};

void *gmap_get(const struct gmap *m, const void *key, size_t len);
/* put or replace; the key must stay valid while in the map. 0 or -1 (out of memory) */
int gmap_put(struct gmap *m, const void *key, size_t len, void *val);
/* make room for one more put without allocating in it. 0 or -1 */
int gmap_reserve(struct gmap *m);
void gmap_del(struct gmap *m, const void *key, size_t len);
void gmap_free(struct gmap *m);

/* uint32 key -> uint32 count (the gang's members per node); no deletion */
struct imap {
    uint32_t *keys; /* key + 1, 0 = empty */
    uint32_t *vals;
    size_t cap, n;
};

uint32_t imap_get(const struct imap *m, uint32_t key);
/* add delta to key's count (created at 0). 0 or -1 (out of memory, only when delta > 0 and the
 * key is new) */
int imap_add(struct imap *m, uint32_t key, int32_t delta);
/* make room for k more keys without allocating in imap_add. 0 or -1 */
int imap_reserve(struct imap *m, size_t k);
void imap_free(struct imap *m);

/* ---- packing one allocation (fit.c): run a fill twice, first with base NULL to size it ---- */

struct packer {
    char *base; /* NULL: only count */
    size_t off;
};

/* size bytes aligned to 8; NULL while counting */
void *pk_take(struct packer *pk, size_t size);
/* a copy of s (NULL is ""); NULL while counting */
char *pk_str(struct packer *pk, const char *s);

/* ---- records ---- */

struct gang_rq {
    uint16_t id;
    int64_t v;
};

/* A taint (copied). */
struct gtaint {
    const char *key, *value, *effect;
};

struct gnode {
    char *name;
    int32_t idx;
    uint8_t present;
    uint32_t refs;            /* pods whose node, planned, held or released field names this slot */
    uint8_t in_gc;            /* queued for gc */
    struct common_kv *labels; /* sorted by key */
    uint32_t n_labels;
    struct gtaint *taints;
    uint32_t n_taints;
    void *block; /* labels and taints strings */
    int64_t alloc[NRES], used[NRES], resv[NRES];
};

/* A pod shape: requests and scheduling constraints, interned and shared by members. */
struct gshape {
    void *key; /* canonical bytes */
    uint32_t key_len;
    uint32_t refs;
    struct gang_rq *req;
    uint32_t n_req;
    struct common_kv *selector;
    uint32_t n_selector;
    struct common_toleration *tols;
    uint32_t n_tols;
    struct common_node_selector_term *terms;
    uint32_t n_terms;
    void *block;
};

enum { PH_PENDING = 0, PH_RUNNING, PH_SUCCEEDED, PH_FAILED, PH_UNKNOWN };

/* member flags (what the pod adds to its gang's counters) */
enum {
    F_MEMBER = 1u << 0,
    F_KNOWN = 1u << 1,
    F_PHASED = 1u << 2,
    F_BOUND = 1u << 3,
    F_RELEASED = 1u << 4,
    F_HELD = 1u << 5,
    F_PLANNED = 1u << 6,
    F_DONE = 1u << 7,
    F_ELIGIBLE = 1u << 8,
    F_RUNNING = 1u << 9,
    F_SUCCEEDED = 1u << 10,
    F_FAILED = 1u << 11,
    F_PHASED_KNOWN = 1u << 12,
    F_GATED = 1u << 13, /* pending with Kueue's topology gate: not placeable until ungated */
    F_OURS = 1u << 14   /* known, unbound, not finished, trainsched's gate its only gate, and
                           not yet handed out by gang_ungate (ungate.c) */
};

struct gang;

struct gpod {
    char *uid, *ns, *name;
    char *gang_name;      /* label value, NULL when not a member */
    char *rjob;           /* replicatedjob label, "" */
    char *owner;          /* controller name, "" */
    int32_t declared_min; /* GANG_MIN_MEMBER_LABEL, -1 when absent */
    uint8_t phase;
    uint8_t deleting;
    int32_t node;     /* spec.nodeName slot, -1 */
    int32_t planned;  /* -1 */
    int32_t held;     /* -1 */
    int32_t released; /* -1 */
    int64_t hold_since;
    struct gang *gang;
    uint32_t member_idx;
    struct gshape *shape; /* members only */
    struct gang_rq *req;
    uint32_t n_req;
    /* what pod_attach added (pod_detach removes exactly this) */
    uint8_t attached;
    int32_t a_used, a_resv, a_place;
    int32_t a_refs[4];
    uint32_t a_flags;
    int32_t a_declared;
    struct gang *a_gang;
    /* scratch for planning */
    int32_t p_new;
    /* spec.priority (0 when absent) */
    int32_t priority;
    /* scratch for gang_preempt: the call's epoch when counted as a victim of the node at hand */
    uint64_t v_mark;
    /* the devices the last committed plan gave the pod's claims (dra.c), NULL when none */
    struct gdra *dra;
    /* spec.resourceClaims is not empty */
    uint8_t has_claims;
    /* labelled kueue.x-k8s.io/podset (admitted by Kueue) */
    uint8_t kueue_podset;
    /* Kueue's topology gate when the pod has it (the gate that keeps it out of plans), NULL
     * otherwise */
    char *gate;
    /* spec.schedulingGates as common_pod.scheduling_gates bits, and the index of ours */
    uint8_t gates;
    uint32_t gate_index;
    /* gang_ungate handed the pod out for ungating; kept until the pod shows no gate of ours
     * (or gang_ungate_failed) */
    uint8_t ungating;
};

struct gcounts {
    uint32_t members, known, phased_known, bound, released, held, planned, done, eligible;
    uint32_t running, succeeded, failed;
    uint32_t gated;
    uint32_t ours;
};

#define DECL_SLOTS 4

struct gang {
    char *key; /* "ns/name" */
    char *ns;  /* points into key */
    char *name;
    /* PodGroup */
    int has_pg;
    int32_t min_member;
    int32_t timeout_s;
    int has_timeout;
    int has_min_res;
    struct gang_rq *min_res;
    uint32_t n_min_res;
    char **phased;
    uint32_t n_phased;
    /* members */
    struct gpod **members;
    uint32_t n_members, cap_members;
    struct gcounts c;
    int32_t decl_val[DECL_SLOTS];
    uint32_t decl_cnt[DECL_SLOTS];
    uint32_t decl_overflow;
    struct imap place; /* node slot -> members placed there (bound, released, held, planned) */
    /* attempt */
    int active;
    int32_t active_idx;
    int64_t hold_start;
    int64_t deadline;
    int has_start;
    int64_t last_start;
    uint64_t plan_epoch;
    int plan_valid;
    /* the plan holds only part of the need: the rest waits for kube-scheduler to evict
     * lower-priority pods (gang.c, plan_for_preemption) */
    int preempting;
    int32_t excl[16];
    uint32_t n_excl;
    /* PodGroup updates that may let waiting members through (gang_info.podgroup_unblocks) */
    uint32_t unblocks;
    /* backoff */
    int64_t backoff_until;
    uint32_t failures;
    char why[GANG_REASON_MAX];
    /* scratch for gang_preempt (preempt.c): per node (v_*) and per call (q_*), valid while the
     * mark equals the state's pre_epoch / pre_call */
    uint64_t v_mark, v_done;
    uint32_t v_evicted;
    uint64_t q_mark;
    uint32_t q_alive;  /* members bound (or released) and not terminal, not deleting */
    uint32_t q_quorum; /* q_alive + phased members that Succeeded: what minMember is held to */
    int q_low;         /* every alive member is bound with priority below the preemptor's */
    /* topology: the request as annotated (strings in topo_block), a parse error ("" when
     * none), the domain the last committed plan used (sticky; dom_path "" = none, dom_level
     * its level, -1 for the whole cluster) */
    struct topo_request topo;
    char *topo_block;
    char topo_err[GANG_REASON_MAX];
    int32_t dom_level;
    char dom_path[GANG_REASON_MAX];
    /* "" unless the PodGroup's topology request was set aside because Kueue placed the
     * members (pipeline.c): the sentence saying so */
    char topo_note[GANG_REASON_MAX];
    /* the ungating pass (ungate.c): the gang is in s->ug_dirty; its creation order (ties of
     * priority go to the older gang) */
    uint8_t ug_dirty;
    uint64_t seq;
    /* DRA: the gang-wide attribute its members' devices must agree on (PodGroup annotation
     * GANG_DRA_MATCH_ANNOTATION, "domain/name"), NULL when none */
    char *dra_match;
};

/* prioritize's memo of least-allocated scores for one request vector (score.c): score[slot]
 * (0..4, -1 for a node not present) is valid while gen[slot] == s->node_gen[slot] */
struct la_memo {
    struct gang_rq *req;
    uint32_t n_req;
    uint64_t *gen;
    int8_t *score;
    uint32_t cap;
};
#define LA_MEMOS 4

/* the last NodeNames list (NUL-separated in blob) and its slots, valid while ok and gen ==
 * s->names_gen (no name added to or dropped from the books since) */
struct names_memo {
    char *blob;
    size_t len, cap;
    int32_t *slots;
    size_t n, cap_slots;
    uint64_t gen;
    int ok;
};

struct gang_state {
    struct gang_config cfg;
    char **ignored;
    size_t n_ignored;
    int64_t eff_margin;
    /* resources */
    char *res_names[NRES];
    char *res_short[NRES]; /* "Insufficient <name>" */
    uint32_t n_res;
    /* nodes */
    struct gnode **nodes;
    uint32_t n_nodes, cap_nodes;
    int32_t *free_slots;
    uint32_t n_free, cap_free;
    struct gmap node_by_name;
    int32_t *gc;
    uint32_t n_gc, cap_gc;
    /* cluster totals of the present nodes, in 128 bits: a sum over nodes of int64 amounts
     * (two Nodes of 2^63-1 bytes of memory) must neither overflow nor saturate, since it is
     * also subtracted from when a node goes */
    __int128 tot_alloc[NRES], tot_used[NRES], tot_resv[NRES];
    /* pods, gangs, shapes */
    struct gmap pod_by_uid;
    struct gmap gang_by_key;
    struct gmap shape_by_key;
    uint64_t n_pods;
    /* active gangs */
    struct gang **active;
    uint32_t n_active, cap_active;
    uint64_t resv_epoch;
    /* answers: capacity reserved at hold time so queueing never allocates */
    struct gang_answer *pending;
    size_t n_pending, cap_pending;
    struct gang_answer *out;
    size_t n_out, cap_out;
    struct gang_answer *binds; /* the RELEASE list of gang_bind */
    size_t n_binds, cap_binds;
    size_t n_held_total;
    /* per-call reason buffers */
    char why[GANG_REASON_MAX];
    char why2[GANG_REASON_MAX];
    /* gang_preempt: epochs of the scratch marks, and its per-node reasons (NUL-separated) */
    uint64_t pre_epoch, pre_call;
    char *pre_why;
    size_t pre_len, pre_cap;
    /* the DRA view (gang_dra_set), borrowed; NULL when the glue has none */
    const struct dra_view *dra;
    /* per-node DRA reasons of the current filter call (gang_reason_keep) */
    char **dra_why;
    size_t n_dra_why, cap_dra_why;
    /* named topologies (gang_topology_set), in the order set; the first is the default */
    struct gtopo *topos;
    uint32_t n_topos;
    /* prioritize's memos (score.c): node_gen[slot] changes whenever the slot's node changes
     * (allocatable, used, reserved, presence, the slot freed or reused); names_gen whenever a
     * name enters or leaves node_by_name */
    uint64_t *node_gen;
    uint32_t cap_gen;
    uint64_t node_clock, names_gen;
    struct la_memo la[LA_MEMOS];
    uint32_t la_next;
    struct names_memo names;
    /* the ungating pass (ungate.c): gangs whose pods or PodGroup changed since the last pass;
     * ug_all: capacity was freed (every waiting gated gang is looked at again); ug_retry_at: the
     * earliest end of a backoff a waiting gated gang waits for; gangs created so far (their
     * seq); gangs with a member at our gate (F_OURS), kept by pod_attach/pod_detach */
    struct gang **ug_dirty;
    uint32_t n_ug_dirty, cap_ug_dirty;
    int ug_all;
    int64_t ug_retry_at;
    uint64_t gang_seq;
    uint32_t n_ours_gangs;
};

/* A named topology: levels (node label keys, widest first). */
struct gtopo {
    char *name;
    char **levels;
    uint32_t n_levels;
};

/* ---- books.c ---- */

int32_t node_slot_find(const struct gang_state *s, const char *name);
void pod_attach(struct gang_state *s, struct gpod *p);
void pod_detach(struct gang_state *s, struct gpod *p);
void node_gc(struct gang_state *s);
struct gpod *pod_find(const struct gang_state *s, const char *uid);
struct gang *gang_find(const struct gang_state *s, const char *ns, const char *name);
int pod_is_phased(const struct gang *g, const struct gpod *p);
int gang_admitted(const struct gang *g);
/* the gang timeout g asks for, ms: its PodGroup's scheduleTimeoutSeconds, else the default
 * (before the cap of gang_timeout_cap_ms) */
int64_t gang_asked_timeout(const struct gang_state *s, const struct gang *g);
/* held + bound + released + phased done: what counts toward quorum now */
uint32_t gang_progress(const struct gang *g);
/* queue an error answer for held member p (capacity is reserved) */
void answer_queue(struct gang_state *s, const struct gpod *p, int32_t node, int bind,
                  const char *reason);
/* room for pending answers (one per held pod plus pending_more) and binds_need RELEASE
 * entries. 0 or -1 */
int answers_reserve(struct gang_state *s, size_t pending_more, size_t binds_need);
void answer_bind(struct gang_state *s, const struct gpod *p, int32_t node);
/* drop held member p's hold with an error answer (the caller detaches p before, attaches after) */
void drop_hold(struct gang_state *s, struct gpod *p, const char *reason);
int active_reserve(struct gang_state *s);
/* the gang starts holding (room in s->active reserved by the caller) */
void gang_activate(struct gang_state *s, struct gang *g, int64_t now);
/* gang_hold_progress - an active gang held one more member at now: its deadline moves to now +
 * its asked timeout (scheduleTimeoutSeconds or the default), never past hold_start + the cap of
 * gang_timeout_cap_ms (the first held bind must be answered before kube-scheduler's bind
 * httpTimeout), never earlier than it was. */
void gang_hold_progress(struct gang_state *s, struct gang *g, int64_t now);
/* every held member binds now (into s->binds when to_binds, else queued answers) */
void gang_release(struct gang_state *s, struct gang *g, int to_binds);
/* end the attempt: held binds answer with reason; plans dropped; backoff when backoff != 0 */
void gang_fail(struct gang_state *s, struct gang *g, int64_t now, int backoff, const char *reason);
/* drop the plan of every unheld member (and the exclusions when the gang is not active) */
void gang_drop_plan(struct gang_state *s, struct gang *g);
/* the gang can still reach minMember with the members it has */
int gang_completable(const struct gang *g);
void gang_maybe_free(struct gang_state *s, struct gang *g);
void set_why(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- ungate.c ---- */

/* g's pods or PodGroup changed: the next ungating pass looks at it (a no-op when g is NULL or
 * already marked; without memory for the list, every gang is looked at) */
void ug_mark(struct gang_state *s, struct gang *g);
/* g is being freed: out of the dirty list */
void ug_forget(struct gang_state *s, struct gang *g);

/* ---- score.c ---- */

/* the node in slot idx changed: its memoized scores are stale */
void node_touch(struct gang_state *s, int32_t idx);
/* room in s->node_gen for cap slots; 0 or -1 */
int node_gen_reserve(struct gang_state *s, uint32_t cap);
/* 0..4: least-allocated over req (pods left out): room left after the request, averaged */
int64_t least_allocated(const struct gnode *n, const struct gang_rq *req, uint32_t n_req);
/* the slot of each of nodes[0..n_nodes) (-1: unknown), through the memo of the last list; the
 * array lives until the next call; NULL without memory */
const int32_t *prio_slots(struct gang_state *s, const char *const *nodes, size_t n_nodes);
/* the memo of least-allocated scores for req; NULL without memory */
struct la_memo *prio_memo(struct gang_state *s, const struct gang_rq *req, uint32_t n_req);
/* least_allocated of slot idx for m's request, -1 when no node is present there */
int64_t prio_la(const struct gang_state *s, struct la_memo *m, int32_t idx);
void prio_memo_free(struct gang_state *s);

/* ---- gang.c ---- */

/*
 * gang_min_res_need - what g's minResources[i] asks of free capacity now: the PodGroup's amount
 * less the requests of its phased members that are done (F_DONE: bound, whose usage the nodes
 * already count, or Succeeded, which need nothing), never below 0. Trainer's minResources sums
 * every member, initializers included, but those run first and alone: only the remaining phase
 * must fit at once. O(members x requests) when a phased member is done, else O(1).
 */
int64_t gang_min_res_need(const struct gang *g, uint32_t i);

struct plan_out;
/* g->why says why plan po failed (a policy's reason, no node, or the shortfall) */
void plan_failure_why(const struct gang_state *s, struct gang *g, const struct plan_out *po);
/* 1 when g's minResources (less its finished phase) exceeds the cluster's free sum (the
 * reason in g->why), else 0 */
int min_resources_short(const struct gang_state *s, struct gang *g);

/*
 * gang_amount_text - amount v of resource id (as the books count it: cpu in millicores,
 * memory and ephemeral-storage in bytes, others whole units) as a Kubernetes quantity for
 * messages ("768", "500m", "64Gi", "8"): buf (64 bytes always suffice), returned.
 */
const char *gang_amount_text(uint16_t id, int64_t v, char *buf, size_t n);

/* ---- fit.c ---- */

/* node n's value of label key, NULL when absent */
const char *fit_label(const struct gnode *n, const char *key);

/* static fit of shape on node: NULL when it matches, else a constant reason */
const char *fit_static(const struct gshape *sh, const struct gnode *n);
/* capacity: NULL when req fits in alloc - used - resv, else the "Insufficient x" string */
const char *fit_capacity(const struct gang_state *s, const struct gang_rq *req, uint32_t n_req,
                         const struct gnode *n);
int fit_toleration_tolerates(const struct common_toleration *t, const struct gtaint *taint);
/* intern a shape for pod cp; the caller owns one reference. NULL when out of memory */
struct gshape *shape_intern(struct gang_state *s, const struct common_pod *cp,
                            const struct gang_rq *req, uint32_t n_req);
void shape_unref(struct gang_state *s, struct gshape *sh);
/* resource id of name (interned when new and room is left); -1 when the table is full */
int res_id(struct gang_state *s, const char *name, int intern);
int res_ignored(const struct gang_state *s, const char *name);

/* ---- plan.c ---- */

struct plan_req {
    struct gpod *pin; /* placed first on pin_node (a bind) */
    int32_t pin_node;
    struct gpod *restrict_pod; /* must land on one of cands (a filter) */
    const int32_t *cands;
    size_t n_cands;
    /* a dry run (gang_preempt): nothing is committed even when the plan succeeds, the gang's
     * excluded nodes are usable, and the requests of the freed pods (each on its a_used node)
     * count as free capacity */
    int dry_run;
    const struct gpod *const *freed;
    size_t n_freed;
    /* commit what fits even when it is short of the need (out->partial says so); a pinned or
     * restricted member that does not fit still fails the plan */
    int partial;
    /* the ungating pass: members held by a gate besides ours are left out of the plan */
    int ungate;
};

struct plan_out {
    char why[GANG_REASON_MAX]; /* a placement policy's reason when it made the plan fail, "" */
    int ok;
    uint32_t placed;  /* held + newly planned */
    uint32_t need;    /* minMember - bound - released - phased done */
    int short_res;    /* a limiting resource id, -1 unknown */
    int no_node;      /* no node matches the constraints of some shape */
    int pod_unplaced; /* the restricted member fits none of its candidates */
    int partial;      /* ok with placed < need (rq->partial) */
};

/*
 * plan_gang - plan every eligible member of g (sticky: a member keeps its planned node when it
 * still fits and is not excluded). Committed only when ok and not rq->dry_run; on failure
 * nothing changes. Returns 0, or -1 when out of memory.
 */
int plan_gang(struct gang_state *s, struct gang *g, const struct plan_req *rq,
              struct plan_out *out);

/* ---- preempt.c ---- */

/* R3 of gang_preempt: could g fit whole if every pod a preemption at p's priority could evict
 * were gone? 0 yes, 1 no (the reason in s->why2), -1 out of memory. The caller starts a census
 * epoch first (s->pre_call = ++s->pre_epoch). */
int whole_gang_short(struct gang_state *s, struct gang *g, const struct gpod *p);

/* a 128-bit amount (cluster totals and what is free of them) as an int64 for messages and
 * comparisons with one request: clamped to [0, INT64_MAX] */
static inline int64_t gang_amount64(__int128 v)
{
    return v <= 0 ? 0 : v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

#endif

/* ---- pipeline.c: the placement policies, in the order they run ---- */

/* gates shared by filter, bind and preempt */
enum gate {
    GATE_PASS = 0, /* go on with the gang rules */
    GATE_ALONE,    /* no gang constraint for this pod: fit per node, bind at once */
    GATE_WAIT      /* UNRESOLVABLE / REJECT with *why */
};

/*
 * gang_quorum_gate (gang.c) - the gang policy's gate: no PodGroup, backoff, stale minMember,
 * fewer pods than minMember, trainer pods waiting for a phased pod -> GATE_WAIT (*why: the
 * reason, in g->why or s->why); minMember 0, a phased member or an admitted gang ->
 * GATE_ALONE; else GATE_PASS. pipeline_gate runs it with the other policies' gates, for filter,
 * bind and preempt alike.
 */
enum gate gang_quorum_gate(struct gang_state *s, struct gang *g, const struct gpod *p, int64_t now,
                           const char **why);

/* What a plan may use: the ordered scopes (topology domains, or the whole cluster), the node
 * rank that packs inside a scope, and slices. Filled by plan_scopes. */
struct plan_scopes {
    int topo;                /* a topology policy gave the scopes (else one whole-cluster scope) */
    struct topo_domains dom; /* when topo */
    struct topo_want want;   /* when topo */
    const struct gtopo *t;   /* when topo */
    uint32_t pack_levels;    /* levels topo_node_rank compares */
    struct topo_scope *list; /* n entries, tried in order */
    size_t n;
    char why[GANG_REASON_MAX]; /* n == 0: why nothing may be tried */
};

/*
 * One placement policy (STYLE.md item 2: one const table, the order is the table's). Each
 * hook MAY be NULL.
 * - gate: before the gang plans (filter, bind). GATE_PASS lets the next policy decide;
 *   GATE_ALONE (this pod is outside the gang rules) and GATE_WAIT (with *why) end the gate.
 *   MUST NOT change the books beyond reason buffers.
 * - scopes: the node sets the planner tries in order (the first that places the gang wins).
 *   cap[node] is how many more pods of the gang fit on each node, need the pods to place.
 *   Returns 0, -1 out of memory. At most one policy in the table gives scopes.
 * - node_fit: the DRA slot. Per pod shape and node, after resources and constraints fit:
 *   NULL when the shape's devices can be allocated there, else a constant reason. MUST be
 *   pure and cheap (it runs for every node a plan looks at); MAY be NULL (no devices to place;
 *   the slot stays NULL until DRA claims are part of the books).
 */
struct gang_policy {
    const char *name;
    enum gate (*gate)(struct gang_state *s, struct gang *g, const struct gpod *p, int64_t now,
                      const char **why);
    int (*scopes)(struct gang_state *s, struct gang *g, const int64_t *cap, int64_t need,
                  struct plan_scopes *out);
    const char *(*node_fit)(const struct gang_state *s, const struct gshape *sh,
                            const struct gnode *n);
};

/* run the gates of the table in order */
enum gate pipeline_gate(struct gang_state *s, struct gang *g, const struct gpod *p, int64_t now,
                        const char **why);
/* the scopes for a plan (one whole-cluster scope when no policy gives any). 0 or -1 (OOM) */
int pipeline_scopes(struct gang_state *s, struct gang *g, const int64_t *cap, int64_t need,
                    struct plan_scopes *out);
void pipeline_scopes_free(struct plan_scopes *ps);
/* 1 when some policy's scopes will read the per-node capacity for g (the planner skips
 * computing it otherwise) */
int pipeline_reads_capacity(const struct gang *g);
/* node_fit of every policy that has one: NULL or the first reason */
const char *pipeline_node_fit(const struct gang_state *s, const struct gshape *sh,
                              const struct gnode *n);
/* the topology a gang uses (its request's name, else the first), NULL when none */
const struct gtopo *topo_of(const struct gang_state *s, const struct gang *g);
/* the level key of g's sticky domain ("" when none or the whole cluster) */
const char *gang_domain_level(const struct gang_state *s, const struct gang *g);
/* 1 when node n is inside g's sticky topology domain, 0 when outside, -1 when g has none */
int gang_node_in_domain(const struct gang_state *s, const struct gang *g, const struct gnode *n);
/* 1 when g's topology request has a required level */
int gang_topology_required(const struct gang *g);
/* pods the gang places together: minMember without its phased members */
int64_t gang_pods(const struct gang *g);
/* free the topology records of s (books.c calls it from gang_state_destroy) */
void topos_free(struct gang_state *s);
/* drop g's topology request */
void gang_topo_clear(struct gang *g);
/* set g's topology request from PodGroup annotations ann[0..n) (a parse error is kept in
 * g->topo_err, not returned); *changed when it differs from before. 0, or -1 out of memory
 * (g unchanged) */
int gang_topo_assign(struct gang_state *s, struct gang *g, const struct common_kv *ann, uint32_t n,
                     int *changed);

/* ---- dra.c: the DRA policy (devices per member, planned with the gang) ---- */

/* planned devices of one pod: per claim (namespace, name) the results, on node `node` */
struct gdra_claim {
    const char *ns, *name;
    struct dra_result *results;
    size_t n_results;
};
struct gdra {
    struct common_arena *a;
    int32_t node;
    struct gdra_claim *claims;
    size_t n_claims;
};
void gdra_free(struct gdra *d);

/* one plan's DRA state (NULL when no eligible member has claims) */
struct gdra_ctx;
struct pctx;
/* 0 with *out (NULL: no claims), -1 out of memory */
int gdra_begin(struct gang_state *s, struct gang *g, struct gpod *const *e, uint32_t n_e,
               struct gdra_ctx **out);
void gdra_end(struct gdra_ctx *d);
/* how many rounds (one per value of the gang's match attribute, else 1); 0: none can work
 * (the reason in gdra_why) */
size_t gdra_rounds(const struct gdra_ctx *d);
/* start round k: caps forgotten, nothing assigned */
void gdra_round(struct gdra_ctx *d, size_t k);
/* copies of shape sh that the devices of node allow, at most f; the pinned member e (claims
 * already allocated) only on its node. -1 out of memory */
int64_t gdra_cap(struct gdra_ctx *d, const struct gshape *sh, int32_t node, int64_t f);
/* node a member's allocated claims pin it to (-1 none, -2 a node the books do not know) */
int32_t gdra_pin(const struct gdra_ctx *d, uint32_t e);
/* the member that owns (allocates once) a claim member e shares with it, UINT32_MAX when e
 * follows no shared claim; plan.c puts the sharers on one node when it can */
uint32_t gdra_owner(const struct gdra_ctx *d, uint32_t e);
/* member e was placed on node (delta 1) or taken back (-1) */
void gdra_assign(struct gdra_ctx *d, uint32_t e, int32_t node, int delta);
/* allocate every assigned member's claims on its node together: 0 ok, 1 not (gdra_why), -1 OOM */
int gdra_verify(struct gdra_ctx *d, const int32_t *assign);
/* store the verified devices in the members (gpod.dra); 0 or -1 out of memory */
int gdra_commit(struct gdra_ctx *d, const int32_t *assign);
const char *gdra_why(const struct gdra_ctx *d);
/* a failed plan's reason when the devices limited it (else why is left as it is) */
void gdra_fail_why(const struct gdra_ctx *d, uint32_t placed, uint32_t need, char *why);
/* the DRA gate: a member's claim missing or unusable -> GATE_WAIT with the reason */
enum gate gdra_gate(struct gang_state *s, struct gang *g, const struct gpod *p, int64_t now,
                    const char **why);
/* the reason pod p's claims cannot be allocated on n alone, written into buf (NULL: they
 * can, or p has no claims) */
const char *gdra_node_reason(const struct gang_state *s, const struct gpod *p,
                             const struct gnode *n, char *buf, size_t len);
/* a copy of reason r that stays valid until the next gang_filter (gdra_reasons_reset); a
 * generic DRA reason when out of memory */
const char *gang_reason_keep(struct gang_state *s, const char *r);
void gdra_reasons_reset(struct gang_state *s);
