/* cmd/trainerdetect.c - pure decision: is Kubeflow Trainer's controller running (header). */
#include "cmd/trainerdetect.h"

#include <stdio.h>
#include <string.h>

#include "common/leader.h"

const char *trainer_verdict_name(enum trainer_verdict v)
{
    switch (v) {
    case TRAINER_ABSENT:
        return "absent";
    case TRAINER_INSTALLED:
        return "installed";
    case TRAINER_RUNNING:
        return "running";
    case TRAINER_UNKNOWN:
        return "unknown";
    }
    return "unknown";
}

/* 1 when the Lease has a holder that renewed it recently enough; *holder gets the identity */
static int lease_live(const json_t *lease, int64_t now_us, const char **holder)
{
    const json_t *spec = json_object_get(lease, "spec");
    const char *h = json_string_value(json_object_get(spec, "holderIdentity"));
    const char *renew = json_string_value(json_object_get(spec, "renewTime"));
    const json_t *dur = json_object_get(spec, "leaseDurationSeconds");
    int64_t renew_us, dur_s = json_is_integer(dur) ? json_integer_value(dur) : 15;

    *holder = h;
    if (!h || !h[0])
        return 0;
    if (!renew || common_leader_parse_microtime(renew, &renew_us) != 0)
        return 1;
    if (dur_s < 0)
        dur_s = 0;
    return renew_us + (dur_s + TRAINER_LEASE_SLACK_S) * 1000000LL > now_us;
}

void trainer_detect_decide(const struct trainer_observed *o, int reconciler_on, int allow,
                           struct trainer_decision *out)
{
    const char *holder = NULL, *ns = o->lease_namespace ? o->lease_namespace : "";
    int live = o->lease_found == 1 && o->lease && lease_live(o->lease, o->now_us, &holder);
    int hooks = o->validating_found == 1 || o->mutating_found == 1;

    memset(out, 0, sizeof(*out));
    if (live) {
        out->verdict = TRAINER_RUNNING;
        out->warn = 1;
        out->refuse = reconciler_on && !allow;
        snprintf(out->message, sizeof(out->message),
                 "Kubeflow Trainer's controller is running: Lease %s/%s is held by \"%s\". "
                 "It and trainsched's reconciler both act on TrainJobs with spec.managedBy "
                 "trainer.kubeflow.org/trainjob-controller and would fight over their JobSets; "
                 "%s",
                 ns, TRAINER_LEASE_NAME, holder,
                 !reconciler_on ? "the reconciler is off here, so trainsched only adds its "
                                  "webhook/extender beside it"
                 : allow        ? "going on because of --allow-trainer-controller"
                                : "stop Trainer's controller (scale its Deployment to 0) or run "
                                  "trainsched without the reconciler (--components "
                                  "webhook,extender); --allow-trainer-controller starts anyway");
        return;
    }
    if (hooks || o->lease_found == 1) {
        out->verdict = TRAINER_INSTALLED;
        out->warn = reconciler_on;
        snprintf(
            out->message, sizeof(out->message),
            "Kubeflow Trainer is installed but its controller holds no live Lease%s%s%s "
            "(seen:%s%s%s); if it starts, it and trainsched's reconciler will both act on "
            "TrainJobs with spec.managedBy trainer.kubeflow.org/trainjob-controller",
            ns[0] ? " in " : "", ns, "",
            o->validating_found == 1 ? " ValidatingWebhookConfiguration " TRAINER_VALIDATING_WEBHOOK
                                     : "",
            o->mutating_found == 1 ? " MutatingWebhookConfiguration " TRAINER_MUTATING_WEBHOOK : "",
            o->lease_found == 1 ? " an expired Lease " TRAINER_LEASE_NAME : "");
        return;
    }
    if (o->lease_found < 0 || o->validating_found < 0 || o->mutating_found < 0) {
        out->verdict = TRAINER_UNKNOWN;
        out->warn = reconciler_on;
        snprintf(out->message, sizeof(out->message),
                 "could not check for Kubeflow Trainer's controller (%s%s%s): make sure it does "
                 "not run beside trainsched's reconciler",
                 o->lease_error ? o->lease_error : "",
                 o->lease_error && o->webhook_error ? "; " : "",
                 o->webhook_error ? o->webhook_error : "");
        return;
    }
    out->verdict = TRAINER_ABSENT;
    snprintf(out->message, sizeof(out->message), "no Kubeflow Trainer controller found");
}
