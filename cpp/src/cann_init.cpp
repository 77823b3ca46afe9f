// cann_init.cpp: CANN SHMEM's way of starting the library (attributes, unique id, status) and
// its names for finalize, exit and queries. Every argument is checked here, with CANN's return
// codes and one log line naming the routine, the argument and its value; the runtime then
// joins the job (cxx bridge: init_attrs).
#include <aclshmem.h>

// The real symbols are defined below; the header's call-routing macros are for callers.
#undef shmem_init_attr
#undef shmem_set_attr_uniqueid_args
#undef shmem_get_uniqueid

#include <cinttypes>
#include <cstdarg>
#include <cstring>

#include <pshmem.h>

#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

using namespace shmem::detail;
namespace core = shmem::core;

namespace {

// ACLSHMEM_MAX_PES of CANN: the largest job its structures describe.
constexpr int kMaxPes = 16384;
constexpr size_t kOldUidSize = sizeof(shmemx_uniqueid_t);
constexpr size_t kNewUidSize = sizeof(aclshmemx_uniqueid_t);

// The struct shmem_set_attr fills and hands out (CANN's callers never free it).
aclshmemx_init_attr_t g_attr;

// Logs "call: message" and returns `code`.
__attribute__((format(printf, 3, 4), cold)) int refuse(int code, const char *call, const char *fmt,
                                                       ...) {
    va_list ap;
    va_start(ap, fmt);
    log_call_errorv(call, fmt, ap);
    va_end(ap);
    return code;
}

int check_pes(const char *call, int my_pe, int n_pes) {
    if (n_pes <= 0 || n_pes > kMaxPes) {
        return refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument n_pes=%d: not in [1, %d]",
                      n_pes, kMaxPes);
    }
    if (my_pe < 0 || my_pe >= n_pes) {
        return refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument my_pe=%d: not in [0, %d)",
                      my_pe, n_pes);
    }
    return ACLSHMEM_SUCCESS;
}

int check_size(const char *call, const char *arg, int64_t size) {
    if (size <= 0) {
        return refuse(ACLSHMEM_INVALID_VALUE, call,
                      "invalid argument %s=%" PRId64 ": the symmetric heap needs at least 1 byte",
                      arg, size);
    }
    return ACLSHMEM_SUCCESS;
}

// `tcp://ip:port` or `tcp6://[ip]:port`, NUL-terminated within the attribute's 64 bytes.
int check_ip_port(const char *call, const char *arg, const char *ip_port) {
    size_t len = strnlen(ip_port, ACLSHMEM_MAX_IP_PORT_LEN);
    if (len == ACLSHMEM_MAX_IP_PORT_LEN) {
        return refuse(ACLSHMEM_INVALID_PARAM, call,
                      "invalid argument %s=\"%.*s...\": longer than %d bytes with its NUL", arg,
                      ACLSHMEM_MAX_IP_PORT_LEN - 1, ip_port, ACLSHMEM_MAX_IP_PORT_LEN);
    }
    bool v4 = std::strncmp(ip_port, "tcp://", 6) == 0;
    bool v6 = std::strncmp(ip_port, "tcp6://", 7) == 0;
    const char *host = ip_port + (v6 ? 7 : 6);
    const char *colon = std::strrchr(ip_port, ':');
    bool has_port = colon != nullptr && colon > host && colon[1] != '\0' &&
                    std::strspn(colon + 1, "0123456789") == std::strlen(colon + 1);
    if (!(v4 || v6) || !has_port || host[0] == ':') {
        return refuse(ACLSHMEM_INVALID_PARAM, call,
                      "invalid argument %s=\"%s\": expected tcp://IP:PORT or tcp6://[IP]:PORT", arg,
                      ip_port);
    }
    return ACLSHMEM_SUCCESS;
}

