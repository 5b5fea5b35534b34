/*
 * tests/unit/test_trainer_parity.c - what trainsched builds from matches a Kubeflow Trainer
 * v2.3.0 install.
 *
 *  - Every `default:` of the runtime CRDs (ours in manifests/crds, and Trainer's own from its
 *    Go module when present) is applied by tj_default_runtime: for each default the test builds
 *    the smallest runtime that holds its parent object and checks the value written.
 *  - The built-in ClusterTrainingRuntimes (manifests/runtimes, compiled in) equal what
 *    `kubectl apply -k` of Trainer's manifests/overlays/runtimes and overlays/data-cache
 *    creates: the base runtimes with the overlay's labels and image tags applied.
 *  - TorchTune's admission checks refuse what Trainer's validateTorchTune refuses, in the words
 *    of its format strings (read from its torchtune.go) and with its values.
 * Trainer's module is read from the Go module cache at test time
 * ($TRAINSCHED_TRAINER_MODULE, else $GOMODCACHE or $HOME/go/pkg/mod
 * + /github.com/kubeflow/trainer/v2@v2.3.0); when it is absent those cases say so on standard
 * error and pass (the module proxy serves it: `go mod download
 * github.com/kubeflow/trainer/v2@v2.3.0`).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/yaml.h"
#include "testutil.h"
#include "trainjob/builtin.h"
#include "trainjob/trainjob_int.h"

#define TRAINER_MODULE "github.com/kubeflow/trainer/v2@v2.3.0"

static const char *module_dir(void)
{
    static char dir[2048];
    const char *env = getenv("TRAINSCHED_TRAINER_MODULE");
    struct stat st;

    if (env && *env)
        snprintf(dir, sizeof(dir), "%s", env);
    else if (getenv("GOMODCACHE") && *getenv("GOMODCACHE"))
        snprintf(dir, sizeof(dir), "%s/%s", getenv("GOMODCACHE"), TRAINER_MODULE);
    else
        snprintf(dir, sizeof(dir), "%s/go/pkg/mod/%s", getenv("HOME") ? getenv("HOME") : "/root",
                 TRAINER_MODULE);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "SKIPPED: Kubeflow Trainer's Go module is not at %s (set "
                "TRAINSCHED_TRAINER_MODULE, or run `go mod download %s`): the comparison with "
                "Trainer's own manifests did not run\n",
                dir, "github.com/kubeflow/trainer/v2@v2.3.0");
        return NULL;
    }
    return dir;
}

static json_t *load_one(const char *path)
{
    struct common_yaml_docs d;
    struct common_error e;
    json_t *v;

    memset(&d, 0, sizeof(d));
    ck_assert_msg(common_yaml_load_file(path, NULL, &d, &e) == 0, "%s: %s", path, e.msg);
    ck_assert_msg(d.n >= 1, "%s: no document", path);
    v = json_incref(d.docs[0]);
    common_yaml_docs_free(&d);
    return v;
}

/* ---- CRD defaults ---- */

/* the smallest runtime holding the parent object of a default at path (segments of keys;
 * "[]" after a key: a list of one item), with the field itself absent */
static json_t *skeleton(char **segs, int n)
{
    json_t *root = json_object(), *cur = root;

    for (int i = 0; i < n; i++) {
        size_t len = strlen(segs[i]);
        json_t *next = json_object();
        if (len > 2 && strcmp(segs[i] + len - 2, "[]") == 0) {
            char key[128];
            snprintf(key, sizeof(key), "%.*s", (int)(len - 2), segs[i]);
            json_object_set_new(cur, key, json_pack("[o]", next));
        } else {
            json_object_set_new(cur, segs[i], next);
        }
        cur = next;
    }
    return root;
}

static json_t *value_at(json_t *v, char **segs, int n)
{
    for (int i = 0; i < n && v; i++) {
        size_t len = strlen(segs[i]);
        if (len > 2 && strcmp(segs[i] + len - 2, "[]") == 0) {
            char key[128];
            snprintf(key, sizeof(key), "%.*s", (int)(len - 2), segs[i]);
            v = json_array_get(json_object_get(v, key), 0);
        } else {
            v = json_object_get(v, segs[i]);
        }
    }
    return v;
}

