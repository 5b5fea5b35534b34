/*
 * integrations/slurm_sync.c - the Slurm backend's reconcile step (see slurm_sync.h).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "common/log.h"
#include "integrations/slurm_sync.h"

#define ERROR_RETRY_S 30
#define MAX_ROUNDS 4
/* how old a shared GET /jobs answer may be to serve a lookup (slurmrestd has no watch: one list
 * per this period serves every TrainJob's question, as an informer would) */
#define SNAPSHOT_MAX_AGE_S 1.0

struct slurm_sync {
    struct slurmrest *rest;
    pthread_mutex_t mu; /* guards the two below; held across the GET /jobs that refreshes */
    json_t *jobs;       /* the last GET /jobs answer, NULL before the first */
    double jobs_at;     /* when it was asked (CLOCK_MONOTONIC seconds) */
    json_t *submitted;  /* comment -> job id of the jobs this process submitted */
    struct slurm_config job;
    char *partition, *account, *qos, *gpu_resource, *gres_name, *workdir;
};

static char *dup0(const char *s)
{
    return s ? strdup(s) : NULL;
}

struct slurm_sync *slurm_sync_create(const struct slurm_sync_opts *o, struct common_error *err)
{
    struct slurm_sync *s = calloc(1, sizeof(*s));

    if (!s)
        return common_error_set(err, COMMON_ENOMEM, "out of memory"), NULL;
    s->rest = slurmrest_create(&o->rest, err);
    if (!s->rest) {
        free(s);
        return NULL;
    }
    s->job = o->job;
    s->job.partition = s->partition = dup0(o->job.partition);
    s->job.account = s->account = dup0(o->job.account);
    s->job.qos = s->qos = dup0(o->job.qos);
    s->job.gpu_resource = s->gpu_resource = dup0(o->job.gpu_resource);
    s->job.gres_name = s->gres_name = dup0(o->job.gres_name);
    s->job.workdir = s->workdir = dup0(o->job.workdir);
    s->job.api_version = NULL; /* from the client, per call */
    pthread_mutex_init(&s->mu, NULL);
    s->submitted = json_object();
    if (!s->submitted) {
        slurm_sync_destroy(s);
        return common_error_set(err, COMMON_ENOMEM, "out of memory"), NULL;
    }
    return s;
}

void slurm_sync_destroy(struct slurm_sync *s)
{
    if (!s)
        return;
    slurmrest_destroy(s->rest);
    json_decref(s->jobs);
    json_decref(s->submitted);
    pthread_mutex_destroy(&s->mu);
    free(s->partition);
    free(s->account);
    free(s->qos);
    free(s->gpu_resource);
    free(s->gres_name);
    free(s->workdir);
    free(s);
}

