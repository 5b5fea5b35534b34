/*
 * trainjob/policy_flux.c - Flux (mlPolicy.flux, Kubeflow Trainer v2.2+): the trainer command
 * runs under a Flux cluster that the pods of the "node" job form.
 *
 * What Trainer v2.3.0's Flux plugin (pkg/runtime/framework/plugins/flux) builds, and so what this
 * builds: spec.trainer.command becomes ["/bin/bash", "/etc/flux-config/entrypoint.sh", "<the
 * original command and args joined by spaces>"] and the args are dropped; the "node" job gets the
 * init container flux-installer (the Flux view image copies Flux onto a shared emptyDir), five
 * volumes and five mounts on its node container; two objects: ConfigMap <name>-flux-entrypoint
 * (keys init.sh, entrypoint.sh) and Secret <name>-flux-curve (key curve.cert, the broker's
 * CURVE certificate). The certificate's key pair is X25519 with the secret key = SHA-256 of the
 * TrainJob's uid, as Trainer derives it: the same TrainJob always gets the same key, so output
 * is reproducible without a key generator hook. The broker settings FLUX_VIEW_IMAGE,
 * FLUX_NETWORK_DEVICE and FLUX_QUEUE_POLICY come from defaults, overridden by the runtime's
 * trainer node container env, overridden by spec.trainer.env. PlainML's steps (count, TrainJob
 * env) run too, as in Trainer.
 *
 * The two scripts are trainsched's own, doing what Trainer's do (same paths, broker
 * configuration, hostlist, resource spec and flux flags); their text differs from Trainer's.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "trainjob/trainjob_int.h"

#define FLUX_IMAGE "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"
#define FLUX_CONFIG_DIR "/etc/flux-config"
#define FLUX_ROOT "/mnt/flux"

enum { S_IMAGE, S_DEVICE, S_QUEUE, S_N };
static const char *const setting_names[S_N] = {"FLUX_VIEW_IMAGE", "FLUX_NETWORK_DEVICE",
                                               "FLUX_QUEUE_POLICY"};
static const char *const setting_defaults[S_N] = {FLUX_IMAGE, "eth0", "fcfs"};

/* apply env entries (an array of EnvVar) to the settings; a value-less entry counts only when
 * empty_counts (Trainer reads the TrainJob's env as plain strings, the runtime's only when a
 * value is set) */
static void apply_env(const char **s, const json_t *env, int empty_counts)
{
    size_t i;
    json_t *e;

    json_array_foreach(env, i, e)
    {
        const char *name = tj_str(e, "name"), *value = tj_str(e, "value");
        for (int k = 0; name && k < S_N; k++)
            if (strcmp(name, setting_names[k]) == 0 && (value || empty_counts))
                s[k] = value ? value : "";
    }
}

/* "0" for one, "0-<n-1>" otherwise (as Trainer writes it, also for n < 1) */
static char *range(struct common_arena *a, int64_t n)
{
    return n == 1 ? common_arena_printf(a, "0")
                  : common_arena_printf(a, "0-%lld", (long long)n - 1);
}

/* the command to wrap: the runtime's trainer node command, else the TrainJob's, then the
 * TrainJob's args, joined by spaces and trimmed */
static char *original_command(struct tj_ctx *c, const json_t *node, struct common_error *err)
{
    const json_t *cmd = json_object_get(c->trainer, "command");
    const json_t *args = json_object_get(c->trainer, "args");
    const json_t *parts[2];
    struct common_buf b;
    size_t i, start, end;
    json_t *v;
    char *out;

    parts[0] = json_is_array(cmd) ? cmd : json_object_get(node, "command");
    parts[1] = json_is_array(args) ? args : NULL;
    common_buf_init(&b, 1u << 20);
    for (int p = 0; p < 2; p++) {
        json_array_foreach(parts[p], i, v)
        {
            if (common_buf_printf(&b, err, "%s%s", b.len ? " " : "",
                                  json_is_string(v) ? json_string_value(v) : "")) {
                common_buf_free(&b);
                return NULL;
            }
        }
    }
    start = 0;
    end = b.len;
    while (start < end && strchr(" \t\n\r\v\f", b.data[start]))
        start++;
    while (end > start && strchr(" \t\n\r\v\f", b.data[end - 1]))
        end--;
    out = common_arena_printf(c->arena, "%.*s", (int)(end - start), b.data ? b.data + start : "");
    common_buf_free(&b);
    if (!out)
        common_error_set(err, COMMON_ENOMEM, "out of memory");
    return out;
}

