/*
 * common/yaml.c - YAML documents to jansson values and back (contract in common/yaml.h).
 *
 * Loading runs libyaml's event parser over a read handler (struct src) that hands libyaml the
 * input a chunk at a time. The handler is also the gatekeeper: it checks that the bytes are
 * UTF-8 text (no NUL, no control characters, as libyaml would also demand) so the error can
 * name the line and column, it enforces the whole-input cap, and it refuses to read far past
 * the per-document limit, so a 50 MB scalar is refused after about 3 MiB, never held in full.
 * libyaml reports positions as character indexes; the handler keeps a cursor from character
 * index to byte offset (and, for files, a window of the bytes it has not yet mapped) so the
 * document limit counts source bytes exactly.
 *
 * Events drive a stack of frames, one per open mapping or sequence. Scalars are resolved as
 * go-yaml v2 resolves plain scalars (what kubectl's sigs.k8s.io/yaml uses); mapping keys
 * become strings as sigs.k8s.io/yaml makes them. Anchors are kept per document in a small
 * hash table; an alias is a deep copy of the anchored node, checked against the node and depth
 * limits before anything is copied, so alias bombs fail at once. Merge keys ("<<") are applied
 * with YAML's rules (explicit keys win, earlier merged mappings win). Every created json_t
 * (and every object key) gets its position in a pointer-keyed hash map.
 *
 * Emitting feeds libyaml's emitter with events built from the jansson value, walking it with
 * an explicit stack, and picks each string's style with the same resolver the loader uses.
 *
 * Every allocation of ours goes through common_malloc (jansson too, once common_alloc_init
 * has run); libyaml allocates with malloc and is not part of failure injection.
 * Numbers are parsed and printed with strtod/snprintf, which assume the "C" numeric locale.
 */
#include "common/yaml.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "common/alloc.h"

#define DEFAULT_DOC_BYTES ((size_t)3 * 1024 * 1024)
#define DEFAULT_DEPTH 100
#define DEFAULT_NODES 1000000
#define HARD_MAX_DEPTH 10000 /* jansson frees and compares recursively */
#define FILE_CAP_DOCS 64     /* whole input = 64 documents' worth */
/* How far libyaml may read ahead of the last event: raw buffer (16 KiB), decoded buffer
 * (48 KiB) and simple-key look-ahead, with room to spare. */
#define READ_SLACK ((size_t)256 * 1024)
#define EMIT_MAX_DEPTH 100000 /* deeper than anything we load: a cycle */
#define TAG_PREFIX "tag:yaml.org,2002:"
#define MSG_KEY_MAX 64 /* bytes of a key or value quoted in a message */

/* ------------------------------------------------------------------------------------------ */
/* Position map: pointer -> line/col, open addressing, linear probing.                       */

struct pos_slot {
    const void *key;
    uint32_t line;
    uint32_t col;
};

struct common_yaml_pos_map {
    struct pos_slot *slots;
    size_t cap; /* 0 or a power of two */
    size_t n;
};

static size_t ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;

    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

/* The slot holding key, or the empty slot where it would go. cap must be nonzero. */
static struct pos_slot *pos_slot_for(const struct common_yaml_pos_map *m, const void *key)
{
    size_t mask = m->cap - 1;
    size_t i;

    for (i = ptr_hash(key) & mask;; i = (i + 1) & mask)
        if (m->slots[i].key == key || !m->slots[i].key)
            return &m->slots[i];
}

