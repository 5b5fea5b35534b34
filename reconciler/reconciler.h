/*
 * reconciler/reconciler.h - the TrainJob controller: TrainJobs become their runtime snapshot,
 * JobSet and gang object in the cluster, and their status follows the JobSet.
 *
 * Watches (common/informer.h): TrainJobs, TrainingRuntimes, ClusterTrainingRuntimes, JobSets,
 * ConfigMaps (only those a TrainJob controls are kept whole), and the coscheduling and Volcano
 * PodGroups when those CRDs are installed at start. A change to a TrainJob, or to an object a
 * TrainJob controls (ownerReferences), queues the TrainJob's key "namespace/name"; a runtime
 * that appears queues the TrainJobs waiting for it. Workers (reconciler/queue.h: de-duplicated,
 * per-key exponential backoff, one key never handled by two workers at once) run one
 * reconcile per key, the loop of ../shared/reference/trainer.md §2.1:
 *   1. skip TrainJobs that spec.managedBy gives to another controller;
 *   2. validate the TrainJob (an invalid one gets ResourcesCreated=False naming the field and is
 *      not retried until it changes);
 *   3. the runtime: from the snapshot ConfigMap when it exists, else the live runtime (missing:
 *      ResourcesCreated=False TrainingRuntimeNotFound, retried when the runtime appears);
 *   4. trainjob_render (the same core as `trainsched render`), then each child created or
 *      server-side applied (fieldManager from the options, force, fieldValidation=Strict) by
 *      the rules of reconciler/core.h;
 *   5. status from the JobSet (trainjob/status.h), activeDeadlineSeconds (deletes the JobSet),
 *      a merge patch of the status subresource when it changed; Events for what happened.
 * Everything is read from the watch caches; the API server sees only writes (and one GET per
 * snapshot-less TrainJob whose create raced).
 */
#ifndef RECONCILER_RECONCILER_H
#define RECONCILER_RECONCILER_H

#include <stdint.h>

#include "common/error.h"
#include "common/events.h"
#include "common/kube.h"
#include "common/metrics.h"
#include "integrations/slurm_sync.h"
#include "reconciler/queue.h"
#include "trainjob/trainjob.h"

struct rc_opts {
    struct common_kube *kube;        /* borrowed; MUST */
    struct common_events *events;    /* borrowed; NULL: no Events */
    struct common_metrics *metrics;  /* borrowed; NULL: no metrics. rc_create registers
                                        trainsched_reconcile_total, _duration_seconds and
                                        _writes_total there (no callbacks into the reconciler,
                                        so the registry may outlive it); queue gauges are the
                                        caller's, from rc_get_stats */
    const char *field_manager;       /* default "trainsched" */
    int workers;                     /* default 4 */
    const char *namespace;           /* watch one namespace; NULL = all */
    struct rc_queue_opts queue;      /* zero = defaults (5 ms .. 5 min backoff) */
    trainjob_keygen_fn keygen;       /* MPI SSH keys; default common/sshkey.h's */
    int64_t (*now)(void);            /* wall clock in seconds since the epoch; default time() */
    long sync_timeout_ms;            /* wait for the caches at start; default 60000 */
    int gang_marks;                  /* 1: coscheduling JobSets' pod templates carry the gang
                                        marks (trainjob.h), as serve's webhook.extenderWired
                                        says kube-scheduler calls the extender; 0: left out */
    const char *gang_scheduler_name; /* spec.schedulerName written into the pod templates of
                                        coscheduling JobSets, as the pod webhook sets it on gang
                                        pods (copied); NULL or "": left as the runtime has it */
    const char *default_backend;     /* the backend of runtimes with neither the annotation
                                        trainsched.io/backend nor a podGroupPolicy
                                        (integrations/backend.h; copied); NULL or "": none */
    const char *kai_default_queue;   /* serve's backends.kai.queue: the KAI queue of TrainJobs
                                        whose TrainJob and runtime name none (copied); NULL or
                                        "": "default-queue" (integrations/kai.h) */
    /* Kubeflow Trainer's TrainJobStatus feature (serve --trainjob-status): the status server as
     * pods reach it, "https://<service>.<namespace>.svc:<port>" (copied); NULL or "": off.
     * When on, every TrainJob's trainer pods get its env and token volume and the ConfigMap
     * <name>-tls-config holds the CA that trainer_status_ca returns (a PEM string,
     * common_malloc'd, the caller frees); a CA that cannot be had fails the reconcile (retried
     * with backoff), as in Trainer when its certificate Secret is missing. */
    const char *trainer_status_url;
    enum common_rc (*trainer_status_ca)(void *ctx, char **pem, struct common_error *err);
    void *trainer_status_ca_ctx;
    /* the volcano backend (integrations/volcano.h; serve config backends.volcano): the queue
     * of TrainJobs whose TrainJob and runtime name none, and the level -> HyperNode tier
     * mapping "LEVEL=TIER,..." (both copied; NULL or "": none / the built-in mapping) */
    const char *volcano_queue;
    const char *volcano_tiers;
    struct slurm_sync *slurm; /* borrowed; NULL: no Slurm backend. TrainJobs whose
                                 runtime says trainsched.io/backend: slurm get one Slurm
                                 job per gang (integrations/slurm_sync.h) */
    int64_t slurm_give_up_s;  /* seconds after a deletion when the finalizer
                                 trainsched.io/slurm-job goes even though slurmrestd never
                                 confirmed the cancel; 0: SLURM_RELEASE_GIVE_UP_S (900) */
};

