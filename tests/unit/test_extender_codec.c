/*
 * tests/unit/test_extender_codec.c - extender/codec: the wire codec of the extender verbs.
 *
 * Most cases are data: tests/fixtures/extender/<case>/ holds request.json (the body exactly as
 * kube-scheduler sends it, or a broken one), case.json (verb, limits, what the decoded structs
 * must hold, the decision to encode) and either response.json (the expected answer),
 * error.txt (the expected decode error, "<code>: <message>") or encode-error.txt. One loop test
 * runs each case (generate.py there writes them). The C tests below cover what data files
 * cannot: 5,000-node bodies, the default caps, bytes that are not UTF-8 in a reason, the
 * response buffer cap, the scanner against jansson, and every allocation failing in turn.
 */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/arena.h"
#include "common/buf.h"
#include "extender/answer.h"
#include "extender/codec.h"
#include "gang/gang.h"
#include "testutil.h"

#define MAX_CASES 256
#define ROWS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---------------------------------------------------------------- helpers -- */

static char *case_names[MAX_CASES];
static int n_cases;

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_cases(void)
{
    DIR *d = opendir(testutil_path("extender"));
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) != NULL && n_cases < MAX_CASES) {
        char rel[512];
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(rel, sizeof(rel), "extender/%s/case.json", e->d_name);
        f = fopen(testutil_path(rel), "r");
        if (!f)
            continue;
        fclose(f);
        case_names[n_cases++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(case_names, (size_t)n_cases, sizeof(char *), str_cmp);
}

/* read_case_file - fixture file of a case, or NULL when absent; *len gets its size. */
static char *read_case_file(const char *name, const char *file, size_t *len)
{
    char rel[512];
    FILE *f;
    char *data;
    long n;

    snprintf(rel, sizeof(rel), "extender/%s/%s", name, file);
    f = fopen(testutil_path(rel), "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(fread(data, 1, (size_t)n, f), (size_t)n);
    data[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return data;
}

static json_t *parse_or_fail(const char *what, const char *s, size_t n)
{
    json_error_t je;
    json_t *j = json_loadb(s, n, 0, &je);

    ck_assert_msg(j != NULL, "%s does not parse: %s: %.300s", what, je.text, s);
    return j;
}

static void chomp(char *s)
{
    size_t n = strlen(s);

    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

static int64_t jint(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);

    ck_assert_msg(json_is_integer(v), "case.json: %s is not an integer", key);
    return json_integer_value(v);
}

/* ------------------------------------------------------- decoded checks -- */

static void check_pod(const char *cname, const json_t *want, const struct common_pod *pod,
                      const char *pod_group)
{
    const char *key;
    json_t *v;

    ck_assert_ptr_nonnull(pod);
    json_object_foreach((json_t *)want, key, v)
    {
        if (strcmp(key, "namespace") == 0)
            ck_assert_str_eq(pod->namespace, json_string_value(v));
        else if (strcmp(key, "name") == 0)
            ck_assert_str_eq(pod->name, json_string_value(v));
        else if (strcmp(key, "uid") == 0)
            ck_assert_str_eq(pod->uid, json_string_value(v));
        else if (strcmp(key, "pod_group") == 0)
            ck_assert_str_eq(pod_group, json_string_value(v));
        else if (strcmp(key, "scheduler_name") == 0)
            ck_assert_str_eq(pod->scheduler_name, json_string_value(v));
        else if (strcmp(key, "node_name") == 0)
            ck_assert_str_eq(pod->node_name, json_string_value(v));
        else if (strcmp(key, "priority") == 0) {
            ck_assert_int_eq(pod->has_priority, 1);
            ck_assert_int_eq(pod->priority, json_integer_value(v));
        } else if (strcmp(key, "milli_cpu") == 0)
            ck_assert_int_eq(pod->requests.milli_cpu, json_integer_value(v));
        else if (strcmp(key, "memory") == 0)
            ck_assert_int_eq(pod->requests.memory, json_integer_value(v));
        else if (strcmp(key, "ephemeral_storage") == 0)
            ck_assert_int_eq(pod->requests.ephemeral_storage, json_integer_value(v));
        else if (strcmp(key, "tolerations") == 0)
            ck_assert_uint_eq(pod->n_tolerations, json_integer_value(v));
        else if (strcmp(key, "affinity_terms") == 0)
            ck_assert_uint_eq(pod->n_affinity_terms, json_integer_value(v));
        else if (strcmp(key, "extended") == 0) {
            const char *rn;
            json_t *rv;
            ck_assert_uint_eq(pod->requests.n_extended, json_object_size(v));
            json_object_foreach(v, rn, rv)
            {
                uint32_t i;
                for (i = 0; i < pod->requests.n_extended; i++)
                    if (strcmp(pod->requests.extended[i].name, rn) == 0)
                        break;
                ck_assert_msg(i < pod->requests.n_extended, "%s: no extended %s", cname, rn);
                ck_assert_int_eq(pod->requests.extended[i].value, json_integer_value(rv));
            }
        } else
            ck_abort_msg("%s: unknown pod check %s", cname, key);
    }
}

static void check_names(const json_t *want, const char **names, uint32_t n)
{
    size_t i;

    ck_assert_uint_eq(n, json_array_size(want));
    for (i = 0; i < n; i++)
        ck_assert_str_eq(names[i], json_string_value(json_array_get(want, i)));
}

static void check_args(const char *cname, const json_t *want, const struct extender_args *x)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)want, key, v)
    {
        if (strcmp(key, "cache_capable") == 0)
            ck_assert_int_eq(x->cache_capable, json_is_true(v));
        else if (strcmp(key, "node_names") == 0)
            check_names(v, x->node_names, x->n_nodes);
        else if (strcmp(key, "pod") == 0)
            check_pod(cname, v, x->pod, x->pod_group);
        else if (strcmp(key, "nodes") == 0) {
            size_t i;
            ck_assert_ptr_nonnull(x->nodes);
            ck_assert_uint_eq(x->n_nodes, json_array_size(v));
            for (i = 0; i < json_array_size(v); i++) {
                const json_t *w = json_array_get(v, i);
                const struct common_node *n = x->nodes[i];
                ck_assert_str_eq(n->name, json_string_value(json_object_get(w, "name")));
                ck_assert_str_eq(x->node_names[i], n->name);
                ck_assert_int_eq(n->unschedulable, jint(w, "unschedulable"));
                ck_assert_uint_eq(n->n_taints, jint(w, "taints"));
                if (json_object_get(w, "allocatable_milli_cpu"))
                    ck_assert_int_eq(n->allocatable.milli_cpu, jint(w, "allocatable_milli_cpu"));
            }
        } else
            ck_abort_msg("%s: unknown args check %s", cname, key);
    }
}