static int pos_grow(struct common_yaml_pos_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    struct common_yaml_pos_map nm;
    size_t i;

    nm.slots = common_calloc(ncap, sizeof(*nm.slots));
    if (!nm.slots)
        return -1;
    nm.cap = ncap;
    nm.n = m->n;
    for (i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            *pos_slot_for(&nm, m->slots[i].key) = m->slots[i];
    common_free(m->slots);
    *m = nm;
    return 0;
}

static uint32_t clamp32(size_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Insert or update key's 1-based position. Returns 0, or -1 when out of memory. */
static int pos_put(struct common_yaml_pos_map *m, const void *key, size_t line, size_t col)
{
    struct pos_slot *s;

    if ((m->n + 1) * 2 > m->cap && pos_grow(m))
        return -1;
    s = pos_slot_for(m, key);
    if (!s->key) {
        s->key = key;
        m->n++;
    }
    s->line = clamp32(line);
    s->col = clamp32(col);
    return 0;
}

static const struct pos_slot *pos_get(const struct common_yaml_pos_map *m, const void *key)
{
    const struct pos_slot *s;

    if (!m || !m->cap || !key)
        return NULL;
    s = pos_slot_for(m, key);
    return s->key ? s : NULL;
}

static void pos_free(struct common_yaml_pos_map *m)
{
    if (!m)
        return;
    common_free(m->slots);
    common_free(m);
}

/* The stable pointer jansson keeps for key inside object (keys with NUL have none). */
static const char *object_key_ptr(json_t *object, const char *key, size_t len)
{
    void *it;

    if (strlen(key) != len)
        return NULL;
    it = json_object_iter_at(object, key);
    return it ? json_object_iter_key(it) : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Anchors of the current document: name -> latest definition.                               */

struct anchor_def {
    char *name;
    json_t *node;  /* borrowed from the document; NULL while the node is being built */
    size_t nodes;  /* nodes in its subtree */
    size_t height; /* 0 for a scalar, 1 + children's for a container */
};

struct anchors {
    struct anchor_def *defs;
    size_t n, cap;
    size_t *slots; /* 0 = empty, else defs index + 1 */
    size_t slot_cap, used;
};

static size_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

static size_t *anchor_slot(const struct anchors *a, const char *name)
{
    size_t mask = a->slot_cap - 1;
    size_t i;

    for (i = str_hash(name) & mask;; i = (i + 1) & mask)
        if (!a->slots[i] || strcmp(a->defs[a->slots[i] - 1].name, name) == 0)
            return &a->slots[i];
}

static struct anchor_def *anchor_get(const struct anchors *a, const char *name)
{
    size_t *s;

    if (!a->slot_cap)
        return NULL;
    s = anchor_slot(a, name);
    return *s ? &a->defs[*s - 1] : NULL;
}

static int anchor_grow_slots(struct anchors *a)
{
    size_t ncap = a->slot_cap ? a->slot_cap * 2 : 64;
    size_t *old = a->slots, old_cap = a->slot_cap, i;

    a->slots = common_calloc(ncap, sizeof(*a->slots));
    if (!a->slots) {
        a->slots = old;
        return -1;
    }
    a->slot_cap = ncap;
    for (i = 0; i < old_cap; i++)
        if (old[i])
            *anchor_slot(a, a->defs[old[i] - 1].name) = old[i];
    common_free(old);
    return 0;
}

/* Start a definition of name (it shadows earlier ones). *idx = its index. 0 or -1 (memory). */
static int anchor_define(struct anchors *a, const char *name, size_t *idx)
{
    size_t *slot;
    char *copy;

    if (a->n == a->cap) {
        size_t ncap = a->cap ? a->cap * 2 : 16;
        struct anchor_def *nd = common_realloc(a->defs, ncap * sizeof(*nd));
        if (!nd)
            return -1;
        a->defs = nd;
        a->cap = ncap;
    }
    if ((a->used + 1) * 2 > a->slot_cap && anchor_grow_slots(a))
        return -1;
    copy = common_strdup(name);
    if (!copy)
        return -1;
    a->defs[a->n].name = copy;
    a->defs[a->n].node = NULL;
    a->defs[a->n].nodes = 0;
    a->defs[a->n].height = 0;
    slot = anchor_slot(a, name);
    if (!*slot)
        a->used++;
    *slot = a->n + 1;
    *idx = a->n++;
    return 0;
}

static void anchors_clear(struct anchors *a)
{
    size_t i;

    for (i = 0; i < a->n; i++)
        common_free(a->defs[i].name);
    a->n = 0;
    a->used = 0;
    if (a->slots)
        memset(a->slots, 0, a->slot_cap * sizeof(*a->slots));
}

static void anchors_free(struct anchors *a)
{
    anchors_clear(a);
    common_free(a->defs);
    common_free(a->slots);
    memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------------------------------------ */
/* Scalar resolution, as go-yaml v2's resolve() does it for plain scalars.                   */

enum rkind { R_NULL, R_BOOL, R_INT, R_REAL, R_STR, R_INF, R_NAN };

struct resolved {
    enum rkind kind;
    int b;
    json_int_t i;
    double d;
};

enum { RES_OK = 0, RES_RANGE = 1, RES_NOMEM = 2 };

struct word {
    const char *s;
    enum rkind kind;
    int sign; /* bool value, or the sign of an infinity */
};

static const struct word resolve_words[] = {
    {"y", R_BOOL, 1},     {"Y", R_BOOL, 1},     {"yes", R_BOOL, 1},   {"Yes", R_BOOL, 1},
    {"YES", R_BOOL, 1},   {"true", R_BOOL, 1},  {"True", R_BOOL, 1},  {"TRUE", R_BOOL, 1},
    {"on", R_BOOL, 1},    {"On", R_BOOL, 1},    {"ON", R_BOOL, 1},    {"n", R_BOOL, 0},
    {"N", R_BOOL, 0},     {"no", R_BOOL, 0},    {"No", R_BOOL, 0},    {"NO", R_BOOL, 0},
    {"false", R_BOOL, 0}, {"False", R_BOOL, 0}, {"FALSE", R_BOOL, 0}, {"off", R_BOOL, 0},
    {"Off", R_BOOL, 0},   {"OFF", R_BOOL, 0},   {"~", R_NULL, 0},     {"null", R_NULL, 0},
    {"Null", R_NULL, 0},  {"NULL", R_NULL, 0},  {".nan", R_NAN, 0},   {".NaN", R_NAN, 0},
    {".NAN", R_NAN, 0},   {".inf", R_INF, 1},   {".Inf", R_INF, 1},   {".INF", R_INF, 1},
    {"+.inf", R_INF, 1},  {"+.Inf", R_INF, 1},  {"+.INF", R_INF, 1},  {"-.inf", R_INF, -1},
    {"-.Inf", R_INF, -1}, {"-.INF", R_INF, -1},
};

/* go-yaml's first-character hint: which forms a scalar may take. */
static char resolve_hint(unsigned char c)
{
    if (c == '+' || c == '-')
        return 'S';
    if (c >= '0' && c <= '9')
        return 'D';
    if (c && strchr("yYnNtTfFoO~", c))
        return 'M';
    if (c == '.')
        return '.';
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Go's strconv.ParseInt(s, 0, 64) on s without underscores: 0 ok, -1 syntax, RES_RANGE. */
static int parse_go_int(const char *s, size_t n, json_int_t *out)
{
    size_t i = 0;
    unsigned base = 10;
    uint64_t v = 0;
    int neg = 0, range = 0;

    if (n && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return -1;
    if (s[i] == '0') {
        char p = (char)(s[i + 1 < n ? i + 1 : i] | 0x20);
        if (n - i >= 3 && p == 'b') {
            base = 2;
            i += 2;
        } else if (n - i >= 3 && p == 'o') {
            base = 8;
            i += 2;
        } else if (n - i >= 3 && p == 'x') {
            base = 16;
            i += 2;
        } else {
            base = 8;
            i += 1;
        }
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
            d = (unsigned)((c | 0x20) - 'a') + 10;
        else
            return -1;
        if (d >= base)
            return -1;
        if (range || v > (UINT64_MAX - d) / base)
            range = 1;
        else
            v = v * base + d;
    }
    if (range)
        return RES_RANGE;
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return RES_RANGE;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(json_int_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return RES_RANGE;
        *out = (json_int_t)v;
    }
    return 0;
}

/* go-yaml's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static int yaml_style_float(const char *s, size_t n)
{
    size_t i = 0, d;

    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    if (i < n && s[i] == '.') {
        i++;
        for (d = i; i < n && is_digit(s[i]); i++)
            ;
        if (i == d)
            return 0;
    } else {
        for (d = i; i < n && is_digit(s[i]); i++)
            ;
        if (i == d)
            return 0;
        if (i < n && s[i] == '.')
            for (i++; i < n && is_digit(s[i]); i++)
                ;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (d = i; i < n && is_digit(s[i]); i++)
            ;
        if (i == d)
            return 0;
    }
    return i == n;
}

/* Go's underscoreOK for a decimal number: every '_' sits between two digits. */
static int underscores_ok(const char *s, size_t n)
{
    char saw = '^';
    size_t i = 0;

    if (n && (s[0] == '+' || s[0] == '-'))
        i = 1;
    for (; i < n; i++) {
        if (is_digit(s[i])) {
            saw = '0';
        } else if (s[i] == '_') {
            if (saw != '0')
                return 0;
            saw = '_';
        } else {
            if (saw == '_')
                return 0;
            saw = '!';
        }
    }
    return saw != '_';
}

/* s[0..n) without underscores into a NUL-terminated buffer: small, or a fresh allocation
 * left in *heap. NULL when out of memory. */
static char *strip_underscores(const char *s, size_t n, char *small, size_t small_size, char **heap,
                               size_t *out_len)
{
    char *d = small;
    size_t i, m = 0;

    *heap = NULL;
    if (n + 1 > small_size) {
        d = *heap = common_malloc(n + 1);
        if (!d)
            return NULL;
    }
    for (i = 0; i < n; i++)
        if (s[i] != '_')
            d[m++] = s[i];
    d[m] = '\0';
    *out_len = m;
    return d;
}

/*
 * resolve_plain - what the plain scalar s[0..n) means (go-yaml v2 rules). Returns RES_OK,
 * RES_RANGE (an integer outside int64) or RES_NOMEM (a long number needed a buffer).
 */
static int resolve_plain(const char *s, size_t n, struct resolved *r)
{
    char small[128], *heap, *p;
    size_t i, m;
    char hint;
    int rc = RES_OK, irc;

    memset(r, 0, sizeof(*r));
    r->kind = R_STR;
    if (n == 0) {
        r->kind = R_NULL;
        return RES_OK;
    }
    hint = resolve_hint((unsigned char)s[0]);
    if (!hint)
        return RES_OK;
    for (i = 0; i < sizeof(resolve_words) / sizeof(resolve_words[0]); i++) {
        const struct word *w = &resolve_words[i];
        if (strlen(w->s) == n && memcmp(w->s, s, n) == 0) {
            r->kind = w->kind;
            r->b = w->sign > 0;
            r->d = w->kind == R_INF ? (w->sign > 0 ? HUGE_VAL : -HUGE_VAL) : 0;
            return RES_OK;
        }
    }
    if (hint == 'M')
        return RES_OK;
    if (hint == '.' && !underscores_ok(s, n))
        return RES_OK;
    p = strip_underscores(s, n, small, sizeof(small), &heap, &m);
    if (!p)
        return RES_NOMEM;
    if (hint == '.') {
        /* strconv.ParseFloat on a number that starts with '.' */
        if (yaml_style_float(p, m)) { /* p starts with '.': \.[0-9]+([eE][-+]?[0-9]+)? */
            double d = strtod(p, NULL);
            if (!isinf(d)) {
                r->kind = R_REAL;
                r->d = d;
            }
        }
        goto out;
    }
    irc = parse_go_int(p, m, &r->i);
    if (irc == 0) {
        r->kind = R_INT;
    } else if (irc == RES_RANGE) {
        rc = RES_RANGE;
    } else if (yaml_style_float(p, m)) {
        double d = strtod(p, NULL);
        if (!isinf(d)) { /* go-yaml leaves an overflowing float a string */
            r->kind = R_REAL;
            r->d = d;
        }
    }
out:
    common_free(heap);
    return rc;
}

/* Strings that go-yaml v2 would quote although they read back as strings. */
static int looks_special(const char *s, size_t n)
{
    size_t i = 0, d;

    /* timestamps: YYYY-... */
    if (n >= 5 && is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3]) &&
        s[4] == '-')
        return 1;
    /* merge key and YAML 1.1 value key */
    if ((n == 2 && memcmp(s, "<<", 2) == 0) || (n == 1 && s[0] == '='))
        return 1;
    /* sexagesimal: ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$ */
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    if (i >= n || !is_digit(s[i]))
        return 0;
    while (i < n && (is_digit(s[i]) || s[i] == '_'))
        i++;
    if (i >= n || s[i] != ':')
        return 0;
    while (i < n && s[i] == ':') {
        i++;
        d = i;
        while (i < n && is_digit(s[i]) && i - d < 2)
            i++;
        if (i == d || (i - d == 2 && s[d] > '5'))
            return 0;
    }
    if (i < n && s[i] == '.')
        for (i++; i < n && (is_digit(s[i]) || s[i] == '_'); i++)
            ;
    return i == n;
}

/* ------------------------------------------------------------------------------------------ */
/* Key strings, as sigs.k8s.io/yaml turns non-string keys into JSON keys.                     */

/* Go's strconv.FormatFloat(d, 'g', -1, 32), with YAML's spellings of the specials. */
static void format_float32_key(double d, char *buf, size_t size)
{
    char e[32], digits[16];
    float f;
    int p, exp10, nd = 0, k;
    size_t at = 0;
    const char *c;

    if (isnan(d)) {
        snprintf(buf, size, ".nan");
        return;
    }
    if (fabs(d) >= 0x1.ffffffp127) { /* rounds to an infinite float32 */
        snprintf(buf, size, d > 0 ? ".inf" : "-.inf");
        return;
    }
    f = fabs(d) > FLT_MAX ? (d > 0 ? FLT_MAX : -FLT_MAX) : (float)d;
    for (p = 1; p < 9; p++) {
        snprintf(e, sizeof(e), "%.*e", p - 1, (double)f);
        if (strtof(e, NULL) == f)
            break;
    }
    snprintf(e, sizeof(e), "%.*e", p - 1, (double)f);
    /* e is [-]d[.ddd]e[+-]xx */
    c = e;
    if (*c == '-')
        buf[at++] = *c++;
    for (; *c && *c != 'e'; c++)
        if (is_digit(*c) && nd < (int)sizeof(digits) - 1)
            digits[nd++] = *c;
    digits[nd] = '\0';
    exp10 = (int)strtol(c + 1, NULL, 10);
    while (nd > 1 && digits[nd - 1] == '0')
        digits[--nd] = '\0';
    if (exp10 < -4 || exp10 >= 6) {
        snprintf(buf + at, size - at, "%c%s%s%c%c%02d", digits[0], nd > 1 ? "." : "", digits + 1,
                 'e', exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return;
    }
    if (exp10 < 0) { /* 0.000ddd */
        buf[at++] = '0';
        buf[at++] = '.';
        for (k = 0; k < -exp10 - 1 && at + 1 < size; k++)
            buf[at++] = '0';
        for (k = 0; k < nd && at + 1 < size; k++)
            buf[at++] = digits[k];
        buf[at] = '\0';
        return;
    }
    /* exp10 in 0..5: integer part is digits[0..exp10] padded with zeros */
    for (k = 0; k <= exp10 && at + 1 < size; k++)
        buf[at++] = k < nd ? digits[k] : '0';
    if (nd > exp10 + 1 && at + 1 < size) {
        buf[at++] = '.';
        for (; k < nd && at + 1 < size; k++)
            buf[at++] = digits[k];
    }
    buf[at] = '\0';
}

/* ------------------------------------------------------------------------------------------ */
/* Messages.                                                                                   */

/* Quote s[0..n) for a message: "..." with escapes, cut at MSG_KEY_MAX bytes. */
static const char *msg_quote(char *dst, size_t size, const char *s, size_t n)
{
    size_t at = 0, i;

    dst[at++] = '"';
    for (i = 0; i < n && at + 8 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i >= MSG_KEY_MAX) {
            memcpy(dst + at, "...", 3);
            at += 3;
            break;
        }
        if (c == '"' || c == '\\') {
            dst[at++] = '\\';
            dst[at++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            at += (size_t)snprintf(dst + at, size - at, "\\x%02x", c);
        } else {
            dst[at++] = (char)c;
        }
    }
    dst[at++] = '"';
    dst[at] = '\0';
    return dst;
}

/* How a tag reads in a message: "!!int" for the standard ones. */
static const char *tag_display(char *dst, size_t size, const char *tag)
{
    size_t plen = strlen(TAG_PREFIX);
    char tmp[96];

    if (strncmp(tag, TAG_PREFIX, plen) == 0)
        snprintf(tmp, sizeof(tmp), "!!%s", tag + plen);
    else
        snprintf(tmp, sizeof(tmp), "%s", tag);
    snprintf(dst, size, "%s", tmp);
    return dst;
}

/* ------------------------------------------------------------------------------------------ */
/* Input: the read handler, its UTF-8 gate and the character -> byte cursor.                  */

struct src {
    const unsigned char *mem; /* memory input, or NULL */
    size_t mem_len;
    FILE *f;    /* file input */
    size_t pos; /* bytes handed to libyaml */
    size_t cap; /* whole-input cap */

    /* UTF-8 gate */
    unsigned need; /* continuation bytes still expected */
    uint32_t cp, min;
    size_t seq_line, seq_col; /* where the pending sequence started (0-based) */
    unsigned char seq_lead;
    size_t line, col; /* 0-based position of the next character */
    int after_cr;

    /* character index -> byte offset */
    size_t cur_char, cur_byte;
    unsigned char *win; /* file input: bytes [win_off, win_off + win_len) */
    size_t win_off, win_len, win_cap;
};

static unsigned char src_at(const struct src *s, size_t off)
{
    return s->mem ? s->mem[off] : s->win[off - s->win_off];
}

static size_t utf8_width(unsigned char c)
{
    if (c < 0x80)
        return 1;
    if (c < 0xE0)
        return 2;
    if (c < 0xF0)
        return 3;
    return 4;
}

/* Byte offset of libyaml's character index (monotonic use; earlier indexes clamp). */
static size_t src_byte_of(struct src *s, size_t index)
{
    while (s->cur_char < index && s->cur_byte < s->pos) {
        s->cur_byte += utf8_width(src_at(s, s->cur_byte));
        s->cur_char++;
    }
    if (s->cur_byte > s->pos)
        s->cur_byte = s->pos;
    if (!s->mem) {
        size_t drop = s->cur_byte - s->win_off;
        if (drop > 65536 && drop * 2 > s->win_len) {
            memmove(s->win, s->win + drop, s->win_len - drop);
            s->win_len -= drop;
            s->win_off += drop;
        }
    }
    return s->cur_byte;
}

/* ------------------------------------------------------------------------------------------ */
/* The loader.                                                                                 */

struct frame {
    json_t *node; /* the object or array being built (owned until attached) */
    int is_map;
    size_t line, col;
    size_t start_nodes; /* node count before this container */
    size_t height;      /* max height of its children */
    size_t anchor;      /* defs index + 1, or 0 */
    /* mappings: the key waiting for its value */
    char *key;
    size_t key_len;
    size_t key_line, key_col;
    int have_key, key_merge;
    json_t *merged; /* keys that came from "<<" and may still be overridden, or NULL */
};

struct loader {
    const char *name;
    struct common_yaml_limits lim;
    struct src src;
    struct common_yaml_docs *out;
    struct common_error *err;
    enum common_rc rc; /* first error */
    size_t docs_cap;

    /* the current document */
    struct frame *stack;
    size_t depth, stack_cap;
    struct anchors anchors;
    json_t *keep; /* merge sources and anchored keys, alive until the document ends */
    json_t *root;
    int root_empty;
    size_t nodes;
    size_t doc_index; /* 1-based, counting every document in the stream */
    size_t doc_line, doc_col, doc_start;
    int in_doc;
    size_t boundary; /* src.pos when the last document started or ended */
};

static enum common_rc fail(struct loader *L, enum common_rc rc, size_t line, size_t col,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static enum common_rc fail(struct loader *L, enum common_rc rc, size_t line, size_t col,
                           const char *fmt, ...)
{
    char msg[COMMON_ERROR_MSG_MAX];
    va_list ap;

    if (L->rc)
        return L->rc;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    L->rc = rc;
    if (line)
        common_error_set(L->err, rc, "%s:%zu:%zu: %s", L->name, line, col, msg);
    else
        common_error_set(L->err, rc, "%s: %s", L->name, msg);
    return rc;
}

static enum common_rc nomem(struct loader *L)
{
    return fail(L, COMMON_ENOMEM, 0, 0, "out of memory");
}

static enum common_rc too_big(struct loader *L)
{
    return fail(L, COMMON_ETOOBIG, L->doc_line, L->doc_col,
                "document %zu is larger than the limit of %zu bytes", L->doc_index,
                L->lim.max_doc_bytes);
}

/* One character passed the byte checks: check it is allowed and move line/col. */
static int gate_char(struct loader *L, uint32_t cp, size_t off, size_t line, size_t col)
{
    struct src *s = &L->src;

    if (cp == 0) {
        fail(L, COMMON_EINVAL, line + 1, col + 1,
             "binary data: the input contains a NUL byte (YAML must be text)");
        return -1;
    }
    if (!(cp == 0x09 || cp == 0x0A || cp == 0x0D || (cp >= 0x20 && cp <= 0x7E) || cp == 0x85 ||
          (cp >= 0xA0 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
          (cp >= 0x10000 && cp <= 0x10FFFF))) {
        fail(L, COMMON_EINVAL, line + 1, col + 1,
             "control character U+%04X is not allowed in YAML (binary data?)", (unsigned)cp);
        return -1;
    }
    if (cp == 0xFEFF && off == 0) { /* libyaml skips a leading BOM without counting it */
        s->cur_byte = 3;
        return 0;
    }
    if (cp == '\n') {
        if (!s->after_cr) {
            s->line++;
            s->col = 0;
        }
    } else if (cp == '\r' || cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
        s->line++;
        s->col = 0;
    } else {
        s->col++;
    }
    s->after_cr = cp == '\r';
    return 0;
}

static int gate_bad_utf8(struct loader *L, unsigned char c, size_t off, size_t line, size_t col)
{
    if (off == 0 && (c == 0xFF || c == 0xFE))
        fail(L, COMMON_EINVAL, 1, 1,
             "the input starts with a UTF-16 byte order mark; only UTF-8 is supported");
    else
        fail(L, COMMON_EINVAL, line + 1, col + 1,
             "invalid UTF-8 (byte 0x%02x); YAML input must be UTF-8 text", c);
    return -1;
}

/* Check buf[0..n), which sits at input offset s->pos. */
static int gate(struct loader *L, const unsigned char *buf, size_t n)
{
    struct src *s = &L->src;
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = buf[i];
        size_t off = s->pos + i;
        if (s->need) {
            if ((c & 0xC0) != 0x80)
                return gate_bad_utf8(L, s->seq_lead, 1, s->seq_line, s->seq_col);
            s->cp = (s->cp << 6) | (c & 0x3F);
            if (--s->need)
                continue;
            if (s->cp < s->min || (s->cp >= 0xD800 && s->cp <= 0xDFFF) || s->cp > 0x10FFFF)
                return gate_bad_utf8(L, s->seq_lead, 1, s->seq_line, s->seq_col);
            if (gate_char(L, s->cp, off - utf8_width(s->seq_lead) + 1, s->seq_line, s->seq_col))
                return -1;
            continue;
        }
        if (c < 0x80) {
            if (gate_char(L, c, off, s->line, s->col))
                return -1;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            s->need = 1;
            s->cp = c & 0x1F;
            s->min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            s->need = 2;
            s->cp = c & 0x0F;
            s->min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            s->need = 3;
            s->cp = c & 0x07;
            s->min = 0x10000;
        } else {
            return gate_bad_utf8(L, c, off, s->line, s->col);
        }
        s->seq_lead = c;
        s->seq_line = s->line;
        s->seq_col = s->col;
    }
    return 0;
}

/* libyaml's read handler. Returns 1 with *got bytes (0 = end of input), or 0 on error. */
static int src_read(void *data, unsigned char *buf, size_t size, size_t *got)
{
    struct loader *L = data;
    struct src *s = &L->src;
    size_t n;

    *got = 0;
    if (L->rc)
        return 0;
    if (s->mem) {
        n = s->mem_len - s->pos < size ? s->mem_len - s->pos : size;
        if (n)
            memcpy(buf, s->mem + s->pos, n);
    } else {
        n = fread(buf, 1, size, s->f);
        if (n == 0 && ferror(s->f)) {
            fail(L, COMMON_EIO, 0, 0, "read failed: %s", strerror(errno));
            return 0;
        }
    }
    if (n == 0) {
        if (s->need) {
            fail(L, COMMON_EINVAL, s->seq_line + 1, s->seq_col + 1,
                 "invalid UTF-8: the input ends inside a multi-byte character");
            return 0;
        }
        return 1;
    }
    if (n > s->cap - s->pos) {
        fail(L, COMMON_ETOOBIG, 0, 0, "larger than the limit of %zu bytes", s->cap);
        return 0;
    }
    if (s->pos + n - L->boundary > L->lim.max_doc_bytes + READ_SLACK) {
        /* a document (or the space between two) is certainly over the limit */
        if (!L->in_doc) {
            L->doc_index++;
            L->doc_line = s->line + 1;
            L->doc_col = s->col + 1;
        }
        too_big(L);
        return 0;
    }
    if (gate(L, buf, n))
        return 0;
    if (!s->mem) {
        if (s->win_len + n > s->win_cap) {
            size_t ncap = s->win_cap ? s->win_cap : 65536;
            unsigned char *nw;
            while (ncap < s->win_len + n)
                ncap *= 2;
            nw = common_realloc(s->win, ncap);
            if (!nw) {
                nomem(L);
                return 0;
            }
            s->win = nw;
            s->win_cap = ncap;
        }
        memcpy(s->win + s->win_len, buf, n);
        s->win_len += n;
    }
    s->pos += n;
    *got = n;
    return 1;
}

/* ---- libyaml's errors, said plainly ---- */

struct problem_text {
    const char *problem; /* libyaml's text */
    const char *say;     /* ours */
    int at_context;      /* report at the context mark (where the construct started) */
};

static const struct problem_text problem_texts[] = {
    {"found unexpected end of stream",
     "unclosed quoted string: no closing quote before the end "
     "of the input",
     1},
    {"found unexpected document indicator",
     "unclosed quoted string: no closing quote before the '---' or '...' line", 1},
    {"found a tab character that violates indentation",
     "a tab character is used for indentation; YAML indents with spaces only", 0},
    {"found a tab character where an indentation space is expected",
     "a tab character is used for indentation; YAML indents with spaces only", 0},
    {"mapping values are not allowed in this context",
     "unexpected ':' here: check the indentation, or quote a value that contains \": \"", 0},
    {"block sequence entries are not allowed in this context",
     "unexpected '- ' list item here: check the indentation", 0},
    {"mapping keys are not allowed in this context", "unexpected '?' here: check the indentation",
     0},
    {"could not find expected ':'", "a key must be followed by ':' on the same line", 0},
    {"found unknown escape character", "unknown escape sequence in a double-quoted string", 0},
    {"did not find expected hexdecimal number",
     "bad \\x, \\u or \\U escape: hexadecimal digits expected", 0},
    {"found invalid Unicode character escape code",
     "the escape sequence names an invalid Unicode character", 0},
    {"did not find expected alphabetic or numeric character",
     "an anchor (&) or alias (*) needs a name of letters, digits, '-' or '_'", 0},
    {"found an indentation indicator equal to 0",
     "a block scalar's indentation indicator must be 1 to 9", 0},
    {"did not find expected comment or line break",
     "unexpected text after a block scalar indicator or directive", 0},
    {"did not find expected whitespace or line break", "malformed directive or tag", 0},
    {"did not find expected <document start>",
     "unexpected content after the end of a document (is a '---' line missing?)", 0},
    {"did not find expected node content", "a value was expected here", 0},
    {"did not find expected '-' indicator",
     "expected a '- ' list item at this indentation: check the indentation", 0},
    {"did not find expected key", "expected a 'key:' at this indentation: check the indentation",
     0},
    {"did not find expected ',' or ']'", "expected ',' or ']' in a [ ] list", 0},
    {"did not find expected ',' or '}'", "expected ',' or '}' in a { } mapping", 0},
    {"found undefined tag handle", "unknown tag handle (only ! and !! are defined)", 0},
    {"found incompatible YAML document", "unsupported %YAML version (1.1 and 1.2 are read)", 0},
};

struct context_text {
    const char *context;
    const char *what;
};

static const struct context_text context_texts[] = {
    {"while scanning a quoted scalar", "quoted string"},
    {"while parsing a quoted scalar", "quoted string"},
    {"while scanning a simple key", "key"},
    {"while scanning a plain scalar", "value"},
    {"while scanning a block scalar", "block string"},
    {"while parsing a block mapping", "mapping"},
    {"while parsing a block collection", "list"},
    {"while parsing a flow sequence", "[ ] list"},
    {"while parsing a flow mapping", "{ } mapping"},
    {"while parsing a block node", "value"},
    {"while parsing a flow node", "value"},
    {"while parsing a node", "value"},
    {"while scanning an anchor", "anchor"},
    {"while scanning an alias", "alias"},
    {"while scanning a tag", "tag"},
    {"while parsing a tag", "tag"},
    {"while scanning a directive", "directive"},
    {"while scanning a %YAML directive", "directive"},
    {"while scanning a %TAG directive", "directive"},
};

static enum common_rc parser_failed(struct loader *L, yaml_parser_t *p)
{
    const char *problem = p->problem ? p->problem : "syntax error";
    const char *say = problem, *what = NULL;
    size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;
    size_t cline = p->context_mark.line + 1, ccol = p->context_mark.column + 1;
    int at_context = 0;
    size_t i;

    if (L->rc)
        return L->rc; /* our read handler stopped it */
    if (p->error == YAML_MEMORY_ERROR)
        return nomem(L);
    if (p->error == YAML_READER_ERROR)
        return fail(L, COMMON_EINVAL, 0, 0, "cannot read the input at byte %zu: %s",
                    p->problem_offset, problem);
    for (i = 0; i < sizeof(problem_texts) / sizeof(problem_texts[0]); i++)
        if (strcmp(problem, problem_texts[i].problem) == 0) {
            say = problem_texts[i].say;
            at_context = problem_texts[i].at_context && p->context;
            break;
        }
    if (strcmp(problem, "found character that cannot start any token") == 0) {
        size_t b = src_byte_of(&L->src, p->problem_mark.index);
        int c = b < L->src.pos ? src_at(&L->src, b) : -1;
        if (c == '\t')
            say = "a tab character is used for indentation; YAML indents with spaces only";
        else if (c == '@' || c == '`')
            return fail(L, COMMON_EINVAL, line, col,
                        "'%c' is reserved and cannot start a plain value; quote the value", c);
        else if (c > 0x20 && c < 0x7f)
            return fail(L, COMMON_EINVAL, line, col, "unexpected character '%c'", c);
        else
            say = "unexpected character";
    }
    if (p->context)
        for (i = 0; i < sizeof(context_texts) / sizeof(context_texts[0]); i++)
            if (strcmp(p->context, context_texts[i].context) == 0)
                what = context_texts[i].what;
    if (at_context) /* report where the unfinished thing started */
        return fail(L, COMMON_EINVAL, cline, ccol, "%s at %zu:%zu", say, line, col);
    if (p->context && !(cline == line && ccol == col))
        return fail(L, COMMON_EINVAL, line, col, "%s (in the %s that starts at %zu:%zu)", say,
                    what ? what : p->context, cline, ccol);
    return fail(L, COMMON_EINVAL, line, col, "%s", say);
}

/* ---- building ---- */

enum tagk { T_NONE, T_NONSPEC, T_STR, T_INT, T_BOOL, T_NULL, T_FLOAT, T_MAP, T_SEQ, T_MERGE };

static const struct {
    const char *name;
    enum tagk kind;
} std_tags[] = {{"str", T_STR},     {"int", T_INT}, {"bool", T_BOOL}, {"null", T_NULL},
                {"float", T_FLOAT}, {"map", T_MAP}, {"seq", T_SEQ},   {"merge", T_MERGE}};

static enum common_rc classify_tag(struct loader *L, const yaml_char_t *tag, const yaml_mark_t *m,
                                   enum tagk *out)
{
    const char *t = (const char *)tag;
    size_t plen = strlen(TAG_PREFIX), i;
    char shown[96];

    *out = T_NONE;
    if (!t)
        return COMMON_OK;
    if (strcmp(t, "!") == 0) {
        *out = T_NONSPEC;
        return COMMON_OK;
    }
    if (strncmp(t, TAG_PREFIX, plen) == 0)
        for (i = 0; i < sizeof(std_tags) / sizeof(std_tags[0]); i++)
            if (strcmp(t + plen, std_tags[i].name) == 0) {
                *out = std_tags[i].kind;
                return COMMON_OK;
            }
    return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                "unsupported tag %s (only !!str, !!int, !!float, !!bool, !!null, !!map and "
                "!!seq are read)",
                tag_display(shown, sizeof(shown), t));
}

/* Count one more node of the document; refuse past the cap. */
static enum common_rc count_nodes(struct loader *L, size_t n, const yaml_mark_t *m)
{
    if (n > L->lim.max_nodes || L->nodes > L->lim.max_nodes - n)
        return fail(L, COMMON_ETOOBIG, m->line + 1, m->column + 1,
                    "document %zu has more than %zu nodes after expanding aliases (alias bomb?)",
                    L->doc_index, L->lim.max_nodes);
    L->nodes += n;
    return COMMON_OK;
}

static int is_singleton(const json_t *v)
{
    return json_is_true(v) || json_is_false(v) || json_is_null(v);
}

static enum common_rc record(struct loader *L, const json_t *v, size_t line, size_t col)
{
    if (!is_singleton(v) && pos_put(L->out->pos, v, line, col))
        return nomem(L);
    return COMMON_OK;
}

/* A new reference to the JSON value of a resolved scalar, or NULL (memory). */
static json_t *resolved_json(const struct resolved *r, const char *s, size_t n)
{
    switch (r->kind) {
    case R_NULL:
        return json_null();
    case R_BOOL:
        return json_boolean(r->b);
    case R_INT:
        return json_integer(r->i);
    case R_REAL:
        return json_real(r->d);
    default:
        return json_stringn_nocheck(s, n);
    }
}

/* The JSON key a resolved scalar becomes, into a fresh string. */
static enum common_rc key_text(struct loader *L, const struct resolved *r, const char *s, size_t n,
                               const yaml_mark_t *m, char **out, size_t *out_len)
{
    char num[64];
    const char *t = num;
    size_t tl;

    switch (r->kind) {
    case R_STR:
        t = s;
        tl = n;
        break;
    case R_NULL:
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                    "a null mapping key (empty, ~ or null) is not supported; quote it");
    case R_BOOL:
        t = r->b ? "true" : "false";
        tl = strlen(t);
        break;
    case R_INT:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, r->i);
        tl = strlen(num);
        break;
    default:
        format_float32_key(r->kind == R_NAN ? NAN : r->d, num, sizeof(num));
        tl = strlen(num);
        break;
    }
    *out = common_malloc(tl + 1);
    if (!*out)
        return nomem(L);
    memcpy(*out, t, tl);
    (*out)[tl] = '\0';
    *out_len = tl;
    return COMMON_OK;
}

static int plain_key(const char *k, size_t n)
{
    if (!n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
              (k[i] >= '0' && k[i] <= '9') || k[i] == '_' || k[i] == '-'))
            return 0;
    return 1;
}

/* "spec.trainer.numNodes: " (or "items[2]: "), the path of the value being read from the
 * document's root, into buf; "" at the root or in a key. For messages about a value, which
 * is refused before the object it belongs to is known. */
static const char *value_path(const struct loader *L, char *buf, size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < L->depth && len < n; i++) {
        const struct frame *f = &L->stack[i];
        int w;
        if (f->is_map && !f->have_key)
            return ""; /* a key, or a value of a key not yet read: no path */
        if (f->is_map && plain_key(f->key, f->key_len))
            w = snprintf(buf + len, n - len, "%s%.*s", len ? "." : "", (int)f->key_len, f->key);
        else if (f->is_map) /* limits[nvidia.com/gpu], as the API server writes a map key */
            w = snprintf(buf + len, n - len, "[%.*s]", (int)f->key_len, f->key);
        else
            w = snprintf(buf + len, n - len, "[%zu]", json_array_size(f->node));
        if (w < 0)
            return "";
        len += (size_t)w;
    }
    if (!len || len + 3 > n)
        return len ? buf : "";
    memcpy(buf + len, ": ", 3);
    return buf;
}

/* Resolve a scalar event's text under its tag (tk); errors name the position. */
static enum common_rc resolve_scalar(struct loader *L, const yaml_event_t *ev, enum tagk tk,
                                     struct resolved *r)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const yaml_mark_t *m = &ev->start_mark;
    char q[MSG_KEY_MAX + 16], shown[96], path[512];
    int rc;

    memset(r, 0, sizeof(*r));
    r->kind = R_STR;
    if (tk == T_NONSPEC || tk == T_STR || tk == T_MERGE ||
        (tk == T_NONE && !ev->data.scalar.plain_implicit))
        return COMMON_OK;
    rc = resolve_plain(s, n, r);
    if (rc == RES_NOMEM)
        return nomem(L);
    if (rc == RES_RANGE)
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                    "%sinteger %s does not fit in 64 bits", value_path(L, path, sizeof(path)),
                    msg_quote(q, sizeof(q), s, n));
    if (tk == T_FLOAT && r->kind == R_INT) {
        r->kind = R_REAL;
        r->d = (double)r->i;
    }
    if ((tk == T_INT && r->kind != R_INT) ||
        (tk == T_FLOAT && r->kind != R_REAL && r->kind != R_INF && r->kind != R_NAN) ||
        (tk == T_BOOL && r->kind != R_BOOL) || (tk == T_NULL && r->kind != R_NULL))
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1, "cannot read %s as %s",
                    msg_quote(q, sizeof(q), s, n),
                    tag_display(shown, sizeof(shown), (const char *)ev->data.scalar.tag));
    return COMMON_OK;
}

