/*
 * common/pmap.c - persistent AVL tree with reference-counted nodes (see pmap.h).
 *
 * Ownership. A node holds one reference to each child and to its entry. The writer's root
 * pointer holds one reference to its root; each snapshot object holds one to its root. A node
 * is immutable once some other holder may reach it. The writer may change a node in place only
 * when the path to it from the writer's root is all "unique": every node on it has a count of
 * one. make_mut() walks that rule: a node with a count above one is copied (the copy takes new
 * references to the children and the entry, so they become shared in turn) and the writer's
 * reference moves to the copy. Readers never change counts inside the tree; they hold a
 * snapshot object, whose last release drops its root. A count read as one (acquire) therefore
 * means that no other thread can reach the node, and that every earlier reader of it is done.
 *
 * No failure half-way. Before set or del changes anything, reserve() fills a list of spare
 * nodes up to the worst case of one change (3 h + 4 for height h: the path, plus at most two
 * copies per level for rotations). Only then does the change run, taking nodes from the list;
 * it cannot fail, so an ENOMEM leaves the tree as it was.
 */
#include "common/pmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

/* An AVL tree of height 93 has at least F(95) - 1 > 2^64 nodes: no real tree is taller. */
#define PMAP_MAX_HEIGHT 96
/* The reserve never needs more than 3 * 92 + 4 nodes; deleted nodes beyond that are freed. */
#define PMAP_SPARE_MAX (3 * PMAP_MAX_HEIGHT + 4)

struct pmap_entry {
    atomic_size_t refs;
    void *item;
    size_t len; /* strlen(key) */
    char key[];
};

struct pmap_node {
    atomic_size_t refs;
    struct pmap_node *left; /* also links the spare list */
    struct pmap_node *right;
    struct pmap_entry *entry;
    unsigned height; /* 1 for a leaf */
};

struct pmap_releaser {
    common_pmap_release_fn fn;
    void *ctx;
};

struct common_pmap_snap {
    atomic_size_t refs;
    struct pmap_node *root; /* one reference */
    size_t size;
    uint64_t seq;
    struct pmap_releaser rel;
};

struct common_pmap {
    struct pmap_node *root; /* the writer's version: one reference */
    size_t size;
    struct pmap_releaser rel;
    pthread_mutex_t lock;               /* guards published for snapshot() */
    struct common_pmap_snap *published; /* one reference; written by the writer only */
    uint64_t seq;                       /* seq of the last publish */
    struct pmap_node *spare;            /* reserve of unused nodes, linked through left */
    size_t nspare;
    uint64_t nodes_created;
    uint64_t entries_created;
};

/* ---- reference counting (any thread) ---- */

static void entry_release(struct pmap_entry *e, const struct pmap_releaser *rel)
{
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (rel->fn)
        rel->fn(e->item, rel->ctx);
    common_free(e);
}

/* Drop one reference to n; the last one frees n and drops its children and entry. */
static void node_release(struct pmap_node *n, const struct pmap_releaser *rel)
{
    while (n && atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) == 1) {
        struct pmap_node *right = n->right;

        node_release(n->left, rel); /* recursion depth is bounded by the height */
        entry_release(n->entry, rel);
        common_free(n);
        n = right;
    }
}

static void node_ref(struct pmap_node *n)
{
    if (n)
        atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
}

/* ---- tree helpers (writer) ---- */

static unsigned height(const struct pmap_node *n)
{
    return n ? n->height : 0;
}

static void fix_height(struct pmap_node *n)
{
    unsigned l = height(n->left), r = height(n->right);

    n->height = 1 + (l > r ? l : r);
}

static const struct pmap_node *find(const struct pmap_node *n, const char *key)
{
    while (n) {
        int c = strcmp(key, n->entry->key);

        if (c == 0)
            return n;
        n = c < 0 ? n->left : n->right;
    }
    return NULL;
}

/*
 * reserve - make sure the spare list holds enough nodes for one set or del on the current
 * tree. COMMON_ENOMEM leaves what was added on the list (freed by destroy).
 */
static enum common_rc reserve(struct common_pmap *m)
{
    size_t want = 3 * (size_t)height(m->root) + 4;

    while (m->nspare < want) {
        struct pmap_node *n = common_malloc(sizeof(*n));

        if (!n)
            return COMMON_ENOMEM;
        n->left = m->spare;
        m->spare = n;
        m->nspare++;
    }
    return COMMON_OK;
}

