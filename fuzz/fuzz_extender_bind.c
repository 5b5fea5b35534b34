/*
 * fuzz/fuzz_extender_bind.c - libFuzzer target for extender_decode_bind_args and
 * extender_encode_bind_result.
 *
 * Every input is decoded: a failure must be COMMON_EINVAL or COMMON_ETOOBIG with a message and
 * no result; a success must give four non-empty strings within their caps. Then the input
 * itself (cut at its first NUL) is sent back as a bind Error text: the answer must be one
 * JSON object {"Error": s} where s is the text exactly when it is UTF-8, and otherwise the
 * text with U+FFFD in place of each byte that is not. Any broken property aborts.
 * Seeds: fuzz/corpus/extender_bind, e.g.
 *   ./fuzz_extender_bind -max_len=65536 corpus-dir ../fuzz/corpus/extender_bind
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "extender/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            abort();                                                                               \
    } while (0)

/* utf8_ok - s is well-formed UTF-8 (the same rules as RFC 3629 and jansson). */
static int utf8_ok(const char *s)
{
    json_t *j = json_string(s); /* jansson checks UTF-8 when it builds a string */
    int ok = j != NULL;

    json_decref(j);
    return ok;
}

static void check_echo(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    struct common_buf b;
    struct common_error err;
    const char *got;
    json_t *j;

    CHECK(text);
    memcpy(text, data, size);
    text[size] = '\0';
    common_buf_init(&b, (size_t)1 << 24);
    CHECK(extender_encode_bind_result(&b, text, &err) == COMMON_OK);
    j = json_loadb(b.data, b.len, 0, NULL);
    CHECK(json_is_object(j) && json_object_size(j) == 1);
    got = json_string_value(json_object_get(j, "Error"));
    CHECK(got);
    if (utf8_ok(text))
        CHECK(strcmp(got, text) == 0);
    else
        CHECK(strstr(got, "\xef\xbf\xbd") != NULL); /* U+FFFD */
    json_decref(j);
    common_buf_free(&b);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    struct extender_limits lim = {1 << 20, 0, 0};
    struct extender_bind_args *x = (struct extender_bind_args *)&lim;
    struct common_arena *a;
    struct common_error err;
    enum common_rc rc;

    if (!ready) {
        common_alloc_init();
        ready = 1;
    }
    a = common_arena_create(0);
    CHECK(a);
    rc = extender_decode_bind_args(a, (const char *)data, size, &lim, &x, &err);
    if (rc != COMMON_OK) {
        CHECK(rc == COMMON_EINVAL || rc == COMMON_ETOOBIG);
        CHECK(err.code == rc && err.msg[0] && x == NULL);
    } else {
        CHECK(x && x->pod_name && x->pod_namespace && x->pod_uid && x->node);
        CHECK(x->pod_name[0] && strlen(x->pod_name) <= EXTENDER_NAME_MAX);
        CHECK(x->pod_namespace[0] && strlen(x->pod_namespace) <= EXTENDER_NAMESPACE_MAX);
        CHECK(x->pod_uid[0] && strlen(x->pod_uid) <= EXTENDER_NAME_MAX);
        CHECK(x->node[0] && strlen(x->node) <= EXTENDER_NAME_MAX);
        CHECK(extender_json_check((const char *)data, size, &err) == COMMON_OK);
    }
    common_arena_destroy(a);
    check_echo(data, size);
    return 0;
}
