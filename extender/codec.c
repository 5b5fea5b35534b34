/*
 * extender/codec.c - wire codec of the scheduler extender verbs (see codec.h).
 *
 * Three parts: a strict JSON scanner (validates while it walks, yields string spans, never
 * builds a tree), the decoders that drive it over the extender envelopes, and a small JSON
 * writer that fills a stack buffer and flushes it into the caller's common_buf.
 */
#include "extender/codec.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ scanner == */

struct js {
    const unsigned char *base, *p, *end;
    unsigned depth;
    const char *doc; /* "ExtenderArgs", ... for messages */
    struct common_error *err;
};

/* A string token: the raw bytes between the quotes. */
struct jstr {
    const unsigned char *s;
    size_t len;
    uint8_t esc; /* holds backslash escapes */
    uint8_t nul; /* holds \u0000 */
};

/* 1 for the bytes a JSON string needs a closer look at: controls, '"', '\\' and non-ASCII. */
#define X16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
static const uint8_t str_special[256] = {
    X16(1), X16(1), /* 0x00-0x1f */
    0,      0,      1,      0,      0,      0,      0,      0,
    0,      0,      0,      0,      0,      0,      0,      0, /* 0x20-0x2f: '"' */
    X16(0), X16(0),                                            /* 0x30-0x4f */
    0,      0,      0,      0,      0,      0,      0,      0,
    0,      0,      0,      0,      1,      0,      0,      0,      /* 0x50-0x5f: '\\' */
    X16(0), X16(0),                                                 /* 0x60-0x7f */
    X16(1), X16(1), X16(1), X16(1), X16(1), X16(1), X16(1), X16(1), /* 0x80-0xff */
};

/* special8 - nonzero when one of the 8 bytes at p is str_special (SWAR: a byte >= 0x80, or
 * below 0x20, or equal to '"' or '\\'; the borrow tricks may flag more bytes once one is
 * flagged, never none when one is). */
static uint64_t special8(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t x, q, b;

    memcpy(&x, p, 8);
    q = x ^ (ones * '"');
    b = x ^ (ones * '\\');
    return (x | ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high;
}

static enum common_rc js_fail(struct js *s, const char *what)
{
    return common_error_set(s->err, COMMON_EINVAL, "%s: invalid JSON at byte %zu: %s", s->doc,
                            (size_t)(s->p - s->base), what);
}

static void js_ws(struct js *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

#define JS_END (-1)

/* js_peek - the next non-blank byte, or JS_END at the end (a NUL byte is just invalid). */
static int js_peek(struct js *s)
{
    js_ws(s);
    return s->p < s->end ? *s->p : JS_END;
}

static long hex4(const unsigned char *p, const unsigned char *end)
{
    long v = 0;
    int i;

    if (end - p < 4)
        return -1;
    for (i = 0; i < 4; i++) {
        unsigned c = p[i];
        if (c >= '0' && c <= '9')
            v = v * 16 + (long)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (long)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v = v * 16 + (long)(c - 'A' + 10);
        else
            return -1;
    }
    return v;
}

/*
 * utf8_seq - length of the well-formed UTF-8 sequence at p (p[0] >= 0x80) with avail bytes
 * readable, or 0 (overlong forms, surrogates and code points over U+10FFFF are refused). Reads
 * a byte only after the previous one proved a continuation, so it is safe on a NUL-terminated
 * string with avail = 4.
 */
static size_t utf8_seq(const unsigned char *p, size_t avail)
{
    unsigned c = p[0], lo, hi;

    if (c >= 0xC2 && c <= 0xDF)
        return avail >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
        return avail >= 3 && p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
        return avail >= 4 && p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 &&
                       (p[3] & 0xC0) == 0x80
                   ? 4
                   : 0;
    }
    return 0;
}

/* js_string - at '"': check the string and return its raw span in *out. */
static enum common_rc js_string(struct js *s, struct jstr *out)
{
    const unsigned char *p = s->p + 1, *end = s->end;

    out->s = p;
    out->esc = 0;
    out->nul = 0;
    for (;;) {
        size_t n;
        long u, lo;

        while (end - p >= 8) {
            uint64_t m = special8(p);
            if (!m) {
                p += 8;
                continue;
            }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            /* borrows only flag bytes after a flagged one: the lowest flag is the first
             * special byte */
            p += (unsigned)__builtin_ctzll(m) >> 3;
#endif
            break;
        }
        while (p < end && !str_special[*p])
            p++;
        if (p >= end) {
            s->p = p;
            return js_fail(s, "unterminated string");
        }
        if (*p == '"')
            break;
        if (*p < 0x20) {
            s->p = p;
            return js_fail(s, "control character in a string");
        }
        if (*p >= 0x80) {
            n = utf8_seq(p, (size_t)(end - p));
            if (!n) {
                s->p = p;
                return js_fail(s, "invalid UTF-8");
            }
            p += n;
            continue;
        }
        /* a backslash */
        out->esc = 1;
        if (end - p < 2) {
            s->p = p;
            return js_fail(s, "unterminated string");
        }
        switch (p[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            p += 2;
            break;
        case 'u':
            u = hex4(p + 2, end);
            if (u < 0) {
                s->p = p;
                return js_fail(s, "invalid \\u escape");
            }
            if (u == 0)
                out->nul = 1;
            if (u >= 0xDC00 && u <= 0xDFFF) {
                s->p = p;
                return js_fail(s, "lone surrogate in a \\u escape");
            }
            if (u >= 0xD800 && u <= 0xDBFF) {
                lo = end - p >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4(p + 8, end) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    s->p = p;
                    return js_fail(s, "lone surrogate in a \\u escape");
                }
                p += 6;
            }
            p += 6;
            break;
        default:
            s->p = p;
            return js_fail(s, "invalid escape");
        }
    }
    out->len = (size_t)(p - out->s);
    s->p = p + 1;
    return COMMON_OK;
}

static int is_digit(const unsigned char *p, const unsigned char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* js_number - at '-' or a digit: check the number; *is_int when it has no fraction or
 * exponent. */
static enum common_rc js_number(struct js *s, int *is_int)
{
    const unsigned char *p = s->p, *end = s->end;

    *is_int = 1;
    if (p < end && *p == '-')
        p++;
    if (!is_digit(p, end)) {
        s->p = p;
        return js_fail(s, "invalid number");
    }
    if (*p == '0')
        p++;
    else
        while (is_digit(p, end))
            p++;
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        if (!is_digit(p, end)) {
            s->p = p;
            return js_fail(s, "invalid number");
        }
        while (is_digit(p, end))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit(p, end)) {
            s->p = p;
            return js_fail(s, "invalid number");
        }
        while (is_digit(p, end))
            p++;
    }
    s->p = p;
    return COMMON_OK;
}

static enum common_rc js_literal(struct js *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return js_fail(s, "invalid literal");
    s->p += n;
    return COMMON_OK;
}

/* js_open - at c ('{' or '['), after blanks: enter the container; *more = it is not empty. */
static enum common_rc js_open(struct js *s, char c, int *more)
{
    if (js_peek(s) != c)
        return js_fail(s, c == '{' ? "expected '{'" : "expected '['");
    if (++s->depth > EXTENDER_JSON_MAX_DEPTH)
        return js_fail(s, "nested deeper than 100 levels");
    s->p++;
    if (js_peek(s) == (c == '{' ? '}' : ']')) {
        s->p++;
        s->depth--;
        *more = 0;
    } else {
        *more = 1;
    }
    return COMMON_OK;
}

/* js_next - after a member or element: ',' (*more = 1) or the closing byte (*more = 0). */
static enum common_rc js_next(struct js *s, char close, int *more)
{
    int c = js_peek(s);

