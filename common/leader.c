/*
 * common/leader.c - see leader.h. The first half is the pure core (decide, records, MicroTime,
 * identity); the second half is the election thread, the only part that calls the API server
 * (through common/kube.h) or reads a clock.
 */
#include "common/leader.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/kube.h"
#include "common/log.h"

/* ---- the pure core ---- */

struct common_leader_timing common_leader_timing_default(void)
{
    struct common_leader_timing t;
    t.lease_duration_s = COMMON_LEADER_LEASE_DURATION_S;
    t.renew_deadline_s = COMMON_LEADER_RENEW_DEADLINE_S;
    t.retry_period_s = COMMON_LEADER_RETRY_PERIOD_S;
    return t;
}

enum common_rc common_leader_timing_check(const struct common_leader_timing *t,
                                          struct common_error *err)
{
    if (t->retry_period_s <= 0)
        return common_error_set(err, COMMON_EINVAL, "leader: retry period %.3f s must be > 0",
                                t->retry_period_s);
    if (t->renew_deadline_s <= COMMON_LEADER_JITTER_FACTOR * t->retry_period_s)
        return common_error_set(err, COMMON_EINVAL,
                                "leader: renew deadline %.3f s must be greater than %.1f x the "
                                "retry period %.3f s",
                                t->renew_deadline_s, COMMON_LEADER_JITTER_FACTOR,
                                t->retry_period_s);
    if ((double)t->lease_duration_s <= t->renew_deadline_s)
        return common_error_set(err, COMMON_EINVAL,
                                "leader: lease duration %d s must be greater than the renew "
                                "deadline %.3f s",
                                t->lease_duration_s, t->renew_deadline_s);
    return COMMON_OK;
}

static int holder_empty(const char *h)
{
    return h == NULL || h[0] == '\0';
}

void common_leader_decide(const struct common_leader_input *in, struct common_leader_decision *out)
{
    const struct common_leader_record *old = &in->rec;
    int ours;

    memset(out, 0, sizeof(*out));
    out->action = COMMON_LEADER_WAIT;
    out->rec.holder = in->identity;
    out->rec.lease_duration_s = in->timing.lease_duration_s;
    out->rec.acquire_time_us = in->wall_now_us;
    out->rec.renew_time_us = in->wall_now_us;

    if (in->leading && in->now - in->last_renew >= in->timing.renew_deadline_s) {
        out->action = COMMON_LEADER_LOST;
        out->why = "renew deadline passed";
        return;
    }
    if (in->seen == COMMON_LEADER_SEEN_ERROR) {
        out->why = "lease could not be read";
        return;
    }
    if (in->seen == COMMON_LEADER_SEEN_ABSENT) {
        out->action = COMMON_LEADER_CREATE;
        out->rec.transitions = 0;
        out->why = "lease does not exist";
        return;
    }
    ours = !holder_empty(old->holder) && strcmp(old->holder, in->identity) == 0;
    if (ours) {
        out->action = COMMON_LEADER_RENEW;
        out->rec.acquire_time_us = old->acquire_time_us ? old->acquire_time_us : in->wall_now_us;
        out->rec.transitions = old->transitions;
        out->why = "lease is ours";
        return;
    }
    if (in->leading) {
        out->action = COMMON_LEADER_LOST;
        out->why = holder_empty(old->holder) ? "lease was released under us"
                                             : "lease is held by another candidate";
        return;
    }
    if (!holder_empty(old->holder) && in->observed_time + (double)old->lease_duration_s > in->now) {
        out->why = "lease is held by another candidate and not expired";
        return;
    }
    out->action = COMMON_LEADER_ACQUIRE;
    out->rec.transitions = old->transitions + 1;
    out->why = holder_empty(old->holder) ? "lease is free" : "lease expired";
}

struct common_leader_record common_leader_release_record(const struct common_leader_record *old,
                                                         int64_t wall_now_us)
{
    struct common_leader_record r;
    r.holder = "";
    r.lease_duration_s = 1;
    r.acquire_time_us = wall_now_us;
    r.renew_time_us = wall_now_us;
    r.transitions = old ? old->transitions : 0;
    return r;
}

const char *common_leader_action_name(enum common_leader_action a)
{
    switch (a) {
    case COMMON_LEADER_WAIT:
        return "wait";
    case COMMON_LEADER_CREATE:
        return "create";
    case COMMON_LEADER_ACQUIRE:
        return "acquire";
    case COMMON_LEADER_RENEW:
        return "renew";
    case COMMON_LEADER_LOST:
        return "lost";
    }
    return "?";
}

