/*
 * aclshmem.h: the CANN SHMEM host API of the shmem library (C and C++).
 *
 * Programs written for CANN SHMEM (torch_npu's symmetric memory, CANN custom-operator hosts)
 * start the library with attributes or a unique id instead of a launcher, then use CANN's host
 * data plane (symmetric memory, RMA, put-with-signal, teams, barriers, waits and tests; below),
 * each routine a thin form of this library's OpenSHMEM routine. The structs, enum
 * values and error codes are laid out exactly as CANN's (`aclshmemx_*` names, with the `shmem_*`
 * names CANN users write), so a binary built against CANN's headers runs on this library;
 * tests/abi checks every size and offset.
 *
 * Where CANN and OpenSHMEM both define a `shmem_*` name (`shmem_finalize`, `shmem_global_exit`,
 * `shmem_info_get_*`), the OpenSHMEM form of <shmem.h> is the `shmem_*` symbol and CANN's form is
 * `aclshmem_*`. After a successful `aclshmemx_init_attr` the whole OpenSHMEM API works.
 *
 * Every routine returning `int` returns ACLSHMEM_SUCCESS (0) or one of the negative codes below,
 * after logging one line naming the routine, the argument and its value.
 */
#ifndef ACLSHMEM_H
#define ACLSHMEM_H

#ifdef SHMEM_DEVICE_H
#error                                                                                             \
    "<aclshmem.h> (host data plane) and shmem/device.h (kernel-side) declare the same CANN names: include them in different files (the kernel's file includes shmem/device.h and shmem/launch.h)"
#endif

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "shmem.h"
#include "shmem/cann_types.h"
#include "shmemx.h"

