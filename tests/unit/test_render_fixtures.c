/*
 * tests/unit/test_render_fixtures.c - one runner for every case under tests/fixtures/render/.
 *
 * A case is a folder whose name reads as a sentence. It holds input.yaml (TrainJobs and
 * runtimes; a TrainJob naming a built-in runtime needs no runtime document), optionally
 * existing.yaml (objects already in the cluster, given with --existing) and expect.yaml:
 *
 *   exit: 0                  # expected exit status of `trainsched render` (default 0)
 *   stderr: [text, ...]      # each must appear in standard error
 *   objects: [kind/name...]  # exactly these objects, in this order
 *   checks:                  # each names an object, a path and what the value must be
 *     - object: JobSet/alpha
 *       path: spec.replicatedJobs[name=node].template.spec.parallelism
 *       equals: 100          # deep equality with this YAML value
 *     - {object: PodGroup/alpha, path: spec.minResources.cpu, quantity: "1250m"}
 *     - {object: ..., path: ...env, has: {name: X, value: "1"}}  # array holds this element
 *     - {object: ..., path: ...env, lacks-name: PET_MASTER_ADDR} # no element with that name
 *     - {object: ..., path: ...,   absent: true}
 *     - {object: Secret/x, path: data.k, base64-matches: "^ecdsa [^\n]+\n$"}  # decoded value
 *     - {object: ConfigMap/x, path: data.k, matches: "^echo [a-z]+$"}  # string, ^/$ per line
 *                            # matches this POSIX extended regular expression
 *   list: expected-list.yaml # optional: the whole List, compared field by field, except the
 *   ignore: [Secret/x data.ssh-privatekey, ...]  # values that differ per run (key material)
 *   yaml-strings: [ConfigMap/x-runtime-snapshot data.runtime]  # parsed before checks and list
 *   args: [--trainjob-status, --trainjob-status-ca-file, ca.crt]  # more render arguments; one
 *                            # naming a file of the case folder is given as its path
 *
 * Paths: dot-separated keys; [N] an index; [key=value] the array element whose key is value;
 * ["a.b/c"] a key with dots.
 */
#include <dirent.h>
#include <openssl/evp.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "common/quantity.h"
#include "common/yaml.h"
#include "testutil.h"

#define MAX_CASES 512
static char *cases[MAX_CASES];
static int ncases;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_cases(void)
{
    DIR *d = opendir(testutil_path("render"));
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) && ncases < MAX_CASES)
        if (e->d_name[0] != '.')
            cases[ncases++] = strdup(e->d_name);
    closedir(d);
    qsort(cases, (size_t)ncases, sizeof(cases[0]), cmp_str);
}

/* Walk path inside v; returns the borrowed value or NULL. */
static json_t *walk(json_t *v, const char *path)
{
    const char *p = path;
    char key[512];

    while (v && *p) {
        if (*p == '.')
            p++;
        if (*p == '[') {
            const char *end;
            if (p[1] == '"') {
                end = strstr(p + 2, "\"]");
                if (!end || (size_t)(end - p - 2) >= sizeof(key))
                    return NULL;
                memcpy(key, p + 2, (size_t)(end - p - 2));
                key[end - p - 2] = '\0';
                v = json_object_get(v, key);
                p = end + 2;
                continue;
            }
            end = strchr(p, ']');
            if (!end || (size_t)(end - p - 1) >= sizeof(key))
                return NULL;
            memcpy(key, p + 1, (size_t)(end - p - 1));
            key[end - p - 1] = '\0';
            p = end + 1;
            if (strchr(key, '=')) {
                char *eq = strchr(key, '=');
                size_t i;
                json_t *it, *found = NULL;
                *eq = '\0';
                json_array_foreach(v, i, it)
                {
                    json_t *kv = json_object_get(it, key);
                    char num[32];
                    const char *s = json_string_value(kv);
                    if (json_is_integer(kv)) {
                        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(kv));
                        s = num;
                    }
                    if (s && strcmp(s, eq + 1) == 0) {
                        found = it;
                        break;
                    }
                }
                v = found;
            } else {
                v = json_array_get(v, (size_t)strtoul(key, NULL, 10));
            }
            continue;
        }
        {
            size_t n = strcspn(p, ".[");
            if (n >= sizeof(key))
                return NULL;
            memcpy(key, p, n);
            key[n] = '\0';
            v = json_object_get(v, key);
            p += n;
        }
    }
    return v;
}

