/*
 * reconciler/core.h - the pure decisions of one TrainJob reconcile.
 *
 * The glue (reconciler/reconciler.c) reads objects from its watch caches and the API server,
 * calls these functions, and does what they say. They take decoded JSON (jansson) and an
 * explicit `now`; no I/O, no clock, no globals, so every rule is tested with fixtures.
 * Source: ../shared/reference/trainer.md §2.1 (loop), §2.2 (runtime snapshot), §2.8 (what is
 * created and when it is updated), §2.9 (suspend/resume), §4 (status).
 */
#ifndef RECONCILER_CORE_H
#define RECONCILER_CORE_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"
#include "trainjob/trainjob.h"

/* Trainer's value of spec.managedBy that this controller serves (trainer.md §1.2). */
#define RC_MANAGED_BY "trainer.kubeflow.org/trainjob-controller"

/*
 * The condition the reconciler adds while it cannot build a TrainJob's objects (Trainer has
 * none: it only records an Event). Status "False"; reason one of RC_REASON_*; message names the
 * field or object. Removed again once the objects are built, so a healthy TrainJob's status is
 * exactly Trainer's.
 */
#define RC_COND_CREATED "ResourcesCreated"
#define RC_REASON_INVALID_TRAINJOB "InvalidTrainJob" /* the TrainJob fails validation */
#define RC_REASON_INVALID_RUNTIME "InvalidRuntime"   /* the runtime fails validation */
#define RC_REASON_RUNTIME_NOT_FOUND "TrainingRuntimeNotFound"
#define RC_REASON_INVALID_SNAPSHOT "InvalidRuntimeSnapshot" /* §2.2 rejection of the ConfigMap */
#define RC_REASON_UNSUPPORTED "UnsupportedRuntime"          /* a policy this version cannot build */
#define RC_REASON_CREATION_FAILED "TrainJobResourcesCreationFailed" /* the API refused a child */
/* the runtime's backend needs an API the cluster does not serve (native: scheduling.k8s.io/
 * v1beta1 or v1alpha2, neither served); nothing is written */
#define RC_REASON_BACKEND_UNAVAILABLE "BackendUnavailable"
/* the TrainJob names a Kueue LocalQueue (label kueue.x-k8s.io/queue-name) but Kueue did not
 * take it: no runtimePatches entry of manager kueue.x-k8s.io/manager, which Kueue's webhook adds
 * to every TrainJob it queues (Kueue not installed, or without the trainjob framework). Nothing
 * is built: the TrainJob would otherwise run outside its queue's quota. */
#define RC_REASON_QUEUE_WITHOUT_KUEUE "QueueLabelWithoutKueue"
/*
 * The condition a TrainJob gets when its backend could not carry all it asks for into the gang
 * objects (the native backend: a topology request the API has no field for, a shared claim on
 * 1.36, or a field the API server dropped because its feature gate is off). Status "False",
 * reason the note's (TopologyNotExpressible, ClaimNotCarried) or RC_REASON_FIELD_DROPPED;
 * message names the annotation or field (and the gate). The objects are still written: the
 * gang runs without what is named. Removed once everything is carried.
 */
#define RC_COND_GANG_CARRIED "GangConstraintsCarried"
#define RC_REASON_FIELD_DROPPED "FieldDroppedByAPIServer"
/* the JobSet exists but cannot create its Jobs (the JobSet controller's Event reason) */
#define RC_REASON_JOB_CREATION_FAILED "JobCreationFailed"

/*
 * rc_queue_without_kueue - when trainjob carries the label kueue.x-k8s.io/queue-name but no
 * spec.runtimePatches entry of manager kueue.x-k8s.io/manager (so Kueue's webhook never saw it),
 * writes the condition message into msg and returns 1; else 0. The message names the label and
 * the queue, the field Kueue writes (spec.runtimePatches) and the Kueue version that writes it
 * (v0.17); a suspended TrainJob (Kueue's webhook suspends what it queues) is said to point at a
 * Kueue older than v0.17, which wrote spec.podSpecOverrides instead. msg: 1024 bytes hold it whole.
 */
int rc_queue_without_kueue(const json_t *trainjob, char *msg, size_t size);

/* rc_managed - 1 when spec.managedBy is unset or RC_MANAGED_BY (ours to reconcile), else 0. */
int rc_managed(const json_t *trainjob);

