#include "common/alloc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static unsigned long fail_at;   /* 0 = off */
static unsigned long alloc_seq; /* allocations since arming */
static int failed;

static int should_fail(void)
{
    if (fail_at == 0)
        return 0;
    if (++alloc_seq >= fail_at) {
        failed = 1;
        return 1;
    }
    return 0;
}

void common_alloc_fail_at(unsigned long n)
{
    fail_at = n;
    alloc_seq = 0;
    failed = 0;
}

int common_alloc_failed(void)
{
    return failed;
}

void *common_malloc(size_t size)
{
    if (should_fail())
        return NULL;
    return malloc(size ? size : 1);
}

void *common_calloc(size_t n, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void *common_realloc(void *p, size_t size)
{
    if (should_fail())
        return NULL;
    return realloc(p, size ? size : 1);
}

void common_free(void *p)
{
    free(p);
}

char *common_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = common_malloc(len + 1);

    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *common_strdup(const char *s)
{
    return common_strndup(s, strlen(s));
}

void common_alloc_init(void)
{
    json_set_alloc_funcs(common_malloc, common_free);
}
