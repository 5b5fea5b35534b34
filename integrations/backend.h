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
 *   native        kube-scheduler's own gang scheduling, in the version the cluster serves:
 *                 scheduling.k8s.io/v1beta1 Workload + PodGroup (Kubernetes 1.37) or v1alpha2
 *                 PodGroup (1.36), + pod spec.schedulingGroup (integrations/native.c)
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

/* The API the native backend writes, by the Kubernetes version that serves it. */
enum backend_native_api {
    BACKEND_NATIVE_V1BETA1,  /* Kubernetes 1.37: Workload + PodGroup (the default: the newest) */
    BACKEND_NATIVE_V1ALPHA2, /* Kubernetes 1.36: PodGroup alone */
};

/* What a backend could not carry into the objects it wrote (a request the API has no field
 * for), one line each: render prints them as notes, the reconciler as a TrainJob condition and
 * a Warning Event. reason is static (a CamelCase Event/condition reason); msg names the
 * annotation or field. At most BACKEND_MAX_NOTES; more are counted in `lost`. */
#define BACKEND_MAX_NOTES 8
struct backend_notes {
    size_t n, lost;
    struct {
        const char *reason;
        char msg[600];
    } item[BACKEND_MAX_NOTES];
};

/* backend_notes_add - add one note (printf format) to notes (NULL: nothing). */
void backend_notes_add(struct backend_notes *notes, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Where the objects go, for backend_render (NULL there: every field its default). */
struct backend_target {
    /* native: spec.schedulerName of every pod of the gang (all members of a PodGroup share
     * one); NULL or "": "default-scheduler" */
    const char *scheduler_name;
    enum backend_native_api native_api; /* native: the API the cluster serves */
    struct backend_notes *notes;        /* out (may be NULL): what could not be carried */
};

/* What translate sees: one TrainJob and its runtime, both borrowed, never modified. */
struct backend_in {
    const json_t *trainjob;              /* the TrainJob as given */
    const json_t *runtime;               /* the TrainingRuntime / ClusterTrainingRuntime it names */
    const struct trainjob_options *opts; /* the options trainjob_render ran with (may be NULL) */
    const char *scheduler_name;          /* as backend_target */
    enum backend_native_api native_api;  /* as backend_target */
    struct backend_notes *notes;         /* the one output: as backend_target (may be NULL) */
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
/* scheduling.k8s.io/v1beta1 podgroups and workloads (the native backend, Kubernetes 1.37) */
extern const struct common_kube_resource backend_native_podgroups_v1beta1,
    backend_native_workloads_v1beta1;

/* backend_native_api_version - "scheduling.k8s.io/v1beta1" or ".../v1alpha2" (static). */
const char *backend_native_api_version(enum backend_native_api api);

/* "1.36", "1.37": the values backend_native_kube_version knows, for messages */
#define BACKEND_KUBE_VERSIONS "\"1.36\", \"1.37\""

/*
 * backend_native_kube_version - the native API of Kubernetes version v ("1.36": v1alpha2,
 * "1.37": v1beta1; a leading "v" and a patch number are accepted: "v1.37.2"). field names the
 * source in messages ("--kube-version"). COMMON_OK, or COMMON_EINVAL ("--kube-version:
 * Unsupported value: \"1.35\": supported values: \"1.36\", \"1.37\"").
 */
enum common_rc backend_native_kube_version(const char *field, const char *v,
                                           enum backend_native_api *out, struct common_error *err);

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
 * In: as trainjob_render; opts may be NULL; target (may be NULL: defaults) where the objects
 * go, and target->notes (may be NULL) receives what b could not carry (zero it first). opts->gang
 * is set from b (a copy of opts is used). Out: *out as trainjob_render (objects with the backend's
 * objects appended); *preview (may be NULL: not wanted) a new array of what render shows but
 * nobody applies (empty when the backend has none). Returns as trainjob_render, or translate's
 * error; COMMON_EUNSUPPORTED for an unbuilt backend (err names it).
 */
enum common_rc backend_render(const struct backend *b, struct common_arena *a,
                              const json_t *trainjob, const json_t *runtime,
                              const struct trainjob_options *opts,
                              const struct backend_target *target, struct trainjob_output *out,
                              json_t **preview, struct common_error *err);

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
