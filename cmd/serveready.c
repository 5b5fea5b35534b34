/*
 * cmd/serveready.c - serve's /readyz decision for the reconciler (see cmd/serveready.h).
 */
#include "cmd/serveready.h"

#include <stdio.h>

int serve_ready_reconciler(const struct serve_reconciler_state *s, char *why, size_t why_size)
{
    if (!s->should_run || (s->running && s->synced))
        return 0;
    if (why_size == 0)
        return 1;
    if (s->running)
        snprintf(why, why_size, "reconciler caches are not synced yet");
    else if (s->start_error && s->start_error[0])
        snprintf(why, why_size,
                 "reconciler is not running: its start failed (retried every second): %s",
                 s->start_error);
    else
        snprintf(why, why_size, "reconciler is not running yet: starting");
    return 1;
}
