/*
 * fuzz/fuzz_simulate.c - libFuzzer target for `trainsched simulate`: the input is a jobs file
 * (TrainJobs, runtimes, PodGroups, Pods, with sim- annotations), simulated on a small built-in
 * cluster for at most a simulated week, then reported as JSON, text and SVG. Any outcome but a
 * crash, a hang, a sanitizer report or a leak is fine; an error must come with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/yaml.h"
#include "sim/sim.h"

static const char cluster[] = "apiVersion: trainsched.io/v1alpha1\nkind: SimCluster\n"
                              "metadata: {name: gpu}\n"
                              "spec: {blocks: 1, racksPerBlock: 2, nodesPerRack: 2}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct common_yaml_docs cf, jf;
    struct common_error err;
    struct common_arena *a;
    struct sim_loader *l;
    struct sim_input in;
    struct sim_result r;
    struct sim_options opts;
    static int init;

    if (!init) {
        common_alloc_init();
        init = 1;
    }
    memset(&cf, 0, sizeof(cf));
    memset(&jf, 0, sizeof(jf));
    a = common_arena_create(0);
    l = a ? sim_loader_create(a, NULL) : NULL;
    if (!l)
        goto out;
    memset(&opts, 0, sizeof(opts));
    opts.until_ms = 7LL * 24 * 3600 * 1000;
    if (common_yaml_load(cluster, strlen(cluster), "cluster", NULL, &cf, &err) ||
        sim_load_cluster(l, &cf, &err))
        __builtin_trap(); /* the built-in cluster must load */
    if (common_yaml_load((const char *)data, size, "fuzz", NULL, &jf, &err) == COMMON_OK &&
        sim_load_jobs(l, &jf, &err) == COMMON_OK && sim_loader_finish(l, &in, &err) == COMMON_OK &&
        sim_run(&in, &opts, a, &r, &err) == COMMON_OK) {
        FILE *devnull = fopen("/dev/null", "w");
        json_decref(sim_report_json(&in, &r));
        if (devnull) {
            sim_report_text(&in, &r, devnull);
            sim_report_svg(&in, &r, devnull);
            fclose(devnull);
        }
    } else if (!err.msg[0])
        __builtin_trap(); /* an error without a message */
out:
    sim_loader_destroy(l);
    common_yaml_docs_free(&cf);
    common_yaml_docs_free(&jf);
    common_arena_destroy(a);
    return 0;
}
