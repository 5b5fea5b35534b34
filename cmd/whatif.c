/*
 * cmd/whatif.c - one TrainJob's prediction out of a snapshot simulation (cmd/whatif.h).
 */
#include <string.h>

#include "cmd/whatif.h"
#include "sim/sim.h"

/* seconds (integer or real) as milliseconds; -1 for null */
static int64_t ms_of(const json_t *v)
{
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v) * 1000;
    if (json_is_real(v))
        return (int64_t)(json_real_value(v) * 1000.0 + 0.5);
    return -1;
}

json_t *whatif_answer(const json_t *report, const char *ns, const char *name)
{
    const json_t *snap = json_object_get(report, "snapshot"),
                 *jobs = json_object_get(report, "jobs");
    const json_t *j, *found = NULL;
    json_t *a;
    char key[600];
    size_t i;
    int bad = 0;

    snprintf(key, sizeof(key), "%s/%s", ns, name);
    json_array_foreach((json_t *)jobs, i, j)
    {
        const char *tj = json_string_value(json_object_get(j, "trainJob"));
        if (tj && strcmp(tj, key) == 0) {
            found = j;
            break;
        }
    }
    a = json_pack("{s:s, s:b, s:O, s:O}", "trainJob", key, "found", found != NULL, "snapshotTime",
                  json_object_get(snap, "time") ? json_object_get(snap, "time") : json_null(),
                  "runningPods",
                  json_object_get(snap, "runningPods") ? json_object_get(snap, "runningPods")
                                                       : json_integer(0));
    if (!a)
        return NULL;
    if (found) {
        static const char *const copy[] = {"state", "startTime", "nodes", "topologyDomain",
                                           "reason"};
        const json_t *start = json_object_get(found, "start");
        bad |= json_object_set(a, "startIn", start ? (json_t *)start : json_null());
        for (size_t k = 0; k < sizeof(copy) / sizeof(copy[0]); k++)
            if (json_object_get(found, copy[k]))
                bad |= json_object_set(a, copy[k], json_object_get(found, copy[k]));
    } else {
        char why[900];
        snprintf(why, sizeof(why),
                 "TrainJob %s has no waiting pod and no pending gang in the snapshot: it runs, "
                 "has finished, or was not simulated (the notes say why)",
                 key);
        bad |= json_object_set_new(a, "why", json_string(why));
    }
    bad |= json_object_set(
        a, "notes", json_object_get(snap, "notes") ? json_object_get(snap, "notes") : json_array());
    if (bad) {
        json_decref(a);
        return NULL;
    }
    return a;
}

int whatif_text(const json_t *a, FILE *f)
{
    const json_t *nodes = json_object_get(a, "nodes"), *dom = json_object_get(a, "topologyDomain");
    const json_t *notes = json_object_get(a, "notes"), *v;
    const char *state = json_string_value(json_object_get(a, "state"));
    const char *reason = json_string_value(json_object_get(a, "reason"));
    int64_t start = ms_of(json_object_get(a, "startIn"));
    char d[64];
    size_t i;

    fprintf(f, "What if (simulated from a snapshot taken %s, %lld running pods as load):\n",
            json_string_value(json_object_get(a, "snapshotTime"))
                ? json_string_value(json_object_get(a, "snapshotTime"))
                : "?",
            (long long)json_integer_value(json_object_get(a, "runningPods")));
    if (!json_is_true(json_object_get(a, "found")))
        fprintf(f, "  %s\n", json_string_value(json_object_get(a, "why")));
    else if (start >= 0) {
        fprintf(f, "  starts in %s (at %s) on ", sim_format_duration(start, d, sizeof(d)),
                json_string_value(json_object_get(a, "startTime"))
                    ? json_string_value(json_object_get(a, "startTime"))
                    : "?");
        json_array_foreach((json_t *)nodes, i, v)
            fprintf(f, "%s%s", i ? ", " : "", json_string_value(v));
        fputc('\n', f);
        if (dom)
            fprintf(f, "  placed in %s %s\n", json_string_value(json_object_get(dom, "level")),
                    json_string_value(json_object_get(dom, "domain")));
    } else
        fprintf(f, "  %s: %s\n",
                state && strcmp(state, "NeverFits") == 0
                    ? "never fits, even on the empty cluster"
                    : "does not start before the simulation ends",
                reason && *reason ? reason : "no reason given");
    json_array_foreach((json_t *)notes, i, v) fprintf(f, "  note: %s\n", json_string_value(v));
    return ferror(f) ? -1 : 0;
}
