/*
 * trainjob/resources.c - the checks the API server applies to a container's resources
 * (ResourceRequirements: limits and requests), applied before anything is created, so a
 * TrainJob whose pods the API server would refuse is refused at admission and by render instead
 * of leaving a JobSet that can never create its Jobs.
 *
 * Source: Kubernetes pod validation (k8s.io/kubernetes pkg/apis/core/validation,
 * ValidateResourceRequirements and the resource name rules it calls), worded as it words them:
 *  - a name without a '/' must be a standard container resource: cpu, memory,
 *    ephemeral-storage, hugepages-<size>;
 *  - a name with a '/' must be a qualified name; outside the kubernetes.io domains it is an
 *    extended resource (nvidia.com/gpu), and "requests.<name>" must be a qualified name too;
 *  - every quantity is >= 0; an extended resource's quantity is a whole number;
 *  - a request is at most its limit; an extended resource cannot be overcommitted: its request
 *    equals its limit, and a request needs a limit;
 *  - DRA: the pod's resourceClaims entries and the containers' resources.claims that name them
 *    (check_pod_claims).
 */
#include <string.h>

#include "common/names.h"
#include "trainjob/trainjob_int.h"

static int is_standard_container_resource(const char *name)
{
    return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
           strcmp(name, "ephemeral-storage") == 0 || strncmp(name, "hugepages-", 10) == 0;
}

/* the kubernetes.io domains are native (kubernetes.io/..., *.kubernetes.io/...) */
static int is_native(const char *name)
{
    const char *slash = strchr(name, '/');
    size_t plen;

    if (!slash)
        return 1;
    plen = (size_t)(slash - name);
    return (plen == 13 && strncmp(name, "kubernetes.io", 13) == 0) ||
           (plen > 14 && strncmp(slash - 14, ".kubernetes.io", 14) == 0);
}

/* a resource name the API server accepts in a container, else the message that says why */
static const char *name_problem(const char *name, char *buf, size_t n)
{
    const char *p;

    if (!strchr(name, '/'))
        return is_standard_container_resource(name)
                   ? NULL
                   : "must be a standard resource for containers (cpu, memory, "
                     "ephemeral-storage, hugepages-<size>) or a fully qualified extended resource "
                     "name such as nvidia.com/gpu";
    if ((p = common_names_qualified_name(name)))
        return p;
    if (is_native(name))
        return NULL;
    snprintf(buf, n, "requests.%s", name);
    if (strncmp(name, "requests.", 9) == 0 || common_names_qualified_name(buf))
        return "doesn't follow extended resource name standard";
    return NULL;
}

static int is_extended(const char *name)
{
    return !is_native(name);
}

int tj_resource_is_extended(const char *name)
{
    return is_extended(name);
}

/* the quantity of v as Kubernetes prints it, for messages */
static const char *printed(struct trainjob_errors *e, const struct common_quantity *q)
{
    char buf[80];

    if (common_quantity_format(q, buf, sizeof(buf)) < 0)
        return "?";
    return common_arena_strdup(e->arena, buf);
}

/* one map (limits or requests): names and values on their own */
static void check_map(const json_t *doc, const json_t *map, const char *path, const char *ctx,
                      struct trainjob_errors *e)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)map, k, v)
    {
        char buf[400], kp[700];
        const char *why = name_problem(k, buf, sizeof(buf));
        struct common_quantity q;
        struct common_error qe;

        snprintf(kp, sizeof(kp), "%s[%s]", path, k);
        if (why) {
            tj_err(e, doc, v, "Invalid", kp, "Invalid value: \"%s\": %s%s", k, why, ctx);
            continue;
        }
        if (tj_quantity(v, &q, &qe))
            continue; /* the schema check names a malformed quantity */
        if (q.nano < 0)
            tj_err(e, doc, v, "Invalid", kp,
                   "Invalid value: \"%s\": must be greater than or equal to 0%s", printed(e, &q),
                   ctx);
        else if (is_extended(k) && q.nano % 1000000000 != 0)
            tj_err(e, doc, v, "Invalid", kp,
                   "Invalid value: \"%s\": must be an integer (an extended resource such as %s "
                   "is counted in whole devices)%s",
                   printed(e, &q), k, ctx);
    }
}

