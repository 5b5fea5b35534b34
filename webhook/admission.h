/*
 * webhook/admission.h - the admission.k8s.io/v1 AdmissionReview wire format: decode a request,
 * encode a response, build RFC 6902 JSON patches. Pure: no I/O, no clock, no globals.
 *
 * Decoding is strict and bounded. The body must be at most max_body bytes, UTF-8, one JSON
 * object with apiVersion "admission.k8s.io/v1", kind "AdmissionReview" and a "request" object
 * holding a non-empty uid, kind {group, version, kind}, resource {group, version, resource} and
 * an operation CREATE, UPDATE, DELETE or CONNECT. Every known field is type-checked and a wrong
 * type is an error naming the field ("request.dryRun: must be a boolean, got string"); fields
 * this version does not know are ignored, since the API server may add some. The decoded strings
 * and object trees borrow from the parsed document, which the arena keeps alive.
 *
 * Encoding writes exactly what the API server reads (protocols.md §2.3): the same apiVersion and
 * kind, response.uid equal to request.uid, allowed, and when denying a status {code, message,
 * reason}; warnings; for a mutation patchType "JSONPatch" and patch = base64 of a JSON array of
 * RFC 6902 operations. Output is deterministic: keys sorted, compact.
 *
 * HTTP status of bad input (webhook_admission_http_status): the API server treats any non-200
 * answer as a failed call (the webhook's failurePolicy then decides), so a request that cannot
 * be answered with a review is refused with 400 and a text message (malformed JSON, wrong
 * apiVersion or kind, missing uid, wrong types, invalid UTF-8, a body over the cap), 415 for a
 * content type other than application/json, 500 when out of memory.
 *
 * Source: ../shared/reference/protocols.md §2 (kubernetes/api admission/v1/types.go), RFC 6901
 * (JSON Pointer: "~" -> "~0", "/" -> "~1"), RFC 6902 (JSON Patch), RFC 4648 §4 (base64).
 */
#ifndef WEBHOOK_ADMISSION_H
#define WEBHOOK_ADMISSION_H

#include <jansson.h>
#include <stddef.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/error.h"

#define WEBHOOK_API_VERSION "admission.k8s.io/v1"
#define WEBHOOK_REVIEW_KIND "AdmissionReview"
/* The default body cap: an UPDATE review carries object and oldObject, each at most the API
 * server's 3 MiB request limit, plus the review around them. */
#define WEBHOOK_MAX_BODY_DEFAULT ((size_t)8 << 20)
/* Longest request.uid accepted (the API server sends a 36-character UUID). */
#define WEBHOOK_UID_MAX 256
/* Warnings as the API server keeps them: each cut to 256 bytes, at most 4096 bytes in all. */
#define WEBHOOK_WARNING_MAX 256
#define WEBHOOK_WARNINGS_TOTAL_MAX 4096

enum webhook_op {
    WEBHOOK_OP_CREATE = 1,
    WEBHOOK_OP_UPDATE,
    WEBHOOK_OP_DELETE,
    WEBHOOK_OP_CONNECT,
};

/* group "" is the core group; a member missing from the review is NULL */
struct webhook_gvk {
    const char *group, *version, *kind;
};
struct webhook_gvr {
    const char *group, *version, *resource;
};

struct webhook_user {
    const char *username, *uid; /* NULL when absent */
    const char **groups;        /* ngroups strings */
    size_t ngroups;
    const json_t *extra; /* map of string -> [string] (checked), or NULL */
};

/* A decoded AdmissionRequest (protocols.md §2.2). Everything lives in the decode arena. */
struct webhook_request {
    const char *uid;                     /* non-empty, at most WEBHOOK_UID_MAX bytes */
    struct webhook_gvk kind;             /* kind.kind is non-empty; group and version are strings */
    struct webhook_gvr resource;         /* resource.resource is non-empty */
    const char *sub_resource;            /* NULL when none */
    struct webhook_gvk request_kind;     /* matchPolicy Equivalent: the original; NULLs if absent */
    struct webhook_gvr request_resource; /* same */
    const char *request_sub_resource;
    const char *name;      /* may be empty or NULL (generateName on CREATE) */
    const char *namespace; /* NULL for cluster-scoped objects */
    enum webhook_op operation;
    const char *operation_name; /* "CREATE", ... */
    struct webhook_user user;
    const json_t *object;     /* the new object; NULL when absent or JSON null (DELETE) */
    const json_t *old_object; /* the old object; NULL when absent or null (CREATE, CONNECT) */
    int dry_run;              /* 1 when dryRun is true */
    const json_t *options;    /* Create/Update/DeleteOptions, or NULL */
};

