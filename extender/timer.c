/*
 * extender/timer.c - the timer thread: gang_tick on deadlines and wakeups, PodGroup status
 * patches and Events regarding the PodGroup and its TrainJob, node patches due, and the gang
 * and cache gauges. Status and Event bookkeeping (x->recs) belongs to this thread alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extender/server_int.h"

#define STATUS_PERIOD_MS 2000
/* the ungating pass runs at most this often while gangs are marked (feed events coalesce) */
#define UNGATE_PERIOD_MS 100
/* A gang's passing reason ("waiting for ..." members, gates or phased pods, and "ungated": the
 * GangWaiting or GangUngated Event and the verdict annotation) is written once it has stood this
 * long: a gang that goes through "2 of 8 exist", "ungated", "released" within a second costs no
 * write for the passing states (each was a PodGroup patch and two Events per member, more API
 * server work than scheduling the pod). Any other reason (released, a failure) is written at
 * once. */
#define REASON_SETTLE_MS 1000
/* The PodGroup status is patched at most once per this period per gang (running counts move with
 * every member that starts); the last state is always written. */
#define STATUS_COALESCE_MS 1000
/* entries of the pass's first output buffer (grown when one gang needs more) */
#define UNGATE_FIRST_CAP 1024

struct pg_view {
    char key[KEY_MAX];
    int found;
    struct gang_status s;
    char phase[16];
    char reason[2 * GANG_REASON_MAX]; /* the gang's reason, then its timeout note */
    char level[GANG_REASON_MAX];      /* the topology level of the gang's domain, "" when none */
    int64_t backoff_until;            /* gang_info's (mono ms), 0 when none */
};

static struct pgrec *rec_get(struct extender_server *x, const char *key)
{
    for (size_t i = 0; i < x->n_recs; i++)
        if (strcmp(x->recs[i].key, key) == 0)
            return &x->recs[i];
    if (x->n_recs == x->cap_recs) {
        size_t nc = x->cap_recs ? x->cap_recs * 2 : 16;
        struct pgrec *nr = common_realloc(x->recs, nc * sizeof(*nr));
        if (!nr)
            return NULL;
        x->recs = nr;
        x->cap_recs = nc;
    }
    memset(&x->recs[x->n_recs], 0, sizeof(x->recs[0]));
    extender_copy_str(x->recs[x->n_recs].key, KEY_MAX, key);
    return &x->recs[x->n_recs++];
}

/* put a write of r off until at (the timer looks at the gang again then) */
static void recheck(struct pgrec *r, int64_t at)
{
    if (!r->recheck_at || at < r->recheck_at)
        r->recheck_at = at;
}

/* x->mu held: the gangs whose put-off writes are due are marked dirty; returns the earliest
 * later one (INT64_MAX: none) */
static int64_t rechecks_due(struct extender_server *x, int64_t now)
{
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < x->n_recs; i++) {
        struct pgrec *r = &x->recs[i];
        if (!r->recheck_at || r->gone)
            continue;
        if (r->recheck_at <= now) {
            char ns[64], name[254];
            const char *slash = strchr(r->key, '/');
            size_t n = slash ? (size_t)(slash - r->key) : 0;
            r->recheck_at = 0;
            if (!slash || n >= sizeof(ns))
                continue;
            memcpy(ns, r->key, n);
            ns[n] = '\0';
            extender_copy_str(name, sizeof(name), slash + 1);
            extender_mark_dirty(x, ns, name);
        } else if (r->recheck_at < next) {
            next = r->recheck_at;
        }
    }
    return next;
}

/* 1 when the cached PodGroup key carries the verdict annotation */
static int cached_verdict(struct extender_server *x, const char *key)
{
    struct common_pmap_snap *snap = x->pg_inf ? common_informer_snapshot(x->pg_inf) : NULL;
    const json_t *pg = snap ? common_pmap_snap_get(snap, key) : NULL;
    int has = json_is_string(json_object_get(
        json_object_get(json_object_get(pg, "metadata"), "annotations"), GANG_VERDICT_ANNOTATION));
    if (snap)
        common_pmap_snap_release(snap);
    return has;
}

