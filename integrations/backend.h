/*
 * integrations/backend.h - the gang / queue backends a runtime can be run on, one const struct
 * each, one table (integrations/backends.c), chosen per runtime by the admin.
 *
 * A backend says how the pods of a TrainJob are gang-scheduled (or queued), and so what objects
 * the TrainJob becomes besides its JobSet:
 *   coscheduling  scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1), gang enforced by
 *                 trainsched's extender (trainjob/podgroup.c builds it)
 *   volcano       Volcano PodGroup (scheduling.volcano.sh/v1beta1) (trainjob/podgroup.c as
 *                 Trainer builds it, plus integrations/volcano.c: queue, topology, tasks)
 *   kai           KAI Scheduler PodGroup (scheduling.run.ai/v2alpha2) (integrations/kai.c)
 *   kueue         Kueue queues the TrainJob; no gang object (integrations/kueue.c)
 *   native        kube-scheduler 1.36's own gang scheduling: scheduling.k8s.io/v1alpha2
 *                 PodGroup + pod spec.schedulingGroup (integrations/native.c)
 *   slurm         one Slurm job per gang through slurmrestd (integrations/slurm_backend.c,
 *                 slurm.c, slurm_sync.c; on only with serve's slurm.url, docs/slurm.md)
 *   none          no gang: pods schedule one by one
 * A pod is ganged by exactly one mechanism, never two.
 *
 * Selection (backend_select): the runtime annotation BACKEND_ANNOTATION wins, then the
 * runtime's spec.podGroupPolicy as Trainer reads it (coscheduling / volcano), then the serve
 * config default ("none" when unset). `trainsched render --backend NAME` overrides all three.
 *
 * Each backend has a pure translate step (what `render --backend` prints: no I/O, no clock) and
 * may have reconciler hooks for external side effects (a Slurm job, a Kueue preview). To add a
 * backend: define `const struct backend backend_<name>` in integrations/<name>.c and put its
 * address in the table of integrations/backends.c (one line). Every backend listed here is built
 * (b->built 1); the flag stays for a backend listed before its code lands.
 */
#ifndef INTEGRATIONS_BACKEND_H
#define INTEGRATIONS_BACKEND_H

#include <jansson.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"
#include "common/kube.h"
#include "trainjob/trainjob.h"

/* the runtime annotation naming the backend (TrainingRuntime / ClusterTrainingRuntime) */
#define BACKEND_ANNOTATION "trainsched.io/backend"
/* the field an error about it names, as the API server words paths */
#define BACKEND_FIELD "metadata.annotations[\"" BACKEND_ANNOTATION "\"]"

/* What translate sees: one TrainJob and its runtime, both borrowed, never modified. */
struct backend_in {
    const json_t *trainjob;              /* the TrainJob as given */
    const json_t *runtime;               /* the TrainingRuntime / ClusterTrainingRuntime it names */
    const struct trainjob_options *opts; /* the options trainjob_render ran with (may be NULL) */
    /* native: spec.schedulerName of every pod of the gang (all members of a PodGroup share
     * one); NULL or "": "default-scheduler" */
    const char *scheduler_name;
    int preview_wanted; /* 1: the caller keeps the preview (render); 0: it is dropped, and a
                           backend whose translate only previews may skip the work */
};

/* What one TrainJob is on the backend, for the reconciler hooks (all borrowed). */
struct backend_job {
    const json_t *trainjob; /* the cached TrainJob */
    const char *ns, *name, *uid;
    const json_t *objects; /* what backend_render gave (apply list); NULL in cancel */
    const json_t *preview; /* backend_render's preview (e.g. the Slurm job body) or NULL */
    int64_t now;           /* seconds since the epoch */
};

/* A hook's verdict on the TrainJob, written by the reconciler as a status condition. Strings
 * are static or in the arena the reconciler passes; type NULL: nothing to report. */
struct backend_report {
    const char *type, *status, *reason, *message; /* a metav1.Condition */
    int64_t requeue_after;                        /* seconds; > 0: look again then */
};

/* Where reconciler hooks run: the API client and the backend's own serve config section. */
struct backend_env {
    struct common_kube *kube; /* borrowed */
    const json_t *config;     /* the serve config's "backends.<name>" object, or NULL */
};

