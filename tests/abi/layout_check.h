/* layout_check.h: what the ABI layout checks share (layout.c: CANN SHMEM's <aclshmem.h>;
 * mf_layout.c: memfabric_hybrid's smem/host headers), each compiled as C and as C++: a check
 * that prints every size, offset and value beside the one expected and counts the
 * differences, and a decrypt handler of the shape both APIs declare (the plaintext length is
 * a `size_t &` in C++ and a `size_t *` in C: a reference is passed as its object's address,
 * so both declarations are one ABI). */
#ifndef SHMEM_TESTS_ABI_LAYOUT_CHECK_H
#define SHMEM_TESTS_ABI_LAYOUT_CHECK_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
#define LANGUAGE "C++"
#else
#define LANGUAGE "C"
#endif

static int failures;

static void expect(const char *what, long long got, long long want) {
    printf("%s %s = %lld (expected %lld)%s\n", LANGUAGE, what, got, want,
           got == want ? "" : "  MISMATCH");
    if (got != want) {
        failures++;
    }
}

#define EXPECT(what, got, want) expect(what, (long long)(got), (long long)(want))
#define VALUE(name, want) EXPECT(#name, name, want)
#define SIZE(type, want) EXPECT("sizeof(" #type ")", sizeof(type), want)
#define OFFSET(type, field, want)                                                                  \
    EXPECT("offsetof(" #type ", " #field ")", offsetof(type, field), want)
#define FIELD_SIZE(type, field, want)                                                              \
    EXPECT("sizeof(" #type "." #field ")", sizeof(((type *)0)->field), want)
#ifdef __cplusplus
#define ALIGN(type, want) EXPECT("alignof(" #type ")", alignof(type), want)
#else
#define ALIGN(type, want) EXPECT("alignof(" #type ")", _Alignof(type), want)
#endif

/* The decrypt handler both APIs declare; DECRYPT_LEN(len) passes the length as it expects. */
#ifdef __cplusplus
#define DECRYPT_LEN(len) (len)
static int decrypt(const char *cipher, size_t cipher_len, char *plain, size_t &plain_len) {
    (void)cipher;
    (void)plain;
    plain_len = cipher_len;
    return 0;
}
#else
#define DECRYPT_LEN(len) (&(len))
static int decrypt(const char *cipher, size_t cipher_len, char *plain, size_t *plain_len) {
    (void)cipher;
    (void)plain;
    *plain_len = cipher_len;
    return 0;
}
#endif

/* main's result: 1 (with the count) if any check differed from `whose` layout. */
static int finish(const char *whose, const char *ok) {
    if (failures != 0) {
        fprintf(stderr, "%s: %d difference(s) from %s\n", LANGUAGE, failures, whose);
        return 1;
    }
    printf("%s: %s\n", LANGUAGE, ok);
    return 0;
}

#endif
