/*
 * cmd/explain.c - the pure core of `trainsched explain` (cmd/explain.h): a snapshot of API
 * objects in, a story out (JSON), and the story as text.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/explain.h"
#include "common/leader.h"
#include "gang/gang.h"
#include "integrations/backend.h"

#define JOBSET_NAME_LABEL "jobset.sigs.k8s.io/jobset-name"

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static const char *meta(const json_t *o, const char *k)
{
    return str(json_object_get(o, "metadata"), k);
}

static int streq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* 1 when obj has an ownerReference to the TrainJob (by uid, or by kind and name without one) */
static int owned_by(const json_t *obj, const char *kind, const char *name, const char *uid)
{
    size_t i;
    const json_t *r;

    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, r)
    {
        if (uid && *uid) {
            if (streq(str(r, "uid"), uid))
                return 1;
        } else if (streq(str(r, "kind"), kind) && streq(str(r, "name"), name)) {
            return 1;
        }
    }
    return 0;
}

/* status.conditions[type].status == "True" */
static int cond_true(const json_t *obj, const char *type, const json_t **c_out)
{
    size_t i;
    const json_t *c;

    json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
    {
        if (streq(str(c, "type"), type)) {
            if (c_out)
                *c_out = c;
            return streq(str(c, "status"), "True");
        }
    }
    if (c_out)
        *c_out = NULL;
    return 0;
}

static json_t *conditions(const json_t *obj)
{
    json_t *a = json_array();
    size_t i;
    const json_t *c;

    json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
    {
        json_t *o = json_object();
        const char *keys[] = {"type", "status", "reason", "message"};
        for (size_t k = 0; k < 4; k++)
            json_object_set_new(o, keys[k], json_string(str(c, keys[k]) ? str(c, keys[k]) : ""));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *trainjob_part(const json_t *tj)
{
    const char *state = "Active";
    const json_t *spec = json_object_get(tj, "spec");

    if (cond_true(tj, "Complete", NULL))
        state = "Complete";
    else if (cond_true(tj, "Failed", NULL))
        state = "Failed";
    else if (json_is_true(json_object_get(spec, "suspend")) || cond_true(tj, "Suspended", NULL))
        state = "Suspended";
    return json_pack("{s:s, s:s, s:s, s:s, s:o}", "namespace",
                     meta(tj, "namespace") ? meta(tj, "namespace") : "", "name", meta(tj, "name"),
                     "uid", meta(tj, "uid") ? meta(tj, "uid") : "", "state", state, "conditions",
                     conditions(tj));
}

static const char *source_name(enum backend_source s)
{
    switch (s) {
    case BACKEND_FROM_OVERRIDE:
        return "override";
    case BACKEND_FROM_ANNOTATION:
        return "annotation";
    case BACKEND_FROM_POLICY:
        return "podGroupPolicy";
    case BACKEND_FROM_DEFAULT:
        break;
    }
    return "default";
}

/* the backend the objects found point at, for a runtime that names none (serve's default) */
static const char *backend_of_objects(const json_t *gangs)
{
    size_t i;
    const json_t *g;

    json_array_foreach(gangs, i, g)
    {
        const char *av = str(g, "apiVersion");
        if (!av)
            continue;
        if (strncmp(av, "scheduling.x-k8s.io/", 20) == 0)
            return "coscheduling";
        if (strncmp(av, "scheduling.k8s.io/", 18) == 0)
            return "native";
        if (strncmp(av, "scheduling.volcano.sh/", 22) == 0)
            return "volcano";
        if (strncmp(av, "scheduling.run.ai/", 18) == 0)
            return "kai";
        if (strncmp(av, "kueue.x-k8s.io/", 15) == 0)
            return "kueue";
    }
    return NULL;
}

static json_t *backend_part(const json_t *runtime, const json_t *gangs)
{
    const struct backend *b = NULL;
    enum backend_source from = BACKEND_FROM_DEFAULT;
    struct common_error e = {0};
    char why[COMMON_ERROR_MSG_MAX + 200];
    const char *seen = backend_of_objects(gangs);

    if (!runtime) {
        snprintf(why, sizeof(why), "the runtime could not be read%s%s",
                 seen ? "; the objects found are of " : "", seen ? seen : "");
        return json_pack("{s:s?, s:s, s:s}", "name", seen, "source", seen ? "objects" : "unknown",
                         "why", why);
    }
    if (backend_select(runtime, NULL, NULL, &b, &from, &e) != COMMON_OK) {
        snprintf(why, sizeof(why), "the runtime's backend choice is invalid: %s", e.msg);
        return json_pack("{s:s?, s:s, s:s}", "name", seen, "source", "invalid", "why", why);
    }
    switch (from) {
    case BACKEND_FROM_ANNOTATION:
        snprintf(why, sizeof(why), "the runtime's annotation %s says %s", BACKEND_ANNOTATION,
                 b->name);
        break;
    case BACKEND_FROM_POLICY:
        snprintf(why, sizeof(why), "the runtime's spec.podGroupPolicy.%s", b->name);
        break;
    default:
        if (seen) {
            /* the serve config default is not on the API: the objects tell which one ran */
            snprintf(why, sizeof(why),
                     "the runtime names no backend (no %s annotation, no spec.podGroupPolicy): "
                     "serve's default (backends.default) applies; the objects found are of %s",
                     BACKEND_ANNOTATION, seen);
            return json_pack("{s:s, s:s, s:s}", "name", seen, "source", "default", "why", why);
        }
        snprintf(why, sizeof(why),
                 "the runtime names no backend (no %s annotation, no spec.podGroupPolicy): "
                 "serve's default (backends.default) applies, \"none\" unless set",
                 BACKEND_ANNOTATION);
        break;
    }
    return json_pack("{s:s, s:s, s:s}", "name", b->name, "source", source_name(from), "why", why);
}

static const char *jobset_state(const json_t *js)
{
    if (cond_true(js, "Completed", NULL))
        return "Completed";
    if (cond_true(js, "Failed", NULL))
        return "Failed";
    if (cond_true(js, "Suspended", NULL) ||
        json_is_true(json_object_get(json_object_get(js, "spec"), "suspend")))
        return "Suspended";
    return "Active";
}

/* a pod's gang name, the way each backend marks it (NULL: none) */
static const char *pod_gang(const json_t *pod)
{
    const json_t *md = json_object_get(pod, "metadata");
    const char *s = str(json_object_get(md, "labels"), GANG_POD_GROUP_LABEL);
    const json_t *ann = json_object_get(md, "annotations");

    if (!s)
        s = str(ann, "scheduling.k8s.io/group-name"); /* Volcano */
    if (!s)
        s = str(ann, "pod-group-name"); /* KAI */
    if (!s)
        s = str(json_object_get(json_object_get(pod, "spec"), "schedulingGroup"),
                "podGroupName"); /* native */
    return s;
}

static void count_pod(json_t *g, const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *node = str(spec, "nodeName");
    const char *keys[4] = {"created", NULL, NULL, NULL};

    if (json_array_size(json_object_get(spec, "schedulingGates")))
        keys[1] = "gated";
    if (node && *node)
        keys[2] = "bound";
    if (streq(str(json_object_get(pod, "status"), "phase"), "Running"))
        keys[3] = "running";
    for (int i = 0; i < 4; i++)
        if (keys[i])
            json_object_set_new(g, keys[i],
                                json_integer(json_integer_value(json_object_get(g, keys[i])) + 1));
}

static json_t *gang_new(const json_t *obj, int64_t min_member, const char *phase)
{
    const char *av = str(obj, "apiVersion");
    return json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:i, s:s}", "kind",
                     str(obj, "kind") ? str(obj, "kind") : "", "apiVersion", av ? av : "", "name",
                     meta(obj, "name"), "minMember", (json_int_t)min_member, "created", 0, "gated",
                     0, "bound", 0, "running", 0, "phase", phase ? phase : "");
}

