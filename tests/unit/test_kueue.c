/*
 * tests/unit/test_kueue.c - integrations/kueue.c: the Workload Kueue makes for a TrainJob.
 *
 * workload_names_match_kueues_own_function: every line of tests/fixtures/kueue/
 * workload-names.tsv was computed by Kueue's own GetWorkloadNameForOwnerWithGVK (written by
 * tests/tools/kueuenames, with the ShortWorkloadNames gate off and on); kueue_workload_name must
 * give the same name for each.
 *
 * preview_fixtures: one case per folder under tests/fixtures/kueue/preview/. input.yaml holds a
 * TrainJob (with metadata.uid), the TrainingRuntime it names, and any WorkloadPriorityClass /
 * PriorityClass objects; expect.yaml holds
 *   options: {shortNames: bool, noTas: bool}     # optional
 *   workload: {...}                              # fields the Workload must have, or
 *   absent: [path, ...]                          # dot paths the Workload must not have
 *   error: "text"                                # a substring of the error, or
 *   note: "text"                                 # a substring of the note (with workload)
 * The JobSet the preview starts from is what trainjob_render makes of the TrainJob.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "common/arena.h"
#include "common/yaml.h"
#include "integrations/kueue.h"
#include "testutil.h"
#include "trainjob/trainjob.h"

START_TEST(workload_names_match_kueues_own_function)
{
    char *text = testutil_read(testutil_path("kueue/workload-names.tsv"));
    char *line = text, *next;
    int n = 0, shorts = 0, truncated = 0;

    for (; line && *line; line = next) {
        char *f[6], *p = line, out[KUEUE_WORKLOAD_NAME_MAX + 1];
        struct common_error err;
        int i;
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        for (i = 0; i < 6; i++) {
            f[i] = p;
            p = strchr(p, '\t');
            if (i < 5) {
                ck_assert_msg(p != NULL, "line %d: fewer than 6 fields", n + 1);
                *p++ = '\0';
            }
        }
        ck_assert_msg(kueue_workload_name(f[1], f[2], f[3], f[4], f[0][0] == '1', out, sizeof(out),
                                          &err) == COMMON_OK,
                      "line %d: %s", n + 1, err.msg);
        ck_assert_msg(strcmp(out, f[5]) == 0,
                      "line %d (%s %s/%s uid %s short %s): ours %s, Kueue's %s", n + 1, f[1], f[2],
                      f[3], f[4], f[0], out, f[5]);
        shorts += f[0][0] == '1';
        truncated += strlen(f[5]) == (f[0][0] == '1' ? 63u : 253u);
        n++;
    }
    /* the vectors cover both gate settings and names cut at each limit */
    ck_assert_int_ge(n, 1000);
    ck_assert_int_gt(shorts, 0);
    ck_assert_int_lt(shorts, n);
    ck_assert_int_gt(truncated, 10);
    free(text);
}
END_TEST

START_TEST(workload_name_rejects_missing_parts)
{
    char out[KUEUE_WORKLOAD_NAME_MAX + 1], tiny[16];
    struct common_error err;
    ck_assert_int_eq(
        kueue_workload_name("TrainJob", "trainer.kubeflow.org", "", "u", 0, out, sizeof(out), &err),
        COMMON_EINVAL);
    ck_assert(strstr(err.msg, "metadata.name") != NULL);
    ck_assert_int_eq(kueue_workload_name("TrainJob", "trainer.kubeflow.org", "a", NULL, 0, out,
                                         sizeof(out), &err),
                     COMMON_EINVAL);
    ck_assert(strstr(err.msg, "metadata.uid") != NULL);
    ck_assert_int_eq(kueue_workload_name("TrainJob", "trainer.kubeflow.org", "a", "u", 1, tiny,
                                         sizeof(tiny), &err),
                     COMMON_EINVAL);
}
END_TEST

/* ---- preview fixtures ---- */

static json_t *find_kind(const struct common_yaml_docs *d, const char *kind, const char *name)
{
    for (size_t i = 0; i < d->n; i++) {
        const char *k = json_string_value(json_object_get(d->docs[i], "kind"));
        const char *n =
            json_string_value(json_object_get(json_object_get(d->docs[i], "metadata"), "name"));
        if (k && strcmp(k, kind) == 0 && (!name || (n && strcmp(n, name) == 0)))
            return d->docs[i];
    }
    return NULL;
}