/* walk an openAPIV3Schema; for each property with a default, check it is applied */
static int check_defaults(const json_t *schema, char **segs, int n, const char *file)
{
    const char *k;
    json_t *prop;
    int found = 0;

    json_object_foreach(json_object_get(schema, "properties"), k, prop)
    {
        char buf[160];
        if (n >= 30)
            break;
        segs[n] = strdup(k);
        if (json_object_get(prop, "default")) {
            json_t *rt = skeleton(segs, n), *d, *got;
            char *want_s, *got_s;
            found++;
            d = tj_default_runtime(rt);
            ck_assert_ptr_nonnull(d);
            got = value_at(d, segs, n + 1);
            want_s = json_dumps(json_object_get(prop, "default"), JSON_ENCODE_ANY);
            got_s = got ? json_dumps(got, JSON_ENCODE_ANY) : strdup("(absent)");
            buf[0] = '\0';
            for (int i = 0; i <= n; i++) {
                size_t l = strlen(buf);
                snprintf(buf + l, sizeof(buf) - l, "%s%s", i ? "." : "", segs[i]);
            }
            ck_assert_msg(got && json_equal(got, json_object_get(prop, "default")),
                          "%s: default of %s is %s, tj_default_runtime wrote %s", file, buf, want_s,
                          got_s);
            free(want_s);
            free(got_s);
            json_decref(rt);
            json_decref(d);
        }
        found += check_defaults(prop, segs, n + 1, file);
        if (json_is_object(json_object_get(prop, "items"))) {
            size_t len = strlen(k);
            char *s = malloc(len + 3);
            snprintf(s, len + 3, "%s[]", k);
            free(segs[n]);
            segs[n] = s;
            found += check_defaults(json_object_get(prop, "items"), segs, n + 1, file);
        }
        free(segs[n]);
    }
    return found;
}

static void check_crd_file(const char *path)
{
    json_t *crd = load_one(path);
    json_t *schema = json_object_get(
        json_object_get(
            json_array_get(json_object_get(json_object_get(crd, "spec"), "versions"), 0), "schema"),
        "openAPIV3Schema");
    char *segs[32];
    int n;

    ck_assert_msg(json_is_object(schema), "%s: no openAPIV3Schema", path);
    n = check_defaults(schema, segs, 0, path);
    /* the runtime CRDs of Trainer v2.3.0 hold 59 defaults; fewer means the walk missed some */
    ck_assert_msg(n >= 59, "%s: only %d defaults found", path, n);
    json_decref(crd);
}

START_TEST(every_default_of_our_runtime_crds_is_applied)
{
    char path[4096];

    snprintf(path, sizeof(path),
             "%s/manifests/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml", TS_SOURCE_DIR);
    check_crd_file(path);
    snprintf(path, sizeof(path), "%s/manifests/crds/trainer.kubeflow.org_trainingruntimes.yaml",
             TS_SOURCE_DIR);
    check_crd_file(path);
}
END_TEST

START_TEST(every_default_of_trainers_runtime_crds_is_applied)
{
    const char *dir = module_dir();
    char path[4096];

    if (!dir)
        return;
    snprintf(path, sizeof(path),
             "%s/manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml", dir);
    check_crd_file(path);
    snprintf(path, sizeof(path),
             "%s/manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml", dir);
    check_crd_file(path);
}
END_TEST

/* ---- built-in runtimes ---- */

/* the runtimes a kustomization (dir) lists, following the resources whose path names runtimes
 * (the data-cache overlay also installs the manager and LeaderWorkerSet) */
static void collect_runtimes(const char *dir, json_t *out)
{
    char path[4096];
    json_t *k, *r;
    size_t i;

    snprintf(path, sizeof(path), "%s/kustomization.yaml", dir);
    k = load_one(path);
    json_array_foreach(json_object_get(k, "resources"), i, r)
    {
        const char *res = json_string_value(r);
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, res);
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (strstr(res, "runtimes") || strstr(dir, "runtimes"))
                collect_runtimes(path, out);
        } else {
            struct common_yaml_docs d;
            struct common_error e;
            memset(&d, 0, sizeof(d));
            ck_assert_msg(common_yaml_load_file(path, NULL, &d, &e) == 0, "%s: %s", path, e.msg);
            for (size_t j = 0; j < d.n; j++) {
                const char *kind = json_string_value(json_object_get(d.docs[j], "kind"));
                if (kind && strcmp(kind, "ClusterTrainingRuntime") == 0)
                    json_array_append(out, d.docs[j]);
            }
            common_yaml_docs_free(&d);
        }
    }
    json_decref(k);
}

/* kustomize's images transformer: every "image" of a container whose name (before the tag
 * or digest) is one of images[].name gets newTag */
