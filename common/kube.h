/*
 * common/kube.h - the one Kubernetes API client of trainsched (libcurl).
 *
 * A struct common_kube talks to one API server with the settings of a struct
 * common_kubeconfig: TLS with the cluster CA, client certificates or a bearer token (a token
 * file is re-read when it changes and after a 401), HTTP/2 where the server offers it, and
 * reused connections. Every request passes a client-side rate limiter (qps and burst, as
 * client-go's token bucket). Reads (GET) are retried on 429, 5xx and transport failures with
 * exponential backoff, honouring Retry-After; writes only when the server cannot have applied
 * them (no connection, 429, or an answer carrying Retry-After), so a create is never repeated
 * after the server may have done it. Error answers are decoded from the API's metav1.Status into
 * the error struct
 * ("POST /apis/...: 422 Invalid: <message>") and mapped to codes: 404 COMMON_ENOTFOUND, 409
 * AlreadyExists COMMON_EEXISTS, other 409 COMMON_ECONFLICT, 410 COMMON_EGONE, 400/422
 * COMMON_EINVAL, 401/403 COMMON_EUNAUTHORIZED, others COMMON_EAPI; a transport failure is
 * COMMON_EIO, a deadline COMMON_ETIMEOUT; bodies over the cap COMMON_ETOOBIG.
 *
 * Custom resources travel as JSON (jansson values). Thread-safe: calls from several threads
 * share the connection cache and the rate limiter. Source: the Kubernetes API conventions
 * (api-concepts: list chunking, watch, bookmarks, server-side apply, field validation).
 */
#ifndef COMMON_KUBE_H
#define COMMON_KUBE_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/kubeconfig.h"

struct common_kube;

struct common_kube_opts {
    double qps;             /* sustained requests per second; default 50 */
    int burst;              /* bucket size; default 100 */
    int max_retries;        /* retries of 429/5xx/transport errors; default 5 */
    long timeout_ms;        /* deadline of a whole non-watch call, retries included; 30000 */
    size_t max_body;        /* largest response body; default 256 MiB */
    size_t max_watch_event; /* largest single watch event; default 16 MiB */
    const char *user_agent; /* default "trainsched/<version>" */
};

/* A kind of object on the API: its group ("" for core), version, plural and scope. */
struct common_kube_resource {
    const char *group;
    const char *version;
    const char *resource;
    int namespaced;
};

extern const struct common_kube_resource common_kube_pods, common_kube_nodes,
    common_kube_namespaces, common_kube_configmaps, common_kube_secrets, common_kube_leases,
    common_kube_events, common_kube_trainjobs, common_kube_trainingruntimes,
    common_kube_clustertrainingruntimes, common_kube_jobsets, common_kube_podgroups;

/* common_kube_opts_default - the defaults listed above. */
struct common_kube_opts common_kube_opts_default(void);

/*
 * common_kube_client_create - a client for cfg (copied; cfg may be freed afterwards). opts NULL for
 * defaults. Returns NULL with err set (COMMON_EINVAL for an unusable config, COMMON_ENOMEM).
 * common_kube_client_destroy releases it (NULL is a no-op); no call may be running then.
 */
struct common_kube *common_kube_client_create(const struct common_kubeconfig *cfg,
                                              const struct common_kube_opts *opts,
                                              struct common_error *err);
void common_kube_client_destroy(struct common_kube *k);

/*
 * common_kube_cancel_after - for a process that is stopping (serve on SIGTERM): every call of k
 * in progress or made later ends at the latest ms milliseconds from now (0: at once). A call
 * past that cutoff fails with COMMON_ETIMEOUT and a message saying "cancelled"; its retry
 * backoffs, the rate limiter's waits and common_kube_served's retries end at the cutoff; a
 * transfer in progress is aborted within about a second (libcurl's progress callback), at once
 * when it is waiting between attempts; a watch ends with COMMON_ETIMEOUT. Calling it again
 * moves the cutoff (a later one lets a last write through, such as releasing a Lease).
 * Thread-safe; k NULL is a no-op. common_kube_canceled is 1 once the cutoff has passed.
 */
void common_kube_cancel_after(struct common_kube *k, long ms);
int common_kube_canceled(struct common_kube *k);

