/*
 * bench/benchutil.h - small /proc readers every benchmark under bench/ shares (Linux only).
 * Not a test: the figures they feed are printed by each bench_*.c, never asserted.
 */
#ifndef BENCH_BENCHUTIL_H
#define BENCH_BENCHUTIL_H

/* bench_status_kb - a field of /proc/self/status in kB ("VmRSS", "VmHWM"); -1 when absent or
 * unreadable. */
long bench_status_kb(const char *field);

/* bench_reset_peak - reset VmHWM to the current RSS (/proc/self/clear_refs "5", Linux >= 4.0);
 * silently nothing where unsupported. */
void bench_reset_peak(void);

/* bench_bed_pid - the pid of the test bed's process `name` ("kube-apiserver", "etcd") from
 * $TESTBED_RUN/pids/<name>.pid (tests/e2e/testbed/up.sh writes them); 0 when unknown. */
long bench_bed_pid(const char *name);

/* bench_proc_cpu - user + system CPU seconds of process pid (/proc/<pid>/stat fields 14 and
 * 15 over _SC_CLK_TCK); -1 for pid <= 0 or an unreadable file. */
double bench_proc_cpu(long pid);

#endif
