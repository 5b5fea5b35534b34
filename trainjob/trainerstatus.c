/*
 * trainjob/trainerstatus.c - Kubeflow Trainer's TrainJobStatus plugin (alpha feature gate
 * TrainJobStatus), on when trainjob_options.status_server is set: every container of the
 * trainer PodSet learns where and how to report progress, and the TrainJob gets the ConfigMap
 * with the status server's CA.
 *
 * Per container (upserts, as Trainer's: env by name, the mount by mountPath):
 *   KUBEFLOW_TRAINER_SERVER_URL
 * <url_base>/apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status
 *   KUBEFLOW_TRAINER_SERVER_CA_CERT /var/run/secrets/kubeflow/trainer/ca.crt
 *   KUBEFLOW_TRAINER_SERVER_TOKEN   /var/run/secrets/kubeflow/trainer/token
 *   volumeMount kubeflow-trainer-token at /var/run/secrets/kubeflow/trainer, read-only;
 * the pod (upsert by name): projected volume kubeflow-trainer-token = a ServiceAccount token
 * (audience trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status, 3600 s,
 * path token) and ConfigMap <name>-tls-config's key ca.crt as ca.crt. The ConfigMap
 * <name>-tls-config {data: {ca.crt: <CA PEM>}} goes with the ML policy's objects.
 *
 * Source: Kubeflow Trainer v2.3.0, pkg/runtime/framework/plugins/trainjobstatus.
 */
#include <string.h>

#include "trainjob/trainjob_int.h"

#define TS_MOUNT "/var/run/secrets/kubeflow/trainer"
#define TS_VOLUME "kubeflow-trainer-token"

enum common_rc tj_trainer_status(struct tj_ctx *c, struct common_error *err)
{
    const struct trainjob_status_server *ss = c->opts ? c->opts->status_server : NULL;
    struct tj_podset *ps = tj_trainer_podset(c);
    const char *url, *aud, *cm_name;
    json_t *containers, *ct, *volumes, *cm;
    size_t i;

    if (!ss)
        return COMMON_OK;
    cm_name = common_arena_printf(c->arena, "%s-tls-config", c->name);
    aud = common_arena_printf(c->arena,
                              "trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s/status",
                              c->ns, c->name);
    url = common_arena_printf(c->arena, "%s/apis/%s", ss->url_base ? ss->url_base : "", aud);
    if (!cm_name || !aud || !url)
        goto nomem;
    if (ps) {
        containers = json_object_get(ps->podspec, "containers");
        json_array_foreach(containers, i, ct)
        {
            json_t *env = tj_arr(ct, "env"), *mounts = tj_arr(ct, "volumeMounts");
            if (!env || !mounts ||
                tj_upsert(env, "name", tj_env_value("KUBEFLOW_TRAINER_SERVER_URL", url)) ||
                tj_upsert(env, "name",
                          tj_env_value("KUBEFLOW_TRAINER_SERVER_CA_CERT", TS_MOUNT "/ca.crt")) ||
                tj_upsert(env, "name",
                          tj_env_value("KUBEFLOW_TRAINER_SERVER_TOKEN", TS_MOUNT "/token")) ||
                tj_upsert(mounts, "mountPath",
                          json_pack("{s:s, s:s, s:b}", "name", TS_VOLUME, "mountPath", TS_MOUNT,
                                    "readOnly", 1)))
                goto nomem;
        }
        volumes = tj_arr(ps->podspec, "volumes");
        if (!volumes ||
            tj_upsert(volumes, "name",
                      json_pack("{s:s, s:{s:[{s:{s:s, s:i, s:s}}, {s:{s:s, s:[{s:s, s:s}]}}]}}",
                                "name", TS_VOLUME, "projected", "sources", "serviceAccountToken",
                                "audience", aud, "expirationSeconds", 3600, "path", "token",
                                "configMap", "name", cm_name, "items", "key", "ca.crt", "path",
                                "ca.crt")))
            goto nomem;
    }
    if (!ss->ca_crt) {
        tj_warn(c->errs, "ConfigMap %s/%s (the status server's CA) is not shown: no CA was given",
                c->ns, cm_name);
        return COMMON_OK;
    }
    cm = json_pack("{s:s, s:s, s:o, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                   tj_owner_meta(c, cm_name), "data", "ca.crt", ss->ca_crt);
    if (!cm || json_array_append_new(c->extra, cm))
        goto nomem;
    return COMMON_OK;
nomem:
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}
