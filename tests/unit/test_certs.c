/*
 * tests/unit/test_certs.c - common/certs (making, reading and verifying certificates, the
 * rotation decision, the Secret layout) and `trainsched certs` (cmd/certs.c).
 *
 * Chains are verified with OpenSSL's own X509_verify_cert (through common_certs_verify, and
 * directly), and the CLI's files with the openssl command when it is installed. The rotation
 * decision is checked row by row (every state at and around each time boundary), then as a
 * whole: a simulated cluster walks 25 years of rotations with a publication delay and lagging
 * API servers and replicas, and at every moment every serving certificate a replica may serve
 * must verify against every CA bundle an API server may hold.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "common/alloc.h"
#include "common/certs.h"
#include "testutil.h"

#define NOW ((int64_t)1700000000) /* 2023-11-14T22:13:20Z */
#define DAY COMMON_CERTS_DAY_S
#define YEAR (365 * DAY)
#define SKEW COMMON_CERTS_SKEW_S

static const char *const extra_dns[] = {"localhost", "trainsched.example.com"};
static const char *const extra_ips[] = {"127.0.0.1", "::1"};
static const struct common_certs_names NAMES = {
    "trainsched", "kubeflow-system", extra_dns, 2, extra_ips, 2};
static const char *const all_hosts[] = {"trainsched",
                                        "trainsched.kubeflow-system",
                                        "trainsched.kubeflow-system.svc",
                                        "trainsched.kubeflow-system.svc.cluster.local",
                                        "localhost",
                                        "trainsched.example.com",
                                        "127.0.0.1",
                                        "::1"};

static struct common_certs_pair make_ca(struct common_arena *a, int64_t now, int64_t life)
{
    struct common_certs_pair ca;
    struct common_error e;

    ck_assert_msg(common_certs_make_ca(a, "test-ca", now, life, &ca, &e) == COMMON_OK, "%s", e.msg);
    return ca;
}

static struct common_certs_pair
make_serving(struct common_arena *a, const struct common_certs_pair *ca, int64_t now, int64_t life)
{
    struct common_certs_pair p;
    struct common_error e;

    ck_assert_msg(common_certs_make_serving(a, ca, &NAMES, now, life, &p, &e) == COMMON_OK, "%s",
                  e.msg);
    return p;
}

static X509 *x509(const char *pem)
{
    X509 *x = common_certs_x509_from_pem(pem, "test", NULL);
    ck_assert_ptr_nonnull(x);
    return x;
}

static int64_t epoch(const ASN1_TIME *t)
{
    ASN1_TIME *zero = ASN1_TIME_set(NULL, 0);
    int days = 0, secs = 0;

    ck_assert(ASN1_TIME_diff(&days, &secs, zero, t));
    ASN1_TIME_free(zero);
    return (int64_t)days * 86400 + secs;
}

static void check_p256(EVP_PKEY *k)
{
    char group[64];
    size_t n = 0;

    ck_assert_int_eq(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
    ck_assert_int_eq(EVP_PKEY_get_group_name(k, group, sizeof(group), &n), 1);
    ck_assert_str_eq(group, "prime256v1");
}

/* X509_verify_cert directly, with OpenSSL's strict checks (RFC 5280 rules such as CA key
 * identifiers and critical basicConstraints) on top of what common_certs_verify checks.
 * Returns X509_V_OK or OpenSSL's verify error. */
static int strict_verify(const char *cert_pem, const char *ca_pem, const char *host, int64_t at)
{
    X509 *leaf = x509(cert_pem), *ca = x509(ca_pem);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_VERIFY_PARAM *vp;
    int rc;

    ck_assert_ptr_nonnull(store);
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(X509_STORE_add_cert(store, ca), 1);
    ck_assert_int_eq(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
    vp = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_time(vp, (time_t)at);
    X509_VERIFY_PARAM_set_flags(vp, X509_V_FLAG_X509_STRICT);
    ck_assert_int_eq(X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER), 1);
    if (strchr(host, ':') || strspn(host, "0123456789.") == strlen(host))
        ck_assert_int_eq(X509_VERIFY_PARAM_set1_ip_asc(vp, host), 1);
    else
        ck_assert_int_eq(X509_VERIFY_PARAM_set1_host(vp, host, 0), 1);
    rc = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(leaf);
    X509_free(ca);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Making certificates */

START_TEST(test_ca_fields)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, 10 * YEAR), ca2 = make_ca(a, NOW, 10 * YEAR);
    X509 *x = x509(ca.cert_pem), *x2 = x509(ca2.cert_pem);
    EVP_PKEY *key = common_certs_key_from_pem(ca.key_pem, "ca.key", NULL);
    const BASIC_CONSTRAINTS *bc;
    BIGNUM *serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    X509_EXTENSION *ext;
    char cn[64];
    int crit = -1;

    ck_assert_ptr_nonnull(key);
    ck_assert_int_eq(X509_get_version(x), X509_VERSION_3);
    ck_assert_int_gt(
        X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn)), 0);
    ck_assert_str_eq(cn, "test-ca");
    ck_assert_int_eq(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)), 0);
    ck_assert_int_eq(X509_verify(x, X509_get0_pubkey(x)), 1); /* self-signed */
    ck_assert_int_eq(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
    /* basicConstraints: critical CA:TRUE, no path length */
    bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
    ck_assert_ptr_nonnull(bc);
    ck_assert_int_eq(crit, 1);
    ck_assert(bc->ca);
    ck_assert_ptr_null(bc->pathlen);
    BASIC_CONSTRAINTS_free((BASIC_CONSTRAINTS *)bc);
    /* keyUsage: critical, keyCertSign + cRLSign and nothing else */
    ext = X509_get_ext(x, X509_get_ext_by_NID(x, NID_key_usage, -1));
    ck_assert_ptr_nonnull(ext);
    ck_assert_int_eq(X509_EXTENSION_get_critical(ext), 1);
    ck_assert_uint_eq(X509_get_key_usage(x), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
    ck_assert_ptr_nonnull(X509_get0_subject_key_id(x));
    ck_assert_int_eq(X509_check_ca(x), 1);
    /* validity: now - 5 min .. now + lifetime */
    ck_assert_int_eq(epoch(X509_get0_notBefore(x)), NOW - 300);
    ck_assert_int_eq(epoch(X509_get0_notAfter(x)), NOW + 10 * YEAR);
    /* random positive serial of at most 128 bits; two CAs differ */
    ck_assert(!BN_is_negative(serial));
    ck_assert_int_le(BN_num_bits(serial), 128);
    ck_assert_int_gt(BN_num_bits(serial), 64); /* fails with probability 2^-64 */
    ck_assert_int_ne(ASN1_INTEGER_cmp(X509_get0_serialNumber(x), X509_get0_serialNumber(x2)), 0);
    /* ECDSA P-256, and the key belongs to the certificate */
    check_p256(key);
    check_p256(X509_get0_pubkey(x));
    ck_assert_int_eq(X509_check_private_key(x, key), 1);
    ck_assert_str_ne(ca.key_pem, ca2.key_pem);
    ck_assert_ptr_nonnull(strstr(ca.key_pem, "-----BEGIN PRIVATE KEY-----")); /* PKCS#8 */
    BN_free(serial);
    EVP_PKEY_free(key);
    X509_free(x);
    X509_free(x2);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_serving_fields)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, 10 * YEAR);
    struct common_certs_pair tls = make_serving(a, &ca, NOW, YEAR);
    X509 *x = x509(tls.cert_pem), *cax = x509(ca.cert_pem);
    EVP_PKEY *key = common_certs_key_from_pem(tls.key_pem, "tls.key", NULL);
    struct common_certs_info info;
    struct common_error e;
    X509_EXTENSION *ext;
    EXTENDED_KEY_USAGE *eku;
    int crit = -1;

    ck_assert_ptr_nonnull(key);
    check_p256(key);
    ck_assert_int_eq(X509_check_private_key(x, key), 1);
    ck_assert_int_eq(X509_get_version(x), X509_VERSION_3);
    ck_assert_int_eq(X509_verify(x, X509_get0_pubkey(cax)), 1);
    ck_assert_int_eq(X509_check_issued(cax, x), X509_V_OK);
    ck_assert_int_eq(X509_check_ca(x), 0);
    /* keyUsage: critical digitalSignature only */
    ext = X509_get_ext(x, X509_get_ext_by_NID(x, NID_key_usage, -1));
    ck_assert_ptr_nonnull(ext);
    ck_assert_int_eq(X509_EXTENSION_get_critical(ext), 1);
    ck_assert_uint_eq(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);
    /* extendedKeyUsage: serverAuth only */
    eku = X509_get_ext_d2i(x, NID_ext_key_usage, &crit, NULL);
    ck_assert_ptr_nonnull(eku);
    ck_assert_int_eq(sk_ASN1_OBJECT_num(eku), 1);
    ck_assert_int_eq(OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, 0)), NID_server_auth);
    EXTENDED_KEY_USAGE_free(eku);
    /* authorityKeyIdentifier = the CA's subjectKeyIdentifier */
    ck_assert_ptr_nonnull(X509_get0_authority_key_id(x));
    ck_assert_int_eq(
        ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(x), X509_get0_subject_key_id(cax)), 0);
    /* names, issuer and times as common_certs_info reports them */
    ck_assert_int_eq(common_certs_info(a, tls.cert_pem, &info, &e), COMMON_OK);
    ck_assert_str_eq(info.subject, "CN=trainsched.kubeflow-system.svc");
    ck_assert_str_eq(info.issuer, "CN=test-ca");
    ck_assert_str_eq(info.dns, "trainsched, trainsched.kubeflow-system, "
                               "trainsched.kubeflow-system.svc, "
                               "trainsched.kubeflow-system.svc.cluster.local, localhost, "
                               "trainsched.example.com");
    ck_assert_str_eq(info.ips, "127.0.0.1, ::1");
    ck_assert_str_eq(info.key, "EC P-256");
    ck_assert_int_eq(info.is_ca, 0);
    ck_assert_int_eq(info.not_before, NOW - 300);
    ck_assert_int_eq(info.not_after, NOW + YEAR);
    ck_assert_int_eq(strlen(info.serial) % 2, 0);
    ck_assert_int_eq(common_certs_info(a, ca.cert_pem, &info, &e), COMMON_OK);
    ck_assert_int_eq(info.is_ca, 1);
    ck_assert_str_eq(info.dns, "");
    EVP_PKEY_free(key);
    X509_free(x);
    X509_free(cax);
    common_arena_destroy(a);
}
END_TEST

