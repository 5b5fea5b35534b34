/*
 * common/health.c - see health.h. The checks are an array guarded by one lock; a /readyz request
 * runs them in order into the response body and picks the status at the end.
 */
#include "common/health.h"

#include <pthread.h>
#include <string.h>

#include "common/alloc.h"
#include "common/httpd.h"
#include "common/metrics.h"

#define CHECK_NAME_MAX 63
#define EXCLUDES_MAX 16

struct check {
    char name[CHECK_NAME_MAX + 1];
    common_health_check fn;
    void *ctx;
};

struct common_health {
    struct common_metrics *metrics;
    pthread_mutex_t mu;
    struct check *checks;
    size_t n, cap;
};

static void on_alive(void *ctx, const struct common_httpd_request *req,
                     struct common_httpd_response *resp)
{
    common_httpd_respondf(resp, 200, "ok");
}

static void on_metrics(void *ctx, const struct common_httpd_request *req,
                       struct common_httpd_response *resp)
{
    struct common_health *hh = ctx;

    if (common_metrics_render(hh->metrics, &resp->body) != COMMON_OK) {
        common_httpd_respondf(resp, 500, "cannot render the metrics\n");
        return;
    }
    resp->content_type = COMMON_METRICS_CONTENT_TYPE;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* the values of every "exclude=" argument of the raw query, percent-decoded, into ex */
static size_t parse_excludes(const char *q, char ex[][CHECK_NAME_MAX + 1], size_t max)
{
    size_t n = 0;

    while (q && *q && n < max) {
        const char *end = strchr(q, '&');
        size_t len = end ? (size_t)(end - q) : strlen(q), o = 0;
        if (len > 8 && strncmp(q, "exclude=", 8) == 0) {
            for (size_t i = 8; i < len && o < CHECK_NAME_MAX; i++) {
                int c = (unsigned char)q[i];
                if (c == '%' && i + 2 < len && hexval(q[i + 1]) >= 0 && hexval(q[i + 2]) >= 0) {
                    c = hexval(q[i + 1]) * 16 + hexval(q[i + 2]);
                    i += 2;
                } else if (c == '+') {
                    c = ' ';
                }
                ex[n][o++] = (char)c;
            }
            ex[n++][o] = '\0';
        }
        q = end ? end + 1 : NULL;
    }
    return n;
}

/* run one check: its line into resp ("[+]name ok" / "[-]name failed: why"); 0 when it passed */
static int run_check(const struct check *c, struct common_httpd_response *resp)
{
    char why[COMMON_HEALTH_WHY_MAX];
    int bad;

    why[0] = '\0';
    bad = c->fn(c->ctx, why, sizeof(why)) != 0;
    why[sizeof(why) - 1] = '\0';
    for (char *p = why; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (!bad)
        common_buf_printf(&resp->body, NULL, "[+]%s ok\n", c->name);
    else if (why[0])
        common_buf_printf(&resp->body, NULL, "[-]%s failed: %s\n", c->name, why);
    else
        common_buf_printf(&resp->body, NULL, "[-]%s failed\n", c->name);
    return bad;
}

static void on_readyz(void *ctx, const struct common_httpd_request *req,
                      struct common_httpd_response *resp)
{
    struct common_health *hh = ctx;
    char ex[EXCLUDES_MAX][CHECK_NAME_MAX + 1];
    size_t nex = parse_excludes(req->query, ex, EXCLUDES_MAX);
    int failed = 0, verbose = common_httpd_query_arg(req, "verbose") != NULL;

    resp->content_type = "text/plain; charset=utf-8";
    pthread_mutex_lock(&hh->mu);
    for (size_t i = 0; i < hh->n; i++) {
        int skip = 0;
        for (size_t j = 0; j < nex && !skip; j++)
            skip = strcmp(ex[j], hh->checks[i].name) == 0;
        if (skip)
            common_buf_printf(&resp->body, NULL, "[+]%s excluded: ok\n", hh->checks[i].name);
        else
            failed |= run_check(&hh->checks[i], resp);
    }
    pthread_mutex_unlock(&hh->mu);
    if (failed) {
        resp->status = 503;
        common_buf_puts(&resp->body, "readyz check failed\n", NULL);
    } else if (verbose) {
        resp->status = 200;
        common_buf_puts(&resp->body, "readyz check passed\n", NULL);
    } else {
        common_httpd_respondf(resp, 200, "ok");
    }
}

static void on_readyz_one(void *ctx, const struct common_httpd_request *req,
                          struct common_httpd_response *resp)
{
    struct common_health *hh = ctx;
    const char *name = req->path + strlen("/readyz/");
    int found = 0, failed = 0;

    resp->content_type = "text/plain; charset=utf-8";
    pthread_mutex_lock(&hh->mu);
    for (size_t i = 0; i < hh->n && !found; i++)
        if (strcmp(hh->checks[i].name, name) == 0) {
            found = 1;
            failed = run_check(&hh->checks[i], resp);
        }
    pthread_mutex_unlock(&hh->mu);
    if (!found)
        common_httpd_respondf(resp, 404, "404 page not found\n");
    else if (failed)
        resp->status = 503;
    else
        common_httpd_respondf(resp, 200, "ok");
}

enum common_rc common_health_install(struct common_httpd *h, struct common_metrics *m,
                                     struct common_health **out, struct common_error *err)
{
    struct common_health *hh = common_calloc(1, sizeof(*hh));

    *out = NULL;
    if (!hh)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    hh->metrics = m;
    pthread_mutex_init(&hh->mu, NULL);
    if (common_httpd_route(h, "GET", "/healthz", on_alive, hh) != 0) {
        /* nothing points to hh yet: the server has started, or no memory */
        common_health_destroy(hh);
        return common_error_set(err, COMMON_EINVAL,
                                "health routes: server already started or out of memory");
    }
    *out = hh; /* from here on routes point to hh: the caller owns it even on failure */
    if (common_httpd_route(h, "GET", "/livez", on_alive, hh) != 0 ||
        common_httpd_route(h, "GET", "/readyz", on_readyz, hh) != 0 ||
        common_httpd_route(h, "GET", "/readyz/*", on_readyz_one, hh) != 0 ||
        (m && common_httpd_route(h, "GET", "/metrics", on_metrics, hh) != 0))
        return common_error_set(err, COMMON_ENOMEM, "health routes: out of memory");
    return COMMON_OK;
}

static int valid_check_name(const char *s)
{
    size_t n = 0;

    for (; s && s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '-' ||
              s[n] == '.'))
            return 0;
    return n >= 1 && n <= CHECK_NAME_MAX;
}

int common_health_add_check(struct common_health *hh, const char *name, common_health_check check,
                            void *ctx)
{
    int rc = -1;

    if (!hh || !check || !valid_check_name(name))
        return -1;
    pthread_mutex_lock(&hh->mu);
    for (size_t i = 0; i < hh->n; i++)
        if (strcmp(hh->checks[i].name, name) == 0)
            goto out;
    if (hh->n == hh->cap) {
        size_t cap = hh->cap ? hh->cap * 2 : 8;
        struct check *p = common_realloc(hh->checks, cap * sizeof(*p));
        if (!p)
            goto out;
        hh->checks = p;
        hh->cap = cap;
    }
    memset(&hh->checks[hh->n], 0, sizeof(hh->checks[hh->n]));
    memcpy(hh->checks[hh->n].name, name, strlen(name) + 1);
    hh->checks[hh->n].fn = check;
    hh->checks[hh->n].ctx = ctx;
    hh->n++;
    rc = 0;
out:
    pthread_mutex_unlock(&hh->mu);
    return rc;
}

void common_health_destroy(struct common_health *hh)
{
    if (!hh)
        return;
    common_free(hh->checks);
    pthread_mutex_destroy(&hh->mu);
    common_free(hh);
}