static enum common_rc push_frame(struct loader *L, json_t *node, int is_map, const yaml_mark_t *m,
                                 size_t start_nodes)
{
    struct frame *f;

    if (L->depth == L->stack_cap) {
        size_t ncap = L->stack_cap ? L->stack_cap * 2 : 16;
        struct frame *ns = common_realloc(L->stack, ncap * sizeof(*ns));
        if (!ns) {
            json_decref(node);
            return nomem(L);
        }
        L->stack = ns;
        L->stack_cap = ncap;
    }
    f = &L->stack[L->depth++];
    memset(f, 0, sizeof(*f));
    f->node = node;
    f->is_map = is_map;
    f->line = m->line + 1;
    f->col = m->column + 1;
    f->start_nodes = start_nodes;
    return COMMON_OK;
}

static void frame_release(struct frame *f)
{
    json_decref(f->node);
    common_free(f->key);
    json_decref(f->merged);
    f->node = NULL;
    f->key = NULL;
    f->merged = NULL;
}

static enum common_rc keep(struct loader *L, json_t *v)
{
    if (!L->keep && !(L->keep = json_array())) {
        json_decref(v);
        return nomem(L);
    }
    if (json_array_append_new(L->keep, v))
        return nomem(L);
    return COMMON_OK;
}

