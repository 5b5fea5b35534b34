/*
 * trainjob/podspec.c - JSON helpers for pod templates: lookups, upserts, strategic merge,
 * effective pod requests and GPU counts. Pure functions over jansson values.
 */
#include <ctype.h>
#include <string.h>

#include "trainjob/trainjob_int.h"

json_t *tj_get(const json_t *obj, const char *dotted)
{
    char key[256];
    const char *p = dotted;
    json_t *cur = (json_t *)obj;

    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key) || !json_is_object(cur))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        cur = json_object_get(cur, key);
        p = dot ? dot + 1 : p + n;
    }
    return cur;
}

const char *tj_str(const json_t *obj, const char *dotted)
{
    json_t *v = tj_get(obj, dotted);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int tj_set(json_t *obj, const char *key, json_t *value)
{
    if (!value)
        return -1;
    return json_object_set_new(obj, key, value);
}

json_t *tj_obj(json_t *parent, const char *key)
{
    json_t *v = json_object_get(parent, key);
    if (json_is_object(v))
        return v;
    v = json_object();
    if (!v || json_object_set_new(parent, key, v))
        return NULL;
    return v;
}

json_t *tj_arr(json_t *parent, const char *key)
{
    json_t *v = json_object_get(parent, key);
    if (json_is_array(v))
        return v;
    v = json_array();
    if (!v || json_object_set_new(parent, key, v))
        return NULL;
    return v;
}

json_t *tj_find_named(const json_t *arr, const char *key, const char *value)
{
    size_t i;
    json_t *it;

    if (!json_is_array(arr) || !value)
        return NULL;
    json_array_foreach(arr, i, it)
    {
        const char *v = json_string_value(json_object_get(it, key));
        if (v && strcmp(v, value) == 0)
            return it;
    }
    return NULL;
}

json_t *tj_env_value(const char *name, const char *value)
{
    return json_pack("{s:s, s:s}", "name", name, "value", value);
}

json_t *tj_env_fieldref(const char *name, const char *path)
{
    return json_pack("{s:s, s:{s:{s:s}}}", "name", name, "valueFrom", "fieldRef", "fieldPath",
                     path);
}

static int same_key(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return 0;
    return json_equal((json_t *)a, (json_t *)b);
}

int tj_upsert(json_t *arr, const char *key, json_t *item)
{
    size_t i;
    json_t *it, *k;

    if (!item)
        return -1;
    k = json_object_get(item, key);
    json_array_foreach(arr, i, it)
    {
        if (same_key(json_object_get(it, key), k))
            return json_array_set_new(arr, i, item);
    }
    return json_array_append_new(arr, item);
}

int tj_upsert_env(json_t *container, const json_t *env)
{
    json_t *list, *e;
    size_t i;

    if (!json_is_array(env) || json_array_size(env) == 0)
        return 0;
    list = tj_arr(container, "env");
    if (!list)
        return -1;
    json_array_foreach(env, i, e)
    {
        if (tj_upsert(list, "name", json_deep_copy(e)))
            return -1;
    }
    return 0;
}

int tj_upsert_port(json_t *container, int port)
{
    json_t *ports = tj_arr(container, "ports");
    size_t i;
    json_t *it;

    if (!ports)
        return -1;
    json_array_foreach(ports, i, it)
    {
        if (json_integer_value(json_object_get(it, "containerPort")) == port)
            return 0;
    }
    return json_array_append_new(ports, json_pack("{s:I}", "containerPort", (json_int_t)port));
}

json_t *tj_container(json_t *podspec, const char *name)
{
    return tj_find_named(json_object_get(podspec, "containers"), "name", name);
}

json_t *tj_any_container(json_t *podspec, const char *name)
{
    json_t *c = tj_container(podspec, name);
    return c ? c : tj_find_named(json_object_get(podspec, "initContainers"), "name", name);
}

/* ---- strategic merge patch ---- */

static const struct {
    const char *list;
    const char *key;
} merge_keys[] = {
    {"replicatedJobs", "name"},
    {"containers", "name"},
    {"initContainers", "name"},
    {"volumes", "name"},
    {"env", "name"},
    {"imagePullSecrets", "name"},
    {"schedulingGates", "name"},
    {"volumeMounts", "mountPath"},
    {"ports", "containerPort"},
    {"resourceClaims", "name"},
    {"ephemeralContainers", "name"},
    {"claims", "name"},
};

static const char *merge_key_for(const char *list)
{
    for (size_t i = 0; i < sizeof(merge_keys) / sizeof(merge_keys[0]); i++)
        if (strcmp(merge_keys[i].list, list) == 0)
            return merge_keys[i].key;
    return NULL;
}

static int merge_value(json_t *parent, const char *key, const json_t *patch);

static int merge_object(json_t *target, const json_t *patch)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)patch, k, v)
    {
        if (k[0] == '$')
            continue; /* patch directives are not used by Trainer's patches */
        if (json_is_null(v)) {
            json_object_del(target, k);
            continue;
        }
        if (merge_value(target, k, v))
            return -1;
    }
    return 0;
}

