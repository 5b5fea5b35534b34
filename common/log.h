/*
 * common/log.h - leveled logging as JSON lines on standard error.
 *
 * Each record is one JSON object on one line: {"ts":"<RFC 3339 UTC>","level":"info",
 * "msg":"...", <key/value pairs>}. Levels below the configured one are dropped cheaply.
 * Thread-safe: a record is written with one fwrite under a lock.
 */
#ifndef COMMON_LOG_H
#define COMMON_LOG_H

enum common_log_level { COMMON_LOG_DEBUG = 0, COMMON_LOG_INFO, COMMON_LOG_WARN, COMMON_LOG_ERROR };

/* common_log_set_level - drop records below level (default COMMON_LOG_INFO). */
void common_log_set_level(enum common_log_level level);

/*
 * common_log_parse_level - "debug", "info", "warn" or "error" into *out. Returns 0, or -1 for
 * any other string.
 */
int common_log_parse_level(const char *s, enum common_log_level *out);

/*
 * common_log - write one record. kv is a NULL-terminated list of const char* key/value pairs
 * (values are written as JSON strings), e.g.
 * common_log(COMMON_LOG_INFO, "bound", "pod", "ns/p", "node", "n1", NULL).
 */
void common_log(enum common_log_level level, const char *msg, ...);

#endif
