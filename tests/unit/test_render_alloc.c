/*
 * tests/unit/test_render_alloc.c - allocation-failure ("torture") tests of trainjob_render and of
 * `trainsched render` (cmd_render).
 *
 * For each case the TrainJob and its runtime are loaded once with failure injection off, and a
 * reference render is made. Then for n = 1, 2, ... common_alloc_fail_at(n) makes the n-th
 * allocation of the render (and every later one) fail, until a run completes with no injected
 * failure. Every run must either fail cleanly (COMMON_ENOMEM with a message, no objects) or
 * succeed with exactly the reference objects (a swallowed failure must not change the output);
 * it must never crash, and nothing may leak. The first TORTURE_FULL points are walked one by
 * one; past them the walk steps by a stride so that a case stays near TORTURE_MAX_RUNS renders.
 *
 * Leaks: in the sanitizer build (-DTS_SANITIZE=ON) LeakSanitizer checks each forked test at
 * exit (the test then fails with "Early exit"). To tie a leak to a failure point, the walk also
 * runs a recoverable leak check every TS_TORTURE_LEAK_EVERY runs (default 32; 1 names the exact
 * n) and reports the first window of n that leaked. MPI renders use a key generator that only
 * allocates in the arena (the OpenSSL one allocates outside the hooks).
 *
 * cmd_render is walked the same way on two fixtures (one with its runtime in the file, one
 * naming a built-in runtime): every failing run must exit 1 with a message on stderr and
 * nothing on stdout; exit 2 would blame the input for an internal failure.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "common/alloc.h"
#include "common/arena.h"
#include "common/yaml.h"
#include "testutil.h"
#include "trainjob/builtin.h"
#include "trainjob/trainjob.h"

#if defined(__SANITIZE_ADDRESS__)
#define TORTURE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TORTURE_LSAN 1
#endif
#endif
#ifdef TORTURE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

#define TORTURE_FULL 2000      /* failure points walked one by one */
#define TORTURE_MAX_RUNS 12000 /* about this many renders per case past the full range */

/* ---- a key generator that allocates only in the arena ---------------------------------- */

