/*
 * gang/gang.h - the pure gang core: all-or-nothing scheduling of PodGroups through the
 * scheduler extender's filter, prioritize, bind and preempt verbs.
 *
 * What it owns. A struct gang_state is the extender's books: a compact copy of the cluster
 * (nodes with allocatable, labels and taints; every pod with its requests, phase and node;
 * PodGroups with minMember, minResources and scheduleTimeoutSeconds) fed by the watch caches,
 * plus what only the extender knows: the gang plans, the held binds and their reservations,
 * the binds released but not yet seen bound, timeouts and backoff. The state is pure: no I/O,
 * no clock (every call that needs time takes `now`, milliseconds on any monotonic scale), no
 * threads, no globals, deterministic (ties are broken by node or pod name). It is NOT
 * thread-safe: the glue serialises every call with one mutex.
 *
 * Units: cpu in millicores, memory and ephemeral-storage in bytes, extended resources in whole
 * units, pods as a count, time in milliseconds. Resource amounts are those of
 * common/coretypes.h (the pod's effective requests as kube-scheduler sums them).
 *
 * The rules (source: ../shared/DESIGN.md "Gang scheduling through the extender" and
 * ../shared/reference/protocols.md section 3; the numbers and the deadlock-freedom argument
 * are in docs/gang.md):
 * - Membership: pod label scheduling.x-k8s.io/pod-group naming a PodGroup in the pod's
 *   namespace; the gang key is "namespace/name".
 * - Gates (filter: every node FAILED_AND_UNRESOLVABLE with the reason; bind: REJECT): no
 *   PodGroup; the gang in backoff; fewer than minMember member pods exist (a wait, never a
 *   failure: no backoff, C10); member pods labelled trainsched.io/gang-min-member with a value
 *   other than the cached minMember (the PodGroup or its pods are stale, C14); members with
 *   Kueue's gate kueue.x-k8s.io/topology are not planned, and while the others (plus held
 *   and bound ones) are fewer than minMember the gang waits with that gate named (Kueue's
 *   topology-aware scheduling writes each pod's domain as it removes it); members held by any
 *   other gate are planned like the rest. Members at trainsched's own gate
 *   (GANG_SCHEDULING_GATE) are released whole by gang_ungate (below).
 * - Kueue's placement: when a member labelled kueue.x-k8s.io/podset has a nodeSelector on a
 *   level of the gang's topology or on kubernetes.io/hostname, the PodGroup's own topology
 *   request is set aside (gang_info's topology_note says so); each member's nodeSelector keeps
 *   it where Kueue put it.
 * - Whole gang first: before the first member is held, every member that still needs a node
 *   must fit at once in free capacity (allocatable minus non-terminal pods bound there minus
 *   what other gangs have reserved), with per-node fit (every requested resource, nodeSelector,
 *   required node affinity, NoSchedule/NoExecute taints); and minResources, when set, must fit
 *   in the cluster-wide free sum. Otherwise nothing is held and the nodes where the pod could
 *   go are FAILED (preemption may help), the others FAILED_AND_UNRESOLVABLE. Exception: a gang
 *   that would fit with lower-priority pods evicted (gang_preempt's R3) plans and holds what
 *   fits now, so that kube-scheduler preempts for the rest (docs/gang.md "Preemption for a gang
 *   whose members fit alone"); the partial hold is bounded by the gang's timeout.
 * - The plan: the first filtered member plans the whole gang (sticky, deterministic, packing
 *   each pod shape onto the fewest nodes, a tight node for the tail); each member's filter keeps
 *   only its planned node. A planned node missing from the candidates is excluded and the gang
 *   replanned. Once the gang holds a member, its whole plan is reserved against other gangs.
 * - Bind: HOLD (capacity reserved) until held + bound reaches minMember, then RELEASE_ALL
 *   (every held member and this one bind now). A gang with a member bound at the API server
 *   (or released by us) is admitted: its remaining members filter per node and bind at once
 *   (restart, replacement pods: C10, C13).
 * - Phased gangs: pods whose label jobset.sigs.k8s.io/replicatedjob-name is listed in the
 *   PodGroup annotation trainsched.io/phased-replicated-jobs (comma-separated; the reconciler
 *   writes the replicated jobs that others dependsOn, the initializers) filter per node and
 *   bind on their own; they count toward quorum once bound and not Failed (Running or
 *   Succeeded).
 * - minMember 0 (or absent): no gang constraint; members filter per node and bind at once (C25).
 * - Timeout: at min(latest new hold + scheduleTimeoutSeconds or the default, first hold + bind
 *   httpTimeout - margin) every held bind of the gang answers with an error, the reservation is
 *   dropped and the gang backs off (initial, doubling, capped). Each member held restarts the
 *   timeout: members of gangs created mixed reach bind far apart while the gang progresses.
 *   A gang whose plan can no longer be completed (a planned node lost and no room elsewhere,
 *   C08) fails at once the same way.
 *
 * Errors: functions return enum common_rc (common/error.h): COMMON_EINVAL for malformed input
 * (a pod without uid, a bad PodGroup), COMMON_ENOTFOUND for an unknown gang in queries,
 * COMMON_ENOMEM (the state is left as it was: every upsert is all-or-nothing). Decisions are
 * never errors: a rejected bind is a GANG_BIND_REJECT result with COMMON_OK.
 *
 * Strings in results (reasons, bindings, answers) stay valid until the next call into the
 * state; copy them before unlocking.
 */
