/*
 * common/kube.c - see kube.h. libcurl easy handles share one connection cache (CURLSH) and one
 * rate limiter; watches stream through a write callback that splits JSON lines or protobuf
 * frames into events.
 */
#include "common/kube.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/log.h"

const struct common_kube_resource common_kube_pods = {"", "v1", "pods", 1};
const struct common_kube_resource common_kube_nodes = {"", "v1", "nodes", 0};
const struct common_kube_resource common_kube_namespaces = {"", "v1", "namespaces", 0};
const struct common_kube_resource common_kube_configmaps = {"", "v1", "configmaps", 1};
const struct common_kube_resource common_kube_secrets = {"", "v1", "secrets", 1};
const struct common_kube_resource common_kube_leases = {"coordination.k8s.io", "v1", "leases", 1};
const struct common_kube_resource common_kube_events = {"events.k8s.io", "v1", "events", 1};
const struct common_kube_resource common_kube_trainjobs = {"trainer.kubeflow.org", "v1alpha1",
                                                           "trainjobs", 1};
const struct common_kube_resource common_kube_trainingruntimes = {
    "trainer.kubeflow.org", "v1alpha1", "trainingruntimes", 1};
const struct common_kube_resource common_kube_clustertrainingruntimes = {
    "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", 0};
const struct common_kube_resource common_kube_jobsets = {"jobset.x-k8s.io", "v1alpha2", "jobsets",
                                                         1};
const struct common_kube_resource common_kube_podgroups = {"scheduling.x-k8s.io", "v1alpha1",
                                                           "podgroups", 1};

struct common_kube {
    char *server;
    struct curl_blob ca_blob, cert_blob, key_blob;
    char *ca_file, *cert_file, *key_file;
    int insecure;
    char *token_file;
    char *token; /* current bearer token (static or read from token_file) */
    time_t token_mtime;
    long token_mtime_ns;
    pthread_mutex_t token_lock;
    struct common_kube_opts opts;
    char user_agent[128];
    CURLSH *share;
    pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
    /* token bucket */
    pthread_mutex_t rl_lock;
    double tokens, last;
    /* common_kube_cancel_after: CLOCK_MONOTONIC nanoseconds by which every call ends; 0 none */
    _Atomic long long cutoff_ns;
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the cutoff of common_kube_cancel_after in mono_now() seconds, 0 when none is set */
static double cutoff_s(struct common_kube *k)
{
    long long ns = atomic_load(&k->cutoff_ns);
    return ns ? (double)ns / 1e9 : 0;
}

static int past_cutoff(struct common_kube *k)
{
    double c = cutoff_s(k);
    return c > 0 && mono_now() >= c;
}

/* sleep s seconds, in slices of at most 50 ms, ending early once k's cutoff has passed */
static void sleep_s(struct common_kube *k, double s)
{
    double end = mono_now() + s;
    for (;;) {
        double left = end - mono_now();
        struct timespec ts;
        if (left <= 0 || past_cutoff(k))
            return;
        if (left > 0.05)
            left = 0.05;
        ts.tv_sec = 0;
        ts.tv_nsec = (long)(left * 1e9);
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
            ;
    }
}

void common_kube_cancel_after(struct common_kube *k, long ms)
{
    if (!k)
        return;
    atomic_store(&k->cutoff_ns,
                 (long long)((mono_now() + (double)(ms > 0 ? ms : 0) / 1000.0) * 1e9));
}

int common_kube_canceled(struct common_kube *k)
{
    return k && past_cutoff(k);
}

struct common_kube_opts common_kube_opts_default(void)
{
    struct common_kube_opts o;
    o.qps = 50;
    o.burst = 100;
    o.max_retries = 5;
    o.timeout_ms = 30000;
    o.max_body = (size_t)256 << 20;
    o.max_watch_event = (size_t)16 << 20;
    o.user_agent = NULL;
    return o;
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
    struct common_kube *k = ud;
    (void)h;
    (void)access;
    pthread_mutex_lock(&k->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    struct common_kube *k = ud;
    (void)h;
    pthread_mutex_unlock(&k->share_locks[data]);
}

static int copy_blob(struct curl_blob *b, const char *data, size_t len)
{
    if (!data)
        return 0;
    b->data = common_malloc(len);
    if (!b->data)
        return -1;
    memcpy(b->data, data, len);
    b->len = len;
    b->flags = CURL_BLOB_NOCOPY;
    return 0;
}

static char *dup_or_null(const char *s, int *fail)
{
    char *d;
    if (!s)
        return NULL;
    d = common_strdup(s);
    if (!d)
        *fail = 1;
    return d;
}

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void curl_global(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, global_init);
}

struct common_kube *common_kube_client_create(const struct common_kubeconfig *cfg,
                                              const struct common_kube_opts *opts,
                                              struct common_error *err)
{
    struct common_kube *k;
    int fail = 0;

