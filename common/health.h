/*
 * common/health.h - /healthz, /livez, /readyz and /metrics on a common_httpd.
 *
 * common_health_install adds these GET routes (HEAD too) to a server before it starts:
 *   /healthz, /livez  200 "ok" while the process serves at all;
 *   /readyz           200 "ok" when every readiness check passes, else 503 with one line per
 *                     check, as kube-apiserver writes it:
 *                         [+]informers ok
 *                         [-]leader failed: not the leader yet
 *                         readyz check failed
 *                     "?verbose" lists the checks on success too (ending "readyz check
 *                     passed"); "?exclude=<name>" (repeatable) skips a check;
 *   /readyz/<name>    one check: 200 "ok" or 503 "[-]<name> failed: <why>"; 404 for an unknown
 *                     name;
 *   /metrics          common_metrics_render with Content-Type
 *                     "text/plain; version=0.0.4; charset=utf-8" (only when a registry is
 *                     given; 500 when rendering fails).
 * Checks may be added at any time (also while serving); they run on the server's threads, in the
 * order added, under the health object's lock (a check must not add checks), so each should
 * answer from memory in microseconds (a flag an informer sets, a lease's expiry).
 *
 * Source: Kubernetes "Kubernetes API health endpoints" (kube-apiserver /readyz output).
 */
#ifndef COMMON_HEALTH_H
#define COMMON_HEALTH_H

#include <stddef.h>

#include "common/error.h"

struct common_httpd;
struct common_metrics;
struct common_health;

/* the most characters of a check's reason; longer ones are cut */
#define COMMON_HEALTH_WHY_MAX 256

/*
 * A readiness check: return 0 when ready; otherwise nonzero with a one-line reason written to
 * why (why_size bytes, NUL-terminated; may be left empty).
 */
typedef int (*common_health_check)(void *ctx, char *why, size_t why_size);

/*
 * common_health_install - add the routes above to h (not yet started). m may be NULL (no
 * /metrics); it is borrowed and must outlive the server. *out receives the health object, which
 * the caller destroys after the server is stopped. Returns COMMON_OK, COMMON_EINVAL (the server
 * has started already, or no memory for the first route; *out is NULL) or COMMON_ENOMEM (some
 * routes were added: *out is set and must be destroyed as usual).
 */
enum common_rc common_health_install(struct common_httpd *h, struct common_metrics *m,
                                     struct common_health **out, struct common_error *err);

/*
 * common_health_add_check - add a readiness check named name ([a-z0-9-] and '.', 1..63
 * characters, unique), with ctx borrowed. Thread-safe. Returns 0, or -1 (bad or duplicate name,
 * no memory).
 */
int common_health_add_check(struct common_health *hh, const char *name, common_health_check check,
                            void *ctx);

/* common_health_destroy - free; the server must be stopped (its routes point here). NULL ok. */
void common_health_destroy(struct common_health *hh);

#endif