/* Merge the keys of src that target lacks; they may be overridden by explicit keys later. */
static enum common_rc merge_one(struct loader *L, struct frame *f, json_t *src)
{
    const char *key;
    size_t klen;
    json_t *val;

    json_object_keylen_foreach(src, key, klen, val)
    {
        const char *kp;
        const struct pos_slot *ps;
        if (json_object_getn(f->node, key, klen))
            continue;
        if (json_object_setn_nocheck(f->node, key, klen, val))
            return nomem(L);
        if (!f->merged && !(f->merged = json_object()))
            return nomem(L);
        if (json_object_setn_new_nocheck(f->merged, key, klen, json_true()))
            return nomem(L);
        ps = pos_get(L->out->pos, key);
        kp = object_key_ptr(f->node, key, klen);
        if (ps && kp && pos_put(L->out->pos, kp, ps->line, ps->col))
            return nomem(L);
    }
    return COMMON_OK;
}

/* Apply "<<: v" to the mapping in f. Consumes v. */
static enum common_rc merge_into(struct loader *L, struct frame *f, json_t *v, size_t height)
{
    enum common_rc rc = COMMON_OK;
    size_t i;

    if (json_is_object(v)) {
        rc = merge_one(L, f, v);
        if (height >= 1 && height - 1 > f->height)
            f->height = height - 1;
    } else if (json_is_array(v)) {
        for (i = 0; i < json_array_size(v) && !rc; i++)
            if (!json_is_object(json_array_get(v, i)))
                break;
        if (i < json_array_size(v))
            rc = fail(L, COMMON_EINVAL, f->key_line, f->key_col,
                      "the merge key '<<' needs a mapping or a list of mappings");
        for (i = 0; i < json_array_size(v) && !rc; i++)
            rc = merge_one(L, f, json_array_get(v, i));
        if (height >= 2 && height - 2 > f->height)
            f->height = height - 2;
    } else {
        rc = fail(L, COMMON_EINVAL, f->key_line, f->key_col,
                  "the merge key '<<' needs a mapping or a list of mappings");
    }
    /* anchors may point into v: keep it until the document ends */
    if (rc) {
        json_decref(v);
        return rc;
    }
    return keep(L, v);
}

