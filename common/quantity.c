/*
 * common/quantity.c - Kubernetes resource.Quantity held as an exact count of nano-units.
 *
 * Parsing splits the text into sign, significant digits, a power of ten and a power of two
 * (the binary suffix), then computes ceil(|digits| * 10^k * 2^b) in nano-units with 128-bit
 * unsigned arithmetic, checking every step against the largest allowed magnitude (2^127 - 1,
 * so negation never overflows). Digits below one nano-unit are folded in by a column-wise
 * multiplication that only keeps a carry and a "something was left" flag, so arbitrarily long
 * fractions round up exactly without big-number code.
 *
 * Printing follows CanonicalizeBytes: binary values of at least 1024 in magnitude that are whole
 * numbers print as mantissa * 1024^n (n at most 6, "Ei"), everything else prints as a
 * mantissa * 10^e with e a multiple of 3, using a decimal SI suffix when one exists and "e<e>"
 * otherwise (and always for the exponent format).
 */
#include "common/quantity.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define QTY_MAX ((((unsigned __int128)1) << 127) - 1)
#define QTY_NANO_PER_UNIT 1000000000
#define QTY_NANO_PER_MILLI 1000000
#define QTY_MAX_DIGITS 39 /* decimal digits of QTY_MAX */
#define QTY_MAX_BIN_EXP 6 /* largest power of 1024 with a suffix: Ei */

/* The scanner's regular expression, quoted by upstream's "format wrong" error. */
#define QTY_RE "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

/* One suffix: its text, the powers of 10 and 2 it multiplies by, and the format it selects. */
struct qty_suffix {
    const char *text;
    int pow10;
    int pow2;
    enum common_quantity_format format;
};

static const struct qty_suffix qty_suffixes[] = {
    {"", 0, 0, COMMON_QTY_DECIMAL_SI},   {"n", -9, 0, COMMON_QTY_DECIMAL_SI},
    {"u", -6, 0, COMMON_QTY_DECIMAL_SI}, {"m", -3, 0, COMMON_QTY_DECIMAL_SI},
    {"k", 3, 0, COMMON_QTY_DECIMAL_SI},  {"M", 6, 0, COMMON_QTY_DECIMAL_SI},
    {"G", 9, 0, COMMON_QTY_DECIMAL_SI},  {"T", 12, 0, COMMON_QTY_DECIMAL_SI},
    {"P", 15, 0, COMMON_QTY_DECIMAL_SI}, {"E", 18, 0, COMMON_QTY_DECIMAL_SI},
    {"Ki", 0, 10, COMMON_QTY_BINARY_SI}, {"Mi", 0, 20, COMMON_QTY_BINARY_SI},
    {"Gi", 0, 30, COMMON_QTY_BINARY_SI}, {"Ti", 0, 40, COMMON_QTY_BINARY_SI},
    {"Pi", 0, 50, COMMON_QTY_BINARY_SI}, {"Ei", 0, 60, COMMON_QTY_BINARY_SI},
};

