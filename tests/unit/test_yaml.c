/*
 * tests/unit/test_yaml.c - common/yaml: loading, positions, limits, errors and emitting.
 *
 * The data-driven parts walk tests/fixtures/yaml/:
 *   load/<case>/input.yaml (or .json) + expected.json   a JSON array of the documents; each
 *                                                      document must also survive emit + load
 *   errors/<case>/input.yaml (.json, .bin) + expected.txt   line 1: the code's name
 *                                                      (common_rc_name), line 2: the message
 * Inputs are loaded under their file name ("input.yaml"), so messages do not depend on where
 * the tree is. Adding a case needs no C. The rest builds its inputs here: sizes, nesting,
 * allocation failure, emitting.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/yaml.h"
#include "testutil.h"

#define MIB ((size_t)1024 * 1024)

/* ---- helpers ---------------------------------------------------------------------------- */

struct blob {
    char *data;
    size_t len;
};

static struct blob read_blob(const char *path)
{
    struct blob b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    long n;

    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b.data = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b.data);
    ck_assert_uint_eq(fread(b.data, 1, (size_t)n, f), (size_t)n);
    b.data[n] = '\0';
    b.len = (size_t)n;
    fclose(f);
    return b;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted case names under fixtures/yaml/<area>; *n gets the count. Free with free_names. */
static char **case_names(const char *area, size_t *n)
{
    char rel[256];
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t cap = 0;

    snprintf(rel, sizeof(rel), "yaml/%s", area);
    *n = 0;
    d = opendir(testutil_path(rel));
    if (!d)
        return NULL;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (*n == cap) { /* no ck_assert here: this also runs while the suite is built */
            cap = cap ? cap * 2 : 32;
            names = realloc(names, cap * sizeof(*names));
            if (!names)
                abort();
        }
        if (!(names[(*n)++] = strdup(e->d_name)))
            abort();
    }
    closedir(d);
    if (*n)
        qsort(names, *n, sizeof(*names), name_cmp);
    return names;
}

static void free_names(char **names, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The input file of a case directory: its contents and its file name. */
static struct blob case_input(const char *area, const char *name, const char **fname)
{
    static const char *const inputs[] = {"input.yaml", "input.json", "input.bin"};
    char rel[512];
    size_t i;

    for (i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        snprintf(rel, sizeof(rel), "yaml/%s/%s/%s", area, name, inputs[i]);
        if (access(testutil_path(rel), R_OK) == 0) {
            *fname = inputs[i];
            return read_blob(testutil_path(rel));
        }
    }
    ck_abort_msg("%s/%s: no input.yaml, input.json or input.bin", area, name);
    return (struct blob){NULL, 0};
}

/* Load text (NUL-terminated) under the name "input.yaml"; checks success. */
static void load_ok(const char *text, struct common_yaml_docs *docs)
{
    struct common_error err = {0};
    enum common_rc rc = common_yaml_load(text, strlen(text), "input.yaml", NULL, docs, &err);

    ck_assert_msg(rc == COMMON_OK, "load failed: %s\n--- input ---\n%s", err.msg, text);
}

/* json_equal, but also for object keys with a NUL in them (json_equal looks keys up with
 * strlen). */
static int same(json_t *a, json_t *b)
{
    const char *key;
    size_t klen, i;
    json_t *v;

    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_OBJECT:
        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_object_keylen_foreach(a, key, klen, v)
        {
            json_t *w = json_object_getn(b, key, klen);
            if (!w || !same(v, w))
                return 0;
        }
        return 1;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    default:
        return json_equal(a, b);
    }
}

/* the emitter writes NUL as "\0"; loading it back asks to keep it */
static const struct common_yaml_limits keep_nul = {0, 0, 0, 1};

/* Emit v and load it back: must give exactly v. Returns the emitted text (caller frees). */
static char *round_trip(json_t *v)
{
    struct common_buf out;
    struct common_yaml_docs back;
    struct common_error err = {0};
    enum common_rc rc;
    char *text;

    common_buf_init(&out, 64 * MIB);
    rc = common_yaml_emit(v, &out, &err);
    ck_assert_msg(rc == COMMON_OK, "emit failed: %s", err.msg);
    rc = common_yaml_load(out.data, out.len, "emitted", &keep_nul, &back, &err);
    ck_assert_msg(rc == COMMON_OK, "reload failed: %s\n--- emitted ---\n%s", err.msg, out.data);
    if (back.n != 1 || !same(back.docs[0], v)) {
        char *want = json_dumps(v, JSON_ENCODE_ANY | JSON_ALLOW_NUL);
        char *got = back.n ? json_dumps(back.docs[0], JSON_ENCODE_ANY) : NULL;
        ck_abort_msg("round trip differs\n--- value ---\n%s\n--- emitted ---\n%s--- read back "
                     "---\n%s",
                     want, out.data, got ? got : "(no document)");
    }
    common_yaml_docs_free(&back);
    text = strdup(out.data ? out.data : "");
    common_buf_free(&out);
    return text;
}

static char *emit_text(const json_t *v)
{
    struct common_buf out;
    struct common_error err = {0};
    char *text;

    common_buf_init(&out, 64 * MIB);
    ck_assert_msg(common_yaml_emit(v, &out, &err) == COMMON_OK, "emit failed: %s", err.msg);
    text = strdup(out.data ? out.data : "");
    common_buf_free(&out);
    return text;
}

/* ---- fixture cases ------------------------------------------------------------------------ */

