/*
 * common/certs.h - the webhook and extender certificates: a CA, serving certificates signed by
 * it, and the phased rotation that keeps every client working (OpenSSL 3, ECDSA P-256).
 *
 * What this module owns: making certificates (a self-signed CA, a serving certificate for a
 * Service's DNS names), reading them back (times, names, issuer), verifying a chain the way a
 * TLS client does, the rotation decision, and the layout of the Secret that holds it all. No
 * Kubernetes I/O and no clock: every function that depends on time takes `now` in seconds since
 * the epoch (UTC), so the decision core is a pure function and tests walk years in
 * microseconds. The glue (serve's leader) reads the Secret, calls common_certs_observe,
 * common_certs_decide and common_certs_apply, writes the Secret back and publishes
 * ca-bundle.crt into the caBundle of every webhook configuration. docs/certs.md explains the
 * protocol and why it never breaks a client.
 *
 * Memory: every string handed out (PEM text, names) is allocated in the caller's arena. OpenSSL
 * objects never leave this module except through common_certs_x509_from_pem and
 * common_certs_key_from_pem, whose results the caller frees with X509_free / EVP_PKEY_free.
 *
 * PEM forms: certificates as "CERTIFICATE" blocks, private keys as PKCS#8 "PRIVATE KEY" blocks
 * (what Go's crypto/tls, GnuTLS and OpenSSL all read). A bundle is several CERTIFICATE blocks
 * concatenated, as Kubernetes' caBundle and kube-scheduler's caFile take them.
 */
#ifndef COMMON_CERTS_H
#define COMMON_CERTS_H

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"

/* Lifetimes, in seconds. A year is 365 days here. */
#define COMMON_CERTS_DAY_S ((int64_t)86400)
#define COMMON_CERTS_CA_LIFETIME_DEFAULT (3650 * COMMON_CERTS_DAY_S) /* 10 years */
#define COMMON_CERTS_SERVING_LIFETIME_DEFAULT (365 * COMMON_CERTS_DAY_S)
#define COMMON_CERTS_LIFETIME_MAX (100 * 365 * COMMON_CERTS_DAY_S)
/* notBefore is set this far in the past, so a peer whose clock is behind accepts a new cert. */
#define COMMON_CERTS_SKEW_S ((int64_t)300)
/* Default wait for a new caBundle to reach every API server, and for every replica to load a
 * new serving certificate, before the next rotation phase. */
#define COMMON_CERTS_GRACE_DEFAULT ((int64_t)300)

/* Secret keys (the Secret has type kubernetes.io/tls) and the annotations on it. */
#define COMMON_CERTS_KEY_CA_CRT "ca.crt"
#define COMMON_CERTS_KEY_CA_KEY "ca.key"
#define COMMON_CERTS_KEY_TLS_CRT "tls.crt"
#define COMMON_CERTS_KEY_TLS_KEY "tls.key"
#define COMMON_CERTS_KEY_BUNDLE "ca-bundle.crt"
/* RFC 3339 time at which every caBundle was seen to equal ca-bundle.crt ... */
#define COMMON_CERTS_ANN_PUBLISHED_AT "trainsched.io/ca-bundle-published-at"
/* ... and the SHA-256 (hex) of the ca-bundle.crt that was seen, so a later bundle is not
 * mistaken for a published one. */
#define COMMON_CERTS_ANN_PUBLISHED_SHA256 "trainsched.io/ca-bundle-sha256"

/* A certificate and its private key, both PEM, NUL-terminated, in an arena. */
struct common_certs_pair {
    char *cert_pem;
    char *key_pem;
};

/*
 * The names a serving certificate is for. service and namespace are required DNS-1123 labels;
 * the certificate gets the DNS names "<service>", "<service>.<namespace>",
 * "<service>.<namespace>.svc" and "<service>.<namespace>.svc.cluster.local", then dns[] (DNS-1123
 * subdomains, optionally "*."-prefixed) and ips[] (IPv4 or IPv6 literals), in that order.
 */
