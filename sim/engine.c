/*
 * sim/engine.c - the discrete-event loop of `trainsched simulate` (sim.h).
 *
 * The loop plays kube-scheduler and the kubelet; every placement question goes to the gang
 * core. Per simulated instant: arrivals (the job's PodGroup, then its pods, enter the books and
 * the queue), completions (a pod turns Succeeded and frees its node), the core's timer
 * (gang_tick: held binds past their deadline fail, the gang backs off), then one scheduling
 * pass over the pods whose backoff is over, in kube-scheduler's queue order (priority, then
 * time queued, then input order): filter over every node, prioritize over the nodes kept when
 * more than one, bind on the best (ties: the first by name), then carry out HOLD / RELEASE /
 * REJECT. A pod the filter rejects with node lists waits in the unschedulable pool until
 * capacity is freed (a pod ends, a gang drops its reservation) or 5 minutes pass; one answered
 * with an Error (retry) or a rejected bind retries after its backoff (1 s doubling to 10 s).
 * Pods whose answers are known in advance wait in cohorts behind one leader (see pass()).
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "sim/sim_int.h"

#define BACKOFF_INITIAL_MS 1000
#define BACKOFF_MAX_MS 10000
#define UNSCHED_FLUSH_MS (5 * 60 * 1000)
/* rounds of retries with nothing left that frees capacity before the loop gives up */
#define IDLE_ROUNDS_MAX 3

/* P_FOLLOW: waiting as a follower of a sibling (its cohort's leader), whose state it shares;
 * P_GATED: created with the gang gate, not in the queue until gang_ungate hands it out */
enum pstate { P_FUTURE = 0, P_QUEUED, P_UNSCHED, P_HELD, P_RUNNING, P_DONE, P_FOLLOW, P_GATED };
#define NONE UINT32_MAX
enum evtype { EV_ARRIVE = 0, EV_DONE, EV_READY, EV_FLUSH, EV_POD_ARRIVE, EV_LOAD_DONE };

struct spod {
    const struct common_pod *cp;
    uint32_t job;
    uint32_t seq;
    uint8_t state;
    uint32_t attempts;
    uint32_t gen;
    int64_t ready_at; /* QUEUED: when it may be tried; UNSCHED: end of its backoff */
    int64_t qtime;
    int32_t node;
    int64_t gpus;
    int64_t arrival;
    int64_t interval; /* index into intervals, -1 */
    uint8_t listed;   /* in the ready list of the coming pass */
    uint8_t gated;    /* created with the gang gate (the books see it until ungated) */
    uint8_t ungated;  /* the gate was removed (handed out by gang_ungate) */
    /* a leader's followers, in queue order (f_next links them; NONE ends), n_f of them */
    uint32_t f_head, f_tail, f_next, n_f;
};

struct sjob {
    uint32_t pods_bound, pods_done;
    int64_t start, end;
    int started, waiting, ended;
    char reason[GANG_REASON_MAX];
    /* the gang core's topology domain and its level when the gang started (gang_info) */
    char domain[GANG_REASON_MAX];
    char domain_level[256];
    uint32_t failures;
    int64_t last_failure;
    uint32_t filters;
    uint32_t held;        /* pods holding a bind */
    uint32_t running_now; /* pods running now */
    uint32_t peak;        /* the most pods running at one time */
    /* the books version and time at which a member's filter found no node (not a retry) */
    uint64_t fail_version;
    int64_t fail_at;
    int failed;
};

struct ev {
    int64_t t;
    uint64_t seq;
    uint32_t idx, gen;
    uint8_t type;
    uint32_t weight; /* the pods' events it stands for (a leader's carries its followers') */
};

struct engine {
    const struct sim_input *in;
    struct gang_state *s;
    const char **names;
    int32_t *node_gpu_free; /* GPUs not used by running pods */
    int64_t *node_gpu_alloc;
    struct spod *pods; /* sorted by uid */
    size_t n_pods;
    uint32_t *job_first; /* [n_jobs + 1]: job j's pods are job_pods[job_first[j] ..] */
    uint32_t *job_pods;
    size_t first_waiting, n_arrived; /* jobs [first_waiting, n_arrived) may be waiting */
    struct sjob *jobs;
    struct ev *heap;
    size_t n_heap, cap_heap;
    uint64_t ev_seq;
    size_t n_live; /* ARRIVE and DONE events pending */
    uint32_t *ready;
    size_t n_ready;
    uint32_t *unsched;
    size_t n_unsched, cap_unsched;
    struct gang_node_verdict *verdicts;
    const char **ok_names;
    int32_t *ok_idx;
    int64_t *scores;
    struct sim_interval *iv;
    size_t n_iv, cap_iv;
    struct sim_sample *samples;
    size_t n_samples, cap_samples;
    int64_t gpus_used;
    uint32_t waiting, running;
    size_t jobs_done;
    int moved;              /* capacity was freed at this instant */
    uint64_t books_version; /* bumped by every change to the core's books */
    struct sim_result *r;
    const struct sim_options *opts;
    struct gang_ungate *ug; /* gang_ungate's answers, [n_pods] when some pod is gated */
};

/* ---- the event heap ---- */

static int ev_less(const struct ev *a, const struct ev *b)
{
    return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

static int ev_push_w(struct engine *e, int64_t t, uint8_t type, uint32_t idx, uint32_t gen,
                     uint32_t weight)
{
    size_t i;

    if (e->n_heap == e->cap_heap) {
        size_t cap = e->cap_heap ? e->cap_heap * 2 : 1024;
        struct ev *h = common_realloc(e->heap, cap * sizeof(*h));
        if (!h)
            return -1;
        e->heap = h;
        e->cap_heap = cap;
    }
    i = e->n_heap++;
    e->heap[i] = (struct ev){t, e->ev_seq++, idx, gen, type, weight};
    while (i > 0 && ev_less(&e->heap[i], &e->heap[(i - 1) / 2])) {
        struct ev tmp = e->heap[i];
        e->heap[i] = e->heap[(i - 1) / 2];
        e->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
    if (type == EV_ARRIVE || type == EV_DONE || type == EV_POD_ARRIVE || type == EV_LOAD_DONE)
        e->n_live++;
    return 0;
}

static struct ev ev_pop(struct engine *e)
{
    struct ev top = e->heap[0];
    size_t i = 0;

    e->heap[0] = e->heap[--e->n_heap];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < e->n_heap && ev_less(&e->heap[l], &e->heap[m]))
            m = l;
        if (r < e->n_heap && ev_less(&e->heap[r], &e->heap[m]))
            m = r;
        if (m == i)
            break;
        struct ev tmp = e->heap[i];
        e->heap[i] = e->heap[m];
        e->heap[m] = tmp;
        i = m;
    }
    if (top.type == EV_ARRIVE || top.type == EV_DONE || top.type == EV_POD_ARRIVE ||
        top.type == EV_LOAD_DONE)
        e->n_live--;
    return top;
}

