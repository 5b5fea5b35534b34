/*
 * fuzz/fuzz_cel.c - libFuzzer target for the DRA CEL subset (dra/cel.h).
 *
 * The input is read as a selector expression (up to FUZZ_CEL_MAX bytes; an embedded NUL ends
 * it). Parsing must succeed or fail with COMMON_EINVAL / COMMON_EUNSUPPORTED and a message;
 * a parsed program is evaluated against two fixed devices (one with attributes and capacity,
 * one bare) and must answer a match or a runtime error with a message, twice the same way
 * (evaluation has no state). Any broken property aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "dra/cel.h"

#define FUZZ_CEL_MAX 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_eval(const struct dra_cel_prog *p, const struct dra_cel_device *d)
{
    struct common_error e1, e2;
    int m1 = -1, m2 = -1;
    enum common_rc r1 = dra_cel_eval(p, d, &m1, &e1), r2 = dra_cel_eval(p, d, &m2, &e2);
    if (r1 != r2 || m1 != m2)
        abort();
    if (r1 == COMMON_OK && m1 != 0 && m1 != 1)
        abort();
    if (r1 != COMMON_OK && (r1 != COMMON_EINVAL || e1.msg[0] == '\0' || strcmp(e1.msg, e2.msg)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char in[FUZZ_CEL_MAX + 1];
    struct common_arena *a;
    struct dra_cel_prog p;
    struct common_error err;
    struct dra_attr at[3];
    struct dra_capacity cap;
    struct dra_cel_device full, bare = {"other.example.com", NULL, 0, NULL, 0};
    enum common_rc rc;

    if (size > FUZZ_CEL_MAX)
        size = FUZZ_CEL_MAX;
    memcpy(in, data, size);
    in[size] = '\0';
    memset(at, 0, sizeof(at));
    at[0] = (struct dra_attr){
        .domain = "gpu.example.com", .name = "model", .type = DRA_ATTR_STRING, .s = "H100"};
    at[1] = (struct dra_attr){
        .domain = "gpu.example.com", .name = "index", .type = DRA_ATTR_INT, .i = 3};
    at[2] = (struct dra_attr){
        .domain = "gpu.example.com", .name = "v", .type = DRA_ATTR_VERSION, .s = "1.2.3-rc.1"};
    if (dra_semver_parse(at[2].s, &at[2].v, NULL) != COMMON_OK)
        abort();
    cap.domain = "gpu.example.com";
    cap.name = "memory";
    if (common_quantity_parse("80Gi", &cap.value, NULL) != COMMON_OK)
        abort();
    full = (struct dra_cel_device){"gpu.example.com", at, 3, &cap, 1};

    if (!(a = common_arena_create(0)))
        return 0;
    rc = dra_cel_parse(a, in, &p, &err);
    if (rc != COMMON_OK) {
        if ((rc != COMMON_EINVAL && rc != COMMON_EUNSUPPORTED && rc != COMMON_ENOMEM) ||
            err.msg[0] == '\0')
            abort();
    } else {
        check_eval(&p, &full);
        check_eval(&p, &bare);
    }
    common_arena_destroy(a);
    return 0;
}