struct common_certs_names {
    const char *service;
    const char *namespace;
    const char *const *dns;
    size_t ndns;
    const char *const *ips;
    size_t nips;
};

/*
 * common_certs_make_ca - a new self-signed CA: ECDSA P-256 key, X.509 v3, random 128-bit serial,
 * subject and issuer "CN=<cn>", notBefore = now - COMMON_CERTS_SKEW_S, notAfter = now +
 * lifetime_s, extensions basicConstraints "critical,CA:TRUE", keyUsage "critical,keyCertSign,
 * cRLSign" and subjectKeyIdentifier (hash), signed with ECDSA-SHA256. cn: 1..64 bytes (the X.520
 * bound); lifetime_s: 1..COMMON_CERTS_LIFETIME_MAX. Writes out (both PEMs in arena a).
 * Returns COMMON_OK, COMMON_EINVAL (bad cn or lifetime; message names it), COMMON_ENOMEM, or
 * COMMON_EIO when OpenSSL fails (message has OpenSSL's reason).
 */
enum common_rc common_certs_make_ca(struct common_arena *a, const char *cn, int64_t now,
                                    int64_t lifetime_s, struct common_certs_pair *out,
                                    struct common_error *err);

/*
 * common_certs_make_serving - a new serving certificate signed by ca (a pair as make_ca writes,
 * or any CA certificate with its EC or RSA key): ECDSA P-256 key, random 128-bit serial, subject
 * "CN=<service>.<namespace>.svc" (or "CN=<service>" when that is over 64 bytes), issuer = ca's
 * subject, notBefore = now - COMMON_CERTS_SKEW_S, notAfter = min(now + lifetime_s, ca's
 * notAfter) (a certificate never outlives its CA), extensions keyUsage "critical,
 * digitalSignature", extendedKeyUsage serverAuth, basicConstraints CA:FALSE, subjectAltName
 * (names, see struct common_certs_names), subjectKeyIdentifier and authorityKeyIdentifier
 * (keyid of ca; issuer name and serial for a CA without subjectKeyIdentifier). Returns COMMON_OK;
 * COMMON_EINVAL when a name is invalid (the message names it and the rule), lifetime_s is out
 * of 1..COMMON_CERTS_LIFETIME_MAX, the CA does not parse, its key does not match it, it is not a
 * CA, or it has expired at now; COMMON_ENOMEM; COMMON_EIO.
 */
enum common_rc common_certs_make_serving(struct common_arena *a, const struct common_certs_pair *ca,
                                         const struct common_certs_names *names, int64_t now,
                                         int64_t lifetime_s, struct common_certs_pair *out,
                                         struct common_error *err);

/* What common_certs_info reads from one certificate. Strings in the arena. */
struct common_certs_info {
    int64_t not_before; /* seconds since the epoch */
    int64_t not_after;
    int is_ca;     /* basicConstraints CA:TRUE */
    char *subject; /* RFC 2253 one-line form, "CN=svc.ns.svc" */
    char *issuer;  /* same form */
    char *serial;  /* upper-case hex */
    char *dns;     /* the DNS subjectAltNames, ", "-separated ("" when none) */
    char *ips;     /* the IP subjectAltNames, ", "-separated ("" when none) */
    char *key;     /* "EC P-256", "EC <curve>", "RSA <bits>" or the type's name */
};

/*
 * common_certs_info - read the first certificate of pem (PEM text, NUL-terminated). Returns
 * COMMON_OK, COMMON_EINVAL (no certificate in pem, or one OpenSSL cannot parse; the message
 * says which), COMMON_ENOMEM.
 */
enum common_rc common_certs_info(struct common_arena *a, const char *pem,
                                 struct common_certs_info *out, struct common_error *err);