int common_leader_format_microtime(int64_t us, char *buf, size_t size)
{
    int64_t secs = us / 1000000, frac = us % 1000000;
    time_t t;
    struct tm tm;
    int n;

    if (frac < 0) {
        frac += 1000000;
        secs -= 1;
    }
    t = (time_t)secs;
    if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
        return -1;
    n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* n decimal digits at *p into *v; advances *p. Returns -1 unless all n are digits. */
static int digits(const char **p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9')
            return -1;
        *v = *v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return 0;
}

static int expect(const char **p, char c)
{
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

int common_leader_parse_microtime(const char *s, int64_t *us)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s;
    int year, mon, day, hour, min, sec, frac = 0, ndig = 0, off = 0;
    struct tm tm;
    time_t t;

    if (!s || digits(&p, 4, &year) || expect(&p, '-') || digits(&p, 2, &mon) || expect(&p, '-') ||
        digits(&p, 2, &day) || (*p != 'T' && *p != 't'))
        return -1;
    p++;
    if (digits(&p, 2, &hour) || expect(&p, ':') || digits(&p, 2, &min) || expect(&p, ':') ||
        digits(&p, 2, &sec))
        return -1;
    if (mon < 1 || mon > 12 || day < 1 || day > mdays[mon - 1] || hour > 23 || min > 59 || sec > 60)
        return -1;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (ndig >= 9)
                return -1;
            if (ndig < 6)
                frac = frac * 10 + (*p - '0');
            ndig++;
            p++;
        }
        if (ndig == 0)
            return -1;
        for (int i = ndig; i < 6; i++)
            frac *= 10;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (digits(&p, 2, &oh) || expect(&p, ':') || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        off = sign * (oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    t = timegm(&tm);
    *us = ((int64_t)t - off) * 1000000 + frac;
    return 0;
}

/* n random bytes: getrandom, or a clock/pid mix when that fails (identities need only be
 * unique, not secret) */
static void random_bytes(unsigned char *out, size_t n)
{
    static uint64_t counter;
    ssize_t got = getrandom(out, n, GRND_NONBLOCK);
    struct timespec ts;
    uint64_t x;

    if (got == (ssize_t)n)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40) ^
        __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED);
    for (size_t i = 0; i < n; i++) {
        /* splitmix64 */
        uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        out[i] = (unsigned char)(z ^ (z >> 31));
    }
}

enum common_rc common_leader_identity(char *buf, size_t size, struct common_error *err)
{
    char host[256], tail[64];
    unsigned char rnd[8];
    size_t room, tl, hl;