void tj_check_resources(const json_t *doc, const json_t *res, const char *path, const char *ctx,
                        struct trainjob_errors *e)
{
    const json_t *limits = json_object_get(res, "limits");
    const json_t *requests = json_object_get(res, "requests");
    char lp[600], rp[600];
    const char *k;
    json_t *v;

    if (!json_is_object(res))
        return;
    if (!ctx)
        ctx = "";
    snprintf(lp, sizeof(lp), "%s.limits", path);
    snprintf(rp, sizeof(rp), "%s.requests", path);
    if (json_is_object(limits))
        check_map(doc, limits, lp, ctx, e);
    if (json_is_object(requests))
        check_map(doc, requests, rp, ctx, e);
    if (!json_is_object(requests))
        return;
    json_object_foreach((json_t *)requests, k, v)
    {
        const json_t *lv = json_is_object(limits) ? json_object_get(limits, k) : NULL;
        struct common_quantity rq, lq;
        struct common_error qe;
        char kp[700], buf[400];

        snprintf(kp, sizeof(kp), "%s[%s]", rp, k);
        if (name_problem(k, buf, sizeof(buf)) || tj_quantity(v, &rq, &qe))
            continue;
        if (!lv) {
            if (is_extended(k)) {
                char lk[700];
                snprintf(lk, sizeof(lk), "%s[%s]", lp, k);
                tj_err(e, doc, v, "Required", lk,
                       "Limit must be set for non overcommitable resources (requests[%s] is "
                       "set: set limits[%s] to the same value)%s",
                       k, k, ctx);
            }
            continue;
        }
        if (tj_quantity(lv, &lq, &qe))
            continue;
        if (common_quantity_cmp(&rq, &lq) > 0)
            tj_err(e, doc, v, "Invalid", kp,
                   "Invalid value: \"%s\": must be less than or equal to %s limit of %s%s",
                   printed(e, &rq), k, printed(e, &lq), ctx);
        else if (is_extended(k) && common_quantity_cmp(&rq, &lq) != 0)
            tj_err(e, doc, v, "Invalid", kp,
                   "Invalid value: \"%s\": must be equal to %s limit of %s (an extended "
                   "resource cannot be overcommitted)%s",
                   printed(e, &rq), k, printed(e, &lq), ctx);
    }
}

void tj_check_resources_trainjob(const json_t *tj, struct trainjob_errors *e)
{
    tj_check_resources(tj, tj_get(tj, "spec.trainer.resourcesPerNode"),
                       "spec.trainer.resourcesPerNode", NULL, e);
}

/*
 * A pod's DRA claims as the API server checks them (ValidatePodSpec: validatePodResourceClaims
 * and the containers' resources.claims): each spec.resourceClaims entry has a DNS label name,
 * unique, and exactly one of resourceClaimName and resourceClaimTemplateName; each container's
 * resources.claims[].name names one of them.
 */
static void check_pod_claims(const json_t *rt, const json_t *ps, const char *base,
                             struct trainjob_errors *e)
{
    static const char *const lists[] = {"initContainers", "containers"};
    const json_t *claims = json_object_get(ps, "resourceClaims");
    size_t i, j, k;
    json_t *rc, *ct, *cl;