/*
 * common_certs_verify - verify cert_pem (a serving certificate; its first CERTIFICATE block)
 * the way a TLS client that trusts bundle_pem (one or more CA certificates concatenated) does
 * at time now: the chain to one of the bundle's CAs (X509_verify_cert, without OpenSSL's
 * X509_STRICT extras, which Go's crypto/x509 does not ask for either), validity periods
 * ([notBefore, notAfter): OpenSSL counts the second notAfter as expired), purpose sslserver,
 * and the name host: an IPv4/IPv6 literal is matched against IP SANs,
 * anything else against DNS SANs (X509_VERIFY_PARAM_set1_host, no partial wildcards); host
 * NULL skips the name check. Returns COMMON_OK, COMMON_EINVAL when the certificate is not
 * trusted (the message has OpenSSL's verify error: "certificate has expired", "hostname
 * mismatch", "unable to get local issuer certificate", ...) or the input does not parse,
 * COMMON_ENOMEM.
 */
enum common_rc common_certs_verify(const char *cert_pem, const char *bundle_pem, const char *host,
                                   int64_t now, struct common_error *err);

/*
 * common_certs_x509_from_pem / common_certs_key_from_pem - decode the first CERTIFICATE (or
 * private key: PKCS#8, SEC 1 "EC PRIVATE KEY" or PKCS#1, unencrypted) of a PEM string. Return a
 * new object the caller frees (X509_free / EVP_PKEY_free), or NULL with COMMON_EINVAL (the
 * message names what was wrong) in err. what names the input in messages ("ca.crt").
 */
X509 *common_certs_x509_from_pem(const char *pem, const char *what, struct common_error *err);
EVP_PKEY *common_certs_key_from_pem(const char *pem, const char *what, struct common_error *err);

/*
 * common_certs_x509_to_pem / common_certs_key_to_pem - encode as PEM ("CERTIFICATE", or
 * PKCS#8 "PRIVATE KEY") in arena a. NULL when out of memory or OpenSSL fails.
 */
char *common_certs_x509_to_pem(struct common_arena *a, X509 *x);
char *common_certs_key_to_pem(struct common_arena *a, EVP_PKEY *key);

/*
 * common_certs_ca_file_read - the CA certificates of the PEM file path, for handing to others
 * (the TrainJob status CA that trainer pods trust): every "CERTIFICATE" block decoded with
 * OpenSSL and written back as PEM into *pem (common_malloc'd, caller frees); every other block
 * (a PRIVATE KEY kept beside the certificate) is left out. Returns COMMON_OK; the
 * common_buf_read_file codes when the file cannot be read; COMMON_EINVAL when a block is not
 * valid PEM (bad base64, no END line) or a CERTIFICATE block is not an X.509 certificate, or the
 * file has no certificate (every message names path); COMMON_ENOMEM.
 */
enum common_rc common_certs_ca_file_read(const char *path, char **pem, struct common_error *err);

/*
 * common_certs_pair_check - the pair decodes, the key belongs to the certificate, and, when
 * want_ca, the certificate is a CA (basicConstraints CA:TRUE). what names the pair in messages.
 * Returns COMMON_OK or COMMON_EINVAL (message says which check failed).
 */
enum common_rc common_certs_pair_check(const struct common_certs_pair *p, int want_ca,
                                       const char *what, struct common_error *err);

/*
 * common_certs_base64 - standard base64 (with padding, no newlines) of data[0..n), in arena a:
 * what clientConfig.caBundle and Secret data hold. NULL when out of memory.
 */
char *common_certs_base64(struct common_arena *a, const void *data, size_t n);

/*
 * common_certs_parse_duration - s as a duration in seconds: one or more <digits><unit> with unit
 * s, m, h or d ("120s", "90d", "8760h", "1h30m"). Result 1..COMMON_CERTS_LIFETIME_MAX.
 * Returns COMMON_OK or COMMON_EINVAL (message quotes s and says what is wrong).
 */
enum common_rc common_certs_parse_duration(const char *s, int64_t *out_s, struct common_error *err);

/* common_certs_format_time - t (seconds since the epoch) as "2006-01-02T15:04:05Z" into buf
 * (at least 21 bytes). Returns 0, or -1 when buf is too small or the year is not 0..9999. */
int common_certs_format_time(int64_t t, char *buf, size_t size);

