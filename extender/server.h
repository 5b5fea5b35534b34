/*
 * extender/server.h - the scheduler extender's glue: watch caches feeding the gang core
 * (gang/gang.h), the four extender verbs on a common_httpd, held binds, the Bindings, the
 * virtual gang resource on every node, PodGroup status and Events, metrics and readiness.
 *
 * Routes (extender_server_install; all POST, JSON in and out, always HTTP 200 with the error
 * in the body where the protocol has an Error field, since kube-scheduler treats any other
 * status as a transport error):
 *   /scheduler/filter      ExtenderArgs -> ExtenderFilterResult
 *   /scheduler/prioritize  ExtenderArgs -> HostPriorityList
 *   /scheduler/bind        ExtenderBindingArgs -> ExtenderBindingResult (may be held)
 *   /scheduler/preempt     ExtenderPreemptionArgs -> ExtenderPreemptionResult
 * so the KubeSchedulerConfiguration says urlPrefix "https://127.0.0.1:9443/scheduler" with
 * filterVerb "filter", prioritizeVerb "prioritize", bindVerb "bind", preemptVerb "preempt"
 * (manifests/scheduler/scheduler-config.yaml, docs/extender.md). A malformed body gets HTTP 400
 * with a text message (the scheduler reports it as "code 400").
 *
 * Verbs:
 * - filter / prioritize: decoded with extender/codec.h, decided by gang_filter /
 *   gang_prioritize under the one mutex, encoded. Pods without the PodGroup label (they should
 *   not reach the extender: only pods requesting trainsched.io/gang do) pass every node with a
 *   neutral score 0, without taking the mutex.
 * - bind: gang_bind. HOLD: the request is held (common_httpd_hold) and remembered by pod uid.
 *   RELEASE: this request is held too, and a binder thread creates a v1 Binding for every
 *   listed pod (POST pods/NAME/binding with metadata.uid as precondition; 409 AlreadyExists or
 *   "already assigned" count as bound), then answers each pod's held request: {"Error": ""}, or
 *   the API's error (and gang_bind_failed for that pod). REJECT: {"Error": reason} at once.
 * - preempt: gang_preempt (gang/gang.h) decides, under the mutex, which of the scheduler's
 *   candidate nodes stay; kept nodes are answered with their victims exactly as sent, vetoed
 *   ones are left out (an empty map when none is kept: no preemption). Vetoed: a node whose
 *   victims include a held or released gang member, or would leave another running gang below
 *   minMember (unless the whole gang is among them); every node when even evicting every
 *   lower-priority pod could not make the preemptor's whole gang fit; and the candidates ranked
 *   behind another (more gangs partly evicted, then more victims). Only pods that reach the
 *   extender (requesting the gang resource) are asked about: a plain pod's preemption never is.
 *
 * Threads: informer threads (nodes, pods: protobuf; PodGroups: JSON) feed the core under the
 * mutex; a timer thread calls gang_tick at gang_next_deadline() and whenever a call reports
 * answers_pending (expired holds answer with the core's error), patches node status and
 * PodGroup status and records Events; opts.binders binder threads create Bindings and answer
 * held requests. Handlers never wait on the network.
 *
 * Virtual resource: every node gets EXTENDER_GANG_RESOURCE in status.capacity and
 * status.allocatable (JSON merge patch of nodes/NAME/status) equal to its pod capacity (110
 * when the node reports none), re-applied whenever a node event lacks it or carries another
 * value. The core ignores the resource in fit (gang_config.ignored_resources).
 *
 * PodGroup changes: kube-scheduler does not watch PodGroups, and parks a pod the extender
 * rejected until a Pod or Node event. When a PodGroup update may let waiting members through
 * (gang_info.podgroup_unblocks grew: minMember lowered, minResources or the phased jobs
 * changed), a binder thread annotates each member that still waits in the scheduler's queue
 * (gang_waiting_pods) with EXTENDER_PODGROUP_ANNOTATION = the PodGroup's resourceVersion (JSON
 * merge patch, metadata.uid as precondition): an update of the pod itself, which requeues it.
 *
 * PodGroup status: when gang_podgroup_status changes, a JSON merge patch of
 * podgroups/NAME/status {phase, running, succeeded, failed, occupiedBy, scheduleStartTime};
 * when the gang's "why waiting" reason (gang_info) changes, an Event on the PodGroup: Warning
 * "GangWaiting" (note: the reason); Normal "GangReleased" when the gang's members are bound.
 *
 * Metrics (opts.metrics):
 *   trainsched_extender_requests_total{verb,result}  counter; result ok, error (the verb's
 *                                                    Error, or 4xx), held, rejected, wait (a
 *                                                    filter answered with an Error because the
 *                                                    gang waits: extender/answer.h)
 *   trainsched_extender_duration_seconds{verb}        histogram, time to answer (held binds:
 *                                                    time until the hold is taken)
 *   trainsched_extender_bindings_total{result}        counter: bound, failed
 *   trainsched_extender_held_binds                    gauge
 *   trainsched_extender_gangs{state}                  gauge: waiting, holding, admitted, backoff
 *   trainsched_extender_cache_objects{kind}           gauge: nodes, pods, podgroups
 *
 * Shutdown order: extender_server_stop (answers every held bind with an error, stops the
 * threads) BEFORE common_httpd_stop, then extender_server_destroy after the httpd is gone.
 *
 * RBAC: pods, nodes list/watch; podgroups (scheduling.x-k8s.io) list/watch; pods/binding
 * create; nodes/status patch; podgroups/status patch; events.k8s.io events create/patch.
 *
 * Source: ../shared/DESIGN.md (gang scheduling through the extender; which pods reach the
 * extender), ../shared/reference/protocols.md §1 (verbs, Binding) and §3 (PodGroup),
 * docs/gang.md (what the glue feeds and carries out), docs/extender.md.
 */
