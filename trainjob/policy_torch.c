/*
 * trainjob/policy_torch.c - Torch (torchrun) and TorchTune.
 *
 * PET_NNODES, PET_NPROC_PER_NODE (numProcPerNode, or "auto" with GPUs, or the CPU count),
 * PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT on the trainer node container and on every
 * envInjection target; port 29500. TorchTune mode (command exactly [tune, run]) drops the
 * PET_MASTER_* vars and regenerates the command from the recipe table. Source: trainer.md §2.7
 * "Torch" and "TorchTune mode", §5.1 checks 18-25, §6 cases 19-40; the checks' words and values
 * are Trainer v2.3.0's (torchtune.go), compared by tests/tools/trainerdiff.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "trainjob/trainjob_int.h"

static const char *const reserved[] = {"PET_NNODES",      "PET_NPROC_PER_NODE", "PET_NODE_RANK",
                                       "PET_MASTER_ADDR", "PET_MASTER_PORT",    NULL};
static const char *const immutable_keys[] = {
    "output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file", NULL};
static const char *const supported_models[] = {"llama3_2/1B", "llama3_2/3B", "llama3_3/70B",
                                               "qwen2_5/1.5B", NULL};

struct tune {
    int lora, qlora;
    const char *model;
    const char *recipe, *suffix;
    int multi_device;
};

static int is_tune_run(const json_t *cmd)
{
    return json_is_array(cmd) && json_array_size(cmd) == 2 &&
           json_is_string(json_array_get(cmd, 0)) && json_is_string(json_array_get(cmd, 1)) &&
           strcmp(json_string_value(json_array_get(cmd, 0)), "tune") == 0 &&
           strcmp(json_string_value(json_array_get(cmd, 1)), "run") == 0;
}

static int32_t trainer_nodes(struct tj_ctx *c)
{
    return c->has_num_nodes ? c->num_nodes : c->rt_num_nodes;
}

/* numProcPerNode: "3", "auto" or the CPU count; *gpus gets the GPU count used */
static const char *resolve_nppn(struct tj_ctx *c, int64_t *gpus)
{
    const json_t *res = tj_gpu_resources(c);
    int64_t cpu = 0;
    const json_t *v;
    struct common_quantity q;

    *gpus = tj_gpu_count(res);
    if (c->has_nppn)
        return common_arena_printf(c->arena, "%d", c->nppn);
    if (*gpus > 0)
        return "auto";
    v = tj_get(res, "requests");
    v = json_object_get(v, "cpu");
    if (v && !tj_quantity(v, &q, NULL) && !common_quantity_is_zero(&q))
        common_quantity_value_ceil(&q, &cpu, NULL);
    else if ((v = json_object_get(tj_get(res, "limits"), "cpu")) && !tj_quantity(v, &q, NULL))
        common_quantity_value_ceil(&q, &cpu, NULL);
    if (cpu < 1)
        cpu = 1;
    return common_arena_printf(c->arena, "%lld", (long long)cpu);
}

/* Trainer's isBoolArgEnabled for one arg: "<name>=<value>" whose name contains key and whose
 * value, trimmed of white space, is "true" in any case */
static int arg_is_true(const char *arg, const char *key)
{
    const char *eq = strchr(arg, '=');
    const char *v, *end;
    const char *p;

    if (!eq)
        return 0;
    p = strstr(arg, key);
    if (!p || p + strlen(key) > eq)
        return 0;
    v = eq + 1;
    end = v + strlen(v);
    while (v < end && isspace((unsigned char)*v))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    return end - v == 4 && strncasecmp(v, "true", 4) == 0;
}