static void check_preempt(const char *cname, const json_t *want,
                          const struct extender_preempt_args *x)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)want, key, v)
    {
        if (strcmp(key, "cache_capable") == 0)
            ck_assert_int_eq(x->cache_capable, json_is_true(v));
        else if (strcmp(key, "pod") == 0)
            check_pod(cname, v, x->pod, x->pod_group);
        else if (strcmp(key, "nodes") == 0) {
            const char *node;
            json_t *w;
            uint32_t i = 0;

            ck_assert_uint_eq(x->n_nodes, json_object_size(v));
            /* json objects keep insertion order: the request's map order */
            json_object_foreach(v, node, w)
            {
                const struct extender_victims *vi = &x->nodes[i++];
                const json_t *names = json_object_get(w, "pod_names");
                ck_assert_str_eq(vi->node, node);
                check_names(json_object_get(w, "uids"), vi->uids, vi->n_pods);
                ck_assert_int_eq(vi->num_pdb_violations, jint(w, "pdb"));
                if (x->cache_capable) {
                    ck_assert_ptr_null(vi->pods);
                } else {
                    ck_assert_ptr_nonnull(vi->pods);
                }
                if (names) {
                    size_t k;
                    ck_assert_uint_eq(vi->n_pods, json_array_size(names));
                    for (k = 0; k < json_array_size(names); k++) {
                        ck_assert_str_eq(vi->pods[k]->name,
                                         json_string_value(json_array_get(names, k)));
                        ck_assert_str_eq(vi->pods[k]->uid, vi->uids[k]);
                    }
                }
            }
        } else
            ck_abort_msg("%s: unknown preempt check %s", cname, key);
    }
}

static void check_bind(const char *cname, const json_t *want, const struct extender_bind_args *x)
{
    if (!want)
        return;
    ck_assert_str_eq(x->pod_name, json_string_value(json_object_get(want, "pod_name")));
    ck_assert_str_eq(x->pod_namespace, json_string_value(json_object_get(want, "pod_namespace")));
    ck_assert_str_eq(x->pod_uid, json_string_value(json_object_get(want, "pod_uid")));
    ck_assert_str_eq(x->node, json_string_value(json_object_get(want, "node")));
}

/* ------------------------------------------------------------ encode side -- */

/* The buffer starts with a marker that every encoder must leave alone (and, on error, be all
 * that is left). */
#define MARK "<prefix>"

static enum common_rc encode_filter(const json_t *dec, const struct extender_args *x,
                                    struct common_buf *b, uint8_t *verdict,
                                    struct common_error *err)
{
    const char **reason = calloc(x->n_nodes + 1, sizeof(char *));
    const json_t *e = json_object_get(dec, "error");
    const char *name;
    json_t *v;
    size_t i;
    enum common_rc rc;

    ck_assert_ptr_nonnull(reason);
    for (i = 0; i < x->n_nodes; i++)
        verdict[i] = EXTENDER_DROP;
    json_array_foreach(json_object_get(dec, "pass"), i, v)
    {
        long k = extender_args_node_index(x, json_string_value(v));
        if (k >= 0)
            verdict[k] = EXTENDER_PASS; /* a name not in the request has no index at all */
    }
    json_object_foreach(json_object_get(dec, "fail"), name, v)
    {
        long k = extender_args_node_index(x, name);
        if (k >= 0) {
            verdict[k] = EXTENDER_FAIL;
            reason[k] = json_string_value(v);
        }
    }
    json_object_foreach(json_object_get(dec, "unresolvable"), name, v)
    {
        long k = extender_args_node_index(x, name);
        if (k >= 0) {
            verdict[k] = EXTENDER_FAIL_UNRESOLVABLE;
            reason[k] = json_string_value(v);
        }
    }
    if (e)
        rc = extender_encode_filter_error(b, json_string_value(e), err);
    else
        rc = extender_encode_filter_result(b, x, verdict, reason, err);
    free(reason);
    return rc;
}

static enum common_rc encode_priorities(const json_t *dec, const struct extender_args *x,
                                        struct common_buf *b, struct common_error *err)
{
    int64_t *score = calloc(x->n_nodes + 1, sizeof(int64_t));
    const char *name;
    json_t *v;
    uint32_t i;
    enum common_rc rc;

    ck_assert_ptr_nonnull(score);
    for (i = 0; i < x->n_nodes; i++)
        score[i] = EXTENDER_SCORE_OMIT;
    json_object_foreach(json_object_get(dec, "scores"), name, v)
    {
        long k = extender_args_node_index(x, name);
        ck_assert_int_ge(k, 0);
        score[k] = json_integer_value(v);
    }
    rc = extender_encode_priorities(b, x, score, err);
    free(score);
    return rc;
}

static enum common_rc encode_preempt(const json_t *dec, const struct extender_preempt_args *x,
                                     struct common_buf *b, struct common_error *err)
{
    const json_t *keep = json_object_get(dec, "keep");
    struct extender_preempt_choice ch = {0};
    uint8_t *keep_node;
    uint8_t **keep_victim;
    uint32_t i, j;
    enum common_rc rc;

    if (json_is_string(keep) && strcmp(json_string_value(keep), "all") == 0)
        return extender_encode_preempt_result(b, x, NULL, err);
    keep_node = calloc(x->n_nodes + 1, 1);
    keep_victim = calloc(x->n_nodes + 1, sizeof(uint8_t *));
    ck_assert_ptr_nonnull(keep_node);
    ck_assert_ptr_nonnull(keep_victim);
    for (i = 0; i < x->n_nodes; i++) {
        const json_t *k = json_object_get(keep, x->nodes[i].node);
        if (!k)
            continue;
        keep_node[i] = 1;
        if (json_is_array(k)) {
            keep_victim[i] = calloc(x->nodes[i].n_pods + 1, 1);
            ck_assert_ptr_nonnull(keep_victim[i]);
            for (j = 0; j < x->nodes[i].n_pods; j++) {
                size_t a;
                json_t *u;
                json_array_foreach(k, a, u)
                {
                    if (strcmp(json_string_value(u), x->nodes[i].uids[j]) == 0)
                        keep_victim[i][j] = 1;
                }
            }
        }
    }
    ch.keep_node = keep_node;
    ch.keep_victim = (const uint8_t *const *)keep_victim;
    rc = extender_encode_preempt_result(b, x, &ch, err);
    for (i = 0; i < x->n_nodes; i++)
        free(keep_victim[i]);
    free(keep_victim);
    free(keep_node);
    return rc;
}