/* a serving certificate never outlives its CA */
START_TEST(test_serving_capped_at_ca_end)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, 100 * DAY);
    struct common_certs_pair tls = make_serving(a, &ca, NOW + 50 * DAY, YEAR);
    struct common_certs_info info;

    ck_assert_int_eq(common_certs_info(a, tls.cert_pem, &info, NULL), COMMON_OK);
    ck_assert_int_eq(info.not_after, NOW + 100 * DAY);
    ck_assert_int_eq(info.not_before, NOW + 50 * DAY - 300);
    common_arena_destroy(a);
}
END_TEST

/* a service whose "<svc>.<ns>.svc" is over 64 bytes gets CN=<svc>, and every SAN anyway */
START_TEST(test_long_names)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, YEAR), tls;
    const char *svc = "a-service-name-that-is-long-enough-to-push-the-common-name-over";
    const char *ns = "a-namespace-that-is-equally-long-so-that-the-cn-would-not-fit-x";
    struct common_certs_names nm = {svc, ns, NULL, 0, NULL, 0};
    struct common_certs_info info;
    char host[200];

    ck_assert_int_eq(common_certs_make_serving(a, &ca, &nm, NOW, DAY, &tls, NULL), COMMON_OK);
    ck_assert_int_eq(common_certs_info(a, tls.cert_pem, &info, NULL), COMMON_OK);
    ck_assert_str_eq(info.subject + 3, svc);
    snprintf(host, sizeof(host), "%s.%s.svc", svc, ns);
    ck_assert_int_eq(common_certs_verify(tls.cert_pem, ca.cert_pem, host, NOW, NULL), COMMON_OK);
    common_arena_destroy(a);
}
END_TEST

struct bad_make_row {
    const char *what;
    struct common_certs_names names;
    int64_t lifetime;
    const char *want; /* piece of the message */
};

static const char *const bad_dns[] = {"-leading-dash"};
static const char *const ip_as_dns[] = {"10.0.0.1"};
static const char *const bad_ip[] = {"300.1.1.1"};
static const char *const short_ip[] = {"10.1.1"};
static const char *const empty_dns[] = {""};

static const struct bad_make_row bad_make_rows[] = {
    {"no service", {NULL, "ns", NULL, 0, NULL, 0}, DAY, "service: a name is required"},
    {"no namespace", {"svc", NULL, NULL, 0, NULL, 0}, DAY, "namespace: a name is required"},
    {"upper-case service", {"Svc", "ns", NULL, 0, NULL, 0}, DAY, "service \"Svc\": a lowercase"},
    {"dotted namespace",
     {"svc", "a.b", NULL, 0, NULL, 0},
     DAY,
     "namespace \"a.b\": must not contain dots"},
    {"bad extra DNS name", {"svc", "ns", bad_dns, 1, NULL, 0}, DAY, "DNS name \"-leading-dash\""},
    {"IP given as DNS", {"svc", "ns", ip_as_dns, 1, NULL, 0}, DAY, "give it as an IP address"},
    {"empty DNS name", {"svc", "ns", empty_dns, 1, NULL, 0}, DAY, "DNS name 1: empty"},
    {"bad IP", {"svc", "ns", NULL, 0, bad_ip, 1}, DAY, "IP address \"300.1.1.1\""},
    {"short IP", {"svc", "ns", NULL, 0, short_ip, 1}, DAY, "IP address \"10.1.1\""},
    {"zero lifetime", {"svc", "ns", NULL, 0, NULL, 0}, 0, "lifetime: 0 seconds is out of range"},
    {"lifetime over 100 years",
     {"svc", "ns", NULL, 0, NULL, 0},
     101 * YEAR,
     "out of range (1 second to 100 years)"},
};

START_TEST(test_bad_make)
{
    const struct bad_make_row *r = &bad_make_rows[_i];
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, YEAR), tls = {NULL, NULL};
    struct common_error e;

    ck_assert_msg(common_certs_make_serving(a, &ca, &r->names, NOW, r->lifetime, &tls, &e) ==
                      COMMON_EINVAL,
                  "%s: accepted", r->what);
    ck_assert_msg(strstr(e.msg, r->want), "%s: message \"%s\" lacks \"%s\"", r->what, e.msg,
                  r->want);
    ck_assert_ptr_null(tls.cert_pem);
    common_arena_destroy(a);
}
END_TEST

/* a reused CA of another make: RSA, without subjectKeyIdentifier (authorityKeyIdentifier then
 * names the issuer and serial) */
START_TEST(test_foreign_rsa_ca)
{
    struct common_arena *a = common_arena_create(0);
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    X509 *x = X509_new(), *leaf;
    X509V3_CTX v3;
    X509_EXTENSION *ext;
    struct common_certs_pair ca, tls;
    struct common_certs_info info;
    struct common_error e;

    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(x);
    ck_assert(X509_set_version(x, X509_VERSION_3));
    ck_assert(ASN1_INTEGER_set(X509_get_serialNumber(x), 4242));
    ck_assert(ASN1_TIME_set(X509_getm_notBefore(x), (time_t)(NOW - DAY)));
    ck_assert(ASN1_TIME_set(X509_getm_notAfter(x), (time_t)(NOW + YEAR)));
    ck_assert(X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                         (const unsigned char *)"legacy-rsa-ca", -1, -1, 0));
    ck_assert(X509_set_issuer_name(x, X509_get_subject_name(x)));
    ck_assert(X509_set_pubkey(x, k));
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_nconf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
    ck_assert(ext && X509_add_ext(x, ext, -1));
    X509_EXTENSION_free(ext);
    ext = X509V3_EXT_nconf_nid(NULL, &v3, NID_key_usage, "critical,keyCertSign");
    ck_assert(ext && X509_add_ext(x, ext, -1));
    X509_EXTENSION_free(ext);
    ck_assert_int_gt(X509_sign(x, k, EVP_sha256()), 0);
    ck_assert_ptr_null(X509_get0_subject_key_id(x));
    ca.cert_pem = common_certs_x509_to_pem(a, x);
    ca.key_pem = common_certs_key_to_pem(a, k);
    ck_assert_msg(common_certs_make_serving(a, &ca, &NAMES, NOW, DAY, &tls, &e) == COMMON_OK, "%s",
                  e.msg);
    ck_assert_int_eq(common_certs_verify(tls.cert_pem, ca.cert_pem, "localhost", NOW, &e),
                     COMMON_OK);
    leaf = x509(tls.cert_pem);
    ck_assert_ptr_null(X509_get0_authority_key_id(leaf));
    ck_assert_ptr_nonnull(X509_get0_authority_issuer(leaf));
    ck_assert_int_eq(ASN1_INTEGER_get(X509_get0_authority_serial(leaf)), 4242);
    ck_assert_int_eq(X509_get_signature_nid(leaf), NID_sha256WithRSAEncryption);
    check_p256(X509_get0_pubkey(leaf)); /* the new key is P-256 all the same */
    ck_assert_int_eq(common_certs_info(a, ca.cert_pem, &info, NULL), COMMON_OK);
    ck_assert_str_eq(info.key, "RSA 2048");
    X509_free(leaf);
    X509_free(x);
    EVP_PKEY_free(k);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_bad_ca)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, DAY), other = make_ca(a, NOW, DAY), tls;
    struct common_certs_pair leaf = make_serving(a, &ca, NOW, DAY);
    struct common_certs_pair mixed = {ca.cert_pem, other.key_pem};
    struct common_error e;
    char long_cn[80];

    ck_assert_int_eq(common_certs_make_serving(a, &leaf, &NAMES, NOW, DAY, &tls, &e),
                     COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "CA: the certificate is not a CA (basicConstraints CA:TRUE)");
    ck_assert_int_eq(common_certs_make_serving(a, &mixed, &NAMES, NOW, DAY, &tls, &e),
                     COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "CA: the private key does not belong to the certificate");
    ck_assert_int_eq(common_certs_make_serving(a, &ca, &NAMES, NOW + DAY, DAY, &tls, &e),
                     COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "CA certificate: expired at 2023-11-15T22:13:20Z");
    memset(long_cn, 'x', 65);
    long_cn[65] = '\0';
    ck_assert_int_eq(common_certs_make_ca(a, long_cn, NOW, DAY, &tls, &e), COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "must be 1 to 64 bytes"));
    ck_assert_int_eq(common_certs_make_ca(a, "", NOW, DAY, &tls, &e), COMMON_EINVAL);
    ck_assert_int_eq(common_certs_make_ca(a, "ca", NOW, -1, &tls, &e), COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "CA lifetime: -1 seconds is out of range (1 second to 100 years)");
    common_arena_destroy(a);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Verifying */

START_TEST(test_verify_every_san)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, 10 * YEAR);
    struct common_certs_pair tls = make_serving(a, &ca, NOW, YEAR);
    struct common_error e;

    for (size_t i = 0; i < sizeof(all_hosts) / sizeof(all_hosts[0]); i++) {
        ck_assert_msg(common_certs_verify(tls.cert_pem, ca.cert_pem, all_hosts[i], NOW, &e) ==
                          COMMON_OK,
                      "%s: %s", all_hosts[i], e.msg);
        /* first and last second of validity */
        ck_assert_int_eq(
            common_certs_verify(tls.cert_pem, ca.cert_pem, all_hosts[i], NOW - 300, &e), COMMON_OK);
        ck_assert_int_eq(
            common_certs_verify(tls.cert_pem, ca.cert_pem, all_hosts[i], NOW + YEAR - 1, &e),
            COMMON_OK);
    }
    ck_assert_int_eq(common_certs_verify(tls.cert_pem, ca.cert_pem, NULL, NOW, &e), COMMON_OK);
    /* and by OpenSSL's X509_verify_cert directly, in strict mode, for every name */
    for (size_t i = 0; i < sizeof(all_hosts) / sizeof(all_hosts[0]); i++) {
        int rc = strict_verify(tls.cert_pem, ca.cert_pem, all_hosts[i], NOW);
        ck_assert_msg(rc == X509_V_OK, "%s: %s", all_hosts[i], X509_verify_cert_error_string(rc));
        ck_assert_int_eq(strict_verify(tls.cert_pem, ca.cert_pem, all_hosts[i], NOW + YEAR),
                         X509_V_ERR_CERT_HAS_EXPIRED);
    }
    ck_assert_int_eq(strict_verify(tls.cert_pem, ca.cert_pem, "wrong.kubeflow-system.svc", NOW),
                     X509_V_ERR_HOSTNAME_MISMATCH);
    common_arena_destroy(a);
}
END_TEST

struct verify_row {
    const char *what;
    const char *host;
    int64_t at;       /* offset from NOW */
    int bundle;       /* 0: the CA; 1: another CA; 2: another CA then the CA; 3: the leaf itself */
    const char *want; /* NULL: trusted; else a piece of the message */
};

