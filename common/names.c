/*
 * common/names.c - Kubernetes name and label rules, checked by hand-written scanners.
 *
 * Every rule is "first character, middle characters, last character" over one segment, plus a
 * length cap, so one matcher (match_segment) with three character classes covers them all.
 * Messages are apimachinery's as of v0.36 (pkg/util/validation for DNS names,
 * pkg/api/validate/content for label keys and values), including its examples, the regular
 * expression it quotes and its double space in "',  or '"; where apimachinery reports several
 * problems we return the first one it would list (length before pattern).
 */
#include "common/names.h"

#include <stddef.h>
#include <string.h>

#define NAMES_LABEL_MAX 63
#define NAMES_SUBDOMAIN_MAX 253

/* The regular expressions apimachinery quotes in its messages. */
#define DNS1035_LABEL_RE "[a-z]([-a-z0-9]*[a-z0-9])?"
#define DNS1123_LABEL_RE "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS1123_SUBDOMAIN_RE DNS1123_LABEL_RE "(\\." DNS1123_LABEL_RE ")*"
#define QUALIFIED_NAME_RE "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define LABEL_VALUE_RE "(" QUALIFIED_NAME_RE ")?"

/* apimachinery's messages, spelled as its RegexError builds them (note the "',  or '"). */
#define MSG_MAX_63 "must be no more than 63 characters"
#define MSG_MAX_253 "must be no more than 253 characters"
/* Label keys and values count bytes, and since apimachinery 0.36 their messages say so. */
#define MSG_MAX_63_BYTES "must be no more than 63 bytes"
#define MSG_MAX_253_BYTES "must be no more than 253 bytes"
#define MSG_EMPTY "must be non-empty"
#define MSG_DNS1035                                                                                \
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "   \
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "           \
    "'abc-123', regex used for validation is '" DNS1035_LABEL_RE "')"
#define MSG_DNS1123_LABEL                                                                          \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "   \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "     \
    "used for validation is '" DNS1123_LABEL_RE "')"
#define MSG_DNS1123_SUBDOMAIN                                                                      \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "  \
    "for validation is '" DNS1123_SUBDOMAIN_RE "')"
#define MSG_NO_DOTS "must not contain dots"
#define MSG_LABEL_VALUE                                                                            \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "    \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "             \
    "'my_value',  or '12345', regex used for validation is '" LABEL_VALUE_RE "')"
#define MSG_QUALIFIED_BODY                                                                         \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "    \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "         \
    "validation is '" QUALIFIED_NAME_RE "')"

static int is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

static int is_lower_alnum(char c)
{
    return is_lower(c) || (c >= '0' && c <= '9');
}

static int is_lower_alnum_dash(char c)
{
    return is_lower_alnum(c) || c == '-';
}

static int is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static int is_name_char(char c)
{
    return is_alnum(c) || c == '-' || c == '_' || c == '.';
}

/* One segment rule: the class of its first, middle and last characters. */
struct segment_rule {
    int (*first)(char);
    int (*middle)(char);
    int (*last)(char);
};

static const struct segment_rule rule_dns1035 = {is_lower, is_lower_alnum_dash, is_lower_alnum};
static const struct segment_rule rule_dns1123 = {is_lower_alnum, is_lower_alnum_dash,
                                                 is_lower_alnum};
static const struct segment_rule rule_qualified = {is_alnum, is_name_char, is_alnum};

/* match_segment - whether the n characters at s (n >= 1) follow rule. A single character must
 * be in both the first and the last class, as in "x([...]*y)?". */
static int match_segment(const char *s, size_t n, const struct segment_rule *rule)
{
    size_t i;

    if (n == 0 || !rule->first(s[0]) || !rule->last(s[n - 1]))
        return 0;
    for (i = 1; i + 1 < n; i++)
        if (!rule->middle(s[i]))
            return 0;
    return 1;
}

/* match_subdomain - n characters of dot-separated DNS-1123 labels (no per-label length cap, as
 * apimachinery's pattern has none). */
static int match_subdomain(const char *s, size_t n)
{
    size_t start = 0, i;

    for (i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!match_segment(s + start, i - start, &rule_dns1123))
                return 0;
            start = i + 1;
        }
    }
    return 1;
}

const char *common_names_rfc1035_label(const char *s)
{
    size_t n;

    if (!s)
        s = "";
    n = strlen(s);

    if (n > NAMES_LABEL_MAX)
        return MSG_MAX_63;
    if (!match_segment(s, n, &rule_dns1035))
        return MSG_DNS1035;
    return NULL;
}

const char *common_names_dns1123_label(const char *s)
{
    size_t n;

    if (!s)
        s = "";
    n = strlen(s);

    if (n > NAMES_LABEL_MAX)
        return MSG_MAX_63;
    if (!match_segment(s, n, &rule_dns1123))
        return match_subdomain(s, n) ? MSG_NO_DOTS : MSG_DNS1123_LABEL;
    return NULL;
}

const char *common_names_dns1123_subdomain(const char *s)
{
    size_t n;

    if (!s)
        s = "";
    n = strlen(s);

    if (n > NAMES_SUBDOMAIN_MAX)
        return MSG_MAX_253;
    if (!match_subdomain(s, n))
        return MSG_DNS1123_SUBDOMAIN;
    return NULL;
}

const char *common_names_label_value(const char *s)
{
    size_t n;

    if (!s)
        s = "";
    n = strlen(s);

    if (n > NAMES_LABEL_MAX)
        return MSG_MAX_63_BYTES;
    if (n != 0 && !match_segment(s, n, &rule_qualified))
        return MSG_LABEL_VALUE;
    return NULL;
}

const char *common_names_qualified_name(const char *s)
{
    const char *slash, *name;
    size_t n;

    if (!s)
        s = "";
    slash = strchr(s, '/');
    name = s;
    if (slash) {
        size_t plen = (size_t)(slash - s);
        if (strchr(slash + 1, '/'))
            return "a valid label key " MSG_QUALIFIED_BODY " with an optional DNS subdomain prefix "
                   "and '/' (e.g. 'example.com/MyName')";
        if (plen == 0)
            return "prefix part " MSG_EMPTY;
        if (plen > NAMES_SUBDOMAIN_MAX)
            return "prefix part " MSG_MAX_253_BYTES;
        if (!match_subdomain(s, plen))
            return "prefix part " MSG_DNS1123_SUBDOMAIN;
        name = slash + 1;
    }
    n = strlen(name);
    if (n == 0)
        return "name part " MSG_EMPTY;
    if (n > NAMES_LABEL_MAX)
        return "name part " MSG_MAX_63_BYTES;
    if (!match_segment(name, n, &rule_qualified))
        return "name part " MSG_QUALIFIED_BODY;
    return NULL;
}