static void set_images(json_t *v, const json_t *images)
{
    const char *k;
    json_t *c;
    size_t i;

    if (json_is_array(v)) {
        json_array_foreach(v, i, c) set_images(c, images);
        return;
    }
    json_object_foreach(v, k, c)
    {
        if (strcmp(k, "image") == 0 && json_is_string(c)) {
            char name[512];
            const char *s = json_string_value(c), *slash = strrchr(s, '/');
            const char *colon = strchr(slash ? slash : s, ':'), *at = strchr(s, '@');
            size_t n = at ? (size_t)(at - s) : colon ? (size_t)(colon - s) : strlen(s);
            json_t *img;
            snprintf(name, sizeof(name), "%.*s", (int)n, s);
            json_array_foreach(images, i, img)
            {
                if (strcmp(json_string_value(json_object_get(img, "name")), name) == 0) {
                    char full[600];
                    snprintf(full, sizeof(full), "%s:%s", name,
                             json_string_value(json_object_get(img, "newTag")));
                    json_object_set_new(v, k, json_string(full));
                }
            }
        } else {
            set_images(c, images);
        }
    }
}

/* the overlay's runtimes with its labels (metadata only: includeSelectors false) and images */
static void overlay_runtimes(const char *dir, json_t *out)
{
    char path[4096];
    json_t *k = NULL, *list = json_array(), *rt, *lab;
    size_t i, j;

    snprintf(path, sizeof(path), "%s/kustomization.yaml", dir);
    k = load_one(path);
    collect_runtimes(dir, list);
    json_array_foreach(list, i, rt)
    {
        json_t *meta = json_object_get(rt, "metadata");
        json_array_foreach(json_object_get(k, "labels"), j, lab)
        {
            json_t *labels = json_object_get(meta, "labels");
            if (!labels) {
                labels = json_object();
                json_object_set_new(meta, "labels", labels);
            }
            json_object_update(labels, json_object_get(lab, "pairs"));
        }
        set_images(rt, json_object_get(k, "images"));
        json_array_append(out, rt);
    }
    json_decref(list);
    json_decref(k);
}

/* first path where a and b differ, into where */
static int first_diff(const json_t *a, const json_t *b, char *where, size_t n)
{
    size_t len = strlen(where);

    if (json_equal((json_t *)a, (json_t *)b))
        return 0;
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            snprintf(where + len, n - len, ".%s", k);
            if (first_diff(v, json_object_get(b, k), where, n))
                return 1;
        }
        json_object_foreach((json_t *)b, k, v)
        {
            snprintf(where + len, n - len, ".%s", k);
            if (!json_object_get(a, k))
                return 1;
        }
    } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(where + len, n - len, "[%zu]", i);
            if (first_diff(json_array_get(a, i), json_array_get(b, i), where, n))
                return 1;
        }
    }
    where[len] = '\0';
    return 1;
}

START_TEST(builtin_runtimes_are_what_a_trainer_install_creates)
{
    const char *dir = module_dir();
    char path[4096];
    json_t *up = json_array(), *rt;
    size_t i, nbuiltin = 0;

    if (!dir) {
        json_decref(up);
        return;
    }
    snprintf(path, sizeof(path), "%s/manifests/overlays/runtimes", dir);
    overlay_runtimes(path, up);
    snprintf(path, sizeof(path), "%s/manifests/overlays/data-cache", dir);
    overlay_runtimes(path, up);
    for (const struct trainjob_builtin *b = trainjob_builtins; b->name; b++)
        nbuiltin++;
    ck_assert_msg(json_array_size(up) == nbuiltin,
                  "Trainer installs %zu ClusterTrainingRuntimes, trainsched has %zu built in",
                  json_array_size(up), nbuiltin);
    json_array_foreach(up, i, rt)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(rt, "metadata"), "name"));
        const struct trainjob_builtin *b = trainjob_builtin_find(name);
        struct common_yaml_docs d;
        struct common_error e;
        char where[1024] = "";

        ck_assert_msg(b != NULL, "Trainer's runtime %s is not built in", name);
        memset(&d, 0, sizeof(d));
        ck_assert_int_eq(common_yaml_load(b->yaml, b->len, b->name, NULL, &d, &e), 0);
        ck_assert_int_eq(d.n, 1);
        ck_assert_msg(!first_diff(rt, d.docs[0], where, sizeof(where)),
                      "built-in runtime %s differs from Trainer v2.3.0's at %s", name, where);
        common_yaml_docs_free(&d);
    }
    json_decref(up);
}
END_TEST

/* ---- what the Kubeflow SDK reads ---- */

