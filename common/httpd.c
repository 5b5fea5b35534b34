/*
 * common/httpd.c - see httpd.h.
 *
 * Shapes: a struct common_httpd owns the listening socket, the acceptor thread, the route table
 * and a list of "generations": a generation is one libmicrohttpd daemon (its own thread pool,
 * no listening socket of its own) with the TLS certificate and key it was started with. The
 * current generation receives every new connection; a reload makes a new one current and
 * retires the old one, which the acceptor thread stops once it is idle. h->mu guards the
 * generation pointers and each generation's counters (requests in flight, open connections);
 * h->cv is signalled when a counter drops, for common_httpd_stop's drain.
 *
 * Per request: libmicrohttpd's URI log callback creates a struct req_state (the raw query, the
 * body buffer) and counts the request in flight; the access handler is called once when the
 * headers are in, once per piece of body, and once at the end, when the route runs; the
 * completion callback frees the state and uncounts it.
 *
 * Held requests (httpd.h): a struct common_httpd_hold is on h->holds from common_httpd_hold
 * until it is freed, which happens once both references are gone: the owner's (release called)
 * and the server's (the request completed), whichever goes second frees it, under h->mu. Its
 * flags (h->mu): answered (an answer is stored: by release, or 503 by stop), suspended
 * (MHD_suspend_connection has returned), resumed (someone has decided to resume, or that no
 * suspension will happen). Only the party that sets resumed calls MHD_resume_connection, and
 * only after suspended is set, because libmicrohttpd 0.9.75 cancels a suspension that a
 * resume overtook (internal_suspend_connection_) and the request would then hang. The
 * connection cannot close while suspended, so the pointer stays valid until that call.
 * gen.held counts holds whose connection is or may become suspended and whose resume call has
 * not returned: a generation is never stopped while it is nonzero (MHD_stop_daemon panics on a
 * suspended connection), and a generation being stopped (gen.stopping, h->stopping) only gets
 * holds that are answered 503 already, which are never suspended.
 */
#include "common/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/log.h"

#define HTTPD_RETIRE_MAX_S 600        /* a retired generation is stopped at the latest then */
#define HTTPD_CONN_MEMORY (32 * 1024) /* per-connection memory: request line and headers */
#define HTTPD_HEADERS_MAX (16 * 1024) /* extra response headers of one response */
#define HTTPD_PEM_MAX (1024 * 1024)   /* largest certificate or key file */
#define HTTPD_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define HTTPD_TEXT "text/plain; charset=utf-8"
#define HTTPD_STOPPING_TEXT "503 server stopping\n"
#define HTTPD_ERROR_TEXT "500 internal server error\n"

struct route {
    char *method; /* NULL = any */
    char *path;   /* without the trailing '*' of a prefix route */
    size_t len;
    int prefix;
    common_httpd_handler fn;
    void *ctx;
};

struct gen {
    struct common_httpd *h;
    struct MHD_Daemon *mhd;
    char *cert, *key; /* PEM text; kept until the daemon stops */
    size_t key_len;
    long inflight;        /* requests started, not completed (h->mu) */
    long conns;           /* open connections (h->mu) */
    long held;            /* holds maybe suspended, resume not returned (h->mu; see top) */
    int stopping;         /* the reaper is stopping it: new holds answer 503 (h->mu) */
    int retired;          /* no longer receives connections (h->mu) */
    double retired_at;    /* monotonic seconds */
    struct gen *next;     /* on h->retired */
    _Atomic int starting; /* MHD_start_daemon is running: capture its log */
    char start_log[256];
};

struct common_httpd {
    struct common_httpd_opts opts;
    char *address; /* as given, for messages */
    char *host;    /* "" = every address */
    char port[8];
    char *cert_file, *key_file;
    int tls;
    struct route *routes;
    size_t nroutes, routes_cap;
    int listen_fd;
    int wake[2]; /* pipe: wakes the acceptor */
    pthread_t acceptor;
    int acceptor_on;
    int bound_port;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    struct gen *cur;
    struct gen *retired;
    int started, stopping;
    struct common_httpd_hold *holds; /* every hold not yet freed (h->mu) */
    _Atomic size_t nheld;            /* holds not yet answered (changed under h->mu) */
};

struct common_httpd_hold {
    struct common_httpd *h;
    struct gen *g;                         /* NULL once the request completed */
    struct MHD_Connection *conn;           /* valid while the request runs */
    struct common_httpd_hold *prev, *next; /* on h->holds */
    struct common_httpd_hold *resume_next; /* common_httpd_stop's list to resume */
    int answered, suspended, resumed;      /* see the top of the file (h->mu) */
    int released, done;                    /* the owner's and the server's references are gone */
    int status;                            /* of the stored answer */
    const char *fixed;                     /* a text answer of the server's ("503 ..."), or NULL */
    char *content_type;                    /* NULL = HTTPD_TEXT */
    struct common_buf body;                /* the stored answer's body */
    struct common_buf headers;             /* the handler's extra headers, moved at its return */
};

struct req_state {
    struct gen *g;
    char *query; /* raw query, NULL when none */
    struct common_buf body;
    int seen;    /* the access handler saw the headers */
    int too_big; /* body over max_body: being discarded */
    int oom;     /* the body could not be stored */
    size_t discarded;
    struct common_httpd_hold *hold; /* common_httpd_hold made one (this thread only) */
    double started;                 /* CLOCK_MONOTONIC seconds when the request line came */
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- options and addresses ---- */

struct common_httpd_opts common_httpd_opts_default(void)
{
    struct common_httpd_opts o = {0};

    o.address = ":8080";
    o.max_body = 3 * 1024 * 1024;
    o.max_response = 64 * 1024 * 1024;
    o.threads = 2;
    o.connection_timeout_s = 30;
    o.max_connections = 2048;
    o.drain_ms = 10000;
    return o;
}

/* "host:port", ":port", "[v6]:port" into host (copied) and port */
static enum common_rc parse_address(const char *addr, char **host, char port[8],
                                    struct common_error *err)
{
    const char *colon, *hs = addr, *he;
    char *end;
    long p;

