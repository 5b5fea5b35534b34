/*
 * integrations/slurmrest.c - slurmrestd client (see slurmrest.h): JWT headers, version
 * discovery, retries with backoff, metrics.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "common/buf.h"
#include "integrations/slurmrest.h"

#define MAX_BODY (64u << 20)
#define TOKEN_MAX 4096

struct slurmrest {
    char *url, *user, *token, *token_file, *key_file, *version;
    long lifespan, timeout_ms;
    int max_retries;
    CURL *h;
    pthread_mutex_t mu;
    /* token file cache */
    struct timespec token_mtime;
    char file_token[TOKEN_MAX];
    /* minted token */
    char minted[TOKEN_MAX];
    int64_t minted_iat;
    struct common_metric *latency, *errors;
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *dup_opt(const char *s, int *oom)
{
    char *d;
    if (!s)
        return NULL;
    d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

/* "http://host[:port][/path]" or https: 0, else -1 with why */
static int url_ok(const char *url, const char **why)
{
    const char *p = url, *host, *end;
    size_t i;

    for (i = 0; url[i]; i++)
        if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f) {
            *why = "blanks or control characters in it";
            return -1;
        }
    if (strncasecmp(p, "http://", 7) == 0)
        p += 7;
    else if (strncasecmp(p, "https://", 8) == 0)
        p += 8;
    else {
        *why = "must start with http:// or https://";
        return -1;
    }
    host = p;
    end = p + strcspn(p, "/?#");
    if (memchr(host, '@', (size_t)(end - host))) {
        *why = "a user name or password in the URL is not supported (use slurm.user and a token)";
        return -1;
    }
    if (*p == '[') { /* an IPv6 literal */
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (!close || close == p + 1) {
            *why = "an IPv6 host must be a [address]";
            return -1;
        }
        p = close + 1;
    } else {
        while (p < end && *p != ':')
            p++;
        if (p == host) {
            *why = "no host";
            return -1;
        }
    }
    if (p < end && *p != ':') {
        *why = "text after the host that is not a :port";
        return -1;
    }
    if (p < end) {
        long port = 0;
        const char *q = p + 1;
        if (q == end) {
            *why = "an empty port";
            return -1;
        }
        for (; q < end; q++) {
            if (*q < '0' || *q > '9' || port > 65535) {
                *why = "the port is not a number from 1 to 65535";
                return -1;
            }
            port = port * 10 + (*q - '0');
        }
        if (port < 1 || port > 65535) {
            *why = "the port is not a number from 1 to 65535";
            return -1;
        }
    }
    return 0;
}

/* a file that holds something once blanks (and a token's SLURM_JWT= prefix) are set aside */
static enum common_rc file_ok(const char *path, size_t max, int token, const char *what,
                              struct common_error *err)
{
    struct common_buf b;
    const char *t;
    enum common_rc rc;

    if (strcmp(path, "-") == 0)
        return common_error_set(err, COMMON_EINVAL, "%s \"-\": must name a file", what);
    common_buf_init(&b, max);
    rc = common_buf_read_file(&b, path, err);
    if (rc) {
        common_buf_free(&b);
        common_error_prefix(err, "%s \"%s\"", what, path);
        return COMMON_EINVAL;
    }
    t = b.data ? b.data : "";
    if (token && strncmp(t, "SLURM_JWT=", 10) == 0)
        t += 10;
    if (token)
        t += strspn(t, " \t\r\n");
    if ((token && !*t) || b.len == 0)
        rc = common_error_set(err, COMMON_EINVAL, "%s \"%s\": the file is empty", what, path);
    common_buf_free(&b);
    return rc;
}

enum common_rc slurmrest_settings_check(const struct slurmrest_opts *o, struct common_error *err)
{
    const char *why = NULL;
    int tf = o && o->token_file && *o->token_file, kf = o && o->key_file && *o->key_file;