// The internal[] bytes of a unique id in either layout, or nullptr (logged) when `uid` is not one.
const char *uid_internal(const char *call, const char *arg, const void *uid) {
    if (uid == nullptr) {
        refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument %s=NULL", arg);
        return nullptr;
    }
    int32_t version;
    std::memcpy(&version, uid, sizeof version);
    const char *internal;
    if (version == ACLSHMEM_UNIQUEID_VERSION) {
        internal = static_cast<const aclshmemx_uniqueid_t *>(uid)->internal;
    } else if (version == SHMEM_UNIQUEID_VERSION) {
        internal = static_cast<const shmemx_uniqueid_t *>(uid)->internal;
    } else {
        refuse(ACLSHMEM_INVALID_PARAM, call,
               "invalid argument %s->version=%d: not a unique id (expected %d or %d; fill it "
               "with aclshmemx_get_uniqueid)",
               arg, version, static_cast<int>(ACLSHMEM_UNIQUEID_VERSION),
               static_cast<int>(SHMEM_UNIQUEID_VERSION));
        return nullptr;
    }
    auto bytes = rust::Slice<const uint8_t>(reinterpret_cast<const uint8_t *>(internal),
                                            ACLSHMEM_UNIQUE_ID_INNER_LEN);
    rust::String why = core::uniqueid_check(bytes);
    if (!why.empty()) {
        refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument %s: %s", arg, why.c_str());
        return nullptr;
    }
    return internal;
}

int check_engine(const char *call, int value) {
    switch (value) {
    case ACLSHMEM_DATA_OP_MTE: return ACLSHMEM_SUCCESS;
    case ACLSHMEM_DATA_OP_SDMA:
    case ACLSHMEM_DATA_OP_ROCE:
    case ACLSHMEM_DATA_OP_UDMA:
        return refuse(ACLSHMEM_NOT_SUPPORTED, call,
                      "data_op_engine_type=%d: this library has one data engine, the host CPU "
                      "(ACLSHMEM_DATA_OP_MTE=1)",
                      value);
    default:
        return refuse(ACLSHMEM_INVALID_VALUE, call,
                      "invalid argument data_op_engine_type=%d: not an engine (MTE=1, SDMA=2, "
                      "ROCE=4, UDMA=8)",
                      value);
    }
}

int check_timeout(const char *call, const char *arg, uint32_t value) {
    if (value == 0) {
        return refuse(ACLSHMEM_INVALID_VALUE, call,
                      "invalid argument %s=0: a timeout is at least 1 second", arg);
    }
    return ACLSHMEM_SUCCESS;
}

#define ACLSHMEMI_TRY(expr)                                                                        \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != ACLSHMEM_SUCCESS) return rc_;                                                   \
    } while (0)

int set_attr(const char *call, int my_pe, int n_pes, uint64_t local_mem_size, const char *ip_port,
             aclshmemx_init_attr_t **attributes) {
    if (attributes == nullptr) {
        return refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument attributes=NULL");
    }
    ACLSHMEMI_TRY(check_pes(call, my_pe, n_pes));
    if (local_mem_size > static_cast<uint64_t>(INT64_MAX)) {
        return refuse(ACLSHMEM_INVALID_VALUE, call,
                      "invalid argument local_mem_size=%" PRIu64 ": too large", local_mem_size);
    }
    ACLSHMEMI_TRY(check_size(call, "local_mem_size", static_cast<int64_t>(local_mem_size)));
    if (ip_port != nullptr && ip_port[0] != '\0') {
        ACLSHMEMI_TRY(check_ip_port(call, "ip_port", ip_port));
    }
    if (lib_phase.load(std::memory_order_acquire) == kRunning) {
        return refuse(ACLSHMEM_INNER_ERROR, call,
                      "the library is initialized: the attributes it started with are in use");
    }
    g_attr = aclshmemx_init_attr_t{};
    g_attr.my_pe = my_pe;
    g_attr.n_pes = n_pes;
    g_attr.local_mem_size = local_mem_size;
    if (ip_port != nullptr) std::strcpy(g_attr.ip_port, ip_port);
    *attributes = &g_attr;
    return ACLSHMEM_SUCCESS;
}

int set_engine(const char *call, aclshmemx_init_attr_t *attributes, data_op_engine_type_t value) {
    if (attributes == nullptr) {
        return refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument attributes=NULL");
    }
    ACLSHMEMI_TRY(check_engine(call, static_cast<int>(value)));
    attributes->option_attr.data_op_engine_type = value;
    return ACLSHMEM_SUCCESS;
}

int set_timeout(const char *call, aclshmemx_init_attr_t *attributes, uint32_t value) {
    if (attributes == nullptr) {
        return refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument attributes=NULL");
    }
    ACLSHMEMI_TRY(check_timeout(call, "value", value));
    attributes->option_attr.shm_init_timeout = value;
    attributes->option_attr.shm_create_timeout = value;
    attributes->option_attr.control_operation_timeout = value;
    return ACLSHMEM_SUCCESS;
}

