/*
 * integrations/slurm_sync.h - the Slurm backend's step inside a TrainJob reconcile: glue between
 * the decision core (slurm.h, slurm_gang_decide) and slurmrestd (slurmrest.h).
 *
 * For a TrainJob whose runtime has the annotation trainsched.io/backend: slurm, each reconcile
 * asks slurmrestd about the gang's Slurm job (by the id in the TrainJob annotation
 * trainsched.io/slurm-job-id, else by the comment that names the TrainJob's uid), submits one
 * when there is none, cancels it when the TrainJob finished, is suspended or is deleted, and
 * tells the reconciler what to write:
 *   - annotations of the PodGroup the reconciler applies: trainsched.io/slurm-job-id,
 *     trainsched.io/slurm-state (a sentence) and, while the job runs,
 *     trainsched.io/slurm-nodes (the Slurm node names, comma-separated), which the extender
 *     reads to bind the gang's pods to those nodes only;
 *   - the TrainJob annotation (record or forget the job id);
 *   - the TrainJob condition SlurmJob, and whether Slurm ended the job (the reconciler then
 *     marks the TrainJob Failed with reason SlurmJobEnded and deletes the JobSet, which evicts
 *     the pods);
 *   - when to ask again (slurmrestd has no watch).
 * slurmrestd's errors (unknown partition, bad token, not JSON) become the condition
 * SlurmJob=False reason SlurmError quoting Slurm, retried after 30 s (never a storm).
 */
#ifndef INTEGRATIONS_SLURM_SYNC_H
#define INTEGRATIONS_SLURM_SYNC_H

#include <jansson.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"
#include "integrations/slurm.h"
#include "integrations/slurmrest.h"

/* Runtime annotation choosing the backend (the Slurm backend when its value is "slurm"). */
#define SLURM_ANNOTATION_BACKEND "trainsched.io/backend"
/* PodGroup annotations written for the extender */
#define SLURM_PG_JOB_ID "trainsched.io/slurm-job-id"
#define SLURM_PG_NODES "trainsched.io/slurm-nodes"
#define SLURM_PG_STATE "trainsched.io/slurm-state"

struct slurm_sync;

struct slurm_sync_opts {
    struct slurmrest_opts rest; /* the slurmrestd client (slurmrest.h) */
    struct slurm_config job;    /* defaults of the job submissions (slurm.h) */
};

/* slurm_sync_create - copies opts. NULL with err set (slurmrest_create's errors). */
struct slurm_sync *slurm_sync_create(const struct slurm_sync_opts *opts, struct common_error *err);
void slurm_sync_destroy(struct slurm_sync *s);

/* slurm_sync_selected - 1 when the TrainJob is on the Slurm backend: its runtime (may be NULL)
 * says trainsched.io/backend: slurm, or the TrainJob already records a Slurm job id. */
int slurm_sync_selected(const json_t *trainjob, const json_t *runtime);

struct slurm_sync_result {
    int active;              /* 1 when the step ran (the fields below mean something) */
    const char *set_job_id;  /* TrainJob annotation to write: NULL none, "" remove, else id */
    const char *cond_status; /* condition SLURM_CONDITION to set, NULL: leave it */
    const char *cond_reason, *cond_message;
    int ended;             /* Slurm ended the job: fail the TrainJob, delete the JobSet */
    int64_t requeue_after; /* seconds; 0: no need */
    /* the PodGroup annotations above as they should be ({key: value}, null for one to
     * remove), NULL when the PodGroup is not concerned; owned by the arena of the step. The
     * reconciler merge-patches an existing PodGroup whose annotations differ (a PodGroup is
     * applied only when created or suspended). */
    const json_t *pg_annotations;
    int requests; /* slurmrestd requests made (for the bench) */
};

/*
 * slurm_sync_step - one pass for TrainJob trainjob (borrowed) with its runtime (may be NULL when
 * the TrainJob is finished and nothing is built) and the rendered objects (may be NULL; when
 * given, its JobSet is what a submission holds nodes for and its PodGroup, if any, gets the
 * annotations above). Strings of *res live in a. Returns COMMON_OK (slurmrestd errors included:
 * they are in res as a condition); COMMON_ENOMEM.
 */
enum common_rc slurm_sync_step(struct slurm_sync *s, struct common_arena *a, const json_t *trainjob,
                               const json_t *runtime, json_t *objects,
                               struct slurm_sync_result *res, struct common_error *err);

/*
 * slurm_sync_deleted - the TrainJob old (its last known state) is gone: cancel its Slurm job
 * (by the recorded id, else by comment). Returns COMMON_OK (nothing to cancel included) or the
 * client's error (the caller logs it).
 */
enum common_rc slurm_sync_deleted(struct slurm_sync *s, const json_t *old,
                                  struct common_error *err);

#endif
