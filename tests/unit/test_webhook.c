/*
 * tests/unit/test_webhook.c - the admission webhook: fixture cases for every rule, the wire
 * codec, bad input, allocation failures, and the routes over TLS on a real server.
 *
 * Fixture cases: tests/fixtures/webhook/<case>/, one folder per case, the name a sentence.
 *   case.yaml          path: /validate-trainjob      (the endpoint; Trainer's paths work too)
 *                      status: 200                   (expected HTTP status, default 200)
 *                      contentType: application/json (default; noContentType: true sends none)
 *                      now: "2026-08-01T10:00:00Z"   (the clock; default this value)
 *                      schedulerName / gangResource  (mutate-pod options)
 *                      maxScheduleTimeoutMs: 628000  (the extender's gang timeout cap: warnings)
 *                      extenderWired: false          (mutate-pod option; default true here)
 *                      gangGate: false               (mutate-pod option; default true here)
 *                      defaultBackend: native        (serve's backends.default)
 *                      lookupErrors: [{kind: JobSet, code: unsupported|timeout|api, message}]
 *   request.json       the body as the API server sends it (an AdmissionReview, or bad bytes)
 *   cluster.yaml       objects the runtime lookup finds (runtimes, JobSets), several documents
 *   response.json      status 200: the expected AdmissionReview, compared as JSON
 *   expected-patch.json  the decoded response.patch, when the answer carries one
 *   response.txt       any other status: the exact text body
 * Every case also checks that response.uid is request.uid and that the review is
 * admission.k8s.io/v1 AdmissionReview. WEBHOOK_FIXTURES_WRITE=1 writes a missing
 * response.json, expected-patch.json or response.txt from what the code answers (then read it!).
 */
#include <check.h>
#include <curl/curl.h>
#include <dirent.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/coretypes.h"
#include "common/httpd.h"
#include "common/metrics.h"
#include "common/yaml.h"
#include "testutil.h"
#include "webhook/admission.h"
#include "webhook/handlers.h"
#include "webhook/server.h"

#define DEFAULT_NOW "2026-08-01T10:00:00Z"

/* ---- helpers ---- */

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *data;
    long n;

    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(fread(data, 1, (size_t)n, f), (size_t)n);
    data[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return data;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int64_t parse_time(const char *s)
{
    struct tm tm;

    memset(&tm, 0, sizeof(tm));
    ck_assert_int_eq(sscanf(s, "%d-%d-%dT%d:%d:%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                            &tm.tm_hour, &tm.tm_min, &tm.tm_sec),
                     6);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm);
}

/* base64 decode (standard alphabet, padded) into a malloc'd NUL-terminated string */
static char *unbase64(const char *s, size_t *outlen)
{
    size_t n = strlen(s);
    unsigned char *out = malloc(n / 4 * 3 + 4);
    int len;

    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(n % 4, 0);
    len = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
    ck_assert_int_ge(len, 0);
    if (n >= 1 && s[n - 1] == '=')
        len--;
    if (n >= 2 && s[n - 2] == '=')
        len--;
    out[len] = '\0';
    *outlen = (size_t)len;
    return (char *)out;
}

static json_t *load_json_file(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &e);

    ck_assert_msg(j != NULL, "%s:%d: %s", path, e.line, e.text);
    return j;
}

static char *pretty(const json_t *j)
{
    return json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* ---- a lookup over fixture objects ---- */

struct lookup_error {
    const char *kind;
    enum common_rc code;
    const char *message;
};

struct cluster {
    json_t *objects; /* array */
    struct lookup_error errors[4];
    size_t nerrors;
    int calls;
};

static enum common_rc cluster_lookup(void *ctx, const char *kind, const char *ns, const char *name,
                                     json_t **out, struct common_error *err)
{
    struct cluster *c = ctx;
    size_t i;
    json_t *o;

    c->calls++;
    *out = NULL;
    for (i = 0; i < c->nerrors; i++)
        if (strcmp(c->errors[i].kind, kind) == 0)
            return common_error_set(err, c->errors[i].code, "%s", c->errors[i].message);
    json_array_foreach(c->objects, i, o)
    {
        const json_t *meta = json_object_get(o, "metadata");
        const char *k = json_string_value(json_object_get(o, "kind"));
        const char *n = json_string_value(json_object_get(meta, "name"));
        const char *onns = json_string_value(json_object_get(meta, "namespace"));
        if (k && n && strcmp(k, kind) == 0 && strcmp(n, name) == 0 &&
            (!ns || (onns && strcmp(onns, ns) == 0))) {
            *out = json_incref(o);
            return COMMON_OK;
        }
    }
    return common_error_set(err, COMMON_ENOTFOUND, "%s %s not found", kind, name);
}

static enum common_rc code_of(const char *s)
{
    if (strcmp(s, "unsupported") == 0)
        return COMMON_EUNSUPPORTED;
    if (strcmp(s, "timeout") == 0)
        return COMMON_ETIMEOUT;
    if (strcmp(s, "api") == 0)
        return COMMON_EAPI;
    ck_abort_msg("unknown lookup error code %s", s);
    return COMMON_EINVAL;
}

/* ---- fixture cases ---- */

#define MAX_CASES 256
static char *cases[MAX_CASES];
static int ncases;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_cases(void)
{
    DIR *d = opendir(testutil_path("webhook"));
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) && ncases < MAX_CASES)
        if (e->d_name[0] != '.')
            cases[ncases++] = strdup(e->d_name);
    closedir(d);
    qsort(cases, (size_t)ncases, sizeof(cases[0]), cmp_str);
}

static json_t *load_yaml_docs(const char *path, struct common_yaml_docs *docs)
{
    struct common_error err = {0};
    json_t *arr = json_array();

    ck_assert_msg(common_yaml_load_file(path, NULL, docs, &err) == COMMON_OK, "%s", err.msg);
    for (size_t i = 0; i < docs->n; i++)
        json_array_append(arr, docs->docs[i]);
    return arr;
}

static void fixture_path(char *buf, size_t size, const char *c, const char *file)
{
    snprintf(buf, size, "%s/%s", testutil_path("webhook"), c);
    snprintf(buf + strlen(buf), size - strlen(buf), "/%s", file);
}