/* Decimal SI suffixes for printing, indexed by (exponent + 9) / 3. */
static const char *const qty_decimal_print[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
static const char *const qty_binary_print[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* *acc = *acc * m, failing (returning 0) when the product passes QTY_MAX. */
static int mul_checked(unsigned __int128 *acc, unsigned __int128 m)
{
    if (m != 0 && *acc > QTY_MAX / m)
        return 0;
    *acc *= m;
    return 1;
}

/* *acc = *acc + a, failing (returning 0) when the sum passes QTY_MAX. */
static int add_checked(unsigned __int128 *acc, unsigned __int128 a)
{
    if (a > QTY_MAX - *acc)
        return 0;
    *acc += a;
    return 1;
}

static unsigned __int128 magnitude(__int128 v)
{
    return v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
}

/*
 * suffix_shape_ok - whether suf fits upstream's scanner, [eEinumkKMGTP]*[-+]?[0-9]*, so an
 * unknown suffix can be reported as "unable to parse" rather than "must match".
 */
static int suffix_shape_ok(const char *suf)
{
    while (*suf && strchr("eEinumkKMGTP", *suf))
        suf++;
    if (*suf == '-' || *suf == '+')
        suf++;
    while (is_digit(*suf))
        suf++;
    return *suf == '\0';
}

/*
 * parse_exponent - the "[eE][+-]?[0-9]+" suffix into *exp. Returns 0 when suf is not of that
 * shape or the number does not fit int64 (strconv.ParseInt fails there too).
 */
static int parse_exponent(const char *suf, int64_t *exp)
{
    const char *p = suf + 1;
    uint64_t mag = 0;
    uint64_t limit = (uint64_t)INT64_MAX;
    int neg = 0;

    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    if (neg)
        limit += 1;
    if (!is_digit(*p))
        return 0;
    for (; is_digit(*p); p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (mag > (limit - d) / 10)
            return 0;
        mag = mag * 10 + d;
    }
    if (*p != '\0')
        return 0;
    if (neg)
        *exp = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    else
        *exp = (int64_t)mag;
    return 1;
}

/* The digits of a number as written: integer part and fraction part, without the '.'. */
struct qty_digits {
    const char *int_part;
    size_t int_len;
    const char *frac_part;
    size_t frac_len;
};

/* digit_at - the i-th digit of int_part followed by frac_part. */
static unsigned digit_at(const struct qty_digits *d, size_t i)
{
    return (unsigned)(i < d->int_len ? d->int_part[i] - '0' : d->frac_part[i - d->int_len] - '0');
}

/*
 * scaled_magnitude - ceil(D * 10^k * 2^pow2), where D is the integer written by the n digits of
 * d starting at index first (its first and last digits are non-zero). Returns 0 on overflow past
 * QTY_MAX, 1 with the result in *out otherwise.
 */
static int scaled_magnitude(const struct qty_digits *d, size_t first, size_t n, __int128 k,
                            int pow2, unsigned __int128 *out)
{
    unsigned __int128 mult = (unsigned __int128)1 << pow2;
    unsigned __int128 acc = 0;
    size_t head, i;

    if (k >= 0) {
        if ((__int128)n + k > QTY_MAX_DIGITS)
            return 0; /* at least 10^39 > 2^127 */
        head = n;
    } else {
        head = (__int128)n > -k ? (size_t)((__int128)n + k) : 0;
        if (head > QTY_MAX_DIGITS)
            return 0; /* at least 10^39 */
    }

    /* Digits at or above the nano point: plain accumulation, then the powers. */
    for (i = 0; i < head; i++)
        if (!mul_checked(&acc, 10) || !add_checked(&acc, digit_at(d, first + i)))
            return 0;
    for (__int128 j = 0; j < k; j++)
        if (!mul_checked(&acc, 10))
            return 0;
    if (!mul_checked(&acc, mult))
        return 0;

    if (k < 0) {
        /*
         * The digits below the nano point form T / 10^-k, where T has -k columns: the n - head
         * real digits at the bottom and zeros above. Multiply T by mult column by column from
         * the right: the final carry is floor(T * mult / 10^-k), and any non-zero column left
         * behind is a remainder, which rounds the result up by one nano-unit.
         */
        unsigned __int128 carry = 0;
        __int128 zeros = -k - (__int128)(n - head);
        int rest = 0;

        for (i = n; i > head; i--) {
            unsigned __int128 t = (unsigned __int128)digit_at(d, first + i - 1) * mult + carry;
            rest |= t % 10 != 0;
            carry = t / 10;
        }
        for (; zeros > 0 && carry != 0; zeros--) {
            rest |= carry % 10 != 0;
            carry /= 10;
        }
        if (!add_checked(&acc, carry) || !add_checked(&acc, rest ? 1 : 0))
            return 0;
    }
    *out = acc;
    return 1;
}

enum common_rc common_quantity_parse(const char *s, struct common_quantity *out,
                                     struct common_error *err)
{
    const struct qty_suffix *suf = NULL;
    struct qty_digits d = {NULL, 0, "", 0};
    const char *p;
    size_t total, first, last, i;
    int neg = 0, pow2 = 0;
    int64_t exp10 = 0;
    unsigned __int128 mag = 0;
    enum common_quantity_format format;

    if (!s || !*s)
        return common_error_set(err, COMMON_EINVAL,
                                "quantity \"\": quantities must match the regular expression '%s'",
                                QTY_RE);
    p = s;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    d.int_part = p;
    while (is_digit(*p))
        p++;
    d.int_len = (size_t)(p - d.int_part);
    if (*p == '.') {
        d.frac_part = ++p;
        while (is_digit(*p))
            p++;
        d.frac_len = (size_t)(p - d.frac_part);
    }
    total = d.int_len + d.frac_len;
    if (total == 0)
        return common_error_set(err, COMMON_EINVAL,
                                "quantity \"%s\": quantities must match the regular expression "
                                "'%s' with at least one digit",
                                s, QTY_RE);

    /* The suffix is everything after the number and must be one whole token. */
    for (i = 0; i < sizeof(qty_suffixes) / sizeof(qty_suffixes[0]); i++) {
        if (strcmp(p, qty_suffixes[i].text) == 0) {
            suf = &qty_suffixes[i];
            break;
        }
    }
    if (suf) {
        exp10 = suf->pow10;
        pow2 = suf->pow2;
        format = suf->format;
    } else if ((*p == 'e' || *p == 'E') && parse_exponent(p, &exp10)) {
        format = COMMON_QTY_DECIMAL_EXP;
    } else if (suffix_shape_ok(p)) {
        return common_error_set(err, COMMON_EINVAL,
                                "quantity \"%s\": unable to parse quantity's suffix \"%s\"", s, p);
    } else {
        return common_error_set(err, COMMON_EINVAL,
                                "quantity \"%s\": quantities must match the regular expression "
                                "'%s'",
                                s, QTY_RE);
    }

    /* Significant digits: from the first non-zero one to the last, across the '.'. */
    for (first = 0; first < total && digit_at(&d, first) == 0; first++)
        ;
    if (first < total) {
        __int128 k;
        for (last = total - 1; digit_at(&d, last) == 0; last--)
            ;
        /* value = D * 10^(exp10 - frac_len + trailing zeros); in nano-units add 9 */
        k = (__int128)exp10 - (__int128)d.frac_len + (__int128)(total - 1 - last) + 9;
        if (!scaled_magnitude(&d, first, last - first + 1, k, pow2, &mag))
            return common_error_set(err, COMMON_EINVAL,
                                    "quantity \"%s\": overflows (more than 2^127-1 nano-units)", s);
    }

    out->nano = neg ? -(__int128)mag : (__int128)mag;
    /* A binary value strictly between 0 and 1 switches to decimal, as ParseQuantity does. */
    if (format == COMMON_QTY_BINARY_SI && out->nano > 0 && out->nano < QTY_NANO_PER_UNIT)
        format = COMMON_QTY_DECIMAL_SI;
    out->format = format;
    return COMMON_OK;
}

int common_quantity_cmp(const struct common_quantity *a, const struct common_quantity *b)
{
    return a->nano < b->nano ? -1 : a->nano > b->nano ? 1 : 0;
}

int common_quantity_is_zero(const struct common_quantity *q)
{
    return q->nano == 0;
}

enum common_rc common_quantity_add(struct common_quantity *acc, const struct common_quantity *b,
                                   struct common_error *err)
{
    __int128 max = (__int128)QTY_MAX;

    if ((b->nano > 0 && acc->nano > max - b->nano) || (b->nano < 0 && acc->nano < -max - b->nano))
        return common_error_set(err, COMMON_EINVAL, "quantity addition overflows");
    if (acc->nano == 0)
        acc->format = b->format;
    acc->nano += b->nano;
    return COMMON_OK;
}

enum common_rc common_quantity_mul(struct common_quantity *q, int64_t k, struct common_error *err)
{
    unsigned __int128 mag = magnitude(q->nano);
    unsigned __int128 km =
        k < 0 ? (unsigned __int128)0 - (unsigned __int128)(__int128)k : (unsigned __int128)k;
    int neg = (q->nano < 0) != (k < 0);

    if (!mul_checked(&mag, km))
        return common_error_set(err, COMMON_EINVAL, "quantity multiplication by %lld overflows",
                                (long long)k);
    q->nano = neg ? -(__int128)mag : (__int128)mag;
    return COMMON_OK;
}

/* ceil(|nano| / unit) with the sign of nano (rounding away from zero), into an int64. */
static enum common_rc scaled_int64(const struct common_quantity *q, int64_t unit, int64_t *out,
                                   const char *what, struct common_error *err)
{
    unsigned __int128 mag = magnitude(q->nano);
    unsigned __int128 v = mag / (unsigned __int128)unit + (mag % (unsigned __int128)unit != 0);
    char buf[64];

    if (q->nano < 0 ? v > (unsigned __int128)INT64_MAX + 1 : v > (unsigned __int128)INT64_MAX) {
        if (common_quantity_format(q, buf, sizeof(buf)) < 0)
            buf[0] = '\0';
        return common_error_set(err, COMMON_EINVAL, "quantity %s: %s value does not fit in int64",
                                buf, what);
    }
    if (q->nano < 0)
        *out = v == (unsigned __int128)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    else
        *out = (int64_t)v;
    return COMMON_OK;
}

enum common_rc common_quantity_milli(const struct common_quantity *q, int64_t *out,
                                     struct common_error *err)
{
    return scaled_int64(q, QTY_NANO_PER_MILLI, out, "milli", err);
}

enum common_rc common_quantity_value_ceil(const struct common_quantity *q, int64_t *out,
                                          struct common_error *err)
{
    return scaled_int64(q, QTY_NANO_PER_UNIT, out, "integer", err);
}

/* Decimal digits of v, most significant first, into buf (at least 40 bytes); returns length. */
static size_t u128_digits(unsigned __int128 v, char *buf)
{
    char tmp[40];
    size_t n = 0, i;

    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v != 0);
    for (i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

int common_quantity_format(const struct common_quantity *q, char *buf, unsigned long size)
{
    char text[96];
    size_t len = 0;
    unsigned __int128 mag = magnitude(q->nano);
    const char *suffix = "";
    char exp_text[16];
    int exp;

    exp_text[0] = '\0';
    if (q->nano == 0) {
        text[len++] = '0';
        goto out;
    }
    if (q->nano < 0)
        text[len++] = '-';

    if (q->format == COMMON_QTY_BINARY_SI && mag >= (unsigned __int128)1024 * QTY_NANO_PER_UNIT &&
        mag % QTY_NANO_PER_UNIT == 0) {
        int times = 0;
        mag /= QTY_NANO_PER_UNIT;
        while (times < QTY_MAX_BIN_EXP && mag % 1024 == 0) {
            mag /= 1024;
            times++;
        }
        len += u128_digits(mag, text + len);
        suffix = qty_binary_print[times];
        goto out;
    }

    /* mantissa * 10^exp with every factor of ten moved out, then exp lowered to a multiple of 3 */
    exp = -9;
    while (mag % 10 == 0) {
        mag /= 10;
        exp++;
    }
    while (exp % 3 != 0) {
        mag *= 10;
        exp--;
    }
    len += u128_digits(mag, text + len);
    if (q->format != COMMON_QTY_DECIMAL_EXP && exp <= 18)
        suffix = qty_decimal_print[(exp + 9) / 3];
    else if (exp != 0)
        snprintf(exp_text, sizeof(exp_text), "e%d", exp);

out : {
    size_t slen = strlen(suffix), elen = strlen(exp_text);
    if (len + slen + elen + 1 > size)
        return -1;
    memcpy(buf, text, len);
    memcpy(buf + len, suffix, slen);
    memcpy(buf + len + slen, exp_text, elen);
    buf[len + slen + elen] = '\0';
    return (int)(len + slen + elen);
}
}
