/*
 * webhook/handlers.h - the admission decisions of trainsched: one table of endpoints, each a
 * pure function of a decoded AdmissionReview, the runtimes the caller can look up and an
 * explicit `now`. No I/O, no clock, no globals; output is deterministic.
 *
 * Endpoints (webhook_endpoints[], in this order; Trainer's own path is served as an alias so
 * its webhook configurations can point here unchanged):
 *   validate-trainjob               POST /validate-trainjob               (Trainer:
 *                                   /validate-trainer-kubeflow-org-v1alpha1-trainjob)
 *     TrainJob CREATE and UPDATE: the CRD schema and CEL rules (422 Invalid, as the API server
 *     answers), on UPDATE the CEL transition rules (`field is immutable`, 422); then Trainer's
 *     webhook (403 Forbidden, one message for all errors): unsupported runtime kind, the runtime
 *     must exist (looked up through the caller's callback), every check of trainer.md §5.1 that
 *     trainjob_render runs, and on UPDATE the runtimePatches rules 15-17 (changes only while
 *     suspended before or after the update, never while a replicated job of the JobSet is
 *     active). A deprecated ClusterTrainingRuntime gives Trainer's warning.
 *   validate-trainingruntime        POST /validate-trainingruntime        (Trainer:
 * ...-trainingruntime) validate-clustertrainingruntime POST /validate-clustertrainingruntime
 * (Trainer: ...-clustertrainingruntime) trainer.md §5.2 through trainjob_validate_runtime: schema
 * and CEL errors 422, webhook errors ("always must be 1", the ancestor's required container) 403.
 * Both kinds on CREATE and UPDATE (Trainer v2.3 skips a TrainingRuntime UPDATE; trainsched does
 * not), the deprecation warning on CREATE. Objects labelled
 *     trainer.kubeflow.org/webhook-validation=disabled are excluded upstream by the webhook
 *     configuration's objectSelector; if one arrives anyway only the schema is checked.
 *   mutate-trainjob                 POST /mutate-trainjob                 (Trainer: ...-trainjob)
 *     TrainJob CREATE and UPDATE: §5.0 defaults (spec.suspend false, spec.managedBy the
 *     Trainer controller, spec.runtimeRef.apiGroup and kind) and the `time` stamps of
 *     runtimePatches: on CREATE every entry without one gets now; on UPDATE an entry whose
 *     manager existed and whose content (time aside) is unchanged keeps the old time, any other
 *     entry keeps its own time or gets now. Answered as a JSON patch.
 *   mutate-pod                      POST /mutate-pod
 *     Pod CREATE: a pod labelled scheduling.x-k8s.io/pod-group=<name> (a gang pod) gets the
 *     virtual extended resource (trainsched.io/gang: "1" by default) in requests and limits of
 *     its first container where it is missing (an extended resource needs requests equal to
 *     limits), and spec.schedulerName set when the options name a scheduler, but only when the
 *     options say the extender is wired (extender_wired); otherwise the pod is allowed with
 *     no patch and a warning. With gang_gate too, the scheduling gate WEBHOOK_GANG_GATE is
 *     appended to spec.schedulingGates (never twice; not on a pod created with spec.nodeName).
 *     Other pods, and UPDATE, are allowed with no patch (DESIGN.md "Which pods reach the
 *     extender").
 * Every endpoint allows DELETE and CONNECT, and requests for a subresource, with no checks and
 * no patch. A review whose request.kind is not the endpoint's kind (group, version and kind) is
 * refused with HTTP 400.
 *
 * Source: ../shared/reference/trainer.md §5 (webhooks) and §6 cases 71-86;
 * ../shared/reference/protocols.md §2; Kubeflow Trainer pkg/webhooks/ (trainjob, runtime webhooks)
 * and pkg/runtime/framework/plugins/jobset/jobset.go (messages of rules 2, 15 and 16);
 * controller-runtime's admission responses (a webhook error becomes allowed=false, code 403,
 * reason Forbidden; several errors read "[a, b]").
 */
#ifndef WEBHOOK_HANDLERS_H
#define WEBHOOK_HANDLERS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/error.h"
#include "webhook/admission.h"

#define WEBHOOK_GANG_LABEL "scheduling.x-k8s.io/pod-group"
#define WEBHOOK_GANG_RESOURCE "trainsched.io/gang"
/* the scheduling gate mutate-pod gives gang pods; the extender removes it from a whole gang at
 * once (gang/gang.h GANG_SCHEDULING_GATE, the same string; docs/gang.md "The gang gate") */
#define WEBHOOK_GANG_GATE "trainsched.io/gang"

/*
 * Look an object up in the caller's caches (watch caches in the server, fixtures in tests).
 * kind: "TrainingRuntime", "ClusterTrainingRuntime" or "JobSet"; namespace: NULL for
 * cluster-scoped kinds. Returns COMMON_OK with *out a new reference (json_incref of a cached
 * object is fine: jansson's reference counts are atomic; the handlers never modify it),
 * COMMON_ENOTFOUND when there is no such object, COMMON_EUNSUPPORTED when this process keeps
 * no cache of that kind (JobSet: rule 16 is then skipped), any other code when the cache cannot
 * answer (not synced yet: the message says so). Called from the server's threads.
 */