/* Set the pending key of mapping frame f to v. Consumes v. */
static enum common_rc map_set(struct loader *L, struct frame *f, json_t *v)
{
    const char *kp;

    if (json_object_getn(f->node, f->key, f->key_len)) {
        if (f->merged && json_object_getn(f->merged, f->key, f->key_len)) {
            json_object_deln(f->merged, f->key, f->key_len);
        } else {
            const struct pos_slot *first;
            char q[MSG_KEY_MAX + 16];
            json_decref(v);
            first = pos_get(L->out->pos, object_key_ptr(f->node, f->key, f->key_len));
            if (first)
                return fail(L, COMMON_EINVAL, f->key_line, f->key_col,
                            "duplicate key %s: first on line %u, again on line %zu",
                            msg_quote(q, sizeof(q), f->key, f->key_len), (unsigned)first->line,
                            f->key_line);
            return fail(L, COMMON_EINVAL, f->key_line, f->key_col,
                        "duplicate key %s (again on line %zu)",
                        msg_quote(q, sizeof(q), f->key, f->key_len), f->key_line);
        }
    }
    if (json_object_setn_new_nocheck(f->node, f->key, f->key_len, v))
        return nomem(L);
    kp = object_key_ptr(f->node, f->key, f->key_len);
    if (kp && pos_put(L->out->pos, kp, f->key_line, f->key_col))
        return nomem(L);
    return COMMON_OK;
}