/* ZeroMQ's Z85 (32 bytes -> 40 characters) */
static void z85(const unsigned char in[32], char out[41])
{
    static const char set[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              ".-:+=^!/*?&<>()[]{}@%$#";
    char *o = out;

    for (int i = 0; i < 32; i += 4) {
        uint32_t v = (uint32_t)in[i] << 24 | (uint32_t)in[i + 1] << 16 | (uint32_t)in[i + 2] << 8 |
                     in[i + 3];
        for (uint32_t d = 52200625u; d; d /= 85)
            *o++ = set[(v / d) % 85];
    }
    *o = '\0';
}

/* curve.cert text for the TrainJob (X25519, secret key = SHA-256 of the uid) */
static char *curve_cert(struct tj_ctx *c, struct common_error *err)
{
    unsigned char seed[32], pub[32];
    size_t publen = sizeof(pub);
    unsigned int n = 0;
    char zsec[41], zpub[41];
    EVP_PKEY *key = NULL;
    char *out = NULL;

    if (!EVP_Digest(c->uid, strlen(c->uid), seed, &n, EVP_sha256(), NULL) || n != sizeof(seed) ||
        !(key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, seed, sizeof(seed))) ||
        !EVP_PKEY_get_raw_public_key(key, pub, &publen) || publen != sizeof(pub)) {
        common_error_set(err, COMMON_EIO, "cannot derive the Flux CURVE key (OpenSSL)");
        goto out;
    }
    z85(seed, zsec);
    z85(pub, zpub);
    out = common_arena_printf(c->arena,
                              "#  ZeroMQ CURVE Secret Certificate\n"
                              "#  Generated by trainsched (Kubeflow Trainer's Flux policy)\n\n"
                              "metadata\n    name = \"%s\"\n"
                              "curve\n    public-key = \"%s\"\n    secret-key = \"%s\"\n",
                              c->name, zpub, zsec);
    if (!out)
        common_error_set(err, COMMON_ENOMEM, "out of memory");
out:
    EVP_PKEY_free(key);
    return out;
}

/* init.sh: runs in the flux-installer init container (the Flux view image): writes the hostlist
 * and broker.toml under /mnt/flux/config and copies the view and /opt/software to /mnt/flux */
static const char init_fmt[] =
    "#!/bin/sh\n"
    "# Written by trainsched for the Flux policy: prepares the shared Flux volume.\n"
    "root=" FLUX_ROOT "\n"
    "config=${root}/config\n"
    "echo \"flux-installer on $(hostname): main host %s\"\n"
    "mkdir -p ${config}/etc/flux/system/cron.d ${config}/etc/flux/config ${config}/var/lib/flux "
    "\\\n"
    "  ${config}/run/flux ${config}/etc/curve ${root}/view\n"
    "echo \"%s\" > ${config}/etc/flux/system/hostlist\n"
    "cat > ${config}/etc/flux/config/broker.toml <<'BROKER'\n"
    "%s"
    "BROKER\n"
    "cat ${config}/etc/flux/config/broker.toml\n"
    "view=\"/opt/views/._view/$(ls /opt/views/._view/)\"\n"
    "cp -R \"${view}\"/* ${root}/view\n"
    "cp -R /opt/software ${root}/\n"
    "touch ${root}/flux-operator-done.txt\n";

/* broker.toml; hosts, bind and connect are arguments so that their '%' survive */
static const char broker_fmt[] =
    "[access]\n"
    "allow-guest-user = true\n"
    "allow-root-owner = true\n\n"
    "[resource]\n"
    "path = \"" FLUX_ROOT "/config/etc/flux/system/R\"\n\n"
    "[bootstrap]\n"
    "curve_cert = \"" FLUX_ROOT "/config/etc/curve/curve.cert\"\n"
    "default_port = 8050\n"
    "default_bind = \"%s\"\n"
    "default_connect = \"%s\"\n"
    "hosts = [{ host = \"%s\" }]\n\n"
    "[archive]\n"
    "dbpath = \"" FLUX_ROOT "/config/var/lib/flux/job-archive.sqlite\"\n"
    "period = \"1m\"\n"
    "busytimeout = \"50s\"\n\n"
    "[sched-fluxion-qmanager]\n"
    "queue-policy = \"%s\"\n";

