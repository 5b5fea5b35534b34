/*
 * sim/sim_int.h - what the files of sim/ share: the placement-policy table (policies.c).
 */
#ifndef SIM_SIM_INT_H
#define SIM_SIM_INT_H

#include "sim/sim.h"

/*
 * One placement policy the simulator configures before it drives the extender's verbs. The
 * verbs themselves are the gang core's (gang_filter, gang_prioritize, gang_bind, gang_tick):
 * the placement pipeline runs behind them, so a policy that joins the pipeline (topology
 * domains, DRA devices) changes the simulator's decisions with no change to the engine. What a
 * policy needs from the simulator is its configuration, taken from the simulated cluster:
 * configure fills its part of *cfg from in before the books are created, setup hands the
 * created books what the extender hands them at start (as serve does with its settings);
 * either MAY be NULL. setup returns COMMON_OK or the core's error (COMMON_EINVAL naming the
 * object, COMMON_ENOMEM).
 */
struct sim_policy {
    const char *name;
    void (*configure)(const struct sim_input *in, struct gang_config *cfg);
    enum common_rc (*setup)(const struct sim_input *in, struct gang_state *s,
                            struct common_error *err);
};

/* The policies in pipeline order, ended by a NULL name. */
extern const struct sim_policy sim_policies[];

/* sim_configure - *cfg = in->gang with every policy's configure applied. */
void sim_configure(const struct sim_input *in, struct gang_config *cfg);

/*
 * sim_state_create - the gang books the extender would have for in's cluster: created with
 * sim_configure's configuration, then every policy's setup applied (topologies set). *out is
 * the caller's (gang_state_destroy). Returns COMMON_OK, or the error of gang_state_create or of
 * a setup (the topology's message names it and the level); nothing is left allocated then.
 */
enum common_rc sim_state_create(const struct sim_input *in, struct gang_state **out,
                                struct common_error *err);

/* ---- the loader's side of a snapshot (load.c, used by snapshot.c) ---- */

/* sim_loader_snapshot - the input is a cluster snapshot taken at epoch_ms (Unix ms): no jobs is
 * a result (nothing waits), not an error, and sim_input.epoch_ms is set. */
void sim_loader_snapshot(struct sim_loader *l, int64_t epoch_ms);

/* sim_loader_note - a remark for sim_input.notes (copied). COMMON_OK or COMMON_ENOMEM. */
enum common_rc sim_loader_note(struct sim_loader *l, const char *msg, struct common_error *err);

/* sim_loader_own - the loader frees d (common_malloc'd, documents made in memory) at destroy,
 * also when this fails (COMMON_ENOMEM). */
enum common_rc sim_loader_own(struct sim_loader *l, struct common_yaml_docs *d,
                              struct common_error *err);

/* sim_loader_add_node - one Node object (borrowed), checked as sim_load_cluster checks it
 * (the message has no file position). */
enum common_rc sim_loader_add_node(struct sim_loader *l, json_t *node, struct common_error *err);

/* sim_loader_add_load - one bound pod (owned JSON, modified: requests defaulted) running on its
 * spec.nodeName until end_ms (negative: 0). The caller checks the node exists. COMMON_EINVAL
 * (the pod decoder's message), COMMON_ENOMEM. */
enum common_rc sim_loader_add_load(struct sim_loader *l, json_t *pod, int64_t end_ms,
                                   struct common_error *err);

#endif
