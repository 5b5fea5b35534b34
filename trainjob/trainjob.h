/*
 * trainjob/trainjob.h - TrainJob + runtime -> the objects Kubeflow Trainer v2.3 creates.
 *
 * This module is pure: it takes decoded JSON (jansson) of one TrainJob
 * (trainer.kubeflow.org/v1alpha1) and of the TrainingRuntime or ClusterTrainingRuntime it
 * names, and returns the objects the reconciler applies, in apply order:
 *   1. ConfigMap <name>-runtime-snapshot (data.runtime = the runtime as YAML),
 *   2. Secrets and ConfigMaps of the ML policy (MPI: <name>-mpi-ssh-auth, <name>-mpi-hostfile),
 *   3. the JobSet (jobset.x-k8s.io/v1alpha2) <name>,
 *   4. the gang object per podGroupPolicy (or per options.gang, which integrations/backend.h
 *      sets from the runtime's backend): a coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1)
 *      or a Volcano PodGroup (scheduling.volcano.sh/v1beta1). Other backends' objects (the
 *      native PodGroup) are added by integrations/ after this core.
 * Before building it applies what the API server and Trainer's admission webhook would: the
 * CRD schema (types, unknown fields, bounds, CEL rules; ../shared/reference/trainer.md §1),
 * schema defaults (§5.0) and the webhook checks (§5.1, §5.2). Every rule and number comes from
 * ../shared/reference/trainer.md sections 1-3 and 7.
 *
 * No I/O, no clock, no globals: randomness (MPI SSH keys) comes in through the options.
 */
#ifndef TRAINJOB_TRAINJOB_H
#define TRAINJOB_TRAINJOB_H

#include <jansson.h>
#include <stddef.h>

#include "common/arena.h"
#include "common/error.h"

/* One field error, as the API server or the webhook would report it. */
struct trainjob_field_error {
    const char *path;   /* field path, e.g. "spec.trainer.numNodes" */
    const char *type;   /* "Invalid", "Required", "Forbidden", "NotSupported", "TooLong",
                           "TooMany", "Duplicate", "Unknown" (an unknown field) */
    const char *detail; /* what rule was broken, e.g. "must be greater than or equal to 0" */
    const json_t *node; /* the offending value (for positions), or NULL */
    /* the value printed when it is not node itself (Trainer's value in Go's encoding: fields
     * in declaration order, defaults filled), or NULL to print node */
    const json_t *value;
    const json_t *doc; /* the document it belongs to (the TrainJob or the runtime) */
    /* for an unknown field: the object that holds it and the key as written (positions point
     * at the key, not at its value); for a null list item (null has no position of its own):
     * the object and key holding the list; NULL otherwise */
    const json_t *parent;
    const char *key;
};

/* A list of field errors and warnings; items live in the arena given at init. */
struct trainjob_errors {
    struct trainjob_field_error *items;
    size_t n, cap;
    const char **warnings;
    size_t nwarn, capwarn;
    int oom; /* an error or warning could not be recorded: the list is incomplete */
    struct common_arena *arena;
};

/* trainjob_errors_init - an empty list whose items live in arena a. */
void trainjob_errors_init(struct trainjob_errors *e, struct common_arena *a);

/*
 * trainjob_errors_format - error i in apimachinery's field error form, in the arena:
 * "path: Invalid value: <value as JSON>: detail" for the types that carry a value (Invalid,
 * NotSupported, Duplicate, TooMany, NotFound; values over 4096 bytes are cut with "..."),
 * "path: Required value: detail" (Forbidden, Too long) for the others. NULL on no memory.
 */
const char *trainjob_errors_format(const struct trainjob_errors *e, size_t i);

/*
 * trainjob_runtime_ref_json - spec.runtimeRef of trainjob as Trainer's field errors print it:
 * Go's encoding of its RuntimeRef, {"name":...,"apiGroup":...,"kind":...} in that order whatever
 * the input's order, with the CRD's defaults (apiGroup trainer.kubeflow.org, kind
 * ClusterTrainingRuntime) where absent; compact JSON text in arena a. NULL when trainjob has no
 * spec.runtimeRef object, or out of memory.
 */
const char *trainjob_runtime_ref_json(struct common_arena *a, const json_t *trainjob);

/*
 * MPI SSH key generator: a new key pair as a PEM private key ("EC PRIVATE KEY", ECDSA P-521)
 * and an authorized_keys line ("ecdsa-sha2-nistp521 AAAA..."), both allocated in arena a.
 * Returns COMMON_OK or an error with a message. common/sshkey.h provides the OpenSSL one.
 */
typedef enum common_rc (*trainjob_keygen_fn)(struct common_arena *a, char **private_pem,
                                             char **public_line, struct common_error *err);

/*
 * Whether a cluster-scoped object exists, for the checks that need the cluster (kind
 * "PriorityClass": Trainer's Volcano rule). Returns COMMON_OK when it exists, COMMON_ENOTFOUND
 * when it does not, anything else when the caller cannot tell (no cache of that kind, cache not
 * synced: err says why); the check then becomes a warning.
 */
