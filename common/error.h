/*
 * common/error.h - the one error convention of trainsched.
 *
 * Every fallible function returns an enum common_rc: 0 (COMMON_OK) on success, a negative code
 * otherwise. Detail goes into a caller-allocated struct common_error whose message buffer is
 * fixed, so the error path never allocates. A message names what was wrong: the file, the
 * position, the field path ("spec.trainer.numNodes") and the rule, in that order when known.
 */
#ifndef COMMON_ERROR_H
#define COMMON_ERROR_H

#include <stddef.h>

enum common_rc {
    COMMON_OK = 0,
    COMMON_EINVAL = -1,        /* invalid input: bad syntax, wrong type, rule broken */
    COMMON_ENOTFOUND = -2,     /* a named object (runtime, file, key) does not exist */
    COMMON_ECONFLICT = -3,     /* conflicting state or a duplicate */
    COMMON_EAPI = -4,          /* a peer (API server, slurmrestd) answered with an error */
    COMMON_ETIMEOUT = -5,      /* a deadline passed */
    COMMON_ENOMEM = -6,        /* an allocation failed */
    COMMON_ETOOBIG = -7,       /* input over a configured cap */
    COMMON_EIO = -8,           /* reading or writing a file or socket failed */
    COMMON_EUNSUPPORTED = -9,  /* valid input that this version does not handle yet */
    COMMON_EGONE = -10,        /* a watch's resourceVersion is too old (HTTP 410): relist */
    COMMON_EEXISTS = -11,      /* create of an object that already exists (409 AlreadyExists) */
    COMMON_EUNAUTHORIZED = -12 /* 401 or 403 from a peer */
};

#define COMMON_ERROR_MSG_MAX 1024

struct common_error {
    enum common_rc code;
    char msg[COMMON_ERROR_MSG_MAX];
};

/*
 * common_error_set - record code and a printf-style message in err (err may be NULL).
 * Returns code, so callers write `return common_error_set(err, COMMON_EINVAL, "...")`.
 * A message longer than the buffer is cut and ends in "...". Never allocates.
 */
enum common_rc common_error_set(struct common_error *err, enum common_rc code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * common_error_prefix - put "<prefix>: " in front of the message already in err (err may be
 * NULL). Used by callers that know the context (a file name, a document index). Never
 * allocates; the tail of a long message is cut.
 */
void common_error_prefix(struct common_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* common_error_clear - reset err to COMMON_OK with an empty message (err may be NULL). */
void common_error_clear(struct common_error *err);

/* common_rc_name - a constant name for a code ("invalid", "not found", ...). */
const char *common_rc_name(enum common_rc code);

#endif
