/*
 * cmd/certmgr.c - managed webhook certificates for `serve` (see cmd/certmgr.h, docs/certs.md).
 */
#include "cmd/certmgr.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/certs.h"
#include "common/log.h"

#define MAX_NAMES 16
#define MAX_CONFIGS 8
#define STEP_MAX_S 60

static const struct common_kube_resource mutating_res = {"admissionregistration.k8s.io", "v1",
                                                         "mutatingwebhookconfigurations", 0};
static const struct common_kube_resource validating_res = {"admissionregistration.k8s.io", "v1",
                                                           "validatingwebhookconfigurations", 0};

struct config_ref {
    const struct common_kube_resource *res;
    const char *kind; /* for logs */
    char name[254];
};

struct certmgr {
    struct common_kube *kube;
    struct certmgr_settings s;
    struct common_certs_policy policy;
    char cert_file[PATH_MAX], key_file[PATH_MAX];
    /* the serving certificate's names */
    char dns_buf[CERTMGR_STR_MAX], ips_buf[CERTMGR_STR_MAX];
    const char *dns[MAX_NAMES], *ips[MAX_NAMES];
    struct common_certs_names names;
    struct config_ref configs[MAX_CONFIGS];
    size_t nconfigs;
    atomic_int serving_ready;
    int waiting_logged;
};

/* ---- settings ---- */

void certmgr_settings_default(struct certmgr_settings *s)
{
    const char *pod_ns = getenv("POD_NAMESPACE");
    struct common_certs_policy p;

    common_certs_policy_default(&p);
    memset(s, 0, sizeof(*s));
    snprintf(s->cert_dir, sizeof(s->cert_dir), "/tmp/trainsched-certs");
    snprintf(s->secret_name, sizeof(s->secret_name), "trainsched-webhook-certs");
    snprintf(s->secret_namespace, sizeof(s->secret_namespace), "%s",
             pod_ns && *pod_ns ? pod_ns : "trainsched-system");
    snprintf(s->service, sizeof(s->service), "trainsched-controller");
    snprintf(s->webhook_configurations, sizeof(s->webhook_configurations), "trainsched");
    s->ca_lifetime_s = p.ca_lifetime_s;
    s->serving_lifetime_s = p.serving_lifetime_s;
    s->publish_grace_s = p.publish_grace_s;
    s->switch_grace_s = p.switch_grace_s;
    s->renew_num = p.renew_num;
    s->renew_den = p.renew_den;
}

static int set_str(char *dst, size_t size, const char *v, char *why, size_t why_size)
{
    if (strlen(v) >= size) {
        snprintf(why, why_size, "longer than %zu bytes", size - 1);
        return -1;
    }
    snprintf(dst, size, "%s", v);
    return 0;
}

/* a duration ("90s", "2m", "1h30m") or plain seconds; zero_ok: "0" and "0s" give 0 */
static int parse_secs(const char *v, int zero_ok, int64_t *out, char *why, size_t why_size)
{
    struct common_error e;
    char *end;
    long long n;

    if (zero_ok && (strcmp(v, "0") == 0 || strcmp(v, "0s") == 0)) {
        *out = 0;
        return 0;
    }
    errno = 0;
    n = strtoll(v, &end, 10);
    if (!errno && end != v && !*end) {
        if (n < 1 || n > COMMON_CERTS_LIFETIME_MAX) {
            snprintf(why, why_size, "must be a duration of %s1 s to %lld s", zero_ok ? "0 or " : "",
                     (long long)COMMON_CERTS_LIFETIME_MAX);
            return -1;
        }
        *out = n;
        return 0;
    }
    if (common_certs_parse_duration(v, out, &e) != COMMON_OK) {
        snprintf(why, why_size, "%s", e.msg);
        return -1;
    }
    return 0;
}