/* Put a finished node v (new reference, height h) where it belongs. Consumes v. */
static enum common_rc attach(struct loader *L, json_t *v, size_t h)
{
    struct frame *f;
    enum common_rc rc;

    if (L->depth == 0) {
        L->root = v;
        return COMMON_OK;
    }
    f = &L->stack[L->depth - 1];
    if (h > f->height)
        f->height = h;
    if (!f->is_map)
        return json_array_append_new(f->node, v) ? nomem(L) : COMMON_OK;
    rc = f->key_merge ? merge_into(L, f, v, h) : map_set(L, f, v);
    common_free(f->key);
    f->key = NULL;
    f->have_key = 0;
    f->key_merge = 0;
    return rc;
}

static int key_position(const struct loader *L)
{
    return L->depth && L->stack[L->depth - 1].is_map && !L->stack[L->depth - 1].have_key;
}

static void set_key(struct loader *L, char *key, size_t len, const yaml_mark_t *m, int merge)
{
    struct frame *f = &L->stack[L->depth - 1];

    f->key = key;
    f->key_len = len;
    f->key_line = m->line + 1;
    f->key_col = m->column + 1;
    f->have_key = 1;
    f->key_merge = merge;
}

static enum common_rc on_scalar(struct loader *L, const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const yaml_mark_t *m = &ev->start_mark;
    struct resolved r;
    enum tagk tk;
    enum common_rc rc;
    size_t def = 0;
    json_t *v;

    rc = classify_tag(L, ev->data.scalar.tag, m, &tk);
    if (rc)
        return rc;
    if (tk == T_MAP || tk == T_SEQ)
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                    "tag !!%s cannot be used on a scalar", tk == T_MAP ? "map" : "seq");
    if (tk == T_MERGE && !(key_position(L) && n == 2 && memcmp(s, "<<", 2) == 0))
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                    "tag !!merge is only allowed on a '<<' key");
    rc = resolve_scalar(L, ev, tk, &r);
    if (rc)
        return rc;
    /* a NUL would cut the value short wherever it is read back as a C string */
    if (!L->lim.allow_nul && n && memchr(s, '\0', n))
        return fail(
            L, COMMON_EINVAL, m->line + 1, m->column + 1,
            "%s holds a NUL character (\\0 or \\u0000): refused, a value cut short there would "
            "change its meaning",
            key_position(L) ? "a key" : "a string");
    if (ev->data.scalar.anchor &&
        anchor_define(&L->anchors, (const char *)ev->data.scalar.anchor, &def))
        return nomem(L);
    if (key_position(L)) {
        char *key;
        size_t klen;
        int merge = tk == T_MERGE || (tk == T_NONE && ev->data.scalar.plain_implicit && n == 2 &&
                                      !memcmp(s, "<<", 2));
        rc = key_text(L, &r, s, n, m, &key, &klen);
        if (rc)
            return rc;
        set_key(L, key, klen, m, merge);
        if (ev->data.scalar.anchor) { /* an anchored key: keep its value for aliases */
            if (r.kind == R_INF || r.kind == R_NAN)
                r.kind = R_STR; /* JSON has no such number; the alias gets the text */
            v = resolved_json(&r, s, n);
            if (!v)
                return nomem(L);
            L->anchors.defs[def].node = v;
            L->anchors.defs[def].nodes = 1;
            return keep(L, v);
        }
        return COMMON_OK;
    }
    if (r.kind == R_INF || r.kind == R_NAN) {
        char path[512];
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                    "%s%.*s is not a number JSON can hold; quote it to make it a string",
                    value_path(L, path, sizeof(path)), (int)(n < 16 ? n : 16), s);
    }
    rc = count_nodes(L, 1, m);
    if (rc)
        return rc;
    v = resolved_json(&r, s, n);
    if (!v)
        return nomem(L);
    rc = record(L, v, m->line + 1, m->column + 1);
    if (rc) {
        json_decref(v);
        return rc;
    }
    if (ev->data.scalar.anchor) {
        L->anchors.defs[def].node = v;
        L->anchors.defs[def].nodes = 1;
    }
    if (L->depth == 0 && n == 0 && tk == T_NONE && ev->data.scalar.plain_implicit &&
        !ev->data.scalar.anchor)
        L->root_empty = 1;
    return attach(L, v, 0);
}

/* A deep copy of src with positions (the top at line/col, the rest where src's were). */
static json_t *copy_node(struct loader *L, json_t *src, size_t line, size_t col)
{
    const struct pos_slot *ps;
    json_t *dst;

    L->nodes++;
    if (is_singleton(src))
        return src;
    switch (json_typeof(src)) {
    case JSON_OBJECT: {
        const char *key;
        size_t klen;
        json_t *val;
        dst = json_object();
        if (!dst)
            return NULL;
        json_object_keylen_foreach(src, key, klen, val)
        {
            json_t *c;
            const char *kp;
            ps = pos_get(L->out->pos, val);
            c = copy_node(L, val, ps ? ps->line : 0, ps ? ps->col : 0);
            if (!c || json_object_setn_new_nocheck(dst, key, klen, c))
                goto fail;
            ps = pos_get(L->out->pos, key);
            kp = object_key_ptr(dst, key, klen);
            if (ps && kp && pos_put(L->out->pos, kp, ps->line, ps->col))
                goto fail;
        }
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *val;
        dst = json_array();
        if (!dst)
            return NULL;
        json_array_foreach(src, i, val)
        {
            json_t *c;
            ps = pos_get(L->out->pos, val);
            c = copy_node(L, val, ps ? ps->line : 0, ps ? ps->col : 0);
            if (!c || json_array_append_new(dst, c))
                goto fail;
        }
        break;
    }
    case JSON_STRING:
        dst = json_stringn_nocheck(json_string_value(src), json_string_length(src));
        break;
    case JSON_INTEGER:
        dst = json_integer(json_integer_value(src));
        break;
    default:
        dst = json_real(json_real_value(src));
        break;
    }
    if (!dst)
        return NULL;
    if (line && pos_put(L->out->pos, dst, line, col))
        goto fail;
    return dst;
fail:
    json_decref(dst);
    return NULL;
}

static enum common_rc on_alias(struct loader *L, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    const yaml_mark_t *m = &ev->start_mark;
    struct anchor_def *d = anchor_get(&L->anchors, name);
    enum common_rc rc;
    json_t *v;

    if (!d)
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                    "unknown anchor in alias *%.64s (an alias must follow its &anchor in the "
                    "same document)",
                    name);
    if (!d->node)
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                    "alias *%.64s refers to the node that contains it", name);
    if (key_position(L)) {
        struct resolved r;
        char *key;
        size_t klen;
        const char *s = NULL;
        size_t n = 0;
        memset(&r, 0, sizeof(r));
        if (json_is_string(d->node)) {
            r.kind = R_STR;
            s = json_string_value(d->node);
            n = json_string_length(d->node);
        } else if (json_is_integer(d->node)) {
            r.kind = R_INT;
            r.i = json_integer_value(d->node);
        } else if (json_is_real(d->node)) {
            r.kind = R_REAL;
            r.d = json_real_value(d->node);
        } else if (json_is_boolean(d->node)) {
            r.kind = R_BOOL;
            r.b = json_is_true(d->node);
        } else if (json_is_null(d->node)) {
            r.kind = R_NULL;
        } else {
            return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                        "a mapping or list cannot be used as a mapping key");
        }
        rc = key_text(L, &r, s, n, m, &key, &klen);
        if (rc)
            return rc;
        set_key(L, key, klen, m, 0);
        return COMMON_OK;
    }
    if (L->depth + d->height > L->lim.max_depth)
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                    "nesting deeper than %zu levels after expanding alias *%.64s", L->lim.max_depth,
                    name);
    rc = count_nodes(L, d->nodes, m);
    if (rc)
        return rc;
    L->nodes -= d->nodes; /* copy_node counts what it makes */
    v = copy_node(L, d->node, m->line + 1, m->column + 1);
    if (!v)
        return nomem(L);
    return attach(L, v, d->height);
}

static enum common_rc on_start(struct loader *L, const yaml_event_t *ev, int is_map)
{
    const yaml_mark_t *m = &ev->start_mark;
    const yaml_char_t *tag = is_map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
    const yaml_char_t *anchor =
        is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
    size_t start = L->nodes, def;
    enum tagk tk;
    enum common_rc rc;
    json_t *node;

