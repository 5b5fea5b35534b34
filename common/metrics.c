/*
 * common/metrics.c - see metrics.h. The registry keeps its families in an array sorted by name
 * (registration is rare, rendering walks it in order); the registry lock guards that array and
 * is held across a render. Each family has its own lock and a chained hash table of series keyed
 * by the tuple of label values (compared value by value, never joined into one string). Lock
 * order: registry, then family; updates take only the family lock.
 */
#include "common/metrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/log.h"

enum mtype { MT_COUNTER, MT_GAUGE, MT_HISTOGRAM };

struct series {
    struct series *next; /* hash chain */
    uint64_t hash;
    char **values;           /* nlabels copies; NULL when the family has no labels */
    double value;            /* counter, gauge */
    double sum;              /* histogram */
    uint64_t count;          /* histogram */
    uint64_t *bucket_counts; /* histogram: nbounds + 1 per-bucket (not cumulative) counts */
};

struct common_metric {
    enum mtype type;
    char *name;
    char *help;
    char *labels[COMMON_METRICS_LABELS_MAX];
    size_t nlabels;
    double *bounds; /* histogram upper bounds, +Inf excluded */
    size_t nbounds;
    double (*fn)(void *ctx); /* func families: the value at render time */
    void *ctx;
    pthread_mutex_t mu;
    struct series **table; /* nbuckets chains (a power of two); NULL until the first series */
    size_t nbuckets;
    size_t nseries;
    int warned; /* the series cap was hit and logged */
};

struct common_metrics {
    pthread_mutex_t mu;
    struct common_metric **fams; /* sorted by name */
    size_t n, cap;
};

/* ---- names ---- */

static int is_alpha_(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int valid_metric_name(const char *s)
{
    if (!s || !(is_alpha_((unsigned char)*s) || *s == ':'))
        return 0;
    for (s++; *s; s++)
        if (!(is_alpha_((unsigned char)*s) || is_digit((unsigned char)*s) || *s == ':'))
            return 0;
    return 1;
}

static int valid_label_name(const char *s)
{
    if (!s || !is_alpha_((unsigned char)*s) || strncmp(s, "__", 2) == 0)
        return 0;
    for (s++; *s; s++)
        if (!(is_alpha_((unsigned char)*s) || is_digit((unsigned char)*s)))
            return 0;
    return 1;
}

/* ---- families ---- */

static void series_free(struct series *s, size_t nlabels)
{
    if (!s)
        return;
    if (s->values)
        for (size_t i = 0; i < nlabels; i++)
            common_free(s->values[i]);
    common_free(s->values);
    common_free(s->bucket_counts);
    common_free(s);
}

static void family_free(struct common_metric *f)
{
    if (!f)
        return;
    if (f->table) {
        for (size_t b = 0; b < f->nbuckets; b++) {
            struct series *s = f->table[b], *next;
            for (; s; s = next) {
                next = s->next;
                series_free(s, f->nlabels);
            }
        }
        common_free(f->table);
    }
    for (size_t i = 0; i < f->nlabels; i++)
        common_free(f->labels[i]);
    common_free(f->name);
    common_free(f->help);
    common_free(f->bounds);
    pthread_mutex_destroy(&f->mu);
    common_free(f);
}

static uint64_t hash_values(const char *const *values, size_t n)
{
    uint64_t h = 1469598103934665603ULL;

    for (size_t i = 0; i < n; i++) {
        for (const char *p = values[i]; *p; p++) {
            h ^= (unsigned char)*p;
            h *= 1099511628211ULL;
        }
        h ^= 0xff; /* separator: never a byte of valid UTF-8 */
        h *= 1099511628211ULL;
    }
    return h;
}

static int values_equal(char *const *a, const char *const *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i], b[i]) != 0)
            return 0;
    return 1;
}