START_TEST(load_case)
{
    size_t n, i;
    char **names = case_names("load", &n);
    const char *name = names[_i], *fname;
    struct blob in = case_input("load", name, &fname);
    struct common_yaml_docs docs;
    struct common_error err = {0};
    json_error_t jerr;
    json_t *want;
    char rel[512];
    enum common_rc rc;

    rc = common_yaml_load(in.data, in.len, fname, &keep_nul, &docs, &err);
    ck_assert_msg(rc == COMMON_OK, "%s: %s", name, err.msg);
    snprintf(rel, sizeof(rel), "yaml/load/%s/expected.json", name);
    want = json_load_file(testutil_path(rel), JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    ck_assert_msg(want != NULL, "%s: expected.json: %s at line %d", name, jerr.text, jerr.line);
    ck_assert_msg(json_array_size(want) == docs.n, "%s: %zu documents, want %zu", name, docs.n,
                  json_array_size(want));
    for (i = 0; i < docs.n; i++) {
        if (!json_equal(docs.docs[i], json_array_get(want, i))) {
            char *got = json_dumps(docs.docs[i], JSON_ENCODE_ANY | JSON_INDENT(1));
            char *exp = json_dumps(json_array_get(want, i), JSON_ENCODE_ANY | JSON_INDENT(1));
            ck_abort_msg("%s: document %zu is\n%s\nwant\n%s", name, i + 1, got, exp);
        }
        free(round_trip(docs.docs[i]));
    }
    json_decref(want);
    common_yaml_docs_free(&docs);
    free(in.data);
    free_names(names, n);
}
END_TEST

START_TEST(error_case)
{
    size_t n;
    char **names = case_names("errors", &n);
    const char *name = names[_i], *fname;
    struct blob in = case_input("errors", name, &fname);
    struct blob want;
    struct common_yaml_docs docs;
    struct common_error err = {0};
    char rel[512], *msg;
    enum common_rc rc;

    snprintf(rel, sizeof(rel), "yaml/errors/%s/expected.txt", name);
    want = read_blob(testutil_path(rel));
    msg = strchr(want.data, '\n');
    ck_assert_msg(msg != NULL, "%s: expected.txt needs two lines", name);
    *msg++ = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    rc = common_yaml_load(in.data, in.len, fname, NULL, &docs, &err);
    ck_assert_msg(rc != COMMON_OK, "%s: loaded without error", name);
    ck_assert_msg(strcmp(common_rc_name(rc), want.data) == 0, "%s: code %s, want %s (%s)", name,
                  common_rc_name(rc), want.data, err.msg);
    ck_assert_msg(strcmp(err.msg, msg) == 0, "%s: message\n  %s\nwant\n  %s", name, err.msg, msg);
    ck_assert_uint_eq(docs.n, 0);
    common_yaml_docs_free(&docs);
    free(want.data);
    free(in.data);
    free_names(names, n);
}
END_TEST

/* ---- scalar resolution, one row per form ---------------------------------------------------- */

static const struct {
    const char *yaml; /* the value in "v: <yaml>" */
    const char *json; /* what it must load as */
} scalar_rows[] = {
    {"0400", "256"},
    {"yes", "true"},
    {"\"yes\"", "\"yes\""},
    {"1e3", "1000.0"},
    {"0x1F", "31"},
    {"1_000", "1000"},
    {"Yes", "true"},
    {"NO", "false"},
    {"on", "true"},
    {"Off", "false"},
    {"y", "true"},
    {"N", "false"},
    {"~", "null"},
    {"", "null"},
    {"Null", "null"},
    {"'0400'", "\"0400\""},
    {"0o17", "15"},
    {"0b1010", "10"},
    {"-0x10", "-16"},
    {"+12", "12"},
    {"08", "8.0"},
    {"1.5", "1.5"},
    {".5", "0.5"},
    {"-1.5e-3", "-0.0015"},
    {"1_000.5", "1000.5"},
    {"1:20", "\"1:20\""},
    {"2024-01-01", "\"2024-01-01\""},
    {"1e400", "\"1e400\""},
    {"!!str 1", "\"1\""},
    {"!!int \"0400\"", "256"},
    {"!!float 1", "1.0"},
    {"!!bool on", "true"},
    {"9223372036854775807", "9223372036854775807"},
    {"-9223372036854775808", "-9223372036854775808"},
    {"yesno", "\"yesno\""},
    {"0x", "\"0x\""},
};

START_TEST(scalar_resolves)
{
    char text[256];
    struct common_yaml_docs docs;
    json_t *want = json_loads(scalar_rows[_i].json, JSON_DECODE_ANY, NULL);
    json_t *got;

    snprintf(text, sizeof(text), "v: %s\n", scalar_rows[_i].yaml);
    load_ok(text, &docs);
    got = json_object_get(docs.docs[0], "v");
    ck_assert_ptr_nonnull(want);
    ck_assert_msg(json_equal(got, want), "v: %s loads as %s, want %s", scalar_rows[_i].yaml,
                  json_dumps(got, JSON_ENCODE_ANY), scalar_rows[_i].json);
    json_decref(want);
    common_yaml_docs_free(&docs);
}
END_TEST

/* ---- positions ----------------------------------------------------------------------------- */

static void assert_at(const struct common_yaml_docs *d, const json_t *node, int line, int col,
                      const char *what)
{
    int l = 0, c = 0;

    ck_assert_msg(common_yaml_locate(d, node, &l, &c) == 0, "%s: no position", what);
    ck_assert_msg(l == line && c == col, "%s: at %d:%d, want %d:%d", what, l, c, line, col);
}

static void assert_key_at(const struct common_yaml_docs *d, json_t *obj, const char *key, int line,
                          int col)
{
    int l = 0, c = 0;

    ck_assert_msg(common_yaml_locate_key(d, obj, key, &l, &c) == 0, "key %s: no position", key);
    ck_assert_msg(l == line && c == col, "key %s: at %d:%d, want %d:%d", key, l, c, line, col);
}

START_TEST(positions_are_recorded)
{
    static const char text[] = "# comment\n"            /* 1 */
                               "apiVersion: v1\n"       /* 2 */
                               "spec:\n"                /* 3 */
                               "  replicas: 3\n"        /* 4 */
                               "  list:\n"              /* 5 */
                               "  - name: a\n"          /* 6 */
                               "    flag: true\n"       /* 7 */
                               "  - [x, \"y\", 2.5]\n"  /* 8 */
                               "  base: &b\n"           /* 9 */
                               "    k: v\n"             /* 10 */
                               "  copy: *b\n"           /* 11 */
                               "  <<: {merged: ü}\n"    /* 12 */
                               "---\n"                  /* 13 */
                               "second: \"ünï\" # x\n"; /* 14 */
    struct common_yaml_docs d;
    json_t *root, *spec, *list, *item, *copy;
    int l, c;

    load_ok(text, &d);
    ck_assert_uint_eq(d.n, 2);
    ck_assert_int_eq(d.doc_line[0], 2);
    ck_assert_int_eq(d.doc_line[1], 13);
    root = d.docs[0];
    spec = json_object_get(root, "spec");
    list = json_object_get(spec, "list");
    item = json_array_get(list, 0);
    copy = json_object_get(spec, "copy");
    assert_at(&d, root, 2, 1, "root");
    assert_at(&d, json_object_get(root, "apiVersion"), 2, 13, "apiVersion");
    assert_at(&d, spec, 4, 3, "spec");
    assert_at(&d, json_object_get(spec, "replicas"), 4, 13, "replicas");
    assert_at(&d, list, 6, 3, "list");
    assert_at(&d, item, 6, 5, "list[0]");
    assert_at(&d, json_object_get(item, "name"), 6, 11, "list[0].name");
    assert_at(&d, json_array_get(list, 1), 8, 5, "list[1]");
    assert_at(&d, json_array_get(json_array_get(list, 1), 0), 8, 6, "list[1][0]");
    assert_at(&d, json_array_get(json_array_get(list, 1), 1), 8, 9, "list[1][1]");
    assert_at(&d, json_array_get(json_array_get(list, 1), 2), 8, 14, "list[1][2]");
    assert_at(&d, copy, 11, 9, "copy (at the alias)");
    assert_at(&d, json_object_get(copy, "k"), 10, 8, "copy.k (at the anchored text)");
    assert_at(&d, json_object_get(spec, "merged"), 12, 16, "merged value");
    assert_at(&d, json_object_get(d.docs[1], "second"), 14, 9, "second");
    /* booleans are jansson singletons: no position of their own, but their key has one */
    ck_assert_int_eq(common_yaml_locate(&d, json_object_get(item, "flag"), &l, &c), -1);
    assert_key_at(&d, item, "flag", 7, 5);
    assert_key_at(&d, spec, "replicas", 4, 3);
    assert_key_at(&d, copy, "k", 10, 5);
    assert_key_at(&d, spec, "merged", 12, 8);
    assert_key_at(&d, d.docs[1], "second", 14, 1);
    ck_assert_int_eq(common_yaml_locate_key(&d, spec, "absent", &l, &c), -1);
    ck_assert_int_eq(common_yaml_locate(&d, NULL, &l, &c), -1);
    common_yaml_docs_free(&d);
}
END_TEST

START_TEST(positions_count_characters_and_crlf_lines)
{
    static const char text[] = "\xef\xbb\xbf"
                               "k\xc3\xbc: \xc3\xa9\xc3\xa9 x\r\n"
                               "b: [\xe2\x9c\x93, z]\r\n";
    struct common_yaml_docs d;

    load_ok(text, &d);
    assert_at(&d, json_object_get(d.docs[0], "k\xc3\xbc"), 1, 5, "value after ü");
    assert_at(&d, json_array_get(json_object_get(d.docs[0], "b"), 1), 2, 8, "z after ✓");
    common_yaml_docs_free(&d);
}
END_TEST

/* ---- limits -------------------------------------------------------------------------------- */

static char *repeat(const char *head, char c, size_t n, const char *tail)
{
    size_t h = strlen(head), t = strlen(tail);
    char *s = malloc(h + n + t + 1);

    ck_assert_ptr_nonnull(s);
    memcpy(s, head, h);
    memset(s + h, c, n);
    memcpy(s + h + n, tail, t + 1);
    return s;
}

static enum common_rc load_text(const char *text, size_t len, const struct common_yaml_limits *lim,
                                struct common_error *err)
{
    struct common_yaml_docs d;
    enum common_rc rc = common_yaml_load(text, len, "input.yaml", lim, &d, err);

    if (rc)
        ck_assert_uint_eq(d.n, 0);
    common_yaml_docs_free(&d);
    return rc;
}

START_TEST(nesting_10000_deep_is_refused)
{
    char *deep = repeat("", '[', 10000, "");
    char *ok = malloc(201);
    struct common_error err = {0};

    ck_assert_int_eq(load_text(deep, strlen(deep), NULL, &err), COMMON_EINVAL);
    ck_assert_str_eq(err.msg, "input.yaml:1:101: nesting deeper than 100 levels");
    /* exactly 100 levels is fine */
    memset(ok, '[', 100);
    memset(ok + 100, ']', 100);
    ok[200] = '\0';
    ck_assert_int_eq(load_text(ok, 200, NULL, &err), COMMON_OK);
    free(deep);
    free(ok);
}
END_TEST

START_TEST(aliases_count_toward_depth)
{
    struct common_yaml_limits lim = {0, 5, 0, 0};
    struct common_error err = {0};
    const char *fits = "a: &a [[1]]\nb: [[*a]]\n";
    const char *deep = "a: &a [[1]]\nb: [[[*a]]]\n";

    ck_assert_int_eq(load_text(fits, strlen(fits), &lim, &err), COMMON_OK);
    ck_assert_int_eq(load_text(deep, strlen(deep), &lim, &err), COMMON_EINVAL);
    ck_assert_str_eq(err.msg,
                     "input.yaml:2:7: nesting deeper than 5 levels after expanding alias *a");
}
END_TEST

START_TEST(document_limit_counts_source_bytes)
{
    /* 3 + 48 * 2 + 1 = 100 bytes of two-byte characters: exactly at a 100-byte limit */
    struct common_yaml_limits lim = {100, 0, 0, 0};
    struct common_error err = {0};
    char at[128], over[160];
    size_t i, n = 0;

    memcpy(at, "a: ", 3);
    n = 3;
    for (i = 0; i < 48; i++, n += 2)
        memcpy(at + n, "\xc3\xa9", 2);
    memcpy(at + n, "\n", 2); /* with its NUL */
    snprintf(over, sizeof(over), "a: x%s", at + 3);
    ck_assert_uint_eq(strlen(at), 100);
    ck_assert_int_eq(load_text(at, strlen(at), &lim, &err), COMMON_OK);
    ck_assert_int_eq(load_text(over, strlen(over), &lim, &err), COMMON_ETOOBIG);
    ck_assert_str_eq(err.msg, "input.yaml:1:1: document 1 is larger than the limit of 100 bytes");
}
END_TEST

START_TEST(a_4_mib_document_is_too_big)
{
    struct common_buf b;
    struct common_error err = {0};
    size_t i;

    common_buf_init(&b, 8 * MIB);
    ck_assert_int_eq(common_buf_puts(&b, "first: small\n---\n", &err), COMMON_OK);
    for (i = 0; b.len < 4 * MIB; i++)
        ck_assert_int_eq(common_buf_printf(&b, &err, "key%07zu: value-%07zu\n", i, i), COMMON_OK);
    ck_assert_int_eq(load_text(b.data, b.len, NULL, &err), COMMON_ETOOBIG);
    ck_assert_str_eq(err.msg,
                     "input.yaml:2:1: document 2 is larger than the limit of 3145728 bytes");
    common_buf_free(&b);
}
END_TEST

START_TEST(a_50_mb_scalar_in_memory_is_too_big)
{
    char *big = repeat("data: ", 'x', 50 * MIB, "\n");
    struct common_error err = {0};

    ck_assert_int_eq(load_text(big, strlen(big), NULL, &err), COMMON_ETOOBIG);
    ck_assert_str_eq(err.msg,
                     "input.yaml:1:1: document 1 is larger than the limit of 3145728 bytes");
    free(big);
}
END_TEST

/* Bytes this process has read with read(2) so far (Linux), or 0 when unknown. */
static unsigned long long rchar(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    unsigned long long v = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "rchar:", 6) == 0)
            v = strtoull(line + 6, NULL, 10);
    fclose(f);
    return v;
}

