#include "trainjob/builtin.h"

#include <string.h>

const struct trainjob_builtin *trainjob_builtin_find(const char *name)
{
    for (const struct trainjob_builtin *b = trainjob_builtins; b->name; b++)
        if (strcmp(b->name, name) == 0)
            return b;
    return NULL;
}
