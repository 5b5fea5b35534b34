/*
 * common/quantity.h - Kubernetes resource.Quantity: parse, compare, add, scale, print.
 *
 * Grammar (k8s.io/apimachinery/pkg/api/resource): <sign><digits>[.<digits>]<suffix>, where
 * suffix is a binary SI one (Ki Mi Gi Ti Pi Ei), a decimal SI one (n u m "" k M G T P E) or a
 * decimal exponent (e3, E-2, ...). A value is held exactly as an integer count of nano-units
 * (10^-9) in 128 bits plus the format it was written in; precision finer than 1n rounds up,
 * as Kubernetes does. Values whose nano count does not fit in 128 bits are an overflow error.
 *
 * Differences from apimachinery, on purpose: a number needs at least one digit ("." "+" "e3"
 * parse as 0 upstream, are errors here); a binary-SI value is not capped at 2^63-1 ("8Ei" is
 * 8Ei); an exponent too large for the 128-bit range is an overflow error rather than wrapping
 * through int32; negative values round away from zero in milli/value_ceil (upstream's
 * big-number path is inconsistent there).
 *
 * Printing follows Quantity.String's canonical form (CanonicalizeBytes: the input text is
 * never echoed back, "+08G" prints "8G"): binary-SI values that are whole multiples
 * of a power of 1024 print with the largest such suffix (3Gi, 1536Mi), other values print in
 * decimal SI with the largest suffix that keeps an integer mantissa (2300m, 1250m, 102, 408Gi
 * stays 408Gi because it was binary). A decimal value past 999E (10^21 and up) and every value
 * in exponent format print as <mantissa>e<exp>, exp a multiple of 3 ("1e3", "12e6"; "1500" when
 * exp is 0). Binary values under 1024 in magnitude or with a fraction print in decimal SI
 * ("512", "1024512m").
 * Comparisons are by value, never by text.
 */
#ifndef COMMON_QUANTITY_H
#define COMMON_QUANTITY_H

#include <stdint.h>

#include "common/error.h"

enum common_quantity_format {
    COMMON_QTY_DECIMAL_SI = 0, /* n u m k M G T P E, or no suffix */
    COMMON_QTY_BINARY_SI,      /* Ki Mi Gi Ti Pi Ei */
    COMMON_QTY_DECIMAL_EXP     /* e<n> / E<n> */
};

struct common_quantity {
    __int128 nano; /* value in units of 10^-9 */
    enum common_quantity_format format;
};

/*
 * common_quantity_parse - parse s (e.g. "500m", "1.5Gi", "2e3", "-1"). Returns COMMON_OK, or
 * COMMON_EINVAL with a message that quotes s and says what is wrong ("quantities must match
 * the regular expression ...", "overflows"). Whitespace anywhere is an error.
 */
enum common_rc common_quantity_parse(const char *s, struct common_quantity *out,
                                     struct common_error *err);

/* common_quantity_cmp - -1, 0 or 1 as a < b, a == b, a > b, by value. */
int common_quantity_cmp(const struct common_quantity *a, const struct common_quantity *b);

/* common_quantity_is_zero - nonzero when the value is 0. */
int common_quantity_is_zero(const struct common_quantity *q);

/*
 * common_quantity_add - *acc += *b. The result keeps acc's format, or b's when acc is zero (as
 * Quantity.Add does for a zero value). COMMON_EINVAL on overflow.
 */
enum common_rc common_quantity_add(struct common_quantity *acc, const struct common_quantity *b,
                                   struct common_error *err);

/* common_quantity_mul - *q *= k (an integer). COMMON_EINVAL on overflow. */
enum common_rc common_quantity_mul(struct common_quantity *q, int64_t k, struct common_error *err);

/*
 * common_quantity_milli - the value in milli-units, rounded up (Quantity.MilliValue). Returns
 * COMMON_EINVAL when it does not fit in int64.
 */
enum common_rc common_quantity_milli(const struct common_quantity *q, int64_t *out,
                                     struct common_error *err);

/*
 * common_quantity_value_ceil - the value rounded up to an integer (Quantity.Value). Returns
 * COMMON_EINVAL when it does not fit in int64.
 */
enum common_rc common_quantity_value_ceil(const struct common_quantity *q, int64_t *out,
                                          struct common_error *err);

/*
 * common_quantity_format - canonical text into buf (size >= 64 is always enough). Returns the
 * length written, or -1 if buf is too small.
 */
int common_quantity_format(const struct common_quantity *q, char *buf, unsigned long size);

#endif