    if (addr[0] == '[') {
        he = strchr(addr, ']');
        if (!he || he[1] != ':')
            return common_error_set(err, COMMON_EINVAL, "address %s: want [ipv6]:port", addr);
        hs = addr + 1;
        colon = he + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
            return common_error_set(err, COMMON_EINVAL,
                                    "address %s: want host:port, :port or [ipv6]:port", addr);
        he = colon;
    }
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (colon[1] < '0' || colon[1] > '9' || *end || errno || p < 0 || p > 65535)
        return common_error_set(err, COMMON_EINVAL, "address %s: bad port", addr);
    snprintf(port, 8, "%ld", p);
    *host = common_strndup(hs, (size_t)(he - hs));
    if (!*host)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

static int set_cloexec_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    fl = fcntl(fd, F_GETFD);
    if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
        return -1;
    return 0;
}

/* a listening socket for one address; -1 with errno set */
static int listen_on(const struct sockaddr *sa, socklen_t len, int dual_stack)
{
    int fd = socket(sa->sa_family, SOCK_STREAM, 0), one = 1, v6only = !dual_stack, e;

    if (fd < 0)
        return -1;
    if (set_cloexec_nonblock(fd) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        (sa->sa_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) != 0) ||
        bind(fd, sa, len) != 0 || listen(fd, SOMAXCONN) != 0) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static enum common_rc do_listen(struct common_httpd *h, struct common_error *err)
{
    int e = 0;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    h->listen_fd = -1;
    if (h->host[0] == '\0') {
        struct sockaddr_in6 a6 = {0};
        struct sockaddr_in a4 = {0};
        a6.sin6_family = AF_INET6;
        a6.sin6_addr = in6addr_any;
        a6.sin6_port = htons((uint16_t)strtol(h->port, NULL, 10));
        h->listen_fd = listen_on((struct sockaddr *)&a6, sizeof(a6), 1);
        if (h->listen_fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
            a4.sin_family = AF_INET;
            a4.sin_addr.s_addr = htonl(INADDR_ANY);
            a4.sin_port = a6.sin6_port;
            h->listen_fd = listen_on((struct sockaddr *)&a4, sizeof(a4), 0);
        }
        e = errno;
    } else {
        struct addrinfo hints = {0}, *res = NULL, *ai;
        int rc;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV;
        rc = getaddrinfo(h->host, h->port, &hints, &res);
        if (rc != 0)
            return common_error_set(err, COMMON_EIO, "listen %s: %s", h->address, gai_strerror(rc));
        for (ai = res; ai && h->listen_fd < 0; ai = ai->ai_next) {
            h->listen_fd = listen_on(ai->ai_addr, ai->ai_addrlen, 0);
            if (h->listen_fd < 0)
                e = errno;
        }
        freeaddrinfo(res);
    }
    if (h->listen_fd < 0)
        return common_error_set(err, COMMON_EIO, "listen %s: %s", h->address, strerror(e));
    if (getsockname(h->listen_fd, (struct sockaddr *)&ss, &len) != 0) {
        e = errno;
        close(h->listen_fd);
        h->listen_fd = -1;
        return common_error_set(err, COMMON_EIO, "listen %s: getsockname: %s", h->address,
                                strerror(e));
    }
    h->bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    return COMMON_OK;
}

/* ---- TLS material ---- */

static int no_password(char *buf, int size, int rwflag, void *u)
{
    return 0; /* encrypted keys are not supported: never prompt on a terminal */
}

/* cert and key parse as PEM and belong together (OpenSSL; GnuTLS reads them again) */
static enum common_rc check_pem(const struct common_httpd *h, const char *cert, const char *key,
                                struct common_error *err)
{
    BIO *cb = BIO_new_mem_buf(cert, -1), *kb = BIO_new_mem_buf(key, -1);
    X509 *x = NULL;
    EVP_PKEY *k = NULL;
    enum common_rc rc = COMMON_OK;

    if (!cb || !kb) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    x = PEM_read_bio_X509(cb, NULL, no_password, NULL);
    if (!x) {
        rc = common_error_set(err, COMMON_EINVAL, "%s: no PEM certificate", h->cert_file);
        goto out;
    }
    k = PEM_read_bio_PrivateKey(kb, NULL, no_password, NULL);
    if (!k) {
        rc =
            common_error_set(err, COMMON_EINVAL, "%s: no unencrypted PEM private key", h->key_file);
        goto out;
    }
    if (X509_check_private_key(x, k) != 1)
        rc = common_error_set(err, COMMON_EINVAL, "%s: the key does not match certificate %s",
                              h->key_file, h->cert_file);
out:
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(cb);
    BIO_free(kb);
    return rc;
}

static enum common_rc read_pem(const char *path, char **out, size_t *len, struct common_error *err)
{
    struct common_buf b;
    enum common_rc rc;