    if (!cfg || !cfg->server || strncmp(cfg->server, "https://", 8) != 0) {
        common_error_set(err, COMMON_EINVAL, "kubeconfig: server \"%s\" must be an https:// URL",
                         cfg && cfg->server ? cfg->server : "");
        return NULL;
    }
    curl_global();
    k = common_calloc(1, sizeof(*k));
    if (!k) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    k->opts = opts ? *opts : common_kube_opts_default();
    if (k->opts.qps <= 0)
        k->opts.qps = 50;
    if (k->opts.burst <= 0)
        k->opts.burst = 1;
    if (k->opts.max_body == 0)
        k->opts.max_body = (size_t)256 << 20;
    if (k->opts.max_watch_event == 0)
        k->opts.max_watch_event = (size_t)16 << 20;
    if (k->opts.timeout_ms <= 0)
        k->opts.timeout_ms = 30000;
    snprintf(k->user_agent, sizeof(k->user_agent), "%s",
             k->opts.user_agent ? k->opts.user_agent : "trainsched/" TS_VERSION);
    k->server = dup_or_null(cfg->server, &fail);
    {
        size_t n = k->server ? strlen(k->server) : 0;
        while (n > 0 && k->server[n - 1] == '/')
            k->server[--n] = '\0';
    }
    k->ca_file = dup_or_null(cfg->ca_file, &fail);
    k->cert_file = dup_or_null(cfg->cert_file, &fail);
    k->key_file = dup_or_null(cfg->key_file, &fail);
    k->token_file = dup_or_null(cfg->token_file, &fail);
    k->token = dup_or_null(cfg->token, &fail);
    k->insecure = cfg->insecure;
    if (copy_blob(&k->ca_blob, cfg->ca_data, cfg->ca_data_len) ||
        copy_blob(&k->cert_blob, cfg->cert_data, cfg->cert_data_len) ||
        copy_blob(&k->key_blob, cfg->key_data, cfg->key_data_len))
        fail = 1;
    pthread_mutex_init(&k->token_lock, NULL);
    pthread_mutex_init(&k->rl_lock, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&k->share_locks[i], NULL);
    k->tokens = k->opts.burst;
    k->last = mono_now();
    k->share = curl_share_init();
    if (!k->share || fail) {
        common_kube_client_destroy(k);
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    curl_share_setopt(k->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(k->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(k->share, CURLSHOPT_USERDATA, k);
    curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    return k;
}

void common_kube_client_destroy(struct common_kube *k)
{
    if (!k)
        return;
    if (k->share)
        curl_share_cleanup(k->share);
    common_free(k->server);
    common_free(k->ca_file);
    common_free(k->cert_file);
    common_free(k->key_file);
    common_free(k->token_file);
    common_free(k->token);
    common_free(k->ca_blob.data);
    common_free(k->cert_blob.data);
    common_free(k->key_blob.data);
    pthread_mutex_destroy(&k->token_lock);
    pthread_mutex_destroy(&k->rl_lock);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&k->share_locks[i]);
    common_free(k);
}

int common_kube_path(const struct common_kube_resource *r, const char *ns, const char *name,
                     const char *subresource, char *buf, size_t size)
{
    int n;
    size_t len;

    if (r->group[0])
        n = snprintf(buf, size, "/apis/%s/%s", r->group, r->version);
    else
        n = snprintf(buf, size, "/api/%s", r->version);
    if (n < 0 || (size_t)n >= size)
        return -1;
    len = (size_t)n;
    if (r->namespaced && ns && *ns) {
        n = snprintf(buf + len, size - len, "/namespaces/%s", ns);
        if (n < 0 || (size_t)n >= size - len)
            return -1;
        len += (size_t)n;
    }
    n = snprintf(buf + len, size - len, "/%s", r->resource);
    if (n < 0 || (size_t)n >= size - len)
        return -1;
    len += (size_t)n;
    if (name) {
        n = snprintf(buf + len, size - len, "/%s%s%s", name, subresource ? "/" : "",
                     subresource ? subresource : "");
        if (n < 0 || (size_t)n >= size - len)
            return -1;
    }
    return 0;
}

/* ---- rate limiter and token ---- */

static void rate_wait(struct common_kube *k)
{
    double wait = 0;

    pthread_mutex_lock(&k->rl_lock);
    {
        double now = mono_now();
        k->tokens += (now - k->last) * k->opts.qps;
        if (k->tokens > k->opts.burst)
            k->tokens = k->opts.burst;
        k->last = now;
        k->tokens -= 1;
        if (k->tokens < 0)
            wait = -k->tokens / k->opts.qps;
    }
    pthread_mutex_unlock(&k->rl_lock);
    sleep_s(k, wait);
}

/* the bearer header value into buf ("" when none); re-reads the token file when it changed
 * or when force is set */
static void bearer(struct common_kube *k, int force, char *buf, size_t size)
{
    buf[0] = '\0';
    pthread_mutex_lock(&k->token_lock);
    if (k->token_file) {
        struct stat st;
        if (stat(k->token_file, &st) == 0 &&
            (force || !k->token || st.st_mtim.tv_sec != k->token_mtime ||
             st.st_mtim.tv_nsec != k->token_mtime_ns)) {
            FILE *f = fopen(k->token_file, "r");
            if (f) {
                char t[16384];
                size_t n = fread(t, 1, sizeof(t) - 1, f);
                fclose(f);
                t[n] = '\0';
                while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
                    t[--n] = '\0';
                char *nt = common_strdup(t);
                if (nt) {
                    common_free(k->token);
                    k->token = nt;
                    k->token_mtime = st.st_mtim.tv_sec;
                    k->token_mtime_ns = st.st_mtim.tv_nsec;
                }
            }
        }
    }
    if (k->token && k->token[0])
        snprintf(buf, size, "Authorization: Bearer %s", k->token);
    pthread_mutex_unlock(&k->token_lock);
}

/* ---- one transfer ---- */

struct xfer {
    struct common_buf *body;
    int too_big;
    double retry_after;
    struct common_buf *warn; /* Warning: header values, one a line; NULL: not kept */
    /* watch */
    struct common_kube *k;
    common_kube_watch_fn fn;
    void *ctx;
    int protobuf;
    struct common_buf line;
    enum common_rc watch_rc;
    struct common_error *err;
    int stopped;
    volatile int *stop;
    double last_byte;
    double stall_s;
    int stalled;
    int cancelled; /* the client's cutoff passed (common_kube_cancel_after) */
    CURL *handle;
    int checked; /* 1: 2xx stream, 2: error body */
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;

    if (common_buf_append(x->body, ptr, n, NULL)) {
        x->too_big = 1;
        return 0;
    }
    return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;

    if (n > 12 && strncasecmp(ptr, "Retry-After:", 12) == 0) {
        char tmp[32];
        size_t l = n - 12 < sizeof(tmp) - 1 ? n - 12 : sizeof(tmp) - 1;
        memcpy(tmp, ptr + 12, l);
        tmp[l] = '\0';
        x->retry_after = strtod(tmp, NULL);
    }
    if (x->warn && n > 8 && strncasecmp(ptr, "Warning:", 8) == 0) {
        size_t b = 8, e = n;
        while (b < e && (ptr[b] == ' ' || ptr[b] == '\t'))
            b++;
        while (e > b && (ptr[e - 1] == '\r' || ptr[e - 1] == '\n' || ptr[e - 1] == ' '))
            e--;
        /* a full buffer drops the rest: warnings are informational */
        if (common_buf_append(x->warn, ptr + b, e - b, NULL) == 0)
            common_buf_append(x->warn, "\n", 1, NULL);
    }
    return n;
}

/* requests: end the transfer once the client's cutoff has passed (a cutoff may be set while
 * the transfer runs; libcurl calls this at least once a second) */
static int on_request_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return past_cutoff(ud) ? 1 : 0;
}

static CURL *easy(struct common_kube *k, const char *method, const char *url,
                  struct curl_slist *hdrs)
{
    CURL *h = curl_easy_init();

    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_SHARE, k->share);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, k->user_agent);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    /* the shared cache keeps enough connections for concurrent callers plus long watches
     * (libcurl's default of 5 made nearly every request past 5 at once a new TLS handshake) */
    curl_easy_setopt(h, CURLOPT_MAXCONNECTS, 64L);
    if (strcmp(method, "GET") != 0)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (k->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (k->ca_blob.data)
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &k->ca_blob);
    else if (k->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, k->ca_file);
    if (k->cert_blob.data) {
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &k->cert_blob);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (k->cert_file) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, k->cert_file);
    }
    if (k->key_blob.data) {
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &k->key_blob);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (k->key_file) {
        curl_easy_setopt(h, CURLOPT_SSLKEY, k->key_file);
    }
    return h;
}