/* "N/D" or a decimal strictly between 0 and 1 (as thousandths) */
static int parse_fraction(const char *v, int *num, int *den, char *why, size_t why_size)
{
    char *end;
    long n, d;
    double f;

    if (strchr(v, '/')) {
        errno = 0;
        n = strtol(v, &end, 10);
        if (errno || end == v || *end != '/')
            goto bad;
        d = strtol(end + 1, &end, 10);
        if (errno || *end || n < 1 || d < 2 || d > 1000 || n >= d)
            goto bad;
        *num = (int)n;
        *den = (int)d;
        return 0;
    }
    errno = 0;
    f = strtod(v, &end);
    if (errno || end == v || *end || !(f > 0 && f < 1))
        goto bad;
    n = (long)(f * 1000 + 0.5);
    if (n < 1 || n > 999)
        goto bad;
    *num = (int)n;
    *den = 1000;
    return 0;
bad:
    snprintf(why, why_size,
             "must be a fraction strictly between 0 and 1: N/D (D up to 1000) or a "
             "decimal (thousandths)");
    return -1;
}

int certmgr_apply_setting(struct certmgr_settings *s, const char *flag, const char *v, char *why,
                          size_t why_size)
{
    if (strcmp(flag, "--tls-managed") == 0) {
        if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
            s->managed = 1;
        else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
            s->managed = 0;
        else {
            snprintf(why, why_size, "must be true or false");
            return -1;
        }
        return 0;
    }
    if (strcmp(flag, "--tls-cert-dir") == 0)
        return set_str(s->cert_dir, sizeof(s->cert_dir), v, why, why_size);
    if (strcmp(flag, "--tls-secret-name") == 0)
        return set_str(s->secret_name, sizeof(s->secret_name), v, why, why_size);
    if (strcmp(flag, "--tls-secret-namespace") == 0)
        return set_str(s->secret_namespace, sizeof(s->secret_namespace), v, why, why_size);
    if (strcmp(flag, "--tls-service-name") == 0)
        return set_str(s->service, sizeof(s->service), v, why, why_size);
    if (strcmp(flag, "--tls-extra-dns") == 0)
        return set_str(s->extra_dns, sizeof(s->extra_dns), v, why, why_size);
    if (strcmp(flag, "--tls-extra-ips") == 0)
        return set_str(s->extra_ips, sizeof(s->extra_ips), v, why, why_size);
    if (strcmp(flag, "--tls-webhook-configurations") == 0)
        return set_str(s->webhook_configurations, sizeof(s->webhook_configurations), v, why,
                       why_size);
    if (strcmp(flag, "--tls-ca-lifetime") == 0)
        return parse_secs(v, 0, &s->ca_lifetime_s, why, why_size);
    if (strcmp(flag, "--tls-serving-lifetime") == 0)
        return parse_secs(v, 0, &s->serving_lifetime_s, why, why_size);
    if (strcmp(flag, "--tls-publish-grace") == 0)
        return parse_secs(v, 1, &s->publish_grace_s, why, why_size);
    if (strcmp(flag, "--tls-switch-grace") == 0)
        return parse_secs(v, 1, &s->switch_grace_s, why, why_size);
    if (strcmp(flag, "--tls-renew-fraction") == 0)
        return parse_fraction(v, &s->renew_num, &s->renew_den, why, why_size);
    return -2;
}

void certmgr_print_settings(const struct certmgr_settings *s, FILE *out)
{
    fprintf(out,
            "  managed: %s\n  certDir: %s\n  secretName: %s\n  secretNamespace: %s\n"
            "  serviceName: %s\n  extraDNS: %s\n  extraIPs: %s\n"
            "  webhookConfigurations: %s\n  caLifetime: %llds\n  servingLifetime: %llds\n"
            "  publishGrace: %llds\n  switchGrace: %llds\n  renewFraction: \"%d/%d\"\n",
            s->managed ? "true" : "false", cli_yaml_quote(s->cert_dir),
            cli_yaml_quote(s->secret_name), cli_yaml_quote(s->secret_namespace),
            cli_yaml_quote(s->service), cli_yaml_quote(s->extra_dns), cli_yaml_quote(s->extra_ips),
            cli_yaml_quote(s->webhook_configurations), (long long)s->ca_lifetime_s,
            (long long)s->serving_lifetime_s, (long long)s->publish_grace_s,
            (long long)s->switch_grace_s, s->renew_num, s->renew_den);
}

