/*
 * trainjob/schema.c - the structural part of the Trainer CRDs as data, and one walker.
 *
 * Each type is a struct tj_snode: its JSON type, its fields (for objects), bounds, enum values
 * and list-map key. The trainer.kubeflow.org types are strict: an unknown field is an error, as
 * the API server reports with fieldValidation=Strict. Embedded upstream types (JobSetSpec,
 * PodSpec, Container, ...) are open: the fields Trainer reads are type-checked, others pass,
 * because their full schemas belong to JobSet and Kubernetes. Source: the CRDs described in
 * ../shared/reference/trainer.md §1 (trainjob_types.go, trainingruntime_types.go).
 */
#include <string.h>

#include "common/quantity.h"
#include "trainjob/trainjob_int.h"

enum tj_sty { T_ANY, T_OBJ, T_MAP, T_ARR, T_STR, T_I32, T_I64, T_BOOL, T_QTY, T_IOS, T_TIME };

struct tj_sfield;
struct tj_snode {
    enum tj_sty t;
    const struct tj_sfield *fields; /* T_OBJ: NULL-name terminated */
    int open;                       /* T_OBJ: unknown fields allowed */
    const struct tj_snode *items;   /* T_ARR items, T_MAP values */
    const char *list_key;           /* T_ARR: list-map key, unique */
    int has_min, has_max;
    long long min, max;
    size_t min_len, max_len, max_items;
    const char *const *enums;
};

struct tj_sfield {
    const char *name;
    const struct tj_snode *node;
    int required;
};

#define F(n, node)                                                                                 \
    {                                                                                              \
        n, node, 0                                                                                 \
    }
#define R(n, node)                                                                                 \
    {                                                                                              \
        n, node, 1                                                                                 \
    }
#define END                                                                                        \
    {                                                                                              \
        NULL, NULL, 0                                                                              \
    }

static const struct tj_snode any = {.t = T_ANY};
static const struct tj_snode str = {.t = T_STR};
static const struct tj_snode str253 = {.t = T_STR, .max_len = 253};
static const struct tj_snode name253 = {.t = T_STR, .min_len = 1, .max_len = 253};
static const struct tj_snode boolean = {.t = T_BOOL};
static const struct tj_snode i32 = {.t = T_I32};
static const struct tj_snode i64 = {.t = T_I64};
static const struct tj_snode i32min0 = {.t = T_I32, .has_min = 1, .min = 0};
static const struct tj_snode i64min0 = {.t = T_I64, .has_min = 1, .min = 0};
static const struct tj_snode i64min1 = {.t = T_I64, .has_min = 1, .min = 1};
static const struct tj_snode timestamp = {.t = T_TIME};
static const struct tj_snode strmap = {.t = T_MAP, .items = &str};
static const struct tj_snode anylist = {.t = T_ARR, .items = &any};
static const struct tj_snode strlist = {.t = T_ARR, .items = &str};
static const struct tj_snode qty = {.t = T_QTY};
static const struct tj_snode qtymap = {.t = T_MAP, .items = &qty};

/* core/v1 pieces Trainer reads (open: other fields pass) */
static const struct tj_sfield env_fields[] = {R("name", &str), F("value", &str),
                                              F("valueFrom", &any), END};
static const struct tj_snode env = {.t = T_OBJ, .fields = env_fields, .open = 1};
static const struct tj_snode envlist128 = {
    .t = T_ARR, .items = &env, .list_key = "name", .max_items = 128};
static const struct tj_snode envlist = {.t = T_ARR, .items = &env, .list_key = "name"};
static const struct tj_sfield claim_fields[] = {R("name", &str), F("request", &str), END};
static const struct tj_snode claim = {.t = T_OBJ, .fields = claim_fields};
static const struct tj_snode claimlist = {.t = T_ARR, .items = &claim, .list_key = "name"};
static const struct tj_sfield res_fields[] = {F("limits", &qtymap), F("requests", &qtymap),
                                              F("claims", &claimlist), END};