static int table_grow(struct common_metric *f)
{
    size_t nb = f->nbuckets ? f->nbuckets * 2 : 8;
    struct series **t = common_calloc(nb, sizeof(*t));

    if (!t)
        return -1;
    for (size_t b = 0; b < f->nbuckets; b++) {
        struct series *s = f->table[b], *next;
        for (; s; s = next) {
            next = s->next;
            s->next = t[s->hash & (nb - 1)];
            t[s->hash & (nb - 1)] = s;
        }
    }
    common_free(f->table);
    f->table = t;
    f->nbuckets = nb;
    return 0;
}

static struct series *series_new(struct common_metric *f, const char *const *values, uint64_t h)
{
    struct series *s = common_calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->hash = h;
    if (f->nlabels) {
        s->values = common_calloc(f->nlabels, sizeof(*s->values));
        if (!s->values)
            goto fail;
        for (size_t i = 0; i < f->nlabels; i++) {
            s->values[i] = common_strdup(values[i]);
            if (!s->values[i])
                goto fail;
        }
    }
    if (f->type == MT_HISTOGRAM) {
        s->bucket_counts = common_calloc(f->nbounds + 1, sizeof(*s->bucket_counts));
        if (!s->bucket_counts)
            goto fail;
    }
    return s;
fail:
    series_free(s, f->nlabels);
    return NULL;
}

/* the series for values (created when missing); NULL when over the cap or out of memory.
 * Called with f->mu held. */
static struct series *series_get(struct common_metric *f, const char *const *values)
{
    static const char *const none[1] = {""};
    uint64_t h;
    struct series *s;

    if (f->nlabels == 0)
        values = none;
    else if (!values)
        return NULL;
    for (size_t i = 0; i < f->nlabels; i++)
        if (!values[i])
            return NULL;
    h = hash_values(values, f->nlabels);
    if (f->table)
        for (s = f->table[h & (f->nbuckets - 1)]; s; s = s->next)
            if (s->hash == h && values_equal(s->values, values, f->nlabels))
                return s;
    if (f->nseries >= COMMON_METRICS_SERIES_MAX) {
        if (!f->warned) {
            f->warned = 1;
            common_log(COMMON_LOG_WARN, "metrics: too many series, new ones dropped", "metric",
                       f->name, NULL);
        }
        return NULL;
    }
    if ((!f->table || f->nseries >= f->nbuckets * 2) && table_grow(f) != 0)
        return NULL;
    s = series_new(f, values, h);
    if (!s)
        return NULL;
    s->next = f->table[h & (f->nbuckets - 1)];
    f->table[h & (f->nbuckets - 1)] = s;
    f->nseries++;
    return s;
}