static void policy_of(const struct certmgr_settings *s, struct common_certs_policy *p)
{
    common_certs_policy_default(p);
    p->ca_lifetime_s = s->ca_lifetime_s;
    p->serving_lifetime_s = s->serving_lifetime_s;
    p->publish_grace_s = s->publish_grace_s;
    p->switch_grace_s = s->switch_grace_s;
    p->renew_num = s->renew_num;
    p->renew_den = s->renew_den;
    p->rotate_ca = 1;
}

/* split a comma list (spaces around entries dropped) of buf in place into out[] */
static int split_list(char *buf, const char **out, size_t max, size_t *n)
{
    char *p = buf;
    *n = 0;
    while (*p) {
        char *start, *end;
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        start = p;
        while (*p && *p != ',')
            p++;
        end = p;
        if (*p)
            *p++ = 0;
        while (end > start && end[-1] == ' ')
            *--end = 0;
        if (*n == max)
            return -1;
        out[(*n)++] = start;
    }
    return 0;
}

static enum common_rc parse_configs(const char *list, struct config_ref *out, size_t *n,
                                    struct common_error *err)
{
    char buf[CERTMGR_STR_MAX];
    const char *items[MAX_CONFIGS];
    size_t k;

    snprintf(buf, sizeof(buf), "%s", list);
    if (split_list(buf, items, MAX_CONFIGS, &k))
        return common_error_set(err, COMMON_EINVAL,
                                "tls.webhookConfigurations: more than %d entries", MAX_CONFIGS);
    *n = 0;
    for (size_t i = 0; i < k; i++) {
        const char *name = items[i];
        int want_m = 1, want_v = 1;
        if (strncmp(name, "mutating:", 9) == 0) {
            want_v = 0;
            name += 9;
        } else if (strncmp(name, "validating:", 11) == 0) {
            want_m = 0;
            name += 11;
        }
        if (!*name || strlen(name) > 253)
            return common_error_set(err, COMMON_EINVAL,
                                    "tls.webhookConfigurations: bad entry \"%s\"", items[i]);
        if (*n + (size_t)want_m + (size_t)want_v > MAX_CONFIGS)
            return common_error_set(err, COMMON_EINVAL,
                                    "tls.webhookConfigurations: more than %d configurations",
                                    MAX_CONFIGS);
        if (want_m) {
            out[*n].res = &mutating_res;
            out[*n].kind = "MutatingWebhookConfiguration";
            snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
            (*n)++;
        }
        if (want_v) {
            out[*n].res = &validating_res;
            out[*n].kind = "ValidatingWebhookConfiguration";
            snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
            (*n)++;
        }
    }
    return COMMON_OK;
}

/* fill the names of cm from its settings */
static enum common_rc names_of(struct certmgr *cm, struct common_error *err)
{
    size_t nd, ni;
    snprintf(cm->dns_buf, sizeof(cm->dns_buf), "%s", cm->s.extra_dns);
    snprintf(cm->ips_buf, sizeof(cm->ips_buf), "%s", cm->s.extra_ips);
    if (split_list(cm->dns_buf, cm->dns, MAX_NAMES, &nd))
        return common_error_set(err, COMMON_EINVAL, "tls.extraDNS: more than %d names", MAX_NAMES);
    if (split_list(cm->ips_buf, cm->ips, MAX_NAMES, &ni))
        return common_error_set(err, COMMON_EINVAL, "tls.extraIPs: more than %d addresses",
                                MAX_NAMES);
    cm->names.service = cm->s.service;
    cm->names.namespace = cm->s.secret_namespace;
    cm->names.dns = cm->dns;
    cm->names.ndns = nd;
    cm->names.ips = cm->ips;
    cm->names.nips = ni;
    return COMMON_OK;
}

