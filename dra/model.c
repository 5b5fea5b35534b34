/*
 * dra/model.c - decode resource.k8s.io/v1 ResourceSlice, DeviceClass and ResourceClaim JSON
 * into the structs of dra/dra.h (see there for the fields read and the errors).
 */
#include <string.h>

#include "dra/dra.h"

struct dec {
    struct common_arena *a;
    struct common_error *err;
    const char *kind;
    const char *name;
};

static enum common_rc bad(struct dec *d, enum common_rc code, const char *path, const char *what)
{
    return common_error_set(d->err, code, "%s %s: %s: %s", d->kind, d->name ? d->name : "(unnamed)",
                            path, what);
}

static enum common_rc nomem(struct dec *d)
{
    return common_error_set(d->err, COMMON_ENOMEM, "out of memory decoding %s", d->kind);
}

/* a string field: required (missing -> error) or optional (*out NULL) */
static enum common_rc get_str(struct dec *d, const json_t *obj, const char *key, const char *path,
                              int required, const char **out)
{
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    *out = NULL;
    if (!v || json_is_null(v))
        return required ? bad(d, COMMON_EINVAL, path, "is required") : COMMON_OK;
    if (!json_is_string(v))
        return bad(d, COMMON_EINVAL, path, "must be a string");
    if (required && json_string_length(v) == 0)
        return bad(d, COMMON_EINVAL, path, "must not be empty");
    if (!(*out = common_arena_strdup(d->a, json_string_value(v))))
        return nomem(d);
    return COMMON_OK;
}

static enum common_rc get_int(struct dec *d, const json_t *obj, const char *key, const char *path,
                              int64_t dflt, int64_t *out)
{
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    *out = dflt;
    if (!v || json_is_null(v))
        return COMMON_OK;
    if (!json_is_integer(v))
        return bad(d, COMMON_EINVAL, path, "must be an integer");
    *out = json_integer_value(v);
    return COMMON_OK;
}

static enum common_rc get_bool(struct dec *d, const json_t *obj, const char *key, const char *path,
                               int *out)
{
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    *out = 0;
    if (!v || json_is_null(v))
        return COMMON_OK;
    if (!json_is_boolean(v))
        return bad(d, COMMON_EINVAL, path, "must be a boolean");
    *out = json_is_true(v);
    return COMMON_OK;
}

static void *arr(struct dec *d, size_t n, size_t size)
{
    return common_arena_alloc(d->a, (n ? n : 1) * size);
}

/* split a qualified name "domain/name"; no domain -> the driver's */
static enum common_rc split_name(struct dec *d, const char *q, const char *driver, const char *path,
                                 const char **domain, const char **name)
{
    const char *slash = strchr(q, '/');
    if (!slash) {
        *domain = driver;
        *name = q;
    } else {
        if (slash == q || !slash[1] || strchr(slash + 1, '/'))
            return bad(d, COMMON_EINVAL, path, "a qualified name is <domain>/<name>");
        if (!(*domain = common_arena_strndup(d->a, q, (size_t)(slash - q))))
            return nomem(d);
        *name = slash + 1;
    }
    if (!*name[0])
        return bad(d, COMMON_EINVAL, path, "empty name");
    return COMMON_OK;
}

