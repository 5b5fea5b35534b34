/*
 * tests/e2e/test_crds.c - our CRDs (manifests/crds/) and the upstream Trainer v2.3.0 CRDs
 * accept and reject the same objects.
 *
 * For each CRD set in turn, upstream (the Go module cache, as tests/e2e/testbed/up.sh finds
 * it) and then ours, the three trainer.kubeflow.org CRDs on the test bed are replaced (delete,
 * wait until gone, create, wait until Established and until the API server answers with the
 * new schema), and the whole corpus runs in a fresh namespace: every case's steps (create,
 * update or status update, all with fieldValidation=Strict), recording for the last step
 * accepted/rejected, the HTTP status and message, and for an accepted object what the API
 * server stored (its defaults applied). Then, per case: each set's verdict must be the one the
 * case file expects; both sets must give the same verdict and HTTP status and store the same
 * object, unless the case documents a deliberate divergence (expect_divergence: true, with
 * the reason and the verdict of each set), which must then be exactly as documented.
 * Differences are printed as a table.
 *
 * Corpus: tests/fixtures/crds/<area>/<case>.yaml (format in tests/fixtures/crds/README.md) and
 * every built-in runtime in manifests/runtimes/ (expected to be accepted).
 * Replacing the CRDs deletes every TrainJob and runtime on the bed: the e2e suites run one at
 * a time. Our CRDs stay installed at the end (the other suites pass with them); set
 * TRAINSCHED_CRDS_LEAVE=upstream to put upstream's back. TRAINSCHED_UPSTREAM_TRAINER_CRDS=DIR
 * overrides where upstream's CRD files are read from.
 *
 * With our CRDs installed, the printer columns are checked as `kubectl get trainjobs` gets
 * them (the API server's Table): Trainer's State and Age, then Status and Reason of the last
 * condition (Message with -o wide), so ResourcesCreated=False does not read like a healthy job.
 *
 * Also printed, not asserted: where trainsched's own offline validation (trainjob/schema.c,
 * validate.c) disagrees with the API server about a create-only case.
 */
#include <check.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/kube.h"
#include "common/kubeconfig.h"
#include "common/yaml.h"
#include "e2eutil.h"
#include "trainjob/trainjob.h"

#define NSETS 2
enum { UPSTREAM, OURS };
static const char *const set_name[NSETS] = {"upstream", "ours"};

static const char *const crd_names[] = {"trainjobs.trainer.kubeflow.org",
                                        "trainingruntimes.trainer.kubeflow.org",
                                        "clustertrainingruntimes.trainer.kubeflow.org"};
#define NCRDS (sizeof(crd_names) / sizeof(crd_names[0]))
#define CRD_PATH "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

enum verdict { V_NONE, V_ACCEPT, V_REJECT, V_SETUP_FAILED };
static const char *const verdict_word[] = {"-", "accept", "reject", "setup-failed"};

enum op { OP_CREATE, OP_UPDATE, OP_STATUS };

struct outcome {
    enum verdict v;
    long code;
    char msg[1024];
    json_t *obj; /* accepted: the object read back, normalized */
};

struct tcase {
    char id[160];
    char file[1024];
    json_t *header;
    json_t *docs; /* array of step documents */
    enum op ops[8];
    const struct common_kube_resource *res;
    enum verdict expect[NSETS];
    int divergence, webhook_only;
    const char *field, *reason;
    long code;
    struct outcome out[NSETS];
};

static struct common_kube *kube;
static struct tcase *cases;
static size_t ncases;

/* ------------------------------------------------------------------------------- helpers */

