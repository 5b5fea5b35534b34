/*
 * trainjob/errors.c - the list of field errors and warnings, and apimachinery's text for a
 * field error (k8s.io/apimachinery/pkg/util/validation/field, Error.Error()).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "trainjob/trainjob_int.h"

void trainjob_errors_init(struct trainjob_errors *e, struct common_arena *a)
{
    memset(e, 0, sizeof(*e));
    e->arena = a;
}

static int grow(void **items, size_t *cap, size_t n, size_t size, struct common_arena *a)
{
    void *p;
    size_t ncap;

    if (n < *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 8;
    p = common_arena_alloc(a, ncap * size);
    if (!p)
        return -1;
    if (*items)
        memcpy(p, *items, n * size);
    *items = p;
    *cap = ncap;
    return 0;
}

static void add_err(struct trainjob_errors *e, const json_t *doc, const json_t *node,
                    const json_t *value, const char *type, const char *path, const char *fmt,
                    va_list ap) __attribute__((format(printf, 7, 0)));

static void add_err(struct trainjob_errors *e, const json_t *doc, const json_t *node,
                    const json_t *value, const char *type, const char *path, const char *fmt,
                    va_list ap)
{
    struct trainjob_field_error *fe;

    if (grow((void **)&e->items, &e->cap, e->n, sizeof(*e->items), e->arena)) {
        e->oom = 1;
        return;
    }
    fe = &e->items[e->n];
    fe->path = common_arena_strdup(e->arena, path);
    fe->type = type;
    fe->detail = common_arena_vprintf(e->arena, fmt, ap);
    fe->node = node;
    fe->value = value;
    fe->doc = doc;
    fe->parent = NULL;
    fe->key = NULL;
    if (fe->path && fe->detail)
        e->n++;
    else
        e->oom = 1;
}

void tj_err(struct trainjob_errors *e, const json_t *doc, const json_t *node, const char *type,
            const char *path, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    add_err(e, doc, node, NULL, type, path, fmt, ap);
    va_end(ap);
}

void tj_err_value(struct trainjob_errors *e, const json_t *doc, const json_t *node,
                  const json_t *value, const char *type, const char *path, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    add_err(e, doc, node, value, type, path, fmt, ap);
    va_end(ap);
}

void tj_warn(struct trainjob_errors *e, const char *fmt, ...)
{
    va_list ap;
    const char *w;

    if (grow((void **)&e->warnings, &e->capwarn, e->nwarn, sizeof(*e->warnings), e->arena)) {
        e->oom = 1;
        return;
    }
    va_start(ap, fmt);
    w = common_arena_vprintf(e->arena, fmt, ap);
    va_end(ap);
    if (w)
        e->warnings[e->nwarn++] = w;
    else
        e->oom = 1;
}

/* apimachinery's field.ErrorType texts; value: the error prints the offending value */
static const struct {
    const char *type, *text;
    int value;
} error_types[] = {
    {"Invalid", "Invalid value", 1},     {"NotSupported", "Unsupported value", 1},
    {"Duplicate", "Duplicate value", 1}, {"TooMany", "Too many", 1},
    {"NotFound", "Not found", 1},        {"Required", "Required value", 0},
    {"Forbidden", "Forbidden", 0},       {"TooLong", "Too long", 0},
};

#define ERROR_VALUE_MAX 4096 /* longer values are cut, with "..." */

/*
 * apimachinery's field.Error.Error(): "<path>: <type text>: <value>: <detail>", the value as
 * JSON (a string quoted, a number or boolean as is), only for the types that carry one; a
 * detail that already starts with its type text (our schema messages) is printed as it is.
 */
const char *trainjob_errors_format(const struct trainjob_errors *e, size_t i)
{
    const struct trainjob_field_error *fe = &e->items[i];
    const char *path = fe->path[0] ? fe->path : "<root>";
    const char *text = fe->type;
    int value = 0;
    char *js;
    const char *out;

    if (strcmp(fe->type, "Unknown") == 0)
        return common_arena_printf(e->arena, "%s", fe->detail);
    for (size_t k = 0; k < sizeof(error_types) / sizeof(error_types[0]); k++) {
        if (strcmp(error_types[k].type, fe->type) == 0) {
            text = error_types[k].text;
            value = error_types[k].value;
        }
    }
    if (strncmp(fe->detail, text, strlen(text)) == 0)
        return common_arena_printf(e->arena, "%s: %s", path, fe->detail);
    if (!value || !(fe->value ? fe->value : fe->node))
        return common_arena_printf(e->arena, "%s: %s%s%s", path, text, fe->detail[0] ? ": " : "",
                                   fe->detail);
    js = json_dumps(fe->value ? fe->value : fe->node, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!js)
        return NULL;
    out = common_arena_printf(e->arena, "%s: %s: %.*s%s%s%s", path, text, ERROR_VALUE_MAX, js,
                              strlen(js) > ERROR_VALUE_MAX ? "..." : "", fe->detail[0] ? ": " : "",
                              fe->detail);
    free(js);
    return out;
}

const char *trainjob_runtime_ref_json(struct common_arena *a, const json_t *trainjob)
{
    const json_t *v = tj_runtime_ref_value(a, trainjob);
    char *js = v ? json_dumps(v, JSON_COMPACT) : NULL;
    const char *out = js ? common_arena_strdup(a, js) : NULL;

    free(js);
    return out;
}
