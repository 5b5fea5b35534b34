#include "common/log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum common_log_level min_level = COMMON_LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void common_log_set_level(enum common_log_level level)
{
    min_level = level;
}

int common_log_parse_level(const char *s, enum common_log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum common_log_level)i;
            return 0;
        }
    }
    return -1;
}

void common_log(enum common_log_level level, const char *msg, ...)
{
    char ts[40];
    struct timespec now;
    struct tm tm;
    json_t *rec;
    char *line;
    va_list ap;
    const char *k;

    if (level < min_level)
        return;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + strlen(ts), sizeof(ts) - strlen(ts), ".%03ldZ", now.tv_nsec / 1000000);
    rec = json_object();
    if (!rec)
        return;
    json_object_set_new(rec, "ts", json_string(ts));
    json_object_set_new(rec, "level", json_string(level_names[level]));
    json_object_set_new(rec, "msg", json_string(msg));
    va_start(ap, msg);
    while ((k = va_arg(ap, const char *)) != NULL) {
        const char *v = va_arg(ap, const char *);
        json_object_set_new(rec, k, v ? json_string(v) : json_null());
    }
    va_end(ap);
    line = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rec);
    if (!line)
        return;
    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "%s\n", line);
    pthread_mutex_unlock(&log_lock);
    free(line);
}
