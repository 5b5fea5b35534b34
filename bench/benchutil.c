/*
 * bench/benchutil.c - /proc readers shared by the benchmarks (see benchutil.h).
 */
#include "benchutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

long bench_status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(field);
    long v = -1;

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