START_TEST(test_fixture)
{
    const char *name = cases[_i];
    char path[1024];
    struct common_yaml_docs cdocs = {0}, kdocs = {0};
    json_t *specs, *spec, *cl = NULL;
    struct cluster cluster = {0};
    struct webhook_options o = {0};
    const struct webhook_endpoint *ep;
    struct webhook_reply reply;
    struct common_buf out;
    struct common_arena *a;
    const char *ep_path, *ct = "application/json", *now = DEFAULT_NOW;
    char *body;
    size_t len;
    long want_status = 200;
    int writing = getenv("WEBHOOK_FIXTURES_WRITE") != NULL;

    fixture_path(path, sizeof(path), name, "case.yaml");
    specs = load_yaml_docs(path, &cdocs);
    ck_assert_uint_eq(json_array_size(specs), 1);
    spec = json_array_get(specs, 0);
    ep_path = json_string_value(json_object_get(spec, "path"));
    ck_assert_msg(ep_path != NULL, "%s: case.yaml needs path", name);
    ep = webhook_endpoint_by_path(ep_path);
    ck_assert_msg(ep != NULL, "%s: no endpoint %s", name, ep_path);
    if (json_is_integer(json_object_get(spec, "status")))
        want_status = (long)json_integer_value(json_object_get(spec, "status"));
    if (json_is_string(json_object_get(spec, "contentType")))
        ct = json_string_value(json_object_get(spec, "contentType"));
    if (json_is_true(json_object_get(spec, "noContentType")))
        ct = NULL;
    if (json_is_string(json_object_get(spec, "now")))
        now = json_string_value(json_object_get(spec, "now"));
    o.scheduler_name = json_string_value(json_object_get(spec, "schedulerName"));
    o.gang_resource = json_string_value(json_object_get(spec, "gangResource"));
    o.max_schedule_timeout_ms = json_integer_value(json_object_get(spec, "maxScheduleTimeoutMs"));
    o.extender_wired = !json_is_false(json_object_get(spec, "extenderWired"));
    o.gang_gate = !json_is_false(json_object_get(spec, "gangGate"));
    o.default_backend = json_string_value(json_object_get(spec, "defaultBackend"));
    {
        size_t i;
        json_t *le;
        json_array_foreach(json_object_get(spec, "lookupErrors"), i, le)
        {
            ck_assert_uint_lt(cluster.nerrors, 4);
            cluster.errors[cluster.nerrors].kind = json_string_value(json_object_get(le, "kind"));
            cluster.errors[cluster.nerrors].code =
                code_of(json_string_value(json_object_get(le, "code")));
            cluster.errors[cluster.nerrors].message =
                json_string_value(json_object_get(le, "message"));
            cluster.nerrors++;
        }
    }
    fixture_path(path, sizeof(path), name, "cluster.yaml");
    cl = exists(path) ? load_yaml_docs(path, &kdocs) : json_array();
    cluster.objects = cl;
    o.lookup = cluster_lookup;
    o.lookup_ctx = &cluster;

    fixture_path(path, sizeof(path), name, "request.json");
    body = read_all(path, &len);
    ck_assert_msg(body != NULL, "%s: no request.json", name);

    a = common_arena_create(0);
    common_buf_init(&out, 64u << 20);
    webhook_serve(a, ep, ct, body, len, &o, parse_time(now), &out, &reply);
    ck_assert_msg(reply.status == want_status, "%s: status %d, want %ld; body:\n%s", name,
                  reply.status, want_status, out.data ? out.data : "");

    if (reply.status == 200) {
        json_error_t je;
        json_t *got = json_loads(out.data, 0, &je), *want, *req;
        const json_t *resp, *patch;
        char *gs, *ws;

        ck_assert_msg(got != NULL, "%s: answer is not JSON: %s", name, je.text);
        ck_assert_str_eq(reply.content_type, "application/json");
        ck_assert_str_eq(json_string_value(json_object_get(got, "apiVersion")),
                         "admission.k8s.io/v1");
        ck_assert_str_eq(json_string_value(json_object_get(got, "kind")), "AdmissionReview");
        resp = json_object_get(got, "response");
        req = json_loads(body, 0, &je);
        ck_assert_ptr_nonnull(req);
        ck_assert_str_eq(
            json_string_value(json_object_get(resp, "uid")),
            json_string_value(json_object_get(json_object_get(req, "request"), "uid")));
        json_decref(req);
        ck_assert_str_eq(reply.result,
                         json_is_true(json_object_get(resp, "allowed")) ? "allowed" : "denied");

        fixture_path(path, sizeof(path), name, "response.json");
        if (writing && !exists(path)) {
            gs = pretty(got);
            FILE *f = fopen(path, "w");
            fprintf(f, "%s\n", gs);
            fclose(f);
            free(gs);
        }
        want = load_json_file(path);
        gs = pretty(got);
        ws = pretty(want);
        ck_assert_msg(json_equal(got, want), "%s: response differs\ngot:\n%s\nwant:\n%s", name, gs,
                      ws);
        free(gs);
        free(ws);
        json_decref(want);

        patch = json_object_get(resp, "patch");
        fixture_path(path, sizeof(path), name, "expected-patch.json");
        ck_assert_int_eq(reply.patched, patch != NULL);
        if (patch) {
            size_t plen;
            char *raw = unbase64(json_string_value(patch), &plen);
            json_t *p = json_loadb(raw, plen, 0, &je), *wp;
            ck_assert_msg(p != NULL, "%s: patch is not JSON: %s", name, raw);
            ck_assert_str_eq(json_string_value(json_object_get(resp, "patchType")), "JSONPatch");
            if (writing && !exists(path)) {
                char *ps = pretty(p);
                FILE *f = fopen(path, "w");
                fprintf(f, "%s\n", ps);
                fclose(f);
                free(ps);
            }
            wp = load_json_file(path);
            gs = pretty(p);
            ws = pretty(wp);
            ck_assert_msg(json_equal(p, wp), "%s: patch differs\ngot:\n%s\nwant:\n%s", name, gs,
                          ws);
            free(gs);
            free(ws);
            json_decref(p);
            json_decref(wp);
            free(raw);
        } else {
            ck_assert_msg(!exists(path), "%s: expected-patch.json but the answer has no patch",
                          name);
            ck_assert_ptr_null(json_object_get(resp, "patchType"));
        }
        json_decref(got);
    } else {
        char *want;
        size_t wlen;

        ck_assert_str_eq(reply.content_type, "text/plain; charset=utf-8");
        ck_assert_str_eq(reply.result, reply.status >= 500 ? "error" : "invalid");
        fixture_path(path, sizeof(path), name, "response.txt");
        if (writing && !exists(path))
            write_text(path, out.data ? out.data : "");
        want = read_all(path, &wlen);
        ck_assert_msg(want != NULL, "%s: no response.txt", name);
        ck_assert_msg(strcmp(out.data ? out.data : "", want) == 0,
                      "%s: body differs\ngot:  %s\nwant: %s", name, out.data ? out.data : "", want);
        free(want);
    }
    common_buf_free(&out);
    common_arena_destroy(a);
    free(body);
    json_decref(cl);
    json_decref(specs);
    common_yaml_docs_free(&cdocs);
    common_yaml_docs_free(&kdocs);
}
END_TEST

