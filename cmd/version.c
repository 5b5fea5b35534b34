/* cmd/version.c - `trainsched version`. */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"

int cmd_version(int argc, char **argv, FILE *out, FILE *err)
{
    (void)err;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs("Usage: trainsched version\n\nPrint the trainsched version and git revision.\n", out);
        return 0;
    }
    fprintf(out, "trainsched %s (git %s)\n", TS_VERSION, TS_GIT);
    return 0;
}
