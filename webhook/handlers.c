/*
 * webhook/handlers.c - the admission decisions (see handlers.h): one decider per endpoint, in
 * one table; the TrainJob and runtime rules come from trainjob/ (trainjob_validate_trainjob,
 * trainjob_validate_runtime, trainjob_render), this file adds only what needs the old object or
 * the cluster: the transition rules of an UPDATE, the runtime lookup, the JobSet check, and
 * the mutations.
 *
 * Source: ../shared/reference/trainer.md §5, §6 cases 71-86; protocols.md §2; Kubeflow Trainer
 * pkg/webhooks/trainjob_webhook.go (defaulting of runtimePatches[].time),
 * pkg/runtime/core/{trainingruntime,clustertrainingruntime}.go (rule 2),
 * pkg/runtime/framework/plugins/jobset/jobset.go (rules 15-17); the CRD's x-kubernetes-validations
 * (manifests/crds/trainer.kubeflow.org_trainjobs.yaml) for the transition rules.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "integrations/backend.h"
#include "trainjob/trainjob.h"
#include "webhook/handlers.h"

#define TRAINER_GROUP "trainer.kubeflow.org"
#define TRAINER_VERSION "v1alpha1"
#define TRAINER_CONTROLLER "trainer.kubeflow.org/trainjob-controller"
#define TRAINER_PATH(kind) "/validate-trainer-kubeflow-org-v1alpha1-" kind
#define TEXT_PLAIN "text/plain; charset=utf-8"

const struct webhook_endpoint webhook_endpoints[WEBHOOK_COUNT] = {
    {WEBHOOK_VALIDATE_TRAINJOB, "validate-trainjob", "/validate-trainjob", TRAINER_PATH("trainjob"),
     TRAINER_GROUP, TRAINER_VERSION, "TrainJob", 0},
    {WEBHOOK_VALIDATE_TRAININGRUNTIME, "validate-trainingruntime", "/validate-trainingruntime",
     TRAINER_PATH("trainingruntime"), TRAINER_GROUP, TRAINER_VERSION, "TrainingRuntime", 0},
    {WEBHOOK_VALIDATE_CLUSTERTRAININGRUNTIME, "validate-clustertrainingruntime",
     "/validate-clustertrainingruntime", TRAINER_PATH("clustertrainingruntime"), TRAINER_GROUP,
     TRAINER_VERSION, "ClusterTrainingRuntime", 0},
    {WEBHOOK_MUTATE_TRAINJOB, "mutate-trainjob", "/mutate-trainjob",
     "/mutate-trainer-kubeflow-org-v1alpha1-trainjob", TRAINER_GROUP, TRAINER_VERSION, "TrainJob",
     1},
    {WEBHOOK_MUTATE_POD, "mutate-pod", "/mutate-pod", NULL, "", "v1", "Pod", 1},
};

const struct webhook_endpoint *webhook_endpoint_by_path(const char *path)
{
    for (size_t i = 0; path && i < WEBHOOK_COUNT; i++)
        if (strcmp(path, webhook_endpoints[i].path) == 0 ||
            (webhook_endpoints[i].trainer_path &&
             strcmp(path, webhook_endpoints[i].trainer_path) == 0))
            return &webhook_endpoints[i];
    return NULL;
}

/* ---- one call ---- */

struct call {
    struct common_arena *a;
    const struct webhook_endpoint *ep;
    const struct webhook_request *req;
    const struct webhook_options *o;
    int64_t now;
    struct webhook_response *resp;
    struct common_error *err;
    const char **msgs; /* errors, in order; aggregated into one message */
    size_t nmsgs, capmsgs;
    const char **warns;
    size_t nwarns, capwarns;
    int oom;
};

static int push(struct call *c, const char ***items, size_t *n, size_t *cap, const char *s)
{
    if (!s) {
        c->oom = 1;
        return -1;
    }
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        const char **p = common_arena_alloc(c->a, ncap * sizeof(*p));
        if (!p) {
            c->oom = 1;
            return -1;
        }
        if (*n)
            memcpy(p, *items, *n * sizeof(*p));
        *items = p;
        *cap = ncap;
    }
    (*items)[(*n)++] = s;
    return 0;
}

