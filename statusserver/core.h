/*
 * statusserver/core.h - the decisions of the TrainJob status server (Kubeflow Trainer's
 * TrainJobStatus feature, alpha in Trainer v2.2+), with no I/O.
 *
 * Training code reports progress and metrics by POSTing
 *   {"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 600,
 *                      "metrics": [{"name": "loss", "value": "0.25"}],
 *                      "lastUpdatedTime": "2026-01-01T10:00:00Z"}}
 * to /apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status with
 * "Authorization: Bearer <projected ServiceAccount token>". The glue (statusserver/server.h)
 * asks the API server to review the token (TokenReview with the TrainJob's audience) and
 * server-side applies the status with field manager "trainer-status". This module decides every
 * step in between, in the order Trainer's status server takes them:
 *   1. body size (ss_body_too_large): Content-Length over 64 KiB -> 413, before anything else;
 *   2. the route (ss_route): anything but POST to the status path -> 404;
 *   3. the token (ss_bearer_token, ss_token_review_body, ss_token_review_decide) -> 403;
 *   4. the body (ss_decode): not a JSON object of the right types -> 422 "Invalid payload";
 *      no trainerStatus -> 200 with the body echoed, nothing written; a broken API rule
 *      (progressPercentage 0..100, estimatedRemainingSeconds >= 0, at most 256 metrics, name
 *      and value 1..64 characters, lastUpdatedTime present) -> 422 naming the field, in the
 *      words the API server would use, so nothing is sent that the API server would refuse;
 *   5. the write (ss_apply_body, then ss_api_answer for the API server's answer): 404 when the
 *      TrainJob does not exist, 422 with the API server's message when it refuses, 500 else.
 * Error answers are a metav1.Status, as Trainer writes them (ss_status_json).
 *
 * Source: Kubeflow Trainer v2.3.0, pkg/statusserver (server.go, auth.go, middleware.go,
 * utils.go) and the TrainerStatus type with its CRD rules (pkg/apis/trainer/v1alpha1).
 */
#ifndef STATUSSERVER_CORE_H
#define STATUSSERVER_CORE_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

/* the largest body Trainer reads (64 KiB) */
#define SS_MAX_BODY 65536
/* the field manager of every status write */
#define SS_FIELD_MANAGER "trainer-status"
/* Trainer's default port of the status server */
#define SS_DEFAULT_PORT 10443
/* a namespace or TrainJob name from the path: at most this many bytes (longer is a 404) */
#define SS_NAME_MAX 253

/* An answer: HTTP status, metav1.Status reason and message. */
struct ss_answer {
    int code;           /* 200, 403, 404, 413, 422, 500 */
    const char *reason; /* "Forbidden", "NotFound", "RequestEntityTooLarge", "Invalid",
                           "InternalError"; NULL for 200 */
    char message[COMMON_ERROR_MSG_MAX];
};

/*
 * ss_body_too_large - 1 when the request's Content-Length header (NULL when absent) says more
 * than SS_MAX_BODY bytes, and ans is set to 413 RequestEntityTooLarge "Payload too large";
 * else 0. Trainer checks this before routing, so any path gets it. A chunked body has no
 * Content-Length: it is cut at SS_MAX_BODY and decoded from what fits (ss_decode).
 */
int ss_body_too_large(const char *content_length, struct ss_answer *ans);

/*
 * ss_route - whether method and path (percent-decoded, no query) are the status endpoint
 * "POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status", each
 * wildcard one non-empty path segment of at most SS_NAME_MAX bytes. Returns 1 with ns and name
 * filled (SS_NAME_MAX + 1 bytes each); 0 with ans set to 404 NotFound "Not found" otherwise
 * (other methods on the same path too, as Trainer's catch-all route answers them).
 */
int ss_route(const char *method, const char *path, char *ns, char *name, struct ss_answer *ans);

/*
 * ss_audience - the audience the TrainJob's token must carry,
 * "trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status", into buf (size
 * bytes). Returns 0, or -1 when it does not fit.
 */
int ss_audience(const char *ns, const char *name, char *buf, size_t size);

