/*
 * cmd/simulate.c - `trainsched simulate`: place training jobs on a simulated cluster over
 * simulated time with the extender's decision cores, and report placements, waits and
 * utilisation. Glue only: reading files (common/yaml), the clock for progress lines, writing
 * the report; loading, the simulation and the reports are sim/'s.
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/snapshot.h"
#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/names.h"
#include "common/yaml.h"
#include "sim/sim.h"

#define MAX_FILES 256

static const char usage[] =
    "Usage: trainsched simulate -f FILE [-f FILE]... [--cluster FILE]... [-o text|json|yaml]\n"
    "                           [--svg FILE] [--until DURATION] [--bind-timeout DURATION]\n"
    "                           [--gpu-resource NAME] [--topology NAME=LEVEL,...]...\n"
    "                           [--gang-gate]\n"
    "       trainsched simulate --from-cluster [--kubeconfig FILE] [--context NAME]\n"
    "                           [--assume-run-time DURATION] [-f FILE]... [options above]\n"
    "\n"
    "Place the jobs in FILE on a simulated cluster over simulated time, with the same gang\n"
    "core the scheduler extender runs (whole-gang planning, holds, timeouts, backoff), and\n"
    "print each job's placement, wait and waiting reason, and the cluster's GPU utilisation,\n"
    "idle GPUs while jobs waited and fragmentation. No cluster is needed.\n"
    "\n"
    "Jobs: TrainJobs (rendered as `trainsched render` does, with their runtimes or the\n"
    "built-in ones), coscheduling PodGroups with their Pods, or Pods. Annotations\n"
    "trainsched.io/sim-arrival and trainsched.io/sim-run-time (durations such as 90s or 2h;\n"
    "defaults 0s and 1h) set when a job arrives and how long its pods run.\n"
    "Cluster: Node objects, or a SimCluster (blocks x racks x nodes); without --cluster,\n"
    "2 blocks x 4 racks x 4 nodes of 8 GPUs, 96 CPUs and 1 TiB memory. Topology: a\n"
    "SimCluster declares topology \"default\" (its block and rack labels, then\n"
    "kubernetes.io/hostname); Kueue or KAI Topology objects in a cluster file and --topology\n"
    "add named ones. Gangs asking a topology level are placed as the extender places them.\n"
    "\n"
    "From the cluster: --from-cluster takes a read-only snapshot (list only: Nodes, Pods,\n"
    "PodGroups, ResourceSlices, ResourceClaims, TrainJobs and runtimes; progress on stderr),\n"
    "runs the pods that are bound as load for their remaining time (trainsched.io/sim-run-time\n"
    "or activeDeadlineSeconds less the time run, else --assume-run-time), and simulates the\n"
    "pending pods and not-yet-started TrainJobs, plus any -f what-if jobs, from now: each\n"
    "waiting gang's predicted start and placement. docs/simulate.md \"From the cluster\".\n"
    "\n"
    "Options:\n"
    "  -f, --filename FILE       jobs (\"-\" reads standard input; a folder: its .yaml, .yml\n"
    "                            and .json files in name order); repeatable, required\n"
    "      --cluster FILE        the cluster (a file or a folder, as for -f); repeatable (the\n"
    "                            nodes add up)\n"
    "  -o, --output FORMAT       text (default), json or yaml\n"
    "      --svg FILE            also write a timeline (nodes x time, jobs coloured) as SVG\n"
    "      --until DURATION      stop at this simulated time (default: when nothing changes)\n"
    "      --bind-timeout DUR    the bind extender's httpTimeout (default 630s, as shipped)\n"
    "      --gpu-resource NAME   the GPU resource name (default nvidia.com/gpu)\n"
    "      --topology SPEC       NAME=LEVEL,LEVEL,... node label keys widest first, as serve's\n"
    "                            --extender-topology; repeatable; replaces a declared name\n"
    "      --from-cluster        the cluster and its waiting jobs from the API (read-only)\n"
    "      --kubeconfig FILE     with --from-cluster: kubeconfig (default: in-cluster, else\n"
    "                            $KUBECONFIG or ~/.kube/config)\n"
    "      --context NAME        with --from-cluster: kubeconfig context\n"
    "      --assume-run-time DUR with --from-cluster: how much longer a running pod runs, and\n"
    "                            how long a waiting job runs, when nothing declares it\n"
    "                            (default 1h)\n"
    "      --gang-gate           members of coscheduling gangs are created with the gang gate\n"
    "                            (trainsched.io/gang), as the pod webhook gives it, and join\n"
    "                            the queue when the extender's ungating pass releases their\n"
    "                            gang whole (members that carry that gate alone always do)\n"
    "  -h, --help                this help\n"
    "\n"
    "Exit status: 0 simulated; 2 bad usage or invalid input (the message names the file,\n"
    "line:column and field); 1 internal error, or the cluster could not be read (a forbidden\n"
    "list names the permission). docs/simulate.md explains the model.\n";

struct progress {
    FILE *err;
    struct timespec start, last;
    int shown;
};

static double since(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* a line on stderr at most once a second, once the run has taken 2 s */
static void progress_cb(void *ctx, int64_t now, size_t done, size_t total)
{
    struct progress *p = ctx;
    struct timespec t;
    char d[32];

    clock_gettime(CLOCK_MONOTONIC, &t);
    if (since(&p->start, &t) < 2.0 || (p->shown && since(&p->last, &t) < 1.0))
        return;
    p->last = t;
    p->shown = 1;
    fprintf(p->err, "simulate: simulated %s, %zu of %zu jobs finished, %.0f s\n",
            sim_format_duration(now, d, sizeof(d)), done, total, since(&p->start, &t));
}