/*
 * common_kube_path - the URL path of a collection (name NULL) or object, with an optional
 * subresource ("status", "binding"), into buf (size bytes). ns is ignored for cluster-scoped
 * resources. Returns 0, or -1 when buf is too small.
 * Example: /api/v1/namespaces/ns/pods/p/binding, /apis/jobset.x-k8s.io/v1alpha2/jobsets.
 */
int common_kube_path(const struct common_kube_resource *r, const char *ns, const char *name,
                     const char *subresource, char *buf, size_t size);

/*
 * common_kube_request - one HTTP request. method "GET"/"POST"/"PUT"/"PATCH"/"DELETE"; path
 * with query; body may be NULL; content_type and accept may be NULL (JSON). The response body
 * goes to resp (common_buf_init it; its max is lowered to the client's max_body) and the HTTP
 * status to *status. Retries and the rate limiter apply. Returns COMMON_OK for 2xx, otherwise
 * the mapped code with the decoded Status message in err (resp still holds the body).
 */
enum common_rc common_kube_request(struct common_kube *k, const char *method, const char *path,
                                   const char *content_type, const void *body, size_t len,
                                   const char *accept, struct common_buf *resp, long *status,
                                   struct common_error *err);

/*
 * common_kube_served - whether the API server serves the resource or discovery path `path`
 * (e.g. "/apis/resource.k8s.io/v1/resourceclaims?limit=1"): *served = 1 on a 2xx answer, 0 on
 * 404 (the group/version or resource is not installed). Any other outcome (connection refused,
 * timeout, 401/403, 5xx) is not an answer to the question: it is retried every 1 s (after the
 * client's own retries) until timeout_ms has passed, then returned (COMMON_ETIMEOUT or the last
 * request's code) with a message naming the path and the last error, *served untouched.
 * Source: Kubernetes API discovery (a missing group/version or resource answers 404).
 */
enum common_rc common_kube_served(struct common_kube *k, const char *path, long timeout_ms,
                                  int *served, struct common_error *err);

/* common_kube_escape - s percent-encoded for a query value (common_malloc'd; NULL on no
 * memory). */
char *common_kube_escape(const char *s);

/* Options for writes. */
struct common_kube_write_opts {
    const char *field_manager; /* fieldManager=..., required for apply */
    int force;                 /* apply: force=true */
    int strict;                /* fieldValidation=Strict */
    int dry_run;               /* dryRun=All */
    const char *subresource;   /* "status", "binding", ... or NULL */
    /* create, update, patch: when set, reset and given the value of each `Warning:` header of
     * the answer (admission webhooks' warnings: `299 - "text"`), one a line; what does not fit
     * in its cap is dropped. Borrowed. */
    struct common_buf *warnings;
};

enum common_kube_patch_type {
    COMMON_KUBE_MERGE_PATCH, /* application/merge-patch+json (RFC 7386) */
    COMMON_KUBE_JSON_PATCH,  /* application/json-patch+json (RFC 6902) */
    COMMON_KUBE_APPLY_PATCH, /* application/apply-patch+yaml (server-side apply; JSON body) */
    COMMON_KUBE_STRATEGIC_MERGE_PATCH /* application/strategic-merge-patch+json (core types) */
};

/* common_kube_get - GET one object into *out (new reference). */
enum common_rc common_kube_get(struct common_kube *k, const struct common_kube_resource *r,
                               const char *ns, const char *name, json_t **out,
                               struct common_error *err);

struct common_kube_list_opts {
    const char *label_selector, *field_selector;
    long limit;                   /* page size (limit=); 0 = 500 */
    const char *resource_version; /* resourceVersion= for the first page, or NULL */
    /* each item as its page arrives, before it is kept (borrowed; it may be trimmed in place, so
     * a large list keeps only what the caller reads); NULL: none */
    void (*item)(void *ctx, json_t *item);
    /* after each page: the items kept so far (for progress); NULL: none */
    void (*page)(void *ctx, size_t items);
    void *ctx;
};

/*
 * common_kube_list - list a collection (ns NULL = all namespaces), following `continue` pages,
 * into *items (new array of objects) and *resource_version (the list's, common_malloc'd; may
 * be NULL). A 410 on a later page (continue token expired) restarts the list once.
 */