typedef enum common_rc (*trainjob_exists_fn)(void *ctx, const char *kind, const char *name,
                                             struct common_error *err);

/*
 * The gang object trainjob_render writes. TRAINJOB_GANG_FROM_RUNTIME follows the runtime's
 * spec.podGroupPolicy as Trainer does (coscheduling, volcano, or none when unset). The others
 * override it for a backend chosen elsewhere (integrations/backend.h): NONE writes no gang
 * object and no gang label (the backend, e.g. native or kueue, does its own); COSCHEDULING and
 * VOLCANO write that PodGroup even when podGroupPolicy is unset (with its defaults:
 * scheduleTimeoutSeconds 60; no networkTopology).
 */
enum trainjob_gang {
    TRAINJOB_GANG_FROM_RUNTIME = 0,
    TRAINJOB_GANG_NONE,
    TRAINJOB_GANG_COSCHEDULING,
    TRAINJOB_GANG_VOLCANO,
};

/*
 * Kubeflow Trainer's TrainJobStatus feature (alpha gate, off by default): where the training
 * processes report progress (trainjob/trainerstatus.c writes the env, token volume and the
 * <name>-tls-config ConfigMap; statusserver/ serves the endpoint).
 */
struct trainjob_status_server {
    const char *url_base; /* "https://<service>.<namespace>.svc:<port>", no trailing '/' */
    const char *ca_crt;   /* PEM the status server's certificate chains to, for the ConfigMap
                             <name>-tls-config; NULL: the ConfigMap is left out with a warning
                             (render without a CA) */
};

struct trainjob_options {
    const char *default_namespace;   /* for a TrainJob without metadata.namespace; "default" */
    const char *placeholder_uid;     /* used when metadata.uid is missing; NULL: derived from
                                        namespace/name so output is reproducible */
    trainjob_keygen_fn keygen;       /* MUST be set for MPI runtimes */
    trainjob_exists_fn exists;       /* MAY: NULL (render) means "no cluster": a warning says
                                        what could not be checked */
    void *exists_ctx;                /* passed to exists */
    const char *gang_scheduler_name; /* coscheduling: spec.schedulerName of every pod template,
                                        as the pod webhook sets it; NULL or "": left as is */
    int no_gang_marks;               /* 1: leave the gang marks below out of the pod templates
                                        (no extender is wired: the virtual resource would be on
                                        no node, and the pods would stay Pending) */
    enum trainjob_gang gang;         /* which gang object this build writes: integrations/
                                        backend.h sets it from the chosen backend; 0 = the
                                        runtime's podGroupPolicy, as Trainer does */
    const struct trainjob_status_server *status_server; /* MAY: NULL = the TrainJobStatus
                                                           feature is off (Trainer's default) */
    /* the volcano backend's settings (integrations/volcano.h; serve config backends.volcano):
     * queue: the queue of a TrainJob whose TrainJob and runtime name none (NULL or "": none,
     * Volcano then uses its queue "default"); tiers: "LEVEL=TIER,..." the topology levels'
     * HyperNode tiers (NULL or "": the built-in mapping VOLCANO_DEFAULT_TIERS) */
    const char *volcano_queue;
    const char *volcano_tiers;
    const char *kai_default_queue; /* kai backend: the serve setting backends.kai.queue, the
                                      queue of TrainJobs whose TrainJob and runtime name none;
                                      NULL or "": "default-queue" (integrations/kai.h) */
    int kueue_view; /* 1: the JobSet as Kueue's TrainJob integration renders it to build its
                       Workload (Kueue v0.19, pkg/controller/jobs/trainjob getChildJobSet): the
                       runtime info and Trainer's JobSet builder (counts, initializer and trainer
                       overrides, the ML policy's rewrite of the trainer command, gang pod
                       labels) without the JobSet plugin's merge of what the ML policy and the
                       TrainJobStatus feature add to the pod templates (env, ports, volumes,
                       volume mounts). Not a JobSet to apply. */
    const json_t *kueue_classes; /* kueue backend: the WorkloadPriorityClass and PriorityClass
                                    objects the caller has (render: those of its input files),
                                    for the Workload preview's priority; NULL: none */
};

/*
 * Gang marks in the JobSet's pod templates (coscheduling podGroupPolicy). What trainsched's pod
 * webhook adds to a gang pod at creation (webhook/handlers.h, mutate-pod) is written into the
 * templates instead, so the pods the reconciler's JobSets create reach the extender even while
 * the webhook is down: the virtual extended resource TRAINJOB_GANG_RESOURCE "1" in requests and
 * limits of the first container (where missing), spec.schedulerName when the options name one,
 * and the label TRAINJOB_GANG_MARKED_LABEL: "true", which the shipped pod webhook's
 * objectSelector excludes (those pods need no webhook). The marks are left out of the
 * PodGroup's minResources, which stays as Trainer computes it.
 */