/* the first path where have lacks a value of want or holds another ("" when none), into
 * where: objects compare key by key (have may hold more keys), arrays item by item */
static void diff(const json_t *want, const json_t *have, const char *path, char *where, size_t size)
{
    char sub[1024];
    if (*where)
        return;
    if (json_is_object(want) && json_is_object(have)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)want, k, v)
        {
            snprintf(sub, sizeof(sub), "%s.%s", path, k);
            diff(v, json_object_get(have, k), sub, where, size);
        }
        return;
    }
    if (json_is_array(want) && json_is_array(have) &&
        json_array_size(want) == json_array_size(have)) {
        for (size_t i = 0; i < json_array_size(want); i++) {
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            diff(json_array_get(want, i), json_array_get(have, i), sub, where, size);
        }
        return;
    }
    if (!have || !json_equal((json_t *)want, (json_t *)have)) {
        char *a = json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT),
             *b = have ? json_dumps(have, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        snprintf(where, size, "%s: want %s, have %s", path, a ? a : "?", b ? b : "(nothing)");
        free(a);
        free(b);
    }
}

static void run_case(const char *name)
{
    char path[1024], where[2048] = "";
    struct common_yaml_docs in, ex;
    struct common_error err;
    struct common_arena *a = common_arena_create(0);
    struct trainjob_output out = {0};
    struct kueue_preview_opts o = {0};
    json_t *tj, *rt, *classes = json_array(), *js = NULL, *wl = NULL, *opts, *want, *abs;
    const char *note = NULL, *want_err, *want_note;
    char *text;
    enum common_rc rc;
    size_t i;

    snprintf(path, sizeof(path), "kueue/preview/%s/input.yaml", name);
    text = testutil_read(testutil_path(path));
    ck_assert_msg(common_yaml_load(text, strlen(text), path, NULL, &in, &err) == COMMON_OK, "%s",
                  err.msg);
    free(text);
    snprintf(path, sizeof(path), "kueue/preview/%s/expect.yaml", name);
    text = testutil_read(testutil_path(path));
    ck_assert_msg(common_yaml_load(text, strlen(text), path, NULL, &ex, &err) == COMMON_OK, "%s",
                  err.msg);
    free(text);
    ck_assert_msg(ex.n == 1, "%s: one document", path);

    tj = find_kind(&in, "TrainJob", NULL);
    ck_assert_msg(tj != NULL, "%s: no TrainJob", name);
    rt = find_kind(&in, "TrainingRuntime",
                   json_string_value(json_object_get(
                       json_object_get(json_object_get(tj, "spec"), "runtimeRef"), "name")));
    ck_assert_msg(rt != NULL, "%s: no TrainingRuntime named by the TrainJob", name);
    for (i = 0; i < in.n; i++) {
        const char *k = json_string_value(json_object_get(in.docs[i], "kind"));
        if (k && (strcmp(k, "WorkloadPriorityClass") == 0 || strcmp(k, "PriorityClass") == 0))
            json_array_append(classes, in.docs[i]);
    }
    o.classes = classes;
    opts = json_object_get(ex.docs[0], "options");
    o.short_names = json_is_true(json_object_get(opts, "shortNames"));
    o.no_tas = json_is_true(json_object_get(opts, "noTas"));

    trainjob_errors_init(&out.errors, a);
    {
        struct trainjob_options to = {.no_gang_marks = 1};
        rc = trainjob_render(a, tj, rt, &to, &out, &err);
    }
    ck_assert_msg(rc == COMMON_OK && out.objects, "%s: render: %s", name, err.msg);
    for (i = 0; i < json_array_size(out.objects); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(out.objects, i), "kind")),
                   "JobSet") == 0)
            js = json_array_get(out.objects, i);
    ck_assert_msg(js != NULL, "%s: render made no JobSet", name);

    rc = kueue_workload_preview(tj, js, &o, &wl, &note, &err);
    want_err = json_string_value(json_object_get(ex.docs[0], "error"));
    want_note = json_string_value(json_object_get(ex.docs[0], "note"));
    want = json_object_get(ex.docs[0], "workload");
    if (want_err) {
        ck_assert_msg(rc != COMMON_OK, "%s: no error, want \"%s\"", name, want_err);
        ck_assert_msg(strstr(err.msg, want_err) != NULL, "%s: error \"%s\", want \"%s\"", name,
                      err.msg, want_err);
    } else {
        ck_assert_msg(rc == COMMON_OK, "%s: %s", name, err.msg);
        ck_assert_msg(want != NULL, "%s: expect.yaml has neither workload nor error", name);
        diff(want, wl, "Workload", where, sizeof(where));
        ck_assert_msg(!*where, "%s: %s", name, where);
        json_array_foreach(json_object_get(ex.docs[0], "absent"), i, abs)
        {
            const json_t *v = wl;
            char key[256], *dot, *p = key;
            snprintf(key, sizeof(key), "%s", json_string_value(abs));
            for (; v && p; p = dot) {
                dot = strchr(p, '.');
                if (dot)
                    *dot++ = '\0';
                v = json_is_array(v) ? json_array_get(v, strtoul(p, NULL, 10))
                                     : json_object_get(v, p);
            }
            ck_assert_msg(v == NULL, "%s: %s is set", name, json_string_value(abs));
        }
        if (want_note)
            ck_assert_msg(note && strstr(note, want_note), "%s: note \"%s\", want \"%s\"", name,
                          note ? note : "(none)", want_note);
        else
            ck_assert_msg(note == NULL, "%s: unexpected note \"%s\"", name, note);
    }
    json_decref(wl);
    json_decref(classes);
    json_decref(out.objects);
    common_yaml_docs_free(&in);
    common_yaml_docs_free(&ex);
    common_arena_destroy(a);
}

