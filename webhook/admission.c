/*
 * webhook/admission.c - AdmissionReview decode and encode, JSON patches (see admission.h).
 *
 * Source: ../shared/reference/protocols.md §2.2-2.3, RFC 6901, RFC 6902, RFC 4648, RFC 3629.
 */
#include <stdarg.h>
#include <string.h>

#include "common/alloc.h"
#include "webhook/admission.h"

/* ---- UTF-8 ---- */

size_t webhook_utf8_check(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        unsigned cp;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1fu;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0fu;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07u;
        } else {
            return i; /* continuation byte, 0xc0/0xc1 overlong lead, or > 0xf4 */
        }
        if (len - i <= n)
            return i;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3fu);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += n + 1;
    }
    return (size_t)-1;
}

/* ---- JSON syntax, to tell bad input from a parser that ran out of memory ---- */

static size_t skip_ws(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

static int hex4(const char *s, size_t len, size_t i, unsigned *v)
{
    *v = 0;
    if (len < 4 || i > len - 4)
        return -1;
    for (size_t k = 0; k < 4; k++) {
        char c = s[i + k];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

/* s[i] is '"': the index after the closing quote, or 0 when the string is malformed (control
 * characters, bad escapes, unpaired surrogates: what jansson refuses) */
static size_t scan_string(const char *s, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        unsigned u, lo;
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return 0;
        if (c != '\\')
            continue;
        if (++i >= len)
            return 0;
        if (s[i] != 'u') {
            if (s[i] == '\0' || !strchr("\"\\/bfnrt", s[i]))
                return 0;
            continue;
        }
        if (hex4(s, len, i + 1, &u))
            return 0;
        i += 4;
        if (u >= 0xdc00 && u <= 0xdfff)
            return 0;
        if (u >= 0xd800 && u <= 0xdbff) {
            if (i + 2 >= len || s[i + 1] != '\\' || s[i + 2] != 'u' || hex4(s, len, i + 3, &lo) ||
                lo < 0xdc00 || lo > 0xdfff)
                return 0;
            i += 6;
        }
    }
    return 0;
}

static size_t scan_digits(const char *s, size_t len, size_t i)
{
    size_t start = i;

    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    return i > start ? i : 0;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i: the index after it, or 0 */
static size_t scan_number(const char *s, size_t len, size_t i)
{
    if (i < len && s[i] == '-')
        i++;
    if (i < len && s[i] == '0')
        i++;
    else if (!(i = scan_digits(s, len, i)))
        return 0;
    if (i < len && s[i] == '.' && !(i = scan_digits(s, len, i + 1)))
        return 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (!(i = scan_digits(s, len, i)))
            return 0;
    }
    return i;
}

#define SYNTAX_MAX_DEPTH 8192

/*
 * 1 when s[0..len) is one JSON object or array (RFC 8259; what json_loadb accepts with
 * JSON_ALLOW_NUL, numeric range, depth and duplicate keys aside), 0 otherwise. Allocates
 * nothing, so it can judge the input after the parser failed for want of memory.
 */
static int json_syntax_ok(const char *s, size_t len)
{
    unsigned char is_obj[SYNTAX_MAX_DEPTH / 8];
    size_t depth = 0, i = skip_ws(s, len, 0), n;

    if (i >= len || (s[i] != '{' && s[i] != '['))
        return 0;
    for (;;) {
        /* a value at i */
        i = skip_ws(s, len, i);
        if (i >= len)
            return 0;
        if (s[i] == '{' || s[i] == '[') {
            int obj = s[i] == '{';
            if (depth == SYNTAX_MAX_DEPTH)
                return 0;
            if (obj)
                is_obj[depth / 8] |= (unsigned char)(1u << depth % 8);
            else
                is_obj[depth / 8] &= (unsigned char)~(1u << depth % 8);
            depth++;
            i = skip_ws(s, len, i + 1);
            if (i < len && s[i] == (obj ? '}' : ']')) {
                depth--;
                i++;
                goto after_value;
            }
            if (obj)
                goto key;
            continue;
        }
        if (s[i] == '"')
            n = scan_string(s, len, i);
        else if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9'))
            n = scan_number(s, len, i);
        else if (len - i >= 4 && memcmp(s + i, "true", 4) == 0)
            n = i + 4;
        else if (len - i >= 5 && memcmp(s + i, "false", 5) == 0)
            n = i + 5;
        else if (len - i >= 4 && memcmp(s + i, "null", 4) == 0)
            n = i + 4;
        else
            return 0;
        if (!n)
            return 0;
        i = n;
    after_value:
        i = skip_ws(s, len, i);
        if (depth == 0)
            return i == len;
        if (i >= len)
            return 0;
        if (s[i] == ',') {
            i = skip_ws(s, len, i + 1);
            if (is_obj[(depth - 1) / 8] & (1u << (depth - 1) % 8))
                goto key;
            continue;
        }
        if (s[i] != ((is_obj[(depth - 1) / 8] & (1u << (depth - 1) % 8)) ? '}' : ']'))
            return 0;
        depth--;
        i++;
        goto after_value;
    key:
        /* a member at i: "key" ws : value */
        if (i >= len || s[i] != '"' || !(n = scan_string(s, len, i)))
            return 0;
        i = skip_ws(s, len, n);
        if (i >= len || s[i] != ':')
            return 0;
        i++;
    }
}

/* ---- decode ---- */

static void decref_cb(void *p)
{
    json_decref((json_t *)p);
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
    case JSON_NULL:
    default:
        return "null";
    }
}

/* member key of obj as a string: *out NULL when absent (or null and !required) */
static enum common_rc get_str(const json_t *obj, const char *key, const char *path, int required,
                              int nonempty, const char **out, struct common_error *err)
{
    const json_t *v = json_object_get(obj, key);

    *out = NULL;
    if (!v || (json_is_null(v) && !required)) {
        if (required)
            return common_error_set(err, COMMON_EINVAL, "%s.%s: required", path, key);
        return COMMON_OK;
    }
    if (!json_is_string(v))
        return common_error_set(err, COMMON_EINVAL, "%s.%s: must be a string, got %s", path, key,
                                type_name(v));
    if (strlen(json_string_value(v)) != json_string_length(v))
        return common_error_set(err, COMMON_EINVAL, "%s.%s: contains a NUL character", path, key);
    if (nonempty && json_string_length(v) == 0)
        return common_error_set(err, COMMON_EINVAL, "%s.%s: must not be empty", path, key);
    *out = json_string_value(v);
    return COMMON_OK;
}

/* an optional object member: NULL when absent or null */
static enum common_rc get_obj(const json_t *obj, const char *key, const char *path,
                              const json_t **out, struct common_error *err)
{
    const json_t *v = json_object_get(obj, key);

    *out = NULL;
    if (!v || json_is_null(v))
        return COMMON_OK;
    if (!json_is_object(v))
        return common_error_set(err, COMMON_EINVAL, "%s.%s: must be an object, got %s", path, key,
                                type_name(v));
    *out = v;
    return COMMON_OK;
}

/* kind (gvr = 0) or resource (gvr = 1): group and version strings, the last member non-empty;
 * with required = 0 an absent member stays NULL */
static enum common_rc get_gv(const json_t *req, const char *key, int gvr, int required,
                             const char **g, const char **v, const char **k,
                             struct common_error *err)
{
    const json_t *o;
    char path[64];
    enum common_rc rc;

    if ((rc = get_obj(req, key, "request", &o, err)))
        return rc;
    if (!o) {
        if (required)
            return common_error_set(err, COMMON_EINVAL, "request.%s: required", key);
        return COMMON_OK;
    }
    snprintf(path, sizeof(path), "request.%s", key);
    if ((rc = get_str(o, "group", path, required, 0, g, err)) ||
        (rc = get_str(o, "version", path, required, 0, v, err)) ||
        (rc = get_str(o, gvr ? "resource" : "kind", path, required, required, k, err)))
        return rc;
    return COMMON_OK;
}

static enum common_rc get_user(struct common_arena *a, const json_t *req, struct webhook_user *u,
                               struct common_error *err)
{
    const json_t *ui, *groups, *extra, *g;
    const char *k;
    json_t *v;
    size_t i;
    enum common_rc rc;

    if ((rc = get_obj(req, "userInfo", "request", &ui, err)) || !ui)
        return rc;
    if ((rc = get_str(ui, "username", "request.userInfo", 0, 0, &u->username, err)) ||
        (rc = get_str(ui, "uid", "request.userInfo", 0, 0, &u->uid, err)))
        return rc;
    groups = json_object_get(ui, "groups");
    if (groups && !json_is_null(groups)) {
        if (!json_is_array(groups))
            return common_error_set(err, COMMON_EINVAL,
                                    "request.userInfo.groups: must be an array, got %s",
                                    type_name(groups));
        u->groups = common_arena_alloc(a, (json_array_size(groups) + 1) * sizeof(*u->groups));
        if (!u->groups)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        json_array_foreach(groups, i, g)
        {
            if (!json_is_string(g))
                return common_error_set(err, COMMON_EINVAL,
                                        "request.userInfo.groups[%zu]: must be a string, got %s", i,
                                        type_name(g));
            u->groups[u->ngroups++] = json_string_value(g);
        }
    }
    if ((rc = get_obj(ui, "extra", "request.userInfo", &extra, err)))
        return rc;
    json_object_foreach((json_t *)extra, k, v)
    {
        if (!json_is_array(v) && !json_is_null(v))
            return common_error_set(err, COMMON_EINVAL,
                                    "request.userInfo.extra[%s]: must be an array, got %s", k,
                                    type_name(v));
        json_array_foreach(v, i, g)
        {
            if (!json_is_string(g))
                return common_error_set(err, COMMON_EINVAL,
                                        "request.userInfo.extra[%s][%zu]: must be a string, got %s",
                                        k, i, type_name(g));
        }
    }
    u->extra = extra;
    return COMMON_OK;
}

static const char *const op_names[] = {NULL, "CREATE", "UPDATE", "DELETE", "CONNECT"};

const char *webhook_op_name(enum webhook_op op)
{
    if (op >= WEBHOOK_OP_CREATE && op <= WEBHOOK_OP_CONNECT)
        return op_names[op];
    return "?";
}

static enum common_rc decode_request(struct common_arena *a, const json_t *req,
                                     struct webhook_request *r, struct common_error *err)
{
    const char *op;
    const json_t *v;
    enum common_rc rc;

    if ((rc = get_str(req, "uid", "request", 1, 1, &r->uid, err)))
        return rc;
    if (strlen(r->uid) > WEBHOOK_UID_MAX)
        return common_error_set(err, COMMON_EINVAL, "request.uid: longer than %d bytes",
                                WEBHOOK_UID_MAX);
    if ((rc = get_gv(req, "kind", 0, 1, &r->kind.group, &r->kind.version, &r->kind.kind, err)) ||
        (rc = get_gv(req, "resource", 1, 1, &r->resource.group, &r->resource.version,
                     &r->resource.resource, err)) ||
        (rc = get_str(req, "subResource", "request", 0, 0, &r->sub_resource, err)) ||
        (rc = get_gv(req, "requestKind", 0, 0, &r->request_kind.group, &r->request_kind.version,
                     &r->request_kind.kind, err)) ||
        (rc = get_gv(req, "requestResource", 1, 0, &r->request_resource.group,
                     &r->request_resource.version, &r->request_resource.resource, err)) ||
        (rc = get_str(req, "requestSubResource", "request", 0, 0, &r->request_sub_resource, err)) ||
        (rc = get_str(req, "name", "request", 0, 0, &r->name, err)) ||
        (rc = get_str(req, "namespace", "request", 0, 0, &r->namespace, err)) ||
        (rc = get_str(req, "operation", "request", 1, 1, &op, err)))
        return rc;
    if (r->sub_resource && !*r->sub_resource)
        r->sub_resource = NULL;
    if (r->namespace && !*r->namespace)
        r->namespace = NULL;
    for (int i = WEBHOOK_OP_CREATE; i <= WEBHOOK_OP_CONNECT; i++)
        if (strcmp(op, op_names[i]) == 0)
            r->operation = (enum webhook_op)i;
    if (!r->operation)
        return common_error_set(err, COMMON_EINVAL,
                                "request.operation: must be CREATE, UPDATE, DELETE or CONNECT, "
                                "got \"%s\"",
                                op);
    r->operation_name = op_names[r->operation];
    if ((rc = get_user(a, req, &r->user, err)) ||
        (rc = get_obj(req, "object", "request", &r->object, err)) ||
        (rc = get_obj(req, "oldObject", "request", &r->old_object, err)) ||
        (rc = get_obj(req, "options", "request", &r->options, err)))
        return rc;
    v = json_object_get(req, "dryRun");
    if (v && !json_is_null(v) && !json_is_boolean(v))
        return common_error_set(err, COMMON_EINVAL, "request.dryRun: must be a boolean, got %s",
                                type_name(v));
    r->dry_run = json_is_true(v);
    return COMMON_OK;
}

enum common_rc webhook_admission_decode(struct common_arena *a, const char *body, size_t len,
                                        size_t max_body, struct webhook_request *req,
                                        struct common_error *err)
{
    json_error_t jerr;
    json_t *root;
    const char *s;
    const json_t *r;
    size_t bad;
    enum common_rc rc;

    memset(req, 0, sizeof(*req));
    if (!max_body)
        max_body = WEBHOOK_MAX_BODY_DEFAULT;
    if (len > max_body)
        return common_error_set(err, COMMON_ETOOBIG,
                                "request body of %zu bytes is over the webhook limit of %zu bytes",
                                len, max_body);
    if (len == 0)
        return common_error_set(err, COMMON_EINVAL, "empty request body: want an AdmissionReview");
    bad = webhook_utf8_check(body, len);
    if (bad != (size_t)-1)
        return common_error_set(err, COMMON_EINVAL,
                                "request body is not valid UTF-8 (byte 0x%02x at offset %zu)",
                                (unsigned)(unsigned char)body[bad], bad);
    /* NUL in strings is allowed (Kubernetes strings may hold it); the fields read here refuse
     * it. Duplicate keys are refused: which one the API server meant is unknowable. */
    root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    /* jansson does not always say when it ran out of memory (a failed key copy reads "string
     * or '}' expected"): input that is well-formed JSON and failed for none of the reasons
     * that depend on the input failed for want of memory */
    if (!root) {
        enum json_error_code code = json_error_code(&jerr);
        if (code == json_error_out_of_memory || !jerr.text[0] ||
            (code != json_error_numeric_overflow && code != json_error_stack_overflow &&
             code != json_error_duplicate_key && code != json_error_null_byte_in_key &&
             code != json_error_invalid_utf8 && json_syntax_ok(body, len)))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    if (!root)
        return common_error_set(err, COMMON_EINVAL, "malformed JSON at line %d, column %d: %s",
                                jerr.line, jerr.column, jerr.text);
    if (common_arena_on_destroy(a, decref_cb, root))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (!json_is_object(root))
        return common_error_set(err, COMMON_EINVAL,
                                "request body: must be a JSON object (an AdmissionReview), got %s",
                                type_name(root));
    if ((rc = get_str(root, "apiVersion", "AdmissionReview", 1, 0, &s, err)))
        goto out;
    if (strcmp(s, WEBHOOK_API_VERSION) != 0) {
        rc = common_error_set(err, COMMON_EINVAL,
                              "apiVersion: must be " WEBHOOK_API_VERSION ", got \"%s\"", s);
        goto out;
    }
    if ((rc = get_str(root, "kind", "AdmissionReview", 1, 0, &s, err)))
        goto out;
    if (strcmp(s, WEBHOOK_REVIEW_KIND) != 0) {
        rc = common_error_set(err, COMMON_EINVAL,
                              "kind: must be " WEBHOOK_REVIEW_KIND ", got \"%s\"", s);
        goto out;
    }
    if ((rc = get_obj(root, "request", "AdmissionReview", &r, err)))
        goto out;
    if (!r) {
        rc = common_error_set(err, COMMON_EINVAL, "request: required");
        goto out;
    }
    rc = decode_request(a, r, req, err);
out:
    if (rc)
        memset(req, 0, sizeof(*req));
    return rc;
}

int webhook_admission_http_status(enum common_rc rc)
{
    switch (rc) {
    case COMMON_EINVAL:
    case COMMON_ETOOBIG:
        return 400;
    case COMMON_EUNSUPPORTED:
        return 415;
    default:
        return 500;
    }
}

/* ---- encode ---- */

static int dump_cb(const char *buffer, size_t size, void *data)
{
    return common_buf_append((struct common_buf *)data, buffer, size, NULL) ? -1 : 0;
}

/*
 * A JSON string of s with invalid UTF-8 bytes as '?', cut to at most max bytes (0 = no cap) at
 * a character boundary. New reference or NULL on no memory.
 */
static json_t *safe_string(const char *s, size_t max)
{
    size_t len = strlen(s), i = 0, o = 0;
    char *tmp;
    json_t *j;

    if (max && len > max) {
        len = max;
        /* never cut a character in two: step back to the start of the one cut off */
        for (int k = 0; k < 3 && len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80; k++)
            len--;
    }
    tmp = common_malloc(len + 1);
    if (!tmp)
        return NULL;
    while (i < len) {
        size_t bad = webhook_utf8_check(s + i, len - i);
        size_t good = bad == (size_t)-1 ? len - i : bad;
        memcpy(tmp + o, s + i, good);
        o += good;
        i += good;
        if (i < len) {
            tmp[o++] = '?';
            i++;
        }
    }
    tmp[o] = '\0';
    j = json_stringn(tmp, o);
    common_free(tmp);
    return j;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* base64 (RFC 4648 §4, padded) of in[0..n) as a new JSON string; NULL on no memory */
static json_t *base64_string(const unsigned char *in, size_t n)
{
    size_t olen = (n + 2) / 3 * 4, o = 0;
    char *out = common_malloc(olen + 1);
    json_t *j;

    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64[v & 63] : '=';
    }
    out[o] = '\0';
    j = json_stringn(out, o);
    common_free(out);
    return j;
}

static int set_new(json_t *obj, const char *key, json_t *v)
{
    return v ? json_object_set_new(obj, key, v) : -1;
}

enum common_rc webhook_admission_encode(const char *uid, const struct webhook_response *r,
                                        struct common_buf *out, struct common_error *err)
{
    json_t *review = NULL, *resp, *st, *w;
    struct common_buf pb;
    size_t before = out->len, total = 0;
    enum common_rc rc = COMMON_ENOMEM;

    common_buf_init(&pb, (size_t)-1 / 2);
    if (!uid)
        return common_error_set(err, COMMON_EINVAL, "response without a uid");
    if (r->patch && !json_is_array(r->patch))
        return common_error_set(err, COMMON_EINVAL, "patch: must be a JSON array of operations");
    review = json_object();
    resp = json_object();
    if (!review || !resp) {
        json_decref(resp);
        goto nomem;
    }
    if (json_object_set_new(review, "response", resp) ||
        set_new(review, "apiVersion", json_string(WEBHOOK_API_VERSION)) ||
        set_new(review, "kind", json_string(WEBHOOK_REVIEW_KIND)) ||
        set_new(resp, "uid", safe_string(uid, 0)) ||
        set_new(resp, "allowed", json_boolean(r->allowed)))
        goto nomem;
    if (r->code || r->message || r->reason) {
        st = json_object();
        if (!st || json_object_set_new(resp, "status", st))
            goto nomem;
        if (r->code && set_new(st, "code", json_integer(r->code)))
            goto nomem;
        if (r->message && set_new(st, "message", safe_string(r->message, 0)))
            goto nomem;
        if (r->reason && set_new(st, "reason", safe_string(r->reason, 0)))
            goto nomem;
    }
    if (r->nwarnings) {
        w = json_array();
        if (!w)
            goto nomem;
        if (json_object_set_new(resp, "warnings", w))
            goto nomem;
        for (size_t i = 0; i < r->nwarnings; i++) {
            json_t *s;
            if (!r->warnings[i] || !r->warnings[i][0])
                continue;
            s = safe_string(r->warnings[i], WEBHOOK_WARNING_MAX);
            if (!s)
                goto nomem;
            if (total + json_string_length(s) > WEBHOOK_WARNINGS_TOTAL_MAX) {
                json_decref(s);
                break;
            }
            total += json_string_length(s);
            if (json_array_append_new(w, s))
                goto nomem;
        }
        if (json_array_size(w) == 0)
            json_object_del(resp, "warnings");
    }
    if (r->patch && json_array_size(r->patch) > 0) {
        if (json_dump_callback(r->patch, dump_cb, &pb, JSON_COMPACT | JSON_SORT_KEYS) != 0)
            goto nomem;
        if (set_new(resp, "patchType", json_string("JSONPatch")) ||
            set_new(resp, "patch", base64_string((const unsigned char *)pb.data, pb.len)))
            goto nomem;
    }
    if (json_dump_callback(review, dump_cb, out, JSON_COMPACT | JSON_SORT_KEYS) != 0) {
        out->len = before;
        if (out->data)
            out->data[before] = '\0';
        rc = common_error_set(err, COMMON_ETOOBIG,
                              "the AdmissionReview response is larger than %zu bytes", out->max);
        goto out;
    }
    rc = COMMON_OK;
    goto out;
nomem:
    rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
out:
    common_buf_free(&pb);
    json_decref(review);
    return rc;
}

/* ---- JSON patch ---- */

enum common_rc webhook_pointer_append(struct common_buf *b, const char *token,
                                      struct common_error *err)
{
    enum common_rc rc = common_buf_append(b, "/", 1, err);
    const char *p = token;

    while (!rc && *p) {
        size_t run = strcspn(p, "~/");
        if (run)
            rc = common_buf_append(b, p, run, err);
        p += run;
        if (!rc && *p) {
            rc = common_buf_append(b, *p == '~' ? "~0" : "~1", 2, err);
            p++;
        }
    }
    return rc;
}

static void patch_free(void *p)
{
    json_decref((json_t *)p);
}

enum common_rc webhook_patch_init(struct webhook_patch *p, struct common_arena *a,
                                  struct common_error *err)
{
    memset(p, 0, sizeof(*p));
    p->arena = a;
    p->ops = json_array();
    if (!p->ops || common_arena_on_destroy(a, patch_free, p->ops)) {
        p->ops = NULL;
        p->oom = 1;
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

int webhook_patch_op_at(struct webhook_patch *p, const char *op, const char *pointer, json_t *value)
{
    json_t *o = NULL;

    /* every operation but "remove" carries a value: NULL there is a failed allocation */
    if (!p->ops || (!value && strcmp(op, "remove") != 0))
        goto fail;
    o = json_object();
    if (!o || set_new(o, "op", json_string(op)) || set_new(o, "path", json_string(pointer)))
        goto fail;
    if (value) {
        json_t *v = value;
        value = NULL;
        if (json_object_set_new(o, "value", v))
            goto fail;
    }
    if (json_array_append_new(p->ops, o)) {
        o = NULL;
        goto fail;
    }
    return 0;
fail:
    p->oom = 1;
    json_decref(value);
    json_decref(o);
    return -1;
}

int webhook_patch_op(struct webhook_patch *p, const char *op, json_t *value, ...)
{
    struct common_buf path;
    const char *tok;
    va_list ap;
    int rc;

    common_buf_init(&path, 64 * 1024);
    va_start(ap, value);
    while ((tok = va_arg(ap, const char *)) != NULL) {
        if (webhook_pointer_append(&path, tok, NULL))
            break;
    }
    va_end(ap);
    if (tok) {
        p->oom = 1;
        json_decref(value);
        common_buf_free(&path);
        return -1;
    }
    rc = webhook_patch_op_at(p, op, path.data ? path.data : "", value);
    common_buf_free(&path);
    return rc;
}
