/*
 * dra/cel.h - the subset of CEL that DRA device selectors are written in: parse once, evaluate
 * against many devices.
 *
 * What it owns. DeviceClass spec.selectors[].cel.expression and a request's selectors are CEL
 * expressions over one variable, `device`, with fields driver (string), attributes (map from
 * a domain to the device's attributes of that domain) and capacity (the same for capacities,
 * whose values are quantities). Source: resource.k8s.io/v1 CELDeviceSelector and the
 * Kubernetes CEL libraries (quantity, semver) as used by k8s.io/dynamic-resource-allocation/cel.
 *
 * Supported: literals (strings in '...' or "..." with \\ \' \" \n \t escapes, integers,
 * true/false, lists [a, b]); device.driver, device.attributes["domain"].name and
 * device.capacity["domain"].name (also .name on a domain written ["name"]); == != < <= > >=
 * on ints, strings and bools (ordering on ints and strings only); == != on quantities and
 * versions; && || ! and parentheses; `x in [list]`, `"name" in device.attributes["domain"]`,
 * `"domain" in device.attributes`; has(device.attributes["d"].name); string methods
 * startsWith, endsWith, contains; quantity("80Gi") and semver("1.2.3") with compareTo,
 * isGreaterThan, isLessThan on quantities and versions; unary minus on an integer literal.
 * Ordering operators on quantities or versions are refused at parse time as Kubernetes' CEL
 * type checker refuses them (write compareTo).
 *
 * Anything else (arithmetic, the conditional operator, macros such as all/exists, matches,
 * other functions, double literals, bytes, maps) is refused by dra_cel_parse with
 * COMMON_EUNSUPPORTED and a message that quotes the expression and names the construct, so the
 * core never gives a wrong answer for an expression it does not understand.
 *
 * Runtime errors, as CEL gives them: a missing attribute or capacity ("no such key: name"),
 * ordering across types ("no such overload"). The allocator treats a runtime error the way
 * the upstream structured allocator does: it aborts the allocation with that error (it is not
 * read as "the device does not match"); selectors that may meet devices without an attribute
 * should guard it with has() or `in`.
 *
 * Memory: the parsed program lives in the caller's arena; evaluation does not allocate.
 */
#ifndef DRA_CEL_H
#define DRA_CEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"
#include "common/quantity.h"

/* A semantic version (semver 2.0.0): major.minor.patch[-pre][+build]; build is ignored. */
struct dra_semver {
    uint64_t major, minor, patch;
    const char *pre; /* "" when none; points into the parsed text */
};

/*
 * dra_semver_parse - parse strict semver text s ("1.2.3", "9.0.0-rc.1+b5"). The result's pre
 * points into s. Returns COMMON_OK or COMMON_EINVAL naming s.
 */
enum common_rc dra_semver_parse(const char *s, struct dra_semver *out, struct common_error *err);

/* dra_semver_cmp - -1, 0, 1 by semver precedence (build metadata ignored). */
int dra_semver_cmp(const struct dra_semver *a, const struct dra_semver *b);

/* The four attribute value types of resource.k8s.io/v1 DeviceAttribute. */
enum dra_attr_type { DRA_ATTR_INT = 1, DRA_ATTR_BOOL, DRA_ATTR_STRING, DRA_ATTR_VERSION };

struct dra_attr {
    const char *domain; /* the driver name when the attribute name has no domain */
    const char *name;
    enum dra_attr_type type;
    int64_t i;
    int b;
    const char *s; /* string, or the version text */
    struct dra_semver v;
};

struct dra_capacity {
    const char *domain;
    const char *name;
    struct common_quantity value;
};

/* What a selector sees of one device. */
struct dra_cel_device {
    const char *driver;
    const struct dra_attr *attrs;
    size_t n_attrs;
    const struct dra_capacity *caps;
    size_t n_caps;
};

struct dra_cel_node;
struct dra_cel_prog {
    const char *expr; /* the expression text (arena copy) */
    struct dra_cel_node *root;
};

/*
 * dra_cel_parse - compile expr into *out (nodes in arena a). Returns COMMON_OK;
 * COMMON_EUNSUPPORTED for valid CEL outside the subset, COMMON_EINVAL for a syntax or type
 * error; the message quotes expr and names the construct or the position. COMMON_ENOMEM.
 */
enum common_rc dra_cel_parse(struct common_arena *a, const char *expr, struct dra_cel_prog *out,
                             struct common_error *err);

/*
 * dra_cel_eval - evaluate prog against dev. Sets *match to 1 or 0 and returns COMMON_OK, or
 * returns COMMON_EINVAL with the CEL runtime error ("no such key: memory", "no such overload")
 * and the expression quoted. Does not allocate.
 */
enum common_rc dra_cel_eval(const struct dra_cel_prog *prog, const struct dra_cel_device *dev,
                            int *match, struct common_error *err);

#endif
