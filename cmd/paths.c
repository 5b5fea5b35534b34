/*
 * cmd/paths.c - file arguments that may name folders, read as `kubectl apply -f DIR` reads one:
 * its .yaml, .yml and .json files (not its sub-folders), in name order. Shared by render and
 * simulate.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "common/alloc.h"

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int manifest_name(const char *n)
{
    size_t len = strlen(n);
    return n[0] != '.' && ((len > 5 && strcmp(n + len - 5, ".yaml") == 0) ||
                           (len > 4 && strcmp(n + len - 4, ".yml") == 0) ||
                           (len > 5 && strcmp(n + len - 5, ".json") == 0));
}

int cli_expand_paths(const char *const *in, size_t nin, char **out, size_t max, size_t *nout,
                     int *stdin_seen, FILE *err)
{
    *nout = 0;
    for (size_t i = 0; i < nin; i++) {
        struct stat st;
        DIR *d;
        struct dirent *e;
        size_t first = *nout;

        if (strcmp(in[i], "-") == 0 && (*stdin_seen)++) {
            fprintf(err, "error: \"-\" (standard input) is given twice: it can be read only "
                         "once\n");
            return 2;
        }
        if (strcmp(in[i], "-") == 0 || stat(in[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
            if (*nout >= max)
                goto too_many;
            if (!(out[(*nout)++] = common_strdup(in[i])))
                goto oom;
            continue;
        }
        if (!(d = opendir(in[i]))) {
            fprintf(err, "error: %s: cannot read the folder\n", in[i]);
            return 2;
        }
        while ((e = readdir(d))) {
            char path[4096];
            struct stat fst;
            if (!manifest_name(e->d_name))
                continue;
            snprintf(path, sizeof(path), "%s%s%s", in[i],
                     in[i][strlen(in[i]) - 1] == '/' ? "" : "/", e->d_name);
            if (stat(path, &fst) != 0 || S_ISDIR(fst.st_mode))
                continue;
            if (*nout >= max) {
                closedir(d);
                goto too_many;
            }
            if (!(out[(*nout)++] = common_strdup(path))) {
                closedir(d);
                goto oom;
            }
        }
        closedir(d);
        if (*nout == first) {
            fprintf(err, "error: %s: no .yaml, .yml or .json file in the folder\n", in[i]);
            return 2;
        }
        qsort(out + first, *nout - first, sizeof(*out), cmp_names);
    }
    return 0;
too_many:
    fprintf(err, "error: too many files (at most %zu)\n", max);
    return 2;
oom:
    fprintf(err, "error: out of memory\n");
    return 1;
}

void cli_free_paths(char **p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        common_free(p[i]);
        p[i] = NULL;
    }
}
