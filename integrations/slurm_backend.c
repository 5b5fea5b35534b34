/*
 * integrations/slurm_backend.c - the slurm entry of the backend table: the gang is held by one
 * Slurm job (docs/slurm.md). trainjob_render writes the coscheduling PodGroup (the extender
 * binds the gang's pods, to the nodes Slurm gave the job only); translate previews the job
 * submission body (slurm.h, slurm_submission, API v0.0.38 with no partition: Slurm's default),
 * which the reconciler submits through slurmrestd (slurm_sync.h) with the serve config's
 * defaults and the server's API version. A suspended TrainJob gets no preview: the reconciler
 * submits nothing while spec.suspend is true (slurm_gang_decide), so render shows no job.
 */
#include <string.h>

#include "integrations/backend.h"
#include "integrations/slurm.h"

static enum common_rc slurm_translate(const struct backend_in *in, json_t *objects, json_t *preview,
                                      struct common_error *err)
{
    const json_t *jobset = NULL, *o;
    json_t *body = NULL, *wrap, *tj = NULL;
    const char *ns;
    size_t i;
    enum common_rc rc;

    json_array_foreach(objects, i, o)
    {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        if (kind && strcmp(kind, "JobSet") == 0)
            jobset = o;
    }
    if (!jobset || !preview)
        return COMMON_OK;
    if (json_is_true(json_object_get(json_object_get(in->trainjob, "spec"), "suspend")))
        return COMMON_OK;
    /* the uid and namespace the comment names are the created TrainJob's */
    if ((rc = backend_trainjob_as_created(in->trainjob, jobset, &tj, err)))
        return rc;
    rc = slurm_submission(tj, in->runtime, jobset, NULL, &body, err);
    if (rc) {
        json_decref(tj);
        return rc;
    }
    /* the body as slurmrestd takes it, wrapped so the List says what and where it goes */
    ns = json_string_value(json_object_get(json_object_get(tj, "metadata"), "namespace"));
    wrap =
        json_pack("{s:s,s:s,s:{s:O,s:s},s:s,s:o}", "apiVersion", "slurmrestd/v0.0.38", "kind",
                  "SlurmJobSubmission", "metadata", "name",
                  json_object_get(json_object_get(body, "job"), "name"), "namespace",
                  ns ? ns : "default", "request", "POST /slurm/v0.0.38/job/submit", "body", body);
    json_decref(tj);
    if (!wrap || json_array_append_new(preview, wrap))
        return common_error_set(err, COMMON_ENOMEM, "out of memory");
    return COMMON_OK;
}

const struct backend backend_slurm = {
    .name = "slurm",
    .built = 1,
    .what = "one Slurm job per gang through slurmrestd; the pods bind to the nodes Slurm gave it",
    .core_gang = TRAINJOB_GANG_COSCHEDULING,
    .requires = backend_cosched_requires,
    .install = "install the PodGroup CRD of kubernetes-sigs/scheduler-plugins, whose PodGroups "
               "carry the Slurm allocation to the extender",
    .translate = slurm_translate,
};
