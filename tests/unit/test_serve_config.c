/*
 * tests/unit/test_serve_config.c - `trainsched serve --check-config`: the settings file and
 * flags as the daemon reads them, run through the built binary (no cluster needed).
 * The ConfigMap shipped in manifests/controller/config.yaml must be accepted as is.
 * --check-config also binds the addresses and reads the kubeconfig, so every run gets free
 * loopback ports (port 0) and a readable kubeconfig unless the case is about those.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/yaml.h"
#include "testutil.h"

/* run `serve` with args (a shell-quoted string) after the flags in front (may be ""), output
 * (stdout+stderr) into out */
static int run_after(const char *front, const char *args, char *out, size_t size)
{
    char cmd[4096];
    FILE *p;
    size_t n = 0;
    int status;

    snprintf(cmd, sizeof(cmd), "'%s' serve %s %s 2>&1", TS_BINARY, front, args);
    p = popen(cmd, "r");
    ck_assert(p != NULL);
    while (n + 1 < size && fgets(out + n, (int)(size - n), p))
        n += strlen(out + n);
    out[n] = 0;
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* run the binary with args, free loopback ports for both addresses unless args say otherwise */
static int run(const char *args, char *out, size_t size)
{
    return run_after("--http-address 127.0.0.1:0 --https-address 127.0.0.1:0", args, out, size);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs(text, f);
    fclose(f);
}

START_TEST(shipped_configmap_is_valid)
{
    struct common_yaml_docs d;
    struct common_error err;
    const char *cfg;
    char path[] = "/tmp/ts-config-XXXXXX", args[512], out[8192];
    int fd;

    ck_assert_msg(common_yaml_load_file(TS_SOURCE_DIR "/manifests/controller/config.yaml", NULL, &d,
                                        &err) == COMMON_OK,
                  "%s", err.msg);
    cfg = json_string_value(json_object_get(json_object_get(d.docs[0], "data"), "config.yaml"));
    ck_assert(cfg != NULL);
    fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    write_file(path, cfg);
    common_yaml_docs_free(&d);
    snprintf(args, sizeof(args), "--config '%s' --check-config", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "leaseNamespace: \"trainsched-system\"") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "workers: 4") != NULL, "%s", out);
    /* a flag wins over the file, whatever the order */
    snprintf(args, sizeof(args), "--workers 7 --config '%s' --check-config", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "workers: 7") != NULL, "%s", out);
    unlink(path);
}
END_TEST

START_TEST(bad_settings_name_the_key)
{
    char path[] = "/tmp/ts-config-XXXXXX", args[512], out[8192];
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);

    write_file(path, "leaderElection:\n  leaseNam: x\n");
    snprintf(args, sizeof(args), "--config '%s' --check-config", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "leaderElection.leaseNam: unknown setting") != NULL, "%s", out);

    write_file(path, "reconciler:\n  workers: many\n");
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "reconciler.workers: invalid value \"many\"") != NULL, "%s", out);

    write_file(path, "components: [reconciler, scheduler]\n");
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "unknown component \"scheduler\"") != NULL, "%s", out);

    write_file(path, "- a\n- b\n");
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "want one YAML mapping") != NULL, "%s", out);
    unlink(path);

    ck_assert_int_eq(run("--check-config --leader-elect-lease-duration 5 "
                         "--leader-elect-renew-deadline 10",
                         out, sizeof(out)),
                     2);
    ck_assert_msg(strstr(out, "leader election:") != NULL, "%s", out);
    /* the webhook needs its TLS pair (the API server calls webhooks over HTTPS only) */
    ck_assert_int_eq(run("--check-config --components webhook", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--tls-cert-file and --tls-key-file are required") != NULL, "%s",
                  out);
    ck_assert_int_eq(
        run("--check-config --components extender --extender-bind-timeout 0", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--extender-bind-timeout: invalid value \"0\"") != NULL, "%s", out);
    ck_assert_int_eq(run("--check-config --components extender", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "bindHTTPTimeoutSeconds: 630") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "backoffInitialSeconds: 10\n  backoffMaxSeconds: 300") != NULL, "%s",
                  out);
    ck_assert_int_eq(run("--check-config --components extender --extender-backoff-initial 2 "
                         "--extender-backoff-max 30",
                         out, sizeof(out)),
                     0);
    ck_assert_msg(strstr(out, "backoffInitialSeconds: 2\n  backoffMaxSeconds: 30") != NULL, "%s",
                  out);
    ck_assert_int_eq(run("--check-config --components extender --extender-backoff-initial 20 "
                         "--extender-backoff-max 5",
                         out, sizeof(out)),
                     2);
    ck_assert_msg(strstr(out, "extender.backoffMaxSeconds (5) is below") != NULL, "%s", out);
    ck_assert_int_eq(run("--no-such-flag x", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "unknown option --no-such-flag") != NULL, "%s", out);
    ck_assert_int_eq(run("--config /nonexistent/trainsched.yaml", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "/nonexistent/trainsched.yaml") != NULL, "%s", out);
}
END_TEST

