/*
 * cmd/certmgr.h - `serve --tls-managed`: the webhook's certificates kept in a Secret and rotated
 * by the leader, loaded by every replica. Glue only: every decision is common/certs.h's
 * (common_certs_observe, common_certs_decide, common_certs_apply); this module does the I/O.
 *
 * Leader (certmgr_leader_step): GET the Secret, observe, decide(now), apply, write it back with
 * its resourceVersion (create the first time; a conflict is retried at the next step), then make
 * every webhook of the configured Mutating/ValidatingWebhookConfigurations carry ca-bundle.crt in
 * clientConfig.caBundle (JSON patch guarded by the configuration's resourceVersion), read them
 * back and, once all carry it, record the "published" annotations on the Secret (the decision's
 * publish grace counts from then).
 *
 * Every replica (certmgr_replica_sync): GET the Secret and, when its tls.crt/tls.key differ from
 * the serving files, write them atomically (temporary file + rename; tls.key mode 0600, tls.crt
 * 0644), key first. serve then re-reads the files (common_httpd_reload_tls): new connections get
 * the new certificate, open ones keep theirs.
 *
 * Settings (struct certmgr_settings) are serve's "tls.*" keys; see certmgr_apply_setting.
 * docs/certs.md describes the protocol. Not thread-safe: one thread (serve's main loop) calls
 * everything except certmgr_serving_ready, which any thread may call.
 */
#ifndef CMD_CERTMGR_H
#define CMD_CERTMGR_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "common/kube.h"

#define CERTMGR_STR_MAX 512

/* serve's tls.* settings for managed certificates (defaults: certmgr_settings_default) */
struct certmgr_settings {
    int managed;                                  /* tls.managed / --tls-managed; default 0 */
    char cert_dir[PATH_MAX];                      /* tls.certDir; default /tmp/trainsched-certs */
    char secret_name[254];                        /* tls.secretName; trainsched-webhook-certs */
    char secret_namespace[254];                   /* tls.secretNamespace; $POD_NAMESPACE or
                                                   * trainsched-system; also the namespace of the
                                                   * serving certificate's Service names */
    char service[64];                             /* tls.serviceName; trainsched-controller */
    char extra_dns[CERTMGR_STR_MAX];              /* tls.extraDNS: comma list */
    char extra_ips[CERTMGR_STR_MAX];              /* tls.extraIPs: comma list */
    char webhook_configurations[CERTMGR_STR_MAX]; /* tls.webhookConfigurations: comma list of
                                                   * names, each meaning the Mutating and the
                                                   * Validating configuration of that name, or
                                                   * "mutating:NAME" / "validating:NAME" for
                                                   * one; default "trainsched" */
    int64_t ca_lifetime_s, serving_lifetime_s;    /* tls.caLifetime, tls.servingLifetime */
    int64_t publish_grace_s, switch_grace_s;      /* tls.publishGrace, tls.switchGrace */
    int renew_num, renew_den; /* tls.renewFraction ("0.667" or "2/3"); default 2/3 */
};

/* certmgr_settings_default - the defaults above (common_certs_policy_default's lifetimes and
 * graces). Reads $POD_NAMESPACE. */
void certmgr_settings_default(struct certmgr_settings *s);

/*
 * certmgr_apply_setting - one setting by serve's flag name: --tls-managed (true|false|1|0),
 * --tls-cert-dir, --tls-secret-name, --tls-secret-namespace, --tls-service-name,
 * --tls-extra-dns, --tls-extra-ips, --tls-webhook-configurations (strings),
 * --tls-ca-lifetime, --tls-serving-lifetime, --tls-publish-grace, --tls-switch-grace (durations
 * as common_certs_parse_duration reads them, or plain seconds; graces may be 0),
 * --tls-renew-fraction ("N/D" or a decimal, strictly between 0 and 1). Returns 0, -1 for a bad
 * value with why it is refused into why (why_size bytes; serve prints it after the flag or key
 * and the value), or -2 when flag is not one of these. Prints nothing.
 */
int certmgr_apply_setting(struct certmgr_settings *s, const char *flag, const char *v, char *why,
                          size_t why_size);

/* certmgr_print_settings - the settings as YAML lines of serve's "tls:" mapping (two-space
 * indented keys, without the "tls:" line itself). */
void certmgr_print_settings(const struct certmgr_settings *s, FILE *out);

/*
 * certmgr_settings_check - when s->managed: the policy (common_certs_policy_check), the
 * service and namespace names, every extra DNS name and IP (by making a throw-away
 * certificate's names check), at most 8 webhook configuration entries. Returns COMMON_OK or
 * COMMON_EINVAL with a message naming the setting.
 */
enum common_rc certmgr_settings_check(const struct certmgr_settings *s, struct common_error *err);

/*
 * certmgr_default_files - fill cert_file / key_file (each PATH_MAX bytes) with
 * "<certDir>/tls.crt" / "<certDir>/tls.key" when they are empty (the --tls-cert-file /
 * --tls-key-file flags win).
 */
void certmgr_default_files(const struct certmgr_settings *s, char cert_file[PATH_MAX],
                           char key_file[PATH_MAX]);

struct certmgr;

struct certmgr_opts {
    struct common_kube *kube;                /* borrowed; outlives the manager */
    const struct certmgr_settings *settings; /* copied */
    const char *cert_file, *key_file;        /* the serving files the replica writes; copied */
};

/*
 * certmgr_create - a manager for o. The cert files' directory is created (mode 0700) when
 * missing. Returns NULL with err set: COMMON_EINVAL (settings, as certmgr_settings_check),
 * COMMON_EIO (the directory cannot be made), COMMON_ENOMEM. certmgr_destroy frees it (NULL is a
 * no-op).
 */
struct certmgr *certmgr_create(const struct certmgr_opts *o, struct common_error *err);
void certmgr_destroy(struct certmgr *cm);

/*
 * certmgr_leader_step - one step of the leader's rotation at now (seconds since the epoch, UTC;
 * the caller passes time(NULL)): see the file comment. Every action, patch and publication is
 * logged (info); failures are logged (warn/error) and retried. Returns when to step next, in
 * seconds since the epoch: now + 1 after a change or a conflict, now + 2..5 after a failure or
 * while a configuration does not carry the bundle yet, else min(decision.next_s, now + 60).
 */
int64_t certmgr_leader_step(struct certmgr *cm, int64_t now);

/*
 * certmgr_replica_sync - bring the serving files in line with the Secret's tls.crt/tls.key
 * (a pair that does not match is not written). Returns 1 when files were written (the caller
 * reloads them at once), 0 when they already matched, -1 when there is nothing to load yet (no
 * Secret, no serving pair, or an error; logged, at debug for "no Secret yet").
 */
int certmgr_replica_sync(struct certmgr *cm);

/* certmgr_serving_ready - 1 once a sync has found the files equal to the Secret's serving pair
 * (they are then safe to serve), else 0. Thread-safe. */
int certmgr_serving_ready(const struct certmgr *cm);

#endif