/* entrypoint.sh: the node container's command; $1 is the original command. The main host
 * (<name>-node-0-0) starts the Flux instance and runs the command with `flux run <flags>`; the
 * others join it, retrying every 15 s until their broker exits cleanly. */
static const char entry_fmt[] =
    "#!/bin/bash\n"
    "# Written by trainsched for the Flux policy: starts Flux and runs the command under it.\n"
    "root=" FLUX_ROOT "\n"
    "view=${root}/view\n"
    "config=${root}/config\n"
    "cfg=${config}/etc/flux/config\n"
    "command=\"$@\"\n"
    "export PATH=$PATH:${view}/bin\n"
    "cp -R ${root}/software/* /opt/software/\n"
    "pyroot=$(find ${view} -maxdepth 2 -type d -path \"${view}/lib/python3*\" 2>/dev/null | head "
    "-n1)\n"
    "if [ -n \"${pyroot}\" ] && [ -f \"${view}/bin/$(basename ${pyroot})\" ]; then\n"
    "  rm -f ${view}/bin/python3 ${view}/bin/python\n"
    "  ln -s \"${view}/bin/$(basename ${pyroot})\" ${view}/lib/python || true\n"
    "  ln -s \"${view}/bin/$(basename ${pyroot})\" ${view}/lib/python3 || true\n"
    "fi\n"
    "export PYTHONPATH=${PYTHONPATH:-}:${pyroot}/site-packages\n"
    "export FLUX_RC_EXTRA=${view}/etc/flux/rc1.d\n"
    "printf 'flux module remove sched-simple\\nflux module load sched-fluxion-resource\\n"
    "flux module load sched-fluxion-qmanager\\n' > ${root}/load-fluxion.sh\n"
    "{\n"
    "  echo '#!/bin/bash'\n"
    "  echo \"export PATH=$PATH\"\n"
    "  echo \"export PYTHONPATH=$PYTHONPATH\"\n"
    "  echo \"export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:${view}/lib\"\n"
    "  echo \"export fluxsocket=local://${config}/run/flux/local\"\n"
    "} > ${root}/flux-view.sh\n"
    "curve=${config}/etc/curve/curve.cert\n"
    "cp /curve/curve.cert ${curve}\n"
    "chmod go-r ${curve}\n"
    "chown -R $(id -u) ${curve}\n"
    "flux R encode --hosts=$(cat ${config}/etc/flux/system/hostlist) %s > /tmp/R\n"
    "mv /tmp/R ${config}/etc/flux/system/R\n"
    "export STATE_DIR=${config}/var/lib/flux\n"
    "export FLUX_OUTPUT_DIR=/tmp/fluxout\n"
    "mkdir -p ${STATE_DIR} ${FLUX_OUTPUT_DIR} ${config}/etc/flux/system/cron.d\n"
    "opts=\"-Scron.directory=${config}/etc/flux/system/cron.d -Stbon.fanout=256 "
    "-Srundir=${config}/run/flux -Sstatedir=${STATE_DIR} "
    "-Slocal-uri=local://${config}/run/flux/local -Slog-stderr-level=0 "
    "-Slog-stderr-mode=local\"\n"
    "if [ \"$(hostname)\" = \"%s\" ]; then\n"
    "  if [ -z \"${command}\" ]; then\n"
    "    flux broker --config-path ${cfg} ${opts}\n"
    "  else\n"
    "    echo \"flux run %s ${command}\"\n"
    "    flux start -o --config ${cfg} ${opts} flux run %s ${command}\n"
    "  fi\n"
    "else\n"
    "  until flux start -o --config ${cfg} ${opts}; do\n"
    "    echo \"the Flux broker exited with $?: retrying in 15s\"\n"
    "    sleep 15\n"
    "  done\n"
    "fi\n"
    "touch ${root}/flux-operator-complete.txt\n";

