/*
 * common/kubeconfig.c - read a kubeconfig file or the in-cluster service account.
 *
 * The file is loaded with common_yaml_load_file, so it reads as kubectl reads it (YAML 1.1
 * scalars, anchors, merge keys) and every error can point at "file:line:col". Only the entries
 * that the chosen context uses are checked: a kubeconfig full of exec users for other clusters
 * loads fine as long as the chosen user is one we can serve. Everything allocated goes through
 * common_malloc, so allocation-failure tests reach every path.
 */
#include "common/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/yaml.h"

#define KC_PATH_MAX 4096
#define KC_FIELD_MAX 256
#define KC_NAMESPACE_MAX 4096
#define KC_SA_ROOT "/var/run/secrets/kubernetes.io/serviceaccount"

/* One load: the file, its folder for relative paths, the documents and where results go. */
struct kc_load {
    const char *file;       /* the kubeconfig as named in messages */
    char base[KC_PATH_MAX]; /* absolute folder of the file, no trailing '/' (except "/") */
    struct common_yaml_docs docs;
    struct common_kubeconfig *out;
    struct common_error *err;
};

/* A user field we refuse, and why: silently ignoring it would authenticate as someone else. */
struct kc_unsupported {
    const char *key;
    const char *why;
};

static const struct kc_unsupported user_unsupported[] = {
    {"exec", "exec credential plugins are not supported; use a token, tokenFile or client "
             "certificate"},
    {"auth-provider", "auth-provider plugins are not supported; use a token, tokenFile or client "
                      "certificate"},
    {"username", "basic authentication (username/password) is not supported"},
    {"password", "basic authentication (username/password) is not supported"},
    {"as", "impersonation is not supported"},
    {"as-uid", "impersonation is not supported"},
    {"as-groups", "impersonation is not supported"},
    {"as-user-extra", "impersonation is not supported"},
};

static const struct kc_unsupported cluster_unsupported[] = {
    {"proxy-url", "proxy servers are not supported"},
};

/* ------------------------------------------------------------------------------------------ */
/* Messages */

/*
 * fail - record "file:line:col: prefix.key: what" and return code. The position is where key
 * was written in parent, else where parent starts; without either it is left out, and so is
 * the field when prefix and key are both NULL.
 */
__attribute__((format(printf, 6, 7))) static enum common_rc
fail(struct kc_load *k, enum common_rc code, json_t *parent, const char *prefix, const char *key,
     const char *fmt, ...)
{
    char what[512], field[KC_FIELD_MAX + 64], where[64];
    int line, col;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);

    where[0] = '\0';
    if ((parent && key && common_yaml_locate_key(&k->docs, parent, key, &line, &col) == 0) ||
        (parent && common_yaml_locate(&k->docs, parent, &line, &col) == 0))
        snprintf(where, sizeof(where), ":%d:%d", line, col);

    field[0] = '\0';
    if (prefix && key)
        snprintf(field, sizeof(field), " %s.%s:", prefix, key);
    else if (prefix || key)
        snprintf(field, sizeof(field), " %s:", prefix ? prefix : key);

    return common_error_set(k->err, code, "%s%s:%s %s", k->file, where, field, what);
}

