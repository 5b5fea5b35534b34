/*
 * dra/status.c - status.allocation exactly as kube-scheduler 1.36.3 writes it (dra/status.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dra/status.h"

char *dra_status_timestamp(long long epoch_s, char *buf, size_t len)
{
    time_t t = (time_t)epoch_s;
    struct tm tm;

    if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, len, "1970-01-01T00:00:00Z");
    return buf;
}

/* the request object of result name rn ("gpu" or "gpu/sub") in claim's requests: *req gets
 * the top-level request, *exact its `exactly` or the chosen subrequest; 0 when absent */
static int find_request(const json_t *reqs, const char *rn, const json_t **req,
                        const json_t **exact)
{
    const char *slash = strchr(rn, '/');
    size_t tl = slash ? (size_t)(slash - rn) : strlen(rn);
    const json_t *r, *s;
    size_t i, k;

    json_array_foreach(reqs, i, r)
    {
        const char *name = json_string_value(json_object_get(r, "name"));
        if (!name || strlen(name) != tl || strncmp(name, rn, tl) != 0)
            continue;
        *req = r;
        if (!slash) {
            *exact = json_object_get(r, "exactly");
            return *exact != NULL;
        }
        json_array_foreach(json_object_get(r, "firstAvailable"), k, s)
        {
            const char *sn = json_string_value(json_object_get(s, "name"));
            if (sn && strcmp(sn, slash + 1) == 0) {
                *exact = s;
                return 1;
            }
        }
        return 0;
    }
    return 0;
}

/* the result name of request r of the claim: its own name, or "<name>/<sub>" of the first
 * result of a firstAvailable request; NULL when no result serves it */
static const char *result_name(const json_t *r, const struct dra_result *res, size_t n)
{
    const char *name = json_string_value(json_object_get(r, "name"));
    size_t l;

    if (!name)
        return NULL;
    l = strlen(name);
    for (size_t i = 0; i < n; i++) {
        if (!json_object_get(r, "firstAvailable")) {
            if (strcmp(res[i].request, name) == 0)
                return name;
        } else if (strncmp(res[i].request, name, l) == 0 && res[i].request[l] == '/') {
            return res[i].request;
        }
    }
    return NULL;
}

static int list_has(const json_t *list, const char *s)
{
    const json_t *v;
    size_t i;
    json_array_foreach(list, i,
                       v) if (json_is_string(v) && strcmp(json_string_value(v), s) == 0) return 1;
    return 0;
}

/* one devices.config[] entry: source, requests (a new reference or NULL), the configuration
 * fields of conf (everything but `requests`: today `opaque`) */
static int config_append(json_t *out, const char *source, json_t *requests, const json_t *conf)
{
    json_t *o = json_object();
    const char *k;
    json_t *v;

    if (!o || json_object_set_new(o, "source", json_string(source))) {
        json_decref(requests);
        json_decref(o);
        return -1;
    }
    if (requests && json_object_set_new(o, "requests", requests))
        goto bad;
    json_object_foreach((json_t *)conf, k, v)
    {
        if (strcmp(k, "requests") == 0)
            continue;
        if (json_object_set_new(o, k, json_deep_copy(v)))
            goto bad;
    }
    return json_array_append_new(out, o);
bad:
    json_decref(o);
    return -1;
}

/* devices.config as upstream's allocator builds it (allocator_incubating.go, "Populate
 * configs"): class configs once per class in request order, then claim configs */