static const struct tj_snode resources = {.t = T_OBJ, .fields = res_fields};
static const struct tj_sfield port_fields[] = {R("containerPort", &i32), F("name", &str), END};
static const struct tj_snode port = {.t = T_OBJ, .fields = port_fields, .open = 1};
static const struct tj_snode portlist = {.t = T_ARR, .items = &port};
static const struct tj_sfield mount_fields[] = {R("name", &str), R("mountPath", &str), END};
static const struct tj_snode mount = {.t = T_OBJ, .fields = mount_fields, .open = 1};
static const struct tj_snode mountlist = {.t = T_ARR, .items = &mount, .list_key = "mountPath"};
static const struct tj_sfield container_fields[] = {R("name", &str),
                                                    F("image", &str),
                                                    F("command", &strlist),
                                                    F("args", &strlist),
                                                    F("env", &envlist),
                                                    F("ports", &portlist),
                                                    F("resources", &resources),
                                                    F("volumeMounts", &mountlist),
                                                    END};
static const struct tj_snode container = {.t = T_OBJ, .fields = container_fields, .open = 1};
static const struct tj_snode containerlist = {.t = T_ARR, .items = &container, .list_key = "name"};
static const struct tj_sfield volume_fields[] = {R("name", &str), END};
static const struct tj_snode volume = {.t = T_OBJ, .fields = volume_fields, .open = 1};
static const struct tj_snode volumelist = {.t = T_ARR, .items = &volume, .list_key = "name"};
static const struct tj_sfield podspec_fields[] = {R("containers", &containerlist),
                                                  F("initContainers", &containerlist),
                                                  F("volumes", &volumelist),
                                                  F("nodeSelector", &strmap),
                                                  F("tolerations", &anylist),
                                                  F("serviceAccountName", &str),
                                                  F("schedulerName", &str),
                                                  F("priorityClassName", &str),
                                                  F("terminationGracePeriodSeconds", &i64),
                                                  F("overhead", &qtymap),
                                                  END};
static const struct tj_snode podspec = {.t = T_OBJ, .fields = podspec_fields, .open = 1};

static const struct tj_sfield meta_lite_fields[] = {F("labels", &strmap), F("annotations", &strmap),
                                                    END};
static const struct tj_snode meta_lite = {.t = T_OBJ, .fields = meta_lite_fields, .open = 1};
static const struct tj_sfield podtemplate_fields[] = {F("metadata", &meta_lite),
                                                      F("spec", &podspec), END};
static const struct tj_snode podtemplate = {.t = T_OBJ, .fields = podtemplate_fields, .open = 1};
static const struct tj_sfield jobspec_fields[] = {
    F("parallelism", &i32min0), F("completions", &i32min0), F("template", &podtemplate), END};
static const struct tj_snode jobspec = {.t = T_OBJ, .fields = jobspec_fields, .open = 1};
static const struct tj_sfield jobtemplate_fields[] = {F("metadata", &meta_lite),
                                                      F("spec", &jobspec), END};
static const struct tj_snode jobtemplate = {.t = T_OBJ, .fields = jobtemplate_fields, .open = 1};
static const char *const depends_status[] = {"Ready", "Complete", NULL};
static const struct tj_snode depends_status_node = {.t = T_STR, .enums = depends_status};
static const struct tj_sfield depends_fields[] = {R("name", &str),
                                                  R("status", &depends_status_node), END};
static const struct tj_snode depends = {.t = T_OBJ, .fields = depends_fields};
static const struct tj_snode dependslist = {.t = T_ARR, .items = &depends, .list_key = "name"};
static const struct tj_sfield rjob_fields[] = {
    R("name", &str),         F("groupName", &str),         R("template", &jobtemplate),
    F("replicas", &i32min0), F("dependsOn", &dependslist), END};
static const struct tj_snode rjob = {.t = T_OBJ, .fields = rjob_fields, .open = 1};
static const struct tj_snode rjoblist = {.t = T_ARR, .items = &rjob, .list_key = "name"};
static const struct tj_sfield network_fields[] = {F("enableDNSHostnames", &boolean),
                                                  F("subdomain", &str),
                                                  F("publishNotReadyAddresses", &boolean), END};
