/*
 * webhook/server.c - httpd routes for the admission webhooks (see server.h).
 */
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/log.h"
#include "webhook/server.h"

#define ARENA_MAX_DEFAULT ((size_t)512 << 20)

struct webhook_route {
    struct webhook_server *w;
    const struct webhook_endpoint *ep;
};

struct webhook_server {
    struct webhook_options o;
    webhook_lookup_fn lookup; /* the caller's */
    void *lookup_ctx;
    struct common_kube *kube;    /* read-through on a runtime cache miss, or NULL */
    struct common_metric *reads; /* trainsched_webhook_runtime_reads_total */
    char *scheduler_name, *gang_resource, *default_backend, *volcano_tiers;
    size_t arena_max;
    struct common_metric *requests, *duration;
    int64_t (*now)(void *ctx);
    void *now_ctx;
    struct webhook_route routes[WEBHOOK_COUNT];
};

static const double duration_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                          0.05,   0.1,   0.25,   0.5,   1,    2.5};

/*
 * The handlers' lookup: the caller's cache, and for a runtime it does not hold (a runtime
 * created a moment before the TrainJob that names it, as one `kubectl apply -f` of both does,
 * reaches the webhook before the watch event reaches the cache; or the cache is not synced
 * yet) one GET through w->kube. A 404 is the answer "not found"; a failed GET leaves the
 * cache's answer.
 */
static enum common_rc server_lookup(void *ctx, const char *kind, const char *ns, const char *name,
                                    json_t **out, struct common_error *err)
{
    struct webhook_server *w = ctx;
    const struct common_kube_resource *res = NULL;
    struct common_error ge = {0};
    json_t *got = NULL;
    enum common_rc rc = w->lookup(w->lookup_ctx, kind, ns, name, out, err), grc;
    const char *result;

    if (rc == COMMON_OK || rc == COMMON_EUNSUPPORTED || !w->kube)
        return rc;
    if (strcmp(kind, "TrainingRuntime") == 0)
        res = &common_kube_trainingruntimes;
    else if (strcmp(kind, "ClusterTrainingRuntime") == 0)
        res = &common_kube_clustertrainingruntimes;
    if (!res)
        return rc;
    grc = common_kube_get(w->kube, res, res->namespaced ? ns : NULL, name, &got, &ge);
    result = grc == COMMON_OK ? "found" : grc == COMMON_ENOTFOUND ? "not_found" : "error";
    if (w->reads) {
        const char *lv[] = {result, NULL};
        common_metric_add(w->reads, lv, 1);
    }
    if (grc == COMMON_OK) {
        *out = got;
        return COMMON_OK;
    }
    if (grc == COMMON_ENOTFOUND) {
        *err = ge;
        return COMMON_ENOTFOUND;
    }
    common_log(COMMON_LOG_WARN, "webhook: cannot read the runtime from the API server", "kind",
               kind, "name", name, "error", ge.msg, NULL);
    return rc;
}

void webhook_server_destroy(struct webhook_server *w)
{
    if (!w)
        return;
    common_free(w->scheduler_name);
    common_free(w->gang_resource);
    common_free(w->default_backend);
    common_free(w->volcano_tiers);
    common_free(w);
}

struct webhook_server *webhook_server_create(const struct webhook_server_opts *opts,
                                             struct common_error *err)
{
    static const char *const req_labels[] = {"webhook", "result", NULL};
    static const char *const dur_labels[] = {"webhook", NULL};
    static const char *const read_labels[] = {"result", NULL};
    struct webhook_server *w;