static const char *annotation(const json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

int slurm_sync_selected(const json_t *trainjob, const json_t *runtime)
{
    const char *b = runtime ? annotation(runtime, SLURM_ANNOTATION_BACKEND) : NULL;
    if (b && strcmp(b, "slurm") == 0)
        return 1;
    return annotation(trainjob, SLURM_ANNOTATION_JOB_ID) != NULL;
}

static json_t *object_of_kind(json_t *objects, const char *kind)
{
    size_t i;
    json_t *o;
    json_array_foreach(objects, i, o)
    {
        const char *k = json_string_value(json_object_get(o, "kind"));
        if (k && strcmp(k, kind) == 0)
            return o;
    }
    return NULL;
}

static void decref(void *p)
{
    json_decref(p);
}

/* the PodGroup annotations for the extender into res->pg_annotations, and onto the rendered
 * PodGroup of objects when there is one */
static enum common_rc annotate_podgroup(struct common_arena *a, json_t *objects, int64_t id,
                                        const char *state, const struct slurm_job_state *job,
                                        int running, struct slurm_sync_result *res,
                                        struct common_error *err)
{
    json_t *want = json_object(), *pg = object_of_kind(objects, "PodGroup"), *meta, *ann;
    const char *k;
    json_t *v;
    char buf[32];
    int bad = !want;

    if (bad || common_arena_on_destroy(a, decref, want))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (id > 0)
        snprintf(buf, sizeof(buf), "%" PRId64, id);
    else
        buf[0] = '\0'; /* no job yet: the extender still waits */
    bad |= json_object_set_new(want, SLURM_PG_JOB_ID, json_string(buf));
    bad |= json_object_set_new(want, SLURM_PG_STATE, state ? json_string(state) : json_null());
    if (running && job && job->nnodes) {
        size_t len = 1;
        char *list;
        for (size_t i = 0; i < job->nnodes; i++)
            len += strlen(job->nodes[i]) + 1;
        list = common_arena_alloc(a, len);
        if (!list)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        list[0] = '\0';
        for (size_t i = 0, used = 0; i < job->nnodes; i++)
            used += (size_t)snprintf(list + used, len - used, "%s%s", i ? "," : "", job->nodes[i]);
        bad |= json_object_set_new(want, SLURM_PG_NODES, json_string(list));
    } else {
        bad |= json_object_set_new(want, SLURM_PG_NODES, json_null());
    }
    if (bad)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    res->pg_annotations = want;
    if (!pg)
        return COMMON_OK;
    meta = json_object_get(pg, "metadata");
    ann = json_object_get(meta, "annotations");
    if (!ann) {
        ann = json_object();
        if (!ann || json_object_set_new(meta, "annotations", ann))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    json_object_foreach(want, k, v)
    {
        if (!json_is_null(v) && json_object_set(ann, k, v))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

static void slurm_error(struct slurm_sync_result *res, struct common_arena *a,
                        const struct common_error *e)
{
    common_log(COMMON_LOG_WARN, "slurmrestd", "error", e->msg, NULL);
    res->cond_status = "False";
    res->cond_reason = SLURM_REASON_ERROR;
    res->cond_message = common_arena_strdup(a, e->msg);
    res->requeue_after = ERROR_RETRY_S;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* a GET /jobs answer no older than max_age (a new reference in *out); *requests counts a call */
static enum common_rc jobs_snapshot(struct slurm_sync *s, double max_age, json_t **out,
                                    int *requests, struct common_error *err)
{
    enum common_rc rc = COMMON_OK;

    pthread_mutex_lock(&s->mu);
    if (!s->jobs || mono_now() - s->jobs_at > max_age) {
        json_t *fresh = NULL;
        double at = mono_now();
        (*requests)++;
        rc = slurmrest_call(s->rest, "GET", "/jobs", NULL, &fresh, err);
        if (!rc) {
            json_decref(s->jobs);
            s->jobs = fresh;
            s->jobs_at = at;
        }
    }
    *out = rc ? NULL : json_incref(s->jobs);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* the job with id in a /jobs answer as {"jobs": [job]} (new reference), NULL when absent */
static json_t *job_in(const json_t *answer, int64_t id)
{
    const json_t *j;
    size_t i;
    json_array_foreach(json_object_get(answer, "jobs"), i, j)
    {
        const json_t *v = json_object_get(j, "job_id");
        if (json_is_object(v))
            v = json_object_get(v, "number");
        if (json_integer_value(v) == id)
            return json_pack("{s:[O]}", "jobs", j);
    }
    return NULL;
}

/*
 * The state of the gang's job, by id (id > 0) or by comment, from the shared /jobs snapshot:
 * a job this process submitted but the snapshot predates, or an id not in it, gets a fresh
 * snapshot, then (by id) GET /job/<id>, which alone may say the job is gone. COMMON_ENOTFOUND
 * when there is no such job.
 */
static enum common_rc ask(struct slurm_sync *s, struct common_arena *a, int64_t id,
                          const char *comment, struct slurm_job_state *job, int *requests,
                          struct common_error *err)
{
    json_t *snap = NULL, *one;
    enum common_rc rc;

    if (id <= 0) {
        pthread_mutex_lock(&s->mu);
        id = json_integer_value(json_object_get(s->submitted, comment));
        pthread_mutex_unlock(&s->mu);
    }
    for (int fresh = 0; fresh < 2; fresh++) {
        rc = jobs_snapshot(s, fresh ? 0 : SNAPSHOT_MAX_AGE_S, &snap, requests, err);
        if (rc)
            return rc;
        if (id > 0 && (one = job_in(snap, id))) {
            rc = slurm_job_parse(a, one, job, err);
            json_decref(one);
            json_decref(snap);
            return rc;
        }
        if (id <= 0) {
            rc = slurm_jobs_find(a, snap, comment, job, err);
            json_decref(snap);
            return rc; /* a snapshot taken after start sees every job submitted before it */
        }
        json_decref(snap);
    }
    (*requests)++;
    return slurmrest_job(s->rest, a, id, job, err);
}

enum common_rc slurm_sync_step(struct slurm_sync *s, struct common_arena *a, const json_t *trainjob,
                               const json_t *runtime, json_t *objects,
                               struct slurm_sync_result *res, struct common_error *err)
{
    const json_t *meta = json_object_get(trainjob, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    const char *comment = slurm_job_comment(a, ns ? ns : "", name ? name : "", uid);
    enum slurm_lookup lookup = SLURM_LOOKUP_NONE;
    struct slurm_job_state job;
    struct slurm_gang_decision d;
    struct common_error e = {0};
    enum common_rc rc;

    memset(res, 0, sizeof(*res));
    memset(&job, 0, sizeof(job));
    res->active = 1;
    if (!comment)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    for (int round = 0; round < MAX_ROUNDS; round++) {
        rc = slurm_gang_decide(a, trainjob, lookup, lookup == SLURM_LOOKUP_FOUND ? &job : NULL, &d,
                               &e);
        if (rc == COMMON_ENOMEM)
            return common_error_set(err, rc, "%s", e.msg);
        if (rc) {
            slurm_error(res, a, &e);
            goto refused;
        }
        switch (d.action) {
        case SLURM_GANG_FIND:
        case SLURM_GANG_LOOKUP:
            rc = ask(s, a, d.action == SLURM_GANG_FIND ? 0 : d.job_id, comment, &job,
                     &res->requests, &e);
            if (rc == COMMON_ENOTFOUND) {
                lookup = SLURM_LOOKUP_NOT_FOUND;
                continue;
            }
            if (rc) {
                slurm_error(res, a, &e);
                goto refused;
            }
            lookup = SLURM_LOOKUP_FOUND;
            continue;
        case SLURM_GANG_SUBMIT: {
            json_t *jobset = objects ? object_of_kind(objects, "JobSet") : NULL;
            struct slurm_config cfg = s->job;
            json_t *body = NULL;
            int64_t id = 0;

            if (!jobset)
                return COMMON_OK; /* nothing built: nothing to hold nodes for */
            res->requests++;
            rc = slurmrest_version(s->rest, &cfg.api_version, &e);
            if (!rc)
                rc = slurm_submission(trainjob, runtime, jobset, &cfg, &body, &e);
            if (!rc) {
                res->requests++;
                rc = slurmrest_submit(s->rest, body, &id, &e);
            }
            json_decref(body);
            if (rc == COMMON_ENOMEM)
                return common_error_set(err, rc, "%s", e.msg);
            if (rc) {
                slurm_error(res, a, &e);
                goto refused;
            }
            common_log(COMMON_LOG_INFO, "Slurm job submitted", "trainjob", comment, "job",
                       common_arena_printf(a, "%" PRId64, id), NULL);
            pthread_mutex_lock(&s->mu);
            if (json_object_set_new(s->submitted, comment, json_integer(id)))
                rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            pthread_mutex_unlock(&s->mu);
            if (rc)
                return rc;
            res->set_job_id = common_arena_printf(a, "%" PRId64, id);
            res->cond_status = "False";
            res->cond_reason = SLURM_REASON_SUBMITTED;
            res->cond_message = common_arena_printf(a, "Slurm job %" PRId64 " submitted", id);
            res->requeue_after = d.poll_after;
            if (objects)
                rc = annotate_podgroup(a, objects, id, res->cond_message, NULL, 0, res, err);
            return rc;
        }
        case SLURM_GANG_CANCEL:
            res->requests++;
            rc = slurmrest_cancel(s->rest, d.job_id, &e);
            if (rc) {
                slurm_error(res, a, &e);
                goto refused;
            }
            common_log(COMMON_LOG_INFO, "Slurm job cancelled", "trainjob", comment, "job",
                       common_arena_printf(a, "%" PRId64, d.job_id), NULL);
            break;
        default:
            break;
        }
        break;
    }
    if (d.action == SLURM_GANG_CANCEL || d.action == SLURM_GANG_ENDED) {
        pthread_mutex_lock(&s->mu);
        json_object_del(s->submitted, comment);
        pthread_mutex_unlock(&s->mu);
    }
    if (d.record_id)
        res->set_job_id = common_arena_printf(a, "%" PRId64, d.job_id);
    if (d.forget_id)
        res->set_job_id = "";
    res->cond_status = d.cond_status;
    res->cond_reason = d.cond_reason;
    res->cond_message = d.cond_message;
    res->ended = d.action == SLURM_GANG_ENDED;
    res->requeue_after = d.poll_after;
    if (objects)
        return annotate_podgroup(a, objects,
                                 d.forget_id || d.action == SLURM_GANG_CANCEL ? 0 : d.job_id,
                                 d.cond_message                 ? d.cond_message
                                 : lookup == SLURM_LOOKUP_FOUND ? job.summary
                                                                : NULL,
                                 &job, d.action == SLURM_GANG_ALLOCATED, res, err);
    return COMMON_OK;
refused:
    /* the pods must not bind anywhere while the Slurm side is in error */
    return objects ? annotate_podgroup(a, objects, 0, res->cond_message, NULL, 0, res, err)
                   : COMMON_OK;
}

enum common_rc slurm_sync_deleted(struct slurm_sync *s, const json_t *old, struct common_error *err)
{
    const char *id = annotation(old, SLURM_ANNOTATION_JOB_ID);
    const json_t *meta = json_object_get(old, "metadata");
    struct common_arena *a;
    struct slurm_job_state job;
    enum common_rc rc;

    if (id && *id) {
        char *end;
        long long v = strtoll(id, &end, 10);
        if (*end || v <= 0)
            return common_error_set(err, COMMON_EINVAL, "annotation %s: \"%s\" is not a job id",
                                    SLURM_ANNOTATION_JOB_ID, id);
        return slurmrest_cancel(s->rest, v, err);
    }
    a = common_arena_create(0);
    if (!a)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    rc = slurmrest_find(s->rest, a,
                        slurm_job_comment(a, json_string_value(json_object_get(meta, "namespace")),
                                          json_string_value(json_object_get(meta, "name")),
                                          json_string_value(json_object_get(meta, "uid"))),
                        &job, err);
    if (rc == COMMON_ENOTFOUND) {
        common_error_clear(err);
        rc = COMMON_OK;
    } else if (rc == COMMON_OK && job.phase != SLURM_ENDED) {
        rc = slurmrest_cancel(s->rest, job.job_id, err);
    }
    common_arena_destroy(a);
    return rc;
}