static int configs(json_t *out, const json_t *claim, dra_class_lookup classes, void *ctx,
                   const struct dra_result *res, size_t n)
{
    const json_t *devs = json_object_get(json_object_get(claim, "spec"), "devices");
    const json_t *reqs = json_object_get(devs, "requests"), *r, *cc;
    const char *seen[64];
    size_t start[64], end[64], n_seen = 0, i, k;

    json_array_foreach(reqs, i, r)
    {
        const char *rn = result_name(r, res, n), *cls;
        const json_t *top, *ex, *cl, *cfg;
        size_t s = 0;
        if (!rn || !find_request(reqs, rn, &top, &ex))
            continue;
        if (!(cls = json_string_value(json_object_get(ex, "deviceClassName"))) ||
            !(cl = classes ? classes(ctx, cls) : NULL))
            continue;
        while (s < n_seen && strcmp(seen[s], cls) != 0)
            s++;
        if (s < n_seen) {
            for (size_t c = start[s]; c < end[s]; c++)
                if (json_array_append_new(json_object_get(json_array_get(out, c), "requests"),
                                          json_string(rn)))
                    return -1;
            continue;
        }
        if (n_seen == sizeof(seen) / sizeof(seen[0]))
            return -1;
        seen[n_seen] = cls;
        start[n_seen] = json_array_size(out);
        json_array_foreach(json_object_get(json_object_get(cl, "spec"), "config"), k, cfg)
        {
            if (config_append(out, "FromClass", json_pack("[s]", rn), cfg))
                return -1;
        }
        end[n_seen++] = json_array_size(out);
    }
    json_array_foreach(json_object_get(devs, "config"), k, cc)
    {
        const json_t *cr = json_object_get(cc, "requests");
        if (json_array_size(cr) == 0) {
            if (config_append(out, "FromClaim", NULL, cc))
                return -1;
            continue;
        }
        json_array_foreach(reqs, i, r)
        {
            const char *name = json_string_value(json_object_get(r, "name"));
            const char *rn;
            if (name && list_has(cr, name)) {
                if (config_append(out, "FromClaim", json_deep_copy(cr), cc))
                    return -1;
                continue;
            }
            if (!json_object_get(r, "firstAvailable") || !(rn = result_name(r, res, n)))
                continue;
            if (list_has(cr, rn) && config_append(out, "FromClaim", json_deep_copy(cr), cc))
                return -1;
        }
    }
    return 0;
}

json_t *dra_status_allocation(const json_t *claim, dra_class_lookup classes, void *ctx,
                              const struct dra_result *results, size_t n, const char *node,
                              int node_local, const char *timestamp, struct common_error *err)
{
    const json_t *reqs =
        json_object_get(json_object_get(json_object_get(claim, "spec"), "devices"), "requests");
    json_t *a = json_object(), *devs = json_object(), *res = json_array(), *cfg = json_array();

    if (!a || !devs || !res || !cfg || json_object_set_new(a, "devices", devs) ||
        json_object_set_new(devs, "results", res)) {
        json_decref(cfg);
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        const struct dra_result *r = &results[i];
        const json_t *top = NULL, *ex = NULL, *tol;
        json_t *o;
        if (!find_request(reqs, r->request, &top, &ex)) {
            json_decref(cfg);
            json_decref(a);
            common_error_set(err, COMMON_EINVAL,
                             "status.allocation.devices.results[%zu].request: \"%s\" is not a "
                             "request of the claim",
                             i, r->request);
            return NULL;
        }
        o = json_pack("{s:s, s:s, s:s, s:s}", "request", r->request, "driver", r->driver, "pool",
                      r->pool, "device", r->device);
        if (!o || json_array_append_new(res, o)) {
            json_decref(cfg);
            goto nomem;
        }
        if (r->admin_access && json_object_set_new(o, "adminAccess", json_true())) {
            json_decref(cfg);
            goto nomem;
        }
        tol = json_object_get(ex, "tolerations");
        if (json_array_size(tol) && json_object_set_new(o, "tolerations", json_deep_copy(tol))) {
            json_decref(cfg);
            goto nomem;
        }
    }
    if (configs(cfg, claim, classes, ctx, results, n)) {
        json_decref(cfg);
        goto nomem;
    }
    if (json_array_size(cfg) ? json_object_set_new(devs, "config", cfg) : (json_decref(cfg), 0))
        goto nomem;
    if (node_local && node &&
        json_object_set_new(a, "nodeSelector",
                            json_pack("{s:[{s:[{s:s, s:s, s:[s]}]}]}", "nodeSelectorTerms",
                                      "matchFields", "key", "metadata.name", "operator", "In",
                                      "values", node)))
        goto nomem;
    if (json_object_set_new(a, "allocationTimestamp", json_string(timestamp)))
        goto nomem;
    return a;
nomem:
    json_decref(a);
    common_error_set(err, COMMON_ENOMEM, "no memory for status.allocation");
    return NULL;
}
