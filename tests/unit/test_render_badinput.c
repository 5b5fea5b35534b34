/*
 * tests/unit/test_render_badinput.c - `trainsched render` on bad input: every kind of bad input
 * gets one clear message naming the file and the position or field path, exit status 2, and
 * nothing on standard output (never a crash, never partial output). Good input still renders.
 *
 * Three parts:
 *  - cases: one runner for every folder under tests/fixtures/badinput/cases/. A folder is named
 *    as a sentence and holds input.yaml (or input.json; other files the case needs beside it)
 *    and expect.yaml:
 *
 *      args: [--runtime, "{dir}/runtime.yaml"]  # more arguments after -f <input>; {dir} is
 *                                               # the case folder (default: none)
 *      exit: 2                  # expected exit status (default 2)
 *      file: "{dir}/runtime.yaml"  # the file the message must name (default: the input)
 *      at: "10:15"              # the message holds "<file>:10:15:" ("10": "<file>:10:")
 *      field: spec.trainer.numNodes  # the message names this field path, as a whole path
 *      says: [text, ...]        # each must appear in the message (what is wrong)
 *
 *    For a refusal the runner also checks: standard output is empty, standard error holds
 *    exactly one line starting with "error: ".
 *  - generated inputs, written to a temporary folder at test time: documents over 3 MiB, 50 MB
 *    files, 10,000-deep nesting, random binary data, the trainsched binary itself, and (outside
 *    sanitizer builds, under a 2 GiB address-space limit) an MPI TrainJob with int32-max nodes;
 *  - the command line: no -f, unknown --output, a missing file, a folder, standard input, good
 *    YAML and JSON, and the real binary's process exit status (TS_BINARY).
 *
 * cmd_render is called in-process with open_memstream streams; Check forks every test, so a
 * crash fails one test, and in the sanitizer build LeakSanitizer checks each test at its exit.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "common/alloc.h"
#include "common/yaml.h"
#include "integrations/backend.h"
#include "testutil.h"

#define MIB ((size_t)1 << 20)
#define DOC_LIMIT (3 * MIB) /* the loader's per-document cap (API server request limit) */

/* ---- running render ----------------------------------------------------------------------- */

struct run {
    int status;
    char *out, *err;
    size_t outlen, errlen;
};

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof(*r));
}

/* cmd_render with argv[0] = "render" and the given NULL-terminated arguments. */
static void render_argv(struct run *r, const char *const *args)
{
    char *argv[64];
    int argc = 0;
    FILE *out, *err;

    memset(r, 0, sizeof(*r));
    argv[argc++] = "render";
    for (; *args; args++) {
        ck_assert_int_lt(argc, 63);
        argv[argc++] = (char *)*args;
    }
    argv[argc] = NULL;
    out = open_memstream(&r->out, &r->outlen);
    err = open_memstream(&r->err, &r->errlen);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(err);
    r->status = cmd_render(argc, argv, out, err);
    fclose(out);
    fclose(err);
}

#define RENDER(r, ...)                                                                             \
    do {                                                                                           \
        const char *const args_[] = {__VA_ARGS__, NULL};                                           \
        render_argv((r), args_);                                                                   \
    } while (0)

/* ---- what a refusal must look like ------------------------------------------------------ */

static int count_error_lines(const char *s)
{
    int n = 0;
    const char *p = s;

    while (p && *p) {
        if (strncmp(p, "error: ", 7) == 0)
            n++;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return n;
}

static int path_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '[';
}

/* field appears in s as a whole path (not as the start or end of a longer one) */
static int has_field(const char *s, const char *field)
{
    size_t n = strlen(field);

    for (const char *p = strstr(s, field); p; p = strstr(p + 1, field))
        if ((p == s || !path_char(p[-1]) || p[-1] == '[') && !path_char(p[n]))
            return 1;
    return 0;
}

/* "<file>:<digits>:<digits>:" somewhere in s */
static int has_line_col(const char *s, const char *file)
{
    size_t n = strlen(file);

    for (const char *p = strstr(s, file); p; p = strstr(p + 1, file)) {
        const char *q = p + n;
        if (*q++ != ':' || !(*q >= '0' && *q <= '9'))
            continue;
        while (*q >= '0' && *q <= '9')
            q++;
        if (*q++ != ':' || !(*q >= '0' && *q <= '9'))
            continue;
        while (*q >= '0' && *q <= '9')
            q++;
        if (*q == ':')
            return 1;
    }
    return 0;
}

/*
 * The checks every refusal gets: exit 2, nothing on stdout, one "error: " line on stderr that
 * names file (when not NULL), the position at ("L:C" or "L"; NULL: none required), the field
 * path (NULL: none) and each of says (NULL-terminated; may be NULL).
 */
