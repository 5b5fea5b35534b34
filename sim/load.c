/*
 * sim/load.c - cluster and job files -> struct sim_input (sim.h). Pure: the files arrive
 * parsed (common/yaml) and nothing is read or written here. TrainJobs go through
 * trainjob_render, the same core as `trainsched render` and the reconciler; the pods a JobSet
 * would make are spelled out as the Job controller names and labels them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/intmath.h"
#include "common/names.h"
#include "common/quantity.h"
#include "integrations/backend.h"
#include "sim/sim_int.h"
#include "topology/topology.h"
#include "trainjob/builtin.h"
#include "trainjob/lookup.h"
#include "trainjob/trainjob.h"

#define MAX_FILES 512
#define GEN_API "trainsched.io/v1alpha1"
#define LEVEL_BLOCK "cloud.provider.com/topology-block"
#define LEVEL_RACK "cloud.provider.com/topology-rack"

const char sim_default_cluster_yaml[] = "apiVersion: trainsched.io/v1alpha1\n"
                                        "kind: SimCluster\n"
                                        "metadata:\n"
                                        "  name: node\n"
                                        "spec:\n"
                                        "  blocks: 2\n"
                                        "  racksPerBlock: 4\n"
                                        "  nodesPerRack: 4\n"
                                        "  gpusPerNode: 8\n"
                                        "  cpusPerNode: \"96\"\n"
                                        "  memoryPerNode: 1Ti\n"
                                        "  podsPerNode: 110\n";

/* a manifest waiting for sim_loader_finish, with where it came from */
/* DRA is not simulated: a pod's ResourceClaims would be neither allocated nor counted, and its
 * pods packed as if they asked for no device (docs/simulate.md "Limits"), so they are refused */
#define SIM_NO_DRA                                                                                 \
    "Forbidden: simulate does not model DRA (ResourceClaims are not allocated and their devices "  \
    "not counted, so the placement would be wrong); remove the claims to simulate the job "        \
    "without its devices, or ask for the devices as an extended resource"

struct item {
    const json_t *doc;
    const struct common_yaml_docs *f;
    size_t di;
};

struct items {
    struct item *v;
    size_t n, cap;
};

struct sim_loader {
    struct common_arena *a;
    const char *gpu;
    const char *gpu_from; /* who set gpu: "--gpu-resource", a SimCluster's id, NULL: default */
    const struct common_yaml_docs *files[MAX_FILES];
    size_t n_files;
    struct common_yaml_docs builtin[16];
    size_t n_builtin;
    const char *cluster_file;
    struct common_node **nodes;
    size_t n_nodes, cap_nodes;
    const char **node_pos; /* [n_nodes]: "file:line:col: " of the object each node came from */
    size_t cap_node_pos;
    const char **levels;
    size_t n_levels;
    struct sim_topology *topos; /* in declaration order; the first is the default */
    size_t n_topos, cap_topos;
    struct items trainjobs, runtimes, podgroups, pods;
    struct common_pod **all_pods; /* every decoded pod, freed at destroy */
    size_t n_all_pods, cap_all_pods;
    struct sim_job *jobs;
    size_t n_jobs, cap_jobs;
    const struct item **job_src; /* [n_jobs]: the object each job was made from */
    size_t cap_job_src;
    /* a snapshot of a cluster (sim/snapshot.c): pods running at time 0, remarks, documents
     * made in memory (freed at destroy), the snapshot's time, and no jobs is no error */
    struct sim_load *load;
    size_t n_load, cap_load;
    const char **notes;
    size_t n_notes, cap_notes;
    struct common_yaml_docs **owned;
    size_t n_owned, cap_owned;
    int64_t epoch_ms;
    int snapshot;
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
    void *p;
    size_t c;

    if (n < *cap)
        return 0;
    c = *cap ? *cap * 2 : 16;
    p = common_realloc(*v, c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

static int items_add(struct items *it, const json_t *doc, const struct common_yaml_docs *f,
                     size_t di)
{
    if (grow((void **)&it->v, &it->cap, it->n, sizeof(*it->v)))
        return -1;
    it->v[it->n++] = (struct item){doc, f, di};
    return 0;
}

struct sim_loader *sim_loader_create(struct common_arena *a, const char *gpu_resource)
{
    struct sim_loader *l = common_malloc(sizeof(*l));

    if (!l)
        return NULL;
    memset(l, 0, sizeof(*l));
    l->a = a;
    l->gpu = gpu_resource ? gpu_resource : "nvidia.com/gpu";
    l->gpu_from = gpu_resource ? "--gpu-resource" : NULL;
    return l;
}

void sim_loader_destroy(struct sim_loader *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n_nodes; i++)
        common_node_free(l->nodes[i]);
    for (size_t i = 0; i < l->n_all_pods; i++)
        common_pod_free(l->all_pods[i]);
    for (size_t i = 0; i < l->n_builtin; i++)
        common_yaml_docs_free(&l->builtin[i]);
    common_free(l->nodes);
    common_free(l->node_pos);
    common_free(l->topos);
    common_free(l->all_pods);
    common_free(l->jobs);
    common_free(l->job_src);
    common_free(l->trainjobs.v);
    common_free(l->runtimes.v);
    common_free(l->podgroups.v);
    common_free(l->pods.v);
    common_free(l->load);
    common_free(l->notes);
    for (size_t i = 0; i < l->n_owned; i++) {
        common_yaml_docs_free(l->owned[i]);
        common_free(l->owned[i]);
    }
    common_free(l->owned);
    common_free(l);
}

/* ---- positions and messages ---- */

/* position where key was written in obj (an unknown field is the key's fault) */
static int key_pos(const struct sim_loader *l, json_t *obj, const char *key, char *buf, size_t n)
{
    int line, col;

    for (size_t i = 0; i < l->n_files; i++)
        if (common_yaml_locate_key(l->files[i], obj, key, &line, &col) == 0) {
            snprintf(buf, n, "%s:%d:%d: ", l->files[i]->name, line, col);
            return 0;
        }
    return -1;
}

/* "file:line:col: " of node (any loaded file), else "file:line: " of document di of f */
static void where(const struct sim_loader *l, const struct item *it, const json_t *node, char *buf,
                  size_t n)
{
    int line, col;

    for (size_t i = 0; node && i < l->n_files; i++)
        if (common_yaml_locate(l->files[i], node, &line, &col) == 0) {
            snprintf(buf, n, "%s:%d:%d: ", l->files[i]->name, line, col);
            return;
        }
    if (it && it->doc && it->f && common_yaml_locate(it->f, it->doc, &line, &col) == 0)
        snprintf(buf, n, "%s:%d:%d: ", it->f->name, line, col);
    else if (it && it->f)
        snprintf(buf, n, "%s:%d: ", it->f->name, it->f->doc_line[it->di]);
    else
        buf[0] = '\0';
}

/* position of key in object (for a value that has no position of its own: booleans, null) */
static void where_key(const struct sim_loader *l, const struct item *it, json_t *obj,
                      const char *key, char *buf, size_t n)
{
    int line, col;
    json_t *v = json_object_get(obj, key);

    for (size_t i = 0; i < l->n_files; i++)
        if ((v && common_yaml_locate(l->files[i], v, &line, &col) == 0) ||
            common_yaml_locate_key(l->files[i], obj, key, &line, &col) == 0) {
            snprintf(buf, n, "%s:%d:%d: ", l->files[i]->name, line, col);
            return;
        }
    where(l, it, obj, buf, n);
}

/* render's position of a field error (cmd/render.c print_errors): the key in its parent, else
 * the value, else the document */
static void field_pos(const struct sim_loader *l, const struct item *it,
                      const struct trainjob_field_error *fe, char *buf, size_t n)
{
    int line, col;

    for (size_t i = 0; fe->parent && fe->key && i < l->n_files; i++)
        if (common_yaml_locate_key(l->files[i], (json_t *)fe->parent, fe->key, &line, &col) == 0) {
            snprintf(buf, n, "%s:%d:%d: ", l->files[i]->name, line, col);
            return;
        }
    where(l, it, fe->node ? fe->node : fe->doc, buf, n);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

/* "Kind ns/name" of a manifest */
static void ident(const json_t *doc, const char *kind, char *buf, size_t n)
{
    const char *ns = str_at(doc, "metadata", "namespace");
    const char *name = str_at(doc, "metadata", "name");

    if (ns)
        snprintf(buf, n, "%s %s/%s", kind, ns, name ? name : "?");
    else
        snprintf(buf, n, "%s %s", kind, name ? name : "?");
}

static enum common_rc bad(struct common_error *err, const char *pos, const char *id,
                          const char *field, const char *what)
{
    return common_error_set(err, COMMON_EINVAL, "%s%s%s%s%s%s", pos, id, *id ? ": " : "", field,
                            *field ? ": " : "", what);
}

static enum common_rc oom(struct common_error *err)
{
    return common_error_set(err, COMMON_ENOMEM, "out of memory");
}

/* only the keys listed (NULL-ended) may appear in obj */
static enum common_rc known_keys(const struct sim_loader *l, const struct item *it, json_t *obj,
                                 const char *path, const char *id, const char *const *keys,
                                 struct common_error *err)
{
    const char *k;
    json_t *v;
    char pos[600], field[300];

    json_object_foreach(obj, k, v)
    {
        size_t i;
        for (i = 0; keys[i] && strcmp(keys[i], k) != 0; i++)
            ;
        if (!keys[i]) {
            if (key_pos(l, obj, k, pos, sizeof(pos)))
                where_key(l, it, obj, k, pos, sizeof(pos));
            snprintf(field, sizeof(field), "%s%s%s", path, *path ? "." : "", k);
            return bad(err, pos, id, field, "Unknown field");
        }
    }
    return COMMON_OK;
}

static int add_file(struct sim_loader *l, const struct common_yaml_docs *f)
{
    for (size_t i = 0; i < l->n_files; i++)
        if (l->files[i] == f)
            return 0;
    if (l->n_files >= MAX_FILES)
        return -1;
    l->files[l->n_files++] = f;
    return 0;
}

/* ---- durations ---- */

enum common_rc sim_parse_duration(const char *s, int64_t *ms, struct common_error *err)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    const char *p = s;
    int64_t total = 0;

    if (*p == '-')
        return common_error_set(err, COMMON_EINVAL, "must not be negative");
    if (!*p)
        return common_error_set(err, COMMON_EINVAL,
                                "must be a duration such as 90s or 1h30m, or whole seconds");
    while (*p) {
        char *end;
        long long v;
        size_t i, best = 0, best_len = 0;
        if (*p < '0' || *p > '9')
            return common_error_set(err, COMMON_EINVAL,
                                    "\"%s\": must be a duration such as 90s or 1h30m, or whole "
                                    "seconds",
                                    s);
        errno = 0;
        v = strtoll(p, &end, 10);
        if (errno || v > SIM_MAX_TIME_MS)
            return common_error_set(err, COMMON_EINVAL, "\"%s\": too large", s);
        p = end;
        if (!*p && p == s + strlen(s) && total == 0 && strspn(s, "0123456789") == strlen(s)) {
            total = v * 1000; /* whole seconds */
            break;
        }
        for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t n = strlen(units[i].unit);
            if (strncmp(p, units[i].unit, n) == 0 && n > best_len &&
                !(n == 1 && units[i].unit[0] == 'm' && p[1] == 's')) {
                best = i;
                best_len = n;
            }
        }
        if (!best_len)
            return common_error_set(err, COMMON_EINVAL,
                                    "\"%s\": must be a duration such as 90s or 1h30m (units ms, "
                                    "s, m, h, d), or whole seconds",
                                    s);
        p += best_len;
        if (v > SIM_MAX_TIME_MS / units[best].ms || total + v * units[best].ms > SIM_MAX_TIME_MS)
            return common_error_set(err, COMMON_EINVAL, "\"%s\": too large", s);
        total += v * units[best].ms;
    }
    if (total > SIM_MAX_TIME_MS)
        return common_error_set(err, COMMON_EINVAL, "\"%s\": too large", s);
    *ms = total;
    return COMMON_OK;
}