/* ---- the wire codec ---- */

static const char *encode(const char *uid, const struct webhook_response *r, struct common_buf *b)
{
    struct common_error err = {0};

    common_buf_reset(b);
    ck_assert_msg(webhook_admission_encode(uid, r, b, &err) == COMMON_OK, "%s", err.msg);
    return b->data;
}

START_TEST(test_pointer_escaping)
{
    struct common_buf b;
    struct common_arena *a = common_arena_create(0);
    struct webhook_patch p;
    struct common_error err = {0};
    const json_t *op;

    common_buf_init(&b, 1024);
    ck_assert_int_eq(webhook_pointer_append(&b, "a~b/c", NULL), COMMON_OK);
    ck_assert_int_eq(webhook_pointer_append(&b, "~1", NULL), COMMON_OK);
    ck_assert_int_eq(webhook_pointer_append(&b, "", NULL), COMMON_OK);
    ck_assert_int_eq(webhook_pointer_append(&b, "x", NULL), COMMON_OK);
    ck_assert_str_eq(b.data, "/a~0b~1c/~01//x");
    common_buf_free(&b);

    ck_assert_int_eq(webhook_patch_init(&p, a, &err), COMMON_OK);
    ck_assert_int_eq(webhook_patch_op(&p, "add", json_string("1"), "spec", "containers", "0",
                                      "resources", "requests", "trainsched.io/gang", NULL),
                     0);
    ck_assert_int_eq(webhook_patch_op(&p, "remove", NULL, "metadata", "labels",
                                      "scheduling.x-k8s.io/pod-group", NULL),
                     0);
    ck_assert_int_eq(webhook_patch_op_at(&p, "replace", "", json_object()), 0);
    ck_assert_uint_eq(json_array_size(p.ops), 3);
    op = json_array_get(p.ops, 0);
    ck_assert_str_eq(json_string_value(json_object_get(op, "op")), "add");
    ck_assert_str_eq(json_string_value(json_object_get(op, "path")),
                     "/spec/containers/0/resources/requests/trainsched.io~1gang");
    ck_assert_str_eq(json_string_value(json_object_get(op, "value")), "1");
    op = json_array_get(p.ops, 1);
    ck_assert_str_eq(json_string_value(json_object_get(op, "path")),
                     "/metadata/labels/scheduling.x-k8s.io~1pod-group");
    ck_assert_ptr_null(json_object_get(op, "value"));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(p.ops, 2), "path")), "");
    ck_assert_int_eq(p.oom, 0);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_encode_exact_bytes)
{
    struct common_buf b;
    struct webhook_response r = {0};
    const char *warns[] = {"first", "", "second"};
    json_t *patch = json_pack("[{s:s, s:s, s:s}]", "op", "add", "path", "/a~1b", "value", "1");

    common_buf_init(&b, 1 << 20);
    /* protocols.md §2.3: the minimal allow */
    r.allowed = 1;
    ck_assert_str_eq(encode("u-1", &r, &b), "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                                            "\"AdmissionReview\",\"response\":{\"allowed\":true,"
                                            "\"uid\":\"u-1\"}}");
    /* a denial with status and warnings (the empty warning is dropped) */
    r.allowed = 0;
    r.code = 403;
    r.reason = "Forbidden";
    r.message = "spec.x: Invalid: no";
    r.warnings = warns;
    r.nwarnings = 3;
    ck_assert_str_eq(encode("u-2", &r, &b),
                     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                     "\"response\":{\"allowed\":false,\"status\":{\"code\":403,\"message\":"
                     "\"spec.x: Invalid: no\",\"reason\":\"Forbidden\"},\"uid\":\"u-2\","
                     "\"warnings\":[\"first\",\"second\"]}}");
    /* a patch: base64 of [{"op":"add","path":"/a~1b","value":"1"}] */
    memset(&r, 0, sizeof(r));
    r.allowed = 1;
    r.patch = patch;
    ck_assert_str_eq(encode("u-3", &r, &b),
                     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                     "\"response\":{\"allowed\":true,\"patch\":"
                     "\"W3sib3AiOiJhZGQiLCJwYXRoIjoiL2F+MWIiLCJ2YWx1ZSI6IjEifV0=\","
                     "\"patchType\":\"JSONPatch\",\"uid\":\"u-3\"}}");
    /* an empty patch is no patch */
    json_array_clear(patch);
    ck_assert_ptr_null(strstr(encode("u-4", &r, &b), "patch"));
    json_decref(patch);
    common_buf_free(&b);
}
END_TEST