static void check_refusal(const char *what, const struct run *r, const char *file, const char *at,
                          const char *field, const char *const *says)
{
    const char *err = r->err ? r->err : "";

    ck_assert_msg(r->status == 2, "%s: exit status %d, want 2; stderr: %.2000s", what, r->status,
                  err);
    ck_assert_msg(r->outlen == 0, "%s: %zu bytes on stdout on failure (partial output): %.300s",
                  what, r->outlen, r->out);
    ck_assert_msg(r->errlen > 0, "%s: nothing on stderr", what);
    ck_assert_msg(count_error_lines(err) == 1, "%s: want exactly one \"error: \" line: %.2000s",
                  what, err);
    if (file)
        ck_assert_msg(strstr(err, file) != NULL,
                      "%s: the message does not name the file %s: %.2000s", what, file, err);
    if (file && at && *at) {
        char want[4200];
        snprintf(want, sizeof(want), "%s:%s:", file, at);
        ck_assert_msg(strstr(err, want) != NULL,
                      "%s: the message lacks the position \"%s\": %.2000s", what, want, err);
    }
    if (field)
        ck_assert_msg(has_field(err, field), "%s: the message does not name the field %s: %.2000s",
                      what, field, err);
    for (; says && *says; says++)
        ck_assert_msg(strstr(err, *says) != NULL, "%s: the message does not say \"%s\": %.2000s",
                      what, *says, err);
}

/* A successful render: exit 0, a v1 List with at least one item, in YAML or JSON. */
static void check_list(const char *what, const struct run *r, int json)
{
    struct common_yaml_docs d;
    struct common_error e;
    json_t *list;

    ck_assert_msg(r->status == 0, "%s: exit %d; stderr: %.2000s", what, r->status, r->err);
    ck_assert_msg(r->outlen > 0, "%s: no output", what);
    if (json) {
        json_error_t je;
        list = json_loadb(r->out, r->outlen, 0, &je);
        ck_assert_msg(list != NULL, "%s: output is not JSON: %s", what, je.text);
    } else {
        ck_assert_msg(common_yaml_load(r->out, r->outlen, "output", NULL, &d, &e) == COMMON_OK,
                      "%s: output is not YAML: %s", what, e.msg);
        ck_assert_uint_eq(d.n, 1);
        list = json_incref(d.docs[0]);
        common_yaml_docs_free(&d);
    }
    ck_assert_str_eq(json_string_value(json_object_get(list, "apiVersion")), "v1");
    ck_assert_str_eq(json_string_value(json_object_get(list, "kind")), "List");
    ck_assert_msg(json_array_size(json_object_get(list, "items")) >= 2,
                  "%s: the List has fewer than 2 items", what);
    json_decref(list);
}

/* ---- the fixture cases ------------------------------------------------------------------ */

#define MAX_CASES 256
static char *cases[MAX_CASES];
static int ncases;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_cases(void)
{
    DIR *d = opendir(testutil_path("badinput/cases"));
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) && ncases < MAX_CASES)
        if (e->d_name[0] != '.')
            cases[ncases++] = strdup(e->d_name);
    closedir(d);
    qsort(cases, (size_t)ncases, sizeof(cases[0]), cmp_str);
}

/* s with every "{dir}" replaced by dir, malloc'd */
static char *subst_dir(const char *s, const char *dir)
{
    size_t cap = strlen(s) + 1, dl = strlen(dir);
    char *out, *o;

    for (const char *p = strstr(s, "{dir}"); p; p = strstr(p + 5, "{dir}"))
        cap += dl;
    out = o = malloc(cap);
    ck_assert_ptr_nonnull(out);
    while (*s) {
        if (strncmp(s, "{dir}", 5) == 0) {
            memcpy(o, dir, dl);
            o += dl;
            s += 5;
        } else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return out;
}

START_TEST(bad_input_case)
{
    const char *name = cases[_i];
    char dir[4096], input[4200], expect_path[4200];
    struct common_yaml_docs ex;
    struct common_error e;
    const json_t *expect, *v;
    const char *args[40], *says[20];
    char *owned[40];
    int nargs = 0, nsays = 0, nowned = 0, want_exit = 2;
    const char *exts[] = {"yaml", "json"};
    const char *file, *at, *field;
    struct run r;
    size_t i;

    snprintf(dir, sizeof(dir), "%s", testutil_path("badinput/cases"));
    snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", name);
    input[0] = '\0';
    for (i = 0; i < 2; i++) {
        struct stat st;
        snprintf(input, sizeof(input), "%s/input.%s", dir, exts[i]);
        if (stat(input, &st) == 0)
            break;
        input[0] = '\0';
    }
    ck_assert_msg(input[0], "%s: no input.yaml or input.json", name);
    snprintf(expect_path, sizeof(expect_path), "%s/expect.yaml", dir);
    ck_assert_msg(common_yaml_load_file(expect_path, NULL, &ex, &e) == COMMON_OK, "%s", e.msg);
    ck_assert_msg(ex.n == 1 && json_is_object(ex.docs[0]), "%s: expect.yaml is not a mapping",
                  name);
    expect = ex.docs[0];

    args[nargs++] = "-f";
    args[nargs++] = input;
    json_array_foreach(json_object_get(expect, "args"), i, v)
    {
        ck_assert_int_lt(nargs, 38);
        ck_assert_msg(json_is_string(v), "%s: args must be strings", name);
        args[nargs++] = owned[nowned++] = subst_dir(json_string_value(v), dir);
    }
    args[nargs] = NULL;
    json_array_foreach(json_object_get(expect, "says"), i, v)
    {
        ck_assert_int_lt(nsays, 19);
        says[nsays++] = json_string_value(v);
    }
    says[nsays] = NULL;
    if (json_is_integer(json_object_get(expect, "exit")))
        want_exit = (int)json_integer_value(json_object_get(expect, "exit"));
    file = input;
    if (json_is_string(json_object_get(expect, "file")))
        file = owned[nowned++] = subst_dir(json_string_value(json_object_get(expect, "file")), dir);
    at = json_string_value(json_object_get(expect, "at"));
    field = json_string_value(json_object_get(expect, "field"));

    render_argv(&r, args);
    if (want_exit == 2) {
        check_refusal(name, &r, file, at, field, says);
    } else {
        ck_assert_msg(r.status == want_exit, "%s: exit %d, want %d; stderr: %.2000s", name,
                      r.status, want_exit, r.err);
    }
    run_free(&r);
    for (int k = 0; k < nowned; k++)
        free(owned[k]);
    common_yaml_docs_free(&ex);
}
END_TEST

/* ---- a temporary folder for generated inputs -------------------------------------------- */

/* One folder per test case, made and removed in the parent process (an unchecked fixture), so
 * it goes away even when a forked test fails; big files are also removed by the test that made
 * them as soon as it is done with them. */
static char tmpdir[256];

static void tmp_setup(void)
{
    const char *base = getenv("TMPDIR");

    snprintf(tmpdir, sizeof(tmpdir), "%s/ts-badinput-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_msg(mkdtemp(tmpdir) != NULL, "mkdtemp: %s", strerror(errno));
}

static void tmp_teardown(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char p[600];

    if (!d)
        return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof(p), "%s/%s", tmpdir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(tmpdir);
}

/* path of name inside the temporary folder, in buf */
static const char *tmp_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tmpdir, name);
    return buf;
}

