#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

const char *testutil_path(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s/%s", TS_FIXTURES, rel);
    return buf;
}

char *testutil_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *data;
    long n;

    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(fread(data, 1, (size_t)n, f), (size_t)n);
    data[n] = '\0';
    fclose(f);
    return data;
}

json_t *testutil_load_json(const char *area, const char *name, const char *file)
{
    char rel[1024];
    json_error_t je;
    json_t *v;

    snprintf(rel, sizeof(rel), "%s/%s/%s", area, name, file);
    v = json_load_file(testutil_path(rel), JSON_DECODE_ANY, &je);
    ck_assert_msg(v != NULL, "%s: line %d: %s", rel, je.line, je.text);
    return v;
}

int testutil_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    common_alloc_init();
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int testutil_cases(const char *area, char **out, int max)
{
    DIR *d = opendir(testutil_path(area));
    struct dirent *e;
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) && n < max)
        if (e->d_name[0] != '.' && (out[n] = strdup(e->d_name)))
            n++;
    closedir(d);
    qsort(out, (size_t)n, sizeof(out[0]), cmp_name);
    return n;
}
