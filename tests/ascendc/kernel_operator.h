/* kernel_operator.h (test stand-in): the subset of CANN's AscendC kernel API that
 * shmem/arch/ascendc.h uses, declared with CANN's signatures so that a host C++ compiler checks
 * the AscendC architecture's types and calls on every CI run (ctest ascendc.compile).
 *
 * Declarations only: nothing here runs, the check compiles with -fsyntax-only and links
 * nothing. Bodies are given only where C++ needs one to check a call (a constructor); the
 * functions CANN defines `inline` in its headers are declared here without it (a body-less
 * inline function is a warning at each use), which changes no call. The qualifiers CANN's
 * compiler (bisheng) knows are empty here, as in AscendC's CPU-debug mode, unless the compile
 * defines them (the check also defines __gm__ as volatile: see compile_check.cmake). Never
 * installed; a build with CANN uses CANN's own header. */
#ifndef SHMEM_TEST_ASCENDC_KERNEL_OPERATOR_H
#define SHMEM_TEST_ASCENDC_KERNEL_OPERATOR_H

#include <stddef.h>
#include <stdint.h>

/* bisheng's function and address-space qualifiers. */
#ifndef __aicore__
#define __aicore__
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __gm__
#define __gm__
#endif
#ifndef __ubuf__
#define __ubuf__
#endif
#ifndef __BLOCK_LOCAL__
#define __BLOCK_LOCAL__
#endif
/* A kernel argument in global memory. */
#ifndef GM_ADDR
#define GM_ADDR __gm__ uint8_t *__restrict__
#endif

/* The 2-byte floating-point types (builtins of bisheng): only their size matters here. */
struct half {
    uint16_t bits_;
};
struct bfloat16_t {
    uint16_t bits_;
};

/* The core's pipes (CANN's pipe_t). */
typedef enum {
    PIPE_S = 0,
    PIPE_V,
    PIPE_M,
    PIPE_MTE1,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_ALL,
} pipe_t;

namespace AscendC {

using TEventID = int8_t;

/* Where a tensor lives (the ones used here). */
enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
};

/* Events between two pipes, source_destination (the ones used here). */
enum class HardEvent : uint8_t {
    MTE2_MTE1,
    MTE1_MTE2,
    MTE3_MTE2,
    MTE2_MTE3,
    S_MTE2,
    MTE2_S,
    S_MTE3,
    MTE3_S,
};

enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

/* A local tensor's buffer record (the fields CANN's device code sets). */
struct TBuffAddr {
    uint32_t dataLen;
    uint32_t bufferAddr;
    uint64_t bufferHandle;
    uint8_t logicPos;
};

template <typename T>
class LocalTensor {
public:
    __aicore__ inline LocalTensor() {}
    __aicore__ uint64_t GetPhyAddr() const;
    __aicore__ uint32_t GetSize() const;
    TBuffAddr address_;
};

template <typename T>
class GlobalTensor {
public:
    __aicore__ inline GlobalTensor() {}
    __aicore__ void SetGlobalBuffer(__gm__ T *buffer, uint64_t bufferSize);
    __aicore__ void SetGlobalBuffer(__gm__ T *buffer);
    __aicore__ const __gm__ T *GetPhyAddr() const;
    __aicore__ T GetValue(const uint64_t offset) const;
    __aicore__ void SetValue(const uint64_t offset, T value) const;
    __aicore__ GlobalTensor operator[](const uint64_t offset) const;
    __aicore__ uint64_t GetSize() const;

private:
    __gm__ T *address_;
    uint64_t bufferSize_;
};

/* One DataCopyPad: blockCount blocks of blockLen bytes, strides between them. */
struct DataCopyExtParams {
    __aicore__ DataCopyExtParams() {}
    __aicore__ DataCopyExtParams(const uint16_t count, const uint32_t len,
                                 const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                                 const uint32_t rsvIn)
        : blockCount(count),
          blockLen(len),
          srcStride(srcStrideIn),
          dstStride(dstStrideIn),
          rsv(rsvIn) {}
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};

/* How a GM -> UB DataCopyPad pads the UB side to 32 bytes. */
template <typename T>
struct DataCopyPadExtParams {
    __aicore__ DataCopyPadExtParams() {}
    __aicore__ DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue,
                                    const uint8_t rightPadValue, T padValue)
        : isPad(isPadValue),
          leftPadding(leftPadValue),
          rightPadding(rightPadValue),
          paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue;
};

/* GM -> UB and UB -> GM copies of any byte length. */
template <typename T>
__aicore__ void DataCopyPad(const LocalTensor<T> &dstLocal, const GlobalTensor<T> &srcGlobal,
                            const DataCopyExtParams &dataCopyParams,
                            const DataCopyPadExtParams<T> &padParams);
template <typename T>
__aicore__ void DataCopyPad(const GlobalTensor<T> &dstGlobal, const LocalTensor<T> &srcLocal,
                            const DataCopyExtParams &dataCopyParams);

/* Synchronisation of the core's pipes. */
template <HardEvent event>
__aicore__ void SetFlag(int32_t eventID);
template <HardEvent event>
__aicore__ void WaitFlag(int32_t eventID);
template <pipe_t pipe>
__aicore__ void PipeBarrier();

/* The data cache. */
template <typename T, CacheLine entireType, DcciDst dcciDst>
__aicore__ void DataCacheCleanAndInvalid(const GlobalTensor<T> &dst);
template <typename T, CacheLine entireType>
__aicore__ void DataCacheCleanAndInvalid(const GlobalTensor<T> &dst);

/* Scalar atomics on global memory; each returns the old value. */
template <typename T>
__aicore__ T AtomicAdd(__gm__ T *address, T value);
template <typename T>
__aicore__ T AtomicCas(__gm__ T *address, T value1, T value2);
template <typename T>
__aicore__ T AtomicExch(__gm__ T *address, T value);

/* The launch: this block, the blocks, a barrier among all of them. */
__aicore__ int64_t GetBlockIdx();
__aicore__ int64_t GetBlockNum();
template <bool isAIVOnly = true>
__aicore__ void SyncAll();

/* Debugging: a line to the kernel's dump, and a stop of the core. */
template <class... Args>
__aicore__ void printf(__gm__ const char *fmt, Args &&...args);
__aicore__ void Trap();

}  // namespace AscendC

#endif /* SHMEM_TEST_ASCENDC_KERNEL_OPERATOR_H */
