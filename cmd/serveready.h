/*
 * cmd/serveready.h - serve's /readyz decision for the reconciler (pure).
 *
 * The reconciler check of /readyz (docs/serve.md, "Endpoints and metrics") passes on a
 * replica that must not run the reconciler (a standby of leader election: it serves what needs
 * no Lease), and on one that must run it only once it really runs with its caches synced.
 * Until then it fails and says why: still starting, or the last start failed and with what
 * error (serve retries it every second). serve fills the state from its own flags under its
 * lock and calls this from the health server's thread.
 */
#ifndef CMD_SERVEREADY_H
#define CMD_SERVEREADY_H

#include <stddef.h>

struct serve_reconciler_state {
    int should_run;          /* leader election off, or this replica holds the Lease */
    int running;             /* rc_start succeeded and rc_destroy has not been called */
    int synced;              /* its informers have listed (rc_synced) */
    const char *start_error; /* the last failed start's error, NULL or "" when none */
};

/*
 * serve_ready_reconciler - 0 ready, 1 not ready with the reason into why (why_size bytes,
 * truncated to fit; NUL-terminated when why_size > 0). Not ready: should_run and (not running,
 * or running with caches not synced). No I/O.
 */
int serve_ready_reconciler(const struct serve_reconciler_state *s, char *why, size_t why_size);

#endif
