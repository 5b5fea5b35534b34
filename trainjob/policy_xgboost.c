/*
 * trainjob/policy_xgboost.c - XGBoost: DMLC_* tracker env and port 29500; workers = nodes x
 * GPUs per node (1 without GPUs). PlainML also runs for xgboost in Trainer, so the TrainJob env
 * goes in first. Source: trainer.md §2.7 "XGBoost", §5.1 check 28.
 */
#include <stdio.h>
#include <string.h>

#include "trainjob/trainjob_int.h"

static const char *const reserved[] = {"DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID",
                                       "DMLC_NUM_WORKER", NULL};

static enum common_rc xgb_enforce(struct tj_ctx *c, struct common_error *err)
{
    struct tj_podset *ps = tj_trainer_podset(c);
    json_t *node = ps ? tj_container(ps->podspec, "node") : NULL;
    int64_t gpus;
    json_t *env;
    char uri[600], port[16], workers[32];
    enum common_rc rc;

    if (!node || !c->trainer)
        return COMMON_OK;
    rc = tj_trainer_env(c, node, err);
    if (rc)
        return rc;
    gpus = tj_gpu_count(tj_gpu_resources(c));
    if (gpus < 1)
        gpus = 1;
    if (gpus > INT32_MAX / (ps->count > 0 ? ps->count : 1)) /* xgb_counts refused it */
        return common_error_set(err, COMMON_EINVAL, "DMLC_NUM_WORKER: more than %d workers",
                                INT32_MAX);
    snprintf(uri, sizeof(uri), "%s-node-0-0.%s", c->name, c->name);
    snprintf(port, sizeof(port), "%d", TJ_PORT);
    snprintf(workers, sizeof(workers), "%lld", (long long)ps->count * (long long)gpus);
    env = tj_arr(node, "env");
    if (!env || tj_upsert(env, "name", tj_env_value("DMLC_TRACKER_URI", uri)) ||
        tj_upsert(env, "name", tj_env_value("DMLC_TRACKER_PORT", port)) ||
        tj_upsert(env, "name", tj_env_fieldref("DMLC_TASK_ID", TJ_RANK_FIELD)) ||
        tj_upsert(env, "name", tj_env_value("DMLC_NUM_WORKER", workers)) ||
        tj_upsert_port(node, TJ_PORT))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

/* the trainer's count, then its worker count: DMLC_NUM_WORKER = nodes x GPUs per node must fit
 * an int32 (a field error at the GPU quantity otherwise) */
static enum common_rc xgb_counts(struct tj_ctx *c, struct common_error *err)
{
    struct tj_podset *ps;
    enum common_rc rc = tj_trainer_count(c, err);

    if (rc)
        return rc;
    ps = tj_trainer_podset(c);
    if (ps && c->trainer)
        tj_gpu_count_int32(c, ps->count, "DMLC_NUM_WORKER (numNodes x GPUs per node)");
    return COMMON_OK;
}

static void xgb_validate(struct tj_ctx *c)
{
    const json_t *env = tj_get(c->trainjob, "spec.trainer.env");
    size_t i;
    json_t *e;

    json_array_foreach(env, i, e)
    {
        const char *name = tj_str(e, "name");
        for (const char *const *r = reserved; name && *r; r++) {
            if (strcmp(*r, name) == 0) {
                char path[64];
                snprintf(path, sizeof(path), "spec.trainer.env[%zu]", i);
                tj_err(c->errs, c->trainjob, e, "Forbidden", path,
                       "%s is reserved for the XGBoost runtime", name);
            }
        }
    }
}

const struct tj_ml_policy tj_policy_xgboost = {
    .name = "xgboost",
    .kind = TJ_ML_XGBOOST,
    .counts = xgb_counts,
    .enforce = xgb_enforce,
    .validate = xgb_validate,
};
