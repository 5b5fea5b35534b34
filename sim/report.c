/*
 * sim/report.c - a simulation result as JSON (YAML is the same object), text tables and an
 * SVG timeline (sim.h). Formatting only: every number comes from struct sim_result.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "sim/sim.h"

#define SVG_MAX_ROWS 400
#define SVG_MAX_LEGEND 60
#define TEXT_MAX_TIMELINE 60

static const char *const state_names[] = {"Completed", "Running", "Waiting", "NeverFits"};

const char *sim_format_duration(int64_t ms, char *buf, size_t n)
{
    int64_t s = ms / 1000, rest = ms % 1000;
    size_t off = 0;

    if (ms < 0) {
        snprintf(buf, n, "-");
        return buf;
    }
    if (ms == 0) {
        snprintf(buf, n, "0s");
        return buf;
    }
    if (s == 0 && rest) {
        snprintf(buf, n, "%lldms", (long long)ms);
        return buf;
    }
    buf[0] = '\0';
    if (s >= 86400) {
        off += (size_t)snprintf(buf + off, n - off, "%lldd", (long long)(s / 86400));
        s %= 86400;
    }
    if (s >= 3600 && off < n) {
        off += (size_t)snprintf(buf + off, n - off, "%lldh", (long long)(s / 3600));
        s %= 3600;
    }
    if (s >= 60 && off < n) {
        off += (size_t)snprintf(buf + off, n - off, "%lldm", (long long)(s / 60));
        s %= 60;
    }
    if ((s || rest) && off < n) {
        if (rest)
            snprintf(buf + off, n - off, "%lld.%03llds", (long long)s, (long long)rest);
        else
            snprintf(buf + off, n - off, "%llds", (long long)s);
    }
    return buf;
}

/* seconds as a JSON number: an integer when whole */
static json_t *secs(int64_t ms)
{
    if (ms < 0)
        return json_null();
    if (ms % 1000 == 0)
        return json_integer(ms / 1000);
    return json_real((double)ms / 1000.0);
}

/* Unix ms as RFC 3339 UTC, seconds precision ("2026-12-08T01:02:03Z") */
static const char *utc_text(int64_t ms, char *buf, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, n, "?");
    return buf;
}

static json_t *round4(double v)
{
    return json_real((double)(long long)(v * 10000.0 + 0.5) / 10000.0);
}