struct backend {
    const char *name; /* the annotation value */
    int built;        /* 0: known but not built in this version: selecting it is an error */
    const char *what; /* one line for errors and docs */
    /* the gang object trainjob_render writes for this backend (trainjob.h) */
    enum trainjob_gang core_gang;
    /* API resources the cluster must serve for this backend (NULL-terminated; NULL: none):
     * the reconciler checks them before writing anything and, when one is missing, sets a
     * condition on the TrainJob instead of creating half the objects */
    const struct common_kube_resource *const *requires;
    /* how a cluster gets what `requires` names, for the condition when it is missing */
    const char *install;
    /*
     * MAY (pure): after trainjob_render. objects (in/out) is its apply list, the JobSet
     * editable in place (pod template marks); append the gang objects the reconciler applies
     * after the JobSet. preview (out, may be NULL): append what only render prints and the
     * reconciler never applies (Kueue's Workload, Slurm's job body). Returns COMMON_OK,
     * COMMON_EINVAL naming the field, COMMON_ENOMEM.
     */
    enum common_rc (*translate)(const struct backend_in *in, json_t *objects, json_t *preview,
                                struct common_error *err);
    /* MAY (reconciler, one set per serve process): state from env; stop frees it */
    enum common_rc (*start)(const struct backend_env *env, void **state, struct common_error *err);
    void (*stop)(void *state);
    /* MAY: after the JobSet and gang objects were written (Slurm: submit once; idempotent) */
    enum common_rc (*apply)(void *state, const struct backend_job *job, struct backend_report *rep,
                            struct common_error *err);
    /* MAY: each reconcile of a TrainJob whose objects exist (Slurm: poll the job) */
    enum common_rc (*observe)(void *state, const struct backend_job *job,
                              struct backend_report *rep, struct common_error *err);
    /* MAY: the TrainJob was suspended, finished or deleted (Slurm: cancel the job) */
    enum common_rc (*cancel)(void *state, const struct backend_job *job, struct common_error *err);
};

/* {scheduling.x-k8s.io/v1alpha1 podgroups, NULL}: what coscheduling and slurm require */
extern const struct common_kube_resource *const backend_cosched_requires[];

/* scheduling.k8s.io/v1alpha2 podgroups (the native backend's PodGroups, Kubernetes 1.36) */
extern const struct common_kube_resource backend_native_podgroups;

extern const struct backend backend_coscheduling, backend_volcano, backend_kai, backend_kueue,
    backend_native, backend_slurm, backend_none;

/* backend_table - every backend, built or not, in documentation order; *n gets the count. */
const struct backend *const *backend_table(size_t *n);

/*
 * backend_lookup - the backend called name (exact, lower case). Returns it, or NULL when no
 * backend has that name. A found backend may be unbuilt (b->built == 0).
 */
const struct backend *backend_lookup(const char *name);

/* backend_names - "coscheduling, volcano, ..." (static) for error messages. */
const char *backend_names(void);

/* Where a selection came from, for messages. */
enum backend_source {
    BACKEND_FROM_OVERRIDE,   /* render --backend */
    BACKEND_FROM_ANNOTATION, /* BACKEND_ANNOTATION on the runtime */
    BACKEND_FROM_POLICY,     /* the runtime's spec.podGroupPolicy */
    BACKEND_FROM_DEFAULT,    /* the serve config default, or "none" */
};

/*
 * backend_select - the backend of runtime (pure).
 * In: runtime (borrowed; may be NULL with an override); override: `render --backend` or NULL;
 * config_default: the serve config default or NULL ("none").
 * Out: *out the backend, *from where it came from (may be NULL).
 * Errors (COMMON_EINVAL, err names the field): an unknown name ("<field>: Unsupported value
 * \"x\": supported values: ..."), an unbuilt backend ("... not built in this version"), a
 * non-string annotation, and an annotation that disagrees with spec.podGroupPolicy (naming
 * both: metadata.annotations["trainsched.io/backend"] and spec.podGroupPolicy.<policy>).
 * The field of an override is "--backend", of the default "backends.default" (serve
 * config key; flag --default-backend).
 */
enum common_rc backend_select(const json_t *runtime, const char *override,
                              const char *config_default, const struct backend **out,
                              enum backend_source *from, struct common_error *err);

/*
 * backend_render - trainjob_render for backend b, then b's translate (pure).
 * In: as trainjob_render; opts may be NULL; scheduler_name as backend_in. opts->gang is set
 * from b (a copy of opts is used). Out: *out as trainjob_render (objects with the backend's
 * objects appended); *preview (may be NULL: not wanted) a new array of what render shows but
 * nobody applies (empty when the backend has none). Returns as trainjob_render, or translate's
 * error; COMMON_EUNSUPPORTED for an unbuilt backend (err names it).
 */
enum common_rc backend_render(const struct backend *b, struct common_arena *a,
                              const json_t *trainjob, const json_t *runtime,
                              const struct trainjob_options *opts, const char *scheduler_name,
                              struct trainjob_output *out, json_t **preview,
                              struct common_error *err);

/*
 * backend_trainjob_as_created - the TrainJob as the API server holds it once its objects exist,
 * for previews that quote its uid or namespace (pure). In: trainjob and jobset (the rendered
 * JobSet), both borrowed. Out: *out a new reference: trainjob itself when it has a non-empty
 * metadata.uid and a metadata.namespace, else a copy given the uid of the JobSet's first
 * ownerReference (render's placeholder uid) and the JobSet's namespace (render's -n).
 * Errors: COMMON_ENOMEM.
 */
enum common_rc backend_trainjob_as_created(const json_t *trainjob, const json_t *jobset,
                                           json_t **out, struct common_error *err);

#endif
