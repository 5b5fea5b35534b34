/*
 * tests/unit/test_serve_config.c - `trainsched serve --check-config`: the settings file and
 * flags as the daemon reads them, run through the built binary (no cluster needed).
 * The ConfigMap shipped in manifests/controller/config.yaml must be accepted as is.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/yaml.h"
#include "testutil.h"

/* run the binary with args (a shell-quoted string), output (stdout+stderr) into out */
static int run(const char *args, char *out, size_t size)
{
    char cmd[4096];
    FILE *p;
    size_t n = 0;
    int status;

    snprintf(cmd, sizeof(cmd), "'%s' serve %s 2>&1", TS_BINARY, args);
    p = popen(cmd, "r");
    ck_assert(p != NULL);
    while (n + 1 < size && fgets(out + n, (int)(size - n), p))
        n += strlen(out + n);
    out[n] = 0;
    status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
    ck_assert_msg(strstr(out, "leaseNamespace: trainsched-system") != NULL, "%s", out);
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

int main(void)
{
    Suite *s = suite_create("serve config");
    TCase *tc = tcase_create("check-config");
    tcase_add_test(tc, shipped_configmap_is_valid);
    tcase_add_test(tc, bad_settings_name_the_key);
    /* each case starts `trainsched serve --check-config` as a process */
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
