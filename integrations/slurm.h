/*
 * integrations/slurm.h - the Slurm backend's pure core: a TrainJob's gang as one Slurm job.
 *
 * Two translations, no I/O and no clock:
 *   - gang -> the body of slurmrestd's POST /slurm/<version>/job/submit: one placeholder batch
 *     job that holds as many nodes as the gang has pods in its largest replicated job, with the
 *     largest pod's requests per node (CPUs, memory, GPUs as GRES), the time limit from
 *     spec.activeDeadlineSeconds and partition/account/QOS from runtime annotations or config.
 *     Its script only sleeps: Kubernetes runs the workload, Slurm only decides when and where.
 *   - an answer of GET /slurm/<version>/job/{id} (or /jobs) -> a decision: pending (with Slurm's
 *     reason), running (with the Slurm node names, hostlist syntax expanded) or ended (with the
 *     state and reason), and slurmrestd error answers -> a message that quotes Slurm.
 * Shapes: OpenAPI v0.0.38 (Slurm 22.05) and the data_parser versions v0.0.39 and newer, where
 * `environment` is an array of "K=V", numbers may be {set, infinite, number}, `job_state` is an
 * array of flags from v0.0.40 and the script moves into `job.script` from v0.0.41. Source:
 * SchedMD's slurmrestd OpenAPI plugins (src/plugins/openapi/v0.0.38, data_parser/v0.0.39+) and
 * their release notes.
 */
#ifndef INTEGRATIONS_SLURM_H
#define INTEGRATIONS_SLURM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"

/* Runtime (or TrainJob) annotations that choose where the Slurm job goes; they win over config. */
#define SLURM_ANNOTATION_PARTITION "trainsched.io/slurm-partition"
#define SLURM_ANNOTATION_ACCOUNT "trainsched.io/slurm-account"
#define SLURM_ANNOTATION_QOS "trainsched.io/slurm-qos"
/* TrainJob annotation where the reconciler records the Slurm job id ("123") */
#define SLURM_ANNOTATION_JOB_ID "trainsched.io/slurm-job-id"
/* prefix of the Slurm job comment; the whole comment is "trainsched:<ns>/<name>/<uid>" */
#define SLURM_COMMENT_PREFIX "trainsched:"
/* the largest finite Slurm time limit in minutes: Slurm's INFINITE is 0xffffffff (uint32) */
#define SLURM_TIME_LIMIT_MAX INT64_C(4294967294)

struct slurm_config {
    const char *api_version;   /* "v0.0.38" (default when NULL), "v0.0.39", ... "v0.0.44" */
    const char *partition;     /* default partition, NULL: Slurm's default partition */
    const char *account, *qos; /* NULL: left out */
    const char *gpu_resource;  /* Kubernetes resource counted as GPUs; "nvidia.com/gpu" */
    const char *gres_name;     /* Slurm GRES name for it; "gpu"; "" leaves GPUs out */
    const char *workdir;       /* current_working_directory of the placeholder; "/tmp" */
};

/*
 * slurm_submission - the job submission body for the gang of a rendered TrainJob.
 * In: trainjob (metadata.namespace/name/uid, metadata.annotations, spec.activeDeadlineSeconds),
 * runtime (metadata.annotations, may be NULL), jobset = the JobSet trainjob_render built
 * (spec.replicatedJobs[].replicas x template.spec.parallelism pods each); all borrowed.
 * Out: *out, a new reference:
 *   v0.0.38: {"script": "#!/bin/sh ...", "job": {"name", "comment", "nodes": N, "tasks": N,
 *             "tasks_per_node": 1, "cpus_per_task": C, "memory_per_node": MB, "gres": "gpu:G",
 *             "time_limit": minutes, "partition", "account", "qos", "environment": {..},
 *             "current_working_directory", "standard_output": "/dev/null"}}
 *   v0.0.39+: the same keys with "environment": ["PATH=..."], "nodes": "N",
 *             "memory_per_node"/"time_limit" as {"set": true, "number": n}, GPUs in
 *             "tres_per_node": "gres/gpu:G"; from v0.0.41 the script is job.script.
 * N = pods of the largest replicated job (one pod per Slurm node), or numNodes (the TrainJob's,
 * else the runtime's) when it is larger and the runtime's mlPolicy.mpi.runLauncherAsNode is true
 * (the launcher pod trains too); C = the largest pod CPU
 * request rounded up (at least 1); MB = largest pod memory request in MiB rounded up (left out
 * when no pod asks for memory); G = largest pod request of cfg->gpu_resource (left out when 0).
 * A container's request of a resource it gives only a limit for is that limit, as the API
 * server defaults it. minutes = activeDeadlineSeconds rounded up (left out when unset), capped
 * at SLURM_TIME_LIMIT_MAX so Slurm's INFINITE is never sent.
 * Returns COMMON_OK; COMMON_EINVAL naming the field (no pods, a request that is not a
 * quantity, a missing metadata.name); COMMON_EUNSUPPORTED for an API version it does not know;
 * COMMON_ENOMEM.
 */
