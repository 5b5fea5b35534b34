/*
 * tests/unit/test_topology.c - the pure topology core (topology/topology.h) called directly:
 * domain keys by full path, nodes without a label, the scope order (best fit, preferred
 * climbing, sticky first), the packing rank, request synonyms, and allocation failures. The
 * placement rules end to end through the gang planner are fixtures under
 * tests/fixtures/topology/ (run by test_gang).
 */
#include <string.h>

#include "common/alloc.h"
#include "testutil.h"
#include "topology/topology.h"

/* 2 blocks x 2 racks named r0/r1 in both, 2 nodes each, then one node without a rack */
#define NN 9
static const char *vals[NN * 3] = {
    "b0", "r0", "h0", "b0", "r0", "h1", "b0", "r1", "h2", "b0", "r1", "h3", "b1", "r0",
    "h4", "b1", "r0", "h5", "b1", "r1", "h6", "b1", "r1", "h7", "b1", NULL, "h8",
};

START_TEST(domains_are_keyed_by_the_full_path)
{
    struct topo_domains d;
    struct common_error e;

    ck_assert_int_eq(topo_domains_build(vals, NN, 3, &d, &e), COMMON_OK);
    /* b0/r0 and b1/r0 differ although both racks are named r0 */
    ck_assert_int_ne(d.dom[0 * 3 + 1], d.dom[4 * 3 + 1]);
    ck_assert_int_eq(d.dom[0 * 3 + 1], d.dom[1 * 3 + 1]);
    ck_assert_str_eq(d.path[d.dom[4 * 3 + 1]], "b1/r0");
    ck_assert_int_eq(d.parent[d.dom[4 * 3 + 1]], d.dom[4 * 3 + 0]);
    /* the node without a rack label is in block b1 but in no rack and no host domain */
    ck_assert_int_eq(d.dom[8 * 3 + 0], d.dom[4 * 3 + 0]);
    ck_assert_int_eq(d.dom[8 * 3 + 1], -1);
    ck_assert_int_eq(d.dom[8 * 3 + 2], -1);
    /* 2 blocks + 4 racks + 8 hosts */
    ck_assert_uint_eq(d.n_domains, 14);
    ck_assert_int_eq(topo_domain_find(&d, 1, "b1/r1"), d.dom[6 * 3 + 1]);
    ck_assert_int_eq(topo_domain_find(&d, 1, "r1"), -1);
    topo_domains_free(&d);
}
END_TEST

