/*
 * cmd/explain.h - `trainsched explain`: why a TrainJob waits, told from what the API holds.
 *
 * The core is pure: explain_story takes a snapshot (one JSON object of API objects the glue
 * already fetched, read-only) and returns the story as JSON; explain_text renders that story as
 * text. `trainsched explain -o json` prints the story itself. The glue (cmd/explaincmd.c) only
 * fetches; tests/fixtures/explain/<case>/ holds snapshots with the story and text they give.
 *
 * Snapshot (every member but trainJob may be missing or null: a part that could not be read):
 *   trainJob        the TrainJob (trainer.kubeflow.org/v1alpha1), required
 *   runtime         the TrainingRuntime / ClusterTrainingRuntime its spec.runtimeRef names
 *   jobSets         JobSets of the namespace (those the TrainJob owns are kept)
 *   podGroups       PodGroups of the namespace, any API: scheduling.x-k8s.io (coscheduling),
 *                   scheduling.k8s.io (native), scheduling.volcano.sh, scheduling.run.ai (KAI)
 *   workloads       Kueue Workloads (kueue.x-k8s.io) of the namespace
 *   pods            pods of the TrainJob (label jobset.sigs.k8s.io/jobset-name)
 *   resourceClaims  resource.k8s.io/v1 ResourceClaims of the namespace (those of the pods kept:
 *                   an ownerReference to one, or named by its spec or status); a "dra" wait
 *                   gets numbers.claims [{request, deviceClass, devices, claims, allocated}]
 *   events          events.k8s.io/v1 Events regarding the above (others are dropped)
 *   now             RFC 3339 time the snapshot was taken (a backoff's time left), optional;
 *                   not an RFC 3339 time: COMMON_EINVAL naming snapshot.now
 *   notes           strings: what the glue could not read (a 403, a resource not served)
 *
 * Story (the order of the text): trainJob {namespace, name, uid, state, conditions[]},
 * runtime {kind, name, found}, backend {name, source, why}, objects[] {kind, apiVersion, name,
 * state}, gangs[] {kind, name, minMember, created, gated, bound, running, phase}, wait {cause,
 * reason, from, numbers{}} (null: nothing waits), unblock (string or null), events[] (the last
 * EXPLAIN_MAX_EVENTS, oldest first) {time, type, reason, regarding, note}, notes[].
 * Causes: "members" (pods not all created), "gated", "quorum" (fewer than minMember fit at
 * once), "topology" (no domain of the required level has room), "dra" (the devices of the
 * members' ResourceClaims), "minResources", "backoff", "timeout", "quota" (Kueue),
 * "podGroupCondition" (Volcano/native PodGroup status.conditions, KAI's
 * status.schedulingConditions: KAI's found/required pods and node pool, Volcano's unschedulable
 * tasks and minAvailable as numbers), "slurm" (the TrainJob condition SlurmJob while
 * SlurmJobPending: job id, state and Slurm's reason; the job is listed among the objects as
 * kind SlurmJob), "unknown" (a wait reason not
 * recognized: quoted as is), "none" (released / admitted). Wait reasons are the extender's own
 * words (gang/gang.c, gang/dra.c, dra/alloc.c, topology/topology.c), read first from the
 * PodGroup's verdict annotation (gang/gang.h GANG_VERDICT_ANNOTATION: its backoffUntil gives
 * numbers.backoffUntil and, with now, numbers.backoffLeftSeconds), else from its GangWaiting /
 * GangReleased Events (docs/extender.md "PodGroup status and Events"), and Kueue's
 * QuotaReserved / Admitted conditions. A verdict annotation that is no JSON object with a
 * message adds a note and the Events stand in.
 */
#ifndef CMD_EXPLAIN_H
#define CMD_EXPLAIN_H

#include <jansson.h>
#include <stdio.h>

#include "common/error.h"

/* the most Events a story lists */
#define EXPLAIN_MAX_EVENTS 10

/*
 * explain_story - the story of snap (borrowed, never modified). *out gets a new reference.
 * Returns COMMON_OK; COMMON_EINVAL naming the field when snap is no object, trainJob is
 * missing or has no metadata.name, or now is no RFC 3339 time; COMMON_ENOMEM.
 */
enum common_rc explain_story(const json_t *snap, json_t **out, struct common_error *err);

/* explain_text - story as text to f (what `trainsched explain` prints). Returns 0, -1 on a
 * write error. */
int explain_text(const json_t *story, FILE *f);

#endif
