/*
 * dra/sweep.h - which claim allocations trainsched wrote are stale and must be released: the
 * pure decision of the extender's sweep (extender/dra_glue.c, docs/dra.md "Who writes the
 * allocation").
 *
 * trainsched owns every allocation it wrote, and only those: a claim it allocated carries the
 * annotation trainsched.io/dra-allocated-for (the uid of the pod it was written for), so the
 * record survives a restart in the claim itself. An allocation kube-scheduler wrote has no such
 * annotation and is never touched. An allocation of ours is released when no pod it concerns
 * (the writer and every status.reservedFor entry, whatever their number: none, one, several)
 * is bound, planned or held by the books, and no entry names a pod the books cannot judge.
 * The glue resolves each pod to a state; the grace period (how long a claim must stay stale
 * before it is released) is the glue's. Pure: no I/O, no clock.
 */
#ifndef DRA_SWEEP_H
#define DRA_SWEEP_H

#include <jansson.h>
#include <stddef.h>

/* The annotation trainsched puts on a claim whose allocation it writes: the pod uid. */
#define DRA_WRITER_ANNOTATION "trainsched.io/dra-allocated-for"

/* What the extender knows of one pod a claim names. */
enum dra_sweep_pod {
    DRA_SWEEP_POD_GONE,   /* no such pod (deleted, or the uid is of an older pod of that name) */
    DRA_SWEEP_POD_BOUND,  /* spec.nodeName set: running or about to; its claim is in use */
    DRA_SWEEP_POD_PLACED, /* an unbound gang member the books plan, hold or release on the
                           * allocation's node (any node when the allocation has none) */
    DRA_SWEEP_POD_ENDED,  /* an unbound gang member the books neither plan nor hold there */
    DRA_SWEEP_POD_OTHER   /* an unbound pod the books do not judge (not a gang member) */
};

struct dra_sweep_claim {
    int allocated;          /* status.allocation is set */
    const char *writer_uid; /* annotation trainsched.io/dra-allocated-for, NULL when absent */
    enum dra_sweep_pod writer;
    const enum dra_sweep_pod *reserved; /* one per status.reservedFor entry */
    size_t n_reserved;
};

enum dra_sweep_verdict {
    DRA_SWEEP_LEAVE,   /* not ours (kube-scheduler wrote it) or not allocated */
    DRA_SWEEP_KEEP,    /* ours and in use or planned */
    DRA_SWEEP_RELEASE, /* ours and stale: clear status.allocation and status.reservedFor */
};

/*
 * dra_sweep_decide - the verdict for claim c; *why (when why is set) gets a static sentence
 * for logs and Events ("reserved for a bound pod", "its gang is no longer planned or held",
 * ...). Rules, in order: not allocated or no annotation -> LEAVE; a reservedFor pod BOUND ->
 * KEEP; the writer or a reservedFor pod PLACED -> KEEP; the writer BOUND -> KEEP (its
 * reservation was dropped while it runs: only kube-controller-manager may deallocate then);
 * a pod OTHER -> KEEP; else (every pod GONE or ENDED) -> RELEASE.
 */
enum dra_sweep_verdict dra_sweep_decide(const struct dra_sweep_claim *c, const char **why);

/* resolves a pod a claim names: ns/name/uid of a status.reservedFor entry, or (name NULL)
 * the writer's uid from the annotation */
typedef enum dra_sweep_pod (*dra_sweep_pod_of)(void *ctx, const char *ns, const char *name,
                                               const char *uid);

/*
 * dra_sweep_decide_json - dra_sweep_decide for a ResourceClaim JSON object: allocated when
 * status.allocation is set; writer from metadata.annotations[DRA_WRITER_ANNOTATION]; each
 * status.reservedFor[] entry (resource pods; name, uid) resolved by pod_of (an entry that is
 * not a pod, or lacks a uid, counts as OTHER: never ours to judge). At most 256 entries
 * (ResourceClaimReservedForMaxSize); more are OTHER.
 */
enum dra_sweep_verdict dra_sweep_decide_json(const json_t *claim, dra_sweep_pod_of pod_of,
                                             void *ctx, const char **why);

/* the name of a verdict ("leave", "keep", "release") and of a pod state ("gone", "bound",
 * "placed", "ended", "other"); NULL for an unknown value */
const char *dra_sweep_verdict_name(enum dra_sweep_verdict v);
const char *dra_sweep_pod_name(enum dra_sweep_pod p);

#endif
