/*
 * extender/server_int.h - private to extender/: the server struct and the helpers its files
 * share (server.c: lifecycle and helpers, informers.c, binder.c, timer.c, nodes.c, routes.c;
 * see extender/README.md). Locks: x->mu guards the gang core, the held-request table, the dirty
 * sets, the node queue and the timer's flags; x->qmu guards the binder queue; x->recs belongs to
 * the timer thread alone.
 */
#ifndef EXTENDER_SERVER_INT_H
#define EXTENDER_SERVER_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/informer.h"
#include "common/log.h"
#include "extender/answer.h"
#include "extender/codec.h"
#include "extender/server.h"
#include "topology/topology.h"
#include "gang/gang.h"

#define JSON_CT "application/json"
#define KEY_MAX 320

struct held {
    char uid[64];
    struct common_httpd_hold *h;
};

struct job {
    struct job *next;
    struct gang_answer a;
    /* a touch instead of an answer: annotate pod a.namespace/a.name (uid a.uid) with
     * EXTENDER_PODGROUP_ANNOTATION = touch, so kube-scheduler requeues it */
    char touch[64];
    /* an ungate instead of an answer: remove GANG_SCHEDULING_GATE from pod a.namespace/a.name
     * (uid a.uid), expected at spec.schedulingGates[gate_index] (timer.c, binder.c) */
    int ungate;
    uint32_t gate_index;
};

struct node_todo {
    char name[254];
    int64_t not_before;
};

/* what the timer last wrote for one PodGroup */
struct pgrec {
    char key[KEY_MAX];
    int written;
    char phase[16];
    int32_t running, succeeded, failed;
    char occupied_by[320];
    int has_start;
    int64_t start;
    char reason[2 * GANG_REASON_MAX];
    /* the verdict annotation last written (timer.c): its message and backoff end (mono ms) */
    char verdict[2 * GANG_REASON_MAX];
    int64_t verdict_backoff;
    int gone;
    /* write coalescing (timer.c): the reason seen last and since when (mono ms; a reason other
     * than "released" is written only once it has stood for REASON_SETTLE_MS), when the status
     * was last patched (the next patch waits STATUS_COALESCE_MS), and when the gang is to be
     * looked at again for a write put off (0: nothing put off) */
    char cand[2 * GANG_REASON_MAX];
    int64_t cand_since;
    int64_t status_at;
    int64_t recheck_at;
};

struct extender_server {
    struct extender_server_opts o;
    struct common_kube *kube;
    struct gang_state *gs;
    struct extender_limits lim;
    size_t arena_max;

    struct common_informer *nodes_inf, *pods_inf, *pg_inf;
    struct common_informer_ops pg_ops;
    /* Kueue Topology objects as level sources (docs/topology.md), when the CRD is served */
    struct common_informer *topo_inf[2]; /* per topo_sources entry, NULL when not served */
    struct common_informer_ops topo_ops[2];
    struct common_kube_resource topo_res[2];

    pthread_mutex_t mu;
    pthread_cond_t cv; /* timer wakeup (CLOCK_MONOTONIC) */
    int tick_req, stopping, started, stopped;
    struct held *holds;
    size_t n_holds, cap_holds;
    char **dirty; /* gang keys "ns/name", in marking order */
    size_t n_dirty, cap_dirty;
    uint32_t *dirty_ix; /* open addressing over dirty: index + 1, 0 = empty */
    size_t cap_dirty_ix;
    struct node_todo *todo;
    size_t n_todo, cap_todo;
    struct extender_server_stats st;

    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    struct job *qhead, *qtail;
    int qstop;

    pthread_t timer;
    pthread_t *binders;
    unsigned n_binders;

    /* timer thread only */
    struct pgrec *recs;
    size_t n_recs, cap_recs;
    int64_t last_metrics;
    /* the ungating pass (timer.c): when it last ran, its output buffer */
    int64_t last_ungate;
    struct gang_ungate *ug_out;
    size_t ug_cap;

