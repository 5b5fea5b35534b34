/*
 * tests/unit/test_quantity.c - common/quantity: parse, print, compare, add, multiply, round.
 *
 * Every test walks a table, one row per case (tcase_add_loop_test), so a case is one line.
 * Expected canonical strings and milli values were checked against apimachinery's
 * Quantity.CanonicalizeBytes and MilliValue; the rows marked "differs from upstream" are the
 * documented deviations in common/quantity.h.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "common/quantity.h"
#include "testutil.h"

/* 2^127 - 1 nano-units, the largest magnitude a quantity holds. */
#define QTY_MAX_TEXT "170141183460469231731687303715884105727n"

/* ---- valid quantities: input, canonical text, milli value (when it fits int64) ---- */

struct valid_row {
    const char *in;
    const char *canonical;
    int milli_fits;
    int64_t milli;
};

static const struct valid_row valid_rows[] = {
    {"0", "0", 1, 0},
    {"-0", "0", 1, 0},
    {"+0", "0", 1, 0},
    {"00", "0", 1, 0},
    {"0Ki", "0", 1, 0},
    {"0.000e5", "0", 1, 0},
    {"1", "1", 1, 1000},
    {"+1", "1", 1, 1000},
    {"08", "8", 1, 8000},
    {"1.", "1", 1, 1000},
    {".5", "500m", 1, 500},
    {"1.G", "1G", 1, 1000000000000},
    {"1000", "1k", 1, 1000000},
    {"1000m", "1", 1, 1000},
    {"1500m", "1500m", 1, 1500},
    {"1.25", "1250m", 1, 1250},
    {"1.5", "1500m", 1, 1500},
    {"100m", "100m", 1, 100},
    {"0.001", "1m", 1, 1},
    {"1.2345", "1234500u", 1, 1235},
    {"1n", "1n", 1, 1},
    {"1u", "1u", 1, 1},
    {"1k", "1k", 1, 1000000},
    {"1M", "1M", 1, 1000000000},
    {"1G", "1G", 1, 1000000000000},
    {"1T", "1T", 1, 1000000000000000},
    {"1P", "1P", 1, 1000000000000000000},
    {"12000", "12k", 1, 12000000},
    {"1048576", "1048576", 1, 1048576000},
    {"1Ki", "1Ki", 1, 1024000},
    {"1024", "1024", 1, 1024000},
    {"1024Ki", "1Mi", 1, 1048576000},
    {"0.5Gi", "512Mi", 1, 536870912000},
    {"1.5Gi", "1536Mi", 1, 1610612736000},
    {"1536Mi", "1536Mi", 1, 1610612736000},
    {"3Gi", "3Gi", 1, 3221225472000},
    {"2Ti", "2Ti", 1, 2199023255552000},
    {"1023Ki", "1023Ki", 1, 1047552000},
    {"0.5Ki", "512", 1, 512000},
    {"0.25Ki", "256", 1, 256000},
    {"1.0005Ki", "1024512m", 1, 1024512},
    {"0.001Ki", "1024m", 1, 1024},
    {"1e3", "1e3", 1, 1000000},
    {"1E3", "1e3", 1, 1000000},
    {"1e+3", "1e3", 1, 1000000},
    {"1E-3", "1e-3", 1, 1},
    {"12e6", "12e6", 1, 12000000000},
    {"1.5e3", "1500", 1, 1500000},
    {"1e-9", "1e-9", 1, 1},
    {"1e-10", "1e-9", 1, 1},      /* below 1n rounds up */
    {"0.1n", "1n", 1, 1},         /* below 1n rounds up */
    {"0.0000000001", "1n", 1, 1}, /* below 1n rounds up */
    {"1.0000000001", "1000000001n", 1, 1001},
    {"1e-200000", "1e-9", 1, 1},
    {"-1", "-1", 1, -1000},
    {"-1.5", "-1500m", 1, -1500},
    {"-0.5Gi", "-512Mi", 1, -536870912000},
    {"-1n", "-1n", 1, -1},
    {"-100m", "-100m", 1, -100},
    {"1E", "1E", 0, 0},
    {"1000E", "1e21", 0, 0}, /* past E there is no suffix: exponent form */
    {"7Ei", "7Ei", 0, 0},
    {"8Ei", "8Ei", 0, 0},       /* differs from upstream, which caps binary at 2^63-1 */
    {"1024Ei", "1024Ei", 0, 0}, /* differs from upstream, which caps binary at 2^63-1 */
    {"123456789123456789123456789", "123456789123456789123456789", 0, 0},
    {"9223372036854775807", "9223372036854775807", 0, 0},
    {"9223372036854775.807", "9223372036854775807m", 1, INT64_MAX},
    {"-9223372036854775.808", "-9223372036854775808m", 1, INT64_MIN},
    {"1e1", "10", 1, 10000},
    {"1e2", "100", 1, 100000},
    {"1e28", "10e27", 0, 0},
    {QTY_MAX_TEXT, QTY_MAX_TEXT, 0, 0},
    {"-" QTY_MAX_TEXT, "-" QTY_MAX_TEXT, 0, 0},
    {"170141183460469231731687303715.884105727", QTY_MAX_TEXT, 0, 0},
};