/* extender topologies (docs/topology.md): the file's list and the repeatable flag, checked */
/* names that end up in objects are checked as the API server checks them: the gang scheduler
 * name (pods' spec.schedulerName) and the Volcano queue (a cluster-scoped Queue) are DNS-1123
 * subdomains, topology levels are node label keys; a topology name given twice by flags or
 * twice in the file is an error, not last-wins */
START_TEST(names_and_topologies_are_checked_as_kubernetes_checks_them)
{
    char path[] = "/tmp/ts-config-XXXXXX", args[512], out[8192];
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);

    ck_assert_int_eq(run("--check-config --components extender --gang-scheduler-name 'Bad Name'",
                         out, sizeof(out)),
                     2);
    ck_assert_msg(strstr(out, "--gang-scheduler-name") && strstr(out, "RFC 1123 subdomain"), "%s",
                  out);
    ck_assert_int_eq(run("--check-config --components extender --gang-scheduler-name "
                         "trainsched-gang",
                         out, sizeof(out)),
                     0);
    ck_assert_int_eq(
        run("--check-config --components extender --volcano-queue 'Bad Q'", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--volcano-queue") && strstr(out, "\"Bad Q\""), "%s", out);
    ck_assert_int_eq(run("--check-config --components extender --extender-topology "
                         "t='example.com/rack,bad key'",
                         out, sizeof(out)),
                     2);
    ck_assert_msg(strstr(out, "level 1 \"bad key\" is not a node label key"), "%s", out);
    ck_assert_int_eq(run("--check-config --components extender --extender-topology "
                         "t=example.com/rack --extender-topology t=example.com/block",
                         out, sizeof(out)),
                     2);
    ck_assert_msg(strstr(out, "topology \"t\" is given twice"), "%s", out);
    write_file(path, "extender:\n  topologies:\n"
                     "    - {name: t, levels: [example.com/rack]}\n"
                     "    - {name: t, levels: [example.com/block]}\n");
    snprintf(args, sizeof(args), "--config '%s' --check-config --components extender", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "extender.topologies[1]: topology \"t\" is already declared at "
                              "extender.topologies[0]"),
                  "%s", out);
    write_file(path, "backends:\n  volcano:\n    queue: Bad Q\n");
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "backends.volcano.queue"), "%s", out);
    unlink(path);
}
END_TEST

START_TEST(topologies_from_file_and_flags)
{
    char path[] = "/tmp/ts-config-XXXXXX", args[512], out[8192];
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);

    write_file(path, "extender:\n  topologies:\n"
                     "    - {name: default, levels: [example.com/block, example.com/rack, "
                     "kubernetes.io/hostname]}\n"
                     "    - {name: nvlink, levels: [nvidia.com/gpu.clique]}\n");
    snprintf(args, sizeof(args), "--config '%s' --check-config --components extender", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "- name: \"default\"\n    levels: [\"example.com/block\", "
                              "\"example.com/rack\", \"kubernetes.io/hostname\"]") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "- name: \"nvlink\"\n    levels: [\"nvidia.com/gpu.clique\"]") !=
                      NULL,
                  "%s", out);
    /* a flag with the same name replaces the file's entry */
    snprintf(args, sizeof(args),
             "--config '%s' --check-config --components extender --extender-topology "
             "nvlink=example.com/rack",
             path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "- name: \"nvlink\"\n    levels: [\"example.com/rack\"]") != NULL,
                  "%s", out);
    write_file(path, "extender:\n  topologies:\n    - {name: bad, levels: [kubernetes.io/hostname, "
                     "example.com/rack]}\n");
    snprintf(args, sizeof(args), "--config '%s' --check-config --components extender", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "kubernetes.io/hostname must be the last level") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "extender.topologies[0]") != NULL, "%s", out);
    write_file(path, "extender:\n  topologies:\n    - {name: x, levelz: [a]}\n");
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "want {name: NAME, levels: [LABEL, ...]}") != NULL, "%s", out);
    unlink(path);
    ck_assert_int_eq(run("--check-config --components extender --extender-topology "
                         "dup=example.com/rack,example.com/rack",
                         out, sizeof(out)),
                     2);
    ck_assert_msg(strstr(out, "is listed twice") != NULL, "%s", out);
    ck_assert_int_eq(
        run("--check-config --components extender --extender-topology rack", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "want NAME=LEVEL,LEVEL,...") != NULL, "%s", out);
}
END_TEST

