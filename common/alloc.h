/*
 * common/alloc.h - the allocation hooks every trainsched allocation goes through.
 *
 * common_malloc and friends call the C library, except when a test has armed failure injection
 * with common_alloc_fail_at(n): then the n-th allocation from that point (1-based) and every
 * later one return NULL, so tests can walk n = 1, 2, ... and check that each failure gives a
 * clean COMMON_ENOMEM and no leak (curl's "torture" idea). jansson is pointed at the same hooks
 * by common_alloc_init(), so JSON building fails the same way.
 */
#ifndef COMMON_ALLOC_H
#define COMMON_ALLOC_H

#include <stddef.h>

/* common_alloc_init - route jansson's allocations through these hooks. Call once at start. */
void common_alloc_init(void);

/* malloc/calloc/realloc/free/strdup with failure injection; same contracts as libc. */
void *common_malloc(size_t size);
void *common_calloc(size_t n, size_t size);
void *common_realloc(void *p, size_t size);
void common_free(void *p);
char *common_strdup(const char *s);
char *common_strndup(const char *s, size_t n);

/*
 * common_alloc_fail_at - arm failure injection: the n-th allocation from now (n >= 1) and all
 * later ones fail. n = 0 disarms. Not thread-safe: for single-threaded tests only.
 */
void common_alloc_fail_at(unsigned long n);

/* common_alloc_failed - nonzero if an injected failure has happened since the last arm. */
int common_alloc_failed(void);

#endif