static enum common_rc map_status(long status, const char *reason)
{
    switch (status) {
    case 400:
    case 422:
        return COMMON_EINVAL;
    case 401:
    case 403:
        return COMMON_EUNAUTHORIZED;
    case 404:
        return COMMON_ENOTFOUND;
    case 409:
        return reason && strcmp(reason, "AlreadyExists") == 0 ? COMMON_EEXISTS : COMMON_ECONFLICT;
    case 410:
        return COMMON_EGONE;
    case 413:
        return COMMON_ETOOBIG;
    case 504:
        return COMMON_ETIMEOUT;
    default:
        return COMMON_EAPI;
    }
}

/* Status body -> error; returns the mapped code */
static enum common_rc status_error(const char *method, const char *path, long status,
                                   const struct common_buf *body, struct common_error *err)
{
    json_t *st = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
    const char *reason = json_string_value(json_object_get(st, "reason"));
    const char *msg = json_string_value(json_object_get(st, "message"));
    enum common_rc rc = map_status(status, reason);

    common_error_set(err, rc, "%s %s: %ld %s: %s", method, path, status, reason ? reason : "",
                     msg ? msg : (body->data ? body->data : ""));
    json_decref(st);
    return rc;
}

static int retryable_status(long s)
{
    return s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

static int retryable_curl(CURLcode c)
{
    return c == CURLE_COULDNT_CONNECT || c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR ||
           c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE || c == CURLE_SSL_CONNECT_ERROR ||
           c == CURLE_HTTP2 || c == CURLE_HTTP2_STREAM || c == CURLE_OPERATION_TIMEDOUT;
}

static struct curl_slist *headers(struct common_kube *k, int force_token, const char *content_type,
                                  const char *accept)
{
    char auth[16500], line[256];
    struct curl_slist *h = NULL, *t;

    bearer(k, force_token, auth, sizeof(auth));
    if (auth[0] && !(h = curl_slist_append(h, auth)))
        return NULL;
    snprintf(line, sizeof(line), "Accept: %s", accept ? accept : "application/json");
    t = curl_slist_append(h, line);
    if (!t)
        goto fail;
    h = t;
    if (content_type) {
        snprintf(line, sizeof(line), "Content-Type: %s", content_type);
        t = curl_slist_append(h, line);
        if (!t)
            goto fail;
        h = t;
    }
    t = curl_slist_append(h, "Expect:");
    if (!t)
        goto fail;
    return t;
fail:
    curl_slist_free_all(h);
    return NULL;
}

static enum common_rc request(struct common_kube *k, const char *method, const char *path,
                              const char *content_type, const void *body, size_t len,
                              const char *accept, struct common_buf *resp, long *status,
                              struct common_buf *warn, struct common_error *err);

enum common_rc common_kube_request(struct common_kube *k, const char *method, const char *path,
                                   const char *content_type, const void *body, size_t len,
                                   const char *accept, struct common_buf *resp, long *status,
                                   struct common_error *err)
{
    return request(k, method, path, content_type, body, len, accept, resp, status, NULL, err);
}

static enum common_rc request(struct common_kube *k, const char *method, const char *path,
                              const char *content_type, const void *body, size_t len,
                              const char *accept, struct common_buf *resp, long *status,
                              struct common_buf *warn, struct common_error *err)
{
    char *url;
    int force_token = 0, unauth_retry = 0;
    enum common_rc rc = COMMON_EIO;

    *status = 0;
    if (resp->max > k->opts.max_body)
        resp->max = k->opts.max_body;
    url = common_malloc(strlen(k->server) + strlen(path) + 1);
    if (!url)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    memcpy(url, k->server, strlen(k->server));
    memcpy(url + strlen(k->server), path, strlen(path) + 1);

    double deadline = mono_now() + (double)k->opts.timeout_ms / 1000.0;
    int idempotent = strcmp(method, "GET") == 0;

    for (int attempt = 0;; attempt++) {
        struct xfer x;
        struct curl_slist *hdrs;
        CURL *h;
        CURLcode cc;
        double backoff, cut = cutoff_s(k);

        if (cut > 0 && cut < deadline)
            deadline = cut;
        if (cut > 0 && mono_now() >= cut) {
            rc = common_error_set(err, COMMON_ETIMEOUT, "%s %s: cancelled (the client is stopping)",
                                  method, path);
            break;
        }
        hdrs = headers(k, force_token, content_type, accept);
        h = hdrs ? easy(k, method, url, hdrs) : NULL;
        if (!h) {
            curl_slist_free_all(hdrs);
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            break;
        }
        memset(&x, 0, sizeof(x));
        x.body = resp;
        x.warn = warn;
        common_buf_reset(resp);
        if (warn)
            common_buf_reset(warn);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_request_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, k);
        {
            /* the whole call, retries included, ends at the deadline */
            long left = (long)((deadline - mono_now()) * 1000.0);
            curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, left > 100 ? left : 100L);
        }
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        }
        rate_wait(k);
        cc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
        curl_easy_cleanup(h);
        curl_slist_free_all(hdrs);

        if (x.too_big) {
            rc = common_error_set(err, COMMON_ETOOBIG,
                                  "%s %s: response larger than the limit of %zu bytes", method,
                                  path, resp->max);
            break;
        }
        if (cc == CURLE_OK && *status >= 200 && *status < 300) {
            rc = COMMON_OK;
            break;
        }
        if (cc == CURLE_OK && *status == 401 && k->token_file && !unauth_retry) {
            unauth_retry = 1;
            force_token = 1;
            attempt--;
            continue;
        }
        /* A write is retried only when the server cannot have applied it: no connection, or
         * 429 / an answer with Retry-After. Reads are retried on any transient failure. */
        if (cc == CURLE_OK &&
            (!retryable_status(*status) || (!idempotent && *status != 429 && x.retry_after <= 0))) {
            rc = status_error(method, path, *status, resp, err);
            break;
        }
        if (cc == CURLE_ABORTED_BY_CALLBACK || past_cutoff(k)) {
            rc = common_error_set(err, COMMON_ETIMEOUT, "%s %s: cancelled (the client is stopping)",
                                  method, path);
            break;
        }
        if (cc != CURLE_OK &&
            (!retryable_curl(cc) || (!idempotent && cc != CURLE_COULDNT_CONNECT))) {
            rc = common_error_set(err, COMMON_EIO, "%s %s: %s", method, path,
                                  curl_easy_strerror(cc));
            break;
        }
        backoff =
            x.retry_after > 0 ? x.retry_after : 0.1 * (double)(1 << (attempt < 7 ? attempt : 7));
        if (backoff > 10)
            backoff = 10;
        if (attempt >= k->opts.max_retries || mono_now() + backoff >= deadline) {
            if (cc == CURLE_OK)
                rc = status_error(method, path, *status, resp, err);
            else
                rc = common_error_set(
                    err, cc == CURLE_OPERATION_TIMEDOUT ? COMMON_ETIMEOUT : COMMON_EIO,
                    "%s %s: %s (after %d retries)", method, path, curl_easy_strerror(cc), attempt);
            break;
        }
        backoff =
            x.retry_after > 0 ? x.retry_after : 0.1 * (double)(1 << (attempt < 7 ? attempt : 7));
        if (backoff > 10)
            backoff = 10;
        sleep_s(k, backoff);
    }
    common_free(url);
    return rc;
}