START_TEST(test_encode_warning_limits_and_errors)
{
    struct common_buf b, small;
    struct webhook_response r = {0};
    struct common_error err = {0};
    char long_w[600], big[20][251];
    const char *ws[21];
    json_t *got, *arr;
    json_error_t je;
    size_t total = 0;

    /* 'x' then 2-byte characters: the cut at 256 bytes falls inside one and steps back */
    long_w[0] = 'x';
    for (int i = 0; i < 290; i++) {
        long_w[1 + 2 * i] = (char)0xc3;
        long_w[2 + 2 * i] = (char)0xa9;
    }
    long_w[581] = '\0';
    ws[0] = long_w;
    for (int i = 0; i < 20; i++) {
        memset(big[i], 'a' + i % 26, 250);
        big[i][250] = '\0';
        ws[i + 1] = big[i];
    }
    r.allowed = 1;
    r.warnings = ws;
    r.nwarnings = 21;
    common_buf_init(&b, 1 << 20);
    encode("u", &r, &b);
    got = json_loads(b.data, 0, &je);
    ck_assert_ptr_nonnull(got);
    arr = json_object_get(json_object_get(got, "response"), "warnings");
    ck_assert_uint_eq(json_string_length(json_array_get(arr, 0)), 255);
    for (size_t i = 0; i < json_array_size(arr); i++)
        total += json_string_length(json_array_get(arr, i));
    ck_assert_uint_le(total, WEBHOOK_WARNINGS_TOTAL_MAX);
    /* 255 + 15 * 250 = 4005; one more would pass 4096 */
    ck_assert_uint_eq(json_array_size(arr), 16);
    json_decref(got);

    /* invalid UTF-8 in a message becomes '?', so the review stays valid JSON */
    memset(&r, 0, sizeof(r));
    r.code = 403;
    r.message = "bad \xff byte";
    encode("u", &r, &b);
    ck_assert_ptr_nonnull(strstr(b.data, "\"bad ? byte\""));

    /* errors: no uid, a patch that is not an array, a full buffer (left as it was) */
    ck_assert_int_eq(webhook_admission_encode(NULL, &r, &b, &err), COMMON_EINVAL);
    r.patch = json_object();
    ck_assert_int_eq(webhook_admission_encode("u", &r, &b, &err), COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "JSON array"));
    json_decref((json_t *)r.patch);
    r.patch = NULL;
    common_buf_init(&small, 40);
    common_buf_puts(&small, "keep", NULL);
    ck_assert_int_eq(webhook_admission_encode("u", &r, &small, &err), COMMON_ETOOBIG);
    ck_assert_str_eq(small.data, "keep");
    common_buf_free(&small);
    common_buf_free(&b);
}
END_TEST

