/*
 * bench/bench_codec.c - the cost of the extender wire codec (extender/codec) at 5,000 nodes.
 *
 * Two filter requests as kube-scheduler sends them for one gang pod (a realistic Pod of about
 * 4 KB: labels, owner, init containers and a sidecar, affinity, tolerations, status):
 *   names - nodeCacheCapable: true, "NodeNames" with 5,000 names ("gpu-b03-r07-n0042");
 *   full  - nodeCacheCapable: false, "Nodes" with 5,000 full Node objects of about 3.5 KB
 *           (labels, managedFields, taints, capacity, conditions, images), as the scheduler's
 *           informer holds them.
 * One request = arena + decode + a filter answer (every other node passes, the rest fail with
 * a reason; in full mode the passing nodes are echoed) + arena release. The floor is what a
 * plain jansson service does at least: json_loadb of the same body and json_dumpb of the whole
 * tree. Also shown: the decode and the encode alone, and a prioritize answer for 5,000 nodes.
 * Figures are per request (median, p99 of single runs; mean for the full body).
 *
 * Run: ./build-rel/bench/bench_codec [ROUNDS]   (default 2000; build with
 *      -DCMAKE_BUILD_TYPE=Release)
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "extender/codec.h"

#define NODES 5000

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static const char POD[] =
    "{\"metadata\":{\"name\":\"llama-trainer-0-3-x7k2p\",\"generateName\":\"llama-trainer-0-3-\","
    "\"namespace\":\"ml\",\"uid\":\"7f15ede2-3c74-4d3b-89b3-756aafe2bc2b\",\"resourceVersion\":"
    "\"1234567\",\"creationTimestamp\":\"2026-11-29T16:36:06Z\",\"labels\":{"
    "\"batch.kubernetes.io/controller-uid\":\"6d1c3e0a-4e35-4a8e-9d1f-0a8f2b7c9e11\","
    "\"batch.kubernetes.io/job-completion-index\":\"3\",\"batch.kubernetes.io/job-name\":"
    "\"llama-trainer-0\",\"jobset.sigs.k8s.io/jobset-name\":\"llama\","
    "\"jobset.sigs.k8s.io/replicatedjob-name\":\"trainer\",\"scheduling.x-k8s.io/pod-group\":"
    "\"llama\",\"trainer.kubeflow.org/trainjob-ancestor-step\":\"trainer\"},\"annotations\":{"
    "\"batch.kubernetes.io/job-completion-index\":\"3\",\"jobset.sigs.k8s.io/global-replicas\":"
    "\"16\"},\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":"
    "\"llama-trainer-0\",\"uid\":\"6d1c3e0a-4e35-4a8e-9d1f-0a8f2b7c9e11\",\"controller\":true,"
    "\"blockOwnerDeletion\":true}],\"finalizers\":[\"batch.kubernetes.io/job-tracking\"]},"
    "\"spec\":{\"volumes\":[{\"name\":\"dshm\",\"emptyDir\":{\"medium\":\"Memory\"}},{\"name\":"
    "\"kube-api-access-psg5t\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{"
    "\"expirationSeconds\":3607,\"path\":\"token\"}},{\"configMap\":{\"name\":"
    "\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}}],"
    "\"defaultMode\":420}}],\"initContainers\":[{\"name\":\"fetch-weights\",\"image\":"
    "\"ghcr.io/kubeflow/trainer/model-initializer:v2.1.0\",\"resources\":{\"requests\":{"
    "\"cpu\":\"2\",\"memory\":\"4Gi\"}},\"terminationMessagePath\":\"/dev/termination-log\","
    "\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":\"IfNotPresent\"},{\"name\":"
    "\"log-shipper\",\"image\":\"fluent/fluent-bit:3.1\",\"resources\":{\"requests\":{\"cpu\":"
    "\"100m\",\"memory\":\"64Mi\"}},\"restartPolicy\":\"Always\",\"terminationMessagePath\":"
    "\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":"
    "\"IfNotPresent\"}],\"containers\":[{\"name\":\"node\",\"image\":"
    "\"pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime\",\"command\":[\"torchrun\"],\"args\":["
    "\"--nnodes=16\",\"--nproc-per-node=8\",\"/workspace/train.py\"],\"ports\":[{"
    "\"containerPort\":29500,\"protocol\":\"TCP\"}],\"env\":[{\"name\":\"PET_NNODES\",\"value\":"
    "\"16\"},{\"name\":\"PET_NPROC_PER_NODE\",\"value\":\"8\"},{\"name\":\"PET_NODE_RANK\","
    "\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.annotations["
    "'batch.kubernetes.io/job-completion-index']\"}}},{\"name\":\"PET_MASTER_ADDR\",\"value\":"
    "\"llama-trainer-0-0.llama\"},{\"name\":\"PET_MASTER_PORT\",\"value\":\"29500\"}],"
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\",\"trainsched.io/gang\":\"1\"},"
    "\"requests\":{\"cpu\":\"48\",\"memory\":\"900Gi\",\"nvidia.com/gpu\":\"8\","
    "\"trainsched.io/gang\":\"1\"}},\"volumeMounts\":[{\"name\":\"dshm\",\"mountPath\":"
    "\"/dev/shm\"},{\"name\":\"kube-api-access-psg5t\",\"readOnly\":true,\"mountPath\":"
    "\"/var/run/secrets/kubernetes.io/serviceaccount\"}],\"terminationMessagePath\":"
    "\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":"
    "\"IfNotPresent\"}],\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":30,"
    "\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":\"default\",\"serviceAccount\":"
    "\"default\",\"hostname\":\"llama-trainer-0-3\",\"subdomain\":\"llama\",\"securityContext\":"
    "{},\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
    "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.present\","
    "\"operator\":\"Exists\"},{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\","
    "\"values\":[\"zone-1\",\"zone-2\"]}]}]}}},\"schedulerName\":\"default-scheduler\","
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
    "\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
    "\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":"
    "\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
    "\"tolerationSeconds\":300}],\"priorityClassName\":\"train-high\",\"priority\":100000,"
    "\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"},\"status\":{"
    "\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
    "\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-29T16:36:06Z\",\"reason\":"
    "\"Unschedulable\",\"message\":\"0/5000 nodes are available: 5000 gang llama: waiting for "
    "members.\"}],\"qosClass\":\"Burstable\"}}";

static void node_name(char *out, size_t n, int i)
{
    snprintf(out, n, "gpu-b%02d-r%02d-n%04d", i / 500, (i / 50) % 10, i);
}

static void put(struct common_buf *b, const char *s)
{
    struct common_error err;

    if (common_buf_puts(b, s, &err)) {
        fprintf(stderr, "bench_codec: %s\n", err.msg);
        exit(1);
    }
}

static void build_names(struct common_buf *b)
{
    char name[64];
    int i;

    put(b, "{\"Pod\":");
    put(b, POD);
    put(b, ",\"Nodes\":null,\"NodeNames\":[");
    for (i = 0; i < NODES; i++) {
        if (i)
            put(b, ",");
        put(b, "\"");
        node_name(name, sizeof(name), i);
        put(b, name);
        put(b, "\"");
    }
    put(b, "]}");
}

static void build_full(struct common_buf *b)
{
    struct common_error err;
    char name[64];
    int i, k;

    put(b, "{\"Pod\":");
    put(b, POD);
    put(b, ",\"Nodes\":{\"metadata\":{\"resourceVersion\":\"1234567\"},\"items\":[");
    for (i = 0; i < NODES; i++) {
        node_name(name, sizeof(name), i);
        if (common_buf_printf(
                b, &err,
                "%s{\"metadata\":{\"name\":\"%s\",\"uid\":\"d3e778a9-34df-4c9e-9fe8-%012d\","
                "\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-11-29T16:35:54Z\","
                "\"labels\":{\"beta.kubernetes.io/arch\":\"amd64\",\"beta.kubernetes.io/os\":"
                "\"linux\",\"kubernetes.io/arch\":\"amd64\",\"kubernetes.io/hostname\":\"%s\","
                "\"kubernetes.io/os\":\"linux\",\"node.kubernetes.io/instance-type\":"
                "\"a3-highgpu-8g\",\"nvidia.com/gpu.present\":\"true\",\"nvidia.com/gpu.clique\":"
                "\"c%02d.%d\",\"topology.kubernetes.io/region\":\"region-1\","
                "\"topology.kubernetes.io/zone\":\"zone-%d\",\"cloud.google.com/"
                "gce-topology-block\":\"b%02d\",\"cloud.google.com/gce-topology-subblock\":"
                "\"r%02d\"},\"annotations\":{\"node.alpha.kubernetes.io/ttl\":\"0\","
                "\"volumes.kubernetes.io/controller-managed-attach-detach\":\"true\"},"
                "\"managedFields\":[{\"manager\":\"kubelet\",\"operation\":\"Update\","
                "\"apiVersion\":\"v1\",\"time\":\"2026-11-29T16:35:54Z\",\"fieldsType\":"
                "\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{},"
                "\"f:kubernetes.io/hostname\":{},\"f:kubernetes.io/os\":{}}},\"f:status\":{"
                "\"f:allocatable\":{\"f:nvidia.com/gpu\":{}},\"f:capacity\":{"
                "\"f:nvidia.com/gpu\":{}}}}}]},\"spec\":{\"podCIDR\":\"10.%d.%d.0/24\","
                "\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":"
                "\"NoSchedule\"}]},\"status\":{\"capacity\":{\"cpu\":\"208\","
                "\"ephemeral-storage\":\"1Ti\",\"hugepages-2Mi\":\"0\",\"memory\":\"1870Gi\","
                "\"nvidia.com/gpu\":\"8\",\"pods\":\"110\",\"trainsched.io/gang\":\"110\"},"
                "\"allocatable\":{\"cpu\":\"207500m\",\"ephemeral-storage\":\"1e12\","
                "\"hugepages-2Mi\":\"0\",\"memory\":\"1869Gi\",\"nvidia.com/gpu\":\"8\","
                "\"pods\":\"110\",\"trainsched.io/gang\":\"110\"},\"conditions\":[",
                i ? "," : "", name, i, 1000 + i, name, i / 50, i % 50, i / 2500 + 1, i / 500,
                (i / 50) % 10, i / 250, i % 250)) {
            fprintf(stderr, "bench_codec: %s\n", err.msg);
            exit(1);
        }
        put(b, "{\"type\":\"MemoryPressure\",\"status\":\"False\",\"lastHeartbeatTime\":"
               "\"2026-11-29T17:00:00Z\",\"lastTransitionTime\":\"2026-11-29T16:35:54Z\","
               "\"reason\":\"KubeletHasSufficientMemory\",\"message\":\"kubelet has sufficient "
               "memory available\"},{\"type\":\"DiskPressure\",\"status\":\"False\","
               "\"lastHeartbeatTime\":\"2026-11-29T17:00:00Z\",\"lastTransitionTime\":"
               "\"2026-11-29T16:35:54Z\",\"reason\":\"KubeletHasNoDiskPressure\",\"message\":"
               "\"kubelet has no disk pressure\"},{\"type\":\"Ready\",\"status\":\"True\","
               "\"lastHeartbeatTime\":\"2026-11-29T17:00:00Z\",\"lastTransitionTime\":"
               "\"2026-11-29T16:36:10Z\",\"reason\":\"KubeletReady\",\"message\":\"kubelet is "
               "posting ready status\"}],\"addresses\":[{\"type\":\"InternalIP\",\"address\":"
               "\"10.0.0.1\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},"
               "\"nodeInfo\":{\"machineID\":\"0123456789abcdef\",\"kernelVersion\":"
               "\"6.1.0-28-cloud-amd64\",\"osImage\":\"Debian GNU/Linux 12 (bookworm)\","
               "\"containerRuntimeVersion\":\"containerd://1.7.24\",\"kubeletVersion\":"
               "\"v1.36.3\",\"operatingSystem\":\"linux\",\"architecture\":\"amd64\"},"
               "\"images\":[");
        for (k = 0; k < 6; k++) {
            if (common_buf_printf(b, &err,
                                  "%s{\"names\":[\"registry.example.com/ml/image-%d@sha256:"
                                  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
                                  "cdef\",\"registry.example.com/ml/image-%d:v1.%d\"],"
                                  "\"sizeBytes\":%d}",
                                  k ? "," : "", k, k, k, 100000000 + k)) {
                fprintf(stderr, "bench_codec: %s\n", err.msg);
                exit(1);
            }
        }
        put(b, "]}}");
    }
    put(b, "]},\"NodeNames\":null}");
}

struct result {
    double median, p99, mean;
};

static struct result summarize(double *t, int n)
{
    struct result r = {0};
    int i;

    for (i = 0; i < n; i++)
        r.mean += t[i];
    r.mean /= n;
    qsort(t, (size_t)n, sizeof(double), bench_cmp_double);
    r.median = t[n / 2];
    r.p99 = t[(int)((double)n * 0.99) < n ? (int)((double)n * 0.99) : n - 1];
    return r;
}

static uint8_t verdict[NODES];
static const char *reason[NODES];
static int64_t score[NODES];

enum what { W_CODEC, W_DECODE, W_ENCODE, W_FLOOR, W_JPARSE, W_PRIO };

/* one_run - one request's worth of the measured work. */
static void one_run(enum what w, const struct common_buf *body, struct common_buf *out,
                    const struct extender_args *pre)
{
    struct common_error err;
    struct extender_args *x;
    struct common_arena *a;
    json_t *j;
    char *s;

    switch (w) {
    case W_CODEC:
    case W_DECODE:
        a = common_arena_create(0);
        if (!a || extender_decode_args(a, body->data, body->len, NULL, &x, &err)) {
            fprintf(stderr, "bench_codec: decode: %s\n", err.msg);
            exit(1);
        }
        if (w == W_CODEC && extender_encode_filter_result(out, x, verdict, reason, &err)) {
            fprintf(stderr, "bench_codec: encode: %s\n", err.msg);
            exit(1);
        }
        common_arena_destroy(a);
        break;
    case W_ENCODE:
        if (extender_encode_filter_result(out, pre, verdict, reason, &err)) {
            fprintf(stderr, "bench_codec: encode: %s\n", err.msg);
            exit(1);
        }
        break;
    case W_PRIO:
        if (extender_encode_priorities(out, pre, score, &err)) {
            fprintf(stderr, "bench_codec: prioritize: %s\n", err.msg);
            exit(1);
        }
        break;
    case W_FLOOR:
    case W_JPARSE:
        j = json_loadb(body->data, body->len, 0, NULL);
        if (!j) {
            fprintf(stderr, "bench_codec: jansson refused the body\n");
            exit(1);
        }
        if (w == W_FLOOR) {
            s = json_dumps(j, JSON_COMPACT);
            free(s);
        }
        json_decref(j);
        break;
    }
    common_buf_reset(out);
}

