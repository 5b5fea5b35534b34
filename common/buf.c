#include "common/buf.h"

#include "common/alloc.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

void common_buf_init(struct common_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void common_buf_free(struct common_buf *b)
{
    common_free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void common_buf_reset(struct common_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

enum common_rc common_buf_append(struct common_buf *b, const void *data, size_t n,
                                 struct common_error *err)
{
    if (n > b->max || b->len > b->max - n)
        return common_error_set(err, COMMON_ETOOBIG, "larger than the limit of %zu bytes", b->max);
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;
        while (cap < b->len + n + 1)
            cap *= 2;
        if (cap > b->max + 1)
            cap = b->max + 1;
        p = common_realloc(b->data, cap);
        if (!p)
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
        b->data = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return COMMON_OK;
}

enum common_rc common_buf_puts(struct common_buf *b, const char *s, struct common_error *err)
{
    return common_buf_append(b, s, strlen(s), err);
}

enum common_rc common_buf_printf(struct common_buf *b, struct common_error *err, const char *fmt,
                                 ...)
{
    char small[256];
    va_list ap;
    int n;
    enum common_rc rc;
    char *big;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return common_error_set(err, COMMON_EINVAL, "bad format");
    if ((size_t)n < sizeof(small))
        return common_buf_append(b, small, (size_t)n, err);
    big = common_malloc((size_t)n + 1);
    if (!big)
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rc = common_buf_append(b, big, (size_t)n, err);
    common_free(big);
    return rc;
}

enum common_rc common_buf_read_stream(struct common_buf *b, FILE *f, const char *name,
                                      struct common_error *err)
{
    char chunk[65536];
    size_t n;
    enum common_rc rc;

    /* make sure an empty input still gives a terminated empty string */
    rc = common_buf_append(b, "", 0, err);
    if (rc)
        return rc;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        rc = common_buf_append(b, chunk, n, err);
        if (rc) {
            if (rc == COMMON_ETOOBIG)
                return common_error_set(err, rc, "%s: larger than the limit of %zu bytes", name,
                                        b->max);
            return rc;
        }
    }
    if (ferror(f))
        return common_error_set(err, COMMON_EIO, "%s: read failed: %s", name, strerror(errno));
    return COMMON_OK;
}

enum common_rc common_buf_read_file(struct common_buf *b, const char *path,
                                    struct common_error *err)
{
    FILE *f;
    enum common_rc rc;

    if (strcmp(path, "-") == 0)
        return common_buf_read_stream(b, stdin, "<stdin>", err);
    f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return common_error_set(err, COMMON_ENOTFOUND, "%s: no such file", path);
        return common_error_set(err, COMMON_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    rc = common_buf_read_stream(b, f, path, err);
    fclose(f);
    return rc;
}
