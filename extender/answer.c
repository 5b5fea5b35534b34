/*
 * extender/answer.c - gang verdicts to the filter answer (see answer.h for the reasons).
 */
#include "extender/answer.h"

#include "extender/codec.h"

enum common_rc extender_filter_answer(struct common_arena *a, const struct gang_node_verdict *gv,
                                      size_t n, const struct gang_filter_result *res,
                                      uint8_t *verdict, const char **reason, const char **error_out)
{
    const char *last_in = NULL, *last_out = NULL;
    int explained = 0; /* some node passes or failed: unresolvable ones can go unnamed */

    *error_out = NULL;
    if (res->retry) {
        *error_out =
            common_arena_strdup(a, res->reason && res->reason[0] ? res->reason : "the gang waits");
        return *error_out ? COMMON_OK : COMMON_ENOMEM;
    }
    for (size_t i = 0; i < n && !explained; i++)
        explained = gv[i].verdict != GANG_NODE_UNRESOLVABLE;
    for (size_t i = 0; i < n; i++) {
        const char *r = NULL;

        switch (gv[i].verdict) {
        case GANG_NODE_OK:
            verdict[i] = EXTENDER_PASS;
            break;
        case GANG_NODE_FAILED:
            verdict[i] = EXTENDER_FAIL;
            r = gv[i].reason;
            break;
        default:
            verdict[i] = explained ? EXTENDER_DROP : EXTENDER_FAIL_UNRESOLVABLE;
            r = explained ? NULL : gv[i].reason;
            break;
        }
        /* the books' reasons go with the next call: copy them, once per run of one string */
        if (r && r != last_in) {
            last_in = r;
            last_out = common_arena_strdup(a, r);
            if (!last_out)
                return COMMON_ENOMEM;
        }
        reason[i] = r ? last_out : NULL;
    }
    return COMMON_OK;
}