/* --- the wait reason: the extender's words parsed back for the numbers --- */

/* n (a new object, or NULL: a new one) with the backoff gang_fail appends to a failure's reason
 * ("...; backing off 2 s (failure 1)"): backoffSeconds, failure */
static json_t *backoff_numbers(const char *r, json_t *n)
{
    const char *p = strstr(r, "; backing off ");
    long long x;
    unsigned a;

    if (!n)
        n = json_object();
    if (n && p && sscanf(p, "; backing off %lld s (failure %u)", &x, &a) == 2) {
        json_object_set_new(n, "backoffSeconds", json_integer(x));
        json_object_set_new(n, "failure", json_integer(a));
    }
    return n;
}

/* the numbers of a DRA reason (gang/dra.c gdra_fail_why and gdra_gate, dra/alloc.c no_fit):
 * fit/need of the gang, the attribute its devices must agree on, the claim and request short,
 * its device count and DeviceClass, and the node tried with its matching and used devices */
static json_t *parse_dra(const char *r)
{
    json_t *n = json_object();
    const char *p;
    unsigned a, b;
    long long x, y, z;
    char w1[254], w2[254], w3[254], w4[254];

    if (!n)
        return NULL;
    if ((p = strstr(r, "only ")) &&
        sscanf(p, "only %u of the %u pods it needs fit at once with the devices", &a, &b) == 2) {
        json_object_set_new(n, "fit", json_integer(a));
        json_object_set_new(n, "need", json_integer(b));
    }
    if ((p = strstr(r, "devices agreeing on ")) &&
        sscanf(p, "devices agreeing on %253[^;, ]", w1) == 1)
        json_object_set_new(n, "matchAttribute", json_string(w1));
    else if ((p = strstr(r, "asks that its devices agree on ")) &&
             sscanf(p, "asks that its devices agree on %253[^;, ]", w1) == 1)
        json_object_set_new(n, "matchAttribute", json_string(w1));
    if ((p = strstr(r, "claim ")) &&
        sscanf(p,
               "claim %253[^:]: request \"%253[^\"]\" needs %lld device(s) of class \"%253[^\"]\"",
               w1, w2, &x, w3) == 4) {
        json_object_set_new(n, "claim", json_string(w1));
        json_object_set_new(n, "request", json_string(w2));
        json_object_set_new(n, "devices", json_integer(x));
        json_object_set_new(n, "deviceClass", json_string(w3));
    } else if (p &&
               sscanf(p,
                      "claim %253[^:]: request \"%253[^\"]\": node %253s has %lld free matching "
                      "device(s) of class \"%253[^\"]\"",
                      w1, w2, w4, &x, w3) == 5) {
        json_object_set_new(n, "claim", json_string(w1));
        json_object_set_new(n, "request", json_string(w2));
        json_object_set_new(n, "deviceClass", json_string(w3));
        json_object_set_new(n, "node", json_string(w4));
        json_object_set_new(n, "free", json_integer(x));
        json_object_set_new(n, "constraint", json_string("matchAttribute"));
    }
    if ((p = strstr(r, "; node ")) &&
        sscanf(p, "; node %253s has %lld matching, %lld of them in use", w1, &y, &z) == 3) {
        json_object_set_new(n, "node", json_string(w1));
        json_object_set_new(n, "matching", json_integer(y));
        json_object_set_new(n, "inUse", json_integer(z));
    } else if ((p = strstr(r, "the claims of pod ")) &&
               sscanf(p, "the claims of pod %253s need %lld device(s); node %253s has %lld", w2, &x,
                      w1, &y) == 4) {
        json_object_set_new(n, "devices", json_integer(x));
        json_object_set_new(n, "node", json_string(w1));
        json_object_set_new(n, "matching", json_integer(y));
    }
    return n;
}

