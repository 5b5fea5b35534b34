/*
 * tests/unit/test_reconciler_core.c - the pure decisions of the reconciler (reconciler/core.h)
 * and the condition helpers it uses (trainjob_status_set_condition, _remove_condition,
 * _condition), from the cases under tests/fixtures/reconciler/ (see its README.md):
 *
 *   snapshot/<case>/     rc_snapshot_runtime (trainer.md §2.2)
 *   children/            rc_child_kind_of (kinds.yaml), rc_child_action (actions.yaml; §2.8/2.9)
 *   status-patch/<case>/ rc_status_patch (exact patch, and RFC 7386 application gives new)
 *   conditions/<case>/   set/remove/lookup of status conditions
 *   managed/<case>/      rc_managed
 *   owner/<case>/        rc_controller_owner
 *   jobset-failure/<case>/ rc_jobset_without_jobs, rc_jobset_creation_failure (jobset.yaml,
 *                        events.yaml a list of Events, expect.yaml {without_jobs, message})
 *   jobset-refused/<case>/ rc_jobset_refused (trainjob.yaml, existing.yaml or none,
 *                        refusal.yaml {code: Invalid | Conflict, message}, expect.yaml {action})
 *
 * Every case carries a `rule:` naming what it checks; a case without one fails. A few direct
 * checks follow: rc_first_error, rc_error_doc_is_runtime (against real validation and
 * rendering), rc_transient, and allocation failure in the snapshot decoder, the status patch and
 * the condition upsert.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/yaml.h"
#include "integrations/backend.h"
#include "integrations/kueue.h"
#include "reconciler/core.h"
#include "testutil.h"
#include "trainjob/builtin.h"
#include "trainjob/status.h"
#include "trainjob/trainjob.h"

/* ---- fixtures ---- */

#define MAX_CASES 128

struct area {
    const char *dir; /* under TS_FIXTURES/reconciler */
    char *cases[MAX_CASES];
    int n;
};