#ifndef EXTENDER_SERVER_H
#define EXTENDER_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "common/coretypes.h"
#include "common/error.h"
#include "common/events.h"
#include "common/httpd.h"
#include "common/kube.h"
#include "common/metrics.h"

/* The virtual extended resource that marks gang pods (the pod webhook adds a request of 1). */
#define EXTENDER_GANG_RESOURCE "trainsched.io/gang"
/* Pod annotation written on waiting gang members when their PodGroup changed (see above). */
#define EXTENDER_PODGROUP_ANNOTATION "trainsched.io/podgroup-changed"
/* Route prefix: urlPrefix = scheme://host:port + EXTENDER_URL_PREFIX. */
#define EXTENDER_URL_PREFIX "/scheduler"

struct extender_server_opts {
    struct common_kube *kube;       /* MUST; borrowed: informers, Bindings, patches */
    struct common_events *events;   /* borrowed; NULL = no Events */
    struct common_metrics *metrics; /* borrowed; NULL = no metrics */
    /* The bind extender's httpTimeout (ms) of the scheduler config; 0 = 5000. Holds never
     * outlive it (gang_config.bind_http_timeout_ms). */
    int64_t bind_http_timeout_ms;
    /* scheduleTimeoutSeconds for PodGroups without one; 0 = 60. */
    int64_t default_schedule_timeout_s;
    /* Backoff after a failed gang attempt (ms); 0 = the core's defaults (10 s, 300 s). */
    int64_t backoff_initial_ms, backoff_max_ms;
    unsigned binders;          /* binder threads; 0 = 4 */
    int advertise_resource;    /* patch EXTENDER_GANG_RESOURCE onto nodes: 1 (default) or -1 */
    int write_podgroup_status; /* 1 (default) or -1: leave PodGroup status and verdict alone */
    size_t max_body;           /* request body cap (bytes); 0 = 64 MiB (the codec's default) */
    /* Topologies for topology-aware gang placement (docs/topology.md), each
     * "NAME=LEVEL,LEVEL,..." (topo_spec_parse), the first the default; read during create
     * only. NULL/0: none (a PodGroup asking for a level waits with that reason). */
    const char *const *topologies;
    size_t n_topologies;
    /* Slurm backend (docs/slurm.md): the node label whose value is a node's Slurm node name;
     * NULL or "": the node's own name. Borrowed: must outlive the server. */
    const char *slurm_node_label;
};

