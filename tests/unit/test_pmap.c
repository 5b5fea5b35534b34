/*
 * tests/unit/test_pmap.c - common/pmap: the persistent map behind the watch caches.
 *
 * The main test runs random operations against a reference model (an array of items indexed
 * by the rank of the key in sorted order), takes snapshots at random points with a copy of the
 * model they must show, and checks them again much later; at every check it also asserts that
 * exactly the items no version holds have been released, each once. Other tests cover prefix
 * iteration, batches and publish, one writer with three reader threads (run this file under
 * ASan and TSan) and allocation failure at every allocation of every operation.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/pmap.h"
#include "testutil.h"

/*
 * EXPECT - a check for hot loops: ck_assert_* writes a mark point to Check's pipe on every
 * pass (millions of writes here); this costs nothing until it fails.
 */
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

/* ---- keys: NNS namespaces x NOBJ names, sorted once ---- */

#define NNS 6
#define NOBJ 40
#define NKEYS (NNS * NOBJ)
#define KEYMAX 32

static char keys[NKEYS][KEYMAX];

static int cmp_key(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void keys_init(void)
{
    for (int ns = 0; ns < NNS; ns++)
        for (int o = 0; o < NOBJ; o++)
            snprintf(keys[ns * NOBJ + o], KEYMAX, "ns-%d/obj-%02d", ns, o);
    qsort(keys, NKEYS, KEYMAX, cmp_key);
}

/* ---- a deterministic random source (splitmix64) ---- */

static uint64_t rnd_state;

static uint64_t rnd(void)
{
    uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static unsigned rnd_below(unsigned n)
{
    return (unsigned)(rnd() % n);
}

/* ---- items with release counts ---- */

struct titem {
    int rank;     /* key the item was set under */
    int released; /* times the release callback ran for it */
};

#define MAXITEMS 40000
static struct titem pool[MAXITEMS];
static int npool;
static int releases;

static void count_release(void *item, void *ctx)
{
    struct titem *it = item;

    it->released++;
    (*(int *)ctx)++;
}

static struct titem *new_item(int rank)
{
    struct titem *it;

    EXPECT(npool < MAXITEMS, "item pool exhausted");
    it = &pool[npool++];
    it->rank = rank;
    it->released = 0;
    return it;
}

static void pool_reset(void)
{
    npool = 0;
    releases = 0;
}

/* ---- the reference model and checks against it ---- */

struct model {
    struct titem *items[NKEYS]; /* by rank; NULL: absent */
    size_t size;
};

struct walk_state {
    const struct model *md;
    const char *prefix;
    size_t plen;
    int next; /* next rank to look at */
    size_t seen;
};

/* the next rank at or after from that is present in md and starts with prefix, or NKEYS */
static int next_rank(const struct walk_state *w, int from)
{
    while (from < NKEYS && (!w->md->items[from] || strncmp(keys[from], w->prefix, w->plen) != 0))
        from++;
    return from;
}

static int visit_model(const char *key, void *item, void *ctx)
{
    struct walk_state *w = ctx;
    int r = next_rank(w, w->next);

    EXPECT(r < NKEYS, "extra key %s", key);
    EXPECT(strcmp(key, keys[r]) == 0, "key %s where %s was expected", key, keys[r]);
    EXPECT(item == w->md->items[r], "wrong item under %s", key);
    EXPECT(((struct titem *)item)->released == 0, "released item under %s", key);
    w->next = r + 1;
    w->seen++;
    return 0;
}

static size_t walk_snap(const struct common_pmap_snap *s, const struct model *md,
                        const char *prefix)
{
    struct walk_state w = {md, prefix, strlen(prefix), 0, 0};

    EXPECT(common_pmap_snap_foreach_prefix(s, prefix, visit_model, &w) == 0, "walk stopped");
    EXPECT(next_rank(&w, w.next) == NKEYS, "prefix %s: a key is missing", prefix);
    return w.seen;
}

static void check_snap(const struct common_pmap_snap *s, const struct model *md)
{
    struct walk_state w = {md, "", 0, 0, 0};
    char prefix[16];

    EXPECT(common_pmap_snap_size(s) == md->size, "snapshot size %zu, want %zu",
           common_pmap_snap_size(s), md->size);
    EXPECT(common_pmap_snap_foreach(s, visit_model, &w) == 0, "walk stopped");
    EXPECT(w.seen == md->size, "walked %zu keys, want %zu", w.seen, md->size);
    for (int r = 0; r < NKEYS; r++)
        EXPECT(common_pmap_snap_get(s, keys[r]) == md->items[r], "snap_get %s", keys[r]);
    EXPECT(common_pmap_snap_get(s, "ns-0/absent") == NULL, "absent key found");
    snprintf(prefix, sizeof(prefix), "ns-%d/", (int)rnd_below(NNS));
    walk_snap(s, md, prefix);
}

static void check_writer(const struct common_pmap *m, const struct model *md)
{
    struct common_error err;
    enum common_rc rc = common_pmap_check(m, &err);

    EXPECT(rc == COMMON_OK, "check: %s", err.msg);
    EXPECT(common_pmap_size(m) == md->size, "size %zu, want %zu", common_pmap_size(m), md->size);
    for (int r = 0; r < NKEYS; r++)
        EXPECT(common_pmap_get(m, keys[r]) == md->items[r], "get %s", keys[r]);
}

/* ---- random operations against the model ---- */

#define MAXSNAPS 24

struct held {
    struct common_pmap_snap *snap;
    struct model md;
};

/* Every item that no version holds has been released exactly once; the others never. */
static void check_releases(const struct model *writer, const struct model *published,
                           const struct held *held, int nheld)
{
    static unsigned char live[MAXITEMS];
    int dead = 0;

    memset(live, 0, sizeof(live));
    for (int r = 0; r < NKEYS; r++) {
        if (writer->items[r])
            live[writer->items[r] - pool] = 1;
        if (published->items[r])
            live[published->items[r] - pool] = 1;
        for (int h = 0; h < nheld; h++)
            if (held[h].md.items[r])
                live[held[h].md.items[r] - pool] = 1;
    }
    for (int i = 0; i < npool; i++) {
        EXPECT(pool[i].released == (live[i] ? 0 : 1), "item %d released %d times (%s)", i,
               pool[i].released, live[i] ? "live" : "dead");
        dead += !live[i];
    }
    ck_assert_int_eq(releases, dead);
}

START_TEST(test_random_against_model)
{
    static struct held held[MAXSNAPS];
    static struct model writer, published;
    struct common_pmap *m;
    int nheld = 0;

    keys_init();
    pool_reset();
    rnd_state = 0x5eed0000u + (uint64_t)_i;
    memset(&writer, 0, sizeof(writer));
    memset(&published, 0, sizeof(published));
    ck_assert_int_eq(common_pmap_create(count_release, &releases, &m), COMMON_OK);
    for (int op = 0; op < 30000; op++) {
        unsigned what = rnd_below(100);
        int r = (int)rnd_below(NKEYS);

        if (what < 55) {
            struct titem *it = new_item(r);

            EXPECT(common_pmap_set(m, keys[r], it) == COMMON_OK, "set %s", keys[r]);
            writer.size += writer.items[r] == NULL;
            writer.items[r] = it;
        } else if (what < 90) {
            enum common_rc want = writer.items[r] ? COMMON_OK : COMMON_ENOTFOUND;

            EXPECT(common_pmap_del(m, keys[r]) == want, "del %s", keys[r]);
            writer.size -= writer.items[r] != NULL;
            writer.items[r] = NULL;
        } else if (what < 95) {
            EXPECT(common_pmap_publish(m) == COMMON_OK, "publish");
            published = writer;
        } else if (what < 98 && nheld < MAXSNAPS) {
            held[nheld].snap = common_pmap_snapshot(m);
            held[nheld].md = published;
            check_snap(held[nheld].snap, &published);
            nheld++;
        } else if (nheld > 0) {
            int h = (int)rnd_below((unsigned)nheld);

            check_snap(held[h].snap, &held[h].md);
            common_pmap_snap_release(held[h].snap);
            held[h] = held[--nheld];
        }
        if (op % 1000 == 999) {
            check_writer(m, &writer);
            for (int h = 0; h < nheld; h++)
                check_snap(held[h].snap, &held[h].md);
            check_releases(&writer, &published, held, nheld);
        }
    }
    check_writer(m, &writer);
    check_releases(&writer, &published, held, nheld);
    common_pmap_destroy(m);
    /* the snapshots outlive the map */
    for (int h = 0; h < nheld; h++) {
        check_snap(held[h].snap, &held[h].md);
        common_pmap_snap_release(held[h].snap);
    }
    for (int i = 0; i < npool; i++)
        EXPECT(pool[i].released == 1, "item %d released %d times", i, pool[i].released);
    ck_assert_int_eq(releases, npool);
}
END_TEST

/* ---- basics ---- */

START_TEST(test_empty_and_invalid)
{
    struct common_pmap *m;
    struct common_pmap_snap *s;
    struct model empty;
    int dummy = 0;

    keys_init();
    memset(&empty, 0, sizeof(empty));
    ck_assert_int_eq(common_pmap_create(NULL, NULL, &m), COMMON_OK);
    ck_assert_uint_eq(common_pmap_size(m), 0);
    ck_assert_ptr_null(common_pmap_get(m, "a/b"));
    ck_assert_ptr_null(common_pmap_get(m, NULL));
    ck_assert_int_eq(common_pmap_del(m, "a/b"), COMMON_ENOTFOUND);
    ck_assert_int_eq(common_pmap_del(m, NULL), COMMON_EINVAL);
    ck_assert_int_eq(common_pmap_set(m, NULL, &dummy), COMMON_EINVAL);
    ck_assert_int_eq(common_pmap_set(m, "a/b", NULL), COMMON_EINVAL);
    s = common_pmap_snapshot(m);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(common_pmap_snap_seq(s), 0);
    check_snap(s, &empty);
    ck_assert_int_eq(common_pmap_snap_foreach_prefix(s, NULL, visit_model, NULL), 0);
    ck_assert_int_eq(common_pmap_publish(m), COMMON_OK); /* nothing changed: no new version */
    common_pmap_snap_release(s);
    s = common_pmap_snapshot(m);
    ck_assert_uint_eq(common_pmap_snap_seq(s), 0);
    common_pmap_snap_release(s);
    common_pmap_snap_release(NULL);
    common_pmap_destroy(m);
    common_pmap_destroy(NULL);
}
END_TEST

START_TEST(test_batch_and_publish)
{
    struct common_pmap *m;
    struct common_pmap_snap *s0, *s1, *s1b, *s2;
    struct titem *a, *b, *c;

    pool_reset();
    ck_assert_int_eq(common_pmap_create(count_release, &releases, &m), COMMON_OK);
    a = new_item(0);
    b = new_item(1);
    c = new_item(2);
    ck_assert_int_eq(common_pmap_set(m, "ns/a", a), COMMON_OK);
    ck_assert_int_eq(common_pmap_set(m, "ns/b", b), COMMON_OK);
    ck_assert_ptr_eq(common_pmap_get(m, "ns/a"), a); /* the writer sees its pending changes */
    s0 = common_pmap_snapshot(m);                    /* readers do not */
    ck_assert_uint_eq(common_pmap_snap_size(s0), 0);
    ck_assert_ptr_null(common_pmap_snap_get(s0, "ns/a"));

    ck_assert_int_eq(common_pmap_publish(m), COMMON_OK);
    s1 = common_pmap_snapshot(m);
    ck_assert_uint_eq(common_pmap_snap_seq(s1), 1);
    ck_assert_uint_eq(common_pmap_snap_size(s1), 2);
    ck_assert_ptr_eq(common_pmap_snap_get(s1, "ns/b"), b);
    ck_assert_int_eq(common_pmap_publish(m), COMMON_OK); /* no change: same version */
    s1b = common_pmap_snapshot(m);
    ck_assert_ptr_eq(s1b, s1);
    common_pmap_snap_release(s1b);

    /* replace b by c and delete a: s1 keeps both; nothing released while s1 or the
     * published version holds them */
    ck_assert_int_eq(common_pmap_set(m, "ns/b", c), COMMON_OK);
    ck_assert_int_eq(common_pmap_del(m, "ns/a"), COMMON_OK);
    ck_assert_int_eq(releases, 0);
    ck_assert_ptr_eq(common_pmap_snap_get(s1, "ns/a"), a);
    ck_assert_ptr_eq(common_pmap_snap_get(s1, "ns/b"), b);
    ck_assert_ptr_null(common_pmap_get(m, "ns/a"));
    ck_assert_ptr_eq(common_pmap_get(m, "ns/b"), c);

    ck_assert_int_eq(common_pmap_publish(m), COMMON_OK);
    s2 = common_pmap_snapshot(m);
    ck_assert_uint_eq(common_pmap_snap_seq(s2), 2);
    ck_assert_uint_eq(common_pmap_snap_size(s2), 1);
    ck_assert_ptr_eq(common_pmap_snap_get(s2, "ns/b"), c);
    ck_assert_int_eq(releases, 0); /* s1 still holds a and b */
    common_pmap_snap_release(s1);
    ck_assert_int_eq(releases, 2);
    ck_assert_int_eq(a->released, 1);
    ck_assert_int_eq(b->released, 1);

    /* without any snapshot, a replaced item goes at once */
    common_pmap_snap_release(s2);
    common_pmap_snap_release(s0);
    ck_assert_int_eq(common_pmap_publish(m), COMMON_OK);
    {
        struct titem *d = new_item(3), *e = new_item(4);

        ck_assert_int_eq(common_pmap_set(m, "ns/d", d), COMMON_OK);
        ck_assert_int_eq(common_pmap_set(m, "ns/d", e), COMMON_OK);
        ck_assert_int_eq(d->released, 1);
        ck_assert_int_eq(releases, 3);
        common_pmap_clear(m);
        ck_assert_uint_eq(common_pmap_size(m), 0);
        ck_assert_int_eq(e->released, 1);
        ck_assert_int_eq(c->released, 0); /* published still holds c */
        ck_assert_int_eq(common_pmap_publish(m), COMMON_OK);
        ck_assert_int_eq(c->released, 1);
    }
    common_pmap_destroy(m);
    ck_assert_int_eq(releases, npool);
}
END_TEST

/* Changes to nodes only the writer holds happen in place: no new node. */
START_TEST(test_path_copy_counts)
{
    struct common_pmap *m;
    struct common_pmap_stats st0, st1, st2;
    struct common_pmap_snap *s;
    static int dummy;
    char key[KEYMAX];
    int n = 100000;

    ck_assert_int_eq(common_pmap_create(NULL, NULL, &m), COMMON_OK);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "ns-%d/pod-%06d", i % 7, i);
        EXPECT(common_pmap_set(m, key, &dummy) == COMMON_OK, "set %s", key);
    }
    ck_assert_int_eq(common_pmap_check(m, NULL), COMMON_OK);
    common_pmap_stats(m, &st0);
    ck_assert_uint_eq(st0.size, (size_t)n);
    ck_assert_uint_eq(st0.nodes_created, (uint64_t)n); /* no copies: nothing was shared */
    ck_assert_uint_le(st0.height, 25);                 /* 1.44 log2(100002) = 23.9 */
    ck_assert_int_eq(common_pmap_publish(m), COMMON_OK);
    s = common_pmap_snapshot(m);

    ck_assert_int_eq(common_pmap_set(m, "ns-3/pod-000003", &dummy), COMMON_OK);
    common_pmap_stats(m, &st1);
    ck_assert_uint_ge(st1.nodes_created - st0.nodes_created, 1);
    ck_assert_uint_le(st1.nodes_created - st0.nodes_created, st0.height);
    ck_assert_int_eq(common_pmap_set(m, "ns-3/pod-000003", &dummy), COMMON_OK);
    ck_assert_int_eq(common_pmap_del(m, "ns-3/pod-000003"), COMMON_OK);
    ck_assert_int_eq(common_pmap_set(m, "ns-3/pod-000003", &dummy), COMMON_OK);
    common_pmap_stats(m, &st2);
    ck_assert_uint_le(st2.nodes_created - st1.nodes_created, 2 * st0.height);
    ck_assert_int_eq(common_pmap_check(m, NULL), COMMON_OK);
    common_pmap_snap_release(s);
    common_pmap_destroy(m);
}
END_TEST

