/*
 * tests/unit/test_kubeconfig.c - common/kubeconfig: kubeconfig files and the in-cluster config.
 *
 * Every folder under tests/fixtures/kubeconfig/ is a case whose name reads as a sentence. It
 * holds `kubeconfig` (plus any files it names) and expect.yaml:
 *
 *   context: name          # optional: the context asked for (default: current-context)
 *   code: not found        # common_rc_name of the expected result (default "ok")
 *   error: [text, ...]     # each must appear in the message
 *   want:                  # for "ok": every field of struct common_kubeconfig, by name;
 *     server: https://...  # a field left out must be NULL / 0. *_data are the decoded bytes.
 *     ca_file: $DIR/ca.crt # "$DIR" stands for the case folder, in want and in error
 *
 * The same cases also run under allocation-failure injection. The C tests below cover what a
 * fixture cannot: $KUBECONFIG and $HOME, a relative kubeconfig path, base64 edge cases and the
 * in-cluster service account in a temporary folder.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/kubeconfig.h"
#include "common/yaml.h"
#include "testutil.h"

#define MAX_CASES 256
static char *cases[MAX_CASES];
static int ncases;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_cases(void)
{
    DIR *d = opendir(testutil_path("kubeconfig"));
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) && ncases < MAX_CASES)
        if (e->d_name[0] != '.')
            cases[ncases++] = strdup(e->d_name);
    closedir(d);
    qsort(cases, (size_t)ncases, sizeof(cases[0]), cmp_str);
}

/* expand - s with every "$DIR" replaced by dir, into buf. */
static const char *expand(const char *s, const char *dir, char *buf, size_t n)
{
    size_t len = 0, dlen = strlen(dir);

    while (*s && len + 1 < n) {
        if (strncmp(s, "$DIR", 4) == 0 && len + dlen < n) {
            memcpy(buf + len, dir, dlen);
            len += dlen;
            s += 4;
        } else {
            buf[len++] = *s++;
        }
    }
    buf[len] = '\0';
    return buf;
}

/* One loaded case: its folder, expect.yaml and the parts of it the checks use. */
struct kc_case {
    char dir[PATH_MAX];
    char config[PATH_MAX];
    struct common_yaml_docs expect;
    const char *context;
    const char *code;
};

static void case_open(struct kc_case *c, const char *name)
{
    struct common_error err = {0};
    char path[PATH_MAX];
    json_t *root, *v;

    snprintf(c->dir, sizeof(c->dir), "%s", testutil_path("kubeconfig"));
    snprintf(c->dir + strlen(c->dir), sizeof(c->dir) - strlen(c->dir), "/%s", name);
    snprintf(c->config, sizeof(c->config), "%s/kubeconfig", c->dir);
    snprintf(path, sizeof(path), "%s/expect.yaml", c->dir);
    ck_assert_msg(common_yaml_load_file(path, NULL, &c->expect, &err) == COMMON_OK, "%s: %s", name,
                  err.msg);
    ck_assert_msg(c->expect.n == 1 && json_is_object(c->expect.docs[0]),
                  "%s: expect.yaml must be one mapping", name);
    root = c->expect.docs[0];
    v = json_object_get(root, "context");
    c->context = json_is_string(v) ? json_string_value(v) : NULL;
    v = json_object_get(root, "code");
    c->code = json_is_string(v) ? json_string_value(v) : "ok";
}

/* The fields of struct common_kubeconfig, by their names in expect.yaml. */
struct field {
    const char *name;
    size_t str_off; /* offset of the char * */
    long len_off;   /* offset of the length for *_data, else -1 */
};

#define STR(f)                                                                                     \
    {                                                                                              \
#f, offsetof(struct common_kubeconfig, f), -1                                              \
    }
#define DATA(f, l)                                                                                 \
    {                                                                                              \
#f, offsetof(struct common_kubeconfig, f), offsetof(struct common_kubeconfig, l)           \
    }
