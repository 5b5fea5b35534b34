/*
 * trainjob/policy_mpi.c - MPI (OpenMPI), used by the deepspeed and mlx runtimes.
 *
 * Node count on the replicated job named "node" (numNodes, or numNodes-1 when the launcher also
 * runs as a node), slots per host, the SSH key Secret and hostfile ConfigMap, their volumes and
 * mounts, and the OpenMPI env on the launcher. Source: trainer.md §2.7 "MPI", §5.1 checks 26-27,
 * §6 cases 41-47.
 */
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "trainjob/trainjob_int.h"

static const char *const reserved[] = {"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args",
                                       "OMPI_MCA_orte_keep_fqdn_hostnames",
                                       "OMPI_MCA_orte_set_default_slots", NULL};

static enum common_rc mpi_counts(struct tj_ctx *c, struct common_error *err)
{
    struct tj_podset *ps = tj_podset(c, "node");

    (void)err;
    if (ps && c->has_num_nodes) {
        int32_t n = c->num_nodes;
        if (c->mpi_launcher_as_node)
            n = n - 1 > 1 ? n - 1 : 1;
        ps->count = n;
    }
    /* the slots per host come from the GPU count: an int32 (a field error otherwise) */
    if (!c->has_nppn && c->mpi_nppn == 1)
        tj_gpu_count_int32(c, 1, "the MPI slots per node (OMPI_MCA_orte_set_default_slots)");
    return COMMON_OK;
}

static int32_t slots(struct tj_ctx *c)
{
    int64_t gpus;

    if (c->has_nppn)
        return c->nppn;
    gpus = tj_gpu_count(tj_gpu_resources(c));
    if (c->mpi_nppn == 1 && gpus > 1) /* mpi_counts refused a count past INT32_MAX */
        return gpus > INT32_MAX ? INT32_MAX : (int32_t)gpus;
    return c->mpi_nppn;
}

/* both take ownership of the new value, also on failure */
static enum common_rc add_volume(struct tj_podset *ps, json_t *vol)
{
    json_t *vols = tj_arr(ps->podspec, "volumes");
    if (!vols) {
        json_decref(vol);
        return COMMON_ENOMEM;
    }
    return tj_upsert(vols, "name", vol) ? COMMON_ENOMEM : COMMON_OK;
}

static enum common_rc add_mount(json_t *ct, const char *name, const char *path)
{
    json_t *mounts = tj_arr(ct, "volumeMounts");
    if (!mounts)
        return COMMON_ENOMEM;
    return tj_upsert(mounts, "mountPath", json_pack("{s:s, s:s}", "name", name, "mountPath", path))
               ? COMMON_ENOMEM
               : COMMON_OK;
}

#define HOSTFILE_MAX (1024 * 1024) /* a ConfigMap holds at most 1 MiB */