    common_buf_init(&b, HTTPD_PEM_MAX);
    rc = common_buf_read_file(&b, path, err);
    if (rc != COMMON_OK) {
        common_buf_free(&b);
        return rc;
    }
    if (!b.data || memchr(b.data, '\0', b.len)) {
        common_buf_free(&b);
        return common_error_set(err, COMMON_EINVAL, "%s: not a PEM file", path);
    }
    *out = b.data;
    *len = b.len;
    return COMMON_OK;
}

/* ---- holds (all under h->mu) ---- */

static void hold_answer_fixed(struct common_httpd_hold *hd, int status, const char *text)
{
    if (!hd->answered)
        atomic_fetch_sub(&hd->h->nheld, 1);
    hd->answered = 1;
    hd->status = status;
    hd->fixed = text;
}

/* one hold of g is unsuspended for good (resume returned, or it never suspends) */
static void gen_unhold(struct gen *g)
{
    if (--g->held == 0)
        pthread_cond_broadcast(&g->h->cv);
}

static void hold_free(struct common_httpd *h, struct common_httpd_hold *hd)
{
    if (hd->prev)
        hd->prev->next = hd->next;
    else
        h->holds = hd->next;
    if (hd->next)
        hd->next->prev = hd->prev;
    if (!hd->answered)
        atomic_fetch_sub(&h->nheld, 1);
    common_free(hd->content_type);
    common_buf_free(&hd->body);
    common_buf_free(&hd->headers);
    common_free(hd);
}

/* ---- generations ---- */

static void gen_free(struct gen *g)
{
    if (!g)
        return;
    if (g->mhd)
        MHD_stop_daemon(g->mhd);
    if (g->key) {
        explicit_bzero(g->key, g->key_len);
        common_free(g->key);
    }
    common_free(g->cert);
    common_free(g);
}

__attribute__((format(printf, 2, 0))) static void on_log(void *cls, const char *fmt, va_list ap)
{
    struct gen *g = cls;
    char msg[256];
    size_t n;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    if (g->starting) {
        snprintf(g->start_log, sizeof(g->start_log), "%s", msg);
        return;
    }
    /* client-side trouble (resets, bad TLS hellos, malformed requests) is routine */
    common_log(COMMON_LOG_DEBUG, "httpd: libmicrohttpd", "detail", msg, NULL);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls);
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c);
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe);
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code);

/* a new generation: TLS material read and checked, daemon running */
static struct gen *gen_start(struct common_httpd *h, struct common_error *err)
{
    struct gen *g = common_calloc(1, sizeof(*g));
    struct MHD_OptionItem ops[16];
    size_t n = 0, cert_len = 0;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;

    if (!g) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    g->h = h;
    if (h->tls) {
        if (read_pem(h->cert_file, &g->cert, &cert_len, err) != COMMON_OK ||
            read_pem(h->key_file, &g->key, &g->key_len, err) != COMMON_OK ||
            check_pem(h, g->cert, g->key, err) != COMMON_OK)
            goto fail;
        flags |= MHD_USE_TLS;
    }
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, g};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, g};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, g};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                       (intptr_t)h->opts.connection_timeout_s, NULL};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
                                       (intptr_t)h->opts.max_connections, NULL};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                       (intptr_t)HTTPD_CONN_MEMORY, NULL};
    if (h->opts.threads > 1)
        ops[n++] =
            (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)h->opts.threads, NULL};
    if (h->tls) {
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, g->cert};
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, g->key};
        ops[n++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)HTTPD_TLS_PRIORITIES};
    }
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    g->starting = 1;
    g->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_access, g, MHD_OPTION_EXTERNAL_LOGGER,
                              on_log, g, MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
    g->starting = 0;
    if (!g->mhd) {
        common_error_set(err, h->tls ? COMMON_EINVAL : COMMON_EIO,
                         "%s: libmicrohttpd did not start%s%s", h->address,
                         g->start_log[0] ? ": " : "", g->start_log);
        goto fail;
    }
    return g;
fail:
    gen_free(g);
    return NULL;
}

/* ---- the acceptor ---- */

/* stop retired generations that are done; called by the acceptor thread only */
static void reap(struct common_httpd *h)
{
    double now = now_s();
    struct gen **pp, *g;
    char counts[48];

    pthread_mutex_lock(&h->mu);
    for (pp = &h->retired; (g = *pp) != NULL;) {
        double age = now - g->retired_at;
        /* never while it holds requests: libmicrohttpd cannot stop suspended connections */
        int done =
            g->held == 0 &&
            ((g->inflight == 0 && (g->conns == 0 || age >= (double)h->opts.connection_timeout_s)) ||
             age >= HTTPD_RETIRE_MAX_S);
        if (!done) {
            pp = &g->next;
            continue;
        }
        *pp = g->next;
        g->stopping = 1; /* a request held from now on is answered at once, never suspended */
        snprintf(counts, 24, "%ld", g->inflight);
        snprintf(counts + 24, 24, "%ld", g->conns);
        pthread_mutex_unlock(&h->mu);
        common_log(COMMON_LOG_DEBUG, "httpd: stopping a retired daemon", "address", h->address,
                   "requests", counts, "connections", counts + 24, NULL);
        gen_free(g); /* MHD_stop_daemon runs its callbacks, which take h->mu */
        pthread_mutex_lock(&h->mu);
        pp = &h->retired;
    }
    pthread_mutex_unlock(&h->mu);
}

static void accept_some(struct common_httpd *h)
{
    static double last_warn;

    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        struct gen *g;
        int fd = accept(h->listen_fd, (struct sockaddr *)&ss, &len);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* out of descriptors: back off instead of spinning on the ready socket */
                if (now_s() - last_warn > 10) {
                    last_warn = now_s();
                    common_log(COMMON_LOG_WARN, "httpd: cannot accept", "address", h->address,
                               "error", strerror(errno), NULL);
                }
                poll(NULL, 0, 100);
            }
            return;
        }
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        pthread_mutex_lock(&h->mu);
        g = h->cur;
        pthread_mutex_unlock(&h->mu);
        /* g stays valid: only this thread frees generations while the server runs */
        if (MHD_add_connection(g->mhd, fd, (struct sockaddr *)&ss, len) != MHD_YES)
            common_log(COMMON_LOG_DEBUG, "httpd: connection refused", "error", strerror(errno),
                       NULL); /* libmicrohttpd has closed fd */
    }
}