/*
 * ss_bearer_token - the credential of an RFC 7235 Bearer Authorization header, as Trainer
 * reads it: the header split on white space must be exactly two words, the first "Bearer" in
 * any case. Returns a pointer into buf (size bytes, where the token is copied), or NULL when
 * the header is absent or of another shape (Trainer then refuses: 403).
 */
const char *ss_bearer_token(const char *header, char *buf, size_t size);

/*
 * ss_token_review_body - the TokenReview to create (authentication.k8s.io/v1) for token and
 * the TrainJob's audience: {"apiVersion", "kind", "spec": {"token", "audiences": [aud]}}. New
 * reference, NULL when out of memory.
 */
json_t *ss_token_review_body(const char *token, const char *ns, const char *name);

/*
 * ss_token_review_decide - whether the answered TokenReview (the API server's object, borrowed;
 * its "status" is read) lets the token write ns/name's status. Trainer's checks, made on the
 * review: the token is authenticated (signature and expiry, and for a bound token that its
 * pod or Secret still exists), carries the audience (status.audiences holds it), and belongs
 * to a ServiceAccount of the TrainJob's namespace (status.user.username is
 * "system:serviceaccount:<ns>:<sa>", the namespace claim Trainer compares). Like Trainer, it
 * does not ask which ServiceAccount, nor that the token is bound to a pod. Returns 1 (allowed)
 * or 0 with why set to the first check that failed (for the log; the client only sees
 * "Forbidden").
 */
int ss_token_review_decide(const json_t *review, const char *ns, const char *name, char *why,
                           size_t why_size);

/* What a request body asks for. */
enum ss_decoded {
    SS_DECODED_APPLY, /* trainerStatus given and valid: *apply and *echo are set */
    SS_DECODED_NOOP,  /* no trainerStatus (absent or null): answer 200 with *echo, write nothing */
    SS_DECODED_BAD    /* ans says why: 422 (Invalid payload, or a broken API rule) */
};

/*
 * ss_decode - read a request body (len bytes; only the first SS_MAX_BODY are read) as Trainer's
 * Go decoder reads it into UpdateTrainJobStatusRequest: the first JSON value (anything after it
 * is ignored), an object or null; keys matched to fields case-insensitively (a later duplicate
 * wins), unknown keys ignored; integers int32 (no fraction or exponent); metric name and value
 * strings; lastUpdatedTime an RFC 3339 string, stored as UTC seconds ("...Z", the fraction
 * dropped). A decoding failure answers 422 Invalid "Invalid payload". Then the API server's rules
 * for a given trainerStatus (bounds, lengths in characters, at most 256 metrics, lastUpdatedTime
 * required): 422 Invalid with the API server's message
 * 'TrainJob.trainer.kubeflow.org "<name>" is invalid: <field errors>', every broken rule listed.
 * On success *echo is the request as Trainer answers it (new reference: {"trainerStatus": {...}}
 * with the fields in Go's order, empty strings and absent numbers left out, or {} for no
 * trainerStatus) and, for SS_DECODED_APPLY, *apply is the server-side apply body for
 * ns/name (new reference; see ss_apply_body). Returns SS_DECODED_*; out of memory is
 * SS_DECODED_BAD with ans 500 InternalError.
 */
enum ss_decoded ss_decode(const char *body, size_t len, const char *ns, const char *name,
                          json_t **echo, json_t **apply, struct ss_answer *ans);

/*
 * ss_apply_body - the apply configuration Trainer sends for trainer_status (an object in echo
 * form, borrowed): {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
 * "metadata": {"name", "namespace"}, "status": {"trainerStatus": ...}}. An empty metrics list is
 * left out (the field manager then gives the list up). New reference, NULL on no memory.
 */
json_t *ss_apply_body(const char *ns, const char *name, const json_t *trainer_status);

/*
 * ss_api_answer - the answer for the API server's reply to the status apply: http_status (0
 * when no answer came) and response_body (its metav1.Status as JSON text, or NULL). 2xx -> 200; 404
 * -> 404 NotFound "Train job not found"; 400 or 422 -> 422 Invalid with the API server's message;
 * anything else (no answer, 403 for a missing permission, 5xx) -> 500 InternalError "Internal
 * error".
 */