#ifndef GANG_GANG_H
#define GANG_GANG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/coretypes.h"
#include "common/error.h"

/* Pod label naming the PodGroup (scheduler-plugins coscheduling). */
#define GANG_POD_GROUP_LABEL "scheduling.x-k8s.io/pod-group"
/* PodGroup annotation holding the gang's current verdict, written by the extender's timer
 * (extender/timer.c) when it changes and read by `trainsched explain` (cmd/explain.c): compact
 * JSON {"reason": "GangWaiting"|"GangReleased", "message": the gang's reason (gang_info's, at
 * most 2 * GANG_REASON_MAX bytes), "since": RFC 3339 time it was first written, "backoffUntil":
 * RFC 3339 end of the gang's backoff, only while it backs off}. An annotation because the
 * scheduler-plugins PodGroup CRD's status has no conditions and the API server prunes unknown
 * status fields; unlike an Event it does not expire. */
#define GANG_VERDICT_ANNOTATION "trainsched.io/verdict"
/* Optional pod label: the minMember the pod was created for (written by the reconciler into
 * the pod templates). Members whose value differs from the cached PodGroup hold the gang. */
#define GANG_MIN_MEMBER_LABEL "trainsched.io/gang-min-member"
/* PodGroup annotation: comma-separated replicatedJob names whose pods are phased (bind on their
 * own, count toward quorum once bound): the jobs other replicated jobs dependsOn. */
#define GANG_PHASED_ANNOTATION "trainsched.io/phased-replicated-jobs"
/* PodGroup annotation: a device attribute ("domain/name", e.g. gpu.nvidia.com/productName)
 * whose value every device planned for the gang's claims must share (docs/dra.md). */
#define GANG_DRA_MATCH_ANNOTATION "trainsched.io/dra-match-attribute"
/* The JobSet pod label naming the pod's replicatedJob. */
#define GANG_REPLICATED_JOB_LABEL "jobset.sigs.k8s.io/replicatedjob-name"
/* Kueue's topology-aware scheduling (sigs.k8s.io/kueue pkg/controller/tas): pods admitted by
 * Kueue carry the podset label; a TAS pod is created with the topology scheduling gate, which
 * Kueue's topology ungater removes while writing the assigned domain (the assignment's level
 * keys, only kubernetes.io/hostname when that is the lowest level) into spec.nodeSelector. */
#define GANG_KUEUE_PODSET_LABEL "kueue.x-k8s.io/podset"
#define GANG_KUEUE_TOPOLOGY_GATE COMMON_KUEUE_TOPOLOGY_GATE
/* trainsched's own scheduling gate (issue 29, docs/gang.md "The gang gate"): the pod webhook
 * gives it to every member of an extender-scheduled gang; gang_ungate says when to remove it. */
#define GANG_SCHEDULING_GATE COMMON_TRAINSCHED_GATE

/* Distinct resource names the books track (cpu, memory, ephemeral-storage, pods and up to 60
 * extended names). A node's resource past the cap is ignored; a pod requesting one fits
 * nowhere ("Insufficient <name>"). */
#define GANG_MAX_RESOURCES 64
/* Bound on reason strings (Events, logs, bind errors). */
#define GANG_REASON_MAX 256
/* Topology annotations a PodGroup may carry (topology/topology.h lists them). */
#define GANG_MAX_TOPOLOGY_ANN 16

/* ---- configuration ---- */

struct gang_config {
    /* scheduleTimeoutSeconds when the PodGroup has none; 0 = 60,000 (scheduler-plugins'
     * permitWaitingTimeSeconds default). */
    int64_t default_timeout_ms;
    /* The bind extender's httpTimeout from the KubeSchedulerConfiguration; 0 = 5,000
     * (kube-scheduler's DefaultExtenderTimeout). A held bind never outlives
     * bind_http_timeout_ms - hold_margin_ms: the scheduler has given up by then. */
    int64_t bind_http_timeout_ms;
    /* Time kept for creating the Bindings after a release; 0 = 2,000, at most half of
     * bind_http_timeout_ms (larger values are cut to that). */
    int64_t hold_margin_ms;
    /* Backoff after a failed attempt: initial, doubling per consecutive failure, capped; a
     * release resets it. 0 = 10,000 and 300,000. */
    int64_t backoff_initial_ms;
    int64_t backoff_max_ms;
    /* Resource names left out of fit (the virtual trainsched.io/gang resource that marks gang
     * pods). Copied at create. */
    const char *const *ignored_resources;
    size_t n_ignored_resources;
    /* gang_ungate plans at most this many gangs per call (the rest stay marked, res->more): a
     * pass holds the glue's lock for about this many plans (1.6 ms each at 5,000 nodes); 0 = 64 */
    uint32_t ungate_max_plans;
};

/* gang_config_default - zero *c (every field takes its default). */
void gang_config_default(struct gang_config *c);