START_TEST(slurm_settings_from_file_and_flags)
{
    char path[] = "/tmp/ts-config-XXXXXX", args[512], out[8192];
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);

    char token[] = "/tmp/ts-token-XXXXXX", text[1024];
    fd = mkstemp(token);
    ck_assert(fd >= 0);
    close(fd);
    write_file(token, "SLURM_JWT=eyJ.a.b\n");
    snprintf(text, sizeof(text),
             "slurm:\n  url: http://127.0.0.1:6820\n  user: trainer\n"
             "  tokenFile: %s\n  nodeLabel: example.com/slurm-node\n  partition: gpu\n",
             token);
    write_file(path, text);
    snprintf(args, sizeof(args),
             "--config '%s' --check-config --components extender --slurm-qos high", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    snprintf(text, sizeof(text),
             "slurm:\n  url: \"http://127.0.0.1:6820\"\n  user: \"trainer\"\n  tokenFile: \"%s\"",
             token);
    ck_assert_msg(strstr(out, text) != NULL, "%s", out);
    ck_assert_msg(strstr(out, "  nodeLabel: \"example.com/slurm-node\"\n  partition: \"gpu\"\n"
                              "  account: \"\"\n  qos: \"high\"\n") != NULL,
                  "%s", out);
    /* a URL without a way to authenticate is refused, naming what is missing */
    write_file(path, "slurm:\n  url: http://127.0.0.1:6820\n  user: trainer\n");
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "slurm.url needs slurm.user and one of slurm.tokenFile or "
                              "slurm.jwtKeyFile") != NULL,
                  "%s", out);
    write_file(path, "slurm:\n  uri: http://127.0.0.1:6820\n");
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "slurm.uri: unknown setting") != NULL, "%s", out);
    unlink(path);
    unlink(token);
}
END_TEST

/* the Slurm settings are checked before serve starts: each bad one named with its value, exit
 * 2; a Slurm backend without the extender wired is a warning; backends.default slurm needs a
 * slurm.url */
START_TEST(slurm_settings_are_checked_before_start)
{
    static const struct {
        const char *flags; /* after the URL, user and token file flags */
        const char *url;
        const char *want;
    } bad[] = {
        {"", "ftp://127.0.0.1:6820",
         "slurm.url (--slurm-url) \"ftp://127.0.0.1:6820\": must start "
         "with http:// or https://"},
        {"", "127.0.0.1:6820", "must start with http:// or https://"},
        {"", "http://:6820", "slurm.url (--slurm-url) \"http://:6820\": no host"},
        {"", "http://127.0.0.1:99999", "the port is not a number from 1 to 65535"},
        {"", "http://127.0.0.1:68x0", "the port is not a number from 1 to 65535"},
        {"", "http://127.0.0.1:0", "the port is not a number from 1 to 65535"},
        {"", "https://root:pw@127.0.0.1:6820", "a user name or password in the URL"},
        {"--slurm-api-version v0.0.37", "http://127.0.0.1:6820",
         "slurm.apiVersion (--slurm-api-version) \"v0.0.37\": not a version this client speaks "
         "(v0.0.38 to v0.0.44)"},
        {"--slurm-api-version v0.0.45", "http://127.0.0.1:6820", "\"v0.0.45\": not a version"},
        {"--slurm-api-version 0.0.40", "http://127.0.0.1:6820", "\"0.0.40\": not a version"},
        {"--slurm-jwt-key-file /etc/hostname", "http://127.0.0.1:6820",
         "give exactly one with slurm.url (both are set)"},
    };
    char token[] = "/tmp/ts-token-XXXXXX", args[1024], out[8192];
    int fd = mkstemp(token);

    ck_assert(fd >= 0);
    close(fd);
    write_file(token, "SLURM_JWT=eyJ.a.b\n");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(args, sizeof(args),
                 "--check-config --webhook-extender-wired --slurm-url '%s' --slurm-user trainer "
                 "--slurm-token-file '%s' %s",
                 bad[i].url, token, bad[i].flags);
        ck_assert_int_eq(run(args, out, sizeof(out)), 2);
        ck_assert_msg(strstr(out, bad[i].want) != NULL, "%s: %s", args, out);
    }
    /* a Slurm setting without slurm.url was accepted and silently dropped */
    ck_assert_int_eq(run("--check-config --slurm-partition gpu", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "slurm.partition (--slurm-partition) is set but slurm.url "
                              "(--slurm-url) is not") != NULL,
                  "%s", out);
    /* valid: IPv6 host, https, a path; with the extender wired no warning */
    snprintf(args, sizeof(args),
             "--check-config --webhook-extender-wired --slurm-url https://[::1]:6820/ "
             "--slurm-user trainer --slurm-token-file '%s' --slurm-api-version v0.0.44",
             token);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "warning") == NULL, "%s", out);
    /* without it: a warning naming the setting, still accepted */
    snprintf(args, sizeof(args),
             "--check-config --slurm-url http://127.0.0.1:6820 --slurm-user trainer "
             "--slurm-token-file '%s'",
             token);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "warning: slurm.url is set but webhook.extenderWired "
                              "(--webhook-extender-wired) is false") != NULL,
                  "%s", out);
    /* the token file: missing, empty, only the prefix */
    ck_assert_int_eq(run("--check-config --slurm-url http://127.0.0.1:6820 --slurm-user trainer "
                         "--slurm-token-file /nonexistent/token",
                         out, sizeof(out)),
                     2);
    ck_assert_msg(strstr(out, "slurm.tokenFile (--slurm-token-file) \"/nonexistent/token\"") !=
                      NULL,
                  "%s", out);
    write_file(token, "SLURM_JWT=\n");
    snprintf(args, sizeof(args),
             "--check-config --slurm-url http://127.0.0.1:6820 --slurm-user trainer "
             "--slurm-token-file '%s'",
             token);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "the file is empty") != NULL, "%s", out);
    write_file(token, "");
    snprintf(args, sizeof(args),
             "--check-config --slurm-url http://127.0.0.1:6820 --slurm-user trainer "
             "--slurm-jwt-key-file '%s'",
             token);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "slurm.jwtKeyFile (--slurm-jwt-key-file)") != NULL &&
                      strstr(out, "the file is empty") != NULL,
                  "%s", out);
    /* backends.default slurm without slurm.url: refused naming both */
    ck_assert_int_eq(run("--check-config --default-backend slurm", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "backends.default (--default-backend) is slurm but slurm.url "
                              "(--slurm-url) is not set") != NULL,
                  "%s", out);
    unlink(token);
}
END_TEST

