/*
 * common/kubeconfig.h - where the API server is and how to authenticate to it.
 *
 * Two sources, as client-go reads them: a kubeconfig file (clientcmd's v1 Config: clusters,
 * users, contexts, current-context) and the in-cluster service account (the token file, the CA
 * file and KUBERNETES_SERVICE_HOST/_PORT). The result is a plain struct of strings that the
 * Kubernetes client (common/kube.h) turns into TLS and auth settings. Inline data
 * (certificate-authority-data, client-certificate-data, client-key-data) is base64-decoded
 * into memory; file paths are kept as paths, relative ones resolved against the kubeconfig's
 * folder. A bearer token file is kept as a path too, because it rotates: the client re-reads
 * it (see kube.h).
 */
#ifndef COMMON_KUBECONFIG_H
#define COMMON_KUBECONFIG_H

#include <stddef.h>

#include "common/error.h"

struct common_kubeconfig {
    char *server;          /* "https://host:port", no trailing slash */
    char *tls_server_name; /* SNI / verification name override, or NULL */
    int insecure;          /* insecure-skip-tls-verify */
    char *ca_file;         /* PEM file, or NULL */
    char *ca_data;         /* PEM bytes (decoded), or NULL */
    size_t ca_data_len;
    char *cert_file, *key_file; /* client certificate and key files, or NULL */
    char *cert_data, *key_data; /* decoded PEM bytes, or NULL */
    size_t cert_data_len, key_data_len;
    char *token;      /* bearer token, or NULL */
    char *token_file; /* file holding the bearer token (re-read on rotation), or NULL */
    char *namespace;  /* the context's namespace, or NULL */
    char *context;    /* the context used (NULL for in-cluster) */
};

/*
 * common_kubeconfig_load - read kubeconfig path and pick context (NULL or "" = current-context).
 * path NULL means $KUBECONFIG (first non-empty entry of a ':' list; client-go would merge them
 * all), else ~/.kube/config. Only the chosen context, its cluster and its user are checked, so
 * exec users of other contexts do not matter. Fields: cluster server (required; a bare
 * host:port gets "https://"; trailing '/' dropped), tls-server-name, insecure-skip-tls-verify,
 * certificate-authority(-data); user client-certificate(-data), client-key(-data), token,
 * tokenFile; context namespace. Files named must exist. Strings read as sigs.k8s.io/yaml reads
 * them (a YAML 1.1 integer 0400 is "256"); absent, null and "" mean not set. Base64 is Go's
 * StdEncoding: padding required, '\r' and '\n' skipped.
 * Returns COMMON_OK; COMMON_ENOTFOUND (no kubeconfig; no such context/cluster/user, or a named
 * file is missing; message names which); COMMON_EINVAL (malformed YAML, more than one
 * document, wrong types, duplicate names, bad base64, a file and inline data both given, a
 * certificate without a key, insecure-skip-tls-verify with a CA, and what we refuse rather than
 * ignore: exec and auth-provider plugins, username/password, impersonation (as, as-*),
 * proxy-url). Messages are "file:line:col: field: what", naming the field, e.g.
 * "users[0].user.exec". Also COMMON_EIO (a file cannot be read) and COMMON_ENOMEM.
 * Free with common_kubeconfig_free (safe on a half-filled struct); on failure out is zeroed.
 */
enum common_rc common_kubeconfig_load(const char *path, const char *context,
                                      struct common_kubeconfig *out, struct common_error *err);

/*
 * common_kubeconfig_in_cluster - the service-account config: server
 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 hosts bracketed), token_file
 * /var/run/secrets/kubernetes.io/serviceaccount/token, ca_file .../ca.crt (NULL when missing,
 * as client-go goes on without it), namespace the trimmed contents of .../namespace (NULL when
 * missing or blank). root overrides the folder (for tests; NULL = the real one). Returns
 * COMMON_OK, COMMON_ENOTFOUND (not running in a pod: the variables or token file are missing,
 * the message says which), COMMON_EINVAL (the port is not 1..65535), COMMON_EIO (a file cannot
 * be read), COMMON_ENOMEM. On failure out is zeroed.
 */
enum common_rc common_kubeconfig_in_cluster(const char *root, struct common_kubeconfig *out,
                                            struct common_error *err);

/* common_kubeconfig_free - release every string (key data and token are wiped first); the
 * struct is zeroed. Safe on a zeroed struct and on NULL. */
void common_kubeconfig_free(struct common_kubeconfig *c);

#endif
