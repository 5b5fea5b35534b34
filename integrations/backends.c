/*
 * integrations/backends.c - the backend table, lookup, selection per runtime and the pure
 * render step every caller (render, reconciler, webhook) shares. The backends' own code is in
 * integrations/<name>.c, or in trainjob/podgroup.c for the PodGroups Trainer itself writes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "integrations/backend.h"

/* the scheduler-plugins PodGroup CRD (scheduling.x-k8s.io/v1alpha1), which coscheduling and slurm
 * write */
const struct common_kube_resource *const backend_cosched_requires[] = {&common_kube_podgroups,
                                                                       NULL};

/* coscheduling: the PodGroup of Trainer's podGroupPolicy (trainjob/podgroup.c) */
const struct backend backend_coscheduling = {
    .name = "coscheduling",
    .built = 1,
    .what = "scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1), gang enforced by "
            "trainsched's scheduler extender",
    .core_gang = TRAINJOB_GANG_COSCHEDULING,
    .requires = backend_cosched_requires,
    .install = "install the PodGroup CRD of kubernetes-sigs/scheduler-plugins "
               "(config/crd/bases/scheduling.x-k8s.io_podgroups.yaml; docs/install.md)",
};

/* volcano: integrations/volcano.c (Trainer's PodGroup from trainjob/podgroup.c, plus ours) */

const struct backend backend_none = {
    .name = "none",
    .built = 1,
    .what = "no gang: pods are scheduled one by one",
    .core_gang = TRAINJOB_GANG_NONE,
};

/* one line per backend; a backend's own file replaces its placeholder here */
static const struct backend *const table[] = {
    &backend_coscheduling, &backend_volcano, &backend_kai,  &backend_kueue,
    &backend_native,       &backend_slurm,   &backend_none,
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

const struct backend *const *backend_table(size_t *n)
{
    *n = NTABLE;
    return table;
}

const struct backend *backend_lookup(const char *name)
{
    for (size_t i = 0; name && i < NTABLE; i++)
        if (strcmp(table[i]->name, name) == 0)
            return table[i];
    return NULL;
}

const char *backend_names(void)
{
    static char names[256];

    if (!names[0]) {
        size_t len = 0;
        for (size_t i = 0; i < NTABLE && len < sizeof(names); i++) {
            int n = snprintf(names + len, sizeof(names) - len, "%s\"%s\"", i ? ", " : "",
                             table[i]->name);
            if (n < 0)
                break;
            len += (size_t)n;
        }
    }
    return names;
}

/* the backend named by value at field, or an error naming the field */
static enum common_rc named(const char *field, const char *value, const struct backend **out,
                            struct common_error *err)
{
    const struct backend *b = backend_lookup(value);

    if (!b)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: Unsupported value: \"%s\": supported values: %s", field, value,
                                backend_names());
    if (!b->built)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: Unsupported value: \"%s\": the %s backend (%s) is not built "
                                "in this version of trainsched",
                                field, value, b->name, b->what);
    *out = b;
    return COMMON_OK;
}

enum common_rc backend_select(const json_t *runtime, const char *override,
                              const char *config_default, const struct backend **out,
                              enum backend_source *from, struct common_error *err)
{
    const json_t *ann = json_object_get(json_object_get(runtime, "metadata"), "annotations");
    const json_t *v = json_object_get(ann, BACKEND_ANNOTATION);
    const json_t *pgp = json_object_get(json_object_get(runtime, "spec"), "podGroupPolicy");
    const char *policy = NULL;
    enum backend_source src;
    enum common_rc rc;