    if (c == ',') {
        s->p++;
        *more = 1;
        return COMMON_OK;
    }
    if (c == close) {
        s->p++;
        s->depth--;
        *more = 0;
        return COMMON_OK;
    }
    if (c == JS_END)
        return js_fail(s, "unexpected end of input");
    return js_fail(s, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

/* js_key - a member's key and the ':' after it. */
static enum common_rc js_key(struct js *s, struct jstr *k)
{
    enum common_rc rc;

    if (js_peek(s) != '"')
        return js_fail(s, "expected a string key");
    rc = js_string(s, k);
    if (rc)
        return rc;
    if (js_peek(s) != ':')
        return js_fail(s, "expected ':'");
    s->p++;
    return COMMON_OK;
}

/* js_value - check and step over any value. */
static enum common_rc js_value(struct js *s)
{
    struct jstr str;
    enum common_rc rc;
    int more, is_int;

    switch (js_peek(s)) {
    case JS_END:
        return js_fail(s, "unexpected end of input");
    case '{':
        rc = js_open(s, '{', &more);
        while (rc == COMMON_OK && more) {
            rc = js_key(s, &str);
            if (rc == COMMON_OK)
                rc = js_value(s);
            if (rc == COMMON_OK)
                rc = js_next(s, '}', &more);
        }
        return rc;
    case '[':
        rc = js_open(s, '[', &more);
        while (rc == COMMON_OK && more) {
            rc = js_value(s);
            if (rc == COMMON_OK)
                rc = js_next(s, ']', &more);
        }
        return rc;
    case '"':
        return js_string(s, &str);
    case 't':
        return js_literal(s, "true", 4);
    case 'f':
        return js_literal(s, "false", 5);
    case 'n':
        return js_literal(s, "null", 4);
    default:
        if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))
            return js_number(s, &is_int);
        return js_fail(s, "unexpected character");
    }
}

/* js_null - at the next value: consume it when it is null (*is_null = 1). */
static enum common_rc js_null(struct js *s, int *is_null)
{
    *is_null = 0;
    if (js_peek(s) != 'n')
        return COMMON_OK;
    *is_null = 1;
    return js_literal(s, "null", 4);
}

