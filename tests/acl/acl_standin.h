/* acl_standin.h: the ACL runtime calls the library makes, declared with the C signatures of
 * CANN's acl/acl_rt.h and acl/acl_base_rt.h, and the types and constants they need. It is the
 * interface of the test stand-in libascendcl.so (tests/acl/acl_standin.cc) and of its tests;
 * it is never installed and never included by the library, which binds ACL at run time.
 * Valid C11 and C++17; tests/tools/check_standin_decls.cmake checks it against the prototypes the
 * library binds (rust/ascend-sys/acl_decls.txt). */
#ifndef SHMEM_TESTS_ACL_STANDIN_H
#define SHMEM_TESTS_ACL_STANDIN_H

#include <stddef.h>
#include <stdint.h>

#define ACL_STANDIN_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtContext;
typedef void *aclrtDrvMemHandle;
typedef void (*aclrtHostFunc)(void *args);

/* Return codes (acl_base_rt.h, error_codes/rt_error_codes.h): macros, so that they are
 * constant expressions in C as in C++. */
#define ACL_SUCCESS 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_REPEAT_FINALIZE 100037
#define ACL_ERROR_INVALID_DEVICE 200002
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_INVALID_HANDLE 107017
#define ACL_ERROR_RT_WAIT_TIMEOUT 107019
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_NO_DEVICE 207004
#define ACL_ERROR_RT_NO_PERMISSION 207006

#define ACL_RT_VMM_EXPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x1UL
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x1UL
#define ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS 0x1UL

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_DEVICE_TO_DEVICE,
    ACL_MEMCPY_DEFAULT,
} aclrtMemcpyKind;

typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEM_MALLOC_HUGE_ONLY,
    ACL_MEM_MALLOC_NORMAL_ONLY,
} aclrtMemMallocPolicy;

typedef enum aclrtMemAttr {
    ACL_DDR_MEM,
    ACL_HBM_MEM,
    ACL_DDR_MEM_HUGE,
    ACL_DDR_MEM_NORMAL,
    ACL_HBM_MEM_HUGE,
    ACL_HBM_MEM_NORMAL,
} aclrtMemAttr;

typedef enum aclrtMemLocationType {
    ACL_MEM_LOCATION_TYPE_HOST = 0,
    ACL_MEM_LOCATION_TYPE_DEVICE,
} aclrtMemLocationType;

typedef struct aclrtMemLocation {
    uint32_t id;
    aclrtMemLocationType type;
} aclrtMemLocation;

typedef enum aclrtMemAllocationType {
    ACL_MEM_ALLOCATION_TYPE_PINNED = 0,
} aclrtMemAllocationType;

typedef enum aclrtMemHandleType {
    ACL_MEM_HANDLE_TYPE_NONE = 0,
} aclrtMemHandleType;

typedef struct aclrtPhysicalMemProp {
    aclrtMemHandleType handleType;
    aclrtMemAllocationType allocationType;
    aclrtMemAttr memAttr;
    aclrtMemLocation location;
    uint64_t reserve;
} aclrtPhysicalMemProp;

typedef enum aclrtMemGranularityOptions {
    ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM,
    ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED,
} aclrtMemGranularityOptions;

/* Start-up and errors. aclInit must come first (a second one returns
 * ACL_ERROR_REPEAT_INITIALIZE); aclGetRecentErrMsg returns this thread's last error message, or
 * NULL when there was none since the last read. */
ACL_STANDIN_API aclError aclInit(const char *configPath);
ACL_STANDIN_API aclError aclFinalize(void);
ACL_STANDIN_API const char *aclGetRecentErrMsg(void);

