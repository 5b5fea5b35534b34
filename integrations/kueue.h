/*
 * integrations/kueue.h - the Kueue backend's pure core: the Workload that Kueue's
 * trainer.kubeflow.org/trainjob integration makes for a TrainJob, computed offline.
 *
 * Kueue (sigs.k8s.io/kueue, v0.19 here) queues a TrainJob labelled kueue.x-k8s.io/queue-name:
 * it renders the JobSet that Trainer would make for it and asks for one podSet per replicated
 * job. trainsched's reconciler does not create the Workload (Kueue does); this core lets an
 * admin see, before submitting, what the queue will be asked for (`render --backend kueue`),
 * and the e2e tests check it against the Workload the real Kueue creates.
 *
 * No I/O, no clock: everything comes in as JSON, the Workload goes out as JSON.
 */
#ifndef INTEGRATIONS_KUEUE_H
#define INTEGRATIONS_KUEUE_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"
#include "common/kube.h"

#define KUEUE_QUEUE_LABEL "kueue.x-k8s.io/queue-name"
/* the Kueue release the e2e suite runs, without the v: KUEUE_VERSION of
 * tests/e2e/testbed/versions.env, the one place it is written (CMakeLists.txt reads it) */
#define KUEUE_TESTED_VERSION TS_KUEUE_TESTED
/* Kueue's Workloads (kueue.x-k8s.io/v1beta2): what the kueue backend requires the cluster to
 * serve */
extern const struct common_kube_resource kueue_workloads;
#define KUEUE_PRIORITY_LABEL "kueue.x-k8s.io/priority-class"
#define KUEUE_RUNTIME_PATCH_MANAGER "kueue.x-k8s.io/manager"
/* the multi-layer slice request (Kueue v0.17 alpha, v0.19 beta and on by default): a JSON array
 * of 1 to 3 {"topology": <node label>, "size": <pods>}, coarsest first */
#define KUEUE_SLICE_LAYERS_ANN "kueue.x-k8s.io/podset-slice-required-topology-constraints"
#define KUEUE_WORKLOAD_NAME_MAX 253      /* object names */
#define KUEUE_WORKLOAD_NAME_SHORT_MAX 63 /* Kueue's ShortWorkloadNames gate (alpha in v0.17) */

/*
 * kueue_workload_name - the Workload name Kueue gives the Workload of an owner object
 * (GetWorkloadNameForOwnerWithGVK, pkg/controller/jobframework/workload_names.go):
 *   prefix = lower(kind) "-" owner_name, cut to max - 6 bytes;
 *   name   = prefix "-" first 5 hex digits of SHA-1(kind "\n" group "\n" owner_name "\n" uid),
 * where max is KUEUE_WORKLOAD_NAME_MAX, or KUEUE_WORKLOAD_NAME_SHORT_MAX when short_names is
 * set. In: kind "TrainJob" (as in the GVK, not lower-cased), group "trainer.kubeflow.org",
 * owner_name and owner_uid as the API server holds them. Out: out (size >= max + 1) holds the
 * name. Returns COMMON_OK; COMMON_EINVAL when an input is NULL or empty (the message names it)
 * or out is too small; COMMON_ENOMEM when hashing fails.
 */
enum common_rc kueue_workload_name(const char *kind, const char *group, const char *owner_name,
                                   const char *owner_uid, int short_names, char *out, size_t size,
                                   struct common_error *err);

struct kueue_preview_opts {
    int short_names;       /* the ShortWorkloadNames gate: names of at most 63 characters */
    int no_tas;            /* 1: the TopologyAwareScheduling gate is off (it is on by default since
                              Kueue v0.14): podSets get no topologyRequest */
    const json_t *classes; /* MAY: array of WorkloadPriorityClass (kueue.x-k8s.io) and
                              PriorityClass (scheduling.k8s.io) objects to take priorities
                              from, as Kueue reads them from the cluster; NULL: none known */
};

/*
 * kueue_workload_preview - the Workload (kueue.x-k8s.io/v1beta2) Kueue creates for trainjob.
 * In: trainjob = the TrainJob (metadata.name, namespace, uid, labels, annotations); jobset =
 * the JobSet trainsched renders for it (what Trainer makes, which is what Kueue renders), with
 * spec.replicatedJobs[].{name, replicas, template.spec.{parallelism, completions, template}}.
 * Both borrowed. o may be NULL (defaults).
 * Out: *workload, a new reference:
 *   metadata: name (kueue_workload_name), namespace, labels {kueue.x-k8s.io/job-uid: uid}
 *     (left out, as Kueue does, when the uid is not a valid label value),
 *     annotations (the TrainJob's provreq.kueue.x-k8s.io/ ones), finalizers
 *     [kueue.x-k8s.io/resource-in-use], the TrainJob as controller ownerReference;
 *   spec: queueName (the queue label), podSets[] {name (lower-cased replicated job name),
 *     count = replicas * min(parallelism, completions) (parallelism defaults to 1, completions
 *     to parallelism), template (labels and annotations of the pod template metadata, and its
 *     spec), topologyRequest (unless o->no_tas: podIndexLabel
 *     batch.kubernetes.io/job-completion-index, subGroupIndexLabel jobset.sigs.k8s.io/job-index,
 *     subGroupCount = replicas, and required/preferred/unconstrained and slice fields from the
 *     pod template's kueue.x-k8s.io/podset-* annotations; the multi-layer slice annotation
 *     KUEUE_SLICE_LAYERS_ANN becomes podsetSliceRequiredTopologyConstraints, in place of
 *     podSetSliceRequiredTopology/podSetSliceSize; a malformed one is COMMON_EINVAL naming it)},
 * priorityClassRef and priority (below), maximumExecutionTimeSeconds (label
 * kueue.x-k8s.io/max-exec-time-seconds when a positive int32). Priority as Kueue's ExtractPriority:
 * the label kueue.x-k8s.io/priority-class names a WorkloadPriorityClass; else the first pod
 * template with spec.priorityClassName names a PriorityClass; else the PriorityClass with
 * globalDefault true (lowest value) among o->classes; else priority 0 and no ref. A named class
 * missing from o->classes gives the ref without priority and a note in *note (a static string, or
 * NULL when all is known). The template is before the API server's defaulting (Kueue dry-runs a
 * create to default it). Returns COMMON_OK; COMMON_EINVAL (the message names the field:
 * metadata.uid, spec.replicatedJobs[i].name, a podset annotation that does not parse, ...);
 * COMMON_ENOMEM.
 */
enum common_rc kueue_workload_preview(const json_t *trainjob, const json_t *jobset,
                                      const struct kueue_preview_opts *o, json_t **workload,
                                      const char **note, struct common_error *err);

/*
 * kueue_queue_name - the LocalQueue a TrainJob names (label kueue.x-k8s.io/queue-name), or
 * NULL when it carries none (or an empty one). Borrowed from trainjob.
 */
const char *kueue_queue_name(const json_t *trainjob);

/*
 * kueue_has_runtime_patch - 1 when spec.runtimePatches holds an entry of manager
 * kueue.x-k8s.io/manager (Kueue's webhook adds one to every TrainJob it manages, at creation),
 * else 0.
 */
int kueue_has_runtime_patch(const json_t *trainjob);

#endif