static void split_key(const char *key, char *ns, size_t nsz, char *name, size_t namesz)
{
    const char *slash = strchr(key, '/');
    size_t n = slash ? (size_t)(slash - key) : 0;

    if (n >= nsz)
        n = nsz - 1;
    memcpy(ns, key, n);
    ns[n] = '\0';
    extender_copy_str(name, namesz, slash ? slash + 1 : key);
}

static void format_time(int64_t mono_start, char *out, size_t size)
{
    struct timespec rt;
    struct tm tm;
    time_t t;

    clock_gettime(CLOCK_REALTIME, &rt);
    t = rt.tv_sec - (time_t)((extender_mono_ms() - mono_start) / 1000);
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The PodGroup's uid and its controlling TrainJob (name, uid; "" when none) from the watch
 * cache, so that its Events name it fully (kubectl describe finds Events by uid). */
static void podgroup_refs(struct extender_server *x, const char *key, char *uid, size_t uidsz,
                          char *tj, size_t tjsz, char *tjuid, size_t tjuidsz)
{
    struct common_pmap_snap *snap = x->pg_inf ? common_informer_snapshot(x->pg_inf) : NULL;
    const json_t *pg = snap ? common_pmap_snap_get(snap, key) : NULL;
    const json_t *meta = json_object_get(pg, "metadata");
    size_t i;
    json_t *o;

    uid[0] = tj[0] = tjuid[0] = '\0';
    if (json_is_string(json_object_get(meta, "uid")))
        extender_copy_str(uid, uidsz, json_string_value(json_object_get(meta, "uid")));
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, o)
    {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        const char *api = json_string_value(json_object_get(o, "apiVersion"));
        if (json_is_true(json_object_get(o, "controller")) && kind && api &&
            strcmp(kind, "TrainJob") == 0 && strncmp(api, "trainer.kubeflow.org/", 21) == 0 &&
            json_is_string(json_object_get(o, "name"))) {
            extender_copy_str(tj, tjsz, json_string_value(json_object_get(o, "name")));
            if (json_is_string(json_object_get(o, "uid")))
                extender_copy_str(tjuid, tjuidsz, json_string_value(json_object_get(o, "uid")));
            break;
        }
    }
    if (snap)
        common_pmap_snap_release(snap);
}

/* A gang's new waiting or released reason as an Event regarding its PodGroup (uid included),
 * and the same regarding the TrainJob that controls it, so `kubectl describe podgroup` and
 * `kubectl describe trainjob` both show why the gang waits. */
static void gang_event(struct extender_server *x, const struct pg_view *v, const char *ns,
                       const char *name)
{
    char uid[128], tj[254], tjuid[128], note[COMMON_EVENTS_NOTE_MAX];
    struct common_event_ref ref = {"scheduling.x-k8s.io/v1alpha1", "PodGroup", ns, name, uid};
    struct common_event_ref tref = {"trainer.kubeflow.org/v1alpha1", "TrainJob", ns, tj, tjuid};
    int released = strncmp(v->reason, "released", 8) == 0;
    /* the ungating pass let the gang into kube-scheduler's queue (docs/gang.md "The gang gate") */
    int ungated = strncmp(v->reason, "ungated", 7) == 0;
    enum common_event_type type = released || ungated ? COMMON_EVENT_NORMAL : COMMON_EVENT_WARNING;
    const char *reason = released ? "GangReleased" : ungated ? "GangUngated" : "GangWaiting";
    struct common_error e = {0};

    podgroup_refs(x, v->key, uid, sizeof(uid), tj, sizeof(tj), tjuid, sizeof(tjuid));
    if (common_events_record(x->o.events, &ref, type, reason, "Scheduling", v->reason, &e) !=
        COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: Event not recorded", "podgroup", v->key, "error",
                   e.msg, NULL);
    if (!tj[0])
        return;
    snprintf(note, sizeof(note), "PodGroup %s: %s", name, v->reason);
    if (common_events_record(x->o.events, &tref, type, reason, "Scheduling", note, &e) != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: Event not recorded", "trainjob", tj, "error", e.msg,
                   NULL);
}

/* The gang's verdict as the PodGroup annotation GANG_VERDICT_ANNOTATION (gang/gang.h), written
 * when its message or its backoff end changed: what `trainsched explain` reads first, since
 * Events expire and the PodGroup CRD's status has no place for it. */
