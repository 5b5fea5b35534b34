/*
 * trainjob/podchecks.c - the checks the API server applies to the pod template fields a
 * TrainJob or a runtime sets (beyond resources, in resources.c), applied before anything is
 * created, so that a TrainJob whose pods the API server would refuse is refused at admission and
 * by render instead of leaving a JobSet that can never create its pods.
 *
 * Source: Kubernetes v1.36 pod validation (k8s.io/kubernetes pkg/apis/core/validation:
 * ValidateEnv and validateEnvVarValueFrom, validateObjectFieldSelector with the downward API
 * conversion of pkg/apis/core/pods, validateContainerOnlyForPod, validateSchedulingGates,
 * ValidateTolerations, ValidateVolumeMounts, and ValidatePodSpec's nodeSelector and
 * serviceAccountName rules), with the default feature gates of v1.36:
 * RelaxedEnvironmentVariableValidation is GA (an env name is any printable ASCII but '='),
 * EnvFiles is on (fileKeyRef is a fifth env source), TaintTolerationComparisonOperators is alpha
 * and off (Lt and Gt are refused). Paths and wording follow Kubernetes' field errors.
 */
#include <string.h>

#include "common/names.h"
#include "trainjob/trainjob_int.h"

/* a member that is present and not null */
static int set(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return v && !json_is_null(v);
}

/* IsRelaxedEnvVarName: printable ASCII (space included) other than '=' */
static int env_name_ok(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p > 0x7e || *p == '=')
            return 0;
    return 1;
}

/* the downward API's fieldRef.fieldPath for env (validateObjectFieldSelector) */
static void check_field_ref(const json_t *doc, const json_t *fr, const char *path,
                            struct trainjob_errors *e)
{
    /* labels the downward API converts for v1 pods (pods.ConvertDownwardAPIFieldLabel) */
    static const char *const convertible[] = {
        "metadata.annotations", "metadata.labels", "metadata.name",      "metadata.namespace",
        "metadata.uid",         "spec.nodeName",   "spec.restartPolicy", "spec.serviceAccountName",
        "spec.schedulerName",   "status.phase",    "status.hostIP",      "status.hostIPs",
        "status.podIP",         "status.podIPs",   "spec.host",          NULL};
    /* the ones env may read, sorted as Kubernetes lists them */
    static const char *const for_env[] = {"metadata.name",
                                          "metadata.namespace",
                                          "metadata.uid",
                                          "spec.nodeName",
                                          "spec.serviceAccountName",
                                          "status.hostIP",
                                          "status.hostIPs",
                                          "status.podIP",
                                          "status.podIPs",
                                          NULL};
    const json_t *fp = json_object_get(fr, "fieldPath");
    const char *api = tj_str(fr, "apiVersion");
    const char *s = json_string_value(fp);
    char fpath[700];
    size_t n;
    int ok = 0;

