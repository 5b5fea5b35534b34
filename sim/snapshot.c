/*
 * sim/snapshot.c - a read-only snapshot of a live cluster (the API's lists, as JSON) into a
 * simulation input (sim.h sim_load_snapshot). Pure: the lists arrive fetched, the time they
 * were taken is an argument, nothing is read or written here.
 *
 * What becomes what:
 *   Nodes                 the cluster (the loader's Node checks; one it refuses is left out
 *                         with a note)
 *   Pods bound, not ended load (struct sim_load) on their node until their remaining time;
 *                         one on a node the snapshot does not hold is left out with a note
 *   Pods pending          the waiting jobs: a PodGroup's pending members with their
 *                         PodGroup (minMember less the members already bound), others one Pod
 *                         job each
 *   PodGroups             gangs; one with no pod at all is noted (nothing to place)
 *   TrainJobs             one that is not finished and has no pod yet is rendered as simulate
 *                         renders it (its runtime from the snapshot or the built-in ones)
 *   ResourceSlices/Claims counted and noted: DRA is not modelled (sim/README.md "Limits")
 * A waiting job the loader refuses (a pod with ResourceClaims, a TrainJob it cannot render) is
 * checked alone first, in a scratch loader, and left out with the loader's message as a note,
 * so one bad object never stops the snapshot.
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/leader.h"
#include "sim/sim_int.h"

#define SNAP_NAME "from-cluster"
#define JOBSET_NAME_LABEL "jobset.sigs.k8s.io/jobset-name"
/* notes of one kind listed one by one before the rest are counted */
#define NOTES_EACH 5

struct notes {
    struct sim_loader *l;
    size_t count[8];
};

enum note_kind {
    N_NODE = 0,
    N_UNKNOWN_NODE,
    N_JOB,
    N_EMPTY_PG,
    N_GATED,
    N_NO_PG,
    N_CLAIMS,
    N_SLICE
};

static enum common_rc note(struct notes *n, enum note_kind k, const char *msg,
                           struct common_error *err)
{
    if (n->count[k]++ >= NOTES_EACH)
        return COMMON_OK;
    return sim_loader_note(n->l, msg, err);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

static const char *label(const json_t *o, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(o, "metadata"), "labels"), key));
}

static const char *annotation(const json_t *o, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"), key));
}

/* RFC 3339 "2026-12-08T00:53:55Z" (fractions and offsets read) -> Unix ms; -1 when absent or
 * malformed */
int64_t sim_parse_time(const char *s)
{
    int64_t us;

    return common_leader_parse_microtime(s, &us) == 0 ? us / 1000 : -1;
}

/* "ns/name" (ns "default" when missing) into buf */
static const char *key_of(const json_t *o, const char *name, char *buf, size_t n)
{
    const char *ns = str_at(o, "metadata", "namespace");
    snprintf(buf, n, "%s/%s", ns ? ns : "default", name ? name : "?");
    return buf;
}

/* a copy of o with what a simulation never reads dropped; apiVersion and kind set (list items
 * carry neither); NULL when out of memory */
