/*
 * extender/server.c - the scheduler extender's glue around the gang core (see server.h): create,
 * start, stop and destroy, and the helpers the other files share (server_int.h). The informer
 * handlers are in informers.c, the binder threads in binder.c, the timer in timer.c, node
 * patching in nodes.c and the HTTP verbs in routes.c (extender/README.md).
 *
 * Locks: x->mu guards the gang core, the held-request table, the dirty sets and the timer's
 * flags; x->qmu guards the binder queue. Never both at once except mu then nothing: the queue
 * is filled after mu is dropped. Status and Event bookkeeping (pgrecs) belongs to the timer
 * thread alone.
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

#define ARENA_FACTOR 4
#define DEFAULT_MAX_BODY ((size_t)64 << 20)

static const double duration_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                          0.01,   0.025,   0.05,   0.1,   0.25,   1};

int64_t extender_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void extender_copy_str(char *dst, size_t size, const char *src)
{
    size_t n = src ? strlen(src) : 0;

    if (n >= size)
        n = size - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ------------------------------------------------------------ dirty sets (x->mu held) -- */

/* FNV-1a of a gang key, never 0 */
static uint32_t dirty_hash(const char *key)
{
    uint32_t h = 2166136261u;

    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h;
}

/* the slot of key in x->dirty_ix: its entry, or the empty slot where it would go */
static size_t dirty_slot(const struct extender_server *x, const char *key)
{
    size_t mask = x->cap_dirty_ix - 1, j = dirty_hash(key) & mask;

    while (x->dirty_ix[j] && strcmp(x->dirty[x->dirty_ix[j] - 1], key) != 0)
        j = (j + 1) & mask;
    return j;
}

/* make room in the index for one more key (load at most 1/2); 0, -1 without memory */
static int dirty_ix_reserve(struct extender_server *x)
{
    size_t cap = x->cap_dirty_ix ? x->cap_dirty_ix : 64;
    uint32_t *ix;

    if ((x->n_dirty + 1) * 2 <= x->cap_dirty_ix)
        return 0;
    while ((x->n_dirty + 1) * 2 > cap)
        cap *= 2;
    if (!(ix = common_calloc(cap, sizeof(*ix))))
        return -1;
    common_free(x->dirty_ix);
    x->dirty_ix = ix;
    x->cap_dirty_ix = cap;
    for (size_t i = 0; i < x->n_dirty; i++)
        x->dirty_ix[dirty_slot(x, x->dirty[i])] = (uint32_t)i + 1;
    return 0;
}

void extender_mark_dirty(struct extender_server *x, const char *ns, const char *name)
{
    char key[KEY_MAX];
    size_t j;

    if (!ns || !name || !*name)
        return;
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (dirty_ix_reserve(x))
        return;
    j = dirty_slot(x, key);
    if (x->dirty_ix[j])
        return;
    if (x->n_dirty == x->cap_dirty) {
        size_t nc = x->cap_dirty ? x->cap_dirty * 2 : 16;
        char **nd = common_realloc(x->dirty, nc * sizeof(*nd));
        if (!nd)
            return;
        x->dirty = nd;
        x->cap_dirty = nc;
    }
    if ((x->dirty[x->n_dirty] = common_strdup(key))) {
        x->n_dirty++;
        x->dirty_ix[j] = (uint32_t)x->n_dirty;
    }
}

void extender_dirty_taken(struct extender_server *x)
{
    x->n_dirty = 0;
    if (x->dirty_ix)
        memset(x->dirty_ix, 0, x->cap_dirty_ix * sizeof(*x->dirty_ix));
}

const char *extender_pod_group_of(const struct common_pod *p)
{
    if (p->scheduling_group) /* kube-scheduler's own gang: never ours */
        return NULL;
    for (uint32_t i = 0; i < p->n_labels; i++)
        if (strcmp(p->labels[i].key, GANG_POD_GROUP_LABEL) == 0)
            return p->labels[i].value;
    return NULL;
}

/* ------------------------------------------------------------------------ lifecycle -- */

