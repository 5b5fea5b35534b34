/*
 * tests/e2e/e2eutil.h - clients for the end-to-end tests.
 *
 * e2e_client(timeout_ms, 0) talks to the test bed as its admin (KUBECONFIG). With as_trainsched
 * set it talks as trainsched's own ServiceAccount: the shipped manifests/rbac/rbac.yaml is
 * applied (server-side apply), a token is minted for trainsched-system/trainsched with the
 * TokenRequest API and written to a token file that the client reads. The API server runs with
 * RBAC, so an operation the shipped ClusterRole does not allow fails the test that needs it.
 */
#ifndef E2EUTIL_H
#define E2EUTIL_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/kube.h"

/* A new client (fails the running Check test when it cannot be made). timeout_ms 0: default. */
struct common_kube *e2e_client(long timeout_ms, int as_trainsched);

/* e2e_sa_token - a token of ServiceAccount ns/sa from the TokenRequest API through admin, for
 * audience (NULL: the API server's) valid for seconds (at least 600); malloc'd. Failures fail the
 * test. */
char *e2e_sa_token(struct common_kube *admin, const char *ns, const char *sa, const char *audience,
                   int seconds);

/* e2e_sa_kubeconfig - write to path (mode 0600) a kubeconfig for the test bed (TESTBED_SERVER,
 * TESTBED_CA) as trainsched's ServiceAccount, with a fresh one-hour token; the shipped
 * manifests/rbac/rbac.yaml is applied first, so what it grants is what the daemon gets. */
void e2e_sa_kubeconfig(struct common_kube *admin, const char *path);

/* e2e_make_ns - a fresh namespace "<prefix>-<random>" (into out) with its "default"
 * ServiceAccount and a RoleBinding that lets trainsched's ServiceAccount hold Leases there (the
 * ClusterRole trainsched-leader-election, as the shipped RoleBinding does in
 * trainsched-system); e2e_drop_ns deletes it. Both through admin; failures fail the test. */
void e2e_make_ns(struct common_kube *admin, const char *prefix, char *out, size_t size);
void e2e_drop_ns(struct common_kube *admin, const char *ns);

/* ---- generic helpers (shared by the e2e test files) ---- */

/* e2e_create - create obj (stolen) in ns (ignored for cluster-scoped r) with
 * fieldValidation=Strict through k; a failure fails the running test, except that a TrainJob
 * refused by Kueue's webhook with "runtime 'x' not found" (its cache lags a runtime just
 * created) is tried again for up to 20 s. */
void e2e_create(struct common_kube *k, const struct common_kube_resource *r, const char *ns,
                json_t *obj);
/* e2e_get - GET name (a new reference), or NULL when it does not exist; any other failure
 * fails the running test. */
json_t *e2e_get(struct common_kube *k, const struct common_kube_resource *r, const char *ns,
                const char *name);
/* e2e_named_fn - one poll of e2e_wait_named on object name: a new reference once the awaited
 * state is there, NULL while it is not yet. */
typedef json_t *(*e2e_named_fn)(const char *name, const void *arg);
/* e2e_wait_named - call fn(name, arg) every nap_ms ms until it returns non-NULL, and return that
 * (a new reference); after secs seconds fail the running test with "timed out after <secs> s
 * waiting for <what> (<ns>/<name>)". */
json_t *e2e_wait_named(double secs, int nap_ms, e2e_named_fn fn, const char *name, const void *arg,
                       const char *what, const char *ns);
/* e2e_at - the value at dotted path in o ("spec.replicatedJobs.0.name": a segment indexes an
 * array when the value there is one, else names an object key), borrowed from o; NULL when a
 * step is missing or a segment is 128 characters or longer. path NULL or "": o itself. */
json_t *e2e_at(const json_t *o, const char *path);
/* e2e_poll_fn - one poll of e2e_wait_for: a new reference once the awaited state is there, NULL
 * while it is not yet. */
typedef json_t *(*e2e_poll_fn)(const void *arg);
/* e2e_wait_for - call fn(arg) every 200 ms until it returns non-NULL, and return that (a new
 * reference); after secs seconds fail the running test with "timed out after <secs> s waiting
 * for <what> in <ns>". */
json_t *e2e_wait_for(double secs, e2e_poll_fn fn, const void *arg, const char *what,
                     const char *ns);