/* the job-level sim- annotations of doc; *arrival and *run keep their value when absent */
static enum common_rc sim_annotations(const struct sim_loader *l, const struct item *it,
                                      const json_t *doc, const char *id, int64_t *arrival,
                                      int64_t *run, int *any, struct common_error *err)
{
    json_t *ann = json_object_get(json_object_get(doc, "metadata"), "annotations");
    const char *k;
    json_t *v;
    char pos[600], field[400];
    struct common_error e;

    *any = 0;
    if (!json_is_object(ann))
        return COMMON_OK;
    json_object_foreach(ann, k, v)
    {
        int64_t *dst;
        if (strncmp(k, SIM_ANNOTATION_PREFIX, strlen(SIM_ANNOTATION_PREFIX)) != 0)
            continue;
        where_key(l, it, ann, k, pos, sizeof(pos));
        snprintf(field, sizeof(field), "metadata.annotations[%s]", k);
        if (strcmp(k, SIM_ARRIVAL_ANNOTATION) == 0)
            dst = arrival;
        else if (strcmp(k, SIM_RUN_TIME_ANNOTATION) == 0)
            dst = run;
        else {
            key_pos(l, ann, k, pos, sizeof(pos));
            return bad(err, pos, id, field,
                       "Unknown field: simulate reads " SIM_ARRIVAL_ANNOTATION
                       " and " SIM_RUN_TIME_ANNOTATION);
        }
        if (!json_is_string(v))
            return bad(err, pos, id, field, "must be a string (annotation values are strings)");
        if (sim_parse_duration(json_string_value(v), dst, &e) != COMMON_OK)
            return bad(err, pos, id, field, e.msg);
        *any = 1;
    }
    return COMMON_OK;
}

/* Quantities written as YAML numbers (kubectl accepts `nvidia.com/gpu: 8`) become the strings
 * the API server would return. */
static int quantity_strings(json_t *map)
{
    const char *k;
    json_t *v;

    if (!json_is_object(map))
        return 0;
    json_object_foreach(map, k, v)
    {
        char buf[64];
        if (json_is_integer(v))
            snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v))
            snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
        else
            continue;
        if (json_object_set_new(map, k, json_string(buf)))
            return -1;
    }
    return 0;
}

/* ---- the cluster ---- */

static enum common_rc node_add(struct sim_loader *l, struct common_node *n, const char *pos,
                               struct common_error *err)
{
    if (l->n_nodes >= SIM_MAX_NODES) {
        common_node_free(n);
        return common_error_set(err, COMMON_EINVAL,
                                "%scluster: more than %d nodes: simulate models clusters of up to "
                                "%d nodes (Kubernetes is tested to 5,000)",
                                pos, SIM_MAX_NODES, SIM_MAX_NODES);
    }
    if (grow((void **)&l->nodes, &l->cap_nodes, l->n_nodes, sizeof(*l->nodes)) ||
        grow((void **)&l->node_pos, &l->cap_node_pos, l->n_nodes, sizeof(*l->node_pos))) {
        common_node_free(n);
        return oom(err);
    }
    /* the nodes of one SimCluster share their position string */
    if (l->n_nodes && strcmp(l->node_pos[l->n_nodes - 1], pos) == 0)
        l->node_pos[l->n_nodes] = l->node_pos[l->n_nodes - 1];
    else if (!(l->node_pos[l->n_nodes] = common_arena_strdup(l->a, pos))) {
        common_node_free(n);
        return oom(err);
    }
    l->nodes[l->n_nodes++] = n;
    return COMMON_OK;
}

/* the checks every named cluster object starts with: id ("Kind name") and pos (where doc
 * starts) filled (id 400 bytes, pos 600), only the keys in top, a metadata.name */
/* a Kubernetes name checked by rule (common/names.h): "FIELD: Invalid value: \"NAME\": why" */
static enum common_rc name_check(struct common_error *err, const char *pos, const char *id,
                                 const char *field, const char *name,
                                 const char *(*rule)(const char *))
{
    const char *why = rule(name);
    char what[700];

    if (!why)
        return COMMON_OK;
    snprintf(what, sizeof(what), "Invalid value: \"%.200s\": %s", name, why);
    return bad(err, pos, id, field, what);
}

static enum common_rc object_head(const struct sim_loader *l, const struct item *it, json_t *doc,
                                  const char *kind, const char *const *top, char *id, char *pos,
                                  struct common_error *err)
{
    enum common_rc rc;

    ident(doc, kind, id, 400);
    where(l, it, doc, pos, 600);
    if ((rc = known_keys(l, it, doc, "", id, top, err)) != COMMON_OK)
        return rc;
    if (!str_at(doc, "metadata", "name") || !*str_at(doc, "metadata", "name"))
        return bad(err, pos, id, "metadata.name", "Required value");
    return name_check(err, pos, id, "metadata.name", str_at(doc, "metadata", "name"),
                      common_names_dns1123_subdomain);
}

/* a node's allocatable amounts are never negative (the kubelet reports none; the API server's
 * node validation refuses them), and its GPUs fit the int32 counters of the engine:
 * "status.allocatable[NAME]: Invalid value: ..." */
#define SIM_GPUS_PER_NODE_WHY                                                                      \
    "simulate counts at most 2147483647 GPUs per node (a 32-bit count, like a Kubernetes "         \
    "replica count)"
static enum common_rc node_amounts(const struct sim_loader *l, const struct item *it, json_t *doc,
                                   const struct common_node *n, const char *id,
                                   struct common_error *err)
{
    json_t *status = json_object_get(doc, "status"), *v;
    const char *list = json_object_get(status, "allocatable") ? "allocatable" : "capacity";
    char pos[600], what[300];
    const struct common_resources *r = &n->allocatable;
    const char *neg = r->milli_cpu < 0           ? "cpu"
                      : r->memory < 0            ? "memory"
                      : r->ephemeral_storage < 0 ? "ephemeral-storage"
                      : r->pods < 0              ? "pods"
                                                 : NULL;
    char field[300];

    const char *big = NULL;

    for (uint32_t i = 0; !neg && i < r->n_extended; i++) {
        if (r->extended[i].value < 0)
            neg = r->extended[i].name;
        else if (r->extended[i].value > INT32_MAX && strcmp(r->extended[i].name, l->gpu) == 0)
            big = r->extended[i].name;
    }
    if (!neg && !big)
        return COMMON_OK;
    v = json_object_get(json_object_get(status, list), neg ? neg : big);
    where(l, it, v ? v : doc, pos, sizeof(pos));
    snprintf(field, sizeof(field), "status.%s[%s]", list, neg ? neg : big);
    snprintf(what, sizeof(what), "Invalid value: \"%.100s\": %s",
             json_is_string(v) ? json_string_value(v) : "?",
             neg ? "must be greater than or equal to 0" : SIM_GPUS_PER_NODE_WHY);
    return bad(err, pos, id, field, what);
}

static enum common_rc node_from_doc(struct sim_loader *l, const struct item *it, json_t *doc,
                                    struct common_error *err)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    json_t *copy = NULL, *status;
    struct common_node *n = NULL;
    char pos[600], id[400];
    enum common_rc rc;
    struct common_error e;

    if ((rc = object_head(l, it, doc, "Node", top, id, pos, err)) != COMMON_OK)
        return rc;
    status = json_object_get(doc, "status");
    if (!json_object_get(status, "allocatable") && !json_object_get(status, "capacity"))
        return bad(err, pos, id, "status.allocatable",
                   "Required value: the resources pods may use (status.capacity serves too)");
    copy = json_deep_copy(doc);
    if (!copy ||
        quantity_strings(json_object_get(json_object_get(copy, "status"), "allocatable")) ||
        quantity_strings(json_object_get(json_object_get(copy, "status"), "capacity")))
        rc = oom(err);
    if (rc == COMMON_OK && !json_object_get(status, "allocatable")) { /* capacity stands in */
        if (!copy || json_object_set(json_object_get(copy, "status"), "allocatable",
                                     json_object_get(json_object_get(copy, "status"), "capacity")))
            rc = oom(err);
    }
    if (rc == COMMON_OK && (rc = common_node_from_json(copy ? copy : doc, &n, &e)) != COMMON_OK) {
        if (rc == COMMON_ENOMEM)
            rc = oom(err);
        else
            rc = bad(err, pos, id, "", e.msg);
    }
    json_decref(copy);
    if (rc == COMMON_OK && (rc = node_amounts(l, it, doc, n, id, err)) != COMMON_OK)
        common_node_free(n);
    if (rc != COMMON_OK)
        return rc;
    return node_add(l, n, pos, err);
}

/* an integer field of spec: *out (default kept when absent), within [min, max] */
static enum common_rc gen_int(const struct sim_loader *l, const struct item *it, json_t *spec,
                              const char *key, const char *id, int64_t min, int64_t max,
                              int64_t *out, struct common_error *err)
{
    json_t *v = json_object_get(spec, key);
    char pos[600], field[200], what[200];

    if (!v)
        return COMMON_OK;
    where_key(l, it, spec, key, pos, sizeof(pos));
    snprintf(field, sizeof(field), "spec.%s", key);
    if (!json_is_integer(v))
        return bad(err, pos, id, field, "must be an integer");
    if (json_integer_value(v) < min || json_integer_value(v) > max) {
        snprintf(what, sizeof(what), "Invalid value: %lld: must be between %lld and %lld",
                 (long long)json_integer_value(v), (long long)min, (long long)max);
        return bad(err, pos, id, field, what);
    }
    *out = json_integer_value(v);
    return COMMON_OK;
}

/* a quantity field of spec as a string ("96", "1Ti"); integers are taken too */
static enum common_rc gen_qty(const struct sim_loader *l, const struct item *it, json_t *spec,
                              const char *key, const char *id, const char **out, char *buf,
                              size_t n, struct common_error *err)
{
    json_t *v = json_object_get(spec, key);
    char pos[600], field[200];

    if (!v)
        return COMMON_OK;
    where_key(l, it, spec, key, pos, sizeof(pos));
    snprintf(field, sizeof(field), "spec.%s", key);
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return bad(err, pos, id, field, "must not be negative");
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
        *out = buf;
        return COMMON_OK;
    }
    if (!json_is_string(v))
        return bad(err, pos, id, field, "must be a quantity such as \"96\" or \"1Ti\"");
    if (json_string_value(v)[0] == '-')
        return bad(err, pos, id, field, "must not be negative");
    *out = json_string_value(v);
    return COMMON_OK;
}

/* declare topology name (levels copied into the arena); replace: a declared name gets the new
 * levels, else it keeps the old ones. 0, or -1 when out of memory. */
static int topo_add(struct sim_loader *l, const char *name, const char *const *levels, size_t n,
                    int replace)
{
    struct sim_topology *t = NULL;
    const char **lv;

    for (size_t i = 0; i < l->n_topos && !t; i++)
        if (strcmp(l->topos[i].name, name) == 0)
            t = &l->topos[i];
    if (t && !replace)
        return 0;
    if (!t) {
        if (grow((void **)&l->topos, &l->cap_topos, l->n_topos + 1, sizeof(*l->topos)))
            return -1;
        t = &l->topos[l->n_topos];
        if (!(t->name = common_arena_strdup(l->a, name)))
            return -1;
        t->levels = NULL;
        t->n_levels = 0;
        l->n_topos++;
    }
    if (!(lv = common_arena_alloc(l->a, (n + 1) * sizeof(*lv))))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!(lv[i] = common_arena_strdup(l->a, levels[i] ? levels[i] : "")))
            return -1;
    t->levels = lv;
    t->n_levels = n;
    return 0;
}

enum common_rc sim_loader_add_topology(struct sim_loader *l, const char *spec,
                                       struct common_error *err)
{
    struct topo_spec ts;
    struct common_error e;

    if (topo_spec_parse(spec, &ts, &e) != COMMON_OK)
        return common_error_set(err, COMMON_EINVAL, "--topology %s: %s", spec, e.msg);
    if (topo_add(l, ts.name, ts.levels, ts.n_levels, 1))
        return oom(err);
    return COMMON_OK;
}

/* a Kueue (kueue.x-k8s.io) or KAI (kai.scheduler) Topology object: metadata.name and
 * spec.levels[].nodeLabel, checked as the CRDs check them */