/* take_spare - a node from the reserve; reserve() made sure there is one. */
static struct pmap_node *take_spare(struct common_pmap *m)
{
    struct pmap_node *n = m->spare;

    if (!n)
        abort(); /* reserve() undercounted: a bug, never an allocation failure */
    m->spare = n->left;
    m->nspare--;
    m->nodes_created++;
    return n;
}

/*
 * make_mut - the node in *slot, made safe to change in place. slot is the writer's root or a
 * field of a node the writer may change. A shared node is replaced by a copy from the reserve.
 */
static struct pmap_node *make_mut(struct common_pmap *m, struct pmap_node **slot)
{
    struct pmap_node *n = *slot, *c;

    if (atomic_load_explicit(&n->refs, memory_order_acquire) == 1)
        return n;
    c = take_spare(m);
    atomic_init(&c->refs, 1);
    c->left = n->left;
    c->right = n->right;
    c->entry = n->entry;
    c->height = n->height;
    node_ref(c->left);
    node_ref(c->right);
    atomic_fetch_add_explicit(&c->entry->refs, 1, memory_order_relaxed);
    *slot = c;
    node_release(n, &m->rel); /* n was shared: usually just a decrement */
    return c;
}

/* Rotations move references between nodes the writer may change; counts stay the same. */
static struct pmap_node *rotate_right(struct pmap_node *n)
{
    struct pmap_node *l = n->left;

    n->left = l->right;
    l->right = n;
    fix_height(n);
    fix_height(l);
    return l;
}

static struct pmap_node *rotate_left(struct pmap_node *n)
{
    struct pmap_node *r = n->right;

    n->right = r->left;
    r->left = n;
    fix_height(n);
    fix_height(r);
    return r;
}

/*
 * rebalance - restore the AVL rule at n (changeable, children balanced, heights off by at most
 * two). Copies the one or two nodes a rotation changes. Returns the new subtree root.
 */
static struct pmap_node *rebalance(struct common_pmap *m, struct pmap_node *n)
{
    int bal = (int)height(n->left) - (int)height(n->right);

    if (bal > 1) {
        struct pmap_node *l = make_mut(m, &n->left);

        if (height(l->left) < height(l->right)) {
            make_mut(m, &l->right);
            n->left = rotate_left(l);
        }
        return rotate_right(n);
    }
    if (bal < -1) {
        struct pmap_node *r = make_mut(m, &n->right);

        if (height(r->right) < height(r->left)) {
            make_mut(m, &r->left);
            n->right = rotate_right(r);
        }
        return rotate_left(n);
    }
    fix_height(n);
    return n;
}

/* insert - put e (one reference, handed over) under *slot; *old gets a replaced entry. */
static void insert(struct common_pmap *m, struct pmap_node **slot, struct pmap_entry *e,
                   struct pmap_entry **old)
{
    struct pmap_node *n;
    int c;

    if (!*slot) {
        n = take_spare(m);
        atomic_init(&n->refs, 1);
        n->left = n->right = NULL;
        n->entry = e;
        n->height = 1;
        *slot = n;
        return;
    }
    n = make_mut(m, slot);
    c = strcmp(e->key, n->entry->key);
    if (c == 0) {
        *old = n->entry;
        n->entry = e;
        return;
    }
    insert(m, c < 0 ? &n->left : &n->right, e, old);
    *slot = rebalance(m, n);
}

/*
 * unlink_node - n (changeable) has left the tree, its children and entry moved elsewhere: back
 * to the reserve with it, for the next change.
 */
static void unlink_node(struct common_pmap *m, struct pmap_node *n)
{
    if (m->nspare >= PMAP_SPARE_MAX) {
        common_free(n);
        return;
    }
    n->left = m->spare;
    m->spare = n;
    m->nspare++;
}

/* remove_min - take the smallest entry out of the non-empty subtree *slot; returns it. */
static struct pmap_entry *remove_min(struct common_pmap *m, struct pmap_node **slot)
{
    struct pmap_node *n = make_mut(m, slot);
    struct pmap_entry *e;

    if (!n->left) {
        e = n->entry;
        *slot = n->right;
        unlink_node(m, n);
        return e;
    }
    e = remove_min(m, &n->left);
    *slot = rebalance(m, n);
    return e;
}

/* delete - remove key (known to be present) under *slot; *old gets its entry. */
static void delete_key(struct common_pmap *m, struct pmap_node **slot, const char *key,
                       struct pmap_entry **old)
{
    struct pmap_node *n = make_mut(m, slot);
    int c = strcmp(key, n->entry->key);