    if (!opts || !opts->lookup) {
        common_error_set(err, COMMON_EINVAL, "webhook server: a runtime lookup is required");
        return NULL;
    }
    w = common_calloc(1, sizeof(*w));
    if (!w)
        goto nomem;
    if (opts->scheduler_name && !(w->scheduler_name = common_strdup(opts->scheduler_name)))
        goto nomem;
    if (opts->gang_resource && !(w->gang_resource = common_strdup(opts->gang_resource)))
        goto nomem;
    if (opts->default_backend && !(w->default_backend = common_strdup(opts->default_backend)))
        goto nomem;
    if (opts->volcano_tiers && !(w->volcano_tiers = common_strdup(opts->volcano_tiers)))
        goto nomem;
    w->lookup = opts->lookup;
    w->lookup_ctx = opts->lookup_ctx;
    w->kube = opts->kube;
    w->o.lookup = server_lookup;
    w->o.lookup_ctx = w;
    w->o.scheduler_name = w->scheduler_name;
    w->o.gang_resource = w->gang_resource;
    w->o.default_backend = w->default_backend;
    w->o.volcano_tiers = w->volcano_tiers;
    w->o.extender_wired = opts->extender_wired;
    w->o.gang_gate = opts->gang_gate;
    w->o.max_body = opts->max_body ? opts->max_body : WEBHOOK_MAX_BODY_DEFAULT;
    w->o.max_schedule_timeout_ms = opts->max_schedule_timeout_ms;
    w->arena_max = opts->arena_max ? opts->arena_max : ARENA_MAX_DEFAULT;
    w->now = opts->now;
    w->now_ctx = opts->now_ctx;
    if (opts->metrics) {
        w->requests = common_metrics_counter(
            opts->metrics, "trainsched_webhook_requests_total",
            "Admission reviews answered, by webhook and result (allowed, denied, invalid: the "
            "request was refused as bad input, error: the webhook failed).",
            req_labels);
        w->duration = common_metrics_histogram(
            opts->metrics, "trainsched_webhook_duration_seconds",
            "Time to answer an admission review, by webhook.", dur_labels, duration_buckets,
            sizeof(duration_buckets) / sizeof(duration_buckets[0]));
        w->reads = common_metrics_counter(
            opts->metrics, "trainsched_webhook_runtime_reads_total",
            "Runtimes the TrainJob webhook read from the API server because its cache had not "
            "seen them (yet), by result (found, not_found, error).",
            read_labels);
        if (!w->requests || !w->duration || !w->reads)
            goto nomem;
    }
    for (size_t i = 0; i < WEBHOOK_COUNT; i++) {
        w->routes[i].w = w;
        w->routes[i].ep = &webhook_endpoints[i];
    }
    return w;
nomem:
    webhook_server_destroy(w);
    common_error_set(err, COMMON_ENOMEM,
                     "webhook server: out of memory (or metric families registered with another "
                     "shape)");
    return NULL;
}

size_t webhook_server_httpd_max_body(const struct webhook_server *w)
{
    return w->o.max_body * 2;
}

static double mono_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void handle(void *ctx, const struct common_httpd_request *hr,
                   struct common_httpd_response *resp)
{
    const struct webhook_route *r = ctx;
    const struct webhook_server *w = r->w;
    struct webhook_reply reply = {0};
    struct common_arena *a;
    double start = mono_seconds();
    int64_t now = w->now ? w->now(w->now_ctx) : (int64_t)time(NULL);

    a = common_arena_create(w->arena_max);
    if (a) {
        webhook_serve(a, r->ep, hr->content_type, hr->body, hr->body_len, &w->o, now, &resp->body,
                      &reply);
        common_arena_destroy(a);
    } else {
        reply.status = 500;
        reply.result = "error";
        common_httpd_respondf(resp, 500, "webhook %s: out of memory\n", r->ep->name);
    }
    resp->status = reply.status;
    resp->content_type = reply.content_type;
    if (reply.status != 200) {
        /* the first line of the message, for the log */
        char msg[512];
        size_t n = resp->body.len < sizeof(msg) - 1 ? resp->body.len : sizeof(msg) - 1;
        char status[16];
        if (n)
            memcpy(msg, resp->body.data, n);
        msg[n] = '\0';
        msg[strcspn(msg, "\n")] = '\0';
        snprintf(status, sizeof(status), "%d", reply.status);
        common_log(reply.status >= 500 ? COMMON_LOG_ERROR : COMMON_LOG_WARN,
                   "admission review refused", "webhook", r->ep->name, "status", status, "from",
                   hr->remote_addr ? hr->remote_addr : "", "error", msg, NULL);
    }
    if (w->requests) {
        const char *labels[] = {r->ep->name, reply.result ? reply.result : "error"};
        common_metric_add(w->requests, labels, 1);
    }
    if (w->duration) {
        const char *labels[] = {r->ep->name};
        common_metric_observe(w->duration, labels, mono_seconds() - start);
    }
}

enum common_rc webhook_server_install(struct webhook_server *w, struct common_httpd *h,
                                      struct common_error *err)
{
    for (size_t i = 0; i < WEBHOOK_COUNT; i++) {
        const struct webhook_endpoint *ep = w->routes[i].ep;
        if (common_httpd_route(h, "POST", ep->path, handle, &w->routes[i]))
            return common_error_set(err, COMMON_EINVAL, "webhook: cannot add route POST %s",
                                    ep->path);
        if (ep->trainer_path &&
            common_httpd_route(h, "POST", ep->trainer_path, handle, &w->routes[i]))
            return common_error_set(err, COMMON_EINVAL, "webhook: cannot add route POST %s",
                                    ep->trainer_path);
    }
    return COMMON_OK;
}