static void add_msg(struct call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_msg(struct call *c, const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    s = common_arena_vprintf(c->a, fmt, ap);
    va_end(ap);
    push(c, &c->msgs, &c->nmsgs, &c->capmsgs, s);
}

static void add_warn(struct call *c, const char *w)
{
    for (size_t i = 0; i < c->nwarns; i++)
        if (strcmp(c->warns[i], w) == 0)
            return;
    push(c, &c->warns, &c->nwarns, &c->capwarns, w);
}

/*
 * The gang timeout cap (webhook_options.max_schedule_timeout_ms): warn when timeout (seconds, a
 * JSON integer at `path` of `what`) asks for more than the extender can hold binds; the
 * extender cuts it without a word otherwise. Nothing when there is no cap or no integer.
 */
static void warn_timeout_cap(struct call *c, const json_t *timeout, const char *what,
                             const char *path)
{
    int64_t cap = c->o ? c->o->max_schedule_timeout_ms : 0;

    if (cap <= 0 || !json_is_integer(timeout) || json_integer_value(timeout) * 1000 <= cap)
        return;
    add_warn(c, common_arena_printf(c->a,
                                    "%s%s: %lld is above the longest gang timeout trainsched's "
                                    "extender can hold binds for (%g s: the bind extender's "
                                    "httpTimeout less a hold margin); its gangs time out after "
                                    "%g s",
                                    what, path, (long long)json_integer_value(timeout),
                                    (double)cap / 1000, (double)cap / 1000));
}

static enum common_rc nomem(struct call *c)
{
    return common_error_set(c->err, COMMON_ENOMEM, "out of memory");
}

/* The errors as one message, as apimachinery's aggregate prints them: one error as it is,
 * several (duplicates dropped) as "[a, b]". */
static const char *aggregate(struct call *c)
{
    struct common_buf b;
    size_t shown = 0;
    char *s;

    if (c->nmsgs == 1)
        return c->msgs[0];
    common_buf_init(&b, (size_t)1 << 30);
    if (common_buf_puts(&b, "[", NULL))
        goto fail;
    for (size_t i = 0; i < c->nmsgs; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(c->msgs[i], c->msgs[j]) == 0;
        if (seen)
            continue;
        if ((shown++ && common_buf_puts(&b, ", ", NULL)) || common_buf_puts(&b, c->msgs[i], NULL))
            goto fail;
    }
    if (shown == 1) {
        /* all the same error: no brackets */
        s = common_arena_strdup(c->a, b.data + 1);
        common_buf_free(&b);
        return s;
    }
    if (common_buf_puts(&b, "]", NULL))
        goto fail;
    s = common_arena_strdup(c->a, b.data);
    common_buf_free(&b);
    return s;
fail:
    common_buf_free(&b);
    return NULL;
}

static enum common_rc finish(struct call *c)
{
    if (c->oom)
        return nomem(c);
    c->resp->warnings = c->warns;
    c->resp->nwarnings = c->nwarns;
    return COMMON_OK;
}

static enum common_rc allow(struct call *c)
{
    c->resp->allowed = 1;
    return finish(c);
}

static enum common_rc deny(struct call *c, int code, const char *reason, const char *message)
{
    if (!message)
        return nomem(c);
    c->resp->allowed = 0;
    c->resp->code = code;
    c->resp->reason = reason;
    c->resp->message = message;
    return finish(c);
}

/* the name of the request's object for messages */
static const char *object_name(const struct call *c)
{
    const json_t *meta =
        json_object_get(c->req->object ? c->req->object : c->req->old_object, "metadata");
    const char *n = json_string_value(json_object_get(meta, "name"));

    if (!n)
        n = c->req->name;
    return n ? n : "";
}

/* 422 Invalid, as the API server words a schema failure: <Kind>.<group> "<name>" is invalid */
static enum common_rc deny_invalid(struct call *c)
{
    const char *agg = aggregate(c);

    return deny(c, 422, "Invalid",
                agg ? common_arena_printf(c->a, "%s.%s \"%s\" is invalid: %s", c->ep->kind,
                                          c->ep->group, object_name(c), agg)
                    : NULL);
}

/* 403 Forbidden with every error: what controller-runtime answers for a webhook error */
static enum common_rc deny_forbidden(struct call *c)
{
    return deny(c, 403, "Forbidden", aggregate(c));
}

/* every field error of errs as "path: Type: detail" (trainjob_errors_format), those about the
 * runtime document prefixed with the runtime */
static void add_field_errors(struct call *c, const struct trainjob_errors *errs,
                             const json_t *runtime)
{
    for (size_t i = 0; i < errs->n; i++) {
        const char *m = trainjob_errors_format(errs, i);
        if (m && runtime && errs->items[i].doc == runtime) {
            const json_t *meta = json_object_get(runtime, "metadata");
            const char *rn = json_string_value(json_object_get(meta, "name"));
            const char *rk = json_string_value(json_object_get(runtime, "kind"));
            m = common_arena_printf(c->a, "%s \"%s\": %s", rk ? rk : "runtime", rn ? rn : "", m);
        }
        if (!m)
            c->oom = 1;
        else
            add_msg(c, "%s", m);
    }
    if (errs->oom)
        c->oom = 1;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

static const json_t *get(const json_t *v, const char *k1, const char *k2)
{
    v = json_object_get(v, k1);
    return k2 ? json_object_get(v, k2) : v;
}

/* the element of array arr whose member key is the string value; NULL when none */
static const json_t *find_by(const json_t *arr, const char *key, const char *value)
{
    size_t i;
    const json_t *it;

    if (!value)
        return NULL;
    json_array_foreach(arr, i, it)
    {
        const char *s = json_string_value(json_object_get(it, key));
        if (s && strcmp(s, value) == 0)
            return it;
    }
    return NULL;
}

/* a value present and not null */
static int set(const json_t *v)
{
    return v && !json_is_null(v);
}

/* a copy of obj with apiVersion and kind filled in from the request when missing (the API
 * server always sends them; a hand-written review may not). Borrowed or arena-owned. */
static void decref_cb(void *p)
{
    json_decref((json_t *)p);
}

static const json_t *with_type(struct call *c, const json_t *obj)
{
    json_t *cp;

    if (json_object_get(obj, "kind") && json_object_get(obj, "apiVersion"))
        return obj;
    cp = json_copy((json_t *)obj);
    if (!cp || common_arena_on_destroy(c->a, decref_cb, cp)) {
        c->oom = 1;
        return obj;
    }
    if ((!json_object_get(cp, "kind") &&
         json_object_set_new(cp, "kind", json_string(c->ep->kind))) ||
        (!json_object_get(cp, "apiVersion") &&
         json_object_set_new(cp, "apiVersion", json_string(TRAINER_GROUP "/" TRAINER_VERSION))))
        c->oom = 1;
    return cp;
}

/* ---- validate-trainjob ---- */

/* The CRD's transition rules (self == oldSelf, "field is immutable"), evaluated as the API
 * server does: only where the field is set in both the old and the new object. */
static const char *const immutable_spec[] = {
    "runtimeRef", "initializer", "trainer", "activeDeadlineSeconds", "managedBy", NULL};
static const char *const immutable_podspec[] = {"serviceAccountName",
                                                "volumes",
                                                "initContainers",
                                                "containers",
                                                "imagePullSecrets",
                                                "securityContext",
                                                "terminationGracePeriodSeconds",
                                                NULL};

static void immutable(struct call *c, const json_t *oldo, const json_t *newo, const char *path,
                      const char *const *fields)
{
    for (const char *const *f = fields; *f; f++) {
        const json_t *ov = json_object_get(oldo, *f), *nv = json_object_get(newo, *f);
        if (set(ov) && set(nv) && !json_equal((json_t *)ov, (json_t *)nv))
            add_msg(c, "%s.%s: Invalid value: \"%s\": field is immutable", path, *f, type_name(nv));
    }
}

static void transition_rules(struct call *c, const json_t *old, const json_t *tj)
{
    const json_t *op = get(old, "spec", "runtimePatches"), *np = get(tj, "spec", "runtimePatches");
    const json_t *p;
    size_t i;

    immutable(c, get(old, "spec", NULL), get(tj, "spec", NULL), "spec", immutable_spec);
    json_array_foreach(np, i, p)
    {
        const json_t *oldp = find_by(op, "manager", json_string_value(get(p, "manager", NULL)));
        const json_t *rjobs = get(get(get(p, "trainingRuntimeSpec", "template"), "spec", NULL),
                                  "replicatedJobs", NULL);
        const json_t *orjobs = get(get(get(oldp, "trainingRuntimeSpec", "template"), "spec", NULL),
                                   "replicatedJobs", NULL);
        const json_t *rj;
        size_t j;

        if (!oldp)
            continue;
        json_array_foreach(rjobs, j, rj)
        {
            const json_t *orj = find_by(orjobs, "name", json_string_value(get(rj, "name", NULL)));
            char path[200];

            if (!orj)
                continue;
            snprintf(
                path, sizeof(path),
                "spec.runtimePatches[%zu].trainingRuntimeSpec.template.spec.replicatedJobs[%zu]"
                ".template.spec.template.spec",
                i, j);
            immutable(c, get(get(orj, "template", "spec"), "template", "spec"),
                      get(get(rj, "template", "spec"), "template", "spec"), path,
                      immutable_podspec);
        }
    }
}

/* runtimePatches equal as Go's equality.Semantic sees them: absent, null and [] are the same */
static int patches_equal(const json_t *a, const json_t *b)
{
    if (json_array_size(a) == 0 && json_array_size(b) == 0)
        return 1;
    return a && b && json_equal((json_t *)a, (json_t *)b);
}

/* trainer.md §5.1 rules 15-17 (jobset.go checkRuntimePatchesImmutability) */
static void runtime_patch_rules(struct call *c, const json_t *old, const json_t *tj, const char *ns,
                                const char *name)
{
    json_t *js = NULL;
    struct common_error e = {0};
    enum common_rc rc;
    const json_t *st;
    size_t i;

    if (patches_equal(get(old, "spec", "runtimePatches"), get(tj, "spec", "runtimePatches")))
        return;
    if (!json_is_true(get(old, "spec", "suspend")) && !json_is_true(get(tj, "spec", "suspend"))) {
        add_msg(c, "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the "
                   "TrainJob is suspended before or after the update");
        return;
    }
    rc = c->o && c->o->lookup ? c->o->lookup(c->o->lookup_ctx, "JobSet", ns, name, &js, &e)
                              : COMMON_EUNSUPPORTED;
    if (rc == COMMON_ENOTFOUND || rc == COMMON_EUNSUPPORTED)
        return;
    if (rc) {
        add_msg(c, "spec.runtimePatches: Internal error: %s",
                e.msg[0] ? e.msg : common_rc_name(rc));
        return;
    }
    if (common_arena_on_destroy(c->a, decref_cb, js)) {
        c->oom = 1;
        return;
    }
    json_array_foreach(get(get(js, "status", NULL), "replicatedJobsStatus", NULL), i, st)
    {
        const json_t *active = json_object_get(st, "active");
        const char *rn = json_string_value(json_object_get(st, "name"));
        if (json_is_integer(active) && json_integer_value(active) > 0)
            add_msg(c,
                    "spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the "
                    "JobSet's ReplicatedJob %s is still active",
                    rn ? rn : "");
    }
}

/* MPI renders need a key pair; validation never looks at it, so it is a fixed placeholder
 * (no randomness, no OpenSSL call per request). */
static enum common_rc placeholder_keygen(struct common_arena *a, char **private_pem,
                                         char **public_line, struct common_error *err)
{
    *private_pem = common_arena_strdup(a, "-----BEGIN EC PRIVATE KEY-----\n"
                                          "d2ViaG9vayB2YWxpZGF0aW9uIG9ubHk=\n"
                                          "-----END EC PRIVATE KEY-----\n");
    *public_line = common_arena_strdup(a, "ecdsa-sha2-nistp521 d2ViaG9vayB2YWxpZGF0aW9uIG9ubHk=");
    if (!*private_pem || !*public_line)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

/* trainjob_exists_fn over the caller's lookup (cluster-scoped kinds: PriorityClass only) */
static enum common_rc cluster_object_exists(void *ctx, const char *kind, const char *name,
                                            struct common_error *err)
{
    const struct webhook_options *o = ctx;
    json_t *obj = NULL;
    enum common_rc rc;

    /* admission checks PriorityClasses only; a Volcano Queue is the reconciler's to check
     * (it watches Queues where Volcano is installed) */
    if (!o || !o->lookup || strcmp(kind, "PriorityClass") != 0)
        return common_error_set(err, COMMON_EUNSUPPORTED, "no cache of %s", kind);
    rc = o->lookup(o->lookup_ctx, kind, NULL, name, &obj, err);
    json_decref(obj);
    return rc;
}

static int has_string(const char *const *list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return 1;
    return 0;
}

static enum common_rc validate_trainjob(struct call *c)
{
    const json_t *tj = with_type(c, c->req->object), *old = c->req->old_object;
    struct trainjob_errors errs, rterrs;
    struct trainjob_output out;
    struct trainjob_options topts = {0};
    const struct backend *backend = NULL;
    struct trainjob_ref ref;
    struct common_error e = {0};
    const char *ns, *name = object_name(c);
    json_t *rt = NULL;
    enum common_rc rc;

    /* 1. the API server's checks: schema and CEL (422), and rule 1, unsupported runtime (403) */
    trainjob_errors_init(&errs, c->a);
    rc = trainjob_validate_trainjob(tj, &errs, &e);
    if (rc == COMMON_ENOMEM || errs.oom || c->oom)
        return nomem(c);
    if (errs.n == 1 && strncmp(errs.items[0].detail, "unsupported runtime: ", 21) == 0)
        return deny(c, 403, "Forbidden", errs.items[0].detail);
    if (errs.n) {
        add_field_errors(c, &errs, NULL);
        return deny_invalid(c);
    }
    if (c->req->operation == WEBHOOK_OP_UPDATE) {
        transition_rules(c, old, tj);
        if (c->nmsgs)
            return deny_invalid(c);
    }

    /* 2. the runtime (rule 2) */
    ns = json_string_value(get(tj, "metadata", "namespace"));
    if (!ns)
        ns = c->req->namespace ? c->req->namespace : "default";
    if (trainjob_runtime_ref(tj, ns, &ref, &e)) {
        add_msg(c, "%s", e.msg);
        return deny_invalid(c);
    }
    rc = c->o && c->o->lookup
             ? c->o->lookup(c->o->lookup_ctx, ref.kind, ref.namespace, ref.name, &rt, &e)
             : COMMON_ENOTFOUND;
    if (rc == COMMON_ENOTFOUND) {
        int cluster = strcmp(ref.kind, "ClusterTrainingRuntime") == 0;
        /* Trainer's RuntimeRef as Go encodes it: name, apiGroup, kind */
        const char *value = trainjob_runtime_ref_json(c->a, tj);
        /* Trainer spells the ClusterTrainingRuntime path "spec.RuntimeRef"; the lookup error is
         * controller-runtime's cache NotFound: <Kind>.<group> "<name>" not found */
        add_msg(c,
                "spec.%s: Invalid value: %s: %s.%s \"%s\" not found: specified %s must be created "
                "before the TrainJob is created",
                cluster ? "RuntimeRef" : "runtimeRef", value ? value : "{}", ref.kind,
                ref.api_group, ref.name, cluster ? "clusterTrainingRuntime" : "trainingRuntime");
        return deny_forbidden(c);
    }
    if (rc)
        return deny(c, 500, "InternalError",
                    common_arena_printf(c->a, "cannot look up %s %s%s\"%s\": %s", ref.kind,
                                        ref.namespace ? ref.namespace : "",
                                        ref.namespace ? "/" : "", ref.name,
                                        e.msg[0] ? e.msg : common_rc_name(rc)));
    if (common_arena_on_destroy(c->a, decref_cb, rt))
        return nomem(c);

    /* 3. the runtime's own rules: reported, and its own warnings kept apart from the TrainJob's */
    trainjob_errors_init(&rterrs, c->a);
    rc = trainjob_validate_runtime(rt, &rterrs, &e);
    if (rc == COMMON_ENOMEM || rterrs.oom)
        return nomem(c);
    if (rterrs.n) {
        add_field_errors(c, &rterrs, rt);
        return deny_forbidden(c);
    }

    /* 4. Trainer's webhook checks (§5.1 3-14, 18-31) through the render pipeline; a policy
     * trainjob/ does not build (COMMON_EUNSUPPORTED) has passed every check it runs */
    topts.default_namespace = ns;
    topts.keygen = placeholder_keygen;
    topts.exists = cluster_object_exists;
    topts.exists_ctx = (void *)c->o;
    topts.volcano_tiers = c->o ? c->o->volcano_tiers : NULL;
    memset(&out, 0, sizeof(out));
    rc = backend_select(rt, NULL, c->o ? c->o->default_backend : NULL, &backend, NULL, &e);
    if (rc == COMMON_EINVAL) {
        add_msg(c, "%s %s: %s", json_string_value(json_object_get(rt, "kind")),
                json_string_value(get(rt, "metadata", "name")), e.msg);
        return deny_forbidden(c);
    }
    if (rc == COMMON_OK)
        rc = backend_render(backend, c->a, tj, rt, &topts, NULL, &out, NULL, &e);
    {
        size_t i;
        const json_t *o;
        json_array_foreach(out.objects, i, o)
        {
            const char *av = json_string_value(json_object_get(o, "apiVersion"));
            const char *k = json_string_value(json_object_get(o, "kind"));
            if (av && k && strcmp(av, "scheduling.x-k8s.io/v1alpha1") == 0 &&
                strcmp(k, "PodGroup") == 0)
                warn_timeout_cap(c, get(get(o, "spec", NULL), "scheduleTimeoutSeconds", NULL),
                                 "the TrainJob's PodGroup ", "spec.scheduleTimeoutSeconds");
        }
    }
    json_decref(out.objects);
    if (rc == COMMON_ENOMEM || out.errors.oom)
        return nomem(c);
    for (size_t i = 0; i < out.errors.nwarn; i++)
        if (!has_string(rterrs.warnings, rterrs.nwarn, out.errors.warnings[i]))
            add_warn(c, out.errors.warnings[i]);
    if (rc == COMMON_EINVAL && out.errors.n)
        add_field_errors(c, &out.errors, rt);
    else if (rc == COMMON_EINVAL) /* the backend's translate: its message names the field */
        add_msg(c, "%s", e.msg);
    else if (rc && rc != COMMON_EUNSUPPORTED)
        return deny(c, 500, "InternalError", common_arena_printf(c->a, "%s", e.msg));

    /* 5. UPDATE: runtimePatches only while suspended, never under an active JobSet */
    if (c->req->operation == WEBHOOK_OP_UPDATE)
        runtime_patch_rules(c, old, tj, ns, name);
    if (c->oom)
        return nomem(c);
    return c->nmsgs ? deny_forbidden(c) : allow(c);
}

/* ---- validate-trainingruntime, validate-clustertrainingruntime ---- */

static enum common_rc validate_runtime(struct call *c)
{
    const json_t *rt = with_type(c, c->req->object);
    json_t *schema_only, *meta, *labels;
    struct trainjob_errors errs;
    struct common_error e = {0};
    enum common_rc rc;

    /* CREATE and UPDATE alike, for both kinds (Trainer v2.3 skips a TrainingRuntime UPDATE,
     * which lets an existing runtime be edited into one its CREATE would refuse).
     * First the schema and CEL alone (422): the same object labelled webhook-validation=disabled,
     * which trainjob_validate_runtime checks without the webhook rules */
    schema_only = json_copy((json_t *)rt);
    meta = json_is_object(json_object_get(rt, "metadata"))
               ? json_copy(json_object_get(rt, "metadata"))
               : json_object();
    labels = json_is_object(get(rt, "metadata", "labels"))
                 ? json_copy((json_t *)get(rt, "metadata", "labels"))
                 : json_object();
    if (!schema_only || common_arena_on_destroy(c->a, decref_cb, schema_only) || !meta || !labels ||
        json_object_set_new(labels, "trainer.kubeflow.org/webhook-validation",
                            json_string("disabled")) ||
        json_object_set(meta, "labels", labels) || json_object_set(schema_only, "metadata", meta)) {
        json_decref(meta);
        json_decref(labels);
        return nomem(c);
    }
    json_decref(meta);
    json_decref(labels);
    trainjob_errors_init(&errs, c->a);
    rc = trainjob_validate_runtime(schema_only, &errs, &e);
    if (rc == COMMON_ENOMEM || errs.oom)
        return nomem(c);
    if (errs.n) {
        add_field_errors(c, &errs, NULL);
        return deny_invalid(c);
    }

    /* the webhook rules of §5.2 (403) and the deprecation warning (CREATE only) */
    trainjob_errors_init(&errs, c->a);
    rc = trainjob_validate_runtime(rt, &errs, &e);
    if (rc == COMMON_ENOMEM || errs.oom)
        return nomem(c);
    if (c->req->operation == WEBHOOK_OP_CREATE)
        for (size_t i = 0; i < errs.nwarn; i++)
            add_warn(c, errs.warnings[i]);
    if (errs.n) {
        add_field_errors(c, &errs, NULL);
        return deny_forbidden(c);
    }
    /* the backend it names (integrations/backend.h): known, built, and not contradicted by
     * spec.podGroupPolicy */
    {
        const struct backend *b;
        if (backend_select(rt, NULL, NULL, &b, NULL, &e) != COMMON_OK) {
            add_msg(c, "%s", e.msg);
            return deny_forbidden(c);
        }
    }
    warn_timeout_cap(
        c,
        get(get(get(get(rt, "spec", NULL), "podGroupPolicy", NULL), "coscheduling", NULL),
            "scheduleTimeoutSeconds", NULL),
        "", "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds");
    if (c->oom)
        return nomem(c);
    return allow(c);
}

/* ---- mutate-trainjob ---- */

/* RFC 3339 UTC, seconds (metav1.Time); NULL on no memory */
static const char *rfc3339(struct common_arena *a, int64_t now)
{
    time_t t = (time_t)now;
    struct tm tm;
    char buf[64];

    if (!gmtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        return common_arena_strdup(a, "1970-01-01T00:00:00Z");
    return common_arena_strdup(a, buf);
}

/* two runtime patches equal once their `time` is left out */
static int equal_but_time(const json_t *a, const json_t *b)
{
    json_t *ca = json_copy((json_t *)a), *cb = json_copy((json_t *)b);
    int eq = -1;

    if (ca && cb) {
        json_object_del(ca, "time");
        json_object_del(cb, "time");
        eq = json_equal(ca, cb);
    }
    json_decref(ca);
    json_decref(cb);
    return eq;
}

static int set_default(json_t *obj, const char *key, json_t *value)
{
    if (!value)
        return -1;
    if (!json_is_object(obj) || set(json_object_get(obj, key))) {
        json_decref(value);
        return 0;
    }
    return json_object_set_new(obj, key, value);
}

/*
 * The defaulted TrainJob: trainer.md §5.0 schema defaults (the API server applies them before
 * admission too; kept here so a TrainJob always leaves the webhook defaulted) and Trainer's
 * runtimePatches[].time stamps. d is a deep copy of the object, edited in place.
 */
static int default_trainjob(struct call *c, json_t *d)
{
    json_t *spec = json_object_get(d, "spec"), *ref, *patches, *p;
    const json_t *old_patches = get(get(c->req->old_object, "spec", NULL), "runtimePatches", NULL);
    const char *now = rfc3339(c->a, c->now);
    int update = c->req->operation == WEBHOOK_OP_UPDATE;
    size_t i;

    if (!now)
        return -1;
    if (!json_is_object(spec))
        return 0;
    if (set_default(spec, "suspend", json_false()) ||
        set_default(spec, "managedBy", json_string(TRAINER_CONTROLLER)))
        return -1;
    ref = json_object_get(spec, "runtimeRef");
    if (json_is_object(ref) && (set_default(ref, "apiGroup", json_string(TRAINER_GROUP)) ||
                                set_default(ref, "kind", json_string("ClusterTrainingRuntime"))))
        return -1;
    patches = json_object_get(spec, "runtimePatches");
    json_array_foreach(patches, i, p)
    {
        const json_t *oldp =
            update ? find_by(old_patches, "manager", json_string_value(get(p, "manager", NULL)))
                   : NULL;
        if (!json_is_object(p))
            continue;
        if (oldp) {
            int eq = equal_but_time(oldp, p);
            if (eq < 0)
                return -1;
            if (eq) {
                /* unchanged: the old time, or none when it had none */
                const json_t *ot = json_object_get(oldp, "time");
                if (set(ot) ? json_object_set(p, "time", (json_t *)ot) != 0
                            : (json_object_del(p, "time"), 0))
                    return -1;
                continue;
            }
        }
        if (set_default(p, "time", json_string(now)))
            return -1;
    }
    return 0;
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* RFC 6902 operations turning a into b, appended to p; path holds the pointer to a and b.
 * Object members go in key order; arrays of equal length element by element, else replaced. */
static void diff(struct webhook_patch *p, struct common_buf *path, const json_t *a, const json_t *b)
{
    size_t len = path->len;
    const char *ptr;

    if (json_is_object(a) && json_is_object(b)) {
        size_t n = json_object_size(a) + json_object_size(b), k = 0;
        const char **keys = common_arena_alloc(p->arena, (n + 1) * sizeof(*keys));
        const char *key;
        json_t *v;

        if (!keys) {
            p->oom = 1;
            return;
        }
        json_object_foreach((json_t *)a, key, v) keys[k++] = key;
        json_object_foreach((json_t *)b, key, v) if (!json_object_get(a, key)) keys[k++] = key;
        qsort(keys, k, sizeof(*keys), cmp_keys);
        for (size_t i = 0; i < k && !p->oom; i++) {
            const json_t *av = json_object_get(a, keys[i]), *bv = json_object_get(b, keys[i]);
            if (webhook_pointer_append(path, keys[i], NULL)) {
                p->oom = 1;
                break;
            }
            ptr = path->data;
            if (!bv)
                webhook_patch_op_at(p, "remove", ptr, NULL);
            else if (!av)
                webhook_patch_op_at(p, "add", ptr, json_deep_copy(bv));
            else
                diff(p, path, av, bv);
            path->len = len;
            path->data[len] = '\0';
        }
        return;
    }
    if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a) && !p->oom; i++) {
            char idx[32];
            snprintf(idx, sizeof(idx), "%zu", i);
            if (webhook_pointer_append(path, idx, NULL)) {
                p->oom = 1;
                break;
            }
            diff(p, path, json_array_get(a, i), json_array_get(b, i));
            path->len = len;
            path->data[len] = '\0';
        }
        return;
    }
    if (!json_equal((json_t *)a, (json_t *)b))
        webhook_patch_op_at(p, "replace", path->data ? path->data : "", json_deep_copy(b));
}

static enum common_rc mutate_trainjob(struct call *c)
{
    struct webhook_patch p;
    struct common_buf path;
    json_t *d;

    if (webhook_patch_init(&p, c->a, c->err))
        return COMMON_ENOMEM;
    d = json_deep_copy(c->req->object);
    if (!d || common_arena_on_destroy(c->a, decref_cb, d) || default_trainjob(c, d))
        return nomem(c);
    common_buf_init(&path, 1 << 20);
    diff(&p, &path, c->req->object, d);
    common_buf_free(&path);
    if (p.oom)
        return nomem(c);
    c->resp->patch = p.ops;
    return allow(c);
}

/* ---- mutate-pod ---- */

/* a gang pod while the extender is not wired: allowed unchanged, with a warning, so the pods
 * are scheduled one by one instead of all staying Pending on a resource no node has */
static enum common_rc not_routed(struct call *c, const char *gang, const char *res)
{
    const char *w = common_arena_printf(
        c->a,
        "trainsched: gang pod of PodGroup %s not routed to the gang scheduler: "
        "webhook.extenderWired is false (kube-scheduler does not call trainsched's extender), so "
        "it gets no %s request and is scheduled on its own",
        gang, res);
    if (!w)
        return nomem(c);
    add_warn(c, w);
    return allow(c);
}

/* the scheduling gate that keeps a gang pod out of kube-scheduler's queue until the extender
 * releases its whole gang: appended to spec.schedulingGates (the array made when absent), never
 * twice; a pod created with spec.nodeName is left ungated (the API server refuses gates on a
 * bound pod) */
static void add_gang_gate(struct webhook_patch *p, const json_t *pod)
{
    const json_t *gates = get(pod, "spec", "schedulingGates");
    const json_t *node = get(pod, "spec", "nodeName");

    if (json_is_string(node) && *json_string_value(node))
        return;
    if (find_by(gates, "name", WEBHOOK_GANG_GATE))
        return;
    if (json_is_array(gates))
        webhook_patch_op(p, "add", json_pack("{s:s}", "name", WEBHOOK_GANG_GATE), "spec",
                         "schedulingGates", "-", NULL);
    else
        webhook_patch_op(p, set(gates) ? "replace" : "add",
                         json_pack("[{s:s}]", "name", WEBHOOK_GANG_GATE), "spec", "schedulingGates",
                         NULL);
}

static enum common_rc mutate_pod(struct call *c)
{
    const json_t *pod = c->req->object;
    const char *gang =
        json_string_value(get(get(pod, "metadata", "labels"), WEBHOOK_GANG_LABEL, NULL));
    const char *res = c->o && c->o->gang_resource ? c->o->gang_resource : WEBHOOK_GANG_RESOURCE;
    const char *sched = c->o ? c->o->scheduler_name : NULL;
    const json_t *ct = json_array_get(get(pod, "spec", "containers"), 0);
    const json_t *resources = json_object_get(ct, "resources");
    const json_t *cur;
    struct webhook_patch p;

    if (c->req->operation != WEBHOOK_OP_CREATE || !gang || !*gang || !json_is_object(ct))
        return allow(c);
    /* a pod of a native PodGroup is ganged by kube-scheduler itself: never by two mechanisms */
    if (get(pod, "spec", "schedulingGroup"))
        return allow(c);
    if (!c->o || !c->o->extender_wired)
        return not_routed(c, gang, res);
    if (webhook_patch_init(&p, c->a, c->err))
        return COMMON_ENOMEM;
    if (!json_is_object(resources)) {
        webhook_patch_op(&p, "add",
                         json_pack("{s:{s:s}, s:{s:s}}", "limits", res, "1", "requests", res, "1"),
                         "spec", "containers", "0", "resources", NULL);
    } else {
        static const char *const maps[] = {"limits", "requests"};
        for (int i = 0; i < 2; i++) {
            const json_t *m = json_object_get(resources, maps[i]);
            if (!json_is_object(m))
                webhook_patch_op(&p, "add", json_pack("{s:s}", res, "1"), "spec", "containers", "0",
                                 "resources", maps[i], NULL);
            else if (!set(json_object_get(m, res)))
                webhook_patch_op(&p, "add", json_string("1"), "spec", "containers", "0",
                                 "resources", maps[i], res, NULL);
        }
    }
    if (c->o->gang_gate)
        add_gang_gate(&p, pod);
    cur = get(pod, "spec", "schedulerName");
    if (sched && *sched && !(json_is_string(cur) && strcmp(json_string_value(cur), sched) == 0))
        webhook_patch_op(&p, set(cur) ? "replace" : "add", json_string(sched), "spec",
                         "schedulerName", NULL);
    if (p.oom)
        return nomem(c);
    c->resp->patch = p.ops;
    return allow(c);
}

/* ---- dispatch ---- */

static enum common_rc (*const deciders[WEBHOOK_COUNT])(struct call *c) = {
    [WEBHOOK_VALIDATE_TRAINJOB] = validate_trainjob,
    [WEBHOOK_VALIDATE_TRAININGRUNTIME] = validate_runtime,
    [WEBHOOK_VALIDATE_CLUSTERTRAININGRUNTIME] = validate_runtime,
    [WEBHOOK_MUTATE_TRAINJOB] = mutate_trainjob,
    [WEBHOOK_MUTATE_POD] = mutate_pod,
};

static int str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

enum common_rc webhook_decide(struct common_arena *a, const struct webhook_endpoint *ep,
                              const struct webhook_request *req, const struct webhook_options *o,
                              int64_t now, struct webhook_response *resp, struct common_error *err)
{
    struct call c;
    int needs_old;

    memset(resp, 0, sizeof(*resp));
    memset(&c, 0, sizeof(c));
    c.a = a;
    c.ep = ep;
    c.req = req;
    c.o = o;
    c.now = now;
    c.resp = resp;
    c.err = err;
    if (!str_eq(req->kind.group, ep->group) || !str_eq(req->kind.version, ep->version) ||
        !str_eq(req->kind.kind, ep->kind))
        return common_error_set(
            err, COMMON_EINVAL,
            "unknown kind: webhook %s handles %s%s%s/%s, got request.kind %s%s%s/%s", ep->name,
            ep->group, *ep->group ? "/" : "", ep->version, ep->kind,
            req->kind.group ? req->kind.group : "", req->kind.group && *req->kind.group ? "/" : "",
            req->kind.version ? req->kind.version : "", req->kind.kind ? req->kind.kind : "");
    if (req->operation == WEBHOOK_OP_DELETE || req->operation == WEBHOOK_OP_CONNECT ||
        req->sub_resource)
        return allow(&c);
    if (!req->object)
        return common_error_set(err, COMMON_EINVAL, "request.object: required for %s",
                                req->operation_name);
    needs_old = ep->id == WEBHOOK_VALIDATE_TRAINJOB || ep->id == WEBHOOK_MUTATE_TRAINJOB;
    if (req->operation == WEBHOOK_OP_UPDATE && needs_old && !req->old_object)
        return common_error_set(err, COMMON_EINVAL, "request.oldObject: required for UPDATE");
    return deciders[ep->id](&c);
}

/* ---- one HTTP request ---- */

int webhook_content_type_ok(const char *ct)
{
    static const char want[] = "application/json";
    const char *p = ct;

    if (!p)
        return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncasecmp(p, want, sizeof(want) - 1) != 0)
        return 0;
    p += sizeof(want) - 1;
    while (*p == ' ' || *p == '\t')
        p++;
    return *p == '\0' || *p == ';';
}

static void refuse(struct common_buf *out, struct webhook_reply *r, int status, const char *what,
                   const char *msg)
{
    common_buf_reset(out);
    r->status = status;
    r->content_type = TEXT_PLAIN;
    r->result = status >= 500 ? "error" : "invalid";
    common_buf_printf(out, NULL, "webhook %s: %s\n", what, msg);
}

void webhook_serve(struct common_arena *a, const struct webhook_endpoint *ep,
                   const char *content_type, const char *body, size_t len,
                   const struct webhook_options *o, int64_t now, struct common_buf *out,
                   struct webhook_reply *reply)
{
    struct webhook_request req;
    struct webhook_response resp;
    struct common_error err = {0};
    enum common_rc rc;

    memset(reply, 0, sizeof(*reply));
    if (!webhook_content_type_ok(content_type)) {
        if (content_type)
            common_error_set(&err, COMMON_EUNSUPPORTED,
                             "Content-Type must be application/json, got \"%s\"", content_type);
        else
            common_error_set(&err, COMMON_EUNSUPPORTED,
                             "Content-Type must be application/json, got none");
        refuse(out, reply, 415, ep->name, err.msg);
        return;
    }
    rc = webhook_admission_decode(a, body, len, o ? o->max_body : 0, &req, &err);
    if (!rc)
        rc = webhook_decide(a, ep, &req, o, now, &resp, &err);
    if (rc) {
        refuse(out, reply, webhook_admission_http_status(rc), ep->name, err.msg);
        return;
    }
    /* a review that cannot be written is our failure, never the client's */
    if (webhook_admission_encode(req.uid, &resp, out, &err)) {
        refuse(out, reply, 500, ep->name, err.msg);
        return;
    }
    reply->status = 200;
    reply->content_type = "application/json";
    reply->result = resp.allowed ? "allowed" : "denied";
    reply->patched = resp.patch && json_array_size(resp.patch) > 0;
}