static int load_file(struct common_yaml_docs *f, const char *path, FILE *err)
{
    struct common_error e;

    memset(f, 0, sizeof(*f));
    if (common_yaml_load_file(path, NULL, f, &e)) {
        fprintf(err, "error: %s\n", e.msg);
        return e.code == COMMON_ENOMEM ? 1 : 2;
    }
    return 0;
}

/* "error: " before each line of msg (the loader gives every field error of a TrainJob, one a
 * line, as render prints them) */
static void print_error(FILE *err, const char *msg)
{
    for (const char *p = msg, *nl; *p; p = nl ? nl + 1 : p + strlen(p)) {
        nl = strchr(p, '\n');
        fprintf(err, "error: %.*s\n", nl ? (int)(nl - p) : (int)strlen(p), p);
        if (!nl)
            break;
    }
}

static int status_of(enum common_rc rc)
{
    return rc == COMMON_ENOMEM || rc == COMMON_EIO ? 1 : 2;
}

static int write_output(const struct sim_input *in, const struct sim_result *r, const char *format,
                        FILE *out, FILE *err)
{
    json_t *j;
    struct common_buf b;
    struct common_error e;
    int status = 0;

    if (strcmp(format, "text") == 0)
        return sim_report_text(in, r, out) ? 1 : 0;
    if (!(j = sim_report_json(in, r))) {
        fprintf(err, "error: out of memory\n");
        return 1;
    }
    if (strcmp(format, "json") == 0) {
        /* 15 significant digits: 0.775, not 0.77500000000000002 (the report rounds its
         * ratios to 4 places and times to milliseconds) */
        if (json_dumpf(j, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) ||
            fputc('\n', out) == EOF)
            status = 1;
    } else {
        common_buf_init(&b, (size_t)1 << 31);
        if (common_yaml_emit(j, &b, &e)) {
            fprintf(err, "error: %s\n", e.msg);
            status = 1;
        } else if (fwrite(b.data, 1, b.len, out) != b.len)
            status = 1;
        common_buf_free(&b);
    }
    json_decref(j);
    return status;
}