static int utf8_put(char *o, long u)
{
    if (u < 0x80) {
        o[0] = (char)u;
        return 1;
    }
    if (u < 0x800) {
        o[0] = (char)(0xC0 | (u >> 6));
        o[1] = (char)(0x80 | (u & 0x3F));
        return 2;
    }
    if (u < 0x10000) {
        o[0] = (char)(0xE0 | (u >> 12));
        o[1] = (char)(0x80 | ((u >> 6) & 0x3F));
        o[2] = (char)(0x80 | (u & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (u >> 18));
    o[1] = (char)(0x80 | ((u >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((u >> 6) & 0x3F));
    o[3] = (char)(0x80 | (u & 0x3F));
    return 4;
}

/* js_unescape - the checked string j decoded into dst (room for j->len bytes: decoding never
 * grows a string); returns the length. */
static size_t js_unescape(const struct jstr *j, char *dst)
{
    const unsigned char *p = j->s, *e = j->s + j->len;
    char *o = dst;

    if (!j->esc) {
        memcpy(dst, j->s, j->len);
        return j->len;
    }
    while (p < e) {
        long u;

        if (*p != '\\') {
            *o++ = (char)*p++;
            continue;
        }
        switch (p[1]) {
        case 'b':
            *o++ = '\b';
            break;
        case 'f':
            *o++ = '\f';
            break;
        case 'n':
            *o++ = '\n';
            break;
        case 'r':
            *o++ = '\r';
            break;
        case 't':
            *o++ = '\t';
            break;
        case 'u':
            u = hex4(p + 2, e);
            p += 6;
            if (u >= 0xD800 && u <= 0xDBFF) {
                u = 0x10000 + ((u - 0xD800) << 10) + (hex4(p + 2, e) - 0xDC00);
                p += 6;
            }
            o += utf8_put(o, u);
            continue;
        default: /* " \ / */
            *o++ = (char)p[1];
            break;
        }
        p += 2;
    }
    return (size_t)(o - dst);
}

/* jstr_eq - the key j equals lit. */
static int jstr_eq(const struct jstr *j, const char *lit)
{
    size_t n = strlen(lit);
    char tmp[64];

    if (!j->esc)
        return j->len == n && memcmp(j->s, lit, n) == 0;
    if (j->len > sizeof(tmp))
        return 0;
    return js_unescape(j, tmp) == n && memcmp(tmp, lit, n) == 0;
}

/* ================================================================ decoders == */

struct dec {
    struct js s;
    struct common_arena *a;
    struct common_error *err;
    char *pool; /* small strings are packed here, unaligned */
    size_t pool_left;
    size_t max_body;
    uint32_t max_nodes, max_victims;
    int meta_only; /* the top-level Pod: its metadata only (extender_decode_args_meta) */
    struct extender_raw pod_raw; /* the top-level Pod's bytes (in the body) */
    size_t base_off;             /* where s.base lies in the original body (messages) */
};

static enum common_rc d_nomem(struct dec *d)
{
    return common_error_set(d->err, COMMON_ENOMEM, "%s: out of memory", d->s.doc);
}

/* d_fail - COMMON_EINVAL "<path>: <what>", path formatted. */
static enum common_rc d_fail(struct dec *d, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum common_rc d_fail(struct dec *d, const char *what, const char *fmt, ...)
{
    char path[320];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    return common_error_set(d->err, COMMON_EINVAL, "%s: %s", path, what);
}

/* d_type - the value ahead is not of the wanted type: check it is valid JSON (that error
 * comes first), then report the type error. */
static enum common_rc d_type(struct dec *d, const char *what, const char *path)
{
    enum common_rc rc = js_value(&d->s);

    return rc ? rc : d_fail(d, what, "%s", path);
}

/* A growable array in the arena (the old storage stays in the arena until it goes). */
struct vec {
    void *v;
    uint32_t n, cap;
};

/* vec_grow - room for cap elements (cap > v->cap). */
static int vec_grow(struct common_arena *a, struct vec *v, size_t elt, uint32_t cap)
{
    void *nv = common_arena_alloc(a, (size_t)cap * elt);

    if (!nv)
        return -1;
    if (v->n)
        memcpy(nv, v->v, (size_t)v->n * elt);
    v->v = nv;
    v->cap = cap;
    return 0;
}

static void *vec_push(struct common_arena *a, struct vec *v, size_t elt)
{
    if (v->n == v->cap && vec_grow(a, v, elt, v->cap ? v->cap * 2 : 64))
        return NULL;
    return (char *)v->v + (size_t)v->n++ * elt;
}

enum str_bad { STR_OK, STR_EMPTY, STR_LONG, STR_NUL, STR_NOMEM };

/* d_mem - n bytes for a string; small ones are packed into 8 KB pieces of the arena. */
static char *d_mem(struct dec *d, size_t n)
{
    char *r;

    if (n > 1024)
        return common_arena_alloc(d->a, n);
    if (n > d->pool_left) {
        d->pool = common_arena_alloc(d->a, 8192);
        if (!d->pool)
            return NULL;
        d->pool_left = 8192;
    }
    r = d->pool;
    d->pool += n;
    d->pool_left -= n;
    return r;
}

/* d_str - the checked string j, decoded into the arena: not empty, at most max bytes. */
static enum str_bad d_str(struct dec *d, const struct jstr *j, size_t max, const char **out)
{
    char *o;
    size_t n;

    *out = NULL;
    if (j->nul)
        return STR_NUL;
    if (j->len == 0)
        return STR_EMPTY;
    if (!j->esc && j->len > max)
        return STR_LONG;
    o = d_mem(d, j->len + 1);
    if (!o)
        return STR_NOMEM;
    n = js_unescape(j, o);
    o[n] = '\0';
    if (n > max)
        return STR_LONG;
    *out = o;
    return STR_OK;
}

/* d_str_fail - the error for a d_str result, at path. */
static enum common_rc d_str_fail(struct dec *d, enum str_bad bad, size_t max, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum common_rc d_str_fail(struct dec *d, enum str_bad bad, size_t max, const char *fmt, ...)
{
    char path[320], what[64];
    va_list ap;

    if (bad == STR_NOMEM)
        return d_nomem(d);
    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    if (bad == STR_EMPTY)
        snprintf(what, sizeof(what), "must not be empty");
    else if (bad == STR_NUL)
        snprintf(what, sizeof(what), "contains \\u0000");
    else
        snprintf(what, sizeof(what), "longer than %zu bytes", max);
    return common_error_set(d->err, COMMON_EINVAL, "%s: %s", path, what);
}

static enum common_rc d_begin(struct dec *d, struct common_arena *a, const char *body, size_t len,
                              const struct extender_limits *lim, const char *doc,
                              struct common_error *err)
{
    memset(d, 0, sizeof(*d));
    d->s.base = d->s.p = (const unsigned char *)body;
    d->s.end = d->s.base + len;
    d->s.doc = doc;
    d->s.err = err;
    d->a = a;
    d->err = err;
    d->max_body = lim && lim->max_body ? lim->max_body : EXTENDER_DEFAULT_MAX_BODY;
    d->max_nodes = lim && lim->max_nodes ? lim->max_nodes : EXTENDER_DEFAULT_MAX_NODES;
    d->max_victims = lim && lim->max_victims ? lim->max_victims : EXTENDER_DEFAULT_MAX_VICTIMS;
    if (!a || (!body && len))
        return common_error_set(err, COMMON_EINVAL, "%s: no arena or no body", doc);
    if (len > d->max_body)
        return common_error_set(err, COMMON_ETOOBIG,
                                "%s: body of %zu bytes is over the limit of %zu bytes", doc, len,
                                d->max_body);
    if (js_peek(&d->s) == JS_END)
        return js_fail(&d->s, "empty body");
    if (js_peek(&d->s) != '{') {
        enum common_rc rc = js_value(&d->s);
        return rc ? rc : common_error_set(err, COMMON_EINVAL, "%s: expected a JSON object", doc);
    }
    return COMMON_OK;
}

static enum common_rc d_end(struct dec *d)
{
    if (js_peek(&d->s) != JS_END)
        return js_fail(&d->s, "data after the JSON value");
    return COMMON_OK;
}

static void pod_cleanup(void *p)
{
    common_pod_free(p);
}

static void node_cleanup(void *p)
{
    common_node_free(p);
}

/*
 * jansson_fail - jansson refused a span the scanner had accepted. It is stricter in three
 * ways (\u0000 in a string or key, an integer beyond 64 bits, a number beyond a double): those are
 * the input's fault. Anything else can only be an allocation failing inside jansson, which
 * it reports as whatever token it was reading ("string or '}' expected") or with no text.
 * (A real disagreement would show up the same way: the fuzz targets treat COMMON_ENOMEM
 * without an injected failure as a finding.)
 */
static enum common_rc jansson_fail(struct dec *d, const json_error_t *je,
                                   const unsigned char *start, const char *path)
{
    enum json_error_code code = json_error_code(je);

    /* when its lexer cannot start, jansson returns with an empty text and no code set */
    if (!je->text[0] || (code != json_error_null_character && code != json_error_null_byte_in_key &&
                         code != json_error_numeric_overflow))
        return common_error_set(d->err, COMMON_ENOMEM, "%s: out of memory (jansson: %s)", path,
                                je->text);
    return common_error_set(d->err, COMMON_EINVAL, "%s: %s at byte %zu", path, je->text,
                            (size_t)(start - d->s.base) + d->base_off + (size_t)je->position);
}

static enum common_rc prefixed(struct dec *d, enum common_rc rc, const char *path,
                               const struct common_error *inner)
{
    if (rc == COMMON_ENOMEM)
        return d_nomem(d);
    return common_error_set(d->err, rc, "%s.%s", path, inner->msg);
}

/* d_pod - the value ahead is a v1.Pod: decode it with coretypes (owned by the arena). */
static enum common_rc d_pod(struct dec *d, const char *path, struct common_pod **out);
static enum common_rc d_pod_meta(struct dec *d, struct common_pod **out);

/* d_top_pod - the top-level "Pod": null leaves it unset ("Pod: required" later). */
static enum common_rc d_top_pod(struct dec *d, int *seen, struct common_pod **out)
{
    enum common_rc rc;
    int is_null;

    if ((*seen)++)
        return d_fail(d, "duplicate key", "Pod");
    rc = js_null(&d->s, &is_null);
    if (rc || is_null)
        return rc;
    d->pod_raw.data = (const char *)d->s.p;
    rc = d->meta_only ? d_pod_meta(d, out) : d_pod(d, "Pod", out);
    d->pod_raw.len = (size_t)((const char *)d->s.p - d->pod_raw.data);
    return rc;
}

/* d_pod_from - decode the pod object j (borrowed) with coretypes into *out (owned by the
 * arena), checking what the verbs need of its metadata */
static enum common_rc d_pod_from(struct dec *d, const char *path, const json_t *j,
                                 struct common_pod **out);

static enum common_rc d_pod(struct dec *d, const char *path, struct common_pod **out)
{
    const unsigned char *start;
    json_error_t je;
    enum common_rc rc;
    json_t *j;

    *out = NULL;
    if (js_peek(&d->s) != '{')
        return d_type(d, "expected an object", path);
    start = d->s.p;
    rc = js_value(&d->s);
    if (rc)
        return rc;
    memset(&je, 0, sizeof(je));
    j = json_loadb((const char *)start, (size_t)(d->s.p - start), 0, &je);
    if (!j)
        return jansson_fail(d, &je, start, path);
    rc = d_pod_from(d, path, j, out);
    json_decref(j);
    return rc;
}

/* d_pod_meta - the top-level Pod, checked as JSON to its end, decoded from its metadata
 * alone (the last "metadata" member, as jansson keeps the last of duplicate keys) */
static enum common_rc d_pod_meta(struct dec *d, struct common_pod **out)
{
    const unsigned char *md = NULL, *md_end = NULL;
    json_error_t je;
    struct jstr k;
    enum common_rc rc;
    json_t *j, *m;
    int more, native = 0;

    *out = NULL;
    if (js_peek(&d->s) != '{')
        return d_type(d, "expected an object", "Pod");
    rc = js_open(&d->s, '{', &more);
    while (rc == COMMON_OK && more) {
        int is_md;
        if ((rc = js_key(&d->s, &k)))
            break;
        is_md = jstr_eq(&k, "metadata");
        js_ws(&d->s);
        if (is_md)
            md = d->s.p;
        if (jstr_eq(&k, "spec") && js_peek(&d->s) == '{') {
            /* only spec's keys: is it a pod of kube-scheduler's own gang (schedulingGroup)? */
            int in_spec;
            rc = js_open(&d->s, '{', &in_spec);
            while (rc == COMMON_OK && in_spec) {
                if ((rc = js_key(&d->s, &k)))
                    break;
                js_ws(&d->s);
                if (jstr_eq(&k, "schedulingGroup") && js_peek(&d->s) == '{')
                    native = 1;
                if ((rc = js_value(&d->s)))
                    break;
                rc = js_next(&d->s, '}', &in_spec);
            }
        } else if ((rc = js_value(&d->s)))
            break;
        if (is_md)
            md_end = d->s.p;
        if (rc == COMMON_OK)
            rc = js_next(&d->s, '}', &more);
    }
    if (rc)
        return rc;
    if (!md)
        return d_fail(d, "required", "Pod.metadata");
    memset(&je, 0, sizeof(je));
    m = json_loadb((const char *)md, (size_t)(md_end - md), JSON_DECODE_ANY, &je);
    if (!m)
        return jansson_fail(d, &je, md, "Pod.metadata");
    j = json_object();
    if (!j || json_object_set_new(j, "metadata", m)) {
        json_decref(j);
        return d_nomem(d);
    }
    rc = d_pod_from(d, "Pod", j, out);
    json_decref(j);
    if (rc == COMMON_OK && native)
        (*out)->scheduling_group = ""; /* the name is not needed: the pod is not ours */
    return rc;
}

static enum common_rc d_pod_from(struct dec *d, const char *path, const json_t *j,
                                 struct common_pod **out)
{
    struct common_error inner;
    struct common_pod *pod = NULL;
    const json_t *md;
    enum common_rc rc;

    *out = NULL;
    md = json_object_get(j, "metadata");
    if (!md || json_is_null(md)) {
        rc = d_fail(d, "required", "%s.metadata", path);
        goto out;
    }
    if (!json_is_object(md)) {
        rc = d_fail(d, "expected an object", "%s.metadata", path);
        goto out;
    }
    rc = common_pod_from_json(j, &pod, &inner);
    if (rc) {
        rc = prefixed(d, rc, path, &inner);
        goto out;
    }
    if (common_arena_on_destroy(d->a, pod_cleanup, pod)) {
        rc = d_nomem(d);
        goto out;
    }
    if (!pod->name[0])
        rc = d_fail(d, "required", "%s.metadata.name", path);
    else if (strlen(pod->name) > EXTENDER_NAME_MAX)
        rc = d_fail(d, "longer than 253 bytes", "%s.metadata.name", path);
    else if (!pod->namespace[0])
        rc = d_fail(d, "required", "%s.metadata.namespace", path);
    else if (strlen(pod->namespace) > EXTENDER_NAMESPACE_MAX)
        rc = d_fail(d, "longer than 63 bytes", "%s.metadata.namespace", path);
    else if (!pod->uid[0])
        rc = d_fail(d, "required", "%s.metadata.uid", path);
    else if (strlen(pod->uid) > EXTENDER_NAME_MAX)
        rc = d_fail(d, "longer than 253 bytes", "%s.metadata.uid", path);
    else
        *out = pod;
out:
    return rc;
}

static const char *pod_group(const struct common_pod *pod)
{
    uint32_t i;

    if (pod->scheduling_group) /* kube-scheduler's own gang: never ours */
        return "";
    for (i = 0; i < pod->n_labels; i++)
        if (strcmp(pod->labels[i].key, EXTENDER_POD_GROUP_LABEL) == 0)
            return pod->labels[i].value;
    return "";
}

/* d_node_names - NodeNames: null or an array of names. */
static enum common_rc d_node_names(struct dec *d, struct extender_args *x, int *set)
{
    struct vec v = {0};
    struct jstr j;
    enum common_rc rc;
    int more, is_null;

    rc = js_null(&d->s, &is_null);
    if (rc || is_null)
        return rc;
    if (js_peek(&d->s) != '[')
        return d_type(d, "expected an array of strings or null", "NodeNames");
    /* a name takes ~20 bytes on the wire: size the array once for the common case */
    if (vec_grow(d->a, &v, sizeof(char *),
                 (uint32_t)((size_t)(d->s.end - d->s.p) / 16 < d->max_nodes
                                ? (size_t)(d->s.end - d->s.p) / 16 + 1
                                : d->max_nodes)))
        return d_nomem(d);
    rc = js_open(&d->s, '[', &more);
    while (rc == COMMON_OK && more) {
        const char **slot;
        enum str_bad bad;

        if (js_peek(&d->s) != '"') {
            char path[32];
            snprintf(path, sizeof(path), "NodeNames[%u]", v.n);
            return d_type(d, "not a string", path);
        }
        if (v.n >= d->max_nodes)
            return common_error_set(d->err, COMMON_EINVAL, "NodeNames: more than %u nodes",
                                    d->max_nodes);
        rc = js_string(&d->s, &j);
        if (rc)
            return rc;
        slot = vec_push(d->a, &v, sizeof(*slot));
        if (!slot)
            return d_nomem(d);
        bad = d_str(d, &j, EXTENDER_NAME_MAX, slot);
        if (bad)
            return d_str_fail(d, bad, EXTENDER_NAME_MAX, "NodeNames[%u]", v.n - 1);
        rc = js_next(&d->s, ']', &more);
    }
    if (rc)
        return rc;
    x->node_names = v.v;
    x->n_nodes = v.n;
    *set = 1;
    return COMMON_OK;
}

/* d_node - one NodeList item ahead: keep its bytes and decode it. */
static enum common_rc d_node(struct dec *d, uint32_t i, struct common_node **node,
                             struct extender_raw *raw)
{
    const unsigned char *start;
    struct common_error inner;
    char path[48];
    json_error_t je;
    enum common_rc rc;
    json_t *j;
    char *copy;

    snprintf(path, sizeof(path), "Nodes.items[%u]", i);
    if (js_peek(&d->s) != '{')
        return d_type(d, "expected an object", path);
    start = d->s.p;
    rc = js_value(&d->s);
    if (rc)
        return rc;
    raw->len = (size_t)(d->s.p - start);
    copy = common_arena_alloc(d->a, raw->len);
    if (!copy)
        return d_nomem(d);
    memcpy(copy, start, raw->len);
    raw->data = copy;
    memset(&je, 0, sizeof(je));
    j = json_loadb((const char *)start, raw->len, 0, &je);
    if (!j)
        return jansson_fail(d, &je, start, path);
    rc = common_node_from_json(j, node, &inner);
    json_decref(j);
    if (rc)
        return prefixed(d, rc, path, &inner);
    if (common_arena_on_destroy(d->a, node_cleanup, *node)) {
        *node = NULL;
        return d_nomem(d);
    }
    if (!(*node)->name[0])
        return d_fail(d, "required", "%s.metadata.name", path);
    if (strlen((*node)->name) > EXTENDER_NAME_MAX)
        return d_fail(d, "longer than 253 bytes", "%s.metadata.name", path);
    return COMMON_OK;
}

/* d_node_list - Nodes: null or a v1.NodeList ({"metadata":{..},"items":[Node...]}). */
static enum common_rc d_node_list(struct dec *d, struct extender_args *x, int *set)
{
    struct vec nodes = {0}, raws = {0};
    struct jstr k;
    enum common_rc rc;
    int more, is_null, seen_items = 0;

    rc = js_null(&d->s, &is_null);
    if (rc || is_null)
        return rc;
    if (js_peek(&d->s) != '{')
        return d_type(d, "expected an object (a NodeList) or null", "Nodes");
    rc = js_open(&d->s, '{', &more);
    while (rc == COMMON_OK && more) {
        rc = js_key(&d->s, &k);
        if (rc)
            return rc;
        if (!jstr_eq(&k, "items")) {
            rc = js_value(&d->s);
        } else if (seen_items++) {
            return d_fail(d, "duplicate key", "Nodes.items");
        } else {
            int more_items;

            rc = js_null(&d->s, &is_null);
            if (rc == COMMON_OK && !is_null) {
                if (js_peek(&d->s) != '[')
                    return d_type(d, "expected an array or null", "Nodes.items");
                rc = js_open(&d->s, '[', &more_items);
                while (rc == COMMON_OK && more_items) {
                    struct common_node **slot;
                    struct extender_raw *raw;

                    if (nodes.n >= d->max_nodes)
                        return common_error_set(d->err, COMMON_EINVAL,
                                                "Nodes.items: more than %u nodes", d->max_nodes);
                    slot = vec_push(d->a, &nodes, sizeof(*slot));
                    raw = vec_push(d->a, &raws, sizeof(*raw));
                    if (!slot || !raw)
                        return d_nomem(d);
                    rc = d_node(d, nodes.n - 1, slot, raw);
                    if (rc == COMMON_OK)
                        rc = js_next(&d->s, ']', &more_items);
                }
            }
        }
        if (rc == COMMON_OK)
            rc = js_next(&d->s, '}', &more);
    }
    if (rc)
        return rc;
    x->n_nodes = nodes.n;
    x->nodes = nodes.n ? nodes.v : common_arena_alloc(d->a, sizeof(struct common_node *));
    x->nodes_json = raws.n ? raws.v : common_arena_alloc(d->a, sizeof(struct extender_raw));
    x->node_names = common_arena_alloc(d->a, sizeof(char *) * (nodes.n ? nodes.n : 1));
    if (!x->nodes || !x->nodes_json || !x->node_names)
        return d_nomem(d);
    for (uint32_t i = 0; i < nodes.n; i++)
        x->node_names[i] = x->nodes[i]->name;
    *set = 1;
    return COMMON_OK;
}

static enum common_rc decode_args(struct common_arena *a, const char *body, size_t len,
                                  const struct extender_limits *lim, int meta_only,
                                  struct extender_args **out, struct common_error *err)
{
    struct extender_args *x = NULL;
    struct dec d;
    struct jstr k;
    enum common_rc rc;
    int more = 0, seen_pod = 0, seen_nodes = 0, seen_names = 0, nodes_set = 0, names_set = 0;

    if (out)
        *out = NULL;
    rc = d_begin(&d, a, body, len, lim, "ExtenderArgs", err);
    if (rc)
        return rc;
    d.meta_only = meta_only;
    x = common_arena_alloc(a, sizeof(*x));
    if (!x)
        return d_nomem(&d);
    rc = js_open(&d.s, '{', &more);
    while (rc == COMMON_OK && more) {
        rc = js_key(&d.s, &k);
        if (rc)
            break;
        if (jstr_eq(&k, "Pod"))
            rc = d_top_pod(&d, &seen_pod, &x->pod);
        else if (jstr_eq(&k, "NodeNames"))
            rc = seen_names++ ? d_fail(&d, "duplicate key", "NodeNames")
                              : d_node_names(&d, x, &names_set);
        else if (jstr_eq(&k, "Nodes"))
            rc = seen_nodes++ ? d_fail(&d, "duplicate key", "Nodes")
                              : d_node_list(&d, x, &nodes_set);
        else
            rc = js_value(&d.s);
        if (rc == COMMON_OK)
            rc = js_next(&d.s, '}', &more);
    }
    if (rc == COMMON_OK)
        rc = d_end(&d);
    if (rc)
        return rc;
    if (!x->pod)
        return d_fail(&d, "required", "Pod");
    if (nodes_set && names_set)
        return common_error_set(
            err, COMMON_EINVAL,
            "ExtenderArgs: both Nodes and NodeNames are set (one must be null)");
    if (!nodes_set && !names_set)
        return common_error_set(err, COMMON_EINVAL,
                                "ExtenderArgs: neither Nodes nor NodeNames is set");
    x->cache_capable = names_set;
    x->pod_group = pod_group(x->pod);
    x->pod_meta_only = meta_only;
    if (meta_only) { /* the body is borrowed: keep the Pod's bytes for extender_decode_args_pod */
        char *copy = common_arena_alloc(a, d.pod_raw.len + 1);
        if (!copy)
            return d_nomem(&d);
        memcpy(copy, d.pod_raw.data, d.pod_raw.len);
        copy[d.pod_raw.len] = '\0';
        x->pod_json.data = copy;
        x->pod_json.len = d.pod_raw.len;
        x->pod_offset = (size_t)((const unsigned char *)d.pod_raw.data - d.s.base);
    }
    if (!x->node_names) {
        x->node_names = common_arena_alloc(a, sizeof(char *));
        if (!x->node_names)
            return d_nomem(&d);
    }
    if (out)
        *out = x;
    return COMMON_OK;
}

enum common_rc extender_decode_args(struct common_arena *a, const char *body, size_t len,
                                    const struct extender_limits *lim, struct extender_args **out,
                                    struct common_error *err)
{
    return decode_args(a, body, len, lim, 0, out, err);
}

enum common_rc extender_decode_args_meta(struct common_arena *a, const char *body, size_t len,
                                         const struct extender_limits *lim,
                                         struct extender_args **out, struct common_error *err)
{
    return decode_args(a, body, len, lim, 1, out, err);
}

enum common_rc extender_decode_args_pod(struct common_arena *a, struct extender_args *args,
                                        struct common_error *err)
{
    struct common_pod *pod = NULL;
    struct dec d;
    enum common_rc rc;

    if (!args->pod_meta_only)
        return COMMON_OK;
    rc = d_begin(&d, a, args->pod_json.data, args->pod_json.len, NULL, "ExtenderArgs", err);
    d.base_off = args->pod_offset;
    if (rc == COMMON_OK)
        rc = d_pod(&d, "Pod", &pod);
    if (rc)
        return rc;
    args->pod = pod;
    args->pod_meta_only = 0;
    return COMMON_OK;
}

/* d_bind_str - one string member of ExtenderBindingArgs. */
static enum common_rc d_bind_str(struct dec *d, const char *key, size_t max, const char **out)
{
    struct jstr j;
    enum str_bad bad;
    enum common_rc rc;
    int is_null;

    if (*out)
        return d_fail(d, "duplicate key", "%s", key);
    rc = js_null(&d->s, &is_null);
    if (rc || is_null)
        return rc;
    if (js_peek(&d->s) != '"')
        return d_type(d, "not a string", key);
    rc = js_string(&d->s, &j);
    if (rc)
        return rc;
    bad = d_str(d, &j, max, out);
    return bad ? d_str_fail(d, bad, max, "%s", key) : COMMON_OK;
}

enum common_rc extender_decode_bind_args(struct common_arena *a, const char *body, size_t len,
                                         const struct extender_limits *lim,
                                         struct extender_bind_args **out, struct common_error *err)
{
    static const struct {
        const char *key;
        size_t max;
        size_t off;
    } fields[] = {
        {"PodName", EXTENDER_NAME_MAX, offsetof(struct extender_bind_args, pod_name)},
        {"PodNamespace", EXTENDER_NAMESPACE_MAX,
         offsetof(struct extender_bind_args, pod_namespace)},
        {"PodUID", EXTENDER_NAME_MAX, offsetof(struct extender_bind_args, pod_uid)},
        {"Node", EXTENDER_NAME_MAX, offsetof(struct extender_bind_args, node)},
    };
    struct extender_bind_args *x;
    struct dec d;
    struct jstr k;
    enum common_rc rc;
    int more = 0;
    size_t i;

    if (out)
        *out = NULL;
    rc = d_begin(&d, a, body, len, lim, "ExtenderBindingArgs", err);
    if (rc)
        return rc;
    x = common_arena_alloc(a, sizeof(*x));
    if (!x)
        return d_nomem(&d);
    rc = js_open(&d.s, '{', &more);
    while (rc == COMMON_OK && more) {
        rc = js_key(&d.s, &k);
        if (rc)
            break;
        for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
            if (jstr_eq(&k, fields[i].key))
                break;
        if (i < sizeof(fields) / sizeof(fields[0]))
            rc = d_bind_str(&d, fields[i].key, fields[i].max,
                            (const char **)((char *)x + fields[i].off));
        else
            rc = js_value(&d.s);
        if (rc == COMMON_OK)
            rc = js_next(&d.s, '}', &more);
    }
    if (rc == COMMON_OK)
        rc = d_end(&d);
    if (rc)
        return rc;
    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (!*(const char **)((char *)x + fields[i].off))
            return d_fail(&d, "required", "%s", fields[i].key);
    if (out)
        *out = x;
    return COMMON_OK;
}

/* d_count - a non-negative integer ahead (int64). */
static enum common_rc d_count(struct dec *d, const char *path, int64_t *out)
{
    const unsigned char *p;
    enum common_rc rc;
    int is_int, c = js_peek(&d->s);
    int64_t v = 0;

    if (c != '-' && !(c >= '0' && c <= '9'))
        return d_type(d, "expected an integer", path);
    p = d->s.p;
    rc = js_number(&d->s, &is_int);
    if (rc)
        return rc;
    if (!is_int)
        return d_fail(d, "expected an integer", "%s", path);
    if (*p == '-') {
        if (d->s.p - p == 2 && p[1] == '0') {
            *out = 0;
            return COMMON_OK;
        }
        return d_fail(d, "must not be negative", "%s", path);
    }
    for (; p < d->s.p; p++) {
        if (v > (INT64_MAX - (*p - '0')) / 10)
            return d_fail(d, "out of range", "%s", path);
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return COMMON_OK;
}

/* d_meta_pod - a MetaPod ahead: {"UID": s}. */
static enum common_rc d_meta_pod(struct dec *d, const char *path, const char **uid)
{
    struct jstr k, j;
    enum common_rc rc;
    int more, is_null, seen = 0;

    *uid = NULL;
    if (js_peek(&d->s) != '{')
        return d_type(d, "expected an object", path);
    rc = js_open(&d->s, '{', &more);
    while (rc == COMMON_OK && more) {
        rc = js_key(&d->s, &k);
        if (rc)
            return rc;
        if (!jstr_eq(&k, "UID")) {
            rc = js_value(&d->s);
        } else if (seen++) {
            return d_fail(d, "duplicate key", "%s.UID", path);
        } else {
            rc = js_null(&d->s, &is_null);
            if (rc == COMMON_OK && !is_null) {
                enum str_bad bad;

                if (js_peek(&d->s) != '"') {
                    char p2[448];
                    snprintf(p2, sizeof(p2), "%s.UID", path);
                    return d_type(d, "not a string", p2);
                }
                rc = js_string(&d->s, &j);
                if (rc)
                    return rc;
                bad = d_str(d, &j, EXTENDER_NAME_MAX, uid);
                if (bad)
                    return d_str_fail(d, bad, EXTENDER_NAME_MAX, "%s.UID", path);
            }
        }
        if (rc == COMMON_OK)
            rc = js_next(&d->s, '}', &more);
    }
    if (rc)
        return rc;
    return *uid ? COMMON_OK : d_fail(d, "required", "%s.UID", path);
}

/* d_victims - one map value: Victims or MetaVictims (meta). */
static enum common_rc d_victims(struct dec *d, const char *map, int meta,
                                struct extender_victims *vi)
{
    struct vec uids = {0}, pods = {0};
    char path[384];
    struct jstr k;
    enum common_rc rc;
    int more, is_null, seen_pods = 0, seen_pdb = 0;

    snprintf(path, sizeof(path), "%s[%.256s]", map, vi->node);
    if (js_peek(&d->s) != '{')
        return d_type(d, "expected an object", path);
    rc = js_open(&d->s, '{', &more);
    while (rc == COMMON_OK && more) {
        rc = js_key(&d->s, &k);
        if (rc)
            return rc;
        if (jstr_eq(&k, "NumPDBViolations")) {
            if (seen_pdb++)
                return d_fail(d, "duplicate key", "%s.NumPDBViolations", path);
            rc = js_null(&d->s, &is_null);
            if (rc == COMMON_OK && !is_null) {
                char p2[416];
                snprintf(p2, sizeof(p2), "%s.NumPDBViolations", path);
                rc = d_count(d, p2, &vi->num_pdb_violations);
            }
        } else if (jstr_eq(&k, "Pods")) {
            int more_pods;

            if (seen_pods++)
                return d_fail(d, "duplicate key", "%s.Pods", path);
            rc = js_null(&d->s, &is_null);
            if (rc || is_null)
                goto next;
            if (js_peek(&d->s) != '[') {
                char p2[416];
                snprintf(p2, sizeof(p2), "%s.Pods", path);
                return d_type(d, "expected an array or null", p2);
            }
            rc = js_open(&d->s, '[', &more_pods);
            while (rc == COMMON_OK && more_pods) {
                char p2[416];
                const char **uid;

                snprintf(p2, sizeof(p2), "%s.Pods[%u]", path, uids.n);
                if (uids.n >= d->max_victims)
                    return common_error_set(d->err, COMMON_EINVAL, "%s.Pods: more than %u pods",
                                            path, d->max_victims);
                uid = vec_push(d->a, &uids, sizeof(*uid));
                if (!uid)
                    return d_nomem(d);
                if (!meta) {
                    struct common_pod **pod = vec_push(d->a, &pods, sizeof(*pod));
                    if (!pod)
                        return d_nomem(d);
                    rc = d_pod(d, p2, pod);
                    if (rc)
                        return rc;
                    *uid = (*pod)->uid;
                } else {
                    rc = d_meta_pod(d, p2, uid);
                    if (rc)
                        return rc;
                }
                rc = js_next(&d->s, ']', &more_pods);
            }
        } else {
            rc = js_value(&d->s);
        }
    next:
        if (rc == COMMON_OK)
            rc = js_next(&d->s, '}', &more);
    }
    if (rc)
        return rc;
    vi->n_pods = uids.n;
    vi->uids = uids.n ? uids.v : common_arena_alloc(d->a, sizeof(char *));
    if (!vi->uids)
        return d_nomem(d);
    if (!meta) {
        vi->pods = pods.n ? pods.v : common_arena_alloc(d->a, sizeof(struct common_pod *));
        if (!vi->pods)
            return d_nomem(d);
    }
    return COMMON_OK;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* d_victim_map - NodeNameToVictims / NodeNameToMetaVictims: null or {node: victims}. */
static enum common_rc d_victim_map(struct dec *d, const char *map, int meta, struct vec *nodes,
                                   int *set)
{
    struct jstr k;
    enum common_rc rc;
    int more, is_null;
    const char **sorted;
    uint32_t i;

    rc = js_null(&d->s, &is_null);
    if (rc || is_null)
        return rc;
    if (js_peek(&d->s) != '{')
        return d_type(d, "expected an object or null", map);
    rc = js_open(&d->s, '{', &more);
    while (rc == COMMON_OK && more) {
        struct extender_victims *vi;
        enum str_bad bad;

        rc = js_key(&d->s, &k);
        if (rc)
            return rc;
        if (nodes->n >= d->max_nodes)
            return common_error_set(d->err, COMMON_EINVAL, "%s: more than %u nodes", map,
                                    d->max_nodes);
        vi = vec_push(d->a, nodes, sizeof(*vi));
        if (!vi)
            return d_nomem(d);
        bad = d_str(d, &k, EXTENDER_NAME_MAX, &vi->node);
        if (bad)
            return d_str_fail(d, bad, EXTENDER_NAME_MAX, "%s[%.*s]", map,
                              (int)(k.len > 256 ? 256 : k.len), (const char *)k.s);
        rc = d_victims(d, map, meta, vi);
        if (rc == COMMON_OK)
            rc = js_next(&d->s, '}', &more);
    }
    if (rc)
        return rc;
    if (nodes->n > 1) {
        sorted = common_arena_alloc(d->a, sizeof(*sorted) * nodes->n);
        if (!sorted)
            return d_nomem(d);
        for (i = 0; i < nodes->n; i++)
            sorted[i] = ((struct extender_victims *)nodes->v)[i].node;
        qsort(sorted, nodes->n, sizeof(*sorted), name_cmp);
        for (i = 1; i < nodes->n; i++)
            if (strcmp(sorted[i - 1], sorted[i]) == 0)
                return d_fail(d, "duplicate node", "%s[%s]", map, sorted[i]);
    }
    *set = 1;
    return COMMON_OK;
}

enum common_rc extender_decode_preempt_args(struct common_arena *a, const char *body, size_t len,
                                            const struct extender_limits *lim,
                                            struct extender_preempt_args **out,
                                            struct common_error *err)
{
    struct extender_preempt_args *x;
    struct vec full = {0}, meta = {0};
    struct dec d;
    struct jstr k;
    enum common_rc rc;
    int more = 0, seen_pod = 0, seen_full = 0, seen_meta = 0, full_set = 0, meta_set = 0;

    if (out)
        *out = NULL;
    rc = d_begin(&d, a, body, len, lim, "ExtenderPreemptionArgs", err);
    if (rc)
        return rc;
    x = common_arena_alloc(a, sizeof(*x));
    if (!x)
        return d_nomem(&d);
    rc = js_open(&d.s, '{', &more);
    while (rc == COMMON_OK && more) {
        rc = js_key(&d.s, &k);
        if (rc)
            break;
        if (jstr_eq(&k, "Pod"))
            rc = d_top_pod(&d, &seen_pod, &x->pod);
        else if (jstr_eq(&k, "NodeNameToVictims"))
            rc = seen_full++ ? d_fail(&d, "duplicate key", "NodeNameToVictims")
                             : d_victim_map(&d, "NodeNameToVictims", 0, &full, &full_set);
        else if (jstr_eq(&k, "NodeNameToMetaVictims"))
            rc = seen_meta++ ? d_fail(&d, "duplicate key", "NodeNameToMetaVictims")
                             : d_victim_map(&d, "NodeNameToMetaVictims", 1, &meta, &meta_set);
        else
            rc = js_value(&d.s);
        if (rc == COMMON_OK)
            rc = js_next(&d.s, '}', &more);
    }
    if (rc == COMMON_OK)
        rc = d_end(&d);
    if (rc)
        return rc;
    if (!x->pod)
        return d_fail(&d, "required", "Pod");
    if (full_set && meta_set)
        return common_error_set(err, COMMON_EINVAL,
                                "ExtenderPreemptionArgs: both NodeNameToVictims and "
                                "NodeNameToMetaVictims are set (one must be null)");
    if (!full_set && !meta_set)
        return common_error_set(err, COMMON_EINVAL,
                                "ExtenderPreemptionArgs: neither NodeNameToVictims nor "
                                "NodeNameToMetaVictims is set");
    x->cache_capable = meta_set;
    x->pod_group = pod_group(x->pod);
    x->n_nodes = meta_set ? meta.n : full.n;
    x->nodes = meta_set ? meta.v : full.v;
    if (!x->nodes) {
        x->nodes = common_arena_alloc(a, sizeof(*x->nodes));
        if (!x->nodes)
            return d_nomem(&d);
    }
    if (out)
        *out = x;
    return COMMON_OK;
}

long extender_args_node_index(const struct extender_args *args, const char *name)
{
    uint32_t i;

    if (!args || !name)
        return -1;
    for (i = 0; i < args->n_nodes; i++)
        if (strcmp(args->node_names[i], name) == 0)
            return (long)i;
    return -1;
}

enum common_rc extender_json_check(const char *s, size_t len, struct common_error *err)
{
    struct js js;
    enum common_rc rc;

    memset(&js, 0, sizeof(js));
    js.base = js.p = (const unsigned char *)s;
    js.end = js.base + len;
    js.doc = "JSON";
    js.err = err;
    if (js_peek(&js) == JS_END)
        return js_fail(&js, "empty body");
    rc = js_value(&js);
    if (rc == COMMON_OK && js_peek(&js) != JS_END)
        rc = js_fail(&js, "data after the JSON value");
    return rc;
}

/* ================================================================= writer == */

/* Output goes to a stack buffer first and into the common_buf in large pieces. */
struct jw {
    struct common_buf *b;
    struct common_error *err;
    enum common_rc rc;
    size_t start; /* b->len on entry, restored on error */
    size_t n;
    char tmp[8192];
};

static void jw_init(struct jw *w, struct common_buf *b, struct common_error *err)
{
    w->b = b;
    w->err = err;
    w->rc = COMMON_OK;
    w->start = b->len;
    w->n = 0;
}

static void jw_flush(struct jw *w)
{
    if (w->rc == COMMON_OK && w->n)
        w->rc = common_buf_append(w->b, w->tmp, w->n, w->err);
    w->n = 0;
}

static void jw_raw(struct jw *w, const void *s, size_t n)
{
    if (n > sizeof(w->tmp) - w->n) {
        jw_flush(w);
        if (n > sizeof(w->tmp)) {
            if (w->rc == COMMON_OK)
                w->rc = common_buf_append(w->b, s, n, w->err);
            return;
        }
    }
    memcpy(w->tmp + w->n, s, n);
    w->n += n;
}

#define JW_LIT(w, lit) jw_raw((w), (lit), sizeof(lit) - 1)

static void jw_i64(struct jw *w, int64_t v)
{
    char d[24];
    size_t i = sizeof(d);
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

    do {
        d[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        d[--i] = '-';
    jw_raw(w, d + i, sizeof(d) - i);
}

/* jw_esc - the escape of the special byte at *p (str_special, not NUL) written at o; returns
 * the end of the output (at most 6 bytes per input byte) and steps *p over what it used. */
static char *jw_esc(char *o, const unsigned char **p)
{
    static const char hex[] = "0123456789abcdef";
    unsigned c = **p;
    size_t n;

    if (c >= 0x80) {
        n = utf8_seq(*p, 4);
        if (n) {
            memcpy(o, *p, n);
            *p += n;
            return o + n;
        }
        memcpy(o, "\\ufffd", 6);
        (*p)++;
        return o + 6;
    }
    (*p)++;
    *o++ = '\\';
    switch (c) {
    case '"':
    case '\\':
        *o++ = (char)c;
        return o;
    case '\n':
        *o++ = 'n';
        return o;
    case '\t':
        *o++ = 't';
        return o;
    case '\r':
        *o++ = 'r';
        return o;
    default:
        memcpy(o, "u00", 3);
        o[3] = hex[c >> 4];
        o[4] = hex[c & 15];
        return o + 5;
    }
}

/* jw_str - s as a JSON string; bytes that are not UTF-8 become U+FFFD. Strings that fit the
 * stack buffer even fully escaped are written straight into it. */
static void jw_str_long(struct jw *w, const unsigned char *p);

static void jw_str(struct jw *w, const char *str)
{
    const unsigned char *p = (const unsigned char *)(str ? str : ""), *end;
    size_t len = strlen((const char *)p);
    char *o, *o0;

    if (len > (sizeof(w->tmp) - 2) / 6) {
        jw_str_long(w, p);
        return;
    }
    if (len * 6 + 2 > sizeof(w->tmp) - w->n)
        jw_flush(w);
    end = p + len;
    o = o0 = w->tmp + w->n;
    *o++ = '"';
    for (;;) {
        while (end - p >= 8 && !special8(p)) {
            memcpy(o, p, 8);
            o += 8;
            p += 8;
        }
        while (!str_special[*p])
            *o++ = (char)*p++;
        if (!*p)
            break;
        o = jw_esc(o, &p);
    }
    *o++ = '"';
    w->n += (size_t)(o - o0);
}

static void jw_str_long(struct jw *w, const unsigned char *p)
{
    const unsigned char *run = p;

    JW_LIT(w, "\"");
    for (;;) {
        char esc[6];

        while (!str_special[*p])
            p++;
        jw_raw(w, run, (size_t)(p - run));
        if (!*p)
            break;
        jw_raw(w, esc, (size_t)(jw_esc(esc, &p) - esc));
        run = p;
    }
    JW_LIT(w, "\"");
}

/* jw_end - flush; on error put the buffer back as it was and name the document. */
static enum common_rc jw_end(struct jw *w, const char *doc)
{
    jw_flush(w);
    if (w->rc) {
        w->b->len = w->start;
        if (w->b->data)
            w->b->data[w->start] = '\0';
        common_error_prefix(w->err, "%s", doc);
    }
    return w->rc;
}

static enum common_rc jw_fail(struct jw *w, enum common_rc rc, const char *doc, const char *fmt,
                              ...) __attribute__((format(printf, 4, 5)));
static enum common_rc jw_fail(struct jw *w, enum common_rc rc, const char *doc, const char *fmt,
                              ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    w->n = 0;
    w->rc = common_error_set(w->err, rc, "%s", msg);
    return jw_end(w, doc);
}

/* ================================================================ encoders == */

/* jw_failed_map - {"node": "reason", ...} of the nodes with verdict want. */
static void jw_failed_map(struct jw *w, const struct extender_args *args, const uint8_t *verdict,
                          const char *const *reason, uint8_t want)
{
    int first = 1;
    uint32_t i;

    JW_LIT(w, "{");
    for (i = 0; i < args->n_nodes; i++) {
        if (verdict[i] != want)
            continue;
        if (!first)
            JW_LIT(w, ",");
        first = 0;
        jw_str(w, args->node_names[i]);
        JW_LIT(w, ":");
        jw_str(w, reason ? reason[i] : NULL);
    }
    JW_LIT(w, "}");
}

enum common_rc extender_encode_filter_result(struct common_buf *b, const struct extender_args *args,
                                             const uint8_t *verdict, const char *const *reason,
                                             struct common_error *err)
{
    static const char doc[] = "ExtenderFilterResult";
    struct jw w;
    int first = 1;
    uint32_t i;

    jw_init(&w, b, err);
    if (!args || (args->n_nodes && !verdict))
        return jw_fail(&w, COMMON_EINVAL, doc, "no request or no verdicts");
    for (i = 0; i < args->n_nodes; i++)
        if (verdict[i] > EXTENDER_DROP)
            return jw_fail(&w, COMMON_EINVAL, doc, "node %s: verdict %u out of range",
                           args->node_names[i], verdict[i]);
    if (args->cache_capable) {
        JW_LIT(&w, "{\"Nodes\":null,\"NodeNames\":[");
        for (i = 0; i < args->n_nodes; i++) {
            if (verdict[i] != EXTENDER_PASS)
                continue;
            if (!first)
                JW_LIT(&w, ",");
            first = 0;
            jw_str(&w, args->node_names[i]);
        }
        JW_LIT(&w, "]");
    } else {
        JW_LIT(&w, "{\"Nodes\":{\"metadata\":{},\"items\":[");
        for (i = 0; i < args->n_nodes; i++) {
            if (verdict[i] != EXTENDER_PASS)
                continue;
            if (!first)
                JW_LIT(&w, ",");
            first = 0;
            jw_raw(&w, args->nodes_json[i].data, args->nodes_json[i].len);
        }
        JW_LIT(&w, "]},\"NodeNames\":null");
    }
    JW_LIT(&w, ",\"FailedNodes\":");
    jw_failed_map(&w, args, verdict, reason, EXTENDER_FAIL);
    JW_LIT(&w, ",\"FailedAndUnresolvableNodes\":");
    jw_failed_map(&w, args, verdict, reason, EXTENDER_FAIL_UNRESOLVABLE);
    JW_LIT(&w, ",\"Error\":\"\"}");
    return jw_end(&w, doc);
}

enum common_rc extender_encode_filter_error(struct common_buf *b, const char *msg,
                                            struct common_error *err)
{
    struct jw w;

    jw_init(&w, b, err);
    JW_LIT(&w, "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
               "\"FailedAndUnresolvableNodes\":{},\"Error\":");
    jw_str(&w, msg && msg[0] ? msg : "internal error");
    JW_LIT(&w, "}");
    return jw_end(&w, "ExtenderFilterResult");
}

enum common_rc extender_encode_priorities(struct common_buf *b, const struct extender_args *args,
                                          const int64_t *score, struct common_error *err)
{
    static const char doc[] = "HostPriorityList";
    struct jw w;
    int first = 1;
    uint32_t i;

    jw_init(&w, b, err);
    if (!args || (args->n_nodes && !score))
        return jw_fail(&w, COMMON_EINVAL, doc, "no request or no scores");
    JW_LIT(&w, "[");
    for (i = 0; i < args->n_nodes; i++) {
        if (score[i] == EXTENDER_SCORE_OMIT)
            continue;
        if (score[i] < EXTENDER_MIN_SCORE || score[i] > EXTENDER_MAX_SCORE)
            return jw_fail(&w, COMMON_EINVAL, doc, "node %s: score %lld outside %d..%d",
                           args->node_names[i], (long long)score[i], EXTENDER_MIN_SCORE,
                           EXTENDER_MAX_SCORE);
        if (!first)
            JW_LIT(&w, ",");
        first = 0;
        JW_LIT(&w, "{\"Host\":");
        jw_str(&w, args->node_names[i]);
        JW_LIT(&w, ",\"Score\":");
        jw_i64(&w, score[i]);
        JW_LIT(&w, "}");
    }
    JW_LIT(&w, "]");
    return jw_end(&w, doc);
}

enum common_rc extender_encode_bind_result(struct common_buf *b, const char *msg,
                                           struct common_error *err)
{
    struct jw w;

    jw_init(&w, b, err);
    JW_LIT(&w, "{\"Error\":");
    jw_str(&w, msg);
    JW_LIT(&w, "}");
    return jw_end(&w, "ExtenderBindingResult");
}

enum common_rc extender_encode_preempt_result(struct common_buf *b,
                                              const struct extender_preempt_args *args,
                                              const struct extender_preempt_choice *choice,
                                              struct common_error *err)
{
    static const char doc[] = "ExtenderPreemptionResult";
    const uint8_t *keep_node = choice ? choice->keep_node : NULL;
    const uint8_t *const *keep_victim = choice ? choice->keep_victim : NULL;
    const int64_t *pdb = choice ? choice->pdb : NULL;
    struct jw w;
    int first = 1;
    uint32_t i, j;

    jw_init(&w, b, err);
    if (!args)
        return jw_fail(&w, COMMON_EINVAL, doc, "no request");
    JW_LIT(&w, "{\"NodeNameToMetaVictims\":{");
    for (i = 0; i < args->n_nodes; i++) {
        const struct extender_victims *vi = &args->nodes[i];
        const uint8_t *kv = keep_victim ? keep_victim[i] : NULL;
        int64_t n_pdb = pdb ? pdb[i] : vi->num_pdb_violations;
        int first_pod = 1;

        if (keep_node && !keep_node[i])
            continue;
        if (n_pdb < 0)
            return jw_fail(&w, COMMON_EINVAL, doc, "node %s: NumPDBViolations %lld below 0",
                           vi->node, (long long)n_pdb);
        if (!first)
            JW_LIT(&w, ",");
        first = 0;
        jw_str(&w, vi->node);
        JW_LIT(&w, ":{\"Pods\":[");
        for (j = 0; j < vi->n_pods; j++) {
            if (kv && !kv[j])
                continue;
            if (!first_pod)
                JW_LIT(&w, ",");
            first_pod = 0;
            JW_LIT(&w, "{\"UID\":");
            jw_str(&w, vi->uids[j]);
            JW_LIT(&w, "}");
        }
        JW_LIT(&w, "],\"NumPDBViolations\":");
        jw_i64(&w, n_pdb);
        JW_LIT(&w, "}");
    }
    JW_LIT(&w, "}}");
    return jw_end(&w, doc);
}