/* ---- prefix iteration ---- */

struct collect {
    char out[512];
    size_t len;
    int stop_after; /* 0: never */
    int calls;
};

static int collect_key(const char *key, void *item, void *ctx)
{
    struct collect *c = ctx;
    int n = snprintf(c->out + c->len, sizeof(c->out) - c->len, "%s%s", c->len ? " " : "", key);

    ck_assert_int_ge(n, 0);
    c->len += (size_t)n;
    ck_assert_uint_lt(c->len, sizeof(c->out));
    c->calls++;
    return c->stop_after && c->calls == c->stop_after ? 7 : 0;
}

static const char *walk_prefix(const struct common_pmap_snap *s, const char *prefix,
                               struct collect *c)
{
    memset(c, 0, sizeof(*c));
    ck_assert_int_eq(common_pmap_snap_foreach_prefix(s, prefix, collect_key, c), 0);
    return c->out;
}

START_TEST(test_prefix)
{
    static const char *const in[] = {"ns/b",  "a/x",   "ns1/a", "ns/a",   "ab/y", "ns-x/a",
                                     "ns/c",  "b/z",   "ns",    "ns/a/b", "nt/a", "n/a",
                                     "ns1/b", "zz/zz", "ns/",   "a/y"};
    struct common_pmap *m;
    struct common_pmap_snap *s;
    struct collect c;
    static int dummy;

    ck_assert_int_eq(common_pmap_create(NULL, NULL, &m), COMMON_OK);
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        ck_assert_int_eq(common_pmap_set(m, in[i], &dummy), COMMON_OK);
    ck_assert_int_eq(common_pmap_publish(m), COMMON_OK);
    s = common_pmap_snapshot(m);
    ck_assert_str_eq(walk_prefix(s, "ns/", &c), "ns/ ns/a ns/a/b ns/b ns/c");
    ck_assert_str_eq(walk_prefix(s, "ns", &c), "ns ns-x/a ns/ ns/a ns/a/b ns/b ns/c ns1/a ns1/b");
    ck_assert_str_eq(walk_prefix(s, "ns1/", &c), "ns1/a ns1/b");
    ck_assert_str_eq(walk_prefix(s, "a", &c), "a/x a/y ab/y");
    ck_assert_str_eq(walk_prefix(s, "a/", &c), "a/x a/y");
    ck_assert_str_eq(walk_prefix(s, "zz/zz", &c), "zz/zz");
    ck_assert_str_eq(walk_prefix(s, "zz/zzz", &c), "");
    ck_assert_str_eq(walk_prefix(s, "m/", &c), "");
    ck_assert_str_eq(walk_prefix(s, "0", &c), "");
    ck_assert_str_eq(walk_prefix(s, "~", &c), "");
    ck_assert_str_eq(walk_prefix(s, "", &c),
                     "a/x a/y ab/y b/z n/a ns ns-x/a ns/ ns/a ns/a/b ns/b ns/c ns1/a ns1/b nt/a "
                     "zz/zz");
    /* a nonzero return stops the walk and comes back */
    memset(&c, 0, sizeof(c));
    c.stop_after = 2;
    ck_assert_int_eq(common_pmap_snap_foreach_prefix(s, "ns/", collect_key, &c), 7);
    ck_assert_str_eq(c.out, "ns/ ns/a");
    memset(&c, 0, sizeof(c));
    c.stop_after = 3;
    ck_assert_int_eq(common_pmap_snap_foreach(s, collect_key, &c), 7);
    ck_assert_str_eq(c.out, "a/x a/y ab/y");
    common_pmap_snap_release(s);
    common_pmap_destroy(m);
}
END_TEST

