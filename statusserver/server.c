/*
 * statusserver/server.c - the status server's glue (see server.h): HTTPS routes, worker threads
 * and the two API calls; decisions are core.h's.
 */
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/httpd.h"
#include "common/log.h"
#include "statusserver/core.h"
#include "statusserver/server.h"

/* Accepted tokens, remembered for a while so a training loop's reports cost one API call each
 * (the write), as with Trainer's local verification: keyed by SHA-256 of token, namespace and
 * name; a slot is reused round-robin. */
#define REVIEW_CACHE_SLOTS 512
#define REVIEW_CACHE_TTL_MS 30000

struct review_slot {
    unsigned char key[32];
    int64_t until_ms; /* 0: empty */
};

/* one held request on its way through the workers */
struct ss_job {
    struct ss_flow flow;
    struct common_httpd_hold *hold;
    char remote[64];
    struct ss_job *next;
};

struct ss_server {
    struct common_kube *kube;
    struct common_httpd *http;
    struct common_metric *requests, *reviews;
    char *address;
    pthread_mutex_t cache_mu;
    struct review_slot cache[REVIEW_CACHE_SLOTS];
    size_t cache_next;
    pthread_t *threads;
    unsigned nworkers, started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct ss_job *head, *tail;
    size_t queued;
    int stopping;
};

static void count(struct ss_server *s, int code)
{
    char c[16];
    const char *labels[] = {c};
    if (!s->requests)
        return;
    snprintf(c, sizeof(c), "%d", code);
    common_metric_add(s->requests, labels, 1);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void count_review(struct ss_server *s, const char *result)
{
    const char *labels[] = {result};
    if (s->reviews)
        common_metric_add(s->reviews, labels, 1);
}

/* the cache key of the flow's token for its TrainJob; -1 when it cannot be made */
static int review_key(const struct ss_flow *f, unsigned char key[32])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
             EVP_DigestUpdate(ctx, f->token, strlen(f->token) + 1) &&
             EVP_DigestUpdate(ctx, f->ns, strlen(f->ns) + 1) &&
             EVP_DigestUpdate(ctx, f->name, strlen(f->name) + 1) &&
             EVP_DigestFinal_ex(ctx, key, &len) && len == 32;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : -1;
}

static int review_cached(struct ss_server *s, const unsigned char key[32])
{
    int64_t now = mono_ms();
    int hit = 0;
    pthread_mutex_lock(&s->cache_mu);
    for (size_t i = 0; i < REVIEW_CACHE_SLOTS && !hit; i++)
        hit = s->cache[i].until_ms > now && memcmp(s->cache[i].key, key, 32) == 0;
    pthread_mutex_unlock(&s->cache_mu);
    return hit;
}

static void review_remember(struct ss_server *s, const unsigned char key[32])
{
    pthread_mutex_lock(&s->cache_mu);
    memcpy(s->cache[s->cache_next].key, key, 32);
    s->cache[s->cache_next].until_ms = mono_ms() + REVIEW_CACHE_TTL_MS;
    s->cache_next = (s->cache_next + 1) % REVIEW_CACHE_SLOTS;
    pthread_mutex_unlock(&s->cache_mu);
}

/* the log line for an answer */
static void log_answer(const struct ss_flow *f, const char *remote)
{
    char code[16];
    const char *who = f->ns[0] ? f->ns : "", *what = f->name[0] ? f->name : "";
    snprintf(code, sizeof(code), "%d", f->ans.code);
    if (f->ans.code == 200)
        common_log(COMMON_LOG_DEBUG, "trainer status written", "namespace", who, "trainJob", what,
                   "from", remote, NULL);
    else
        common_log(f->ans.code >= 500 ? COMMON_LOG_ERROR : COMMON_LOG_WARN,
                   "trainer status request refused", "code", code, "namespace", who, "trainJob",
                   what, "from", remote, "message", f->ans.message, "reason",
                   f->why[0] ? f->why : f->ans.message, NULL);
}

/* POST the TokenReview; the answer into *out (new reference) */
static long create_review(struct ss_server *s, const json_t *review, json_t **out)
{
    static const char path[] = "/apis/authentication.k8s.io/v1/tokenreviews";
    struct common_buf resp;
    struct common_error e;
    char *body = json_dumps(review, JSON_COMPACT);
    long status = 0;

    *out = NULL;
    if (!body)
        return 0;
    common_buf_init(&resp, 1u << 20);
    if (common_kube_request(s->kube, "POST", path, "application/json", body, strlen(body), NULL,
                            &resp, &status, &e) == COMMON_OK)
        *out = json_loadb(resp.data ? resp.data : "", resp.len, 0, NULL);
    else
        common_log(COMMON_LOG_ERROR, "TokenReview failed", "error", e.msg, NULL);
    common_buf_free(&resp);
    common_free(body);
    return status;
}