struct common_metrics *common_metrics_create(void)
{
    struct common_metrics *m = common_calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void common_metrics_destroy(struct common_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        family_free(m->fams[i]);
    common_free(m->fams);
    pthread_mutex_destroy(&m->mu);
    common_free(m);
}

/* index of name in m->fams, or -(insertion point) - 1 */
static long family_find(struct common_metrics *m, const char *name)
{
    size_t lo = 0, hi = m->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->fams[mid]->name, name);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

/* does the registered family f match what is asked for? */
static int family_matches(const struct common_metric *f, enum mtype type, const char *const *labels,
                          size_t nlabels, const double *bounds, size_t nbounds,
                          double (*fn)(void *), void *ctx)
{
    if (f->type != type || f->nlabels != nlabels || f->fn != fn || f->ctx != ctx ||
        f->nbounds != nbounds)
        return 0;
    for (size_t i = 0; i < nlabels; i++)
        if (strcmp(f->labels[i], labels[i]) != 0)
            return 0;
    for (size_t i = 0; i < nbounds; i++)
        if (f->bounds[i] != bounds[i])
            return 0;
    return 1;
}

static struct common_metric *family_register(struct common_metrics *m, enum mtype type,
                                             const char *name, const char *help,
                                             const char *const *label_names, const double *buckets,
                                             size_t nbuckets, double (*fn)(void *), void *ctx)
{
    size_t nlabels = 0;
    struct common_metric *f = NULL;
    long at;

    if (!m || !valid_metric_name(name))
        return NULL;
    for (; label_names && label_names[nlabels]; nlabels++) {
        if (nlabels == COMMON_METRICS_LABELS_MAX || !valid_label_name(label_names[nlabels]))
            return NULL;
        if (type == MT_HISTOGRAM && strcmp(label_names[nlabels], "le") == 0)
            return NULL;
        for (size_t j = 0; j < nlabels; j++)
            if (strcmp(label_names[j], label_names[nlabels]) == 0)
                return NULL;
    }
    if (type == MT_HISTOGRAM) {
        if (nbuckets && !buckets)
            return NULL;
        if (nbuckets && isinf(buckets[nbuckets - 1]) && buckets[nbuckets - 1] > 0)
            nbuckets--; /* +Inf is implied */
        for (size_t i = 0; i < nbuckets; i++)
            if (isnan(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1])))
                return NULL;
    } else {
        nbuckets = 0;
    }

    pthread_mutex_lock(&m->mu);
    at = family_find(m, name);
    if (at >= 0) {
        f = m->fams[at];
        if (!family_matches(f, type, label_names, nlabels, buckets, nbuckets, fn, ctx))
            f = NULL;
        pthread_mutex_unlock(&m->mu);
        return f;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct common_metric **p = common_realloc(m->fams, cap * sizeof(*p));
        if (!p)
            goto fail;
        m->fams = p;
        m->cap = cap;
    }
    f = common_calloc(1, sizeof(*f));
    if (!f)
        goto fail;
    pthread_mutex_init(&f->mu, NULL);
    f->type = type;
    f->fn = fn;
    f->ctx = ctx;
    f->name = common_strdup(name);
    f->help = common_strdup(help ? help : "");
    if (!f->name || !f->help)
        goto fail;
    for (; f->nlabels < nlabels; f->nlabels++) {
        f->labels[f->nlabels] = common_strdup(label_names[f->nlabels]);
        if (!f->labels[f->nlabels])
            goto fail;
    }
    if (nbuckets) {
        f->bounds = common_malloc(nbuckets * sizeof(*f->bounds));
        if (!f->bounds)
            goto fail;
        memcpy(f->bounds, buckets, nbuckets * sizeof(*f->bounds));
    }
    f->nbounds = nbuckets;
    /* a family without labels always shows its one series */
    if (!fn && nlabels == 0 && !series_get(f, NULL))
        goto fail;
    at = -at - 1;
    memmove(&m->fams[at + 1], &m->fams[at], (m->n - (size_t)at) * sizeof(*m->fams));
    m->fams[at] = f;
    m->n++;
    pthread_mutex_unlock(&m->mu);
    return f;
fail:
    pthread_mutex_unlock(&m->mu);
    family_free(f);
    return NULL;
}

struct common_metric *common_metrics_counter(struct common_metrics *m, const char *name,
                                             const char *help, const char *const *label_names)
{
    return family_register(m, MT_COUNTER, name, help, label_names, NULL, 0, NULL, NULL);
}

struct common_metric *common_metrics_gauge(struct common_metrics *m, const char *name,
                                           const char *help, const char *const *label_names)
{
    return family_register(m, MT_GAUGE, name, help, label_names, NULL, 0, NULL, NULL);
}

struct common_metric *common_metrics_histogram(struct common_metrics *m, const char *name,
                                               const char *help, const char *const *label_names,
                                               const double *buckets, size_t nbuckets)
{
    return family_register(m, MT_HISTOGRAM, name, help, label_names, buckets, nbuckets, NULL, NULL);
}

struct common_metric *common_metrics_gauge_func(struct common_metrics *m, const char *name,
                                                const char *help, double (*fn)(void *ctx),
                                                void *ctx)
{
    if (!fn)
        return NULL;
    return family_register(m, MT_GAUGE, name, help, NULL, NULL, 0, fn, ctx);
}

struct common_metric *common_metrics_counter_func(struct common_metrics *m, const char *name,
                                                  const char *help, double (*fn)(void *ctx),
                                                  void *ctx)
{
    if (!fn)
        return NULL;
    return family_register(m, MT_COUNTER, name, help, NULL, NULL, 0, fn, ctx);
}

/* ---- updates ---- */

