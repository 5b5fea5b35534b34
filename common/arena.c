#include "common/arena.h"

#include "common/alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ARENA_BLOCK 16384
#define ARENA_ALIGN 16

struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    /* the header is 24 bytes: without this, "aligned for any type" was only 8-byte aligned,
     * and a struct holding an __int128 (common_quantity) was misaligned */
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

struct arena_cleanup {
    struct arena_cleanup *next;
    void (*fn)(void *);
    void *ptr;
};

struct common_arena {
    struct arena_block *blocks;
    struct arena_cleanup *cleanups;
    size_t used, max;
};

struct common_arena *common_arena_create(size_t max_bytes)
{
    struct common_arena *a = common_calloc(1, sizeof(*a));

    if (!a)
        return NULL;
    a->max = max_bytes ? max_bytes : ((size_t)1 << 30);
    return a;
}

void common_arena_destroy(struct common_arena *a)
{
    if (!a)
        return;
    while (a->cleanups) {
        struct arena_cleanup *c = a->cleanups;
        a->cleanups = c->next;
        c->fn(c->ptr);
        common_free(c);
    }
    while (a->blocks) {
        struct arena_block *b = a->blocks;
        a->blocks = b->next;
        common_free(b);
    }
    common_free(a);
}

void *common_arena_alloc(struct common_arena *a, size_t size)
{
    struct arena_block *b;
    size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    void *p;

    if (!a || need < size || a->used + need > a->max)
        return NULL;
    b = a->blocks;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > ARENA_BLOCK ? need : ARENA_BLOCK;
        b = common_malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        if (a->blocks && need > ARENA_BLOCK) {
            /* a big one-off block goes behind the current one, which keeps its free room */
            b->next = a->blocks->next;
            a->blocks->next = b;
        } else {
            b->next = a->blocks;
            a->blocks = b;
        }
    }
    p = b->data + b->used;
    b->used += need;
    a->used += need;
    memset(p, 0, size);
    return p;
}

char *common_arena_strndup(struct common_arena *a, const char *s, size_t n)
{
    size_t len;
    char *d;

    if (!s)
        return NULL;
    len = strnlen(s, n);
    d = common_arena_alloc(a, len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *common_arena_strdup(struct common_arena *a, const char *s)
{
    return s ? common_arena_strndup(a, s, strlen(s)) : NULL;
}

char *common_arena_vprintf(struct common_arena *a, const char *fmt, va_list ap)
{
    va_list cp;
    int n;
    char *d;

    va_copy(cp, ap);
    n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return NULL;
    d = common_arena_alloc(a, (size_t)n + 1);
    if (!d)
        return NULL;
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    return d;
}

char *common_arena_printf(struct common_arena *a, const char *fmt, ...)
{
    va_list ap;
    char *d;

    va_start(ap, fmt);
    d = common_arena_vprintf(a, fmt, ap);
    va_end(ap);
    return d;
}

int common_arena_on_destroy(struct common_arena *a, void (*fn)(void *), void *ptr)
{
    struct arena_cleanup *c = common_malloc(sizeof(*c));

    if (!c) {
        fn(ptr);
        return -1;
    }
    c->fn = fn;
    c->ptr = ptr;
    c->next = a->cleanups;
    a->cleanups = c;
    return 0;
}

size_t common_arena_used(const struct common_arena *a)
{
    return a ? a->used : 0;
}