/*
 * gang_timeout_cap_ms - the longest a gang can hold binds under cfg (NULL = the defaults), ms:
 * bind_http_timeout_ms less the hold margin (hold_margin_ms, at most half of it), the defaults
 * above applied. A gang timeout above it (scheduleTimeoutSeconds or default_timeout_ms) is cut
 * to it. With the shipped bind httpTimeout of 630 s: 628,000.
 */
int64_t gang_timeout_cap_ms(const struct gang_config *cfg);

struct gang_state;

/*
 * gang_state_create - empty books with configuration cfg (NULL = defaults; copied). Returns
 * COMMON_OK with *out, COMMON_EINVAL for a negative time or a cap (backoff_max <
 * backoff_initial), COMMON_ENOMEM.
 */
enum common_rc gang_state_create(const struct gang_config *cfg, struct gang_state **out,
                                 struct common_error *err);

/* gang_state_destroy - free everything. NULL is a no-op. */
void gang_state_destroy(struct gang_state *s);

/* ---- the cluster feed (from the watch caches; objects are borrowed for the call) ---- */

/*
 * gang_node_upsert - add or update a node: allocatable, labels, taints (unschedulable counts as
 * the node.kubernetes.io/unschedulable:NoSchedule taint). COMMON_OK, COMMON_EINVAL (empty
 * name), COMMON_ENOMEM (nothing changed).
 */
enum common_rc gang_node_upsert(struct gang_state *s, const struct common_node *node,
                                struct common_error *err);

/*
 * gang_node_delete - the node is gone. Plans that used it are dropped (replanned at the next
 * filter); a gang holding a member on it fails without backoff (its held binds are queued as
 * error answers, see gang_tick). Unknown names are ignored.
 */
void gang_node_delete(struct gang_state *s, const char *name);

/*
 * gang_pod_upsert - add or update any pod of the cluster (all pods count toward node usage
 * while bound and not Succeeded/Failed). A held member that shows up bound at the API server,
 * turns terminal or starts deleting loses its hold (queued as an error answer). COMMON_OK,
 * COMMON_EINVAL (no uid, namespace or name), COMMON_ENOMEM (nothing changed).
 */
enum common_rc gang_pod_upsert(struct gang_state *s, const struct common_pod *pod,
                               struct common_error *err);

/*
 * gang_pod_delete - the pod (by uid) is gone. A held member's bind is queued as an error
 * answer; if the gang can no longer reach minMember its whole attempt ends (no backoff).
 */
void gang_pod_delete(struct gang_state *s, const char *uid);

/* gang_pod_known - nonzero when the books hold a pod with this uid: gang_filter and
 * gang_prioritize then read only its uid of the pod they are given (the books' copy is the
 * informer's); zero for NULL or "". */
int gang_pod_known(const struct gang_state *s, const char *uid);

/* A decoded PodGroup (scheduling.x-k8s.io/v1alpha1). Strings are borrowed. */
struct gang_podgroup {
    const char *namespace;
    const char *name;
    int32_t min_member; /* spec.minMember; 0 when absent */
    /* spec.scheduleTimeoutSeconds when has_timeout */
    int32_t timeout_seconds;
    int has_timeout;
    /* spec.minResources, in the units above; has_min_resources when the map is non-empty */
    struct common_resources min_resources;
    struct common_resource min_extended[GANG_MAX_RESOURCES];
    int has_min_resources;
    const char *phased_jobs; /* annotation GANG_PHASED_ANNOTATION, "" when absent */
    /* the topology annotations (topo_is_annotation keys: ours under trainsched.io/topology*,
     * Kueue's podset-*-topology and KAI's topology*), borrowed; n_topology 0 when none */
    struct common_kv topology[GANG_MAX_TOPOLOGY_ANN];
    uint32_t n_topology;
    const char *dra_match; /* annotation GANG_DRA_MATCH_ANNOTATION, NULL when absent */
};

/*
 * gang_podgroup_from_json - decode a PodGroup object as the API server returns it (borrowed;
 * strings in *out point into it). COMMON_OK, COMMON_EINVAL naming the field
 * ("spec.minResources[nvidia.com/gpu]: ...", "spec.minMember: must be >= 0").
 */
enum common_rc gang_podgroup_from_json(const json_t *obj, struct gang_podgroup *out,
                                       struct common_error *err);

/*
 * gang_podgroup_upsert - add or update a PodGroup. The spec replaces the old one (never
 * merged, C16). A changed minMember or minResources drops the plan of a gang that holds
 * nothing; a holding gang keeps its holds (gang_tick releases it if the new minMember is met).
 * COMMON_OK, COMMON_EINVAL, COMMON_ENOMEM (nothing changed).
 */
enum common_rc gang_podgroup_upsert(struct gang_state *s, const struct gang_podgroup *pg,
                                    struct common_error *err);

/* gang_podgroup_delete - the PodGroup is gone; a holding gang fails (no backoff). */
void gang_podgroup_delete(struct gang_state *s, const char *ns, const char *name);

/* ---- DRA (docs/dra.md; the device core is dra/dra.h, the view dra/view.h) ---- */

struct dra_view;
struct dra_result;