json_t *sim_report_json(const struct sim_input *in, const struct sim_result *r)
{
    json_t *root = json_object(), *jobs = json_array(), *tl = json_array(), *lv = json_array();
    json_t *sum = json_object(), *one = json_object();
    size_t counts[4] = {0, 0, 0, 0}, never_whole = 0;
    int bad = !root || !jobs || !tl || !lv || !sum || !one;

    for (size_t l = 0; !bad && l < in->n_levels; l++) {
        bad |= json_array_append_new(lv, json_string(in->levels[l]));
        bad |= json_object_set_new(one, in->levels[l], json_integer(r->jobs_in_one_domain[l]));
    }
    for (size_t i = 0; !bad && i < in->n_jobs; i++) {
        const struct sim_job *j = &in->jobs[i];
        const struct sim_job_result *jr = &r->jobs[i];
        json_t *o, *nodes = json_array(), *dom = json_object();
        counts[jr->state]++;
        never_whole += jr->never_whole != 0;
        for (size_t k = 0; nodes && k < jr->n_nodes; k++)
            bad |= json_array_append_new(nodes, json_string(jr->nodes[k]));
        for (size_t l = 0; dom && l < in->n_levels; l++)
            bad |= json_object_set_new(dom, in->levels[l], json_integer(jr->domains[l]));
        o = json_pack("{s:s, s:s, s:I, s:I, s:b, s:I, s:o, s:o, s:o, s:o, s:s, s:o, s:o, s:s, "
                      "s:I}",
                      "name", j->name, "kind", j->kind, "pods", (json_int_t)j->n_pods, "gpus",
                      (json_int_t)j->gpus, "gang", j->gang, "minMember",
                      (json_int_t)j->pg.min_member, "arrival", secs(j->arrival_ms), "start",
                      secs(jr->start_ms), "end", secs(jr->end_ms), "wait", secs(jr->wait_ms),
                      "state", state_names[jr->state], "nodes", nodes ? nodes : json_null(),
                      "domains", dom ? dom : json_null(), "reason", jr->reason, "gangFailures",
                      (json_int_t)jr->gang_failures);
        if (o && jr->domain && jr->domain[0]) /* the gang core's topology domain */
            bad |= json_object_set_new(o, "topologyDomain",
                                       json_pack("{s:s, s:s}", "level", jr->domain_level, "domain",
                                                 jr->domain)) != 0;
        if (o && jr->n_waves) { /* its pods by the time they were bound */
            json_t *w = json_array();
            for (size_t k = 0; w && k < jr->n_waves; k++)
                bad |= json_array_append_new(w, json_pack("{s:o, s:I}", "start",
                                                          secs(jr->waves[k].start_ms), "pods",
                                                          (json_int_t)jr->waves[k].pods));
            bad |= !w || json_object_set_new(o, "waves", w) ||
                   json_object_set_new(o, "peakPods", json_integer(jr->peak_pods)) ||
                   json_object_set_new(o, "ranWhole", json_boolean(!jr->never_whole));
        }
        if (o && j->note)
            bad |= json_object_set_new(o, "note", json_string(j->note));
        if (o && in->epoch_ms) { /* a snapshot: its TrainJob and the start as a time */
            char tj[600], t[40];
            if (sim_job_trainjob(j, tj, sizeof(tj)))
                bad |= json_object_set_new(o, "trainJob", json_string(tj));
            bad |= json_object_set_new(
                o, "startTime",
                jr->start_ms >= 0 ? json_string(utc_text(in->epoch_ms + jr->start_ms, t, sizeof(t)))
                                  : json_null());
        }
        bad |= !o || !nodes || !dom || json_array_append_new(jobs, o);
    }
    for (size_t i = 0; !bad && i < r->n_samples; i++) {
        const struct sim_sample *s = &r->samples[i];
        bad |= json_array_append_new(
            tl, json_pack("{s:o, s:I, s:I, s:I, s:I, s:I}", "t", secs(s->t), "gpusUsed",
                          (json_int_t)s->gpus_used, "gpusIdleWhileWaiting",
                          (json_int_t)s->gpus_idle, "gpusFragmented", (json_int_t)s->gpus_frag,
                          "waiting", (json_int_t)s->waiting, "running", (json_int_t)s->running));
    }
    if (!bad) {
        json_t *cl =
            json_pack("{s:I, s:I, s:s, s:O}", "nodes", (json_int_t)in->n_nodes, "gpus",
                      (json_int_t)r->gpus_total, "gpuResource", in->gpu_resource, "levels", lv);
        json_t *s2 = json_pack(
            "{s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:O, s:I, s:I, s:I, s:I, s:I, s:I}",
            "end", secs(r->end_ms), "gpuUtilisation", round4(r->util_avg),
            "gpuHoursIdleWhileWaiting", round4(r->gpu_hours_idle), "gpuHoursFragmented",
            round4(r->gpu_hours_frag), "waitAverage", secs((int64_t)(r->wait_avg_ms + 0.5)),
            "waitMax", secs(r->wait_max_ms), "jobsCompleted", (json_int_t)counts[0], "jobsRunning",
            (json_int_t)counts[1], "jobsWaiting", (json_int_t)counts[2], "jobsNeverFit",
            (json_int_t)counts[3], "jobsInOneDomain", one, "multiPodJobs",
            (json_int_t)r->multi_pod_jobs, "events", (json_int_t)r->events, "filters",
            (json_int_t)r->filters, "filtersSaved", (json_int_t)r->filters_saved, "binds",
            (json_int_t)r->binds, "gangFailures", (json_int_t)r->gang_failures);
        json_t *tps = json_array();
        for (size_t t = 0; tps && t < in->n_topologies; t++) {
            json_t *tl2 = json_array();
            for (size_t l = 0; tl2 && l < in->topologies[t].n_levels; l++)
                bad |= json_array_append_new(tl2, json_string(in->topologies[t].levels[l]));
            bad |= !tl2 ||
                   json_array_append_new(
                       tps, json_pack("{s:s, s:o}", "name", in->topologies[t].name, "levels", tl2));
        }
        bad |= !s2 ||
               json_object_set_new(s2, "jobsStillWaitingAtEnd",
                                   json_integer((json_int_t)r->jobs_still_waiting)) ||
               json_object_set_new(s2, "jobsNeverRanWhole", json_integer((json_int_t)never_whole));
        bad |= !tps || !cl || json_object_set_new(cl, "topologies", tps);
        bad |= !cl || !s2 || json_object_set_new(root, "cluster", cl) ||
               json_object_set_new(root, "summary", s2);
        if (in->epoch_ms) { /* --from-cluster: when, the running load, what was not modelled */
            char t[40];
            json_t *notes = json_array(), *snap;
            for (size_t k = 0; notes && k < in->n_notes; k++)
                bad |= json_array_append_new(notes, json_string(in->notes[k]));
            snap = json_pack("{s:s, s:I, s:o}", "time", utc_text(in->epoch_ms, t, sizeof(t)),
                             "runningPods", (json_int_t)in->n_load, "notes",
                             notes ? notes : json_null());
            bad |= !notes || !snap || json_object_set_new(root, "snapshot", snap);
        }
        bad |= json_object_set(root, "jobs", jobs) || json_object_set(root, "timeline", tl);
    }
    json_decref(sum);
    json_decref(one);
    json_decref(lv);
    json_decref(jobs);
    json_decref(tl);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* natural order: runs of digits compare as numbers ("n2" before "n10") */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            const char *x = a, *y = b;
            size_t lx, ly;
            int c;
            while (*x == '0' && isdigit((unsigned char)x[1]))
                x++;
            while (*y == '0' && isdigit((unsigned char)y[1]))
                y++;
            for (lx = 0; isdigit((unsigned char)x[lx]); lx++)
                ;
            for (ly = 0; isdigit((unsigned char)y[ly]); ly++)
                ;
            if (lx != ly)
                return lx < ly ? -1 : 1;
            if ((c = strncmp(x, y, lx)) != 0)
                return c;
            a = x + lx;
            b = y + ly;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}