void ss_api_answer(long http_status, const char *response_body, struct ss_answer *ans);

/*
 * ss_status_json - the metav1.Status body Trainer writes for an error answer,
 * {"metadata":{},"status":"Failure","message":...,"reason":...,"code":N} and a newline (Go's
 * json.Encoder), into a new string (common_malloc'd; NULL when out of memory).
 */
char *ss_status_json(const struct ss_answer *ans);

/* ---- the whole request, step by step (what the glue drives) ---- */

/* A request as it arrived; strings borrowed for the ss_flow_start call. */
struct ss_request {
    const char *method, *path;
    const char *content_length; /* the Content-Length header, NULL when absent (chunked) */
    const char *authorization;  /* the Authorization header, NULL when absent */
    const char *body;           /* body_len bytes */
    size_t body_len;
};

enum ss_next {
    SS_NEXT_ANSWER, /* answer now: ss_flow_response */
    SS_NEXT_REVIEW, /* create flow->review (a TokenReview), then ss_flow_reviewed */
    SS_NEXT_APPLY   /* apply flow->apply to ns/name's status subresource with field manager
                       SS_FIELD_MANAGER and force, then ss_flow_applied */
};

/* One request's state. Zero it before ss_flow_start; ss_flow_free releases what it holds. */
struct ss_flow {
    char ns[SS_NAME_MAX + 1], name[SS_NAME_MAX + 1];
    char *token; /* the bearer token (common_malloc'd), NULL before routing */
    char *body;  /* a copy of the body (at most SS_MAX_BODY bytes) */
    size_t body_len;
    json_t *review;       /* SS_NEXT_REVIEW: the TokenReview to create (owned) */
    json_t *apply;        /* SS_NEXT_APPLY: the apply body (owned) */
    json_t *echo;         /* the 200 answer's body (owned) */
    char why[512];        /* for the log: why a token was refused */
    struct ss_answer ans; /* SS_NEXT_ANSWER: the answer */
};

/*
 * ss_flow_start - steps 1-3a of the file comment: 413 for a large Content-Length, 404 off the
 * route, 403 without a Bearer token; else the TokenReview to create. Returns SS_NEXT_ANSWER or
 * SS_NEXT_REVIEW (500 InternalError when out of memory).
 */
enum ss_next ss_flow_start(struct ss_flow *f, const struct ss_request *r);

/*
 * ss_flow_reviewed - the TokenReview's outcome: http_status of the create (0 when none came)
 * and the API server's answer object (borrowed, NULL when none). No answer or not 201/200 ->
 * 500 InternalError; the review refuses -> 403 Forbidden (f->why says why); then ss_decode of
 * the body: SS_NEXT_ANSWER (422, or 200 for no trainerStatus) or SS_NEXT_APPLY.
 */
enum ss_next ss_flow_reviewed(struct ss_flow *f, long http_status, const json_t *review);

/*
 * ss_flow_authorized - the steps after an accepted token (what ss_flow_reviewed does once the
 * review allows it), for a token the glue accepted moments ago for the same TrainJob (its cache
 * of allowed reviews): SS_NEXT_ANSWER or SS_NEXT_APPLY as ss_flow_reviewed.
 */
enum ss_next ss_flow_authorized(struct ss_flow *f);

/* ss_flow_applied - the apply's outcome (ss_api_answer); always SS_NEXT_ANSWER. */
enum ss_next ss_flow_applied(struct ss_flow *f, long http_status, const char *response_body);

/*
 * ss_flow_response - the answer's body: for 200 the echo as compact JSON and a newline, else
 * ss_status_json. Content type "application/json" either way. New string (common_malloc'd),
 * NULL when out of memory.
 */
char *ss_flow_response(const struct ss_flow *f);

/* ss_flow_free - release what f holds (f itself is the caller's). */
void ss_flow_free(struct ss_flow *f);

#endif