/* server-side apply of the status; the API server's answer body into resp */
static long apply_status(struct ss_server *s, const struct ss_flow *f, struct common_buf *resp)
{
    char path[1024];
    struct common_error e;
    char *body = json_dumps(f->apply, JSON_COMPACT);
    long status = 0;
    size_t n;

    if (!body)
        return 0;
    if (common_kube_path(&common_kube_trainjobs, f->ns, f->name, "status", path, sizeof(path)))
        goto out;
    n = strlen(path);
    snprintf(path + n, sizeof(path) - n, "?fieldManager=%s&force=true", SS_FIELD_MANAGER);
    if (common_kube_request(s->kube, "PATCH", path, "application/apply-patch+yaml", body,
                            strlen(body), NULL, resp, &status, &e) != COMMON_OK &&
        status != 404 && status != 400 && status != 422)
        common_log(COMMON_LOG_ERROR, "trainer status apply failed", "error", e.msg, NULL);
out:
    common_free(body);
    return status;
}

/* a worker's whole job: review, maybe apply, answer */
static void run_job(struct ss_server *s, struct ss_job *j)
{
    enum ss_next next;
    unsigned char key[32];
    int keyed = review_key(&j->flow, key) == 0;
    long st;
    char *answer;

    if (keyed && review_cached(s, key)) {
        count_review(s, "cached");
        next = ss_flow_authorized(&j->flow);
    } else {
        json_t *review = NULL;
        int answered;
        st = create_review(s, j->flow.review, &review);
        answered = review != NULL && st >= 200 && st <= 299;
        next = ss_flow_reviewed(&j->flow, st, review);
        json_decref(review);
        if (!answered) {
            count_review(s, "failed");
        } else if (j->flow.ans.code == 403) {
            count_review(s, "refused");
        } else {
            count_review(s, "allowed");
            if (keyed)
                review_remember(s, key);
        }
    }
    if (next == SS_NEXT_APPLY) {
        struct common_buf resp;
        common_buf_init(&resp, 1u << 20);
        st = apply_status(s, &j->flow, &resp);
        ss_flow_applied(&j->flow, st, resp.data);
        common_buf_free(&resp);
    }
    answer = ss_flow_response(&j->flow);
    common_httpd_release(j->hold, answer ? j->flow.ans.code : 500, "application/json",
                         answer ? answer : "", answer ? strlen(answer) : 0);
    count(s, answer ? j->flow.ans.code : 500);
    log_answer(&j->flow, j->remote);
    common_free(answer);
}

static void free_job(struct ss_job *j)
{
    ss_flow_free(&j->flow);
    common_free(j);
}

static void *worker(void *arg)
{
    struct ss_server *s = arg;
    for (;;) {
        struct ss_job *j;
        pthread_mutex_lock(&s->mu);
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->cv, &s->mu);
        j = s->head;
        if (j) {
            s->head = j->next;
            if (!s->head)
                s->tail = NULL;
            s->queued--;
        }
        pthread_mutex_unlock(&s->mu);
        if (!j)
            return NULL; /* stopping and nothing queued */
        if (s->stopping) {
            /* the HTTP server has answered it 503 already: give the hold back */
            common_httpd_release(j->hold, 503, "application/json", "", 0);
        } else {
            run_job(s, j);
        }
        free_job(j);
    }
}

/* answer on the HTTP thread */
static void respond(struct ss_server *s, struct ss_flow *f, const char *remote,
                    struct common_httpd_response *resp)
{
    char *body = ss_flow_response(f);
    resp->status = body ? f->ans.code : 500;
    resp->content_type = "application/json";
    if (!body || common_buf_append(&resp->body, body, strlen(body), NULL) != COMMON_OK)
        resp->status = 500;
    count(s, resp->status);
    log_answer(f, remote);
    common_free(body);
}

static void handle(void *ctx, const struct common_httpd_request *hr,
                   struct common_httpd_response *resp)
{
    struct ss_server *s = ctx;
    struct ss_request r = {0};
    struct ss_job *j = common_calloc(1, sizeof(*j));
    const char *remote = hr->remote_addr ? hr->remote_addr : "";