/* ---------------------------------------------------------- fixture cases -- */

/*
 * The metadata-first decode (extender_decode_args_meta, then extender_decode_args_pod) ends
 * where extender_decode_args does: the same error message, from one or the other step, or the
 * same decoded args once the pod is complete; before completion the pod has the same identity
 * and PodGroup label.
 */
static void meta_agrees(const char *cname, const char *req, size_t len,
                        const struct extender_limits *lim, const char *want_err,
                        const json_t *decoded)
{
    struct common_arena *a = common_arena_create(0);
    struct extender_args *args = NULL;
    struct common_error err;
    char got[COMMON_ERROR_MSG_MAX + 32], want[COMMON_ERROR_MSG_MAX + 32];
    enum common_rc rc;

    ck_assert_ptr_nonnull(a);
    rc = extender_decode_args_meta(a, req, len, lim, &args, &err);
    if (rc == COMMON_OK) {
        ck_assert_int_eq(args->pod_meta_only, 1);
        ck_assert_ptr_nonnull(args->pod);
        rc = extender_decode_args_pod(a, args, &err);
    }
    if (want_err) {
        snprintf(want, sizeof(want), "%s", want_err);
        chomp(want);
        ck_assert_msg(rc != COMMON_OK, "%s: the metadata-first decode took it, expected %s", cname,
                      want);
        snprintf(got, sizeof(got), "%s: %s", common_rc_name(rc), err.msg);
        ck_assert_str_eq(got, want);
    } else {
        ck_assert_msg(rc == COMMON_OK, "%s: metadata-first: %s", cname, err.msg);
        ck_assert_int_eq(args->pod_meta_only, 0);
        if (decoded)
            check_args(cname, decoded, args);
    }
    common_arena_destroy(a);
}

START_TEST(test_fixture)
{
    const char *cname = case_names[_i];
    char *casej = read_case_file(cname, "case.json", NULL);
    size_t len = 0;
    char *req = read_case_file(cname, "request.json", &len);
    char *resp = read_case_file(cname, "response.json", NULL);
    char *want_err = read_case_file(cname, "error.txt", NULL);
    char *want_enc_err = read_case_file(cname, "encode-error.txt", NULL);
    struct common_arena *a = common_arena_create(0);
    struct extender_limits lim = {0};
    struct extender_args *args = NULL;
    struct extender_bind_args *bargs = NULL;
    struct extender_preempt_args *pargs = NULL;
    struct common_error err;
    struct common_buf b;
    enum common_rc rc;
    json_t *c, *lj, *dec, *decoded;
    const char *verb;
    uint8_t *verdict = NULL;
    void *out = NULL;

    ck_assert_msg(casej && req, "%s: case.json or request.json missing", cname);
    ck_assert_ptr_nonnull(a);
    c = parse_or_fail("case.json", casej, strlen(casej));
    verb = json_string_value(json_object_get(c, "verb"));
    ck_assert_ptr_nonnull(verb);
    lj = json_object_get(c, "limits");
    if (lj) {
        if (json_object_get(lj, "max_body"))
            lim.max_body = (size_t)jint(lj, "max_body");
        if (json_object_get(lj, "max_nodes"))
            lim.max_nodes = (uint32_t)jint(lj, "max_nodes");
        if (json_object_get(lj, "max_victims"))
            lim.max_victims = (uint32_t)jint(lj, "max_victims");
    }
    dec = json_object_get(c, "decision");
    decoded = json_object_get(c, "decoded");

    if (strcmp(verb, "filter") == 0 || strcmp(verb, "prioritize") == 0) {
        rc = extender_decode_args(a, req, len, &lim, &args, &err);
        out = args;
    } else if (strcmp(verb, "bind") == 0) {
        rc = extender_decode_bind_args(a, req, len, &lim, &bargs, &err);
        out = bargs;
    } else {
        ck_assert_str_eq(verb, "preempt");
        rc = extender_decode_preempt_args(a, req, len, &lim, &pargs, &err);
        out = pargs;
    }

    if (args || ((strcmp(verb, "filter") == 0 || strcmp(verb, "prioritize") == 0) && want_err))
        meta_agrees(cname, req, len, &lim, want_err, decoded);
    if (want_err) {
        char got[COMMON_ERROR_MSG_MAX + 32];

        chomp(want_err);
        ck_assert_msg(rc != COMMON_OK, "%s: decoded, expected %s", cname, want_err);
        ck_assert_ptr_null(out);
        ck_assert_int_eq(err.code, rc);
        snprintf(got, sizeof(got), "%s: %s", common_rc_name(rc), err.msg);
        ck_assert_str_eq(got, want_err);
        goto done;
    }
    ck_assert_msg(rc == COMMON_OK, "%s: %s", cname, err.msg);
    ck_assert_ptr_nonnull(out);

    common_buf_init(&b, 1 << 26);
    ck_assert_int_eq(common_buf_puts(&b, MARK, &err), COMMON_OK);
    if (args) {
        ck_assert_ptr_nonnull(args->node_names);
        ck_assert_ptr_nonnull(args->pod_group);
        if (decoded)
            check_args(cname, decoded, args);
        verdict = calloc(args->n_nodes + 1, 1);
        ck_assert_ptr_nonnull(verdict);
        if (strcmp(verb, "filter") == 0)
            rc = encode_filter(dec, args, &b, verdict, &err);
        else
            rc = encode_priorities(dec, args, &b, &err);
    } else if (bargs) {
        check_bind(cname, decoded, bargs);
        rc =
            extender_encode_bind_result(&b, json_string_value(json_object_get(dec, "error")), &err);
    } else {
        ck_assert_ptr_nonnull(pargs->pod);
        if (decoded)
            check_preempt(cname, decoded, pargs);
        rc = encode_preempt(dec, pargs, &b, &err);
    }

    if (want_enc_err) {
        char got[COMMON_ERROR_MSG_MAX + 32];

        chomp(want_enc_err);
        ck_assert_msg(rc != COMMON_OK, "%s: encoded, expected %s", cname, want_enc_err);
        snprintf(got, sizeof(got), "%s: %s", common_rc_name(rc), err.msg);
        ck_assert_str_eq(got, want_enc_err);
        ck_assert_str_eq(b.data, MARK); /* the buffer is as it was */
    } else {
        json_t *got, *want;

        ck_assert_msg(rc == COMMON_OK, "%s: %s", cname, err.msg);
        ck_assert_msg(resp != NULL, "%s: response.json missing", cname);
        ck_assert_int_eq(strncmp(b.data, MARK, strlen(MARK)), 0);
        ck_assert_ptr_null(strchr(b.data, '\n')); /* compact: one line */
        got = parse_or_fail("response", b.data + strlen(MARK), b.len - strlen(MARK));
        want = parse_or_fail("response.json", resp, strlen(resp));
        ck_assert_msg(json_equal(got, want), "%s: response differs:\n got %s\nwant %s", cname,
                      b.data + strlen(MARK), resp);
        /* full NodeList: each passing node goes out as the very bytes it came in as, and a
         * node that did not pass is nowhere in the answer */
        if (args && !args->cache_capable && strcmp(verb, "filter") == 0 &&
            !json_object_get(dec, "error")) {
            uint32_t i;
            for (i = 0; i < args->n_nodes; i++) {
                char *raw = strndup(args->nodes_json[i].data, args->nodes_json[i].len);
                ck_assert_ptr_nonnull(raw);
                ck_assert_msg((strstr(b.data, raw) != NULL) == (verdict[i] == EXTENDER_PASS),
                              "%s: node %u echoed wrongly", cname, i);
                free(raw);
            }
        }
        json_decref(got);
        json_decref(want);
    }
    common_buf_free(&b);
done:
    free(verdict);
    json_decref(c);
    common_arena_destroy(a);
    free(casej);
    free(req);
    free(resp);
    free(want_err);
    free(want_enc_err);
}
END_TEST