START_TEST(preview_fixtures)
{
    DIR *d = opendir(testutil_path("kueue/preview"));
    struct dirent *e;
    int n = 0;
    ck_assert_msg(d != NULL, "no tests/fixtures/kueue/preview");
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        fprintf(stderr, "kueue preview case: %s\n", e->d_name);
        run_case(e->d_name);
        n++;
    }
    closedir(d);
    ck_assert_int_gt(n, 0);
}
END_TEST

/* `render -f tests/fixtures/<fixture> -o json --backend kueue` (it must succeed): the List
 * (a new reference), its JobSet and Workload (borrowed from it; the test fails without them) and
 * the number of PodGroups */
static json_t *render_kueue(const char *fixture, json_t **js, json_t **wl, int *podgroups)
{
    char path[1024], *outbuf = NULL, *errbuf = NULL;
    size_t outlen = 0, errlen = 0, i;
    FILE *out = open_memstream(&outbuf, &outlen), *err = open_memstream(&errbuf, &errlen);
    char *argv[] = {"render", "-f", path, "-o", "json", "--backend", "kueue", NULL};
    json_t *list, *it;
    int status;

    snprintf(path, sizeof(path), "%s", testutil_path(fixture));
    status = cmd_render(7, argv, out, err);
    fclose(out);
    fclose(err);
    ck_assert_msg(status == 0, "render exit %d: %s", status, errbuf);
    list = json_loads(outbuf, 0, NULL);
    ck_assert_ptr_nonnull(list);
    *js = *wl = NULL;
    *podgroups = 0;
    json_array_foreach(json_object_get(list, "items"), i, it)
    {
        const char *k = json_string_value(json_object_get(it, "kind"));
        if (strcmp(k, "JobSet") == 0)
            *js = it;
        else if (strcmp(k, "Workload") == 0)
            *wl = it;
        else if (strcmp(k, "PodGroup") == 0)
            (*podgroups)++;
    }
    ck_assert_msg(*js && *wl, "render printed no JobSet or no Workload: %s", outbuf);
    free(outbuf);
    free(errbuf);
    return list;
}

/* `render --backend kueue` of a TrainJob on a coscheduling runtime: the JobSet, no PodGroup
 * (Kueue alone writes no gang object), and the Workload preview named by Kueue's rule for the
 * uid the JobSet's owner reference carries (render's placeholder) */
