/*
 * cmd/serve.c - `trainsched serve`: the long-running daemon.
 *
 * Components (--components): reconciler (TrainJobs -> JobSets, leader-elected); webhook and
 * extender arrive with their issues and are refused with a clear message until then. Plain HTTP
 * (--http-address, default :8080) serves /healthz, /readyz and /metrics; the HTTPS address
 * (default :9443) is reserved for the webhook and extender verbs. Settings come from an
 * optional YAML file (--config) and then flags, which win. Source: ../shared/DESIGN.md
 * "Processes, ports and deployment", "Running at scale and in HA".
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cmd/certmgr.h"
#include "cmd/cli.h"
#include "cmd/serveready.h"
#include "cmd/trainerdetect.h"
#include "cmd/trainerstatus.h"
#include "common/alloc.h"
#include "common/certs.h"
#include "common/events.h"
#include "common/health.h"
#include "common/httpd.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/leader.h"
#include "common/log.h"
#include "common/names.h"
#include "common/metrics.h"
#include "common/names.h"
#include "common/yaml.h"
#include "common/informer.h"
#include "webhook/server.h"
#include "extender/server.h"
#include "gang/gang.h"
#include "integrations/backend.h"
#include "integrations/slurmrest.h"
#include "integrations/volcano.h"
#include "reconciler/reconciler.h"
#include "statusserver/server.h"
#include "topology/topology.h"

#define STR_MAX 512

/* Connections the HTTPS server accepts when the extender runs: held binds are open requests, and
 * at the 2,048 default a backlog of held binds left no room for filter calls (bench_scheduler:
 * the scheduler's filters were refused until gangs timed out). Needs as many file descriptors. */
#define EXTENDER_MAX_CONNECTIONS 16384

#define SERVE_MAX_TOPOLOGIES 8
#define SERVE_CFG_KEYS_MAX 96 /* at least the entries of cfg_keys */

struct serve_config {
    char kubeconfig[PATH_MAX], context[STR_MAX];
    int comp_reconciler, comp_webhook, comp_extender;
    char https_address[STR_MAX], http_address[STR_MAX];
    char log_level[16];
    double qps;
    int burst;
    int leader_elect;
    char lease_name[254], lease_namespace[254], identity[COMMON_LEADER_IDENTITY_MAX + 1];
    struct common_leader_timing timing;
    int workers;
    char namespace[254];
    char field_manager[128];
    char tls_cert_file[PATH_MAX], tls_key_file[PATH_MAX];
    char gang_scheduler_name[254];
    char default_backend[64]; /* backends.default (integrations/backend.h) */
    /* backends.volcano.queue, backends.volcano.tiers (integrations/volcano.h) */
    char volcano_queue[254], volcano_tiers[1024];
    char kai_queue[254]; /* backends.kai.queue (integrations/kai.h); "": default-queue */
    int extender_wired;
    int gang_gate; /* webhook.gangGate: gang pods wait at the trainsched.io/gang gate */
    double ext_bind_timeout_s, ext_schedule_timeout_s;
    double ext_backoff_initial_s, ext_backoff_max_s; /* a failed gang's backoff */
    /* extender topologies, "NAME=LEVEL,LEVEL,..." (topology/topology.h), the first the default */
    char topo_specs[SERVE_MAX_TOPOLOGIES][512];
    int n_topo_specs;
    unsigned topo_by_flag; /* bit at: topo_specs[at] was set by a flag (not the file) */
    int topo_loading_file; /* 1 while extender.topologies of the file is applied */
    double tls_reload_s;
    char trainer_lease_namespace[254]; /* where Kubeflow Trainer's Lease is looked for */
    int allow_trainer;                 /* --allow-trainer-controller */
    struct certmgr_settings certs;     /* tls.managed and friends (cmd/certmgr.h) */
    struct trainer_status_settings ts; /* trainerStatus.* (cmd/trainerstatus.h) */
    /* Slurm backend (docs/slurm.md): slurmrestd and the job defaults; url "" = off */
    char slurm_url[STR_MAX], slurm_user[254], slurm_token_file[PATH_MAX];
    char slurm_key_file[PATH_MAX], slurm_api_version[32], slurm_node_label[254];
    char slurm_partition[254], slurm_account[254], slurm_qos[254];
    /* where each value came from, to name it as the user gave it: the --config file's path,
     * and from_file[i] set when cfg_keys[i] was set by the file and no flag replaced it */
    const char *config_file;
    unsigned char from_file[SERVE_CFG_KEYS_MAX];
};

static void config_defaults(struct serve_config *c)
{
    const char *pod_ns = getenv("POD_NAMESPACE");
    memset(c, 0, sizeof(*c));
    c->comp_reconciler = 1;
    snprintf(c->https_address, sizeof(c->https_address), ":9443");
    snprintf(c->http_address, sizeof(c->http_address), ":8080");
    snprintf(c->log_level, sizeof(c->log_level), "info");
    c->qps = 50;
    c->burst = 100;
    c->leader_elect = 1;
    snprintf(c->lease_name, sizeof(c->lease_name), "trainsched-controller");
    snprintf(c->lease_namespace, sizeof(c->lease_namespace), "%s",
             pod_ns && *pod_ns ? pod_ns : "trainsched-system");
    c->timing = common_leader_timing_default();
    c->workers = 4;
    snprintf(c->field_manager, sizeof(c->field_manager), "trainsched");
    c->tls_reload_s = 10;
    c->gang_gate = 1;
    c->ext_bind_timeout_s = 630; /* manifests/scheduler/scheduler-config.yaml's bind httpTimeout */
    c->ext_schedule_timeout_s = 60;
    c->ext_backoff_initial_s = 10; /* gang/gang.h's defaults */
    c->ext_backoff_max_s = 300;
    snprintf(c->trainer_lease_namespace, sizeof(c->trainer_lease_namespace), "kubeflow-system");
    certmgr_settings_default(&c->certs);
    trainer_status_settings_default(&c->ts);
}

static void usage(FILE *f)
{
    fputs(
        "Usage: trainsched serve [OPTIONS]\n\n"
        "Run the trainsched daemon: any of the TrainJob reconciler (leader-elected), the\n"
        "admission webhook and the scheduler extender (--components), with /healthz, /readyz\n"
        "and /metrics on plain HTTP. Settings come from --config (YAML) and then from flags,\n"
        "which win.\n\n"
        "Options:\n"
        "  --config FILE                    YAML settings (see docs/serve.md for every key)\n"
        "  --kubeconfig FILE                kubeconfig to use; default: in-cluster service\n"
        "                                   account when KUBERNETES_SERVICE_HOST is set, else\n"
        "                                   $KUBECONFIG, else ~/.kube/config\n"
        "  --context NAME                   kubeconfig context (default: current-context)\n"
        "  --components LIST                comma list of reconciler,webhook,extender\n"
        "                                   (default reconciler; extender: the scheduler\n"
        "                                   extender verbs, see docs/extender.md)\n"
        "  --http-address HOST:PORT         /healthz, /readyz, /metrics (default :8080)\n"
        "  --https-address HOST:PORT        webhook and extender verbs (default :9443)\n"
        "  --leader-elect=true|false        elect a leader through a Lease (default true)\n"
        "  --leader-elect-lease-name NAME   (default trainsched-controller)\n"
        "  --leader-elect-namespace NS      (default $POD_NAMESPACE or trainsched-system)\n"
        "  --leader-elect-lease-duration S  seconds (default 15)\n"
        "  --leader-elect-renew-deadline S  seconds (default 10)\n"
        "  --leader-elect-retry-period S    seconds (default 2)\n"
        "  --identity ID                    leader identity (default host_pid_random)\n"
        "  --workers N                      concurrent reconciles (default 4)\n"
        "  --namespace NS                   watch only this namespace (default all)\n"
        "  --field-manager NAME             server-side apply manager (default trainsched)\n"
        "  --kube-qps Q, --kube-burst N     API client rate limit (default 50, 100)\n"
        "  --tls-cert-file FILE             PEM certificate (and chain) of the HTTPS address\n"
        "  --tls-key-file FILE              its private key; both re-read when they change\n"
        "  --tls-reload-seconds S           how often the files are checked (default 10)\n"
        "  --tls-managed[=true|false]       the leader keeps the certificates in a Secret and\n"
        "                                   rotates them; every replica loads them from there\n"
        "                                   (docs/certs.md; with the webhook component this\n"
        "                                   also runs leader election)\n"
        "  --tls-cert-dir DIR               managed: where the files go unless --tls-cert-file/\n"
        "                                   --tls-key-file say (default /tmp/trainsched-certs)\n"
        "  --tls-secret-name NAME           managed: the Secret (default\n"
        "                                   trainsched-webhook-certs)\n"
        "  --tls-secret-namespace NS        its namespace, also the Service's (default\n"
        "                                   $POD_NAMESPACE or trainsched-system)\n"
        "  --tls-service-name NAME          Service whose DNS names the certificate carries\n"
        "                                   (default trainsched-controller)\n"
        "  --tls-extra-dns LIST             more DNS names, comma-separated\n"
        "  --tls-extra-ips LIST             IP addresses, comma-separated (e.g. 127.0.0.1)\n"
        "  --tls-webhook-configurations LIST  webhook configurations whose caBundle is kept\n"
        "                                   (NAME = both kinds, mutating:NAME, validating:NAME;\n"
        "                                   default trainsched)\n"
        "  --tls-ca-lifetime D, --tls-serving-lifetime D  durations (120s, 90d, 8760h;\n"
        "                                   default 87600h, 8760h)\n"
        "  --tls-renew-fraction F           renew at this part of a certificate's life (2/3)\n"
        "  --tls-publish-grace D, --tls-switch-grace D  rotation waits (default 300s each)\n"
        "  --gang-scheduler-name NAME       webhook: schedulerName for gang pods (default:\n"
        "                                   leave it)\n"
        "  --default-backend NAME           backend of runtimes with neither the annotation\n"
        "                                   trainsched.io/backend nor a podGroupPolicy\n"
        "                                   (docs/backends.md; default none)\n"
        "  --volcano-queue NAME             volcano backend: the queue of TrainJobs whose\n"
        "                                   TrainJob and runtime name none (default: none,\n"
        "                                   Volcano uses \"default\")\n"
        "  --volcano-tiers LEVEL=TIER,...   volcano backend: the HyperNode tier of each\n"
        "                                   topology level (default " VOLCANO_DEFAULT_TIERS ")\n"
        "  --kai-queue NAME                 kai backend: the KAI queue of TrainJobs whose\n"
        "                                   TrainJob and runtime name none (default\n"
        "                                   default-queue)\n"
        "  --webhook-extender-wired[=true|false]  webhook: kube-scheduler calls trainsched's\n"
        "                                   extender, so route gang pods to it (the\n"
        "                                   trainsched.io/gang request); default false: gang\n"
        "                                   pods are left alone and scheduled one by one\n"
        "  --webhook-gang-gate[=true|false]  webhook, with --webhook-extender-wired: gang pods\n"
        "                                   wait at the scheduling gate trainsched.io/gang\n"
        "                                   until the extender releases their whole gang\n"
        "                                   (default true; false: held binds alone)\n"
        "  --extender-bind-timeout S        the bind extender's httpTimeout in the scheduler\n"
        "                                   config (default 630); held binds end before it;\n"
        "                                   the webhook warns about longer gang timeouts\n"
        "  --extender-schedule-timeout S    gang timeout for PodGroups without\n"
        "                                   scheduleTimeoutSeconds (default 60)\n"
        "  --extender-backoff-initial S, --extender-backoff-max S  a failed gang's backoff,\n"
        "                                   doubling per failure (default 10, 300)\n"
        "  --extender-topology NAME=L1,L2,...  a topology: node label keys, widest first\n"
        "                                   (repeatable, at most 8; the first is the default;\n"
        "                                   see docs/topology.md)\n"
        "  --allow-trainer-controller[=true|false]  start the reconciler even when Kubeflow\n"
        "                                   Trainer's own controller holds its Lease (default\n"
        "                                   false: refuse, exit 1; docs/install.md)\n"
        "  --trainer-lease-namespace NS     where Trainer's Lease trainer.kubeflow.org is\n"
        "                                   looked for (default kubeflow-system)\n"
        "  --trainjob-status[=true|false]   Kubeflow Trainer's TrainJobStatus feature (alpha):\n"
        "                                   serve the status server where training code\n"
        "                                   reports progress and metrics (status.trainerStatus),\n"
        "                                   and give trainer pods its URL, CA and a token\n"
        "                                   (default false; docs/trainer-status.md)\n"
        "  --trainjob-status-address HOST:PORT  its HTTPS address (default :10443; the TLS\n"
        "                                   pair is the webhook's)\n"
        "  --trainjob-status-url URL        how pods reach it (default https://<tls service>.\n"
        "                                   <tls secret namespace>.svc:<port>)\n"
        "  --trainjob-status-ca-file FILE   the CA pods trust (default: the certificate\n"
        "                                   Secret's ca-bundle.crt or ca.crt)\n"
        "  --trainjob-status-qps Q, --trainjob-status-burst N  its API client's rate limit\n"
        "                                   (default 5, 10)\n"
        "  --slurm-url URL                  slurmrestd (e.g. http://127.0.0.1:6820): TrainJobs\n"
        "                                   whose runtime says trainsched.io/backend: slurm get\n"
        "                                   one Slurm job per gang (docs/slurm.md)\n"
        "  --slurm-user NAME                X-SLURM-USER-NAME of every request\n"
        "  --slurm-token-file F | --slurm-jwt-key-file F  a token (re-read on change) or\n"
        "                                   Slurm's HS256 jwt_key to mint tokens with\n"
        "  --slurm-api-version V            e.g. v0.0.38 (default: the newest the server has)\n"
        "  --slurm-partition P, --slurm-account A, --slurm-qos Q  job defaults (runtime\n"
        "                                   annotations trainsched.io/slurm-* win)\n"
        "  --slurm-node-label KEY           node label holding a node's Slurm name (default:\n"
        "                                   the node's own name)\n"
        "  --log-level debug|info|warn|error (default info)\n"
        "  --check-config                   check the settings, that each address can be\n"
        "                                   bound (with its TLS files), and that the\n"
        "                                   kubeconfig can be read; print the settings in\n"
        "                                   effect as YAML and exit (0 valid; 2 with a\n"
        "                                   message naming each problem)\n"
        "  -h, --help                       this help\n\n"
        "Signals: SIGTERM or SIGINT stop the workers, release the Lease and exit 0, within\n"
        "2 s at any point (while starting too).\n"
        "Exit status: 0 after a signal, 1 when the kubeconfig or a port cannot be used, 2 bad\n"
        "usage. An API server that cannot be reached is retried (with backoff), not fatal;\n"
        "/readyz says what is wrong meanwhile.\n",
        f);
}