static const struct tj_snode network = {.t = T_OBJ, .fields = network_fields};
static const char *const startup_orders[] = {"AnyOrder", "InOrder", NULL};
static const struct tj_snode startup_order = {.t = T_STR, .enums = startup_orders};
static const struct tj_sfield startup_fields[] = {F("startupPolicyOrder", &startup_order), END};
static const struct tj_snode startup = {.t = T_OBJ, .fields = startup_fields};
static const struct tj_sfield jobset_fields[] = {F("replicatedJobs", &rjoblist),
                                                 F("network", &network),
                                                 F("startupPolicy", &startup),
                                                 F("suspend", &boolean),
                                                 F("managedBy", &str),
                                                 F("ttlSecondsAfterFinished", &i32min0),
                                                 F("successPolicy", &any),
                                                 F("failurePolicy", &any),
                                                 F("coordinator", &any),
                                                 F("volumeClaimPolicies", &anylist),
                                                 END};
static const struct tj_snode jobsetspec = {.t = T_OBJ, .fields = jobset_fields, .open = 1};

static const struct tj_sfield objmeta_fields[] = {F("name", &str),
                                                  F("generateName", &str),
                                                  F("namespace", &str),
                                                  F("uid", &str),
                                                  F("resourceVersion", &str),
                                                  F("generation", &i64),
                                                  F("creationTimestamp", &any),
                                                  F("deletionTimestamp", &any),
                                                  F("deletionGracePeriodSeconds", &i64),
                                                  F("labels", &strmap),
                                                  F("annotations", &strmap),
                                                  F("ownerReferences", &anylist),
                                                  F("finalizers", &strlist),
                                                  F("managedFields", &anylist),
                                                  F("selfLink", &str),
                                                  END};
static const struct tj_snode objmeta = {.t = T_OBJ, .fields = objmeta_fields};

/* ---- TrainJob (strict) ---- */
static const struct tj_sfield ref_fields[] = {R("name", &name253), F("apiGroup", &str253),
                                              F("kind", &str253), END};
static const struct tj_snode runtimeref = {.t = T_OBJ, .fields = ref_fields};
static const struct tj_snode uri = {.t = T_STR, .max_len = 2048};
static const struct tj_sfield secretref_fields[] = {F("name", &str), END};
static const struct tj_snode secretref = {.t = T_OBJ, .fields = secretref_fields};
static const struct tj_sfield init_one_fields[] = {F("storageUri", &uri), F("env", &envlist128),
                                                   F("secretRef", &secretref), END};
static const struct tj_snode init_one = {.t = T_OBJ, .fields = init_one_fields};
static const struct tj_sfield initializer_fields[] = {F("dataset", &init_one),
                                                      F("model", &init_one), END};
static const struct tj_snode initializer = {.t = T_OBJ, .fields = initializer_fields};
static const struct tj_snode bigstr = {.t = T_STR, .max_len = 1048576};
static const struct tj_snode cmdlist = {.t = T_ARR, .items = &bigstr, .max_items = 128};
static const struct tj_snode image = {.t = T_STR, .max_len = 500};
static const struct tj_sfield trainer_fields[] = {
    F("image", &image),        F("command", &cmdlist),
    F("args", &cmdlist),       F("env", &envlist128),
    F("numNodes", &i32min0),   F("resourcesPerNode", &resources),
    F("numProcPerNode", &i32), END};
static const struct tj_snode trainer = {.t = T_OBJ, .fields = trainer_fields};

/* a runtime patch's volumeMounts are a list-map keyed by name (Trainer's ContainerPatch), unlike
 * a pod container's, keyed by mountPath */
static const struct tj_snode pmountlist = {
    .t = T_ARR, .items = &mount, .list_key = "name", .max_items = 128};
static const struct tj_sfield cpatch_fields[] = {R("name", &name253), F("env", &envlist128),
                                                 F("volumeMounts", &pmountlist),
                                                 F("securityContext", &any), END};
static const struct tj_snode cpatch = {.t = T_OBJ, .fields = cpatch_fields};
static const struct tj_snode cpatchlist = {
    .t = T_ARR, .items = &cpatch, .list_key = "name", .max_items = 64};