/* the whole check, on a scratch manager (names need their buffers) */
static enum common_rc check_all(struct certmgr *cm, struct common_error *err)
{
    struct common_arena *a;
    struct common_certs_pair ca, tls;
    enum common_rc rc;
    int64_t now = (int64_t)time(NULL);

    policy_of(&cm->s, &cm->policy);
    if ((rc = common_certs_policy_check(&cm->policy, err)) != COMMON_OK) {
        common_error_prefix(err, "tls (managed certificates)");
        return rc;
    }
    if (!cm->s.secret_name[0] || !cm->s.secret_namespace[0])
        return common_error_set(err, COMMON_EINVAL,
                                "tls.secretName and tls.secretNamespace must not be empty");
    if ((rc = names_of(cm, err)) != COMMON_OK ||
        (rc = parse_configs(cm->s.webhook_configurations, cm->configs, &cm->nconfigs, err)) !=
            COMMON_OK)
        return rc;
    /* the names: what common_certs_make_serving accepts (a throw-away certificate) */
    a = common_arena_create(0);
    if (!a)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = common_certs_make_ca(a, "trainsched-check", now, COMMON_CERTS_DAY_S, &ca, err);
    if (rc == COMMON_OK)
        rc = common_certs_make_serving(a, &ca, &cm->names, now, 3600, &tls, err);
    if (rc != COMMON_OK)
        common_error_prefix(err, "tls.serviceName/secretNamespace/extraDNS/extraIPs");
    common_arena_destroy(a);
    return rc;
}

enum common_rc certmgr_settings_check(const struct certmgr_settings *s, struct common_error *err)
{
    struct certmgr *cm;
    enum common_rc rc;
    if (!s->managed)
        return COMMON_OK;
    cm = common_calloc(1, sizeof(*cm));
    if (!cm)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    cm->s = *s;
    rc = check_all(cm, err);
    common_free(cm);
    return rc;
}

void certmgr_default_files(const struct certmgr_settings *s, char cert_file[PATH_MAX],
                           char key_file[PATH_MAX])
{
    if (!cert_file[0])
        snprintf(cert_file, PATH_MAX, "%.*s/tls.crt", PATH_MAX - 9, s->cert_dir);
    if (!key_file[0])
        snprintf(key_file, PATH_MAX, "%.*s/tls.key", PATH_MAX - 9, s->cert_dir);
}