static int natural_ptr_cmp(const void *a, const void *b)
{
    int c = natural_cmp(*(const char *const *)a, *(const char *const *)b);
    return c ? c : strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "a,b,c,...(+n)" of the job's nodes, in natural order */
static int node_list(const struct sim_job_result *jr, char *buf, size_t n)
{
    size_t off = 0;
    const char **v;

    buf[0] = '\0';
    if (!jr->n_nodes) {
        snprintf(buf, n, "-");
        return 0;
    }
    if (!(v = common_malloc(jr->n_nodes * sizeof(*v))))
        return -1;
    memcpy(v, jr->nodes, jr->n_nodes * sizeof(*v));
    qsort(v, jr->n_nodes, sizeof(*v), natural_ptr_cmp);
    for (size_t k = 0; k < jr->n_nodes && k < 3 && off < n; k++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", k ? "," : "", v[k]);
    if (jr->n_nodes > 3 && off < n)
        snprintf(buf + off, n - off, ",...(+%zu)", jr->n_nodes - 3);
    common_free(v);
    return 0;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* a wait for the text report: to the nearest second */
static const char *wait_text(int64_t ms, char *buf, size_t n)
{
    return sim_format_duration(ms < 0 ? ms : (ms + 500) / 1000 * 1000, buf, n);
}

int sim_report_text(const struct sim_input *in, const struct sim_result *r, FILE *out)
{
    char a[32], b[32], c[32], d[32], nodes[400];
    size_t counts[4] = {0, 0, 0, 0}, never_whole = 0;
    size_t width = 24;

    for (size_t i = 0; i < in->n_jobs; i++)
        if (strlen(in->jobs[i].name) > width)
            width = strlen(in->jobs[i].name) > 60 ? 60 : strlen(in->jobs[i].name);
    fprintf(out, "Cluster: %zu %s, %lld %s", in->n_nodes, plural(in->n_nodes, "node", "nodes"),
            (long long)r->gpus_total, in->gpu_resource);
    for (size_t l = 0; l < in->n_levels; l++)
        fprintf(out, "%s%s", l ? ", " : "; levels ", in->levels[l]);
    for (size_t t = 0; t < in->n_topologies; t++) {
        fprintf(out, "%s%s=", t ? "; " : "\nTopologies (first is the default): ",
                in->topologies[t].name);
        for (size_t l = 0; l < in->topologies[t].n_levels; l++)
            fprintf(out, "%s%s", l ? "," : "", in->topologies[t].levels[l]);
    }
    if (in->epoch_ms) {
        fprintf(out, "\nSnapshot: taken %s; %zu running %s as load; times count from then",
                utc_text(in->epoch_ms, a, sizeof(a)), in->n_load,
                plural(in->n_load, "pod", "pods"));
        for (size_t k = 0; k < in->n_notes; k++)
            fprintf(out, "\n  note: %s", in->notes[k]);
        if (!in->n_jobs)
            fprintf(out, "\nNothing waits: no pending pod and no TrainJob without pods");
    }
    fprintf(out, "\n\n%-*s %-8s %5s %5s %8s %8s %8s %8s  %-10s %s\n", (int)width, "JOB", "KIND",
            "PODS", "GPUS", "ARRIVAL", "START", "WAIT", "END", "STATE", "NODES");
    for (size_t i = 0; i < in->n_jobs; i++) {
        const struct sim_job *j = &in->jobs[i];
        const struct sim_job_result *jr = &r->jobs[i];
        counts[jr->state]++;
        never_whole += jr->never_whole != 0;
        if (node_list(jr, nodes, sizeof(nodes)))
            return -1;
        fprintf(
            out, "%-*s %-8s %5zu %5lld %8s %8s %8s %8s  %-10s %s\n", (int)width, j->name, j->kind,
            j->n_pods, (long long)j->gpus, sim_format_duration(j->arrival_ms, a, sizeof(a)),
            sim_format_duration(jr->start_ms, b, sizeof(b)), wait_text(jr->wait_ms, c, sizeof(c)),
            sim_format_duration(jr->end_ms, d, sizeof(d)), state_names[jr->state], nodes);
        if (in->epoch_ms && jr->start_ms >= 0) {
            char tj[600];
            fprintf(out, "%*s starts at %s", (int)width, "",
                    utc_text(in->epoch_ms + jr->start_ms, a, sizeof(a)));
            if (sim_job_trainjob(j, tj, sizeof(tj)))
                fprintf(out, " (TrainJob %s)", tj);
            fputc('\n', out);
        }
        if (jr->domain && jr->domain[0])
            fprintf(out, "%*s placed in %s %s\n", (int)width, "",
                    jr->domain_level[0] ? jr->domain_level : "the whole cluster", jr->domain);
        if (jr->n_nodes > 1 && in->n_levels) {
            fprintf(out, "%*s spans", (int)width, "");
            for (size_t l = 0; l < in->n_levels; l++)
                fprintf(out, "%s %u %s", l ? "," : "", jr->domains[l], in->levels[l]);
            fputc('\n', out);
        }
        if ((jr->wait_ms > 0 || jr->state >= 2) && jr->reason[0])
            fprintf(out, "%*s %s: %s\n", (int)width, "",
                    jr->state == SIM_JOB_NEVER_FITS ? "never fits"
                    : jr->state == SIM_JOB_WAITING  ? "waiting"
                                                    : "waited",
                    jr->reason);
        if (jr->never_whole) {
            /* a distributed job whose pods never all ran at once: "Completed" alone hid it */
            fprintf(out, "%*s never ran whole: at most %u of its %zu %s ran at once, in %zu %s (",
                    (int)width, "", jr->peak_pods, j->n_pods, plural(j->n_pods, "pod", "pods"),
                    jr->n_waves, plural(jr->n_waves, "wave", "waves"));
            for (size_t k = 0; k < jr->n_waves && k < 6; k++)
                fprintf(out, "%s%u at %s", k ? ", " : "", jr->waves[k].pods,
                        sim_format_duration(jr->waves[k].start_ms, a, sizeof(a)));
            fprintf(out, "%s)\n", jr->n_waves > 6 ? ", ..." : "");
        }
        if (jr->gang_failures)
            fprintf(out,
                    "%*s %u gang %s failed (held members released at the timeout "
                    "or when a planned node was lost; backoff followed)\n",
                    (int)width, "", jr->gang_failures,
                    plural(jr->gang_failures, "attempt", "attempts"));
        if (j->note)
            fprintf(out, "%*s note: %s\n", (int)width, "", j->note);
    }
    fprintf(out, "\nSummary: %zu %s: %zu completed", in->n_jobs, plural(in->n_jobs, "job", "jobs"),
            counts[0]);
    if (never_whole)
        fprintf(out, " (%zu never ran whole)", never_whole);
    fprintf(out, ", %zu running, %zu waiting, %zu never fit; simulated %s\n", counts[1], counts[2],
            counts[3], sim_format_duration(r->end_ms, a, sizeof(a)));
    fprintf(out, "  GPU utilisation (time average): %.1f%%\n", r->util_avg * 100.0);
    fprintf(out, "  wait: average %s, max %s",
            wait_text((int64_t)(r->wait_avg_ms + 0.5), a, sizeof(a)),
            wait_text(r->wait_max_ms, b, sizeof(b)));
    if (r->jobs_still_waiting)
        fprintf(out, " (including %u %s still waiting at end, counted to the end)",
                r->jobs_still_waiting, plural(r->jobs_still_waiting, "job", "jobs"));
    fputc('\n', out);
    fprintf(out,
            "  GPU-hours idle while jobs waited: %.2f; of those fragmented (free GPUs on "
            "nodes with too few for a pod of the smallest waiting gang): %.2f\n",
            r->gpu_hours_idle, r->gpu_hours_frag);
    for (size_t l = 0; l < in->n_levels; l++)
        fprintf(out, "  multi-pod jobs within one %s: %u of %u\n", in->levels[l],
                r->jobs_in_one_domain[l], r->multi_pod_jobs);
    fprintf(out, "  decisions: %llu %s, %llu %s, %llu gang %s failed\n",
            (unsigned long long)r->filters, plural(r->filters, "filter", "filters"),
            (unsigned long long)r->binds, plural(r->binds, "bind", "binds"),
            (unsigned long long)r->gang_failures, plural(r->gang_failures, "attempt", "attempts"));
    fprintf(out, "\nTimeline (%lld GPUs):\n%10s %6s %8s %11s %8s %8s\n", (long long)r->gpus_total,
            "TIME", "USED", "IDLE", "FRAGMENTED", "WAITING", "RUNNING");
    for (size_t i = 0; i < r->n_samples; i++) {
        const struct sim_sample *s = &r->samples[i];
        if (i == TEXT_MAX_TIMELINE && r->n_samples > TEXT_MAX_TIMELINE + 1) {
            fprintf(out, "%10s (%zu more points: -o json lists them all)\n", "...",
                    r->n_samples - TEXT_MAX_TIMELINE - 1);
            i = r->n_samples - 1;
            s = &r->samples[i];
        }
        fprintf(out, "%10s %6lld %8lld %11lld %8u %8u\n", sim_format_duration(s->t, a, sizeof(a)),
                (long long)s->gpus_used, (long long)s->gpus_idle, (long long)s->gpus_frag,
                s->waiting, s->running);
    }
    return ferror(out) ? -1 : 0;
}

/* the time between two ticks of the SVG axis: the smallest round step (1, 2, 5 ... 500 ms;
 * 1, 2, 5, 10, 15, 30 seconds or minutes; 1, 2, 3, 6, 12 hours; 1, 2, 7 days, then doublings
 * of 7 days) that splits [0, t] into at most 10 intervals */
static int64_t tick_step(int64_t t)
{
    static const int64_t steps[] = {1000,     2000,     5000,     10000,     15000,
                                    30000,    60000,    120000,   300000,    600000,
                                    900000,   1800000,  3600000,  7200000,   10800000,
                                    21600000, 43200000, 86400000, 172800000, 604800000};
    size_t n = sizeof(steps) / sizeof(steps[0]);
    int64_t s;

    for (size_t i = 0; i < n; i++)
        if (t / steps[i] <= 10)
            return steps[i];
    s = steps[n - 1];
    while (t / s > 10)
        s *= 2;
    return s;
}

static void xml(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

static void colour(size_t job, char *buf, size_t n)
{
    /* twelve distinct colours (Tableau 10 and two more), then hues around the wheel */
    static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                          "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                          "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"};
    if (job < sizeof(palette) / sizeof(palette[0]))
        snprintf(buf, n, "%s", palette[job]);
    else
        snprintf(buf, n, "hsl(%u,%u%%,%u%%)", (unsigned)((job * 137u) % 360u),
                 55u + (unsigned)(job % 3) * 12u, 45u + (unsigned)(job % 4) * 7u);
}

int sim_report_svg(const struct sim_input *in, const struct sim_result *r, FILE *out)
{
    const double left = 180, plot_w = 900, row_h = in->n_nodes > 100 ? 4 : 14, top = 40;
    size_t rows = in->n_nodes < SVG_MAX_ROWS ? in->n_nodes : SVG_MAX_ROWS;
    size_t legend = in->n_jobs < SVG_MAX_LEGEND ? in->n_jobs : SVG_MAX_LEGEND;
    double plot_h = (double)rows * row_h, util_top = top + plot_h + 40, util_h = 80;
    /* one row per job (as many as the legend): waiting from arrival to start, then running */
    double jobs_top = util_top + util_h + 40, job_h = 12;
    double legend_top = jobs_top + (double)legend * job_h + 30;
    double height = legend_top + (double)((legend + 2) / 3) * 18 + 30, width = left + plot_w + 40;
    double T = r->end_ms > 0 ? (double)r->end_ms : 1;
    char c[64], t[32];

    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height, width, height);
    fprintf(out,
            "<text x=\"%.0f\" y=\"20\" font-size=\"14\" font-weight=\"bold\">trainsched simulate: "
            "%zu jobs on %zu nodes (%lld GPUs), %s</text>\n",
            left, in->n_jobs, in->n_nodes, (long long)r->gpus_total,
            sim_format_duration(r->end_ms, t, sizeof(t)));
    /* rows and node names */
    for (size_t i = 0; i < rows; i++) {
        double y = top + (double)i * row_h;
        if (i % 2)
            fprintf(out,
                    "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" "
                    "fill=\"#f4f4f4\"/>\n",
                    left, y, plot_w, row_h);
        if (row_h >= 10) {
            fprintf(out, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", left - 6,
                    y + row_h - 3);
            xml(out, in->nodes[i]->name);
            fputs("</text>\n", out);
        }
    }
    if (row_h < 10)
        fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">nodes (by name)</text>\n",
                left - 6, top + 12);
    if (rows < in->n_nodes)
        fprintf(out, "<text x=\"%.0f\" y=\"%.1f\">first %zu of %zu nodes shown</text>\n", left,
                top + plot_h + 12, rows, in->n_nodes);
    /* pods */
    for (size_t i = 0; i < r->n_intervals; i++) {
        const struct sim_interval *v = &r->intervals[i];
        double x0, x1;
        if (v->node >= rows)
            continue;
        x0 = left + (double)v->start / T * plot_w;
        x1 = left + (double)v->end / T * plot_w;
        colour(v->job, c, sizeof(c));
        fprintf(out,
                "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
                "stroke=\"white\" stroke-width=\"0.5\"><title>",
                x0, top + (double)v->node * row_h + 1, x1 - x0 > 0.5 ? x1 - x0 : 0.5, row_h - 2, c);
        xml(out, in->jobs[v->job].name);
        fprintf(out, " on ");
        xml(out, in->nodes[v->node]->name);
        fprintf(out, "</title></rect>\n");
    }
    /* time axis: ticks on round values (the smallest step of 1-2-5 seconds, minutes, hours or
     * days that makes at most 10 intervals) */
    {
        int64_t step = tick_step((int64_t)T);
        for (int64_t v = 0; (double)v <= T; v += step) {
            double x = left + (double)v / T * plot_w;
            fprintf(out,
                    "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
                    "stroke-width=\"0.5\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                    "text-anchor=\"middle\">%s</text>\n",
                    x, top, x, jobs_top + (double)legend * job_h, x, top + plot_h + 26,
                    sim_format_duration(v, t, sizeof(t)));
        }
    }
    /* jobs: the wait (grey, hatched: arrival to start, or to the end when it never started)
     * and the run (its colour: start to end) */
    fprintf(out,
            "<defs><pattern id=\"waiting\" width=\"4\" height=\"4\" "
            "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
            "<rect width=\"4\" height=\"4\" fill=\"#ddd\"/>"
            "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"4\" stroke=\"#999\" stroke-width=\"1.5\"/>"
            "</pattern></defs>\n"
            "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">jobs: waiting, running</text>\n",
            left - 6, jobs_top - 6);
    for (size_t j = 0; j < legend; j++) {
        const struct sim_job_result *jr = &r->jobs[j];
        double y = jobs_top + (double)j * job_h;
        int64_t w0 = in->jobs[j].arrival_ms, w1 = jr->start_ms >= 0 ? jr->start_ms : r->end_ms;
        int64_t e1 = jr->end_ms >= 0 ? jr->end_ms : r->end_ms;
        fprintf(out, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"9\">", left - 6,
                y + job_h - 3);
        xml(out, in->jobs[j].name);
        fputs("</text>\n", out);
        if (w1 > w0 && w0 <= r->end_ms) {
            fprintf(out,
                    "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                    "fill=\"url(#waiting)\"><title>",
                    left + (double)w0 / T * plot_w, y + 1, (double)(w1 - w0) / T * plot_w,
                    job_h - 2);
            xml(out, in->jobs[j].name);
            fprintf(out, " waited %s</title></rect>\n", sim_format_duration(w1 - w0, t, sizeof(t)));
        }
        if (jr->start_ms >= 0) {
            colour(j, c, sizeof(c));
            fprintf(out,
                    "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">"
                    "<title>",
                    left + (double)jr->start_ms / T * plot_w, y + 1,
                    e1 > jr->start_ms ? (double)(e1 - jr->start_ms) / T * plot_w : 0.5, job_h - 2,
                    c);
            xml(out, in->jobs[j].name);
            fputs(" running</title></rect>\n", out);
        }
    }
    /* utilisation */
    fprintf(out,
            "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">GPUs used</text>\n"
            "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
            "stroke=\"#999\"/>\n<polyline fill=\"#cde\" stroke=\"#246\" points=\"",
            left - 6, util_top + util_h / 2, left, util_top, plot_w, util_h);
    fprintf(out, "%.1f,%.1f ", left, util_top + util_h);
    for (size_t i = 0; i < r->n_samples; i++) {
        double x0 = left + (double)r->samples[i].t / T * plot_w;
        double x1 =
            left + (double)(i + 1 < r->n_samples ? r->samples[i + 1].t : r->end_ms) / T * plot_w;
        double y =
            util_top + util_h -
            (r->gpus_total ? (double)r->samples[i].gpus_used / (double)r->gpus_total : 0) * util_h;
        fprintf(out, "%.1f,%.1f %.1f,%.1f ", x0, y, x1, y);
    }
    fprintf(out, "%.1f,%.1f\"/>\n", left + plot_w, util_top + util_h);
    fprintf(out, "<text x=\"%.0f\" y=\"%.1f\">%lld</text>\n<text x=\"%.0f\" y=\"%.1f\">0</text>\n",
            left + plot_w + 4, util_top + 9, (long long)r->gpus_total, left + plot_w + 4,
            util_top + util_h);
    /* legend */
    for (size_t j = 0; j < legend; j++) {
        double x = left + (double)(j % 3) * 300, y = legend_top + (double)(j / 3) * 18;
        colour(j, c, sizeof(c));
        fprintf(out,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.0f\" y=\"%.0f\">",
                x, y, c, x + 16, y + 10);
        xml(out, in->jobs[j].name);
        fprintf(out, " (%s)</text>\n", state_names[r->jobs[j].state]);
    }
    if (legend < in->n_jobs)
        fprintf(out, "<text x=\"%.0f\" y=\"%.0f\">... and %zu more jobs</text>\n", left,
                legend_top + (double)((legend + 2) / 3) * 18 + 12, in->n_jobs - legend);
    fputs("</svg>\n", out);
    return ferror(out) ? -1 : 0;
}
