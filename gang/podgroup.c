/*
 * gang/podgroup.c - decode a scheduling.x-k8s.io/v1alpha1 PodGroup (protocols.md 3.1) into
 * struct gang_podgroup: spec.minMember, spec.minResources (cpu in millicores, everything else
 * in whole units rounded up, as kube-scheduler counts them), spec.scheduleTimeoutSeconds and
 * the annotation GANG_PHASED_ANNOTATION. Fields we do not read are ignored.
 */
#include <string.h>

#include "common/quantity.h"
#include "gang/gang.h"
#include "topology/topology.h"

static enum common_rc int32_field(const json_t *spec, const char *key, int32_t *out, int *has,
                                  struct common_error *err)
{
    const json_t *v = json_object_get(spec, key);
    json_int_t x;

    *has = 0;
    if (!v || json_is_null(v))
        return COMMON_OK;
    if (!json_is_integer(v))
        return common_error_set(err, COMMON_EINVAL, "spec.%s: expected an integer", key);
    x = json_integer_value(v);
    if (x < 0 || x > INT32_MAX)
        return common_error_set(err, COMMON_EINVAL, "spec.%s: %lld is out of range (0..%d)", key,
                                (long long)x, INT32_MAX);
    *out = (int32_t)x;
    *has = 1;
    return COMMON_OK;
}

static enum common_rc quantity_of(const json_t *v, const char *name, int milli, int64_t *out,
                                  struct common_error *err)
{
    struct common_quantity q;
    char buf[64];
    const char *text;
    enum common_rc rc;

    if (json_is_string(v)) {
        text = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        text = buf;
    } else {
        return common_error_set(err, COMMON_EINVAL,
                                "spec.minResources[%s]: expected a quantity string", name);
    }
    rc = common_quantity_parse(text, &q, err);
    if (!rc)
        rc = milli ? common_quantity_milli(&q, out, err) : common_quantity_value_ceil(&q, out, err);
    if (rc) {
        common_error_prefix(err, "spec.minResources[%s]", name);
        return rc;
    }
    if (*out < 0)
        return common_error_set(err, COMMON_EINVAL, "spec.minResources[%s]: must not be negative",
                                name);
    return COMMON_OK;
}

enum common_rc gang_podgroup_from_json(const json_t *obj, struct gang_podgroup *out,
                                       struct common_error *err)
{
    const json_t *meta, *spec, *ann, *res;
    const char *k;
    json_t *v;
    enum common_rc rc;
    int has;

    memset(out, 0, sizeof(*out));
    out->phased_jobs = "";
    out->min_resources.extended = out->min_extended;
    meta = json_object_get(obj, "metadata");
    if (!json_is_object(obj) || !json_is_object(meta))
        return common_error_set(err, COMMON_EINVAL, "PodGroup: metadata: expected an object");
    out->namespace = json_string_value(json_object_get(meta, "namespace"));
    out->name = json_string_value(json_object_get(meta, "name"));
    if (!out->namespace || !*out->namespace || !out->name || !*out->name)
        return common_error_set(err, COMMON_EINVAL,
                                "PodGroup: metadata.namespace and metadata.name are required");
    ann = json_object_get(meta, "annotations");
    out->dra_match = json_string_value(json_object_get(ann, GANG_DRA_MATCH_ANNOTATION));
    if (out->dra_match && !*out->dra_match)
        out->dra_match = NULL;
    if (json_is_string(json_object_get(ann, GANG_PHASED_ANNOTATION)))
        out->phased_jobs = json_string_value(json_object_get(ann, GANG_PHASED_ANNOTATION));
    json_object_foreach((json_t *)ann, k, v)
    {
        if (!topo_is_annotation(k) || out->n_topology >= GANG_MAX_TOPOLOGY_ANN)
            continue;
        if (!json_is_string(v))
            return common_error_set(err, COMMON_EINVAL,
                                    "metadata.annotations[%s]: expected a string", k);
        out->topology[out->n_topology].key = k;
        out->topology[out->n_topology++].value = json_string_value(v);
    }
    spec = json_object_get(obj, "spec");
    if (!spec || json_is_null(spec))
        return COMMON_OK;
    if (!json_is_object(spec))
        return common_error_set(err, COMMON_EINVAL, "spec: expected an object");
    if ((rc = int32_field(spec, "minMember", &out->min_member, &has, err)) ||
        (rc = int32_field(spec, "scheduleTimeoutSeconds", &out->timeout_seconds, &out->has_timeout,
                          err)))
        return rc;
    res = json_object_get(spec, "minResources");
    if (!res || json_is_null(res))
        return COMMON_OK;
    if (!json_is_object(res))
        return common_error_set(err, COMMON_EINVAL, "spec.minResources: expected an object");
    json_object_foreach((json_t *)res, k, v)
    {
        int64_t x;
        if ((rc = quantity_of(v, k, strcmp(k, "cpu") == 0, &x, err)))
            return rc;
        out->has_min_resources = 1;
        if (strcmp(k, "cpu") == 0) {
            out->min_resources.milli_cpu = x;
        } else if (strcmp(k, "memory") == 0) {
            out->min_resources.memory = x;
        } else if (strcmp(k, "ephemeral-storage") == 0) {
            out->min_resources.ephemeral_storage = x;
        } else if (strcmp(k, "pods") == 0) {
            out->min_resources.pods = x;
        } else {
            if (out->min_resources.n_extended >= GANG_MAX_RESOURCES)
                return common_error_set(err, COMMON_EINVAL,
                                        "spec.minResources: more than %d resources",
                                        GANG_MAX_RESOURCES);
            out->min_extended[out->min_resources.n_extended].name = k;
            out->min_extended[out->min_resources.n_extended++].value = x;
        }
    }
    return COMMON_OK;
}