/* ---------------------------------------------------------------------------------------- */
/* Rotation: policy, what the Secret says (the view), the decision, and applying it. */

struct common_certs_policy {
    int64_t ca_lifetime_s;      /* lifetime of a new CA; default 10 years */
    int64_t serving_lifetime_s; /* lifetime of a new serving certificate; default 1 year */
    int renew_num, renew_den;   /* renew at renew_num/renew_den of a certificate's life; 2/3 */
    int64_t publish_grace_s;    /* a new caBundle must have been on every webhook
                                 * configuration this long before serving switches to the
                                 * new CA (API servers' caches); default 300 */
    int64_t switch_grace_s;     /* a serving certificate from the new CA must be this old
                                 * before the old CA leaves the bundle (every replica has
                                 * loaded it); default 300 */
    int rotate_ca;              /* 1: rotate the CA at its renewal point (webhooks); 0: keep
                                 * it (a client that reads the CA only at start, as
                                 * kube-scheduler does for an extender): only serving
                                 * certificates rotate; default 1 */
};

/* common_certs_policy_default - fill p with the defaults above. */
void common_certs_policy_default(struct common_certs_policy *p);

/*
 * common_certs_policy_check - lifetimes in 1..COMMON_CERTS_LIFETIME_MAX, 0 < renew_num <
 * renew_den <= 1000, graces in 0..lifetime, and a fresh serving certificate not due for
 * renewal at birth (its renewal point, counted from notBefore = now - COMMON_CERTS_SKEW_S, lies
 * after now). Returns COMMON_OK or COMMON_EINVAL naming the field.
 */
enum common_rc common_certs_policy_check(const struct common_certs_policy *p,
                                         struct common_error *err);

/* A validity period, seconds since the epoch. */
struct common_certs_span {
    int64_t not_before;
    int64_t not_after;
};

/*
 * common_certs_renew_at - the renewal point of span under p: not_before + floor((not_after -
 * not_before) * renew_num / renew_den), computed without overflow. A certificate is due at
 * now >= the result (so with 2/3 and a span 0..3000 it is due from 2000 on, not at 1999).
 */
int64_t common_certs_renew_at(const struct common_certs_span *span,
                              const struct common_certs_policy *p);

/* Who signed the serving certificate (tls.crt). */
enum common_certs_issuer {
    COMMON_CERTS_ISSUER_NONE = 0, /* no tls.crt, it does not parse, or tls.key is not its key */
    COMMON_CERTS_ISSUER_CA,       /* ca.crt (the CA that signs new certificates) */
    COMMON_CERTS_ISSUER_OLD_CA,   /* another CA of ca-bundle.crt (rotation under way) */
    COMMON_CERTS_ISSUER_OTHER     /* none of the bundle's CAs */
};

/*
 * The state of the certificates, as common_certs_observe reads it from a Secret (or a test
 * writes it). Every time in seconds since the epoch.
 */
struct common_certs_view {
    int ca_ok;                   /* ca.crt and ca.key present, parse, match, and CA:TRUE */
    struct common_certs_span ca; /* ca.crt's validity (when ca_ok) */
    int ca_in_bundle;            /* ca.crt is one of ca-bundle.crt's CAs (a Secret without
                                  * ca-bundle.crt counts as bundle = {ca.crt}) */
    int old_cas;                 /* how many of the bundle's CAs are not ca.crt (all of them
                                  * when !ca_ok) */
    enum common_certs_issuer serving_issuer;
    struct common_certs_span serving;        /* tls.crt (when issuer is not NONE) */
    struct common_certs_span serving_signer; /* the CA that signed tls.crt (CA or OLD_CA) */
    int serving_names_ok;        /* tls.crt has every DNS name and IP the names ask for */
    int64_t bundle_published_at; /* when every caBundle was first seen equal to the current
                                  * ca-bundle.crt; 0 = not (yet) seen */
};

