/*
 * tests/unit/test_statusserver.c - the status server's decisions (statusserver/core.h) on the
 * cases of tests/fixtures/statusserver/<case>/: request.json holds the request (method, path,
 * content_length, authorization, body as text or body_json, pad_before/pad_after spaces around
 * it) and what the API server answers (review_status and review for the TokenReview,
 * apply_status and apply_response for the status apply); expected.json the outcome: code,
 * reason, message (exact) or message_contains, and when given the TokenReview sent
 * (token_review), the apply body sent (apply) and the 200 answer's body (response). A step the
 * case expects not to happen (no review, no apply) must not be asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "statusserver/core.h"
#include "testutil.h"

#define MAX_CASES 128
static char *cases[MAX_CASES];
static int ncases;

static json_t *load(const char *name, const char *file)
{
    char rel[512];
    json_error_t je;
    json_t *v;
    snprintf(rel, sizeof(rel), "statusserver/%s/%s", name, file);
    v = json_load_file(testutil_path(rel), JSON_DECODE_ANY, &je);
    ck_assert_msg(v != NULL, "%s/%s: %s", name, file, je.text);
    return v;
}

static void assert_json_eq(const char *name, const char *what, const json_t *got,
                           const json_t *want)
{
    char *g = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);
    char *w = json_dumps(want, JSON_SORT_KEYS | JSON_ENCODE_ANY);
    ck_assert_msg(json_equal(got, want), "%s: %s:\n got  %s\n want %s", name, what,
                  g ? g : "(null)", w ? w : "(null)");
    free(g);
    free(w);
}

/* the body: text or JSON, with pad_before / pad_after spaces (a chunked upload's length) */
static char *make_body(const json_t *in, size_t *len)
{
    const char *text = json_string_value(json_object_get(in, "body"));
    char *dumped = NULL, *out;
    size_t before = (size_t)json_integer_value(json_object_get(in, "pad_before"));
    size_t after = (size_t)json_integer_value(json_object_get(in, "pad_after"));
    size_t n;

    if (!text && json_object_get(in, "body_json"))
        text = dumped = json_dumps(json_object_get(in, "body_json"),
                                   JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text)
        text = "";
    n = strlen(text);
    out = malloc(before + n + after + 1);
    ck_assert_ptr_nonnull(out);
    memset(out, ' ', before);
    memcpy(out + before, text, n);
    memset(out + before + n, ' ', after);
    *len = before + n + after;
    out[*len] = 0;
    free(dumped);
    return out;
}

START_TEST(flow_case)
{
    const char *name = cases[_i];
    json_t *in = load(name, "request.json"), *exp = load(name, "expected.json"), *s;
    struct ss_request r = {0};
    struct ss_flow f;
    enum ss_next next;
    char *body, *resp;
    const char *want_msg, *want_reason;
    size_t i;
    int reviewed = 0, applied = 0;

    memset(&f, 0, sizeof(f));
    body = make_body(in, &r.body_len);
    r.body = body;
    r.method = json_string_value(json_object_get(in, "method"));
    r.path = json_string_value(json_object_get(in, "path"));
    r.content_length = json_string_value(json_object_get(in, "content_length"));
    r.authorization = json_string_value(json_object_get(in, "authorization"));

    next = ss_flow_start(&f, &r);
    if (next == SS_NEXT_REVIEW) {
        reviewed = 1;
        if (json_object_get(exp, "token_review"))
            assert_json_eq(name, "TokenReview sent", f.review,
                           json_object_get(exp, "token_review"));
        next = ss_flow_reviewed(&f, (long)json_integer_value(json_object_get(in, "review_status")),
                                json_object_get(in, "review"));
    }
    if (next == SS_NEXT_APPLY) {
        applied = 1;
        if (json_object_get(exp, "apply"))
            assert_json_eq(name, "apply body", f.apply, json_object_get(exp, "apply"));
        next = ss_flow_applied(&f, (long)json_integer_value(json_object_get(in, "apply_status")),
                               json_string_value(json_object_get(in, "apply_response")));
    }
    ck_assert_int_eq(next, SS_NEXT_ANSWER);
    ck_assert_msg(reviewed == !!json_object_get(in, "review_status"),
                  "%s: token review asked: %d (the case %s one)", name, reviewed,
                  json_object_get(in, "review_status") ? "gives" : "gives no");
    ck_assert_msg(applied == !!json_object_get(in, "apply_status"),
                  "%s: apply asked: %d (the case %s one)", name, applied,
                  json_object_get(in, "apply_status") ? "gives" : "gives no");
    ck_assert_msg(f.ans.code == json_integer_value(json_object_get(exp, "code")),
                  "%s: code %d, want %lld (%s; %s)", name, f.ans.code,
                  (long long)json_integer_value(json_object_get(exp, "code")), f.ans.message,
                  f.why);
    want_reason = json_string_value(json_object_get(exp, "reason"));
    if (want_reason)
        ck_assert_msg(f.ans.reason && strcmp(f.ans.reason, want_reason) == 0,
                      "%s: reason %s, want %s", name, f.ans.reason ? f.ans.reason : "(none)",
                      want_reason);
    want_msg = json_string_value(json_object_get(exp, "message"));
    if (want_msg)
        ck_assert_msg(strcmp(f.ans.message, want_msg) == 0, "%s: message\n got  %s\n want %s", name,
                      f.ans.message, want_msg);
    json_array_foreach(json_object_get(exp, "message_contains"), i, s)
        ck_assert_msg(strstr(f.ans.message, json_string_value(s)) != NULL,
                      "%s: message lacks \"%s\": %s", name, json_string_value(s), f.ans.message);
    json_array_foreach(json_object_get(exp, "why_contains"), i, s)
        ck_assert_msg(strstr(f.why, json_string_value(s)) != NULL, "%s: why lacks \"%s\": %s", name,
                      json_string_value(s), f.why);

    /* the body on the wire: the echo for 200, a metav1.Status otherwise */
    resp = ss_flow_response(&f);
    ck_assert_ptr_nonnull(resp);
    ck_assert_msg(resp[strlen(resp) - 1] == '\n', "%s: the answer ends in a newline", name);
    {
        json_t *got = json_loads(resp, 0, NULL);
        ck_assert_msg(got != NULL, "%s: answer is not JSON: %s", name, resp);
        if (f.ans.code == 200) {
            if (json_object_get(exp, "response"))
                assert_json_eq(name, "200 body", got, json_object_get(exp, "response"));
        } else {
            ck_assert_str_eq(json_string_value(json_object_get(got, "status")), "Failure");
            ck_assert_int_eq(json_integer_value(json_object_get(got, "code")), f.ans.code);
            ck_assert_str_eq(json_string_value(json_object_get(got, "message")), f.ans.message);
            ck_assert_str_eq(json_string_value(json_object_get(got, "reason")), f.ans.reason);
            ck_assert(json_is_object(json_object_get(got, "metadata")));
        }
        json_decref(got);
    }
    common_free(resp);
    ss_flow_free(&f);
    free(body);
    json_decref(in);
    json_decref(exp);
}
END_TEST