START_TEST(scopes_are_best_fit_then_wider_levels_and_sticky_first)
{
    struct topo_domains d;
    struct common_error e;
    struct topo_scope sc[32];
    size_t n;
    /* free pods per node: b0/r0 2+2, b0/r1 1+1, b1/r0 3+0, b1/r1 2+2, the rackless node 5 */
    int64_t cap[NN] = {2, 2, 1, 1, 3, 0, 2, 2, 5};
    struct topo_want req = {1, -1, -1, 0}, pref = {-1, 1, -1, 0};

    ck_assert_int_eq(topo_domains_build(vals, NN, 3, &d, &e), COMMON_OK);
    /* required rack, need 3: racks with 4, 3, 4 hold it (b0/r1 has 2): least capacity first */
    ck_assert_int_eq(topo_scopes(&d, &req, cap, 3, -1, sc, &n, &e), COMMON_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(d.path[sc[0].domain], "b1/r0");
    ck_assert_str_eq(d.path[sc[1].domain], "b0/r0");
    ck_assert_str_eq(d.path[sc[2].domain], "b1/r1");
    ck_assert_int_eq(sc[0].capacity, 3);
    /* sticky: b1/r1 goes first when it still qualifies */
    ck_assert_int_eq(topo_scopes(&d, &req, cap, 3, topo_domain_find(&d, 1, "b1/r1"), sc, &n, &e),
                     COMMON_OK);
    ck_assert_str_eq(d.path[sc[0].domain], "b1/r1");
    ck_assert_str_eq(d.path[sc[1].domain], "b1/r0");
    /* required rack, need 5: nothing (the largest rack has 4) */
    ck_assert_int_eq(topo_scopes(&d, &req, cap, 5, -1, sc, &n, &e), COMMON_OK);
    ck_assert_uint_eq(n, 0);
    {
        char why[256];
        topo_wait_reason(&d, "rack", 1, cap, 5, why, sizeof(why));
        ck_assert_str_eq(why, "no rack domain has room for the 5 pods the gang needs; the "
                              "largest, b0/r0, has room for 4");
    }
    /* preferred rack, need 5: no rack, then the blocks (b0 has 6, b1 has 14), then the cluster */
    ck_assert_int_eq(topo_scopes(&d, &pref, cap, 5, -1, sc, &n, &e), COMMON_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(d.path[sc[0].domain], "b0");
    ck_assert_str_eq(d.path[sc[1].domain], "b1");
    ck_assert_int_eq(sc[2].level, -1);
    ck_assert_int_eq(sc[2].capacity, 18);
    topo_domains_free(&d);
}
END_TEST

START_TEST(rank_packs_into_the_fullest_sub_domain_first)
{
    struct topo_domains d;
    struct common_error e;
    int64_t cap[NN] = {2, 2, 1, 1, 3, 0, 2, 2, 5};
    int32_t rank[NN];
    struct topo_scope b1 = {0, -1, 0}, all = {-1, -1, 0};

    ck_assert_int_eq(topo_domains_build(vals, NN, 3, &d, &e), COMMON_OK);
    b1.domain = topo_domain_find(&d, 0, "b1");
    /* inside b1, racks by room: b1/r1 (4) before b1/r0 (3); nodes of one rack share a rank;
     * the rackless node comes last; nodes outside b1 are out */
    ck_assert_int_eq(topo_node_rank(&d, &b1, 2, cap, rank, &e), COMMON_OK);
    ck_assert_int_eq(rank[6], rank[7]);
    ck_assert_int_lt(rank[6], rank[4]);
    ck_assert_int_eq(rank[4], rank[5]);
    ck_assert_int_lt(rank[4], rank[8]);
    ck_assert_int_eq(rank[0], INT32_MAX);
    /* the whole cluster: the block with the most room (b1, 14) first */
    ck_assert_int_eq(topo_node_rank(&d, &all, 2, cap, rank, &e), COMMON_OK);
    ck_assert_int_lt(rank[6], rank[0]);
    ck_assert_int_lt(rank[8], rank[0]);
    topo_domains_free(&d);
}
END_TEST

START_TEST(request_spellings_are_synonyms)
{
    struct common_kv ann[] = {
        {"kai.scheduler/topology-required-placement", "example.com/block"},
        {"trainsched.io/topology-required", "example.com/block"},
        {"trainsched.io/topology-preferred", "example.com/rack"},
        {"kai.scheduler/topology", "gpus"},
        {"unrelated", "x"},
    };
    static const char *const levels[] = {"example.com/block", "example.com/rack"};
    struct topo_request rq;
    struct topo_want w;
    struct common_error e;

    ck_assert_int_eq(topo_request_parse(ann, 5, &rq, &e), COMMON_OK);
    ck_assert_str_eq(rq.required, "example.com/block");
    ck_assert_str_eq(rq.preferred, "example.com/rack");
    ck_assert_str_eq(rq.topology, "gpus");
    ck_assert_int_eq(topo_request_resolve(&rq, "gpus", levels, 2, 8, &w, &e), COMMON_OK);
    ck_assert_int_eq(w.required, 0);
    ck_assert_int_eq(w.preferred, 1);
    ck_assert_int_eq(w.slice, -1);
    ck_assert(topo_is_annotation("kueue.x-k8s.io/podset-slice-size"));
    ck_assert(!topo_is_annotation("kueue.x-k8s.io/queue-name"));
    ck_assert_int_eq(topo_request_parse(ann, 0, &rq, &e), COMMON_OK);
    ck_assert(topo_request_empty(&rq));
}
END_TEST

START_TEST(allocation_failures_are_clean)
{
    int passed = 0;
    unsigned long k;
    int64_t cap[NN] = {1, 1, 1, 1, 1, 1, 1, 1, 1};

    for (k = 1; k < 100 && !passed; k++) {
        struct topo_domains d;
        struct common_error e;
        struct topo_scope sc[32];
        struct topo_want want = {1, -1, -1, 0};
        size_t n = 0;
        int32_t rank[NN];
        enum common_rc rc;
        memset(&d, 0, sizeof(d));
        common_alloc_fail_at(k);
        rc = topo_domains_build(vals, NN, 3, &d, &e);
        if (!rc)
            rc = topo_scopes(&d, &want, cap, 2, -1, sc, &n, &e);
        if (!rc)
            rc = topo_node_rank(&d, &sc[0], 2, cap, rank, &e);
        common_alloc_fail_at(0);
        ck_assert_msg(rc == COMMON_OK || rc == COMMON_ENOMEM, "fail at %lu: %s", k,
                      common_rc_name(rc));
        if (rc == COMMON_OK && !common_alloc_failed()) {
            passed = 1;
            ck_assert_uint_eq(n, 4);
        }
        topo_domains_free(&d);
    }
    ck_assert(passed);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topology");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, domains_are_keyed_by_the_full_path);
    tcase_add_test(tc, scopes_are_best_fit_then_wider_levels_and_sticky_first);
    tcase_add_test(tc, rank_packs_into_the_fullest_sub_domain_first);
    tcase_add_test(tc, request_spellings_are_synonyms);
    tcase_add_test(tc, allocation_failures_are_clean);
    suite_add_tcase(s, tc);
    return testutil_run_suite(s);
}