    if (!json_is_object(fr))
        return;
    snprintf(fpath, sizeof(fpath), "%s.fieldPath", path);
    if (json_is_string(json_object_get(fr, "apiVersion")) && !*api) {
        char ap[700];
        snprintf(ap, sizeof(ap), "%s.apiVersion", path);
        tj_err(e, doc, fr, "Required", ap, "Required value");
        return;
    }
    if (!s || !*s) {
        if (!fp || json_is_string(fp))
            tj_err(e, doc, fr, "Required", fpath, "Required value");
        return;
    }
    /* apiVersion is defaulted to "v1" by the API server when left out */
    if (api && strcmp(api, "v1") != 0) {
        tj_err(e, doc, fp, "Invalid", fpath,
               "Invalid value: \"%s\": error converting fieldPath: unsupported pod version: %s", s,
               api);
        return;
    }
    n = strlen(s);
    if (n >= 2 && strcmp(s + n - 2, "']") == 0 && strstr(s, "['")) {
        /* a subscripted path: metadata.annotations['key'] or metadata.labels['key'] */
        const char *open = strstr(s, "['");
        size_t plen = (size_t)(open - s);
        const char *sub = open + 2;
        size_t slen = (size_t)(s + n - 2 - sub);
        char key[600];
        const char *why;

        if (!((plen == 20 && strncmp(s, "metadata.annotations", 20) == 0) ||
              (plen == 15 && strncmp(s, "metadata.labels", 15) == 0))) {
            tj_err(e, doc, fp, "Invalid", fpath,
                   "Invalid value: \"%s\": error converting fieldPath: field label does not "
                   "support subscript: %s",
                   s, s);
            return;
        }
        if (slen >= sizeof(key))
            slen = sizeof(key) - 1;
        memcpy(key, sub, slen);
        key[slen] = '\0';
        if (plen == 20)
            for (char *p = key; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                    *p = (char)(*p - 'A' + 'a');
        if ((why = common_names_qualified_name(key)))
            tj_err(e, doc, fp, "Invalid", path, "Invalid value: \"%s\": %s", key, why);
        return;
    }
    for (size_t i = 0; convertible[i]; i++)
        ok |= strcmp(s, convertible[i]) == 0;
    if (!ok) {
        tj_err(e, doc, fp, "Invalid", fpath,
               "Invalid value: \"%s\": error converting fieldPath: field label not supported: %s",
               s, s);
        return;
    }
    if (strcmp(s, "spec.host") == 0)
        s = "spec.nodeName";
    for (size_t i = 0; for_env[i]; i++)
        if (strcmp(s, for_env[i]) == 0)
            return;
    tj_err(e, doc, fp, "NotSupported", fpath,
           "Unsupported value: \"%s\": supported values: \"metadata.name\", "
           "\"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", "
           "\"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", "
           "\"status.podIPs\"",
           s);
}

void tj_check_env(const json_t *doc, const json_t *env, const char *path, struct trainjob_errors *e)
{
    static const char *const sources[] = {"fieldRef", "resourceFieldRef", "configMapKeyRef",
                                          "secretKeyRef", "fileKeyRef"};
    size_t i;
    json_t *ev;

    json_array_foreach((json_t *)env, i, ev)
    {
        const json_t *nm = json_object_get(ev, "name");
        const json_t *vf = json_object_get(ev, "valueFrom");
        const char *value = tj_str(ev, "value");
        char ip[700];
        int nsrc = 0;

        if (!json_is_object(ev))
            continue;
        if (json_is_string(nm) && json_string_length(nm) == 0) {
            snprintf(ip, sizeof(ip), "%s[%zu].name", path, i);
            tj_err(e, doc, nm, "Required", ip, "Required value");
        } else if (json_is_string(nm) && !env_name_ok(json_string_value(nm))) {
            snprintf(ip, sizeof(ip), "%s[%zu].name", path, i);
            tj_err(e, doc, nm, "Invalid", ip,
                   "Invalid value: \"%s\": a valid environment variable name must consist only "
                   "of printable ASCII characters other than '='",
                   json_string_value(nm));
        }
        if (!json_is_object(vf))
            continue;
        snprintf(ip, sizeof(ip), "%s[%zu].valueFrom", path, i);
        for (size_t k = 0; k < sizeof(sources) / sizeof(sources[0]); k++)
            nsrc += set(vf, sources[k]);
        if (set(vf, "fieldRef")) {
            char fp[720];
            snprintf(fp, sizeof(fp), "%s.fieldRef", ip);
            check_field_ref(doc, json_object_get(vf, "fieldRef"), fp, e);
        }
        if (nsrc == 0)
            tj_err(e, doc, vf, "Invalid", ip,
                   "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, "
                   "`configMapKeyRef`, `secretKeyRef` or `fileKeyRef`");
        else if (value && *value)
            tj_err(e, doc, vf, "Invalid", ip,
                   "Invalid value: \"\": may not be specified when `value` is not empty");
        else if (nsrc > 1)
            tj_err(e, doc, vf, "Invalid", ip,
                   "Invalid value: \"\": may not have more than one field specified at a time");
    }
}

/* ValidateTolerations with the default feature gates */
static void check_tolerations(const json_t *doc, const json_t *tols, const char *path,
                              struct trainjob_errors *e)
{
    size_t i;
    json_t *t;