/* what serve would fail on at once: each a message naming it and exit 2 */
START_TEST(check_config_checks_addresses_files_and_the_kubeconfig)
{
    char out[8192], args[1024], cert[] = "/tmp/ts-cert-XXXXXX";
    int fd;

    /* a kubeconfig that cannot be read */
    ck_assert_int_eq(run("--check-config --kubeconfig /nonexistent/kubeconfig", out, sizeof(out)),
                     2);
    ck_assert_msg(strstr(out, "kubeconfig: /nonexistent/kubeconfig") != NULL, "%s", out);
    /* an address that does not parse */
    ck_assert_int_eq(run("--check-config --http-address 127.0.0.1:99999", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--http-address 127.0.0.1:99999") && strstr(out, "bad port"), "%s",
                  out);
    /* TLS files that are not there, for the webhook */
    ck_assert_int_eq(run("--check-config --components webhook --tls-cert-file /nonexistent/tls.crt "
                         "--tls-key-file /nonexistent/tls.key",
                         out, sizeof(out)),
                     2);
    ck_assert_msg(strstr(out, "--https-address") && strstr(out, "/nonexistent/tls.crt"), "%s", out);
    /* TLS files that are not PEM */
    fd = mkstemp(cert);
    ck_assert(fd >= 0);
    ck_assert_int_eq(write(fd, "not a certificate\n", 18), 18);
    close(fd);
    snprintf(args, sizeof(args),
             "--check-config --components webhook --tls-cert-file '%s' --tls-key-file '%s'", cert,
             cert);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--https-address") != NULL, "%s", out);
    unlink(cert);
    /* all good: the settings are printed */
    ck_assert_int_eq(run("--check-config", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "httpAddress: \"127.0.0.1:0\"") != NULL, "%s", out);
}
END_TEST

/* a CA and serving pair (tls.crt, tls.key, ca.crt) for 127.0.0.1 in a new folder dir */
static void make_certs(char *dir)
{
    char cmd[512];

    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(cmd, sizeof(cmd),
             "'%s' certs --service trainsched-controller --namespace trainsched-system --ip "
             "127.0.0.1 --out '%s' >/dev/null 2>&1",
             TS_BINARY, dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* --trainjob-status-url url (TLS pair in dir) is refused with want in the output */
static void url_refused(const char *dir, const char *url, const char *want)
{
    char out[8192], args[1024];

    snprintf(args, sizeof(args),
             "--check-config --tls-cert-file '%s/tls.crt' --tls-key-file '%s/tls.key' "
             "--trainjob-status --trainjob-status-url '%s'",
             dir, dir, url);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
}

/* --trainjob-status (docs/trainer-status.md): off by default, needs the TLS pair, its settings
 * from the file and flags, bad values named, its address bound by --check-config */
START_TEST(trainer_status_settings)
{
    char out[8192], args[1024], path[] = "/tmp/ts-config-XXXXXX", dir[] = "/tmp/ts-certs-XXXXXX";
    int fd;

    ck_assert_int_eq(run("--check-config", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "trainerStatus:\n  enabled: false\n  address: \":10443\"") != NULL,
                  "%s", out);
    ck_assert_int_eq(run("--check-config --trainjob-status", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "trainerStatus: --tls-cert-file and --tls-key-file") != NULL, "%s",
                  out);
    make_certs(dir);
    fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    write_file(path, "trainerStatus:\n  enabled: true\n  address: \"127.0.0.1:0\"\n"
                     "  qps: 7\n  url: \"https://status.example:8443\"\n");
    snprintf(args, sizeof(args),
             "--config '%s' --check-config --tls-cert-file '%s/tls.crt' --tls-key-file "
             "'%s/tls.key' --trainjob-status-burst 20",
             path, dir, dir);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "trainerStatus:\n  enabled: true\n  address: \"127.0.0.1:0\"\n"
                              "  url: \"https://status.example:8443\"\n  caFile: \"\"\n"
                              "  qps: 7\n  burst: 20\n") != NULL,
                  "%s", out);
    /* the same check as render's: no path, query or fragment; a port in range */
    url_refused(dir, "https://x.example/path",
                "--trainjob-status-url: invalid value \"https://x.example/path\": want "
                "https://HOST[:PORT] "
                "without a path, query or fragment");
    url_refused(dir, "https://x.example:99999",
                "--trainjob-status-url: invalid value \"https://x.example:99999\": want "
                "https://HOST[:PORT]: "
                "port must be 1-65535");
    /* the host: a DNS name (any case) or an address; spaces, '!', '%', a user, a port with a
     * leading zero, non-hex IPv6 were accepted and written into the pods' env */
    url_refused(dir, "https://a b", "want https://HOST[:PORT]: host \"a b\": a lowercase RFC 1123");
    url_refused(dir, "https://a%20b", "host \"a%20b\"");
    url_refused(dir, "https://x:00443", "port must be 1-65535");
    url_refused(dir, "https://[::1zz]", "bad [IPv6] host");
    url_refused(dir, "https://user@x", "no user name or password in the URL");
    ck_assert_int_eq(run("--check-config --trainjob-status-burst 0.5", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--trainjob-status-burst: invalid value \"0.5\""), "%s", out);
    /* its address is bound like the others: a bad port is found */
    snprintf(args, sizeof(args),
             "--check-config --tls-cert-file '%s/tls.crt' --tls-key-file '%s/tls.key' "
             "--trainjob-status --trainjob-status-address 127.0.0.1:99999",
             dir, dir);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--trainjob-status-address 127.0.0.1:99999"), "%s", out);
    unlink(path);
    snprintf(args, sizeof(args), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(args), 0);
}
END_TEST

/* what --check-config prints is a settings file --config takes back unchanged, backends
 * section included (docs/serve.md's table) */
START_TEST(check_config_output_round_trips_through_config)
{
    char out[16384], again[16384], args[512], path[] = "/tmp/ts-config-XXXXXX";
    int fd = mkstemp(path);

    ck_assert(fd >= 0);
    close(fd);
    write_file(path, "backends:\n  default: native\n");
    snprintf(args, sizeof(args), "--config '%s' --check-config", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "backends:\n  default: \"native\"\n") != NULL, "%s", out);
    write_file(path, out);
    ck_assert_int_eq(run(args, again, sizeof(again)), 0);
    ck_assert_str_eq(again, out);
    unlink(path);
}
END_TEST