static const struct tj_snode volumelist128 = {
    .t = T_ARR, .items = &volume, .list_key = "name", .max_items = 128};
static const struct tj_sfield named_fields[] = {R("name", &str), END};
static const struct tj_snode named = {.t = T_OBJ, .fields = named_fields};
static const struct tj_snode pullsecrets = {
    .t = T_ARR, .items = &named, .list_key = "name", .max_items = 64};
static const struct tj_snode gates = {
    .t = T_ARR, .items = &named, .list_key = "name", .max_items = 16};
static const struct tj_snode tolerations128 = {.t = T_ARR, .items = &any, .max_items = 128};
static const struct tj_snode sa = {.t = T_STR, .max_len = 253};
static const struct tj_sfield podpatch_fields[] = {F("serviceAccountName", &sa),
                                                   F("volumes", &volumelist128),
                                                   F("initContainers", &cpatchlist),
                                                   F("containers", &cpatchlist),
                                                   F("imagePullSecrets", &pullsecrets),
                                                   F("securityContext", &any),
                                                   F("nodeSelector", &strmap),
                                                   F("affinity", &any),
                                                   F("tolerations", &tolerations128),
                                                   F("schedulingGates", &gates),
                                                   F("terminationGracePeriodSeconds", &i64min0),
                                                   END};
static const struct tj_snode podpatch = {.t = T_OBJ, .fields = podpatch_fields};
static const struct tj_sfield meta_patch_fields[] = {F("labels", &strmap),
                                                     F("annotations", &strmap), END};
static const struct tj_snode meta_patch = {.t = T_OBJ, .fields = meta_patch_fields};
static const struct tj_sfield podtpatch_fields[] = {F("metadata", &meta_patch),
                                                    F("spec", &podpatch), END};
static const struct tj_snode podtpatch = {.t = T_OBJ, .fields = podtpatch_fields};
static const struct tj_sfield jobspecpatch_fields[] = {F("template", &podtpatch), END};
static const struct tj_snode jobspecpatch = {.t = T_OBJ, .fields = jobspecpatch_fields};
static const struct tj_sfield jobtpatch_fields[] = {F("metadata", &meta_patch),
                                                    F("spec", &jobspecpatch), END};
static const struct tj_snode jobtpatch = {.t = T_OBJ, .fields = jobtpatch_fields};
static const struct tj_sfield rjobpatch_fields[] = {R("name", &name253), F("template", &jobtpatch),
                                                    END};
static const struct tj_snode rjobpatch = {.t = T_OBJ, .fields = rjobpatch_fields};
static const struct tj_snode rjobpatchlist = {
    .t = T_ARR, .items = &rjobpatch, .list_key = "name", .max_items = 100};
static const struct tj_sfield jobsetpatch_fields[] = {F("replicatedJobs", &rjobpatchlist), END};
static const struct tj_snode jobsetpatch = {.t = T_OBJ, .fields = jobsetpatch_fields};
static const struct tj_sfield jstpatch_fields[] = {F("metadata", &meta_patch),
                                                   F("spec", &jobsetpatch), END};
static const struct tj_snode jstpatch = {.t = T_OBJ, .fields = jstpatch_fields};
static const struct tj_sfield rtspecpatch_fields[] = {F("template", &jstpatch), END};
static const struct tj_snode rtspecpatch = {.t = T_OBJ, .fields = rtspecpatch_fields};
static const struct tj_sfield rpatch_fields[] = {R("manager", &name253), F("time", &timestamp),
                                                 F("trainingRuntimeSpec", &rtspecpatch), END};
static const struct tj_snode rpatch = {.t = T_OBJ, .fields = rpatch_fields};
static const struct tj_snode rpatchlist = {
    .t = T_ARR, .items = &rpatch, .list_key = "manager", .max_items = 16};
static const struct tj_snode managedby = {.t = T_STR, .max_len = 253};
static const struct tj_sfield tjspec_fields[] = {
    R("runtimeRef", &runtimeref), F("initializer", &initializer),
    F("trainer", &trainer),       F("runtimePatches", &rpatchlist),
    F("suspend", &boolean),       F("activeDeadlineSeconds", &i64min1),
    F("managedBy", &managedby),   END};