static void tmp_remove(const char *path)
{
    unlink(path);
}

static FILE *tmp_open(char *buf, size_t n, const char *name)
{
    FILE *f = fopen(tmp_path(buf, n, name), "wb");

    ck_assert_msg(f != NULL, "%s: %s", buf, strerror(errno));
    return f;
}

static void put(FILE *f, const char *s)
{
    ck_assert_int_ne(fputs(s, f), EOF);
}

/* n bytes of c */
static void put_n(FILE *f, int c, size_t n)
{
    char chunk[65536];

    memset(chunk, c, sizeof(chunk));
    while (n) {
        size_t k = n < sizeof(chunk) ? n : sizeof(chunk);
        ck_assert_uint_eq(fwrite(chunk, 1, k, f), k);
        n -= k;
    }
}

/* about n bytes of comment lines ("# xxx...\n", 80 bytes each); returns the lines written */
static long put_comment_lines(FILE *f, size_t n)
{
    char line[81];
    long lines = 0;

    memset(line, 'x', 79);
    line[0] = '#';
    line[1] = ' ';
    line[79] = '\n';
    line[80] = '\0';
    for (size_t done = 0; done < n; done += 80, lines++)
        put(f, line);
    return lines;
}

/* a TrainJob called name with its comment padding inside the document: `pad` bytes */
static long put_padded_trainjob(FILE *f, const char *name, size_t pad)
{
    long lines;

    put(f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: ");
    put(f, name);
    put(f, "\n  namespace: default\n");
    lines = put_comment_lines(f, pad);
    put(f, "spec:\n  runtimeRef:\n    name: torch-distributed\n  trainer:\n    numNodes: 1\n");
    return lines + 10;
}

static void close_file(FILE *f)
{
    ck_assert_int_eq(fclose(f), 0);
}

/* ---- documents over 3 MiB, 50 MB files -------------------------------------------------- */

START_TEST(a_document_over_3_mib_is_refused)
{
    char path[600];
    FILE *f = tmp_open(path, sizeof(path), "big-annotation.yaml");
    const char *says[] = {"document 1 is larger than the limit of 3145728 bytes", NULL};
    struct run r;

    put(f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n"
           "  name: big\n  annotations:\n    big: \"");
    put_n(f, 'x', DOC_LIMIT + 1024);
    put(f, "\"\nspec:\n  runtimeRef:\n    name: torch-distributed\n");
    close_file(f);
    RENDER(&r, "-f", path);
    check_refusal("3 MiB + 1 KiB annotation", &r, path, "1:1", NULL, says);
    run_free(&r);
    tmp_remove(path);
}
END_TEST

/* Comments inside a document count toward its size: just under the cap renders, just over
 * does not. */
START_TEST(the_3_mib_document_cap_is_exact_enough)
{
    char under[600], over[600];
    FILE *f = tmp_open(under, sizeof(under), "under.yaml");
    const char *says[] = {"larger than the limit of 3145728 bytes", NULL};
    struct run r;

    put_padded_trainjob(f, "under", DOC_LIMIT - 4096);
    close_file(f);
    f = tmp_open(over, sizeof(over), "over.yaml");
    put_padded_trainjob(f, "over", DOC_LIMIT + 4096);
    close_file(f);

    RENDER(&r, "-f", under);
    check_list("a TrainJob document of 3 MiB - 4 KiB", &r, 0);
    run_free(&r);
    RENDER(&r, "-f", over);
    check_refusal("a TrainJob document of 3 MiB + 4 KiB", &r, over, "1:1", NULL, says);
    run_free(&r);
    tmp_remove(under);
    tmp_remove(over);
}
END_TEST

START_TEST(a_50_mb_file_of_one_document_is_refused)
{
    char path[600];
    FILE *f = tmp_open(path, sizeof(path), "fifty.yaml");
    const char *says[] = {"document 1 is larger than the limit of 3145728 bytes", NULL};
    struct run r;

    put(f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n"
           "  name: fifty\n  annotations:\n    big: \"");
    put_n(f, 'x', 50 * 1000 * 1000);
    put(f, "\"\nspec:\n  runtimeRef:\n    name: torch-distributed\n");
    close_file(f);
    RENDER(&r, "-f", path);
    check_refusal("a 50 MB document", &r, path, "1:1", NULL, says);
    run_free(&r);
    tmp_remove(path);
}
END_TEST

/* Three 1 MiB TrainJobs, then one of 47 MB: the message names document 4 and its line. */
START_TEST(a_50_mb_file_whose_fourth_document_is_too_big_is_refused)
{
    char path[600], at[32];
    FILE *f = tmp_open(path, sizeof(path), "fourth.yaml");
    const char *says[] = {"document 4 is larger than the limit of 3145728 bytes", NULL};
    long line = 1;
    struct run r;

    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "job-%d", i);
        line += put_padded_trainjob(f, name, MIB);
        put(f, "---\n");
        line++;
    }
    put_padded_trainjob(f, "job-3", 47 * 1000 * 1000);
    close_file(f);
    /* a document starts at its "---" marker, the line before the fourth TrainJob */
    snprintf(at, sizeof(at), "%ld:1", line - 1);
    RENDER(&r, "-f", path);
    check_refusal("a 47 MB fourth document", &r, path, at, NULL, says);
    run_free(&r);
    tmp_remove(path);
}
END_TEST

