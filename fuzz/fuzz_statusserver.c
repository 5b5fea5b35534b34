/*
 * fuzz/fuzz_statusserver.c - libFuzzer target for statusserver/core.h: the input is the body of
 * a status report (at most SS_MAX_BODY + 1 KiB are used, so the cut at 64 KiB is reached),
 * driven through the whole flow with a token the review accepts and an API server that
 * accepts the write. Properties (any broken one aborts):
 *   - the answer is 200 or 422 (500 only when memory ran out), and its body is one JSON object
 *     and a newline;
 *   - a write is asked for only with a trainerStatus that keeps the CRD's rules: progress 0..100,
 *     remaining seconds >= 0, at most 256 metrics of non-empty names and values, and
 *     lastUpdatedTime in UTC seconds ("YYYY-MM-DDTHH:MM:SSZ");
 *   - the 200 answer echoes exactly the trainerStatus that is written.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "statusserver/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int utc_seconds(const char *s)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
    if (!s || strlen(s) != sizeof(shape) - 1)
        return 0;
    for (size_t i = 0; shape[i]; i++)
        if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char path[] =
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/job/status";
    struct ss_request r = {"POST", path, NULL, "Bearer t", (const char *)data, size};
    json_t *review =
        json_pack("{s:{s:b, s:[s], s:{s:s}}}", "status", "authenticated", 1, "audiences",
                  "trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/job/status", "user",
                  "username", "system:serviceaccount:ns:default");
    struct ss_flow f;
    enum ss_next next;
    char *resp;
    json_t *got;
    size_t n;

    if (size > SS_MAX_BODY + 1024)
        return 0;
    memset(&f, 0, sizeof(f));
    next = ss_flow_start(&f, &r);
    if (next != SS_NEXT_REVIEW)
        abort();
    next = ss_flow_reviewed(&f, 201, review);
    if (next == SS_NEXT_APPLY) {
        const json_t *ts = json_object_get(json_object_get(f.apply, "status"), "trainerStatus");
        const json_t *pp = json_object_get(ts, "progressPercentage");
        const json_t *ers = json_object_get(ts, "estimatedRemainingSeconds");
        const json_t *m, *metrics = json_object_get(ts, "metrics");
        size_t i;
        if (!json_is_object(ts) ||
            !utc_seconds(json_string_value(json_object_get(ts, "lastUpdatedTime"))))
            abort();
        if (pp &&
            (!json_is_integer(pp) || json_integer_value(pp) < 0 || json_integer_value(pp) > 100))
            abort();
        if (ers && (!json_is_integer(ers) || json_integer_value(ers) < 0))
            abort();
        if (metrics && (json_array_size(metrics) == 0 || json_array_size(metrics) > 256))
            abort();
        json_array_foreach(metrics, i, m)
        {
            const char *a = json_string_value(json_object_get(m, "name"));
            const char *b = json_string_value(json_object_get(m, "value"));
            if (!a || !*a || !b || !*b)
                abort();
        }
        if (!json_equal((json_t *)ts, json_object_get(f.echo, "trainerStatus")) &&
            json_array_size(json_object_get(json_object_get(f.echo, "trainerStatus"), "metrics")) !=
                0)
            abort();
        next = ss_flow_applied(&f, 200, "{}");
    }
    if (next != SS_NEXT_ANSWER)
        abort();
    if (f.ans.code != 200 && f.ans.code != 422 && f.ans.code != 500)
        abort();
    resp = ss_flow_response(&f);
    if (resp) {
        n = strlen(resp);
        if (n < 3 || resp[n - 1] != '\n')
            abort();
        got = json_loads(resp, 0, NULL);
        if (!json_is_object(got))
            abort();
        json_decref(got);
        common_free(resp);
    } else if (f.ans.code != 500) {
        abort();
    }
    ss_flow_free(&f);
    json_decref(review);
    return 0;
}