/* mkdir -p with mode 0700 for the directory part of path */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX], *p;
    snprintf(buf, sizeof(buf), "%s", path);
    p = strrchr(buf, '/');
    if (!p || p == buf)
        return 0;
    *p = 0;
    for (p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

struct certmgr *certmgr_create(const struct certmgr_opts *o, struct common_error *err)
{
    struct certmgr *cm = common_calloc(1, sizeof(*cm));
    if (!cm) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    cm->kube = o->kube;
    cm->s = *o->settings;
    snprintf(cm->cert_file, sizeof(cm->cert_file), "%s", o->cert_file);
    snprintf(cm->key_file, sizeof(cm->key_file), "%s", o->key_file);
    if (check_all(cm, err) != COMMON_OK) {
        common_free(cm);
        return NULL;
    }
    if (make_dirs(cm->cert_file) || make_dirs(cm->key_file)) {
        common_error_set(err, COMMON_EIO, "%s: cannot create its directory: %s", cm->cert_file,
                         strerror(errno));
        common_free(cm);
        return NULL;
    }
    return cm;
}

void certmgr_destroy(struct certmgr *cm)
{
    common_free(cm);
}

int certmgr_serving_ready(const struct certmgr *cm)
{
    return cm && atomic_load(&((struct certmgr *)cm)->serving_ready);
}

/* ---- the Secret ---- */

static const char *meta_str(const json_t *obj, const char *key)
{
    const char *v = json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
    return v ? v : "";
}

/* GET the Secret into *obj (NULL when absent) and decode it into *s (zeroed when absent) */
static enum common_rc read_secret(struct certmgr *cm, struct common_arena *a, json_t **obj,
                                  struct common_certs_secret *s, struct common_error *err)
{
    enum common_rc rc;
    *obj = NULL;
    memset(s, 0, sizeof(*s));
    rc = common_kube_get(cm->kube, &common_kube_secrets, cm->s.secret_namespace, cm->s.secret_name,
                         obj, err);
    if (rc == COMMON_ENOTFOUND)
        return COMMON_ENOTFOUND;
    if (rc != COMMON_OK)
        return rc;
    rc = common_certs_secret_from_json(a, *obj, s, err);
    if (rc != COMMON_OK) {
        json_decref(*obj);
        *obj = NULL;
        common_error_prefix(err, "Secret %s/%s", cm->s.secret_namespace, cm->s.secret_name);
    }
    return rc;
}

/*
 * Write s: create when existing is NULL, else update existing (its resourceVersion, labels,
 * other annotations and type kept) with s's data and our annotations. *written (new reference)
 * gets the stored object. COMMON_ECONFLICT for a stale resourceVersion or a create that lost.
 */
static enum common_rc write_secret(struct certmgr *cm, const json_t *existing,
                                   const struct common_certs_secret *s, json_t **written,
                                   struct common_error *err)
{
    json_t *fresh = common_certs_secret_new_json(s, cm->s.secret_name, cm->s.secret_namespace);
    struct common_kube_write_opts wo = {.field_manager = "trainsched"};
    enum common_rc rc;

    *written = NULL;
    if (!fresh)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (!existing) {
        json_t *meta = json_object_get(fresh, "metadata");
        json_object_set_new(meta, "labels",
                            json_pack("{s:s}", "app.kubernetes.io/managed-by", "trainsched"));
        rc = common_kube_create(cm->kube, &common_kube_secrets, cm->s.secret_namespace, fresh, &wo,
                                written, err);
        if (rc == COMMON_EEXISTS)
            rc = COMMON_ECONFLICT;
    } else {
        json_t *o = json_deep_copy(existing), *meta, *ann, *fann;
        if (!o) {
            json_decref(fresh);
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        json_object_set(o, "data", json_object_get(fresh, "data"));
        meta = json_object_get(o, "metadata");
        json_object_del(meta, "managedFields");
        ann = json_object_get(meta, "annotations");
        if (!json_is_object(ann)) {
            ann = json_object();
            json_object_set_new(meta, "annotations", ann);
        }
        json_object_del(ann, COMMON_CERTS_ANN_PUBLISHED_AT);
        json_object_del(ann, COMMON_CERTS_ANN_PUBLISHED_SHA256);
        fann = json_object_get(json_object_get(fresh, "metadata"), "annotations");
        if (json_is_object(fann))
            json_object_update(ann, fann);
        rc = common_kube_update(cm->kube, &common_kube_secrets, cm->s.secret_namespace, o, &wo,
                                written, err);
        json_decref(o);
    }
    json_decref(fresh);
    return rc;
}

/* ---- the webhook configurations ---- */

/* every webhook of obj has clientConfig.caBundle == b64 */
static int carries(const json_t *obj, const char *b64)
{
    const json_t *hooks = json_object_get(obj, "webhooks"), *h;
    size_t i;
    json_array_foreach((json_t *)hooks, i, h)
    {
        const char *cb =
            json_string_value(json_object_get(json_object_get(h, "clientConfig"), "caBundle"));
        if (!cb || strcmp(cb, b64) != 0)
            return 0;
    }
    return 1;
}

/* JSON patch of every webhook's caBundle, guarded by obj's resourceVersion */
static enum common_rc patch_bundle(struct certmgr *cm, const struct config_ref *c,
                                   const json_t *obj, const char *b64, struct common_error *err)
{
    json_t *ops = json_array(), *h;
    const json_t *hooks = json_object_get(obj, "webhooks");
    struct common_kube_write_opts wo = {.field_manager = "trainsched"};
    enum common_rc rc;
    char *body;
    size_t i;

    if (!ops)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "test", "path",
                                         "/metadata/resourceVersion", "value",
                                         meta_str(obj, "resourceVersion")));
    json_array_foreach((json_t *)hooks, i, h)
    {
        char path[64];
        snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
        json_array_append_new(
            ops, json_pack("{s:s, s:s, s:s}", "op", "add", "path", path, "value", b64));
    }
    body = json_dumps(ops, JSON_COMPACT);
    json_decref(ops);
    if (!body)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = common_kube_patch(cm->kube, c->res, NULL, c->name, COMMON_KUBE_JSON_PATCH, body, &wo, NULL,
                           err);
    common_free(body);
    /* a failed "test" (the configuration changed since we read it) is a 422 */
    if (rc == COMMON_EINVAL && strstr(err->msg, "test"))
        rc = COMMON_ECONFLICT;
    return rc;
}

