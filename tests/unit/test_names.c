/*
 * tests/unit/test_names.c - common/names: the Kubernetes name and label rules.
 *
 * One table of rows (input, rule, expected message or NULL) drives every check; messages were
 * compared with apimachinery v0.36. A row's `want` is either the whole message or, when it
 * starts with '~', a piece that the message must contain.
 */
#include <check.h>
#include <stddef.h>
#include <string.h>

#include "common/names.h"
#include "testutil.h"

/* Long names, built from literals so they fit in the table. */
#define A10 "aaaaaaaaaa"
#define A60 A10 A10 A10 A10 A10 A10
#define A61 A60 "a"
#define A62 A60 "aa"
#define A63 A60 "aaa"
#define A64 A60 "aaaa"
#define S253 A63 "." A63 "." A63 "." A61 /* 63 * 3 + 3 + 61 = 253 */
#define S254 A63 "." A63 "." A63 "." A62

enum rule { RFC1035, DNS1123_LABEL, DNS1123_SUBDOMAIN, LABEL_VALUE, QUALIFIED_NAME };

struct name_row {
    enum rule rule;
    const char *in;
    const char *want; /* NULL: valid; "~part": message contains part; else the exact message */
};

#define MAX63 "must be no more than 63 characters"
#define MAX253 "must be no more than 253 characters"
#define MSG_1035                                                                                   \
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "   \
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "           \
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
#define MSG_1123_LABEL                                                                             \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "   \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "     \
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define MSG_1123_SUBDOMAIN                                                                         \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "  \
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define MSG_LABEL_VALUE                                                                            \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "    \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "             \
    "'my_value',  or '12345', regex used for validation is "                                       \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define MSG_NAME_PART                                                                              \
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "  \
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "     \
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"

static const struct name_row rows[] = {
    /* RFC 1035 label (TrainJob names) */
    {RFC1035, "a", NULL},
    {RFC1035, "my-name", NULL},
    {RFC1035, "abc-123", NULL},
    {RFC1035, "a1", NULL},
    {RFC1035, "a--b", NULL},
    {RFC1035, A63, NULL},
    {RFC1035, A64, MAX63},
    {RFC1035, "", MSG_1035},
    {RFC1035, "1abc", MSG_1035},
    {RFC1035, "-abc", MSG_1035},
    {RFC1035, "abc-", MSG_1035},
    {RFC1035, "Abc", MSG_1035},
    {RFC1035, "a.b", MSG_1035},
    {RFC1035, "a_b", MSG_1035},
    {RFC1035, "a b", MSG_1035},
    {RFC1035, "-", MSG_1035},
    {RFC1035, "1", MSG_1035},

    /* DNS-1123 label */
    {DNS1123_LABEL, "a", NULL},
    {DNS1123_LABEL, "0", NULL},
    {DNS1123_LABEL, "123-abc", NULL},
    {DNS1123_LABEL, "my-name", NULL},
    {DNS1123_LABEL, "1-2", NULL},
    {DNS1123_LABEL, A63, NULL},
    {DNS1123_LABEL, A64, MAX63},
    {DNS1123_LABEL, "", MSG_1123_LABEL},
    {DNS1123_LABEL, "-a", MSG_1123_LABEL},
    {DNS1123_LABEL, "a-", MSG_1123_LABEL},
    {DNS1123_LABEL, "A", MSG_1123_LABEL},
    {DNS1123_LABEL, "a_b", MSG_1123_LABEL},
    {DNS1123_LABEL, "a.b", "must not contain dots"},
    {DNS1123_LABEL, "example.com", "must not contain dots"},
    {DNS1123_LABEL, "a..b", MSG_1123_LABEL},
    {DNS1123_LABEL, ".a", MSG_1123_LABEL},

    /* DNS-1123 subdomain (object names) */
    {DNS1123_SUBDOMAIN, "a", NULL},
    {DNS1123_SUBDOMAIN, "example.com", NULL},
    {DNS1123_SUBDOMAIN, "a.b.c-d.0", NULL},
    {DNS1123_SUBDOMAIN, A64, NULL}, /* no per-label cap, as in apimachinery */
    {DNS1123_SUBDOMAIN, S253, NULL},
    {DNS1123_SUBDOMAIN, S254, MAX253},
    {DNS1123_SUBDOMAIN, "", MSG_1123_SUBDOMAIN},
    {DNS1123_SUBDOMAIN, ".", MSG_1123_SUBDOMAIN},
    {DNS1123_SUBDOMAIN, "a.", MSG_1123_SUBDOMAIN},
    {DNS1123_SUBDOMAIN, ".a", MSG_1123_SUBDOMAIN},
    {DNS1123_SUBDOMAIN, "a..b", MSG_1123_SUBDOMAIN},
    {DNS1123_SUBDOMAIN, "a.-b", MSG_1123_SUBDOMAIN},
    {DNS1123_SUBDOMAIN, "a-.b", MSG_1123_SUBDOMAIN},
    {DNS1123_SUBDOMAIN, "Example.com", MSG_1123_SUBDOMAIN},
    {DNS1123_SUBDOMAIN, "a_b.com", MSG_1123_SUBDOMAIN},

    /* label value */
    {LABEL_VALUE, "", NULL},
    {LABEL_VALUE, "a", NULL},
    {LABEL_VALUE, "MyValue", NULL},
    {LABEL_VALUE, "my_value", NULL},
    {LABEL_VALUE, "12345", NULL},
    {LABEL_VALUE, "a.b-c_d", NULL},
    {LABEL_VALUE, "A-._z", NULL},
    {LABEL_VALUE, A63, NULL},
    {LABEL_VALUE, A64, "must be no more than 63 bytes"},
    {LABEL_VALUE, "-a", MSG_LABEL_VALUE},
    {LABEL_VALUE, "a-", MSG_LABEL_VALUE},
    {LABEL_VALUE, "_a", MSG_LABEL_VALUE},
    {LABEL_VALUE, "a.", MSG_LABEL_VALUE},
    {LABEL_VALUE, "a b", MSG_LABEL_VALUE},
    {LABEL_VALUE, "a/b", MSG_LABEL_VALUE},
    {LABEL_VALUE, "a=b", MSG_LABEL_VALUE},

    /* qualified name (label and annotation keys) */
    {QUALIFIED_NAME, "a", NULL},
    {QUALIFIED_NAME, "MyName", NULL},
    {QUALIFIED_NAME, "my.name", NULL},
    {QUALIFIED_NAME, "123-abc", NULL},
    {QUALIFIED_NAME, "example.com/MyName", NULL},
    {QUALIFIED_NAME, "trainer.kubeflow.org/trainjob-ancestor-step", NULL},
    {QUALIFIED_NAME, "kubernetes.io/a_b", NULL},
    {QUALIFIED_NAME, A63, NULL},
    {QUALIFIED_NAME, "p/" A63, NULL},
    {QUALIFIED_NAME, S253 "/" A63, NULL},
    {QUALIFIED_NAME, A64, "name part must be no more than 63 bytes"},
    {QUALIFIED_NAME, "p/" A64, "name part must be no more than 63 bytes"},
    {QUALIFIED_NAME, S254 "/a", "prefix part must be no more than 253 bytes"},
    {QUALIFIED_NAME, "", "name part must be non-empty"},
    {QUALIFIED_NAME, "example.com/", "name part must be non-empty"},
    {QUALIFIED_NAME, "/a", "prefix part must be non-empty"},
    {QUALIFIED_NAME, "/", "prefix part must be non-empty"},
    {QUALIFIED_NAME, "Example.com/a", "prefix part " MSG_1123_SUBDOMAIN},
    {QUALIFIED_NAME, "a_b/c", "prefix part " MSG_1123_SUBDOMAIN},
    {QUALIFIED_NAME, "-a", MSG_NAME_PART},
    {QUALIFIED_NAME, "a-", MSG_NAME_PART},
    {QUALIFIED_NAME, "a b", MSG_NAME_PART},
    {QUALIFIED_NAME, "example.com/-a", MSG_NAME_PART},
    {QUALIFIED_NAME, "a/b/c", "~a valid label key must consist of alphanumeric characters"},
    {QUALIFIED_NAME, "a/b/c",
     "~with an optional DNS subdomain prefix and '/' (e.g. "
     "'example.com/MyName')"},
};