    if (!j) {
        common_httpd_respondf(resp, 500, "out of memory\n");
        count(s, 500);
        return;
    }
    snprintf(j->remote, sizeof(j->remote), "%s", remote);
    r.method = hr->method;
    r.path = hr->path;
    r.content_length = common_httpd_header(hr, "Content-Length");
    r.authorization = common_httpd_header(hr, "Authorization");
    r.body = hr->body;
    r.body_len = hr->body_len;
    if (ss_flow_start(&j->flow, &r) == SS_NEXT_ANSWER)
        goto answer_now;
    pthread_mutex_lock(&s->mu);
    if (s->queued >= SS_SERVER_QUEUE_MAX || s->stopping) {
        pthread_mutex_unlock(&s->mu);
        j->flow.ans.code = 503;
        j->flow.ans.reason = "ServiceUnavailable";
        snprintf(j->flow.ans.message, sizeof(j->flow.ans.message),
                 "Too many status reports in flight");
        goto answer_now;
    }
    j->hold = common_httpd_hold(hr, resp);
    if (!j->hold) {
        pthread_mutex_unlock(&s->mu);
        j->flow.ans.code = 500;
        j->flow.ans.reason = "InternalError";
        snprintf(j->flow.ans.message, sizeof(j->flow.ans.message), "Internal error");
        goto answer_now;
    }
    if (s->tail)
        s->tail->next = j;
    else
        s->head = j;
    s->tail = j;
    s->queued++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return;
answer_now:
    respond(s, &j->flow, remote, resp);
    free_job(j);
}

struct ss_server *ss_server_create(const struct ss_server_opts *opts, struct common_error *err)
{
    static const char *const labels[] = {"code", NULL};
    static const char *const review_labels[] = {"result", NULL};
    struct common_httpd_opts ho = {0};
    struct ss_server *s;

    if (!opts || !opts->kube || !opts->tls_cert_file || !opts->tls_key_file ||
        !opts->tls_cert_file[0] || !opts->tls_key_file[0]) {
        common_error_set(err, COMMON_EINVAL,
                         "trainer status server: an API client and a TLS pair are required");
        return NULL;
    }
    s = common_calloc(1, sizeof(*s));
    if (!s)
        goto nomem;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->cache_mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->kube = opts->kube;
    s->nworkers = opts->workers ? opts->workers : 4;
    s->threads = common_calloc(s->nworkers, sizeof(*s->threads));
    s->address = common_strdup(opts->address && opts->address[0] ? opts->address : ":10443");
    if (!s->threads || !s->address)
        goto nomem;
    if (opts->metrics) {
        s->requests = common_metrics_counter(
            opts->metrics, "trainsched_trainer_status_requests_total",
            "Requests to the TrainJob status server (status.trainerStatus), by HTTP status "
            "answered.",
            labels);
        s->reviews = common_metrics_counter(
            opts->metrics, "trainsched_trainer_status_token_reviews_total",
            "Tokens of status reports checked, by result: allowed, refused, failed (the "
            "TokenReview could not be made) or cached (accepted for the same TrainJob within 30 s, "
            "no TokenReview).",
            review_labels);
        if (!s->requests || !s->reviews)
            goto nomem;
    }
    ho.address = s->address;
    ho.tls_cert_file = opts->tls_cert_file;
    ho.tls_key_file = opts->tls_key_file;
    ho.max_body = 2 * SS_MAX_BODY; /* a chunked body is read up to the cap (core.h) */
    ho.threads = 2;
    ho.connection_timeout_s = 10; /* Trainer's read and write timeouts */
    s->http = common_httpd_create(&ho, err);
    if (!s->http)
        goto fail;
    if (common_httpd_route(s->http, NULL, "/*", handle, s)) {
        common_error_set(err, COMMON_ENOMEM, "trainer status server: cannot add its route");
        goto fail;
    }
    return s;
nomem:
    common_error_set(err, COMMON_ENOMEM, "trainer status server: out of memory");
fail:
    ss_server_destroy(s);
    return NULL;
}

enum common_rc ss_server_start(struct ss_server *s, struct common_error *err)
{
    enum common_rc rc;
    for (; s->started < s->nworkers; s->started++)
        if (pthread_create(&s->threads[s->started], NULL, worker, s) != 0)
            return common_error_set(err, COMMON_ENOMEM,
                                    "trainer status server: cannot start a worker thread");
    rc = common_httpd_start(s->http, err);
    if (rc == COMMON_OK)
        common_log(COMMON_LOG_INFO, "trainer status server listening", "address", s->address, NULL);
    return rc;
}

int ss_server_port(const struct ss_server *s)
{
    return s ? common_httpd_port(s->http) : -1;
}

enum common_rc ss_server_reload_tls(struct ss_server *s, struct common_error *err)
{
    return common_httpd_reload_tls(s->http, err);
}

void ss_server_destroy(struct ss_server *s)
{
    if (!s)
        return;
    if (s->http)
        common_httpd_stop(s->http); /* held requests are answered 503 */
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (unsigned i = 0; i < s->started; i++)
        pthread_join(s->threads[i], NULL);
    while (s->head) { /* no worker ever started: give the holds back */
        struct ss_job *j = s->head;
        s->head = j->next;
        common_httpd_release(j->hold, 503, "application/json", "", 0);
        free_job(j);
    }
    common_httpd_destroy(s->http);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->cache_mu);
    pthread_cond_destroy(&s->cv);
    common_free(s->threads);
    common_free(s->address);
    common_free(s);
}