enum common_rc common_kube_served(struct common_kube *k, const char *path, long timeout_ms,
                                  int *served, struct common_error *err)
{
    struct timespec t0, now;
    struct common_error e;
    enum common_rc rc;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct common_buf resp;
        long status = 0;
        long waited;

        common_error_clear(&e);
        common_buf_init(&resp, 1 << 20);
        rc = common_kube_request(k, "GET", path, NULL, NULL, 0, NULL, &resp, &status, &e);
        common_buf_free(&resp);
        if (rc == COMMON_OK || (rc == COMMON_ENOTFOUND && status == 404)) {
            *served = rc == COMMON_OK;
            return COMMON_OK;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        waited = (long)(now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (waited >= timeout_ms || past_cutoff(k))
            return common_error_set(err, rc,
                                    "cannot tell whether the API server serves %s "
                                    "(asked for %ld ms): %s",
                                    path, waited, e.msg);
        common_log(COMMON_LOG_WARN,
                   "cannot tell whether the API server serves a path; retrying in 1 s", "path",
                   path, "error", e.msg, NULL);
        sleep_s(k, 1);
    }
}

char *common_kube_escape(const char *s)
{
    char *esc = curl_easy_escape(NULL, s, 0);
    char *d;

    if (!esc)
        return NULL;
    d = common_strdup(esc);
    curl_free(esc);
    return d;
}

/* ---- JSON verbs ---- */

static enum common_rc json_call(struct common_kube *k, const char *method, const char *path,
                                const char *content_type, const json_t *body_obj,
                                const char *body_text, json_t **out, struct common_buf *warn,
                                struct common_error *err)
{
    struct common_buf resp;
    char *body = NULL;
    long status;
    enum common_rc rc;

    if (body_obj) {
        body = json_dumps(body_obj, JSON_COMPACT);
        if (!body)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        body_text = body;
    }
    common_buf_init(&resp, k->opts.max_body);
    rc = request(k, method, path, content_type, body_text, body_text ? strlen(body_text) : 0, NULL,
                 &resp, &status, warn, err);
    common_free(body);
    if (rc == COMMON_OK && out) {
        json_error_t je;
        *out = json_loadb(resp.data ? resp.data : "", resp.len, 0, &je);
        if (!*out)
            rc = common_error_set(err, COMMON_EINVAL, "%s %s: response is not JSON: %s", method,
                                  path, je.text);
    }
    common_buf_free(&resp);
    return rc;
}

static enum common_rc build_path(const struct common_kube_resource *r, const char *ns,
                                 const char *name, const char *sub, char *buf, size_t size,
                                 struct common_error *err)
{
    if (common_kube_path(r, ns, name, sub, buf, size))
        return common_error_set(err, COMMON_EINVAL, "object path too long (%s %s/%s)", r->resource,
                                ns ? ns : "", name ? name : "");
    return COMMON_OK;
}

/* append "?a=b&c=d" style query parameters; value NULL skips */
static void add_query(char *buf, size_t size, const char *key, const char *value)
{
    size_t len = strlen(buf);
    char *esc;

    if (!value)
        return;
    esc = curl_easy_escape(NULL, value, 0);
    if (!esc)
        return;
    snprintf(buf + len, size - len, "%c%s=%s", strchr(buf, '?') ? '&' : '?', key, esc);
    curl_free(esc);
}

static void write_query(char *path, size_t size, const struct common_kube_write_opts *wo)
{
    if (!wo)
        return;
    add_query(path, size, "fieldManager", wo->field_manager);
    if (wo->force)
        add_query(path, size, "force", "true");
    if (wo->strict)
        add_query(path, size, "fieldValidation", "Strict");
    if (wo->dry_run)
        add_query(path, size, "dryRun", "All");
}

enum common_rc common_kube_get(struct common_kube *k, const struct common_kube_resource *r,
                               const char *ns, const char *name, json_t **out,
                               struct common_error *err)
{
    char path[2048];
    enum common_rc rc = build_path(r, ns, name, NULL, path, sizeof(path), err);
    return rc ? rc : json_call(k, "GET", path, NULL, NULL, NULL, out, NULL, err);
}

enum common_rc common_kube_list(struct common_kube *k, const struct common_kube_resource *r,
                                const char *ns, const struct common_kube_list_opts *opts,
                                json_t **items, char **resource_version, struct common_error *err)
{
    char base[2048], path[8192], limit[32];
    char *cont = NULL;
    json_t *all = json_array();
    enum common_rc rc;
    int restarted = 0;

    *items = NULL;
    if (resource_version)
        *resource_version = NULL;
    if (!all)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = build_path(r, ns, NULL, NULL, base, sizeof(base), err);
    snprintf(limit, sizeof(limit), "%ld", opts && opts->limit > 0 ? opts->limit : 500);
    while (!rc) {
        json_t *page = NULL, *it;
        size_t i;
        const char *c;

        snprintf(path, sizeof(path), "%s", base);
        add_query(path, sizeof(path), "limit", limit);
        if (opts) {
            add_query(path, sizeof(path), "labelSelector", opts->label_selector);
            add_query(path, sizeof(path), "fieldSelector", opts->field_selector);
            if (!cont)
                add_query(path, sizeof(path), "resourceVersion", opts->resource_version);
        }
        add_query(path, sizeof(path), "continue", cont);
        rc = json_call(k, "GET", path, NULL, NULL, NULL, &page, NULL, err);
        if (rc == COMMON_EGONE && cont && !restarted) {
            /* the continue token expired: start over once */
            restarted = 1;
            common_free(cont);
            cont = NULL;
            json_array_clear(all);
            rc = COMMON_OK;
            continue;
        }
        if (rc)
            break;
        json_array_foreach(json_object_get(page, "items"), i, it)
        {
            if (opts && opts->item)
                opts->item(opts->ctx, it);
            if (json_array_append(all, it)) {
                rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
                break;
            }
        }
        if (resource_version && !rc) {
            const char *rv = json_string_value(
                json_object_get(json_object_get(page, "metadata"), "resourceVersion"));
            common_free(*resource_version);
            *resource_version = rv ? common_strdup(rv) : NULL;
        }
        if (opts && opts->page && !rc)
            opts->page(opts->ctx, json_array_size(all));
        c = json_string_value(json_object_get(json_object_get(page, "metadata"), "continue"));
        common_free(cont);
        cont = c && *c ? common_strdup(c) : NULL;
        json_decref(page);
        if (!cont)
            break;
    }
    common_free(cont);
    if (rc) {
        json_decref(all);
        if (resource_version) {
            common_free(*resource_version);
            *resource_version = NULL;
        }
        return rc;
    }
    *items = all;
    return COMMON_OK;
}

enum common_rc common_kube_create(struct common_kube *k, const struct common_kube_resource *r,
                                  const char *ns, const json_t *obj,
                                  const struct common_kube_write_opts *wo, json_t **out,
                                  struct common_error *err)
{
    char path[4096];
    enum common_rc rc = build_path(r, ns, NULL, NULL, path, sizeof(path), err);

    if (rc)
        return rc;
    if (wo && wo->subresource) {
        const char *name =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        rc = build_path(r, ns, name ? name : "", wo->subresource, path, sizeof(path), err);
        if (rc)
            return rc;
    }
    write_query(path, sizeof(path), wo);
    return json_call(k, "POST", path, "application/json", obj, NULL, out, wo ? wo->warnings : NULL,
                     err);
}

enum common_rc common_kube_update(struct common_kube *k, const struct common_kube_resource *r,
                                  const char *ns, const json_t *obj,
                                  const struct common_kube_write_opts *wo, json_t **out,
                                  struct common_error *err)
{
    char path[4096];
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    enum common_rc rc;

    if (!name)
        return common_error_set(err, COMMON_EINVAL, "update: object has no metadata.name");
    rc = build_path(r, ns, name, wo ? wo->subresource : NULL, path, sizeof(path), err);
    if (rc)
        return rc;
    write_query(path, sizeof(path), wo);
    return json_call(k, "PUT", path, "application/json", obj, NULL, out, wo ? wo->warnings : NULL,
                     err);
}

enum common_rc common_kube_patch(struct common_kube *k, const struct common_kube_resource *r,
                                 const char *ns, const char *name, enum common_kube_patch_type type,
                                 const char *body, const struct common_kube_write_opts *wo,
                                 json_t **out, struct common_error *err)
{
    static const char *const types[] = {
        "application/merge-patch+json", "application/json-patch+json",
        "application/apply-patch+yaml", "application/strategic-merge-patch+json"};
    char path[4096];
    enum common_rc rc =
        build_path(r, ns, name, wo ? wo->subresource : NULL, path, sizeof(path), err);

    if (rc)
        return rc;
    if (type == COMMON_KUBE_APPLY_PATCH && (!wo || !wo->field_manager))
        return common_error_set(err, COMMON_EINVAL, "apply needs a field manager");
    write_query(path, sizeof(path), wo);
    return json_call(k, "PATCH", path, types[type], NULL, body, out, wo ? wo->warnings : NULL, err);
}

enum common_rc common_kube_apply(struct common_kube *k, const struct common_kube_resource *r,
                                 const char *ns, const json_t *obj,
                                 const struct common_kube_write_opts *wo, json_t **out,
                                 struct common_error *err)
{
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    char *body;
    enum common_rc rc;

    if (!name)
        return common_error_set(err, COMMON_EINVAL, "apply: object has no metadata.name");
    body = json_dumps(obj, JSON_COMPACT);
    if (!body)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = common_kube_patch(k, r, ns, name, COMMON_KUBE_APPLY_PATCH, body, wo, out, err);
    common_free(body);
    return rc;
}

enum common_rc common_kube_delete(struct common_kube *k, const struct common_kube_resource *r,
                                  const char *ns, const char *name, const char *uid,
                                  const char *resource_version, const char *propagation,
                                  struct common_error *err)
{
    char path[4096];
    json_t *opts = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", "DeleteOptions");
    enum common_rc rc = build_path(r, ns, name, NULL, path, sizeof(path), err);

    if (!opts)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (!rc && (uid || resource_version)) {
        json_t *pre = json_object();
        if (uid)
            json_object_set_new(pre, "uid", json_string(uid));
        if (resource_version)
            json_object_set_new(pre, "resourceVersion", json_string(resource_version));
        json_object_set_new(opts, "preconditions", pre);
    }
    if (!rc && propagation)
        json_object_set_new(opts, "propagationPolicy", json_string(propagation));
    if (!rc)
        rc = json_call(k, "DELETE", path, "application/json", opts, NULL, NULL, NULL, err);
    json_decref(opts);
    return rc;
}

/* ---- watch ---- */

static int deliver_json(struct xfer *x, const char *line, size_t len)
{
    json_error_t je;
    json_t *ev = json_loadb(line, len, 0, &je);
    const char *type;
    const json_t *obj;

    if (!ev) {
        x->watch_rc =
            common_error_set(x->err, COMMON_EINVAL, "watch: event is not valid JSON: %s", je.text);
        return -1;
    }
    type = json_string_value(json_object_get(ev, "type"));
    obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj)) {
        json_decref(ev);
        x->watch_rc =
            common_error_set(x->err, COMMON_EINVAL, "watch: event without type or object");
        return -1;
    }
    if (strcmp(type, "ERROR") == 0) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *msg = json_string_value(json_object_get(obj, "message"));
        x->watch_rc = common_error_set(x->err, code == 410 ? COMMON_EGONE : COMMON_EAPI,
                                       "watch: %lld %s", (long long)code, msg ? msg : "");
        json_decref(ev);
        return -1;
    }
    if (x->fn(x->ctx, type, obj, NULL, 0)) {
        x->stopped = 1;
        json_decref(ev);
        return -1;
    }
    json_decref(ev);
    return 0;
}

