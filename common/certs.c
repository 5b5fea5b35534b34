/*
 * common/certs.c - certificates with OpenSSL 3 and the phased rotation (see certs.h and
 * docs/certs.md).
 */
#include "common/certs.h"

#include <arpa/inet.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/intmath.h"
#include "common/leader.h"
#include "common/names.h"

#define CN_MAX 64                /* ub-common-name (X.520) */
#define SECRET_VALUE_MAX 1048576 /* a Secret holds at most 1 MiB in all */

/* ------------------------------------------------------------------------------------------ */
/* Small helpers */

/* COMMON_EIO with OpenSSL's last reason; clears OpenSSL's error queue. */
static enum common_rc ssl_fail(struct common_error *err, const char *what)
{
    char reason[256] = "unknown OpenSSL error";
    unsigned long e = ERR_peek_last_error();

    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    return common_error_set(err, COMMON_EIO, "%s failed: %s", what, reason);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil) */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int asn1_to_epoch(const ASN1_TIME *t, int64_t *out)
{
    struct tm tm;

    if (!t || !ASN1_TIME_to_tm(t, &tm))
        return -1;
    *out = days_from_civil((int64_t)tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday) * 86400 +
           tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec;
    return 0;
}

int common_certs_format_time(int64_t t, char *buf, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    int n;

    if (!gmtime_r(&tt, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
        return -1;
    n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

static char *bio_to_arena(struct common_arena *a, BIO *bio)
{
    char *mem = NULL;
    long n = BIO_get_mem_data(bio, &mem);

    if (n < 0 || (n > 0 && !mem))
        return NULL;
    return common_arena_strndup(a, n ? mem : "", (size_t)n);
}

static int no_password(char *buf, int size, int rwflag, void *u)
{
    return -1; /* encrypted keys are not supported: never prompt on a terminal */
}

char *common_certs_base64(struct common_arena *a, const void *data, size_t n)
{
    char *out;

    if (n > (size_t)INT32_MAX / 2)
        return NULL;
    out = common_arena_alloc(a, 4 * ((n + 2) / 3) + 1);
    if (!out)
        return NULL;
    if (n)
        EVP_EncodeBlock((unsigned char *)out, data, (int)n);
    return out;
}

static int is_ip_literal(const char *s)
{
    unsigned char buf[16];

    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* ------------------------------------------------------------------------------------------ */
/* PEM */

X509 *common_certs_x509_from_pem(const char *pem, const char *what, struct common_error *err)
{
    BIO *bio;
    X509 *x;

    if (!pem) {
        common_error_set(err, COMMON_EINVAL, "%s: no certificate", what);
        return NULL;
    }
    bio = BIO_new_mem_buf(pem, -1);
    if (!bio) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    x = PEM_read_bio_X509(bio, NULL, no_password, NULL);
    BIO_free(bio);
    if (!x) {
        char reason[256] = "no CERTIFICATE block";
        unsigned long e = ERR_peek_last_error();
        if (e && ERR_GET_REASON(e) != PEM_R_NO_START_LINE)
            ERR_error_string_n(e, reason, sizeof(reason));
        ERR_clear_error();
        common_error_set(err, COMMON_EINVAL, "%s: not a PEM certificate: %s", what, reason);
    }
    return x;
}

EVP_PKEY *common_certs_key_from_pem(const char *pem, const char *what, struct common_error *err)
{
    BIO *bio;
    EVP_PKEY *k;

    if (!pem) {
        common_error_set(err, COMMON_EINVAL, "%s: no private key", what);
        return NULL;
    }
    bio = BIO_new_mem_buf(pem, -1);
    if (!bio) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    k = PEM_read_bio_PrivateKey(bio, NULL, no_password, NULL);
    BIO_free(bio);
    if (!k) {
        char reason[256] = "no PRIVATE KEY block";
        unsigned long e = ERR_peek_last_error();
        if (e && ERR_GET_REASON(e) != PEM_R_NO_START_LINE)
            ERR_error_string_n(e, reason, sizeof(reason));
        ERR_clear_error();
        common_error_set(err, COMMON_EINVAL, "%s: not an unencrypted PEM private key: %s", what,
                         reason);
    }
    return k;
}

char *common_certs_x509_to_pem(struct common_arena *a, X509 *x)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *s = NULL;

    if (bio && PEM_write_bio_X509(bio, x))
        s = bio_to_arena(a, bio);
    BIO_free(bio);
    ERR_clear_error();
    return s;
}

enum common_rc common_certs_ca_file_read(const char *path, char **pem, struct common_error *err)
{
    struct common_buf b;
    BIO *in = NULL, *out = BIO_new(BIO_s_mem());
    char *name = NULL, *header = NULL;
    unsigned char *data = NULL;
    long len;
    int n = 0;
    enum common_rc rc;

    *pem = NULL;
    common_buf_init(&b, 1u << 20);
    rc = common_buf_read_file(&b, path, err);
    if (rc != COMMON_OK)
        goto out;
    if (!out || !(in = BIO_new_mem_buf(b.data ? b.data : "", (int)b.len))) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    for (;;) {
        unsigned long e;
        ERR_clear_error();
        if (!PEM_read_bio(in, &name, &header, &data, &len)) {
            e = ERR_peek_last_error();
            if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
                break;
            rc = common_error_set(err, COMMON_EINVAL, "%s: block %d: not valid PEM: %s", path,
                                  n + 1, e ? ERR_reason_error_string(e) : "unreadable");
            goto out;
        }
        n++;
        if (strcmp(name, "CERTIFICATE") == 0) {
            const unsigned char *p = data;
            X509 *x = d2i_X509(NULL, &p, len);
            int ok = x && p == data + len && PEM_write_bio_X509(out, x);
            X509_free(x);
            if (!ok) {
                rc = common_error_set(err, COMMON_EINVAL,
                                      "%s: block %d: not a valid X.509 certificate", path, n);
                goto out;
            }
        }
        OPENSSL_free(name);
        OPENSSL_free(header);
        OPENSSL_free(data);
        name = header = NULL;
        data = NULL;
    }
    if (BIO_pending(out) == 0) {
        rc = common_error_set(err, COMMON_EINVAL, "%s: no PEM certificate in the file", path);
        goto out;
    }
    if (!(*pem = common_calloc(1, (size_t)BIO_pending(out) + 1)) ||
        BIO_read(out, *pem, BIO_pending(out)) <= 0) {
        common_free(*pem);
        *pem = NULL;
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
out:
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_free(data);
    BIO_free(in);
    BIO_free(out);
    ERR_clear_error();
    common_buf_free(&b);
    return rc;
}

char *common_certs_key_to_pem(struct common_arena *a, EVP_PKEY *key)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *s = NULL;

    if (bio && PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL))
        s = bio_to_arena(a, bio);
    BIO_free(bio);
    ERR_clear_error();
    return s;
}

/* Every CERTIFICATE block of pem, in order, into a new stack (*out). Returns COMMON_OK (an
 * empty stack when pem has none), COMMON_EINVAL when a block does not parse, COMMON_ENOMEM. */
static enum common_rc read_bundle(const char *pem, const char *what, STACK_OF(X509) * *out,
                                  struct common_error *err)
{
    STACK_OF(X509) *sk = sk_X509_new_null();
    BIO *bio = NULL;
    enum common_rc rc = COMMON_ENOMEM;

    *out = NULL;
    if (!sk)
        goto out;
    if (!pem) {
        *out = sk;
        return COMMON_OK;
    }
    bio = BIO_new_mem_buf(pem, -1);
    if (!bio)
        goto out;
    for (;;) {
        X509 *x = PEM_read_bio_X509(bio, NULL, no_password, NULL);
        unsigned long e;

        if (x) {
            if (!sk_X509_push(sk, x)) {
                X509_free(x);
                goto out;
            }
            continue;
        }
        e = ERR_peek_last_error();
        ERR_clear_error();
        if (e && ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
            break; /* end of the text */
        rc = common_error_set(err, COMMON_EINVAL, "%s: certificate %d does not parse", what,
                              sk_X509_num(sk) + 1);
        goto out;
    }
    *out = sk;
    sk = NULL;
    rc = COMMON_OK;
out:
    if (rc == COMMON_ENOMEM)
        common_error_set(err, rc, "out of memory");
    BIO_free(bio);
    sk_X509_pop_free(sk, X509_free);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Making certificates */

static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
    int ok;

    if (!ext)
        return 0;
    ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}

static int set_serial(X509 *x)
{
    unsigned char b[16];
    BIGNUM *bn = NULL;
    ASN1_INTEGER *ai = NULL;
    int ok = 0;

    if (RAND_bytes(b, sizeof(b)) != 1)
        return 0;
    b[sizeof(b) - 1] |= 1; /* never zero (RFC 5280: serials are positive) */
    bn = BN_bin2bn(b, sizeof(b), NULL);
    if (bn)
        ai = BN_to_ASN1_INTEGER(bn, NULL);
    if (ai)
        ok = X509_set_serialNumber(x, ai);
    ASN1_INTEGER_free(ai);
    BN_free(bn);
    return ok;
}

static int set_times(X509 *x, int64_t nb, int64_t na)
{
    return ASN1_TIME_set(X509_getm_notBefore(x), (time_t)nb) &&
           ASN1_TIME_set(X509_getm_notAfter(x), (time_t)na);
}

static EVP_PKEY *new_p256(void)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

static enum common_rc check_lifetime(int64_t lifetime_s, const char *what, struct common_error *err)
{
    if (lifetime_s < 1 || lifetime_s > COMMON_CERTS_LIFETIME_MAX)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: %lld seconds is out of range (1 second to 100 years)", what,
                                (long long)lifetime_s);
    return COMMON_OK;
}

static enum common_rc finish_pair(struct common_arena *a, X509 *x, EVP_PKEY *key,
                                  struct common_certs_pair *out, struct common_error *err)
{
    out->cert_pem = common_certs_x509_to_pem(a, x);
    out->key_pem = common_certs_key_to_pem(a, key);
    if (!out->cert_pem || !out->key_pem)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

enum common_rc common_certs_make_ca(struct common_arena *a, const char *cn, int64_t now,
                                    int64_t lifetime_s, struct common_certs_pair *out,
                                    struct common_error *err)
{
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    X509V3_CTX ctx;
    enum common_rc rc;

    out->cert_pem = out->key_pem = NULL;
    if (!cn || !cn[0] || strlen(cn) > CN_MAX)
        return common_error_set(err, COMMON_EINVAL, "CA common name \"%s\": must be 1 to %d bytes",
                                cn ? cn : "", CN_MAX);
    if ((rc = check_lifetime(lifetime_s, "CA lifetime", err)))
        return rc;
    key = new_p256();
    x = X509_new();
    if (!key || !x || !X509_set_version(x, X509_VERSION_3) || !set_serial(x) ||
        !set_times(x, now - COMMON_CERTS_SKEW_S, common_add_sat(now, lifetime_s)) ||
        !X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
                                    (const unsigned char *)cn, -1, -1, 0) ||
        !X509_set_issuer_name(x, X509_get_subject_name(x)) || !X509_set_pubkey(x, key)) {
        rc = ssl_fail(err, "making the CA");
        goto out;
    }
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    if (!add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE") ||
        !add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !add_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
        X509_sign(x, key, EVP_sha256()) <= 0) {
        rc = ssl_fail(err, "making the CA");
        goto out;
    }
    rc = finish_pair(a, x, key, out, err);
out:
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

/* the DNS names of a serving certificate, in order; *n of them. Returns COMMON_OK,
 * COMMON_EINVAL naming the bad name, COMMON_ENOMEM. */
static enum common_rc serving_dns(struct common_arena *a, const struct common_certs_names *nm,
                                  const char ***out, size_t *n, struct common_error *err)
{
    const char **v;
    const char *why;
    size_t k = 0;

    if (!nm || !nm->service)
        return common_error_set(err, COMMON_EINVAL, "service: a name is required");
    if (!nm->namespace)
        return common_error_set(err, COMMON_EINVAL, "namespace: a name is required");
    if ((why = common_names_dns1123_label(nm->service)))
        return common_error_set(err, COMMON_EINVAL, "service \"%s\": %s", nm->service, why);
    if ((why = common_names_dns1123_label(nm->namespace)))
        return common_error_set(err, COMMON_EINVAL, "namespace \"%s\": %s", nm->namespace, why);
    v = common_arena_alloc(a, (nm->ndns + 4) * sizeof(*v));
    if (!v)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    v[k++] = nm->service;
    v[k++] = common_arena_printf(a, "%s.%s", nm->service, nm->namespace);
    v[k++] = common_arena_printf(a, "%s.%s.svc", nm->service, nm->namespace);
    v[k++] = common_arena_printf(a, "%s.%s.svc.cluster.local", nm->service, nm->namespace);
    if (!v[1] || !v[2] || !v[3])
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    for (size_t i = 0; i < nm->ndns; i++) {
        const char *d = nm->dns[i];
        const char *body = d && strncmp(d, "*.", 2) == 0 ? d + 2 : d;

        if (!d || !d[0])
            return common_error_set(err, COMMON_EINVAL, "DNS name %zu: empty", i + 1);
        if ((why = common_names_dns1123_subdomain(body)))
            return common_error_set(err, COMMON_EINVAL, "DNS name \"%s\": %s", d, why);
        if (is_ip_literal(d))
            return common_error_set(err, COMMON_EINVAL,
                                    "DNS name \"%s\": an IP address; give it as an IP address", d);
        v[k++] = d;
    }
    for (size_t i = 0; i < nm->nips; i++)
        if (!nm->ips[i] || !is_ip_literal(nm->ips[i]))
            return common_error_set(err, COMMON_EINVAL,
                                    "IP address \"%s\": not an IPv4 or IPv6 address",
                                    nm->ips[i] ? nm->ips[i] : "");
    *out = v;
    *n = k;
    return COMMON_OK;
}

static int add_sans(X509 *x, const char **dns, size_t ndns, const struct common_certs_names *nm)
{
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    int ok = 0;

    if (!gens)
        return 0;
    for (size_t i = 0; i < ndns + nm->nips; i++) {
        GENERAL_NAME *g = GENERAL_NAME_new();
        if (!g)
            goto out;
        if (i < ndns) {
            ASN1_IA5STRING *s = ASN1_IA5STRING_new();
            if (!s || !ASN1_STRING_set(s, dns[i], (int)strlen(dns[i]))) {
                ASN1_IA5STRING_free(s);
                GENERAL_NAME_free(g);
                goto out;
            }
            GENERAL_NAME_set0_value(g, GEN_DNS, s);
        } else {
            ASN1_OCTET_STRING *ip = a2i_IPADDRESS(nm->ips[i - ndns]);
            if (!ip) {
                GENERAL_NAME_free(g);
                goto out;
            }
            GENERAL_NAME_set0_value(g, GEN_IPADD, ip);
        }
        if (!sk_GENERAL_NAME_push(gens, g)) {
            GENERAL_NAME_free(g);
            goto out;
        }
    }
    ok = X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) == 1;
out:
    GENERAL_NAMES_free(gens);
    return ok;
}

static enum common_rc load_pair(const struct common_certs_pair *p, int want_ca, const char *what,
                                X509 **x, EVP_PKEY **k, struct common_error *err)
{
    char label[128];

    *x = NULL;
    *k = NULL;
    snprintf(label, sizeof(label), "%s certificate", what);
    *x = common_certs_x509_from_pem(p ? p->cert_pem : NULL, label, err);
    if (!*x)
        return err ? err->code : COMMON_EINVAL;
    snprintf(label, sizeof(label), "%s key", what);
    *k = common_certs_key_from_pem(p->key_pem, label, err);
    if (!*k)
        return err ? err->code : COMMON_EINVAL;
    if (X509_check_private_key(*x, *k) != 1) {
        ERR_clear_error();
        return common_error_set(err, COMMON_EINVAL,
                                "%s: the private key does not belong to the certificate", what);
    }
    if (want_ca && X509_check_ca(*x) != 1) {
        ERR_clear_error();
        return common_error_set(err, COMMON_EINVAL,
                                "%s: the certificate is not a CA (basicConstraints CA:TRUE)", what);
    }
    return COMMON_OK;
}

enum common_rc common_certs_pair_check(const struct common_certs_pair *p, int want_ca,
                                       const char *what, struct common_error *err)
{
    X509 *x;
    EVP_PKEY *k;
    enum common_rc rc = load_pair(p, want_ca, what, &x, &k, err);

    X509_free(x);
    EVP_PKEY_free(k);
    return rc;
}

enum common_rc common_certs_make_serving(struct common_arena *a, const struct common_certs_pair *ca,
                                         const struct common_certs_names *names, int64_t now,
                                         int64_t lifetime_s, struct common_certs_pair *out,
                                         struct common_error *err)
{
    X509 *cax = NULL, *x = NULL;
    EVP_PKEY *cak = NULL, *key = NULL;
    const char **dns = NULL;
    size_t ndns = 0;
    int64_t ca_nb, ca_na, na;
    char cn[CN_MAX + 64];
    X509V3_CTX ctx;
    enum common_rc rc;

    out->cert_pem = out->key_pem = NULL;
    if ((rc = check_lifetime(lifetime_s, "serving certificate lifetime", err)) ||
        (rc = serving_dns(a, names, &dns, &ndns, err)) ||
        (rc = load_pair(ca, 1, "CA", &cax, &cak, err)))
        goto out;
    if (asn1_to_epoch(X509_get0_notBefore(cax), &ca_nb) ||
        asn1_to_epoch(X509_get0_notAfter(cax), &ca_na)) {
        rc = common_error_set(err, COMMON_EINVAL, "CA certificate: unreadable validity period");
        goto out;
    }
    if (now >= ca_na) {
        char t[32] = "?";
        common_certs_format_time(ca_na, t, sizeof(t));
        rc = common_error_set(err, COMMON_EINVAL, "CA certificate: expired at %s", t);
        goto out;
    }
    na = min64(common_add_sat(now, lifetime_s), ca_na);
    snprintf(cn, sizeof(cn), "%s.%s.svc", names->service, names->namespace);
    if (strlen(cn) > CN_MAX)
        snprintf(cn, sizeof(cn), "%s", names->service);
    key = new_p256();
    x = X509_new();
    if (!key || !x || !X509_set_version(x, X509_VERSION_3) || !set_serial(x) ||
        !set_times(x, now - COMMON_CERTS_SKEW_S, na) ||
        !X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
                                    (const unsigned char *)cn, -1, -1, 0) ||
        !X509_set_issuer_name(x, X509_get_subject_name(cax)) || !X509_set_pubkey(x, key)) {
        rc = ssl_fail(err, "making the serving certificate");
        goto out;
    }
    X509V3_set_ctx(&ctx, cax, x, NULL, NULL, 0);
    if (!add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") ||
        !add_ext(x, &ctx, NID_ext_key_usage, "serverAuth") ||
        !add_ext(x, &ctx, NID_subject_key_identifier, "hash") ||
        !add_ext(x, &ctx, NID_authority_key_identifier,
                 /* a reused CA may lack a subjectKeyIdentifier: name it by issuer and serial */
                 X509_get0_subject_key_id(cax) ? "keyid:always" : "issuer:always") ||
        !add_sans(x, dns, ndns, names) || X509_sign(x, cak, EVP_sha256()) <= 0) {
        rc = ssl_fail(err, "making the serving certificate");
        goto out;
    }
    rc = finish_pair(a, x, key, out, err);
out:
    X509_free(x);
    X509_free(cax);
    EVP_PKEY_free(key);
    EVP_PKEY_free(cak);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading and verifying */

static char *name_oneline(struct common_arena *a, const X509_NAME *n)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *s = NULL;

    if (bio && X509_NAME_print_ex(bio, n, 0, XN_FLAG_RFC2253) >= 0)
        s = bio_to_arena(a, bio);
    BIO_free(bio);
    return s;
}

static char *key_desc(struct common_arena *a, EVP_PKEY *k)
{
    char group[80];
    size_t glen = 0;

    if (!k)
        return common_arena_strdup(a, "unknown");
    if (EVP_PKEY_is_a(k, "EC")) {
        const char *nist = NULL;
        if (EVP_PKEY_get_group_name(k, group, sizeof(group), &glen) != 1)
            return common_arena_strdup(a, "EC");
        nist = EC_curve_nid2nist(OBJ_sn2nid(group));
        return common_arena_printf(a, "EC %s", nist ? nist : group);
    }
    if (EVP_PKEY_is_a(k, "RSA"))
        return common_arena_printf(a, "RSA %d", EVP_PKEY_get_bits(k));
    return common_arena_strdup(a, EVP_PKEY_get0_type_name(k) ? EVP_PKEY_get0_type_name(k) : "?");
}

/* the SANs of x as two ", "-separated lists */
static int san_lists(struct common_arena *a, X509 *x, char **dns, char **ips)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    char *d = common_arena_strdup(a, ""), *p = common_arena_strdup(a, "");
    int ok = d && p;

    for (int i = 0; ok && gens && i < sk_GENERAL_NAME_num(gens); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type == GEN_DNS) {
            const ASN1_IA5STRING *s = g->d.dNSName;
            d = common_arena_printf(a, "%s%s%.*s", d, d[0] ? ", " : "", ASN1_STRING_length(s),
                                    (const char *)ASN1_STRING_get0_data(s));
        } else if (g->type == GEN_IPADD) {
            char buf[INET6_ADDRSTRLEN] = "?";
            const ASN1_OCTET_STRING *o = g->d.iPAddress;
            int len = ASN1_STRING_length(o);
            if (len == 4 || len == 16)
                inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(o), buf,
                          sizeof(buf));
            p = common_arena_printf(a, "%s%s%s", p, p[0] ? ", " : "", buf);
        }
        ok = d && p;
    }
    GENERAL_NAMES_free(gens);
    ERR_clear_error();
    *dns = d;
    *ips = p;
    return ok;
}