/* Counters for tests and logs (cumulative). */
struct extender_server_stats {
    uint64_t filter, prioritize, bind, preempt; /* requests received */
    uint64_t held, released, rejected;          /* binds */
    uint64_t bindings_ok, bindings_failed;      /* Binding creates */
    uint64_t node_patches, status_patches;      /* writes */
    uint64_t pod_touches; /* waiting gang pods annotated after a PodGroup change */
    /* the gang gate: gates removed, removals that failed for good, ungating passes */
    uint64_t ungated, ungate_failed, ungate_passes;
    /* DRA (docs/dra.md): claim allocations written before a Binding, and cleared after a
     * gang's attempt ended */
    uint64_t dra_claims_written, dra_claims_released;
    uint64_t dra_leaks_freed; /* of dra_claims_released: freed by the stale-allocation sweep */
    size_t held_now;          /* held right now */
};

struct extender_server;

/*
 * extender_server_create - the state, informers created (not started). opts is copied.
 * Returns NULL with err set: COMMON_EINVAL (no kube, negative times), COMMON_ENOMEM.
 */
struct extender_server *extender_server_create(const struct extender_server_opts *opts,
                                               struct common_error *err);

/*
 * extender_server_install - add the four POST routes above to h (before common_httpd_start);
 * x must outlive h's serving. COMMON_OK or COMMON_EINVAL (a route could not be added).
 */
enum common_rc extender_server_install(struct extender_server *x, struct common_httpd *h,
                                       struct common_error *err);

/*
 * extender_server_answer - answer one request for path (EXTENDER_URL_PREFIX "/filter",
 * "/prioritize" or "/preempt") in this thread, without HTTP, through the handler its route runs
 * (metrics and stats included): what the route costs without the HTTP stack, for benchmarks and
 * tests. body: len bytes, NUL-terminated, as the HTTP server passes them. resp: zeroed by the
 * caller with common_buf_init(&resp->body, answer cap); gets status (0 = 200), content_type
 * and body; the caller frees resp->body. COMMON_OK, or COMMON_EINVAL naming a path that has no
 * such route (bind holds its HTTP request, so it has none).
 */
enum common_rc extender_server_answer(struct extender_server *x, const char *path, const char *body,
                                      size_t len, struct common_httpd_response *resp,
                                      struct common_error *err);

/* extender_server_start - start the informers, the timer and the binder threads. COMMON_OK,
 * COMMON_ECONFLICT (already started), COMMON_ENOMEM / COMMON_EIO (no thread). */
enum common_rc extender_server_start(struct extender_server *x, struct common_error *err);

/* extender_server_ready - nonzero once nodes, pods and PodGroups have synced (their first
 * list is in the books). A missing PodGroup CRD keeps it not ready. */
int extender_server_ready(struct extender_server *x);

/* extender_server_wait_ready - wait up to timeout_ms for readiness; nonzero when ready. */
int extender_server_wait_ready(struct extender_server *x, long timeout_ms);

/* extender_server_stats - a copy of the counters. */
void extender_server_stats(struct extender_server *x, struct extender_server_stats *out);

/*
 * extender_server_stop - answer every held bind with an error, stop the threads and the
 * informers; later binds are answered with an error at once. Call before common_httpd_stop.
 * Idempotent.
 */
void extender_server_stop(struct extender_server *x);

/* extender_server_destroy - stop, then free (after the httpd has stopped). NULL is a no-op. */
void extender_server_destroy(struct extender_server *x);

/*
 * extender_server_feed_node / _pod / _podgroup - put one object into the books exactly as an
 * informer's add or update event does (x->mu taken; same side effects: the node queued for the
 * gang resource patch, the gang marked for the timer's status pass, touches of waiting members
 * when a PodGroup change unblocks them). For benchmarks and tests that drive the routes without
 * an API server (filter, prioritize and preempt answer without extender_server_start). n and p
 * are decoded by common_node_from_json / common_pod_from_json; obj is the PodGroup's API JSON
 * (scheduling.x-k8s.io/v1alpha1). Borrowed: the books copy what they keep. A refused object is
 * logged as the informer would log it.
 */
void extender_server_feed_node(struct extender_server *x, const struct common_node *n);
void extender_server_feed_pod(struct extender_server *x, const struct common_pod *p);
void extender_server_feed_podgroup(struct extender_server *x, const json_t *obj);

#endif
