/*
 * trainjob/trainjob_int.h - shared between the files of trainjob/ only.
 *
 * The build keeps the runtime's JobSetSpec as JSON (a deep copy that it edits in place): a
 * pod template can hold any Kubernetes field, and only the ones Trainer touches are read. The
 * Trainer-owned knobs (mlPolicy, podGroupPolicy, trainer, initializer) are read into
 * struct tj_ctx once, after validation, so later steps never meet a wrong type.
 */
#ifndef TRAINJOB_INT_H
#define TRAINJOB_INT_H

#include <jansson.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"
#include "common/quantity.h"
#include "trainjob/trainjob.h"

#define TJ_CONTROLLER "trainer.kubeflow.org/trainjob-controller"
#define TJ_GROUP "trainer.kubeflow.org"
#define TJ_API_VERSION "trainer.kubeflow.org/v1alpha1"
#define TJ_ANCESTOR_LABEL "trainer.kubeflow.org/trainjob-ancestor-step"
#define TJ_RANK_FIELD "metadata.annotations['batch.kubernetes.io/job-completion-index']"
#define TJ_PORT 29500

/* ---- field errors (errors.c) ---- */
void tj_err(struct trainjob_errors *e, const json_t *doc, const json_t *node, const char *type,
            const char *path, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* the same, printing value (kept alive by the caller, e.g. in the arena) instead of node, which
 * still gives the error its position: for Trainer's values in Go's encoding (tj_struct_value) */
void tj_err_value(struct trainjob_errors *e, const json_t *doc, const json_t *node,
                  const json_t *value, const char *type, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
void tj_warn(struct trainjob_errors *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- schema (schema.c) ---- */
enum tj_schema_kind { TJ_SCHEMA_TRAINJOB, TJ_SCHEMA_RUNTIME };
/* Structural check of obj against the kind's schema: types, unknown fields (strict for the
 * trainer.kubeflow.org types), required fields, bounds, enums, list-map keys. */
void tj_schema_check(enum tj_schema_kind kind, const json_t *obj, struct trainjob_errors *e);

/* ---- container resources (resources.c) ---- */
/* The API server's checks of one ResourceRequirements object res ({"limits": {name: qty},
 * "requests": {...}}; anything else is ignored) found at path in doc: resource names, negative
 * quantities, fractions of extended resources, requests above limits, extended resources
 * overcommitted. Each problem is one field error at "<path>.limits[<name>]" or
 * "<path>.requests[<name>]", worded as Kubernetes words it, with ctx (may be NULL) appended. */
void tj_check_resources(const json_t *doc, const json_t *res, const char *path, const char *ctx,
                        struct trainjob_errors *e);
/* an extended resource (nvidia.com/gpu): a name with a domain outside kubernetes.io, which
 * cannot be overcommitted (its request equals its limit) */
int tj_resource_is_extended(const char *name);
/* the above on spec.trainer.resourcesPerNode of a TrainJob */
void tj_check_resources_trainjob(const json_t *tj, struct trainjob_errors *e);
/* the above on every container and init container of a runtime's replicated jobs */
void tj_check_resources_runtime(const json_t *rt, struct trainjob_errors *e);
/* res.claims[].name (res: a ResourceRequirements found at path in doc) must each name an entry
 * of podspec.resourceClaims, else NotSupported at "<path>.claims[k].name" (the pod check of
 * check_pod_claims, for spec.trainer.resourcesPerNode once merged into a pod) */
void tj_check_resources_claims(const json_t *doc, const json_t *res, const json_t *podspec,
                               const char *path, struct trainjob_errors *e);

/* ---- pod template fields (podchecks.c), Kubernetes v1.36 pod validation ---- */
/* One EnvVar list env (array; anything else is ignored) found at path in doc: name empty
 * (Required) or not printable ASCII without '=' (Invalid) at "<path>[i].name"; valueFrom with no
 * source, with value set too, or with more than one source (Invalid at "<path>[i].valueFrom");
 * a fieldRef.fieldPath the downward API does not offer to env (at ".fieldRef.fieldPath"). */
void tj_check_env(const json_t *doc, const json_t *env, const char *path,
                  struct trainjob_errors *e);
/* One PodSpec (or a runtime patch's PodSpec) at path in doc: every container's env (above),
 * schedulingGates[i] qualified names, nodeSelector keys (qualified names) and values (label
 * values), tolerations (key, operator Equal|Exists, value empty for Exists, effect), and
 * serviceAccountName a DNS-1123 subdomain. */
void tj_check_podspec(const json_t *doc, const json_t *ps, const char *path,
                      struct trainjob_errors *e);
/* a TrainJob: spec.trainer.image (not empty, no leading/trailing whitespace), spec.trainer.env,
 * spec.initializer.{dataset,model}.env, and every runtime patch's pod spec */
void tj_check_pods_trainjob(const json_t *tj, struct trainjob_errors *e);
/* a runtime: every replicated job's pod spec */
void tj_check_pods_runtime(const json_t *rt, struct trainjob_errors *e);

/* ---- JSON helpers (podspec.c) ---- */
json_t *tj_get(const json_t *obj, const char *dotted); /* borrowed; NULL when any step missing */
const char *tj_str(const json_t *obj, const char *dotted); /* NULL unless a string */
json_t *tj_obj(json_t *parent, const char *key);           /* get or create an object member */
json_t *tj_arr(json_t *parent, const char *key);           /* get or create an array member */
json_t *tj_find_named(const json_t *arr, const char *key, const char *value);
int tj_set(json_t *obj, const char *key, json_t *value); /* steals value; -1 on no memory */
json_t *tj_env_value(const char *name, const char *value);
json_t *tj_env_fieldref(const char *name, const char *path);
/* upsert: replace the element whose key equals the new one's, else append (steals item) */
int tj_upsert(json_t *arr, const char *key, json_t *item);
/* upsert every EnvVar of env (an array, borrowed) into container.env by name; -1: no memory */
int tj_upsert_env(json_t *container, const json_t *env);
int tj_upsert_port(json_t *container, int port);
json_t *tj_container(json_t *podspec, const char *name);     /* regular containers */
json_t *tj_any_container(json_t *podspec, const char *name); /* regular, then init */

/* Strategic merge patch of patch onto target (in place), with JobSetSpec's patch metadata:
 * lists merged by "name" (replicatedJobs, containers, initContainers, volumes, env,
 * imagePullSecrets, schedulingGates), "mountPath" (volumeMounts), "containerPort" (ports);
 * other lists (tolerations, args, command) replaced; maps merged key by key; null deletes.
 * Order as apimachinery's strategic merge leaves it: the patch's items in patch order, woven
 * with the original-only items so that new items come before the original ones after them;
 * replicatedJobs alone keep the runtime's order (Trainer sorts them back). */
int tj_strategic_merge(json_t *target, const json_t *patch);

/* A quantity from a JSON string, integer or real (YAML `cpu: 2.5`). */
enum common_rc tj_quantity(const json_t *v, struct common_quantity *q, struct common_error *err);

/* Every quantity in limits/requests/overhead maps and sizeLimit -> its canonical string
 * ("1000m" -> "1", "1024Mi" -> "1Gi", 2 -> "2"). -1: no memory. */
int tj_normalize_quantities(json_t *v);

/* Resource helpers. Effective pod requests (sum of containers and sidecars vs the largest init
 * container, plus overhead) into *out (an object of name -> quantity strings; new ref). */
enum common_rc tj_pod_requests(const json_t *podspec, json_t **out, struct common_error *err);
/* GPU count: first resource (by name order) whose name contains "gpu" (any case) in
 * requests, else in limits; 0 when none. */
int64_t tj_gpu_count(const json_t *resources);
/* the same, with where the count was read: *list "requests" or "limits", *key the resource name,
 * *node its value (each may be NULL; set only when the count is > 0) */
int64_t tj_gpu_find(const json_t *resources, const char **list, const char **key,
                    const json_t **node);

/* ---- the build context ---- */
struct tj_podset {
    const char *name;     /* replicated job name */
    const char *ancestor; /* value of the ancestor label or NULL */
    int32_t count;        /* pods of this replicated job (parallelism) */
    json_t *rjob;         /* the replicatedJobs[] element (borrowed from ctx->spec) */
    json_t *podspec;      /* its template.spec.template.spec (borrowed) */
};

enum tj_ml { TJ_ML_PLAIN, TJ_ML_TORCH, TJ_ML_MPI, TJ_ML_JAX, TJ_ML_XGBOOST, TJ_ML_FLUX };
enum tj_gang { TJ_GANG_NONE, TJ_GANG_COSCHEDULING, TJ_GANG_VOLCANO };

struct tj_ctx {
    struct common_arena *arena;
    const json_t *trainjob;    /* the defaulted TrainJob (owned by the arena) */
    const json_t *runtime;     /* the defaulted runtime (owned by the arena) */
    const json_t *runtime_doc; /* the runtime as given (field errors point into it), or NULL */
    const char *name, *ns, *uid;
    /* TrainJob */
    const json_t *trainer; /* spec.trainer or NULL */
    int has_num_nodes;
    int32_t num_nodes;
    int has_nppn;
    int32_t nppn;            /* spec.trainer.numProcPerNode */
    const json_t *resources; /* spec.trainer.resourcesPerNode or NULL */
    int suspend;
    /* runtime */
    const json_t *ml_policy; /* spec.mlPolicy or NULL */
    enum tj_ml ml;
    int32_t rt_num_nodes; /* mlPolicy.numNodes, 1 when unset */
    unsigned gangs;       /* bit (1 << enum tj_gang) per gang policy */
    /* MPI */
    int32_t mpi_nppn;
    const char *mpi_impl, *mpi_ssh_path;
    int mpi_launcher_as_node;
    /* Flux */
    int32_t flux_nppn; /* mlPolicy.flux.numProcPerNode (CRD default 1) */
    /* the JobSet being built */
    json_t *labels, *annotations; /* JobSet metadata (owned) */
    json_t *spec;                 /* JobSetSpec (owned) */
    struct tj_podset *podsets;
    size_t npodsets;
    json_t *extra;                           /* Secrets/ConfigMaps of the ML policy (owned array) */
    const json_t *runtime_trainer_resources; /* runtime node container resources (copy) */
    const json_t *command, *args; /* trainer command/args to write (policies may rewrite) */
    const struct trainjob_options *opts;
    struct trainjob_errors *errs;
};

/* after the runtime patches are merged (podchecks.c): a volumeMounts[].name that a runtime
 * patch sets must name a volume of the merged pod or a JobSet volumeClaimPolicies template, else
 * NotFound at the mount's name in the (last) patch that set it. Mounts of the runtime's own
 * template are left alone (JobSet or other controllers may add their volumes). */
void tj_check_mounts(struct tj_ctx *c);

/* ---- the context's helpers (context.c) ---- */
/* keep a new JSON reference alive until the arena is destroyed; returns v, or NULL when out of
 * memory (v is released then) */
json_t *tj_own(struct common_arena *a, json_t *v);
json_t *own_json(struct tj_ctx *c, json_t *v); /* tj_own in the context's arena */
struct tj_podset *tj_podset(struct tj_ctx *c, const char *name);
struct tj_podset *tj_trainer_podset(struct tj_ctx *c);
/* resources used for GPU detection: TrainJob resourcesPerNode wholesale, else the runtime's
 * trainer node container resources */
const json_t *tj_gpu_resources(struct tj_ctx *c);
/* The GPU count of tj_gpu_resources (tj_gpu_count) when gpus x pods fits the int32 count an ML
 * policy makes of it (a worker or slot count; Kubernetes' replica and parallelism counts are
 * int32 too); pods < 1 counts as 1. Else one field error at the quantity, named where it was
 * written: spec.trainer.resourcesPerNode.<requests|limits>[<name>] of the TrainJob, or the
 * runtime's spec.template.spec.replicatedJobs[i]...containers[j].resources.<list>[<name>];
 * what (e.g. "DMLC_NUM_WORKER") says which count; and -1. */
int64_t tj_gpu_count_int32(struct tj_ctx *c, int64_t pods, const char *what);
json_t *tj_owner_meta(struct tj_ctx *c, const char *name); /* {name, namespace, ownerRefs} */
/* The value a Trainer field error prints for a Go struct (apimachinery prints it as Go's JSON
 * encoding): a copy of obj with only the members keys names, in that order, each only when
 * present (Go's omitempty fields; a struct encodes its fields in declaration order whatever
 * order the input had). Kept in arena a; NULL when obj is not an object or out of memory.
 * E.g. Trainer's RuntimeRef: {"name", "apiGroup", "kind"} (tj_runtime_ref_value). */
const json_t *tj_struct_value(struct common_arena *a, const json_t *obj, const char *const *keys);
/* A list of corev1.Container as Trainer's errors print it: each container's fields in Go's
 * declaration order, "resources" always (a struct: {} when unset); nested values as given */
const json_t *tj_containers_value(struct common_arena *a, const json_t *containers);
/* spec.runtimeRef of the TrainJob tj as Trainer's errors print it: {name, apiGroup, kind}, with
 * the CRD's defaults for apiGroup and kind when tj (as given to render) lacks them */
const json_t *tj_runtime_ref_value(struct common_arena *a, const json_t *tj);
/* A ResourceRequirements res as Trainer's errors print it (Go's encoding of
 * corev1.ResourceRequirements): limits, requests, claims in that order, the resource names
 * sorted and the quantities canonical ("1000m" -> "1"); JSON null when res is absent (Go's nil
 * pointer). Kept in arena a; NULL only when out of memory. */
const json_t *tj_resources_value(struct common_arena *a, const json_t *res);
/* standard base64 of the string s (Secret data) in the arena; NULL when out of memory */
char *tj_b64(struct common_arena *a, const char *s);

/* ---- ML policies (table in policies.c, one const struct each in policy_*.c) ---- */
struct tj_ml_policy {
    const char *name;
    enum tj_ml kind;
    /* MAY: counts (PodSet numbers) before endpoints are computed */
    enum common_rc (*counts)(struct tj_ctx *c, struct common_error *err);
    /* MAY: env, ports, volumes on the pod templates; extra objects into c->extra */
    enum common_rc (*enforce)(struct tj_ctx *c, struct common_error *err);
    /* MAY: webhook checks (§5.1) */
    void (*validate)(struct tj_ctx *c);
};
extern const struct tj_ml_policy tj_policy_torch, tj_policy_mpi, tj_policy_jax, tj_policy_xgboost,
    tj_policy_plain, tj_policy_flux;
const struct tj_ml_policy *tj_ml_policy_for(enum tj_ml kind);
/* steps several ML policies share (context.c): the trainer PodSet's count from
 * spec.trainer.numNodes; the TrainJob's env upserted into the node container; one error listing
 * the reserved env names found in spec.trainer.env */
enum common_rc tj_trainer_count(struct tj_ctx *c, struct common_error *err);
enum common_rc tj_trainer_env(struct tj_ctx *c, json_t *container, struct common_error *err);
void tj_reserved_env(struct tj_ctx *c, const char *const *reserved, const char *gist);

/* (context.c) endpoint list "<name>-<rjob>-<replica>-<pod>.<subdomain>" for a podset (array,
 * new ref) */
json_t *tj_endpoints(struct tj_ctx *c, const struct tj_podset *ps);
/* replicas of the podset's replicated job in the JobSet written (§2.5): 1 for the initializer and
 * trainer jobs, else the template's own (JobSet default 1) */
int64_t tj_podset_replicas(const struct tj_podset *ps);

/* ---- the TrainJobStatus feature (trainerstatus.c) ---- */
/* when opts->status_server is set: the status server's env and token volume in every container
 * of the trainer PodSet, and the ConfigMap <name>-tls-config into c->extra */
enum common_rc tj_trainer_status(struct tj_ctx *c, struct common_error *err);

/* ---- gang objects (podgroup.c) ---- */
struct tj_gang_policy {
    const char *name;
    enum tj_gang kind;
    /* MUST: label or annotate every pod template */
    enum common_rc (*enforce)(struct tj_ctx *c, struct common_error *err);
    /* MUST: the gang object (new ref) */
    enum common_rc (*build)(struct tj_ctx *c, json_t **obj, struct common_error *err);
    /* MAY: webhook checks */
    void (*validate)(struct tj_ctx *c);
    /* MAY: marks for the scheduler on every pod template, run after every gang object is built
     * (so they never count in minResources) and before the JobSet is */
    enum common_rc (*mark)(struct tj_ctx *c, struct common_error *err);
};
const struct tj_gang_policy *tj_gang_policy_for(enum tj_gang kind);
/* minMember and minResources over every podset (§3.1), or with members_only over the gang's
 * members alone (trainjob_gang_stage TRAINJOB_STAGE_MEMBER: no initializer, no MPI launcher) */
enum common_rc tj_gang_totals(struct tj_ctx *c, int members_only, int64_t *min_member,
                              json_t **min_resources, struct common_error *err);

/* ---- defaults (defaults.c) ---- */
json_t *tj_default_trainjob(const json_t *tj, const char *default_ns); /* new ref */
/* The runtime as Trainer reads it (new ref, NULL on no memory): a deep copy with the CRD's
 * schema defaults written where absent (tj_crd_default_runtime) and the JobSet fields that Go
 * omits when zero removed (tj_go_roundtrip_runtime). Both helpers edit rt in place, -1: no
 * memory. */
json_t *tj_default_runtime(const json_t *rt);
int tj_crd_default_runtime(json_t *rt);
int tj_go_roundtrip_runtime(json_t *rt);

/* ---- validation (validate.c) ---- */
void tj_object_meta(const json_t *obj, int namespaced, struct trainjob_errors *e);
void tj_cel_trainjob(const json_t *tj, struct trainjob_errors *e);
void tj_cel_runtime(const json_t *rt, struct trainjob_errors *e);
void tj_webhook_runtime(const json_t *rt, struct trainjob_errors *e);
void tj_webhook_trainjob(struct tj_ctx *c);
/* JobSet's name-length rule on the JobSet to be written (cases.md C56); needs the final counts
 * (run after the ML policy's counts) */
void tj_webhook_generated_names(struct tj_ctx *c);

#endif