static enum common_rc decode_attr(struct dec *d, const char *key, const json_t *v,
                                  const char *driver, const char *path, struct dra_attr *at)
{
    enum common_rc rc;
    const char *k, *qk;
    const json_t *x;
    int n = 0;
    if (!(qk = common_arena_strdup(d->a, key)))
        return nomem(d);
    if ((rc = split_name(d, qk, driver, path, &at->domain, &at->name)))
        return rc;
    if (!json_is_object(v))
        return bad(d, COMMON_EINVAL, path,
                   "must be an object with one of int, bool, string, version");
    json_object_foreach((json_t *)v, k, x)
    {
        n++;
        if (strcmp(k, "int") == 0 && json_is_integer(x)) {
            at->type = DRA_ATTR_INT;
            at->i = json_integer_value(x);
        } else if (strcmp(k, "bool") == 0 && json_is_boolean(x)) {
            at->type = DRA_ATTR_BOOL;
            at->b = json_is_true(x);
        } else if (strcmp(k, "string") == 0 && json_is_string(x)) {
            at->type = DRA_ATTR_STRING;
            if (!(at->s = common_arena_strdup(d->a, json_string_value(x))))
                return nomem(d);
        } else if (strcmp(k, "version") == 0 && json_is_string(x)) {
            struct common_error e;
            at->type = DRA_ATTR_VERSION;
            if (!(at->s = common_arena_strdup(d->a, json_string_value(x))))
                return nomem(d);
            if (dra_semver_parse(at->s, &at->v, &e) != COMMON_OK)
                return bad(d, COMMON_EINVAL, path, e.msg);
        } else if (strcmp(k, "int") == 0 || strcmp(k, "bool") == 0 || strcmp(k, "string") == 0 ||
                   strcmp(k, "version") == 0) {
            return bad(d, COMMON_EINVAL, path, "attribute value has the wrong JSON type");
        } else {
            char what[160];
            snprintf(what, sizeof(what),
                     "unknown attribute value type \"%.60s\" (int, bool, string, version)", k);
            return bad(d, COMMON_EINVAL, path, what);
        }
    }
    if (n != 1)
        return bad(d, COMMON_EINVAL, path, "exactly one of int, bool, string, version must be set");
    return COMMON_OK;
}

static enum common_rc decode_device(struct dec *d, const json_t *dj, const char *driver, size_t idx,
                                    struct dra_device *dev)
{
    static const char *refused[] = {"consumesCounters", "taints", "allowMultipleAllocations",
                                    "bindingConditions"};
    char path[256];
    const json_t *attrs, *caps, *v;
    const char *k;
    enum common_rc rc;
    size_t n;
    snprintf(path, sizeof(path), "spec.devices[%zu].name", idx);
    if (!json_is_object(dj))
        return bad(d, COMMON_EINVAL, path, "device must be an object");
    if ((rc = get_str(d, dj, "name", path, 1, &dev->name)))
        return rc;
    for (size_t r = 0; r < sizeof(refused) / sizeof(refused[0]); r++) {
        v = json_object_get(dj, refused[r]);
        if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0) &&
            !json_is_false(v)) {
            snprintf(path, sizeof(path), "spec.devices[%zu].%s", idx, refused[r]);
            return bad(d, COMMON_EUNSUPPORTED, path, "not supported by trainsched's DRA core yet");
        }
    }
    dev->cel.driver = driver;
    attrs = json_object_get(dj, "attributes");
    if (attrs && !json_is_null(attrs)) {
        struct dra_attr *at;
        snprintf(path, sizeof(path), "spec.devices[%zu].attributes", idx);
        if (!json_is_object(attrs))
            return bad(d, COMMON_EINVAL, path, "must be an object");
        if (!(at = arr(d, json_object_size(attrs), sizeof(*at))))
            return nomem(d);
        n = 0;
        json_object_foreach((json_t *)attrs, k, v)
        {
            snprintf(path, sizeof(path), "spec.devices[%zu].attributes[\"%.80s\"]", idx, k);
            if ((rc = decode_attr(d, k, v, driver, path, &at[n++])))
                return rc;
        }
        dev->cel.attrs = at;
        dev->cel.n_attrs = n;
    }
    caps = json_object_get(dj, "capacity");
    if (caps && !json_is_null(caps)) {
        struct dra_capacity *c;
        snprintf(path, sizeof(path), "spec.devices[%zu].capacity", idx);
        if (!json_is_object(caps))
            return bad(d, COMMON_EINVAL, path, "must be an object");
        if (!(c = arr(d, json_object_size(caps), sizeof(*c))))
            return nomem(d);
        n = 0;
        json_object_foreach((json_t *)caps, k, v)
        {
            const json_t *val = json_is_object(v) ? json_object_get(v, "value") : NULL;
            const char *qk;
            struct common_error e;
            snprintf(path, sizeof(path), "spec.devices[%zu].capacity[\"%.80s\"].value", idx, k);
            if (!(qk = common_arena_strdup(d->a, k)))
                return nomem(d);
            if ((rc = split_name(d, qk, driver, path, &c[n].domain, &c[n].name)))
                return rc;
            if (!json_is_string(val))
                return bad(d, COMMON_EINVAL, path, "must be a quantity string");
            if (common_quantity_parse(json_string_value(val), &c[n].value, &e) != COMMON_OK)
                return bad(d, COMMON_EINVAL, path, e.msg);
            n++;
        }
        dev->cel.caps = c;
        dev->cel.n_caps = n;
    }
    return COMMON_OK;
}

