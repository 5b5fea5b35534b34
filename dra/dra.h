/*
 * dra/dra.h - the pure Dynamic Resource Allocation core: the device model decoded from
 * resource.k8s.io/v1 objects, and an allocator for the claims of one pod on one node.
 *
 * What it owns. ResourceSlices (a driver's devices, grouped into pools; a pool has a
 * generation and a resourceSliceCount), DeviceClasses (CEL selectors), ResourceClaims
 * (spec.devices.requests with `exactly` or `firstAvailable`, `constraints` with
 * `matchAttribute`, and status.allocation.devices.results for devices already in use). The
 * allocator follows the structured allocator of k8s.io/dynamic-resource-allocation: only the
 * newest generation of a pool counts; a pool with fewer slices of that generation than
 * resourceSliceCount is incomplete and never allocated from; a pool whose slices repeat a
 * device name is invalid and skipped; depth-first search claim -> request -> device slot,
 * devices in pool then slice then listed order, with backtracking when a matchAttribute
 * constraint fails; `All` takes every matching device of the node or fails; firstAvailable
 * tries its subrequests in order; adminAccess devices may already be in use and are not
 * counted as in use; at most 32 devices per claim.
 *
 * Deterministic where upstream is not: pools are visited in (driver, pool name) order and the
 * slices of a pool in metadata.name order (upstream iterates a Go map).
 *
 * Not handled yet (refused or skipped, never a wrong answer): slices with spec.nodeSelector or
 * perDeviceNodeSelection are not used for any node; devices with consumesCounters (partitionable
 * devices), taints, or capacity requests (consumable capacity) are refused at decode with
 * COMMON_EUNSUPPORTED naming the field; distinctAttribute constraints likewise.
 *
 * Memory: everything decoded lives in the caller's arena; strings are copied out of the JSON,
 * so the json_t may be dropped after decoding. Errors: enum common_rc plus struct common_error
 * naming the object and the field ("ResourceSlice node-a-gpus: spec.devices[3].name ...").
 */
#ifndef DRA_DRA_H
#define DRA_DRA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"
#include "dra/cel.h"

/* The annotation the resourceclaim controller puts on a claim made from a template: the
 * pod's spec.resourceClaims[].name it was made for. */
#define DRA_POD_CLAIM_NAME_ANNOTATION "resource.kubernetes.io/pod-claim-name"

/* resource.k8s.io/v1 AllocationResultsMaxSize: devices per claim. */
#define DRA_MAX_RESULTS 32

struct dra_device {
    const char *name;
    struct dra_cel_device cel; /* driver, attributes, capacity: what selectors see */
};

struct dra_slice {
    const char *name; /* metadata.name */
    const char *driver;
    const char *pool;
    int64_t generation;
    int64_t slice_count;   /* pool.resourceSliceCount */
    const char *node_name; /* spec.nodeName, NULL when not set */
    int all_nodes;         /* spec.allNodes */
    int node_selector;     /* spec.nodeSelector or perDeviceNodeSelection set: not used yet */
    struct dra_device *devices;
    size_t n_devices;
};

struct dra_class {
    const char *name;
    struct dra_cel_prog *selectors;
    size_t n_selectors;
};

/* One way to satisfy a request: the `exactly` of a request or one of its firstAvailable. */
struct dra_exact {
    const char *name; /* result name: "gpu" or, for a subrequest, "gpu/h100" */
    const char *class_name;
    struct dra_cel_prog *selectors;
    size_t n_selectors;
    int all;          /* allocationMode All */
    int64_t count;    /* ExactCount: count (default 1) */
    int admin_access; /* adminAccess: true */
};

struct dra_request {
    const char *name;
    struct dra_exact *alts; /* one (`exactly`) or the firstAvailable list in order */
    size_t n_alts;
    int first_available;
};

struct dra_constraint {
    const char **requests; /* empty: every request of the claim */
    size_t n_requests;
    const char *attr_domain; /* matchAttribute split at '/'; domain always set */
    const char *attr_name;
};

/* One allocated device, as status.allocation.devices.results[] holds it. */
struct dra_result {
    const char *request; /* "gpu" or "gpu/h100" */
    const char *driver;
    const char *pool;
    const char *device;
    int admin_access;
};