static void *acceptor_main(void *arg)
{
    struct common_httpd *h = arg;

    for (;;) {
        struct pollfd p[2] = {{h->listen_fd, POLLIN, 0}, {h->wake[0], POLLIN, 0}};
        int n = poll(p, 2, 1000), stopping;
        char drain[64];

        pthread_mutex_lock(&h->mu);
        stopping = h->stopping;
        pthread_mutex_unlock(&h->mu);
        if (stopping)
            break;
        if (n > 0 && (p[1].revents & POLLIN))
            while (read(h->wake[0], drain, sizeof(drain)) > 0)
                ;
        if (n > 0 && (p[0].revents & POLLIN))
            accept_some(h);
        reap(h);
    }
    return NULL;
}

static void wake_acceptor(struct common_httpd *h)
{
    ssize_t n = write(h->wake[1], "x", 1);
    (void)n; /* a full pipe already wakes it */
}

/* ---- public: lifecycle ---- */

struct common_httpd *common_httpd_create(const struct common_httpd_opts *opts,
                                         struct common_error *err)
{
    struct common_httpd_opts d = common_httpd_opts_default();
    struct common_httpd *h;
    pthread_condattr_t ca;

    if (!opts)
        opts = &d;
    if (!opts->tls_cert_file != !opts->tls_key_file) {
        common_error_set(err, COMMON_EINVAL, "TLS needs both a certificate and a key file");
        return NULL;
    }
    h = common_calloc(1, sizeof(*h));
    if (!h) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        return NULL;
    }
    h->listen_fd = -1;
    h->wake[0] = h->wake[1] = -1;
    h->bound_port = -1;
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    h->opts = *opts;
    h->opts.address = NULL;
    h->opts.tls_cert_file = h->opts.tls_key_file = NULL;
    if (!h->opts.max_body)
        h->opts.max_body = d.max_body;
    if (!h->opts.max_response)
        h->opts.max_response = d.max_response;
    if (!h->opts.threads)
        h->opts.threads = d.threads;
    if (!h->opts.connection_timeout_s)
        h->opts.connection_timeout_s = d.connection_timeout_s;
    if (!h->opts.max_connections)
        h->opts.max_connections = d.max_connections;
    if (h->opts.drain_ms <= 0)
        h->opts.drain_ms = d.drain_ms;
    h->address = common_strdup(opts->address ? opts->address : d.address);
    if (!h->address) {
        common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto fail;
    }
    if (parse_address(h->address, &h->host, h->port, err) != COMMON_OK)
        goto fail;
    if (opts->tls_cert_file) {
        h->tls = 1;
        h->cert_file = common_strdup(opts->tls_cert_file);
        h->key_file = common_strdup(opts->tls_key_file);
        if (!h->cert_file || !h->key_file) {
            common_error_set(err, COMMON_ENOMEM, "out of memory");
            goto fail;
        }
    }
    return h;
fail:
    common_httpd_destroy(h);
    return NULL;
}

static int valid_token(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *s)))
            return 0;
    return 1;
}

int common_httpd_route(struct common_httpd *h, const char *method, const char *path,
                       common_httpd_handler fn, void *ctx)
{
    struct route r = {0};
    size_t len;

    if (!h || !fn || !path || path[0] != '/' || (method && !valid_token(method)) || h->started)
        return -1;
    len = strlen(path);
    r.prefix = path[len - 1] == '*';
    r.len = len - (size_t)r.prefix;
    r.fn = fn;
    r.ctx = ctx;
    r.path = common_strndup(path, r.len);
    r.method = method ? common_strdup(method) : NULL;
    if (!r.path || (method && !r.method))
        goto fail;
    if (h->nroutes == h->routes_cap) {
        size_t cap = h->routes_cap ? h->routes_cap * 2 : 8;
        struct route *p = common_realloc(h->routes, cap * sizeof(*p));
        if (!p)
            goto fail;
        h->routes = p;
        h->routes_cap = cap;
    }
    h->routes[h->nroutes++] = r;
    return 0;
fail:
    common_free(r.path);
    common_free(r.method);
    return -1;
}

enum common_rc common_httpd_start(struct common_httpd *h, struct common_error *err)
{
    enum common_rc rc;
    struct gen *g;
    char port[8];

    if (h->started)
        return common_error_set(err, COMMON_ECONFLICT, "%s: already started", h->address);
    g = gen_start(h, err);
    if (!g)
        return err ? err->code : COMMON_EINVAL;
    rc = do_listen(h, err);
    if (rc != COMMON_OK)
        goto fail;
    if (pipe(h->wake) != 0 || set_cloexec_nonblock(h->wake[0]) != 0 ||
        set_cloexec_nonblock(h->wake[1]) != 0) {
        rc = common_error_set(err, COMMON_EIO, "pipe: %s", strerror(errno));
        goto fail;
    }
    h->cur = g;
    h->started = 1;
    if (pthread_create(&h->acceptor, NULL, acceptor_main, h) != 0) {
        h->cur = NULL;
        h->started = 0;
        rc = common_error_set(err, COMMON_EIO, "%s: cannot start the acceptor thread", h->address);
        goto fail;
    }
    h->acceptor_on = 1;
    snprintf(port, sizeof(port), "%d", h->bound_port);
    common_log(COMMON_LOG_INFO, "httpd: listening", "address", h->address, "port", port, "tls",
               h->tls ? "true" : "false", NULL);
    return COMMON_OK;
fail:
    gen_free(g);
    if (h->listen_fd >= 0)
        close(h->listen_fd);
    h->listen_fd = -1;
    for (int i = 0; i < 2; i++) {
        if (h->wake[i] >= 0)
            close(h->wake[i]);
        h->wake[i] = -1;
    }
    h->bound_port = -1;
    return rc;
}

int common_httpd_port(const struct common_httpd *h)
{
    return h && h->started ? h->bound_port : -1;
}

enum common_rc common_httpd_reload_tls(struct common_httpd *h, struct common_error *err)
{
    struct gen *g, *old;
    int ok;