START_TEST(test_fixture_count)
{
    /* the loop below must not silently run nothing */
    ck_assert_int_ge(n_cases, 60);
}
END_TEST

/* --------------------------------------------------------------- C tests -- */

static const char SMALL_POD[] =
    "{\"metadata\":{\"name\":\"w-3\",\"namespace\":\"ml\",\"uid\":\"6c1e0000-0000-4000-8000-"
    "000000000003\",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"llm\"}},\"spec\":{"
    "\"schedulerName\":\"default-scheduler\",\"containers\":[{\"name\":\"t\",\"resources\":{"
    "\"requests\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"nvidia.com/gpu\":\"8\"}}}]},\"status\":{"
    "\"phase\":\"Pending\"}}";

/* names_body - a NodeNames request of n nodes ("node-00000", ...), malloc'd. */
static char *names_body(uint32_t n, size_t *len)
{
    struct common_buf b;
    struct common_error err;
    uint32_t i;

    common_buf_init(&b, (size_t)1 << 30);
    ck_assert_int_eq(
        common_buf_printf(&b, &err, "{\"Pod\":%s,\"Nodes\":null,\"NodeNames\":[", SMALL_POD),
        COMMON_OK);
    for (i = 0; i < n; i++)
        ck_assert_int_eq(common_buf_printf(&b, &err, "%s\"node-%05u\"", i ? "," : "", i),
                         COMMON_OK);
    ck_assert_int_eq(common_buf_puts(&b, "]}", &err), COMMON_OK);
    *len = b.len;
    return b.data;
}

START_TEST(test_five_thousand_names_round_trip)
{
    struct common_arena *a = common_arena_create(0);
    struct extender_args *x;
    struct common_error err;
    struct common_buf b;
    size_t len, i;
    char *body = names_body(5000, &len);
    uint8_t *verdict = calloc(5000, 1);
    json_t *j, *names;

    ck_assert_int_eq(extender_decode_args(a, body, len, NULL, &x, &err), COMMON_OK);
    ck_assert_int_eq(x->cache_capable, 1);
    ck_assert_uint_eq(x->n_nodes, 5000);
    ck_assert_str_eq(x->node_names[0], "node-00000");
    ck_assert_str_eq(x->node_names[4999], "node-04999");
    ck_assert_str_eq(x->pod_group, "llm");
    ck_assert_int_eq(x->pod->requests.milli_cpu, 2000);
    ck_assert_ptr_null(x->nodes);
    for (i = 0; i < 5000; i++)
        verdict[i] = i % 3 == 0 ? EXTENDER_PASS : i % 3 == 1 ? EXTENDER_FAIL : EXTENDER_DROP;
    common_buf_init(&b, 1 << 24);
    ck_assert_int_eq(extender_encode_filter_result(&b, x, verdict, NULL, &err), COMMON_OK);
    j = parse_or_fail("filter result", b.data, b.len);
    names = json_object_get(j, "NodeNames");
    ck_assert_uint_eq(json_array_size(names), 1667);
    ck_assert_str_eq(json_string_value(json_array_get(names, 1)), "node-00003");
    ck_assert_uint_eq(json_object_size(json_object_get(j, "FailedNodes")), 1667);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(j, "FailedNodes"), "node-00001")), "");
    json_decref(j);
    common_buf_free(&b);
    free(verdict);
    free(body);
    common_arena_destroy(a);
}
END_TEST

/* ---- the filter answer from the gang core's decision (extender/answer.h) ---- */

static struct common_pod *answer_pod(const char *name, const char *uid, const char *group,
                                     const char *cpu)
{
    struct common_pod *p = NULL;
    struct common_error err;
    json_t *j =
        json_pack("{s:{s:s, s:s, s:s, s:{s:s}}, s:{s:[{s:s, s:{s:{s:s}}}]}}", "metadata", "name",
                  name, "namespace", "ml", "uid", uid, "labels", GANG_POD_GROUP_LABEL, group,
                  "spec", "containers", "name", "c", "resources", "requests", "cpu", cpu);

    ck_assert_int_eq(common_pod_from_json(j, &p, &err), COMMON_OK);
    json_decref(j);
    return p;
}

