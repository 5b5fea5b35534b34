/*
 * sim/policies.c - the placement policies the simulator configures, in pipeline order.
 *
 * Today the pipeline is the gang core alone. Topology-aware placement joins here when the
 * topology core lands: its entry takes the simulated cluster's levels (sim_input.levels, from
 * the SimCluster generator or the cluster file) into the core's configuration, and the engine,
 * which only calls the extender's verbs, places gangs into domains with no other change.
 */
#include "sim/sim_int.h"

/* The virtual resource the pod webhook adds to gang pods: left out of fit, as in serve. */
static const char *const ignored[] = {"trainsched.io/gang"};

static void gang_configure(const struct sim_input *in, struct gang_config *cfg)
{
    (void)in;
    if (!cfg->ignored_resources) {
        cfg->ignored_resources = ignored;
        cfg->n_ignored_resources = 1;
    }
}

const struct sim_policy sim_policies[] = {
    {"gang", gang_configure},
    {NULL, NULL},
};

void sim_configure(const struct sim_input *in, struct gang_config *cfg)
{
    *cfg = in->gang;
    for (const struct sim_policy *p = sim_policies; p->name; p++)
        if (p->configure)
            p->configure(in, cfg);
}
