/*
 * bench/benchutil.c - /proc readers shared by the benchmarks (see benchutil.h).
 */
#include "benchutil.h"

#include "common/error.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

long bench_status_kb(const char *field)
{
    return bench_pid_status_kb(0, field);
}

long bench_pid_status_kb(long pid, const char *field)
{
    char path[64], line[256];
    size_t n = strlen(field);
    long v = -1;
    FILE *f;

    if (pid > 0)
        snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    else
        snprintf(path, sizeof(path), "/proc/self/status");
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

void bench_reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

long bench_bed_pid(const char *name)
{
    const char *run = getenv("TESTBED_RUN");
    char path[1024];
    FILE *f;
    long pid = 0;

    if (!run)
        return 0;
    snprintf(path, sizeof(path), "%s/pids/%s.pid", run, name);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    return pid;
}

double bench_proc_cpu(long pid)
{
    char path[64], buf[2048], *p;
    FILE *f;
    size_t n;
    unsigned long ut = 0, st = 0;

    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* after the command name: state is field 3, utime 14, stime 15 */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

double bench_machine_busy(void)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    double busy = -1;

    if (!f)
        return -1;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
               &v[5], &v[6], &v[7]) == 8)
        busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
    fclose(f);
    return busy;
}

void bench_loadavg(char *out, size_t size)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double a = 0, b = 0, c = 0;

    if (f) {
        if (fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3)
            a = b = c = 0;
        fclose(f);
    }
    snprintf(out, size, "%.2f %.2f %.2f", a, b, c);
}

double bench_thread_cpu(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double bench_process_cpu(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

double bench_median(const double *v, long n)
{
    double *c, m;

    if (n <= 0 || !(c = malloc((size_t)n * sizeof(*c))))
        return 0;
    memcpy(c, v, (size_t)n * sizeof(*c));
    qsort(c, (size_t)n, sizeof(*c), bench_cmp_double);
    m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

long bench_flag_long(const char *prog, int argc, char **argv, int *i, long lo, long hi)
{
    char *end;
    long v;

    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", prog, argv[*i]);
        exit(2);
    }
    errno = 0;
    v = strtol(argv[*i + 1], &end, 10);
    if (errno || *end || end == argv[*i + 1] || v < lo || v > hi) {
        fprintf(stderr, "%s: %s: want an integer in %ld..%ld, got \"%s\"\n", prog, argv[*i], lo, hi,
                argv[*i + 1]);
        exit(2);
    }
    (*i)++;
    return v;
}

struct bench_par {
    long next, to, ok, failed;
    int (*one)(long i, void *ctx, struct common_error *err);
    void *ctx;
    pthread_mutex_t lock;
    char *first_err;
    size_t size;
};

static void *bench_par_worker(void *arg)
{
    struct bench_par *p = arg;

    for (;;) {
        long i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        struct common_error err;
        int rc;

        if (i >= p->to)
            break;
        err.msg[0] = '\0';
        rc = p->one(i, p->ctx, &err);
        if (rc == COMMON_OK || rc == COMMON_EEXISTS) {
            __atomic_add_fetch(&p->ok, 1, __ATOMIC_RELAXED);
        } else {
            pthread_mutex_lock(&p->lock);
            if (p->failed++ == 0 && p->first_err && p->size)
                snprintf(p->first_err, p->size, "%s", err.msg);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

double bench_parallel(long from, long to, long threads,
                      int (*one)(long i, void *ctx, struct common_error *err), void *ctx, long *ok,
                      long *failed, char *first_err, size_t size)
{
    pthread_t th[64];
    struct bench_par p;
    struct timespec t0, t1;
    long n = threads < 1 ? 1 : threads > 64 ? 64 : threads, started = 0;

    memset(&p, 0, sizeof(p));
    pthread_mutex_init(&p.lock, NULL);
    p.next = from;
    p.to = to;
    p.one = one;
    p.ctx = ctx;
    p.first_err = first_err;
    p.size = size;
    if (first_err && size)
        first_err[0] = '\0';
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long t = 0; t < n; t++)
        if (pthread_create(&th[started], NULL, bench_par_worker, &p) == 0)
            started++;
    if (!started)
        bench_par_worker(&p);
    for (long t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_mutex_destroy(&p.lock);
    if (ok)
        *ok = p.ok;
    if (failed)
        *failed = p.failed;
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}
