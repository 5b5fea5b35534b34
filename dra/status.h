/*
 * dra/status.h - the status a ResourceClaim gets when its devices are allocated, written
 * exactly as kube-scheduler 1.36.3's DynamicResources plugin writes it, so that one writer's
 * view holds whoever writes: the scheduler's later reservation (PreBind's bindClaim appends to
 * status.reservedFor and fills status.allocation.allocationTimestamp when it is missing) is then
 * an append that the API server accepts (status.allocation is immutable once set).
 *
 * Sources (k8s.io/dynamic-resource-allocation v0.36.3, structured/internal/incubating
 * allocator_incubating.go: the result per device, the configs, createNodeSelector;
 * k8s.io/kubernetes v1.36.3 pkg/scheduler/framework/plugins/dynamicresources
 * dynamicresources.go bindClaim: the timestamp). Pure: no I/O, no clock (the time is passed in).
 * The differential test tests/tools/claimdiff compares the result with the upstream allocator's
 * and runs the API server's status-update validation over generated claims.
 */
#ifndef DRA_STATUS_H
#define DRA_STATUS_H

#include <jansson.h>

#include "common/error.h"
#include "dra/dra.h"

/* the DeviceClass JSON object of that name, NULL when absent (borrowed) */
typedef const json_t *(*dra_class_lookup)(void *ctx, const char *name);

/*
 * dra_status_allocation - status.allocation (a new JSON object) for claim (the ResourceClaim
 * JSON: spec.devices.requests[] with exactly/firstAvailable, their tolerations and
 * deviceClassName, spec.devices.config[]) given the devices results[0..n) (request order, then
 * device order, as dra_allocate returns them):
 *   devices.results[]: request, driver, pool, device; adminAccess: true only for an adminAccess
 *     request; tolerations copied from the request (or the chosen subrequest) when it has some;
 *   devices.config[]: each DeviceClass's spec.config once per class (source FromClass, requests
 *     naming every request served by the class), then each claim config (source FromClaim;
 *     one entry per request it names, as upstream repeats it; its requests as written);
 *   nodeSelector: matchFields metadata.name In [node] when node_local (one device comes from a
 *     slice with spec.nodeName), else none (devices of allNodes slices are reachable anywhere);
 *   allocationTimestamp: timestamp (RFC 3339 in UTC, seconds, as metav1.Time encodes).
 * Binding conditions never apply: dra_slice_decode refuses devices that carry them.
 * classes: looks up a DeviceClass by name (a class missing here writes no class config; the
 * allocation itself failed with COMMON_ENOTFOUND before this is called).
 * Errors: COMMON_EINVAL when a result names a request the claim does not have (naming it),
 * COMMON_ENOMEM; NULL is returned then.
 */
json_t *dra_status_allocation(const json_t *claim, dra_class_lookup classes, void *ctx,
                              const struct dra_result *results, size_t n, const char *node,
                              int node_local, const char *timestamp, struct common_error *err);

/* dra_status_timestamp - seconds since the epoch as metav1.Time writes it
 * ("2026-12-07T18:30:00Z") into buf (at least 21 bytes); returns buf. */
char *dra_status_timestamp(long long epoch_s, char *buf, size_t len);

#endif