START_TEST(test_valid)
{
    const struct valid_row *row = &valid_rows[_i];
    struct common_quantity q, again;
    struct common_error err;
    char buf[128];
    int64_t milli = 0;
    int len;

    common_error_clear(&err);
    ck_assert_msg(common_quantity_parse(row->in, &q, &err) == COMMON_OK, "\"%s\": %s", row->in,
                  err.msg);
    len = common_quantity_format(&q, buf, sizeof(buf));
    ck_assert_int_eq(len, (int)strlen(row->canonical));
    ck_assert_msg(strcmp(buf, row->canonical) == 0, "\"%s\" printed \"%s\", want \"%s\"", row->in,
                  buf, row->canonical);

    if (row->milli_fits) {
        ck_assert_int_eq(common_quantity_milli(&q, &milli, NULL), COMMON_OK);
        ck_assert_int_eq(milli, row->milli);
    } else {
        ck_assert_int_eq(common_quantity_milli(&q, &milli, &err), COMMON_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "does not fit in int64"));
    }

    /* the canonical text parses back to the same value and prints the same */
    ck_assert_int_eq(common_quantity_parse(buf, &again, NULL), COMMON_OK);
    ck_assert_msg(again.nano == q.nano, "\"%s\" does not round-trip", row->in);
    ck_assert_int_eq(common_quantity_cmp(&q, &again), 0);
    ck_assert_int_eq(common_quantity_format(&again, buf, sizeof(buf)), len);
    ck_assert_str_eq(buf, row->canonical);
    ck_assert_int_eq(common_quantity_is_zero(&q), strcmp(row->canonical, "0") == 0);
}
END_TEST

/*
 * ---- binary values that print without a suffix read back as decimal ----
 * A whole binary value that is no multiple of 1024 prints as a plain number, like upstream;
 * parsed again it is decimal, so its second printing may differ while the value stays.
 */

struct reprint_row {
    const char *in;
    const char *canonical;
    const char *reprinted;
};

static const struct reprint_row reprint_rows[] = {
    {"900812.5Ki", "922432000", "922432k"},
    {"4000.5Ki", "4096512", "4096512"},
    {"-0.5Ki", "-512", "-512"},
};

START_TEST(test_reprint)
{
    const struct reprint_row *row = &reprint_rows[_i];
    struct common_quantity q, again;
    char buf[64];

    ck_assert_int_eq(common_quantity_parse(row->in, &q, NULL), COMMON_OK);
    ck_assert_int_ge(common_quantity_format(&q, buf, sizeof(buf)), 1);
    ck_assert_str_eq(buf, row->canonical);
    ck_assert_int_eq(common_quantity_parse(buf, &again, NULL), COMMON_OK);
    ck_assert_msg(again.nano == q.nano, "\"%s\" does not round-trip", row->in);
    ck_assert_int_ge(common_quantity_format(&again, buf, sizeof(buf)), 1);
    ck_assert_str_eq(buf, row->reprinted);
}
END_TEST

/* ---- invalid quantities: input and a piece of the message ---- */

struct invalid_row {
    const char *in;
    const char *msg_part;
};

#define RE_MSG "quantities must match the regular expression"
#define SUFFIX_MSG "unable to parse quantity's suffix"
#define OVERFLOW_MSG "overflows"