    if (key_position(L))
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1,
                    "a mapping or list cannot be used as a mapping key");
    rc = classify_tag(L, tag, m, &tk);
    if (rc)
        return rc;
    if (tk != T_NONE && tk != T_NONSPEC && tk != (is_map ? T_MAP : T_SEQ)) {
        char shown[96];
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1, "tag %s cannot be used on a %s",
                    tag_display(shown, sizeof(shown), (const char *)tag),
                    is_map ? "mapping" : "list");
    }
    if (L->depth + 1 > L->lim.max_depth)
        return fail(L, COMMON_EINVAL, m->line + 1, m->column + 1, "nesting deeper than %zu levels",
                    L->lim.max_depth);
    rc = count_nodes(L, 1, m);
    if (rc)
        return rc;
    node = is_map ? json_object() : json_array();
    if (!node)
        return nomem(L);
    rc = record(L, node, m->line + 1, m->column + 1);
    if (!rc)
        rc = push_frame(L, node, is_map, m, start);
    else
        json_decref(node);
    if (rc)
        return rc;
    if (anchor) {
        if (anchor_define(&L->anchors, (const char *)anchor, &def))
            return nomem(L);
        L->stack[L->depth - 1].anchor = def + 1;
    }
    return COMMON_OK;
}

static enum common_rc on_end(struct loader *L)
{
    struct frame f = L->stack[--L->depth];
    size_t h = f.height + 1;

    if (f.anchor) {
        struct anchor_def *d = &L->anchors.defs[f.anchor - 1];
        d->node = f.node;
        d->nodes = L->nodes - f.start_nodes;
        d->height = h;
    }
    common_free(f.key);
    json_decref(f.merged);
    return attach(L, f.node, h);
}

static void drop_document(struct loader *L)
{
    while (L->depth)
        frame_release(&L->stack[--L->depth]);
    json_decref(L->root);
    L->root = NULL;
    json_decref(L->keep);
    L->keep = NULL;
    anchors_clear(&L->anchors);
}

static enum common_rc end_document(struct loader *L)
{
    struct common_yaml_docs *o = L->out;

    if (L->root && !L->root_empty) {
        if (o->n == L->docs_cap) {
            size_t ncap = L->docs_cap ? L->docs_cap * 2 : 4;
            json_t **nd = common_realloc(o->docs, ncap * sizeof(*nd));
            int *nl;
            if (!nd)
                return nomem(L);
            o->docs = nd;
            nl = common_realloc(o->doc_line, ncap * sizeof(*nl));
            if (!nl)
                return nomem(L);
            o->doc_line = nl;
            L->docs_cap = ncap;
        }
        o->docs[o->n] = L->root;
        o->doc_line[o->n] = L->doc_line > INT32_MAX ? INT32_MAX : (int)L->doc_line;
        o->n++;
        L->root = NULL;
    }
    drop_document(L);
    return COMMON_OK;
}

static enum common_rc on_event(struct loader *L, const yaml_event_t *ev)
{
    size_t b = src_byte_of(&L->src, ev->start_mark.index);

    if (L->in_doc && b - L->doc_start > L->lim.max_doc_bytes)
        return too_big(L);
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        L->doc_index++;
        L->in_doc = 1;
        L->doc_start = b;
        L->doc_line = ev->start_mark.line + 1;
        L->doc_col = ev->start_mark.column + 1;
        L->boundary = L->src.pos;
        L->nodes = 0;
        L->root_empty = 0;
        return COMMON_OK;
    case YAML_DOCUMENT_END_EVENT:
        if (src_byte_of(&L->src, ev->end_mark.index) - L->doc_start > L->lim.max_doc_bytes)
            return too_big(L);
        L->in_doc = 0;
        L->boundary = L->src.pos;
        return end_document(L);
    case YAML_SCALAR_EVENT:
        return on_scalar(L, ev);
    case YAML_ALIAS_EVENT:
        return on_alias(L, ev);
    case YAML_SEQUENCE_START_EVENT:
        return on_start(L, ev, 0);
    case YAML_MAPPING_START_EVENT:
        return on_start(L, ev, 1);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return on_end(L);
    default:
        return COMMON_OK;
    }
}

struct common_yaml_limits common_yaml_limits_default(void)
{
    struct common_yaml_limits l;

    memset(&l, 0, sizeof(l)); /* every field not set below (allow_nul) is 0 */
    l.max_doc_bytes = DEFAULT_DOC_BYTES;
    l.max_depth = DEFAULT_DEPTH;
    l.max_nodes = DEFAULT_NODES;
    return l;
}

static struct common_yaml_limits effective_limits(const struct common_yaml_limits *in)
{
    struct common_yaml_limits l = common_yaml_limits_default();

    if (in) {
        if (in->max_doc_bytes)
            l.max_doc_bytes = in->max_doc_bytes;
        if (in->max_depth)
            l.max_depth = in->max_depth;
        if (in->max_nodes)
            l.max_nodes = in->max_nodes;
        l.allow_nul = in->allow_nul;
    }
    if (l.max_depth > HARD_MAX_DEPTH)
        l.max_depth = HARD_MAX_DEPTH;
    if (l.max_doc_bytes > SIZE_MAX / FILE_CAP_DOCS - READ_SLACK)
        l.max_doc_bytes = SIZE_MAX / FILE_CAP_DOCS - READ_SLACK;
    return l;
}

void common_yaml_docs_free(struct common_yaml_docs *d)
{
    size_t i;

    if (!d)
        return;
    for (i = 0; i < d->n; i++)
        json_decref(d->docs[i]);
    common_free(d->docs);
    common_free(d->doc_line);
    pos_free(d->pos);
    common_free(d->name);
    memset(d, 0, sizeof(*d));
}

static enum common_rc load(struct loader *L)
{
    yaml_parser_t parser;
    enum common_rc rc = COMMON_OK;
    int done = 0;

    L->out->name = common_strdup(L->name);
    L->out->pos = common_calloc(1, sizeof(*L->out->pos));
    if (!L->out->name || !L->out->pos)
        return nomem(L);
    if (!yaml_parser_initialize(&parser))
        return nomem(L);
    yaml_parser_set_input(&parser, src_read, L);
    while (!done && !rc) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_failed(L, &parser);
            break;
        }
        rc = on_event(L, &ev);
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}

static enum common_rc load_src(struct loader *L)
{
    enum common_rc rc;

    L->src.cap = L->lim.max_doc_bytes * FILE_CAP_DOCS;
    rc = load(L);
    drop_document(L);
    anchors_free(&L->anchors);
    common_free(L->stack);
    common_free(L->src.win);
    if (rc)
        common_yaml_docs_free(L->out);
    return rc;
}

enum common_rc common_yaml_load(const char *data, size_t len, const char *name,
                                const struct common_yaml_limits *limits,
                                struct common_yaml_docs *out, struct common_error *err)
{
    struct loader L;

    memset(&L, 0, sizeof(L));
    memset(out, 0, sizeof(*out));
    L.name = name ? name : "<input>";
    L.lim = effective_limits(limits);
    L.out = out;
    L.err = err;
    L.src.mem = data ? (const unsigned char *)data : (const unsigned char *)"";
    L.src.mem_len = data ? len : 0;
    return load_src(&L);
}

enum common_rc common_yaml_load_file(const char *path, const struct common_yaml_limits *limits,
                                     struct common_yaml_docs *out, struct common_error *err)
{
    struct loader L;
    enum common_rc rc;
    FILE *f;

    memset(&L, 0, sizeof(L));
    memset(out, 0, sizeof(*out));
    if (strcmp(path, "-") == 0) {
        f = stdin;
        L.name = "<stdin>";
    } else {
        f = fopen(path, "rb");
        if (!f) {
            if (errno == ENOENT)
                return common_error_set(err, COMMON_ENOTFOUND, "%s: no such file", path);
            return common_error_set(err, COMMON_EIO, "%s: cannot open: %s", path, strerror(errno));
        }
        L.name = path;
    }
    L.lim = effective_limits(limits);
    L.out = out;
    L.err = err;
    L.src.f = f;
    rc = load_src(&L);
    if (f != stdin)
        fclose(f);
    return rc;
}

int common_yaml_locate(const struct common_yaml_docs *d, const json_t *node, int *line, int *col)
{
    const struct pos_slot *s = d ? pos_get(d->pos, node) : NULL;

    if (!s || !node || is_singleton(node))
        return -1;
    *line = s->line > INT32_MAX ? INT32_MAX : (int)s->line;
    *col = s->col > INT32_MAX ? INT32_MAX : (int)s->col;
    return 0;
}