static size_t digits(int64_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* An upper bound of the hostfile's size, computed without listing the hosts. */
static uint64_t hostfile_bound(struct tj_ctx *c, int32_t n_slots, uint64_t *hosts)
{
    const char *sub = tj_str(c->spec, "network.subdomain");
    uint64_t total = 0;

    *hosts = 0;
    if (!sub || !*sub)
        sub = c->name;
    for (size_t i = 0; i < c->npodsets; i++) {
        struct tj_podset *ps = &c->podsets[i];
        json_int_t replicas = json_is_integer(json_object_get(ps->rjob, "replicas"))
                                  ? json_integer_value(json_object_get(ps->rjob, "replicas"))
                                  : 1;
        uint64_t lines, line;
        if (strcmp(ps->name, "node") != 0 &&
            !(c->mpi_launcher_as_node && strcmp(ps->name, "launcher") == 0))
            continue;
        lines = (uint64_t)(replicas > 0 ? replicas : 0) * (uint64_t)(ps->count > 0 ? ps->count : 0);
        line = strlen(c->name) + strlen(ps->name) + strlen(sub) + digits(replicas) +
               digits(ps->count) + digits(n_slots) + 12;
        *hosts += lines;
        total += lines * line;
    }
    return total;
}

static enum common_rc mpi_enforce(struct tj_ctx *c, struct common_error *err)
{
    int32_t n_slots = slots(c);
    char *secret = common_arena_printf(c->arena, "%s-mpi-ssh-auth", c->name);
    char *hostfile_cm = common_arena_printf(c->arena, "%s-mpi-hostfile", c->name);
    char slots_s[16];
    struct common_buf hosts;
    char *priv = NULL, *pub = NULL;
    json_t *obj;
    enum common_rc rc;

    if (!secret || !hostfile_cm)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (strcmp(c->mpi_impl, "OpenMPI") != 0)
        return common_error_set(err, COMMON_EINVAL,
                                "spec.mlPolicy.mpi.mpiImplementation: \"%s\" doesn't supported: "
                                "only OpenMPI is implemented",
                                c->mpi_impl);
    snprintf(slots_s, sizeof(slots_s), "%d", n_slots);
    {
        uint64_t nhosts;
        if (hostfile_bound(c, n_slots, &nhosts) > HOSTFILE_MAX)
            return common_error_set(err, COMMON_EINVAL,
                                    "spec.trainer.numNodes: Invalid value: %d: the MPI hostfile "
                                    "for %llu hosts would be larger than %d bytes, the most a "
                                    "ConfigMap holds",
                                    c->num_nodes, (unsigned long long)nhosts, HOSTFILE_MAX);
    }

    for (size_t i = 0; i < c->npodsets; i++) {
        struct tj_podset *ps = &c->podsets[i];
        int launcher = strcmp(ps->name, "launcher") == 0;
        json_t *ct;
        if (!launcher && strcmp(ps->name, "node") != 0)
            continue;
        if (add_volume(ps, json_pack("{s:s, s:{s:s, s:i, s:[{s:s, s:s, s:i}, {s:s, s:s, s:i}, "
                                     "{s:s, s:s, s:i}]}}",
                                     "name", "mpi-ssh-auth", "secret", "secretName", secret,
                                     "defaultMode", 0400, "items", "key", "ssh-privatekey", "path",
                                     "id_rsa", "mode", 0640, "key", "ssh-publickey", "path",
                                     "id_rsa.pub", "mode", 0644, "key", "ssh-publickey", "path",
                                     "authorized_keys", "mode", 0644)))
            goto nomem;
        if (launcher &&
            add_volume(ps, json_pack("{s:s, s:{s:s, s:[{s:s, s:s, s:i}]}}", "name", "mpi-hostfile",
                                     "configMap", "name", hostfile_cm, "items", "key", "hostfile",
                                     "path", "hostfile", "mode", 0444)))
            goto nomem;
        ct = tj_container(ps->podspec, "node");
        if (!ct)
            continue;
        if (add_mount(ct, "mpi-ssh-auth", c->mpi_ssh_path))
            goto nomem;
        if (launcher) {
            json_t *env;
            if (add_mount(ct, "mpi-hostfile", "/etc/mpi"))
                goto nomem;
            env = tj_arr(ct, "env");
            if (!env ||
                tj_upsert(env, "name",
                          tj_env_value("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile")) ||
                tj_upsert(env, "name", tj_env_value("OMPI_MCA_orte_keep_fqdn_hostnames", "true")) ||
                tj_upsert(env, "name", tj_env_value("OMPI_MCA_orte_set_default_slots", slots_s)) ||
                tj_upsert(env, "name",
                          tj_env_value("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10")))
                goto nomem;
        }
    }

    /* Secret <name>-mpi-ssh-auth */
    if (!c->opts || !c->opts->keygen)
        return common_error_set(err, COMMON_EINVAL,
                                "MPI runtime needs an SSH key generator (none configured)");
    rc = c->opts->keygen(c->arena, &priv, &pub, err);
    if (rc)
        return rc;
    /* an authorized_keys line ends with a newline, as Go's ssh.MarshalAuthorizedKey (which
     * Trainer writes) leaves it */
    if (pub && (!*pub || pub[strlen(pub) - 1] != '\n')) {
        pub = common_arena_printf(c->arena, "%s\n", pub);
        if (!pub)
            goto nomem;
    }
    obj = json_pack("{s:s, s:s, s:o, s:s, s:b, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "Secret",
                    "metadata", tj_owner_meta(c, secret), "type", "kubernetes.io/ssh-auth",
                    "immutable", 1, "data", "ssh-privatekey", tj_b64(c->arena, priv),
                    "ssh-publickey", tj_b64(c->arena, pub));
    if (!obj || json_array_append_new(c->extra, obj))
        goto nomem;

    /* ConfigMap <name>-mpi-hostfile: node endpoints, plus the launcher's when it is a node */
    common_buf_init(&hosts, 64u << 20);
    for (size_t i = 0; i < c->npodsets; i++) {
        struct tj_podset *ps = &c->podsets[i];
        json_t *eps, *e;
        size_t j;
        if (strcmp(ps->name, "node") != 0 &&
            !(c->mpi_launcher_as_node && strcmp(ps->name, "launcher") == 0))
            continue;
        eps = tj_endpoints(c, ps);
        if (!eps) {
            common_buf_free(&hosts);
            goto nomem;
        }
        json_array_foreach(eps, j, e)
        {
            if (common_buf_printf(&hosts, err, "%s slots=%d\n", json_string_value(e), n_slots)) {
                json_decref(eps);
                common_buf_free(&hosts);
                return err ? err->code : COMMON_ENOMEM;
            }
        }
        json_decref(eps);
    }
    obj =
        json_pack("{s:s, s:s, s:o, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                  tj_owner_meta(c, hostfile_cm), "data", "hostfile", hosts.data ? hosts.data : "");
    common_buf_free(&hosts);
    if (!obj || json_array_append_new(c->extra, obj))
        goto nomem;
    return COMMON_OK;
nomem:
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

static void mpi_validate(struct tj_ctx *c)
{
    const json_t *nn = tj_get(c->trainjob, "spec.trainer.numNodes");

    if (c->has_num_nodes && c->num_nodes >= 2 && c->mpi_launcher_as_node &&
        (!tj_podset(c, "launcher") || !tj_podset(c, "node")))
        tj_err(c->errs, c->trainjob, nn, "Invalid", "spec.trainer.numNodes",
               "Invalid value: %d: must have 1 when MPI trainingRuntime with enabled "
               "runLauncherAsNode does not have either launcher and node",
               c->num_nodes);
    tj_reserved_env(c, reserved, "must not have reserved envs, invalid envs configured");
}

const struct tj_ml_policy tj_policy_mpi = {
    .name = "mpi",
    .kind = TJ_ML_MPI,
    .counts = mpi_counts,
    .enforce = mpi_enforce,
    .validate = mpi_validate,
};