/* strings with quotes, a backslash, ": " and " #" are printed so that --config reads back the
 * same values (they were printed raw: the file did not parse, or a comment ate the rest) */
START_TEST(check_config_output_quotes_strings_that_need_it)
{
    char out[16384], again[16384], args[512], path[] = "/tmp/ts-config-XXXXXX";
    int fd = mkstemp(path);

    ck_assert(fd >= 0);
    close(fd);
    ck_assert_int_eq(
        run("--check-config --identity 'id\"x\\' --field-manager 'fm: x #y'", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "  identity: \"id\\\"x\\\\\"\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "  fieldManager: \"fm: x #y\"\n") != NULL, "%s", out);
    write_file(path, out);
    snprintf(args, sizeof(args), "--config '%s' --check-config", path);
    ck_assert_int_eq(run(args, again, sizeof(again)), 0);
    ck_assert_str_eq(again, out);
    unlink(path);
}
END_TEST

/* names and namespaces that go into API paths are checked at --check-config (they were accepted
 * and the daemon retried a malformed URL forever), $POD_NAMESPACE too; an unknown flag never
 * swallows the next argument; serve --version prints the version */
START_TEST(names_unknown_flags_and_version)
{
    char out[16384];

    ck_assert_int_eq(
        run("--check-config --leader-elect-lease-name '../../x y' --namespace 'Bad NS' "
            "--tls-secret-namespace x/y",
            out, sizeof(out)),
        2);
    ck_assert_msg(strstr(out, "leaderElection.leaseName (--leader-elect-lease-name) \"../../x y\": "
                              "a lowercase RFC 1123 subdomain") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "reconciler.namespace (--namespace) \"Bad NS\": a lowercase RFC 1123 "
                              "label") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out,
                         "tls.secretNamespace (--tls-secret-namespace; default $POD_NAMESPACE) "
                         "\"x/y\"") != NULL,
                  "%s", out);
    ck_assert_int_eq(run("--check-config --namespace ''", out, sizeof(out)), 0);
    /* an empty field manager is the default, and --check-config says which */
    ck_assert_int_eq(run("--check-config --field-manager ''", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "fieldManager: \"trainsched\"") != NULL, "%s", out);
    ck_assert_int_eq(run("--check-config --not-a-flag --workers 3", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "unknown option --not-a-flag (see --help)") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "unexpected argument") == NULL, "%s", out);
    ck_assert_int_eq(run("--check-config --not-a-flag", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "needs a value") == NULL, "%s", out);
    ck_assert_int_eq(run("--version", out, sizeof(out)), 0);
    ck_assert_msg(strncmp(out, "trainsched ", 11) == 0, "%s", out);
    ck_assert_int_eq(setenv("POD_NAMESPACE", "Bad_NS!", 1), 0);
    ck_assert_int_eq(run("--check-config", out, sizeof(out)), 2);
    unsetenv("POD_NAMESPACE");
    ck_assert_msg(strstr(out, "leaderElection.leaseNamespace (--leader-elect-namespace; default "
                              "$POD_NAMESPACE) \"Bad_NS!\"") != NULL,
                  "%s", out);
}
END_TEST

