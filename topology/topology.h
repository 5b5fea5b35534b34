/*
 * topology/topology.h - the pure topology core: levels, domains and where a gang may go.
 *
 * What it owns. A topology is an ordered list of node label keys, widest first, for example
 * block, rack, kubernetes.io/hostname (or nvidia.com/gpu.clique for NVLink domains). A domain
 * of level l is the set of nodes that share the values of levels 0..l; it is keyed by that full
 * path of values, so two racks named rack-1 under different blocks are different domains. A
 * node without the label of level l is outside every domain of level l and of every level
 * below it. A gang asks for a level through annotations (ours under trainsched.io/, or the
 * Kueue and KAI pod-template spellings, see topo_request_parse): required (the whole gang in
 * one domain of that level, or wait), preferred (the narrowest level that can hold it, climbing
 * to wider levels, finally spread), slices (each slice of N pods inside one domain of a level).
 * This core turns a request and the free capacity per node (in pods of the gang) into the
 * ordered list of scopes the gang planner tries (best fit first: the domain that leaves the
 * least free capacity), a node rank that packs a gang into the fewest sub-domains, and the
 * reason a gang waits. Source: ../shared/reference/protocols.md section 5 (Kueue TAS, KAI
 * topology), Kueue KEP 2724, KAI docs/topology.
 *
 * Pure: no I/O, no clock, no globals; deterministic (ties by domain path). Strings passed in
 * are borrowed for the call; what a function stores it copies. Errors: COMMON_EINVAL with a
 * message naming the annotation or level, COMMON_ENOMEM.
 */
#ifndef TOPOLOGY_TOPOLOGY_H
#define TOPOLOGY_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "common/coretypes.h"
#include "common/error.h"

/* At most 16 levels, as the Kueue and KAI Topology CRDs allow. */
#define TOPO_MAX_LEVELS 16
/* The hostname label: allowed only as the last level. */
#define TOPO_HOSTNAME "kubernetes.io/hostname"

/* Annotations of ours (on the PodGroup; the reconciler copies them, and the Kueue / KAI ones,
 * from the members' pod templates). Values are node label keys that are levels of the
 * topology, except topology (a topology name) and slice-size (an integer). */
#define TOPO_ANN_TOPOLOGY "trainsched.io/topology"
#define TOPO_ANN_REQUIRED "trainsched.io/topology-required"
#define TOPO_ANN_PREFERRED "trainsched.io/topology-preferred"
#define TOPO_ANN_UNCONSTRAINED "trainsched.io/topology-unconstrained"
#define TOPO_ANN_SLICE "trainsched.io/topology-slice-required"
#define TOPO_ANN_SLICE_SIZE "trainsched.io/topology-slice-size"
/* Kueue TAS pod-template annotations (kueue.x-k8s.io). */
#define TOPO_KUEUE_REQUIRED "kueue.x-k8s.io/podset-required-topology"
#define TOPO_KUEUE_PREFERRED "kueue.x-k8s.io/podset-preferred-topology"
#define TOPO_KUEUE_UNCONSTRAINED "kueue.x-k8s.io/podset-unconstrained-topology"
#define TOPO_KUEUE_SLICE "kueue.x-k8s.io/podset-slice-required-topology"
#define TOPO_KUEUE_SLICE_SIZE "kueue.x-k8s.io/podset-slice-size"
/* KAI scheduler annotations (kai.scheduler). */
#define TOPO_KAI_TOPOLOGY "kai.scheduler/topology"
#define TOPO_KAI_REQUIRED "kai.scheduler/topology-required-placement"
#define TOPO_KAI_PREFERRED "kai.scheduler/topology-preferred-placement"

/*
 * topo_is_annotation - 1 when key is one of the annotations above (what the reconciler copies
 * from pod templates to the PodGroup), else 0.
 */
int topo_is_annotation(const char *key);

/*
 * topo_levels_check - validate an ordered level list (keys[0..n), widest first): 1..16
 * non-empty keys, no duplicates, kubernetes.io/hostname only last (the rules of the Kueue and
 * KAI Topology CRDs). what names the source in messages ("topology \"default\""). COMMON_OK or
 * COMMON_EINVAL ("topology \"x\": level 2 \"rack\" is listed twice").
 */