static size_t on_watch(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;
    size_t start = 0;

    x->last_byte = mono_now();
    if (!x->checked) {
        long st = 0;
        curl_easy_getinfo(x->handle, CURLINFO_RESPONSE_CODE, &st);
        x->checked = st >= 200 && st < 300 ? 1 : 2;
    }
    if (x->checked == 2)
        return common_buf_append(x->body, ptr, n, NULL) ? 0 : n;
    if (common_buf_append(&x->line, ptr, n, NULL)) {
        x->watch_rc =
            common_error_set(x->err, COMMON_ETOOBIG,
                             "watch: an event is larger than the limit of %zu bytes", x->line.max);
        return 0;
    }
    if (x->protobuf) {
        /* 4-byte big-endian length, then the frame */
        while (x->line.len - start >= 4) {
            const unsigned char *p = (const unsigned char *)x->line.data + start;
            size_t flen = ((size_t)p[0] << 24) | ((size_t)p[1] << 16) | ((size_t)p[2] << 8) | p[3];
            if (flen > x->k->opts.max_watch_event) {
                x->watch_rc = common_error_set(
                    x->err, COMMON_ETOOBIG,
                    "watch: a frame of %zu bytes is larger than the limit of %zu bytes", flen,
                    x->k->opts.max_watch_event);
                return 0;
            }
            if (x->line.len - start - 4 < flen)
                break;
            if (x->fn(x->ctx, "FRAME", NULL, p, 4 + flen)) {
                x->stopped = 1;
                return 0;
            }
            start += 4 + flen;
        }
    } else {
        char *nl;
        while ((nl = memchr(x->line.data + start, '\n', x->line.len - start)) != NULL) {
            size_t llen = (size_t)(nl - (x->line.data + start));
            if (llen > x->k->opts.max_watch_event) {
                x->watch_rc = common_error_set(
                    x->err, COMMON_ETOOBIG,
                    "watch: an event of %zu bytes is larger than the limit of %zu bytes", llen,
                    x->k->opts.max_watch_event);
                return 0;
            }
            if (llen > 0 && deliver_json(x, x->line.data + start, llen))
                return 0;
            start += llen + 1;
        }
        if (x->line.len - start > x->k->opts.max_watch_event) {
            x->watch_rc = common_error_set(
                x->err, COMMON_ETOOBIG,
                "watch: an event is larger than the limit of %zu bytes (%zu bytes without its end)",
                x->k->opts.max_watch_event, x->line.len - start);
            return 0;
        }
    }
    if (start) {
        memmove(x->line.data, x->line.data + start, x->line.len - start);
        x->line.len -= start;
        x->line.data[x->line.len] = '\0';
    }
    return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct xfer *x = ud;
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    if (x->stop && *x->stop) {
        x->stopped = 1;
        return 1;
    }
    if (past_cutoff(x->k)) {
        x->cancelled = 1;
        return 1;
    }
    if (mono_now() - x->last_byte > x->stall_s) {
        x->stalled = 1;
        return 1;
    }
    return 0;
}

