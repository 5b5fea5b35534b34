/*
 * common/metrics.h - a thread-safe metrics registry rendered in the Prometheus text format.
 *
 * A struct common_metrics holds metric families (counters, gauges, histograms and gauges or
 * counters whose value a callback reads at render time). A family has up to four label names;
 * each distinct tuple of label values is one series, created on its first update and kept until
 * the registry is destroyed (at most COMMON_METRICS_SERIES_MAX per family: updates that would
 * create more are dropped, with one warning in the log). Families are created once at start and
 * updated from any thread; each family has its own lock, so updates to different families never
 * contend, and rendering takes each family's lock only while that family is written out.
 *
 * common_metrics_render writes the text exposition format 0.0.4 (what Prometheus scrapes with
 * Content-Type "text/plain; version=0.0.4; charset=utf-8"): families sorted by name, each with
 * "# HELP" (backslash and newline escaped) and "# TYPE" lines, then its series sorted by label
 * values. Label values are escaped (backslash, double quote, newline; invalid UTF-8 bytes become
 * '?'). Numbers: integral values below 2^53 in magnitude print without exponent or point
 * ("1000000"), others with the shortest "%g" form that reads back exactly ("0.1", "1e+300"),
 * infinities as "+Inf"/"-Inf" and NaN as "NaN". A histogram series prints cumulative
 * name_bucket{...,le="<bound>"} lines ending with le="+Inf", then name_sum and name_count. A
 * family with labels but no series yet prints nothing (as client_golang does); one without
 * labels always prints its single series (0 before any update).
 *
 * Source: https://prometheus.io/docs/instrumenting/exposition_formats/ (text format 0.0.4),
 * https://prometheus.io/docs/concepts/data_model/ (name grammar), client_golang's process
 * collector for the process_* metrics.
 */
#ifndef COMMON_METRICS_H
#define COMMON_METRICS_H

#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"

struct common_metrics; /* a registry */
struct common_metric;  /* one family; owned by its registry */

/* the most label names of one family */
#define COMMON_METRICS_LABELS_MAX 4
/* the most series of one family; updates creating more are dropped */
#define COMMON_METRICS_SERIES_MAX 10000
/* the Content-Type of common_metrics_render's output */
#define COMMON_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* common_metrics_create - an empty registry; NULL when out of memory. */
struct common_metrics *common_metrics_create(void);

/*
 * common_metrics_destroy - free the registry and every family in it (their pointers become
 * invalid). No update or render may be running. NULL is a no-op.
 */
void common_metrics_destroy(struct common_metrics *m);

/*
 * common_metrics_counter / gauge - register a family, or find the one already registered.
 * name: [a-zA-Z_:][a-zA-Z0-9_:]*; help: any text (copied; NULL = ""); label_names: a
 * NULL-terminated array of at most 4 names matching [a-zA-Z_][a-zA-Z0-9_]* and not starting
 * with "__", no duplicates; NULL or empty for none. Registering a name again returns the
 * existing family when its type and label names (in order) are the same, else NULL. Returns NULL
 * on a bad name, a mismatch or no memory.
 */
struct common_metric *common_metrics_counter(struct common_metrics *m, const char *name,
                                             const char *help, const char *const *label_names);
struct common_metric *common_metrics_gauge(struct common_metrics *m, const char *name,
                                           const char *help, const char *const *label_names);

/*
 * common_metrics_histogram - register a histogram with the upper bounds buckets[0..nbuckets)
 * (strictly ascending, no NaN; a final +Inf may be given or left out: it is always implied).
 * The label name "le" is reserved. Same returns as common_metrics_counter; registering again
 * also needs the same bounds.
 */
struct common_metric *common_metrics_histogram(struct common_metrics *m, const char *name,
                                               const char *help, const char *const *label_names,
                                               const double *buckets, size_t nbuckets);

/*
 * common_metrics_gauge_func / counter_func - a family without labels whose value is fn(ctx),
 * called at render time under the family's lock (fn must not call into this registry). ctx is
 * borrowed and must outlive the registry. Registering the same name again returns the existing
 * family if it has the same type, fn and ctx, else NULL.
 */
struct common_metric *common_metrics_gauge_func(struct common_metrics *m, const char *name,
                                                const char *help, double (*fn)(void *ctx),
                                                void *ctx);
struct common_metric *common_metrics_counter_func(struct common_metrics *m, const char *name,
                                                  const char *help, double (*fn)(void *ctx),
                                                  void *ctx);

/*
 * Updates. label_values: as many strings as the family has label names (NULL when it has none);
 * they are copied when a new series is created. All are no-ops when the metric is NULL, has
 * another type, or label_values is NULL/holds a NULL for a labelled family.
 *
 * common_metric_add - counter: add v (ignored unless v >= 0); gauge: add v (any sign).
 * common_metric_set - gauge: set to v.
 * common_metric_observe - histogram: count v in the first bucket whose bound >= v (NaN counts
 * only in +Inf), add it to _sum and 1 to _count.
 */
void common_metric_add(struct common_metric *c, const char *const *label_values, double v);
void common_metric_set(struct common_metric *g, const char *const *label_values, double v);
void common_metric_observe(struct common_metric *h, const char *const *label_values, double v);

/*
 * common_metric_value - the current value of a counter or gauge series (the histogram's count
 * for a histogram; fn(ctx) for a func family), or NaN when the series does not exist. For
 * tests and for code that reports the same number elsewhere.
 */
double common_metric_value(struct common_metric *c, const char *const *label_values);

/*
 * common_metrics_render - append the exposition text of every family to out. Returns COMMON_OK,
 * or COMMON_ETOOBIG (out's max reached) / COMMON_ENOMEM, in which case out holds a partial text
 * the caller must not serve.
 */
enum common_rc common_metrics_render(struct common_metrics *m, struct common_buf *out);

/*
 * common_metrics_process - register client_golang's process collector, read from /proc at
 * render time: process_cpu_seconds_total (counter, user + system CPU, getrusage),
 * process_resident_memory_bytes and process_virtual_memory_bytes (gauges, /proc/self/statm),
 * process_start_time_seconds (gauge, Unix seconds, from /proc/self/stat and btime in
 * /proc/stat), process_open_fds (gauge, entries of /proc/self/fd) and process_max_fds (gauge,
 * RLIMIT_NOFILE soft limit). A value that cannot be read renders as NaN. Returns COMMON_OK or
 * COMMON_ENOMEM; calling it twice is harmless.
 */
enum common_rc common_metrics_process(struct common_metrics *m);

/*
 * common_metrics_format_value - v as the format writes it (see the top of this file) into out
 * (at least 32 bytes); returns out. Pure.
 */
char *common_metrics_format_value(double v, char *out, size_t out_size);

#endif