static void copy_msg(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void append(char *buf, size_t size, const char *s)
{
    size_t at = strlen(buf);
    snprintf(buf + at, size - at, "%s", s);
}

/* One request; returns the HTTP status (0 on a transport failure). *out (may be NULL) gets
 * the decoded body; msg (may be NULL) the Status message of an error answer. */
static long call(const char *method, const char *path, const json_t *body, json_t **out, char *msg,
                 size_t msgsize)
{
    struct common_buf resp;
    struct common_error err;
    long status = 0;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_t *decoded = NULL;

    ck_assert_msg(!body || text, "out of memory");
    common_buf_init(&resp, (size_t)64 << 20);
    err.msg[0] = '\0';
    common_kube_request(kube, method, path, body ? "application/json" : NULL, text,
                        text ? strlen(text) : 0, NULL, &resp, &status, &err);
    if (resp.data)
        decoded = json_loadb(resp.data, resp.len, 0, NULL);
    if (msg) {
        const char *m = json_string_value(json_object_get(decoded, "message"));
        copy_msg(msg, msgsize, status >= 200 && status < 300 ? "" : m ? m : err.msg);
    }
    if (out)
        *out = decoded;
    else
        json_decref(decoded);
    free(text);
    common_buf_free(&resp);
    return status;
}

/* A path like spec.trainer.args[0] or status.conditions[1].type (keys without dots). */
struct ptok {
    int is_index;
    size_t idx;
    char key[128];
};

static int tokenize(const char *path, struct ptok *t, int max)
{
    int n = 0;
    const char *p = path;

    while (*p) {
        if (*p == '.') {
            p++;
            continue;
        }
        if (n >= max)
            return -1;
        if (*p == '[') {
            char *end;
            unsigned long x = strtoul(p + 1, &end, 10);
            if (*end != ']')
                return -1;
            t[n].is_index = 1;
            t[n].idx = x;
            p = end + 1;
        } else {
            size_t len = strcspn(p, ".[");
            if (len >= sizeof(t[n].key))
                return -1;
            memcpy(t[n].key, p, len);
            t[n].key[len] = '\0';
            t[n].is_index = 0;
            p += len;
        }
        n++;
    }
    return n;
}

static json_t *step(json_t *v, const struct ptok *t)
{
    return t->is_index ? json_array_get(v, t->idx) : json_object_get(v, t->key);
}

static json_t *path_get(json_t *root, const char *path)
{
    struct ptok t[32];
    int n = tokenize(path, t, 32);
    json_t *v = root;

    ck_assert_msg(n > 0, "bad path %s", path);
    for (int i = 0; i < n && v; i++)
        v = step(v, &t[i]);
    return v;
}

/* Replace the value at path (which must exist) with value (reference stolen). */
static int path_set(json_t *root, const char *path, json_t *value)
{
    struct ptok t[32];
    int n = tokenize(path, t, 32);
    json_t *v = root;

    if (n <= 0)
        return -1;
    for (int i = 0; i < n - 1 && v; i++)
        v = step(v, &t[i]);
    if (!v || !step(v, &t[n - 1])) {
        json_decref(value);
        return -1;
    }
    if (t[n - 1].is_index)
        return json_array_set_new(v, t[n - 1].idx, value);
    return json_object_set_new(v, t[n - 1].key, value);
}

/* The first path where a and b differ, into buf ("" when equal). */
static void first_diff(const json_t *a, const json_t *b, char *buf, size_t size, size_t at)
{
    if (json_equal(a, b))
        return;
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)a, k, x)
        {
            if (!json_equal(x, json_object_get(b, k))) {
                snprintf(buf + at, size - at, ".%s", k);
                first_diff(x, json_object_get(b, k), buf, size, strlen(buf));
                return;
            }
        }
        json_object_foreach((json_t *)b, k, x)
        {
            if (!json_object_get(a, k)) {
                snprintf(buf + at, size - at, ".%s (only in ours)", k);
                return;
            }
        }
    }
    if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++) {
            if (!json_equal(json_array_get(a, i), json_array_get(b, i))) {
                snprintf(buf + at, size - at, "[%zu]", i);
                first_diff(json_array_get(a, i), json_array_get(b, i), buf, size, strlen(buf));
                return;
            }
        }
    }
    if (at == 0)
        snprintf(buf, size, "(root)");
}

/* ------------------------------------------------------------------------------- corpus */

static enum verdict parse_verdict(const json_t *v, const char *file)
{
    const char *s = json_string_value(v);
    ck_assert_msg(s && (strcmp(s, "accept") == 0 || strcmp(s, "reject") == 0),
                  "%s: expect must be accept or reject", file);
    return strcmp(s, "accept") == 0 ? V_ACCEPT : V_REJECT;
}

static const struct common_kube_resource *resource_of(const char *kind)
{
    if (kind && strcmp(kind, "TrainJob") == 0)
        return &common_kube_trainjobs;
    if (kind && strcmp(kind, "TrainingRuntime") == 0)
        return &common_kube_trainingruntimes;
    if (kind && strcmp(kind, "ClusterTrainingRuntime") == 0)
        return &common_kube_clustertrainingruntimes;
    return NULL;
}

/* header "fill": [{path, length, char?, prefix?, doc?}]: long strings built here, not written
 * out in the fixture; the path must already hold a placeholder. */
static void apply_fill(struct tcase *c)
{
    size_t i;
    json_t *f;

    json_array_foreach(json_object_get(c->header, "fill"), i, f)
    {
        const char *path = json_string_value(json_object_get(f, "path"));
        json_int_t len = json_integer_value(json_object_get(f, "length"));
        const char *ch = json_string_value(json_object_get(f, "char"));
        const char *prefix = json_string_value(json_object_get(f, "prefix"));
        json_t *d = json_object_get(f, "doc");
        size_t doc = d ? (size_t)json_integer_value(d) : json_array_size(c->docs) - 1;
        size_t plen = prefix ? strlen(prefix) : 0;
        char *s;

        ck_assert_msg(path && len > 0 && (size_t)len >= plen, "%s: bad fill entry", c->file);
        s = malloc((size_t)len + 1);
        ck_assert_ptr_nonnull(s);
        memset(s, ch && ch[0] ? ch[0] : 'a', (size_t)len);
        if (plen)
            memcpy(s, prefix, plen);
        s[len] = '\0';
        ck_assert_msg(path_set(json_array_get(c->docs, doc), path, json_string(s)) == 0,
                      "%s: fill path %s does not exist in document %zu", c->file, path, doc);
        free(s);
    }
}