/* Prefix walks of every namespace, against the model, in a bigger random map. */
START_TEST(test_prefix_random)
{
    struct common_pmap *m;
    struct common_pmap_snap *s;
    static struct model md;
    size_t total = 0;

    keys_init();
    pool_reset();
    rnd_state = 42;
    memset(&md, 0, sizeof(md));
    ck_assert_int_eq(common_pmap_create(count_release, &releases, &m), COMMON_OK);
    for (int i = 0; i < 3 * NKEYS; i++) {
        int r = (int)rnd_below(NKEYS);

        if (md.items[r] && rnd_below(3) == 0) {
            EXPECT(common_pmap_del(m, keys[r]) == COMMON_OK, "del %s", keys[r]);
            md.items[r] = NULL;
            md.size--;
        } else {
            struct titem *it = new_item(r);

            EXPECT(common_pmap_set(m, keys[r], it) == COMMON_OK, "set %s", keys[r]);
            md.size += md.items[r] == NULL;
            md.items[r] = it;
        }
    }
    ck_assert_int_eq(common_pmap_publish(m), COMMON_OK);
    s = common_pmap_snapshot(m);
    for (int ns = 0; ns < NNS; ns++) {
        char prefix[16];

        snprintf(prefix, sizeof(prefix), "ns-%d/", ns);
        total += walk_snap(s, &md, prefix);
    }
    ck_assert_uint_eq(total, md.size);
    ck_assert_uint_eq(walk_snap(s, &md, "ns-"), md.size);
    ck_assert_uint_eq(walk_snap(s, &md, "ns-1/obj-1"), walk_snap(s, &md, "ns-1/obj-1"));
    common_pmap_snap_release(s);
    common_pmap_destroy(m);
    ck_assert_int_eq(releases, npool);
}
END_TEST