typedef enum common_rc (*webhook_lookup_fn)(void *ctx, const char *kind, const char *namespace,
                                            const char *name, json_t **out,
                                            struct common_error *err);

struct webhook_options {
    webhook_lookup_fn lookup;   /* MUST for validate-trainjob; NULL: every runtime is missing */
    void *lookup_ctx;           /* passed to lookup */
    const char *scheduler_name; /* mutate-pod sets gang pods' spec.schedulerName to it; NULL:
                                   pods keep theirs */
    const char *gang_resource;  /* NULL: WEBHOOK_GANG_RESOURCE */
    size_t max_body;            /* request body cap in bytes; 0: WEBHOOK_MAX_BODY_DEFAULT */
    /* the longest gang timeout the extender holds binds for, ms (gang_timeout_cap_ms of its
     * bind httpTimeout); a runtime's coscheduling scheduleTimeoutSeconds or a TrainJob's
     * PodGroup timeout above it is admitted with a warning. 0: no warning */
    int64_t max_schedule_timeout_ms;
    /* mutate-pod routes gang pods to the extender only when the admin says kube-scheduler calls
     * it (serve's webhook.extenderWired): the virtual resource is on no node otherwise, and
     * every gang pod would stay Pending ("Insufficient trainsched.io/gang"). 0: gang pods are
     * allowed unchanged, with an admission warning saying why. */
    int extender_wired;
    /* with extender_wired: mutate-pod also appends the scheduling gate WEBHOOK_GANG_GATE to
     * spec.schedulingGates (serve's webhook.gangGate, default true), so the gang's pods wait
     * outside kube-scheduler's queue until the extender releases the whole gang. 0: no gate
     * (the extender's held-bind path alone keeps the gang whole) */
    int gang_gate;
    /* validate-trainjob renders through the runtime's backend (integrations/backend.h); this
     * is serve's backends.default for runtimes that name none. NULL: "none" */
    const char *default_backend;
    /* the volcano backend's level -> HyperNode tier mapping (serve's backends.volcano.tiers,
     * integrations/volcano.h), so that admission maps topology as the reconciler does. NULL:
     * the built-in mapping */
    const char *volcano_tiers;
};

enum webhook_id {
    WEBHOOK_VALIDATE_TRAINJOB,
    WEBHOOK_VALIDATE_TRAININGRUNTIME,
    WEBHOOK_VALIDATE_CLUSTERTRAININGRUNTIME,
    WEBHOOK_MUTATE_TRAINJOB,
    WEBHOOK_MUTATE_POD,
    WEBHOOK_COUNT
};

struct webhook_endpoint {
    enum webhook_id id;
    const char *name;                   /* "validate-trainjob": the metric label */
    const char *path;                   /* "/validate-trainjob" */
    const char *trainer_path;           /* Kubeflow Trainer's path for the same webhook, or NULL */
    const char *group, *version, *kind; /* the one kind it answers for */
    int mutating;
};

/* The endpoint table, WEBHOOK_COUNT entries indexed by enum webhook_id. */
extern const struct webhook_endpoint webhook_endpoints[WEBHOOK_COUNT];

/* webhook_endpoint_by_path - the endpoint serving path (its own or Trainer's), or NULL. */
const struct webhook_endpoint *webhook_endpoint_by_path(const char *path);

/*
 * webhook_decide - the answer of endpoint ep to req. now: Unix seconds (UTC) stamped on
 * runtimePatches by mutate-trainjob. Fills *resp; its strings and patch live in arena a.
 * Returns COMMON_OK (allowed or denied, resp says which), COMMON_EINVAL when the request cannot
 * be judged (its kind is not the endpoint's, or CREATE/UPDATE without an object or UPDATE
 * without an oldObject: the message says so; answer HTTP 400), COMMON_ENOMEM.
 */
enum common_rc webhook_decide(struct common_arena *a, const struct webhook_endpoint *ep,
                              const struct webhook_request *req, const struct webhook_options *o,
                              int64_t now, struct webhook_response *resp, struct common_error *err);

/* What webhook_serve answered. */
struct webhook_reply {
    int status;               /* HTTP status: 200, 400, 415, 500 */
    const char *content_type; /* "application/json" for a review, else text/plain */
    const char *result;       /* metric label: "allowed", "denied", "invalid" (4xx), "error" */
    int patched;              /* 1 when the review carries a patch */
};

/*
 * webhook_serve - one HTTP request to endpoint ep, from the raw parts the server received:
 * content_type (the header, NULL when absent), body[0..len). Checks the content type
 * (application/json, parameters allowed, else 415), decodes (400 with a text message for bad
 * input, see admission.h), decides and encodes the review (200, application/json). The answer
 * body is appended to out (a text message when status is not 200). Pure; arena a holds the
 * request's memory. Never fails: out of memory gives status 500 (out may then be empty).
 */
void webhook_serve(struct common_arena *a, const struct webhook_endpoint *ep,
                   const char *content_type, const char *body, size_t len,
                   const struct webhook_options *o, int64_t now, struct common_buf *out,
                   struct webhook_reply *reply);

/*
 * webhook_content_type_ok - nonzero when a Content-Type header value names application/json
 * (case-insensitive, parameters such as "; charset=utf-8" allowed).
 */
int webhook_content_type_ok(const char *content_type);

#endif
