/*
 * tests/unit/test_explain.c - `trainsched explain` (cmd/explain.h, cmd/explaincmd.c).
 *
 * The core on the cases of tests/fixtures/explain/: each folder has snapshot.json (the API
 * objects the glue would have fetched), story.json (the story explain_story must give, which
 * `-o json` prints) and story.txt (the text explain_text renders from it). On a mismatch the
 * actual output is written to /tmp/explain-<case>.{json,txt} for review.
 * The CLI: bad usage (an unknown -o value names the flag, no TrainJob, an unknown flag) exits 2
 * before any API call; `trainsched --help` lists explain; run as kubectl-trainsched the help
 * says `kubectl trainsched`.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/explain.h"
#include "testutil.h"

static char *cases[64];
static int ncases;

static json_t *load(const char *name, const char *file)
{
    return testutil_load_json("explain", name, file);
}

static void dump_actual(const char *name, const char *ext, const char *data)
{
    char path[PATH_MAX];
    FILE *f;
    snprintf(path, sizeof(path), "/tmp/explain-%s.%s", name, ext);
    f = fopen(path, "w");
    if (f) {
        fputs(data, f);
        fclose(f);
    }
}

START_TEST(story_case)
{
    const char *name = cases[_i];
    json_t *snap = load(name, "snapshot.json"), *want = load(name, "story.json"), *story = NULL;
    struct common_error e = {0};
    char rel[512], *want_txt, *txt = NULL, *js;
    size_t len = 0;
    FILE *f;

    ck_assert_msg(explain_story(snap, &story, &e) == COMMON_OK, "%s: %s", name, e.msg);
    js = json_dumps(story, JSON_INDENT(2));
    if (!json_equal(story, want))
        dump_actual(name, "json", js);
    ck_assert_msg(json_equal(story, want),
                  "%s: story differs (actual in /tmp/explain-%s.json):\n%s", name, name, js);
    f = open_memstream(&txt, &len);
    ck_assert_int_eq(explain_text(story, f), 0);
    fclose(f);
    snprintf(rel, sizeof(rel), "explain/%s/story.txt", name);
    want_txt = testutil_read(testutil_path(rel));
    if (strcmp(txt, want_txt) != 0)
        dump_actual(name, "txt", txt);
    ck_assert_msg(strcmp(txt, want_txt) == 0,
                  "%s: text differs (actual in /tmp/explain-%s.txt):\n%s", name, name, txt);
    free(js);
    free(txt);
    free(want_txt);
    json_decref(story);
    json_decref(snap);
    json_decref(want);
}
END_TEST

/* a snapshot without a TrainJob is refused naming the field, never a crash */
START_TEST(story_without_trainjob)
{
    json_t *snap = json_pack("{s:[]}", "pods"), *story = NULL, *nonobj = json_array();
    struct common_error e = {0};

    ck_assert_int_eq(explain_story(snap, &story, &e), COMMON_EINVAL);
    ck_assert_ptr_null(story);
    ck_assert_msg(strstr(e.msg, "trainJob") != NULL, "%s", e.msg);
    ck_assert_int_eq(explain_story(nonobj, &story, &e), COMMON_EINVAL);
    json_decref(snap);
    json_decref(nonobj);
}
END_TEST

/* a snapshot time that is no RFC 3339 time is refused naming snapshot.now */
START_TEST(story_with_a_bad_now_names_the_field)
{
    json_t *snap = json_pack("{s:{s:{s:s}}, s:s}", "trainJob", "metadata", "name", "a", "now",
                             "yesterday"),
           *story = NULL;
    struct common_error e = {0};

    ck_assert_int_eq(explain_story(snap, &story, &e), COMMON_EINVAL);
    ck_assert_ptr_null(story);
    ck_assert_msg(strstr(e.msg, "snapshot.now") && strstr(e.msg, "yesterday"), "%s", e.msg);
    json_decref(snap);
}
END_TEST

struct run {
    int status;
    char *out, *err;
};

