/*
 * sim/sim.h - `trainsched simulate`: training jobs placed on a cluster over simulated time by
 * the extender's own decision cores, with no cluster.
 *
 * What it owns. Two pure parts:
 * - the loader (load.c): cluster files (Node objects, NodeLists, or the compact SimCluster
 *   generator form) and job files (TrainJobs rendered by trainjob_render, coscheduling
 *   PodGroups with their Pods, plain Pods) already parsed by common/yaml, into a struct
 *   sim_input. Every error names the file, line:column and field.
 * - the engine (engine.c): a discrete-event loop that plays kube-scheduler's part (a queue in
 *   priority then arrival order, a filter -> prioritize -> bind cycle per pod, the error
 *   backoff of 1 s doubling to 10 s, the unschedulable pool flushed by cluster events or after
 *   5 minutes) and the kubelet's part (a bound pod runs for the job's run time, then Succeeds),
 *   and asks the placement cores every question: gang_filter, gang_prioritize, gang_bind,
 *   gang_tick (gang/gang.h), through the table in policies.c. It never decides a placement
 *   itself. No I/O, no clock: time is simulated milliseconds from 0. Deterministic: the same
 *   input gives the same output, byte for byte.
 * - reports (report.c): the result as JSON (also printed as YAML), a text table and an SVG
 *   timeline.
 *
 * Units: time in milliseconds, GPUs in whole devices (the resource named gpu_resource,
 * nvidia.com/gpu by default). Errors: enum common_rc with struct common_error (common/error.h);
 * decisions (a job that never fits) are results, not errors.
 *
 * Source of the rules: docs/gang.md (the gang core), kube-scheduler v1.36's scheduling queue
 * (pkg/scheduler/backend/queue: podInitialBackoffSeconds 1, podMaxBackoffSeconds 10,
 * podMaxInUnschedulablePodsDuration 5 minutes); the model and its limits are in
 * docs/simulate.md.
 */
#ifndef SIM_SIM_H
#define SIM_SIM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/coretypes.h"
#include "common/error.h"
#include "common/yaml.h"
#include "gang/gang.h"

/* Annotations on a TrainJob, PodGroup or Pod (job-level); values are durations ("90s",
 * "1h30m", "250ms") or whole seconds ("600"). Any other trainsched.io/sim-* key is an error. */
#define SIM_ARRIVAL_ANNOTATION "trainsched.io/sim-arrival"
#define SIM_RUN_TIME_ANNOTATION "trainsched.io/sim-run-time"
#define SIM_ANNOTATION_PREFIX "trainsched.io/sim-"
/* Run time of a job without the annotation. */
#define SIM_DEFAULT_RUN_MS (3600 * 1000LL)
/* Cluster size limits: Kubernetes is tested to 5,000 nodes; past SIM_MAX_NODES is refused. */
#define SIM_MAX_NODES 20000
#define SIM_MAX_PODS 500000
/* Time limit of a simulation: arrivals and run times past it are refused (ten years). */
#define SIM_MAX_TIME_MS (10LL * 365 * 24 * 3600 * 1000)

/* The compact cluster that serves when no --cluster is given (docs/simulate.md): 2 blocks x 4
 * racks x 4 nodes of 8 GPUs, 96 CPUs, 1 TiB memory, 110 pods. */
extern const char sim_default_cluster_yaml[];

/* A named topology: node label keys, widest first (kubernetes.io/hostname only last). */
struct sim_topology {
    const char *name;
    const char **levels;
    size_t n_levels;
};

/* One job: the pods that arrive together and one gang (or none). */
struct sim_job {
    const char *name; /* "namespace/name" of the TrainJob, PodGroup or Pod */
    const char *kind; /* "TrainJob", "PodGroup", "Pod" */
    int64_t arrival_ms;
    int64_t run_ms;
    /* the coscheduling PodGroup (decoded, strings in the loader's arena); for a job without
     * one the loader makes a PodGroup of minMember 0 named after the job and its kind
     * ("sim-trainjob:NAME", "sim-pod:NAME") and labels its pods
     * with it, so the core fits them per node and binds each at once (docs/gang.md: "minMember
     * 0: no gang constraint") */
    struct gang_podgroup pg;
    int gang; /* 1: a real gang (minMember > 0) */
    struct common_pod **pods;
    /* when each pod is created: NULL = all at arrival_ms; else [n_pods], each >= arrival_ms
     * (a PodGroup's pods may carry their own trainsched.io/sim-arrival: a pod created late) */
    int64_t *pod_arrival_ms;
    size_t n_pods;
    int64_t gpus;     /* sum of the pods' GPU requests */
    int64_t pod_gpus; /* the smallest non-zero GPU request of a pod, 0 for CPU-only jobs */
    const char *note; /* a loader remark printed with the job ("volcano backend: ...") or NULL */
};