struct dra_claim {
    const char *ns;
    const char *name;
    struct dra_request *requests;
    size_t n_requests;
    struct dra_constraint *constraints;
    size_t n_constraints;
    struct dra_result *allocated; /* status.allocation.devices.results, when allocated */
    size_t n_allocated;
    int is_allocated;
    const char *alloc_node; /* the one node status.allocation.nodeSelector names, or NULL */
    const char *uid;        /* metadata.uid, NULL when absent */
    /* a claim made from a pod's ResourceClaimTemplate: the owning pod's uid
     * (metadata.ownerReferences kind Pod) and the pod's entry name (annotation
     * resource.kubernetes.io/pod-claim-name); NULL when absent */
    const char *owner_pod_uid;
    const char *pod_claim_name;
    const char **reserved_for; /* status.reservedFor[].uid */
    size_t n_reserved_for;
};

/*
 * The cluster as the allocator sees it: all slices and classes, and the claims whose
 * status.allocation holds devices (in use unless adminAccess). Borrowed, never changed.
 */
struct dra_snapshot {
    const struct dra_slice *slices;
    size_t n_slices;
    const struct dra_class *classes;
    size_t n_classes;
    const struct dra_claim *allocated;
    size_t n_allocated;
};

/*
 * dra_slice_decode - a resource.k8s.io/v1 ResourceSlice (JSON object) into *out. Reads
 * metadata.name, spec.driver, spec.pool{name, generation, resourceSliceCount}, spec.nodeName,
 * spec.allNodes, spec.nodeSelector / perDeviceNodeSelection (noted, not interpreted),
 * spec.devices[]{name, attributes{<name>: {int|bool|string|version}}, capacity{<name>:
 * {value}}}. An attribute or capacity name without a domain gets the driver's.
 * COMMON_EINVAL for a missing/mistyped field, a duplicate device name, an attribute value with
 * no or an unknown type, a version that is not semver; COMMON_EUNSUPPORTED for consumesCounters,
 * sharedCounters, taints; the message names the slice and the field path.
 */
enum common_rc dra_slice_decode(struct common_arena *a, const json_t *obj, struct dra_slice *out,
                                struct common_error *err);

/*
 * dra_class_decode - a DeviceClass: metadata.name and spec.selectors[].cel.expression (each
 * parsed by dra_cel_parse; its error names spec.selectors[i]).
 */
enum common_rc dra_class_decode(struct common_arena *a, const json_t *obj, struct dra_class *out,
                                struct common_error *err);

/*
 * dra_claim_decode - a ResourceClaim: metadata.{namespace,name}; spec.devices.requests[]
 * {name, exactly{deviceClassName, selectors, allocationMode ExactCount|All, count,
 * adminAccess} | firstAvailable[]{name, deviceClassName, selectors, allocationMode, count}};
 * spec.devices.constraints[]{requests, matchAttribute}; status.allocation.devices.results[]
 * {request, driver, pool, device, adminAccess}, status.allocation.nodeSelector (the node, see
 * alloc_node), status.reservedFor[].uid; metadata.uid, the owning Pod's uid and the annotation
 * resource.kubernetes.io/pod-claim-name. Errors name the field.
 */
enum common_rc dra_claim_decode(struct common_arena *a, const json_t *obj, struct dra_claim *out,
                                struct common_error *err);

/* What dra_allocate chose for one claim: results in request order, then device order. */
struct dra_claim_alloc {
    struct dra_result *results;
    size_t n_results;
};

/*
 * dra_allocate - allocate claims[0..n) (the unallocated claims of one pod) on node `node` from
 * the devices of snap not in use. Devices chosen for an earlier claim count as in use for the
 * later ones. On COMMON_OK out[i] holds claim i's results (arena a). Otherwise:
 * COMMON_ECONFLICT when the claims do not fit on this node, with a reason naming the claim and
 * request and the device counts ("claim ns/c: request \"gpu\" needs 8 device(s) of class
 * \"gpu.example.com\"; node n1 has 6 matching, 2 of them in use"); COMMON_ENOTFOUND when a
 * request names a DeviceClass that does not exist; COMMON_EINVAL for a CEL runtime error (as
 * upstream: the allocation fails, the device is not merely skipped), more than 32 devices in
 * one claim, or All matching no device; COMMON_ENOMEM.
 */
enum common_rc dra_allocate(struct common_arena *a, const struct dra_snapshot *snap,
                            const char *node, const struct dra_claim *claims, size_t n,
                            struct dra_claim_alloc *out, struct common_error *err);

/*
 * dra_index_build - the per-snapshot part of allocation, done once for many nodes: usable
 * slices by node, each pool's newest generation, completeness and duplicate device names,
 * and the devices in use. *out lives in arena a and borrows snap (which must outlive it).
 * COMMON_ENOMEM only.
 */
struct dra_index;
enum common_rc dra_index_build(struct common_arena *a, const struct dra_snapshot *snap,
                               struct dra_index **out, struct common_error *err);