/* filter pod p over nodes through gang_filter, extender_filter_answer and the encoder; returns
 * the parsed answer (NULL when the answer is an Error: *error_out gets it) */
static json_t *answer_of(struct gang_state *gs, struct extender_args *x, struct common_pod *p,
                         size_t *len_out, char *error_out, size_t error_max)
{
    struct gang_node_verdict *gv = calloc(x->n_nodes, sizeof(*gv));
    struct gang_filter_result res;
    uint8_t *verdict = calloc(x->n_nodes, 1);
    const char **reason = calloc(x->n_nodes, sizeof(*reason));
    struct common_error err;
    struct common_buf b;
    struct common_arena *ar = common_arena_create(0);
    const char *wait = NULL;
    json_t *j = NULL;

    x->pod = p;
    ck_assert_int_eq(gang_filter(gs, p, x->node_names, x->n_nodes, 0, gv, &res, &err), COMMON_OK);
    common_buf_init(&b, 1 << 24);
    ck_assert_int_eq(extender_filter_answer(ar, gv, x->n_nodes, &res, verdict, reason, &wait),
                     COMMON_OK);
    if (wait) {
        ck_assert_int_eq(extender_encode_filter_error(&b, wait, &err), COMMON_OK);
        snprintf(error_out, error_max, "%s", wait);
    } else {
        ck_assert_int_eq(extender_encode_filter_result(&b, x, verdict, reason, &err), COMMON_OK);
        error_out[0] = 0;
    }
    *len_out = b.len;
    j = parse_or_fail("filter answer", b.data, b.len);
    common_buf_free(&b);
    free(gv);
    free(verdict);
    free(reason);
    common_arena_destroy(ar);
    return j;
}

START_TEST(test_answer_lists_only_the_nodes_that_matter)
{
    struct common_arena *a = common_arena_create(0);
    struct gang_state *gs;
    struct gang_podgroup pg = {
        .namespace = "ml", .name = "job", .min_member = 2, .phased_jobs = ""};
    struct extender_args *x;
    struct common_error err;
    struct common_pod *w0 = answer_pod("w-0", "u0", "job", "2");
    struct common_pod *w1 = answer_pod("w-1", "u1", "job", "2");
    struct common_pod *big0 = answer_pod("b-0", "b0", "big", "9");
    struct common_pod *big1 = answer_pod("b-1", "b1", "big", "9");
    size_t len, i, n = 5000;
    char *body = names_body(n, &len), msg[512];
    json_t *j;

    ck_assert_int_eq(gang_state_create(NULL, &gs, &err), COMMON_OK);
    for (i = 0; i < n; i++) {
        char name[32];
        struct common_node *nd = NULL;
        json_t *nj;
        snprintf(name, sizeof(name), "node-%05zu", i);
        nj = json_pack("{s:{s:s}, s:{s:{s:s, s:s, s:s}}}", "metadata", "name", name, "status",
                       "allocatable", "cpu", "8", "memory", "16Gi", "pods", "110");
        ck_assert_int_eq(common_node_from_json(nj, &nd, &err), COMMON_OK);
        ck_assert_int_eq(gang_node_upsert(gs, nd, &err), COMMON_OK);
        common_node_free(nd);
        json_decref(nj);
    }
    ck_assert_int_eq(extender_decode_args(a, body, len, NULL, &x, &err), COMMON_OK);

    /* no PodGroup yet: an Error (kube-scheduler retries after its backoff), naming the group */
    ck_assert_int_eq(gang_pod_upsert(gs, w0, &err), COMMON_OK);
    j = answer_of(gs, x, w0, &len, msg, sizeof(msg));
    ck_assert_msg(strstr(json_string_value(json_object_get(j, "Error")), "PodGroup ml/job") != NULL,
                  "%s", msg);
    ck_assert(json_is_null(json_object_get(j, "NodeNames")));
    json_decref(j);

    /* one of minMember 2 exists: still an Error with the count */
    ck_assert_int_eq(gang_podgroup_upsert(gs, &pg, &err), COMMON_OK);
    j = answer_of(gs, x, w0, &len, msg, sizeof(msg));
    ck_assert_msg(strstr(msg, "1 of minMember 2 exist") != NULL, "%s", msg);
    json_decref(j);

    /* planned: one name, both failure maps empty, a few hundred bytes for 5,000 candidates */
    ck_assert_int_eq(gang_pod_upsert(gs, w1, &err), COMMON_OK);
    j = answer_of(gs, x, w0, &len, msg, sizeof(msg));
    ck_assert_str_eq(msg, "");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "NodeNames")), 1);
    ck_assert_uint_eq(json_object_size(json_object_get(j, "FailedNodes")), 0);
    ck_assert_uint_eq(json_object_size(json_object_get(j, "FailedAndUnresolvableNodes")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(j, "Error")), "");
    ck_assert_msg(len < 200, "answer of %zu bytes", len);
    json_decref(j);

    /* a gang that fits nowhere (9 cpu on 8-cpu nodes): every node failed with its reason, no
     * Error (capacity may appear: the scheduler waits for a cluster event, preemption may help) */
    pg.name = "big";
    ck_assert_int_eq(gang_podgroup_upsert(gs, &pg, &err), COMMON_OK);
    ck_assert_int_eq(gang_pod_upsert(gs, big1, &err), COMMON_OK);
    j = answer_of(gs, x, big0, &len, msg, sizeof(msg));
    ck_assert_str_eq(msg, "");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "NodeNames")), 0);
    ck_assert_uint_eq(json_object_size(json_object_get(j, "FailedNodes")) +
                          json_object_size(json_object_get(j, "FailedAndUnresolvableNodes")),
                      n);
    json_decref(j);

    x->pod = NULL;
    common_pod_free(w0);
    common_pod_free(w1);
    common_pod_free(big0);
    common_pod_free(big1);
    gang_state_destroy(gs);
    free(body);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_answer_rules)
{
    struct gang_node_verdict gv[3] = {{GANG_NODE_UNRESOLVABLE, "taint"},
                                      {GANG_NODE_FAILED, "short"},
                                      {GANG_NODE_UNRESOLVABLE, "selector"}};
    struct gang_filter_result res = {.reason = "x"};
    struct common_arena *a = common_arena_create(0);
    uint8_t v[3];
    const char *r[3], *wait = "unset";

    ck_assert_int_eq(extender_filter_answer(a, gv, 3, &res, v, r, &wait), COMMON_OK);
    ck_assert_ptr_null(wait);
    ck_assert_int_eq(v[0], EXTENDER_DROP);
    ck_assert_ptr_null(r[0]);
    ck_assert_int_eq(v[1], EXTENDER_FAIL);
    ck_assert_str_eq(r[1], "short");
    ck_assert_ptr_ne(r[1], gv[1].reason); /* a copy: the books' string goes with the next call */
    ck_assert_int_eq(v[2], EXTENDER_DROP);
    /* nothing but unresolvable: listed with reasons, so the FailedScheduling event says why */
    gv[1] = (struct gang_node_verdict){GANG_NODE_UNRESOLVABLE, "unknown node"};
    ck_assert_int_eq(extender_filter_answer(a, gv, 3, &res, v, r, &wait), COMMON_OK);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(v[i], EXTENDER_FAIL_UNRESOLVABLE);
    ck_assert_str_eq(r[0], "taint");
    ck_assert_str_eq(r[1], "unknown node");
    /* a pass drops the rest */
    gv[2] = (struct gang_node_verdict){GANG_NODE_OK, NULL};
    ck_assert_int_eq(extender_filter_answer(a, gv, 3, &res, v, r, &wait), COMMON_OK);
    ck_assert_int_eq(v[0], EXTENDER_DROP);
    ck_assert_int_eq(v[2], EXTENDER_PASS);
    ck_assert_ptr_null(r[2]);
    /* retry: an Error with the core's reason, verdicts untouched */
    v[0] = 77;
    res.retry = 1;
    ck_assert_int_eq(extender_filter_answer(a, gv, 3, &res, v, r, &wait), COMMON_OK);
    ck_assert_str_eq(wait, "x");
    ck_assert_int_eq(v[0], 77);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_default_node_cap)
{
    struct common_arena *a = common_arena_create(0);
    struct extender_args *x = (void *)1;
    struct common_error err;
    size_t len;
    char *body = names_body(EXTENDER_DEFAULT_MAX_NODES + 1, &len);

    ck_assert_int_eq(extender_decode_args(a, body, len, NULL, &x, &err), COMMON_EINVAL);
    ck_assert_ptr_null(x);
    ck_assert_str_eq(err.msg, "NodeNames: more than 65536 nodes");
    free(body);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_default_body_cap)
{
    struct common_arena *a = common_arena_create(0);
    struct extender_args *x;
    struct common_error err;
    static const char body[] = "{}";

    /* the length is checked before a byte is read */
    ck_assert_int_eq(extender_decode_args(a, body, EXTENDER_DEFAULT_MAX_BODY + 1, NULL, &x, &err),
                     COMMON_ETOOBIG);
    ck_assert_str_eq(err.msg,
                     "ExtenderArgs: body of 67108865 bytes is over the limit of 67108864 bytes");
    common_arena_destroy(a);
}
END_TEST