static const struct tj_snode tjspec = {.t = T_OBJ, .fields = tjspec_fields};
static const struct tj_sfield trainjob_fields[] = {R("apiVersion", &str),   R("kind", &str),
                                                   F("metadata", &objmeta), F("spec", &tjspec),
                                                   F("status", &any),       END};
static const struct tj_snode trainjob_node = {.t = T_OBJ, .fields = trainjob_fields};

/* ---- TrainingRuntime / ClusterTrainingRuntime ---- */
static const struct tj_snode cname = {.t = T_STR, .max_len = 63};
static const struct tj_snode cnames = {.t = T_ARR, .items = &cname, .max_items = 8};
static const struct tj_sfield target_fields[] = {R("jobName", &name253),
                                                 R("containerNames", &cnames), END};
static const struct tj_snode target = {.t = T_OBJ, .fields = target_fields};
static const struct tj_snode targets = {
    .t = T_ARR, .items = &target, .list_key = "jobName", .max_items = 16};
static const struct tj_sfield envinj_fields[] = {F("targets", &targets), END};
static const struct tj_snode envinj = {.t = T_OBJ, .fields = envinj_fields};
static const struct tj_sfield torch_fields[] = {F("envInjection", &envinj), END};
static const struct tj_snode torch = {.t = T_OBJ, .fields = torch_fields};
static const char *const mpi_impls[] = {"OpenMPI", "", NULL};
static const struct tj_snode mpi_impl = {.t = T_STR, .enums = mpi_impls};
static const struct tj_snode path4096 = {.t = T_STR, .max_len = 4096};
static const struct tj_sfield mpi_fields[] = {
    F("numProcPerNode", &i32), F("mpiImplementation", &mpi_impl), F("sshAuthMountPath", &path4096),
    F("runLauncherAsNode", &boolean), END};
static const struct tj_snode mpi = {.t = T_OBJ, .fields = mpi_fields};
static const struct tj_sfield empty_fields[] = {END};
static const struct tj_snode empty = {.t = T_OBJ, .fields = empty_fields};
static const struct tj_sfield flux_fields[] = {F("numProcPerNode", &i32), END};
static const struct tj_snode flux = {.t = T_OBJ, .fields = flux_fields};
static const struct tj_sfield ml_fields[] = {F("numNodes", &i32),
                                             F("torch", &torch),
                                             F("mpi", &mpi),
                                             F("jax", &empty),
                                             F("xgboost", &empty),
                                             F("flux", &flux),
                                             END};
static const struct tj_snode mlpolicy = {.t = T_OBJ, .fields = ml_fields};
static const struct tj_sfield cosched_fields[] = {F("scheduleTimeoutSeconds", &i32), END};
static const struct tj_snode cosched = {.t = T_OBJ, .fields = cosched_fields};
static const char *const topo_modes[] = {"hard", "soft", NULL};
static const struct tj_snode topo_mode = {.t = T_STR, .enums = topo_modes};
static const struct tj_sfield topo_fields[] = {F("mode", &topo_mode), F("highestTierAllowed", &i64),
                                               END};
static const struct tj_snode topo = {.t = T_OBJ, .fields = topo_fields};
static const struct tj_sfield volcano_fields[] = {F("networkTopology", &topo), END};
static const struct tj_snode volcano = {.t = T_OBJ, .fields = volcano_fields};
static const struct tj_sfield pgp_fields[] = {F("coscheduling", &cosched), F("volcano", &volcano),
                                              END};
static const struct tj_snode pgpolicy = {.t = T_OBJ, .fields = pgp_fields};
static const struct tj_sfield jst_fields[] = {F("metadata", &meta_lite), F("spec", &jobsetspec),
                                              END};
static const struct tj_snode jstemplate = {.t = T_OBJ, .fields = jst_fields};
static const struct tj_sfield rtspec_fields[] = {
    F("mlPolicy", &mlpolicy), F("podGroupPolicy", &pgpolicy), F("template", &jstemplate), END};
