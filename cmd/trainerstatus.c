/*
 * cmd/trainerstatus.c - serve's TrainJobStatus settings and the reconciler's CA source (see
 * cmd/trainerstatus.h).
 */
#include "cmd/trainerstatus.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "common/alloc.h"
#include "common/names.h"
#include "common/arena.h"
#include "common/certs.h"

#define CA_REFRESH_S 30

void trainer_status_settings_default(struct trainer_status_settings *s)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->address, sizeof(s->address), ":10443");
    s->qps = 5;
    s->burst = 10;
}

static int copy(char *dst, size_t size, const char *v, char *why, size_t why_size)
{
    if (strlen(v) >= size) {
        snprintf(why, why_size, "longer than %zu bytes", size - 1);
        return -1;
    }
    snprintf(dst, size, "%s", v);
    return 0;
}

int trainer_status_apply_setting(struct trainer_status_settings *s, const char *flag, const char *v,
                                 char *why, size_t why_size)
{
    char *end;
    double d;

    if (strcmp(flag, "--trainjob-status") == 0) {
        if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
            s->enabled = 1;
        else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
            s->enabled = 0;
        else {
            snprintf(why, why_size, "must be true or false");
            return -1;
        }
        return 0;
    }
    if (strcmp(flag, "--trainjob-status-address") == 0) {
        if (!strrchr(v, ':')) {
            snprintf(why, why_size, "want HOST:PORT (no port)");
            return -1;
        }
        return copy(s->address, sizeof(s->address), v, why, why_size);
    }
    if (strcmp(flag, "--trainjob-status-ca-file") == 0)
        return copy(s->ca_file, sizeof(s->ca_file), v, why, why_size);
    if (strcmp(flag, "--trainjob-status-url") == 0) {
        if (*v && trainer_status_check_url(v, why, why_size))
            return -1;
        return copy(s->url, sizeof(s->url), v, why, why_size);
    }
    if (strcmp(flag, "--trainjob-status-qps") == 0 ||
        strcmp(flag, "--trainjob-status-burst") == 0) {
        int burst = strcmp(flag, "--trainjob-status-burst") == 0;
        errno = 0;
        d = strtod(v, &end);
        if (errno || end == v || *end || d != d) {
            snprintf(why, why_size, "not a number");
            return -1;
        }
        if (d < (burst ? 1 : 0.1) || d > 100000 || (burst && d != (int)d)) {
            snprintf(why, why_size, "must be a %s from %g to 100000",
                     burst ? "whole number" : "number", burst ? 1 : 0.1);
            return -1;
        }
        if (burst)
            s->burst = (int)d;
        else
            s->qps = d;
        return 0;
    }
    return -2;
}

int trainer_status_check_url(const char *v, char *why, size_t size)
{
    const char *host = v + 8, *end, *colon;
    char *pend;
    long port;

    if (strncmp(v, "https://", 8) != 0) {
        snprintf(why, size, "want https://HOST[:PORT] (scheme https)");
        return -1;
    }
    end = host + strcspn(host, "/?#");
    if (*end) {
        snprintf(why, size, "want https://HOST[:PORT] without a path, query or fragment");
        return -1;
    }
    if (*host == '[') { /* [IPv6]:PORT */
        const char *close = strchr(host, ']');
        if (!close || close == host + 1 ||
            strspn(host + 1, "0123456789abcdefABCDEF:.") != (size_t)(close - host - 1)) {
            snprintf(why, size, "want https://HOST[:PORT]: bad [IPv6] host");
            return -1;
        }
        colon = close[1] == ':' ? close + 1 : close[1] ? host : NULL;
        if (colon == host) {
            snprintf(why, size, "want https://HOST[:PORT]: junk after the [IPv6] host");
            return -1;
        }
    } else {
        char name[254];
        size_t n;
        const char *bad;

        colon = strchr(host, ':');
        n = colon ? (size_t)(colon - host) : strlen(host);
        if (memchr(host, '@', n) || (colon && strchr(colon, '@'))) {
            snprintf(why, size, "want https://HOST[:PORT]: no user name or password in the URL");
            return -1;
        }
        if (n == 0) {
            snprintf(why, size, "want https://HOST[:PORT]: no host");
            return -1;
        }
        if (n >= sizeof(name)) {
            snprintf(why, size, "want https://HOST[:PORT]: the host is longer than 253 characters");
            return -1;
        }
        for (size_t i = 0; i < n; i++) /* host names are case-insensitive */
            name[i] = (char)(host[i] >= 'A' && host[i] <= 'Z' ? host[i] - 'A' + 'a' : host[i]);
        name[n] = '\0';
        if ((bad = common_names_dns1123_subdomain(name))) {
            snprintf(why, size, "want https://HOST[:PORT]: host \"%.*s\": %s", (int)n, host, bad);
            return -1;
        }
    }
    if (colon) {
        errno = 0;
        port = strtol(colon + 1, &pend, 10);
        if (errno || pend == colon + 1 || *pend || colon[1] == '+' || colon[1] == '-' ||
            colon[1] == '0' || port < 1 || port > 65535) {
            snprintf(why, size, "want https://HOST[:PORT]: port must be 1-65535");
            return -1;
        }
    }
    return 0;
}