    struct common_metric *m_requests, *m_duration, *m_bindings, *m_held, *m_gangs, *m_cache;
    struct common_metric *m_topo_waiting, *m_topo_placed; /* topology (docs/topology.md) */
    /* the gang gate (docs/gang.md "The gang gate"): pods and gangs ungated, gangs waiting at
     * the gate, the pass's duration */
    struct common_metric *m_ungated_pods, *m_ungated_gangs, *m_gated_gangs, *m_ungate_pass;
    /* test hook: TRAINSCHED_TEST_EXIT_AFTER_UNGATES=N ends the process after N ungate writes
     * (0: off); the count so far (x->mu) */
    long exit_after_ungates, ungates_done;

    /* DRA (dra_glue.c): watches when resource.k8s.io/v1 is served; the view the books borrow
     * lives in dra_arena (swapped under mu); dra_dirty (mu) asks the timer for a new view */
    struct common_informer *dra_inf[3]; /* resourceslices, deviceclasses, resourceclaims */
    struct common_informer_ops dra_ops[3];
    struct common_arena *dra_arena;
    /* the decoded slices and classes the view is built on (dra/view.h), in their own arena,
     * decoded again only when one of them changed (timer thread; swapped under mu) */
    struct common_arena *dra_dev_arena;
    struct dra_view_devices *dra_dev;
    int dra_dirty;
    /* the sweep of stale claim allocations (dra_glue.c, timer thread only): claim uid ->
     * first time (ms) it was seen stale, and when the last sweep ran */
    json_t *dra_stale;
    int64_t dra_sweep_at;
    struct common_metric *m_dra_devices, *m_dra_waiting, *m_dra_allocs;
};

/* ---- server.c ---- */

/* CLOCK_MONOTONIC in milliseconds */
int64_t extender_mono_ms(void);
/* copy src (NULL = "") into dst of size bytes, cut to fit, always terminated */
void extender_copy_str(char *dst, size_t size, const char *src);
/* mark gang ns/name for a status and Event pass of the timer (x->mu held); O(1) whatever the
 * number of gangs already marked */
void extender_mark_dirty(struct extender_server *x, const char *ns, const char *name);
/* the timer took (and freed) every key of x->dirty: empty the set (x->mu held) */
void extender_dirty_taken(struct extender_server *x);
/* the pod's GANG_POD_GROUP_LABEL value, NULL when none */
const char *extender_pod_group_of(const struct common_pod *p);

/* ---- informers.c ---- */

/* ---- slurm.c ---- */

/* the filter of a pod whose PodGroup is on the Slurm backend (annotation
 * trainsched.io/slurm-job-id): *handled = 1 and verdict/reason filled (candidates that are not
 * the Slurm job's nodes FAIL naming the job; the rest go through gang_filter under x->mu), or
 * *wait_msg set while the job has no nodes. *handled = 0 for other pods (nothing touched).
 * COMMON_OK or COMMON_ENOMEM / gang_filter's error. */
enum common_rc extender_slurm_filter(struct extender_server *x, struct common_arena *a,
                                     const struct extender_args *args, uint8_t *verdict,
                                     const char **reason, const char **wait_msg, int *handled,
                                     struct common_error *e);

/* create the node, pod and PodGroup informers (x->nodes_inf, pods_inf, pg_inf), not started;
 * COMMON_OK or the informer's error code */
enum common_rc extender_informers_create(struct extender_server *x, struct common_error *err);
/* create and start the Kueue and KAI Topology watches whose CRD is served (x->topo_inf);
 * COMMON_OK (none served is fine) or the informer's error code */
enum common_rc extender_topology_watch(struct extender_server *x, struct common_error *err);

/* ---- binder.c ---- */

/* suspend the request (common_httpd_hold); NULL when it cannot be held */
struct common_httpd_hold *extender_hold_take(const struct common_httpd_request *req,
                                             struct common_httpd_response *resp);