enum common_rc dra_slice_decode(struct common_arena *a, const json_t *obj, struct dra_slice *out,
                                struct common_error *err)
{
    struct dec d = {a, err, "ResourceSlice", NULL};
    const json_t *spec, *pool, *devs, *v;
    enum common_rc rc;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(obj))
        return bad(&d, COMMON_EINVAL, "(object)", "must be a JSON object");
    if ((rc =
             get_str(&d, json_object_get(obj, "metadata"), "name", "metadata.name", 1, &out->name)))
        return rc;
    d.name = out->name;
    spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return bad(&d, COMMON_EINVAL, "spec", "is required");
    if ((rc = get_str(&d, spec, "driver", "spec.driver", 1, &out->driver)))
        return rc;
    pool = json_object_get(spec, "pool");
    if (!json_is_object(pool))
        return bad(&d, COMMON_EINVAL, "spec.pool", "is required");
    if ((rc = get_str(&d, pool, "name", "spec.pool.name", 1, &out->pool)) ||
        (rc = get_int(&d, pool, "generation", "spec.pool.generation", 0, &out->generation)) ||
        (rc = get_int(&d, pool, "resourceSliceCount", "spec.pool.resourceSliceCount", -1,
                      &out->slice_count)))
        return rc;
    if (out->slice_count < 1)
        return bad(&d, COMMON_EINVAL, "spec.pool.resourceSliceCount", "must be at least 1");
    if ((rc = get_str(&d, spec, "nodeName", "spec.nodeName", 0, &out->node_name)) ||
        (rc = get_bool(&d, spec, "allNodes", "spec.allNodes", &out->all_nodes)))
        return rc;
    v = json_object_get(spec, "nodeSelector");
    out->node_selector =
        (v && !json_is_null(v)) || json_is_true(json_object_get(spec, "perDeviceNodeSelection"));
    if ((!!out->node_name + out->all_nodes + out->node_selector) != 1)
        return bad(
            &d, COMMON_EINVAL, "spec.nodeName",
            "exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection must be set");
    v = json_object_get(spec, "sharedCounters");
    if (v && json_is_array(v) && json_array_size(v) > 0)
        return bad(&d, COMMON_EUNSUPPORTED, "spec.sharedCounters",
                   "partitionable devices are not supported by trainsched's DRA core yet");
    devs = json_object_get(spec, "devices");
    if (devs && !json_is_null(devs)) {
        if (!json_is_array(devs))
            return bad(&d, COMMON_EINVAL, "spec.devices", "must be a list");
        out->n_devices = json_array_size(devs);
        if (!(out->devices = arr(&d, out->n_devices, sizeof(*out->devices))))
            return nomem(&d);
        for (size_t i = 0; i < out->n_devices; i++) {
            if ((rc = decode_device(&d, json_array_get(devs, i), out->driver, i, &out->devices[i])))
                return rc;
            for (size_t j = 0; j < i; j++)
                if (strcmp(out->devices[j].name, out->devices[i].name) == 0) {
                    char path[64], what[200];
                    snprintf(path, sizeof(path), "spec.devices[%zu].name", i);
                    snprintf(what, sizeof(what),
                             "duplicate device name \"%.100s\" (also spec.devices[%zu])",
                             out->devices[i].name, j);
                    return bad(&d, COMMON_EINVAL, path, what);
                }
        }
    }
    return COMMON_OK;
}