/*
 * dra_index_build_plain - dra_index_build without the lookup tables that answer a node's
 * questions in constant time (its slices by a hash of the node name, each slice's pool, each
 * device's in-use flag): every query then binary-searches the sorted names. The answers are
 * the same; tests compare the two on generated snapshots. COMMON_ENOMEM only.
 */
enum common_rc dra_index_build_plain(struct common_arena *a, const struct dra_snapshot *snap,
                                     struct dra_index **out, struct common_error *err);

/*
 * dra_allocate_indexed - dra_allocate against an index from dra_index_build (same results and
 * errors); the cost per call is that of the node's own slices, not of the whole cluster.
 */
enum common_rc dra_allocate_indexed(struct common_arena *a, const struct dra_index *ix,
                                    const char *node, const struct dra_claim *claims, size_t n,
                                    struct dra_claim_alloc *out, struct common_error *err);

/* Options of dra_allocate_opts; a zeroed struct (or NULL) is dra_allocate_indexed. */
struct dra_alloc_opts {
    /* devices in use besides the snapshot's allocated claims (what other gangs' plans and
     * earlier members hold); any order, duplicates allowed; request and adminAccess ignored */
    const struct dra_result *extra_used;
    size_t n_extra_used;
    /* when match_name is set: only devices whose attribute match_domain/match_name equals
     * *match_value are candidates (a gang-wide matchAttribute) */
    const char *match_domain;
    const char *match_name;
    const struct dra_attr *match_value;
};

/*
 * dra_allocate_opts - dra_allocate_indexed with the devices of o->extra_used in use and, when
 * o->match_name is set, only the devices whose attribute equals o->match_value (devices without
 * it are left out, as if absent). Same results and errors.
 */
enum common_rc dra_allocate_opts(struct common_arena *a, const struct dra_index *ix,
                                 const char *node, const struct dra_claim *claims, size_t n,
                                 const struct dra_alloc_opts *o, struct dra_claim_alloc *out,
                                 struct common_error *err);

/*
 * dra_attr_values - the distinct values of attribute domain/name over the devices of the
 * usable pools of ix (newest generation, complete, valid), sorted (type, then value), into
 * *out (arena a; pointers into the snapshot). COMMON_OK (possibly none), COMMON_ENOMEM.
 */
enum common_rc dra_attr_values(struct common_arena *a, const struct dra_index *ix,
                               const char *domain, const char *name, const struct dra_attr ***out,
                               size_t *n, struct common_error *err);

/* dra_node_devices - how many devices the usable pools (newest generation, complete, valid)
 * of ix offer node (its own slices and allNodes ones), in use or not: an upper bound for
 * allocation on it. */
size_t dra_node_devices(const struct dra_index *ix, const char *node);

/* dra_device_attr - attribute domain/name of the device r names (driver, pool, device) in the
 * newest generation of its pool among the slices of node (NULL: allNodes slices only), or NULL
 * when the device or the attribute is absent. O(slices of the node x devices). */
const struct dra_attr *dra_device_attr(const struct dra_index *ix, const char *node,
                                       const struct dra_result *r, const char *domain,
                                       const char *name);

/* dra_node_pools - how many distinct usable pools (newest generation, complete, valid) have
 * devices for node (its own slices and allNodes ones); a pool whose slices are not adjacent
 * in the index may count twice, so 1 means exactly one pool. kube-scheduler visits the pools
 * of a node in Go map order, so its first fit is predictable only when this is 1. */
size_t dra_node_pools(const struct dra_index *ix, const char *node);

/* dra_device_in_use - 1 when the device is in an allocated claim's results of ix's snapshot
 * (adminAccess results left out), else 0. O(log devices in use). */
int dra_device_in_use(const struct dra_index *ix, const char *driver, const char *pool,
                      const char *device);

/* dra_slice_current - 1 when sl (of ix's snapshot) belongs to the newest generation of its
 * pool, else 0. O(log pools). */
int dra_slice_current(const struct dra_index *ix, const struct dra_slice *sl);

/* dra_device_node_local - 1 when the device r names (driver, pool, device) is in a slice of
 * the newest generation of its pool whose spec.nodeName is node; 0 when it is not (an allNodes
 * slice, or absent). Decides status.allocation.nodeSelector as upstream's createNodeSelector
 * does: one node-local device pins the claim to its node. */
int dra_device_node_local(const struct dra_index *ix, const char *node, const struct dra_result *r);

/* 1 when two attribute values are equal (same type and value) */
int dra_attr_equal(const struct dra_attr *a, const struct dra_attr *b);

#endif