/* 50 MB of valid 64 KiB TrainJobs ending in a document that does not parse: exit 2, no output
 * (nothing is rendered before the whole input is read). */
START_TEST(a_50_mb_file_of_good_documents_ending_in_a_malformed_one_is_refused)
{
    char path[600], at[32];
    FILE *f = tmp_open(path, sizeof(path), "many.yaml");
    const char *says[] = {"expected ',' or ']'", NULL};
    long line = 1;
    size_t written = 0;
    int i;
    struct run r;

    for (i = 0; written < 50 * 1000 * 1000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "job-%d", i);
        line += put_padded_trainjob(f, name, 64 * 1024);
        put(f, "---\n");
        line++;
        written += 64 * 1024 + 200;
    }
    put(f, "kind: [TrainJob\n");
    close_file(f);
    snprintf(at, sizeof(at), "%ld:1", line + 1);
    RENDER(&r, "-f", path);
    check_refusal("50 MB of TrainJobs and a malformed last document", &r, path, at, NULL, says);
    run_free(&r);
    tmp_remove(path);
}
END_TEST

/* ---- deep nesting ------------------------------------------------------------------------- */

#define DEEP 10000

START_TEST(flow_lists_nested_10000_deep_are_refused)
{
    char path[600];
    FILE *f = tmp_open(path, sizeof(path), "deep-flow.yaml");
    const char *says[] = {"nesting deeper than 100 levels", NULL};
    struct run r;

    put(f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: deep\n"
           "spec:\n  runtimeRef:\n    name: torch-distributed\n  trainer:\n    args: ");
    put_n(f, '[', DEEP);
    put_n(f, ']', DEEP);
    put(f, "\n");
    close_file(f);
    RENDER(&r, "-f", path);
    check_refusal("[[[...]]] 10,000 deep", &r, path, "9", NULL, says);
    run_free(&r);
}
END_TEST

START_TEST(json_objects_nested_10000_deep_are_refused)
{
    char path[600];
    FILE *f = tmp_open(path, sizeof(path), "deep.json");
    const char *says[] = {"nesting deeper than 100 levels", NULL};
    struct run r;

    put(f, "{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": \"TrainJob\",\n"
           "\"metadata\": {\"name\": \"deep\"},\n\"spec\": ");
    for (int i = 0; i < DEEP; i++)
        put(f, "{\"a\":");
    put(f, "1");
    put_n(f, '}', DEEP);
    put(f, "}\n");
    close_file(f);
    RENDER(&r, "-f", path);
    check_refusal("{\"a\":{...}} 10,000 deep", &r, path, "3", NULL, says);
    run_free(&r);
}
END_TEST

START_TEST(block_lists_nested_10000_deep_are_refused)
{
    char path[600];
    FILE *f = tmp_open(path, sizeof(path), "deep-block.yaml");
    const char *says[] = {"nesting deeper than 100 levels", NULL};
    struct run r;

    /* "- - - ... x": compact nested block sequences, 10,000 levels on one line */
    for (int i = 0; i < DEEP; i++)
        put(f, "- ");
    put(f, "x\n");
    close_file(f);
    RENDER(&r, "-f", path);
    check_refusal("- - - ... 10,000 deep", &r, path, "1", NULL, says);
    run_free(&r);
}
END_TEST

/* ---- counts that make objects grow ----------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define TS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TS_ASAN 1
#endif
#endif

/*
 * numNodes 2147483647 on the MPI runtime: the hostfile has a 64 MiB cap, so the answer must be a
 * refusal naming spec.trainer.numNodes, in bounded memory. The test caps its own address space
 * at 2 GiB (this test runs in a forked child), so unbounded growth shows up as an allocation
 * failure here instead of eating the machine. ASan reserves terabytes of shadow memory, so the
 * cap cannot be used there and the test is left out of sanitizer builds.
 */