    json_array_foreach((json_t *)tols, i, t)
    {
        const char *key = tj_str(t, "key");
        const char *op = tj_str(t, "operator");
        const char *value = tj_str(t, "value");
        const char *effect = tj_str(t, "effect");
        const char *why;
        char p[700];

        if (!json_is_object(t))
            continue;
        if (!op)
            op = "";
        if (!value)
            value = "";
        if (key && *key && (why = common_names_qualified_name(key))) {
            snprintf(p, sizeof(p), "%s[%zu].key", path, i);
            tj_err(e, doc, json_object_get(t, "key"), "Invalid", p, "Invalid value: \"%s\": %s",
                   key, why);
        }
        snprintf(p, sizeof(p), "%s[%zu].operator", path, i);
        if ((!key || !*key) && strcmp(op, "Exists") != 0)
            tj_err(e, doc, t, "Invalid", p,
                   "Invalid value: \"%s\": operator must be Exists when `key` is empty, which "
                   "means \"match all values and all keys\"",
                   op);
        if (set(t, "tolerationSeconds") && !(effect && strcmp(effect, "NoExecute") == 0)) {
            char ep[700];
            snprintf(ep, sizeof(ep), "%s[%zu].effect", path, i);
            tj_err(e, doc, t, "Invalid", ep,
                   "Invalid value: \"%s\": effect must be 'NoExecute' when `tolerationSeconds` "
                   "is set",
                   effect ? effect : "");
        }
        if (strcmp(op, "Equal") == 0 || !*op) {
            if ((why = common_names_label_value(value)))
                tj_err(e, doc, t, "Invalid", p, "Invalid value: \"%s\": %s", value, why);
        } else if (strcmp(op, "Exists") == 0) {
            if (*value)
                tj_err(e, doc, t, "Invalid", p,
                       "Invalid value: \"%s\": value must be empty when `operator` is 'Exists'",
                       value);
        } else if (strcmp(op, "Lt") == 0 || strcmp(op, "Gt") == 0) {
            tj_err(e, doc, json_object_get(t, "operator"), "NotSupported", p,
                   "Unsupported value: \"%s\": supported values: \"Equal\", \"Exists\", \"Lt\", "
                   "\"Gt\" (Lt and Gt need the alpha feature gate "
                   "TaintTolerationComparisonOperators)",
                   op);
        } else {
            tj_err(e, doc, json_object_get(t, "operator"), "NotSupported", p,
                   "Unsupported value: \"%s\": supported values: \"Equal\", \"Exists\"", op);
        }
        if (effect && *effect && strcmp(effect, "NoSchedule") != 0 &&
            strcmp(effect, "PreferNoSchedule") != 0 && strcmp(effect, "NoExecute") != 0) {
            char ep[700];
            snprintf(ep, sizeof(ep), "%s[%zu].effect", path, i);
            tj_err(e, doc, json_object_get(t, "effect"), "NotSupported", ep,
                   "Unsupported value: \"%s\": supported values: \"NoExecute\", \"NoSchedule\", "
                   "\"PreferNoSchedule\"",
                   effect);
        }
    }
}

void tj_check_podspec(const json_t *doc, const json_t *ps, const char *path,
                      struct trainjob_errors *e)
{
    static const char *const lists[] = {"initContainers", "containers"};
    const json_t *sel = json_object_get(ps, "nodeSelector");
    const json_t *sa = json_object_get(ps, "serviceAccountName");
    const char *k, *why;
    json_t *v;
    size_t i;
    char p[700];