/* Setting parsers: 0, or -1 with why a value is refused into why (WHY_MAX bytes); the caller
 * prints one line naming the flag, or the file and key, the value and why. */
#define WHY_MAX 1024

static int set_str(char *dst, size_t size, const char *v, char *why)
{
    if (strlen(v) >= size) {
        snprintf(why, WHY_MAX, "longer than %zu bytes", size - 1);
        return -1;
    }
    snprintf(dst, size, "%s", v);
    return 0;
}

static int parse_bool(const char *v, int *out, char *why)
{
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
        *out = 1;
        return 0;
    }
    if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) {
        *out = 0;
        return 0;
    }
    snprintf(why, WHY_MAX, "must be true or false");
    return -1;
}

/* a number from lo to hi; whole: an integer */
static int parse_num(const char *v, double lo, double hi, int whole, double *out, char *why)
{
    char *end;
    double d;
    errno = 0;
    d = strtod(v, &end);
    if (errno || end == v || *end || d != d) {
        snprintf(why, WHY_MAX, "not a number");
        return -1;
    }
    if (d < lo || d > hi || (whole && d != (double)(long long)d)) {
        snprintf(why, WHY_MAX, "must be a %s from %g to %g", whole ? "whole number" : "number", lo,
                 hi);
        return -1;
    }
    *out = d;
    return 0;
}

static int parse_components(struct serve_config *c, const char *list, char *why)
{
    char buf[STR_MAX], *save = NULL, *tok;
    if (set_str(buf, sizeof(buf), list, why))
        return -1;
    c->comp_reconciler = c->comp_webhook = c->comp_extender = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        if (strcmp(tok, "reconciler") == 0)
            c->comp_reconciler = 1;
        else if (strcmp(tok, "webhook") == 0)
            c->comp_webhook = 1;
        else if (strcmp(tok, "extender") == 0)
            c->comp_extender = 1;
        else {
            snprintf(why, WHY_MAX, "unknown component \"%s\" (want reconciler, webhook, extender)",
                     tok);
            return -1;
        }
    }
    return 0;
}

/* ---- the config file ---- */

static int cfg_scalar(const json_t *v, char *buf, size_t size)
{
    if (json_is_string(v))
        snprintf(buf, size, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, size, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
    else
        return -1;
    return 0;
}

static int apply_setting(struct serve_config *c, const char *flag, const char *v, char *why);

/* key in the file -> the flag it sets */
static const struct {
    const char *path, *flag;
} cfg_keys[] = {
    {"kubeconfig", "--kubeconfig"},
    {"context", "--context"},
    {"components", "--components"},
    {"httpAddress", "--http-address"},
    {"httpsAddress", "--https-address"},
    {"logLevel", "--log-level"},
    {"kubeQPS", "--kube-qps"},
    {"kubeBurst", "--kube-burst"},
    {"leaderElection.enabled", "--leader-elect"},
    {"leaderElection.leaseName", "--leader-elect-lease-name"},
    {"leaderElection.leaseNamespace", "--leader-elect-namespace"},
    {"leaderElection.leaseDurationSeconds", "--leader-elect-lease-duration"},
    {"leaderElection.renewDeadlineSeconds", "--leader-elect-renew-deadline"},
    {"leaderElection.retryPeriodSeconds", "--leader-elect-retry-period"},
    {"leaderElection.identity", "--identity"},
    {"reconciler.workers", "--workers"},
    {"reconciler.namespace", "--namespace"},
    {"reconciler.fieldManager", "--field-manager"},
    {"tls.certFile", "--tls-cert-file"},
    {"tls.keyFile", "--tls-key-file"},
    {"tls.reloadSeconds", "--tls-reload-seconds"},
    {"tls.managed", "--tls-managed"},
    {"tls.certDir", "--tls-cert-dir"},
    {"tls.secretName", "--tls-secret-name"},
    {"tls.secretNamespace", "--tls-secret-namespace"},
    {"tls.serviceName", "--tls-service-name"},
    {"tls.extraDNS", "--tls-extra-dns"},
    {"tls.extraIPs", "--tls-extra-ips"},
    {"tls.webhookConfigurations", "--tls-webhook-configurations"},
    {"tls.caLifetime", "--tls-ca-lifetime"},
    {"tls.servingLifetime", "--tls-serving-lifetime"},
    {"tls.renewFraction", "--tls-renew-fraction"},
    {"tls.publishGrace", "--tls-publish-grace"},
    {"tls.switchGrace", "--tls-switch-grace"},
    {"webhook.gangSchedulerName", "--gang-scheduler-name"},
    {"backends.default", "--default-backend"},
    {"backends.volcano.queue", "--volcano-queue"},
    {"backends.volcano.tiers", "--volcano-tiers"},
    {"backends.kai.queue", "--kai-queue"},
    {"webhook.extenderWired", "--webhook-extender-wired"},
    {"webhook.gangGate", "--webhook-gang-gate"},
    {"extender.bindHTTPTimeoutSeconds", "--extender-bind-timeout"},
    {"extender.defaultScheduleTimeoutSeconds", "--extender-schedule-timeout"},
    {"extender.backoffInitialSeconds", "--extender-backoff-initial"},
    {"extender.backoffMaxSeconds", "--extender-backoff-max"},
    {"extender.topologies", "--extender-topology"},
    {"trainerCheck.allowRunning", "--allow-trainer-controller"},
    {"slurm.url", "--slurm-url"},
    {"slurm.user", "--slurm-user"},
    {"slurm.tokenFile", "--slurm-token-file"},
    {"slurm.jwtKeyFile", "--slurm-jwt-key-file"},
    {"slurm.apiVersion", "--slurm-api-version"},
    {"slurm.nodeLabel", "--slurm-node-label"},
    {"slurm.partition", "--slurm-partition"},
    {"slurm.account", "--slurm-account"},
    {"slurm.qos", "--slurm-qos"},
    {"trainerCheck.leaseNamespace", "--trainer-lease-namespace"},
    {"trainerStatus.enabled", "--trainjob-status"},
    {"trainerStatus.address", "--trainjob-status-address"},
    {"trainerStatus.url", "--trainjob-status-url"},
    {"trainerStatus.caFile", "--trainjob-status-ca-file"},
    {"trainerStatus.qps", "--trainjob-status-qps"},
    {"trainerStatus.burst", "--trainjob-status-burst"},
};

/* extender.topologies: [{name, levels: [..]}, ..] -> --extender-topology NAME=L1,L2,.. each */
static int load_topologies(struct serve_config *c, const char *file, const json_t *v, FILE *err)
{
    size_t i;
    json_t *t;
    char why[WHY_MAX];
    int rc;

    if (!json_is_array(v)) {
        fprintf(err, "trainsched serve: %s: extender.topologies: must be a list\n", file);
        return -1;
    }
    json_array_foreach(v, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const json_t *lv = json_object_get(t, "levels");
        char spec[512];
        size_t n, j;
        json_t *l;
        if (!name || !json_is_array(lv) || json_object_size(t) != 2) {
            fprintf(err,
                    "trainsched serve: %s: extender.topologies[%zu]: want {name: NAME, levels: "
                    "[LABEL, ...]}\n",
                    file, i);
            return -1;
        }
        n = (size_t)snprintf(spec, sizeof(spec), "%s=", name);
        json_array_foreach(lv, j, l)
        {
            if (!json_is_string(l) || n >= sizeof(spec)) {
                fprintf(err,
                        "trainsched serve: %s: extender.topologies[%zu].levels[%zu]: must be "
                        "a string\n",
                        file, i, j);
                return -1;
            }
            n += (size_t)snprintf(spec + n, sizeof(spec) - n, "%s%s", j ? "," : "",
                                  json_string_value(l));
        }
        for (size_t k = 0; k < i; k++)
            if (json_equal(json_object_get(json_array_get(v, k), "name"),
                           json_object_get(t, "name"))) {
                fprintf(err,
                        "trainsched serve: %s: extender.topologies[%zu]: topology \"%s\" is "
                        "already declared at extender.topologies[%zu]\n",
                        file, i, name, k);
                return -1;
            }
        c->topo_loading_file = 1;
        if (n >= sizeof(spec)) {
            snprintf(why, WHY_MAX, "longer than %zu bytes", sizeof(spec) - 1);
            rc = -1;
        } else {
            rc = apply_setting(c, "--extender-topology", spec, why);
        }
        c->topo_loading_file = 0;
        if (rc) {
            fprintf(err, "trainsched serve: %s: extender.topologies[%zu]: %s\n", file, i, why);
            return -1;
        }
    }
    return 0;
}

/* k is a section of nested keys: some cfg_keys path is "k.<key>" */
static int cfg_section(const char *k)
{
    size_t n = strlen(k);
    for (size_t i = 0; i < sizeof(cfg_keys) / sizeof(cfg_keys[0]); i++)
        if (strncmp(cfg_keys[i].path, k, n) == 0 && cfg_keys[i].path[n] == '.')
            return 1;
    return 0;
}

static int load_object(struct serve_config *c, const char *file, const json_t *obj,
                       const char *prefix, FILE *err)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)obj, k, v)
    {
        char path[256], val[PATH_MAX], why[WHY_MAX];
        size_t i;
        int rc;
        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", k);
        if (json_is_object(v) && cfg_section(path)) {
            if (load_object(c, file, v, path, err))
                return -1;
            continue;
        }
        for (i = 0; i < sizeof(cfg_keys) / sizeof(cfg_keys[0]); i++)
            if (strcmp(cfg_keys[i].path, path) == 0)
                break;
        if (i == sizeof(cfg_keys) / sizeof(cfg_keys[0])) {
            fprintf(err, "trainsched serve: %s: %s: unknown setting\n", file, path);
            return -1;
        }
        if (strcmp(path, "extender.topologies") == 0) {
            if (load_topologies(c, file, v, err))
                return -1;
            c->from_file[i] = 1;
            continue;
        }
        if (strcmp(path, "components") == 0 && json_is_array(v)) {
            size_t j, n = 0;
            json_t *it;
            val[0] = 0;
            json_array_foreach(v, j, it)
            {
                if (!json_is_string(it)) {
                    fprintf(err, "trainsched serve: %s: components[%zu]: must be a string\n", file,
                            j);
                    return -1;
                }
                n += (size_t)snprintf(val + n, sizeof(val) - n, "%s%s", j ? "," : "",
                                      json_string_value(it));
                if (n >= sizeof(val)) {
                    fprintf(err, "trainsched serve: %s: components: longer than %zu bytes\n", file,
                            sizeof(val) - 1);
                    return -1;
                }
            }
        } else if (json_is_null(v)) {
            continue;
        } else if (cfg_scalar(v, val, sizeof(val))) {
            fprintf(err, "trainsched serve: %s: %s: must be a string, number or boolean\n", file,
                    path);
            return -1;
        }
        rc = apply_setting(c, cfg_keys[i].flag, val, why);
        if (rc == -3)
            fprintf(err, "trainsched serve: %s: %s: %s\n", file, path, why);
        else if (rc)
            fprintf(err, "trainsched serve: %s: %s: invalid value \"%s\": %s\n", file, path, val,
                    why);
        if (rc)
            return -1;
        c->from_file[i] = 1;
    }
    return 0;
}