/* the numbers of a reason (NULL: none recognized); sets *cause */
static json_t *parse_reason(const char *r, const char **cause)
{
    const char *p;
    unsigned a, b;
    long long x, y;
    char word[160], word2[160];

    if (strncmp(r, "released", 8) == 0) {
        *cause = "none";
        return NULL;
    }
    if ((p = strstr(r, "backing off for ")) && sscanf(p, "backing off for %lld ms", &x) == 1) {
        *cause = "backoff";
        if (sscanf(p, "backing off for %lld ms more after failure %u", &x, &a) == 2)
            return json_pack("{s:I, s:i}", "msLeft", (json_int_t)x, "failure", a);
        return json_pack("{s:I}", "msLeft", (json_int_t)x);
    }
    if ((p = strstr(r, " timed out after ")) &&
        sscanf(p, " timed out after %lld s: %u of minMember %u", &x, &a, &b) == 3) {
        *cause = "timeout";
        return backoff_numbers(r, json_pack("{s:I, s:i, s:i}", "afterSeconds", (json_int_t)x,
                                            "held", a, "minMember", b));
    }
    if (strstr(r, "ResourceClaim")) {
        *cause = "dra";
        return backoff_numbers(r, parse_dra(r));
    }
    if ((p = strstr(r, "required topology: no ")) &&
        sscanf(p, "required topology: no %159s domain has room for the %lld pods", word, &x) == 2) {
        json_t *n = json_pack("{s:s, s:I}", "level", word, "need", (json_int_t)x);
        const char *q = strstr(p, "; the largest, ");
        if (q && sscanf(q, "; the largest, %159[^,], has room for %lld", word2, &y) == 2) {
            json_object_set_new(n, "largest", json_string(word2));
            json_object_set_new(n, "largestRoom", json_integer(y));
        }
        *cause = "topology";
        return backoff_numbers(r, n);
    }
    if ((p = strstr(r, "only ")) &&
        sscanf(p, "only %u of the %u pods it needs fit at once", &a, &b) == 2) {
        json_t *n = json_pack("{s:i, s:i}", "fit", a, "need", b);
        const char *q = strstr(p, "; short of ");
        if (q && sscanf(q, "; short of %159[^ ;]", word) == 1)
            json_object_set_new(n, "shortOf", json_string(word));
        *cause = "quorum";
        return backoff_numbers(r, n);
    }
    if ((p = strstr(r, "waiting for pods: ")) &&
        sscanf(p, "waiting for pods: %u of minMember %u exist", &a, &b) == 2) {
        *cause = "members";
        return json_pack("{s:i, s:i}", "exist", a, "minMember", b);
    }
    if ((p = strstr(r, "waiting for ")) &&
        sscanf(p, "waiting for %u member pod(s) with scheduling gate %159s", &a, word) == 2) {
        *cause = "gated";
        return json_pack("{s:i, s:s}", "gated", a, "gate", word);
    }
    if ((p = strstr(r, "minResources needs ")) &&
        sscanf(p, "minResources needs %159s %159s", word, word2) == 2) {
        const char *q = strstr(p, "the cluster has ");
        char freeb[64] = "";
        size_t l = strlen(word2);
        json_t *n;
        if (l && word2[l - 1] == ',') /* "minResources needs cpu 3, the cluster has ..." */
            word2[l - 1] = '\0';
        n = json_pack("{s:s, s:s}", "resource", word, "need", word2);
        if (q && sscanf(q, "the cluster has %63s", freeb) == 1)
            json_object_set_new(n, "free", json_string(freeb));
        *cause = "minResources";
        return n;
    }
    if ((p = strstr(r, "; backing off ")) &&
        sscanf(p, "; backing off %lld s (failure %u)", &x, &a) == 2) {
        *cause = "backoff";
        return backoff_numbers(r, json_object());
    }
    *cause = "unknown";
    return NULL;
}

/* Kueue's flavor assigner: "insufficient unused quota for cpu in flavor default, 2 more needed" */
static json_t *parse_kueue(const char *m)
{
    const char *p = m ? strstr(m, "insufficient unused quota for ") : NULL;
    char res[160], flavor[160], more[64];

    if (p && sscanf(p, "insufficient unused quota for %159s in flavor %159[^,], %63s more needed",
                    res, flavor, more) == 3)
        return json_pack("{s:s, s:s, s:s}", "resource", res, "flavor", flavor, "moreNeeded", more);
    return NULL;
}

/* what the gang's backoff adds to an unblock line ("" when it backs off no more) */
static void backoff_text(const json_t *n, char *buf, size_t size)
{
    const char *until = str(n, "backoffUntil");
    const json_t *left = json_object_get(n, "backoffLeftSeconds");
    json_int_t failure = json_integer_value(json_object_get(n, "failure"));
    char fb[40] = "";

    buf[0] = '\0';
    if (failure)
        snprintf(fb, sizeof(fb), ", failure %" JSON_INTEGER_FORMAT, failure);
    if (until && json_is_integer(left) && json_integer_value(left) > 0)
        snprintf(buf, size, "; tries again in %" JSON_INTEGER_FORMAT " s (backoff until %s%s)",
                 json_integer_value(left), until, fb);
    else if (until && json_is_integer(left))
        snprintf(buf, size,
                 "; its backoff ended at %s (failure %" JSON_INTEGER_FORMAT
                 "): it tries again when a member is next scheduled",
                 until, failure);
    else if (until)
        snprintf(buf, size, "; backs off until %s%s", until, fb);
    else if (json_object_get(n, "backoffSeconds"))
        snprintf(buf, size, "; backs off %" JSON_INTEGER_FORMAT " s%s",
                 json_integer_value(json_object_get(n, "backoffSeconds")), fb);
}

/* the numbers of a Volcano or KAI PodGroup condition's message: KAI's "Resources were found for
 * 3 pods while 4 are required for gang scheduling" (fit, need); Volcano's "3/4 tasks in gang
 * unschedulable: pod group is not ready, 4 Pending, 4 minAvailable" (unschedulable, tasks,
 * minAvailable); NULL when neither */
static json_t *parse_podgroup_condition(const char *m)
{
    const char *p;
    unsigned a, b;

    if (m && (p = strstr(m, "Resources were found for ")) &&
        sscanf(p, "Resources were found for %u pods while %u are required", &a, &b) == 2)
        return json_pack("{s:i, s:i}", "fit", a, "need", b);
    if (m && sscanf(m, "%u/%u tasks in gang unschedulable", &a, &b) == 2) {
        json_t *n = json_pack("{s:i, s:i}", "unschedulable", a, "tasks", b);
        unsigned mm;
        if (n && (p = strstr(m, " Pending, ")) && sscanf(p, " Pending, %u minAvailable", &mm) == 1)
            json_object_set_new(n, "minAvailable", json_integer(mm));
        return n;
    }
    return NULL;
}