enum common_rc slurm_submission(const json_t *trainjob, const json_t *runtime, const json_t *jobset,
                                const struct slurm_config *cfg, json_t **out,
                                struct common_error *err);

/*
 * slurm_job_name / slurm_job_comment - the Slurm job name "trainsched.<ns>.<name>" and comment
 * "trainsched:<ns>/<name>/<uid>" for a TrainJob, in arena a (NULL when out of memory).
 * A restarted reconciler finds its job by the comment (slurm_jobs_find).
 */
char *slurm_job_name(struct common_arena *a, const char *ns, const char *name);
char *slurm_job_comment(struct common_arena *a, const char *ns, const char *name, const char *uid);

enum slurm_phase { SLURM_PENDING = 0, SLURM_RUNNING, SLURM_ENDED };

/* slurm_phase_name - "pending", "running", "ended". */
const char *slurm_phase_name(enum slurm_phase p);

/* A job's state, decoded; strings live in the arena passed to the parser. */
struct slurm_job_state {
    int64_t job_id;
    enum slurm_phase phase;
    const char *state;  /* Slurm's job_state, e.g. "PENDING", "TIMEOUT" (flags joined by ",") */
    const char *reason; /* state_reason, e.g. "Resources", "TimeLimit", "None" */
    const char *name, *comment;
    const char **nodes; /* running: the Slurm node names, expanded, in Slurm's order */
    size_t nnodes;
    const char *summary; /* one sentence for a condition message, e.g. "Slurm job 12 is pending:
                            Resources" / "Slurm job 12 ended: TIMEOUT (TimeLimit)" */
};

/*
 * slurm_answer_check - whether an answer of slurmrestd is a success: HTTP 2xx, a JSON object
 * and an empty (or missing) "errors" array. On success *doc is a new reference to the parsed
 * body (doc may be NULL to only check). Otherwise returns, with err quoting Slurm
 * ("slurmrestd: HTTP 500: Invalid partition name specified (error 2000)"):
 * COMMON_EUNAUTHORIZED for 401/403, COMMON_ENOTFOUND for error 2017 (Invalid job id),
 * COMMON_EAPI for other errors entries or statuses, COMMON_EINVAL when the body is not JSON or
 * is cut short (the message quotes its first bytes). what names the call ("GET /job/12").
 */
enum common_rc slurm_answer_check(long http_status, const char *body, size_t len, const char *what,
                                  json_t **doc, struct common_error *err);

/*
 * slurm_job_parse - the first job of a GET /job/{id} answer ({"jobs": [{...}]}) as a state.
 * job_state is a string (v0.0.38/39) or an array of flags (v0.0.40+); numbers may be wrapped
 * as {set, number}. Nodes come from "nodes" (a hostlist: "n[1-3,5]", "gpu[01-02]-ib,login").
 * Phases: PENDING, CONFIGURING, REQUEUED, REQUEUE_HOLD, REQUEUE_FED, RESV_DEL_HOLD, SUSPENDED ->
 * pending; RUNNING, RESIZING, SIGNALING, STOPPED -> running; COMPLETING and every terminal
 * state (COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE,
 * OUT_OF_MEMORY, ...) -> ended. Returns COMMON_OK; COMMON_EINVAL naming the field (no jobs,
 * job_state missing or unknown, a bad hostlist); COMMON_ENOMEM.
 */
