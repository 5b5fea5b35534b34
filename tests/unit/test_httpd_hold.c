/*
 * tests/unit/test_httpd_hold.c - held requests of common/httpd (common_httpd_hold and
 * common_httpd_release) against a real server on 127.0.0.1 (port 0): release from another thread,
 * 1,000 held requests on one curl multi handle with the thread count checked, release racing the
 * handler's return, stop with held requests (503), a client gone while held, a bad release,
 * headers set before holding, and a held request across a certificate reload.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/httpd.h"
#include "testutil.h"

#define MANY 1000

/* ---- the held requests the handlers make ---- */

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_cv = PTHREAD_COND_INITIALIZER;
static struct common_httpd_hold *slots[MANY];
static size_t nslots;

static void slots_reset(void)
{
    pthread_mutex_lock(&slots_mu);
    memset(slots, 0, sizeof(slots));
    nslots = 0;
    pthread_mutex_unlock(&slots_mu);
}

/* wait until n holds are in the slots; 0 on timeout (ms) */
static int slots_wait(size_t n, long ms)
{
    struct timespec dl;
    int ok;

    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&slots_mu);
    while (nslots < n && pthread_cond_timedwait(&slots_cv, &slots_mu, &dl) == 0)
        ;
    ok = nslots >= n;
    pthread_mutex_unlock(&slots_mu);
    return ok;
}

static struct common_httpd_hold *slot_take(size_t i)
{
    struct common_httpd_hold *hd;

    pthread_mutex_lock(&slots_mu);
    hd = slots[i];
    slots[i] = NULL;
    pthread_mutex_unlock(&slots_mu);
    return hd;
}

/* GET /hold?i=N: held in slot N, with an extra header set before holding */
static void h_hold(void *ctx, const struct common_httpd_request *req,
                   struct common_httpd_response *resp)
{
    const char *i = common_httpd_query_arg(req, "i");
    long n = i ? strtol(i, NULL, 10) : 0;
    struct common_httpd_hold *hd;

    ck_assert_int_eq(common_httpd_set_header(resp, "X-Held", "yes"), COMMON_OK);
    hd = common_httpd_hold(req, resp);
    ck_assert_ptr_nonnull(hd);
    ck_assert_ptr_eq(common_httpd_hold(req, resp), hd); /* the same hold again */
    common_httpd_respondf(resp, 418, "ignored\n");      /* a held response is not sent */
    ck_assert(n >= 0 && n < MANY);
    pthread_mutex_lock(&slots_mu);
    ck_assert_ptr_null(slots[n]);
    slots[n] = hd;
    nslots++;
    pthread_cond_broadcast(&slots_cv);
    pthread_mutex_unlock(&slots_mu);
}

/* GET /self: held and released before the handler returns */
static void h_self(void *ctx, const struct common_httpd_request *req,
                   struct common_httpd_response *resp)
{
    struct common_httpd_hold *hd = common_httpd_hold(req, resp);

    ck_assert_ptr_nonnull(hd);
    ck_assert_int_eq(common_httpd_release(hd, 202, "application/json", "{\"self\":true}", 13),
                     COMMON_OK);
}

/* GET /race?us=N: the hold goes to the releaser thread, then the handler spins N µs */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct common_httpd_hold *hd;
    int quit;
} race = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static void h_race(void *ctx, const struct common_httpd_request *req,
                   struct common_httpd_response *resp)
{
    const char *us = common_httpd_query_arg(req, "us");
    struct common_httpd_hold *hd = common_httpd_hold(req, resp);
    struct timespec t0, t;
    long wait_ns = (us ? strtol(us, NULL, 10) : 0) * 1000;

    ck_assert_ptr_nonnull(hd);
    pthread_mutex_lock(&race.mu);
    race.hd = hd;
    pthread_cond_signal(&race.cv);
    pthread_mutex_unlock(&race.mu);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < wait_ns);
}

static void *race_releaser(void *arg)
{
    pthread_mutex_lock(&race.mu);
    for (;;) {
        while (!race.hd && !race.quit)
            pthread_cond_wait(&race.cv, &race.mu);
        if (race.quit)
            break;
        struct common_httpd_hold *hd = race.hd;
        race.hd = NULL;
        pthread_mutex_unlock(&race.mu);
        ck_assert_int_eq(common_httpd_release(hd, 200, NULL, "raced", 5), COMMON_OK);
        pthread_mutex_lock(&race.mu);
    }
    pthread_mutex_unlock(&race.mu);
    return NULL;
}