static const struct verify_row verify_rows[] = {
    {"another service", "other.kubeflow-system.svc", 0, 0, "hostname mismatch"},
    {"another namespace", "trainsched.default.svc", 0, 0, "hostname mismatch"},
    {"a sub-domain of a SAN", "x.trainsched.kubeflow-system.svc", 0, 0, "hostname mismatch"},
    {"upper case is the same name", "TRAINSCHED.KUBEFLOW-SYSTEM.SVC", 0, 0, NULL},
    {"an IP that is not a SAN", "10.0.0.1", 0, 0, "IP address mismatch"},
    {"IPv6 that is not a SAN", "::2", 0, 0, "IP address mismatch"},
    {"expired (one second after notAfter)", "localhost", YEAR + 1, 0, "certificate has expired"},
    {"at notAfter exactly (OpenSSL's validity ends before it)", "localhost", YEAR, 0,
     "certificate has expired"},
    {"expired (ten years on)", "localhost", 10 * YEAR, 0, "certificate has expired"},
    {"not yet valid", "localhost", -301, 0, "certificate is not yet valid"},
    {"a bundle without its CA", "localhost", 0, 1, "unable to get local issuer certificate"},
    {"a bundle of two CAs, its CA second", "localhost", 0, 2, NULL},
    {"the leaf trusted as if it were a CA", "localhost", 0, 3, NULL},
};

START_TEST(test_verify_failures)
{
    const struct verify_row *r = &verify_rows[_i];
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, 10 * YEAR), other = make_ca(a, NOW, 10 * YEAR);
    struct common_certs_pair tls = make_serving(a, &ca, NOW, YEAR);
    const char *bundles[4];
    struct common_error e;
    enum common_rc rc;

    bundles[0] = ca.cert_pem;
    bundles[1] = other.cert_pem;
    bundles[2] = common_arena_printf(a, "%s%s", other.cert_pem, ca.cert_pem);
    bundles[3] = tls.cert_pem;
    common_error_clear(&e);
    rc = common_certs_verify(tls.cert_pem, bundles[r->bundle], r->host, NOW + r->at, &e);
    if (r->bundle == 3) {
        /* a leaf in the trust store is a trust anchor only with X509_V_FLAG_PARTIAL_CHAIN,
         * which we do not set: it must not verify */
        ck_assert_int_eq(rc, COMMON_EINVAL);
    } else if (!r->want) {
        ck_assert_msg(rc == COMMON_OK, "%s: %s", r->what, e.msg);
    } else {
        ck_assert_msg(rc == COMMON_EINVAL, "%s: trusted", r->what);
        ck_assert_msg(strstr(e.msg, r->want), "%s: \"%s\" lacks \"%s\"", r->what, e.msg, r->want);
    }
    common_arena_destroy(a);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* PEM */

START_TEST(test_pem_round_trip)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, YEAR), other = make_ca(a, NOW, YEAR);
    X509 *x = common_certs_x509_from_pem(ca.cert_pem, "ca.crt", NULL);
    EVP_PKEY *k = common_certs_key_from_pem(ca.key_pem, "ca.key", NULL);
    struct common_certs_pair mixed = {ca.cert_pem, other.key_pem}, sec1;
    struct common_error e;
    BIO *bio = BIO_new(BIO_s_mem());
    char *mem;
    long n;

    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(k);
    ck_assert_str_eq(common_certs_x509_to_pem(a, x), ca.cert_pem);
    ck_assert_str_eq(common_certs_key_to_pem(a, k), ca.key_pem);
    ck_assert_int_eq(common_certs_pair_check(&ca, 1, "ca", &e), COMMON_OK);
    ck_assert_int_eq(common_certs_pair_check(&mixed, 0, "mixed", &e), COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "mixed: the private key does not belong to the certificate");
    /* the SEC 1 form ("EC PRIVATE KEY") reads too */
    ck_assert_int_eq(PEM_write_bio_PrivateKey_traditional(bio, k, NULL, NULL, 0, NULL, NULL), 1);
    n = BIO_get_mem_data(bio, &mem);
    sec1.cert_pem = ca.cert_pem;
    sec1.key_pem = common_arena_strndup(a, mem, (size_t)n);
    ck_assert_ptr_nonnull(strstr(sec1.key_pem, "BEGIN EC PRIVATE KEY"));
    ck_assert_int_eq(common_certs_pair_check(&sec1, 1, "sec1", &e), COMMON_OK);
    /* not PEM, a key where a certificate should be, a truncated block */
    ck_assert_ptr_null(common_certs_x509_from_pem("hello", "ca.crt", &e));
    ck_assert_int_eq(e.code, COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "ca.crt: not a PEM certificate: no CERTIFICATE block");
    ck_assert_ptr_null(common_certs_x509_from_pem(ca.key_pem, "ca.crt", &e));
    ck_assert_ptr_null(common_certs_key_from_pem(ca.cert_pem, "ca.key", &e));
    ck_assert_ptr_nonnull(strstr(e.msg, "ca.key: not an unencrypted PEM private key"));
    ca.cert_pem[strlen(ca.cert_pem) / 2] = '\0';
    ck_assert_ptr_null(common_certs_x509_from_pem(ca.cert_pem, "ca.crt", &e));
    ck_assert_ptr_null(common_certs_x509_from_pem(NULL, "ca.crt", &e));
    ck_assert_str_eq(e.msg, "ca.crt: no certificate");
    ck_assert_uint_eq(ERR_peek_error(), 0); /* nothing left on OpenSSL's error queue */
    BIO_free(bio);
    X509_free(x);
    EVP_PKEY_free(k);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_base64)
{
    struct common_arena *a = common_arena_create(0);

    ck_assert_str_eq(common_certs_base64(a, "", 0), "");
    ck_assert_str_eq(common_certs_base64(a, "f", 1), "Zg==");
    ck_assert_str_eq(common_certs_base64(a, "fo", 2), "Zm8=");
    ck_assert_str_eq(common_certs_base64(a, "foobar", 6), "Zm9vYmFy");
    common_arena_destroy(a);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Durations */

struct duration_row {
    const char *in;
    int64_t want; /* 0: invalid */
    const char *msg;
};

static const struct duration_row duration_rows[] = {
    {"120s", 120, NULL},
    {"90d", 90 * DAY, NULL},
    {"8760h", YEAR, NULL},
    {"87600h", 10 * YEAR, NULL},
    {"1h30m", 5400, NULL},
    {"1d1s", DAY + 1, NULL},
    {"36500d", 100 * YEAR, NULL},
    {"36501d", 0, "over the maximum of 100 years"},
    {"99999999999999999999s", 0, "over the maximum of 100 years"},
    {"", 0, "empty"},
    {"0s", 0, "must be positive"},
    {"10", 0, "missing unit after 10"},
    {"10y", 0, "unknown unit \"y\""},
    {"h", 0, "expected a number at \"h\""},
    {"-5s", 0, "expected a number at \"-5s\""},
    {"1.5h", 0, "unknown unit \".\""},
    {"5s ", 0, "expected a number at \" \""},
};

START_TEST(test_duration)
{
    const struct duration_row *r = &duration_rows[_i];
    struct common_error e;
    int64_t got = -1;
    enum common_rc rc = common_certs_parse_duration(r->in, &got, &e);

    if (r->want) {
        ck_assert_msg(rc == COMMON_OK, "%s: %s", r->in, e.msg);
        ck_assert_int_eq(got, r->want);
    } else {
        ck_assert_msg(rc == COMMON_EINVAL, "\"%s\" accepted", r->in);
        ck_assert_msg(strstr(e.msg, r->msg), "\"%s\": \"%s\" lacks \"%s\"", r->in, e.msg, r->msg);
        ck_assert_int_eq(got, -1);
    }
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* The rotation decision, row by row */

START_TEST(test_renew_at)
{
    struct common_certs_policy p;
    struct common_certs_span s;

    common_certs_policy_default(&p);
    s.not_before = 0;
    s.not_after = 3000;
    ck_assert_int_eq(common_certs_renew_at(&s, &p), 2000);
    s.not_after = 3001; /* 2000.67 -> 2000 */
    ck_assert_int_eq(common_certs_renew_at(&s, &p), 2000);
    s.not_after = 3002; /* 2001.33 -> 2001 */
    ck_assert_int_eq(common_certs_renew_at(&s, &p), 2001);
    s.not_before = NOW - SKEW; /* a default serving certificate: 2/3 of (1 year + 5 min) */
    s.not_after = NOW + YEAR;
    ck_assert_int_eq(common_certs_renew_at(&s, &p), NOW - SKEW + (YEAR + SKEW) * 2 / 3);
    s.not_before = 0; /* no overflow near the top of int64 */
    s.not_after = INT64_MAX;
    ck_assert_int_eq(common_certs_renew_at(&s, &p), INT64_MAX / 3 * 2);
    p.renew_num = 999;
    p.renew_den = 1000;
    s.not_after = 1000;
    ck_assert_int_eq(common_certs_renew_at(&s, &p), 999);
    s.not_after = 0; /* empty span: due at once */
    ck_assert_int_eq(common_certs_renew_at(&s, &p), 0);
}
END_TEST

START_TEST(test_policy_check)
{
    struct common_certs_policy p;
    struct common_error e;

    common_certs_policy_default(&p);
    ck_assert_int_eq(p.ca_lifetime_s, 3650 * DAY);
    ck_assert_int_eq(p.serving_lifetime_s, 365 * DAY);
    ck_assert_int_eq(p.renew_num * 3, p.renew_den * 2);
    ck_assert_int_eq(p.rotate_ca, 1);
    ck_assert_int_eq(common_certs_policy_check(&p, &e), COMMON_OK);
    p.renew_num = 3;
    ck_assert_int_eq(common_certs_policy_check(&p, &e), COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "renewal fraction 3/3"));
    common_certs_policy_default(&p);
    p.serving_lifetime_s = 150; /* renewal point (150 + 300) * 2/3 - 300 = 0: due at birth */
    ck_assert_int_eq(common_certs_policy_check(&p, &e), COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "too short"));
    p.serving_lifetime_s = 151; /* (151 + 300) * 2/3 = 300.67 -> 300: still due at birth */
    ck_assert_int_eq(common_certs_policy_check(&p, &e), COMMON_EINVAL);
    p.serving_lifetime_s = 152; /* 301: due a second after birth */
    ck_assert_int_eq(common_certs_policy_check(&p, &e), COMMON_OK);
    p.publish_grace_s = -1;
    ck_assert_int_eq(common_certs_policy_check(&p, &e), COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "publish grace"));
    common_certs_policy_default(&p);
    p.ca_lifetime_s = 0;
    ck_assert_int_eq(common_certs_policy_check(&p, &e), COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "CA lifetime"));
}
END_TEST