int cmd_simulate(int argc, char **argv, FILE *out, FILE *err)
{
    static const struct option longopts[] = {{"filename", required_argument, NULL, 'f'},
                                             {"cluster", required_argument, NULL, 'c'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"svg", required_argument, NULL, 's'},
                                             {"until", required_argument, NULL, 'u'},
                                             {"bind-timeout", required_argument, NULL, 'b'},
                                             {"gpu-resource", required_argument, NULL, 'g'},
                                             {"topology", required_argument, NULL, 't'},
                                             {"from-cluster", no_argument, NULL, 'F'},
                                             {"kubeconfig", required_argument, NULL, 'K'},
                                             {"context", required_argument, NULL, 'C'},
                                             {"assume-run-time", required_argument, NULL, 'A'},
                                             {"gang-gate", no_argument, NULL, 'G'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *files[MAX_FILES], *clusters[MAX_FILES], *topos[MAX_FILES];
    char *fpaths[MAX_FILES], *cpaths[MAX_FILES];
    size_t nf = 0, nc = 0, nt = 0, nloaded = 0, nfp = 0, ncp = 0;
    const char *format = "text", *svg = NULL, *gpu = NULL;
    int64_t until = 0, bind_timeout = -1, assume = SIM_DEFAULT_RUN_MS;
    int from_cluster = 0, assume_given = 0, have_kc = 0;
    const char *kcpath = NULL, *context = NULL;
    struct common_kubeconfig kc = {0};
    struct common_kube *kube = NULL;
    struct cmd_snapshot snap = {0};
    struct common_yaml_docs *loaded = NULL;
    struct common_arena *a = NULL;
    struct sim_loader *l = NULL;
    struct sim_input in;
    struct sim_result res;
    struct sim_options opts;
    struct progress prog;
    struct common_error e;
    enum common_rc rc;
    int opt, status = 0, stdin_seen = 0, svg_done = 0, gang_gate = 0;
    FILE *svgf = NULL;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'f':
        case 'c':
            if (opt == 'f' && optarg[0] == '=' && optarg[1]) /* -f=FILE, as render and kubectl */
                optarg++;
            if ((opt == 'f' ? nf : nc) >= MAX_FILES) {
                fprintf(err, "error: more than %d %s files\n", MAX_FILES,
                        opt == 'f' ? "job" : "cluster");
                return 2;
            }
            if (strcmp(optarg, "-") == 0 && stdin_seen++) {
                fprintf(err,
                        "error: %s -: \"-\" (standard input) is given twice: it can be "
                        "read only once\n",
                        opt == 'f' ? "-f" : "--cluster");
                return 2;
            }
            if (opt == 'f')
                files[nf++] = optarg;
            else
                clusters[nc++] = optarg;
            break;
        case 'o':
            format = optarg[0] == '=' ? optarg + 1 : optarg; /* -o=json, as render and kubectl */
            if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "yaml")) {
                fprintf(err, "error: -o: unknown format \"%s\": use text, json or yaml\n", format);
                return 2;
            }
            break;
        case 's':
            svg = optarg;
            break;
        case 'g':
            gpu = optarg;
            if (common_names_qualified_name(gpu)) {
                fprintf(err, "error: --gpu-resource: Invalid value: \"%s\": %s\n", gpu,
                        common_names_qualified_name(gpu));
                return 2;
            }
            break;
        case 't':
            if (nt >= MAX_FILES) {
                fprintf(err, "error: more than %d --topology options\n", MAX_FILES);
                return 2;
            }
            topos[nt++] = optarg;
            break;
        case 'u':
        case 'b':
            if (sim_parse_duration(optarg, opt == 'u' ? &until : &bind_timeout, &e)) {
                fprintf(err, "error: --%s: %s\n", opt == 'u' ? "until" : "bind-timeout", e.msg);
                return 2;
            }
            if (opt == 'u' && until == 0) { /* sim_options.until_ms 0 means "no limit" */
                fprintf(err,
                        "error: --until %s: must be greater than 0 (leave --until out to "
                        "run until nothing changes)\n",
                        optarg);
                return 2;
            }
            break;
        case 'F':
            from_cluster = 1;
            break;
        case 'K':
            kcpath = optarg;
            break;
        case 'C':
            context = optarg;
            break;
        case 'A':
            if (sim_parse_duration(optarg, &assume, &e)) {
                fprintf(err, "error: --assume-run-time: %s\n", e.msg);
                return 2;
            }
            assume_given = 1;
            break;
        case 'G':
            gang_gate = 1;
            break;
        case 'h':
            fputs(usage, out);
            return 0;
        case ':':
            fprintf(err, "error: %s needs a value\n\n%s", argv[optind - 1], usage);
            return 2;
        default:
            fprintf(err, "error: unknown option %s\n\n%s", argv[optind - 1], usage);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(err, "error: unexpected argument \"%s\" (give job files with -f)\n\n%s",
                argv[optind], usage);
        return 2;
    }
    if (!from_cluster && (kcpath || context || assume_given)) {
        fprintf(err, "error: %s: only with --from-cluster\n",
                kcpath    ? "--kubeconfig"
                : context ? "--context"
                          : "--assume-run-time");
        return 2;
    }
    if (from_cluster && nc) {
        fprintf(err, "error: --cluster: the cluster comes from the API with --from-cluster; "
                     "give one or the other\n");
        return 2;
    }
    if (!nf && !from_cluster) {
        fprintf(err, "error: no job files: give at least one -f FILE\n\n%s", usage);
        return 2;
    }
    /* --svg is opened before the run: a path that cannot be written fails now, not after a long
     * run (the file is removed again when the run fails) */
    if (svg && !(svgf = fopen(svg, "w"))) {
        fprintf(err, "error: --svg %s: cannot create the file: %s\n", svg, strerror(errno));
        return 2;
    }
    /* folders, as render reads them ("-" was counted above: counted again here) */
    stdin_seen = 0;
    if ((status = cli_expand_paths(clusters, nc, cpaths, MAX_FILES, &ncp, &stdin_seen, err)) ||
        (status = cli_expand_paths(files, nf, fpaths, MAX_FILES, &nfp, &stdin_seen, err)))
        goto out;
    loaded = common_malloc((nfp + ncp + 1) * sizeof(*loaded));
    a = common_arena_create(0);
    l = a ? sim_loader_create(a, gpu) : NULL;
    if (!loaded || !l) {
        fprintf(err, "error: out of memory\n");
        status = 1;
        goto out;
    }
    if (from_cluster) {
        if (cmd_kubeconfig(kcpath, context, &kc, &e) != COMMON_OK) {
            fprintf(err, "error: kubeconfig: %s\n", e.msg);
            status = 1;
            goto out;
        }
        have_kc = 1;
        if (!(kube = common_kube_client_create(&kc, NULL, &e))) {
            fprintf(err, "error: API client: %s\n", e.msg);
            status = 1;
            goto out;
        }
        if ((status = cmd_snapshot_take(kube, cmd_snapshot_now_ms(), assume, "simulate", err, err,
                                        &snap)))
            goto out;
        if ((rc = sim_load_snapshot(l, &snap.snap, &e))) {
            fprintf(err, "error: %s\n", e.msg);
            status = status_of(rc);
            goto out;
        }
    } else if (!nc) {
        memset(&loaded[0], 0, sizeof(loaded[0]));
        nloaded = 1;
        if (common_yaml_load(sim_default_cluster_yaml, strlen(sim_default_cluster_yaml),
                             "builtin:default-cluster", NULL, &loaded[0], &e) ||
            sim_load_cluster(l, &loaded[0], &e)) {
            fprintf(err, "error: %s\n", e.msg);
            status = 1;
            goto out;
        }
    }
    for (size_t i = 0; i < ncp; i++) {
        if ((status = load_file(&loaded[nloaded++], cpaths[i], err)))
            goto out;
        if ((rc = sim_load_cluster(l, &loaded[nloaded - 1], &e))) {
            fprintf(err, "error: %s\n", e.msg);
            status = status_of(rc);
            goto out;
        }
    }
    for (size_t i = 0; i < nt; i++)
        if ((rc = sim_loader_add_topology(l, topos[i], &e))) {
            fprintf(err, "error: %s\n", e.msg);
            status = status_of(rc);
            goto out;
        }
    for (size_t i = 0; i < nfp; i++) {
        if ((status = load_file(&loaded[nloaded++], fpaths[i], err)))
            goto out;
        if ((rc = sim_load_jobs(l, &loaded[nloaded - 1], &e))) {
            print_error(err, e.msg);
            status = status_of(rc);
            goto out;
        }
    }
    if ((rc = sim_loader_finish(l, &in, &e))) {
        print_error(err, e.msg);
        status = status_of(rc);
        goto out;
    }
    if (bind_timeout >= 0)
        in.gang.bind_http_timeout_ms = bind_timeout;
    memset(&prog, 0, sizeof(prog));
    prog.err = err;
    clock_gettime(CLOCK_MONOTONIC, &prog.start);
    memset(&opts, 0, sizeof(opts));
    opts.until_ms = until;
    opts.gang_gate = gang_gate;
    opts.progress = progress_cb;
    opts.progress_ctx = &prog;
    if ((rc = sim_run(&in, &opts, a, &res, &e))) {
        fprintf(err, "error: %s\n", e.msg);
        status = status_of(rc);
        goto out;
    }
    if (svgf) {
        int bad = sim_report_svg(&in, &res, svgf);
        if (fclose(svgf))
            bad = -1;
        svgf = NULL;
        if (bad) {
            fprintf(err, "error: --svg %s: write failed: %s\n", svg, strerror(errno));
            status = 1;
            goto out;
        }
        svg_done = 1;
    }
    status = write_output(&in, &res, format, out, err);
    if (status == 0 && fflush(out)) {
        fprintf(err, "error: writing the report failed\n");
        status = 1;
    }
out:
    if (svgf)
        fclose(svgf);
    if (svg && !svg_done) /* the run failed: no empty timeline left behind */
        unlink(svg);
    sim_loader_destroy(l);
    for (size_t i = 0; loaded && i < nloaded; i++)
        common_yaml_docs_free(&loaded[i]);
    common_free(loaded);
    common_arena_destroy(a);
    cli_free_paths(fpaths, nfp);
    cli_free_paths(cpaths, ncp);
    cmd_snapshot_free(&snap);
    common_kube_client_destroy(kube);
    if (have_kc)
        common_kubeconfig_free(&kc);
    return status;
}
