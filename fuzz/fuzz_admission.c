/*
 * fuzz/fuzz_admission.c - libFuzzer target for the admission webhook (webhook/handlers.h): the
 * AdmissionReview decoder, every endpoint's decision and the response encoder, through
 * webhook_serve, the function the HTTPS routes call.
 *
 * Input: the first byte picks the endpoint (byte % 5: 0 validate-trainjob, 1
 * validate-trainingruntime, 2 validate-clustertrainingruntime, 3 mutate-trainjob, 4 mutate-pod;
 * the seeds use '2', '3', '4', '0', '1'), the rest is the request body sent as
 * application/json. The runtime lookup serves a fixed cluster: the ClusterTrainingRuntime
 * torch-distributed, the TrainingRuntime team-runtime in namespace default (MPI, launcher as
 * node, so the render reaches the key generator), and the JobSet default/alpha with an active
 * replicated job (rule 16); any other name is not found.
 *
 * Every answer must be consistent: HTTP 200 with an admission.k8s.io/v1 AdmissionReview whose
 * response has a non-empty uid and a boolean allowed, a status code >= 400 when denied, and
 * when a patch is present patchType JSONPatch and a base64 patch that decodes to a JSON array of
 * operations each with an op and a path starting with '/'; or 400/415 with a text message.
 * A 500 (only out of memory may cause one) aborts, as do crashes, sanitizer reports and leaks.
 * Seeds: fuzz/corpus/admission/.
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "webhook/handlers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *cluster;

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_admission: %s: %s\n", what, detail ? detail : "");
    abort();
}

static const char cluster_json[] =
    "["
    "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"ClusterTrainingRuntime\","
    "\"metadata\":{\"name\":\"torch-distributed\",\"labels\":{"
    "\"trainer.kubeflow.org/support\":\"deprecated\"}},"
    "\"spec\":{\"mlPolicy\":{\"numNodes\":1,\"torch\":{}},\"template\":{\"spec\":{"
    "\"replicatedJobs\":[{\"name\":\"node\",\"template\":{\"metadata\":{\"labels\":{"
    "\"trainer.kubeflow.org/trainjob-ancestor-step\":\"trainer\"}},\"spec\":{\"template\":{"
    "\"spec\":{\"containers\":[{\"name\":\"node\",\"image\":\"pytorch\"}]}}}}}]}}}},"
    "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainingRuntime\","
    "\"metadata\":{\"name\":\"team-runtime\",\"namespace\":\"default\"},"
    "\"spec\":{\"mlPolicy\":{\"numNodes\":1,\"mpi\":{\"runLauncherAsNode\":true}},"
    "\"template\":{\"spec\":{\"replicatedJobs\":["
    "{\"name\":\"launcher\",\"template\":{\"metadata\":{\"labels\":{"
    "\"trainer.kubeflow.org/trainjob-ancestor-step\":\"trainer\"}},\"spec\":{\"template\":{"
    "\"spec\":{\"containers\":[{\"name\":\"node\",\"image\":\"mpi\"}]}}}}},"
    "{\"name\":\"node\",\"template\":{\"spec\":{\"template\":{\"spec\":{\"containers\":["
    "{\"name\":\"node\",\"image\":\"mpi\"}]}}}}}]}}}},"
    "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
    "\"metadata\":{\"name\":\"alpha\",\"namespace\":\"default\"},"
    "\"status\":{\"replicatedJobsStatus\":[{\"name\":\"node\",\"active\":1}]}}"
    "]";

static enum common_rc lookup(void *ctx, const char *kind, const char *ns, const char *name,
                             json_t **out, struct common_error *err)
{
    size_t i;
    json_t *o;

    *out = NULL;
    json_array_foreach(cluster, i, o)
    {
        const json_t *meta = json_object_get(o, "metadata");
        const char *k = json_string_value(json_object_get(o, "kind"));
        const char *n = json_string_value(json_object_get(meta, "name"));
        const char *on = json_string_value(json_object_get(meta, "namespace"));
        if (strcmp(k, kind) == 0 && strcmp(n, name) == 0 && (!ns || (on && strcmp(on, ns) == 0))) {
            *out = json_incref(o);
            return COMMON_OK;
        }
    }
    return common_error_set(err, COMMON_ENOTFOUND, "%s %s not found", kind, name);
}

static void check_patch(const char *b64)
{
    size_t n = strlen(b64);
    unsigned char *raw;
    json_error_t je;
    json_t *ops, *op;
    int len;
    size_t i;

    if (n == 0 || n % 4)
        die("patch is not padded base64", b64);
    raw = malloc(n / 4 * 3 + 1);
    if (!raw)
        die("out of memory", NULL);
    len = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
    if (len < 0)
        die("patch is not base64", b64);
    while (len > 0 && raw[len - 1] == '\0')
        len--;
    ops = json_loadb((const char *)raw, (size_t)len, 0, &je);
    if (!json_is_array(ops) || json_array_size(ops) == 0)
        die("patch is not a non-empty JSON array", (const char *)raw);
    json_array_foreach(ops, i, op)
    {
        const char *o = json_string_value(json_object_get(op, "op"));
        const char *p = json_string_value(json_object_get(op, "path"));
        if (!o || !p || p[0] != '/')
            die("patch operation without op or path", (const char *)raw);
    }
    json_decref(ops);
    free(raw);
}

static void check_review(const char *text)
{
    json_error_t je;
    json_t *r = json_loads(text, 0, &je);
    const json_t *resp = json_object_get(r, "response"), *st, *patch;
    const char *uid;

    if (!r)
        die("answer is not JSON", text);
    if (strcmp(json_string_value(json_object_get(r, "apiVersion")), "admission.k8s.io/v1") ||
        strcmp(json_string_value(json_object_get(r, "kind")), "AdmissionReview"))
        die("answer is not an admission.k8s.io/v1 AdmissionReview", text);
    uid = json_string_value(json_object_get(resp, "uid"));
    if (!uid || !*uid || !json_is_boolean(json_object_get(resp, "allowed")))
        die("response without uid or allowed", text);
    st = json_object_get(resp, "status");
    if (json_is_false(json_object_get(resp, "allowed")) &&
        json_integer_value(json_object_get(st, "code")) < 400)
        die("denial without an error code", text);
    patch = json_object_get(resp, "patch");
    if (patch) {
        if (!json_is_true(json_object_get(resp, "allowed")) ||
            strcmp(json_string_value(json_object_get(resp, "patchType")), "JSONPatch") != 0)
            die("patch without allowed and patchType JSONPatch", text);
        check_patch(json_string_value(patch));
    }
    json_decref(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct webhook_options o = {0};
    struct webhook_reply reply;
    struct common_buf out;
    struct common_arena *a;
    const struct webhook_endpoint *ep;

    if (!cluster) {
        json_error_t je;
        common_alloc_init();
        cluster = json_loads(cluster_json, 0, &je);
        if (!cluster)
            die("cluster", je.text);
    }
    if (size < 1)
        return 0;
    ep = &webhook_endpoints[data[0] % WEBHOOK_COUNT];
    o.lookup = lookup;
    o.scheduler_name = "trainsched";
    a = common_arena_create(0);
    if (!a)
        die("out of memory", NULL);
    common_buf_init(&out, 64u << 20);
    webhook_serve(a, ep, "application/json", (const char *)data + 1, size - 1, &o,
                  1785578400 /* 2026-08-01T10:00:00Z */, &out, &reply);
    switch (reply.status) {
    case 200:
        check_review(out.data ? out.data : "");
        break;
    case 400:
        if (!out.data || strncmp(out.data, "webhook ", 8) != 0)
            die("400 without a message", out.data);
        break;
    default:
        die("unexpected status", out.data);
    }
    common_buf_free(&out);
    common_arena_destroy(a);
    return 0;
}
