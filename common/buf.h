/*
 * common/buf.h - growable byte buffers with a hard maximum size (curl's dynbuf idea).
 *
 * Every body, file and stream that trainsched reads lands in a struct common_buf whose max is
 * fixed at init; an append past max fails with COMMON_ETOOBIG and leaves the buffer as it was,
 * so a 50 MB file or a 200 MB request body is refused after reading at most max bytes. The data
 * is always NUL-terminated (the terminator is not counted in len).
 */
#ifndef COMMON_BUF_H
#define COMMON_BUF_H

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

struct common_buf {
    char *data; /* NULL until the first append; NUL-terminated after */
    size_t len; /* bytes held, terminator excluded */
    size_t cap; /* bytes allocated */
    size_t max; /* hard limit on len */
};

/* common_buf_init - an empty buffer that may grow to max bytes. */
void common_buf_init(struct common_buf *b, size_t max);

/* common_buf_free - release the memory; the buffer is empty and reusable afterwards. */
void common_buf_free(struct common_buf *b);

/* common_buf_reset - drop the contents but keep the memory. */
void common_buf_reset(struct common_buf *b);

/*
 * common_buf_append - add n bytes. Returns COMMON_OK, COMMON_ETOOBIG (len + n > max; message
 * names the cap in bytes) or COMMON_ENOMEM. On failure the buffer is unchanged.
 */
enum common_rc common_buf_append(struct common_buf *b, const void *data, size_t n,
                                 struct common_error *err);

/* common_buf_puts / printf - append a string / formatted text; same returns as append. */
enum common_rc common_buf_puts(struct common_buf *b, const char *s, struct common_error *err);
enum common_rc common_buf_printf(struct common_buf *b, struct common_error *err, const char *fmt,
                                 ...) __attribute__((format(printf, 3, 4)));

/*
 * common_buf_read_file - read all of path ("-" = standard input) into b, which must be empty.
 * Stops as soon as more than b->max bytes arrive. Returns COMMON_OK, COMMON_ENOTFOUND (no such
 * file), COMMON_EIO (open/read failure, message has strerror), COMMON_ETOOBIG (message gives
 * the cap) or COMMON_ENOMEM. Messages start with the path.
 */
enum common_rc common_buf_read_file(struct common_buf *b, const char *path,
                                    struct common_error *err);

/* common_buf_read_stream - the same for an open stream; name is used in messages. */
enum common_rc common_buf_read_stream(struct common_buf *b, FILE *f, const char *name,
                                      struct common_error *err);

#endif
