/*
 * extender/answer.h - what the filter answer says about each node, from the gang core's
 * decision: the pure step between gang_filter (gang/gang.h) and the wire encoder
 * (extender/codec.h).
 *
 * Why it exists. kube-scheduler 1.36 (pkg/scheduler/schedule_one.go, findNodesThatPassExtenders
 * and findNodesThatFitPod; framework/types.go FitError) reads an ExtenderFilterResult like this:
 * - a node in NodeNames is feasible;
 * - a node in FailedNodes gets an Unschedulable status (preemption may try it);
 * - a node in FailedAndUnresolvableNodes gets UnschedulableAndUnresolvable (never preempted);
 * - a node in no list keeps the NodeToStatus default, which is also UnschedulableAndUnresolvable
 *   (NewDefaultNodeToStatus), without a reason;
 * - a non-empty Error fails the scheduling cycle: the pod goes to the error backoff queue and is
 *   retried after 1 s, doubling to podMaxBackoffSeconds (10 s by default), whatever happens in
 *   the cluster; whereas a pod whose nodes an extender rejected carries the fake plugin
 *   "Extender" and is parked in the unschedulable pool until some cluster event (any pod or
 *   node change) or the 5-minute flush.
 * So a node the gang core calls unresolvable can be left out of the answer at no loss for
 * preemption; listing it costs a map entry (about 90 bytes at 5,000 nodes: 440 KB per answer)
 * that kube-scheduler decodes on every filter. And a pod waiting for something the scheduler does
 * not watch (sibling pods, the PodGroup, the gang's backoff) must be answered with an Error, or a
 * quiet cluster leaves it parked (a gang of 3 waited ~31 s for an unrelated bind failure to
 * wake it before this was changed).
 */
#ifndef EXTENDER_ANSWER_H
#define EXTENDER_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"
#include "gang/gang.h"

/*
 * extender_filter_answer - turn gang_filter's verdicts into the filter answer.
 * In: gv[0..n) (the core's verdict and reason per request node, in request order) and res,
 * both straight from gang_filter (call this before unlocking the books: their reasons are
 * copied here). Out: verdict[i] (enum extender_verdict of extender/codec.h) and reason[i]
 * (copied into arena a, NULL for a passing or dropped node), caller-allocated with n entries;
 * *error_out: NULL, or the message (in a) the whole answer must carry as its Error when
 * res->retry (the pod waits for sibling pods, its PodGroup, the gang's backoff or agreeing
 * minMember values; verdict and reason are then left untouched). Rules otherwise:
 * - GANG_NODE_OK: EXTENDER_PASS; GANG_NODE_FAILED: EXTENDER_FAIL with its reason;
 * - GANG_NODE_UNRESOLVABLE: EXTENDER_DROP (no list) when some node passes or failed (the
 *   answer's size then follows the nodes that matter: one name for a planned gang member),
 *   EXTENDER_FAIL_UNRESOLVABLE with its reason when every node is unresolvable (nothing else
 *   would explain the pod's state in kube-scheduler's FailedScheduling event).
 * Returns COMMON_OK, or COMMON_ENOMEM (the arena is full; outputs undefined). No I/O.
 * Source: kube-scheduler v1.36.3 as cited above; protocols.md §1.4 Filter.
 */
enum common_rc extender_filter_answer(struct common_arena *a, const struct gang_node_verdict *gv,
                                      size_t n, const struct gang_filter_result *res,
                                      uint8_t *verdict, const char **reason,
                                      const char **error_out);

#endif