enum common_rc topo_levels_check(const char *what, const char *const *keys, size_t n,
                                 struct common_error *err);

/* A topology written as one string: "NAME=LEVEL,LEVEL,..." (the serve flag
 * --extender-topology and the config key extender.topologies). */
struct topo_spec {
    char name[254];
    const char *levels[TOPO_MAX_LEVELS];
    size_t n_levels;
    char buf[2048]; /* the levels' text */
};

/*
 * topo_spec_parse - split spec into out (name, levels; spaces around names trimmed) and check
 * the levels (topo_levels_check). COMMON_OK or COMMON_EINVAL ("topology spec \"x\": want
 * NAME=LEVEL,LEVEL,...", or a level error naming the topology).
 */
enum common_rc topo_spec_parse(const char *spec, struct topo_spec *out, struct common_error *err);

/* What a gang asks for, as written (strings borrowed from the annotations). */
struct topo_request {
    const char *topology;  /* a topology name, NULL: the default one */
    const char *required;  /* a level key, NULL when none */
    const char *preferred; /* a level key, NULL when none */
    int unconstrained;     /* "true": no locality asked */
    const char *slice;     /* slice level key, NULL when none */
    int32_t slice_size;    /* pods per slice, 0 when none */
    /* the annotation that set each, for messages */
    const char *required_src, *preferred_src, *slice_src;
};

/*
 * topo_request_parse - read a request from annotations (ann[0..n), key/value, any order; keys
 * that are not topology annotations are ignored). Our keys and the Kueue and KAI ones are
 * synonyms; two spellings of the same thing must agree. Errors (COMMON_EINVAL, message naming
 * the annotations): the same request given two different levels; an empty level; required and
 * preferred both set in Kueue spelling (Kueue makes them exclusive; KAI and ours allow both:
 * required bounds the domain, preferred tightens inside it); unconstrained not "true"/"false"
 * or combined with a level; a slice level without a slice size or the reverse; a slice size
 * that is not a positive integer. No annotation at all: COMMON_OK with an empty request.
 */
enum common_rc topo_request_parse(const struct common_kv *ann, size_t n, struct topo_request *out,
                                  struct common_error *err);

/* topo_request_empty - 1 when the request asks for no locality at all. */
int topo_request_empty(const struct topo_request *rq);

/* A request resolved against a topology's levels: level indices, -1 when not asked. */
struct topo_want {
    int32_t required;
    int32_t preferred;
    int32_t slice;
    int32_t slice_size;
};

/*
 * topo_request_resolve - map the request's level keys to indices of levels[0..n_levels)
 * (named topo_name in messages). gang_pods is the number of pods the gang places together
 * (minMember without its phased pods). COMMON_OK, or COMMON_EINVAL naming the annotation:
 * an unknown level ("kueue.x-k8s.io/podset-required-topology: \"x\" is not a level of
 * topology \"default\" (levels: block, rack, kubernetes.io/hostname)"); preferred wider than
 * required; slice level wider than required; a slice size that does not divide gang_pods.
 */
enum common_rc topo_request_resolve(const struct topo_request *rq, const char *topo_name,
                                    const char *const *levels, size_t n_levels, int64_t gang_pods,
                                    struct topo_want *out, struct common_error *err);

/* ---- domains ---- */

/*
 * The domain tree of one snapshot. Domain ids are dense, 0..n_domains; dom[node * n_levels + l]
 * is the id of node's domain at level l, or -1 (the node lacks a label at l or above).
 */
struct topo_domains {
    uint32_t n_nodes, n_levels, n_domains;
    int32_t *dom;      /* [n_nodes * n_levels] */
    int32_t *level;    /* [n_domains] the domain's level */
    int32_t *parent;   /* [n_domains] the domain one level up, -1 at level 0 */
    const char **path; /* [n_domains] "block-1/rack-2" (into paths) */
    char *paths;
};

