/*
 * integrations/slurm_gang.c - what to do next for one TrainJob's Slurm job (see slurm.h,
 * slurm_gang_decide). Pure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "integrations/slurm.h"
#include "trainjob/status.h"

static int condition_true(const json_t *tj, const char *type)
{
    const json_t *conds = json_object_get(json_object_get(tj, "status"), "conditions"), *c;
    size_t i;

    json_array_foreach(conds, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (t && st && strcmp(t, type) == 0 && strcmp(st, "True") == 0)
            return 1;
    }
    return 0;
}

static void set_cond(struct slurm_gang_decision *d, const char *status, const char *reason,
                     const char *msg)
{
    d->cond_status = status;
    d->cond_reason = reason;
    d->cond_message = msg;
}

enum common_rc slurm_gang_decide(struct common_arena *a, const json_t *trainjob,
                                 enum slurm_lookup lookup, const struct slurm_job_state *job,
                                 struct slurm_gang_decision *out, struct common_error *err)
{
    const json_t *meta = json_object_get(trainjob, "metadata");
    const char *ann = json_string_value(
        json_object_get(json_object_get(meta, "annotations"), SLURM_ANNOTATION_JOB_ID));
    int deleting = json_object_get(meta, "deletionTimestamp") != NULL;
    int finished = condition_true(trainjob, "Complete") || condition_true(trainjob, "Failed");
    int suspended = json_is_true(json_object_get(json_object_get(trainjob, "spec"), "suspend"));
    int stopping = deleting || finished || suspended;
    const char *why = deleting   ? "the TrainJob is being deleted"
                      : finished ? "the TrainJob has finished"
                                 : "the TrainJob is suspended";
    int64_t id = 0;
    int live;

    memset(out, 0, sizeof(*out));
    if (ann) {
        char *end;
        long long v;
        errno = 0;
        v = strtoll(ann, &end, 10);
        if (errno || *end || end == ann || v <= 0)
            return common_error_set(err, COMMON_EINVAL,
                                    "metadata.annotations[%s]: \"%s\" is not a Slurm job id",
                                    SLURM_ANNOTATION_JOB_ID, ann);
        id = v;
    }
    if (lookup == SLURM_LOOKUP_FOUND && !job)
        return common_error_set(err, COMMON_EINVAL, "slurm_gang_decide: FOUND without a job");
    live = lookup == SLURM_LOOKUP_FOUND && job->phase != SLURM_ENDED;

    if (!id) {
        if (lookup == SLURM_LOOKUP_NONE) {
            out->action = SLURM_GANG_FIND;
            return COMMON_OK;
        }
        if (live && stopping) {
            /* submitted before a restart lost the annotation, then the TrainJob stopped */
            out->action = SLURM_GANG_CANCEL;
            out->job_id = job->job_id;
            if (!deleting)
                set_cond(out, "False", SLURM_REASON_CANCELLED,
                         common_arena_printf(a, "Slurm job %" PRId64 " cancelled: %s", job->job_id,
                                             why));
            return COMMON_OK;
        }
        if (stopping)
            return COMMON_OK;
        if (!live) {
            out->action = SLURM_GANG_SUBMIT;
            out->poll_after = 2;
            return COMMON_OK;
        }
        /* a live job of this TrainJob (same uid in its comment): adopt it */
        id = job->job_id;
        out->record_id = 1;
    } else if (lookup == SLURM_LOOKUP_NONE) {
        out->action = SLURM_GANG_LOOKUP;
        out->job_id = id;
        return COMMON_OK;
    }
    out->job_id = id;
    if (stopping) {
        out->forget_id = suspended && !finished && !deleting;
        out->record_id = 0;
        if (live) {
            out->action = SLURM_GANG_CANCEL;
            if (!deleting)
                set_cond(out, "False", SLURM_REASON_CANCELLED,
                         common_arena_printf(a, "Slurm job %" PRId64 " cancelled: %s", id, why));
        }
        return COMMON_OK;
    }
    if (lookup == SLURM_LOOKUP_NOT_FOUND) {
        out->action = SLURM_GANG_ENDED;
        set_cond(out, "False", SLURM_REASON_ENDED,
                 common_arena_printf(a,
                                     "Slurm job %" PRId64 " is no longer known to slurmrestd "
                                     "(ended more than MinJobAge ago, or purged)",
                                     id));
        return COMMON_OK;
    }
    switch (job->phase) {
    case SLURM_PENDING:
        out->action = SLURM_GANG_WAIT;
        out->poll_after = 5;
        set_cond(out, "False", SLURM_REASON_PENDING, job->summary);
        break;
    case SLURM_RUNNING:
        out->action = SLURM_GANG_ALLOCATED;
        out->poll_after = 15;
        set_cond(out, "True", SLURM_REASON_RUNNING, job->summary);
        break;
    case SLURM_ENDED:
        if (strcmp(job->state, "COMPLETING") == 0) {
            /* the final state (CANCELLED, TIMEOUT, ...) comes next: say that, not COMPLETING */
            out->action = SLURM_GANG_NOTHING;
            out->poll_after = 2;
            break;
        }
        out->action = SLURM_GANG_ENDED;
        set_cond(out, "False", SLURM_REASON_ENDED, job->summary);
        break;
    }
    if (out->cond_status && !out->cond_message)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