static enum common_rc decode_selectors(struct dec *d, const json_t *list, const char *prefix,
                                       struct dra_cel_prog **out, size_t *n)
{
    enum common_rc rc;
    char path[200];
    *out = NULL;
    *n = 0;
    if (!list || json_is_null(list))
        return COMMON_OK;
    if (!json_is_array(list))
        return bad(d, COMMON_EINVAL, prefix, "must be a list");
    if (!(*out = arr(d, json_array_size(list), sizeof(**out))))
        return nomem(d);
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *cel = json_object_get(json_array_get(list, i), "cel");
        const json_t *ex = json_is_object(cel) ? json_object_get(cel, "expression") : NULL;
        struct common_error e;
        snprintf(path, sizeof(path), "%s[%zu].cel.expression", prefix, i);
        if (!json_is_string(ex))
            return bad(d, COMMON_EINVAL, path, "is required (a CEL string)");
        if ((rc = dra_cel_parse(d->a, json_string_value(ex), &(*out)[i], &e)))
            return bad(d, rc, path, e.msg);
        (*n)++;
    }
    return COMMON_OK;
}

enum common_rc dra_class_decode(struct common_arena *a, const json_t *obj, struct dra_class *out,
                                struct common_error *err)
{
    struct dec d = {a, err, "DeviceClass", NULL};
    enum common_rc rc;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(obj))
        return bad(&d, COMMON_EINVAL, "(object)", "must be a JSON object");
    if ((rc =
             get_str(&d, json_object_get(obj, "metadata"), "name", "metadata.name", 1, &out->name)))
        return rc;
    d.name = out->name;
    return decode_selectors(&d, json_object_get(json_object_get(obj, "spec"), "selectors"),
                            "spec.selectors", &out->selectors, &out->n_selectors);
}

static enum common_rc decode_exact(struct dec *d, const json_t *ej, const char *path,
                                   const char *name, struct dra_exact *x)
{
    char p[200];
    const char *mode;
    enum common_rc rc;
    const json_t *v;
    x->name = name;
    if (!json_is_object(ej))
        return bad(d, COMMON_EINVAL, path, "must be an object");
    snprintf(p, sizeof(p), "%s.deviceClassName", path);
    if ((rc = get_str(d, ej, "deviceClassName", p, 1, &x->class_name)))
        return rc;
    snprintf(p, sizeof(p), "%s.selectors", path);
    if ((rc = decode_selectors(d, json_object_get(ej, "selectors"), p, &x->selectors,
                               &x->n_selectors)))
        return rc;
    snprintf(p, sizeof(p), "%s.allocationMode", path);
    if ((rc = get_str(d, ej, "allocationMode", p, 0, &mode)))
        return rc;
    if (mode && strcmp(mode, "All") == 0)
        x->all = 1;
    else if (mode && strcmp(mode, "ExactCount") != 0)
        return bad(d, COMMON_EINVAL, p, "must be ExactCount or All");
    snprintf(p, sizeof(p), "%s.count", path);
    if ((rc = get_int(d, ej, "count", p, 1, &x->count)))
        return rc;
    if (!x->all && x->count < 1)
        return bad(d, COMMON_EINVAL, p, "must be at least 1");
    snprintf(p, sizeof(p), "%s.adminAccess", path);
    if ((rc = get_bool(d, ej, "adminAccess", p, &x->admin_access)))
        return rc;
    v = json_object_get(ej, "capacity");
    if (v && !json_is_null(v)) {
        snprintf(p, sizeof(p), "%s.capacity", path);
        return bad(d, COMMON_EUNSUPPORTED, p, "capacity requests are not supported yet");
    }
    return COMMON_OK;
}