enum common_rc slurm_job_parse(struct common_arena *a, const json_t *answer,
                               struct slurm_job_state *out, struct common_error *err);

/*
 * slurm_jobs_find - in a GET /jobs answer, the job whose comment equals comment, preferring
 * one that has not ended (a finished earlier attempt stays listed for MinJobAge). Returns
 * COMMON_OK with *out, COMMON_ENOTFOUND when none matches, or what slurm_job_parse returns.
 */
enum common_rc slurm_jobs_find(struct common_arena *a, const json_t *answer, const char *comment,
                               struct slurm_job_state *out, struct common_error *err);

/*
 * slurm_hostlist_expand - Slurm hostlist syntax -> names, in order: "n[1-3,5]" -> n1 n2 n3 n5,
 * "gpu[01-02]" keeps the zero padding, several bracket groups multiply ("r[1-2]n[1-2]"), commas
 * outside brackets separate entries. At most max names. Names live in a. Returns COMMON_OK;
 * COMMON_EINVAL quoting the list (unbalanced bracket, bad range, more than max names).
 */
enum common_rc slurm_hostlist_expand(struct common_arena *a, const char *list, size_t max,
                                     const char ***names, size_t *n, struct common_error *err);

/* ---- the per-gang decision (what the reconciler does next) ---- */

/* The TrainJob condition the Slurm backend keeps: True while the job runs (nodes held). */
#define SLURM_CONDITION "SlurmJob"
#define SLURM_REASON_PENDING "SlurmJobPending"
#define SLURM_REASON_RUNNING "SlurmJobRunning"
#define SLURM_REASON_ENDED "SlurmJobEnded"         /* Slurm ended it: the TrainJob is stopped */
#define SLURM_REASON_CANCELLED "SlurmJobCancelled" /* trainsched cancelled it (finish, suspend) */
#define SLURM_REASON_SUBMITTED "SlurmJobSubmitted"
#define SLURM_REASON_ERROR "SlurmError" /* slurmrestd refused or failed: its message */

/* What the last question to slurmrestd about this gang gave. */
enum slurm_lookup {
    SLURM_LOOKUP_NONE = 0, /* not asked yet in this reconcile */
    SLURM_LOOKUP_FOUND,    /* job holds the answer */
    SLURM_LOOKUP_NOT_FOUND /* no such job (by id: forgotten; by comment: never submitted) */
};

enum slurm_gang_action {
    SLURM_GANG_NOTHING = 0, /* nothing to ask or do */
    SLURM_GANG_FIND,        /* GET /jobs, look for the comment, decide again */
    SLURM_GANG_LOOKUP,      /* GET /job/<job_id>, decide again */
    SLURM_GANG_SUBMIT,      /* POST /job/submit, record the id, poll after poll_after */
    SLURM_GANG_CANCEL,      /* DELETE /job/<job_id> */
    SLURM_GANG_WAIT,        /* pending: the pods stay unbound */
    SLURM_GANG_ALLOCATED,   /* running: the pods may bind to job's nodes */
    SLURM_GANG_ENDED        /* Slurm ended it: stop the TrainJob (Failed, pods evicted) */
};

struct slurm_gang_decision {
    enum slurm_gang_action action;
    int64_t job_id;           /* the Slurm job concerned, 0 for none */
    int record_id;            /* write annotation SLURM_ANNOTATION_JOB_ID = job_id */
    int forget_id;            /* remove that annotation (suspended: a resume submits anew) */
    const char *cond_status;  /* SLURM_CONDITION to set ("True"/"False"), NULL: leave it */
    const char *cond_reason;  /* SLURM_REASON_* */
    const char *cond_message; /* in the arena given */
    int64_t poll_after;       /* seconds until slurmrestd is asked again, 0: no need */
};

