/*
 * common/sshkey.h - SSH key pairs for MPI's launcher-to-worker login (OpenSSL).
 */
#ifndef COMMON_SSHKEY_H
#define COMMON_SSHKEY_H

#include "common/arena.h"
#include "common/error.h"

/*
 * common_sshkey_ecdsa_p521 - a new ECDSA P-521 key pair, as Trainer's MPI plugin makes: the
 * private key PEM-encoded in the traditional "EC PRIVATE KEY" (SEC 1) form, and the public key
 * as an authorized_keys line "ecdsa-sha2-nistp521 <base64 of the RFC 5656 blob>". Both strings
 * are allocated in arena a. Returns COMMON_OK, COMMON_ENOMEM, or COMMON_EIO when OpenSSL fails
 * (message has OpenSSL's reason).
 */
enum common_rc common_sshkey_ecdsa_p521(struct common_arena *a, char **private_pem,
                                        char **public_line, struct common_error *err);

#endif
