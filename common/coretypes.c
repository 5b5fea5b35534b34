/*
 * common/coretypes.c - Pods and Nodes from JSON or protobuf into compact one-block structs.
 *
 * Layers, bottom up:
 * 1. a zero-copy reader for the protobuf wire format, used for the envelopes only ("k8s\0" +
 *    runtime.Unknown, the lists, watch events): a list's items are sliced out of the body and
 *    decoded one at a time, never copied or unpacked together;
 * 2. protobuf-c (code generated from the proto/ directory) unpacks each Pod, Node, Status;
 * 3. JSON is read into the same protobuf-c message structs (an arena holds them; their strings
 *    point into the jansson tree), so 4. is shared;
 * 4. one conversion per kind computes what needs computing (sorted labels, the controller, the
 *    effective requests, Ready) and packs the result into a single allocation, in two passes of
 *    the same code: the first measures, the second copies.
 * Every allocation goes through common_malloc (protobuf-c through an allocator that records
 * failure, so ENOMEM is told apart from a malformed message).
 */
#include "common/coretypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/quantity.h"
#include "k8s_core.pb-c.h"
#include "k8s_meta.pb-c.h"
#include "k8s_resource.pb-c.h"
#include "k8s_runtime.pb-c.h"

static const char K8S_MAGIC[4] = {'k', '8', 's', '\0'};

/* ===================================================================== protobuf-c glue == */

/* An allocator for protobuf-c that goes through common_malloc and remembers a failure. */
struct pb_alloc {
    ProtobufCAllocator a;
    int failed;
};

static void *pb_alloc_fn(void *data, size_t size)
{
    struct pb_alloc *pa = data;
    void *p = common_malloc(size ? size : 1);

    if (!p)
        pa->failed = 1;
    return p;
}

static void pb_free_fn(void *data, void *p)
{
    (void)data;
    common_free(p);
}

static void pb_alloc_init(struct pb_alloc *pa)
{
    pa->a.alloc = pb_alloc_fn;
    pa->a.free = pb_free_fn;
    pa->a.allocator_data = pa;
    pa->failed = 0;
}

/* The rc for a NULL from a protobuf-c unpack: out of memory, or a malformed message. */
static enum common_rc pb_unpack_failed(const struct pb_alloc *pa, struct common_error *err,
                                       const char *what, const char *type, size_t len)
{
    if (pa->failed)
        return common_error_set(err, COMMON_ENOMEM, "%s: out of memory decoding %s", what, type);
    return common_error_set(err, COMMON_EINVAL, "%s: not a valid %s message (%zu bytes)", what,
                            type, len);
}

/* ========================================================= the wire reader (envelopes) == */

/* A byte range inside the caller's input. */
struct slice {
    const uint8_t *p;
    size_t len;
};

struct pb_field {
    uint32_t num;
    unsigned wire; /* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
    uint64_t varint;
    struct slice bytes; /* wire type 2 */
};

static int pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    unsigned shift;

    for (shift = 0; shift < 70; shift += 7) {
        uint8_t b;
        if (*p >= end)
            return -1;
        b = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* pb_next - read the field at *p: 1 = a field in *f, 0 = end of input, -1 = malformed. */
static int pb_next(const uint8_t **p, const uint8_t *end, struct pb_field *f)
{
    uint64_t key, n;

    if (*p >= end)
        return 0;
    if (pb_varint(p, end, &key) < 0 || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
        return -1;
    f->num = (uint32_t)(key >> 3);
    f->wire = (unsigned)(key & 7);
    switch (f->wire) {
    case 0:
        return pb_varint(p, end, &f->varint) < 0 ? -1 : 1;
    case 1:
        if (end - *p < 8)
            return -1;
        *p += 8;
        return 1;
    case 5:
        if (end - *p < 4)
            return -1;
        *p += 4;
        return 1;
    case 2:
        if (pb_varint(p, end, &n) < 0 || n > (uint64_t)(end - *p))
            return -1;
        f->bytes.p = *p;
        f->bytes.len = (size_t)n;
        *p += n;
        return 1;
    default: /* groups (3, 4) and reserved types: Kubernetes never writes them */
        return -1;
    }
}

static int slice_eq(struct slice s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && (n == 0 || memcmp(s.p, lit, n) == 0);
}

/* An unpacked "k8s\0" + runtime.Unknown (see proto/k8s_runtime.proto). */
struct envelope {
    struct slice kind;
    struct slice raw;
    size_t raw_offset; /* of raw in the caller's input, for messages */
};

/*
 * envelope_open - check the magic and read the Unknown at data[0..len) into *env. base is the
 * start of the caller's input (offsets in messages are from there); what names the input.
 */
static enum common_rc envelope_open(const uint8_t *base, const uint8_t *data, size_t len,
                                    const char *what, struct envelope *env,
                                    struct common_error *err)
{
    const uint8_t *p, *end = data + len;
    struct pb_field f;
    int r;

    memset(env, 0, sizeof(*env));
    if (len < sizeof(K8S_MAGIC) || memcmp(data, K8S_MAGIC, sizeof(K8S_MAGIC)) != 0)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: no \"k8s\\0\" magic at offset %zu (not a Kubernetes "
                                "protobuf message)",
                                what, (size_t)(data - base));
    p = data + sizeof(K8S_MAGIC);
    while ((r = pb_next(&p, end, &f)) == 1) {
        if (f.num == 1 && f.wire == 2) { /* typeMeta */
            const uint8_t *q = f.bytes.p, *qend = f.bytes.p + f.bytes.len;
            struct pb_field g;
            int r2;
            while ((r2 = pb_next(&q, qend, &g)) == 1)
                if (g.num == 2 && g.wire == 2) /* kind (runtime.TypeMeta: apiVersion is 1) */
                    env->kind = g.bytes;
            if (r2 < 0)
                return common_error_set(err, COMMON_EINVAL, "%s: malformed typeMeta at offset %zu",
                                        what, (size_t)(q - base));
        } else if (f.num == 2 && f.wire == 2) { /* raw */
            env->raw = f.bytes;
            env->raw_offset = (size_t)(f.bytes.p - base);
        } else if (f.num == 3 && f.wire == 2 && f.bytes.len > 0) { /* contentEncoding */
            return common_error_set(
                err, COMMON_EUNSUPPORTED, "%s: contentEncoding \"%.*s\" is not supported", what,
                (int)(f.bytes.len > 64 ? 64 : f.bytes.len), (const char *)f.bytes.p);
        }
    }
    if (r < 0)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: malformed protobuf envelope at offset %zu (truncated or "
                                "garbage)",
                                what, (size_t)(p - base));
    if (env->kind.len == 0 || !env->raw.p)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: envelope at offset %zu without %s (truncated?)", what,
                                (size_t)(data - base), env->kind.len == 0 ? "a kind" : "an object");
    return COMMON_OK;
}

/* A Status body (the server's error answer) as COMMON_EAPI with its code and message. */
static enum common_rc status_error(const struct envelope *env, const char *what,
                                   struct common_error *err)
{
    struct pb_alloc pa;
    K8s__Meta__Status *st;
    enum common_rc rc;

    pb_alloc_init(&pa);
    st = k8s__meta__status__unpack(&pa.a, env->raw.len, env->raw.p);
    if (!st)
        return pb_unpack_failed(&pa, err, what, "Status", env->raw.len);
    rc = common_error_set(err, COMMON_EAPI, "%s: Status %s %s (%d): %s", what,
                          st->status ? st->status : "", st->reason ? st->reason : "",
                          st->has_code ? st->code : 0, st->message ? st->message : "");
    k8s__meta__status__free_unpacked(st, &pa.a);
    return rc;
}

/* envelope_expect - OK when the envelope holds kind; a Status becomes COMMON_EAPI, any other
 * kind COMMON_EINVAL. */
static enum common_rc envelope_expect(const struct envelope *env, const char *kind,
                                      const char *what, struct common_error *err)
{
    if (slice_eq(env->kind, kind))
        return COMMON_OK;
    if (slice_eq(env->kind, "Status"))
        return status_error(env, what, err);
    return common_error_set(err, COMMON_EINVAL, "%s: expected kind %s, got \"%.*s\"", what, kind,
                            (int)(env->kind.len > 64 ? 64 : env->kind.len),
                            (const char *)env->kind.p);
}

/* ============================================================ resource arithmetic == */

struct res_item {
    const char *name; /* borrowed from the message */
    struct common_quantity q;
};

/* A resource list (name -> quantity), as v1.ResourceList. */
struct res_list {
    size_t n;
    struct res_item item[COMMON_CORETYPES_MAX_RESOURCES];
};

static struct res_item *res_find(struct res_list *l, const char *name)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        if (strcmp(l->item[i].name, name) == 0)
            return &l->item[i];
    return NULL;
}

/* res_slot - the item for name, appended as zero when missing; NULL when the list is full. */
static struct res_item *res_slot(struct res_list *l, const char *name)
{
    struct res_item *it = res_find(l, name);

    if (it)
        return it;
    if (l->n == COMMON_CORETYPES_MAX_RESOURCES)
        return NULL;
    it = &l->item[l->n++];
    it->name = name;
    memset(&it->q, 0, sizeof(it->q));
    return it;
}

static enum common_rc res_full(const char *where, struct common_error *err)
{
    return common_error_set(err, COMMON_EINVAL, "%s: more than %d distinct resources", where,
                            COMMON_CORETYPES_MAX_RESOURCES);
}