static struct result measure(enum what w, const struct common_buf *body, int rounds,
                             const struct extender_args *pre)
{
    struct common_buf out;
    double *t = malloc(sizeof(double) * (size_t)rounds);
    struct result r;
    int i;

    if (!t)
        exit(1);
    common_buf_init(&out, (size_t)1 << 30);
    one_run(w, body, &out, pre); /* warm up */
    for (i = 0; i < rounds; i++) {
        double t0 = now_us();
        one_run(w, body, &out, pre);
        t[i] = now_us() - t0;
    }
    r = summarize(t, rounds);
    common_buf_free(&out);
    free(t);
    return r;
}

static void report(const char *mode, const struct common_buf *body, int rounds)
{
    struct common_arena *a = common_arena_create(0);
    struct extender_args *pre;
    struct common_error err;
    struct result codec, dec, enc, floor_, jparse, prio;

    if (!a || extender_decode_args(a, body->data, body->len, NULL, &pre, &err)) {
        fprintf(stderr, "bench_codec: %s\n", err.msg);
        exit(1);
    }
    codec = measure(W_CODEC, body, rounds, pre);
    dec = measure(W_DECODE, body, rounds, pre);
    enc = measure(W_ENCODE, body, rounds, pre);
    prio = measure(W_PRIO, body, rounds, pre);
    floor_ = measure(W_FLOOR, body, rounds, pre);
    jparse = measure(W_JPARSE, body, rounds, pre);
    printf("%s: %d nodes, body %.1f KB, %d rounds (median / p99 / mean, us per request)\n", mode,
           NODES, (double)body->len / 1024.0, rounds);
    printf("  codec filter (decode + answer):   %9.1f %9.1f %9.1f\n", codec.median, codec.p99,
           codec.mean);
    printf("    decode alone:                   %9.1f %9.1f %9.1f\n", dec.median, dec.p99,
           dec.mean);
    printf("    filter answer alone:            %9.1f %9.1f %9.1f\n", enc.median, enc.p99,
           enc.mean);
    printf("    prioritize answer alone:        %9.1f %9.1f %9.1f\n", prio.median, prio.p99,
           prio.mean);
    printf("  floor (jansson parse + dump):     %9.1f %9.1f %9.1f\n", floor_.median, floor_.p99,
           floor_.mean);
    printf("    jansson parse alone:            %9.1f %9.1f %9.1f\n", jparse.median, jparse.p99,
           jparse.mean);
    printf("  ratio codec/floor: %.2f (median), %.2f (mean)\n", codec.median / floor_.median,
           codec.mean / floor_.mean);
    common_arena_destroy(a);
}

