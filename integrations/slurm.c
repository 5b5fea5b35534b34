/*
 * integrations/slurm.c - the Slurm backend's pure core (see slurm.h): gang -> job submission
 * body, slurmrestd answers -> job state, hostlist expansion. No I/O.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"
#include "integrations/slurm.h"
#include "trainjob/trainjob.h"

#define DEFAULT_VERSION "v0.0.38"
#define PLACEHOLDER_SCRIPT                                                                         \
    "#!/bin/sh\n"                                                                                  \
    "# trainsched placeholder: holds the nodes of a TrainJob's gang; Kubernetes runs the pods.\n"  \
    "exec sleep infinity\n"
#define PLACEHOLDER_PATH "/usr/local/bin:/usr/bin:/bin"

/* the minor number of "v0.0.NN", or -1 */
static int api_minor(const char *v)
{
    char *end;
    long n;

    if (!v || strncmp(v, "v0.0.", 5) != 0 || !isdigit((unsigned char)v[5]))
        return -1;
    errno = 0;
    n = strtol(v + 5, &end, 10);
    if (errno || *end || n < 36 || n > 99)
        return -1;
    return (int)n;
}

static const char *annotation(const json_t *obj, const char *key)
{
    const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const char *v = json_string_value(json_object_get(ann, key));
    return v && *v ? v : NULL;
}

/* the TrainJob's annotation, else the runtime's, else the config's value */
static const char *placement(const json_t *tj, const json_t *rt, const char *key,
                             const char *fallback)
{
    const char *v = annotation(tj, key);
    if (!v && rt)
        v = annotation(rt, key);
    return v ? v : (fallback && *fallback ? fallback : NULL);
}

/* a partition (or a comma-separated list of them, as sbatch -p takes): Slurm splits its
 * configuration and lists on whitespace, so a name never holds any, nor control characters */
static int partition_ok(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return 0;
    return 1;
}

static enum common_rc set_new(json_t *obj, const char *key, json_t *v, struct common_error *err)
{
    if (!v || json_object_set_new(obj, key, v))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

/* a number as the data_parser versions want it: {"set": true, "infinite": false, "number": n} */
static json_t *wrapped(int64_t n)
{
    return json_pack("{s:b,s:b,s:I}", "set", 1, "infinite", 0, "number", (json_int_t)n);
}

/* the largest request of each of cpu (milli), memory (bytes) and the GPU resource over every
 * replicated job's pod template; *pods = the largest pod count of one replicated job */
struct gang_need {
    int64_t pods, cpu_milli, mem_bytes, gpus;
};

/* a copy of podspec where each container's and init container's requests carry, for every
 * resource named in its limits but not in its requests, the limit: the API server's defaulting
 * of a pod (a request absent -> equal to the limit, per resource name), so a template with
 * limits only asks Slurm for what its pods will request. NULL: no memory. */
static json_t *limits_defaulted(const json_t *podspec)
{
    static const char *const lists[] = {"containers", "initContainers"};
    json_t *copy = json_deep_copy(podspec ? podspec : json_object());
    json_t *c;
    size_t i;

    if (!copy)
        return NULL;
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
        json_array_foreach(json_object_get(copy, lists[l]), i, c)
        {
            json_t *res = json_object_get(c, "resources");
            json_t *lim = json_object_get(res, "limits"), *req, *v;
            const char *k;

            if (!json_is_object(lim) || json_object_size(lim) == 0)
                continue;
            req = json_object_get(res, "requests");
            if (!json_is_object(req)) {
                req = json_object();
                if (!req || json_object_set_new(res, "requests", req)) {
                    json_decref(copy);
                    return NULL;
                }
            }
            json_object_foreach(lim, k, v)
            {
                if (!json_object_get(req, k) && json_object_set(req, k, v)) {
                    json_decref(copy);
                    return NULL;
                }
            }
        }
    return copy;
}

static enum common_rc need_of(const json_t *jobset, const char *gpu_resource,
                              struct gang_need *need, struct common_error *err)
{
    const json_t *rjobs = json_object_get(json_object_get(jobset, "spec"), "replicatedJobs");
    const json_t *rj;
    size_t i;
    enum common_rc rc = COMMON_OK;

