/*
 * bench/bench_webhook.c - admission latency of the webhooks at a fixed request rate over TLS on
 * loopback, side by side with an empty handler on the same server, in one process.
 *
 * The stack: one common_httpd over HTTPS (libmicrohttpd + GnuTLS, 4 server threads as `serve`
 * configures it) with a self-signed ECDSA P-256 certificate made at start with common/certs.h
 * (a CA and a serving certificate for IP 127.0.0.1, written to a temp dir); the webhook routes of
 * webhook_server_install (metrics on, as in `serve`), whose runtime lookup serves the built-in
 * ClusterTrainingRuntimes (trainjob_builtins[], parsed once into a table; JobSets: "no cache");
 * and, on the same server, POST /empty, which answers a fixed small AdmissionReview without
 * decoding the body it is sent (the validate-trainjob review, so the bytes on the wire are the
 * same). So the empty route costs exactly TLS + HTTP + routing, and the ratio webhook/empty
 * isolates what the webhook adds.
 *
 * Requests, realistic: a TrainJob CREATE review for the built-in torch-distributed runtime, as
 * the API server sends it after kubectl apply (4 nodes, resourcesPerNode with GPUs, command,
 * args, env with a secretKeyRef, a runtimePatch adding tolerations, a nodeSelector, a /dev/shm
 * volume and its mount, the last-applied annotation and managedFields): 5.5 KB. The
 * mutating webhook gets it without the patch's `time` (it stamps one), the validating one with
 * it. mutate-pod gets a gang pod as the Job controller creates it for that JobSet (labels,
 * owner reference, env, GPU resources, the service account volume, tolerations). Every
 * response is checked (HTTP 200, allowed, a patch where one is due); anything else is an error.
 *
 * Load generator: libcurl multi interface on the main thread, C keep-alive HTTP/1.1
 * connections (--conns, default 4; at most C requests in flight, no pipelining), like the
 * kube-apiserver's connection pool to a webhook. Open loop: request i is scheduled at
 * t0 + i/rate, a timerfd wakes the loop at that time, and latency is measured from the
 * scheduled time to the complete response, so a request that waits for a free connection or
 * for the generator is counted as waiting (no coordinated omission). Each variant
 * (validate-trainjob, mutate-trainjob, mutate-pod, empty) runs D seconds (--seconds, default
 * 20) per round, R rounds (--rounds, default 3), the order rotated each round; a warm-up second
 * per variant first. Reported per variant: p50/p90/p99/p99.9/max (µs, pooled over rounds, and
 * p99 per round), the same timed from the actual send (what the generator's own lateness adds:
 * it shares the two cores with the server), achieved rate, errors, CPU seconds of the process
 * and of the generator thread (the rest is the server: µs of server CPU per request), the
 * webhook's own handler time (its duration histogram: mean, share over 0.5 and 1 ms), new
 * connections, the generator's send lag, the CPU other processes used meanwhile (/proc/stat
 * minus our rusage: it reads up to ~0.25 core low) and the CPU pressure (/proc/pressure/cpu). Then
 * closed loop: C requests always in flight for max(2, D/4) s per round, validate-trainjob and
 * empty: requests/s and the ratio. And the pure handler cost: webhook_serve on the same body in
 * this thread, no HTTP, split into decode, decide and encode, and validate-trainjob's decide split
 * into its public parts (schema validation, runtime lookup, runtime validation, trainjob_render).
 *
 * Run: ./build-bwh/bench/bench_webhook [--rate N] [--seconds D] [--rounds R] [--conns C]
 *      (Release build; progress on stderr, figures on stdout; see docs/benchmarks-webhook.md)
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/certs.h"
#include "common/httpd.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/yaml.h"
#include "trainjob/builtin.h"
#include "trainjob/trainjob.h"
#include "webhook/admission.h"
#include "webhook/handlers.h"
#include "webhook/server.h"

#define MAX_CONNS 64
#define MAX_ROUNDS 20
#define RESP_MAX 65536
#define NVARIANTS 4
#define SERVER_THREADS 4 /* what cmd/serve.c gives the HTTPS server */

static struct {
    long rate, seconds, rounds, conns;
} cfg = {1000, 20, 3, 4};

/* ---- clocks, /proc ---- */

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU pressure (PSI): microseconds in which some runnable task waited for a CPU; -1 when the
 * kernel does not expose /proc/pressure/cpu */
static double cpu_pressure_us(void)
{
    char line[256];
    double total = -1;
    FILE *f = fopen("/proc/pressure/cpu", "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "some ", 5) == 0) {
            const char *p = strstr(line, "total=");
            if (p)
                total = strtod(p + 6, NULL);
        }
    fclose(f);
    return total;
}

/* ---- samples ---- */

struct samples {
    double *v; /* µs */
    size_t n, cap;
};

static void samples_add(struct samples *s, double us)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        double *v = realloc(s->v, cap * sizeof(*v));
        if (!v) {
            fprintf(stderr, "bench_webhook: out of memory\n");
            exit(1);
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = us;
}

