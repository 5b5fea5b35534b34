/*
 * tests/unit/test_slurmrest.c - the slurmrestd client against a real Slurm 22.05 (slurmctld,
 * four slurmd, slurmrestd with JWT) started by tests/tools/slurm/slurm-up.sh on private ports
 * and stopped by slurm-down.sh. Needs root (slurm-up.sh installs Debian's packages when missing).
 * Checks: version discovery, a gang's placeholder job submitted, found by its comment, running
 * on expanded nodes, a second job pending on Resources while the partition is full and running
 * once the first is cancelled, cancel of a forgotten job, the three token sources (literal,
 * file, HS256 key) and wrong ones, Slurm's own error for an unknown partition, and the metrics.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "integrations/slurmrest.h"
#include "slurmbed.h"
#include "testutil.h"

static struct slurmbed bed;
static char url[128], jwt[4096], keyfile[512], dir[256];
static int up;

static void slurm_up(void)
{
    up = slurmbed_up(&bed, "ts-slurmrest", 21000 + (int)(getpid() % 400) * 10, 4, 2) == 0;
    snprintf(url, sizeof(url), "%s", bed.url);
    snprintf(jwt, sizeof(jwt), "%s", bed.jwt);
    snprintf(dir, sizeof(dir), "%s", bed.dir);
    snprintf(keyfile, sizeof(keyfile), "%s/etc/jwt_hs256.key", bed.dir);
}

static void slurm_down(void)
{
    slurmbed_down(&bed);
}

static struct slurmrest *client(struct common_metrics *m, const char *token, const char *token_file,
                                const char *key_file)
{
    struct slurmrest_opts o = {0};
    struct common_error err = {0};
    struct slurmrest *s;

    ck_assert_msg(up, "slurm-up.sh did not bring Slurm up (see %s/log)", dir);
    o.url = url;
    o.user = "root";
    o.token = token;
    o.token_file = token_file;
    o.key_file = key_file;
    o.metrics = m;
    o.timeout_ms = 20000;
    s = slurmrest_create(&o, &err);
    ck_assert_msg(s, "%s", err.msg);
    return s;
}

/* a placeholder body of n nodes, all 2 CPUs of each (the nodes have 2), with this comment */
static json_t *body_of(int n, const char *name, const char *partition)
{
    json_t *tj =
        json_pack("{s:{s:s,s:s,s:s}}", "metadata", "namespace", "t", "name", name, "uid", name);
    json_t *js = json_pack("{s:{s:[{s:s,s:i,s:{s:{s:i,s:{s:{s:[{s:s,s:s,s:{s:{s:s}}}]}}}}}]}}",
                           "spec", "replicatedJobs", "name", "node", "replicas", 1, "template",
                           "spec", "parallelism", n, "template", "spec", "containers", "name",
                           "node", "image", "x", "resources", "requests", "cpu", "2");
    struct slurm_config cfg = {0};
    struct common_error err = {0};
    json_t *body = NULL;

    cfg.partition = partition;
    ck_assert_msg(slurm_submission(tj, NULL, js, &cfg, &body, &err) == COMMON_OK, "%s", err.msg);
    json_decref(tj);
    json_decref(js);
    return body;
}

/* poll until job id reaches phase (30 s at most); the last state in *st */
static enum common_rc wait_phase(struct slurmrest *s, struct common_arena *a, int64_t id,
                                 enum slurm_phase phase, struct slurm_job_state *st)
{
    struct common_error err = {0};
    enum common_rc rc = COMMON_OK;

    for (int i = 0; i < 150; i++) {
        rc = slurmrest_job(s, a, id, st, &err);
        ck_assert_msg(rc == COMMON_OK, "job %lld: %s", (long long)id, err.msg);
        /* COMPLETING is ended, but the final state (CANCELLED, TIMEOUT, ...) follows */
        if (st->phase == phase && strcmp(st->state, "COMPLETING") != 0)
            return COMMON_OK;
        usleep(200000);
    }
    return COMMON_ETIMEOUT;
}