static void add_case(const char *file, const char *id, int builtin)
{
    struct common_yaml_docs y;
    struct common_error err;
    struct tcase *c;
    size_t first, ndocs;
    json_t *ops, *expect;

    memset(&y, 0, sizeof(y));
    ck_assert_msg(common_yaml_load_file(file, NULL, &y, &err) == COMMON_OK, "%s", err.msg);
    cases = realloc(cases, (ncases + 1) * sizeof(*cases));
    ck_assert_ptr_nonnull(cases);
    c = &cases[ncases++];
    memset(c, 0, sizeof(*c));
    snprintf(c->id, sizeof(c->id), "%s", id);
    snprintf(c->file, sizeof(c->file), "%s", file);
    first = builtin ? 0 : 1;
    ck_assert_msg(y.n > first, "%s: no object", file);
    if (builtin) {
        c->header = json_pack("{s:s}", "expect", "accept");
    } else {
        c->header = json_incref(y.docs[0]);
        ck_assert_msg(json_is_object(c->header) && !json_object_get(c->header, "apiVersion"),
                      "%s: the first document must be the case header", file);
    }
    ndocs = y.n - first;
    ck_assert_msg(ndocs <= sizeof(c->ops) / sizeof(c->ops[0]), "%s: too many steps", file);
    c->docs = json_array();
    for (size_t i = first; i < y.n; i++)
        json_array_append(c->docs, y.docs[i]);
    common_yaml_docs_free(&y);

    c->res = resource_of(json_string_value(json_object_get(json_array_get(c->docs, 0), "kind")));
    ck_assert_msg(c->res != NULL, "%s: unknown kind", file);
    ops = json_object_get(c->header, "ops");
    ck_assert_msg(!ops || json_array_size(ops) == ndocs, "%s: ops must name one op per document",
                  file);
    for (size_t i = 0; i < ndocs; i++) {
        const char *o = ops ? json_string_value(json_array_get(ops, i)) : NULL;
        if (!o)
            c->ops[i] = i == 0 ? OP_CREATE : OP_UPDATE;
        else if (strcmp(o, "create") == 0)
            c->ops[i] = OP_CREATE;
        else if (strcmp(o, "update") == 0)
            c->ops[i] = OP_UPDATE;
        else if (strcmp(o, "status") == 0)
            c->ops[i] = OP_STATUS;
        else
            ck_abort_msg("%s: unknown op %s", file, o);
        ck_assert_msg((i == 0) == (c->ops[i] == OP_CREATE), "%s: create comes first, once", file);
    }

    expect = json_object_get(c->header, "expect");
    c->divergence = json_is_true(json_object_get(c->header, "expect_divergence"));
    c->reason = json_string_value(json_object_get(c->header, "reason"));
    if (json_is_object(expect)) {
        c->expect[UPSTREAM] = parse_verdict(json_object_get(expect, "upstream"), file);
        c->expect[OURS] = parse_verdict(json_object_get(expect, "ours"), file);
    } else {
        c->expect[UPSTREAM] = c->expect[OURS] = parse_verdict(expect, file);
    }
    /* a divergence is declared exactly when the two sets are expected to differ, with why */
    ck_assert_msg(c->divergence == (c->expect[UPSTREAM] != c->expect[OURS]),
                  "%s: expect_divergence must be true exactly when the verdicts differ", file);
    ck_assert_msg(!c->divergence || (c->reason && c->reason[0]), "%s: a divergence needs a reason",
                  file);
    c->field = json_string_value(json_object_get(c->header, "field"));
    c->code = (long)json_integer_value(json_object_get(c->header, "code"));
    c->webhook_only = json_is_true(json_object_get(c->header, "webhook_only"));
    ck_assert_msg(c->expect[UPSTREAM] == V_REJECT || c->expect[OURS] == V_REJECT || !c->field,
                  "%s: field is for rejected cases", file);
    apply_fill(c);
}

static void load_corpus(void)
{
    glob_t g;
    char pattern[1024];
    size_t base = strlen(TS_SOURCE_DIR "/tests/fixtures/crds/");

    snprintf(pattern, sizeof(pattern), "%s/tests/fixtures/crds/*/*.yaml", TS_SOURCE_DIR);
    ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char id[160];
        snprintf(id, sizeof(id), "%.*s", (int)(strlen(g.gl_pathv[i]) - base - 5),
                 g.gl_pathv[i] + base);
        add_case(g.gl_pathv[i], id, 0);
    }
    globfree(&g);
    snprintf(pattern, sizeof(pattern), "%s/manifests/runtimes/*.yaml", TS_SOURCE_DIR);
    ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
    ck_assert_uint_eq(g.gl_pathc, 9);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *slash = strrchr(g.gl_pathv[i], '/');
        char id[160];
        snprintf(id, sizeof(id), "builtin/%.*s", (int)(strlen(slash + 1) - 5), slash + 1);
        add_case(g.gl_pathv[i], id, 1);
    }
    globfree(&g);
}