/*
 * Make every configured webhook configuration carry bundle; read them back. Returns 1 when all
 * (that exist) carry it, 0 when some do not yet, -1 on an API error (logged).
 */
static int publish(struct certmgr *cm, struct common_arena *a, const char *bundle)
{
    char *b64 = common_certs_base64(a, bundle, strlen(bundle));
    int patched[MAX_CONFIGS] = {0}, any = 0, all = 1;
    struct common_error e;

    if (!b64)
        return -1;
    for (size_t i = 0; i < cm->nconfigs; i++) {
        const struct config_ref *c = &cm->configs[i];
        json_t *obj = NULL;
        enum common_rc rc = common_kube_get(cm->kube, c->res, NULL, c->name, &obj, &e);
        if (rc == COMMON_ENOTFOUND) {
            common_log(COMMON_LOG_DEBUG, "certificates: webhook configuration not found", "kind",
                       c->kind, "name", c->name, NULL);
            continue;
        }
        if (rc != COMMON_OK) {
            common_log(COMMON_LOG_WARN, "certificates: cannot read a webhook configuration", "kind",
                       c->kind, "name", c->name, "error", e.msg, NULL);
            return -1;
        }
        if (!carries(obj, b64)) {
            rc = patch_bundle(cm, c, obj, b64, &e);
            if (rc == COMMON_OK) {
                patched[i] = any = 1;
                common_log(COMMON_LOG_INFO, "certificates: caBundle patched", "kind", c->kind,
                           "name", c->name, NULL);
            } else {
                common_log(rc == COMMON_ECONFLICT ? COMMON_LOG_INFO : COMMON_LOG_WARN,
                           "certificates: caBundle not patched (will retry)", "kind", c->kind,
                           "name", c->name, "error", e.msg, NULL);
                all = 0;
            }
        }
        json_decref(obj);
    }
    if (!any || !all)
        return all;
    /* read back what we patched */
    for (size_t i = 0; i < cm->nconfigs; i++) {
        const struct config_ref *c = &cm->configs[i];
        json_t *obj = NULL;
        if (!patched[i])
            continue;
        if (common_kube_get(cm->kube, c->res, NULL, c->name, &obj, &e) != COMMON_OK) {
            common_log(COMMON_LOG_WARN, "certificates: cannot read back a webhook configuration",
                       "kind", c->kind, "name", c->name, "error", e.msg, NULL);
            return -1;
        }
        if (!carries(obj, b64))
            all = 0;
        json_decref(obj);
    }
    return all;
}

/* ---- the leader ---- */

static void log_serving(const char *msg, struct common_arena *a,
                        const struct common_certs_secret *s, const char *action, const char *reason)
{
    struct common_certs_info ti, ci;
    struct common_error e;
    char tls_end[32] = "", ca_end[32] = "", ncas[16];
    const char *tls_serial = "", *ca_subject = "";
    int cas = 0;
    const char *p;

    if (s->tls_crt && common_certs_info(a, s->tls_crt, &ti, &e) == COMMON_OK) {
        common_certs_format_time(ti.not_after, tls_end, sizeof(tls_end));
        tls_serial = ti.serial;
    }
    if (s->ca_crt && common_certs_info(a, s->ca_crt, &ci, &e) == COMMON_OK) {
        common_certs_format_time(ci.not_after, ca_end, sizeof(ca_end));
        ca_subject = ci.subject;
    }
    for (p = s->ca_bundle; p && (p = strstr(p, "-----BEGIN CERTIFICATE-----")) != NULL; p++)
        cas++;
    snprintf(ncas, sizeof(ncas), "%d", cas);
    common_log(COMMON_LOG_INFO, msg, "action", action, "reason", reason, "servingSerial",
               tls_serial, "servingNotAfter", tls_end, "ca", ca_subject, "caNotAfter", ca_end,
               "bundleCAs", ncas, NULL);
}