START_TEST(discovers_v0038_from_the_server)
{
    struct slurmrest *s = client(NULL, jwt, NULL, NULL);
    struct common_error err = {0};
    const char *v = NULL;

    ck_assert_msg(slurmrest_version(s, &v, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_str_eq(v, "v0.0.38");
    slurmrest_destroy(s);
}
END_TEST

START_TEST(a_gang_runs_waits_while_the_partition_is_full_and_starts_after_a_cancel)
{
    struct common_metrics *m = common_metrics_create();
    struct slurmrest *s = client(m, jwt, NULL, NULL);
    struct common_arena *a = common_arena_create(0);
    struct common_error err = {0};
    struct slurm_job_state st, found;
    json_t *big = body_of(4, "big", NULL), *small = body_of(2, "small", NULL);
    int64_t id1 = 0, id2 = 0;

    ck_assert_msg(slurmrest_submit(s, big, &id1, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_int_gt(id1, 0);
    ck_assert_msg(wait_phase(s, a, id1, SLURM_RUNNING, &st) == COMMON_OK, "job %lld stayed %s",
                  (long long)id1, st.summary);
    ck_assert_uint_eq(st.nnodes, 4);
    ck_assert_str_eq(st.nodes[0], "n1");
    ck_assert_str_eq(st.nodes[3], "n4");

    /* the partition is full: the second gang waits, with Slurm's reason */
    ck_assert_msg(slurmrest_submit(s, small, &id2, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_msg(slurmrest_find(s, a, "trainsched:t/small/small", &found, &err) == COMMON_OK, "%s",
                  err.msg);
    ck_assert_int_eq(found.job_id, id2);
    ck_assert_int_eq(found.phase, SLURM_PENDING);
    for (int i = 0; i < 50 && strcmp(found.reason, "None") == 0; i++) {
        usleep(200000);
        ck_assert(slurmrest_job(s, a, id2, &found, &err) == COMMON_OK);
    }
    ck_assert_int_eq(found.phase, SLURM_PENDING);
    ck_assert_msg(strcmp(found.reason, "Resources") == 0 || strcmp(found.reason, "Priority") == 0,
                  "pending for %s", found.reason);

    /* an admin's cancel ends the first; the second then runs on two nodes */
    ck_assert_msg(slurmrest_cancel(s, id1, &err) == COMMON_OK, "%s", err.msg);
    ck_assert(wait_phase(s, a, id1, SLURM_ENDED, &st) == COMMON_OK);
    ck_assert_str_eq(st.state, "CANCELLED");
    ck_assert_msg(wait_phase(s, a, id2, SLURM_RUNNING, &st) == COMMON_OK, "%s", st.summary);
    ck_assert_uint_eq(st.nnodes, 2);
    ck_assert_msg(slurmrest_cancel(s, id2, &err) == COMMON_OK, "%s", err.msg);
    ck_assert_msg(slurmrest_cancel(s, 999999, &err) == COMMON_OK, "forgotten job: %s", err.msg);

    /* metrics: every call timed; nothing counted as an error */
    ck_assert(
        common_metric_value(common_metrics_histogram(m, "trainsched_slurmrest_request_seconds",
                                                     NULL, (const char *const[]){"verb", NULL},
                                                     (const double[]){0.005, 0.01, 0.025, 0.05, 0.1,
                                                                      0.25, 0.5, 1, 2.5, 5, 10},
                                                     11),
                            (const char *const[]){"submit", NULL}) == 2);
    json_decref(big);
    json_decref(small);
    common_arena_destroy(a);
    slurmrest_destroy(s);
    common_metrics_destroy(m);
}
END_TEST

START_TEST(an_unknown_partition_or_a_gang_larger_than_the_cluster_quotes_slurm)
{
    struct common_metrics *m = common_metrics_create();
    struct slurmrest *s = client(m, jwt, NULL, NULL);
    struct common_error err = {0};
    json_t *body = body_of(1, "nopart", "nope");
    int64_t id = 0;
    struct common_metric *errors;

    ck_assert_int_eq(slurmrest_submit(s, body, &id, &err), COMMON_EAPI);
    ck_assert_msg(strstr(err.msg, "Invalid partition name specified"), "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "POST /job/submit"), "%s", err.msg);
    /* a gang larger than the whole cluster (4 nodes): Slurm refuses it at submit */
    json_decref(body);
    body = body_of(5, "toobig", NULL);
    ck_assert_int_eq(slurmrest_submit(s, body, &id, &err), COMMON_EAPI);
    /* 5 nodes of 2 CPUs: Slurm names the CPUs (or, asked for fewer, the node count) */
    ck_assert_msg(strstr(err.msg, "More processors requested than permitted") ||
                      strstr(err.msg, "Node count specification invalid"),
                  "%s", err.msg);
    errors = common_metrics_counter(m, "trainsched_slurmrest_errors_total", NULL,
                                    (const char *const[]){"verb", "code", NULL});
    ck_assert(common_metric_value(errors, (const char *const[]){"submit", "500", NULL}) == 2);
    json_decref(body);
    slurmrest_destroy(s);
    common_metrics_destroy(m);
}
END_TEST

START_TEST(a_token_file_and_a_minted_token_work_and_wrong_ones_fail)
{
    char path[600];
    FILE *f;
    struct common_error err = {0};
    struct slurmrest *s;
    json_t *answer = NULL;

    snprintf(path, sizeof(path), "%s/token", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "SLURM_JWT=%s\n", jwt);
    fclose(f);
    s = client(NULL, NULL, path, NULL);
    ck_assert_msg(slurmrest_call(s, "GET", "/ping", NULL, &answer, &err) == COMMON_OK, "%s",
                  err.msg);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(answer, "pings"), 0), "ping")),
                     "UP");
    json_decref(answer);
    /* the file is re-read when it changes: a wrong token now fails */
    usleep(20000);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "not-a-token\n");
    fclose(f);
    ck_assert_int_ne(slurmrest_call(s, "GET", "/ping", NULL, NULL, &err), COMMON_OK);
    slurmrest_destroy(s);

    s = client(NULL, NULL, NULL, keyfile);
    ck_assert_msg(slurmrest_call(s, "GET", "/ping", NULL, NULL, &err) == COMMON_OK, "minted: %s",
                  err.msg);
    slurmrest_destroy(s);

    /* a token minted with another key, and an expired one */
    {
        char tok[2048];
        const unsigned char other[] = "0123456789abcdef0123456789abcdef";
        struct common_buf key;

        ck_assert(slurmrest_mint_token(other, 32, "root", (int64_t)time(NULL), 600, tok,
                                       sizeof(tok), &err) == COMMON_OK);
        s = client(NULL, tok, NULL, NULL);
        ck_assert_int_ne(slurmrest_call(s, "GET", "/ping", NULL, NULL, &err), COMMON_OK);
        slurmrest_destroy(s);

        common_buf_init(&key, 4096);
        ck_assert(common_buf_read_file(&key, keyfile, &err) == COMMON_OK);
        ck_assert(slurmrest_mint_token((const unsigned char *)key.data, key.len, "root",
                                       (int64_t)time(NULL) - 7200, 600, tok, sizeof(tok),
                                       &err) == COMMON_OK);
        common_buf_free(&key);
        s = client(NULL, tok, NULL, NULL);
        ck_assert_int_ne(slurmrest_call(s, "GET", "/ping", NULL, NULL, &err), COMMON_OK);
        slurmrest_destroy(s);
    }
}
END_TEST

START_TEST(a_missing_user_name_or_token_is_a_config_error)
{
    struct slurmrest_opts o = {0};
    struct common_error err = {0};

    o.url = "http://127.0.0.1:1";
    o.token = "x";
    ck_assert_ptr_null(slurmrest_create(&o, &err));
    ck_assert_msg(strstr(err.msg, "user name"), "%s", err.msg);
    o.user = "root";
    o.token = NULL;
    ck_assert_ptr_null(slurmrest_create(&o, &err));
    ck_assert_msg(strstr(err.msg, "token"), "%s", err.msg);
}
END_TEST

START_TEST(slurmrestd_down_is_a_transport_error_not_a_crash)
{
    struct slurmrest_opts o = {0};
    struct common_error err = {0};
    struct slurmrest *s;

    o.url = "http://127.0.0.1:1";
    o.user = "root";
    o.token = "x";
    o.api_version = "v0.0.38";
    o.timeout_ms = 3000;
    o.max_retries = 2;
    s = slurmrest_create(&o, &err);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(slurmrest_call(s, "GET", "/ping", NULL, NULL, &err), COMMON_EIO);
    ck_assert_msg(strstr(err.msg, "attempts"), "%s", err.msg);
    slurmrest_destroy(s);
}
END_TEST

/* libcurl is held to HTTP(S): a file:// URL reads no file (it would, with libcurl's defaults,
 * answer the file's text as if slurmrestd had sent it) */
START_TEST(a_url_that_is_not_http_reads_nothing)
{
    struct slurmrest_opts o = {0};
    struct common_error err = {0};
    struct slurmrest *s;
    char tmp[] = "/tmp/ts-slurmfile-XXXXXX", path[512], base[600];
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(tmp));
    snprintf(path, sizeof(path), "%s/slurm", tmp);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/slurm/v0.0.38", tmp);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/slurm/v0.0.38/ping", tmp);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"errors\": []}", f);
    fclose(f);
    snprintf(base, sizeof(base), "file://%s", tmp);
    o.url = base;
    o.user = "root";
    o.token = "x";
    o.api_version = "v0.0.38";
    o.timeout_ms = 3000;
    o.max_retries = 1;
    s = slurmrest_create(&o, &err);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(slurmrest_call(s, "GET", "/ping", NULL, NULL, &err), COMMON_EIO);
    ck_assert_msg(strstr(err.msg, "nsupported protocol") || strstr(err.msg, "not supported"), "%s",
                  err.msg);
    slurmrest_destroy(s);
    unlink(path);
    snprintf(path, sizeof(path), "%s/slurm/v0.0.38", tmp);
    rmdir(path);
    snprintf(path, sizeof(path), "%s/slurm", tmp);
    rmdir(path);
    rmdir(tmp);
}
END_TEST