    if (!json_is_object(ps))
        return;
    for (size_t l = 0; l < 2; l++)
        json_array_foreach(json_object_get(ps, lists[l]), i, v)
        {
            snprintf(p, sizeof(p), "%s.%s[%zu].env", path, lists[l], i);
            tj_check_env(doc, json_object_get(v, "env"), p, e);
        }
    snprintf(p, sizeof(p), "%s.schedulingGates", path);
    json_array_foreach(json_object_get(ps, "schedulingGates"), i, v)
    {
        const char *g = tj_str(v, "name");
        char gp[720];
        if (!g || !(why = common_names_qualified_name(g)))
            continue;
        snprintf(gp, sizeof(gp), "%s[%zu]", p, i);
        tj_err(e, doc, json_object_get(v, "name"), "Invalid", gp, "Invalid value: \"%s\": %s", g,
               why);
    }
    snprintf(p, sizeof(p), "%s.nodeSelector", path);
    json_object_foreach((json_t *)sel, k, v)
    {
        if ((why = common_names_qualified_name(k)))
            tj_err(e, doc, v, "Invalid", p, "Invalid value: \"%s\": %s", k, why);
        if (json_is_string(v) && (why = common_names_label_value(json_string_value(v))))
            tj_err(e, doc, v, "Invalid", p, "Invalid value: \"%s\": %s", json_string_value(v), why);
    }
    snprintf(p, sizeof(p), "%s.tolerations", path);
    check_tolerations(doc, json_object_get(ps, "tolerations"), p, e);
    if (json_is_string(sa) && json_string_length(sa) > 0 &&
        (why = common_names_dns1123_subdomain(json_string_value(sa)))) {
        snprintf(p, sizeof(p), "%s.serviceAccountName", path);
        tj_err(e, doc, sa, "Invalid", p, "Invalid value: \"%s\": %s", json_string_value(sa), why);
    }
}

void tj_check_pods_trainjob(const json_t *tj, struct trainjob_errors *e)
{
    static const char *const inits[] = {"dataset", "model"};
    const json_t *img = tj_get(tj, "spec.trainer.image");
    size_t i, j;
    json_t *p, *rj;
    char path[300];

    /* the image goes into the node container: Required there when empty, and a pod (not a
     * template) refuses leading or trailing whitespace */
    if (json_is_string(img)) {
        const char *s = json_string_value(img);
        size_t n = strlen(s);
        if (n == 0)
            tj_err(e, tj, img, "Required", "spec.trainer.image",
                   "Required value: the image of the trainer's node container may not be empty");
        else if (strchr(" \t\n\v\f\r", s[0]) || strchr(" \t\n\v\f\r", s[n - 1]))
            tj_err(e, tj, img, "Invalid", "spec.trainer.image",
                   "Invalid value: \"%s\": must not have leading or trailing whitespace", s);
    }
    tj_check_env(tj, tj_get(tj, "spec.trainer.env"), "spec.trainer.env", e);
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof(path), "spec.initializer.%s.env", inits[k]);
        tj_check_env(tj, tj_get(tj, path), path, e);
    }
    json_array_foreach(tj_get(tj, "spec.runtimePatches"), i, p)
    {
        json_array_foreach(tj_get(p, "trainingRuntimeSpec.template.spec.replicatedJobs"), j, rj)
        {
            snprintf(path, sizeof(path),
                     "spec.runtimePatches[%zu].trainingRuntimeSpec.template.spec.replicatedJobs[%"
                     "zu].template.spec.template.spec",
                     i, j);
            tj_check_podspec(tj, tj_get(rj, "template.spec.template.spec"), path, e);
        }
    }
}

void tj_check_pods_runtime(const json_t *rt, struct trainjob_errors *e)
{
    size_t i;
    json_t *rj;
    char path[200];

    json_array_foreach(tj_get(rt, "spec.template.spec.replicatedJobs"), i, rj)
    {
        snprintf(path, sizeof(path),
                 "spec.template.spec.replicatedJobs[%zu].template.spec.template.spec", i);
        tj_check_podspec(rt, tj_get(rj, "template.spec.template.spec"), path, e);
    }
}

/* where a volume mount of the merged pod came from: the last runtime patch that names it, else
 * the runtime's template; the path and node of its name */