struct extender_server *extender_server_create(const struct extender_server_opts *opts,
                                               struct common_error *err)
{
    static const char *const ignored[] = {EXTENDER_GANG_RESOURCE};
    static const char *const req_labels[] = {"verb", "result", NULL};
    static const char *const verb_label[] = {"verb", NULL};
    static const char *const result_label[] = {"result", NULL};
    static const char *const state_label[] = {"state", NULL};
    static const char *const kind_label[] = {"kind", NULL};
    static const char *const level_label[] = {"level", NULL};
    static const char *const why_label[] = {"why", NULL};
    struct gang_config gc;
    struct extender_server *x;
    pthread_condattr_t ca;

    if (!opts || !opts->kube) {
        common_error_set(err, COMMON_EINVAL, "extender server: a Kubernetes client is required");
        return NULL;
    }
    if (opts->bind_http_timeout_ms < 0 || opts->default_schedule_timeout_s < 0 ||
        opts->backoff_initial_ms < 0 || opts->backoff_max_ms < 0) {
        common_error_set(err, COMMON_EINVAL, "extender server: negative time");
        return NULL;
    }
    x = common_calloc(1, sizeof(*x));
    if (!x) {
        common_error_set(err, COMMON_ENOMEM, "no memory");
        return NULL;
    }
    x->o = *opts;
    x->kube = opts->kube;
    {
        /* a test hook (tests/e2e): end the process after N ungate writes, as a kill between
         * two writes would */
        const char *ev = getenv("TRAINSCHED_TEST_EXIT_AFTER_UNGATES");
        x->exit_after_ungates = ev && *ev ? strtol(ev, NULL, 10) : 0;
    }
    if (!x->o.binders)
        x->o.binders = 4;
    if (!x->o.advertise_resource)
        x->o.advertise_resource = 1;
    if (!x->o.write_podgroup_status)
        x->o.write_podgroup_status = 1;
    x->lim.max_body = opts->max_body ? opts->max_body : DEFAULT_MAX_BODY;
    x->arena_max = x->lim.max_body * ARENA_FACTOR + ((size_t)1 << 20);
    pthread_mutex_init(&x->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&x->qmu, NULL);
    pthread_cond_init(&x->qcv, NULL);

    gang_config_default(&gc);
    gc.default_timeout_ms = opts->default_schedule_timeout_s * 1000;
    gc.bind_http_timeout_ms = opts->bind_http_timeout_ms;
    gc.backoff_initial_ms = opts->backoff_initial_ms;
    gc.backoff_max_ms = opts->backoff_max_ms;
    if (gc.backoff_initial_ms && !gc.backoff_max_ms)
        gc.backoff_max_ms = gc.backoff_initial_ms > 300000 ? gc.backoff_initial_ms : 300000;
    gc.ignored_resources = ignored;
    gc.n_ignored_resources = 1;
    if (gang_state_create(&gc, &x->gs, err) != COMMON_OK)
        goto fail;
    for (size_t i = 0; i < opts->n_topologies; i++) {
        struct topo_spec ts;
        if (topo_spec_parse(opts->topologies[i], &ts, err) != COMMON_OK ||
            gang_topology_set(x->gs, ts.name, ts.levels, ts.n_levels, err) != COMMON_OK)
            goto fail;
    }
    x->o.topologies = NULL; /* borrowed for create only */
    x->o.n_topologies = 0;

    if (extender_informers_create(x, err) != COMMON_OK)
        goto fail;