/* e2e_obj_ref - object name of resource res in namespace ns (ignored for cluster-scoped res),
 * read through k; the argument of e2e_exists. */
struct e2e_obj_ref {
    struct common_kube *k;
    const char *ns;
    const struct common_kube_resource *res;
    const char *name;
};
/* e2e_exists - an e2e_poll_fn on a const struct e2e_obj_ref *: e2e_get of the object (a new
 * reference), NULL while it does not exist; any other failure fails the running test. */
json_t *e2e_exists(const void *arg);
/* e2e_tj_cond - TrainJob name of namespace ns read through k (a new reference) when its
 * status condition of type has status and reason (NULL: any reason); NULL otherwise (no such
 * TrainJob or condition yet). A failed GET fails the running test (as e2e_get). */
json_t *e2e_tj_cond(struct common_kube *k, const char *ns, const char *name, const char *type,
                    const char *status, const char *reason);
/* e2e_tj_set_nodes - merge-patch TrainJob name of namespace ns through k to
 * spec.trainer.numNodes: nodes; a failure fails the running test. */
void e2e_tj_set_nodes(struct common_kube *k, const char *ns, const char *name, int nodes);
/* e2e_jobset_pods - the pods of namespace ns labelled jobset.sigs.k8s.io/jobset-name=jobset, as
 * listed through k (a new array); a failed list fails the running test ("list pods: ..."). */
json_t *e2e_jobset_pods(struct common_kube *k, const char *ns, const char *jobset);
/* E2E_BUILTIN_RUNTIMES - the names of the built-in runtimes (manifests/runtimes/<name>.yaml),
 * E2E_N_BUILTIN_RUNTIMES of them; e2e_apply_builtin_runtimes - server-side apply of each as a
 * ClusterTrainingRuntime through k (field manager e2e, forced); a failure fails the test. */
extern const char *const e2e_builtin_runtimes[];
#define E2E_N_BUILTIN_RUNTIMES 9
void e2e_apply_builtin_runtimes(struct common_kube *k);
/* e2e_kwok_node - a Node that kwok runs (annotation kwok.x-k8s.io/node: fake) with cpu CPUs,
 * 64Gi and 110 pods, labels type: kwok plus label (a YAML flow pair "key: value", or NULL). */
void e2e_kwok_node(struct common_kube *k, const char *name, const char *label, const char *cpu);
/* e2e_bound_pods - how many pods of JobSet jobset in ns have spec.nodeName; *total (may be NULL)
 * := how many pods it has. A failed list fails the running test. */
size_t e2e_bound_pods(struct common_kube *k, const char *ns, const char *jobset, size_t *total);
/* e2e_delete_gang - delete TrainJob name of ns (propagation Background); once the garbage
 * collector has removed its JobSet and Jobs (nothing makes pods again), its pods are deleted
 * with grace period 0 until none is left: on nodes no kubelet runs their deletion would never
 * finish. Each of the three waits takes up to secs; a timeout or a refused delete fails the
 * running test. */
void e2e_delete_gang(struct common_kube *k, const char *ns, const char *name, double secs);
/* e2e_event_with - after flushing the recorder ev (NULL: none), the first events.k8s.io Event of
 * ns whose JSON contains reason and text (a new reference), or NULL when there is none yet. A
 * failed flush or list fails the running test. */
struct common_events;
json_t *e2e_event_with(struct common_kube *k, struct common_events *ev, const char *ns,
                       const char *reason, const char *text);
/* e2e_log_level_from_env - the log level E2E_LOG_LEVEL names, when set. */
void e2e_log_level_from_env(void);

/* e2e_event_note - the note of the latest Event in namespace ns with reason `reason` on
 * PodGroup `name` whose note contains want (a new string, free it), or NULL when there is none
 * yet. Found as `kubectl describe podgroup` finds Events: core v1 Events whose
 * involvedObject.uid is the PodGroup's uid, so an Event written without regarding.uid is missed.
 * A missing PodGroup or a failed list fails the running test. */
char *e2e_event_note(struct common_kube *k, const char *ns, const char *name, const char *reason,
                     const char *want);
