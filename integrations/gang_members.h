/*
 * integrations/gang_members.h - which pods of a rendered JobSet form the gang, shared by the
 * backends that write their own gang object (native, kai) and by volcano.
 *
 * JobSet's dependsOn makes stages. A replicated job that another one dependsOn with status
 * Complete (the dataset and model initializers) runs first and ends: its pods are never members
 * (a scheduler that holds a gang until minMember pods exist would hold them forever, since the
 * trainer pods are created only after them). A replicated job that dependsOn another with status
 * Ready (the MPI launcher of the deepspeed and mlx runtimes, created once the workers are Ready)
 * comes after the gang: its pods carry the gang's keys, so the same scheduler places them, but
 * are not counted in minMember. Every other replicated job is a member. Source: JobSet v1alpha2
 * ReplicatedJob.dependsOn ({name, status: Ready|Complete}).
 */
#ifndef INTEGRATIONS_GANG_MEMBERS_H
#define INTEGRATIONS_GANG_MEMBERS_H

#include <jansson.h>

#include "common/coretypes.h"
#include "common/error.h"

/* gang_jobset_of - the JobSet (apiVersion jobset.x-k8s.io/..., kind JobSet) in objects (borrowed),
 * or NULL. */
json_t *gang_jobset_of(json_t *objects);

/*
 * gang_jobset_parts - the JobSet of objects and its metadata, name and spec.replicatedJobs (all
 * borrowed). COMMON_OK; COMMON_ENOTFOUND when objects hold no JobSet (nothing to gang);
 * COMMON_EINVAL "JobSet without metadata.name".
 */
enum common_rc gang_jobset_parts(json_t *objects, json_t **meta, const char **name, json_t **rjobs,
                                 struct common_error *err);

/*
 * gang_object_meta - obj's metadata gets the namespace and a copy of the ownerReferences of
 * jobset_meta (the gang object is owned by the TrainJob, as the JobSet is). COMMON_OK or
 * COMMON_ENOMEM.
 */
enum common_rc gang_object_meta(json_t *obj, const json_t *jobset_meta, struct common_error *err);

/* gang_depended_on - 1 when some replicated job of rjobs (the JobSet's spec.replicatedJobs)
 * names the one called name in its dependsOn, else 0. */
int gang_depended_on(const json_t *rjobs, const char *name);

/* gang_role - the stage of replicated job name of rjobs (the JobSet's spec.replicatedJobs):
 * GANG_BEFORE when some replicated job dependsOn it with a status other than Ready, else
 * GANG_AFTER when its own dependsOn names, with status Ready, a replicated job that is not
 * GANG_BEFORE, else GANG_MEMBER. A name NULL is GANG_MEMBER. trainjob_gang_stage decides (the
 * Volcano PodGroup of trainjob/podgroup.c follows the same rule). */
enum gang_role { GANG_MEMBER, GANG_BEFORE, GANG_AFTER };
enum gang_role gang_role(const json_t *rjobs, const char *name);

/*
 * gang_topology_annotations - the gang's topology request as written: the topology annotations
 * (topo_is_annotation) of trainjob's metadata and of the pod templates of rjobs' replicated jobs
 * that are not GANG_BEFORE (initializers are no part of it), into kv[0..*n) (at most max; keys
 * and values borrowed from trainjob and rjobs). Errors (COMMON_EINVAL): one key with two values
 * ("metadata.annotations[\"k\"]: Invalid value: \"a\" (node) and \"b\": the gang asks for two
 * topologies"), more than max keys. topo_request_parse reads the result.
 */
enum common_rc gang_topology_annotations(const json_t *trainjob, const json_t *rjobs,
                                         struct common_kv *kv, size_t max, size_t *n,
                                         struct common_error *err);

/* gang_int_or - the integer v, or dflt when v is missing or not an integer. */
json_int_t gang_int_or(const json_t *v, json_int_t dflt);

#endif
