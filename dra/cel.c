/*
 * dra/cel.c - the CEL subset of DRA device selectors: a recursive-descent parser with a small
 * static type check, and a tree-walking evaluator. See dra/cel.h for the subset and its rules.
 */
#include "dra/cel.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define CEL_MAX_LEN 10240 /* resource.k8s.io/v1 CELSelectorExpressionMaxLength */
#define CEL_MAX_DEPTH 64

enum node_kind {
    N_STR = 1,
    N_INT,
    N_BOOL,
    N_LIST,
    N_QTY,
    N_VER,
    N_DRIVER,
    N_ATTRS,
    N_CAPS,
    N_INDEX,
    N_HAS,
    N_NOT,
    N_AND,
    N_OR,
    N_CMP,
    N_IN,
    N_METHOD
};

/* static types */
enum ty { T_BOOL = 1, T_INT, T_STR, T_QTY, T_VER, T_LIST, T_DYN, T_ADOMS, T_ADOM, T_CDOMS, T_CDOM };

enum cmp_op { OP_EQ = 1, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };
enum method { M_STARTS = 1, M_ENDS, M_CONTAINS, M_COMPARE, M_GT, M_LT };

struct dra_cel_node {
    enum node_kind kind;
    enum ty ty;
    int op; /* cmp_op or method */
    int64_t i;
    const char *s;
    struct common_quantity q;
    struct dra_semver v;
    struct dra_cel_node *l, *r;
    struct dra_cel_node **items; /* N_LIST */
    size_t n_items;
};

/* ---- semver ---- */

static int semver_num(const char **p, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (!isdigit((unsigned char)*s) || (s[0] == '0' && isdigit((unsigned char)s[1])))
        return -1;
    while (isdigit((unsigned char)*s)) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s++ - '0');
    }
    *out = v;
    *p = s;
    return 0;
}

static int semver_ident_ok(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t k = 0; k < n; k++)
        if (!isalnum((unsigned char)s[k]) && s[k] != '-')
            return 0;
    return 1;
}

enum common_rc dra_semver_parse(const char *s, struct dra_semver *out, struct common_error *err)
{
    const char *p = s;
    memset(out, 0, sizeof(*out));
    out->pre = "";
    if (semver_num(&p, &out->major) || *p++ != '.' || semver_num(&p, &out->minor) || *p++ != '.' ||
        semver_num(&p, &out->patch))
        goto bad;
    if (*p == '-') {
        const char *start = ++p;
        while (*p && *p != '+') {
            size_t n = strcspn(p, ".+");
            if (!semver_ident_ok(p, n))
                goto bad;
            p += n;
            if (*p == '.')
                p++;
        }
        if (p == start || p[-1] == '.')
            goto bad;
        out->pre = start; /* ends at '+' or NUL: compared up to there */
    }
    if (*p == '+') {
        p++;
        if (!*p)
            goto bad;
        while (*p) {
            size_t n = strcspn(p, ".");
            if (!semver_ident_ok(p, n))
                goto bad;
            p += n;
            if (*p == '.' && !*++p)
                goto bad;
        }
    }
    if (*p)
        goto bad;
    return COMMON_OK;
bad:
    return common_error_set(err, COMMON_EINVAL,
                            "\"%s\" is not a semantic version (major.minor.patch)", s);
}

static size_t pre_len(const char *s)
{
    return strcspn(s, "+");
}

static int is_numeric(const char *s, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!isdigit((unsigned char)s[k]))
            return 0;
    return n > 0;
}

int dra_semver_cmp(const struct dra_semver *a, const struct dra_semver *b)
{
    const char *pa = a->pre, *pb = b->pre;
    size_t la = pre_len(pa), lb = pre_len(pb);
    if (a->major != b->major)
        return a->major < b->major ? -1 : 1;
    if (a->minor != b->minor)
        return a->minor < b->minor ? -1 : 1;
    if (a->patch != b->patch)
        return a->patch < b->patch ? -1 : 1;
    if (la == 0 || lb == 0)
        return la == lb ? 0 : (la == 0 ? 1 : -1); /* a release ranks above its pre-releases */
    while (la > 0 && lb > 0) {
        size_t na = strcspn(pa, ".+"), nb = strcspn(pb, ".+");
        int numa = is_numeric(pa, na), numb = is_numeric(pb, nb), c;
        if (numa && numb)
            c = na != nb ? (na < nb ? -1 : 1) : memcmp(pa, pb, na);
        else if (numa != numb)
            c = numa ? -1 : 1;
        else {
            c = memcmp(pa, pb, na < nb ? na : nb);
            if (c == 0 && na != nb)
                c = na < nb ? -1 : 1;
        }
        if (c != 0)
            return c < 0 ? -1 : 1;
        pa += na;
        pb += nb;
        la -= na;
        lb -= nb;
        if (la > 0 && *pa == '.') {
            pa++;
            la--;
        }
        if (lb > 0 && *pb == '.') {
            pb++;
            lb--;
        }
    }
    return la == lb ? 0 : (la == 0 ? -1 : 1);
}