/* A pod that runs when the simulation starts (a snapshot of a live cluster, sim/snapshot.c): it
 * holds its requests on pod->node_name (a node of the input) from time 0 until end_ms, then
 * Succeeds. It is no job: the report does not list it. */
struct sim_load {
    const struct common_pod *pod;
    int64_t end_ms;
};

struct sim_input {
    struct common_node **nodes; /* in name order */
    size_t n_nodes;
    struct sim_job *jobs; /* in arrival, then input order */
    size_t n_jobs;
    /* Levels reported: node label keys, widest first; the report counts the domains each job
     * spans at each (the default topology's levels without kubernetes.io/hostname). */
    const char **levels;
    size_t n_levels;
    /* The topologies handed to the gang core (gang_topology_set, in this order: the first is
     * the default): a SimCluster declares "default" = its block and rack label keys and
     * kubernetes.io/hostname; Kueue and KAI Topology objects in the cluster file
     * (spec.levels[].nodeLabel) and sim_loader_add_topology add named ones. None: placement
     * is not topology-aware and topology requests are refused by the core (unknown topology). */
    struct sim_topology *topologies;
    size_t n_topologies;
    const char *gpu_resource;
    struct gang_config gang; /* the extender's gang configuration */
    /* pods running at time 0 (sim_load_snapshot), in input order; none for files */
    struct sim_load *load;
    size_t n_load;
    /* remarks on the input as a whole (what a snapshot could not model), printed with the
     * report; none for files */
    const char **notes;
    size_t n_notes;
    /* wall-clock time of simulated time 0 in Unix milliseconds (a snapshot's time), 0: none;
     * the report then gives each start as a time of day too */
    int64_t epoch_ms;
};

/* ---- loading ---- */

struct sim_loader;

/*
 * sim_loader_create - a loader whose objects live in arena a (borrowed; it must outlive the
 * input). gpu_resource NULL = the spec.gpuResource of the first SimCluster that declares one,
 * else "nvidia.com/gpu"; a SimCluster declaring another resource than the one in force (given
 * here, or by an earlier SimCluster) is refused by sim_load_cluster naming spec.gpuResource.
 * Returns NULL when out of memory.
 */
struct sim_loader *sim_loader_create(struct common_arena *a, const char *gpu_resource);

/*
 * sim_load_cluster - add the nodes of file f (loaded by common_yaml_load*, borrowed and kept
 * alive until sim_loader_finish): documents of kind Node (v1), NodeList or List of Nodes, or
 * SimCluster (trainsched.io/v1alpha1, the generator form: spec.blocks, racksPerBlock,
 * nodesPerRack, gpusPerNode, cpusPerNode, memoryPerNode, podsPerNode, labels, taints,
 * levels; docs/simulate.md). Errors: COMMON_EINVAL "file:line:col: Kind name: field: what"
 * (unknown field, wrong type, negative count, a bad quantity, a duplicate node name, more than
 * SIM_MAX_NODES nodes), COMMON_ENOMEM.
 */
enum common_rc sim_load_cluster(struct sim_loader *l, const struct common_yaml_docs *f,
                                struct common_error *err);

/*
 * sim_loader_add_topology - declare topology NAME=LEVEL,LEVEL,... (spec, the syntax of serve's
 * --extender-topology: node label keys, widest first). A name declared again replaces the
 * levels (the last declaration wins; its place in the order is the first one's). The levels
 * are checked by the gang core when the simulation starts. Errors: COMMON_EINVAL "--topology
 * SPEC: must be NAME=LEVEL[,LEVEL...]" (empty name or level), COMMON_ENOMEM.
 */