/* the volcano backend's settings sit under backends.volcano in the settings file; a bad tier
 * mapping is refused naming the setting and the item */
START_TEST(volcano_settings_load_from_their_section_and_a_bad_mapping_is_refused)
{
    char out[16384], args[512], path[] = "/tmp/ts-config-XXXXXX";
    int fd = mkstemp(path);

    ck_assert(fd >= 0);
    close(fd);
    write_file(path,
               "backends:\n  volcano:\n    queue: team-a\n    tiers: \"example.com/rack=1\"\n");
    snprintf(args, sizeof(args), "--config '%s' --check-config", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "  volcano:\n    queue: \"team-a\"\n    tiers: "
                              "\"example.com/rack=1\"\n") != NULL,
                  "%s", out);
    write_file(path, "backends:\n  volcano:\n    tiers: \"example.com/rack=0\"\n");
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "backends.volcano.tiers: Invalid value: \"example.com/rack=0\"") !=
                      NULL,
                  "%s", out);
    unlink(path);
}
END_TEST

/* webhook.gangGate: on by default; off from the file; a flag wins over the file either way */
START_TEST(webhook_gang_gate_defaults_on_and_is_set_by_file_and_flag)
{
    char out[16384], args[512], path[] = "/tmp/ts-config-XXXXXX";
    int fd = mkstemp(path);

    ck_assert(fd >= 0);
    close(fd);
    ck_assert_int_eq(run("--check-config --webhook-extender-wired", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "  extenderWired: true\n  gangGate: true\n") != NULL, "%s", out);
    write_file(path, "webhook:\n  extenderWired: true\n  gangGate: false\n");
    snprintf(args, sizeof(args), "--config '%s' --check-config", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "  extenderWired: true\n  gangGate: false\n") != NULL, "%s", out);
    snprintf(args, sizeof(args), "--config '%s' --check-config --webhook-gang-gate", path);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "  gangGate: true\n") != NULL, "%s", out);
    ck_assert_int_eq(run("--check-config --webhook-gang-gate=false", out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "  gangGate: false\n") != NULL, "%s", out);
    ck_assert_int_eq(run("--check-config --webhook-gang-gate=maybe", out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--webhook-gang-gate") != NULL, "%s", out);
    unlink(path);
}
END_TEST

/* every bad flag is reported, each once (the backend's message names the flag itself) */
START_TEST(check_config_reports_each_bad_flag_once)
{
    char out[8192];
    const char *p;
    int n = 0;

    ck_assert_int_eq(
        run("--check-config --default-backend bogus --trainjob-status-burst x", out, sizeof(out)),
        2);
    for (p = out; (p = strstr(p, "bogus")) != NULL; p++)
        n++;
    ck_assert_msg(n == 1, "%s", out);
    ck_assert_msg(strstr(out, "--default-backend: backends.default: Unsupported value: \"bogus\""),
                  "%s", out);
    ck_assert_msg(strstr(out, "--trainjob-status-burst: invalid value \"x\""), "%s", out);
}
END_TEST

/* --trainjob-status-ca-file is read and checked as serve would: a missing file, a file without
 * a certificate are refused naming the flag and the file; the listeners' addresses differ */
START_TEST(check_config_checks_the_trainer_status_ca_file_and_addresses)
{
    char out[8192], args[1024], dir[] = "/tmp/ts-certs-XXXXXX", tls[600];

    make_certs(dir);
    snprintf(tls, sizeof(tls),
             "--tls-cert-file '%s/tls.crt' --tls-key-file '%s/tls.key' --trainjob-status "
             "--trainjob-status-address 127.0.0.1:0",
             dir, dir);
    snprintf(args, sizeof(args), "--check-config %s --trainjob-status-ca-file /nonexistent", tls);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--trainjob-status-ca-file: ") && strstr(out, "/nonexistent"), "%s",
                  out);
    snprintf(args, sizeof(args), "--check-config %s --trainjob-status-ca-file '%s/tls.key'", tls,
             dir);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--trainjob-status-ca-file: ") &&
                      strstr(out, "/tls.key: no PEM certificate in the file"),
                  "%s", out);
    snprintf(args, sizeof(args), "--check-config %s --trainjob-status-ca-file '%s/tls.crt'", tls,
             dir);
    ck_assert_int_eq(run(args, out, sizeof(out)), 0);
    /* its own address equal to the HTTPS or the HTTP one */
    snprintf(args, sizeof(args),
             "--check-config %s --components webhook --trainjob-status-address 127.0.0.1:18443 "
             "--https-address 127.0.0.1:18443",
             tls);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--trainjob-status-address 127.0.0.1:18443 and --https-address "
                              "127.0.0.1:18443 are the same address"),
                  "%s", out);
    snprintf(args, sizeof(args),
             "--check-config %s --trainjob-status-address :18444 --http-address 127.0.0.1:18444",
             tls);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--trainjob-status-address :18444 and --http-address "
                              "127.0.0.1:18444 are the same address"),
                  "%s", out);
    snprintf(args, sizeof(args), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(args), 0);
}
END_TEST