static void h_hello(void *ctx, const struct common_httpd_request *req,
                    struct common_httpd_response *resp)
{
    common_buf_puts(&resp->body, "hello", NULL);
}

static struct common_httpd *server_with(struct common_httpd_opts *o)
{
    struct common_error err = {0};
    struct common_httpd *h;

    o->address = "127.0.0.1:0";
    h = common_httpd_create(o, &err);
    ck_assert_msg(h != NULL, "%s", err.msg);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/hold", h_hold, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/self", h_self, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/race", h_race, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/hello", h_hello, NULL), 0);
    ck_assert_msg(common_httpd_start(h, &err) == COMMON_OK, "%s", err.msg);
    slots_reset();
    return h;
}

static struct common_httpd *server(void)
{
    struct common_httpd_opts o = common_httpd_opts_default();

    return server_with(&o);
}

/* ---- a client ---- */

struct reply {
    long status;
    CURLcode rc;
    char body[256];
    size_t len;
    char headers[2048];
    size_t hlen;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct reply *r = ud;
    size_t k = size * n, room = sizeof(r->body) - 1 - r->len;

    memcpy(r->body + r->len, p, k < room ? k : room);
    r->len += k < room ? k : room;
    r->body[r->len] = '\0';
    return k;
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

static int has_header(const struct reply *r, const char *line)
{
    const char *p = r->headers;
    size_t n = strlen(line);

    for (; (p = strchr(p, '\n')) != NULL; p++)
        if (strncasecmp(p + 1, line, n) == 0 && (p[1 + n] == '\r' || p[1 + n] == '\n'))
            return 1;
    return 0;
}

static CURL *easy(const char *url, struct reply *r, int tls)
{
    CURL *e = curl_easy_init();

    ck_assert_ptr_nonnull(e);
    memset(r, 0, sizeof(*r));
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (tls) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return e;
}

static void url_of(char *out, size_t size, const struct common_httpd *h, const char *scheme,
                   const char *path)
{
    snprintf(out, size, "%s://127.0.0.1:%d%s", scheme, common_httpd_port(h), path);
}

struct call {
    char url[128];
    int tls;
    struct reply r;
    pthread_t t;
};

static void *call_main(void *arg)
{
    struct call *c = arg;
    CURL *e = easy(c->url, &c->r, c->tls);

    c->r.rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &c->r.status);
    curl_easy_cleanup(e);
    return NULL;
}

static void call_start(struct call *c, const struct common_httpd *h, const char *scheme,
                       const char *path)
{
    url_of(c->url, sizeof(c->url), h, scheme, path);
    c->tls = strcmp(scheme, "https") == 0;
    ck_assert_int_eq(pthread_create(&c->t, NULL, call_main, c), 0);
}

static void get(const struct common_httpd *h, const char *path, struct reply *r)
{
    struct call c;

    call_start(&c, h, "http", path);
    pthread_join(c.t, NULL);
    *r = c.r;
}

static long threads_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long n = -1;

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "Threads:", 8) == 0)
            n = strtol(line + 8, NULL, 10);
    fclose(f);
    return n;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- tests ---- */

struct later {
    struct common_httpd_hold *hd;
    enum common_rc rc;
};

static void *release_later(void *arg)
{
    struct later *l = arg;

    usleep(100 * 1000);
    l->rc = common_httpd_release(l->hd, 201, "application/json", "{\"bound\":true}", 14);
    return NULL;
}

