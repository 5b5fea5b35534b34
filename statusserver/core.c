/*
 * statusserver/core.c - the status server's decisions (statusserver/core.h). Pure: no I/O, no
 * clock.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "statusserver/core.h"

#define STATUS_PREFIX "/apis/trainer.kubeflow.org/v1alpha1/namespaces/"
#define SA_PREFIX "system:serviceaccount:"
#define TRAINJOB_KIND "TrainJob.trainer.kubeflow.org"
#define MAX_METRICS 256
#define MAX_METRIC_CHARS 64

static void answer(struct ss_answer *ans, int code, const char *reason, const char *msg)
{
    ans->code = code;
    ans->reason = reason;
    snprintf(ans->message, sizeof(ans->message), "%s", msg ? msg : "");
}

int ss_body_too_large(const char *content_length, struct ss_answer *ans)
{
    char *end;
    unsigned long long n;

    if (!content_length)
        return 0;
    while (*content_length == ' ' || *content_length == '\t')
        content_length++;
    if (!isdigit((unsigned char)*content_length))
        return 0; /* libmicrohttpd refuses a malformed length itself */
    n = strtoull(content_length, &end, 10);
    if (n <= SS_MAX_BODY)
        return 0;
    answer(ans, 413, "RequestEntityTooLarge", "Payload too large");
    return 1;
}

/* one path segment at *p, up to the next '/', into out (SS_NAME_MAX + 1 bytes); advances *p.
 * -1 when empty or too long */
static int segment(const char **p, char *out)
{
    const char *s = *p, *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 0 || n > SS_NAME_MAX)
        return -1;
    memcpy(out, s, n);
    out[n] = 0;
    *p = s + n;
    return 0;
}

int ss_route(const char *method, const char *path, char *ns, char *name, struct ss_answer *ans)
{
    const char *p = path;

    if (method && strcmp(method, "POST") == 0 && path &&
        strncmp(p, STATUS_PREFIX, strlen(STATUS_PREFIX)) == 0) {
        p += strlen(STATUS_PREFIX);
        if (segment(&p, ns) == 0 && strncmp(p, "/trainjobs/", 11) == 0) {
            p += 11;
            if (segment(&p, name) == 0 && strcmp(p, "/status") == 0)
                return 1;
        }
    }
    answer(ans, 404, "NotFound", "Not found");
    return 0;
}