    if (opts->metrics) {
        struct common_metrics *m = opts->metrics;
        x->m_requests = common_metrics_counter(
            m, "trainsched_extender_requests_total",
            "Scheduler extender requests by verb and result (ok, error, held, rejected).",
            req_labels);
        x->m_duration = common_metrics_histogram(
            m, "trainsched_extender_duration_seconds",
            "Time to answer an extender request (held binds: until the hold is taken).", verb_label,
            duration_buckets, sizeof(duration_buckets) / sizeof(duration_buckets[0]));
        x->m_bindings = common_metrics_counter(
            m, "trainsched_extender_bindings_total",
            "Bindings created through the API server by result (bound, failed).", result_label);
        x->m_held = common_metrics_gauge(m, "trainsched_extender_held_binds",
                                         "Bind requests held right now.", NULL);
        x->m_gangs = common_metrics_gauge(
            m, "trainsched_extender_gangs",
            "PodGroups by state (waiting, holding, admitted, backoff).", state_label);
        x->m_cache = common_metrics_gauge(m, "trainsched_extender_cache_objects",
                                          "Objects in the extender's watch caches.", kind_label);
        x->m_topo_waiting = common_metrics_gauge(
            m, "trainsched_extender_gangs_waiting_for_topology",
            "Gangs not holding nor admitted whose reason is their topology request (a bad "
            "request, or no domain of the required level has room).",
            NULL);
        x->m_topo_placed = common_metrics_counter(
            m, "trainsched_extender_topology_placements_total",
            "Gangs released inside one topology domain, by the domain's level (node label key).",
            level_label);
        x->m_ungated_pods = common_metrics_counter(
            m, "trainsched_extender_ungated_pods_total",
            "Gang member pods whose trainsched.io/gang scheduling gate the extender removed.",
            NULL);
        x->m_ungated_gangs = common_metrics_counter(
            m, "trainsched_extender_ungated_gangs_total",
            "Gangs whose members the ungating pass released, by why (placed, preempt, alone).",
            why_label);
        x->m_gated_gangs = common_metrics_gauge(
            m, "trainsched_extender_gangs_gated",
            "Gangs with members waiting at the trainsched.io/gang scheduling gate.", NULL);
        x->m_ungate_pass = common_metrics_histogram(
            m, "trainsched_extender_ungate_pass_seconds",
            "Time of one ungating pass under the books' lock.", NULL, duration_buckets,
            sizeof(duration_buckets) / sizeof(duration_buckets[0]));
        if (!x->m_requests || !x->m_duration || !x->m_bindings || !x->m_held || !x->m_gangs ||
            !x->m_cache || !x->m_topo_waiting || !x->m_topo_placed || !x->m_ungated_pods ||
            !x->m_ungated_gangs || !x->m_gated_gangs || !x->m_ungate_pass ||
            extender_dra_metrics_register(x, m)) {
            common_error_set(err, COMMON_ENOMEM, "extender server: cannot register metrics");
            goto fail;
        }
    }
    return x;
fail:
    extender_server_destroy(x);
    return NULL;
}

enum common_rc extender_server_start(struct extender_server *x, struct common_error *err)
{
    pthread_mutex_lock(&x->mu);
    if (x->started || x->stopped) {
        pthread_mutex_unlock(&x->mu);
        return common_error_set(err, COMMON_ECONFLICT, "extender server: already started");
    }
    x->started = 1;
    pthread_mutex_unlock(&x->mu);
    if (common_informer_start(x->nodes_inf, err) || common_informer_start(x->pods_inf, err) ||
        common_informer_start(x->pg_inf, err))
        return err ? err->code : COMMON_ENOMEM;
    {
        enum common_rc rc = extender_topology_watch(x, err);
        if (rc == COMMON_OK)
            rc = extender_dra_watch(x, err);
        if (rc != COMMON_OK)
            return rc;
    }
    x->binders = common_calloc(x->o.binders, sizeof(*x->binders));
    if (!x->binders)
        return common_error_set(err, COMMON_ENOMEM, "no memory");
    for (unsigned i = 0; i < x->o.binders; i++) {
        if (pthread_create(&x->binders[i], NULL, extender_binder_main, x) != 0)
            return common_error_set(err, COMMON_EIO, "extender server: no binder thread");
        x->n_binders++;
    }
    if (pthread_create(&x->timer, NULL, extender_timer_main, x) != 0)
        return common_error_set(err, COMMON_EIO, "extender server: no timer thread");
    pthread_mutex_lock(&x->mu);
    x->started = 2; /* the timer runs: joined at stop */
    x->tick_req = 1;
    pthread_mutex_unlock(&x->mu);
    return COMMON_OK;
}

int extender_server_ready(struct extender_server *x)
{
    return x && common_informer_synced(x->nodes_inf) && common_informer_synced(x->pods_inf) &&
           common_informer_synced(x->pg_inf);
}