/* ---- lexer and parser ---- */

enum tok { T_EOF = 0, TK_ID, TK_STR, TK_INT, TK_OP };

struct parser {
    struct common_arena *a;
    const char *expr, *p;
    enum tok tok;
    const char *tstart;
    size_t tlen;
    char *sval; /* TK_STR: unescaped */
    int64_t ival;
    int depth;
    struct common_error *err;
    enum common_rc rc;
};

static int fail(struct parser *ps, enum common_rc code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct parser *ps, enum common_rc code, const char *fmt, ...)
{
    char detail[256];
    va_list ap;
    if (ps->rc != COMMON_OK)
        return -1;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    ps->rc = common_error_set(ps->err, code, "CEL expression \"%s\": %s (at offset %d)", ps->expr,
                              detail, (int)(ps->tstart - ps->expr));
    return -1;
}

static int unsupported(struct parser *ps, const char *what)
{
    return fail(ps, COMMON_EUNSUPPORTED, "%s is not supported by trainsched's CEL subset", what);
}

/* "<kind><name><suffix> is not supported", the name cut at 60 characters */
static int unsupported_named(struct parser *ps, const char *kind, const char *name, size_t len,
                             const char *suffix)
{
    char what[128];
    snprintf(what, sizeof(what), "%s%.*s%s", kind, (int)(len < 60 ? len : 60), name, suffix);
    return unsupported(ps, what);
}

static int is_tok(const struct parser *ps, const char *op)
{
    return ps->tok == TK_OP && ps->tlen == strlen(op) && memcmp(ps->tstart, op, ps->tlen) == 0;
}

static int is_id(const struct parser *ps, const char *id)
{
    return ps->tok == TK_ID && ps->tlen == strlen(id) && memcmp(ps->tstart, id, ps->tlen) == 0;
}

static int lex_string(struct parser *ps)
{
    char q = *ps->p;
    const char *s = ps->p + 1;
    size_t n = 0;
    char *out;
    if (s[0] == q && s[1] == q)
        return unsupported(ps, "a triple-quoted string");
    out = common_arena_alloc(ps->a, strlen(s) + 1);
    if (!out) {
        ps->rc = common_error_set(ps->err, COMMON_ENOMEM, "out of memory parsing CEL");
        return -1;
    }
    while (*s && *s != q) {
        char c = *s++;
        if (c == '\\') {
            switch (*s) {
            case '\\':
            case '\'':
            case '"':
                c = *s;
                break;
            case 'n':
                c = '\n';
                break;
            case 't':
                c = '\t';
                break;
            default:
                return unsupported(ps, "this string escape sequence");
            }
            s++;
        } else if (c == '\n') {
            return fail(ps, COMMON_EINVAL, "%s", "newline in a string literal");
        }
        out[n++] = c;
    }
    if (*s != q)
        return fail(ps, COMMON_EINVAL, "%s", "unterminated string literal");
    out[n] = '\0';
    ps->sval = out;
    ps->tok = TK_STR;
    ps->p = s + 1;
    ps->tlen = (size_t)(ps->p - ps->tstart);
    return 0;
}

static int next(struct parser *ps)
{
    static const char *ops[] = {"==", "!=", "<=", ">=", "&&", "||", "<", ">",
                                "!",  "(",  ")",  "[",  "]",  ",",  ".", "-"};
    const char *p = ps->p;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    ps->tstart = ps->p = p;
    if (!*p) {
        ps->tok = T_EOF;
        ps->tlen = 0;
        return 0;
    }
    if (isalpha((unsigned char)*p) || *p == '_') {
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        if ((*p == '\'' || *p == '"') && p - ps->tstart <= 2)
            return unsupported(ps, "a raw or bytes string literal");
        ps->tok = TK_ID;
        ps->tlen = (size_t)(p - ps->tstart);
        ps->p = p;
        return 0;
    }
    if (*p == '\'' || *p == '"')
        return lex_string(ps);
    if (isdigit((unsigned char)*p)) {
        int64_t v = 0;
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
            return unsupported(ps, "a hexadecimal literal");
        while (isdigit((unsigned char)*p)) {
            if (v > (INT64_MAX - 9) / 10)
                return fail(ps, COMMON_EINVAL, "%s", "integer literal out of range");
            v = v * 10 + (*p++ - '0');
        }
        if (*p == '.' || *p == 'e' || *p == 'E')
            return unsupported(ps, "a double literal");
        if (*p == 'u' || *p == 'U')
            return unsupported(ps, "an unsigned literal");
        ps->tok = TK_INT;
        ps->ival = v;
        ps->tlen = (size_t)(p - ps->tstart);
        ps->p = p;
        return 0;
    }
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        size_t n = strlen(ops[k]);
        if (strncmp(p, ops[k], n) == 0) {
            ps->tok = TK_OP;
            ps->tlen = n;
            ps->p = p + n;
            return 0;
        }
    }
    switch (*p) {
    case '?':
    case ':':
        return unsupported(ps, "the conditional operator ?:");
    case '+':
    case '*':
    case '/':
    case '%':
        return unsupported(ps, "arithmetic");
    case '{':
        return unsupported(ps, "a map or message literal");
    default:
        return fail(ps, COMMON_EINVAL, "%s", "unexpected character");
    }
}