START_TEST(public_configmap_names_the_versions_and_is_listed)
{
    char path[4096];
    struct common_yaml_docs d;
    struct common_error e;
    json_t *cm = NULL, *k;
    int role = 0, binding = 0, listed = 0;
    size_t i;
    json_t *r;

    snprintf(path, sizeof(path), "%s/manifests/public/kubeflow-trainer-public.yaml", TS_SOURCE_DIR);
    memset(&d, 0, sizeof(d));
    ck_assert_msg(common_yaml_load_file(path, NULL, &d, &e) == 0, "%s: %s", path, e.msg);
    for (i = 0; i < d.n; i++) {
        const char *kind = json_string_value(json_object_get(d.docs[i], "kind"));
        const json_t *meta = json_object_get(d.docs[i], "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        if (!kind || !name || strcmp(name, "kubeflow-trainer-public") != 0)
            continue;
        ck_assert_str_eq(ns, "kubeflow-system");
        if (strcmp(kind, "ConfigMap") == 0)
            cm = d.docs[i];
        role += strcmp(kind, "Role") == 0;
        binding += strcmp(kind, "RoleBinding") == 0;
    }
    ck_assert_msg(cm && role == 1 && binding == 1,
                  "%s: ConfigMap, Role and RoleBinding "
                  "kubeflow-trainer-public in kubeflow-system expected",
                  path);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(cm, "data"), "kubeflow_trainer_version")),
        "v2.3.0");
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(cm, "data"), "trainsched_version")),
        TS_VERSION);
    common_yaml_docs_free(&d);
    snprintf(path, sizeof(path), "%s/manifests/kustomization.yaml", TS_SOURCE_DIR);
    k = load_one(path);
    json_array_foreach(json_object_get(k, "resources"), i, r) listed +=
        strcmp(json_string_value(r), "public/kubeflow-trainer-public.yaml") == 0;
    ck_assert_msg(listed == 1, "manifests/kustomization.yaml does not list the public ConfigMap");
    json_decref(k);
}
END_TEST

/* ---- TorchTune's admission checks, in Trainer's words ---- */

/* the Go string literal of src that holds phrase, with "%v" replaced by v and "%q" by q quoted
 * (the format strings of torchtune.go take one of either) */
