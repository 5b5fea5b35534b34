/*
 * cmd/snapshot.h - the read-only cluster snapshot of `trainsched simulate --from-cluster` and
 * `trainsched explain --what-if` (glue: API lists only; sim/snapshot.c turns it into a
 * simulation input).
 */
#ifndef CMD_SNAPSHOT_H
#define CMD_SNAPSHOT_H

#include <stdio.h>

#include "common/kube.h"
#include "common/kubeconfig.h"
#include "sim/sim.h"

/* The lists read, each an items array (trimmed to what a simulation reads) or NULL when the
 * kind is not served; snap points into them. */
struct cmd_snapshot {
    json_t *lists[8];
    struct sim_snapshot snap;
};

/*
 * cmd_snapshot_take - list Nodes, Pods (all namespaces), PodGroups (scheduling.x-k8s.io),
 * ResourceSlices and ResourceClaims (resource.k8s.io/v1), TrainJobs, TrainingRuntimes and
 * ClusterTrainingRuntimes through k, `limit`/`continue` pages of 500, with a progress line per
 * kind on progress (objects read; a line a second while a kind pages). A kind the cluster does
 * not serve is left NULL with a line on progress. now_ms and assume_run_ms go into snap.
 * Returns 0; or 1 with a message on err prefixed with prog: a forbidden list names the
 * verb, the resource and the ClusterRole that grants it; any other failure the resource and
 * the API's message. Free with cmd_snapshot_free (also after a failure).
 */
int cmd_snapshot_take(struct common_kube *k, int64_t now_ms, int64_t assume_run_ms,
                      const char *prog, FILE *progress, FILE *err, struct cmd_snapshot *out);

/* cmd_snapshot_free - release the lists of s (each NULL or a JSON array) and zero it (s not
 * NULL). Safe after a failed cmd_snapshot_take and twice. */
void cmd_snapshot_free(struct cmd_snapshot *s);

/*
 * cmd_snapshot_report - take the snapshot through k (now), simulate it with the topologies
 * topos[0..nt) (NAME=LEVEL,... as simulate's --topology) and put the report
 * (sim_report_json) in *report (a new reference). Progress on err. Returns 0; or an exit
 * status with a message on err (1: the cluster could not be read, out of memory; 2: a bad
 * --topology).
 */
int cmd_snapshot_report(struct common_kube *k, int64_t assume_run_ms, const char *const *topos,
                        size_t nt, const char *prog, FILE *err, json_t **report);

/* cmd_kubeconfig - the client configuration of the CLI's reading commands: path given, else
 * in-cluster (no context given, KUBERNETES_SERVICE_HOST set), else $KUBECONFIG or
 * ~/.kube/config; context NULL = current-context. Errors as common_kubeconfig_load. */
enum common_rc cmd_kubeconfig(const char *path, const char *context, struct common_kubeconfig *kc,
                              struct common_error *e);

/* cmd_snapshot_now_ms - the wall clock in Unix ms (the snapshot's time) */
int64_t cmd_snapshot_now_ms(void);

#endif
