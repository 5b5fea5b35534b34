/*
 * gang/map.c - the two hash maps of the books: byte-string key -> pointer (FNV-1a, linear
 * probing, backward-shift deletion, load at most 1/2) and uint32 -> count.
 */
#include <string.h>

#include "common/alloc.h"
#include "gang/gang_int.h"

static uint32_t hash_bytes(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h ? h : 1;
}

static int gmap_grow(struct gmap *m, size_t cap)
{
    struct gmap_entry *e = common_calloc(cap, sizeof(*e));

    if (!e)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        size_t j;
        if (!m->e[i].hash)
            continue;
        j = m->e[i].hash & (cap - 1);
        while (e[j].hash)
            j = (j + 1) & (cap - 1);
        e[j] = m->e[i];
    }
    common_free(m->e);
    m->e = e;
    m->cap = cap;
    return 0;
}

int gmap_reserve(struct gmap *m)
{
    if ((m->n + 1) * 2 <= m->cap)
        return 0;
    return gmap_grow(m, m->cap ? m->cap * 2 : 16);
}

void *gmap_get(const struct gmap *m, const void *key, size_t len)
{
    uint32_t h;
    size_t j;

    if (!m->cap)
        return NULL;
    h = hash_bytes(key, len);
    for (j = h & (m->cap - 1); m->e[j].hash; j = (j + 1) & (m->cap - 1))
        if (m->e[j].hash == h && m->e[j].len == len && memcmp(m->e[j].key, key, len) == 0)
            return m->e[j].val;
    return NULL;
}

int gmap_put(struct gmap *m, const void *key, size_t len, void *val)
{
    uint32_t h = hash_bytes(key, len);
    size_t j;

    if (m->cap) {
        for (j = h & (m->cap - 1); m->e[j].hash; j = (j + 1) & (m->cap - 1))
            if (m->e[j].hash == h && m->e[j].len == len && memcmp(m->e[j].key, key, len) == 0) {
                m->e[j].key = key;
                m->e[j].val = val;
                return 0;
            }
    }
    if (gmap_reserve(m))
        return -1;
    for (j = h & (m->cap - 1); m->e[j].hash; j = (j + 1) & (m->cap - 1))
        ;
    m->e[j].key = key;
    m->e[j].len = (uint32_t)len;
    m->e[j].hash = h;
    m->e[j].val = val;
    m->n++;
    return 0;
}

void gmap_del(struct gmap *m, const void *key, size_t len)
{
    uint32_t h;
    size_t j, i, mask;

    if (!m->cap)
        return;
    mask = m->cap - 1;
    h = hash_bytes(key, len);
    for (j = h & mask; m->e[j].hash; j = (j + 1) & mask)
        if (m->e[j].hash == h && m->e[j].len == len && memcmp(m->e[j].key, key, len) == 0)
            break;
    if (!m->e[j].hash)
        return;
    /* backward shift: move later entries of the cluster into the hole when their home slot
     * does not lie cyclically in (hole, entry] */
    i = j;
    for (;;) {
        size_t k, home;
        memset(&m->e[i], 0, sizeof(m->e[i]));
        k = i;
        for (;;) {
            k = (k + 1) & mask;
            if (!m->e[k].hash) {
                m->n--;
                return;
            }
            home = m->e[k].hash & mask;
            if (i <= k ? (home <= i || home > k) : (home <= i && home > k))
                break;
        }
        m->e[i] = m->e[k];
        i = k;
    }
}

void gmap_free(struct gmap *m)
{
    common_free(m->e);
    memset(m, 0, sizeof(*m));
}

/* ---- uint32 -> count ---- */

static size_t imap_slot(const struct imap *m, uint32_t key)
{
    size_t j = (key * 2654435761u) & (m->cap - 1);

    while (m->keys[j] && m->keys[j] != key + 1)
        j = (j + 1) & (m->cap - 1);
    return j;
}

uint32_t imap_get(const struct imap *m, uint32_t key)
{
    size_t j;

    if (!m->cap)
        return 0;
    j = imap_slot(m, key);
    return m->keys[j] ? m->vals[j] : 0;
}

int imap_reserve(struct imap *m, size_t k)
{
    struct imap nm;

    if ((m->n + k) * 2 <= m->cap)
        return 0;
    nm.cap = m->cap ? m->cap * 2 : 8;
    while ((m->n + k) * 2 > nm.cap)
        nm.cap *= 2;
    nm.n = m->n;
    nm.keys = common_calloc(nm.cap, sizeof(uint32_t));
    nm.vals = common_calloc(nm.cap, sizeof(uint32_t));
    if (!nm.keys || !nm.vals) {
        common_free(nm.keys);
        common_free(nm.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        size_t j;
        if (!m->keys[i])
            continue;
        j = imap_slot(&nm, m->keys[i] - 1);
        nm.keys[j] = m->keys[i];
        nm.vals[j] = m->vals[i];
    }
    common_free(m->keys);
    common_free(m->vals);
    *m = nm;
    return 0;
}

int imap_add(struct imap *m, uint32_t key, int32_t delta)
{
    size_t j;

    if (m->cap) {
        j = imap_slot(m, key);
        if (m->keys[j]) {
            m->vals[j] = (uint32_t)((int64_t)m->vals[j] + delta);
            return 0;
        }
    }
    if (delta <= 0)
        return 0;
    if (imap_reserve(m, 1))
        return -1;
    j = imap_slot(m, key);
    m->keys[j] = key + 1;
    m->vals[j] = (uint32_t)delta;
    m->n++;
    return 0;
}

void imap_free(struct imap *m)
{
    common_free(m->keys);
    common_free(m->vals);
    memset(m, 0, sizeof(*m));
}