/* ------------------------------------------------------------------------------- CRD sets */

/* Where upstream's CRD files are: $TRAINSCHED_UPSTREAM_TRAINER_CRDS, else the module cache
 * directory of github.com/kubeflow/trainer/v2 at the test bed's pinned version (as up.sh). */
static void upstream_dir(char *out, size_t size)
{
    const char *env = getenv("TRAINSCHED_UPSTREAM_TRAINER_CRDS");
    char line[512], version[64] = "", cmd[1024];
    FILE *f;
    struct common_buf b;
    struct common_error err;
    json_t *info;

    if (env && env[0]) {
        snprintf(out, size, "%s", env);
        return;
    }
    f = fopen(TS_SOURCE_DIR "/tests/e2e/testbed/versions.env", "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "TRAINER_VERSION=", 16) == 0)
            snprintf(version, sizeof(version), "%.*s", (int)strcspn(line + 16, "\r\n \"#"),
                     line + 16);
    fclose(f);
    ck_assert_msg(version[0], "TRAINER_VERSION missing in versions.env");
    snprintf(cmd, sizeof(cmd),
             "cd / && GOFLAGS=-mod=mod go mod download -json github.com/kubeflow/trainer/v2@%s",
             version);
    f = popen(cmd, "r");
    ck_assert_msg(f != NULL, "cannot run go");
    common_buf_init(&b, 1 << 20);
    ck_assert_int_eq(common_buf_read_stream(&b, f, "go mod download", &err), COMMON_OK);
    pclose(f);
    info = b.data ? json_loadb(b.data, b.len, 0, NULL) : NULL;
    ck_assert_msg(json_string_value(json_object_get(info, "Dir")),
                  "go mod download found no Trainer %s: set TRAINSCHED_UPSTREAM_TRAINER_CRDS",
                  version);
    snprintf(out, size, "%s/manifests/base/crds", json_string_value(json_object_get(info, "Dir")));
    json_decref(info);
    common_buf_free(&b);
}

/* The CRD objects of one set, in crd_names order. */
static void load_crds(const char *dir, json_t *crds[NCRDS])
{
    for (size_t i = 0; i < NCRDS; i++) {
        struct common_yaml_docs y;
        struct common_error err;
        char file[1024];
        const char *plural_end = strchr(crd_names[i], '.');

        snprintf(file, sizeof(file), "%s/trainer.kubeflow.org_%.*s.yaml", dir,
                 (int)(plural_end - crd_names[i]), crd_names[i]);
        memset(&y, 0, sizeof(y));
        ck_assert_msg(common_yaml_load_file(file, NULL, &y, &err) == COMMON_OK, "%s", err.msg);
        crds[i] = NULL;
        for (size_t d = 0; d < y.n; d++) {
            const char *name =
                json_string_value(json_object_get(json_object_get(y.docs[d], "metadata"), "name"));
            if (name && strcmp(name, crd_names[i]) == 0)
                crds[i] = json_deep_copy(y.docs[d]);
        }
        common_yaml_docs_free(&y);
        ck_assert_msg(crds[i] != NULL, "%s: no CRD %s", file, crd_names[i]);
        json_object_del(crds[i], "status");
    }
}

static int crd_established(const char *name)
{
    char path[512];
    json_t *crd = NULL, *cond;
    size_t i;
    int ok = 0;

    snprintf(path, sizeof(path), CRD_PATH "/%s", name);
    if (call("GET", path, NULL, &crd, NULL, 0) != 200) {
        json_decref(crd);
        return 0;
    }
    json_array_foreach(json_object_get(json_object_get(crd, "status"), "conditions"), i, cond)
    {
        const char *type = json_string_value(json_object_get(cond, "type"));
        const char *status = json_string_value(json_object_get(cond, "status"));
        if (type && status && strcmp(type, "Established") == 0 && strcmp(status, "True") == 0)
            ok = 1;
    }
    json_decref(crd);
    return ok;
}

/* A dry-run create whose answer tells the two sets apart (upstream v2.3.0 accepts it, ours
 * rejects it): the API server serves the new schema once it answers as `which` does. */
static int serves_set(int which, const char *ns)
{
    static const char *const probes[NCRDS] = {
        "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
        "\"metadata\":{\"name\":\"probe\"},\"spec\":{\"runtimeRef\":{\"name\":\"x\"},"
        "\"trainer\":{\"numNodes\":-1}}}",
        "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainingRuntime\","
        "\"metadata\":{\"name\":\"probe\"},\"spec\":{\"mlPolicy\":{\"mpi\":"
        "{\"numProcPerNode\":0}}}}",
        "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"ClusterTrainingRuntime\","
        "\"metadata\":{\"name\":\"probe\"},\"spec\":{\"mlPolicy\":{\"mpi\":"
        "{\"numProcPerNode\":0}}}}"};
    const struct common_kube_resource *res[NCRDS] = {&common_kube_trainjobs,
                                                     &common_kube_trainingruntimes,
                                                     &common_kube_clustertrainingruntimes};

    for (size_t i = 0; i < NCRDS; i++) {
        char path[512];
        json_t *body = json_loads(probes[i], 0, NULL);
        long st;

        common_kube_path(res[i], ns, NULL, NULL, path, sizeof(path));
        append(path, sizeof(path), "?dryRun=All&fieldValidation=Strict");
        st = call("POST", path, body, NULL, NULL, 0);
        json_decref(body);
        if (which == UPSTREAM ? st != 201 : st != 422)
            return 0;
    }
    return 1;
}

/* Delete the three CRDs, wait until they are gone, create the set's, wait until served.
 * Returns 0, or -1 with the reason in why. */
static int install_set(int which, json_t *crds[NCRDS], const char *ns, char *why, size_t size)
{
    char path[512], msg[1024];
    double t0 = e2e_now_s();
    long st;

    for (size_t i = 0; i < NCRDS; i++) {
        snprintf(path, sizeof(path), CRD_PATH "/%s", crd_names[i]);
        st = call("DELETE", path, NULL, NULL, msg, sizeof(msg));
        if (st != 200 && st != 202 && st != 404) {
            snprintf(why, size, "DELETE %s: %ld %s", crd_names[i], st, msg);
            return -1;
        }
    }
    for (size_t i = 0; i < NCRDS; i++) {
        snprintf(path, sizeof(path), CRD_PATH "/%s", crd_names[i]);
        while ((st = call("GET", path, NULL, NULL, NULL, 0)) != 404) {
            if (e2e_now_s() - t0 > 120) {
                snprintf(why, size, "CRD %s still there after 120 s (%ld)", crd_names[i], st);
                return -1;
            }
            e2e_nap(200);
        }
    }
    for (size_t i = 0; i < NCRDS; i++) {
        st = call("POST", CRD_PATH, crds[i], NULL, msg, sizeof(msg));
        if (st != 201) {
            snprintf(why, size, "creating the %s CRD %s: %ld %s", set_name[which], crd_names[i], st,
                     msg);
            return -1;
        }
    }
    for (size_t i = 0; i < NCRDS; i++) {
        while (!crd_established(crd_names[i])) {
            if (e2e_now_s() - t0 > 120) {
                snprintf(why, size, "CRD %s not Established after 120 s", crd_names[i]);
                return -1;
            }
            e2e_nap(200);
        }
    }
    while (!serves_set(which, ns)) {
        if (e2e_now_s() - t0 > 120) {
            snprintf(why, size, "the API server does not serve the %s CRDs after 120 s",
                     set_name[which]);
            return -1;
        }
        e2e_nap(250);
    }
    printf("crds: %s CRDs installed in %.1f s\n", set_name[which], e2e_now_s() - t0);
    return 0;
}

/* Install upstream's CRDs (again): after a failure with ours, and when asked to at the end. */
static void restore_upstream(const char *dir)
{
    json_t *crds[NCRDS];
    char ns[64], why[1024];
    int rc;

    load_crds(dir, crds);
    e2e_make_ns(kube, "crds", ns, sizeof(ns));
    rc = install_set(UPSTREAM, crds, ns, why, sizeof(why));
    e2e_drop_ns(kube, ns);
    for (size_t i = 0; i < NCRDS; i++)
        json_decref(crds[i]);
    ck_assert_msg(rc == 0, "putting the upstream CRDs back: %s", why);
}

/* ------------------------------------------------------------------------------- running */

static void normalize(json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    static const char *const volatile_keys[] = {"uid", "resourceVersion", "creationTimestamp",
                                                "managedFields", "namespace"};
    for (size_t i = 0; i < sizeof(volatile_keys) / sizeof(volatile_keys[0]); i++)
        json_object_del(meta, volatile_keys[i]);
}

static void run_case(struct tcase *c, int which, const char *ns)
{
    struct outcome *o = &c->out[which];
    size_t n = json_array_size(c->docs);
    const char *name = json_string_value(
        json_object_get(json_object_get(json_array_get(c->docs, 0), "metadata"), "name"));
    char coll[512], obj[600], path[700];

    ck_assert_msg(name != NULL, "%s: no metadata.name", c->file);
    common_kube_path(c->res, ns, NULL, NULL, coll, sizeof(coll));
    common_kube_path(c->res, ns, name, NULL, obj, sizeof(obj));
    for (size_t i = 0; i < n; i++) {
        json_t *doc = json_deep_copy(json_array_get(c->docs, i)), *cur = NULL, *body;
        long st;

        if (c->res->namespaced)
            json_object_set_new(json_object_get(doc, "metadata"), "namespace", json_string(ns));
        if (c->ops[i] == OP_CREATE) {
            snprintf(path, sizeof(path), "%s?fieldValidation=Strict", coll);
            st = call("POST", path, doc, NULL, o->msg, sizeof(o->msg));
        } else {
            st = call("GET", obj, NULL, &cur, NULL, 0);
            ck_assert_msg(st == 200, "%s: GET before step %zu: %ld", c->id, i, st);
            snprintf(path, sizeof(path), "%s", obj);
            if (c->ops[i] == OP_UPDATE) {
                /* the document as the new object, at the current resourceVersion */
                json_object_set(
                    json_object_get(doc, "metadata"), "resourceVersion",
                    json_object_get(json_object_get(cur, "metadata"), "resourceVersion"));
                body = json_incref(doc);
            } else {
                /* the stored object with the document's status, to the status subresource */
                body = json_incref(cur);
                json_object_set(body, "status", json_object_get(doc, "status"));
                append(path, sizeof(path), "/status");
            }
            append(path, sizeof(path), "?fieldValidation=Strict");
            st = call("PUT", path, body, NULL, o->msg, sizeof(o->msg));
            json_decref(body);
            json_decref(cur);
        }
        json_decref(doc);
        o->code = st;
        ck_assert_msg(st != 0 && st < 500, "%s (%s): transport or server error %ld: %s", c->id,
                      set_name[which], st, o->msg);
        if (st >= 300 && i + 1 < n) {
            o->v = V_SETUP_FAILED;
            break;
        }
        if (i + 1 == n)
            o->v = st < 300 ? V_ACCEPT : V_REJECT;
    }
    if (o->v == V_ACCEPT) {
        ck_assert_int_eq(call("GET", obj, NULL, &o->obj, NULL, 0), 200);
        normalize(o->obj);
    }
    call("DELETE", obj, NULL, NULL, NULL, 0);
}

/* Install the set and run the corpus; returns 0, or -1 when the set could not be installed
 * (why says why). */
/* ------------------------------------------------------------------------ printer columns */

/* `kubectl get trainjobs` with our CRDs: the API server's Table for a TrainJob whose last
 * condition is ResourcesCreated=False shows State ResourcesCreated (Trainer's column) and the
 * Status and Reason that tell it from a healthy one. Returns "" or what is wrong (in why). */
static void check_printer_columns(const char *ns, char *why, size_t size)
{
    char path[512], msg[1024];
    struct common_buf resp;
    struct common_error err;
    long st = 0;
    json_t *tj, *got = NULL, *table = NULL, *cols, *cells;
    const char *want_cols[] = {"Name", "State", "Age", "Status", "Reason", "Message"};
    const char *want_cells[] = {
        "printer", "ResourcesCreated",        NULL,
        "False",   "TrainingRuntimeNotFound", "TrainingRuntime ns/x not found"};

    why[0] = '\0';
    tj = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s, s:s}}}", "apiVersion",
                   "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name",
                   "printer", "spec", "runtimeRef", "name", "x", "kind", "TrainingRuntime");
    snprintf(path, sizeof(path), "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs", ns);
    st = call("POST", path, tj, &got, msg, sizeof(msg));
    json_decref(tj);
    if (st != 201) {
        snprintf(why, size, "create: %ld %s", st, msg);
        goto out;
    }
    json_object_set_new(
        got, "status",
        json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}", "conditions", "type", "ResourcesCreated",
                  "status", "False", "reason", "TrainingRuntimeNotFound", "message",
                  "TrainingRuntime ns/x not found", "lastTransitionTime", "2027-01-01T00:00:00Z"));
    snprintf(path, sizeof(path),
             "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/printer/status", ns);
    st = call("PUT", path, got, NULL, msg, sizeof(msg));
    if (st != 200) {
        snprintf(why, size, "status update: %ld %s", st, msg);
        goto out;
    }
    snprintf(path, sizeof(path),
             "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/printer", ns);
    common_buf_init(&resp, (size_t)1 << 20);
    common_kube_request(kube, "GET", path, NULL, NULL, 0,
                        "application/json;as=Table;v=v1;g=meta.k8s.io", &resp, &st, &err);
    table = resp.data ? json_loadb(resp.data, resp.len, 0, NULL) : NULL;
    common_buf_free(&resp);
    if (st != 200 || !table) {
        snprintf(why, size, "GET as Table: %ld", st);
        goto out;
    }
    cols = json_object_get(table, "columnDefinitions");
    cells = json_object_get(json_array_get(json_object_get(table, "rows"), 0), "cells");
    for (size_t i = 0; i < sizeof(want_cols) / sizeof(want_cols[0]); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(cols, i), "name"));
        const char *cell = json_string_value(json_array_get(cells, i));
        if (!name || strcmp(name, want_cols[i]) != 0) {
            snprintf(why, size, "column %zu is %s, want %s", i, name ? name : "(none)",
                     want_cols[i]);
            goto out;
        }
        if (want_cells[i] && (!cell || strcmp(cell, want_cells[i]) != 0)) {
            snprintf(why, size, "column %s shows \"%s\", want \"%s\"", name, cell ? cell : "",
                     want_cells[i]);
            goto out;
        }
    }
    printf("crds: kubectl get trainjobs with our CRDs: %s %s %s (Message with -o wide)\n",
           want_cells[1], want_cells[3], want_cells[4]);
