/*
 * sim/report.c - a simulation result as JSON (YAML is the same object), text tables and an
 * SVG timeline (sim.h). Formatting only: every number comes from struct sim_result.
 */
#include <stdio.h>
#include <string.h>

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

static json_t *round4(double v)
{
    return json_real((double)(long long)(v * 10000.0 + 0.5) / 10000.0);
}

json_t *sim_report_json(const struct sim_input *in, const struct sim_result *r)
{
    json_t *root = json_object(), *jobs = json_array(), *tl = json_array(), *lv = json_array();
    json_t *sum = json_object(), *one = json_object();
    size_t counts[4] = {0, 0, 0, 0};
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
        if (o && j->note)
            bad |= json_object_set_new(o, "note", json_string(j->note));
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
        bad |= !tps || !cl || json_object_set_new(cl, "topologies", tps);
        bad |= !cl || !s2 || json_object_set_new(root, "cluster", cl) ||
               json_object_set_new(root, "summary", s2);
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

/* "a, b, c, ... (+n more)" of the job's nodes */
static void node_list(const struct sim_job_result *jr, char *buf, size_t n)
{
    size_t off = 0;

    buf[0] = '\0';
    if (!jr->n_nodes) {
        snprintf(buf, n, "-");
        return;
    }
    for (size_t k = 0; k < jr->n_nodes && k < 3 && off < n; k++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", k ? "," : "", jr->nodes[k]);
    if (jr->n_nodes > 3 && off < n)
        snprintf(buf + off, n - off, ",...(+%zu)", jr->n_nodes - 3);
}

int sim_report_text(const struct sim_input *in, const struct sim_result *r, FILE *out)
{
    char a[32], b[32], c[32], d[32], nodes[400];
    size_t counts[4] = {0, 0, 0, 0};
    size_t width = 24;

    for (size_t i = 0; i < in->n_jobs; i++)
        if (strlen(in->jobs[i].name) > width)
            width = strlen(in->jobs[i].name) > 60 ? 60 : strlen(in->jobs[i].name);
    fprintf(out, "Cluster: %zu nodes, %lld %s", in->n_nodes, (long long)r->gpus_total,
            in->gpu_resource);
    for (size_t l = 0; l < in->n_levels; l++)
        fprintf(out, "%s%s", l ? ", " : "; levels ", in->levels[l]);
    for (size_t t = 0; t < in->n_topologies; t++) {
        fprintf(out, "%s%s=", t ? "; " : "\nTopologies (first is the default): ",
                in->topologies[t].name);
        for (size_t l = 0; l < in->topologies[t].n_levels; l++)
            fprintf(out, "%s%s", l ? "," : "", in->topologies[t].levels[l]);
    }
    fprintf(out, "\n\n%-*s %-8s %5s %5s %8s %8s %8s %8s  %-10s %s\n", (int)width, "JOB", "KIND",
            "PODS", "GPUS", "ARRIVAL", "START", "WAIT", "END", "STATE", "NODES");
    for (size_t i = 0; i < in->n_jobs; i++) {
        const struct sim_job *j = &in->jobs[i];
        const struct sim_job_result *jr = &r->jobs[i];
        counts[jr->state]++;
        node_list(jr, nodes, sizeof(nodes));
        fprintf(out, "%-*s %-8s %5zu %5lld %8s %8s %8s %8s  %-10s %s\n", (int)width, j->name,
                j->kind, j->n_pods, (long long)j->gpus,
                sim_format_duration(j->arrival_ms, a, sizeof(a)),
                sim_format_duration(jr->start_ms, b, sizeof(b)),
                sim_format_duration(jr->wait_ms, c, sizeof(c)),
                sim_format_duration(jr->end_ms, d, sizeof(d)), state_names[jr->state], nodes);
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
        if (jr->gang_failures)
            fprintf(out,
                    "%*s %u gang attempt(s) failed (held members released at the timeout "
                    "or when a planned node was lost; backoff followed)\n",
                    (int)width, "", jr->gang_failures);
        if (j->note)
            fprintf(out, "%*s note: %s\n", (int)width, "", j->note);
    }
    fprintf(out,
            "\nSummary: %zu jobs: %zu completed, %zu running, %zu waiting, %zu never fit; "
            "simulated %s\n",
            in->n_jobs, counts[0], counts[1], counts[2], counts[3],
            sim_format_duration(r->end_ms, a, sizeof(a)));
    fprintf(out, "  GPU utilisation (time average): %.1f%%\n", r->util_avg * 100.0);
    fprintf(out, "  wait: average %s, max %s\n",
            sim_format_duration((int64_t)(r->wait_avg_ms + 0.5), a, sizeof(a)),
            sim_format_duration(r->wait_max_ms, b, sizeof(b)));
    fprintf(out,
            "  GPU-hours idle while jobs waited: %.2f; of those fragmented (free GPUs on "
            "nodes with too few for a pod of the smallest waiting gang): %.2f\n",
            r->gpu_hours_idle, r->gpu_hours_frag);
    for (size_t l = 0; l < in->n_levels; l++)
        fprintf(out, "  multi-pod jobs within one %s: %u of %u\n", in->levels[l],
                r->jobs_in_one_domain[l], r->multi_pod_jobs);
    fprintf(out, "  decisions: %llu filters, %llu binds, %llu gang attempts failed\n",
            (unsigned long long)r->filters, (unsigned long long)r->binds,
            (unsigned long long)r->gang_failures);
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
    double legend_top = util_top + util_h + 40;
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
    /* time axis */
    for (int k = 0; k <= 10; k++) {
        double x = left + plot_w * k / 10.0;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
                "stroke-width=\"0.5\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%s</text>\n",
                x, top, x, util_top + util_h, x, top + plot_h + 26,
                sim_format_duration((int64_t)(T * k / 10.0), t, sizeof(t)));
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