/* A cache-mode filter answer, byte for byte: Go's field order, compact, no extra keys. */
START_TEST(test_filter_exact_bytes)
{
    static const char body[] =
        "{\"Pod\":{\"metadata\":{\"name\":\"w\",\"namespace\":\"ml\",\"uid\":\"u\"}},"
        "\"Nodes\":null,\"NodeNames\":[\"a\",\"b\",\"c\",\"d\"]}";
    static const uint8_t verdict[] = {EXTENDER_PASS, EXTENDER_FAIL, EXTENDER_FAIL_UNRESOLVABLE,
                                      EXTENDER_DROP};
    static const char *const reason[] = {NULL, "short of cpu", "no gpu", "ignored"};
    struct common_arena *a = common_arena_create(0);
    struct extender_args *x;
    struct common_error err;
    struct common_buf b;
    int64_t score[] = {10, 0, EXTENDER_SCORE_OMIT, 5};

    ck_assert_int_eq(extender_decode_args(a, body, sizeof(body) - 1, NULL, &x, &err), COMMON_OK);
    ck_assert_str_eq(x->pod_group, "");
    common_buf_init(&b, 4096);
    ck_assert_int_eq(extender_encode_filter_result(&b, x, verdict, reason, &err), COMMON_OK);
    ck_assert_str_eq(b.data, "{\"Nodes\":null,\"NodeNames\":[\"a\"],\"FailedNodes\":{\"b\":"
                             "\"short of cpu\"},\"FailedAndUnresolvableNodes\":{\"c\":\"no gpu\"},"
                             "\"Error\":\"\"}");
    common_buf_reset(&b);
    ck_assert_int_eq(extender_encode_priorities(&b, x, score, &err), COMMON_OK);
    ck_assert_str_eq(b.data, "[{\"Host\":\"a\",\"Score\":10},{\"Host\":\"b\",\"Score\":0},"
                             "{\"Host\":\"d\",\"Score\":5}]");
    common_buf_reset(&b);
    ck_assert_int_eq(extender_encode_filter_error(&b, "", &err), COMMON_OK);
    ck_assert_str_eq(b.data, "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
                             "\"FailedAndUnresolvableNodes\":{},\"Error\":\"internal error\"}");
    common_buf_reset(&b);
    ck_assert_int_eq(extender_encode_bind_result(&b, NULL, &err), COMMON_OK);
    ck_assert_str_eq(b.data, "{\"Error\":\"\"}");
    ck_assert_int_eq(extender_args_node_index(x, "c"), 2);
    ck_assert_int_eq(extender_args_node_index(x, "zz"), -1);
    common_buf_free(&b);
    common_arena_destroy(a);
}
END_TEST