/* res_load - parse a map<string, Quantity> into l (cleared first; a later duplicate wins). */
static enum common_rc res_load(struct res_list *l, K8s__Resource__QuantityEntry *const *e, size_t n,
                               const char *where, struct common_error *err)
{
    size_t i;

    l->n = 0;
    for (i = 0; i < n; i++) {
        const char *name = e[i]->key ? e[i]->key : "";
        const char *text = e[i]->value && e[i]->value->string ? e[i]->value->string : "";
        struct common_quantity q;
        struct res_item *it;

        if (common_quantity_parse(text, &q, err) != COMMON_OK) {
            common_error_prefix(err, "%s[%s]", where, name);
            return COMMON_EINVAL;
        }
        it = res_slot(l, name);
        if (!it)
            return res_full(where, err);
        it->q = q;
    }
    return COMMON_OK;
}

/* res_add - acc += b, per resource (addResourceList). */
static enum common_rc res_add(struct res_list *acc, const struct res_list *b, const char *where,
                              struct common_error *err)
{
    size_t i;

    for (i = 0; i < b->n; i++) {
        struct res_item *it = res_slot(acc, b->item[i].name);
        if (!it)
            return res_full(where, err);
        if (common_quantity_add(&it->q, &b->item[i].q, err) != COMMON_OK) {
            common_error_prefix(err, "%s[%s]", where, b->item[i].name);
            return COMMON_EINVAL;
        }
    }
    return COMMON_OK;
}

/* res_max - acc = max(acc, b), per resource (maxResourceList). */
static enum common_rc res_max(struct res_list *acc, const struct res_list *b, const char *where,
                              struct common_error *err)
{
    size_t i;

    for (i = 0; i < b->n; i++) {
        struct res_item *it = res_find(acc, b->item[i].name);
        if (!it) {
            it = res_slot(acc, b->item[i].name);
            if (!it)
                return res_full(where, err);
            it->q = b->item[i].q;
        } else if (common_quantity_cmp(&b->item[i].q, &it->q) > 0) {
            it->q = b->item[i].q;
        }
    }
    return COMMON_OK;
}

/* IsSupportedPodLevelResource: cpu, memory, hugepages-*. */
static int pod_level_resource(const char *name)
{
    return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
           strncmp(name, "hugepages-", 10) == 0;
}

/*
 * pod_requests - the effective requests of spec into *out (resource.PodRequests with
 * pod-level resources on, overhead included). Work lists are heap-allocated together: each
 * is a few KiB.
 */
static enum common_rc pod_requests(const K8s__Core__PodSpec *spec, struct res_list *out,
                                   struct common_error *err)
{
    struct work {
        struct res_list c, sidecars, init_max, use;
    } *w = common_calloc(1, sizeof(struct work));
    char where[96];
    enum common_rc rc = COMMON_OK;
    size_t i;

    if (!w)
        return common_error_set(err, COMMON_ENOMEM, "out of memory summing pod requests");
    out->n = 0;
    for (i = 0; i < spec->n_containers; i++) {
        const K8s__Core__ResourceRequirements *r = spec->containers[i]->resources;
        if (!r)
            continue;
        snprintf(where, sizeof(where), "spec.containers[%zu].resources.requests", i);
        rc = res_load(&w->c, r->requests, r->n_requests, where, err);
        if (rc == COMMON_OK)
            rc = res_add(out, &w->c, where, err);
        if (rc != COMMON_OK)
            goto out;
    }
    for (i = 0; i < spec->n_initcontainers; i++) {
        const K8s__Core__Container *c = spec->initcontainers[i];
        snprintf(where, sizeof(where), "spec.initContainers[%zu].resources.requests", i);
        w->c.n = 0;
        if (c->resources) {
            rc = res_load(&w->c, c->resources->requests, c->resources->n_requests, where, err);
            if (rc != COMMON_OK)
                goto out;
        }
        if (c->restartpolicy && strcmp(c->restartpolicy, "Always") == 0) {
            /* a sidecar runs beside everything after it */
            rc = res_add(out, &w->c, where, err);
            if (rc == COMMON_OK)
                rc = res_add(&w->sidecars, &w->c, where, err);
            w->use = w->sidecars;
        } else {
            /* a plain init container runs beside the sidecars started before it */
            w->use = w->c;
            rc = res_add(&w->use, &w->sidecars, where, err);
        }
        if (rc == COMMON_OK)
            rc = res_max(&w->init_max, &w->use, where, err);
        if (rc != COMMON_OK)
            goto out;
    }
    rc = res_max(out, &w->init_max, "spec.initContainers", err);
    if (rc != COMMON_OK)
        goto out;

    if (spec->resources && spec->resources->n_requests > 0) {
        rc = res_load(&w->c, spec->resources->requests, spec->resources->n_requests,
                      "spec.resources.requests", err);
        if (rc != COMMON_OK)
            goto out;
        for (i = 0; i < w->c.n; i++) {
            if (pod_level_resource(w->c.item[i].name)) {
                struct res_item *it = res_slot(out, w->c.item[i].name);
                if (!it) {
                    rc = res_full("spec.resources.requests", err);
                    goto out;
                }
                it->q = w->c.item[i].q;
            }
        }
    }
    rc = res_load(&w->c, spec->overhead, spec->n_overhead, "spec.overhead", err);
    if (rc == COMMON_OK)
        rc = res_add(out, &w->c, "spec.overhead", err);
out:
    common_free(w);
    return rc;
}

/* Resource totals in the units of struct common_resources, extended ones sorted. */
struct res_totals {
    int64_t milli_cpu, memory, ephemeral_storage, pods;
    size_t n_ext;
    struct {
        const char *name;
        int64_t value;
    } ext[COMMON_CORETYPES_MAX_RESOURCES];
};

static int ext_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static enum common_rc res_totals(const struct res_list *l, struct res_totals *t, const char *where,
                                 struct common_error *err)
{
    size_t i;

    memset(t, 0, sizeof(*t));
    for (i = 0; i < l->n; i++) {
        const struct res_item *it = &l->item[i];
        enum common_rc rc;
        int64_t v = 0;

        if (strcmp(it->name, "cpu") == 0)
            rc = common_quantity_milli(&it->q, &t->milli_cpu, err);
        else
            rc = common_quantity_value_ceil(&it->q, &v, err);
        if (rc != COMMON_OK) {
            common_error_prefix(err, "%s[%s]", where, it->name);
            return COMMON_EINVAL;
        }
        if (strcmp(it->name, "cpu") == 0)
            continue;
        if (strcmp(it->name, "memory") == 0) {
            t->memory = v;
        } else if (strcmp(it->name, "ephemeral-storage") == 0) {
            t->ephemeral_storage = v;
        } else if (strcmp(it->name, "pods") == 0) {
            t->pods = v;
        } else {
            t->ext[t->n_ext].name = it->name;
            t->ext[t->n_ext].value = v;
            t->n_ext++;
        }
    }
    qsort(t->ext, t->n_ext, sizeof(t->ext[0]), ext_cmp);
    return COMMON_OK;
}

/* ==================================================================== packing == */

/*
 * A packer lays out one block: the struct at offset 0, then arrays (aligned) and strings. With
 * block NULL it only measures; the same code then runs again with the block to copy.
 */
struct packer {
    char *block;
    size_t off;
};

static void *pk_take(struct packer *pk, size_t size, size_t align)
{
    size_t off = (pk->off + align - 1) & ~(align - 1);

    pk->off = off + size;
    return pk->block && size ? pk->block + off : NULL;
}

static const char *pk_str(struct packer *pk, const char *s)
{
    size_t n;
    char *d;

    if (!s || !*s)
        return "";
    n = strlen(s) + 1;
    d = pk_take(pk, n, 1);
    if (!d)
        return "";
    memcpy(d, s, n);
    return d;
}

/* Values that many objects repeat point at these constants instead of a copy of their own. */
/* clang-format off */
static const char *const common_words[] = {
    "Pending", "Running", "Succeeded", "Failed", "Unknown", "default-scheduler", "Equal",
    "Exists", "NoSchedule", "PreferNoSchedule", "NoExecute", "In", "NotIn", "DoesNotExist",
    "Gt", "Lt", "Job", "ReplicaSet", "StatefulSet", "DaemonSet", "JobSet", "metadata.name",
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable", "kubernetes.io/hostname", "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region", "nvidia.com/gpu", "hugepages-1Gi", "hugepages-2Mi",
    "trainsched.io/gang"};
/* clang-format on */

static const char *pk_word(struct packer *pk, const char *s)
{
    size_t i;

    if (!s || !*s)
        return "";
    for (i = 0; i < sizeof(common_words) / sizeof(common_words[0]); i++)
        if (strcmp(s, common_words[i]) == 0)
            return common_words[i];
    return pk_str(pk, s);
}

/* A map entry borrowed from a message, with its position (a later duplicate key wins). */
struct kv_ref {
    const char *key, *value;
    size_t idx;
};