/*
 * topo_domains_build - the domains of n_nodes nodes over n_levels levels: values[node *
 * n_levels + l] is the node's value of level l's label, NULL when the node lacks it (or when
 * the node is to be left out: pass NULL for every level). Ids are given in path order
 * (deterministic). *out is filled (free with topo_domains_free). COMMON_OK or COMMON_ENOMEM.
 * O(n_nodes x n_levels x log n_nodes).
 */
enum common_rc topo_domains_build(const char *const *values, uint32_t n_nodes, uint32_t n_levels,
                                  struct topo_domains *out, struct common_error *err);

/* topo_domains_free - release what build allocated; safe on a zeroed or half-built struct. */
void topo_domains_free(struct topo_domains *d);

/* topo_domain_find - the id of the domain of level `level` whose path is `path`, -1 if none. */
int32_t topo_domain_find(const struct topo_domains *d, int32_t level, const char *path);

/* ---- placement ---- */

/* One scope the planner tries: the nodes of domain `domain` (of level `level`), or the whole
 * cluster (level -1, domain -1: spread). */
struct topo_scope {
    int32_t level;
    int32_t domain;
    int64_t capacity; /* free pods of the gang in it (the sum of cap over its nodes) */
};

/*
 * topo_scopes - the ordered scopes for want, given cap[node] = how many more pods of the gang
 * fit on the node now (0 when none or unusable) and need = pods to place:
 * - required level R (no preferred): the domains of R that hold need, least capacity first
 *   (best fit: the smallest domain that holds the gang), then by path;
 * - preferred level P: the domains of P that hold need (best fit), then those of each wider
 *   level up to R (or level 0), finally (when no R) the whole cluster (spread);
 * - slices alone or nothing asked: the domains of R when R is set, else the whole cluster.
 * sticky_dom (>= 0) is the gang's current domain: when it is among the candidates it goes
 * first. out (caller-allocated, at least d->n_domains + 1 entries) gets *n scopes; *n = 0 means
 * no domain of the required level can hold the gang (topo_wait_reason says why). COMMON_OK or
 * COMMON_ENOMEM (*n = 0; never a silent fallback to the whole cluster).
 */
enum common_rc topo_scopes(const struct topo_domains *d, const struct topo_want *want,
                           const int64_t *cap, int64_t need, int32_t sticky_dom,
                           struct topo_scope *out, size_t *n, struct common_error *err);

/*
 * topo_best_domain - for a slice: the domain of level `level` inside scope (any domain when
 * scope->level < 0) with the least capacity that still holds need pods (ties by path); -1 when
 * none does, -2 when out of memory.
 */
int32_t topo_best_domain(const struct topo_domains *d, int32_t level,
                         const struct topo_scope *scope, const int64_t *cap, int64_t need);

/*
 * topo_node_rank - rank[node] for packing inside scope: the nodes of the sub-domain one level
 * below the scope's with the most free capacity come first (rank 0), then the next one, so a
 * gang fills the fewest sub-domains (KAI's stage two; Kueue BestFit takes domains with the most
 * free capacity first). Levels further down, up to to_level (exclusive; pass n_levels - 1 when
 * the last level is the hostname, whose domains are single nodes), carry on the order
 * (lexicographic by sub-domain capacity, descending, then path). Nodes of the same finest
 * sub-domain share a rank; nodes outside the scope get INT32_MAX. rank is caller-allocated
 * (d->n_nodes entries). COMMON_OK or COMMON_ENOMEM.
 */
enum common_rc topo_node_rank(const struct topo_domains *d, const struct topo_scope *scope,
                              uint32_t to_level, const int64_t *cap, int32_t *rank,
                              struct common_error *err);

/* topo_in_scope - 1 when node is inside scope. */
int topo_in_scope(const struct topo_domains *d, const struct topo_scope *scope, uint32_t node);

/*
 * topo_wait_reason - why no scope holds the gang: writes into buf (size bytes) "no <level>
 * domain has room for the <need> pods the gang needs; the largest, <path>, has room for <cap>"
 * or "no node has the label <level>" when no domain of the level exists.
 */
void topo_wait_reason(const struct topo_domains *d, const char *level_key, int32_t level,
                      const int64_t *cap, int64_t need, char *buf, size_t size);

#endif