/* What one reconcile did (for tests, the bench and logs). */
struct rc_result {
    int skipped;           /* not ours (managedBy) or gone */
    int created, applied;  /* child writes done */
    int status_written;    /* 1 when the status was patched */
    int64_t requeue_after; /* seconds; > 0: look again then (activeDeadlineSeconds) */
    const char *reason;    /* a ResourcesCreated reason when building failed, else NULL */
};

struct rc_stats {
    uint64_t reconciles, errors, status_writes, creates, applies, deletes;
    uint64_t applies_skipped; /* applies not sent: the same body on an object nobody wrote since */
    struct rc_queue_stats queue;
};

struct rc_reconciler;

/*
 * rc_create - a controller with opts (copied). Nothing runs until rc_start. Returns NULL with
 * err set: COMMON_EINVAL (no kube), COMMON_ENOMEM.
 */
struct rc_reconciler *rc_create(const struct rc_opts *opts, struct common_error *err);

/*
 * rc_start - probe which PodGroup CRDs exist, start the informers, wait for their first lists
 * (up to opts.sync_timeout_ms), queue every TrainJob, start the workers. Returns COMMON_OK,
 * COMMON_ETIMEOUT (a cache did not sync; nothing left running), COMMON_ENOMEM, COMMON_EIO.
 */
enum common_rc rc_start(struct rc_reconciler *r, struct common_error *err);

/* rc_synced - 1 once rc_start has finished and the caches are synced. Thread-safe. */
int rc_synced(struct rc_reconciler *r);

/* rc_stop - stop the workers (a reconcile in flight finishes), then the informers. Idempotent. */
void rc_stop(struct rc_reconciler *r);

/* rc_destroy - stop, then free. NULL is a no-op. */
void rc_destroy(struct rc_reconciler *r);

/*
 * rc_reconcile - one reconcile of TrainJob key ("namespace/name") now, on the caller's thread,
 * as a worker would do it (for tests). Returns COMMON_OK (res filled), or the error that a
 * worker would retry with backoff (transport, 5xx, conflicts) with err set.
 */
enum common_rc rc_reconcile(struct rc_reconciler *r, const char *key, struct rc_result *res,
                            struct common_error *err);

/* rc_get_stats - a copy of the counters. */
void rc_get_stats(struct rc_reconciler *r, struct rc_stats *out);

#endif