static const struct invalid_row invalid_rows[] = {
    {"", RE_MSG},
    {"1.2.3", RE_MSG},
    {"1Kb", RE_MSG},
    {" 1", RE_MSG},
    {"1 ", RE_MSG},
    {"1 Gi", RE_MSG},
    {"\t1", RE_MSG},
    {"--1", RE_MSG},
    {"+-1", RE_MSG},
    {"1e", SUFFIX_MSG},
    {"e3", RE_MSG}, /* differs from upstream, which reads it as 0 */
    {".", RE_MSG},  /* differs from upstream, which reads it as 0 */
    {"+", RE_MSG},  /* differs from upstream, which reads it as 0 */
    {"-", RE_MSG},  /* differs from upstream, which reads it as 0 */
    {"Ki", RE_MSG}, /* differs from upstream, which reads it as 0 */
    {"1.5.Gi", RE_MSG},
    {"1ki", SUFFIX_MSG},
    {"1K", SUFFIX_MSG},
    {"1Mb", RE_MSG},
    {"1Ei2", SUFFIX_MSG},
    {"1e1.5", RE_MSG},
    {"1e+", SUFFIX_MSG},
    {"1E-", SUFFIX_MSG},
    {"0x10", RE_MSG},
    {"1_000", RE_MSG},
    {"1,5", RE_MSG},
    {"1e9223372036854775808", SUFFIX_MSG},
    {"1e100", OVERFLOW_MSG},
    {"1e30k", RE_MSG},
    {"99999999999999999999999999999999999999999E", OVERFLOW_MSG},
    {"170141183460469231731687303715884105728n", OVERFLOW_MSG},
    {"-170141183460469231731687303715884105728n", OVERFLOW_MSG},
    {"170141183460469231731687303715.8841057271", OVERFLOW_MSG},
    {"1e9223372036854775807", OVERFLOW_MSG},
    {"147573952589676412928Pi", OVERFLOW_MSG},
};

START_TEST(test_invalid)
{
    const struct invalid_row *row = &invalid_rows[_i];
    struct common_quantity q = {42, COMMON_QTY_BINARY_SI};
    struct common_error err;

    common_error_clear(&err);
    ck_assert_msg(common_quantity_parse(row->in, &q, &err) == COMMON_EINVAL,
                  "\"%s\" should not parse", row->in);
    ck_assert_int_eq(err.code, COMMON_EINVAL);
    ck_assert_msg(strstr(err.msg, row->msg_part) != NULL, "\"%s\": message \"%s\" lacks \"%s\"",
                  row->in, err.msg, row->msg_part);
    ck_assert_msg(strstr(err.msg, row->in) != NULL, "message \"%s\" does not quote the input",
                  err.msg);
    ck_assert_msg(q.nano == 42, "\"%s\": output changed on error", row->in);
}
END_TEST

START_TEST(test_null_and_no_err)
{
    struct common_quantity q;

    ck_assert_int_eq(common_quantity_parse(NULL, &q, NULL), COMMON_EINVAL);
    ck_assert_int_eq(common_quantity_parse("1x", &q, NULL), COMMON_EINVAL);
}
END_TEST

/* ---- comparisons by value ---- */

struct cmp_row {
    const char *a;
    const char *b;
    int want;
};

static const struct cmp_row cmp_rows[] = {
    {"1Gi", "1G", 1},     {"1000m", "1", 0},         {"0.5Gi", "512Mi", 0},
    {"1Ki", "1024", 0},   {"1e3", "1k", 0},          {"1.5Gi", "1536Mi", 0},
    {"999m", "1", -1},    {"-1", "0", -1},           {"1n", "0", 1},
    {"-1n", "-2n", 1},    {"1E", "1Pi", 1},          {"1Ei", "1E", 1},
    {"0.1n", "1n", 0},    {"100m", "0.1", 0},        {"1e-3", "1m", 0},
    {"4Gi", "4096Mi", 0}, {QTY_MAX_TEXT, "1e29", 1}, {"-" QTY_MAX_TEXT, "-1e29", -1},
};

START_TEST(test_cmp)
{
    const struct cmp_row *row = &cmp_rows[_i];
    struct common_quantity a, b;

    ck_assert_int_eq(common_quantity_parse(row->a, &a, NULL), COMMON_OK);
    ck_assert_int_eq(common_quantity_parse(row->b, &b, NULL), COMMON_OK);
    ck_assert_msg(common_quantity_cmp(&a, &b) == row->want, "cmp(%s, %s) = %d, want %d", row->a,
                  row->b, common_quantity_cmp(&a, &b), row->want);
    ck_assert_int_eq(common_quantity_cmp(&b, &a), -row->want);
}
END_TEST

/* ---- arithmetic: x * kx + y * ky, printed; the result keeps x's format (or y's if x*kx is 0) */

struct arith_row {
    const char *x;
    int64_t kx;
    const char *y; /* NULL: no addition */
    int64_t ky;
    const char *want;
};