#define NONE_ COMMON_CERTS_ISSUER_NONE
#define CA_ COMMON_CERTS_ISSUER_CA
#define OLD_ COMMON_CERTS_ISSUER_OLD_CA
#define OTHER_ COMMON_CERTS_ISSUER_OTHER
#define NOTHING COMMON_CERTS_NOTHING
#define CREATE COMMON_CERTS_CREATE
#define REPAIR COMMON_CERTS_REPAIR_BUNDLE
#define RENEW COMMON_CERTS_RENEW_SERVING
#define ROTATE COMMON_CERTS_ROTATE_CA_ADD
#define SWITCH COMMON_CERTS_SWITCH_SERVING
#define DROP COMMON_CERTS_DROP_OLD_CA
#define NEVER INT64_MAX

/*
 * Rows use small times. Policy: renew at 2/3, publish grace 100, switch grace 50 (and the
 * fixed 300 s skew), rotate_ca unless the row says otherwise.
 *   steady CA: [0, 3000] (due at 2000); serving from it [1000, 1900] (due at 1600)
 *   rotation: new CA [2000, 5000]; old CA [0, 3000]; serving from the old CA [1500, 2400]
 *   switched: serving from the new CA [2200, 3100], issued at 2500, loaded by 2550
 */
struct decide_row {
    const char *name;
    struct common_certs_view v;
    int no_rotate;
    int64_t now;
    enum common_certs_action want;
    int64_t next; /* for NOTHING */
    int expiring;
};

#define STEADY(nb, na)                                                                             \
    {                                                                                              \
        1, {0, 3000}, 1, 0, CA_, {nb, na}, {0, 3000}, 1, 0                                         \
    }
#define ROTATING(iss, nb, na, pub)                                                                 \
    {                                                                                              \
        1, {2000, 5000}, 1, 1, iss, {nb, na}, {0, 3000}, 1, pub                                    \
    }
#define SWITCHED(nb, na)                                                                           \
    {                                                                                              \
        1, {2000, 5000}, 1, 1, CA_, {nb, na}, {2000, 5000}, 1, 2010                                \
    }

static const struct decide_row decide_rows[] = {
    /* steady: serving renewal at exactly 2/3 */
    {"steady, a second before the serving cert's 2/3: wait for it", STEADY(1000, 1900), 0, 1599,
     NOTHING, 1600, 0},
    {"steady, at the serving cert's 2/3: renew", STEADY(1000, 1900), 0, 1600, RENEW, 0, 0},
    {"steady, past 2/3 and not yet expired: renew", STEADY(1000, 1900), 0, 1899, RENEW, 0, 0},
    {"steady, serving cert expired: renew", STEADY(1000, 1900), 0, 1900, RENEW, 0, 0},
    {"steady, long before anything: wait for the serving cert's 2/3", STEADY(1000, 1900), 0, 1000,
     NOTHING, 1600, 0},
    /* steady: CA rotation at exactly 2/3 of the CA */
    {"steady, a second before the CA's 2/3: wait for it", STEADY(1500, 2600), 0, 1999, NOTHING,
     2000, 0},
    {"steady, at the CA's 2/3: add a new CA", STEADY(1500, 2600), 0, 2000, ROTATE, 0, 0},
    {"steady, CA due but the serving cert expired: repair the serving cert first",
     STEADY(1000, 1900), 0, 2000, RENEW, 0, 0},
    {"steady, CA due and serving cert due: rotation before renewal", STEADY(1500, 2400), 0, 2100,
     ROTATE, 0, 0},
    /* steady without CA rotation (extender: kube-scheduler reads the CA at start) */
    {"no CA rotation, CA past 2/3: keep it, flag it, renew serving at its 2/3", STEADY(1500, 2600),
     1, 2000, NOTHING, 2233, 1},
    {"no CA rotation, serving due: renew from the same CA", STEADY(1500, 2600), 1, 2233, RENEW, 0,
     1},
    {"no CA rotation, serving capped at the CA's end: a renewal cannot help, wait",
     STEADY(2700, 3000), 1, 2950, NOTHING, 3000, 1},
    {"no CA rotation, CA expired: create", STEADY(2700, 3000), 1, 3000, CREATE, 0, 0},
    {"no CA rotation, CA not yet due: not flagged", STEADY(1000, 1900), 1, 1500, NOTHING, 1600, 0},
    /* steady: repairs */
    {"steady, serving cert from a foreign CA: reissue",
     {1, {0, 3000}, 1, 0, OTHER_, {1000, 1900}, {0, 0}, 1, 0},
     0,
     1100,
     RENEW,
     0,
     0},
    {"steady, no serving cert: issue",
     {1, {0, 3000}, 1, 0, NONE_, {0, 0}, {0, 0}, 0, 0},
     0,
     1100,
     RENEW,
     0,
     0},
    {"steady, serving cert lacks a wanted name: reissue",
     {1, {0, 3000}, 1, 0, CA_, {1000, 1900}, {0, 3000}, 0, 0},
     0,
     1100,
     RENEW,
     0,
     0},
    /* no usable CA */
    {"empty Secret: create", {0, {0, 0}, 0, 0, NONE_, {0, 0}, {0, 0}, 0, 0}, 0, 100, CREATE, 0, 0},
    {"CA expired: create", STEADY(2700, 3000), 0, 3000, CREATE, 0, 0},
    {"CA key lost, serving cert from a bundle CA still valid: phase in a new CA",
     {0, {0, 0}, 0, 1, OLD_, {1000, 1900}, {0, 3000}, 1, 0},
     0,
     1100,
     ROTATE,
     0,
     0},
    {"CA key lost, serving cert expired: create",
     {0, {0, 0}, 0, 1, OLD_, {1000, 1900}, {0, 3000}, 1, 0},
     0,
     1900,
     CREATE,
     0,
     0},
    {"CA key lost, serving cert's CA expired: create",
     {0, {0, 0}, 0, 1, OLD_, {1000, 3500}, {0, 3000}, 1, 0},
     0,
     3000,
     CREATE,
     0,
     0},
    {"CA key lost without CA rotation: create",
     {0, {0, 0}, 0, 1, OLD_, {1000, 1900}, {0, 3000}, 1, 0},
     1,
     1100,
     CREATE,
     0,
     0},
    /* ca.crt missing from the bundle */
    {"ca.crt not in the bundle: add it",
     {1, {0, 3000}, 0, 1, OLD_, {1000, 1900}, {0, 3000}, 1, 0},
     0,
     1100,
     REPAIR,
     0,
     0},
    /* rotation: waiting for the bundle with both CAs to be published */
    {"rotating, bundle not yet published: wait (at most until the serving cert ends)",
     ROTATING(OLD_, 1500, 2400, 0), 0, 2001, NOTHING, 2400, 0},
    {"rotating, published, a second before the publish grace ends: wait",
     ROTATING(OLD_, 1500, 2400, 2010), 0, 2109, NOTHING, 2110, 0},
    {"rotating, published and the publish grace over: switch", ROTATING(OLD_, 1500, 2400, 2010), 0,
     2110, SWITCH, 0, 0},
    {"rotating, serving cert past its 2/3 but published only now: still wait",
     ROTATING(OLD_, 1500, 2400, 2100), 0, 2150, NOTHING, 2200, 0},
    {"rotating, unpublished and the serving cert expires: switch at once",
     ROTATING(OLD_, 1500, 2400, 0), 0, 2400, SWITCH, 0, 0},
    {"rotating, unpublished, the old CA ends before the serving cert: wait until then",
     {1, {2000, 5000}, 1, 1, OLD_, {1500, 2800}, {0, 2300}, 1, 0},
     0,
     2299,
     NOTHING,
     2300,
     0},
    {"rotating, unpublished, the old CA has ended: switch at once",
     {1, {2000, 5000}, 1, 1, OLD_, {1500, 2800}, {0, 2300}, 1, 0},
     0,
     2300,
     SWITCH,
     0,
     0},
    {"rotating, serving cert from a foreign CA: switch at once", ROTATING(OTHER_, 1500, 2400, 0), 0,
     2001, SWITCH, 0, 0},
    {"rotating, no serving cert: switch at once", ROTATING(NONE_, 0, 0, 0), 0, 2001, SWITCH, 0, 0},
    {"rotating, serving cert lacks a name, unpublished: wait (the switch fixes it)",
     {1, {2000, 5000}, 1, 1, OLD_, {1500, 2400}, {0, 3000}, 0, 0},
     0,
     2001,
     NOTHING,
     2400,
     0},
    {"rotating without CA rotation (policy changed): finish the rotation",
     ROTATING(OLD_, 1500, 2400, 2010), 1, 2110, SWITCH, 0, 0},
    /* rotation: switched, waiting for replicas before dropping the old CA */
    {"switched, a second before every replica has loaded it: wait", SWITCHED(2200, 3100), 0, 2549,
     NOTHING, 2550, 0},
    {"switched, every replica serves the new CA: drop the old CA", SWITCHED(2200, 3100), 0, 2550,
     DROP, 0, 0},
    {"switched, serving cert lacks a name: renew (same CA) first",
     {1, {2000, 5000}, 1, 1, CA_, {2200, 3100}, {2000, 5000}, 0, 2010},
     0,
     2549,
     RENEW,
     0,
     0},
    {"switched, serving cert due before the drop: renew", SWITCHED(2200, 2500), 0, 2400, RENEW, 0,
     0},
    {"switched, serving cert expired: renew", SWITCHED(2200, 2500), 0, 2500, RENEW, 0, 0},
    {"switched, a second before the serving cert's 2/3: wait for it", SWITCHED(2200, 2500), 0, 2399,
     NOTHING, 2400, 0},
    {"switched, bundle never seen published (urgent switch): dropping is still safe",
     {1, {2000, 5000}, 1, 1, CA_, {2200, 3100}, {2000, 5000}, 1, 0},
     0,
     2600,
     DROP,
     0,
     0},
};

START_TEST(test_decide)
{
    const struct decide_row *r = &decide_rows[_i];
    struct common_certs_policy p;
    struct common_certs_decision d;

    common_certs_policy_default(&p);
    p.publish_grace_s = 100;
    p.switch_grace_s = 50;
    p.rotate_ca = !r->no_rotate;
    common_certs_decide(&r->v, &p, r->now, &d);
    ck_assert_msg(d.action == r->want, "%s: got %s (%s), want %s", r->name,
                  common_certs_action_name(d.action), d.reason, common_certs_action_name(r->want));
    ck_assert_msg(d.next_s == (r->want == NOTHING ? r->next : r->now), "%s: next %lld", r->name,
                  (long long)d.next_s);
    ck_assert_msg(d.ca_expiring == r->expiring, "%s: ca_expiring %d", r->name, d.ca_expiring);
    ck_assert_ptr_nonnull(d.reason);
    /* the decision is a function of its inputs: the same answer again */
    {
        struct common_certs_decision d2;
        common_certs_decide(&r->v, &p, r->now, &d2);
        ck_assert_int_eq(d2.action, d.action);
        ck_assert_int_eq(d2.next_s, d.next_s);
    }
}
END_TEST