/*
 * tests/e2e/faultproxy.py, a TLS proxy in front of the bed's API server that forwards as the
 * bed's admin and can inject faults (its docstring): e2e_proxy_start runs it with its files in
 * workdir (an existing folder) and waits until it is ready (20 s), giving its pid, its port and
 * its control port; e2e_proxy_stop ends it (*pid 0 afterwards). e2e_proxy_ctl GETs path on the
 * control port and returns the JSON answer (new reference). e2e_proxy_client is a client of the
 * proxy (the bed's CA; max_watch_event 0: the default). Failures fail the running test.
 */
void e2e_proxy_start(const char *workdir, pid_t *pid, int *port, int *control_port);
void e2e_proxy_stop(pid_t *pid);
json_t *e2e_proxy_ctl(int control_port, const char *path);
struct common_kube *e2e_proxy_client(int port, size_t max_watch_event);

/* e2e_events_of - the core v1 Events of namespace ns whose involvedObject.uid is uid and whose
 * reason is reason (as `kubectl describe` finds them), a new array; a failed list fails the
 * running test. */
json_t *e2e_events_of(struct common_kube *k, const char *ns, const char *uid, const char *reason);
/* e2e_delete_pods_now - DELETE pod name of namespace ns (name NULL: every pod of ns) with
 * gracePeriodSeconds 0 through k; returns the HTTP status (0 when no answer came). */
long e2e_delete_pods_now(struct common_kube *k, const char *ns, const char *name);

/* e2e_now_s - CLOCK_MONOTONIC in seconds. */
double e2e_now_s(void);

/* e2e_nap - sleep ms milliseconds (an interrupted sleep is cut short). */
void e2e_nap(int ms);

/* e2e_yaml1 - the one YAML document in text (a new reference); fails the test otherwise. */
json_t *e2e_yaml1(const char *text);

/* e2e_yamlf - e2e_yaml1 of a printf format (at most 16 KiB once expanded). */
json_t *e2e_yamlf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* E2E_RT_NODE_JOB - a string literal to paste into a TrainingRuntime's YAML after its
 * mlPolicy: "  template:" with one replicatedJob "node" labelled
 * trainer.kubeflow.org/trainjob-ancestor-step: trainer, ending at its pod template's key
 * ("            template:"), so the pod's metadata/spec follow indented by 14 spaces. */
#define E2E_RT_NODE_JOB                                                                            \
    "  template:\n"                                                                                \
    "    spec:\n"                                                                                  \
    "      replicatedJobs:\n"                                                                      \
    "      - name: node\n"                                                                         \
    "        template:\n"                                                                          \
    "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"       \
    "          spec:\n"                                                                            \
    "            template:\n"

/* e2e_write_file - path := text (created/truncated); failures fail the test. */
void e2e_write_file(const char *path, const char *text);

/* e2e_slurp - the whole file read to EOF (so /proc works), malloc'd; "" when unreadable, NULL
 * when out of memory. No Check calls: safe outside a running test. */
char *e2e_slurp(const char *path);

/* e2e_read_text - e2e_slurp (malloc'd, "" when unreadable) that fails the test when NULL. */
char *e2e_read_text(const char *path);

/* e2e_free_port - a TCP port on 127.0.0.1 no one listens on now (the kernel's pick for port 0);
 * failures fail the test. */
int e2e_free_port(void);

/* e2e_free_port_or_exit - e2e_free_port for main() (outside a Check test): on failure perror and
 * exit(1). */
int e2e_free_port_or_exit(void);

/* e2e_http_get - GET path on 127.0.0.1:port (HTTP/1.0, 5 s socket timeouts): the HTTP status, or
 * -1 when nothing answered; the body (malloc'd, or NULL) into *body when body is not NULL. */
int e2e_http_get(int port, const char *path, char **body);

/* e2e_metric - the sum of the series of family name in a Prometheus text whose labels contain
 * labels (e.g. "verb=\"create\""; NULL: any), or NAN when there is none. */
double e2e_metric(const char *text, const char *name, const char *labels);

/* e2e_device_class - DeviceClass name selecting the devices of driver (cluster-scoped; the
 * caller deletes it). e2e_claim_template - ResourceClaimTemplate ns/name: one request "gpu" of
 * count devices of DeviceClass cls. Failures fail the test. */
void e2e_device_class(struct common_kube *k, const char *name, const char *driver);
void e2e_claim_template(struct common_kube *k, const char *ns, const char *name, const char *cls,
                        int count);

