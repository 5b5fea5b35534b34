/*
 * trainjob/lookup.h - what `trainsched render` and `trainsched simulate` check before a
 * TrainJob is rendered, in one place so that both give the same messages: the TrainJob on its
 * own, the runtime it names, and objects given twice.
 *
 * Pure: decoded JSON in, messages out (no positions: the callers know the files and turn the
 * nodes named here into "file:line:col: "). Source of the rules: Kubeflow Trainer v2.3's
 * TrainJob webhook ("specified trainingRuntime must be created before the TrainJob is
 * created", ../shared/reference/trainer.md §5.1) and the API server's uniqueness of names
 * (per namespace, per cluster for cluster-scoped kinds).
 */
#ifndef TRAINJOB_LOOKUP_H
#define TRAINJOB_LOOKUP_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"
#include "trainjob/trainjob.h"

/*
 * trainjob_lookup_check - the checks of a TrainJob before its runtime is looked up, in
 * render's order: trainjob_validate_trainjob (field errors into *errs, init it first), then
 * trainjob_runtime_ref (*ref filled; default_namespace for a TrainJob naming none), then that
 * the kind is TrainingRuntime or ClusterTrainingRuntime. Returns COMMON_OK; COMMON_EINVAL with
 * errs->n > 0 (print each as a field error), or with errs->n == 0 and err->msg the whole
 * message after "TrainJob ns/name: " (its position: the TrainJob); COMMON_ENOMEM.
 */
enum common_rc trainjob_lookup_check(const json_t *trainjob, const char *default_namespace,
                                     struct trainjob_errors *errs, struct trainjob_ref *ref,
                                     struct common_error *err);

/*
 * trainjob_lookup_matches - 1 when runtime (a TrainingRuntime or ClusterTrainingRuntime
 * object, borrowed) is the one ref names: same kind and name and, for a namespaced ref, the
 * runtime's metadata.namespace (default_namespace when it names none); else 0. Callers take
 * the first match of the runtimes they were given, in input order.
 */
int trainjob_lookup_matches(const json_t *runtime, const struct trainjob_ref *ref,
                            const char *default_namespace);

/*
 * trainjob_lookup_not_found - the message for a ref no given or built-in runtime matches, into
 * buf (n bytes), in Trainer's words then where the caller looked: "spec.runtimeRef: Invalid
 * value: {...}: TrainingRuntime.trainer.kubeflow.org \"x\" not found: specified trainingRuntime
 * must be created before the TrainJob is created (render: none in namespace \"y\" in its
 * input; give it ...)" (a ClusterTrainingRuntime is spec.RuntimeRef, as Trainer spells it); its
 * position is spec.runtimeRef.name. value: spec.runtimeRef as Trainer prints it
 * (trainjob_runtime_ref_json; NULL prints {}); where: the caller ("render", "simulate"); hint:
 * how the caller takes runtimes ("give it with --runtime FILE or in the same file"). A
 * TrainingRuntime named like a built-in ClusterTrainingRuntime gets "did you mean kind:
 * ClusterTrainingRuntime?". Returns buf.
 */
const char *trainjob_lookup_not_found(const struct trainjob_ref *ref, const char *value,
                                      const char *where, const char *hint, char *buf, size_t n);

/* An object given twice: the first and the later one (borrowed), its kind and namespace/name. */
struct trainjob_dup {
    const json_t *first, *second;
    const char *kind, *namespace, *name; /* namespace "" for a cluster-scoped kind */
};

/*
 * trainjob_lookup_duplicate - the first object of objs[0..n) (manifests with kind and
 * metadata.name, borrowed) whose kind, namespace (default_namespace when it names none; none
 * for ClusterTrainingRuntime) and name an earlier one has. One hash lookup per object. Returns
 * COMMON_OK with dup->second NULL when there is none, or set; COMMON_ENOMEM.
 */
enum common_rc trainjob_lookup_duplicate(const json_t *const *objs, size_t n,
                                         const char *default_namespace, struct trainjob_dup *dup,
                                         struct common_error *err);

/*
 * trainjob_lookup_duplicate_message - "Kind ns/name: metadata.name: Duplicate: the same Kind
 * is given twice (names are unique in a namespace); first given at FIRST" into buf (n bytes);
 * first_pos is "file:line:col" of dup->first (no trailing ": "), or "" to leave it out. Its
 * own position: dup->second's metadata.name. Returns buf.
 */
const char *trainjob_lookup_duplicate_message(const struct trainjob_dup *dup, const char *first_pos,
                                              char *buf, size_t n);

#endif