int slurm_has_finalizer(const json_t *obj)
{
    const json_t *f;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, f)
    {
        const char *v = json_string_value(f);
        if (v && strcmp(v, SLURM_FINALIZER) == 0)
            return 1;
    }
    return 0;
}

enum common_rc slurm_finalizer_decide(struct common_arena *a, const json_t *trainjob, int selected,
                                      int have_slurm, int64_t now, int64_t give_up_s,
                                      struct slurm_finalizer_decision *out,
                                      struct common_error *err)
{
    const json_t *meta = json_object_get(trainjob, "metadata");
    const char *del = json_string_value(json_object_get(meta, "deletionTimestamp"));
    const char *id = json_string_value(
        json_object_get(json_object_get(meta, "annotations"), SLURM_ANNOTATION_JOB_ID));
    const char *job = id && *id ? common_arena_printf(a, "Slurm job %s", id)
                                : "a Slurm job carrying its comment, if any,";
    int has = slurm_has_finalizer(trainjob);
    int64_t since;

    memset(out, 0, sizeof(*out));
    if (!job)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (!json_object_get(meta, "deletionTimestamp")) {
        if (selected && have_slurm && !has)
            out->action = SLURM_FINALIZER_ADD;
        return COMMON_OK;
    }
    if (!has)
        return COMMON_OK;
    if (!have_slurm) {
        out->action = SLURM_FINALIZER_REMOVE;
        out->why = common_arena_printf(a,
                                       "finalizer %s removed without cancelling %s: this "
                                       "trainsched was started without serve --slurm-url",
                                       SLURM_FINALIZER, job);
        return out->why ? COMMON_OK : common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    if (trainjob_parse_time(del, &since) != 0)
        return common_error_set(err, COMMON_EINVAL,
                                "metadata.deletionTimestamp: \"%s\" is not an RFC 3339 time",
                                del ? del : "(not a string)");
    if (give_up_s <= 0)
        give_up_s = SLURM_RELEASE_GIVE_UP_S;
    if (now - since >= give_up_s) {
        out->action = SLURM_FINALIZER_REMOVE;
        out->why = common_arena_printf(
            a,
            "finalizer %s removed %" PRId64 " s after the deletion without cancelling %s: "
            "slurmrestd did not confirm the cancel; cancel it by hand (scancel)",
            SLURM_FINALIZER, now - since, job);
        return out->why ? COMMON_OK : common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    out->action = SLURM_FINALIZER_RELEASE;
    return COMMON_OK;
}