// Makes a fresh id into `*uid` (written only on success), for either id struct: both are a
// version and ACLSHMEM_UNIQUE_ID_INNER_LEN bytes of `internal`.
template <typename Uid>
int get_uniqueid(const char *call, Uid *uid, int32_t version) {
    if (uid == nullptr) return refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument uid=NULL");
    rust::Vec<uint8_t> bytes;
    ACLSHMEMI_TRY(core::uniqueid_create(call, bytes));
    Uid made{};
    made.version = version;
    std::memcpy(made.internal, bytes.data(), ACLSHMEM_UNIQUE_ID_INNER_LEN);
    *uid = made;
    return ACLSHMEM_SUCCESS;
}

int set_uniqueid_args(const char *call, int my_pe, int n_pes, int64_t local_mem_size,
                      const void *uid, aclshmemx_init_attr_t *attr) {
    ACLSHMEMI_TRY(check_pes(call, my_pe, n_pes));
    ACLSHMEMI_TRY(check_size(call, "local_mem_size", local_mem_size));
    if (uid_internal(call, "uid", uid) == nullptr) return ACLSHMEM_INVALID_PARAM;
    if (attr == nullptr) return refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument attr=NULL");
    int32_t version;
    std::memcpy(&version, uid, sizeof version);
    if (version == ACLSHMEM_UNIQUEID_VERSION) {
        auto *id =
            const_cast<aclshmemx_uniqueid_t *>(static_cast<const aclshmemx_uniqueid_t *>(uid));
        id->my_pe = my_pe;
        id->n_pes = n_pes;
    }
    attr->my_pe = my_pe;
    attr->n_pes = n_pes;
    attr->local_mem_size = static_cast<uint64_t>(local_mem_size);
    attr->ip_port[0] = '\0';
    attr->comm_args = const_cast<void *>(uid);
    return ACLSHMEM_SUCCESS;
}

