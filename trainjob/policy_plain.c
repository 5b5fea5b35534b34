/*
 * trainjob/policy_plain.c - PlainML: no framework. Active for no policy (and, in Trainer,
 * alongside xgboost and flux). Trainer count = spec.trainer.numNodes; the TrainJob env goes
 * into the node container. Source: trainer.md §2.7 "PlainML".
 */
#include "trainjob/trainjob_int.h"

static enum common_rc plain_enforce(struct tj_ctx *c, struct common_error *err)
{
    struct tj_podset *ps = tj_trainer_podset(c);
    json_t *node = ps ? tj_container(ps->podspec, "node") : NULL;

    if (!node || !c->trainer)
        return COMMON_OK;
    return tj_trainer_env(c, node, err);
}

const struct tj_ml_policy tj_policy_plain = {
    .name = "plain",
    .kind = TJ_ML_PLAIN,
    .counts = tj_trainer_count,
    .enforce = plain_enforce,
    .validate = NULL,
};