/* nearest-rank percentile of sorted v[0..n) */
static double pct(const double *v, size_t n, double q)
{
    size_t k;

    if (!n)
        return NAN;
    k = (size_t)ceil(q * (double)n);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

static void samples_sort(struct samples *s)
{
    if (s->n)
        qsort(s->v, s->n, sizeof(double), bench_cmp_double);
}

/* ---- the requests ---- */

/* What a user applies (kubectl apply -f): the built-in torch-distributed runtime, 4 nodes of
 * 8 GPUs, and a runtime patch from the platform team (tolerations, nodeSelector, /dev/shm). */
static const char manifest_text[] =
    "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
    "\"metadata\":{\"name\":\"llama3-8b-sft-v7\",\"namespace\":\"team-nlp\","
    "\"labels\":{\"app.kubernetes.io/part-of\":\"llm-finetune\",\"team\":\"nlp\","
    "\"experiment\":\"sft-v7\"}},"
    "\"spec\":{\"runtimeRef\":{\"name\":\"torch-distributed\"},"
    "\"trainer\":{\"image\":\"ghcr.io/example/llm-train:2.13.0-cu130-v1.4.2\","
    "\"command\":[\"torchrun\",\"/workspace/train.py\"],"
    "\"args\":[\"--model\",\"meta-llama/Llama-3.1-8B\",\"--dataset\",\"s3://datasets/sft/v7\","
    "\"--epochs\",\"3\",\"--per-device-batch-size\",\"4\",\"--lr\",\"2e-5\",\"--bf16\","
    "\"--fsdp\",\"full_shard auto_wrap\",\"--output-dir\",\"/checkpoints/sft-v7\"],"
    "\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"},{\"name\":\"HF_HOME\","
    "\"value\":\"/cache/hf\"},{\"name\":\"WANDB_PROJECT\",\"value\":\"llm-sft\"},"
    "{\"name\":\"HF_TOKEN\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"hf-token\","
    "\"key\":\"token\"}}}],"
    "\"numNodes\":4,"
    "\"resourcesPerNode\":{\"requests\":{\"cpu\":\"32\",\"memory\":\"480Gi\","
    "\"nvidia.com/gpu\":\"8\"},\"limits\":{\"cpu\":\"48\",\"memory\":\"480Gi\","
    "\"nvidia.com/gpu\":\"8\"}}},"
    "\"runtimePatches\":[{\"manager\":\"platform.example.com/gpu-defaults\","
    "\"trainingRuntimeSpec\":{\"template\":{\"spec\":{\"replicatedJobs\":[{\"name\":\"node\","
    "\"template\":{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"example.com/"
    "cost-center\":\"nlp-research\"}},\"spec\":{\"nodeSelector\":{\"cloud.google.com/"
    "gke-accelerator\":\"nvidia-h100-80gb\",\"topology.kubernetes.io/zone\":\"us-central1-a\"},"
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
    "\"NoSchedule\"}],\"volumes\":[{\"name\":\"dshm\",\"emptyDir\":{\"medium\":\"Memory\","
    "\"sizeLimit\":\"64Gi\"}}],\"containers\":[{\"name\":\"node\",\"volumeMounts\":[{\"name\":"
    "\"dshm\",\"mountPath\":\"/dev/shm\"}]}]}}}}}]}}}}]}}";

/* The review around an object, as kube-apiserver v1.36 sends it for kubectl's CREATE. */
static const char review_text[] =
    "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{"
    "\"uid\":\"2c0e3a3b-9f1e-4d5c-8a59-6f3f0e8b7a10\","
    "\"kind\":{\"group\":\"trainer.kubeflow.org\",\"version\":\"v1alpha1\",\"kind\":\"TrainJob\"},"
    "\"resource\":{\"group\":\"trainer.kubeflow.org\",\"version\":\"v1alpha1\",\"resource\":"
    "\"trainjobs\"},\"requestKind\":{\"group\":\"trainer.kubeflow.org\",\"version\":\"v1alpha1\","
    "\"kind\":\"TrainJob\"},\"requestResource\":{\"group\":\"trainer.kubeflow.org\",\"version\":"
    "\"v1alpha1\",\"resource\":\"trainjobs\"},\"name\":\"llama3-8b-sft-v7\",\"namespace\":"
    "\"team-nlp\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"alice@example.com\","
    "\"uid\":\"b7c1f3a2-1111-4b2a-9e0f-3c2d1e0f9a8b\",\"groups\":[\"nlp-researchers\","
    "\"system:authenticated\"],\"extra\":{\"authentication.kubernetes.io/credential-id\":"
    "[\"JTI=6f1d2c3b-4a59-4e8d-9c7b-2a1f0e9d8c7b\"]}},\"object\":null,\"oldObject\":null,"
    "\"dryRun\":false,\"options\":{\"kind\":\"CreateOptions\",\"apiVersion\":\"meta.k8s.io/v1\","
    "\"fieldManager\":\"kubectl-client-side-apply\",\"fieldValidation\":\"Strict\"}}}";

/* A pod of that TrainJob's JobSet as the Job controller creates it (after the ServiceAccount
 * and DefaultTolerationSeconds admission plugins), labelled for gang scheduling. */
static const char pod_review_text[] =
    "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{"
    "\"uid\":\"9d8e7f60-5a4b-4c3d-8e2f-1a0b9c8d7e6f\","
    "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"requestResource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"namespace\":\"team-nlp\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":"
    "\"system:serviceaccount:kube-system:job-controller\",\"uid\":"
    "\"0f1e2d3c-4b5a-4968-8776-655443322110\",\"groups\":[\"system:serviceaccounts\","
    "\"system:serviceaccounts:kube-system\",\"system:authenticated\"]},"
    "\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"generateName\":\"llama3-8b-sft-v7-node-0-0-\",\"namespace\":\"team-nlp\","
    "\"creationTimestamp\":null,\"labels\":{"
    "\"batch.kubernetes.io/controller-uid\":\"5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716\","
    "\"batch.kubernetes.io/job-completion-index\":\"0\","
    "\"batch.kubernetes.io/job-name\":\"llama3-8b-sft-v7-node-0\","
    "\"controller-uid\":\"5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716\","
    "\"job-name\":\"llama3-8b-sft-v7-node-0\","
    "\"jobset.sigs.k8s.io/global-replicas\":\"1\","
    "\"jobset.sigs.k8s.io/job-global-index\":\"0\",\"jobset.sigs.k8s.io/job-index\":\"0\","
    "\"jobset.sigs.k8s.io/job-key\":\"6b1f3e0d2c4a5b8e9f7d6c5b4a3f2e1d0c9b8a7f\","
    "\"jobset.sigs.k8s.io/jobset-name\":\"llama3-8b-sft-v7\","
    "\"jobset.sigs.k8s.io/jobset-uid\":\"3a2b1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d\","
    "\"jobset.sigs.k8s.io/replicatedjob-name\":\"node\","
    "\"jobset.sigs.k8s.io/replicatedjob-replicas\":\"1\","
    "\"jobset.sigs.k8s.io/restart-attempt\":\"0\","
    "\"example.com/cost-center\":\"nlp-research\","
    "\"trainer.kubeflow.org/trainjob-ancestor-step\":\"trainer\","
    "\"scheduling.x-k8s.io/pod-group\":\"llama3-8b-sft-v7\"},"
    "\"annotations\":{\"batch.kubernetes.io/job-completion-index\":\"0\","
    "\"jobset.sigs.k8s.io/global-replicas\":\"1\",\"jobset.sigs.k8s.io/job-global-index\":\"0\","
    "\"jobset.sigs.k8s.io/job-index\":\"0\","
    "\"jobset.sigs.k8s.io/job-key\":\"6b1f3e0d2c4a5b8e9f7d6c5b4a3f2e1d0c9b8a7f\","
    "\"jobset.sigs.k8s.io/jobset-name\":\"llama3-8b-sft-v7\","
    "\"jobset.sigs.k8s.io/replicatedjob-name\":\"node\","
    "\"jobset.sigs.k8s.io/replicatedjob-replicas\":\"1\","
    "\"jobset.sigs.k8s.io/restart-attempt\":\"0\"},"
    "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":"
    "\"llama3-8b-sft-v7-node-0\",\"uid\":\"5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716\","
    "\"controller\":true,\"blockOwnerDeletion\":true}],"
    "\"finalizers\":[\"batch.kubernetes.io/job-tracking\"],"
    "\"managedFields\":[{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\","
    "\"apiVersion\":\"v1\",\"time\":\"2026-12-01T09:00:02Z\",\"fieldsType\":\"FieldsV1\","
    "\"fieldsV1\":{\"f:metadata\":{\"f:annotations\":{\".\":{},"
    "\"f:batch.kubernetes.io/job-completion-index\":{}},\"f:finalizers\":{\".\":{},"
    "\"v:\\\"batch.kubernetes.io/job-tracking\\\"\":{}},\"f:generateName\":{},\"f:labels\":{"
    "\".\":{},\"f:batch.kubernetes.io/controller-uid\":{},\"f:job-name\":{}},"
    "\"f:ownerReferences\":{\".\":{},\"k:{\\\"uid\\\":\\\"5e4d3c2b-1a09-4f8e-9d7c-"
    "6b5a49382716\\\"}\":{}}},\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"node\\\"}\":"
    "{\".\":{},\"f:command\":{},\"f:env\":{},\"f:image\":{},\"f:name\":{},\"f:ports\":{},"
    "\"f:resources\":{},\"f:volumeMounts\":{}}},\"f:hostname\":{},\"f:nodeSelector\":{},"
    "\"f:restartPolicy\":{},\"f:subdomain\":{},\"f:tolerations\":{},\"f:volumes\":{}}}}]},"
    "\"spec\":{\"volumes\":[{\"name\":\"dshm\",\"emptyDir\":{\"medium\":\"Memory\","
    "\"sizeLimit\":\"64Gi\"}},{\"name\":\"kube-api-access-7xk2p\",\"projected\":{\"sources\":["
    "{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},"
    "{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":"
    "\"ca.crt\"}]}},{\"downwardAPI\":{\"items\":[{\"path\":\"namespace\",\"fieldRef\":{"
    "\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.namespace\"}}]}}],\"defaultMode\":420}}],"
    "\"containers\":[{\"name\":\"node\",\"image\":\"ghcr.io/example/"
    "llm-train:2.13.0-cu130-v1.4.2\","
    "\"command\":[\"torchrun\",\"/workspace/train.py\"],\"args\":[\"--model\","
    "\"meta-llama/Llama-3.1-8B\",\"--dataset\",\"s3://datasets/sft/v7\",\"--epochs\",\"3\","
    "\"--per-device-batch-size\",\"4\",\"--lr\",\"2e-5\",\"--bf16\",\"--fsdp\","
    "\"full_shard auto_wrap\",\"--output-dir\",\"/checkpoints/sft-v7\"],"
    "\"ports\":[{\"containerPort\":29500,\"protocol\":\"TCP\"}],"
    "\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"},{\"name\":\"HF_HOME\",\"value\":"
    "\"/cache/hf\"},{\"name\":\"WANDB_PROJECT\",\"value\":\"llm-sft\"},{\"name\":\"HF_TOKEN\","
    "\"valueFrom\":{\"secretKeyRef\":{\"name\":\"hf-token\",\"key\":\"token\"}}},"
    "{\"name\":\"PET_NNODES\",\"value\":\"4\"},{\"name\":\"PET_NPROC_PER_NODE\",\"value\":"
    "\"auto\"},{\"name\":\"PET_NODE_RANK\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\","
    "\"fieldPath\":\"metadata.annotations['batch.kubernetes.io/job-completion-index']\"}}},"
    "{\"name\":\"PET_MASTER_ADDR\",\"value\":\"llama3-8b-sft-v7-node-0-0.llama3-8b-sft-v7\"},"
    "{\"name\":\"PET_MASTER_PORT\",\"value\":\"29500\"}],"
    "\"resources\":{\"limits\":{\"cpu\":\"48\",\"memory\":\"480Gi\",\"nvidia.com/gpu\":\"8\"},"
    "\"requests\":{\"cpu\":\"32\",\"memory\":\"480Gi\",\"nvidia.com/gpu\":\"8\"}},"
    "\"volumeMounts\":[{\"name\":\"dshm\",\"mountPath\":\"/dev/shm\"},{\"name\":"
    "\"kube-api-access-7xk2p\",\"readOnly\":true,\"mountPath\":"
    "\"/var/run/secrets/kubernetes.io/serviceaccount\"}],"
    "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\","
    "\"imagePullPolicy\":\"IfNotPresent\"}],\"restartPolicy\":\"Never\","
    "\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\",\"nodeSelector\":{"
    "\"cloud.google.com/gke-accelerator\":\"nvidia-h100-80gb\","
    "\"topology.kubernetes.io/zone\":\"us-central1-a\"},\"serviceAccountName\":\"default\","
    "\"serviceAccount\":\"default\",\"hostname\":\"llama3-8b-sft-v7-node-0-0\",\"subdomain\":"
    "\"llama3-8b-sft-v7\",\"securityContext\":{},\"schedulerName\":\"default-scheduler\","
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
    "\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
    "\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":"
    "\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
    "\"tolerationSeconds\":300}],\"priority\":0,\"enableServiceLinks\":true,"
    "\"preemptionPolicy\":\"PreemptLowerPriority\"},\"status\":{}},"
    "\"oldObject\":null,\"dryRun\":false,\"options\":{\"kind\":\"CreateOptions\","
    "\"apiVersion\":\"meta.k8s.io/v1\"}}}";

/* the fixed answer of POST /empty */
static const char empty_answer[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":"
    "{\"allowed\":true,\"uid\":\"2c0e3a3b-9f1e-4d5c-8a59-6f3f0e8b7a10\"}}";

static json_t *must(json_t *j, const char *what)
{
    if (!j) {
        fprintf(stderr, "bench_webhook: cannot build %s\n", what);
        exit(1);
    }
    return j;
}

/* managedFields' fieldsV1 for v, the way the field manager lists set fields (lists as leaves) */
static json_t *fields_v1(const json_t *v)
{
    json_t *o = must(json_object(), "fieldsV1");
    const char *k;
    json_t *x;

    json_object_foreach((json_t *)v, k, x)
    {
        char key[512];
        snprintf(key, sizeof(key), "f:%s", k);
        json_object_set_new(o, key, json_is_object(x) ? fields_v1(x) : json_object());
    }
    if (json_object_size(o))
        json_object_set_new(o, ".", json_object());
    return o;
}

/* The TrainJob as the API server hands it to admission: the CRD's defaults applied,
 * uid/creationTimestamp/generation, kubectl's last-applied annotation and managedFields.
 * with_time: the runtime patch carries the time the mutating webhook stamped. */
static char *trainjob_review(int with_time, size_t *len)
{
    json_error_t je;
    json_t *manifest = json_loads(manifest_text, JSON_REJECT_DUPLICATES, &je);
    json_t *review = json_loads(review_text, JSON_REJECT_DUPLICATES, &je);
    json_t *obj, *meta, *spec, *mf, *fv, *ann;
    char *applied, *text;

    must(manifest, "the TrainJob manifest");
    must(review, "the review");
    obj = must(json_deep_copy(manifest), "the object");
    meta = json_object_get(obj, "metadata");
    spec = json_object_get(obj, "spec");
    applied = json_dumps(manifest, JSON_COMPACT);
    must(applied ? json_true() : NULL, "last-applied");
    ann = json_object();
    json_object_set_new(ann, "kubectl.kubernetes.io/last-applied-configuration",
                        json_sprintf("%s\n", applied));
    free(applied);
    json_object_set_new(meta, "annotations", ann);
    json_object_set_new(meta, "uid", json_string("8f14e45f-ea6c-4c5b-9d2a-0c4e1b7a3d95"));
    json_object_set_new(meta, "generation", json_integer(1));
    json_object_set_new(meta, "creationTimestamp", json_string("2026-12-01T09:00:00Z"));
    json_object_set_new(json_object_get(spec, "runtimeRef"), "apiGroup",
                        json_string("trainer.kubeflow.org"));
    json_object_set_new(json_object_get(spec, "runtimeRef"), "kind",
                        json_string("ClusterTrainingRuntime"));
    json_object_set_new(spec, "suspend", json_false());
    json_object_set_new(spec, "managedBy", json_string("trainer.kubeflow.org/trainjob-controller"));
    fv = json_object();
    json_object_set_new(fv, "f:metadata", fields_v1(meta));
    json_object_set_new(fv, "f:spec", fields_v1(spec));
    json_object_del(json_object_get(fv, "f:metadata"), "f:uid");
    json_object_del(json_object_get(fv, "f:metadata"), "f:generation");
    json_object_del(json_object_get(fv, "f:metadata"), "f:creationTimestamp");
    mf = json_pack("[{s:s, s:s, s:s, s:s, s:s, s:o}]", "manager", "kubectl-client-side-apply",
                   "operation", "Update", "apiVersion", "trainer.kubeflow.org/v1alpha1", "time",
                   "2026-12-01T09:00:00Z", "fieldsType", "FieldsV1", "fieldsV1", fv);
    json_object_set_new(meta, "managedFields", must(mf, "managedFields"));
    if (with_time)
        json_object_set_new(json_array_get(json_object_get(spec, "runtimePatches"), 0), "time",
                            json_string("2026-12-01T09:00:00Z"));
    json_object_set_new(json_object_get(review, "request"), "object", obj);
    text = json_dumps(review, JSON_COMPACT);
    must(text ? json_true() : NULL, "the review text");
    json_decref(review);
    json_decref(manifest);
    *len = strlen(text);
    return text;
}

/* ---- the runtimes the lookup serves ---- */

#define MAX_RUNTIMES 32

static struct {
    size_t n;
    const char *name[MAX_RUNTIMES];
    json_t *obj[MAX_RUNTIMES];
    struct common_yaml_docs docs[MAX_RUNTIMES];
} rts;

static void load_runtimes(void)
{
    struct common_error err = {0};

    for (const struct trainjob_builtin *b = trainjob_builtins; b->name; b++) {
        if (rts.n == MAX_RUNTIMES)
            break;
        if (common_yaml_load(b->yaml, b->len, b->name, NULL, &rts.docs[rts.n], &err) ||
            rts.docs[rts.n].n != 1) {
            fprintf(stderr, "bench_webhook: built-in runtime %s: %s\n", b->name, err.msg);
            exit(1);
        }
        rts.name[rts.n] = b->name;
        rts.obj[rts.n] = rts.docs[rts.n].docs[0];
        rts.n++;
    }
}

static enum common_rc lookup(void *ctx, const char *kind, const char *ns, const char *name,
                             json_t **out, struct common_error *err)
{
    *out = NULL;
    if (strcmp(kind, "JobSet") == 0)
        return common_error_set(err, COMMON_EUNSUPPORTED, "no JobSet cache");
    if (strcmp(kind, "ClusterTrainingRuntime") == 0)
        for (size_t i = 0; i < rts.n; i++)
            if (strcmp(rts.name[i], name) == 0) {
                *out = json_incref(rts.obj[i]);
                return COMMON_OK;
            }
    return common_error_set(err, COMMON_ENOTFOUND, "%s %s not found", kind, name);
}

/* ---- variants ---- */

struct variant {
    const char *name;
    const char *path;
    enum webhook_id id; /* WEBHOOK_COUNT for empty */
    const char *expect; /* must be in the response body */
    char *body;
    size_t len;
    /* open loop */
    struct samples lat, lag, svc;
    double round_p50[MAX_ROUNDS], round_p99[MAX_ROUNDS], round_others[MAX_ROUNDS];
    double round_psi[MAX_ROUNDS], psi_us; /* CPU pressure: share of the run, and µs in all */
    long n, errors, conns;
    double wall, cpu, cpu_client, others, handler_s;
    long handler_n, handler_le500, handler_le1000; /* from the histogram: calls, <= 0.5/1 ms */
    /* closed loop */
    double closed_rate[MAX_ROUNDS];
    struct samples closed_lat;
    long closed_n, closed_errors;
    double closed_wall, closed_cpu, closed_cpu_client;
    /* pure handler */
    struct samples pure, pure_decode, pure_decide, pure_encode;
};

static struct variant variants[NVARIANTS] = {
    {.name = "validate-trainjob",
     .path = "/validate-trainjob",
     .id = WEBHOOK_VALIDATE_TRAINJOB,
     .expect = "\"allowed\":true"},
    {.name = "mutate-trainjob",
     .path = "/mutate-trainjob",
     .id = WEBHOOK_MUTATE_TRAINJOB,
     .expect = "\"patchType\":\"JSONPatch\""},
    {.name = "mutate-pod",
     .path = "/mutate-pod",
     .id = WEBHOOK_MUTATE_POD,
     .expect = "\"patchType\":\"JSONPatch\""},
    {.name = "empty", .path = "/empty", .id = WEBHOOK_COUNT, .expect = "\"allowed\":true"},
};

static struct webhook_options wopts; /* for the pure runs: as webhook_server_create makes them */

static void empty_handler(void *ctx, const struct common_httpd_request *req,
                          struct common_httpd_response *resp)
{
    resp->content_type = "application/json";
    common_buf_append(&resp->body, empty_answer, sizeof(empty_answer) - 1, NULL);
}

/* ---- pure handler cost ---- */

static void pure_run(struct variant *v, double seconds)
{
    const struct webhook_endpoint *ep = &webhook_endpoints[v->id];
    struct common_buf out;
    double t_end, t0;
    long i;

    common_buf_init(&out, 64 << 20);
    /* whole webhook_serve, as the route calls it (arena included) */
    for (i = 0; i < 200; i++) {
        struct webhook_reply r;
        struct common_arena *a = common_arena_create(512u << 20);
        common_buf_reset(&out);
        webhook_serve(a, ep, "application/json", v->body, v->len, &wopts, (int64_t)time(NULL), &out,
                      &r);
        common_arena_destroy(a);
    }
    t0 = mono();
    t_end = t0 + seconds;
    for (i = 0; mono() < t_end; i++) {
        struct webhook_reply r;
        double a0 = mono();
        struct common_arena *a = common_arena_create(512u << 20);
        common_buf_reset(&out);
        webhook_serve(a, ep, "application/json", v->body, v->len, &wopts, (int64_t)time(NULL), &out,
                      &r);
        common_arena_destroy(a);
        samples_add(&v->pure, (mono() - a0) * 1e6);
    }
    samples_sort(&v->pure);
    /* the same, split: decode, decide, encode */
    t_end = mono() + seconds / 2;
    for (i = 0; mono() < t_end; i++) {
        struct webhook_request req;
        struct webhook_response resp;
        struct common_error err = {0};
        struct common_arena *a = common_arena_create(512u << 20);
        double t1 = mono(), t2, t3, t4;
        enum common_rc rc = webhook_admission_decode(a, v->body, v->len, 0, &req, &err);
        t2 = mono();
        if (!rc)
            rc = webhook_decide(a, ep, &req, &wopts, (int64_t)time(NULL), &resp, &err);
        t3 = mono();
        common_buf_reset(&out);
        if (!rc)
            rc = webhook_admission_encode(req.uid, &resp, &out, &err);
        t4 = mono();
        common_arena_destroy(a);
        if (rc) {
            fprintf(stderr, "bench_webhook: %s: %s\n", v->name, err.msg);
            exit(1);
        }
        samples_add(&v->pure_decode, (t2 - t1) * 1e6);
        samples_add(&v->pure_decide, (t3 - t2) * 1e6);
        samples_add(&v->pure_encode, (t4 - t3) * 1e6);
    }
    samples_sort(&v->pure_decode);
    samples_sort(&v->pure_decide);
    samples_sort(&v->pure_encode);
    common_buf_free(&out);
}

/* validate-trainjob's decide, by its public parts: what validate_trainjob() calls */
static struct samples vt_schema, vt_lookup, vt_runtime, vt_render, vt_checks, vt_loadb, mt_copy;

static void pure_validate_split(const struct variant *v, double seconds)
{
    double t_end;

    /* decode's parse alone, as webhook_admission_decode calls it */
    t_end = mono() + seconds / 4;
    while (mono() < t_end) {
        json_error_t je;
        double t0 = mono();
        json_t *root = json_loadb(v->body, v->len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
        samples_add(&vt_loadb, (mono() - t0) * 1e6);
        json_decref(root);
    }
    t_end = mono() + seconds;

    while (mono() < t_end) {
        struct webhook_request req;
        struct common_error err = {0};
        struct common_arena *a = common_arena_create(512u << 20);
        struct trainjob_errors errs;
        struct trainjob_output out;
        struct trainjob_options topts = {0};
        json_t *rt = NULL, *other;
        double t1, t2, t3, t4, t5, t6, t7;

        if (webhook_admission_decode(a, v->body, v->len, 0, &req, &err)) {
            fprintf(stderr, "bench_webhook: decode: %s\n", err.msg);
            exit(1);
        }
        t1 = mono();
        trainjob_errors_init(&errs, a);
        trainjob_validate_trainjob(req.object, &errs, &err);
        t2 = mono();
        lookup(NULL, "ClusterTrainingRuntime", NULL, "torch-distributed", &rt, &err);
        t3 = mono();
        trainjob_errors_init(&errs, a);
        trainjob_validate_runtime(rt, &errs, &err);
        t4 = mono();
        memset(&out, 0, sizeof(out));
        topts.default_namespace = "team-nlp";
        if (trainjob_render(a, req.object, rt, &topts, &out, &err)) {
            fprintf(stderr, "bench_webhook: render: %s\n", err.msg);
            exit(1);
        }
        json_decref(out.objects);
        t5 = mono();
        /* the same render with spec.managedBy naming another controller: trainjob_render runs
         * every check, then returns before building anything (what a check-only mode costs) */
        other = json_deep_copy(req.object);
        t6 = mono();
        json_decref(other);
        other = json_deep_copy(req.object);
        json_object_set_new(json_object_get(other, "spec"), "managedBy",
                            json_string("kueue.x-k8s.io/multikueue"));
        memset(&out, 0, sizeof(out));
        t7 = mono();
        if (trainjob_render(a, other, rt, &topts, &out, &err) || !out.skipped) {
            fprintf(stderr, "bench_webhook: render (checks only): %s\n", err.msg);
            exit(1);
        }
        samples_add(&vt_checks, (mono() - t7) * 1e6);
        json_decref(other);
        json_decref(rt);
        common_arena_destroy(a);
        samples_add(&vt_schema, (t2 - t1) * 1e6);
        samples_add(&vt_lookup, (t3 - t2) * 1e6);
        samples_add(&vt_runtime, (t4 - t3) * 1e6);
        samples_add(&vt_render, (t5 - t4) * 1e6);
        samples_add(&mt_copy, (t6 - t5) * 1e6);
    }
    samples_sort(&vt_checks);
    samples_sort(&vt_loadb);
    samples_sort(&mt_copy);
    samples_sort(&vt_schema);
    samples_sort(&vt_lookup);
    samples_sort(&vt_runtime);
    samples_sort(&vt_render);
}

/* one check before any timing: each body is answered 200, allowed, with the patch due and no
 * warning */
static void check_bodies(void)
{
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        struct common_buf out;
        struct webhook_reply r;
        struct common_arena *a;

        if (v->id == WEBHOOK_COUNT)
            continue;
        a = common_arena_create(0);
        common_buf_init(&out, 64 << 20);
        webhook_serve(a, &webhook_endpoints[v->id], "application/json", v->body, v->len, &wopts,
                      (int64_t)time(NULL), &out, &r);
        if (r.status != 200 || strcmp(r.result, "allowed") != 0 ||
            !strstr(out.data ? out.data : "", v->expect) ||
            strstr(out.data ? out.data : "", "\"warnings\"")) {
            fprintf(stderr, "bench_webhook: %s does not answer as expected: %d %s\n%.*s\n", v->name,
                    r.status, r.result ? r.result : "", (int)out.len, out.data ? out.data : "");
            exit(1);
        }
        fprintf(stderr, "  %-18s request %5zu bytes, answer %4zu bytes: %.*s\n", v->name, v->len,
                out.len, out.len > 150 ? 150 : (int)out.len, out.data);
        common_buf_free(&out);
        common_arena_destroy(a);
    }
}

/* ---- load generator ---- */

struct slot {
    CURL *e;
    int busy;
    double sched, sent;
    char resp[RESP_MAX];
    size_t len;
    int overflow;
};

struct gen {
    CURLM *m;
    struct slot slots[MAX_CONNS];
    struct curl_slist *hdrs;
    int tfd;
    int port;
    char ca[300];
};

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    struct slot *s = ctx;
    size_t k = size * n;

    if (s->len + k >= RESP_MAX) {
        s->overflow = 1;
        return k;
    }
    memcpy(s->resp + s->len, p, k);
    s->len += k;
    s->resp[s->len] = '\0';
    return k;
}

static void gen_init(struct gen *g)
{
    g->m = curl_multi_init();
    if (!g->m) {
        fprintf(stderr, "bench_webhook: curl_multi_init failed\n");
        exit(1);
    }
    curl_multi_setopt(g->m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)cfg.conns);
    curl_multi_setopt(g->m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)cfg.conns);
    curl_multi_setopt(g->m, CURLMOPT_MAXCONNECTS, (long)cfg.conns);
    curl_multi_setopt(g->m, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
    g->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    g->hdrs = curl_slist_append(g->hdrs, "Accept: application/json, */*");
    g->hdrs = curl_slist_append(g->hdrs, "Expect:");
    g->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (g->tfd < 0 || !g->hdrs) {
        fprintf(stderr, "bench_webhook: timerfd: %s\n", strerror(errno));
        exit(1);
    }
    for (long i = 0; i < cfg.conns; i++) {
        struct slot *s = &g->slots[i];
        s->e = curl_easy_init();
        if (!s->e) {
            fprintf(stderr, "bench_webhook: curl_easy_init failed\n");
            exit(1);
        }
        curl_easy_setopt(s->e, CURLOPT_CAINFO, g->ca);
        curl_easy_setopt(s->e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(s->e, CURLOPT_SSL_VERIFYHOST, 2L);
        curl_easy_setopt(s->e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(s->e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(s->e, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(s->e, CURLOPT_TIMEOUT_MS, 10000L);
        curl_easy_setopt(s->e, CURLOPT_HTTPHEADER, g->hdrs);
        curl_easy_setopt(s->e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(s->e, CURLOPT_WRITEDATA, s);
        curl_easy_setopt(s->e, CURLOPT_PRIVATE, s);
    }
}

static void gen_free(struct gen *g)
{
    for (long i = 0; i < cfg.conns; i++)
        curl_easy_cleanup(g->slots[i].e);
    curl_multi_cleanup(g->m);
    curl_slist_free_all(g->hdrs);
    close(g->tfd);
}

static struct slot *free_slot(struct gen *g)
{
    for (long i = 0; i < cfg.conns; i++)
        if (!g->slots[i].busy)
            return &g->slots[i];
    return NULL;
}

static void issue(struct gen *g, struct slot *s, const struct variant *v, double sched)
{
    char url[256];

    snprintf(url, sizeof(url), "https://127.0.0.1:%d%s?timeout=10s", g->port, v->path);
    curl_easy_setopt(s->e, CURLOPT_URL, url);
    curl_easy_setopt(s->e, CURLOPT_POSTFIELDS, v->body);
    curl_easy_setopt(s->e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)v->len);
    s->len = 0;
    s->resp[0] = '\0';
    s->overflow = 0;
    s->sched = sched;
    s->busy = 1;
    s->sent = mono();
    if (curl_multi_add_handle(g->m, s->e) != CURLM_OK) {
        fprintf(stderr, "bench_webhook: curl_multi_add_handle failed\n");
        exit(1);
    }
}

static void arm(struct gen *g, double at)
{
    struct itimerspec its;

    memset(&its, 0, sizeof(its));
    if (at > 0) {
        its.it_value.tv_sec = (time_t)at;
        its.it_value.tv_nsec = (long)((at - (double)(time_t)at) * 1e9);
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1;
    }
    timerfd_settime(g->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

struct run_result {
    long n, errors, conns;
    double first_sched, last_done;
};

/*
 * One run of v for `seconds`. Open loop (closed == 0): request i scheduled at t0 + i / rate;
 * latency = done - scheduled. Closed loop: every free connection sends at once; latency =
 * done - sent. Latencies go to lat, send lags (sent - scheduled) to lag and service times
 * (done - sent) to svc; each may be NULL.
 */
static void run(struct gen *g, struct variant *v, double seconds, int closed, struct samples *lat,
                struct samples *lag, struct samples *svc, struct run_result *res)
{
    double period = 1.0 / (double)cfg.rate;
    double t0 = mono() + 0.002;
    double t_stop = t0 + seconds;
    long total = closed ? -1 : (long)llround(seconds * (double)cfg.rate);
    long issued = 0, inflight = 0;

    memset(res, 0, sizeof(*res));
    res->first_sched = t0;
    for (;;) {
        struct curl_waitfd wfd = {.fd = g->tfd, .events = CURL_WAIT_POLLIN};
        struct slot *s;
        CURLMsg *msg;
        int running, left;
        double now = mono();

        if (!closed) {
            long due = now < t0 ? 0 : (long)floor((now - t0) / period) + 1;
            if (due > total)
                due = total;
            while (issued < due && (s = free_slot(g)) != NULL) {
                double sched = t0 + (double)issued * period;
                issue(g, s, v, sched);
                if (lag)
                    samples_add(lag, (s->sent - sched) * 1e6);
                issued++;
                inflight++;
            }
            if (issued == total && inflight == 0)
                break;
        } else {
            while (now < t_stop && (s = free_slot(g)) != NULL) {
                issue(g, s, v, now);
                issued++;
                inflight++;
            }
            if (now >= t_stop && inflight == 0)
                break;
        }
        curl_multi_perform(g->m, &running);
        while ((msg = curl_multi_info_read(g->m, &left)) != NULL) {
            long status = 0, nconn = 0;
            double done = mono();
            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_NUM_CONNECTS, &nconn);
            if (msg->data.result != CURLE_OK || status != 200 || s->overflow ||
                !strstr(s->resp, v->expect)) {
                if (res->errors < 5)
                    fprintf(stderr, "  error on %s: curl %d (%s), HTTP %ld: %.200s\n", v->name,
                            (int)msg->data.result, curl_easy_strerror(msg->data.result), status,
                            s->resp);
                res->errors++;
            }
            curl_multi_remove_handle(g->m, msg->easy_handle);
            res->conns += nconn;
            res->n++;
            res->last_done = done;
            if (lat)
                samples_add(lat, (done - (closed ? s->sent : s->sched)) * 1e6);
            if (svc)
                samples_add(svc, (done - s->sent) * 1e6);
            s->busy = 0;
            inflight--;
        }
        /* wake for the next scheduled send (when a connection is free for it) or any socket */
        if (!closed && issued < total && free_slot(g)) {
            double next = t0 + (double)issued * period;
            if (next <= mono())
                continue;
            arm(g, next);
        } else if (closed && inflight == 0) {
            continue;
        } else {
            arm(g, 0);
        }
        curl_multi_poll(g->m, &wfd, 1, 100, NULL);
        if (wfd.revents) {
            uint64_t x;
            if (read(g->tfd, &x, sizeof(x)) < 0 && errno != EAGAIN)
                perror("timerfd read");
        }
    }
    arm(g, 0);
}

/* ---- the webhook's own handler time, from its duration histogram ---- */

struct htime {
    double sum;
    long count, le500, le1000;
};

static long metric_long(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtol(p + strlen(key), NULL, 10) : 0;
}

static void handler_time(struct common_metrics *m, const char *webhook, struct htime *t)
{
    struct common_buf b;
    char key[200];
    const char *p;

    memset(t, 0, sizeof(*t));
    common_buf_init(&b, 16 << 20);
    if (common_metrics_render(m, &b) == COMMON_OK && b.data) {
        snprintf(key, sizeof(key), "trainsched_webhook_duration_seconds_sum{webhook=\"%s\"} ",
                 webhook);
        if ((p = strstr(b.data, key)) != NULL)
            t->sum = strtod(p + strlen(key), NULL);
        snprintf(key, sizeof(key), "trainsched_webhook_duration_seconds_count{webhook=\"%s\"} ",
                 webhook);
        t->count = metric_long(b.data, key);
        snprintf(key, sizeof(key),
                 "trainsched_webhook_duration_seconds_bucket{webhook=\"%s\",le=\"0.0005\"} ",
                 webhook);
        t->le500 = metric_long(b.data, key);
        snprintf(key, sizeof(key),
                 "trainsched_webhook_duration_seconds_bucket{webhook=\"%s\",le=\"0.001\"} ",
                 webhook);
        t->le1000 = metric_long(b.data, key);
    }
    common_buf_free(&b);
}

/* ---- certificates ---- */

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static void make_certs(const char *dir, char *cert, char *key, char *ca, size_t size)
{
    static const char *const ips[] = {"127.0.0.1"};
    struct common_certs_names names = {"trainsched-webhook", "trainsched-system", NULL, 0, ips, 1};
    struct common_arena *a = common_arena_create(0);
    struct common_certs_pair cap, sp;
    struct common_error err = {0};
    int64_t now = (int64_t)time(NULL);

    if (common_certs_make_ca(a, "trainsched-bench-ca", now, COMMON_CERTS_DAY_S, &cap, &err) ||
        common_certs_make_serving(a, &cap, &names, now, COMMON_CERTS_DAY_S, &sp, &err)) {
        fprintf(stderr, "bench_webhook: certificates: %s\n", err.msg);
        exit(1);
    }
    snprintf(cert, size, "%s/tls.crt", dir);
    snprintf(key, size, "%s/tls.key", dir);
    snprintf(ca, size, "%s/ca.crt", dir);
    if (write_file(cert, sp.cert_pem) || write_file(key, sp.key_pem) ||
        write_file(ca, cap.cert_pem)) {
        fprintf(stderr, "bench_webhook: cannot write the certificates to %s\n", dir);
        exit(1);
    }
    common_arena_destroy(a);
}

/* ---- flags ---- */

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_webhook [--rate N] [--seconds D] [--rounds R] [--conns C]\n"
               "  --rate N     open-loop requests per second (default 1000)\n"
               "  --seconds D  seconds per variant per round (default 20); closed loop runs\n"
               "               max(2, D/4) s per variant per round\n"
               "  --rounds R   rounds, the variant order rotated each round (default 3, max 20)\n"
               "  --conns C    keep-alive TLS connections of the load generator (default 4, max "
               "64)\n"
               "Measures admission latency over HTTPS on loopback: validate-trainjob, "
               "mutate-trainjob,\nmutate-pod and an empty handler on the same server; see "
               "docs/benchmarks-webhook.md.\n");
}

static void parse_flags(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(argv[i], "--rate") == 0) {
            cfg.rate = bench_flag_long("bench_webhook", argc, argv, &i, 1, 100000);
        } else if (strcmp(argv[i], "--seconds") == 0) {
            cfg.seconds = bench_flag_long("bench_webhook", argc, argv, &i, 1, 3600);
        } else if (strcmp(argv[i], "--rounds") == 0) {
            cfg.rounds = bench_flag_long("bench_webhook", argc, argv, &i, 1, MAX_ROUNDS);
        } else if (strcmp(argv[i], "--conns") == 0) {
            cfg.conns = bench_flag_long("bench_webhook", argc, argv, &i, 1, MAX_CONNS);
        } else {
            fprintf(stderr, "bench_webhook: unknown argument \"%s\"\n", argv[i]);
            usage(stderr);
            exit(2);
        }
    }
}

/* ---- report ---- */

static void report(const char *load_start, const char *load_end, double others_cores,
                   double total_s)
{
    struct variant *e = &variants[NVARIANTS - 1], *vt = &variants[0];
    double cs = cfg.seconds / 4.0 < 2 ? 2 : cfg.seconds / 4.0;

    printf("\n# bench_webhook: admission latency over HTTPS on loopback\n\n");
    printf("rate %ld/s open loop, %ld s per variant per round, %ld rounds (order rotated), %ld "
           "keep-alive connections (libcurl multi, HTTP/1.1, TLS verified), server: common_httpd "
           "with %d threads, TLS ECDSA P-256\n",
           cfg.rate, cfg.seconds, cfg.rounds, cfg.conns, SERVER_THREADS);
    printf("load average at start %s, at end %s; other processes used %.2f cores during the "
           "timed runs; %.0f s in all\n",
           load_start, load_end, others_cores, total_s);
    printf("(others' cores: /proc/stat busy time minus this process's rusage; /proc/stat samples "
           "busy time with the tick and misses part of this process's short bursts, so it reads up "
           "to ~0.25 core low, even below 0. CPU pressure: /proc/pressure/cpu \"some\", the share "
           "of the time in which a runnable task, ours or another's, waited for a CPU.)\n\n");

    printf("## Open loop: latency from the scheduled send to the complete response (µs)\n\n");
    printf("| variant | requests | rate/s | p50 | p90 | p99 | p99.9 | max | p99 per round (CPU "
           "pressure) | errors | new conns |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        char rounds[256] = "";
        size_t off = 0;
        for (long r = 0; r < cfg.rounds; r++)
            off += (size_t)snprintf(rounds + off, sizeof(rounds) - off, "%s%.0f (%.1f%%)",
                                    r ? " / " : "", v->round_p99[r], 100 * v->round_psi[r]);
        printf("| %s | %ld | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %ld | %ld |\n", v->name,
               v->n, (double)v->n / v->wall, pct(v->lat.v, v->lat.n, 0.50),
               pct(v->lat.v, v->lat.n, 0.90), pct(v->lat.v, v->lat.n, 0.99),
               pct(v->lat.v, v->lat.n, 0.999), v->lat.n ? v->lat.v[v->lat.n - 1] : NAN, rounds,
               v->errors, v->conns);
    }
    printf("\nRatios to the empty handler (same server, same connections, same run):\n\n");
    printf("| variant | p50 ratio | p99 ratio | p50 - empty (µs) | p99 - empty (µs) |\n");
    printf("|---|---|---|---|---|\n");
    for (int k = 0; k < NVARIANTS - 1; k++) {
        struct variant *v = &variants[k];
        double p50 = pct(v->lat.v, v->lat.n, 0.5), e50 = pct(e->lat.v, e->lat.n, 0.5);
        double p99 = pct(v->lat.v, v->lat.n, 0.99), e99 = pct(e->lat.v, e->lat.n, 0.99);
        printf("| %s | %.2fx | %.2fx | %.0f | %.0f |\n", v->name, p50 / e50, p99 / e99, p50 - e50,
               p99 - e99);
    }
    printf("\nThe same requests timed from the actual send (without the generator's own lateness, "
           "which the figures above include; µs):\n\n");
    printf("| variant | p50 | p90 | p99 | p99.9 | max | p99 ratio to empty |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.2fx |\n", v->name,
               pct(v->svc.v, v->svc.n, 0.5), pct(v->svc.v, v->svc.n, 0.9),
               pct(v->svc.v, v->svc.n, 0.99), pct(v->svc.v, v->svc.n, 0.999),
               v->svc.n ? v->svc.v[v->svc.n - 1] : NAN,
               pct(v->svc.v, v->svc.n, 0.99) / pct(e->svc.v, e->svc.n, 0.99));
    }
    printf("\nCPU and where the time goes (open loop):\n\n");
    printf("| variant | process CPU s | generator thread CPU s | server CPU µs/request | webhook "
           "handler in the server: mean µs, share > 0.5 ms, > 1 ms (its histogram) | send lag p99 "
           "µs | others' cores | CPU pressure |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        char handler[96] = "-";
        if (v->handler_n)
            snprintf(handler, sizeof(handler), "%.0f, %.2f%%, %.2f%%",
                     v->handler_s / (double)v->handler_n * 1e6,
                     100.0 * (double)(v->handler_n - v->handler_le500) / (double)v->handler_n,
                     100.0 * (double)(v->handler_n - v->handler_le1000) / (double)v->handler_n);
        printf("| %s | %.2f | %.2f | %.0f | %s | %.0f | %.2f | %.1f%% |\n", v->name, v->cpu,
               v->cpu_client, (v->cpu - v->cpu_client) / (double)v->n * 1e6, handler,
               pct(v->lag.v, v->lag.n, 0.99), v->others / v->wall, v->psi_us / 1e4 / v->wall);
    }

    printf("\n## Closed loop: %ld connections always busy, %.0f s per variant per round\n\n",
           cfg.conns, cs);
    printf("| variant | requests/s (median of rounds) | per round | latency p50 µs | p99 µs | "
           "errors | server CPU µs/request | generator CPU µs/request |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < NVARIANTS; k++) {
        struct variant *v = &variants[k];
        char rounds[256] = "";
        size_t off = 0;
        if (k != 0 && k != NVARIANTS - 1)
            continue;
        for (long r = 0; r < cfg.rounds; r++)
            off += (size_t)snprintf(rounds + off, sizeof(rounds) - off, "%s%.0f", r ? " / " : "",
                                    v->closed_rate[r]);
        printf("| %s | %.0f | %s | %.0f | %.0f | %ld | %.0f | %.0f |\n", v->name,
               bench_median(v->closed_rate, cfg.rounds), rounds,
               pct(v->closed_lat.v, v->closed_lat.n, 0.5),
               pct(v->closed_lat.v, v->closed_lat.n, 0.99), v->closed_errors,
               (v->closed_cpu - v->closed_cpu_client) / (double)v->closed_n * 1e6,
               v->closed_cpu_client / (double)v->closed_n * 1e6);
    }
    printf("\nThroughput ratio validate-trainjob / empty: %.2fx (%.0f / %.0f requests/s)\n",
           bench_median(vt->closed_rate, cfg.rounds) / bench_median(e->closed_rate, cfg.rounds),
           bench_median(vt->closed_rate, cfg.rounds), bench_median(e->closed_rate, cfg.rounds));

    printf("\n## Pure handler: webhook_serve on the same body in one thread, no HTTP (µs)\n\n");
    printf("| variant | request bytes | mean | p50 | p99 | max | decode p50 | decide p50 | encode "
           "p50 |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < NVARIANTS - 1; k++) {
        struct variant *v = &variants[k];
        double mean = 0;
        for (size_t i = 0; i < v->pure.n; i++)
            mean += v->pure.v[i];
        mean /= (double)v->pure.n;
        printf("| %s | %zu | %.1f | %.1f | %.1f | %.0f | %.1f | %.1f | %.1f |\n", v->name, v->len,
               mean, pct(v->pure.v, v->pure.n, 0.5), pct(v->pure.v, v->pure.n, 0.99),
               v->pure.v[v->pure.n - 1], pct(v->pure_decode.v, v->pure_decode.n, 0.5),
               pct(v->pure_decide.v, v->pure_decide.n, 0.5),
               pct(v->pure_encode.v, v->pure_encode.n, 0.5));
    }
    printf("\nvalidate-trainjob's decide by its parts (p50 µs, %zu runs): schema and CEL "
           "(trainjob_validate_trainjob) %.1f, runtime lookup %.1f, runtime validation "
           "(trainjob_validate_runtime) %.1f, trainjob_render (validates the TrainJob again, "
           "builds the JobSet and the runtime snapshot) %.1f\n",
           vt_render.n, pct(vt_schema.v, vt_schema.n, 0.5), pct(vt_lookup.v, vt_lookup.n, 0.5),
           pct(vt_runtime.v, vt_runtime.n, 0.5), pct(vt_render.v, vt_render.n, 0.5));
    printf("\nOf which, p50 µs: trainjob_render up to its checks only (the same TrainJob with "
           "managedBy naming another controller, so it returns before building) %.1f, so building "
           "the objects the webhook drops costs %.1f; json_loadb alone (decode's parse) %.1f; "
           "json_deep_copy + json_decref of the TrainJob (what mutate-trainjob's decide starts "
           "with) %.1f\n",
           pct(vt_checks.v, vt_checks.n, 0.5),
           pct(vt_render.v, vt_render.n, 0.5) - pct(vt_checks.v, vt_checks.n, 0.5),
           pct(vt_loadb.v, vt_loadb.n, 0.5), pct(mt_copy.v, mt_copy.n, 0.5));
    printf("\nRun: ./build-bwh/bench/bench_webhook --rate %ld --seconds %ld --rounds %ld --conns "
           "%ld\n",
           cfg.rate, cfg.seconds, cfg.rounds, cfg.conns);
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/bench_webhook.XXXXXX", cert[300], key[300];
    char load_start[64], load_end[64];
    struct common_httpd_opts ho = common_httpd_opts_default();
    struct webhook_server_opts wo = {0};
    struct common_error err = {0};
    struct common_metrics *metrics;
    struct webhook_server *w;
    struct common_httpd *h;
    struct gen g;
    double t_start, others = 0, timed = 0;
    double cs;

    parse_flags(argc, argv);
    cs = cfg.seconds / 4.0 < 2 ? 2 : cfg.seconds / 4.0;
    common_alloc_init();
    common_log_set_level(COMMON_LOG_WARN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    t_start = mono();
    bench_loadavg(load_start, sizeof(load_start));
    fprintf(stderr, "bench_webhook: load average %s\n", load_start);

    /* bodies, runtimes, certificates, server */
    load_runtimes();
    variants[0].body = trainjob_review(1, &variants[0].len);
    variants[1].body = trainjob_review(0, &variants[1].len);
    variants[2].body = strdup(pod_review_text);
    variants[2].len = strlen(pod_review_text);
    variants[3].body = variants[0].body; /* the empty route gets the same bytes */
    variants[3].len = variants[0].len;
    wopts.lookup = lookup;
    wopts.scheduler_name = "trainsched";
    wopts.max_body = WEBHOOK_MAX_BODY_DEFAULT;
    check_bodies();

    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    memset(&g, 0, sizeof(g));
    make_certs(dir, cert, key, g.ca, sizeof(cert));
    metrics = common_metrics_create();
    wo.lookup = lookup;
    wo.scheduler_name = "trainsched";
    wo.metrics = metrics;
    w = webhook_server_create(&wo, &err);
    if (!w) {
        fprintf(stderr, "bench_webhook: %s\n", err.msg);
        return 1;
    }
    ho.address = "127.0.0.1:0";
    ho.tls_cert_file = cert;
    ho.tls_key_file = key;
    ho.max_body = webhook_server_httpd_max_body(w);
    ho.threads = SERVER_THREADS;
    h = common_httpd_create(&ho, &err);
    if (!h || webhook_server_install(w, h, &err) ||
        common_httpd_route(h, "POST", "/empty", empty_handler, NULL) ||
        common_httpd_start(h, &err)) {
        fprintf(stderr, "bench_webhook: server: %s\n", err.msg);
        return 1;
    }
    g.port = common_httpd_port(h);
    gen_init(&g);
    fprintf(stderr, "bench_webhook: serving https://127.0.0.1:%d (certificates in %s)\n", g.port,
            dir);

    /* 1. pure handler cost */
    fprintf(stderr, "bench_webhook: pure handler cost, 1.5 s per webhook\n");
    for (int k = 0; k < NVARIANTS - 1; k++)
        pure_run(&variants[k], 1.0);
    pure_validate_split(&variants[0], 0.5);

    /* 2. warm-up: connections open, caches warm */
    fprintf(stderr, "bench_webhook: warm-up, 1 s per variant\n");
    for (int k = 0; k < NVARIANTS; k++) {
        struct run_result rr;
        run(&g, &variants[k], 1.0, 0, NULL, NULL, NULL, &rr);
        if (rr.errors) {
            fprintf(stderr, "bench_webhook: %s fails during warm-up\n", variants[k].name);
            return 1;
        }
    }

    /* 3. open loop, rounds, order rotated */
    for (long r = 0; r < cfg.rounds; r++) {
        for (int j = 0; j < NVARIANTS; j++) {
            struct variant *v = &variants[(r + j) % NVARIANTS];
            struct samples one = {0};
            struct run_result rr;
            double c0 = bench_process_cpu(), tc0 = bench_thread_cpu(), m0 = bench_machine_busy();
            double psi0 = cpu_pressure_us();
            struct htime h0 = {0}, h1 = {0};
            double p99;

            if (v->id != WEBHOOK_COUNT)
                handler_time(metrics, v->name, &h0);
            run(&g, v, (double)cfg.seconds, 0, &one, &v->lag, &v->svc, &rr);
            {
                double c1 = bench_process_cpu(), tc1 = bench_thread_cpu(),
                       m1 = bench_machine_busy();
                double psi1 = cpu_pressure_us();
                double wall = rr.last_done - rr.first_sched;
                v->cpu += c1 - c0;
                v->cpu_client += tc1 - tc0;
                v->others += (m1 - m0) - (c1 - c0);
                v->round_others[r] = ((m1 - m0) - (c1 - c0)) / wall;
                v->round_psi[r] = psi0 < 0 || psi1 < 0 ? NAN : (psi1 - psi0) / 1e6 / wall;
                v->psi_us += psi0 < 0 || psi1 < 0 ? NAN : psi1 - psi0;
                others += (m1 - m0) - (c1 - c0);
                timed += wall;
                v->wall += wall;
            }
            if (v->id != WEBHOOK_COUNT) {
                handler_time(metrics, v->name, &h1);
                v->handler_s += h1.sum - h0.sum;
                v->handler_n += h1.count - h0.count;
                v->handler_le500 += h1.le500 - h0.le500;
                v->handler_le1000 += h1.le1000 - h0.le1000;
            }
            v->n += rr.n;
            v->errors += rr.errors;
            v->conns += rr.conns;
            for (size_t i = 0; i < one.n; i++)
                samples_add(&v->lat, one.v[i]);
            samples_sort(&one);
            v->round_p50[r] = pct(one.v, one.n, 0.5);
            v->round_p99[r] = p99 = pct(one.v, one.n, 0.99);
            fprintf(stderr,
                    "  round %ld %-18s %6ld requests %7.1f/s  p50 %5.0f µs  p99 %6.0f µs  max "
                    "%6.0f µs  errors %ld  others %.2f cores  CPU pressure %.1f%%\n",
                    r + 1, v->name, rr.n, (double)rr.n / (rr.last_done - rr.first_sched),
                    v->round_p50[r], p99, one.n ? one.v[one.n - 1] : NAN, rr.errors,
                    v->round_others[r], 100 * v->round_psi[r]);
            free(one.v);
        }
    }

    /* 4. closed loop: validate-trainjob and empty, alternating */
    for (long r = 0; r < cfg.rounds; r++) {
        for (int j = 0; j < 2; j++) {
            struct variant *v = &variants[(r + j) % 2 ? NVARIANTS - 1 : 0];
            struct run_result rr;
            double c0 = bench_process_cpu(), tc0 = bench_thread_cpu();

            run(&g, v, cs, 1, &v->closed_lat, NULL, NULL, &rr);
            v->closed_cpu += bench_process_cpu() - c0;
            v->closed_cpu_client += bench_thread_cpu() - tc0;
            v->closed_rate[r] = (double)rr.n / (rr.last_done - rr.first_sched);
            v->closed_n += rr.n;
            v->closed_errors += rr.errors;
            v->closed_wall += rr.last_done - rr.first_sched;
            fprintf(stderr, "  closed round %ld %-18s %7.0f requests/s  errors %ld\n", r + 1,
                    v->name, v->closed_rate[r], rr.errors);
        }
    }
    for (int k = 0; k < NVARIANTS; k++) {
        samples_sort(&variants[k].lat);
        samples_sort(&variants[k].lag);
        samples_sort(&variants[k].svc);
        samples_sort(&variants[k].closed_lat);
    }
    bench_loadavg(load_end, sizeof(load_end));
    report(load_start, load_end, others / timed, mono() - t_start);

    gen_free(&g);
    common_httpd_destroy(h);
    webhook_server_destroy(w);
    common_metrics_destroy(metrics);
    unlink(cert);
    unlink(key);
    unlink(g.ca);
    rmdir(dir);
    for (int k = 0; k < NVARIANTS; k++) {
        free(variants[k].lat.v);
        free(variants[k].lag.v);
        free(variants[k].svc.v);
        free(variants[k].closed_lat.v);
        free(variants[k].pure.v);
        free(variants[k].pure_decode.v);
        free(variants[k].pure_decide.v);
        free(variants[k].pure_encode.v);
    }
    free(variants[0].body);
    free(variants[1].body);
    free(variants[2].body);
    free(vt_schema.v);
    free(vt_lookup.v);
    free(vt_runtime.v);
    free(vt_render.v);
    free(vt_checks.v);
    free(vt_loadb.v);
    free(mt_copy.v);
    for (size_t i = 0; i < rts.n; i++)
        common_yaml_docs_free(&rts.docs[i]);
    curl_global_cleanup();
    {
        long errors = 0;
        for (int k = 0; k < NVARIANTS; k++)
            errors += variants[k].errors + variants[k].closed_errors;
        return errors ? 1 : 0;
    }
}