/*
 * gang_dra_set - the DRA view the planner uses from now on (borrowed: it must stay valid until
 * the next gang_dra_set or gang_state_destroy; NULL = no DRA). Plans not yet reserved are made
 * again. With a view, a gang is planned with its devices: every eligible member's unallocated
 * ResourceClaims must be allocatable on its planned node at once, together with the devices
 * other holding gangs hold or plan; a member whose claims are allocated goes to the node of
 * the allocation; a member whose claim does not exist yet (or is malformed, or names a
 * malformed DeviceClass) makes the gang wait with that reason; a node where a pod's claims
 * cannot be allocated gets the allocator's reason in the filter's verdicts.
 */
void gang_dra_set(struct gang_state *s, const struct dra_view *v);

/* One claim's planned devices (strings owned by the books, valid until the next call). */
struct gang_dra_claim {
    const char *ns, *name;
    const char *node;
    const struct dra_result *results; /* as status.allocation.devices.results[] holds them */
    size_t n_results;
    int node_local; /* a device comes from a slice of node (spec.nodeName): the allocation's
                     * nodeSelector names node; 0: every device is reachable from every node */
};

/*
 * gang_dra_planned - the devices the gang plan gave pod uid's unallocated claims, on its
 * planned or held node, into out[0..cap); returns how many claims (0 when none). Claims
 * whose status.allocation already exists are not listed.
 */
size_t gang_dra_planned(const struct gang_state *s, const char *uid, struct gang_dra_claim *out,
                        size_t cap);

/*
 * gang_dra_pod_placed - for a claim allocation the extender wrote itself: 1 when pod uid is
 * planned, held or released by the books on node (its name; NULL: on any node), or bound; 0
 * when the books know
 * the pod as a gang member that is none of these (its attempt ended: the allocation is stale);
 * -1 when the books do not know the pod (nothing can be said).
 */
int gang_dra_pod_placed(const struct gang_state *s, const char *uid, const char *node);

/*
 * gang_dra_first_fit_differs - 1 when kube-scheduler's own allocation of pod uid's unallocated
 * claims on its planned node would not be the planned devices: the allocator's first fit on
 * that node with only the devices of allocated claims in use (what the scheduler's structured
 * allocator sees; same pool, slice and device order) gives other devices than the plan, or
 * fails. 0 when it gives the planned devices (then the scheduler's PreBind writes exactly the
 * plan) or the pod has no planned claims. A node whose devices come from more than one pool
 * is always 1 (kube-scheduler visits pools in Go map order). Costs one allocation on one
 * node.
 */
int gang_dra_first_fit_differs(const struct gang_state *s, const char *uid);

/* ---- topology (docs/topology.md; the core is topology/topology.h) ---- */

/*
 * gang_topology_set - add or replace the named topology: levels[0..n_levels) are node label
 * keys, widest first (kubernetes.io/hostname only last). The first topology set is the
 * default, used by gangs whose PodGroup names none (annotation trainsched.io/topology or
 * kai.scheduler/topology names one). Sources: the serve config, Kueue Topology objects
 * (kueue.x-k8s.io spec.levels[].nodeLabel) and KAI Topology objects (kai.scheduler/v1alpha1).
 * Changed levels drop the plans of gangs that use it; a holding gang that uses it fails (no
 * backoff). COMMON_OK, COMMON_EINVAL (empty name, 0 or more than 16 levels, an empty level,
 * a duplicate, hostname not last: the message names the topology and the level),
 * COMMON_ENOMEM (nothing changed).
 *
 * With a topology, a PodGroup's annotations ask for placement (topo_request_parse):
 * required level: the whole gang (phased pods excepted) in one domain of that level, the one
 * leaving the least free capacity (best fit), else the gang waits with a reason naming the
 * level and the largest domain's free capacity; preferred level: the narrowest level from it up
 * that holds the gang, finally the whole cluster; slices: each slice of N pods (members by
 * name) in one domain of the slice level. Inside the chosen domain the gang packs into the
 * fewest sub-domains. The domain is sticky per gang and tried first when the gang replans (a
 * planned node lost). A bad request (unknown level, conflicting annotations, a slice size
 * that does not divide the gang) makes every filter UNRESOLVABLE and every bind REJECT with
 * the reason, and nothing is held.
 */
enum common_rc gang_topology_set(struct gang_state *s, const char *name, const char *const *levels,
                                 size_t n_levels, struct common_error *err);

/* gang_topology_delete - the named topology is gone: gangs that use it drop their plans,
 * holding ones fail (no backoff), and they wait with a reason until it comes back. Unknown
 * names are ignored. */
void gang_topology_delete(struct gang_state *s, const char *name);

/* ---- filter ---- */

enum gang_verdict {
    GANG_NODE_OK = 0,      /* keep the node (NodeNames) */
    GANG_NODE_FAILED,      /* FailedNodes: preemption may help */
    GANG_NODE_UNRESOLVABLE /* FailedAndUnresolvableNodes: preemption cannot help */
};

struct gang_node_verdict {
    enum gang_verdict verdict;
    const char *reason; /* NULL for OK */
};