int extender_server_wait_ready(struct extender_server *x, long timeout_ms)
{
    int64_t end = extender_mono_ms() + timeout_ms;

    if (!common_informer_wait_synced(x->nodes_inf, timeout_ms))
        return 0;
    if (!common_informer_wait_synced(x->pods_inf, (long)(end - extender_mono_ms())))
        return 0;
    return common_informer_wait_synced(x->pg_inf, (long)(end - extender_mono_ms()));
}

void extender_server_stats(struct extender_server *x, struct extender_server_stats *out)
{
    pthread_mutex_lock(&x->mu);
    out->held = x->st.held;
    out->released = x->st.released;
    out->rejected = x->st.rejected;
    out->bindings_ok = x->st.bindings_ok;
    out->bindings_failed = x->st.bindings_failed;
    out->node_patches = x->st.node_patches;
    out->status_patches = x->st.status_patches;
    out->held_now = x->st.held_now;
    out->pod_touches = x->st.pod_touches;
    out->dra_claims_written = x->st.dra_claims_written;
    out->dra_claims_released = x->st.dra_claims_released;
    out->dra_leaks_freed = x->st.dra_leaks_freed;
    out->filter = __atomic_load_n(&x->st.filter, __ATOMIC_RELAXED);
    out->prioritize = __atomic_load_n(&x->st.prioritize, __ATOMIC_RELAXED);
    out->bind = __atomic_load_n(&x->st.bind, __ATOMIC_RELAXED);
    out->preempt = __atomic_load_n(&x->st.preempt, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&x->mu);
}

void extender_server_stop(struct extender_server *x)
{
    int timer_running;

    if (!x)
        return;
    pthread_mutex_lock(&x->mu);
    if (x->stopped) {
        pthread_mutex_unlock(&x->mu);
        return;
    }
    timer_running = x->started == 2;
    x->stopping = 1;
    x->stopped = 1;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    if (timer_running)
        pthread_join(x->timer, NULL);

    pthread_mutex_lock(&x->qmu);
    x->qstop = 1;
    pthread_cond_broadcast(&x->qcv);
    pthread_mutex_unlock(&x->qmu);
    for (unsigned i = 0; i < x->n_binders; i++)
        pthread_join(x->binders[i], NULL);
    x->n_binders = 0;

    for (;;) {
        struct common_httpd_hold *h = NULL;
        pthread_mutex_lock(&x->mu);
        if (x->n_holds)
            h = extender_holds_take(x, x->holds[x->n_holds - 1].uid);
        pthread_mutex_unlock(&x->mu);
        if (!h)
            break;
        extender_answer_hold(h, "trainsched extender stopping");
    }
    if (x->nodes_inf)
        common_informer_request_stop(x->nodes_inf);
    if (x->pods_inf)
        common_informer_request_stop(x->pods_inf);
    if (x->pg_inf)
        common_informer_request_stop(x->pg_inf);
    for (size_t k = 0; k < 2; k++)
        if (x->topo_inf[k])
            common_informer_request_stop(x->topo_inf[k]);
    if (x->nodes_inf)
        common_informer_stop(x->nodes_inf);
    if (x->pods_inf)
        common_informer_stop(x->pods_inf);
    if (x->pg_inf)
        common_informer_stop(x->pg_inf);
    for (size_t k = 0; k < 2; k++)
        if (x->topo_inf[k])
            common_informer_stop(x->topo_inf[k]);
    extender_dra_stop(x);
}

void extender_server_destroy(struct extender_server *x)
{
    if (!x)
        return;
    extender_server_stop(x);
    common_informer_destroy(x->nodes_inf);
    common_informer_destroy(x->pods_inf);
    common_informer_destroy(x->pg_inf);
    common_informer_destroy(x->topo_inf[0]);
    common_informer_destroy(x->topo_inf[1]);
    gang_state_destroy(x->gs);
    extender_dra_destroy(x);
    while (x->qhead) {
        struct job *j = x->qhead;
        x->qhead = j->next;
        common_free(j);
    }
    for (size_t i = 0; i < x->n_dirty; i++)
        common_free(x->dirty[i]);
    common_free(x->dirty);
    common_free(x->dirty_ix);
    common_free(x->todo);
    common_free(x->holds);
    common_free(x->recs);
    common_free(x->ug_out);
    common_free(x->binders);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->qmu);
    pthread_cond_destroy(&x->qcv);
    common_free(x);
}