/* ---- one writer, three readers ---- */

#define T_KEYS 400
#define T_ROUNDS 4000
#define T_READERS 3
#define T_SUM_KEY "~sum" /* sorts after every "ns-" key */

struct t_item {
    uint32_t value;
    int rank; /* -1 for the sum */
};

struct t_shared {
    struct common_pmap *m;
    char keys[T_KEYS][KEYMAX];
    atomic_int done;
    atomic_long created;
    atomic_long released;
    atomic_long reads;
};

static void t_release(void *item, void *ctx)
{
    struct t_shared *sh = ctx;

    free(item);
    atomic_fetch_add(&sh->released, 1);
}

static struct t_item *t_new(struct t_shared *sh, uint32_t value, int rank)
{
    struct t_item *it = malloc(sizeof(*it));

    EXPECT(it != NULL, "out of memory");
    it->value = value;
    it->rank = rank;
    atomic_fetch_add(&sh->created, 1);
    return it;
}

struct t_walk {
    const char *prefix; /* also count and sum the keys under it (may be NULL) */
    size_t in_prefix;
    uint32_t prefix_sum;
    const char *prev;
    size_t count;
    uint32_t sum;
    uint32_t sum_item;
    int have_sum;
    int bad;
};

static int t_visit(const char *key, void *item, void *ctx)
{
    struct t_walk *w = ctx;
    const struct t_item *it = item;

    if (w->prev && strcmp(w->prev, key) >= 0)
        w->bad = 1;
    w->prev = key;
    w->count++;
    if (w->prefix && strncmp(key, w->prefix, strlen(w->prefix)) == 0) {
        w->in_prefix++;
        w->prefix_sum += it->value;
    }
    if (strcmp(key, T_SUM_KEY) == 0) {
        w->sum_item = it->value;
        w->have_sum = 1;
    } else {
        w->sum += it->value;
    }
    return 0;
}