out:
    json_decref(got);
    json_decref(table);
}

static int run_set(int which, const char *dir, char *why, size_t size)
{
    json_t *crds[NCRDS];
    char ns[64];
    double t0;
    int rc;

    why[0] = '\0';
    load_crds(dir, crds);
    e2e_make_ns(kube, "crds", ns, sizeof(ns));
    rc = install_set(which, crds, ns, why, size);
    for (size_t i = 0; i < NCRDS; i++)
        json_decref(crds[i]);
    if (rc == 0) {
        t0 = e2e_now_s();
        for (size_t i = 0; i < ncases; i++)
            run_case(&cases[i], which, ns);
        printf("crds: %zu cases against the %s CRDs in %.1f s\n", ncases, set_name[which],
               e2e_now_s() - t0);
        if (which == OURS)
            check_printer_columns(ns, why, size);
        if (why[0])
            rc = -1;
    }
    e2e_drop_ns(kube, ns);
    return rc;
}

/* ------------------------------------------------------------------------------- verdicts */

/* What is wrong with case c (into why; "" when nothing). */
static void judge(const struct tcase *c, char *why, size_t size)
{
    size_t at = 0;
    why[0] = '\0';
#define WHY(...)                                                                                   \
    do {                                                                                           \
        if (at < size)                                                                             \
            at += (size_t)snprintf(why + at, size - at, __VA_ARGS__);                              \
    } while (0)

    for (int s = 0; s < NSETS; s++) {
        const struct outcome *o = &c->out[s];
        if (o->v != c->expect[s])
            WHY("%s: %s, expected %s; ", set_name[s], verdict_word[o->v],
                verdict_word[c->expect[s]]);
        if (o->v == V_REJECT && c->field && !strstr(o->msg, c->field))
            WHY("%s: answer does not name \"%s\"; ", set_name[s], c->field);
        if (c->code && !c->divergence && o->code != c->code)
            WHY("%s: HTTP %ld, expected %ld; ", set_name[s], o->code, c->code);
        if (o->v == V_ACCEPT) {
            const char *p;
            json_t *want;
            json_object_foreach(json_object_get(c->header, "check"), p, want)
            {
                json_t *got = path_get(o->obj, p);
                if (!(json_is_null(want) ? got == NULL : json_equal(got, want))) {
                    char *g = got ? json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
                    WHY("%s: %s is %s; ", set_name[s], p, g ? g : "absent");
                    free(g);
                }
            }
        }
    }
    if (!c->divergence) {
        if (c->out[UPSTREAM].code != c->out[OURS].code)
            WHY("HTTP %ld vs %ld; ", c->out[UPSTREAM].code, c->out[OURS].code);
        if (c->out[UPSTREAM].obj && c->out[OURS].obj &&
            !json_equal(c->out[UPSTREAM].obj, c->out[OURS].obj)) {
            char d[512] = "";
            first_diff(c->out[UPSTREAM].obj, c->out[OURS].obj, d, sizeof(d), 0);
            WHY("stored objects differ at %s; ", d);
        }
    }
#undef WHY
}

