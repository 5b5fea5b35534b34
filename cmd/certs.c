/*
 * cmd/certs.c - `trainsched certs`: write a CA and a serving certificate for a Service into a
 * folder, for clusters that manage the webhook's and extender's certificates themselves
 * (serve's leader can manage them in the cluster instead; docs/certs.md).
 *
 * Glue only: flags, files and the summary; the certificates are common/certs'. Nothing is
 * written until every certificate is made, every file is checked, and each file is written
 * under a temporary name and then renamed (or linked, without --force), so a failure never
 * leaves a half-written file and two runs never overwrite each other silently.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "common/alloc.h"
#include "common/arena.h"
#include "common/certs.h"

#define MAX_NAMES 64
#define MAX_FILE (1 << 20)

static const char usage[] =
    "Usage: trainsched certs --service NAME --namespace NS --out DIR\n"
    "                        [--ca-lifetime DURATION] [--lifetime DURATION]\n"
    "                        [--dns NAME]... [--ip ADDR]... [--ca-cert FILE --ca-key FILE]\n"
    "                        [--force]\n"
    "\n"
    "Write a CA (ca.crt, ca.key) and a serving certificate signed by it (tls.crt, tls.key)\n"
    "into DIR, for trainsched's admission webhooks and scheduler extender. Keys are ECDSA\n"
    "P-256; the serving certificate names NAME, NAME.NS, NAME.NS.svc and\n"
    "NAME.NS.svc.cluster.local, then every --dns and --ip. Prints the caBundle to put in the\n"
    "webhook configurations. Private keys are written with mode 0600.\n"
    "\n"
    "Options:\n"
    "      --service NAME          the Service in front of trainsched (required)\n"
    "  -n, --namespace NS          its namespace (required)\n"
    "  -o, --out DIR               where to write the files (created if missing; required)\n"
    "      --ca-lifetime DURATION  lifetime of a new CA (default 87600h, 10 years)\n"
    "      --lifetime DURATION     lifetime of the serving certificate (default 8760h, 1 year;\n"
    "                              never past the CA's end)\n"
    "      --dns NAME              one more DNS name (e.g. localhost); repeatable\n"
    "      --ip ADDR               an IP address (e.g. 127.0.0.1 for an extender on\n"
    "                              localhost); repeatable\n"
    "      --ca-cert FILE          sign with this existing CA instead of making one (with\n"
    "      --ca-key FILE           --ca-key; both are copied to DIR unchanged)\n"
    "      --force                 overwrite files that already exist in DIR\n"
    "  -h, --help                  this help\n"
    "\n"
    "DURATION is a number with a unit, s, m, h or d, or several (\"8760h\", \"90d\", \"1h30m\").\n"
    "Renew the serving certificate before two thirds of its life have passed: run again with\n"
    "--ca-cert DIR/ca.crt --ca-key DIR/ca.key --force.\n"
    "\n"
    "Exit status: 0 written; 2 bad usage or input (the message names the flag or file), or a\n"
    "file exists and --force was not given; 1 internal error (out of memory, writing failed).\n";

static const char *const file_names[4] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
static const mode_t file_modes[4] = {0644, 0600, 0644, 0600};

struct certs_opts {
    const char *service, *ns, *dir, *ca_cert, *ca_key;
    int64_t ca_lifetime, lifetime;
    const char *dns[MAX_NAMES], *ips[MAX_NAMES];
    size_t ndns, nips;
    int force;
    int ca_lifetime_set;
};

/* the whole file path (at most MAX_FILE bytes, no NUL inside) into the arena; returns 0, 1 (out
 * of memory) or 2 (cannot read: message printed) */