static int load_config(struct serve_config *c, const char *file, FILE *err)
{
    struct common_yaml_docs docs;
    struct common_error e;
    int rc;

    _Static_assert(sizeof(cfg_keys) / sizeof(cfg_keys[0]) <= SERVE_CFG_KEYS_MAX,
                   "SERVE_CFG_KEYS_MAX is too small");
    c->config_file = file;
    if (common_yaml_load_file(file, NULL, &docs, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: %s\n", e.msg);
        common_yaml_docs_free(&docs);
        return -1;
    }
    if (docs.n > 1 || (docs.n == 1 && !json_is_object(docs.docs[0]))) {
        fprintf(err, "trainsched serve: %s: want one YAML mapping of settings\n", file);
        common_yaml_docs_free(&docs);
        return -1;
    }
    rc = docs.n ? load_object(c, file, docs.docs[0], "", err) : 0;
    common_yaml_docs_free(&docs);
    return rc;
}

/* 1 when apply_setting knows flag: tried with an empty value on a scratch config (so an unknown
 * flag never takes the next argument as its value) */
static int flag_known(const char *flag)
{
    struct serve_config *scratch = common_calloc(1, sizeof(*scratch));
    char why[WHY_MAX];
    int known = 1;

    if (scratch) {
        config_defaults(scratch);
        known = apply_setting(scratch, flag, "", why) != -2;
    }
    common_free(scratch);
    return known;
}

/* a flag given on the command line: what the file set for it no longer counts as the file's */
static void flag_given(struct serve_config *c, const char *flag)
{
    for (size_t i = 0; i < sizeof(cfg_keys) / sizeof(cfg_keys[0]); i++)
        if (strcmp(cfg_keys[i].flag, flag) == 0)
            c->from_file[i] = 0;
}

/* how to name the setting of flag to the user: "FILE: key" when its value came from the
 * --config file, else the flag */
static const char *setting_name(const struct serve_config *c, const char *flag, char *buf,
                                size_t size)
{
    for (size_t i = 0; i < sizeof(cfg_keys) / sizeof(cfg_keys[0]); i++)
        if (c->from_file[i] && strcmp(cfg_keys[i].flag, flag) == 0) {
            snprintf(buf, size, "%s: %s", c->config_file, cfg_keys[i].path);
            return buf;
        }
    return flag;
}

/* One setting by flag name (also what the file's keys map to). Returns 0, -1 (bad value: why
 * into why, WHY_MAX bytes), -3 (bad value: why is a whole message that names the value) or -2
 * (unknown flag). Prints nothing; the caller prints one line naming the flag or the key. */
static int apply_setting(struct serve_config *c, const char *flag, const char *v, char *why)
{
    double d;
    if (strcmp(flag, "--kubeconfig") == 0)
        return set_str(c->kubeconfig, sizeof(c->kubeconfig), v, why);
    if (strcmp(flag, "--context") == 0)
        return set_str(c->context, sizeof(c->context), v, why);
    if (strcmp(flag, "--components") == 0)
        return parse_components(c, v, why);
    if (strcmp(flag, "--http-address") == 0)
        return set_str(c->http_address, sizeof(c->http_address), v, why);
    if (strcmp(flag, "--https-address") == 0)
        return set_str(c->https_address, sizeof(c->https_address), v, why);
    if (strcmp(flag, "--log-level") == 0) {
        enum common_log_level l;
        if (common_log_parse_level(v, &l)) {
            snprintf(why, WHY_MAX, "want debug, info, warn or error");
            return -1;
        }
        return set_str(c->log_level, sizeof(c->log_level), v, why);
    }
    if (strcmp(flag, "--kube-qps") == 0) {
        if (parse_num(v, 0.1, 100000, 0, &d, why))
            return -1;
        c->qps = d;
        return 0;
    }
    if (strcmp(flag, "--kube-burst") == 0) {
        if (parse_num(v, 1, 100000, 1, &d, why))
            return -1;
        c->burst = (int)d;
        return 0;
    }
    if (strcmp(flag, "--leader-elect") == 0)
        return parse_bool(v, &c->leader_elect, why);
    if (strcmp(flag, "--leader-elect-lease-name") == 0)
        return set_str(c->lease_name, sizeof(c->lease_name), v, why);
    if (strcmp(flag, "--leader-elect-namespace") == 0)
        return set_str(c->lease_namespace, sizeof(c->lease_namespace), v, why);
    if (strcmp(flag, "--leader-elect-lease-duration") == 0) {
        if (parse_num(v, 1, 3600, 1, &d, why))
            return -1;
        c->timing.lease_duration_s = (int)d;
        return 0;
    }
    if (strcmp(flag, "--leader-elect-renew-deadline") == 0) {
        if (parse_num(v, 0.1, 3600, 0, &d, why))
            return -1;
        c->timing.renew_deadline_s = d;
        return 0;
    }
    if (strcmp(flag, "--leader-elect-retry-period") == 0) {
        if (parse_num(v, 0.05, 3600, 0, &d, why))
            return -1;
        c->timing.retry_period_s = d;
        return 0;
    }
    if (strcmp(flag, "--identity") == 0)
        return set_str(c->identity, sizeof(c->identity), v, why);
    if (strcmp(flag, "--workers") == 0) {
        if (parse_num(v, 1, 256, 1, &d, why))
            return -1;
        c->workers = (int)d;
        return 0;
    }
    if (strcmp(flag, "--namespace") == 0)
        return set_str(c->namespace, sizeof(c->namespace), v, why);
    if (strcmp(flag, "--field-manager") == 0) {
        /* empty: the default, as the reconciler takes it (and --check-config shows it) */
        if (set_str(c->field_manager, sizeof(c->field_manager), v, why))
            return -1;
        if (!c->field_manager[0])
            snprintf(c->field_manager, sizeof(c->field_manager), "trainsched");
        return 0;
    }
    if (strcmp(flag, "--tls-cert-file") == 0)
        return set_str(c->tls_cert_file, sizeof(c->tls_cert_file), v, why);
    if (strcmp(flag, "--tls-key-file") == 0)
        return set_str(c->tls_key_file, sizeof(c->tls_key_file), v, why);
    if (strcmp(flag, "--tls-reload-seconds") == 0) {
        if (parse_num(v, 0.1, 86400, 0, &d, why))
            return -1;
        c->tls_reload_s = d;
        return 0;
    }
    if (strcmp(flag, "--extender-bind-timeout") == 0) {
        if (parse_num(v, 1, 86400, 0, &d, why))
            return -1;
        c->ext_bind_timeout_s = d;
        return 0;
    }
    if (strcmp(flag, "--extender-schedule-timeout") == 0) {
        if (parse_num(v, 1, 86400, 0, &d, why))
            return -1;
        c->ext_schedule_timeout_s = d;
        return 0;
    }
    if (strcmp(flag, "--extender-backoff-initial") == 0) {
        if (parse_num(v, 0.1, 86400, 0, &d, why))
            return -1;
        c->ext_backoff_initial_s = d;
        return 0;
    }
    if (strcmp(flag, "--extender-backoff-max") == 0) {
        if (parse_num(v, 0.1, 86400, 0, &d, why))
            return -1;
        c->ext_backoff_max_s = d;
        return 0;
    }
    if (strcmp(flag, "--extender-topology") == 0) {
        struct topo_spec ts;
        struct common_error e;
        int at;
        if (topo_spec_parse(v, &ts, &e) != COMMON_OK) {
            snprintf(why, WHY_MAX, "%s", e.msg);
            return -1;
        }
        for (at = 0; at < c->n_topo_specs; at++)
            if (strncmp(c->topo_specs[at], ts.name, strlen(ts.name)) == 0 &&
                c->topo_specs[at][strlen(ts.name)] == '=')
                break;
        /* a flag replaces the file's topology of that name; two flags naming one are an error
         * (not last-wins) */
        if (at < c->n_topo_specs && !c->topo_loading_file && (c->topo_by_flag & (1u << at))) {
            snprintf(why, WHY_MAX, "topology \"%s\" is given twice", ts.name);
            return -1;
        }
        if (at == SERVE_MAX_TOPOLOGIES) {
            snprintf(why, WHY_MAX, "at most %d topologies", SERVE_MAX_TOPOLOGIES);
            return -1;
        }
        if (at == c->n_topo_specs)
            c->n_topo_specs++;
        if (!c->topo_loading_file)
            c->topo_by_flag |= 1u << at;
        return set_str(c->topo_specs[at], sizeof(c->topo_specs[at]), v, why);
    }
    if (strcmp(flag, "--webhook-extender-wired") == 0)
        return parse_bool(v, &c->extender_wired, why);
    if (strcmp(flag, "--webhook-gang-gate") == 0)
        return parse_bool(v, &c->gang_gate, why);
    if (strcmp(flag, "--allow-trainer-controller") == 0)
        return parse_bool(v, &c->allow_trainer, why);
    if (strcmp(flag, "--trainer-lease-namespace") == 0)
        return set_str(c->trainer_lease_namespace, sizeof(c->trainer_lease_namespace), v, why);
    if (strcmp(flag, "--gang-scheduler-name") == 0) {
        /* it becomes the pods' spec.schedulerName: a DNS-1123 subdomain (pod validation) */
        const char *bad = *v ? common_names_dns1123_subdomain(v) : NULL;
        if (bad) {
            snprintf(why, WHY_MAX, "%s", bad);
            return -1;
        }
        return set_str(c->gang_scheduler_name, sizeof(c->gang_scheduler_name), v, why);
    }
    if (strcmp(flag, "--kai-queue") == 0) {
        const char *bad = common_names_dns1123_subdomain(v);
        if (bad) {
            snprintf(why, WHY_MAX, "%s", bad);
            return -1;
        }
        return set_str(c->kai_queue, sizeof(c->kai_queue), v, why);
    }
    if (strcmp(flag, "--default-backend") == 0) {
        const struct backend *b;
        struct common_error be;
        if (backend_select(NULL, NULL, v, &b, NULL, &be) != COMMON_OK) {
            snprintf(why, WHY_MAX, "%s", be.msg); /* names the key and the value */
            return -3;
        }
        return set_str(c->default_backend, sizeof(c->default_backend), v, why);
    }
    if (strcmp(flag, "--volcano-queue") == 0) {
        /* a Volcano Queue is a cluster-scoped object: its name is a DNS-1123 subdomain */
        const char *bad = *v ? common_names_dns1123_subdomain(v) : NULL;
        if (bad) {
            snprintf(why, WHY_MAX, "%s", bad);
            return -1;
        }
        return set_str(c->volcano_queue, sizeof(c->volcano_queue), v, why);
    }
    if (strcmp(flag, "--volcano-tiers") == 0) {
        struct common_error ve;
        if (volcano_tiers_check("backends.volcano.tiers", v, &ve) != COMMON_OK) {
            snprintf(why, WHY_MAX, "%s", ve.msg); /* names the key and the value */
            return -3;
        }
        return set_str(c->volcano_tiers, sizeof(c->volcano_tiers), v, why);
    }
    {
        static const struct {
            const char *flag;
            size_t off, size;
        } slurm[] = {
#define SLURM_OPT(f, field)                                                                        \
    {f, offsetof(struct serve_config, field), sizeof(((struct serve_config *)0)->field)}
            SLURM_OPT("--slurm-url", slurm_url),
            SLURM_OPT("--slurm-user", slurm_user),
            SLURM_OPT("--slurm-token-file", slurm_token_file),
            SLURM_OPT("--slurm-jwt-key-file", slurm_key_file),
            SLURM_OPT("--slurm-api-version", slurm_api_version),
            SLURM_OPT("--slurm-node-label", slurm_node_label),
            SLURM_OPT("--slurm-partition", slurm_partition),
            SLURM_OPT("--slurm-account", slurm_account),
            SLURM_OPT("--slurm-qos", slurm_qos),
#undef SLURM_OPT
        };
        for (size_t i = 0; i < sizeof(slurm) / sizeof(slurm[0]); i++)
            if (strcmp(flag, slurm[i].flag) == 0)
                return set_str((char *)c + slurm[i].off, slurm[i].size, v, why);
    }
    {
        int crc = certmgr_apply_setting(&c->certs, flag, v, why, WHY_MAX);
        if (crc != -2)
            return crc;
        crc = trainer_status_apply_setting(&c->ts, flag, v, why, WHY_MAX);
        if (crc != -2)
            return crc;
    }
    snprintf(why, WHY_MAX, "unknown option");
    return -2;
}

/* the settings in effect, in the config file's own keys */
static void print_config(const struct serve_config *c, FILE *out)
{
#define Q cli_yaml_quote
    fprintf(out, "kubeconfig: %s\ncontext: %s\ncomponents: [", Q(c->kubeconfig), Q(c->context));
    fprintf(out, "%s%s%s%s%s]\n", c->comp_reconciler ? "reconciler" : "",
            c->comp_reconciler && (c->comp_webhook || c->comp_extender) ? ", " : "",
            c->comp_webhook ? "webhook" : "", c->comp_webhook && c->comp_extender ? ", " : "",
            c->comp_extender ? "extender" : "");
    fprintf(out, "httpAddress: %s\nhttpsAddress: %s\nlogLevel: %s\nkubeQPS: %g\nkubeBurst: %d\n",
            Q(c->http_address), Q(c->https_address), Q(c->log_level), c->qps, c->burst);
    fprintf(out,
            "leaderElection:\n  enabled: %s\n  leaseName: %s\n  leaseNamespace: %s\n"
            "  leaseDurationSeconds: %d\n  renewDeadlineSeconds: %g\n  retryPeriodSeconds: %g\n"
            "  identity: %s\n",
            c->leader_elect ? "true" : "false", Q(c->lease_name), Q(c->lease_namespace),
            c->timing.lease_duration_s, c->timing.renew_deadline_s, c->timing.retry_period_s,
            Q(c->identity));
    fprintf(out, "reconciler:\n  workers: %d\n  namespace: %s\n  fieldManager: %s\n", c->workers,
            Q(c->namespace), Q(c->field_manager));
    fprintf(out, "tls:\n  certFile: %s\n  keyFile: %s\n  reloadSeconds: %g\n", Q(c->tls_cert_file),
            Q(c->tls_key_file), c->tls_reload_s);
    certmgr_print_settings(&c->certs, out);
    fprintf(out, "webhook:\n  gangSchedulerName: %s\n  extenderWired: %s\n  gangGate: %s\n",
            Q(c->gang_scheduler_name), c->extender_wired ? "true" : "false",
            c->gang_gate ? "true" : "false");
    fprintf(out, "backends:\n  default: %s\n",
            Q(c->default_backend[0] ? c->default_backend : "none"));
    fprintf(out, "  volcano:\n    queue: %s\n    tiers: %s\n", Q(c->volcano_queue),
            Q(c->volcano_tiers[0] ? c->volcano_tiers : VOLCANO_DEFAULT_TIERS));
    fprintf(out, "  kai:\n    queue: %s\n", Q(c->kai_queue[0] ? c->kai_queue : "default-queue"));
    fprintf(out,
            "extender:\n  bindHTTPTimeoutSeconds: %g\n  defaultScheduleTimeoutSeconds: %g\n"
            "  backoffInitialSeconds: %g\n  backoffMaxSeconds: %g\n",
            c->ext_bind_timeout_s, c->ext_schedule_timeout_s, c->ext_backoff_initial_s,
            c->ext_backoff_max_s);
    fprintf(out, "  topologies:%s\n", c->n_topo_specs ? "" : " []");
    for (int i = 0; i < c->n_topo_specs; i++) {
        struct topo_spec ts;
        struct common_error e;
        if (topo_spec_parse(c->topo_specs[i], &ts, &e) != COMMON_OK)
            continue;
        fprintf(out, "  - name: %s\n    levels: [", Q(ts.name));
        for (size_t j = 0; j < ts.n_levels; j++)
            fprintf(out, "%s%s", j ? ", " : "", Q(ts.levels[j]));
        fputs("]\n", out);
    }
    fprintf(out, "trainerCheck:\n  allowRunning: %s\n  leaseNamespace: %s\n",
            c->allow_trainer ? "true" : "false", Q(c->trainer_lease_namespace));
    trainer_status_print_settings(&c->ts, out);
    if (c->slurm_url[0])
        fprintf(out,
                "slurm:\n  url: %s\n  user: %s\n  tokenFile: %s\n  jwtKeyFile: %s\n"
                "  apiVersion: %s\n  nodeLabel: %s\n  partition: %s\n  account: %s\n"
                "  qos: %s\n",
                Q(c->slurm_url), Q(c->slurm_user), Q(c->slurm_token_file), Q(c->slurm_key_file),
                Q(c->slurm_api_version), Q(c->slurm_node_label), Q(c->slurm_partition),
                Q(c->slurm_account), Q(c->slurm_qos));
#undef Q
}

/* ---- the daemon ---- */

struct daemon {
    struct serve_config cfg;
    struct common_kube *kube;
    struct common_metrics *metrics;
    struct common_events *events;
    struct common_leader *leader;
    struct rc_reconciler *rc;
    pthread_mutex_t mu;
    atomic_int want_lead; /* set by the elector's callbacks, acted on by the main loop */
    atomic_int leading;
    atomic_int seen_leader; /* some replica (maybe us) was seen holding the Lease */
    /* webhook: runtime caches on every replica (the webhook serves on all of them) */
    struct common_informer_ops tr_ops, ctr_ops, js_ops, pc_ops;
    struct common_informer *tr_inf, *ctr_inf, *js_inf, *pc_inf;
    struct webhook_server *webhook;
    struct extender_server *ext;
    struct slurm_sync *slurm; /* the Slurm backend, NULL when --slurm-url is not set */
    struct common_httpd *https;
    time_t started;
    struct certmgr *cm;   /* tls.managed */
    atomic_int cert_wait; /* managed: no serving certificate yet, HTTPS not started */
    /* set once the webhook's caches / the extender exist: /readyz is served (on its own thread)
     * before they are created, and must not read the pointers until then */
    atomic_int webhook_caches, extender_made;
    /* --trainjob-status: the status server, its API client, the reconciler's CA source */
    struct ss_server *ss;
    struct common_kube *ss_kube;
    struct common_kube *wh_kube; /* the webhook's runtime reads on a cache miss (short timeout) */
    struct trainer_status_ca *ts_ca;
    char ts_url[512];
    /* stopping (SIGTERM, SIGINT): a thread of its own waits for the signal, so that it is acted
     * on at any point of the start too; it cancels the API clients (common_kube_cancel_after),
     * which ends whatever the main thread waits for, and wakes the main loop. Under mu. */
    sigset_t sigs;
    pthread_t sig_thread;
    int sig_started, stop_sig, exiting;
    pthread_cond_t stop_cond;
    struct common_kube
        *lease_kube; /* the elector's client: cut last, so a held Lease is released */
    struct common_kube *probe_kube; /* check_trainer's client while it looks */
    char rc_error[512];             /* the last failed reconciler start, "" once one succeeded */
};

static void started_leading(void *ctx)
{
    struct daemon *d = ctx;
    atomic_store(&d->want_lead, 1); /* common/leader.c logs the change */
}

static void stopped_leading(void *ctx)
{
    struct daemon *d = ctx;
    atomic_store(&d->want_lead, 0);
}

static void new_leader(void *ctx, const char *identity)
{
    struct daemon *d = ctx;
    (void)identity;
    atomic_store(&d->seen_leader, 1);
}

/* readiness (common/health.h: 0 = ready): serve_ready_reconciler (cmd/serveready.h) on the
 * state under the lock: a standby is ready, a replica that must reconcile once it does */
static int ready_reconciler(void *ctx, char *why, size_t why_size)
{
    struct daemon *d = ctx;
    struct serve_reconciler_state st;
    int rc;
    pthread_mutex_lock(&d->mu);
    st.should_run = !d->cfg.leader_elect || atomic_load(&d->want_lead);
    st.running = atomic_load(&d->leading) && d->rc;
    st.synced = d->rc && rc_synced(d->rc);
    st.start_error = d->rc_error;
    rc = serve_ready_reconciler(&st, why, why_size);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* leader election works: some replica holds the Lease. A standby that has seen no holder for
 * twice the lease duration is not ready: the Lease cannot be read or written (a missing
 * namespace, RBAC), and no replica reconciles. */
static int ready_election(void *ctx, char *why, size_t why_size)
{
    struct daemon *d = ctx;
    if (!d->cfg.leader_elect || atomic_load(&d->seen_leader) ||
        time(NULL) - d->started < 2 * (time_t)d->cfg.timing.lease_duration_s)
        return 0;
    snprintf(why, why_size,
             "no replica holds Lease %s/%s after %lld s (does the namespace exist? see the logs)",
             d->cfg.lease_namespace, d->cfg.lease_name, (long long)(time(NULL) - d->started));
    return 1;
}

static double leader_gauge(void *ctx)
{
    struct daemon *d = ctx;
    return atomic_load(&d->leading) ? 1 : 0;
}

static const struct common_kube_resource priorityclasses = {"scheduling.k8s.io", "v1",
                                                            "priorityclasses", 0};

/* webhook runtime lookup from the caches (webhook/handlers.h webhook_lookup_fn) */
static enum common_rc webhook_lookup(void *ctx, const char *kind, const char *ns, const char *name,
                                     json_t **out, struct common_error *err)
{
    struct daemon *d = ctx;
    struct common_informer *inf;
    struct common_pmap_snap *snap;
    char key[600];
    const json_t *obj;

    *out = NULL;
    if (strcmp(kind, "TrainingRuntime") == 0) {
        inf = d->tr_inf;
        snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
    } else if (strcmp(kind, "ClusterTrainingRuntime") == 0) {
        inf = d->ctr_inf;
        snprintf(key, sizeof(key), "%s", name);
    } else if (strcmp(kind, "JobSet") == 0) {
        inf = d->js_inf;
        snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
    } else if (strcmp(kind, "PriorityClass") == 0) {
        inf = d->pc_inf;
        snprintf(key, sizeof(key), "%s", name);
    } else {
        return common_error_set(err, COMMON_EUNSUPPORTED, "no cache of %s", kind);
    }
    if (!inf || !common_informer_synced(inf))
        return common_error_set(err, COMMON_EAPI, "the %s cache is not synced yet", kind);
    snap = common_informer_snapshot(inf);
    obj = snap ? common_pmap_snap_get(snap, key) : NULL;
    if (obj)
        *out = json_incref((json_t *)obj);
    common_pmap_snap_release(snap);
    return obj ? COMMON_OK : COMMON_ENOTFOUND;
}

static int ready_webhook(void *ctx, char *why, size_t why_size)
{
    struct daemon *d = ctx;
    if (atomic_load(&d->cert_wait)) {
        snprintf(why, why_size, "waiting for the serving certificate");
        return 1;
    }
    if (atomic_load(&d->webhook_caches) && common_informer_synced(d->tr_inf) &&
        common_informer_synced(d->ctr_inf) && common_informer_synced(d->js_inf))
        return 0;
    snprintf(why, why_size, "runtime and JobSet caches are not synced yet");
    return 1;
}

/* modification time of a file in nanoseconds, 0 when it cannot be read */
static long long mtime_ns(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum common_rc load_kubeconfig(const struct serve_config *c, struct common_kubeconfig *kc,
                                      struct common_error *err);

static int start_webhook(struct daemon *d, FILE *err)
{
    struct webhook_server_opts wo = {0};
    struct common_httpd_opts ho = {0};
    struct common_informer_opts io = {0};
    struct common_error e;

    if (!d->cfg.tls_cert_file[0] || !d->cfg.tls_key_file[0]) {
        fprintf(err, "trainsched serve: webhook: --tls-cert-file and --tls-key-file are required "
                     "(the API server calls webhooks over HTTPS only; `trainsched certs` makes "
                     "them)\n");
        return 2;
    }
    common_informer_json_ops(&d->tr_ops, "trainingruntimes", &common_kube_trainingruntimes);
    common_informer_json_ops(&d->ctr_ops, "clustertrainingruntimes",
                             &common_kube_clustertrainingruntimes);
    /* JobSets: the rule that runtimePatches may not change while a JobSet job is active */
    common_informer_json_ops(&d->js_ops, "jobsets", &common_kube_jobsets);
    /* PriorityClasses: Trainer's Volcano rule (priorityClassName must exist); until synced, the
     * check is a warning */
    common_informer_json_ops(&d->pc_ops, "priorityclasses", &priorityclasses);
    if (common_informer_create(d->kube, &d->tr_ops, NULL, &io, &d->tr_inf, &e) != COMMON_OK ||
        common_informer_create(d->kube, &d->ctr_ops, NULL, &io, &d->ctr_inf, &e) != COMMON_OK ||
        common_informer_create(d->kube, &d->js_ops, NULL, &io, &d->js_inf, &e) != COMMON_OK ||
        common_informer_create(d->kube, &d->pc_ops, NULL, &io, &d->pc_inf, &e) != COMMON_OK ||
        common_informer_start(d->tr_inf, &e) != COMMON_OK ||
        common_informer_start(d->ctr_inf, &e) != COMMON_OK ||
        common_informer_start(d->js_inf, &e) != COMMON_OK ||
        common_informer_start(d->pc_inf, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: webhook caches: %s\n", e.msg);
        return 1;
    }
    atomic_store(&d->webhook_caches, 1);
    {
        /* a runtime the caches have not seen yet is read from the API server before a TrainJob
         * naming it is refused (a runtime and its TrainJob applied together) */
        struct common_kubeconfig kc;
        struct common_kube_opts ko = common_kube_opts_default();
        if (load_kubeconfig(&d->cfg, &kc, &e) != COMMON_OK) {
            fprintf(err, "trainsched serve: webhook: %s\n", e.msg);
            return 1;
        }
        ko.qps = d->cfg.qps;
        ko.burst = d->cfg.burst;
        ko.max_retries = 1;
        ko.timeout_ms = WEBHOOK_RUNTIME_GET_TIMEOUT_MS;
        d->wh_kube = common_kube_client_create(&kc, &ko, &e);
        common_kubeconfig_free(&kc);
        if (!d->wh_kube) {
            fprintf(err, "trainsched serve: webhook: %s\n", e.msg);
            return 1;
        }
    }
    wo.lookup = webhook_lookup;
    wo.lookup_ctx = d;
    wo.kube = d->wh_kube;
    wo.scheduler_name = d->cfg.gang_scheduler_name[0] ? d->cfg.gang_scheduler_name : NULL;
    wo.extender_wired = d->cfg.extender_wired;
    wo.gang_gate = d->cfg.gang_gate;
    wo.default_backend = d->cfg.default_backend[0] ? d->cfg.default_backend : NULL;
    wo.volcano_tiers = d->cfg.volcano_tiers[0] ? d->cfg.volcano_tiers : NULL;
    wo.metrics = d->metrics;
    {
        /* the extender's cap on gang timeouts, from the same setting it uses */
        struct gang_config gc;
        gang_config_default(&gc);
        gc.bind_http_timeout_ms = (int64_t)(d->cfg.ext_bind_timeout_s * 1000);
        wo.max_schedule_timeout_ms = gang_timeout_cap_ms(&gc);
    }
    d->webhook = webhook_server_create(&wo, &e);
    if (!d->webhook) {
        fprintf(err, "trainsched serve: webhook: %s\n", e.msg);
        return 1;
    }
    ho.address = d->cfg.https_address;
    ho.tls_cert_file = d->cfg.tls_cert_file;
    ho.tls_key_file = d->cfg.tls_key_file;
    ho.max_body = webhook_server_httpd_max_body(d->webhook);
    ho.threads = 4;
    /* every held bind of the extender keeps a connection open (a 1,000-pod gang is 1,000) */
    if (d->ext)
        ho.max_connections = EXTENDER_MAX_CONNECTIONS;
    d->https = common_httpd_create(&ho, &e);
    if (!d->https || webhook_server_install(d->webhook, d->https, &e) != COMMON_OK ||
        (d->ext && extender_server_install(d->ext, d->https, &e) != COMMON_OK) ||
        common_httpd_start(d->https, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: https %s: %s\n", d->cfg.https_address, e.msg);
        return 1;
    }
    return 0;
}

static int ready_extender(void *ctx, char *why, size_t why_size)
{
    struct daemon *d = ctx;
    if (atomic_load(&d->extender_made) && extender_server_ready(d->ext))
        return 0;
    snprintf(why, why_size, "extender caches (nodes, pods, PodGroups) are not synced yet");
    return 1;
}

/* The extender: its state and informers; its routes go on the webhook's HTTPS server when the
 * webhook runs too, else on a server of its own at the HTTPS address (plain HTTP when no TLS
 * pair is given: a kube-scheduler sidecar on localhost, enableHTTPS false). */
static int start_extender(struct daemon *d, FILE *err)
{
    struct extender_server_opts xo = {0};
    struct common_error e;
    const char *specs[SERVE_MAX_TOPOLOGIES];

    xo.kube = d->kube;
    xo.events = d->events;
    xo.metrics = d->metrics;
    xo.bind_http_timeout_ms = (int64_t)(d->cfg.ext_bind_timeout_s * 1000);
    xo.default_schedule_timeout_s = (int64_t)d->cfg.ext_schedule_timeout_s;
    xo.backoff_initial_ms = (int64_t)(d->cfg.ext_backoff_initial_s * 1000);
    xo.backoff_max_ms = (int64_t)(d->cfg.ext_backoff_max_s * 1000);
    for (int i = 0; i < d->cfg.n_topo_specs; i++)
        specs[i] = d->cfg.topo_specs[i];
    xo.topologies = specs;
    xo.n_topologies = (size_t)d->cfg.n_topo_specs;
    xo.slurm_node_label = d->cfg.slurm_node_label[0] ? d->cfg.slurm_node_label : NULL;
    d->ext = extender_server_create(&xo, &e);
    if (!d->ext || extender_server_start(d->ext, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: extender: %s\n", e.msg);
        return 1;
    }
    atomic_store(&d->extender_made, 1);
    if (!d->cfg.comp_webhook) {
        struct common_httpd_opts ho = {0};
        ho.address = d->cfg.https_address;
        ho.tls_cert_file = d->cfg.tls_cert_file[0] ? d->cfg.tls_cert_file : NULL;
        ho.tls_key_file = d->cfg.tls_key_file[0] ? d->cfg.tls_key_file : NULL;
        ho.max_body = 64u << 20;
        ho.threads = 4;
        ho.max_connections = EXTENDER_MAX_CONNECTIONS;
        if (!ho.tls_cert_file)
            common_log(COMMON_LOG_WARN, "extender: no TLS pair given: plain HTTP", "address",
                       d->cfg.https_address, NULL);
        d->https = common_httpd_create(&ho, &e);
        if (!d->https || extender_server_install(d->ext, d->https, &e) != COMMON_OK ||
            common_httpd_start(d->https, &e) != COMMON_OK) {
            fprintf(err, "trainsched serve: extender %s: %s\n", d->cfg.https_address, e.msg);
            return 1;
        }
    }
    return 0;
}

/* work queue gauges: read through the daemon, so they stay valid while reconcilers come and go
 * with leadership (0 when none runs) */
static double queue_gauge(struct daemon *d, int which)
{
    struct rc_stats st;
    int have = 0;
    pthread_mutex_lock(&d->mu);
    if (d->rc) {
        rc_get_stats(d->rc, &st);
        have = 1;
    }
    pthread_mutex_unlock(&d->mu);
    if (!have)
        return 0;
    return (double)(which == 0   ? st.queue.depth
                    : which == 1 ? st.queue.delayed
                                 : st.queue.processing);
}

static double queue_depth(void *ctx)
{
    return queue_gauge(ctx, 0);
}

static double queue_delayed(void *ctx)
{
    return queue_gauge(ctx, 1);
}

static double queue_processing(void *ctx)
{
    return queue_gauge(ctx, 2);
}

/* the signal that asked serve to stop, 0 while none did */
static int stop_requested(struct daemon *d)
{
    int sig;
    pthread_mutex_lock(&d->mu);
    sig = d->stop_sig;
    pthread_mutex_unlock(&d->mu);
    return sig;
}

/* wait up to ms for a stop; returns the signal (nonzero) when stopping */
static int wait_stop(struct daemon *d, long ms)
{
    struct timespec until;
    int sig;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&d->mu);
    while (!d->stop_sig && pthread_cond_timedwait(&d->stop_cond, &d->mu, &until) != ETIMEDOUT)
        ;
    sig = d->stop_sig;
    pthread_mutex_unlock(&d->mu);
    return sig;
}

/* Calls in progress when a stop is asked for get this long to end (a reconcile's write against
 * a healthy API server takes milliseconds); the elector's client somewhat longer, so that a held
 * Lease is released after the reconciler stopped writing. Together they keep the exit within
 * 2 s of the signal, whatever the API server does (Kubernetes' grace period is 30 s). */
#define STOP_CALLS_MS 500
#define STOP_LEASE_MS 1200

/* the signal thread: SIGTERM or SIGINT (blocked in every thread) stops the daemon; serve's own
 * exit on an error wakes it the same way with `exiting` set */
static void *signal_thread(void *arg)
{
    struct daemon *d = arg;
    int sig = 0;

    while (sigwait(&d->sigs, &sig) != 0)
        ;
    pthread_mutex_lock(&d->mu);
    if (!d->exiting)
        common_log(COMMON_LOG_INFO, "signal received; stopping", "signal",
                   sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
    d->stop_sig = sig ? sig : SIGTERM;
    common_kube_cancel_after(d->kube, STOP_CALLS_MS);
    common_kube_cancel_after(d->ss_kube, STOP_CALLS_MS);
    common_kube_cancel_after(d->probe_kube, 0);
    /* a standby has no Lease to release: its election attempt ends at once */
    common_kube_cancel_after(d->lease_kube, atomic_load(&d->want_lead) ? STOP_LEASE_MS : 0);
    pthread_cond_broadcast(&d->stop_cond);
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static int start_reconciler(struct daemon *d)
{
    struct rc_opts o = {0};
    struct common_error err;
    struct rc_reconciler *rc;

    o.kube = d->kube;
    o.events = d->events;
    o.metrics = d->metrics;
    o.field_manager = d->cfg.field_manager;
    o.workers = d->cfg.workers;
    o.namespace = d->cfg.namespace[0] ? d->cfg.namespace : NULL;
    o.gang_scheduler_name = d->cfg.gang_scheduler_name; /* the webhook's, for the same pods */
    o.gang_marks = d->cfg.extender_wired; /* the same setting decides for the pod webhook */
    o.default_backend = d->cfg.default_backend;
    o.volcano_queue = d->cfg.volcano_queue;
    o.volcano_tiers = d->cfg.volcano_tiers;
    o.kai_default_queue = d->cfg.kai_queue;
    if (d->ts_ca) {
        o.trainer_status_url = d->ts_url;
        o.trainer_status_ca = trainer_status_ca_get;
        o.trainer_status_ca_ctx = d->ts_ca;
    }
    if (d->cfg.slurm_url[0] && !d->slurm) {
        struct slurm_sync_opts so = {0};
        so.rest.url = d->cfg.slurm_url;
        so.rest.user = d->cfg.slurm_user;
        so.rest.token_file = d->cfg.slurm_token_file;
        so.rest.key_file = d->cfg.slurm_key_file;
        so.rest.api_version = d->cfg.slurm_api_version;
        so.rest.metrics = d->metrics;
        so.job.partition = d->cfg.slurm_partition;
        so.job.account = d->cfg.slurm_account;
        so.job.qos = d->cfg.slurm_qos;
        d->slurm = slurm_sync_create(&so, &err);
        if (!d->slurm) {
            common_log(COMMON_LOG_ERROR, "Slurm backend not started", "error", err.msg, NULL);
            pthread_mutex_lock(&d->mu);
            snprintf(d->rc_error, sizeof(d->rc_error), "Slurm backend: %s", err.msg);
            pthread_mutex_unlock(&d->mu);
            return -1;
        }
    }
    o.slurm = d->slurm;
    rc = rc_create(&o, &err);
    if (!rc || rc_start(rc, &err) != COMMON_OK) {
        if (!stop_requested(d))
            common_log(COMMON_LOG_ERROR, "reconciler did not start", "error", err.msg, NULL);
        rc_destroy(rc);
        pthread_mutex_lock(&d->mu);
        snprintf(d->rc_error, sizeof(d->rc_error), "%s", err.msg);
        pthread_mutex_unlock(&d->mu);
        return -1;
    }
    pthread_mutex_lock(&d->mu);
    d->rc_error[0] = 0;
    d->rc = rc;
    atomic_store(&d->leading, 1);
    pthread_mutex_unlock(&d->mu);
    return 0;
}

static void stop_reconciler(struct daemon *d)
{
    struct rc_reconciler *rc;
    pthread_mutex_lock(&d->mu);
    rc = d->rc;
    d->rc = NULL;
    atomic_store(&d->leading, 0);
    pthread_mutex_unlock(&d->mu);
    rc_destroy(rc);
}

/* the kubeconfig serve uses: --kubeconfig, else in-cluster, else $KUBECONFIG/~/.kube/config */
static enum common_rc load_kubeconfig(const struct serve_config *c, struct common_kubeconfig *kc,
                                      struct common_error *e)
{
    if (c->kubeconfig[0])
        return common_kubeconfig_load(c->kubeconfig, c->context, kc, e);
    if (getenv("KUBERNETES_SERVICE_HOST"))
        return common_kubeconfig_in_cluster(NULL, kc, e);
    return common_kubeconfig_load(NULL, c->context, kc, e);
}

/* one address serve would listen on: parsed, bound and, with TLS files, loaded; 0 or -1 */
static int check_listen(const char *what, const char *address, const char *cert, const char *key,
                        FILE *err)
{
    struct common_httpd_opts ho = {0};
    struct common_httpd *h;
    struct common_error e = {0};
    int bad;

    ho.address = address;
    ho.tls_cert_file = cert && cert[0] ? cert : NULL;
    ho.tls_key_file = key && key[0] ? key : NULL;
    h = common_httpd_create(&ho, &e);
    bad = !h || common_httpd_start(h, &e) != COMMON_OK;
    if (bad)
        fprintf(err, "trainsched serve: --check-config: %s %s: %s\n", what, address, e.msg);
    if (h) {
        common_httpd_stop(h);
        common_httpd_destroy(h);
    }
    return bad ? -1 : 0;
}

/*
 * two listen addresses HOST:PORT (HOST "", "0.0.0.0", "::" or "[::]" = every address) would
 * take the same port: same port (not 0, a free one each), and the same host or either is every
 * address
 */
static int same_listener(const char *a, const char *b)
{
    const char *pa = strrchr(a, ':'), *pb = strrchr(b, ':');
    size_t ha, hb;
    int wa, wb;

    if (!pa || !pb || strcmp(pa, pb) != 0 || strcmp(pa, ":0") == 0) /* :0 = any free port */
        return 0;
    ha = (size_t)(pa - a);
    hb = (size_t)(pb - b);
#define WILD(s, n)                                                                                 \
    ((n) == 0 || ((n) == 7 && strncmp(s, "0.0.0.0", 7) == 0) ||                                    \
     ((n) == 2 && strncmp(s, "::", 2) == 0) || ((n) == 4 && strncmp(s, "[::]", 4) == 0))
    wa = WILD(a, ha);
    wb = WILD(b, hb);
#undef WILD
    return wa || wb || (ha == hb && strncmp(a, b, ha) == 0);
}

/*
 * --check-config beyond the settings themselves: what serve would fail on at once. Each
 * address it listens on can be bound (with the TLS pair loaded when one is given and not
 * managed: managed files appear only once the leader writes them), and the kubeconfig can be
 * read. Every problem is printed; returns the number of problems.
 */
static int check_environment(const struct serve_config *c, FILE *err)
{
    struct common_kubeconfig kc;
    struct common_error e = {0};
    int problems = 0, https = c->comp_webhook || c->comp_extender;
    char nb[4][PATH_MAX + 64];
    /* each setting named as the user gave it: the file's key when it came from --config */
    const char *http_name = setting_name(c, "--http-address", nb[0], sizeof(nb[0]));
    const char *https_name = setting_name(c, "--https-address", nb[1], sizeof(nb[1]));
    const char *ts_name = setting_name(c, "--trainjob-status-address", nb[2], sizeof(nb[2]));
    const char *ca_name = setting_name(c, "--trainjob-status-ca-file", nb[3], sizeof(nb[3]));

    if (check_listen(http_name, c->http_address, NULL, NULL, err))
        problems++;
    if (https &&
        check_listen(https_name, c->https_address, c->certs.managed ? NULL : c->tls_cert_file,
                     c->certs.managed ? NULL : c->tls_key_file, err))
        problems++;
    if (c->ts.enabled &&
        check_listen(ts_name, c->ts.address, c->certs.managed ? NULL : c->tls_cert_file,
                     c->certs.managed ? NULL : c->tls_key_file, err))
        problems++;
    if (c->ts.enabled && same_listener(c->ts.address, c->http_address)) {
        fprintf(err, "trainsched serve: --check-config: %s %s and %s %s are the same address\n",
                ts_name, c->ts.address, http_name, c->http_address);
        problems++;
    }
    if (c->ts.enabled && https && same_listener(c->ts.address, c->https_address)) {
        fprintf(err, "trainsched serve: --check-config: %s %s and %s %s are the same address\n",
                ts_name, c->ts.address, https_name, c->https_address);
        problems++;
    }
    if (https && same_listener(c->https_address, c->http_address)) {
        fprintf(err, "trainsched serve: --check-config: %s %s and %s %s are the same address\n",
                https_name, c->https_address, http_name, c->http_address);
        problems++;
    }
    if (c->ts.enabled && c->ts.ca_file[0]) {
        char *pem = NULL;
        if (common_certs_ca_file_read(c->ts.ca_file, &pem, &e) != COMMON_OK) {
            fprintf(err, "trainsched serve: --check-config: %s: %s\n", ca_name, e.msg);
            problems++;
        }
        common_free(pem);
    }
    memset(&kc, 0, sizeof(kc));
    if (load_kubeconfig(c, &kc, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: --check-config: kubeconfig: %s\n", e.msg);
        problems++;
    }
    common_kubeconfig_free(&kc);
    return problems;
}

/*
 * The object names and namespaces the daemon puts into API paths, checked as the API server
 * checks them (a namespace is a DNS-1123 label, a Lease or Secret name a DNS-1123 subdomain), so
 * a typo stops the start with the setting named instead of a request retried forever. The
 * defaults come from $POD_NAMESPACE, which is checked the same way. Returns 0, or -1 after
 * printing every bad one.
 */
static int check_names(const struct serve_config *c, FILE *err)
{
    const struct {
        const char *key, *flag, *value;
        int subdomain, may_be_empty;
    } names[] = {
        {"leaderElection.leaseName", "--leader-elect-lease-name", c->lease_name, 1, 0},
        {"leaderElection.leaseNamespace", "--leader-elect-namespace; default $POD_NAMESPACE",
         c->lease_namespace, 0, 0},
        {"reconciler.namespace", "--namespace", c->namespace, 0, 1},
        {"tls.secretName", "--tls-secret-name", c->certs.secret_name, 1, 0},
        {"tls.secretNamespace", "--tls-secret-namespace; default $POD_NAMESPACE",
         c->certs.secret_namespace, 0, 0},
        {"tls.serviceName", "--tls-service-name", c->certs.service, 0, 0},
        {"trainerCheck.leaseNamespace", "--trainer-lease-namespace", c->trainer_lease_namespace, 0,
         0},
    };
    int bad = 0;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = names[i].value, *why;
        if (!v[0] && names[i].may_be_empty)
            continue;
        why =
            names[i].subdomain ? common_names_dns1123_subdomain(v) : common_names_dns1123_label(v);
        if (why) {
            fprintf(err, "trainsched serve: %s (%s) \"%s\": %s\n", names[i].key, names[i].flag, v,
                    why);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

/*
 * The Slurm settings (docs/slurm.md), at --check-config and at start: slurm.url, its
 * credentials and API version as slurmrest_settings_check wants them; backends.default slurm
 * needs slurm.url. Slurm's pods reach the extender only with the gang marks, which the
 * reconciler writes only with webhook.extenderWired true: a warning says so when it is false.
 * Returns 0, or -1 after printing why serve must not start.
 */
static int check_slurm(const struct serve_config *c, FILE *err)
{
    struct slurmrest_opts so = {0};
    struct common_error e = {0};

    if (!c->slurm_url[0]) {
        static const struct {
            const char *key, *flag;
            size_t off;
        } others[] = {
            {"slurm.user", "--slurm-user", offsetof(struct serve_config, slurm_user)},
            {"slurm.tokenFile", "--slurm-token-file",
             offsetof(struct serve_config, slurm_token_file)},
            {"slurm.jwtKeyFile", "--slurm-jwt-key-file",
             offsetof(struct serve_config, slurm_key_file)},
            {"slurm.apiVersion", "--slurm-api-version",
             offsetof(struct serve_config, slurm_api_version)},
            {"slurm.nodeLabel", "--slurm-node-label",
             offsetof(struct serve_config, slurm_node_label)},
            {"slurm.partition", "--slurm-partition",
             offsetof(struct serve_config, slurm_partition)},
            {"slurm.account", "--slurm-account", offsetof(struct serve_config, slurm_account)},
            {"slurm.qos", "--slurm-qos", offsetof(struct serve_config, slurm_qos)},
        };
        for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
            if (((const char *)c + others[i].off)[0]) {
                fprintf(err,
                        "trainsched serve: %s (%s) is set but slurm.url (--slurm-url) is not: the "
                        "Slurm settings take effect only with slurm.url\n",
                        others[i].key, others[i].flag);
                return -1;
            }
        if (strcmp(c->default_backend, "slurm") == 0) {
            fprintf(err, "trainsched serve: backends.default (--default-backend) is slurm but "
                         "slurm.url (--slurm-url) is not set: nothing could submit the Slurm "
                         "jobs\n");
            return -1;
        }
        return 0;
    }
    if (!c->slurm_user[0] || (!c->slurm_token_file[0] && !c->slurm_key_file[0])) {
        fprintf(err, "trainsched serve: slurm.url needs slurm.user and one of slurm.tokenFile or "
                     "slurm.jwtKeyFile (--slurm-user, --slurm-token-file, "
                     "--slurm-jwt-key-file)\n");
        return -1;
    }
    so.url = c->slurm_url;
    so.user = c->slurm_user;
    so.token_file = c->slurm_token_file;
    so.key_file = c->slurm_key_file;
    so.api_version = c->slurm_api_version;
    if (slurmrest_settings_check(&so, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: %s\n", e.msg);
        return -1;
    }
    if (!c->extender_wired)
        fprintf(err, "trainsched serve: warning: slurm.url is set but webhook.extenderWired "
                     "(--webhook-extender-wired) is false: the reconciler does not mark the "
                     "gang's pods, so they never reach the extender and are not bound to the "
                     "nodes of their Slurm job; wire kube-scheduler to call the extender and "
                     "set webhook.extenderWired true (docs/slurm.md)\n");
    return 0;
}

static int connect_api(struct daemon *d, FILE *err)
{
    struct common_kubeconfig kc;
    struct common_kube_opts ko = common_kube_opts_default();
    struct common_error e;
    enum common_rc rc;

    rc = load_kubeconfig(&d->cfg, &kc, &e);
    if (rc) {
        fprintf(err, "trainsched serve: %s\n", e.msg);
        return -1;
    }
    ko.qps = d->cfg.qps;
    ko.burst = d->cfg.burst;
    /* a renew must end before the renew deadline */
    if (d->cfg.leader_elect && ko.timeout_ms > (long)(d->cfg.timing.renew_deadline_s * 1000 / 2))
        ko.timeout_ms = (long)(d->cfg.timing.renew_deadline_s * 1000 / 2);
    if (ko.timeout_ms < 1000)
        ko.timeout_ms = 1000;
    d->kube = common_kube_client_create(&kc, &ko, &e);
    /* the elector's own client, so that stopping can cut the other calls first and still
     * release the Lease (STOP_LEASE_MS) */
    if (d->kube)
        d->lease_kube = common_kube_client_create(&kc, &ko, &e);
    common_kubeconfig_free(&kc);
    if (!d->kube || !d->lease_kube) {
        fprintf(err, "trainsched serve: %s\n", e.msg);
        return -1;
    }
    return 0;
}

/* a client made after the signal thread started: published under the lock, and cancelled at
 * once (with the same grace as the others) when a stop was already asked for */
static void publish_client(struct daemon *d, struct common_kube **slot, struct common_kube *k,
                           long stop_ms)
{
    pthread_mutex_lock(&d->mu);
    *slot = k;
    if (d->stop_sig)
        common_kube_cancel_after(k, stop_ms);
    pthread_mutex_unlock(&d->mu);
}

/* 1 found, 0 not found, -1 could not be read (message into why) */
static int probe(struct common_kube *k, const struct common_kube_resource *r, const char *ns,
                 const char *name, json_t **obj, char *why, size_t why_size)
{
    struct common_error e;
    enum common_rc rc = common_kube_get(k, r, ns, name, obj, &e);
    if (rc == COMMON_OK)
        return 1;
    if (rc == COMMON_ENOTFOUND)
        return 0;
    snprintf(why, why_size, "%s", e.msg);
    return -1;
}

/* Kubeflow Trainer's controller beside ours (cmd/trainerdetect.h): looks once, with a client of
 * its own whose calls give up after 3 s and one retry (an unreachable API server delays the
 * start by seconds, not minutes), logs the verdict; returns 1 when serve must not start */
static int check_trainer(struct daemon *d, FILE *err)
{
    static const struct common_kube_resource mutating = {"admissionregistration.k8s.io", "v1",
                                                         "mutatingwebhookconfigurations", 0};
    static const struct common_kube_resource validating = {"admissionregistration.k8s.io", "v1",
                                                           "validatingwebhookconfigurations", 0};
    struct trainer_observed o = {0};
    struct trainer_decision dec;
    json_t *lease = NULL, *vw = NULL, *mw = NULL;
    char lease_why[COMMON_ERROR_MSG_MAX] = "", hook_why[COMMON_ERROR_MSG_MAX] = "";
    struct timespec ts;
    struct common_kubeconfig kc;
    struct common_kube_opts ko = common_kube_opts_default();
    struct common_kube *k = NULL;
    struct common_error e;

    ko.timeout_ms = 3000;
    ko.max_retries = 1;
    if (load_kubeconfig(&d->cfg, &kc, &e) == COMMON_OK) {
        k = common_kube_client_create(&kc, &ko, &e);
        common_kubeconfig_free(&kc);
    }
    if (!k) { /* connect_api read the same kubeconfig: out of memory at most */
        common_log(COMMON_LOG_WARN, "Kubeflow Trainer check skipped", "error", e.msg, NULL);
        return 0;
    }
    publish_client(d, &d->probe_kube, k, 0); /* a stop ends the probes at once */
    o.lease_namespace = d->cfg.trainer_lease_namespace;
    o.lease_found = probe(k, &common_kube_leases, o.lease_namespace, TRAINER_LEASE_NAME, &lease,
                          lease_why, sizeof(lease_why));
    o.lease = lease;
    o.validating_found =
        probe(k, &validating, NULL, TRAINER_VALIDATING_WEBHOOK, &vw, hook_why, sizeof(hook_why));
    o.mutating_found =
        probe(k, &mutating, NULL, TRAINER_MUTATING_WEBHOOK, &mw, hook_why, sizeof(hook_why));
    o.lease_error = lease_why[0] ? lease_why : NULL;
    o.webhook_error = hook_why[0] ? hook_why : NULL;
    clock_gettime(CLOCK_REALTIME, &ts);
    o.now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    trainer_detect_decide(&o, d->cfg.comp_reconciler, d->cfg.allow_trainer, &dec);
    json_decref(lease);
    json_decref(vw);
    json_decref(mw);
    publish_client(d, &d->probe_kube, NULL, 0);
    common_kube_client_destroy(k);
    if (stop_requested(d))
        return 0; /* cut short: no verdict to give */
    if (dec.refuse) {
        fprintf(err, "trainsched serve: %s\n", dec.message);
        return 1;
    }
    common_log(dec.warn ? COMMON_LOG_WARN : COMMON_LOG_INFO, "Kubeflow Trainer check", "verdict",
               trainer_verdict_name(dec.verdict), "detail", dec.message, NULL);
    return 0;
}

/* --trainjob-status, before the reconciler can start: the status server's own API client
 * (Trainer's: QPS 5, burst 10, so status reports never slow the reconciler) and the
 * reconciler's CA source. Returns 0 or serve's exit status. */
static int trainer_status_prepare(struct daemon *d, FILE *err)
{
    struct common_kubeconfig kc;
    struct common_kube_opts ko = common_kube_opts_default();
    struct common_error e;

    if (load_kubeconfig(&d->cfg, &kc, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: trainerStatus: %s\n", e.msg);
        return 1;
    }
    ko.qps = d->cfg.ts.qps;
    ko.burst = d->cfg.ts.burst;
    ko.timeout_ms = 10000; /* Trainer's write timeout */
    publish_client(d, &d->ss_kube, common_kube_client_create(&kc, &ko, &e), STOP_CALLS_MS);
    common_kubeconfig_free(&kc);
    d->ts_ca = trainer_status_ca_create(d->kube, d->cfg.ts.ca_file, d->cfg.certs.secret_namespace,
                                        d->cfg.certs.secret_name);
    if (!d->ss_kube || !d->ts_ca) {
        fprintf(err, "trainsched serve: trainerStatus: %s\n", d->ss_kube ? "out of memory" : e.msg);
        return 1;
    }
    return 0;
}

/* the status server on every replica, once the serving pair is there */
static int start_trainer_status(struct daemon *d, FILE *err)
{
    struct ss_server_opts so = {0};
    struct common_error e;

    so.kube = d->ss_kube;
    so.metrics = d->metrics;
    so.address = d->cfg.ts.address;
    so.tls_cert_file = d->cfg.tls_cert_file;
    so.tls_key_file = d->cfg.tls_key_file;
    d->ss = ss_server_create(&so, &e);
    if (!d->ss || ss_server_start(d->ss, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: trainerStatus %s: %s\n", d->cfg.ts.address, e.msg);
        return 1;
    }
    return 0;
}

int cmd_serve(int argc, char **argv, FILE *out, FILE *err)
{
    static struct daemon d; /* one per process */
    struct common_httpd_opts ho = {0};
    struct common_httpd *http = NULL;
    struct common_health *health = NULL;
    struct common_error e;
    enum common_log_level level;
    pthread_condattr_t ca;
    int status = 1, i, check_only = 0, bad_flags = 0;
    long long cert_mtime = 0;
    double next_cert_check = 0, next_cert_sync = 0;
    int64_t cert_next_step = 0;
    const char *config = NULL;

    memset(&d, 0, sizeof(d));
    d.started = time(NULL);
    pthread_mutex_init(&d.mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d.stop_cond, &ca);
    pthread_condattr_destroy(&ca);
    config_defaults(&d.cfg);
    /* --config first, so flags win whatever their order */
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(out);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0)
            return cmd_version(1, argv + i, out, err);
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config = argv[++i];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            config = argv[i] + 9;
    }
    if (config && load_config(&d.cfg, config, err))
        return 2;
    for (i = 1; i < argc; i++) {
        char flag[64], why[WHY_MAX];
        const char *v, *eq;
        int rc;
        if (strncmp(argv[i], "--", 2) != 0) {
            fprintf(err, "trainsched serve: unexpected argument \"%s\" (see --help)\n", argv[i]);
            return 2;
        }
        eq = strchr(argv[i], '=');
        if (eq) {
            snprintf(flag, sizeof(flag), "%.*s", (int)(eq - argv[i]), argv[i]);
            v = eq + 1;
        } else {
            snprintf(flag, sizeof(flag), "%s", argv[i]);
            if (strcmp(flag, "--leader-elect") == 0 || strcmp(flag, "--tls-managed") == 0 ||
                strcmp(flag, "--webhook-extender-wired") == 0 ||
                strcmp(flag, "--webhook-gang-gate") == 0 ||
                strcmp(flag, "--allow-trainer-controller") == 0 ||
                strcmp(flag, "--trainjob-status") == 0) {
                v = "true";
            } else if (strcmp(flag, "--check-config") == 0) {
                v = "";
            } else if (strcmp(flag, "--config") != 0 && !flag_known(flag)) {
                fprintf(err, "trainsched serve: unknown option %s (see --help)\n", flag);
                bad_flags++;
                continue;
            } else if (i + 1 < argc) {
                v = argv[++i];
            } else {
                fprintf(err, "trainsched serve: %s needs a value\n", flag);
                return 2;
            }
        }
        if (strcmp(flag, "--config") == 0)
            continue;
        if (strcmp(flag, "--check-config") == 0) {
            check_only = 1;
            continue;
        }
        rc = apply_setting(&d.cfg, flag, v, why);
        flag_given(&d.cfg, flag);
        if (rc == -2)
            fprintf(err, "trainsched serve: unknown option %s (see --help)\n", flag);
        else if (rc == -3)
            fprintf(err, "trainsched serve: %s: %s\n", flag, why);
        else if (rc)
            fprintf(err, "trainsched serve: %s: invalid value \"%s\": %s\n", flag, v, why);
        if (rc)
            bad_flags++; /* go on: every bad flag is reported, once */
    }
    if (bad_flags)
        return 2;
    if (d.cfg.certs.managed) {
        if (certmgr_settings_check(&d.cfg.certs, &e) != COMMON_OK) {
            fprintf(err, "trainsched serve: %s\n", e.msg);
            return 2;
        }
        certmgr_default_files(&d.cfg.certs, d.cfg.tls_cert_file, d.cfg.tls_key_file);
    }
    if (d.cfg.comp_webhook && (!d.cfg.tls_cert_file[0] || !d.cfg.tls_key_file[0])) {
        fprintf(err, "trainsched serve: webhook: --tls-cert-file and --tls-key-file are required "
                     "(the API server calls webhooks over HTTPS only; `trainsched certs` makes "
                     "them)\n");
        return 2;
    }
    if (d.cfg.ts.enabled && (!d.cfg.tls_cert_file[0] || !d.cfg.tls_key_file[0])) {
        fprintf(err, "trainsched serve: trainerStatus: --tls-cert-file and --tls-key-file (or "
                     "--tls-managed) are required: the status server serves HTTPS only\n");
        return 2;
    }
    if (d.cfg.ts.enabled &&
        trainer_status_url(&d.cfg.ts, d.cfg.certs.service, d.cfg.certs.secret_namespace, d.ts_url,
                           sizeof(d.ts_url))) {
        fprintf(err, "trainsched serve: trainerStatus.address \"%s\": no port\n", d.cfg.ts.address);
        return 2;
    }
    if (d.cfg.ext_backoff_max_s < d.cfg.ext_backoff_initial_s) {
        fprintf(err,
                "trainsched serve: extender.backoffMaxSeconds (%g) is below "
                "extender.backoffInitialSeconds (%g)\n",
                d.cfg.ext_backoff_max_s, d.cfg.ext_backoff_initial_s);
        return 2;
    }
    if (check_slurm(&d.cfg, err) || check_names(&d.cfg, err))
        return 2;
    if (!d.cfg.comp_reconciler && !d.cfg.comp_webhook && !d.cfg.comp_extender) {
        fprintf(err, "trainsched serve: components: nothing to run\n");
        return 2;
    }
    if (d.cfg.leader_elect && common_leader_timing_check(&d.cfg.timing, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: leader election: %s\n", e.msg);
        return 2;
    }
    if (check_only) {
        common_log_set_level(COMMON_LOG_WARN); /* the probe listeners' lines are noise here */
        if (check_environment(&d.cfg, err))
            return 2;
        print_config(&d.cfg, out);
        return 0;
    }
    common_log_parse_level(d.cfg.log_level, &level);
    common_log_set_level(level);

    /* signals are taken by the signal thread alone: block them before any thread starts */
    sigemptyset(&d.sigs);
    sigaddset(&d.sigs, SIGINT);
    sigaddset(&d.sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &d.sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    {
        /* held binds and watch connections are file descriptors: use the hard limit */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }

    if (connect_api(&d, err)) {
        common_kube_client_destroy(d.kube);
        return 1;
    }
    /* from here on a signal stops the daemon at any point of the start (a signal that came
     * before is pending and taken now) */
    if (pthread_create(&d.sig_thread, NULL, signal_thread, &d) != 0) {
        fprintf(err, "trainsched serve: cannot start the signal thread\n");
        goto out;
    }
    d.sig_started = 1;
    d.metrics = common_metrics_create();
    if (!d.metrics) {
        fprintf(err, "trainsched serve: out of memory\n");
        goto out;
    }
    common_metrics_process(d.metrics);
    common_metrics_gauge_func(d.metrics, "trainsched_leader",
                              "1 while this replica holds the reconciler's Lease", leader_gauge,
                              &d);
    common_metrics_gauge_func(d.metrics, "trainsched_workqueue_depth",
                              "TrainJob keys ready to be reconciled", queue_depth, &d);
    common_metrics_gauge_func(d.metrics, "trainsched_workqueue_delayed",
                              "TrainJob keys waiting for a backoff or a deadline", queue_delayed,
                              &d);
    common_metrics_gauge_func(d.metrics, "trainsched_workqueue_processing",
                              "TrainJob keys being reconciled now", queue_processing, &d);
    ho.address = d.cfg.http_address;
    http = common_httpd_create(&ho, &e);
    if (!http || common_health_install(http, d.metrics, &health, &e) != COMMON_OK ||
        (d.cfg.comp_reconciler &&
         common_health_add_check(health, "reconciler", ready_reconciler, &d) != 0) ||
        (d.cfg.comp_reconciler &&
         common_health_add_check(health, "leader-election", ready_election, &d) != 0) ||
        (d.cfg.comp_webhook &&
         common_health_add_check(health, "webhook", ready_webhook, &d) != 0) ||
        (d.cfg.comp_extender &&
         common_health_add_check(health, "extender", ready_extender, &d) != 0) ||
        common_httpd_start(http, &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: http %s: %s\n", d.cfg.http_address, e.msg);
        goto out;
    }
    if (!d.cfg.identity[0] &&
        common_leader_identity(d.cfg.identity, sizeof(d.cfg.identity), &e) != COMMON_OK) {
        fprintf(err, "trainsched serve: identity: %s\n", e.msg);
        goto out;
    }
    /* after /healthz is up: an unreachable API server makes these GETs retry for seconds */
    if ((d.cfg.comp_reconciler || d.cfg.comp_webhook) && check_trainer(&d, err))
        goto out;
    if (stop_requested(&d))
        goto out;
    d.events = common_events_create(d.kube, d.cfg.identity, NULL, &e);
    if (!d.events) {
        fprintf(err, "trainsched serve: events: %s\n", e.msg);
        goto out;
    }
    if (d.cfg.certs.managed) {
        struct certmgr_opts co = {d.kube, &d.cfg.certs, d.cfg.tls_cert_file, d.cfg.tls_key_file};
        d.cm = certmgr_create(&co, &e);
        if (!d.cm) {
            fprintf(err, "trainsched serve: tls: %s\n", e.msg);
            goto out;
        }
        /* HTTPS starts in the main loop once the files equal the Secret's pair */
        atomic_store(&d.cert_wait, d.cfg.comp_webhook);
    }
    if (d.cfg.ts.enabled && (status = trainer_status_prepare(&d, err)))
        goto out;
    status = 1;
    if (d.cfg.comp_extender) {
        int xrc = start_extender(&d, err);
        if (xrc) {
            status = xrc;
            goto out;
        }
    }
    if (d.cfg.comp_webhook && !d.cm) {
        int wrc = start_webhook(&d, err);
        if (wrc) {
            status = wrc;
            goto out;
        }
        cert_mtime = mtime_ns(d.cfg.tls_cert_file) + mtime_ns(d.cfg.tls_key_file);
    }
    common_log(COMMON_LOG_INFO, "trainsched serve started", "version", TS_VERSION, "identity",
               d.cfg.identity, "http", d.cfg.http_address, "https",
               d.cfg.comp_webhook || d.cfg.comp_extender ? d.cfg.https_address : "(off)",
               "leaderElection",
               !d.cfg.comp_reconciler && !d.cm ? "(no reconciler)"
               : d.cfg.leader_elect            ? "on"
                                               : "off",
               NULL);
    if (!d.cfg.comp_reconciler && !d.cm) {
        /* webhook only: nothing to lead */
    } else if (d.cfg.leader_elect) {
        struct common_leader_callbacks cb = {started_leading, stopped_leading, new_leader, &d};
        d.leader = common_leader_start(d.lease_kube, d.cfg.lease_namespace, d.cfg.lease_name,
                                       d.cfg.identity, &cb, &d.cfg.timing, &e);
        if (!d.leader) {
            fprintf(err, "trainsched serve: leader election: %s\n", e.msg);
            goto out;
        }
    } else {
        atomic_store(&d.want_lead, 1);
    }

    /* the main loop: signals, and leadership changes turned into reconciler start/stop */
    for (;;) {
        int want;
        if (wait_stop(&d, 200))
            break; /* the signal thread logged it */
        want = atomic_load(&d.want_lead);
        /* certificate files replaced (a Secret volume, `trainsched certs`): new connections get
         * the new pair, open ones keep theirs */
        if (d.cfg.ts.enabled && !d.ss && (!d.cm || certmgr_serving_ready(d.cm))) {
            int trc = start_trainer_status(&d, err);
            if (trc) {
                status = trc;
                goto out;
            }
            cert_mtime = mtime_ns(d.cfg.tls_cert_file) + mtime_ns(d.cfg.tls_key_file);
        }
        if ((d.https || d.ss) && mono_now() >= next_cert_check) {
            long long m = mtime_ns(d.cfg.tls_cert_file) + mtime_ns(d.cfg.tls_key_file);
            next_cert_check = mono_now() + d.cfg.tls_reload_s;
            if (m != cert_mtime) {
                if ((!d.https || common_httpd_reload_tls(d.https, &e) == COMMON_OK) &&
                    (!d.ss || ss_server_reload_tls(d.ss, &e) == COMMON_OK)) {
                    cert_mtime = m;
                    common_log(COMMON_LOG_INFO, "serving certificate reloaded", "cert",
                               d.cfg.tls_cert_file, NULL);
                } else {
                    /* a half-written pair: keep the old one and look again next time */
                    common_log(COMMON_LOG_WARN, "serving certificate not reloaded", "error", e.msg,
                               NULL);
                }
            }
        }
        /* managed certificates: the leader rotates, every replica loads (cmd/certmgr.h) */
        if (d.cm) {
            time_t wall = time(NULL);
            if (!want)
                cert_next_step = 0;
            else if ((int64_t)wall >= cert_next_step)
                cert_next_step = certmgr_leader_step(d.cm, (int64_t)wall);
            if (mono_now() >= next_cert_sync) {
                next_cert_sync = mono_now() + d.cfg.tls_reload_s;
                if (certmgr_replica_sync(d.cm) > 0)
                    next_cert_check = 0; /* reload now, not a period later */
            }
            if (d.cfg.comp_webhook && !d.https && certmgr_serving_ready(d.cm)) {
                int wrc = start_webhook(&d, err);
                if (wrc) {
                    status = wrc;
                    goto out;
                }
                cert_mtime = mtime_ns(d.cfg.tls_cert_file) + mtime_ns(d.cfg.tls_key_file);
                atomic_store(&d.cert_wait, 0);
                common_log(COMMON_LOG_INFO, "webhook serving", "https", d.cfg.https_address, NULL);
            }
        }
        if (!d.cfg.comp_reconciler) {
            /* the Lease only decides who rotates certificates */
        } else if (want && !atomic_load(&d.leading)) {
            if (start_reconciler(&d) != 0 && wait_stop(&d, 1000)) /* the API may be down */
                break;
        } else if (!want && atomic_load(&d.leading)) {
            stop_reconciler(&d);
        }
    }
    status = 0;
out:
    if (stop_requested(&d))
        status = 0; /* what failed meanwhile failed because the stop cut its calls */
    if (d.sig_started) {
        /* not stopped by a signal: wake the signal thread, which cuts the clients' calls as for
         * a signal (the exit is as prompt); joined before any client is destroyed */
        pthread_mutex_lock(&d.mu);
        d.exiting = 1;
        pthread_mutex_unlock(&d.mu);
        if (!stop_requested(&d))
            pthread_kill(d.sig_thread, SIGTERM);
        pthread_join(d.sig_thread, NULL);
    }
    stop_reconciler(&d);
    common_leader_stop(d.leader, COMMON_LEADER_RELEASE);
    extender_server_stop(d.ext); /* answers held binds before the server stops */
    if (d.https) {
        common_httpd_stop(d.https);
        common_httpd_destroy(d.https);
    }
    webhook_server_destroy(d.webhook);
    common_kube_client_destroy(d.wh_kube);
    extender_server_destroy(d.ext);
    ss_server_destroy(d.ss);
    common_kube_client_destroy(d.ss_kube);
    trainer_status_ca_destroy(d.ts_ca);
    slurm_sync_destroy(d.slurm);
    common_informer_request_stop(d.tr_inf);
    common_informer_request_stop(d.ctr_inf);
    common_informer_request_stop(d.js_inf);
    common_informer_request_stop(d.pc_inf);
    common_informer_destroy(d.tr_inf);
    common_informer_destroy(d.ctr_inf);
    common_informer_destroy(d.js_inf);
    common_informer_destroy(d.pc_inf);
    if (d.events) {
        common_events_flush(d.events, 2000);
        common_events_destroy(d.events);
    }
    if (http) {
        common_httpd_stop(http);
        common_httpd_destroy(http);
    }
    common_health_destroy(health);
    common_metrics_destroy(d.metrics);
    certmgr_destroy(d.cm);
    common_kube_client_destroy(d.kube);
    common_kube_client_destroy(d.lease_kube);
    pthread_cond_destroy(&d.stop_cond);
    pthread_mutex_destroy(&d.mu);
    return status;
}