static const char *unblock_text(const char *cause, const json_t *n, char *buf, size_t size)
{
#define I(k) ((long long)json_integer_value(json_object_get(n, k)))
#define S(k) str(n, k)
#define HAS(k) (json_object_get(n, k) != NULL)
    char bo[300];
    size_t l;

    if (!n)
        return NULL;
    backoff_text(n, bo, sizeof(bo));
    buf[0] = '\0';
    if (streq(cause, "quorum") || (streq(cause, "podGroupCondition") && HAS("need")))
        /* the extender's quorum, or KAI's found/required on a node pool */
        snprintf(buf, size, "needs room for %lld more pod(s) at once: %lld of the %lld fit%s%s",
                 I("need") - I("fit"), I("fit"), I("need"),
                 S("shortOf")    ? "; short of "
                 : S("nodePool") ? " in node pool "
                                 : "",
                 S("shortOf")    ? S("shortOf")
                 : S("nodePool") ? S("nodePool")
                                 : "");
    else if (streq(cause, "topology") && S("largest"))
        snprintf(buf, size,
                 "needs room for %lld pods in one %s domain; the largest, %s, has room for %lld "
                 "of %lld (%lld short)",
                 I("need"), S("level"), S("largest"), I("largestRoom"), I("need"),
                 I("need") - I("largestRoom"));
    else if (streq(cause, "topology"))
        snprintf(buf, size, "needs room for %lld pods in one %s domain", I("need"), S("level"));
    else if (streq(cause, "dra")) {
        if (HAS("need"))
            snprintf(buf, size, "needs devices for %lld more pod(s) at once: %lld of the %lld fit",
                     I("need") - I("fit"), I("fit"), I("need"));
        else
            snprintf(buf, size, "needs its ResourceClaims satisfied");
        l = strlen(buf);
        if (S("matchAttribute"))
            snprintf(buf + l, size - l, ", with devices agreeing on %s", S("matchAttribute"));
        l = strlen(buf);
        if (S("claim") && HAS("devices"))
            snprintf(buf + l, size - l,
                     "; claim %s request \"%s\" needs %lld device(s) of class %s", S("claim"),
                     S("request"), I("devices"), S("deviceClass"));
        else if (S("claim") && S("constraint"))
            snprintf(buf + l, size - l,
                     "; claim %s request \"%s\": no choice of class %s meets its %s constraint",
                     S("claim"), S("request"), S("deviceClass"), S("constraint"));
        else if (HAS("devices"))
            snprintf(buf + l, size - l, "; a pod's claims need %lld device(s)", I("devices"));
        l = strlen(buf);
        if (S("node") && HAS("inUse"))
            snprintf(buf + l, size - l, "; node %s has %lld matching, %lld in use (%lld free)",
                     S("node"), I("matching"), I("inUse"), I("matching") - I("inUse"));
        else if (S("node") && HAS("matching"))
            snprintf(buf + l, size - l, "; node %s has %lld", S("node"), I("matching"));
        else if (S("node") && HAS("free"))
            snprintf(buf + l, size - l, "; node %s has %lld free", S("node"), I("free"));
        {
            size_t k;
            const json_t *cl;
            json_array_foreach(json_object_get(n, "claims"), k, cl)
            {
                l = strlen(buf);
                snprintf(buf + l, size - l,
                         "; request \"%s\" of class %s: %" JSON_INTEGER_FORMAT
                         " device(s) per claim, %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
                         " claims allocated",
                         str(cl, "request"), str(cl, "deviceClass"),
                         json_integer_value(json_object_get(cl, "devices")),
                         json_integer_value(json_object_get(cl, "allocated")),
                         json_integer_value(json_object_get(cl, "claims")));
            }
        }
    } else if (streq(cause, "members"))
        snprintf(buf, size, "needs %lld more member pod(s) created: %lld of minMember %lld exist",
                 I("minMember") - I("exist"), I("exist"), I("minMember"));
    else if (streq(cause, "gated"))
        snprintf(buf, size, "needs %lld pod(s) ungated (scheduling gate %s)", I("gated"),
                 S("gate"));
    else if (streq(cause, "minResources"))
        snprintf(buf, size, "needs %s %s free at once; the cluster has %s", S("need"),
                 S("resource"), S("free") ? S("free") : "less");
    else if (streq(cause, "backoff") && HAS("msLeft"))
        snprintf(buf, size, "tries again in %lld ms (backoff after failure %lld)", I("msLeft"),
                 I("failure"));
    else if (streq(cause, "backoff") && *bo)
        snprintf(buf, size, "%s", bo + 2);
    else if (streq(cause, "timeout"))
        snprintf(buf, size, "timed out after %lld s with %lld of minMember %lld held",
                 I("afterSeconds"), I("held"), I("minMember"));
    else if (streq(cause, "podGroupCondition") && HAS("tasks"))
        snprintf(buf, size,
                 "needs minAvailable %lld of its %lld task(s) placeable at once; Volcano finds "
                 "%lld unschedulable",
                 HAS("minAvailable") ? I("minAvailable") : I("tasks"), I("tasks"),
                 I("unschedulable"));
    else if (streq(cause, "slurm"))
        snprintf(buf, size, "Slurm job %lld starts once Slurm's pending reason %s clears",
                 I("jobId"), S("slurmReason"));
    else if (streq(cause, "quota"))
        snprintf(buf, size,
                 "needs %s more %s of unused quota in flavor %s (the ClusterQueue's "
                 "nominal quota or borrowing)",
                 S("moreNeeded"), S("resource"), S("flavor"));
    else
        return NULL;
    if (!streq(cause, "backoff") && *bo) {
        l = strlen(buf);
        snprintf(buf + l, size - l, "%s", bo);
    }
    return buf;
#undef I
#undef S
#undef HAS
}

/* --- Events --- */

static int64_t event_time(const json_t *ev)
{
    const char *t = str(json_object_get(ev, "series"), "lastObservedTime");
    int64_t us = 0;

    if (!t)
        t = str(ev, "eventTime");
    if (!t)
        t = str(ev, "deprecatedLastTimestamp");
    if (!t)
        t = meta(ev, "creationTimestamp");
    if (!t || common_leader_parse_microtime(t, &us) != 0)
        return 0;
    return us;
}

struct ev_ref {
    const json_t *ev;
    int64_t t;
};

static int by_time(const void *a, const void *b)
{
    const struct ev_ref *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return strcmp(meta(x->ev, "name") ? meta(x->ev, "name") : "",
                  meta(y->ev, "name") ? meta(y->ev, "name") : "");
}

/* 1 when the Event is about one of the objects of the story (kind + name; uid when both have) */
static int event_ours(const json_t *ev, const json_t *objs)
{
    const json_t *reg = json_object_get(ev, "regarding");
    size_t i;
    const json_t *o;

    json_array_foreach(objs, i, o)
    {
        if (!streq(str(reg, "kind"), str(o, "kind")) || !streq(str(reg, "name"), meta(o, "name")))
            continue;
        if (str(reg, "uid") && meta(o, "uid") && !streq(str(reg, "uid"), meta(o, "uid")))
            continue;
        return 1;
    }
    return 0;
}

static void time_text(int64_t us, char *buf, size_t size)
{
    char full[40];
    if (us <= 0 || common_leader_format_microtime(us, full, sizeof(full)) != 0) {
        snprintf(buf, size, "-");
        return;
    }
    /* to the second: "2006-01-02T15:04:05Z" */
    snprintf(buf, size, "%.19sZ", full);
}

/* --- the story --- */

struct ctx {
    const json_t *tj;
    const char *ns, *name, *uid;
    json_t *mine;  /* borrowed objects of the story, for Event matching (new array) */
    json_t *gangs; /* story gangs */
    json_t *gang_objs;
    json_t *objects;
    json_t *notes;
};

