/*
 * tests/tools/slurm/slurmbed.c - see slurmbed.h.
 */
#include "slurmbed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOOLS TS_SOURCE_DIR "/tests/tools/slurm"

static void set_int(const char *key, int v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", v);
    setenv(key, buf, 1);
}

int slurmbed_up(struct slurmbed *b, const char *name, int base, int nodes, int cpus)
{
    char cmd[1024], line[8192];
    FILE *p;

    memset(b, 0, sizeof(*b));
    snprintf(b->dir, sizeof(b->dir), "/tmp/%s-%d", name, (int)getpid());
    setenv("SLURM_IT_DIR", b->dir, 1);
    set_int("SLURM_IT_REST_PORT", base);
    set_int("SLURM_IT_CTLD_PORT", base + 1);
    set_int("SLURM_IT_SLURMD_PORT", base + 2);
    set_int("SLURM_IT_NODES", nodes);
    set_int("SLURM_IT_CPUS", cpus);
    snprintf(cmd, sizeof(cmd), "bash %s/slurm-up.sh", TOOLS);
    p = popen(cmd, "r");
    if (!p)
        return -1;
    while (fgets(line, sizeof(line), p)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "export SLURM_REST_URL=", 22) == 0)
            snprintf(b->url, sizeof(b->url), "%s", line + 22);
        else if (strncmp(line, "export SLURM_JWT=", 17) == 0)
            snprintf(b->jwt, sizeof(b->jwt), "%s", line + 17);
    }
    return pclose(p) == 0 && b->url[0] && b->jwt[0] ? 0 : -1;
}

void slurmbed_down(const struct slurmbed *b)
{
    char cmd[1024];

    if (!b->dir[0])
        return;
    snprintf(cmd, sizeof(cmd), "SLURM_IT_DIR='%s' bash %s/slurm-down.sh --purge >/dev/null 2>&1",
             b->dir, TOOLS);
    if (system(cmd) != 0)
        fprintf(stderr, "slurm-down.sh failed for %s\n", b->dir);
}