/* Write a 50 MB file (one long scalar, or many short lines), load it, check it is refused
 * after reading a small part. */
static void fifty_mb_file(int lines)
{
    char path[] = "/tmp/test_yaml_bigXXXXXX";
    int fd = mkstemp(path);
    FILE *f;
    struct common_yaml_docs d;
    struct common_error err = {0};
    unsigned long long before, after;
    char chunk[65536];
    size_t i;
    char want[256];

    ck_assert_int_ge(fd, 0);
    f = fdopen(fd, "wb");
    ck_assert_ptr_nonnull(f);
    if (lines) {
        for (i = 0; i < 50 * MIB / 24; i++)
            fprintf(f, "key%08zu: value%06zu\n", i, i % 1000000);
    } else {
        memset(chunk, 'x', sizeof(chunk));
        fputs("data: ", f);
        for (i = 0; i < 50 * MIB / sizeof(chunk); i++)
            fwrite(chunk, 1, sizeof(chunk), f);
    }
    fclose(f);
    before = rchar();
    ck_assert_int_eq(common_yaml_load_file(path, NULL, &d, &err), COMMON_ETOOBIG);
    after = rchar();
    unlink(path);
    snprintf(want, sizeof(want), "%s:1:1: document 1 is larger than the limit of 3145728 bytes",
             path);
    ck_assert_str_eq(err.msg, want);
    ck_assert_uint_eq(d.n, 0);
    if (before || after) /* streaming: stopped soon after the 3 MiB limit */
        ck_assert_msg(after - before < 4 * MIB, "read %llu bytes", after - before);
    common_yaml_docs_free(&d);
}