static const struct tj_snode rtspec = {.t = T_OBJ, .fields = rtspec_fields};
static const struct tj_sfield runtime_fields[] = {R("apiVersion", &str), R("kind", &str),
                                                  F("metadata", &objmeta), R("spec", &rtspec), END};
static const struct tj_snode runtime_node = {.t = T_OBJ, .fields = runtime_fields};

/* ---- the walker ---- */

struct walk {
    struct trainjob_errors *e;
    const json_t *doc;
    char path[1024];
    const json_t *obj; /* the object and key holding the value being walked (positions of */
    const char *key;   /* errors at values that have none of their own, like null items) */
};

static const char *type_word(enum tj_sty t)
{
    switch (t) {
    case T_OBJ:
    case T_MAP:
        return "object";
    case T_ARR:
        return "array";
    case T_STR:
    case T_TIME:
        return "string";
    case T_I32:
    case T_I64:
        return "integer";
    case T_BOOL:
        return "boolean";
    case T_QTY:
    case T_IOS:
        return "integer or string";
    case T_ANY:
        break;
    }
    return "any";
}

static const char *json_word(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "value";
}

static void walk_node(struct walk *w, const struct tj_snode *n, const json_t *v);

static size_t push(struct walk *w, const char *s, size_t idx)
{
    size_t old = strlen(w->path);
    if (s)
        snprintf(w->path + old, sizeof(w->path) - old, "%s%s", old ? "." : "", s);
    else
        snprintf(w->path + old, sizeof(w->path) - old, "[%zu]", idx);
    return old;
}

static void type_error(struct walk *w, const struct tj_snode *n, const json_t *v)
{
    if (strcmp(w->path, "spec.trainer.numProcPerNode") == 0 && json_is_string(v))
        tj_err(w->e, w->doc, v, "Invalid", w->path,
               "must be of type integer, not string (\"%s\"): since Trainer v2.2 leave it "
               "unset for \"auto\"",
               json_string_value(v));
    else
        tj_err(w->e, w->doc, v, "Invalid", w->path, "must be of type %s, not %s", type_word(n->t),
               json_word(v));
}

static int type_ok(const struct tj_snode *n, const json_t *v)
{
    switch (n->t) {
    case T_ANY:
        return 1;
    case T_OBJ:
    case T_MAP:
        return json_is_object(v);
    case T_ARR:
        return json_is_array(v);
    case T_STR:
    case T_TIME:
        return json_is_string(v);
    case T_I32:
    case T_I64:
        return json_is_integer(v);
    case T_BOOL:
        return json_is_boolean(v);
    case T_QTY:
    case T_IOS:
        return json_is_string(v) || json_is_integer(v) || json_is_real(v);
    }
    return 0;
}

static int is_rfc3339(const char *s)
{
    /* YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM) */
    const char *shape = "dddd-dd-ddTdd:dd:dd";
    size_t i;

    for (i = 0; shape[i]; i++) {
        char c = s[i];
        if (shape[i] == 'd' ? (c < '0' || c > '9') : (c != shape[i] && !(i == 10 && c == 't')))
            return 0;
    }
    s += i;
    if (*s == '.') {
        s++;
        if (*s < '0' || *s > '9')
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'Z' || *s == 'z')
        return s[1] == '\0';
    if ((*s == '+' || *s == '-') && strlen(s) == 6 && s[3] == ':')
        return 1;
    return 0;
}

/* Fields of older Trainer releases, with what replaced them (trainer.md §0). */
static const struct {
    const char *path, *hint;
} removed_fields[] = {
    {"spec.podTemplateOverrides", "removed in Trainer v2.2: use spec.runtimePatches"},
    {"spec.podSpecOverrides", "removed in Trainer v2.2: use spec.runtimePatches"},
    {"spec.labels", "removed in Trainer v2.2: set JobSet labels with spec.runtimePatches[]."
                    "trainingRuntimeSpec.template.metadata.labels"},
    {"spec.annotations", "removed in Trainer v2.2: set JobSet annotations with "
                         "spec.runtimePatches[].trainingRuntimeSpec.template.metadata"},
    {"spec.mlPolicy.torch.numProcPerNode",
     "removed in Trainer v2.2: set spec.trainer.numProcPerNode on the TrainJob"},
};