struct gang_filter_result {
    size_t n_ok;
    const char *reason;  /* why the pod cannot go anywhere yet ("" when some node is OK) */
    int answers_pending; /* held binds must be answered now: call gang_tick */
    /* The pod waits on something kube-scheduler does not watch (the PodGroup to appear, sibling
     * pods to be created, the gang's backoff, a stale minMember, phased pods to be placed):
     * every node is UNRESOLVABLE with reason. The extender answers such a filter with an Error
     * rather than node lists: kube-scheduler 1.36 parks a pod whose nodes an extender rejected
     * until some cluster event (schedule_one.go, framework.ExtenderName), but retries an errored
     * pod after its error backoff (1 s doubling to podMaxBackoffSeconds). */
    int retry;
};

/*
 * gang_filter - the filter verb for pod (the Pod of ExtenderArgs, decoded; added to the books
 * when its uid is unknown) over the candidate node names (NodeNames, in order). out[i] is the
 * verdict for nodes[i] (n_nodes entries, caller-allocated); a name unknown to the books is
 * UNRESOLVABLE (C26), with the reason "node unknown to trainsched's cache" unless the pod's
 * planned, held or bound node is among the candidates (then every other node carries that
 * reason, unknown or not). A pod without the PodGroup label is OK everywhere. When a plan exists
 * the work is O(n_nodes) string compares and O(1) lookups. COMMON_OK or COMMON_ENOMEM (then out is
 * undefined: answer the scheduler with an Error).
 */
enum common_rc gang_filter(struct gang_state *s, const struct common_pod *pod,
                           const char *const *nodes, size_t n_nodes, int64_t now,
                           struct gang_node_verdict *out, struct gang_filter_result *res,
                           struct common_error *err);

/* ---- prioritize ---- */

/*
 * gang_prioritize - scores 0..10 (MaxExtenderPriority) for each of nodes[i] into scores[i]:
 * the member's planned or held node 10; nodes where siblings are planned, held or bound, and
 * (for a pod that is not phased) the other nodes of the gang's topology domain, 5..9;
 * other nodes 0..4; inside a band, least-allocated (more room left after the pod is higher)
 * over the resources the pod requests. Unknown nodes and pods without the label score 0.
 * Deterministic. COMMON_OK or COMMON_ENOMEM. Cost: one sequential pass over the names when
 * they are the previous call's list (kube-scheduler sends its list in the same order), and the
 * least-allocated sums only for nodes that changed since a call with the same requests.
 */
enum common_rc gang_prioritize(struct gang_state *s, const struct common_pod *pod,
                               const char *const *nodes, size_t n_nodes, int64_t *scores,
                               struct common_error *err);

/*
 * gang_prioritize_plain - the same scores as gang_prioritize, computed the plain way: a name
 * lookup and the least-allocated sums for every node on every call. gang_prioritize keeps the
 * slots of the last NodeNames list and the least-allocated part per request and node until
 * that node changes (allocatable, used, reserved, presence); this is the reference tests hold
 * it to. Same arguments, results and errors.
 */
enum common_rc gang_prioritize_plain(struct gang_state *s, const struct common_pod *pod,
                                     const char *const *nodes, size_t n_nodes, int64_t *scores,
                                     struct common_error *err);

/* ---- bind ---- */

enum gang_bind_action {
    GANG_BIND_HOLD = 1, /* keep the request open (suspend it); answered by a later RELEASE or by
                           gang_tick */
    GANG_BIND_RELEASE,  /* create the Binding of every entry of binds (this pod included), then
                           answer each one's request: success, or the API's error */
    GANG_BIND_REJECT    /* answer this request with reason as its Error */
};

/* One answer to a bind request: create the Binding (bind = 1) or fail it with reason. */
struct gang_answer {
    char uid[64];
    char namespace[64];
    char name[254];
    char node[254];
    char gang[320]; /* "namespace/name" of the PodGroup ("" for a pod of no gang) */
    int bind;
    char reason[GANG_REASON_MAX]; /* why it failed (bind = 0) */
};

struct gang_bind_result {
    enum gang_bind_action action;
    const char *reason;              /* REJECT: the Error; HOLD: why it waits */
    const struct gang_answer *binds; /* RELEASE: n_binds entries, all with bind = 1 */
    size_t n_binds;
    int64_t deadline; /* HOLD: the gang's deadline now (a later new hold of it moves it on) */
    int answers_pending;
};

/*
 * gang_bind - the bind verb (ExtenderBindingArgs: pod namespace, name, uid, node). The pod must
 * be in the books (else REJECT: the scheduler retries). The first hold of a gang re-checks that
 * the whole gang still fits against other gangs' reservations (else REJECT, nothing held, no
 * backoff). A duplicate bind of a held pod is REJECTed (the first hold stays). COMMON_OK with
 * *res, or COMMON_ENOMEM (answer the request with an Error; nothing changed).
 */
enum common_rc gang_bind(struct gang_state *s, const char *ns, const char *name, const char *uid,
                         const char *node, int64_t now, struct gang_bind_result *res,
                         struct common_error *err);

/*
 * gang_bind_failed - creating the Binding of a released pod failed at the API server (not
 * 409 AlreadyExists/Conflict, which the glue treats as bound): its capacity is returned; the
 * scheduler retries the pod, which binds at once when the gang is still admitted.
 */