static struct dra_cel_node *mk(struct parser *ps, enum node_kind k, enum ty t)
{
    struct dra_cel_node *n = common_arena_alloc(ps->a, sizeof(*n));
    if (!n) {
        ps->rc = common_error_set(ps->err, COMMON_ENOMEM, "out of memory parsing CEL");
        return NULL;
    }
    n->kind = k;
    n->ty = t;
    return n;
}

static int expect(struct parser *ps, const char *op)
{
    if (!is_tok(ps, op)) {
        char what[16];
        snprintf(what, sizeof(what), "'%s'", op);
        return fail(ps, COMMON_EINVAL, "expected %s", what);
    }
    return next(ps);
}

static struct dra_cel_node *parse_or(struct parser *ps);

static const char *ty_name(enum ty t)
{
    switch (t) {
    case T_BOOL:
        return "bool";
    case T_INT:
        return "int";
    case T_STR:
        return "string";
    case T_QTY:
        return "quantity";
    case T_VER:
        return "semver";
    case T_LIST:
        return "list";
    case T_DYN:
        return "attribute value";
    case T_ADOMS:
    case T_ADOM:
    case T_CDOMS:
    case T_CDOM:
        return "map";
    }
    return "?";
}

/* a string key: a literal, or an expression of type string/dyn */
static struct dra_cel_node *index_map(struct parser *ps, struct dra_cel_node *m,
                                      struct dra_cel_node *key)
{
    static const enum ty result[] = {
        [T_ADOMS] = T_ADOM, [T_ADOM] = T_DYN, [T_CDOMS] = T_CDOM, [T_CDOM] = T_QTY};
    struct dra_cel_node *n;
    if (m->ty != T_ADOMS && m->ty != T_ADOM && m->ty != T_CDOMS && m->ty != T_CDOM) {
        unsupported(ps, m->ty == T_LIST ? "indexing a list" : "selecting a field of this value");
        return NULL;
    }
    if (key->ty != T_STR && key->ty != T_DYN) {
        fail(ps, COMMON_EINVAL, "map keys are strings, not %s", ty_name(key->ty));
        return NULL;
    }
    if (!(n = mk(ps, N_INDEX, result[m->ty])))
        return NULL;
    n->l = m;
    n->r = key;
    return n;
}

static struct dra_cel_node *str_node(struct parser *ps, const char *s, size_t len)
{
    struct dra_cel_node *n = mk(ps, N_STR, T_STR);
    if (n && !(n->s = common_arena_strndup(ps->a, s, len))) {
        ps->rc = common_error_set(ps->err, COMMON_ENOMEM, "out of memory parsing CEL");
        return NULL;
    }
    return n;
}

static int parse_args(struct parser *ps, struct dra_cel_node **args, size_t max, size_t *n)
{
    *n = 0;
    if (next(ps)) /* past '(' */
        return -1;
    while (!is_tok(ps, ")")) {
        if (*n == max)
            return fail(ps, COMMON_EINVAL, "%s", "too many arguments");
        if (!(args[(*n)++] = parse_or(ps)))
            return -1;
        if (is_tok(ps, ","))
            if (next(ps))
                return -1;
    }
    return next(ps);
}