static int kv_cmp(const void *a, const void *b)
{
    const struct kv_ref *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    if (c)
        return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* kv_sorted - the entries of a map<string,string> sorted by key, duplicates dropped (the last
 * one wins, as when Go reads a map). *out is NULL for an empty map. */
static enum common_rc kv_sorted(K8s__Meta__StringEntry *const *e, size_t n, struct kv_ref **out,
                                size_t *n_out, struct common_error *err)
{
    struct kv_ref *v;
    size_t i, k = 0;

    *out = NULL;
    *n_out = 0;
    if (n == 0)
        return COMMON_OK;
    v = common_malloc(n * sizeof(*v));
    if (!v)
        return common_error_set(err, COMMON_ENOMEM, "out of memory sorting a map");
    for (i = 0; i < n; i++) {
        v[i].key = e[i]->key ? e[i]->key : "";
        v[i].value = e[i]->value ? e[i]->value : "";
        v[i].idx = i;
    }
    qsort(v, n, sizeof(*v), kv_cmp);
    for (i = 0; i < n; i++) {
        if (i + 1 < n && strcmp(v[i].key, v[i + 1].key) == 0)
            continue;
        v[k++] = v[i];
    }
    *out = v;
    *n_out = k;
    return COMMON_OK;
}

static struct common_kv *pk_kvs(struct packer *pk, const struct kv_ref *v, size_t n)
{
    struct common_kv *kv = pk_take(pk, n * sizeof(*kv), _Alignof(struct common_kv));
    size_t i;

    for (i = 0; i < n; i++) {
        const char *k = pk_str(pk, v[i].key), *val = pk_str(pk, v[i].value);
        if (kv) {
            kv[i].key = k;
            kv[i].value = val;
        }
    }
    return kv;
}

static void pk_resources(struct packer *pk, const struct res_totals *t, struct common_resources *r)
{
    struct common_resource *ext =
        pk_take(pk, t->n_ext * sizeof(*ext), _Alignof(struct common_resource));
    size_t i;

    r->milli_cpu = t->milli_cpu;
    r->memory = t->memory;
    r->ephemeral_storage = t->ephemeral_storage;
    r->pods = t->pods;
    r->n_extended = (uint32_t)t->n_ext;
    r->extended = ext;
    for (i = 0; i < t->n_ext; i++) {
        const char *name = pk_word(pk, t->ext[i].name);
        if (ext) {
            ext[i].name = name;
            ext[i].value = t->ext[i].value;
        }
    }
}

static struct common_node_selector_req *
pk_reqs(struct packer *pk, K8s__Core__NodeSelectorRequirement *const *r, size_t n)
{
    struct common_node_selector_req *out =
        pk_take(pk, n * sizeof(*out), _Alignof(struct common_node_selector_req));
    size_t i, j;

    for (i = 0; i < n; i++) {
        const char *key = pk_word(pk, r[i]->key), *op = pk_word(pk, r[i]->operator_);
        const char **values = pk_take(pk, r[i]->n_values * sizeof(*values), _Alignof(const char *));
        for (j = 0; j < r[i]->n_values; j++) {
            const char *v = pk_str(pk, r[i]->values[j]);
            if (values)
                values[j] = v;
        }
        if (out) {
            out[i].key = key;
            out[i].op = op;
            out[i].values = values;
            out[i].n_values = (uint32_t)r[i]->n_values;
        }
    }
    return out;
}

/* The block for a packed object: measure, allocate, copy. pack(pk, prep, obj) fills *obj. */
static void *pk_block(size_t head, void (*pack)(struct packer *, const void *, void *),
                      const void *prep, void *obj, size_t *size)
{
    struct packer pk = {NULL, head};
    char *block;

    pack(&pk, prep, obj);
    *size = pk.off;
    block = common_malloc(pk.off);
    if (!block)
        return NULL;
    pk.block = block;
    pk.off = head;
    pack(&pk, prep, obj);
    memcpy(block, obj, head);
    return block;
}

/* =================================================================== the Pod == */

static const K8s__Meta__ObjectMeta empty_meta = K8S__META__OBJECT_META__INIT;
static const K8s__Core__PodSpec empty_pod_spec = K8S__CORE__POD_SPEC__INIT;
static const K8s__Core__NodeSpec empty_node_spec = K8S__CORE__NODE_SPEC__INIT;
static const K8s__Core__NodeStatus empty_node_status = K8S__CORE__NODE_STATUS__INIT;

/* What a Pod message turns into, computed once before the two packing passes. */
struct pod_prep {
    const K8s__Core__Pod *msg;
    const K8s__Meta__ObjectMeta *meta;
    const K8s__Core__PodSpec *spec;
    const K8s__Core__NodeSelector *required; /* NULL when none */
    const K8s__Meta__OwnerReference *controller;
    struct kv_ref *labels, *node_selector;
    size_t n_labels, n_node_selector;
    struct res_totals requests;
};

static void pod_pack(struct packer *pk, const void *prep, void *obj)
{
    const struct pod_prep *pp = prep;
    const K8s__Meta__ObjectMeta *m = pp->meta;
    const K8s__Core__PodSpec *s = pp->spec;
    struct common_pod *o = obj;
    size_t i;

    memset(o, 0, sizeof(*o));
    o->namespace = pk_str(pk, m->namespace_);
    o->name = pk_str(pk, m->name);
    o->uid = pk_str(pk, m->uid);
    o->resource_version = pk_str(pk, m->resourceversion);
    o->node_name = pk_str(pk, s->nodename);
    o->scheduler_name = pk_word(pk, s->schedulername);
    o->phase = pk_word(pk, pp->msg->status ? pp->msg->status->phase : NULL);
    o->priority_class_name = pk_str(pk, s->priorityclassname);
    o->controller.kind = pk_word(pk, pp->controller ? pp->controller->kind : NULL);
    o->controller.name = pk_str(pk, pp->controller ? pp->controller->name : NULL);
    o->controller.uid = pk_str(pk, pp->controller ? pp->controller->uid : NULL);
    o->priority = s->priority;
    o->has_priority = s->has_priority ? 1 : 0;
    o->deleting = m->deletiontimestamp ? 1 : 0;
    o->n_scheduling_gates = (uint32_t)s->n_schedulinggates;
    o->first_scheduling_gate =
        s->n_schedulinggates ? pk_str(pk, s->schedulinggates[0]->name) : NULL;
    for (i = 0; i < s->n_schedulinggates; i++) {
        const char *gn = s->schedulinggates[i] ? s->schedulinggates[i]->name : NULL;
        if (gn && strcmp(gn, COMMON_TRAINSCHED_GATE) == 0) {
            if (!(o->scheduling_gates & COMMON_GATE_TRAINSCHED))
                o->trainsched_gate_index = (uint32_t)i;
            o->scheduling_gates |= COMMON_GATE_TRAINSCHED;
        } else if (gn && strcmp(gn, COMMON_KUEUE_TOPOLOGY_GATE) == 0) {
            o->scheduling_gates |= COMMON_GATE_KUEUE_TOPOLOGY;
        } else {
            o->scheduling_gates |= COMMON_GATE_OTHER;
        }
    }
    o->scheduling_group =
        s->schedulinggroup
            ? pk_str(pk, s->schedulinggroup->podgroupname ? s->schedulinggroup->podgroupname : "")
            : NULL;
    pk_resources(pk, &pp->requests, &o->requests);

    o->labels = pk_kvs(pk, pp->labels, pp->n_labels);
    o->n_labels = (uint32_t)pp->n_labels;
    o->node_selector = pk_kvs(pk, pp->node_selector, pp->n_node_selector);
    o->n_node_selector = (uint32_t)pp->n_node_selector;

    o->tolerations =
        pk_take(pk, s->n_tolerations * sizeof(*o->tolerations), _Alignof(struct common_toleration));
    o->n_tolerations = (uint32_t)s->n_tolerations;
    for (i = 0; i < s->n_tolerations; i++) {
        const K8s__Core__Toleration *t = s->tolerations[i];
        struct common_toleration v;
        v.key = pk_word(pk, t->key);
        v.op = pk_word(pk, t->operator_);
        v.value = pk_str(pk, t->value);
        v.effect = pk_word(pk, t->effect);
        v.toleration_seconds = t->has_tolerationseconds ? t->tolerationseconds : 0;
        v.has_toleration_seconds = t->has_tolerationseconds ? 1 : 0;
        if (o->tolerations)
            o->tolerations[i] = v;
    }

    if (pp->required) {
        size_t n = pp->required->n_nodeselectorterms;
        o->affinity_terms =
            pk_take(pk, n * sizeof(*o->affinity_terms), _Alignof(struct common_node_selector_term));
        o->n_affinity_terms = (uint32_t)n;
        for (i = 0; i < n; i++) {
            const K8s__Core__NodeSelectorTerm *t = pp->required->nodeselectorterms[i];
            struct common_node_selector_term v;
            v.match_expressions = pk_reqs(pk, t->matchexpressions, t->n_matchexpressions);
            v.n_match_expressions = (uint32_t)t->n_matchexpressions;
            v.match_fields = pk_reqs(pk, t->matchfields, t->n_matchfields);
            v.n_match_fields = (uint32_t)t->n_matchfields;
            if (o->affinity_terms)
                o->affinity_terms[i] = v;
        }
    }

    o->resource_claims = pk_take(pk, s->n_resourceclaims * sizeof(*o->resource_claims),
                                 _Alignof(struct common_pod_claim));
    o->n_resource_claims = (uint32_t)s->n_resourceclaims;
    for (i = 0; i < s->n_resourceclaims; i++) {
        const K8s__Core__PodResourceClaim *c = s->resourceclaims[i];
        struct common_pod_claim v;
        v.name = pk_str(pk, c->name);
        v.resource_claim_name = pk_str(pk, c->resourceclaimname);
        v.resource_claim_template_name = pk_str(pk, c->resourceclaimtemplatename);
        if (o->resource_claims)
            o->resource_claims[i] = v;
    }
}

/* pod_from_msg - the compact pod of a message (borrowed; it may come from JSON). */
static enum common_rc pod_from_msg(const K8s__Core__Pod *msg, struct common_pod **out,
                                   struct common_error *err)
{
    struct pod_prep *pp = common_calloc(1, sizeof(*pp));
    struct res_list *reqs = common_malloc(sizeof(*reqs));
    struct common_pod head, *pod;
    enum common_rc rc;
    size_t i, size;

    *out = NULL;
    if (!pp || !reqs) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory decoding a pod");
        goto out;
    }
    pp->msg = msg;
    pp->meta = msg->metadata ? msg->metadata : &empty_meta;
    pp->spec = msg->spec ? msg->spec : &empty_pod_spec;
    if (pp->spec->affinity && pp->spec->affinity->nodeaffinity)
        pp->required =
            pp->spec->affinity->nodeaffinity->requiredduringschedulingignoredduringexecution;
    for (i = 0; i < pp->meta->n_ownerreferences && !pp->controller; i++)
        if (pp->meta->ownerreferences[i]->has_controller &&
            pp->meta->ownerreferences[i]->controller)
            pp->controller = pp->meta->ownerreferences[i];

    rc = kv_sorted(pp->meta->labels, pp->meta->n_labels, &pp->labels, &pp->n_labels, err);
    if (rc == COMMON_OK)
        rc = kv_sorted(pp->spec->nodeselector, pp->spec->n_nodeselector, &pp->node_selector,
                       &pp->n_node_selector, err);
    if (rc == COMMON_OK)
        rc = pod_requests(pp->spec, reqs, err);
    if (rc == COMMON_OK)
        rc = res_totals(reqs, &pp->requests, "effective pod requests", err);
    if (rc != COMMON_OK)
        goto out;

    pod = pk_block(sizeof(head), pod_pack, pp, &head, &size);
    if (!pod || size > UINT32_MAX) {
        common_free(pod);
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory packing a pod");
        goto out;
    }
    pod->bytes = (uint32_t)size;
    *out = pod;
out:
    if (pp) {
        common_free(pp->labels);
        common_free(pp->node_selector);
    }
    common_free(pp);
    common_free(reqs);
    return rc;
}