/* Devices and contexts. */
ACL_STANDIN_API aclError aclrtGetDeviceCount(uint32_t *count);
ACL_STANDIN_API aclError aclrtGetDevice(int32_t *deviceId);
ACL_STANDIN_API aclError aclrtSetDevice(int32_t deviceId);
ACL_STANDIN_API aclError aclrtResetDevice(int32_t deviceId);
ACL_STANDIN_API aclError aclrtGetCurrentContext(aclrtContext *context);
ACL_STANDIN_API aclError aclrtSetCurrentContext(aclrtContext context);
ACL_STANDIN_API aclError aclrtDeviceGetBareTgid(int32_t *pid);
ACL_STANDIN_API aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId,
                                                  int32_t peerDeviceId);
ACL_STANDIN_API aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags);

/* Virtual memory and sharing. */
ACL_STANDIN_API aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop,
                                                          aclrtMemGranularityOptions option,
                                                          size_t *granularity);
ACL_STANDIN_API aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment,
                                                void *expectPtr, uint64_t flags);
ACL_STANDIN_API aclError aclrtReleaseMemAddress(void *virPtr);
ACL_STANDIN_API aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size,
                                             const aclrtPhysicalMemProp *prop, uint64_t flags);
ACL_STANDIN_API aclError aclrtFreePhysical(aclrtDrvMemHandle handle);
ACL_STANDIN_API aclError aclrtMemRetainAllocationHandle(void *virPtr, aclrtDrvMemHandle *handle);
ACL_STANDIN_API aclError aclrtMapMem(void *virPtr, size_t size, size_t offset,
                                     aclrtDrvMemHandle handle, uint64_t flags);
ACL_STANDIN_API aclError aclrtUnmapMem(void *virPtr);
ACL_STANDIN_API aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle,
                                                         aclrtMemHandleType handleType,
                                                         uint64_t flags, uint64_t *shareableHandle);
ACL_STANDIN_API aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t *pid,
                                                         size_t pidNum);
ACL_STANDIN_API aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle,
                                                           int32_t deviceId,
                                                           aclrtDrvMemHandle *handle);

/* IPC sharing of aclrtMalloc memory: a key (65 bytes with its NUL) names a block; the
 * exporter allows importers' pids unless it exported without pid validation; each side closes
 * the key. aclrtMemGetAddressRange names the block (aclrtMalloc, aclrtMapMem or
 * aclrtMallocHost) holding an address. */
ACL_STANDIN_API aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len,
                                                 uint64_t flags);
ACL_STANDIN_API aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num);
ACL_STANDIN_API aclError aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags);
ACL_STANDIN_API aclError aclrtIpcMemClose(const char *key);
ACL_STANDIN_API aclError aclrtMemGetAddressRange(void *ptr, void **pbase, size_t *psize);

/* Plain allocations. */
ACL_STANDIN_API aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_STANDIN_API aclError aclrtFree(void *devPtr);
ACL_STANDIN_API aclError aclrtMallocHost(void **hostPtr, size_t size);
ACL_STANDIN_API aclError aclrtFreeHost(void *hostPtr);

/* Copies. */
ACL_STANDIN_API aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                     aclrtMemcpyKind kind);
ACL_STANDIN_API aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                                          aclrtMemcpyKind kind, aclrtStream stream);
ACL_STANDIN_API aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);
ACL_STANDIN_API aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value,
                                          size_t count, aclrtStream stream);

/* Streams and events. */
ACL_STANDIN_API aclError aclrtCreateStream(aclrtStream *stream);
ACL_STANDIN_API aclError aclrtDestroyStream(aclrtStream stream);
ACL_STANDIN_API aclError aclrtSynchronizeStream(aclrtStream stream);
ACL_STANDIN_API aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);
ACL_STANDIN_API aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout);
ACL_STANDIN_API aclError aclrtCreateEvent(aclrtEvent *event);
ACL_STANDIN_API aclError aclrtDestroyEvent(aclrtEvent event);
ACL_STANDIN_API aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
ACL_STANDIN_API aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);
ACL_STANDIN_API aclError aclrtSynchronizeEvent(aclrtEvent event);
ACL_STANDIN_API aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args);

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_TESTS_ACL_STANDIN_H */
