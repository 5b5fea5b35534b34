/*
 * tests/unit/test_slurm.c - the Slurm backend's pure core, one runner for every case under
 * tests/fixtures/slurm/.
 *
 * A case is a folder whose name reads as a sentence, of one of two kinds:
 *   submission: input.yaml (a TrainJob and the runtime it names), optionally config.yaml
 *     (api_version, partition, account, qos, gpu_resource, gres_name, workdir) and
 *     expect.json: the whole job submission body slurm_submission must give, or expect.yaml
 *     {error: "<code name>", message: [substrings]} for a refused gang;
 *   answer: answer (a slurmrestd answer body, byte for byte, possibly broken), optionally status
 *     (the HTTP status, default 200) and expect.yaml: {phase, state, reason, nodes: [...],
 *     summary} for a job answer, with find: <comment> to look the job up in a /jobs answer, or
 *     {error: "<code name>", message: [substrings]} when the answer is refused.
 *   decision: decide.yaml {trainjob: <TrainJob>, lookup: none|found|not-found, job: <a job
 *     object of GET /job/{id}>, expect: {action, job_id, record_id, forget_id, poll_after,
 *     condition: {status, reason, message}}} for slurm_gang_decide (absent keys: 0/none).
 *   finalizer: finalizer.yaml {trainjob, selected, have_slurm, now: <RFC 3339>, give_up_s,
 *     expect: {action: nothing|add|release|remove, why: [substrings]} or {error, message}} for
 *     slurm_finalizer_decide.
 * Plus table tests of hostlist expansion.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/yaml.h"
#include "integrations/slurm.h"
#include "testutil.h"
#include "trainjob/status.h"
#include "trainjob/trainjob.h"

#define MAX_CASES 256
static char *cases[MAX_CASES];
static int ncases;

static const char *case_file(const char *name, const char *file)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "slurm/%s/%s", name, file);
    return testutil_path(buf);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* the single document of a YAML file, a new reference */
static json_t *load_yaml(const char *path)
{
    struct common_yaml_limits lim = common_yaml_limits_default();
    struct common_yaml_docs docs = {0};
    struct common_error err = {0};
    json_t *v;

    ck_assert_msg(common_yaml_load_file(path, &lim, &docs, &err) == COMMON_OK, "%s: %s", path,
                  err.msg);
    ck_assert_msg(docs.n >= 1, "%s: no document", path);
    v = json_incref(docs.docs[0]);
    common_yaml_docs_free(&docs);
    return v;
}

static void check_error(const char *name, const json_t *expect, enum common_rc rc,
                        const struct common_error *err)
{
    const char *code = json_string_value(json_object_get(expect, "error"));
    const json_t *m;
    size_t i;

    ck_assert_msg(code, "%s: expect.yaml has neither error nor a result", name);
    ck_assert_msg(rc != COMMON_OK, "%s: expected error %s, got OK", name, code);
    ck_assert_msg(strcmp(common_rc_name(rc), code) == 0, "%s: expected %s, got %s (%s)", name, code,
                  common_rc_name(rc), err->msg);
    json_array_foreach(json_object_get(expect, "message"), i, m)
        ck_assert_msg(strstr(err->msg, json_string_value(m)), "%s: message \"%s\" lacks \"%s\"",
                      name, err->msg, json_string_value(m));
}