enum common_rc common_certs_info(struct common_arena *a, const char *pem,
                                 struct common_certs_info *out, struct common_error *err)
{
    X509 *x = common_certs_x509_from_pem(pem, "certificate", err);
    BIGNUM *bn = NULL;
    char *hex = NULL;
    enum common_rc rc = COMMON_ENOMEM;

    memset(out, 0, sizeof(*out));
    if (!x)
        return err ? err->code : COMMON_EINVAL;
    if (asn1_to_epoch(X509_get0_notBefore(x), &out->not_before) ||
        asn1_to_epoch(X509_get0_notAfter(x), &out->not_after)) {
        rc = common_error_set(err, COMMON_EINVAL, "certificate: unreadable validity period");
        goto out;
    }
    out->is_ca = X509_check_ca(x) == 1;
    bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    hex = bn ? BN_bn2hex(bn) : NULL;
    out->subject = name_oneline(a, X509_get_subject_name(x));
    out->issuer = name_oneline(a, X509_get_issuer_name(x));
    out->serial = hex ? common_arena_strdup(a, hex) : NULL;
    out->key = key_desc(a, X509_get0_pubkey(x));
    if (!out->subject || !out->issuer || !out->serial || !out->key ||
        !san_lists(a, x, &out->dns, &out->ips))
        goto out;
    rc = COMMON_OK;
out:
    if (rc == COMMON_ENOMEM)
        common_error_set(err, rc, "out of memory");
    ERR_clear_error();
    OPENSSL_free(hex);
    BN_free(bn);
    X509_free(x);
    return rc;
}