void common_metric_add(struct common_metric *c, const char *const *label_values, double v)
{
    struct series *s;

    if (!c || c->fn || c->type == MT_HISTOGRAM)
        return;
    if (c->type == MT_COUNTER && !(v >= 0))
        return;
    pthread_mutex_lock(&c->mu);
    s = series_get(c, label_values);
    if (s)
        s->value += v;
    pthread_mutex_unlock(&c->mu);
}

void common_metric_set(struct common_metric *g, const char *const *label_values, double v)
{
    struct series *s;

    if (!g || g->fn || g->type != MT_GAUGE)
        return;
    pthread_mutex_lock(&g->mu);
    s = series_get(g, label_values);
    if (s)
        s->value = v;
    pthread_mutex_unlock(&g->mu);
}

void common_metric_observe(struct common_metric *h, const char *const *label_values, double v)
{
    struct series *s;
    size_t i = 0;

    if (!h || h->type != MT_HISTOGRAM)
        return;
    /* first bound >= v (binary search); NaN compares false everywhere and lands in +Inf */
    if (!isnan(v)) {
        size_t lo = 0, hi = h->nbounds;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (h->bounds[mid] >= v)
                hi = mid;
            else
                lo = mid + 1;
        }
        i = lo;
    } else {
        i = h->nbounds;
    }
    pthread_mutex_lock(&h->mu);
    s = series_get(h, label_values);
    if (s) {
        s->bucket_counts[i]++;
        s->sum += v;
        s->count++;
    }
    pthread_mutex_unlock(&h->mu);
}

double common_metric_value(struct common_metric *c, const char *const *label_values)
{
    double v = NAN;
    struct series *s;

    if (!c)
        return NAN;
    pthread_mutex_lock(&c->mu);
    if (c->fn) {
        v = c->fn(c->ctx);
    } else {
        static const char *const none[1] = {""};
        const char *const *vals = c->nlabels ? label_values : none;
        int ok = vals != NULL;
        for (size_t i = 0; ok && i < c->nlabels; i++)
            ok = vals[i] != NULL;
        if (ok && c->table) {
            uint64_t h = hash_values(vals, c->nlabels);
            for (s = c->table[h & (c->nbuckets - 1)]; s; s = s->next)
                if (s->hash == h && values_equal(s->values, vals, c->nlabels)) {
                    v = c->type == MT_HISTOGRAM ? (double)s->count : s->value;
                    break;
                }
        }
    }
    pthread_mutex_unlock(&c->mu);
    return v;
}

/* ---- rendering ---- */

char *common_metrics_format_value(double v, char *out, size_t out_size)
{
    if (isnan(v)) {
        snprintf(out, out_size, "NaN");
    } else if (isinf(v)) {
        snprintf(out, out_size, v > 0 ? "+Inf" : "-Inf");
    } else if (v == 0) {
        snprintf(out, out_size, "0"); /* also -0 */
    } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(out, out_size, "%.0f", v);
    } else {
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(out, out_size, "%.*g", prec, v);
            if (strtod(out, NULL) == v)
                break;
        }
    }
    return out;
}

/* an appender that stops at the first error and remembers it */
struct out {
    struct common_buf *b;
    enum common_rc rc;
};

static void out_add(struct out *o, const char *s, size_t n)
{
    if (o->rc == COMMON_OK)
        o->rc = common_buf_append(o->b, s, n, NULL);
}

static void out_puts(struct out *o, const char *s)
{
    out_add(o, s, strlen(s));
}

static void out_value(struct out *o, double v)
{
    char num[64];

    out_puts(o, common_metrics_format_value(v, num, sizeof(num)));
}