/* MPI runtimes need an SSH key pair: a fixed fake one (the Slurm job does not carry it) */
static enum common_rc fake_keygen(struct common_arena *a, char **private_pem, char **public_line,
                                  struct common_error *err)
{
    *private_pem = common_arena_strdup(a, "fake private key\n");
    *public_line = common_arena_strdup(a, "ssh-ed25519 ZmFrZQ==");
    if (!*private_pem || !*public_line)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

static void run_submission(const char *name)
{
    struct trainjob_options opts = {.keygen = fake_keygen};
    struct common_yaml_limits lim = common_yaml_limits_default();
    struct common_yaml_docs docs = {0};
    struct common_error err = {0};
    struct common_arena *a = common_arena_create(0);
    struct trainjob_output out = {0};
    struct slurm_config cfg = {0};
    json_t *tj = NULL, *rt = NULL, *jobset = NULL, *body = NULL, *conf = NULL, *it;
    enum common_rc rc;
    size_t i;

    ck_assert_msg(common_yaml_load_file(case_file(name, "input.yaml"), &lim, &docs, &err) ==
                      COMMON_OK,
                  "%s: %s", name, err.msg);
    for (i = 0; i < docs.n; i++) {
        const char *kind = json_string_value(json_object_get(docs.docs[i], "kind"));
        if (kind && strcmp(kind, "TrainJob") == 0)
            tj = docs.docs[i];
        else if (kind && strstr(kind, "TrainingRuntime"))
            rt = docs.docs[i];
    }
    ck_assert_msg(tj && rt, "%s: input.yaml needs a TrainJob and its runtime", name);
    if (exists(case_file(name, "config.yaml"))) {
        conf = load_yaml(case_file(name, "config.yaml"));
        cfg.api_version = json_string_value(json_object_get(conf, "api_version"));
        cfg.partition = json_string_value(json_object_get(conf, "partition"));
        cfg.account = json_string_value(json_object_get(conf, "account"));
        cfg.qos = json_string_value(json_object_get(conf, "qos"));
        cfg.gpu_resource = json_string_value(json_object_get(conf, "gpu_resource"));
        cfg.gres_name = json_string_value(json_object_get(conf, "gres_name"));
        cfg.workdir = json_string_value(json_object_get(conf, "workdir"));
    }
    trainjob_errors_init(&out.errors, a);
    ck_assert_msg(trainjob_render(a, tj, rt, &opts, &out, &err) == COMMON_OK, "%s: render: %s",
                  name, err.msg);
    json_array_foreach(out.objects, i,
                       it) if (strcmp(json_string_value(json_object_get(it, "kind")), "JobSet") ==
                               0) jobset = it;
    ck_assert_msg(jobset, "%s: no JobSet rendered", name);
    rc = slurm_submission(tj, rt, jobset, &cfg, &body, &err);
    if (exists(case_file(name, "expect.json"))) {
        json_error_t je;
        json_t *want = json_load_file(case_file(name, "expect.json"), 0, &je);
        char *got_s, *want_s;

        ck_assert_msg(want, "%s: expect.json: %s", name, je.text);
        ck_assert_msg(rc == COMMON_OK, "%s: %s", name, err.msg);
        got_s = json_dumps(body, JSON_INDENT(2) | JSON_SORT_KEYS);
        want_s = json_dumps(want, JSON_INDENT(2) | JSON_SORT_KEYS);
        ck_assert_msg(json_equal(body, want), "%s: body differs\n--- got\n%s\n--- want\n%s", name,
                      got_s, want_s);
        free(got_s);
        free(want_s);
        json_decref(want);
    } else {
        json_t *expect = load_yaml(case_file(name, "expect.yaml"));
        check_error(name, expect, rc, &err);
        ck_assert(body == NULL);
        json_decref(expect);
    }
    json_decref(body);
    json_decref(conf);
    json_decref(out.objects);
    common_yaml_docs_free(&docs);
    common_arena_destroy(a);
}

static void run_answer(const char *name)
{
    char *answer = testutil_read(case_file(name, "answer"));
    long status = 200;
    json_t *expect = load_yaml(case_file(name, "expect.yaml")), *doc = NULL, *m;
    const char *find = json_string_value(json_object_get(expect, "find"));
    struct common_arena *a = common_arena_create(0);
    struct common_error err = {0};
    struct slurm_job_state st;
    enum common_rc rc;
    size_t i;

    if (exists(case_file(name, "status"))) {
        char *s = testutil_read(case_file(name, "status"));
        status = strtol(s, NULL, 10);
        free(s);
    }
    rc = slurm_answer_check(status, answer, strlen(answer), "GET /job/1", &doc, &err);
    if (!rc)
        rc = find ? slurm_jobs_find(a, doc, find, &st, &err) : slurm_job_parse(a, doc, &st, &err);
    if (json_object_get(expect, "error")) {
        check_error(name, expect, rc, &err);
    } else {
        ck_assert_msg(rc == COMMON_OK, "%s: %s", name, err.msg);
        ck_assert_str_eq(slurm_phase_name(st.phase),
                         json_string_value(json_object_get(expect, "phase")));
        if (json_object_get(expect, "job_id"))
            ck_assert_int_eq(st.job_id, json_integer_value(json_object_get(expect, "job_id")));
        if (json_object_get(expect, "state"))
            ck_assert_str_eq(st.state, json_string_value(json_object_get(expect, "state")));
        if (json_object_get(expect, "reason"))
            ck_assert_str_eq(st.reason, json_string_value(json_object_get(expect, "reason")));
        if (json_object_get(expect, "summary"))
            ck_assert_str_eq(st.summary, json_string_value(json_object_get(expect, "summary")));
        ck_assert_msg(st.nnodes == json_array_size(json_object_get(expect, "nodes")),
                      "%s: %zu nodes, expected %zu", name, st.nnodes,
                      json_array_size(json_object_get(expect, "nodes")));
        json_array_foreach(json_object_get(expect, "nodes"), i, m)
            ck_assert_str_eq(st.nodes[i], json_string_value(m));
    }
    json_decref(doc);
    json_decref(expect);
    common_arena_destroy(a);
    free(answer);
}

static const char *const actions[] = {"nothing", "find", "lookup",    "submit",
                                      "cancel",  "wait", "allocated", "ended"};

static void run_decide(const char *name)
{
    json_t *in = load_yaml(case_file(name, "decide.yaml"));
    const json_t *ex = json_object_get(in, "expect"), *cond = json_object_get(ex, "condition");
    const char *lk = json_string_value(json_object_get(in, "lookup"));
    struct common_arena *a = common_arena_create(0);
    struct common_error err = {0};
    struct slurm_job_state st;
    struct slurm_gang_decision d;
    enum slurm_lookup lookup = SLURM_LOOKUP_NONE;
    enum common_rc rc;

    if (lk && strcmp(lk, "found") == 0) {
        json_t *answer = json_pack("{s:[O]}", "jobs", json_object_get(in, "job"));
        lookup = SLURM_LOOKUP_FOUND;
        ck_assert_msg(slurm_job_parse(a, answer, &st, &err) == COMMON_OK, "%s: %s", name, err.msg);
        json_decref(answer);
    } else if (lk && strcmp(lk, "not-found") == 0) {
        lookup = SLURM_LOOKUP_NOT_FOUND;
    }
    rc = slurm_gang_decide(a, json_object_get(in, "trainjob"), lookup,
                           lookup == SLURM_LOOKUP_FOUND ? &st : NULL, &d, &err);
    if (json_object_get(ex, "error")) {
        check_error(name, ex, rc, &err);
    } else {
        ck_assert_msg(rc == COMMON_OK, "%s: %s", name, err.msg);
        ck_assert_str_eq(actions[d.action], json_string_value(json_object_get(ex, "action")));
        ck_assert_int_eq(d.job_id, json_integer_value(json_object_get(ex, "job_id")));
        ck_assert_int_eq(d.record_id, json_is_true(json_object_get(ex, "record_id")));
        ck_assert_int_eq(d.forget_id, json_is_true(json_object_get(ex, "forget_id")));
        ck_assert_int_eq(d.poll_after, json_integer_value(json_object_get(ex, "poll_after")));
        if (!cond) {
            ck_assert_msg(d.cond_status == NULL, "%s: unexpected condition %s", name,
                          d.cond_reason);
        } else {
            ck_assert_msg(d.cond_status, "%s: no condition", name);
            ck_assert_str_eq(d.cond_status, json_string_value(json_object_get(cond, "status")));
            ck_assert_str_eq(d.cond_reason, json_string_value(json_object_get(cond, "reason")));
            ck_assert_str_eq(d.cond_message, json_string_value(json_object_get(cond, "message")));
        }
    }
    json_decref(in);
    common_arena_destroy(a);
}

static void run_finalizer(const char *name)
{
    static const char *const fin_actions[] = {"nothing", "add", "release", "remove"};
    json_t *in = load_yaml(case_file(name, "finalizer.yaml"));
    const json_t *ex = json_object_get(in, "expect"), *m;
    struct common_arena *a = common_arena_create(0);
    struct common_error err = {0};
    struct slurm_finalizer_decision d;
    int64_t now = 0;
    enum common_rc rc;
    size_t i;

    ck_assert_msg(trainjob_parse_time(json_string_value(json_object_get(in, "now")), &now) == 0,
                  "%s: now", name);
    rc = slurm_finalizer_decide(a, json_object_get(in, "trainjob"),
                                json_is_true(json_object_get(in, "selected")),
                                json_is_true(json_object_get(in, "have_slurm")), now,
                                json_integer_value(json_object_get(in, "give_up_s")), &d, &err);
    if (json_object_get(ex, "error")) {
        check_error(name, ex, rc, &err);
    } else {
        ck_assert_msg(rc == COMMON_OK, "%s: %s", name, err.msg);
        ck_assert_str_eq(fin_actions[d.action], json_string_value(json_object_get(ex, "action")));
        ck_assert_msg((d.why != NULL) == (json_object_get(ex, "why") != NULL), "%s: why %s", name,
                      d.why ? d.why : "(none)");
        json_array_foreach(json_object_get(ex, "why"), i, m)
            ck_assert_msg(strstr(d.why, json_string_value(m)), "%s: \"%s\" lacks \"%s\"", name,
                          d.why, json_string_value(m));
    }
    json_decref(in);
    common_arena_destroy(a);
}

START_TEST(fixture_case)
{
    const char *name = cases[_i];
    if (exists(case_file(name, "finalizer.yaml")))
        run_finalizer(name);
    else if (exists(case_file(name, "input.yaml")))
        run_submission(name);
    else if (exists(case_file(name, "decide.yaml")))
        run_decide(name);
    else
        run_answer(name);
}
END_TEST

struct hl_case {
    const char *list;
    const char *want; /* names joined by " ", or NULL for an error */
};

static const struct hl_case hl_cases[] = {
    {"n1", "n1"},
    {"n[1-3,5]", "n1 n2 n3 n5"},
    {"gpu[08-11]", "gpu08 gpu09 gpu10 gpu11"},
    {"a[1-2],b7,c[3]", "a1 a2 b7 c3"},
    {"r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2"},
    {"node[1-2]-ib", "node1-ib node2-ib"},
    {"", ""},
    {"n[1-3", NULL},
    {"n1]", NULL},
    {"n[3-1]", NULL},
    {"n[a-b]", NULL},
    {"n[]", NULL},
    {"n[[1]]", NULL},
    {"n1,,n2", NULL},
    {"n[1-100000]", NULL},
};

START_TEST(hostlist_table)
{
    const struct hl_case *c = &hl_cases[_i];
    struct common_arena *a = common_arena_create(0);
    struct common_error err = {0};
    const char **names;
    size_t n;
    char joined[512] = "";
    enum common_rc rc = slurm_hostlist_expand(a, c->list, 1000, &names, &n, &err);

    if (!c->want) {
        ck_assert_msg(rc == COMMON_EINVAL, "\"%s\" should be refused", c->list);
        ck_assert_msg(strstr(err.msg, c->list), "message \"%s\" does not quote the list", err.msg);
    } else {
        ck_assert_msg(rc == COMMON_OK, "\"%s\": %s", c->list, err.msg);
        for (size_t i = 0; i < n; i++) {
            size_t used = strlen(joined);
            snprintf(joined + used, sizeof(joined) - used, "%s%s", i ? " " : "", names[i]);
        }
        ck_assert_str_eq(joined, c->want);
    }
    common_arena_destroy(a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("slurm");
    TCase *tc = tcase_create("fixtures");

    ncases = testutil_cases("slurm", cases, MAX_CASES);
    tcase_add_loop_test(tc, fixture_case, 0, ncases);
    suite_add_tcase(s, tc);
    tc = tcase_create("hostlist");
    tcase_add_loop_test(tc, hostlist_table, 0, (int)(sizeof(hl_cases) / sizeof(hl_cases[0])));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc = testutil_run_suite(suite());
    if (ncases == 0) {
        fprintf(stderr, "no cases under tests/fixtures/slurm\n");
        return 1;
    }
    return rc;
}