START_TEST(a_50_mb_file_is_refused_after_reading_about_3_mib)
{
    fifty_mb_file(0);
    fifty_mb_file(1);
}
END_TEST

START_TEST(the_whole_input_is_capped_at_64_documents_worth)
{
    struct common_yaml_limits lim = {1000, 0, 0, 0};
    struct common_buf b;
    struct common_error err = {0};
    int i;

    common_buf_init(&b, MIB);
    for (i = 0; i < 200; i++)
        ck_assert_int_eq(common_buf_printf(&b, &err, "---\na: x%0500d\n", i), COMMON_OK);
    ck_assert_int_eq(load_text(b.data, b.len, &lim, &err), COMMON_ETOOBIG);
    ck_assert_str_eq(err.msg, "input.yaml: larger than the limit of 64000 bytes");
    common_buf_free(&b);
}
END_TEST

START_TEST(a_billion_laughs_fails_fast_at_the_node_cap)
{
    struct common_yaml_limits lim = {0, 0, 1000, 0};
    struct common_yaml_docs d;
    struct common_error err = {0};

    ck_assert_int_eq(common_yaml_load_file(testutil_path("yaml/errors/"
                                                         "billion-laughs-stops-at-the-node-cap/"
                                                         "input.yaml"),
                                           &lim, &d, &err),
                     COMMON_ETOOBIG);
    ck_assert_msg(strstr(err.msg, ":5:10: document 1 has more than 1000 nodes") != NULL, "%s",
                  err.msg);
    common_yaml_docs_free(&d);
}
END_TEST

