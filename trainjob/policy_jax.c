/*
 * trainjob/policy_jax.c - JAX: JAX_NUM_PROCESSES, JAX_PROCESS_ID, JAX_COORDINATOR_ADDRESS and
 * port 29500 on the trainer node container. GPUs change nothing. Source: trainer.md §2.7 "JAX".
 */
#include <stdio.h>

#include "trainjob/trainjob_int.h"

static enum common_rc jax_enforce(struct tj_ctx *c, struct common_error *err)
{
    struct tj_podset *ps = tj_trainer_podset(c);
    json_t *node = ps ? tj_container(ps->podspec, "node") : NULL;
    json_t *env;
    char n[16], addr[600];

    if (!node || !c->trainer)
        return COMMON_OK;
    env = tj_arr(node, "env");
    snprintf(n, sizeof(n), "%d", ps->count);
    snprintf(addr, sizeof(addr), "%s-node-0-0.%s:%d", c->name, c->name, TJ_PORT);
    if (!env || tj_upsert(env, "name", tj_env_value("JAX_NUM_PROCESSES", n)) ||
        tj_upsert(env, "name", tj_env_fieldref("JAX_PROCESS_ID", TJ_RANK_FIELD)) ||
        tj_upsert(env, "name", tj_env_value("JAX_COORDINATOR_ADDRESS", addr)) ||
        tj_upsert_port(node, TJ_PORT))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

const struct tj_ml_policy tj_policy_jax = {
    .name = "jax",
    .kind = TJ_ML_JAX,
    .counts = tj_trainer_count,
    .enforce = jax_enforce,
    .validate = NULL,
};
