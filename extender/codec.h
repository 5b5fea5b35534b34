/*
 * extender/codec.h - the wire codec of the four scheduler extender verbs (filter, prioritize,
 * preempt, bind): request bodies in, C structs out; decisions in, response bodies out.
 *
 * Pure: no I/O, no clock, no globals. Everything decoded lives in a caller's per-request
 * arena (common/arena.h) and goes when the arena is destroyed; Pods and Nodes embedded in a
 * request are decoded by common/coretypes into struct common_pod / struct common_node (freed by
 * arena cleanups). Responses are appended to a caller's struct common_buf.
 *
 * The wire shapes are k8s.io/kube-scheduler extender/v1 (shared/reference/protocols.md §1.3):
 * the extender types have no json tags, so their keys are the Go field names in PascalCase
 * ("Pod", "NodeNames", "FailedNodes", "Host", "Score", "PodUID", ...), while the embedded
 * v1.Pod / v1.NodeList use the usual camelCase API JSON. Keys are matched exactly (Go matches
 * them case-insensitively, but kube-scheduler only ever sends the canonical casing); unknown
 * keys are ignored, as Go ignores them.
 *
 * How it works. A request body is read by a small strict JSON scanner (RFC 8259: UTF-8
 * checked, no trailing data, nesting at most EXTENDER_JSON_MAX_DEPTH) that walks the envelope,
 * copies node names and UIDs straight into the arena and hands each embedded Pod / Node, as
 * its own byte span, to jansson and coretypes. The envelope never becomes a jansson tree:
 * jansson parses a 5,000-name NodeNames array in about 1.3 ms, which alone would be over the
 * extender's 1 ms budget (bench/bench_codec.c has the figures). The original bytes of each
 * node of a full NodeList are kept, so a filter answer echoes exactly the nodes the scheduler
 * sent, byte for byte. Responses are written straight into the buffer, never through a tree.
 *
 * Results are given per request node, by index, so an answer can never name a node (or a
 * victim) that was not in the request: kube-scheduler treats such a name as an error
 * ("claims a filtered node ... which is not found in the input node list").
 *
 * Errors (enum common_rc, detail in struct common_error): COMMON_EINVAL for malformed or
 * invalid input, the message naming the field by its path from the body's top level
 * ("Pod.metadata.name: required", "NodeNames[3]: not a string") or, for what concerns the
 * body as a whole, the document ("ExtenderArgs: invalid JSON at byte 17: invalid UTF-8");
 * COMMON_ETOOBIG for a body over the caller's cap or a response over the buffer's max;
 * COMMON_ENOMEM (allocation or arena cap). Nothing crashes on any input: the decoders are fuzzed
 * (fuzz/fuzz_extender_*.c).
 *
 * Limits: duplicate names inside NodeNames or a NodeList are not detected (kube-scheduler
 * builds both from its node map; checking would cost a sort on the hot path); duplicate keys
 * in the preemption maps are. A Pod's requests are the effective sum coretypes computes
 * (containers, init containers and sidecars, pod-level resources, overhead), not kept per
 * container.
 */
#ifndef EXTENDER_CODEC_H
#define EXTENDER_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/coretypes.h"
#include "common/error.h"

/* MinExtenderPriority / MaxExtenderPriority of extender/v1: the range of a HostPriority
 * Score. kube-scheduler multiplies it by weight x (MaxNodeScore 100 / 10) and does not clamp. */
#define EXTENDER_MIN_SCORE 0
#define EXTENDER_MAX_SCORE 10
/* A score array entry that leaves the node out of the HostPriorityList (it then gets no
 * contribution from this extender). */
#define EXTENDER_SCORE_OMIT (-1)

/* The pod label naming the pod's PodGroup (scheduling.x-k8s.io/v1alpha1, coscheduling). */
#define EXTENDER_POD_GROUP_LABEL "scheduling.x-k8s.io/pod-group"

/* Longest node name, pod name and UID accepted (a DNS subdomain is at most 253 bytes), and
 * longest namespace (a DNS label). */
#define EXTENDER_NAME_MAX 253
#define EXTENDER_NAMESPACE_MAX 63
/* Deepest JSON nesting accepted anywhere in a body (a Pod with managedFields needs ~25). */
#define EXTENDER_JSON_MAX_DEPTH 100

/* Defaults of struct extender_limits (a zero field takes its default). */
#define EXTENDER_DEFAULT_MAX_BODY ((size_t)64 << 20) /* bytes */
#define EXTENDER_DEFAULT_MAX_NODES 65536u
#define EXTENDER_DEFAULT_MAX_VICTIMS 4096u /* per node */