    if (!o || !o->url || !*o->url)
        return common_error_set(err, COMMON_EINVAL, "slurm.url (--slurm-url): Required value");
    if (url_ok(o->url, &why))
        return common_error_set(err, COMMON_EINVAL, "slurm.url (--slurm-url) \"%s\": %s", o->url,
                                why);
    if (!o->user || !*o->user)
        return common_error_set(err, COMMON_EINVAL,
                                "slurm.user (--slurm-user): Required value with slurm.url");
    if (tf == kf)
        return common_error_set(err, COMMON_EINVAL,
                                "slurm.tokenFile (--slurm-token-file) and slurm.jwtKeyFile "
                                "(--slurm-jwt-key-file): give exactly one with slurm.url (%s)",
                                tf ? "both are set" : "neither is set");
    if (o->api_version && *o->api_version) {
        const char *v = o->api_version;
        char *end = NULL;
        long minor = strncmp(v, "v0.0.", 5) == 0 && v[5] >= '0' && v[5] <= '9'
                         ? strtol(v + 5, &end, 10)
                         : -1;
        if (minor < SLURMREST_MINOR_MIN || minor > SLURMREST_MINOR_MAX || !end || *end)
            return common_error_set(err, COMMON_EINVAL,
                                    "slurm.apiVersion (--slurm-api-version) \"%s\": not a version "
                                    "this client speaks (v0.0.%d to v0.0.%d)",
                                    v, SLURMREST_MINOR_MIN, SLURMREST_MINOR_MAX);
    }
    if (tf)
        return file_ok(o->token_file, TOKEN_MAX - 1, 1, "slurm.tokenFile (--slurm-token-file)",
                       err);
    return file_ok(o->key_file, 1 << 16, 0, "slurm.jwtKeyFile (--slurm-jwt-key-file)", err);
}

struct slurmrest *slurmrest_create(const struct slurmrest_opts *o, struct common_error *err)
{
    static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    static const char *const verb_label[] = {"verb", NULL};
    static const char *const err_labels[] = {"verb", "code", NULL};
    struct slurmrest *s;
    int oom = 0;

    if (!o || !o->url || !*o->url)
        return common_error_set(err, COMMON_EINVAL, "slurmrestd: the URL is required"), NULL;
    if (!o->user || !*o->user)
        return common_error_set(err, COMMON_EINVAL, "slurmrestd: the user name is required"), NULL;
    if (!(o->token && *o->token) && !(o->token_file && *o->token_file) &&
        !(o->key_file && *o->key_file))
        return common_error_set(err, COMMON_EINVAL,
                                "slurmrestd: a token, a token file or a JWT key file is required"),
               NULL;
    s = calloc(1, sizeof(*s));
    if (!s)
        return common_error_set(err, COMMON_ENOMEM, "out of memory"), NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->url = dup_opt(o->url, &oom);
    s->user = dup_opt(o->user, &oom);
    s->token = o->token && *o->token ? dup_opt(o->token, &oom) : NULL;
    s->token_file = o->token_file && *o->token_file ? dup_opt(o->token_file, &oom) : NULL;
    s->key_file = o->key_file && *o->key_file ? dup_opt(o->key_file, &oom) : NULL;
    s->version = o->api_version && *o->api_version ? dup_opt(o->api_version, &oom) : NULL;
    s->lifespan = o->token_lifespan_s > 0 ? o->token_lifespan_s : 1800;
    s->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 15000;
    s->max_retries = o->max_retries > 0 ? o->max_retries : 4;
    s->h = curl_easy_init();
    if (o->metrics) {
        s->latency =
            common_metrics_histogram(o->metrics, "trainsched_slurmrest_request_seconds",
                                     "Latency of slurmrestd requests, retries included, by verb.",
                                     verb_label, buckets, sizeof(buckets) / sizeof(buckets[0]));
        s->errors = common_metrics_counter(
            o->metrics, "trainsched_slurmrest_errors_total",
            "slurmrestd requests that failed, by verb and HTTP status (or transport).", err_labels);
    }
    /* the trailing '/' of a base URL would double the path's */
    if (s->url && *s->url && s->url[strlen(s->url) - 1] == '/')
        s->url[strlen(s->url) - 1] = '\0';
    if (oom || !s->h) {
        slurmrest_destroy(s);
        return common_error_set(err, COMMON_ENOMEM, "out of memory"), NULL;
    }
    return s;
}