/* Every published version holds the sum of its values under T_SUM_KEY: a reader that saw a
 * torn or changing version would find a different sum. */
static int t_verify(const struct common_pmap_snap *s)
{
    struct t_walk w;

    memset(&w, 0, sizeof(w));
    common_pmap_snap_foreach(s, t_visit, &w);
    if (w.bad || w.count != common_pmap_snap_size(s))
        return 0;
    if (common_pmap_snap_seq(s) == 0)
        return w.count == 0;
    return w.have_sum && w.sum == w.sum_item;
}

static void *t_reader(void *arg)
{
    struct t_shared *sh = arg;
    struct common_pmap_snap *ring[4] = {NULL, NULL, NULL, NULL};
    uint64_t last_seq = 0, x = (uint64_t)(uintptr_t)&ring;
    long n = 0;
    int ok = 1;

    while (ok && (!atomic_load(&sh->done) || n < 50)) {
        struct common_pmap_snap *s = common_pmap_snapshot(sh->m);
        struct t_walk all, one;
        char prefix[16];
        int slot;

        ok = common_pmap_snap_seq(s) >= last_seq && t_verify(s);
        last_seq = common_pmap_snap_seq(s);
        /* one namespace by prefix agrees with the full walk */
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        snprintf(prefix, sizeof(prefix), "ns-%d/", (int)((x >> 33) % NNS));
        memset(&all, 0, sizeof(all));
        memset(&one, 0, sizeof(one));
        all.prefix = prefix;
        common_pmap_snap_foreach_prefix(s, prefix, t_visit, &one);
        common_pmap_snap_foreach(s, t_visit, &all);
        if (one.bad || one.count != all.in_prefix || one.sum != all.prefix_sum)
            ok = 0;
        /* keep a few older versions and look at them again later */
        slot = (int)((x >> 40) % 4);
        if (ring[slot]) {
            ok = ok && t_verify(ring[slot]);
            common_pmap_snap_release(ring[slot]);
        }
        ring[slot] = s;
        n++;
    }
    for (int i = 0; i < 4; i++)
        common_pmap_snap_release(ring[i]);
    atomic_fetch_add(&sh->reads, n);
    return ok ? arg : NULL;
}