/* Caps on one request; pass NULL for all defaults. */
struct extender_limits {
    size_t max_body;      /* bytes of the whole body; over it: COMMON_ETOOBIG */
    uint32_t max_nodes;   /* NodeNames entries, NodeList items, preemption map entries */
    uint32_t max_victims; /* victim pods of one node in a preemption request */
};

/* Bytes of one node object exactly as the request carried it (compact or not). */
struct extender_raw {
    const char *data; /* in the arena; not NUL-terminated */
    size_t len;
};

/*
 * The decoded structs below come from the decoders only (the encoders rely on what they
 * set, e.g. nodes_json); the arrays a mode uses are never NULL, even when empty.
 *
 * ExtenderArgs, the body of filter and prioritize:
 *   {"Pod": <v1.Pod>, "Nodes": <v1.NodeList> | null, "NodeNames": [string] | null}
 * Exactly one of Nodes and NodeNames is non-null: NodeNames when the extender is configured
 * nodeCacheCapable: true, Nodes (every node object in full) otherwise.
 */
struct extender_args {
    struct common_pod *pod; /* the pod being scheduled */
    int pod_meta_only;      /* 1: pod holds its metadata only (extender_decode_args_meta) */
    /* extender_decode_args_meta only: a copy of the Pod's bytes as the request carried them
     * (in the arena), and where they began in the body */
    struct extender_raw pod_json;
    size_t pod_offset;
    const char *pod_group; /* its EXTENDER_POD_GROUP_LABEL value, "" when absent */
    int cache_capable;     /* 1: the request carried NodeNames; 0: a full NodeList */
    uint32_t n_nodes;
    const char **node_names;         /* [n_nodes], request order, in both modes */
    struct common_node **nodes;      /* [n_nodes] when !cache_capable, else NULL */
    struct extender_raw *nodes_json; /* [n_nodes] when !cache_capable, else NULL */
};

/* ExtenderBindingArgs: {"PodName": s, "PodNamespace": s, "PodUID": s, "Node": s}. */
struct extender_bind_args {
    const char *pod_name;
    const char *pod_namespace;
    const char *pod_uid;
    const char *node;
};

/* One node of a preemption request: Victims {"Pods": [<v1.Pod>], "NumPDBViolations": n} or
 * MetaVictims {"Pods": [{"UID": s}], "NumPDBViolations": n}. */
struct extender_victims {
    const char *node;
    uint32_t n_pods;
    const char **uids;        /* [n_pods], both forms */
    struct common_pod **pods; /* [n_pods] for Victims (full pods), NULL for MetaVictims */
    int64_t num_pdb_violations;
};

/*
 * ExtenderPreemptionArgs:
 *   {"Pod": <v1.Pod>, "NodeNameToVictims": {node: Victims} | null,
 *    "NodeNameToMetaVictims": {node: MetaVictims} | null}
 * Exactly one map is non-null (MetaVictims when nodeCacheCapable); it may be empty.
 */
struct extender_preempt_args {
    struct common_pod *pod;
    const char *pod_group; /* as in struct extender_args */
    int cache_capable;     /* 1: NodeNameToMetaVictims; 0: NodeNameToVictims */
    uint32_t n_nodes;
    struct extender_victims *nodes; /* [n_nodes], in the order of the request's map */
};

/* What filter says about one request node. */
enum extender_verdict {
    EXTENDER_PASS = 0,              /* feasible: listed in NodeNames / Nodes.items */
    EXTENDER_FAIL = 1,              /* FailedNodes: Unschedulable, preemption may help */
    EXTENDER_FAIL_UNRESOLVABLE = 2, /* FailedAndUnresolvableNodes: never a preemption target */
    EXTENDER_DROP = 3               /* in no list: filtered out without a reason */
};

/*
 * What preempt keeps. keep_node[i] != 0 keeps request node i (NULL keeps every node); a node
 * left out is vetoed. keep_victim[i] (when keep_victim and keep_victim[i] are non-NULL) has one
 * flag per victim of node i: the victims to evict (a subset of the scheduler's). pdb[i] (when
 * pdb is non-NULL) replaces node i's NumPDBViolations; by default the request's is echoed.
 */
struct extender_preempt_choice {
    const uint8_t *keep_node;
    const uint8_t *const *keep_victim;
    const int64_t *pdb;
};

/* ----------------------------------------------------------------- decoders -- */