void gang_bind_failed(struct gang_state *s, const char *uid);

/* ---- time ---- */

/*
 * gang_tick - advance to now: gangs past their deadline fail (every held bind answers with an
 * error, the reservation is dropped, backoff starts); a holding gang with a node that can no
 * longer take the member planned or held there (a pod bound there behind the extender's back,
 * a taint, the node gone) replans at once (a held member there loses its hold with an error
 * answer), or fails at once with backoff when it no longer fits; holding gangs whose quorum is
 * met (after a PodGroup update) release; then every queued answer (from deletes, lost nodes,
 * failures) is handed out: *answers has *n entries, valid until the next call. Call it at
 * gang_next_deadline(), whenever a result says answers_pending, and after feed events that may
 * take a planned node (pods bound, nodes changed) while binds are held. COMMON_OK.
 */
enum common_rc gang_tick(struct gang_state *s, int64_t now, const struct gang_answer **answers,
                         size_t *n, struct common_error *err);

/* gang_next_deadline - the earliest hold deadline, INT64_MAX when nothing is held. */
int64_t gang_next_deadline(const struct gang_state *s);

/* ---- status and introspection ---- */

/* PodGroup status as the scheduler-plugins controller derives it (protocols.md 3.1/3.2); only
 * fields of the upstream CRD. */
struct gang_status {
    const char *phase; /* "Pending", "Scheduling", "Running", "Finished", "Failed" */
    int32_t running, succeeded, failed;
    char occupied_by[320]; /* "<namespace>/<controller name>" of the first member by name */
    int has_schedule_start;
    int64_t schedule_start; /* start of the current or last attempt (first hold), ms */
};

/*
 * gang_podgroup_status - derive the status of PodGroup ns/name from its member pods:
 * fewer pods than minMember Pending; running + succeeded < minMember Scheduling; else Running;
 * Failed when some failed and failed + running + succeeded >= minMember; Finished when
 * succeeded >= minMember. COMMON_OK, COMMON_ENOTFOUND (no such PodGroup in the books).
 */
enum common_rc gang_podgroup_status(const struct gang_state *s, const char *ns, const char *name,
                                    struct gang_status *out, struct common_error *err);

struct gang_info {
    int has_podgroup;
    int32_t min_member;
    uint32_t members;     /* pods with the label (any phase) */
    uint32_t known;       /* not Failed, not deleting: what quorum counts */
    uint32_t bound;       /* non-phased members bound at the API server */
    uint32_t released;    /* released by us, not yet seen bound */
    uint32_t held;        /* binds held */
    uint32_t planned;     /* members planned but not held */
    uint32_t phased_done; /* phased members bound or Succeeded */
    int active;           /* holding: the plan is reserved */
    int admitted;         /* bound + released > 0 */
    int64_t deadline;     /* when active */
    int64_t backoff_until;
    uint32_t failures;  /* consecutive failed attempts */
    const char *reason; /* why waiting ("" when nothing to say) */
    int64_t timeout_ms; /* the gang timeout in effect (asked, cut to gang_timeout_cap_ms) */
    /* "" unless the timeout asked for (scheduleTimeoutSeconds, else the default) is above the
     * cap: then a sentence saying so ("scheduleTimeoutSeconds 3000 is cut to 628 s: ..."),
     * for the PodGroup's Events */
    char timeout_note[GANG_REASON_MAX];
    /* topology: the domain of the gang's last plan ("" when none or no topology asked), the
     * level key it belongs to ("" for the whole cluster), the request's error ("" when none) */
    const char *domain;
    const char *domain_level;
    const char *topology_error;
    /* "" unless Kueue's topology-aware scheduling placed the members (a member labelled
     * kueue.x-k8s.io/podset has a nodeSelector on a topology level or kubernetes.io/hostname):
     * then the PodGroup's own topology request is set aside and this sentence says so, for the
     * PodGroup's Events */
    const char *topology_note;
    /* PodGroup updates so far that may let members through which kube-scheduler parked (its
     * unschedulable pool is left on a cluster event, never on a PodGroup change): minMember
     * lowered, minResources or the phased jobs changed. The glue compares it around
     * gang_podgroup_upsert and touches the waiting members (gang_waiting_pods) when it grew. */
    uint32_t podgroup_unblocks;
    /* members at trainsched's gate (GANG_SCHEDULING_GATE only, not yet handed out by
     * gang_ungate) */
    uint32_t gated_ours;
};

/* gang_info - counters of gang ns/name. COMMON_OK or COMMON_ENOTFOUND. */
enum common_rc gang_info(const struct gang_state *s, const char *ns, const char *name,
                         struct gang_info *out, struct common_error *err);

/* A pod named by uid, namespace and name (copied). */
struct gang_pod_ref {
    char uid[64];
    char namespace[64];
    char name[254];
};

/*
 * gang_waiting_pods - the members of gang ns/name that wait in kube-scheduler's queue: Pending,
 * not bound, not released or held by us, not being deleted. Fills out[0..cap) in no particular
 * order and returns how many there are (may exceed cap: call again with more room). 0 for an
 * unknown gang. O(members).
 */
