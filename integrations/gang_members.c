/*
 * integrations/gang_members.c - the gang members of a rendered JobSet (gang_members.h).
 */
#include <string.h>

#include "integrations/gang_members.h"
#include "topology/topology.h"
#include "trainjob/trainjob.h"

json_t *gang_jobset_of(json_t *objects)
{
    size_t i;
    json_t *o;

    json_array_foreach(objects, i, o)
    {
        const char *api = json_string_value(json_object_get(o, "apiVersion"));
        const char *kind = json_string_value(json_object_get(o, "kind"));
        if (api && kind && strcmp(kind, "JobSet") == 0 && strncmp(api, "jobset.x-k8s.io/", 16) == 0)
            return o;
    }
    return NULL;
}

int gang_depended_on(const json_t *rjobs, const char *name)
{
    size_t i, k;
    const json_t *rj, *dep;

    json_array_foreach(rjobs, i, rj)
    {
        json_array_foreach(json_object_get(rj, "dependsOn"), k, dep)
        {
            const char *dn = json_string_value(json_object_get(dep, "name"));
            if (dn && name && strcmp(dn, name) == 0)
                return 1;
        }
    }
    return 0;
}

enum gang_role gang_role(const json_t *rjobs, const char *name)
{
    switch (trainjob_gang_stage(rjobs, name)) {
    case TRAINJOB_STAGE_BEFORE:
        return GANG_BEFORE;
    case TRAINJOB_STAGE_AFTER:
        return GANG_AFTER;
    case TRAINJOB_STAGE_MEMBER:
        break;
    }
    return GANG_MEMBER;
}

json_int_t gang_int_or(const json_t *v, json_int_t dflt)
{
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

enum common_rc gang_jobset_parts(json_t *objects, json_t **meta, const char **name, json_t **rjobs,
                                 struct common_error *err)
{
    json_t *js = gang_jobset_of(objects);

    if (!js)
        return COMMON_ENOTFOUND;
    *meta = json_object_get(js, "metadata");
    *name = json_string_value(json_object_get(*meta, "name"));
    *rjobs = json_object_get(json_object_get(js, "spec"), "replicatedJobs");
    if (!*name)
        return common_error_set(err, COMMON_EINVAL, "JobSet without metadata.name");
    return COMMON_OK;
}

enum common_rc gang_object_meta(json_t *obj, const json_t *jobset_meta, struct common_error *err)
{
    json_t *meta = json_object_get(obj, "metadata");
    const json_t *ns = json_object_get(jobset_meta, "namespace");
    const json_t *owners = json_object_get(jobset_meta, "ownerReferences");

    if (!json_is_object(meta) || (ns && json_object_set(meta, "namespace", (json_t *)ns)) ||
        (owners && json_object_set_new(meta, "ownerReferences", json_deep_copy(owners))))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

#define GANG_MAX_SOURCES 64

enum common_rc gang_topology_annotations(const json_t *trainjob, const json_t *rjobs,
                                         struct common_kv *kv, size_t max, size_t *n,
                                         struct common_error *err)
{
    const json_t *sources[GANG_MAX_SOURCES];
    const char *names[GANG_MAX_SOURCES];
    size_t ns = 0, i;
    const json_t *rj;

    *n = 0;
    sources[ns] = json_object_get(json_object_get(trainjob, "metadata"), "annotations");
    names[ns++] = "the TrainJob";
    /* the jobs that run before the gang (initializers) are no part of its request */
    json_array_foreach(rjobs, i, rj)
    {
        const char *name = json_string_value(json_object_get(rj, "name"));
        const json_t *tmpl =
            json_object_get(json_object_get(json_object_get(rj, "template"), "spec"), "template");
        if (!name || gang_role(rjobs, name) == GANG_BEFORE || ns >= GANG_MAX_SOURCES)
            continue;
        sources[ns] = json_object_get(json_object_get(tmpl, "metadata"), "annotations");
        names[ns++] = name;
    }
    for (i = 0; i < ns; i++) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)sources[i], k, v)
        {
            size_t j;
            if (!topo_is_annotation(k) || !json_is_string(v))
                continue;
            for (j = 0; j < *n && strcmp(kv[j].key, k) != 0; j++)
                ;
            if (j < *n) {
                if (strcmp(kv[j].value, json_string_value(v)) != 0)
                    return common_error_set(err, COMMON_EINVAL,
                                            "metadata.annotations[\"%s\"]: Invalid value: \"%s\" "
                                            "(%s) and \"%s\": the gang asks for two topologies",
                                            k, json_string_value(v), names[i], kv[j].value);
                continue;
            }
            if (*n >= max)
                return common_error_set(err, COMMON_EINVAL, "too many topology annotations");
            kv[*n].key = k;
            kv[*n].value = json_string_value(v);
            (*n)++;
        }
    }
    return COMMON_OK;
}