static enum common_rc topology_doc(struct sim_loader *l, const struct item *it, json_t *doc,
                                   struct common_error *err)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    const char *name = str_at(doc, "metadata", "name");
    json_t *spec = json_object_get(doc, "spec");
    json_t *levels = json_object_get(spec, "levels"), *lv;
    const char *keys[TOPO_MAX_LEVELS];
    char pos[600], id[400], what[300];
    size_t i, n = 0;
    struct common_error e;
    enum common_rc rc;

    if ((rc = object_head(l, it, doc, "Topology", top, id, pos, err)) != COMMON_OK)
        return rc;
    if (!json_is_array(levels) || json_array_size(levels) == 0 ||
        json_array_size(levels) > TOPO_MAX_LEVELS) {
        if (spec)
            where_key(l, it, spec, "levels", pos, sizeof(pos));
        return bad(err, pos, id, "spec.levels",
                   "must be a list of 1 to 16 levels, each {nodeLabel: <node label key>}");
    }
    json_array_foreach(levels, i, lv)
    {
        const char *k = json_string_value(json_object_get(lv, "nodeLabel"));
        if (!k) {
            char field[64];
            where(l, it, json_is_object(lv) ? lv : levels, pos, sizeof(pos));
            snprintf(field, sizeof(field), "spec.levels[%zu].nodeLabel", i);
            return bad(err, pos, id, field, "Required value: a node label key");
        }
        keys[n++] = k;
    }
    snprintf(what, sizeof(what), "topology \"%s\"", name);
    if (topo_levels_check(what, keys, n, &e) != COMMON_OK) {
        where_key(l, it, spec, "levels", pos, sizeof(pos));
        return bad(err, pos, id, "spec.levels", e.msg);
    }
    if (topo_add(l, name, keys, n, 1))
        return oom(err);
    return COMMON_OK;
}

static enum common_rc sim_cluster_doc(struct sim_loader *l, const struct item *it, json_t *doc,
                                      struct common_error *err)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    static const char *const keys[] = {"blocks",      "racksPerBlock", "nodesPerRack",
                                       "gpusPerNode", "cpusPerNode",   "memoryPerNode",
                                       "podsPerNode", "gpuResource",   "labels",
                                       "taints",      "levels",        NULL};
    json_t *spec = json_object_get(doc, "spec"), *labels, *taints, *levels;
    int64_t blocks = 2, racks = 4, per_rack = 4, gpus = 8, pods = 110;
    const char *cpu = "96", *mem = "1Ti", *gpu = l->gpu;
    const char *prefix = str_at(doc, "metadata", "name");
    char pos[600], id[400], cbuf[32], mbuf[32];
    enum common_rc rc;

    ident(doc, "SimCluster", id, sizeof(id));
    where(l, it, doc, pos, sizeof(pos));
    if ((rc = known_keys(l, it, doc, "", id, top, err)) != COMMON_OK)
        return rc;
    if (spec && !json_is_object(spec))
        return bad(err, pos, id, "spec", "must be an object");
    if (spec && (rc = known_keys(l, it, spec, "spec", id, keys, err)) != COMMON_OK)
        return rc;
    if ((rc = gen_int(l, it, spec, "blocks", id, 1, SIM_MAX_NODES, &blocks, err)) ||
        (rc = gen_int(l, it, spec, "racksPerBlock", id, 1, SIM_MAX_NODES, &racks, err)) ||
        (rc = gen_int(l, it, spec, "nodesPerRack", id, 1, SIM_MAX_NODES, &per_rack, err)) ||
        (rc = gen_int(l, it, spec, "gpusPerNode", id, 0, 1024, &gpus, err)) ||
        (rc = gen_int(l, it, spec, "podsPerNode", id, 1, 100000, &pods, err)) ||
        (rc = gen_qty(l, it, spec, "cpusPerNode", id, &cpu, cbuf, sizeof(cbuf), err)) ||
        (rc = gen_qty(l, it, spec, "memoryPerNode", id, &mem, mbuf, sizeof(mbuf), err)))
        return rc;
    if (json_object_get(spec, "gpuResource")) {
        if (!json_is_string(json_object_get(spec, "gpuResource"))) {
            where_key(l, it, spec, "gpuResource", pos, sizeof(pos));
            return bad(err, pos, id, "spec.gpuResource", "must be a string");
        }
        gpu = json_string_value(json_object_get(spec, "gpuResource"));
        where_key(l, it, spec, "gpuResource", pos, sizeof(pos));
        if ((rc = name_check(err, pos, id, "spec.gpuResource", gpu, common_names_qualified_name)))
            return rc;
        if (l->gpu_from && strcmp(gpu, l->gpu) != 0) {
            char what[900];
            snprintf(what, sizeof(what),
                     "Invalid value: \"%.200s\": the GPU resource is already \"%.200s\" (%.400s)",
                     gpu, l->gpu, l->gpu_from);
            return bad(err, pos, id, "spec.gpuResource", what);
        }
        if (!l->gpu_from) { /* the cluster's own GPU resource counts the jobs' GPUs */
            l->gpu = common_arena_strdup(l->a, gpu);
            l->gpu_from = common_arena_printf(l->a, "spec.gpuResource of %s", id);
            if (!l->gpu || !l->gpu_from)
                return oom(err);
            gpu = l->gpu;
        }
        where(l, it, doc, pos, sizeof(pos));
    }
    if ((double)blocks * (double)racks * (double)per_rack + (double)l->n_nodes > SIM_MAX_NODES) {
        char what[300];
        snprintf(what, sizeof(what),
                 "Invalid value: %lld x %lld x %lld = %.0f nodes: simulate models clusters of up "
                 "to %d nodes (Kubernetes is tested to 5,000)",
                 (long long)blocks, (long long)racks, (long long)per_rack,
                 (double)blocks * (double)racks * (double)per_rack, SIM_MAX_NODES);
        where_key(l, it, spec, "blocks", pos, sizeof(pos));
        return bad(err, pos, id, "spec.blocks x spec.racksPerBlock x spec.nodesPerRack", what);
    }
    labels = json_object_get(spec, "labels");
    taints = json_object_get(spec, "taints");
    levels = json_object_get(spec, "levels");
    if (labels && !json_is_object(labels)) {
        where_key(l, it, spec, "labels", pos, sizeof(pos));
        return bad(err, pos, id, "spec.labels", "must be a map of label keys to values");
    }
    { /* label keys and values as the API server checks a Node's (they were taken unchecked) */
        const char *k, *why;
        json_t *v;
        json_object_foreach(labels, k, v)
        {
            char field[400], what[700];
            snprintf(field, sizeof(field), "spec.labels[%.300s]", k);
            if ((why = common_names_qualified_name(k))) {
                if (key_pos(l, labels, k, pos, sizeof(pos)))
                    where_key(l, it, spec, "labels", pos, sizeof(pos));
                snprintf(what, sizeof(what), "Invalid value: \"%.200s\": %s", k, why);
                return bad(err, pos, id, field, what);
            }
            if (!json_is_string(v) || (why = common_names_label_value(json_string_value(v)))) {
                where_key(l, it, labels, k, pos, sizeof(pos));
                if (!json_is_string(v))
                    return bad(err, pos, id, field, "must be a string (label values are strings)");
                snprintf(what, sizeof(what), "Invalid value: \"%.200s\": %s", json_string_value(v),
                         why);
                return bad(err, pos, id, field, what);
            }
        }
    }
    if (taints && !json_is_array(taints)) {
        where_key(l, it, spec, "taints", pos, sizeof(pos));
        return bad(err, pos, id, "spec.taints", "must be a list of taints");
    }
    if (levels && (!json_is_array(levels) || json_array_size(levels) != 2 ||
                   !json_is_string(json_array_get(levels, 0)) ||
                   !json_is_string(json_array_get(levels, 1)))) {
        where_key(l, it, spec, "levels", pos, sizeof(pos));
        return bad(err, pos, id, "spec.levels",
                   "must be two node label keys, the block's then the rack's");
    }
    if (levels) { /* the default topology they make (block, rack, hostname) must be valid */
        const char *const tl[] = {json_string_value(json_array_get(levels, 0)),
                                  json_string_value(json_array_get(levels, 1)), TOPO_HOSTNAME};
        struct common_error e;
        if (topo_levels_check("spec.levels", tl, 3, &e) != COMMON_OK) {
            where_key(l, it, spec, "levels", pos, sizeof(pos));
            return bad(err, pos, id, "", e.msg);
        }
    }
    if (!l->n_levels) {
        l->levels = common_arena_alloc(l->a, 2 * sizeof(*l->levels));
        if (!l->levels)
            return oom(err);
        l->levels[0] = levels
                           ? common_arena_strdup(l->a, json_string_value(json_array_get(levels, 0)))
                           : LEVEL_BLOCK;
        l->levels[1] = levels
                           ? common_arena_strdup(l->a, json_string_value(json_array_get(levels, 1)))
                           : LEVEL_RACK;
        if (!l->levels[0] || !l->levels[1])
            return oom(err);
        l->n_levels = 2;
        {
            /* the generator's levels as the default topology, unless declared otherwise */
            const char *const tl[] = {l->levels[0], l->levels[1], TOPO_HOSTNAME};
            if (topo_add(l, "default", tl, 3, 0))
                return oom(err);
        }
    }
    if (!prefix || !*prefix)
        prefix = "node";
    for (int64_t b = 0; b < blocks; b++)
        for (int64_t r = 0; r < racks; r++)
            for (int64_t k = 0; k < per_rack; k++) {
                char name[300], bv[64], rv[128], gv[32], pv[32];
                json_t *node = NULL, *lab = NULL;
                struct common_node *n = NULL;
                struct common_error e;
                snprintf(name, sizeof(name), "%s-b%lld-r%lld-n%lld", prefix, (long long)b,
                         (long long)r, (long long)k);
                if (common_names_dns1123_subdomain(name)) {
                    char what[700];
                    snprintf(what, sizeof(what),
                             "Invalid value: \"%.200s\": the node names it makes (\"%.250s\") "
                             "are not valid: %s",
                             prefix, name, common_names_dns1123_subdomain(name));
                    where(l, it, json_object_get(json_object_get(doc, "metadata"), "name"), pos,
                          sizeof(pos));
                    return bad(err, pos, id, "metadata.name", what);
                }
                snprintf(bv, sizeof(bv), "b%lld", (long long)b);
                snprintf(rv, sizeof(rv), "b%lld-r%lld", (long long)b, (long long)r);
                snprintf(gv, sizeof(gv), "%lld", (long long)gpus);
                snprintf(pv, sizeof(pv), "%lld", (long long)pods);
                lab = labels ? json_deep_copy(labels) : json_object();
                if (!lab || json_object_set_new(lab, l->levels[0], json_string(bv)) ||
                    json_object_set_new(lab, l->levels[1], json_string(rv)) ||
                    json_object_set_new(lab, "kubernetes.io/hostname", json_string(name))) {
                    json_decref(lab);
                    return oom(err);
                }
                node = json_pack("{s:s, s:s, s:{s:s, s:o}, s:{s:O*}, s:{s:{s:s, s:s, s:s, s:s}}}",
                                 "apiVersion", "v1", "kind", "Node", "metadata", "name", name,
                                 "labels", lab, "spec", "taints", taints, "status", "allocatable",
                                 "cpu", cpu, "memory", mem, "pods", pv, gpu, gv);
                if (!node)
                    return oom(err);
                if (gpus == 0)
                    json_object_del(json_object_get(json_object_get(node, "status"), "allocatable"),
                                    gpu);
                rc = common_node_from_json(node, &n, &e);
                json_decref(node);
                if (rc == COMMON_ENOMEM)
                    return oom(err);
                if (rc != COMMON_OK) {
                    where(l, it, spec, pos, sizeof(pos));
                    return bad(err, pos, id, "spec", e.msg);
                }
                if ((rc = node_add(l, n, pos, err)) != COMMON_OK)
                    return rc;
            }
    return COMMON_OK;
}

