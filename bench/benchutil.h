/*
 * bench/benchutil.h - the small helpers the benchmarks under bench/ share: /proc readers
 * (Linux only), CPU clocks and medians. Not a test: the figures they feed are printed by each
 * bench_*.c, never asserted.
 */
#include <stddef.h>
#ifndef BENCH_BENCHUTIL_H
#define BENCH_BENCHUTIL_H

/* bench_status_kb - a field of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 when absent or
 * unreadable. */
long bench_status_kb(const char *field);

/* bench_pid_status_kb - as bench_status_kb for process pid (/proc/<pid>/status; pid 0: this
 * process); -1 when absent or unreadable (the process has exited). */
long bench_pid_status_kb(long pid, const char *field);

/* bench_reset_peak - reset VmHWM to the current RSS (/proc/self/clear_refs "5", Linux >= 4.0);
 * silently nothing where unsupported. */
void bench_reset_peak(void);

/* bench_bed_pid - the pid of the test bed's process `name` ("kube-apiserver", "etcd") from
 * $TESTBED_RUN/pids/<name>.pid (tests/e2e/testbed/up.sh writes them); 0 when unknown. */
long bench_bed_pid(const char *name);

/* bench_proc_cpu - user + system CPU seconds of process pid (/proc/<pid>/stat fields 14 and
 * 15 over _SC_CLK_TCK); -1 for pid <= 0 or an unreadable file. */
double bench_proc_cpu(long pid);

/* bench_machine_busy - CPU seconds all cores spent busy since boot (/proc/stat "cpu": user,
 * nice, system, irq, softirq, steal; idle and iowait left out); -1 when unreadable. */
double bench_machine_busy(void);

/* bench_loadavg - "1m 5m 15m" of /proc/loadavg into out (size bytes); "0.00 0.00 0.00" when
 * unreadable. */
void bench_loadavg(char *out, size_t size);

/* bench_thread_cpu - CPU seconds of the calling thread (CLOCK_THREAD_CPUTIME_ID). */
double bench_thread_cpu(void);

/* bench_process_cpu - user + system CPU seconds of this process, all threads (getrusage). */
double bench_process_cpu(void);

/* bench_cmp_double - qsort comparator for doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);

/* bench_median - the median of v[0..n), v left as it is (callers print the per-round values
 * after); 0 for n <= 0 or when no memory. */
double bench_median(const double *v, long n);

/* bench_flag_long - the integer value of flag argv[*i] (in argv[*i + 1]; *i advances past it),
 * lo..hi. A missing, malformed or out-of-range value prints "<prog>: <flag>: ..." on stderr and
 * exits 2 (benchmarks are command-line programs; bad flags end them). */
long bench_flag_long(const char *prog, int argc, char **argv, int *i, long lo, long hi);

/* bench_parallel - call one(i, ctx, err) for every i in [from, to) from threads threads (1..64),
 * each taking the next i; an answer COMMON_OK or COMMON_EEXISTS counts in *ok, any other in
 * *failed, and the first failure's message is copied to first_err (size bytes; "" when none).
 * Returns the wall seconds it took. */
struct common_error;
double bench_parallel(long from, long to, long threads,
                      int (*one)(long i, void *ctx, struct common_error *err), void *ctx, long *ok,
                      long *failed, char *first_err, size_t size);

#endif