enum common_rc sim_loader_add_topology(struct sim_loader *l, const char *spec,
                                       struct common_error *err);

/*
 * sim_load_jobs - add the jobs of file f: TrainJob (trainer.kubeflow.org/v1alpha1, rendered
 * through trainjob_render with its runtime from any loaded file or the built-in
 * ClusterTrainingRuntimes; the JobSet's replicated jobs become pods: replicas x
 * min(parallelism, completions) each), TrainingRuntime / ClusterTrainingRuntime (for the
 * TrainJobs), PodGroup (scheduling.x-k8s.io/v1alpha1) with the Pods labelled
 * scheduling.x-k8s.io/pod-group, plain Pods; a v1 List of them. TrainJobs are rendered in
 * sim_loader_finish, once every runtime is known. Errors as sim_load_cluster (a pod with
 * spec.nodeName, a negative or malformed sim- annotation, an unknown kind or sim- key).
 */
enum common_rc sim_load_jobs(struct sim_loader *l, const struct common_yaml_docs *f,
                             struct common_error *err);

/*
 * sim_loader_finish - render the TrainJobs, attach pods to their PodGroups, check that the
 * cluster has nodes and every labelled pod its PodGroup, sort, and fill *in (strings and
 * arrays in the arena; nodes and pods are freed by sim_loader_destroy). Warnings (a Volcano
 * PodGroup simulated without gang) go to job notes. Errors as above ("no nodes": the cluster
 * file is named), COMMON_ENOMEM.
 */
enum common_rc sim_loader_finish(struct sim_loader *l, struct sim_input *in,
                                 struct common_error *err);

/*
 * A read-only snapshot of a live cluster, as `trainsched simulate --from-cluster` lists it: each
 * member is the items array of the API's list (objects as the API serves them, wire format;
 * apiVersion and kind may be missing), NULL when the kind was not read (not served, or
 * forbidden: the glue says which).
 */
struct sim_snapshot {
    const json_t *nodes;                     /* v1 Nodes */
    const json_t *pods;                      /* v1 Pods, all namespaces */
    const json_t *pod_groups;                /* scheduling.x-k8s.io/v1alpha1 PodGroups */
    const json_t *resource_slices;           /* resource.k8s.io/v1 ResourceSlices */
    const json_t *resource_claims;           /* resource.k8s.io/v1 ResourceClaims */
    const json_t *train_jobs;                /* trainer.kubeflow.org/v1alpha1 TrainJobs */
    const json_t *training_runtimes;         /* ... TrainingRuntimes */
    const json_t *cluster_training_runtimes; /* ... ClusterTrainingRuntimes */
    int64_t now_ms;                          /* when it was taken (Unix ms): simulated time 0 */
    int64_t assume_run_ms; /* a pod's remaining run time when nothing declares it */
};

/*
 * sim_load_snapshot - add snapshot s (borrowed) to loader l (docs/simulate.md "From the
 * cluster"): the Nodes become the cluster; every bound pod that has not ended becomes load
 * (struct sim_load) on its node until its remaining time: its trainsched.io/sim-run-time (on
 * the pod, its PodGroup or its TrainJob) or spec.activeDeadlineSeconds, less the time since
 * status.startTime (never below 0), else s->assume_run_ms; the pending pods become the waiting
 * jobs, arriving at 0: a PodGroup's pending members with their PodGroup (minMember less its
 * bound members), other pending pods one Pod job each, with the run time they declare or
 * assume_run_ms; a TrainJob that has not finished and has no pod yet is rendered as -f renders
 * it. Waiting jobs enter in the order they were created. Partly missing data is no error: a Node
 * without allocatable, a pod on a node the snapshot does not hold, a PodGroup without pods, a
 * pod naming a missing PodGroup, a job the loader refuses (ResourceClaims: DRA is not
 * modelled), a ResourceSlice without a node each become a note (sim_input.notes; five of a kind,
 * then a count). Call sim_load_jobs for -f files after it, then sim_loader_finish (no jobs at
 * all is then a result, not an error). Returns COMMON_OK or COMMON_ENOMEM.
 */
enum common_rc sim_load_snapshot(struct sim_loader *l, const struct sim_snapshot *s,
                                 struct common_error *err);

