/*
 * common/pmap.h - a persistent ordered map from string keys to items, for watch caches.
 *
 * One writer thread owns a struct common_pmap: it applies watch events with set and del, which
 * change the writer's current version, and calls publish to make that version the one readers
 * get. Any thread may take a snapshot (the latest published version) and read it for as long
 * as it likes: a snapshot never changes, never blocks the writer and never sees later changes.
 *
 * How it works: a persistent AVL tree (height at most 1.44 log2 n) whose nodes carry atomic
 * reference counts. A change copies the O(log n) nodes on its path that some published
 * version still shares, and changes nodes that only the writer holds in place, so k changes
 * between two publishes cost O(k log n) time and new nodes whatever the size, and publish
 * itself is O(1). Every version shares all unchanged subtrees with the others. Key and item
 * sit in an entry with its own count, shared by every copy of its node; an entry is freed, and
 * its item handed to the release callback, when no version holds it any more.
 *
 * Keys are NUL-terminated strings, "namespace/name" for namespaced objects, ordered by bytes
 * (strcmp), so all keys of a namespace "ns" are contiguous: the prefix "ns/".
 *
 * Threads: set, del, clear, get, size, publish, stats, check and destroy belong to the writer
 * thread. snapshot may be called from any thread at any time before destroy; it takes a small
 * mutex that publish holds only for a pointer swap. The snap_* functions may be called from any
 * thread; a snapshot may be shared between threads (snap_retain) and may outlive the map. The
 * release callback runs on whichever thread drops the last version holding the item: the
 * writer (set, del, clear, publish, destroy) or a reader (snap_release), so it must be
 * thread-safe.
 *
 * Memory: every allocation goes through common_malloc/common_free. Each function that
 * allocates returns COMMON_ENOMEM when an allocation fails and then leaves the map, its
 * published version and every snapshot exactly as they were. (set and del keep a small
 * reserve of spare nodes, filled before anything is changed, so a change never fails half-way.)
 */
#ifndef COMMON_PMAP_H
#define COMMON_PMAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct common_pmap;      /* the writer's handle */
struct common_pmap_snap; /* one published version, reference counted */

/* Called once for each item handed over by a successful set, when no version holds it. */
typedef void (*common_pmap_release_fn)(void *item, void *ctx);

/*
 * Called for each key in order by the foreach functions; key and item are borrowed for the
 * call (both live as long as the snapshot). Return 0 to go on; anything else stops the walk
 * and is returned by the foreach function.
 */
typedef int (*common_pmap_visit_fn)(const char *key, void *item, void *ctx);

/* Counters for benchmarks and tests (writer-side, cumulative since create). */
struct common_pmap_stats {
    size_t size;              /* keys in the writer's current version */
    unsigned height;          /* height of the writer's tree (0 when empty) */
    uint64_t nodes_created;   /* tree nodes built: new keys plus path copies */
    uint64_t entries_created; /* key+item entries built: one per successful set */
    uint64_t publishes;       /* publishes that made a new version */
    size_t node_bytes;        /* sizeof one tree node */
    size_t entry_bytes;       /* sizeof one entry, without its key */
};

/* ---- the writer's handle ---- */

/*
 * common_pmap_create - an empty map whose published version is empty (snapshot works at once).
 * release (may be NULL: the map does not own items) and ctx are kept by the map and by every
 * snapshot. Sets *out and returns COMMON_OK, or COMMON_ENOMEM with *out = NULL.
 */
enum common_rc common_pmap_create(common_pmap_release_fn release, void *ctx,
                                  struct common_pmap **out);

/*
 * common_pmap_destroy - drop the writer's version and the published one; items held by no
 * snapshot are released now, the others when the last snapshot holding them is released.
 * Snapshots stay valid. No thread may call snapshot during or after destroy. NULL is a no-op.
 */
void common_pmap_destroy(struct common_pmap *m);

/*
 * common_pmap_set - insert key with item, or replace the item of key, in the writer's version.
 * O(log n). The key is copied. On COMMON_OK the map owns one reference to item: it is released
 * once, when the key is deleted or replaced and no snapshot holds that version any more (or at
 * destroy). Setting the same pointer again hands over another reference (released again).
 * Errors: COMMON_EINVAL (NULL key or item), COMMON_ENOMEM; on error the map is unchanged and
 * item still belongs to the caller.
 */