static char *go_literal(const char *src, const char *phrase, const char *v, const char *q)
{
    const char *p = strstr(src, phrase), *b, *e;
    char out[512];
    size_t n = 0;

    ck_assert_msg(p != NULL, "torchtune.go has no \"%s\" any more", phrase);
    if (*p == '"') /* a phrase that starts the literal (its words are in a comment too) */
        b = ++p;
    else
        for (b = p; b > src && b[-1] != '"'; b--)
            ;
    e = strchr(p, '"');
    ck_assert(e != NULL);
    for (const char *c = b; c < e && n + 64 < sizeof(out); c++) {
        if (c[0] == '%' && (c[1] == 'v' || c[1] == 'q')) {
            n += (size_t)snprintf(out + n, sizeof(out) - n, c[1] == 'v' ? "%s" : "\"%s\"",
                                  c[1] == 'v' ? v : q);
            c++;
        } else {
            out[n++] = *c;
        }
    }
    out[n] = '\0';
    return strdup(out);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;

    ck_assert_msg(f != NULL, "%s: cannot open", path);
    ck_assert(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0);
    buf = malloc((size_t)n + 1);
    ck_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* render trainjob (JSON text) on the built-in runtime rt_name; the errors it gives must include
 * want (the whole apimachinery text: "<path>: Invalid value: <value>: <detail>") */
static void refused_with(const char *trainjob, const char *rt_name, const char *want)
{
    const struct trainjob_builtin *b = trainjob_builtin_find(rt_name);
    struct common_arena *a = common_arena_create(0);
    struct common_yaml_docs d;
    struct trainjob_output out;
    struct common_error e = {0};
    json_error_t je;
    json_t *tj = json_loads(trainjob, 0, &je);
    enum common_rc rc;
    int found = 0;
    char all[4096] = "";

    ck_assert_msg(tj != NULL, "test TrainJob: %s", je.text);
    ck_assert(b != NULL && a != NULL);
    memset(&d, 0, sizeof(d));
    ck_assert(common_yaml_load(b->yaml, b->len, rt_name, NULL, &d, &e) == COMMON_OK && d.n >= 1);
    trainjob_errors_init(&out.errors, a);
    rc = trainjob_render(a, tj, d.docs[0], NULL, &out, &e);
    ck_assert_msg(rc == COMMON_EINVAL, "%s: admitted, want \"%s\"", trainjob, want);
    for (size_t i = 0; i < out.errors.n; i++) {
        const char *t = trainjob_errors_format(&out.errors, i);
        found |= t && strcmp(t, want) == 0;
        snprintf(all + strlen(all), sizeof(all) - strlen(all), "\n  %s", t ? t : "?");
    }
    ck_assert_msg(found, "%s: want\n  %s\ngot:%s", trainjob, want, all);
    common_yaml_docs_free(&d);
    json_decref(tj);
    common_arena_destroy(a);
}

/* Trainer v2.3.0's validateTorchTune: its inputs (numProcPerNode "auto" when unset, not the CPU
 * count) and its format strings, read from its own source in the module cache */
START_TEST(torchtune_checks_refuse_what_trainers_refuse_in_its_words)
{
    const char *dir = module_dir();
    char path[4096];
    char *src, *w;
    char want[1024];

    if (!dir)
        return;
    snprintf(path, sizeof(path), "%s/pkg/runtime/framework/plugins/torch/torchtune.go", dir);
    src = read_text(path);
    /* QLoRA, one node, CPUs only, no numProcPerNode: the distributed QLoRA config */
    w = go_literal(src, "must be auto or 1 for", "llama3_2/1B", NULL);
    snprintf(want, sizeof(want), "spec.trainer.numProcPerNode: Invalid value: \"auto\": %s", w);
    refused_with("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
                 "\"metadata\":{\"name\":\"a\",\"namespace\":\"default\"},\"spec\":{\"runtimeRef\":"
                 "{\"name\":\"torchtune-llama3.2-1b\"},\"trainer\":{\"command\":[\"tune\",\"run\"],"
                 "\"numNodes\":1,\"args\":[\"model.quantize_base=True\"],\"resourcesPerNode\":"
                 "{\"limits\":{\"cpu\":\"2000m\"}}}}}",
                 "torchtune-llama3.2-1b", want);
    free(w);
    w = go_literal(src, "must have gpu resource with value 1", "llama3_2/1B", NULL);
    snprintf(want, sizeof(want),
             "spec.trainer.resourcesPerNode: Invalid value: {\"limits\":{\"cpu\":\"2\"}}: %s", w);
    refused_with("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
                 "\"metadata\":{\"name\":\"a\",\"namespace\":\"default\"},\"spec\":{\"runtimeRef\":"
                 "{\"name\":\"torchtune-llama3.2-1b\"},\"trainer\":{\"command\":[\"tune\",\"run\"],"
                 "\"numNodes\":1,\"args\":[\"model.quantize_base=True\"],\"resourcesPerNode\":"
                 "{\"limits\":{\"cpu\":\"2000m\"}}}}}",
                 "torchtune-llama3.2-1b", want);
    free(w);
    /* LoRA on two nodes */
    w = go_literal(src, "\"LoRA fine-tuning is not supported", "", NULL);
    snprintf(want, sizeof(want), "spec.trainer.numNodes: Invalid value: 2: %s", w);
    refused_with("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
                 "\"metadata\":{\"name\":\"a\",\"namespace\":\"default\"},\"spec\":{\"runtimeRef\":"
                 "{\"name\":\"torchtune-llama3.2-3b\"},\"trainer\":{\"command\":[\"tune\",\"run\"],"
                 "\"numNodes\":2,\"args\":[\"model.lora_attn_modules=[q_proj]\"]}}}",
                 "torchtune-llama3.2-3b", want);
    free(w);
    /* a runtime-managed arg */
    w = go_literal(src, "must not set immutable config", NULL, "output_dir");
    snprintf(want, sizeof(want), "spec.trainer.args[0]: Invalid value: \"output_dir=/x\": %s", w);
    refused_with(
        "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
        "\"metadata\":{\"name\":\"a\",\"namespace\":\"default\"},\"spec\":{\"runtimeRef\":"
        "{\"name\":\"torchtune-qwen2.5-1.5b\"},\"trainer\":{\"command\":[\"tune\",\"run\"],"
        "\"args\":[\"output_dir=/x\"]}}}",
        "torchtune-qwen2.5-1.5b", want);
    free(w);
    free(src);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trainer parity");
    TCase *tc = tcase_create("parity");

    tcase_add_test(tc, every_default_of_our_runtime_crds_is_applied);
    tcase_add_test(tc, every_default_of_trainers_runtime_crds_is_applied);
    tcase_add_test(tc, builtin_runtimes_are_what_a_trainer_install_creates);
    tcase_add_test(tc, public_configmap_names_the_versions_and_is_listed);
    tcase_add_test(tc, torchtune_checks_refuse_what_trainers_refuse_in_its_words);
    /* reads large CRD files from disk: generous, as for any test that does I/O */
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
