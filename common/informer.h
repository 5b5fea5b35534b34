/*
 * common/informer.h - watch caches: a local, always-current copy of one kind of object.
 *
 * An informer lists a collection (in pages) and then watches it from the list's
 * resourceVersion, on a thread of its own, keeping every object in a persistent map
 * (common/pmap.h) keyed "namespace/name" (or "name" for cluster-scoped objects). After each
 * change it publishes a new version, so readers take an immutable snapshot in O(1) and never
 * block the watcher; publishing costs O(log n) per changed object, whatever the cache's size.
 *
 * Faults: a watch that the server ends resumes from the last resourceVersion seen (bookmarks
 * keep it fresh); 410 Gone, or repeated watch failures, relist: the new list is diffed against
 * the cache, so handlers see the adds, updates and deletes that were missed and the cache
 * equals a fresh list afterwards. Errors back off exponentially (1 s doubling up to 30 s).
 *
 * Items: pods and nodes are decoded from protobuf into the compact structs of
 * common/coretypes.h (common_informer_pods, common_informer_nodes); any other kind is kept as
 * its JSON object (common_informer_json_ops). Source: client-go's reflector and shared
 * informer (list-then-watch, resourceVersion semantics, bookmarks).
 */
#ifndef COMMON_INFORMER_H
#define COMMON_INFORMER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/coretypes.h"
#include "common/error.h"
#include "common/kube.h"
#include "common/pmap.h"

/* What an informer holds and how it decodes it. One const struct per kind. */
struct common_informer_ops {
    const char *name; /* for logs: "pods", "nodes", "trainjobs" */
    const struct common_kube_resource *resource;
    enum common_kind pb_kind; /* 0: JSON; else protobuf lists and watches */
    /* JSON: decode obj (borrowed) into a new item. MUST when pb_kind is 0. */
    enum common_rc (*from_json)(const json_t *obj, void **item, struct common_error *err);
    /* "ns/name" or "name" of an item into buf (size bytes) */
    void (*key)(const void *item, char *buf, size_t size);
    const char *(*resource_version)(const void *item);
    void (*release)(void *item);
};

extern const struct common_informer_ops common_informer_pods;  /* struct common_pod items */
extern const struct common_informer_ops common_informer_nodes; /* struct common_node items */

/*
 * common_informer_json_ops - ops that keep objects of resource r as json_t (a new reference
 * per item; key from metadata). *ops is filled in; r must outlive the informer.
 */
void common_informer_json_ops(struct common_informer_ops *ops, const char *name,
                              const struct common_kube_resource *r);

/* Handlers run on the informer's thread, after the change is published: a snapshot taken in or
 * after the handler holds it. Items are borrowed for the call. Any may be NULL. */
struct common_informer_handlers {
    void (*on_add)(void *ctx, const void *item);
    void (*on_update)(void *ctx, const void *old_item, const void *new_item);
    void (*on_delete)(void *ctx, const void *old_item);
    void *ctx;
};

struct common_informer_opts {
    const char *namespace;      /* NULL: all namespaces */
    const char *label_selector; /* NULL: all */
    const char *field_selector; /* NULL: all */
    long page_size;             /* list page size; 0 = 5000 (each page costs the API
                                   server a walk from the continue token: fewer is cheaper) */
    int watch_timeout_seconds;  /* server-side timeout of each watch; 0 = 300 */
    long stall_ms;              /* a watch with no bytes (not even a bookmark, which the server
                                   sends about every minute) for this long is dropped and
                                   resumed; 0 = watch timeout + 30 s, at most 120 s. A watch
                                   that stalls without delivering anything (a quiet resource
                                   where the server sends no bookmarks) is logged once at info
                                   ("watch quiet, reconnecting"), then at debug while it stays
                                   quiet; one that stalls after delivering is a "watch failed"
                                   warning */
};

/* Counters (cumulative). */
struct common_informer_stats {
    uint64_t lists;     /* full lists done (first one included) */
    uint64_t watches;   /* watch requests made */
    uint64_t events;    /* ADDED/MODIFIED/DELETED applied */
    uint64_t bookmarks; /* BOOKMARK events */
    uint64_t errors;    /* failed lists and watches */
    size_t size;        /* objects held */
};

struct common_informer;

/*
 * common_informer_create - an informer of ops's kind through client k (borrowed; must outlive
 * it). ops, handlers and opts are copied (NULL handlers/opts allowed). Not started. Returns
 * COMMON_OK with *out, COMMON_ENOMEM.
 */
enum common_rc common_informer_create(struct common_kube *k, const struct common_informer_ops *ops,
                                      const struct common_informer_handlers *handlers,
                                      const struct common_informer_opts *opts,
                                      struct common_informer **out, struct common_error *err);

/* common_informer_start - start the list/watch thread. COMMON_OK or COMMON_ENOMEM. */
enum common_rc common_informer_start(struct common_informer *inf, struct common_error *err);

/* common_informer_request_stop - ask the thread to stop and return at once (stopping several
 * informers: request each, then common_informer_stop each, so their waits overlap). */
void common_informer_request_stop(struct common_informer *inf);

/* common_informer_stop - stop the thread and wait for it (at most about 1 s). Idempotent. */
void common_informer_stop(struct common_informer *inf);

/* common_informer_destroy - stop, then free everything. Snapshots stay valid. NULL is a no-op. */
void common_informer_destroy(struct common_informer *inf);

/* common_informer_synced - nonzero once the first list is in the cache; 0 for NULL. */
int common_informer_synced(const struct common_informer *inf);

/* common_informer_wait_synced - wait up to timeout_ms for the first list; nonzero if synced.
 * Returns early (0) once the informer's client is cancelled (common_kube_cancel_after). */
int common_informer_wait_synced(struct common_informer *inf, long timeout_ms);

/*
 * common_informer_snapshot - the latest published version (release with
 * common_pmap_snap_release). Read items with common_pmap_snap_get / foreach; they are const.
 */
struct common_pmap_snap *common_informer_snapshot(struct common_informer *inf);

/* common_informer_stats - a copy of the counters. */
void common_informer_stats(struct common_informer *inf, struct common_informer_stats *out);

/* common_informer_last_rv - the last resourceVersion seen, into buf ("" before the list). */
void common_informer_last_rv(struct common_informer *inf, char *buf, size_t size);

#endif