static int ev_push(struct engine *e, int64_t t, uint8_t type, uint32_t idx, uint32_t gen)
{
    return ev_push_w(e, t, type, idx, gen, 1);
}

/* ---- helpers ---- */

static int64_t pod_gpus(const struct common_pod *p, const char *gpu)
{
    for (uint32_t i = 0; i < p->requests.n_extended; i++)
        if (strcmp(p->requests.extended[i].name, gpu) == 0)
            return p->requests.extended[i].value;
    return 0;
}

static int64_t node_gpus(const struct common_node *n, const char *gpu)
{
    for (uint32_t i = 0; i < n->allocatable.n_extended; i++)
        if (strcmp(n->allocatable.extended[i].name, gpu) == 0)
            return n->allocatable.extended[i].value;
    return 0;
}

static int64_t backoff_ms(uint32_t attempts)
{
    int64_t b = BACKOFF_INITIAL_MS;

    for (uint32_t i = 1; i < attempts && b < BACKOFF_MAX_MS; i++)
        b *= 2;
    return b < BACKOFF_MAX_MS ? b : BACKOFF_MAX_MS;
}

static int32_t node_index(const struct engine *e, const char *name)
{
    size_t lo = 0, hi = e->in->n_nodes;

    while (lo < hi) { /* nodes are in name order */
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(e->names[mid], name);
        if (c == 0)
            return (int32_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static struct spod *pod_by_uid(struct engine *e, const char *uid)
{
    /* pods are few per job; the answers name the uid: a linear scan over the job would need
     * the job, so search the sorted uid index instead */
    size_t lo = 0, hi = e->n_pods;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(e->pods[mid].cp->uid, uid);
        if (c == 0)
            return &e->pods[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void job_reason(struct engine *e, struct spod *p, const char *why)
{
    if (why && *why)
        snprintf(e->jobs[p->job].reason, sizeof(e->jobs[p->job].reason), "%s", why);
}

/* upsert the pod into the books with node and phase */
static enum common_rc books_pod(struct engine *e, const struct spod *p, const char *node,
                                const char *phase, struct common_error *err)
{
    struct common_pod cp = *p->cp;

    cp.node_name = node ? node : "";
    cp.phase = phase;
    if (p->gated) { /* the gate as the webhook gave it, then removed by the ungating */
        cp.n_scheduling_gates = p->ungated ? 0 : 1;
        cp.first_scheduling_gate = p->ungated ? NULL : GANG_SCHEDULING_GATE;
        cp.scheduling_gates = p->ungated ? 0 : COMMON_GATE_TRAINSCHED;
        cp.trainsched_gate_index = 0;
    }
    e->books_version++;
    return gang_pod_upsert(e->s, &cp, err);
}

static int interval_open(struct engine *e, struct spod *p, int64_t now)
{
    if (e->n_iv == e->cap_iv) {
        size_t cap = e->cap_iv ? e->cap_iv * 2 : 1024;
        struct sim_interval *v = common_realloc(e->iv, cap * sizeof(*v));
        if (!v)
            return -1;
        e->iv = v;
        e->cap_iv = cap;
    }
    e->iv[e->n_iv] = (struct sim_interval){(uint32_t)p->node, p->job, now, -1};
    p->interval = (int64_t)e->n_iv++;
    return 0;
}

/* the pod is bound at node: it runs now */
static enum common_rc pod_bound(struct engine *e, struct spod *p, const char *node, int64_t now,
                                struct common_error *err)
{
    const struct sim_job *j = &e->in->jobs[p->job];
    struct sjob *sj = &e->jobs[p->job];
    enum common_rc rc;

    p->node = node_index(e, node);
    if (p->node < 0)
        return common_error_set(err, COMMON_EINVAL, "the core bound %s/%s to unknown node %s",
                                p->cp->namespace, p->cp->name, node);
    if ((rc = books_pod(e, p, node, "Running", err)) != COMMON_OK)
        return rc;
    if (p->state == P_HELD)
        sj->held--;
    p->state = P_RUNNING;
    p->gen++;
    if (++sj->running_now > sj->peak)
        sj->peak = sj->running_now;
    e->gpus_used += p->gpus;
    e->node_gpu_free[p->node] -= (int32_t)p->gpus;
    if (interval_open(e, p, now) ||
        ev_push(e, now + j->run_ms, EV_DONE, (uint32_t)(p - e->pods), p->gen))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    /* a gang runs once minMember pods are bound (members beyond it may come later, as capacity
     * frees); a job without a gang once all its pods are */
    if (++sj->pods_bound ==
        (j->gang && (size_t)j->pg.min_member < j->n_pods ? (size_t)j->pg.min_member : j->n_pods)) {
        struct gang_info gi;
        sj->started = 1;
        sj->start = now;
        if (j->gang && gang_info(e->s, j->pg.namespace, j->pg.name, &gi, NULL) == COMMON_OK &&
            gi.domain && gi.domain[0]) {
            snprintf(sj->domain, sizeof(sj->domain), "%s", gi.domain);
            snprintf(sj->domain_level, sizeof(sj->domain_level), "%s",
                     gi.domain_level ? gi.domain_level : "");
        }
        e->waiting--;
        e->running++;
    } else if (sj->ended) { /* a late member starts after the others ended */
        sj->ended = 0;
        e->running++;
    }
    return COMMON_OK;
}

static int unsched_add(struct engine *e, uint32_t idx)
{
    if (e->n_unsched == e->cap_unsched) {
        size_t cap = e->cap_unsched ? e->cap_unsched * 2 : 256;
        uint32_t *v = common_realloc(e->unsched, cap * sizeof(*v));
        if (!v)
            return -1;
        e->unsched = v;
        e->cap_unsched = cap;
    }
    e->unsched[e->n_unsched++] = idx;
    return 0;
}

/* back to the queue after an error: ready after its backoff */
static int requeue_error(struct engine *e, struct spod *p, int64_t now)
{
    p->state = P_QUEUED;
    p->gen++;
    p->ready_at = now + backoff_ms(p->attempts ? p->attempts : 1);
    return ev_push(e, p->ready_at, EV_READY, (uint32_t)(p - e->pods), p->gen);
}

/* carry out the core's queued answers */
static enum common_rc run_tick(struct engine *e, int64_t now, struct common_error *err)
{
    const struct gang_answer *ans;
    size_t n;
    enum common_rc rc;

    if ((rc = gang_tick(e->s, now, &ans, &n, err)) != COMMON_OK)
        return rc;
    if (n)
        e->books_version++;
    e->r->events += n ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        struct spod *p = pod_by_uid(e, ans[i].uid);
        if (!p || p->state != P_HELD)
            continue;
        if (ans[i].bind) {
            if ((rc = pod_bound(e, p, ans[i].node, now, err)) != COMMON_OK)
                return rc;
            continue;
        }
        job_reason(e, p, ans[i].reason);
        if (e->jobs[p->job].last_failure != now || !e->jobs[p->job].failures) {
            e->jobs[p->job].failures++;
            e->jobs[p->job].last_failure = now;
            e->r->gang_failures++;
        }
        e->moved = 1; /* the reservation is dropped */
        e->jobs[p->job].held--;
        if (books_pod(e, p, NULL, "Pending", err) != COMMON_OK || requeue_error(e, p, now))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

/*
 * answer_known - the filter of p would certainly find no node, so the call can be saved
 * (kube-scheduler would make it; its answer and the pod's fate are the same):
 * - a sibling's filter found no node at this instant and the books have not changed since (the
 *   core is a deterministic function of its books, and a failed plan commits nothing);
 * - or the job's pods are all pending and together request more GPUs than the cluster has
 *   free (allocatable minus running pods; holds only lower it further): no plan can place
 *   them, whatever the nodes. Only for jobs whose every pod counts (minMember = pods, or a
 *   single pod), and only once the core has given a reason for the job.
 */
static int answer_known(const struct engine *e, const struct spod *p, int64_t now)
{
    const struct sjob *sj = &e->jobs[p->job];
    const struct sim_job *j = &e->in->jobs[p->job];

    if (!sj->failed)
        return 0;
    if (sj->fail_version == e->books_version && sj->fail_at == now)
        return 1;
    return !sj->pods_bound && !sj->held && sj->reason[0] &&
           ((size_t)j->pg.min_member == j->n_pods || j->n_pods == 1) &&
           j->gpus > e->r->gpus_total - e->gpus_used;
}

/* one scheduling cycle of pod p at now */
static enum common_rc schedule_one(struct engine *e, struct spod *p, int64_t now,
                                   struct common_error *err)
{
    const size_t nn = e->in->n_nodes;
    struct gang_filter_result fr;
    struct gang_bind_result br;
    const char *node;
    size_t n_ok = 0, best = 0;
    enum common_rc rc;
    uint32_t idx = (uint32_t)(p - e->pods);

    p->attempts++;
    e->r->events++;
    e->r->pod_steps++;
    if (!e->opts->call_every_filter && answer_known(e, p, now)) {
        /* the core's answer is certain: unschedulable, for the reason it gave last */
        memset(&fr, 0, sizeof(fr));
        e->r->filters_saved++;
    } else {
        e->r->filters++;
        e->jobs[p->job].filters++;
        rc = gang_filter(e->s, p->cp, e->names, nn, now, e->verdicts, &fr, err);
        if (rc != COMMON_OK)
            return rc;
        if (fr.n_ok == 0 && !fr.retry) {
            e->jobs[p->job].failed = 1;
            e->jobs[p->job].fail_version = e->books_version;
            e->jobs[p->job].fail_at = now;
        }
    }
    if (fr.n_ok == 0) {
        job_reason(e, p, fr.reason);
        if (fr.retry)
            rc = requeue_error(e, p, now) ? COMMON_ENOMEM : COMMON_OK;
        else {
            p->state = P_UNSCHED;
            p->gen++;
            p->ready_at = now + backoff_ms(p->attempts);
            rc = unsched_add(e, idx) || ev_push(e, now + UNSCHED_FLUSH_MS, EV_FLUSH, idx, p->gen)
                     ? COMMON_ENOMEM
                     : COMMON_OK;
        }
        if (rc)
            return common_error_set(err, rc, "out of memory");
        return fr.answers_pending ? run_tick(e, now, err) : COMMON_OK;
    }
    for (size_t i = 0; i < nn; i++)
        if (e->verdicts[i].verdict == GANG_NODE_OK) {
            e->ok_names[n_ok] = e->names[i];
            e->ok_idx[n_ok++] = (int32_t)i;
        }
    if (n_ok > 1) {
        if ((rc = gang_prioritize(e->s, p->cp, e->ok_names, n_ok, e->scores, err)) != COMMON_OK)
            return rc;
        for (size_t i = 1; i < n_ok; i++)
            if (e->scores[i] > e->scores[best])
                best = i;
    }
    node = e->ok_names[best];
    e->r->binds++;
    e->books_version++;
    rc = gang_bind(e->s, p->cp->namespace, p->cp->name, p->cp->uid, node, now, &br, err);
    if (rc != COMMON_OK)
        return rc;
    switch (br.action) {
    case GANG_BIND_HOLD:
        p->state = P_HELD;
        e->jobs[p->job].held++;
        p->gen++;
        p->node = e->ok_idx[best];
        break;
    case GANG_BIND_RELEASE:
        for (size_t i = 0; i < br.n_binds; i++) {
            struct spod *q = pod_by_uid(e, br.binds[i].uid);
            if (!q)
                continue;
            if ((rc = pod_bound(e, q, br.binds[i].node, now, err)) != COMMON_OK)
                return rc;
        }
        break;
    case GANG_BIND_REJECT:
        job_reason(e, p, br.reason);
        if (requeue_error(e, p, now))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        break;
    }
    return br.answers_pending ? run_tick(e, now, err) : COMMON_OK;
}

static int ready_cmp(const void *a, const void *b, void *ctx)
{
    const struct engine *e = ctx;
    const struct spod *p = &e->pods[*(const uint32_t *)a], *q = &e->pods[*(const uint32_t *)b];
    int32_t pp = p->cp->has_priority ? p->cp->priority : 0;
    int32_t qp = q->cp->has_priority ? q->cp->priority : 0;

    if (pp != qp)
        return pp > qp ? -1 : 1;
    if (p->qtime != q->qtime)
        return p->qtime < q->qtime ? -1 : 1;
    return p->seq < q->seq ? -1 : p->seq > q->seq;
}

/* insertion-free sort with a context: a small merge sort (qsort_r is a GNU extension) */
static void sort_ready(struct engine *e, uint32_t *v, uint32_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2, i = 0, j = h, k = 0;
    sort_ready(e, v, tmp, h);
    sort_ready(e, v + h, tmp, n - h);
    while (i < h && j < n)
        tmp[k++] = ready_cmp(&v[j], &v[i], e) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof(*v));
}

/*
 * Cohorts. A pod whose answer is known in advance (answer_known: a sibling found no node at this
 * instant and the books did not change since) only goes back to the unschedulable pool, with
 * the attempts, backoff and 5-minute flush of the sibling before it. From then on the two are
 * moved by the same events (flushes, backoffs, idle rounds), so the pod follows that sibling (its
 * leader) instead of being queued, flushed and retried on its own each time: a leader's events
 * carry its followers' weight in the report's event count, and when the leader is retried its
 * followers come right after it, as the queue's order has them (same job, later sequence); the
 * first one whose answer is still known takes the rest along at once, each other one is retried
 * on its own. Without cohorts, each capacity change (and each 5-minute flush) retried every
 * waiting pod: time grew with the square of a pod-by-pod job's pods.
 */

/* may pod p, retried now after `attempts` attempts, follow run (the pod just retried, which
 * found no node)? */
static int can_follow(const struct engine *e, uint32_t run, const struct spod *p, uint32_t attempts,
                      int64_t now)
{
    const struct spod *r;

    if (run == NONE || e->opts->retry_each_pod || e->opts->call_every_filter)
        return 0;
    r = &e->pods[run];
    return r->job == p->job && r->state == P_UNSCHED && r->attempts == attempts + 1 &&
           answer_known(e, p, now);
}

/* the k pods head..tail (in queue order) follow run from now on: what each one's retry counts
 * in the report, and its 5-minute flush (one event for them all) */
static int follow(struct engine *e, uint32_t run, uint32_t head, uint32_t tail, uint32_t k,
                  int64_t now)
{
    struct spod *r = &e->pods[run];

    if (r->f_tail == NONE)
        r->f_head = head;
    else
        e->pods[r->f_tail].f_next = head;
    r->f_tail = tail;
    r->n_f += k;
    e->r->events += k;
    e->r->filters_saved += k;
    e->r->pod_steps++;
    return ev_push_w(e, now + UNSCHED_FLUSH_MS, EV_FLUSH, run, r->gen, k);
}

/* follower f takes its own place again, in the state its leader had before this pass */
static void unfollow(struct spod *f, uint32_t attempts, int64_t ready_at)
{
    f->state = P_QUEUED;
    f->gen++;
    f->attempts = attempts;
    f->ready_at = ready_at;
    f->f_next = NONE;
}

/* retry pod idx (its followers taken off): as a follower of *run when its answer is known, else
 * a scheduling cycle; *run becomes the pod when it found no node */
static enum common_rc retry(struct engine *e, uint32_t idx, int64_t now, uint32_t *run,
                            struct common_error *err)
{
    struct spod *p = &e->pods[idx];
    enum common_rc rc;

    if (can_follow(e, *run, p, p->attempts, now)) {
        p->state = P_FOLLOW;
        p->gen++;
        p->f_next = NONE;
        return follow(e, *run, idx, idx, 1, now)
                   ? common_error_set(err, COMMON_ENOMEM, "out of memory")
                   : COMMON_OK;
    }
    rc = schedule_one(e, p, now, err);
    *run = rc == COMMON_OK && p->state == P_UNSCHED ? idx : NONE;
    return rc;
}

static enum common_rc pass(struct engine *e, int64_t now, uint32_t *tmp, struct common_error *err)
{
    enum common_rc rc;
    uint32_t run = NONE;

    sort_ready(e, e->ready, tmp, e->n_ready);
    for (size_t i = 0; i < e->n_ready; i++)
        e->pods[e->ready[i]].listed = 0;
    for (size_t i = 0; i < e->n_ready; i++) {
        uint32_t idx = e->ready[i], head, tail, n, attempts;
        struct spod *p = &e->pods[idx];
        int64_t ready_at;

        if (p->state != P_QUEUED || p->ready_at > now)
            continue;
        head = p->f_head;
        tail = p->f_tail;
        n = p->n_f;
        p->f_head = p->f_tail = NONE;
        p->n_f = 0;
        attempts = p->attempts;
        ready_at = p->ready_at;
        if (n && i + 1 < e->n_ready && ready_cmp(&e->ready[i + 1], &tail, e) < 0) {
            /* a queued pod sorts among the followers: each takes its own place in the queue */
            for (uint32_t f = head; f != NONE;) {
                uint32_t next = e->pods[f].f_next;
                unfollow(&e->pods[f], attempts, ready_at);
                e->ready[e->n_ready++] = f;
                e->r->pod_steps++;
                f = next;
            }
            sort_ready(e, e->ready + i + 1, tmp, e->n_ready - i - 1);
            head = NONE;
        }
        if ((rc = retry(e, idx, now, &run, err)) != COMMON_OK)
            return rc;
        for (uint32_t f = head; f != NONE; n--) {
            uint32_t next = e->pods[f].f_next;
            if (can_follow(e, run, &e->pods[f], attempts, now)) {
                if (follow(e, run, f, tail, n, now))
                    return common_error_set(err, COMMON_ENOMEM, "out of memory");
                break;
            }
            unfollow(&e->pods[f], attempts, ready_at);
            if ((rc = retry(e, f, now, &run, err)) != COMMON_OK)
                return rc;
            f = next;
        }
    }
    e->n_ready = 0;
    return COMMON_OK;
}

static void ready_add(struct engine *e, uint32_t idx)
{
    if (e->pods[idx].listed) /* at most once per pass */
        return;
    e->pods[idx].listed = 1;
    e->ready[e->n_ready++] = idx;
}

/* move every pod of the unschedulable pool back to the queue */
static int flush_unsched(struct engine *e, int64_t now)
{
    for (size_t i = 0; i < e->n_unsched; i++) {
        struct spod *p = &e->pods[e->unsched[i]];
        if (p->state != P_UNSCHED)
            continue;
        p->state = P_QUEUED;
        p->gen++;
        e->r->pod_steps++;
        if (p->ready_at <= now)
            ready_add(e, e->unsched[i]);
        else if (ev_push_w(e, p->ready_at, EV_READY, e->unsched[i], p->gen, 1 + p->n_f))
            return -1;
    }
    e->n_unsched = 0;
    return 0;
}

/* the smallest per-pod GPU request among waiting jobs that need GPUs, 0 when none */
static int64_t smallest_waiting_pod_gpus(const struct engine *e)
{
    int64_t best = 0;

    for (size_t j = e->first_waiting; j < e->n_arrived; j++) {
        const struct sjob *sj = &e->jobs[j];
        int64_t g = e->in->jobs[j].pod_gpus;
        if (sj->waiting && !sj->started && g > 0 && (best == 0 || g < best))
            best = g;
    }
    return best;
}

static int sample(struct engine *e, int64_t now)
{
    while (e->first_waiting < e->n_arrived && e->jobs[e->first_waiting].started)
        e->first_waiting++;
    struct sim_sample s = {now, e->gpus_used, 0, 0, e->waiting, e->running};
    struct sim_sample *last = e->n_samples ? &e->samples[e->n_samples - 1] : NULL;

    if (e->waiting) {
        int64_t r = smallest_waiting_pod_gpus(e);
        s.gpus_idle = e->r->gpus_total - e->gpus_used;
        for (size_t i = 0; r > 0 && i < e->in->n_nodes; i++)
            if (e->node_gpu_free[i] > 0 && e->node_gpu_free[i] < r)
                s.gpus_frag += e->node_gpu_free[i];
    }
    if (last && last->gpus_used == s.gpus_used && last->gpus_idle == s.gpus_idle &&
        last->gpus_frag == s.gpus_frag && last->waiting == s.waiting && last->running == s.running)
        return 0;
    if (last && last->t == now) {
        *last = s;
        return 0;
    }
    if (e->n_samples == e->cap_samples) {
        size_t cap = e->cap_samples ? e->cap_samples * 2 : 256;
        struct sim_sample *v = common_realloc(e->samples, cap * sizeof(*v));
        if (!v)
            return -1;
        e->samples = v;
        e->cap_samples = cap;
    }
    e->samples[e->n_samples++] = s;
    return 0;
}

static enum common_rc pod_arrive(struct engine *e, struct spod *p, int64_t now,
                                 struct common_error *err)
{
    enum common_rc rc;

    if ((rc = books_pod(e, p, NULL, "Pending", err)) != COMMON_OK)
        return rc;
    p->qtime = now;
    p->ready_at = now;
    if (p->gated) {
        p->state = P_GATED;
        return COMMON_OK;
    }
    p->state = P_QUEUED;
    ready_add(e, (uint32_t)(p - e->pods));
    return COMMON_OK;
}

/* the extender's ungating pass at now: the members gang_ungate hands out lose the gate (the
 * books see them without it) and join the queue, whole gangs at a time */
static enum common_rc ungate_pass(struct engine *e, int64_t now, struct common_error *err)
{
    struct gang_ungate_result res;
    enum common_rc rc;

    if (!e->ug)
        return COMMON_OK;
    do {
        if (!gang_ungate_pending(e->s, now))
            return COMMON_OK;
        if ((rc = gang_ungate(e->s, now, e->ug, e->n_pods, &res, err)) != COMMON_OK)
            return rc;
        e->r->events += res.n ? 1 : 0;
        for (size_t i = 0; i < res.n; i++) {
            struct spod *p = pod_by_uid(e, e->ug[i].pod.uid);
            if (!p || p->state != P_GATED)
                continue;
            p->ungated = 1;
            e->r->pod_steps++;
            if ((rc = books_pod(e, p, NULL, "Pending", err)) != COMMON_OK)
                return rc;
            p->state = P_QUEUED;
            p->gen++;
            p->ready_at = now;
            ready_add(e, (uint32_t)(p - e->pods));
        }
    } while (res.more && res.n);
    return COMMON_OK;
}

static enum common_rc handle(struct engine *e, const struct ev *ev, int64_t now,
                             struct common_error *err)
{
    enum common_rc rc;

    if (ev->type == EV_ARRIVE) {
        const struct sim_job *j = &e->in->jobs[ev->idx];
        if ((rc = gang_podgroup_upsert(e->s, &j->pg, err)) != COMMON_OK)
            goto bad;
        e->jobs[ev->idx].waiting = 1;
        e->waiting++;
        if (ev->idx + 1 > e->n_arrived)
            e->n_arrived = ev->idx + 1;
        for (uint32_t q = e->job_first[ev->idx]; q < e->job_first[ev->idx + 1]; q++) {
            uint32_t k = e->job_pods[q];
            struct spod *p = &e->pods[k];
            if (p->arrival > now) { /* created later */
                if (ev_push(e, p->arrival, EV_POD_ARRIVE, k, p->gen))
                    return common_error_set(err, COMMON_ENOMEM, "out of memory");
                continue;
            }
            if ((rc = pod_arrive(e, p, now, err)) != COMMON_OK)
                goto bad;
        }
        return COMMON_OK;
    bad:
        if (rc == COMMON_EINVAL)
            common_error_prefix(err, "job %s", j->name);
        return rc;
    }
    if (ev->type == EV_LOAD_DONE) { /* a pod that ran when the snapshot was taken ends */
        const struct sim_load *ld = &e->in->load[ev->idx];
        struct common_pod cp = *ld->pod;
        int32_t n = node_index(e, ld->pod->node_name);
        int64_t g = pod_gpus(ld->pod, e->in->gpu_resource);
        cp.phase = "Succeeded";
        e->books_version++;
        if ((rc = gang_pod_upsert(e->s, &cp, err)) != COMMON_OK)
            return rc;
        e->gpus_used -= g;
        if (n >= 0)
            e->node_gpu_free[n] += (int32_t)g;
        e->moved = 1;
        return COMMON_OK;
    }
    struct spod *p = &e->pods[ev->idx];
    if (ev->gen != p->gen)
        return COMMON_OK;
    switch (ev->type) {
    case EV_DONE: {
        struct sjob *sj = &e->jobs[p->job];
        if ((rc = books_pod(e, p, e->names[p->node], "Succeeded", err)) != COMMON_OK)
            return rc;
        p->state = P_DONE;
        p->gen++;
        sj->running_now--;
        e->gpus_used -= p->gpus;
        e->node_gpu_free[p->node] += (int32_t)p->gpus;
        e->iv[p->interval].end = now;
        e->moved = 1;
        if (++sj->pods_done == sj->pods_bound && sj->started) { /* all that ran have ended */
            sj->end = now;
            sj->ended = 1;
            e->running--;
        }
        if (sj->pods_done == e->in->jobs[p->job].n_pods) {
            sj->waiting = 0;
            e->jobs_done++;
        }
        return COMMON_OK;
    }
    case EV_POD_ARRIVE:
        rc = pod_arrive(e, p, now, err);
        if (rc == COMMON_EINVAL)
            common_error_prefix(err, "job %s", e->in->jobs[p->job].name);
        return rc;
    case EV_READY:
        if (p->state == P_QUEUED)
            ready_add(e, ev->idx);
        return COMMON_OK;
    case EV_FLUSH:
        if (p->state == P_UNSCHED) {
            p->state = P_QUEUED;
            p->gen++;
            p->ready_at = p->ready_at > now ? p->ready_at : now;
            if (p->ready_at <= now)
                ready_add(e, ev->idx);
            else if (ev_push_w(e, p->ready_at, EV_READY, ev->idx, p->gen, 1 + p->n_f))
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        return COMMON_OK;
    }
    return COMMON_OK;
}

/* nothing but retries is left: give every waiting pod one more try after every backoff */
static enum common_rc idle_round(struct engine *e, int64_t *now, struct common_error *err)
{
    int64_t t = *now;

    for (size_t i = 0; i < e->n_pods; i++) {
        struct spod *p = &e->pods[i];
        if ((p->state == P_QUEUED || p->state == P_UNSCHED) && p->ready_at > t)
            t = p->ready_at;
    }
    for (size_t j = 0; j < e->in->n_jobs; j++) {
        struct gang_info gi;
        const struct gang_podgroup *pg = &e->in->jobs[j].pg;
        if (e->jobs[j].waiting && !e->jobs[j].started &&
            gang_info(e->s, pg->namespace, pg->name, &gi, NULL) == COMMON_OK &&
            gi.backoff_until > t)
            t = gi.backoff_until;
    }
    *now = t;
    e->n_ready = 0;
    for (size_t i = 0; i < e->n_pods; i++) {
        struct spod *p = &e->pods[i];
        if (p->state == P_QUEUED || p->state == P_UNSCHED) {
            p->state = P_QUEUED;
            p->gen++;
            p->ready_at = t;
            e->ready[e->n_ready++] = (uint32_t)i;
        }
    }
    e->n_unsched = 0;
    return COMMON_OK;
}

/* does job j fit on the empty cluster? 1 yes, 0 no (*why set), -1 error */
static int fits_empty(struct engine *e, size_t j, char *why, size_t whylen,
                      struct common_error *err)
{
    const struct sim_job *job = &e->in->jobs[j];
    struct gang_state *s = NULL;
    struct gang_node_verdict *v = e->verdicts;
    struct gang_filter_result fr;
    int ok = 1;

    if (sim_state_create(e->in, &s, err) != COMMON_OK)
        return -1;
    for (size_t i = 0; i < e->in->n_nodes; i++)
        if (gang_node_upsert(s, e->in->nodes[i], err) != COMMON_OK) {
            ok = -1;
            goto out;
        }
    if (gang_podgroup_upsert(s, &job->pg, err) != COMMON_OK) {
        ok = -1;
        goto out;
    }
    for (size_t k = 0; k < job->n_pods; k++) {
        struct common_pod cp = *job->pods[k];
        if (cp.scheduling_gates == COMMON_GATE_TRAINSCHED) { /* asked as if ungated */
            cp.n_scheduling_gates = 0;
            cp.first_scheduling_gate = NULL;
            cp.scheduling_gates = 0;
        }
        if (gang_pod_upsert(s, &cp, err) != COMMON_OK) {
            ok = -1;
            goto out;
        }
    }
    for (size_t k = 0; k < job->n_pods && ok == 1; k++) {
        if (gang_filter(s, job->pods[k], e->names, e->in->n_nodes, 0, v, &fr, err) != COMMON_OK) {
            ok = -1;
            break;
        }
        if (fr.n_ok == 0) {
            snprintf(why, whylen, "%s", fr.reason);
            ok = 0;
        }
        if (job->gang)
            break; /* the first member plans the whole gang */
    }
out:
    gang_state_destroy(s);
    return ok;
}

static int int64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* job j's pods grouped by the time they were bound (their intervals' starts) */
static int waves(const struct engine *e, size_t j, struct sim_job_result *jr,
                 struct common_arena *a)
{
    size_t n = 0, k = 0;
    int64_t *t = common_malloc((e->job_first[j + 1] - e->job_first[j] + 1) * sizeof(*t));

    if (!t)
        return -1;
    for (uint32_t q = e->job_first[j]; q < e->job_first[j + 1]; q++) {
        const struct spod *p = &e->pods[e->job_pods[q]];
        if (p->interval >= 0)
            t[n++] = e->iv[p->interval].start;
    }
    qsort(t, n, sizeof(*t), int64_cmp);
    jr->waves = common_arena_alloc(a, (n + 1) * sizeof(*jr->waves));
    if (!jr->waves) {
        common_free(t);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!k || jr->waves[k - 1].start_ms != t[i])
            jr->waves[k++] = (struct sim_wave){t[i], 0};
        jr->waves[k - 1].pods++;
    }
    jr->n_waves = k;
    common_free(t);
    return 0;
}

static enum common_rc finish(struct engine *e, int64_t end, struct common_arena *a,
                             struct common_error *err)
{
    struct sim_result *r = e->r;
    const struct sim_input *in = e->in;
    double used = 0, idle = 0, frag = 0, wait_sum = 0;
    size_t started = 0;

    r->end_ms = end;
    r->jobs = common_arena_alloc(a, (in->n_jobs ? in->n_jobs : 1) * sizeof(*r->jobs));
    r->jobs_in_one_domain = common_arena_alloc(a, (in->n_levels + 1) * sizeof(uint32_t));
    r->samples = common_arena_alloc(a, (e->n_samples + 1) * sizeof(*r->samples));
    r->intervals = common_arena_alloc(a, (e->n_iv + 1) * sizeof(*r->intervals));
    if (!r->jobs || !r->jobs_in_one_domain || !r->samples || !r->intervals)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    if (e->n_samples) /* none: a snapshot with nothing waiting or running */
        memcpy(r->samples, e->samples, e->n_samples * sizeof(*r->samples));
    r->n_samples = e->n_samples;
    for (size_t i = 0; i < e->n_iv; i++) {
        r->intervals[i] = e->iv[i];
        if (r->intervals[i].end < 0)
            r->intervals[i].end = end;
    }
    r->n_intervals = e->n_iv;
    for (size_t i = 0; i < e->n_samples; i++) {
        int64_t t1 = i + 1 < e->n_samples ? e->samples[i + 1].t : end;
        double dt = (double)(t1 - e->samples[i].t);
        used += dt * (double)e->samples[i].gpus_used;
        idle += dt * (double)e->samples[i].gpus_idle;
        frag += dt * (double)e->samples[i].gpus_frag;
    }
    r->util_avg = end > 0 && r->gpus_total > 0 ? used / ((double)end * (double)r->gpus_total) : 0;
    r->gpu_hours_idle = idle / 3600000.0;
    r->gpu_hours_frag = frag / 3600000.0;
    for (size_t j = 0; j < in->n_jobs; j++) {
        struct sim_job_result *jr = &r->jobs[j];
        struct sjob *sj = &e->jobs[j];
        const struct sim_job *job = &in->jobs[j];
        uint8_t *seen;
        size_t nn = 0;

        jr->start_ms = sj->started ? sj->start : -1;
        /* ended: every pod that ran has finished (members beyond minMember that never found
         * room are not waited for: the reason says why they waited) */
        jr->end_ms = sj->started && sj->ended ? sj->end : -1;
        jr->wait_ms = (sj->started ? sj->start : end) - job->arrival_ms;
        if (jr->wait_ms < 0)
            jr->wait_ms = 0;
        jr->gang_failures = sj->failures;
        jr->filters = sj->filters;
        if (!sj->started && !sj->reason[0] && job->gang) {
            /* a gang that stayed at the gang gate: the ungating pass's reason */
            struct gang_info gi;
            if (gang_info(e->s, job->pg.namespace, job->pg.name, &gi, NULL) == COMMON_OK &&
                gi.reason)
                snprintf(sj->reason, sizeof(sj->reason), "%s", gi.reason);
        }
        jr->reason = common_arena_strdup(a, sj->reason);
        jr->domain = common_arena_strdup(a, sj->domain);
        jr->domain_level = common_arena_strdup(a, sj->domain_level);
        jr->domains = common_arena_alloc(a, (in->n_levels + 1) * sizeof(uint32_t));
        seen = common_malloc(in->n_nodes ? in->n_nodes : 1);
        if (!jr->reason || !jr->domain || !jr->domain_level || !jr->domains || !seen) {
            common_free(seen);
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        memset(seen, 0, in->n_nodes ? in->n_nodes : 1);
        for (uint32_t q = e->job_first[j]; q < e->job_first[j + 1]; q++) {
            const struct spod *p = &e->pods[e->job_pods[q]];
            if (p->node >= 0 && (p->state == P_RUNNING || p->state == P_DONE) && !seen[p->node]) {
                seen[p->node] = 1;
                nn++;
            }
        }
        jr->nodes = common_arena_alloc(a, (nn + 1) * sizeof(*jr->nodes));
        if (!jr->nodes) {
            common_free(seen);
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < in->n_nodes; i++)
            if (seen[i])
                jr->nodes[jr->n_nodes++] = e->names[i];
        common_free(seen);
        for (size_t l = 0; l < in->n_levels; l++) {
            uint32_t count = 0;
            for (size_t i = 0; i < jr->n_nodes; i++) {
                const char *v = NULL, *pv = NULL;
                const struct common_node *nd = in->nodes[node_index(e, jr->nodes[i])];
                for (uint32_t k = 0; k < nd->n_labels; k++)
                    if (strcmp(nd->labels[k].key, in->levels[l]) == 0)
                        v = nd->labels[k].value;
                int dup = 0;
                for (size_t i2 = 0; i2 < i && !dup; i2++) {
                    const struct common_node *n2 = in->nodes[node_index(e, jr->nodes[i2])];
                    pv = NULL;
                    for (uint32_t k = 0; k < n2->n_labels; k++)
                        if (strcmp(n2->labels[k].key, in->levels[l]) == 0)
                            pv = n2->labels[k].value;
                    dup = (v && pv && strcmp(v, pv) == 0) || (!v && !pv);
                }
                count += !dup;
            }
            jr->domains[l] = count;
            if (sj->started && job->n_pods > 1 && count == 1)
                r->jobs_in_one_domain[l]++;
        }
        if (sj->started && job->n_pods > 1)
            r->multi_pod_jobs++;
        if (waves(e, j, jr, a) != 0)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        jr->peak_pods = sj->peak;
        jr->never_whole =
            sj->started && sj->peak < (job->gang && (size_t)job->pg.min_member < job->n_pods
                                           ? (uint32_t)job->pg.min_member
                                           : (uint32_t)job->n_pods);
        /* the waits: of started jobs, and of jobs that arrived and were still waiting at the
         * end (counted to the end: leaving them out made a queue that never drains look fast) */
        if (sj->started || job->arrival_ms < end) {
            started++;
            wait_sum += (double)jr->wait_ms;
            if (jr->wait_ms > r->wait_max_ms)
                r->wait_max_ms = jr->wait_ms;
            r->jobs_still_waiting += !sj->started;
        }
        if (sj->started) {
            jr->state = jr->end_ms >= 0 ? SIM_JOB_COMPLETED : SIM_JOB_RUNNING;
        } else if (sj->waiting || job->arrival_ms <= end) {
            char why[GANG_REASON_MAX];
            int f = fits_empty(e, j, why, sizeof(why), err);
            if (f < 0)
                return err ? err->code : COMMON_ENOMEM;
            jr->state = f ? SIM_JOB_WAITING : SIM_JOB_NEVER_FITS;
            if (!f && !(jr->reason = common_arena_strdup(a, why)))
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
        } else
            jr->state = SIM_JOB_WAITING;
    }
    r->wait_avg_ms = started ? wait_sum / (double)started : 0;
    return COMMON_OK;
}

static int uid_cmp(const void *a, const void *b)
{
    return strcmp(((const struct spod *)a)->cp->uid, ((const struct spod *)b)->cp->uid);
}

enum common_rc sim_run(const struct sim_input *in, const struct sim_options *opts,
                       struct common_arena *a, struct sim_result *out, struct common_error *err)
{
    static const struct sim_options no_opts;
    struct engine e;
    enum common_rc rc = COMMON_OK;
    int64_t now = 0;
    uint32_t *tmp = NULL;
    int idle_rounds = 0;
    uint64_t next_progress = 4096;
    size_t n_gated = 0;

    memset(out, 0, sizeof(*out));
    memset(&e, 0, sizeof(e));
    e.in = in;
    e.r = out;
    e.opts = opts ? opts : &no_opts;
    if ((rc = sim_state_create(in, &e.s, err)) != COMMON_OK)
        return rc;
    for (size_t j = 0; j < in->n_jobs; j++)
        e.n_pods += in->jobs[j].n_pods;
    e.names = common_malloc((in->n_nodes + 1) * sizeof(*e.names));
    e.ok_names = common_malloc((in->n_nodes + 1) * sizeof(*e.ok_names));
    e.ok_idx = common_malloc((in->n_nodes + 1) * sizeof(*e.ok_idx));
    e.scores = common_malloc((in->n_nodes + 1) * sizeof(*e.scores));
    e.verdicts = common_malloc((in->n_nodes + 1) * sizeof(*e.verdicts));
    e.node_gpu_free = common_malloc((in->n_nodes + 1) * sizeof(*e.node_gpu_free));
    e.pods = common_malloc((e.n_pods + 1) * sizeof(*e.pods));
    e.ready = common_malloc((e.n_pods + 1) * sizeof(*e.ready));
    tmp = common_malloc((e.n_pods + 1) * sizeof(*tmp));
    e.jobs = common_malloc((in->n_jobs + 1) * sizeof(*e.jobs));
    e.job_first = common_malloc((in->n_jobs + 2) * sizeof(*e.job_first));
    e.job_pods = common_malloc((e.n_pods + 1) * sizeof(*e.job_pods));
    if (!e.job_first || !e.job_pods || !e.names || !e.ok_names || !e.ok_idx || !e.scores ||
        !e.verdicts || !e.node_gpu_free || !e.pods || !e.ready || !tmp || !e.jobs) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    memset(e.jobs, 0, (in->n_jobs + 1) * sizeof(*e.jobs));
    for (size_t i = 0; i < in->n_nodes; i++) {
        int64_t g = node_gpus(in->nodes[i], in->gpu_resource);
        e.names[i] = in->nodes[i]->name;
        e.node_gpu_free[i] = (int32_t)g;
        out->gpus_total += g;
        if ((rc = gang_node_upsert(e.s, in->nodes[i], err)) != COMMON_OK)
            goto out;
    }
    /* the pods already running (a snapshot of a cluster): on their nodes from time 0 */
    for (size_t i = 0; i < in->n_load; i++) {
        const struct common_pod *lp = in->load[i].pod;
        struct common_pod cp = *lp;
        int32_t n = node_index(&e, lp->node_name ? lp->node_name : "");
        int64_t g = pod_gpus(lp, in->gpu_resource);
        if (n < 0) {
            rc = common_error_set(err, COMMON_EINVAL, "running pod %s/%s: unknown node \"%s\"",
                                  lp->namespace, lp->name, lp->node_name ? lp->node_name : "");
            goto out;
        }
        cp.phase = "Running";
        if ((rc = gang_pod_upsert(e.s, &cp, err)) != COMMON_OK)
            goto out;
        e.gpus_used += g;
        e.node_gpu_free[n] -= (int32_t)g;
        if (ev_push(&e, in->load[i].end_ms, EV_LOAD_DONE, (uint32_t)i, 0)) {
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
    }
    {
        size_t k = 0;
        for (size_t j = 0; j < in->n_jobs; j++)
            for (size_t q = 0; q < in->jobs[j].n_pods; q++, k++) {
                struct spod *p = &e.pods[k];
                memset(p, 0, sizeof(*p));
                p->cp = in->jobs[j].pods[q];
                p->job = (uint32_t)j;
                p->seq = (uint32_t)k;
                p->node = -1;
                p->interval = -1;
                p->f_head = p->f_tail = p->f_next = NONE;
                /* created gated: by the webhook (gang_gate, coscheduling gangs) or as written
                 * (the gang gate alone: another gate would hold it forever here) */
                p->gated = in->jobs[j].gang && in->jobs[j].pg.min_member > 0 &&
                           (e.opts->gang_gate || p->cp->scheduling_gates == COMMON_GATE_TRAINSCHED);
                n_gated += p->gated;
                p->gpus = pod_gpus(p->cp, in->gpu_resource);
                p->arrival = in->jobs[j].pod_arrival_ms ? in->jobs[j].pod_arrival_ms[q]
                                                        : in->jobs[j].arrival_ms;
            }
        if (n_gated && !(e.ug = common_malloc((e.n_pods + 1) * sizeof(*e.ug)))) {
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
        qsort(e.pods, e.n_pods, sizeof(*e.pods), uid_cmp);
        for (size_t i = 1; i < e.n_pods; i++)
            if (strcmp(e.pods[i - 1].cp->uid, e.pods[i].cp->uid) == 0) {
                rc = common_error_set(err, COMMON_EINVAL, "pods %s/%s and %s/%s share uid %s",
                                      e.pods[i - 1].cp->namespace, e.pods[i - 1].cp->name,
                                      e.pods[i].cp->namespace, e.pods[i].cp->name,
                                      e.pods[i].cp->uid);
                goto out;
            }
        memset(e.job_first, 0, (in->n_jobs + 2) * sizeof(*e.job_first));
        for (size_t i = 0; i < e.n_pods; i++)
            e.job_first[e.pods[i].job + 1]++;
        for (size_t j = 0; j < in->n_jobs; j++)
            e.job_first[j + 1] += e.job_first[j];
        {
            uint32_t *fill = common_malloc((in->n_jobs + 1) * sizeof(*fill));
            if (!fill) {
                rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
                goto out;
            }
            memcpy(fill, e.job_first, in->n_jobs * sizeof(*fill));
            for (size_t i = 0; i < e.n_pods; i++)
                e.job_pods[fill[e.pods[i].job]++] = (uint32_t)i;
            common_free(fill);
        }
    }
    for (size_t j = 0; j < in->n_jobs; j++)
        if (ev_push(&e, in->jobs[j].arrival_ms, EV_ARRIVE, (uint32_t)j, 0)) {
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
    for (;;) {
        int64_t deadline = gang_next_deadline(e.s);
        int64_t t;

        if (e.n_live == 0 && deadline == INT64_MAX) {
            /* only retries are left: nothing will free capacity, so after a few rounds in
             * which nothing was bound the state is final */
            if (!e.waiting || idle_rounds >= IDLE_ROUNDS_MAX)
                break;
            idle_rounds++;
            if ((rc = idle_round(&e, &now, err)) != COMMON_OK)
                goto out;
            e.n_heap = 0; /* stale retries and flushes */
            if (e.opts->until_ms && now > e.opts->until_ms) {
                now = e.opts->until_ms;
                break;
            }
        } else {
            if (e.n_live)
                idle_rounds = 0; /* something was bound (or arrives): capacity moves again */
            t = e.n_heap ? e.heap[0].t : INT64_MAX;
            if (deadline < t)
                t = deadline;
            if (e.opts->until_ms && t > e.opts->until_ms) {
                now = e.opts->until_ms;
                break;
            }
            now = t;
            e.moved = 0;
            while (e.n_heap && e.heap[0].t <= now) {
                struct ev ev = ev_pop(&e);
                out->events += ev.weight;
                out->pod_steps++;
                if ((rc = handle(&e, &ev, now, err)) != COMMON_OK)
                    goto out;
            }
            if ((rc = run_tick(&e, now, err)) != COMMON_OK)
                goto out;
            if (e.moved && flush_unsched(&e, now)) {
                rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
                goto out;
            }
        }
        if ((rc = ungate_pass(&e, now, err)) != COMMON_OK ||
            (rc = pass(&e, now, tmp, err)) != COMMON_OK)
            goto out;
        if (sample(&e, now)) {
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
        if (e.opts->progress && out->events >= next_progress) {
            next_progress = out->events + 4096;
            e.opts->progress(e.opts->progress_ctx, now, e.jobs_done, in->n_jobs);
        }
    }
    if (e.opts->progress)
        e.opts->progress(e.opts->progress_ctx, now, e.jobs_done, in->n_jobs);
    {
        int64_t end = now;
        if (e.n_samples && e.samples[e.n_samples - 1].t > end)
            end = e.samples[e.n_samples - 1].t;
        rc = finish(&e, end, a, err);
    }
out:
    gang_state_destroy(e.s);
    common_free(e.names);
    common_free(e.ok_names);
    common_free(e.ok_idx);
    common_free(e.scores);
    common_free(e.verdicts);
    common_free(e.node_gpu_free);
    common_free(e.pods);
    common_free(e.ready);
    common_free(tmp);
    common_free(e.jobs);
    common_free(e.job_first);
    common_free(e.job_pods);
    common_free(e.heap);
    common_free(e.unsched);
    common_free(e.iv);
    common_free(e.samples);
    common_free(e.ug);
    return rc;
}
