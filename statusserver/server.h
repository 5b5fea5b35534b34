/*
 * statusserver/server.h - the TrainJob status server (Kubeflow Trainer's TrainJobStatus
 * feature): an HTTPS server of its own (Trainer's port 10443) where training code POSTs its
 * progress and metrics; every decision is statusserver/core.h's.
 *
 * A request that core can answer at once (413, 404, 403 without a Bearer token) is answered on
 * the HTTP thread. Any other is held (common_httpd_hold: no thread waits on it) and queued to a
 * few worker threads, which create the TokenReview, then server-side apply the status with
 * field manager "trainer-status" (force) through the server's own API client, and release the
 * request with core's answer. At most SS_SERVER_QUEUE_MAX requests wait for a worker; more are
 * answered 503 at once. Every replica serves it (no leader election), as in Trainer.
 *
 * A token the review accepted is remembered for 30 s for that TrainJob (SHA-256 of token,
 * namespace and name; 512 slots reused in turn), so a training loop's later reports skip the
 * TokenReview and cost one API call, the write, as with Trainer's local token verification; a
 * token revoked meanwhile is accepted until then.
 *
 * Metrics: trainsched_trainer_status_requests_total{code} (answers by HTTP status),
 * trainsched_trainer_status_token_reviews_total{result} (allowed, refused, failed, cached). Logs: a
 * refused request (4xx) at warn with the reason (for 403, why the token was refused; the
 * client only hears "Forbidden"), a failure (5xx) at error, a write at debug.
 *
 * Source: Kubeflow Trainer v2.3.0 pkg/statusserver (server.go, setup.go: a client of its own,
 * QPS 5 and burst 10 by default; read and write timeouts of 10 s).
 */
#ifndef STATUSSERVER_SERVER_H
#define STATUSSERVER_SERVER_H

#include "common/error.h"
#include "common/kube.h"
#include "common/metrics.h"

#define SS_SERVER_QUEUE_MAX 1024

struct ss_server_opts {
    struct common_kube *kube;       /* borrowed, outlives the server: TokenReviews and applies */
    struct common_metrics *metrics; /* MAY be NULL */
    const char *address;            /* "host:port"; default ":10443" */
    const char *tls_cert_file;      /* the serving pair (the webhook's); both required */
    const char *tls_key_file;
    unsigned workers; /* threads calling the API server; default 4 */
};

struct ss_server;

/*
 * ss_server_create - a server for opts (strings copied), not yet listening. Returns NULL with
 * err set: COMMON_EINVAL (no API client, no TLS pair, bad address), COMMON_ENOMEM.
 */
struct ss_server *ss_server_create(const struct ss_server_opts *opts, struct common_error *err);

/* ss_server_start - start the workers and listen. Returns COMMON_OK or common_httpd_start's
 * errors (a port in use: COMMON_EIO naming the address). */
enum common_rc ss_server_start(struct ss_server *s, struct common_error *err);

/* ss_server_port - the bound port (after start), else -1. */
int ss_server_port(const struct ss_server *s);

/* ss_server_reload_tls - re-read the certificate files (common_httpd_reload_tls). */
enum common_rc ss_server_reload_tls(struct ss_server *s, struct common_error *err);

/*
 * ss_server_destroy - stop listening, answer the requests still queued 503, let the workers
 * finish the ones they hold (each at most the API client's timeout), join them and free. NULL is
 * a no-op.
 */
void ss_server_destroy(struct ss_server *s);

#endif