void trainer_status_print_settings(const struct trainer_status_settings *s, FILE *out)
{
    fprintf(out,
            "trainerStatus:\n  enabled: %s\n  address: %s\n  url: %s\n  caFile: %s\n"
            "  qps: %g\n  burst: %d\n",
            s->enabled ? "true" : "false", cli_yaml_quote(s->address), cli_yaml_quote(s->url),
            cli_yaml_quote(s->ca_file), s->qps, s->burst);
}

int trainer_status_url(const struct trainer_status_settings *s, const char *service, const char *ns,
                       char *buf, size_t size)
{
    const char *port = strrchr(s->address, ':');
    int n;

    if (s->url[0])
        n = snprintf(buf, size, "%s", s->url);
    else if (!port || !port[1])
        return -1;
    else
        n = snprintf(buf, size, "https://%s.%s.svc:%s", service, ns, port + 1);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

struct trainer_status_ca {
    struct common_kube *kube;
    char ca_file[PATH_MAX], ns[254], name[254];
    pthread_mutex_t mu;
    char *pem;     /* the last CA read */
    time_t got_at; /* when (monotonic seconds) */
};

struct trainer_status_ca *trainer_status_ca_create(struct common_kube *kube, const char *ca_file,
                                                   const char *secret_ns, const char *secret_name)
{
    struct trainer_status_ca *ca = common_calloc(1, sizeof(*ca));
    if (!ca)
        return NULL;
    ca->kube = kube;
    snprintf(ca->ca_file, sizeof(ca->ca_file), "%s", ca_file ? ca_file : "");
    snprintf(ca->ns, sizeof(ca->ns), "%s", secret_ns ? secret_ns : "");
    snprintf(ca->name, sizeof(ca->name), "%s", secret_name ? secret_name : "");
    pthread_mutex_init(&ca->mu, NULL);
    return ca;
}

void trainer_status_ca_destroy(struct trainer_status_ca *ca)
{
    if (!ca)
        return;
    pthread_mutex_destroy(&ca->mu);
    common_free(ca->pem);
    common_free(ca);
}

static time_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

/* the CA now, from the file or the Secret (common_malloc'd) */
static enum common_rc read_ca(struct trainer_status_ca *ca, char **pem, struct common_error *err)
{
    enum common_rc rc;

    if (ca->ca_file[0]) {
        return common_certs_ca_file_read(ca->ca_file, pem, err);
    } else {
        json_t *secret = NULL;
        struct common_arena *a = common_arena_create(0);
        struct common_certs_secret s;
        const char *use;

        if (!a)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        rc = common_kube_get(ca->kube, &common_kube_secrets, ca->ns, ca->name, &secret, err);
        if (rc == COMMON_OK)
            rc = common_certs_secret_from_json(a, secret, &s, err);
        if (rc == COMMON_OK) {
            use = s.ca_bundle ? s.ca_bundle : s.ca_crt;
            if (!use || !*use)
                rc = common_error_set(err, COMMON_ENOTFOUND,
                                      "Secret %s/%s has no ca.crt (nor ca-bundle.crt)", ca->ns,
                                      ca->name);
            else if (!(*pem = common_strdup(use)))
                rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        } else {
            common_error_prefix(err, "Secret %s/%s", ca->ns, ca->name);
        }
        json_decref(secret);
        common_arena_destroy(a);
        return rc;
    }
}

enum common_rc trainer_status_ca_get(void *ctx, char **pem, struct common_error *err)
{
    struct trainer_status_ca *ca = ctx;
    enum common_rc rc = COMMON_OK;
    char *fresh = NULL;

    *pem = NULL;
    pthread_mutex_lock(&ca->mu);
    if (!ca->pem || mono() - ca->got_at >= CA_REFRESH_S) {
        rc = read_ca(ca, &fresh, err);
        if (rc == COMMON_OK) {
            common_free(ca->pem);
            ca->pem = fresh;
            ca->got_at = mono();
        }
    }
    if (rc == COMMON_OK && !(*pem = common_strdup(ca->pem)))
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
    pthread_mutex_unlock(&ca->mu);
    return rc;
}