int64_t certmgr_leader_step(struct certmgr *cm, int64_t now)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_secret in, out;
    struct common_certs_view v;
    struct common_certs_decision d;
    struct common_error e;
    json_t *obj = NULL, *written = NULL;
    enum common_rc rc;
    int64_t next = now + STEP_MAX_S;
    const char *bundle;
    int pub;

    if (!a)
        return now + 5;
    rc = read_secret(cm, a, &obj, &in, &e);
    if (rc != COMMON_OK && rc != COMMON_ENOTFOUND) {
        /* an unreadable Secret is left alone (an admin may be editing it); an unreachable API
         * server is retried */
        common_log(rc == COMMON_EINVAL ? COMMON_LOG_ERROR : COMMON_LOG_WARN,
                   "certificates: cannot read the Secret", "error", e.msg, NULL);
        next = now + (rc == COMMON_EINVAL ? 30 : 5);
        goto done;
    }
    if (common_certs_observe(&in, &cm->names, &v, &e) != COMMON_OK) {
        next = now + 5;
        goto done;
    }
    common_certs_decide(&v, &cm->policy, now, &d);
    if (d.action != COMMON_CERTS_NOTHING) {
        rc = common_certs_apply(a, d.action, &in, &cm->names, &cm->policy, now, &out, &e);
        if (rc != COMMON_OK) {
            common_log(COMMON_LOG_ERROR, "certificates: cannot carry out the action", "action",
                       common_certs_action_name(d.action), "error", e.msg, NULL);
            next = now + 30;
            goto done;
        }
        rc = write_secret(cm, obj, &out, &written, &e);
        if (rc != COMMON_OK) {
            common_log(rc == COMMON_ECONFLICT ? COMMON_LOG_INFO : COMMON_LOG_WARN,
                       "certificates: Secret not written (will decide again)", "action",
                       common_certs_action_name(d.action), "error", e.msg, NULL);
            next = now + (rc == COMMON_ECONFLICT ? 1 : 5);
            goto done;
        }
        log_serving("certificates: rotation step", a, &out, common_certs_action_name(d.action),
                    d.reason);
        json_decref(obj);
        obj = written;
        written = NULL;
        in = out;
        next = now + 1;
    } else {
        if (d.ca_expiring)
            common_log(COMMON_LOG_WARN, "certificates: the CA is past its renewal point", "reason",
                       d.reason, NULL);
        if (d.next_s < next)
            next = d.next_s > now ? d.next_s : now + 1;
    }
    /* publish: every webhook configuration carries the bundle; then record it */
    bundle = in.ca_bundle ? in.ca_bundle : in.ca_crt;
    if (!bundle)
        goto done;
    pub = publish(cm, a, bundle);
    if (pub != 1) {
        next = now + (pub < 0 ? 5 : 2);
        goto done;
    }
    if (in.bundle_published_at == 0) {
        in.bundle_published_at = now;
        rc = write_secret(cm, obj, &in, &written, &e);
        if (rc != COMMON_OK) {
            common_log(rc == COMMON_ECONFLICT ? COMMON_LOG_INFO : COMMON_LOG_WARN,
                       "certificates: publication not recorded (will retry)", "error", e.msg, NULL);
            next = now + (rc == COMMON_ECONFLICT ? 1 : 5);
            goto done;
        }
        log_serving("certificates: CA bundle published on every webhook configuration", a, &in,
                    "publish", "every caBundle equals ca-bundle.crt");
        next = now + 1;
    }
done:
    json_decref(obj);
    json_decref(written);
    common_arena_destroy(a);
    return next;
}