static const char *removed_hint(const char *path)
{
    for (size_t i = 0; i < sizeof(removed_fields) / sizeof(removed_fields[0]); i++)
        if (strcmp(removed_fields[i].path, path) == 0)
            return removed_fields[i].hint;
    return NULL;
}

/* edit distance between a and b (insert, delete, substitute; a letter that differs only in
 * case costs nothing), capped at 16 */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[64], prev, tmp;

    if (la >= 63 || lb >= 63)
        return 16;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            int same =
                a[i - 1] == b[j - 1] || ((a[i - 1] | 0x20) == (b[j - 1] | 0x20) &&
                                         ((a[i - 1] | 0x20) >= 'a') && ((a[i - 1] | 0x20) <= 'z'));
            tmp = row[j];
            row[j] = prev + (same ? 0 : 1);
            if (row[j - 1] + 1 < row[j])
                row[j] = row[j - 1] + 1;
            if (tmp + 1 < row[j])
                row[j] = tmp + 1;
            prev = tmp;
        }
    }
    return row[lb] > 16 ? 16 : row[lb];
}

/* the known field of n closest to key, when close enough to be a likely typo (at most a third
 * of its letters, and at least one, differ), else NULL */
static const char *closest_field(const struct tj_snode *n, const char *key)
{
    const char *best = NULL;
    size_t best_d = 17;

    for (const struct tj_sfield *f = n->fields; f->name; f++) {
        size_t d = distance(key, f->name);
        size_t limit = strlen(f->name) / 3;
        if (limit < 1)
            limit = 1;
        if (d <= limit && d < best_d) {
            best = f->name;
            best_d = d;
        }
    }
    return best;
}

static void walk_object(struct walk *w, const struct tj_snode *n, const json_t *v)
{
    const char *k;
    json_t *child;

    for (const struct tj_sfield *f = n->fields; f->name; f++) {
        if (f->required && !json_object_get(v, f->name)) {
            size_t old = push(w, f->name, 0);
            tj_err(w->e, w->doc, v, "Required", w->path, "Required value");
            w->path[old] = '\0';
        }
    }
    json_object_foreach((json_t *)v, k, child)
    {
        const struct tj_sfield *f = n->fields;
        size_t old;

        while (f->name && strcmp(f->name, k) != 0)
            f++;
        old = push(w, k, 0);
        if (f->name) {
            const json_t *obj = w->obj;
            const char *key = w->key;
            w->obj = v;
            w->key = k;
            walk_node(w, f->node, child);
            w->obj = obj;
            w->key = key;
        } else if (!n->open) {
            size_t before = w->e->n;
            const char *near = closest_field(n, k);
            if (removed_hint(w->path))
                tj_err(w->e, w->doc, child, "Unknown", w->path, "unknown field \"%s\": %s", w->path,
                       removed_hint(w->path));
            else if (near)
                tj_err(w->e, w->doc, child, "Unknown", w->path,
                       "unknown field \"%s\": did you mean %s?", w->path, near);
            else
                tj_err(w->e, w->doc, child, "Unknown", w->path, "unknown field \"%s\"", w->path);
            if (w->e->n > before) {
                w->e->items[before].parent = v;
                w->e->items[before].key = k;
            }
        }
        w->path[old] = '\0';
    }
}