START_TEST(test_release_from_another_thread)
{
    struct common_httpd *h = server();
    struct call c;
    struct later l = {0};
    struct reply r;
    pthread_t t;
    double t0;

    ck_assert_uint_eq(common_httpd_held(h), 0);
    ck_assert_uint_eq(common_httpd_held(NULL), 0);
    t0 = now_s();
    call_start(&c, h, "http", "/hold?i=7");
    ck_assert(slots_wait(1, 10000));
    ck_assert_uint_eq(common_httpd_held(h), 1);
    l.hd = slot_take(7);
    ck_assert_int_eq(pthread_create(&t, NULL, release_later, &l), 0);
    pthread_join(c.t, NULL);
    pthread_join(t, NULL);
    ck_assert_int_eq(l.rc, COMMON_OK);
    ck_assert_int_eq(c.r.rc, CURLE_OK);
    ck_assert_int_eq(c.r.status, 201);
    ck_assert_str_eq(c.r.body, "{\"bound\":true}");
    ck_assert(has_header(&c.r, "Content-Type: application/json"));
    ck_assert(has_header(&c.r, "X-Held: yes"));
    ck_assert(now_s() - t0 >= 0.1);
    ck_assert_uint_eq(common_httpd_held(h), 0);

    /* released before the handler returned: answered when it returns, never suspended */
    get(h, "/self", &r);
    ck_assert_int_eq(r.rc, CURLE_OK);
    ck_assert_int_eq(r.status, 202);
    ck_assert_str_eq(r.body, "{\"self\":true}");
    ck_assert_uint_eq(common_httpd_held(h), 0);

    /* a bad release answers 500 and still consumes the hold */
    call_start(&c, h, "http", "/hold?i=3");
    ck_assert(slots_wait(2, 10000));
    ck_assert_int_eq(common_httpd_release(slot_take(3), 42, NULL, "x", 1), COMMON_EINVAL);
    pthread_join(c.t, NULL);
    ck_assert_int_eq(c.r.status, 500);
    ck_assert_str_eq(c.r.body, "500 internal server error\n");
    ck_assert_int_eq(common_httpd_release(NULL, 200, NULL, NULL, 0), COMMON_EINVAL);

    /* an empty answer */
    call_start(&c, h, "http", "/hold?i=5");
    ck_assert(slots_wait(3, 10000));
    ck_assert_int_eq(common_httpd_release(slot_take(5), 204, NULL, NULL, 0), COMMON_OK);
    pthread_join(c.t, NULL);
    ck_assert_int_eq(c.r.status, 204);
    ck_assert_uint_eq(c.r.len, 0);
    ck_assert_uint_eq(common_httpd_held(h), 0);
    common_httpd_destroy(h);
}
END_TEST

struct two {
    char url1[128], url2[128];
    struct reply r1, r2;
    long connects2;
};

/* a held request, then a plain one on the same (kept-alive) connection */
static void *two_main(void *arg)
{
    struct two *t = arg;
    CURL *e = easy(t->url1, &t->r1, 0);

    t->r1.rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &t->r1.status);
    memset(&t->r2, 0, sizeof(t->r2));
    curl_easy_setopt(e, CURLOPT_URL, t->url2);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t->r2);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &t->r2);
    t->r2.rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &t->r2.status);
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &t->connects2);
    curl_easy_cleanup(e);
    return NULL;
}

START_TEST(test_keepalive_after_hold)
{
    struct common_httpd *h = server();
    struct two t;
    pthread_t th;

    memset(&t, 0, sizeof(t));
    url_of(t.url1, sizeof(t.url1), h, "http", "/hold?i=1");
    url_of(t.url2, sizeof(t.url2), h, "http", "/hello");
    ck_assert_int_eq(pthread_create(&th, NULL, two_main, &t), 0);
    ck_assert(slots_wait(1, 10000));
    ck_assert_int_eq(common_httpd_release(slot_take(1), 200, "text/plain", "first", 5), COMMON_OK);
    pthread_join(th, NULL);
    ck_assert_int_eq(t.r1.rc, CURLE_OK);
    ck_assert_int_eq(t.r1.status, 200);
    ck_assert_str_eq(t.r1.body, "first");
    ck_assert_int_eq(t.r2.rc, CURLE_OK);
    ck_assert_int_eq(t.r2.status, 200);
    ck_assert_str_eq(t.r2.body, "hello");
    ck_assert_int_eq(t.connects2, 0); /* the connection was reused */
    common_httpd_destroy(h);
}
END_TEST

struct range {
    size_t from, to;
    int bad;
};