/* ---- every replica ---- */

/* the file's content equals text */
static int file_equals(const char *path, const char *text)
{
    FILE *f = fopen(path, "rb");
    size_t n = strlen(text), got;
    char *buf;
    int eq;
    if (!f)
        return 0;
    buf = common_malloc(n + 1);
    if (!buf) {
        fclose(f);
        return 0;
    }
    got = fread(buf, 1, n + 1, f);
    eq = got == n && memcmp(buf, text, n) == 0;
    fclose(f);
    common_free(buf);
    return eq;
}

/* write text to path atomically: a temporary file in the same directory, fsync, rename */
static int write_atomic(const char *path, const char *text, mode_t mode, struct common_error *err)
{
    char tmp[PATH_MAX + 16];
    size_t n = strlen(text), off = 0;
    int fd;

    if (snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path) >= (int)sizeof(tmp))
        return common_error_set(err, COMMON_EINVAL, "%s: path too long", path);
    fd = mkstemp(tmp);
    if (fd < 0)
        return common_error_set(err, COMMON_EIO, "%s: %s", tmp, strerror(errno));
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            goto fail;
        off += (size_t)w;
    }
    if (fchmod(fd, mode) != 0 || fsync(fd) != 0)
        goto fail;
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0)
        goto fail;
    return COMMON_OK;
fail:
    common_error_set(err, COMMON_EIO, "%s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return COMMON_EIO;
}

int certmgr_replica_sync(struct certmgr *cm)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_secret s;
    struct common_certs_pair pair;
    struct common_error e;
    json_t *obj = NULL;
    enum common_rc rc;
    int result = -1;

    if (!a)
        return -1;
    rc = read_secret(cm, a, &obj, &s, &e);
    if (rc == COMMON_ENOTFOUND || (rc == COMMON_OK && (!s.tls_crt || !s.tls_key))) {
        if (!cm->waiting_logged)
            common_log(COMMON_LOG_INFO,
                       "certificates: waiting for the leader to write the serving certificate",
                       "secret", cm->s.secret_name, "namespace", cm->s.secret_namespace, NULL);
        cm->waiting_logged = 1;
        goto done;
    }
    if (rc != COMMON_OK) {
        common_log(COMMON_LOG_WARN, "certificates: cannot read the Secret", "error", e.msg, NULL);
        goto done;
    }
    if (file_equals(cm->cert_file, s.tls_crt) && file_equals(cm->key_file, s.tls_key)) {
        atomic_store(&cm->serving_ready, 1);
        result = 0;
        goto done;
    }
    pair.cert_pem = s.tls_crt;
    pair.key_pem = s.tls_key;
    if (common_certs_pair_check(&pair, 0, "the Secret's tls.crt/tls.key", &e) != COMMON_OK) {
        common_log(COMMON_LOG_WARN, "certificates: serving pair not loaded", "error", e.msg, NULL);
        goto done;
    }
    /* the key first: the pair on disk is mismatched only between the two renames, and serve
     * reloads right after this call, never in between */
    if (write_atomic(cm->key_file, s.tls_key, 0600, &e) != COMMON_OK ||
        write_atomic(cm->cert_file, s.tls_crt, 0644, &e) != COMMON_OK) {
        common_log(COMMON_LOG_ERROR, "certificates: cannot write the serving files", "error", e.msg,
                   NULL);
        goto done;
    }
    {
        struct common_certs_info ti;
        char end[32] = "";
        const char *serial = "";
        if (common_certs_info(a, s.tls_crt, &ti, &e) == COMMON_OK) {
            common_certs_format_time(ti.not_after, end, sizeof(end));
            serial = ti.serial;
        }
        common_log(COMMON_LOG_INFO, "certificates: serving files updated from the Secret", "cert",
                   cm->cert_file, "serial", serial, "notAfter", end, NULL);
    }
    atomic_store(&cm->serving_ready, 1);
    result = 1;
done:
    json_decref(obj);
    common_arena_destroy(a);
    return result;
}
