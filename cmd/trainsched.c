/*
 * cmd/trainsched.c - the trainsched binary: a table of subcommands.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "common/alloc.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv, FILE *out, FILE *err);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"certs", cmd_certs, "write a CA and a serving certificate for the webhook and extender"},
    {"explain", cmd_explain, "why a TrainJob waits and what would unblock it, from the API"},
    {"render", cmd_render, "print what a TrainJob becomes (JobSet, PodGroup, ...), no cluster"},
    {"simulate", cmd_simulate, "place training jobs on a simulated cluster over time, no cluster"},
    {"serve", cmd_serve, "run the daemon: reconciler, admission webhook, scheduler extender"},
    {"version", cmd_version, "print the version"},
};

/* "trainsched", or "kubectl trainsched" when run as the kubectl plugin kubectl-trainsched
 * (kubectl runs the plugin with the words after `kubectl trainsched`: argv[1] is the command) */
static const char *prog = "trainsched";

static void help(FILE *f)
{
    fprintf(f,
            "trainsched - the scheduling side of distributed training on Kubernetes\n"
            "(Kubeflow Trainer TrainJobs, all-or-nothing gang scheduling)\n\n"
            "Usage: %s COMMAND [OPTIONS]\n\nCommands:\n",
            prog);
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\nRun `%s COMMAND --help` for a command's options.\n", prog);
    fputs("Installed as kubectl-trainsched on the PATH, it is the kubectl plugin `kubectl\n"
          "trainsched` (e.g. `kubectl trainsched explain my-job -n ml`).\n"
          "Global: -h/--help, --version (also after a command: `trainsched render --version`).\n"
          "Exit status: 0 done; 1 an internal or environment error; 2 bad usage or input.\n",
          f);
}

int main(int argc, char **argv)
{
    const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;

    common_alloc_init();
    base = base ? base + 1 : argc > 0 && argv[0] ? argv[0] : "";
    if (strcmp(base, "kubectl-trainsched") == 0)
        prog = "kubectl trainsched";
    if (argc < 2) {
        help(stderr);
        return 2;
    }
    if (strcmp(argv[1], "help") == 0 && argc > 2) {
        /* `trainsched help render` = `trainsched render --help` */
        char *hargv[] = {argv[2], "--help", NULL};
        for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
            if (strcmp(argv[2], subcommands[i].name) == 0)
                return subcommands[i].run(2, hargv, stdout, stderr);
        fprintf(stderr, "trainsched: unknown command \"%s\"\n\n", argv[2]);
        help(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        help(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(1, argv + 1, stdout, stderr);
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
        if (strcmp(argv[1], subcommands[i].name) != 0)
            continue;
        /* `trainsched COMMAND --version`, as the global one */
        if (argc == 3 && strcmp(argv[2], "--version") == 0)
            return cmd_version(1, argv + 2, stdout, stderr);
        return subcommands[i].run(argc - 1, argv + 1, stdout, stderr);
    }
    fprintf(stderr, "trainsched: unknown command \"%s\"\n\n", argv[1]);
    help(stderr);
    return 2;
}