START_TEST(test_action_names)
{
    ck_assert_str_eq(common_certs_action_name(NOTHING), "nothing");
    ck_assert_str_eq(common_certs_action_name(CREATE), "create");
    ck_assert_str_eq(common_certs_action_name(REPAIR), "repair-bundle");
    ck_assert_str_eq(common_certs_action_name(RENEW), "renew-serving");
    ck_assert_str_eq(common_certs_action_name(ROTATE), "rotate-ca-add");
    ck_assert_str_eq(common_certs_action_name(SWITCH), "switch-serving");
    ck_assert_str_eq(common_certs_action_name(DROP), "drop-old-ca");
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Observe and apply with real certificates */

static int count_certs(const char *pem)
{
    int n = 0;
    for (const char *p = pem; p && (p = strstr(p, "-----BEGIN CERTIFICATE-----")); p++)
        n++;
    return n;
}

START_TEST(test_observe)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair ca = make_ca(a, NOW, 10 * YEAR), other = make_ca(a, NOW, 10 * YEAR);
    struct common_certs_pair tls = make_serving(a, &ca, NOW, YEAR);
    struct common_certs_pair tls_other = make_serving(a, &other, NOW, YEAR);
    struct common_certs_secret s = {0};
    struct common_certs_view v;
    static const char *const more_dns[] = {"new.example.com"};
    struct common_certs_names more = NAMES;

    /* empty */
    ck_assert_int_eq(common_certs_observe(&s, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.ca_ok, 0);
    ck_assert_int_eq(v.old_cas, 0);
    ck_assert_int_eq(v.serving_issuer, NONE_);
    /* what `trainsched certs` writes, as a Secret without ca-bundle.crt */
    s.ca_crt = ca.cert_pem;
    s.ca_key = ca.key_pem;
    s.tls_crt = tls.cert_pem;
    s.tls_key = tls.key_pem;
    s.bundle_published_at = 42;
    ck_assert_int_eq(common_certs_observe(&s, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.ca_ok, 1);
    ck_assert_int_eq(v.ca.not_before, NOW - 300);
    ck_assert_int_eq(v.ca.not_after, NOW + 10 * YEAR);
    ck_assert_int_eq(v.ca_in_bundle, 1);
    ck_assert_int_eq(v.old_cas, 0);
    ck_assert_int_eq(v.serving_issuer, CA_);
    ck_assert_int_eq(v.serving.not_after, NOW + YEAR);
    ck_assert_int_eq(v.serving_signer.not_after, NOW + 10 * YEAR);
    ck_assert_int_eq(v.serving_names_ok, 1);
    ck_assert_int_eq(v.bundle_published_at, 42);
    /* a wanted name the certificate lacks */
    more.dns = more_dns;
    more.ndns = 1;
    ck_assert_int_eq(common_certs_observe(&s, &more, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.serving_names_ok, 0);
    more = NAMES;
    more.nips = 1; /* fewer wanted names than it has: fine */
    ck_assert_int_eq(common_certs_observe(&s, &more, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.serving_names_ok, 1);
    /* rotation: bundle {other, ca}, serving from other */
    s.ca_bundle = common_arena_printf(a, "%s%s", other.cert_pem, ca.cert_pem);
    s.tls_crt = tls_other.cert_pem;
    s.tls_key = tls_other.key_pem;
    ck_assert_int_eq(common_certs_observe(&s, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.ca_in_bundle, 1);
    ck_assert_int_eq(v.old_cas, 1);
    ck_assert_int_eq(v.serving_issuer, OLD_);
    /* bundle without ca.crt */
    s.ca_bundle = other.cert_pem;
    ck_assert_int_eq(common_certs_observe(&s, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.ca_in_bundle, 0);
    ck_assert_int_eq(v.old_cas, 1);
    /* serving from a CA outside the bundle */
    s.ca_bundle = ca.cert_pem;
    ck_assert_int_eq(common_certs_observe(&s, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.serving_issuer, OTHER_);
    /* tls.key is not tls.crt's key */
    s.tls_key = tls.key_pem;
    ck_assert_int_eq(common_certs_observe(&s, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.serving_issuer, NONE_);
    ck_assert_int_eq(v.serving.not_after, 0);
    /* CA key lost: every bundle CA counts as old, and ca.crt's serving cert is from an old CA */
    s.tls_crt = tls.cert_pem;
    s.ca_key = NULL;
    ck_assert_int_eq(common_certs_observe(&s, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.ca_ok, 0);
    ck_assert_int_eq(v.old_cas, 1);
    ck_assert_int_eq(v.serving_issuer, OLD_);
    /* ca.crt is not a CA */
    s.ca_crt = tls.cert_pem;
    s.ca_key = tls.key_pem;
    ck_assert_int_eq(common_certs_observe(&s, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.ca_ok, 0);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_apply_each_action)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_policy p;
    struct common_certs_secret s0 = {0}, s1, s2, s3, s4;
    struct common_certs_view v;
    struct common_error e;
    const char *host = "trainsched.kubeflow-system.svc";

    common_certs_policy_default(&p);
    /* CREATE */
    ck_assert_int_eq(common_certs_apply(a, CREATE, &s0, &NAMES, &p, NOW, &s1, &e), COMMON_OK);
    ck_assert_str_eq(s1.ca_bundle, s1.ca_crt);
    ck_assert_int_eq(common_certs_verify(s1.tls_crt, s1.ca_bundle, host, NOW, NULL), COMMON_OK);
    {
        struct common_certs_info ci;
        ck_assert_int_eq(common_certs_info(a, s1.ca_crt, &ci, NULL), COMMON_OK);
        ck_assert_str_eq(ci.subject, "CN=trainsched-ca@1700000000");
        ck_assert_int_eq(ci.not_after, NOW + 3650 * DAY);
    }
    s1.bundle_published_at = NOW + 10;
    /* RENEW_SERVING keeps CA and bundle (and its publication) */
    ck_assert_int_eq(common_certs_apply(a, RENEW, &s1, &NAMES, &p, NOW + 100, &s2, &e), COMMON_OK);
    ck_assert_ptr_eq(s2.ca_crt, s1.ca_crt);
    ck_assert_ptr_eq(s2.ca_bundle, s1.ca_bundle);
    ck_assert_int_eq(s2.bundle_published_at, NOW + 10);
    ck_assert_str_ne(s2.tls_crt, s1.tls_crt);
    ck_assert_int_eq(common_certs_verify(s2.tls_crt, s1.ca_bundle, host, NOW + 100, NULL),
                     COMMON_OK);
    /* ROTATE_CA_ADD: new ca.crt, bundle = old + new, serving kept, publication reset */
    ck_assert_int_eq(common_certs_apply(a, ROTATE, &s2, &NAMES, &p, NOW + 200, &s3, &e), COMMON_OK);
    ck_assert_str_ne(s3.ca_crt, s2.ca_crt);
    ck_assert_ptr_eq(s3.tls_crt, s2.tls_crt);
    ck_assert_int_eq(count_certs(s3.ca_bundle), 2);
    ck_assert_ptr_nonnull(strstr(s3.ca_bundle, s2.ca_crt));
    ck_assert_ptr_nonnull(strstr(s3.ca_bundle, s3.ca_crt));
    ck_assert_int_eq(s3.bundle_published_at, 0);
    ck_assert_int_eq(common_certs_observe(&s3, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.old_cas, 1);
    ck_assert_int_eq(v.serving_issuer, OLD_);
    /* old clients (old bundle) and new clients (new bundle) both trust the kept certificate */
    ck_assert_int_eq(common_certs_verify(s3.tls_crt, s2.ca_bundle, host, NOW + 200, NULL),
                     COMMON_OK);
    ck_assert_int_eq(common_certs_verify(s3.tls_crt, s3.ca_bundle, host, NOW + 200, NULL),
                     COMMON_OK);
    /* SWITCH_SERVING: serving from the new CA, trusted by the two-CA bundle, not the old one */
    ck_assert_int_eq(common_certs_apply(a, SWITCH, &s3, &NAMES, &p, NOW + 900, &s4, &e), COMMON_OK);
    ck_assert_int_eq(common_certs_verify(s4.tls_crt, s3.ca_bundle, host, NOW + 900, NULL),
                     COMMON_OK);
    ck_assert_int_eq(common_certs_verify(s4.tls_crt, s2.ca_bundle, host, NOW + 900, NULL),
                     COMMON_EINVAL);
    ck_assert_int_eq(common_certs_observe(&s4, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.serving_issuer, CA_);
    /* DROP_OLD_CA: bundle = {ca.crt} */
    s4.bundle_published_at = NOW + 300;
    ck_assert_int_eq(common_certs_apply(a, DROP, &s4, &NAMES, &p, NOW + 1500, &s1, &e), COMMON_OK);
    ck_assert_str_eq(s1.ca_bundle, s4.ca_crt);
    ck_assert_int_eq(s1.bundle_published_at, 0);
    ck_assert_int_eq(common_certs_verify(s1.tls_crt, s1.ca_bundle, host, NOW + 1500, NULL),
                     COMMON_OK);
    /* REPAIR_BUNDLE: bundle {old} + ca.crt */
    s1.ca_bundle = s2.ca_bundle;
    ck_assert_int_eq(common_certs_apply(a, REPAIR, &s1, &NAMES, &p, NOW + 1600, &s2, &e),
                     COMMON_OK);
    ck_assert_int_eq(count_certs(s2.ca_bundle), 2);
    ck_assert_int_eq(common_certs_observe(&s2, &NAMES, &v, NULL), COMMON_OK);
    ck_assert_int_eq(v.ca_in_bundle, 1);
    /* NOTHING copies; an action needing a CA on an empty Secret is refused */
    ck_assert_int_eq(common_certs_apply(a, NOTHING, &s2, &NAMES, &p, NOW, &s3, &e), COMMON_OK);
    ck_assert_ptr_eq(s3.tls_crt, s2.tls_crt);
    ck_assert_int_eq(common_certs_apply(a, RENEW, &s0, &NAMES, &p, NOW, &s3, &e), COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "CA certificate: no certificate");
    ck_assert_int_eq(common_certs_apply(a, DROP, &s0, &NAMES, &p, NOW, &s3, &e), COMMON_EINVAL);
    common_arena_destroy(a);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* The whole protocol, simulated: nobody ever sees an untrusted certificate */

#define HIST_MAX 512

struct sim {
    struct common_arena *a;
    struct common_certs_policy p;
    struct common_certs_secret s;
    int64_t publish_delay; /* from a bundle change to every caBundle patched and seen */
    int frozen_clients;    /* clients read the bundle once at start (kube-scheduler) */
    char *bundles[HIST_MAX];
    int64_t bundle_at[HIST_MAX];
    int nbundles;
    char *certs[HIST_MAX];
    int64_t cert_at[HIST_MAX];
    int ncerts;
    int counts[8];
    int checks;
    int expiring_seen;
};

/* every bundle an API server may hold at x, against every certificate a replica may serve */
static void sim_check(struct sim *m, int64_t x)
{
    for (int i = 0; i < m->nbundles; i++) {
        int may_hold = m->bundle_at[i] <= x &&
                       (m->frozen_clients ? i == 0
                                          : i + 1 == m->nbundles ||
                                                x < m->bundle_at[i + 1] + m->p.publish_grace_s);
        if (!may_hold)
            continue;
        for (int j = 0; j < m->ncerts; j++) {
            struct common_error e;
            int may_serve = m->cert_at[j] <= x &&
                            (j + 1 == m->ncerts || x < m->cert_at[j + 1] + m->p.switch_grace_s);
            if (!may_serve)
                continue;
            ck_assert_msg(common_certs_verify(m->certs[j], m->bundles[i],
                                              "trainsched.kubeflow-system.svc", x, &e) == COMMON_OK,
                          "at +%lld s: bundle %d (published +%lld) rejects certificate %d (issued "
                          "+%lld): %s",
                          (long long)(x - NOW), i, (long long)(m->bundle_at[i] - NOW), j,
                          (long long)(m->cert_at[j] - NOW), e.msg);
            m->checks++;
        }
    }
}

static void sim_run(struct sim *m, int64_t end)
{
    int64_t t = NOW, pub_at = 0;
    int pending = 0, same_t = 0;

    for (int steps = 0; t < end; steps++) {
        struct common_certs_view v;
        struct common_certs_decision d;
        struct common_certs_secret next;
        struct common_error e;
        int64_t n;

        ck_assert_int_lt(steps, 5000);
        if (pending && t >= pub_at) {
            /* the glue has patched every caBundle and read them back */
            ck_assert_int_lt(m->nbundles, HIST_MAX);
            m->bundles[m->nbundles] = m->s.ca_bundle;
            m->bundle_at[m->nbundles++] = pub_at;
            m->s.bundle_published_at = pub_at;
            pending = 0;
        }
        ck_assert_int_eq(common_certs_observe(&m->s, &NAMES, &v, &e), COMMON_OK);
        common_certs_decide(&v, &m->p, t, &d);
        m->expiring_seen |= d.ca_expiring;
        if (d.action != NOTHING) {
            ck_assert_msg(++same_t <= 3, "at +%lld s: %s again (%s)", (long long)(t - NOW),
                          common_certs_action_name(d.action), d.reason);
            ck_assert_msg(common_certs_apply(m->a, d.action, &m->s, &NAMES, &m->p, t, &next, &e) ==
                              COMMON_OK,
                          "%s: %s", common_certs_action_name(d.action), e.msg);
            m->counts[d.action]++;
            if (next.ca_bundle != m->s.ca_bundle) {
                pending = 1;
                pub_at = t + m->publish_delay;
            }
            if (next.tls_crt != m->s.tls_crt) {
                ck_assert_int_lt(m->ncerts, HIST_MAX);
                m->certs[m->ncerts] = next.tls_crt;
                m->cert_at[m->ncerts++] = t;
            }
            m->s = next;
            continue;
        }
        sim_check(m, t);
        n = d.next_s;
        if (pending && pub_at < n)
            n = pub_at;
        ck_assert_msg(n > t, "at +%lld s: next %lld is not later", (long long)(t - NOW),
                      (long long)n);
        if (n == NEVER || n > end)
            n = end;
        sim_check(m, n - 1);
        t = n;
        same_t = 0;
    }
}

static struct sim *sim_new(void)
{
    struct sim *m = calloc(1, sizeof(*m));

    ck_assert_ptr_nonnull(m);
    m->a = common_arena_create(0);
    common_certs_policy_default(&m->p);
    m->publish_delay = 10;
    return m;
}

static void sim_free(struct sim *m)
{
    common_arena_destroy(m->a);
    free(m);
}

START_TEST(test_simulate_default_lifetimes)
{
    struct sim *m = sim_new();

    sim_run(m, NOW + 25 * YEAR);
    ck_assert_int_eq(m->counts[CREATE], 1);
    ck_assert_int_eq(m->counts[REPAIR], 0);
    /* the CA rotates at 2/3 of 10 years: after 6.7, 13.3 and 20 years */
    ck_assert_int_eq(m->counts[ROTATE], 3);
    ck_assert_int_eq(m->counts[SWITCH], 3);
    ck_assert_int_eq(m->counts[DROP], 3);
    /* the serving certificate renews every 2/3 year (less the rotations' fresh switches) */
    ck_assert_int_ge(m->counts[RENEW], 30);
    ck_assert_int_le(m->counts[RENEW], 38);
    ck_assert_int_gt(m->checks, 100);
    ck_assert_int_eq(m->expiring_seen, 0);
    sim_free(m);
}
END_TEST

START_TEST(test_simulate_short_lifetimes)
{
    struct sim *m = sim_new();

    m->p.ca_lifetime_s = DAY;
    m->p.serving_lifetime_s = 2 * 3600;
    m->p.publish_grace_s = 600;
    m->p.switch_grace_s = 900;
    m->publish_delay = 120;
    sim_run(m, NOW + 10 * DAY);
    ck_assert_int_eq(m->counts[CREATE], 1);
    ck_assert_int_ge(m->counts[ROTATE], 14);
    ck_assert_int_eq(m->counts[SWITCH], m->counts[ROTATE]);
    ck_assert_int_ge(m->counts[DROP], m->counts[ROTATE] - 1);
    ck_assert_int_gt(m->counts[RENEW], 50);
    sim_free(m);
}
END_TEST

/* the extender: kube-scheduler trusts the CA it read at start; only serving certificates
 * rotate, always from that CA, until the CA's end (flagged from its 2/3 on) */
START_TEST(test_simulate_fixed_ca)
{
    struct sim *m = sim_new();

    m->p.rotate_ca = 0;
    m->frozen_clients = 1;
    sim_run(m, NOW + 10 * YEAR - 1);
    ck_assert_int_eq(m->counts[CREATE], 1);
    ck_assert_int_eq(m->counts[ROTATE], 0);
    ck_assert_int_eq(m->counts[SWITCH], 0);
    ck_assert_int_ge(m->counts[RENEW], 14);
    ck_assert_int_eq(m->nbundles, 1);
    ck_assert_int_eq(m->expiring_seen, 1);
    sim_free(m);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* The Secret as JSON */

START_TEST(test_secret_json)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_policy p;
    struct common_certs_secret s0 = {0}, s, back;
    struct common_error e;
    json_t *j, *ann;
    char hex[65];

    common_certs_policy_default(&p);
    ck_assert_int_eq(common_certs_apply(a, CREATE, &s0, &NAMES, &p, NOW, &s, &e), COMMON_OK);
    s.bundle_published_at = NOW + 60;
    j = common_certs_secret_new_json(&s, "trainsched-certs", "kubeflow-system");
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(j, "apiVersion")), "v1");
    ck_assert_str_eq(json_string_value(json_object_get(j, "kind")), "Secret");
    ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "kubernetes.io/tls");
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(j, "metadata"), "namespace")),
        "kubeflow-system");
    ck_assert_int_eq(json_object_size(json_object_get(j, "data")), 5);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "data"), "ca.crt")),
                     common_certs_base64(a, s.ca_crt, strlen(s.ca_crt)));
    ann = json_object_get(json_object_get(j, "metadata"), "annotations");
    ck_assert_str_eq(json_string_value(json_object_get(ann, COMMON_CERTS_ANN_PUBLISHED_AT)),
                     "2023-11-14T22:14:20Z");
    common_certs_bundle_sha256(s.ca_bundle, hex);
    ck_assert_int_eq(strlen(hex), 64);
    ck_assert_str_eq(json_string_value(json_object_get(ann, COMMON_CERTS_ANN_PUBLISHED_SHA256)),
                     hex);
    /* and back */
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_OK);
    ck_assert_str_eq(back.ca_crt, s.ca_crt);
    ck_assert_str_eq(back.ca_key, s.ca_key);
    ck_assert_str_eq(back.tls_crt, s.tls_crt);
    ck_assert_str_eq(back.tls_key, s.tls_key);
    ck_assert_str_eq(back.ca_bundle, s.ca_bundle);
    ck_assert_int_eq(back.bundle_published_at, NOW + 60);
    /* a recorded publication of another bundle does not count */
    json_object_set_new(ann, COMMON_CERTS_ANN_PUBLISHED_SHA256, json_string("00"));
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_OK);
    ck_assert_int_eq(back.bundle_published_at, 0);
    /* errors name the key */
    json_object_set_new(ann, COMMON_CERTS_ANN_PUBLISHED_AT, json_string("yesterday"));
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "is not an RFC 3339 time"));
    json_object_del(ann, COMMON_CERTS_ANN_PUBLISHED_AT);
    json_object_set_new(json_object_get(j, "data"), "tls.crt", json_string("!!!"));
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "data.tls.crt: invalid base64");
    json_object_set_new(json_object_get(j, "data"), "tls.crt", json_string("aGVsbG8="));
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "data.tls.crt: not PEM text");
    json_object_set_new(json_object_get(j, "data"), "tls.crt", json_integer(1));
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "data.tls.crt: must be a base64 string");
    json_object_set_new(j, "data", json_string("x"));
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "data: must be an object");
    /* a Secret with no data at all is an empty one */
    json_object_del(j, "data");
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_OK);
    ck_assert_ptr_null(back.ca_crt);
    json_decref(j);
    /* no publication: no annotations */
    s.bundle_published_at = 0;
    j = common_certs_secret_new_json(&s, "n", "ns");
    ck_assert_ptr_null(json_object_get(json_object_get(j, "metadata"), "annotations"));
    json_decref(j);
    /* A Secret without ca-bundle.crt (made by hand or by a version before the key: its bundle
     * is ca.crt alone, as common_certs_observe reads it) keeps its recorded publication, so the
     * leader records it once and does not rewrite the Secret and log it on every check. */
    s.ca_bundle = NULL;
    s.bundle_published_at = NOW + 60;
    j = common_certs_secret_new_json(&s, "n", "ns");
    ck_assert_ptr_nonnull(j);
    ck_assert_ptr_null(json_object_get(json_object_get(j, "data"), COMMON_CERTS_KEY_BUNDLE));
    ann = json_object_get(json_object_get(j, "metadata"), "annotations");
    common_certs_bundle_sha256(s.ca_crt, hex);
    ck_assert_str_eq(json_string_value(json_object_get(ann, COMMON_CERTS_ANN_PUBLISHED_SHA256)),
                     hex);
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_OK);
    ck_assert_ptr_null(back.ca_bundle);
    ck_assert_int_eq(back.bundle_published_at, NOW + 60);
    /* once a ca-bundle.crt other than ca.crt appears, that record no longer counts */
    json_object_set_new(json_object_get(j, "data"), COMMON_CERTS_KEY_BUNDLE,
                        json_string(common_certs_base64(a, s.tls_crt, strlen(s.tls_crt))));
    ck_assert_int_eq(common_certs_secret_from_json(a, j, &back, &e), COMMON_OK);
    ck_assert_int_eq(back.bundle_published_at, 0);
    json_decref(j);
    common_arena_destroy(a);
}
END_TEST