int init_attr(const char *call, int flags, aclshmemx_init_attr_t *attributes) {
    if (attributes == nullptr) {
        return refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument attributes=NULL");
    }
    // A pointer never lies in the first 64 KiB (mmap_min_addr): this is a flags value passed
    // to the one-argument shmem_init_attr by a program built for a two-argument header.
    if (reinterpret_cast<uintptr_t>(attributes) < 65536) {
        return refuse(ACLSHMEM_INVALID_PARAM, call,
                      "invalid argument attributes=%p: not a pointer; shmem_init_attr takes the "
                      "attributes alone, aclshmemx_init_attr(flags, attributes) both",
                      static_cast<void *>(attributes));
    }
    switch (lib_phase.load(std::memory_order_acquire)) {
    case kRunning:
        return refuse(ACLSHMEM_INNER_ERROR, call, "called again while the library is initialized");
    case kFinalized:
        return refuse(ACLSHMEM_INNER_ERROR, call,
                      "called after finalize; the library cannot be restarted");
    default: break;
    }
    if (flags == ACLSHMEMX_INIT_WITH_MPI) {
        return refuse(ACLSHMEM_NOT_SUPPORTED, call,
                      "bootstrap_flags=ACLSHMEMX_INIT_WITH_MPI: this library does not link MPI; "
                      "start the PEs with mpirun and call shmem_init, or use a unique id");
    }
    if (flags != ACLSHMEMX_INIT_WITH_DEFAULT && flags != ACLSHMEMX_INIT_WITH_UNIQUEID) {
        return refuse(ACLSHMEM_INVALID_PARAM, call,
                      "invalid argument bootstrap_flags=%d: expected ACLSHMEMX_INIT_WITH_DEFAULT "
                      "(1) or ACLSHMEMX_INIT_WITH_UNIQUEID (8)",
                      flags);
    }
    const aclshmemx_init_attr_t &a = *attributes;
    ACLSHMEMI_TRY(check_pes(call, a.my_pe, a.n_pes));
    if (a.local_mem_size > static_cast<uint64_t>(INT64_MAX)) {
        return refuse(ACLSHMEM_INVALID_VALUE, call,
                      "invalid argument attributes->local_mem_size=%" PRIu64 ": too large",
                      a.local_mem_size);
    }
    ACLSHMEMI_TRY(
        check_size(call, "attributes->local_mem_size", static_cast<int64_t>(a.local_mem_size)));
    ACLSHMEMI_TRY(check_engine(call, static_cast<int>(a.option_attr.data_op_engine_type)));
    ACLSHMEMI_TRY(check_timeout(call, "attributes->option_attr.shm_init_timeout",
                                a.option_attr.shm_init_timeout));
    ACLSHMEMI_TRY(check_timeout(call, "attributes->option_attr.shm_create_timeout",
                                a.option_attr.shm_create_timeout));
    ACLSHMEMI_TRY(check_timeout(call, "attributes->option_attr.control_operation_timeout",
                                a.option_attr.control_operation_timeout));

    core::JobAttrs job;
    job.my_pe = a.my_pe;
    job.n_pes = a.n_pes;
    job.local_mem_size = a.local_mem_size;
    job.init_timeout_s = a.option_attr.shm_init_timeout;
    job.create_timeout_s = a.option_attr.shm_create_timeout;
    job.control_timeout_s = a.option_attr.control_operation_timeout;
    // The address wins in the default mode; the unique id is used when it is the mode or no
    // address was given.
    bool by_address =
        flags == ACLSHMEMX_INIT_WITH_DEFAULT && strnlen(a.ip_port, ACLSHMEM_MAX_IP_PORT_LEN) != 0;
    if (by_address) {
        ACLSHMEMI_TRY(check_ip_port(call, "attributes->ip_port", a.ip_port));
        job.ip_port = rust::String(a.ip_port);
    } else {
        if (a.comm_args == nullptr) {
            return refuse(ACLSHMEM_INVALID_PARAM, call,
                          "invalid argument attributes->comm_args=NULL: give a unique id (%s)",
                          flags == ACLSHMEMX_INIT_WITH_DEFAULT
                              ? "or an address in attributes->ip_port"
                              : "from aclshmemx_get_uniqueid");
        }
        const char *internal = uid_internal(call, "attributes->comm_args", a.comm_args);
        if (internal == nullptr) return ACLSHMEM_INVALID_PARAM;
        for (size_t i = 0; i < ACLSHMEM_UNIQUE_ID_INNER_LEN; i++) {
            job.uniqueid.push_back(static_cast<uint8_t>(internal[i]));
        }
    }
    check_job_state_layout(call);
    ACLSHMEMI_TRY(core::init_attrs(call, job));
    adopt();
    // After start-up: handlers run in reverse order, so this finalize runs before the exit
    // handlers of what start-up loaded (a device runtime), which it may still need.
    finalize_at_exit(call);
    return ACLSHMEM_SUCCESS;
}

}  // namespace