/* serve with args (after writing text into path, when given) exits 2 with one line holding
 * part1 and part2 (NULL: nothing more) */
static void refused_once(const char *path, const char *text, const char *args, const char *part1,
                         const char *part2)
{
    char out[8192];
    if (path)
        write_file(path, text);
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(count_lines(out) == 1, "not one line: %s", out);
    ck_assert_msg(strstr(out, part1) && (!part2 || strstr(out, part2)), "want \"%s\": %s", part1,
                  out);
}

/*
 * A problem is reported once, on one line, naming the setting as the user gave it (the file's
 * key when the value came from --config, else the flag) and saying why the value is refused.
 * Before: httpAddress of the file was named --http-address, a bad backends.kai.queue took two
 * lines ("that value is the one refused above"), and kubeBurst: -3 said `invalid value "-3"`
 * and nothing more.
 */
START_TEST(check_config_names_the_key_given_once_and_says_why)
{
    char path[] = "/tmp/ts-config-XXXXXX", args[512], out[8192], want[700];
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    snprintf(args, sizeof(args), "--config '%s' --check-config", path);

    /* an address from the file: named by its key */
    write_file(path, "httpAddress: \"127.0.0.1:99999\"\n");
    ck_assert_int_eq(run_after("", args, out, sizeof(out)), 2);
    snprintf(want, sizeof(want), "%s: httpAddress 127.0.0.1:99999: ", path);
    ck_assert_msg(strstr(out, want) && strstr(out, "bad port"), "%s", out);
    ck_assert_msg(!strstr(out, "--http-address"), "%s", out);
    ck_assert_int_eq(count_lines(out), 1);
    /* the same value given by the flag (which wins over the file): named by the flag */
    write_file(path, "httpAddress: \"127.0.0.1:0\"\n");
    ck_assert_int_eq(run_after("--http-address 127.0.0.1:99999", args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--check-config: --http-address 127.0.0.1:99999: "), "%s", out);
    ck_assert_msg(!strstr(out, "httpAddress"), "%s", out);
    /* two addresses of the file on one port */
    write_file(path, "httpAddress: \"127.0.0.1:18461\"\nhttpsAddress: \"127.0.0.1:18461\"\n"
                     "components: [extender]\n");
    ck_assert_int_eq(run_after("", args, out, sizeof(out)), 2);
    snprintf(want, sizeof(want),
             "%s: httpsAddress 127.0.0.1:18461 and %s: httpAddress 127.0.0.1:18461 are the same "
             "address",
             path, path);
    ck_assert_msg(strstr(out, want), "%s", out);

    /* a number out of range: one line, naming the key, the value and the range */
    write_file(path, "kubeBurst: -3\n");
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    snprintf(want, sizeof(want),
             "trainsched serve: %s: kubeBurst: invalid value \"-3\": must be a whole number from "
             "1 to 100000\n",
             path);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(run("--check-config --kube-burst -3", out, sizeof(out)), 2);
    ck_assert_str_eq(out, "trainsched serve: --kube-burst: invalid value \"-3\": must be a whole "
                          "number from 1 to 100000\n");
    ck_assert_int_eq(run("--check-config --kube-qps x", out, sizeof(out)), 2);
    ck_assert_str_eq(out, "trainsched serve: --kube-qps: invalid value \"x\": not a number\n");
    refused_once(path, "leaderElection:\n  enabled: maybe\n", args,
                 "leaderElection.enabled: invalid value \"maybe\": must be true or false", NULL);
    refused_once(path, "tls:\n  renewFraction: 2\n", args,
                 "tls.renewFraction: invalid value \"2\": must be a fraction", NULL);
    /* a name the API server would refuse: one line, the key, the value and why */
    snprintf(want, sizeof(want), "%s: backends.kai.queue: invalid value \"Bad Q\": ", path);
    refused_once(path, "backends:\n  kai:\n    queue: Bad Q\n", args, want, "RFC 1123 subdomain");
    refused_once(NULL, NULL, "--check-config --kai-queue 'Bad Q'",
                 "--kai-queue: invalid value \"Bad Q\": ", "RFC 1123 subdomain");
    /* a topology of the file: one line naming the entry and why */
    refused_once(path, "extender:\n  topologies:\n    - {name: t, levels: [\"bad key\"]}\n", args,
                 "extender.topologies[0]: ", "level 0 \"bad key\" is not a node label key");
    /* a backend the file names: once, the key's own message */
    refused_once(path, "backends:\n  default: bogus\n", args,
                 "backends.default: Unsupported value: \"bogus\"", NULL);
    unlink(path);
}
END_TEST

/* the port is taken (a socket of the test listens on it): serve would fail to listen */
START_TEST(check_config_finds_a_port_in_use)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    char out[8192], args[256];
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(args, sizeof(args), "--check-config --http-address 127.0.0.1:%d",
             (int)ntohs(sa.sin_port));
    ck_assert_int_eq(run(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "--check-config: --http-address 127.0.0.1:") != NULL, "%s", out);
    close(fd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("serve config");
    /* a readable kubeconfig for every run that does not name one (never contacted) */
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBECONFIG",
           TS_FIXTURES "/kubeconfig/a-context-without-a-user-connects-anonymously/kubeconfig", 1);
    TCase *tc = tcase_create("check-config");
    tcase_add_test(tc, shipped_configmap_is_valid);
    tcase_add_test(tc, bad_settings_name_the_key);
    tcase_add_test(tc, topologies_from_file_and_flags);
    tcase_add_test(tc, names_and_topologies_are_checked_as_kubernetes_checks_them);
    tcase_add_test(tc, slurm_settings_from_file_and_flags);
    tcase_add_test(tc, webhook_gang_gate_defaults_on_and_is_set_by_file_and_flag);
    tcase_add_test(tc, slurm_settings_are_checked_before_start);
    tcase_add_test(tc, check_config_checks_addresses_files_and_the_kubeconfig);
    tcase_add_test(tc, check_config_finds_a_port_in_use);
    tcase_add_test(tc, trainer_status_settings);
    tcase_add_test(tc, check_config_output_round_trips_through_config);
    tcase_add_test(tc, check_config_output_quotes_strings_that_need_it);
    tcase_add_test(tc, names_unknown_flags_and_version);
    tcase_add_test(tc, check_config_reports_each_bad_flag_once);
    tcase_add_test(tc, check_config_names_the_key_given_once_and_says_why);
    tcase_add_test(tc, volcano_settings_load_from_their_section_and_a_bad_mapping_is_refused);
    tcase_add_test(tc, check_config_checks_the_trainer_status_ca_file_and_addresses);
    /* each case starts `trainsched serve --check-config` as a process */
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