/* every allocation failure in the JSON helpers gives a clean NULL / COMMON_ENOMEM, no leak */
START_TEST(test_secret_json_alloc_failures)
{
    struct common_arena *a = common_arena_create(0);
    struct common_certs_policy p;
    struct common_certs_secret s0 = {0}, s, back;
    struct common_error e;
    json_t *j;
    unsigned long n;
    int done = 0;

    common_certs_policy_default(&p);
    ck_assert_int_eq(common_certs_apply(a, CREATE, &s0, &NAMES, &p, NOW, &s, &e), COMMON_OK);
    s.bundle_published_at = NOW;
    for (n = 1; !done && n < 500; n++) {
        common_alloc_fail_at(n);
        j = common_certs_secret_new_json(&s, "n", "ns");
        done = !common_alloc_failed();
        common_alloc_fail_at(0);
        ck_assert(done ? j != NULL : j == NULL);
        json_decref(j);
    }
    ck_assert(done);
    j = common_certs_secret_new_json(&s, "n", "ns");
    done = 0;
    for (n = 1; !done && n < 500; n++) {
        struct common_arena *b = common_arena_create(0);
        enum common_rc rc;
        common_alloc_fail_at(n);
        rc = common_certs_secret_from_json(b, j, &back, &e);
        done = !common_alloc_failed();
        common_alloc_fail_at(0);
        ck_assert_int_eq(rc, done ? COMMON_OK : COMMON_ENOMEM);
        common_arena_destroy(b);
    }
    ck_assert(done);
    json_decref(j);
    common_arena_destroy(a);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* The CLI */

struct run {
    int status;
    char *out, *err;
};

static struct run run_certs(int argc, const char **argv)
{
    struct run r;
    size_t no, ne;
    FILE *out = open_memstream(&r.out, &no), *err = open_memstream(&r.err, &ne);

    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(err);
    r.status = cmd_certs(argc, (char **)argv, out, err);
    fclose(out);
    fclose(err);
    return r;
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

/* run cmd_certs with "certs" and the given arguments (a NULL-terminated list) */
static struct run run_v(const char *first, ...)
{
    const char *argv[40] = {"certs"};
    int argc = 1;
    va_list ap;

    va_start(ap, first);
    for (const char *arg = first; arg; arg = va_arg(ap, const char *)) {
        ck_assert_int_lt(argc, 39);
        argv[argc++] = arg;
    }
    va_end(ap);
    argv[argc] = NULL;
    return run_certs(argc, argv);
}

#define RUN(...) run_v(__VA_ARGS__, (const char *)NULL)

static char *tmpdir(void)
{
    char *d = strdup("/tmp/test_certs.XXXXXX");

    ck_assert_ptr_nonnull(d);
    ck_assert_ptr_nonnull(mkdtemp(d));
    return d;
}

static void rmtree(const char *dir)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *slurp(const char *dir, const char *name)
{
    char path[600];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return testutil_read(path);
}

static mode_t mode_of(const char *dir, const char *name)
{
    char path[600];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_mode & 07777;
}

static int have_openssl(void)
{
    return system("openssl version >/dev/null 2>&1") == 0;
}

START_TEST(test_cli_writes_and_verifies)
{
    char *root = tmpdir(), dir[600], cmd[1400];
    struct run r;
    char *ca, *tls, *key;
    struct common_arena *a = common_arena_create(0);
    struct common_certs_info info;
    struct common_certs_pair pair;

    snprintf(dir, sizeof(dir), "%s/new/sub", root); /* created, parents too */
    r = RUN("--service", "trainsched", "--namespace", "kubeflow-system", "--out", dir, "--dns",
            "localhost", "--ip", "127.0.0.1", "--ca-lifetime", "90d", "--lifetime", "720h");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_str_eq(r.err, "");
    ck_assert_int_eq(mode_of(dir, "ca.key"), 0600);
    ck_assert_int_eq(mode_of(dir, "tls.key"), 0600);
    ck_assert_int_eq(mode_of(dir, "ca.crt"), 0644);
    ck_assert_int_eq(mode_of(dir, "tls.crt"), 0644);
    ck_assert_int_eq(mode_of(dir, "."), 0700);
    ca = slurp(dir, "ca.crt");
    tls = slurp(dir, "tls.crt");
    key = slurp(dir, "tls.key");
    pair.cert_pem = tls;
    pair.key_pem = key;
    ck_assert_int_eq(common_certs_pair_check(&pair, 0, "tls", NULL), COMMON_OK);
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(common_certs_verify(tls, ca, all_hosts[i], time(NULL), NULL), COMMON_OK);
    ck_assert_int_eq(common_certs_verify(tls, ca, "localhost", time(NULL), NULL), COMMON_OK);
    ck_assert_int_eq(common_certs_verify(tls, ca, "127.0.0.1", time(NULL), NULL), COMMON_OK);
    ck_assert_int_eq(common_certs_info(a, tls, &info, NULL), COMMON_OK);
    ck_assert_int_eq(info.not_after - info.not_before, 720 * 3600 + SKEW);
    ck_assert_int_eq(common_certs_info(a, ca, &info, NULL), COMMON_OK);
    ck_assert_int_eq(info.not_after - info.not_before, 90 * DAY + SKEW);
    /* the summary: names, and the caBundle that is base64 of ca.crt */
    ck_assert_ptr_nonnull(strstr(r.out, "serving:   CN=trainsched.kubeflow-system.svc (EC P-256)"));
    ck_assert_ptr_nonnull(strstr(r.out, "DNS names: trainsched, trainsched.kubeflow-system, "
                                        "trainsched.kubeflow-system.svc, "
                                        "trainsched.kubeflow-system.svc.cluster.local, localhost"));
    ck_assert_ptr_nonnull(strstr(r.out, "IPs:       127.0.0.1\n"));
    ck_assert_ptr_nonnull(strstr(r.out, common_certs_base64(a, ca, strlen(ca))));
    ck_assert_ptr_nonnull(strstr(r.out, "(new, EC P-256)"));
    /* the openssl command agrees */
    if (have_openssl()) {
        snprintf(cmd, sizeof(cmd),
                 "openssl verify -CAfile '%s/ca.crt' -purpose sslserver -x509_strict "
                 "-verify_hostname trainsched.kubeflow-system.svc '%s/tls.crt' >/dev/null 2>&1",
                 dir, dir);
        ck_assert_int_eq(system(cmd), 0);
        snprintf(cmd, sizeof(cmd),
                 "openssl verify -CAfile '%s/ca.crt' -verify_ip 127.0.0.1 '%s/tls.crt' "
                 ">/dev/null 2>&1",
                 dir, dir);
        ck_assert_int_eq(system(cmd), 0);
        snprintf(cmd, sizeof(cmd),
                 "openssl verify -CAfile '%s/ca.crt' -verify_hostname wrong.example.com "
                 "'%s/tls.crt' >/dev/null 2>&1",
                 dir, dir);
        ck_assert_int_ne(system(cmd), 0);
        snprintf(cmd, sizeof(cmd),
                 "openssl pkey -in '%s/tls.key' -noout -text 2>/dev/null | grep -q 'NIST CURVE: "
                 "P-256'",
                 dir);
        ck_assert_int_eq(system(cmd), 0);
    } else {
        fprintf(stderr, "test_certs: openssl command not installed; its check skipped\n");
    }
    free(ca);
    free(tls);
    free(key);
    run_free(&r);
    common_arena_destroy(a);
    rmtree(root);
    free(root);
}
END_TEST

START_TEST(test_cli_refuses_overwrite)
{
    char *dir = tmpdir();
    struct run r;
    char *before, *after, *ca_before;
    DIR *d;
    struct dirent *ent;
    int files = 0;

    r = RUN("--service", "s", "-n", "ns", "-o", dir);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_free(&r);
    before = slurp(dir, "tls.crt");
    ca_before = slurp(dir, "ca.crt");
    /* again without --force: refused before anything is written */
    r = RUN("--service", "s", "-n", "ns", "-o", dir);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "/ca.crt exists: use --force to overwrite it"));
    ck_assert_str_eq(r.out, "");
    run_free(&r);
    after = slurp(dir, "tls.crt");
    ck_assert_str_eq(before, after);
    free(after);
    /* only the four files, no temporary left behind */
    d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    while ((ent = readdir(d)))
        if (ent->d_name[0] != '.' || strlen(ent->d_name) > 2)
            files++;
    closedir(d);
    ck_assert_int_eq(files, 4);
    /* renew in place with the same CA: ca.* are the same, tls.* exist -> still needs --force */
    {
        char cac[600], cak[600];
        snprintf(cac, sizeof(cac), "%s/ca.crt", dir);
        snprintf(cak, sizeof(cak), "%s/ca.key", dir);
        r = RUN("--service", "s", "-n", "ns", "-o", dir, "--ca-cert", cac, "--ca-key", cak);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "/tls.crt exists"));
        run_free(&r);
        r = RUN("--service", "s", "-n", "ns", "-o", dir, "--ca-cert", cac, "--ca-key", cak,
                "--force");
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_ptr_nonnull(strstr(r.out, "(reused, EC P-256)"));
        run_free(&r);
    }
    after = slurp(dir, "tls.crt");
    ck_assert_str_ne(before, after);
    free(after);
    after = slurp(dir, "ca.crt");
    ck_assert_str_eq(ca_before, after); /* the same CA */
    ck_assert_int_eq(mode_of(dir, "tls.key"), 0600);
    free(after);
    /* --force with a new CA replaces everything */
    r = RUN("--service", "s", "-n", "ns", "-o", dir, "--force");
    ck_assert_int_eq(r.status, 0);
    run_free(&r);
    after = slurp(dir, "ca.crt");
    ck_assert_str_ne(ca_before, after);
    ck_assert_int_eq(mode_of(dir, "ca.key"), 0600);
    free(after);
    free(before);
    free(ca_before);
    rmtree(dir);
    free(dir);
}
END_TEST