    if (size < 32)
        return common_error_set(err, COMMON_EINVAL,
                                "leader: identity buffer of %zu bytes is "
                                "too small (32 at least)",
                                size);
    if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
        snprintf(host, sizeof(host), "%s", "localhost");
    host[sizeof(host) - 1] = '\0';
    random_bytes(rnd, sizeof(rnd));
    snprintf(tail, sizeof(tail), "_%ld_%02x%02x%02x%02x%02x%02x%02x%02x", (long)getpid(), rnd[0],
             rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    tl = strlen(tail);
    room = size - 1 < COMMON_LEADER_IDENTITY_MAX ? size - 1 : COMMON_LEADER_IDENTITY_MAX;
    hl = strlen(host);
    if (hl + tl > room)
        hl = room > tl ? room - tl : 0;
    memcpy(buf, host, hl);
    memcpy(buf + hl, tail, tl + 1);
    return COMMON_OK;
}

/* ---- the election thread ---- */

struct common_leader {
    struct common_kube *kube;
    char *ns, *name;
    char identity[COMMON_LEADER_IDENTITY_MAX + 1];
    struct common_leader_callbacks cb;
    struct common_leader_timing timing;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* under lock */
    int stop;
    enum common_leader_stop_mode mode;
    int leading;
    double last_renew;
    /* the thread's own */
    json_t *lease;      /* the Lease last read or written, or NULL */
    char rv[96];        /* its resourceVersion */
    double observed_at; /* when rv last changed (monotonic s) */
    char *reported;     /* the holder last given to new_leader */
    uint64_t rng;
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* uniform in [0, 1) */
static double rnd01(struct common_leader *le)
{
    le->rng ^= le->rng << 13;
    le->rng ^= le->rng >> 7;
    le->rng ^= le->rng << 17;
    return (double)(le->rng >> 11) / 9007199254740992.0;
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* the LeaderElectionRecord of a Lease object (strings borrowed from it) */
static void record_of(const json_t *lease, struct common_leader_record *r)
{
    const json_t *spec = json_object_get(lease, "spec");
    const char *t;

    memset(r, 0, sizeof(*r));
    r->holder = json_string_value(json_object_get(spec, "holderIdentity"));
    r->lease_duration_s = (int)json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    r->transitions = (int)json_integer_value(json_object_get(spec, "leaseTransitions"));
    t = json_string_value(json_object_get(spec, "acquireTime"));
    if (t && common_leader_parse_microtime(t, &r->acquire_time_us))
        r->acquire_time_us = 0;
    t = json_string_value(json_object_get(spec, "renewTime"));
    if (t && common_leader_parse_microtime(t, &r->renew_time_us))
        r->renew_time_us = 0;
}

/* take obj (a Lease just read or written; ownership passes) as the one we know; its
 * resourceVersion changing restarts the expiry clock, as client-go's observedTime */
static void observe(struct common_leader *le, json_t *obj, double now, int ours)
{
    const char *rv = str_at(obj, "metadata", "resourceVersion");

    if (ours || !rv || strcmp(rv, le->rv) != 0) {
        snprintf(le->rv, sizeof(le->rv), "%s", rv ? rv : "");
        le->observed_at = now;
    }
    json_decref(le->lease);
    le->lease = obj;
}

static void forget(struct common_leader *le)
{
    json_decref(le->lease);
    le->lease = NULL;
    le->rv[0] = '\0';
}

/* write r: create a Lease (create != 0) or update the one we know, with its resourceVersion.
 * On success the written Lease becomes the one we know. */
static enum common_rc write_record(struct common_leader *le, const struct common_leader_record *r,
                                   int create, struct common_error *err)
{
    char at[40], rt[40];
    json_t *obj, *spec, *out = NULL;
    enum common_rc rc = COMMON_ENOMEM;

    if (common_leader_format_microtime(r->acquire_time_us, at, sizeof(at)) ||
        common_leader_format_microtime(r->renew_time_us, rt, sizeof(rt)))
        return common_error_set(err, COMMON_EINVAL, "leader: time out of range");
    if (!create && !le->lease)
        return common_error_set(err, COMMON_EINVAL, "leader: no lease to update");
    if (create)
        obj = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "coordination.k8s.io/v1", "kind",
                        "Lease", "metadata", "name", le->name, "namespace", le->ns);
    else
        obj = json_deep_copy(le->lease);
    if (!obj)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    spec = json_object_get(obj, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        if (!spec || json_object_set_new(obj, "spec", spec)) {
            common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (json_object_set_new(spec, "holderIdentity", json_string(r->holder ? r->holder : "")) ||
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(r->lease_duration_s)) ||
        json_object_set_new(spec, "acquireTime", json_string(at)) ||
        json_object_set_new(spec, "renewTime", json_string(rt)) ||
        json_object_set_new(spec, "leaseTransitions", json_integer(r->transitions))) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    if (create)
        rc = common_kube_create(le->kube, &common_kube_leases, le->ns, obj, NULL, &out, err);
    else
        rc = common_kube_update(le->kube, &common_kube_leases, le->ns, obj, NULL, &out, err);
    if (rc == COMMON_OK)
        observe(le, out, mono_now(), 1);
    else
        json_decref(out);
out:
    json_decref(obj);
    return rc;
}

static void log_lease(struct common_leader *le, enum common_log_level lvl, const char *msg,
                      const char *k2, const char *v2)
{
    char lease[512];
    snprintf(lease, sizeof(lease), "%s/%s", le->ns, le->name);
    common_log(lvl, msg, "lease", lease, "identity", le->identity, k2, v2, NULL);
}

static void become_leader(struct common_leader *le, double started)
{
    int was;

    pthread_mutex_lock(&le->lock);
    was = le->leading;
    le->leading = 1;
    le->last_renew = started;
    pthread_mutex_unlock(&le->lock);
    if (!was) {
        log_lease(le, COMMON_LOG_INFO, "leader: started leading", NULL, NULL);
        if (le->cb.started_leading)
            le->cb.started_leading(le->cb.ctx);
    }
}

static void step_down(struct common_leader *le, const char *why)
{
    int was;

    pthread_mutex_lock(&le->lock);
    was = le->leading;
    le->leading = 0;
    pthread_mutex_unlock(&le->lock);
    if (was) {
        log_lease(le, strcmp(why, "stopped") == 0 ? COMMON_LOG_INFO : COMMON_LOG_WARN,
                  "leader: stopped leading", "why", why);
        if (le->cb.stopped_leading)
            le->cb.stopped_leading(le->cb.ctx);
    }
}

static void report_holder(struct common_leader *le)
{
    struct common_leader_record r;
    char *copy;

    if (!le->lease)
        return;
    record_of(le->lease, &r);
    if (holder_empty(r.holder) || (le->reported && strcmp(le->reported, r.holder) == 0))
        return;
    copy = common_strdup(r.holder);
    if (!copy)
        return; /* told next round */
    common_free(le->reported);
    le->reported = copy;
    log_lease(le, COMMON_LOG_INFO, "leader: new leader", "holder", copy);
    if (le->cb.new_leader)
        le->cb.new_leader(le->cb.ctx, copy);
}

/* one try to acquire or renew (client-go tryAcquireOrRenew); returns the decision's wait hint:
 * the monotonic time at which the Lease we saw expires, or 0 */
static double attempt(struct common_leader *le)
{
    struct common_error err;
    struct common_leader_input in;
    struct common_leader_decision d;
    json_t *got = NULL;
    enum common_rc rc;
    double started;

    memset(&in, 0, sizeof(in));
    rc = common_kube_get(le->kube, &common_kube_leases, le->ns, le->name, &got, &err);
    in.now = mono_now();
    if (rc == COMMON_OK) {
        observe(le, got, in.now, 0);
        in.seen = COMMON_LEADER_SEEN_LEASE;
        record_of(le->lease, &in.rec);
    } else if (rc == COMMON_ENOTFOUND) {
        forget(le);
        in.seen = COMMON_LEADER_SEEN_ABSENT;
    } else {
        in.seen = COMMON_LEADER_SEEN_ERROR;
        log_lease(le, COMMON_LOG_WARN, "leader: cannot read the lease", "error", err.msg);
    }
    in.identity = le->identity;
    in.timing = le->timing;
    in.observed_time = le->observed_at;
    in.wall_now_us = wall_now_us();
    pthread_mutex_lock(&le->lock);
    in.leading = le->leading;
    in.last_renew = le->last_renew;
    pthread_mutex_unlock(&le->lock);

    common_leader_decide(&in, &d);
    switch (d.action) {
    case COMMON_LEADER_WAIT:
        break;
    case COMMON_LEADER_LOST:
        step_down(le, d.why);
        break;
    case COMMON_LEADER_CREATE:
    case COMMON_LEADER_ACQUIRE:
    case COMMON_LEADER_RENEW:
        started = in.now;
        rc = write_record(le, &d.rec, d.action == COMMON_LEADER_CREATE, &err);
        if (rc == COMMON_OK) {
            become_leader(le, started);
        } else if (rc == COMMON_ECONFLICT || rc == COMMON_EEXISTS) {
            /* another candidate wrote first: we learn who on the next read */
            log_lease(le, COMMON_LOG_DEBUG, "leader: lost the race to write the lease", "action",
                      common_leader_action_name(d.action));
        } else {
            log_lease(le, COMMON_LOG_WARN, "leader: cannot write the lease", "error", err.msg);
        }
        break;
    }
    report_holder(le);
    if (d.action == COMMON_LEADER_WAIT && in.seen == COMMON_LEADER_SEEN_LEASE &&
        !holder_empty(in.rec.holder))
        return le->observed_at + (double)in.rec.lease_duration_s;
    return 0;
}

/* wait up to seconds or until stop; returns nonzero when stopping */
static int pause_for(struct common_leader *le, double seconds)
{
    struct timespec ts;
    int stop;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (seconds < 0)
        seconds = 0;
    ts.tv_sec += (time_t)seconds;
    ts.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&le->lock);
    while (!le->stop)
        if (pthread_cond_timedwait(&le->cond, &le->lock, &ts) == ETIMEDOUT)
            break;
    stop = le->stop;
    pthread_mutex_unlock(&le->lock);
    return stop;
}

static void release(struct common_leader *le)
{
    struct common_error err;
    struct common_leader_record old, r;
    enum common_rc rc;

    if (!le->lease)
        return;
    record_of(le->lease, &old);
    if (holder_empty(old.holder) || strcmp(old.holder, le->identity) != 0)
        return;
    r = common_leader_release_record(&old, wall_now_us());
    rc = write_record(le, &r, 0, &err);
    if (rc == COMMON_OK)
        log_lease(le, COMMON_LOG_INFO, "leader: released the lease", NULL, NULL);
    else
        log_lease(le, COMMON_LOG_WARN, "leader: cannot release the lease", "error", err.msg);
}

static void *run(void *arg)
{
    struct common_leader *le = arg;
    enum common_leader_stop_mode mode;
    int leading;

    for (;;) {
        double expires_at, now, wait;

        pthread_mutex_lock(&le->lock);
        if (le->stop) {
            pthread_mutex_unlock(&le->lock);
            break;
        }
        pthread_mutex_unlock(&le->lock);
        expires_at = attempt(le);
        now = mono_now();
        pthread_mutex_lock(&le->lock);
        leading = le->leading;
        if (leading) {
            /* renew every retry period (client-go's PollImmediateUntil), and look again right
             * at the renew deadline */
            wait = le->timing.retry_period_s;
            if (le->last_renew + le->timing.renew_deadline_s - now < wait)
                wait = le->last_renew + le->timing.renew_deadline_s - now;
        } else {
            /* client-go's JitterUntil jitters the acquire loop by up to 1.2 x the period; we
             * use 0.2 x, and also look again right when the Lease we saw expires, so that a
             * takeover happens within lease duration + retry period of the last renewal */
            wait = le->timing.retry_period_s * (1.0 + 0.2 * rnd01(le));
            if (expires_at > 0 && expires_at - now + 0.01 < wait)
                wait = expires_at - now + 0.01;
        }
        pthread_mutex_unlock(&le->lock);
        if (pause_for(le, wait))
            break;
    }
    pthread_mutex_lock(&le->lock);
    leading = le->leading;
    mode = le->mode;
    pthread_mutex_unlock(&le->lock);
    if (leading && mode == COMMON_LEADER_RELEASE)
        release(le);
    step_down(le, "stopped");
    return NULL;
}

static void leader_free(struct common_leader *le)
{
    if (!le)
        return;
    json_decref(le->lease);
    common_free(le->reported);
    common_free(le->ns);
    common_free(le->name);
    pthread_cond_destroy(&le->cond);
    pthread_mutex_destroy(&le->lock);
    common_free(le);
}

struct common_leader *common_leader_start(struct common_kube *kube, const char *ns,
                                          const char *name, const char *identity,
                                          const struct common_leader_callbacks *cb,
                                          const struct common_leader_timing *timing,
                                          struct common_error *err)
{
    struct common_leader *le;
    pthread_condattr_t ca;
    unsigned char seed[8];