/* length of the valid UTF-8 sequence at s (1..4), or 0 when invalid (RFC 3629) */
static size_t utf8_len(const unsigned char *s)
{
    size_t n;
    unsigned c = s[0];
    uint32_t cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* s escaped: backslash and newline always, double quote when quote is set (label values);
 * invalid UTF-8 bytes become '?' */
static void out_escaped(struct out *o, const char *s, int quote)
{
    const unsigned char *p = (const unsigned char *)s, *run = p;

    while (*p) {
        const char *rep = NULL;
        size_t n = 1;
        if (*p == '\\')
            rep = "\\\\";
        else if (*p == '\n')
            rep = "\\n";
        else if (*p == '"' && quote)
            rep = "\\\"";
        else if ((n = utf8_len(p)) == 0)
            rep = "?", n = 1;
        if (rep) {
            out_add(o, (const char *)run, (size_t)(p - run));
            out_puts(o, rep);
            p += n;
            run = p;
        } else {
            p += n;
        }
    }
    out_add(o, (const char *)run, (size_t)(p - run));
}

/* "{a="x",b="y"" without the closing brace; nothing when there are no labels */
static void out_labels_open(struct out *o, const struct common_metric *f, const struct series *s)
{
    for (size_t i = 0; i < f->nlabels; i++) {
        out_puts(o, i == 0 ? "{" : ",");
        out_puts(o, f->labels[i]);
        out_puts(o, "=\"");
        out_escaped(o, s->values[i], 1);
        out_puts(o, "\"");
    }
}

static void out_sample(struct out *o, const struct common_metric *f, const char *suffix,
                       const struct series *s, double v)
{
    out_puts(o, f->name);
    out_puts(o, suffix);
    out_labels_open(o, f, s);
    if (f->nlabels)
        out_puts(o, "}");
    out_puts(o, " ");
    out_value(o, v);
    out_puts(o, "\n");
}

static _Thread_local size_t sort_nlabels; /* for cmp_series: qsort has no context */

static int cmp_series(const void *a, const void *b)
{
    const struct series *x = *(const struct series *const *)a;
    const struct series *y = *(const struct series *const *)b;

    for (size_t i = 0; i < sort_nlabels; i++) {
        int c = strcmp(x->values[i], y->values[i]);
        if (c)
            return c;
    }
    return 0;
}

static const char *type_name(enum mtype t)
{
    return t == MT_COUNTER ? "counter" : t == MT_GAUGE ? "gauge" : "histogram";
}

/* one family; called with the registry lock held */
static void render_family(struct out *o, struct common_metric *f)
{
    struct series **all = NULL;
    size_t n = 0;

    pthread_mutex_lock(&f->mu);
    if (!f->fn && f->nseries == 0)
        goto out;
    if (f->help[0]) {
        out_puts(o, "# HELP ");
        out_puts(o, f->name);
        out_puts(o, " ");
        out_escaped(o, f->help, 0);
        out_puts(o, "\n");
    }
    out_puts(o, "# TYPE ");
    out_puts(o, f->name);
    out_puts(o, " ");
    out_puts(o, type_name(f->type));
    out_puts(o, "\n");
    if (f->fn) {
        out_puts(o, f->name);
        out_puts(o, " ");
        out_value(o, f->fn(f->ctx));
        out_puts(o, "\n");
        goto out;
    }
    all = common_malloc(f->nseries * sizeof(*all));
    if (!all) {
        if (o->rc == COMMON_OK)
            o->rc = COMMON_ENOMEM;
        goto out;
    }
    for (size_t b = 0; b < f->nbuckets; b++)
        for (struct series *s = f->table[b]; s; s = s->next)
            all[n++] = s;
    sort_nlabels = f->nlabels;
    qsort(all, n, sizeof(*all), cmp_series);
    for (size_t i = 0; i < n && o->rc == COMMON_OK; i++) {
        struct series *s = all[i];
        uint64_t cum = 0;
        if (f->type != MT_HISTOGRAM) {
            out_sample(o, f, "", s, s->value);
            continue;
        }
        for (size_t k = 0; k <= f->nbounds; k++) {
            cum += s->bucket_counts[k];
            out_puts(o, f->name);
            out_puts(o, "_bucket");
            out_labels_open(o, f, s);
            out_puts(o, f->nlabels ? ",le=\"" : "{le=\"");
            out_value(o, k < f->nbounds ? f->bounds[k] : INFINITY);
            out_puts(o, "\"} ");
            out_value(o, (double)cum);
            out_puts(o, "\n");
        }
        out_sample(o, f, "_sum", s, s->sum);
        out_sample(o, f, "_count", s, (double)s->count);
    }
out:
    pthread_mutex_unlock(&f->mu);
    common_free(all);
}

enum common_rc common_metrics_render(struct common_metrics *m, struct common_buf *out)
{
    struct out o = {out, COMMON_OK};

    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n && o.rc == COMMON_OK; i++)
        render_family(&o, m->fams[i]);
    pthread_mutex_unlock(&m->mu);
    return o.rc;
}

