/*
 * cmd/cli.h - the subcommands of the trainsched binary, one entry point each.
 *
 * Each takes argc/argv (argv[0] is the subcommand's name) and the streams to write to, and
 * returns the process exit status: 0 success, 1 an internal failure (out of memory, I/O on
 * output), 2 bad usage or bad input (the message on err names the file, position or field).
 */
#ifndef CMD_CLI_H
#define CMD_CLI_H

#include <stdio.h>

/* trainsched render: TrainJobs -> the objects the reconciler would create (a v1 List). */
int cmd_render(int argc, char **argv, FILE *out, FILE *err);

/* trainsched simulate: what-if placement of training jobs over simulated time, no cluster. */
int cmd_simulate(int argc, char **argv, FILE *out, FILE *err);

/* trainsched explain: why a TrainJob waits, read from the API (cmd/explain.h, docs/explain.md). */
int cmd_explain(int argc, char **argv, FILE *out, FILE *err);

/* trainsched certs: a CA and a serving certificate for the webhook/extender Service. */
int cmd_certs(int argc, char **argv, FILE *out, FILE *err);

/* trainsched serve: the daemon (reconciler; health and metrics on plain HTTP). */
int cmd_serve(int argc, char **argv, FILE *out, FILE *err);

/* trainsched version: name, version and git revision. */
int cmd_version(int argc, char **argv, FILE *out, FILE *err);

/*
 * cli_yaml_quote - s as a YAML double-quoted scalar (JSON string syntax, which YAML 1.1 and 1.2
 * both read back as s: quotes, backslashes and control characters escaped), for printing
 * settings files that `--config` must read back. In: a NUL-terminated string (NULL prints "").
 * Out: a pointer into one of 32 rotating buffers of 4 KiB (valid until 32 more calls; not
 * thread-safe: for single-threaded printing only); a string that does not fit is cut at a
 * character boundary and closed. Never fails.
 */
const char *cli_yaml_quote(const char *s);

/*
 * cli_expand_paths - the file arguments in[0..nin) with each folder replaced by its .yaml, .yml
 * and .json files (not its sub-folders), in name order, as `kubectl apply -f DIR` reads a folder;
 * "-" (standard input) and paths that are not folders pass as given. out (room for max) gets
 * common_malloc'd copies, *nout how many (free with cli_free_paths, also after a failure).
 * *stdin_seen counts "-" across calls: a second one is refused. Returns 0; 2 after printing to
 * err why (a second "-", an unreadable folder, a folder without such a file, more than max
 * files); 1 when out of memory.
 */
int cli_expand_paths(const char *const *in, size_t nin, char **out, size_t max, size_t *nout,
                     int *stdin_seen, FILE *err);

/* cli_free_paths - free p[0..n) of cli_expand_paths. */
void cli_free_paths(char **p, size_t n);

#endif