static int merge_list(json_t *target, const json_t *patch, const char *mkey)
{
    size_t i;
    json_t *p;

    json_array_foreach(patch, i, p)
    {
        json_t *t = NULL;
        json_t *pk = json_object_get(p, mkey);
        size_t j;
        json_t *it;

        if (pk) {
            json_array_foreach(target, j, it)
            {
                if (same_key(json_object_get(it, mkey), pk)) {
                    t = it;
                    break;
                }
            }
        }
        if (t && json_is_object(t)) {
            if (merge_object(t, p))
                return -1;
        } else if (json_array_append_new(target, json_deep_copy(p))) {
            return -1;
        }
    }
    return 0;
}

static int merge_value(json_t *parent, const char *key, const json_t *patch)
{
    json_t *cur = json_object_get(parent, key);

    if (json_is_object(patch) && json_is_object(cur))
        return merge_object(cur, patch);
    if (json_is_array(patch) && json_is_array(cur)) {
        const char *mkey = merge_key_for(key);
        if (mkey)
            return merge_list(cur, patch, mkey);
    }
    return tj_set(parent, key, json_deep_copy(patch));
}

int tj_strategic_merge(json_t *target, const json_t *patch)
{
    if (!json_is_object(target) || !json_is_object(patch))
        return 0;
    return merge_object(target, patch);
}

/* ---- resources ---- */

enum common_rc tj_quantity(const json_t *v, struct common_quantity *q, struct common_error *err)
{
    char num[64];
    const char *s = json_string_value(v);

    if (json_is_integer(v)) {
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        s = num;
    } else if (json_is_real(v)) {
        snprintf(num, sizeof(num), "%.15g", json_real_value(v));
        s = num;
    }
    if (!s)
        return common_error_set(err, COMMON_EINVAL, "not a quantity");
    return common_quantity_parse(s, q, err);
}

/* acc[name] += q for every request of one container (resources.requests) */
static enum common_rc add_requests(json_t *acc, const json_t *requests, struct common_error *err)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)requests, k, v)
    {
        struct common_quantity q, cur;
        char buf[80];
        enum common_rc rc;

        rc = tj_quantity(v, &q, err);
        if (rc)
            return rc;
        if (json_is_string(json_object_get(acc, k))) {
            rc = common_quantity_parse(json_string_value(json_object_get(acc, k)), &cur, err);
            if (rc)
                return rc;
            rc = common_quantity_add(&cur, &q, err);
            if (rc)
                return rc;
        } else {
            cur = q;
        }
        if (common_quantity_format(&cur, buf, sizeof(buf)) < 0 || tj_set(acc, k, json_string(buf)))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

/* acc[name] = max(acc[name], other[name]) */
static enum common_rc max_into(json_t *acc, const json_t *other, struct common_error *err)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)other, k, v)
    {
        struct common_quantity a, b;
        enum common_rc rc;
        json_t *cur = json_object_get(acc, k);

        if (!cur) {
            if (tj_set(acc, k, json_copy(v)))
                return common_error_set(err, COMMON_ENOMEM, "out of memory");
            continue;
        }
        rc = tj_quantity(cur, &a, err);
        if (!rc)
            rc = tj_quantity(v, &b, err);
        if (rc)
            return rc;
        if (common_quantity_cmp(&b, &a) > 0 && tj_set(acc, k, json_copy(v)))
            return common_error_set(err, COMMON_ENOMEM, "out of memory");
    }
    return COMMON_OK;
}