    memset(need, 0, sizeof(*need));
    if (!json_is_array(rjobs) || json_array_size(rjobs) == 0)
        return common_error_set(err, COMMON_EINVAL,
                                "JobSet spec.replicatedJobs: no replicated job to hold nodes for");
    json_array_foreach(rjobs, i, rj)
    {
        const json_t *jspec = json_object_get(json_object_get(rj, "template"), "spec");
        const json_t *podspec = json_object_get(json_object_get(jspec, "template"), "spec");
        const json_t *r = json_object_get(rj, "replicas"),
                     *p = json_object_get(jspec, "parallelism");
        int64_t replicas = json_is_integer(r) ? json_integer_value(r) : 1;
        int64_t parallelism = json_is_integer(p) ? json_integer_value(p) : 1;
        json_t *req = NULL, *defaulted;
        const char *k;
        json_t *v;

        if (replicas > 0 && parallelism > 0 && replicas * parallelism > need->pods)
            need->pods = replicas * parallelism;
        defaulted = limits_defaulted(podspec);
        if (!defaulted)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        rc = trainjob_pod_requests(defaulted, &req, err);
        json_decref(defaulted);
        if (rc) {
            common_error_prefix(err, "JobSet spec.replicatedJobs[%zu]", i);
            return rc;
        }
        json_object_foreach(req, k, v)
        {
            struct common_quantity q;
            int64_t n = 0, *slot = NULL;

            if (strcmp(k, "cpu") == 0)
                slot = &need->cpu_milli;
            else if (strcmp(k, "memory") == 0)
                slot = &need->mem_bytes;
            else if (gpu_resource && strcmp(k, gpu_resource) == 0)
                slot = &need->gpus;
            if (!slot)
                continue;
            rc = common_quantity_parse(json_string_value(v) ? json_string_value(v) : "", &q, err);
            if (!rc)
                rc = slot == &need->cpu_milli ? common_quantity_milli(&q, &n, err)
                                              : common_quantity_value_ceil(&q, &n, err);
            if (rc) {
                common_error_prefix(err, "JobSet spec.replicatedJobs[%zu] requests[%s]", i, k);
                break;
            }
            if (n > *slot)
                *slot = n;
        }
        json_decref(req);
        if (rc)
            return rc;
    }
    if (need->pods <= 0)
        return common_error_set(
            err, COMMON_EINVAL,
            "JobSet spec.replicatedJobs: the gang has no pods to hold nodes for");
    return COMMON_OK;
}

/*
 * An MPI runtime (DeepSpeed, MLX) with mlPolicy.mpi.runLauncherAsNode trains on the launcher pod
 * too: numNodes N renders N-1 node pods plus the launcher, so the largest replicated job is one
 * node short. The gang then holds numNodes Slurm nodes (spec.trainer.numNodes, else the
 * runtime's mlPolicy.numNodes), one per training host.
 */
static void launcher_as_node(const json_t *trainjob, const json_t *runtime, struct gang_need *need)
{
    const json_t *ml = json_object_get(json_object_get(runtime, "spec"), "mlPolicy");
    const json_t *n =
        json_object_get(json_object_get(json_object_get(trainjob, "spec"), "trainer"), "numNodes");

    if (!json_is_true(json_object_get(json_object_get(ml, "mpi"), "runLauncherAsNode")))
        return;
    if (!json_is_integer(n))
        n = json_object_get(ml, "numNodes");
    if (json_is_integer(n) && json_integer_value(n) > need->pods)
        need->pods = json_integer_value(n);
}

char *slurm_job_name(struct common_arena *a, const char *ns, const char *name)
{
    return common_arena_printf(a, "trainsched.%s.%s", ns, name);
}

char *slurm_job_comment(struct common_arena *a, const char *ns, const char *name, const char *uid)
{
    return common_arena_printf(a, SLURM_COMMENT_PREFIX "%s/%s/%s", ns, name, uid ? uid : "");
}

enum common_rc slurm_submission(const json_t *trainjob, const json_t *runtime, const json_t *jobset,
                                const struct slurm_config *cfg, json_t **out,
                                struct common_error *err)
{
    static const struct slurm_config defaults = {0};
    const json_t *meta = json_object_get(trainjob, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    const json_t *deadline =
        json_object_get(json_object_get(trainjob, "spec"), "activeDeadlineSeconds");
    const char *version, *gpu_resource, *gres, *workdir, *v;
    struct common_arena *a = NULL;
    struct gang_need need;
    json_t *body = NULL, *job = NULL, *env = NULL;
    enum common_rc rc;
    int minor;

    *out = NULL;
    if (!cfg)
        cfg = &defaults;
    version = cfg->api_version && *cfg->api_version ? cfg->api_version : DEFAULT_VERSION;
    gpu_resource = cfg->gpu_resource && *cfg->gpu_resource ? cfg->gpu_resource : "nvidia.com/gpu";
    gres = cfg->gres_name ? cfg->gres_name : "gpu";
    workdir = cfg->workdir && *cfg->workdir ? cfg->workdir : "/tmp";
    minor = api_minor(version);
    if (minor < 38)
        return common_error_set(err, COMMON_EUNSUPPORTED,
                                "slurmrestd API version \"%s\" is not supported (v0.0.38 and "
                                "newer are)",
                                version);
    if (!name || !*name)
        return common_error_set(err, COMMON_EINVAL, "TrainJob metadata.name: Required value");
    if (!ns || !*ns)
        ns = "default";
    if (deadline && (!json_is_integer(deadline) || json_integer_value(deadline) <= 0))
        return common_error_set(err, COMMON_EINVAL,
                                "TrainJob spec.activeDeadlineSeconds: must be a positive integer");
    rc = need_of(jobset, gpu_resource, &need, err);
    if (rc)
        return rc;
    launcher_as_node(trainjob, runtime, &need);
    /* slurmrestd reads the node and task counts as 32-bit integers (as the KAI and native
     * backends refuse a minMember past int32) */
    if (need.pods > INT32_MAX)
        return common_error_set(err, COMMON_EINVAL,
                                "Slurm job nodes: %" PRId64 " (the largest replicated job's "
                                "replicas x parallelism) is more than an int32",
                                need.pods);
    v = placement(trainjob, runtime, SLURM_ANNOTATION_PARTITION, cfg->partition);
    if (v && !partition_ok(v))
        return common_error_set(
            err, COMMON_EINVAL,
            "%s: Invalid value: \"%s\": a Slurm partition name has no whitespace or control "
            "characters",
            annotation(trainjob, SLURM_ANNOTATION_PARTITION)
                ? "TrainJob metadata.annotations[\"" SLURM_ANNOTATION_PARTITION "\"]"
            : runtime && annotation(runtime, SLURM_ANNOTATION_PARTITION)
                ? "runtime metadata.annotations[\"" SLURM_ANNOTATION_PARTITION "\"]"
                : "slurm.partition",
            v);
    a = common_arena_create(0);
    body = json_object();
    job = json_object();
    env = minor == 38 ? json_pack("{s:s}", "PATH", PLACEHOLDER_PATH)
                      : json_pack("[s]", "PATH=" PLACEHOLDER_PATH);
    if (!a || !body || !job || !env) {
        json_decref(env);
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    rc = set_new(job, "name", json_string(slurm_job_name(a, ns, name)), err);
    if (!rc)
        rc = set_new(job, "comment", json_string(slurm_job_comment(a, ns, name, uid)), err);
    if (!rc)
        rc = set_new(job, "nodes",
                     minor == 38 ? json_integer(need.pods)
                                 : json_string(common_arena_printf(a, "%" PRId64, need.pods)),
                     err);
    if (!rc)
        rc = set_new(job, "tasks", json_integer(need.pods), err);
    if (!rc)
        rc = set_new(job, "tasks_per_node", json_integer(1), err);
    if (!rc)
        rc = set_new(job, "cpus_per_task",
                     json_integer(need.cpu_milli > 0 ? (need.cpu_milli + 999) / 1000 : 1), err);
    if (!rc && need.mem_bytes > 0) {
        int64_t mib = need.mem_bytes / (1024 * 1024) + (need.mem_bytes % (1024 * 1024) != 0);
        rc = set_new(job, "memory_per_node", minor == 38 ? json_integer(mib) : wrapped(mib), err);
    }
    if (!rc && need.gpus > 0 && *gres)
        rc = minor == 38
                 ? set_new(job, "gres",
                           json_string(common_arena_printf(a, "%s:%" PRId64, gres, need.gpus)), err)
                 : set_new(job, "tres_per_node",
                           json_string(common_arena_printf(a, "gres/%s:%" PRId64, gres, need.gpus)),
                           err);
    if (!rc && deadline) {
        /* minutes rounded up, without overflow; Slurm reads 4294967295 (INFINITE) as no limit,
         * so a longer deadline is capped at the largest finite limit, never sent as INFINITE */
        int64_t secs = json_integer_value(deadline);
        int64_t minutes = secs / 60 + (secs % 60 != 0);
        if (minutes > SLURM_TIME_LIMIT_MAX)
            minutes = SLURM_TIME_LIMIT_MAX;
        rc =
            set_new(job, "time_limit", minor == 38 ? json_integer(minutes) : wrapped(minutes), err);
    }
    if (!rc && (v = placement(trainjob, runtime, SLURM_ANNOTATION_PARTITION, cfg->partition)))
        rc = set_new(job, "partition", json_string(v), err);
    if (!rc && (v = placement(trainjob, runtime, SLURM_ANNOTATION_ACCOUNT, cfg->account)))
        rc = set_new(job, "account", json_string(v), err);
    if (!rc && (v = placement(trainjob, runtime, SLURM_ANNOTATION_QOS, cfg->qos)))
        rc = set_new(job, "qos", json_string(v), err);
    if (!rc)
        rc = set_new(job, "environment", env, err);
    else
        json_decref(env);
    if (!rc)
        rc = set_new(job, "current_working_directory", json_string(workdir), err);
    if (!rc)
        rc = set_new(job, "standard_output", json_string("/dev/null"), err);
    if (!rc)
        rc = set_new(minor >= 41 ? job : body, "script", json_string(PLACEHOLDER_SCRIPT), err);
    if (!rc) {
        rc = set_new(body, "job", job, err);
        job = NULL;
    }
out:
    json_decref(job);
    common_arena_destroy(a);
    if (rc)
        json_decref(body);
    else
        *out = body;
    return rc;
}

const char *slurm_phase_name(enum slurm_phase p)
{
    switch (p) {
    case SLURM_PENDING:
        return "pending";
    case SLURM_RUNNING:
        return "running";
    case SLURM_ENDED:
        return "ended";
    }
    return "unknown";
}

/* ---- answers ---- */

/* the first bytes of body, printable, for a message */
static void quote_body(const char *body, size_t len, char *buf, size_t n)
{
    size_t j = 0;

    for (size_t i = 0; i < len && j + 4 < n; i++)
        buf[j++] = isprint((unsigned char)body[i]) ? body[i] : ' ';
    if (len && j + 4 >= n && n > 4) {
        memcpy(buf + j, "...", 3);
        j += 3;
    }
    buf[j < n ? j : n - 1] = '\0';
}

/* "message (error N)" of the first entry of errors[], into buf; 0 when there is none */
static int first_error(const json_t *errors, char *buf, size_t n)
{
    const json_t *e = json_array_get(errors, 0);
    const char *msg, *desc;
    json_int_t code = 0;

    if (!e)
        return 0;
    msg = json_string_value(json_object_get(e, "error"));
    desc = json_string_value(json_object_get(e, "description"));
    if (json_is_integer(json_object_get(e, "error_code")))
        code = json_integer_value(json_object_get(e, "error_code"));
    else if (json_is_integer(json_object_get(e, "error_number")))
        code = json_integer_value(json_object_get(e, "error_number"));
    if (desc && *desc && msg && *msg)
        snprintf(buf, n, "%s: %s (error %" JSON_INTEGER_FORMAT ")", msg, desc, code);
    else if ((msg && *msg) || (desc && *desc))
        snprintf(buf, n, "%s (error %" JSON_INTEGER_FORMAT ")", msg && *msg ? msg : desc, code);
    else
        snprintf(buf, n, "error %" JSON_INTEGER_FORMAT, code);
    return (int)code ? (int)code : -1;
}

enum common_rc slurm_answer_check(long http_status, const char *body, size_t len, const char *what,
                                  json_t **doc, struct common_error *err)
{
    char quoted[160], msg[512];
    json_error_t je;
    json_t *root;
    int code;

    if (doc)
        *doc = NULL;
    if (!what)
        what = "slurmrestd";
    root = len ? json_loadb(body, len, 0, &je) : NULL;
    if (!root || !json_is_object(root)) {
        quote_body(body ? body : "", len, quoted, sizeof(quoted));
        json_decref(root);
        if (http_status == 401 || http_status == 403)
            return common_error_set(err, COMMON_EUNAUTHORIZED,
                                    "%s: HTTP %ld: %s (check the slurmrestd user name and token)",
                                    what, http_status, len ? quoted : "empty answer");
        if (http_status < 200 || http_status > 299)
            return common_error_set(err, COMMON_EAPI, "%s: HTTP %ld: %s", what, http_status,
                                    len ? quoted : "empty answer");
        if (!len)
            return common_error_set(err, COMMON_EINVAL, "%s: HTTP %ld with an empty answer", what,
                                    http_status);
        return common_error_set(err, COMMON_EINVAL,
                                "%s: HTTP %ld: the answer is not a JSON object (%s at byte %d): "
                                "\"%s\"",
                                what, http_status, root ? "not an object" : je.text,
                                root ? 0 : je.position, quoted);
    }
    code = first_error(json_object_get(root, "errors"), msg, sizeof(msg));
    if (code == 0 && http_status >= 200 && http_status <= 299) {
        if (doc)
            *doc = root;
        else
            json_decref(root);
        return COMMON_OK;
    }
    json_decref(root);
    if (code == 0)
        snprintf(msg, sizeof(msg), "no error given");
    if (http_status == 401 || http_status == 403)
        return common_error_set(err, COMMON_EUNAUTHORIZED, "%s: HTTP %ld: %s", what, http_status,
                                msg);
    if (code == 2017)
        return common_error_set(err, COMMON_ENOTFOUND, "%s: HTTP %ld: %s", what, http_status, msg);
    return common_error_set(err, COMMON_EAPI, "%s: HTTP %ld: %s", what, http_status, msg);
}

struct state_class {
    const char *name;
    enum slurm_phase phase;
};

static const struct state_class states[] = {
    {"PENDING", SLURM_PENDING},     {"CONFIGURING", SLURM_PENDING},
    {"REQUEUED", SLURM_PENDING},    {"REQUEUE_HOLD", SLURM_PENDING},
    {"REQUEUE_FED", SLURM_PENDING}, {"RESV_DEL_HOLD", SLURM_PENDING},
    {"SUSPENDED", SLURM_PENDING},   {"POWER_UP_NODE", SLURM_PENDING},
    {"RUNNING", SLURM_RUNNING},     {"RESIZING", SLURM_RUNNING},
    {"SIGNALING", SLURM_RUNNING},   {"STOPPED", SLURM_RUNNING},
    {"UPDATE_DB", SLURM_RUNNING},   {"EXPEDITING", SLURM_PENDING},
    {"COMPLETING", SLURM_ENDED},    {"COMPLETED", SLURM_ENDED},
    {"CANCELLED", SLURM_ENDED},     {"FAILED", SLURM_ENDED},
    {"TIMEOUT", SLURM_ENDED},       {"NODE_FAIL", SLURM_ENDED},
    {"PREEMPTED", SLURM_ENDED},     {"BOOT_FAIL", SLURM_ENDED},
    {"DEADLINE", SLURM_ENDED},      {"OUT_OF_MEMORY", SLURM_ENDED},
    {"SPECIAL_EXIT", SLURM_ENDED},  {"STAGE_OUT", SLURM_ENDED},
    {"REVOKED", SLURM_ENDED},       {"LAUNCH_FAILED", SLURM_ENDED},
    {"RECONFIG_FAIL", SLURM_ENDED},
};

/* -1 for a name not in the table */
static int state_phase(const char *s)
{
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
        if (strcmp(states[i].name, s) == 0)
            return (int)states[i].phase;
    return -1;
}

/* an integer that may be wrapped as {set, number}; 0 when absent or unset */
static int64_t number_of(const json_t *v)
{
    if (json_is_object(v)) {
        if (!json_is_true(json_object_get(v, "set")))
            return 0;
        v = json_object_get(v, "number");
    }
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

struct hl_range {
    unsigned long lo, hi;
    int width;
};

/* the ranges of one bracket group's text ("1-3,5", no brackets) into r (at most nmax);
 * *count = names it gives. -1 on bad syntax or more than max names. */
static int hl_ranges(const char *text, struct hl_range *r, size_t nmax, size_t *nr, size_t max,
                     size_t *count)
{
    const char *q = text;

    *nr = 0;
    *count = 0;
    while (*q) {
        char *dash, *end;
        struct hl_range one;

        if (!isdigit((unsigned char)*q) || *nr >= nmax)
            return -1;
        errno = 0;
        one.lo = strtoul(q, &dash, 10);
        one.width = (int)(dash - q);
        one.hi = one.lo;
        end = dash;
        if (*dash == '-') {
            if (!isdigit((unsigned char)dash[1]))
                return -1;
            one.hi = strtoul(dash + 1, &end, 10);
        }
        if (errno || one.hi < one.lo || (*end && *end != ',') || one.hi - one.lo >= max)
            return -1;
        *count += one.hi - one.lo + 1;
        if (*count > max)
            return -1;
        r[(*nr)++] = one;
        q = *end ? end + 1 : end;
    }
    return *nr ? 0 : -1;
}

/* the names of one hostlist entry (no commas outside brackets), appended after the *nwork
 * partial names in *work (which it replaces) */
static enum common_rc hl_entry(struct common_arena *a, const char *list, char *entry, size_t max,
                               const char ***work, size_t *nwork, struct common_error *err)
{
    char *q = entry;

    while (*q) {
        char *open = strchr(q, '['), *close;
        const char *prefix;
        struct hl_range r[64];
        size_t nr, count, nn = 0;
        const char **next;

        prefix = common_arena_strndup(a, q, open ? (size_t)(open - q) : strlen(q));
        if (!prefix)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        if (!open) {
            for (size_t i = 0; i < *nwork; i++)
                if (!((*work)[i] = common_arena_printf(a, "%s%s", (*work)[i], prefix)))
                    return common_error_set(err, COMMON_ENOMEM, "out of memory");
            return COMMON_OK;
        }
        close = strchr(open, ']');
        *close = '\0';
        if (hl_ranges(open + 1, r, sizeof(r) / sizeof(r[0]), &nr, max, &count) < 0 ||
            count * *nwork > max)
            return common_error_set(err, COMMON_EINVAL,
                                    "Slurm hostlist \"%s\": bad range \"[%s]\" (digits, "
                                    "lo-hi with lo <= hi, at most %zu names)",
                                    list, open + 1, max);
        next = common_arena_alloc(a, sizeof(*next) * count * *nwork);
        if (!next)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        for (size_t i = 0; i < *nwork; i++)
            for (size_t k = 0; k < nr; k++)
                for (unsigned long x = r[k].lo; x <= r[k].hi; x++)
                    if (!(next[nn++] = common_arena_printf(a, "%s%s%0*lu", (*work)[i], prefix,
                                                           r[k].width, x)))
                        return common_error_set(err, COMMON_ENOMEM, "out of memory");
        *work = next;
        *nwork = nn;
        q = close + 1;
    }
    return COMMON_OK;
}

enum common_rc slurm_hostlist_expand(struct common_arena *a, const char *list, size_t max,
                                     const char ***names, size_t *n, struct common_error *err)
{
    const char **out = NULL;
    size_t cnt = 0;
    const char *p = list ? list : "";

    *names = NULL;
    *n = 0;
    while (*p) {
        const char *start = p, **work;
        size_t nwork = 1;
        char *entry;
        int depth = 0;
        enum common_rc rc;

        while (*p && (depth || *p != ',')) {
            if (*p == '[' && ++depth > 1)
                break;
            if (*p == ']' && --depth < 0)
                break;
            p++;
        }
        if (depth != 0 || (*p && *p != ','))
            return common_error_set(err, COMMON_EINVAL,
                                    "Slurm hostlist \"%s\": unbalanced brackets", list);
        if (p == start)
            return common_error_set(err, COMMON_EINVAL, "Slurm hostlist \"%s\": empty name", list);
        entry = common_arena_strndup(a, start, (size_t)(p - start));
        work = common_arena_alloc(a, sizeof(*work));
        if (!entry || !work)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        work[0] = "";
        rc = hl_entry(a, list, entry, max, &work, &nwork, err);
        if (rc)
            return rc;
        if (cnt + nwork > max)
            return common_error_set(err, COMMON_EINVAL,
                                    "Slurm hostlist \"%s\": more than %zu names", list, max);
        {
            const char **grown = common_arena_alloc(a, sizeof(*grown) * (cnt + nwork));
            if (!grown)
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
            if (cnt)
                memcpy(grown, out, sizeof(*out) * cnt);
            memcpy(grown + cnt, work, sizeof(*work) * nwork);
            out = grown;
            cnt += nwork;
        }
        if (*p == ',')
            p++;
    }
    *names = out;
    *n = cnt;
    return COMMON_OK;
}

static enum common_rc job_of(struct common_arena *a, const json_t *job, struct slurm_job_state *out,
                             struct common_error *err)
{
    const json_t *st = json_object_get(job, "job_state");
    const char *reason = json_string_value(json_object_get(job, "state_reason"));
    const char *nodes = json_string_value(json_object_get(job, "nodes"));
    char state[256] = "";
    int phase = -1;
    enum common_rc rc;

    memset(out, 0, sizeof(*out));
    out->job_id = number_of(json_object_get(job, "job_id"));
    if (out->job_id <= 0)
        return common_error_set(err, COMMON_EINVAL,
                                "slurmrestd job: job_id missing or not a "
                                "positive integer");
    if (json_is_string(st)) {
        snprintf(state, sizeof(state), "%s", json_string_value(st));
        phase = state_phase(state);
    } else if (json_is_array(st)) {
        /* v0.0.40+: base state plus flags; the phase is the most advanced one named */
        size_t i, used;
        const json_t *f;
        json_array_foreach(st, i, f)
        {
            const char *s = json_string_value(f);
            int ph;
            if (!s)
                continue;
            ph = state_phase(s);
            if (ph > phase)
                phase = ph;
            used = strlen(state);
            snprintf(state + used, sizeof(state) - used, "%s%s", used ? "," : "", s);
        }
    }
    if (!*state)
        return common_error_set(err, COMMON_EINVAL, "slurmrestd job %" PRId64 ": job_state missing",
                                out->job_id);
    if (phase < 0)
        return common_error_set(err, COMMON_EINVAL,
                                "slurmrestd job %" PRId64 ": unknown job_state \"%s\"", out->job_id,
                                state);
    out->phase = (enum slurm_phase)phase;
    out->state = common_arena_strdup(a, state);
    out->reason = common_arena_strdup(a, reason && *reason ? reason : "None");
    out->name = common_arena_strdup(a, json_string_value(json_object_get(job, "name")));
    out->comment = common_arena_strdup(a, json_string_value(json_object_get(job, "comment")));
    if (!out->state || !out->reason)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (out->phase == SLURM_RUNNING) {
        rc = slurm_hostlist_expand(a, nodes, 65536, &out->nodes, &out->nnodes, err);
        if (rc)
            return rc;
        if (out->nnodes == 0)
            return common_error_set(err, COMMON_EINVAL,
                                    "slurmrestd job %" PRId64 ": %s but no nodes", out->job_id,
                                    state);
    }
    if (out->phase == SLURM_PENDING)
        out->summary = common_arena_printf(a, "Slurm job %" PRId64 " is pending (%s): %s",
                                           out->job_id, out->state, out->reason);
    else if (out->phase == SLURM_RUNNING)
        out->summary =
            common_arena_printf(a, "Slurm job %" PRId64 " is running on %s", out->job_id, nodes);
    else
        out->summary = common_arena_printf(a, "Slurm job %" PRId64 " ended: %s (%s)", out->job_id,
                                           out->state, out->reason);
    if (!out->summary)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

enum common_rc slurm_job_parse(struct common_arena *a, const json_t *answer,
                               struct slurm_job_state *out, struct common_error *err)
{
    const json_t *jobs = json_object_get(answer, "jobs");

    memset(out, 0, sizeof(*out));
    if (!json_is_array(jobs) || json_array_size(jobs) == 0)
        return common_error_set(err, COMMON_EINVAL, "slurmrestd answer: jobs is missing or empty");
    return job_of(a, json_array_get(jobs, 0), out, err);
}

enum common_rc slurm_jobs_find(struct common_arena *a, const json_t *answer, const char *comment,
                               struct slurm_job_state *out, struct common_error *err)
{
    const json_t *jobs = json_object_get(answer, "jobs"), *job;
    size_t i;
    int found = 0;

    memset(out, 0, sizeof(*out));
    if (!json_is_array(jobs))
        return common_error_set(err, COMMON_EINVAL, "slurmrestd answer: jobs is missing");
    json_array_foreach(jobs, i, job)
    {
        const char *c = json_string_value(json_object_get(job, "comment"));
        struct slurm_job_state st;
        enum common_rc rc;

        if (!c || !comment || strcmp(c, comment) != 0)
            continue;
        rc = job_of(a, job, &st, err);
        if (rc)
            return rc;
        if (!found || (out->phase == SLURM_ENDED && st.phase != SLURM_ENDED) ||
            (out->phase == st.phase && st.job_id > out->job_id))
            *out = st;
        found = 1;
    }
    if (!found)
        return common_error_set(err, COMMON_ENOTFOUND, "no Slurm job with comment \"%s\"",
                                comment ? comment : "");
    return COMMON_OK;
}

int slurm_node_in(const char *slurm_name, const char *nodes_csv)
{
    size_t n;
    const char *p = nodes_csv;

    if (!slurm_name || !*slurm_name || !p)
        return 0;
    n = strlen(slurm_name);
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, slurm_name, n) == 0)
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}
