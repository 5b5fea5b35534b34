/*
 * common/httpd.h - the HTTP/1.1 server of trainsched (libmicrohttpd), with a route table.
 *
 * A struct common_httpd listens on one address (plain HTTP, or HTTPS through libmicrohttpd's
 * GnuTLS backend, TLS 1.2 and 1.3 only) and dispatches each complete request to the handler of
 * the route that matches its path and method. Handlers run on the server's threads
 * (opts.threads of them, each an epoll loop over its share of the connections) and fill in a
 * response: status (default 200), content type (default "text/plain; charset=utf-8"), a body in
 * a bounded buffer and extra headers. A handler that blocks stalls the other connections of its
 * thread, so handlers answer from memory (decision cores, caches) and never wait on the network.
 * The server answers by itself:
 *   404 "404 page not found" when no route matches the path;
 *   405 with an Allow header when routes match the path but none the method (a GET route also
 *       serves HEAD, whose body libmicrohttpd leaves out);
 *   413 when the body is over opts.max_body: at once when Content-Length says so (the body is
 *       never read), else once the body has been read and discarded; a client that sends more
 *       than twice the cap is disconnected instead;
 *   500 when the handler's response cannot be built (no memory, body over max_response);
 *   400/414/431 and connection limits: libmicrohttpd itself (malformed requests, request line
 *       or headers over the 32 KiB per-connection memory, more than opts.max_connections
 *       connections; a connection idle for connection_timeout_s seconds is closed).
 * Chunked request bodies are accepted and reassembled into req->body.
 *
 * Sockets: the server binds and listens itself and one acceptor thread hands each accepted
 * connection to the current libmicrohttpd daemon (MHD_add_connection). That is what makes
 * certificate rotation clean: common_httpd_reload_tls starts a new daemon with the new
 * certificate and key and makes it current; the old one finishes what it has (its responses
 * carry "Connection: close") and is stopped by the acceptor thread once its last request is done
 * and its connections are closed or idle (at most HTTPD_RETIRE_MAX_S, ten minutes, later,
 * unless it still holds requests: see below).
 *
 * Held requests (gang binds): a handler calls common_httpd_hold instead of answering; once the
 * handler has returned, dispatch suspends the connection (MHD_suspend_connection: the daemons
 * run with MHD_ALLOW_SUSPEND_RESUME, which includes an inter-thread channel, on epoll), so a
 * held request costs an open socket and a few hundred bytes, never a thread. Any thread later
 * calls common_httpd_release: the answer is stored in the hold and MHD_resume_connection wakes
 * the connection's daemon thread, which calls the access handler again; that call finds the
 * stored answer and queues it. Resuming is only ever done after the suspension has happened
 * (libmicrohttpd 0.9.75 cancels a suspension that a resume overtook, and the request would
 * hang): a release that comes while the handler is still running stores the answer, and the
 * handler's thread sends it without suspending at all. A held request counts as in flight:
 *   - certificate reload: a retired daemon is never stopped while it has a held request (not
 *     even at HTTPD_RETIRE_MAX_S); its held requests stay held until released, answer with
 *     "Connection: close", and the daemon is stopped once it is idle;
 *   - common_httpd_stop answers every held request 503 "server stopping" first (a request held
 *     during the stop is answered so at once), then drains; libmicrohttpd cannot stop a daemon
 *     with suspended connections.
 * libmicrohttpd reports no hang-up on a suspended connection: the owner of held requests must
 * expire them itself (DESIGN.md, gang scheduling). Releasing a request whose client has gone is
 * harmless: the write fails and the connection closes.
 *
 * Source: /usr/include/microhttpd.h (libmicrohttpd 0.9.75, Debian 12), RFC 9110 (405 needs
 * Allow, 413), RFC 9112 (chunked transfer coding).
 */
#ifndef COMMON_HTTPD_H
#define COMMON_HTTPD_H

#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"

struct common_httpd;
struct MHD_Connection; /* libmicrohttpd's; private to httpd.c */