enum common_certs_action {
    COMMON_CERTS_NOTHING = 0,    /* wait until decision.next_s (or a change of the inputs) */
    COMMON_CERTS_CREATE,         /* no usable CA: new CA, new serving cert, bundle = {CA} */
    COMMON_CERTS_REPAIR_BUNDLE,  /* ca.crt is missing from the bundle: bundle += ca.crt */
    COMMON_CERTS_RENEW_SERVING,  /* new serving cert from ca.crt (same CA) */
    COMMON_CERTS_ROTATE_CA_ADD,  /* new CA becomes ca.crt; bundle = old CAs + new; serving kept */
    COMMON_CERTS_SWITCH_SERVING, /* the bundle with both CAs is published: serving from new CA */
    COMMON_CERTS_DROP_OLD_CA     /* every replica serves the new CA's cert: bundle = {ca.crt} */
};

struct common_certs_decision {
    enum common_certs_action action;
    int64_t next_s;     /* an action: now; NOTHING: the earliest time the decision can change
                         * with the same view (INT64_MAX: never; the glue also decides again on
                         * any change of the Secret or of the webhook configurations) */
    const char *reason; /* a static sentence for logs and events */
    int ca_expiring;    /* rotate_ca is 0 and ca.crt is past its renewal point: an admin must
                         * replace the CA (and restart the clients that read it at start) */
};

/*
 * common_certs_decide - the next step of the phased rotation; pure (no I/O, no clock, no
 * OpenSSL). "usable serving" below means: issuer CA or OLD_CA, now < serving.not_after and
 * now < serving_signer.not_after. First match wins:
 *   1. no usable CA (!ca_ok or now >= ca.not_after): ROTATE_CA_ADD when p->rotate_ca and a
 *      usable serving cert from an old bundle CA exists (clients keep working while a new CA is
 *      phased in), else CREATE.
 *   2. !ca_in_bundle: REPAIR_BUNDLE.
 *   3. old_cas > 0 (rotation under way):
 *      a. serving from ca.crt: RENEW_SERVING if it has expired, its names are wrong or it is due
 *         (renewal point, and a renewal would lengthen it); else NOTHING until serving.not_before +
 *         COMMON_CERTS_SKEW_S + switch_grace_s; then DROP_OLD_CA.
 *      b. serving not usable: SWITCH_SERVING at once (there is nothing left to break).
 *      c. otherwise NOTHING until bundle_published_at != 0 and now >= bundle_published_at +
 *         publish_grace_s; then SWITCH_SERVING.
 *   4. bundle = {ca.crt}:
 *      a. serving not from ca.crt, expired, or with wrong names: RENEW_SERVING.
 *      b. p->rotate_ca and now >= renew_at(ca): ROTATE_CA_ADD.
 *      c. now >= renew_at(serving) and serving.not_after < ca.not_after: RENEW_SERVING.
 *      d. NOTHING.
 * Why no client ever sees an untrusted certificate (docs/certs.md has the long form): a serving
 * certificate is only ever issued by ca.crt, and ca.crt is in the bundle before anything is
 * issued from it (CREATE and REPAIR_BUNDLE put it there; in the steady state it is the whole
 * bundle). ROTATE_CA_ADD only adds trust and keeps the served certificate. SWITCH_SERVING waits
 * until every caBundle has held the bundle with both CAs for publish_grace_s, so every API
 * server trusts the new CA. DROP_OLD_CA waits until the new CA's certificate is switch_grace_s
 * old, so no replica still serves one from the old CA. The only exceptions are repairs of a
 * state in which clients already fail (no CA, no valid serving certificate).
 * Writes d (never fails).
 */
void common_certs_decide(const struct common_certs_view *v, const struct common_certs_policy *p,
                         int64_t now, struct common_certs_decision *d);

/* common_certs_action_name - "nothing", "create", "repair-bundle", "renew-serving",
 * "rotate-ca-add", "switch-serving", "drop-old-ca". */
const char *common_certs_action_name(enum common_certs_action a);

/* The Secret's contents: PEM strings (NULL when the key is absent), in an arena. */
struct common_certs_secret {
    char *ca_crt;
    char *ca_key;
    char *tls_crt;
    char *tls_key;
    char *ca_bundle;
    int64_t bundle_published_at; /* 0 = the current ca_bundle has not been seen published */
};