int common_yaml_locate_key(const struct common_yaml_docs *d, json_t *object, const char *key,
                           int *line, int *col)
{
    const struct pos_slot *s;
    void *it;

    if (!d || !json_is_object(object) || !key)
        return -1;
    it = json_object_iter_at(object, key);
    s = it ? pos_get(d->pos, json_object_iter_key(it)) : NULL;
    if (!s)
        return -1;
    *line = s->line > INT32_MAX ? INT32_MAX : (int)s->line;
    *col = s->col > INT32_MAX ? INT32_MAX : (int)s->col;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Emitting.                                                                                   */

struct emitter {
    yaml_emitter_t em;
    struct common_buf *out;
    struct common_error *err;
    enum common_rc rc;
};

static int emit_write(void *data, unsigned char *buffer, size_t size)
{
    struct emitter *e = data;
    enum common_rc rc = common_buf_append(e->out, buffer, size, e->err);

    if (rc) {
        e->rc = rc;
        return 0;
    }
    return 1;
}

static enum common_rc emit_failed(struct emitter *e)
{
    if (e->rc)
        return e->rc;
    if (e->em.error == YAML_MEMORY_ERROR)
        return e->rc = common_error_set(e->err, COMMON_ENOMEM, "out of memory");
    return e->rc = common_error_set(e->err, COMMON_EINVAL, "cannot write YAML: %s",
                                    e->em.problem ? e->em.problem : "emitter error");
}

/* Hand ev to the emitter (which owns it from here on). */
static enum common_rc emit_ev(struct emitter *e, yaml_event_t *ev)
{
    if (!yaml_emitter_emit(&e->em, ev))
        return emit_failed(e);
    return COMMON_OK;
}

static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char c = s[i];
        size_t w, k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            w = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            w = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            w = 4, cp = c & 0x07;
        else
            return 0;
        if (n - i < w)
            return 0;
        for (k = 1; k < w; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((w == 3 && cp < 0x800) || (w == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) ||
            cp > 0x10FFFF)
            return 0;
        i += w;
    }
    return 1;
}

/* The style that makes s[0..n) read back as the same string. -1 when out of memory. */
static int string_style(const char *s, size_t n, yaml_scalar_style_t *style)
{
    struct resolved r;
    size_t i;
    int rc, newline = 0;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        /* line breaks other than \n are folded or normalised in block and plain styles */
        if (c == '\r' || (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] == 0x85) ||
            (c == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
             ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9))) {
            *style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
            return 0;
        }
        if (c == '\n')
            newline = 1;
    }
    if (newline) {
        *style = YAML_LITERAL_SCALAR_STYLE; /* libyaml falls back to "..." when it must */
        return 0;
    }
    rc = resolve_plain(s, n, &r);
    if (rc == RES_NOMEM)
        return -1;
    /* "1e400" stays a string here, but other readers take it for a float */
    if (rc == RES_RANGE || r.kind != R_STR || looks_special(s, n) || yaml_style_float(s, n))
        *style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    else
        *style = YAML_PLAIN_SCALAR_STYLE; /* libyaml quotes when plain would not read back */
    return 0;
}

static enum common_rc emit_scalar(struct emitter *e, const char *s, size_t n,
                                  yaml_scalar_style_t style)
{
    yaml_event_t ev;

    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)n, 1, 1, style))
        return e->rc = common_error_set(e->err, COMMON_ENOMEM, "out of memory");
    return emit_ev(e, &ev);
}

static enum common_rc emit_string(struct emitter *e, const char *s, size_t n)
{
    yaml_scalar_style_t style;

    if (n > INT32_MAX)
        return e->rc = common_error_set(e->err, COMMON_ETOOBIG,
                                        "a string of %zu bytes is too "
                                        "long to write as YAML",
                                        n);
    if (!utf8_valid((const unsigned char *)s, n))
        return e->rc = common_error_set(e->err, COMMON_EINVAL, "a string is not valid UTF-8");
    if (string_style(s, n, &style))
        return e->rc = common_error_set(e->err, COMMON_ENOMEM, "out of memory");
    return emit_scalar(e, s, n, style);
}

/*
 * The shortest text that reads back as the same double, always with a '.' or an exponent so it
 * reads back as a real: fixed notation for exponents -5..14 ("1000.0", "0.001"), else "1e+20".
 */
static void format_real(double d, char *buf, size_t size)
{
    char e[40];
    int p, exp10;
    const char *x;

    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof(e), "%.*e", p - 1, d);
        if (strtod(e, NULL) == d)
            break;
    }
    x = strchr(e, 'e');
    exp10 = x ? (int)strtol(x + 1, NULL, 10) : 0;
    if (exp10 >= -5 && exp10 < 15) {
        snprintf(buf, size, "%.*f", p - 1 - exp10 > 0 ? p - 1 - exp10 : 0, d);
        if (strtod(buf, NULL) != d)
            snprintf(buf, size, "%s", e);
    } else {
        snprintf(buf, size, "%s", e);
    }
    if (!strpbrk(buf, ".eE"))
        snprintf(buf + strlen(buf), size - strlen(buf), ".0");
}

static enum common_rc emit_leaf(struct emitter *e, const json_t *v)
{
    char num[64];

    switch (json_typeof(v)) {
    case JSON_STRING:
        return emit_string(e, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        format_real(json_real_value(v), num, sizeof(num));
        break;
    case JSON_TRUE:
        snprintf(num, sizeof(num), "true");
        break;
    case JSON_FALSE:
        snprintf(num, sizeof(num), "false");
        break;
    default:
        snprintf(num, sizeof(num), "null");
        break;
    }
    return emit_scalar(e, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
}

struct eframe {
    const json_t *node;
    void *iter;   /* objects */
    size_t index; /* arrays */
};

/* Open v: a container gets its start event and a frame; a leaf is written at once. */
static enum common_rc emit_open(struct emitter *e, const json_t *v, struct eframe **stack,
                                size_t *depth, size_t *cap)
{
    yaml_event_t ev;
    int ok;

    if (!json_is_object(v) && !json_is_array(v))
        return emit_leaf(e, v);
    if (*depth >= EMIT_MAX_DEPTH)
        return e->rc = common_error_set(e->err, COMMON_EINVAL,
                                        "nesting deeper than %d levels (a cycle?)", EMIT_MAX_DEPTH);
    if (*depth == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        struct eframe *ns = common_realloc(*stack, ncap * sizeof(*ns));
        if (!ns)
            return e->rc = common_error_set(e->err, COMMON_ENOMEM, "out of memory");
        *stack = ns;
        *cap = ncap;
    }
    if (json_is_object(v))
        ok = yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
    else
        ok = yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
    if (!ok)
        return e->rc = common_error_set(e->err, COMMON_ENOMEM, "out of memory");
    (*stack)[*depth].node = v;
    (*stack)[*depth].iter = json_is_object(v) ? json_object_iter((json_t *)v) : NULL;
    (*stack)[*depth].index = 0;
    (*depth)++;
    return emit_ev(e, &ev);
}

static enum common_rc emit_value(struct emitter *e, const json_t *value)
{
    struct eframe *stack = NULL;
    size_t depth = 0, cap = 0;
    enum common_rc rc = emit_open(e, value, &stack, &depth, &cap);

    while (!rc && depth) {
        struct eframe *f = &stack[depth - 1];
        const json_t *child = NULL;
        yaml_event_t ev;

        if (json_is_object(f->node) && f->iter) {
            const char *key = json_object_iter_key(f->iter);
            size_t klen = json_object_iter_key_len(f->iter);
            child = json_object_iter_value(f->iter);
            f->iter = json_object_iter_next((json_t *)f->node, f->iter);
            rc = emit_string(e, key, klen);
        } else if (json_is_array(f->node) && f->index < json_array_size(f->node)) {
            child = json_array_get(f->node, f->index++);
        }
        if (rc)
            break;
        if (child) {
            rc = emit_open(e, child, &stack, &depth, &cap);
            continue;
        }
        if (json_is_object(f->node) ? !yaml_mapping_end_event_initialize(&ev)
                                    : !yaml_sequence_end_event_initialize(&ev)) {
            rc = e->rc = common_error_set(e->err, COMMON_ENOMEM, "out of memory");
            break;
        }
        depth--;
        rc = emit_ev(e, &ev);
    }
    common_free(stack);
    return rc;
}

enum common_rc common_yaml_emit(const json_t *value, struct common_buf *out,
                                struct common_error *err)
{
    struct emitter e;
    yaml_event_t ev;
    size_t old_len = out->len;
    enum common_rc rc;

    memset(&e, 0, sizeof(e));
    e.out = out;
    e.err = err;
    if (!value)
        return common_error_set(err, COMMON_EINVAL, "no value to write");
    if (!yaml_emitter_initialize(&e.em))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    yaml_emitter_set_output(&e.em, emit_write, &e);
    yaml_emitter_set_unicode(&e.em, 1);
    yaml_emitter_set_indent(&e.em, 2);
    yaml_emitter_set_width(&e.em, -1);
    yaml_emitter_set_break(&e.em, YAML_LN_BREAK);

    if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING))
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
    else
        rc = emit_ev(&e, &ev);
    if (!rc) {
        if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1))
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        else
            rc = emit_ev(&e, &ev);
    }
    if (!rc)
        rc = emit_value(&e, value);
    if (!rc) {
        if (!yaml_document_end_event_initialize(&ev, 1))
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        else
            rc = emit_ev(&e, &ev);
    }
    if (!rc) {
        if (!yaml_stream_end_event_initialize(&ev))
            rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        else
            rc = emit_ev(&e, &ev);
    }
    if (!rc && !yaml_emitter_flush(&e.em))
        rc = emit_failed(&e);
    yaml_emitter_delete(&e.em);
    if (rc && out->data) { /* leave out as it was */
        out->len = old_len;
        out->data[old_len] = '\0';
    }
    return rc;
}