/*
 * extender_decode_args - decode an ExtenderArgs body (the filter and prioritize verbs) of len
 * bytes (need not be NUL-terminated; borrowed, may be freed on return) into *out, allocated
 * with everything it points to in arena a. Node names are checked non-empty, at most
 * EXTENDER_NAME_MAX bytes, free of NUL; the pod needs metadata with name, namespace and uid;
 * each NodeList item needs metadata.name. lim may be NULL (defaults). Memory: the arena gets
 * the names (about the NodeNames array's size) or, for a full NodeList, a copy of every node's
 * bytes (about the body's size; the decoded common_node structs are malloc'd by coretypes and
 * freed by arena cleanups); size the arena's cap for the body cap.
 * Errors: COMMON_ETOOBIG (len over lim->max_body), COMMON_EINVAL ("ExtenderArgs: invalid JSON
 * at byte N: ...", "ExtenderArgs: neither Nodes nor NodeNames is set", "NodeNames: more than
 * 65536 nodes", "NodeNames[3]: not a string", "Nodes.items[2].metadata.name: required",
 * "Pod.spec.containers[0].resources.requests[cpu]: ..." from coretypes), COMMON_ENOMEM. On
 * error *out is NULL; whatever was allocated stays in the arena and goes with it.
 * Source: protocols.md §1.3 (ExtenderArgs), §1.5 (nodeCacheCapable).
 */
enum common_rc extender_decode_args(struct common_arena *a, const char *body, size_t len,
                                    const struct extender_limits *lim, struct extender_args **out,
                                    struct common_error *err);

/*
 * extender_decode_args_meta - extender_decode_args, but args->pod is decoded from the Pod's
 * metadata alone (name, namespace, uid, labels, annotations, owners: spec and status empty)
 * and args->pod_meta_only is 1: for a verb whose core already knows the pod by uid (the
 * informers put it in the books), which needs only its identity and PodGroup label. The whole
 * body is still checked as JSON (the same "invalid JSON" errors); errors coretypes would find in
 * the spec are not looked for. extender_decode_args_pod completes the pod when it is needed.
 *
 * extender_decode_args_pod - decode args->pod in full from args->pod_json (in arena a, as the
 * first decode did) after extender_decode_args_meta; a no-op for a pod decoded in full.
 * Errors as for extender_decode_args about the Pod ("Pod.spec....", "Pod.metadata.uid:
 * required"); args is unchanged on error.
 */
enum common_rc extender_decode_args_meta(struct common_arena *a, const char *body, size_t len,
                                         const struct extender_limits *lim,
                                         struct extender_args **out, struct common_error *err);
enum common_rc extender_decode_args_pod(struct common_arena *a, struct extender_args *args,
                                        struct common_error *err);

/*
 * extender_decode_bind_args - decode an ExtenderBindingArgs body into *out (in arena a). All
 * four strings are required and non-empty; PodName, PodUID and Node at most EXTENDER_NAME_MAX
 * bytes, PodNamespace at most EXTENDER_NAMESPACE_MAX. Errors as for extender_decode_args
 * ("PodUID: required", "Node: not a string", "PodName: must not be empty").
 * Source: protocols.md §1.3 (ExtenderBindingArgs), §1.4 Bind.
 */
enum common_rc extender_decode_bind_args(struct common_arena *a, const char *body, size_t len,
                                         const struct extender_limits *lim,
                                         struct extender_bind_args **out, struct common_error *err);

/*
 * extender_decode_preempt_args - decode an ExtenderPreemptionArgs body into *out (in arena a).
 * Map keys (node names) follow the node-name rules and may not repeat; each value must be an
 * object; "Pods" may be null or absent (no victims) and holds at most lim->max_victims pods;
 * a MetaPod needs a non-empty "UID", a full victim pod what the scheduled pod needs;
 * "NumPDBViolations" is an integer >= 0 (absent: 0). Errors as for extender_decode_args
 * ("NodeNameToMetaVictims[gpu-a1].Pods[0].UID: required", "NodeNameToVictims[n1]: duplicate
 * node"). Source: protocols.md §1.3 (ExtenderPreemptionArgs, Victims, MetaVictims), §1.4.
 */
enum common_rc extender_decode_preempt_args(struct common_arena *a, const char *body, size_t len,
                                            const struct extender_limits *lim,
                                            struct extender_preempt_args **out,
                                            struct common_error *err);

/* ----------------------------------------------------------------- encoders -- */
/* Every encoder appends to b and, on any error, leaves b exactly as it was. Strings are
 * escaped as JSON; bytes that are not UTF-8 (in a reason or an error text) become U+FFFD. */