static json_t *find_object(json_t *items, const char *ref)
{
    const char *slash = strchr(ref, '/');
    size_t i;
    json_t *it;

    json_array_foreach(items, i, it)
    {
        const char *k = json_string_value(json_object_get(it, "kind"));
        const char *n = json_string_value(walk(it, "metadata.name"));
        if (k && n && slash && strlen(k) == (size_t)(slash - ref) &&
            strncmp(k, ref, (size_t)(slash - ref)) == 0 && strcmp(n, slash + 1) == 0)
            return it;
    }
    return NULL;
}

static char *dump(const json_t *v)
{
    return v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : strdup("(missing)");
}

/* First path where a and b differ, into buf (empty when equal). */
static void diff(const json_t *a, const json_t *b, char *path, size_t cap, char *out, size_t n)
{
    size_t len = strlen(path);

    if (out[0])
        return;
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            snprintf(path + len, cap - len, ".%s", k);
            diff(v, json_object_get(b, k), path, cap, out, n);
            path[len] = '\0';
        }
        json_object_foreach((json_t *)b, k, v)
        {
            if (!json_object_get(a, k) && !out[0])
                snprintf(out, n, "%s.%s: unexpected field %s", path, k, dump(v));
        }
        return;
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b)) {
            snprintf(out, n, "%s: expected %zu items, got %zu", path, json_array_size(a),
                     json_array_size(b));
            return;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(path + len, cap - len, "[%zu]", i);
            diff(json_array_get(a, i), json_array_get(b, i), path, cap, out, n);
            path[len] = '\0';
        }
        return;
    }
    if (!a || !b || !json_equal((json_t *)a, (json_t *)b)) {
        char *da = dump(a), *db = dump(b);
        snprintf(out, n, "%s: expected %s, got %s", path, da, db);
        free(da);
        free(db);
    }
}

#define MAX_EXTRA_ARGS 8

static void run_render(const char *dir, const json_t *args, json_t **list, int *status,
                       char **errtext)
{
    char input[4200], existing[4200], extra[MAX_EXTRA_ARGS][4200];
    char *outbuf = NULL, *errbuf = NULL;
    size_t outlen = 0, errlen = 0;
    FILE *out = open_memstream(&outbuf, &outlen);
    FILE *err = open_memstream(&errbuf, &errlen);
    char *argv[8 + MAX_EXTRA_ARGS] = {"render", "-f", input, "-o", "json"};
    int argc = 5;
    FILE *ex;
    json_error_t je;
    size_t i;
    json_t *a;

    snprintf(input, sizeof(input), "%s/input.yaml", dir);
    snprintf(existing, sizeof(existing), "%s/existing.yaml", dir);
    ex = fopen(existing, "r");
    if (ex) {
        fclose(ex);
        argv[argc++] = "--existing";
        argv[argc++] = existing;
    }
    ck_assert_msg(json_array_size(args) <= MAX_EXTRA_ARGS, "%s: at most %d args", dir,
                  MAX_EXTRA_ARGS);
    json_array_foreach(args, i, a)
    {
        const char *v = json_string_value(a);
        FILE *f;
        ck_assert_msg(v != NULL, "%s: args[%zu] must be a string", dir, i);
        snprintf(extra[i], sizeof(extra[i]), "%s/%s", dir, v);
        f = v[0] != '-' ? fopen(extra[i], "r") : NULL;
        if (f)
            fclose(f);
        else
            snprintf(extra[i], sizeof(extra[i]), "%s", v);
        argv[argc++] = extra[i];
    }
    argv[argc] = NULL;
    *status = cmd_render(argc, argv, out, err);
    fclose(out);
    fclose(err);
    *errtext = errbuf;
    *list = NULL;
    if (*status == 0) {
        *list = json_loads(outbuf, 0, &je);
        ck_assert_msg(*list != NULL, "%s: output is not JSON: %s", dir, je.text);
    } else {
        ck_assert_msg(outlen == 0, "%s: a failed render wrote output:\n%s", dir, outbuf);
    }
    free(outbuf);
}