static void walk_array(struct walk *w, const struct tj_snode *n, const json_t *v)
{
    size_t i;
    json_t *it;

    if (n->max_items && json_array_size(v) > n->max_items)
        tj_err(w->e, w->doc, v, "TooMany", w->path, "must have at most %zu items", n->max_items);
    json_array_foreach(v, i, it)
    {
        size_t old = push(w, NULL, i);
        /* null is "unset" for a field, but a list item cannot be unset: the API server refuses
         * it (every item schema of these lists is a non-nullable type) */
        if (json_is_null(it)) {
            size_t before = w->e->n;
            if (n->items->t == T_ANY)
                tj_err(w->e, w->doc, it, "Invalid", w->path, "must not be null");
            else
                type_error(w, n->items, it);
            if (w->e->n > before && w->obj) { /* null has no position: the list's key has */
                w->e->items[before].parent = w->obj;
                w->e->items[before].key = w->key;
            }
            w->path[old] = '\0';
            continue;
        }
        walk_node(w, n->items, it);
        if (n->list_key && json_is_object(it)) {
            json_t *key = json_object_get(it, n->list_key);
            for (size_t j = 0; key && j < i; j++) {
                if (json_equal(key, json_object_get(json_array_get(v, j), n->list_key))) {
                    tj_err(w->e, w->doc, it, "Duplicate", w->path, "duplicate entry with %s %s",
                           n->list_key,
                           json_is_string(key) ? json_string_value(key) : "(same value)");
                    break;
                }
            }
        }
        w->path[old] = '\0';
    }
}

static void walk_node(struct walk *w, const struct tj_snode *n, const json_t *v)
{
    if (n->t == T_ANY)
        return;
    if (json_is_null(v))
        return; /* null means "unset" in Kubernetes JSON */
    if (!type_ok(n, v)) {
        type_error(w, n, v);
        return;
    }
    switch (n->t) {
    case T_OBJ:
        walk_object(w, n, v);
        break;
    case T_MAP: {
        const char *k;
        json_t *child;
        json_object_foreach((json_t *)v, k, child)
        {
            size_t old = push(w, k, 0);
            walk_node(w, n->items, child);
            w->path[old] = '\0';
        }
        break;
    }
    case T_ARR:
        walk_array(w, n, v);
        break;
    case T_STR: {
        size_t len = json_string_length(v);
        if (n->max_len && len > n->max_len)
            tj_err(w->e, w->doc, v, "TooLong", w->path, "may not be longer than %zu", n->max_len);
        if (len < n->min_len)
            tj_err(w->e, w->doc, v, "Invalid", w->path, "should be at least %zu chars long",
                   n->min_len);
        if (n->enums) {
            const char *s = json_string_value(v);
            const char *const *e = n->enums;
            while (*e && strcmp(*e, s) != 0)
                e++;
            if (!*e) {
                char list[256] = "";
                for (e = n->enums; *e; e++) {
                    size_t l = strlen(list);
                    snprintf(list + l, sizeof(list) - l, "%s\"%s\"", l ? ", " : "", *e);
                }
                tj_err(w->e, w->doc, v, "NotSupported", w->path,
                       "Unsupported value: \"%s\": supported values: %s", s, list);
            }
        }
        break;
    }
    case T_TIME:
        if (!is_rfc3339(json_string_value(v)))
            tj_err(w->e, w->doc, v, "Invalid", w->path,
                   "must be an RFC 3339 date-time, like \"2026-01-02T15:04:05Z\"");
        break;
    case T_I32:
    case T_I64: {
        long long x = json_integer_value(v);
        if (n->t == T_I32 && (x < -2147483648LL || x > 2147483647LL)) {
            tj_err(w->e, w->doc, v, "Invalid", w->path, "%lld is out of range for a 32-bit integer",
                   x);
            break;
        }
        if (n->has_min && x < n->min)
            tj_err(w->e, w->doc, v, "Invalid", w->path,
                   "Invalid value: %lld: should be greater than or equal to %lld", x, n->min);
        if (n->has_max && x > n->max)
            tj_err(w->e, w->doc, v, "Invalid", w->path,
                   "Invalid value: %lld: should be less than or equal to %lld", x, n->max);
        break;
    }
    case T_QTY: {
        struct common_quantity q;
        struct common_error qe;
        if (tj_quantity(v, &q, &qe))
            tj_err(w->e, w->doc, v, "Invalid", w->path, "%s", qe.msg);
        break;
    }
    default:
        break;
    }
}

void tj_schema_check(enum tj_schema_kind kind, const json_t *obj, struct trainjob_errors *e)
{
    struct walk w;

    w.e = e;
    w.doc = obj;
    w.obj = NULL;
    w.key = NULL;
    w.path[0] = '\0';
    walk_node(&w, kind == TJ_SCHEMA_TRAINJOB ? &trainjob_node : &runtime_node, obj);
}
