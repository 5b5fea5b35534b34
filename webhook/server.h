/*
 * webhook/server.h - the admission webhooks on trainsched's HTTPS server: routes, clock,
 * metrics and logs around the pure handlers of webhook/handlers.h.
 *
 * webhook_server_install adds one POST route per endpoint of webhook_endpoints[] to a
 * common_httpd, at its own path and at Kubeflow Trainer's path where it has one:
 *   /validate-trainjob                 /validate-trainer-kubeflow-org-v1alpha1-trainjob
 *   /validate-trainingruntime          /validate-trainer-kubeflow-org-v1alpha1-trainingruntime
 *   /validate-clustertrainingruntime /validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime
 *   /mutate-trainjob                   /mutate-trainer-kubeflow-org-v1alpha1-trainjob
 *   /mutate-pod
 * The API server's ?timeout=10s query is ignored. TLS, the listening socket and other methods
 * (405) are the httpd's. Each request gets its own arena; the body is read from memory, the
 * decision is pure, and the only shared state is the lookup callback's cache and the metrics, so
 * the routes are safe on every server thread.
 *
 * Body cap: bodies over opts.max_body (default 8 MiB) are refused with 400 and a message. The
 * httpd refuses bodies over its own max_body (default 3 MiB) with 413 before the route runs, so
 * give the HTTPS server max_body >= 2 * opts.max_body (webhook_server_httpd_max_body) to let
 * every oversized review get the webhook's message.
 *
 * Metrics (when opts.metrics is set):
 *   trainsched_webhook_requests_total{webhook,result}   counter; result: allowed, denied,
 *                                                       invalid (4xx: bad input), error (5xx)
 *   trainsched_webhook_duration_seconds{webhook}        histogram of the time to answer
 *   trainsched_webhook_runtime_reads_total{result}      counter of the runtimes read from the
 *                                                       API server on a cache miss (opts.kube);
 *                                                       result: found, not_found, error
 * webhook is the endpoint name ("validate-trainjob", ..., "mutate-pod").
 *
 * Source: common/httpd.h (routes, handlers), common/metrics.h, protocols.md §2.
 */
#ifndef WEBHOOK_SERVER_H
#define WEBHOOK_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/httpd.h"
#include "common/kube.h"
#include "common/metrics.h"
#include "webhook/handlers.h"

struct webhook_server_opts {
    webhook_lookup_fn lookup; /* runtimes (and JobSets) from the caller's caches; MUST */
    void *lookup_ctx;         /* borrowed; must outlive the server */
    /* MAY (borrowed, must outlive the server): when lookup does not find a TrainingRuntime or
     * ClusterTrainingRuntime (its cache lags, or is not synced yet), it is read with one GET
     * through this client before the TrainJob is refused; a 404 still refuses it. Give it a
     * short timeout (the API server waits for the webhook: 10 s in the shipped configuration;
     * serve uses WEBHOOK_RUNTIME_GET_TIMEOUT_MS). NULL: the cache alone decides. */
    struct common_kube *kube;
    const char *scheduler_name; /* mutate-pod: gang pods' schedulerName; NULL = leave it (copied) */
    const char *gang_resource;  /* NULL = WEBHOOK_GANG_RESOURCE (copied) */
    int extender_wired;         /* mutate-pod routes gang pods (webhook_options.extender_wired) */
    int gang_gate;              /* mutate-pod gates gang pods (webhook_options.gang_gate) */
    const char *default_backend;     /* webhook_options.default_backend (copied) */
    const char *volcano_tiers;       /* webhook_options.volcano_tiers (copied) */
    size_t max_body;                 /* request body cap in bytes; 0 = WEBHOOK_MAX_BODY_DEFAULT */
    int64_t max_schedule_timeout_ms; /* webhook_options.max_schedule_timeout_ms; 0 = no warning */
    size_t arena_max;                /* per-request memory cap in bytes; 0 = 512 MiB */
    struct common_metrics *metrics;  /* borrowed; NULL = no metrics */
    int64_t (*now)(void *ctx);       /* Unix seconds; NULL = time(NULL) (tests pin it) */
    void *now_ctx;
};

/* the timeout serve gives the client of webhook_server_opts.kube: one GET, no retry beyond it */
#define WEBHOOK_RUNTIME_GET_TIMEOUT_MS 2000

struct webhook_server;

/*
 * webhook_server_create - the webhook routes' state; opts is copied (strings too) and its
 * metric families are registered. Returns NULL with err set: COMMON_EINVAL (no lookup),
 * COMMON_ENOMEM (or a metric family of the same name registered with another shape).
 */
struct webhook_server *webhook_server_create(const struct webhook_server_opts *opts,
                                             struct common_error *err);

/*
 * webhook_server_install - add the routes listed above to h (before common_httpd_start). w must
 * outlive h's serving. Returns COMMON_OK, or COMMON_EINVAL when a route cannot be added (h
 * already started, or a path taken).
 */
enum common_rc webhook_server_install(struct webhook_server *w, struct common_httpd *h,
                                      struct common_error *err);

/* webhook_server_httpd_max_body - the max_body to give the HTTPS server: twice the webhook's
 * cap, so oversized reviews reach the webhook and get its 400 with a message. */
size_t webhook_server_httpd_max_body(const struct webhook_server *w);

/* webhook_server_destroy - free w (after the httpd has stopped). NULL is a no-op. */
void webhook_server_destroy(struct webhook_server *w);

#endif