/* Reasons come from our own code and may hold anything: the answer stays valid JSON. */
START_TEST(test_reason_bytes_that_are_not_utf8)
{
    static const char body[] = "{\"Pod\":{\"metadata\":{\"name\":\"w\",\"namespace\":\"ml\","
                               "\"uid\":\"u\"}},\"NodeNames\":[\"a\"]}";
    static const struct {
        const char *in, *out;
    } rows[] = {
        {"ok \xc3\xa9", "ok \xc3\xa9"},                    /* é kept as UTF-8 */
        {"bad \xff end", "bad \\ufffd end"},               /* stray byte */
        {"cut \xe2\x82", "cut \\ufffd\\ufffd"},            /* truncated sequence at the end */
        {"sur \xed\xa0\x80", "sur \\ufffd\\ufffd\\ufffd"}, /* UTF-8 encoded surrogate */
        {"over \xc0\xaf", "over \\ufffd\\ufffd"},          /* overlong '/' */
        {"ctl \x01\x1f\x7f", "ctl \\u0001\\u001f\x7f"},
        {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"}, /* 4-byte sequence kept */
    };
    struct common_arena *a = common_arena_create(0);
    struct extender_args *x;
    struct common_error err;
    struct common_buf b;
    uint8_t verdict = EXTENDER_FAIL;
    int i;

    ck_assert_int_eq(extender_decode_args(a, body, sizeof(body) - 1, NULL, &x, &err), COMMON_OK);
    common_buf_init(&b, 4096);
    for (i = 0; i < ROWS(rows); i++) {
        char want[256];
        json_t *j;

        common_buf_reset(&b);
        ck_assert_int_eq(extender_encode_filter_result(&b, x, &verdict, &rows[i].in, &err),
                         COMMON_OK);
        snprintf(want, sizeof(want),
                 "{\"Nodes\":null,\"NodeNames\":[],\"FailedNodes\":{\"a\":\"%s\"},"
                 "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}",
                 rows[i].out);
        ck_assert_str_eq(b.data, want);
        j = parse_or_fail("filter result", b.data, b.len);
        json_decref(j);
    }
    common_buf_free(&b);
    common_arena_destroy(a);
}
END_TEST

START_TEST(test_encoder_errors_leave_the_buffer)
{
    static const char body[] = "{\"Pod\":{\"metadata\":{\"name\":\"w\",\"namespace\":\"ml\","
                               "\"uid\":\"u\"}},\"NodeNames\":[\"gpu-a1\",\"gpu-a2\"]}";
    static const char pbody[] =
        "{\"Pod\":{\"metadata\":{\"name\":\"w\",\"namespace\":\"ml\",\"uid\":\"u\"}},"
        "\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"v1\"}],\"NumPDBViolations\":3}}}";
    struct common_arena *a = common_arena_create(0);
    struct extender_args *x;
    struct extender_preempt_args *p;
    struct extender_preempt_choice ch = {0};
    struct common_error err;
    struct common_buf b;
    uint8_t verdict[] = {EXTENDER_PASS, 7};
    uint8_t pass[] = {EXTENDER_PASS, EXTENDER_PASS};
    int64_t pdb = -1, pdb_ok = 0;

    ck_assert_int_eq(extender_decode_args(a, body, sizeof(body) - 1, NULL, &x, &err), COMMON_OK);
    common_buf_init(&b, 40);
    ck_assert_int_eq(common_buf_puts(&b, "kept", &err), COMMON_OK);
    /* a verdict out of range */
    ck_assert_int_eq(extender_encode_filter_result(&b, x, verdict, NULL, &err), COMMON_EINVAL);
    ck_assert_str_eq(err.msg, "ExtenderFilterResult: node gpu-a2: verdict 7 out of range");
    ck_assert_str_eq(b.data, "kept");
    /* the answer does not fit the buffer's max */
    ck_assert_int_eq(extender_encode_filter_result(&b, x, pass, NULL, &err), COMMON_ETOOBIG);
    ck_assert_str_eq(err.msg, "ExtenderFilterResult: larger than the limit of 40 bytes");
    ck_assert_str_eq(b.data, "kept");
    ck_assert_uint_eq(b.len, 4);

    ck_assert_int_eq(extender_decode_preempt_args(a, pbody, sizeof(pbody) - 1, NULL, &p, &err),
                     COMMON_OK);
    ck_assert_int_eq(p->nodes[0].num_pdb_violations, 3);
    ch.pdb = &pdb;
    ck_assert_int_eq(extender_encode_preempt_result(&b, p, &ch, &err), COMMON_EINVAL);
    ck_assert_str_eq(err.msg, "ExtenderPreemptionResult: node n1: NumPDBViolations -1 below 0");
    ck_assert_str_eq(b.data, "kept");
    common_buf_free(&b);
    common_buf_init(&b, 4096);
    ch.pdb = &pdb_ok; /* an override replaces the request's count */
    ck_assert_int_eq(extender_encode_preempt_result(&b, p, &ch, &err), COMMON_OK);
    ck_assert_str_eq(b.data, "{\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"v1\"}],"
                             "\"NumPDBViolations\":0}}}");
    common_buf_free(&b);
    common_arena_destroy(a);
}
END_TEST

/* The scanner accepts exactly what jansson accepts, except where jansson is stricter than
 * JSON (\u0000, integers over 64 bits) or deeper than our nesting cap. */
START_TEST(test_scanner_agrees_with_jansson)
{
    static const char *const rows[] = {
        "{}",
        "[]",
        "0",
        "-0",
        "1.5e+3",
        "-1E-2",
        "01",
        "1.",
        ".5",
        "1e",
        "-",
        "+1",
        "\"\"",
        "\"\\u00e9\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud83d\"",
        "\"\\ude00\"",
        "\"\\ud83d\\u0041\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"a\tb\"",
        "\"\xc3\xa9\"",
        "\"\xc3\"",
        "\"\xe0\x80\xaf\"",
        "\"\xf4\x90\x80\x80\"",
        "\"\xf0\x9f\x98\x80\"",
        "\"\xed\xbf\xbf\"",
        "true",
        "tru",
        "nul",
        "null ",
        " [1 , 2 ] ",
        "[1,]",
        "[,1]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1:2}",
        "{\"a\":1}{}",
        "[1]x",
        "",
        "   ",
        "[\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"]",
        "{\"a\":{\"b\":[{\"c\":null}]}}",
        "[1 2]",
        "\"unterminated",
        "[true,false,null]",
    };
    int i;

    for (i = 0; i < ROWS(rows); i++) {
        struct common_error err;
        json_error_t je;
        json_t *j = json_loadb(rows[i], strlen(rows[i]), JSON_DECODE_ANY, &je);
        enum common_rc rc = extender_json_check(rows[i], strlen(rows[i]), &err);

        ck_assert_msg((rc == COMMON_OK) == (j != NULL), "row %d (%s): scanner %s, jansson %s", i,
                      rows[i], rc ? err.msg : "ok", j ? "ok" : je.text);
        json_decref(j);
    }
}
END_TEST