/* e2e_explain - run `trainsched explain ARGS --kubeconfig KC` (the real binary; args a shell
 * word list), its stderr into dir/trainsched.err: the exit status (-1 when it did not exit); its
 * stdout and stderr into *out and *err (malloc'd). Both are echoed to stderr with the command,
 * so a suite's log holds the outputs docs/explain-examples.md shows. */
int e2e_explain(const char *kc, const char *args, const char *dir, char **out, char **err);
/* e2e_trainsched - the same for any subcommand: `trainsched ARGS --kubeconfig KC` (args start
 * with the subcommand), stderr through dir/trainsched.err. */
int e2e_trainsched(const char *kc, const char *args, const char *dir, char **out, char **err);

/* e2e_exit_text - a wait status as "exit N", "signal N" or "status N" (a static buffer). */
const char *e2e_exit_text(int st);

/* e2e_echo_tail - print the last lines lines of the log at path to stderr (from a sanitizer's
 * report on when the log has one). */
void e2e_echo_tail(const char *path, int lines);

/* e2e_spawn - fork/exec TS_BINARY with argv (argv[0] ignored), stdin /dev/null, stdout and stderr
 * appended to log; the child dies with the thread that made it. The pid; fork failure fails the
 * test. */
pid_t e2e_spawn(char *const argv[], const char *log);

/* e2e_sched_config - write to f the shipped manifests/scheduler/scheduler-config.yaml with plain
 * HTTP to the extender on 127.0.0.1:port, httpTimeout bind_timeout_s s and short pod backoffs. */
void e2e_sched_config(FILE *f, int port, int bind_timeout_s);

/* e2e_sched_extender_up - write dir/scheduler-config.yaml (e2e_sched_config) and restart the
 * bed's kube-scheduler with it (for main(), outside a Check test): 0, or -1 after saying why on
 * stderr (the bed's own config is restored then). Undo with e2e_sched_ctl("restore"). */
int e2e_sched_extender_up(const char *dir, int port, int bind_timeout_s);

/* e2e_sched_ctl - run tests/e2e/testbed/scheduler-ctl.sh args (its stdout to stderr): the
 * system() status (0: success). */
int e2e_sched_ctl(const char *args);

struct Suite;
struct TTest;
/* e2e_add_test - add test t to suite s in a test case of its own named name, with the checked
 * fixture setup/teardown (either may be NULL) and a timeout of timeout_s seconds. */
void e2e_add_test(struct Suite *s, const char *name, const struct TTest *t, void (*setup)(void),
                  void (*teardown)(void), int timeout_s);
/* e2e_run_suite - run suite s (srunner, CK_NORMAL) and free it with its runner: the number of
 * failed tests. */
int e2e_run_suite(struct Suite *s);
/*
 * e2e_run_with_extender - restart the bed's kube-scheduler with e2e_sched_config(port,
 * bind_timeout_s), run suite s (srunner, CK_NORMAL), restore the bed's config: the number of
 * failed tests, plus one when the restore failed; 1 when the scheduler could not be restarted.
 */
int e2e_run_with_extender(struct Suite *s, int port, int bind_timeout_s);

struct rc_opts;
struct rc_reconciler;
/* e2e_rc_opts - *o := the reconciler options the e2e suites share: client kube, watching only
 * namespace ns, 2 workers, retries capped at 2 s (max_delay_ms 2000); everything else zero. */
void e2e_rc_opts(struct rc_opts *o, struct common_kube *kube, const char *ns);
/* e2e_rc_start - rc_create and rc_start a reconciler with o: the running reconciler
 * (rc_destroy it); a failure of either fails the running test with the error's message. */
struct rc_reconciler *e2e_rc_start(const struct rc_opts *o);

struct extender_server;
struct extender_server_opts;
struct common_httpd;
/* An extender served in-process on plain HTTP at 127.0.0.1:port. */
struct e2e_ext {
    struct extender_server *ext;
    struct common_httpd *httpd;
};
/* e2e_ext_start - create and start the extender with opts (caches synced, 30 s), served by 4
 * threads (connection timeout 3 s, drain 2 s; the port of a previous instance is retried for
 * 5 s); a failure fails the test. */
void e2e_ext_start(struct e2e_ext *e, const struct extender_server_opts *o, int port);
/* e2e_ext_stop - stop and free it (no-op when not started). */
void e2e_ext_stop(struct e2e_ext *e);

#endif
