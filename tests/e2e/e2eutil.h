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

#include <stddef.h>

#include "common/kube.h"

/* A new client (fails the running Check test when it cannot be made). timeout_ms 0: default. */
struct common_kube *e2e_client(long timeout_ms, int as_trainsched);

/* e2e_make_ns - a fresh namespace "<prefix>-<random>" (into out) with its "default"
 * ServiceAccount and a RoleBinding that lets trainsched's ServiceAccount hold Leases there (the
 * ClusterRole trainsched-leader-election, as the shipped RoleBinding does in
 * trainsched-system); e2e_drop_ns deletes it. Both through admin; failures fail the test. */
void e2e_make_ns(struct common_kube *admin, const char *prefix, char *out, size_t size);
void e2e_drop_ns(struct common_kube *admin, const char *ns);

#endif
