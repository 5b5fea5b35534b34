/*
 * common/coretypes.h - compact Pods and Nodes for the watch-fed caches, decoded from the API
 * server's JSON or its application/vnd.kubernetes.protobuf encoding.
 *
 * The scheduler extender keeps every Pod and Node of the cluster in memory (50,000 pods and
 * 5,000 nodes must stay well under 150 MB), so a decoded object keeps only what scheduling
 * decisions read: identity, placement, labels, the controller, the pod's effective requests
 * already summed the way kube-scheduler sums them, and the constraints (nodeSelector,
 * tolerations, required node affinity, resource claims); for nodes capacity, allocatable,
 * taints, unschedulable and the Ready condition. Each object is ONE allocation (struct, arrays
 * and strings packed together), freed with common_pod_free / common_node_free. Strings are
 * never NULL: an absent field is "" (and may point at a shared constant, so never write
 * through them). Maps (labels, nodeSelector) are sorted by key; extended resources by name.
 *
 * Both encodings go through one path: JSON is first read into the same protobuf-c messages
 * that the protobuf decoder produces (proto/k8s_core.proto, with upstream field numbers), and
 * one conversion turns a message into the compact struct, so the two agree by construction.
 *
 * Wire forms (checked against a real kube-apiserver v1.36.3, tests/fixtures/coretypes/):
 * - a single object or a list: the 4 bytes "k8s\0", then a runtime.Unknown whose raw is the
 *   Pod / Node / PodList / NodeList message (or a meta/v1 Status when the server reports an
 *   error);
 * - a watch stream: frames of a 4-byte big-endian length and a bare meta/v1 WatchEvent (no
 *   "k8s\0" envelope; an envelope of kind WatchEvent is accepted too) whose object.raw is
 *   "k8s\0" + Unknown holding the Pod / Node (or a Status for ERROR events).
 *
 * Errors: COMMON_EINVAL for malformed input or input over a cap, with a message naming the
 * field path ("spec.containers[1].resources.requests[cpu]") or the byte offset;
 * COMMON_EAPI when the body is a Status instead of the object (the message quotes its code,
 * reason and message); COMMON_EUNSUPPORTED for a contentEncoding other than none;
 * COMMON_ENOMEM. On any error nothing is returned and nothing leaks.
 *
 * Limits, on purpose: the requests follow the spec only (a bound pod's in-place resize in
 * progress, which kube-scheduler reads from status, is not reflected), and DRA
 * node-allocatable claim status is not added.
 */