static void *release_range(void *arg)
{
    struct range *rg = arg;
    char body[32];

    for (size_t i = rg->from; i < rg->to; i++) {
        int n = snprintf(body, sizeof(body), "member %zu", i);
        if (common_httpd_release(slot_take(i), 200, "text/plain", body, (size_t)n) != COMMON_OK)
            rg->bad++;
    }
    return NULL;
}

START_TEST(test_many_held)
{
    struct common_httpd *h = server();
    struct reply *rs = calloc(MANY, sizeof(*rs));
    CURL **es = calloc(MANY, sizeof(*es));
    CURLM *m = curl_multi_init();
    struct range rg[4];
    pthread_t rt[4];
    long base, held_threads;
    int running = 1, done = 0;
    double end;
    CURLMsg *msg;
    char url[128], want[32];

    ck_assert_ptr_nonnull(rs);
    ck_assert_ptr_nonnull(es);
    ck_assert_ptr_nonnull(m);
    base = threads_now();
    for (size_t i = 0; i < MANY; i++) {
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/hold?i=%zu", common_httpd_port(h), i);
        es[i] = easy(url, &rs[i], 0);
        curl_easy_setopt(es[i], CURLOPT_PRIVATE, (void *)&rs[i]);
        ck_assert_int_eq(curl_multi_add_handle(m, es[i]), CURLM_OK);
    }
    /* drive the clients until every request is held */
    end = now_s() + 60;
    while (common_httpd_held(h) < MANY && now_s() < end) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 20, NULL);
    }
    ck_assert_uint_eq(common_httpd_held(h), MANY);
    ck_assert(slots_wait(MANY, 1000));
    held_threads = threads_now();
    fprintf(stderr, "test_many_held: %ld threads before, %ld with %d requests held\n", base,
            held_threads, MANY);
    /* acceptor + server threads, no thread per request */
    ck_assert_msg(held_threads <= base + 4 && held_threads < 16,
                  "threads: %ld with %d held requests (%ld before)", held_threads, MANY, base);
    /* release all at once from four threads while this one reads the answers */
    for (int k = 0; k < 4; k++) {
        rg[k] = (struct range){(size_t)k * MANY / 4, (size_t)(k + 1) * MANY / 4, 0};
        ck_assert_int_eq(pthread_create(&rt[k], NULL, release_range, &rg[k]), 0);
    }
    end = now_s() + 60;
    while (running && now_s() < end) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 20, NULL);
    }
    for (int k = 0; k < 4; k++) {
        pthread_join(rt[k], NULL);
        ck_assert_int_eq(rg[k].bad, 0);
    }
    ck_assert_int_eq(running, 0);
    while ((msg = curl_multi_info_read(m, &running)) != NULL)
        if (msg->msg == CURLMSG_DONE) {
            struct reply *r = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            r->rc = msg->data.result;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &r->status);
            done++;
        }
    ck_assert_int_eq(done, MANY);
    for (size_t i = 0; i < MANY; i++) {
        snprintf(want, sizeof(want), "member %zu", i);
        ck_assert_msg(rs[i].rc == CURLE_OK && rs[i].status == 200, "request %zu: %d %ld", i,
                      (int)rs[i].rc, rs[i].status);
        ck_assert_str_eq(rs[i].body, want);
        curl_multi_remove_handle(m, es[i]);
        curl_easy_cleanup(es[i]);
    }
    ck_assert_uint_eq(common_httpd_held(h), 0);
    curl_multi_cleanup(m);
    free(es);
    free(rs);
    common_httpd_destroy(h);
}
END_TEST

START_TEST(test_release_races_handler_return)
{
    struct common_httpd *h = server();
    pthread_t t;
    char url[128];
    struct reply r;
    CURL *e;

    race.quit = 0;
    ck_assert_int_eq(pthread_create(&t, NULL, race_releaser, NULL), 0);
    e = easy("http://127.0.0.1/", &r, 0);
    for (int i = 0; i < 400; i++) {
        /* the handler keeps running 0..99 us after handing the hold over: the release lands
         * before, during and after the suspension */
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/race?us=%d", common_httpd_port(h),
                 i % 4 == 0 ? 0 : (i * 37) % 100);
        memset(&r, 0, sizeof(r));
        curl_easy_setopt(e, CURLOPT_URL, url);
        r.rc = curl_easy_perform(e);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
        ck_assert_msg(r.rc == CURLE_OK && r.status == 200, "round %d: %d %ld", i, (int)r.rc,
                      r.status);
        ck_assert_str_eq(r.body, "raced");
    }
    curl_easy_cleanup(e);
    pthread_mutex_lock(&race.mu);
    race.quit = 1;
    pthread_cond_signal(&race.cv);
    pthread_mutex_unlock(&race.mu);
    pthread_join(t, NULL);
    ck_assert_uint_eq(common_httpd_held(h), 0);
    common_httpd_destroy(h);
}
END_TEST