/*
 * slurm_gang_decide - the next step for one TrainJob on the Slurm backend. Pure.
 * In: trainjob (metadata.annotations[SLURM_ANNOTATION_JOB_ID], metadata.deletionTimestamp,
 * spec.suspend, status conditions Complete/Failed), lookup and job (FOUND: the job found by id
 * when the annotation is set, else by comment). Rules:
 *   - no recorded id: FIND first; a live job found is recorded (or cancelled when the TrainJob
 *     is finished, suspended or deleting); none found: SUBMIT (unless stopping): never two jobs
 *     per gang, even after a restart between submit and the annotation write;
 *   - recorded id: LOOKUP first; then stopping -> CANCEL a live job (suspend also forgets the
 *     id); pending -> WAIT (poll 5 s); running -> ALLOCATED (poll 15 s); COMPLETING -> ask again
 *     in 2 s for the final state; ended or forgotten -> ENDED with Slurm's state and reason.
 * Strings of *out live in a. Returns COMMON_OK, COMMON_EINVAL (the annotation is not a positive
 * integer: err names it), COMMON_ENOMEM.
 */
enum common_rc slurm_gang_decide(struct common_arena *a, const json_t *trainjob,
                                 enum slurm_lookup lookup, const struct slurm_job_state *job,
                                 struct slurm_gang_decision *out, struct common_error *err);

/* ---- the finalizer: a deleted TrainJob's Slurm job is cancelled, even across restarts ---- */

/* TrainJob finalizer held while the TrainJob may have a Slurm job to cancel. */
#define SLURM_FINALIZER "trainsched.io/slurm-job"
/* seconds after metadata.deletionTimestamp when trainsched stops trying to cancel and lets the
 * TrainJob go (an unreachable slurmrestd never keeps a TrainJob forever) */
#define SLURM_RELEASE_GIVE_UP_S 900

enum slurm_finalizer_action {
    SLURM_FINALIZER_NOTHING = 0,
    SLURM_FINALIZER_ADD,     /* add SLURM_FINALIZER before anything is submitted */
    SLURM_FINALIZER_RELEASE, /* cancel the job (by id, else by comment), then remove it */
    SLURM_FINALIZER_REMOVE   /* remove it without cancelling; why says what was left */
};

struct slurm_finalizer_decision {
    enum slurm_finalizer_action action;
    const char *why; /* REMOVE: a sentence for a Warning Event (in the arena), else NULL */
};

/*
 * slurm_finalizer_decide - what to do with the TrainJob's SLURM_FINALIZER. Pure.
 * In: trainjob (metadata.finalizers, metadata.deletionTimestamp,
 * metadata.annotations[SLURM_ANNOTATION_JOB_ID]); selected = the TrainJob is on the Slurm
 * backend (slurm_sync_selected); have_slurm = this trainsched talks to slurmrestd; now and
 * give_up_s in seconds (Unix time; 0: SLURM_RELEASE_GIVE_UP_S). Rules:
 *   - not being deleted: ADD when selected, have_slurm and the finalizer is missing;
 *   - being deleted with the finalizer: REMOVE when this trainsched has no Slurm backend (nobody
 *     could cancel; the finalizer must not strand the TrainJob) or give_up_s have passed since
 *     deletionTimestamp (slurmrestd unreachable: why names the job to scancel by hand), else
 *     RELEASE. The finalizer does not depend on the runtime's annotation: a runtime that left
 *     the backend still gets its jobs cancelled and its finalizers removed;
 *   - otherwise NOTHING.
 * Returns COMMON_OK; COMMON_EINVAL (deletionTimestamp is not an RFC 3339 time: err names it);
 * COMMON_ENOMEM.
 */
enum common_rc slurm_finalizer_decide(struct common_arena *a, const json_t *trainjob, int selected,
                                      int have_slurm, int64_t now, int64_t give_up_s,
                                      struct slurm_finalizer_decision *out,
                                      struct common_error *err);

/* slurm_has_finalizer - 1 when metadata.finalizers of obj holds SLURM_FINALIZER. Pure. */
int slurm_has_finalizer(const json_t *obj);

/*
 * slurm_node_in - whether slurm_name (a Kubernetes node's name, or the value of its node label
 * when the mapping uses one; NULL when the node lacks that label) is one of the Slurm nodes in
 * nodes_csv ("n1,n2": the PodGroup annotation trainsched.io/slurm-nodes). Pure; 1 or 0.
 */
int slurm_node_in(const char *slurm_name, const char *nodes_csv);

#endif