enum common_rc common_kube_list(struct common_kube *k, const struct common_kube_resource *r,
                                const char *ns, const struct common_kube_list_opts *opts,
                                json_t **items, char **resource_version, struct common_error *err);

/* common_kube_create - POST obj; *out (may be NULL) gets the created object. */
enum common_rc common_kube_create(struct common_kube *k, const struct common_kube_resource *r,
                                  const char *ns, const json_t *obj,
                                  const struct common_kube_write_opts *wo, json_t **out,
                                  struct common_error *err);

/* common_kube_update - PUT obj (its metadata.name and resourceVersion); stale resourceVersion
 * gives COMMON_ECONFLICT. wo->subresource "status" updates the status subresource. */
enum common_rc common_kube_update(struct common_kube *k, const struct common_kube_resource *r,
                                  const char *ns, const json_t *obj,
                                  const struct common_kube_write_opts *wo, json_t **out,
                                  struct common_error *err);

/* common_kube_patch - PATCH name with body (JSON text) of the given type. */
enum common_rc common_kube_patch(struct common_kube *k, const struct common_kube_resource *r,
                                 const char *ns, const char *name, enum common_kube_patch_type type,
                                 const char *body, const struct common_kube_write_opts *wo,
                                 json_t **out, struct common_error *err);

/*
 * common_kube_apply - server-side apply of obj (its name from metadata.name) with
 * wo->field_manager (required) and wo->force.
 */
enum common_rc common_kube_apply(struct common_kube *k, const struct common_kube_resource *r,
                                 const char *ns, const json_t *obj,
                                 const struct common_kube_write_opts *wo, json_t **out,
                                 struct common_error *err);

/*
 * common_kube_delete - DELETE name; uid / resource_version (either may be NULL) become
 * preconditions (a mismatch gives COMMON_ECONFLICT). propagation NULL, "Background",
 * "Foreground" or "Orphan".
 */
enum common_rc common_kube_delete(struct common_kube *k, const struct common_kube_resource *r,
                                  const char *ns, const char *name, const char *uid,
                                  const char *resource_version, const char *propagation,
                                  struct common_error *err);

/*
 * Watch events reach fn one at a time: type is "ADDED", "MODIFIED", "DELETED", "BOOKMARK" or
 * "ERROR"; for JSON watches object is the decoded object (borrowed for the call). For protobuf
 * watches type is "FRAME", object is NULL and raw/len hold one whole frame, its 4-byte length
 * prefix included (decode it with common_watch_decode_frame, common/coretypes.h). fn
 * returns 0 to go on, nonzero to stop the watch (common_kube_watch then returns COMMON_OK).
 */
typedef int (*common_kube_watch_fn)(void *ctx, const char *type, const json_t *object,
                                    const void *raw, size_t len);

struct common_kube_watch_opts {
    const char *resource_version; /* start after this version; NULL or "" = from now */
    int timeout_seconds;          /* server-side timeoutSeconds; 0 = 300 */
    int bookmarks;                /* allowWatchBookmarks=true */
    int protobuf;                 /* Accept: application/vnd.kubernetes.protobuf;type=watch */
    const char *label_selector, *field_selector;
    volatile int *stop; /* set nonzero from another thread to end the watch */
    long stall_ms;      /* no bytes (not even a bookmark) for this long: end the
                           watch with COMMON_ETIMEOUT; 0 = timeout_seconds + 30 s */
};

/*
 * common_kube_watch - one watch request, streaming events to fn until the server ends it
 * (COMMON_OK), fn or *stop asks to stop (COMMON_OK), the stream stalls (COMMON_ETIMEOUT), the
 * version is too old (COMMON_EGONE, also when an ERROR event carries code 410), an event is
 * larger than max_watch_event (COMMON_ETOOBIG) or not valid JSON / a valid frame
 * (COMMON_EINVAL), or the transport fails (COMMON_EIO). The caller resumes from the last
 * resourceVersion it saw; watches are not retried here.
 */
enum common_rc common_kube_watch(struct common_kube *k, const struct common_kube_resource *r,
                                 const char *ns, const struct common_kube_watch_opts *opts,
                                 common_kube_watch_fn fn, void *ctx, struct common_error *err);

#endif