/* the "node" job: volumes, the flux-installer init container, the node container's mounts */
static int edit_node_job(struct tj_ctx *c, struct tj_podset *ps, const char *cm, const char *secret,
                         const char *image)
{
    json_t *vols = tj_arr(ps->podspec, "volumes"), *inits = tj_arr(ps->podspec, "initContainers");
    json_t *ct = tj_container(ps->podspec, "node"), *mounts;

    (void)c;
    if (!vols || !inits ||
        tj_upsert(vols, "name", json_pack("{s:s, s:{}}", "name", "spack-install", "emptyDir")) ||
        tj_upsert(vols, "name", json_pack("{s:s, s:{}}", "name", "flux-install", "emptyDir")) ||
        tj_upsert(vols, "name",
                  json_pack("{s:s, s:{s:s, s:i}}", "name", cm, "configMap", "name", cm,
                            "defaultMode", 0755)) ||
        tj_upsert(
            vols, "name",
            json_pack("{s:s, s:{s:s}}", "name", "shared-memory", "emptyDir", "medium", "Memory")) ||
        tj_upsert(vols, "name",
                  json_pack("{s:s, s:{s:s, s:i}}", "name", "flux-curve", "secret", "secretName",
                            secret, "defaultMode", 0400)) ||
        json_array_append_new(inits,
                              json_pack("{s:s, s:s, s:[s, s], s:[{s:s, s:s}, {s:s, s:s, s:b}]}",
                                        "name", "flux-installer", "image", image, "command",
                                        "/bin/bash", FLUX_CONFIG_DIR "/init.sh", "volumeMounts",
                                        "name", "flux-install", "mountPath", FLUX_ROOT, "name", cm,
                                        "mountPath", FLUX_CONFIG_DIR, "readOnly", 1)))
        return -1;
    if (!ct)
        return 0;
    mounts = tj_arr(ct, "volumeMounts");
    return !mounts ||
                   tj_upsert(
                       mounts, "mountPath",
                       json_pack("{s:s, s:s}", "name", "flux-install", "mountPath", FLUX_ROOT)) ||
                   tj_upsert(mounts, "mountPath",
                             json_pack("{s:s, s:s}", "name", "spack-install", "mountPath",
                                       "/opt/software")) ||
                   tj_upsert(mounts, "mountPath",
                             json_pack("{s:s, s:s, s:b}", "name", cm, "mountPath", FLUX_CONFIG_DIR,
                                       "readOnly", 1)) ||
                   tj_upsert(mounts, "mountPath",
                             json_pack("{s:s, s:s, s:b}", "name", "flux-curve", "mountPath",
                                       "/curve", "readOnly", 1)) ||
                   tj_upsert(mounts, "mountPath",
                             json_pack("{s:s, s:s, s:b}", "name", "shared-memory", "mountPath",
                                       "/dev/shm", "readOnly", 1))
               ? -1
               : 0;
}

static enum common_rc flux_enforce(struct tj_ctx *c, struct common_error *err)
{
    struct tj_podset *tps = tj_trainer_podset(c);
    json_t *tnode = tps ? tj_container(tps->podspec, "node") : NULL;
    const char *s[S_N];
    char *cm = common_arena_printf(c->arena, "%s-flux-entrypoint", c->name);
    char *secret = common_arena_printf(c->arena, "%s-flux-curve", c->name);
    char *orig, *hosts, *bind, *connect, *broker, *init, *entry, *flags, *rspec, *cert;
    int32_t tasks = c->has_nppn ? c->nppn : c->flux_nppn;
    int64_t gpus = tj_gpu_count(tj_gpu_resources(c));
    json_t *obj;
    enum common_rc rc;

    if (!cm || !secret)
        goto nomem;
    if (!c->trainer || !c->has_num_nodes) /* validate refused these; never reached */
        return common_error_set(err, COMMON_EINVAL, "spec.trainer.numNodes: Required value");
    /* PlainML, which Trainer runs before Flux */
    if (tnode && (rc = tj_trainer_env(c, tnode, err)))
        return rc;
    for (int k = 0; k < S_N; k++)
        s[k] = setting_defaults[k];
    apply_env(s, json_object_get(tnode, "env"), 0);
    apply_env(s, json_object_get(c->trainer, "env"), 1);