void slurmrest_destroy(struct slurmrest *s)
{
    if (!s)
        return;
    if (s->h)
        curl_easy_cleanup(s->h);
    pthread_mutex_destroy(&s->mu);
    free(s->url);
    free(s->user);
    free(s->token);
    free(s->token_file);
    free(s->key_file);
    free(s->version);
    free(s);
}

/* ---- tokens ---- */

static size_t b64url(const unsigned char *in, size_t n, char *out, size_t size)
{
    size_t len;
    if (size < 4 * ((n + 2) / 3) + 1)
        return 0;
    len = (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)n);
    while (len && out[len - 1] == '=')
        len--;
    out[len] = '\0';
    for (size_t i = 0; i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    return len;
}

enum common_rc slurmrest_mint_token(const unsigned char *key, size_t keylen, const char *user,
                                    int64_t now, long lifespan_s, char *out, size_t size,
                                    struct common_error *err)
{
    static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    char payload[512], seg[1024];
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    json_t *claims;
    char *text;
    size_t used, n;

    if (!key || !keylen || !user || !*user)
        return common_error_set(err, COMMON_EINVAL, "JWT: an empty key or user name");
    claims = json_pack("{s:I,s:I,s:s}", "exp", (json_int_t)(now + lifespan_s), "iat",
                       (json_int_t)now, "sun", user);
    text = claims ? json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(claims);
    if (!text)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    n = strlen(text);
    if (n >= sizeof(payload)) {
        free(text);
        return common_error_set(err, COMMON_EINVAL, "JWT: user name too long");
    }
    memcpy(payload, text, n + 1);
    free(text);
    used = b64url((const unsigned char *)header, sizeof(header) - 1, out, size);
    if (!used || used + 1 >= size)
        return common_error_set(err, COMMON_ETOOBIG, "JWT: buffer too small");
    out[used++] = '.';
    n = b64url((const unsigned char *)payload, strlen(payload), seg, sizeof(seg));
    if (!n || used + n + 1 >= size)
        return common_error_set(err, COMMON_ETOOBIG, "JWT: buffer too small");
    memcpy(out + used, seg, n + 1);
    used += n;
    if (!HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)out, used, mac, &maclen))
        return common_error_set(err, COMMON_EINVAL, "JWT: HMAC-SHA256 failed");
    n = b64url(mac, maclen, seg, sizeof(seg));
    if (!n || used + n + 2 >= size)
        return common_error_set(err, COMMON_ETOOBIG, "JWT: buffer too small");
    out[used++] = '.';
    memcpy(out + used, seg, n + 1);
    return COMMON_OK;
}

/* the token to send now, in s (under s->mu) */
static enum common_rc current_token(struct slurmrest *s, const char **tok, struct common_error *err)
{
    struct common_buf b;
    enum common_rc rc;