enum common_rc common_certs_verify(const char *cert_pem, const char *bundle_pem, const char *host,
                                   int64_t now, struct common_error *err)
{
    X509 *leaf = common_certs_x509_from_pem(cert_pem, "serving certificate", err);
    STACK_OF(X509) *cas = NULL;
    X509_STORE *store = NULL;
    X509_STORE_CTX *ctx = NULL;
    X509_VERIFY_PARAM *vp;
    enum common_rc rc;

    if (!leaf)
        return err ? err->code : COMMON_EINVAL;
    if ((rc = read_bundle(bundle_pem, "CA bundle", &cas, err)))
        goto out;
    if (sk_X509_num(cas) == 0) {
        rc = common_error_set(err, COMMON_EINVAL, "CA bundle: no certificate");
        goto out;
    }
    rc = COMMON_ENOMEM;
    store = X509_STORE_new();
    ctx = X509_STORE_CTX_new();
    if (!store || !ctx)
        goto out;
    for (int i = 0; i < sk_X509_num(cas); i++)
        if (!X509_STORE_add_cert(store, sk_X509_value(cas, i)))
            goto out;
    if (!X509_STORE_CTX_init(ctx, store, leaf, NULL))
        goto out;
    vp = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_time(vp, (time_t)now);
    if (!X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER))
        goto out;
    if (host && is_ip_literal(host)) {
        if (!X509_VERIFY_PARAM_set1_ip_asc(vp, host))
            goto out;
    } else if (host) {
        X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (!X509_VERIFY_PARAM_set1_host(vp, host, 0))
            goto out;
    }
    if (X509_verify_cert(ctx) == 1) {
        rc = COMMON_OK;
    } else {
        int e = X509_STORE_CTX_get_error(ctx);
        rc = common_error_set(err, COMMON_EINVAL, "certificate not trusted%s%s: %s",
                              host ? " for " : "", host ? host : "",
                              X509_verify_cert_error_string(e));
    }