enum common_rc common_kube_watch(struct common_kube *k, const struct common_kube_resource *r,
                                 const char *ns, const struct common_kube_watch_opts *opts,
                                 common_kube_watch_fn fn, void *ctx, struct common_error *err)
{
    char path[8192], url[10240], tmo[32];
    struct xfer x;
    struct common_buf errbody;
    struct curl_slist *hdrs;
    CURL *h;
    CURLcode cc;
    long status = 0;
    int timeout = opts && opts->timeout_seconds > 0 ? opts->timeout_seconds : 300;
    enum common_rc rc = build_path(r, ns, NULL, NULL, path, sizeof(path), err);

    if (rc)
        return rc;
    if (past_cutoff(k))
        return common_error_set(err, COMMON_ETIMEOUT,
                                "watch %s: cancelled (the client is stopping)", path);
    add_query(path, sizeof(path), "watch", "1");
    snprintf(tmo, sizeof(tmo), "%d", timeout);
    add_query(path, sizeof(path), "timeoutSeconds", tmo);
    if (opts) {
        if (opts->resource_version && opts->resource_version[0])
            add_query(path, sizeof(path), "resourceVersion", opts->resource_version);
        if (opts->bookmarks)
            add_query(path, sizeof(path), "allowWatchBookmarks", "true");
        add_query(path, sizeof(path), "labelSelector", opts->label_selector);
        add_query(path, sizeof(path), "fieldSelector", opts->field_selector);
    }
    snprintf(url, sizeof(url), "%s%s", k->server, path);
    for (int force_token = 0;; force_token = 1) {
        hdrs = headers(k, force_token, NULL,
                       opts && opts->protobuf
                           ? "application/vnd.kubernetes.protobuf;type=watch, application/json"
                           : "application/json");
        h = hdrs ? easy(k, "GET", url, hdrs) : NULL;
        if (!h) {
            curl_slist_free_all(hdrs);
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        memset(&x, 0, sizeof(x));
        x.k = k;
        x.fn = fn;
        x.ctx = ctx;
        x.err = err;
        x.protobuf = opts && opts->protobuf;
        x.stop = opts ? opts->stop : NULL;
        x.last_byte = mono_now();
        x.stall_s = opts && opts->stall_ms > 0 ? (double)opts->stall_ms / 1000.0 : timeout + 30.0;
        common_buf_init(&x.line, 2 * k->opts.max_watch_event + 4 + (1u << 20));
        common_buf_init(&errbody, 1 << 20);
        x.body = &errbody;
        x.handle = h;
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_watch);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
        rate_wait(k);
        cc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(h);
        curl_slist_free_all(hdrs);

        if (status == 401 && k->token_file && !force_token && !x.stopped && !x.watch_rc) {
            /* the token may have been rotated: read the file again and retry once */
            common_buf_free(&x.line);
            common_buf_free(&errbody);
            continue;
        }
        break;
    }
    if (x.stopped)
        rc = COMMON_OK;
    else if (x.cancelled)
        rc = common_error_set(err, COMMON_ETIMEOUT, "watch %s: cancelled (the client is stopping)",
                              path);
    else if (x.watch_rc)
        rc = x.watch_rc;
    else if (x.stalled)
        rc =
            common_error_set(err, COMMON_ETIMEOUT, "watch %s: no data for %.0f s", path, x.stall_s);
    else if (cc == CURLE_OK && status >= 200 && status < 300)
        rc = COMMON_OK;
    else if (cc == CURLE_OK || status >= 300)
        rc = status_error("GET", path, status, &errbody, err);
    else
        rc = common_error_set(err, COMMON_EIO, "watch %s: %s", path, curl_easy_strerror(cc));
    common_buf_free(&x.line);
    common_buf_free(&errbody);
    return rc;
}