/* answer a suspended request, exactly once */
void extender_hold_release(struct common_httpd_hold *h, int status, const char *body, size_t len);
/* remember a held bind request by pod uid (x->mu held); 0, -1 without memory */
int extender_holds_add(struct extender_server *x, const char *uid, struct common_httpd_hold *h);
/* take the held request of pod uid out of the table (x->mu held); NULL when none */
struct common_httpd_hold *extender_holds_take(struct extender_server *x, const char *uid);
/* answer a held request with {"Error": msg} ("" = bound) */
void extender_answer_hold(struct common_httpd_hold *h, const char *msg);
/* append a job list to the binder queue (x->qmu taken here; x->mu must not be held) */
void extender_queue_push(struct extender_server *x, struct job *head, struct job *tail);
/* copy n core answers into a job list (x->mu held: the answers die at the next core call) */
void extender_jobs_from_answers(const struct gang_answer *a, size_t n, struct job **head,
                                struct job **tail);
/* binder thread body (arg: the server); returns when the queue stops */
void *extender_binder_main(void *arg);

/* ---- dra_glue.c ---- */

struct dra_view;
/* watch ResourceSlices, DeviceClasses and ResourceClaims when resource.k8s.io/v1 is served
 * (started at once); COMMON_OK (not served is fine: DRA stays off) or the informer's error */
enum common_rc extender_dra_watch(struct extender_server *x, struct common_error *err);
void extender_dra_stop(struct extender_server *x);
/* after gang_state_destroy: the watches and the last view */
void extender_dra_destroy(struct extender_server *x);
/* a pod changed (x->mu held): a pending gang pod with spec.resourceClaims asks for a new view */
void extender_dra_pod_changed(struct extender_server *x, const struct common_pod *p);
/* timer thread, x->mu not held: when asked, build the view from the caches, hand it to the
 * books, update the device metrics */
void extender_dra_refresh(struct extender_server *x);
/* register the DRA metrics; 0 or -1 */
int extender_dra_metrics_register(struct extender_server *x, struct common_metrics *m);
void extender_dra_metrics(struct extender_server *x, const struct dra_view *v);
/* the gangs-waiting-for-devices gauge */
void extender_dra_count_waiting(struct extender_server *x, double waiting);
/* binder, x->mu not held: before member a's Binding, write status.allocation (the planned
 * devices, nodeSelector on the node) and status.reservedFor (the pod) of each of its claims
 * that is not allocated yet, one status update per claim */
void extender_dra_before_bind(struct extender_server *x, const struct gang_answer *a);
/* the filter answered pod with node_names[i] where verdict[i] is EXTENDER_PASS: when exactly one
 * node passes, it is the node the gang plan gave the pod, and kube-scheduler's own first fit
 * there would take other devices than planned (gang_dra_first_fit_differs), write the plan's
 * devices into the pod's unallocated claims (delete-protection finalizer and our annotation,
 * then status.allocation + reservedFor) now, before kube-scheduler's Reserve/PreBind allocate
 * them (docs/dra.md "Who writes the allocation"); nothing when DRA is off or the pod has no
 * planned claims */
void extender_dra_at_filter(struct extender_server *x, const struct common_pod *pod,
                            const char *const *node_names, const uint8_t *verdict, size_t n);
/* binder, x->mu not held: member a's attempt ended (an error answer to a held bind): clear
 * status.allocation and reservedFor of its claims reserved for no other pod */
void extender_dra_release(struct extender_server *x, const struct gang_answer *a);
/* x->mu held: a rejected bind (kube-scheduler's PreBind has allocated its claims): append a job
 * that releases the pod's claims as extender_dra_release does (nothing when DRA is off) */
void extender_dra_release_job(struct extender_server *x, const char *ns, const char *name,
                              const char *uid, struct job **head, struct job **tail);

/* ---- timer.c ---- */

/* timer thread body (arg: the server); returns when x->stopping */
void *extender_timer_main(void *arg);

/* ---- nodes.c ---- */

/* the gang resource count a node advertises: its pod capacity, 110 when unset */
int64_t extender_node_gang_want(const struct common_node *n);
/* queue node name for a patch not before not_before (ms, monotonic; x->mu held) */
void extender_node_todo_add(struct extender_server *x, const char *name, int64_t not_before);
/* patch the node's capacity and allocatable of the gang resource (x->mu not held) */
void extender_patch_node(struct extender_server *x, const struct node_todo *t);

#endif