void common_pod_free(struct common_pod *pod)
{
    common_free(pod);
}

/* ================================================================== the Node == */

struct node_prep {
    const K8s__Meta__ObjectMeta *meta;
    const K8s__Core__NodeSpec *spec;
    const K8s__Core__NodeStatus *status;
    struct kv_ref *labels;
    size_t n_labels;
    uint8_t ready;
    struct res_totals capacity, allocatable;
};

static void node_pack(struct packer *pk, const void *prep, void *obj)
{
    const struct node_prep *np = prep;
    struct common_node *o = obj;
    size_t i;

    memset(o, 0, sizeof(*o));
    o->name = pk_str(pk, np->meta->name);
    o->uid = pk_str(pk, np->meta->uid);
    o->resource_version = pk_str(pk, np->meta->resourceversion);
    o->unschedulable = np->spec->has_unschedulable && np->spec->unschedulable ? 1 : 0;
    o->ready = np->ready;
    o->labels = pk_kvs(pk, np->labels, np->n_labels);
    o->n_labels = (uint32_t)np->n_labels;
    pk_resources(pk, &np->capacity, &o->capacity);
    pk_resources(pk, &np->allocatable, &o->allocatable);
    o->taints = pk_take(pk, np->spec->n_taints * sizeof(*o->taints), _Alignof(struct common_taint));
    o->n_taints = (uint32_t)np->spec->n_taints;
    for (i = 0; i < np->spec->n_taints; i++) {
        const K8s__Core__Taint *t = np->spec->taints[i];
        struct common_taint v;
        v.key = pk_word(pk, t->key);
        v.value = pk_str(pk, t->value);
        v.effect = pk_word(pk, t->effect);
        if (o->taints)
            o->taints[i] = v;
    }
}

static enum common_rc node_from_msg(const K8s__Core__Node *msg, struct common_node **out,
                                    struct common_error *err)
{
    struct node_prep *np = common_calloc(1, sizeof(*np));
    struct res_list *l = common_malloc(sizeof(*l));
    struct common_node head, *node;
    enum common_rc rc;
    size_t i, size;

    *out = NULL;
    if (!np || !l) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory decoding a node");
        goto out;
    }
    np->meta = msg->metadata ? msg->metadata : &empty_meta;
    np->spec = msg->spec ? msg->spec : &empty_node_spec;
    np->status = msg->status ? msg->status : &empty_node_status;
    np->ready = COMMON_NODE_READY_UNKNOWN;
    for (i = 0; i < np->status->n_conditions; i++) {
        const K8s__Core__NodeCondition *c = np->status->conditions[i];
        if (c->type && strcmp(c->type, "Ready") == 0) {
            if (c->status && strcmp(c->status, "True") == 0)
                np->ready = COMMON_NODE_READY_TRUE;
            else if (c->status && strcmp(c->status, "False") == 0)
                np->ready = COMMON_NODE_READY_FALSE;
            break;
        }
    }
    rc = kv_sorted(np->meta->labels, np->meta->n_labels, &np->labels, &np->n_labels, err);
    if (rc == COMMON_OK)
        rc = res_load(l, np->status->capacity, np->status->n_capacity, "status.capacity", err);
    if (rc == COMMON_OK)
        rc = res_totals(l, &np->capacity, "status.capacity", err);
    if (rc == COMMON_OK)
        rc = res_load(l, np->status->allocatable, np->status->n_allocatable, "status.allocatable",
                      err);
    if (rc == COMMON_OK)
        rc = res_totals(l, &np->allocatable, "status.allocatable", err);
    if (rc != COMMON_OK)
        goto out;

    node = pk_block(sizeof(head), node_pack, np, &head, &size);
    if (!node || size > UINT32_MAX) {
        common_free(node);
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory packing a node");
        goto out;
    }
    node->bytes = (uint32_t)size;
    *out = node;
out:
    if (np)
        common_free(np->labels);
    common_free(np);
    common_free(l);
    return rc;
}

void common_node_free(struct common_node *node)
{
    common_free(node);
}

/* ============================================================ protobuf objects == */

/* One table row per kind: names and the message-level decoder. */
struct kind_ops {
    const char *kind, *list_kind;
    /* decode - the compact object of a raw Pod / Node message into *out */
    enum common_rc (*decode)(const uint8_t *raw, size_t len, const char *what, void **out,
                             struct common_error *err);
};

static enum common_rc pod_decode_raw(const uint8_t *raw, size_t len, const char *what, void **out,
                                     struct common_error *err)
{
    struct pb_alloc pa;
    K8s__Core__Pod *msg;
    struct common_pod *pod = NULL;
    enum common_rc rc;

    pb_alloc_init(&pa);
    msg = k8s__core__pod__unpack(&pa.a, len, raw);
    if (!msg)
        return pb_unpack_failed(&pa, err, what, "Pod", len);
    rc = pod_from_msg(msg, &pod, err);
    k8s__core__pod__free_unpacked(msg, &pa.a);
    if (rc != COMMON_OK)
        common_error_prefix(err, "%s", what);
    *out = pod;
    return rc;
}

static enum common_rc node_decode_raw(const uint8_t *raw, size_t len, const char *what, void **out,
                                      struct common_error *err)
{
    struct pb_alloc pa;
    K8s__Core__Node *msg;
    struct common_node *node = NULL;
    enum common_rc rc;

    pb_alloc_init(&pa);
    msg = k8s__core__node__unpack(&pa.a, len, raw);
    if (!msg)
        return pb_unpack_failed(&pa, err, what, "Node", len);
    rc = node_from_msg(msg, &node, err);
    k8s__core__node__free_unpacked(msg, &pa.a);
    if (rc != COMMON_OK)
        common_error_prefix(err, "%s", what);
    *out = node;
    return rc;
}

static const struct kind_ops pod_ops = {"Pod", "PodList", pod_decode_raw};
static const struct kind_ops node_ops = {"Node", "NodeList", node_decode_raw};

static enum common_rc object_from_protobuf(const struct kind_ops *ops, const void *data, size_t len,
                                           void **out, struct common_error *err)
{
    struct envelope env;
    enum common_rc rc;

    *out = NULL;
    if (!data && len)
        return common_error_set(err, COMMON_EINVAL, "%s: no data", ops->kind);
    if (len > COMMON_CORETYPES_MAX_OBJECT)
        return common_error_set(err, COMMON_EINVAL, "%s: %zu bytes, over the cap of %u", ops->kind,
                                len, COMMON_CORETYPES_MAX_OBJECT);
    rc = envelope_open(data, data, len, ops->kind, &env, err);
    if (rc == COMMON_OK)
        rc = envelope_expect(&env, ops->kind, ops->kind, err);
    if (rc == COMMON_OK)
        rc = ops->decode(env.raw.p, env.raw.len, ops->kind, out, err);
    return rc;
}

enum common_rc common_pod_from_protobuf(const void *data, size_t len, struct common_pod **out,
                                        struct common_error *err)
{
    void *obj;
    enum common_rc rc = object_from_protobuf(&pod_ops, data, len, &obj, err);

    *out = obj;
    return rc;
}

enum common_rc common_node_from_protobuf(const void *data, size_t len, struct common_node **out,
                                         struct common_error *err)
{
    void *obj;
    enum common_rc rc = object_from_protobuf(&node_ops, data, len, &obj, err);

    *out = obj;
    return rc;
}

/* =================================================================== lists == */

void common_list_meta_clear(struct common_list_meta *meta)
{
    if (!meta)
        return;
    common_free(meta->resource_version);
    common_free(meta->continue_token);
    memset(meta, 0, sizeof(*meta));
}

static char *slice_dup(struct slice s)
{
    return common_strndup(s.len ? (const char *)s.p : "", s.len);
}

/* A typed callback behind the generic list walker. */
struct list_sink {
    enum common_rc (*on_pod)(void *ctx, struct common_pod *pod, struct common_error *err);
    enum common_rc (*on_node)(void *ctx, struct common_node *node, struct common_error *err);
    void *ctx;
};