    if (!(orig = original_command(c, tnode, err)))
        return err ? err->code : COMMON_ENOMEM;
    c->command =
        own_json(c, json_pack("[s, s, s]", "/bin/bash", FLUX_CONFIG_DIR "/entrypoint.sh", orig));
    if (!c->command)
        goto nomem;
    c->args = NULL;
    for (size_t i = 0; i < c->npodsets; i++)
        if (strcmp(c->podsets[i].name, "node") == 0 &&
            edit_node_job(c, &c->podsets[i], cm, secret, s[S_IMAGE]))
            goto nomem;

    /* ConfigMap <name>-flux-entrypoint (the task count wraps as Go's int32 product does) */
    hosts = range(c->arena, c->num_nodes);
    hosts = hosts ? common_arena_printf(c->arena, "%s-node-0-[%s]", c->name, hosts) : NULL;
    bind = common_arena_printf(c->arena, "tcp://%s:%%p", s[S_DEVICE]);
    connect =
        common_arena_printf(c->arena, "tcp://%%h.%s.%s.svc.cluster.local:%%p", c->name, c->ns);
    broker = bind && connect && hosts
                 ? common_arena_printf(c->arena, broker_fmt, bind, connect, hosts, s[S_QUEUE])
                 : NULL;
    init = broker ? common_arena_printf(c->arena, init_fmt, c->name, hosts, broker) : NULL;
    flags = common_arena_printf(c->arena, "-N %d -n %d", c->num_nodes,
                                (int32_t)((uint32_t)tasks * (uint32_t)c->num_nodes));
    rspec = common_arena_printf(c->arena, "--cores=%s", range(c->arena, tasks));
    if (flags && rspec && gpus > 0) {
        flags = common_arena_printf(c->arena, "%s -g %lld", flags, (long long)gpus);
        rspec = common_arena_printf(c->arena, "%s --gpu=%s", rspec, range(c->arena, gpus));
    }
    entry = flags && rspec
                ? common_arena_printf(c->arena, entry_fmt, rspec,
                                      common_arena_printf(c->arena, "%s-node-0-0", c->name), flags,
                                      flags)
                : NULL;
    if (!init || !entry)
        goto nomem;
    obj = json_pack("{s:s, s:s, s:o, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                    "metadata", tj_owner_meta(c, cm), "data", "entrypoint.sh", entry, "init.sh",
                    init);
    if (!obj || json_array_append_new(c->extra, obj))
        goto nomem;

    /* Secret <name>-flux-curve */
    if (!(cert = curve_cert(c, err)))
        return err ? err->code : COMMON_ENOMEM;
    obj = json_pack("{s:s, s:s, s:o, s:{s:s}}", "apiVersion", "v1", "kind", "Secret", "metadata",
                    tj_owner_meta(c, secret), "data", "curve.cert", tj_b64(c->arena, cert));
    if (!obj || json_array_append_new(c->extra, obj))
        goto nomem;
    return COMMON_OK;
nomem:
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

/* Trainer's Flux checks, and the fields its code reads without a nil check (spec.trainer,
 * spec.trainer.numNodes: Trainer's controller fails on a Flux TrainJob without them) */
static void flux_validate(struct tj_ctx *c)
{
    const json_t *nppn = tj_get(c->trainjob, "spec.trainer.numProcPerNode");

    if (!c->has_num_nodes)
        tj_err(c->errs, c->trainjob, tj_get(c->trainjob, "spec.trainer"), "Required",
               "spec.trainer.numNodes",
               "Required value: a TrainJob on a Flux runtime must set numNodes");
    if (c->has_nppn && c->nppn < 1)
        tj_err(c->errs, c->trainjob, nppn, "Invalid", "spec.trainer.numProcPerNode",
               "Invalid value: %d: must be greater than or equal to 1 for Flux TrainJob", c->nppn);
    for (size_t i = 0; i < c->npodsets; i++) {
        if (strcmp(c->podsets[i].name, "node") != 0)
            continue;
        if (tj_find_named(json_object_get(c->podsets[i].podspec, "initContainers"), "name",
                          "flux-installer"))
            tj_err(c->errs, c->trainjob, NULL, "Invalid", "spec.trainer.initContainers",
                   "Invalid value: \"flux-installer\": InitContainer 'flux-installer' is reserved");
    }
}

const struct tj_ml_policy tj_policy_flux = {
    .name = "flux",
    .kind = TJ_ML_FLUX,
    .counts = tj_trainer_count,
    .enforce = flux_enforce,
    .validate = flux_validate,
};
