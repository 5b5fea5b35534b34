/*
 * tests/unit/test_httpd.c - common/httpd and common/health against a real server on 127.0.0.1
 * (port 0), driven with libcurl and raw sockets: routes, 404/405, request and response headers,
 * the body cap (by Content-Length, chunked, far over), a 1 MiB round trip, concurrent clients,
 * TLS with a certificate chain made here with OpenSSL, certificate reload, a taken port, bad
 * input (huge headers, garbage, idle clients), draining on stop, and the health endpoints.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/health.h"
#include "common/httpd.h"
#include "common/metrics.h"
#include "testutil.h"

/* ---- a client ---- */

struct reply {
    long status;
    CURLcode rc;
    char *body;
    size_t len;
    char headers[4096];
    size_t hlen;
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

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct reply *r = ud;
    size_t k = size * n;

    if (r->hlen + k < sizeof(r->headers)) {
        memcpy(r->headers + r->hlen, p, k);
        r->hlen += k;
        r->headers[r->hlen] = '\0';
    }
    return k;
}

/* the value of response header name (case-insensitive) in a static buffer, or NULL */
static const char *header_of(const struct reply *r, const char *name)
{
    static char v[512];
    const char *p = r->headers;
    size_t nl = strlen(name);

    while ((p = strchr(p, '\n')) != NULL) {
        p++;
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *s = p + nl + 1, *e;
            while (*s == ' ')
                s++;
            e = strpbrk(s, "\r\n");
            snprintf(v, sizeof(v), "%.*s", (int)(e ? e - s : (long)strlen(s)), s);
            return v;
        }
    }
    return NULL;
}

static void reply_free(struct reply *r)
{
    free(r->body);
    memset(r, 0, sizeof(*r));
}

struct req_opts {
    const char *method;
    const char *body;
    size_t len;
    int chunked;
    const char *ca; /* CA file for https */
    struct curl_slist *headers;
};

/* one request on handle e (NULL = a fresh handle); the reply in *r */
static void request_on(CURL *e, const char *url, const struct req_opts *o, struct reply *r)
{
    CURL *own = NULL;
    struct curl_slist *hdrs = NULL;

    memset(r, 0, sizeof(*r));
    if (!e)
        e = own = curl_easy_init();
    ck_assert_ptr_nonnull(e);
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (o && o->ca) {
        curl_easy_setopt(e, CURLOPT_CAINFO, o->ca);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (o && o->headers)
        for (struct curl_slist *h = o->headers; h; h = h->next)
            hdrs = curl_slist_append(hdrs, h->data);
    if (o && o->chunked)
        hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
    if (o && o->body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, o->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->len);
    }
    if (o && o->method && strcmp(o->method, "HEAD") == 0)
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (o && o->method)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, o->method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    r->rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    if (!r->body)
        r->body = calloc(1, 1);
    if (own)
        curl_easy_cleanup(own);
}

static void request(const char *url, const struct req_opts *o, struct reply *r)
{
    request_on(NULL, url, o, r);
}

static char *url_of(struct common_httpd *h, const char *scheme, const char *path)
{
    static _Thread_local char u[256]; /* per thread: clients run in parallel */

    snprintf(u, sizeof(u), "%s://127.0.0.1:%d%s", scheme, common_httpd_port(h), path);
    return u;
}

/* ---- handlers ---- */

static void h_hello(void *ctx, const struct common_httpd_request *req,
                    struct common_httpd_response *resp)
{
    common_buf_puts(&resp->body, ctx ? (const char *)ctx : "hello", NULL);
}

static void h_nothing(void *ctx, const struct common_httpd_request *req,
                      struct common_httpd_response *resp)
{
}

static void h_echo(void *ctx, const struct common_httpd_request *req,
                   struct common_httpd_response *resp)
{
    const char *x = common_httpd_header(req, "X-Test"), *a = common_httpd_query_arg(req, "a");
    char n[32];