/* trainsched's offline validation of a create-only case, for the informational table. */
static enum verdict offline_verdict(const struct tcase *c, char *first, size_t size)
{
    struct common_arena *a = common_arena_create(0);
    struct trainjob_errors errs;
    struct common_error err;
    const json_t *doc = json_array_get(c->docs, 0);
    enum common_rc rc;

    ck_assert_ptr_nonnull(a);
    trainjob_errors_init(&errs, a);
    err.msg[0] = '\0';
    rc = c->res == &common_kube_trainjobs ? trainjob_validate_trainjob(doc, &errs, &err)
                                          : trainjob_validate_runtime(doc, &errs, &err);
    copy_msg(first, size, errs.n ? trainjob_errors_format(&errs, 0) : err.msg);
    common_arena_destroy(a);
    return rc == COMMON_OK ? V_ACCEPT : V_REJECT;
}

static void report(int *failures)
{
    size_t ndiv = 0, nacc = 0, nrej = 0, noff = 0;

    printf("\n%-58s %-8s %-13s %-13s %s\n", "case", "expect", "upstream", "ours", "result");
    for (size_t i = 0; i < ncases; i++) {
        const struct tcase *c = &cases[i];
        char why[2048], exp[16], up[32], ours[32];

        judge(c, why, sizeof(why));
        if (c->divergence)
            snprintf(exp, sizeof(exp), "%.1s/%.1s", verdict_word[c->expect[UPSTREAM]],
                     verdict_word[c->expect[OURS]]);
        else
            snprintf(exp, sizeof(exp), "%s", verdict_word[c->expect[OURS]]);
        snprintf(up, sizeof(up), "%s %ld", verdict_word[c->out[UPSTREAM].v], c->out[UPSTREAM].code);
        snprintf(ours, sizeof(ours), "%s %ld", verdict_word[c->out[OURS].v], c->out[OURS].code);
        printf("%-58s %-8s %-13s %-13s %s%s\n", c->id, exp, up, ours,
               why[0] ? "DIFFERENT: " : (c->divergence ? "divergence as documented" : "same"), why);
        if (why[0]) {
            (*failures)++;
            for (int s = 0; s < NSETS; s++)
                if (c->out[s].msg[0])
                    printf("    %s said: %.300s\n", set_name[s], c->out[s].msg);
        }
        ndiv += (size_t)c->divergence;
        nacc += c->out[OURS].v == V_ACCEPT;
        nrej += c->out[OURS].v == V_REJECT;
    }
    printf("crds: %zu cases (%zu accepted, %zu rejected by ours), %zu documented divergences, "
           "%d with differences\n",
           ncases, nacc, nrej, ndiv, *failures);

    printf("\ntrainsched's offline validation vs the API server (create-only cases; "
           "informational)\n");
    for (size_t i = 0; i < ncases; i++) {
        const struct tcase *c = &cases[i];
        char first[512];
        enum verdict api = c->out[OURS].v, off;

        if (json_array_size(c->docs) != 1 || api == V_SETUP_FAILED)
            continue;
        off = offline_verdict(c, first, sizeof(first));
        if (off == api)
            continue;
        noff++;
        printf("  %-56s api %-6s offline %-6s%s %.200s\n", c->id, verdict_word[api],
               verdict_word[off], c->webhook_only ? " (webhook rule)" : "", first);
    }
    printf("crds: offline validation disagrees with the API server on %zu cases\n", noff);
}