out:
    if (rc == COMMON_ENOMEM)
        common_error_set(err, rc, "out of memory");
    ERR_clear_error();
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    sk_X509_pop_free(cas, X509_free);
    X509_free(leaf);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Durations */

enum common_rc common_certs_parse_duration(const char *s, int64_t *out_s, struct common_error *err)
{
    const char *p = s;
    int64_t total = 0;

    if (!s || !*s)
        return common_error_set(err, COMMON_EINVAL,
                                "duration \"\": empty; write e.g. \"8760h\", \"90d\" or \"120s\"");
    while (*p) {
        int64_t v = 0, mult;
        const char *start = p;

        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p - '0');
            if (v > COMMON_CERTS_LIFETIME_MAX)
                return common_error_set(err, COMMON_EINVAL,
                                        "duration \"%s\": over the maximum of 100 years", s);
            p++;
        }
        if (p == start)
            return common_error_set(err, COMMON_EINVAL,
                                    "duration \"%s\": expected a number at \"%s\" (write e.g. "
                                    "\"8760h\", \"90d\", \"120s\")",
                                    s, p);
        switch (*p) {
        case 's':
            mult = 1;
            break;
        case 'm':
            mult = 60;
            break;
        case 'h':
            mult = 3600;
            break;
        case 'd':
            mult = 86400;
            break;
        case '\0':
            return common_error_set(err, COMMON_EINVAL,
                                    "duration \"%s\": missing unit after %lld (use s, m, h or d)",
                                    s, (long long)v);
        default:
            return common_error_set(err, COMMON_EINVAL,
                                    "duration \"%s\": unknown unit \"%c\" (use s, m, h or d)", s,
                                    *p);
        }
        p++;
        total += v * mult;
        if (total > COMMON_CERTS_LIFETIME_MAX)
            return common_error_set(err, COMMON_EINVAL,
                                    "duration \"%s\": over the maximum of 100 years", s);
    }
    if (total <= 0)
        return common_error_set(err, COMMON_EINVAL, "duration \"%s\": must be positive", s);
    *out_s = total;
    return COMMON_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* The rotation decision (pure) */