extern "C" {

SHMEM_EXPORT int aclshmemx_init_status(void) { return core::init_status(); }
SHMEM_EXPORT int pshmem_init_status(void) { return core::init_status(); }
SHMEM_WEAK_ALIAS(shmem_init_status)

SHMEM_EXPORT int aclshmemx_set_attr(int my_pe, int n_pes, uint64_t local_mem_size,
                                    const char *ip_port, aclshmemx_init_attr_t **attributes) {
    return set_attr("aclshmemx_set_attr", my_pe, n_pes, local_mem_size, ip_port, attributes);
}
SHMEM_EXPORT int pshmem_set_attr(int my_pe, int n_pes, uint64_t local_mem_size, const char *ip_port,
                                 shmem_init_attr_t **attributes) {
    return set_attr("shmem_set_attr", my_pe, n_pes, local_mem_size, ip_port, attributes);
}
SHMEM_WEAK_ALIAS(shmem_set_attr)

SHMEM_EXPORT int aclshmemx_set_data_op_engine_type(aclshmemx_init_attr_t *attributes,
                                                   data_op_engine_type_t value) {
    return set_engine("aclshmemx_set_data_op_engine_type", attributes, value);
}
SHMEM_EXPORT int pshmem_set_data_op_engine_type(shmem_init_attr_t *attributes,
                                                data_op_engine_type_t value) {
    return set_engine("shmem_set_data_op_engine_type", attributes, value);
}
SHMEM_WEAK_ALIAS(shmem_set_data_op_engine_type)
SHMEM_EXPORT int shmemx_set_data_op_engine_type(shmem_init_attr_t *attributes,
                                                data_op_engine_type_t value) {
    return set_engine("shmemx_set_data_op_engine_type", attributes, value);
}

SHMEM_EXPORT int aclshmemx_set_timeout(aclshmemx_init_attr_t *attributes, uint32_t value) {
    return set_timeout("aclshmemx_set_timeout", attributes, value);
}
SHMEM_EXPORT int pshmem_set_timeout(shmem_init_attr_t *attributes, uint32_t value) {
    return set_timeout("shmem_set_timeout", attributes, value);
}
SHMEM_WEAK_ALIAS(shmem_set_timeout)

SHMEM_EXPORT int aclshmemx_get_uniqueid(aclshmemx_uniqueid_t *uid) {
    return get_uniqueid("aclshmemx_get_uniqueid", uid, ACLSHMEM_UNIQUEID_VERSION);
}
SHMEM_EXPORT int pshmem_get_uniqueid(shmemx_uniqueid_t *uid) {
    return get_uniqueid("shmem_get_uniqueid", uid, SHMEM_UNIQUEID_VERSION);
}
SHMEM_WEAK_ALIAS(shmem_get_uniqueid)

SHMEM_EXPORT int aclshmemx_set_attr_uniqueid_args(int my_pe, int n_pes, int64_t local_mem_size,
                                                  aclshmemx_uniqueid_t *uid,
                                                  aclshmemx_init_attr_t *attr) {
    return set_uniqueid_args("aclshmemx_set_attr_uniqueid_args", my_pe, n_pes, local_mem_size, uid,
                             attr);
}
SHMEM_EXPORT int pshmem_set_attr_uniqueid_args(int my_pe, int n_pes, const void *uid,
                                               shmem_init_attr_t *attr) {
    const char *call = "shmem_set_attr_uniqueid_args";
    if (attr == nullptr) return refuse(ACLSHMEM_INVALID_PARAM, call, "invalid argument attr=NULL");
    if (attr->my_pe != my_pe || attr->n_pes != n_pes) {
        return refuse(ACLSHMEM_INVALID_PARAM, call,
                      "my_pe=%d, n_pes=%d differ from attr (my_pe=%d, n_pes=%d): fill attr with "
                      "shmem_set_attr first, or use aclshmemx_set_attr_uniqueid_args",
                      my_pe, n_pes, attr->my_pe, attr->n_pes);
    }
    if (attr->local_mem_size > static_cast<uint64_t>(INT64_MAX)) {
        return refuse(ACLSHMEM_INVALID_VALUE, call,
                      "invalid argument attr->local_mem_size=%" PRIu64 ": too large",
                      attr->local_mem_size);
    }
    return set_uniqueid_args(call, my_pe, n_pes, static_cast<int64_t>(attr->local_mem_size), uid,
                             attr);
}
SHMEM_WEAK_ALIAS(shmem_set_attr_uniqueid_args)

SHMEM_EXPORT int aclshmemx_init_attr(aclshmemx_bootstrap_t bootstrap_flags,
                                     aclshmemx_init_attr_t *attributes) {
    return init_attr("aclshmemx_init_attr", bootstrap_flags, attributes);
}
SHMEM_EXPORT int pshmem_init_attr(shmem_init_attr_t *attributes) {
    return init_attr("shmem_init_attr", ACLSHMEMX_INIT_WITH_DEFAULT, attributes);
}
SHMEM_WEAK_ALIAS(shmem_init_attr)

SHMEM_EXPORT int aclshmem_finalize(void) {
    if (lib_phase.load(std::memory_order_acquire) != kRunning) {
        return refuse(ACLSHMEM_NOT_INITED, "aclshmem_finalize", "the library is not initialized");
    }
    pshmem_finalize();
    return ACLSHMEM_SUCCESS;
}

SHMEM_EXPORT void aclshmem_global_exit(int status) { pshmem_global_exit(status); }

SHMEM_EXPORT void aclshmem_info_get_version(int *major, int *minor) {
    if (major == nullptr || minor == nullptr) {
        fail("aclshmem_info_get_version", "invalid argument %s=NULL",
             major == nullptr ? "major" : "minor");
    }
    *major = ACLSHMEM_MAJOR_VERSION;
    *minor = ACLSHMEM_MINOR_VERSION;
}

SHMEM_EXPORT void aclshmem_info_get_name(char *name) { pshmem_info_get_name(name); }

SHMEM_EXPORT int aclshmem_my_pe(void) { return pshmem_my_pe(); }
SHMEM_EXPORT int aclshmem_n_pes(void) { return pshmem_n_pes(); }

}  // extern "C"
