/*
 * dra/view.c - one DRA view of the cluster from the objects the watch caches hold: the
 * snapshot and its index (dra/dra.h), malformed objects with their reasons, and for each pod
 * the ResourceClaims its spec.resourceClaims name (dra/view.h).
 */
#include <stdlib.h>
#include <string.h>

#include "dra/view.h"

static int claim_cmp(const void *x, const void *y)
{
    const struct dra_view_claim *a = x, *b = y;
    int c = strcmp(a->claim.ns, b->claim.ns);
    return c ? c : strcmp(a->claim.name, b->claim.name);
}

static int pod_cmp(const void *x, const void *y)
{
    const struct dra_pod_claims *a = x, *b = y;
    return strcmp(a->uid, b->uid);
}

static enum common_rc add_bad(struct common_arena *a, struct dra_view *v, const char *kind,
                              const char *name, const char *reason)
{
    struct dra_bad *b = &v->bad[v->n_bad];
    b->kind = kind;
    b->name = common_arena_strdup(a, name ? name : "(unnamed)");
    b->reason = common_arena_strdup(a, reason);
    if (!b->name || !b->reason)
        return COMMON_ENOMEM;
    v->n_bad++;
    return COMMON_OK;
}

static const char *meta_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

const struct dra_view_claim *dra_view_claim_find(const struct dra_view *v, const char *ns,
                                                 const char *name)
{
    struct dra_view_claim key;
    memset(&key, 0, sizeof(key));
    key.claim.ns = ns;
    key.claim.name = name;
    return bsearch(&key, v->claims, v->n_claims, sizeof(*v->claims), claim_cmp);
}

/* the claim made from a template for pod uid's entry: owner and annotation */
static const struct dra_view_claim *by_owner(const struct dra_view *v, const char *ns,
                                             const char *uid, const char *entry)
{
    for (size_t i = 0; i < v->n_claims; i++) {
        const struct dra_claim *c = &v->claims[i].claim;
        if (c->owner_pod_uid && c->pod_claim_name && strcmp(c->owner_pod_uid, uid) == 0 &&
            strcmp(c->pod_claim_name, entry) == 0 && strcmp(c->ns, ns) == 0)
            return &v->claims[i];
    }
    return NULL;
}

static enum common_rc resolve_pod(struct common_arena *a, const struct dra_view *v,
                                  const struct common_pod *pod, struct dra_pod_claims *out)
{
    uint32_t n = pod->n_resource_claims;

    memset(out, 0, sizeof(*out));
    if (!pod->uid || !pod->name || !n)
        return COMMON_OK;
    out->uid = common_arena_strdup(a, pod->uid);
    out->ns = common_arena_strdup(a, pod->namespace ? pod->namespace : "default");
    out->name = common_arena_strdup(a, pod->name);
    if (!out->uid || !out->ns || !out->name ||
        !(out->refs = common_arena_alloc(a, n * sizeof(*out->refs))))
        return COMMON_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const struct common_pod_claim *e = &pod->resource_claims[i];
        struct dra_claim_ref *r = &out->refs[out->n_refs++];
        const char *direct =
            e->resource_claim_name && *e->resource_claim_name ? e->resource_claim_name : NULL;
        const char *tmpl = e->resource_claim_template_name && *e->resource_claim_template_name
                               ? e->resource_claim_template_name
                               : NULL;
        const struct dra_view_claim *vc;
        memset(r, 0, sizeof(*r));
        r->entry = common_arena_strdup(a, e->name ? e->name : "");
        if (!r->entry)
            return COMMON_ENOMEM;
        if (!direct && !tmpl) {
            r->why = common_arena_printf(a,
                                         "pod %s/%s: spec.resourceClaims[%u] names neither "
                                         "resourceClaimName nor resourceClaimTemplateName",
                                         out->ns, out->name, i);
            if (!r->why)
                return COMMON_ENOMEM;
            continue;
        }
        vc = direct ? dra_view_claim_find(v, out->ns, direct)
                    : by_owner(v, out->ns, out->uid, r->entry);
        if (vc && vc->error) {
            r->why = vc->error;
        } else if (vc) {
            r->claim = &vc->claim;
        } else if (direct) {
            r->why = common_arena_printf(a, "pod %s/%s: ResourceClaim %s/%s does not exist",
                                         out->ns, out->name, out->ns, direct);
        } else {
            r->why = common_arena_printf(a,
                                         "pod %s/%s: the ResourceClaim for spec.resourceClaims "
                                         "\"%s\" (template %s) is not created yet",
                                         out->ns, out->name, r->entry, tmpl);
        }
        if (!r->claim && !r->why)
            return COMMON_ENOMEM;
    }
    return COMMON_OK;
}

/* the owner pod and entry of a claim that failed to decode (so its pod finds it) */
static int owner_of(struct common_arena *a, const json_t *obj, struct dra_view_claim *vc)
{
    const json_t *meta = json_object_get(obj, "metadata"), *o;
    const char *entry = json_string_value(
        json_object_get(json_object_get(meta, "annotations"), DRA_POD_CLAIM_NAME_ANNOTATION));
    size_t i;

    if (entry && !(vc->claim.pod_claim_name = common_arena_strdup(a, entry)))
        return -1;
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, o)
    {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        const char *uid = json_string_value(json_object_get(o, "uid"));
        if (kind && uid && strcmp(kind, "Pod") == 0)
            return (vc->claim.owner_pod_uid = common_arena_strdup(a, uid)) ? 0 : -1;
    }
    return 0;
}

enum common_rc dra_view_devices_decode(struct common_arena *a, const struct dra_view_input *in,
                                       struct dra_view_devices *d, struct common_error *err)
{
    struct common_error e;
    enum common_rc rc;
    struct dra_view tmp; /* add_bad's list */