static struct area snapshot_area = {.dir = "snapshot"};
static struct area managed_area = {.dir = "managed"};
static struct area owner_area = {.dir = "owner"};
static struct area patch_area = {.dir = "status-patch"};
static struct area cond_area = {.dir = "conditions"};
static struct area jsfail_area = {.dir = "jobset-failure"};
static struct area jsrefused_area = {.dir = "jobset-refused"};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every sub-folder of reconciler/<area> (plain files such as README.md are not cases). */
static void collect(struct area *ar)
{
    char path[4096];
    DIR *d;
    struct dirent *e;

    snprintf(path, sizeof(path), "%s/reconciler/%s", TS_FIXTURES, ar->dir);
    d = opendir(path);
    if (!d)
        return;
    while ((e = readdir(d)) && ar->n < MAX_CASES) {
        char sub[4096];
        DIR *s;
        if (e->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        s = opendir(sub);
        if (!s)
            continue;
        closedir(s);
        ar->cases[ar->n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(ar->cases, (size_t)ar->n, sizeof(ar->cases[0]), cmp_str);
}

static void case_dir(char *buf, size_t size, const struct area *ar, int i)
{
    snprintf(buf, size, "%s/reconciler/%s/%s", TS_FIXTURES, ar->dir, ar->cases[i]);
}

/* The single document of dir/file (new ref), or NULL when the file does not exist. */
static json_t *load_doc(const char *dir, const char *file)
{
    char path[4096];
    struct common_yaml_docs d;
    struct common_error e;
    enum common_rc rc;
    json_t *v;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    memset(&d, 0, sizeof(d));
    rc = common_yaml_load_file(path, NULL, &d, &e);
    if (rc == COMMON_ENOTFOUND) {
        common_yaml_docs_free(&d);
        return NULL;
    }
    ck_assert_msg(rc == COMMON_OK, "%s: %s", path, e.msg);
    ck_assert_msg(d.n == 1, "%s: must hold one document, holds %zu", path, d.n);
    v = json_incref(d.docs[0]);
    common_yaml_docs_free(&d);
    return v;
}

static json_t *need_doc(const char *dir, const char *file)
{
    json_t *v = load_doc(dir, file);
    ck_assert_msg(v != NULL, "%s/%s missing", dir, file);
    return v;
}

/* expect.yaml of a case, with its non-empty `rule:` checked. */
static json_t *load_expect(const char *dir)
{
    json_t *exp = need_doc(dir, "expect.yaml");
    const char *rule = json_string_value(json_object_get(exp, "rule"));
    ck_assert_msg(rule && *rule, "%s/expect.yaml: no rule: says what the case checks", dir);
    return exp;
}

static char *dump(const json_t *v)
{
    return v ? json_dumps(v, JSON_SORT_KEYS | JSON_INDENT(2) | JSON_ENCODE_ANY) : strdup("NULL");
}

/* Abort with both values shown when got and want differ (NULL equals only NULL). */
static void assert_json_eq(const json_t *got, const json_t *want, const char *what,
                           const char *name)
{
    char *g, *w;

    if ((!got && !want) || (got && want && json_equal(got, want)))
        return;
    g = dump(got);
    w = dump(want);
    ck_abort_msg("%s: %s\n--- got\n%s\n--- want\n%s", name, what, g, w);
}

static int starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static int64_t parse_now(const char *s)
{
    int64_t t;
    ck_assert_msg(s && trainjob_parse_time(s, &t) == 0, "not an RFC 3339 time: %s", s ? s : "");
    return t;
}

static enum common_rc rc_named(const char *name)
{
    static const struct {
        const char *name;
        enum common_rc rc;
    } names[] = {{"OK", COMMON_OK},
                 {"Invalid", COMMON_EINVAL},
                 {"NotFound", COMMON_ENOTFOUND},
                 {"Conflict", COMMON_ECONFLICT}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (name && strcmp(names[i].name, name) == 0)
            return names[i].rc;
    ck_abort_msg("unknown result name %s", name ? name : "(none)");
    return COMMON_OK;
}

/* ---- rc_snapshot_runtime ---- */

START_TEST(snapshot_case)
{
    const char *name = snapshot_area.cases[_i];
    char dir[4096];
    json_t *tj, *cm, *exp, *want_rt, *rt = (json_t *)0x1, *tj_before, *cm_before;
    struct common_error e;
    enum common_rc rc, want;
    const char *want_msg;

    case_dir(dir, sizeof(dir), &snapshot_area, _i);
    tj = need_doc(dir, "trainjob.yaml");
    cm = load_doc(dir, "configmap.yaml");
    if (!cm)
        cm = need_doc(dir, "configmap.json");
    exp = load_expect(dir);
    want_rt = load_doc(dir, "runtime.yaml");
    tj_before = json_deep_copy(tj);
    cm_before = json_deep_copy(cm);
    want = rc_named(json_string_value(json_object_get(exp, "result")));
    want_msg = json_string_value(json_object_get(exp, "message"));
    common_error_clear(&e);

    rc = rc_snapshot_runtime(tj, cm, &rt, &e);
    ck_assert_msg(rc == want, "%s: rc %s (%s), want %s", name, common_rc_name(rc), e.msg,
                  common_rc_name(want));
    if (want == COMMON_OK) {
        ck_assert_msg(want_rt != NULL, "%s: an accepted case needs runtime.yaml", name);
        assert_json_eq(rt, want_rt, "runtime", name);
    } else {
        ck_assert_msg(rt == NULL, "%s: *runtime must be NULL on an error", name);
        ck_assert_msg(want_msg != NULL, "%s: a rejected case needs message:", name);
        ck_assert_msg(strcmp(e.msg, want_msg) == 0, "%s: message\n got: %s\nwant: %s", name, e.msg,
                      want_msg);
        ck_assert_int_eq(e.code, want);
    }
    /* inputs are borrowed, never modified */
    assert_json_eq(tj, tj_before, "trainjob modified", name);
    assert_json_eq(cm, cm_before, "configmap modified", name);
    json_decref(rt);
    json_decref(tj);
    json_decref(cm);
    json_decref(exp);
    json_decref(want_rt);
    json_decref(tj_before);
    json_decref(cm_before);
}
END_TEST

/* ---- rc_jobset_without_jobs, rc_jobset_creation_failure ---- */

START_TEST(jobset_failure_case)
{
    const char *name = jsfail_area.cases[_i];
    char dir[4096];
    json_t *js, *evs, *exp, *js_before, *evs_before;
    const json_t *want_msg;
    const char *got;

    case_dir(dir, sizeof(dir), &jsfail_area, _i);
    js = need_doc(dir, "jobset.yaml");
    evs = need_doc(dir, "events.yaml");
    exp = load_expect(dir);
    js_before = json_deep_copy(js);
    evs_before = json_deep_copy(evs);
    ck_assert_msg(json_is_boolean(json_object_get(exp, "without_jobs")),
                  "%s: without_jobs: must be true or false", name);
    ck_assert_msg(rc_jobset_without_jobs(js) == json_is_true(json_object_get(exp, "without_jobs")),
                  "%s: rc_jobset_without_jobs %d", name, rc_jobset_without_jobs(js));
    want_msg = json_object_get(exp, "message");
    got = rc_jobset_creation_failure(js, evs);
    if (json_is_string(want_msg))
        ck_assert_msg(got && strcmp(got, json_string_value(want_msg)) == 0,
                      "%s: message\n got: %s\nwant: %s", name, got ? got : "(none)",
                      json_string_value(want_msg));
    else
        ck_assert_msg(got == NULL, "%s: want no message, got: %s", name, got);
    assert_json_eq(js, js_before, "jobset modified", name);
    assert_json_eq(evs, evs_before, "events modified", name);
    json_decref(js);
    json_decref(evs);
    json_decref(exp);
    json_decref(js_before);
    json_decref(evs_before);
}
END_TEST

/* ---- rc_jobset_refused ---- */

START_TEST(jobset_refused_case)
{
    static const char *const names[] = {"Fail", "Replace", "Suspend"};
    const char *name = jsrefused_area.cases[_i];
    char dir[4096];
    json_t *tj, *existing, *refusal, *exp, *tj_before, *ex_before;
    const char *want;
    enum rc_refused got;

    case_dir(dir, sizeof(dir), &jsrefused_area, _i);
    tj = need_doc(dir, "trainjob.yaml");
    existing = load_doc(dir, "existing.yaml");
    refusal = need_doc(dir, "refusal.yaml");
    exp = load_expect(dir);
    tj_before = json_deep_copy(tj);
    ex_before = existing ? json_deep_copy(existing) : NULL;
    want = json_string_value(json_object_get(exp, "action"));
    got = rc_jobset_refused(tj, existing,
                            rc_named(json_string_value(json_object_get(refusal, "code"))),
                            json_string_value(json_object_get(refusal, "message")));
    ck_assert_msg((unsigned)got < 3, "%s: action %d out of range", name, (int)got);
    ck_assert_msg(want && strcmp(names[got], want) == 0, "%s: %s, want %s", name, names[got],
                  want ? want : "(no action:)");
    assert_json_eq(tj, tj_before, "trainjob modified", name);
    if (existing)
        assert_json_eq(existing, ex_before, "existing modified", name);
    json_decref(tj);
    json_decref(existing);
    json_decref(refusal);
    json_decref(exp);
    json_decref(tj_before);
    json_decref(ex_before);
}
END_TEST

/* ---- rc_managed ---- */

START_TEST(managed_case)
{
    const char *name = managed_area.cases[_i];
    char dir[4096];
    json_t *tj, *exp, *want;

    case_dir(dir, sizeof(dir), &managed_area, _i);
    tj = need_doc(dir, "trainjob.yaml");
    exp = load_expect(dir);
    want = json_object_get(exp, "managed");
    ck_assert_msg(json_is_boolean(want), "%s: managed: must be true or false", name);
    ck_assert_msg(rc_managed(tj) == json_is_true(want), "%s: rc_managed %d, want %d", name,
                  rc_managed(tj), json_is_true(want));
    json_decref(tj);
    json_decref(exp);
}
END_TEST

/* ---- rc_controller_owner ---- */

START_TEST(owner_case)
{
    const char *name = owner_area.cases[_i];
    char dir[4096];
    json_t *obj, *exp, *want;
    const char *oname = "untouched", *ouid = "untouched";
    int got;

    case_dir(dir, sizeof(dir), &owner_area, _i);
    obj = need_doc(dir, "object.yaml");
    exp = load_expect(dir);
    want = json_object_get(exp, "owner");
    ck_assert_msg(want != NULL, "%s: owner: missing (null = none)", name);
    got = rc_controller_owner(obj, &oname, &ouid);
    if (json_is_null(want)) {
        ck_assert_msg(got == 0, "%s: found owner %s/%s, want none", name, oname,
                      ouid ? ouid : "NULL");
        ck_assert_str_eq(oname, "untouched");
        ck_assert_str_eq(ouid, "untouched");
    } else {
        const char *wn = json_string_value(json_object_get(want, "name"));
        const char *wu = json_string_value(json_object_get(want, "uid"));
        ck_assert_msg(got == 1, "%s: no owner found, want %s", name, wn);
        ck_assert_str_eq(oname, wn);
        if (wu)
            ck_assert_msg(ouid && strcmp(ouid, wu) == 0, "%s: uid %s, want %s", name,
                          ouid ? ouid : "NULL", wu);
        else
            ck_assert_msg(ouid == NULL, "%s: uid %s, want NULL", name, ouid);
        /* NULL out-pointers are allowed */
        ck_assert_int_eq(rc_controller_owner(obj, NULL, NULL), 1);
    }
    json_decref(obj);
    json_decref(exp);
}
END_TEST

/* ---- rc_status_patch ---- */

/* RFC 7386 MergePatch(target, patch) as a new value (target borrowed, may be NULL). */
static json_t *merge_apply(const json_t *target, const json_t *patch)
{
    json_t *res, *v;
    const char *k;

    if (!json_is_object(patch))
        return json_deep_copy(patch);
    res = json_is_object(target) ? json_deep_copy(target) : json_object();
    ck_assert_ptr_nonnull(res);
    json_object_foreach((json_t *)patch, k, v)
    {
        if (json_is_null(v))
            json_object_del(res, k);
        else
            ck_assert_int_eq(json_object_set_new(res, k, merge_apply(json_object_get(res, k), v)),
                             0);
    }
    return res;
}

START_TEST(status_patch_case)
{
    const char *name = patch_area.cases[_i];
    char dir[4096];
    json_t *tj, *newst, *exp, *patch, *want, *old, *old_before, *new_before;
    int nomem = -1;

    case_dir(dir, sizeof(dir), &patch_area, _i);
    tj = need_doc(dir, "trainjob.yaml");
    newst = need_doc(dir, "new-status.yaml");
    exp = load_expect(dir);
    old = json_object_get(tj, "status");
    old_before = old ? json_deep_copy(old) : NULL;
    new_before = json_deep_copy(newst);

    patch = rc_status_patch(old, newst, &nomem);
    ck_assert_msg(nomem == 0, "%s: nomem set", name);
    if ((want = json_object_get(exp, "patch")))
        assert_json_eq(patch, json_is_null(want) ? NULL : want, "patch", name);

    /* whatever the patch, applying it to old_status must give new_status */
    if (!patch) {
        json_t *o = old ? json_incref(old) : json_object();
        assert_json_eq(o, newst, "no patch, but old and new status differ", name);
        json_decref(o);
    } else {
        json_t *body = json_object_get(patch, "status"), *applied, *target;
        ck_assert_msg(json_object_size(patch) == 1 && json_is_object(body),
                      "%s: the patch must be {\"status\": {...}}", name);
        applied = merge_apply(old ? old : NULL, body);
        target =
            json_object_size(newst) == 0 ? json_pack("{s:[]}", "conditions") : json_incref(newst);
        assert_json_eq(applied, target, "old status merged with the patch", name);
        json_decref(applied);
        json_decref(target);
    }
    assert_json_eq(old, old_before, "old status modified", name);
    assert_json_eq(newst, new_before, "new status modified", name);
    json_decref(patch);
    json_decref(tj);
    json_decref(newst);
    json_decref(exp);
    json_decref(old_before);
    json_decref(new_before);
}
END_TEST

START_TEST(status_patch_of_nothing)
{
    int nomem = -1;
    json_t *empty = json_object();

    ck_assert_ptr_null(rc_status_patch(NULL, NULL, &nomem));
    ck_assert_int_eq(nomem, 0);
    nomem = -1;
    ck_assert_ptr_null(rc_status_patch(empty, NULL, &nomem));
    ck_assert_int_eq(nomem, 0);
    nomem = -1;
    ck_assert_ptr_null(rc_status_patch(NULL, empty, &nomem));
    ck_assert_int_eq(nomem, 0);
    json_decref(empty);
}
END_TEST

/* ---- conditions ---- */

START_TEST(conditions_case)
{
    const char *name = cond_area.cases[_i];
    char dir[4096];
    json_t *tj, *exp, *status, *steps, *step, *want, *lookup;
    size_t i;

    case_dir(dir, sizeof(dir), &cond_area, _i);
    tj = need_doc(dir, "trainjob.yaml");
    exp = load_expect(dir);
    status = json_object_get(tj, "status") ? json_deep_copy(json_object_get(tj, "status"))
                                           : json_object();
    steps = json_object_get(exp, "steps");
    ck_assert_msg(json_array_size(steps) > 0, "%s: steps: missing", name);
    json_array_foreach(steps, i, step)
    {
        json_t *set = json_object_get(step, "set");
        if (set) {
            struct common_error e;
            enum common_rc rc, wrc = rc_named(json_string_value(json_object_get(step, "result")));
            const char *wmsg = json_string_value(json_object_get(step, "message"));
            common_error_clear(&e);
            rc = trainjob_status_set_condition(
                status, json_string_value(json_object_get(set, "type")),
                json_string_value(json_object_get(set, "status")),
                json_string_value(json_object_get(set, "reason")),
                json_string_value(json_object_get(set, "message")),
                parse_now(json_string_value(json_object_get(step, "now"))), &e);
            ck_assert_msg(rc == wrc, "%s: step %zu: rc %s (%s), want %s", name, i,
                          common_rc_name(rc), e.msg, common_rc_name(wrc));
            if (wmsg)
                ck_assert_msg(strcmp(e.msg, wmsg) == 0, "%s: step %zu: message %s, want %s", name,
                              i, e.msg, wmsg);
        } else {
            const char *type = json_string_value(json_object_get(step, "remove"));
            json_t *removed = json_object_get(step, "removed");
            int got;
            ck_assert_msg(type && json_is_integer(removed), "%s: step %zu: bad step", name, i);
            got = trainjob_status_remove_condition(status, type);
            ck_assert_msg(got == json_integer_value(removed), "%s: step %zu: removed %d", name, i,
                          got);
        }
    }
    if ((want = json_object_get(exp, "status")))
        assert_json_eq(status, want, "status", name);
    if ((lookup = json_object_get(exp, "lookup"))) {
        const json_t *c =
            trainjob_status_condition(status, json_string_value(json_object_get(lookup, "type")));
        const char *wr = json_string_value(json_object_get(lookup, "reason"));
        if (wr)
            ck_assert_msg(c && strcmp(json_string_value(json_object_get(c, "reason")), wr) == 0,
                          "%s: lookup", name);
        else
            ck_assert_msg(c == NULL, "%s: lookup found a removed condition", name);
    }
    json_decref(status);
    json_decref(tj);
    json_decref(exp);
}
END_TEST

START_TEST(set_condition_rejects_bad_arguments)
{
    json_t *st = json_object(), *arr = json_array();
    struct common_error e;

    ck_assert_int_eq(trainjob_status_set_condition(NULL, "A", "True", "R", "m", 0, &e),
                     COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "status: must be an object");
    ck_assert_int_eq(trainjob_status_set_condition(arr, "A", "True", "R", "m", 0, &e),
                     COMMON_EINVAL);
    ck_assert_int_eq(trainjob_status_set_condition(st, NULL, "True", "R", "m", 0, &e),
                     COMMON_EINVAL);
    ck_assert_int_eq(trainjob_status_set_condition(st, "A", NULL, "R", "m", 0, &e), COMMON_EINVAL);
    ck_assert_int_eq(trainjob_status_set_condition(st, "A", "True", NULL, "m", 0, &e),
                     COMMON_EINVAL);
    ck_assert_str_eq(e.msg, "condition: type, status and reason are required");
    /* a rejected call leaves the status as it was */
    ck_assert_int_eq(json_object_size(st), 0);
    ck_assert_int_eq(trainjob_status_remove_condition(NULL, "A"), 0);
    ck_assert_int_eq(trainjob_status_remove_condition(st, NULL), 0);
    ck_assert_ptr_null(trainjob_status_condition(NULL, "A"));
    ck_assert_ptr_null(trainjob_status_condition(st, "A"));
    json_decref(st);
    json_decref(arr);
}
END_TEST

/* ---- children: rc_child_kind_of, rc_child_action ---- */

static const char *kind_name(enum rc_child_kind k)
{
    static const char *const names[] = {"Snapshot", "ConfigMap", "Secret",
                                        "JobSet",   "PodGroup",  "Other"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static const char *action_name(enum rc_action a)
{
    return a == RC_SKIP ? "Skip" : a == RC_CREATE ? "Create" : a == RC_APPLY ? "Apply" : "?";
}

static json_t *child_object(const json_t *ref)
{
    char dir[4096];
    if (json_is_object(ref))
        return json_incref((json_t *)ref);
    ck_assert_msg(json_is_string(ref), "object must be a file name or an inline object");
    snprintf(dir, sizeof(dir), "%s/reconciler/children/objects", TS_FIXTURES);
    return need_doc(dir, json_string_value(ref));
}

static json_t *load_table(const char *file)
{
    char dir[4096];
    json_t *t;
    snprintf(dir, sizeof(dir), "%s/reconciler/children", TS_FIXTURES);
    t = need_doc(dir, file);
    ck_assert_msg(json_array_size(t) > 0, "%s: no rows", file);
    return t;
}

START_TEST(child_kinds)
{
    json_t *rows = load_table("kinds.yaml"), *row;
    size_t i;

    json_array_foreach(rows, i, row)
    {
        const char *rule = json_string_value(json_object_get(row, "rule"));
        const char *want = json_string_value(json_object_get(row, "kind"));
        json_t *obj = child_object(json_object_get(row, "object"));
        const char *got = kind_name(rc_child_kind_of(obj));
        ck_assert_msg(rule && *rule, "kinds.yaml row %zu: no rule", i);
        ck_assert_msg(want && strcmp(got, want) == 0, "kinds.yaml row %zu (%s): %s, want %s", i,
                      rule, got, want ? want : "?");
        json_decref(obj);
    }
    ck_assert_int_eq(rc_child_kind_of(NULL), RC_CHILD_OTHER);
    json_decref(rows);
}
END_TEST

static int suspended(const json_t *o)
{
    return json_is_true(json_object_get(json_object_get(o, "spec"), "suspend"));
}

START_TEST(child_actions)
{
    json_t *rows = load_table("actions.yaml"), *row;
    /* covered[kind][existing][trainjob suspended][existing suspended] */
    int covered[6][2][2][2];
    size_t i;
    int k, ex, s, j;

    memset(covered, 0, sizeof(covered));
    json_array_foreach(rows, i, row)
    {
        const char *rule = json_string_value(json_object_get(row, "rule"));
        const char *want = json_string_value(json_object_get(row, "action"));
        json_t *tj = child_object(json_object_get(row, "trainjob"));
        json_t *obj = child_object(json_object_get(row, "rendered"));
        json_t *exref = json_object_get(row, "existing");
        json_t *existing = json_is_null(exref) || !exref ? NULL : child_object(exref);
        enum rc_child_kind kind = rc_child_kind_of(obj);
        const char *got = action_name(rc_child_action(tj, kind, existing));

        ck_assert_msg(rule && *rule, "actions.yaml row %zu: no rule", i);
        ck_assert_msg(want && strcmp(got, want) == 0, "actions.yaml row %zu (%s): %s %s, want %s",
                      i, rule, kind_name(kind), got, want ? want : "?");
        if (existing)
            ck_assert_msg(rc_child_kind_of(existing) == kind,
                          "actions.yaml row %zu: existing is of another kind", i);
        covered[kind][existing != NULL][suspended(tj)][existing && suspended(existing)] = 1;
        json_decref(tj);
        json_decref(obj);
        json_decref(existing);
    }
    /* the table is complete: every kind x (absent, existing) x (TrainJob suspended or not), and
     * for an existing JobSet x (suspended or not) */
    for (k = 0; k <= RC_CHILD_OTHER; k++)
        for (ex = 0; ex < 2; ex++)
            for (s = 0; s < 2; s++)
                for (j = 0; j < (k == RC_CHILD_JOBSET && ex ? 2 : 1); j++)
                    ck_assert_msg(
                        covered[k][ex][s][j], "actions.yaml lacks %s %s, TrainJob %s%s",
                        kind_name(k), ex ? "existing" : "absent", s ? "suspended" : "running",
                        k == RC_CHILD_JOBSET && ex ? (j ? ", JobSet suspended" : ", JobSet running")
                                                   : "");
    json_decref(rows);
}
END_TEST

START_TEST(child_replacements)
{
    json_t *rows = load_table("replace.yaml"), *row;
    size_t i;

    json_array_foreach(rows, i, row)
    {
        const char *rule = json_string_value(json_object_get(row, "rule"));
        json_t *exref = json_object_get(row, "existing");
        int want = json_is_true(json_object_get(row, "replace"));
        int got =
            rc_child_replace(json_object_get(row, "rendered"), json_is_null(exref) ? NULL : exref);
        ck_assert_msg(json_is_boolean(json_object_get(row, "replace")),
                      "replace.yaml row %zu: replace must be true or false", i);
        ck_assert_msg(got == want, "replace.yaml row %zu (%s): %d, want %d", i, rule, got, want);
    }
    ck_assert_int_eq(rc_child_replace(NULL, NULL), 0);
    json_decref(rows);
}
END_TEST

/* rc_native_dropped, rc_native_fields, rc_native_strip, rc_native_field_gate (dropped.yaml) */
START_TEST(native_dropped_fields)
{
    json_t *rows = load_table("dropped.yaml"), *row;
    size_t i;

    ck_assert_uint_gt(json_array_size(rows), 0);
    json_array_foreach(rows, i, row)
    {
        const char *rule = json_string_value(json_object_get(row, "rule"));
        const json_t *stored = json_object_get(row, "stored");
        json_t *sent = json_deep_copy(json_object_get(row, "sent")), *v;
        unsigned want = 0, got;
        size_t k;

        ck_assert_msg(rule && *rule, "dropped.yaml row %zu: no rule", i);
        json_array_foreach(json_object_get(row, "dropped"), k, v) want |=
            strcmp(json_string_value(v), "topology") == 0 ? RC_NATIVE_TOPOLOGY : RC_NATIVE_CLAIMS;
        got = rc_native_dropped(sent, stored);
        ck_assert_msg(got == want, "dropped.yaml row %zu (%s): %u, want %u", i, rule, got, want);
        ck_assert_msg((rc_native_fields(sent) & want) == want, "row %zu: fields %u", i,
                      rc_native_fields(sent));
        rc_native_strip(sent, got);
        ck_assert_msg(rc_native_dropped(sent, stored) == 0, "row %zu: still dropped after strip",
                      i);
        ck_assert_msg(!rc_child_replace(sent, stored),
                      "dropped.yaml row %zu (%s): replaced after the dropped fields were stripped",
                      i, rule);
        json_decref(sent);
    }
    for (unsigned bit = 1; bit <= RC_NATIVE_CLAIMS; bit <<= 1) {
        const char *gate = NULL;
        ck_assert_ptr_nonnull(rc_native_field_gate(bit, &gate));
        ck_assert_ptr_nonnull(gate);
    }
    ck_assert_int_eq(rc_native_dropped(NULL, NULL), 0);
    json_decref(rows);
}
END_TEST

/* ---- rc_first_error, rc_error_doc_is_runtime ---- */

static json_t *parse(const char *yaml)
{
    struct common_yaml_docs d;
    struct common_error e;
    json_t *v;

    ck_assert_msg(common_yaml_load(yaml, strlen(yaml), "test", NULL, &d, &e) == COMMON_OK, "%s",
                  e.msg);
    ck_assert_int_eq(d.n, 1);
    v = json_incref(d.docs[0]);
    common_yaml_docs_free(&d);
    return v;
}

static const char *const TJ_BAD_NODES =
    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
    "metadata: {name: alpha, namespace: team-a, uid: 6f1c2a7e-3b9d-4e52-a8c0-1d2e3f405162}\n"
    "spec:\n  runtimeRef: {name: torch-distributed}\n  trainer: {numNodes: -1}\n";
static const char *const TJ_GOOD =
    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
    "metadata: {name: alpha, namespace: team-a, uid: 6f1c2a7e-3b9d-4e52-a8c0-1d2e3f405162}\n"
    "spec:\n  runtimeRef: {name: torch-distributed}\n  trainer: {numNodes: 2}\n";
static const char *const RT_BAD =
    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
    "metadata: {name: torch-distributed}\n"
    "spec:\n  mlPolicy: {numNodes: 1, torch: {}}\n  template:\n    spec:\n"
    "      replicatedJobs:\n      - name: node\n        replicas: 2\n        template:\n"
    "          metadata:\n"
    "            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n"
    "          spec:\n            template:\n              spec:\n"
    "                containers: [{name: node, image: pytorch/pytorch:2.13.0}]\n";

START_TEST(first_error_is_the_first_field_error_or_the_message)
{
    struct common_arena *a = common_arena_create(0);
    struct trainjob_errors errs;
    struct common_error e;
    json_t *tj = parse(TJ_BAD_NODES), *rt = parse(RT_BAD);
    const char *s;

    ck_assert_ptr_nonnull(a);
    trainjob_errors_init(&errs, a);
    ck_assert_int_eq(trainjob_validate_trainjob(tj, &errs, &e), COMMON_EINVAL);
    ck_assert_uint_gt(errs.n, 0);
    s = rc_first_error(&errs, &e);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, trainjob_errors_format(&errs, 0));
    ck_assert_msg(starts_with(s, "spec.trainer.numNodes: Invalid value: -1: "), "%s", s);
    /* the first error is in the TrainJob: not the runtime's */
    ck_assert_int_eq(rc_error_doc_is_runtime(&errs, rt), 0);
    ck_assert_int_eq(rc_error_doc_is_runtime(&errs, NULL), 0);
    ck_assert_int_eq(rc_error_doc_is_runtime(&errs, tj), 1);

    /* no field errors: the error's own message */
    trainjob_errors_init(&errs, a);
    common_error_set(&e, COMMON_EINVAL, "runtime snapshot team-a/alpha-runtime-snapshot: x");
    ck_assert_str_eq(rc_first_error(&errs, &e),
                     "runtime snapshot team-a/alpha-runtime-snapshot: x");
    ck_assert_str_eq(rc_first_error(NULL, &e), "runtime snapshot team-a/alpha-runtime-snapshot: x");
    ck_assert_int_eq(rc_error_doc_is_runtime(&errs, tj), 0);
    ck_assert_int_eq(rc_error_doc_is_runtime(NULL, tj), 0);
    json_decref(tj);
    json_decref(rt);
    common_arena_destroy(a);
}
END_TEST

/* As the glue uses it: render, then ask which document the first error is in. */
START_TEST(render_errors_are_attributed_to_their_document)
{
    struct common_arena *a = common_arena_create(0);
    struct trainjob_output out;
    struct common_error e;
    json_t *good = parse(TJ_GOOD), *bad = parse(TJ_BAD_NODES), *rt_bad = parse(RT_BAD);
    const struct trainjob_builtin *b = trainjob_builtin_find("torch-distributed");
    json_t *rt_good;

    ck_assert_ptr_nonnull(b);
    {
        struct common_yaml_docs d;
        ck_assert_int_eq(common_yaml_load(b->yaml, b->len, "builtin", NULL, &d, &e), COMMON_OK);
        rt_good = json_incref(d.docs[0]);
        common_yaml_docs_free(&d);
    }
    /* a bad runtime: InvalidRuntime */
    memset(&out, 0, sizeof(out));
    ck_assert_int_eq(trainjob_render(a, good, rt_bad, NULL, &out, &e), COMMON_EINVAL);
    ck_assert_uint_gt(out.errors.n, 0);
    ck_assert_msg(rc_error_doc_is_runtime(&out.errors, rt_bad) == 1, "first error %s",
                  rc_first_error(&out.errors, &e));
    ck_assert_msg(starts_with(rc_first_error(&out.errors, &e),
                              "spec.template.spec.replicatedJobs[0].replicas: "),
                  "%s", rc_first_error(&out.errors, &e));
    json_decref(out.objects);
    /* a bad TrainJob: InvalidTrainJob */
    memset(&out, 0, sizeof(out));
    ck_assert_int_eq(trainjob_render(a, bad, rt_good, NULL, &out, &e), COMMON_EINVAL);
    ck_assert_uint_gt(out.errors.n, 0);
    ck_assert_int_eq(rc_error_doc_is_runtime(&out.errors, rt_good), 0);
    json_decref(out.objects);
    json_decref(good);
    json_decref(bad);
    json_decref(rt_bad);
    json_decref(rt_good);
    common_arena_destroy(a);
}
END_TEST

/* ---- rc_apply_body (core.h) ---- */

/* Every map field empty, as Helm and kustomize write them, beside fields whose {} means
 * something (emptyDir, a LabelSelector that matches everything) and non-empty maps. */
#define RT_EMPTY_MAPS                                                                              \
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"                                                  \
    "kind: TrainingRuntime\n"                                                                      \
    "metadata: {name: empty-maps, namespace: default, labels: {}, annotations: {}}\n"              \
    "spec:\n"                                                                                      \
    "  mlPolicy: {numNodes: 2}\n"                                                                  \
    "  template:\n"                                                                                \
    "    metadata: {labels: {}, annotations: {}}\n"                                                \
    "    spec:\n"                                                                                  \
    "      replicatedJobs:\n"                                                                      \
    "      - name: node\n"                                                                         \
    "        template:\n"                                                                          \
    "          metadata:\n"                                                                        \
    "            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n"                 \
    "            annotations: {}\n"                                                                \
    "          spec:\n"                                                                            \
    "            template:\n"                                                                      \
    "              metadata: {labels: {}, annotations: {}}\n"                                      \
    "              spec:\n"                                                                        \
    "                nodeSelector: {}\n"                                                           \
    "                overhead: {}\n"                                                               \
    "                affinity:\n"                                                                  \
    "                  podAffinity:\n"                                                             \
    "                    requiredDuringSchedulingIgnoredDuringExecution:\n"                        \
    "                    - topologyKey: kubernetes.io/hostname\n"                                  \
    "                      labelSelector: {matchLabels: {}}\n"                                     \
    "                volumes:\n"                                                                   \
    "                - {name: scratch, emptyDir: {}}\n"                                            \
    "                - {name: csi, csi: {driver: d.example.com, volumeAttributes: {}}}\n"          \
    "                initContainers:\n"                                                            \
    "                - name: init\n"                                                               \
    "                  image: busybox\n"                                                           \
    "                  resources: {requests: {}, limits: {}}\n"                                    \
    "                containers:\n"                                                                \
    "                - name: node\n"                                                               \
    "                  image: busybox\n"                                                           \
    "                  resources: {requests: {}, limits: {}}\n"                                    \
    "                  volumeMounts: [{name: scratch, mountPath: /s}]\n"

#define TJ_EMPTY_MAPS                                                                              \
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"                                                  \
    "kind: TrainJob\n"                                                                             \
    "metadata: {name: em, namespace: default, uid: 00000000-0000-0000-0000-0000000000e1}\n"        \
    "spec:\n"                                                                                      \
    "  suspend: true\n"                                                                            \
    "  runtimeRef: {name: empty-maps, kind: TrainingRuntime}\n"                                    \
    "  trainer: {resourcesPerNode: {requests: {}, limits: {}}}\n"

/* the paths (into buf, "; "-separated) of every empty object in v under a key other than
 * emptyDir and labelSelector, whose {} means something */
static void empty_objects(const json_t *v, const char *path, char *buf, size_t n)
{
    size_t i;
    const char *k;
    json_t *it;
    char sub[1024];

    if (json_is_array(v)) {
        json_array_foreach(v, i, it)
        {
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            empty_objects(it, sub, buf, n);
        }
        return;
    }
    json_object_foreach((json_t *)v, k, it)
    {
        snprintf(sub, sizeof(sub), "%s.%s", path, k);
        if (json_is_object(it) && json_object_size(it) == 0 && strcmp(k, "emptyDir") != 0 &&
            strcmp(k, "labelSelector") != 0)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s; ", sub);
        empty_objects(it, sub, buf, n);
    }
}

/* What the reconciler sends for a runtime whose map fields are all {} (each backend that writes
 * objects of its own): no empty map anywhere, since server-side apply can turn one into a null
 * the CRD refuses (Kueue's eviction then fails every reconcile with 422 "must be of type
 * object"); emptyDir {} and a LabelSelector {} stay. */
START_TEST(apply_body_has_no_empty_map_for_any_backend)
{
    static const char *const backends[] = {"none", "coscheduling", "volcano", "kai", "native"};
    json_t *rt = parse(RT_EMPTY_MAPS), *tj = parse(TJ_EMPTY_MAPS);

    for (size_t b = 0; b < sizeof(backends) / sizeof(backends[0]); b++) {
        struct common_arena *a = common_arena_create(0);
        struct trainjob_output out;
        struct common_error e;
        json_t *sent;
        char before[8192] = "", after[8192] = "";

        memset(&out, 0, sizeof(out));
        ck_assert_msg(backend_render(backend_lookup(backends[b]), a, tj, rt, NULL, NULL, &out, NULL,
                                     &e) == COMMON_OK,
                      "%s: %s", backends[b], rc_first_error(&out.errors, &e));
        empty_objects(out.objects, "", before, sizeof(before));
        /* the case has teeth: the rendered objects do carry empty maps */
        ck_assert_msg(strstr(before, "nodeSelector") && strstr(before, "annotations"),
                      "%s: rendered without empty maps: %s", backends[b], before);
        sent = rc_apply_body(out.objects);
        ck_assert_ptr_nonnull(sent);
        empty_objects(sent, "", after, sizeof(after));
        ck_assert_msg(after[0] == '\0', "%s: empty objects sent: %s", backends[b], after);
        /* what means something stays */
        {
            char *dump = json_dumps(sent, JSON_COMPACT);
            ck_assert_msg(strstr(dump, "\"emptyDir\":{}"), "%s: emptyDir lost", backends[b]);
            ck_assert_msg(strstr(dump, "\"labelSelector\":{}"), "%s: labelSelector lost",
                          backends[b]);
            free(dump);
        }
        json_decref(sent);
        json_decref(out.objects);
        common_arena_destroy(a);
    }
    json_decref(rt);
    json_decref(tj);
}
END_TEST

/* The exact body: empty maps go at any depth (a map emptied by that is an object that stays),
 * non-empty maps and other empty objects stay, the input is not modified, arrays keep their
 * length. */
START_TEST(apply_body_drops_only_empty_maps)
{
    json_t *in = parse("metadata: {name: x, labels: {}, annotations: {a: b}}\n"
                       "data: {}\n"
                       "binaryData: {}\n"
                       "spec:\n"
                       "  minResources: {}\n"
                       "  minTaskMember: {}\n"
                       "  resources: {requests: {}, limits: {cpu: '1'}}\n"
                       "  template: {metadata: {labels: {}}, resources: {requests: {}}}\n"
                       "  list: [{}, {nodeSelector: {}}]\n"
                       "  securityContext: {}\n"
                       "  selector: {matchLabels: {}}\n");
    json_t *want = parse("metadata: {name: x, annotations: {a: b}}\n"
                         "spec:\n"
                         "  resources: {limits: {cpu: '1'}}\n"
                         "  template: {}\n"
                         "  list: [{}, {}]\n"
                         "  securityContext: {}\n"
                         "  selector: {}\n");
    json_t *copy = json_deep_copy(in), *got = rc_apply_body(in);

    ck_assert_ptr_nonnull(got);
    ck_assert_msg(json_equal(got, want), "got %s", json_dumps(got, JSON_COMPACT));
    ck_assert_msg(json_equal(in, copy), "the input was modified");
    ck_assert_ptr_null(rc_apply_body(NULL));
    json_decref(in);
    json_decref(copy);
    json_decref(got);
    json_decref(want);
}
END_TEST

/* ---- rc_transient (core.h) ---- */

START_TEST(transient_codes)
{
    static const struct {
        enum common_rc rc;
        int transient;
    } table[] = {
        {COMMON_EAPI, 1},          /* 5xx, 429 */
        {COMMON_ETIMEOUT, 1},      /* transport timeout */
        {COMMON_EIO, 1},           /* transport */
        {COMMON_ECONFLICT, 1},     /* 409 Conflict */
        {COMMON_ENOMEM, 1},        /* no memory */
        {COMMON_EUNAUTHORIZED, 1}, /* 403: RBAC may be fixed */
        {COMMON_ENOTFOUND, 1},     /* 404: a lagging cache, a CRD not installed yet */
        {COMMON_EINVAL, 0},        /* 400/422: the same request fails the same way */
        {COMMON_EUNSUPPORTED, 0},  /* a policy this version cannot build */
        {COMMON_ETOOBIG, 0},       /* over a cap: retrying does not shrink it */
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        ck_assert_msg(rc_transient(table[i].rc) == table[i].transient,
                      "rc_transient(%s) = %d, core.h says %d", common_rc_name(table[i].rc),
                      rc_transient(table[i].rc), table[i].transient);
}
END_TEST

/* ---- rc_queue_without_kueue (core.h) ---- */

START_TEST(queue_label_needs_kueues_runtime_patch)
{
    static const struct {
        const char *tj;
        int want;
    } table[] = {
        /* labelled, Kueue's webhook never saw it: the condition */
        {"{\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":\"team-q\"}}}", 1},
        /* labelled and suspended, as Kueue's webhook leaves it, without Kueue's entry: an
         * older Kueue (before v0.17) */
        {"{\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":\"team-q\"}},"
         "\"spec\":{\"suspend\":true}}",
         2},
        /* labelled, with another manager's patch only: still the condition */
        {"{\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":\"team-q\"}},"
         "\"spec\":{\"runtimePatches\":[{\"manager\":\"example.com/tool\"}]}}",
         1},
        /* labelled and taken by Kueue (its entry, empty until admission) */
        {"{\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":\"team-q\"}},"
         "\"spec\":{\"runtimePatches\":[{\"manager\":\"kueue.x-k8s.io/manager\"}]}}",
         0},
        /* no label, or an empty one: not queued */
        {"{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", 0},
        {"{\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":\"\"}}}", 0},
        {"{}", 0},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        char msg[1024] = "";
        const char *tail = ", or remove the label"; /* the whole message fits */
        json_t *tj = json_loads(table[i].tj, 0, NULL);
        ck_assert_ptr_nonnull(tj);
        ck_assert_msg(rc_queue_without_kueue(tj, msg, sizeof(msg)) == !!table[i].want,
                      "case %zu: %s", i, table[i].tj);
        /* the label and queue, the peer, the field it writes and the version that writes it */
        if (table[i].want)
            ck_assert_msg(strstr(msg, "metadata.labels[kueue.x-k8s.io/queue-name]") &&
                              strstr(msg, "\"team-q\"") && strstr(msg, "spec.runtimePatches") &&
                              strstr(msg, "Kueue v0.17 or later") &&
                              strstr(msg, "tested with v" KUEUE_TESTED_VERSION) &&
                              strlen(msg) > strlen(tail) &&
                              strcmp(msg + strlen(msg) - strlen(tail), tail) == 0,
                          "case %zu: message %s", i, msg);
        /* suspended: the older Kueue is named, with the field it wrote instead */
        if (table[i].want == 2)
            ck_assert_msg(strstr(msg, "older than v0.17 suspends") &&
                              strstr(msg, "spec.podSpecOverrides"),
                          "case %zu: message %s", i, msg);
        json_decref(tj);
    }
}
END_TEST

/* ---- allocation failure ---- */

START_TEST(snapshot_allocation_failure_is_a_clean_error)
{
    char dir[4096];
    json_t *tj, *cm;
    unsigned long n;

    snprintf(dir, sizeof(dir),
             "%s/reconciler/snapshot/snapshot-of-the-named-cluster-runtime-is-accepted",
             TS_FIXTURES);
    tj = need_doc(dir, "trainjob.yaml");
    cm = need_doc(dir, "configmap.yaml");
    for (n = 1; n < 100000; n++) {
        struct common_error e;
        json_t *rt = (json_t *)0x1;
        enum common_rc rc;
        int failed;

        common_alloc_fail_at(n);
        rc = rc_snapshot_runtime(tj, cm, &rt, &e);
        failed = common_alloc_failed();
        common_alloc_fail_at(0);
        if (!failed) {
            ck_assert_int_eq(rc, COMMON_OK);
            ck_assert_ptr_nonnull(rt);
            json_decref(rt);
            break;
        }
        ck_assert_msg(rc == COMMON_ENOMEM || rc == COMMON_OK,
                      "allocation %lu failed: rc %s (%s), want no memory", n, common_rc_name(rc),
                      e.msg);
        if (rc == COMMON_OK)
            json_decref(rt);
        else
            ck_assert_ptr_null(rt);
    }
    ck_assert_msg(n > 5, "only %lu allocations", n);
    json_decref(tj);
    json_decref(cm);
}
END_TEST

/* jansson allocations with a count of live blocks, failing from the fail_at-th one on */
static unsigned long jfail_at, jcalls;
static long jlive;

static void *counting_malloc(size_t n)
{
    void *p;
    if (jfail_at > 0 && ++jcalls >= jfail_at)
        return NULL;
    p = malloc(n);
    if (p)
        jlive++;
    return p;
}

static void counting_free(void *p)
{
    if (p)
        jlive--;
    free(p);
}

START_TEST(status_patch_allocation_failure_is_clean_and_leaks_nothing)
{
    json_t *old, *neu;
    unsigned long n;

    /* the values are built with the counting allocator too, so every free balances */
    json_set_alloc_funcs(counting_malloc, counting_free);
    old = json_pack("{s:[{s:s,s:s}],s:[]}", "conditions", "type", "Suspended", "status", "True",
                    "jobsStatus");
    neu = json_pack("{s:[]}", "conditions");
    ck_assert_ptr_nonnull(old);
    ck_assert_ptr_nonnull(neu);
    for (n = 1; n < 1000; n++) {
        int nomem = -1;
        long before = jlive;
        json_t *p;
        jfail_at = n;
        jcalls = 0;
        p = rc_status_patch(old, neu, &nomem);
        jfail_at = 0;
        if (jcalls < n) { /* nothing failed: every allocation point has been tried */
            ck_assert_ptr_nonnull(p);
            ck_assert_int_eq(nomem, 0);
            json_decref(p);
            break;
        }
        ck_assert_msg(p == NULL && nomem == 1, "allocation %lu: patch %p nomem %d", n, (void *)p,
                      nomem);
        ck_assert_msg(jlive == before, "allocation %lu failed: %ld JSON blocks leaked", n,
                      jlive - before);
    }
    ck_assert_msg(n > 2, "only %lu allocations", n);
    json_decref(old);
    json_decref(neu);
    ck_assert_int_eq(jlive, 0);
    common_alloc_init();
}
END_TEST

START_TEST(set_condition_allocation_failure_is_clean)
{
    json_t *old = json_pack("{s:[{s:s,s:s}]}", "conditions", "type", "Suspended", "status", "True");
    unsigned long n;

    ck_assert_ptr_nonnull(old);
    for (n = 1; n < 1000; n++) {
        json_t *st = json_deep_copy(old);
        struct common_error e;
        enum common_rc rc;
        int failed;
        ck_assert_ptr_nonnull(st);
        common_alloc_fail_at(n);
        rc = trainjob_status_set_condition(st, RC_COND_CREATED, "False", RC_REASON_INVALID_SNAPSHOT,
                                           "m", 100, &e);
        failed = common_alloc_failed();
        common_alloc_fail_at(0);
        json_decref(st);
        if (!failed) {
            ck_assert_int_eq(rc, COMMON_OK);
            break;
        }
        ck_assert_msg(rc == COMMON_ENOMEM, "allocation %lu: %s", n, common_rc_name(rc));
    }
    ck_assert_msg(n > 2, "only %lu allocations", n);
    json_decref(old);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reconciler_core");
    TCase *fx = tcase_create("fixtures"), *unit = tcase_create("unit");
    struct area *areas[] = {&snapshot_area, &managed_area, &owner_area,    &patch_area,
                            &cond_area,     &jsfail_area,  &jsrefused_area};

    for (size_t i = 0; i < sizeof(areas) / sizeof(areas[0]); i++) {
        collect(areas[i]);
        if (areas[i]->n == 0) {
            fprintf(stderr, "no fixtures under %s/reconciler/%s\n", TS_FIXTURES, areas[i]->dir);
            return 1;
        }
    }
    tcase_add_loop_test(fx, snapshot_case, 0, snapshot_area.n);
    tcase_add_loop_test(fx, managed_case, 0, managed_area.n);
    tcase_add_loop_test(fx, owner_case, 0, owner_area.n);
    tcase_add_loop_test(fx, status_patch_case, 0, patch_area.n);
    tcase_add_loop_test(fx, conditions_case, 0, cond_area.n);
    tcase_add_loop_test(fx, jobset_failure_case, 0, jsfail_area.n);
    tcase_add_loop_test(fx, jobset_refused_case, 0, jsrefused_area.n);
    tcase_add_test(fx, child_kinds);
    tcase_add_test(fx, child_actions);
    tcase_add_test(fx, child_replacements);
    tcase_add_test(fx, native_dropped_fields);
    tcase_add_test(unit, status_patch_of_nothing);
    tcase_add_test(unit, set_condition_rejects_bad_arguments);
    tcase_add_test(unit, first_error_is_the_first_field_error_or_the_message);
    tcase_add_test(unit, render_errors_are_attributed_to_their_document);
    tcase_add_test(unit, transient_codes);
    tcase_add_test(unit, apply_body_has_no_empty_map_for_any_backend);
    tcase_add_test(unit, apply_body_drops_only_empty_maps);
    tcase_add_test(unit, queue_label_needs_kueues_runtime_patch);
    tcase_add_test(unit, snapshot_allocation_failure_is_a_clean_error);
    tcase_add_test(unit, status_patch_allocation_failure_is_clean_and_leaks_nothing);
    tcase_add_test(unit, set_condition_allocation_failure_is_clean);
    suite_add_tcase(s, fx);
    suite_add_tcase(s, unit);
    return testutil_run_suite(s);
}