/*
 * common_certs_observe - read s into v (see struct common_certs_view): parse every PEM, check
 * the keys match their certificates, find which bundle CA signed tls.crt (issuer name,
 * authority key id and signature), and check tls.crt names every name of names (names NULL:
 * serving_names_ok = 1). Unusable parts are reported in v, not as errors (an empty Secret gives
 * ca_ok = 0, serving_issuer NONE). Returns COMMON_OK or COMMON_ENOMEM.
 */
enum common_rc common_certs_observe(const struct common_certs_secret *s,
                                    const struct common_certs_names *names,
                                    struct common_certs_view *v, struct common_error *err);

/*
 * common_certs_apply - carry out action on in, writing the new contents to out (out may be in;
 * unchanged strings are shared, new ones allocated in a):
 *   CREATE:         new CA "trainsched-ca@<now>" (p->ca_lifetime_s), serving, bundle = {CA}
 *   REPAIR_BUNDLE:  bundle = bundle's CAs + ca.crt
 *   RENEW_SERVING, SWITCH_SERVING: serving from ca.crt (p->serving_lifetime_s, names)
 *   ROTATE_CA_ADD:  new CA; bundle = the bundle's CAs (or the old ca.crt when there is no
 *                   bundle) + the new CA; tls.crt/tls.key kept
 *   DROP_OLD_CA:    bundle = {ca.crt}
 *   NOTHING:        out = in
 * Whenever ca_bundle changes, bundle_published_at becomes 0 (the glue sets it again when it has
 * seen the new bundle on every webhook configuration). Returns COMMON_OK, COMMON_EINVAL (names
 * invalid, or the action needs a CA the Secret does not have), COMMON_ENOMEM, COMMON_EIO.
 */
enum common_rc common_certs_apply(struct common_arena *a, enum common_certs_action action,
                                  const struct common_certs_secret *in,
                                  const struct common_certs_names *names,
                                  const struct common_certs_policy *p, int64_t now,
                                  struct common_certs_secret *out, struct common_error *err);

/*
 * common_certs_bundle_sha256 - lower-case hex SHA-256 of the bundle's bytes into hex (at least
 * 65 bytes). What COMMON_CERTS_ANN_PUBLISHED_SHA256 holds.
 */
void common_certs_bundle_sha256(const char *bundle, char hex[65]);

/*
 * common_certs_secret_from_json - decode a v1 Secret (JSON as the API server returns it):
 * data["ca.crt"], ["ca.key"], ["tls.crt"], ["tls.key"], ["ca-bundle.crt"] (base64; absent keys
 * give NULL), and bundle_published_at from the two annotations, counted only when the recorded
 * SHA-256 is that of the current bundle: ca-bundle.crt, or ca.crt when the Secret has no
 * ca-bundle.crt (else 0). Strings are copied into arena a.
 * Returns COMMON_OK; COMMON_EINVAL when secret is not an object, data is not an object, a
 * value is not a base64 string or a PEM text (message names "data.<key>"), or the time
 * annotation is not RFC 3339; COMMON_ETOOBIG when a value's base64 is over 2 MiB (a Secret
 * holds at most 1 MiB); COMMON_ENOMEM.
 */
enum common_rc common_certs_secret_from_json(struct common_arena *a, const json_t *secret,
                                             struct common_certs_secret *out,
                                             struct common_error *err);

/*
 * common_certs_secret_new_json - a new reference to a v1 Secret object: apiVersion v1, kind
 * Secret, metadata {name, namespace, annotations (the two published annotations when
 * s->bundle_published_at != 0; the SHA-256 is of ca_bundle, or of ca_crt when ca_bundle is NULL)},
 * type kubernetes.io/tls, data (base64 of every non-NULL PEM of s). The glue adds resourceVersion /
 * labels as it needs. NULL when out of memory.
 */
json_t *common_certs_secret_new_json(const struct common_certs_secret *s, const char *name,
                                     const char *namespace);

#endif
