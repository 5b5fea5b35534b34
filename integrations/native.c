/*
 * integrations/native.c - kube-scheduler's own gang scheduling (Kubernetes 1.36, alpha):
 * one scheduling.k8s.io/v1alpha2 PodGroup per gang, pods tied to it by
 * spec.schedulingGroup.podGroupName.
 */
#include "integrations/backend.h"

const struct backend backend_native = {
    .name = "native",
    .built = 0,
    .what = "kube-scheduler's GangScheduling (scheduling.k8s.io/v1alpha2 PodGroup)",
    .core_gang = TRAINJOB_GANG_NONE,
};