static enum common_rc decode_request(struct dec *d, const json_t *rj, size_t i,
                                     struct dra_request *r)
{
    char path[160];
    enum common_rc rc;
    const json_t *ex, *fa;
    snprintf(path, sizeof(path), "spec.devices.requests[%zu].name", i);
    if ((rc = get_str(d, rj, "name", path, 1, &r->name)))
        return rc;
    ex = json_object_get(rj, "exactly");
    fa = json_object_get(rj, "firstAvailable");
    if (!!(ex && !json_is_null(ex)) + !!(fa && !json_is_null(fa)) != 1) {
        snprintf(path, sizeof(path), "spec.devices.requests[%zu]", i);
        return bad(d, COMMON_EINVAL, path, "exactly one of exactly, firstAvailable must be set");
    }
    if (ex && !json_is_null(ex)) {
        snprintf(path, sizeof(path), "spec.devices.requests[%zu].exactly", i);
        r->n_alts = 1;
        if (!(r->alts = arr(d, 1, sizeof(*r->alts))))
            return nomem(d);
        return decode_exact(d, ex, path, r->name, &r->alts[0]);
    }
    snprintf(path, sizeof(path), "spec.devices.requests[%zu].firstAvailable", i);
    if (!json_is_array(fa) || json_array_size(fa) == 0)
        return bad(d, COMMON_EINVAL, path, "must be a non-empty list");
    r->first_available = 1;
    r->n_alts = json_array_size(fa);
    if (!(r->alts = arr(d, r->n_alts, sizeof(*r->alts))))
        return nomem(d);
    for (size_t k = 0; k < r->n_alts; k++) {
        const json_t *sj = json_array_get(fa, k);
        const char *sub;
        char *full;
        snprintf(path, sizeof(path), "spec.devices.requests[%zu].firstAvailable[%zu].name", i, k);
        if ((rc = get_str(d, sj, "name", path, 1, &sub)))
            return rc;
        if (!(full = common_arena_printf(d->a, "%s/%s", r->name, sub)))
            return nomem(d);
        snprintf(path, sizeof(path), "spec.devices.requests[%zu].firstAvailable[%zu]", i, k);
        if ((rc = decode_exact(d, sj, path, full, &r->alts[k])))
            return rc;
    }
    return COMMON_OK;
}

static enum common_rc decode_constraint(struct dec *d, const json_t *cj, size_t i,
                                        struct dra_constraint *c)
{
    char path[160];
    const char *ma;
    const json_t *reqs, *v;
    enum common_rc rc;
    v = json_object_get(cj, "distinctAttribute");
    if (v && !json_is_null(v)) {
        snprintf(path, sizeof(path), "spec.devices.constraints[%zu].distinctAttribute", i);
        return bad(d, COMMON_EUNSUPPORTED, path, "not supported by trainsched's DRA core yet");
    }
    snprintf(path, sizeof(path), "spec.devices.constraints[%zu].matchAttribute", i);
    if ((rc = get_str(d, cj, "matchAttribute", path, 1, &ma)))
        return rc;
    if (!strchr(ma, '/'))
        return bad(d, COMMON_EINVAL, path, "must be a fully qualified name (<domain>/<name>)");
    if ((rc = split_name(d, ma, NULL, path, &c->attr_domain, &c->attr_name)))
        return rc;
    reqs = json_object_get(cj, "requests");
    if (reqs && !json_is_null(reqs)) {
        snprintf(path, sizeof(path), "spec.devices.constraints[%zu].requests", i);
        if (!json_is_array(reqs))
            return bad(d, COMMON_EINVAL, path, "must be a list");
        if (!(c->requests = arr(d, json_array_size(reqs), sizeof(*c->requests))))
            return nomem(d);
        for (size_t k = 0; k < json_array_size(reqs); k++) {
            const json_t *s = json_array_get(reqs, k);
            if (!json_is_string(s))
                return bad(d, COMMON_EINVAL, path, "must be a list of request names");
            if (!(c->requests[c->n_requests++] = common_arena_strdup(d->a, json_string_value(s))))
                return nomem(d);
        }
    }
    return COMMON_OK;
}