    memset(d, 0, sizeof(*d));
    memset(&tmp, 0, sizeof(tmp));
    d->slices = common_arena_alloc(a, (in->n_slices + 1) * sizeof(*d->slices));
    d->classes = common_arena_alloc(a, (in->n_classes + 1) * sizeof(*d->classes));
    tmp.bad = common_arena_alloc(a, (in->n_slices + in->n_classes + 1) * sizeof(*tmp.bad));
    if (!d->slices || !d->classes || !tmp.bad)
        goto nomem;
    for (size_t i = 0; i < in->n_slices; i++) {
        if ((rc = dra_slice_decode(a, in->slices[i], &d->slices[d->n_slices], &e))) {
            if (rc == COMMON_ENOMEM ||
                add_bad(a, &tmp, "ResourceSlice", meta_str(in->slices[i], "name"), e.msg))
                goto nomem;
            continue;
        }
        d->n_slices++;
    }
    for (size_t i = 0; i < in->n_classes; i++) {
        if ((rc = dra_class_decode(a, in->classes[i], &d->classes[d->n_classes], &e))) {
            if (rc == COMMON_ENOMEM ||
                add_bad(a, &tmp, "DeviceClass", meta_str(in->classes[i], "name"), e.msg))
                goto nomem;
            continue;
        }
        d->n_classes++;
    }
    d->bad = tmp.bad;
    d->n_bad = tmp.n_bad;
    return COMMON_OK;
nomem:
    return common_error_set(err, COMMON_ENOMEM, "out of memory decoding DRA devices");
}

enum common_rc dra_view_build(struct common_arena *a, const struct dra_view_input *in,
                              struct dra_view *v, struct common_error *err)
{
    struct dra_view_devices d;
    enum common_rc rc = dra_view_devices_decode(a, in, &d, err);

    if (rc) {
        memset(v, 0, sizeof(*v));
        return rc;
    }
    return dra_view_build_on(a, in, &d, v, err);
}

enum common_rc dra_view_build_on(struct common_arena *a, const struct dra_view_input *in,
                                 const struct dra_view_devices *d, struct dra_view *v,
                                 struct common_error *err)
{
    struct common_error e;
    size_t n_alloc = 0;
    struct dra_claim *allocated;
    enum common_rc rc;

    memset(v, 0, sizeof(*v));
    v->claims = common_arena_alloc(a, (in->n_claims + 1) * sizeof(*v->claims));
    v->bad = common_arena_alloc(a, (d->n_bad + in->n_claims + 1) * sizeof(*v->bad));
    v->pods = common_arena_alloc(a, (in->n_pods + 1) * sizeof(*v->pods));
    if (!v->claims || !v->bad || !v->pods)
        goto nomem;
    for (size_t i = 0; i < d->n_bad; i++)
        v->bad[v->n_bad++] = d->bad[i];
    v->snap.slices = d->slices;
    v->snap.n_slices = d->n_slices;
    v->snap.classes = d->classes;
    v->snap.n_classes = d->n_classes;
    for (size_t i = 0; i < in->n_claims; i++) {
        struct dra_view_claim *vc = &v->claims[v->n_claims];
        memset(vc, 0, sizeof(*vc));
        if ((rc = dra_claim_decode(a, in->claims[i], &vc->claim, &e))) {
            const char *ns = meta_str(in->claims[i], "namespace"),
                       *name = meta_str(in->claims[i], "name");
            if (rc == COMMON_ENOMEM || add_bad(a, v, "ResourceClaim", name, e.msg))
                goto nomem;
            if (!name)
                continue;
            /* kept by name so that the pods naming it get its reason */
            memset(&vc->claim, 0, sizeof(vc->claim));
            vc->claim.ns = common_arena_strdup(a, ns ? ns : "default");
            vc->claim.name = common_arena_strdup(a, name);
            vc->error = common_arena_strdup(a, e.msg);
            if (!vc->claim.ns || !vc->claim.name || !vc->error || owner_of(a, in->claims[i], vc))
                goto nomem;
        }
        n_alloc += vc->claim.is_allocated && !vc->error;
        v->n_claims++;
    }
    qsort(v->claims, v->n_claims, sizeof(*v->claims), claim_cmp);
    if (!(allocated = common_arena_alloc(a, (n_alloc + 1) * sizeof(*allocated))))
        goto nomem;
    for (size_t i = 0; i < v->n_claims; i++)
        if (v->claims[i].claim.is_allocated && !v->claims[i].error)
            allocated[v->snap.n_allocated++] = v->claims[i].claim;
    v->snap.allocated = allocated;
    for (size_t i = 0; i < in->n_pods; i++) {
        if (resolve_pod(a, v, in->pods[i], &v->pods[v->n_pods]))
            goto nomem;
        if (v->pods[v->n_pods].n_refs)
            v->n_pods++;
    }
    qsort(v->pods, v->n_pods, sizeof(*v->pods), pod_cmp);
    return dra_index_build(a, &v->snap, &v->ix, err);
nomem:
    return common_error_set(err, COMMON_ENOMEM, "out of memory building the DRA view");
}

const struct dra_pod_claims *dra_view_pod(const struct dra_view *v, const char *uid)
{
    struct dra_pod_claims key;
    if (!v || !uid)
        return NULL;
    memset(&key, 0, sizeof(key));
    key.uid = uid;
    return bsearch(&key, v->pods, v->n_pods, sizeof(*v->pods), pod_cmp);
}

const char *dra_view_class_error(const struct dra_view *v, const char *name)
{
    for (size_t i = 0; v && i < v->n_bad; i++)
        if (strcmp(v->bad[i].kind, "DeviceClass") == 0 && strcmp(v->bad[i].name, name) == 0)
            return v->bad[i].reason;
    return NULL;
}
