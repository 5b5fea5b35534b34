/*
 * trainjob/status.c - TrainJob status derivation and the activeDeadlineSeconds check.
 * See status.h; rules from ../shared/reference/trainer.md §2.1 (steps 5-8), §2.9, §2.10, §4.
 */
#include "trainjob/status.h"

#include <string.h>
#include <time.h>

#include "common/leader.h"

#define MSG_SUSPENDED "TrainJob is suspended"
#define MSG_RESUMED "TrainJob is resumed"

int trainjob_format_time(int64_t t, char *buf, size_t size)
{
    struct tm tm;
    time_t tt = (time_t)t;

    if (!buf || size < TRAINJOB_TIME_MAX)
        return -1;
    buf[0] = '\0';
    if ((int64_t)tt != t || !gmtime_r(&tt, &tm) || tm.tm_year + 1900 < 0 ||
        tm.tm_year + 1900 > 9999)
        return -1;
    if (strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
        buf[0] = '\0';
        return -1;
    }
    return 0;
}

int trainjob_parse_time(const char *s, int64_t *t)
{
    int64_t us;

    if (!s || common_leader_parse_microtime(s, &us) != 0)
        return -1;
    /* floor, so times before the epoch round down too */
    *t = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
    return 0;
}

static const char *tj_name(const json_t *trainjob)
{
    const char *n =
        json_string_value(json_object_get(json_object_get(trainjob, "metadata"), "name"));
    return n ? n : "(unnamed)";
}

