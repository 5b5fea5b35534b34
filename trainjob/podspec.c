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

/* index of the item of arr whose mkey equals key's, or -1 */
static long key_index(const json_t *arr, const char *mkey, const json_t *key)
{
    size_t i;
    json_t *it;

    if (!key)
        return -1;
    json_array_foreach(arr, i, it)
    {
        if (same_key(json_object_get(it, mkey), key))
            return (long)i;
    }
    return -1;
}

/*
 * A list with a merge key, as apimachinery's strategic merge orders it (mergeSlice, then
 * normalizeElementOrder): items the patch names are merged into the original ones, new items
 * are added, then the list is the patch's items in patch order woven with the original-only
 * items in their original order: an original-only item goes before a patch item only when
 * both are in the original list and it came first there. So new items land before the
 * original ones that follow them. keep_order leaves every item where the original had it and
 * appends new ones (Trainer sorts replicatedJobs back into the runtime's order).
 */
static int merge_list(json_t *target, const json_t *patch, const char *mkey, int keep_order)
{
    json_t *orig = json_copy(target); /* the original items, in their order */
    json_t *in_patch = json_array(), *only_orig = json_array();
    size_t i, np, no;
    json_t *p, *it;
    int rc = -1;

    if (!orig || !in_patch || !only_orig)
        goto out;
    json_array_foreach(patch, i, p)
    {
        long at = key_index(orig, mkey, json_object_get(p, mkey));
        json_t *t = at >= 0 ? json_array_get(orig, (size_t)at) : NULL;

        if (at >= 0 && key_index(in_patch, mkey, json_object_get(p, mkey)) >= 0 &&
            json_is_object(t)) {
            if (merge_object(t, p)) /* the patch names it twice: merge again */
                goto out;
            continue;
        }
        if (t && json_is_object(t)) {
            if (merge_object(t, p) || json_array_append(in_patch, t))
                goto out;
        } else if (json_array_append_new(in_patch, json_deep_copy(p))) {
            goto out;
        }
    }
    json_array_foreach(orig, i, it)
    {
        if (key_index(in_patch, mkey, json_object_get(it, mkey)) < 0 &&
            json_array_append(only_orig, it))
            goto out;
    }
    if (json_array_clear(target))
        goto out;
    if (keep_order) {
        json_array_foreach(orig, i, it)
        {
            if (json_array_append(target, it))
                goto out;
        }
        json_array_foreach(in_patch, i, it)
        {
            if (key_index(orig, mkey, json_object_get(it, mkey)) < 0 &&
                json_array_append(target, it))
                goto out;
        }
        rc = 0;
        goto out;
    }
    np = json_array_size(in_patch);
    no = json_array_size(only_orig);
    for (size_t a = 0, b = 0; a < no || b < np;) {
        json_t *o = a < no ? json_array_get(only_orig, a) : NULL;
        json_t *q = b < np ? json_array_get(in_patch, b) : NULL;
        long oi = o ? key_index(orig, mkey, json_object_get(o, mkey)) : -1;
        long qi = q ? key_index(orig, mkey, json_object_get(q, mkey)) : -1;
        int take_orig = o && (!q || (oi >= 0 && qi >= 0 && oi < qi));

        if (json_array_append(target, take_orig ? o : q))
            goto out;
        if (take_orig)
            a++;
        else
            b++;
    }
    rc = 0;
out:
    json_decref(orig);
    json_decref(in_patch);
    json_decref(only_orig);
    return rc;
}

static int merge_value(json_t *parent, const char *key, const json_t *patch)
{
    json_t *cur = json_object_get(parent, key);

    if (json_is_object(patch) && json_is_object(cur))
        return merge_object(cur, patch);
    if (json_is_array(patch) && json_is_array(cur)) {
        const char *mkey = merge_key_for(key);
        if (mkey)
            return merge_list(cur, patch, mkey, strcmp(key, "replicatedJobs") == 0);
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

enum common_rc trainjob_pod_requests(const json_t *podspec, json_t **out, struct common_error *err)
{
    return tj_pod_requests(podspec, out, err);
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

/* the GPU count in one list (limits or requests): the first name by name order containing "gpu";
 * *key and *node (may be NULL) get its name and value */
static int64_t gpu_in(const json_t *list, const char **key, const json_t **node)
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
    if (key)
        *key = best;
    if (node)
        *node = bestv;
    {
        struct common_quantity q;
        int64_t n = 0;
        if (tj_quantity(bestv, &q, NULL) || common_quantity_value_ceil(&q, &n, NULL))
            return 0;
        return n;
    }
}

int64_t tj_gpu_find(const json_t *resources, const char **list, const char **key,
                    const json_t **node)
{
    const char *l = "requests", *k = NULL;
    const json_t *v = NULL;
    int64_t n;

    if (!resources)
        return 0;
    n = gpu_in(json_object_get(resources, l), &k, &v);
    if (n <= 0) {
        l = "limits";
        n = gpu_in(json_object_get(resources, l), &k, &v);
    }
    if (n > 0) {
        if (list)
            *list = l;
        if (key)
            *key = k;
        if (node)
            *node = v;
    }
    return n;
}

int64_t tj_gpu_count(const json_t *resources)
{
    return tj_gpu_find(resources, NULL, NULL, NULL);
}

/* canonical text of a quantity value (number or string) in place; an unparsable value is left
 * as it is (validation reports it). -1: no memory. */
static int canonical_quantity(json_t *parent, const char *key, json_t *q)
{
    struct common_quantity qq;
    char buf[80];

    if (!(json_is_number(q) || json_is_string(q)) || tj_quantity(q, &qq, NULL))
        return 0;
    if (common_quantity_format(&qq, buf, sizeof(buf)) < 0)
        return -1;
    if (json_is_string(q) && strcmp(json_string_value(q), buf) == 0)
        return 0;
    return json_object_set_new(parent, key, json_string(buf));
}

/* Quantities are written in the canonical form Kubernetes prints (a Go resource.Quantity
 * re-marshals "1000m" as "1", "1024Mi" as "1Gi", a YAML number 2 as "2"), as Trainer's objects
 * carry them: every value of the "limits", "requests" and "overhead" maps and every
 * "sizeLimit" (emptyDir volumes). */
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
                if (canonical_quantity(child, rk, q))
                    return -1;
            }
        } else if (strcmp(k, "sizeLimit") == 0) {
            if (canonical_quantity(v, k, child))
                return -1;
        } else if (tj_normalize_quantities(child)) {
            return -1;
        }
    }
    return 0;
}