static void write_verdict(struct extender_server *x, struct pgrec *r, const struct pg_view *v,
                          const char *ns, const char *name)
{
    int64_t now = extender_mono_ms();
    char since[40], until[40];
    struct common_error e = {0};
    json_t *verdict, *patch = NULL;
    char *text = NULL, *body = NULL;

    if (x->o.write_podgroup_status <= 0 || !v->reason[0] ||
        (strcmp(r->verdict, v->reason) == 0 && r->verdict_backoff == v->backoff_until))
        return;
    /* a gang released without a verdict written before (it never waited a second): nothing
     * stale to overwrite, no write */
    if (strncmp(v->reason, "released", 8) == 0 && !r->verdict[0] && !cached_verdict(x, v->key)) {
        extender_copy_str(r->verdict, sizeof(r->verdict), v->reason);
        r->verdict_backoff = v->backoff_until;
        return;
    }
    format_time(now, since, sizeof(since));
    verdict = json_pack("{s:s, s:s, s:s}", "reason",
                        strncmp(v->reason, "released", 8) == 0 ? "GangReleased" : "GangWaiting",
                        "message", v->reason, "since", since);
    if (verdict && v->backoff_until > now) {
        format_time(v->backoff_until, until, sizeof(until));
        json_object_set_new(verdict, "backoffUntil", json_string(until));
    }
    text = verdict ? json_dumps(verdict, JSON_COMPACT) : NULL;
    json_decref(verdict);
    if (text)
        patch =
            json_pack("{s:{s:{s:s}}}", "metadata", "annotations", GANG_VERDICT_ANNOTATION, text);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    free(text);
    if (body && common_kube_patch(x->kube, &common_kube_podgroups, ns, name,
                                  COMMON_KUBE_MERGE_PATCH, body, NULL, NULL, &e) == COMMON_OK) {
        extender_copy_str(r->verdict, sizeof(r->verdict), v->reason);
        r->verdict_backoff = v->backoff_until;
    } else if (body) {
        common_log(COMMON_LOG_WARN, "extender: PodGroup verdict not written", "podgroup", v->key,
                   "error", e.msg, NULL);
    }
    free(body);
}