static enum common_rc list_from_protobuf(const struct kind_ops *ops, const void *data, size_t len,
                                         const struct list_sink *sink,
                                         struct common_list_meta *meta, struct common_error *err)
{
    const uint8_t *base = data, *p, *end;
    struct slice rv = {NULL, 0}, cont = {NULL, 0};
    uint64_t remaining = 0;
    int has_remaining = 0, r;
    struct envelope env;
    struct pb_field f;
    enum common_rc rc;
    size_t item = 0;

    if (meta)
        memset(meta, 0, sizeof(*meta));
    if (!sink->on_pod && !sink->on_node)
        return common_error_set(err, COMMON_EINVAL, "%s: no item callback", ops->list_kind);
    if (!data && len)
        return common_error_set(err, COMMON_EINVAL, "%s: no data", ops->list_kind);
    if (len > COMMON_CORETYPES_MAX_LIST)
        return common_error_set(err, COMMON_EINVAL, "%s: %zu bytes, over the cap of %zu",
                                ops->list_kind, len, COMMON_CORETYPES_MAX_LIST);
    rc = envelope_open(base, base, len, ops->list_kind, &env, err);
    if (rc == COMMON_OK)
        rc = envelope_expect(&env, ops->list_kind, ops->list_kind, err);
    if (rc != COMMON_OK)
        return rc;

    p = env.raw.p;
    end = env.raw.p + env.raw.len;
    while ((r = pb_next(&p, end, &f)) == 1) {
        if (f.num == 1 && f.wire == 2) { /* ListMeta */
            const uint8_t *q = f.bytes.p, *qend = f.bytes.p + f.bytes.len;
            struct pb_field g;
            int r2;
            while ((r2 = pb_next(&q, qend, &g)) == 1) {
                if (g.num == 2 && g.wire == 2) {
                    rv = g.bytes;
                } else if (g.num == 3 && g.wire == 2) {
                    cont = g.bytes;
                } else if (g.num == 4 && g.wire == 0) {
                    remaining = g.varint;
                    has_remaining = 1;
                }
            }
            if (r2 < 0)
                return common_error_set(err, COMMON_EINVAL, "%s: malformed metadata at offset %zu",
                                        ops->list_kind, (size_t)(q - base));
        } else if (f.num == 2 && f.wire == 2) { /* an item */
            char what[96];
            void *obj = NULL;
            snprintf(what, sizeof(what), "%s item %zu at offset %zu", ops->list_kind, item,
                     (size_t)(f.bytes.p - base));
            if (f.bytes.len > COMMON_CORETYPES_MAX_OBJECT)
                return common_error_set(err, COMMON_EINVAL, "%s: %zu bytes, over the cap of %u",
                                        what, f.bytes.len, COMMON_CORETYPES_MAX_OBJECT);
            rc = ops->decode(f.bytes.p, f.bytes.len, what, &obj, err);
            if (rc != COMMON_OK)
                return rc;
            rc = sink->on_pod ? sink->on_pod(sink->ctx, obj, err)
                              : sink->on_node(sink->ctx, obj, err);
            if (rc != COMMON_OK)
                return rc;
            item++;
        }
    }
    if (r < 0)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: malformed list at offset %zu (truncated or garbage)",
                                ops->list_kind, (size_t)(p - base));
    if (meta) {
        meta->resource_version = slice_dup(rv);
        meta->continue_token = slice_dup(cont);
        meta->remaining_item_count = (int64_t)remaining;
        meta->has_remaining_item_count = has_remaining;
        if (!meta->resource_version || !meta->continue_token) {
            common_list_meta_clear(meta);
            return common_error_set(err, COMMON_ENOMEM, "%s: out of memory", ops->list_kind);
        }
    }
    return COMMON_OK;
}

enum common_rc common_pod_list_from_protobuf(const void *data, size_t len,
                                             enum common_rc (*cb)(void *ctx, struct common_pod *pod,
                                                                  struct common_error *err),
                                             void *ctx, struct common_list_meta *meta,
                                             struct common_error *err)
{
    struct list_sink sink = {cb, NULL, ctx};

    return list_from_protobuf(&pod_ops, data, len, &sink, meta, err);
}

enum common_rc common_node_list_from_protobuf(
    const void *data, size_t len,
    enum common_rc (*cb)(void *ctx, struct common_node *node, struct common_error *err), void *ctx,
    struct common_list_meta *meta, struct common_error *err)
{
    struct list_sink sink = {NULL, cb, ctx};

    return list_from_protobuf(&node_ops, data, len, &sink, meta, err);
}

/* =================================================================== watches == */