static struct dra_cel_node *parse_method(struct parser *ps, struct dra_cel_node *recv,
                                         const char *name, size_t len)
{
    static const struct {
        const char *name;
        enum method m;
    } tab[] = {{"startsWith", M_STARTS}, {"endsWith", M_ENDS},    {"contains", M_CONTAINS},
               {"compareTo", M_COMPARE}, {"isGreaterThan", M_GT}, {"isLessThan", M_LT}};
    struct dra_cel_node *args[2], *n;
    size_t nargs, k;
    for (k = 0; k < sizeof(tab) / sizeof(tab[0]); k++)
        if (strlen(tab[k].name) == len && memcmp(tab[k].name, name, len) == 0)
            break;
    if (k == sizeof(tab) / sizeof(tab[0])) {
        unsupported_named(ps, "the function ", name, len, "()");
        return NULL;
    }
    if (parse_args(ps, args, 2, &nargs))
        return NULL;
    if (nargs != 1) {
        fail(ps, COMMON_EINVAL, "%s() takes one argument", tab[k].name);
        return NULL;
    }
    if (tab[k].m <= M_CONTAINS) {
        if ((recv->ty != T_STR && recv->ty != T_DYN) ||
            (args[0]->ty != T_STR && args[0]->ty != T_DYN)) {
            fail(ps, COMMON_EINVAL, "found no matching overload for %s() (strings only)",
                 tab[k].name);
            return NULL;
        }
    } else if ((recv->ty != T_QTY && recv->ty != T_VER && recv->ty != T_DYN) ||
               (args[0]->ty != T_QTY && args[0]->ty != T_VER && args[0]->ty != T_DYN) ||
               (recv->ty != T_DYN && args[0]->ty != T_DYN && recv->ty != args[0]->ty)) {
        fail(ps, COMMON_EINVAL, "found no matching overload for %s() (quantities or versions)",
             tab[k].name);
        return NULL;
    }
    if (!(n = mk(ps, N_METHOD, tab[k].m == M_COMPARE ? T_INT : T_BOOL)))
        return NULL;
    n->op = (int)tab[k].m;
    n->l = recv;
    n->r = args[0];
    return n;
}

static struct dra_cel_node *parse_global_call(struct parser *ps, const char *name, size_t len)
{
    struct dra_cel_node *args[2], *n;
    size_t nargs;
    int is_q = len == 8 && memcmp(name, "quantity", 8) == 0;
    int is_v = len == 6 && memcmp(name, "semver", 6) == 0;
    int is_has = len == 3 && memcmp(name, "has", 3) == 0;
    if (!is_q && !is_v && !is_has) {
        unsupported_named(ps, "the function ", name, len, "()");
        return NULL;
    }
    if (parse_args(ps, args, 2, &nargs))
        return NULL;
    if (nargs != 1) {
        fail(ps, COMMON_EINVAL, "%s", "quantity(), semver() and has() take one argument");
        return NULL;
    }
    if (is_has) {
        /* has() takes a field selection; m.f and m["f"] are the same node here */
        if (args[0]->kind != N_INDEX || args[0]->r->kind != N_STR) {
            fail(ps, COMMON_EINVAL, "%s",
                 "has() needs a field selection such as has(device.attributes[\"d\"].name)");
            return NULL;
        }
        if (!(n = mk(ps, N_HAS, T_BOOL)))
            return NULL;
        n->l = args[0];
        return n;
    }
    if (args[0]->kind != N_STR) {
        unsupported(ps, "quantity() or semver() of anything but a string literal");
        return NULL;
    }
    if (!(n = mk(ps, is_q ? N_QTY : N_VER, is_q ? T_QTY : T_VER)))
        return NULL;
    if (is_q) {
        struct common_error e;
        if (common_quantity_parse(args[0]->s, &n->q, &e) != COMMON_OK) {
            fail(ps, COMMON_EINVAL, "%s", e.msg);
            return NULL;
        }
    } else {
        struct common_error e;
        if (dra_semver_parse(args[0]->s, &n->v, &e) != COMMON_OK) {
            fail(ps, COMMON_EINVAL, "%s", e.msg);
            return NULL;
        }
    }
    return n;
}

