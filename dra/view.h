/*
 * dra/view.h - a DRA view of the cluster for the gang planner and the extender (pure): the
 * snapshot of dra/dra.h built from the JSON objects of the watch caches, with its index,
 * the objects that failed to decode (with the reason), and for each pod the ResourceClaims
 * its spec.resourceClaims entries name.
 *
 * How a pod's entry finds its claim (Kubernetes "Dynamic Resource Allocation", pod
 * spec.resourceClaims): `resourceClaimName` names a claim in the pod's namespace;
 * `resourceClaimTemplateName` means the resourceclaim controller of kube-controller-manager
 * makes one claim per pod, found by the claim's annotation resource.kubernetes.io/pod-claim-name
 * (the entry's name) and its ownerReference to the pod (kind Pod, the pod's uid).
 *
 * Memory: everything in the caller's arena; the json_t objects and pods are only read during
 * dra_view_build (strings are copied).
 */
#ifndef DRA_VIEW_H
#define DRA_VIEW_H

#include "common/coretypes.h"
#include "dra/dra.h"

/* An object left out of the snapshot: kind "ResourceSlice" | "DeviceClass" | "ResourceClaim". */
struct dra_bad {
    const char *kind;
    const char *name;
    const char *reason; /* the decoder's message, naming the field */
};

/* A claim of the view: decoded, or (error set) kept by namespace/name with its reason. */
struct dra_view_claim {
    struct dra_claim claim;
    const char *error;
};

/* One entry of a pod's spec.resourceClaims: claim when found and valid, else why. */
struct dra_claim_ref {
    const char *entry; /* spec.resourceClaims[].name */
    const struct dra_claim *claim;
    const char *why; /* "pod ns/p: ResourceClaim ns/c does not exist", the decode error, ... */
};

struct dra_pod_claims {
    const char *uid, *ns, *name;
    struct dra_claim_ref *refs; /* in spec order */
    size_t n_refs;
};

struct dra_view {
    struct dra_snapshot snap; /* decoded slices and classes; claims with status.allocation */
    struct dra_index *ix;
    struct dra_view_claim *claims; /* every claim, by namespace then name */
    size_t n_claims;
    struct dra_bad *bad;
    size_t n_bad;
    struct dra_pod_claims *pods; /* pods with at least one spec.resourceClaims entry, by uid */
    size_t n_pods;
};

/* The objects a view is built from: resource.k8s.io/v1 objects as JSON, and decoded Pods. */
struct dra_view_input {
    const json_t *const *slices;
    size_t n_slices;
    const json_t *const *classes;
    size_t n_classes;
    const json_t *const *claims;
    size_t n_claims;
    const struct common_pod *const *pods; /* the pods whose claims matter (gang members) */
    size_t n_pods;
};

/*
 * dra_view_build - decode in into *v (arena a). A malformed object is never fatal: it goes to
 * v->bad with the decoder's reason (a malformed claim also stays findable by name, so the pods
 * naming it get that reason). COMMON_OK or COMMON_ENOMEM.
 */
enum common_rc dra_view_build(struct common_arena *a, const struct dra_view_input *in,
                              struct dra_view *v, struct common_error *err);

/* The decoded devices of a view (ResourceSlices and DeviceClasses, with the ones that failed
 * to decode): what changes seldom, decoded once and shared by the views built on it. */
struct dra_view_devices {
    struct dra_slice *slices;
    size_t n_slices;
    struct dra_class *classes;
    size_t n_classes;
    struct dra_bad *bad; /* "ResourceSlice" and "DeviceClass" entries */
    size_t n_bad;
};

/*
 * dra_view_devices_decode - decode in's slices and classes (its claims and pods are not read)
 * into *d (arena a). A malformed object goes to d->bad with the decoder's reason. COMMON_OK or
 * COMMON_ENOMEM.
 */
enum common_rc dra_view_devices_decode(struct common_arena *a, const struct dra_view_input *in,
                                       struct dra_view_devices *d, struct common_error *err);

/*
 * dra_view_build_on - dra_view_build with the slices and classes taken from d (decoded
 * earlier from the same objects; in's slices and classes are not read): only the claims, the
 * pods' claims and the index are built (arena a). The view borrows d, whose arena must outlive
 * it. The result is the one dra_view_build gives for the same objects (tests/unit/test_dra.c
 * compares them over random changes). COMMON_OK or COMMON_ENOMEM.
 */
enum common_rc dra_view_build_on(struct common_arena *a, const struct dra_view_input *in,
                                 const struct dra_view_devices *d, struct dra_view *v,
                                 struct common_error *err);

/* the claims of pod uid, NULL when the pod has no spec.resourceClaims (or v is NULL) */
const struct dra_pod_claims *dra_view_pod(const struct dra_view *v, const char *uid);

/* the claim namespace/name of the view, NULL when absent */
const struct dra_view_claim *dra_view_claim_find(const struct dra_view *v, const char *ns,
                                                 const char *name);

/* the decode error of DeviceClass name when it was malformed, else NULL */
const char *dra_view_class_error(const struct dra_view *v, const char *name);

#endif
