/*
 * tests/unit/testutil.h - helpers shared by the Check unit tests.
 *
 * Fixture files live under TS_FIXTURES (tests/fixtures/<area>/<case-name>/). The helpers read
 * them with the product's own YAML loader, so fixtures are real Kubernetes YAML or JSON.
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <check.h>
#include <jansson.h>
#include <stddef.h>

/* testutil_path - TS_FIXTURES "/" rel, in a static buffer (valid until the next call). */
const char *testutil_path(const char *rel);

/* testutil_read - whole file as a malloc'd NUL-terminated string (caller frees); aborts the test
 * when the file cannot be read. */
char *testutil_read(const char *path);

/* testutil_load_json - TS_FIXTURES/area/name/file decoded (new reference; any JSON value);
 * aborts the test naming the file and line when it is missing or not JSON. */
json_t *testutil_load_json(const char *area, const char *name, const char *file);

/* testutil_cases - the case folders under TS_FIXTURES "/" area, sorted by name, as malloc'd
 * names in out[0..max); returns how many (0 when the folder cannot be read). */
int testutil_cases(const char *area, char **out, int max);

/* testutil_run_suite - run suite s with CK_NORMAL output; returns the process exit status
 * (0 when every test passed). */
int testutil_run_suite(Suite *s);

#endif