    if (c < 0) {
        delete_key(m, &n->left, key, old);
    } else if (c > 0) {
        delete_key(m, &n->right, key, old);
    } else if (!n->left || !n->right) {
        *old = n->entry;
        *slot = n->left ? n->left : n->right;
        unlink_node(m, n);
        return;
    } else {
        *old = n->entry;
        n->entry = remove_min(m, &n->right);
    }
    *slot = rebalance(m, n);
}

/* ---- the writer's handle ---- */

static struct common_pmap_snap *snap_new(const struct common_pmap *m)
{
    struct common_pmap_snap *s = common_malloc(sizeof(*s));

    if (!s)
        return NULL;
    atomic_init(&s->refs, 1);
    s->root = m->root;
    node_ref(s->root);
    s->size = m->size;
    s->seq = m->seq;
    s->rel = m->rel;
    return s;
}

enum common_rc common_pmap_create(common_pmap_release_fn release, void *ctx,
                                  struct common_pmap **out)
{
    struct common_pmap *m = common_calloc(1, sizeof(*m));

    *out = NULL;
    if (!m)
        return COMMON_ENOMEM;
    m->rel.fn = release;
    m->rel.ctx = ctx;
    m->published = snap_new(m);
    if (!m->published) {
        common_free(m);
        return COMMON_ENOMEM;
    }
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        common_free(m->published);
        common_free(m);
        return COMMON_ENOMEM;
    }
    *out = m;
    return COMMON_OK;
}

void common_pmap_destroy(struct common_pmap *m)
{
    if (!m)
        return;
    node_release(m->root, &m->rel);
    common_pmap_snap_release(m->published);
    while (m->spare) {
        struct pmap_node *n = m->spare;

        m->spare = n->left;
        common_free(n);
    }
    pthread_mutex_destroy(&m->lock);
    common_free(m);
}

enum common_rc common_pmap_set(struct common_pmap *m, const char *key, void *item)
{
    struct pmap_entry *e, *old = NULL;
    size_t len;

    if (!key || !item)
        return COMMON_EINVAL;
    len = strlen(key);
    e = common_malloc(sizeof(*e) + len + 1);
    if (!e)
        return COMMON_ENOMEM;
    if (reserve(m) != COMMON_OK) {
        common_free(e); /* the item stays the caller's */
        return COMMON_ENOMEM;
    }
    atomic_init(&e->refs, 1);
    e->item = item;
    e->len = len;
    memcpy(e->key, key, len + 1);
    m->entries_created++;
    insert(m, &m->root, e, &old);
    if (old)
        entry_release(old, &m->rel);
    else
        m->size++;
    return COMMON_OK;
}

enum common_rc common_pmap_del(struct common_pmap *m, const char *key)
{
    struct pmap_entry *old = NULL;

    if (!key)
        return COMMON_EINVAL;
    if (!find(m->root, key))
        return COMMON_ENOTFOUND;
    if (reserve(m) != COMMON_OK)
        return COMMON_ENOMEM;
    delete_key(m, &m->root, key, &old);
    entry_release(old, &m->rel);
    m->size--;
    return COMMON_OK;
}

void common_pmap_clear(struct common_pmap *m)
{
    node_release(m->root, &m->rel);
    m->root = NULL;
    m->size = 0;
}

void *common_pmap_get(const struct common_pmap *m, const char *key)
{
    const struct pmap_node *n = key ? find(m->root, key) : NULL;

    return n ? n->entry->item : NULL;
}

size_t common_pmap_size(const struct common_pmap *m)
{
    return m->size;
}

enum common_rc common_pmap_publish(struct common_pmap *m)
{
    struct common_pmap_snap *s, *old;

    /* Any change since the last publish replaced the (then shared) root, so equal roots mean
     * no change. The published snapshot keeps its root alive: the address cannot be reused. */
    if (m->root == m->published->root)
        return COMMON_OK;
    m->seq++;
    s = snap_new(m);
    if (!s) {
        m->seq--;
        return COMMON_ENOMEM;
    }
    pthread_mutex_lock(&m->lock);
    old = m->published;
    m->published = s;
    pthread_mutex_unlock(&m->lock);
    common_pmap_snap_release(old);
    return COMMON_OK;
}