START_TEST(render_backend_kueue_prints_the_workload_and_no_gang_object)
{
    char want[KUEUE_WORKLOAD_NAME_MAX + 1];
    json_t *js, *wl, *list;
    struct common_error e;
    int podgroups;

    list = render_kueue("kueue/render/coscheduling-runtime-with-a-queue-label.yaml", &js, &wl,
                        &podgroups);
    ck_assert_int_eq(podgroups, 0);
    ck_assert_int_eq(
        kueue_workload_name(
            "TrainJob", "trainer.kubeflow.org", "queued",
            json_string_value(json_object_get(
                json_array_get(json_object_get(json_object_get(js, "metadata"), "ownerReferences"),
                               0),
                "uid")),
            0, want, sizeof(want), &e),
        COMMON_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(wl, "metadata"), "name")),
                     want);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(wl, "spec"), "queueName")),
                     "team-queue");
    ck_assert_int_eq(
        json_integer_value(json_object_get(
            json_array_get(json_object_get(json_object_get(wl, "spec"), "podSets"), 0), "count")),
        3);
    json_decref(list);
}
END_TEST

/* the first container of a replicated job (jobset 1: template.spec.template.spec) or of a
 * podSet (template.spec) */
static const json_t *container0(const json_t *o, int jobset)
{
    o = json_object_get(o, "template");
    if (jobset)
        o = json_object_get(json_object_get(o, "spec"), "template");
    return json_array_get(json_object_get(json_object_get(o, "spec"), "containers"), 0);
}

/* `render --backend kueue` of a TrainJob on the built-in torch runtime, with the
 * WorkloadPriorityClass its label names in the same file: the Workload preview is Kueue v0.19's
 * (the podSet template without the torch policy's env and port, which the JobSet has; spec.active
 * true; the class's priority) */
START_TEST(render_backend_kueue_previews_kueues_view_of_the_jobset_and_the_priority)
{
    json_t *js, *wl, *list;
    const json_t *jc, *wc, *spec;
    int podgroups;

    list = render_kueue("kueue/render/torch-builtin-with-a-workload-priority-class.yaml", &js, &wl,
                        &podgroups);
    spec = json_object_get(wl, "spec");
    ck_assert_int_eq(json_integer_value(json_object_get(spec, "priority")), 1000);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(spec, "priorityClassRef"), "name")),
        "team-high");
    ck_assert(json_is_true(json_object_get(spec, "active")));
    jc = container0(
        json_array_get(json_object_get(json_object_get(js, "spec"), "replicatedJobs"), 0), 1);
    wc = container0(json_array_get(json_object_get(spec, "podSets"), 0), 0);
    ck_assert_msg(json_array_size(json_object_get(jc, "env")) > 0, "the JobSet lost the torch env");
    ck_assert_msg(json_object_get(wc, "env") == NULL && json_object_get(wc, "ports") == NULL,
                  "the preview has the torch policy's env or ports, which Kueue leaves out");
    ck_assert_str_eq(
        json_string_value(json_object_get(
            json_object_get(json_object_get(wc, "resources"), "limits"), "nvidia.com/gpu")),
        "2");
    json_decref(list);
}
END_TEST

/* the tested Kueue version is written once (tests/e2e/testbed/versions.env, read by the build
 * into KUEUE_TESTED_VERSION); the pages that name it name that one */
START_TEST(docs_name_the_tested_kueue_version)
{
    static const char *const pages[] = {"docs/backends.md", "tests/e2e/testbed/README.md"};
    char path[1024], *env;
    snprintf(path, sizeof(path), "%s/tests/e2e/testbed/versions.env", TS_SOURCE_DIR);
    env = testutil_read(path);
    ck_assert_msg(strstr(env, "\nKUEUE_VERSION=v" KUEUE_TESTED_VERSION " ") != NULL,
                  "versions.env does not pin KUEUE_VERSION=v%s", KUEUE_TESTED_VERSION);
    free(env);
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        char *text;
        snprintf(path, sizeof(path), "%s/%s", TS_SOURCE_DIR, pages[i]);
        text = testutil_read(path);
        ck_assert_msg(strstr(text, "v" KUEUE_TESTED_VERSION) != NULL,
                      "%s does not name the tested Kueue version v%s", pages[i],
                      KUEUE_TESTED_VERSION);
        free(text);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kueue");
    TCase *tc = tcase_create("kueue");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, workload_names_match_kueues_own_function);
    tcase_add_test(tc, workload_name_rejects_missing_parts);
    tcase_add_test(tc, preview_fixtures);
    tcase_add_test(tc, render_backend_kueue_prints_the_workload_and_no_gang_object);
    tcase_add_test(tc, docs_name_the_tested_kueue_version);
    tcase_add_test(tc, render_backend_kueue_previews_kueues_view_of_the_jobset_and_the_priority);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