static enum common_rc decode_results(struct dec *d, const json_t *res, struct dra_claim *c)
{
    char path[160];
    enum common_rc rc;
    if (!res || json_is_null(res))
        return COMMON_OK;
    if (!json_is_array(res))
        return bad(d, COMMON_EINVAL, "status.allocation.devices.results", "must be a list");
    if (!(c->allocated = arr(d, json_array_size(res), sizeof(*c->allocated))))
        return nomem(d);
    for (size_t i = 0; i < json_array_size(res); i++) {
        const json_t *rj = json_array_get(res, i);
        struct dra_result *r = &c->allocated[i];
        snprintf(path, sizeof(path), "status.allocation.devices.results[%zu]", i);
        if (!json_is_object(rj))
            return bad(d, COMMON_EINVAL, path, "must be an object");
        if ((rc = get_str(d, rj, "request", path, 1, &r->request)) ||
            (rc = get_str(d, rj, "driver", path, 1, &r->driver)) ||
            (rc = get_str(d, rj, "pool", path, 1, &r->pool)) ||
            (rc = get_str(d, rj, "device", path, 1, &r->device)) ||
            (rc = get_bool(d, rj, "adminAccess", path, &r->admin_access)))
            return rc;
        c->n_allocated++;
    }
    return COMMON_OK;
}

/* every name in constraints[i].requests is a request ("gpu") or a subrequest ("gpu/h100") */
static enum common_rc check_constraint_requests(struct dec *d, const struct dra_claim *c, size_t i)
{
    const struct dra_constraint *con = &c->constraints[i];
    for (size_t k = 0; k < con->n_requests; k++) {
        int found = 0;
        for (size_t r = 0; r < c->n_requests && !found; r++)
            for (size_t a = 0; a < c->requests[r].n_alts && !found; a++)
                found = strcmp(con->requests[k], c->requests[r].name) == 0 ||
                        strcmp(con->requests[k], c->requests[r].alts[a].name) == 0;
        if (!found) {
            char path[96], what[160];
            snprintf(path, sizeof(path), "spec.devices.constraints[%zu].requests[%zu]", i, k);
            snprintf(what, sizeof(what), "\"%.100s\" is not a request of this claim",
                     con->requests[k]);
            return bad(d, COMMON_EINVAL, path, what);
        }
    }
    return COMMON_OK;
}

/* the node an allocation pins to: nodeSelector.nodeSelectorTerms[0] with one matchFields
 * metadata.name In [node] or one matchExpressions kubernetes.io/hostname In [node], as the
 * structured allocator writes it; NULL when absent or of another shape */
static const char *alloc_node_name(struct dec *d, const json_t *alloc)
{
    const json_t *terms =
        json_object_get(json_object_get(alloc, "nodeSelector"), "nodeSelectorTerms");
    const json_t *t = json_array_get(terms, 0);
    static const char *const lists[] = {"matchFields", "matchExpressions"};
    static const char *const keys[] = {"metadata.name", "kubernetes.io/hostname"};

    if (json_array_size(terms) != 1)
        return NULL;
    for (int i = 0; i < 2; i++) {
        const json_t *r = json_array_get(json_object_get(t, lists[i]), 0);
        const json_t *v = json_object_get(r, "values");
        if (r && json_is_string(json_object_get(r, "key")) &&
            strcmp(json_string_value(json_object_get(r, "key")), keys[i]) == 0 &&
            json_is_string(json_object_get(r, "operator")) &&
            strcmp(json_string_value(json_object_get(r, "operator")), "In") == 0 &&
            json_array_size(v) == 1 && json_is_string(json_array_get(v, 0)))
            return common_arena_strdup(d->a, json_string_value(json_array_get(v, 0)));
    }
    return NULL;
}

/* uid, the pod that owns a claim made from a template (ownerReferences kind Pod), the
 * annotation resource.kubernetes.io/pod-claim-name, status.reservedFor[] pod uids */
static enum common_rc claim_meta(struct dec *d, const json_t *obj, struct dra_claim *out)
{
    const json_t *meta = json_object_get(obj, "metadata"), *o, *rf;
    const json_t *ann = json_object_get(meta, "annotations");
    size_t i;

