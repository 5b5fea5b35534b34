/*
 * cmd/trainerstatus.h - `serve --trainjob-status`: Kubeflow Trainer's TrainJobStatus feature
 * (alpha gate, off by default) in the daemon. Glue only: the endpoint is statusserver/'s, the
 * pod changes trainjob/'s (trainjob_status_server), the reconciler's hook rc_opts.
 *
 * Settings are serve's "trainerStatus.*" keys (trainer_status_apply_setting). When enabled,
 * every replica serves the status server on its own HTTPS address with the serving pair of the
 * webhook, and the reconciler gives every trainer pod the server's URL
 * (https://<tls.serviceName>.<tls.secretNamespace>.svc:<port>, unless trainerStatus.url says)
 * and a ConfigMap <name>-tls-config with the CA: trainerStatus.caFile's PEM, else the Secret
 * tls.secretName in tls.secretNamespace (ca-bundle.crt, else ca.crt), as Trainer copies its
 * webhook certificate Secret's ca.crt. Source: Kubeflow Trainer v2.3.0 (config StatusServer,
 * plugins/trainjobstatus, pkg/statusserver).
 */
#ifndef CMD_TRAINERSTATUS_H
#define CMD_TRAINERSTATUS_H

#include <limits.h>
#include <stdio.h>

#include "common/error.h"
#include "common/kube.h"

struct trainer_status_settings {
    int enabled;            /* trainerStatus.enabled / --trainjob-status; default 0 */
    char address[256];      /* trainerStatus.address / --trainjob-status-address; ":10443" */
    double qps;             /* trainerStatus.qps / --trainjob-status-qps; 5 (Trainer's) */
    int burst;              /* trainerStatus.burst / --trainjob-status-burst; 10 */
    char ca_file[PATH_MAX]; /* trainerStatus.caFile / --trainjob-status-ca-file; "" = the
                               certificate Secret */
    char url[512]; /* trainerStatus.url / --trainjob-status-url; "" = derived (see above) */
};

/* trainer_status_settings_default - the defaults above. */
void trainer_status_settings_default(struct trainer_status_settings *s);

/*
 * trainer_status_apply_setting - one setting by serve's flag name: --trainjob-status
 * (true|false|1|0), --trainjob-status-address, --trainjob-status-ca-file, --trainjob-status-url
 * (trainer_status_check_url), --trainjob-status-qps (0.1..100000), --trainjob-status-burst
 * (1..100000). Returns 0, -1 for a bad value with why it is refused into why (why_size bytes),
 * or -2 when flag is not one of these. Prints nothing.
 */
int trainer_status_apply_setting(struct trainer_status_settings *s, const char *flag, const char *v,
                                 char *why, size_t why_size);

/*
 * trainer_status_check_url - v is a status-server URL base trainer pods can use:
 * "https://HOST[:PORT]" (HOST a name, an IPv4 address or a [IPv6] address; PORT 1..65535),
 * without path, query or fragment (the client appends /apis/...). Returns 0, or -1 with the
 * reason in why (size bytes; the caller names the flag and the value).
 */
int trainer_status_check_url(const char *v, char *why, size_t size);

/* trainer_status_print_settings - the "trainerStatus:" mapping of serve's settings as YAML. */
void trainer_status_print_settings(const struct trainer_status_settings *s, FILE *out);

/*
 * trainer_status_url - the URL pods reach the server at into buf (size bytes): s->url, else
 * "https://<service>.<ns>.svc:<port of s->address>". Returns 0, or -1 (no port in the
 * address, or buf too small).
 */
int trainer_status_url(const struct trainer_status_settings *s, const char *service, const char *ns,
                       char *buf, size_t size);

/* The CA source for the reconciler (rc_opts.trainer_status_ca): re-read at most every 30 s. */
struct trainer_status_ca;

/* trainer_status_ca_create - for ca_file (may be "" or NULL) or else the Secret ns/name read
 * through kube (borrowed). NULL on no memory. */
struct trainer_status_ca *trainer_status_ca_create(struct common_kube *kube, const char *ca_file,
                                                   const char *secret_ns, const char *secret_name);
void trainer_status_ca_destroy(struct trainer_status_ca *ca);

/*
 * trainer_status_ca_get - rc_opts.trainer_status_ca: the CA PEM into *pem (common_malloc'd).
 * Thread-safe. Returns COMMON_OK; COMMON_ENOTFOUND (no file, no Secret, no CA key in it:
 * the message names the file or Secret), COMMON_EINVAL (no PEM certificate), the API client's
 * codes, COMMON_ENOMEM.
 */
enum common_rc trainer_status_ca_get(void *ctx, char **pem, struct common_error *err);

#endif