#ifdef __cplusplus
extern "C" {
#define ACLSHMEMI_ENUM(name, type) enum name : type
#define ACLSHMEMI_DEFAULT(...) = __VA_ARGS__
#else
#define ACLSHMEMI_ENUM(name, type) enum name
#define ACLSHMEMI_DEFAULT(...)
#endif

#define ACLSHMEM_HOST_API __attribute__((visibility("default")))

#define ACLSHMEM_MAJOR_VERSION 1
#define ACLSHMEM_MINOR_VERSION 1
#define ACLSHMEM_MAX_NAME_LEN 256
#define ACLSHMEM_MAX_IP_PORT_LEN 64
#define ACLSHMEM_UNIQUE_ID_INNER_LEN 124
/* Seconds of every timeout of the attributes until set otherwise. */
#define ACLSHMEM_DEFAULT_TIMEOUT 120
#ifdef __cplusplus
constexpr int DEFAULT_TIMEOUT = ACLSHMEM_DEFAULT_TIMEOUT;
#endif

/* Return codes. */
ACLSHMEMI_ENUM(aclshmem_error_code_t, int){
    ACLSHMEM_SUCCESS = 0,
    ACLSHMEM_INVALID_PARAM = -1,     /* an argument is wrong (NULL, out of range, PEs disagree) */
    ACLSHMEM_INVALID_VALUE = -2,     /* a value out of its range (engine type, variable) */
    ACLSHMEM_SMEM_ERROR = -3,        /* (CANN's memory layer; not returned here) */
    ACLSHMEM_INNER_ERROR = -4,       /* a system call failed, or the library's state forbids it */
    ACLSHMEM_NOT_INITED = -5,        /* the library is not initialised */
    ACLSHMEM_BOOTSTRAP_ERROR = -6,   /* the PEs could not meet or talk through the store */
    ACLSHMEM_TIMEOUT_ERROR = -7,     /* a start-up or control step ran out of time */
    ACLSHMEM_MALLOC_FAILED = -8,     /* the symmetric heap could not be made */
    ACLSHMEM_DL_FUNC_FAILED = -9,    /* (CANN's dynamic loading; not returned here) */
    ACLSHMEM_INNER_TIMEOUT = -10,    /* (not returned here) */
    ACLSHMEM_UNDER_API_UNLOAD = -11, /* (not returned here) */
    ACLSHMEM_NOT_SUPPORTED = -100,   /* the routine or option needs what this build lacks */
};
typedef enum aclshmem_error_code_t aclshmem_error_code_t;
typedef enum aclshmem_error_code_t shmem_error_code_t;

/* How aclshmemx_init_attr finds the other PEs. */
ACLSHMEMI_ENUM(aclshmemx_bootstrap_t, int){
    ACLSHMEMX_INIT_WITH_DEFAULT = 1 << 0, /* attributes->ip_port, else the unique id in comm_args */
    ACLSHMEMX_INIT_WITH_MPI = 1 << 1,     /* not supported: ACLSHMEM_NOT_SUPPORTED */
    ACLSHMEMX_INIT_WITH_UNIQUEID = 1 << 3, /* the unique id in attributes->comm_args */
    ACLSHMEMX_INIT_MAX = INT_MIN,          /* (1 << 31) */
};
typedef enum aclshmemx_bootstrap_t aclshmemx_bootstrap_t;
typedef enum aclshmemx_bootstrap_t shmemx_bootstrap_t;

/* aclshmemx_init_status. */
enum aclshmemx_init_status_t {
    ACLSHMEM_STATUS_NOT_INITIALIZED = 0,
    ACLSHMEM_STATUS_SHM_CREATED = 1, /* the heap exists, start-up not finished */
    ACLSHMEM_STATUS_IS_INITIALIZED = 2,
    ACLSHMEM_STATUS_INVALID = INT_MAX,
};
typedef enum aclshmemx_init_status_t aclshmemx_init_status_t;
typedef enum aclshmemx_init_status_t shmem_init_status_t;

ACLSHMEMI_ENUM(aclshmem_transport_t, uint8_t){
    ACLSHMEM_TRANSPORT_MTE = 1 << 0,
    ACLSHMEM_TRANSPORT_ROCE = 1 << 1,
    ACLSHMEM_TRANSPORT_SDMA = 1 << 2,
    ACLSHMEM_TRANSPORT_UDMA = 1 << 3,
};
typedef enum aclshmem_transport_t aclshmem_transport_t;
typedef enum aclshmem_transport_t shmem_transport_t;

/* Data engine of a job. This library moves data with the host CPU, which plays MTE's part. */
enum data_op_engine_type_t {
    ACLSHMEM_DATA_OP_MTE = 0x01,
    ACLSHMEM_DATA_OP_SDMA = 0x02,
    ACLSHMEM_DATA_OP_ROCE = 0x04,
    ACLSHMEM_DATA_OP_UDMA = 0x08,
    ACLSHMEM_DATA_OP_MAX = 0x08,
};
typedef enum data_op_engine_type_t data_op_engine_type_t;

/* Optional attributes (24 bytes). Timeouts are in seconds, 1 or more:
 * shm_init_timeout bounds joining the job, shm_create_timeout making and exchanging the heap,
 * control_operation_timeout the control steps of a running job (finalize, checks). sockFd is
 * not used. */
typedef struct {
    int version; /* ACLSHMEM_OPTIONAL_ATTR_VERSION */
    data_op_engine_type_t data_op_engine_type;
    uint32_t shm_init_timeout;
    uint32_t shm_create_timeout;
    uint32_t control_operation_timeout;
    int32_t sockFd;
} aclshmem_init_optional_attr_t;
typedef aclshmem_init_optional_attr_t shmem_init_optional_attr_t;
#define ACLSHMEM_OPTIONAL_ATTR_VERSION ((int)((1 << 16) + sizeof(aclshmem_init_optional_attr_t)))

/* Attributes of aclshmemx_init_attr (120 bytes). ip_port: `tcp://ip:port` or
 * `tcp6://[ip]:port`, NUL-terminated. comm_args: the unique id with
 * ACLSHMEMX_INIT_WITH_UNIQUEID; it must stay valid until aclshmemx_init_attr returns.
 * instance_id is part of the layout only: this library has one instance and never reads or
 * writes it (programs built against older CANN headers lack it). */
typedef struct aclshmemx_init_attr_t {
    int my_pe;
    int n_pes;
    char ip_port[ACLSHMEM_MAX_IP_PORT_LEN] ACLSHMEMI_DEFAULT({});
    uint64_t local_mem_size;
    aclshmem_init_optional_attr_t option_attr ACLSHMEMI_DEFAULT(
        {ACLSHMEM_OPTIONAL_ATTR_VERSION, ACLSHMEM_DATA_OP_MTE, ACLSHMEM_DEFAULT_TIMEOUT,
         ACLSHMEM_DEFAULT_TIMEOUT, ACLSHMEM_DEFAULT_TIMEOUT, 0});
    void *comm_args ACLSHMEMI_DEFAULT(NULL);
    uint64_t instance_id ACLSHMEMI_DEFAULT(0);
} aclshmemx_init_attr_t;
typedef aclshmemx_init_attr_t shmem_init_attr_t;

/* Unique id (136 bytes): made by aclshmemx_get_uniqueid, passed by the user to every PE as
 * plain bytes. internal[] holds the store address, a random secret and the store certificate's
 * fingerprint; my_pe and n_pes are filled by aclshmemx_set_attr_uniqueid_args. */
typedef struct {
    int32_t version; /* ACLSHMEM_UNIQUEID_VERSION */
    int my_pe;
    int n_pes;
    char internal[ACLSHMEM_UNIQUE_ID_INNER_LEN];
} aclshmemx_uniqueid_t;
typedef aclshmemx_uniqueid_t shmem_uniqueid_t;
#define ACLSHMEM_UNIQUEID_VERSION ((int32_t)((1 << 16) + sizeof(aclshmemx_uniqueid_t)))
#define ACLSHMEM_UNIQUEID_INITIALIZER                                                              \
    {                                                                                              \
        ACLSHMEM_UNIQUEID_VERSION, 0, 0, { 0 }                                                     \
    }

/* The older CANN unique id (128 bytes), written by the `shmem_get_uniqueid` symbol, which
 * binaries built against older CANN headers (and torch_npu) call. Every routine that reads a
 * unique id takes either layout, told apart by `version`. */
typedef struct {
    int32_t version; /* SHMEM_UNIQUEID_VERSION */
    char internal[ACLSHMEM_UNIQUE_ID_INNER_LEN];
} shmemx_uniqueid_t;
#define SHMEM_UNIQUEID_VERSION ((int32_t)((1 << 16) + sizeof(shmemx_uniqueid_t)))
#define SHMEM_UNIQUEID_INITIALIZER                                                                 \
    {                                                                                              \
        SHMEM_UNIQUEID_VERSION, { 0 }                                                              \
    }

/* The TLS settings of the job's store (aclshmemx_set_conf_store_tls,
 * aclshmemx_set_config_store_tls_key, their shmem_* names and the decrypt handler type
 * aclshmem_decrypt_handler / shmem_decrypt_handler) are declared in <shmemx.h>, included above. */

/* ---- Starting and ending ------------------------------------------------------------------ */

/* Where start-up is: ACLSHMEM_STATUS_NOT_INITIALIZED, _SHM_CREATED or _IS_INITIALIZED (again
 * NOT_INITIALIZED after aclshmem_finalize). Any thread, any time. */
ACLSHMEM_HOST_API int aclshmemx_init_status(void);
ACLSHMEM_HOST_API int shmem_init_status(void);

/* Fills a library-owned attribute struct for PE `my_pe` of `n_pes` with `local_mem_size` bytes
 * of symmetric heap and the store address `ip_port` (NULL or "" when a unique id follows),
 * timeouts ACLSHMEM_DEFAULT_TIMEOUT and engine MTE, and stores its address in `*attributes`.
 * Each call refills the same struct. */
ACLSHMEM_HOST_API int aclshmemx_set_attr(int my_pe, int n_pes, uint64_t local_mem_size,
                                         const char *ip_port, aclshmemx_init_attr_t **attributes);
ACLSHMEM_HOST_API int shmem_set_attr(int my_pe, int n_pes, uint64_t local_mem_size,
                                     const char *ip_port, shmem_init_attr_t **attributes);

/* Sets the data engine; only ACLSHMEM_DATA_OP_MTE is available (others: NOT_SUPPORTED; values
 * outside the enum: INVALID_VALUE). */
ACLSHMEM_HOST_API int aclshmemx_set_data_op_engine_type(aclshmemx_init_attr_t *attributes,
                                                        data_op_engine_type_t value);
ACLSHMEM_HOST_API int shmem_set_data_op_engine_type(shmem_init_attr_t *attributes,
                                                    data_op_engine_type_t value);
ACLSHMEM_HOST_API int shmemx_set_data_op_engine_type(shmem_init_attr_t *attributes,
                                                     data_op_engine_type_t value);

/* Sets all three timeouts of the attributes to `value` seconds (1 or more). */
ACLSHMEM_HOST_API int aclshmemx_set_timeout(aclshmemx_init_attr_t *attributes, uint32_t value);
ACLSHMEM_HOST_API int shmem_set_timeout(shmem_init_attr_t *attributes, uint32_t value);

/* Makes a unique id for a new job. The calling process must be the job's PE 0: it binds the
 * store's listening socket now (at SHMEM_UID_SESSION_ID, else an address of the interface
 * SHMEM_UID_SOCK_IFNAME, else of the first non-loopback interface that is up; port from the
 * session id, else the first free one of SHMEM_INSTANCE_PORT_RANGE, else any free one) and keeps
 * it, with a self-signed store certificate, until finalize or exit. The id carries the address,
 * a random secret and the certificate's SHA-256 fingerprint: hand it to the other PEs privately
 * (whoever has it can join the job). Does not block. */
ACLSHMEM_HOST_API int aclshmemx_get_uniqueid(aclshmemx_uniqueid_t *uid);
/* The same, in the older 128-byte layout (the symbol older binaries resolve). Source code
 * calling shmem_get_uniqueid gets the routine that fits its id: aclshmemx_get_uniqueid for an
 * aclshmemx_uniqueid_t (as with CANN's current headers), this one for a shmemx_uniqueid_t. */
ACLSHMEM_HOST_API int(shmem_get_uniqueid)(shmemx_uniqueid_t *uid);
#define shmem_get_uniqueid(uid)                                                                    \
    (sizeof(*(uid)) == sizeof(shmemx_uniqueid_t)                                                   \
         ? (shmem_get_uniqueid)((shmemx_uniqueid_t *)(void *)(uid))                                \
         : aclshmemx_get_uniqueid((aclshmemx_uniqueid_t *)(void *)(uid)))

/* Fills `*attr` (the caller's) for PE `my_pe` of `n_pes` with `local_mem_size` bytes of heap,
 * joining through `uid` (either layout; stored in attr->comm_args, and my_pe/n_pes are written
 * into a 136-byte uid). Timeouts and engine are left as they are. */
ACLSHMEM_HOST_API int aclshmemx_set_attr_uniqueid_args(int my_pe, int n_pes, int64_t local_mem_size,
                                                       aclshmemx_uniqueid_t *uid,
                                                       aclshmemx_init_attr_t *attr);
/* The older four-argument form (torch_npu's): the heap size is the one already in `*attr`
 * (from shmem_set_attr), whose my_pe and n_pes must match. */
ACLSHMEM_HOST_API int shmem_set_attr_uniqueid_args(int my_pe, int n_pes, const void *uid,
                                                   shmem_init_attr_t *attr);

/* Starts the library on this PE as `attributes` say (collective over the job's PEs): joins the
 * job, checks that every PE was given the same PE count, heap size and store (else fails on
 * every PE naming the PE that differs), makes and exchanges the heap. Blocks until every PE has
 * joined, at most the attribute timeouts. */
ACLSHMEM_HOST_API int aclshmemx_init_attr(aclshmemx_bootstrap_t bootstrap_flags,
                                          aclshmemx_init_attr_t *attributes);
/* The one-argument form torch_npu resolves by name: the store address if ip_port is set, else
 * the unique id in comm_args. */
ACLSHMEM_HOST_API int shmem_init_attr(shmem_init_attr_t *attributes);

/* Ends the library on this PE (collective); 0 or an error code. */
ACLSHMEM_HOST_API int aclshmem_finalize(void);
/* Ends the whole job with `status` from any PE; does not return. */
ACLSHMEM_HOST_API void aclshmem_global_exit(int status);
ACLSHMEM_HOST_API void aclshmem_info_get_version(int *major, int *minor);
ACLSHMEM_HOST_API void aclshmem_info_get_name(char *name);
ACLSHMEM_HOST_API int aclshmem_my_pe(void);
ACLSHMEM_HOST_API int aclshmem_n_pes(void);

/* ---- Logging ---------------------------------------------------------------------------------
 * The library's log lines go to stderr as "shmem: PE n: LEVEL: message" unless a callback is
 * set. Both calls work before or after init. CANN's levels: 0 debug, 1 info, 2 warn, 3 error,
 * 4 fatal (shown here as error: only error lines). */

/* Hands every following log line to `func` instead of stderr: `level` is CANN's (0 debug,
 * 1 info, 2 warn, 3 error), `msg` the line without its level word and newline, valid for the
 * call only. `func` may be called from any thread of the library and must not call the
 * library. NULL sends the lines to stderr again. Returns ACLSHMEM_SUCCESS. */
ACLSHMEM_HOST_API int32_t aclshmemx_set_extern_logger(void (*func)(int level, const char *msg));
ACLSHMEM_HOST_API int32_t shmem_set_extern_logger(void (*func)(int level, const char *msg));
/* Shows the lines of `level` (0..4 above) and more severe from now on, overriding
 * SHMEM_LOG_LEVEL. Another value: ACLSHMEM_INVALID_VALUE and a log line naming it. */
ACLSHMEM_HOST_API int32_t aclshmemx_set_log_level(int level);
ACLSHMEM_HOST_API int32_t shmem_set_log_level(int level);

/* ---- Data plane: symmetric memory and RMA --------------------------------------------------
 * Thin forms of the OpenSHMEM routines with CANN's names, argument types and failure answers.
 * Every routine below first checks that the library is running and that `pe` names a PE of the
 * job; if not, it logs one line naming the routine, the argument and its value and returns
 * (NULL, or nothing), as CANN's do. Addresses are then checked as by the OpenSHMEM routine it
 * wraps, which ends the job naming that routine for a remote range outside symmetric memory.
 * The `*_on_stream` forms need the heap on an NPU (the npu device, SHMEM_DEVICE=npu): they
 * enqueue their work on the ACL stream given (NULL: the current device's default stream) and
 * return; without an NPU they log ACLSHMEM_NOT_SUPPORTED and return. */

/* Where symmetric memory lives. The heap is one kind per job: DEVICE_SIDE (CANN's default)
 * when it is on an NPU (the npu device), HOST_SIDE when it is host memory (the host device);
 * asking for the other kind gives NULL and a log line saying so. */
enum aclshmem_mem_type_t {
    HOST_SIDE = 0,
    DEVICE_SIDE = 1,
};
typedef enum aclshmem_mem_type_t aclshmem_mem_type_t;

/* How put-with-signal updates its int32_t signal (CANN's values, not OpenSHMEM's). */
enum aclshmem_signal_op_type_t {
    ACLSHMEM_SIGNAL_SET = 0,
    ACLSHMEM_SIGNAL_ADD = 1,
};
typedef enum aclshmem_signal_op_type_t aclshmem_signal_op_type_t;

/* Comparisons of CANN's signal waits. */
enum aclshmem_cmp_op_type_t {
    ACLSHMEM_CMP_EQ = 0,
    ACLSHMEM_CMP_NE = 1,
    ACLSHMEM_CMP_GT = 2,
    ACLSHMEM_CMP_GE = 3,
    ACLSHMEM_CMP_LT = 4,
    ACLSHMEM_CMP_LE = 5,
};
typedef enum aclshmem_cmp_op_type_t aclshmem_cmp_op_type_t;

/* An NPU stream handle (ACL's). */
typedef void *aclrtStream;

/* Symmetric allocation, collective as shmem_malloc: NULL for size 0, before start-up or after
 * finalize, for an alignment that is not a power of two, or when the heap is full. aclshmem_free
 * of NULL does nothing. */
ACLSHMEM_HOST_API void *aclshmem_malloc(size_t size);
ACLSHMEM_HOST_API void *aclshmem_calloc(size_t nmemb, size_t size);
ACLSHMEM_HOST_API void *aclshmem_align(size_t alignment, size_t size);
ACLSHMEM_HOST_API void aclshmem_free(void *ptr);
/* The same with a memory kind: the heap's kind only (see aclshmem_mem_type_t). */
ACLSHMEM_HOST_API void *aclshmemx_malloc(
    size_t size, aclshmem_mem_type_t mem_type ACLSHMEMI_DEFAULT(DEVICE_SIDE));
ACLSHMEM_HOST_API void *aclshmemx_calloc(
    size_t count, size_t size, aclshmem_mem_type_t mem_type ACLSHMEMI_DEFAULT(DEVICE_SIDE));
ACLSHMEM_HOST_API void *aclshmemx_align(
    size_t alignment, size_t size, aclshmem_mem_type_t mem_type ACLSHMEMI_DEFAULT(DEVICE_SIDE));
ACLSHMEM_HOST_API void aclshmemx_free(void *ptr,
                                      aclshmem_mem_type_t mem_type ACLSHMEMI_DEFAULT(DEVICE_SIDE));
/* The first byte of this PE's symmetric heap of kind `mem_type` (NULL: not running, or a kind
 * this library lacks). */
ACLSHMEM_HOST_API void *aclshmemx_get_heap_base(
    aclshmem_mem_type_t mem_type ACLSHMEMI_DEFAULT(DEVICE_SIDE));
/* Where this process may load and store the symmetric `ptr` of PE `pe` (as shmem_ptr), NULL
 * when it may not, when `ptr` is not symmetric or `pe` is not a PE of the job. */
ACLSHMEM_HOST_API void *aclshmem_ptr(void *ptr, int pe);

/* Typed RMA over CANN's host types (ACLSHMEMI_HOST_TYPES, shmem/cann_types.h: float, double,
 * int8 .. uint64, char): `nelems` elements (blocking, or _nbi: complete at aclshmem_quiet /
 * shmem_quiet); the _signal forms then update the int32_t signal at `sig_addr` on `pe` by `sig_op`
 * (ACLSHMEM_SIGNAL_SET or _ADD) after the data, so a PE that sees the signal sees the data. */
#define ACLSHMEMI_DECLARE_RMA(NAME, TYPE)                                                          \
    ACLSHMEM_HOST_API void aclshmem_put_##NAME##_mem(TYPE *dest, TYPE *source, size_t nelems,      \
                                                     int pe);                                      \
    ACLSHMEM_HOST_API void aclshmem_put_##NAME##_mem_nbi(TYPE *dest, TYPE *source, size_t nelems,  \
                                                         int pe);                                  \
    ACLSHMEM_HOST_API void aclshmem_get_##NAME##_mem(TYPE *dest, TYPE *source, size_t nelems,      \
                                                     int pe);                                      \
    ACLSHMEM_HOST_API void aclshmem_get_##NAME##_mem_nbi(TYPE *dest, TYPE *source, size_t nelems,  \
                                                         int pe);                                  \
    ACLSHMEM_HOST_API void aclshmem_put_##NAME##_mem_signal(TYPE *dst, TYPE *src,                  \
                                                            size_t elem_size, uint8_t *sig_addr,   \
                                                            int32_t signal, int sig_op, int pe);   \
    ACLSHMEM_HOST_API void aclshmem_put_##NAME##_mem_signal_nbi(                                   \
        TYPE *dst, TYPE *src, size_t elem_size, uint8_t *sig_addr, int32_t signal, int sig_op,     \
        int pe);                                                                                   \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_p(TYPE *dst, const TYPE value, int pe);               \
    ACLSHMEM_HOST_API TYPE aclshmem_##NAME##_g(TYPE *src, int32_t pe);