size_t gang_waiting_pods(const struct gang_state *s, const char *ns, const char *name,
                         struct gang_pod_ref *out, size_t cap);

/*
 * gang_check - recompute every derived number (node usage and reservations, cluster totals,
 * gang counters, node references) from the records and compare. COMMON_OK or COMMON_ECONFLICT
 * naming the first difference. For tests and debug builds; O(pods + nodes x resources).
 */
enum common_rc gang_check(const struct gang_state *s, struct common_error *err);

/* ---- the gang gate: members wait at GANG_SCHEDULING_GATE, gangs enter kube-scheduler whole ----
 */

/*
 * A member is "at our gate" when it is known (not Failed, not deleting), unbound, not Succeeded,
 * GANG_SCHEDULING_GATE is its ONLY scheduling gate, and gang_ungate has not handed it out yet.
 * gang_ungate decides, whole gangs at a time, which of those to ungate now (docs/gang.md
 * "The gang gate"). A gang with members at our gate, in this order:
 * - no PodGroup: stays gated ("PodGroup ns/name not found");
 * - phased members (the PodGroup's GANG_PHASED_ANNOTATION jobs): ungated at once;
 * - minMember 0, admitted (a member bound or released) or active (holding, or its plan reserved
 *   by an earlier pass): every member at our gate is ungated at once;
 * - the filter's gates (backoff, stale minMember, fewer than minMember member pods, Kueue's
 *   topology gate on members, phased pods not placed, topology, DRA claims): stays gated with
 *   that gate's reason;
 * - fewer than minMember members placeable (held, bound, released, phased done, or pending with
 *   no gate but ours): stays gated (members held by another gate do not count: ours goes after
 *   Kueue's);
 * - minResources short of the cluster's free sum: stays gated;
 * - the planner places the whole gang on the current books (topology and DRA included; members
 *   at our gate count as placeable, members held by another gate are left out): the plan is
 *   committed and reserved against every other gang (as a held gang's is) until the members
 *   hold and bind, bounded by the gang's timeout (then it fails with backoff as an attempt
 *   does, and the ungated pods go through the held-bind path); every member at our gate is
 *   ungated (GANG_UNGATE_PLACED);
 * - else, when the gang would fit with every pod a preemption at its highest member priority
 *   could evict gone (gang_preempt's R3, priority > 0 only): ungated without a reservation so
 *   that kube-scheduler preempts for it through the preempt verb (GANG_UNGATE_PREEMPT);
 * - else stays gated, the planner's reason in gang_info's reason.
 * Gangs are taken by their highest member spec.priority (descending), then creation order in
 * the books (older first): a higher-priority gang's reservation is in place before a lower one
 * plans. Only gangs whose pods or PodGroup changed since the last pass are looked at, plus every
 * gang with members at our gate when room was freed (a pod that used capacity ended or went, a
 * node was added or its allocatable, labels or taints changed, a reservation dropped, a new DRA
 * view set) or a backoff one of them waits for ended. A pod handed out stays "ungating" (never
 * handed out again) until the books see it without our gate, or gang_ungate_failed.
 */

enum gang_ungate_why {
    GANG_UNGATE_PLACED = 1, /* the whole gang was placed; its plan is reserved */
    GANG_UNGATE_PREEMPT, /* fits only with lower-priority pods evicted: kube-scheduler preempts */
    GANG_UNGATE_ALONE    /* no gang wait: phased member, minMember 0, admitted or active gang */
};

/* One pod to ungate: remove GANG_SCHEDULING_GATE from its spec.schedulingGates. */
struct gang_ungate {
    struct gang_pod_ref pod;
    char gang[320];      /* "namespace/name" of its PodGroup */
    uint32_t gate_index; /* the gate's index in spec.schedulingGates as the books last saw it
                            (a JSON patch tests it before removing) */
    enum gang_ungate_why why;
};

struct gang_ungate_result {
    size_t n;          /* entries written to out[0..n) */
    uint32_t gangs;    /* gangs that had members handed out in this pass */
    uint32_t waiting;  /* gangs left with members at our gate (a gauge) */
    uint32_t examined; /* gangs looked at in this pass */
    int more; /* out had no room for a whole gang, or ungate_max_plans gangs were planned: call
                 again (the gangs not looked at stay marked) */
};

/*
 * gang_ungate - the ungating pass at now (ms): fills out[0..cap) with the members whose
 * GANG_SCHEDULING_GATE the glue removes now (every member of a gang at once: a gang that does
 * not fit in the room left is not started, res->more says so) and *res. Each pod is handed out
 * once. Deterministic. COMMON_OK; COMMON_ENOMEM (out[0..res->n) are still to be carried out,
 * the gangs not looked at stay marked). Cost: one plan per gang looked at (see above); O(gangs)
 * more when every gang is looked at.
 */
enum common_rc gang_ungate(struct gang_state *s, int64_t now, struct gang_ungate *out, size_t cap,
                           struct gang_ungate_result *res, struct common_error *err);

/* gang_ungate_pending - nonzero when a gang_ungate pass at now has something to look at: a
 * marked gang with members at our gate, room freed while some wait, or a backoff ended. O(marked
 * gangs). */