void common_certs_policy_default(struct common_certs_policy *p)
{
    p->ca_lifetime_s = COMMON_CERTS_CA_LIFETIME_DEFAULT;
    p->serving_lifetime_s = COMMON_CERTS_SERVING_LIFETIME_DEFAULT;
    p->renew_num = 2;
    p->renew_den = 3;
    p->publish_grace_s = COMMON_CERTS_GRACE_DEFAULT;
    p->switch_grace_s = COMMON_CERTS_GRACE_DEFAULT;
    p->rotate_ca = 1;
}

int64_t common_certs_renew_at(const struct common_certs_span *span,
                              const struct common_certs_policy *p)
{
    int64_t life = span->not_after - span->not_before;

    if (life <= 0 || p->renew_den <= 0)
        return span->not_before;
    return span->not_before + life / p->renew_den * p->renew_num +
           life % p->renew_den * p->renew_num / p->renew_den;
}

enum common_rc common_certs_policy_check(const struct common_certs_policy *p,
                                         struct common_error *err)
{
    enum common_rc rc;
    struct common_certs_span fresh;

    if ((rc = check_lifetime(p->ca_lifetime_s, "CA lifetime", err)) ||
        (rc = check_lifetime(p->serving_lifetime_s, "serving certificate lifetime", err)))
        return rc;
    if (p->renew_den < 2 || p->renew_den > 1000 || p->renew_num < 1 || p->renew_num >= p->renew_den)
        return common_error_set(err, COMMON_EINVAL,
                                "renewal fraction %d/%d: must lie strictly between 0 and 1, "
                                "denominator at most 1000",
                                p->renew_num, p->renew_den);
    if (p->publish_grace_s < 0 || p->publish_grace_s > p->ca_lifetime_s)
        return common_error_set(err, COMMON_EINVAL,
                                "publish grace %lld s: must be 0 to the CA lifetime",
                                (long long)p->publish_grace_s);
    if (p->switch_grace_s < 0 || p->switch_grace_s > p->ca_lifetime_s)
        return common_error_set(err, COMMON_EINVAL,
                                "switch grace %lld s: must be 0 to the CA lifetime",
                                (long long)p->switch_grace_s);
    /* a certificate made at 0 spans -SKEW..lifetime; it must not be due at once */
    fresh.not_before = -COMMON_CERTS_SKEW_S;
    fresh.not_after = min64(p->serving_lifetime_s, p->ca_lifetime_s);
    if (common_certs_renew_at(&fresh, p) <= 0)
        return common_error_set(err, COMMON_EINVAL,
                                "serving certificate lifetime %lld s: too short, a new "
                                "certificate would be due for renewal at once (notBefore is "
                                "%lld s in the past)",
                                (long long)p->serving_lifetime_s, (long long)COMMON_CERTS_SKEW_S);
    fresh.not_after = p->ca_lifetime_s;
    if (common_certs_renew_at(&fresh, p) <= 0)
        return common_error_set(err, COMMON_EINVAL,
                                "CA lifetime %lld s: too short, a new CA would be due for "
                                "rotation at once",
                                (long long)p->ca_lifetime_s);
    return COMMON_OK;
}

const char *common_certs_action_name(enum common_certs_action a)
{
    switch (a) {
    case COMMON_CERTS_NOTHING:
        return "nothing";
    case COMMON_CERTS_CREATE:
        return "create";
    case COMMON_CERTS_REPAIR_BUNDLE:
        return "repair-bundle";
    case COMMON_CERTS_RENEW_SERVING:
        return "renew-serving";
    case COMMON_CERTS_ROTATE_CA_ADD:
        return "rotate-ca-add";
    case COMMON_CERTS_SWITCH_SERVING:
        return "switch-serving";
    case COMMON_CERTS_DROP_OLD_CA:
        return "drop-old-ca";
    }
    return "unknown";
}

static void act(struct common_certs_decision *d, enum common_certs_action a, int64_t now,
                const char *why)
{
    d->action = a;
    d->next_s = now;
    d->reason = why;
}

static void wait_until(struct common_certs_decision *d, int64_t next, const char *why)
{
    d->action = COMMON_CERTS_NOTHING;
    d->next_s = next;
    d->reason = why;
}