ACLSHMEMI_HOST_TYPES(ACLSHMEMI_DECLARE_RMA)
#undef ACLSHMEMI_DECLARE_RMA

/* Byte RMA: `elem_size` bytes. */
ACLSHMEM_HOST_API void aclshmem_putmem(void *dst, void *src, size_t elem_size, int32_t pe);
ACLSHMEM_HOST_API void aclshmem_getmem(void *dst, void *src, size_t elem_size, int32_t pe);
ACLSHMEM_HOST_API void aclshmem_putmem_nbi(void *dst, void *src, size_t elem_size, int32_t pe);
ACLSHMEM_HOST_API void aclshmem_getmem_nbi(void *dst, void *src, size_t elem_size, int32_t pe);
ACLSHMEM_HOST_API void aclshmemx_putmem_signal(void *dst, void *src, size_t elem_size,
                                               void *sig_addr, int32_t signal, int sig_op, int pe);
ACLSHMEM_HOST_API void aclshmemx_putmem_signal_nbi(void *dst, void *src, size_t elem_size,
                                                   void *sig_addr, int32_t signal, int sig_op,
                                                   int pe);
/* On a stream (NPU heap only): one device-to-device copy of `elem_size` bytes between this
 * PE's device buffer and the symmetric heap of `pe` (on this node), run when the stream reaches
 * it. Quiet on a stream: the host's operations are complete when their calls return and the
 * stream's copies complete in stream order, so it enqueues nothing. A signal operation on a
 * stream runs (fence, then the atomic update of the int32_t signal) when the stream reaches it. */
