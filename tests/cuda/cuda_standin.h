/* cuda_standin.h: the CUDA driver calls the library makes, declared with the C signatures of
 * NVIDIA's cuda.h (CUDA 12.9), and the types and constants they need. It is the interface of the
 * test stand-in libcuda.so.1 (tests/cuda/cuda_standin.cc) and of its tests; it is never
 * installed and never included by the library, which binds the driver at run time.
 * As in cuda.h, a call whose ABI symbol carries a version suffix is declared under its API name
 * and renamed by a macro (cuMemAlloc is the symbol cuMemAlloc_v2).
 * Valid C11 and C++17; tests/tools/check_standin_decls.cmake checks it against the prototypes the
 * library binds (rust/cuda-sys/cuda_decls.txt). */
#ifndef SHMEM_TESTS_CUDA_STANDIN_H
#define SHMEM_TESTS_CUDA_STANDIN_H

#include <stddef.h>
#include <stdint.h>

#define CUDA_STANDIN_API __attribute__((visibility("default")))

/* The driver's version (CUDA 12.9), as cuDriverGetVersion reports it. */
#define CUDA_VERSION 12090

/* ABI symbols of the versioned calls. */
#define cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease_v2
#define cuMemAlloc cuMemAlloc_v2
#define cuMemFree cuMemFree_v2
#define cuMemsetD8 cuMemsetD8_v2
#define cuStreamDestroy cuStreamDestroy_v2
#define cuStreamWriteValue32 cuStreamWriteValue32_v2
#define cuStreamWaitValue32 cuStreamWaitValue32_v2
#define cuStreamWriteValue64 cuStreamWriteValue64_v2
#define cuStreamWaitValue64 cuStreamWaitValue64_v2

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUmemGenericAllocationHandle_v1;
typedef CUmemGenericAllocationHandle_v1 CUmemGenericAllocationHandle;
typedef void (*CUhostFn)(void *userData);
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;

/* Return codes: the ones the stand-in returns, and those the library names. */
typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_ALREADY_MAPPED = 208,
    CUDA_ERROR_NOT_MAPPED = 211,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_OPERATING_SYSTEM = 304,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    CUDA_ERROR_TIMEOUT = 909,
    CUDA_ERROR_UNKNOWN = 999
} CUresult;

typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103
} CUdevice_attribute;

typedef enum CUstream_flags_enum {
    CU_STREAM_DEFAULT = 0x0,
    CU_STREAM_NON_BLOCKING = 0x1
} CUstream_flags;

typedef enum CUstreamWaitValue_flags_enum {
    CU_STREAM_WAIT_VALUE_GEQ = 0x0,
    CU_STREAM_WAIT_VALUE_EQ = 0x1,
    CU_STREAM_WAIT_VALUE_AND = 0x2,
    CU_STREAM_WAIT_VALUE_NOR = 0x3,
    CU_STREAM_WAIT_VALUE_FLUSH = 1 << 30
} CUstreamWaitValue_flags;

typedef enum CUstreamWriteValue_flags_enum {
    CU_STREAM_WRITE_VALUE_DEFAULT = 0x0,
    CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER = 0x1
} CUstreamWriteValue_flags;