START_TEST(test_decode_every_field)
{
    static const char body[] =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
        "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
        "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
        "\"subResource\":\"status\","
        "\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
        "\"requestResource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
        "\"requestSubResource\":\"status\",\"name\":\"p\",\"namespace\":\"ns\","
        "\"operation\":\"UPDATE\",\"userInfo\":{\"username\":\"admin\",\"uid\":\"014fbff9\","
        "\"groups\":[\"system:authenticated\",\"my-admin-group\"],"
        "\"extra\":{\"some-key\":[\"v1\",\"v2\"]}},"
        "\"object\":{\"kind\":\"Pod\"},\"oldObject\":{\"kind\":\"Pod\",\"x\":1},"
        "\"dryRun\":true,\"options\":{\"kind\":\"UpdateOptions\"},\"futureField\":[1,2]},"
        "\"futureTop\":1}";
    struct common_arena *a = common_arena_create(0);
    struct webhook_request r;
    struct common_error err = {0};

    ck_assert_msg(webhook_admission_decode(a, body, sizeof(body) - 1, 0, &r, &err) == COMMON_OK,
                  "%s", err.msg);
    ck_assert_str_eq(r.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
    ck_assert_str_eq(r.kind.group, "");
    ck_assert_str_eq(r.kind.version, "v1");
    ck_assert_str_eq(r.kind.kind, "Pod");
    ck_assert_str_eq(r.resource.resource, "pods");
    ck_assert_str_eq(r.sub_resource, "status");
    ck_assert_str_eq(r.request_kind.kind, "Pod");
    ck_assert_str_eq(r.request_resource.resource, "pods");
    ck_assert_str_eq(r.request_sub_resource, "status");
    ck_assert_str_eq(r.name, "p");
    ck_assert_str_eq(r.namespace, "ns");
    ck_assert_int_eq(r.operation, WEBHOOK_OP_UPDATE);
    ck_assert_str_eq(r.operation_name, "UPDATE");
    ck_assert_str_eq(r.user.username, "admin");
    ck_assert_str_eq(r.user.uid, "014fbff9");
    ck_assert_uint_eq(r.user.ngroups, 2);
    ck_assert_str_eq(r.user.groups[1], "my-admin-group");
    ck_assert_uint_eq(json_array_size(json_object_get(r.user.extra, "some-key")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(r.object, "kind")), "Pod");
    ck_assert_int_eq(json_integer_value(json_object_get(r.old_object, "x")), 1);
    ck_assert_int_eq(r.dry_run, 1);
    ck_assert_str_eq(json_string_value(json_object_get(r.options, "kind")), "UpdateOptions");
    ck_assert_str_eq(webhook_op_name(WEBHOOK_OP_CONNECT), "CONNECT");
    ck_assert_str_eq(webhook_op_name((enum webhook_op)9), "?");
    common_arena_destroy(a);
}
END_TEST

/* {"apiVersion":..,"kind":..,"request":{ <req> }} */
#define REVIEW(req)                                                                                \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","                        \
    "\"request\":{" req "}}"
#define GOOD_KIND "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
#define GOOD_RES "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
#define GOOD "\"uid\":\"u\"," GOOD_KIND GOOD_RES

START_TEST(test_decode_errors_name_the_field)
{
    static const struct {
        const char *body;
        enum common_rc rc;
        const char *msg;
    } t[] = {
        {"", COMMON_EINVAL, "empty request body"},
        {"[1]", COMMON_EINVAL, "must be a JSON object (an AdmissionReview), got array"},
        {"{\"apiVersion\":1}", COMMON_EINVAL,
         "AdmissionReview.apiVersion: must be a string, got integer"},
        {"{\"kind\":\"AdmissionReview\"}", COMMON_EINVAL, "AdmissionReview.apiVersion: required"},
        {"{\"apiVersion\":\"admission.k8s.io/v1beta1\"}", COMMON_EINVAL,
         "apiVersion: must be admission.k8s.io/v1, got \"admission.k8s.io/v1beta1\""},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"X\"}", COMMON_EINVAL,
         "kind: must be AdmissionReview, got \"X\""},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", COMMON_EINVAL,
         "request: required"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":[]}",
         COMMON_EINVAL, "AdmissionReview.request: must be an object, got array"},
        {REVIEW(GOOD_KIND GOOD_RES "\"operation\":\"CREATE\""), COMMON_EINVAL,
         "request.uid: required"},
        {REVIEW("\"uid\":\"\"," GOOD_KIND GOOD_RES "\"operation\":\"CREATE\""), COMMON_EINVAL,
         "request.uid: must not be empty"},
        {REVIEW("\"uid\":\"a\\u0000b\"," GOOD_KIND GOOD_RES "\"operation\":\"CREATE\""),
         COMMON_EINVAL, "request.uid: contains a NUL character"},
        {REVIEW("\"uid\":7," GOOD_KIND GOOD_RES "\"operation\":\"CREATE\""), COMMON_EINVAL,
         "request.uid: must be a string, got integer"},
        {REVIEW("\"uid\":\"u\"," GOOD_RES "\"operation\":\"CREATE\""), COMMON_EINVAL,
         "request.kind: required"},
        {REVIEW("\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\"}," GOOD_RES
                "\"operation\":\"CREATE\""),
         COMMON_EINVAL, "request.kind.kind: required"},
        {REVIEW("\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"\"}," GOOD_RES
                "\"operation\":\"CREATE\""),
         COMMON_EINVAL, "request.kind.kind: must not be empty"},
        {REVIEW("\"uid\":\"u\",\"kind\":{\"version\":\"v1\",\"kind\":\"Pod\"}," GOOD_RES
                "\"operation\":\"CREATE\""),
         COMMON_EINVAL, "request.kind.group: required"},
        {REVIEW("\"uid\":\"u\"," GOOD_KIND "\"operation\":\"CREATE\""), COMMON_EINVAL,
         "request.resource: required"},
        {REVIEW(GOOD "\"operation\":\"PATCH\""), COMMON_EINVAL,
         "request.operation: must be CREATE, UPDATE, DELETE or CONNECT, got \"PATCH\""},
        {REVIEW(GOOD "\"name\":\"n\""), COMMON_EINVAL, "request.operation: required"},
        {REVIEW(GOOD "\"operation\":\"CREATE\",\"object\":\"x\""), COMMON_EINVAL,
         "request.object: must be an object, got string"},
        {REVIEW(GOOD "\"operation\":\"CREATE\",\"oldObject\":[]"), COMMON_EINVAL,
         "request.oldObject: must be an object, got array"},
        {REVIEW(GOOD "\"operation\":\"CREATE\",\"dryRun\":\"yes\""), COMMON_EINVAL,
         "request.dryRun: must be a boolean, got string"},
        {REVIEW(GOOD "\"operation\":\"CREATE\",\"namespace\":3"), COMMON_EINVAL,
         "request.namespace: must be a string, got integer"},
        {REVIEW(GOOD "\"operation\":\"CREATE\",\"userInfo\":{\"groups\":\"a\"}"), COMMON_EINVAL,
         "request.userInfo.groups: must be an array, got string"},
        {REVIEW(GOOD "\"operation\":\"CREATE\",\"userInfo\":{\"groups\":[1]}"), COMMON_EINVAL,
         "request.userInfo.groups[0]: must be a string, got integer"},
        {REVIEW(GOOD "\"operation\":\"CREATE\",\"userInfo\":{\"extra\":{\"k\":[2]}}"),
         COMMON_EINVAL, "request.userInfo.extra[k][0]: must be a string, got integer"},
        {REVIEW(GOOD "\"operation\":\"CREATE\",\"requestKind\":{\"group\":1}"), COMMON_EINVAL,
         "request.requestKind.group: must be a string, got integer"},
        {REVIEW(GOOD "\"operation\":\"CREATE\"") "trailing", COMMON_EINVAL,
         "malformed JSON at line 1"},
        {"{\"a\":1,\"a\":2}", COMMON_EINVAL, "duplicate object key"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\xe2\x82\"}", COMMON_EINVAL,
         "request body is not valid UTF-8 (byte 0xe2 at offset 34)"},
    };
    struct common_arena *a = common_arena_create(0);
    char uid[WEBHOOK_UID_MAX + 300];

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        struct webhook_request r;
        struct common_error err = {0};
        enum common_rc rc = webhook_admission_decode(a, t[i].body, strlen(t[i].body), 0, &r, &err);
        ck_assert_msg(rc == t[i].rc, "case %zu: rc %d (%s)", i, rc, err.msg);
        ck_assert_msg(strstr(err.msg, t[i].msg) != NULL, "case %zu: \"%s\" lacks \"%s\"", i,
                      err.msg, t[i].msg);
        ck_assert_ptr_null(r.uid);
        ck_assert_int_eq(webhook_admission_http_status(rc), 400);
    }
    /* a uid over the bound */
    {
        struct webhook_request r;
        struct common_error err = {0};
        char body[1024];
        memset(uid, 'u', WEBHOOK_UID_MAX + 1);
        uid[WEBHOOK_UID_MAX + 1] = '\0';
        snprintf(body, sizeof(body),
                 REVIEW("\"uid\":\"%s\"," GOOD_KIND GOOD_RES "\"operation\":\"CREATE\""), uid);
        ck_assert_int_eq(webhook_admission_decode(a, body, strlen(body), 0, &r, &err),
                         COMMON_EINVAL);
        ck_assert_str_eq(err.msg, "request.uid: longer than 256 bytes");
        /* the cap: one byte over a 100-byte limit */
        ck_assert_int_eq(webhook_admission_decode(a, body, 101, 100, &r, &err), COMMON_ETOOBIG);
        ck_assert_str_eq(err.msg, "request body of 101 bytes is over the webhook limit of 100 "
                                  "bytes");
    }
    /* a backslash before a raw NUL byte is bad input, never taken for the parser running out
     * of memory (found by fuzz_admission) */
    {
        static const char body[] = "{\"a\":\"x\\\0\"}";
        struct webhook_request r;
        struct common_error err = {0};
        ck_assert_int_eq(webhook_admission_decode(a, body, sizeof(body) - 1, 0, &r, &err),
                         COMMON_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "malformed JSON at line 1"));
    }
    ck_assert_int_eq(webhook_admission_http_status(COMMON_EUNSUPPORTED), 415);
    ck_assert_int_eq(webhook_admission_http_status(COMMON_ENOMEM), 500);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_utf8_check)
{
    static const struct {
        const char *s;
        size_t bad;
    } t[] = {
        {"plain ascii", (size_t)-1},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", (size_t)-1}, /* 2, 3 and 4 bytes */
        {"\xc0\xaf", 0},                                           /* overlong '/' */
        {"ab\xe0\x80\xaf", 2},                                     /* overlong, 3 bytes */
        {"\xed\xa0\x80", 0},                                       /* surrogate U+D800 */
        {"x\xf4\x90\x80\x80", 1},                                  /* above U+10FFFF */
        {"xy\xe2\x82", 2},                                         /* cut short */
        {"\x80", 0},                                               /* lone continuation */
        {"ok\xff", 2},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        ck_assert_msg(webhook_utf8_check(t[i].s, strlen(t[i].s)) == t[i].bad, "case %zu", i);
}
END_TEST

START_TEST(test_content_type)
{
    ck_assert(webhook_content_type_ok("application/json"));
    ck_assert(webhook_content_type_ok("Application/JSON; charset=utf-8"));
    ck_assert(webhook_content_type_ok(" application/json ;charset=UTF-8"));
    ck_assert(!webhook_content_type_ok(NULL));
    ck_assert(!webhook_content_type_ok(""));
    ck_assert(!webhook_content_type_ok("application/jsonl"));
    ck_assert(!webhook_content_type_ok("application/json-patch+json"));
    ck_assert(!webhook_content_type_ok("text/plain"));
    ck_assert(!webhook_content_type_ok("application/yaml"));
}
END_TEST

START_TEST(test_endpoint_table)
{
    ck_assert_int_eq(webhook_endpoint_by_path("/validate-trainjob")->id, WEBHOOK_VALIDATE_TRAINJOB);
    ck_assert_int_eq(
        webhook_endpoint_by_path("/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime")
            ->id,
        WEBHOOK_VALIDATE_CLUSTERTRAININGRUNTIME);
    ck_assert_int_eq(webhook_endpoint_by_path("/mutate-trainer-kubeflow-org-v1alpha1-trainjob")->id,
                     WEBHOOK_MUTATE_TRAINJOB);
    ck_assert_int_eq(webhook_endpoint_by_path("/mutate-pod")->id, WEBHOOK_MUTATE_POD);
    ck_assert_ptr_null(webhook_endpoint_by_path("/mutate-pods"));
    ck_assert_ptr_null(webhook_endpoint_by_path(NULL));
    for (int i = 0; i < WEBHOOK_COUNT; i++)
        ck_assert_int_eq(webhook_endpoints[i].id, i);
    /* the gate the webhook gives is the one the extender's books recognise and remove */
    ck_assert_str_eq(WEBHOOK_GANG_GATE, COMMON_TRAINSCHED_GATE);
}
END_TEST

/* a review of a gang pod whose object carries a string of pad bytes (a big annotation) */
static char *big_review(size_t pad, size_t *len)
{
    static const char head[] =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"big\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
        "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
        "\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
        "\"metadata\":{\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"alpha\"},"
        "\"annotations\":{\"pad\":\"";
    static const char tail[] = "\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}";
    char *b = malloc(sizeof(head) + pad + sizeof(tail));

    ck_assert_ptr_nonnull(b);
    memcpy(b, head, sizeof(head) - 1);
    memset(b + sizeof(head) - 1, 'x', pad);
    memcpy(b + sizeof(head) - 1 + pad, tail, sizeof(tail));
    *len = sizeof(head) - 1 + pad + sizeof(tail) - 1;
    return b;
}

START_TEST(test_ten_megabyte_object_is_a_400)
{
    struct common_arena *a = common_arena_create(0);
    struct webhook_options o = {.extender_wired = 1};
    struct webhook_reply reply;
    struct common_buf out;
    size_t len;
    char *body = big_review(10 * 1000 * 1000, &len);
    char want[200];

    common_buf_init(&out, 1 << 20);
    webhook_serve(a, &webhook_endpoints[WEBHOOK_MUTATE_POD], "application/json", body, len, &o, 0,
                  &out, &reply);
    ck_assert_int_eq(reply.status, 400);
    ck_assert_str_eq(reply.result, "invalid");
    snprintf(want, sizeof(want),
             "webhook mutate-pod: request body of %zu bytes is over the webhook limit of 8388608 "
             "bytes\n",
             len);
    ck_assert_str_eq(out.data, want);
    free(body);

    /* just under the cap the same review is answered */
    body = big_review(WEBHOOK_MAX_BODY_DEFAULT - 1000, &len);
    ck_assert_uint_le(len, WEBHOOK_MAX_BODY_DEFAULT);
    common_buf_reset(&out);
    webhook_serve(a, &webhook_endpoints[WEBHOOK_MUTATE_POD], "application/json", body, len, &o, 0,
                  &out, &reply);
    ck_assert_int_eq(reply.status, 200);
    ck_assert_int_eq(reply.patched, 1);
    free(body);
    common_buf_free(&out);
    common_arena_destroy(a);
}
END_TEST

/* ---- allocation failures ---- */

/* serve fixture case name once for reference, then with the n-th allocation failing for
 * n = 1, 2, ... until a run sees no failure: each run answers 500 or exactly the reference */
static void torture(const char *name)
{
    char path[1024];
    struct common_yaml_docs kdocs = {0};
    struct cluster cluster = {0};
    struct webhook_options o = {0};
    const struct webhook_endpoint *ep;
    struct webhook_reply ref, got;
    struct common_buf ref_out, out;
    struct common_arena *a;
    json_t *spec, *specs;
    struct common_yaml_docs cdocs = {0};
    char *body;
    size_t len;
    unsigned long n;
    int failed;
    int64_t now = parse_time(DEFAULT_NOW);

    fixture_path(path, sizeof(path), name, "case.yaml");
    specs = load_yaml_docs(path, &cdocs);
    spec = json_array_get(specs, 0);
    ep = webhook_endpoint_by_path(json_string_value(json_object_get(spec, "path")));
    ck_assert_ptr_nonnull(ep);
    o.scheduler_name = json_string_value(json_object_get(spec, "schedulerName"));
    o.extender_wired = !json_is_false(json_object_get(spec, "extenderWired"));
    o.gang_gate = !json_is_false(json_object_get(spec, "gangGate"));
    fixture_path(path, sizeof(path), name, "cluster.yaml");
    cluster.objects = exists(path) ? load_yaml_docs(path, &kdocs) : json_array();
    o.lookup = cluster_lookup;
    o.lookup_ctx = &cluster;
    fixture_path(path, sizeof(path), name, "request.json");
    body = read_all(path, &len);
    ck_assert_ptr_nonnull(body);

    common_buf_init(&ref_out, 64u << 20);
    a = common_arena_create(0);
    webhook_serve(a, ep, "application/json", body, len, &o, now, &ref_out, &ref);
    common_arena_destroy(a);
    ck_assert_int_eq(ref.status, 200);

    for (n = 1;; n++) {
        common_buf_init(&out, 64u << 20);
        common_alloc_fail_at(n);
        a = common_arena_create(0);
        if (a) {
            webhook_serve(a, ep, "application/json", body, len, &o, now, &out, &got);
            common_arena_destroy(a);
        } else {
            got.status = 500;
        }
        failed = common_alloc_failed();
        common_alloc_fail_at(0);
        if (!failed) {
            ck_assert_int_eq(got.status, 200);
            ck_assert_str_eq(out.data, ref_out.data);
            common_buf_free(&out);
            break;
        }
        ck_assert_msg(got.status == 500 ||
                          (got.status == 200 && out.data && strcmp(out.data, ref_out.data) == 0),
                      "%s: failure at allocation %lu gave %d: %s", name, n, got.status,
                      out.data ? out.data : "");
        common_buf_free(&out);
        ck_assert_uint_lt(n, 200000);
    }
    ck_assert_uint_gt(n, 10);
    common_buf_free(&ref_out);
    free(body);
    json_decref(cluster.objects);
    json_decref(specs);
    common_yaml_docs_free(&kdocs);
    common_yaml_docs_free(&cdocs);
}

START_TEST(test_allocation_failures)
{
    torture("gang-pod-with-requests-and-limits-gets-the-resource-under-an-escaped-key");
    torture("update-keeps-the-old-time-of-an-unchanged-patch-and-stamps-a-changed-one");
    torture("trainjob-referencing-a-deprecated-clustertrainingruntime-is-allowed-with-a-warning");
    torture("patch-change-under-a-jobset-with-active-jobs-is-forbidden-per-job");
    torture("clustertrainingruntime-ancestor-jobs-lacking-their-containers-are-forbidden-per-job");
    torture("update-changing-initializer-and-trainer-gives-two-immutable-errors");
}
END_TEST

/* ---- the routes over TLS ---- */

struct reply {
    long status;
    CURLcode rc;
    char *body;
    size_t len;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct reply *r = ud;
    char *b = realloc(r->body, r->len + size * n + 1);

    ck_assert_ptr_nonnull(b);
    memcpy(b + r->len, p, size * n);
    r->body = b;
    r->len += size * n;
    b[r->len] = '\0';
    return size * n;
}

static void post(const char *url, const char *ca, const char *method, const char *ct,
                 const char *body, size_t len, struct reply *r)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;
    char hdr[128];

    memset(r, 0, sizeof(*r));
    ck_assert_ptr_nonnull(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CAINFO, ca);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    snprintf(hdr, sizeof(hdr), "Content-Type: %s", ct);
    h = curl_slist_append(h, hdr);
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    if (method)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    r->rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    if (!r->body)
        r->body = calloc(1, 1);
}