static const char *tune_model(struct tj_ctx *c)
{
    const char *name = tj_str(c->trainjob, "spec.runtimeRef.name");
    const char *d1, *d2;
    char *part2, *part3;

    if (!name)
        return "";
    d1 = strchr(name, '-');
    d2 = d1 ? strchr(d1 + 1, '-') : NULL;
    if (!d1 || !d2 || strchr(d2 + 1, '-'))
        return "";
    part2 = common_arena_strndup(c->arena, d1 + 1, (size_t)(d2 - d1 - 1));
    part3 = common_arena_strdup(c->arena, d2 + 1);
    if (!part2 || !part3)
        return "";
    for (char *p = part2; *p; p++)
        if (*p == '.')
            *p = '_';
    for (char *p = part3; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return common_arena_printf(c->arena, "%s/%s", part2, part3);
}

/* Trainer's getRecipeAndConfig for n nodes, numProcPerNode nppn ("auto" or a number) and gpus
 * GPUs per node */
static void tune_plan(struct tj_ctx *c, int32_t n, const char *nppn, int64_t gpus, struct tune *t)
{
    const json_t *args = json_object_get(c->trainer, "args");
    int dora = 0;
    size_t i;
    json_t *a;
    int single;

    memset(t, 0, sizeof(*t));
    json_array_foreach(args, i, a)
    {
        const char *s = json_string_value(a);
        if (!s)
            continue;
        if (strstr(s, "model.lora_attn_modules"))
            t->lora = 1;
        if (arg_is_true(s, "model.quantize_base"))
            t->qlora = 1;
        if (arg_is_true(s, "model.use_dora"))
            dora = 1;
    }
    if (dora)
        t->qlora = 0;
    t->model = tune_model(c);
    single = n == 1 && ((strcmp(nppn, "auto") != 0 && strcmp(nppn, "1") == 0) || gpus == 1);
    t->multi_device = !single;
    if (single) {
        t->recipe =
            t->qlora || t->lora ? "lora_finetune_single_device" : "full_finetune_single_device";
        t->suffix = t->qlora  ? "_qlora_single_device"
                    : t->lora ? "_lora_single_device"
                              : "_full_single_device";
    } else if (n == 1) {
        t->recipe = t->qlora || t->lora ? "lora_finetune_distributed" : "full_finetune_distributed";
        t->suffix = t->qlora ? "_qlora" : t->lora ? "_lora" : "_full";
    } else { /* 0 nodes too, as Trainer: the full distributed recipe */
        t->recipe = "full_finetune_distributed";
        t->suffix = n > 1 ? "_full_multinode" : "_full";
    }
}

static int key_is(const char *item, const char *const *keys)
{
    const char *eq = strchr(item, '=');
    size_t n = eq ? (size_t)(eq - item) : strlen(item);

    for (const char *const *k = keys; *k; k++)
        if (strlen(*k) == n && strncmp(item, *k, n) == 0)
            return 1;
    return 0;
}

static enum common_rc tune_command(struct tj_ctx *c, const char *nppn, int64_t gpus,
                                   struct common_error *err)
{
    struct tune t;
    json_t *cmd = json_pack("[s,s]", "tune", "run");
    struct tj_podset *ps = tj_trainer_podset(c);
    const json_t *orig = NULL;
    char *cfg;
    size_t i;
    json_t *it;

    /* the runtime's own node command (before the TrainJob replaces it) */
    {
        const json_t *rjobs = tj_get(c->runtime, "spec.template.spec.replicatedJobs");
        const json_t *rj = ps ? tj_find_named(rjobs, "name", ps->name) : NULL;
        const json_t *node =
            rj ? tj_container(tj_get(rj, "template.spec.template.spec"), "node") : NULL;
        orig = json_object_get(node, "command");
    }
    tune_plan(c, trainer_nodes(c), nppn, gpus, &t);
    if (!cmd || !own_json(c, cmd))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (trainer_nodes(c) > 1 || (strcmp(nppn, "auto") != 0 && strcmp(nppn, "1") != 0) ||
        (strcmp(nppn, "auto") == 0 && gpus > 1)) {
        char *rdzv = common_arena_printf(c->arena, "--rdzv_endpoint=%s-node-0-0.%s:%d", c->name,
                                         c->name, TJ_PORT);
        if (!rdzv || json_array_append_new(cmd, json_string(rdzv)))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    cfg = common_arena_printf(c->arena, "%s%s", t.model, t.suffix);
    if (!cfg || json_array_append_new(cmd, json_string(t.recipe)) ||
        json_array_append_new(cmd, json_string("--config")) ||
        json_array_append_new(cmd, json_string(cfg)))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    json_array_foreach(orig, i, it)
    {
        const char *s = json_string_value(it);
        if (s && key_is(s, immutable_keys) && json_array_append_new(cmd, json_string(s)))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    c->command = cmd;
    return COMMON_OK;
}

static enum common_rc pet_env(struct tj_ctx *c, json_t *container, const char *nnodes,
                              const char *nppn, int master)
{
    json_t *env = tj_arr(container, "env");
    char addr[600], port[16];

    snprintf(addr, sizeof(addr), "%s-node-0-0.%s", c->name, c->name);
    snprintf(port, sizeof(port), "%d", TJ_PORT);
    if (!env || tj_upsert(env, "name", tj_env_value("PET_NNODES", nnodes)) ||
        tj_upsert(env, "name", tj_env_value("PET_NPROC_PER_NODE", nppn)) ||
        tj_upsert(env, "name", tj_env_fieldref("PET_NODE_RANK", TJ_RANK_FIELD)))
        return COMMON_ENOMEM;
    if (master && (tj_upsert(env, "name", tj_env_value("PET_MASTER_ADDR", addr)) ||
                   tj_upsert(env, "name", tj_env_value("PET_MASTER_PORT", port))))
        return COMMON_ENOMEM;
    return COMMON_OK;
}

static enum common_rc torch_enforce(struct tj_ctx *c, struct common_error *err)
{
    struct tj_podset *ps = tj_trainer_podset(c);
    json_t *node = ps ? tj_container(ps->podspec, "node") : NULL;
    const json_t *targets = tj_get(c->runtime, "spec.mlPolicy.torch.envInjection.targets");
    int64_t gpus = 0;
    const char *nppn = resolve_nppn(c, &gpus);
    char nnodes[16];
    int tune = c->trainer && is_tune_run(json_object_get(c->trainer, "command"));
    size_t i;
    json_t *t;
    enum common_rc rc;

    if (!nppn)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    snprintf(nnodes, sizeof(nnodes), "%d", ps ? ps->count : 1);
    if (node && c->trainer) {
        rc = tj_trainer_env(c, node, err);
        if (rc)
            return rc;
        if (pet_env(c, node, nnodes, nppn, !tune) || tj_upsert_port(node, TJ_PORT))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        if (tune && (rc = tune_command(c, nppn, gpus, err)))
            return rc;
    }
    json_array_foreach(targets, i, t)
    {
        const char *job = tj_str(t, "jobName");
        struct tj_podset *tp = job ? tj_podset(c, job) : NULL;
        size_t j;
        json_t *cn;
        json_array_foreach(json_object_get(t, "containerNames"), j, cn)
        {
            json_t *ct = tp ? tj_any_container(tp->podspec, json_string_value(cn)) : NULL;
            if (!ct)
                return common_error_set(
                    err, COMMON_EINVAL,
                    "envInjection target podSet \"%s\" container \"%s\" not found in runtime "
                    "template",
                    job ? job : "", json_string_value(cn) ? json_string_value(cn) : "");
            if (pet_env(c, ct, nnodes, nppn, 1))
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
    }
    return COMMON_OK;
}

/*
 * Trainer's validateTorchTune (v2.3.0 pkg/runtime/framework/plugins/torch/torchtune.go), its
 * words and values. It reads its own inputs, not the build's: the TrainJob's numNodes (1 when
 * unset, whatever the runtime's mlPolicy.numNodes), numProcPerNode "auto" when unset (the CPU
 * count PET_NPROC_PER_NODE gets is the controller's, not the webhook's), and the GPUs of
 * resourcesPerNode (else of the runtime's node container). So one node, no numProcPerNode and
 * no GPU is a distributed QLoRA config here, refused for the llama3_2 models.
 */
static void tune_validate(struct tj_ctx *c)
{
    int64_t gpus = tj_gpu_count(tj_gpu_resources(c));
    const char *nppn = c->has_nppn ? common_arena_printf(c->arena, "%d", c->nppn) : "auto";
    int32_t n = c->has_num_nodes ? c->num_nodes : 1;
    const json_t *nn_node = tj_get(c->trainjob, "spec.trainer.numNodes");
    const json_t *nn = c->has_num_nodes ? nn_node : tj_own(c->arena, json_integer(n));
    const json_t *rname = tj_get(c->trainjob, "spec.runtimeRef.name");
    struct tune tn;
    int supported = 0;
    size_t i;
    json_t *a;

    if (!nppn || !nn) {
        c->errs->oom = 1;
        return;
    }
    tune_plan(c, n, nppn, gpus, &tn);
    for (const char *const *m = supported_models; *m; m++)
        if (strcmp(*m, tn.model) == 0)
            supported = 1;
    if (!supported)
        tj_err(c->errs, c->trainjob, rname, "Invalid", "spec.runtimeRef.name",
               "must have a supported pretrained model, invalid model configured: %s", tn.model);
    if (n > 1 && strcmp(tn.model, "llama3_3/70B") != 0)
        tj_err_value(c->errs, c->trainjob, nn_node, nn, "Invalid", "spec.trainer.numNodes",
                     "must be 1 for %s model", tn.model);
    if (n == 1 && tn.qlora && strcmp(tn.model, "qwen2_5/1.5B") == 0)
        tj_err(c->errs, c->trainjob, rname, "Invalid", "spec.runtimeRef.name",
               "QLoRA is not supported for %s model", tn.model);
    if (n == 1 && tn.qlora && tn.multi_device &&
        (strcmp(tn.model, "llama3_2/1B") == 0 || strcmp(tn.model, "llama3_2/3B") == 0)) {
        /* values: numProcPerNode as Trainer's IntOrString ("auto" or the number), the
         * TrainJob's resourcesPerNode (null when unset) */
        const json_t *nv_node = tj_get(c->trainjob, "spec.trainer.numProcPerNode");
        const json_t *nv = c->has_nppn ? nv_node : tj_own(c->arena, json_string("auto"));
        tj_err_value(c->errs, c->trainjob, nv_node, nv, "Invalid", "spec.trainer.numProcPerNode",
                     "must be auto or 1 for %s model when using QLoRA", tn.model);
        tj_err_value(c->errs, c->trainjob, c->resources, tj_resources_value(c->arena, c->resources),
                     "Invalid", "spec.trainer.resourcesPerNode",
                     "must have gpu resource with value 1 for %s model when using QLoRA", tn.model);
    }
    if (n > 1 && (tn.lora || tn.qlora))
        tj_err_value(c->errs, c->trainjob, nn_node, nn, "Invalid", "spec.trainer.numNodes",
                     "LoRA fine-tuning is not supported for multi-node training in TorchTune");
    json_array_foreach(json_object_get(c->trainer, "args"), i, a)
    {
        const char *s = json_string_value(a);
        if (s && key_is(s, immutable_keys)) {
            char path[64];
            const char *eq = strchr(s, '=');
            snprintf(path, sizeof(path), "spec.trainer.args[%zu]", i);
            tj_err(c->errs, c->trainjob, a, "Invalid", path,
                   "must not set immutable config \"%.*s\" in trainer args; it is managed by "
                   "the runtime",
                   (int)(eq ? (size_t)(eq - s) : strlen(s)), s);
        }
    }
}

static void torch_validate(struct tj_ctx *c)
{
    const json_t *targets = tj_get(c->runtime, "spec.mlPolicy.torch.envInjection.targets");
    size_t i;
    json_t *t;

    tj_reserved_env(c, reserved, "must not have reserved envs, invalid envs configured");
    json_array_foreach(targets, i, t)
    {
        static const char *const target_keys[] = {"jobName", "containerNames", NULL};
        const char *job = tj_str(t, "jobName");
        struct tj_podset *tp = job ? tj_podset(c, job) : NULL;
        size_t j;
        json_t *cn;
        json_array_foreach(json_object_get(t, "containerNames"), j, cn)
        {
            /* the value is the target, as Trainer prints it */
            if (!tp || !tj_any_container(tp->podspec, json_string_value(cn)))
                tj_err_value(
                    c->errs, c->trainjob, tj_get(c->trainjob, "spec.runtimeRef"),
                    tj_struct_value(c->arena, t, target_keys), "Invalid", "spec.runtimeRef",
                    "envInjection target podSet \"%s\" container \"%s\" not found in runtime "
                    "template",
                    job ? job : "", json_string_value(cn) ? json_string_value(cn) : "");
        }
    }
    if (c->trainer && is_tune_run(json_object_get(c->trainer, "command")))
        tune_validate(c);
}

const struct tj_ml_policy tj_policy_torch = {
    .name = "torch",
    .kind = TJ_ML_TORCH,
    .counts = tj_trainer_count,
    .enforce = torch_enforce,
    .validate = torch_validate,
};