#ifndef TS_ASAN
START_TEST(an_mpi_trainjob_with_int32_max_nodes_is_refused_in_bounded_memory)
{
    struct rlimit lim = {(rlim_t)2 << 30, (rlim_t)2 << 30};
    char path[600];
    FILE *f = tmp_open(path, sizeof(path), "mpi-max.yaml");
    struct run r;

    put(f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n"
           "  name: mpi-max\n  namespace: default\nspec:\n  runtimeRef:\n"
           "    name: deepspeed-distributed\n  trainer:\n    numNodes: 2147483647\n");
    close_file(f);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
    RENDER(&r, "-f", path);
    check_refusal("MPI numNodes 2147483647 (2 GiB address space)", &r, path, NULL,
                  "spec.trainer.numNodes", NULL);
    run_free(&r);
}
END_TEST
#endif

/* ---- binary garbage ----------------------------------------------------------------------- */

START_TEST(random_binary_data_is_refused)
{
    char path[600];
    FILE *f = tmp_open(path, sizeof(path), "random.bin");
    uint64_t x = 0x9e3779b97f4a7c15u; /* fixed seed: the same bytes every run */
    struct run r;

    for (size_t i = 0; i < MIB; i += 8) {
        unsigned char b[8];
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for (int k = 0; k < 8; k++)
            b[k] = (unsigned char)(x >> (8 * k));
        ck_assert_uint_eq(fwrite(b, 1, 8, f), 8);
    }
    close_file(f);
    RENDER(&r, "-f", path);
    check_refusal("1 MiB of random bytes", &r, path, NULL, NULL, NULL);
    ck_assert_msg(has_line_col(r.err, path), "no line:col for random bytes: %s", r.err);
    run_free(&r);
    tmp_remove(path);
}
END_TEST

START_TEST(an_executable_is_refused)
{
    struct run r;

    RENDER(&r, "-f", TS_BINARY);
    check_refusal("the trainsched binary as input", &r, TS_BINARY, NULL, NULL, NULL);
    ck_assert_msg(has_line_col(r.err, TS_BINARY), "no line:col for an ELF file: %s", r.err);
    run_free(&r);
}
END_TEST

/* ---- the command line --------------------------------------------------------------------- */

START_TEST(no_input_file_is_bad_usage)
{
    struct run r;
    const char *says[] = {"-f", NULL};

    RENDER(&r, "-o", "yaml");
    check_refusal("no -f", &r, NULL, NULL, NULL, says);
    run_free(&r);
}
END_TEST

START_TEST(an_unknown_output_format_is_bad_usage)
{
    struct run r;
    const char *says[] = {"--output", "\"xml\"", NULL};

    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "-o", "xml");
    check_refusal("-o xml", &r, NULL, NULL, NULL, says);
    run_free(&r);
}
END_TEST

/* --volcano-queue names a cluster-scoped Volcano Queue: a DNS-1123 subdomain, as serve's
 * backends.volcano.queue */
/* --kai-queue is checked as serve's is, on the command line, whatever the backend (it was
 * accepted without the kai backend, and with it blamed on the TrainJob's line) */
START_TEST(a_kai_queue_that_is_no_queue_name_is_bad_usage)
{
    struct run r;
    const char *says[] = {
        "error: --kai-queue: backends.kai.queue: Invalid value: \"Bad Q\": a KAI Queue name:",
        "RFC 1123 subdomain", NULL};

    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "--kai-queue", "Bad Q");
    check_refusal("--kai-queue 'Bad Q'", &r, NULL, NULL, NULL, says);
    run_free(&r);
    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "--backend", "kai",
           "--kai-queue", "Bad Q");
    check_refusal("--backend kai --kai-queue 'Bad Q'", &r, NULL, NULL, NULL, says);
    run_free(&r);
}
END_TEST

START_TEST(a_volcano_queue_that_is_no_queue_name_is_bad_usage)
{
    struct run r;
    const char *says[] = {"--volcano-queue", "\"Bad Q\"", "RFC 1123 subdomain", NULL};

    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "--volcano-queue", "Bad Q");
    check_refusal("--volcano-queue 'Bad Q'", &r, NULL, NULL, NULL, says);
    run_free(&r);
}
END_TEST

/* --kube-version picks the native backend's API: 1.36 or 1.37 (a "v" and a patch allowed);
 * anything else is bad usage naming the flag and the supported values, and --help says so */
START_TEST(an_unknown_kube_version_is_bad_usage_naming_the_flag_and_the_values)
{
    static const char *const bad[] = {"1.35", "1.38", "", "latest", "1.37x", "1.3", "v1.36.x"};
    const char *says[] = {
        "error: --kube-version: Unsupported value:", "supported values: \"1.36\", \"1.37\"", NULL};
    struct run r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "--kube-version", bad[i]);
        check_refusal(bad[i], &r, NULL, NULL, NULL, says);
        run_free(&r);
    }
    static const char *const good[] = {"1.36", "1.37", "v1.37.2", "1.36.3"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "--backend", "native",
               "--kube-version", good[i]);
        ck_assert_msg(r.status == 0, "--kube-version %s: exit %d: %s", good[i], r.status, r.err);
        ck_assert_msg(strstr(r.out, good[i][1] == '.' && good[i][3] == '6'
                                        ? "scheduling.k8s.io/v1alpha2"
                                        : "scheduling.k8s.io/v1beta1") != NULL,
                      "--kube-version %s: wrong API", good[i]);
        run_free(&r);
    }
    RENDER(&r, "--help");
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strstr(r.out, "--kube-version 1.36|1.37") != NULL, "--help: %s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(an_unknown_option_is_bad_usage)
{
    struct run r;
    const char *says[] = {"--frobnicate", NULL};

    RENDER(&r, "--frobnicate", "-f", testutil_path("badinput/good/trainjob.yaml"));
    check_refusal("--frobnicate", &r, NULL, NULL, NULL, says);
    run_free(&r);
}
END_TEST