int ss_audience(const char *ns, const char *name, char *buf, size_t size)
{
    int n = snprintf(buf, size, "trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s/status",
                     ns, name);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

const char *ss_bearer_token(const char *header, char *buf, size_t size)
{
    const char *p = header, *w[3];
    size_t len[3], n = 0;

    if (!header)
        return NULL;
    for (;;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        if (n == 3)
            return NULL;
        w[n] = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        len[n] = (size_t)(p - w[n]);
        n++;
    }
    if (n != 2 || len[0] != 6 || strncasecmp(w[0], "Bearer", 6) != 0 || len[1] >= size)
        return NULL;
    memcpy(buf, w[1], len[1]);
    buf[len[1]] = 0;
    return buf;
}

json_t *ss_token_review_body(const char *token, const char *ns, const char *name)
{
    char aud[600];
    if (ss_audience(ns, name, aud, sizeof(aud)))
        return NULL;
    return json_pack("{s:s, s:s, s:{s:s, s:[s]}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                     "TokenReview", "spec", "token", token, "audiences", aud);
}

int ss_token_review_decide(const json_t *review, const char *ns, const char *name, char *why,
                           size_t why_size)
{
    const json_t *st = json_object_get(review, "status");
    const json_t *auds = json_object_get(st, "audiences"), *a;
    const char *user = json_string_value(json_object_get(json_object_get(st, "user"), "username"));
    const char *e = json_string_value(json_object_get(st, "error"));
    char aud[600];
    size_t i, pl = strlen(SA_PREFIX), nl = strlen(ns);
    int has_aud = 0;

    if (!json_is_true(json_object_get(st, "authenticated"))) {
        snprintf(why, why_size, "token not authenticated%s%s", e ? ": " : "", e ? e : "");
        return 0;
    }
    if (ss_audience(ns, name, aud, sizeof(aud)) == 0)
        json_array_foreach(auds, i, a) if (json_is_string(a) &&
                                           strcmp(json_string_value(a), aud) == 0) has_aud = 1;
    if (!has_aud) {
        snprintf(why, why_size, "token lacks the audience %s", aud);
        return 0;
    }
    if (!user || strncmp(user, SA_PREFIX, pl) != 0) {
        snprintf(why, why_size, "token of \"%s\", not of a ServiceAccount", user ? user : "");
        return 0;
    }
    if (strncmp(user + pl, ns, nl) != 0 || user[pl + nl] != ':' || !user[pl + nl + 1] ||
        strchr(user + pl + nl + 1, ':')) {
        snprintf(why, why_size, "token of \"%s\", not of a ServiceAccount in namespace %s", user,
                 ns);
        return 0;
    }
    return 1;
}

/* ---- decoding, as Go's encoding/json reads UpdateTrainJobStatusRequest ---- */

/* the value of the last key of obj equal to field in any case (Go matches field names
 * case-insensitively and a later key overwrites an earlier one); NULL when none */
static json_t *go_field(const json_t *obj, const char *field)
{
    const char *k;
    json_t *v, *found = NULL;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (strcasecmp(k, field) == 0)
            found = v;
    }
    return found;
}

/* a Go int32 field: null/absent leaves it unset (0 returned, *set 0); an integer literal in
 * range sets it; anything else is a decoding error (-1) */
static int go_int32(const json_t *v, int64_t *out, int *set)
{
    *set = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return -1; /* a real ("1.0", "1e2") does not decode into an int32 */
    *out = json_integer_value(v);
    if (*out < INT32_MIN || *out > INT32_MAX)
        return -1;
    *set = 1;
    return 0;
}

/* a Go string field: null/absent gives "" */
static int go_string(const json_t *v, const char **out)
{
    *out = "";
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return -1;
    *out = json_string_value(v);
    return 0;
}

static int two(const char *s)
{
    if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
        return -1;
    return (s[0] - '0') * 10 + (s[1] - '0');
}

static int64_t days_from_civil(int64_t y, int m, int d)
{
    int64_t era;
    unsigned yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (unsigned)((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1);
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    int64_t era;
    unsigned doe, yoe, doy, mp;
    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (unsigned)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    *y = (int64_t)yoe + era * 400;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y += *m <= 2;
}

/*
 * RFC 3339 as Go's time.Parse(time.RFC3339) reads it: YYYY-MM-DDTHH:MM:SS, an optional fraction
 * (".digits"), then "Z" or +hh:mm / -hh:mm; the date must exist. Written back as metav1.Time
 * marshals it: UTC, whole seconds, "YYYY-MM-DDTHH:MM:SSZ" (out: 21 bytes at least). -1 when
 * it does not parse.
 */
static int rfc3339_utc(const char *s, char *out, size_t size)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int yh, yl, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0, dim;
    int64_t y, t, days;
    const char *p;

    if (strlen(s) < 20)
        return -1;
    yh = two(s);
    yl = two(s + 2);
    mo = two(s + 5);
    d = two(s + 8);
    h = two(s + 11);
    mi = two(s + 14);
    sec = two(s + 17);
    if (yh < 0 || yl < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        sec < 0 || sec > 59 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':')
        return -1;
    y = yh * 100 + yl;
    dim = mdays[mo - 1] + (mo == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
    if (d > dim)
        return -1;
    p = s + 19;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '-' ? -1 : 1;
        oh = two(p + 1);
        om = p[1] && p[2] ? two(p + 4) : -1;
        if (oh < 0 || oh > 23 || om < 0 || om > 59 || p[3] != ':')
            return -1;
        p += 6;
    } else {
        return -1;
    }
    if (*p)
        return -1;
    days = days_from_civil(y, mo, d);
    t = days * 86400 + h * 3600 + mi * 60 + sec - sign * (oh * 3600 + om * 60);
    days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
    t -= days * 86400;
    civil_from_days(days, &y, &mo, &d);
    if (y < 0 || y > 9999)
        return -1; /* Go cannot write such a time back */
    snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, mo, d, (int)(t / 3600),
             (int)(t / 60 % 60), (int)(t % 60));
    return 0;
}

/* characters (code points) of a UTF-8 string, as the API server counts maxLength */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            n++;
    return n;
}

