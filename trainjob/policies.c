/*
 * trainjob/policies.c - the table of ML and gang policies (one const struct each, defined in
 * policy_*.c and podgroup.c).
 */
#include <string.h>

#include "trainjob/trainjob_int.h"

static const struct tj_ml_policy *const ml_policies[] = {
    &tj_policy_plain, &tj_policy_torch,   &tj_policy_mpi,
    &tj_policy_jax,   &tj_policy_xgboost, &tj_policy_flux,
};

const struct tj_ml_policy *tj_ml_policy_for(enum tj_ml kind)
{
    for (size_t i = 0; i < sizeof(ml_policies) / sizeof(ml_policies[0]); i++)
        if (ml_policies[i]->kind == kind)
            return ml_policies[i];
    return NULL;
}