static const json_t *mount_source(struct tj_ctx *c, const char *jn, const char *list,
                                  const char *cn, const char *mn, const json_t **doc, char *path,
                                  size_t n)
{
    const json_t *patches = tj_get(c->trainjob, "spec.runtimePatches");
    const json_t *rjobs;
    size_t i, j, k, m;
    json_t *rj, *ct, *mt;

    for (i = json_array_size(patches); i-- > 0;) {
        rjobs =
            tj_get(json_array_get(patches, i), "trainingRuntimeSpec.template.spec.replicatedJobs");
        json_array_foreach((json_t *)rjobs, j, rj)
        {
            if (!tj_str(rj, "name") || strcmp(tj_str(rj, "name"), jn) != 0)
                continue;
            json_array_foreach(
                tj_get(rj, "template.spec.template.spec")
                    ? json_object_get(tj_get(rj, "template.spec.template.spec"), list)
                    : NULL,
                k, ct)
            {
                if (!tj_str(ct, "name") || strcmp(tj_str(ct, "name"), cn) != 0)
                    continue;
                json_array_foreach(json_object_get(ct, "volumeMounts"), m, mt)
                {
                    if (tj_str(mt, "name") && strcmp(tj_str(mt, "name"), mn) == 0) {
                        *doc = c->trainjob;
                        snprintf(path, n,
                                 "spec.runtimePatches[%zu].trainingRuntimeSpec.template.spec."
                                 "replicatedJobs[%zu].template.spec.template.spec.%s[%zu]."
                                 "volumeMounts[%zu].name",
                                 i, j, list, k, m);
                        return json_object_get(mt, "name");
                    }
                }
            }
        }
    }
    rjobs = tj_get(c->runtime, "spec.template.spec.replicatedJobs");
    json_array_foreach((json_t *)rjobs, j, rj)
    {
        if (!tj_str(rj, "name") || strcmp(tj_str(rj, "name"), jn) != 0)
            continue;
        json_array_foreach(json_object_get(tj_get(rj, "template.spec.template.spec"), list), k, ct)
        {
            if (!tj_str(ct, "name") || strcmp(tj_str(ct, "name"), cn) != 0)
                continue;
            json_array_foreach(json_object_get(ct, "volumeMounts"), m, mt)
            {
                if (tj_str(mt, "name") && strcmp(tj_str(mt, "name"), mn) == 0) {
                    *doc = c->runtime;
                    snprintf(path, n,
                             "spec.template.spec.replicatedJobs[%zu].template.spec.template.spec."
                             "%s[%zu].volumeMounts[%zu].name",
                             j, list, k, m);
                    return json_object_get(mt, "name");
                }
            }
        }
    }
    *doc = c->trainjob;
    snprintf(path, n, "spec.runtimePatches");
    return NULL;
}

/* JobSet adds a volume per spec.volumeClaimPolicies[].templates[] (named as the PVC template)
 * to the pods of its Jobs (jobset controller, VolumeClaimPolicies) */
static int claim_volume(const struct tj_ctx *c, const char *name)
{
    size_t i, j;
    json_t *pol, *t;

    json_array_foreach(json_object_get(c->spec, "volumeClaimPolicies"), i, pol)
    {
        json_array_foreach(json_object_get(pol, "templates"), j, t)
        {
            if (tj_str(t, "metadata.name") && strcmp(tj_str(t, "metadata.name"), name) == 0)
                return 1;
        }
    }
    return 0;
}

void tj_check_mounts(struct tj_ctx *c)
{
    static const char *const lists[] = {"initContainers", "containers"};

    for (size_t p = 0; p < c->npodsets; p++) {
        const struct tj_podset *ps = &c->podsets[p];
        const json_t *vols = json_object_get(ps->podspec, "volumes");
        size_t i, k;
        json_t *ct, *mt;

        for (size_t l = 0; l < 2; l++)
            json_array_foreach(json_object_get(ps->podspec, lists[l]), i, ct)
            {
                json_array_foreach(json_object_get(ct, "volumeMounts"), k, mt)
                {
                    const char *mn = tj_str(mt, "name");
                    const char *cn = tj_str(ct, "name");
                    const json_t *doc, *node;
                    char path[600];

                    if (!mn || !cn || tj_find_named(vols, "name", mn) || claim_volume(c, mn))
                        continue;
                    node = mount_source(c, ps->name, lists[l], cn, mn, &doc, path, sizeof(path));
                    if (doc != c->trainjob)
                        continue; /* only what a runtime patch brings (see the header) */
                    tj_err(c->errs, doc, node, "NotFound", path,
                           "Not found: \"%s\": no volume of that name in the pod of replicated "
                           "job \"%s\" (container \"%s\")",
                           mn, ps->name, cn);
                }
            }
    }
}