static const struct arith_row arith_rows[] = {
    {"4Gi", 102, NULL, 0, "408Gi"},
    {"300m", 1, "500m", 4, "2300m"},
    {"1Gi", 1, "0.5Gi", 4, "3Gi"},
    {"500m", 2, "250m", 1, "1250m"},
    {"250m", 1, "500m", 2, "1250m"},
    {"0", 1, "1Gi", 1, "1Gi"},     /* a zero accumulator takes the other format */
    {"1Gi", 0, "3Ki", 1, "3Ki"},   /* so does one that became zero */
    {"1", 1, "1Ki", 1, "1025"},    /* decimal accumulator stays decimal */
    {"1024", 1, "1Ki", 1, "2048"}, /* decimal accumulator stays decimal */
    {"1Ki", 1, "1024", 1, "2Ki"},  /* binary accumulator stays binary */
    {"1Gi", 1, "1Gi", -1, "0"},
    {"1", 1, "3", -1, "-2"},
    {"5Gi", 0, NULL, 0, "0"},
    {"1e3", 3, NULL, 0, "3e3"},
    {"100m", 10, NULL, 0, "1"},
    {"1.5", -2, NULL, 0, "-3"},
    {"-2Mi", -512, NULL, 0, "1Gi"},
    {"1n", INT64_MAX, NULL, 0, "9223372036854775807n"},
    {"1n", INT64_MIN, NULL, 0, "-9223372036854775808n"},
    {"512Mi", 2, "1Gi", 1, "2Gi"},
};

START_TEST(test_arith)
{
    const struct arith_row *row = &arith_rows[_i];
    struct common_quantity acc, y;
    char buf[128];

    ck_assert_int_eq(common_quantity_parse(row->x, &acc, NULL), COMMON_OK);
    ck_assert_int_eq(common_quantity_mul(&acc, row->kx, NULL), COMMON_OK);
    if (row->y) {
        ck_assert_int_eq(common_quantity_parse(row->y, &y, NULL), COMMON_OK);
        ck_assert_int_eq(common_quantity_mul(&y, row->ky, NULL), COMMON_OK);
        ck_assert_int_eq(common_quantity_add(&acc, &y, NULL), COMMON_OK);
    }
    ck_assert_int_ge(common_quantity_format(&acc, buf, sizeof(buf)), 1);
    ck_assert_msg(strcmp(buf, row->want) == 0, "%s*%lld + %s*%lld = %s, want %s", row->x,
                  (long long)row->kx, row->y ? row->y : "0", (long long)row->ky, buf, row->want);
}
END_TEST

/* ---- arithmetic overflow leaves the accumulator unchanged ---- */

struct overflow_row {
    const char *x;
    int64_t k;     /* multiply x by k ... */
    const char *y; /* ... or, when y is set, add y to x */
};

static const struct overflow_row overflow_rows[] = {
    {QTY_MAX_TEXT, 0, "1n"},   {"-" QTY_MAX_TEXT, 0, "-1n"}, {"1e29", 0, "1e29"},
    {QTY_MAX_TEXT, 2, NULL},   {QTY_MAX_TEXT, -2, NULL},     {"1e20", INT64_MAX, NULL},
    {"1e20", INT64_MIN, NULL}, {"-1e20", INT64_MIN, NULL},
};

START_TEST(test_overflow)
{
    const struct overflow_row *row = &overflow_rows[_i];
    struct common_quantity acc, before, y;
    struct common_error err;
    enum common_rc rc;

    common_error_clear(&err);
    ck_assert_int_eq(common_quantity_parse(row->x, &acc, NULL), COMMON_OK);
    before = acc;
    if (row->y) {
        ck_assert_int_eq(common_quantity_parse(row->y, &y, NULL), COMMON_OK);
        rc = common_quantity_add(&acc, &y, &err);
    } else {
        rc = common_quantity_mul(&acc, row->k, &err);
    }
    ck_assert_int_eq(rc, COMMON_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "overflows"));
    ck_assert_msg(acc.nano == before.nano && acc.format == before.format,
                  "accumulator changed on overflow");
}
END_TEST

/* ---- rounding to integers and to milli-units (away from zero) ---- */

struct round_row {
    const char *in;
    int ok;
    int64_t want;
};

static const struct round_row ceil_rows[] = {
    {"2.5", 1, 3},
    {"2500m", 1, 3},
    {"0.7", 1, 1},
    {"3.7", 1, 4},
    {"3", 1, 3},
    {"1n", 1, 1},
    {"0", 1, 0},
    {"1Ki", 1, 1024},
    {"-2.5", 1, -3}, /* away from zero */
    {"9223372036854775807", 1, INT64_MAX},
    {"9223372036854775806.5", 1, INT64_MAX},
    {"-9223372036854775808", 1, INT64_MIN},
    {"9223372036854775807.000000001", 0, 0},
    {"9223372036854775808", 0, 0},
    {"-9223372036854775809", 0, 0},
    {"8Ei", 0, 0},
};

