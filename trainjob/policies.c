/*
 * trainjob/policies.c - the table of ML and gang policies (one const struct each, defined in
 * policy_*.c and podgroup.c).
 */
#include <string.h>

#include "trainjob/trainjob_int.h"

static const struct tj_ml_policy *const ml_policies[] = {
    &tj_policy_plain, &tj_policy_torch, &tj_policy_mpi, &tj_policy_jax, &tj_policy_xgboost,
};

const struct tj_ml_policy *tj_ml_policy_for(enum tj_ml kind)
{
    for (size_t i = 0; i < sizeof(ml_policies) / sizeof(ml_policies[0]); i++)
        if (ml_policies[i]->kind == kind)
            return ml_policies[i];
    return NULL;
}

/* Shared by the policies whose count is spec.trainer.numNodes on the trainer PodSet (torch,
 * jax, xgboost, plain). */
enum common_rc tj_trainer_count(struct tj_ctx *c, struct common_error *err)
{
    struct tj_podset *ps = tj_trainer_podset(c);

    (void)err;
    if (ps && c->has_num_nodes)
        ps->count = c->num_nodes;
    return COMMON_OK;
}

/* Upsert the TrainJob's env into the trainer node container (PlainML and Torch do this). */
enum common_rc tj_trainer_env(struct tj_ctx *c, json_t *container, struct common_error *err)
{
    if (tj_upsert_env(container, json_object_get(c->trainer, "env")))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

/* Reserved env names in spec.trainer.env: one error listing the sorted offenders. */
void tj_reserved_env(struct tj_ctx *c, const char *const *reserved, const char *gist)
{
    const json_t *env = tj_get(c->trainjob, "spec.trainer.env");
    const char *found[16];
    size_t n = 0, i;
    json_t *e;
    char list[512] = "";

    json_array_foreach(env, i, e)
    {
        const char *name = tj_str(e, "name");
        for (const char *const *r = reserved; name && *r && n < 16; r++)
            if (strcmp(*r, name) == 0)
                found[n++] = name;
    }
    if (!n)
        return;
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && strcmp(found[b - 1], found[b]) > 0; b--) {
            const char *t = found[b];
            found[b] = found[b - 1];
            found[b - 1] = t;
        }
    for (i = 0; i < n; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof(list) - l, "%s%s", i ? " " : "", found[i]);
    }
    tj_err(c->errs, c->trainjob, env, "Invalid", "spec.trainer.env", "%s: [%s]", gist, list);
}
