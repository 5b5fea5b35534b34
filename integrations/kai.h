/*
 * integrations/kai.h - the KAI Scheduler backend (integrations/kai.c; docs/backends.md): the
 * keys KAI reads, and the pure check of what a KAI PodGroup refers to.
 *
 * Keys from NVIDIA/KAI-scheduler v0.12.0 pkg/common/constants/constants.go and the pod grouper
 * (pkg/podgrouper); the skip marker from v0.15 (constants.go, SkipPodGrouper).
 */
#ifndef INTEGRATIONS_KAI_H
#define INTEGRATIONS_KAI_H

#include <jansson.h>

#include "common/error.h"
#include "common/kube.h"

#define KAI_PODGROUP_API "scheduling.run.ai/v2alpha2"
#define KAI_SCHEDULER_NAME "kai-scheduler"
#define KAI_DEFAULT_QUEUE "default-queue"
#define KAI_QUEUE_LABEL "kai.scheduler/queue"
#define KAI_PRIORITY_LABEL "priorityClassName"
#define KAI_PODGROUP_ANNOTATION "pod-group-name"
#define KAI_SKIP_PODGROUPER_ANNOTATION "kai.scheduler/skip-podgrouper"
/* the reason of the Warning Event on a TrainJob whose queue is a top-level KAI Queue */
#define KAI_REASON_QUEUE_WITHOUT_PARENT "KAIQueueWithoutParent"

/* scheduling.run.ai/v2alpha2 podgroups (namespaced) and scheduling.run.ai/v2 queues (cluster) */
extern const struct common_kube_resource backend_kai_podgroups, backend_kai_queues;

/* What a rendered KAI PodGroup names (strings borrowed from the objects and the TrainJob). */
struct kai_refs {
    const char *name;                                  /* the PodGroup's metadata.name */
    const char *queue, *queue_field;                   /* spec.queue; the field it came from */
    const char *priority_class, *priority_class_field; /* NULL: none asked */
};

/*
 * kai_refs_of - the queue and priority class of the KAI PodGroup in objects (backend_render's
 * apply list) of trainjob, with the field each came from. COMMON_OK, or COMMON_ENOTFOUND when
 * objects hold no KAI PodGroup (*out zeroed).
 */
enum common_rc kai_refs_of(const json_t *objects, const json_t *trainjob, struct kai_refs *out);

/*
 * kai_check_refs - pure: may the PodGroup be written? queue_obj: the Queue of that name as the
 * cluster has it, NULL when it does not exist; queue_known 0: the Queue API is not served (no
 * check). The same for the PriorityClass. COMMON_OK, or COMMON_EINVAL with a message that starts
 * with the field: a queue that does not exist ("metadata.labels[\"kai.scheduler/queue\"]: Not
 * found: \"x\": ..."), a parent queue (status.childQueues not empty: KAI only queues into
 * leaves), a priority class that does not exist.
 */
enum common_rc kai_check_refs(const struct kai_refs *refs, const json_t *queue_obj, int queue_known,
                              const json_t *priority_class_obj, int pc_known,
                              struct common_error *err);

/*
 * kai_queue_warning - pure: what to warn about in a Queue KAI accepts but will not schedule
 * from. queue_obj: the scheduling.run.ai/v2 Queue the PodGroup names, as the cluster has it
 * (NULL: nothing to say). Today one case: a Queue with no spec.parentQueue (or ""), a
 * top-level queue. KAI up to v0.12 orders pending jobs per parent queue ("department") and
 * skips a queue whose parent is not a known Queue (pkg/scheduler/actions/utils/
 * job_order_by_queue.go, buildActiveJobOrderPriorityQueues, in both fairness modes), so the
 * gangs of a top-level queue are never scheduled; v0.13.0's n-level queue hierarchies
 * (KAI-Scheduler #858) schedule them. Returns 1 with the Event note in buf (n bytes, starting
 * with the field the queue came from and naming the queue), else 0 (buf untouched).
 */
int kai_queue_warning(const struct kai_refs *refs, const json_t *queue_obj, char *buf, size_t n);

#endif