enum common_rc common_pmap_set(struct common_pmap *m, const char *key, void *item);

/*
 * common_pmap_del - remove key from the writer's version. O(log n). Its item is released when no
 * snapshot holds it. Errors: COMMON_EINVAL (NULL key), COMMON_ENOTFOUND (no such key, nothing
 * allocated), COMMON_ENOMEM; on error the map is unchanged.
 */
enum common_rc common_pmap_del(struct common_pmap *m, const char *key);

/*
 * common_pmap_clear - empty the writer's version (for a relist). Never allocates; O(1) when a
 * published version still shares the tree, else O(n) to free it.
 */
void common_pmap_clear(struct common_pmap *m);

/*
 * common_pmap_get - the item of key in the writer's version (unpublished changes included), or
 * NULL. O(log n). Borrowed: valid until the writer next sets, deletes or clears that key, or
 * destroys the map (a snapshot holding the item keeps it alive longer).
 */
void *common_pmap_get(const struct common_pmap *m, const char *key);

/* common_pmap_size - number of keys in the writer's version. O(1). */
size_t common_pmap_size(const struct common_pmap *m);

/*
 * common_pmap_publish - make the writer's version the one snapshot returns. O(1), plus freeing
 * whatever the previous published version alone held when no snapshot holds it. A publish with
 * no change since the last one does nothing. Errors: COMMON_ENOMEM (the previous version stays
 * published; the writer's changes stay pending).
 */
enum common_rc common_pmap_publish(struct common_pmap *m);

/* common_pmap_stats - fill *out (never fails). */
void common_pmap_stats(const struct common_pmap *m, struct common_pmap_stats *out);

/*
 * common_pmap_check - verify the writer's tree: strict key order, AVL balance and heights,
 * sizes, live reference counts. O(n); for tests. COMMON_OK or COMMON_EINVAL with the broken
 * rule in err (err may be NULL).
 */
enum common_rc common_pmap_check(const struct common_pmap *m, struct common_error *err);

/* ---- snapshots (any thread) ---- */

/*
 * common_pmap_snapshot - a new reference to the latest published version. O(1); never fails,
 * never NULL. Release it with common_pmap_snap_release.
 */
struct common_pmap_snap *common_pmap_snapshot(struct common_pmap *m);

/* common_pmap_snap_retain - another reference to s (for handing it to another thread). */
struct common_pmap_snap *common_pmap_snap_retain(struct common_pmap_snap *s);

/*
 * common_pmap_snap_release - drop a reference; the last one frees what only this version held
 * and releases its items (O(changes since the version it shares with) amortized). NULL: no-op.
 */
void common_pmap_snap_release(struct common_pmap_snap *s);

/* common_pmap_snap_get - the item of key in s, or NULL. O(log n). Valid while s is held. */
void *common_pmap_snap_get(const struct common_pmap_snap *s, const char *key);

/* common_pmap_snap_size - number of keys in s. O(1). */
size_t common_pmap_snap_size(const struct common_pmap_snap *s);

/*
 * common_pmap_snap_seq - which publish s is: 0 for the empty version of create, then 1, 2, ...
 * A larger number is a later version of the same map.
 */
uint64_t common_pmap_snap_seq(const struct common_pmap_snap *s);

/*
 * common_pmap_snap_foreach - call fn for every key of s in key order. O(n); no allocation.
 * Returns 0, or the first nonzero value fn returned (which stopped the walk).
 */
int common_pmap_snap_foreach(const struct common_pmap_snap *s, common_pmap_visit_fn fn, void *ctx);

/*
 * common_pmap_snap_foreach_prefix - the same for the keys that start with prefix ("ns/": one
 * namespace; "" is every key), in key order. O(log n + m) for m matches; no allocation.
 */
int common_pmap_snap_foreach_prefix(const struct common_pmap_snap *s, const char *prefix,
                                    common_pmap_visit_fn fn, void *ctx);

#endif
