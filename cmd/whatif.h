/*
 * cmd/whatif.h - `trainsched explain TRAINJOB --what-if`: the prediction for one TrainJob,
 * picked out of a `simulate --from-cluster` report. Pure (JSON in, JSON or text out); the glue
 * is cmd/explaincmd.c, the snapshot cmd/snapshot.c, the simulation sim/.
 *
 * Answer (JSON, what -o json prints under "whatIf"):
 *   trainJob      "namespace/name"
 *   found         true when a simulated job stands for the TrainJob (its pending pods, or the
 *                 TrainJob rendered when it has no pod yet)
 *   snapshotTime  RFC 3339 time of the snapshot (simulated time 0)
 *   runningPods   pods simulated as load
 *   state         Completed / Running / Waiting / NeverFits (sim's job states), when found
 *   startIn       seconds from the snapshot to its predicted start, null when it never starts
 *   startTime     RFC 3339 predicted start, null when it never starts
 *   nodes         its simulated nodes, in name order
 *   topologyDomain {level, domain} when the gang asked a topology
 *   reason        the cores' last waiting reason ("" none)
 *   why           when not found: why there is nothing to predict
 *   notes         what the snapshot could not model (sim_input.notes)
 */
#ifndef CMD_WHATIF_H
#define CMD_WHATIF_H

#include <jansson.h>
#include <stdio.h>

/* whatif_answer - the answer for TrainJob ns/name from report (sim_report_json of a snapshot
 * simulation, borrowed). A new reference; NULL when out of memory. */
json_t *whatif_answer(const json_t *report, const char *ns, const char *name);

/* whatif_text - the answer as text to f. Returns 0, -1 on a write error. */
int whatif_text(const json_t *answer, FILE *f);

#endif