    common_buf_append(&resp->body, req->body, req->body_len, NULL);
    resp->content_type = req->content_type ? req->content_type : "application/octet-stream";
    snprintf(n, sizeof(n), "%zu", req->body_len);
    ck_assert_int_eq(common_httpd_set_header(resp, "X-Len", n), COMMON_OK);
    common_httpd_set_header(resp, "X-Method", req->method);
    common_httpd_set_header(resp, "X-Path", req->path);
    common_httpd_set_header(resp, "X-Remote", req->remote_addr);
    common_httpd_set_header(resp, "X-Tls", req->tls ? "yes" : "no");
    if (req->query)
        common_httpd_set_header(resp, "X-Query", req->query);
    if (x)
        common_httpd_set_header(resp, "X-Echo", x);
    if (a)
        common_httpd_set_header(resp, "X-Arg-A", a[0] ? a : "(empty)");
    if (common_httpd_query_arg(req, "flag"))
        common_httpd_set_header(resp, "X-Flag", "set");
}

static void h_busy(void *ctx, const struct common_httpd_request *req,
                   struct common_httpd_response *resp)
{
    ck_assert_int_eq(common_httpd_set_header(resp, "Bad Name", "x"), COMMON_EINVAL);
    ck_assert_int_eq(common_httpd_set_header(resp, "X-Split", "a\r\nInjected: 1"), COMMON_EINVAL);
    ck_assert_int_eq(common_httpd_set_header(resp, "content-length", "5"), COMMON_EINVAL);
    ck_assert_int_eq(common_httpd_set_header(resp, "Retry-After", "5"), COMMON_OK);
    common_httpd_respondf(resp, 503, "busy, come back in %d s\n", 5);
}

static void h_bad_status(void *ctx, const struct common_httpd_request *req,
                         struct common_httpd_response *resp)
{
    resp->status = 42;
}

static void h_slow(void *ctx, const struct common_httpd_request *req,
                   struct common_httpd_response *resp)
{
    usleep(400 * 1000);
    common_buf_puts(&resp->body, "done", NULL);
}

static struct common_httpd *server(struct common_httpd_opts *o)
{
    struct common_httpd_opts d = common_httpd_opts_default();
    struct common_error err = {0};
    struct common_httpd *h;

    if (!o)
        o = &d;
    o->address = "127.0.0.1:0";
    h = common_httpd_create(o, &err);
    ck_assert_msg(h != NULL, "%s", err.msg);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/hello", h_hello, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, "DELETE", "/hello", h_hello, "deleted"), 0);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/nothing", h_nothing, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, NULL, "/echo", h_echo, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, "POST", "/api/*", h_echo, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/api/exact", h_hello, "exact"), 0);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/busy", h_busy, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/badstatus", h_bad_status, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/slow", h_slow, NULL), 0);
    ck_assert_int_eq(common_httpd_start(h, &err), COMMON_OK);
    ck_assert_int_gt(common_httpd_port(h), 0);
    return h;
}

/* ---- tests ---- */

