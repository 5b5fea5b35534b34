/*
 * cmd/trainerdetect.h - is Kubeflow Trainer's own controller running in this cluster?
 *
 * trainsched's reconciler and Kubeflow Trainer's TrainJob controller both act on TrainJobs whose
 * spec.managedBy is "trainer.kubeflow.org/trainjob-controller" (or unset): two of them would
 * fight over the same JobSets. `serve` looks, once at start, for what Trainer v2.3 leaves in a
 * cluster (github.com/kubeflow/trainer, v2.3.0):
 *   - its leader-election Lease `trainer.kubeflow.org` (manifests/base/manager/
 *     controller_manager_config.yaml, leaderElection.resourceName; namespace = the controller's,
 *     kubeflow-system in the `manager` overlay, kubeflow in the `kubeflow-platform` overlay);
 *   - its webhook configurations `validator.trainer.kubeflow.org` (Validating) and
 *     `defaulter.trainer.kubeflow.org` (Mutating) (cmd/trainer-controller-manager/main.go).
 * The decision below is pure (observations and `now` in, verdict out); serve does the GETs.
 */
#ifndef CMD_TRAINERDETECT_H
#define CMD_TRAINERDETECT_H

#include <stdint.h>
#include <jansson.h>

#define TRAINER_LEASE_NAME "trainer.kubeflow.org"
#define TRAINER_VALIDATING_WEBHOOK "validator.trainer.kubeflow.org"
#define TRAINER_MUTATING_WEBHOOK "defaulter.trainer.kubeflow.org"
/* a Lease counts as held while renewTime + leaseDurationSeconds + this is after now: the
 * holder's clock and ours may differ a little */
#define TRAINER_LEASE_SLACK_S 30

/* What serve saw. For each thing: 1 found, 0 not found (404), -1 could not be read (403,
 * network; the message of the error goes in *_error for the report). */
struct trainer_observed {
    const char *lease_namespace; /* where the Lease was looked for */
    int lease_found;
    const json_t *lease; /* the coordination.k8s.io/v1 Lease when lease_found == 1 */
    const char *lease_error;
    int validating_found, mutating_found;
    const char *webhook_error;
    int64_t now_us; /* wall clock, microseconds since the epoch */
};

enum trainer_verdict {
    TRAINER_ABSENT,    /* nothing of Trainer's controller seen */
    TRAINER_INSTALLED, /* its webhook configurations (or an expired Lease), no live holder */
    TRAINER_RUNNING,   /* its Lease has a holder that renewed it within the lease duration */
    TRAINER_UNKNOWN    /* could not look (RBAC, network) and nothing found */
};

struct trainer_decision {
    enum trainer_verdict verdict;
    int refuse;        /* 1: serve must not start (running Trainer, reconciler on, no override) */
    int warn;          /* 1: log `message` as a warning (0: info at most) */
    char message[768]; /* one line saying what was seen and what to do; names the override */
};

/* The verdict strings used in messages and fixtures: "absent", "installed", "running",
 * "unknown". */
const char *trainer_verdict_name(enum trainer_verdict v);

/*
 * trainer_detect_decide - the verdict from o and what serve does about it. reconciler_on: the
 * reconciler component runs (only it conflicts with Trainer's controller; the webhook and the
 * extender may run beside it). allow: --allow-trainer-controller (warn instead of refusing).
 * A Lease is "live" when spec.holderIdentity is non-empty and spec.renewTime (RFC 3339, micro
 * seconds allowed) + spec.leaseDurationSeconds (default 15, Trainer's) + TRAINER_LEASE_SLACK_S
 * is after now_us; a Lease without a parsable renewTime but with a holder counts as live (better
 * a false alarm than two controllers). Never fails; out is always filled.
 */
void trainer_detect_decide(const struct trainer_observed *o, int reconciler_on, int allow,
                           struct trainer_decision *out);

#endif