static struct dra_cel_node *parse_primary(struct parser *ps)
{
    struct dra_cel_node *n = NULL;
    if (ps->tok == TK_STR) {
        if ((n = mk(ps, N_STR, T_STR)))
            n->s = ps->sval;
        return n && next(ps) == 0 ? n : NULL;
    }
    if (ps->tok == TK_INT) {
        if ((n = mk(ps, N_INT, T_INT)))
            n->i = ps->ival;
        return n && next(ps) == 0 ? n : NULL;
    }
    if (is_tok(ps, "(")) {
        if (next(ps) || !(n = parse_or(ps)) || expect(ps, ")"))
            return NULL;
        return n;
    }
    if (is_tok(ps, "[")) {
        struct dra_cel_node *items[64];
        size_t cnt = 0;
        if (next(ps))
            return NULL;
        while (!is_tok(ps, "]")) {
            if (cnt == 64) {
                unsupported(ps, "a list literal of more than 64 items");
                return NULL;
            }
            if (!(items[cnt] = parse_or(ps)))
                return NULL;
            if (items[cnt]->ty != T_STR && items[cnt]->ty != T_INT && items[cnt]->ty != T_BOOL &&
                items[cnt]->ty != T_QTY && items[cnt]->ty != T_VER && items[cnt]->ty != T_DYN) {
                unsupported(ps, "a list of lists or maps");
                return NULL;
            }
            cnt++;
            if (is_tok(ps, ",")) {
                if (next(ps))
                    return NULL;
            } else if (!is_tok(ps, "]")) {
                fail(ps, COMMON_EINVAL, "%s", "expected ',' or ']'");
                return NULL;
            }
        }
        if (!(n = mk(ps, N_LIST, T_LIST)) ||
            !(n->items = common_arena_alloc(ps->a, (cnt ? cnt : 1) * sizeof(*n->items)))) {
            ps->rc = common_error_set(ps->err, COMMON_ENOMEM, "out of memory parsing CEL");
            return NULL;
        }
        memcpy(n->items, items, cnt * sizeof(*items));
        n->n_items = cnt;
        return next(ps) == 0 ? n : NULL;
    }
    if (ps->tok == TK_ID) {
        const char *name = ps->tstart;
        size_t len = ps->tlen;
        if (is_id(ps, "true") || is_id(ps, "false")) {
            if ((n = mk(ps, N_BOOL, T_BOOL)))
                n->i = is_id(ps, "true");
            return n && next(ps) == 0 ? n : NULL;
        }
        if (is_id(ps, "null")) {
            unsupported(ps, "null");
            return NULL;
        }
        if (is_id(ps, "device")) {
            if (next(ps))
                return NULL;
            if (!is_tok(ps, ".")) {
                unsupported(ps, "device used other than through .driver, .attributes or .capacity");
                return NULL;
            }
            if (next(ps))
                return NULL;
            if (is_id(ps, "driver"))
                n = mk(ps, N_DRIVER, T_STR);
            else if (is_id(ps, "attributes"))
                n = mk(ps, N_ATTRS, T_ADOMS);
            else if (is_id(ps, "capacity"))
                n = mk(ps, N_CAPS, T_CDOMS);
            else {
                unsupported_named(ps, "the device field ", ps->tstart, ps->tlen, "");
                return NULL;
            }
            return n && next(ps) == 0 ? n : NULL;
        }
        if (next(ps))
            return NULL;
        if (is_tok(ps, "("))
            return parse_global_call(ps, name, len);
        unsupported_named(ps, "the identifier ", name, len, "");
        return NULL;
    }
    if (ps->tok == T_EOF)
        fail(ps, COMMON_EINVAL, "%s", "unexpected end of expression");
    else
        fail(ps, COMMON_EINVAL, "%s", "unexpected token");
    return NULL;
}

static struct dra_cel_node *parse_member(struct parser *ps)
{
    struct dra_cel_node *n = parse_primary(ps);
    while (n) {
        if (is_tok(ps, ".")) {
            const char *name;
            size_t len;
            if (next(ps))
                return NULL;
            if (ps->tok != TK_ID) {
                fail(ps, COMMON_EINVAL, "%s", "expected a field name after '.'");
                return NULL;
            }
            name = ps->tstart;
            len = ps->tlen;
            if (next(ps))
                return NULL;
            if (is_tok(ps, "(")) {
                n = parse_method(ps, n, name, len);
            } else {
                struct dra_cel_node *key = str_node(ps, name, len);
                n = key ? index_map(ps, n, key) : NULL;
            }
        } else if (is_tok(ps, "[")) {
            struct dra_cel_node *key;
            if (next(ps) || !(key = parse_or(ps)) || expect(ps, "]"))
                return NULL;
            n = index_map(ps, n, key);
        } else {
            break;
        }
    }
    return n;
}

static struct dra_cel_node *parse_unary(struct parser *ps)
{
    struct dra_cel_node *n, *c;
    if (++ps->depth > CEL_MAX_DEPTH) {
        unsupported(ps, "nesting deeper than 64");
        return NULL;
    }
    if (is_tok(ps, "!")) {
        if (next(ps) || !(c = parse_unary(ps)))
            return NULL;
        if (c->ty != T_BOOL && c->ty != T_DYN) {
            fail(ps, COMMON_EINVAL, "'!' applies to bool, not %s", ty_name(c->ty));
            return NULL;
        }
        if (!(n = mk(ps, N_NOT, T_BOOL)))
            return NULL;
        n->l = c;
    } else if (is_tok(ps, "-")) {
        if (next(ps))
            return NULL;
        if (ps->tok != TK_INT) {
            unsupported(ps, "unary minus on anything but an integer literal");
            return NULL;
        }
        if (!(n = mk(ps, N_INT, T_INT)))
            return NULL;
        n->i = -ps->ival;
        if (next(ps))
            return NULL;
    } else {
        n = parse_member(ps);
    }
    ps->depth--;
    return n;
}

static int cmp_op_of(const struct parser *ps)
{
    static const char *ops[] = {NULL, "==", "!=", "<", "<=", ">", ">="};
    for (int k = 1; k <= OP_GE; k++)
        if (is_tok(ps, ops[k]))
            return k;
    return 0;
}