START_TEST(minted_tokens_have_slurms_claims)
{
    char tok[1024];
    struct common_error err = {0};
    const unsigned char key[] = "k";

    ck_assert(slurmrest_mint_token(key, 1, "alice", 1000, 60, tok, sizeof(tok), &err) == COMMON_OK);
    /* header and payload are fixed for these inputs: base64url without padding */
    ck_assert_msg(strncmp(tok, "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.", 37) == 0, "%s", tok);
    /* {"exp":1060,"iat":1000,"sun":"alice"} */
    ck_assert_msg(strncmp(tok + 37, "eyJleHAiOjEwNjAsImlhdCI6MTAwMCwic3VuIjoiYWxpY2UifQ.", 51) == 0,
                  "%s", tok);
    ck_assert_int_eq(slurmrest_mint_token(key, 1, "alice", 1000, 60, tok, 40, &err),
                     COMMON_ETOOBIG);
    ck_assert_int_eq(slurmrest_mint_token(key, 0, "alice", 1000, 60, tok, sizeof(tok), &err),
                     COMMON_EINVAL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("slurmrest");
    TCase *tc = tcase_create("real slurmrestd");

    tcase_add_unchecked_fixture(tc, slurm_up, slurm_down);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, discovers_v0038_from_the_server);
    tcase_add_test(tc, a_gang_runs_waits_while_the_partition_is_full_and_starts_after_a_cancel);
    tcase_add_test(tc, an_unknown_partition_or_a_gang_larger_than_the_cluster_quotes_slurm);
    tcase_add_test(tc, a_token_file_and_a_minted_token_work_and_wrong_ones_fail);
    suite_add_tcase(s, tc);
    tc = tcase_create("offline");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, slurmrestd_down_is_a_transport_error_not_a_crash);
    tcase_add_test(tc, a_url_that_is_not_http_reads_nothing);
    tcase_add_test(tc, minted_tokens_have_slurms_claims);
    tcase_add_test(tc, a_missing_user_name_or_token_is_a_config_error);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    return testutil_run_suite(suite());
}