int main(int argc, char **argv)
{
    struct common_buf names, full;
    long rounds = 2000;
    char *end;
    int i;

    if (argc > 1) {
        rounds = strtol(argv[1], &end, 10);
        if (*end || rounds < 10 || rounds > 1000000) {
            fprintf(stderr, "usage: bench_codec [ROUNDS]   (10..1000000, default 2000)\n");
            return 2;
        }
    }
    common_alloc_init();
    for (i = 0; i < NODES; i++) {
        verdict[i] = i % 2 ? EXTENDER_FAIL : EXTENDER_PASS;
        reason[i] = "gang llama: block b03 cannot host 16 more pods";
        score[i] = i % 11;
    }
    common_buf_init(&names, (size_t)1 << 30);
    common_buf_init(&full, (size_t)1 << 30);
    build_names(&names);
    build_full(&full);
    report("names (nodeCacheCapable: true)", &names, (int)rounds);
    /* the full body is ~3,000x larger: a few rounds say enough */
    report("full  (nodeCacheCapable: false)", &full, rounds / 200 > 5 ? (int)(rounds / 200) : 5);
    printf("reproduce: cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release && "
           "cmake --build build-rel --target bench_codec && ./build-rel/bench/bench_codec %ld\n",
           rounds);
    common_buf_free(&names);
    common_buf_free(&full);
    return 0;
}