/*
 * webhook_admission_decode - parse body[0..len) (need not be NUL-terminated) as an
 * AdmissionReview request into *req. max_body: the cap in bytes (0 = WEBHOOK_MAX_BODY_DEFAULT).
 * The parsed document is released when arena a is destroyed. Returns COMMON_OK;
 * COMMON_ETOOBIG ("request body of N bytes is over the webhook limit of M bytes");
 * COMMON_EINVAL with a message naming the byte offset (invalid UTF-8), the line and column
 * (malformed JSON) or the field ("request.uid: required", "apiVersion: must be
 * admission.k8s.io/v1, got \"admission.k8s.io/v1beta1\""); COMMON_ENOMEM. On failure *req is
 * zeroed.
 */
enum common_rc webhook_admission_decode(struct common_arena *a, const char *body, size_t len,
                                        size_t max_body, struct webhook_request *req,
                                        struct common_error *err);

/* The answer to one request (protocols.md §2.3). */
struct webhook_response {
    int allowed;
    int code;            /* status.code; 0 = no status object (usual when allowed) */
    const char *reason;  /* status.reason: "Forbidden", "Invalid", "InternalError"...; NULL */
    const char *message; /* status.message; NULL = none */
    const char *const *warnings; /* nwarnings strings; cut to the limits above on encode */
    size_t nwarnings;
    const json_t *patch; /* a JSON array of RFC 6902 operations (borrowed); NULL or [] = none */
};

/*
 * webhook_admission_encode - append the AdmissionReview answering request uid to out:
 * {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"allowed":..,
 * "patch":"<base64>","patchType":"JSONPatch","status":{"code":..,"message":..,"reason":..},
 * "uid":..,"warnings":[..]}} with absent parts left out, keys sorted, no spaces. Warnings are
 * cut to WEBHOOK_WARNING_MAX bytes at a UTF-8 boundary and dropped past
 * WEBHOOK_WARNINGS_TOTAL_MAX bytes in all; empty ones are dropped. Returns COMMON_OK,
 * COMMON_EINVAL (uid NULL or patch not an array), COMMON_ETOOBIG (out's cap) or COMMON_ENOMEM;
 * on failure out is left as it was.
 */
enum common_rc webhook_admission_encode(const char *uid, const struct webhook_response *r,
                                        struct common_buf *out, struct common_error *err);

/*
 * webhook_admission_http_status - the HTTP status for a request refused before it could be
 * answered with a review: COMMON_EINVAL and COMMON_ETOOBIG -> 400, COMMON_EUNSUPPORTED (content
 * type) -> 415, anything else -> 500.
 */
int webhook_admission_http_status(enum common_rc rc);

/* webhook_op_name - "CREATE", "UPDATE", "DELETE", "CONNECT", or "?" for anything else. */
const char *webhook_op_name(enum webhook_op op);

/*
 * A JSON patch being built: ops is a JSON array owned by the arena (released when it is
 * destroyed). A failed append sets oom and leaves ops as it was.
 */
struct webhook_patch {
    json_t *ops;
    int oom;
    struct common_arena *arena;
};

/* webhook_patch_init - an empty patch. COMMON_OK or COMMON_ENOMEM (err set). */
enum common_rc webhook_patch_init(struct webhook_patch *p, struct common_arena *a,
                                  struct common_error *err);

/*
 * webhook_patch_op - append {"op":op,"path":<pointer>,"value":value}; op is "add", "replace",
 * "test" (value required: NULL counts as a failed allocation) or "remove" (value NULL). The path is
 * built from the unescaped reference tokens that follow, ended by NULL: ("spec", "containers", "0",
 * "resources", "requests", "trainsched.io/gang", NULL) gives
 * "/spec/containers/0/resources/requests/trainsched.io~1gang". value is stolen (released even on
 * failure). Returns 0, or -1 and sets p->oom on no memory.
 */
int webhook_patch_op(struct webhook_patch *p, const char *op, json_t *value, ...);

/*
 * webhook_patch_op_at - the same with the path given as an RFC 6901 pointer already escaped
 * ("" is the whole document). value is stolen. Returns 0, or -1 and sets p->oom.
 */
int webhook_patch_op_at(struct webhook_patch *p, const char *op, const char *pointer,
                        json_t *value);

/*
 * webhook_pointer_append - append "/" and token escaped as RFC 6901 says ("~" -> "~0", "/" ->
 * "~1") to b. Returns what common_buf_append does.
 */
enum common_rc webhook_pointer_append(struct common_buf *b, const char *token,
                                      struct common_error *err);

/*
 * webhook_utf8_check - the offset of the first byte of s[0..len) that is not part of a
 * well-formed UTF-8 sequence (RFC 3629: no overlongs, no surrogates, at most U+10FFFF), or
 * (size_t)-1 when all of it is valid.
 */
size_t webhook_utf8_check(const char *s, size_t len);

#endif