void common_watch_event_clear(struct common_watch_event *ev)
{
    if (!ev)
        return;
    common_free(ev->resource_version);
    common_pod_free(ev->pod);
    common_node_free(ev->node);
    common_free(ev->status_reason);
    common_free(ev->status_message);
    memset(ev, 0, sizeof(*ev));
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

enum common_rc common_watch_frame_size(const void *data, size_t len, size_t *frame_size,
                                       struct common_error *err)
{
    uint32_t n;

    *frame_size = 0;
    if (len < 4)
        return COMMON_OK;
    n = be32(data);
    if (n > COMMON_CORETYPES_MAX_OBJECT)
        return common_error_set(err, COMMON_EINVAL,
                                "watch frame: length prefix %u over the cap of %u bytes", n,
                                COMMON_CORETYPES_MAX_OBJECT);
    *frame_size = 4 + (size_t)n;
    return COMMON_OK;
}

static const struct {
    const char *name;
    enum common_watch_type type;
} watch_types[] = {{"ADDED", COMMON_WATCH_ADDED},
                   {"MODIFIED", COMMON_WATCH_MODIFIED},
                   {"DELETED", COMMON_WATCH_DELETED},
                   {"BOOKMARK", COMMON_WATCH_BOOKMARK},
                   {"ERROR", COMMON_WATCH_ERROR}};

/* A BOOKMARK's object: only metadata.resourceVersion and the initial-events-end mark. */
static enum common_rc watch_bookmark(const struct envelope *env, struct common_watch_event *ev,
                                     struct common_error *err)
{
    struct pb_alloc pa;
    K8s__Meta__BookmarkObject *b;
    size_t i;

    pb_alloc_init(&pa);
    b = k8s__meta__bookmark_object__unpack(&pa.a, env->raw.len, env->raw.p);
    if (!b)
        return pb_unpack_failed(&pa, err, "watch BOOKMARK", "object", env->raw.len);
    if (b->metadata) {
        ev->resource_version =
            common_strdup(b->metadata->resourceversion ? b->metadata->resourceversion : "");
        for (i = 0; i < b->metadata->n_annotations; i++) {
            const K8s__Meta__StringEntry *a = b->metadata->annotations[i];
            if (a->key && strcmp(a->key, "k8s.io/initial-events-end") == 0)
                ev->initial_events_end = a->value && strcmp(a->value, "true") == 0;
        }
    } else {
        ev->resource_version = common_strdup("");
    }
    k8s__meta__bookmark_object__free_unpacked(b, &pa.a);
    if (!ev->resource_version)
        return common_error_set(err, COMMON_ENOMEM, "watch BOOKMARK: out of memory");
    return COMMON_OK;
}

/* An ERROR's object: a Status. */
static enum common_rc watch_error(const struct envelope *env, struct common_watch_event *ev,
                                  struct common_error *err)
{
    struct pb_alloc pa;
    K8s__Meta__Status *st;

    if (!slice_eq(env->kind, "Status"))
        return common_error_set(
            err, COMMON_EINVAL, "watch ERROR: object of kind \"%.*s\", expected Status",
            (int)(env->kind.len > 64 ? 64 : env->kind.len), (const char *)env->kind.p);
    pb_alloc_init(&pa);
    st = k8s__meta__status__unpack(&pa.a, env->raw.len, env->raw.p);
    if (!st)
        return pb_unpack_failed(&pa, err, "watch ERROR", "Status", env->raw.len);
    ev->status_code = st->has_code ? st->code : 0;
    ev->status_reason = common_strdup(st->reason ? st->reason : "");
    ev->status_message = common_strdup(st->message ? st->message : "");
    ev->resource_version = common_strdup("");
    k8s__meta__status__free_unpacked(st, &pa.a);
    if (!ev->status_reason || !ev->status_message || !ev->resource_version)
        return common_error_set(err, COMMON_ENOMEM, "watch ERROR: out of memory");
    return COMMON_OK;
}

static enum common_rc watch_decode(const uint8_t *base, size_t len, enum common_kind kind,
                                   struct common_watch_event *ev, struct common_error *err)
{
    const struct kind_ops *ops = kind == COMMON_KIND_NODE ? &node_ops : &pod_ops;
    const uint8_t *p = base + 4, *end = base + len;
    struct slice type = {NULL, 0}, object = {NULL, 0};
    int r, have_type = 0, have_object = 0;
    struct envelope env;
    struct pb_field f;
    enum common_rc rc;
    uint32_t n;
    size_t i;

    if (kind != COMMON_KIND_POD && kind != COMMON_KIND_NODE)
        return common_error_set(err, COMMON_EINVAL, "watch frame: unknown kind %d", (int)kind);
    if (!base || len < 4)
        return common_error_set(err, COMMON_EINVAL,
                                "watch frame: %zu bytes, shorter than the 4-byte length prefix",
                                base ? len : 0);
    n = be32(base);
    if (n > COMMON_CORETYPES_MAX_OBJECT)
        return common_error_set(err, COMMON_EINVAL,
                                "watch frame: length prefix %u over the cap of %u bytes", n,
                                COMMON_CORETYPES_MAX_OBJECT);
    if ((size_t)n != len - 4)
        return common_error_set(err, COMMON_EINVAL,
                                "watch frame: length prefix says %u bytes but %zu follow%s", n,
                                len - 4, (size_t)n > len - 4 ? " (truncated)" : "");

    /* the server sends the WatchEvent bare; an enveloped one is accepted as well */
    if (end - p >= 4 && memcmp(p, K8S_MAGIC, sizeof(K8S_MAGIC)) == 0) {
        rc = envelope_open(base, p, (size_t)(end - p), "watch frame", &env, err);
        if (rc == COMMON_OK)
            rc = envelope_expect(&env, "WatchEvent", "watch frame", err);
        if (rc != COMMON_OK)
            return rc;
        p = env.raw.p;
        end = env.raw.p + env.raw.len;
    }
    while ((r = pb_next(&p, end, &f)) == 1) {
        if (f.num == 1 && f.wire == 2) {
            type = f.bytes;
            have_type = 1;
        } else if (f.num == 2 && f.wire == 2) { /* RawExtension: raw is field 1 */
            const uint8_t *q = f.bytes.p, *qend = f.bytes.p + f.bytes.len;
            struct pb_field g;
            int r2;
            while ((r2 = pb_next(&q, qend, &g)) == 1)
                if (g.num == 1 && g.wire == 2) {
                    object = g.bytes;
                    have_object = 1;
                }
            if (r2 < 0)
                return common_error_set(err, COMMON_EINVAL,
                                        "watch frame: malformed object at offset %zu",
                                        (size_t)(q - base));
        }
    }
    if (r < 0)
        return common_error_set(err, COMMON_EINVAL,
                                "watch frame: malformed WatchEvent at offset %zu (truncated or "
                                "garbage)",
                                (size_t)(p - base));
    if (!have_type)
        return common_error_set(err, COMMON_EINVAL, "watch frame: WatchEvent without a type");
    for (i = 0; i < sizeof(watch_types) / sizeof(watch_types[0]); i++)
        if (slice_eq(type, watch_types[i].name))
            ev->type = watch_types[i].type;
    if (!ev->type)
        return common_error_set(err, COMMON_EINVAL, "watch frame: unknown event type \"%.*s\"",
                                (int)(type.len > 64 ? 64 : type.len), (const char *)type.p);
    if (!have_object)
        return common_error_set(err, COMMON_EINVAL, "watch frame: %.*s event without an object",
                                (int)type.len, (const char *)type.p);

    rc = envelope_open(base, object.p, object.len, "watch event object", &env, err);
    if (rc != COMMON_OK)
        return rc;
    if (ev->type == COMMON_WATCH_ERROR)
        return watch_error(&env, ev, err);
    rc = envelope_expect(&env, ops->kind, "watch event object", err);
    if (rc != COMMON_OK)
        return rc;
    if (ev->type == COMMON_WATCH_BOOKMARK)
        return watch_bookmark(&env, ev, err);

    if (kind == COMMON_KIND_NODE) {
        void *obj = NULL;
        rc = ops->decode(env.raw.p, env.raw.len, "watch event object", &obj, err);
        ev->node = obj;
        if (rc == COMMON_OK)
            ev->resource_version = common_strdup(ev->node->resource_version);
    } else {
        void *obj = NULL;
        rc = ops->decode(env.raw.p, env.raw.len, "watch event object", &obj, err);
        ev->pod = obj;
        if (rc == COMMON_OK)
            ev->resource_version = common_strdup(ev->pod->resource_version);
    }
    if (rc == COMMON_OK && !ev->resource_version)
        rc = common_error_set(err, COMMON_ENOMEM, "watch frame: out of memory");
    return rc;
}

enum common_rc common_watch_decode_frame(const void *data, size_t len, enum common_kind kind,
                                         struct common_watch_event *ev, struct common_error *err)
{
    enum common_rc rc;

    memset(ev, 0, sizeof(*ev));
    rc = watch_decode(data, len, kind, ev, err);
    if (rc != COMMON_OK)
        common_watch_event_clear(ev);
    return rc;
}

/* ======================================================================= JSON == */

/*
 * JSON is read into the protobuf-c message structs the protobuf path produces. The structs
 * live in an arena; their strings point into the jansson tree (read-only, alive for the call).
 * path tracks where we are ("spec.containers[1]") for error messages.
 */
struct jctx {
    struct common_arena *arena;
    struct common_error *err;
    char path[256];
    size_t len;
};

enum jp_part { JP_FIELD, JP_INDEX, JP_MAPKEY };

/* jp_push - append ".key", "[idx]" or "[key]" to the path; returns the mark to pop back to. */
static size_t jp_push(struct jctx *jc, enum jp_part part, const char *key, size_t idx)
{
    size_t mark = jc->len, room = sizeof(jc->path) - jc->len;
    int n;

    if (part == JP_INDEX)
        n = snprintf(jc->path + jc->len, room, "[%zu]", idx);
    else if (part == JP_MAPKEY)
        n = snprintf(jc->path + jc->len, room, "[%s]", key);
    else
        n = snprintf(jc->path + jc->len, room, "%s%s", jc->len ? "." : "", key);
    if (n < 0 || (size_t)n >= room)
        jc->len = sizeof(jc->path) - 1;
    else
        jc->len += (size_t)n;
    return mark;
}

static size_t jp_key(struct jctx *jc, const char *key)
{
    return jp_push(jc, JP_FIELD, key, 0);
}

static size_t jp_index(struct jctx *jc, size_t i)
{
    return jp_push(jc, JP_INDEX, NULL, i);
}

static void jp_pop(struct jctx *jc, size_t mark)
{
    jc->len = mark;
    jc->path[mark] = '\0';
}

/* j_fail - COMMON_EINVAL at the current path (plus key, when not NULL). */
static enum common_rc j_fail(struct jctx *jc, const char *key, const char *what)
{
    return common_error_set(jc->err, COMMON_EINVAL, "%s%s%s: %s", jc->path,
                            key && jc->len ? "." : "", key ? key : "", what);
}

static void *j_alloc(struct jctx *jc, size_t size)
{
    void *p = common_arena_alloc(jc->arena, size);

    if (!p)
        common_error_set(jc->err, COMMON_ENOMEM, "%s: out of memory", jc->path);
    return p;
}

/* j_get - obj[key], with null read as absent. */
static const json_t *j_get(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);

    return json_is_null(v) ? NULL : v;
}

static enum common_rc j_string(struct jctx *jc, const json_t *obj, const char *key, char **out)
{
    const json_t *v = j_get(obj, key);

    *out = NULL;
    if (!v)
        return COMMON_OK;
    if (!json_is_string(v))
        return j_fail(jc, key, "expected a string");
    *out = (char *)json_string_value(v); /* borrowed, never written through */
    return COMMON_OK;
}

static enum common_rc j_object(struct jctx *jc, const json_t *obj, const char *key,
                               const json_t **out)
{
    const json_t *v = j_get(obj, key);

    *out = NULL;
    if (!v)
        return COMMON_OK;
    if (!json_is_object(v))
        return j_fail(jc, key, "expected an object");
    *out = v;
    return COMMON_OK;
}

static enum common_rc j_array(struct jctx *jc, const json_t *obj, const char *key,
                              const json_t **out)
{
    const json_t *v = j_get(obj, key);

    *out = NULL;
    if (!v)
        return COMMON_OK;
    if (!json_is_array(v))
        return j_fail(jc, key, "expected an array");
    *out = v;
    return COMMON_OK;
}

static enum common_rc j_bool(struct jctx *jc, const json_t *obj, const char *key,
                             protobuf_c_boolean *has, protobuf_c_boolean *out)
{
    const json_t *v = j_get(obj, key);

    if (!v)
        return COMMON_OK;
    if (!json_is_boolean(v))
        return j_fail(jc, key, "expected a boolean");
    *has = 1;
    *out = json_is_true(v);
    return COMMON_OK;
}

static enum common_rc j_int(struct jctx *jc, const json_t *obj, const char *key, int64_t min,
                            int64_t max, protobuf_c_boolean *has, int64_t *out)
{
    const json_t *v = j_get(obj, key);

    if (!v)
        return COMMON_OK;
    if (!json_is_integer(v))
        return j_fail(jc, key, "expected an integer");
    if (json_integer_value(v) < min || json_integer_value(v) > max)
        return j_fail(jc, key, "integer out of range");
    *has = 1;
    *out = json_integer_value(v);
    return COMMON_OK;
}

/* j_string_map - obj[key] (an object of strings) as map entries. */
static enum common_rc j_string_map(struct jctx *jc, const json_t *obj, const char *key,
                                   size_t *n_out, K8s__Meta__StringEntry ***out)
{
    const json_t *m;
    const char *k;
    json_t *v;
    K8s__Meta__StringEntry **arr;
    enum common_rc rc = j_object(jc, obj, key, &m);
    size_t i = 0, mark;

    if (rc != COMMON_OK || !m || json_object_size(m) == 0)
        return rc;
    arr = j_alloc(jc, json_object_size(m) * sizeof(*arr));
    if (!arr)
        return COMMON_ENOMEM;
    mark = jp_key(jc, key);
    json_object_foreach((json_t *)m, k, v)
    {
        if (!json_is_string(v)) {
            jp_push(jc, JP_MAPKEY, k, 0);
            rc = j_fail(jc, NULL, "expected a string");
            break;
        }
        arr[i] = j_alloc(jc, sizeof(**arr));
        if (!arr[i]) {
            rc = COMMON_ENOMEM;
            break;
        }
        k8s__meta__string_entry__init(arr[i]);
        arr[i]->key = (char *)k;
        arr[i]->value = (char *)json_string_value(v);
        i++;
    }
    jp_pop(jc, mark);
    *n_out = i;
    *out = arr;
    return rc;
}