START_TEST(test_threads_one_writer_three_readers)
{
    static struct t_shared sh;
    static uint32_t values[T_KEYS];
    static int present[T_KEYS];
    pthread_t readers[T_READERS];
    uint32_t sum = 0;

    memset(&sh, 0, sizeof(sh));
    memset(present, 0, sizeof(present));
    rnd_state = 7;
    for (int i = 0; i < T_KEYS; i++)
        snprintf(sh.keys[i], KEYMAX, "ns-%d/pod-%04d", i % NNS, i);
    ck_assert_int_eq(common_pmap_create(t_release, &sh, &sh.m), COMMON_OK);
    for (int i = 0; i < T_READERS; i++)
        ck_assert_int_eq(pthread_create(&readers[i], NULL, t_reader, &sh), 0);
    for (int round = 0; round < T_ROUNDS; round++) {
        int k = 1 + (int)rnd_below(16);

        for (int j = 0; j < k; j++) {
            int r = (int)rnd_below(T_KEYS);

            if (present[r] && rnd_below(4) == 0) {
                EXPECT(common_pmap_del(sh.m, sh.keys[r]) == COMMON_OK, "del");
                sum -= values[r];
                present[r] = 0;
            } else {
                uint32_t v = (uint32_t)rnd();

                EXPECT(common_pmap_set(sh.m, sh.keys[r], t_new(&sh, v, r)) == COMMON_OK, "set");
                if (present[r])
                    sum -= values[r];
                values[r] = v;
                present[r] = 1;
                sum += v;
            }
        }
        EXPECT(common_pmap_set(sh.m, T_SUM_KEY, t_new(&sh, sum, -1)) == COMMON_OK, "set sum");
        EXPECT(common_pmap_publish(sh.m) == COMMON_OK, "publish");
        if (round % 500 == 0)
            ck_assert_int_eq(common_pmap_check(sh.m, NULL), COMMON_OK);
    }
    atomic_store(&sh.done, 1);
    for (int i = 0; i < T_READERS; i++) {
        void *ret;

        ck_assert_int_eq(pthread_join(readers[i], &ret), 0);
        ck_assert_msg(ret == &sh, "reader %d saw a broken version", i);
    }
    ck_assert_int_ge(atomic_load(&sh.reads), 3 * 50);
    common_pmap_destroy(sh.m);
    ck_assert_int_eq(atomic_load(&sh.released), atomic_load(&sh.created));
}
END_TEST