static void add_object(struct ctx *c, const json_t *obj, const char *state)
{
    json_array_append(c->mine, (json_t *)obj);
    json_array_append_new(c->objects,
                          json_pack("{s:s, s:s, s:s, s:s}", "kind",
                                    str(obj, "kind") ? str(obj, "kind") : "", "apiVersion",
                                    str(obj, "apiVersion") ? str(obj, "apiVersion") : "", "name",
                                    meta(obj, "name"), "state", state));
}

static const char *podgroup_state(const json_t *pg)
{
    const char *ph = str(json_object_get(pg, "status"), "phase");
    return ph && *ph ? ph : "no status yet";
}

static void collect_gangs(struct ctx *c, const json_t *snap)
{
    size_t i;
    const json_t *o;

    json_array_foreach(json_object_get(snap, "podGroups"), i, o)
    {
        const json_t *spec = json_object_get(o, "spec");
        json_int_t mm;
        if (!meta(o, "name") || !owned_by(o, "TrainJob", c->name, c->uid))
            continue;
        mm = json_integer_value(json_object_get(spec, "minMember"));
        if (!mm) /* native scheduling.k8s.io: spec.schedulingPolicy.gang.minCount */
            mm = json_integer_value(json_object_get(
                json_object_get(json_object_get(spec, "schedulingPolicy"), "gang"), "minCount"));
        add_object(c, o, podgroup_state(o));
        json_array_append(c->gang_objs, (json_t *)o);
        json_array_append_new(c->gangs,
                              gang_new(o, mm, str(json_object_get(o, "status"), "phase")));
    }
    json_array_foreach(json_object_get(snap, "workloads"), i, o)
    {
        json_int_t total = 0;
        size_t k;
        const json_t *ps;
        const char *state = "Pending";
        if (!meta(o, "name") || !owned_by(o, "TrainJob", c->name, c->uid))
            continue;
        json_array_foreach(json_object_get(json_object_get(o, "spec"), "podSets"), k, ps) total +=
            json_integer_value(json_object_get(ps, "count"));
        if (cond_true(o, "Finished", NULL))
            state = "Finished";
        else if (cond_true(o, "Admitted", NULL))
            state = "Admitted";
        else if (cond_true(o, "QuotaReserved", NULL))
            state = "QuotaReserved";
        add_object(c, o, state);
        json_array_append(c->gang_objs, (json_t *)o);
        json_array_append_new(c->gangs, gang_new(o, total, state));
    }
}

static void count_members(struct ctx *c, const json_t *snap)
{
    size_t i, k;
    const json_t *p;
    json_t *g;
    size_t ng = json_array_size(c->gangs);

    json_array_foreach(json_object_get(snap, "pods"), i, p)
    {
        const char *gname = pod_gang(p);
        json_array_append(c->mine, (json_t *)p);
        json_array_foreach(c->gangs, k, g)
        {
            /* a pod without a gang mark counts for the TrainJob's one gang object, or for its
             * Kueue Workload (Kueue marks no pod with its Workload) */
            int kueue = strncmp(str(g, "apiVersion"), "kueue.x-k8s.io/", 15) == 0;
            if (streq(gname, str(g, "name")) || (!gname && (ng == 1 || kueue))) {
                count_pod(g, p);
                break;
            }
        }
    }
}

/* the wait of a PodGroup from the extender's verdict annotation (gang/gang.h
 * GANG_VERDICT_ANNOTATION); NULL when it has none, or one explain cannot read (a note says so) */
static json_t *verdict_wait(const json_t *gobj, int64_t now_us, json_t *notes)
{
    const char *text = str(json_object_get(json_object_get(gobj, "metadata"), "annotations"),
                           GANG_VERDICT_ANNOTATION);
    const char *msg, *cause, *until, *since;
    json_t *v, *n, *w;
    int64_t u = 0;
    char from[700], note[600];

    if (!text)
        return NULL;
    v = json_loads(text, 0, NULL);
    msg = str(v, "message");
    if (!msg) {
        snprintf(note, sizeof(note),
                 "PodGroup %s: annotation %s is no JSON object with a message; the Events "
                 "stand in",
                 meta(gobj, "name"), GANG_VERDICT_ANNOTATION);
        json_array_append_new(notes, json_string(note));
        json_decref(v);
        return NULL;
    }
    n = parse_reason(msg, &cause);
    until = str(v, "backoffUntil");
    if (until && !streq(cause, "none")) {
        if (!n)
            n = json_object();
        json_object_set_new(n, "backoffUntil", json_string(until));
        if (now_us > 0 && common_leader_parse_microtime(until, &u) == 0)
            json_object_set_new(n, "backoffLeftSeconds",
                                json_integer(u > now_us ? (u - now_us + 999999) / 1000000 : 0));
        if (streq(cause, "unknown"))
            cause = "backoff";
    }
    since = str(v, "since");
    snprintf(from, sizeof(from), "PodGroup %s annotation %s%s%s%s", meta(gobj, "name"),
             GANG_VERDICT_ANNOTATION, since ? " (since " : "", since ? since : "",
             since ? ")" : "");
    w = json_pack("{s:s, s:s, s:s, s:o}", "cause", cause, "reason", msg, "from", from, "numbers",
                  n ? n : json_object());
    json_decref(v);
    return w;
}

/* the wait of one gang: the extender's verdict annotation, else its last
 * GangWaiting/GangReleased Event (coscheduling), its Workload's conditions (Kueue), its
 * PodGroup's conditions (others) */
