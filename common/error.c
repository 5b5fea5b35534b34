#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void mark_cut(char *buf, size_t cap, int wrote)
{
    if (wrote >= 0 && (size_t)wrote >= cap && cap > 4)
        memcpy(buf + cap - 4, "...", 4);
}

enum common_rc common_error_set(struct common_error *err, enum common_rc code, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!err)
        return code;
    err->code = code;
    va_start(ap, fmt);
    n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        err->msg[0] = '\0';
    mark_cut(err->msg, sizeof(err->msg), n);
    return code;
}

void common_error_prefix(struct common_error *err, const char *fmt, ...)
{
    char prefix[512];
    char old[COMMON_ERROR_MSG_MAX];
    va_list ap;
    int n;

    if (!err)
        return;
    va_start(ap, fmt);
    n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    memcpy(old, err->msg, sizeof(old));
    n = snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
    mark_cut(err->msg, sizeof(err->msg), n);
}

void common_error_clear(struct common_error *err)
{
    if (!err)
        return;
    err->code = COMMON_OK;
    err->msg[0] = '\0';
}

const char *common_rc_name(enum common_rc code)
{
    switch (code) {
    case COMMON_OK:
        return "ok";
    case COMMON_EINVAL:
        return "invalid";
    case COMMON_ENOTFOUND:
        return "not found";
    case COMMON_ECONFLICT:
        return "conflict";
    case COMMON_EAPI:
        return "api error";
    case COMMON_ETIMEOUT:
        return "timeout";
    case COMMON_ENOMEM:
        return "out of memory";
    case COMMON_ETOOBIG:
        return "too big";
    case COMMON_EIO:
        return "i/o error";
    case COMMON_EUNSUPPORTED:
        return "unsupported";
    case COMMON_EGONE:
        return "gone";
    case COMMON_EEXISTS:
        return "already exists";
    case COMMON_EUNAUTHORIZED:
        return "unauthorized";
    }
    return "unknown";
}