/* GET /slowhold?i=N: holds after 300 ms (common_httpd_stop has begun by then) */
static void h_slowhold(void *ctx, const struct common_httpd_request *req,
                       struct common_httpd_response *resp)
{
    usleep(300 * 1000);
    h_hold(ctx, req, resp);
}

START_TEST(test_stop_answers_held)
{
    struct common_httpd_opts o = common_httpd_opts_default();
    struct common_error err = {0};
    struct common_httpd *h;
    struct call c[6];
    char path[32];
    double t0;

    o.address = "127.0.0.1:0";
    h = common_httpd_create(&o, &err);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/hold", h_hold, NULL), 0);
    ck_assert_int_eq(common_httpd_route(h, "GET", "/slowhold", h_slowhold, NULL), 0);
    ck_assert_int_eq(common_httpd_start(h, &err), COMMON_OK);
    slots_reset();
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof(path), "/hold?i=%d", i);
        call_start(&c[i], h, "http", path);
    }
    ck_assert(slots_wait(5, 10000));
    ck_assert_uint_eq(common_httpd_held(h), 5);
    call_start(&c[5], h, "http", "/slowhold?i=5");
    usleep(100 * 1000);
    t0 = now_s();
    common_httpd_stop(h); /* answers the five, then waits for /slowhold, held while stopping */
    ck_assert_msg(now_s() - t0 < 5, "stop took %.1f s", now_s() - t0);
    for (int i = 0; i < 6; i++) {
        pthread_join(c[i].t, NULL);
        ck_assert_int_eq(c[i].r.rc, CURLE_OK);
        ck_assert_int_eq(c[i].r.status, 503);
        ck_assert_str_eq(c[i].r.body, "503 server stopping\n");
        ck_assert(has_header(&c[i].r, "Connection: close"));
        ck_assert(has_header(&c[i].r, "X-Held: yes"));
    }
    ck_assert_uint_eq(common_httpd_held(h), 0);
    /* released after stop: ECONFLICT; 3 and 4 are never released: destroy frees them */
    ck_assert_int_eq(common_httpd_release(slot_take(0), 200, NULL, "late", 4), COMMON_ECONFLICT);
    ck_assert_int_eq(common_httpd_release(slot_take(1), 200, NULL, NULL, 0), COMMON_ECONFLICT);
    ck_assert_int_eq(common_httpd_release(slot_take(2), 99, NULL, NULL, 0), COMMON_ECONFLICT);
    ck_assert_int_eq(common_httpd_release(slot_take(5), 200, NULL, NULL, 0), COMMON_ECONFLICT);
    common_httpd_destroy(h);
}
END_TEST

/* a raw client: connect and send one request; the socket */
static int raw_request(const struct common_httpd *h, const char *path)
{
    struct sockaddr_in a = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char req[256];
    int n;

    ck_assert_int_ge(fd, 0);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)common_httpd_port(h));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    ck_assert_int_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
    return fd;
}