START_TEST(test_depth_cap_in_json_check)
{
    char deep[2 * (EXTENDER_JSON_MAX_DEPTH + 1) + 1];
    struct common_error err;
    int n;

    for (n = EXTENDER_JSON_MAX_DEPTH; n <= EXTENDER_JSON_MAX_DEPTH + 1; n++) {
        memset(deep, '[', (size_t)n);
        memset(deep + n, ']', (size_t)n);
        deep[2 * n] = '\0';
        if (n == EXTENDER_JSON_MAX_DEPTH) {
            ck_assert_int_eq(extender_json_check(deep, (size_t)(2 * n), &err), COMMON_OK);
        } else {
            ck_assert_int_eq(extender_json_check(deep, (size_t)(2 * n), &err), COMMON_EINVAL);
            ck_assert_str_eq(err.msg, "JSON: invalid JSON at byte 100: nested deeper than 100 "
                                      "levels");
        }
    }
}
END_TEST

/* A NUL byte is not the end of the body (jansson reads it so; JSON does not). */
START_TEST(test_nul_byte_is_not_the_end)
{
    static const char body[] = "{\"Pod\":{\"metadata\":{\"name\":\"w\",\"namespace\":\"ml\","
                               "\"uid\":\"u\"}},\"NodeNames\":[\"a\"]}\0garbage";
    struct common_arena *a = common_arena_create(0);
    struct extender_args *x;
    struct common_error err;

    ck_assert_int_eq(extender_decode_args(a, body, sizeof(body) - 1, NULL, &x, &err),
                     COMMON_EINVAL);
    ck_assert_str_eq(err.msg, "ExtenderArgs: invalid JSON at byte 78: data after the JSON value");
    ck_assert_int_eq(extender_json_check("\0", 1, &err), COMMON_EINVAL);
    ck_assert_str_eq(err.msg, "JSON: invalid JSON at byte 0: unexpected character");
    ck_assert_int_eq(extender_json_check("[1,\0]", 5, &err), COMMON_EINVAL);
    ck_assert_str_eq(err.msg, "JSON: invalid JSON at byte 3: unexpected character");
    common_arena_destroy(a);
}
END_TEST

/* Every allocation fails in turn: each run ends OK or with a clean COMMON_ENOMEM, and the
 * arena releases everything (ASan's leak check runs at exit). */
static enum common_rc torture_once(const char *body, size_t len, const char *full, size_t full_len,
                                   const char *pre, size_t pre_len)
{
    struct common_arena *a = common_arena_create(0);
    struct extender_args *x;
    struct extender_preempt_args *p;
    struct common_error err;
    struct common_buf b;
    enum common_rc rc;
    uint8_t verdict[8] = {0};

    if (!a)
        return COMMON_ENOMEM;
    common_buf_init(&b, 1 << 20);
    rc = extender_decode_args(a, body, len, NULL, &x, &err);
    if (rc == COMMON_OK)
        rc = extender_encode_filter_result(&b, x, verdict, NULL, &err);
    if (rc == COMMON_OK)
        rc = extender_decode_args(a, full, full_len, NULL, &x, &err);
    if (rc == COMMON_OK)
        rc = extender_encode_filter_result(&b, x, verdict, NULL, &err);
    if (rc == COMMON_OK)
        rc = extender_decode_preempt_args(a, pre, pre_len, NULL, &p, &err);
    if (rc == COMMON_OK)
        rc = extender_encode_preempt_result(&b, p, NULL, &err);
    if (rc != COMMON_OK)
        ck_assert_msg(rc == COMMON_ENOMEM && err.code == COMMON_ENOMEM, "rc %d: %s", rc, err.msg);
    common_buf_free(&b);
    common_arena_destroy(a);
    return rc;
}

START_TEST(test_allocation_failures)
{
    size_t len, full_len, pre_len;
    char *body =
        read_case_file("filter-cache-mode-lists-passing-names-and-splits-the-two-failure-maps",
                       "request.json", &len);
    char *full = read_case_file("filter-full-nodes-echoes-the-passing-node-objects-byte-for-byte",
                                "request.json", &full_len);
    char *pre = read_case_file("preempt-full-victims-are-answered-with-uids-only", "request.json",
                               &pre_len);
    unsigned long n;
    int done = 0;

    ck_assert_ptr_nonnull(body);
    ck_assert_ptr_nonnull(full);
    ck_assert_ptr_nonnull(pre);
    for (n = 1; n < 100000 && !done; n++) {
        enum common_rc rc;

        common_alloc_fail_at(n);
        rc = torture_once(body, len, full, full_len, pre, pre_len);
        if (!common_alloc_failed()) {
            ck_assert_int_eq(rc, COMMON_OK);
            done = 1;
        }
        common_alloc_fail_at(0);
    }
    ck_assert_msg(done, "never completed");
    ck_assert_uint_gt(n, 20); /* it did allocate, and each failure was survived */
    free(body);
    free(full);
    free(pre);
}
END_TEST

static Suite *codec_suite(void)
{
    Suite *s = suite_create("extender_codec");
    TCase *tc = tcase_create("fixtures");
    TCase *tcc = tcase_create("c");

    collect_cases();
    tcase_add_test(tc, test_fixture_count);
    tcase_add_loop_test(tc, test_fixture, 0, n_cases);
    suite_add_tcase(s, tc);
    tcase_set_timeout(tcc, 120);
    tcase_add_test(tcc, test_five_thousand_names_round_trip);
    tcase_add_test(tcc, test_answer_lists_only_the_nodes_that_matter);
    tcase_add_test(tcc, test_answer_rules);
    tcase_add_test(tcc, test_default_node_cap);
    tcase_add_test(tcc, test_default_body_cap);
    tcase_add_test(tcc, test_filter_exact_bytes);
    tcase_add_test(tcc, test_reason_bytes_that_are_not_utf8);
    tcase_add_test(tcc, test_encoder_errors_leave_the_buffer);
    tcase_add_test(tcc, test_scanner_agrees_with_jansson);
    tcase_add_test(tcc, test_depth_cap_in_json_check);
    tcase_add_test(tcc, test_nul_byte_is_not_the_end);
    tcase_add_test(tcc, test_allocation_failures);
    suite_add_tcase(s, tcc);
    return s;
}

int main(void)
{
    return testutil_run_suite(codec_suite());
}
