/* cmd/version.c - `trainsched version`. */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"

int cmd_version(int argc, char **argv, FILE *out, FILE *err)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs("Usage: trainsched version\n\nPrint the trainsched version and git revision.\n", out);
        return 0;
    }
    if (argc > 1) {
        fprintf(err, "trainsched version: unexpected argument \"%s\" (it takes none)\n", argv[1]);
        return 2;
    }
    fprintf(out, "trainsched %s (git %s)\n", TS_VERSION, TS_GIT);
    return 0;
}