/* ---- the process collector ---- */

/* the whole small file at path into buf (NUL-terminated); its length, or -1 */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0;

    if (fd < 0)
        return -1;
    while (len + 1 < size) {
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

static double proc_cpu_seconds(void *ctx)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return NAN;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* field (0 = size, 1 = resident) of /proc/self/statm, in bytes */
static double statm_bytes(int field)
{
    char buf[256];
    unsigned long long v[2];
    long page = sysconf(_SC_PAGESIZE);

    if (read_small("/proc/self/statm", buf, sizeof(buf)) <= 0 || page <= 0 ||
        sscanf(buf, "%llu %llu", &v[0], &v[1]) != 2)
        return NAN;
    return (double)v[field] * (double)page;
}

static double proc_resident(void *ctx)
{
    return statm_bytes(1);
}

static double proc_virtual(void *ctx)
{
    return statm_bytes(0);
}

static double start_time = NAN;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;

/* starttime (field 22 of /proc/self/stat, clock ticks after boot) plus btime of /proc/stat */
static void start_time_init(void)
{
    char buf[2048], line[256];
    const char *p;
    unsigned long long ticks = 0, btime = 0;
    long hz = sysconf(_SC_CLK_TCK);
    FILE *f;
    int at_start = 1, found = 0;

    if (read_small("/proc/self/stat", buf, sizeof(buf)) <= 0 || hz <= 0)
        return;
    p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (!p)
        return;
    p++;
    for (int field = 3; field < 22; field++) { /* skip fields 3..21 */
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
    }
    if (sscanf(p, " %llu", &ticks) != 1)
        return;
    f = fopen("/proc/stat", "re");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) { /* lines can be longer than line: track starts */
        if (at_start && sscanf(line, "btime %llu", &btime) == 1) {
            found = 1;
            break;
        }
        at_start = strchr(line, '\n') != NULL;
    }
    fclose(f);
    if (found)
        start_time = (double)btime + (double)ticks / (double)hz;
}

static double proc_start_time(void *ctx)
{
    pthread_once(&start_once, start_time_init);
    return start_time;
}

static double proc_open_fds(void *ctx)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    double n = 0;

    if (!d)
        return NAN;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n > 0 ? n - 1 : 0; /* the directory's own descriptor */
}

static double proc_max_fds(void *ctx)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return NAN;
    return rl.rlim_cur == RLIM_INFINITY ? INFINITY : (double)rl.rlim_cur;
}

enum common_rc common_metrics_process(struct common_metrics *m)
{
    if (!common_metrics_counter_func(m, "process_cpu_seconds_total",
                                     "Total user and system CPU time spent in seconds.",
                                     proc_cpu_seconds, NULL) ||
        !common_metrics_gauge_func(m, "process_resident_memory_bytes",
                                   "Resident memory size in bytes.", proc_resident, NULL) ||
        !common_metrics_gauge_func(m, "process_virtual_memory_bytes",
                                   "Virtual memory size in bytes.", proc_virtual, NULL) ||
        !common_metrics_gauge_func(m, "process_start_time_seconds",
                                   "Start time of the process since unix epoch in seconds.",
                                   proc_start_time, NULL) ||
        !common_metrics_gauge_func(m, "process_open_fds", "Number of open file descriptors.",
                                   proc_open_fds, NULL) ||
        !common_metrics_gauge_func(m, "process_max_fds", "Maximum number of open file descriptors.",
                                   proc_max_fds, NULL))
        return COMMON_ENOMEM;
    return COMMON_OK;
}