/* The condition of type in conds (an array, may be NULL), borrowed; NULL when absent. */
static json_t *find_cond(const json_t *conds, const char *type)
{
    size_t i;
    json_t *c;

    json_array_foreach(conds, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

static int cond_is(const json_t *conds, const char *type, const char *status)
{
    const char *s = json_string_value(json_object_get(find_cond(conds, type), "status"));
    return s && strcmp(s, status) == 0;
}

int trainjob_is_finished(const json_t *status)
{
    const json_t *conds = json_object_get(status, "conditions");
    return cond_is(conds, "Complete", "True") || cond_is(conds, "Failed", "True");
}

static int set_str(json_t *obj, const char *key, const char *value)
{
    return json_object_set_new(obj, key, json_string(value ? value : ""));
}

/*
 * Upsert a condition into conds as Kubernetes' meta.SetStatusCondition does: a new one gets
 * ltt (or now when ltt is NULL); an existing one keeps its lastTransitionTime unless its status
 * changes; reason and message are always replaced. Returns COMMON_OK or COMMON_ENOMEM.
 */
static enum common_rc upsert_cond(json_t *conds, const char *type, const char *status,
                                  const char *reason, const char *message, const char *ltt,
                                  int64_t now, struct common_error *err)
{
    char nowbuf[TRAINJOB_TIME_MAX];
    json_t *c = find_cond(conds, type);
    int fresh = 0, rc = 0;
    const char *old;

    if (!ltt) {
        if (trainjob_format_time(now, nowbuf, sizeof(nowbuf)) != 0)
            return common_error_set(err, COMMON_EINVAL, "now (%lld) is not a representable time",
                                    (long long)now);
        ltt = nowbuf;
    }
    if (!c) {
        c = json_object();
        if (!c || json_array_append_new(conds, c) != 0)
            return common_error_set(err, COMMON_ENOMEM, "no memory for condition %s", type);
        fresh = 1;
        rc |= set_str(c, "type", type);
    }
    old = json_string_value(json_object_get(c, "status"));
    if (fresh || !old || strcmp(old, status) != 0) {
        rc |= set_str(c, "status", status);
        rc |= set_str(c, "lastTransitionTime", ltt);
    } else if (!json_is_string(json_object_get(c, "lastTransitionTime"))) {
        rc |= set_str(c, "lastTransitionTime", ltt);
    }
    rc |= set_str(c, "reason", reason);
    rc |= set_str(c, "message", message);
    if (rc != 0)
        return common_error_set(err, COMMON_ENOMEM, "no memory for condition %s", type);
    return COMMON_OK;
}

/* Copy the JobSet condition jstype, when True, into conds as tjtype. */
static enum common_rc copy_jobset_cond(json_t *conds, const json_t *jsconds, const char *jstype,
                                       const char *tjtype, int64_t now, struct common_error *err)
{
    const json_t *c = find_cond(jsconds, jstype);

    if (!c || !cond_is(jsconds, jstype, "True"))
        return COMMON_OK;
    return upsert_cond(conds, tjtype, "True", json_string_value(json_object_get(c, "reason")),
                       json_string_value(json_object_get(c, "message")),
                       json_string_value(json_object_get(c, "lastTransitionTime")), now, err);
}

/* One jobsStatus entry from a JobSet replicatedJobsStatus item (new ref, NULL on no memory). */
static json_t *job_status(const json_t *item)
{
    static const char *const counters[] = {"ready", "succeeded", "failed", "active", "suspended"};
    json_t *o = json_object();
    size_t i;

    if (!o || set_str(o, "name", json_string_value(json_object_get(item, "name"))) != 0)
        goto fail;
    for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
        json_t *v = json_object_get(item, counters[i]);
        json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
        if (json_object_set_new(o, counters[i], json_integer(n < 0 ? 0 : n)) != 0)
            goto fail;
    }
    return o;
fail:
    json_decref(o);
    return NULL;
}

static enum common_rc jobs_status(json_t *status, const json_t *jobset, struct common_error *err)
{
    const json_t *items =
        json_object_get(json_object_get(jobset, "status"), "replicatedJobsStatus");
    json_t *arr, *it;
    size_t i;

    if (json_array_size(items) == 0) {
        json_object_del(status, "jobsStatus");
        return COMMON_OK;
    }
    arr = json_array();
    if (!arr)
        goto oom;
    json_array_foreach(items, i, it)
    {
        if (!json_is_string(json_object_get(it, "name")))
            continue; /* name is required by the JobSet schema; skip what cannot be keyed */
        if (json_array_append_new(arr, job_status(it)) != 0) {
            json_decref(arr);
            goto oom;
        }
    }
    if (json_object_set_new(status, "jobsStatus", arr) != 0)
        goto oom;
    return COMMON_OK;
oom:
    return common_error_set(err, COMMON_ENOMEM, "no memory for status.jobsStatus");
}

enum common_rc trainjob_status_derive(struct common_arena *a, const json_t *trainjob,
                                      const json_t *jobset, int64_t now,
                                      struct trainjob_status_result *out, struct common_error *err)
{
    const json_t *old, *suspend;
    json_t *status = NULL, *conds;
    enum common_rc rc;

    (void)a;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(trainjob))
        return common_error_set(err, COMMON_EINVAL, "TrainJob is not an object");
    old = json_object_get(trainjob, "status");
    if (old && !json_is_object(old) && !json_is_null(old))
        return common_error_set(err, COMMON_EINVAL, "status: must be an object");
    if (!json_is_object(old))
        old = NULL;
    if (old && json_object_get(old, "conditions") &&
        !json_is_null(json_object_get(old, "conditions")) &&
        !json_is_array(json_object_get(old, "conditions")))
        return common_error_set(err, COMMON_EINVAL, "status.conditions: must be an array");

    if (!jobset && trainjob_is_finished(old)) {
        out->status = old ? json_deep_copy(old) : json_object();
        if (!out->status)
            return common_error_set(err, COMMON_ENOMEM, "no memory for status");
        out->finished = 1;
        out->jobset_gone = 1;
        return COMMON_OK;
    }
    if (!jobset) {
        const char *name = tj_name(trainjob);
        return common_error_set(err, COMMON_ENOTFOUND,
                                "JobSet of unfinished TrainJob %s not found: requeue", name);
    }

    status = old ? json_deep_copy(old) : json_object();
    if (!status)
        goto oom;
    conds = json_object_get(status, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        if (!conds || json_object_set_new(status, "conditions", conds) != 0)
            goto oom;
    }

    /* step 5: Suspended (§4.1) */
    suspend = json_object_get(json_object_get(trainjob, "spec"), "suspend");
    if (json_is_true(suspend))
        rc = upsert_cond(conds, "Suspended", "True", "Suspended", MSG_SUSPENDED, NULL, now, err);
    else if (cond_is(conds, "Suspended", "True"))
        rc = upsert_cond(conds, "Suspended", "False", "Resumed", MSG_RESUMED, NULL, now, err);
    else
        rc = COMMON_OK;
    if (rc != COMMON_OK)
        goto out;

    /* step 6: the JobSet plugin's status (§4.1, §4.2) */
    {
        const json_t *jsconds = json_object_get(json_object_get(jobset, "status"), "conditions");
        const json_t *f = find_cond(conds, "Failed");
        const char *freason = json_string_value(json_object_get(f, "reason"));
        int deadline_failed = cond_is(conds, "Failed", "True") && freason &&
                              strcmp(freason, TRAINJOB_DEADLINE_REASON) == 0;

        rc = copy_jobset_cond(conds, jsconds, "Completed", "Complete", now, err);
        if (rc == COMMON_OK && !deadline_failed)
            rc = copy_jobset_cond(conds, jsconds, "Failed", "Failed", now, err);
        if (rc != COMMON_OK)
            goto out;
    }
    rc = jobs_status(status, jobset, err);
    if (rc != COMMON_OK)
        goto out;
    if (json_array_size(conds) == 0)
        json_object_del(status, "conditions");

    out->finished = trainjob_is_finished(status);
    out->status = status;
    status = NULL;
    rc = COMMON_OK;
out:
    json_decref(status);
    return rc;
oom:
    rc = common_error_set(err, COMMON_ENOMEM, "no memory for status");
    goto out;
}

