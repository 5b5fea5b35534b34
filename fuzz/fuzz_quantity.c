/*
 * fuzz/fuzz_quantity.c - libFuzzer target for common/quantity.
 *
 * The input is read as a quantity string (up to FUZZ_QTY_MAX bytes; an embedded NUL ends it).
 * When it parses, the canonical text must fit in 64 bytes and parse back to the same value, and
 * printing must settle after one round trip (the text is then a fixed point). Add, multiply and the
 * int64 accessors run on the value too, so the sanitizers see their overflow checks. Any broken
 * property aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"

#define FUZZ_QTY_MAX 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char in[FUZZ_QTY_MAX + 1];
    char text[64], again_text[64];
    struct common_quantity q, again, sum;
    struct common_error err;
    int64_t v;
    int len;

    if (size > FUZZ_QTY_MAX)
        size = FUZZ_QTY_MAX;
    memcpy(in, data, size);
    in[size] = '\0';

    if (common_quantity_parse(in, &q, &err) != COMMON_OK) {
        if (err.code != COMMON_EINVAL || err.msg[0] == '\0')
            abort();
        return 0;
    }

    len = common_quantity_format(&q, text, sizeof(text));
    if (len <= 0 || (size_t)len != strlen(text))
        abort();
    if (common_quantity_parse(text, &again, &err) != COMMON_OK)
        abort();
    if (again.nano != q.nano || common_quantity_cmp(&q, &again) != 0)
        abort();
    /*
     * The text need not be a fixed point at once: a binary value that is no whole multiple of
     * 1024 prints without a suffix ("900812.5Ki" is "922432000") and reads back as decimal
     * ("922432k"), as upstream does. From the second printing on it must not change.
     */
    len = common_quantity_format(&again, again_text, sizeof(again_text));
    if (len <= 0 || common_quantity_parse(again_text, &again, &err) != COMMON_OK ||
        again.nano != q.nano)
        abort();
    if (common_quantity_format(&again, text, sizeof(text)) != len || strcmp(text, again_text) != 0)
        abort();
    if (common_quantity_is_zero(&q) != (strcmp(text, "0") == 0))
        abort();

    /* q + q == 2 * q, both failing or both succeeding */
    sum = q;
    again = q;
    {
        enum common_rc add_rc = common_quantity_add(&sum, &q, NULL);
        enum common_rc mul_rc = common_quantity_mul(&again, 2, NULL);
        if (add_rc != mul_rc || (add_rc == COMMON_OK && sum.nano != again.nano))
            abort();
    }
    /* value_ceil has the sign of the value, and rounding milli to units (away from zero)
     * gives value_ceil again */
    if (common_quantity_value_ceil(&q, &v, NULL) == COMMON_OK) {
        int64_t m, units;
        if ((v > 0) != (q.nano > 0) || (v < 0) != (q.nano < 0))
            abort();
        if (common_quantity_milli(&q, &m, NULL) == COMMON_OK) {
            units = m / 1000 + (m % 1000 > 0) - (m % 1000 < 0);
            if (units != v)
                abort();
        }
    }
    return 0;
}