    if (!h->tls)
        return common_error_set(err, COMMON_EUNSUPPORTED, "%s: plain HTTP, no TLS to reload",
                                h->address);
    pthread_mutex_lock(&h->mu);
    ok = h->started && !h->stopping;
    pthread_mutex_unlock(&h->mu);
    if (!ok)
        return common_error_set(err, COMMON_ECONFLICT, "%s: not serving", h->address);
    g = gen_start(h, err);
    if (!g)
        return err ? err->code : COMMON_EINVAL;
    pthread_mutex_lock(&h->mu);
    if (h->stopping) {
        pthread_mutex_unlock(&h->mu);
        gen_free(g);
        return common_error_set(err, COMMON_ECONFLICT, "%s: stopping", h->address);
    }
    old = h->cur;
    h->cur = g;
    old->retired = 1;
    old->retired_at = now_s();
    old->next = h->retired;
    h->retired = old;
    pthread_mutex_unlock(&h->mu);
    wake_acceptor(h);
    common_log(COMMON_LOG_INFO, "httpd: TLS certificate reloaded", "address", h->address, "cert",
               h->cert_file, NULL);
    return COMMON_OK;
}

void common_httpd_stop(struct common_httpd *h)
{
    struct gen *all, *g, *next;
    struct common_httpd_hold *hd, *to_resume = NULL;
    struct timespec dl;
    long busy, held;
    int timed_out = 0;

    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    if (!h->started || h->stopping) {
        pthread_mutex_unlock(&h->mu);
        return;
    }
    h->stopping = 1;
    /* answer every held request 503; from now on common_httpd_hold makes answered holds */
    for (hd = h->holds; hd; hd = hd->next) {
        if (hd->answered)
            continue;
        hold_answer_fixed(hd, 503, HTTPD_STOPPING_TEXT);
        if (hd->suspended && !hd->resumed && !hd->done) {
            hd->resumed = 1; /* not freed before the resume: it cannot complete until then */
            hd->resume_next = to_resume;
            to_resume = hd;
        }
    }
    pthread_mutex_unlock(&h->mu);
    while (to_resume) {
        struct MHD_Connection *c = to_resume->conn;
        g = to_resume->g;
        to_resume = to_resume->resume_next;
        MHD_resume_connection(c);
        pthread_mutex_lock(&h->mu);
        gen_unhold(g);
        pthread_mutex_unlock(&h->mu);
    }
    wake_acceptor(h);
    if (h->acceptor_on)
        pthread_join(h->acceptor, NULL);
    h->acceptor_on = 0;
    close(h->listen_fd);
    h->listen_fd = -1;

    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += h->opts.drain_ms / 1000;
    dl.tv_nsec += (h->opts.drain_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&h->mu);
    h->cur->next = h->retired;
    all = h->cur;
    h->cur = h->retired = NULL;
    for (;;) {
        busy = held = 0;
        for (g = all; g; g = g->next) {
            busy += g->inflight;
            held += g->held;
        }
        /* past the drain time, still wait for resumes under way (microseconds) and handlers
         * that are holding: MHD_stop_daemon must not meet a suspended connection */
        if (held == 0 && (busy == 0 || timed_out))
            break;
        if (timed_out)
            pthread_cond_wait(&h->cv, &h->mu);
        else if (pthread_cond_timedwait(&h->cv, &h->mu, &dl) == ETIMEDOUT)
            timed_out = 1;
    }
    pthread_mutex_unlock(&h->mu);
    if (busy)
        common_log(COMMON_LOG_WARN, "httpd: stopping with requests still in flight", "address",
                   h->address, NULL);
    for (g = all; g; g = next) {
        next = g->next;
        gen_free(g);
    }
    common_log(COMMON_LOG_INFO, "httpd: stopped", "address", h->address, NULL);
}

void common_httpd_destroy(struct common_httpd *h)
{
    if (!h)
        return;
    common_httpd_stop(h);
    while (h->holds) /* answered and completed; their owners never released them */
        hold_free(h, h->holds);
    for (int i = 0; i < 2; i++)
        if (h->wake[i] >= 0)
            close(h->wake[i]);
    for (size_t i = 0; i < h->nroutes; i++) {
        common_free(h->routes[i].path);
        common_free(h->routes[i].method);
    }
    common_free(h->routes);
    common_free(h->address);
    common_free(h->host);
    common_free(h->cert_file);
    common_free(h->key_file);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    common_free(h);
}

/* ---- per-connection and per-request callbacks ---- */

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct gen *g = cls;

    pthread_mutex_lock(&g->h->mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        g->conns++;
    else
        g->conns--;
    pthread_mutex_unlock(&g->h->mu);
}

static struct req_state *req_new(struct gen *g, const char *uri)
{
    struct req_state *rs = common_calloc(1, sizeof(*rs));
    const char *q = uri ? strchr(uri, '?') : NULL;

    if (!rs)
        return NULL;
    rs->g = g;
    rs->started = now_s();
    common_buf_init(&rs->body, g->h->opts.max_body);
    if (q) {
        rs->query = common_strdup(q + 1);
        if (!rs->query)
            rs->oom = 1;
    }
    pthread_mutex_lock(&g->h->mu);
    g->inflight++;
    pthread_mutex_unlock(&g->h->mu);
    return rs;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    return req_new(cls, uri);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct req_state *rs = *con_cls;
    struct gen *g = cls;

    if (!rs)
        return;
    *con_cls = NULL;
    if (rs->hold) {
        struct common_httpd_hold *hd = rs->hold;
        pthread_mutex_lock(&g->h->mu);
        if (!hd->resumed) { /* not expected: a held request completes after its resume */
            hd->resumed = 1;
            gen_unhold(g);
        }
        if (!hd->answered) /* the owner's release then answers nothing */
            hold_answer_fixed(hd, 500, HTTPD_ERROR_TEXT);
        hd->done = 1;
        hd->g = NULL;
        hd->conn = NULL;
        if (hd->released)
            hold_free(g->h, hd);
        pthread_mutex_unlock(&g->h->mu);
    }
    common_buf_free(&rs->body);
    common_free(rs->query);
    common_free(rs);
    pthread_mutex_lock(&g->h->mu);
    if (--g->inflight == 0)
        pthread_cond_broadcast(&g->h->cv);
    pthread_mutex_unlock(&g->h->mu);
}