    if (s->token) {
        *tok = s->token;
        return COMMON_OK;
    }
    if (s->token_file) {
        struct stat st;
        if (stat(s->token_file, &st) != 0)
            return common_error_set(err, COMMON_EIO, "slurmrestd token file %s: cannot stat it",
                                    s->token_file);
        if (!s->file_token[0] || st.st_mtim.tv_sec != s->token_mtime.tv_sec ||
            st.st_mtim.tv_nsec != s->token_mtime.tv_nsec) {
            char *t, *e;
            common_buf_init(&b, TOKEN_MAX - 1);
            rc = common_buf_read_file(&b, s->token_file, err);
            if (rc) {
                common_buf_free(&b);
                common_error_prefix(err, "slurmrestd token file");
                return rc;
            }
            t = b.data ? b.data : "";
            if (strncmp(t, "SLURM_JWT=", 10) == 0)
                t += 10;
            while (*t == ' ' || *t == '\n' || *t == '\t' || *t == '\r')
                t++;
            e = t + strlen(t);
            while (e > t && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\t' || e[-1] == '\r'))
                *--e = '\0';
            if (!*t) {
                common_buf_free(&b);
                return common_error_set(err, COMMON_EINVAL, "slurmrestd token file %s is empty",
                                        s->token_file);
            }
            snprintf(s->file_token, sizeof(s->file_token), "%s", t);
            s->token_mtime = st.st_mtim;
            common_buf_free(&b);
        }
        *tok = s->file_token;
        return COMMON_OK;
    }
    {
        int64_t now = (int64_t)time(NULL);
        if (!s->minted[0] || now - s->minted_iat >= s->lifespan / 2) {
            common_buf_init(&b, 1 << 16);
            rc = common_buf_read_file(&b, s->key_file, err);
            if (!rc)
                rc = slurmrest_mint_token((const unsigned char *)b.data, b.len, s->user, now,
                                          s->lifespan, s->minted, sizeof(s->minted), err);
            common_buf_free(&b);
            if (rc) {
                common_error_prefix(err, "slurmrestd JWT key %s", s->key_file);
                s->minted[0] = '\0';
                return rc;
            }
            s->minted_iat = now;
        }
        *tok = s->minted;
        return COMMON_OK;
    }
}

/* ---- requests ---- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    size_t n = size * nmemb;
    return common_buf_append(ud, ptr, n, NULL) == COMMON_OK ? n : 0;
}

static void count_error(struct slurmrest *s, const char *verb, long status)
{
    char code[32];
    if (!s->errors)
        return;
    if (status > 0)
        snprintf(code, sizeof(code), "%ld", status);
    else
        snprintf(code, sizeof(code), "transport");
    common_metric_add(s->errors, (const char *const[]){verb, code, NULL}, 1);
}

/* one HTTP exchange with retries; under s->mu. *status 0 when no answer came. */
static enum common_rc exchange(struct slurmrest *s, const char *method, const char *url,
                               const char *body, struct common_buf *resp, long *status,
                               struct common_error *err)
{
    int idempotent = strcmp(method, "POST") != 0;
    double deadline = mono_now() + (double)s->timeout_ms / 1000.0, backoff = 0.2;
    char user_hdr[512], token_hdr[TOKEN_MAX + 64];
    enum common_rc rc;