static void free_corpus(void)
{
    for (size_t i = 0; i < ncases; i++) {
        json_decref(cases[i].header);
        json_decref(cases[i].docs);
        for (int s = 0; s < NSETS; s++)
            json_decref(cases[i].out[s].obj);
    }
    free(cases);
    cases = NULL;
    ncases = 0;
}

/* ------------------------------------------------------------------------------- the test */

static void setup(void)
{
    struct common_kubeconfig cfg;
    struct common_error err;
    struct common_kube_opts o = common_kube_opts_default();
    const char *path = getenv("KUBECONFIG");

    ck_assert_msg(path != NULL, "KUBECONFIG is not set: start the test bed first "
                                "(tests/e2e/testbed/up.sh, then source its env file)");
    memset(&cfg, 0, sizeof(cfg));
    ck_assert_msg(common_kubeconfig_load(path, NULL, &cfg, &err) == COMMON_OK, "%s", err.msg);
    o.qps = 500;
    o.burst = 1000;
    o.timeout_ms = 60000;
    kube = common_kube_client_create(&cfg, &o, &err);
    common_kubeconfig_free(&cfg);
    ck_assert_msg(kube != NULL, "%s", err.msg);
}

static void teardown(void)
{
    common_kube_client_destroy(kube);
    kube = NULL;
}