static enum common_rc oom(struct common_error *err)
{
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

/* ------------------------------------------------------------------------------------------ */
/* Strings */

/* dup_into - *dst = a copy of s. */
static enum common_rc dup_into(char **dst, const char *s, struct common_error *err)
{
    *dst = common_strdup(s);
    return *dst ? COMMON_OK : oom(err);
}

/* alloc_printf - *dst = a new formatted string. */
__attribute__((format(printf, 3, 4))) static enum common_rc
alloc_printf(char **dst, struct common_error *err, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return common_error_set(err, COMMON_EINVAL, "cannot format a string");
    *dst = common_malloc((size_t)n + 1);
    if (!*dst)
        return oom(err);
    va_start(ap, fmt);
    vsnprintf(*dst, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return COMMON_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Typed field access. A key that is absent or null reads as not set, as in kubectl. */

/* is_set - the value counts as given: not null, not "", not an empty list. */
static int is_set(const json_t *v)
{
    if (!v || json_is_null(v))
        return 0;
    if (json_is_string(v) && json_string_length(v) == 0)
        return 0;
    if (json_is_array(v) && json_array_size(v) == 0)
        return 0;
    return 1;
}

/*
 * get_string - obj[key] as a string into *s (borrowed), NULL when absent, null or "".
 * Integers and booleans are taken in decimal and true/false form, as sigs.k8s.io/yaml turns
 * them into strings for string fields (so "token: 0400" is "256", as kubectl reads it); tmp
 * holds that form. Other types are an error.
 */
static enum common_rc get_string(struct kc_load *k, json_t *obj, const char *prefix,
                                 const char *key, const char **s, char tmp[32])
{
    json_t *v = json_object_get(obj, key);

    *s = NULL;
    if (!v || json_is_null(v))
        return COMMON_OK;
    if (json_is_string(v)) {
        if (json_string_length(v) != strlen(json_string_value(v)))
            return fail(k, COMMON_EINVAL, obj, prefix, key, "must not contain NUL characters");
        if (json_string_length(v) > 0)
            *s = json_string_value(v);
        return COMMON_OK;
    }
    if (json_is_integer(v)) {
        snprintf(tmp, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *s = tmp;
        return COMMON_OK;
    }
    if (json_is_boolean(v)) {
        *s = json_is_true(v) ? "true" : "false";
        return COMMON_OK;
    }
    return fail(k, COMMON_EINVAL, obj, prefix, key, "must be a string");
}

/* get_bool - obj[key] as true/false (YAML 1.1: yes/no/on/off too); absent or null is false. */
static enum common_rc get_bool(struct kc_load *k, json_t *obj, const char *prefix, const char *key,
                               int *b)
{
    json_t *v = json_object_get(obj, key);

    *b = 0;
    if (!v || json_is_null(v))
        return COMMON_OK;
    if (!json_is_boolean(v))
        return fail(k, COMMON_EINVAL, obj, prefix, key, "must be true or false");
    *b = json_is_true(v);
    return COMMON_OK;
}

/* get_object - obj[key] as a mapping into *o (borrowed); NULL when absent or null, which is an
 * error when required. */
static enum common_rc get_object(struct kc_load *k, json_t *obj, const char *prefix,
                                 const char *key, int required, json_t **o)
{
    json_t *v = json_object_get(obj, key);

    *o = NULL;
    if (!v || json_is_null(v)) {
        if (required)
            return fail(k, COMMON_EINVAL, obj, prefix, key, "is required");
        return COMMON_OK;
    }
    if (!json_is_object(v))
        return fail(k, COMMON_EINVAL, obj, prefix, key, "must be a mapping");
    *o = v;
    return COMMON_OK;
}

/* reject_unsupported - the first field of table set in obj is an error naming it. */
static enum common_rc reject_unsupported(struct kc_load *k, json_t *obj, const char *prefix,
                                         const struct kc_unsupported *table, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (is_set(json_object_get(obj, table[i].key)))
            return fail(k, COMMON_EINVAL, obj, prefix, table[i].key, "%s", table[i].why);
    return COMMON_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Base64 */

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/*
 * b64_decode - decode in[0..n) as Go's encoding/json decodes []byte (base64.StdEncoding):
 * '\r' and '\n' are skipped (so a folded block scalar works), padding is required, anything
 * else outside the alphabet is an error. On success *out is a new NUL-terminated buffer of
 * *out_len bytes. Returns COMMON_OK, COMMON_EINVAL with the reason in why (a static string)
 * and the offending byte's offset in *bad, or COMMON_ENOMEM.
 */
static enum common_rc b64_decode(const char *in, size_t n, char **out, size_t *out_len,
                                 const char **why, size_t *bad)
{
    unsigned char *clean = NULL, *dec = NULL;
    size_t len = 0, pad = 0, i;
    enum common_rc rc = COMMON_EINVAL;
    int got;

    *out = NULL;
    *out_len = 0;
    *bad = 0;
    *why = "";
    if (n > (size_t)INT32_MAX) {
        *why = "too long";
        return COMMON_EINVAL;
    }
    clean = common_malloc(n + 1);
    if (!clean)
        return COMMON_ENOMEM;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];

        if (c == '\r' || c == '\n')
            continue;
        if (c == '=') {
            pad++;
        } else if (b64_value(c) < 0) {
            *why = "a character outside the base64 alphabet";
            *bad = i;
            goto out;
        } else if (pad > 0) {
            *why = "data after '=' padding";
            *bad = i;
            goto out;
        }
        if (pad > 2) {
            *why = "too much '=' padding";
            *bad = i;
            goto out;
        }
        clean[len++] = c;
    }
    if (len % 4 != 0) {
        *why = "a length that is not a multiple of 4 (missing '=' padding?)";
        *bad = n;
        goto out;
    }
    dec = common_malloc(len / 4 * 3 + 1);
    if (!dec) {
        rc = COMMON_ENOMEM;
        goto out;
    }
    got = len ? EVP_DecodeBlock(dec, clean, (int)len) : 0;
    if (got < 0 || (size_t)got < pad) {
        *why = "data OpenSSL cannot decode";
        goto out;
    }
    /* EVP_DecodeBlock counts '=' as zero bytes; drop them. */
    *out_len = (size_t)got - pad;
    dec[*out_len] = '\0';
    *out = (char *)dec;
    dec = NULL;
    rc = COMMON_OK;
out:
    common_free(clean);
    common_free(dec);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Paths */

/* set_base - k->base = the absolute folder holding k->file. */
static enum common_rc set_base(struct kc_load *k)
{
    const char *slash = strrchr(k->file, '/');
    size_t dlen = slash ? (size_t)(slash - k->file) : 0;
    char cwd[KC_PATH_MAX];
    int n;

    if (k->file[0] == '/') {
        n = snprintf(k->base, sizeof(k->base), "%.*s", (int)(dlen ? dlen : 1), k->file);
    } else {
        if (!getcwd(cwd, sizeof(cwd)))
            return common_error_set(k->err, COMMON_EIO, "%s: cannot find the current folder: %s",
                                    k->file, strerror(errno));
        if (dlen == 0 || (dlen == 1 && k->file[0] == '.'))
            n = snprintf(k->base, sizeof(k->base), "%s", cwd);
        else
            n = snprintf(k->base, sizeof(k->base), "%s%s%.*s", cwd,
                         strcmp(cwd, "/") == 0 ? "" : "/", (int)dlen, k->file);
    }
    if (n < 0 || (size_t)n >= sizeof(k->base))
        return common_error_set(k->err, COMMON_EINVAL, "%s: path longer than %d bytes", k->file,
                                KC_PATH_MAX - 1);
    return COMMON_OK;
}

/*
 * check_file - path must name a readable file: COMMON_ENOTFOUND when it does not exist,
 * COMMON_EIO when it cannot be opened (errno in *err_no) or is a folder (*is_dir set).
 * Records no message: callers know the field.
 */
static enum common_rc check_file(const char *path, int *err_no, int *is_dir)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    *err_no = 0;
    *is_dir = 0;
    if (fd < 0) {
        *err_no = errno;
        return errno == ENOENT || errno == ENOTDIR ? COMMON_ENOTFOUND : COMMON_EIO;
    }
    if (fstat(fd, &st) != 0) {
        *err_no = errno;
        close(fd);
        return COMMON_EIO;
    }
    close(fd);
    if (S_ISDIR(st.st_mode)) {
        *is_dir = 1;
        return COMMON_EIO;
    }
    return COMMON_OK;
}

/*
 * set_path - obj[key], a file path, resolved against the kubeconfig's folder when relative,
 * into *dst (new string, NULL when not set). The file must exist and be readable.
 */
static enum common_rc set_path(struct kc_load *k, json_t *obj, const char *prefix, const char *key,
                               char **dst)
{
    const char *rel;
    char tmp[32];
    enum common_rc rc;
    int err_no, is_dir;

    rc = get_string(k, obj, prefix, key, &rel, tmp);
    if (rc != COMMON_OK || !rel)
        return rc;
    if (rel[0] == '/')
        rc = dup_into(dst, rel, k->err);
    else
        rc =
            alloc_printf(dst, k->err, "%s%s%s", k->base, strcmp(k->base, "/") == 0 ? "" : "/", rel);
    if (rc != COMMON_OK)
        return rc;
    rc = check_file(*dst, &err_no, &is_dir);
    if (rc == COMMON_ENOTFOUND)
        return fail(k, rc, obj, prefix, key, "%s: no such file", *dst);
    if (rc != COMMON_OK)
        return fail(k, rc, obj, prefix, key, "%s: %s", *dst,
                    is_dir ? "is a folder, not a file" : strerror(err_no));
    return COMMON_OK;
}

/* set_data - obj[key], base64 text, decoded into *dst and *len (NULL and 0 when not set). */
static enum common_rc set_data(struct kc_load *k, json_t *obj, const char *prefix, const char *key,
                               char **dst, size_t *len)
{
    const char *text, *why;
    char tmp[32];
    size_t bad;
    enum common_rc rc;

    rc = get_string(k, obj, prefix, key, &text, tmp);
    if (rc != COMMON_OK || !text)
        return rc;
    rc = b64_decode(text, strlen(text), dst, len, &why, &bad);
    if (rc == COMMON_ENOMEM)
        return oom(k->err);
    if (rc != COMMON_OK)
        return fail(k, rc, obj, prefix, key, "invalid base64: %s at byte %zu", why, bad);
    return COMMON_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* The named lists: clusters, users, contexts */

/*
 * find_named - the entry of root[list] ({name, <inner>: {...}}) called name. Its inner mapping
 * goes into *inner and its field path ("clusters[2].cluster") into prefix. Returns COMMON_OK,
 * COMMON_ENOTFOUND (*inner NULL, no message: the caller knows who asked), or COMMON_EINVAL for a
 * list, entry or name of the wrong type, a duplicate name, or a missing inner mapping.
 */
static enum common_rc find_named(struct kc_load *k, json_t *root, const char *list,
                                 const char *inner_key, const char *name, json_t **inner,
                                 char prefix[KC_FIELD_MAX])
{
    json_t *arr = json_object_get(root, list), *entry, *found = NULL;
    size_t i, found_at = 0;
    char here[KC_FIELD_MAX], tmp[32];
    const char *n;
    enum common_rc rc;

    *inner = NULL;
    if (!arr || json_is_null(arr))
        return COMMON_ENOTFOUND;
    if (!json_is_array(arr))
        return fail(k, COMMON_EINVAL, root, NULL, list, "must be a list");
    json_array_foreach(arr, i, entry)
    {
        snprintf(here, sizeof(here), "%s[%zu]", list, i);
        if (!json_is_object(entry))
            return fail(k, COMMON_EINVAL,
                        (json_is_null(entry) || json_is_boolean(entry)) ? arr : entry, here, NULL,
                        "must be a mapping");
        rc = get_string(k, entry, here, "name", &n, tmp);
        if (rc != COMMON_OK)
            return rc;
        if (!n || strcmp(n, name) != 0)
            continue;
        if (found)
            return fail(k, COMMON_EINVAL, entry, here, "name",
                        "duplicate name \"%s\" (also %s[%zu])", name, list, found_at);
        found = entry;
        found_at = i;
    }
    if (!found)
        return COMMON_ENOTFOUND;
    snprintf(here, sizeof(here), "%s[%zu]", list, found_at);
    rc = get_object(k, found, here, inner_key, 1, inner);
    if (rc != COMMON_OK)
        return rc;
    if (snprintf(prefix, KC_FIELD_MAX, "%s.%s", here, inner_key) >= KC_FIELD_MAX)
        prefix[KC_FIELD_MAX - 1] = '\0'; /* cannot happen: list and inner_key are short */
    return COMMON_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Cluster and user */

/* load_cluster - server, TLS settings and CA of the cluster mapping cl. */
static enum common_rc load_cluster(struct kc_load *k, json_t *cl, const char *prefix)
{
    struct common_kubeconfig *out = k->out;
    const char *server, *sni;
    char tmp[32];
    size_t len;
    enum common_rc rc;

    rc = reject_unsupported(k, cl, prefix, cluster_unsupported,
                            sizeof(cluster_unsupported) / sizeof(cluster_unsupported[0]));
    if (rc != COMMON_OK)
        return rc;

    rc = get_string(k, cl, prefix, "server", &server, tmp);
    if (rc != COMMON_OK)
        return rc;
    if (!server)
        return fail(k, COMMON_EINVAL, cl, prefix, "server", "is required");
    len = strlen(server);
    while (len > 0 && server[len - 1] == '/')
        len--;
    if (len <= (strstr(server, "://") ? (size_t)(strstr(server, "://") - server) + 3 : 0))
        return fail(k, COMMON_EINVAL, cl, prefix, "server", "\"%s\" has no host", server);
    if (strstr(server, "://")) {
        if (strncasecmp(server, "https://", 8) != 0 && strncasecmp(server, "http://", 7) != 0)
            return fail(k, COMMON_EINVAL, cl, prefix, "server",
                        "\"%s\": the scheme must be https or http", server);
        rc = alloc_printf(&out->server, k->err, "%.*s", (int)len, server);
    } else {
        /* client-go's default for a bare host:port when TLS is configured */
        rc = alloc_printf(&out->server, k->err, "https://%.*s", (int)len, server);
    }
    if (rc != COMMON_OK)
        return rc;

    rc = get_string(k, cl, prefix, "tls-server-name", &sni, tmp);
    if (rc == COMMON_OK && sni)
        rc = dup_into(&out->tls_server_name, sni, k->err);
    if (rc == COMMON_OK)
        rc = get_bool(k, cl, prefix, "insecure-skip-tls-verify", &out->insecure);
    if (rc == COMMON_OK)
        rc = set_path(k, cl, prefix, "certificate-authority", &out->ca_file);
    if (rc == COMMON_OK)
        rc =
            set_data(k, cl, prefix, "certificate-authority-data", &out->ca_data, &out->ca_data_len);
    if (rc != COMMON_OK)
        return rc;
    if (out->ca_file && out->ca_data)
        return fail(k, COMMON_EINVAL, cl, prefix, "certificate-authority-data",
                    "certificate-authority is given too; give only one");
    if (out->insecure && (out->ca_file || out->ca_data))
        return fail(k, COMMON_EINVAL, cl, prefix, "insecure-skip-tls-verify",
                    "cannot be combined with a certificate authority");
    return COMMON_OK;
}

/* load_user - the credentials of the user mapping u. */
static enum common_rc load_user(struct kc_load *k, json_t *u, const char *prefix)
{
    struct common_kubeconfig *out = k->out;
    const char *token;
    char tmp[32];
    enum common_rc rc;
    int has_cert, has_key;

    rc = reject_unsupported(k, u, prefix, user_unsupported,
                            sizeof(user_unsupported) / sizeof(user_unsupported[0]));
    if (rc == COMMON_OK)
        rc = set_path(k, u, prefix, "client-certificate", &out->cert_file);
    if (rc == COMMON_OK)
        rc =
            set_data(k, u, prefix, "client-certificate-data", &out->cert_data, &out->cert_data_len);
    if (rc == COMMON_OK)
        rc = set_path(k, u, prefix, "client-key", &out->key_file);
    if (rc == COMMON_OK)
        rc = set_data(k, u, prefix, "client-key-data", &out->key_data, &out->key_data_len);
    if (rc == COMMON_OK)
        rc = get_string(k, u, prefix, "token", &token, tmp);
    if (rc == COMMON_OK && token)
        rc = dup_into(&out->token, token, k->err);
    if (rc == COMMON_OK)
        rc = set_path(k, u, prefix, "tokenFile", &out->token_file);
    if (rc != COMMON_OK)
        return rc;

    if (out->cert_file && out->cert_data)
        return fail(k, COMMON_EINVAL, u, prefix, "client-certificate-data",
                    "client-certificate is given too; give only one");
    if (out->key_file && out->key_data)
        return fail(k, COMMON_EINVAL, u, prefix, "client-key-data",
                    "client-key is given too; give only one");
    has_cert = out->cert_file || out->cert_data;
    has_key = out->key_file || out->key_data;
    if (has_cert && !has_key)
        return fail(k, COMMON_EINVAL, u, prefix,
                    out->cert_file ? "client-certificate" : "client-certificate-data",
                    "needs client-key or client-key-data");
    if (has_key && !has_cert)
        return fail(k, COMMON_EINVAL, u, prefix, out->key_file ? "client-key" : "client-key-data",
                    "needs client-certificate or client-certificate-data");
    return COMMON_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Loading */

/* pick_file - the kubeconfig to read: path, else $KUBECONFIG's first entry, else
 * ~/.kube/config (the last two copied into buf). */
static enum common_rc pick_file(const char *path, char buf[KC_PATH_MAX], const char **file,
                                struct common_error *err)
{
    const char *env = getenv("KUBECONFIG"), *home, *end;
    int n;

    *file = path;
    if (path)
        return COMMON_OK;
    /* client-go merges every file of the list; we read the first (empty entries skipped). */
    while (env && *env == ':')
        env++;
    if (env && *env) {
        end = strchr(env, ':');
        n = snprintf(buf, KC_PATH_MAX, "%.*s", (int)(end ? (size_t)(end - env) : strlen(env)), env);
    } else {
        home = getenv("HOME");
        if (!home || !*home)
            return common_error_set(err, COMMON_ENOTFOUND,
                                    "no kubeconfig: neither $KUBECONFIG nor $HOME is set");
        n = snprintf(buf, KC_PATH_MAX, "%s/.kube/config", home);
    }
    if (n < 0 || n >= KC_PATH_MAX)
        return common_error_set(err, COMMON_EINVAL, "kubeconfig path longer than %d bytes",
                                KC_PATH_MAX - 1);
    *file = buf;
    return COMMON_OK;
}

/* load_context - choose the context, then its cluster, user and namespace. */
static enum common_rc load_context(struct kc_load *k, json_t *root, const char *want)
{
    char ctx_prefix[KC_FIELD_MAX], cl_prefix[KC_FIELD_MAX], user_prefix[KC_FIELD_MAX];
    char tmp[32], tmp2[32], tmp3[32];
    const char *name = want, *cluster, *user, *ns;
    json_t *ctx, *cl, *u;
    enum common_rc rc;

    if (!name || !*name) {
        rc = get_string(k, root, NULL, "current-context", &name, tmp);
        if (rc != COMMON_OK)
            return rc;
        if (!name)
            return fail(k, COMMON_ENOTFOUND, root, NULL, "current-context",
                        "not set, and no context was asked for");
    }
    rc = find_named(k, root, "contexts", "context", name, &ctx, ctx_prefix);
    if (rc == COMMON_ENOTFOUND) {
        if (want && *want)
            return fail(k, rc, NULL, NULL, NULL, "context \"%s\" not found", name);
        return fail(k, rc, root, NULL, "current-context", "context \"%s\" not found", name);
    }
    if (rc != COMMON_OK)
        return rc;
    rc = dup_into(&k->out->context, name, k->err);
    if (rc != COMMON_OK)
        return rc;

    rc = get_string(k, ctx, ctx_prefix, "cluster", &cluster, tmp2);
    if (rc != COMMON_OK)
        return rc;
    if (!cluster)
        return fail(k, COMMON_EINVAL, ctx, ctx_prefix, "cluster", "is required");
    rc = find_named(k, root, "clusters", "cluster", cluster, &cl, cl_prefix);
    if (rc == COMMON_ENOTFOUND)
        return fail(k, rc, ctx, ctx_prefix, "cluster", "cluster \"%s\" not found", cluster);
    if (rc == COMMON_OK)
        rc = load_cluster(k, cl, cl_prefix);
    if (rc != COMMON_OK)
        return rc;

    /* A context without a user talks to the cluster anonymously, as in kubectl. */
    rc = get_string(k, ctx, ctx_prefix, "user", &user, tmp3);
    if (rc != COMMON_OK)
        return rc;
    if (user) {
        rc = find_named(k, root, "users", "user", user, &u, user_prefix);
        if (rc == COMMON_ENOTFOUND)
            return fail(k, rc, ctx, ctx_prefix, "user", "user \"%s\" not found", user);
        if (rc == COMMON_OK)
            rc = load_user(k, u, user_prefix);
        if (rc != COMMON_OK)
            return rc;
    }

    rc = get_string(k, ctx, ctx_prefix, "namespace", &ns, tmp);
    if (rc == COMMON_OK && ns)
        rc = dup_into(&k->out->namespace, ns, k->err);
    return rc;
}

enum common_rc common_kubeconfig_load(const char *path, const char *context,
                                      struct common_kubeconfig *out, struct common_error *err)
{
    struct kc_load k;
    char file[KC_PATH_MAX];
    json_t *root = NULL;
    enum common_rc rc;
    int line, col;

    memset(out, 0, sizeof(*out));
    memset(&k, 0, sizeof(k));
    k.out = out;
    k.err = err;
    rc = pick_file(path, file, &k.file, err);
    if (rc != COMMON_OK)
        goto out;
    rc = set_base(&k);
    if (rc != COMMON_OK)
        goto out;
    rc = common_yaml_load_file(k.file, NULL, &k.docs, err);
    if (rc != COMMON_OK)
        goto out;
    if (k.docs.n > 1) {
        rc = common_error_set(err, COMMON_EINVAL,
                              "%s:%d:1: a kubeconfig is one YAML document; this is document %zu",
                              k.file, k.docs.doc_line[1], (size_t)2);
        goto out;
    }
    if (k.docs.n == 1 && !json_is_null(k.docs.docs[0]))
        root = k.docs.docs[0];
    if (root && !json_is_object(root)) {
        if (common_yaml_locate(&k.docs, root, &line, &col) != 0)
            line = col = 1;
        rc = common_error_set(err, COMMON_EINVAL, "%s:%d:%d: a kubeconfig must be a mapping",
                              k.file, line, col);
        goto out;
    }
    /* An empty file reads as an empty Config (root NULL): "current-context: not set". */
    rc = load_context(&k, root, context);
out:
    common_yaml_docs_free(&k.docs);
    if (rc != COMMON_OK)
        common_kubeconfig_free(out);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* In-cluster */

/* valid_port - 1..65535 in decimal. */
static int valid_port(const char *p)
{
    unsigned long v = 0;
    size_t i;

    for (i = 0; p[i]; i++) {
        if (p[i] < '0' || p[i] > '9' || i >= 5)
            return 0;
        v = v * 10 + (unsigned long)(p[i] - '0');
    }
    return i > 0 && v >= 1 && v <= 65535;
}

/* read_namespace - the trimmed first line of path into *dst; NULL when the file is missing or
 * blank. */
static enum common_rc read_namespace(const char *path, char **dst, struct common_error *err)
{
    struct common_buf b;
    enum common_rc rc;
    size_t start = 0, end;

    common_buf_init(&b, KC_NAMESPACE_MAX);
    rc = common_buf_read_file(&b, path, err);
    if (rc == COMMON_ENOTFOUND) {
        common_error_clear(err);
        rc = COMMON_OK;
        goto out;
    }
    if (rc != COMMON_OK || !b.data)
        goto out;
    end = b.len;
    while (start < end && strchr(" \t\r\n", b.data[start]))
        start++;
    while (end > start && strchr(" \t\r\n", b.data[end - 1]))
        end--;
    if (end > start) {
        *dst = common_strndup(b.data + start, end - start);
        if (!*dst)
            rc = oom(err);
    }
out:
    common_buf_free(&b);
    return rc;
}

enum common_rc common_kubeconfig_in_cluster(const char *root, struct common_kubeconfig *out,
                                            struct common_error *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    char *path = NULL;
    enum common_rc rc;
    int err_no, is_dir, bracket;

    memset(out, 0, sizeof(*out));
    if (!root)
        root = KC_SA_ROOT;
    if (!host || !*host)
        return common_error_set(err, COMMON_ENOTFOUND,
                                "not running in a pod: KUBERNETES_SERVICE_HOST is not set");
    if (!port || !*port)
        return common_error_set(err, COMMON_ENOTFOUND,
                                "not running in a pod: KUBERNETES_SERVICE_PORT is not set");
    if (!valid_port(port))
        return common_error_set(err, COMMON_EINVAL,
                                "KUBERNETES_SERVICE_PORT \"%s\" is not a port number", port);

    /* net.JoinHostPort: an IPv6 literal goes in brackets */
    bracket = strchr(host, ':') != NULL && host[0] != '[';
    rc = alloc_printf(&out->server, err, "https://%s%s%s:%s", bracket ? "[" : "", host,
                      bracket ? "]" : "", port);
    if (rc != COMMON_OK)
        goto out;

    rc = alloc_printf(&out->token_file, err, "%s/token", root);
    if (rc != COMMON_OK)
        goto out;
    rc = check_file(out->token_file, &err_no, &is_dir);
    if (rc == COMMON_ENOTFOUND) {
        common_error_set(err, rc, "not running in a pod: %s: no such file", out->token_file);
        goto out;
    }
    if (rc != COMMON_OK) {
        common_error_set(err, rc, "%s: %s", out->token_file,
                         is_dir ? "is a folder, not a file" : strerror(err_no));
        goto out;
    }

    /* client-go goes on without the CA when it cannot be read; so do we. */
    rc = alloc_printf(&path, err, "%s/ca.crt", root);
    if (rc != COMMON_OK)
        goto out;
    if (check_file(path, &err_no, &is_dir) == COMMON_OK) {
        out->ca_file = path;
        path = NULL;
    }

    common_free(path);
    path = NULL;
    rc = alloc_printf(&path, err, "%s/namespace", root);
    if (rc == COMMON_OK)
        rc = read_namespace(path, &out->namespace, err);
out:
    common_free(path);
    if (rc != COMMON_OK)
        common_kubeconfig_free(out);
    return rc;
}

void common_kubeconfig_free(struct common_kubeconfig *c)
{
    if (!c)
        return;
    /* Secrets do not linger in freed memory. */
    if (c->key_data)
        OPENSSL_cleanse(c->key_data, c->key_data_len);
    if (c->token)
        OPENSSL_cleanse(c->token, strlen(c->token));
    common_free(c->server);
    common_free(c->tls_server_name);
    common_free(c->ca_file);
    common_free(c->ca_data);
    common_free(c->cert_file);
    common_free(c->key_file);
    common_free(c->cert_data);
    common_free(c->key_data);
    common_free(c->token);
    common_free(c->token_file);
    common_free(c->namespace);
    common_free(c->context);
    memset(c, 0, sizeof(*c));
}