typedef enum CUmemAllocationHandleType_enum {
    CU_MEM_HANDLE_TYPE_NONE = 0x0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
    CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
    CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
    CU_MEM_HANDLE_TYPE_FABRIC = 0x8,
    CU_MEM_HANDLE_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationHandleType;

typedef enum CUmemAccess_flags_enum {
    CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
    CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
    CU_MEM_ACCESS_FLAGS_PROT_MAX = 0x7FFFFFFF
} CUmemAccess_flags;

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0x0,
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
    CU_MEM_LOCATION_TYPE_HOST = 0x2,
    CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4,
    CU_MEM_LOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemLocationType;

typedef enum CUmemAllocationType_enum {
    CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
    CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
    CU_MEM_ALLOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationType;

typedef enum CUmemAllocationGranularity_flags_enum {
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;

typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id;
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;

typedef struct CUmemAllocationProp_st {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp_v1;
typedef CUmemAllocationProp_v1 CUmemAllocationProp;

typedef struct CUmemAccessDesc_st {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc_v1;
typedef CUmemAccessDesc_v1 CUmemAccessDesc;

/* Start-up and errors. cuDriverGetVersion, cuGetErrorName and cuGetErrorString answer before
 * cuInit, as the driver's do; every other call returns CUDA_ERROR_NOT_INITIALIZED until it. */
CUDA_STANDIN_API CUresult cuInit(unsigned int Flags);
CUDA_STANDIN_API CUresult cuDriverGetVersion(int *driverVersion);
CUDA_STANDIN_API CUresult cuGetErrorName(CUresult error, const char **pStr);
CUDA_STANDIN_API CUresult cuGetErrorString(CUresult error, const char **pStr);

/* Devices and contexts. */
CUDA_STANDIN_API CUresult cuDeviceGetCount(int *count);
CUDA_STANDIN_API CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUDA_STANDIN_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
CUDA_STANDIN_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUDA_STANDIN_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUDA_STANDIN_API CUresult cuCtxGetCurrent(CUcontext *pctx);
CUDA_STANDIN_API CUresult cuCtxSetCurrent(CUcontext ctx);
CUDA_STANDIN_API CUresult cuCtxGetDevice(CUdevice *device);
CUDA_STANDIN_API CUresult cuCtxSynchronize(void);

/* Virtual memory and sharing. */
CUDA_STANDIN_API CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                                        const CUmemAllocationProp *prop,
                                                        CUmemAllocationGranularity_flags option);
CUDA_STANDIN_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                              CUdeviceptr addr, unsigned long long flags);
CUDA_STANDIN_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUDA_STANDIN_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                      const CUmemAllocationProp *prop, unsigned long long flags);
CUDA_STANDIN_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUDA_STANDIN_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                   CUmemGenericAllocationHandle handle, unsigned long long flags);
CUDA_STANDIN_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUDA_STANDIN_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                         size_t count);
CUDA_STANDIN_API CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                                       CUmemGenericAllocationHandle handle,
                                                       CUmemAllocationHandleType handleType,
                                                       unsigned long long flags);
CUDA_STANDIN_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                         void *osHandle,
                                                         CUmemAllocationHandleType shHandleType);

/* Plain allocations. */
CUDA_STANDIN_API CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUDA_STANDIN_API CUresult cuMemFree(CUdeviceptr dptr);

/* Copies (unified addressing: either side may be host or device memory). */
CUDA_STANDIN_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUDA_STANDIN_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                        CUstream hStream);
CUDA_STANDIN_API CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUDA_STANDIN_API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                          CUstream hStream);

/* Streams. */
CUDA_STANDIN_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags);
CUDA_STANDIN_API CUresult cuStreamDestroy(CUstream hStream);
CUDA_STANDIN_API CUresult cuStreamSynchronize(CUstream hStream);
CUDA_STANDIN_API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
CUDA_STANDIN_API CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                               unsigned int flags);
CUDA_STANDIN_API CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                              unsigned int flags);
CUDA_STANDIN_API CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                               unsigned int flags);
CUDA_STANDIN_API CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                              unsigned int flags);

/* Modules and kernels. The stand-in runs no GPU code: it loads PTX text, reads its `.entry`
 * declarations, and launches only the kernels it has a host model of (the library's stream
 * kernels, rust/core/src/device/cuda_stream.ptx); any other launch is CUDA_ERROR_NOT_SUPPORTED. */
CUDA_STANDIN_API CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUDA_STANDIN_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUDA_STANDIN_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                         unsigned int gridDimZ, unsigned int blockDimX,
                                         unsigned int blockDimY, unsigned int blockDimZ,
                                         unsigned int sharedMemBytes, CUstream hStream,
                                         void **kernelParams, void **extra);

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_TESTS_CUDA_STANDIN_H */