static enum common_rc cluster_object(struct sim_loader *l, const struct item *it, json_t *doc,
                                     const char *what, int in_list, struct common_error *err)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    char pos[600];

    where(l, it, doc, pos, sizeof(pos));
    if (!json_is_object(doc))
        return common_error_set(err, COMMON_EINVAL, "%s%s is not an object (a manifest)", pos,
                                what);
    if (!kind)
        return common_error_set(err, COMMON_EINVAL, "%s%s: kind: Required value", pos, what);
    if ((strcmp(kind, "List") == 0 || strcmp(kind, "NodeList") == 0) && !in_list) {
        json_t *items = json_object_get(doc, "items"), *x;
        size_t i;
        enum common_rc rc;
        if (!json_is_array(items))
            return common_error_set(err, COMMON_EINVAL, "%s%s: items: a %s needs an items list",
                                    pos, what, kind);
        json_array_foreach(items, i, x)
        {
            char w[64];
            snprintf(w, sizeof(w), "%s item %zu", kind, i);
            if ((rc = cluster_object(l, it, x, w, 1, err)) != COMMON_OK)
                return rc;
        }
        return COMMON_OK;
    }
    if (strcmp(kind, "Node") == 0)
        return node_from_doc(l, it, doc, err);
    if (strcmp(kind, "SimCluster") == 0) {
        const char *api = json_string_value(json_object_get(doc, "apiVersion"));
        if (!api || strcmp(api, GEN_API) != 0) {
            where_key(l, it, doc, "apiVersion", pos, sizeof(pos));
            return common_error_set(err, COMMON_EINVAL, "%s%s: apiVersion: SimCluster is " GEN_API,
                                    pos, what);
        }
        return sim_cluster_doc(l, it, doc, err);
    }
    if (strcmp(kind, "Topology") == 0) {
        const char *api = json_string_value(json_object_get(doc, "apiVersion"));
        if (!api ||
            (strncmp(api, "kueue.x-k8s.io/", 15) != 0 && strncmp(api, "kai.scheduler/", 14) != 0)) {
            where_key(l, it, doc, "apiVersion", pos, sizeof(pos));
            return common_error_set(
                err, COMMON_EINVAL,
                "%s%s: apiVersion: a Topology is Kueue's (kueue.x-k8s.io/v1beta2 "
                "or v1beta1) or KAI's (kai.scheduler/v1alpha1)",
                pos, what);
        }
        return topology_doc(l, it, doc, err);
    }
    where_key(l, it, doc, "kind", pos, sizeof(pos));
    if (json_is_string(json_object_get(doc, "apiVersion")) &&
        strncmp(json_string_value(json_object_get(doc, "apiVersion")), "resource.k8s.io/", 16) == 0)
        return common_error_set(err, COMMON_EINVAL, "%s%s: kind: \"%s\": %s", pos, what, kind,
                                SIM_NO_DRA);
    return common_error_set(err, COMMON_EINVAL,
                            "%s%s: kind: \"%s\" is not a cluster object: give Node objects (or a "
                            "NodeList), a SimCluster, or Kueue or KAI Topology objects",
                            pos, what, kind);
}

enum common_rc sim_load_cluster(struct sim_loader *l, const struct common_yaml_docs *f,
                                struct common_error *err)
{
    enum common_rc rc;

    if (add_file(l, f))
        return common_error_set(err, COMMON_EINVAL, "more than %d input files", MAX_FILES);
    if (!l->cluster_file)
        l->cluster_file = f->name;
    if (f->n == 0)
        return common_error_set(err, COMMON_EINVAL, "%s: no documents: the cluster has no nodes",
                                f->name);
    for (size_t i = 0; i < f->n; i++) {
        struct item it = {f->docs[i], f, i};
        char what[64];
        snprintf(what, sizeof(what), "document %zu", i + 1);
        if ((rc = cluster_object(l, &it, f->docs[i], what, 0, err)) != COMMON_OK)
            return rc;
    }
    return COMMON_OK;
}

/* ---- jobs ---- */

static enum common_rc job_object(struct sim_loader *l, const struct item *it, json_t *doc,
                                 const char *what, int in_list, struct common_error *err)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *api = json_string_value(json_object_get(doc, "apiVersion"));
    char pos[600];
    struct item x = {doc, it->f, it->di};

    where(l, it, doc, pos, sizeof(pos));
    if (!json_is_object(doc))
        return common_error_set(err, COMMON_EINVAL, "%s%s is not an object (a manifest)", pos,
                                what);
    if (!kind || !api)
        return common_error_set(err, COMMON_EINVAL,
                                "%s%s: %s: Required value: every manifest needs apiVersion and "
                                "kind",
                                pos, what, !kind ? "kind" : "apiVersion");
    if (strcmp(kind, "List") == 0 && !in_list) {
        json_t *items = json_object_get(doc, "items"), *y;
        size_t i;
        enum common_rc rc;
        if (!json_is_array(items))
            return common_error_set(err, COMMON_EINVAL, "%s%s: items: a List needs an items list",
                                    pos, what);
        json_array_foreach(items, i, y)
        {
            char w[64];
            snprintf(w, sizeof(w), "List item %zu", i);
            if ((rc = job_object(l, it, y, w, 1, err)) != COMMON_OK)
                return rc;
        }
        return COMMON_OK;
    }
    if (strcmp(kind, "TrainJob") == 0 || strcmp(kind, "TrainingRuntime") == 0 ||
        strcmp(kind, "ClusterTrainingRuntime") == 0) {
        if (strcmp(api, "trainer.kubeflow.org/v1alpha1") != 0) {
            where_key(l, it, doc, "apiVersion", pos, sizeof(pos));
            return common_error_set(err, COMMON_EINVAL,
                                    "%s%s: apiVersion \"%s\" is not served for %s; use "
                                    "trainer.kubeflow.org/v1alpha1",
                                    pos, what, api, kind);
        }
        return items_add(strcmp(kind, "TrainJob") == 0 ? &l->trainjobs : &l->runtimes, doc, x.f,
                         x.di)
                   ? oom(err)
                   : COMMON_OK;
    }
    if (strcmp(kind, "PodGroup") == 0) {
        if (strcmp(api, "scheduling.x-k8s.io/v1alpha1") != 0) {
            where_key(l, it, doc, "apiVersion", pos, sizeof(pos));
            return common_error_set(err, COMMON_EINVAL,
                                    "%s%s: apiVersion \"%s\": simulate plays the coscheduling "
                                    "PodGroup (scheduling.x-k8s.io/v1alpha1) that trainsched's "
                                    "extender enforces",
                                    pos, what, api);
        }
        return items_add(&l->podgroups, doc, x.f, x.di) ? oom(err) : COMMON_OK;
    }
    if (strcmp(kind, "Pod") == 0 && strcmp(api, "v1") == 0)
        return items_add(&l->pods, doc, x.f, x.di) ? oom(err) : COMMON_OK;
    where_key(l, it, doc, "kind", pos, sizeof(pos));
    if (strncmp(api, "resource.k8s.io/", 16) == 0)
        return common_error_set(err, COMMON_EINVAL, "%s%s: kind: \"%s\": %s", pos, what, kind,
                                SIM_NO_DRA);
    return common_error_set(err, COMMON_EINVAL,
                            "%s%s: kind: \"%s\" is not something simulate reads: give TrainJobs "
                            "(with their runtimes), PodGroups (scheduling.x-k8s.io/v1alpha1) "
                            "with their Pods, or Pods",
                            pos, what, kind);
}

enum common_rc sim_load_jobs(struct sim_loader *l, const struct common_yaml_docs *f,
                             struct common_error *err)
{
    enum common_rc rc;

    if (add_file(l, f))
        return common_error_set(err, COMMON_EINVAL, "more than %d input files", MAX_FILES);
    if (f->n == 0)
        return common_error_set(err, COMMON_EINVAL, "%s: no documents: the file is empty", f->name);
    for (size_t i = 0; i < f->n; i++) {
        struct item it = {f->docs[i], f, i};
        char what[64];
        snprintf(what, sizeof(what), "document %zu", i + 1);
        if ((rc = job_object(l, &it, f->docs[i], what, 0, err)) != COMMON_OK)
            return rc;
    }
    return COMMON_OK;
}

/* ---- building jobs ---- */

static struct sim_job *job_new(struct sim_loader *l, const struct item *it)
{
    struct sim_job *j;

    if (grow((void **)&l->jobs, &l->cap_jobs, l->n_jobs, sizeof(*l->jobs)) ||
        grow((void **)&l->job_src, &l->cap_job_src, l->n_jobs, sizeof(*l->job_src)))
        return NULL;
    l->job_src[l->n_jobs] = it;
    j = &l->jobs[l->n_jobs++];
    memset(j, 0, sizeof(*j));
    j->run_ms = SIM_DEFAULT_RUN_MS;
    return j;
}

/* The API server's pod defaulting that placement depends on: a container resource with a
 * limit and no request gets the limit as its request (Kubernetes core/v1 defaults,
 * SetDefaults_Pod). */
static int default_requests(json_t *pod)
{
    static const char *const lists[] = {"containers", "initContainers"};
    json_t *spec = json_object_get(pod, "spec");

    for (size_t li = 0; li < 2; li++) {
        json_t *cs = json_object_get(spec, lists[li]), *c;
        size_t i;
        json_array_foreach(cs, i, c)
        {
            json_t *res = json_object_get(c, "resources");
            json_t *lim = json_object_get(res, "limits"), *req, *v;
            const char *k;
            if (quantity_strings(lim) || quantity_strings(json_object_get(res, "requests")))
                return -1;
            if (!json_is_object(lim) || !json_object_size(lim))
                continue;
            req = json_object_get(res, "requests");
            if (!req) {
                if (json_object_set_new(res, "requests", req = json_object()))
                    return -1;
            }
            if (!json_is_object(req))
                continue; /* the decoder names the field */
            json_object_foreach(lim, k, v) if (!json_object_get(req, k) &&
                                               json_object_set(req, k, v)) return -1;
        }
    }
    return 0;
}

/* a Pod of the input with spec.resourceClaims: refused at the field (SIM_NO_DRA) */
static enum common_rc no_claims(const struct sim_loader *l, const struct item *it,
                                const json_t *pod, const char *id, struct common_error *err)
{
    const json_t *c = json_object_get(json_object_get(pod, "spec"), "resourceClaims");
    char pos[600];

    if (!json_array_size(c))
        return COMMON_OK;
    where(l, it, c, pos, sizeof(pos));
    return bad(err, pos, id, "spec.resourceClaims", SIM_NO_DRA);
}

/* the top-level and metadata keys of a Pod or PodGroup of the input, and (spec_keys) the
 * PodGroup's spec: an unknown one is refused at the key, as kubectl's strict field validation
 * refuses it (a misspelt spec: or minMember: was dropped in silence: a pod of no containers, a
 * PodGroup of no gang). A Pod's spec is not checked key by key (its schema is Kubernetes'). */
static enum common_rc object_keys(const struct sim_loader *l, const struct item *it, json_t *doc,
                                  const char *id, const char *const *spec_keys,
                                  struct common_error *err)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    static const char *const meta[] = {"name",
                                       "generateName",
                                       "namespace",
                                       "selfLink",
                                       "uid",
                                       "resourceVersion",
                                       "generation",
                                       "creationTimestamp",
                                       "deletionTimestamp",
                                       "deletionGracePeriodSeconds",
                                       "labels",
                                       "annotations",
                                       "ownerReferences",
                                       "finalizers",
                                       "managedFields",
                                       NULL};
    json_t *spec = json_object_get(doc, "spec"), *md = json_object_get(doc, "metadata");
    const char *name = str_at(doc, "metadata", "name"), *ns = str_at(doc, "metadata", "namespace");
    const char *node = json_string_value(json_object_get(spec, "nodeName"));
    char pos[600];
    enum common_rc rc;

    /* names and spec.nodeName refused at the value (they were refused at the document's first
     * line) */
    if (name && *name && common_names_dns1123_subdomain(name)) {
        where_key(l, it, md, "name", pos, sizeof(pos));
        return name_check(err, pos, id, "metadata.name", name, common_names_dns1123_subdomain);
    }
    if (ns && common_names_dns1123_label(ns)) {
        where_key(l, it, md, "namespace", pos, sizeof(pos));
        return name_check(err, pos, id, "metadata.namespace", ns, common_names_dns1123_label);
    }
    if (!spec_keys && node && *node) {
        where_key(l, it, spec, "nodeName", pos, sizeof(pos));
        return bad(err, pos, id, "spec.nodeName",
                   "Forbidden: simulate places pods itself; leave spec.nodeName unset");
    }
    if ((rc = known_keys(l, it, doc, "", id, top, err)) != COMMON_OK ||
        (rc = known_keys(l, it, json_object_get(doc, "metadata"), "metadata", id, meta, err)) !=
            COMMON_OK)
        return rc;
    if (spec_keys && json_is_object(spec))
        return known_keys(l, it, spec, "spec", id, spec_keys, err);
    return COMMON_OK;
}

/* a Pod of the input whose container resources the API server refuses (pod validation,
 * ValidateResourceRequirements, as trainjob/resources.c applies it to TrainJobs): a negative
 * quantity, or a fraction of an extended resource (nvidia.com/gpu: 0.5). Both used to be
 * simulated: -1 GPU as a pod that gives a GPU back, 0.5 as a whole GPU. Refused at the value;
 * a malformed quantity is left to the decoder, which names it. */