/* sim_job_trainjob - "namespace/name" of the TrainJob job j stands for (a TrainJob job, or pods
 * labelled jobset.sigs.k8s.io/jobset-name, which the TrainJob's JobSet carries) into buf;
 * NULL when none. */
const char *sim_job_trainjob(const struct sim_job *j, char *buf, size_t n);

/* sim_parse_time - RFC 3339 ("2026-12-08T00:53:55Z", fractions and offsets read) -> Unix ms;
 * -1 when NULL or malformed. */
int64_t sim_parse_time(const char *s);

/* sim_loader_destroy - free the decoded nodes and pods. NULL is a no-op. */
void sim_loader_destroy(struct sim_loader *l);

/* ---- the engine ---- */

enum sim_job_state {
    SIM_JOB_COMPLETED = 0, /* every pod ran and Succeeded */
    SIM_JOB_RUNNING,       /* still running when the simulation stopped (--until) */
    SIM_JOB_WAITING,       /* not placed when the simulation stopped (--until) */
    SIM_JOB_NEVER_FITS     /* not placed, and does not fit even on the empty cluster */
};

/* pods of a job bound at one time */
struct sim_wave {
    int64_t start_ms;
    uint32_t pods;
};

struct sim_job_result {
    enum sim_job_state state;
    int64_t start_ms;   /* when its last pod bound (-1 never) */
    int64_t end_ms;     /* when its last pod finished (-1 not yet) */
    int64_t wait_ms;    /* start (or the end of the simulation) - arrival */
    const char **nodes; /* distinct nodes its pods ran on, in name order */
    size_t n_nodes;
    /* per topology level: how many distinct domains (label values) its nodes span */
    uint32_t *domains;
    /* the topology domain the gang core placed the gang in (gang_info: a path of label values
     * from the widest level, "b0/b0-r1") and the node label key of its level; "" when the job
     * asked no topology, is not a gang, or never started */
    const char *domain;
    const char *domain_level;
    const char *reason;     /* the last reason the cores gave while it waited, "" if none */
    uint32_t gang_failures; /* attempts that held members and failed (timeout, lost node) */
    uint32_t filters;       /* filter calls for its pods */
    /* waves: its pods grouped by the time they were bound, in time order (one wave for a gang
     * placed whole; a job without a gang on too small a cluster runs in several) */
    struct sim_wave *waves;
    size_t n_waves;
    uint32_t peak_pods; /* the most of its pods running at one time */
    /* 1: it never had all the pods it needs running at once (a job without a gang: all its
     * pods; a gang: minMember) although it started: a distributed job that never ran whole */
    int never_whole;
};

/* One point of the cluster timeline, taken at every time the numbers change. */
struct sim_sample {
    int64_t t;
    int64_t gpus_used; /* GPUs of bound, running pods */
    int64_t gpus_idle; /* free GPUs while some job waits (0 when none waits) */
    int64_t gpus_frag; /* free GPUs on nodes where no pod of the smallest waiting gang fits
                           by GPU count (0 when none waits) */
    uint32_t waiting;  /* jobs arrived and not started */
    uint32_t running;  /* jobs started and not finished */
};

/* A pod's stay on a node, for the SVG timeline. */
struct sim_interval {
    uint32_t node; /* index into sim_input.nodes */
    uint32_t job;
    int64_t start, end;
};

struct sim_result {
    struct sim_job_result *jobs; /* [n_jobs], as sim_input.jobs */
    struct sim_sample *samples;
    size_t n_samples;
    struct sim_interval *intervals;
    size_t n_intervals;
    int64_t end_ms; /* when the last thing happened */
    int64_t gpus_total;
    uint64_t events;        /* arrivals, filter/bind cycles, completions and timer ticks */
    uint64_t filters;       /* gang_filter calls */
    uint64_t filters_saved; /* filters whose answer was certain (sim/engine.c answer_known) */
    uint64_t binds;         /* gang_bind calls */
    /* pods the loop handled one at a time (scheduling cycles, queue moves, events); a pod
     * retried as a follower of its cohort's leader is not counted. Not in the report: it
     * measures the engine's work, which grows linearly with pods. */
    uint64_t pod_steps;
    uint64_t gang_failures;
    /* time-weighted over [0, end_ms] */
    double util_avg;       /* GPUs used / GPUs total */
    double gpu_hours_idle; /* GPU-hours free while some job waited */
    double gpu_hours_frag; /* GPU-hours of gpus_frag */
    /* over the jobs that started and those that arrived and were still waiting at the end
     * (their wait counted to end_ms) */
    double wait_avg_ms;
    int64_t wait_max_ms;
    uint32_t jobs_still_waiting; /* arrived, not started at end_ms (Waiting or NeverFits) */
    /* per level: jobs (started, more than one pod) whose nodes lie in one domain of the level */
    uint32_t *jobs_in_one_domain;
    uint32_t multi_pod_jobs;
};