/*
 * rc_controller_owner - the name and uid of the TrainJob that controls obj (its
 * metadata.ownerReferences entry with kind TrainJob, apiVersion trainer.kubeflow.org/...,
 * controller true). Strings borrowed from obj. Returns 1 when there is one, else 0.
 */
int rc_controller_owner(const json_t *obj, const char **name, const char **uid);

/*
 * rc_snapshot_runtime - the runtime stored in a snapshot ConfigMap <name>-runtime-snapshot
 * (§2.2), checked as Trainer checks it before using it.
 * In: trainjob (its metadata.uid and the defaulted spec.runtimeRef), cm = the ConfigMap.
 * Out: *runtime, a new reference (the decoded `data.runtime` YAML document).
 * Returns COMMON_OK; COMMON_EINVAL when the ConfigMap is not controlled by this TrainJob (owner
 * uid differs), has no data.runtime, the YAML does not parse to one object, or the stored
 * object's metadata.name / kind / apiVersion group differ from spec.runtimeRef; the message
 * names which ("runtime snapshot ns/x-runtime-snapshot: ..."). COMMON_ENOMEM.
 */
enum common_rc rc_snapshot_runtime(const json_t *trainjob, const json_t *cm, json_t **runtime,
                                   struct common_error *err);

/* What to do with one rendered child object. */
enum rc_action {
    RC_SKIP,   /* leave the existing object alone */
    RC_CREATE, /* create it (POST) only when absent; never update (snapshot, MPI Secret) */
    RC_APPLY   /* server-side apply (fieldManager=trainsched, force) */
};

/* The kinds of child the reconciler writes. */
enum rc_child_kind {
    RC_CHILD_SNAPSHOT,  /* ConfigMap <name>-runtime-snapshot */
    RC_CHILD_CONFIGMAP, /* other ConfigMaps (MPI hostfile): applied every reconcile */
    RC_CHILD_SECRET,    /* Secrets (MPI SSH keys): created once, immutable */
    RC_CHILD_JOBSET,    /* jobset.x-k8s.io JobSet */
    RC_CHILD_PODGROUP,  /* the gang objects: scheduling.x-k8s.io, scheduling.volcano.sh,
                           scheduling.run.ai or scheduling.k8s.io (native: v1alpha2 PodGroup,
                           v1beta1 Workload and PodGroup) PodGroups */
    RC_CHILD_OTHER      /* anything else the renderer returned: applied */
};

/* rc_child_kind_of - the kind of a rendered object, from its apiVersion, kind and name. */
enum rc_child_kind rc_child_kind_of(const json_t *obj);

/*
 * rc_child_action - Trainer's update rules (§2.8, §2.9) for one child.
 * In: trainjob (spec.suspend), kind, existing = the object in the cluster or NULL when absent
 * (a watch cache may lag: a RC_CREATE of an object that exists answers AlreadyExists, which
 * the glue treats as success).
 *  - absent: snapshot and Secret RC_CREATE, everything else RC_APPLY;
 *  - snapshot, Secret: RC_SKIP;  other ConfigMaps and OTHER: RC_APPLY;
 *  - JobSet: RC_APPLY while spec.suspend is true or the existing JobSet has spec.suspend true
 *    (that is how a resume reaches it), else RC_SKIP (a running JobSet is never modified);
 *  - PodGroup: RC_APPLY while spec.suspend is true, else RC_SKIP.
 */
enum rc_action rc_child_action(const json_t *trainjob, enum rc_child_kind kind,
                               const json_t *existing);

/*
 * rc_child_replace - 1 when the rendered child cannot be applied over existing because a field
 * the API server keeps immutable differs, so it is deleted and created again (only reached
 * while rc_child_action says RC_APPLY, i.e. the TrainJob is suspended):
 *  - a native PodGroup scheduling.k8s.io/v1alpha2 (Kubernetes 1.36), whose whole spec is
 *    immutable (schedulingPolicy.gang.minCount among it), when its spec.schedulingPolicy differs;
 *  - a native scheduling.k8s.io/v1beta1 PodGroup (Kubernetes 1.37) when one of the immutable
 *    fields trainsched writes differs: workloadRef, schedulingConstraints, resourceClaims,
 *    disruptionMode (unset is {single: {}}, the default), priorityClassName, or the policy
 *    kind (gang / basic); spec.schedulingPolicy.gang.minCount is mutable in 1.37: a change of
 *    it alone is applied, not replaced. Fields the server fills (priority, preemptionPolicy)
 *    are not compared;
 *  - a native v1beta1 Workload when spec.controllerRef, the podGroupTemplates' names (none may
 *    be added or removed) or a template's immutable fields (as the PodGroup's) differ.
 * 0 otherwise, and when either is NULL. Fields the API server drops (rc_native_dropped) must be
 * stripped from rendered first (rc_native_strip), or a replace would never end.
 */
