/*
 * integrations/volcano.h - the volcano backend: Volcano's PodGroup (scheduling.volcano.sh/v1beta1)
 * as Kubeflow Trainer builds it (trainjob/podgroup.c), plus what Volcano users set and Trainer
 * leaves out (integrations/volcano.c): the queue's fallbacks, networkTopology from the gang's
 * topology request, minTaskMember per replicated job, and the pod keys Volcano's scheduler reads.
 * Source: volcano-sh/apis pkg/apis/scheduling/v1beta1 (PodGroupSpec, NetworkTopologySpec,
 * Queue), kubeflow/trainer pkg/runtime/framework/plugins/volcano. docs/backends.md "volcano".
 */
#ifndef INTEGRATIONS_VOLCANO_H
#define INTEGRATIONS_VOLCANO_H

#include <stdint.h>

#include "common/error.h"
#include "common/kube.h"

#define VOLCANO_API "scheduling.volcano.sh/v1beta1"
/* the TrainJob / runtime annotation naming the queue (Trainer reads it too) */
#define VOLCANO_QUEUE_ANNOTATION "scheduling.volcano.sh/queue-name"
/* the pod annotation tying a pod to its PodGroup (Trainer writes it) */
#define VOLCANO_GROUP_ANNOTATION "scheduling.k8s.io/group-name"
/* the pod annotation naming the task a pod belongs to (the keys of spec.minTaskMember) */
#define VOLCANO_TASK_ANNOTATION "volcano.sh/task-spec"
/* Volcano's scheduler name and the queue every Volcano cluster has */
#define VOLCANO_SCHEDULER "volcano"
#define VOLCANO_DEFAULT_QUEUE "default"
/* the built-in level -> HyperNode tier mapping (the serve config backends.volcano.tiers
 * replaces it whole): racks are tier 1 (the HyperNode right above the nodes), blocks tier 2,
 * zones tier 3, under the topology label keys the topology docs use */
#define VOLCANO_DEFAULT_TIERS                                                                      \
    "cloud.provider.com/topology-rack=1,cloud.provider.com/topology-block=2,"                      \
    "topology.kubernetes.io/zone=3"

/* the Warning Event's reason when the gang's Queue is not open (volcano_queue_not_open) */
#define VOLCANO_REASON_QUEUE_NOT_OPEN "VolcanoQueueNotOpen"

/* Volcano's Queues (cluster-scoped) and PodGroups (namespaced; the backend requires them) */
extern const struct common_kube_resource volcano_queues, volcano_podgroups;

/*
 * volcano_tiers_check - validate a mapping "LEVEL=TIER,LEVEL=TIER,..." (spaces around items
 * allowed): each LEVEL a non-empty node label key listed once, each TIER an integer 1..1000000.
 * field names the setting in messages ("backends.volcano.tiers"). COMMON_OK or COMMON_EINVAL
 * ("backends.volcano.tiers: Invalid value: \"rack=x\": tier must be an integer >= 1").
 */
enum common_rc volcano_tiers_check(const char *field, const char *tiers, struct common_error *err);

/*
 * volcano_tier - the tier level has in tiers (a mapping as above; NULL or "": the built-in
 * VOLCANO_DEFAULT_TIERS). Returns COMMON_OK with *tier, COMMON_ENOTFOUND when the mapping has
 * no such level, COMMON_EINVAL when the mapping itself is bad (err says why).
 */
enum common_rc volcano_tier(const char *tiers, const char *level, int64_t *tier,
                            struct common_error *err);

/*
 * volcano_queue_of - the queue the Volcano PodGroup among objects (the rendered objects: a JSON
 * array) names in spec.queue, or VOLCANO_DEFAULT_QUEUE when it names none (Volcano's scheduler
 * then files it under "default"). NULL when objects hold no Volcano PodGroup. Borrowed.
 */
const char *volcano_queue_of(const json_t *objects);

/*
 * volcano_queue_not_open - whether Volcano's scheduler will hold a gang because its Queue is not
 * open. queue_obj: the Queue (scheduling.volcano.sh/v1beta1) named name, or NULL when unknown.
 * Volcano v1.15 takes PodGroups only from a queue whose status.state is "Open" (its proportion
 * and capacity plugins reject the others at enqueue and allocate, writing nothing on the
 * PodGroup); the queue controller sets Open on a new queue, and Closed/Closing on a close
 * command. Returns 1 and writes a message naming the queue and its state into buf (size n)
 * when status.state is set and is not "Open"; 0 otherwise (no state yet: the controller has not
 * seen the queue; it opens it).
 */
int volcano_queue_not_open(const char *name, const json_t *queue_obj, char *buf, size_t n);

#endif
