/*
 * common/yaml.h - read manifests as kubectl reads them, and write objects back as YAML.
 *
 * Loading: libyaml parses a file of one or more YAML documents (JSON is YAML too) and each
 * document becomes a jansson value. Plain scalars resolve as YAML 1.1, as kubectl's
 * sigs.k8s.io/yaml (go-yaml v2) does: "", ~, null, Null, NULL -> null; y/Y/yes/Yes/YES, n/N/no/
 * No/NO, true/True/TRUE, false/False/FALSE, on/On/ON, off/Off/OFF -> booleans; decimal, 0x hex,
 * 0o / leading-0 octal ("0400" is 256), 0b binary, with any underscores ("1_000") -> integers;
 * numbers with '.' or an exponent -> reals (so does "08", not valid octal, as in go-yaml);
 * everything else -> string: sexagesimal "1:20", dates, "1e400" (beyond double), and every
 * quoted or block (| >) scalar. Integers outside int64 are an error. .inf/.nan resolve as
 * floats, but JSON cannot hold them, so as values they are an error (kubectl fails on them too).
 * Explicit standard tags are honoured (!!str 0400 is "0400", !!int "0400" is 256, !!float 1 is
 * 1.0; ! alone means string); any other tag is an error.
 * Mapping keys must be scalars and become strings the way sigs.k8s.io/yaml makes them: 0400 ->
 * "256", yes -> "true", 1.5 -> "1.5" (floats printed as Go's %g of a float32); a null key is an
 * error, and so is a key repeated after that conversion (the message names the key and both
 * lines). Merge keys ("<<: *base", or a list of them) are applied: explicit keys win, earlier
 * merged mappings win over later ones.
 * Anchors and aliases are expanded by deep copy, with a cap on the expanded size per document
 * (max_nodes, checked before copying, so alias bombs fail at once) and on the expanded depth.
 * Nesting deeper than max_depth, a document over max_doc_bytes (source bytes from its start to
 * its end, comments inside included), and input that is not UTF-8 text (NUL bytes, control
 * characters, invalid sequences, UTF-16) are errors. A document that is empty (nothing after
 * "---", or a file of only comments) gives no document at all; "null" or "~" gives a json null.
 * Every error message is "name:line:col: what" with 1-based positions (columns count
 * characters, as libyaml does); only "out of memory", read failures and the whole-file cap have
 * no position.
 *
 * Memory: the input is handed to libyaml in chunks; reading stops soon after a document passes
 * max_doc_bytes, so a 50 MB file costs about 3 MiB, not 50. libyaml allocates with malloc;
 * everything else goes through common_malloc, so failure injection reaches it.
 *
 * Positions: the loader remembers the line and column where each mapping, sequence and scalar
 * value started (and where each mapping key was written), keyed by pointer, so a validator that
 * reports a field path can be turned into "file:line:col" by the caller (common_yaml_locate,
 * common_yaml_locate_key). A copy made for an alias is placed at the alias, its insides at
 * the anchored text. Positions stay valid while the documents are not modified.
 *
 * Writing: common_yaml_emit writes a jansson value as block-style YAML as kubectl prints it
 * (2-space indent, lists under a key not indented, keys in object order, no line folding);
 * strings that would read back as something else (true, 0400, 1e3, null, "", dates, ...) are
 * double-quoted, strings with indicators or edge spaces single-quoted by libyaml, and strings
 * with newlines written as literal blocks "|", so load(emit(x)) equals x.
 */
#ifndef COMMON_YAML_H
#define COMMON_YAML_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"

/* Limits for loading; a field left 0 takes its default. */
struct common_yaml_limits {
    size_t max_doc_bytes; /* one document's source bytes; default 3 MiB (API server limit) */
    size_t max_depth;     /* nesting of mappings/sequences; default 100, at most 10,000 */
    size_t max_nodes;     /* nodes after alias expansion, per document; default 1,000,000 */
    int allow_nul;        /* keep NUL (\0, \u0000) inside strings; default 0: refused, since
                             every consumer reads strings back as C strings and would see them
                             cut short */
};

