/*
 * user_certs.c MODE: a job without shmemrun whose PE 0 serves the store over TCP with the user's
 * certificates, given through CANN's entry points (shmemx.h). TLS_TEST_INFO holds the TLS info
 * string, TLS_TEST_KEY the private key file, TLS_TEST_PASSWORD its password (the test gives it
 * to a decrypt handler as ciphertext: the password reversed).
 *   ok      configure, init, every PE puts its number to the next PE and checks what the
 *           previous PE put; calls after init are refused
 *   legacy  the key is in legacy OpenSSL encryption: shmem_set_config_store_tls_key refuses it
 *   none    no certificates at all: shmem_init fails naming SHMEM_TLS_DISABLE (run.sh sees
 *           every PE exit non-zero)
 */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "user_certs: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL);
    static char buf[65536];
    *len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[*len] = '\0';
    return buf;
}

/* "Decrypts" by reversing: the ciphertext is the password written backwards. */
static int reverse(const char *cipher, size_t cipher_len, char *plain, size_t *plain_len) {
    if (cipher_len > *plain_len) return -1;
    for (size_t i = 0; i < cipher_len; i++) plain[i] = cipher[cipher_len - 1 - i];
    *plain_len = cipher_len;
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "ok";
    const char *info = getenv("TLS_TEST_INFO");
    const char *key_path = getenv("TLS_TEST_KEY");
    const char *password = getenv("TLS_TEST_PASSWORD");

    /* Bad arguments are refused before anything is kept. */
    EXPECT(shmem_set_conf_store_tls(true, NULL, 0) == -1);
    EXPECT(shmem_set_config_store_tls_key(NULL, 0, NULL, 0, NULL) == -1);
    EXPECT(aclshmemx_set_conf_store_tls(true, "tlsCert", 7) == -1);

    if (strcmp(mode, "none") != 0) {
        EXPECT(info != NULL && key_path != NULL && password != NULL);
        size_t key_len = 0;
        const char *key = slurp(key_path, &key_len);
        size_t pw_len = strlen(password);
        char cipher[256];
        EXPECT(pw_len < sizeof cipher);
        for (size_t i = 0; i < pw_len; i++) cipher[i] = password[pw_len - 1 - i];
        int rc = shmem_set_config_store_tls_key(key, (uint32_t)key_len, cipher, (uint32_t)pw_len,
                                                reverse);
        if (strcmp(mode, "legacy") == 0) {
            EXPECT(rc == -1);
            printf("user_certs: legacy key refused\n");
            return 0;
        }
        EXPECT(rc == 0);
        /* A wrong password is refused too. */
        EXPECT(aclshmemx_set_config_store_tls_key(key, (uint32_t)key_len, "wrong", 5, NULL) == -1);
        EXPECT(aclshmemx_set_config_store_tls_key(key, (uint32_t)key_len, cipher, (uint32_t)pw_len,
                                                  reverse) == 0);
        EXPECT(shmem_set_conf_store_tls(true, info, (uint32_t)strlen(info)) == 0);
    }

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    /* Too late: the library's state forbids it (ACLSHMEM_INNER_ERROR). */
    EXPECT(shmem_set_conf_store_tls(false, NULL, 0) == -4);
    long *x = shmem_malloc(sizeof(long));
    *x = -1;
    shmem_barrier_all();
    shmem_long_p(x, me, (me + 1) % npes);
    shmem_barrier_all();
    EXPECT(*x == (me + npes - 1) % npes);
    shmem_free(x);
    shmem_finalize();
    if (me == 0) printf("user_certs: %d PEs over TLS with the user's certificates\n", npes);
    return 0;
}