static json_t *slim_copy(const json_t *o, const char *api, const char *kind)
{
    json_t *c = json_deep_copy(o), *md;

    if (!c)
        return NULL;
    md = json_object_get(c, "metadata");
    json_object_del(md, "managedFields");
    if (json_object_set_new(c, "apiVersion", json_string(api)) ||
        json_object_set_new(c, "kind", json_string(kind))) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* every trainsched.io/sim-* annotation of o removed (the snapshot sets the one it means) */
static void drop_sim_annotations(json_t *o)
{
    json_t *an = json_object_get(json_object_get(o, "metadata"), "annotations"), *v;
    const char *k;
    void *tmp;

    json_object_foreach_safe(an, tmp, k, v)
    {
        if (strncmp(k, SIM_ANNOTATION_PREFIX, strlen(SIM_ANNOTATION_PREFIX)) == 0)
            json_object_del(an, k);
    }
}

/* set trainsched.io/sim-run-time of o to ms */
static int set_run_time(json_t *o, int64_t ms)
{
    json_t *md = json_object_get(o, "metadata"), *an;
    char v[40];

    if (!json_is_object(md))
        return -1;
    an = json_object_get(md, "annotations");
    if (!json_is_object(an)) {
        an = json_object();
        if (!an || json_object_set_new(md, "annotations", an))
            return -1;
    }
    snprintf(v, sizeof(v), "%lldms", (long long)ms);
    return json_object_set_new(an, SIM_RUN_TIME_ANNOTATION, json_string(v));
}

/* the run time the objects declare (the first of pod, group, trainjob holding the annotation),
 * else the pod's spec.activeDeadlineSeconds, else -1; *from names the source */
static int64_t declared_run(const json_t *pod, const json_t *group, const json_t *tj,
                            const char **from)
{
    const json_t *src[3] = {pod, group, tj};
    static const char *const names[3] = {"the pod's", "its PodGroup's", "its TrainJob's"};
    const json_t *ads;
    struct common_error e;
    int64_t ms;

    for (int i = 0; i < 3; i++) {
        const char *v = src[i] ? annotation(src[i], SIM_RUN_TIME_ANNOTATION) : NULL;
        if (v && sim_parse_duration(v, &ms, &e) == COMMON_OK) {
            *from = names[i];
            return ms;
        }
    }
    ads = json_object_get(json_object_get(pod, "spec"), "activeDeadlineSeconds");
    if (json_is_integer(ads) && json_integer_value(ads) >= 0 &&
        json_integer_value(ads) < SIM_MAX_TIME_MS / 1000) {
        *from = "activeDeadlineSeconds";
        return json_integer_value(ads) * 1000;
    }
    *from = NULL;
    return -1;
}

/* how long a bound pod still runs from s->now_ms: the declared run time less what it has run
 * (status.startTime, else creation), never below 0; else --assume-run-time */
static int64_t remaining(const struct sim_snapshot *s, const json_t *pod, const json_t *group,
                         const json_t *tj)
{
    const char *from;
    int64_t run = declared_run(pod, group, tj, &from), start, left;

    if (run < 0)
        return s->assume_run_ms;
    start = sim_parse_time(str_at(pod, "status", "startTime"));
    if (start < 0)
        start = sim_parse_time(str_at(pod, "metadata", "creationTimestamp"));
    left = start >= 0 && s->now_ms > start ? run - (s->now_ms - start) : run;
    return left > 0 ? left : 0;
}

/* the phase of a pod that no longer holds its node */
static int ended(const json_t *pod)
{
    const char *ph = str_at(pod, "status", "phase");
    return ph && (strcmp(ph, "Succeeded") == 0 || strcmp(ph, "Failed") == 0);
}

/* a TrainJob that finished (condition Complete or Failed True) */
static int tj_finished(const json_t *tj)
{
    const json_t *cs = json_object_get(json_object_get(tj, "status"), "conditions"), *c;
    size_t i;

    json_array_foreach((json_t *)cs, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (t && st && strcmp(st, "True") == 0 && (!strcmp(t, "Complete") || !strcmp(t, "Failed")))
            return 1;
    }
    return 0;
}

/* a waiting job: its documents (the PodGroup or TrainJob first) and when it was created */
struct cand {
    json_t *docs; /* array */
    int64_t created;
    size_t order;
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* documents of v (new references) as an in-memory file (common_malloc'd), or NULL */
static struct common_yaml_docs *docs_of(json_t *const *v, size_t n)
{
    struct common_yaml_docs *d = common_malloc(sizeof(*d));

    if (!d)
        return NULL;
    memset(d, 0, sizeof(*d));
    d->docs = common_malloc((n + 1) * sizeof(*d->docs));
    d->doc_line = common_malloc((n + 1) * sizeof(*d->doc_line));
    d->name = common_malloc(sizeof(SNAP_NAME));
    if (!d->docs || !d->doc_line || !d->name) {
        common_yaml_docs_free(d);
        common_free(d);
        return NULL;
    }
    memcpy(d->name, SNAP_NAME, sizeof(SNAP_NAME));
    for (size_t i = 0; i < n; i++) {
        d->docs[i] = json_incref(v[i]);
        d->doc_line[i] = (int)(i + 1);
    }
    d->n = n;
    return d;
}

/* the documents of array arr as an in-memory file, or NULL */
static struct common_yaml_docs *docs_from(json_t *arr)
{
    size_t n = json_array_size(arr);
    json_t **v = common_malloc((n + 1) * sizeof(*v));
    struct common_yaml_docs *d;

    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(arr, i);
    d = docs_of(v, n);
    common_free(v);
    return d;
}

/* the loader's message without the in-memory position ("from-cluster:3: ") */
static const char *no_pos(const char *msg)
{
    size_t k = strlen(SNAP_NAME);
    if (strncmp(msg, SNAP_NAME ":", k + 1) == 0) {
        const char *p = msg + k + 1;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p == ':')
            p++;
        while (*p == ' ')
            p++;
        return p;
    }
    return msg;
}

/* whether the loader takes job (documents) with runtimes: checked alone, on one node; *why
 * gets the loader's message when it does not. Returns COMMON_OK (then *ok says), or
 * COMMON_ENOMEM. */
static enum common_rc job_loads(const json_t *job, const json_t *runtimes, int *ok, char *why,
                                size_t whylen, struct common_error *err)
{
    static const char node_json[] = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":"
                                    "{\"name\":\"scratch\"},\"status\":{\"allocatable\":"
                                    "{\"cpu\":\"1\"}}}";
    struct common_arena *a = common_arena_create(0);
    struct sim_loader *sl = a ? sim_loader_create(a, NULL) : NULL;
    json_t *node = json_loads(node_json, 0, NULL), *all = json_array();
    struct common_yaml_docs *d = NULL;
    struct sim_input in;
    struct common_error e;
    enum common_rc rc = COMMON_OK;

    *ok = 0;
    if (!sl || !node || !all || json_array_extend(all, (json_t *)runtimes) ||
        json_array_extend(all, (json_t *)job) || !(d = docs_from(all))) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    sim_loader_snapshot(sl, 0);
    if ((rc = sim_loader_add_node(sl, node, &e)) == COMMON_OK &&
        (rc = sim_load_jobs(sl, d, &e)) == COMMON_OK)
        rc = sim_loader_finish(sl, &in, &e);
    if (rc == COMMON_ENOMEM) {
        *err = e;
        goto out;
    }
    *ok = rc == COMMON_OK;
    if (!*ok)
        snprintf(why, whylen, "%s", no_pos(e.msg));
    rc = COMMON_OK;
out:
    sim_loader_destroy(sl);
    common_arena_destroy(a);
    if (d) {
        common_yaml_docs_free(d);
        common_free(d);
    }
    json_decref(node);
    json_decref(all);
    return rc;
}

/* a pending pod as a job's pod: gates other than the gang gate (which the simulator models:
 * docs/gang.md "The gang gate") and sim- annotations dropped, status cleared; *gated counts the
 * pods that lost a gate */
static json_t *waiting_pod(const json_t *pod, size_t *gated)
{
    json_t *c = slim_copy(pod, "v1", "Pod"), *spec, *gates, *g;
    size_t i, before;

    if (!c)
        return NULL;
    spec = json_object_get(c, "spec");
    gates = json_object_get(spec, "schedulingGates");
    before = json_array_size(gates);
    for (i = json_array_size(gates); i-- > 0;) {
        g = json_array_get(gates, i);
        const char *name = json_string_value(json_object_get(g, "name"));
        if (!name || strcmp(name, GANG_SCHEDULING_GATE) != 0)
            json_array_remove(gates, i);
    }
    if (json_array_size(gates) < before)
        (*gated)++;
    if (gates && !json_array_size(gates))
        json_object_del(spec, "schedulingGates");
    json_object_del(spec, "nodeName");
    json_object_del(c, "status");
    drop_sim_annotations(c);
    return c;
}

/* appended to arr (a new reference taken); -1 when out of memory */
static int push(json_t *arr, json_t *v)
{
    return v ? json_array_append_new(arr, v) : -1;
}

static int64_t created_at(const json_t *o)
{
    int64_t t = sim_parse_time(str_at(o, "metadata", "creationTimestamp"));
    return t < 0 ? INT64_MAX : t;
}

enum common_rc sim_load_snapshot(struct sim_loader *l, const struct sim_snapshot *s,
                                 struct common_error *err)
{
    struct notes nt = {l, {0}};
    json_t *nodes_known = json_object(), *pending = json_object(), *bound = json_object();
    json_t *groups = json_object(), *tjs = json_object(), *with_pods = json_object();
    json_t *done = json_object();
    json_t *runtimes = json_array(), *item;
    struct cand *cands = NULL;
    size_t n_cands = 0, cap_cands = 0, i, n_load = 0;
    char msg[1400], key[600], why[1000];
    enum common_rc rc = COMMON_OK;

#define OOM()                                                                                      \
    do {                                                                                           \
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");                                \
        goto out;                                                                                  \
    } while (0)
#define NOTE(k, ...)                                                                               \
    do {                                                                                           \
        snprintf(msg, sizeof(msg), __VA_ARGS__);                                                   \
        if ((rc = note(&nt, k, msg, err)) != COMMON_OK)                                            \
            goto out;                                                                              \
    } while (0)

    if (!nodes_known || !pending || !bound || !groups || !tjs || !with_pods || !runtimes || !done)
        OOM();
    sim_loader_snapshot(l, s->now_ms);

    /* the cluster */
    json_array_foreach((json_t *)s->nodes, i, item)
    {
        const char *name = str_at(item, "metadata", "name");
        struct common_error e;
        json_t *c;
        if (!name || !*name) {
            NOTE(N_NODE, "nodes[%zu] has no metadata.name: left out", i);
            continue;
        }
        if (!(c = slim_copy(item, "v1", "Node")))
            OOM();
        json_object_del(json_object_get(c, "status"), "images");
        rc = sim_loader_add_node(l, c, &e);
        json_decref(c);
        if (rc == COMMON_ENOMEM)
            OOM();
        if (rc != COMMON_OK) {
            rc = COMMON_OK;
            NOTE(N_NODE, "Node %s is left out: %s", name, e.msg);
            continue;
        }
        if (json_object_set_new(nodes_known, name, json_true()))
            OOM();
    }

    /* PodGroups and TrainJobs by namespace/name, for the pods that name them */
    json_array_foreach((json_t *)s->pod_groups, i, item)
    {
        const char *name = str_at(item, "metadata", "name");
        if (name && json_object_set(groups, key_of(item, name, key, sizeof(key)), item))
            OOM();
    }
    json_array_foreach((json_t *)s->train_jobs, i, item)
    {
        const char *name = str_at(item, "metadata", "name");
        if (name && json_object_set(tjs, key_of(item, name, key, sizeof(key)), item))
            OOM();
    }

    /* the pods: load, or waiting members */
    json_array_foreach((json_t *)s->pods, i, item)
    {
        const char *name = str_at(item, "metadata", "name");
        const char *node = str_at(item, "spec", "nodeName");
        const char *pg = label(item, GANG_POD_GROUP_LABEL), *js = label(item, JOBSET_NAME_LABEL);
        char gkey[600], tkey[600];
        if (!name)
            continue;
        if (ended(item)) { /* its gang ran: not a PodGroup without pods */
            if (pg && json_object_set_new(done, key_of(item, pg, gkey, sizeof(gkey)), json_true()))
                OOM();
            continue;
        }
        if (js && json_object_set_new(with_pods, key_of(item, js, tkey, sizeof(tkey)), json_true()))
            OOM();
        if (pg)
            key_of(item, pg, gkey, sizeof(gkey));
        if (node && *node) {
            struct common_error e;
            json_t *c, *claims;
            if (!json_object_get(nodes_known, node)) {
                NOTE(N_UNKNOWN_NODE,
                     "Pod %s runs on node %s, which the snapshot does not hold: its requests are "
                     "left out",
                     key_of(item, name, key, sizeof(key)), node);
                continue;
            }
            if (!(c = slim_copy(item, "v1", "Pod")))
                OOM();
            {
                /* the books key pods by uid and namespace: a pod read without them (partly
                 * missing data) still counts */
                json_t *md = json_object_get(c, "metadata");
                if (!json_string_value(json_object_get(md, "namespace")))
                    json_object_set_new(md, "namespace", json_string("default"));
                if (!json_string_value(json_object_get(md, "uid")) &&
                    json_object_set_new(md, "uid",
                                        json_string(key_of(item, name, key, sizeof(key))))) {
                    json_decref(c);
                    OOM();
                }
            }
            /* load only: the gang it belongs to is not simulated again */
            json_object_del(json_object_get(json_object_get(c, "metadata"), "labels"),
                            GANG_POD_GROUP_LABEL);
            claims = json_object_get(json_object_get(c, "spec"), "resourceClaims");
            if (json_array_size(claims)) {
                NOTE(N_CLAIMS,
                     "Pod %s runs with %zu ResourceClaim(s): DRA is not modelled, its devices are "
                     "not counted as used",
                     key_of(item, name, key, sizeof(key)), json_array_size(claims));
                json_object_del(json_object_get(c, "spec"), "resourceClaims");
            }
            rc = sim_loader_add_load(l, c,
                                     remaining(s, item, pg ? json_object_get(groups, gkey) : NULL,
                                               js ? json_object_get(tjs, tkey) : NULL),
                                     &e);
            json_decref(c);
            if (rc == COMMON_ENOMEM)
                OOM();
            if (rc != COMMON_OK) {
                rc = COMMON_OK;
                NOTE(N_UNKNOWN_NODE, "Pod %s on node %s is left out: %s",
                     key_of(item, name, key, sizeof(key)), node, e.msg);
                continue;
            }
            n_load++;
            if (pg) {
                json_int_t b = json_integer_value(json_object_get(bound, gkey));
                if (json_object_set_new(bound, gkey, json_integer(b + 1)))
                    OOM();
            }
            continue;
        }
        if (json_object_get(json_object_get(item, "metadata"), "deletionTimestamp"))
            continue; /* going away: not waiting */
        {
            const char *k = pg ? gkey : "";
            json_t *list = json_object_get(pending, k);
            if (!list && (json_object_set_new(pending, k, list = json_array()) || !list))
                OOM();
            if (json_array_append(list, item))
                OOM();
        }
    }

    /* runtimes for the TrainJobs rendered here */
    {
        const json_t *lists[2] = {s->training_runtimes, s->cluster_training_runtimes};
        static const char *const kinds[2] = {"TrainingRuntime", "ClusterTrainingRuntime"};
        for (int k = 0; k < 2; k++)
            json_array_foreach((json_t *)lists[k], i, item)
            {
                json_t *c = slim_copy(item, "trainer.kubeflow.org/v1alpha1", kinds[k]);
                if (c)
                    json_object_del(c, "status");
                if (push(runtimes, c))
                    OOM();
            }
    }

#define CAND_ADD(docs_, created_)                                                                  \
    do {                                                                                           \
        if (n_cands == cap_cands) {                                                                \
            size_t cap = cap_cands ? cap_cands * 2 : 64;                                           \
            struct cand *v = common_realloc(cands, cap * sizeof(*v));                              \
            if (!v) {                                                                              \
                json_decref(docs_);                                                                \
                OOM();                                                                             \
            }                                                                                      \
            cands = v;                                                                             \
            cap_cands = cap;                                                                       \
        }                                                                                          \
        cands[n_cands] = (struct cand){docs_, created_, n_cands};                                  \
        n_cands++;                                                                                 \
    } while (0)

    /* the gangs with waiting members */
    json_array_foreach((json_t *)s->pod_groups, i, item)
    {
        const char *name = str_at(item, "metadata", "name");
        json_t *list, *docs, *pg, *spec, *ospec = json_object_get(item, "spec"), *m;
        json_int_t b, min;
        size_t gated = 0, k;
        const char *from;
        int64_t run;
        int ok;
        if (!name)
            continue;
        key_of(item, name, key, sizeof(key));
        list = json_object_get(pending, key);
        b = json_integer_value(json_object_get(bound, key));
        if (!json_array_size(list)) {
            if (!b && !json_object_get(done, key))
                NOTE(N_EMPTY_PG,
                     "PodGroup %s has no pods: nothing to place (its pods are not created yet)",
                     key);
            continue;
        }
        if (!(docs = json_array()) ||
            !(pg = slim_copy(item, "scheduling.x-k8s.io/v1alpha1", "PodGroup"))) {
            json_decref(docs);
            OOM();
        }
        json_object_del(pg, "status");
        drop_sim_annotations(pg);
        /* only the fields of scheduler-plugins' PodGroupSpec the gang core reads */
        spec = json_object();
        if (!spec || json_object_set_new(pg, "spec", spec) || json_array_append_new(docs, pg)) {
            json_decref(docs);
            OOM();
        }
        min = json_integer_value(json_object_get(ospec, "minMember"));
        if (json_is_integer(json_object_get(ospec, "minMember")))
            json_object_set_new(spec, "minMember", json_integer(min > b ? min - b : 0));
        if ((m = json_object_get(ospec, "scheduleTimeoutSeconds")))
            json_object_set(spec, "scheduleTimeoutSeconds", m);
        if ((m = json_object_get(ospec, "minResources")) && !b)
            json_object_set(spec, "minResources", m);
        {
            const json_t *p0 = json_array_get(list, 0);
            const char *js = label(p0, JOBSET_NAME_LABEL);
            run = declared_run(p0, item,
                               js ? json_object_get(tjs, key_of(p0, js, why, sizeof(why))) : NULL,
                               &from);
        }
        if (set_run_time(pg, run >= 0 ? run : s->assume_run_ms)) {
            json_decref(docs);
            OOM();
        }
        json_array_foreach(list, k, m)
        {
            if (push(docs, waiting_pod(m, &gated))) {
                json_decref(docs);
                OOM();
            }
        }
        if (gated)
            NOTE(N_GATED,
                 "PodGroup %s: %zu of its pending pods carry schedulingGates other than "
                 "trainsched.io/gang: simulated as if those were removed now",
                 key, gated);
        if (b)
            NOTE(N_JOB,
                 "PodGroup %s: %lld member(s) already bound: its %zu pending pod(s) are simulated "
                 "with minMember %lld and without minResources",
                 key, (long long)b, json_array_size(list), (long long)(min > b ? min - b : 0));
        if ((rc = job_loads(docs, runtimes, &ok, why, sizeof(why), err)) != COMMON_OK) {
            json_decref(docs);
            goto out;
        }
        if (!ok) {
            NOTE(N_JOB, "PodGroup %s is not simulated: %s", key, why);
            json_decref(docs);
            continue;
        }
        CAND_ADD(docs, created_at(item));
        if (json_object_set_new(pending, key, json_array()))
            OOM(); /* used */
    }

    /* pending pods left: without a PodGroup in the snapshot, one job each */
    {
        const char *k;
        json_t *list;
        json_object_foreach(pending, k, list)
        {
            size_t q;
            json_array_foreach(list, q, item)
            {
                const char *name = str_at(item, "metadata", "name");
                size_t gated = 0;
                const char *from;
                int64_t run;
                int ok;
                json_t *docs = json_array(), *c = waiting_pod(item, &gated);
                if (!docs || !c) {
                    json_decref(docs);
                    json_decref(c);
                    OOM();
                }
                if (*k) {
                    NOTE(N_NO_PG,
                         "Pod %s names PodGroup %s, which the snapshot does not hold: simulated "
                         "as a pod without a gang",
                         key_of(item, name, key, sizeof(key)), label(item, GANG_POD_GROUP_LABEL));
                    json_object_del(json_object_get(json_object_get(c, "metadata"), "labels"),
                                    GANG_POD_GROUP_LABEL);
                }
                run = declared_run(item, NULL, NULL, &from);
                if (set_run_time(c, run >= 0 ? run : s->assume_run_ms) ||
                    json_array_append_new(docs, c)) {
                    json_decref(docs);
                    OOM();
                }
                if (gated)
                    NOTE(N_GATED,
                         "Pod %s carries schedulingGates other than trainsched.io/gang: simulated "
                         "as if those were removed now",
                         key_of(item, name, key, sizeof(key)));
                if ((rc = job_loads(docs, runtimes, &ok, why, sizeof(why), err)) != COMMON_OK) {
                    json_decref(docs);
                    goto out;
                }
                if (!ok) {
                    NOTE(N_JOB, "Pod %s is not simulated: %s", key_of(item, name, key, sizeof(key)),
                         why);
                    json_decref(docs);
                    continue;
                }
                CAND_ADD(docs, created_at(item));
            }
        }
    }

    /* TrainJobs that wait and have no pod yet: rendered */
    json_array_foreach((json_t *)s->train_jobs, i, item)
    {
        const char *name = str_at(item, "metadata", "name");
        json_t *docs, *c;
        const json_t *susp;
        const char *rt;
        int64_t run;
        struct common_error e;
        int ok;
        if (!name || tj_finished(item) ||
            json_object_get(with_pods, key_of(item, name, key, sizeof(key))))
            continue;
        if (!(docs = json_array()) ||
            !(c = slim_copy(item, "trainer.kubeflow.org/v1alpha1", "TrainJob"))) {
            json_decref(docs);
            OOM();
        }
        json_object_del(c, "status");
        rt = annotation(item, SIM_RUN_TIME_ANNOTATION);
        run = rt && sim_parse_duration(rt, &run, &e) == COMMON_OK ? run : s->assume_run_ms;
        drop_sim_annotations(c);
        if (set_run_time(c, run) || json_array_append_new(docs, c)) {
            json_decref(docs);
            OOM();
        }
        susp = json_object_get(json_object_get(item, "spec"), "suspend");
        if (json_is_true(susp))
            NOTE(N_JOB, "TrainJob %s is suspended: simulated as if resumed now", key);
        if ((rc = job_loads(docs, runtimes, &ok, why, sizeof(why), err)) != COMMON_OK) {
            json_decref(docs);
            goto out;
        }
        if (!ok) {
            NOTE(N_JOB, "TrainJob %s is not simulated: %s", key, why);
            json_decref(docs);
            continue;
        }
        CAND_ADD(docs, created_at(item));
    }

    /* DRA: read, not modelled */
    {
        size_t no_node = 0, devices = 0;
        json_array_foreach((json_t *)s->resource_slices, i, item)
        {
            const json_t *spec = json_object_get(item, "spec");
            const char *nn = json_string_value(json_object_get(spec, "nodeName"));
            devices += json_array_size(json_object_get(spec, "devices"));
            if ((!nn || !*nn) && !json_is_true(json_object_get(spec, "allNodes")) &&
                !json_object_get(spec, "nodeSelector") &&
                !json_is_true(json_object_get(spec, "perDeviceNodeSelection"))) {
                no_node++;
                NOTE(N_SLICE,
                     "ResourceSlice %s names no node (spec.nodeName, nodeSelector, allNodes or "
                     "perDeviceNodeSelection): its devices belong to no node",
                     str_at(item, "metadata", "name") ? str_at(item, "metadata", "name") : "?");
            }
        }
        if (json_array_size(s->resource_slices) || json_array_size(s->resource_claims))
            NOTE(N_CLAIMS,
                 "DRA is not modelled: %zu ResourceSlice(s) with %zu device(s) and %zu "
                 "ResourceClaim(s) were read but not simulated (sim/README.md \"Limits\")",
                 json_array_size(s->resource_slices), devices, json_array_size(s->resource_claims));
        (void)no_node;
    }

    /* the rest of each kind of note, counted */
    {
        static const char *const what[] = {"nodes left out",
                                           "pods on nodes not in the snapshot",
                                           "jobs with remarks",
                                           "PodGroups without pods",
                                           "gated jobs",
                                           "pods naming a missing PodGroup",
                                           "pods with ResourceClaims",
                                           "ResourceSlices without a node"};
        for (size_t k = 0; k < sizeof(what) / sizeof(what[0]); k++)
            if (nt.count[k] > NOTES_EACH) {
                snprintf(msg, sizeof(msg), "... and %zu more %s", nt.count[k] - NOTES_EACH,
                         what[k]);
                if ((rc = sim_loader_note(l, msg, err)) != COMMON_OK)
                    goto out;
            }
    }

    /* the waiting jobs in the order they were created, in one in-memory file */
    if (n_cands) {
        json_t *all = json_array();
        struct common_yaml_docs *d;
        if (!all || json_array_extend(all, runtimes)) {
            json_decref(all);
            OOM();
        }
        qsort(cands, n_cands, sizeof(*cands), cand_cmp);
        for (size_t c = 0; c < n_cands; c++)
            if (json_array_extend(all, cands[c].docs)) {
                json_decref(all);
                OOM();
            }
        d = docs_from(all);
        json_decref(all);
        if (!d)
            OOM();
        if ((rc = sim_loader_own(l, d, err)) != COMMON_OK)
            goto out;
        if ((rc = sim_load_jobs(l, d, err)) != COMMON_OK)
            goto out;
    }
    (void)n_load;
out:
    for (size_t c = 0; c < n_cands; c++)
        json_decref(cands[c].docs);
    common_free(cands);
    json_decref(nodes_known);
    json_decref(pending);
    json_decref(bound);
    json_decref(groups);
    json_decref(tjs);
    json_decref(with_pods);
    json_decref(done);
    json_decref(runtimes);
    return rc;
#undef OOM
#undef NOTE
#undef CAND_ADD
}

const char *sim_job_trainjob(const struct sim_job *j, char *buf, size_t n)
{
    if (strcmp(j->kind, "TrainJob") == 0) {
        snprintf(buf, n, "%s", j->name);
        return buf;
    }
    for (size_t p = 0; p < j->n_pods && p < 1; p++)
        for (uint32_t k = 0; k < j->pods[p]->n_labels; k++)
            if (strcmp(j->pods[p]->labels[k].key, JOBSET_NAME_LABEL) == 0) {
                snprintf(buf, n, "%s/%s", j->pods[p]->namespace, j->pods[p]->labels[k].value);
                return buf;
            }
    return NULL;
}