int gang_ungate_pending(const struct gang_state *s, int64_t now);

/* gang_ungate_failed - removing the gate of pod uid failed for good (not 404): the pod is at
 * our gate again and its gang is looked at by the next pass. Unknown uids are ignored. */
void gang_ungate_failed(struct gang_state *s, const char *uid);

/* ---- preempt ---- */

/*
 * The preempt verb (protocols.md section 1.4 "Preempt"; issue 5 item 7). kube-scheduler's
 * DefaultPreemption sends, for a pod that failed filtering, its candidate nodes, each with the
 * victims (lower-priority pods on that node, by uid) it would evict there; the extender answers
 * the same map, a node left out is vetoed, and the scheduler then evicts the victims of ONE kept
 * node. gang_preempt only keeps or vetoes whole candidates: it never adds, drops or reorders a
 * victim (the glue echoes a kept node's victims as sent). The rules, in order:
 * - R0 gang rules: a preemptor of a gang whose filter gates would not let it be placed (no
 *   PodGroup, backoff, stale minMember, fewer member pods than minMember, trainer pods waiting
 *   for a phased pod: what gang_filter answers UNRESOLVABLE on every node) vetoes every node
 *   with the gate's reason: an eviction cannot make the pod placeable, so nothing is evicted.
 * - R1 in-flight binds: a victim that is a held or released-not-yet-bound member of any gang
 *   vetoes the node (evicting it breaks that gang's admission).
 * - R2 quorum: let a gang H with minMember > 0 have A members alive (bound or released, not
 *   Succeeded/Failed, not deleting) and Q = A + its phased members that Succeeded (what its
 *   quorum counts). A node whose victims are E of H's alive members is vetoed when
 *   0 < E < A and Q - E < minMember; E = A (the whole gang is on this node's victim list) is
 *   allowed, and so is Q - E >= minMember (exactly minMember left is allowed). Victims unknown
 *   to the books are plain pods.
 * - R3 whole gang: when the preemptor's gang still needs its whole-gang placement (PodGroup,
 *   minMember > 0, not admitted, preemptor not phased: what gang_filter plans), every node is
 *   vetoed with one reason naming the gang and its shortfall unless the gang planner, run dry
 *   with the same per-node fit as the filter (resources, nodeSelector, required affinity,
 *   taints; other gangs' reservations stay; the gang's excluded nodes are usable), places all
 *   the members it needs when every pod such a preemption could evict is gone: bound,
 *   non-terminal, priority strictly below the preemptor's, not of the preemptor's gang, and not
 *   of a gang with minMember > 0 unless every alive member of that gang qualifies (whole gangs
 *   only). minResources, when set on a gang that holds nothing, is checked against the
 *   cluster-wide free sum with the same pods gone (less what its finished phased members
 *   asked for, as in the filter).
 *   R3 is an upper bound: it does not check that this node's victims are the right ones, only
 *   that evictions could ever make the gang fit.
 * - R4 preference among the survivors: only the best-ranked are kept, by (a) fewest gangs left
 *   partially evicted (some alive members evicted, the gang still at or above minMember), then
 *   (b) fewest victims; ties are all kept (the scheduler picks among them by its own rules:
 *   PDB violations, victim priorities, ...). The others are vetoed ("another candidate evicts
 *   fewer pods ...").
 * Victims are counted once per node (a uid sent twice counts once). Cost: O(victims) lookups
 * per node, plus for R3 O(pods) and one dry plan of the gang.
 */

/* One candidate of the request (an entry of NodeNameToMetaVictims); borrowed for the call. */
struct gang_preempt_node {
    const char *node;
    uint32_t n_victims;
    const char *const *uids; /* [n_victims] victim pod uids, as the scheduler sent them */
};

/* The decision on one candidate (caller-allocated, one per candidate). */
struct gang_preempt_choice {
    int keep;           /* 1: answer the node with its victims as sent; 0: vetoed (left out) */
    const char *reason; /* why vetoed, NULL when kept */
};

struct gang_preempt_result {
    size_t n_kept;
    const char *reason; /* why no candidate is kept ("" when some is); the glue's log line */
};

/*
 * gang_preempt - decide the preempt verb for preemptor (the request's Pod, decoded; added to the
 * books when its uid is unknown, as gang_filter does) over nodes[0..n_nodes) (the request's
 * map, in order): out[i] for nodes[i]. now (ms) is the clock of R0's backoff gate. Decisions are
 * not errors: COMMON_OK with every node vetoed is "no preemption" (answer an empty map).
 * COMMON_EINVAL for a preemptor without uid (or, unknown to the books, without namespace or name);
 * COMMON_ENOMEM (out is undefined: answer the scheduler with an Error; the books may have learned
 * the preemptor, nothing else changed). Reasons stay valid until the next call.
 */
enum common_rc gang_preempt(struct gang_state *s, const struct common_pod *preemptor,
                            const struct gang_preempt_node *nodes, size_t n_nodes, int64_t now,
                            struct gang_preempt_choice *out, struct gang_preempt_result *res,
                            struct common_error *err);

#endif
