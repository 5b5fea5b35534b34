/*
 * bench/bench_render.c - render N TrainJobs (default 1000) across the built-in runtimes in one
 * process, and, in the same run, the floor: parsing the same TrainJob texts and printing the
 * same output objects with jansson alone. Reports TrainJobs per second for both and their
 * ratio, plus the share spent generating MPI SSH keys (ECDSA P-521, one per MPI TrainJob).
 *
 * Run: ./build/bench/bench_render [N]     (build with -DCMAKE_BUILD_TYPE=Release for figures)
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/sshkey.h"
#include "common/yaml.h"
#include "trainjob/builtin.h"
#include "trainjob/trainjob.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double keygen_seconds;

static enum common_rc timed_keygen(struct common_arena *a, char **priv, char **pub,
                                   struct common_error *err)
{
    double t0 = now();
    enum common_rc rc = common_sshkey_ecdsa_p521(a, priv, pub, err);
    keygen_seconds += now() - t0;
    return rc;
}

static const char *const runtimes[] = {"torch-distributed",   "jax-distributed",
                                       "xgboost-distributed", "deepspeed-distributed",
                                       "mlx-distributed",     "torchtune-llama3.2-1b"};
#define NRT (sizeof(runtimes) / sizeof(runtimes[0]))

static char *trainjob_text(int i)
/* one TrainJob as JSON text; malloc'd */
{
    const char *rt = runtimes[i % NRT];
    int tune = strncmp(rt, "torchtune", 9) == 0;
    char *s = malloc(2048);
    snprintf(s, 2048,
             "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
             "\"metadata\":{\"name\":\"job-%d\",\"namespace\":\"bench\","
             "\"uid\":\"00000000-0000-0000-0000-%012d\"},"
             "\"spec\":{\"runtimeRef\":{\"name\":\"%s\"},\"trainer\":{%s"
             "\"numNodes\":%d,\"resourcesPerNode\":{\"limits\":{\"nvidia.com/gpu\":%d}},"
             "\"env\":[{\"name\":\"RUN\",\"value\":\"%d\"}]}}}",
             i, i, rt,
             tune ? "\"command\":[\"tune\",\"run\"],\"args\":[\"model.lora_attn_modules=[q]\"],"
                  : "\"command\":[\"python\",\"train.py\"],",
             tune ? 1 : 1 + i % 8, tune ? 2 : 1 + i % 8, i);
    return s;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
    json_t *rt[NRT];
    struct common_yaml_docs docs[NRT];
    char **texts;
    json_t **outputs;
    double t0, t_render, t_floor;
    size_t bytes = 0;
    struct trainjob_options opts = {"bench", NULL, timed_keygen, NULL, NULL};

    common_alloc_init();
    if (n < 1 || n > 1000000) {
        fprintf(stderr, "usage: bench_render [N]   (1..1000000 TrainJobs, default 1000)\n");
        return 2;
    }
    for (size_t r = 0; r < NRT; r++) {
        const struct trainjob_builtin *b = trainjob_builtin_find(runtimes[r]);
        struct common_error e;
        memset(&docs[r], 0, sizeof(docs[r]));
        if (!b || common_yaml_load(b->yaml, b->len, runtimes[r], NULL, &docs[r], &e)) {
            fprintf(stderr, "built-in runtime %s missing\n", runtimes[r]);
            return 1;
        }
        rt[r] = docs[r].docs[0];
    }
    texts = calloc((size_t)n, sizeof(*texts));
    outputs = calloc((size_t)n, sizeof(*outputs));
    for (long i = 0; i < n; i++)
        texts[i] = trainjob_text((int)i);

    /* 1. render: parse the TrainJob, render, print every object */
    t0 = now();
    for (long i = 0; i < n; i++) {
        struct common_arena *a = common_arena_create(0);
        struct trainjob_output out;
        struct common_error e;
        json_t *tj = json_loads(texts[i], 0, NULL);
        char *printed;
        if (!tj || trainjob_render(a, tj, rt[i % NRT], &opts, &out, &e)) {
            fprintf(stderr, "render %ld failed: %s\n", i, e.msg);
            return 1;
        }
        printed = json_dumps(out.objects, JSON_COMPACT);
        bytes += strlen(printed);
        free(printed);
        outputs[i] = out.objects;
        json_decref(tj);
        common_arena_destroy(a);
    }
    t_render = now() - t0;

    /* 2. the floor: parse the same TrainJob texts, print the same objects, jansson alone */
    t0 = now();
    for (long i = 0; i < n; i++) {
        json_t *tj = json_loads(texts[i], 0, NULL);
        char *printed = json_dumps(outputs[i], JSON_COMPACT);
        free(printed);
        json_decref(tj);
    }
    t_floor = now() - t0;

    printf("bench_render: %ld TrainJobs over %zu built-in runtimes, %.1f MB of output\n", n, NRT,
           (double)bytes / 1e6);
    printf("  render (parse + validate + build + print): %8.3f s  %10.0f TrainJobs/s\n", t_render,
           (double)n / t_render);
    printf("    of which MPI SSH key generation:         %8.3f s  (%.0f%%)\n", keygen_seconds,
           100.0 * keygen_seconds / t_render);
    printf("  floor (jansson parse + print only):        %8.3f s  %10.0f TrainJobs/s\n", t_floor,
           (double)n / t_floor);
    printf("  ratio render/floor: %.1fx; without key generation: %.1fx\n", t_render / t_floor,
           (t_render - keygen_seconds) / t_floor);
    for (long i = 0; i < n; i++) {
        json_decref(outputs[i]);
        free(texts[i]);
    }
    free(outputs);
    free(texts);
    for (size_t r = 0; r < NRT; r++)
        common_yaml_docs_free(&docs[r]);
    return 0;
}