enum common_rc trainjob_deadline(const json_t *trainjob, const json_t *status, int64_t now,
                                 struct trainjob_deadline_result *out, struct common_error *err)
{
    const json_t *spec = json_object_get(trainjob, "spec");
    const json_t *ads = json_object_get(spec, "activeDeadlineSeconds");
    const json_t *resumed;
    const char *start_s, *field;
    int64_t start, secs;

    memset(out, 0, sizeof(*out));
    out->action = TRAINJOB_DEADLINE_NONE;
    if (!status)
        status = json_object_get(trainjob, "status");
    if (!ads || json_is_null(ads))
        return COMMON_OK;
    if (!json_is_integer(ads) || json_integer_value(ads) < 0)
        return common_error_set(err, COMMON_EINVAL,
                                "spec.activeDeadlineSeconds: must be a non-negative integer");
    secs = (int64_t)json_integer_value(ads);
    if (secs == 0 || trainjob_is_finished(status) || json_is_true(json_object_get(spec, "suspend")))
        return COMMON_OK;

    resumed = find_cond(json_object_get(status, "conditions"), "Suspended");
    if (resumed && cond_is(json_object_get(status, "conditions"), "Suspended", "False")) {
        field = "status.conditions[type=Suspended].lastTransitionTime";
        start_s = json_string_value(json_object_get(resumed, "lastTransitionTime"));
    } else {
        field = "metadata.creationTimestamp";
        start_s = json_string_value(
            json_object_get(json_object_get(trainjob, "metadata"), "creationTimestamp"));
    }
    if (trainjob_parse_time(start_s, &start) != 0)
        return common_error_set(err, COMMON_EINVAL, "%s: %s", field,
                                start_s ? "must be an RFC 3339 date-time" : "Required");
    if (secs > INT64_MAX - start)
        return COMMON_OK; /* never reached */
    out->deadline = start + secs;
    if (now > out->deadline) {
        out->action = TRAINJOB_DEADLINE_FAIL;
        return COMMON_OK;
    }
    out->action = TRAINJOB_DEADLINE_REQUEUE;
    out->requeue_after = out->deadline - now < 1 ? 1 : out->deadline - now;
    return COMMON_OK;
}

enum common_rc trainjob_status_set_condition(json_t *status, const char *type, const char *cstatus,
                                             const char *reason, const char *message, int64_t now,
                                             struct common_error *err)
{
    json_t *conds;

    if (!json_is_object(status))
        return common_error_set(err, COMMON_EINVAL, "status: must be an object");
    if (!type || !cstatus || !reason)
        return common_error_set(err, COMMON_EINVAL,
                                "condition: type, status and reason are required");
    conds = json_object_get(status, "conditions");
    if (!conds) {
        conds = json_array();
        if (!conds || json_object_set_new(status, "conditions", conds) != 0)
            return common_error_set(err, COMMON_ENOMEM, "no memory for status.conditions");
    } else if (!json_is_array(conds)) {
        return common_error_set(err, COMMON_EINVAL, "status.conditions: must be an array");
    }
    return upsert_cond(conds, type, cstatus, reason, message ? message : "", NULL, now, err);
}

int trainjob_status_remove_condition(json_t *status, const char *type)
{
    json_t *conds = json_object_get(status, "conditions");
    size_t i;
    json_t *c;

    if (!json_is_array(conds) || !type)
        return 0;
    json_array_foreach(conds, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0) {
            json_array_remove(conds, i);
            if (json_array_size(conds) == 0)
                json_object_del(status, "conditions");
            return 1;
        }
    }
    return 0;
}

const json_t *trainjob_status_condition(const json_t *status, const char *type)
{
    return find_cond(json_object_get(status, "conditions"), type);
}

enum common_rc trainjob_status_deadline_exceeded(json_t *status, int64_t now,
                                                 struct common_error *err)
{
    enum common_rc rc = trainjob_status_set_condition(
        status, "Failed", "True", TRAINJOB_DEADLINE_REASON, TRAINJOB_DEADLINE_MESSAGE, now, err);
    const json_t *jobs = json_object_get(status, "jobsStatus");
    size_t i;
    json_t *j;

    if (rc)
        return rc;
    /* the JobSet is deleted with its Jobs: nothing stays active or ready, and the JobSet that
     * is gone will not report that any more */
    json_array_foreach(jobs, i, j)
    {
        if (!json_is_object(j))
            continue;
        if ((json_object_get(j, "active") && json_object_set_new(j, "active", json_integer(0))) ||
            (json_object_get(j, "ready") && json_object_set_new(j, "ready", json_integer(0))))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

int trainjob_status_changed(const json_t *old_status, const json_t *new_status)
{
    const json_t *o = old_status, *n = new_status;

    if (json_is_null(o))
        o = NULL;
    if (json_is_null(n))
        n = NULL;
    if (!o && !n)
        return 0;
    if (!o)
        return !(json_is_object(n) && json_object_size(n) == 0);
    if (!n)
        return !(json_is_object(o) && json_object_size(o) == 0);
    return !json_equal((json_t *)o, (json_t *)n);
}