void common_certs_decide(const struct common_certs_view *v, const struct common_certs_policy *p,
                         int64_t now, struct common_certs_decision *d)
{
    int from_bundle = v->serving_issuer == COMMON_CERTS_ISSUER_CA ||
                      v->serving_issuer == COMMON_CERTS_ISSUER_OLD_CA;
    int64_t serving_end =
        from_bundle ? min64(v->serving.not_after, v->serving_signer.not_after) : INT64_MIN;
    int usable = from_bundle && now < serving_end;
    int64_t ca_due, serving_due;

    d->ca_expiring = 0;
    /* 1. no CA to sign with */
    if (!v->ca_ok || now >= v->ca.not_after) {
        if (p->rotate_ca && v->serving_issuer == COMMON_CERTS_ISSUER_OLD_CA && usable)
            act(d, COMMON_CERTS_ROTATE_CA_ADD, now,
                "the signing CA is unusable but the serving certificate still chains to the "
                "bundle: phase in a new CA");
        else
            act(d, COMMON_CERTS_CREATE, now,
                "no usable CA and no trusted serving certificate: create both");
        return;
    }
    ca_due = common_certs_renew_at(&v->ca, p);
    d->ca_expiring = !p->rotate_ca && now >= ca_due;
    /* a renewal is worth it only if the new certificate lasts longer (it is capped at the CA's
     * notAfter) */
    serving_due =
        v->serving_issuer == COMMON_CERTS_ISSUER_CA && v->serving.not_after < v->ca.not_after
            ? common_certs_renew_at(&v->serving, p)
            : INT64_MAX;
    /* 2. ca.crt must be trusted before anything is signed with it */
    if (!v->ca_in_bundle) {
        act(d, COMMON_CERTS_REPAIR_BUNDLE, now, "ca.crt is missing from the CA bundle: add it");
        return;
    }
    /* 3. rotation under way: the bundle holds the old CA(s) and ca.crt */
    if (v->old_cas > 0) {
        if (v->serving_issuer == COMMON_CERTS_ISSUER_CA) {
            int64_t loaded =
                common_add_sat(v->serving.not_before, COMMON_CERTS_SKEW_S + p->switch_grace_s);
            if (!usable || !v->serving_names_ok || now >= serving_due) {
                act(d, COMMON_CERTS_RENEW_SERVING, now,
                    !usable                ? "the serving certificate has expired: renew it"
                    : !v->serving_names_ok ? "the serving certificate lacks a wanted name"
                                           : "the serving certificate is due for renewal");
                return;
            }
            if (now < loaded) {
                wait_until(d, min64(min64(loaded, serving_due), serving_end),
                           "waiting for every replica to load the serving certificate from "
                           "the new CA before dropping the old CA");
                return;
            }
            act(d, COMMON_CERTS_DROP_OLD_CA, now,
                "every replica serves a certificate from the new CA: drop the old CA");
            return;
        }
        if (!usable) {
            act(d, COMMON_CERTS_SWITCH_SERVING, now,
                "no trusted serving certificate: issue one from the new CA at once");
            return;
        }
        if (v->bundle_published_at == 0) {
            wait_until(d, serving_end,
                       "waiting for the bundle with both CAs to be published on every webhook "
                       "configuration");
            return;
        }
        if (now < common_add_sat(v->bundle_published_at, p->publish_grace_s)) {
            wait_until(
                d, min64(common_add_sat(v->bundle_published_at, p->publish_grace_s), serving_end),
                "waiting for every API server to see the bundle with both CAs");
            return;
        }
        act(d, COMMON_CERTS_SWITCH_SERVING, now,
            "every client trusts the new CA: serve a certificate from it");
        return;
    }
    /* 4. steady: bundle = {ca.crt} */
    if (v->serving_issuer != COMMON_CERTS_ISSUER_CA || !usable || !v->serving_names_ok) {
        act(d, COMMON_CERTS_RENEW_SERVING, now,
            v->serving_issuer == COMMON_CERTS_ISSUER_NONE ? "no serving certificate: issue one"
            : v->serving_issuer != COMMON_CERTS_ISSUER_CA
                ? "the serving certificate is not from ca.crt: reissue it"
            : !usable ? "the serving certificate has expired: renew it"
                      : "the serving certificate lacks a wanted name");
        return;
    }
    if (p->rotate_ca && now >= ca_due) {
        act(d, COMMON_CERTS_ROTATE_CA_ADD, now,
            "the CA is due for rotation: add a new CA to the bundle");
        return;
    }
    if (now >= serving_due) {
        act(d, COMMON_CERTS_RENEW_SERVING, now, "the serving certificate is due for renewal");
        return;
    }
    wait_until(d, min64(min64(p->rotate_ca ? ca_due : v->ca.not_after, serving_due), serving_end),
               "nothing to do");
}

/* ------------------------------------------------------------------------------------------ */
/* Observing a Secret */

/* cert was signed by ca: names, authority key id (X509_check_issued) and signature */
static int signed_by(X509 *cert, X509 *ca)
{
    int ok =
        X509_check_issued(ca, cert) == X509_V_OK && X509_verify(cert, X509_get0_pubkey(ca)) == 1;
    ERR_clear_error();
    return ok;
}

static int span_of(X509 *x, struct common_certs_span *s)
{
    return asn1_to_epoch(X509_get0_notBefore(x), &s->not_before) == 0 &&
           asn1_to_epoch(X509_get0_notAfter(x), &s->not_after) == 0;
}

/* x has DNS SAN name (case-insensitive) or IP SAN ip */
static int has_san(GENERAL_NAMES *gens, const char *name, int ip)
{
    ASN1_OCTET_STRING *want = ip ? a2i_IPADDRESS(name) : NULL;
    int found = 0;

    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens) && !found; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (!ip && g->type == GEN_DNS) {
            size_t n = strlen(name);
            found = (size_t)ASN1_STRING_length(g->d.dNSName) == n &&
                    strncasecmp((const char *)ASN1_STRING_get0_data(g->d.dNSName), name, n) == 0;
        } else if (ip && want && g->type == GEN_IPADD) {
            found = ASN1_STRING_cmp(g->d.iPAddress, want) == 0;
        }
    }
    ASN1_OCTET_STRING_free(want);
    return found;
}

static enum common_rc names_ok(struct common_arena *a, X509 *x,
                               const struct common_certs_names *names, int *ok,
                               struct common_error *err)
{
    const char **dns;
    size_t n;
    GENERAL_NAMES *gens;
    struct common_error ignore;
    enum common_rc rc;

    *ok = 1;
    if (!names)
        return COMMON_OK;
    rc = serving_dns(a, names, &dns, &n, &ignore);
    if (rc == COMMON_ENOMEM)
        return common_error_set(err, rc, "out of memory");
    if (rc) { /* invalid names: apply will say so; no certificate can match them */
        *ok = 0;
        return COMMON_OK;
    }
    gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (size_t i = 0; i < n && *ok; i++)
        *ok = has_san(gens, dns[i], 0);
    for (size_t i = 0; i < names->nips && *ok; i++)
        *ok = has_san(gens, names->ips[i], 1);
    GENERAL_NAMES_free(gens);
    ERR_clear_error();
    return COMMON_OK;
}

/* the bundle of s: its ca_bundle, or {ca.crt} when there is none (certificates that do not
 * parse are left out) */
static enum common_rc effective_bundle(const struct common_certs_secret *s, STACK_OF(X509) * *out,
                                       struct common_error *err)
{
    struct common_error ignore;
    enum common_rc rc;