static int scalar(enum ty t)
{
    return t == T_BOOL || t == T_INT || t == T_STR || t == T_QTY || t == T_VER || t == T_DYN;
}

static struct dra_cel_node *parse_rel(struct parser *ps)
{
    struct dra_cel_node *l = parse_unary(ps), *r, *n;
    int op;
    while (l) {
        if ((op = cmp_op_of(ps))) {
            if (next(ps) || !(r = parse_unary(ps)))
                return NULL;
            if (!scalar(l->ty) || !scalar(r->ty)) {
                unsupported(ps, "comparing lists or maps");
                return NULL;
            }
            if (op >= OP_LT &&
                (l->ty == T_QTY || l->ty == T_VER || r->ty == T_QTY || r->ty == T_VER)) {
                fail(ps, COMMON_EINVAL, "%s",
                     "found no matching overload for an ordering operator on a quantity or "
                     "version (Kubernetes CEL needs compareTo, isGreaterThan or isLessThan)");
                return NULL;
            }
            if (!(n = mk(ps, N_CMP, T_BOOL)))
                return NULL;
            n->op = op;
        } else if (is_id(ps, "in")) {
            if (next(ps) || !(r = parse_unary(ps)))
                return NULL;
            if (r->ty != T_LIST && r->ty != T_ADOMS && r->ty != T_ADOM && r->ty != T_CDOMS &&
                r->ty != T_CDOM) {
                fail(ps, COMMON_EINVAL, "'in' needs a list or map on its right, not %s",
                     ty_name(r->ty));
                return NULL;
            }
            if (!(n = mk(ps, N_IN, T_BOOL)))
                return NULL;
        } else {
            break;
        }
        n->l = l;
        n->r = r;
        l = n;
    }
    return l;
}

static struct dra_cel_node *parse_logic(struct parser *ps, int is_or)
{
    struct dra_cel_node *l = is_or ? parse_logic(ps, 0) : parse_rel(ps), *r, *n;
    while (l && is_tok(ps, is_or ? "||" : "&&")) {
        if (next(ps) || !(r = is_or ? parse_logic(ps, 0) : parse_rel(ps)))
            return NULL;
        if ((l->ty != T_BOOL && l->ty != T_DYN) || (r->ty != T_BOOL && r->ty != T_DYN)) {
            fail(ps, COMMON_EINVAL, "%s", "'&&' and '||' apply to bools");
            return NULL;
        }
        if (!(n = mk(ps, is_or ? N_OR : N_AND, T_BOOL)))
            return NULL;
        n->l = l;
        n->r = r;
        l = n;
    }
    return l;
}

static struct dra_cel_node *parse_or(struct parser *ps)
{
    struct dra_cel_node *n;
    if (++ps->depth > CEL_MAX_DEPTH) {
        unsupported(ps, "nesting deeper than 64");
        return NULL;
    }
    n = parse_logic(ps, 1);
    ps->depth--;
    return n;
}

enum common_rc dra_cel_parse(struct common_arena *a, const char *expr, struct dra_cel_prog *out,
                             struct common_error *err)
{
    struct parser ps = {.a = a, .err = err, .rc = COMMON_OK};
    struct dra_cel_node *root;
    memset(out, 0, sizeof(*out));
    if (!expr)
        return common_error_set(err, COMMON_EINVAL, "CEL expression is missing");
    if (strlen(expr) > CEL_MAX_LEN)
        return common_error_set(err, COMMON_EINVAL, "CEL expression is longer than %d characters",
                                CEL_MAX_LEN);
    if (!(ps.expr = common_arena_strdup(a, expr)))
        return common_error_set(err, COMMON_ENOMEM, "out of memory parsing CEL");
    ps.p = ps.tstart = ps.expr;
    if (next(&ps) || !(root = parse_or(&ps)))
        return ps.rc != COMMON_OK ? ps.rc : common_error_set(err, COMMON_EINVAL, "CEL parse error");
    if (ps.tok != T_EOF) {
        fail(&ps, COMMON_EINVAL, "%s", "unexpected token after the expression");
        return ps.rc;
    }
    if (root->ty != T_BOOL && root->ty != T_DYN)
        return common_error_set(err, COMMON_EINVAL,
                                "CEL expression \"%s\" must evaluate to bool, not %s", expr,
                                ty_name(root->ty));
    out->expr = ps.expr;
    out->root = root;
    return COMMON_OK;
}

/* ---- evaluation ---- */

enum vk { V_BOOL = 1, V_INT, V_STR, V_QTY, V_VER, V_LIST, V_ADOMS, V_ADOM, V_CDOMS, V_CDOM };

struct val {
    enum vk k;
    int64_t i;
    const char *s;
    const struct common_quantity *q;
    const struct dra_semver *v;
    const struct dra_cel_node *list;
};