/* queue a response built from status, content type, body (taken over; may be NULL) and extra
 * headers ("name\0value\0" pairs, may be NULL) */
static enum MHD_Result send_response(struct gen *g, struct MHD_Connection *c, int status,
                                     const char *content_type, struct common_buf *body,
                                     const struct common_buf *headers)
{
    struct MHD_Response *r;
    enum MHD_Result ret;
    int close_after;

    if (body && body->data) {
        r = MHD_create_response_from_buffer_with_free_callback(body->len, body->data, common_free);
        if (r)
            common_buf_init(body, body->max); /* the response owns the memory now */
    } else {
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    for (size_t off = 0; headers && off < headers->len;) {
        const char *name = headers->data + off, *value = name + strlen(name) + 1;
        MHD_add_response_header(r, name, value);
        off = (size_t)(value - headers->data) + strlen(value) + 1;
    }
    pthread_mutex_lock(&g->h->mu);
    close_after = g->h->stopping || g->retired;
    pthread_mutex_unlock(&g->h->mu);
    if (close_after)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_text(struct gen *g, struct MHD_Connection *c, int status,
                                 const char *text, const char *allow)
{
    struct common_buf body, headers;
    enum MHD_Result ret;

    common_buf_init(&body, strlen(text) + 1);
    common_buf_init(&headers, HTTPD_HEADERS_MAX);
    if (common_buf_puts(&body, text, NULL) != COMMON_OK ||
        (allow && common_buf_append(&headers, "Allow", 6, NULL) != COMMON_OK) ||
        (allow && common_buf_append(&headers, allow, strlen(allow) + 1, NULL) != COMMON_OK)) {
        common_buf_free(&body);
        common_buf_free(&headers);
        return MHD_NO;
    }
    ret = send_response(g, c, status, HTTPD_TEXT, &body, &headers);
    common_buf_free(&body);
    common_buf_free(&headers);
    return ret;
}

/* queue the answer stored in hold hd (on the connection's thread, after the handler returned
 * or the connection resumed) */
static enum MHD_Result send_held(struct gen *g, struct MHD_Connection *c,
                                 struct common_httpd_hold *hd)
{
    struct common_buf body, headers;
    const char *fixed;
    char *ctype;
    int status;
    enum MHD_Result ret;

    pthread_mutex_lock(&g->h->mu);
    status = hd->status;
    fixed = hd->fixed;
    ctype = hd->content_type;
    body = hd->body;
    headers = hd->headers;
    hd->content_type = NULL;
    common_buf_init(&hd->body, 0);
    common_buf_init(&hd->headers, 0);
    pthread_mutex_unlock(&g->h->mu);
    if (fixed) {
        common_buf_free(&body);
        common_buf_init(&body, strlen(fixed));
        if (common_buf_puts(&body, fixed, NULL) != COMMON_OK) {
            ret = MHD_NO;
            goto out;
        }
    }
    ret = send_response(g, c, status, fixed || !ctype ? HTTPD_TEXT : ctype, &body, &headers);
out:
    common_free(ctype);
    common_buf_free(&body);
    common_buf_free(&headers);
    return ret;
}

/* the handler held the request: suspend the connection, or answer at once when the answer is
 * already there (released while the handler returned, or 503 while stopping) */
static enum MHD_Result dispatch_held(struct gen *g, struct MHD_Connection *c,
                                     struct common_httpd_hold *hd,
                                     struct common_httpd_response *resp)
{
    struct common_httpd *h = g->h;
    int resume = 0;

    pthread_mutex_lock(&h->mu);
    hd->headers = resp->headers; /* sent with the eventual answer */
    common_buf_init(&resp->headers, HTTPD_HEADERS_MAX);
    if (hd->answered) {
        hd->resumed = 1; /* never suspended */
        gen_unhold(g);
        pthread_mutex_unlock(&h->mu);
        return send_held(g, c, hd);
    }
    pthread_mutex_unlock(&h->mu);
    /* releases that come now store their answer and leave the resume to us (suspended is 0) */
    MHD_suspend_connection(c);
    pthread_mutex_lock(&h->mu);
    hd->suspended = 1;
    if (hd->answered && !hd->resumed) { /* released meanwhile */
        hd->resumed = 1;
        resume = 1;
    }
    pthread_mutex_unlock(&h->mu);
    if (resume) {
        /* from the daemon's own thread: allowed, the resume is picked up on its next turn */
        MHD_resume_connection(c);
        pthread_mutex_lock(&h->mu);
        gen_unhold(g);
        pthread_mutex_unlock(&h->mu);
    }
    return MHD_YES;
}

static int method_fits(const struct route *r, const char *method)
{
    return !r->method || strcmp(r->method, method) == 0 ||
           (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0);
}

/* the route for path and method; NULL with *path_known set when only the method is wrong */
static const struct route *route_find(const struct common_httpd *h, const char *path,
                                      const char *method, int *path_known)
{
    const struct route *best = NULL;
    size_t best_spec = 0, plen = strlen(path);

    *path_known = 0;
    for (size_t i = 0; i < h->nroutes; i++) {
        const struct route *r = &h->routes[i];
        size_t spec;
        if (r->prefix ? strncmp(path, r->path, r->len) == 0
                      : (plen == r->len && strcmp(path, r->path) == 0))
            spec = r->prefix ? r->len + 1 : SIZE_MAX;
        else
            continue;
        *path_known = 1;
        if (method_fits(r, method) && spec > best_spec) {
            best = r;
            best_spec = spec;
        }
    }
    return best;
}

/* "GET, HEAD, POST": the methods of the routes matching path */
static void allow_list(const struct common_httpd *h, const char *path, char *out, size_t size)
{
    size_t plen = strlen(path), used = 0;
    int get = 0, head = 0;

    out[0] = '\0';
    for (size_t i = 0; i < h->nroutes; i++) {
        const struct route *r = &h->routes[i];
        size_t ml;
        int dup = 0;
        if (!r->method || !(r->prefix ? strncmp(path, r->path, r->len) == 0
                                      : (plen == r->len && strcmp(path, r->path) == 0)))
            continue;
        for (size_t j = 0; j < i && !dup; j++) /* the same method on an earlier match */
            dup = h->routes[j].method && strcmp(h->routes[j].method, r->method) == 0 &&
                  (h->routes[j].prefix
                       ? strncmp(path, h->routes[j].path, h->routes[j].len) == 0
                       : (plen == h->routes[j].len && strcmp(path, h->routes[j].path) == 0));
        get |= strcmp(r->method, "GET") == 0;
        head |= strcmp(r->method, "HEAD") == 0;
        ml = strlen(r->method);
        if (dup || used + ml + 3 > size)
            continue;
        if (used)
            memcpy(out + used, ", ", 2), used += 2;
        memcpy(out + used, r->method, ml + 1);
        used += ml;
    }
    if (get && !head && used + 7 < size)
        memcpy(out + used, ", HEAD", 7);
}

static void format_remote(struct MHD_Connection *c, char *out, size_t size)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    struct sockaddr_in v4 = {0};
    socklen_t len;

    snprintf(out, size, "unknown");
    if (!sa)
        return;
    if (sa->sa_family == AF_INET6 &&
        IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)sa)->sin6_addr)) {
        /* an IPv4 client of a dual-stack socket: show it as IPv4 */
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;
        v4.sin_family = AF_INET;
        v4.sin_port = a6->sin6_port;
        memcpy(&v4.sin_addr, &a6->sin6_addr.s6_addr[12], 4);
        sa = (const struct sockaddr *)&v4;
    }
    len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return;
    snprintf(out, size, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

static enum MHD_Result dispatch(struct gen *g, struct MHD_Connection *c, const char *url,
                                const char *method, struct req_state *rs)
{
    struct common_httpd *h = g->h;
    struct common_httpd_request req = {0};
    struct common_httpd_response resp = {0};
    const struct route *r;
    char remote[NI_MAXHOST + NI_MAXSERV + 4];
    enum MHD_Result ret;
    int path_known;

    r = route_find(h, url, method, &path_known);
    if (!r && path_known) {
        char allow[256];
        allow_list(h, url, allow, sizeof(allow));
        return send_text(g, c, 405, "405 method not allowed\n", allow);
    }
    if (!r)
        return send_text(g, c, 404, "404 page not found\n", NULL);
    format_remote(c, remote, sizeof(remote));
    req.method = method;
    req.path = url;
    req.query = rs->query;
    req.content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    req.body = rs->body.data ? rs->body.data : "";
    req.body_len = rs->body.len;
    req.remote_addr = remote;
    req.tls = h->tls;
    req.conn = c;
    req.state = rs;
    common_buf_init(&resp.body, h->opts.max_response);
    common_buf_init(&resp.headers, HTTPD_HEADERS_MAX);
    r->fn(r->ctx, &req, &resp);
    if (rs->hold) {
        ret = dispatch_held(g, c, rs->hold, &resp);
        common_buf_free(&resp.body);
        common_buf_free(&resp.headers);
        return ret;
    }
    if (resp.status == 0)
        resp.status = 200;
    if (resp.status < 100 || resp.status > 599) {
        common_log(COMMON_LOG_ERROR, "httpd: handler set a bad status", "path", url, NULL);
        ret = send_text(g, c, 500, "500 internal server error\n", NULL);
    } else {
        ret = send_response(g, c, resp.status, resp.content_type ? resp.content_type : HTTPD_TEXT,
                            &resp.body, &resp.headers);
        if (ret != MHD_YES)
            ret = send_text(g, c, 500, "500 internal server error\n", NULL);
    }
    common_buf_free(&resp.body);
    common_buf_free(&resp.headers);
    return ret;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct gen *g = cls;
    struct req_state *rs = *con_cls;
    size_t max = g->h->opts.max_body;
    char msg[128];

    if (!rs) { /* the URI callback ran out of memory */
        rs = req_new(g, NULL);
        if (!rs)
            return MHD_NO;
        *con_cls = rs;
    }
    if (rs->hold) /* called again after the resume of a held request: its answer is there */
        return send_held(g, c, rs->hold);
    if (!rs->seen) {
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        rs->seen = 1;
        if (cl) {
            char *end;
            unsigned long long n;
            errno = 0;
            n = strtoull(cl, &end, 10);
            if (end != cl && *end == '\0' && (errno == ERANGE || n > max)) {
                /* answered before the body is read: libmicrohttpd closes the connection */
                snprintf(msg, sizeof(msg),
                         "413 request body is larger than the limit of %zu bytes\n", max);
                return send_text(g, c, 413, msg, NULL);
            }
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        /* the idle timeout restarts with every byte: a client trickling its body is dropped
         * once the whole request has taken longer than connection_timeout_s */
        if (now_s() - rs->started > (double)g->h->opts.connection_timeout_s)
            return MHD_NO;
        if (!rs->too_big && !rs->oom) {
            enum common_rc rc = common_buf_append(&rs->body, upload_data, n, NULL);
            if (rc == COMMON_ETOOBIG) {
                rs->too_big = 1;
                rs->discarded = rs->body.len;
                common_buf_free(&rs->body);
            } else if (rc != COMMON_OK) {
                rs->oom = 1;
                common_buf_free(&rs->body);
            }
        }
        if (rs->too_big) {
            rs->discarded += n;
            if (rs->discarded / 2 > max)
                return MHD_NO; /* keeps sending: drop the connection */
        }
        return MHD_YES;
    }
    if (rs->too_big) {
        snprintf(msg, sizeof(msg), "413 request body is larger than the limit of %zu bytes\n", max);
        return send_text(g, c, 413, msg, NULL);
    }
    if (rs->oom)
        return send_text(g, c, 503, "503 out of memory\n", NULL);
    return dispatch(g, c, url, method, rs);
}

/* ---- public: held requests ---- */

struct common_httpd_hold *common_httpd_hold(const struct common_httpd_request *req,
                                            struct common_httpd_response *resp)
{
    struct req_state *rs = req ? req->state : NULL;
    struct common_httpd_hold *hd;
    struct common_httpd *h;

    if (!rs || !resp || !req->conn)
        return NULL;
    if (rs->hold)
        return rs->hold;
    hd = common_calloc(1, sizeof(*hd));
    if (!hd)
        return NULL;
    h = rs->g->h;
    hd->h = h;
    hd->g = rs->g;
    hd->conn = req->conn;
    common_buf_init(&hd->body, 0);
    common_buf_init(&hd->headers, 0);
    pthread_mutex_lock(&h->mu);
    hd->next = h->holds;
    if (h->holds)
        h->holds->prev = hd;
    h->holds = hd;
    rs->g->held++;
    atomic_fetch_add(&h->nheld, 1);
    if (h->stopping || rs->g->stopping)
        hold_answer_fixed(hd, 503, HTTPD_STOPPING_TEXT);
    pthread_mutex_unlock(&h->mu);
    rs->hold = hd;
    return hd;
}

enum common_rc common_httpd_release(struct common_httpd_hold *hd, int status,
                                    const char *content_type, const void *body, size_t len)
{
    struct common_httpd *h;
    struct MHD_Connection *resume = NULL;
    struct gen *g = NULL;
    struct common_buf b;
    char *ct = NULL;
    enum common_rc rc = COMMON_OK;

    if (!hd)
        return COMMON_EINVAL;
    h = hd->h;
    /* copies made before the lock; hd's memory is the server's to read under h->mu only */
    common_buf_init(&b, h->opts.max_response);
    if (status < 100 || status > 599 || (!body && len) ||
        (content_type && strpbrk(content_type, "\r\n")))
        rc = COMMON_EINVAL;
    else if (len)
        rc = common_buf_append(&b, body, len, NULL);
    if (rc == COMMON_OK && content_type && !(ct = common_strdup(content_type)))
        rc = COMMON_ENOMEM;
    pthread_mutex_lock(&h->mu);
    hd->released = 1;
    if (hd->answered) {
        rc = COMMON_ECONFLICT; /* by common_httpd_stop (or a reaped daemon): 503 went out */
    } else {
        if (rc == COMMON_OK) {
            atomic_fetch_sub(&h->nheld, 1);
            hd->answered = 1;
            hd->status = status;
            hd->content_type = ct;
            hd->body = b;
            ct = NULL;
            common_buf_init(&b, 0);
        } else {
            hold_answer_fixed(hd, 500, HTTPD_ERROR_TEXT);
        }
        if (hd->suspended && !hd->resumed && !hd->done) {
            hd->resumed = 1;
            resume = hd->conn;
            g = hd->g;
        }
    }
    if (hd->done)
        hold_free(h, hd);
    pthread_mutex_unlock(&h->mu);
    /* hd may be gone from here on; the connection stays until it has been resumed */
    common_free(ct);
    common_buf_free(&b);
    if (resume) {
        MHD_resume_connection(resume);
        pthread_mutex_lock(&h->mu);
        gen_unhold(g);
        pthread_mutex_unlock(&h->mu);
    }
    return rc;
}

size_t common_httpd_held(const struct common_httpd *h)
{
    return h ? atomic_load(&h->nheld) : 0;
}

/* ---- public: request and response helpers ---- */

const char *common_httpd_header(const struct common_httpd_request *req, const char *name)
{
    if (!req || !req->conn || !name)
        return NULL;
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *common_httpd_query_arg(const struct common_httpd_request *req, const char *name)
{
    const char *v = NULL;

    if (!req || !req->conn || !name)
        return NULL;
    if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &v,
                                      NULL) != MHD_YES)
        return NULL;
    return v ? v : "";
}

enum common_rc common_httpd_set_header(struct common_httpd_response *resp, const char *name,
                                       const char *value)
{
    static const char *const reserved[] = {"Content-Type", "Content-Length", "Transfer-Encoding",
                                           "Connection", "Date"};
    size_t before;
    enum common_rc rc;

    if (!valid_token(name) || !value || strpbrk(value, "\r\n"))
        return COMMON_EINVAL;
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcasecmp(name, reserved[i]) == 0)
            return COMMON_EINVAL;
    before = resp->headers.len;
    rc = common_buf_append(&resp->headers, name, strlen(name) + 1, NULL);
    if (rc == COMMON_OK)
        rc = common_buf_append(&resp->headers, value, strlen(value) + 1, NULL);
    if (rc != COMMON_OK && resp->headers.data) {
        resp->headers.len = before;
        resp->headers.data[before] = '\0';
    }
    return rc;
}

enum common_rc common_httpd_respondf(struct common_httpd_response *resp, int status,
                                     const char *fmt, ...)
{
    va_list ap;
    char small[256], *big;
    int n;
    enum common_rc rc;

    resp->status = status;
    resp->content_type = HTTPD_TEXT;
    common_buf_reset(&resp->body);
    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return COMMON_EINVAL;
    if ((size_t)n < sizeof(small))
        return common_buf_append(&resp->body, small, (size_t)n, NULL);
    big = common_malloc((size_t)n + 1);
    if (!big)
        return COMMON_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rc = common_buf_append(&resp->body, big, (size_t)n, NULL);
    common_free(big);
    return rc;
}