/* One loaded file: docs[i] is the i-th non-empty document (a new reference), owned by the
 * struct. */
struct common_yaml_docs {
    json_t **docs;
    int *doc_line; /* 1-based line where each document starts */
    size_t n;
    struct common_yaml_pos_map *pos; /* private: json_t* -> position */
    char *name;                      /* file name used in messages */
};

/* common_yaml_limits_default - the defaults above. */
struct common_yaml_limits common_yaml_limits_default(void);

/*
 * common_yaml_load - parse data[0..len) (need not be NUL-terminated) named name (for messages)
 * into out (it is zeroed first; free with common_yaml_docs_free even after a failure). limits
 * may be NULL for the defaults. Returns COMMON_OK; COMMON_EINVAL with "name:line:col: what" for
 * malformed YAML, duplicate keys, unsupported tags, bad integers, too deep nesting, binary or
 * invalid UTF-8 input, a key or string holding NUL (unless limits->allow_nul); COMMON_ETOOBIG with
 * "name:line:col: document N is larger than the limit of 3145728 bytes" (the position and number of
 * the document, counting empty ones), the nodes cap, or "name: larger than the limit of N bytes"
 * for the whole input (64 documents' worth); COMMON_ENOMEM. On failure out holds no documents.
 */
enum common_rc common_yaml_load(const char *data, size_t len, const char *name,
                                const struct common_yaml_limits *limits,
                                struct common_yaml_docs *out, struct common_error *err);

/*
 * common_yaml_load_file - read path ("-" = standard input, named "<stdin>") and load it as above,
 * streaming: the file is never held whole in memory. The whole file is capped at 64 times the
 * document limit; over it: COMMON_ETOOBIG naming the file. Also COMMON_ENOTFOUND (no such file)
 * and COMMON_EIO (open or read failure, with strerror).
 */
enum common_rc common_yaml_load_file(const char *path, const struct common_yaml_limits *limits,
                                     struct common_yaml_docs *out, struct common_error *err);

/* common_yaml_docs_free - release every document and the position map. Safe on a zeroed or
 * half-built struct. */
void common_yaml_docs_free(struct common_yaml_docs *d);

/*
 * common_yaml_locate - position of node (a value inside one of d's documents): 1-based line
 * and column into *line and *col. Returns 0, or -1 when the node is unknown (booleans and
 * null are shared singletons in jansson and have no position of their own: use
 * common_yaml_locate_key for them).
 */
int common_yaml_locate(const struct common_yaml_docs *d, const json_t *node, int *line, int *col);

/*
 * common_yaml_locate_key - position where key was written in object (a mapping inside one of
 * d's documents; a key that came from a merge "<<" is placed where the merged mapping wrote
 * it). Returns 0, or -1 when object has no such key or it has no position.
 */
int common_yaml_locate_key(const struct common_yaml_docs *d, json_t *object, const char *key,
                           int *line, int *col);

/*
 * common_yaml_emit - append value as a YAML document (no leading "---") to out. Objects in
 * key order, arrays as block sequences ("- ", not indented under a key), empty object "{}",
 * empty array "[]", strings quoted when a plain scalar would not read back as the same string
 * (multi-line strings use literal block style "|"; a trailing "..." line follows a root or last
 * block scalar that keeps trailing newlines, as libyaml writes it). Integers print exactly;
 * reals as the shortest form that reads back, always with a '.' or an exponent. Several
 * documents go in one file with "---\n" between them. Returns COMMON_OK, COMMON_ETOOBIG (out's
 * cap), COMMON_EINVAL (a string that is not UTF-8, or nesting deeper than 100,000: a cycle) or
 * COMMON_ENOMEM; on failure out is left as it was.
 */
enum common_rc common_yaml_emit(const json_t *value, struct common_buf *out,
                                struct common_error *err);

#endif