/* --ca-cert/--ca-key from another folder: copied unchanged, the serving cert chains to it */
START_TEST(test_cli_reuse_ca)
{
    char *src = tmpdir(), *dst = tmpdir(), cac[600], cak[600];
    struct run r;
    char *ca1, *ca2, *key1, *key2, *tls;

    r = RUN("--service", "s", "-n", "ns", "-o", src);
    ck_assert_int_eq(r.status, 0);
    run_free(&r);
    snprintf(cac, sizeof(cac), "%s/ca.crt", src);
    snprintf(cak, sizeof(cak), "%s/ca.key", src);
    r = RUN("--service", "other", "-n", "ns2", "-o", dst, "--ca-cert", cac, "--ca-key", cak,
            "--lifetime", "1h");
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_free(&r);
    ca1 = slurp(src, "ca.crt");
    ca2 = slurp(dst, "ca.crt");
    key1 = slurp(src, "ca.key");
    key2 = slurp(dst, "ca.key");
    tls = slurp(dst, "tls.crt");
    ck_assert_str_eq(ca1, ca2);
    ck_assert_str_eq(key1, key2);
    ck_assert_int_eq(mode_of(dst, "ca.key"), 0600);
    ck_assert_int_eq(common_certs_verify(tls, ca1, "other.ns2.svc", time(NULL), NULL), COMMON_OK);
    ck_assert_int_eq(common_certs_verify(tls, ca1, "other.ns2.svc", time(NULL) + 3601, NULL),
                     COMMON_EINVAL);
    /* the CA key must be the CA's */
    snprintf(cak, sizeof(cak), "%s/tls.key", src);
    r = RUN("--service", "s", "-n", "ns", "-o", dst, "--ca-cert", cac, "--ca-key", cak, "--force");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(
        strstr(r.err, "--ca-cert/--ca-key: the private key does not belong to the certificate"));
    run_free(&r);
    /* a serving certificate is not a CA */
    snprintf(cac, sizeof(cac), "%s/tls.crt", src);
    r = RUN("--service", "s", "-n", "ns", "-o", dst, "--ca-cert", cac, "--ca-key", cak, "--force");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "the certificate is not a CA"));
    run_free(&r);
    free(ca1);
    free(ca2);
    free(key1);
    free(key2);
    free(tls);
    rmtree(src);
    rmtree(dst);
    free(src);
    free(dst);
}
END_TEST

