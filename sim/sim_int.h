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
 * configure MUST fill its part of *cfg from in (levels, resource names), and MAY be NULL.
 */
struct sim_policy {
    const char *name;
    void (*configure)(const struct sim_input *in, struct gang_config *cfg);
};

/* The policies in pipeline order, ended by a NULL name. */
extern const struct sim_policy sim_policies[];

/* sim_configure - *cfg = in->gang with every policy's configure applied. */
void sim_configure(const struct sim_input *in, struct gang_config *cfg);

#endif