static const struct field fields[] = {
    STR(server),
    STR(tls_server_name),
    STR(ca_file),
    DATA(ca_data, ca_data_len),
    STR(cert_file),
    STR(key_file),
    DATA(cert_data, cert_data_len),
    DATA(key_data, key_data_len),
    STR(token),
    STR(token_file),
    STR(namespace),
    STR(context),
};

static void check_want(const char *name, const struct kc_case *c, struct common_kubeconfig *kc)
{
    json_t *want = json_object_get(c->expect.docs[0], "want"), *v;
    char buf[PATH_MAX * 2];
    size_t i;

    ck_assert_msg(json_is_object(want), "%s: expect.yaml has no want", name);
    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        char *got = *(char **)((char *)kc + fields[i].str_off);
        const char *exp;

        v = json_object_get(want, fields[i].name);
        if (!v) {
            ck_assert_msg(got == NULL, "%s: %s: want unset, got \"%s\"", name, fields[i].name, got);
            if (fields[i].len_off >= 0)
                ck_assert_uint_eq(*(size_t *)((char *)kc + fields[i].len_off), 0);
            continue;
        }
        ck_assert_msg(json_is_string(v), "%s: want.%s must be a string", name, fields[i].name);
        exp = expand(json_string_value(v), c->dir, buf, sizeof(buf));
        ck_assert_msg(got != NULL && strcmp(got, exp) == 0, "%s: %s: got \"%s\", want \"%s\"", name,
                      fields[i].name, got ? got : "(unset)", exp);
        if (fields[i].len_off >= 0)
            ck_assert_uint_eq(*(size_t *)((char *)kc + fields[i].len_off), strlen(exp));
    }
    v = json_object_get(want, "insecure");
    ck_assert_int_eq(kc->insecure, json_is_true(v) ? 1 : 0);
}

static void check_error(const char *name, const struct kc_case *c, const struct common_error *err)
{
    json_t *pieces = json_object_get(c->expect.docs[0], "error"), *v;
    char buf[PATH_MAX * 2];
    size_t i;

    ck_assert_msg(json_array_size(pieces) > 0, "%s: expect.yaml has no error pieces", name);
    json_array_foreach(pieces, i, v)
    {
        const char *want = expand(json_string_value(v), c->dir, buf, sizeof(buf));

        ck_assert_msg(strstr(err->msg, want) != NULL, "%s: message \"%s\" lacks \"%s\"", name,
                      err->msg, want);
    }
}

START_TEST(test_fixture)
{
    const char *name = cases[_i];
    struct common_kubeconfig kc;
    struct common_error err = {0};
    struct kc_case c;
    enum common_rc rc;

    case_open(&c, name);
    rc = common_kubeconfig_load(c.config, c.context, &kc, &err);
    ck_assert_msg(strcmp(common_rc_name(rc), c.code) == 0, "%s: got %s (%s), want %s", name,
                  common_rc_name(rc), err.msg, c.code);
    if (rc == COMMON_OK)
        check_want(name, &c, &kc);
    else
        check_error(name, &c, &err);
    common_kubeconfig_free(&kc);
    common_yaml_docs_free(&c.expect);
}
END_TEST

/* Each case again, failing the 1st, 2nd, ... allocation: every failure is a clean
 * COMMON_ENOMEM with the struct zeroed, until a run needs no more and gives the usual answer.
 * ASan's leak check at exit catches anything left behind. */