struct ev {
    const struct dra_cel_prog *prog;
    const struct dra_cel_device *dev;
    struct common_error *err;
};

static int rt_err(struct ev *e, const char *msg, const char *arg)
{
    common_error_set(e->err, COMMON_EINVAL, "CEL expression \"%s\": %s%s", e->prog->expr, msg,
                     arg ? arg : "");
    return -1;
}

static int eval(struct ev *e, const struct dra_cel_node *n, struct val *out);

static int attr_val(const struct dra_attr *at, struct val *out)
{
    memset(out, 0, sizeof(*out));
    switch (at->type) {
    case DRA_ATTR_INT:
        out->k = V_INT;
        out->i = at->i;
        break;
    case DRA_ATTR_BOOL:
        out->k = V_BOOL;
        out->i = at->b;
        break;
    case DRA_ATTR_STRING:
        out->k = V_STR;
        out->s = at->s;
        break;
    case DRA_ATTR_VERSION:
        out->k = V_VER;
        out->v = &at->v;
        break;
    }
    return 0;
}

/* lookup: returns 1 found, 0 missing */
static int map_get(struct ev *e, const struct val *m, const char *key, struct val *out)
{
    const struct dra_cel_device *d = e->dev;
    memset(out, 0, sizeof(*out));
    switch (m->k) {
    case V_ADOMS:
    case V_CDOMS:
        out->k = m->k == V_ADOMS ? V_ADOM : V_CDOM;
        out->s = key;
        /* a domain without entries is an empty map, so a lookup in it reports the name */
        if (m->k == V_ADOMS) {
            for (size_t k = 0; k < d->n_attrs; k++)
                if (strcmp(d->attrs[k].domain, key) == 0)
                    return 1;
        } else {
            for (size_t k = 0; k < d->n_caps; k++)
                if (strcmp(d->caps[k].domain, key) == 0)
                    return 1;
        }
        return 0;
    case V_ADOM:
        for (size_t k = 0; k < d->n_attrs; k++)
            if (strcmp(d->attrs[k].domain, m->s) == 0 && strcmp(d->attrs[k].name, key) == 0)
                return attr_val(&d->attrs[k], out) == 0;
        return 0;
    case V_CDOM:
        for (size_t k = 0; k < d->n_caps; k++)
            if (strcmp(d->caps[k].domain, m->s) == 0 && strcmp(d->caps[k].name, key) == 0) {
                out->k = V_QTY;
                out->q = &d->caps[k].value;
                return 1;
            }
        return 0;
    default:
        return 0;
    }
}

/* equality; heterogeneous values are unequal, as in Kubernetes' CEL */
static int val_eq(const struct val *a, const struct val *b)
{
    if (a->k != b->k)
        return 0;
    switch (a->k) {
    case V_BOOL:
    case V_INT:
        return a->i == b->i;
    case V_STR:
        return strcmp(a->s, b->s) == 0;
    case V_QTY:
        return common_quantity_cmp(a->q, b->q) == 0;
    case V_VER:
        return dra_semver_cmp(a->v, b->v) == 0;
    default:
        return 0;
    }
}

static int eval_bool(struct ev *e, const struct dra_cel_node *n, int *b)
{
    struct val v;
    if (eval(e, n, &v))
        return -1;
    if (v.k != V_BOOL)
        return rt_err(e, "no such overload: expected a bool", NULL);
    *b = (int)v.i;
    return 0;
}

static int eval_logic(struct ev *e, const struct dra_cel_node *n, struct val *out)
{
    /* CEL's && and || are commutative over errors: false && error is false */
    int is_or = n->kind == N_OR, l, r, lerr, rerr;
    struct common_error saved;
    lerr = eval_bool(e, n->l, &l);
    if (!lerr && l == is_or) {
        out->k = V_BOOL;
        out->i = is_or;
        return 0;
    }
    if (lerr && e->err)
        saved = *e->err;
    rerr = eval_bool(e, n->r, &r);
    if (!rerr && r == is_or) {
        out->k = V_BOOL;
        out->i = is_or;
        return 0;
    }
    if (lerr) {
        if (e->err)
            *e->err = saved;
        return -1;
    }
    if (rerr)
        return -1;
    out->k = V_BOOL;
    out->i = !is_or;
    return 0;
}