/* j_quantity_map - obj[key] (an object of quantity strings) as map entries. */
static enum common_rc j_quantity_map(struct jctx *jc, const json_t *obj, const char *key,
                                     size_t *n_out, K8s__Resource__QuantityEntry ***out)
{
    const json_t *m;
    const char *k;
    json_t *v;
    K8s__Resource__QuantityEntry **arr;
    enum common_rc rc = j_object(jc, obj, key, &m);
    size_t i = 0, mark;

    if (rc != COMMON_OK || !m || json_object_size(m) == 0)
        return rc;
    arr = j_alloc(jc, json_object_size(m) * sizeof(*arr));
    if (!arr)
        return COMMON_ENOMEM;
    mark = jp_key(jc, key);
    json_object_foreach((json_t *)m, k, v)
    {
        if (!json_is_string(v)) {
            jp_push(jc, JP_MAPKEY, k, 0);
            rc = j_fail(jc, NULL, "expected a quantity string");
            break;
        }
        arr[i] = j_alloc(jc, sizeof(**arr));
        if (arr[i]) {
            k8s__resource__quantity_entry__init(arr[i]);
            arr[i]->value = j_alloc(jc, sizeof(*arr[i]->value));
        }
        if (!arr[i] || !arr[i]->value) {
            rc = COMMON_ENOMEM;
            break;
        }
        k8s__resource__quantity__init(arr[i]->value);
        arr[i]->key = (char *)k;
        arr[i]->value->string = (char *)json_string_value(v);
        i++;
    }
    jp_pop(jc, mark);
    *n_out = i;
    *out = arr;
    return rc;
}

/*
 * J_REPEATED - obj[key], an array of objects, into a repeated message field: n_out and arr_out
 * get the count and an arena array of T, each item initialised by fill(jc, item_json, T *).
 */
#define J_REPEATED(rc, jc, obj, key, T, n_out, arr_out, fill)                                      \
    do {                                                                                           \
        const json_t *a_;                                                                          \
        (rc) = j_array((jc), (obj), (key), &a_);                                                   \
        if ((rc) == COMMON_OK && a_ && json_array_size(a_) > 0) {                                  \
            size_t n_ = json_array_size(a_), i_, m_ = jp_key((jc), (key));                         \
            T **v_ = j_alloc((jc), n_ * sizeof(*v_));                                              \
            (rc) = v_ ? COMMON_OK : COMMON_ENOMEM;                                                 \
            for (i_ = 0; (rc) == COMMON_OK && i_ < n_; i_++) {                                     \
                size_t mi_ = jp_index((jc), i_);                                                   \
                const json_t *it_ = json_array_get(a_, i_);                                        \
                v_[i_] = j_alloc((jc), sizeof(T));                                                 \
                if (!v_[i_])                                                                       \
                    (rc) = COMMON_ENOMEM;                                                          \
                else if (!json_is_object(it_))                                                     \
                    (rc) = j_fail((jc), NULL, "expected an object");                               \
                else                                                                               \
                    (rc) = fill((jc), it_, v_[i_]);                                                \
                if ((rc) == COMMON_OK)                                                             \
                    jp_pop((jc), mi_);                                                             \
            }                                                                                      \
            if ((rc) == COMMON_OK) {                                                               \
                jp_pop((jc), m_);                                                                  \
                (n_out) = n_;                                                                      \
                (arr_out) = v_;                                                                    \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static enum common_rc j_owner(struct jctx *jc, const json_t *o, K8s__Meta__OwnerReference *m)
{
    enum common_rc rc;

    k8s__meta__owner_reference__init(m);
    rc = j_string(jc, o, "kind", &m->kind);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "name", &m->name);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "uid", &m->uid);
    if (rc == COMMON_OK)
        rc = j_bool(jc, o, "controller", &m->has_controller, &m->controller);
    return rc;
}

static enum common_rc j_meta(struct jctx *jc, const json_t *obj, K8s__Meta__ObjectMeta **out)
{
    const json_t *o;
    K8s__Meta__ObjectMeta *m;
    enum common_rc rc = j_object(jc, obj, "metadata", &o);
    size_t mark;

    *out = NULL;
    if (rc != COMMON_OK || !o)
        return rc;
    m = j_alloc(jc, sizeof(*m));
    if (!m)
        return COMMON_ENOMEM;
    k8s__meta__object_meta__init(m);
    mark = jp_key(jc, "metadata");
    rc = j_string(jc, o, "name", &m->name);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "namespace", &m->namespace_);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "uid", &m->uid);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "resourceVersion", &m->resourceversion);
    if (rc == COMMON_OK) {
        char *ts;
        rc = j_string(jc, o, "deletionTimestamp", &ts);
        if (rc == COMMON_OK && ts) { /* only presence is kept */
            m->deletiontimestamp = j_alloc(jc, sizeof(*m->deletiontimestamp));
            if (!m->deletiontimestamp)
                return COMMON_ENOMEM;
            k8s__meta__time__init(m->deletiontimestamp);
        }
    }
    if (rc == COMMON_OK)
        rc = j_string_map(jc, o, "labels", &m->n_labels, &m->labels);
    if (rc == COMMON_OK)
        J_REPEATED(rc, jc, o, "ownerReferences", K8s__Meta__OwnerReference, m->n_ownerreferences,
                   m->ownerreferences, j_owner);
    if (rc == COMMON_OK)
        jp_pop(jc, mark);
    *out = m;
    return rc;
}

static enum common_rc j_container(struct jctx *jc, const json_t *o, K8s__Core__Container *c)
{
    const json_t *res;
    enum common_rc rc;

    k8s__core__container__init(c);
    rc = j_string(jc, o, "name", &c->name);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "restartPolicy", &c->restartpolicy);
    if (rc == COMMON_OK)
        rc = j_object(jc, o, "resources", &res);
    if (rc == COMMON_OK && res) {
        size_t mark = jp_key(jc, "resources");
        c->resources = j_alloc(jc, sizeof(*c->resources));
        if (!c->resources)
            return COMMON_ENOMEM;
        k8s__core__resource_requirements__init(c->resources);
        rc =
            j_quantity_map(jc, res, "requests", &c->resources->n_requests, &c->resources->requests);
        if (rc == COMMON_OK)
            jp_pop(jc, mark);
    }
    return rc;
}

static enum common_rc j_gate(struct jctx *jc, const json_t *o, K8s__Core__PodSchedulingGate *g)
{
    k8s__core__pod_scheduling_gate__init(g);
    return j_string(jc, o, "name", &g->name);
}

static enum common_rc j_toleration(struct jctx *jc, const json_t *o, K8s__Core__Toleration *t)
{
    enum common_rc rc;

    k8s__core__toleration__init(t);
    rc = j_string(jc, o, "key", &t->key);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "operator", &t->operator_);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "value", &t->value);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "effect", &t->effect);
    if (rc == COMMON_OK)
        rc = j_int(jc, o, "tolerationSeconds", INT64_MIN, INT64_MAX, &t->has_tolerationseconds,
                   &t->tolerationseconds);
    return rc;
}

static enum common_rc j_requirement(struct jctx *jc, const json_t *o,
                                    K8s__Core__NodeSelectorRequirement *r)
{
    const json_t *values;
    enum common_rc rc;
    size_t i;

    k8s__core__node_selector_requirement__init(r);
    rc = j_string(jc, o, "key", &r->key);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "operator", &r->operator_);
    if (rc == COMMON_OK)
        rc = j_array(jc, o, "values", &values);
    if (rc != COMMON_OK || !values || json_array_size(values) == 0)
        return rc;
    r->values = j_alloc(jc, json_array_size(values) * sizeof(*r->values));
    if (!r->values)
        return COMMON_ENOMEM;
    for (i = 0; i < json_array_size(values); i++) {
        const json_t *v = json_array_get(values, i);
        if (!json_is_string(v)) {
            jp_key(jc, "values");
            jp_index(jc, i);
            return j_fail(jc, NULL, "expected a string");
        }
        r->values[i] = (char *)json_string_value(v);
    }
    r->n_values = i;
    return COMMON_OK;
}

static enum common_rc j_term(struct jctx *jc, const json_t *o, K8s__Core__NodeSelectorTerm *t)
{
    enum common_rc rc;

    k8s__core__node_selector_term__init(t);
    J_REPEATED(rc, jc, o, "matchExpressions", K8s__Core__NodeSelectorRequirement,
               t->n_matchexpressions, t->matchexpressions, j_requirement);
    if (rc == COMMON_OK)
        J_REPEATED(rc, jc, o, "matchFields", K8s__Core__NodeSelectorRequirement, t->n_matchfields,
                   t->matchfields, j_requirement);
    return rc;
}

static enum common_rc j_claim(struct jctx *jc, const json_t *o, K8s__Core__PodResourceClaim *c)
{
    enum common_rc rc;

    k8s__core__pod_resource_claim__init(c);
    rc = j_string(jc, o, "name", &c->name);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "resourceClaimName", &c->resourceclaimname);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "resourceClaimTemplateName", &c->resourceclaimtemplatename);
    return rc;
}

/* spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution */
static enum common_rc j_affinity(struct jctx *jc, const json_t *spec, K8s__Core__PodSpec *s)
{
    static const char *const keys[] = {"affinity", "nodeAffinity",
                                       "requiredDuringSchedulingIgnoredDuringExecution"};
    const json_t *o = spec;
    K8s__Core__NodeAffinity *na;
    K8s__Core__NodeSelector *sel;
    enum common_rc rc = COMMON_OK;
    size_t i, mark = jc->len;