    if (json_is_string(json_object_get(meta, "uid")) &&
        !(out->uid = common_arena_strdup(d->a, json_string_value(json_object_get(meta, "uid")))))
        return nomem(d);
    if (json_is_string(json_object_get(ann, DRA_POD_CLAIM_NAME_ANNOTATION)) &&
        !(out->pod_claim_name = common_arena_strdup(
              d->a, json_string_value(json_object_get(ann, DRA_POD_CLAIM_NAME_ANNOTATION)))))
        return nomem(d);
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, o)
    {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        const char *uid = json_string_value(json_object_get(o, "uid"));
        if (kind && uid && strcmp(kind, "Pod") == 0) {
            if (!(out->owner_pod_uid = common_arena_strdup(d->a, uid)))
                return nomem(d);
            break;
        }
    }
    rf = json_object_get(json_object_get(obj, "status"), "reservedFor");
    if (json_array_size(rf)) {
        if (!(out->reserved_for = arr(d, json_array_size(rf), sizeof(*out->reserved_for))))
            return nomem(d);
        json_array_foreach(rf, i, o)
        {
            const char *uid = json_string_value(json_object_get(o, "uid"));
            if (uid && !(out->reserved_for[out->n_reserved_for++] = common_arena_strdup(d->a, uid)))
                return nomem(d);
        }
    }
    return COMMON_OK;
}

enum common_rc dra_claim_decode(struct common_arena *a, const json_t *obj, struct dra_claim *out,
                                struct common_error *err)
{
    struct dec d = {a, err, "ResourceClaim", NULL};
    const json_t *meta, *devs, *reqs, *cons, *alloc;
    enum common_rc rc;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(obj))
        return bad(&d, COMMON_EINVAL, "(object)", "must be a JSON object");
    meta = json_object_get(obj, "metadata");
    if ((rc = get_str(&d, meta, "name", "metadata.name", 1, &out->name)) ||
        (rc = get_str(&d, meta, "namespace", "metadata.namespace", 0, &out->ns)))
        return rc;
    if (!out->ns)
        out->ns = "default";
    if (!(d.name = common_arena_printf(a, "%s/%s", out->ns, out->name)))
        return nomem(&d);
    devs = json_object_get(json_object_get(obj, "spec"), "devices");
    reqs = json_object_get(devs, "requests");
    if (reqs && !json_is_null(reqs)) {
        if (!json_is_array(reqs))
            return bad(&d, COMMON_EINVAL, "spec.devices.requests", "must be a list");
        if (!(out->requests = arr(&d, json_array_size(reqs), sizeof(*out->requests))))
            return nomem(&d);
        for (size_t i = 0; i < json_array_size(reqs); i++) {
            if ((rc = decode_request(&d, json_array_get(reqs, i), i, &out->requests[i])))
                return rc;
            for (size_t j = 0; j < i; j++)
                if (strcmp(out->requests[j].name, out->requests[i].name) == 0)
                    return bad(&d, COMMON_EINVAL, "spec.devices.requests",
                               "duplicate request name");
            out->n_requests++;
        }
    }
    cons = json_object_get(devs, "constraints");
    if (cons && !json_is_null(cons)) {
        if (!json_is_array(cons))
            return bad(&d, COMMON_EINVAL, "spec.devices.constraints", "must be a list");
        if (!(out->constraints = arr(&d, json_array_size(cons), sizeof(*out->constraints))))
            return nomem(&d);
        for (size_t i = 0; i < json_array_size(cons); i++) {
            if ((rc = decode_constraint(&d, json_array_get(cons, i), i, &out->constraints[i])) ||
                (rc = check_constraint_requests(&d, out, i)))
                return rc;
            out->n_constraints++;
        }
    }
    if ((rc = claim_meta(&d, obj, out)))
        return rc;
    alloc = json_object_get(json_object_get(obj, "status"), "allocation");
    if (alloc && !json_is_null(alloc)) {
        out->is_allocated = 1;
        out->alloc_node = alloc_node_name(&d, alloc);
        return decode_results(&d, json_object_get(json_object_get(alloc, "devices"), "results"),
                              out);
    }
    return COMMON_OK;
}