static const char *check(enum rule rule, const char *in)
{
    switch (rule) {
    case RFC1035:
        return common_names_rfc1035_label(in);
    case DNS1123_LABEL:
        return common_names_dns1123_label(in);
    case DNS1123_SUBDOMAIN:
        return common_names_dns1123_subdomain(in);
    case LABEL_VALUE:
        return common_names_label_value(in);
    case QUALIFIED_NAME:
        return common_names_qualified_name(in);
    }
    return "unknown rule";
}

static const char *const rule_names[] = {"rfc1035_label", "dns1123_label", "dns1123_subdomain",
                                         "label_value", "qualified_name"};

START_TEST(test_name)
{
    const struct name_row *row = &rows[_i];
    const char *got = check(row->rule, row->in);

    if (!row->want) {
        ck_assert_msg(got == NULL, "%s(\"%s\"): unexpected error \"%s\"", rule_names[row->rule],
                      row->in, got);
    } else if (row->want[0] == '~') {
        ck_assert_msg(got != NULL && strstr(got, row->want + 1) != NULL,
                      "%s(\"%s\"): got \"%s\", want a message with \"%s\"", rule_names[row->rule],
                      row->in, got ? got : "(valid)", row->want + 1);
    } else {
        ck_assert_msg(got != NULL && strcmp(got, row->want) == 0,
                      "%s(\"%s\"): got \"%s\", want \"%s\"", rule_names[row->rule], row->in,
                      got ? got : "(valid)", row->want);
    }
}
END_TEST

/* The length rows really are the lengths their names say. */
START_TEST(test_lengths)
{
    ck_assert_uint_eq(strlen(A63), 63);
    ck_assert_uint_eq(strlen(A64), 64);
    ck_assert_uint_eq(strlen(S253), 253);
    ck_assert_uint_eq(strlen(S254), 254);
}
END_TEST

/* NULL is checked as the empty string. */
START_TEST(test_null)
{
    ck_assert_str_eq(common_names_rfc1035_label(NULL), MSG_1035);
    ck_assert_str_eq(common_names_dns1123_label(NULL), MSG_1123_LABEL);
    ck_assert_str_eq(common_names_dns1123_subdomain(NULL), MSG_1123_SUBDOMAIN);
    ck_assert_ptr_null(common_names_label_value(NULL));
    ck_assert_str_eq(common_names_qualified_name(NULL), "name part must be non-empty");
}
END_TEST

static Suite *names_suite(void)
{
    Suite *s = suite_create("names");
    TCase *tc = tcase_create("core");

    tcase_add_loop_test(tc, test_name, 0, (int)(sizeof(rows) / sizeof(rows[0])));
    tcase_add_test(tc, test_lengths);
    tcase_add_test(tc, test_null);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return testutil_run_suite(names_suite());
}