/* A request, borrowed by the handler for the length of the call. */
struct common_httpd_request {
    const char *method;       /* "GET", "POST", ... */
    const char *path;         /* percent-decoded path, without the query: "/readyz" */
    const char *query;        /* raw query string after '?', NULL when there is none */
    const char *content_type; /* the Content-Type header, NULL when absent */
    const char *body;         /* body_len bytes, NUL-terminated; "" when there is none */
    size_t body_len;
    const char *remote_addr;     /* "127.0.0.1:54321", "[::1]:54321" */
    int tls;                     /* nonzero on an HTTPS connection */
    struct MHD_Connection *conn; /* private: for common_httpd_header and _query_arg */
    void *state;                 /* private: the server's request state (common_httpd_hold) */
};

/*
 * A response, filled in by the handler. body is an empty buffer with max = opts.max_response;
 * content_type is borrowed until the handler returns (a string literal is usual). Extra headers
 * go in through common_httpd_set_header.
 */
struct common_httpd_response {
    int status;               /* 0 = 200 */
    const char *content_type; /* NULL = "text/plain; charset=utf-8" */
    struct common_buf body;
    struct common_buf headers; /* private: "name\0value\0" pairs */
};

typedef void (*common_httpd_handler)(void *ctx, const struct common_httpd_request *req,
                                     struct common_httpd_response *resp);

struct common_httpd_opts {
    const char *address;       /* "host:port", ":port" (all addresses, IPv6 and IPv4), "[::1]:port";
                                  port 0 = pick a free one (see common_httpd_port); default ":8080" */
    const char *tls_cert_file; /* PEM certificate, optionally followed by its chain */
    const char *tls_key_file;  /* PEM private key; both NULL = plain HTTP */
    size_t max_body;           /* largest request body; default 3 MiB */
    size_t max_response;       /* largest response body a handler may build; default 64 MiB */
    unsigned threads;          /* server threads; default 2 (plus one acceptor thread) */
    unsigned connection_timeout_s; /* idle connections close after this, and a request whose
                                      body is still arriving after this long is dropped (a
                                      client trickling bytes); default 30 */
    unsigned max_connections;      /* open connections at once; default 2048 */
    long drain_ms; /* common_httpd_stop waits this long for requests in flight; default 10000 */
};

/* common_httpd_opts_default - the defaults listed above (no address override, no TLS). */
struct common_httpd_opts common_httpd_opts_default(void);

/*
 * common_httpd_create - a server with no routes, not yet listening. opts (NULL = defaults; zero
 * fields take the default) and its strings are copied. The address is parsed here; the TLS
 * files are read at common_httpd_start. Returns NULL with err set: COMMON_EINVAL (bad address,
 * only one of cert and key given), COMMON_ENOMEM.
 */
struct common_httpd *common_httpd_create(const struct common_httpd_opts *opts,
                                         struct common_error *err);

/*
 * common_httpd_route - add a route (before common_httpd_start). method: "GET", "POST", ... or
 * NULL for any; path: exact ("/healthz"), or a prefix when it ends in '*' ("/debug*" matches
 * "/debug",
 * "/debug/x" and "/debugger": end the prefix in '/' to match a subtree only). For a request the
 * most specific matching path wins (exact before the longest prefix), then the first route added
 * with that path whose method fits. ctx is borrowed and must outlive the server. Returns 0, or -1
 * (bad path or method, already started, no memory).
 */
int common_httpd_route(struct common_httpd *h, const char *method, const char *path,
                       common_httpd_handler fn, void *ctx);

/*
 * common_httpd_start - read the TLS files (when set), bind, listen and start serving. Returns
 * COMMON_OK, COMMON_EIO ("listen <address>: <strerror>", e.g. when the port is taken),
 * COMMON_ENOTFOUND / COMMON_EIO (cert or key file unreadable; message names the file),
 * COMMON_EINVAL (PEM that does not parse, key not matching the certificate; message says which),
 * COMMON_ECONFLICT (already started) or COMMON_ENOMEM.
 */
enum common_rc common_httpd_start(struct common_httpd *h, struct common_error *err);

/* common_httpd_port - the bound port (after start; the chosen one when the address had port
 * 0), or -1 before start. */
int common_httpd_port(const struct common_httpd *h);

/*
 * common_httpd_reload_tls - re-read the certificate and key files and serve new connections
 * with them; connections already open keep the old ones until they close. On any error the old
 * certificate stays in use. Returns COMMON_OK, COMMON_EUNSUPPORTED (a plain HTTP server),
 * COMMON_ECONFLICT (not started, or stopping), or the file and PEM errors of common_httpd_start.
 * Thread-safe with serving; not with itself (one caller, e.g. the certificate rotator).
 */