/* The default limits refuse NUL: every field common_yaml_limits_default does not name is 0
 * (allow_nul was once left as stack garbage, so the refusal held only by chance). */
START_TEST(default_limits_refuse_nul)
{
    static const char text[] = "a: \"x\\0y\"\n";
    struct common_yaml_limits l;
    struct common_error err;
    struct common_yaml_docs docs;

    memset(&l, 0xa5, sizeof(l));
    l = common_yaml_limits_default();
    ck_assert_int_eq(l.allow_nul, 0);
    ck_assert_int_eq(common_yaml_load(text, strlen(text), "nul.yaml", NULL, &docs, &err),
                     COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "nul.yaml:1:"));
    common_yaml_docs_free(&docs);
    ck_assert_int_eq(common_yaml_load(text, strlen(text), "nul.yaml", &l, &docs, &err),
                     COMMON_EINVAL);
    common_yaml_docs_free(&docs);
}
END_TEST

START_TEST(empty_inputs_give_no_documents)
{
    static const char *const inputs[] = {"",      "\n\n",        "# only a comment\n",
                                         "---\n", "--- \n...\n", "---\n---\n# x\n"};
    size_t i;
    struct common_yaml_docs d;
    struct common_error err = {0};

    for (i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        ck_assert_int_eq(common_yaml_load(inputs[i], strlen(inputs[i]), "x", NULL, &d, &err),
                         COMMON_OK);
        ck_assert_msg(d.n == 0, "input %zu gave %zu documents", i, d.n);
        common_yaml_docs_free(&d);
    }
    ck_assert_int_eq(common_yaml_load(NULL, 0, "x", NULL, &d, &err), COMMON_OK);
    ck_assert_uint_eq(d.n, 0);
    common_yaml_docs_free(&d);
}
END_TEST

START_TEST(load_file_names_the_file)
{
    struct common_yaml_docs d;
    struct common_error err = {0};
    const char *path = testutil_path("yaml/errors/a-duplicate-key-names-both-lines/input.yaml");
    char want[1200];

    ck_assert_int_eq(common_yaml_load_file(path, NULL, &d, &err), COMMON_EINVAL);
    snprintf(want, sizeof(want), "%s:4:3: duplicate key \"name\": first on line 2, again on line 4",
             path);
    ck_assert_str_eq(err.msg, want);
    common_yaml_docs_free(&d);
    ck_assert_int_eq(common_yaml_load_file("/nonexistent/x.yaml", NULL, &d, &err),
                     COMMON_ENOTFOUND);
    ck_assert_str_eq(err.msg, "/nonexistent/x.yaml: no such file");
    common_yaml_docs_free(&d);
    ck_assert_int_eq(common_yaml_load_file(testutil_path("yaml/load/a-kubernetes-manifest/"
                                                         "input.yaml"),
                                           NULL, &d, &err),
                     COMMON_OK);
    ck_assert_uint_eq(d.n, 2);
    common_yaml_docs_free(&d);
}
END_TEST

START_TEST(load_file_reads_standard_input_and_refuses_a_directory)
{
    struct common_yaml_docs d;
    struct common_error err = {0};

    /* Check runs each test in its own process, so replacing stdin here is harmless */
    ck_assert_ptr_nonnull(
        freopen(testutil_path("yaml/errors/a-duplicate-key-in-json/input.json"), "r", stdin));
    ck_assert_int_eq(common_yaml_load_file("-", NULL, &d, &err), COMMON_EINVAL);
    ck_assert_str_eq(err.msg, "<stdin>:3:2: duplicate key \"a\": first on line 1, again on line 3");
    common_yaml_docs_free(&d);
    ck_assert_int_eq(common_yaml_load_file("/tmp", NULL, &d, &err), COMMON_EIO);
    ck_assert_str_eq(err.msg, "/tmp: read failed: Is a directory");
    common_yaml_docs_free(&d);
}
END_TEST

/* ---- allocation failure ---------------------------------------------------------------------- */

/* For n = 1, 2, ...: fail the n-th allocation and every later one; each attempt must end in a
 * clean COMMON_ENOMEM (ASan reports any leak) until one succeeds. */
START_TEST(every_allocation_failure_is_clean)
{
    char path[1024], nomem_msg[1200];
    struct blob in;
    unsigned long n;
    int pass;

    snprintf(path, sizeof(path), "%s", testutil_path("yaml/alloc-failure.yaml"));
    snprintf(nomem_msg, sizeof(nomem_msg), "%s: out of memory", path);
    in = read_blob(path);

    for (pass = 0; pass < 2; pass++) {
        for (n = 1; n < 100000; n++) {
            struct common_yaml_docs d;
            struct common_error err = {0};
            enum common_rc rc;
            int failed;

            common_alloc_fail_at(n);
            rc = pass ? common_yaml_load_file(path, NULL, &d, &err)
                      : common_yaml_load(in.data, in.len, "input.yaml", NULL, &d, &err);
            failed = common_alloc_failed();
            common_alloc_fail_at(0);
            if (rc == COMMON_OK) {
                ck_assert_msg(!failed, "n=%lu: an allocation failed but the load succeeded", n);
                ck_assert_uint_eq(d.n, 3);
                common_yaml_docs_free(&d);
                break;
            }
            ck_assert_msg(rc == COMMON_ENOMEM, "n=%lu: %s", n, err.msg);
            ck_assert_str_eq(err.msg, pass ? nomem_msg : "input.yaml: out of memory");
            ck_assert_uint_eq(d.n, 0);
            common_yaml_docs_free(&d);
        }
        ck_assert_uint_gt(n, 50);
    }
    free(in.data);
}
END_TEST