/* ---- allocation failure at every allocation ---- */

/* The map and its published version are exactly as the models say. */
static void check_unchanged(struct common_pmap *m, const struct model *writer,
                            const struct model *published)
{
    struct common_pmap_snap *s = common_pmap_snapshot(m);

    check_writer(m, writer);
    check_snap(s, published);
    common_pmap_snap_release(s);
}

START_TEST(test_alloc_failure)
{
    static struct model writer, published;
    struct common_pmap *m = NULL;
    struct common_pmap_snap *old;
    int failures = 0, sets = 0;

    keys_init();
    pool_reset();
    rnd_state = 99;
    memset(&writer, 0, sizeof(writer));
    memset(&published, 0, sizeof(published));
    for (unsigned long n = 1;; n++) {
        enum common_rc rc;

        common_alloc_fail_at(n);
        rc = common_pmap_create(count_release, &releases, &m);
        common_alloc_fail_at(0);
        if (rc == COMMON_OK)
            break;
        EXPECT(rc == COMMON_ENOMEM && m == NULL, "create: %d", rc);
        failures++;
    }
    ck_assert_int_ge(failures, 2);
    old = common_pmap_snapshot(m); /* an old version held all along */
    for (int op = 0; op < 1500; op++) {
        unsigned what = rnd_below(10);
        int r = (int)rnd_below(NKEYS);

        for (unsigned long n = 1;; n++) {
            struct titem *it = NULL;
            enum common_rc rc;

            if (what < 6)
                it = new_item(r);
            common_alloc_fail_at(n);
            if (what < 6)
                rc = common_pmap_set(m, keys[r], it);
            else if (what < 9)
                rc = common_pmap_del(m, keys[r]);
            else
                rc = common_pmap_publish(m);
            common_alloc_fail_at(0);
            if (rc == COMMON_ENOMEM) {
                failures++;
                if (it) {
                    EXPECT(it->released == 0,
                           "failed set released the item"); /* not taken: still ours */
                    npool--;
                }
                check_unchanged(m, &writer, &published);
                continue;
            }
            if (what < 6) {
                EXPECT(rc == COMMON_OK, "set: %d", rc);
                sets++;
                writer.size += writer.items[r] == NULL;
                writer.items[r] = it;
            } else if (what < 9) {
                EXPECT(rc == (writer.items[r] ? COMMON_OK : COMMON_ENOTFOUND), "del: %d", rc);
                writer.size -= writer.items[r] != NULL;
                writer.items[r] = NULL;
            } else {
                EXPECT(rc == COMMON_OK, "publish: %d", rc);
                published = writer;
            }
            break;
        }
        if (op % 100 == 0)
            check_unchanged(m, &writer, &published);
    }
    ck_assert_int_ge(failures, sets); /* each set allocates at least its entry */
    common_pmap_snap_release(old);
    check_unchanged(m, &writer, &published);
    common_pmap_destroy(m);
    ck_assert_int_eq(releases, npool);
    for (int i = 0; i < npool; i++)
        EXPECT(pool[i].released == 1, "item %d released %d times", i, pool[i].released);
}
END_TEST

static Suite *pmap_suite(void)
{
    Suite *s = suite_create("pmap");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_empty_and_invalid);
    tcase_add_test(tc, test_batch_and_publish);
    tcase_add_test(tc, test_path_copy_counts);
    tcase_add_test(tc, test_prefix);
    tcase_add_test(tc, test_prefix_random);
    tcase_add_loop_test(tc, test_random_against_model, 0, 6);
    tcase_add_test(tc, test_threads_one_writer_three_readers);
    tcase_add_test(tc, test_alloc_failure);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return testutil_run_suite(pmap_suite());
}