static void run_explain(struct run *r, int argc, char **argv)
{
    size_t lo = 0, le = 0;
    FILE *o = open_memstream(&r->out, &lo), *e = open_memstream(&r->err, &le);
    r->status = cmd_explain(argc, argv, o, e);
    fclose(o);
    fclose(e);
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

START_TEST(cli_bad_output_names_the_flag)
{
    char *argv[] = {"explain", "llama", "-o", "yaml", NULL};
    struct run r;
    run_explain(&r, 4, argv);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "-o: Unsupported value: \"yaml\"") != NULL, "%s", r.err);
    ck_assert_msg(strstr(r.err, "\"text\", \"json\"") != NULL, "%s", r.err);
    run_free(&r);
}
END_TEST

START_TEST(cli_without_trainjob_or_with_unknown_flag_is_bad_usage)
{
    char *a1[] = {"explain", "-n", "ml", NULL};
    char *a2[] = {"explain", "llama", "--watch", NULL};
    char *a3[] = {"explain", "llama", "-n", NULL};
    char *a4[] = {"explain", "a", "b", NULL};
    struct run r;

    run_explain(&r, 3, a1);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "TRAINJOB: Required value") != NULL, "%s", r.err);
    run_free(&r);
    run_explain(&r, 3, a2);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "unknown flag --watch") != NULL, "%s", r.err);
    run_free(&r);
    run_explain(&r, 3, a3);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "-n: Required value") != NULL, "%s", r.err);
    run_free(&r);
    run_explain(&r, 3, a4);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "one TrainJob only") != NULL, "%s", r.err);
    run_free(&r);
}
END_TEST

/* a kubeconfig that cannot be read: exit 1 naming it, before any API call */
START_TEST(cli_unreadable_kubeconfig_exits_1)
{
    char *argv[] = {"explain", "llama", "--kubeconfig", "/nonexistent/kubeconfig", NULL};
    struct run r;
    run_explain(&r, 4, argv);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "kubeconfig") != NULL, "%s", r.err);
    run_free(&r);
}
END_TEST

static char *capture(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    char *buf = calloc(1, 65536);
    size_t n;
    ck_assert_ptr_nonnull(p);
    n = fread(buf, 1, 65535, p);
    buf[n] = '\0';
    pclose(p);
    return buf;
}

START_TEST(main_help_lists_explain_and_the_plugin_name)
{
    char cmd[PATH_MAX * 2 + 64], dir[] = "/tmp/explain-plugin-XXXXXX", link[PATH_MAX];
    char *out;

    snprintf(cmd, sizeof(cmd), "'%s' --help 2>&1", TS_BINARY);
    out = capture(cmd);
    ck_assert_msg(strstr(out, "  explain ") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "Usage: trainsched COMMAND") != NULL, "%s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "'%s' explain --help 2>&1", TS_BINARY);
    out = capture(cmd);
    ck_assert_msg(strstr(out, "Usage: trainsched explain TRAINJOB") != NULL, "%s", out);
    free(out);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(link, sizeof(link), "%s/kubectl-trainsched", dir);
    ck_assert_int_eq(symlink(TS_BINARY, link), 0);
    snprintf(cmd, sizeof(cmd), "'%s' --help 2>&1", link);
    out = capture(cmd);
    unlink(link);
    rmdir(dir);
    ck_assert_msg(strstr(out, "Usage: kubectl trainsched COMMAND") != NULL, "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("fixtures"), *cli = tcase_create("cli");

    ncases = testutil_cases("explain", cases, 64);
    if (ncases < 12) {
        fprintf(stderr, "test_explain: %d cases under tests/fixtures/explain, want at least 12\n",
                ncases);
        return 1;
    }
    tcase_add_loop_test(tc, story_case, 0, ncases);
    tcase_add_test(tc, story_without_trainjob);
    tcase_add_test(tc, story_with_a_bad_now_names_the_field);
    tcase_add_test(cli, cli_bad_output_names_the_flag);
    tcase_add_test(cli, cli_without_trainjob_or_with_unknown_flag_is_bad_usage);
    tcase_add_test(cli, cli_unreadable_kubeconfig_exits_1);
    tcase_add_test(cli, main_help_lists_explain_and_the_plugin_name);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, cli);
    return testutil_run_suite(s);
}