START_TEST(allocation_failure_while_reporting_an_error_is_clean)
{
    const char *text = "a: &x {b: [1, 2]}\nc: *x\nd: 1\nd: 2\n";
    unsigned long n;

    for (n = 1; n < 100000; n++) {
        struct common_error err = {0};
        enum common_rc rc;

        common_alloc_fail_at(n);
        rc = load_text(text, strlen(text), NULL, &err);
        common_alloc_fail_at(0);
        if (rc == COMMON_EINVAL) {
            ck_assert_str_eq(err.msg, "input.yaml:4:1: duplicate key \"d\": first on line 3, "
                                      "again on line 4");
            break;
        }
        ck_assert_msg(rc == COMMON_ENOMEM, "n=%lu: %s", n, err.msg);
    }
}
END_TEST

START_TEST(emit_allocation_failure_is_clean)
{
    struct common_yaml_docs d;
    unsigned long n;

    load_ok("a: [1, {b: c}, \"yes\"]\nd: {}\ne: |\n  x\n  y\n", &d);
    for (n = 1; n < 100000; n++) {
        struct common_buf out;
        struct common_error err = {0};
        enum common_rc rc;
        int failed;

        common_buf_init(&out, MIB);
        common_alloc_fail_at(n);
        rc = common_yaml_emit(d.docs[0], &out, &err);
        failed = common_alloc_failed();
        common_alloc_fail_at(0);
        common_buf_free(&out);
        if (rc == COMMON_OK) {
            ck_assert(!failed);
            break;
        }
        ck_assert_msg(rc == COMMON_ENOMEM, "n=%lu: %s", n, err.msg);
    }
    ck_assert_uint_gt(n, 1);
    common_yaml_docs_free(&d);
}
END_TEST

/* ---- emitting ---------------------------------------------------------------------------------
 */

static const struct {
    const char *s;
    size_t len;       /* 0: strlen */
    const char *want; /* how "v: <s>" is written, or NULL to only check the round trip */
} string_rows[] = {
    {"true", 0, "v: \"true\"\n"},
    {"0400", 0, "v: \"0400\"\n"},
    {"", 0, "v: \"\"\n"},
    {" x", 0, "v: ' x'\n"},
    {"x ", 0, "v: 'x '\n"},
    {"a: b", 0, "v: 'a: b'\n"},
    {"- x", 0, "v: '- x'\n"},
    {"#c", 0, "v: '#c'\n"},
    {"null", 0, "v: \"null\"\n"},
    {"~", 0, "v: \"~\"\n"},
    {"1.5", 0, "v: \"1.5\"\n"},
    {"multi\nline", 0, "v: |-\n  multi\n  line\n"},
    {"ends in newline\n", 0, "v: |\n  ends in newline\n"},
    {"ünïcödé ✓", 0, "v: ünïcödé ✓\n"},
    {"plain text", 0, "v: plain text\n"},
    {"yes", 0, "v: \"yes\"\n"},
    {"Off", 0, "v: \"Off\"\n"},
    {"1e3", 0, "v: \"1e3\"\n"},
    {"1e400", 0, "v: \"1e400\"\n"},
    {"0x1F", 0, "v: \"0x1F\"\n"},
    {"1_000", 0, "v: \"1_000\"\n"},
    {".inf", 0, "v: \".inf\"\n"},
    {"1:20", 0, "v: \"1:20\"\n"},
    {"2024-01-01T00:00:00Z", 0, "v: \"2024-01-01T00:00:00Z\"\n"},
    {"<<", 0, "v: \"<<\"\n"},
    {"99999999999999999999", 0, "v: \"99999999999999999999\"\n"},
    {"nginx:1.25", 0, "v: nginx:1.25\n"},
    {"500m", 0, "v: 500m\n"},
    {"'quoted'", 0, NULL},
    {"\"dq\"", 0, NULL},
    {"a #b", 0, NULL},
    {"a:", 0, NULL},
    {"?", 0, NULL},
    {"---", 0, NULL},
    {"...", 0, NULL},
    {"@x", 0, NULL},
    {"`x", 0, NULL},
    {"%x", 0, NULL},
    {"!x", 0, NULL},
    {"&x", 0, NULL},
    {"*x", 0, NULL},
    {"[x]", 0, NULL},
    {"{x}", 0, NULL},
    {"|", 0, NULL},
    {">", 0, NULL},
    {"tab\there", 0, NULL},
    {"cr\rlf", 0, NULL},
    {"crlf\r\nline", 0, NULL},
    {"\n", 0, NULL},
    {"\n\n", 0, NULL},
    {"x\n\n", 0, NULL},
    {"\nlead", 0, NULL},
    {"  indented\nblock", 0, NULL},
    {"trailing space \nnext", 0, NULL},
    {"line\n  more indented\nback", 0, NULL},
    {"nel\xc2\x85here", 0, NULL},
    {"ls\xe2\x80\xa8ps\xe2\x80\xa9", 0, NULL},
    {"bom\xef\xbb\xbfinside", 0, NULL},
    {"emoji 😀", 0, NULL},
    {"bell\a", 0, NULL},
    {"nul\0inside", 10, NULL},
    {"=", 0, NULL},
    {"-", 0, NULL},
    {"a\\b", 0, NULL},
    {"C:\\path", 0, NULL},
    {"# not a comment\nsecond: line", 0, NULL},
    {"very long string that goes on and on and on and on and on and on and on and on and "
     "on and on and on and on and on and on and on and on and on past any line width",
     0, NULL},
};