    rc = read_bundle(s->ca_bundle ? s->ca_bundle : s->ca_crt, "bundle", out, &ignore);
    if (rc == COMMON_ENOMEM)
        return common_error_set(err, rc, "out of memory");
    if (rc) {
        *out = sk_X509_new_null();
        if (!*out)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

enum common_rc common_certs_observe(const struct common_certs_secret *s,
                                    const struct common_certs_names *names,
                                    struct common_certs_view *v, struct common_error *err)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = {s->ca_crt, s->ca_key}, tls = {s->tls_crt, s->tls_key};
    struct common_error ignore;
    X509 *cax = NULL, *tlsx = NULL;
    EVP_PKEY *cak = NULL, *tlsk = NULL;
    STACK_OF(X509) *bundle = NULL;
    enum common_rc rc;

    memset(v, 0, sizeof(*v));
    v->bundle_published_at = s->bundle_published_at;
    if (!a)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if ((rc = effective_bundle(s, &bundle, err)))
        goto out;
    v->ca_ok = load_pair(&ca, 1, "CA", &cax, &cak, &ignore) == COMMON_OK && span_of(cax, &v->ca);
    for (int i = 0; i < sk_X509_num(bundle); i++) {
        if (v->ca_ok && X509_cmp(sk_X509_value(bundle, i), cax) == 0)
            v->ca_in_bundle = 1;
        else
            v->old_cas++;
    }
    if (load_pair(&tls, 0, "serving", &tlsx, &tlsk, &ignore) == COMMON_OK &&
        span_of(tlsx, &v->serving)) {
        v->serving_issuer = COMMON_CERTS_ISSUER_OTHER;
        if (v->ca_ok && signed_by(tlsx, cax)) {
            v->serving_issuer = COMMON_CERTS_ISSUER_CA;
            v->serving_signer = v->ca;
        } else {
            for (int i = 0; i < sk_X509_num(bundle); i++) {
                X509 *c = sk_X509_value(bundle, i);
                if ((!v->ca_ok || X509_cmp(c, cax) != 0) && signed_by(tlsx, c) &&
                    span_of(c, &v->serving_signer)) {
                    v->serving_issuer = COMMON_CERTS_ISSUER_OLD_CA;
                    break;
                }
            }
        }
        if ((rc = names_ok(a, tlsx, names, &v->serving_names_ok, err)))
            goto out;
    }
    if (v->serving_issuer == COMMON_CERTS_ISSUER_NONE)
        memset(&v->serving, 0, sizeof(v->serving));
    rc = COMMON_OK;
out:
    ERR_clear_error();
    sk_X509_pop_free(bundle, X509_free);
    X509_free(cax);
    X509_free(tlsx);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(tlsk);
    common_arena_destroy(a);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Applying a decision */

/* the PEM of every certificate of sk, then extra (a PEM string or NULL), in arena a */
static char *bundle_pem(struct common_arena *a, STACK_OF(X509) * sk, const char *extra)
{
    char *s = common_arena_strdup(a, "");

    for (int i = 0; s && i < sk_X509_num(sk); i++) {
        char *one = common_certs_x509_to_pem(a, sk_X509_value(sk, i));
        s = one ? common_arena_printf(a, "%s%s", s, one) : NULL;
    }
    if (s && extra) {
        X509 *x = common_certs_x509_from_pem(extra, "ca.crt", NULL);
        char *one = x ? common_certs_x509_to_pem(a, x) : NULL;
        X509_free(x);
        s = one ? common_arena_printf(a, "%s%s", s, one) : NULL;
    }
    return s;
}

static enum common_rc new_ca(struct common_arena *a, const struct common_certs_policy *p,
                             int64_t now, struct common_certs_pair *ca, struct common_error *err)
{
    char cn[CN_MAX + 1];

    snprintf(cn, sizeof(cn), "trainsched-ca@%lld", (long long)now);
    return common_certs_make_ca(a, cn, now, p->ca_lifetime_s, ca, err);
}

enum common_rc common_certs_apply(struct common_arena *a, enum common_certs_action action,
                                  const struct common_certs_secret *in,
                                  const struct common_certs_names *names,
                                  const struct common_certs_policy *p, int64_t now,
                                  struct common_certs_secret *out, struct common_error *err)
{
    struct common_certs_secret s = *in;
    struct common_certs_pair ca = {in->ca_crt, in->ca_key}, tls;
    STACK_OF(X509) *bundle = NULL;
    enum common_rc rc = COMMON_OK;

    switch (action) {
    case COMMON_CERTS_NOTHING:
        break;
    case COMMON_CERTS_CREATE:
        if ((rc = new_ca(a, p, now, &ca, err)) ||
            (rc = common_certs_make_serving(a, &ca, names, now, p->serving_lifetime_s, &tls, err)))
            goto out;
        s.ca_crt = ca.cert_pem;
        s.ca_key = ca.key_pem;
        s.tls_crt = tls.cert_pem;
        s.tls_key = tls.key_pem;
        s.ca_bundle = ca.cert_pem;
        s.bundle_published_at = 0;
        break;
    case COMMON_CERTS_REPAIR_BUNDLE:
    case COMMON_CERTS_ROTATE_CA_ADD:
        if ((rc = effective_bundle(in, &bundle, err)))
            goto out;
        if (action == COMMON_CERTS_ROTATE_CA_ADD) {
            if ((rc = new_ca(a, p, now, &ca, err)))
                goto out;
            s.ca_crt = ca.cert_pem;
            s.ca_key = ca.key_pem;
        } else if ((rc = common_certs_pair_check(&ca, 1, "CA", err))) {
            goto out;
        }
        s.ca_bundle = bundle_pem(a, bundle, s.ca_crt);
        if (!s.ca_bundle) {
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
        s.bundle_published_at = 0;
        break;
    case COMMON_CERTS_RENEW_SERVING:
    case COMMON_CERTS_SWITCH_SERVING:
        if ((rc = common_certs_make_serving(a, &ca, names, now, p->serving_lifetime_s, &tls, err)))
            goto out;
        s.tls_crt = tls.cert_pem;
        s.tls_key = tls.key_pem;
        break;
    case COMMON_CERTS_DROP_OLD_CA:
        if ((rc = common_certs_pair_check(&ca, 1, "CA", err)))
            goto out;
        s.ca_bundle = bundle_pem(a, NULL, s.ca_crt);
        if (!s.ca_bundle) {
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
        s.bundle_published_at = 0;
        break;
    default:
        rc = common_error_set(err, COMMON_EINVAL, "unknown action %d", (int)action);
        goto out;
    }
    *out = s;
out:
    sk_X509_pop_free(bundle, X509_free);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* The Secret as JSON */

void common_certs_bundle_sha256(const char *bundle, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    static const char digits[] = "0123456789abcdef";

    hex[0] = '\0';
    if (!EVP_Digest(bundle ? bundle : "", bundle ? strlen(bundle) : 0, md, &n, EVP_sha256(),
                    NULL) ||
        n != 32) {
        ERR_clear_error();
        return;
    }
    for (unsigned int i = 0; i < n; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
}

/* data[key] (a base64 string) decoded into *out (NULL when absent) */
static enum common_rc secret_value(struct common_arena *a, const json_t *data, const char *key,
                                   char **out, struct common_error *err)
{
    const json_t *v = json_object_get(data, key);
    const char *s;
    size_t n;
    unsigned char *dec;
    int got = 0, fin = 0;
    EVP_ENCODE_CTX *ctx;

    *out = NULL;
    if (!v)
        return COMMON_OK;
    if (!json_is_string(v))
        return common_error_set(err, COMMON_EINVAL, "data.%s: must be a base64 string", key);
    s = json_string_value(v);
    n = json_string_length(v);
    if (n > SECRET_VALUE_MAX * 2)
        return common_error_set(err, COMMON_ETOOBIG, "data.%s: over 1 MiB", key);
    dec = common_arena_alloc(a, n / 4 * 3 + 4);
    ctx = EVP_ENCODE_CTX_new();
    if (!dec || !ctx) {
        EVP_ENCODE_CTX_free(ctx);
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    EVP_DecodeInit(ctx);
    if (EVP_DecodeUpdate(ctx, dec, &got, (const unsigned char *)s, (int)n) < 0 ||
        EVP_DecodeFinal(ctx, dec + got, &fin) != 1) {
        EVP_ENCODE_CTX_free(ctx);
        ERR_clear_error();
        return common_error_set(err, COMMON_EINVAL, "data.%s: invalid base64", key);
    }
    EVP_ENCODE_CTX_free(ctx);
    got += fin;
    dec[got] = '\0';
    if (memchr(dec, '\0', (size_t)got) || !strstr((char *)dec, "-----BEGIN "))
        return common_error_set(err, COMMON_EINVAL, "data.%s: not PEM text", key);
    *out = (char *)dec;
    return COMMON_OK;
}

enum common_rc common_certs_secret_from_json(struct common_arena *a, const json_t *secret,
                                             struct common_certs_secret *out,
                                             struct common_error *err)
{
    const json_t *data, *ann;
    const char *at, *sha;
    enum common_rc rc;

    memset(out, 0, sizeof(*out));
    if (!json_is_object(secret))
        return common_error_set(err, COMMON_EINVAL, "Secret: not an object");
    data = json_object_get(secret, "data");
    if (data && !json_is_object(data) && !json_is_null(data))
        return common_error_set(err, COMMON_EINVAL, "data: must be an object");
    if ((rc = secret_value(a, data, COMMON_CERTS_KEY_CA_CRT, &out->ca_crt, err)) ||
        (rc = secret_value(a, data, COMMON_CERTS_KEY_CA_KEY, &out->ca_key, err)) ||
        (rc = secret_value(a, data, COMMON_CERTS_KEY_TLS_CRT, &out->tls_crt, err)) ||
        (rc = secret_value(a, data, COMMON_CERTS_KEY_TLS_KEY, &out->tls_key, err)) ||
        (rc = secret_value(a, data, COMMON_CERTS_KEY_BUNDLE, &out->ca_bundle, err)))
        return rc;
    ann = json_object_get(json_object_get(secret, "metadata"), "annotations");
    at = json_string_value(json_object_get(ann, COMMON_CERTS_ANN_PUBLISHED_AT));
    sha = json_string_value(json_object_get(ann, COMMON_CERTS_ANN_PUBLISHED_SHA256));
    if (at) {
        int64_t us;
        char hex[65];
        if (common_leader_parse_microtime(at, &us))
            return common_error_set(err, COMMON_EINVAL,
                                    "metadata.annotations[%s]: \"%s\" is not an RFC 3339 time",
                                    COMMON_CERTS_ANN_PUBLISHED_AT, at);
        /* the bundle the webhook configurations were given: ca-bundle.crt, or ca.crt alone when
         * the Secret has no ca-bundle.crt (as common_certs_observe reads it) */
        const char *bundle = out->ca_bundle ? out->ca_bundle : out->ca_crt;
        common_certs_bundle_sha256(bundle, hex);
        if (bundle && sha && strcmp(sha, hex) == 0)
            out->bundle_published_at = us / 1000000;
    }
    return COMMON_OK;
}

json_t *common_certs_secret_new_json(const struct common_certs_secret *s, const char *name,
                                     const char *namespace)
{
    struct common_arena *a = common_arena_create(0);
    const char *keys[] = {COMMON_CERTS_KEY_CA_CRT, COMMON_CERTS_KEY_CA_KEY,
                          COMMON_CERTS_KEY_TLS_CRT, COMMON_CERTS_KEY_TLS_KEY,
                          COMMON_CERTS_KEY_BUNDLE};
    const char *vals[] = {s->ca_crt, s->ca_key, s->tls_crt, s->tls_key, s->ca_bundle};
    json_t *data = NULL, *meta = NULL, *secret = NULL;

    if (!a)
        return NULL;
    data = json_object();
    meta = json_pack("{s:s, s:s}", "name", name, "namespace", namespace);
    if (!data || !meta)
        goto fail;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char *b;
        if (!vals[i])
            continue;
        b = common_certs_base64(a, vals[i], strlen(vals[i]));
        if (!b || json_object_set_new(data, keys[i], json_string(b)))
            goto fail;
    }
    if (s->bundle_published_at != 0 && (s->ca_bundle || s->ca_crt)) {
        char t[32], hex[65];
        json_t *ann;
        if (common_certs_format_time(s->bundle_published_at, t, sizeof(t)))
            goto fail;
        common_certs_bundle_sha256(s->ca_bundle ? s->ca_bundle : s->ca_crt, hex);
        ann = json_pack("{s:s, s:s}", COMMON_CERTS_ANN_PUBLISHED_AT, t,
                        COMMON_CERTS_ANN_PUBLISHED_SHA256, hex);
        if (!ann || json_object_set_new(meta, "annotations", ann))
            goto fail;
    }
    secret = json_pack("{s:s, s:s, s:o, s:s, s:o}", "apiVersion", "v1", "kind", "Secret",
                       "metadata", meta, "type", "kubernetes.io/tls", "data", data);
    common_arena_destroy(a);
    return secret; /* json_pack's "o" took meta and data, even on failure */
fail:
    json_decref(data);
    json_decref(meta);
    common_arena_destroy(a);
    return NULL;
}