START_TEST(test_create_and_route_validation)
{
    struct common_httpd_opts o = common_httpd_opts_default();
    struct common_error err = {0};
    struct common_httpd *h;
    const char *bad[] = {"8080", "host", ":x", ":70000", "[::1]8080", "::1:80", ":", ":-1"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        o.address = bad[i];
        h = common_httpd_create(&o, &err);
        ck_assert_msg(h == NULL, "%s accepted", bad[i]);
        ck_assert_int_eq(err.code, COMMON_EINVAL);
    }
    o.address = "127.0.0.1:0";
    o.tls_cert_file = "/nonexistent.pem";
    ck_assert_ptr_null(common_httpd_create(&o, &err));
    ck_assert_int_eq(err.code, COMMON_EINVAL);
    o.tls_key_file = "/nonexistent-key.pem";
    h = common_httpd_create(&o, &err);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(common_httpd_start(h, &err), COMMON_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent.pem"));
    ck_assert_int_eq(common_httpd_port(h), -1);
    common_httpd_destroy(h);

    h = common_httpd_create(NULL, &err);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(common_httpd_route(h, "GET", "nope", h_hello, NULL), -1);
    ck_assert_int_eq(common_httpd_route(h, "G T", "/x", h_hello, NULL), -1);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/x", NULL, NULL), -1);
    ck_assert_int_eq(common_httpd_reload_tls(h, &err), COMMON_EUNSUPPORTED);
    common_httpd_stop(h); /* not started: no-op */
    common_httpd_destroy(h);
    common_httpd_destroy(NULL);
}
END_TEST

START_TEST(test_routes_and_errors)
{
    struct common_httpd *h = server(NULL);
    struct curl_slist *xh = curl_slist_append(NULL, "X-Test: hi there");
    struct req_opts o = {0};
    struct reply r;

    request(url_of(h, "http", "/hello"), NULL, &r);
    ck_assert_int_eq(r.rc, CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "hello");
    ck_assert_str_eq(header_of(&r, "Content-Type"), "text/plain; charset=utf-8");
    reply_free(&r);

    o.method = "DELETE";
    request(url_of(h, "http", "/hello"), &o, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "deleted");
    reply_free(&r);

    o.method = "HEAD"; /* a GET route serves HEAD, without a body */
    request(url_of(h, "http", "/hello"), &o, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.len, 0);
    reply_free(&r);

    request(url_of(h, "http", "/nothing"), NULL, &r); /* handler set nothing: empty 200 */
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.len, 0);
    ck_assert_str_eq(header_of(&r, "Content-Type"), "text/plain; charset=utf-8");
    reply_free(&r);

    request(url_of(h, "http", "/missing"), NULL, &r);
    ck_assert_int_eq(r.status, 404);
    reply_free(&r);
    request(url_of(h, "http", "/hello/more"), NULL, &r);
    ck_assert_int_eq(r.status, 404);
    reply_free(&r);

    o.method = "PUT";
    request(url_of(h, "http", "/hello"), &o, &r);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(header_of(&r, "Allow"), "GET, DELETE, HEAD");
    reply_free(&r);

    /* exact beats prefix; a prefix route answers below it; wrong method on the prefix: 405 */
    request(url_of(h, "http", "/api/exact"), NULL, &r);
    ck_assert_str_eq(r.body, "exact");
    reply_free(&r);
    o.method = "POST";
    o.body = "x=1";
    o.len = 3;
    request(url_of(h, "http", "/api/exact"), &o, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(header_of(&r, "X-Path"), "/api/exact");
    reply_free(&r);
    request(url_of(h, "http", "/api/v1/things"), &o, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "x=1");
    reply_free(&r);
    request(url_of(h, "http", "/api/v1/things"), NULL, &r);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(header_of(&r, "Allow"), "POST");
    reply_free(&r);

    /* request details reach the handler */
    o.method = "PATCH";
    o.body = "{\"a\":1}";
    o.len = strlen(o.body);
    o.headers = curl_slist_append(xh, "Content-Type: application/merge-patch+json");
    request(url_of(h, "http", "/echo?a=b%20c&flag&z=1"), &o, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"a\":1}");
    ck_assert_str_eq(header_of(&r, "Content-Type"), "application/merge-patch+json");
    ck_assert_str_eq(header_of(&r, "X-Method"), "PATCH");
    ck_assert_str_eq(header_of(&r, "X-Echo"), "hi there");
    ck_assert_str_eq(header_of(&r, "X-Query"), "a=b%20c&flag&z=1");
    ck_assert_str_eq(header_of(&r, "X-Arg-A"), "b c");
    ck_assert_str_eq(header_of(&r, "X-Flag"), "set");
    ck_assert_str_eq(header_of(&r, "X-Len"), "7");
    ck_assert_str_eq(header_of(&r, "X-Tls"), "no");
    ck_assert_msg(strncmp(header_of(&r, "X-Remote"), "127.0.0.1:", 10) == 0, "%s",
                  header_of(&r, "X-Remote"));
    reply_free(&r);
    curl_slist_free_all(o.headers);

    request(url_of(h, "http", "/busy"), NULL, &r);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(header_of(&r, "Retry-After"), "5");
    ck_assert_ptr_null(header_of(&r, "X-Split"));
    ck_assert_ptr_null(header_of(&r, "Injected"));
    ck_assert_str_eq(r.body, "busy, come back in 5 s\n");
    reply_free(&r);

    request(url_of(h, "http", "/badstatus"), NULL, &r);
    ck_assert_int_eq(r.status, 500);
    reply_free(&r);

    /* routes are fixed once serving */
    ck_assert_int_eq(common_httpd_route(h, "GET", "/late", h_hello, NULL), -1);
    common_httpd_destroy(h);
}
END_TEST

START_TEST(test_body_cap)
{
    struct common_httpd_opts opts = common_httpd_opts_default();
    struct common_httpd *h;
    struct req_opts o = {0};
    struct reply r;
    char *big = malloc(4096);

    memset(big, 'b', 4096);
    opts.max_body = 1024;
    h = server(&opts);
    o.method = "POST";
    o.body = big;

    o.len = 1024; /* exactly the cap: fine */
    request(url_of(h, "http", "/echo"), &o, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.len, 1024);
    reply_free(&r);

    o.len = 1025; /* Content-Length over the cap: 413 before the body is read */
    request(url_of(h, "http", "/echo"), &o, &r);
    ck_assert_int_eq(r.status, 413);
    ck_assert_ptr_nonnull(strstr(r.body, "limit of 1024 bytes"));
    reply_free(&r);

    o.chunked = 1; /* chunked and under the cap: reassembled */
    o.len = 1000;
    request(url_of(h, "http", "/echo"), &o, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.len, 1000);
    ck_assert_str_eq(header_of(&r, "X-Len"), "1000");
    reply_free(&r);

    o.len = 1500; /* chunked over the cap: read, discarded, 413 */
    request(url_of(h, "http", "/echo"), &o, &r);
    ck_assert_int_eq(r.status, 413);
    reply_free(&r);

    o.len = 4096; /* far over: the connection is dropped */
    request(url_of(h, "http", "/echo"), &o, &r);
    ck_assert_int_ne(r.status, 200);
    reply_free(&r);

    request(url_of(h, "http", "/hello"), NULL, &r); /* and the server still serves */
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    common_httpd_destroy(h);
    free(big);
}
END_TEST

START_TEST(test_big_bodies)
{
    struct common_httpd *h = server(NULL);
    size_t n = 1024 * 1024;
    char *body = malloc(n), *over = malloc(4 * n);
    struct req_opts o = {0};
    struct reply r;

    for (size_t i = 0; i < n; i++)
        body[i] = (char)(i * 7 + (i >> 9));
    o.method = "POST";
    o.body = body;
    o.len = n;
    request(url_of(h, "http", "/echo"), &o, &r);
    ck_assert_int_eq(r.rc, CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(r.len, n);
    ck_assert(memcmp(r.body, body, n) == 0);
    reply_free(&r);

    /* over the default 3 MiB cap: curl sends Expect: 100-continue, the server says 413 */
    memset(over, 'x', 4 * n);
    o.body = over;
    o.len = 4 * n;
    request(url_of(h, "http", "/echo"), &o, &r);
    ck_assert_int_eq(r.status, 413);
    reply_free(&r);
    common_httpd_destroy(h);
    free(body);
    free(over);
}
END_TEST

#define NCLIENTS 8
#define NREQ 40

struct client {
    struct common_httpd *h;
    int id, ok;
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    CURL *e = curl_easy_init();
    char body[64], url[128];

    snprintf(url, sizeof(url), "%s", url_of(c->h, "http", "/echo"));
    for (int i = 0; i < NREQ; i++) {
        struct req_opts o = {0};
        struct reply r;
        snprintf(body, sizeof(body), "client %d request %d", c->id, i);
        o.method = "POST";
        o.body = body;
        o.len = strlen(body);
        request_on(e, url, &o, &r); /* one keep-alive connection per client */
        if (r.rc == CURLE_OK && r.status == 200 && strcmp(r.body, body) == 0)
            c->ok++;
        reply_free(&r);
    }
    curl_easy_cleanup(e);
    return NULL;
}

START_TEST(test_concurrent_clients)
{
    struct common_httpd *h = server(NULL);
    struct client c[NCLIENTS];
    pthread_t t[NCLIENTS];

    for (int i = 0; i < NCLIENTS; i++) {
        c[i] = (struct client){h, i, 0};
        ck_assert_int_eq(pthread_create(&t[i], NULL, client_main, &c[i]), 0);
    }
    for (int i = 0; i < NCLIENTS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(c[i].ok, NREQ);
    }
    common_httpd_destroy(h);
}
END_TEST

START_TEST(test_port_taken)
{
    struct common_httpd *h = server(NULL), *h2;
    struct common_httpd_opts o = common_httpd_opts_default();
    struct common_error err = {0};
    char addr[64];

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", common_httpd_port(h));
    o.address = addr;
    h2 = common_httpd_create(&o, &err);
    ck_assert_ptr_nonnull(h2);
    ck_assert_int_eq(common_httpd_start(h2, &err), COMMON_EIO);
    ck_assert_msg(strstr(err.msg, addr) && strstr(err.msg, "Address already in use"), "%s",
                  err.msg);
    common_httpd_destroy(h2);
    common_httpd_destroy(h);
}
END_TEST

/* a raw connection to the server: send, then read until the peer closes or 5 s pass */
static size_t raw_exchange(int port, const char *data, size_t len, char *out, size_t out_size,
                           double *elapsed)
{
    struct sockaddr_in a = {0};
    struct timeval tv = {5, 0};
    struct timespec t0, t1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    size_t got = 0;

    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t off = 0; off < len;) {
        ssize_t n = send(fd, data + off, len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    for (;;) {
        ssize_t n = recv(fd, out + got, out_size - 1 - got, 0);
        if (n <= 0 || got + (size_t)n >= out_size - 1) {
            if (n > 0)
                got += (size_t)n;
            break;
        }
        got += (size_t)n;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (elapsed)
        *elapsed = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    out[got] = '\0';
    close(fd);
    return got;
}

/* raw_exchange of a string literal */
#define RAW(h, lit, out, secs)                                                                     \
    raw_exchange(common_httpd_port(h), lit, sizeof(lit) - 1, out, sizeof(out), secs)

START_TEST(test_bad_input)
{
    struct common_httpd_opts opts = common_httpd_opts_default();
    struct common_httpd *h;
    size_t big = 64 * 1024;
    char *req = malloc(big + 256), out[4096];
    double secs;
    struct reply r;
    int n;

    opts.connection_timeout_s = 1;
    h = server(&opts);

    /* headers over the per-connection memory: 431 (or a close), never a crash */
    n = snprintf(req, 256, "GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(req + n, 'a', big);
    memcpy(req + n + big, "\r\n\r\n", 5);
    raw_exchange(common_httpd_port(h), req, strlen(req), out, sizeof(out), NULL);
    ck_assert_msg(out[0] == '\0' || strncmp(out, "HTTP/1.1 431", 12) == 0 ||
                      strncmp(out, "HTTP/1.1 413", 12) == 0,
                  "%.40s", out);

    /* a huge request line */
    n = snprintf(req, 256, "GET /");
    memset(req + n, 'a', big);
    memcpy(req + n + big, " HTTP/1.1\r\nHost: x\r\n\r\n", 23);
    raw_exchange(common_httpd_port(h), req, strlen(req), out, sizeof(out), NULL);
    ck_assert_msg(out[0] == '\0' || strncmp(out, "HTTP/1.1 414", 12) == 0 ||
                      strncmp(out, "HTTP/1.1 431", 12) == 0,
                  "%.40s", out);

    /* garbage */
    RAW(h, "\x16\x03\x01garbage\r\n\r\n", out, NULL);
    ck_assert_msg(out[0] == '\0' || strncmp(out, "HTTP/1.1 400", 12) == 0, "%.40s", out);

    /* a bad chunked body */
    RAW(h, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", out, NULL);
    ck_assert_msg(out[0] == '\0' || strncmp(out, "HTTP/1.1 400", 12) == 0, "%.40s", out);

    /* an idle client is dropped after connection_timeout_s */
    RAW(h, "", out, &secs);
    ck_assert_msg(out[0] == '\0' && secs >= 0.5 && secs < 4.5, "idle for %f s", secs);

    /* a slow client that stops half-way through its headers likewise */
    RAW(h, "GET /hello HTTP/1.1\r\nHo", out, &secs);
    ck_assert_msg(secs < 4.5, "slow client kept %f s", secs);

    /* a pipelined pair on one connection, answered in order */
    RAW(h,
        "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
        "GET /api/exact HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        out, NULL);
    ck_assert_msg(strstr(out, "hello") && strstr(out, "exact") &&
                      strstr(out, "hello") < strstr(out, "exact"),
                  "%s", out);

    request(url_of(h, "http", "/hello"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    common_httpd_destroy(h);
    free(req);
}
END_TEST

struct slow_call {
    struct common_httpd *h;
    struct reply r;
};

static void *slow_main(void *arg)
{
    struct slow_call *s = arg;

    request(url_of(s->h, "http", "/slow"), NULL, &s->r);
    return NULL;
}

START_TEST(test_stop_drains)
{
    struct common_httpd *h = server(NULL);
    struct slow_call s = {h, {0}};
    struct reply r;
    pthread_t t;
    char url[128];

    snprintf(url, sizeof(url), "%s", url_of(h, "http", "/hello"));
    ck_assert_int_eq(pthread_create(&t, NULL, slow_main, &s), 0);
    usleep(150 * 1000);
    common_httpd_stop(h); /* returns once /slow has answered */
    pthread_join(t, NULL);
    ck_assert_int_eq(s.r.rc, CURLE_OK);
    ck_assert_int_eq(s.r.status, 200);
    ck_assert_str_eq(s.r.body, "done");
    ck_assert_str_eq(header_of(&s.r, "Connection"), "close");
    reply_free(&s.r);
    request(url, NULL, &r);
    ck_assert_int_eq(r.rc, CURLE_COULDNT_CONNECT);
    reply_free(&r);
    common_httpd_stop(h); /* again: no-op */
    common_httpd_destroy(h);
}
END_TEST

/* ---- TLS ---- */

struct pki {
    char dir[64];
    char root1[128], root2[128]; /* CA files for clients */
    char cert[128], key[128];    /* what the server reads */
};

static EVP_PKEY *new_key(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");

    ck_assert_ptr_nonnull(k);
    return k;
}

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *ext;

    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    ck_assert_ptr_nonnull(ext);
    ck_assert_int_eq(X509_add_ext(x, ext, -1), 1);
    X509_EXTENSION_free(ext);
}

/* a certificate for key with subject cn, signed by issuer/ikey (both NULL: self-signed) */
static X509 *new_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey, int ca)
{
    static long serial = 1;
    X509 *x = X509_new();

    ck_assert_ptr_nonnull(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(issuer ? issuer : x));
    if (ca) {
        add_ext(x, issuer ? issuer : x, NID_basic_constraints, "critical,CA:TRUE");
        add_ext(x, issuer ? issuer : x, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE");
        add_ext(x, issuer, NID_ext_key_usage, "serverAuth");
        add_ext(x, issuer, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
    }
    ck_assert_int_gt(X509_sign(x, ikey ? ikey : key, EVP_sha256()), 0);
    return x;
}

static void write_pem(const char *path, X509 *c1, X509 *c2, EVP_PKEY *key)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    if (c1)
        PEM_write_X509(f, c1);
    if (c2)
        PEM_write_X509(f, c2);
    if (key)
        PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    fclose(f);
}

/* generation 1: root1 -> intermediate -> leaf; cert file = leaf + intermediate (a chain).
 * generation 2 (written by pki_rotate): root2 -> leaf2. */
static void pki_init(struct pki *p)
{
    EVP_PKEY *rk = new_key(), *ik = new_key(), *lk = new_key();
    X509 *root = new_cert(rk, "test root 1", NULL, NULL, 1);
    X509 *inter = new_cert(ik, "test intermediate", root, rk, 1);
    X509 *leaf = new_cert(lk, "localhost", inter, ik, 0);

    snprintf(p->dir, sizeof(p->dir), "/tmp/test_httpd.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(p->dir));
    snprintf(p->root1, sizeof(p->root1), "%s/root1.pem", p->dir);
    snprintf(p->root2, sizeof(p->root2), "%s/root2.pem", p->dir);
    snprintf(p->cert, sizeof(p->cert), "%s/tls.crt", p->dir);
    snprintf(p->key, sizeof(p->key), "%s/tls.key", p->dir);
    write_pem(p->root1, root, NULL, NULL);
    write_pem(p->cert, leaf, inter, NULL);
    write_pem(p->key, NULL, NULL, lk);
    X509_free(root);
    X509_free(inter);
    X509_free(leaf);
    EVP_PKEY_free(rk);
    EVP_PKEY_free(ik);
    EVP_PKEY_free(lk);
}

static void pki_rotate(struct pki *p)
{
    EVP_PKEY *rk = new_key(), *lk = new_key();
    X509 *root = new_cert(rk, "test root 2", NULL, NULL, 1);
    X509 *leaf = new_cert(lk, "localhost", root, rk, 0);

    write_pem(p->root2, root, NULL, NULL);
    write_pem(p->cert, leaf, NULL, NULL);
    write_pem(p->key, NULL, NULL, lk);
    X509_free(root);
    X509_free(leaf);
    EVP_PKEY_free(rk);
    EVP_PKEY_free(lk);
}

static void pki_free(struct pki *p)
{
    const char *files[] = {p->root1, p->root2, p->cert, p->key};

    for (size_t i = 0; i < 4; i++)
        unlink(files[i]);
    rmdir(p->dir);
}

START_TEST(test_tls_and_reload)
{
    struct common_httpd_opts opts = common_httpd_opts_default();
    struct common_error err = {0};
    struct common_httpd *h;
    struct req_opts o1 = {0}, o2 = {0};
    struct reply r;
    struct pki p;
    CURL *kept = curl_easy_init();
    char url[128];
    FILE *f;

    pki_init(&p);
    opts.tls_cert_file = p.cert;
    opts.tls_key_file = p.key;
    h = server(&opts);
    snprintf(url, sizeof(url), "%s", url_of(h, "https", "/echo"));
    o1.ca = p.root1;
    o2.ca = p.root2;

    /* the chain verifies up to root 1 */
    request_on(kept, url, &o1, &r);
    ck_assert_msg(r.rc == CURLE_OK, "%s", curl_easy_strerror(r.rc));
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(header_of(&r, "X-Tls"), "yes");
    reply_free(&r);
    request(url_of(h, "http", "/echo"), NULL, &r); /* plain HTTP on a TLS port: refused */
    ck_assert_int_ne(r.status, 200);
    reply_free(&r);

    /* a broken key file: the reload fails, the old certificate stays */
    f = fopen(p.key, "w");
    fputs("-----BEGIN PRIVATE KEY-----\nbm9wZQ==\n-----END PRIVATE KEY-----\n", f);
    fclose(f);
    ck_assert_int_eq(common_httpd_reload_tls(h, &err), COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, p.key));
    request(url, &o1, &r);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);

    /* rotate to root 2 */
    pki_rotate(&p);
    ck_assert_msg(common_httpd_reload_tls(h, &err) == COMMON_OK, "%s", err.msg);
    request(url, &o2, &r); /* new connections: the new certificate */
    ck_assert_msg(r.rc == CURLE_OK, "%s", curl_easy_strerror(r.rc));
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    request(url, &o1, &r);
    ck_assert_int_eq(r.rc, CURLE_PEER_FAILED_VERIFICATION);
    reply_free(&r);
    /* the connection opened before the reload still works, and is then closed */
    request_on(kept, url, &o1, &r);
    ck_assert_msg(r.rc == CURLE_OK, "%s", curl_easy_strerror(r.rc));
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(header_of(&r, "Connection"), "close");
    reply_free(&r);

    /* a key that does not match the certificate */
    {
        EVP_PKEY *other = new_key();
        write_pem(p.key, NULL, NULL, other);
        EVP_PKEY_free(other);
    }
    ck_assert_int_eq(common_httpd_reload_tls(h, &err), COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "does not match"));
    request(url, &o2, &r);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);

    curl_easy_cleanup(kept);
    common_httpd_destroy(h);
    pki_free(&p);
}
END_TEST

/* ---- health ---- */

static int check_ok(void *ctx, char *why, size_t why_size)
{
    return 0;
}

static int leader_ready;

static int check_leader(void *ctx, char *why, size_t why_size)
{
    if (leader_ready)
        return 0;
    snprintf(why, why_size, "not the leader yet\n(second line)");
    return 1;
}

START_TEST(test_health)
{
    struct common_httpd_opts o = common_httpd_opts_default();
    struct common_error err = {0};
    struct common_metrics *m = common_metrics_create();
    struct common_health *hh = NULL, *late = NULL;
    struct common_httpd *h;
    struct reply r;

    o.address = "127.0.0.1:0";
    h = common_httpd_create(&o, &err);
    ck_assert_ptr_nonnull(h);
    common_metric_add(common_metrics_counter(m, "trainsched_binds_total", "Binds.", NULL), NULL, 3);
    ck_assert_int_eq(common_health_install(h, m, &hh, &err), COMMON_OK);
    ck_assert_int_eq(common_health_add_check(hh, "informers", check_ok, NULL), 0);
    ck_assert_int_eq(common_health_add_check(hh, "informers", check_ok, NULL), -1);
    ck_assert_int_eq(common_health_add_check(hh, "Bad Name", check_ok, NULL), -1);
    ck_assert_int_eq(common_httpd_start(h, &err), COMMON_OK);
    ck_assert_int_eq(common_health_install(h, m, &late, &err), COMMON_EINVAL);
    ck_assert_ptr_null(late);
    /* checks may come after start */
    ck_assert_int_eq(common_health_add_check(hh, "leader", check_leader, NULL), 0);

    request(url_of(h, "http", "/healthz"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "ok");
    reply_free(&r);
    request(url_of(h, "http", "/livez"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);

    request(url_of(h, "http", "/readyz"), NULL, &r);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(r.body, "[+]informers ok\n"
                             "[-]leader failed: not the leader yet (second line)\n"
                             "readyz check failed\n");
    reply_free(&r);
    request(url_of(h, "http", "/readyz/leader"), NULL, &r);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(r.body, "[-]leader failed: not the leader yet (second line)\n");
    reply_free(&r);
    request(url_of(h, "http", "/readyz/informers"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "ok");
    reply_free(&r);
    request(url_of(h, "http", "/readyz/nope"), NULL, &r);
    ck_assert_int_eq(r.status, 404);
    reply_free(&r);
    request(url_of(h, "http", "/readyz?exclude=leader"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "ok");
    reply_free(&r);
    request(url_of(h, "http", "/readyz?verbose&exclude=le%61der"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "[+]informers ok\n"
                             "[+]leader excluded: ok\n"
                             "readyz check passed\n");
    reply_free(&r);

    leader_ready = 1;
    request(url_of(h, "http", "/readyz"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "ok");
    reply_free(&r);

    request(url_of(h, "http", "/metrics"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(header_of(&r, "Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    ck_assert_str_eq(r.body, "# HELP trainsched_binds_total Binds.\n"
                             "# TYPE trainsched_binds_total counter\n"
                             "trainsched_binds_total 3\n");
    reply_free(&r);
    {
        struct req_opts po = {"POST", "x", 1, 0, NULL, NULL};
        request(url_of(h, "http", "/metrics"), &po, &r);
        ck_assert_int_eq(r.status, 405);
        ck_assert_str_eq(header_of(&r, "Allow"), "GET, HEAD");
        reply_free(&r);
    }

    common_httpd_destroy(h);
    common_health_destroy(hh);
    common_metrics_destroy(m);
}
END_TEST

/* A client trickling its body (a byte every 300 ms, so the idle timeout never fires) is dropped
 * once the request has taken longer than connection_timeout_s; others are served meanwhile. */
START_TEST(test_trickling_body_dropped)
{
    struct common_httpd_opts o = common_httpd_opts_default();
    struct common_httpd *h;
    struct sockaddr_in a = {0};
    struct timespec t0, t1, pause = {0, 300 * 1000 * 1000};
    static const char head[] = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
    char out[256];
    double secs = 0;
    int fd, dropped = 0;
    struct reply r = {0};
    char *url;

    o.connection_timeout_s = 2;
    h = server(&o);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)common_httpd_port(h));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(send(fd, head, sizeof(head) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(head) - 1));
    for (int i = 0; i < 60 && !dropped; i++) {
        nanosleep(&pause, NULL);
        if (send(fd, "x", 1, MSG_NOSIGNAL) != 1)
            dropped = 1;
        if (i == 3) { /* meanwhile another client is served */
            url = url_of(h, "http", "/hello");
            request(url, NULL, &r);
            ck_assert_int_eq(r.status, 200);
            reply_free(&r);
        }
    }
    if (!dropped) {
        struct timeval tv = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        dropped = recv(fd, out, sizeof(out), 0) == 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    close(fd);
    ck_assert_msg(dropped, "a client trickling for %.1f s was not dropped", secs);
    ck_assert_msg(secs < 8.0, "dropped only after %.1f s (limit 2 s)", secs);
    common_httpd_stop(h);
    common_httpd_destroy(h);
}
END_TEST

static Suite *httpd_suite(void)
{
    Suite *s = suite_create("httpd");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_create_and_route_validation);
    tcase_add_test(tc, test_routes_and_errors);
    tcase_add_test(tc, test_body_cap);
    tcase_add_test(tc, test_big_bodies);
    tcase_add_test(tc, test_concurrent_clients);
    tcase_add_test(tc, test_port_taken);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_stop_drains);
    tcase_add_test(tc, test_tls_and_reload);
    tcase_add_test(tc, test_health);
    tcase_add_test(tc, test_trickling_body_dropped);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc;

    curl_global_init(CURL_GLOBAL_ALL);
    rc = testutil_run_suite(httpd_suite());
    curl_global_cleanup();
    return rc;
}