static void add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *ext;

    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    ck_assert_ptr_nonnull(ext);
    ck_assert_int_eq(X509_add_ext(x, ext, -1), 1);
    X509_EXTENSION_free(ext);
}

/* a self-signed serving certificate for 127.0.0.1 and localhost: dir/tls.crt, dir/tls.key */
static void self_signed(const char *dir, char *cert, char *key, size_t size)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    FILE *f;

    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, k);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"trainsched-webhook.test", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    add_ext(x, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign");
    add_ext(x, NID_ext_key_usage, "serverAuth");
    add_ext(x, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
    ck_assert_int_gt(X509_sign(x, k, EVP_sha256()), 0);
    snprintf(cert, size, "%s/tls.crt", dir);
    snprintf(key, size, "%s/tls.key", dir);
    f = fopen(cert, "w");
    ck_assert_ptr_nonnull(f);
    PEM_write_X509(f, x);
    fclose(f);
    f = fopen(key, "w");
    ck_assert_ptr_nonnull(f);
    PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(k);
}

static int64_t fixed_now(void *ctx)
{
    return *(const int64_t *)ctx;
}

static char *fixture_body(const char *name, size_t *len)
{
    char path[1024];
    char *b;

    fixture_path(path, sizeof(path), name, "request.json");
    b = read_all(path, len);
    ck_assert_ptr_nonnull(b);
    return b;
}

static json_t *response_of(const struct reply *r)
{
    json_error_t je;
    json_t *j = json_loads(r->body, 0, &je);

    ck_assert_msg(j != NULL, "not JSON: %s", r->body);
    return j;
}

START_TEST(test_routes_over_tls)
{
    char dir[] = "/tmp/test_webhook.XXXXXX", cert[256], key[256], url[256];
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct webhook_server_opts wo = {0};
    struct common_error err = {0};
    struct common_metrics *m = common_metrics_create();
    struct common_yaml_docs kdocs = {0};
    struct cluster cluster = {0};
    struct webhook_server *w;
    struct common_httpd *h;
    struct reply r;
    struct common_buf text;
    int64_t now = parse_time(DEFAULT_NOW);
    json_t *j, *resp;
    char *body, path[1024];
    size_t len;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    self_signed(dir, cert, key, sizeof(cert));
    fixture_path(path, sizeof(path), "valid-trainjob-on-its-cluster-runtime-is-allowed",
                 "cluster.yaml");
    cluster.objects = load_yaml_docs(path, &kdocs);

    /* no lookup: refused */
    ck_assert_ptr_null(webhook_server_create(&wo, &err));
    ck_assert_int_eq(err.code, COMMON_EINVAL);
    wo.lookup = cluster_lookup;
    wo.lookup_ctx = &cluster;
    wo.metrics = m;
    wo.now = fixed_now;
    wo.now_ctx = &now;
    wo.scheduler_name = "trainsched-scheduler";
    wo.extender_wired = 1;
    w = webhook_server_create(&wo, &err);
    ck_assert_msg(w != NULL, "%s", err.msg);
    ck_assert_uint_eq(webhook_server_httpd_max_body(w), 2 * WEBHOOK_MAX_BODY_DEFAULT);

    ho.address = "127.0.0.1:0";
    ho.tls_cert_file = cert;
    ho.tls_key_file = key;
    ho.max_body = webhook_server_httpd_max_body(w);
    h = common_httpd_create(&ho, &err);
    ck_assert_msg(h != NULL, "%s", err.msg);
    ck_assert_int_eq(webhook_server_install(w, h, &err), COMMON_OK);
    ck_assert_msg(common_httpd_start(h, &err) == COMMON_OK, "%s", err.msg);

    /* 1. an allowed TrainJob, with the API server's ?timeout query */
    body = fixture_body("valid-trainjob-on-its-cluster-runtime-is-allowed", &len);
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/validate-trainjob?timeout=10s",
             common_httpd_port(h));
    post(url, cert, NULL, "application/json", body, len, &r);
    ck_assert_int_eq(r.rc, CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    j = response_of(&r);
    resp = json_object_get(j, "response");
    ck_assert(json_is_true(json_object_get(resp, "allowed")));
    ck_assert_str_eq(json_string_value(json_object_get(resp, "uid")),
                     "7b0c3d6e-0000-4000-8000-000000000001");
    json_decref(j);
    free(r.body);
    free(body);

    /* 2. Trainer's path: a missing runtime is denied with 403 */
    body = fixture_body("trainer-path-alias-answers-like-the-short-path", &len);
    snprintf(url, sizeof(url),
             "https://127.0.0.1:%d/validate-trainer-kubeflow-org-v1alpha1-trainjob",
             common_httpd_port(h));
    post(url, cert, NULL, "application/json; charset=utf-8", body, len, &r);
    ck_assert_int_eq(r.status, 200);
    j = response_of(&r);
    resp = json_object_get(j, "response");
    ck_assert(json_is_false(json_object_get(resp, "allowed")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(resp, "status"), "code")),
                     403);
    json_decref(j);
    free(r.body);
    free(body);

    /* 3. a gang pod is patched, with the configured scheduler name */
    body = fixture_body(
        "gang-pod-without-resources-gets-the-virtual-resource-in-requests-and-limits", &len);
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/mutate-pod", common_httpd_port(h));
    post(url, cert, NULL, "application/json", body, len, &r);
    ck_assert_int_eq(r.status, 200);
    j = response_of(&r);
    resp = json_object_get(j, "response");
    {
        size_t plen;
        char *raw = unbase64(json_string_value(json_object_get(resp, "patch")), &plen);
        ck_assert_str_eq(raw, "[{\"op\":\"add\",\"path\":\"/spec/containers/0/resources\","
                              "\"value\":{\"limits\":{\"trainsched.io/gang\":\"1\"},"
                              "\"requests\":{\"trainsched.io/gang\":\"1\"}}},"
                              "{\"op\":\"replace\",\"path\":\"/spec/schedulerName\","
                              "\"value\":\"trainsched-scheduler\"}]");
        free(raw);
    }
    json_decref(j);
    free(r.body);

    /* 4. wrong content type: 415; GET: 405 (the httpd's) */
    post(url, cert, NULL, "text/plain", body, len, &r);
    ck_assert_int_eq(r.status, 415);
    ck_assert_str_eq(
        r.body, "webhook mutate-pod: Content-Type must be application/json, got \"text/plain\"\n");
    free(r.body);
    post(url, cert, "GET", "application/json", NULL, 0, &r);
    ck_assert_int_eq(r.status, 405);
    free(r.body);
    free(body);

    /* 5. a 10 MB object: 400 with the webhook's message, not the httpd's 413 */
    body = big_review(10 * 1000 * 1000, &len);
    post(url, cert, NULL, "application/json", body, len, &r);
    ck_assert_int_eq(r.status, 400);
    ck_assert_ptr_nonnull(strstr(r.body, "is over the webhook limit of 8388608 bytes"));
    free(r.body);
    free(body);

    /* 6. malformed JSON: 400 */
    post(url, cert, NULL, "application/json", "{\"apiVersion\":", 14, &r);
    ck_assert_int_eq(r.status, 400);
    ck_assert_ptr_nonnull(strstr(r.body, "webhook mutate-pod: malformed JSON at line 1"));
    free(r.body);

    /* the metrics of all that */
    common_buf_init(&text, 1 << 20);
    ck_assert_int_eq(common_metrics_render(m, &text), COMMON_OK);
    ck_assert_ptr_nonnull(strstr(
        text.data,
        "trainsched_webhook_requests_total{webhook=\"validate-trainjob\",result=\"allowed\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(
        text.data,
        "trainsched_webhook_requests_total{webhook=\"validate-trainjob\",result=\"denied\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(text.data,
               "trainsched_webhook_requests_total{webhook=\"mutate-pod\",result=\"allowed\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(text.data,
               "trainsched_webhook_requests_total{webhook=\"mutate-pod\",result=\"invalid\"} 3\n"));
    ck_assert_ptr_nonnull(
        strstr(text.data, "trainsched_webhook_duration_seconds_count{webhook=\"mutate-pod\"} 4\n"));
    ck_assert_ptr_nonnull(strstr(
        text.data, "trainsched_webhook_duration_seconds_count{webhook=\"validate-trainjob\"} 2\n"));
    common_buf_free(&text);

    common_httpd_destroy(h);
    webhook_server_destroy(w);
    common_metrics_destroy(m);
    json_decref(cluster.objects);
    common_yaml_docs_free(&kdocs);
    unlink(cert);
    unlink(key);
    rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("webhook");
    TCase *tc = tcase_create("fixtures");
    TCase *unit = tcase_create("unit");
    TCase *slow = tcase_create("slow");

    collect_cases();
    tcase_add_loop_test(tc, test_fixture, 0, ncases);
    /* each fixture builds a TLS-free review through the whole handler: generous on a busy box */
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    tcase_add_test(unit, test_pointer_escaping);
    tcase_add_test(unit, test_encode_exact_bytes);
    tcase_add_test(unit, test_encode_warning_limits_and_errors);
    tcase_add_test(unit, test_decode_every_field);
    tcase_add_test(unit, test_decode_errors_name_the_field);
    tcase_add_test(unit, test_utf8_check);
    tcase_add_test(unit, test_content_type);
    tcase_add_test(unit, test_endpoint_table);
    tcase_add_test(unit, test_ten_megabyte_object_is_a_400);
    /* the 10 MB object takes seconds under load: Check's default 4 s is not enough */
    tcase_set_timeout(unit, 120);
    suite_add_tcase(s, unit);
    tcase_set_timeout(slow, 300);
    tcase_add_test(slow, test_allocation_failures);
    tcase_add_test(slow, test_routes_over_tls);
    suite_add_tcase(s, slow);
    return s;
}

int main(void)
{
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = testutil_run_suite(suite());
    curl_global_cleanup();
    return rc;
}
