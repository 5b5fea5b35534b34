#include "common/sshkey.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <string.h>

static size_t put_string(unsigned char *out, const void *data, size_t n)
{
    out[0] = (unsigned char)(n >> 24);
    out[1] = (unsigned char)(n >> 16);
    out[2] = (unsigned char)(n >> 8);
    out[3] = (unsigned char)n;
    memcpy(out + 4, data, n);
    return 4 + n;
}

enum common_rc common_sshkey_ecdsa_p521(struct common_arena *a, char **private_pem,
                                        char **public_line, struct common_error *err)
{
    static const char type[] = "ecdsa-sha2-nistp521";
    static const char curve[] = "nistp521";
    EVP_PKEY *key = NULL;
    BIO *bio = NULL;
    unsigned char point[256], blob[512];
    size_t plen = 0, blen = 0;
    char *mem, *b64;
    long mlen;
    enum common_rc rc = COMMON_EIO;

    key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-521");
    if (!key)
        goto out;
    if (!EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point), &plen))
        goto out;
    bio = BIO_new(BIO_s_mem());
    if (!bio || !PEM_write_bio_PrivateKey_traditional(bio, key, NULL, NULL, 0, NULL, NULL))
        goto out;
    mlen = BIO_get_mem_data(bio, &mem);
    *private_pem = common_arena_strndup(a, mem, (size_t)mlen);
    blen += put_string(blob + blen, type, sizeof(type) - 1);
    blen += put_string(blob + blen, curve, sizeof(curve) - 1);
    blen += put_string(blob + blen, point, plen);
    b64 = common_arena_alloc(a, 4 * ((blen + 2) / 3) + 1);
    if (!*private_pem || !b64) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    EVP_EncodeBlock((unsigned char *)b64, blob, (int)blen);
    *public_line = common_arena_printf(a, "%s %s", type, b64);
    if (!*public_line) {
        rc = common_error_set(err, COMMON_ENOMEM, "out of memory");
        goto out;
    }
    rc = COMMON_OK;
out:
    if (rc == COMMON_EIO) {
        char reason[256];
        ERR_error_string_n(ERR_get_error(), reason, sizeof(reason));
        common_error_set(err, COMMON_EIO, "generating the MPI SSH key failed: %s", reason);
    }
    BIO_free(bio);
    EVP_PKEY_free(key);
    return rc;
}
