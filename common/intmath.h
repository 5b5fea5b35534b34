/*
 * common/intmath.h - integer arithmetic that cannot overflow: saturating sums for counters and
 * deadlines built from input values (a Node's allocatable, a pod's requests, a timeout), where
 * C's signed overflow would be undefined behaviour.
 */
#ifndef COMMON_INTMATH_H
#define COMMON_INTMATH_H

#include <stdint.h>

/* a + b, clamped to [INT64_MIN, INT64_MAX] instead of overflowing */
static inline int64_t common_add_sat(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

#endif