static int eval_method(struct ev *e, const struct dra_cel_node *n, struct val *out)
{
    struct val a, b;
    int c;
    if (eval(e, n->l, &a) || eval(e, n->r, &b))
        return -1;
    out->k = V_BOOL;
    if (n->op <= M_CONTAINS) {
        size_t la, lb;
        if (a.k != V_STR || b.k != V_STR)
            return rt_err(e, "no such overload for a string function", NULL);
        la = strlen(a.s);
        lb = strlen(b.s);
        if (n->op == M_STARTS)
            out->i = lb <= la && memcmp(a.s, b.s, lb) == 0;
        else if (n->op == M_ENDS)
            out->i = lb <= la && memcmp(a.s + la - lb, b.s, lb) == 0;
        else
            out->i = strstr(a.s, b.s) != NULL;
        return 0;
    }
    if (a.k == V_QTY && b.k == V_QTY)
        c = common_quantity_cmp(a.q, b.q);
    else if (a.k == V_VER && b.k == V_VER)
        c = dra_semver_cmp(a.v, b.v);
    else
        return rt_err(e,
                      "no such overload: compareTo, isGreaterThan and isLessThan need two "
                      "quantities or two versions",
                      NULL);
    if (n->op == M_COMPARE) {
        out->k = V_INT;
        out->i = c;
    } else {
        out->i = n->op == M_GT ? c > 0 : c < 0;
    }
    return 0;
}

static int eval(struct ev *e, const struct dra_cel_node *n, struct val *out)
{
    struct val a, b;
    int x;
    memset(out, 0, sizeof(*out));
    switch (n->kind) {
    case N_STR:
        out->k = V_STR;
        out->s = n->s;
        return 0;
    case N_INT:
        out->k = V_INT;
        out->i = n->i;
        return 0;
    case N_BOOL:
        out->k = V_BOOL;
        out->i = n->i;
        return 0;
    case N_LIST:
        out->k = V_LIST;
        out->list = n;
        return 0;
    case N_QTY:
        out->k = V_QTY;
        out->q = &n->q;
        return 0;
    case N_VER:
        out->k = V_VER;
        out->v = &n->v;
        return 0;
    case N_DRIVER:
        out->k = V_STR;
        out->s = e->dev->driver;
        return 0;
    case N_ATTRS:
        out->k = V_ADOMS;
        return 0;
    case N_CAPS:
        out->k = V_CDOMS;
        return 0;
    case N_INDEX:
        if (eval(e, n->l, &a) || eval(e, n->r, &b))
            return -1;
        if (b.k != V_STR)
            return rt_err(e, "no such overload: map keys are strings", NULL);
        if (!map_get(e, &a, b.s, out) && a.k != V_ADOMS && a.k != V_CDOMS)
            return rt_err(e, "no such key: ", b.s);
        return 0;
    case N_HAS:
        if (eval(e, n->l->l, &a) || eval(e, n->l->r, &b))
            return -1;
        out->k = V_BOOL;
        out->i = map_get(e, &a, b.s, &b);
        return 0;
    case N_NOT:
        if (eval_bool(e, n->l, &x))
            return -1;
        out->k = V_BOOL;
        out->i = !x;
        return 0;
    case N_AND:
    case N_OR:
        return eval_logic(e, n, out);
    case N_CMP:
        if (eval(e, n->l, &a) || eval(e, n->r, &b))
            return -1;
        out->k = V_BOOL;
        if (n->op == OP_EQ || n->op == OP_NE) {
            out->i = val_eq(&a, &b) == (n->op == OP_EQ);
            return 0;
        }
        if (a.k != b.k || (a.k != V_INT && a.k != V_STR && a.k != V_BOOL))
            return rt_err(e, "no such overload for an ordering operator", NULL);
        x = a.k == V_STR ? strcmp(a.s, b.s) : (a.i > b.i) - (a.i < b.i);
        out->i = n->op == OP_LT ? x < 0 : n->op == OP_LE ? x <= 0 : n->op == OP_GT ? x > 0 : x >= 0;
        return 0;
    case N_IN:
        if (eval(e, n->l, &a) || eval(e, n->r, &b))
            return -1;
        out->k = V_BOOL;
        if (b.k == V_LIST) {
            for (size_t k = 0; k < b.list->n_items && !out->i; k++) {
                struct val it;
                if (eval(e, b.list->items[k], &it))
                    return -1;
                out->i = val_eq(&a, &it);
            }
            return 0;
        }
        if (a.k != V_STR)
            return rt_err(e, "no such overload: map keys are strings", NULL);
        out->i = map_get(e, &b, a.s, &a);
        return 0;
    case N_METHOD:
        return eval_method(e, n, out);
    }
    return rt_err(e, "internal error: unknown node", NULL);
}

enum common_rc dra_cel_eval(const struct dra_cel_prog *prog, const struct dra_cel_device *dev,
                            int *match, struct common_error *err)
{
    struct ev e = {.prog = prog, .dev = dev, .err = err};
    int b;
    *match = 0;
    if (!prog->root)
        return common_error_set(err, COMMON_EINVAL, "CEL program was not parsed");
    if (eval_bool(&e, prog->root, &b))
        return err ? err->code : COMMON_EINVAL;
    *match = b;
    return COMMON_OK;
}