void common_pmap_stats(const struct common_pmap *m, struct common_pmap_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->size = m->size;
    out->height = height(m->root);
    out->nodes_created = m->nodes_created;
    out->entries_created = m->entries_created;
    out->publishes = m->seq;
    out->node_bytes = sizeof(struct pmap_node);
    out->entry_bytes = sizeof(struct pmap_entry);
}

struct check_state {
    const char *prev;
    size_t count;
    struct common_error *err;
};

static enum common_rc check_node(const struct pmap_node *n, struct check_state *st)
{
    enum common_rc rc;
    unsigned l, r;

    if (!n)
        return COMMON_OK;
    l = height(n->left);
    r = height(n->right);
    if (atomic_load(&n->refs) == 0 || atomic_load(&n->entry->refs) == 0)
        return common_error_set(st->err, COMMON_EINVAL, "dead node or entry at key \"%s\"",
                                n->entry->key);
    if (n->height != 1 + (l > r ? l : r) || l > r + 1 || r > l + 1)
        return common_error_set(st->err, COMMON_EINVAL, "key \"%s\": height %u, children %u and %u",
                                n->entry->key, n->height, l, r);
    if (n->entry->len != strlen(n->entry->key))
        return common_error_set(st->err, COMMON_EINVAL, "key \"%s\": stored length %zu",
                                n->entry->key, n->entry->len);
    rc = check_node(n->left, st);
    if (rc)
        return rc;
    if (st->prev && strcmp(st->prev, n->entry->key) >= 0)
        return common_error_set(st->err, COMMON_EINVAL, "key \"%s\" after \"%s\"", n->entry->key,
                                st->prev);
    st->prev = n->entry->key;
    st->count++;
    return check_node(n->right, st);
}

enum common_rc common_pmap_check(const struct common_pmap *m, struct common_error *err)
{
    struct check_state st = {NULL, 0, err};
    enum common_rc rc = check_node(m->root, &st);

    if (rc)
        return rc;
    if (st.count != m->size)
        return common_error_set(err, COMMON_EINVAL, "size %zu but %zu keys", m->size, st.count);
    if (atomic_load(&m->published->refs) == 0)
        return common_error_set(err, COMMON_EINVAL, "published version released");
    return COMMON_OK;
}

/* ---- snapshots ---- */

struct common_pmap_snap *common_pmap_snapshot(struct common_pmap *m)
{
    struct common_pmap_snap *s;

    pthread_mutex_lock(&m->lock);
    s = m->published;
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&m->lock);
    return s;
}

struct common_pmap_snap *common_pmap_snap_retain(struct common_pmap_snap *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void common_pmap_snap_release(struct common_pmap_snap *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    node_release(s->root, &s->rel);
    common_free(s);
}

void *common_pmap_snap_get(const struct common_pmap_snap *s, const char *key)
{
    const struct pmap_node *n = key ? find(s->root, key) : NULL;

    return n ? n->entry->item : NULL;
}

size_t common_pmap_snap_size(const struct common_pmap_snap *s)
{
    return s->size;
}

uint64_t common_pmap_snap_seq(const struct common_pmap_snap *s)
{
    return s->seq;
}

/*
 * walk - in-order from the first key >= prefix while keys start with prefix, with an explicit
 * stack (no allocation): it holds the nodes whose key is still to come, nearest on top.
 */
static int walk(const struct pmap_node *n, const char *prefix, common_pmap_visit_fn fn, void *ctx)
{
    const struct pmap_node *stack[PMAP_MAX_HEIGHT];
    size_t top = 0, plen = strlen(prefix);

    while (n) {
        if (strcmp(n->entry->key, prefix) >= 0) {
            stack[top++] = n;
            n = n->left;
        } else {
            n = n->right;
        }
    }
    while (top > 0) {
        const struct pmap_entry *e;
        int rc;

        n = stack[--top];
        e = n->entry;
        if (e->len < plen || memcmp(e->key, prefix, plen) != 0)
            return 0;
        rc = fn(e->key, e->item, ctx);
        if (rc)
            return rc;
        for (n = n->right; n; n = n->left)
            stack[top++] = n;
    }
    return 0;
}

int common_pmap_snap_foreach(const struct common_pmap_snap *s, common_pmap_visit_fn fn, void *ctx)
{
    return walk(s->root, "", fn, ctx);
}

int common_pmap_snap_foreach_prefix(const struct common_pmap_snap *s, const char *prefix,
                                    common_pmap_visit_fn fn, void *ctx)
{
    return walk(s->root, prefix ? prefix : "", fn, ctx);
}
