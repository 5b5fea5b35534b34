/*
 * tests/tools/slurm/slurmbed.h - a throwaway Slurm cluster for the C tests and benchmarks:
 * slurm-up.sh / slurm-down.sh (this folder) run with private ports and a private directory, so
 * several can run side by side. Needs root; slurm-up.sh installs Debian's packages when missing.
 */
#ifndef SLURMBED_H
#define SLURMBED_H

#include <stddef.h>

struct slurmbed {
    char dir[256];  /* SLURM_IT_DIR: config, state, logs (run/slurmrestd.pid) */
    char url[128];  /* slurmrestd base URL, http://127.0.0.1:<port> */
    char jwt[4096]; /* a root token for 24 h */
};

/*
 * slurmbed_up - start nodes slurmd nodes (n1..nN) of cpus CPUs each, slurmctld and slurmrestd on
 * ports base (REST), base+1 (slurmctld), base+2.. (slurmd), in /tmp/<name>-<pid>. Fills b.
 * Returns 0, or -1 (slurm-up.sh failed: its log tails are on stderr, nothing is left running).
 */
int slurmbed_up(struct slurmbed *b, const char *name, int base, int nodes, int cpus);

/* slurmbed_down - cancel every job, stop the daemons, delete the directory. */
void slurmbed_down(const struct slurmbed *b);

#endif
