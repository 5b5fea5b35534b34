/*
 * sim/policies.c - the placement policies the simulator configures, in pipeline order.
 *
 * The gang core's verbs run the placement pipeline (gang/pipeline.c); each entry here hands
 * its stage what the extender's configuration would: the gang entry the virtual resource the
 * pod webhook adds, the topology entry the simulated cluster's topologies (sim_input.topologies:
 * the SimCluster's block, rack and hostname levels, Topology objects, --topology), exactly as
 * serve hands its --extender-topology settings to gang_topology_set. The engine, which only
 * calls the extender's verbs, places gangs into domains with no other change.
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

static enum common_rc topology_setup(const struct sim_input *in, struct gang_state *s,
                                     struct common_error *err)
{
    for (size_t i = 0; i < in->n_topologies; i++) {
        const struct sim_topology *t = &in->topologies[i];
        enum common_rc rc = gang_topology_set(s, t->name, t->levels, t->n_levels, err);
        if (rc != COMMON_OK)
            return rc;
    }
    return COMMON_OK;
}

const struct sim_policy sim_policies[] = {
    {"gang", gang_configure, NULL},
    {"topology", NULL, topology_setup},
    {NULL, NULL, NULL},
};

void sim_configure(const struct sim_input *in, struct gang_config *cfg)
{
    *cfg = in->gang;
    for (const struct sim_policy *p = sim_policies; p->name; p++)
        if (p->configure)
            p->configure(in, cfg);
}

enum common_rc sim_state_create(const struct sim_input *in, struct gang_state **out,
                                struct common_error *err)
{
    struct gang_config cfg;
    struct gang_state *s = NULL;
    enum common_rc rc;

    *out = NULL;
    sim_configure(in, &cfg);
    if ((rc = gang_state_create(&cfg, &s, err)) != COMMON_OK)
        return rc;
    for (const struct sim_policy *p = sim_policies; p->name; p++)
        if (p->setup && (rc = p->setup(in, s, err)) != COMMON_OK) {
            gang_state_destroy(s);
            return rc;
        }
    *out = s;
    return COMMON_OK;
}