enum common_rc common_httpd_reload_tls(struct common_httpd *h, struct common_error *err);

/*
 * common_httpd_stop - stop accepting (the listening socket is closed at once), answer every held
 * request 503 "server stopping" (common_httpd_hold), let requests in flight finish for up to
 * opts.drain_ms (their responses carry "Connection: close"), then close every connection and
 * join the server's threads. Holds not yet released stay valid until released or destroyed. A no-op
 * when not started or already stopped. Must not be called from a handler.
 */
void common_httpd_stop(struct common_httpd *h);

/* common_httpd_destroy - stop (see above) and free, holds not yet released included. NULL is a
 * no-op. */
void common_httpd_destroy(struct common_httpd *h);

/* One held request: made by common_httpd_hold, answered by common_httpd_release. */
struct common_httpd_hold;

/*
 * common_httpd_hold - in a handler: hold this request instead of answering now. After the
 * handler returns, the connection is suspended (no thread waits on it) until
 * common_httpd_release. resp's status and body are then ignored; headers added to resp with
 * common_httpd_set_header before the handler returns are sent with the eventual answer. Calling
 * it again for the same request returns the same hold. While common_httpd_stop runs, the hold
 * is made already answered (503, see common_httpd_release). Returns the hold, owned by the
 * caller until it passes it to common_httpd_release (exactly once), or NULL when out of memory
 * or req is not a live request of this server (then answer through resp as usual).
 */
struct common_httpd_hold *common_httpd_hold(const struct common_httpd_request *req,
                                            struct common_httpd_response *resp);

/*
 * common_httpd_release - answer held request hd and give the hold back: exactly once per hold,
 * from any thread (concurrently with other releases, new requests and the handler that held it,
 * whose return then sends the answer), never after common_httpd_destroy. status: 100..599;
 * content_type: NULL = "text/plain; charset=utf-8"; body: len bytes (NULL when len is 0); both
 * are copied. Returns COMMON_OK (answer queued; when the client has gone, the write fails
 * silently), COMMON_ECONFLICT (common_httpd_stop had begun, or the request came on a retired
 * daemon being stopped: it was answered 503 "server stopping" and this answer is dropped),
 * COMMON_EINVAL (hd NULL, bad status, NULL body with len > 0, CR or LF in content_type),
 * COMMON_ETOOBIG (len over opts.max_response) or COMMON_ENOMEM; on the last three (hd not NULL)
 * the request is answered 500 "500 internal server error". In every case but hd NULL the hold
 * is consumed: its memory is freed once both this call and the request are done.
 */
enum common_rc common_httpd_release(struct common_httpd_hold *hd, int status,
                                    const char *content_type, const void *body, size_t len);

/* common_httpd_held - requests held now: made by common_httpd_hold and not yet answered (by
 * release or stop). For metrics; a snapshot, any thread. 0 for NULL. */
size_t common_httpd_held(const struct common_httpd *h);

/*
 * common_httpd_header - the value of request header name (case-insensitive; the first one when
 * repeated), or NULL. Valid for the handler call.
 */
const char *common_httpd_header(const struct common_httpd_request *req, const char *name);

/*
 * common_httpd_query_arg - the percent-decoded value of query argument name ("" for a bare
 * "?verbose"), or NULL when absent. Valid for the handler call.
 */
const char *common_httpd_query_arg(const struct common_httpd_request *req, const char *name);

/*
 * common_httpd_set_header - add a response header (e.g. "Retry-After", "5"). name: an HTTP
 * token; value: no CR, LF or NUL. Content-Type goes through resp->content_type, and
 * Content-Length, Transfer-Encoding, Connection and Date are the server's. Returns COMMON_OK,
 * COMMON_EINVAL or COMMON_ETOOBIG (over 16 KiB of extra headers) / COMMON_ENOMEM.
 */
enum common_rc common_httpd_set_header(struct common_httpd_response *resp, const char *name,
                                       const char *value);

/*
 * common_httpd_respondf - set status and a text/plain body from a printf format (the body is
 * replaced). For short messages: errors, "ok". Returns what common_buf_printf does.
 */
enum common_rc common_httpd_respondf(struct common_httpd_response *resp, int status,
                                     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