START_TEST(test_value_ceil)
{
    const struct round_row *row = &ceil_rows[_i];
    struct common_quantity q;
    struct common_error err;
    int64_t v = 0;

    ck_assert_int_eq(common_quantity_parse(row->in, &q, NULL), COMMON_OK);
    if (row->ok) {
        ck_assert_int_eq(common_quantity_value_ceil(&q, &v, NULL), COMMON_OK);
        ck_assert_msg(v == row->want, "%s: value %lld, want %lld", row->in, (long long)v,
                      (long long)row->want);
    } else {
        ck_assert_int_eq(common_quantity_value_ceil(&q, &v, &err), COMMON_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "does not fit in int64"));
    }
}
END_TEST

static const struct round_row milli_rows[] = {
    {"1", 1, 1000},
    {"1.0001", 1, 1001},
    {"0.1m", 1, 1},
    {"1n", 1, 1},
    {"-1n", 1, -1},
    {"9223372036854775807m", 1, INT64_MAX},
    {"9223372036854775.807", 1, INT64_MAX},
    {"-9223372036854775.808", 1, INT64_MIN},
    {"9223372036854775.808", 0, 0},
    {"9223372036854775.807001", 0, 0},
    {"-9223372036854775.809", 0, 0},
    {"9223372036854776", 0, 0},
    {"8Ei", 0, 0},
    {"1E", 0, 0},
};

START_TEST(test_milli)
{
    const struct round_row *row = &milli_rows[_i];
    struct common_quantity q;
    struct common_error err;
    int64_t v = 0;

    ck_assert_int_eq(common_quantity_parse(row->in, &q, NULL), COMMON_OK);
    if (row->ok) {
        ck_assert_int_eq(common_quantity_milli(&q, &v, NULL), COMMON_OK);
        ck_assert_msg(v == row->want, "%s: milli %lld, want %lld", row->in, (long long)v,
                      (long long)row->want);
    } else {
        ck_assert_int_eq(common_quantity_milli(&q, &v, &err), COMMON_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "does not fit in int64"));
    }
}
END_TEST

/* ---- formatting into small buffers ---- */

START_TEST(test_format_buffer)
{
    struct common_quantity q;
    char buf[64];

    /* the longest text a quantity can have fits in 64 bytes */
    ck_assert_int_eq(common_quantity_parse("-" QTY_MAX_TEXT, &q, NULL), COMMON_OK);
    ck_assert_int_eq(common_quantity_format(&q, buf, sizeof(buf)), (int)strlen(QTY_MAX_TEXT) + 1);
    ck_assert_int_eq(common_quantity_parse("-1e-200", &q, NULL), COMMON_OK);
    ck_assert_int_eq(common_quantity_format(&q, buf, sizeof(buf)), 5);
    ck_assert_str_eq(buf, "-1e-9");

    /* exactly enough room, then one byte short */
    ck_assert_int_eq(common_quantity_parse("1536Mi", &q, NULL), COMMON_OK);
    ck_assert_int_eq(common_quantity_format(&q, buf, 7), 6);
    ck_assert_str_eq(buf, "1536Mi");
    ck_assert_int_eq(common_quantity_format(&q, buf, 6), -1);
    ck_assert_int_eq(common_quantity_parse("0", &q, NULL), COMMON_OK);
    ck_assert_int_eq(common_quantity_format(&q, buf, 1), -1);
    ck_assert_int_eq(common_quantity_format(&q, buf, 2), 1);
    ck_assert_str_eq(buf, "0");
}
END_TEST

#define ROWS(t) (int)(sizeof(t) / sizeof((t)[0]))

static Suite *quantity_suite(void)
{
    Suite *s = suite_create("quantity");
    TCase *tc = tcase_create("core");

    tcase_add_loop_test(tc, test_valid, 0, ROWS(valid_rows));
    tcase_add_loop_test(tc, test_reprint, 0, ROWS(reprint_rows));
    tcase_add_loop_test(tc, test_invalid, 0, ROWS(invalid_rows));
    tcase_add_test(tc, test_null_and_no_err);
    tcase_add_loop_test(tc, test_cmp, 0, ROWS(cmp_rows));
    tcase_add_loop_test(tc, test_arith, 0, ROWS(arith_rows));
    tcase_add_loop_test(tc, test_overflow, 0, ROWS(overflow_rows));
    tcase_add_loop_test(tc, test_value_ceil, 0, ROWS(ceil_rows));
    tcase_add_loop_test(tc, test_milli, 0, ROWS(milli_rows));
    tcase_add_test(tc, test_format_buffer);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return testutil_run_suite(quantity_suite());
}