static int read_input(struct common_arena *a, const char *flag, const char *path, char **out,
                      FILE *err)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;

    if (!f) {
        fprintf(err, "error: %s %s: %s\n", flag, path, strerror(errno));
        return 2;
    }
    buf = common_arena_alloc(a, MAX_FILE + 1);
    if (!buf) {
        fclose(f);
        fprintf(err, "error: out of memory\n");
        return 1;
    }
    n = fread(buf, 1, MAX_FILE + 1, f);
    if (ferror(f) || n > MAX_FILE || memchr(buf, '\0', n)) {
        fprintf(err, "error: %s %s: %s\n", flag, path,
                ferror(f)      ? "read failed"
                : n > MAX_FILE ? "over 1 MiB"
                               : "not a PEM text file");
        fclose(f);
        return 2;
    }
    fclose(f);
    buf[n] = '\0';
    *out = buf;
    return 0;
}

/* mkdir -p dir, new folders 0700 (they hold private keys); 0 or -1 with errno */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    struct stat st;

    if (n == 0 || n >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return -1;
        path[i] = i < n ? '/' : '\0';
    }
    if (stat(dir, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* 1 when path exists and holds exactly data */
static int same_content(const char *path, const char *data)
{
    FILE *f = fopen(path, "rb");
    size_t want = strlen(data), got;
    char *buf;
    int same = 0;

    if (!f)
        return 0;
    buf = common_malloc(want + 1);
    if (buf) {
        got = fread(buf, 1, want + 1, f);
        same = got == want && memcmp(buf, data, want) == 0;
        common_free(buf);
    }
    fclose(f);
    return same;
}

/* write data to dir/name with mode through a temporary file; without force, never replace an
 * existing file (link fails with EEXIST). Returns 0, or -1 with the message printed. */
static int write_one(const char *dir, const char *name, const char *data, mode_t mode, int force,
                     FILE *err)
{
    char final[4200], tmp[4200];
    size_t n = strlen(data);
    int fd, rc = -1;

    snprintf(final, sizeof(final), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name);
    fd = mkstemp(tmp); /* mode 0600 */
    if (fd < 0) {
        fprintf(err, "error: %s: %s\n", final, strerror(errno));
        return -1;
    }
    if (fchmod(fd, mode) != 0 || write(fd, data, n) != (ssize_t)n || fsync(fd) != 0) {
        fprintf(err, "error: writing %s: %s\n", final, strerror(errno));
        close(fd);
        goto out;
    }
    if (close(fd) != 0) {
        fprintf(err, "error: writing %s: %s\n", final, strerror(errno));
        goto out;
    }
    if (force ? rename(tmp, final) : link(tmp, final)) {
        fprintf(err, "error: %s: %s%s\n", final, strerror(errno),
                errno == EEXIST ? " (use --force to overwrite)" : "");
        goto out;
    }
    rc = 0;
out:
    unlink(tmp); /* after rename it is gone already; after link it is the second name */
    return rc;
}

static int parse_flags(int argc, char **argv, struct certs_opts *o, FILE *out, FILE *err)
{
    enum { O_SERVICE = 256, O_CA_LIFE, O_LIFE, O_DNS, O_IP, O_CA_CERT, O_CA_KEY, O_FORCE };
    static const struct option longopts[] = {{"service", required_argument, NULL, O_SERVICE},
                                             {"namespace", required_argument, NULL, 'n'},
                                             {"out", required_argument, NULL, 'o'},
                                             {"ca-lifetime", required_argument, NULL, O_CA_LIFE},
                                             {"lifetime", required_argument, NULL, O_LIFE},
                                             {"dns", required_argument, NULL, O_DNS},
                                             {"ip", required_argument, NULL, O_IP},
                                             {"ca-cert", required_argument, NULL, O_CA_CERT},
                                             {"ca-key", required_argument, NULL, O_CA_KEY},
                                             {"force", no_argument, NULL, O_FORCE},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct common_error e;
    int opt;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":n:o:h", longopts, NULL)) != -1) {
        switch (opt) {
        case O_SERVICE:
            o->service = optarg;
            break;
        case 'n':
            o->ns = optarg;
            break;
        case 'o':
            o->dir = optarg;
            break;
        case O_CA_LIFE:
        case O_LIFE:
            if (common_certs_parse_duration(optarg, opt == O_LIFE ? &o->lifetime : &o->ca_lifetime,
                                            &e)) {
                fprintf(err, "error: %s: %s\n", opt == O_LIFE ? "--lifetime" : "--ca-lifetime",
                        e.msg);
                return 2;
            }
            if (opt == O_CA_LIFE)
                o->ca_lifetime_set = 1;
            break;
        case O_DNS:
        case O_IP:
            if ((opt == O_DNS ? o->ndns : o->nips) >= MAX_NAMES) {
                fprintf(err, "error: %s: at most %d\n", opt == O_DNS ? "--dns" : "--ip", MAX_NAMES);
                return 2;
            }
            if (opt == O_DNS)
                o->dns[o->ndns++] = optarg;
            else
                o->ips[o->nips++] = optarg;
            break;
        case O_CA_CERT:
            o->ca_cert = optarg;
            break;
        case O_CA_KEY:
            o->ca_key = optarg;
            break;
        case O_FORCE:
            o->force = 1;
            break;
        case 'h':
            fputs(usage, out);
            return -1;
        case ':':
            fprintf(err, "error: option %s needs a value\n%s", argv[optind - 1], usage);
            return 2;
        default:
            fprintf(err, "error: unknown option %s\n%s", argv[optind - 1], usage);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(err, "error: unexpected argument \"%s\"\n%s", argv[optind], usage);
        return 2;
    }
    if (!o->service || !o->ns || !o->dir) {
        fprintf(err, "error: %s is required\n%s",
                !o->service ? "--service"
                : !o->ns    ? "--namespace"
                            : "--out",
                usage);
        return 2;
    }
    if (!o->ca_cert != !o->ca_key) {
        fprintf(err, "error: %s needs %s: give the CA's certificate and key together\n",
                o->ca_cert ? "--ca-cert" : "--ca-key", o->ca_cert ? "--ca-key" : "--ca-cert");
        return 2;
    }
    if (o->ca_cert && o->ca_lifetime_set) {
        fprintf(err, "error: --ca-lifetime is for a new CA; it cannot change --ca-cert's\n");
        return 2;
    }
    return 0;
}

static int print_summary(struct common_arena *a, const struct certs_opts *o,
                         const struct common_certs_pair *ca, int ca_new,
                         const struct common_certs_pair *tls, FILE *out, FILE *err)
{
    struct common_certs_info ci, ti;
    struct common_error e;
    char ca_end[32] = "?", tls_end[32] = "?";
    char *b64;

    if (common_certs_info(a, ca->cert_pem, &ci, &e) ||
        common_certs_info(a, tls->cert_pem, &ti, &e)) {
        fprintf(err, "error: %s\n", e.msg);
        return 1;
    }
    b64 = common_certs_base64(a, ca->cert_pem, strlen(ca->cert_pem));
    if (!b64) {
        fprintf(err, "error: out of memory\n");
        return 1;
    }
    common_certs_format_time(ci.not_after, ca_end, sizeof(ca_end));
    common_certs_format_time(ti.not_after, tls_end, sizeof(tls_end));
    fprintf(out, "wrote %s/ca.crt, %s/ca.key, %s/tls.crt, %s/tls.key\n", o->dir, o->dir, o->dir,
            o->dir);
    fprintf(out, "CA:        %s (%s, %s), valid until %s\n", ci.subject, ca_new ? "new" : "reused",
            ci.key, ca_end);
    fprintf(out, "serving:   %s (%s), issuer %s, valid until %s\n", ti.subject, ti.key, ti.issuer,
            tls_end);
    fprintf(out, "DNS names: %s\n", ti.dns);
    if (ti.ips[0])
        fprintf(out, "IPs:       %s\n", ti.ips);
    if (ti.not_after == ci.not_after)
        fprintf(out, "note:      the serving certificate ends with its CA (the CA's end came "
                     "before --lifetime)\n");
    fprintf(out,
            "caBundle (clientConfig.caBundle of the webhook configurations; base64 of "
            "ca.crt):\n%s\n",
            b64);
    if (fflush(out)) {
        fprintf(err, "error: writing the output failed\n");
        return 1;
    }
    return 0;
}

int cmd_certs(int argc, char **argv, FILE *out, FILE *err)
{
    struct certs_opts o = {0};
    struct common_arena *a = NULL;
    struct common_certs_pair ca = {NULL, NULL}, tls = {NULL, NULL};
    struct common_certs_names names;
    struct common_error e;
    const char *data[4];
    int status, skip[4] = {0, 0, 0, 0};
    int64_t now = (int64_t)time(NULL);
    enum common_rc rc;

    o.ca_lifetime = COMMON_CERTS_CA_LIFETIME_DEFAULT;
    o.lifetime = COMMON_CERTS_SERVING_LIFETIME_DEFAULT;
    status = parse_flags(argc, argv, &o, out, err);
    if (status)
        return status < 0 ? 0 : status;
    a = common_arena_create(0);
    if (!a) {
        fprintf(err, "error: out of memory\n");
        return 1;
    }
    names.service = o.service;
    names.namespace = o.ns;
    names.dns = o.dns;
    names.ndns = o.ndns;
    names.ips = o.ips;
    names.nips = o.nips;
    if (o.ca_cert) {
        struct common_certs_info ci;
        const char *end;
        if ((status = read_input(a, "--ca-cert", o.ca_cert, &ca.cert_pem, err)) ||
            (status = read_input(a, "--ca-key", o.ca_key, &ca.key_pem, err)))
            goto out;
        if (common_certs_pair_check(&ca, 1, "--ca-cert/--ca-key", &e) ||
            common_certs_info(a, ca.cert_pem, &ci, &e)) {
            fprintf(err, "error: %s\n", e.msg);
            status = e.code == COMMON_ENOMEM ? 1 : 2;
            goto out;
        }
        end = strstr(ca.cert_pem, "-----END");
        if (end && strstr(end + 1, "-----BEGIN")) {
            fprintf(err,
                    "error: --ca-cert %s: holds more than one PEM block; give the CA "
                    "certificate alone\n",
                    o.ca_cert);
            status = 2;
            goto out;
        }
    } else {
        char cn[64];
        snprintf(cn, sizeof(cn), "trainsched-ca@%lld", (long long)now);
        if ((rc = common_certs_make_ca(a, cn, now, o.ca_lifetime, &ca, &e))) {
            fprintf(err, "error: --ca-lifetime: %s\n", e.msg);
            status = rc == COMMON_EINVAL ? 2 : 1;
            goto out;
        }
    }
    rc = common_certs_make_serving(a, &ca, &names, now, o.lifetime, &tls, &e);
    if (rc) {
        fprintf(err, "error: %s\n", e.msg);
        status = rc == COMMON_EINVAL ? 2 : 1;
        goto out;
    }
    data[0] = ca.cert_pem;
    data[1] = ca.key_pem;
    data[2] = tls.cert_pem;
    data[3] = tls.key_pem;
    if (make_dirs(o.dir) != 0) {
        fprintf(err, "error: --out %s: %s\n", o.dir, strerror(errno));
        status = 1;
        goto out;
    }
    /* check every file before writing any: a refused run writes nothing */
    for (int i = 0; i < 4; i++) {
        char path[4200];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", o.dir, file_names[i]);
        if (lstat(path, &st) != 0)
            continue;
        if (i < 2 && o.ca_cert && same_content(path, data[i])) {
            skip[i] = 1; /* the reused CA is already there (renewing in place) */
            continue;
        }
        if (!o.force) {
            fprintf(err, "error: %s exists: use --force to overwrite it\n", path);
            status = 2;
            goto out;
        }
    }
    for (int i = 0; i < 4; i++) {
        if (skip[i])
            continue;
        if (write_one(o.dir, file_names[i], data[i], file_modes[i], o.force, err)) {
            status = 1;
            goto out;
        }
    }
    status = print_summary(a, &o, &ca, o.ca_cert == NULL, &tls, out, err);
out:
    common_arena_destroy(a);
    return status;
}