static void check_one(const char *name, json_t *items, json_t *check)
{
    const char *oref = json_string_value(json_object_get(check, "object"));
    const char *path = json_string_value(json_object_get(check, "path"));
    json_t *obj, *v, *want;

    ck_assert_msg(oref && path, "%s: a check needs object and path", name);
    obj = find_object(items, oref);
    ck_assert_msg(obj != NULL, "%s: no object %s in the output", name, oref);
    v = walk(obj, path);
    if ((want = json_object_get(check, "equals"))) {
        char *dv = dump(v), *dw = dump(want);
        ck_assert_msg(v && json_equal(v, want), "%s: %s %s: expected %s, got %s", name, oref, path,
                      dw, dv);
        free(dv);
        free(dw);
    }
    if ((want = json_object_get(check, "quantity"))) {
        struct common_quantity a, b;
        char sw[64];
        const char *got = json_string_value(v);
        if (json_is_integer(want))
            snprintf(sw, sizeof(sw), "%lld", (long long)json_integer_value(want));
        else
            snprintf(sw, sizeof(sw), "%s", json_string_value(want));
        ck_assert_msg(got != NULL, "%s: %s %s: no quantity", name, oref, path);
        ck_assert_int_eq(common_quantity_parse(got, &a, NULL), 0);
        ck_assert_int_eq(common_quantity_parse(sw, &b, NULL), 0);
        ck_assert_msg(common_quantity_cmp(&a, &b) == 0, "%s: %s %s: expected %s, got %s", name,
                      oref, path, sw, got);
    }
    if ((want = json_object_get(check, "has"))) {
        size_t i;
        json_t *it;
        int found = 0;
        char *dv = dump(v), *dw = dump(want);
        json_array_foreach(v, i, it) if (json_equal(it, want)) found = 1;
        ck_assert_msg(found, "%s: %s %s: expected an element %s in %s", name, oref, path, dw, dv);
        free(dv);
        free(dw);
    }
    if ((want = json_object_get(check, "lacks-name"))) {
        size_t i;
        json_t *it;
        json_array_foreach(v, i, it)
        {
            ck_assert_msg(!json_equal(json_object_get(it, "name"), want),
                          "%s: %s %s: must not hold %s", name, oref, path, json_string_value(want));
        }
    }
    if ((want = json_object_get(check, "base64-matches"))) {
        const char *b64 = json_string_value(v);
        size_t n = b64 ? strlen(b64) : 0;
        unsigned char *raw = calloc(n / 4 * 3 + 4, 1);
        int len;
        regex_t re;
        ck_assert_msg(b64 && raw, "%s: %s %s: no base64 string", name, oref, path);
        len = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
        ck_assert_msg(len >= 0, "%s: %s %s: not base64", name, oref, path);
        /* EVP_DecodeBlock counts the padding as zero bytes: drop them */
        while (n > 0 && b64[n - 1] == '=' && len > 0) {
            n--;
            len--;
        }
        raw[len] = '\0';
        ck_assert_int_eq(regcomp(&re, json_string_value(want), REG_EXTENDED | REG_NOSUB), 0);
        ck_assert_msg(regexec(&re, (const char *)raw, 0, NULL, 0) == 0,
                      "%s: %s %s: decoded \"%s\" does not match %s", name, oref, path, raw,
                      json_string_value(want));
        regfree(&re);
        free(raw);
    }
    if ((want = json_object_get(check, "matches"))) {
        /* a string field against an extended regex; ^ and $ match at line ends */
        regex_t re;
        ck_assert_msg(json_is_string(v), "%s: %s %s: no string", name, oref, path);
        ck_assert_int_eq(
            regcomp(&re, json_string_value(want), REG_EXTENDED | REG_NOSUB | REG_NEWLINE), 0);
        ck_assert_msg(regexec(&re, json_string_value(v), 0, NULL, 0) == 0,
                      "%s: %s %s: \"%s\" does not match %s", name, oref, path, json_string_value(v),
                      json_string_value(want));
        regfree(&re);
    }
    if (json_is_true(json_object_get(check, "absent")))
        ck_assert_msg(v == NULL, "%s: %s %s: expected absent", name, oref, path);
}

/* "Kind/name field.path": replace that string field of the object in items by its parsed YAML
 * (no-op when it is not a string any more) */
static void parse_yaml_string(const char *name, json_t *items, const char *spec)
{
    char ref[512], field[256], *dot;
    const char *sp;
    json_t *parent, *str;
    struct common_yaml_docs y;
    struct common_error e;

    snprintf(ref, sizeof(ref), "%s", spec);
    sp = strchr(spec, ' ');
    ck_assert_ptr_nonnull(sp);
    ref[sp - spec] = '\0';
    snprintf(field, sizeof(field), "%s", sp + 1);
    dot = strrchr(field, '.');
    ck_assert_ptr_nonnull(dot);
    *dot = '\0';
    parent = walk(find_object(items, ref), field);
    str = json_object_get(parent, dot + 1);
    if (!json_is_string(str))
        return;
    memset(&y, 0, sizeof(y));
    ck_assert_msg(common_yaml_load(json_string_value(str), json_string_length(str), sp + 1, NULL,
                                   &y, &e) == 0,
                  "%s: %s", name, e.msg);
    ck_assert_int_eq(y.n, 1);
    json_object_set(parent, dot + 1, y.docs[0]);
    common_yaml_docs_free(&y);
}