static enum common_rc pod_quantities(const struct sim_loader *l, const struct item *it,
                                     const json_t *pod, const char *id, struct common_error *err)
{
    static const char *const lists[] = {"containers", "initContainers"};
    static const char *const maps[] = {"limits", "requests"};
    const json_t *spec = json_object_get(pod, "spec");

    for (size_t li = 0; li < 2; li++) {
        const json_t *cs = json_object_get(spec, lists[li]), *c;
        size_t i;
        json_array_foreach((json_t *)cs, i, c)
        {
            for (size_t m = 0; m < 2; m++) {
                json_t *map = json_object_get(json_object_get(c, "resources"), maps[m]), *v;
                const char *k;
                json_object_foreach(map, k, v)
                {
                    struct common_quantity q;
                    struct common_error qe;
                    char text[64], pos[600], field[400], what[600];
                    const char *sl = strchr(k, '/'), *t = text, *why;
                    size_t plen = sl ? (size_t)(sl - k) : 0;
                    int native = !sl || (plen == 13 && strncmp(k, "kubernetes.io", 13) == 0) ||
                                 (plen > 14 && strncmp(sl - 14, ".kubernetes.io", 14) == 0);

                    if (!sl && strcmp(k, "cpu") && strcmp(k, "memory") &&
                        strcmp(k, "ephemeral-storage") && strncmp(k, "hugepages-", 10)) {
                        /* "cpus", "gpu": the API server refuses the name (it was counted as
                         * an unknown resource no node has, or ignored) */
                        if (key_pos(l, map, k, pos, sizeof(pos)))
                            where(l, it, map, pos, sizeof(pos));
                        snprintf(field, sizeof(field), "spec.%s[%zu].resources.%s[%.200s]",
                                 lists[li], i, maps[m], k);
                        snprintf(what, sizeof(what),
                                 "Invalid value: \"%.200s\": must be a standard resource for "
                                 "containers (cpu, memory, ephemeral-storage, hugepages-<size>) "
                                 "or a fully qualified extended resource name such as "
                                 "nvidia.com/gpu",
                                 k);
                        return bad(err, pos, id, field, what);
                    }
                    if (json_is_string(v))
                        t = json_string_value(v);
                    else if (json_is_integer(v))
                        snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v));
                    else if (json_is_real(v))
                        snprintf(text, sizeof(text), "%.17g", json_real_value(v));
                    else
                        continue;
                    if (common_quantity_parse(t, &q, &qe) != COMMON_OK)
                        continue;
                    if (q.nano < 0)
                        why = "must be greater than or equal to 0";
                    else if (!native && q.nano % 1000000000 != 0)
                        why = "must be an integer (an extended resource is counted in whole "
                              "devices)";
                    else
                        continue;
                    where(l, it, v, pos, sizeof(pos));
                    snprintf(field, sizeof(field), "spec.%s[%zu].resources.%s[%.200s]", lists[li],
                             i, maps[m], k);
                    snprintf(what, sizeof(what), "Invalid value: \"%.60s\": %s", t, why);
                    return bad(err, pos, id, field, what);
                }
            }
        }
    }
    return COMMON_OK;
}

/* the value at the field path a decoder's message starts with ("spec.containers[0].resources.
 * requests[cpu]: ..."), in doc, or NULL (no such path: "effective pod requests[...]") */
static const json_t *at_path(const json_t *doc, const char *msg)
{
    const char *p = msg, *end = strstr(msg, ": ");
    const json_t *v = doc;

    if (!end)
        return NULL;
    while (p < end && v) {
        char key[300];
        size_t n;
        if (*p == '[') {
            const char *c = memchr(p, ']', (size_t)(end - p));
            if (!c)
                return NULL;
            n = (size_t)(c - p - 1);
            if (n >= sizeof(key))
                return NULL;
            memcpy(key, p + 1, n);
            key[n] = '\0';
            if (json_is_array(v)) {
                char *e;
                long i = strtol(key, &e, 10);
                v = *key && !*e && i >= 0 ? json_array_get(v, (size_t)i) : NULL;
            } else
                v = json_object_get(v, key);
            p = c + 1;
        } else {
            if (*p == '.')
                p++;
            n = strcspn(p, ".[");
            if (p + n > end)
                n = (size_t)(end - p);
            if (!n || n >= sizeof(key) || memchr(p, ' ', n))
                return NULL;
            memcpy(key, p, n);
            key[n] = '\0';
            v = json_object_get(v, key);
            p += n;
        }
    }
    return p == end ? v : NULL;
}

/* decode pod JSON (owned copy, modified: uid, namespace, the synthetic group label) and add it
 * to job j; orig: the Pod as written (for positions), or NULL */
