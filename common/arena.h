/*
 * common/arena.h - per-request memory pool (nginx's pool idea).
 *
 * An arena hands out memory from large blocks and frees it all at once in
 * common_arena_destroy. Objects with their own destructor (a json_t, a file) are tied to the
 * arena with common_arena_on_destroy, and their cleanup runs, newest first, when the arena is
 * destroyed. Decoded structs and strings of one request or one render live in one arena, so
 * decision cores never call free. An arena has a byte cap; past it allocations fail.
 */
#ifndef COMMON_ARENA_H
#define COMMON_ARENA_H

#include <stdarg.h>
#include <stddef.h>

struct common_arena;

/*
 * common_arena_create - a new arena that may hold up to max_bytes (0 = 1 GiB) of allocations.
 * Returns NULL when out of memory.
 */
struct common_arena *common_arena_create(size_t max_bytes);

/* common_arena_destroy - run cleanups (newest first), free every block. NULL is a no-op. */
void common_arena_destroy(struct common_arena *a);

/* common_arena_alloc - size bytes, zeroed, aligned for any type. NULL when out of memory/cap. */
void *common_arena_alloc(struct common_arena *a, size_t size);

/* common_arena_strdup / strndup - a copy of s in the arena (NULL s gives NULL). */
char *common_arena_strdup(struct common_arena *a, const char *s);
char *common_arena_strndup(struct common_arena *a, const char *s, size_t n);

/* common_arena_printf - a formatted string in the arena; NULL when out of memory. */
char *common_arena_printf(struct common_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
char *common_arena_vprintf(struct common_arena *a, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/*
 * common_arena_on_destroy - call fn(ptr) when the arena is destroyed. Returns 0, or -1 when
 * out of memory (then fn(ptr) has already been called, so ownership passes either way).
 */
int common_arena_on_destroy(struct common_arena *a, void (*fn)(void *), void *ptr);

/* common_arena_used - bytes handed out so far (for metrics and benchmarks). */
size_t common_arena_used(const struct common_arena *a);

#endif