/* --version after each command, as before it (the binary's own dispatch) */
START_TEST(version_after_the_command_prints_the_version)
{
    static const char *const cmds[] = {"render", "simulate", "certs", "serve", NULL};

    for (int i = 0; cmds[i]; i++) {
        char cmd[600], line[256] = "";
        FILE *p;

        snprintf(cmd, sizeof(cmd), "'%s' %s --version 2>&1", TS_BINARY, cmds[i]);
        p = popen(cmd, "r");
        ck_assert_ptr_nonnull(p);
        if (!fgets(line, sizeof(line), p))
            line[0] = '\0';
        ck_assert_msg(pclose(p) == 0, "%s --version: exit status not 0 (%s)", cmds[i], line);
        ck_assert_msg(strncmp(line, "trainsched ", 11) == 0, "%s --version printed: %s", cmds[i],
                      line);
    }
}
END_TEST

/* --existing takes a folder as -f does (it was "read failed: Is a directory") */
START_TEST(existing_takes_a_folder)
{
    char dir[] = "/tmp/test-render-existing-XXXXXX", p[300];
    struct run r;
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof(p), "%s/cm.yaml", dir);
    f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: default}\n", f);
    fclose(f);
    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "--existing", dir);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    run_free(&r);
    unlink(p);
    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "--existing", dir);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "no .yaml, .yml or .json file in the folder"), "%s", r.err);
    run_free(&r);
    rmdir(dir);
}
END_TEST

START_TEST(a_missing_file_is_named)
{
    struct run r;
    char path[600];
    const char *says[] = {"no such file", NULL};

    tmp_path(path, sizeof(path), "does-not-exist.yaml");
    RENDER(&r, "-f", path);
    check_refusal("a missing file", &r, path, NULL, NULL, says);
    run_free(&r);
}
END_TEST