/* the API server's field errors, joined as apimachinery's aggregate prints them */
struct field_errors {
    char text[COMMON_ERROR_MSG_MAX];
    size_t len;
    int n;
};

static void field_error(struct field_errors *fe, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void field_error(struct field_errors *fe, const char *fmt, ...)
{
    va_list ap;
    int w;
    if (fe->len >= sizeof(fe->text) - 1)
        return;
    if (fe->n++) {
        w = snprintf(fe->text + fe->len, sizeof(fe->text) - fe->len, ", ");
        fe->len += w > 0 ? (size_t)w : 0;
        if (fe->len >= sizeof(fe->text))
            fe->len = sizeof(fe->text) - 1;
    }
    va_start(ap, fmt);
    w = vsnprintf(fe->text + fe->len, sizeof(fe->text) - fe->len, fmt, ap);
    va_end(ap);
    fe->len += w > 0 ? (size_t)w : 0;
    if (fe->len >= sizeof(fe->text))
        fe->len = sizeof(fe->text) - 1;
}

static void check_metric_string(struct field_errors *fe, size_t i, const char *field, const char *v)
{
    size_t n = utf8_chars(v);
    if (n < 1)
        field_error(fe,
                    "status.trainerStatus.metrics[%zu].%s: Invalid value: \"\": "
                    "trainerStatus.metrics[%zu].%s in body should be at least 1 chars long",
                    i, field, i, field);
    else if (n > MAX_METRIC_CHARS)
        field_error(fe,
                    "status.trainerStatus.metrics[%zu].%s: Too long: may not be more than %d bytes",
                    i, field, MAX_METRIC_CHARS);
}

/* decode trainerStatus (an object) into the echo form ts; -1 decoding error, 0 ok; broken API
 * rules go to fe */
static int decode_trainer_status(const json_t *in, json_t *ts, struct field_errors *fe)
{
    int64_t pp = 0, ers = 0;
    int pp_set, ers_set;
    const json_t *metrics = go_field(in, "metrics"), *lut = go_field(in, "lastUpdatedTime");
    json_t *m, *out_metrics = NULL;
    size_t i;
    char when[32];

    if (go_int32(go_field(in, "progressPercentage"), &pp, &pp_set) ||
        go_int32(go_field(in, "estimatedRemainingSeconds"), &ers, &ers_set))
        return -1;
    if (metrics && !json_is_null(metrics) && !json_is_array(metrics))
        return -1;
    if (lut && !json_is_null(lut) &&
        (!json_is_string(lut) || rfc3339_utc(json_string_value(lut), when, sizeof(when))))
        return -1;
    if (pp_set && json_object_set_new(ts, "progressPercentage", json_integer(pp)))
        return -2;
    if (ers_set && json_object_set_new(ts, "estimatedRemainingSeconds", json_integer(ers)))
        return -2;
    if (json_array_size(metrics)) {
        out_metrics = json_array();
        if (!out_metrics || json_object_set_new(ts, "metrics", out_metrics))
            return -2;
    }
    json_array_foreach(metrics, i, m)
    {
        const char *name, *value;
        json_t *om;
        if (!json_is_null(m) && !json_is_object(m))
            return -1;
        if (go_string(go_field(m, "name"), &name) || go_string(go_field(m, "value"), &value))
            return -1;
        om = json_object();
        if (!om || json_array_append_new(out_metrics, om) ||
            (*name && json_object_set_new(om, "name", json_string(name))) ||
            (*value && json_object_set_new(om, "value", json_string(value))))
            return -2;
    }
    if (lut && !json_is_null(lut) && json_object_set_new(ts, "lastUpdatedTime", json_string(when)))
        return -2;

    /* the CRD's rules, in the order the API server reports them */
    if (pp_set && pp < 0)
        field_error(fe,
                    "status.trainerStatus.progressPercentage: Invalid value: %lld: "
                    "trainerStatus.progressPercentage in body should be greater than or "
                    "equal to 0",
                    (long long)pp);
    if (pp_set && pp > 100)
        field_error(fe,
                    "status.trainerStatus.progressPercentage: Invalid value: %lld: "
                    "trainerStatus.progressPercentage in body should be less than or "
                    "equal to 100",
                    (long long)pp);
    if (ers_set && ers < 0)
        field_error(fe,
                    "status.trainerStatus.estimatedRemainingSeconds: Invalid value: %lld: "
                    "trainerStatus.estimatedRemainingSeconds in body should be greater "
                    "than or equal to 0",
                    (long long)ers);
    if (json_array_size(out_metrics) > MAX_METRICS)
        field_error(fe, "status.trainerStatus.metrics: Too many: %zu: must have at most %d items",
                    json_array_size(out_metrics), MAX_METRICS);
    else
        json_array_foreach(out_metrics, i, m)
        {
            const char *n = json_string_value(json_object_get(m, "name"));
            const char *v = json_string_value(json_object_get(m, "value"));
            check_metric_string(fe, i, "name", n ? n : "");
            check_metric_string(fe, i, "value", v ? v : "");
        }
    if (!json_object_get(ts, "lastUpdatedTime"))
        field_error(fe, "status.trainerStatus: Invalid value: lastUpdatedTime is "
                        "required when trainerStatus is present");
    return 0;
}

enum ss_decoded ss_decode(const char *body, size_t len, const char *ns, const char *name,
                          json_t **echo, json_t **apply, struct ss_answer *ans)
{
    json_error_t je;
    json_t *root, *tsin, *ts = NULL, *out = NULL;
    struct field_errors fe;
    int rc;

    *echo = *apply = NULL;
    memset(&fe, 0, sizeof(fe));
    if (len > SS_MAX_BODY)
        len = SS_MAX_BODY;
    /* the first value only: Go's json.Decoder stops there */
    root = json_loadb(body, len, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &je);
    if (!root || (!json_is_object(root) && !json_is_null(root)))
        goto invalid_payload;
    tsin = json_is_object(root) ? go_field(root, "trainerStatus") : NULL;
    if (tsin && !json_is_null(tsin) && !json_is_object(tsin))
        goto invalid_payload;
    out = json_object();
    if (!out)
        goto nomem;
    if (!tsin || json_is_null(tsin)) {
        json_decref(root);
        *echo = out;
        return SS_DECODED_NOOP;
    }
    ts = json_object();
    if (!ts || json_object_set(out, "trainerStatus", ts))
        goto nomem;
    rc = decode_trainer_status(tsin, ts, &fe);
    if (rc == -1)
        goto invalid_payload;
    if (rc)
        goto nomem;
    if (fe.n) {
        snprintf(ans->message, sizeof(ans->message), "%s \"%s\" is invalid: %s%s%s", TRAINJOB_KIND,
                 name, fe.n > 1 ? "[" : "", fe.text, fe.n > 1 ? "]" : "");
        ans->code = 422;
        ans->reason = "Invalid";
        goto bad;
    }
    *apply = ss_apply_body(ns, name, ts);
    if (!*apply)
        goto nomem;
    json_decref(ts);
    json_decref(root);
    *echo = out;
    return SS_DECODED_APPLY;
invalid_payload:
    answer(ans, 422, "Invalid", "Invalid payload");
    goto bad;
nomem:
    answer(ans, 500, "InternalError", "Internal error");
bad:
    json_decref(ts);
    json_decref(out);
    json_decref(root);
    return SS_DECODED_BAD;
}

json_t *ss_apply_body(const char *ns, const char *name, const json_t *trainer_status)
{
    json_t *ts = json_deep_copy(trainer_status);
    if (!ts)
        return NULL;
    if (json_is_array(json_object_get(ts, "metrics")) &&
        json_array_size(json_object_get(ts, "metrics")) == 0)
        json_object_del(ts, "metrics");
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:o}}", "apiVersion",
                     "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name", name,
                     "namespace", ns, "status", "trainerStatus", ts);
}