    if (!kube || !ns || !*ns || !name || !*name || !identity || !*identity) {
        common_error_set(err, COMMON_EINVAL,
                         "leader: kube, namespace, name and identity are required");
        return NULL;
    }
    if (strlen(identity) > COMMON_LEADER_IDENTITY_MAX) {
        common_error_set(err, COMMON_EINVAL, "leader: identity is longer than %d bytes",
                         COMMON_LEADER_IDENTITY_MAX);
        return NULL;
    }
    {
        struct common_leader_timing t = timing ? *timing : common_leader_timing_default();
        if (common_leader_timing_check(&t, err))
            return NULL;
    }
    le = common_calloc(1, sizeof(*le));
    if (!le) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    le->kube = kube;
    le->timing = timing ? *timing : common_leader_timing_default();
    snprintf(le->identity, sizeof(le->identity), "%s", identity);
    if (cb)
        le->cb = *cb;
    le->mode = COMMON_LEADER_RELEASE;
    random_bytes(seed, sizeof(seed));
    memcpy(&le->rng, seed, sizeof(le->rng));
    le->rng |= 1;
    pthread_mutex_init(&le->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&le->cond, &ca);
    pthread_condattr_destroy(&ca);
    le->ns = common_strdup(ns);
    le->name = common_strdup(name);
    if (!le->ns || !le->name) {
        leader_free(le);
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    if (pthread_create(&le->thread, NULL, run, le) != 0) {
        leader_free(le);
        common_error_set(err, COMMON_EIO, "leader: cannot start the election thread");
        return NULL;
    }
    return le;
}

void common_leader_stop(struct common_leader *le, enum common_leader_stop_mode mode)
{
    if (!le)
        return;
    pthread_mutex_lock(&le->lock);
    le->stop = 1;
    le->mode = mode;
    pthread_cond_broadcast(&le->cond);
    pthread_mutex_unlock(&le->lock);
    pthread_join(le->thread, NULL);
    leader_free(le);
}

int common_leader_is_leader(struct common_leader *le)
{
    int r;

    pthread_mutex_lock(&le->lock);
    r = le->leading && mono_now() - le->last_renew < le->timing.renew_deadline_s;
    pthread_mutex_unlock(&le->lock);
    return r;
}

const char *common_leader_identity_of(const struct common_leader *le)
{
    return le->identity;
}