START_TEST(same_verdicts_as_upstream)
{
    char updir[1024], ourdir[1024];
    const char *leave = getenv("TRAINSCHED_CRDS_LEAVE");
    int leave_upstream = leave && strcmp(leave, "upstream") == 0;
    char why[1024];
    int failures = 0;
    double t0 = e2e_now_s();

    load_corpus();
    ck_assert_uint_ge(ncases, 100);
    upstream_dir(updir, sizeof(updir));
    snprintf(ourdir, sizeof(ourdir), "%s/manifests/crds", TS_SOURCE_DIR);
    printf("crds: %zu cases; upstream CRDs from %s\n", ncases, updir);

    ck_assert_msg(run_set(UPSTREAM, updir, why, sizeof(why)) == 0, "%s", why);
    if (run_set(OURS, ourdir, why, sizeof(why)) != 0) {
        restore_upstream(updir);
        ck_abort_msg("%s (the upstream CRDs are back)", why);
    }
    if (leave_upstream)
        restore_upstream(updir);
    report(&failures);
    printf("crds: done in %.1f s; %s CRDs left installed\n", e2e_now_s() - t0,
           leave_upstream ? "upstream" : "our");
    fflush(stdout);
    free_corpus();
    ck_assert_msg(failures == 0, "%d cases differ from what they document (table above)", failures);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("CRDs: ours vs upstream Trainer");
    TCase *tc = tcase_create("crds");
    SRunner *sr;
    int failed;

    common_alloc_init();
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, same_verdicts_as_upstream);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