int rc_child_replace(const json_t *rendered, const json_t *existing);

/* The native v1beta1 fields an API server drops when their feature gate is off. */
#define RC_NATIVE_TOPOLOGY 1u /* schedulingConstraints: TopologyAwareWorkloadScheduling (alpha) */
#define RC_NATIVE_CLAIMS 2u   /* resourceClaims: DRAWorkloadResourceClaims (beta) */

/* rc_native_fields - the RC_NATIVE_* fields obj (a native v1beta1 PodGroup or Workload; its
 * podGroupTemplates for a Workload) sets; 0 for any other object. */
unsigned rc_native_fields(const json_t *obj);

/*
 * rc_native_dropped - the RC_NATIVE_* fields that sent (what was applied or created) set and
 * stored (the API server's answer: the object as it keeps it) lacks: the server dropped them,
 * its gate being off. 0 when nothing was dropped or either is NULL.
 */
unsigned rc_native_dropped(const json_t *sent, const json_t *stored);

/* rc_native_strip - remove the fields of bits from obj (in place; a native v1beta1 PodGroup or
 * Workload, else nothing). */
void rc_native_strip(json_t *obj, unsigned bits);

/* rc_native_field_gate - for one RC_NATIVE_* bit: the PodGroup field ("spec.schedulingConstraints")
 * and the feature gate that keeps it (static strings); NULL for an unknown bit. */
const char *rc_native_field_gate(unsigned bit, const char **gate);

/*
 * rc_apply_body - child as the reconciler sends it to the API server (server-side apply, or
 * create): a deep copy without the map fields that are empty, at any depth. A map field is
 * one of RC_EMPTY_MAP_FIELDS (metadata labels and annotations, nodeSelector, resource requests,
 * limits and overhead, ConfigMap data and binaryData, matchLabels, CSI volumeAttributes, the
 * PodGroups' minResources and minTaskMember, and the objects made of maps alone: a template's
 * metadata, a container's resources): for the API server an empty map is the same as
 * none, but server-side apply turns a map the applier sends as {} into null once it removes
 * the last key this manager owned there, and the CRD's structural schema then refuses the
 * whole apply ("... Invalid value: \"null\": ... must be of type object"; kubernetes/kubernetes
 * #135841). That happens when a runtime's pod template has `annotations: {}` or
 * `nodeSelector: {}` (as Helm and kustomize write them) and Kueue's eviction empties its
 * runtimePatches entry. Empty objects of any other field are kept: some mean something
 * (`emptyDir: {}`, a LabelSelector `{}` that matches everything). Returns a new reference, or
 * NULL on no memory (child NULL: NULL).
 */
json_t *rc_apply_body(const json_t *child);

/* the names of the map fields rc_apply_body leaves out when empty (NULL-terminated) */
extern const char *const RC_EMPTY_MAP_FIELDS[];

/* What to do when the API server refused the apply of a JobSet (rc_jobset_refused). */
enum rc_refused {
    RC_REFUSED_FAIL,    /* report it: ResourcesCreated=False, as for any refused child */
    RC_REFUSED_REPLACE, /* delete the suspended JobSet (uid and resourceVersion preconditions)
                           and create the rendered one in its place */
    RC_REFUSED_SUSPEND  /* suspend the running JobSet alone (spec.suspend: true, which JobSet
                           allows); the next reconcile sees it suspended and replaces it */
};