START_TEST(strings_round_trip)
{
    const char *s = string_rows[_i].s;
    size_t len = string_rows[_i].len ? string_rows[_i].len : strlen(s);
    json_t *v = json_stringn(s, len);
    json_t *obj = json_object(), *keyed = json_object();
    char *text;

    ck_assert_ptr_nonnull(v);
    json_object_set(obj, "v", v);
    json_object_setn_new(keyed, s, len, json_integer(1));
    text = round_trip(obj);
    if (string_rows[_i].want)
        ck_assert_msg(strcmp(text, string_rows[_i].want) == 0, "%s is written as\n%swant\n%s", s,
                      text, string_rows[_i].want);
    free(text);
    free(round_trip(keyed));
    free(round_trip(v));
    json_decref(v);
    json_decref(obj);
    json_decref(keyed);
}
END_TEST

static const struct {
    const char *json;
    const char *want;
} number_rows[] = {
    {"0", "0\n"},
    {"-7", "-7\n"},
    {"9223372036854775807", "9223372036854775807\n"},
    {"-9223372036854775808", "-9223372036854775808\n"},
    {"1000.0", "1000.0\n"},
    {"0.1", "0.1\n"},
    {"-0.0", "-0.0\n"},
    {"1.5", "1.5\n"},
    {"1e20", "1e+20\n"},
    {"1.5e-7", "1.5e-07\n"},
    {"123456789.123", "123456789.123\n"},
    {"0.30000000000000004", "0.30000000000000004\n"},
    {"1.7976931348623157e308", "1.7976931348623157e+308\n"},
    {"5e-324", "5e-324\n"},
    {"true", "true\n"},
    {"false", "false\n"},
    {"null", "null\n"},
};

START_TEST(numbers_print_exactly)
{
    json_t *v = json_loads(number_rows[_i].json, JSON_DECODE_ANY, NULL);
    char *text;

    ck_assert_ptr_nonnull(v);
    text = round_trip(v);
    ck_assert_msg(strncmp(text, number_rows[_i].want, strlen(number_rows[_i].want)) == 0,
                  "%s is written as %s", number_rows[_i].json, text);
    free(text);
    json_decref(v);
}
END_TEST

START_TEST(emit_looks_like_kubectl)
{
    static const char want[] = "apiVersion: v1\n"
                               "kind: Pod\n"
                               "metadata:\n"
                               "  labels:\n"
                               "    app: web\n"
                               "  name: p\n"
                               "spec:\n"
                               "  containers:\n"
                               "  - args:\n"
                               "    - -c\n"
                               "    - echo hi\n"
                               "    image: busybox\n"
                               "    name: c\n"
                               "  - name: d\n"
                               "  emptyDir: {}\n"
                               "  tolerations: []\n"
                               "  matrix:\n"
                               "  - - 1\n"
                               "    - 2\n"
                               "  - []\n"
                               "  script: |\n"
                               "    #!/bin/sh\n"
                               "    echo \"a: b\"\n"
                               "  enabled: \"on\"\n";
    struct common_yaml_docs d;
    char *text;

    load_ok(want, &d);
    text = emit_text(d.docs[0]);
    ck_assert_msg(strcmp(text, want) == 0, "written as\n%s", text);
    free(text);
    free(round_trip(d.docs[0]));
    common_yaml_docs_free(&d);
}
END_TEST

START_TEST(emit_empty_containers_and_root_scalars)
{
    static const struct {
        const char *json, *want;
    } rows[] = {{"{}", "{}\n"},           {"[]", "[]\n"},     {"\"x\"", "x\n"},
                {"\"yes\"", "\"yes\"\n"}, {"[[]]", "- []\n"}, {"{\"a\": {}}", "a: {}\n"},
                {"[{}]", "- {}\n"},       {"\"\"", "\"\"\n"}};
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        json_t *v = json_loads(rows[i].json, JSON_DECODE_ANY, NULL);
        char *text = round_trip(v);
        ck_assert_msg(strcmp(text, rows[i].want) == 0, "%s is written as\n%s", rows[i].json, text);
        free(text);
        json_decref(v);
    }
}
END_TEST

START_TEST(emit_respects_the_buffer_cap_and_appends)
{
    struct common_buf out;
    struct common_error err = {0};
    json_t *v = json_pack("{s:s}", "key", "a value longer than the cap");

    common_buf_init(&out, 16);
    ck_assert_int_eq(common_buf_puts(&out, "abc", &err), COMMON_OK);
    ck_assert_int_eq(common_yaml_emit(v, &out, &err), COMMON_ETOOBIG);
    ck_assert_str_eq(out.data, "abc");
    common_buf_free(&out);
    common_buf_init(&out, 1024);
    ck_assert_int_eq(common_buf_puts(&out, "---\n", &err), COMMON_OK);
    ck_assert_int_eq(common_yaml_emit(v, &out, &err), COMMON_OK);
    ck_assert_str_eq(out.data, "---\nkey: a value longer than the cap\n");
    common_buf_free(&out);
    json_decref(v);
}
END_TEST

START_TEST(emit_refuses_a_string_that_is_not_utf8)
{
    struct common_buf out;
    struct common_error err = {0};
    json_t *v = json_stringn_nocheck("caf\xe9", 4);

    common_buf_init(&out, 1024);
    ck_assert_int_eq(common_yaml_emit(v, &out, &err), COMMON_EINVAL);
    ck_assert_str_eq(err.msg, "a string is not valid UTF-8");
    ck_assert_uint_eq(out.len, 0);
    common_buf_free(&out);
    json_decref(v);
}
END_TEST