START_TEST(test_client_gone_while_held)
{
    struct common_httpd *h = server();
    struct linger lg = {1, 0};
    struct reply r;
    int fd0, fd1;
    double t0;

    fd0 = raw_request(h, "/hold?i=0");
    fd1 = raw_request(h, "/hold?i=1");
    ck_assert(slots_wait(2, 10000));
    ck_assert_uint_eq(common_httpd_held(h), 2);
    /* one resets, one closes cleanly; the server notices neither while they are held */
    ck_assert_int_eq(setsockopt(fd0, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    close(fd0);
    close(fd1);
    usleep(100 * 1000);
    ck_assert_uint_eq(common_httpd_held(h), 2);
    ck_assert_int_eq(common_httpd_release(slot_take(0), 200, NULL, "nobody", 6), COMMON_OK);
    ck_assert_int_eq(common_httpd_release(slot_take(1), 200, NULL, "nobody", 6), COMMON_OK);
    ck_assert_uint_eq(common_httpd_held(h), 0);
    get(h, "/hello", &r);
    ck_assert_int_eq(r.status, 200);
    /* both requests completed: stop has nothing in flight to wait for (drain_ms is 10 s) */
    usleep(200 * 1000);
    t0 = now_s();
    common_httpd_stop(h);
    ck_assert_msg(now_s() - t0 < 2, "stop took %.1f s", now_s() - t0);
    common_httpd_destroy(h); /* LeakSanitizer: the holds were freed */
}
END_TEST

/* ---- TLS: a held request across a certificate reload ---- */

static void write_self_signed(const char *cert_path, const char *key_path)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *n;
    FILE *f;

    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1, -1,
                               0);
    X509_set_issuer_name(x, n);
    ck_assert_int_gt(X509_sign(x, k, EVP_sha256()), 0);
    f = fopen(cert_path, "w");
    ck_assert_ptr_nonnull(f);
    PEM_write_X509(f, x);
    fclose(f);
    f = fopen(key_path, "w");
    ck_assert_ptr_nonnull(f);
    PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(k);
}

START_TEST(test_hold_across_reload)
{
    struct common_httpd_opts o = common_httpd_opts_default();
    struct common_error err = {0};
    struct common_httpd *h;
    char dir[] = "/tmp/httpd-hold-XXXXXX", cert[64], key[64];
    struct call c, c2, c3;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    write_self_signed(cert, key);
    o.tls_cert_file = cert;
    o.tls_key_file = key;
    h = server_with(&o);
    call_start(&c, h, "https", "/hold?i=0");
    ck_assert(slots_wait(1, 10000));
    write_self_signed(cert, key);
    ck_assert_msg(common_httpd_reload_tls(h, &err) == COMMON_OK, "%s", err.msg);
    /* the new daemon serves, the old one keeps its held request past the reaper's turns */
    call_start(&c2, h, "https", "/hold?i=1");
    ck_assert(slots_wait(2, 10000));
    sleep(2);
    ck_assert_uint_eq(common_httpd_held(h), 2);
    ck_assert_int_eq(common_httpd_release(slot_take(0), 200, NULL, "old", 3), COMMON_OK);
    pthread_join(c.t, NULL);
    ck_assert_int_eq(c.r.rc, CURLE_OK);
    ck_assert_int_eq(c.r.status, 200);
    ck_assert_str_eq(c.r.body, "old");
    ck_assert(has_header(&c.r, "Connection: close")); /* from the retired daemon */
    sleep(2);                                         /* the reaper stops the old daemon */
    ck_assert_int_eq(common_httpd_release(slot_take(1), 200, NULL, "new", 3), COMMON_OK);
    pthread_join(c2.t, NULL);
    ck_assert_int_eq(c2.r.status, 200);
    ck_assert_str_eq(c2.r.body, "new");
    ck_assert(!has_header(&c2.r, "Connection: close"));
    call_start(&c3, h, "https", "/hello");
    pthread_join(c3.t, NULL);
    ck_assert_int_eq(c3.r.status, 200);
    common_httpd_destroy(h);
    unlink(cert);
    unlink(key);
    rmdir(dir);
}
END_TEST

static Suite *hold_suite(void)
{
    Suite *s = suite_create("httpd_hold");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_release_from_another_thread);
    tcase_add_test(tc, test_keepalive_after_hold);
    tcase_add_test(tc, test_many_held);
    tcase_add_test(tc, test_release_races_handler_return);
    tcase_add_test(tc, test_stop_answers_held);
    tcase_add_test(tc, test_client_gone_while_held);
    tcase_add_test(tc, test_hold_across_reload);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc;
    struct rlimit rl;

    /* 1,000 held requests are 2,000 sockets in this process */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    curl_global_init(CURL_GLOBAL_ALL);
    rc = testutil_run_suite(hold_suite());
    curl_global_cleanup();
    return rc;
}