    *out = NULL;
    if (json_is_object(json_object_get(pgp, "coscheduling")))
        policy = "coscheduling";
    else if (json_is_object(json_object_get(pgp, "volcano")))
        policy = "volcano";
    if (override) {
        src = BACKEND_FROM_OVERRIDE;
        rc = named("--backend", override, out, err);
    } else if (v) {
        src = BACKEND_FROM_ANNOTATION;
        if (!json_is_string(v))
            return common_error_set(err, COMMON_EINVAL,
                                    BACKEND_FIELD ": Invalid value: must be a string naming one of "
                                                  "%s",
                                    backend_names());
        rc = named(BACKEND_FIELD, json_string_value(v), out, err);
        if (!rc && policy && strcmp(policy, (*out)->name) != 0) {
            *out = NULL;
            return common_error_set(err, COMMON_EINVAL,
                                    BACKEND_FIELD ": Invalid value: \"%s\": the runtime names two "
                                                  "backends: spec.podGroupPolicy.%s asks for %s",
                                    json_string_value(v), policy, policy);
        }
    } else if (policy) {
        src = BACKEND_FROM_POLICY;
        rc = named("spec.podGroupPolicy", policy, out, err);
    } else {
        src = BACKEND_FROM_DEFAULT;
        rc = named("backends.default", config_default && *config_default ? config_default : "none",
                   out, err);
    }
    if (!rc && from)
        *from = src;
    return rc;
}

enum common_rc backend_render(const struct backend *b, struct common_arena *a,
                              const json_t *trainjob, const json_t *runtime,
                              const struct trainjob_options *opts,
                              const struct backend_target *target, struct trainjob_output *out,
                              json_t **preview, struct common_error *err)
{
    struct trainjob_options o;
    struct backend_in in = {trainjob,
                            runtime,
                            &o,
                            target ? target->scheduler_name : NULL,
                            target ? target->native_api : BACKEND_NATIVE_V1BETA1,
                            target ? target->notes : NULL,
                            preview != NULL};
    json_t *pv = NULL;
    enum common_rc rc;

    if (preview)
        *preview = NULL;
    if (!b || !b->built)
        return common_error_set(err, COMMON_EUNSUPPORTED, "backend \"%s\" is not built",
                                b ? b->name : "(none)");
    if (opts)
        o = *opts;
    else
        memset(&o, 0, sizeof(o));
    o.gang = b->core_gang;
    pv = json_array();
    if (!pv)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = trainjob_render(a, trainjob, runtime, &o, out, err);
    if (!rc && !out->skipped && b->translate)
        rc = b->translate(&in, out->objects, pv, err);
    if (rc) {
        json_decref(out->objects);
        out->objects = NULL;
        json_decref(pv);
        return rc;
    }
    if (preview)
        *preview = pv;
    else
        json_decref(pv);
    return COMMON_OK;
}

enum common_rc backend_trainjob_as_created(const json_t *trainjob, const json_t *jobset,
                                           json_t **out, struct common_error *err)
{
    const json_t *meta = json_object_get(trainjob, "metadata");
    const json_t *jmeta = json_object_get(jobset, "metadata");
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    json_t *tj, *m;

    if (uid && *uid && ns) {
        *out = json_incref((json_t *)trainjob);
        return COMMON_OK;
    }
    tj = json_deep_copy(trainjob);
    m = json_object_get(tj, "metadata");
    if (!json_is_object(m))
        goto oom;
    if (!uid || !*uid) {
        const json_t *ref = json_array_get(json_object_get(jmeta, "ownerReferences"), 0);
        uid = json_string_value(json_object_get(ref, "uid"));
        if (json_object_set_new(m, "uid", json_string(uid ? uid : "")))
            goto oom;
    }
    if (!ns && (ns = json_string_value(json_object_get(jmeta, "namespace"))) &&
        json_object_set_new(m, "namespace", json_string(ns)))
        goto oom;
    *out = tj;
    return COMMON_OK;
oom:
    json_decref(tj);
    *out = NULL;
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

void backend_notes_add(struct backend_notes *notes, const char *reason, const char *fmt, ...)
{
    va_list ap;

    if (!notes)
        return;
    if (notes->n >= BACKEND_MAX_NOTES) {
        notes->lost++;
        return;
    }
    notes->item[notes->n].reason = reason;
    va_start(ap, fmt);
    vsnprintf(notes->item[notes->n].msg, sizeof(notes->item[notes->n].msg), fmt, ap);
    va_end(ap);
    notes->n++;
}