ACLSHMEM_HOST_API void aclshmemx_putmem_on_stream(void *dst, void *src, size_t elem_size,
                                                  int32_t pe, aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_getmem_on_stream(void *dst, void *src, size_t elem_size,
                                                  int32_t pe, aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_quiet_on_stream(aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_signal_op_on_stream(int32_t *sig_addr, int32_t signal, int sig_op,
                                                     int32_t pe, aclrtStream stream);

/* Sets the unified-buffer scratch area through which AscendC kernels stage their puts and
 * gets (shmem/arch/ascendc.h): [offset, offset + ub_size) of each core's unified buffer,
 * copied in chunks of ub_size and ordered on MTE event `event_id`. Records it in the job state
 * (until shmem_finalize; kernels launched after the call read it) and returns ACLSHMEM_SUCCESS;
 * ACLSHMEM_INVALID_PARAM, after a line naming the argument, when ub_size is not a nonzero
 * multiple of 32, offset is not 32-byte aligned or event_id is not in [0, 8);
 * ACLSHMEM_NOT_INITED before start-up. Kernels of the CPU architecture ignore it. */
ACLSHMEM_HOST_API int aclshmemx_set_mte_config(uint64_t offset, uint32_t ub_size,
                                               uint32_t event_id);

/* ---- Data plane: teams and synchronisation -------------------------------------------------
 * A CANN team is an int handle: ACLSHMEM_TEAM_WORLD (0) is every PE, a split gives its members
 * a new handle and the others ACLSHMEM_TEAM_INVALID. The handle is the team's slot, the same on
 * every member and the number a kernel names the team by (shmem/device.h's aclshmem_team_t), so
 * a kernel takes the host's handle as it is; a PE belongs to at most 64 teams at once (the
 * world and the shared team, 1, included). Each routine is the OpenSHMEM team routine on the team
 * behind the handle; a handle that names no team is refused with a log line (-1 or a negative
 * code). */
enum aclshmem_team_index_t {
    ACLSHMEM_TEAM_INVALID = -1,
    ACLSHMEM_TEAM_WORLD = 0,
};
typedef int aclshmem_team_t;
typedef uint64_t aclshmemx_team_uniqueid_t;
#define ACLSHMEM_MAX_TEAMS 2048

/* A team's configuration (64 bytes): num_contexts is the OpenSHMEM team's; uniqueid is the
 * team's handle; version is 0. */
typedef struct {
    int32_t version;
    int32_t num_contexts;
    aclshmemx_team_uniqueid_t uniqueid;
    char padding[48];
} aclshmem_team_config_t;

/* Collective over `parent_team`: the parent's PEs pe_start, pe_start + pe_stride, ... (pe_size
 * of them). 0, or ACLSHMEM_INVALID_PARAM (bad handle, NULL, an invalid triplet: every parent PE
 * fails alike, or no slot is free on every parent PE); `*new_team` is then
 * ACLSHMEM_TEAM_INVALID. */
ACLSHMEM_HOST_API int aclshmem_team_split_strided(aclshmem_team_t parent_team, int pe_start,
                                                  int pe_stride, int pe_size,
                                                  aclshmem_team_t *new_team);
/* Collective over `parent_team`: a grid `x_range` PEs wide; `*x_team` is this PE's row,
 * `*y_team` its column. Codes as aclshmem_team_split_strided. */
ACLSHMEM_HOST_API int aclshmem_team_split_2d(aclshmem_team_t parent_team, int x_range,
                                             aclshmem_team_t *x_team, aclshmem_team_t *y_team);
/* The number in `dest_team` of `src_pe` of `src_team`; -1 when it has none or a handle is bad. */
ACLSHMEM_HOST_API int aclshmem_team_translate_pe(aclshmem_team_t src_team, int src_pe,
                                                 aclshmem_team_t dest_team);
/* Collective over `team`: ends a team made by a split (ACLSHMEM_TEAM_WORLD is refused). */
ACLSHMEM_HOST_API void aclshmem_team_destroy(aclshmem_team_t team);
/* This PE's number in `team` and the team's size; -1 for a bad handle. */
ACLSHMEM_HOST_API int aclshmem_team_my_pe(aclshmem_team_t team);
ACLSHMEM_HOST_API int aclshmem_team_n_pes(aclshmem_team_t team);
/* Fills `*config`; 0, or ACLSHMEM_INVALID_PARAM (bad handle, NULL). */
ACLSHMEM_HOST_API int aclshmem_team_get_config(aclshmem_team_t team,
                                               aclshmem_team_config_t *config);

/* Barrier over `team` (shmem_quiet, then every PE of the team arrives) and over all PEs; sync
 * waits for the PEs without completing puts (shmem_team_sync, shmem_sync_all). */
ACLSHMEM_HOST_API void aclshmem_barrier(aclshmem_team_t team);
ACLSHMEM_HOST_API void aclshmem_barrier_all(void);
ACLSHMEM_HOST_API void aclshmem_sync(aclshmem_team_t team);
ACLSHMEM_HOST_API void aclshmem_sync_all(void);
/* On a stream (NPU heap only): the barrier runs on the host when the stream reaches it, after
 * the stream's earlier work, and holds the stream until every member has arrived. */
ACLSHMEM_HOST_API void aclshmemx_barrier_on_stream(aclshmem_team_t team, aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_barrier_all_on_stream(aclrtStream stream);

/* ---- Data plane: waits and tests -----------------------------------------------------------
 * CANN's point-to-point synchronisation on this PE's variables, compared by `cmp`
 * (ACLSHMEM_CMP_EQ...LE, CANN's values). A wait returns when its condition holds (waiting by the
 * library's policy: spin, yield, nap); a test never blocks. Results go to `*res_out`: a test's 1
 * or 0; an `_any` form's index, or SIZE_MAX when no included entry qualifies (none, or all
 * excluded); a `_some` form's count, with the indices in `indices`. `status[i]` != 0 leaves
 * entry i out; a NULL `status` includes every entry. A bad `cmp`, a NULL result pointer, or a
 * call before start-up is refused with a log line (tests then report 0 / SIZE_MAX / 0). The
 * typed forms are over ACLSHMEMI_P2P_TYPES (shmem/cann_types.h: CANN's host types but double). */

/* Waits until the int32_t signal at `sig_addr` (this PE's) satisfies `cmp` against `cmp_val`. */
ACLSHMEM_HOST_API void aclshmem_signal_wait_until(int32_t *sig_addr, int cmp, int32_t cmp_val);
/* On a stream (NPU heap only): holds the stream, once it reaches this point, until the
 * signal satisfies the comparison (the host waits, by the library's waiting policy). */
ACLSHMEM_HOST_API void aclshmemx_signal_wait_until_on_stream(int32_t *sig_addr, int cmp,
                                                             int32_t cmp_val, aclrtStream stream);

#define ACLSHMEMI_DECLARE_WAIT(NAME, TYPE)                                                         \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value);      \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait(TYPE *ivar, TYPE cmp_value);                     \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_all(                                       \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value);                   \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_any(                                       \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value, size_t *res_out);  \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_some(                                      \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE cmp_value,   \
        size_t *res_out);                                                                          \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_all_vector(                                \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values);                 \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_any_vector(                                \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values,                  \
        size_t *res_out);                                                                          \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_some_vector(                               \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE *cmp_values, \
        size_t *res_out);                                                                          \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test(TYPE *ivars, int cmp, TYPE cmp_value,            \
                                                  int *res_out);                                   \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_any(                                             \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value, size_t *res_out);  \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_some(TYPE *ivars, size_t nelems,                 \
                                                       size_t *indices, const int *status,         \
                                                       int cmp, TYPE cmp_value, size_t *res_out);  \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_all_vector(                                      \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values, int *res_out);   \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_any_vector(TYPE *ivars, size_t nelems,           \
                                                             const int *status, int cmp,           \
                                                             TYPE *cmp_values, size_t *res_out);   \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_some_vector(                                     \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE *cmp_values, \
        size_t *res_out);
ACLSHMEMI_P2P_TYPES(ACLSHMEMI_DECLARE_WAIT)
#undef ACLSHMEMI_DECLARE_WAIT

/* Source compatibility: CANN's headers route `shmem_*` calls to `aclshmemx_*`. These route by
 * argument count, so calls written for either CANN generation compile: two arguments to
 * shmem_init_attr and five to shmem_set_attr_uniqueid_args go to the aclshmemx_ form. */
#define ACLSHMEMI_PICK2(_1, _2, name, ...) name
#define ACLSHMEMI_PICK5(_1, _2, _3, _4, _5, name, ...) name
#define shmem_init_attr(...)                                                                       \
    ACLSHMEMI_PICK2(__VA_ARGS__, aclshmemx_init_attr, shmem_init_attr, )(__VA_ARGS__)
#define shmem_set_attr_uniqueid_args(...)                                                          \
    ACLSHMEMI_PICK5(__VA_ARGS__, aclshmemx_set_attr_uniqueid_args, shmem_set_attr_uniqueid_args, , \
                    , )                                                                            \
    (__VA_ARGS__)

#undef ACLSHMEMI_DEFAULT
#ifdef __cplusplus
}
#endif

#endif /* ACLSHMEM_H */