    for (i = 0; i < 3 && o; i++) {
        rc = j_object(jc, o, keys[i], &o);
        if (rc != COMMON_OK)
            return rc;
        if (o && i < 2)
            jp_key(jc, keys[i]);
    }
    if (!o) {
        jp_pop(jc, mark);
        return COMMON_OK;
    }
    s->affinity = j_alloc(jc, sizeof(*s->affinity));
    na = j_alloc(jc, sizeof(*na));
    sel = j_alloc(jc, sizeof(*sel));
    if (!s->affinity || !na || !sel)
        return COMMON_ENOMEM;
    k8s__core__affinity__init(s->affinity);
    k8s__core__node_affinity__init(na);
    k8s__core__node_selector__init(sel);
    s->affinity->nodeaffinity = na;
    na->requiredduringschedulingignoredduringexecution = sel;
    jp_key(jc, keys[2]);
    J_REPEATED(rc, jc, o, "nodeSelectorTerms", K8s__Core__NodeSelectorTerm,
               sel->n_nodeselectorterms, sel->nodeselectorterms, j_term);
    if (rc == COMMON_OK)
        jp_pop(jc, mark);
    return rc;
}

static enum common_rc j_pod_spec(struct jctx *jc, const json_t *obj, K8s__Core__PodSpec **out)
{
    const json_t *o, *res, *sg;
    K8s__Core__PodSpec *s;
    protobuf_c_boolean has = 0;
    int64_t prio = 0;
    enum common_rc rc = j_object(jc, obj, "spec", &o);
    size_t mark;

    *out = NULL;
    if (rc != COMMON_OK || !o)
        return rc;
    s = j_alloc(jc, sizeof(*s));
    if (!s)
        return COMMON_ENOMEM;
    k8s__core__pod_spec__init(s);
    *out = s;
    mark = jp_key(jc, "spec");
    J_REPEATED(rc, jc, o, "containers", K8s__Core__Container, s->n_containers, s->containers,
               j_container);
    if (rc == COMMON_OK)
        J_REPEATED(rc, jc, o, "initContainers", K8s__Core__Container, s->n_initcontainers,
                   s->initcontainers, j_container);
    if (rc == COMMON_OK)
        rc = j_string_map(jc, o, "nodeSelector", &s->n_nodeselector, &s->nodeselector);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "nodeName", &s->nodename);
    if (rc == COMMON_OK)
        rc = j_affinity(jc, o, s);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "schedulerName", &s->schedulername);
    if (rc == COMMON_OK)
        J_REPEATED(rc, jc, o, "tolerations", K8s__Core__Toleration, s->n_tolerations,
                   s->tolerations, j_toleration);
    if (rc == COMMON_OK)
        J_REPEATED(rc, jc, o, "schedulingGates", K8s__Core__PodSchedulingGate, s->n_schedulinggates,
                   s->schedulinggates, j_gate);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "priorityClassName", &s->priorityclassname);
    if (rc == COMMON_OK)
        rc = j_int(jc, o, "priority", INT32_MIN, INT32_MAX, &has, &prio);
    s->has_priority = has;
    s->priority = (int32_t)prio;
    if (rc == COMMON_OK)
        rc = j_quantity_map(jc, o, "overhead", &s->n_overhead, &s->overhead);
    if (rc == COMMON_OK)
        J_REPEATED(rc, jc, o, "resourceClaims", K8s__Core__PodResourceClaim, s->n_resourceclaims,
                   s->resourceclaims, j_claim);
    if (rc == COMMON_OK)
        rc = j_object(jc, o, "schedulingGroup", &sg);
    if (rc == COMMON_OK && sg) {
        size_t m2 = jp_key(jc, "schedulingGroup");
        s->schedulinggroup = j_alloc(jc, sizeof(*s->schedulinggroup));
        if (!s->schedulinggroup)
            return COMMON_ENOMEM;
        k8s__core__pod_scheduling_group__init(s->schedulinggroup);
        rc = j_string(jc, sg, "podGroupName", &s->schedulinggroup->podgroupname);
        if (rc == COMMON_OK)
            jp_pop(jc, m2);
    }
    if (rc == COMMON_OK)
        rc = j_object(jc, o, "resources", &res);
    if (rc == COMMON_OK && res) {
        size_t m2 = jp_key(jc, "resources");
        s->resources = j_alloc(jc, sizeof(*s->resources));
        if (!s->resources)
            return COMMON_ENOMEM;
        k8s__core__resource_requirements__init(s->resources);
        rc =
            j_quantity_map(jc, res, "requests", &s->resources->n_requests, &s->resources->requests);
        if (rc == COMMON_OK)
            jp_pop(jc, m2);
    }
    if (rc == COMMON_OK)
        jp_pop(jc, mark);
    return rc;
}

static enum common_rc j_pod(struct jctx *jc, const json_t *obj, K8s__Core__Pod *pod)
{
    const json_t *st;
    enum common_rc rc;

    k8s__core__pod__init(pod);
    rc = j_meta(jc, obj, &pod->metadata);
    if (rc == COMMON_OK)
        rc = j_pod_spec(jc, obj, &pod->spec);
    if (rc == COMMON_OK)
        rc = j_object(jc, obj, "status", &st);
    if (rc == COMMON_OK && st) {
        size_t mark = jp_key(jc, "status");
        pod->status = j_alloc(jc, sizeof(*pod->status));
        if (!pod->status)
            return COMMON_ENOMEM;
        k8s__core__pod_status__init(pod->status);
        rc = j_string(jc, st, "phase", &pod->status->phase);
        if (rc == COMMON_OK)
            jp_pop(jc, mark);
    }
    return rc;
}

static enum common_rc j_taint(struct jctx *jc, const json_t *o, K8s__Core__Taint *t)
{
    enum common_rc rc;

    k8s__core__taint__init(t);
    rc = j_string(jc, o, "key", &t->key);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "value", &t->value);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "effect", &t->effect);
    return rc;
}

static enum common_rc j_condition(struct jctx *jc, const json_t *o, K8s__Core__NodeCondition *c)
{
    enum common_rc rc;

    k8s__core__node_condition__init(c);
    rc = j_string(jc, o, "type", &c->type);
    if (rc == COMMON_OK)
        rc = j_string(jc, o, "status", &c->status);
    return rc;
}

static enum common_rc j_node(struct jctx *jc, const json_t *obj, K8s__Core__Node *node)
{
    const json_t *o;
    enum common_rc rc;

    k8s__core__node__init(node);
    rc = j_meta(jc, obj, &node->metadata);
    if (rc == COMMON_OK)
        rc = j_object(jc, obj, "spec", &o);
    if (rc == COMMON_OK && o) {
        size_t mark = jp_key(jc, "spec");
        K8s__Core__NodeSpec *s = j_alloc(jc, sizeof(*s));
        if (!s)
            return COMMON_ENOMEM;
        k8s__core__node_spec__init(s);
        node->spec = s;
        rc = j_bool(jc, o, "unschedulable", &s->has_unschedulable, &s->unschedulable);
        if (rc == COMMON_OK)
            J_REPEATED(rc, jc, o, "taints", K8s__Core__Taint, s->n_taints, s->taints, j_taint);
        if (rc == COMMON_OK)
            jp_pop(jc, mark);
    }
    if (rc == COMMON_OK)
        rc = j_object(jc, obj, "status", &o);
    if (rc == COMMON_OK && o) {
        size_t mark = jp_key(jc, "status");
        K8s__Core__NodeStatus *s = j_alloc(jc, sizeof(*s));
        if (!s)
            return COMMON_ENOMEM;
        k8s__core__node_status__init(s);
        node->status = s;
        rc = j_quantity_map(jc, o, "capacity", &s->n_capacity, &s->capacity);
        if (rc == COMMON_OK)
            rc = j_quantity_map(jc, o, "allocatable", &s->n_allocatable, &s->allocatable);
        if (rc == COMMON_OK)
            J_REPEATED(rc, jc, o, "conditions", K8s__Core__NodeCondition, s->n_conditions,
                       s->conditions, j_condition);
        if (rc == COMMON_OK)
            jp_pop(jc, mark);
    }
    return rc;
}

/* j_begin - the context of one JSON decode: checks obj is an object of kind (or no kind). */
static enum common_rc j_begin(struct jctx *jc, const json_t *obj, const char *kind,
                              struct common_error *err)
{
    const json_t *k;

    memset(jc, 0, sizeof(*jc));
    jc->err = err;
    if (!json_is_object(obj))
        return common_error_set(err, COMMON_EINVAL, "%s: expected a JSON object", kind);
    k = j_get(obj, "kind");
    if (k && (!json_is_string(k) || strcmp(json_string_value(k), kind) != 0))
        return common_error_set(err, COMMON_EINVAL, "kind: expected %s", kind);
    jc->arena = common_arena_create(0);
    if (!jc->arena)
        return common_error_set(err, COMMON_ENOMEM, "%s: out of memory", kind);
    return COMMON_OK;
}

enum common_rc common_pod_from_json(const json_t *obj, struct common_pod **out,
                                    struct common_error *err)
{
    struct jctx jc;
    K8s__Core__Pod msg;
    enum common_rc rc;

    *out = NULL;
    rc = j_begin(&jc, obj, "Pod", err);
    if (rc == COMMON_OK)
        rc = j_pod(&jc, obj, &msg);
    if (rc == COMMON_OK)
        rc = pod_from_msg(&msg, out, err);
    common_arena_destroy(jc.arena);
    return rc;
}

enum common_rc common_node_from_json(const json_t *obj, struct common_node **out,
                                     struct common_error *err)
{
    struct jctx jc;
    K8s__Core__Node msg;
    enum common_rc rc;

    *out = NULL;
    rc = j_begin(&jc, obj, "Node", err);
    if (rc == COMMON_OK)
        rc = j_node(&jc, obj, &msg);
    if (rc == COMMON_OK)
        rc = node_from_msg(&msg, out, err);
    common_arena_destroy(jc.arena);
    return rc;
}