static json_t *gang_wait(const json_t *gobj, const json_t *evs, const char *tj_name, int64_t now_us,
                         json_t *notes)
{
    const char *kind = str(gobj, "kind"), *name = meta(gobj, "name");
    const char *av = str(gobj, "apiVersion") ? str(gobj, "apiVersion") : "";
    size_t i;
    const json_t *ev, *best = NULL, *c;
    json_t *w;
    int64_t best_t = 0;
    int best_on_pg = 0;
    char from[600];

    if (strncmp(av, "kueue.x-k8s.io/", 15) == 0) {
        const char *cause = "quota";
        json_t *n;
        if (cond_true(gobj, "Admitted", &c)) {
            snprintf(from, sizeof(from), "Workload %s condition Admitted", name);
            return json_pack("{s:s, s:s, s:s, s:o}", "cause", "none", "reason",
                             str(c, "message") ? str(c, "message") : "admitted", "from", from,
                             "numbers", json_object());
        }
        if (!cond_true(gobj, "QuotaReserved", &c) && c) {
            snprintf(from, sizeof(from), "Workload %s condition QuotaReserved=%s (%s)", name,
                     str(c, "status") ? str(c, "status") : "",
                     str(c, "reason") ? str(c, "reason") : "");
        } else if (c) {
            cond_true(gobj, "Admitted", &c);
            snprintf(from, sizeof(from), "Workload %s condition Admitted", name);
            cause = "admissionChecks";
        } else {
            snprintf(from, sizeof(from), "Workload %s has no QuotaReserved condition yet", name);
            return json_pack("{s:s, s:s, s:s, s:o}", "cause", "quota", "reason",
                             "not yet looked at by Kueue (no QuotaReserved condition)", "from",
                             from, "numbers", json_object());
        }
        n = parse_kueue(str(c, "message"));
        return json_pack("{s:s, s:s, s:s, s:o}", "cause", cause, "reason",
                         str(c, "message") ? str(c, "message") : "", "from", from, "numbers",
                         n ? n : json_object());
    }
    if ((w = verdict_wait(gobj, now_us, notes)))
        return w;
    /* the extender's Events: on the PodGroup, or on the TrainJob prefixed "PodGroup NAME: " */
    json_array_foreach(evs, i, ev)
    {
        const json_t *reg = json_object_get(ev, "regarding");
        const char *reason = str(ev, "reason"), *note = str(ev, "note");
        int64_t t;
        int on_pg;
        if (!streq(reason, "GangWaiting") && !streq(reason, "GangReleased"))
            continue;
        if (!(streq(str(reg, "kind"), kind) && streq(str(reg, "name"), name)) &&
            !(streq(str(reg, "kind"), "TrainJob") && streq(str(reg, "name"), tj_name) && note &&
              strncmp(note, "PodGroup ", 9) == 0 && strncmp(note + 9, name, strlen(name)) == 0 &&
              note[9 + strlen(name)] == ':'))
            continue;
        t = event_time(ev);
        on_pg = streq(str(reg, "kind"), kind);
        /* the PodGroup's own Events first: the TrainJob's copies are written right after
         * them, and stand in only when none on the PodGroup is there */
        if (!best || on_pg > best_on_pg || (on_pg == best_on_pg && t > best_t)) {
            best = ev;
            best_t = t;
            best_on_pg = on_pg;
        }
    }
    if (best) {
        const char *note = str(best, "note") ? str(best, "note") : "";
        const char *cause;
        char tb[40];
        json_t *n;
        if (strncmp(note, "PodGroup ", 9) == 0 && strchr(note, ':'))
            note = strchr(note, ':') + 2;
        n = parse_reason(note, &cause);
        time_text(best_t, tb, sizeof(tb));
        snprintf(from, sizeof(from), "Event %s on %s %s at %s", str(best, "reason"),
                 str(json_object_get(best, "regarding"), "kind"),
                 str(json_object_get(best, "regarding"), "name"), tb);
        return json_pack("{s:s, s:s, s:s, s:o}", "cause", cause, "reason", note, "from", from,
                         "numbers", n ? n : json_object());
    }
    /* Volcano / KAI / native PodGroups: their scheduler's conditions (KAI writes its verdict in
     * status.schedulingConditions, per node pool) */
    for (int list = 0; list < 2; list++) {
        const char *key = list ? "schedulingConditions" : "conditions";
        json_array_foreach(json_object_get(json_object_get(gobj, "status"), key), i, c)
        {
            const char *type = str(c, "type");
            json_t *n;
            if ((str(c, "status") && !streq(str(c, "status"), "True")) ||
                (!list && !str(c, "status")) ||
                !(streq(type, "Unschedulable") || streq(type, "UnschedulableOnNodePool")))
                continue;
            snprintf(from, sizeof(from), "%s %s %s %s%s%s (%s)", kind, name,
                     list ? "schedulingCondition" : "condition", type,
                     str(c, "nodePool") ? " on node pool " : "",
                     str(c, "nodePool") ? str(c, "nodePool") : "",
                     str(c, "reason") ? str(c, "reason") : "");
            n = parse_podgroup_condition(str(c, "message"));
            if (n && str(c, "nodePool"))
                json_object_set_new(n, "nodePool", json_string(str(c, "nodePool")));
            return json_pack("{s:s, s:s, s:s, s:o}", "cause", "podGroupCondition", "reason",
                             str(c, "message") ? str(c, "message") : "", "from", from, "numbers",
                             n ? n : json_object());
        }
    }
    return NULL;
}

/* the Slurm backend's wait: the TrainJob condition SlurmJob (integrations/slurm.h) while its
 * reason is SlurmJobPending ("Slurm job 12 is pending (PENDING): Resources"); NULL otherwise */
static json_t *slurm_wait(const json_t *tj)
{
    const json_t *c = NULL;
    const char *msg;
    long long id;
    char state[64], why[200];
    json_t *n;

    cond_true(tj, "SlurmJob", &c);
    if (!c || !streq(str(c, "reason"), "SlurmJobPending"))
        return NULL;
    msg = str(c, "message") ? str(c, "message") : "";
    n = json_object();
    if (n && sscanf(msg, "Slurm job %lld is pending (%63[^)]): %199[^\n]", &id, state, why) == 3) {
        json_object_set_new(n, "jobId", json_integer(id));
        json_object_set_new(n, "state", json_string(state));
        json_object_set_new(n, "slurmReason", json_string(why));
    }
    return json_pack("{s:s, s:s, s:s, s:o}", "cause", "slurm", "reason", msg, "from",
                     "TrainJob condition SlurmJob (SlurmJobPending)", "numbers",
                     n ? n : json_object());
}

/* 1 when claim belongs to one of pods: an ownerReference to the pod (a claim made from its
 * ResourceClaimTemplate), or named by the pod's spec.resourceClaims or
 * status.resourceClaimStatuses */
static int claim_of_pods(const json_t *claim, const json_t *pods)
{
    const char *name = meta(claim, "name");
    size_t i, k;
    const json_t *p, *r;

    json_array_foreach(pods, i, p)
    {
        json_array_foreach(json_object_get(json_object_get(claim, "metadata"), "ownerReferences"),
                           k, r) if (streq(str(r, "kind"), "Pod") &&
                                     streq(str(r, "name"), meta(p, "name"))) return 1;
        json_array_foreach(json_object_get(json_object_get(p, "spec"), "resourceClaims"), k,
                           r) if (streq(str(r, "resourceClaimName"), name)) return 1;
        json_array_foreach(json_object_get(json_object_get(p, "status"), "resourceClaimStatuses"),
                           k, r) if (streq(str(r, "resourceClaimName"), name)) return 1;
    }
    return 0;
}

/* the device requests of the TrainJob's pods' ResourceClaims (snapshot resourceClaims,
 * resource.k8s.io/v1), per request name and DeviceClass: [{request, deviceClass, devices (per
 * claim, ExactCount; the most seen), claims, allocated}]; a request of firstAvailable choices
 * counts by its first. NULL when none. */