START_TEST(render_case)
{
    const char *name = cases[_i];
    char dir[2048], path[4096];
    struct common_yaml_docs exp;
    struct common_error e;
    json_t *spec, *list = NULL, *items, *v;
    char *errtext = NULL;
    int status;
    size_t i;
    json_t *it;

    snprintf(dir, sizeof(dir), "%s/render/%s", TS_FIXTURES, name);
    snprintf(path, sizeof(path), "%s/expect.yaml", dir);
    memset(&exp, 0, sizeof(exp));
    ck_assert_msg(common_yaml_load_file(path, NULL, &exp, &e) == 0, "%s: %s", name, e.msg);
    ck_assert_msg(exp.n == 1, "%s: expect.yaml must hold one document", name);
    spec = exp.docs[0];

    run_render(dir, json_object_get(spec, "args"), &list, &status, &errtext);
    v = json_object_get(spec, "exit");
    ck_assert_msg(status == (v ? (int)json_integer_value(v) : 0), "%s: exit %d, stderr:\n%s", name,
                  status, errtext);
    json_array_foreach(json_object_get(spec, "stderr"), i, it)
    {
        ck_assert_msg(strstr(errtext, json_string_value(it)) != NULL,
                      "%s: stderr lacks \"%s\":\n%s", name, json_string_value(it), errtext);
    }
    items = json_object_get(list, "items");
    if ((v = json_object_get(spec, "objects"))) {
        ck_assert_msg(json_array_size(v) == json_array_size(items),
                      "%s: expected %zu objects, got %zu", name, json_array_size(v),
                      json_array_size(items));
        json_array_foreach(v, i, it)
        {
            json_t *o = json_array_get(items, i);
            char ref[512];
            snprintf(ref, sizeof(ref), "%s/%s", json_string_value(json_object_get(o, "kind")),
                     json_string_value(walk(o, "metadata.name")));
            ck_assert_msg(strcmp(ref, json_string_value(it)) == 0, "%s: object %zu is %s, not %s",
                          name, i, ref, json_string_value(it));
        }
    }
    /* the strings that hold YAML are compared parsed, by checks and by the list */
    json_array_foreach(json_object_get(spec, "yaml-strings"), i, it)
        parse_yaml_string(name, items, json_string_value(it));
    json_array_foreach(json_object_get(spec, "checks"), i, it) check_one(name, items, it);
    if ((v = json_object_get(spec, "list"))) {
        struct common_yaml_docs full;
        char where[2048] = "", out[4096] = "";
        json_t *want;
        size_t j;
        json_t *ig;
        memset(&full, 0, sizeof(full));
        snprintf(path, sizeof(path), "%s/%s", dir, json_string_value(v));
        ck_assert_msg(common_yaml_load_file(path, NULL, &full, &e) == 0, "%s: %s", name, e.msg);
        want = full.docs[0];
        /* drop per-run values from both sides */
        json_array_foreach(json_object_get(spec, "ignore"), j, ig)
        {
            char ref[512];
            const char *sp;
            snprintf(ref, sizeof(ref), "%s", json_string_value(ig));
            sp = strchr(ref, ' ');
            ck_assert_ptr_nonnull(sp);
            ref[sp - ref] = '\0';
            {
                json_t *a = walk(find_object(items, ref), sp + 1);
                json_t *b = walk(find_object(json_object_get(want, "items"), ref), sp + 1);
                ck_assert_msg(a != NULL, "%s: ignored %s is missing", name, json_string_value(ig));
                if (a && b)
                    json_string_set(a, json_string_value(b));
            }
        }
        json_array_foreach(json_object_get(spec, "yaml-strings"), j, ig)
            parse_yaml_string(name, json_object_get(want, "items"), json_string_value(ig));
        diff(want, list, where, sizeof(where), out, sizeof(out));
        ck_assert_msg(out[0] == '\0', "%s: %s", name, out);
        common_yaml_docs_free(&full);
    }
    json_decref(list);
    free(errtext);
    common_yaml_docs_free(&exp);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("render fixtures");
    TCase *tc = tcase_create("cases");

    collect_cases();
    if (ncases == 0) {
        fprintf(stderr, "no fixtures under %s/render\n", TS_FIXTURES);
        return 1;
    }
    tcase_add_loop_test(tc, render_case, 0, ncases);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
