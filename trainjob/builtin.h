/*
 * trainjob/builtin.h - the ClusterTrainingRuntimes that Kubeflow Trainer ships, compiled in.
 *
 * manifests/runtimes/<name>.yaml is embedded by the build (cmake/embed.cmake) into
 * trainjob_builtins[], one entry per file, ended by an entry whose name is NULL. Source:
 * ../shared/reference/trainer.md §7.
 */
#ifndef TRAINJOB_BUILTIN_H
#define TRAINJOB_BUILTIN_H

#include <stddef.h>

struct trainjob_builtin {
    const char *name; /* the runtime's metadata.name (the file stem) */
    const char *yaml; /* the file's text, NUL-terminated */
    size_t len;       /* its length in bytes */
};

extern const struct trainjob_builtin trainjob_builtins[];

/* trainjob_builtin_find - the built-in runtime called name, or NULL. */
const struct trainjob_builtin *trainjob_builtin_find(const char *name);

#endif