enum common_rc tj_pod_requests(const json_t *podspec, json_t **out, struct common_error *err)
{
    json_t *sum = json_object(), *init_max = json_object(), *sidecars = json_object();
    json_t *it;
    size_t i;
    enum common_rc rc = COMMON_OK;

    if (!sum || !init_max || !sidecars) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    json_array_foreach(json_object_get(podspec, "containers"), i, it)
    {
        rc = add_requests(sum, tj_get(it, "resources.requests"), err);
        if (rc)
            goto out;
    }
    /* init containers run in order; restartable ones (sidecars) keep running */
    json_array_foreach(json_object_get(podspec, "initContainers"), i, it)
    {
        const char *policy = tj_str(it, "restartPolicy");
        if (policy && strcmp(policy, "Always") == 0) {
            rc = add_requests(sum, tj_get(it, "resources.requests"), err);
            if (!rc)
                rc = add_requests(sidecars, tj_get(it, "resources.requests"), err);
        } else {
            json_t *one = json_deep_copy(sidecars);
            if (!one) {
                rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
                goto out;
            }
            rc = add_requests(one, tj_get(it, "resources.requests"), err);
            if (!rc)
                rc = max_into(init_max, one, err);
            json_decref(one);
        }
        if (rc)
            goto out;
    }
    rc = max_into(sum, init_max, err);
    if (!rc)
        rc = add_requests(sum, json_object_get(podspec, "overhead"), err);
out:
    json_decref(init_max);
    json_decref(sidecars);
    if (rc) {
        json_decref(sum);
        sum = NULL;
    }
    *out = sum;
    return rc;
}

static int contains_gpu(const char *name)
{
    for (const char *p = name; *p; p++) {
        if (tolower((unsigned char)p[0]) == 'g' && tolower((unsigned char)p[1]) == 'p' &&
            tolower((unsigned char)p[2]) == 'u')
            return 1;
        if (!p[1] || !p[2])
            break;
    }
    return 0;
}

static int64_t gpu_in(const json_t *list)
{
    const char *best = NULL;
    const json_t *bestv = NULL;
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)list, k, v)
    {
        if (contains_gpu(k) && (!best || strcmp(k, best) < 0)) {
            best = k;
            bestv = v;
        }
    }
    if (!bestv)
        return 0;
    {
        struct common_quantity q;
        int64_t n = 0;
        if (tj_quantity(bestv, &q, NULL) || common_quantity_value_ceil(&q, &n, NULL))
            return 0;
        return n;
    }
}

int64_t tj_gpu_count(const json_t *resources)
{
    int64_t n;

    if (!resources)
        return 0;
    n = gpu_in(json_object_get(resources, "requests"));
    if (n > 0)
        return n;
    return gpu_in(json_object_get(resources, "limits"));
}

/* Quantities written as YAML/JSON numbers become the strings Kubernetes prints, as a Go
 * resource.Quantity re-marshals them: in every "limits", "requests" and "overhead" map. */
int tj_normalize_quantities(json_t *v)
{
    const char *k;
    json_t *child;
    size_t i;

    if (json_is_array(v)) {
        json_array_foreach(v, i, child)
        {
            if (tj_normalize_quantities(child))
                return -1;
        }
        return 0;
    }
    if (!json_is_object(v))
        return 0;
    json_object_foreach(v, k, child)
    {
        if (json_is_object(child) && (strcmp(k, "limits") == 0 || strcmp(k, "requests") == 0 ||
                                      strcmp(k, "overhead") == 0)) {
            const char *rk;
            json_t *q;
            json_object_foreach(child, rk, q)
            {
                struct common_quantity qq;
                char buf[80];
                if (!json_is_number(q) || tj_quantity(q, &qq, NULL))
                    continue;
                if (common_quantity_format(&qq, buf, sizeof(buf)) < 0 ||
                    json_object_set_new(child, rk, json_string(buf)))
                    return -1;
            }
        } else if (tj_normalize_quantities(child)) {
            return -1;
        }
    }
    return 0;
}