/*
 * extender_encode_filter_result - append the ExtenderFilterResult answering args:
 *   {"Nodes": null | {"metadata":{},"items":[<node>...]}, "NodeNames": [..] | null,
 *    "FailedNodes": {node: reason}, "FailedAndUnresolvableNodes": {node: reason}, "Error": ""}
 * verdict[i] (enum extender_verdict) decides request node i; reason[i] is its reason for the
 * two failure verdicts (reason or reason[i] NULL: ""). In cache mode NodeNames lists the
 * passing names and Nodes is null; otherwise Nodes.items holds the original bytes of the
 * passing nodes and NodeNames is null (a null list would empty the scheduler's candidates, so
 * the live field is always written, [] when nothing passes). Both failure maps are always
 * objects, {} when empty. Errors: COMMON_EINVAL (a verdict out of range, naming the node),
 * COMMON_ETOOBIG (over b->max), COMMON_ENOMEM. Source: protocols.md §1.3, §1.4 Filter, §1.7f.
 */
enum common_rc extender_encode_filter_result(struct common_buf *b, const struct extender_args *args,
                                             const uint8_t *verdict, const char *const *reason,
                                             struct common_error *err);

/*
 * extender_encode_filter_error - append an ExtenderFilterResult carrying only an error:
 *   {"Nodes":null,"NodeNames":null,"FailedNodes":{},"FailedAndUnresolvableNodes":{},
 *    "Error": msg}
 * kube-scheduler fails the scheduling attempt (or skips an ignorable extender). An empty or
 * NULL msg would read as success with no feasible node, so it is written as "internal error".
 * Needs no decoded request (use it when decoding failed). Errors: COMMON_ETOOBIG,
 * COMMON_ENOMEM. Source: protocols.md §1.4 Filter.
 */
enum common_rc extender_encode_filter_error(struct common_buf *b, const char *msg,
                                            struct common_error *err);

/*
 * extender_encode_priorities - append the HostPriorityList answering args (a bare array):
 *   [{"Host": node, "Score": n}, ...]
 * in request order, one entry per node i whose score[i] is not EXTENDER_SCORE_OMIT.
 * Errors: COMMON_EINVAL when a score is outside EXTENDER_MIN_SCORE..EXTENDER_MAX_SCORE
 * ("HostPriorityList: node gpu-a1: score 11 outside 0..10"), COMMON_ETOOBIG, COMMON_ENOMEM.
 * Source: protocols.md §1.3 (HostPriorityList, MaxExtenderPriority), §1.4 Prioritize.
 */
enum common_rc extender_encode_priorities(struct common_buf *b, const struct extender_args *args,
                                          const int64_t *score, struct common_error *err);

/*
 * extender_encode_bind_result - append an ExtenderBindingResult: {"Error": msg}, with "" for
 * a NULL or empty msg (bound). Errors: COMMON_ETOOBIG, COMMON_ENOMEM.
 * Source: protocols.md §1.3 (ExtenderBindingResult), §1.4 Bind.
 */
enum common_rc extender_encode_bind_result(struct common_buf *b, const char *msg,
                                           struct common_error *err);

/*
 * extender_encode_preempt_result - append the ExtenderPreemptionResult answering args, always
 * in the MetaVictims form (UIDs only), whatever form the request had:
 *   {"NodeNameToMetaVictims": {node: {"Pods": [{"UID": s}...], "NumPDBViolations": n}}}
 * with the nodes and victims that choice keeps (choice NULL: all of them), in request order.
 * The map replaces the scheduler's candidates: {} means no preemption is possible. Errors:
 * COMMON_EINVAL (a NumPDBViolations below 0), COMMON_ETOOBIG, COMMON_ENOMEM.
 * Source: protocols.md §1.3 (ExtenderPreemptionResult), §1.4 Preempt.
 */
enum common_rc extender_encode_preempt_result(struct common_buf *b,
                                              const struct extender_preempt_args *args,
                                              const struct extender_preempt_choice *choice,
                                              struct common_error *err);

/* ------------------------------------------------------------------ helpers -- */

/* extender_args_node_index - the index of node name in args (first match), or -1. O(n). */
long extender_args_node_index(const struct extender_args *args, const char *name);

/*
 * extender_json_check - check that s (len bytes) is one JSON text as the decoders read it:
 * RFC 8259 with UTF-8 checked, lone surrogate escapes refused, nesting at most
 * EXTENDER_JSON_MAX_DEPTH, only whitespace around the value. Returns COMMON_OK or
 * COMMON_EINVAL ("JSON: invalid JSON at byte N: ..."). For tests and fuzzers that compare the
 * scanner with jansson.
 */
enum common_rc extender_json_check(const char *s, size_t len, struct common_error *err);

#endif