START_TEST(a_folder_without_manifests_is_named)
{
    struct run r;
    char dir[600], path[700];
    const char *says[] = {"no .yaml, .yml or .json file", NULL};
    FILE *f;

    tmp_path(dir, sizeof(dir), "nomanifests");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(path, sizeof(path), "%s/README.md", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a manifest\n", f);
    fclose(f);
    RENDER(&r, "-f", dir);
    check_refusal("a folder without manifests", &r, dir, NULL, NULL, says);
    run_free(&r);
}
END_TEST

/* copy file src into dir/name */
static void copy_into(const char *src, const char *dir, const char *name)
{
    char path[900], buf[4096];
    FILE *in = fopen(src, "rb"), *out;
    size_t n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    out = fopen(path, "wb");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

/* -f DIR reads the folder's .yaml, .yml and .json files in name order (not sub-folders or
 * other files), as kubectl does */
START_TEST(a_folder_renders_its_manifests_in_name_order)
{
    struct run r;
    char dir[600], sub[700];
    const char *a, *b;

    tmp_path(dir, sizeof(dir), "manifests");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    copy_into(testutil_path("badinput/good/trainjob.yaml"), dir, "b.yml");
    copy_into(testutil_path("badinput/good/trainjob.json"), dir, "a.json");
    copy_into(testutil_path("badinput/cases/a-negative-numnodes-is-refused/input.yaml"), dir,
              "notes.txt");
    copy_into(testutil_path("badinput/cases/a-negative-numnodes-is-refused/input.yaml"), sub,
              "c.yaml");
    RENDER(&r, "-f", dir);
    check_list("a folder", &r, 0);
    a = strstr(r.out, "name: good-json");
    b = strstr(r.out, "name: good-input");
    ck_assert_msg(a && b && a < b, "a.json before b.yml expected in: %.3000s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(output_given_as_o_equals_json_renders_json)
{
    struct run r;

    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "-o=json");
    check_list("-o=json", &r, 1);
    run_free(&r);
}
END_TEST

/* -n=NS as kubectl takes it (the namespace was "=team", refused as not a DNS label) */
START_TEST(namespace_given_as_n_equals_ns_is_taken)
{
    struct run r;
    char path[] = "/tmp/test-render-ns-XXXXXX";
    int fd = mkstemp(path);
    FILE *f;

    ck_assert_int_ge(fd, 0);
    ck_assert_ptr_nonnull(f = fdopen(fd, "w"));
    fputs("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: j}\n"
          "spec: {runtimeRef: {name: torch-distributed}, trainer: {numNodes: 1}}\n",
          f);
    fclose(f);
    RENDER(&r, "-f", path, "-n=team");
    unlink(path);
    check_list("-n=team", &r, 0);
    ck_assert_msg(strstr(r.out, "namespace: team") != NULL, "%.2000s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(stdin_given_twice_is_bad_usage)
{
    struct run r;
    const char *says[] = {"standard input", "twice", NULL};

    ck_assert_ptr_nonnull(freopen(testutil_path("badinput/good/trainjob.yaml"), "r", stdin));
    RENDER(&r, "-f", "-", "-f", "-");
    check_refusal("-f - -f -", &r, NULL, NULL, NULL, says);
    run_free(&r);
}
END_TEST

START_TEST(bad_input_on_stdin_is_named_stdin)
{
    struct run r;
    const char *says[] = {"greater than or equal to 0", NULL};

    ck_assert_ptr_nonnull(freopen(
        testutil_path("badinput/cases/a-negative-numnodes-is-refused/input.yaml"), "r", stdin));
    RENDER(&r, "-f", "-");
    check_refusal("stdin", &r, "<stdin>", "10:15", "spec.trainer.numNodes", says);
    run_free(&r);
}
END_TEST

START_TEST(an_empty_stdin_is_refused)
{
    struct run r;
    const char *says[] = {"no documents", NULL};

    ck_assert_ptr_nonnull(freopen("/dev/null", "r", stdin));
    RENDER(&r, "-f", "-");
    check_refusal("empty stdin", &r, "<stdin>", NULL, NULL, says);
    run_free(&r);
}
END_TEST

START_TEST(good_input_on_stdin_renders)
{
    struct run r;

    ck_assert_ptr_nonnull(freopen(testutil_path("badinput/good/trainjob.yaml"), "r", stdin));
    RENDER(&r, "-f", "-");
    check_list("good YAML on stdin", &r, 0);
    run_free(&r);
}
END_TEST

START_TEST(good_yaml_renders_a_list)
{
    struct run r;

    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"));
    check_list("good YAML", &r, 0);
    ck_assert_msg(strstr(r.out, "kind: JobSet") && strstr(r.out, "name: good-input"),
                  "no JobSet good-input in: %.2000s", r.out);
    run_free(&r);
    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.yaml"), "-o", "json");
    check_list("good YAML, -o json", &r, 1);
    run_free(&r);
}
END_TEST

START_TEST(valid_json_input_renders_a_list)
{
    struct run r;

    RENDER(&r, "-f", testutil_path("badinput/good/trainjob.json"));
    check_list("valid JSON", &r, 0);
    ck_assert_msg(strstr(r.out, "name: good-json") != NULL, "no good-json in: %.2000s", r.out);
    run_free(&r);
}
END_TEST

/* ---- the real binary: process exit status ------------------------------------------------ */

/* Run TS_BINARY render -f input; returns the exit status; *out_len and the stderr text. */
static int run_binary(const char *input, size_t *out_len, char *errbuf, size_t errcap)
{
    char out[600], err[600], cmd[2400];
    struct stat st;
    FILE *f;
    size_t n;
    int rc;

    tmp_path(out, sizeof(out), "bin.out");
    tmp_path(err, sizeof(err), "bin.err");
    snprintf(cmd, sizeof(cmd), "'%s' render -f '%s' >'%s' 2>'%s'", TS_BINARY, input, out, err);
    rc = system(cmd);
    ck_assert_msg(rc != -1 && WIFEXITED(rc), "%s: did not exit normally (status 0x%x)", cmd, rc);
    ck_assert_int_eq(stat(out, &st), 0);
    *out_len = (size_t)st.st_size;
    f = fopen(err, "rb");
    ck_assert_ptr_nonnull(f);
    n = fread(errbuf, 1, errcap - 1, f);
    errbuf[n] = '\0';
    fclose(f);
    return WEXITSTATUS(rc);
}

/* render --help's --backend paragraph names every backend of integrations/backends.c's table
 * (slurm was once left out) */
START_TEST(help_names_every_backend_for_backend)
{
    struct run r;
    const struct backend *const *t;
    const char *from, *to;
    size_t n;
    char para[2048];

    RENDER(&r, "--help");
    ck_assert_int_eq(r.status, 0);
    from = strstr(r.out, "      --backend NAME");
    ck_assert_msg(from != NULL, "no --backend in the help: %s", r.out);
    to = strstr(from + 1, "\n      --"); /* the next option */
    ck_assert_ptr_nonnull(to);
    snprintf(para, sizeof(para), "%.*s", (int)(to - from), from);
    t = backend_table(&n);
    ck_assert_uint_gt(n, 0);
    for (size_t i = 0; i < n; i++) {
        const char *p = para;
        size_t len = strlen(t[i]->name);
        int found = 0;
        /* as a word of the list: ", NAME" / " NAME," / "NAME or" ... */
        while (!found && (p = strstr(p, t[i]->name)) != NULL) {
            found = (p == para || strchr(" ,(", p[-1])) && strchr(" ,)\n", p[len]);
            p += len;
        }
        ck_assert_msg(found, "render --help's --backend does not name \"%s\":\n%s", t[i]->name,
                      para);
    }
    run_free(&r);
}
END_TEST

START_TEST(the_binary_exits_2_on_bad_input_and_0_on_good)
{
    char errbuf[8192], big[600];
    size_t outlen;
    const char *bad = testutil_path("badinput/cases/a-negative-numnodes-is-refused/input.yaml");
    char badcopy[4096];
    FILE *f;
    int rc;

    snprintf(badcopy, sizeof(badcopy), "%s", bad);
    rc = run_binary(badcopy, &outlen, errbuf, sizeof(errbuf));
    ck_assert_msg(rc == 2, "bad input: exit %d, want 2: %s", rc, errbuf);
    ck_assert_msg(outlen == 0, "bad input: %zu bytes on stdout", outlen);
    ck_assert_msg(strstr(errbuf, "spec.trainer.numNodes") && count_error_lines(errbuf) == 1,
                  "bad input: %s", errbuf);

    rc = run_binary(testutil_path("badinput/good/trainjob.yaml"), &outlen, errbuf, sizeof(errbuf));
    ck_assert_msg(rc == 0, "good input: exit %d, want 0: %s", rc, errbuf);
    ck_assert_msg(outlen > 0, "good input: no output");

    f = tmp_open(big, sizeof(big), "binary-50mb.yaml");
    put(f, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  big: \"");
    put_n(f, 'x', 50 * 1000 * 1000);
    put(f, "\"\n");
    close_file(f);
    rc = run_binary(big, &outlen, errbuf, sizeof(errbuf));
    ck_assert_msg(rc == 2, "50 MB input: exit %d, want 2: %s", rc, errbuf);
    ck_assert_msg(outlen == 0, "50 MB input: %zu bytes on stdout", outlen);
    ck_assert_msg(strstr(errbuf, "larger than the limit") != NULL, "50 MB input: %s", errbuf);
    tmp_remove(big);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("render_badinput");
    TCase *tc_cases = tcase_create("cases");
    TCase *tc_gen = tcase_create("generated");
    TCase *tc_cli = tcase_create("command_line");

    collect_cases();
    if (ncases == 0) {
        fprintf(stderr, "no cases under %s\n", testutil_path("badinput/cases"));
        return 1;
    }
    tcase_set_timeout(tc_cases, 120);
    tcase_add_loop_test(tc_cases, bad_input_case, 0, ncases);
    suite_add_tcase(s, tc_cases);

    tcase_set_timeout(tc_gen, 300);
    tcase_add_unchecked_fixture(tc_gen, tmp_setup, tmp_teardown);
    tcase_add_test(tc_gen, a_document_over_3_mib_is_refused);
    tcase_add_test(tc_gen, the_3_mib_document_cap_is_exact_enough);
    tcase_add_test(tc_gen, a_50_mb_file_of_one_document_is_refused);
    tcase_add_test(tc_gen, a_50_mb_file_whose_fourth_document_is_too_big_is_refused);
    tcase_add_test(tc_gen, a_50_mb_file_of_good_documents_ending_in_a_malformed_one_is_refused);
    tcase_add_test(tc_gen, flow_lists_nested_10000_deep_are_refused);
    tcase_add_test(tc_gen, json_objects_nested_10000_deep_are_refused);
    tcase_add_test(tc_gen, block_lists_nested_10000_deep_are_refused);
#ifndef TS_ASAN
    tcase_add_test(tc_gen, an_mpi_trainjob_with_int32_max_nodes_is_refused_in_bounded_memory);
#endif
    tcase_add_test(tc_gen, random_binary_data_is_refused);
    tcase_add_test(tc_gen, an_executable_is_refused);
    suite_add_tcase(s, tc_gen);

    tcase_set_timeout(tc_cli, 300);
    tcase_add_unchecked_fixture(tc_cli, tmp_setup, tmp_teardown);
    tcase_add_test(tc_cli, no_input_file_is_bad_usage);
    tcase_add_test(tc_cli, an_unknown_output_format_is_bad_usage);
    tcase_add_test(tc_cli, a_volcano_queue_that_is_no_queue_name_is_bad_usage);
    tcase_add_test(tc_cli, a_kai_queue_that_is_no_queue_name_is_bad_usage);
    tcase_add_test(tc_cli, an_unknown_option_is_bad_usage);
    tcase_add_test(tc_cli, an_unknown_kube_version_is_bad_usage_naming_the_flag_and_the_values);
    tcase_add_test(tc_cli, existing_takes_a_folder);
    tcase_add_test(tc_cli, version_after_the_command_prints_the_version);
    tcase_add_test(tc_cli, a_missing_file_is_named);
    tcase_add_test(tc_cli, a_folder_without_manifests_is_named);
    tcase_add_test(tc_cli, a_folder_renders_its_manifests_in_name_order);
    tcase_add_test(tc_cli, output_given_as_o_equals_json_renders_json);
    tcase_add_test(tc_cli, namespace_given_as_n_equals_ns_is_taken);
    tcase_add_test(tc_cli, stdin_given_twice_is_bad_usage);
    tcase_add_test(tc_cli, bad_input_on_stdin_is_named_stdin);
    tcase_add_test(tc_cli, an_empty_stdin_is_refused);
    tcase_add_test(tc_cli, good_input_on_stdin_renders);
    tcase_add_test(tc_cli, good_yaml_renders_a_list);
    tcase_add_test(tc_cli, valid_json_input_renders_a_list);
    tcase_add_test(tc_cli, the_binary_exits_2_on_bad_input_and_0_on_good);
    tcase_add_test(tc_cli, help_names_every_backend_for_backend);
    suite_add_tcase(s, tc_cli);

    {
        int rc = testutil_run_suite(s);
        for (int i = 0; i < ncases; i++)
            free(cases[i]);
        return rc;
    }
}