#ifndef COMMON_CORETYPES_H
#define COMMON_CORETYPES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Caps. One object, item or watch frame over COMMON_CORETYPES_MAX_OBJECT bytes is refused;
 * so is a list body over COMMON_CORETYPES_MAX_LIST, and an object naming more distinct
 * resources (in one requests map, or summed over a pod, or in a node's capacity) than
 * COMMON_CORETYPES_MAX_RESOURCES. etcd refuses objects over 1.5 MiB, so the caps leave room. */
#define COMMON_CORETYPES_MAX_OBJECT (16u << 20)
#define COMMON_CORETYPES_MAX_LIST ((size_t)1 << 30)
#define COMMON_CORETYPES_MAX_RESOURCES 64

/* A label or nodeSelector entry. */
struct common_kv {
    const char *key;
    const char *value;
};

/* An extended (scalar) resource: any name other than cpu, memory, ephemeral-storage and
 * pods, for example nvidia.com/gpu, hugepages-2Mi, trainsched.io/gang. */
struct common_resource {
    const char *name;
    int64_t value; /* whole units, rounded up (Quantity.Value) */
};

/* Resource amounts in the units kube-scheduler counts them in. */
struct common_resources {
    int64_t milli_cpu;                /* cpu in thousandths of a core, rounded up (MilliValue) */
    int64_t memory;                   /* bytes, rounded up */
    int64_t ephemeral_storage;        /* bytes, rounded up */
    int64_t pods;                     /* pod count (nodes; 0 for pods) */
    struct common_resource *extended; /* sorted by name */
    uint32_t n_extended;
};

/* The pod's controller: the first ownerReference with controller: true. "" when none. */
struct common_owner_ref {
    const char *kind;
    const char *name;
    const char *uid;
};

struct common_toleration {
    const char *key; /* "" with op Exists: every key */
    const char *op;  /* "Equal" (also when ""), "Exists" */
    const char *value;
    const char *effect;         /* "" (every effect), NoSchedule, PreferNoSchedule, NoExecute */
    int64_t toleration_seconds; /* meaningful when has_toleration_seconds */
    uint8_t has_toleration_seconds;
};

/* One requirement of a node selector term: key op values (In, NotIn, Exists, DoesNotExist,
 * Gt, Lt). */
struct common_node_selector_req {
    const char *key;
    const char *op;
    const char **values;
    uint32_t n_values;
};

/* A term matches when all its expressions (on labels) and fields (metadata.name) match. */
struct common_node_selector_term {
    struct common_node_selector_req *match_expressions;
    struct common_node_selector_req *match_fields;
    uint32_t n_match_expressions;
    uint32_t n_match_fields;
};

/* spec.resourceClaims[]: exactly one of the two sources is non-empty in a valid pod. */
struct common_pod_claim {
    const char *name;
    const char *resource_claim_name;
    const char *resource_claim_template_name;
};

/* Scheduling gates the pod decode tells apart (common_pod.scheduling_gates bits). */
/* ours (docs/gang.md "The gang gate") */
#define COMMON_TRAINSCHED_GATE "trainsched.io/gang"
/* Kueue's topology-aware scheduling */
#define COMMON_KUEUE_TOPOLOGY_GATE "kueue.x-k8s.io/topology"
enum {
    COMMON_GATE_TRAINSCHED = 1u << 0,     /* trainsched.io/gang */
    COMMON_GATE_KUEUE_TOPOLOGY = 1u << 1, /* kueue.x-k8s.io/topology */
    COMMON_GATE_OTHER = 1u << 2           /* any other name */
};

struct common_pod {
    const char *namespace;
    const char *name;
    const char *uid;
    const char *resource_version;
    const char *node_name;      /* spec.nodeName, "" until bound */
    const char *scheduler_name; /* spec.schedulerName */
    const char *phase;          /* status.phase */
    const char *priority_class_name;
    struct common_owner_ref controller;
    /*
     * Effective requests, as kube-scheduler's NodeResourcesFit computes them
     * (k8s.io/component-helpers resource.PodRequests): the sum over containers plus
     * restartable init containers (sidecars, restartPolicy Always), or if larger, per
     * resource, the largest init container plus the sidecars started before it; then
     * pod-level spec.resources.requests replace cpu, memory and hugepages-* when set; then
     * spec.overhead is added. Summed exactly, rounded up once at the end.
     */
    struct common_resources requests;
    struct common_kv *labels;                         /* sorted by key */
    struct common_kv *node_selector;                  /* sorted by key */
    struct common_toleration *tolerations;            /* spec order */
    struct common_node_selector_term *affinity_terms; /* required node affinity, ORed */
    struct common_pod_claim *resource_claims;
    uint32_t n_labels;
    uint32_t n_node_selector;
    uint32_t n_tolerations;
    uint32_t n_affinity_terms;
    uint32_t n_resource_claims;
    /* spec.schedulingGates: how many, and the first one's name (NULL when none); kube-scheduler
     * leaves a gated pod alone until the last gate is removed */
    uint32_t n_scheduling_gates;
    const char *first_scheduling_gate;
    /* which gates spec.schedulingGates holds: COMMON_GATE_* bits (0 when none), and the index
     * of trainsched's own gate (COMMON_TRAINSCHED_GATE) in it, meaningful only when the
     * COMMON_GATE_TRAINSCHED bit is set (the extender's ungate patch tests it) */
    uint8_t scheduling_gates;
    uint32_t trainsched_gate_index;
    /* spec.schedulingGroup.podGroupName: the pod belongs to a PodGroup of kube-scheduler's own
     * gang scheduling (scheduling.k8s.io, gate GenericWorkload); "" when the object has no
     * name, NULL when unset. Such a pod is never a member of an extender gang. */
    const char *scheduling_group;
    int32_t priority; /* spec.priority, meaningful when has_priority */
    uint8_t has_priority;
    uint8_t deleting; /* metadata.deletionTimestamp is set */
    uint32_t bytes;   /* size of the one block this pod lives in */
};

struct common_taint {
    const char *key;
    const char *value;
    const char *effect; /* NoSchedule, PreferNoSchedule, NoExecute */
};

/* status of the node's Ready condition */
enum common_node_ready {
    COMMON_NODE_READY_UNKNOWN = 0, /* status Unknown, or no Ready condition */
    COMMON_NODE_READY_TRUE = 1,
    COMMON_NODE_READY_FALSE = 2
};

struct common_node {
    const char *name;
    const char *uid;
    const char *resource_version;
    struct common_kv *labels; /* sorted by key */
    struct common_taint *taints;
    struct common_resources capacity;
    struct common_resources allocatable;
    uint32_t n_labels;
    uint32_t n_taints;
    uint8_t unschedulable; /* spec.unschedulable */
    uint8_t ready;         /* enum common_node_ready */
    uint32_t bytes;        /* size of the one block this node lives in */
};

/* common_pod_free / common_node_free - release a decoded object (NULL is a no-op). */
void common_pod_free(struct common_pod *pod);
void common_node_free(struct common_node *node);

/*
 * common_pod_from_json / common_node_from_json - decode one object in the API's JSON form
 * (a jansson object as GET /api/v1/.../pods/NAME returns it, or an item of a list or the
 * object of a watch event). obj is borrowed; *out is a new object the caller frees. Quantities
 * must be strings (as the API server writes them). Errors: COMMON_EINVAL naming the field
 * path ("spec.tolerations[2].tolerationSeconds: expected an integer"), COMMON_ENOMEM.
 */
enum common_rc common_pod_from_json(const json_t *obj, struct common_pod **out,
                                    struct common_error *err);
enum common_rc common_node_from_json(const json_t *obj, struct common_node **out,
                                     struct common_error *err);

/*
 * common_pod_from_protobuf / common_node_from_protobuf - decode the protobuf body of a single
 * object (GET .../pods/NAME with Accept: application/vnd.kubernetes.protobuf): "k8s\0" + a
 * runtime.Unknown of kind Pod / Node. data is borrowed (len bytes, at most
 * COMMON_CORETYPES_MAX_OBJECT). Errors: COMMON_EINVAL (wrong magic, truncated or malformed
 * message, wrong kind, a bad quantity: the message gives the offset or field), COMMON_EAPI
 * (the body is a Status: "Status Failure NotFound (404): pods \"x\" not found"),
 * COMMON_EUNSUPPORTED (contentEncoding set), COMMON_ENOMEM.
 */
enum common_rc common_pod_from_protobuf(const void *data, size_t len, struct common_pod **out,
                                        struct common_error *err);
enum common_rc common_node_from_protobuf(const void *data, size_t len, struct common_node **out,
                                         struct common_error *err);

/* A list's metadata. Strings are "" when absent and owned (common_list_meta_clear). */
struct common_list_meta {
    char *resource_version; /* where a watch that follows this list starts */
    char *continue_token;   /* non-empty: more pages follow (pass as ?continue=) */
    int64_t remaining_item_count;
    int has_remaining_item_count;
};

/* common_list_meta_clear - free the strings and zero *meta (safe on a zeroed struct). */
void common_list_meta_clear(struct common_list_meta *meta);

/*
 * common_pod_list_from_protobuf / common_node_list_from_protobuf - decode the protobuf body of
 * a list (GET /api/v1/pods, one page of it, or /api/v1/nodes): "k8s\0" + Unknown of kind
 * PodList / NodeList. Items are decoded one at a time, in order, each handed to cb (so the
 * list is never held decoded as a whole); then *meta (zeroed first, may be NULL) receives the
 * list's resourceVersion and continue token. data is borrowed, len at most
 * COMMON_CORETYPES_MAX_LIST, each item at most COMMON_CORETYPES_MAX_OBJECT.
 * The callback takes ownership of the object (keeps it or frees it) and returns COMMON_OK to
 * go on; any other code stops the decoding and is returned as it is (with the err the
 * callback set). Errors as for a single object, messages naming the item ("PodList item 3 at
 * offset 1234: ..."). Items handed over before an error stay the callback's.
 */
enum common_rc common_pod_list_from_protobuf(const void *data, size_t len,
                                             enum common_rc (*cb)(void *ctx, struct common_pod *pod,
                                                                  struct common_error *err),
                                             void *ctx, struct common_list_meta *meta,
                                             struct common_error *err);
enum common_rc common_node_list_from_protobuf(
    const void *data, size_t len,
    enum common_rc (*cb)(void *ctx, struct common_node *node, struct common_error *err), void *ctx,
    struct common_list_meta *meta, struct common_error *err);

/* ---- watch streams (Accept: application/vnd.kubernetes.protobuf;stream=watch) ---- */

enum common_kind { COMMON_KIND_POD = 1, COMMON_KIND_NODE = 2 };

enum common_watch_type {
    COMMON_WATCH_ADDED = 1,
    COMMON_WATCH_MODIFIED,
    COMMON_WATCH_DELETED,
    COMMON_WATCH_BOOKMARK,
    COMMON_WATCH_ERROR
};

/*
 * One decoded watch event. ADDED / MODIFIED / DELETED: pod or node (per the kind asked for)
 * is set and resource_version is its metadata.resourceVersion. BOOKMARK: only
 * resource_version (and initial_events_end, the k8s.io/initial-events-end annotation that
 * ends the initial events of a sendInitialEvents watch). ERROR: the Status's code (410 means
 * the resourceVersion is too old: relist), reason and message; no object. A caller may take
 * pod / node and set the field to NULL before common_watch_event_clear.
 */
struct common_watch_event {
    enum common_watch_type type;
    char *resource_version; /* "" for ERROR */
    int initial_events_end;
    struct common_pod *pod;
    struct common_node *node;
    int32_t status_code;
    char *status_reason;  /* NULL unless ERROR */
    char *status_message; /* NULL unless ERROR */
};

/* common_watch_event_clear - free what ev holds and zero it (safe on a zeroed event). */
void common_watch_event_clear(struct common_watch_event *ev);

/*
 * common_watch_frame_size - how many bytes the frame starting at data takes: *frame_size is 0
 * when fewer than 4 bytes are available (read more), else 4 + the big-endian length prefix.
 * COMMON_EINVAL when the prefix is over COMMON_CORETYPES_MAX_OBJECT (the stream must be
 * dropped). Lets a reader cut frames from its buffer before decoding each.
 */
enum common_rc common_watch_frame_size(const void *data, size_t len, size_t *frame_size,
                                       struct common_error *err);

/*
 * common_watch_decode_frame - decode exactly one frame (4-byte big-endian length, then a
 * WatchEvent: len must equal 4 + that length) from a watch of kind (pods or nodes) into *ev
 * (zeroed first; on error left zeroed). Errors: COMMON_EINVAL (short or long frame, length
 * over the cap, malformed event, unknown type, object of the wrong kind, bad object: the
 * message names the offset or field), COMMON_EUNSUPPORTED, COMMON_ENOMEM.
 */
enum common_rc common_watch_decode_frame(const void *data, size_t len, enum common_kind kind,
                                         struct common_watch_event *ev, struct common_error *err);

#endif
