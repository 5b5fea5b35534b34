/*
 * trainjob/lookup.c - the checks render and simulate share before a TrainJob is rendered
 * (trainjob/lookup.h): the TrainJob on its own, the runtime it names, objects given twice.
 */
#include "trainjob/lookup.h"

#include <stdio.h>
#include <string.h>

#include "trainjob/builtin.h"

enum common_rc trainjob_lookup_check(const json_t *trainjob, const char *default_namespace,
                                     struct trainjob_errors *errs, struct trainjob_ref *ref,
                                     struct common_error *err)
{
    enum common_rc rc = trainjob_validate_trainjob(trainjob, errs, err);

    if (rc != COMMON_OK)
        return rc;
    if ((rc = trainjob_runtime_ref(trainjob, default_namespace, ref, err)) != COMMON_OK)
        return rc;
    if (strcmp(ref->kind, "TrainingRuntime") != 0 &&
        strcmp(ref->kind, "ClusterTrainingRuntime") != 0)
        return common_error_set(err, COMMON_EINVAL, "spec.runtimeRef: unsupported runtime: %s.%s",
                                ref->kind, ref->api_group);
    return COMMON_OK;
}

static const char *meta(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

static const char *kind_of(const json_t *o)
{
    const char *k = json_string_value(json_object_get(o, "kind"));
    return k ? k : "";
}

int trainjob_lookup_matches(const json_t *runtime, const struct trainjob_ref *ref,
                            const char *default_namespace)
{
    const char *name = meta(runtime, "name"), *ns = meta(runtime, "namespace");

    if (!name || !ref->name || strcmp(name, ref->name) != 0 ||
        strcmp(kind_of(runtime), ref->kind) != 0)
        return 0;
    return !ref->namespace || strcmp(ns ? ns : default_namespace, ref->namespace) == 0;
}

const char *trainjob_lookup_not_found(const struct trainjob_ref *ref, const char *value,
                                      const char *where, const char *hint, char *buf, size_t n)
{
    int cluster = strcmp(ref->kind, "ClusterTrainingRuntime") == 0;
    /* the kind defaults to ClusterTrainingRuntime: a TrainingRuntime named like a built-in
     * one is most likely that one with the wrong kind */
    int builtin = !cluster && trainjob_builtin_find(ref->name) != NULL;

    /* Trainer's words (its webhook's cache lookup: "<Kind>.<group> \"<name>\" not found"; it
     * spells the ClusterTrainingRuntime path spec.RuntimeRef), then where the caller looked */
    snprintf(buf, n,
             "spec.%s: Invalid value: %s: %s.%s \"%s\" not found: specified %s must be created "
             "before the TrainJob is created (%s: none%s%s%s in its input; %s%s)%s",
             cluster ? "RuntimeRef" : "runtimeRef", value ? value : "{}", ref->kind, ref->api_group,
             ref->name, cluster ? "clusterTrainingRuntime" : "trainingRuntime", where,
             ref->namespace ? " in namespace \"" : "", ref->namespace ? ref->namespace : "",
             ref->namespace ? "\"" : "", hint,
             cluster ? ", or a built-in one: `trainsched render --list-builtin`" : "",
             builtin ? "; a built-in runtime has that name: did you mean kind: "
                       "ClusterTrainingRuntime?"
                     : "");
    return buf;
}

enum common_rc trainjob_lookup_duplicate(const json_t *const *objs, size_t n,
                                         const char *default_namespace, struct trainjob_dup *dup,
                                         struct common_error *err)
{
    /* "Kind/namespace/name" -> index of the first object, in a jansson hash */
    json_t *seen = json_object();

    memset(dup, 0, sizeof(*dup));
    if (!seen)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *name = meta(objs[i], "name"), *ns = meta(objs[i], "namespace");
        const char *kind = kind_of(objs[i]);
        int cluster = strcmp(kind, "ClusterTrainingRuntime") == 0;
        const json_t *prev;
        char key[700];
        int len;

        if (!name)
            continue; /* validation names it */
        ns = cluster ? "" : ns ? ns : default_namespace;
        len = snprintf(key, sizeof(key), "%s/%s/%s", kind, ns, name);
        if (len < 0 || (size_t)len >= sizeof(key))
            continue; /* too long a name: validation names it */
        if ((prev = json_object_get(seen, key))) {
            *dup = (struct trainjob_dup){objs[json_integer_value(prev)], objs[i], kind, ns, name};
            break;
        }
        if (json_object_set_new(seen, key, json_integer((json_int_t)i))) {
            json_decref(seen);
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
    }
    json_decref(seen);
    return COMMON_OK;
}

const char *trainjob_lookup_duplicate_message(const struct trainjob_dup *dup, const char *first_pos,
                                              char *buf, size_t n)
{
    int cluster = !*dup->namespace;

    snprintf(buf, n,
             "%s %s%s%s: metadata.name: Duplicate: the same %s is given twice (names are unique "
             "%s)%s%s",
             dup->kind, dup->namespace, cluster ? "" : "/", dup->name, dup->kind,
             cluster ? "in a cluster" : "in a namespace", *first_pos ? "; first given at " : "",
             first_pos);
    return buf;
}