#define TRAINJOB_GANG_RESOURCE "trainsched.io/gang" /* = WEBHOOK_GANG_RESOURCE */
#define TRAINJOB_GANG_MARKED_LABEL "trainsched.io/gang-marked"

struct trainjob_output {
    json_t *objects;               /* new reference: array of objects in apply order */
    const char *skipped;           /* non-NULL when nothing was rendered, with the reason */
    struct trainjob_errors errors; /* validation errors and warnings */
};

/*
 * trainjob_render - validate, default and translate.
 * In: trainjob = a TrainJob object; runtime = the TrainingRuntime/ClusterTrainingRuntime object
 * it references (the caller resolves the reference: see trainjob_runtime_key); both borrowed
 * and not modified. opts may be NULL for defaults (then MPI runtimes fail: no keygen).
 * Out: *out (zero it first; release objects with json_decref). Everything else lives in a.
 * Returns COMMON_OK with out->objects set, or with out->skipped set (managedBy names another
 * controller: nothing is rendered); COMMON_EINVAL when validation failed (out->errors lists
 * every field error; err has the first); COMMON_EUNSUPPORTED for a runtime policy this version
 * does not build, err names it; COMMON_ENOMEM.
 */
enum common_rc trainjob_render(struct common_arena *a, const json_t *trainjob,
                               const json_t *runtime, const struct trainjob_options *opts,
                               struct trainjob_output *out, struct common_error *err);

/*
 * trainjob_validate_trainjob - the API server's checks of a TrainJob on its own: CRD schema
 * (types, unknown fields, bounds), ObjectMeta (namespace, label and annotation keys and
 * values), the CEL rules, and that spec.runtimeRef names a supported runtime group. Errors go
 * to *errs (init it first). Returns COMMON_OK, COMMON_EINVAL (err has the first error),
 * COMMON_ENOMEM. trainjob_render runs it too; callers use it to report a bad TrainJob before
 * they look its runtime up.
 */
enum common_rc trainjob_validate_trainjob(const json_t *trainjob, struct trainjob_errors *errs,
                                          struct common_error *err);

/*
 * trainjob_validate_runtime - the schema, CEL and webhook checks (§5.2) of a TrainingRuntime or
 * ClusterTrainingRuntime on its own. Errors go to *errs (init it first). Returns COMMON_OK or
 * COMMON_EINVAL (err has the first error), COMMON_ENOMEM.
 */
enum common_rc trainjob_validate_runtime(const json_t *runtime, struct trainjob_errors *errs,
                                         struct common_error *err);

/*
 * trainjob_runtime_ref - the runtime a TrainJob names, after defaulting: kind
 * ("ClusterTrainingRuntime" unless set), apiGroup ("trainer.kubeflow.org" unless set), name
 * (NULL when missing) and the namespace to look in (the TrainJob's, NULL for cluster-scoped).
 * Strings are borrowed from trainjob or static. Returns COMMON_OK, or COMMON_EINVAL when
 * spec.runtimeRef.name is missing or not a string (err names the field).
 */
struct trainjob_ref {
    const char *kind, *api_group, *name, *namespace;
};
enum common_rc trainjob_runtime_ref(const json_t *trainjob, const char *default_namespace,
                                    struct trainjob_ref *ref, struct common_error *err);

/*
 * trainjob_gang_stage - where replicated job name of rjobs (a JobSet's spec.replicatedJobs,
 * borrowed) stands in a gang, by JobSet's dependsOn ({name, status: Ready|Complete}):
 *   TRAINJOB_STAGE_BEFORE  some replicated job dependsOn it with a status other than Ready (the
 *                          dataset and model initializers): it runs and ends before the gang
 *                          exists, so its pods are never members;
 *   TRAINJOB_STAGE_AFTER   its own dependsOn names, with status Ready, a replicated job that is
 *                          not BEFORE (the MPI launcher of the deepspeed and mlx runtimes, created
 *                          once the workers are Ready): it joins the gang's scheduler but is not
 *                          counted in the gang's minimum, else the gang waits for a pod that only
 *                          comes after it;
 *   TRAINJOB_STAGE_MEMBER  every other one (and name NULL).
 */
enum trainjob_stage { TRAINJOB_STAGE_MEMBER, TRAINJOB_STAGE_BEFORE, TRAINJOB_STAGE_AFTER };
enum trainjob_stage trainjob_gang_stage(const json_t *rjobs, const char *name);

/*
 * trainjob_pod_requests - the effective requests of one pod spec as the scheduler counts them:
 * the sum of containers and restartable init containers (sidecars), or the largest plain init
 * container plus the sidecars started before it when that is more, per resource. In: podspec
 * (a PodSpec object, borrowed). Out: *out, a new reference to {"cpu": "1500m", ...} (canonical
 * quantities). Returns COMMON_OK, COMMON_EINVAL for a value that is not a quantity (err names
 * it), COMMON_ENOMEM.
 */
enum common_rc trainjob_pod_requests(const json_t *podspec, json_t **out, struct common_error *err);

#endif