/* the error answer's bytes are Trainer's: field order and the Go encoder's newline */
START_TEST(status_json_is_trainers_text)
{
    struct ss_answer a = {403, "Forbidden", "Forbidden"};
    char *s = ss_status_json(&a);
    ck_assert_str_eq(s, "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Forbidden\","
                        "\"reason\":\"Forbidden\",\"code\":403}\n");
    common_free(s);
}
END_TEST

/* every allocation failing in turn ends in a clean 500 or a complete answer, never a leak */
START_TEST(allocation_failures_are_clean)
{
    static const char *body =
        "{\"trainerStatus\":{\"progressPercentage\":5,\"metrics\":[{\"name\":\"loss\",\"value\":"
        "\"1\"}],\"lastUpdatedTime\":\"2026-01-01T00:00:00Z\"}}";
    json_t *review =
        json_pack("{s:{s:b, s:[s], s:{s:s}}}", "status", "authenticated", 1, "audiences",
                  "trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/j/status", "user",
                  "username", "system:serviceaccount:ns:default");
    struct ss_request r = {
        "POST", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/j/status",
        NULL,   "Bearer t",
        body,   strlen(body)};
    unsigned long n;
    int completed = 0;

    common_alloc_init();
    for (n = 1; n < 400 && !completed; n++) {
        struct ss_flow f;
        enum ss_next next;
        char *resp;
        memset(&f, 0, sizeof(f));
        common_alloc_fail_at(n);
        next = ss_flow_start(&f, &r);
        if (next == SS_NEXT_REVIEW)
            next = ss_flow_reviewed(&f, 201, review);
        if (next == SS_NEXT_APPLY)
            next = ss_flow_applied(&f, 200, "{}");
        resp = ss_flow_response(&f);
        if (!common_alloc_failed()) {
            ck_assert_int_eq(f.ans.code, 200);
            completed = 1;
        } else {
            ck_assert_msg(f.ans.code == 500 || f.ans.code == 200 || f.ans.code == 422,
                          "fail at %lu: code %d", n, f.ans.code);
        }
        common_alloc_fail_at(0);
        common_free(resp);
        ss_flow_free(&f);
    }
    ck_assert_msg(completed, "never completed without a failure");
    json_decref(review);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("statusserver");
    TCase *tc = tcase_create("fixtures");

    ncases = testutil_cases("statusserver", cases, MAX_CASES);
    if (ncases == 0) {
        fprintf(stderr, "no fixtures under %s\n", testutil_path("statusserver"));
        return 1;
    }
    tcase_add_loop_test(tc, flow_case, 0, ncases);
    tcase_add_test(tc, status_json_is_trainers_text);
    tcase_add_test(tc, allocation_failures_are_clean);
    /* pure, but the allocation walk runs the flow hundreds of times under the sanitizers: no
     * dependence on the machine's speed (Check's default is 4 s) */
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