static void write_status(struct extender_server *x, const struct pg_view *v)
{
    struct pgrec *r = rec_get(x, v->key);
    int64_t now = extender_mono_ms();
    int settled, changed;
    char ns[64], name[254], start[40];
    struct common_error e = {0};
    struct common_kube_write_opts wo = {0};
    json_t *patch, *status;
    char *body;

    if (!r)
        return;
    if (!v->found) {
        r->gone = 1;
        r->written = 0;
        r->reason[0] = '\0';
        r->verdict[0] = '\0';
        r->cand[0] = '\0';
        r->recheck_at = 0;
        return;
    }
    r->gone = 0;
    split_key(v->key, ns, sizeof(ns), name, sizeof(name));
    changed = !r->written || strcmp(r->phase, v->phase) != 0 || r->running != v->s.running ||
              r->succeeded != v->s.succeeded || r->failed != v->s.failed ||
              strcmp(r->occupied_by, v->s.occupied_by) != 0 ||
              r->has_start != v->s.has_schedule_start ||
              (v->s.has_schedule_start && r->start != v->s.schedule_start);
    if (x->o.write_podgroup_status > 0 && changed && r->written &&
        now - r->status_at < STATUS_COALESCE_MS) {
        recheck(r, r->status_at + STATUS_COALESCE_MS);
    } else if (x->o.write_podgroup_status > 0 && changed) {
        status = json_pack("{s:s, s:i, s:i, s:i}", "phase", v->phase, "running", (int)v->s.running,
                           "succeeded", (int)v->s.succeeded, "failed", (int)v->s.failed);
        if (status && v->s.occupied_by[0])
            json_object_set_new(status, "occupiedBy", json_string(v->s.occupied_by));
        if (status && v->s.has_schedule_start) {
            format_time(v->s.schedule_start, start, sizeof(start));
            json_object_set_new(status, "scheduleStartTime", json_string(start));
        }
        patch = status ? json_pack("{s:o}", "status", status) : NULL;
        body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
        json_decref(patch);
        wo.subresource = "status";
        if (body && common_kube_patch(x->kube, &common_kube_podgroups, ns, name,
                                      COMMON_KUBE_MERGE_PATCH, body, &wo, NULL, &e) == COMMON_OK) {
            r->written = 1;
            r->status_at = now;
            extender_copy_str(r->phase, sizeof(r->phase), v->phase);
            r->running = v->s.running;
            r->succeeded = v->s.succeeded;
            r->failed = v->s.failed;
            extender_copy_str(r->occupied_by, sizeof(r->occupied_by), v->s.occupied_by);
            r->has_start = v->s.has_schedule_start;
            r->start = v->s.schedule_start;
            pthread_mutex_lock(&x->mu);
            x->st.status_patches++;
            pthread_mutex_unlock(&x->mu);
        } else if (body) {
            common_log(COMMON_LOG_WARN, "extender: PodGroup status not written", "podgroup", v->key,
                       "error", e.msg, NULL);
        }
        free(body);
    }
    if (strcmp(r->cand, v->reason) != 0) {
        extender_copy_str(r->cand, sizeof(r->cand), v->reason);
        r->cand_since = now;
    }
    /* only the states a gang passes through on its way in (members arriving, members at a
     * gate, ungated) wait to settle; a failure (a node taken, a timeout, too little room) is
     * news at once */
    settled =
        (strncmp(v->reason, "waiting for ", 12) != 0 && strncmp(v->reason, "ungated", 7) != 0) ||
        now - r->cand_since >= REASON_SETTLE_MS;
    if (!settled) {
        recheck(r, r->cand_since + REASON_SETTLE_MS);
        return;
    }
    write_verdict(x, r, v, ns, name);
    if (x->o.events && v->reason[0] && strcmp(r->reason, v->reason) != 0) {
        if (strncmp(v->reason, "released", 8) == 0 && v->level[0]) {
            const char *lv[] = {v->level};
            common_metric_add(x->m_topo_placed, lv, 1);
        }
        gang_event(x, v, ns, name);
    }
    extender_copy_str(r->reason, sizeof(r->reason), v->reason);
}

/*
 * ungate_pass - x->mu held: the ungating pass (gang_ungate) when one is pending and the last ran
 * UNGATE_PERIOD_MS ago or more; one job per member for the binders (the gate's removal) onto
 * head/tail, the gangs released marked for their status and Event. Returns when a pending pass
 * is due (INT64_MAX: none pending, or it ran); *again when the pass had no room for every gang.
 */
static int64_t ungate_pass(struct extender_server *x, int64_t now, struct job **head,
                           struct job **tail, int *again)
{
    struct gang_ungate_result res;
    struct common_error e = {0};
    struct timespec t0, t1;
    enum common_rc rc;
    const char *prev = "";