struct bad_flag_row {
    const char *args[16];
    const char *want; /* piece of stderr */
};

static const struct bad_flag_row bad_flag_rows[] = {
    {{"--bogus", NULL}, "unknown option --bogus"},
    {{"--service", "s", "-n", "ns", "-o", "/tmp/x", "--bogus=1", NULL}, "unknown option --bogus"},
    {{"-n", "ns", "-o", "/tmp/x", NULL}, "--service is required"},
    {{"--service", "s", "-o", "/tmp/x", NULL}, "--namespace is required"},
    {{"--service", "s", "-n", "ns", NULL}, "--out is required"},
    {{"--service", NULL}, "option --service needs a value"},
    {{"--service", "s", "-n", "ns", "-o", "/tmp/x", "--lifetime", "1y", NULL},
     "--lifetime: duration \"1y\": unknown unit \"y\""},
    {{"--service", "s", "-n", "ns", "-o", "/tmp/x", "--ca-lifetime", "10", NULL},
     "--ca-lifetime: duration \"10\": missing unit"},
    {{"--service", "s", "-n", "ns", "-o", "/tmp/x", "--ip", "localhost", NULL},
     "IP address \"localhost\": not an IPv4 or IPv6 address"},
    {{"--service", "s", "-n", "ns", "-o", "/tmp/x", "--dns", "a_b", NULL}, "DNS name \"a_b\""},
    {{"--service", "S", "-n", "ns", "-o", "/tmp/x", NULL}, "service \"S\""},
    {{"--service", "s", "-n", "ns", "-o", "/tmp/x", "--ca-cert", "/tmp/ca.crt", NULL},
     "--ca-cert needs --ca-key"},
    {{"--service", "s", "-n", "ns", "-o", "/tmp/x", "--ca-cert", "/nonexistent/ca.crt", "--ca-key",
      "/nonexistent/ca.key", NULL},
     "--ca-cert /nonexistent/ca.crt: No such file or directory"},
    {{"--service", "s", "-n", "ns", "-o", "/tmp/x", "--ca-cert", "/a", "--ca-key", "/b",
      "--ca-lifetime", "1d", NULL},
     "--ca-lifetime is for a new CA"},
    {{"--service", "s", "-n", "ns", "-o", "/tmp/x", "extra", NULL},
     "unexpected argument \"extra\""},
};

START_TEST(test_cli_bad_flags)
{
    const struct bad_flag_row *row = &bad_flag_rows[_i];
    const char *argv[20] = {"certs"};
    int argc = 1;
    struct run r;

    for (int i = 0; row->args[i]; i++)
        argv[argc++] = row->args[i];
    argv[argc] = NULL;
    r = run_certs(argc, argv);
    ck_assert_msg(r.status == 2, "%s: exit %d", row->want, r.status);
    ck_assert_msg(strstr(r.err, row->want), "stderr \"%s\" lacks \"%s\"", r.err, row->want);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
    ck_assert_int_ne(access("/tmp/x/ca.crt", F_OK), 0); /* nothing written */
}
END_TEST

START_TEST(test_cli_help)
{
    struct run r = RUN("--help");

    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "Usage: trainsched certs --service NAME"));
    ck_assert_str_eq(r.err, "");
    run_free(&r);
}
END_TEST

/* `--out` that is a file: an I/O failure, exit 1 */
START_TEST(test_cli_out_is_a_file)
{
    char *dir = tmpdir(), file[600];
    FILE *f;
    struct run r;

    snprintf(file, sizeof(file), "%s/plain", dir);
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    r = RUN("--service", "s", "-n", "ns", "-o", file);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "Not a directory"));
    run_free(&r);
    rmtree(dir);
    free(dir);
}
END_TEST

/* the real binary, once the lead has registered the subcommand in cmd/trainsched.c */
START_TEST(test_binary)
{
    char *dir = tmpdir(), cmd[1200];
    int st;

    snprintf(cmd, sizeof(cmd), "'%s' help 2>/dev/null | grep -q '^  certs '", TS_BINARY);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_certs: %s has no certs subcommand yet; binary test skipped\n",
                TS_BINARY);
        rmtree(dir);
        free(dir);
        return;
    }
    snprintf(cmd, sizeof(cmd),
             "'%s' certs --service s --namespace ns --out '%s' --ip 127.0.0.1 >/dev/null",
             TS_BINARY, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(mode_of(dir, "tls.key"), 0600);
    snprintf(cmd, sizeof(cmd), "'%s' certs --service s --namespace ns --out '%s' 2>/dev/null",
             TS_BINARY, dir);
    st = system(cmd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 2);
    snprintf(cmd, sizeof(cmd), "'%s' certs --nope 2>&1 | grep -q 'unknown option --nope'",
             TS_BINARY);
    ck_assert_int_eq(system(cmd), 0);
    rmtree(dir);
    free(dir);
}
END_TEST

static Suite *certs_suite(void)
{
    Suite *s = suite_create("certs");
    TCase *make = tcase_create("make");
    TCase *verify = tcase_create("verify");
    TCase *decide = tcase_create("decide");
    TCase *sim = tcase_create("simulate");
    TCase *cli = tcase_create("cli");

    tcase_add_test(make, test_ca_fields);
    tcase_add_test(make, test_serving_fields);
    tcase_add_test(make, test_serving_capped_at_ca_end);
    tcase_add_test(make, test_long_names);
    tcase_add_loop_test(make, test_bad_make, 0,
                        (int)(sizeof(bad_make_rows) / sizeof(bad_make_rows[0])));
    tcase_add_test(make, test_bad_ca);
    tcase_add_test(make, test_foreign_rsa_ca);
    tcase_add_test(make, test_pem_round_trip);
    tcase_add_test(make, test_base64);
    tcase_add_loop_test(make, test_duration, 0,
                        (int)(sizeof(duration_rows) / sizeof(duration_rows[0])));
    tcase_add_test(make, test_secret_json);
    tcase_add_test(make, test_secret_json_alloc_failures);
    /* key generation is CPU work that a busy machine slows down */
    tcase_set_timeout(make, 120);
    suite_add_tcase(s, make);
    tcase_add_test(verify, test_verify_every_san);
    tcase_add_loop_test(verify, test_verify_failures, 0,
                        (int)(sizeof(verify_rows) / sizeof(verify_rows[0])));
    tcase_set_timeout(verify, 120);
    suite_add_tcase(s, verify);
    tcase_add_test(decide, test_renew_at);
    tcase_add_test(decide, test_policy_check);
    tcase_add_loop_test(decide, test_decide, 0,
                        (int)(sizeof(decide_rows) / sizeof(decide_rows[0])));
    tcase_add_test(decide, test_action_names);
    tcase_add_test(decide, test_observe);
    tcase_add_test(decide, test_apply_each_action);
    tcase_set_timeout(decide, 120);
    suite_add_tcase(s, decide);
    tcase_set_timeout(sim, 300);
    tcase_add_test(sim, test_simulate_default_lifetimes);
    tcase_add_test(sim, test_simulate_short_lifetimes);
    tcase_add_test(sim, test_simulate_fixed_ca);
    suite_add_tcase(s, sim);
    tcase_set_timeout(cli, 60);
    tcase_add_test(cli, test_cli_writes_and_verifies);
    tcase_add_test(cli, test_cli_refuses_overwrite);
    tcase_add_test(cli, test_cli_reuse_ca);
    tcase_add_loop_test(cli, test_cli_bad_flags, 0,
                        (int)(sizeof(bad_flag_rows) / sizeof(bad_flag_rows[0])));
    tcase_add_test(cli, test_cli_help);
    tcase_add_test(cli, test_cli_out_is_a_file);
    tcase_add_test(cli, test_binary);
    suite_add_tcase(s, cli);
    return s;
}

int main(void)
{
    return testutil_run_suite(certs_suite());
}