START_TEST(test_fixture_alloc_failure)
{
    const char *name = cases[_i];
    struct common_kubeconfig kc;
    struct common_error err;
    struct kc_case c;
    enum common_rc rc;
    unsigned long n;
    int failed;

    case_open(&c, name);
    for (n = 1;; n++) {
        static const struct common_kubeconfig zero;

        memset(&err, 0, sizeof(err));
        common_alloc_fail_at(n);
        rc = common_kubeconfig_load(c.config, c.context, &kc, &err);
        failed = common_alloc_failed();
        common_alloc_fail_at(0);
        if (!failed)
            break;
        ck_assert_msg(rc == COMMON_ENOMEM, "%s: allocation %lu failed, got %s (%s)", name, n,
                      common_rc_name(rc), err.msg);
        ck_assert_msg(memcmp(&kc, &zero, sizeof(kc)) == 0, "%s: struct not zeroed at %lu", name, n);
        ck_assert_msg(n < 100000, "%s: no end to allocations", name);
    }
    ck_assert_msg(strcmp(common_rc_name(rc), c.code) == 0, "%s: got %s (%s), want %s", name,
                  common_rc_name(rc), err.msg, c.code);
    common_kubeconfig_free(&kc);
    common_yaml_docs_free(&c.expect);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Temporary files */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

static void make_temp_dir(char *buf, size_t n)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(buf, n, "%s/kubeconfig-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

/* remove_tree - delete a temporary folder one level deep, plus one nested folder name. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];

    if (!d)
        return;
    while ((e = readdir(d))) {
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static const char simple_config[] = "clusters:\n"
                                    "- {name: c, cluster: {server: \"https://c.example\"}}\n"
                                    "contexts:\n"
                                    "- {name: c, context: {cluster: c}}\n"
                                    "current-context: c\n";

/* ------------------------------------------------------------------------------------------ */
/* $KUBECONFIG and $HOME */

START_TEST(test_env_kubeconfig_first_entry)
{
    struct common_kubeconfig kc;
    struct common_error err = {0};
    char dir[PATH_MAX], a[PATH_MAX + 16], b[PATH_MAX + 16], list[3 * PATH_MAX];

    make_temp_dir(dir, sizeof(dir));
    snprintf(a, sizeof(a), "%s/a.yaml", dir);
    snprintf(b, sizeof(b), "%s/b.yaml", dir);
    write_file(a, simple_config);
    write_file(b, "clusters:\n- {name: b, cluster: {server: \"https://b.example\"}}\n"
                  "contexts:\n- {name: b, context: {cluster: b}}\ncurrent-context: b\n");
    setenv("HOME", dir, 1);

    /* empty entries are skipped; only the first file counts */
    snprintf(list, sizeof(list), "::%s:%s", b, a);
    setenv("KUBECONFIG", list, 1);
    ck_assert_int_eq(common_kubeconfig_load(NULL, NULL, &kc, &err), COMMON_OK);
    ck_assert_str_eq(kc.server, "https://b.example");
    ck_assert_str_eq(kc.context, "b");
    common_kubeconfig_free(&kc);

    setenv("KUBECONFIG", a, 1);
    ck_assert_int_eq(common_kubeconfig_load(NULL, NULL, &kc, &err), COMMON_OK);
    ck_assert_str_eq(kc.server, "https://c.example");
    common_kubeconfig_free(&kc);

    /* an explicit path wins over the variable */
    ck_assert_int_eq(common_kubeconfig_load(b, NULL, &kc, &err), COMMON_OK);
    ck_assert_str_eq(kc.server, "https://b.example");
    common_kubeconfig_free(&kc);

    /* a missing first file is not found, named in the message */
    snprintf(list, sizeof(list), "%s/missing.yaml:%s", dir, a);
    setenv("KUBECONFIG", list, 1);
    ck_assert_int_eq(common_kubeconfig_load(NULL, NULL, &kc, &err), COMMON_ENOTFOUND);
    ck_assert_msg(strstr(err.msg, "missing.yaml") != NULL, "%s", err.msg);
    remove_tree(dir);
}
END_TEST

START_TEST(test_env_home_kube_config)
{
    struct common_kubeconfig kc;
    struct common_error err = {0};
    char dir[PATH_MAX], path[PATH_MAX + 32];

    make_temp_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/.kube", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/.kube/config", dir);
    write_file(path, simple_config);
    setenv("HOME", dir, 1);

    unsetenv("KUBECONFIG");
    ck_assert_int_eq(common_kubeconfig_load(NULL, NULL, &kc, &err), COMMON_OK);
    ck_assert_str_eq(kc.server, "https://c.example");
    common_kubeconfig_free(&kc);

    /* an empty variable or a list of empty entries falls back to ~/.kube/config */
    setenv("KUBECONFIG", "", 1);
    ck_assert_int_eq(common_kubeconfig_load(NULL, NULL, &kc, &err), COMMON_OK);
    common_kubeconfig_free(&kc);
    setenv("KUBECONFIG", ":::", 1);
    ck_assert_int_eq(common_kubeconfig_load(NULL, NULL, &kc, &err), COMMON_OK);
    common_kubeconfig_free(&kc);

    /* no ~/.kube/config */
    unlink(path);
    ck_assert_int_eq(common_kubeconfig_load(NULL, NULL, &kc, &err), COMMON_ENOTFOUND);
    ck_assert_msg(strstr(err.msg, ".kube/config: no such file") != NULL, "%s", err.msg);

    /* neither variable */
    unsetenv("KUBECONFIG");
    unsetenv("HOME");
    ck_assert_int_eq(common_kubeconfig_load(NULL, NULL, &kc, &err), COMMON_ENOTFOUND);
    ck_assert_msg(strstr(err.msg, "$HOME") != NULL, "%s", err.msg);
    remove_tree(dir);
}
END_TEST

/* A relative kubeconfig path still gives absolute file paths. */
START_TEST(test_relative_kubeconfig_path)
{
    static const char *rel = "relative-file-paths-resolve-against-the-kubeconfig-folder";
    struct common_kubeconfig kc;
    struct common_error err = {0};
    char cwd[PATH_MAX], want[PATH_MAX * 2], path[PATH_MAX];

    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    ck_assert_int_eq(chdir(testutil_path("kubeconfig")), 0);
    snprintf(path, sizeof(path), "%s/kubeconfig", rel);
    ck_assert_int_eq(common_kubeconfig_load(path, NULL, &kc, &err), COMMON_OK);
    snprintf(want, sizeof(want), "%s/%s/ca.crt", testutil_path("kubeconfig"), rel);
    ck_assert_str_eq(kc.ca_file, want);
    common_kubeconfig_free(&kc);

    ck_assert_int_eq(chdir(rel), 0);
    ck_assert_int_eq(common_kubeconfig_load("kubeconfig", NULL, &kc, &err), COMMON_OK);
    ck_assert_str_eq(kc.ca_file, want);
    common_kubeconfig_free(&kc);
    ck_assert_int_eq(common_kubeconfig_load("./kubeconfig", NULL, &kc, &err), COMMON_OK);
    ck_assert_str_eq(kc.ca_file, want);
    common_kubeconfig_free(&kc);
    ck_assert_int_eq(chdir(cwd), 0);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* Base64, as Go's encoding/json decodes []byte */

struct b64_row {
    const char *yaml; /* the certificate-authority-data value as written in YAML */
    const char *want; /* decoded bytes, or NULL for an error */
    size_t want_len;
};

static const struct b64_row b64_rows[] = {
    {"YQ==", "a", 1},
    {"YWI=", "ab", 2},
    {"YWJj", "abc", 3},
    {"YWJjZA==", "abcd", 4},
    {"AAAA", "\0\0\0", 3},
    {"\"YW\\nJj\"", "abc", 3},
    {"\"YWJj\\r\\n\"", "abc", 3},
    {"\"YQ=\\n=\"", "a", 1},
    {"YQ", NULL, 0},
    {"YQ=", NULL, 0},
    {"Y===", NULL, 0},
    {"====", NULL, 0},
    {"=", NULL, 0},
    {"YQ==YQ==", NULL, 0},
    {"\"YW Jj\"", NULL, 0},
    {"\"YW\\tJj\"", NULL, 0},
    {"Y*Jj", NULL, 0},
    {"YWJj-_==", NULL, 0}, /* URL alphabet */
};

START_TEST(test_base64)
{
    const struct b64_row *row = &b64_rows[_i];
    struct common_kubeconfig kc;
    struct common_error err = {0};
    char dir[PATH_MAX], path[PATH_MAX + 16], text[512];
    enum common_rc rc;

    make_temp_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/config", dir);
    snprintf(text, sizeof(text),
             "clusters:\n- name: c\n  cluster:\n    server: https://c.example\n"
             "    certificate-authority-data: %s\n"
             "contexts:\n- {name: c, context: {cluster: c}}\ncurrent-context: c\n",
             row->yaml);
    write_file(path, text);
    rc = common_kubeconfig_load(path, NULL, &kc, &err);
    if (row->want) {
        ck_assert_msg(rc == COMMON_OK, "%s: %s", row->yaml, err.msg);
        ck_assert_uint_eq(kc.ca_data_len, row->want_len);
        ck_assert_msg(memcmp(kc.ca_data, row->want, row->want_len) == 0, "%s: wrong bytes",
                      row->yaml);
        ck_assert_int_eq(kc.ca_data[kc.ca_data_len], '\0');
    } else {
        ck_assert_msg(rc == COMMON_EINVAL, "%s: got %s", row->yaml, common_rc_name(rc));
        ck_assert_msg(strstr(err.msg, ":5:5: clusters[0].cluster.certificate-authority-data: "
                                      "invalid base64") != NULL,
                      "%s: %s", row->yaml, err.msg);
    }
    common_kubeconfig_free(&kc);
    remove_tree(dir);
}
END_TEST

/* An empty data field reads as not set, as in kubectl. */
START_TEST(test_base64_empty_is_unset)
{
    struct common_kubeconfig kc;
    struct common_error err = {0};
    char dir[PATH_MAX], path[PATH_MAX + 16];

    make_temp_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/config", dir);
    write_file(path, "clusters:\n- name: c\n  cluster:\n    server: https://c.example\n"
                     "    certificate-authority-data: \"\"\n"
                     "contexts:\n- {name: c, context: {cluster: c}}\ncurrent-context: c\n");
    ck_assert_int_eq(common_kubeconfig_load(path, NULL, &kc, &err), COMMON_OK);
    ck_assert_ptr_null(kc.ca_data);
    ck_assert_uint_eq(kc.ca_data_len, 0);
    common_kubeconfig_free(&kc);
    remove_tree(dir);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* In-cluster */

struct sa_dir {
    char root[PATH_MAX];
    char token[PATH_MAX + 16], ca[PATH_MAX + 16], ns[PATH_MAX + 16];
};

/* sa_setup - a service-account folder with the given files (NULL = leave out) and env. */
static void sa_setup(struct sa_dir *s, const char *token, const char *ca, const char *ns)
{
    make_temp_dir(s->root, sizeof(s->root));
    snprintf(s->token, sizeof(s->token), "%s/token", s->root);
    snprintf(s->ca, sizeof(s->ca), "%s/ca.crt", s->root);
    snprintf(s->ns, sizeof(s->ns), "%s/namespace", s->root);
    if (token)
        write_file(s->token, token);
    if (ca)
        write_file(s->ca, ca);
    if (ns)
        write_file(s->ns, ns);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
}

START_TEST(test_in_cluster)
{
    struct common_kubeconfig kc;
    struct common_error err = {0};
    struct sa_dir s;

    sa_setup(&s, "tok", "-----BEGIN CERTIFICATE-----\n", "kubeflow\n");
    ck_assert_int_eq(common_kubeconfig_in_cluster(s.root, &kc, &err), COMMON_OK);
    ck_assert_str_eq(kc.server, "https://10.96.0.1:443");
    ck_assert_str_eq(kc.token_file, s.token);
    ck_assert_str_eq(kc.ca_file, s.ca);
    ck_assert_str_eq(kc.namespace, "kubeflow");
    ck_assert_ptr_null(kc.context);
    ck_assert_ptr_null(kc.token);
    ck_assert_ptr_null(kc.ca_data);
    ck_assert_int_eq(kc.insecure, 0);
    common_kubeconfig_free(&kc);
    remove_tree(s.root);
}
END_TEST

START_TEST(test_in_cluster_ipv6_host_is_bracketed)
{
    struct common_kubeconfig kc;
    struct common_error err = {0};
    struct sa_dir s;

    sa_setup(&s, "tok", NULL, NULL);
    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    ck_assert_int_eq(common_kubeconfig_in_cluster(s.root, &kc, &err), COMMON_OK);
    ck_assert_str_eq(kc.server, "https://[fd00:10:96::1]:6443");
    /* no ca.crt and no namespace file: both unset, as client-go goes on without them */
    ck_assert_ptr_null(kc.ca_file);
    ck_assert_ptr_null(kc.namespace);
    common_kubeconfig_free(&kc);
    remove_tree(s.root);
}
END_TEST

START_TEST(test_in_cluster_blank_namespace_is_unset)
{
    struct common_kubeconfig kc;
    struct common_error err = {0};
    struct sa_dir s;

    sa_setup(&s, "tok", NULL, " \n");
    ck_assert_int_eq(common_kubeconfig_in_cluster(s.root, &kc, &err), COMMON_OK);
    ck_assert_ptr_null(kc.namespace);
    common_kubeconfig_free(&kc);
    remove_tree(s.root);
}
END_TEST

START_TEST(test_in_cluster_not_in_a_pod)
{
    struct common_kubeconfig kc;
    struct common_error err = {0};
    struct sa_dir s;

    sa_setup(&s, "tok", NULL, NULL);
    unsetenv("KUBERNETES_SERVICE_HOST");
    ck_assert_int_eq(common_kubeconfig_in_cluster(s.root, &kc, &err), COMMON_ENOTFOUND);
    ck_assert_str_eq(err.msg, "not running in a pod: KUBERNETES_SERVICE_HOST is not set");
    ck_assert_ptr_null(kc.server);

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "", 1);
    ck_assert_int_eq(common_kubeconfig_in_cluster(s.root, &kc, &err), COMMON_ENOTFOUND);
    ck_assert_str_eq(err.msg, "not running in a pod: KUBERNETES_SERVICE_PORT is not set");

    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    ck_assert_int_eq(common_kubeconfig_in_cluster(s.root, &kc, &err), COMMON_EINVAL);
    ck_assert_msg(strstr(err.msg, "is not a port number") != NULL, "%s", err.msg);
    setenv("KUBERNETES_SERVICE_PORT", "65536", 1);
    ck_assert_int_eq(common_kubeconfig_in_cluster(s.root, &kc, &err), COMMON_EINVAL);

    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    unlink(s.token);
    ck_assert_int_eq(common_kubeconfig_in_cluster(s.root, &kc, &err), COMMON_ENOTFOUND);
    ck_assert_msg(strstr(err.msg, "not running in a pod: ") != NULL &&
                      strstr(err.msg, s.token) != NULL,
                  "%s", err.msg);
    ck_assert_ptr_null(kc.server);
    ck_assert_ptr_null(kc.token_file);
    remove_tree(s.root);
}
END_TEST

/* The real folder: unless this runs in a pod, it is not found. */
START_TEST(test_in_cluster_default_root)
{
    struct common_kubeconfig kc;
    struct common_error err = {0};

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    if (access("/var/run/secrets/kubernetes.io/serviceaccount/token", F_OK) == 0)
        return;
    ck_assert_int_eq(common_kubeconfig_in_cluster(NULL, &kc, &err), COMMON_ENOTFOUND);
    ck_assert_msg(strstr(err.msg, "/var/run/secrets/kubernetes.io/serviceaccount/token") != NULL,
                  "%s", err.msg);
}
END_TEST

START_TEST(test_in_cluster_alloc_failure)
{
    struct common_kubeconfig kc;
    struct common_error err;
    struct sa_dir s;
    enum common_rc rc;
    unsigned long n;
    int failed;

    sa_setup(&s, "tok", "ca", "ns\n");
    setenv("KUBERNETES_SERVICE_HOST", "::1", 1);
    for (n = 1;; n++) {
        memset(&err, 0, sizeof(err));
        common_alloc_fail_at(n);
        rc = common_kubeconfig_in_cluster(s.root, &kc, &err);
        failed = common_alloc_failed();
        common_alloc_fail_at(0);
        if (!failed)
            break;
        ck_assert_msg(rc == COMMON_ENOMEM, "allocation %lu: got %s (%s)", n, common_rc_name(rc),
                      err.msg);
        ck_assert_ptr_null(kc.server);
        ck_assert_ptr_null(kc.token_file);
        ck_assert_ptr_null(kc.ca_file);
        ck_assert_ptr_null(kc.namespace);
    }
    ck_assert_int_eq(rc, COMMON_OK);
    ck_assert_str_eq(kc.server, "https://[::1]:443");
    ck_assert_str_eq(kc.namespace, "ns");
    common_kubeconfig_free(&kc);
    remove_tree(s.root);
}
END_TEST

/* free is safe on a zeroed struct and twice in a row. */
START_TEST(test_free_is_safe)
{
    struct common_kubeconfig kc;

    memset(&kc, 0, sizeof(kc));
    common_kubeconfig_free(&kc);
    common_kubeconfig_free(&kc);
    common_kubeconfig_free(NULL);
    kc.token = common_strdup("secret");
    kc.server = common_strdup("https://x");
    common_kubeconfig_free(&kc);
    ck_assert_ptr_null(kc.token);
    ck_assert_ptr_null(kc.server);
}
END_TEST

static Suite *kubeconfig_suite(void)
{
    Suite *s = suite_create("kubeconfig");
    TCase *tc;

    collect_cases();
    tc = tcase_create("fixtures");
    tcase_add_loop_test(tc, test_fixture, 0, ncases);
    tcase_add_loop_test(tc, test_fixture_alloc_failure, 0, ncases);
    suite_add_tcase(s, tc);

    tc = tcase_create("environment");
    tcase_add_test(tc, test_env_kubeconfig_first_entry);
    tcase_add_test(tc, test_env_home_kube_config);
    tcase_add_test(tc, test_relative_kubeconfig_path);
    suite_add_tcase(s, tc);

    tc = tcase_create("base64");
    tcase_add_loop_test(tc, test_base64, 0, (int)(sizeof(b64_rows) / sizeof(b64_rows[0])));
    tcase_add_test(tc, test_base64_empty_is_unset);
    suite_add_tcase(s, tc);

    tc = tcase_create("in-cluster");
    tcase_add_test(tc, test_in_cluster);
    tcase_add_test(tc, test_in_cluster_ipv6_host_is_bracketed);
    tcase_add_test(tc, test_in_cluster_blank_namespace_is_unset);
    tcase_add_test(tc, test_in_cluster_not_in_a_pod);
    tcase_add_test(tc, test_in_cluster_default_root);
    tcase_add_test(tc, test_in_cluster_alloc_failure);
    tcase_add_test(tc, test_free_is_safe);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc;

    rc = testutil_run_suite(kubeconfig_suite());
    for (int i = 0; i < ncases; i++)
        free(cases[i]);
    if (ncases == 0) {
        fprintf(stderr, "no cases under %s\n", testutil_path("kubeconfig"));
        return 1;
    }
    return rc;
}