    if (!gang_ungate_pending(x->gs, now))
        return INT64_MAX;
    if (!extender_server_ready(x)) /* half-filled books would place gangs on room that is taken */
        return now + UNGATE_PERIOD_MS;
    if (x->last_ungate && now - x->last_ungate < UNGATE_PERIOD_MS)
        return x->last_ungate + UNGATE_PERIOD_MS;
    if (!x->ug_out) {
        x->ug_out = common_malloc(UNGATE_FIRST_CAP * sizeof(*x->ug_out));
        if (!x->ug_out)
            return now + UNGATE_PERIOD_MS;
        x->ug_cap = UNGATE_FIRST_CAP;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = gang_ungate(x->gs, now, x->ug_out, x->ug_cap, &res, &e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    x->last_ungate = now;
    x->st.ungate_passes++;
    common_metric_observe(x->m_ungate_pass, NULL,
                          (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    common_metric_set(x->m_gated_gangs, NULL, (double)res.waiting);
    if (rc != COMMON_OK)
        common_log(COMMON_LOG_WARN, "extender: ungating pass", "error", e.msg, NULL);
    for (size_t i = 0; i < res.n; i++) {
        const struct gang_ungate *u = &x->ug_out[i];
        struct job *j = common_calloc(1, sizeof(*j));
        const char *slash = strchr(u->gang, '/');
        if (!j) { /* the pod stays ungating in the books: back at our gate */
            gang_ungate_failed(x->gs, u->pod.uid);
            continue;
        }
        extender_copy_str(j->a.uid, sizeof(j->a.uid), u->pod.uid);
        extender_copy_str(j->a.namespace, sizeof(j->a.namespace), u->pod.namespace);
        extender_copy_str(j->a.name, sizeof(j->a.name), u->pod.name);
        extender_copy_str(j->a.gang, sizeof(j->a.gang), u->gang);
        j->ungate = 1;
        j->gate_index = u->gate_index;
        if (*tail)
            (*tail)->next = j;
        else
            *head = j;
        *tail = j;
        if (strcmp(prev, u->gang) != 0) { /* a gang's members are contiguous */
            static const char *const why[] = {"", "placed", "preempt", "alone"};
            const char *lv[1];
            lv[0] = u->why >= GANG_UNGATE_PLACED && u->why <= GANG_UNGATE_ALONE ? why[u->why] : "";
            common_metric_add(x->m_ungated_gangs, lv, 1);
            if (slash) {
                char ns[64];
                size_t n = (size_t)(slash - u->gang);
                if (n >= sizeof(ns))
                    n = sizeof(ns) - 1;
                memcpy(ns, u->gang, n);
                ns[n] = '\0';
                extender_mark_dirty(x, ns, slash + 1);
            }
            common_log(COMMON_LOG_INFO, "extender: gang ungated", "gang", u->gang, "why", lv[0],
                       NULL);
        }
        prev = u->gang;
    }
    if (res.more) {
        if (!res.n) { /* one gang needs more room than the buffer has */
            struct gang_ungate *o = common_realloc(x->ug_out, 2 * x->ug_cap * sizeof(*x->ug_out));
            if (o) {
                x->ug_out = o;
                x->ug_cap *= 2;
            }
        }
        x->last_ungate = now - UNGATE_PERIOD_MS; /* go on at once */
        *again = 1;
    }
    return INT64_MAX;
}

static void gang_metrics(struct extender_server *x, int64_t now)
{
    double waiting = 0, holding = 0, admitted = 0, backoff = 0, topo_waiting = 0, dra_waiting = 0;
    struct common_informer_stats is;
    static const char *const kinds[] = {"nodes", "pods", "podgroups"};
    struct common_informer *infs[3];

    pthread_mutex_lock(&x->mu);
    for (size_t i = 0; i < x->n_recs; i++) {
        struct gang_info gi;
        char ns[64], name[254];

        if (x->recs[i].gone)
            continue;
        split_key(x->recs[i].key, ns, sizeof(ns), name, sizeof(name));
        if (gang_info(x->gs, ns, name, &gi, NULL) != COMMON_OK)
            continue;
        if (!gi.active && !gi.admitted &&
            (gi.topology_error[0] || strstr(gi.reason, "topology") != NULL))
            topo_waiting++;
        if (!gi.active && !gi.admitted && strstr(gi.reason, "ResourceClaim") != NULL)
            dra_waiting++;
        if (gi.active)
            holding++;
        else if (gi.backoff_until > now)
            backoff++;
        else if (gi.admitted)
            admitted++;
        else
            waiting++;
    }
    pthread_mutex_unlock(&x->mu);
    {
        const char *lv[1];
        lv[0] = "waiting";
        common_metric_set(x->m_gangs, lv, waiting);
        lv[0] = "holding";
        common_metric_set(x->m_gangs, lv, holding);
        lv[0] = "admitted";
        common_metric_set(x->m_gangs, lv, admitted);
        lv[0] = "backoff";
        common_metric_set(x->m_gangs, lv, backoff);
        common_metric_set(x->m_topo_waiting, NULL, topo_waiting);
        extender_dra_count_waiting(x, dra_waiting);
    }
    infs[0] = x->nodes_inf;
    infs[1] = x->pods_inf;
    infs[2] = x->pg_inf;
    for (int i = 0; i < 3; i++) {
        const char *lv[] = {kinds[i]};
        common_informer_stats(infs[i], &is);
        common_metric_set(x->m_cache, lv, (double)is.size);
    }
}

void *extender_timer_main(void *arg)
{
    struct extender_server *x = arg;

    pthread_mutex_lock(&x->mu);
    while (!x->stopping) {
        int64_t now = extender_mono_ms(), next;
        struct job *head = NULL, *tail = NULL;
        struct pg_view *views = NULL;
        size_t n_views = 0;
        struct node_todo *todo = NULL;
        size_t n_todo = 0;
        int64_t ug_due, re_due;
        int ug_again = 0;

        if (x->tick_req || now >= gang_next_deadline(x->gs)) {
            const struct gang_answer *ans = NULL;
            size_t n = 0;
            struct common_error e = {0};

            x->tick_req = 0;
            if (gang_tick(x->gs, now, &ans, &n, &e) == COMMON_OK && n) {
                extender_jobs_from_answers(ans, n, &head, &tail);
                /* a gang that failed or released here: its status and Event follow now */
                for (size_t i = 0; i < n; i++) {
                    const char *slash = strchr(ans[i].gang, '/');
                    if (slash)
                        extender_mark_dirty(x, ans[i].namespace, slash + 1);
                }
            }
        }
        /* after the feed events: gates to remove, and the reasons of the gangs left gated (their
         * status waits for a pass that is due) */
        ug_due = ungate_pass(x, now, &head, &tail, &ug_again);
        re_due = rechecks_due(x, now);
        if (x->n_dirty && ug_due == INT64_MAX) {
            views = common_calloc(x->n_dirty, sizeof(*views));
            for (size_t i = 0; i < x->n_dirty; i++) {
                if (views) {
                    struct pg_view *v = &views[n_views++];
                    struct gang_info gi;
                    char ns[64], name[254];

                    extender_copy_str(v->key, sizeof(v->key), x->dirty[i]);
                    split_key(v->key, ns, sizeof(ns), name, sizeof(name));
                    v->found = gang_podgroup_status(x->gs, ns, name, &v->s, NULL) == COMMON_OK &&
                               gang_info(x->gs, ns, name, &gi, NULL) == COMMON_OK &&
                               gi.has_podgroup;
                    if (v->found) {
                        extender_copy_str(v->phase, sizeof(v->phase), v->s.phase);
                        snprintf(v->reason, sizeof(v->reason), "%s%s%s%s%s", gi.reason,
                                 gi.reason[0] && gi.timeout_note[0] ? "; " : "", gi.timeout_note,
                                 gi.reason[0] && gi.topology_note[0] ? "; " : "", gi.topology_note);
                        extender_copy_str(v->level, sizeof(v->level), gi.domain_level);
                        v->backoff_until = gi.backoff_until;
                    }
                }
                common_free(x->dirty[i]);
            }
            extender_dirty_taken(x);
        }
        if (x->n_todo) {
            size_t keep = 0;
            todo = common_calloc(x->n_todo, sizeof(*todo));
            for (size_t i = 0; i < x->n_todo; i++) {
                if (todo && x->todo[i].not_before <= now)
                    todo[n_todo++] = x->todo[i];
                else
                    x->todo[keep++] = x->todo[i];
            }
            x->n_todo = keep;
        }
        pthread_mutex_unlock(&x->mu);

        extender_dra_refresh(x);
        extender_queue_push(x, head, tail);
        for (size_t i = 0; i < n_todo; i++)
            extender_patch_node(x, &todo[i]);
        for (size_t i = 0; i < n_views; i++)
            write_status(x, &views[i]);
        common_free(todo);
        common_free(views);
        if (now - x->last_metrics >= STATUS_PERIOD_MS) {
            x->last_metrics = now;
            gang_metrics(x, now);
        }

        pthread_mutex_lock(&x->mu);
        if (x->stopping)
            break;
        if (x->tick_req || (x->n_dirty && ug_due == INT64_MAX) || ug_again)
            continue;
        next = gang_next_deadline(x->gs);
        if (next > now + STATUS_PERIOD_MS)
            next = now + STATUS_PERIOD_MS;
        if (ug_due < next)
            next = ug_due;
        if (re_due < next)
            next = re_due;
        for (size_t i = 0; i < x->n_todo; i++)
            if (x->todo[i].not_before < next)
                next = x->todo[i].not_before;
        if (next > extender_mono_ms()) {
            struct timespec ts;
            ts.tv_sec = (time_t)(next / 1000);
            ts.tv_nsec = (long)(next % 1000) * 1000000L;
            pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        }
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}