    for (int attempt = 0;; attempt++) {
        struct curl_slist *hdrs = NULL, *l;
        const char *tok = NULL;
        CURLcode cc;
        long left = (long)((deadline - mono_now()) * 1000);

        rc = current_token(s, &tok, err);
        if (rc)
            return rc;
        snprintf(user_hdr, sizeof(user_hdr), "X-SLURM-USER-NAME: %s", s->user);
        snprintf(token_hdr, sizeof(token_hdr), "X-SLURM-USER-TOKEN: %s", tok);
        hdrs = curl_slist_append(NULL, user_hdr);
        l = hdrs ? curl_slist_append(hdrs, token_hdr) : NULL;
        l = l ? curl_slist_append(l, "Accept: application/json") : NULL;
        if (l && body)
            l = curl_slist_append(l, "Content-Type: application/json");
        if (!l) {
            curl_slist_free_all(hdrs);
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        common_buf_reset(resp);
        curl_easy_reset(s->h);
        curl_easy_setopt(s->h, CURLOPT_URL, url);
        /* slurmrestd speaks HTTP(S) only: no other scheme, on a request or a redirect */
#if LIBCURL_VERSION_NUM >= 0x075500
        curl_easy_setopt(s->h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(s->h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
        curl_easy_setopt(s->h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
        curl_easy_setopt(s->h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
        curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(s->h, CURLOPT_USERAGENT, "trainsched/" TS_VERSION);
        curl_easy_setopt(s->h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, left > 100 ? left : 100L);
        curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(s->h, CURLOPT_WRITEDATA, resp);
        if (body)
            curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, body);
        cc = curl_easy_perform(s->h);
        curl_slist_free_all(hdrs);
        *status = 0;
        if (cc == CURLE_OK) {
            curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, status);
            return COMMON_OK;
        }
        if (cc == CURLE_WRITE_ERROR)
            return common_error_set(err, COMMON_ETOOBIG, "%s %s: answer larger than %u bytes",
                                    method, url, MAX_BODY);
        if ((!idempotent && cc != CURLE_COULDNT_CONNECT) || attempt >= s->max_retries ||
            mono_now() + backoff >= deadline)
            return common_error_set(
                err, cc == CURLE_OPERATION_TIMEDOUT ? COMMON_ETIMEOUT : COMMON_EIO,
                "%s %s: %s (after %d attempts)", method, url, curl_easy_strerror(cc), attempt + 1);
        {
            struct timespec ts = {(time_t)backoff, (long)((backoff - (time_t)backoff) * 1e9)};
            nanosleep(&ts, NULL);
        }
        backoff = backoff * 2 > 5 ? 5 : backoff * 2;
    }
}

/* a request to url; answer checked; under s->mu */
static enum common_rc request(struct slurmrest *s, const char *verb, const char *method,
                              const char *url, const char *what, const json_t *body,
                              json_t **answer, struct common_error *err)
{
    struct common_buf resp;
    char *text = NULL;
    long status = 0;
    double t0 = mono_now();
    enum common_rc rc;

    if (answer)
        *answer = NULL;
    common_buf_init(&resp, MAX_BODY);
    if (body && !(text = json_dumps(body, JSON_COMPACT))) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    rc = exchange(s, method, url, text, &resp, &status, err);
    if (!rc)
        rc = slurm_answer_check(status, resp.data ? resp.data : "", resp.len, what, answer, err);
    if (rc && rc != COMMON_ENOMEM && !(rc == COMMON_ENOTFOUND && status == 500))
        count_error(s, verb, status);
out:
    if (s->latency)
        common_metric_observe(s->latency, (const char *const[]){verb, NULL}, mono_now() - t0);
    free(text);
    common_buf_free(&resp);
    return rc;
}

/* the version, discovered under s->mu */
static enum common_rc version_locked(struct slurmrest *s, struct common_error *err)
{
    char url[1024], found[256] = "";
    json_t *doc = NULL;
    const char *path;
    json_t *v;
    int best = -1;
    enum common_rc rc;

    if (s->version)
        return COMMON_OK;
    snprintf(url, sizeof(url), "%s/openapi/v3", s->url);
    rc = request(s, "openapi", "GET", url, "GET /openapi/v3", NULL, &doc, err);
    if (rc)
        return rc;
    json_object_foreach(json_object_get(doc, "paths"), path, v)
    {
        int minor = 0;
        size_t used = strlen(found);
        if (sscanf(path, "/slurm/v0.0.%d/", &minor) != 1 || !strstr(path, "/job/submit"))
            continue;
        if (used + 12 < sizeof(found))
            snprintf(found + used, sizeof(found) - used, "%sv0.0.%d", used ? " " : "", minor);
        if (minor >= SLURMREST_MINOR_MIN && minor <= SLURMREST_MINOR_MAX && minor > best)
            best = minor;
    }
    json_decref(doc);
    if (best < 0)
        return common_error_set(err, COMMON_EUNSUPPORTED,
                                "slurmrestd offers no API version this client knows (v0.0.38 to "
                                "v0.0.44); its /openapi lists: %s",
                                *found ? found : "none");
    {
        char buf[16];
        snprintf(buf, sizeof(buf), "v0.0.%d", best);
        s->version = strdup(buf);
    }
    if (!s->version)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

enum common_rc slurmrest_version(struct slurmrest *s, const char **version,
                                 struct common_error *err)
{
    enum common_rc rc;

    pthread_mutex_lock(&s->mu);
    rc = version_locked(s, err);
    *version = rc ? NULL : s->version;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* the verb label of a path: "submit", "job", "jobs", "cancel", ... */
static const char *verb_of(const char *method, const char *path)
{
    if (strcmp(method, "DELETE") == 0)
        return "cancel";
    if (strncmp(path, "/job/submit", 11) == 0)
        return "submit";
    if (strncmp(path, "/jobs", 5) == 0)
        return "jobs";
    if (strncmp(path, "/job/", 5) == 0)
        return "job";
    if (strncmp(path, "/ping", 5) == 0)
        return "ping";
    return "other";
}

enum common_rc slurmrest_call(struct slurmrest *s, const char *method, const char *path,
                              const json_t *body, json_t **answer, struct common_error *err)
{
    char url[2048], what[512];
    enum common_rc rc;

    if (answer)
        *answer = NULL;
    pthread_mutex_lock(&s->mu);
    rc = version_locked(s, err);
    if (!rc) {
        snprintf(url, sizeof(url), "%s/slurm/%s%s", s->url, s->version, path);
        snprintf(what, sizeof(what), "slurmrestd %s %s", method, path);
        rc = request(s, verb_of(method, path), method, url, what, body, answer, err);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

enum common_rc slurmrest_submit(struct slurmrest *s, const json_t *body, int64_t *job_id,
                                struct common_error *err)
{
    json_t *answer = NULL, *id;
    enum common_rc rc = slurmrest_call(s, "POST", "/job/submit", body, &answer, err);

    *job_id = 0;
    if (rc)
        return rc;
    id = json_object_get(answer, "job_id");
    if (json_is_object(id))
        id = json_object_get(id, "number");
    if (!json_is_integer(id) || json_integer_value(id) <= 0)
        rc = common_error_set(err, COMMON_EINVAL,
                              "slurmrestd POST /job/submit: the answer has no job_id");
    else
        *job_id = json_integer_value(id);
    json_decref(answer);
    return rc;
}

enum common_rc slurmrest_job(struct slurmrest *s, struct common_arena *a, int64_t job_id,
                             struct slurm_job_state *out, struct common_error *err)
{
    char path[64];
    json_t *answer = NULL;
    enum common_rc rc;

    snprintf(path, sizeof(path), "/job/%" PRId64, job_id);
    rc = slurmrest_call(s, "GET", path, NULL, &answer, err);
    if (!rc)
        rc = slurm_job_parse(a, answer, out, err);
    json_decref(answer);
    return rc;
}

enum common_rc slurmrest_find(struct slurmrest *s, struct common_arena *a, const char *comment,
                              struct slurm_job_state *out, struct common_error *err)
{
    json_t *answer = NULL;
    enum common_rc rc = slurmrest_call(s, "GET", "/jobs", NULL, &answer, err);

    if (!rc)
        rc = slurm_jobs_find(a, answer, comment, out, err);
    json_decref(answer);
    return rc;
}

enum common_rc slurmrest_cancel(struct slurmrest *s, int64_t job_id, struct common_error *err)
{
    char path[64];
    enum common_rc rc;

    snprintf(path, sizeof(path), "/job/%" PRId64, job_id);
    rc = slurmrest_call(s, "DELETE", path, NULL, NULL, err);
    if (rc == COMMON_ENOTFOUND) {
        common_error_clear(err);
        rc = COMMON_OK;
    }
    return rc;
}
