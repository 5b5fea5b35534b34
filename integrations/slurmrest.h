/*
 * integrations/slurmrest.h - the slurmrestd client of the Slurm backend (libcurl).
 *
 * One struct slurmrest talks to one slurmrestd over HTTP(S) with JWT authentication: every
 * request carries X-SLURM-USER-NAME and X-SLURM-USER-TOKEN. The token comes from a literal
 * string, from a token file (re-read when it changes, as `scontrol token` output "SLURM_JWT=..."
 * or the bare token), or is minted here: HS256 over Slurm's jwt_key file (OpenSSL HMAC) with the
 * claims {"exp", "iat", "sun": <user>}, renewed when half its lifespan has passed. The OpenAPI
 * version is the newest one this client knows (v0.0.38 .. v0.0.44) among the paths the server's
 * /openapi document lists, unless the options fix it. Reads and cancels are retried on transport
 * failures with exponential backoff (0.2 s doubling, at most 5 s, within the call's deadline); a
 * submit only when the connection could not be made, so a job is never submitted twice by a
 * retry. Each call is timed and counted into the optional metrics registry:
 * trainsched_slurmrest_request_seconds{verb} (histogram) and
 * trainsched_slurmrest_errors_total{verb,code} (counter, code = HTTP status or "transport").
 * Thread-safe: calls are serialised on one lock (slurmrestd serves one request at a time per
 * connection anyway). Source: Slurm's slurmrestd and rest_auth/jwt documentation (rest.html,
 * jwt.html) and the v0.0.38 OpenAPI plugin.
 */
#ifndef INTEGRATIONS_SLURMREST_H
#define INTEGRATIONS_SLURMREST_H

#include <jansson.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/error.h"
#include "common/metrics.h"
#include "integrations/slurm.h"

struct slurmrest;

struct slurmrest_opts {
    const char *url;                /* base URL, e.g. "http://127.0.0.1:6820" (no /slurm/...) */
    const char *user;               /* X-SLURM-USER-NAME, e.g. "root"; required */
    const char *token;              /* a JWT; or */
    const char *token_file;         /* a file holding one (re-read on change); or */
    const char *key_file;           /* Slurm's HS256 jwt_key: tokens are minted for user */
    long token_lifespan_s;          /* minted tokens' lifetime; default 1800 */
    const char *api_version;        /* "v0.0.38" ...; NULL: chosen from the server's /openapi */
    long timeout_ms;                /* deadline of one call, retries included; default 15000 */
    int max_retries;                /* retries of a call; default 4 */
    struct common_metrics *metrics; /* MAY: where the request metrics go */
};

/* the API versions this client speaks: v0.0.<MIN> .. v0.0.<MAX> */
#define SLURMREST_MINOR_MIN 38
#define SLURMREST_MINOR_MAX 44

/*
 * slurmrest_settings_check - the settings of opts as serve reads them, checked before anything
 * is sent: url is http:// or https:// with a host and, when given, a port 1..65535 (no user
 * name or password in it); user is set; exactly one of token_file and key_file is set (token
 * is not a serve setting and counts as neither), is readable and holds a token / key (a token
 * file's "SLURM_JWT=" prefix and blanks do not count); api_version, when set, is one this client
 * speaks. Reads the files; no network. Returns COMMON_OK, or COMMON_EINVAL with err naming the
 * setting as the serve config and flags spell it ("slurm.url (--slurm-url)") and the value.
 */
enum common_rc slurmrest_settings_check(const struct slurmrest_opts *opts,
                                        struct common_error *err);

/*
 * slurmrest_create - a client for opts (strings copied). Needs url, user and one of token,
 * token_file, key_file. Returns NULL with err set: COMMON_EINVAL naming the missing option,
 * COMMON_ENOMEM. slurmrest_destroy releases it (NULL is a no-op).
 */
struct slurmrest *slurmrest_create(const struct slurmrest_opts *opts, struct common_error *err);
void slurmrest_destroy(struct slurmrest *s);

/*
 * slurmrest_version - the OpenAPI version in use ("v0.0.38"), asking the server's /openapi
 * once when the options did not fix it. Returns COMMON_OK with *version (owned by s); else the
 * error of the call, or COMMON_EUNSUPPORTED when the server lists no version this client knows
 * (err lists what it found).
 */
enum common_rc slurmrest_version(struct slurmrest *s, const char **version,
                                 struct common_error *err);

/*
 * slurmrest_call - one request to /slurm/<version><path> ("/job/submit", "/jobs"); body MAY be
 * NULL (else sent as application/json). Success is HTTP 2xx with an empty errors array: *answer
 * (may be NULL) is then a new reference to the body. Errors as slurm_answer_check gives them
 * (the message starts with "<METHOD> <path>"), COMMON_EIO / COMMON_ETIMEOUT for transport
 * failures, COMMON_EIO when the token file cannot be read.
 */
enum common_rc slurmrest_call(struct slurmrest *s, const char *method, const char *path,
                              const json_t *body, json_t **answer, struct common_error *err);

/* slurmrest_submit - POST /job/submit with body (see slurm_submission); *job_id on success. */
enum common_rc slurmrest_submit(struct slurmrest *s, const json_t *body, int64_t *job_id,
                                struct common_error *err);

/* slurmrest_job - GET /job/<id> decoded (strings in a). COMMON_ENOTFOUND once Slurm has
 * forgotten the job (MinJobAge after its end). */
enum common_rc slurmrest_job(struct slurmrest *s, struct common_arena *a, int64_t job_id,
                             struct slurm_job_state *out, struct common_error *err);

/* slurmrest_find - the job carrying comment among GET /jobs (slurm_jobs_find). */
enum common_rc slurmrest_find(struct slurmrest *s, struct common_arena *a, const char *comment,
                              struct slurm_job_state *out, struct common_error *err);

/* slurmrest_cancel - DELETE /job/<id> (Slurm's cancel, SIGKILL). A job Slurm no longer knows
 * counts as cancelled (COMMON_OK). */
enum common_rc slurmrest_cancel(struct slurmrest *s, int64_t job_id, struct common_error *err);

/*
 * slurmrest_mint_token - an HS256 JWT signed with key[0..keylen) with the claims
 * {"exp": now + lifespan_s, "iat": now, "sun": user}, into out (size bytes). Pure apart from
 * OpenSSL. Returns COMMON_OK, COMMON_ETOOBIG when out is too small, COMMON_EINVAL for an empty
 * key or user.
 */
enum common_rc slurmrest_mint_token(const unsigned char *key, size_t keylen, const char *user,
                                    int64_t now, long lifespan_s, char *out, size_t size,
                                    struct common_error *err);

#endif