static enum common_rc arena_keygen(struct common_arena *a, char **private_pem, char **public_line,
                                   struct common_error *err)
{
    *private_pem = common_arena_strdup(a, "-----BEGIN EC PRIVATE KEY-----\n"
                                          "dG9ydHVyZSB0ZXN0IGtleSwgbm90IGEgcmVhbCBvbmU=\n"
                                          "-----END EC PRIVATE KEY-----\n");
    *public_line = common_arena_strdup(a, "ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjE=");
    if (!*private_pem || !*public_line)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

/* ---- loading the inputs (injection off) -------------------------------------------------- */

struct inputs {
    struct common_yaml_docs file;    /* the fixture */
    struct common_yaml_docs builtin; /* the built-in runtime, when the case uses one */
    const json_t *trainjob, *runtime;
};

static const json_t *find_kind(const struct common_yaml_docs *d, const char *kind)
{
    for (size_t i = 0; i < d->n; i++) {
        const char *k = json_string_value(json_object_get(d->docs[i], "kind"));
        if (k && strcmp(k, kind) == 0)
            return d->docs[i];
    }
    return NULL;
}

static void load_inputs(struct inputs *in, const char *fixture, const char *builtin)
{
    struct common_error err;
    const char *path = testutil_path(fixture);

    memset(in, 0, sizeof(*in));
    common_alloc_fail_at(0);
    ck_assert_msg(common_yaml_load_file(path, NULL, &in->file, &err) == COMMON_OK, "%s: %s", path,
                  err.msg);
    in->trainjob = find_kind(&in->file, "TrainJob");
    ck_assert_msg(in->trainjob != NULL, "%s: no TrainJob", path);
    if (builtin) {
        const struct trainjob_builtin *b = trainjob_builtin_find(builtin);
        ck_assert_msg(b != NULL, "no built-in runtime %s", builtin);
        ck_assert_msg(common_yaml_load(b->yaml, b->len, builtin, NULL, &in->builtin, &err) ==
                          COMMON_OK,
                      "built-in %s: %s", builtin, err.msg);
        ck_assert_uint_eq(in->builtin.n, 1);
        in->runtime = in->builtin.docs[0];
    } else {
        in->runtime = find_kind(&in->file, "TrainingRuntime");
        if (!in->runtime)
            in->runtime = find_kind(&in->file, "ClusterTrainingRuntime");
        ck_assert_msg(in->runtime != NULL, "%s: no runtime document", path);
    }
}

static void free_inputs(struct inputs *in)
{
    common_yaml_docs_free(&in->file);
    common_yaml_docs_free(&in->builtin);
}

/* ---- the walk ------------------------------------------------------------------------------ */

struct torture_case {
    const char *name;    /* for messages */
    const char *fixture; /* under tests/fixtures/ */
    const char *builtin; /* built-in runtime name, or NULL: the runtime is in the fixture */
};

static const struct torture_case cases[] = {
    {"torch TrainingRuntime with coscheduling",
     "badinput/alloc/torch-trainingruntime-and-trainjob.yaml", NULL},
    {"MPI deepspeed-distributed", "badinput/alloc/mpi-deepspeed-trainjob.yaml",
     "deepspeed-distributed"},
    {"torchtune-llama3.2-1b LoRA", "badinput/alloc/torchtune-lora-trainjob.yaml",
     "torchtune-llama3.2-1b"},
    {"volcano TrainingRuntime", "badinput/alloc/volcano-trainingruntime-and-trainjob.yaml", NULL},
};

/* Does anything leak right now? Only in sanitizer builds; prints LSan's report when so. */
static int leaks_now(void)
{
#ifdef TORTURE_LSAN
    return __lsan_do_recoverable_leak_check();
#else
    return 0;
#endif
}

/*
 * Leak probing along a walk. A recoverable leak check costs tens of milliseconds, so it runs
 * after every `every`-th run (TS_TORTURE_LEAK_EVERY, default 32; 1 pins the exact n) and at the
 * end; the first failing check names the window of failure points that leaked. Leaked memory
 * stays leaked, so probing stops at the first leak.
 */
struct leak_probe {
    unsigned long every, since, clean_upto; /* last n known to leave no leak */
    unsigned long from, to;                 /* first leaking window; from == 0: none */
};

static void leak_probe_init(struct leak_probe *p)
{
    const char *e = getenv("TS_TORTURE_LEAK_EVERY");

    memset(p, 0, sizeof(*p));
    p->every = e && strtoul(e, NULL, 10) > 0 ? strtoul(e, NULL, 10) : 32;
}

/* after the run at n (n = 0: the reference run); force: check now */
static void leak_probe_after(struct leak_probe *p, unsigned long n, int force)
{
    if (p->from || (++p->since < p->every && !force))
        return;
    p->since = 0;
    if (leaks_now()) {
        p->from = p->clean_upto + 1;
        p->to = n;
        if (n == 0)
            p->from = ULONG_MAX; /* the reference run leaks */
    } else {
        p->clean_upto = n;
    }
}

/* "" or a failure message */
static const char *leak_probe_verdict(const struct leak_probe *p, const char *what)
{
    static char msg[512];

    if (!p->from)
        return "";
    if (p->from == ULONG_MAX)
        snprintf(msg, sizeof(msg), "%s: the run with no failure injected leaks: see LSan's report",
                 what);
    else if (p->from == p->to)
        snprintf(msg, sizeof(msg),
                 "%s: memory leaks after the allocation failure at n=%lu: see "
                 "LSan's report above",
                 what, p->from);
    else
        snprintf(msg, sizeof(msg),
                 "%s: memory leaks after an allocation failure at some n in "
                 "[%lu, %lu] (TS_TORTURE_LEAK_EVERY=1 pins it): see LSan's report above",
                 what, p->from, p->to);
    return msg;
}

/* One render with the n-th allocation failing (n = 0: no injection). Returns the code; *objects
 * gets the objects (new reference) on success; *failed whether an injected failure happened.
 * Objects set on a failure break the contract ("objects only on success"): they are dropped and
 * the run is reported as failing with objects (*failed = 2). */
static enum common_rc render_at(const struct inputs *in, unsigned long n, json_t **objects,
                                int *failed, struct common_error *err)
{
    struct trainjob_options opts = {"default", NULL, arena_keygen, NULL, NULL};
    struct trainjob_output out;
    struct common_arena *a;
    enum common_rc rc;

    common_alloc_fail_at(0);
    a = common_arena_create(0);
    ck_assert_ptr_nonnull(a);
    memset(&out, 0, sizeof(out));
    memset(err, 0, sizeof(*err));
    common_alloc_fail_at(n);
    rc = trainjob_render(a, in->trainjob, in->runtime, &opts, &out, err);
    *failed = common_alloc_failed();
    common_alloc_fail_at(0);
    if (rc != COMMON_OK && out.objects) {
        json_decref(out.objects);
        out.objects = NULL;
        *failed = 2;
    }
    *objects = out.objects;
    common_arena_destroy(a);
    return rc;
}

START_TEST(trainjob_render_survives_every_allocation_failure)
{
    const struct torture_case *tc = &cases[_i];
    struct inputs in;
    struct common_error err;
    struct leak_probe probe;
    json_t *ref = NULL, *got;
    enum common_rc rc;
    int failed;
    unsigned long n, total, step = 1, runs = 0, nomem = 0, ok_after_failure = 0, first_bad = 0;
    char bad[COMMON_ERROR_MSG_MAX + 128] = "";

    load_inputs(&in, tc->fixture, tc->builtin);
    leak_probe_init(&probe);
    rc = render_at(&in, 0, &ref, &failed, &err);
    ck_assert_msg(rc == COMMON_OK && ref, "%s: reference render failed (%d): %s", tc->name, rc,
                  err.msg);
    leak_probe_after(&probe, 0, 1);

    /* count the allocations of one render: the largest n that is reached */
    for (total = 1;; total *= 2) {
        rc = render_at(&in, total, &got, &failed, &err);
        json_decref(got);
        if (!failed)
            break;
    }
    {
        unsigned long lo = total / 2, hi = total; /* lo reached (or 0), hi not reached */
        while (hi - lo > 1) {
            unsigned long mid = lo + (hi - lo) / 2;
            rc = render_at(&in, mid, &got, &failed, &err);
            json_decref(got);
            if (failed)
                lo = mid;
            else
                hi = mid;
        }
        total = lo;
    }
    /* the counting runs failed at a few n in [1, 2 * total] */
    leak_probe_after(&probe, 2 * total, 1);
    if (total > TORTURE_FULL && (total - TORTURE_FULL) / TORTURE_MAX_RUNS > 1)
        step = (total - TORTURE_FULL) / TORTURE_MAX_RUNS;

    for (n = 1;; n += n < TORTURE_FULL ? 1 : step) {
        rc = render_at(&in, n, &got, &failed, &err);
        runs++;
        if (!failed) {
            /* past the last allocation: a plain, complete render */
            ck_assert_msg(rc == COMMON_OK && got, "%s: n=%lu (no failure injected): rc %d: %s",
                          tc->name, n, rc, err.msg);
            ck_assert_msg(json_equal(got, ref), "%s: n=%lu: output differs from the reference",
                          tc->name, n);
            json_decref(got);
            leak_probe_after(&probe, n, 1);
            break;
        }
        if (failed == 2 && !first_bad) {
            first_bad = n;
            snprintf(bad, sizeof(bad),
                     "n=%lu: render returned %d (%s) but left out->objects set (objects only on "
                     "success)",
                     n, rc, common_rc_name(rc));
        } else if (rc == COMMON_OK) {
            ok_after_failure++;
            if (!json_equal(got, ref) && !first_bad) {
                first_bad = n;
                snprintf(bad, sizeof(bad),
                         "n=%lu: an allocation failed but render returned COMMON_OK with "
                         "different (incomplete) objects",
                         n);
            }
            json_decref(got);
        } else if (rc == COMMON_ENOMEM && err.msg[0]) {
            nomem++;
        } else if (!first_bad) {
            first_bad = n;
            snprintf(bad, sizeof(bad),
                     "n=%lu: an allocation failed but render returned %d (%s) with message \"%s\" "
                     "instead of COMMON_ENOMEM",
                     n, rc, common_rc_name(rc), err.msg);
        }
        leak_probe_after(&probe, n, 0);
        if (n > total + TORTURE_FULL + step)
            ck_abort_msg("%s: n=%lu: still failing past the %lu allocations counted", tc->name, n,
                         total);
    }
    fprintf(stderr,
            "%s: %lu allocations per render, %lu runs (step %lu past %d): %lu ENOMEM, %lu OK "
            "despite a failure\n",
            tc->name, total, runs, step, TORTURE_FULL, nomem, ok_after_failure);
    json_decref(ref);
    free_inputs(&in);
    ck_assert_msg(!first_bad, "%s: %s", tc->name, bad);
    ck_assert_msg(!probe.from, "%s", leak_probe_verdict(&probe, tc->name));
}
END_TEST

/* ---- the same for the whole `trainsched render` command ----------------------------------- */

struct cmd_result {
    int status;
    char *out, *err;
    size_t outlen, errlen;
};

static void run_cmd(const char *fixture, unsigned long n, struct cmd_result *r, int *failed)
{
    char *argv[] = {"render", "-f", (char *)fixture, NULL};
    FILE *out = open_memstream(&r->out, &r->outlen);
    FILE *err = open_memstream(&r->err, &r->errlen);

    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(err);
    common_alloc_fail_at(n);
    r->status = cmd_render(3, argv, out, err);
    *failed = common_alloc_failed();
    common_alloc_fail_at(0);
    fclose(out);
    fclose(err);
}

/*
 * cmd_render under allocation failure: each failing run exits 1 (internal error) with a
 * message and writes nothing on standard output; never 2 (that would blame the input).
 * The second fixture names a built-in runtime, so the built-in lookup is walked too.
 */
START_TEST(render_command_survives_every_allocation_failure)
{
    static const char *const fixtures[] = {"badinput/alloc/torch-trainingruntime-and-trainjob.yaml",
                                           "badinput/alloc/torchtune-lora-trainjob.yaml"};
    char path[4096];
    struct cmd_result ref, r;
    unsigned long n, runs = 0;
    struct leak_probe probe;
    /* kinds of wrong answer: count, first n, and the stderr of that first run */
    static const char *const what[] = {
        "exit 0 with output different from the reference",
        "exit 2 (bad input) instead of 1 (internal error)",
        "another exit status than 0, 1 or 2",
        "exit 1 with partial output on stdout",
        "exit 1 with nothing on stderr (no message says what failed)",
    };
    unsigned long count[5] = {0}, first[5] = {0};
    char first_err[5][512];
    char report[4096] = "";
    int failed, kind;

    snprintf(path, sizeof(path), "%s", testutil_path(fixtures[_i]));
    leak_probe_init(&probe);
    run_cmd(path, 0, &ref, &failed);
    ck_assert_msg(ref.status == 0, "%s: reference run exits %d: %s", path, ref.status, ref.err);
    leak_probe_after(&probe, 0, 1);
    for (n = 1;; n += n < TORTURE_FULL ? 1 : 7) {
        run_cmd(path, n, &r, &failed);
        runs++;
        if (!failed) {
            ck_assert_msg(r.status == 0, "n=%lu (no failure injected): exit %d: %s", n, r.status,
                          r.err);
            ck_assert_msg(r.outlen == ref.outlen && memcmp(r.out, ref.out, r.outlen) == 0,
                          "n=%lu: output differs from the reference", n);
            free(r.out);
            free(r.err);
            leak_probe_after(&probe, n, 1);
            break;
        }
        kind = -1;
        if (r.status == 0 && (r.outlen != ref.outlen || memcmp(r.out, ref.out, r.outlen)))
            kind = 0;
        else if (r.status == 2)
            kind = 1;
        else if (r.status != 0 && r.status != 1)
            kind = 2;
        else if (r.status == 1 && r.outlen)
            kind = 3;
        else if (r.status == 1 && !r.errlen)
            kind = 4;
        if (kind >= 0 && count[kind]++ == 0) {
            first[kind] = n;
            snprintf(first_err[kind], sizeof(first_err[kind]), "%s", r.err ? r.err : "");
        }
        free(r.out);
        free(r.err);
        leak_probe_after(&probe, n, 0);
        ck_assert_msg(n < 10000000, "never completes");
    }
    for (kind = 0; kind < 5; kind++)
        if (count[kind]) {
            size_t used = strlen(report);
            snprintf(report + used, sizeof(report) - used,
                     "\n  %s: %lu runs, first at n=%lu (stderr: \"%.300s\")", what[kind],
                     count[kind], first[kind], first_err[kind]);
        }
    fprintf(stderr, "cmd_render %s: %lu runs%s\n", fixtures[_i], runs, report);
    free(ref.out);
    free(ref.err);
    ck_assert_msg(!report[0], "%s: wrong answers under allocation failure:%s", path, report);
    ck_assert_msg(!probe.from, "%s", leak_probe_verdict(&probe, path));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("render_alloc");
    TCase *tc = tcase_create("trainjob_render");
    TCase *cmd = tcase_create("cmd_render");

    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, trainjob_render_survives_every_allocation_failure, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    suite_add_tcase(s, tc);
    tcase_set_timeout(cmd, 600);
    tcase_add_loop_test(cmd, render_command_survives_every_allocation_failure, 0, 2);
    suite_add_tcase(s, cmd);
    return testutil_run_suite(s);
}