/*
 * rc_jobset_refused - the answer to a refused JobSet apply (pure).
 * In: trainjob (spec.suspend), existing = the JobSet as cached (spec.suspend,
 * metadata.deletionTimestamp) or NULL, code and msg = the error of the apply (common_kube's
 * message: "PATCH path: 422 Invalid: <the Status message>", which may be cut at
 * COMMON_ERROR_MSG_MAX).
 * JobSet's validating webhook (sigs.k8s.io/jobset, pkg/webhooks/jobset_webhook.go,
 * ValidateUpdate) keeps spec.replicatedJobs immutable; while the old or the new JobSet is
 * suspended it lets only the pod templates' labels, annotations, nodeSelector, tolerations and
 * schedulingGates change. So a JobSet written by an older trainsched (pod templates without
 * schedulerName, spec.schedulingGroup, ...) or of a TrainJob resized while suspended cannot be
 * brought up to date by an apply. The refusal is recognised by code COMMON_EINVAL and a message
 * holding "field is immutable" (apimachinery's ValidateImmutableField), "Value is immutable"
 * (the CEL rules of JobSet's CRD) or "spec.replicatedJobs: Invalid value:" (the head of the
 * replicated-jobs refusal, whose tail a long message may lose). Then:
 *  - the existing JobSet suspended (and not being deleted): RC_REFUSED_REPLACE (it has no
 *    pods to lose);
 *  - running while the TrainJob is suspended: RC_REFUSED_SUSPEND;
 *  - otherwise (another refusal, no existing JobSet or one without metadata.uid and
 *    metadata.resourceVersion, which the delete's preconditions need, a running TrainJob and
 *    JobSet, a JobSet being deleted): RC_REFUSED_FAIL. A running JobSet is never replaced.
 */
enum rc_refused rc_jobset_refused(const json_t *trainjob, const json_t *existing,
                                  enum common_rc code, const char *msg);

/*
 * rc_status_patch - the JSON merge patch (RFC 7386) of the status subresource that turns
 * old_status into new_status: {"status": {key: new value | null}} for each key that changed,
 * appeared or disappeared (inside objects present on both sides, recursively, since a merge
 * patch merges objects field by field). Only changed keys are sent, so fields other writers own
 * (trainerStatus, written by the status server) are not overwritten with a stale copy. An
 * emptied status is sent as {"conditions": []} (the CRD requires status minProperties 1).
 * Returns a new reference, or NULL when nothing changed or on no memory (*nomem set then).
 */
json_t *rc_status_patch(const json_t *old_status, const json_t *new_status, int *nomem);

/*
 * rc_first_error - "path: Type: detail" of the first field error in errs (or err's message
 * when the list is empty), for a condition message. Allocated in errs' arena; NULL on no
 * memory.
 */
const char *rc_first_error(const struct trainjob_errors *errs, const struct common_error *err);

/*
 * rc_error_doc_is_runtime - 1 when the first field error of errs belongs to runtime (the
 * document it was found in), so the reason is RC_REASON_INVALID_RUNTIME, else 0.
 */
int rc_error_doc_is_runtime(const struct trainjob_errors *errs, const json_t *runtime);

/*
 * rc_jobset_without_jobs - 1 when jobset (as read) is neither suspended nor finished
 * (Completed/Failed True) and some replicated job of spec.replicatedJobs has no Job to show:
 * no entry in status.replicatedJobsStatus, or one whose counters (ready, succeeded, failed,
 * active, suspended) are all 0. That is how a JobSet whose Jobs the API server refuses looks:
 * the JobSet controller sets no condition for it, it only records Events. 0 otherwise (NULL
 * jobset included).
 */
int rc_jobset_without_jobs(const json_t *jobset);

/*
 * rc_jobset_creation_failure - why jobset cannot create its Jobs: the message of the newest
 * Event about it (involvedObject.uid or regarding.uid = jobset's metadata.uid) with reason
 * JobCreationFailed, as the JobSet controller records it (the API server's refusal, e.g.
 * "job x-node-0 creation failed, err: Job.batch \"x-node-0\" is invalid: ..."). events is an
 * array of core v1 or events.k8s.io v1 Events in any order; newest by eventTime, else
 * lastTimestamp, else metadata.creationTimestamp (RFC 3339; ties: the later in the array).
 * Returns NULL when rc_jobset_without_jobs(jobset) is 0 (its Jobs exist now: an old Event no
 * longer matters) or no such Event exists; the string is borrowed from events.
 */
const char *rc_jobset_creation_failure(const json_t *jobset, const json_t *events);

/*
 * rc_transient - 1 when an error code is worth retrying with backoff: transport, timeout,
 * 5xx/429 (COMMON_EAPI), conflicts, 403 (RBAC may be fixed), 404 (a cache that lags, a CRD
 * not installed yet), no memory; 0 when the same request would fail the same way until an
 * object changes: COMMON_EINVAL (400/422, validation), COMMON_EUNSUPPORTED, COMMON_ETOOBIG.
 */
int rc_transient(enum common_rc rc);

#endif