void ss_api_answer(long http_status, const char *response_body, struct ss_answer *ans)
{
    json_t *st;
    const char *msg;

    if (http_status >= 200 && http_status < 300) {
        answer(ans, 200, NULL, "");
        return;
    }
    if (http_status == 404) {
        answer(ans, 404, "NotFound", "Train job not found");
        return;
    }
    if (http_status == 400 || http_status == 422) {
        st = response_body ? json_loads(response_body, 0, NULL) : NULL;
        msg = json_string_value(json_object_get(st, "message"));
        if (msg && *msg) {
            answer(ans, 422, "Invalid", msg);
        } else {
            answer(ans, 422, "Invalid", "");
            snprintf(ans->message, sizeof(ans->message), "Validation failed: HTTP %ld",
                     http_status);
        }
        json_decref(st);
        return;
    }
    answer(ans, 500, "InternalError", "Internal error");
}

/* v as compact JSON in its insertion order, and a newline, as Go's json.Encoder writes it
 * (common_malloc'd; NULL on no memory) */
static char *json_line(const json_t *v)
{
    char *s = v ? json_dumps(v, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL, *out = NULL;
    size_t n;

    if (!s)
        return NULL;
    n = strlen(s);
    out = common_malloc(n + 2);
    if (out) {
        memcpy(out, s, n);
        out[n] = '\n';
        out[n + 1] = 0;
    }
    common_free(s);
    return out;
}

char *ss_status_json(const struct ss_answer *ans)
{
    json_t *st =
        json_pack("{s:{}, s:s, s:s, s:s, s:i}", "metadata", "status", "Failure", "message",
                  ans->message, "reason", ans->reason ? ans->reason : "", "code", ans->code);
    char *out = json_line(st);
    json_decref(st);
    return out;
}

/* ---- the flow ---- */

static enum ss_next internal(struct ss_flow *f)
{
    answer(&f->ans, 500, "InternalError", "Internal error");
    return SS_NEXT_ANSWER;
}

enum ss_next ss_flow_start(struct ss_flow *f, const struct ss_request *r)
{
    size_t alen;
    char *buf;

    if (ss_body_too_large(r->content_length, &f->ans) ||
        !ss_route(r->method, r->path, f->ns, f->name, &f->ans))
        return SS_NEXT_ANSWER;
    alen = r->authorization ? strlen(r->authorization) + 1 : 1;
    buf = common_malloc(alen);
    if (!buf)
        return internal(f);
    f->token = buf;
    if (!ss_bearer_token(r->authorization, buf, alen)) {
        snprintf(f->why, sizeof(f->why), "no Bearer token in the Authorization header");
        answer(&f->ans, 403, "Forbidden", "Forbidden");
        return SS_NEXT_ANSWER;
    }
    f->body_len = r->body_len > SS_MAX_BODY ? SS_MAX_BODY : r->body_len;
    f->body = common_malloc(f->body_len + 1);
    if (!f->body)
        return internal(f);
    if (f->body_len)
        memcpy(f->body, r->body, f->body_len);
    f->body[f->body_len] = 0;
    f->review = ss_token_review_body(f->token, f->ns, f->name);
    if (!f->review)
        return internal(f);
    return SS_NEXT_REVIEW;
}

enum ss_next ss_flow_reviewed(struct ss_flow *f, long http_status, const json_t *review)
{
    if (!review || http_status < 200 || http_status > 299) {
        snprintf(f->why, sizeof(f->why), "TokenReview failed (HTTP %ld)", http_status);
        return internal(f);
    }
    if (!ss_token_review_decide(review, f->ns, f->name, f->why, sizeof(f->why))) {
        answer(&f->ans, 403, "Forbidden", "Forbidden");
        return SS_NEXT_ANSWER;
    }
    return ss_flow_authorized(f);
}

enum ss_next ss_flow_authorized(struct ss_flow *f)
{
    enum ss_decoded d;

    d = ss_decode(f->body, f->body_len, f->ns, f->name, &f->echo, &f->apply, &f->ans);
    if (d == SS_DECODED_APPLY)
        return SS_NEXT_APPLY;
    if (d == SS_DECODED_NOOP)
        answer(&f->ans, 200, NULL, "");
    return SS_NEXT_ANSWER;
}

enum ss_next ss_flow_applied(struct ss_flow *f, long http_status, const char *response_body)
{
    ss_api_answer(http_status, response_body, &f->ans);
    return SS_NEXT_ANSWER;
}

char *ss_flow_response(const struct ss_flow *f)
{
    if (f->ans.code != 200 || !f->echo)
        return ss_status_json(&f->ans);
    return json_line(f->echo);
}

void ss_flow_free(struct ss_flow *f)
{
    if (!f)
        return;
    common_free(f->token);
    common_free(f->body);
    json_decref(f->review);
    json_decref(f->apply);
    json_decref(f->echo);
    f->token = f->body = NULL;
    f->review = f->apply = f->echo = NULL;
}