    json_array_foreach((json_t *)claims, i, rc)
    {
        const json_t *nm = json_object_get(rc, "name");
        const char *name = json_string_value(nm);
        int by_name = json_object_get(rc, "resourceClaimName") != NULL &&
                      !json_is_null(json_object_get(rc, "resourceClaimName"));
        int by_tmpl = json_object_get(rc, "resourceClaimTemplateName") != NULL &&
                      !json_is_null(json_object_get(rc, "resourceClaimTemplateName"));
        const char *bad;
        char path[400];

        if (!json_is_object(rc))
            continue;
        if (!name || !*name) {
            snprintf(path, sizeof(path), "%s.resourceClaims[%zu].name", base, i);
            tj_err(e, rt, rc, "Required", path, "Required value");
        } else if ((bad = common_names_dns1123_label(name))) {
            snprintf(path, sizeof(path), "%s.resourceClaims[%zu].name", base, i);
            tj_err(e, rt, nm, "Invalid", path, "Invalid value: \"%s\": %s", name, bad);
        } else {
            for (k = 0; k < i; k++)
                if (json_equal(json_object_get(json_array_get(claims, k), "name"), nm))
                    break;
            if (k < i) {
                snprintf(path, sizeof(path), "%s.resourceClaims[%zu].name", base, i);
                tj_err(e, rt, nm, "Duplicate", path, "Duplicate value: \"%s\"", name);
            }
        }
        if (by_name == by_tmpl) {
            snprintf(path, sizeof(path), "%s.resourceClaims[%zu]", base, i);
            tj_err(e, rt, rc, by_name ? "Forbidden" : "Required", path,
                   "%s: must specify exactly one of: `resourceClaimName`, "
                   "`resourceClaimTemplateName`",
                   by_name ? "Forbidden" : "Required value");
        }
    }
    for (size_t l = 0; l < 2; l++)
        json_array_foreach(json_object_get(ps, lists[l]), j, ct)
        {
            json_array_foreach(json_object_get(json_object_get(ct, "resources"), "claims"), k, cl)
            {
                const json_t *cn = json_object_get(cl, "name");
                int found = 0;
                char path[400];

                if (!json_is_string(cn))
                    continue; /* the schema names a missing or non-string name */
                json_array_foreach((json_t *)claims, i,
                                   rc) if (json_equal(json_object_get(rc, "name"), cn)) found = 1;
                if (found)
                    continue;
                snprintf(path, sizeof(path), "%s.%s[%zu].resources.claims[%zu].name", base,
                         lists[l], j, k);
                tj_err(e, rt, cn, "NotSupported", path,
                       "Unsupported value: \"%s\": must be one of the names in "
                       "pod.spec.resourceClaims%s",
                       json_string_value(cn),
                       json_array_size(claims) ? "" : " which are currently empty");
            }
        }
}

void tj_check_resources_runtime(const json_t *rt, struct trainjob_errors *e)
{
    static const char *const lists[] = {"initContainers", "containers"};
    const json_t *rjobs = tj_get(rt, "spec.template.spec.replicatedJobs");
    size_t i, j;
    json_t *rj, *ct;

    json_array_foreach((json_t *)rjobs, i, rj)
    {
        const json_t *ps = tj_get(rj, "template.spec.template.spec");
        char base[200];

        snprintf(base, sizeof(base),
                 "spec.template.spec.replicatedJobs[%zu].template.spec.template.spec", i);
        check_pod_claims(rt, ps, base, e);
        for (size_t l = 0; l < 2; l++) {
            json_array_foreach(json_object_get(ps, lists[l]), j, ct)
            {
                char path[300];
                snprintf(path, sizeof(path),
                         "spec.template.spec.replicatedJobs[%zu].template.spec.template.spec.%s[%"
                         "zu].resources",
                         i, lists[l], j);
                tj_check_resources(rt, json_object_get(ct, "resources"), path, NULL, e);
            }
        }
    }
}

void tj_check_resources_claims(const json_t *doc, const json_t *res, const json_t *podspec,
                               const char *path, struct trainjob_errors *e)
{
    const json_t *claims = json_object_get(podspec, "resourceClaims");
    size_t k;
    json_t *cl;

    json_array_foreach(json_object_get(res, "claims"), k, cl)
    {
        const json_t *cn = json_object_get(cl, "name");
        char p[600];

        if (!json_is_string(cn) || tj_find_named(claims, "name", json_string_value(cn)))
            continue;
        snprintf(p, sizeof(p), "%s.claims[%zu].name", path, k);
        tj_err(e, doc, cn, "NotSupported", p,
               "Unsupported value: \"%s\": must be one of the names in pod.spec.resourceClaims%s "
               "(resourcesPerNode goes into the trainer's node container)",
               json_string_value(cn), json_array_size(claims) ? "" : " which are currently empty");
    }
}