static json_t *claims_part(const json_t *snap)
{
    json_t *out = json_array();
    size_t i, k, j;
    const json_t *c, *rq, *e;

    json_array_foreach(json_object_get(snap, "resourceClaims"), i, c)
    {
        int alloc = json_is_object(json_object_get(json_object_get(c, "status"), "allocation"));
        if (!claim_of_pods(c, json_object_get(snap, "pods")))
            continue;
        json_array_foreach(
            json_object_get(json_object_get(json_object_get(c, "spec"), "devices"), "requests"), k,
            rq)
        {
            const json_t *x = json_object_get(rq, "exactly");
            const char *cls;
            json_int_t count;
            json_t *row = NULL;
            if (!x)
                x = json_array_get(json_object_get(rq, "firstAvailable"), 0);
            cls = str(x, "deviceClassName");
            if (!cls || !str(rq, "name"))
                continue;
            count = json_is_integer(json_object_get(x, "count"))
                        ? json_integer_value(json_object_get(x, "count"))
                        : 1;
            json_array_foreach(out, j, e) if (streq(str(e, "request"), str(rq, "name")) &&
                                              streq(str(e, "deviceClass"), cls))
            {
                row = (json_t *)e;
                break;
            }
            if (!row) {
                row = json_pack("{s:s, s:s, s:I, s:i, s:i}", "request", str(rq, "name"),
                                "deviceClass", cls, "devices", (json_int_t)0, "claims", 0,
                                "allocated", 0);
                if (!row || json_array_append_new(out, row) != 0)
                    continue;
            }
            if (count > json_integer_value(json_object_get(row, "devices")))
                json_object_set_new(row, "devices", json_integer(count));
            json_object_set_new(
                row, "claims",
                json_integer(json_integer_value(json_object_get(row, "claims")) + 1));
            json_object_set_new(
                row, "allocated",
                json_integer(json_integer_value(json_object_get(row, "allocated")) + alloc));
        }
    }
    if (!json_array_size(out)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

enum common_rc explain_story(const json_t *snap, json_t **out, struct common_error *err)
{
    struct ctx c = {0};
    const json_t *tj = json_object_get(snap, "trainJob"), *o, *runtime, *slurm_cond = NULL;
    json_t *story = NULL, *evs = NULL, *wait = json_null(), *unblock = json_null();
    struct ev_ref *refs = NULL;
    size_t i, n = 0;
    enum common_rc rc = COMMON_OK;
    int64_t now_us = 0;
    char ub[900];

    *out = NULL;
    if (!json_is_object(snap))
        return common_error_set(err, COMMON_EINVAL, "snapshot: Invalid value: not an object");
    if (!json_is_object(tj) || !meta(tj, "name"))
        return common_error_set(err, COMMON_EINVAL,
                                "snapshot.trainJob.metadata.name: Required value");
    if (str(snap, "now") && common_leader_parse_microtime(str(snap, "now"), &now_us) != 0)
        return common_error_set(err, COMMON_EINVAL,
                                "snapshot.now: Invalid value: \"%s\": not an RFC 3339 time",
                                str(snap, "now"));
    c.tj = tj;
    c.name = meta(tj, "name");
    c.ns = meta(tj, "namespace") ? meta(tj, "namespace") : "";
    c.uid = meta(tj, "uid");
    c.mine = json_array();
    c.gangs = json_array();
    c.gang_objs = json_array();
    c.objects = json_array();
    c.notes = json_array();
    evs = json_array();
    if (!c.mine || !c.gangs || !c.gang_objs || !c.objects || !c.notes || !evs) {
        rc = common_error_set(err, COMMON_ENOMEM, "explain: out of memory");
        goto out;
    }
    json_array_append(c.mine, (json_t *)tj);
    json_array_foreach(json_object_get(snap, "notes"), i, o) if (json_is_string(o))
        json_array_append(c.notes, (json_t *)o);

    json_array_foreach(json_object_get(snap, "jobSets"), i,
                       o) if (meta(o, "name") && owned_by(o, "TrainJob", c.name, c.uid))
        add_object(&c, o, jobset_state(o));
    {
        /* the Slurm backend's job, named by its TrainJob condition (integrations/slurm.h) */
        const json_t *sc = NULL;
        long long id;
        char idb[32];
        cond_true(tj, "SlurmJob", &sc);
        if (sc && str(sc, "message") && sscanf(str(sc, "message"), "Slurm job %lld", &id) == 1) {
            snprintf(idb, sizeof(idb), "%lld", id);
            json_array_append_new(c.objects,
                                  json_pack("{s:s, s:s, s:s, s:s}", "kind", "SlurmJob",
                                            "apiVersion", "slurmrestd", "name", idb, "state",
                                            str(sc, "reason") ? str(sc, "reason") : ""));
        }
    }
    if (!json_array_size(c.objects))
        json_array_append_new(c.notes, json_string("no JobSet of the TrainJob yet"));
    collect_gangs(&c, snap);
    count_members(&c, snap);
    cond_true(tj, "SlurmJob", &slurm_cond);
    if (!json_array_size(c.gangs) && !slurm_cond) /* the Slurm backend makes no gang object */
        json_array_append_new(
            c.notes,
            json_string("no gang object (PodGroup or Kueue Workload) of the TrainJob yet"));
    if (json_array_size(c.gangs) && !json_array_size(json_object_get(snap, "pods")))
        json_array_append_new(c.notes, json_string("no pods of the TrainJob yet"));

    /* the last Events about the objects of the story, oldest first */
    n = json_array_size(json_object_get(snap, "events"));
    refs = n ? calloc(n, sizeof(*refs)) : NULL;
    if (n && !refs) {
        rc = common_error_set(err, COMMON_ENOMEM, "explain: out of memory");
        goto out;
    }
    {
        size_t k = 0;
        json_array_foreach(json_object_get(snap, "events"), i, o) if (event_ours(o, c.mine))
        {
            refs[k].ev = o;
            refs[k].t = event_time(o);
            k++;
        }
        n = k;
    }
    if (n)
        qsort(refs, n, sizeof(*refs), by_time);
    for (i = n > EXPLAIN_MAX_EVENTS ? n - EXPLAIN_MAX_EVENTS : 0; i < n; i++) {
        const json_t *ev = refs[i].ev, *reg = json_object_get(ev, "regarding");
        const json_t *series = json_object_get(ev, "series");
        char tb[40], rb[400];
        time_text(refs[i].t, tb, sizeof(tb));
        snprintf(rb, sizeof(rb), "%s/%s", str(reg, "kind") ? str(reg, "kind") : "",
                 str(reg, "name") ? str(reg, "name") : "");
        json_array_append_new(
            evs,
            json_pack(
                "{s:s, s:s, s:s, s:s, s:s, s:I}", "time", tb, "type",
                str(ev, "type") ? str(ev, "type") : "", "reason",
                str(ev, "reason") ? str(ev, "reason") : "", "regarding", rb, "note",
                str(ev, "note") ? str(ev, "note") : "", "count",
                (json_int_t)(series ? json_integer_value(json_object_get(series, "count")) : 1)));
    }

    /* the wait: the first gang that waits, else the first that is released/admitted */
    {
        json_t *any = NULL;
        json_array_foreach(c.gang_objs, i, o)
        {
            json_t *w = gang_wait(o, json_object_get(snap, "events"), c.name, now_us, c.notes);
            if (!w)
                continue;
            json_object_set_new(w, "gang", json_string(meta(o, "name")));
            if (!streq(str(w, "cause"), "none")) {
                json_decref(any);
                any = w;
                break;
            }
            if (!any)
                any = w;
            else
                json_decref(w);
        }
        if (!any && (any = slurm_wait(tj)))
            json_object_set_new(any, "gang", json_null());
        if (any && streq(str(any, "cause"), "dra")) {
            json_t *cl = claims_part(snap);
            if (cl)
                json_object_set_new(json_object_get(any, "numbers"), "claims", cl);
        }
        if (any) {
            const char *u =
                unblock_text(str(any, "cause"), json_object_get(any, "numbers"), ub, sizeof(ub));
            json_decref(wait);
            wait = any;
            if (u && json_object_size(json_object_get(any, "numbers"))) {
                json_decref(unblock);
                unblock = json_string(u);
            }
        }
    }

    runtime = json_object_get(snap, "runtime");
    {
        const json_t *ref = json_object_get(json_object_get(tj, "spec"), "runtimeRef");
        const char *rk = str(ref, "kind") ? str(ref, "kind") : "ClusterTrainingRuntime";
        story = json_pack("{s:o, s:{s:s, s:s?, s:b}, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                          "trainJob", trainjob_part(tj), "runtime", "kind", rk, "name",
                          str(ref, "name"), "found", json_is_object(runtime), "backend",
                          backend_part(json_is_object(runtime) ? runtime : NULL, c.gang_objs),
                          "objects", json_incref(c.objects), "gangs", json_incref(c.gangs), "wait",
                          wait, "unblock", unblock, "events", json_incref(evs), "notes",
                          json_incref(c.notes));
        wait = unblock = NULL;
    }
    if (!story)
        rc = common_error_set(err, COMMON_ENOMEM, "explain: out of memory");
    *out = story;
out:
    free(refs);
    json_decref(wait);
    json_decref(unblock);
    json_decref(evs);
    json_decref(c.mine);
    json_decref(c.gangs);
    json_decref(c.gang_objs);
    json_decref(c.objects);
    json_decref(c.notes);
    return rc;
}

/* --- text --- */

int explain_text(const json_t *s, FILE *f)
{
    const json_t *tj = json_object_get(s, "trainJob"), *rt = json_object_get(s, "runtime");
    const json_t *be = json_object_get(s, "backend"), *w = json_object_get(s, "wait"), *o;
    size_t i;

    fprintf(f, "TrainJob %s/%s: %s\n", str(tj, "namespace"), str(tj, "name"), str(tj, "state"));
    json_array_foreach(json_object_get(tj, "conditions"), i, o)
    {
        fprintf(f, "  %s=%s", str(o, "type"), str(o, "status"));
        if (str(o, "reason") && *str(o, "reason"))
            fprintf(f, " (%s)", str(o, "reason"));
        if (str(o, "message") && *str(o, "message"))
            fprintf(f, ": %s", str(o, "message"));
        fputc('\n', f);
    }
    fprintf(f, "Runtime: %s %s%s\n", str(rt, "kind"), str(rt, "name") ? str(rt, "name") : "?",
            json_is_true(json_object_get(rt, "found")) ? "" : " (not found)");
    fprintf(f, "Backend: %s, because %s\n", str(be, "name") ? str(be, "name") : "unknown",
            str(be, "why"));
    fputs("Objects:\n", f);
    if (!json_array_size(json_object_get(s, "objects")))
        fputs("  none yet\n", f);
    json_array_foreach(json_object_get(s, "objects"), i, o)
        fprintf(f, "  %s %s (%s): %s\n", str(o, "kind"), str(o, "name"), str(o, "apiVersion"),
                str(o, "state"));
    json_array_foreach(json_object_get(s, "gangs"), i, o)
    {
        fprintf(f,
                "Gang %s %s: minMember %" JSON_INTEGER_FORMAT ": %" JSON_INTEGER_FORMAT
                " created, %" JSON_INTEGER_FORMAT " gated, %" JSON_INTEGER_FORMAT
                " bound, %" JSON_INTEGER_FORMAT " running\n",
                str(o, "kind"), str(o, "name"), json_integer_value(json_object_get(o, "minMember")),
                json_integer_value(json_object_get(o, "created")),
                json_integer_value(json_object_get(o, "gated")),
                json_integer_value(json_object_get(o, "bound")),
                json_integer_value(json_object_get(o, "running")));
    }
    if (json_is_object(w)) {
        if (streq(str(w, "cause"), "none"))
            fprintf(f, "Not waiting: %s\n", str(w, "reason"));
        else
            fprintf(f, "Waiting (%s): %s\n", str(w, "cause"), str(w, "reason"));
        fprintf(f, "  from %s\n", str(w, "from"));
    } else {
        fputs("Waiting: no wait reason written yet\n", f);
    }
    if (str(s, "unblock"))
        fprintf(f, "Would unblock: %s\n", str(s, "unblock"));
    fputs("Events:\n", f);
    if (!json_array_size(json_object_get(s, "events")))
        fputs("  none\n", f);
    json_array_foreach(json_object_get(s, "events"), i, o)
    {
        json_int_t n = json_integer_value(json_object_get(o, "count"));
        fprintf(f, "  %s %s %s %s: %s", str(o, "time"), str(o, "type"), str(o, "reason"),
                str(o, "regarding"), str(o, "note"));
        if (n > 1)
            fprintf(f, " (x%" JSON_INTEGER_FORMAT ")", n);
        fputc('\n', f);
    }
    json_array_foreach(json_object_get(s, "notes"), i, o)
        fprintf(f, "Note: %s\n", json_string_value(o));
    return ferror(f) ? -1 : 0;
}