static enum common_rc job_pod(struct sim_loader *l, struct sim_job *j, json_t *pod,
                              const json_t *orig, const char *ns, const char *group,
                              const char *pos, struct common_error *err)
{
    json_t *meta = json_object_get(pod, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    struct common_pod *cp = NULL, **v;
    struct common_error e;
    char id[400];
    enum common_rc rc;

    snprintf(id, sizeof(id), "Pod %s/%s", ns, name ? name : "?");
    if (!json_is_object(meta) || !name || !*name)
        return bad(err, pos, id, "metadata.name", "Required value");
    if ((rc = name_check(err, pos, id, "metadata.name", name, common_names_dns1123_subdomain)) ||
        (rc = name_check(err, pos, id, "metadata.namespace", ns, common_names_dns1123_label)))
        return rc;
    if (json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")) &&
        *json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")))
        return bad(err, pos, id, "spec.nodeName",
                   "Forbidden: simulate places pods itself; leave spec.nodeName unset");
    if (json_array_size(json_object_get(json_object_get(pod, "spec"), "resourceClaims")))
        return bad(err, pos, id, "spec.resourceClaims", SIM_NO_DRA);
    if (l->n_all_pods >= SIM_MAX_PODS)
        return common_error_set(err, COMMON_EINVAL, "%smore than %d pods", pos, SIM_MAX_PODS);
    if (!json_object_get(meta, "namespace"))
        json_object_set_new(meta, "namespace", json_string(ns));
    if (!json_object_get(meta, "uid")) {
        char *uid = common_arena_printf(l->a, "sim-%s-%s", ns, name);
        if (!uid || json_object_set_new(meta, "uid", json_string(uid)))
            return oom(err);
    }
    for (int m = 0; m < 2; m++) {
        /* a null map is an empty one (as the API server stores it); anything else but an
         * object is refused */
        const char *key = m ? "annotations" : "labels";
        json_t *map = json_object_get(meta, key);
        if (json_is_null(map))
            json_object_del(meta, key);
        else if (map && !json_is_object(map))
            return bad(err, pos, id, m ? "metadata.annotations" : "metadata.labels",
                       json_is_array(map)    ? "Invalid value: must be of type object, not array"
                       : json_is_string(map) ? "Invalid value: must be of type object, not string"
                                             : "Invalid value: must be of type object");
    }
    if (group) {
        json_t *labels = json_object_get(meta, "labels");
        if (!labels && json_object_set_new(meta, "labels", labels = json_object()))
            return oom(err);
        if (json_object_set_new(labels, GANG_POD_GROUP_LABEL, json_string(group)))
            return oom(err);
    }
    json_object_del(json_object_get(pod, "status"), "phase");
    if (default_requests(pod))
        return oom(err);
    rc = common_pod_from_json(pod, &cp, &e);
    if (rc == COMMON_ENOMEM)
        return oom(err);
    if (rc != COMMON_OK) {
        /* at the field the decoder names, when the Pod was written in a file */
        const json_t *at = orig ? at_path(orig, e.msg) : NULL;
        char fpos[600] = "";
        if (at)
            where(l, NULL, at, fpos, sizeof(fpos));
        return bad(err, *fpos ? fpos : pos, id, "", e.msg);
    }
    if (grow((void **)&l->all_pods, &l->cap_all_pods, l->n_all_pods, sizeof(*l->all_pods))) {
        common_pod_free(cp);
        return oom(err);
    }
    l->all_pods[l->n_all_pods++] = cp;
    /* geometric growth in the arena: a new array when n_pods is 0 or a power of two >= 16,
     * so a job of n pods copies fewer than 2n pointers in all (one array per pod made the
     * loader quadratic in memory and time) */
    if (j->n_pods == 0 || (j->n_pods >= 16 && (j->n_pods & (j->n_pods - 1)) == 0)) {
        size_t cap = j->n_pods ? j->n_pods * 2 : 16;
        v = common_arena_alloc(l->a, cap * sizeof(*v));
        if (!v)
            return oom(err);
        if (j->n_pods)
            memcpy(v, j->pods, j->n_pods * sizeof(*v));
        j->pods = v;
    }
    j->pods[j->n_pods++] = cp;
    return COMMON_OK;
}

static void job_minmember0(struct sim_job *j, const char *ns, const char *group)
{
    memset(&j->pg, 0, sizeof(j->pg));
    j->pg.namespace = ns;
    j->pg.name = group;
    j->pg.phased_jobs = "";
    j->gang = 0;
}

/* keygen for MPI runtimes: the key material does not matter to placement, so no randomness */
static enum common_rc fixed_keygen(struct common_arena *a, char **priv, char **pub,
                                   struct common_error *err)
{
    *priv = common_arena_strdup(a, "-----BEGIN EC PRIVATE KEY-----\nsimulated\n"
                                   "-----END EC PRIVATE KEY-----\n");
    *pub = common_arena_strdup(a, "ecdsa-sha2-nistp521 c2ltdWxhdGVk simulated");
    return *priv && *pub ? COMMON_OK : common_error_set(err, COMMON_ENOMEM, "out of memory");
}

static const json_t *find_runtime(struct sim_loader *l, const struct trainjob_ref *ref,
                                  struct common_error *err, int *failed)
{
    const struct trainjob_builtin *b;
    struct common_yaml_docs *d;

    *failed = 0;
    for (size_t i = 0; i < l->runtimes.n; i++)
        if (trainjob_lookup_matches(l->runtimes.v[i].doc, ref, "default"))
            return l->runtimes.v[i].doc;
    if (strcmp(ref->kind, "ClusterTrainingRuntime") != 0 || !(b = trainjob_builtin_find(ref->name)))
        return NULL;
    for (size_t i = 0; i < l->n_builtin; i++)
        if (strcmp(str_at(l->builtin[i].docs[0], "metadata", "name"), ref->name) == 0)
            return l->builtin[i].docs[0];
    if (l->n_builtin >= sizeof(l->builtin) / sizeof(l->builtin[0])) {
        *failed = 1;
        common_error_set(err, COMMON_ENOMEM, "too many built-in runtimes");
        return NULL;
    }
    d = &l->builtin[l->n_builtin];
    if (common_yaml_load(b->yaml, b->len, ref->name, NULL, d, err) != COMMON_OK || d->n != 1) {
        *failed = 1;
        common_yaml_docs_free(d);
        return NULL;
    }
    l->n_builtin++;
    return d->docs[0];
}

/* spec.resourceClaims of a replicated job's pod template (template.spec.template.spec) */
static const json_t *template_claims(const json_t *rj)
{
    const json_t *jspec = json_object_get(json_object_get(rj, "template"), "spec");
    return json_object_get(json_object_get(json_object_get(jspec, "template"), "spec"),
                           "resourceClaims");
}

/* the runtime's spec.resourceClaims of replicated job rname's pod template, for its position
 * (NULL when the runtime does not set them: they came from the TrainJob) */
static const json_t *runtime_claims(const json_t *rt, const char *rname)
{
    json_t *rjobs = json_object_get(
        json_object_get(json_object_get(json_object_get(rt, "spec"), "template"), "spec"),
        "replicatedJobs");
    json_t *rj;
    size_t i;

    json_array_foreach(rjobs, i, rj)
    {
        const char *n = json_string_value(json_object_get(rj, "name"));
        if (n && rname && strcmp(n, rname) == 0 && json_array_size(template_claims(rj)))
            return template_claims(rj);
    }
    return NULL;
}

/* the pods a JobSet makes: replicas Jobs per replicated job, min(parallelism, completions)
 * pods each, named and labelled as the JobSet and Job controllers do */
static enum common_rc jobset_pods(struct sim_loader *l, struct sim_job *j, const json_t *js,
                                  const json_t *rt, const char *ns, const char *group,
                                  const char *pos, struct common_error *err)
{
    const char *jsname = str_at(js, "metadata", "name");
    json_t *rjobs = json_object_get(json_object_get(js, "spec"), "replicatedJobs"), *rj;
    size_t i;
    enum common_rc rc;
    double total = 0;

    /* count first: a TrainJob asking for millions of nodes is refused before any pod is made */
    json_array_foreach(rjobs, i, rj)
    {
        json_t *jspec = json_object_get(json_object_get(rj, "template"), "spec");
        json_t *rep = json_object_get(rj, "replicas"), *par = json_object_get(jspec, "parallelism");
        json_t *comp = json_object_get(jspec, "completions");
        double p = par ? (double)json_integer_value(par) : 1;
        if (comp && (double)json_integer_value(comp) < p)
            p = (double)json_integer_value(comp);
        total += (rep ? (double)json_integer_value(rep) : 1) * (p > 0 ? p : 0);
    }
    char id[400];
    snprintf(id, sizeof(id), "TrainJob %s", j->name);
    if (total + (double)l->n_all_pods > SIM_MAX_PODS) {
        char what[200];
        snprintf(what, sizeof(what),
                 "Invalid: its JobSet makes %.0f pods; simulate takes at most %d pods in all",
                 total, SIM_MAX_PODS);
        return bad(err, pos, id, "spec.trainer.numNodes", what);
    }
    if (total < 1)
        return bad(err, pos, id, "", "Invalid: its JobSet makes no pods");
    json_array_foreach(rjobs, i, rj)
    {
        const char *rname = json_string_value(json_object_get(rj, "name"));
        const json_t *at = runtime_claims(rt, rname);
        char field[400], rpos[600];
        if (!json_array_size(template_claims(rj)))
            continue;
        /* where the claims are written: the runtime's pod template, else the TrainJob's */
        if (at)
            where(l, NULL, at, rpos, sizeof(rpos));
        snprintf(field, sizeof(field), "replicatedJobs[%s]: pod template spec.resourceClaims%s%s",
                 rname ? rname : "?", at ? " (from runtime " : "",
                 at ? str_at(rt, "metadata", "name") : "");
        if (at)
            snprintf(field + strlen(field), sizeof(field) - strlen(field), ")");
        return bad(err, at && rpos[0] ? rpos : pos, id, field, SIM_NO_DRA);
    }
    json_array_foreach(rjobs, i, rj)
    {
        const char *rname = json_string_value(json_object_get(rj, "name"));
        json_t *jspec = json_object_get(json_object_get(rj, "template"), "spec");
        json_t *ptpl = json_object_get(jspec, "template");
        json_int_t replicas = json_object_get(rj, "replicas")
                                  ? json_integer_value(json_object_get(rj, "replicas"))
                                  : 1;
        json_int_t par = json_object_get(jspec, "parallelism")
                             ? json_integer_value(json_object_get(jspec, "parallelism"))
                             : 1;
        json_t *comp = json_object_get(jspec, "completions");
        if (comp && json_integer_value(comp) < par)
            par = json_integer_value(comp);
        for (json_int_t r = 0; r < replicas; r++)
            for (json_int_t k = 0; k < par; k++) {
                json_t *pod = json_object(), *tmeta = json_object_get(ptpl, "metadata"), *meta;
                json_t *labels = NULL;
                char name[400], idx[32];
                snprintf(name, sizeof(name), "%s-%s-%lld-%lld", jsname, rname ? rname : "job",
                         (long long)r, (long long)k);
                snprintf(idx, sizeof(idx), "%lld", (long long)r);
                /* render's schema check let only objects and null (unset) through: a null
                 * metadata or labels map is an empty one, as the API server stores it */
                meta = json_is_object(tmeta) ? json_deep_copy(tmeta) : json_object();
                if (pod && !json_object_set_new(pod, "metadata", meta)) { /* pod owns meta */
                    labels = json_object_get(meta, "labels");
                    if (!json_is_object(labels) &&
                        json_object_set_new(meta, "labels", labels = json_object()))
                        labels = NULL;
                }
                if (!pod || !labels || json_object_set_new(meta, "name", json_string(name)) ||
                    json_object_set_new(meta, "namespace", json_string(ns)) ||
                    json_object_set_new(labels, "jobset.sigs.k8s.io/jobset-name",
                                        json_string(jsname)) ||
                    json_object_set_new(labels, GANG_REPLICATED_JOB_LABEL,
                                        json_string(rname ? rname : "")) ||
                    json_object_set_new(labels, "jobset.sigs.k8s.io/job-index", json_string(idx)) ||
                    json_object_set_new(pod, "apiVersion", json_string("v1")) ||
                    json_object_set_new(pod, "kind", json_string("Pod")) ||
                    json_object_set_new(pod, "spec",
                                        json_object_get(ptpl, "spec")
                                            ? json_deep_copy(json_object_get(ptpl, "spec"))
                                            : json_object())) {
                    json_decref(pod);
                    return oom(err);
                }
                rc = job_pod(l, j, pod, NULL, ns, group, pos, err);
                json_decref(pod);
                if (rc != COMMON_OK)
                    return rc;
            }
    }
    return COMMON_OK;
}

/* native (kube-scheduler's own gang) and slurm (one Slurm job per gang) place a TrainJob's
 * pods all or nothing: simulated as the extender's gang of the same members */
static int sim_gang_as_coscheduling(const struct backend *b)
{
    return b == &backend_native || b == &backend_slurm;
}

/* the remark a job gets for a backend whose own scheduler simulate does not run; NULL for
 * coscheduling (the extender's gang, simulated) and none (no gang, as simulated) */
static const char *backend_note(struct sim_loader *l, const struct backend *b)
{
    if (b == &backend_volcano)
        return "volcano backend: simulated without gang scheduling (Volcano's scheduler is not "
               "modelled)";
    if (b == &backend_native)
        return "native backend: simulated as an all-or-nothing gang by the extender's gang core "
               "(kube-scheduler's own gang scheduling is not modelled)";
    if (b == &backend_slurm)
        return "slurm backend: simulated as an all-or-nothing gang by the extender's gang core "
               "(Slurm's scheduler is not modelled)";
    if (b == &backend_coscheduling || b == &backend_none)
        return NULL;
    if (b == &backend_kueue)
        return "kueue backend: simulated without gang scheduling or queueing (Kueue's admission "
               "is not modelled)";
    /* any other (kai, ...): its own scheduler is not modelled */
    return common_arena_printf(l->a,
                               "%s backend: simulated without gang scheduling (its scheduler is "
                               "not modelled)",
                               b->name);
}

/* every field error as render prints it (cmd/render.c print_errors), one a line: "file:line:col:
 * Kind ns/name: path: Type: detail" (cmd/simulate.c puts "error: " before each line) */
static enum common_rc field_errors(const struct sim_loader *l, const struct item *it,
                                   const json_t *tj, const char *ns,
                                   const struct trainjob_errors *errs, struct common_error *err)
{
    char msg[COMMON_ERROR_MSG_MAX];
    size_t len = 0;

    msg[0] = '\0';
    for (size_t i = 0; i < errs->n && len < sizeof(msg); i++) {
        const struct trainjob_field_error *fe = &errs->items[i];
        const char *what = fe->doc == tj ? "TrainJob" : str_at(fe->doc, "kind", NULL);
        const char *oname = str_at(fe->doc, "metadata", "name");
        const char *ons = str_at(fe->doc, "metadata", "namespace");
        const char *text = trainjob_errors_format(errs, i);
        char pos[600];
        int w;

        if (!text)
            return oom(err);
        field_pos(l, it, fe, pos, sizeof(pos));
        if (fe->doc == tj && !ons)
            ons = ns;
        w = snprintf(msg + len, sizeof(msg) - len, "%s%s%s %s%s%s: %s", i ? "\n" : "", pos,
                     what ? what : "?", ons ? ons : "", ons ? "/" : "", oname ? oname : "?", text);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return common_error_set(err, COMMON_EINVAL, "%s", msg);
}

static enum common_rc trainjob_job(struct sim_loader *l, const struct item *it,
                                   struct common_error *err)
{
    const json_t *tj = it->doc, *rt, *obj, *js = NULL, *pgobj = NULL;
    const char *name = str_at(tj, "metadata", "name");
    const char *ns = str_at(tj, "metadata", "namespace");
    struct common_arena *a = common_arena_create(0);
    /* no gang marks: the simulator's nodes carry no trainsched.io/gang and its pods need none */
    struct trainjob_options opts = {
        .default_namespace = "default", .keygen = fixed_keygen, .no_gang_marks = 1};
    struct trainjob_output out;
    struct trainjob_ref ref;
    const struct backend *backend = NULL;
    struct common_error e;
    struct sim_job *j;
    char pos[600], id[400];
    enum common_rc rc = COMMON_OK;
    int any, failed;
    size_t i;

    memset(&out, 0, sizeof(out));
    if (!ns)
        ns = "default";
    snprintf(id, sizeof(id), "TrainJob %s/%s", ns, name ? name : "?");
    where(l, it, tj, pos, sizeof(pos));
    if (!a)
        return oom(err);
    /* render's checks and messages (trainjob/lookup.h), before the runtime is looked up */
    {
        struct trainjob_errors errs;
        trainjob_errors_init(&errs, a);
        rc = trainjob_lookup_check(tj, ns, &errs, &ref, &e);
        if (rc == COMMON_ENOMEM || errs.oom) {
            rc = oom(err);
            goto out;
        }
        if (rc != COMMON_OK) {
            rc = errs.n ? field_errors(l, it, tj, ns, &errs, err) : bad(err, pos, id, "", e.msg);
            goto out;
        }
    }
    rt = find_runtime(l, &ref, &e, &failed);
    if (!rt) {
        char msg[COMMON_ERROR_MSG_MAX];
        if (failed) {
            rc = common_error_set(err, COMMON_EINVAL, "built-in runtime %s: %s", ref.name, e.msg);
            goto out;
        }
        where(l, it,
              json_object_get(json_object_get(json_object_get(tj, "spec"), "runtimeRef"), "name"),
              pos, sizeof(pos));
        rc = bad(err, pos, id, "",
                 trainjob_lookup_not_found(&ref, trainjob_runtime_ref_json(l->a, tj), "simulate",
                                           "give it in a -f file", msg, sizeof(msg)));
        goto out;
    }
    /* the backend as render and the reconciler choose it: the runtime's annotation, then its
     * podGroupPolicy; a conflict between the two is refused as render refuses it */
    if (backend_select(rt, NULL, NULL, &backend, NULL, &e) != COMMON_OK) {
        where(l, NULL,
              json_object_get(json_object_get(json_object_get(rt, "metadata"), "annotations"),
                              BACKEND_ANNOTATION),
              pos, sizeof(pos));
        rc = common_error_set(err, COMMON_EINVAL, "%s%s: runtime %s: %s", pos, id, ref.name, e.msg);
        goto out;
    }
    rc = backend_render(backend, a, tj, rt, &opts, NULL, &out, NULL, &e);
    if (rc == COMMON_OK && !out.skipped && sim_gang_as_coscheduling(backend)) {
        /* native and slurm hold a TrainJob's pods all or nothing, as the extender's gang
         * does: the same build with the coscheduling PodGroup gives the gang core that gang */
        json_decref(out.objects);
        memset(&out, 0, sizeof(out));
        rc = backend_render(&backend_coscheduling, a, tj, rt, &opts, NULL, &out, NULL, &e);
    }
    if (rc == COMMON_EINVAL && out.errors.n) {
        rc = field_errors(l, it, tj, ns, &out.errors, err);
        goto out;
    }
    if (rc != COMMON_OK) {
        rc = rc == COMMON_ENOMEM ? oom(err) : bad(err, pos, id, "", e.msg);
        goto out;
    }
    if (out.skipped) {
        rc = bad(err, pos, id, "spec.managedBy", out.skipped);
        goto out;
    }
    json_array_foreach(out.objects, i, obj)
    {
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        if (strcmp(kind, "JobSet") == 0)
            js = obj;
        if (strcmp(kind, "PodGroup") == 0)
            pgobj = obj;
    }
    if (!js) {
        rc = bad(err, pos, id, "", "the runtime builds no JobSet");
        goto out;
    }
    if (!(j = job_new(l, it))) {
        rc = oom(err);
        goto out;
    }
    j->kind = "TrainJob";
    j->name = common_arena_printf(l->a, "%s/%s", ns, name);
    if (!j->name || !(ns = common_arena_strdup(l->a, ns))) {
        rc = oom(err);
        goto out;
    }
    if ((rc = sim_annotations(l, it, tj, id, &j->arrival_ms, &j->run_ms, &any, err)))
        goto out;
    if (pgobj && strcmp(str_at(pgobj, "apiVersion", NULL), "scheduling.x-k8s.io/v1alpha1") == 0) {
        json_t *keep = json_deep_copy(pgobj);
        if (!keep || common_arena_on_destroy(l->a, (void (*)(void *))json_decref, keep)) {
            rc = oom(err);
            goto out;
        }
        if (gang_podgroup_from_json(keep, &j->pg, &e) != COMMON_OK) {
            rc = bad(err, pos, id, "PodGroup", e.msg);
            goto out;
        }
        j->gang = j->pg.min_member > 0;
        j->note = backend_note(l, backend);
        rc = jobset_pods(l, j, js, rt, ns, NULL, pos, err);
    } else {
        /* named by kind: a Pod of the same name has its own ("sim-pod:x") */
        const char *group = common_arena_printf(l->a, "sim-trainjob:%s", name);
        if (!group) {
            rc = oom(err);
            goto out;
        }
        j->note = backend_note(l, backend);
        job_minmember0(j, ns, group);
        rc = jobset_pods(l, j, js, rt, ns, group, pos, err);
    }
out:
    json_decref(out.objects);
    common_arena_destroy(a);
    return rc;
}

/* pods by PodGroup: (namespace, group label, input index), sorted, for a binary search */
struct pod_key {
    const char *ns, *group;
    size_t idx;
};

static int pod_key_cmp(const void *a, const void *b)
{
    const struct pod_key *x = a, *y = b;
    int c = strcmp(x->ns, y->ns);

    if (!c)
        c = strcmp(x->group, y->group);
    if (!c)
        c = x->idx < y->idx ? -1 : x->idx > y->idx;
    return c;
}

static struct pod_key *pod_index(const struct sim_loader *l, size_t *n)
{
    struct pod_key *v = common_malloc((l->pods.n + 1) * sizeof(*v));

    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < l->pods.n; i++) {
        const json_t *p = l->pods.v[i].doc;
        const char *g = str_at(json_object_get(p, "metadata"), "labels", GANG_POD_GROUP_LABEL);
        const char *pns = str_at(p, "metadata", "namespace");
        if (g)
            v[(*n)++] = (struct pod_key){pns ? pns : "default", g, i};
    }
    qsort(v, *n, sizeof(*v), pod_key_cmp);
    return v;
}

static enum common_rc podgroup_job(struct sim_loader *l, const struct item *it, size_t *used,
                                   const struct pod_key *keys, size_t n_keys,
                                   struct common_error *err)
{
    /* scheduler-plugins' PodGroupSpec (scheduling.x-k8s.io/v1alpha1) */
    static const char *const pg_spec_keys[] = {"minMember", "minResources",
                                               "scheduleTimeoutSeconds", NULL};
    json_t *doc = (json_t *)it->doc;
    const char *name = str_at(doc, "metadata", "name");
    const char *ns = str_at(doc, "metadata", "namespace");
    struct common_error e;
    struct sim_job *j;
    char pos[600], id[400];
    enum common_rc rc;
    int any;

    if (!ns)
        ns = "default";
    snprintf(id, sizeof(id), "PodGroup %s/%s", ns, name ? name : "?");
    where(l, it, doc, pos, sizeof(pos));
    if (!name || !*name)
        return bad(err, pos, id, "metadata.name", "Required value");
    if ((rc = object_keys(l, it, doc, id, pg_spec_keys, err)))
        return rc;
    if (!(j = job_new(l, it)))
        return oom(err);
    j->kind = "PodGroup";
    j->name = common_arena_printf(l->a, "%s/%s", ns, name);
    if (!j->name)
        return oom(err);
    if (!json_object_get(json_object_get(doc, "metadata"), "namespace")) {
        /* gang_podgroup_from_json reads the namespace from the object */
        json_t *copy = json_deep_copy(doc);
        if (!copy || common_arena_on_destroy(l->a, (void (*)(void *))json_decref, copy))
            return oom(err);
        json_object_set_new(json_object_get(copy, "metadata"), "namespace", json_string(ns));
        doc = copy;
    }
    if (gang_podgroup_from_json(doc, &j->pg, &e) != COMMON_OK)
        return bad(err, pos, id, "", e.msg);
    j->gang = j->pg.min_member > 0;
    if ((rc = sim_annotations(l, it, it->doc, id, &j->arrival_ms, &j->run_ms, &any, err)))
        return rc;
    size_t lo = 0, hi = n_keys;
    struct pod_key probe = {ns, name, 0};
    while (lo < hi) { /* the first key of this PodGroup */
        size_t mid = lo + (hi - lo) / 2;
        if (pod_key_cmp(&keys[mid], &probe) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t q = lo; q < n_keys && !strcmp(keys[q].ns, ns) && !strcmp(keys[q].group, name);
         q++) {
        size_t i = keys[q].idx;
        const json_t *p = l->pods.v[i].doc;
        char ppos[600];
        json_t *copy;
        used[i] = 1;
        where(l, &l->pods.v[i], p, ppos, sizeof(ppos));
        {
            int64_t parr = -1, prun = -1;
            if ((rc = sim_annotations(l, &l->pods.v[i], p, "", &parr, &prun, &any, err)))
                return rc;
            snprintf(id, sizeof(id), "Pod %s/%s", ns, str_at(p, "metadata", "name"));
            if (prun >= 0)
                return bad(err, ppos, id, "metadata.annotations[" SIM_RUN_TIME_ANNOTATION "]",
                           "Invalid: the pods of a PodGroup run as long as the gang: put the run "
                           "time on the PodGroup");
            if (parr >= 0 && parr < j->arrival_ms)
                return bad(err, ppos, id, "metadata.annotations[" SIM_ARRIVAL_ANNOTATION "]",
                           "Invalid: a pod of a PodGroup cannot arrive before its PodGroup");
            if (parr >= 0 && !j->pod_arrival_ms) {
                /* one array for the whole group (the keys of this PodGroup from lo on) */
                size_t cap = 0;
                while (lo + cap < n_keys && !strcmp(keys[lo + cap].ns, ns) &&
                       !strcmp(keys[lo + cap].group, name))
                    cap++;
                j->pod_arrival_ms = common_arena_alloc(l->a, cap * sizeof(*j->pod_arrival_ms));
                if (!j->pod_arrival_ms)
                    return oom(err);
                for (size_t k = 0; k < j->n_pods; k++)
                    j->pod_arrival_ms[k] = j->arrival_ms;
            }
            if (j->pod_arrival_ms)
                j->pod_arrival_ms[j->n_pods] = parr >= 0 ? parr : j->arrival_ms;
        }
        if ((rc = object_keys(l, &l->pods.v[i], (json_t *)p, id, NULL, err)) != COMMON_OK ||
            (rc = no_claims(l, &l->pods.v[i], p, id, err)) != COMMON_OK ||
            (rc = pod_quantities(l, &l->pods.v[i], p, id, err)) != COMMON_OK)
            return rc;
        if (!(copy = json_deep_copy(p)))
            return oom(err);
        rc = job_pod(l, j, copy, p, ns, NULL, ppos, err);
        json_decref(copy);
        if (rc != COMMON_OK)
            return rc;
    }
    if (!j->n_pods)
        return bad(err, pos, id, "",
                   "no pod in the input carries the label " GANG_POD_GROUP_LABEL ": give the "
                   "PodGroup's pods");
    return COMMON_OK;
}

static enum common_rc pod_job(struct sim_loader *l, const struct item *it, struct common_error *err)
{
    const char *name = str_at(it->doc, "metadata", "name");
    const char *ns = str_at(it->doc, "metadata", "namespace");
    const char *g = str_at(json_object_get(it->doc, "metadata"), "labels", GANG_POD_GROUP_LABEL);
    struct sim_job *j;
    char pos[600], id[400];
    const char *group;
    json_t *copy;
    enum common_rc rc;
    int any;

    if (!ns)
        ns = "default";
    snprintf(id, sizeof(id), "Pod %s/%s", ns, name ? name : "?");
    where(l, it, it->doc, pos, sizeof(pos));
    if (g)
        return bad(err, pos, id, "metadata.labels[" GANG_POD_GROUP_LABEL "]",
                   "Invalid: no PodGroup of that name in the pod's namespace in the input");
    if (!name || !*name)
        return bad(err, pos, id, "metadata.name", "Required value");
    if (!(j = job_new(l, it)))
        return oom(err);
    j->kind = "Pod";
    j->name = common_arena_printf(l->a, "%s/%s", ns, name);
    group = common_arena_printf(l->a, "sim-pod:%s", name);
    ns = common_arena_strdup(l->a, ns);
    if (!j->name || !group || !ns)
        return oom(err);
    if ((rc = sim_annotations(l, it, it->doc, id, &j->arrival_ms, &j->run_ms, &any, err)))
        return rc;
    job_minmember0(j, ns, group);
    if ((rc = object_keys(l, it, (json_t *)it->doc, id, NULL, err)) != COMMON_OK ||
        (rc = no_claims(l, it, it->doc, id, err)) != COMMON_OK ||
        (rc = pod_quantities(l, it, it->doc, id, err)) != COMMON_OK)
        return rc;
    if (!(copy = json_deep_copy(it->doc)))
        return oom(err);
    rc = job_pod(l, j, copy, it->doc, ns, group, pos, err);
    json_decref(copy);
    return rc;
}

struct node_at {
    struct common_node *n;
    const char *pos;
    size_t order;
};

/* by name, then in the order given (so of two nodes of one name the first given is first) */
static int node_cmp(const void *a, const void *b)
{
    const struct node_at *x = a, *y = b;
    int c = strcmp(x->n->name, y->n->name);
    return c ? c : x->order < y->order ? -1 : x->order > y->order;
}

/* l->nodes in name order; two nodes of one name are refused naming both places (the message
 * named only the first cluster file, without a line, even when the second node was in another
 * file) */
static enum common_rc sort_nodes(struct sim_loader *l, struct common_error *err)
{
    struct node_at *v = common_malloc(l->n_nodes * sizeof(*v));
    enum common_rc rc = COMMON_OK;

    if (!v)
        return oom(err);
    for (size_t i = 0; i < l->n_nodes; i++)
        v[i] = (struct node_at){l->nodes[i], l->node_pos[i], i};
    qsort(v, l->n_nodes, sizeof(*v), node_cmp);
    for (size_t i = 0; i < l->n_nodes; i++) {
        l->nodes[i] = v[i].n;
        l->node_pos[i] = v[i].pos;
    }
    for (size_t i = 1; i < l->n_nodes && rc == COMMON_OK; i++)
        if (strcmp(v[i - 1].n->name, v[i].n->name) == 0) {
            size_t fl = strlen(v[i - 1].pos);
            if (fl >= 2 && strcmp(v[i - 1].pos + fl - 2, ": ") == 0)
                fl -= 2; /* "file:line:col" */
            rc = common_error_set(err, COMMON_EINVAL,
                                  "%sNode %s: metadata.name: Duplicate value: two nodes share the "
                                  "name; first given at %.*s",
                                  v[i].pos, v[i].n->name, (int)fl, v[i - 1].pos);
        }
    common_free(v);
    return rc;
}

/* The same object in two places (two files, or twice in one) would run twice, or (runtimes)
 * leave which one counts to the order of the files: refused as render refuses it, naming both
 * places (trainjob_lookup_duplicate). */
static enum common_rc check_duplicates(struct sim_loader *l, struct common_error *err)
{
    struct items *lists[] = {&l->trainjobs, &l->runtimes, &l->podgroups, &l->pods};
    size_t n = 0, k = 0;
    const json_t **v;
    const struct item **from;
    struct trainjob_dup dup;
    enum common_rc rc;

    for (size_t i = 0; i < 4; i++)
        n += lists[i]->n;
    v = common_malloc((n + 1) * sizeof(*v));
    from = common_malloc((n + 1) * sizeof(*from));
    if (!v || !from) {
        common_free(v);
        common_free(from);
        return oom(err);
    }
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < lists[i]->n; j++) {
            from[k] = &lists[i]->v[j];
            v[k++] = lists[i]->v[j].doc;
        }
    rc = trainjob_lookup_duplicate(v, n, "default", &dup, err);
    if (rc == COMMON_OK && dup.second) {
        const struct item *a = NULL, *b = NULL;
        char first[600], pos[600], msg[COMMON_ERROR_MSG_MAX];
        size_t len;
        for (size_t i = 0; i < n; i++) {
            if (v[i] == dup.first && !a)
                a = from[i];
            if (v[i] == dup.second)
                b = from[i];
        }
        where(l, a, json_object_get(json_object_get(dup.first, "metadata"), "name"), first,
              sizeof(first));
        len = strlen(first);
        if (len >= 2) /* "file:line:col" without the ": " */
            first[len - 2] = '\0';
        where(l, b, json_object_get(json_object_get(dup.second, "metadata"), "name"), pos,
              sizeof(pos));
        rc = common_error_set(err, COMMON_EINVAL, "%s%s", pos,
                              trainjob_lookup_duplicate_message(&dup, first, msg, sizeof(msg)));
    }
    common_free(v);
    common_free(from);
    return rc;
}

/* what two jobs must not both make: a pod (by uid) or a PodGroup (by namespace and name) */
struct made_key {
    int pg;              /* 0: a pod, s1 its uid; 1: a PodGroup, s1/s2 namespace and name */
    const char *s1, *s2; /* s2 "" for a pod */
    size_t job;
    const struct common_pod *pod;
};

static int made_key_cmp(const void *a, const void *b)
{
    const struct made_key *x = a, *y = b;
    int c = x->pg - y->pg;
    if (!c)
        c = strcmp(x->s1, y->s1);
    if (!c)
        c = strcmp(x->s2, y->s2);
    return c ? c : (x->job > y->job) - (x->job < y->job);
}

/* Objects of different kinds can still make the same thing: a Pod named as a TrainJob's JobSet
 * names its pods (or two metadata.uid alike), or a PodGroup of the input named as a TrainJob
 * whose gang PodGroup takes that name (the cluster would refuse the second). Refused naming
 * both places, before the engine sees two pods of one uid or the core one gang of two jobs.
 * (Jobs without a gang have PodGroups of their own kind-qualified names, "sim-pod:x".) */
static enum common_rc check_made_twice(struct sim_loader *l, struct common_error *err)
{
    size_t n = l->n_jobs, k = 0;
    struct made_key *v;
    enum common_rc rc = COMMON_OK;

    for (size_t j = 0; j < l->n_jobs; j++)
        n += l->jobs[j].n_pods;
    if (!(v = common_malloc((n + 1) * sizeof(*v))))
        return oom(err);
    for (size_t j = 0; j < l->n_jobs; j++) {
        v[k++] = (struct made_key){1, l->jobs[j].pg.namespace, l->jobs[j].pg.name, j, NULL};
        for (size_t q = 0; q < l->jobs[j].n_pods; q++)
            v[k++] = (struct made_key){0, l->jobs[j].pods[q]->uid, "", j, l->jobs[j].pods[q]};
    }
    qsort(v, n, sizeof(*v), made_key_cmp);
    for (size_t i = 1; i < n && rc == COMMON_OK; i++) {
        const struct made_key *x = &v[i - 1], *y = &v[i];
        const struct sim_job *a = &l->jobs[x->job], *b = &l->jobs[y->job];
        const struct item *ia = l->job_src[x->job], *ib = l->job_src[y->job];
        char pa[600], pb[600], what[600];
        size_t len;
        if (x->pg != y->pg || strcmp(x->s1, y->s1) != 0 || strcmp(x->s2, y->s2) != 0)
            continue;
        where(l, ia, json_object_get(json_object_get(ia->doc, "metadata"), "name"), pa, sizeof(pa));
        where(l, ib, json_object_get(json_object_get(ib->doc, "metadata"), "name"), pb, sizeof(pb));
        len = strlen(pa);
        if (len >= 2) /* "file:line:col" without the ": " */
            pa[len - 2] = '\0';
        if (y->pg)
            snprintf(what, sizeof(what), "PodGroup %s/%s", y->s1, y->s2);
        else
            snprintf(what, sizeof(what), "pod %s/%s (uid %s)", y->pod->namespace, y->pod->name,
                     y->s1);
        rc = common_error_set(err, COMMON_EINVAL,
                              "%s%s %s: metadata.name: Duplicate: %s would be made twice, by %s%s "
                              "%s at %s and by this one; names are unique in a namespace",
                              pb, b->kind, b->name, what, a == b ? "another member of " : "",
                              a->kind, a->name, pa);
    }
    common_free(v);
    return rc;
}

enum common_rc sim_loader_finish(struct sim_loader *l, struct sim_input *in,
                                 struct common_error *err)
{
    size_t *used = NULL, *order = NULL;
    struct sim_job *sorted = NULL;
    enum common_rc rc = COMMON_OK;

    memset(in, 0, sizeof(*in));
    if (!l->n_nodes && l->snapshot) /* a live cluster: nothing could start */
        return common_error_set(err, COMMON_EINVAL,
                                "the cluster has no nodes: the snapshot listed no Node with a "
                                "name and status.allocatable, so nothing can be placed%s%s",
                                l->n_notes ? "; " : "", l->n_notes ? l->notes[0] : "");
    if (!l->n_nodes)
        return common_error_set(err, COMMON_EINVAL,
                                "%s: the cluster has no nodes: give Node objects or a SimCluster "
                                "with at least one node",
                                l->cluster_file ? l->cluster_file : "cluster");
    /* node_amounts checked the GPUs of each Node under the GPU resource in force then; a
     * SimCluster read later may have named another one */
    for (size_t i = 0; i < l->n_nodes; i++) {
        const struct common_resources *r = &l->nodes[i]->allocatable;
        for (uint32_t x = 0; x < r->n_extended; x++) {
            char pos[300], id[400], field[300], what[300];
            if (r->extended[x].value <= INT32_MAX || strcmp(r->extended[x].name, l->gpu) != 0)
                continue;
            snprintf(pos, sizeof(pos), "%s", l->node_pos[i]);
            snprintf(id, sizeof(id), "Node %s", l->nodes[i]->name);
            snprintf(field, sizeof(field), "status.allocatable[%s]", l->gpu);
            snprintf(what, sizeof(what), "Invalid value: \"%lld\": " SIM_GPUS_PER_NODE_WHY,
                     (long long)r->extended[x].value);
            return bad(err, pos, id, field, what);
        }
    }
    if ((rc = sort_nodes(l, err)) != COMMON_OK)
        return rc;
    if ((rc = check_duplicates(l, err)) != COMMON_OK)
        return rc;
    for (size_t i = 0; i < l->trainjobs.n; i++)
        if ((rc = trainjob_job(l, &l->trainjobs.v[i], err)) != COMMON_OK)
            return rc;
    used = common_malloc((l->pods.n + 1) * sizeof(*used));
    if (!used)
        return oom(err);
    memset(used, 0, (l->pods.n + 1) * sizeof(*used));
    {
        size_t n_keys;
        struct pod_key *keys = pod_index(l, &n_keys);
        if (!keys) {
            common_free(used);
            return oom(err);
        }
        for (size_t i = 0; i < l->podgroups.n && rc == COMMON_OK; i++)
            rc = podgroup_job(l, &l->podgroups.v[i], used, keys, n_keys, err);
        common_free(keys);
    }
    for (size_t i = 0; i < l->pods.n && rc == COMMON_OK; i++)
        if (!used[i])
            rc = pod_job(l, &l->pods.v[i], err);
    common_free(used);
    if (rc == COMMON_OK)
        rc = check_made_twice(l, err);
    if (rc != COMMON_OK)
        return rc;
    if (!l->n_jobs && !l->snapshot)
        return common_error_set(err, COMMON_EINVAL,
                                "no jobs: give TrainJobs, PodGroups with pods, or Pods");
    /* stable sort by arrival: order[] keeps the input order as the tie-break */
    order = common_malloc((l->n_jobs + 1) * sizeof(*order));
    sorted = common_arena_alloc(l->a, (l->n_jobs + 1) * sizeof(*sorted));
    if (!order || !sorted) {
        common_free(order);
        return oom(err);
    }
    for (size_t i = 0; i < l->n_jobs; i++)
        order[i] = i;
    for (size_t i = 1; i < l->n_jobs; i++) { /* insertion sort over runs: arrivals are mostly
                                                sorted already */
        size_t k = order[i], m = i;
        while (m > 0 && l->jobs[order[m - 1]].arrival_ms > l->jobs[k].arrival_ms) {
            order[m] = order[m - 1];
            m--;
        }
        order[m] = k;
    }
    for (size_t i = 0; i < l->n_jobs; i++) {
        struct sim_job *j = &sorted[i];
        *j = l->jobs[order[i]];
        for (size_t k = 0; k < j->n_pods; k++) {
            int64_t g = 0;
            for (uint32_t x = 0; x < j->pods[k]->requests.n_extended; x++)
                if (strcmp(j->pods[k]->requests.extended[x].name, l->gpu) == 0)
                    g = j->pods[k]->requests.extended[x].value;
            /* saturated: the sum only meets the cluster's free GPUs (at most SIM_MAX_NODES x
             * INT32_MAX), so a saturated job still never fits, and the report prints it */
            j->gpus = common_add_sat(j->gpus, g);
            if (g > 0 && (j->pod_gpus == 0 || g < j->pod_gpus))
                j->pod_gpus = g;
        }
    }
    common_free(order);
    if (!l->n_levels && l->n_topos) { /* Node objects and a Topology: its levels, no hostname */
        const struct sim_topology *t = &l->topos[0];
        l->levels = t->levels;
        l->n_levels = t->n_levels;
        if (l->n_levels && strcmp(t->levels[l->n_levels - 1], TOPO_HOSTNAME) == 0)
            l->n_levels--;
    }
    if (!l->n_levels) { /* Node objects: report the usual placeholder levels when present */
        static const char *const def[] = {LEVEL_BLOCK, LEVEL_RACK};
        size_t n = 0;
        l->levels = common_arena_alloc(l->a, 2 * sizeof(*l->levels));
        if (!l->levels)
            return oom(err);
        for (size_t k = 0; k < 2; k++)
            for (size_t i = 0; i < l->n_nodes; i++) {
                int has = 0;
                for (uint32_t x = 0; x < l->nodes[i]->n_labels && !has; x++)
                    has = strcmp(l->nodes[i]->labels[x].key, def[k]) == 0;
                if (has) {
                    l->levels[n++] = def[k];
                    break;
                }
            }
        l->n_levels = n;
    }
    in->nodes = l->nodes;
    in->n_nodes = l->n_nodes;
    in->jobs = sorted;
    in->n_jobs = l->n_jobs;
    in->levels = l->levels;
    in->n_levels = l->n_levels;
    in->topologies = common_arena_alloc(l->a, (l->n_topos + 1) * sizeof(*in->topologies));
    if (!in->topologies)
        return oom(err);
    if (l->n_topos)
        memcpy(in->topologies, l->topos, l->n_topos * sizeof(*in->topologies));
    in->n_topologies = l->n_topos;
    in->gpu_resource = l->gpu;
    in->load = l->load;
    in->n_load = l->n_load;
    in->notes = l->notes;
    in->n_notes = l->n_notes;
    in->epoch_ms = l->epoch_ms;
    gang_config_default(&in->gang);
    /* the bind extender's httpTimeout of the shipped scheduler config (manifests/scheduler) */
    in->gang.bind_http_timeout_ms = 630000;
    return COMMON_OK;
}

/* ---- a snapshot of a cluster (sim_int.h) ---- */

void sim_loader_snapshot(struct sim_loader *l, int64_t epoch_ms)
{
    l->snapshot = 1;
    l->epoch_ms = epoch_ms;
}

enum common_rc sim_loader_note(struct sim_loader *l, const char *msg, struct common_error *err)
{
    if (grow((void **)&l->notes, &l->cap_notes, l->n_notes, sizeof(*l->notes)) ||
        !(l->notes[l->n_notes] = common_arena_strdup(l->a, msg)))
        return oom(err);
    l->n_notes++;
    return COMMON_OK;
}

enum common_rc sim_loader_own(struct sim_loader *l, struct common_yaml_docs *d,
                              struct common_error *err)
{
    if (grow((void **)&l->owned, &l->cap_owned, l->n_owned, sizeof(*l->owned))) {
        common_yaml_docs_free(d);
        common_free(d);
        return oom(err);
    }
    l->owned[l->n_owned++] = d;
    return COMMON_OK;
}

enum common_rc sim_loader_add_node(struct sim_loader *l, json_t *node, struct common_error *err)
{
    return node_from_doc(l, NULL, node, err);
}

enum common_rc sim_loader_add_load(struct sim_loader *l, json_t *pod, int64_t end_ms,
                                   struct common_error *err)
{
    struct common_pod *cp = NULL;
    enum common_rc rc;

    if (default_requests(pod))
        return oom(err);
    if ((rc = common_pod_from_json(pod, &cp, err)) != COMMON_OK)
        return rc;
    if (grow((void **)&l->all_pods, &l->cap_all_pods, l->n_all_pods, sizeof(*l->all_pods)) ||
        grow((void **)&l->load, &l->cap_load, l->n_load, sizeof(*l->load))) {
        common_pod_free(cp);
        return oom(err);
    }
    l->all_pods[l->n_all_pods++] = cp;
    l->load[l->n_load].pod = cp;
    l->load[l->n_load].end_ms = end_ms < 0 ? 0 : end_ms;
    l->n_load++;
    return COMMON_OK;
}