struct sim_options {
    int64_t until_ms; /* stop at this simulated time (0: run until nothing can change) */
    /* called every few thousand events with the simulated time and the jobs finished so far;
     * may be NULL */
    void (*progress)(void *ctx, int64_t now, size_t done, size_t total);
    void *progress_ctx;
    /* 1: call the core for every filter, never reuse an answer known in advance (see
     * filters_saved); the placements are the same, only slower. For tests. */
    int call_every_filter;
    /* 1: every waiting pod is retried on its own, never as a follower of a sibling whose
     * answer it shares (sim/engine.c, "cohorts"); the report is the same byte for byte, only
     * slower (time grows with waiting pods x capacity changes). For tests. */
    int retry_each_pod;
    /* 1: every member of a coscheduling gang (minMember > 0) is created with the gang gate
     * (trainsched.io/gang), as the pod webhook gives it when the extender is wired. Members that
     * carry that gate alone in the input are created gated either way. A gated member is offered
     * to the simulated queue only when gang_ungate hands it out (whole gangs at a time), as the
     * extender's ungating pass does. */
    int gang_gate;
};

/*
 * sim_run - simulate in over time; *out (zeroed first) lives in arena a. The loop ends when
 * no arrival, completion, hold deadline or queued retry is left that could change anything
 * (jobs still waiting then are checked against the empty cluster: SIM_JOB_NEVER_FITS with the
 * core's reason, else SIM_JOB_WAITING), or at opts->until_ms. Returns COMMON_OK;
 * COMMON_EINVAL when the gang core refuses an input object (the message names it);
 * COMMON_ENOMEM.
 */
enum common_rc sim_run(const struct sim_input *in, const struct sim_options *opts,
                       struct common_arena *a, struct sim_result *out, struct common_error *err);

/* ---- reports ---- */

/*
 * sim_report_json - the result as one object (a new reference, NULL when out of memory):
 * {"cluster": {nodes, gpus, levels}, "jobs": [{name, kind, pods, gpus, arrival, start, end,
 * wait (seconds, numbers), state, nodes, domains {level: count}, reason, gangFailures}],
 * "summary": {...}, "timeline": [{t, gpusUsed, gpusIdleWhileWaiting, gpusFragmented,
 * waiting, running}]}. Field names are documented in docs/simulate.md.
 */
json_t *sim_report_json(const struct sim_input *in, const struct sim_result *r);

/* sim_report_text - the readable tables. Returns 0, or -1 on a write error. */
int sim_report_text(const struct sim_input *in, const struct sim_result *r, FILE *out);

/*
 * sim_report_svg - the timeline as a standalone SVG document: one row per node (at most 400
 * rows; the rest are summarised in a note), time left to right, each pod a bar in its job's
 * colour, a legend of jobs and the GPU utilisation curve below. Returns 0, or -1 on a write
 * error.
 */
int sim_report_svg(const struct sim_input *in, const struct sim_result *r, FILE *out);

/* sim_format_duration - "1h2m3s", "250ms", "0s" into buf. Returns buf. */
const char *sim_format_duration(int64_t ms, char *buf, size_t n);

/* sim_parse_duration - "90s", "1h30m", "250ms", "2d", or whole seconds "600" -> ms. Returns
 * COMMON_OK or COMMON_EINVAL ("must be a duration such as 90s or 1h30m", "must not be
 * negative", "too large"). */
enum common_rc sim_parse_duration(const char *s, int64_t *ms, struct common_error *err);

#endif