/* A deterministic generator of awkward values: load(emit(x)) must equal x for all of them. */
static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static json_t *random_string(void)
{
    static const char *const pieces[] = {
        "a",          " ",  "\n",  ":",  "#",   "-",        "yes",
        "0",          "1",  "e",   ".",  "x",   "'",        "\"",
        "\\",         "\t", "ü",   "😀",  "~",   "!",        "&",
        "*",          "?",  "|",   ">",  "%",   "@",        "`",
        "null",       "0x", "1_0", "--", "...", ",",        "[",
        "]",          "{",  "}",   "\r", "<<",  "\xc2\x85", "\xe2\x80\xa8",
        "2001-01-01", ": ", " #",  "1e3"};
    char buf[256];
    size_t n = rng() % 8, i, at = 0;

    for (i = 0; i < n; i++) {
        const char *p = pieces[rng() % (sizeof(pieces) / sizeof(pieces[0]))];
        size_t l = strlen(p);
        if (at + l >= sizeof(buf))
            break;
        memcpy(buf + at, p, l);
        at += l;
    }
    return json_stringn(buf, at);
}

static json_t *random_value(int depth)
{
    unsigned k = (unsigned)(rng() % (depth > 4 ? 6 : 8));
    json_t *v;
    size_t i, n;

    switch (k) {
    case 0:
        return json_integer((json_int_t)rng());
    case 1: {
        double d;
        uint64_t bits = rng();
        memcpy(&d, &bits, sizeof(d));
        return json_real(isfinite(d) ? d : 0.5);
    }
    case 2:
        return json_boolean(rng() & 1);
    case 3:
        return json_null();
    case 4:
    case 5:
        return random_string();
    case 6:
        v = json_array();
        n = rng() % 4;
        for (i = 0; i < n; i++)
            json_array_append_new(v, random_value(depth + 1));
        return v;
    default:
        v = json_object();
        n = rng() % 4;
        for (i = 0; i < n; i++) {
            json_t *key = random_string();
            json_object_setn_new(v, json_string_value(key), json_string_length(key),
                                 random_value(depth + 1));
            json_decref(key);
        }
        return v;
    }
}

START_TEST(random_values_round_trip)
{
    int i;

    for (i = 0; i < 3000; i++) {
        json_t *v = random_value(0);
        free(round_trip(v));
        json_decref(v);
    }
}
END_TEST

static Suite *yaml_suite(void)
{
    Suite *s = suite_create("yaml");
    TCase *fixtures = tcase_create("fixtures");
    TCase *load = tcase_create("load");
    TCase *limits = tcase_create("limits");
    TCase *alloc = tcase_create("alloc");
    TCase *emit = tcase_create("emit");
    size_t n;
    char **names;

    names = case_names("load", &n);
    tcase_add_loop_test(fixtures, load_case, 0, (int)n);
    free_names(names, n);
    names = case_names("errors", &n);
    tcase_add_loop_test(fixtures, error_case, 0, (int)n);
    free_names(names, n);
    tcase_set_timeout(fixtures, 120);
    suite_add_tcase(s, fixtures);

    tcase_add_loop_test(load, scalar_resolves, 0, sizeof(scalar_rows) / sizeof(scalar_rows[0]));
    tcase_add_test(load, positions_are_recorded);
    tcase_add_test(load, positions_count_characters_and_crlf_lines);
    tcase_add_test(load, empty_inputs_give_no_documents);
    tcase_add_test(load, default_limits_refuse_nul);
    tcase_add_test(load, load_file_names_the_file);
    tcase_add_test(load, load_file_reads_standard_input_and_refuses_a_directory);
    suite_add_tcase(s, load);

    tcase_add_test(limits, nesting_10000_deep_is_refused);
    tcase_add_test(limits, aliases_count_toward_depth);
    tcase_add_test(limits, document_limit_counts_source_bytes);
    tcase_add_test(limits, a_4_mib_document_is_too_big);
    tcase_add_test(limits, a_50_mb_scalar_in_memory_is_too_big);
    tcase_add_test(limits, a_50_mb_file_is_refused_after_reading_about_3_mib);
    tcase_add_test(limits, the_whole_input_is_capped_at_64_documents_worth);
    tcase_add_test(limits, a_billion_laughs_fails_fast_at_the_node_cap);
    tcase_set_timeout(limits, 300);
    suite_add_tcase(s, limits);

    tcase_add_test(alloc, every_allocation_failure_is_clean);
    tcase_add_test(alloc, allocation_failure_while_reporting_an_error_is_clean);
    tcase_add_test(alloc, emit_allocation_failure_is_clean);
    tcase_set_timeout(alloc, 300);
    suite_add_tcase(s, alloc);

    tcase_add_loop_test(emit, strings_round_trip, 0, sizeof(string_rows) / sizeof(string_rows[0]));
    tcase_add_loop_test(emit, numbers_print_exactly, 0,
                        sizeof(number_rows) / sizeof(number_rows[0]));
    tcase_add_test(emit, emit_looks_like_kubectl);
    tcase_add_test(emit, emit_empty_containers_and_root_scalars);
    tcase_add_test(emit, emit_respects_the_buffer_cap_and_appends);
    tcase_add_test(emit, emit_refuses_a_string_that_is_not_utf8);
    tcase_add_test(emit, random_values_round_trip);
    tcase_set_timeout(emit, 120);
    suite_add_tcase(s, emit);
    return s;
}

int main(void)
{
    return testutil_run_suite(yaml_suite());
}
